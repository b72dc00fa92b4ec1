/* Tests of the gather floor (runtime/gfloor): the adjacency both ways, the check of a device
 * result against the float64 sum, and (with a GPU) cuSPARSE's SpMM measured in both widths. */
#include "tests/testutil.h"
#include "datasets/dataset.h"
#include "datasets/loaders.h"
#include "runtime/gfloor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SYNTH "nodes=400,edges=6000,ntypes=3,etypes=5,ratio=0.2,seed=9"
#define DIMS 8

static int cmp_pair(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The CSR's (row, col) pairs equal the COO's (dst, src) (by_dst) or (src, dst) pairs. */
static void expect_same_pairs(const hg_graph *g, int by_dst)
{
    int32_t *ptr, *col;
    kgf_csr(g, by_dst, &ptr, &col);
    int64_t n = g->num_edges, *from_csr = malloc(n * sizeof *from_csr), *from_coo = malloc(n * sizeof *from_coo);
    assert_int_equal(ptr[0], 0);
    assert_int_equal(ptr[g->num_nodes], n);
    for (int32_t r = 0; r < g->num_nodes; r++)
        for (int32_t j = ptr[r]; j < ptr[r + 1]; j++) from_csr[j] = (int64_t)r * g->num_nodes + col[j];
    for (int64_t e = 0; e < n; e++)
        from_coo[e] = by_dst ? (int64_t)g->dst[e] * g->num_nodes + g->src[e] : (int64_t)g->src[e] * g->num_nodes + g->dst[e];
    qsort(from_csr, n, sizeof *from_csr, cmp_pair);
    qsort(from_coo, n, sizeof *from_coo, cmp_pair);
    assert_memory_equal(from_csr, from_coo, n * sizeof *from_csr);
    free(from_csr), free(from_coo), free(ptr), free(col);
}

static void test_csr_both_ways(void **state)
{
    (void)state;
    hg_graph *g = tu_synth(SYNTH);
    expect_same_pairs(g, 1);
    expect_same_pairs(g, 0);
    hg_free(g);
}

/* y = A x in float, as a device would give it. */
static float *spmm_host(const int32_t *ptr, const int32_t *col, int32_t n, const float *x)
{
    float *y = calloc((size_t)n * DIMS, sizeof *y);
    for (int32_t r = 0; r < n; r++)
        for (int32_t j = ptr[r]; j < ptr[r + 1]; j++)
            for (int k = 0; k < DIMS; k++) y[(size_t)r * DIMS + k] += x[(size_t)col[j] * DIMS + k];
    return y;
}

/* kgf_check_rows on the sampled rows of a full y. */
static double check_sampled(const int32_t *ptr, const int32_t *col, int32_t n, const float *x, const float *y,
                            int32_t stride)
{
    int32_t *rows, m = kgf_sample_rows(ptr, n, stride, &rows);
    float *yr = malloc((size_t)m * DIMS * sizeof *yr);
    for (int32_t i = 0; i < m; i++) memcpy(yr + (size_t)i * DIMS, y + (size_t)rows[i] * DIMS, DIMS * sizeof *yr);
    double e = kgf_check_rows(ptr, col, x, DIMS, rows, m, yr);
    free(rows), free(yr);
    return e;
}

static void test_check_rows(void **state)
{
    (void)state;
    hg_graph *g = tu_synth(SYNTH);
    int32_t *ptr, *col, n = g->num_nodes;
    kgf_csr(g, 1, &ptr, &col);
    float *x = malloc((size_t)n * DIMS * sizeof *x);
    for (int64_t i = 0; i < (int64_t)n * DIMS; i++) x[i] = (float)sin(0.37 * (double)i);
    float *y = spmm_host(ptr, col, n, x);
    assert_true(check_sampled(ptr, col, n, x, y, 7) < 1e-6);
    /* a wrong sampled row (a multiple of the stride) */
    y[(size_t)14 * DIMS + 3] += 1;
    assert_true(check_sampled(ptr, col, n, x, y, 7) > 1e-3);
    y[(size_t)14 * DIMS + 3] -= 1;
    /* the longest row is sampled wherever it lies */
    int32_t longest = 0;
    for (int32_t r = 0; r < n; r++)
        if (ptr[r + 1] - ptr[r] > ptr[longest + 1] - ptr[longest]) longest = r;
    int32_t stride = longest % 1000 == 999 ? 998 : 1000;   /* a stride that skips it */
    assert_true(longest % stride != 0);
    int32_t *rows, m = kgf_sample_rows(ptr, n, stride, &rows);
    assert_int_equal(m, (n + stride - 1) / stride + 1);
    assert_int_equal(rows[m - 1], longest);
    free(rows);
    y[(size_t)longest * DIMS] += 10;
    assert_true(check_sampled(ptr, col, n, x, y, stride) > 1e-3);
    y[(size_t)longest * DIMS] = NAN;
    assert_false(check_sampled(ptr, col, n, x, y, stride) <= 1e-3);
    free(x), free(y), free(ptr), free(col);
    hg_free(g);
}

/* Every mapping the measurement tries compiles where it applies, in both widths. */
static void test_gather_compiles(void **state)
{
    (void)state;
    TU_SKIP_CUPTI_UNDER_ASAN();   /* NVRTC under ASan: see testutil.h */
    const int lanes[] = {1, 2, 4, 8, 16, 32}, dims[] = {64, 16, 256};
    for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
        for (int bf16 = 0; bf16 < 2; bf16++)
            for (size_t l = 0; l < sizeof lanes / sizeof lanes[0]; l++) {
                rg_err err;
                int rc = kgf_gather_compiles(dims[d], bf16, lanes[l], 32, 90, &err);
                if (rc < 0) fail_msg("dims %d bf16 %d lanes %d: %s", dims[d], bf16, lanes[l], err.msg);
                /* lanes dividing the row, a share of 64 bytes or less in whole words */
                int share = dims[d] / lanes[l] * (bf16 ? 2 : 4);
                assert_int_equal(rc, !(dims[d] % lanes[l] == 0 && share % 4 == 0 && share <= 64));
            }
    rg_err err;
    assert_int_equal(kgf_gather_compiles(64, 1, 64, 256, 90, &err), 1);   /* half a word per thread */
    assert_int_equal(kgf_gather_compiles(48, 0, 32, 256, 90, &err), 1);   /* 32 does not divide 48 */
}

/* Chunks cover every edge once, in row order, none longer than asked; rows of several chunks
 * have consecutive slots. */
static void test_chunks(void **state)
{
    (void)state;
    const int32_t deg[] = {0, 1, 32, 33, 100, 0, 64}, n = sizeof deg / sizeof deg[0];
    int32_t ptr[sizeof deg / sizeof deg[0] + 1] = {0};
    for (int32_t r = 0; r < n; r++) ptr[r + 1] = ptr[r] + deg[r];
    kgf_chunking c;
    kgf_chunks(ptr, n, 32, &c);
    assert_int_equal(c.nchunks, 1 + 1 + 1 + 2 + 4 + 1 + 2);
    assert_int_equal(c.nmulti, 3);
    const int32_t slots[] = {-1, -1, -1, 0, 1, -1, 2};
    assert_memory_equal(c.row_slot, slots, sizeof slots);
    const int32_t multi[] = {3, 4, 6};
    assert_memory_equal(c.multi_row, multi, sizeof multi);
    int32_t covered = 0;
    for (int32_t k = 0; k < c.nchunks; k++) {
        int32_t r = c.chunk_row[k], end = ptr[r + 1] < c.chunk_beg[k] + 32 ? ptr[r + 1] : c.chunk_beg[k] + 32;
        assert_true(k == 0 || r > c.chunk_row[k - 1] || (r == c.chunk_row[k - 1] && c.chunk_beg[k] == c.chunk_beg[k - 1] + 32));
        assert_int_equal(c.chunk_beg[k], covered);   /* the next edge, none skipped or repeated */
        covered = end > c.chunk_beg[k] ? end : c.chunk_beg[k];
    }
    assert_int_equal(covered, ptr[n]);
    kgf_chunking_free(&c);
    /* one chunk per row when none is longer: no slots */
    kgf_chunks(ptr, n, 100, &c);
    assert_int_equal(c.nchunks, n);
    assert_int_equal(c.nmulti, 0);
    kgf_chunking_free(&c);
}

static void test_no_ceilings(void **state)
{
    (void)state;
    hg_graph *g = tu_synth(SYNTH);
    setenv("RGNN_NO_CEILINGS", "1", 1);
    kgf_floor f;
    rg_err err;
    assert_int_equal(kgf_measure(g, DIMS, DIMS, 0, 1, &f, &err), -1);
    assert_non_null(strstr(err.msg, "RGNN_NO_CEILINGS"));
    unsetenv("RGNN_NO_CEILINGS");
    hg_free(g);
}

static void test_measure_gpu(void **state)
{
    (void)state;
    TU_REQUIRE_GPU();
    hg_graph *g = tu_synth(SYNTH);
    for (int bf16 = 0; bf16 < 2; bf16++) {
        kgf_floor f;
        rg_err err;
        if (kgf_measure(g, 64, 32, bf16, 1, &f, &err)) fail_msg("%s rows: %s", bf16 ? "bf16" : "f32", err.msg);
        assert_true(f.fwd_ms > 0 && f.bwd_ms > 0);
        assert_true(f.fwd_alg[0] && f.bwd_alg[0]);
        if (kgf_measure(g, 64, 32, bf16, 0, &f, &err)) fail_msg("%s", err.msg);
        assert_true(f.fwd_ms > 0);
        assert_true(f.bwd_ms == 0);
    }
    hg_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csr_both_ways),
        cmocka_unit_test(test_check_rows),
        cmocka_unit_test(test_gather_compiles),
        cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_no_ceilings),
        cmocka_unit_test(test_measure_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
