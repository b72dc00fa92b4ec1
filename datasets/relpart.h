/* Relation partitioning for layers spread over several GPUs: which GPU owns each edge type,
 * and the subgraph of one GPU's relations (every node kept, ids unchanged). */
#ifndef RLP_RELPART_H
#define RLP_RELPART_H

#include "datasets/hgraph.h"

/* How relations are balanced over ranks (a design-space dimension of the partitioned layer):
 *   count  about the same number of relations per rank
 *   edges  about the same number of edges per rank
 *   rows   about the same edges + unique (src, etype) rows per rank: the traversal's rows plus
 *          the compact typed linear's rows, the two row sets a relation's kernels iterate
 * each by longest-processing-time-first: relations by decreasing weight, each to the rank
 * with the least weight so far (ties: the lower rank; equal weights: the lower edge type). */
/* The codes are the config key `part`'s (codegen/config_keys.def), in its order. */
typedef enum rlp_method { RLP_EDGES, RLP_COUNT, RLP_ROWS, RLP__COUNT } rlp_method;

const char *rlp_method_name(rlp_method m);
/* The method named s; -1 with a message listing the names otherwise. */
int rlp_parse_method(const char *s, rlp_method *out, rg_err *err);

/* Fills owner[num_etypes] with each relation's rank in [0, nranks). Fails with a message when
 * nranks < 1 or the graph has fewer relations with edges than ranks (a rank would own none). */
int rlp_partition(const hg_graph *g, int nranks, rlp_method m, int32_t *owner, rg_err *err);

/* Weight per rank under method m (for reports: the balance a partition achieved). */
void rlp_loads(const hg_graph *g, const int32_t *owner, int nranks, rlp_method m, double *load);

/* The subgraph of the relations owned by `rank`: the same node types, nodes and edge types
 * (a relation owned elsewhere keeps its id with no edges), the owned edges in the original
 * order. *orig_eid (caller frees) maps each subgraph edge to its id in g. NULL with a
 * message when the rank owns no edge. */
hg_graph *rlp_subgraph(const hg_graph *g, const int32_t *owner, int rank, int32_t **orig_eid, rg_err *err);

#endif
