/* The gather floor: the least time cuSPARSE's SpMM or a plain gather kernel takes to sum, for
 * every node, the rows of its in-neighbours (one row per edge) on a graph's node order. */
#ifndef KGF_GFLOOR_H
#define KGF_GFLOOR_H

#include <stdint.h>
#include "common/util.h"
#include "datasets/hgraph.h"

/* Why a floor of its own: the layer's DRAM floor (codegen/floor.c) counts every input once,
 * but a layer that aggregates over edges reads a source row per edge, and on a graph whose
 * rows do not fit in the L2 and have no locality (synth:mag) those gathers alone are several
 * times that floor. This measures them with the vendor's sparse library and with a plain
 * gather of our own (a thread group per row, no relation, weight or attention: none of the
 * generated code), and keeps the faster: cuSPARSE's bfloat16 SpMM is several times slower
 * than its float32 one, so it alone would be no floor for bfloat16 rows. */

/* The adjacency as CSR at zero base. by_dst = 1: rows are destinations, columns the sources of
 * their incoming edges (A, the forward aggregation); 0: rows are sources, columns the
 * destinations of their outgoing edges (A^T, the backward one). Edge order within a row is the
 * graph's CSR order. Caller frees both. */
void kgf_csr(const hg_graph *g, int by_dst, int32_t **row_ptr, int32_t **col);

/* The rows a result is checked on: every stride-th row and the longest one (hubs are where a
 * split sum goes wrong). Returns their count; caller frees *rows. */
int32_t kgf_sample_rows(const int32_t *row_ptr, int32_t nrows, int32_t stride, int32_t **rows);

/* Largest |y - sum_j x[col[j]]| / (sum_j |x[col[j]]| + 1) over rows[0..nrows) and their `dims`
 * columns, y_rows holding row rows[i] at i * dims (row-major x): how far a device result is from
 * the float64 sum; NaN when a result is. */
double kgf_check_rows(const int32_t *row_ptr, const int32_t *col, const float *x, int dims, const int32_t *rows,
                      int32_t nrows, const float *y_rows);

typedef struct kgf_floor {
    double fwd_ms;      /* A x: dims_in columns */
    double bwd_ms;      /* A^T g: dims_out columns; 0 when not asked */
    char fwd_alg[24], bwd_alg[24];   /* the fastest way of each: "cusparse-..." or "own-lanesN-chunkC" */
} kgf_floor;

/* Measures A x (and, with backward, A^T g) on g with float32 or (bf16 = 1) bfloat16 rows and
 * float32 accumulation: every CSR algorithm cuSPARSE accepts and our gather at 2 to 32 threads
 * per chunk of 32 or 256 edges, each checked against the float64 sum on sampled rows before it is timed; the
 * fastest, best of five timed calls after a warm-up, one-time analysis and compilation left
 * out. Needs a device; RGNN_NO_CEILINGS skips it too. */
int kgf_measure(const hg_graph *g, int dims_in, int dims_out, int bf16, int backward, kgf_floor *out, rg_err *err);

/* Whether our gather compiles (NVRTC, no device needed) for rows of `dims` elements at `lanes`
 * threads per chunk of `chunk` edges: 0 yes, 1 the mapping does not apply (a thread's share is not whole 32-bit
 * words, or over 64 bytes), -1 a compile error in err. */
int kgf_gather_compiles(int dims, int bf16, int lanes, int chunk, int sm, rg_err *err);

/* Our gather's work split: each row's edges in chunks of at most `chunk` (a row without edges
 * has one empty chunk, so its output is written), chunks in row order; a row of more than one
 * chunk has a slot (its scratch row), -1 otherwise, and multi_row lists those rows by slot. */
typedef struct kgf_chunking {
    int32_t nchunks, nmulti;
    int32_t *chunk_row, *chunk_beg;   /* [nchunks]: the chunk's row and first edge */
    int32_t *row_slot;                /* [nrows] */
    int32_t *multi_row;               /* [nmulti] */
} kgf_chunking;
void kgf_chunks(const int32_t *row_ptr, int32_t nrows, int32_t chunk, kgf_chunking *out);
void kgf_chunking_free(kgf_chunking *c);

#endif
