/* The gather floor: the time cuSPARSE's SpMM takes to sum, for every node, the rows of its
 * in-neighbours (one row gathered per edge) on a graph's node order, at a storage width. */
#include "runtime/gfloor.h"
#include "runtime/exec.h"
#include "runtime/rt.h"

#include <cuda_runtime_api.h>
/* the header declares its deprecated legacy API with attributes that -Werror turns fatal */
#define DISABLE_CUSPARSE_DEPRECATED
#include <cusparse.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define TIMED 5
/* float32 rows are summed in float32; bfloat16 results carry 8 significant bits */
#define TOL_F32 1e-4
#define TOL_BF16 1e-2
#define CHECK_ROWS 1024

void kgf_csr(const hg_graph *g, int by_dst, int32_t **row_ptr, int32_t **col)
{
    const int32_t *ptr = by_dst ? g->in_ptr : g->out_ptr, *eid = by_dst ? g->in_eid : g->out_eid;
    const int32_t *other = by_dst ? g->src : g->dst;
    int32_t *p = rg_xmalloc(((size_t)g->num_nodes + 1) * sizeof *p);
    int32_t *c = rg_xmalloc((size_t)(g->num_edges ? g->num_edges : 1) * sizeof *c);
    memcpy(p, ptr, ((size_t)g->num_nodes + 1) * sizeof *p);
    for (int32_t q = 0; q < g->num_edges; q++) c[q] = other[eid[q]];
    *row_ptr = p;
    *col = c;
}

static double row_error(const int32_t *row_ptr, const int32_t *col, const float *x, const float *y, int dims,
                        int32_t r)
{
    double worst = 0;
    for (int k = 0; k < dims; k++) {
        double sum = 0, mag = 0;
        for (int32_t j = row_ptr[r]; j < row_ptr[r + 1]; j++) {
            double v = x[(size_t)col[j] * dims + k];
            sum += v, mag += fabs(v);
        }
        double e = fabs((double)y[(size_t)r * dims + k] - sum) / (mag + 1);
        if (isnan(e)) return e;   /* a NaN result is the worst error */
        if (e > worst) worst = e;
    }
    return worst;
}

double kgf_check_rows(const int32_t *row_ptr, const int32_t *col, int32_t nrows, const float *x, const float *y,
                      int dims, int32_t stride)
{
    RG_ASSERT(stride > 0);
    double worst = 0;
    int32_t longest = 0;
    for (int32_t r = 0; r < nrows; r++) {
        if (row_ptr[r + 1] - row_ptr[r] > row_ptr[longest + 1] - row_ptr[longest]) longest = r;
        if (r % stride == 0) {
            double e = row_error(row_ptr, col, x, y, dims, r);
            if (isnan(e)) return e;
            if (e > worst) worst = e;
        }
    }
    if (nrows > 0) {
        double e = row_error(row_ptr, col, x, y, dims, longest);
        if (isnan(e) || e > worst) worst = e;
    }
    return worst;
}

/* ---- the device side ---- */

static pthread_mutex_t handle_lock = PTHREAD_MUTEX_INITIALIZER;
static cusparseHandle_t handle;
static int have_handle;

/* One handle for the process: creating one costs tens of milliseconds. */
static int get_handle(cusparseHandle_t *out, rg_err *err)
{
    pthread_mutex_lock(&handle_lock);
    if (!have_handle && cusparseCreate(&handle) == CUSPARSE_STATUS_SUCCESS) have_handle = 1;
    int ok = have_handle;
    *out = handle;
    pthread_mutex_unlock(&handle_lock);
    return ok ? 0 : rg_errf(err, "gather floor: cusparseCreate failed");
}

/* One direction's matrices on the device: A (CSR, unit values), x (ncols x dims) and y. */
typedef struct spmm_job {
    int64_t nrows, ncols, nnz;
    int dims, bf16;
    int32_t *h_ptr, *h_col;   /* host CSR, for the check */
    float *h_x;               /* host rows as stored (bfloat16 values widened exactly) */
    void *d_ptr, *d_col, *d_val, *d_x, *d_y, *d_buf;
    size_t buf_bytes;
    cusparseSpMatDescr_t a;
    cusparseDnMatDescr_t x, y;
    int have_a, have_x, have_y;
} spmm_job;

static size_t elem(const spmm_job *j) { return j->bf16 ? 2 : 4; }
static cudaDataType dtype(const spmm_job *j) { return j->bf16 ? CUDA_R_16BF : CUDA_R_32F; }

static void job_free(spmm_job *j)
{
    if (j->have_a) cusparseDestroySpMat(j->a);
    if (j->have_x) cusparseDestroyDnMat(j->x);
    if (j->have_y) cusparseDestroyDnMat(j->y);
    krt_free(j->d_ptr), krt_free(j->d_col), krt_free(j->d_val), krt_free(j->d_x), krt_free(j->d_y);
    krt_free(j->d_buf);
    free(j->h_ptr), free(j->h_col), free(j->h_x);
    memset(j, 0, sizeof *j);
}

/* Pseudo-random rows in [-1, 1), as the device will hold them; `host` receives them in the
 * stored type. */
static float *make_rows(int64_t count, int bf16, void **host)
{
    float *x = rg_xmalloc((size_t)(count ? count : 1) * sizeof *x);
    uint16_t *h16 = bf16 ? rg_xmalloc((size_t)(count ? count : 1) * sizeof *h16) : NULL;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < count; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double v = (double)(s >> 11) / 9007199254740992.0 * 2 - 1;
        if (bf16) h16[i] = kx_bf16_from_double(v), x[i] = kx_bf16_to_float(h16[i]);
        else x[i] = (float)v;
    }
    *host = bf16 ? (void *)h16 : (void *)x;
    return x;
}

static int upload_new(void **d, const void *h, size_t bytes, rg_err *err)
{
    return krt_alloc(d, bytes ? bytes : 4, err) || krt_upload(*d, h, bytes, err);
}

static int job_setup(spmm_job *j, const hg_graph *g, int by_dst, int dims, int bf16, rg_err *err)
{
    j->nrows = j->ncols = g->num_nodes;
    j->nnz = g->num_edges;
    j->dims = dims, j->bf16 = bf16;
    kgf_csr(g, by_dst, &j->h_ptr, &j->h_col);
    void *hx, *ones;
    j->h_x = make_rows(j->ncols * dims, bf16, &hx);
    uint16_t one16 = kx_bf16_from_double(1.0);
    float one32 = 1;
    ones = rg_xmalloc((size_t)(j->nnz ? j->nnz : 1) * elem(j));
    for (int64_t e = 0; e < j->nnz; e++)
        memcpy((char *)ones + e * elem(j), bf16 ? (void *)&one16 : (void *)&one32, elem(j));
    int rc = upload_new(&j->d_ptr, j->h_ptr, (size_t)(j->nrows + 1) * 4, err) ||
             upload_new(&j->d_col, j->h_col, (size_t)j->nnz * 4, err) ||
             upload_new(&j->d_val, ones, (size_t)j->nnz * elem(j), err) ||
             upload_new(&j->d_x, hx, (size_t)(j->ncols * dims) * elem(j), err) ||
             krt_alloc(&j->d_y, (size_t)(j->nrows * dims) * elem(j) + 4, err);
    free(ones);
    if (bf16) free(hx);
    if (rc) return -1;
    if (cusparseCreateCsr(&j->a, j->nrows, j->ncols, j->nnz, j->d_ptr, j->d_col, j->d_val, CUSPARSE_INDEX_32I,
                          CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, dtype(j)) != CUSPARSE_STATUS_SUCCESS)
        return rg_errf(err, "gather floor: cusparseCreateCsr failed");
    j->have_a = 1;
    if (cusparseCreateDnMat(&j->x, j->ncols, dims, dims, j->d_x, dtype(j), CUSPARSE_ORDER_ROW) !=
        CUSPARSE_STATUS_SUCCESS)
        return rg_errf(err, "gather floor: cusparseCreateDnMat failed");
    j->have_x = 1;
    if (cusparseCreateDnMat(&j->y, j->nrows, dims, dims, j->d_y, dtype(j), CUSPARSE_ORDER_ROW) !=
        CUSPARSE_STATUS_SUCCESS)
        return rg_errf(err, "gather floor: cusparseCreateDnMat failed");
    j->have_y = 1;
    return 0;
}

static int spmm(const spmm_job *j, cusparseHandle_t h, cusparseSpMMAlg_t alg)
{
    const float one = 1, zero = 0;
    return cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, j->a, j->x,
                        &zero, j->y, CUDA_R_32F, alg, j->d_buf) != CUSPARSE_STATUS_SUCCESS;
}

/* The device result against the float64 sum on sampled rows. */
static int check_result(const spmm_job *j, const char *alg, rg_err *err)
{
    size_t n = (size_t)(j->nrows * j->dims);
    void *raw = rg_xmalloc(n * elem(j) + 4);
    float *y = j->bf16 ? rg_xmalloc(n * sizeof *y + 4) : raw;
    int rc = krt_download(raw, j->d_y, n * elem(j), err);
    if (!rc && j->bf16)
        for (size_t i = 0; i < n; i++) y[i] = kx_bf16_to_float(((const uint16_t *)raw)[i]);
    if (!rc) {
        int32_t stride = j->nrows > CHECK_ROWS ? (int32_t)(j->nrows / CHECK_ROWS) : 1;
        double e = kgf_check_rows(j->h_ptr, j->h_col, (int32_t)j->nrows, j->h_x, y, j->dims, stride);
        if (!(e <= (j->bf16 ? TOL_BF16 : TOL_F32)))
            rc = rg_errf(err, "gather floor: cuSPARSE %s differs from the float64 sum (relative error %.3g)", alg, e);
    }
    if (j->bf16) free(y);
    free(raw);
    return rc;
}

typedef struct alg_name { cusparseSpMMAlg_t alg; const char *name; } alg_name;
static const alg_name ALGS[] = {{CUSPARSE_SPMM_ALG_DEFAULT, "default"},
                                {CUSPARSE_SPMM_CSR_ALG1, "csr_alg1"},
                                {CUSPARSE_SPMM_CSR_ALG2, "csr_alg2"},
                                {CUSPARSE_SPMM_CSR_ALG3, "csr_alg3"}};

/* Best of TIMED calls after a warm-up, in ms; -1 when a call failed. */
static double time_alg(const spmm_job *j, cusparseHandle_t h, cusparseSpMMAlg_t alg)
{
    cudaEvent_t t0, t1;
    if (cudaEventCreate(&t0) != cudaSuccess) return -1;
    if (cudaEventCreate(&t1) != cudaSuccess) return cudaEventDestroy(t0), -1;
    double best = -1;
    for (int i = 0; i < TIMED; i++) {
        float ms = 0;
        cudaEventRecord(t0, 0);
        if (spmm(j, h, alg)) break;
        cudaEventRecord(t1, 0);
        if (cudaEventSynchronize(t1) != cudaSuccess || cudaEventElapsedTime(&ms, t0, t1) != cudaSuccess) break;
        if (best < 0 || ms < best) best = ms;
    }
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    return best;
}

/* Tries one algorithm: its workspace, its one-time analysis, a warm-up call whose result is
 * checked, then the timing. 1 when cuSPARSE does not offer it for these types. */
static int try_alg(spmm_job *j, cusparseHandle_t h, const alg_name *an, double *ms, rg_err *err)
{
    const float one = 1, zero = 0;
    size_t bytes = 0;
    if (cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, j->a,
                                j->x, &zero, j->y, CUDA_R_32F, an->alg, &bytes) != CUSPARSE_STATUS_SUCCESS)
        return 1;
    if (bytes > j->buf_bytes) {
        krt_free(j->d_buf);
        j->d_buf = NULL, j->buf_bytes = 0;
        if (krt_alloc(&j->d_buf, bytes, err)) return -1;
        j->buf_bytes = bytes;
    }
    /* optional; it speeds up the calls that follow where the algorithm has an analysis */
    cusparseSpMM_preprocess(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, j->a, j->x,
                            &zero, j->y, CUDA_R_32F, an->alg, j->d_buf);
    if (krt_poison(j->d_y, (size_t)(j->nrows * j->dims) * elem(j), err)) return -1;
    if (spmm(j, h, an->alg)) return 1;
    if (krt_sync(err) || check_result(j, an->name, err)) return -1;
    *ms = time_alg(j, h, an->alg);
    return *ms > 0 ? 0 : rg_errf(err, "gather floor: timing cuSPARSE %s failed", an->name);
}

/* The fastest checked algorithm of one direction. */
static int measure_direction(const hg_graph *g, int by_dst, int dims, int bf16, double *ms, char *alg, size_t alg_n,
                             rg_err *err)
{
    cusparseHandle_t h;
    if (get_handle(&h, err)) return -1;
    spmm_job j = {0};
    int rc = job_setup(&j, g, by_dst, dims, bf16, err);
    *ms = -1;
    for (size_t i = 0; !rc && i < sizeof ALGS / sizeof ALGS[0]; i++) {
        double t;
        int r = try_alg(&j, h, &ALGS[i], &t, err);
        if (r < 0) rc = -1;
        else if (r == 0 && (*ms < 0 || t < *ms)) *ms = t, snprintf(alg, alg_n, "%s", ALGS[i].name);
    }
    job_free(&j);
    if (!rc && *ms < 0)
        rc = rg_errf(err, "gather floor: cuSPARSE offers no CSR SpMM for %s rows", bf16 ? "bfloat16" : "float32");
    return rc;
}

int kgf_measure(const hg_graph *g, int dims_in, int dims_out, int bf16, int backward, kgf_floor *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    const char *off = getenv("RGNN_NO_CEILINGS");
    if (off && *off && strcmp(off, "0")) return rg_errf(err, "gather floor not measured: RGNN_NO_CEILINGS is set");
    if (krt_require_device(err)) return -1;
    if (measure_direction(g, 1, dims_in, bf16, &out->fwd_ms, out->fwd_alg, sizeof out->fwd_alg, err)) return -1;
    if (backward &&
        measure_direction(g, 0, dims_out, bf16, &out->bwd_ms, out->bwd_alg, sizeof out->bwd_alg, err))
        return -1;
    return 0;
}
