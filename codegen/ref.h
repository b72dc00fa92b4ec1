/* The CPU reference executor: runs an inter-operator IR program (forward and backward)
 * in float64 on a loaded graph, honouring every variable's layout. The oracle of all GPU runs. */
#ifndef REF_H
#define REF_H

#include <stdint.h>
#include "codegen/ir.h"
#include "datasets/hgraph.h"

/*
 * What it computes
 * ----------------
 * Exactly the semantics at the top of ir.h; which rows a DOM_EDGE statement runs over
 * is ir_stmt_per_unique()'s answer. Points ir.h leaves open are defined here as follows
 * (autodiff relies on them; they reduce to ir.h's rules whenever ir_verify accepts a
 * statement):
 *  - An output narrower than the statement's broadcast shape (heads 1 where operands
 *    have H heads, or dim 1 where they have D) receives the SUM over the broadcast axis:
 *    the adjoint of broadcasting (e.g. dx[src] += linear(dy, W^T) for a per-head weight
 *    and an input of 1 head). This holds for LINEAR, elementwise ops, DOT, CONCAT, SLICE.
 *  - WGRAD into a vector weight is the broadcast product x * dy reduced (summed) into the
 *    weight's [wheads][dim] slice, so dy of dim 1 (ir.h's case) or of the weight's dim work.
 *  - COPY between rows of equal width and other (heads, dim) is a flat copy (reshape).
 *  - In DOM_TYPE, WEIGHT_MM and WGRAD into a weight matrix multiply matrices: a weight
 *    matrix is rows_dim x dim; a vector is a 1 x dim row, except as the second operand of
 *    WEIGHT_MM where it is a dim x 1 column. WEIGHT_MM computes a * b (a * b^T with
 *    transpose_w); WGRAD adds a^T * b. A vector output takes a 1 x L or L x 1 result.
 *    Per head h (H = the largest wheads involved) an operand of wheads 1 is either shared
 *    by every head or split into H column blocks (dim = H x width), whichever makes the
 *    shapes agree; an output of wheads 1 likewise sums over heads or takes column blocks.
 *
 * Deterministic data, the same for every pass configuration of a model (each variable's
 * stream is seeded by the run seed and the variable's name, never its id or layout):
 *  - INPUT node features: U(-1, 1).
 *  - PARAM weights: Glorot-uniform U(-a, a), a = sqrt(6 / (fan_in + fan_out)); a matrix
 *    has fan_in = rows_dim, fan_out = dim; a vector fan_in = dim, fan_out = 1.
 *  - LABEL node var: class ids uniform in [0, C), C = the width of the NLL_LOSS input
 *    (or dims.out_dim if no NLL_LOSS reads the labels).
 *  - GRAPH edge var whose name contains "norm": e.norm = 1 / c_{dst,etype}, c = the number
 *    of incoming edges of e.dst with e's edge type (RGCN's 1/c_{v,r}). Other graph inputs
 *    are an error.
 *  - Variables a run range writes are reset when it starts: zero_init ones to 0, all
 *    others to NaN, so a row that nothing writes shows up in every comparison.
 *
 * Parallelism: pthreads over rows (RGNN_REF_THREADS overrides the count). Rows that
 * share a weight slice (edges and compact rows come grouped by etype, nodes by ntype) run
 * LINEAR and WGRAD as register-tiled products. Writes that collide (e.dst/e.src
 * aggregation, compact gradients added from edges) are made by the one thread that owns
 * the target row, walking its rows through the in-/out-CSR or the compact groups (LINEAR
 * rows instead keep etype order in chunks, then owners add them); weight gradients use
 * per-thread accumulators. Sums do not depend on the thread count, except weight gradients.
 * RGNN_REF_PROFILE=1 prints each statement's time to stderr.
 *
 * Kinks: ReLU and LeakyReLU are not differentiable at 0, and their gradient statements
 * (RELU_GRAD, LEAKYRELU_GRAD: in[1] is the forward input x) pick a branch by the sign of
 * x. A device computes x in float32, about 1e-7 of its scale off the float64 value, so
 * where |x| is that small the device may take the other branch, and that derivative is
 * as legitimate as ours (the float32 computation really is on that side). A near-kink
 * row is a (gradient statement, iteration row) whose selector has some element with
 * |x| < rel x RMS(selector variable, over all its values). ref_set_flips makes later
 * runs take the other branch there, so a validator can try both (measure/validate.c).
 */

typedef struct ref_options {
    uint64_t seed;      /* 0 means 1 */
    int nthreads;       /* 0: $RGNN_REF_THREADS, else the online CPUs (at most 64) */
    /* A graph relabelled by a node ordering (datasets/order.h): node n carries the data of node
     * node_old_of[n] and edge e that of edge edge_old_of[e] of the graph as given, so inputs and
     * labels follow their nodes and edges. NULL: the identity. */
    const int32_t *node_old_of, *edge_old_of;
    /* INPUT node features drawn from U(-s, s) instead of U(-1, 1) (0 means 1): logits of the attention
     * models grow with s, which shows what a softmax does where exp(logit) overflows float32 (rmax) */
    double input_scale;
} ref_options;

typedef struct ref_exec ref_exec;

/* Allocates every variable of p on g and fills inputs, params, labels and graph data.
 * p and g must outlive the executor and keep their variables. NULL with a message for
 * programs it cannot run (bad shapes/accesses, unknown graph inputs). */
ref_exec *ref_new(const ir_program *p, const hg_graph *g, const ref_options *opt, rg_err *err);
void ref_free(ref_exec *x);

/* Runs statements [first, last) in order (resetting what they write, see above). */
int ref_run_range(ref_exec *x, int first, int last, rg_err *err);
/* Resets what the whole program writes (as ref_run does first), and runs one statement on
 * the values as they are, resetting nothing: a caller that runs statements in another valid
 * order, or changes values between them (codegen/collective.h's partitioned runs), uses these. */
int ref_reset_all(ref_exec *x, rg_err *err);
int ref_run_stmt(ref_exec *x, int stmt, rg_err *err);
int ref_run(ref_exec *x, rg_err *err);          /* the whole program */
int ref_run_forward(ref_exec *x, rg_err *err);  /* statements [0, nforward) */

/* Values of a variable (rows x row width, row-major); the pointer stays valid and may be
 * written (e.g. to perturb a weight for finite differences). */
double *ref_values(ref_exec *x, int var);
int64_t ref_count(const ref_exec *x, int var);   /* number of values */
int64_t ref_rows(const ref_exec *x, int var);
double *ref_values_by_name(ref_exec *x, const char *name, int64_t *count);  /* NULL if absent */
/* Re-fills one input/param/label/graph variable from the seed (undoes perturbations). */
void ref_refill(ref_exec *x, int var);
/* The scalar loss after a run (NaN if the program has none). */
double ref_loss(ref_exec *x);
int ref_nthreads(const ref_exec *x);

/* ---- kinks (see above) ---- */
/* A statement (its index in the program) and one of its iteration rows: the edge id of an
 * edge statement, the compact row of a per-unique one, the node id of a node statement. */
typedef struct ref_kink {
    int stmt;
    int64_t row;
} ref_kink;
/* After a run: the near-kink rows of every RELU_GRAD and LEAKYRELU_GRAD statement, by
 * statement then row. Fills at most max of out; returns how many there are (0 for rel 0;
 * a selector whose RMS is 0 has none). */
int ref_find_kinks(ref_exec *x, double rel, ref_kink *out, int max);
/* Later runs take the other branch in these rows, for the elements with |x| < rel x RMS
 * (the RMS of the selector's values when the statement runs: rerun only the backward
 * to keep it ref_find_kinks's). The list is copied; n = 0 clears it. Not while running. */
void ref_set_flips(ref_exec *x, const ref_kink *k, int n, double rel);

/* ---- threads ---- */
/* The reference's thread count: $RGNN_REF_THREADS, else the online CPUs; at most REF_MAX_THREADS. */
#define REF_MAX_THREADS 64
int ref_default_threads(void);
/* Splits [0, n) into nthreads contiguous ranges and runs fn on each, tid 0 on the caller
 * (measure/validate.c sums its comparisons of large arrays with it too). */
typedef void (*ref_range_fn)(void *arg, int tid, int64_t lo, int64_t hi);
void ref_parallel_for(int nthreads, int64_t n, ref_range_fn fn, void *arg);

/* Converts a variable's values to float32 (inputs and weights to upload to a device). */
void ref_to_f32(ref_exec *x, int var, float *out);

#endif
