/* Node orderings for locality: a permutation of node ids within each node type (by degree, or
 * breadth-first), and the graph relabelled by it, every array rebuilt to the same invariants. */
#ifndef ORD_ORDER_H
#define ORD_ORDER_H

#include "datasets/hgraph.h"

typedef enum ord_kind {
    ORD_ORIG,    /* as given: the identity */
    ORD_DEGREE,  /* descending degree (in + out), ties by id */
    ORD_BFS      /* breadth-first over edges of both directions, each search starting from the
                  * highest-degree node not yet reached, neighbours in CSR order */
} ord_kind;

/* The ordering of g's nodes: old_of[new id] = the old id it carries. Every node keeps its
 * type (old_of maps each type's id range onto itself). Caller frees. */
int32_t *ord_compute(const hg_graph *g, ord_kind kind);

/* g relabelled by old_of (a permutation within node types, as ord_compute gives): node n of
 * the result is node old_of[n] of g, and edges are sorted by (etype, new src), stably, like
 * any graph. *edge_old_of (when non-NULL) receives, per edge of the result, its edge id in g
 * (caller frees). The result owns its arrays (hg_free), and keeps g's name and types. */
hg_graph *ord_relabel(const hg_graph *g, const int32_t *old_of, int32_t **edge_old_of);

/* Whether old_of is a permutation of g's nodes that keeps every node's type: 0, or -1 with
 * the first node that breaks it. */
int ord_check(const hg_graph *g, const int32_t *old_of, rg_err *err);

#endif
