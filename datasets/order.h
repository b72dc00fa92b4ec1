/* Node orderings for locality: a permutation of node ids within each node type (degree, BFS, RCM,
 * first touch), the graph relabelled by it, and a simulated cache to compare them without a GPU. */
#ifndef ORD_ORDER_H
#define ORD_ORDER_H

#include "datasets/hgraph.h"

typedef enum ord_kind {
    ORD_ORIG,    /* as given: the identity */
    ORD_DEGREE,  /* descending degree (in + out), ties by id */
    ORD_BFS,     /* breadth-first over edges of both directions, each search starting from the
                  * highest-degree node not yet reached, neighbours in CSR order */
    ORD_RCM,     /* reverse Cuthill-McKee over edges of both directions: per component from a
                  * pseudo-peripheral node (George-Liu), neighbours by ascending degree, the whole
                  * sequence reversed; small bandwidth, so an edge's two ends get near ids */
    ORD_BLOCK    /* cache-blocked by destination ranges: destinations walked in BFS order, each
                  * node numbered (within its type) when first met as a destination or read as a
                  * source, so the rows a range of destinations gathers are near each other;
                  * nodes never met last, in BFS order */
} ord_kind;
enum { ORD_NKINDS = ORD_BLOCK + 1 };

/* The ordering's name, as the config key relabel spells it ("orig", ..., "block"). */
const char *ord_kind_name(ord_kind kind);

/* The ordering of g's nodes: old_of[new id] = the old id it carries. Every node keeps its
 * type (old_of maps each type's id range onto itself). Caller frees. */
int32_t *ord_compute(const hg_graph *g, ord_kind kind);

/* g relabelled by old_of (a permutation within node types, as ord_compute gives): node n of
 * the result is node old_of[n] of g, and edges are sorted by (etype, new src), stably, like
 * any graph. *edge_old_of (when non-NULL) receives, per edge of the result, its edge id in g
 * (caller frees). The result owns its arrays (hg_free), and keeps g's name and types. */
hg_graph *ord_relabel(const hg_graph *g, const int32_t *old_of, int32_t **edge_old_of);

/* A locality proxy: the share of source-row gathers that miss a fully associative LRU cache of
 * cache_rows rows (>= 1), over the gathers of the dst-sorted traversals (destinations in id
 * order, each one's in-edges in CSR order, one row per source node): misses / edges, 0 without
 * edges. Row granularity: it sees reuse across destinations, not several rows sharing a line or
 * a page, nor the destination and edge traffic. O(E) time, O(N) memory. */
double ord_gather_miss_rate(const hg_graph *g, int64_t cache_rows);

/* Whether old_of is a permutation of g's nodes that keeps every node's type: 0, or -1 with
 * the first node that breaks it. */
int ord_check(const hg_graph *g, const int32_t *old_of, rg_err *err);

#endif
