/* Linear-operator reordering: dot(linear(x, W), w) -> dot(x, W*w) and
 * linear(linear(x, A), B) -> linear(x, A*B), applied where counting multiply-adds says so. */
#ifndef RR_PASS_REORDER_H
#define RR_PASS_REORDER_H

#include <stdio.h>
#include "codegen/ir.h"
#include "datasets/hgraph.h"

/* Graph sizes the operation counts use. */
typedef struct rr_stats {
    int64_t nodes, edges, unique_pairs, ntypes, etypes;
    int nominal;            /* 1: fixed nominal counts, not a loaded graph */
    char source[64];        /* dataset name for the printout */
} rr_stats;

/* aifb's published counts (digest §5.2: 7 node types, 104 edge types, 7,262 nodes,
 * 48,810 edges) with the unique (src, etype) pairs of DGL's aifb as loaded here. */
void rr_stats_nominal(rr_stats *s);
void rr_stats_from_graph(rr_stats *s, const hg_graph *g, const char *name);

typedef struct rr_options {
    const rr_stats *stats;  /* NULL: rr_stats_nominal */
    int assume_compact;     /* values that depend on (src, etype) alone will be compact: count
                               their rows as unique pairs (compaction runs after reordering) */
    FILE *log;              /* candidates with counts before/after and the decision; NULL: quiet */
} rr_options;

/*
 * Candidates (forward statements, before autodiff):
 *  1. t = linear(x, W[a]) ... y = dot(t, w[e.etype]) with w a weight vector:
 *       WW[r] = W[a(r)] @ w[r]   (DOM_TYPE, IR_OP_WEIGHT_MM, a vector per relation)
 *       y = dot(x, WW[e.etype])
 *  2. t = linear(x, A[a]) ... y (+)= linear(t, B[e.etype]):
 *       AB[r] = A[a(r)] @ B[r]   y (+)= linear(x, AB[e.etype])
 * where t is produced by one statement (a node linear read at e.src / e.dst, or an edge
 * linear read per edge), x is unchanged in between, and the shapes compose (per-head B
 * splits a shared A into column blocks). A candidate is applied when its multiply-adds
 * after (weight product + rewritten op) are fewer than before (rewritten op + the linear
 * producing t when t becomes dead). Dead statements are removed afterwards.
 * Returns the number of rewrites applied, or -1 (programs with a backward part).
 */
int rr_reorder(ir_program *p, const rr_options *opt, rg_err *err);

#endif
