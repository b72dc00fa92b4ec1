/* Baseline RGCN, RGAT and HGT inference layers: framework-style composition of simple
 * kernels and cuBLAS typed linears (seg / bmm / grouped), validated and timed like variants. */
#include "baselines/cublas_layers.h"
#include "baselines/blkernels.h"
#include "codegen/model.h"
#include "codegen/ref.h"
#include "measure/validate.h"
#include "runtime/memplan.h"
#include "runtime/prof.h"
#include "runtime/rt.h"

#include <cublas_v2.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* cuBLAS strided-batched GEMMs are issued in chunks of this many problems: some cuBLAS
 * kernels map the batch to gridDim.y/z (at most 65535), and PyTorch splits the same way. */
#define BMM_CHUNK (63 * 1024)
#define MAX_LINEARS 8

static const char *const STYLE_NAMES[BL_STYLE_COUNT] = {"seg", "bmm", "grouped"};
static const char *const SYSTEM_NAMES[BL_STYLE_COUNT] = {"cublas-seg", "cublas-bmm", "cublas-grouped"};

const char *bl_style_name(bl_style s)
{
    RG_ASSERT(s >= 0 && s < BL_STYLE_COUNT);
    return STYLE_NAMES[s];
}

const char *bl_system_name(bl_style s)
{
    RG_ASSERT(s >= 0 && s < BL_STYLE_COUNT);
    return SYSTEM_NAMES[s];
}

int bl_style_parse(const char *name, bl_style *out, rg_err *err)
{
    for (int i = 0; i < BL_STYLE_COUNT; i++)
        if (name && !strcmp(name, STYLE_NAMES[i])) {
            *out = (bl_style)i;
            return 0;
        }
    return rg_errf(err, "unknown baseline style '%s' (expected seg, bmm or grouped)", name ? name : "");
}

const char *bl_layer_name(const char *model)
{
    if (!model) return NULL;
    if (!strcmp(model, "rgcn")) return "RGCN";
    if (!strcmp(model, "rgat")) return "RGAT";
    if (!strcmp(model, "hgt")) return "HGT";
    return NULL;
}

/* ------------------------------------------------------------------ problem ---- */

struct bl_problem {
    char model[8];
    const hg_graph *g;
    ir_dims dims;
    ir_program *prog;
    ref_exec *ref;
    int32_t *node_type;        /* [num_nodes]: type of each node, for per-node weight copies */
};

bl_problem *bl_problem_new(const char *model, const hg_graph *g, const ir_dims *dims, rg_err *err)
{
    if (!bl_layer_name(model)) {
        rg_errf(err, "no cuBLAS baseline for model '%s' (rgcn, rgat or hgt)", model ? model : "");
        return NULL;
    }
    if (dims->heads < 1 || dims->out_dim % dims->heads) {
        rg_errf(err, "heads %d does not divide the output dim %d", dims->heads, dims->out_dim);
        return NULL;
    }
    bl_problem *p = rg_xcalloc(1, sizeof *p);
    snprintf(p->model, sizeof p->model, "%s", model);
    p->g = g;
    p->dims = *dims;
    p->prog = model_load(model, dims, "infer", err);
    ref_options ro = {0};
    if (p->prog) p->ref = ref_new(p->prog, g, &ro, err);
    if (!p->ref || ref_run(p->ref, err)) {
        rg_err_prefix(err, "CPU reference of %s on %s", model, g->name ? g->name : "the graph");
        bl_problem_free(p);
        return NULL;
    }
    p->node_type = rg_xmalloc((size_t)(g->num_nodes ? g->num_nodes : 1) * sizeof *p->node_type);
    for (int32_t t = 0; t < g->num_ntypes; t++)
        for (int32_t n = g->ntype_ptr[t]; n < g->ntype_ptr[t + 1]; n++) p->node_type[n] = t;
    return p;
}

void bl_problem_free(bl_problem *p)
{
    if (!p) return;
    ref_free(p->ref);
    ir_free(p->prog);
    free(p->node_type);
    free(p);
}

/* ------------------------------------------------------------- run context ---- */

/* One typed linear: for each type t and head h, Y[rows of t][h] = X[rows of t][h] * W[t][h].
 * X is rows x (heads*kh) and Y rows x (heads*nh), both contiguous; W is [types][heads][kh][nh]. */
typedef struct tlin {
    const float *x, *w;
    float *y;
    int types, heads, kh, nh;
    int64_t rows;
    const int32_t *seg;          /* host [types+1]: rows of type t are seg[t] .. seg[t+1]-1 */
    int plain;                   /* an untyped weight: one cublasSgemm whatever the style */
    /* bmm */
    const int32_t *d_row_type;   /* device [rows] */
    float *wrep;                 /* [rows][heads][kh][nh] */
    int replicates;              /* 0 when an earlier linear already filled wrep (shared copy) */
    /* grouped: per-group host arrays, device arrays of per-problem pointers */
    int ngroups;
    int *gm, *gn, *gk, *glda, *gldb, *gldc, *gsize;
    float *galpha, *gbeta;
    cublasOperation_t *gop;
    const float **dA, **dB;
    float **dC;
} tlin;

typedef struct run_ctx {
    bl_problem *p;
    bl_style style;
    rg_err *err;
    cublasHandle_t blas;
    int have_blas;
    krt_module *mod;
    krt_kernel k[BLK_COUNT];
    mp_plan *plan;
    int nlin;
    tlin lin[MAX_LINEARS];
    int32_t all_rows[2];         /* one "type" covering every node: untyped weights */
} run_ctx;

static void free_linear(tlin *l)
{
    free(l->gm), free(l->gn), free(l->gk), free(l->glda), free(l->gldb), free(l->gldc), free(l->gsize);
    free(l->galpha), free(l->gbeta), free(l->gop);
}

static void ctx_free(run_ctx *c)
{
    for (int i = 0; i < c->nlin; i++) free_linear(&c->lin[i]);
    if (c->have_blas) cublasDestroy(c->blas);
    if (c->plan) mp_destroy(c->plan);
    if (c->mod) krt_module_unload(c->mod);
}

/* cuBLAS failures are classified like CUDA ones: out of workspace memory is an OOM. */
static int blas_check(run_ctx *c, cublasStatus_t st, const char *what)
{
    if (st == CUBLAS_STATUS_SUCCESS) return 0;
    rg_errf(c->err, "%s: %s (%s)", what, cublasGetStatusString(st), cublasGetStatusName(st));
    return rg_err_classify(c->err, st == CUBLAS_STATUS_ALLOC_FAILED ? RG_ERR_OOM : RG_ERR_LAUNCH, 0);
}

/* A device tensor of the layer, through the planner (so the limit and the peak count it). */
static mp_status tensor(run_ctx *c, const char *name, size_t bytes)
{
    return mp_request(c->plan, name, bytes, NULL, c->err);
}

static void *T(run_ctx *c, const char *name)
{
    int id = mp_find(c->plan, name);
    RG_ASSERT(id >= 0);
    return mp_ptr(c->plan, id);
}

/* Allocates `name` and fills it with the reference's values of the same-named variable. */
static mp_status upload_var(run_ctx *c, const char *name, int64_t expect)
{
    int var = ir_find_var(c->p->prog, name);
    if (var < 0) {
        rg_errf(c->err, "the %s model has no variable '%s'", c->p->model, name);
        return MP_FAIL;
    }
    int64_t n = ref_count(c->p->ref, var);
    if (n != expect) {
        rg_errf(c->err, "reference variable %s holds %lld values, the baseline expects %lld", name, (long long)n,
                (long long)expect);
        return MP_FAIL;
    }
    mp_status st = tensor(c, name, (size_t)n * sizeof(float));
    if (st != MP_OK) return st;
    float *host = rg_xmalloc((size_t)(n ? n : 1) * sizeof *host);
    ref_to_f32(c->p->ref, var, host);
    int rc = krt_upload(T(c, name), host, (size_t)n * sizeof(float), c->err);
    free(host);
    return rc ? MP_FAIL : MP_OK;
}

static mp_status upload_ints(run_ctx *c, const char *name, const int32_t *v, int64_t n)
{
    mp_status st = tensor(c, name, (size_t)n * sizeof(int32_t));
    if (st != MP_OK) return st;
    return krt_upload(T(c, name), v, (size_t)n * sizeof(int32_t), c->err) ? MP_FAIL : MP_OK;
}

/* ---------------------------------------------------------------- kernels ---- */

static int launch(run_ctx *c, blk_id id, int64_t n, void **args)
{
    return krt_launch(&c->k[id], blk_grid(n), (krt_dim3){BLK_THREADS, 1, 1}, 0, args, c->err);
}

static int k_gather(run_ctx *c, const float *x, const int32_t *idx, float *out, long long rows, int width)
{
    void *a[] = {&x, &idx, &out, &rows, &width};
    return launch(c, BLK_GATHER_ROWS, rows * width, a);
}

static int k_replicate(run_ctx *c, const float *w, const int32_t *type, float *out, long long rows, long long wsize)
{
    void *a[] = {&w, &type, &out, &rows, &wsize};
    return launch(c, BLK_REPLICATE, rows * wsize, a);
}

static int k_fill(run_ctx *c, float *x, float value, long long n)
{
    void *a[] = {&x, &value, &n};
    return launch(c, BLK_FILL, n, a);
}

static int k_dot(run_ctx *c, const float *x, const float *y, const int32_t *yidx, float *out, long long rows,
                 int heads, int d)
{
    void *a[] = {&x, &y, &yidx, &out, &rows, &heads, &d};
    return launch(c, BLK_DOT_HEADS, rows * heads, a);
}

static int k_add(run_ctx *c, const float *x, const float *y, float *out, long long n)
{
    void *a[] = {&x, &y, &out, &n};
    return launch(c, BLK_ADD, n, a);
}

static int k_leakyrelu(run_ctx *c, float *x, float slope, long long n)
{
    void *a[] = {&x, &slope, &n};
    return launch(c, BLK_LEAKYRELU, n, a);
}

static int k_scale_by_type(run_ctx *c, float *x, const float *s, const int32_t *type, float k, long long rows,
                           int heads)
{
    void *a[] = {&x, &s, &type, &k, &rows, &heads};
    return launch(c, BLK_SCALE_BY_TYPE, rows * heads, a);
}

static int k_exp(run_ctx *c, float *x, long long n)
{
    void *a[] = {&x, &n};
    return launch(c, BLK_EXP, n, a);
}

static int k_sum_by_dst(run_ctx *c, const float *x, const int32_t *dst, float *sum, long long rows, int heads)
{
    void *a[] = {&x, &dst, &sum, &rows, &heads};
    return launch(c, BLK_SUM_BY_DST, rows * heads, a);
}

static int k_div_by_dst(run_ctx *c, float *x, const float *sum, const int32_t *dst, long long rows, int heads)
{
    void *a[] = {&x, &sum, &dst, &rows, &heads};
    return launch(c, BLK_DIV_BY_DST, rows * heads, a);
}

static int k_aggregate(run_ctx *c, const float *coef, const float *msg, const int32_t *dst, float *out,
                       long long rows, int heads, int d)
{
    void *a[] = {&coef, &msg, &dst, &out, &rows, &heads, &d};
    return launch(c, BLK_AGGREGATE, rows * heads * d, a);
}

/* Edge softmax over the incoming edges of each destination (no max subtraction, as the
 * models' lib.rgnn defines it): exp, per-destination sums, divide. */
static int edge_softmax(run_ctx *c, float *att, float *sum, const int32_t *dst, long long edges, long long nodes,
                        int heads)
{
    return k_exp(c, att, edges * heads) || k_fill(c, sum, 0.f, nodes * heads) ||
           k_sum_by_dst(c, att, dst, sum, edges, heads) || k_div_by_dst(c, att, sum, dst, edges, heads);
}

/* ---------------------------------------------------------- typed linears ---- */

/* Row-major Y (m x n, ldy) = X (m x k, ldx) * W (k x n, ldw) is column-major
 * Y^T = W^T X^T: cuBLAS gets (n, m, k) with W first. */
static int run_seg(run_ctx *c, const tlin *l)
{
    const float one = 1.f, zero = 0.f;
    int ldx = l->heads * l->kh, ldy = l->heads * l->nh;
    size_t wsize = (size_t)l->heads * l->kh * l->nh;
    for (int t = 0; t < l->types; t++) {
        int m = l->seg[t + 1] - l->seg[t];
        if (m == 0) continue;
        const float *w = l->w + (size_t)t * wsize, *x = l->x + (size_t)l->seg[t] * ldx;
        float *y = l->y + (size_t)l->seg[t] * ldy;
        cublasStatus_t st;
        if (l->heads == 1)
            st = cublasSgemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, l->nh, m, l->kh, &one, w, l->nh, x, ldx, &zero, y, ldy);
        else
            st = cublasSgemmStridedBatched(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, l->nh, m, l->kh, &one, w, l->nh,
                                           (long long)l->kh * l->nh, x, ldx, l->kh, &zero, y, ldy, l->nh, l->heads);
        if (blas_check(c, st, l->heads == 1 ? "cublasSgemm" : "cublasSgemmStridedBatched")) return -1;
    }
    return 0;
}

/* One vector-matrix product per (row, head) against the row's own copy of its weight. */
static int run_bmm(run_ctx *c, const tlin *l)
{
    const float one = 1.f, zero = 0.f;
    long long wsize = (long long)l->heads * l->kh * l->nh;
    if (l->replicates && k_replicate(c, l->w, l->d_row_type, l->wrep, l->rows, wsize)) return -1;
    long long batch = l->rows * l->heads;
    for (long long b0 = 0; b0 < batch; b0 += BMM_CHUNK) {
        int nb = (int)(batch - b0 < BMM_CHUNK ? batch - b0 : BMM_CHUNK);
        cublasStatus_t st = cublasSgemmStridedBatched(
            c->blas, CUBLAS_OP_N, CUBLAS_OP_N, l->nh, 1, l->kh, &one, l->wrep + b0 * l->kh * l->nh, l->nh,
            (long long)l->kh * l->nh, l->x + b0 * l->kh, l->kh, l->kh, &zero, l->y + b0 * l->nh, l->nh, l->nh, nb);
        if (blas_check(c, st, "cublasSgemmStridedBatched")) return -1;
    }
    return 0;
}

static int run_grouped(run_ctx *c, const tlin *l)
{
    if (l->ngroups == 0) return 0;
    cublasStatus_t st = cublasSgemmGroupedBatched(c->blas, l->gop, l->gop, l->gm, l->gn, l->gk, l->galpha, l->dA,
                                                  l->glda, l->dB, l->gldb, l->gbeta, l->dC, l->gldc, l->ngroups,
                                                  l->gsize);
    return blas_check(c, st, "cublasSgemmGroupedBatched");
}

static int run_linear(run_ctx *c, const tlin *l)
{
    if (l->plain || c->style == BL_SEG) return run_seg(c, l);
    return c->style == BL_BMM ? run_bmm(c, l) : run_grouped(c, l);
}

/* Host arrays of the grouped call (one group per non-empty type, one problem per head)
 * and its device pointer arrays, built once: they depend on the buffers only. */
static mp_status prepare_grouped(run_ctx *c, tlin *l, const char *name)
{
    int n = 0;
    for (int t = 0; t < l->types; t++) n += l->seg[t + 1] > l->seg[t];
    l->ngroups = n;
    int g = n ? n : 1;
    l->gm = rg_xmalloc(g * sizeof(int)), l->gn = rg_xmalloc(g * sizeof(int)), l->gk = rg_xmalloc(g * sizeof(int));
    l->glda = rg_xmalloc(g * sizeof(int)), l->gldb = rg_xmalloc(g * sizeof(int)), l->gldc = rg_xmalloc(g * sizeof(int));
    l->gsize = rg_xmalloc(g * sizeof(int));
    l->galpha = rg_xmalloc(g * sizeof(float)), l->gbeta = rg_xmalloc(g * sizeof(float));
    l->gop = rg_xmalloc(g * sizeof(cublasOperation_t));
    size_t problems = (size_t)n * l->heads;
    const float **A = rg_xcalloc(problems + 1, sizeof *A), **B = rg_xcalloc(problems + 1, sizeof *B);
    float **C = rg_xcalloc(problems + 1, sizeof *C);
    int ldx = l->heads * l->kh, ldy = l->heads * l->nh, gi = 0;
    size_t pi = 0, wsize = (size_t)l->heads * l->kh * l->nh;
    for (int t = 0; t < l->types; t++) {
        int m = l->seg[t + 1] - l->seg[t];
        if (m == 0) continue;
        l->gm[gi] = l->nh, l->gn[gi] = m, l->gk[gi] = l->kh;
        l->glda[gi] = l->nh, l->gldb[gi] = ldx, l->gldc[gi] = ldy;
        l->gsize[gi] = l->heads, l->galpha[gi] = 1.f, l->gbeta[gi] = 0.f, l->gop[gi] = CUBLAS_OP_N;
        gi++;
        for (int h = 0; h < l->heads; h++, pi++) {
            A[pi] = l->w + t * wsize + (size_t)h * l->kh * l->nh;
            B[pi] = l->x + (size_t)l->seg[t] * ldx + (size_t)h * l->kh;
            C[pi] = l->y + (size_t)l->seg[t] * ldy + (size_t)h * l->nh;
        }
    }
    char *na = rg_xasprintf("%s.A", name), *nb = rg_xasprintf("%s.B", name), *nc = rg_xasprintf("%s.C", name);
    size_t bytes = problems * sizeof(void *);
    mp_status st = tensor(c, na, bytes);
    if (st == MP_OK) st = tensor(c, nb, bytes);
    if (st == MP_OK) st = tensor(c, nc, bytes);
    if (st == MP_OK && bytes) {
        l->dA = T(c, na), l->dB = T(c, nb), l->dC = T(c, nc);
        if (krt_upload((void *)l->dA, A, bytes, c->err) || krt_upload((void *)l->dB, B, bytes, c->err) ||
            krt_upload(l->dC, C, bytes, c->err))
            st = MP_FAIL;
    }
    free(na), free(nb), free(nc), free(A), free(B), free(C);
    return st;
}

/* Declares a typed linear y = x * w[type] over rows grouped by `seg`; its style-specific
 * buffers (replicated weights, pointer arrays) are allocated here. row_type names the
 * device array of each row's type (bmm), shared copies are made once per (w, row_type). */
static mp_status add_linear(run_ctx *c, const char *x, const char *w, const char *y, int types, int heads, int kh,
                            int nh, int64_t rows, const int32_t *seg, const char *row_type, int plain)
{
    RG_ASSERT(c->nlin < MAX_LINEARS);
    tlin *l = &c->lin[c->nlin++];
    memset(l, 0, sizeof *l);
    l->x = T(c, x), l->w = T(c, w), l->y = T(c, y);
    l->types = types, l->heads = heads, l->kh = kh, l->nh = nh, l->rows = rows, l->seg = seg, l->plain = plain;
    if (plain || c->style == BL_SEG) return MP_OK;
    if (c->style == BL_GROUPED) return prepare_grouped(c, l, y);
    char *rep = rg_xasprintf("%s[%s] per row", w, row_type);
    int existed = mp_find(c->plan, rep) >= 0;
    mp_status st = tensor(c, rep, (size_t)rows * heads * kh * nh * sizeof(float));
    if (st == MP_OK) {
        l->wrep = T(c, rep);
        l->d_row_type = T(c, row_type);
        l->replicates = !existed;
    }
    free(rep);
    return st;
}

/* ------------------------------------------------------------------ layers ---- */

#define TRY(x) do { mp_status s_ = (x); if (s_ != MP_OK) return s_; } while (0)

/* Sizes every layer needs: N nodes, E edges, R relations, K in, M out, H heads, D = M/H. */
typedef struct sizes {
    int64_t N, E;
    int R, NT, K, M, H, D;
} sizes;

static sizes sizes_of(const bl_problem *p)
{
    sizes s = {p->g->num_nodes, p->g->num_edges, p->g->num_etypes, p->g->num_ntypes,
               p->dims.in_dim, p->dims.out_dim, p->dims.heads, p->dims.out_dim / p->dims.heads};
    return s;
}

static mp_status graph_arrays(run_ctx *c, int need_node_types)
{
    const hg_graph *g = c->p->g;
    TRY(upload_ints(c, "src", g->src, g->num_edges));
    TRY(upload_ints(c, "dst", g->dst, g->num_edges));
    TRY(upload_ints(c, "etype", g->etype, g->num_edges));
    if (need_node_types) TRY(upload_ints(c, "ntype", c->p->node_type, g->num_nodes));
    return MP_OK;
}

/* h = x W0 + sum over incoming edges of norm * x[src] W[etype]. */
static mp_status setup_rgcn(run_ctx *c, const sizes *s)
{
    const hg_graph *g = c->p->g;
    TRY(graph_arrays(c, 0));
    TRY(upload_var(c, "feature", s->N * s->K));
    TRY(upload_var(c, "W0", (int64_t)s->K * s->M));
    TRY(upload_var(c, "W", (int64_t)s->R * s->K * s->M));
    TRY(upload_var(c, "norm", s->E));
    TRY(tensor(c, "xs", (size_t)s->E * s->K * sizeof(float)));
    TRY(tensor(c, "msg", (size_t)s->E * s->M * sizeof(float)));
    TRY(tensor(c, "h", (size_t)s->N * s->M * sizeof(float)));
    c->all_rows[0] = 0, c->all_rows[1] = g->num_nodes;
    TRY(add_linear(c, "feature", "W0", "h", 1, 1, s->K, s->M, s->N, c->all_rows, NULL, 1));
    TRY(add_linear(c, "xs", "W", "msg", s->R, 1, s->K, s->M, s->E, g->etype_ptr, "etype", 0));
    return MP_OK;
}

static int run_rgcn(run_ctx *c, const sizes *s)
{
    const int32_t *src = T(c, "src"), *dst = T(c, "dst");
    return run_linear(c, &c->lin[0]) || k_gather(c, T(c, "feature"), src, T(c, "xs"), s->E, s->K) ||
           run_linear(c, &c->lin[1]) || k_aggregate(c, T(c, "norm"), T(c, "msg"), dst, T(c, "h"), s->E, 1, s->M);
}

/* hs = x[src] W[r], ht = x[dst] W[r], att = softmax(leakyrelu(hs.w_s[r] + ht.w_t[r])),
 * h[dst] += att * hs, per head. */
static mp_status setup_rgat(run_ctx *c, const sizes *s)
{
    const hg_graph *g = c->p->g;
    TRY(graph_arrays(c, 0));
    TRY(upload_var(c, "feature", s->N * s->K));
    TRY(upload_var(c, "W", (int64_t)s->R * s->K * s->M));
    TRY(upload_var(c, "w_s", (int64_t)s->R * s->M));
    TRY(upload_var(c, "w_t", (int64_t)s->R * s->M));
    const char *edge_k[] = {"xs", "xt"}, *edge_m[] = {"hs", "ht"}, *edge_h[] = {"atts", "attt", "att"};
    for (int i = 0; i < 2; i++) TRY(tensor(c, edge_k[i], (size_t)s->E * s->K * sizeof(float)));
    for (int i = 0; i < 2; i++) TRY(tensor(c, edge_m[i], (size_t)s->E * s->M * sizeof(float)));
    for (int i = 0; i < 3; i++) TRY(tensor(c, edge_h[i], (size_t)s->E * s->H * sizeof(float)));
    TRY(tensor(c, "att_sum", (size_t)s->N * s->H * sizeof(float)));
    TRY(tensor(c, "h", (size_t)s->N * s->M * sizeof(float)));
    TRY(add_linear(c, "xs", "W", "hs", s->R, 1, s->K, s->M, s->E, g->etype_ptr, "etype", 0));
    TRY(add_linear(c, "xt", "W", "ht", s->R, 1, s->K, s->M, s->E, g->etype_ptr, "etype", 0));
    return MP_OK;
}

static int run_rgat(run_ctx *c, const sizes *s)
{
    const int32_t *src = T(c, "src"), *dst = T(c, "dst"), *et = T(c, "etype");
    const float *x = T(c, "feature");
    float *hs = T(c, "hs"), *ht = T(c, "ht"), *atts = T(c, "atts"), *attt = T(c, "attt"), *att = T(c, "att");
    float *h = T(c, "h");
    return k_gather(c, x, src, T(c, "xs"), s->E, s->K) || run_linear(c, &c->lin[0]) ||
           k_gather(c, x, dst, T(c, "xt"), s->E, s->K) || run_linear(c, &c->lin[1]) ||
           k_dot(c, hs, T(c, "w_s"), et, atts, s->E, s->H, s->D) || k_dot(c, ht, T(c, "w_t"), et, attt, s->E, s->H, s->D) ||
           k_add(c, atts, attt, att, s->E * s->H) || k_leakyrelu(c, att, 0.2f, s->E * s->H) ||
           edge_softmax(c, att, T(c, "att_sum"), dst, s->E, s->N, s->H) || k_fill(c, h, 0.f, s->N * s->M) ||
           k_aggregate(c, att, hs, dst, h, s->E, s->H, s->D);
}

/* k, q, v = x W{K,Q,V}[ntype]; att = (k[src] Wa[r]) . q[dst] * mu[r] / sqrt(D) per head;
 * msg = v[src] Wm[r]; h[dst] += softmax(att) * msg. */
static mp_status setup_hgt(run_ctx *c, const sizes *s)
{
    const hg_graph *g = c->p->g;
    TRY(graph_arrays(c, 1));
    TRY(upload_var(c, "feature", s->N * s->K));
    const char *node_w[] = {"WK", "WQ", "WV"}, *node_y[] = {"k", "q", "v"};
    for (int i = 0; i < 3; i++) TRY(upload_var(c, node_w[i], (int64_t)s->NT * s->K * s->M));
    TRY(upload_var(c, "Wa", (int64_t)s->R * s->H * s->D * s->D));
    TRY(upload_var(c, "Wm", (int64_t)s->R * s->H * s->D * s->D));
    TRY(upload_var(c, "mu", (int64_t)s->R * s->H));
    for (int i = 0; i < 3; i++) TRY(tensor(c, node_y[i], (size_t)s->N * s->M * sizeof(float)));
    const char *edge_m[] = {"ks", "katt", "qd", "vs", "msg"};
    for (int i = 0; i < 5; i++) TRY(tensor(c, edge_m[i], (size_t)s->E * s->M * sizeof(float)));
    TRY(tensor(c, "att", (size_t)s->E * s->H * sizeof(float)));
    TRY(tensor(c, "att_sum", (size_t)s->N * s->H * sizeof(float)));
    TRY(tensor(c, "h", (size_t)s->N * s->M * sizeof(float)));
    for (int i = 0; i < 3; i++)
        TRY(add_linear(c, "feature", node_w[i], node_y[i], s->NT, 1, s->K, s->M, s->N, g->ntype_ptr, "ntype", 0));
    TRY(add_linear(c, "ks", "Wa", "katt", s->R, s->H, s->D, s->D, s->E, g->etype_ptr, "etype", 0));
    TRY(add_linear(c, "vs", "Wm", "msg", s->R, s->H, s->D, s->D, s->E, g->etype_ptr, "etype", 0));
    return MP_OK;
}

static int run_hgt(run_ctx *c, const sizes *s)
{
    const int32_t *src = T(c, "src"), *dst = T(c, "dst"), *et = T(c, "etype");
    float *att = T(c, "att"), *h = T(c, "h");
    for (int i = 0; i < 3; i++)
        if (run_linear(c, &c->lin[i])) return -1;
    return k_gather(c, T(c, "k"), src, T(c, "ks"), s->E, s->M) || run_linear(c, &c->lin[3]) ||
           k_gather(c, T(c, "q"), dst, T(c, "qd"), s->E, s->M) ||
           k_dot(c, T(c, "katt"), T(c, "qd"), NULL, att, s->E, s->H, s->D) ||
           k_scale_by_type(c, att, T(c, "mu"), et, 1.f / sqrtf((float)s->D), s->E, s->H) ||
           k_gather(c, T(c, "v"), src, T(c, "vs"), s->E, s->M) || run_linear(c, &c->lin[4]) ||
           edge_softmax(c, att, T(c, "att_sum"), dst, s->E, s->N, s->H) || k_fill(c, h, 0.f, s->N * s->M) ||
           k_aggregate(c, att, T(c, "msg"), dst, h, s->E, s->H, s->D);
}

typedef struct layer_impl {
    const char *model;
    mp_status (*setup)(run_ctx *c, const sizes *s);
    int (*run)(run_ctx *c, const sizes *s);
} layer_impl;

static const layer_impl LAYERS[] = {
    {"rgcn", setup_rgcn, run_rgcn},
    {"rgat", setup_rgat, run_rgat},
    {"hgt", setup_hgt, run_hgt},
};

static const layer_impl *layer_of(const char *model)
{
    for (size_t i = 0; i < sizeof LAYERS / sizeof *LAYERS; i++)
        if (!strcmp(LAYERS[i].model, model)) return &LAYERS[i];
    return NULL;
}

/* ------------------------------------------------------------ measurement ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Per-kernel-name times, summed within each repeat. */
typedef struct ktimes {
    char name[64];
    double *per_rep;       /* [repeats] ns */
} ktimes;

typedef struct timing {
    int repeats, cupti;
    double *total_ns, *span_ns, *wall_ns;   /* [repeats] */
    ktimes *k;
    int nk;
} timing;

static void timing_free(timing *t)
{
    for (int i = 0; i < t->nk; i++) free(t->k[i].per_rep);
    free(t->k), free(t->total_ns), free(t->span_ns), free(t->wall_ns);
}

static void add_records(timing *t, int rep, const kprof_records *rec)
{
    for (size_t i = 0; i < rec->n; i++) {
        const kprof_record *r = &rec->v[i];
        if (r->kind != KPROF_KERNEL) continue;   /* memsets and copies count in the span only */
        double ns = (double)(r->end_ns - r->start_ns);
        t->total_ns[rep] += ns;
        int j = 0;
        while (j < t->nk && strncmp(t->k[j].name, r->name, sizeof t->k[j].name - 1)) j++;
        if (j == t->nk) {
            if (t->nk == XB_MAX_KERNELS) continue;   /* more names than the result can hold */
            t->k = rg_xrealloc(t->k, (size_t)(t->nk + 1) * sizeof *t->k);
            snprintf(t->k[j].name, sizeof t->k[j].name, "%s", r->name);
            t->k[j].per_rep = rg_xcalloc((size_t)t->repeats, sizeof(double));
            t->nk++;
        }
        t->k[j].per_rep[rep] += ns;
    }
    t->span_ns[rep] = kprof_span_ns(rec);
}

/* Runs the layer `repeats` times, each under its own CUPTI collection (cuBLAS kernels
 * included). Without CUPTI only wall-clock times are taken (and said so). */
static int time_layer(run_ctx *c, const layer_impl *L, const sizes *s, int warmup, int repeats, timing *t,
                      char *note, size_t note_n)
{
    memset(t, 0, sizeof *t);
    t->repeats = repeats;
    t->total_ns = rg_xcalloc((size_t)repeats, sizeof(double));
    t->span_ns = rg_xcalloc((size_t)repeats, sizeof(double));
    t->wall_ns = rg_xcalloc((size_t)repeats, sizeof(double));
    for (int i = 0; i < warmup; i++)
        if (L->run(c, s)) return -1;
    if (krt_sync(c->err)) return -1;
    t->cupti = 1;
    for (int rep = 0; rep < repeats; rep++) {
        rg_err perr;
        if (t->cupti && kprof_start_with(KPROF_CUPTI, &perr)) {
            t->cupti = 0;
            snprintf(note, note_n, "; timed by wall clock (CUPTI: %.900s)", perr.msg);
        }
        double t0 = rg_now();
        int rc = L->run(c, s) || krt_sync(c->err);
        t->wall_ns[rep] = (rg_now() - t0) * 1e9;
        if (t->cupti) {
            kprof_records rec = {0};
            if (kprof_stop(&rec, &perr) && !rc) {
                *c->err = perr;   /* with its class: a fault shows at the profiler's sync */
                rc = -1;
            }
            if (!rc) add_records(t, rep, &rec);
            kprof_records_free(&rec);
        }
        if (rc) return -1;
    }
    return 0;
}

static void fill_result(xb_result *r, timing *t)
{
    int n = t->repeats;
    double *v = t->cupti ? t->total_ns : t->wall_ns;
    double mean = 0, var = 0, mn = v[0], mx = v[0];
    for (int i = 0; i < n; i++) mean += v[i] / n, mn = fmin(mn, v[i]), mx = fmax(mx, v[i]);
    for (int i = 0; i < n; i++) var += (v[i] - mean) * (v[i] - mean);
    r->repeats = n;
    r->min_ms = mn / 1e6, r->max_ms = mx / 1e6;
    r->stddev_ms = n > 1 ? sqrt(var / (n - 1)) / 1e6 : 0;
    r->median_ms = median_of(v, n) / 1e6;
    r->fwd_ms = r->median_ms, r->bwd_ms = 0;
    if (t->cupti) {
        r->gemm_ms = r->traversal_ms = r->other_ms = 0;
        for (int j = 0; j < t->nk && r->nkernels < XB_MAX_KERNELS; j++) {
            xb_kernel *k = &r->kernels[r->nkernels++];
            snprintf(k->name, sizeof k->name, "%s", t->k[j].name);
            const char *cat = blk_category_of(t->k[j].name);
            snprintf(k->category, sizeof k->category, "%s", cat);
            double lo = t->k[j].per_rep[0], hi = lo;
            for (int i = 0; i < n; i++) lo = fmin(lo, t->k[j].per_rep[i]), hi = fmax(hi, t->k[j].per_rep[i]);
            k->median_ns = median_of(t->k[j].per_rep, n);
            k->spread_ns = hi - lo;
            double ms = k->median_ns / 1e6;
            if (!strcmp(cat, "gemm")) r->gemm_ms += ms;
            else if (!strcmp(cat, "traversal")) r->traversal_ms += ms;
            else r->other_ms += ms;
        }
        xb_metric *m = &r->metrics[r->nmetrics++];
        snprintf(m->name, sizeof m->name, "span_ms");
        snprintf(m->unit, sizeof m->unit, "ms");
        m->value = median_of(t->span_ns, n) / 1e6;
    }
    xb_metric *w = &r->metrics[r->nmetrics++];
    snprintf(w->name, sizeof w->name, "wall_ms");
    snprintf(w->unit, sizeof w->unit, "ms");
    w->value = median_of(t->wall_ns, n) / 1e6;
}

/* Runs the layer once on poisoned outputs and compares with the reference. */
static int validate(run_ctx *c, const layer_impl *L, const sizes *s, double tol, xb_result *r)
{
    size_t bytes = (size_t)s->N * s->M * sizeof(float);
    float *h = T(c, "h");
    if (krt_poison(h, bytes, c->err) || L->run(c, s) || krt_sync(c->err)) return -1;
    float *got = rg_xmalloc(bytes ? bytes : 1);
    int rc = krt_download(got, h, bytes, c->err);
    if (rc == 0) {
        const bl_problem *p = c->p;
        int64_t n = ref_count(p->ref, p->prog->output);
        RG_ASSERT(n == s->N * s->M);
        r->validation_error = xv_compare_f32(ref_values(p->ref, p->prog->output), got, n);
        if (!(r->validation_error < tol)) {
            r->status = RS_WRONG_ANSWER;
            snprintf(r->evidence, sizeof r->evidence, "relative L2 error %.3g of %s above %.0e",
                     r->validation_error, p->prog->vars[p->prog->output].name, tol);
        } else {
            snprintf(r->evidence, sizeof r->evidence, "validated: %s=%.3g", p->prog->vars[p->prog->output].name,
                     r->validation_error);
        }
    }
    free(got);
    return rc;
}

/* Device, kernels and cuBLAS: failures here are the harness's, not the layer's.
 * *compile_s: seconds in NVRTC (0 when the kernels came from the cubin cache). */
static int ctx_open(run_ctx *c, double *compile_s, rg_err *err)
{
    krt_device dev;
    if (krt_init(0, &dev, err)) return -1;
    krt_cubin cubin;
    if (blk_compile(dev.sm, &cubin, err)) {
        krt_cubin_free(&cubin);
        return -1;
    }
    *compile_s = cubin.compile_s;
    int rc = krt_module_load(&cubin, &c->mod, err);
    krt_cubin_free(&cubin);
    for (int i = 0; i < BLK_COUNT && !rc; i++) rc = krt_get_kernel(c->mod, blk_kernel_name((blk_id)i), &c->k[i], err);
    if (rc) return -1;
    cublasStatus_t st = cublasCreate(&c->blas);
    if (st != CUBLAS_STATUS_SUCCESS)
        return rg_errf(err, "cublasCreate: %s (%s)", cublasGetStatusString(st), cublasGetStatusName(st));
    c->have_blas = 1;
    return 0;
}

int bl_run(bl_problem *p, bl_style style, const bl_options *opt, xb_result *r, rg_err *err)
{
    xb_result_init(r);
    const layer_impl *L = layer_of(p->model);
    RG_ASSERT(L && style >= 0 && style < BL_STYLE_COUNT);
    run_ctx c = {.p = p, .style = style};
    if (ctx_open(&c, &r->compile_s, err)) {
        ctx_free(&c);
        return -1;
    }
    rg_err e = {0};
    c.err = &e;
    c.plan = mp_new(mp_cuda_allocator(), opt ? opt->mem_limit : 0);
    sizes s = sizes_of(p);
    double t0 = rg_now();
    mp_status ms = L->setup(&c, &s);
    r->setup_s = rg_now() - t0;
    r->peak_mem_bytes = (int64_t)mp_peak_bytes(c.plan);
    if (ms != MP_OK) {
        xb_result_fail(r, ms == MP_OOM ? RS_OOM : RS_LAUNCH_ERROR, &e);
        ctx_free(&c);
        return 0;
    }
    double tol = xv_tolerance(opt ? opt->tolerance : 0, 0);   /* inference only */
    t0 = rg_now();
    int vrc = validate(&c, L, &s, tol, r);
    r->validate_s = rg_now() - t0;
    if (vrc) {
        xb_run_failed(r, &e);
    } else if (r->status == RS_OK && !(opt && opt->validate_only)) {
        int warmup = !opt || opt->warmup == 0 ? 3 : opt->warmup > 0 ? opt->warmup : 0;
        int repeats = opt && opt->repeats > 0 ? opt->repeats : 10;
        timing t;
        char note[1024] = "";
        t0 = rg_now();
        if (time_layer(&c, L, &s, warmup, repeats, &t, note, sizeof note)) xb_run_failed(r, &e);
        else fill_result(r, &t);
        r->time_s = rg_now() - t0;
        size_t used = strlen(r->evidence);
        if (r->status == RS_OK) snprintf(r->evidence + used, sizeof r->evidence - used, "%s", note);
        timing_free(&t);
    }
    ctx_free(&c);
    return 0;
}

int bl_measure(const char *model, const char *style, const hg_graph *g, const ir_dims *dims, const bl_options *opt,
               xb_result *out, rg_err *err)
{
    bl_style st;
    if (bl_style_parse(style, &st, err) || krt_require_device(err)) return -1;
    bl_problem *p = bl_problem_new(model, g, dims, err);
    if (!p) return -1;
    int rc = bl_run(p, st, opt, out, err);
    bl_problem_free(p);
    return rc;
}
