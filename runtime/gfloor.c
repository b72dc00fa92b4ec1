/* The gather floor: the least time cuSPARSE's SpMM or a plain gather kernel takes to sum, for
 * every node, the rows of its in-neighbours (one row per edge) on a graph's node order. */
#include "runtime/gfloor.h"
#include "runtime/ceil.h"
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

static double row_error(const int32_t *row_ptr, const int32_t *col, const float *x, const float *y_row, int dims,
                        int32_t r)
{
    double worst = 0;
    for (int k = 0; k < dims; k++) {
        double sum = 0, mag = 0;
        for (int32_t j = row_ptr[r]; j < row_ptr[r + 1]; j++) {
            double v = x[(size_t)col[j] * dims + k];
            sum += v, mag += fabs(v);
        }
        double e = fabs((double)y_row[k] - sum) / (mag + 1);
        if (isnan(e)) return e;   /* a NaN result is the worst error */
        if (e > worst) worst = e;
    }
    return worst;
}

int32_t kgf_sample_rows(const int32_t *row_ptr, int32_t nrows, int32_t stride, int32_t **rows)
{
    RG_ASSERT(stride > 0);
    int32_t longest = 0, n = 0;
    for (int32_t r = 1; r < nrows; r++)
        if (row_ptr[r + 1] - row_ptr[r] > row_ptr[longest + 1] - row_ptr[longest]) longest = r;
    int32_t *out = rg_xmalloc(((size_t)nrows / stride + 2) * sizeof *out);
    for (int32_t r = 0; r < nrows; r += stride) out[n++] = r;
    if (nrows > 0 && longest % stride) out[n++] = longest;
    *rows = out;
    return n;
}

double kgf_check_rows(const int32_t *row_ptr, const int32_t *col, const float *x, int dims, const int32_t *rows,
                      int32_t nrows, const float *y_rows)
{
    double worst = 0;
    for (int32_t i = 0; i < nrows; i++) {
        double e = row_error(row_ptr, col, x, y_rows + (size_t)i * dims, dims, rows[i]);
        if (isnan(e)) return e;
        if (e > worst) worst = e;
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
    int32_t *check_rows, ncheck;   /* the rows checked (kgf_sample_rows) */
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
    free(j->h_ptr), free(j->h_col), free(j->h_x), free(j->check_rows);
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
    int32_t stride = j->nrows > CHECK_ROWS ? (int32_t)(j->nrows / CHECK_ROWS) : 1;
    j->ncheck = kgf_sample_rows(j->h_ptr, (int32_t)j->nrows, stride, &j->check_rows);
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

/* The device result against the float64 sum on the sampled rows, downloaded one by one: the
 * whole of y is half a gigabyte on synth:mag, and this runs once per candidate. */
static int check_result(const spmm_job *j, const char *name, rg_err *err)
{
    size_t row_bytes = (size_t)j->dims * elem(j);
    unsigned char *raw = rg_xmalloc(row_bytes);
    float *y = rg_xmalloc((size_t)(j->ncheck ? j->ncheck : 1) * j->dims * sizeof *y);
    int rc = 0;
    for (int32_t i = 0; !rc && i < j->ncheck; i++) {
        rc = krt_download(raw, (const unsigned char *)j->d_y + (size_t)j->check_rows[i] * row_bytes, row_bytes, err);
        for (int k = 0; !rc && k < j->dims; k++)
            y[(size_t)i * j->dims + k] =
                j->bf16 ? kx_bf16_to_float(((const uint16_t *)raw)[k]) : ((const float *)raw)[k];
    }
    if (!rc) {
        double e = kgf_check_rows(j->h_ptr, j->h_col, j->h_x, j->dims, j->check_rows, j->ncheck, y);
        if (!(e <= (j->bf16 ? TOL_BF16 : TOL_F32)))
            rc = rg_errf(err, "gather floor: %s differs from the float64 sum (relative error %.3g)", name, e);
    }
    free(y);
    free(raw);
    return rc;
}

/* Our own gather, beside cuSPARSE's (whose bfloat16 SpMM is several times slower than its
 * float32 one on the H100, and slower still on graphs with hubs): the edges of each row cut
 * into chunks of at most CHUNK, LANES threads per chunk summing its DIMS / LANES columns in
 * float32, two edges in flight. A row of one chunk is stored at once; a longer row's chunks
 * add into a float32 scratch row that a second kernel stores, so a hub of 100K edges is spread
 * over the device instead of one thread group walking it. */
static const char GATHER_SRC[] =
    "#if ESZ == 2\n"
    "#define ADD_WORD(a, w) ((a)[0] += __uint_as_float((w) << 16), (a)[1] += __uint_as_float((w) & 0xffff0000u))\n"
    "#define PER_WORD 2\n"
    "#else\n"
    "#define ADD_WORD(a, w) ((a)[0] += __uint_as_float(w))\n"
    "#define PER_WORD 1\n"
    "#endif\n"
    "#define NPER (DIMS / LANES)\n"
    "#define NWORDS (NPER / PER_WORD)\n"
    "__device__ __forceinline__ void load_words(unsigned *w, const unsigned *p)\n"
    "{\n"
    "#if NWORDS % 4 == 0\n"
    "    _Pragma(\"unroll\") for (int i = 0; i < NWORDS / 4; i++) {\n"
    "        uint4 v = __ldg((const uint4 *)p + i); w[4 * i] = v.x; w[4 * i + 1] = v.y; w[4 * i + 2] = v.z; w[4 * i + 3] = v.w; }\n"
    "#elif NWORDS % 2 == 0\n"
    "    _Pragma(\"unroll\") for (int i = 0; i < NWORDS / 2; i++) {\n"
    "        uint2 v = __ldg((const uint2 *)p + i); w[2 * i] = v.x; w[2 * i + 1] = v.y; }\n"
    "#else\n"
    "    _Pragma(\"unroll\") for (int i = 0; i < NWORDS; i++) w[i] = __ldg(p + i);\n"
    "#endif\n"
    "}\n"
    "__device__ __forceinline__ void store_words(unsigned *out, const float *acc)\n"
    "{\n"
    "    _Pragma(\"unroll\") for (int i = 0; i < NWORDS; i++) {\n"
    "#if ESZ == 2\n"
    "        unsigned lo = __float_as_uint(acc[2 * i]), hi = __float_as_uint(acc[2 * i + 1]);\n"
    "        lo += 0x7fffu + ((lo >> 16) & 1u); hi += 0x7fffu + ((hi >> 16) & 1u);   /* round to nearest even */\n"
    "        out[i] = (lo >> 16) | (hi & 0xffff0000u);\n"
    "#else\n"
    "        out[i] = __float_as_uint(acc[i]);\n"
    "#endif\n"
    "    }\n"
    "}\n"
    "#define ROW_WORDS ((size_t)DIMS / PER_WORD)\n"
    "extern \"C\" __global__ void gather_chunks(const int *ptr, const int *col, const unsigned *x, unsigned *y,\n"
    "                                          float *scratch, const int *chunk_row, const int *chunk_beg,\n"
    "                                          const int *row_slot, int nchunks)\n"
    "{\n"
    "    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    int c = (int)(t / LANES), lane = (int)(t % LANES);\n"
    "    if (c >= nchunks) return;\n"
    "    int row = chunk_row[c], j = chunk_beg[c], end = min(j + CHUNK, ptr[row + 1]);\n"
    "    float acc[NPER];\n"
    "    _Pragma(\"unroll\") for (int i = 0; i < NPER; i++) acc[i] = 0.f;\n"
    "    const size_t off = (size_t)lane * NWORDS;\n"
    "    for (; j + 1 < end; j += 2) {\n"
    "        unsigned a[NWORDS], b[NWORDS];\n"
    "        load_words(a, x + (size_t)col[j] * ROW_WORDS + off);\n"
    "        load_words(b, x + (size_t)col[j + 1] * ROW_WORDS + off);\n"
    "        _Pragma(\"unroll\") for (int i = 0; i < NWORDS; i++) { ADD_WORD(acc + PER_WORD * i, a[i]); ADD_WORD(acc + PER_WORD * i, b[i]); }\n"
    "    }\n"
    "    if (j < end) {\n"
    "        unsigned a[NWORDS];\n"
    "        load_words(a, x + (size_t)col[j] * ROW_WORDS + off);\n"
    "        _Pragma(\"unroll\") for (int i = 0; i < NWORDS; i++) ADD_WORD(acc + PER_WORD * i, a[i]);\n"
    "    }\n"
    "    int slot = row_slot[row];\n"
    "    if (slot < 0) { store_words(y + (size_t)row * ROW_WORDS + off, acc); return; }\n"
    "    float *s = scratch + (size_t)slot * DIMS + (size_t)lane * NPER;\n"
    "    _Pragma(\"unroll\") for (int i = 0; i < NPER; i++) atomicAdd(s + i, acc[i]);\n"
    "}\n"
    "extern \"C\" __global__ void store_multi(const int *multi_row, const float *scratch, unsigned *y, int nmulti)\n"
    "{\n"
    "    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    int m = (int)(t / LANES), lane = (int)(t % LANES);\n"
    "    if (m >= nmulti) return;\n"
    "    float acc[NPER];\n"
    "    const float *s = scratch + (size_t)m * DIMS + (size_t)lane * NPER;\n"
    "    _Pragma(\"unroll\") for (int i = 0; i < NPER; i++) acc[i] = s[i];\n"
    "    store_words(y + (size_t)multi_row[m] * ROW_WORDS + (size_t)lane * NWORDS, acc);\n"
    "}\n";

#define OWN_BLOCK 256

void kgf_chunks(const int32_t *row_ptr, int32_t nrows, int32_t chunk, kgf_chunking *out)
{
    RG_ASSERT(chunk > 0);
    int64_t n = 0, nmulti = 0;
    for (int32_t r = 0; r < nrows; r++) {
        int64_t d = row_ptr[r + 1] - row_ptr[r], k = d ? (d + chunk - 1) / chunk : 1;
        n += k, nmulti += k > 1;
    }
    out->nchunks = (int32_t)n, out->nmulti = (int32_t)nmulti;
    out->chunk_row = rg_xmalloc((size_t)(n ? n : 1) * sizeof(int32_t));
    out->chunk_beg = rg_xmalloc((size_t)(n ? n : 1) * sizeof(int32_t));
    out->row_slot = rg_xmalloc((size_t)(nrows ? nrows : 1) * sizeof(int32_t));
    out->multi_row = rg_xmalloc((size_t)(nmulti ? nmulti : 1) * sizeof(int32_t));
    int32_t c = 0, m = 0;
    for (int32_t r = 0; r < nrows; r++) {
        int32_t beg = row_ptr[r], end = row_ptr[r + 1];
        out->row_slot[r] = end - beg > chunk ? m : -1;
        if (end - beg > chunk) out->multi_row[m++] = r;
        do {   /* a row without edges still has its chunk: its output row is written (zeros) */
            out->chunk_row[c] = r, out->chunk_beg[c++] = beg;
            beg += chunk;
        } while (beg < end);
    }
}

void kgf_chunking_free(kgf_chunking *c)
{
    free(c->chunk_row), free(c->chunk_beg), free(c->row_slot), free(c->multi_row);
    memset(c, 0, sizeof *c);
}

/* Whether LANES threads per row split a row of `dims` elements into whole 32-bit words, at most
 * 16 of them per thread (its registers). */
static int own_lanes_apply(int dims, size_t esz, int lanes)
{
    if (dims % lanes) return 0;
    size_t bytes = (size_t)(dims / lanes) * esz;
    return bytes % 4 == 0 && bytes <= 64;
}

static int compile_gather(int dims, size_t esz, int lanes, int chunk, int sm, krt_cubin *cub, rg_err *err)
{
    char o_dims[32], o_lanes[32], o_esz[32], o_chunk[32];
    snprintf(o_dims, sizeof o_dims, "-DDIMS=%d", dims);
    snprintf(o_lanes, sizeof o_lanes, "-DLANES=%d", lanes);
    snprintf(o_esz, sizeof o_esz, "-DESZ=%d", (int)esz);
    snprintf(o_chunk, sizeof o_chunk, "-DCHUNK=%d", chunk);
    const char *opts[] = {o_dims, o_lanes, o_esz, o_chunk};
    krt_source src = {"gather_chunks.cu", GATHER_SRC, 0, opts, 4};
    return krt_compile(&src, sm, cub, err);
}

int kgf_gather_compiles(int dims, int bf16, int lanes, int chunk, int sm, rg_err *err)
{
    size_t esz = bf16 ? 2 : 4;
    if (!own_lanes_apply(dims, esz, lanes)) return 1;
    krt_cubin cub;
    if (compile_gather(dims, esz, lanes, chunk, sm, &cub, err)) return -1;
    krt_cubin_free(&cub);
    return 0;
}

/* The chunk tables of one chunk length on the device, and the scratch rows of the rows of
 * several chunks. */
typedef struct own_tables {
    kgf_chunking host;
    void *d_row, *d_beg, *d_slot, *d_multi, *d_scratch;
} own_tables;

static void own_tables_free(own_tables *t)
{
    kgf_chunking_free(&t->host);
    krt_free(t->d_row), krt_free(t->d_beg), krt_free(t->d_slot), krt_free(t->d_multi), krt_free(t->d_scratch);
    memset(t, 0, sizeof *t);
}

static int own_tables_setup(own_tables *t, const spmm_job *j, int chunk, rg_err *err)
{
    kgf_chunks(j->h_ptr, (int32_t)j->nrows, chunk, &t->host);
    const kgf_chunking *h = &t->host;
    return upload_new(&t->d_row, h->chunk_row, (size_t)h->nchunks * 4, err) ||
           upload_new(&t->d_beg, h->chunk_beg, (size_t)h->nchunks * 4, err) ||
           upload_new(&t->d_slot, h->row_slot, (size_t)j->nrows * 4, err) ||
           upload_new(&t->d_multi, h->multi_row, (size_t)h->nmulti * 4, err) ||
           krt_alloc(&t->d_scratch, (size_t)h->nmulti * j->dims * sizeof(float) + 4, err);
}

typedef struct own_launch {
    krt_kernel k1, k2;
    krt_dim3 grid1, grid2, block;
    void *args1[9], *args2[4];
    int nchunks, nmulti;
    void *scratch;
    size_t scratch_bytes;
} own_launch;

static unsigned blocks_for(long long threads) { return (unsigned)((threads + OWN_BLOCK - 1) / OWN_BLOCK); }

/* Compiles (for sm_`sm`) and loads the gather for one mapping; 1 when the mapping does not apply. */
static int own_prepare(const spmm_job *j, own_tables *t, int lanes, int chunk, int sm, krt_module **mod, own_launch *l,
                       rg_err *err)
{
    if (!own_lanes_apply(j->dims, elem(j), lanes)) return 1;
    krt_cubin cub;
    if (compile_gather(j->dims, elem(j), lanes, chunk, sm, &cub, err)) return -1;
    int rc = krt_module_load(&cub, mod, err);
    krt_cubin_free(&cub);
    if (rc || krt_get_kernel(*mod, "gather_chunks", &l->k1, err) || krt_get_kernel(*mod, "store_multi", &l->k2, err))
        return -1;
    l->nchunks = t->host.nchunks, l->nmulti = t->host.nmulti;
    l->scratch = t->d_scratch, l->scratch_bytes = (size_t)t->host.nmulti * j->dims * sizeof(float);
    l->grid1 = (krt_dim3){blocks_for((long long)l->nchunks * lanes), 1, 1};
    l->grid2 = (krt_dim3){blocks_for((long long)l->nmulti * lanes), 1, 1};
    l->block = (krt_dim3){OWN_BLOCK, 1, 1};
    void **a = l->args1;
    a[0] = (void *)&j->d_ptr, a[1] = (void *)&j->d_col, a[2] = (void *)&j->d_x, a[3] = (void *)&j->d_y;
    a[4] = &t->d_scratch, a[5] = &t->d_row, a[6] = &t->d_beg, a[7] = &t->d_slot, a[8] = &l->nchunks;
    void **b = l->args2;
    b[0] = &t->d_multi, b[1] = &t->d_scratch, b[2] = (void *)&j->d_y, b[3] = &l->nmulti;
    return 0;
}

/* Zeroes the scratch rows, gathers, stores the rows of several chunks. */
static int own_run(const own_launch *l)
{
    rg_err e;
    if (l->nmulti && cudaMemsetAsync(l->scratch, 0, l->scratch_bytes, 0) != cudaSuccess) return -1;
    if (krt_launch(&l->k1, l->grid1, l->block, 0, (void **)l->args1, &e)) return -1;
    return l->nmulti ? krt_launch(&l->k2, l->grid2, l->block, 0, (void **)l->args2, &e) : 0;
}

typedef struct alg_name { cusparseSpMMAlg_t alg; const char *name; } alg_name;
static const alg_name ALGS[] = {{CUSPARSE_SPMM_ALG_DEFAULT, "cusparse-default"},
                                {CUSPARSE_SPMM_CSR_ALG1, "cusparse-csr-alg1"},
                                {CUSPARSE_SPMM_CSR_ALG2, "cusparse-csr-alg2"},
                                {CUSPARSE_SPMM_CSR_ALG3, "cusparse-csr-alg3"}};
static const int OWN_LANES[] = {2, 4, 8, 16, 32};
/* 32: hubs spread widest; 256: most rows one chunk, no scratch traffic */
static const int OWN_CHUNKS[] = {32, 256};

/* One way of computing y = A x: a cuSPARSE algorithm or our kernel at one mapping. */
typedef struct runner {
    const spmm_job *job;
    cusparseHandle_t h;
    cusparseSpMMAlg_t alg;
    const own_launch *own;   /* NULL: cuSPARSE */
} runner;

static int run_once(const runner *r)
{
    return r->own ? own_run(r->own) : spmm(r->job, r->h, r->alg);
}

static int run_void(void *r) { return run_once(r); }

/* A warm-up call into a poisoned y, its result checked, then the timing (kceil_best_seconds). 1 when the call is
 * refused (cuSPARSE does not offer the algorithm for these types), 2 when its result is wrong
 * (err says how). */
static int checked_time(const runner *r, const char *name, double *ms, rg_err *err)
{
    const spmm_job *j = r->job;
    if (krt_poison(j->d_y, (size_t)(j->nrows * j->dims) * elem(j), err)) return -1;
    if (run_once(r)) return r->own ? rg_errf(err, "gather floor: %s did not launch", name) : 1;
    if (krt_sync(err)) return -1;
    if (check_result(j, name, err)) return 2;
    char what[64];
    snprintf(what, sizeof what, "gather floor: timing %s", name);
    double s = kceil_best_seconds(run_void, (void *)r, TIMED, what, err);
    if (s <= 0) return -1;
    *ms = 1e3 * s;
    return 0;
}

/* Sets up one cuSPARSE algorithm: its workspace and its one-time analysis. 1 when cuSPARSE does
 * not offer it for these types. */
static int cusparse_prepare(spmm_job *j, cusparseHandle_t h, cusparseSpMMAlg_t alg, rg_err *err)
{
    const float one = 1, zero = 0;
    size_t bytes = 0;
    if (cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, j->a,
                                j->x, &zero, j->y, CUDA_R_32F, alg, &bytes) != CUSPARSE_STATUS_SUCCESS)
        return 1;
    if (bytes > j->buf_bytes) {
        krt_free(j->d_buf);
        j->d_buf = NULL, j->buf_bytes = 0;
        if (krt_alloc(&j->d_buf, bytes, err)) return -1;
        j->buf_bytes = bytes;
    }
    /* optional; it speeds up the calls that follow where the algorithm has an analysis */
    cusparseSpMM_preprocess(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, j->a, j->x,
                            &zero, j->y, CUDA_R_32F, alg, j->d_buf);
    return 0;
}

typedef struct best_of { double ms; char *name; size_t name_n; char left_out[256]; } best_of;

static void keep_if_faster(best_of *b, double ms, const char *name)
{
    if (b->ms < 0 || ms < b->ms) b->ms = ms, snprintf(b->name, b->name_n, "%s", name);
}

static int try_cusparse(spmm_job *j, cusparseHandle_t h, best_of *b, rg_err *err)
{
    for (size_t i = 0; i < sizeof ALGS / sizeof ALGS[0]; i++) {
        int r = cusparse_prepare(j, h, ALGS[i].alg, err);
        double ms;
        runner run = {j, h, ALGS[i].alg, NULL};
        if (!r) r = checked_time(&run, ALGS[i].name, &ms, err);
        if (r < 0) return -1;
        /* a library algorithm that answers wrongly is left out (said if nothing else applies) */
        if (r == 2) snprintf(b->left_out, sizeof b->left_out, "; left out: %.200s", err->msg);
        if (r == 0) keep_if_faster(b, ms, ALGS[i].name);
    }
    return 0;
}

static int try_own(spmm_job *j, best_of *b, rg_err *err)
{
    krt_device dev;   /* the SM version each mapping is compiled for */
    if (krt_init(0, &dev, err)) return -1;
    for (size_t c = 0; c < sizeof OWN_CHUNKS / sizeof OWN_CHUNKS[0]; c++) {
        own_tables t = {0};
        int rc = own_tables_setup(&t, j, OWN_CHUNKS[c], err);
        for (size_t i = 0; !rc && i < sizeof OWN_LANES / sizeof OWN_LANES[0]; i++) {
            krt_module *mod = NULL;
            own_launch l;
            int r = own_prepare(j, &t, OWN_LANES[i], OWN_CHUNKS[c], dev.sm, &mod, &l, err);
            char name[32];
            snprintf(name, sizeof name, "own-lanes%d-chunk%d", OWN_LANES[i], OWN_CHUNKS[c]);
            double ms;
            runner run = {j, NULL, CUSPARSE_SPMM_ALG_DEFAULT, &l};
            if (!r) r = checked_time(&run, name, &ms, err);
            if (mod) krt_module_unload(mod);
            if (r < 0 || r == 2) rc = -1;   /* our own gather answering wrongly is a bug */
            else if (r == 0) keep_if_faster(b, ms, name);
        }
        own_tables_free(&t);
        if (rc) return -1;
    }
    return 0;
}

/* The fastest checked way of one direction. */
static int measure_direction(const hg_graph *g, int by_dst, int dims, int bf16, double *ms, char *name, size_t name_n,
                             rg_err *err)
{
    cusparseHandle_t h;
    if (get_handle(&h, err)) return -1;
    spmm_job j = {0};
    best_of b = {-1, name, name_n, ""};
    int rc = job_setup(&j, g, by_dst, dims, bf16, err) || try_cusparse(&j, h, &b, err) || try_own(&j, &b, err);
    job_free(&j);
    *ms = b.ms;
    if (!rc && b.ms < 0) rc = rg_errf(err, "gather floor: no way of summing %d-wide rows applies%s", dims, b.left_out);
    return rc ? -1 : 0;
}

int kgf_measure(const hg_graph *g, int dims_in, int dims_out, int bf16, int backward, kgf_floor *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    if (kceil_disabled()) return rg_errf(err, "gather floor not measured: RGNN_NO_CEILINGS is set");
    if (krt_require_device(err)) return -1;
    if (measure_direction(g, 1, dims_in, bf16, &out->fwd_ms, out->fwd_alg, sizeof out->fwd_alg, err)) return -1;
    if (backward &&
        measure_direction(g, 0, dims_out, bf16, &out->bwd_ms, out->bwd_alg, sizeof out->bwd_alg, err))
        return -1;
    return 0;
}
