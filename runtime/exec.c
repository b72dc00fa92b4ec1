/* Runs a variant's launch plan on the GPU: graph structures uploaded once, kernels compiled
 * in parallel and loaded, every tensor allocated once, arguments bound, launched and timed. */
#include "runtime/exec.h"
#include "runtime/prof.h"
#include "codegen/vartype.h"

#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int64_t kx_size(const hg_graph *g, int id)
{
    switch (id) {
    case KS_NODES: return g->num_nodes;
    case KS_EDGES: return g->num_edges;
    case KS_UNIQUE: return g->num_unique;
    case KS_NTYPES: return g->num_ntypes;
    case KS_ETYPES: return g->num_etypes;
    default: RG_DIE("unknown size id %d", id);
    }
}

/* ---- graph ---- */

static const int32_t *segments(const hg_graph *g, int rowset, int *nseg, int32_t *one)
{
    switch (rowset) {
    case KR_EDGES: *nseg = g->num_etypes; return g->etype_ptr;
    case KR_UNIQUE: *nseg = g->num_etypes; return g->unique_etype_ptr;
    case KR_NODES_BY_NTYPE: *nseg = g->num_ntypes; return g->ntype_ptr;
    case KR_IN_EDGES: *nseg = g->num_nodes; return g->in_ptr;
    case KR_NODES_ALL:
        one[0] = 0;
        one[1] = g->num_nodes;
        *nseg = 1;
        return one;
    default: RG_DIE("bad row set %d", rowset);
    }
}

int kx_tile_table(const hg_graph *g, int rowset, int rows_per_tile, int **type, int **row0)
{
    int nseg;
    int32_t one[2];
    const int32_t *ptr = segments(g, rowset, &nseg, one);
    int n = 0;
    for (int s = 0; s < nseg; s++) n += (ptr[s + 1] - ptr[s] + rows_per_tile - 1) / rows_per_tile;
    *type = rg_xmalloc((size_t)(n ? n : 1) * sizeof(int));
    *row0 = rg_xmalloc((size_t)(n ? n : 1) * sizeof(int));
    int k = 0;
    for (int s = 0; s < nseg; s++)
        for (int r = ptr[s]; r < ptr[s + 1]; r += rows_per_tile) {
            (*type)[k] = s;
            (*row0)[k++] = r;
        }
    return n;
}

static int upload_array(kx_graph *kg, kp_graph_array a, const int32_t *host, size_t count, rg_err *err)
{
    size_t bytes = count * sizeof(int32_t);
    if (krt_alloc(&kg->arr[a], bytes ? bytes : 4, err)) return -1;
    if (bytes && krt_upload(kg->arr[a], host, bytes, err)) {
        krt_free(kg->arr[a]);   /* a lazily added array must not look uploaded */
        kg->arr[a] = NULL;
        return -1;
    }
    return 0;
}

int kx_graph_upload(const hg_graph *g, kx_graph *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    out->g = g;
    int32_t *node_ntype = rg_xmalloc((size_t)g->num_nodes * sizeof(int32_t));
    for (int t = 0; t < g->num_ntypes; t++)
        for (int v = g->ntype_ptr[t]; v < g->ntype_ptr[t + 1]; v++) node_ntype[v] = t;
    int32_t *unique_etype = rg_xmalloc((size_t)(g->num_unique ? g->num_unique : 1) * sizeof(int32_t));
    for (int r = 0; r < g->num_etypes; r++)
        for (int u = g->unique_etype_ptr[r]; u < g->unique_etype_ptr[r + 1]; u++) unique_etype[u] = r;
    size_t E = (size_t)g->num_edges, N = (size_t)g->num_nodes, R = (size_t)g->num_etypes;
    const struct {
        kp_graph_array a;
        const int32_t *host;
        size_t count;
    } up[] = {
        {KG_SRC, g->src, E}, {KG_DST, g->dst, E}, {KG_ETYPE, g->etype, E}, {KG_ETYPE_PTR, g->etype_ptr, R + 1},
        {KG_IN_PTR, g->in_ptr, N + 1}, {KG_IN_EID, g->in_eid, E}, {KG_OUT_PTR, g->out_ptr, N + 1},
        {KG_OUT_EID, g->out_eid, E}, {KG_UNIQUE_SRC, g->unique_src, (size_t)g->num_unique},
        {KG_UNIQUE_ETYPE_PTR, g->unique_etype_ptr, R + 1}, {KG_EDGE_COMPACT, g->edge_compact, E},
        {KG_NTYPE_PTR, g->ntype_ptr, (size_t)g->num_ntypes + 1}, {KG_ETYPE_SRC_NTYPE, g->etype_src, R},
        {KG_ETYPE_DST_NTYPE, g->etype_dst, R}, {KG_NODE_NTYPE, node_ntype, N},
        {KG_UNIQUE_ETYPE, unique_etype, (size_t)g->num_unique},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof up / sizeof *up && !rc; i++) {
        rc = upload_array(out, up[i].a, up[i].host, up[i].count, err);
        out->base_bytes += up[i].count * sizeof(int32_t);   /* the lazily added arrays are counted per plan */
    }
    free(node_ntype);
    free(unique_etype);
    if (rc) {
        kx_graph_free(out);
        rg_err_prefix(err, "uploading graph %s", g->name);
        return -1;
    }
    return 0;
}

/* Per-edge rows of `row_bytes` each, row q of the copy being row in_eid[q]: the one gather both
 * traversal-ordered kinds (graph arrays, graph-constant variables) are made by. Caller frees. */
static void *gather_in_order(const hg_graph *g, const void *rows, size_t row_bytes)
{
    size_t E = (size_t)g->num_edges;
    char *out = rg_xmalloc(E * row_bytes > 0 ? E * row_bytes : 1);
    for (size_t q = 0; q < E; q++)
        memcpy(out + q * row_bytes, (const char *)rows + (size_t)g->in_eid[q] * row_bytes, row_bytes);
    return out;
}

int32_t *kx_in_order_array(const hg_graph *g, kp_graph_array a)
{
    RG_ASSERT(kp_graph_array_in_order(a));
    const int32_t *x = a == KG_IN_SRC ? g->src : a == KG_IN_ETYPE ? g->etype : a == KG_IN_DST ? g->dst
                                                                            : g->edge_compact;
    return gather_in_order(g, x, sizeof(int32_t));
}

double *kx_in_order_values(const hg_graph *g, const double *rows, int64_t width)
{
    return gather_in_order(g, rows, (size_t)width * sizeof(double));
}

/* Uploads a traversal-ordered array the first time a plan binds it: a variant that never walks
 * the dst-sorted order does not pay its E ints of device memory. */
static int ensure_in_order(kx_graph *kg, kp_graph_array a, rg_err *err)
{
    if (kg->arr[a]) return 0;
    int32_t *host = kx_in_order_array(kg->g, a);
    int rc = upload_array(kg, a, host, (size_t)kg->g->num_edges, err);
    free(host);
    if (rc) rg_err_prefix(err, "uploading graph %s's %s", kg->g->name, kp_graph_array_name(a));
    return rc;
}

void kx_graph_free(kx_graph *kg)
{
    for (int a = 0; a < KG__COUNT; a++) krt_free(kg->arr[a]);
    for (int i = 0; i < kg->ntiles; i++) {
        krt_free(kg->tiles[i].type_d);
        krt_free(kg->tiles[i].row0_d);
    }
    free(kg->tiles);
    memset(kg, 0, sizeof *kg);
}

static const kx_tiles *find_tiles(const kx_graph *kg, int rowset, int rows)
{
    for (int i = 0; i < kg->ntiles; i++)
        if (kg->tiles[i].rowset == rowset && kg->tiles[i].rows_per_tile == rows) return &kg->tiles[i];
    return NULL;
}

static int ensure_tiles(kx_graph *kg, int rowset, int rows, rg_err *err)
{
    if (find_tiles(kg, rowset, rows)) return 0;
    int *type, *row0;
    int n = kx_tile_table(kg->g, rowset, rows, &type, &row0);
    if (kg->ntiles == kg->cap_tiles) {
        kg->cap_tiles = kg->cap_tiles ? 2 * kg->cap_tiles : 8;
        kg->tiles = rg_xrealloc(kg->tiles, (size_t)kg->cap_tiles * sizeof *kg->tiles);
    }
    kx_tiles *t = &kg->tiles[kg->ntiles];
    memset(t, 0, sizeof *t);
    t->rowset = rowset;
    t->rows_per_tile = rows;
    t->ntiles = n;
    size_t bytes = (size_t)(n ? n : 1) * sizeof(int);
    int rc = krt_alloc((void **)&t->type_d, bytes, err) || krt_alloc((void **)&t->row0_d, bytes, err) ||
             krt_upload(t->type_d, type, bytes, err) || krt_upload(t->row0_d, row0, bytes, err);
    free(type);
    free(row0);
    if (rc) {
        krt_free(t->type_d);
        krt_free(t->row0_d);
        return -1;
    }
    kg->ntiles++;   /* its bytes are counted per plan (kx_plan_graph_bytes) */
    return 0;
}

/* ---- compilation ---- */

typedef struct compile_job {
    const kp_plan *plan;
    kx_compiled *out;
    int sm;
    int next;
    int failed_at;
    rg_err err;
    pthread_mutex_t lock;
} compile_job;

static void *compile_worker(void *arg)
{
    compile_job *job = arg;
    for (;;) {
        pthread_mutex_lock(&job->lock);
        int i = job->failed_at >= 0 ? job->plan->nkernels : job->next++;
        pthread_mutex_unlock(&job->lock);
        if (i >= job->plan->nkernels) return NULL;
        const kp_kernel *k = &job->plan->kernels[i];
        char name[80];
        snprintf(name, sizeof name, "%s.cu", k->name);
        krt_source src = {.name = name, .code = k->source};
        rg_err e;
        if (krt_compile(&src, job->sm, &job->out->cubins[i], &e)) {
            pthread_mutex_lock(&job->lock);
            if (job->failed_at < 0 || i < job->failed_at) {
                job->failed_at = i;
                job->err = e;
            }
            pthread_mutex_unlock(&job->lock);
        }
    }
}

int kx_compile(const kp_plan *plan, int sm, int threads, kx_compiled *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    out->n = plan->nkernels;
    out->cubins = rg_xcalloc((size_t)(out->n ? out->n : 1), sizeof *out->cubins);
    out->modules = rg_xcalloc((size_t)(out->n ? out->n : 1), sizeof *out->modules);
    out->kernels = rg_xcalloc((size_t)(out->n ? out->n : 1), sizeof *out->kernels);
    compile_job job = {.plan = plan, .out = out, .sm = sm, .failed_at = -1};
    pthread_mutex_init(&job.lock, NULL);
    if (threads < 1) threads = 1;
    if (threads > 32) threads = 32;
    pthread_t tid[32];
    double t0 = rg_now();
    for (int i = 0; i < threads; i++) pthread_create(&tid[i], NULL, compile_worker, &job);
    for (int i = 0; i < threads; i++) pthread_join(tid[i], NULL);
    out->compile_wall_s = rg_now() - t0;
    pthread_mutex_destroy(&job.lock);
    for (int i = 0; i < out->n; i++) out->cache_hits += out->cubins[i].from_cache;
    if (job.failed_at >= 0) {
        rg_errf(err, "compile error in %s: %s", plan->kernels[job.failed_at].name, job.err.msg);
        rg_err_classify(err, job.err.code, job.err.cuda);
        kx_compiled_free(out);
        return -1;
    }
    return 0;
}

int kx_load(kx_compiled *c, rg_err *err)
{
    for (int i = 0; i < c->n; i++) {
        if (c->modules[i]) continue;
        if (krt_module_load(&c->cubins[i], &c->modules[i], err)) return -1;
    }
    return 0;
}

void kx_compiled_free(kx_compiled *c)
{
    for (int i = 0; i < c->n; i++) {
        if (c->modules && c->modules[i]) krt_module_unload(c->modules[i]);
        if (c->cubins) krt_cubin_free(&c->cubins[i]);
    }
    free(c->cubins);
    free(c->modules);
    free(c->kernels);
    krt_graph_free(c->graph);
    memset(c, 0, sizeof *c);
}

int kx_resolve(const kp_plan *plan, kx_compiled *c, rg_err *err)
{
    for (int i = 0; i < c->n; i++) {
        const kp_kernel *k = &plan->kernels[i];
        krt_kernel *h = &c->kernels[i];
        if (h->handle) continue;
        if (krt_get_kernel(c->modules[i], k->name, h, err)) return -1;
        int threads = k->block_x * (k->block_y > 0 ? k->block_y : 1);
        if (threads > h->max_threads_per_block) {
            int regs = h->num_regs, most = h->max_threads_per_block;
            memset(h, 0, sizeof *h);   /* looked up again, and refused again, on a later call */
            rg_errf(err, "invalid: kernel %s uses %d registers a thread, so a block may have %d threads, fewer than its %d "
                         "(a smaller tblock, or lb=on, fits it)",
                    k->name, regs, most, threads);
            return KX_TOO_MANY_THREADS;
        }
    }
    return 0;
}

/* ---- buffers ---- */

static size_t var_bytes(const ir_program *ir, int v, const hg_graph *g)
{
    const ir_var *x = &ir->vars[v];
    int64_t rows = ir_var_rows(x, g->num_nodes, g->num_edges, g->num_unique, g->num_ntypes, g->num_etypes);
    return (size_t)rows * (size_t)ir_var_row_width(x) * (size_t)vt_bytes(x);
}

size_t kx_plan_graph_bytes(const kx_graph *kg, const kp_plan *plan)
{
    size_t bytes = kg->base_bytes;
    int in_order[KG__COUNT] = {0};
    int *tile_seen = rg_xcalloc((size_t)(kg->ntiles ? kg->ntiles : 1), sizeof(int));
    for (int i = 0; i < plan->nkernels; i++)
        for (int j = 0; j < plan->kernels[i].nparams; j++) {
            const kp_param *p = &plan->kernels[i].params[j];
            if (p->kind == KP_GRAPH && kp_graph_array_in_order((kp_graph_array)p->id) && !in_order[p->id]++)
                bytes += (size_t)kg->g->num_edges * sizeof(int32_t);
            if (p->kind != KP_TILE_TYPE) continue;
            const kx_tiles *t = find_tiles(kg, p->id, (int)p->ival);
            RG_ASSERT(t);
            if (!tile_seen[t - kg->tiles]++) bytes += 2 * (size_t)(t->ntiles ? t->ntiles : 1) * sizeof(int);
        }
    free(tile_seen);
    return bytes;
}

/* Each variable in its own buffer starts 256-byte aligned (cudaMalloc's alignment): so does each
 * one in the zero block, for the vector loads and atomics the kernels make. */
#define ZERO_ALIGN 256

/* Declares the zero block: the plan's zero-filled variables, each at an aligned offset of one buffer. */
static int declare_zero_block(const ir_program *ir, const cg_variant *v, const hg_graph *g, kx_buffers *out,
                              rg_err *err)
{
    out->zero_id = -1;
    out->zero_off = rg_xmalloc((size_t)(ir->nvars ? ir->nvars : 1) * sizeof(size_t));
    for (int i = 0; i < ir->nvars; i++) out->zero_off[i] = SIZE_MAX;
    size_t total = 0;
    for (int z = 0; z < v->plan.nzero; z++) {
        int var = v->plan.zero_vars[z];
        RG_ASSERT(cg_resident(v, var) & CG_RES_ROWS);   /* zero-filled: materialized, its rows resident */
        out->zero_off[var] = total;
        total += (var_bytes(ir, var, g) + ZERO_ALIGN - 1) / ZERO_ALIGN * ZERO_ALIGN;
    }
    if (!v->plan.nzero) return 0;
    out->zero_id = mp_declare(out->mp, "zero-filled sums", total, err);
    return out->zero_id < 0 ? -1 : 0;
}

/* rmax=on: each softmax's workspace (KP_WORK, keyed by its aggregate), declared once however many kernels
 * bind it; not zero-filled: its kernels write each value before they read it. */
static int declare_work(const ir_program *ir, const cg_variant *v, const hg_graph *g, kx_buffers *out, rg_err *err)
{
    out->work_id = rg_xmalloc((size_t)(ir->nvars ? ir->nvars : 1) * sizeof(int));
    for (int i = 0; i < ir->nvars; i++) out->work_id[i] = -1;
    for (int i = 0; i < v->plan.nkernels; i++)
        for (int j = 0; j < v->plan.kernels[i].nparams; j++) {
            const kp_param *p = &v->plan.kernels[i].params[j];
            if (p->kind != KP_WORK || out->work_id[p->id] >= 0) continue;
            char name[96];
            snprintf(name, sizeof name, "rmax workspace (%s)", ir->vars[p->id].name);
            size_t bytes = (size_t)kp_work_values(p, g->num_nodes, g->num_edges) * sizeof(double);
            out->work_id[p->id] = mp_declare(out->mp, name, bytes, err);
            if (out->work_id[p->id] < 0) return -1;
        }
    return 0;
}

mp_status kx_alloc(const ir_program *ir, const cg_variant *v, const kx_graph *kg_const, size_t mem_limit,
                   kx_buffers *out, rg_err *err)
{
    kx_graph *kg = (kx_graph *)kg_const;  /* tile tables and traversal-ordered arrays are added lazily */
    memset(out, 0, sizeof *out);
    for (int i = 0; i < v->plan.nkernels; i++) {
        const kp_kernel *k = &v->plan.kernels[i];
        for (int j = 0; j < k->nparams; j++) {
            const kp_param *p = &k->params[j];
            if (p->kind == KP_TILE_TYPE && ensure_tiles(kg, p->id, (int)p->ival, err)) return MP_FAIL;
            if (p->kind == KP_GRAPH && kp_graph_array_in_order((kp_graph_array)p->id) &&
                ensure_in_order(kg, (kp_graph_array)p->id, err))
                return MP_FAIL;
        }
    }
    size_t graph_bytes = out->graph_bytes = kx_plan_graph_bytes(kg, &v->plan);
    if (mem_limit && graph_bytes >= mem_limit) {
        char a[32], b[32];
        rg_errf(err, "out of memory: the graph structures alone need %s, over the limit of %s",
                mp_format_bytes(graph_bytes, a), mp_format_bytes(mem_limit, b));
        return MP_OOM;
    }
    out->mp = mp_new(mp_cuda_allocator(), mem_limit ? mem_limit - graph_bytes : 0);
    out->nvars = ir->nvars;
    out->g = kg->g;
    out->id = rg_xmalloc((size_t)(ir->nvars ? ir->nvars : 1) * sizeof(int));
    out->in_id = rg_xmalloc((size_t)(ir->nvars ? ir->nvars : 1) * sizeof(int));
    if (declare_zero_block(ir, v, kg->g, out, err)) return MP_FAIL;
    for (int i = 0; i < ir->nvars; i++) {
        out->id[i] = out->in_id[i] = -1;
        int res = cg_resident(v, i);
        size_t bytes = var_bytes(ir, i, kg->g);
        /* a zero-filled variable's rows are in the zero block */
        if (res & CG_RES_ROWS && out->zero_off[i] == SIZE_MAX) out->id[i] = mp_declare(out->mp, ir->vars[i].name, bytes, err);
        if (res & CG_RES_IN_ORDER) {
            char name[80];
            snprintf(name, sizeof name, "%s@in", ir->vars[i].name);
            out->in_id[i] = mp_declare(out->mp, name, bytes, err);
        }
        if ((res & CG_RES_ROWS && out->id[i] < 0 && out->zero_off[i] == SIZE_MAX) ||
            (res & CG_RES_IN_ORDER && out->in_id[i] < 0))
            return MP_FAIL;
    }
    if (declare_work(ir, v, kg->g, out, err)) return MP_FAIL;
    mp_status st = mp_alloc_all(out->mp, err);
    if (st == MP_OOM) rg_err_prefix(err, "out of memory (graph structures: %.1f MB)", graph_bytes / 1e6);
    return st;
}

void kx_buffers_free(kx_buffers *b)
{
    if (b->mp) mp_destroy(b->mp);
    free(b->id);
    free(b->in_id);
    free(b->zero_off);
    free(b->work_id);
    memset(b, 0, sizeof *b);
}

size_t kx_peak_bytes(const kx_buffers *b) { return (b->mp ? mp_peak_bytes(b->mp) : 0) + b->graph_bytes; }

void *kx_var_ptr(const kx_buffers *b, int var)
{
    if (var < 0 || var >= b->nvars) return NULL;
    if (b->zero_off && b->zero_off[var] != SIZE_MAX) {
        char *block = mp_ptr(b->mp, b->zero_id);   /* NULL when every zero-filled variable is empty */
        return block ? block + b->zero_off[var] : NULL;
    }
    return b->id[var] >= 0 ? mp_ptr(b->mp, b->id[var]) : NULL;
}

/* The device buffer of a variable's dst-ordered copy, or NULL. */
static void *var_in_ptr(const kx_buffers *b, int var)
{
    return (var >= 0 && var < b->nvars && b->in_id[var] >= 0) ? mp_ptr(b->mp, b->in_id[var]) : NULL;
}

/* The bytes of the run's zero-fill block: 0 when the plan has no accumulation targets, or when they are
 * an empty graph's sums. */
static size_t zero_fill_bytes(const cg_variant *v, const kx_buffers *b)
{
    if (!v->plan.nzero) return 0;
    RG_ASSERT(b->zero_id >= 0);
    return mp_bytes(b->mp, b->zero_id);
}

int kx_reset(const cg_variant *v, const kx_buffers *b, rg_err *err)
{
    size_t bytes = zero_fill_bytes(v, b);
    return bytes ? krt_memset(mp_ptr(b->mp, b->zero_id), 0, bytes, err) : 0;
}

/* ---- staging ---- */

typedef struct staged_input {
    const double *src;     /* the float64 values it was converted from */
    const int32_t *order;  /* the rows' order (in_eid of a graph: a KP_VAR_IN copy), or NULL */
    size_t bytes;
    int elem;              /* bytes per element: 4 (float32), 2 (bfloat16), or 8 (a reordered float64 copy) */
    void *copy;            /* page-locked */
} staged_input;

struct kx_staging {
    staged_input *in;
    int nin, cap;
    void *dl;              /* page-locked download buffer */
    size_t dl_bytes;
};

kx_staging *kx_staging_new(void) { return rg_xcalloc(1, sizeof(kx_staging)); }

void kx_staging_free(kx_staging *s)
{
    if (!s) return;
    for (int i = 0; i < s->nin; i++) krt_host_free(s->in[i].copy);
    free(s->in);
    krt_host_free(s->dl);
    free(s);
}

static void to_f32(float *dst, const double *src, size_t n)
{
    for (size_t j = 0; j < n; j++) dst[j] = (float)src[j];
}

uint16_t kx_bf16_from_double(double x)
{
    float f = (float)x;   /* to nearest */
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40);   /* a quiet NaN stays NaN */
    /* round to odd (toward zero, then a sticky last bit when inexact), so that the rounding to
     * bfloat16 below is the one rounding of x: what __double2bfloat16 does on the device */
    double d = f;
    if ((x > 0 && d > x) || (x < 0 && d < x)) u--;
    if (d != x) u |= 1;
    u += 0x7fffu + ((u >> 16) & 1);   /* to nearest even at bit 16 */
    return (uint16_t)(u >> 16);
}

float kx_bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void to_bf16(uint16_t *dst, const double *src, size_t n)
{
    for (size_t j = 0; j < n; j++) dst[j] = kx_bf16_from_double(src[j]);
}

/* The copy of src in elements of `elem` bytes (float32, bfloat16, or float64 when the rows are
 * reordered; `bytes` in all), its edge rows in the dst-sorted order of graph `g` when g is not
 * NULL (kx_in_order_values), made on first use. */
static const void *staged_copy(kx_staging *s, const double *src, const hg_graph *g, size_t bytes, int elem,
                               rg_err *err)
{
    const int32_t *order = g ? g->in_eid : NULL;
    for (int i = 0; i < s->nin; i++)
        if (s->in[i].src == src && s->in[i].order == order && s->in[i].bytes == bytes && s->in[i].elem == elem)
            return s->in[i].copy;
    void *c = krt_host_alloc(bytes, err);
    if (!c) return NULL;
    size_t n = bytes / (size_t)elem;
    RG_ASSERT(!g || !g->num_edges || n % (size_t)g->num_edges == 0);   /* one row per edge */
    double *reordered = g ? kx_in_order_values(g, src, g->num_edges ? (int64_t)(n / (size_t)g->num_edges) : 0) : NULL;
    const double *vals = g ? reordered : src;
    if (elem == 8) memcpy(c, vals, bytes);
    else if (elem == 2) to_bf16(c, vals, n);
    else to_f32(c, vals, n);
    free(reordered);
    if (s->nin == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->in = rg_xrealloc(s->in, (size_t)s->cap * sizeof *s->in);
    }
    s->in[s->nin++] = (staged_input){src, order, bytes, elem, c};
    return c;
}

/* Uploads the host values of variable i (float64) into device buffer `d` of `bytes`, in the
 * dst-sorted order of graph `g` when g is not NULL, or poisons it when there are none. */
static int upload_values(const ir_program *ir, int i, void *d, size_t bytes, const hg_graph *g,
                         const double *const *host_values, kx_staging *stage, rg_err *err)
{
    if (!host_values || !host_values[i]) return krt_poison(d, bytes, err);
    int elem = vt_bytes(&ir->vars[i]);
    const void *src =
        elem == 8 && !g ? (const void *)host_values[i] : staged_copy(stage, host_values[i], g, bytes, elem, err);
    return !src || krt_upload(d, src, bytes, err) ? -1 : 0;
}

int kx_prepare(const ir_program *ir, const cg_variant *v, const kx_buffers *b, const double *const *host_values,
               kx_staging *stage, rg_err *err)
{
    RG_ASSERT(stage);
    for (int i = 0; i < ir->nvars; i++) {
        void *d = kx_var_ptr(b, i), *dq = var_in_ptr(b, i);
        if (d && upload_values(ir, i, d, var_bytes(ir, i, b->g), NULL, host_values, stage, err)) return -1;
        if (dq && upload_values(ir, i, dq, mp_bytes(b->mp, b->in_id[i]), b->g, host_values, stage, err)) return -1;
    }
    return kx_reset(v, b, err);
}

/* ---- launching ---- */

typedef union arg_slot {
    void *p;
    int i;
} arg_slot;

static int launch_kernel(const kp_kernel *k, const krt_kernel *kk, const kx_buffers *b, const kx_graph *kg,
                         int *launched, rg_err *err)
{
    arg_slot slots[KP_MAX_PARAMS];
    void *args[KP_MAX_PARAMS];
    int64_t gx = 0;
    const kx_tiles *tiles = NULL;
    for (int j = 0; j < k->nparams; j++) {
        const kp_param *p = &k->params[j];
        switch (p->kind) {
        case KP_VAR: slots[j].p = kx_var_ptr(b, p->id); break;
        case KP_VAR_IN: slots[j].p = var_in_ptr(b, p->id); break;
        case KP_WORK:
            RG_ASSERT(b->work_id && b->work_id[p->id] >= 0);   /* kx_alloc declares every workspace bound */
            slots[j].p = mp_ptr(b->mp, b->work_id[p->id]);
            break;
        case KP_GRAPH:
            slots[j].p = kg->arr[p->id];
            RG_ASSERT(slots[j].p);   /* kx_alloc uploads every array its plan binds */
            break;
        case KP_TILE_TYPE: case KP_TILE_ROW0:
            tiles = find_tiles(kg, p->id, (int)p->ival);
            RG_ASSERT(tiles);
            slots[j].p = p->kind == KP_TILE_TYPE ? (void *)tiles->type_d : (void *)tiles->row0_d;
            break;
        case KP_INT:
            if (p->id == KS_NTILES) {
                const kx_tiles *tt = find_tiles(kg, k->tile_rowset, k->tile_rows);
                RG_ASSERT(tt);
                slots[j].i = tt->ntiles;
            } else {
                slots[j].i = p->id >= 0 ? (int)kx_size(kg->g, p->id) : (int)p->ival;
            }
            break;
        }
        args[j] = &slots[j];
    }
    switch (k->grid_kind) {
    case KGRID_FIXED: gx = k->grid_x_fixed; break;
    case KGRID_ROWS: gx = (kx_size(kg->g, k->grid_rows_size) + k->rows_per_block - 1) / k->rows_per_block; break;
    case KGRID_TILES: {
        tiles = find_tiles(kg, k->tile_rowset, k->tile_rows);
        RG_ASSERT(tiles);
        int per_block = k->rows_per_block > 0 ? k->rows_per_block : 1;
        gx = (tiles->ntiles + per_block - 1) / per_block;
        break;
    }
    }
    *launched = gx > 0;
    if (gx <= 0) return 0;
    krt_dim3 grid = {(unsigned)gx, (unsigned)k->grid_y, (unsigned)k->grid_z};
    krt_dim3 block = {(unsigned)k->block_x, (unsigned)k->block_y, 1};
    if (krt_launch(kk, grid, block, (size_t)k->shmem_bytes, args, err)) {
        rg_err_prefix(err, "launching %s", k->name);
        return -1;
    }
    return 0;
}

static int launch_each(const cg_variant *v, const kx_compiled *c, const kx_buffers *b, const kx_graph *kg,
                       int *nlaunched, rg_err *err)
{
    int n = 0;
    for (int i = 0; i < v->plan.nkernels; i++) {
        int launched;
        if (launch_kernel(&v->plan.kernels[i], &c->kernels[i], b, kg, &launched, err)) return -1;
        n += launched;
    }
    if (nlaunched) *nlaunched = n;
    return 0;
}

/* The graph nodes kernel i waits on: in plan order, the last kernel launched before it, else the
 * zero-fill; as a DAG, the launched kernels kp_dag_deps names (node[j] is NULL where kernel j's grid is
 * empty on this graph), and the zero-fill where kp_dag_waits_on_zero says. zero is NULL when the run
 * has no zero-fill. deps has room for i + 1 nodes. */
static int graph_deps(const kp_plan *plan, int i, void *const *node, void *zero, void **deps)
{
    if (plan->launch == KP_LAUNCH_GRAPH) {
        for (int j = i - 1; j >= 0; j--)
            if (node[j]) {
                deps[0] = node[j];
                return 1;
            }
        deps[0] = zero;
        return zero != NULL;
    }
    int *present = rg_xmalloc((size_t)(i + 1) * sizeof *present), *idx = rg_xmalloc((size_t)(i + 1) * sizeof *idx);
    for (int j = 0; j < i; j++) present[j] = node[j] != NULL;
    present[i] = 1;
    int n = kp_dag_deps(plan, i, present, idx);
    int after_zero = zero && kp_dag_waits_on_zero(plan, i, idx, n);
    for (int d = 0; d < n; d++) deps[d] = node[idx[d]];
    if (after_zero) deps[n++] = zero;
    free(present);
    free(idx);
    return n;
}

/* The run's zero-fill as the graph's first node (*zero; NULL when the run has none). */
static int capture_zero_fill(const cg_variant *v, const kx_buffers *b, void **zero, rg_err *err)
{
    *zero = NULL;
    if (!zero_fill_bytes(v, b)) return 0;
    return krt_capture_set_deps(NULL, 0, err) || kx_reset(v, b, err) || krt_capture_last_node(zero, err) ? -1 : 0;
}

/* Captures the run (its zero-fill, then its kernels) as one graph (kx_compiled.graph) for these
 * buffers and this graph: a graph's memset overlaps the kernels that do not wait on it, where a
 * memset before the graph ran alone. */
static int capture_graph(const cg_variant *v, kx_compiled *c, const kx_buffers *b, const kx_graph *kg, rg_err *err)
{
    int nk = v->plan.nkernels;
    void **node = rg_xcalloc((size_t)(nk ? nk : 1), sizeof *node);
    void **deps = rg_xcalloc((size_t)nk + 1, sizeof *deps);
    void *zero = NULL;
    kprof_prime();
    int n = 0, rc = krt_capture_begin(err) || capture_zero_fill(v, b, &zero, err);
    for (int i = 0; i < nk && !rc; i++) {
        int launched = 0;
        rc = krt_capture_set_deps(deps, graph_deps(&v->plan, i, node, zero, deps), err) ||
             launch_kernel(&v->plan.kernels[i], &c->kernels[i], b, kg, &launched, err);
        if (!rc && launched) rc = krt_capture_last_node(&node[i], err), n++;
    }
    if (rc) krt_capture_abort();
    else rc = krt_capture_end(&c->graph, err);
    free(node);
    free(deps);
    if (rc) return -1;
    c->graph_bufs = b, c->graph_kg = kg, c->graph_launched = n;
    return 0;
}

/* One run's kernels as the plan's launch mode says: one by one, or the run's graph (captured on first use). */
static int launch_sequence(const cg_variant *v, const kx_compiled *c_const, const kx_buffers *b, const kx_graph *kg,
                           int *nlaunched, rg_err *err)
{
    if (v->plan.launch == KP_LAUNCH_STREAM) return launch_each(v, c_const, b, kg, nlaunched, err);
    kx_compiled *c = (kx_compiled *)c_const;   /* the graph is built on first use */
    if (c->graph && (c->graph_bufs != b || c->graph_kg != kg)) {
        krt_graph_free(c->graph);
        c->graph = NULL;
    }
    if (!c->graph && capture_graph(v, c, b, kg, err)) return -1;
    if (krt_graph_launch(c->graph, err)) return -1;
    if (nlaunched) *nlaunched = c->graph_launched;
    return 0;
}

/* One run, as the plan's launch mode says or (one_by_one) kernel by kernel, then waits. */
static int run_once(const cg_variant *v, const kx_compiled *c_const, const kx_buffers *b, const kx_graph *kg,
                    int one_by_one, rg_err *err)
{
    kx_compiled *c = (kx_compiled *)c_const;  /* kernel handles are looked up on first use */
    if (kx_resolve(&v->plan, c, err)) return -1;
    int rc = one_by_one ? launch_each(v, c, b, kg, NULL, err) : launch_sequence(v, c, b, kg, NULL, err);
    return rc ? -1 : krt_sync(err);
}

int kx_launch_all(const cg_variant *v, const kx_compiled *c, const kx_buffers *b, const kx_graph *kg, rg_err *err)
{
    return run_once(v, c, b, kg, 0, err);
}

int kx_launch_each(const cg_variant *v, const kx_compiled *c, const kx_buffers *b, const kx_graph *kg, rg_err *err)
{
    return run_once(v, c, b, kg, 1, err);
}

int kx_launch_one(const cg_variant *v, const kx_compiled *c_const, const kx_buffers *b, const kx_graph *kg, int i,
                  rg_err *err)
{
    RG_ASSERT(i >= 0 && i < v->plan.nkernels);
    kx_compiled *c = (kx_compiled *)c_const;  /* kernel handles are looked up on first use */
    if (kx_resolve(&v->plan, c, err)) return -1;
    int launched;
    return launch_kernel(&v->plan.kernels[i], &c->kernels[i], b, kg, &launched, err);
}

size_t kx_var_bytes(const ir_program *ir, const kx_graph *kg, int var) { return var_bytes(ir, var, kg->g); }

/* The device buffer of a variable to download, or NULL and why. */
static void *resident_var(const ir_program *ir, const kx_buffers *b, int var, rg_err *err)
{
    void *d = kx_var_ptr(b, var);
    if (!d) rg_errf(err, "variable %s is not in device memory", ir->vars[var].name);
    return d;
}

double *kx_download(const ir_program *ir, const kx_buffers *b, const kx_graph *kg, int var, rg_err *err)
{
    void *d = resident_var(ir, b, var, err);
    if (!d) return NULL;
    size_t bytes = var_bytes(ir, var, kg->g), elem = (size_t)vt_bytes(&ir->vars[var]), n = bytes / elem;
    double *out = rg_xmalloc((n ? n : 1) * sizeof(double));
    if (elem == sizeof(double)) {
        if (krt_download(out, d, bytes, err)) {
            free(out);
            return NULL;
        }
        return out;
    }
    void *tmp = rg_xmalloc(bytes ? bytes : 1);
    if (krt_download(tmp, d, bytes, err)) {
        free(tmp);
        free(out);
        return NULL;
    }
    if (elem == 2)
        for (size_t i = 0; i < n; i++) out[i] = kx_bf16_to_float(((const uint16_t *)tmp)[i]);
    else
        for (size_t i = 0; i < n; i++) out[i] = ((const float *)tmp)[i];
    free(tmp);
    return out;
}

const void *kx_download_staged(kx_staging *s, const ir_program *ir, const kx_buffers *b, const kx_graph *kg, int var,
                               int64_t *count, int *elem_bytes, rg_err *err)
{
    void *d = resident_var(ir, b, var, err);
    if (!d) return NULL;
    size_t bytes = var_bytes(ir, var, kg->g);
    int stored = vt_bytes(&ir->vars[var]);
    size_t n = bytes / (size_t)stored;
    /* bfloat16 comes back as float32: room for twice its bytes */
    size_t need = stored == 2 ? 2 * bytes : bytes;
    if (need > s->dl_bytes) {
        krt_host_free(s->dl);
        s->dl_bytes = 0;
        if (!(s->dl = krt_host_alloc(need, err))) return NULL;
        s->dl_bytes = need;
    }
    if (krt_download(s->dl, d, bytes, err)) return NULL;
    if (stored == 2) {
        /* widened in place from the last element down: float i covers bfloat16 elements 2i and
         * 2i + 1, which are at or after i and so already read (memcpy: the bytes are both types) */
        char *b = s->dl;
        for (size_t i = n; i-- > 0;) {
            uint16_t h;
            memcpy(&h, b + 2 * i, sizeof h);
            float f = kx_bf16_to_float(h);
            memcpy(b + 4 * i, &f, sizeof f);
        }
    }
    *elem_bytes = stored == 2 ? (int)sizeof(float) : stored;
    *count = (int64_t)n;
    return s->dl;
}

/* ---- timing ---- */

/* Indices of the plan's kernels that launch (grid > 0) on this graph, in launch order. */
int kx_launch_order(const cg_variant *v, const kx_graph *kg, int *order)
{
    int n = 0;
    for (int i = 0; i < v->plan.nkernels; i++) {
        const kp_kernel *k = &v->plan.kernels[i];
        int64_t gx = k->grid_kind == KGRID_FIXED ? k->grid_x_fixed
                     : k->grid_kind == KGRID_ROWS ? kx_size(kg->g, k->grid_rows_size)
                                                  : find_tiles(kg, k->tile_rowset, k->tile_rows)->ntiles;
        if (gx > 0) order[n++] = i;
    }
    return n;
}

/* Whether record x can be the launch of kernel k: its grid's y and z and its block are k's (grid x
 * depends on the graph, so launch_kernel's count is not kept). */
static int record_fits(const kprof_record *x, const kp_kernel *k)
{
    return x->grid[1] == k->grid_y && x->grid[2] == k->grid_z && x->block[0] == k->block_x &&
           x->block[1] == (k->block_y > 0 ? k->block_y : 1);
}

/* A DAG run's records (sorted by start) to its launched kernels: slot[j] = the record of launched kernel
 * j. A record starts after every kernel it depends on, so each record, in start order, is one of the kernels
 * whose predecessors are already matched: the one of its name, else the first of its launch shape.
 * Returns -1 when a record fits none. */
static int match_dag_run(const kp_plan *plan, const kprof_record *x, const int *order, int per_run, int *slot)
{
    for (int j = 0; j < per_run; j++) slot[j] = -1;
    for (int r = 0; r < per_run; r++) {
        int pick = -1;
        for (int j = 0; j < per_run; j++) {
            if (slot[j] >= 0) continue;
            const kp_kernel *k = &plan->kernels[order[j]];
            int ready = 1;
            for (int i = 0; i < j && ready; i++)
                if (slot[i] < 0 && kp_kernels_conflict(&plan->kernels[order[i]], k)) ready = 0;
            if (!ready || !record_fits(&x[r], k)) continue;
            if (!strcmp(x[r].name, k->name)) {
                pick = j;
                break;
            }
            if (pick < 0) pick = j;
        }
        if (pick < 0) return -1;
        slot[pick] = r;
    }
    return 0;
}

/* Which record of the timed window is launched kernel j of run r (rec_of[r * per_run + j]). Records are
 * matched to kernels by launch order, not by name: on one stream, or a graph in plan order, the j-th
 * record of a run is launched kernel j, whereas the names CUPTI reports can be stale after modules are
 * unloaded and others loaded in their place. A DAG run's kernels start in any order its edges allow:
 * match_dag_run. */
static int match_records(const cg_variant *v, const kprof_records *rec, const int *order, int per_run, int repeats,
                         int *rec_of, rg_err *err)
{
    for (int r = 0; r < repeats; r++) {
        int *slot = rec_of + (size_t)r * (size_t)per_run;
        size_t base = (size_t)r * (size_t)per_run;
        if (v->plan.launch != KP_LAUNCH_DAG) {
            for (int j = 0; j < per_run; j++) slot[j] = (int)(base + (size_t)j);
            continue;
        }
        if (match_dag_run(&v->plan, rec->v + base, order, per_run, slot))
            return rg_errf(err, "the profiler's records of run %d do not match the plan's kernels", r + 1);
        for (int j = 0; j < per_run; j++) slot[j] += (int)base;
    }
    return 0;
}

static void per_kernel_times(const cg_variant *v, const kprof_records *rec, const int *order, const int *rec_of,
                             int per_run, int repeats, kx_timing *out)
{
    double *d = rg_xmalloc((size_t)repeats * sizeof *d);
    out->kernels = rg_xcalloc((size_t)(per_run ? per_run : 1), sizeof *out->kernels);
    for (int j = 0; j < per_run; j++) {
        const kp_kernel *pk = &v->plan.kernels[order[j]];
        for (int r = 0; r < repeats; r++) {
            const kprof_record *x = &rec->v[rec_of[(size_t)r * (size_t)per_run + (size_t)j]];
            d[r] = (double)(x->end_ns - x->start_ns);
        }
        kx_kernel_time *kt = &out->kernels[out->nkernels++];
        snprintf(kt->name, sizeof kt->name, "%s", pk->name);
        kt->category = pk->category;
        kt->backward = pk->backward;
        kt->median_ns = rg_median_sort(d, (size_t)repeats);
        kt->min_ns = d[0];
        kt->max_ns = d[repeats - 1];
        double ms = kt->median_ns / 1e6;
        if (kt->category == KC_GEMM) out->gemm_ms += ms;
        else if (kt->category == KC_TRAVERSAL) out->traversal_ms += ms;
        else out->other_ms += ms;
        if (kt->backward) out->bwd_ms += ms; else out->fwd_ms += ms;
    }
    free(d);
}

static void summarize_runs(const kprof_records *rec, int per_run, int repeats, kx_timing *out)
{
    double *totals = rg_xcalloc((size_t)repeats, sizeof(double));
    for (size_t i = 0; i < rec->n && per_run > 0; i++) {
        size_t r = i / (size_t)per_run;
        if (r < (size_t)repeats) totals[r] += (double)(rec->v[i].end_ns - rec->v[i].start_ns) / 1e6;
    }
    out->stddev_ms = repeats > 1 ? gsl_stats_sd(totals, 1, (size_t)repeats) : 0;
    out->median_ms = rg_median_sort(totals, (size_t)repeats);
    out->min_ms = totals[0];
    out->max_ms = totals[repeats - 1];
    free(totals);
}

/* A whole run: its zero-fill and its kernels. A graph holds its zero-fill (capture_graph). */
static int reset_and_launch(const cg_variant *v, const kx_compiled *c, const kx_buffers *b, const kx_graph *kg,
                            int *per_run, rg_err *err)
{
    if (v->plan.launch == KP_LAUNCH_STREAM && kx_reset(v, b, err)) return -1;
    return launch_sequence(v, c, b, kg, per_run, err);
}

/* One timed run: the flush (untimed), then the zero-fills and kernels between run marks. */
static int timed_run(const cg_variant *v, const kx_compiled *c, const kx_buffers *b, const kx_graph *kg,
                     void *flush_buf, size_t flush_bytes, int *per_run, rg_err *err)
{
    if (flush_bytes && kprof_untimed_memset(flush_buf, flush_bytes, err)) return -1;
    kprof_run_begin();
    int rc = reset_and_launch(v, c, b, kg, per_run, err);
    kprof_run_end();
    return rc ? -1 : 0;
}

/* Median of the per-run spans; NaN when the records do not split into the runs. */
static double median_span_ms(const kprof_records *rec, int per_run, int repeats)
{
    double *span = rg_xcalloc((size_t)repeats, sizeof *span);
    double m = kprof_run_spans(rec, per_run, repeats, span) ? NAN : rg_median_sort(span, (size_t)repeats) / 1e6;
    free(span);
    return m;
}

/* RGNN_SPAN_TRACE=FILE appends every record of a timed window (kind, name, start and end in ns from
 * the window's first record, stream) to FILE: the evidence for a span far above its kernel sum
 * (launch gaps, a slow zero-fill, another context's work between the run's kernels). */
static void trace_records(const cg_variant *v, const kprof_records *rec, int per_run, int repeats)
{
    const char *path = getenv("RGNN_SPAN_TRACE");
    if (!path || !*path || !rec->n) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    static const char *const KIND[] = {"kernel", "memset", "memcpy", "run"};
    fprintf(f, "# %s: %d kernels per run, %d runs, %zu records, method %s\n", v->plan.kernels[0].name, per_run,
            repeats, rec->n, kprof_method_name(rec->method));
    uint64_t t0 = rec->v[0].start_ns;
    for (size_t i = 0; i < rec->n; i++) {
        const kprof_record *x = &rec->v[i];
        fprintf(f, "%s %s %llu %llu %u\n", (unsigned)x->kind < 4 ? KIND[x->kind] : "?", x->name,
                (unsigned long long)(x->start_ns - t0), (unsigned long long)(x->end_ns - t0), x->stream_id);
    }
    fclose(f);
}

/* The names of the window's kernel records that name no kernel of the plan (distinct, at most four):
 * what a window with more kernels than launched ran besides them. "" when none (caller frees). */
static char *unplanned_kernel_names(const kp_plan *plan, const kprof_records *rec)
{
    enum { MAX_LISTED = 4 };
    const char *listed[MAX_LISTED];
    int n = 0;
    rg_str out = {0};
    for (size_t i = 0; i < rec->n && n < MAX_LISTED; i++) {
        const kprof_record *x = &rec->v[i];
        if (x->kind != KPROF_KERNEL || !x->name) continue;
        int known = 0;
        for (int k = 0; k < plan->nkernels && !known; k++) known = !strcmp(plan->kernels[k].name, x->name);
        for (int k = 0; k < n && !known; k++) known = !strcmp(listed[k], x->name);
        if (known) continue;
        rg_str_printf(&out, "%s%s", n ? ", " : "", x->name);
        listed[n++] = x->name;
    }
    return out.s ? out.s : rg_xstrdup("");
}

int kx_time(const cg_variant *v, const kx_compiled *c_const, const kx_buffers *b, const kx_graph *kg, int warmup,
            int repeats, void *flush_buf, size_t flush_bytes, kx_timing *out, rg_err *err)
{
    kx_compiled *c = (kx_compiled *)c_const;
    memset(out, 0, sizeof *out);
    if (repeats < 1) repeats = 1;
    if (kx_resolve(&v->plan, c, err)) return -1;
    int per_run = 0;
    for (int i = 0; i < warmup; i++)
        if (reset_and_launch(v, c, b, kg, &per_run, err)) return -1;
    if (krt_sync(err) || kprof_start(err)) return -1;
    int rc = 0;
    for (int r = 0; r < repeats && !rc; r++) rc = timed_run(v, c, b, kg, flush_buf, flush_bytes, &per_run, err);
    kprof_records rec = {0};
    if (kprof_stop(&rec, err) || rc) {
        kprof_records_free(&rec);
        return -1;
    }
    if (v->plan.launch != KP_LAUNCH_STREAM && rec.method != KPROF_CUPTI) {
        /* the cudaEvent fallback times each launch call, which a graph's kernels do not have */
        rg_errf(err, "launch=%s is timed with CUPTI only, which is not available here (%s)",
                v->plan.launch == KP_LAUNCH_GRAPH ? "graph" : "dag",
                kprof_fallback_reason() ? kprof_fallback_reason() : "unknown reason");
        kprof_records_free(&rec);
        return -1;
    }
    int *order = rg_xmalloc((size_t)(v->plan.nkernels ? v->plan.nkernels : 1) * sizeof *order);
    int nlaunched = kx_launch_order(v, kg, order);
    trace_records(v, &rec, per_run, repeats);   /* before the checks: a window that fails them is the one to see */
    size_t nkern = kprof_count(&rec, KPROF_KERNEL);
    if (nkern != (size_t)per_run * (size_t)repeats || nlaunched != per_run) {
        char *names = unplanned_kernel_names(&v->plan, &rec);
        rg_errf(err, "profiler saw %zu kernels, expected %d x %d%s%s", nkern, per_run, repeats,
                *names ? "; kernels not in the plan: " : "", names);
        free(names);
        free(order);
        kprof_records_free(&rec);
        return -1;
    }
    out->repeats = repeats;
    out->method = kprof_method_name(rec.method);
    out->flushed_l2 = flush_bytes > 0;
    out->span_ms = median_span_ms(&rec, per_run, repeats);
    kprof_keep(&rec, KPROF_KERNEL);   /* the kernel sums below index kernels only */
    int *rec_of = rg_xmalloc(((size_t)per_run * (size_t)repeats + 1) * sizeof *rec_of);
    rc = match_records(v, &rec, order, per_run, repeats, rec_of, err);
    if (!rc) {
        summarize_runs(&rec, per_run, repeats, out);
        per_kernel_times(v, &rec, order, rec_of, per_run, repeats, out);
    }
    free(rec_of);
    free(order);
    kprof_records_free(&rec);
    return rc ? -1 : 0;
}

void kx_timing_free(kx_timing *t)
{
    free(t->kernels);
    memset(t, 0, sizeof *t);
}
