/* The gather floor: the time cuSPARSE's SpMM takes to sum, for every node, the rows of its
 * in-neighbours (one row gathered per edge) on a graph's node order, at a storage width. */
#ifndef KGF_GFLOOR_H
#define KGF_GFLOOR_H

#include <stdint.h>
#include "common/util.h"
#include "datasets/hgraph.h"

/* Why a floor of its own: the layer's DRAM floor (codegen/floor.c) counts every input once,
 * but a layer that aggregates over edges reads a source row per edge, and on a graph whose
 * rows do not fit in the L2 and have no locality (synth:mag) those gathers alone are several
 * times that floor. This measures them with the vendor's sparse library rather than our
 * kernels, so the figure does not depend on how well we wrote a gather. */

/* The adjacency as CSR at zero base. by_dst = 1: rows are destinations, columns the sources of
 * their incoming edges (A, the forward aggregation); 0: rows are sources, columns the
 * destinations of their outgoing edges (A^T, the backward one). Edge order within a row is the
 * graph's CSR order. Caller frees both. */
void kgf_csr(const hg_graph *g, int by_dst, int32_t **row_ptr, int32_t **col);

/* Largest |y[r] - sum_j x[col[j]]| / (sum_j |x[col[j]]| + 1) over the sampled rows (every
 * stride-th row and the longest one), row-major x and y of `dims` floats: how far a device
 * result is from the float64 sum. */
double kgf_check_rows(const int32_t *row_ptr, const int32_t *col, int32_t nrows, const float *x, const float *y,
                      int dims, int32_t stride);

typedef struct kgf_floor {
    double fwd_ms;      /* A x: dims_in columns */
    double bwd_ms;      /* A^T g: dims_out columns; 0 when not asked */
    char fwd_alg[24], bwd_alg[24];   /* the fastest cuSPARSE algorithm of each */
} kgf_floor;

/* Measures A x (and, with backward, A^T g) on g with float32 or (bf16 = 1) bfloat16 rows and
 * float32 accumulation, every CSR algorithm cuSPARSE accepts, each checked against the float64
 * sum on sampled rows before it is timed; the fastest: best of five timed calls after a warm-up,
 * cuSPARSE's one-time analysis left out. Needs a device; RGNN_NO_CEILINGS skips it too. */
int kgf_measure(const hg_graph *g, int dims_in, int dims_out, int bf16, int backward, kgf_floor *out, rg_err *err);

#endif
