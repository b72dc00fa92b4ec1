/* The typed heterogeneous graph every module works on: node types presorted into
 * segments, COO sorted by edge type, CSR both ways, and the compact-materialization maps. */
#ifndef HG_GRAPH_H
#define HG_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include "common/util.h"

/* All ids are int32: the largest graph of the papers (mag, 21.1M edges) fits, and the
 * GPU kernels index with 32-bit ints. hgb_finish rejects graphs that do not fit. */
typedef struct hg_graph {
    char *name;
    int32_t num_ntypes;
    char **ntype_names;
    int32_t *ntype_ptr;        /* [num_ntypes+1]: nodes of type t are ntype_ptr[t] .. ntype_ptr[t+1]-1 */
    int32_t num_nodes;

    int32_t num_etypes;
    char **etype_names;        /* relation name, e.g. "cites", "rev-cites" */
    int32_t *etype_src;        /* [num_etypes] source node type of the canonical edge type */
    int32_t *etype_dst;        /* [num_etypes] destination node type */

    /* COO sorted by (etype, src), stable otherwise: the edge id is the position. */
    int32_t num_edges;
    int32_t *src, *dst, *etype;  /* [num_edges], global node ids */
    int32_t *etype_ptr;        /* [num_etypes+1] edge segments */

    /* CSR by destination (incoming edges) and by source (outgoing edges), edge ids ascending. */
    int32_t *in_ptr, *in_eid;  /* [num_nodes+1], [num_edges] */
    int32_t *out_ptr, *out_eid;

    /* Compact materialization: one row per unique (src, etype) pair, grouped by etype and
     * ascending by src inside a group (so a binary search within the group finds a row). */
    int32_t num_unique;
    int32_t *unique_src;       /* [num_unique] */
    int32_t *unique_etype_ptr; /* [num_etypes+1] */
    int32_t *edge_compact;     /* [num_edges] compact row of each edge */

    /* Non-NULL for a graph loaded from the binary cache: every int32 array above points into
     * this read-only mapping of the cache file (writing into one faults), and hg_free unmaps
     * it instead of freeing the arrays. Names are always allocated. */
    void *mapping;
    size_t mapping_bytes;
} hg_graph;

typedef struct hg_stats {
    int64_t nodes, edges, unique_pairs;
    int32_t node_types, edge_types;
    double avg_degree;         /* |E| / |V| */
    double density;            /* |E| / |V|^2 */
    double compaction_ratio;   /* unique (src, etype) pairs / |E| */
    int64_t rel_min, rel_max;  /* edges per relation */
    double rel_median, rel_skew;   /* skew: sample skewness (GSL) of relation sizes */
    int64_t max_in_degree;
    double in_degree_skew;     /* sample skewness of in-degrees */
} hg_stats;

/* ---- Building ---- */
typedef struct hg_builder hg_builder;

hg_builder *hgb_new(const char *name);
/* Finds or adds a node type by name; returns its id. */
int32_t hgb_ntype(hg_builder *b, const char *name);
/* Raises the node count of a type to at least `count` (loaders that know exact counts). */
void hgb_ntype_count_at_least(hg_builder *b, int32_t ntype, int64_t count);
/* Finds or adds a canonical edge type (rel, src type, dst type); returns its id. */
int32_t hgb_etype(hg_builder *b, const char *rel, int32_t src_ntype, int32_t dst_ntype);
/* Adds an edge between type-local ids; node counts grow to max id + 1. */
void hgb_add_edge(hg_builder *b, int32_t etype, int64_t src_local, int64_t dst_local);
int64_t hgb_num_edges(const hg_builder *b);
void hgb_reserve(hg_builder *b, int64_t edges);
/* The most nodes one node type plausibly has in a graph of `edges` edges (as read, before
 * reverse types): max(2^24, 64 x edges). No real graph comes near it (the registered sets
 * have at most 1.9M nodes per type, at 4+ edges per node); a type-local id or a declared
 * count beyond it comes from a corrupted file, and building that graph would allocate
 * gigabytes for nothing (one bad id of mag_0.1 made 1.07 billion nodes, 17 GB). */
#define HG_PLAUSIBLE_IDS_MIN ((int64_t)1 << 24)
#define HG_PLAUSIBLE_IDS_PER_EDGE 64
int64_t hg_plausible_nodes(int64_t edges);
/* Sorts, builds CSRs and compaction maps, frees the builder. Refuses, before allocating
 * anything per node, a node type larger than hg_plausible_nodes(edges). With add_reverse, every
 * edge type r gets a reverse type "rev-<rel>" with id r + R (DGL's/OGB's preprocessing).
 * Returns NULL with a message for graphs that are empty or too large. */
hg_graph *hgb_finish(hg_builder *b, int add_reverse, rg_err *err);
void hgb_free(hg_builder *b);

/* ---- Using ---- */
void hg_free(hg_graph *g);
void hg_stats_compute(const hg_graph *g, hg_stats *s);
/* Checks every structural invariant (sortedness, CSR consistency, compaction maps).
 * Returns 0, or -1 with the first violation. Used after loading a cache, and in tests. */
int hg_validate(const hg_graph *g, rg_err *err);
/* Compact row of (src, etype) by binary search within the etype group; -1 if absent. */
int32_t hg_compact_lookup(const hg_graph *g, int32_t src, int32_t etype);
int32_t hg_ntype_of(const hg_graph *g, int32_t node);
/* Builds CSRs and compaction maps from src/dst/etype/etype_ptr already in place (used by
 * hgb_finish). Not for a graph of the cache: its arrays are read-only and not its own. */
void hg_build_derived(hg_graph *g);

#endif
