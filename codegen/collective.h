/* Where a relation-partitioned run needs collectives: each rank runs a variant's kernels on its
 * relations' edges, so node values summed over edges are partial per rank until all-reduced. */
#ifndef COL_COLLECTIVE_H
#define COL_COLLECTIVE_H

#include "codegen/codegen.h"

/*
 * Every rank holds every node and weight and runs the whole plan; edge statements see only
 * the rank's edges (datasets/relpart.h), node, type and global statements run replicated.
 * The state of each variable, followed through the plan's kernels:
 *   ZERO     untouched zero-fill (or never written)
 *   CLEAN    equal on every rank (replicated work, or all-reduced)
 *   LOCAL    an edge variable: rows of the rank's own edges
 *   PARTIAL  each rank holds its relations' share of a sum (an edge statement added into a
 *            node variable, or into a weight not indexed by edge type): the true value is
 *            the sum over ranks, so it is all-reduced before anything reads it
 *   OWNED    an edge-type-indexed weight (gradient) that edge statements added into: the
 *            slice of relation r is right on r's owner and zero elsewhere (weight gradients
 *            stay on the GPU that owns the relation, and so does its SGD step)
 * A cross-relation softmax is exactly this: e.dst[S] += exp(a) and e.dst[H] += exp(a) * m
 * are partial per rank, and their all-reduced sums are the merged (sum, aggregate) pair
 * (the model's softmax subtracts no maximum, so the running maximum of the log-sum-exp merge
 * is identically 0 and the merge is the plain sum; codegen/collective.c's col_merge_lse is
 * the general merge, tested on the CPU).
 * Edges adding into a value every rank holds (RGCN's self term, a sum already all-reduced)
 * make it partial after every rank but rank 0 zeroes its copy.
 * A plan is refused, with the reason, where a kernel reads a partial value it made itself (a
 * node-centric traversal whose second pass reads the first pass's sums: no collective fits
 * inside a kernel), where a kernel adds its edges into a value it also reads or computes
 * replicated, and where a replicated statement assigns from an owned weight into anything
 * but an owned slice.
 */
typedef enum col_state { COL_ZERO, COL_CLEAN, COL_LOCAL, COL_PARTIAL, COL_OWNED } col_state;

/* What happens to variable `var` on every rank before kernel `before` (plan.nkernels: after
 * the last): an all-reduce (sum), or, where edges start adding into a value every rank holds,
 * zeroing it on every rank but rank 0 (then the sum over ranks counts it once). */
typedef enum col_action { COL_ALLREDUCE, COL_ZERO_NONROOT } col_action;

typedef struct col_sync {
    int before, var;
    col_action what;
} col_sync;

typedef struct col_plan {
    int nsync, cap;
    col_sync *sync;       /* in launch order */
    int nvars;
    col_state *state;     /* [nvars] the state after the run (after the final all-reduces) */
} col_plan;

/* One unit of execution: the statements a kernel runs, in order (sgd: the SGD step). */
typedef struct col_unit {
    int nstmts;
    const int *stmts;
    int sgd;
} col_unit;

/* The statements of kernel k of v's plan (lowered as lp; materialized: v's, which decide the
 * parts of a crsum=split traversal), in order, into stmts (room for every statement of the
 * program); returns their count. The SGD step runs none (returns 0). */
int col_kernel_stmts(const ir_program *ir, const lw_program *lp, const int *materialized, const kp_kernel *k,
                     int *stmts);

/* The collectives of a sequence of units; -1 with the reason when it cannot be partitioned. */
int col_analyze(const ir_program *ir, const col_unit *units, int nunits, col_plan *out, rg_err *err);
/* The same for a variant's plan (units = its kernels). */
int col_plan_build(const ir_program *ir, const lw_program *lp, const cg_variant *v, col_plan *out, rg_err *err);
void col_plan_free(col_plan *p);

/* The log-sum-exp merge of per-rank softmax partials of one destination: rank k holds a
 * running maximum m[k], sum s[k] = sum exp(a - m[k]) and aggregate acc[k][0..w) = sum
 * exp(a - m[k]) * x; the merged triple (over all ranks' edges) goes to m_out, s_out, acc_out.
 * A rank without edges has s = 0 and acc = 0 (its m is ignored). */
void col_merge_lse(int nranks, const double *m, const double *s, const double *acc, int w, double *m_out,
                   double *s_out, double *acc_out);

#endif
