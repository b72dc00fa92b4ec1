/* Tests of hardware counters: metric planning on the host for GH100 (no GPU), the "no CUDA
 * device" error, and Range Profiler counts of copy kernels with known DRAM traffic (GPU). */
#include "tests/testutil.h"
#include "runtime/metrics.h"
#include "runtime/rt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int plan_index(const kmet_plan *p, const char *metric)
{
    for (int i = 0; i < p->nmetrics; i++)
        if (strcmp(p->metrics[i], metric) == 0) return i;
    return -1;
}

static const kmet_skip *plan_skipped(const kmet_plan *p, const char *metric)
{
    for (int i = 0; i < p->nskipped; i++)
        if (strcmp(p->skipped[i].metric, metric) == 0) return &p->skipped[i];
    return NULL;
}

/* Every requested metric is either collected or skipped with a one-line reason. */
static void assert_all_accounted(const kmet_plan *p, const char *const *metrics, int n)
{
    assert_int_equal(p->nmetrics + p->nskipped, n);
    for (int i = 0; i < n; i++) {
        const kmet_skip *s = plan_skipped(p, metrics[i]);
        if (plan_index(p, metrics[i]) >= 0) continue;
        if (!s) fail_msg("%s neither collected nor skipped", metrics[i]);
        assert_true(s->reason[0] && !strchr(s->reason, '\n'));
        printf("skipped %s: %s\n", s->metric, s->reason);
    }
}

/* ---- Planning on the host (no GPU) ----------------------------------------------------- */

static void test_plan_default_set_gh100(void **state)
{
    (void)state;
    TU_SKIP_CUPTI_UNDER_ASAN();
    kmet_plan p;
    rg_err err;
    if (kmet_plan_for_chip("GH100", kmet_default_metrics, kmet_default_count, 0, &p, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(p.chip, "GH100");
    assert_all_accounted(&p, kmet_default_metrics, kmet_default_count);
    assert_int_equal(p.nmetrics, kmet_default_count);   /* all fit in the default pass limit */
    assert_true(p.passes >= 1 && p.passes <= KMET_DEFAULT_MAX_PASSES);
    int rd = plan_index(&p, "dram__bytes_read.sum"), occ = plan_index(&p, "sm__warps_active.avg.pct_of_peak_sustained_active");
    int cyc = plan_index(&p, "sm__cycles_elapsed.avg"), hit = plan_index(&p, "lts__t_sector_hit_rate.pct");
    int ipc = plan_index(&p, "sm__inst_executed.avg.per_cycle_active");
    assert_string_equal(p.units[rd], "byte");
    assert_string_equal(p.units[occ], "%");
    assert_string_equal(p.units[ipc], "inst/gpc_cycle");
    assert_true(p.additive[rd] && p.additive[cyc]);
    assert_false(p.additive[occ] || p.additive[hit] || p.additive[ipc]);
    printf("GH100 default set: %d metrics in %d passes\n", p.nmetrics, p.passes);
    kmet_plan_free(&p);
}

static void test_plan_single_pass(void **state)
{
    (void)state;
    TU_SKIP_CUPTI_UNDER_ASAN();
    kmet_plan p;
    rg_err err;
    if (kmet_plan_for_chip("GH100", kmet_default_metrics, kmet_default_count, 1, &p, &err))
        fail_msg("%s", err.msg);
    assert_all_accounted(&p, kmet_default_metrics, kmet_default_count);
    assert_int_equal(p.passes, 1);
    assert_true(plan_index(&p, "dram__bytes_read.sum") >= 0);
    assert_true(plan_index(&p, "dram__bytes_write.sum") >= 0);
    /* SM throughput is the max of many unit throughputs: several passes on its own. */
    const kmet_skip *s = plan_skipped(&p, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
    assert_non_null(s);
    assert_non_null(strstr(s->reason, "passes"));
    kmet_plan_free(&p);
}

static void test_plan_unsupported_and_duplicates(void **state)
{
    (void)state;
    TU_SKIP_CUPTI_UNDER_ASAN();
    const char *m[] = {"dram__bytes_read.sum", "foo__bar.sum", "dram__bytes_read.sum", "dram__bytes_read.bogus"};
    kmet_plan p;
    rg_err err;
    if (kmet_plan_for_chip("GH100", m, 4, 1, &p, &err)) fail_msg("%s", err.msg);
    assert_int_equal(p.nmetrics, 1);
    assert_int_equal(p.nskipped, 2);
    assert_non_null(strstr(plan_skipped(&p, "foo__bar.sum")->reason, "unsupported on GH100"));
    assert_non_null(plan_skipped(&p, "dram__bytes_read.bogus"));
    kmet_plan_free(&p);
    /* Nothing requested: an empty plan. */
    if (kmet_plan_for_chip("GH100", NULL, 0, 1, &p, &err)) fail_msg("%s", err.msg);
    assert_int_equal(p.nmetrics + p.nskipped + p.passes, 0);
    kmet_plan_free(&p);
}

static void test_plan_unknown_chip(void **state)
{
    (void)state;
    TU_SKIP_CUPTI_UNDER_ASAN();
    kmet_plan p;
    rg_err err;
    assert_int_equal(kmet_plan_for_chip("XX999", kmet_default_metrics, 2, 1, &p, &err), -1);
    assert_non_null(strstr(err.msg, "XX999"));
    assert_non_null(strstr(err.msg, "GH100"));   /* lists the chips it knows */
    assert_null(strchr(err.msg, '\n'));
}

/* ---- Without a device ---------------------------------------------------------------- */

static int never_called(void *ctx, rg_err *err)
{
    (void)ctx;
    fail_msg("run() called without a collection");
    return rg_errf(err, "unreachable");
}

static void test_without_device(void **state)
{
    (void)state;
    rg_err err;
    kmet_result r;
    assert_int_equal(kmet_run(never_called, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "kmet_begin first"));
    assert_int_equal(kmet_end(&r, &err), -1);
    assert_non_null(strstr(err.msg, "no collection is running"));
    if (krt_have_device()) return;   /* the GPU tests cover this case */
    assert_int_equal(kmet_begin(kmet_default_metrics, kmet_default_count, &err), -1);
    assert_int_equal(strncmp(err.msg, "no CUDA device: ", 16), 0);
    assert_null(strchr(err.msg, '\n'));
    assert_int_equal(kmet_collect(kmet_default_metrics, 1, NULL, never_called, NULL, &r, &err), -1);
    assert_int_equal(strncmp(err.msg, "no CUDA device: ", 16), 0);
}

/* ---- With a device ------------------------------------------------------------------- */

static const char *COPY_SRC =
    "extern \"C\" __global__ void copy_floats(const float *in, float *out, long n)\n"
    "{\n"
    "    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)\n"
    "        out[i] = in[i];\n"
    "}\n"
    "extern \"C\" __global__ void scale_floats(float *x, long n)\n"
    "{\n"
    "    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)\n"
    "        x[i] *= 0.5f;\n"
    "}\n";

typedef struct workload {
    krt_module *mod;
    krt_kernel copy, scale;
    float *in, *out;
    long n;
    int scales;         /* scale_floats launches after the copy */
    int calls;          /* times run() was called */
} workload;

static void workload_init(workload *w, long n, int scales)
{
    rg_err err;
    memset(w, 0, sizeof *w);
    krt_device dev;
    if (krt_init(0, &dev, &err)) fail_msg("%s", err.msg);
    krt_source src = {"metrics_test.cu", COPY_SRC, 0, NULL, 0};
    krt_cubin c;
    if (krt_compile(&src, dev.sm, &c, &err)) fail_msg("%s", err.msg);
    if (krt_module_load(&c, &w->mod, &err)) fail_msg("%s", err.msg);
    krt_cubin_free(&c);
    if (krt_get_kernel(w->mod, "copy_floats", &w->copy, &err) ||
        krt_get_kernel(w->mod, "scale_floats", &w->scale, &err))
        fail_msg("%s", err.msg);
    w->n = n;
    w->scales = scales;
    if (krt_alloc((void **)&w->in, (size_t)n * sizeof(float), &err) ||
        krt_alloc((void **)&w->out, (size_t)n * sizeof(float), &err) ||
        krt_memset(w->in, 0, (size_t)n * sizeof(float), &err) || krt_sync(&err))
        fail_msg("%s", err.msg);
}

static void workload_free(workload *w)
{
    krt_free(w->in);
    krt_free(w->out);
    krt_module_unload(w->mod);
}

/* The launch sequence: one copy of n floats, then `scales` in-place scalings of out. */
static int run_workload(void *ctx, rg_err *err)
{
    workload *w = ctx;
    w->calls++;
    krt_dim3 grid = {132 * 8, 1, 1}, block = {256, 1, 1};
    void *cargs[] = {&w->in, &w->out, &w->n};
    if (krt_launch(&w->copy, grid, block, 0, cargs, err)) return -1;
    void *sargs[] = {&w->out, &w->n};
    for (int i = 0; i < w->scales; i++)
        if (krt_launch(&w->scale, grid, block, 0, sargs, err)) return -1;
    return 0;
}

static void assert_within(double value, double expected, double rel, const char *what)
{
    printf("%s: %.0f (expected %.0f)\n", what, value, expected);
    if (!(fabs(value - expected) <= rel * expected))
        fail_msg("%s = %.0f, expected %.0f within %.0f%%", what, value, expected, rel * 100);
}

/* 2^28 floats = 1 GiB per buffer: the 50 MB L2 of an H100 can hide at most ~5% of it. */
static void test_copy_dram_bytes(void **state)
{
    (void)state;
    TU_REQUIRE_GPU();
    workload w;
    workload_init(&w, 1L << 28, 0);
    const char *m[] = {"dram__bytes_read.sum", "dram__bytes_write.sum"};
    kmet_result r;
    rg_err err;
    if (kmet_collect(m, 2, NULL, run_workload, &w, &r, &err)) fail_msg("%s", err.msg);
    assert_int_equal(r.plan.nmetrics, 2);
    assert_int_equal(r.plan.passes, 1);
    assert_int_equal(r.runs, 1);
    assert_int_equal(w.calls, 1);
    assert_int_equal(r.launches, 1);
    assert_int_equal(r.nlaunch_rows, 2);
    assert_string_equal(r.note, "");
    double bytes = 4.0 * (double)w.n;
    const kmet_row *rd = kmet_find(&r, "copy_floats", "dram__bytes_read.sum");
    const kmet_row *wr = kmet_find(&r, "copy_floats", "dram__bytes_write.sum");
    assert_non_null(rd);
    assert_non_null(wr);
    assert_string_equal(rd->unit, "byte");
    assert_within(rd->value, bytes, 0.10, "copy_floats dram__bytes_read.sum");
    assert_within(wr->value, bytes, 0.10, "copy_floats dram__bytes_write.sum");
    kmet_free(&r);
    workload_free(&w);
}

/* The default set over copy, scale, scale: every metric collected or reported, per-kernel
 * rows fold the two scale launches, run() called once per pass. */
static void check_default_set(kmet_replay replay)
{
    workload w;
    workload_init(&w, 1L << 24, 2);
    kmet_options opt = {0, 0, replay};
    kmet_result r;
    rg_err err;
    int rc = kmet_collect(kmet_default_metrics, kmet_default_count, &opt, run_workload, &w, &r, &err);
    if (rc) fail_msg("%s", err.msg);
    assert_all_accounted(&r.plan, kmet_default_metrics, kmet_default_count);
    assert_true(r.plan.nmetrics > 0);
    printf("%s replay: %d metrics, %d passes, %d runs; note: '%s'\n",
           replay == KMET_REPLAY_KERNEL ? "kernel" : "user", r.plan.nmetrics, r.plan.passes, r.runs, r.note);
    assert_int_equal(r.runs, replay == KMET_REPLAY_KERNEL ? 1 : r.plan.passes);
    assert_int_equal(w.calls, r.runs);
    assert_int_equal(r.launches, 3);
    assert_int_equal(r.nlaunch_rows, 3 * (size_t)r.plan.nmetrics);
    assert_int_equal(r.nkernel_rows, 2 * (size_t)r.plan.nmetrics);
    assert_string_equal(r.launch_rows[0].kernel, "copy_floats");
    assert_string_equal(r.launch_rows[r.nlaunch_rows - 1].kernel, "scale_floats");
    for (size_t i = 0; i < r.nlaunch_rows; i++) {
        const kmet_row *row = &r.launch_rows[i];
        assert_true(isfinite(row->value) && row->value >= 0);
        if (strcmp(row->unit, "%") == 0) assert_true(row->value <= 100.5);
    }
    for (int j = 0; j < r.plan.nmetrics; j++) {
        const char *metric = r.plan.metrics[j];
        const kmet_row *k = kmet_find(&r, "scale_floats", metric);
        assert_non_null(k);
        assert_int_equal(k->calls, 2);
        double a = r.launch_rows[1 * r.plan.nmetrics + j].value, b = r.launch_rows[2 * r.plan.nmetrics + j].value;
        double want = r.plan.additive[j] ? a + b : (a + b) / 2;
        assert_true(fabs(k->value - want) <= 1e-9 * (fabs(want) + 1));
        printf("  %-56s copy %14.3f  scale x2 %14.3f %s\n", metric,
               kmet_find(&r, "copy_floats", metric)->value, k->value, k->unit);
    }
    int inst = plan_index(&r.plan, "smsp__inst_executed.sum");
    if (inst >= 0) assert_true(kmet_find(&r, "copy_floats", "smsp__inst_executed.sum")->value > 0);
    kmet_free(&r);
    workload_free(&w);
}

static void test_default_set_user_replay(void **state)
{
    (void)state;
    TU_REQUIRE_GPU();
    check_default_set(KMET_REPLAY_USER);
}

static void test_default_set_kernel_replay(void **state)
{
    (void)state;
    TU_REQUIRE_GPU();
    check_default_set(KMET_REPLAY_KERNEL);
}

static int failing_run(void *ctx, rg_err *err)
{
    (void)ctx;
    return rg_errf(err, "launch refused on purpose");
}

/* A failing run ends the collection with its message; the next one starts cleanly; a list
 * of unsupported metrics collects nothing and never calls run(). */
static void test_failures_and_nothing_to_collect(void **state)
{
    (void)state;
    TU_REQUIRE_GPU();
    workload w;
    workload_init(&w, 1L << 20, 0);
    rg_err err;
    kmet_result r;
    if (kmet_begin(kmet_default_metrics, 2, &err)) fail_msg("%s", err.msg);
    assert_int_equal(kmet_begin(kmet_default_metrics, 2, &err), -1);   /* one at a time */
    assert_non_null(strstr(err.msg, "already running"));
    assert_int_equal(kmet_run(failing_run, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "metrics pass 1: launch refused on purpose"));
    assert_int_equal(kmet_end(&r, &err), -1);
    assert_non_null(strstr(err.msg, "no collection is running"));

    if (kmet_collect(kmet_default_metrics, 1, NULL, run_workload, &w, &r, &err)) fail_msg("%s", err.msg);
    assert_int_equal(r.nlaunch_rows, 1);
    kmet_free(&r);

    const char *bogus[] = {"foo__bar.sum"};
    if (kmet_collect(bogus, 1, NULL, never_called, NULL, &r, &err)) fail_msg("%s", err.msg);
    assert_int_equal(r.plan.nmetrics, 0);
    assert_int_equal(r.plan.nskipped, 1);
    assert_int_equal(r.runs, 0);
    assert_non_null(strstr(r.note, "no requested metric"));
    kmet_free(&r);

    /* kmet_end without kmet_run ends the collection with an error. */
    if (kmet_begin(kmet_default_metrics, 1, &err)) fail_msg("%s", err.msg);
    assert_int_equal(kmet_end(&r, &err), -1);
    assert_non_null(strstr(err.msg, "kmet_run was not called"));
    workload_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_default_set_gh100),
        cmocka_unit_test(test_plan_single_pass),
        cmocka_unit_test(test_plan_unsupported_and_duplicates),
        cmocka_unit_test(test_plan_unknown_chip),
        cmocka_unit_test(test_without_device),
        cmocka_unit_test(test_copy_dram_bytes),
        cmocka_unit_test(test_default_set_user_replay),
        cmocka_unit_test(test_default_set_kernel_replay),
        cmocka_unit_test(test_failures_and_nothing_to_collect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
