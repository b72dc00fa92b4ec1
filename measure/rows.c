/* The results-store rows of one measurement: outcome columns, kernel times, the result's
 * metrics and the derived ones (forward/backward split, phase seconds, IR counts). */
#include "measure/rows.h"

#include <math.h>
#include <stdlib.h>

static void add_metric(xrow_set *rows, const char *name, const char *unit, double v)
{
    if (!isfinite(v)) return;
    RG_ASSERT(rows->nmetrics < sizeof rows->metrics / sizeof *rows->metrics);
    rows->metrics[rows->nmetrics++] = (rs_metric){.kernel = "", .name = name, .unit = unit, .value = v};
}

static void outcome(const xb_result *r, rs_measurement *m)
{
    m->status = r->status;
    m->evidence = r->evidence[0] ? r->evidence : NULL;
    m->validation_error = r->validation_error;
    m->median_ms = r->median_ms;
    m->min_ms = r->min_ms;
    m->max_ms = r->max_ms;
    m->stddev_ms = r->stddev_ms;
    m->repeats = r->repeats;
    m->peak_mem_bytes = r->peak_mem_bytes;
    m->gemm_ms = r->gemm_ms;
    m->traversal_ms = r->traversal_ms;
    m->other_ms = r->other_ms;
}

/* What the store has no column for. Unknown values are left out rather than stored as
 * zeros, so that a query's average is over the measurements that have them. */
static void fixed_metrics(const xb_result *r, xrow_set *rows)
{
    add_metric(rows, "fwd_ms", "ms", r->fwd_ms);
    add_metric(rows, "bwd_ms", "ms", r->bwd_ms);
    if (r->compile_s > 0) add_metric(rows, "compile_s", "s", r->compile_s);
    if (r->build_s > 0) add_metric(rows, "build_s", "s", r->build_s);
    if (r->setup_s > 0) add_metric(rows, "setup_s", "s", r->setup_s);
    if (r->validate_s > 0) add_metric(rows, "validate_s", "s", r->validate_s);
    if (r->time_s > 0) add_metric(rows, "time_s", "s", r->time_s);
    if (r->flops > 0) add_metric(rows, "flops", "flop", r->flops);
    if (r->bytes > 0) add_metric(rows, "bytes", "byte", r->bytes);
    if (r->atomics > 0) add_metric(rows, "atomics", "op", r->atomics);
    if (r->launches > 0) add_metric(rows, "launches", "", r->launches);
    if (r->cuda_error != 0) add_metric(rows, "cuda_error", "", r->cuda_error);
}

void xrow_build(const xb_result *r, rs_measurement *m, xrow_set *rows)
{
    outcome(r, m);
    rows->nkernels = 0;
    for (int x = 0; x < r->nkernels && x < XB_MAX_KERNELS; x++)
        rows->kernels[rows->nkernels++] = (rs_kernel_time){.kernel = r->kernels[x].name,
                                                           .category = r->kernels[x].category,
                                                           .median_ns = r->kernels[x].median_ns,
                                                           .spread_ns = r->kernels[x].spread_ns};
    rows->nmetrics = 0;
    for (int x = 0; x < r->nmetrics && x < XB_MAX_METRICS; x++)
        rows->metrics[rows->nmetrics++] = (rs_metric){.kernel = r->metrics[x].kernel, .name = r->metrics[x].name,
                                                      .unit = r->metrics[x].unit, .value = r->metrics[x].value};
    fixed_metrics(r, rows);
}

int64_t xrow_record(rs_store *s, const rs_measurement *id, const xb_result *r, rg_err *err)
{
    rs_measurement m = *id;
    xrow_set *rows = rg_xmalloc(sizeof *rows);   /* about 19 KB: kept off the stack */
    xrow_build(r, &m, rows);
    int64_t mid = rs_record(s, &m, rows->kernels, rows->nkernels, rows->metrics, rows->nmetrics, err);
    free(rows);
    return mid;
}
