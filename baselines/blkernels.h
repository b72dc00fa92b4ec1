/* The simple CUDA kernels the cuBLAS baseline layers are composed of, one per framework
 * step (gather, weight replication, dot, leakyrelu, exp, edge-softmax sum/divide, scatter). */
#ifndef BLK_KERNELS_H
#define BLK_KERNELS_H

#include "common/util.h"
#include "runtime/rt.h"

/* Kernel ids, in the order of blk_kernel_name(). */
typedef enum blk_id {
    BLK_GATHER_ROWS,     /* out[r][:] = x[idx[r]][:] */
    BLK_REPLICATE,       /* out[r][:] = w[type[r]][:]  (per-row copies of a typed weight) */
    BLK_FILL,            /* x[i] = value */
    BLK_DOT_HEADS,       /* out[r][h] = sum_k a[r][h][k] * b[bidx ? bidx[r] : r][h][k] */
    BLK_ADD,             /* out[i] = a[i] + b[i] */
    BLK_LEAKYRELU,       /* x[i] = x[i] > 0 ? x[i] : slope * x[i] */
    BLK_SCALE_BY_TYPE,   /* x[r][h] = x[r][h] * s[type[r]][h] * c */
    BLK_EXP,             /* x[i] = exp(x[i]) */
    BLK_SUM_BY_DST,      /* sum[dst[r]][h] += x[r][h] (edge-softmax denominators) */
    BLK_DIV_BY_DST,      /* x[r][h] /= sum[dst[r]][h] */
    BLK_AGGREGATE,       /* out[dst[r]][h][:] += coef[r][h] * msg[r][h][:] */
    BLK_COUNT
} blk_id;

const char *blk_kernel_name(blk_id id);
/* Store category of a kernel: "copy" for weight replication, "other" for fills, else
 * "traversal" (cuBLAS kernels are "gemm"). */
const char *blk_kernel_category(blk_id id);
/* Category of any kernel name seen by the profiler: ours by name, everything else
 * (cuBLAS) "gemm". */
const char *blk_category_of(const char *kernel_name);

/* The CUDA C++ source of every kernel (extern "C", grid-stride loops, 64-bit counts). */
const char *blk_source(void);
/* Compiles blk_source() with NVRTC for sm_<sm> through the cubin cache (no GPU needed). */
int blk_compile(int sm, krt_cubin *out, rg_err *err);

/* Threads per block of every launch, and the grid that covers n items with grid-stride loops. */
#define BLK_THREADS 256
krt_dim3 blk_grid(int64_t n);

#endif
