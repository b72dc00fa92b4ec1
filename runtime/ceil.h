/* Measured ceilings of the current device, once per process: copy and L2 bandwidth, FP32 FMA
 * peak, TF32 and BF16 GEMM peaks; what the floors and achieved-bandwidth figures divide by. */
#ifndef KCEIL_CEIL_H
#define KCEIL_CEIL_H

#include "common/util.h"

typedef struct kceil {
    double copy_Bps;     /* device-to-device cudaMemcpy of 512 MiB: bytes read + written per s */
    double l2_Bps;       /* a kernel re-reading a buffer of half the L2 */
    double fp32_flops;   /* FMA chains, 2 flops per FMA */
    double tf32_flops;   /* cublasGemmEx 8192^3, float in, CUBLAS_COMPUTE_32F_FAST_TF32 */
    double bf16_flops;   /* cublasGemmEx 8192^3, bf16 in, float out, CUBLAS_COMPUTE_32F */
    double l2_bytes;     /* the device's L2 size */
} kceil;

/* The ceilings, measured on first call (a few seconds) and cached; NULL with err when the
 * device cannot run the measurement, or when RGNN_NO_CEILINGS is set (not "0": sanitizer runs,
 * whose tools cannot follow cuBLAS's kernels). Best of three timings each. */
const kceil *kceil_get(rg_err *err);

/* Whether RGNN_NO_CEILINGS is set (and not "0"): the device's measured figures, the ceilings and
 * the gather floor (runtime/gfloor.h), are left out. */
int kceil_disabled(void);

/* Seconds of the fastest of `tries` calls of fn(ctx) (0 on success) after one untimed warm-up
 * call, each timed with events on stream 0; -1 with err ("<what>: ...") when a call or a timing
 * fails. */
double kceil_best_seconds(int (*fn)(void *), void *ctx, int tries, const char *what, rg_err *err);

#endif
