/* The CPU reference executor: float64 evaluation of inter-operator IR programs on a graph,
 * parallel over rows with pthreads; semantics in ir.h and ref.h. */
#include "codegen/ref.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Hot dense kernels get an AVX2/FMA clone on x86-64 (the default build targets plain
 * x86-64); the dispatcher picks it at load time when the CPU has it. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define REF_HOT __attribute__((target_clones("avx2", "default")))
#else
#define REF_HOT
#endif

#define SCATTER_CHUNK 8192   /* rows per scatter chunk: bounds the temporary buffer */
#define MAX_THREADS REF_MAX_THREADS

/* ------------------------------------------------------------------ executor state */

struct ref_exec {
    const ir_program *p;
    const hg_graph *g;
    uint64_t seed;
    const int32_t *node_old_of, *edge_old_of;   /* ref_options: rows of data that moved, or NULL */
    double input_scale;                         /* ref_options: the input features' range, > 0 */
    int nthreads;
    double **val;          /* [nvars] */
    int64_t *rows, *width; /* [nvars] */
    int32_t *node_ntype;   /* [num_nodes] */
    int32_t *unique_etype; /* [num_unique] */
    /* owner-computes scatter: rows grouped by the row they add into */
    int32_t *compact_edge_ptr;             /* [num_unique+1]: edges of compact row u (contiguous) */
    int32_t *src_unique_ptr, *src_unique;  /* [num_nodes+1], [num_unique]: compact rows by src */
    /* ref_set_flips: sorted by (stmt, row); written only between runs, read by the row loops */
    ref_kink *flips;
    int nflips;
    double flip_rel;
};

/* Where a statement's current row sits in the graph. */
typedef struct rowctx {
    int64_t row, compact;
    int32_t src, dst, etype, ntype, src_ntype, dst_ntype;
} rowctx;

typedef enum iter_kind { IT_EDGES, IT_UNIQUE, IT_NODES, IT_TYPES, IT_GLOBAL } iter_kind;

/* DIRECT: each row writes its own output row. SCATTER: rows add into shared rows (chunked,
 * owner-computes). WACC: rows add into weight slices (per-thread accumulators).
 * SERIAL: per-type and global statements, small enough to run on one thread. */
typedef enum out_mode { OUT_DIRECT, OUT_SCATTER, OUT_WACC, OUT_SERIAL } out_mode;

/* An operand resolved against the executor: where its rows live and their shape. */
typedef struct opnd {
    int var;               /* -1: constant */
    ir_access acc;
    double cval;
    double *base;
    int64_t width;         /* values per row (weights: per type slice) */
    int kind;              /* ir_var_kind, -1 for a constant */
    int compact;
    int heads, dim, rows_dim;
    int64_t sh, sd;        /* broadcasting strides over heads and dim (0 = broadcast) */
} opnd;

typedef struct splan {
    ref_exec *x;
    const ir_stmt *s;
    ir_opkind op;          /* WGRAD into a vector weight runs as a reducing MUL */
    iter_kind it;
    int64_t nrows;
    out_mode mode;
    int aliased;           /* the output is also read: compute into scratch first */
    int nin;
    opnd out, in[IR_MAX_IN];
    int H, D;              /* broadcast shape of elementwise ops */
    int64_t ntargets;      /* SCATTER: rows of the output */
    double inv_nodes;      /* NLL: 1 / num_nodes */
    /* DOM_TYPE matrix products: per operand (in0, in1, out) whether a wheads-1 weight is
     * split into H column blocks instead of shared */
    int mm_heads, mm_split[3];
    int reshape;           /* COPY between equal row widths: a flat copy (ir.h) */
    const struct packed_w *wpack;   /* LINEAR: the weight in panels (run_stmt packs it) */
    /* ReLU/LeakyReLU gradients: this statement's flipped rows (ref_set_flips) and the
     * |selector| below which their elements take the other branch; nflip 0 almost always */
    const ref_kink *flip;
    int nflip;
    double flip_thr;
} splan;

/* ------------------------------------------------------------------ small helpers */

static int64_t opnd_row(const opnd *o, const rowctx *c)
{
    switch (o->acc) {
    case IR_ACC_ROW: return o->compact ? c->compact : c->row;
    case IR_ACC_SRC: return c->src;
    case IR_ACC_DST: return c->dst;
    case IR_ACC_ETYPE: return c->etype;
    case IR_ACC_NTYPE: return c->ntype;
    case IR_ACC_SRC_NTYPE: return c->src_ntype;
    case IR_ACC_DST_NTYPE: return c->dst_ntype;
    default: return 0;
    }
}

static double *opnd_ptr(const opnd *o, const rowctx *c)
{
    if (o->var < 0) return (double *)&o->cval;
    return o->base + opnd_row(o, c) * o->width;
}

static void fill_ctx(const ref_exec *x, iter_kind it, int64_t r, rowctx *c)
{
    const hg_graph *g = x->g;
    c->row = r;
    switch (it) {
    case IT_EDGES:
        c->src = g->src[r];
        c->dst = g->dst[r];
        c->etype = g->etype[r];
        c->compact = g->edge_compact[r];
        c->src_ntype = x->node_ntype[c->src];
        c->dst_ntype = x->node_ntype[c->dst];
        break;
    case IT_UNIQUE:
        c->src = g->unique_src[r];
        c->dst = -1;
        c->etype = x->unique_etype[r];
        c->compact = r;
        c->src_ntype = x->node_ntype[c->src];
        c->dst_ntype = g->etype_dst[c->etype];
        break;
    case IT_NODES:
        c->ntype = x->node_ntype[r];
        c->compact = -1;
        break;
    case IT_TYPES:
        c->etype = (int32_t)r;
        c->src_ntype = g->etype_src[r];
        c->dst_ntype = g->etype_dst[r];
        c->compact = -1;
        break;
    case IT_GLOBAL:
        c->compact = -1;
        break;
    }
}

/* Big arrays (edge variables are |E| x width doubles) go on transparent huge pages where
 * the kernel offers them: first-touch page faults otherwise dominate setting up. */
static double *alloc_values(int64_t n)
{
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(double);
    if (bytes < ((size_t)4 << 20)) return rg_xmalloc(bytes);
    void *p = NULL;
    size_t huge = (size_t)2 << 20;
    if (posix_memalign(&p, huge, (bytes + huge - 1) / huge * huge) != 0) RG_DIE("out of host memory (%zu bytes)", bytes);
#ifdef MADV_HUGEPAGE
    madvise(p, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE);
#endif
    return p;
}

/* ------------------------------------------------------------------ threads */

typedef ref_range_fn range_fn;

typedef struct prange {
    range_fn fn;
    void *arg;
    int tid;
    int64_t lo, hi;
} prange;

static void *prange_main(void *arg)
{
    prange *r = arg;
    r->fn(r->arg, r->tid, r->lo, r->hi);
    return NULL;
}

int ref_default_threads(void)
{
    const char *env = getenv("RGNN_REF_THREADS");
    long n = env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    return n > MAX_THREADS ? MAX_THREADS : (int)n;
}

void ref_parallel_for(int nthreads, int64_t n, range_fn fn, void *arg)
{
    if (nthreads > n) nthreads = n > 0 ? (int)n : 1;
    if (nthreads <= 1 || n < 64) {
        fn(arg, 0, 0, n);
        return;
    }
    prange r[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    for (int t = 0; t < nthreads; t++)
        r[t] = (prange){fn, arg, t, n * t / nthreads, n * (t + 1) / nthreads};
    for (int t = 1; t < nthreads; t++)
        if (pthread_create(&th[t], NULL, prange_main, &r[t]) != 0) RG_DIE("pthread_create failed");
    fn(arg, 0, r[0].lo, r[0].hi);
    for (int t = 1; t < nthreads; t++) pthread_join(th[t], NULL);
}

/* Runs fn(arg, tid, 0, 0) once on each of nthreads threads. */
static void parallel_threads(int nthreads, range_fn fn, void *arg)
{
    if (nthreads <= 1) {
        fn(arg, 0, 0, 0);
        return;
    }
    prange r[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    for (int t = 0; t < nthreads; t++) r[t] = (prange){fn, arg, t, 0, 0};
    for (int t = 1; t < nthreads; t++)
        if (pthread_create(&th[t], NULL, prange_main, &r[t]) != 0) RG_DIE("pthread_create failed");
    fn(arg, 0, 0, 0);
    for (int t = 1; t < nthreads; t++) pthread_join(th[t], NULL);
}

/* ------------------------------------------------------------------ dense kernels */
/* Rows that share a weight slice (edges and compact rows are grouped by etype, nodes by
 * ntype) are multiplied together, 4 rows x 8 columns of register tiles at a time, so that
 * each B load feeds four rows.
 *
 * B comes packed in panels of 8 columns (kd x 8 values, contiguous): a weight once per
 * statement (pack_weights), a weight gradient's dy rows once per group. Read in place, a
 * column block of a row-major 256-wide matrix is 256 lines 2 KB apart, which fall into 2 of
 * the 64 sets of a 32 KB L1: at dims 256 every B load missed it and the products ran at a
 * fifth of the core's rate. Each output element is still the sum over the inner index in
 * order, from 0, then added to the output, so packing changes no rounding. */

#define BATCH 32
#define PANEL 8   /* columns of a packed panel: two 4-wide vectors */

typedef double v4d __attribute__((vector_size(32)));
/* The helpers below are static and inlined: no call crosses an ABI boundary with a v4d. */
#pragma GCC diagnostic ignored "-Wpsabi"

static inline v4d ld4(const double *p)
{
    v4d v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void add4(double *p, v4d v)
{
    v4d o;
    memcpy(&o, p, sizeof o);
    o += v;
    memcpy(p, &o, sizeof o);
}

static int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

/* B(t, j) = src[t * rs + j * cs] (t < kd, j < n) into panels: dst[(j / 8) * kd * 8 + t * 8 + j % 8],
 * the columns past n zero. */
static void pack_strided(const double *src, int64_t rs, int64_t cs, int kd, int n, double *dst)
{
    for (int j0 = 0; j0 < n; j0 += PANEL, dst += (int64_t)kd * PANEL)
        for (int t = 0; t < kd; t++)
            for (int j = 0; j < PANEL; j++)
                dst[t * PANEL + j] = j0 + j < n ? src[t * rs + (j0 + j) * cs] : 0.0;
}

/* The same for B(t, j) = rows[t][off + j]. */
static void pack_rows(const double *const *rows, int64_t off, int kd, int n, double *dst)
{
    for (int j0 = 0; j0 < n; j0 += PANEL, dst += (int64_t)kd * PANEL)
        for (int t = 0; t < kd; t++)
            for (int j = 0; j < PANEL; j++) dst[t * PANEL + j] = j0 + j < n ? rows[t][off + j0 + j] : 0.0;
}

/* c[i][co + j] += sum over t < kd of a[i][t * as] * B(t, j), for i < m, j < n; B packed in
 * panels. Row quads short of 4 repeat their last row and drop its results. */
REF_HOT static void gemm_panels(double *const *c, int64_t co, const double *const *a, int64_t as, int m,
                                const double *restrict bp, int kd, int n)
{
    for (int j0 = 0; j0 < n; j0 += PANEL) {
        const double *panel = bp + (int64_t)j0 * kd;
        int nr = n - j0 < PANEL ? n - j0 : PANEL;
        for (int i0 = 0; i0 < m; i0 += 4) {
            int mr = m - i0 < 4 ? m - i0 : 4;
            const double *a0 = a[i0], *a1 = a[i0 + (mr > 1)], *a2 = a[i0 + (mr > 2) * 2], *a3 = a[i0 + (mr > 3) * 3];
            v4d acc[8] = {{0}};
            for (int t = 0; t < kd; t++) {
                v4d b0 = ld4(panel + t * PANEL), b1 = ld4(panel + t * PANEL + 4);
                double x0 = a0[t * as], x1 = a1[t * as], x2 = a2[t * as], x3 = a3[t * as];
                acc[0] += x0 * b0; acc[1] += x0 * b1;
                acc[2] += x1 * b0; acc[3] += x1 * b1;
                acc[4] += x2 * b0; acc[5] += x2 * b1;
                acc[6] += x3 * b0; acc[7] += x3 * b1;
            }
            for (int i = 0; i < mr; i++) {
                double *ci = c[i0 + i] + co + j0;
                if (nr == PANEL) {
                    add4(ci, acc[2 * i]);
                    add4(ci + 4, acc[2 * i + 1]);
                } else {
                    for (int j = 0; j < nr; j++) ci[j] += acc[2 * i + j / 4][j % 4];
                }
            }
        }
    }
}

/* A LINEAR statement's weight, packed once per run of it: slice s, head h at
 * wpack + (s * heads + h) * wpack_head. */
typedef struct packed_w {
    double *p;
    int64_t head;              /* values per head: kd x round_up(n, 8) */
    int kd, n;                 /* inner and output widths of the product (swapped by ^T) */
} packed_w;

/* ------------------------------------------------------------------ row kernels */
/* Every kernel ADDS its row's result into dst (callers zero dst for `=`). */

/* LINEAR for nb rows sharing one weight slice (cs[0]'s). */
static void k_linear_rows(const splan *pl, const rowctx *cs, int nb, double *const *dst)
{
    const opnd *xo = &pl->in[0], *wo = &pl->in[1];
    const packed_w *pw = pl->wpack;
    RG_ASSERT(pw && pw->p);
    const double *x[BATCH];
    int64_t xs = wo->heads == 1 || xo->heads == 1 ? 0 : xo->dim;
    int64_t os = wo->heads == 1 || pl->out.heads == 1 ? 0 : pl->out.dim;
    const double *w = pw->p + opnd_row(wo, &cs[0]) * wo->heads * pw->head;
    for (int h = 0; h < wo->heads; h++) {
        for (int b = 0; b < nb; b++) x[b] = opnd_ptr(xo, &cs[b]) + h * xs;
        gemm_panels(dst, h * os, x, 1, nb, w + h * pw->head, pw->kd, pw->n);
    }
}

static void k_linear(const splan *pl, const rowctx *c, double *dst)
{
    k_linear_rows(pl, c, 1, &dst);
}

/* Per-thread buffers of a weight gradient from rows (allocated once per thread and statement). */
typedef struct wgrad_buf {
    double *xt;                /* x^T of a group: row i of the product at xt + (i / 4) * BATCH * 4 + i % 4, stride 4 */
    double *dp;                /* the group's dy rows packed in panels */
    const double **arow;       /* [k] */
    double **crow;             /* [k] */
} wgrad_buf;

static void wgrad_buf_init(wgrad_buf *b, int k, int n)
{
    b->xt = rg_xmalloc((size_t)round_up(k, 4) * BATCH * sizeof *b->xt);
    b->dp = rg_xmalloc((size_t)round_up(n, PANEL) * BATCH * sizeof *b->dp);
    b->arow = rg_xmalloc((size_t)k * sizeof *b->arow);
    b->crow = rg_xmalloc((size_t)k * sizeof *b->crow);
}

static void wgrad_buf_free(wgrad_buf *b)
{
    free(b->xt);
    free(b->dp);
    free(b->arow);
    free(b->crow);
}

/* W (k x n) += x^T dy over nb <= BATCH rows: the product of x^T (k x nb) and dy (nb x n). */
static void wgrad_product(double *w, const double *const *x, int64_t xo, const double *const *d, int64_t doff,
                          int nb, int k, int n, wgrad_buf *b)
{
    for (int t = 0; t < nb; t++)
        for (int i = 0; i < k; i++) b->xt[(i / 4) * BATCH * 4 + t * 4 + i % 4] = x[t][xo + i];
    for (int i = 0; i < k; i++) {
        b->arow[i] = b->xt + (i / 4) * BATCH * 4 + i % 4;
        b->crow[i] = w + (int64_t)i * n;
    }
    pack_rows(d, doff, nb, n, b->dp);
    gemm_panels(b->crow, 0, b->arow, 4, k, b->dp, nb, n);
}

/* Outer products of nb rows into one weight matrix slice (WGRAD from rows). */
static void k_wgrad_rows_n(const splan *pl, const rowctx *cs, int nb, double *dst, wgrad_buf *buf)
{
    const opnd *xo = &pl->in[0], *yo = &pl->in[1];
    const double *x[BATCH], *y[BATCH];
    for (int b = 0; b < nb; b++) {
        x[b] = opnd_ptr(xo, &cs[b]);
        y[b] = opnd_ptr(yo, &cs[b]);
    }
    int k = pl->out.rows_dim, n = pl->out.dim, H = pl->out.heads;
    int64_t xs = H == 1 || xo->heads == 1 ? 0 : xo->dim, ys = H == 1 || yo->heads == 1 ? 0 : yo->dim;
    for (int h = 0; h < H; h++) wgrad_product(dst + (int64_t)h * k * n, x, h * xs, y, h * ys, nb, k, n, buf);
}

/* The standard normal CDF and density, for GELU (PyTorch's exact form, not the tanh one). */
static double normal_cdf(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }
static double normal_pdf(double x) { return exp(-0.5 * x * x) / sqrt(2.0 * M_PI); }

#define EW_LOOP(EXPR)                                                     \
    for (int h = 0; h < H; h++) {                                         \
        const double *A = pa + h * a->sh, *B = pb + h * b->sh;            \
        double *O = dst + h * o->sh;                                      \
        for (int d = 0; d < D; d++) {                                     \
            double va = A[d * a->sd], vb = B[d * b->sd];                  \
            (void)va; (void)vb;                                           \
            O[d * o->sd] += (EXPR);                                       \
        }                                                                 \
    }

/* Whether ref_set_flips listed this row of the statement (binary search; rows ascend). */
static int row_flipped(const splan *pl, const rowctx *c)
{
    int lo = 0, hi = pl->nflip;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (pl->flip[mid].row < c->row) lo = mid + 1;
        else hi = mid;
    }
    return lo < pl->nflip && pl->flip[lo].row == c->row;
}

/* Elementwise ops (and WGRAD into a vector weight, run as a reducing MUL). A flipped row
 * of a (Leaky)ReLU gradient takes the other branch where |x| < flip_thr (ref.h, kinks). */
static void k_elementwise(const splan *pl, const rowctx *c, double *dst)
{
    const opnd *a = &pl->in[0], *b = pl->nin > 1 ? &pl->in[1] : &pl->in[0], *o = &pl->out;
    const double *pa = opnd_ptr(a, c), *pb = opnd_ptr(b, c);
    int H = pl->H, D = pl->D;
    double cv = pl->s->cval, thr = pl->flip_thr;
    int flip = pl->nflip > 0 && row_flipped(pl, c);
    switch (pl->op) {
    case IR_OP_ADD: EW_LOOP(va + vb); break;
    case IR_OP_SUB: EW_LOOP(va - vb); break;
    case IR_OP_MUL: case IR_OP_WGRAD: EW_LOOP(va * vb); break;
    case IR_OP_DIV: EW_LOOP(va / vb); break;
    case IR_OP_DIV_NZ: EW_LOOP(vb != 0 ? va / vb : 0.0); break;
    case IR_OP_EXP: EW_LOOP(exp(va)); break;
    case IR_OP_LEAKYRELU: EW_LOOP(va > 0 ? va : cv * va); break;
    case IR_OP_RELU: EW_LOOP(va > 0 ? va : 0.0); break;
    case IR_OP_GELU: EW_LOOP(va * normal_cdf(va)); break;
    case IR_OP_SIGMOID: EW_LOOP(1.0 / (1.0 + exp(-va))); break;
    case IR_OP_GELU_GRAD: EW_LOOP(va * (normal_cdf(vb) + vb * normal_pdf(vb))); break;
    case IR_OP_COPY: EW_LOOP(va); break;
    case IR_OP_LEAKYRELU_GRAD:
        if (flip) {
            EW_LOOP((vb > 0) != (fabs(vb) < thr) ? va : cv * va);
        } else {
            EW_LOOP(vb > 0 ? va : cv * va);
        }
        break;
    case IR_OP_RELU_GRAD:
        if (flip) {
            EW_LOOP((vb > 0) != (fabs(vb) < thr) ? va : 0.0);
        } else {
            EW_LOOP(vb > 0 ? va : 0.0);
        }
        break;
    default: RG_DIE("op %s is not elementwise", ir_op_name(pl->op));
    }
}

static void k_dot(const splan *pl, const rowctx *c, double *dst)
{
    const opnd *a = &pl->in[0], *b = &pl->in[1];
    const double *pa = opnd_ptr(a, c), *pb = opnd_ptr(b, c);
    for (int h = 0; h < pl->H; h++) {
        const double *A = pa + h * a->sh, *B = pb + h * b->sh;
        double s = 0;
        for (int d = 0; d < pl->D; d++) s += A[d * a->sd] * B[d * b->sd];
        dst[h * pl->out.sh] += s;
    }
}

static void k_concat(const splan *pl, const rowctx *c, double *dst)
{
    const opnd *a = &pl->in[0], *b = &pl->in[1];
    const double *pa = opnd_ptr(a, c), *pb = opnd_ptr(b, c);
    for (int h = 0; h < pl->H; h++) {
        const double *A = pa + h * a->sh, *B = pb + h * b->sh;
        double *O = dst + h * pl->out.sh;
        for (int d = 0; d < a->dim; d++) O[d] += A[d];
        for (int d = 0; d < b->dim; d++) O[a->dim + d] += B[d];
    }
}

static void k_slice(const splan *pl, const rowctx *c, double *dst)
{
    const opnd *a = &pl->in[0];
    const double *pa = opnd_ptr(a, c) + pl->s->iarg;
    for (int h = 0; h < pl->H; h++)
        for (int d = 0; d < pl->out.dim; d++) dst[h * pl->out.sh + d] += pa[h * a->sh + d];
}

/* log(sum(exp(x))) and the max, stably. */
static double log_sum_exp(const double *x, int n, double *max_out)
{
    double m = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > m) m = x[i];
    double s = 0;
    for (int i = 0; i < n; i++) s += exp(x[i] - m);
    *max_out = m;
    return m + log(s);
}

/* A label outside [0, C) makes the result NaN, so comparisons fail instead of reading
 * out of bounds. */
static int label_index(double v, int classes)
{
    if (!(v >= 0) || v >= classes || v != floor(v)) return -1;
    return (int)v;
}

static void k_nll_grad(const splan *pl, const rowctx *c, double *dst)
{
    const opnd *xo = &pl->in[0];
    const double *x = opnd_ptr(xo, c);
    int n = xo->heads * xo->dim;
    int lab = label_index(opnd_ptr(&pl->in[1], c)[0], n);
    double scale = opnd_ptr(&pl->in[2], c)[0] * pl->inv_nodes, m;
    double lse = log_sum_exp(x, n, &m);
    for (int i = 0; i < n; i++) dst[i] += (exp(x[i] - lse) - (i == lab)) * scale;
    if (lab < 0) dst[0] += NAN;
}

/* Each node's term is computed on every thread, then the terms are summed in node order on
 * one: the same value as a serial loop, bit for bit, whatever the thread count (at dims 256
 * the serial loop took 0.3-0.5 s; the in-order sum takes a millisecond). */
typedef struct nll_job {
    const splan *pl;
    double *term;          /* [num_nodes] */
} nll_job;

static void nll_terms(void *arg, int tid, int64_t lo, int64_t hi)
{
    const nll_job *j = arg;
    const opnd *xo = &j->pl->in[0], *lo_ = &j->pl->in[1];
    int n = xo->heads * xo->dim;
    double m;
    (void)tid;
    for (int64_t v = lo; v < hi; v++) {
        const double *x = xo->base + v * xo->width;
        int lab = label_index(lo_->base[v * lo_->width], n);
        j->term[v] = lab < 0 ? NAN : log_sum_exp(x, n, &m) - x[lab];
    }
}

static void k_nll_loss(const splan *pl, const rowctx *c, double *dst)
{
    (void)c;
    int64_t nodes = pl->x->g->num_nodes;
    nll_job j = {pl, rg_xmalloc((size_t)(nodes + 1) * sizeof *j.term)};
    ref_parallel_for(pl->x->nthreads, nodes, nll_terms, &j);
    double sum = 0;
    for (int64_t v = 0; v < nodes; v++) sum += j.term[v];
    free(j.term);
    dst[0] += sum * pl->inv_nodes;
}

/* ---- DOM_TYPE matrix products ---- */

typedef struct mview {
    int64_t off;
    int rows, cols;
    int64_t rs, cs;
} mview;

/* Head h's matrix of a weight operand: `column` views a vector as dim x 1, `split`
 * takes column block h of a shared (wheads 1) weight, `transpose` swaps the axes. */
static int make_view(const opnd *o, int column, int split, int transpose, int H, int h, mview *v)
{
    int dim = o->dim;
    int64_t head_off = 0;
    if (split) {
        if (dim % H) return -1;
        dim /= H;
        head_off = (int64_t)h * dim;
    } else if (o->heads > 1) {
        head_off = (int64_t)h * (o->rows_dim > 0 ? o->rows_dim : 1) * o->dim;
    }
    if (o->rows_dim > 0) *v = (mview){head_off, o->rows_dim, dim, o->dim, 1};
    else if (column) *v = (mview){head_off, dim, 1, 1, 0};
    else *v = (mview){head_off, 1, dim, 0, 1};
    if (transpose) {
        int t = v->rows; v->rows = v->cols; v->cols = t;
        int64_t u = v->rs; v->rs = v->cs; v->cs = u;
    }
    return 0;
}

/* The three views of head h under pl's split choices; -1 if the shapes do not agree. */
static int mm_views(const splan *pl, int h, mview *va, mview *vb, mview *vo)
{
    int wgrad = pl->op == IR_OP_WGRAD, H = pl->mm_heads;
    if (make_view(&pl->in[0], 0, pl->mm_split[0], wgrad, H, h, va) < 0) return -1;
    if (make_view(&pl->in[1], !wgrad, pl->mm_split[1], !wgrad && pl->s->transpose_w, H, h, vb) < 0)
        return -1;
    if (va->cols != vb->rows) return -1;
    const opnd *o = &pl->out;
    if (o->rows_dim > 0) {
        if (make_view(o, 0, pl->mm_split[2], 0, H, h, vo) < 0) return -1;
        return vo->rows == va->rows && vo->cols == vb->cols ? 0 : -1;
    }
    /* a vector output takes a 1 x L or an L x 1 result */
    int column = va->rows != 1;
    if (column && vb->cols != 1) return -1;
    if (make_view(o, column, pl->mm_split[2], 0, H, h, vo) < 0) return -1;
    return vo->rows == va->rows && vo->cols == vb->cols ? 0 : -1;
}

static void k_matmul(const splan *pl, const rowctx *c, double *dst)
{
    const double *pa = opnd_ptr(&pl->in[0], c), *pb = opnd_ptr(&pl->in[1], c);
    for (int h = 0; h < pl->mm_heads; h++) {
        mview va, vb, vo;
        if (mm_views(pl, h, &va, &vb, &vo) < 0) RG_DIE("matrix views changed between heads");
        for (int i = 0; i < va.rows; i++)
            for (int j = 0; j < vb.cols; j++) {
                double s = 0;
                for (int k = 0; k < va.cols; k++)
                    s += pa[va.off + i * va.rs + k * va.cs] * pb[vb.off + k * vb.rs + j * vb.cs];
                dst[vo.off + i * vo.rs + j * vo.cs] += s;
            }
    }
}

static void k_reshape(const splan *pl, const rowctx *c, double *dst)
{
    const double *a = opnd_ptr(&pl->in[0], c);
    int64_t n = (int64_t)pl->out.heads * pl->out.dim;
    for (int64_t i = 0; i < n; i++) dst[i] += a[i];
}

static void row_kernel(const splan *pl, const rowctx *c, double *dst)
{
    if (pl->reshape) {
        k_reshape(pl, c, dst);
        return;
    }
    switch (pl->op) {
    case IR_OP_LINEAR: k_linear(pl, c, dst); break;
    case IR_OP_DOT: k_dot(pl, c, dst); break;
    case IR_OP_CONCAT: k_concat(pl, c, dst); break;
    case IR_OP_SLICE: k_slice(pl, c, dst); break;
    case IR_OP_NLL_GRAD: k_nll_grad(pl, c, dst); break;
    case IR_OP_NLL_LOSS: k_nll_loss(pl, c, dst); break;
    case IR_OP_WEIGHT_MM: k_matmul(pl, c, dst); break;
    case IR_OP_WGRAD:
        if (pl->it == IT_TYPES) k_matmul(pl, c, dst);
        else if (pl->out.rows_dim > 0) RG_DIE("a weight gradient from rows runs batched (rows_wacc)");
        else k_elementwise(pl, c, dst);
        break;
    default: k_elementwise(pl, c, dst); break;
    }
}

/* ------------------------------------------------------------------ planning (checks) */

static const char *acc_label(ir_access a)
{
    static const char *const n[] = {"ROW", "SRC", "DST", "ETYPE", "NTYPE", "SRC_NTYPE",
                                    "DST_NTYPE", "ALL", "CONST"};
    return (unsigned)a < sizeof n / sizeof n[0] ? n[a] : "?";
}

static int widx_fits(const ir_var *v, ir_access acc)
{
    switch (acc) {
    case IR_ACC_ETYPE: case IR_ACC_ROW: return v->widx == IR_WIDX_ETYPE;
    case IR_ACC_NTYPE: case IR_ACC_SRC_NTYPE: case IR_ACC_DST_NTYPE: return v->widx == IR_WIDX_NTYPE;
    case IR_ACC_ALL: return v->widx == IR_WIDX_NONE;
    default: return 0;
    }
}

/* Can this access be evaluated in this iteration space (so that opnd_row is in range)? */
static int access_ok(const ir_var *v, iter_kind it, ir_access acc, int is_nll)
{
    switch (v->kind) {
    case IR_VAR_SCALAR: return acc == IR_ACC_ALL;
    case IR_VAR_WEIGHT:
        switch (it) {
        case IT_EDGES: case IT_UNIQUE:
            return acc != IR_ACC_NTYPE && acc != IR_ACC_ROW && widx_fits(v, acc);
        case IT_NODES: return (acc == IR_ACC_NTYPE || acc == IR_ACC_ALL) && widx_fits(v, acc);
        case IT_TYPES: return acc != IR_ACC_NTYPE && widx_fits(v, acc);
        case IT_GLOBAL: return acc == IR_ACC_ALL;
        }
        return 0;
    case IR_VAR_EDGE:
        if (acc != IR_ACC_ROW) return 0;
        return it == IT_EDGES || (it == IT_UNIQUE && v->layout == IR_LAYOUT_COMPACT);
    case IR_VAR_NODE:
        if (it == IT_EDGES) return acc == IR_ACC_SRC || acc == IR_ACC_DST;
        if (it == IT_UNIQUE) return acc == IR_ACC_SRC;
        if (it == IT_NODES) return acc == IR_ACC_ROW;
        return it == IT_GLOBAL && is_nll && acc == IR_ACC_ALL;
    }
    return 0;
}

static void set_strides(opnd *o)
{
    o->sh = o->heads == 1 ? 0 : o->dim;
    o->sd = o->dim == 1 ? 0 : 1;
}

static int resolve_opnd(ref_exec *x, const ir_operand *src, iter_kind it, int is_nll, opnd *o,
                        rg_err *err)
{
    memset(o, 0, sizeof *o);
    o->acc = src->acc;
    if (src->acc == IR_ACC_CONST) {
        o->var = -1;
        o->kind = -1;
        o->cval = src->cval;
        o->heads = o->dim = 1;
        set_strides(o);
        return 0;
    }
    const ir_program *p = x->p;
    if (src->var < 0 || src->var >= p->nvars) return rg_errf(err, "variable id %d out of range", src->var);
    const ir_var *v = &p->vars[src->var];
    if (!access_ok(v, it, src->acc, is_nll))
        return rg_errf(err, "cannot access '%s' with %s here", v->name, acc_label(src->acc));
    o->var = src->var;
    o->kind = v->kind;
    o->compact = v->kind == IR_VAR_EDGE && v->layout == IR_LAYOUT_COMPACT;
    o->base = x->val[src->var];
    o->width = x->width[src->var];
    o->heads = v->kind == IR_VAR_SCALAR ? 1 : v->heads;
    o->dim = v->kind == IR_VAR_SCALAR ? 1 : v->dim;
    o->rows_dim = v->kind == IR_VAR_WEIGHT ? v->rows_dim : 0;
    set_strides(o);
    return 0;
}

static int fits(int n, int full) { return n == 1 || n == full; }
static int imax(int a, int b) { return a > b ? a : b; }

/* Broadcast shape of elementwise ops, DOT, CONCAT, SLICE (ref.h: narrower outputs sum). */
static int plan_elementwise(splan *pl, rg_err *err)
{
    const opnd *o = &pl->out;
    if (o->rows_dim > 0) return rg_errf(err, "writes a weight matrix elementwise");
    int H = o->heads, D = 1;
    for (int i = 0; i < pl->nin; i++) {
        if (pl->in[i].rows_dim > 0) return rg_errf(err, "weight matrix operand in an elementwise op");
        H = imax(H, pl->in[i].heads);
        D = imax(D, pl->in[i].dim);
    }
    for (int i = 0; i < pl->nin; i++)
        if (!fits(pl->in[i].heads, H))
            return rg_errf(err, "operand %d has %d heads, the statement %d", i, pl->in[i].heads, H);
    if (!fits(o->heads, H)) return rg_errf(err, "output has %d heads, operands %d", o->heads, H);
    pl->H = H;
    switch (pl->op) {
    case IR_OP_CONCAT:
        if (o->dim != pl->in[0].dim + pl->in[1].dim)
            return rg_errf(err, "concat of widths %d and %d into %d", pl->in[0].dim, pl->in[1].dim, o->dim);
        return 0;
    case IR_OP_SLICE:
        if (pl->s->iarg < 0 || pl->s->iarg + o->dim > pl->in[0].dim)
            return rg_errf(err, "slice [%d, %d) of a %d-wide value", pl->s->iarg, pl->s->iarg + o->dim,
                           pl->in[0].dim);
        return 0;
    case IR_OP_DOT:
        if (o->dim != 1) return rg_errf(err, "dot output must be 1 wide, is %d", o->dim);
        break;
    default:
        D = imax(D, o->dim);
        if (!fits(o->dim, D)) return rg_errf(err, "output width %d, operands %d", o->dim, D);
        break;
    }
    for (int i = 0; i < pl->nin; i++)
        if (!fits(pl->in[i].dim, D))
            return rg_errf(err, "operand %d is %d wide, the statement %d", i, pl->in[i].dim, D);
    pl->D = D;
    return 0;
}

static int is_row_var(const opnd *o) { return o->kind == IR_VAR_NODE || o->kind == IR_VAR_EDGE; }

static int plan_linear(splan *pl, rg_err *err)
{
    const opnd *xo = &pl->in[0], *wo = &pl->in[1], *o = &pl->out;
    if (!is_row_var(xo) || !is_row_var(o)) return rg_errf(err, "linear maps node/edge rows");
    if (wo->kind != IR_VAR_WEIGHT || wo->rows_dim <= 0) return rg_errf(err, "linear needs a weight matrix");
    int tw = pl->s->transpose_w;
    int kin = tw ? wo->dim : wo->rows_dim, kout = tw ? wo->rows_dim : wo->dim;
    if (wo->heads == 1) {
        if (xo->heads * xo->dim != kin || o->heads * o->dim != kout)
            return rg_errf(err, "linear %d -> %d with a %dx%d weight", xo->heads * xo->dim,
                           o->heads * o->dim, kin, kout);
        return 0;
    }
    if (!fits(xo->heads, wo->heads) || xo->dim != kin || !fits(o->heads, wo->heads) || o->dim != kout)
        return rg_errf(err, "per-head linear %dx%d -> %dx%d with %d heads of %dx%d", xo->heads, xo->dim,
                       o->heads, o->dim, wo->heads, kin, kout);
    return 0;
}

static int plan_wgrad_rows(splan *pl, rg_err *err)
{
    const opnd *xo = &pl->in[0], *yo = &pl->in[1], *o = &pl->out;
    if (o->kind != IR_VAR_WEIGHT) return rg_errf(err, "wgrad must write a weight");
    if (o->rows_dim == 0) {
        pl->op = IR_OP_WGRAD;
        return plan_elementwise(pl, err);
    }
    if (!is_row_var(xo) || !is_row_var(yo)) return rg_errf(err, "wgrad of a matrix needs node/edge rows");
    if (o->heads == 1) {
        if (xo->heads * xo->dim != o->rows_dim || yo->heads * yo->dim != o->dim)
            return rg_errf(err, "wgrad outer product %dx%d into %dx%d", xo->heads * xo->dim,
                           yo->heads * yo->dim, o->rows_dim, o->dim);
        return 0;
    }
    if (!fits(xo->heads, o->heads) || !fits(yo->heads, o->heads) || xo->dim != o->rows_dim
        || yo->dim != o->dim)
        return rg_errf(err, "per-head wgrad %dx%d (x) %dx%d into %d heads of %dx%d", xo->heads, xo->dim,
                       yo->heads, yo->dim, o->heads, o->rows_dim, o->dim);
    return 0;
}

/* Picks, for every wheads-1 weight in a DOM_TYPE product, shared or split per head. */
static int plan_matmul(splan *pl, rg_err *err)
{
    const opnd *ops[3] = {&pl->in[0], &pl->in[1], &pl->out};
    int H = 1;
    for (int i = 0; i < 3; i++) {
        if (ops[i]->kind != IR_VAR_WEIGHT)
            return rg_errf(err, "%s in a type loop multiplies weights only", ir_op_name(pl->op));
        H = imax(H, ops[i]->heads);
    }
    for (int i = 0; i < 3; i++)
        if (!fits(ops[i]->heads, H)) return rg_errf(err, "weights with %d and %d heads", ops[i]->heads, H);
    pl->mm_heads = H;
    for (int mask = 0; mask < 8; mask++) {
        int ok = 1;
        for (int i = 0; i < 3; i++) {
            pl->mm_split[i] = (mask >> i) & 1;
            if (pl->mm_split[i] && (H == 1 || ops[i]->heads != 1)) ok = 0;
        }
        mview a, b, o;
        if (ok && mm_views(pl, 0, &a, &b, &o) == 0) return 0;
    }
    return rg_errf(err, "%s shapes do not agree: (%d heads, %dx%d), (%d heads, %dx%d) into (%d heads, %dx%d)",
                   ir_op_name(pl->op), ops[0]->heads, ops[0]->rows_dim, ops[0]->dim, ops[1]->heads,
                   ops[1]->rows_dim, ops[1]->dim, ops[2]->heads, ops[2]->rows_dim, ops[2]->dim);
}

static int arity(ir_opkind op)
{
    switch (op) {
    case IR_OP_EXP: case IR_OP_LEAKYRELU: case IR_OP_RELU: case IR_OP_COPY: case IR_OP_SLICE:
    case IR_OP_GELU: case IR_OP_SIGMOID: return 1;
    case IR_OP_NLL_GRAD: return 3;
    default: return 2;
    }
}

static iter_kind iteration_of(const ir_program *p, const ir_stmt *s)
{
    switch (s->dom) {
    case IR_DOM_EDGE: return ir_stmt_per_unique(p, s) ? IT_UNIQUE : IT_EDGES;
    case IR_DOM_NODE: return IT_NODES;
    case IR_DOM_TYPE: return IT_TYPES;
    default: return IT_GLOBAL;
    }
}

static int64_t iteration_rows(const hg_graph *g, iter_kind it)
{
    switch (it) {
    case IT_EDGES: return g->num_edges;
    case IT_UNIQUE: return g->num_unique;
    case IT_NODES: return g->num_nodes;
    case IT_TYPES: return g->num_etypes;
    default: return 1;
    }
}

static int choose_mode(splan *pl, rg_err *err)
{
    const opnd *o = &pl->out;
    if (pl->it == IT_TYPES || pl->it == IT_GLOBAL) {
        pl->mode = OUT_SERIAL;
        return 0;
    }
    if (o->kind == IR_VAR_WEIGHT || o->kind == IR_VAR_SCALAR) pl->mode = OUT_WACC;
    else if ((pl->it == IT_EDGES && o->kind == IR_VAR_EDGE && !o->compact) || pl->it == IT_NODES
             || (pl->it == IT_UNIQUE && o->kind == IR_VAR_EDGE))
        pl->mode = OUT_DIRECT;
    else
        pl->mode = OUT_SCATTER;
    if (pl->mode != OUT_DIRECT && !pl->s->accumulate)
        return rg_errf(err, "'%s' is written by many rows: it needs +=", pl->x->p->vars[o->var].name);
    if (pl->mode != OUT_DIRECT && pl->aliased)
        return rg_errf(err, "reads '%s', which it aggregates into", pl->x->p->vars[o->var].name);
    pl->ntargets = pl->x->rows[o->var];
    return 0;
}

static int plan_shapes(splan *pl, rg_err *err)
{
    switch (pl->op) {
    case IR_OP_LINEAR: return plan_linear(pl, err);
    case IR_OP_WGRAD:
        if (pl->it == IT_TYPES && pl->out.rows_dim > 0) return plan_matmul(pl, err);
        return plan_wgrad_rows(pl, err);
    case IR_OP_WEIGHT_MM:
        if (pl->it != IT_TYPES) return rg_errf(err, "weight_mm runs in a type loop");
        return plan_matmul(pl, err);
    case IR_OP_NLL_LOSS:
        if (pl->it != IT_GLOBAL || pl->in[0].kind != IR_VAR_NODE || pl->in[1].kind != IR_VAR_NODE
            || pl->in[1].heads * pl->in[1].dim != 1 || pl->out.kind != IR_VAR_SCALAR)
            return rg_errf(err, "nll_loss reads node logits and 1-wide labels into a scalar");
        return 0;
    case IR_OP_NLL_GRAD:
        if (pl->it != IT_NODES || pl->in[1].heads * pl->in[1].dim != 1 || pl->in[2].kind != IR_VAR_SCALAR
            || pl->out.heads * pl->out.dim != pl->in[0].heads * pl->in[0].dim)
            return rg_errf(err, "nll_grad maps node logits, 1-wide labels and the scalar dloss");
        return 0;
    case IR_OP_COPY:
        if (pl->in[0].kind != IR_VAR_WEIGHT && pl->out.kind != IR_VAR_WEIGHT
            && pl->in[0].heads * pl->in[0].dim == pl->out.heads * pl->out.dim) {
            pl->reshape = 1;
            return 0;
        }
        return plan_elementwise(pl, err);
    default:
        if ((int)pl->op < 0 || pl->op >= IR_OP__COUNT) return rg_errf(err, "unknown op %d", (int)pl->op);
        return plan_elementwise(pl, err);
    }
}

static int plan_stmt(ref_exec *x, int index, splan *pl, rg_err *err)
{
    const ir_program *p = x->p;
    const ir_stmt *s = &p->stmts[index];
    memset(pl, 0, sizeof *pl);
    pl->x = x;
    pl->s = s;
    pl->op = s->op;
    int rc = -1;
    if ((int)s->op < 0 || s->op >= IR_OP__COUNT) {
        rg_errf(err, "unknown op %d", (int)s->op);
        goto out;
    }
    if (s->nin != arity(s->op)) {
        rg_errf(err, "%s takes %d operands, has %d", ir_op_name(s->op), arity(s->op), s->nin);
        goto out;
    }
    if (s->out.var < 0 || s->out.var >= p->nvars || s->out.acc == IR_ACC_CONST) {
        rg_errf(err, "bad output operand");
        goto out;
    }
    pl->it = iteration_of(p, s);
    pl->nrows = iteration_rows(x->g, pl->it);
    pl->nin = s->nin;
    int nll = s->op == IR_OP_NLL_LOSS;
    if (resolve_opnd(x, &s->out, pl->it, 0, &pl->out, err) < 0) goto out;
    for (int i = 0; i < s->nin; i++) {
        if (resolve_opnd(x, &s->in[i], pl->it, nll, &pl->in[i], err) < 0) goto out;
        if (s->in[i].acc != IR_ACC_CONST && s->in[i].var == s->out.var) pl->aliased = 1;
    }
    pl->inv_nodes = 1.0 / (double)x->g->num_nodes;
    if (plan_shapes(pl, err) < 0 || choose_mode(pl, err) < 0) goto out;
    rc = 0;
out:
    if (rc < 0) rg_err_prefix(err, "%s: statement %d (%s, line %d)", p->name, index, ir_op_name(s->op), s->line);
    return rc;
}

/* ------------------------------------------------------------------ running a statement */

typedef struct stmt_run {
    splan *pl;
    double **priv;        /* OUT_WACC: per-thread accumulators (NULL: write the output) */
    /* OUT_SCATTER by owner: target t's rows are ids[ptr[t] .. ptr[t+1]) (ids NULL: the
     * positions themselves) */
    const int32_t *own_ptr, *own_ids;
    /* OUT_SCATTER chunk */
    int64_t chunk_lo;
    double *tmp;
    int64_t *tgt;
} stmt_run;

static void combine(double *dst, const double *src, int64_t n, int accumulate)
{
    if (accumulate)
        for (int64_t i = 0; i < n; i++) dst[i] += src[i];
    else
        memcpy(dst, src, (size_t)n * sizeof *dst);
}

/* LINEAR and WGRAD into a matrix run in groups of rows sharing one weight slice. */
static int batched(const splan *pl)
{
    if (pl->reshape || pl->aliased) return 0;
    return pl->op == IR_OP_LINEAR || (pl->op == IR_OP_WGRAD && pl->it != IT_TYPES && pl->out.rows_dim > 0);
}

static int64_t batch_key(const splan *pl, const rowctx *c)
{
    return pl->op == IR_OP_LINEAR ? opnd_row(&pl->in[1], c) : opnd_row(&pl->out, c);
}

/* Contexts of rows r, r+1, ... (below hi, at most BATCH) that share the weight slice. */
static int next_group(const splan *pl, int64_t r, int64_t hi, rowctx *cs)
{
    int n = 0;
    int64_t key = 0;
    for (; r < hi && n < BATCH; r++) {
        fill_ctx(pl->x, pl->it, r, &cs[n]);
        int64_t k = batch_key(pl, &cs[n]);
        if (n > 0 && k != key) break;
        key = k;
        n++;
    }
    return n;
}

static void rows_direct_batched(const splan *pl, int64_t lo, int64_t hi)
{
    int64_t w = pl->out.width;
    rowctx cs[BATCH];
    double *d[BATCH];
    for (int64_t r = lo; r < hi;) {
        int nb = next_group(pl, r, hi, cs);
        for (int b = 0; b < nb; b++) {
            d[b] = opnd_ptr(&pl->out, &cs[b]);
            if (!pl->s->accumulate) memset(d[b], 0, (size_t)w * sizeof(double));
        }
        k_linear_rows(pl, cs, nb, d);
        r += nb;
    }
}

static void rows_direct(void *arg, int tid, int64_t lo, int64_t hi)
{
    stmt_run *sr = arg;
    const splan *pl = sr->pl;
    (void)tid;
    if (batched(pl)) {
        rows_direct_batched(pl, lo, hi);
        return;
    }
    int64_t w = pl->out.width;
    int acc = pl->s->accumulate;
    double *scratch = pl->aliased ? rg_xmalloc((size_t)w * sizeof *scratch) : NULL;
    rowctx c;
    for (int64_t r = lo; r < hi; r++) {
        fill_ctx(pl->x, pl->it, r, &c);
        double *dst = opnd_ptr(&pl->out, &c);
        if (scratch) {
            memset(scratch, 0, (size_t)w * sizeof *scratch);
            row_kernel(pl, &c, scratch);
            combine(dst, scratch, w, acc);
        } else {
            if (!acc) memset(dst, 0, (size_t)w * sizeof *dst);
            row_kernel(pl, &c, dst);
        }
    }
    free(scratch);
}

static void rows_wacc(void *arg, int tid, int64_t lo, int64_t hi)
{
    stmt_run *sr = arg;
    const splan *pl = sr->pl;
    double *base = sr->priv ? sr->priv[tid] : pl->out.base;
    if (batched(pl)) {
        rowctx cs[BATCH];
        wgrad_buf buf;
        wgrad_buf_init(&buf, pl->out.rows_dim, pl->out.dim);
        for (int64_t r = lo; r < hi;) {
            int nb = next_group(pl, r, hi, cs);
            k_wgrad_rows_n(pl, cs, nb, base + opnd_row(&pl->out, &cs[0]) * pl->out.width, &buf);
            r += nb;
        }
        wgrad_buf_free(&buf);
        return;
    }
    rowctx c;
    for (int64_t r = lo; r < hi; r++) {
        fill_ctx(pl->x, pl->it, r, &c);
        row_kernel(pl, &c, base + opnd_row(&pl->out, &c) * pl->out.width);
    }
}

static void reduce_priv(void *arg, int tid, int64_t lo, int64_t hi)
{
    stmt_run *sr = arg;
    (void)tid;
    int nt = sr->pl->x->nthreads;
    double *out = sr->pl->out.base;
    for (int t = 0; t < nt; t++)
        for (int64_t i = lo; i < hi; i++) out[i] += sr->priv[t][i];
}

static void chunk_compute(void *arg, int tid, int64_t lo, int64_t hi)
{
    stmt_run *sr = arg;
    const splan *pl = sr->pl;
    int64_t w = pl->out.width;
    (void)tid;
    if (batched(pl)) {
        rowctx cs[BATCH];
        double *d[BATCH];
        for (int64_t i = lo; i < hi;) {
            int nb = next_group(pl, sr->chunk_lo + i, sr->chunk_lo + hi, cs);
            for (int b = 0; b < nb; b++) {
                d[b] = sr->tmp + (i + b) * w;
                memset(d[b], 0, (size_t)w * sizeof(double));
                sr->tgt[i + b] = opnd_row(&pl->out, &cs[b]);
            }
            k_linear_rows(pl, cs, nb, d);
            i += nb;
        }
        return;
    }
    rowctx c;
    for (int64_t i = lo; i < hi; i++) {
        fill_ctx(pl->x, pl->it, sr->chunk_lo + i, &c);
        double *t = sr->tmp + i * w;
        memset(t, 0, (size_t)w * sizeof *t);
        row_kernel(pl, &c, t);
        sr->tgt[i] = opnd_row(&pl->out, &c);
    }
}

/* Thread tid adds the chunk rows whose target it owns: no two threads touch one row. */
static void chunk_scatter(void *arg, int tid, int64_t lo, int64_t hi)
{
    stmt_run *sr = arg;
    const splan *pl = sr->pl;
    int nt = pl->x->nthreads;
    int64_t tlo = pl->ntargets * tid / nt, thi = pl->ntargets * (tid + 1) / nt, w = pl->out.width;
    (void)lo; (void)hi;
    int64_t n = sr->chunk_lo + SCATTER_CHUNK < pl->nrows ? SCATTER_CHUNK : pl->nrows - sr->chunk_lo;
    for (int64_t i = 0; i < n; i++) {
        int64_t t = sr->tgt[i];
        if (t < tlo || t >= thi) continue;
        double *dst = pl->out.base + t * w;
        const double *src = sr->tmp + i * w;
        for (int64_t k = 0; k < w; k++) dst[k] += src[k];
    }
}

/* First t in [0, n] with ptr[t] >= pos (ptr ascending, ptr[n] = total). */
static int64_t first_target_at(const int32_t *ptr, int64_t n, int64_t pos)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (ptr[mid] >= pos) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* The thread whose position range holds ptr[t] computes every row of target t, in
 * order, straight into it: no temporary, no two threads on one row, and the same sums
 * whatever the thread count. */
static void rows_owner(void *arg, int tid, int64_t lo, int64_t hi)
{
    stmt_run *sr = arg;
    const splan *pl = sr->pl;
    int64_t n = pl->ntargets, t0 = first_target_at(sr->own_ptr, n, lo), t1 = first_target_at(sr->own_ptr, n, hi);
    if (hi >= pl->nrows) t1 = n;
    rowctx c;
    (void)tid;
    for (int64_t t = t0; t < t1; t++) {
        double *dst = pl->out.base + t * pl->out.width;
        for (int64_t q = sr->own_ptr[t]; q < sr->own_ptr[t + 1]; q++) {
            fill_ctx(pl->x, pl->it, sr->own_ids ? sr->own_ids[q] : q, &c);
            row_kernel(pl, &c, dst);
        }
    }
}

/* Which grouping of rows by target a scatter has (NULL ptr: none, use chunks). */
static void owner_lists(stmt_run *sr)
{
    const splan *pl = sr->pl;
    const hg_graph *g = pl->x->g;
    sr->own_ptr = sr->own_ids = NULL;
    if (pl->it == IT_EDGES && pl->out.acc == IR_ACC_DST) {
        sr->own_ptr = g->in_ptr;
        sr->own_ids = g->in_eid;
    } else if (pl->it == IT_EDGES && pl->out.acc == IR_ACC_SRC) {
        sr->own_ptr = g->out_ptr;
        sr->own_ids = g->out_eid;
    } else if (pl->it == IT_EDGES && pl->out.compact) {
        sr->own_ptr = pl->x->compact_edge_ptr;
    } else if (pl->it == IT_UNIQUE && pl->out.acc == IR_ACC_SRC) {
        sr->own_ptr = pl->x->src_unique_ptr;
        sr->own_ids = pl->x->src_unique;
    }
}

static void run_scatter(stmt_run *sr)
{
    /* groups of rows sharing a weight (LINEAR) keep their order: chunks, then scatter */
    if (!batched(sr->pl)) {
        owner_lists(sr);
        if (sr->own_ptr) {
            ref_parallel_for(sr->pl->x->nthreads, sr->pl->nrows, rows_owner, sr);
            return;
        }
    }
    splan *pl = sr->pl;
    sr->tmp = alloc_values((int64_t)SCATTER_CHUNK * pl->out.width);
    sr->tgt = rg_xmalloc((size_t)SCATTER_CHUNK * sizeof *sr->tgt);
    for (sr->chunk_lo = 0; sr->chunk_lo < pl->nrows; sr->chunk_lo += SCATTER_CHUNK) {
        int64_t n = pl->nrows - sr->chunk_lo < SCATTER_CHUNK ? pl->nrows - sr->chunk_lo : SCATTER_CHUNK;
        ref_parallel_for(pl->x->nthreads, n, chunk_compute, sr);
        /* every thread scans the whole chunk for the targets it owns */
        parallel_threads(pl->x->nthreads, chunk_scatter, sr);
    }
    free(sr->tmp);
    free(sr->tgt);
}

static void run_serial(splan *pl)
{
    int64_t w = pl->out.width;
    double *scratch = rg_xmalloc((size_t)w * sizeof *scratch);
    rowctx c;
    for (int64_t r = 0; r < pl->nrows; r++) {
        fill_ctx(pl->x, pl->it, r, &c);
        memset(scratch, 0, (size_t)w * sizeof *scratch);
        row_kernel(pl, &c, scratch);
        combine(opnd_ptr(&pl->out, &c), scratch, w, pl->s->accumulate);
    }
    free(scratch);
}

/* Each thread allocates and zeroes its own accumulator: the first touch stays parallel. */
static void alloc_priv(void *arg, int tid, int64_t lo, int64_t hi)
{
    stmt_run *sr = arg;
    int64_t count = sr->pl->x->rows[sr->pl->out.var] * sr->pl->out.width;
    (void)lo; (void)hi;
    sr->priv[tid] = alloc_values(count);
    memset(sr->priv[tid], 0, (size_t)count * sizeof(double));
}

static void run_wacc(stmt_run *sr)
{
    splan *pl = sr->pl;
    int nt = pl->x->nthreads;
    if (nt <= 1 || pl->nrows < 64) {
        rows_wacc(sr, 0, 0, pl->nrows);
        return;
    }
    sr->priv = rg_xmalloc((size_t)nt * sizeof *sr->priv);
    parallel_threads(nt, alloc_priv, sr);
    int64_t count = pl->x->rows[pl->out.var] * pl->out.width;
    ref_parallel_for(nt, pl->nrows, rows_wacc, sr);
    ref_parallel_for(nt, count, reduce_priv, sr);
    for (int t = 0; t < nt; t++) free(sr->priv[t]);
    free(sr->priv);
    sr->priv = NULL;
}

/* Packs slice s of a LINEAR weight, every head (B = W, or W^T with transpose_w). */
typedef struct pack_job {
    const splan *pl;
    packed_w *pw;
} pack_job;

static void pack_range(void *arg, int tid, int64_t lo, int64_t hi)
{
    const pack_job *j = arg;
    const opnd *wo = &j->pl->in[1];
    int tw = j->pl->s->transpose_w, k = wo->rows_dim, n = wo->dim;
    (void)tid;
    for (int64_t q = lo; q < hi; q++) {   /* q = slice * heads + head */
        const double *w = wo->base + q * (int64_t)k * n;
        if (tw) pack_strided(w, 1, n, n, k, j->pw->p + q * j->pw->head);
        else pack_strided(w, n, 1, k, n, j->pw->p + q * j->pw->head);
    }
}

static void pack_weights(splan *pl, packed_w *pw)
{
    const opnd *wo = &pl->in[1];
    int tw = pl->s->transpose_w;
    pw->kd = tw ? wo->dim : wo->rows_dim;
    pw->n = tw ? wo->rows_dim : wo->dim;
    pw->head = (int64_t)pw->kd * round_up(pw->n, PANEL);
    int64_t nq = pl->x->rows[wo->var] * wo->heads;
    pw->p = alloc_values(nq * pw->head);
    pack_job j = {pl, pw};
    ref_parallel_for(pl->x->nthreads, nq, pack_range, &j);
    pl->wpack = pw;
}

static void run_stmt(splan *pl)
{
    stmt_run sr = {.pl = pl};
    packed_w pw = {0};
    if (pl->op == IR_OP_LINEAR) pack_weights(pl, &pw);
    switch (pl->mode) {
    case OUT_DIRECT: ref_parallel_for(pl->x->nthreads, pl->nrows, rows_direct, &sr); break;
    case OUT_SCATTER: run_scatter(&sr); break;
    case OUT_WACC: run_wacc(&sr); break;
    case OUT_SERIAL: run_serial(pl); break;
    }
    free(pw.p);
    pl->wpack = NULL;
}

/* ------------------------------------------------------------------ data */

static uint64_t var_seed(const ref_exec *x, const ir_var *v)
{
    return rg_fnv1a64(v->name, strlen(v->name), RG_FNV_SEED ^ (x->seed * 0x9E3779B97F4A7C15ULL));
}

/* Fills a[0..n) with v on every thread. Big arrays are first touched here, and the kernel
 * zeroes each new page in the thread that touches it: done on one thread, that zeroing was
 * half of a dims-128 HGT training reference's CPU time. */
typedef struct const_fill {
    double *a;
    double v;
} const_fill;

static void const_range(void *arg, int tid, int64_t lo, int64_t hi)
{
    const const_fill *f = arg;
    (void)tid;
    for (int64_t i = lo; i < hi; i++) f->a[i] = f->v;
}

#define FILL_SERIAL_BELOW (1 << 16)

static void fill_const(const ref_exec *x, double *a, int64_t n, double v)
{
    const_fill f = {a, v};
    ref_parallel_for(n < FILL_SERIAL_BELOW ? 1 : x->nthreads, n, const_range, &f);
}

/* The seeded stream is sequential; its pages are touched on every thread first. */
static void fill_uniform(const ref_exec *x, double *a, int64_t n, uint64_t seed, double lo, double hi)
{
    if (n >= FILL_SERIAL_BELOW) fill_const(x, a, n, 0.0);
    rg_rng r;
    rg_rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++) a[i] = lo + (hi - lo) * rg_rng_uniform(&r);
}

/* e.norm = 1 / c_{dst, etype}: edges are grouped by etype, so count dst ids per group. */
static void fill_edge_norm(const hg_graph *g, double *norm)
{
    int32_t *count = rg_xcalloc((size_t)g->num_nodes + 1, sizeof *count);
    for (int32_t r = 0; r < g->num_etypes; r++) {
        int32_t lo = g->etype_ptr[r], hi = g->etype_ptr[r + 1];
        for (int32_t e = lo; e < hi; e++) count[g->dst[e]]++;
        for (int32_t e = lo; e < hi; e++) norm[e] = 1.0 / count[g->dst[e]];
        for (int32_t e = lo; e < hi; e++) count[g->dst[e]] = 0;
    }
    free(count);
}

static int label_classes(const ir_program *p, int var)
{
    for (int i = 0; i < p->nstmts; i++) {
        const ir_stmt *s = &p->stmts[i];
        if (s->op == IR_OP_NLL_LOSS && s->nin > 1 && s->in[1].var == var && s->in[0].var >= 0
            && s->in[0].var < p->nvars)
            return (int)ir_var_row_width(&p->vars[s->in[0].var]);
    }
    return p->dims.out_dim > 0 ? p->dims.out_dim : 1;
}

/* Rows of a relabelled graph's node or edge data: row r takes the row its node or edge had in
 * the graph as given (ref_options), so relabelling moves data and changes none of it. */
static void follow_relabelling(const ref_exec *x, const ir_var *v, double *a, int64_t rows, int64_t width)
{
    const int32_t *old_of = v->kind == IR_VAR_NODE ? x->node_old_of
                            : v->kind == IR_VAR_EDGE && v->layout == IR_LAYOUT_VANILLA ? x->edge_old_of : NULL;
    if (!old_of) return;
    double *orig = rg_xmalloc(((size_t)(rows * width) + 1) * sizeof *orig);
    memcpy(orig, a, (size_t)(rows * width) * sizeof *orig);
    for (int64_t r = 0; r < rows; r++) memcpy(a + r * width, orig + old_of[r] * width, (size_t)width * sizeof *a);
    free(orig);
}

static int fill_var(ref_exec *x, int id, rg_err *err)
{
    const ir_var *v = &x->p->vars[id];
    double *a = x->val[id];
    int64_t n = x->rows[id] * x->width[id];
    uint64_t seed = var_seed(x, v);
    switch (v->role) {
    case IR_ROLE_INPUT:
        fill_uniform(x, a, n, seed, -x->input_scale, x->input_scale);
        follow_relabelling(x, v, a, x->rows[id], x->width[id]);
        return 0;
    case IR_ROLE_PARAM: {
        double fan_in = v->rows_dim > 0 ? v->rows_dim : v->dim, fan_out = v->rows_dim > 0 ? v->dim : 1;
        double lim = sqrt(6.0 / (fan_in + fan_out));
        fill_uniform(x, a, n, seed, -lim, lim);
        return 0;
    }
    case IR_ROLE_LABEL: {
        int classes = label_classes(x->p, id);
        rg_rng r;
        rg_rng_seed(&r, seed);
        for (int64_t i = 0; i < n; i++) a[i] = (double)rg_rng_below(&r, (uint64_t)classes);
        follow_relabelling(x, v, a, x->rows[id], x->width[id]);
        return 0;
    }
    case IR_ROLE_GRAPH:
        if (v->kind == IR_VAR_EDGE && v->layout == IR_LAYOUT_VANILLA && v->heads * v->dim == 1
            && strstr(v->name, "norm")) {
            fill_edge_norm(x->g, a);
            return 0;
        }
        return rg_errf(err, "%s: unknown graph-derived input '%s' (known: a 1-wide edge 'norm')",
                       x->p->name, v->name);
    default:
        /* temporaries: reset by each run range */
        fill_const(x, a, n, v->zero_init ? 0.0 : NAN);
        return 0;
    }
}

static int is_data_role(ir_role r)
{
    return r == IR_ROLE_INPUT || r == IR_ROLE_PARAM || r == IR_ROLE_GRAPH || r == IR_ROLE_LABEL;
}

/* compact_edge_ptr: edges are sorted by (etype, src), so each compact row's edges are
 * contiguous; src_unique: compact rows grouped by their source node (counting sort). */
static void build_owner_maps(ref_exec *x)
{
    const hg_graph *g = x->g;
    int32_t U = g->num_unique, N = g->num_nodes;
    x->compact_edge_ptr = rg_xcalloc((size_t)U + 1, sizeof(int32_t));
    for (int32_t e = 0; e < g->num_edges; e++) x->compact_edge_ptr[g->edge_compact[e] + 1]++;
    for (int32_t u = 0; u < U; u++) x->compact_edge_ptr[u + 1] += x->compact_edge_ptr[u];
    for (int32_t e = 1; e < g->num_edges; e++)
        RG_ASSERT(g->edge_compact[e] == g->edge_compact[e - 1] || g->edge_compact[e] == g->edge_compact[e - 1] + 1);
    x->src_unique_ptr = rg_xcalloc((size_t)N + 1, sizeof(int32_t));
    x->src_unique = rg_xmalloc(((size_t)U + 1) * sizeof(int32_t));
    for (int32_t u = 0; u < U; u++) x->src_unique_ptr[g->unique_src[u] + 1]++;
    for (int32_t n = 0; n < N; n++) x->src_unique_ptr[n + 1] += x->src_unique_ptr[n];
    int32_t *fill = rg_xmalloc(((size_t)N + 1) * sizeof *fill);
    memcpy(fill, x->src_unique_ptr, (size_t)N * sizeof *fill);
    for (int32_t u = 0; u < U; u++) x->src_unique[fill[g->unique_src[u]]++] = u;
    free(fill);
}

/* ------------------------------------------------------------------ public API */

ref_exec *ref_new(const ir_program *p, const hg_graph *g, const ref_options *opt, rg_err *err)
{
    ref_exec *x = rg_xcalloc(1, sizeof *x);
    x->p = p;
    x->g = g;
    x->seed = opt && opt->seed ? opt->seed : 1;
    x->node_old_of = opt ? opt->node_old_of : NULL;
    x->input_scale = opt && opt->input_scale > 0 ? opt->input_scale : 1.0;
    x->edge_old_of = opt ? opt->edge_old_of : NULL;
    x->nthreads = opt && opt->nthreads > 0 ? (opt->nthreads > MAX_THREADS ? MAX_THREADS : opt->nthreads)
                                           : ref_default_threads();
    x->node_ntype = rg_xmalloc(((size_t)g->num_nodes + 1) * sizeof *x->node_ntype);
    for (int32_t t = 0; t < g->num_ntypes; t++)
        for (int32_t n = g->ntype_ptr[t]; n < g->ntype_ptr[t + 1]; n++) x->node_ntype[n] = t;
    x->unique_etype = rg_xmalloc(((size_t)g->num_unique + 1) * sizeof *x->unique_etype);
    for (int32_t r = 0; r < g->num_etypes; r++)
        for (int32_t u = g->unique_etype_ptr[r]; u < g->unique_etype_ptr[r + 1]; u++) x->unique_etype[u] = r;
    build_owner_maps(x);
    int nv = p->nvars;
    x->val = rg_xcalloc((size_t)nv + 1, sizeof *x->val);
    x->rows = rg_xcalloc((size_t)nv + 1, sizeof *x->rows);
    x->width = rg_xcalloc((size_t)nv + 1, sizeof *x->width);
    for (int i = 0; i < nv; i++) {
        const ir_var *v = &p->vars[i];
        if (v->heads < 1 || v->dim < 1 || v->rows_dim < 0) {
            rg_errf(err, "%s: variable '%s' has a bad shape", p->name, v->name);
            goto fail;
        }
        x->rows[i] = ir_var_rows(v, g->num_nodes, g->num_edges, g->num_unique, g->num_ntypes, g->num_etypes);
        x->width[i] = ir_var_row_width(v);
        x->val[i] = alloc_values(x->rows[i] * x->width[i] + 1);
        if (fill_var(x, i, err) < 0) goto fail;
    }
    for (int i = 0; i < p->nstmts; i++) {
        splan pl;
        if (plan_stmt(x, i, &pl, err) < 0) goto fail;
    }
    return x;
fail:
    ref_free(x);
    return NULL;
}

void ref_free(ref_exec *x)
{
    if (!x) return;
    if (x->val)
        for (int i = 0; i < x->p->nvars; i++) free(x->val[i]);
    free(x->val);
    free(x->rows);
    free(x->width);
    free(x->node_ntype);
    free(x->unique_etype);
    free(x->compact_edge_ptr);
    free(x->src_unique_ptr);
    free(x->src_unique);
    free(x->flips);
    free(x);
}

/* ------------------------------------------------------------------ kinks (ref.h) */

static int is_kink_op(ir_opkind op) { return op == IR_OP_LEAKYRELU_GRAD || op == IR_OP_RELU_GRAD; }

/* Root mean square of all values of a variable: the scale of its float32 rounding error. */
static double var_rms(const ref_exec *x, int var)
{
    const double *v = x->val[var];
    int64_t n = x->rows[var] * x->width[var];
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += v[i] * v[i];
    return n > 0 ? sqrt(s / (double)n) : 0.0;
}

/* rel x rms, or 0 (nothing is near the kink) when that is not a positive number. */
static double kink_threshold(double rel, double rms)
{
    double t = rel * rms;
    return t > 0 ? t : 0.0;
}

/* Whether any element of the row's selector (in[1], the forward input) has |x| < thr. */
static int row_near_kink(const splan *pl, const rowctx *c, double thr)
{
    const opnd *b = &pl->in[1];
    const double *pb = opnd_ptr(b, c);
    for (int h = 0; h < pl->H; h++)
        for (int d = 0; d < pl->D; d++)
            if (fabs(pb[h * b->sh + d * b->sd]) < thr) return 1;
    return 0;
}

/* Lists statement `index`'s near-kink rows into out (at most max of them, counting from
 * *count); rms caches each selector variable's RMS (negative: not computed yet). */
static void stmt_kinks(ref_exec *x, int index, double rel, double *rms, ref_kink *out, int max, int *count)
{
    splan pl;
    rg_err err;
    if (plan_stmt(x, index, &pl, &err) < 0) RG_DIE("%s", err.msg);  /* ref_new planned it once already */
    int sel = pl.in[1].var;
    if (sel < 0) return;
    if (rms[sel] < 0) rms[sel] = var_rms(x, sel);
    double thr = kink_threshold(rel, rms[sel]);
    if (thr <= 0) return;
    rowctx c;
    for (int64_t r = 0; r < pl.nrows; r++) {
        fill_ctx(x, pl.it, r, &c);
        if (!row_near_kink(&pl, &c, thr)) continue;
        if (*count < max) out[*count] = (ref_kink){index, r};
        if (*count < INT_MAX) (*count)++;
    }
}

int ref_find_kinks(ref_exec *x, double rel, ref_kink *out, int max)
{
    const ir_program *p = x->p;
    RG_ASSERT(max >= 0 && (max == 0 || out));
    double *rms = rg_xmalloc(((size_t)p->nvars + 1) * sizeof *rms);
    for (int v = 0; v < p->nvars; v++) rms[v] = -1;
    int count = 0;
    for (int i = 0; i < p->nstmts; i++)
        if (is_kink_op(p->stmts[i].op)) stmt_kinks(x, i, rel, rms, out, max, &count);
    free(rms);
    return count;
}

static int kink_cmp(const void *a, const void *b)
{
    const ref_kink *u = a, *v = b;
    if (u->stmt != v->stmt) return u->stmt < v->stmt ? -1 : 1;
    return u->row < v->row ? -1 : u->row > v->row;
}

void ref_set_flips(ref_exec *x, const ref_kink *k, int n, double rel)
{
    RG_ASSERT(n >= 0 && (n == 0 || k));
    for (int i = 0; i < n; i++)
        RG_ASSERT(k[i].stmt >= 0 && k[i].stmt < x->p->nstmts && is_kink_op(x->p->stmts[k[i].stmt].op)
                  && k[i].row >= 0);
    free(x->flips);
    x->flips = NULL;
    x->nflips = n;
    x->flip_rel = rel;
    if (n == 0) return;
    x->flips = rg_xmalloc((size_t)n * sizeof *x->flips);
    memcpy(x->flips, k, (size_t)n * sizeof *k);
    qsort(x->flips, (size_t)n, sizeof *x->flips, kink_cmp);
}

/* Points a (Leaky)ReLU gradient's plan at its flipped rows, with the threshold from the
 * selector's values now (the forward values, which a backward run does not change). */
static void plan_flips(ref_exec *x, int index, splan *pl)
{
    if (x->nflips == 0 || !is_kink_op(pl->op) || pl->in[1].var < 0) return;
    int lo = 0, hi;
    while (lo < x->nflips && x->flips[lo].stmt < index) lo++;
    for (hi = lo; hi < x->nflips && x->flips[hi].stmt == index; hi++) {}
    if (hi == lo) return;
    pl->flip = x->flips + lo;
    pl->nflip = hi - lo;
    pl->flip_thr = kink_threshold(x->flip_rel, var_rms(x, pl->in[1].var));
}

/* Resets what statements [first, last) write: zero_init variables to 0, the others to NaN. */
static int reset_written(ref_exec *x, int first, int last, rg_err *err)
{
    const ir_program *p = x->p;
    char *reset = rg_xcalloc((size_t)p->nvars + 1, 1);
    int rc = 0;
    for (int i = first; i < last && rc == 0; i++) {
        int v = p->stmts[i].out.var;
        if (v < 0 || v >= p->nvars || reset[v] || is_data_role(p->vars[v].role)) continue;
        reset[v] = 1;
        if (fill_var(x, v, err) < 0) rc = -1;
    }
    free(reset);
    return rc;
}

/* Runs one statement on the values as they are. RGNN_REF_PROFILE=1: one line per statement
 * with its time on stderr. */
static int exec_stmt(ref_exec *x, int i, int profile, rg_err *err)
{
    splan pl;
    if (plan_stmt(x, i, &pl, err) < 0) return -1;
    plan_flips(x, i, &pl);
    double t0 = profile ? rg_now() : 0;
    run_stmt(&pl);
    if (profile) {
        static const char *const modes[] = {"direct", "scatter", "wacc", "serial"};
        fprintf(stderr, "ref: %3d %-14s %-7s %9lld rows %8.4f s  ", i, ir_op_name(pl.op), modes[pl.mode],
                (long long)pl.nrows, rg_now() - t0);
        ir_print_stmt(x->p, i, stderr);
        fputc('\n', stderr);
    }
    return 0;
}

int ref_run_range(ref_exec *x, int first, int last, rg_err *err)
{
    const ir_program *p = x->p;
    if (first < 0 || last > p->nstmts || first > last)
        return rg_errf(err, "%s: statement range [%d, %d) outside [0, %d)", p->name, first, last, p->nstmts);
    if (reset_written(x, first, last, err)) return -1;
    int profile = getenv("RGNN_REF_PROFILE") != NULL;
    for (int i = first; i < last; i++)
        if (exec_stmt(x, i, profile, err)) return -1;
    return 0;
}

int ref_reset_all(ref_exec *x, rg_err *err) { return reset_written(x, 0, x->p->nstmts, err); }

int ref_run_stmt(ref_exec *x, int stmt, rg_err *err)
{
    if (stmt < 0 || stmt >= x->p->nstmts)
        return rg_errf(err, "%s: statement %d outside [0, %d)", x->p->name, stmt, x->p->nstmts);
    return exec_stmt(x, stmt, getenv("RGNN_REF_PROFILE") != NULL, err);
}

int ref_run(ref_exec *x, rg_err *err) { return ref_run_range(x, 0, x->p->nstmts, err); }

int ref_run_forward(ref_exec *x, rg_err *err) { return ref_run_range(x, 0, x->p->nforward, err); }

double *ref_values(ref_exec *x, int var)
{
    RG_ASSERT(var >= 0 && var < x->p->nvars);
    return x->val[var];
}

int64_t ref_count(const ref_exec *x, int var)
{
    RG_ASSERT(var >= 0 && var < x->p->nvars);
    return x->rows[var] * x->width[var];
}

int64_t ref_rows(const ref_exec *x, int var)
{
    RG_ASSERT(var >= 0 && var < x->p->nvars);
    return x->rows[var];
}

double *ref_values_by_name(ref_exec *x, const char *name, int64_t *count)
{
    int id = ir_find_var(x->p, name);
    if (id < 0) return NULL;
    if (count) *count = ref_count(x, id);
    return x->val[id];
}

void ref_refill(ref_exec *x, int var)
{
    RG_ASSERT(var >= 0 && var < x->p->nvars);
    rg_err err;
    if (fill_var(x, var, &err) < 0) RG_DIE("%s", err.msg);  /* ref_new filled it once already */
}

double ref_loss(ref_exec *x)
{
    return x->p->loss >= 0 ? x->val[x->p->loss][0] : NAN;
}

int ref_nthreads(const ref_exec *x) { return x->nthreads; }

/* ------------------------------------------------------------------ conversion */

void ref_to_f32(ref_exec *x, int var, float *out)
{
    const double *v = ref_values(x, var);
    int64_t n = ref_count(x, var);
    for (int64_t i = 0; i < n; i++) out[i] = (float)v[i];
}
