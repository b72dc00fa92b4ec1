/* The results-store rows of one measurement: the one place a backend's result becomes a
 * measurement row, its kernel times and its metrics (the sweep and the baselines alike). */
#ifndef XROW_ROWS_H
#define XROW_ROWS_H

#include "measure/backend.h"
#include "results/store.h"

/* Measurement-level metrics the store has no column for, added after the result's own:
 * fwd_ms, bwd_ms, compile_s, build_s, setup_s, validate_s, time_s, flops, bytes, atomics,
 * launches, cuda_error. */
#define XROW_FIXED_METRICS 12

/* Rows of one result; the strings point into the result, valid while it lives. */
typedef struct xrow_set {
    rs_kernel_time kernels[XB_MAX_KERNELS];
    size_t nkernels;
    rs_metric metrics[XB_MAX_METRICS + XROW_FIXED_METRICS];
    size_t nmetrics;
} xrow_set;

/* Fills m's outcome (status, evidence, validation error, times, peak memory) and rows from
 * r. m's identity (run, dataset, variant, device, system, layer, commit) is the caller's
 * and left as it is. A fixed metric is left out when its field is unknown: NaN times, zero
 * phase seconds and counts, no CUDA error. */
void xrow_build(const xb_result *r, rs_measurement *m, xrow_set *rows);

/* xrow_build, then rs_record in one transaction. `id` holds the identity fields (its
 * outcome fields are ignored). Returns the measurement id, or -1. */
int64_t xrow_record(rs_store *s, const rs_measurement *id, const xb_result *r, rg_err *err);

#endif
