/* Tests of kernel timing: per-kernel aggregation on hand-made records (CPU), the
 * "no CUDA device" error, and CUPTI / cudaEvent records of real launches (GPU). */
#include "tests/testutil.h"
#include "runtime/prof.h"
#include "runtime/rt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kprof_record rec(const char *name, uint64_t start, uint64_t dur)
{
    kprof_record r;
    memset(&r, 0, sizeof r);
    r.name = rg_xstrdup(name);
    r.start_ns = start;
    r.end_ns = start + dur;
    return r;
}

/* Two runs of: gemm, softmax, gemm, gemm (gemm durations 10,30,20 then 40,50,60). */
static kprof_records two_runs(void)
{
    kprof_records r = {0};
    r.v = rg_xcalloc(8, sizeof *r.v);
    uint64_t t = 1000;
    const uint64_t gemm[2][3] = {{10, 30, 20}, {40, 50, 60}}, soft[2] = {5, 7};
    for (int run = 0; run < 2; run++) {
        r.v[r.n++] = rec("gemm", t, gemm[run][0]), t += 100;
        r.v[r.n++] = rec("softmax", t, soft[run]), t += 100;
        r.v[r.n++] = rec("gemm", t, gemm[run][1]), t += 100;
        r.v[r.n++] = rec("gemm", t, gemm[run][2]), t += 100;
    }
    return r;
}

static void test_summarize_medians(void **state)
{
    (void)state;
    kprof_records r = two_runs();
    size_t n;
    kprof_summary *s = kprof_summarize(&r, 2, &n);
    assert_int_equal(n, 2);
    assert_string_equal(s[0].name, "gemm");   /* launched first */
    assert_int_equal(s[0].calls, 6);
    assert_float_equal(s[0].median_ns, 35, 1e-9);
    assert_float_equal(s[0].mean_ns, 35, 1e-9);
    assert_float_equal(s[0].min_ns, 10, 1e-9);
    assert_float_equal(s[0].max_ns, 60, 1e-9);
    assert_float_equal(s[0].total_ns, 210, 1e-9);
    assert_float_equal(s[0].median_per_repeat_ns, (60 + 150) / 2.0, 1e-9);
    assert_string_equal(s[1].name, "softmax");
    assert_int_equal(s[1].calls, 2);
    assert_float_equal(s[1].median_ns, 6, 1e-9);
    assert_float_equal(s[1].median_per_repeat_ns, 6, 1e-9);
    kprof_summary_free(s, n);
    /* Calls that do not split evenly into runs have no per-run median. */
    s = kprof_summarize(&r, 4, &n);
    assert_true(isnan(s[0].median_per_repeat_ns));
    assert_false(isnan(s[1].median_ns));
    kprof_summary_free(s, n);
    s = kprof_summarize(&r, 0, &n);
    assert_true(isnan(s[0].median_per_repeat_ns));
    kprof_summary_free(s, n);
    assert_float_equal(kprof_span_ns(&r), 1000 + 700 + 60 - 1000, 1e-9);
    kprof_records_free(&r);
    kprof_records empty = {0};
    assert_null(kprof_summarize(&empty, 1, &n));
    assert_int_equal(n, 0);
    assert_float_equal(kprof_span_ns(&empty), 0, 0);
}

static kprof_record krec(kprof_kind kind, uint64_t start, uint64_t end)
{
    kprof_record r = rec(kind == KPROF_KERNEL ? "k" : "[memset]", start, end - start);
    r.kind = kind;
    return r;
}

/* The shared median (common/util.h) every timing summary uses: odd and even counts, and the
 * values left sorted, since callers read the extremes from x[0] and x[n-1]. */
static void test_median_sorts_in_place(void **state)
{
    (void)state;
    double odd[] = {5, 1, 4, 2, 3}, even[] = {8, 2, 6, 4}, one[] = {7};
    assert_true(rg_median_sort(odd, 5) == 3);
    assert_true(rg_median_sort(even, 4) == 5);
    assert_true(rg_median_sort(one, 1) == 7);
    for (int i = 0; i < 4; i++) assert_true(odd[i] <= odd[i + 1]);
    assert_true(even[0] == 2 && even[3] == 8);
}

/* Two runs of two kernels, each after the plan's zero-fills (and a copy in the second):
 * a run's span starts at its first memset, and its kernel sum leaves the memsets out. */
static void test_run_spans_include_memsets(void **state)
{
    (void)state;
    kprof_records r = {0};
    r.v = rg_xcalloc(9, sizeof *r.v);
    r.v[r.n++] = krec(KPROF_MEMSET, 100, 110);
    r.v[r.n++] = krec(KPROF_KERNEL, 120, 150);
    r.v[r.n++] = krec(KPROF_KERNEL, 160, 200);
    r.v[r.n++] = krec(KPROF_MEMSET, 300, 305);
    r.v[r.n++] = krec(KPROF_MEMCPY, 306, 310);
    r.v[r.n++] = krec(KPROF_KERNEL, 320, 330);
    r.v[r.n++] = krec(KPROF_KERNEL, 340, 420);
    double span[2];
    assert_int_equal(kprof_run_spans(&r, 2, 2, span), 0);
    assert_float_equal(span[0], 100, 0);
    assert_float_equal(span[1], 120, 0);
    assert_int_equal(kprof_run_spans(&r, 3, 2, span), -1);   /* 4 kernels are not 2 runs of 3 */
    /* the cudaEvent fallback's run records win when there is one per run */
    r.v[r.n++] = krec(KPROF_RUN, 90, 205);
    r.v[r.n++] = krec(KPROF_RUN, 290, 430);
    assert_int_equal(kprof_run_spans(&r, 2, 2, span), 0);
    assert_float_equal(span[0], 115, 0);
    assert_float_equal(span[1], 140, 0);
    assert_int_equal(kprof_count(&r, KPROF_MEMSET), 2);
    kprof_keep(&r, KPROF_KERNEL);
    assert_int_equal(r.n, 4);
    assert_int_equal(r.v[2].start_ns, 320);
    kprof_records_free(&r);
}

static void test_without_device(void **state)
{
    (void)state;
    rg_err err;
    kprof_records r;
    assert_int_equal(kprof_stop(&r, &err), -1);
    assert_non_null(strstr(err.msg, "no collection is running"));
    if (krt_have_device()) return;   /* the GPU tests below cover this case */
    assert_int_equal(kprof_start(&err), -1);
    assert_int_equal(strncmp(err.msg, "no CUDA device: ", 16), 0);
    assert_null(strchr(err.msg, '\n'));
    assert_int_equal(kprof_start_with(KPROF_EVENTS, &err), -1);
    assert_int_equal(strncmp(err.msg, "no CUDA device: ", 16), 0);
}

static const char *PATTERN_SRC =
    "extern \"C\" __global__ void fill_pattern(float *out, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) out[i] = 2.0f * i;\n"
    "}\n";

enum { LAUNCHES = 5, N = 8 * 128 };

/* Runs fill_pattern LAUNCHES times under kprof with `method`; checks the records. */
static void profile_launches(kprof_method method)
{
    rg_err err;
    krt_device dev;
    if (krt_init(0, &dev, &err)) fail_msg("%s", err.msg);
    krt_source src = {"prof.cu", PATTERN_SRC, 0, NULL, 0};
    krt_cubin c;
    krt_module *m;
    krt_kernel k;
    if (krt_compile(&src, dev.sm, &c, &err)) fail_msg("%s", err.msg);
    if (krt_module_load(&c, &m, &err)) fail_msg("%s", err.msg);
    krt_cubin_free(&c);
    if (krt_get_kernel(m, "fill_pattern", &k, &err)) fail_msg("%s", err.msg);
    float *out;
    assert_int_equal(krt_alloc((void **)&out, N * sizeof(float), &err), 0);
    int n = N;
    void *args[] = {&out, &n};
    krt_dim3 grid = {8, 1, 1}, block = {128, 1, 1};

    if (kprof_start_with(method, &err)) fail_msg("%s", err.msg);
    assert_int_equal(kprof_start(&err), -1);   /* one collection at a time */
    for (int i = 0; i < LAUNCHES; i++)
        if (krt_launch(&k, grid, block, 0, args, &err)) fail_msg("%s", err.msg);
    kprof_records r;
    if (kprof_stop(&r, &err)) fail_msg("%s", err.msg);

    assert_int_equal(r.method, method);
    assert_int_equal(r.n, LAUNCHES);
    for (size_t i = 0; i < r.n; i++) {
        assert_string_equal(r.v[i].name, "fill_pattern");
        assert_true(r.v[i].end_ns > r.v[i].start_ns);
        assert_int_equal(r.v[i].grid[0], 8);
        assert_int_equal(r.v[i].grid[1], 1);
        assert_int_equal(r.v[i].block[0], 128);
        /* CUPTI reports the registers allocated, which may be rounded up (16 vs 8 seen
         * on an H100); the cudaEvent fallback reports the compiled count. */
        assert_true(r.v[i].registers >= k.num_regs && r.v[i].registers > 0);
        if (i) assert_true(r.v[i].start_ns >= r.v[i - 1].start_ns);
    }
    size_t ns;
    kprof_summary *s = kprof_summarize(&r, LAUNCHES, &ns);
    assert_int_equal(ns, 1);
    assert_int_equal(s[0].calls, LAUNCHES);
    assert_true(s[0].median_ns > 0 && s[0].median_ns < 1e9);
    printf("%s: fill_pattern median %.0f ns over %d launches\n", kprof_method_name(method),
           s[0].median_ns, LAUNCHES);
    kprof_summary_free(s, ns);
    kprof_records_free(&r);
    krt_free(out);
    krt_module_unload(m);
}

static void test_cupti_records_kernels(void **state)
{
    (void)state;
    TU_REQUIRE_GPU();
    profile_launches(KPROF_CUPTI);
}

static void test_event_fallback_records_kernels(void **state)
{
    (void)state;
    TU_REQUIRE_GPU();
    profile_launches(KPROF_EVENTS);
    /* The fallback's launch hooks are gone: a collection via CUPTI sees only its own work. */
    profile_launches(KPROF_CUPTI);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summarize_medians),
        cmocka_unit_test(test_median_sorts_in_place),
        cmocka_unit_test(test_run_spans_include_memsets),
        cmocka_unit_test(test_without_device),
        cmocka_unit_test(test_cupti_records_kernels),
        cmocka_unit_test(test_event_fallback_records_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
