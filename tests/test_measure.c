/* Tests of the measurement layer's CPU side: a failure's status from its error class (not
 * its text), and the one function that turns a result into store rows (sweep and baselines). */
#include "tests/testutil.h"
#include "measure/backend.h"
#include "measure/rows.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* ---- status from the error class ---- */

static rg_err error_of(rg_err_class code, int cuda, const char *msg)
{
    rg_err e;
    rg_errf(&e, "%s", msg);
    rg_err_classify(&e, code, cuda);
    return e;
}

static void test_status_comes_from_the_class_not_the_text(void **state)
{
    (void)state;
    /* a fault whose message names no fault, and a launch error whose message does */
    rg_err fault = error_of(RG_ERR_FAULT, 719, "kernel execution failed: something went wrong");
    rg_err launch = error_of(RG_ERR_LAUNCH, 1, "launch of k failed: cudaErrorIllegalAddress mentioned in passing");
    assert_int_equal(xb_status_of(&fault, RS_LAUNCH_ERROR), RS_RUNTIME_FAULT);
    assert_int_equal(xb_status_of(&launch, RS_LAUNCH_ERROR), RS_LAUNCH_ERROR);
    rg_err oom = error_of(RG_ERR_OOM, 2, "cudaMalloc failed");
    rg_err compile = error_of(RG_ERR_COMPILE, 0, "NVRTC failed");
    rg_err other = error_of(RG_ERR_OTHER, 0, "out of memory, says the text");
    assert_int_equal(xb_status_of(&oom, RS_LAUNCH_ERROR), RS_OOM);
    assert_int_equal(xb_status_of(&compile, RS_LAUNCH_ERROR), RS_COMPILE_ERROR);
    assert_int_equal(xb_status_of(&other, RS_INVALID), RS_INVALID);
    /* a new message is a new error: rg_errf drops the old class, a prefix keeps it */
    rg_err_prefix(&fault, "running %s", "gemm_0");
    assert_int_equal(fault.code, RG_ERR_FAULT);
    assert_int_equal(fault.cuda, 719);
    rg_errf(&fault, "unrelated");
    assert_int_equal(fault.code, RG_ERR_OTHER);
    assert_int_equal(fault.cuda, 0);
}

static void test_failed_result_keeps_class_and_cuda_error(void **state)
{
    (void)state;
    xb_result *r = rg_xmalloc(sizeof *r);
    xb_result_init(r);
    assert_int_equal(r->status, RS_OK);
    assert_true(isnan(r->median_ms) && isnan(r->fwd_ms));
    assert_int_equal(r->peak_mem_bytes, -1);
    rg_err e = error_of(RG_ERR_FAULT, 700, "kernel execution failed: cudaErrorIllegalAddress");
    assert_int_equal(xb_result_fail(r, xb_status_of(&e, RS_LAUNCH_ERROR), &e), 0);
    assert_int_equal(r->status, RS_RUNTIME_FAULT);
    assert_int_equal(r->err_class, RG_ERR_FAULT);
    assert_int_equal(r->cuda_error, 700);
    assert_string_equal(r->evidence, e.msg);
    free(r);
}

/* ---- rows ---- */

static void add_kernel(xb_result *r, const char *name, const char *cat, double ns)
{
    xb_kernel *k = &r->kernels[r->nkernels++];
    snprintf(k->name, sizeof k->name, "%s", name);
    snprintf(k->category, sizeof k->category, "%s", cat);
    k->median_ns = ns;
    k->spread_ns = ns / 10;
}

static void add_own_metric(xb_result *r, const char *name, double v)
{
    xb_metric *m = &r->metrics[r->nmetrics++];
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->unit, sizeof m->unit, "ms");
    m->value = v;
}

/* What baselines/cublas_layers.c's bl_run gives: inference only (bwd 0), cuBLAS kernels,
 * its own span/wall metrics, phase seconds, no IR counts. */
static xb_result *baseline_shaped(void)
{
    xb_result *r = rg_xmalloc(sizeof *r);
    xb_result_init(r);
    r->validation_error = 2e-7;
    r->median_ms = r->min_ms = r->max_ms = r->fwd_ms = 1.5;
    r->stddev_ms = 0;
    r->bwd_ms = 0;
    r->repeats = 10;
    r->gemm_ms = 1.0, r->traversal_ms = 0.4, r->other_ms = 0.1;
    r->peak_mem_bytes = 1 << 20;
    r->compile_s = 0.8, r->setup_s = 0.01, r->validate_s = 0.02, r->time_s = 0.03;
    add_kernel(r, "sm90_xmma_gemm", "gemm", 1e6);
    add_kernel(r, "blk_gather", "traversal", 4e5);
    add_own_metric(r, "span_ms", 1.6);
    add_own_metric(r, "wall_ms", 1.7);
    snprintf(r->evidence, sizeof r->evidence, "validated: h=2e-07");
    return r;
}

/* What measure/gpu_backend.c gives for a training variant: the same times plus build
 * seconds and the IR's analytic counts. */
static xb_result *sweep_shaped(void)
{
    xb_result *r = baseline_shaped();
    r->nmetrics = 0;
    r->nkernels = 0;
    add_kernel(r, "gemm_0", "gemm", 1e6);
    add_kernel(r, "trav_1", "traversal", 5e5);
    r->fwd_ms = 0.9, r->bwd_ms = 0.6;
    r->build_s = 0.05;
    r->flops = 1e9, r->bytes = 4e8, r->atomics = 1e5, r->launches = 7;
    return r;
}

/* Measurement-level metric names of a measurement, sorted, comma-separated (caller frees). */
static char *metric_names(const char *db_path, int64_t mid)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    char *sql = rg_xasprintf("SELECT group_concat(name, ',') FROM (SELECT name FROM metrics WHERE "
                             "measurement_id = %lld AND kernel = '' ORDER BY name)", (long long)mid);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    const unsigned char *t = sqlite3_column_text(st, 0);
    char *names = rg_xstrdup(t ? (const char *)t : "");
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(sql);
    return names;
}

typedef struct fixture {
    char *dir, *db;
    rs_store *s;
    rs_measurement id;
} fixture;

static void open_fixture(fixture *f)
{
    f->dir = tu_tmpdir();
    f->db = rg_xasprintf("%s/r.db", f->dir);
    rg_err err;
    f->s = rs_open(f->db, &err);
    if (!f->s) fail_msg("%s", err.msg);
    rs_run_info info = {.commit = "abc1234", .host = "h", .gpu_name = "Test GPU", .sm = 90, .driver_version = "1",
                        .cuda_version = "13.0", .cupti_version = "1", .command_line = "test"};
    rs_measurement_init(&f->id);
    f->id.run_id = rs_begin_run(f->s, &info, &err);
    f->id.dataset_id = rs_upsert_dataset(f->s, "aifb", NULL, &err);
    rs_variant v = {.config_json = "{\"tile\":1}", .model = "rgcn", .task = "infer", .dim_in = 64, .dim_out = 64,
                    .heads = 1};
    f->id.variant_id = rs_upsert_variant(f->s, &v, &err);
    f->id.device_key = "Test GPU (sm_90)";
    assert_true(f->id.run_id > 0 && f->id.dataset_id > 0 && f->id.variant_id > 0);
}

static void close_fixture(fixture *f)
{
    rs_close(f->s);
    free(f->db);
    tu_rm_tree(f->dir);
}

static void test_baseline_and_sweep_results_store_the_same_metrics(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f);
    xb_result *bl = baseline_shaped(), *sw = sweep_shaped();
    rg_err err;
    rs_measurement bid = f.id;
    bid.system = "cublas-seg", bid.layer = "RGCN";
    int64_t b = xrow_record(f.s, &bid, bl, &err), g = xrow_record(f.s, &f.id, sw, &err);
    assert_true(b > 0 && g > 0);
    char *bn = metric_names(f.db, b), *gn = metric_names(f.db, g);
    /* every field both results carry is stored under one name; the baseline keeps the
     * forward/backward split and phase seconds it used to drop, plus its own metrics */
    assert_string_equal(bn, "bwd_ms,compile_s,fwd_ms,setup_s,span_ms,time_s,validate_s,wall_ms");
    assert_string_equal(gn, "atomics,build_s,bwd_ms,bytes,compile_s,flops,fwd_ms,launches,setup_s,time_s,validate_s");
    /* the same fields give the same names: the baseline-shaped result with the sweep's extras */
    bl->build_s = sw->build_s, bl->flops = sw->flops, bl->bytes = sw->bytes, bl->atomics = sw->atomics;
    bl->launches = sw->launches, bl->nmetrics = 0;
    int64_t b2 = xrow_record(f.s, &bid, bl, &err);
    char *bn2 = metric_names(f.db, b2);
    assert_string_equal(bn2, gn);
    char *q = rg_xasprintf("SELECT count(*) FROM kernel_times WHERE measurement_id = %lld", (long long)b);
    assert_int_equal(tu_sql_int(f.db, q), 2);
    free(q);
    q = rg_xasprintf("SELECT CAST(value * 10 AS INTEGER) FROM metrics WHERE measurement_id = %lld AND name = 'bwd_ms'",
                     (long long)g);
    assert_int_equal(tu_sql_int(f.db, q), 6);
    free(q);
    free(bn), free(gn), free(bn2), free(bl), free(sw);
    close_fixture(&f);
}

static void test_outcome_columns_and_unknowns(void **state)
{
    (void)state;
    xb_result *r = rg_xmalloc(sizeof *r);
    xb_result_init(r);
    rg_err e = error_of(RG_ERR_FAULT, 700, "kernel execution failed: cudaErrorIllegalAddress");
    xb_result_fail(r, RS_RUNTIME_FAULT, &e);
    rs_measurement m;
    rs_measurement_init(&m);
    m.run_id = 3, m.system = "cublas-bmm";
    xrow_set *rows = rg_xmalloc(sizeof *rows);
    xrow_build(r, &m, rows);
    assert_int_equal(m.run_id, 3);   /* identity untouched */
    assert_string_equal(m.system, "cublas-bmm");
    assert_int_equal(m.status, RS_RUNTIME_FAULT);
    assert_string_equal(m.evidence, e.msg);
    assert_true(isnan(m.median_ms) && isnan(m.validation_error));
    assert_int_equal(rows->nkernels, 0);
    /* NaN times and zero phases are unknown and left out; the CUDA error is kept */
    assert_int_equal(rows->nmetrics, 1);
    assert_string_equal(rows->metrics[0].name, "cuda_error");
    assert_float_equal(rows->metrics[0].value, 700, 0);
    free(rows);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_comes_from_the_class_not_the_text),
        cmocka_unit_test(test_failed_result_keeps_class_and_cuda_error),
        cmocka_unit_test(test_baseline_and_sweep_results_store_the_same_metrics),
        cmocka_unit_test(test_outcome_columns_and_unknowns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
