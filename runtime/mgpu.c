/* A relation-partitioned layer over several GPUs of one host: per-rank subgraphs, buffers and
 * launches on one thread per GPU, NCCL all-reduces between kernels, timing of the whole layer. */
#include "runtime/mgpu.h"
#include "codegen/vartype.h"
#include "datasets/relpart.h"
#include "runtime/rt.h"

#include <cuda_runtime_api.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <nccl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MG_MAX_RANKS 16

typedef struct mg_rank {
    int device;
    ncclComm_t comm;
    hg_graph *g;
    int32_t *orig_eid;
    kx_graph kg;
    int graph_up, alloced;
    kx_buffers bufs;
    kx_staging *stage;
    double **vals;           /* this rank's inputs (re-indexed edge inputs owned here) */
    cudaEvent_t ev0, ev1, *cev;   /* run start/end, and around each collective */
    rg_err err;
    int rc;
} mg_rank;

typedef struct setup_args setup_args;
typedef struct timed_state timed_state;

struct mg_layer {
    int n;
    mg_rank r[MG_MAX_RANKS];
    krt_device dev0;
    const ir_program *ir;
    const cg_variant *v;
    const col_plan *cp;
    const int32_t *owner;
    kx_compiled comp;
    int compiled;
    pthread_barrier_t bar;
    setup_args *setup;       /* the arguments of the rank jobs of mg_setup and mg_time, while */
    timed_state *timed;      /* they run */
    int run_failed;          /* a rank's timed run failed: every rank stops after the barrier */
    void *host;              /* mg_values' buffer */
    size_t host_bytes;
};

static int nccl_fail(rg_err *err, ncclResult_t r, const char *what)
{
    return rg_errf(err, "%s: NCCL: %s", what, ncclGetErrorString(r));
}

mg_layer *mg_open(int nranks, rg_err *err)
{
    if (krt_require_device(err)) return NULL;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
    if (nranks < 1 || nranks > MG_MAX_RANKS || nranks > count) {
        rg_errf(err, "a layer over %d GPUs needs %d devices; this machine has %d", nranks, nranks, count);
        return NULL;
    }
    /* multicast can take a shared host's GPUs out of service: never let NCCL use it */
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    mg_layer *L = rg_xcalloc(1, sizeof *L);
    L->n = nranks;
    if (krt_init(0, &L->dev0, err)) {
        free(L);
        return NULL;
    }
    int devs[MG_MAX_RANKS];
    ncclComm_t comms[MG_MAX_RANKS];
    for (int k = 0; k < nranks; k++) devs[k] = L->r[k].device = k;
    ncclResult_t nr = ncclCommInitAll(comms, nranks, devs);
    if (nr != ncclSuccess) {
        nccl_fail(err, nr, "ncclCommInitAll");
        free(L);
        return NULL;
    }
    for (int k = 0; k < nranks; k++) L->r[k].comm = comms[k];
    pthread_barrier_init(&L->bar, NULL, (unsigned)nranks);
    return L;
}

int mg_nranks(const mg_layer *L) { return L->n; }
const char *mg_device_name(const mg_layer *L) { return L->dev0.name; }
int mg_sm(const mg_layer *L) { return L->dev0.sm; }

/* ---- one thread per rank ---- */

typedef int (*rank_fn)(mg_layer *L, int k);

typedef struct rank_job {
    mg_layer *L;
    int k;
    rank_fn fn;
} rank_job;

static void *rank_main(void *arg)
{
    rank_job *j = arg;
    mg_rank *r = &j->L->r[j->k];
    cudaError_t e = cudaSetDevice(r->device);
    r->rc = e == cudaSuccess ? j->fn(j->L, j->k)
                             : rg_errf(&r->err, "rank %d: cudaSetDevice(%d): %s", j->k, r->device, cudaGetErrorString(e));
    return NULL;
}

/* Runs fn on every rank, each on its own thread; the first failing rank's error. */
static int on_every_rank(mg_layer *L, rank_fn fn, rg_err *err)
{
    pthread_t th[MG_MAX_RANKS];
    rank_job jobs[MG_MAX_RANKS];
    for (int k = 0; k < L->n; k++) {
        jobs[k] = (rank_job){L, k, fn};
        L->r[k].rc = 0;
        if (pthread_create(&th[k], NULL, rank_main, &jobs[k])) RG_DIE("pthread_create failed");
    }
    for (int k = 0; k < L->n; k++) pthread_join(th[k], NULL);
    for (int k = 0; k < L->n; k++)
        if (L->r[k].rc) {
            *err = L->r[k].err;
            rg_err_prefix(err, "rank %d (GPU %d)", k, L->r[k].device);
            return -1;
        }
    return 0;
}

/* ---- setup ---- */

/* The rank's inputs: the layer's, with edge-indexed graph inputs gathered through its edge map. */
static double **rank_values(const ir_program *ir, const hg_graph *g, const int32_t *orig, const double *const *vals)
{
    double **out = rg_xcalloc((size_t)(ir->nvars ? ir->nvars : 1), sizeof *out);
    for (int v = 0; v < ir->nvars; v++) {
        const ir_var *x = &ir->vars[v];
        if (!vals[v]) continue;
        if (x->kind != IR_VAR_EDGE) {
            out[v] = (double *)vals[v];
            continue;
        }
        RG_ASSERT(x->layout == IR_LAYOUT_VANILLA);   /* graph inputs are per edge */
        int64_t w = ir_var_row_width(x);
        double *mine = rg_xmalloc((size_t)g->num_edges * (size_t)w * sizeof *mine);
        for (int32_t e = 0; e < g->num_edges; e++)
            memcpy(mine + (size_t)e * (size_t)w, vals[v] + (size_t)orig[e] * (size_t)w, (size_t)w * sizeof *mine);
        out[v] = mine;
    }
    return out;
}

struct setup_args {
    const hg_graph *g;
    const double *const *values;
    size_t mem_limit;
    int oom[MG_MAX_RANKS];
};

static int make_events(mg_rank *r, int nsync)
{
    if (cudaEventCreate(&r->ev0) != cudaSuccess || cudaEventCreate(&r->ev1) != cudaSuccess)
        return rg_errf(&r->err, "cudaEventCreate failed");
    r->cev = rg_xcalloc((size_t)(2 * nsync + 1), sizeof *r->cev);
    for (int i = 0; i < 2 * nsync; i++)
        if (cudaEventCreate(&r->cev[i]) != cudaSuccess) return rg_errf(&r->err, "cudaEventCreate failed");
    return 0;
}

static int setup_rank(mg_layer *L, int k)
{
    mg_rank *r = &L->r[k];
    setup_args *a = L->setup;
    r->g = rlp_subgraph(a->g, L->owner, k, &r->orig_eid, &r->err);
    if (!r->g) return -1;
    if (kx_graph_upload(r->g, &r->kg, &r->err)) return -1;
    r->graph_up = 1;
    mp_status ms = kx_alloc(L->ir, L->v, &r->kg, a->mem_limit, &r->bufs, &r->err);
    r->alloced = 1;
    if (ms != MP_OK) {
        a->oom[k] = ms == MP_OOM;
        return -1;
    }
    r->vals = rank_values(L->ir, r->g, r->orig_eid, a->values);
    r->stage = kx_staging_new();
    if (kx_prepare(L->ir, L->v, &r->bufs, (const double *const *)r->vals, r->stage, &r->err)) return -1;
    return make_events(r, L->cp->nsync);
}

int mg_setup(mg_layer *L, const ir_program *ir, const cg_variant *v, const col_plan *cp, const hg_graph *g,
             const int32_t *owner, const double *const *values, size_t mem_limit, int *oom, rg_err *err)
{
    *oom = 0;
    /* the collectives go between kernels, launched one by one (run_rank) */
    if (v->plan.launch != KP_LAUNCH_STREAM)
        return rg_errf(err, "launch=graph and launch=dag are for one GPU: --ranks launches each kernel between its collectives");
    L->ir = ir;
    L->v = v;
    L->cp = cp;
    L->owner = owner;
    if (cudaSetDevice(0) != cudaSuccess) return rg_errf(err, "cudaSetDevice(0) failed");
    /* compiled once; a loaded library's kernels launch on every device */
    if (kx_compile(&v->plan, L->dev0.sm, 8, &L->comp, err)) return -1;
    L->compiled = 1;
    if (kx_load(&L->comp, err)) return -1;
    setup_args a = {g, values, mem_limit, {0}};
    L->setup = &a;
    int rc = on_every_rank(L, setup_rank, err);
    L->setup = NULL;
    for (int k = 0; k < L->n; k++) *oom |= a.oom[k];
    return rc;
}

static void free_rank_values(const ir_program *ir, mg_rank *r)
{
    if (!r->vals) return;
    for (int v = 0; v < ir->nvars; v++)
        if (r->vals[v] && ir->vars[v].kind == IR_VAR_EDGE) free(r->vals[v]);
    free(r->vals);
    r->vals = NULL;
}

static int teardown_rank(mg_layer *L, int k)
{
    mg_rank *r = &L->r[k];
    if (r->cev) {
        for (int i = 0; i < 2 * L->cp->nsync; i++)
            if (r->cev[i]) cudaEventDestroy(r->cev[i]);
        cudaEventDestroy(r->ev0);
        cudaEventDestroy(r->ev1);
        free(r->cev);
        r->cev = NULL;
    }
    if (r->alloced) kx_buffers_free(&r->bufs);
    if (r->graph_up) kx_graph_free(&r->kg);
    r->alloced = r->graph_up = 0;
    kx_staging_free(r->stage);
    r->stage = NULL;
    free_rank_values(L->ir, r);
    hg_free(r->g);
    r->g = NULL;
    free(r->orig_eid);
    r->orig_eid = NULL;
    return 0;
}

void mg_teardown(mg_layer *L)
{
    if (!L->ir) return;
    rg_err e;
    on_every_rank(L, teardown_rank, &e);
    if (L->compiled) kx_compiled_free(&L->comp);
    L->compiled = 0;
    L->ir = NULL;
}

void mg_close(mg_layer *L)
{
    if (!L) return;
    mg_teardown(L);
    for (int k = 0; k < L->n; k++) ncclCommDestroy(L->r[k].comm);
    pthread_barrier_destroy(&L->bar);
    free(L->host);
    free(L);
}

/* ---- running ---- */

static int collective(mg_layer *L, mg_rank *r, int s)
{
    const col_sync *cs = &L->cp->sync[s];
    void *buf = kx_var_ptr(&r->bufs, cs->var);
    RG_ASSERT(buf);
    size_t bytes = kx_var_bytes(L->ir, &r->kg, cs->var);
    int elem = vt_bytes(&L->ir->vars[cs->var]);
    cudaEventRecord(r->cev[2 * s], 0);
    if (cs->what == COL_ZERO_NONROOT) {
        if (r != &L->r[0] && krt_memset(buf, 0, bytes, &r->err)) return -1;
    } else {
        ncclResult_t nr = ncclAllReduce(buf, buf, bytes / (size_t)elem, elem == 8 ? ncclFloat64 : ncclFloat32,
                                        ncclSum, r->comm, 0);
        if (nr != ncclSuccess) return nccl_fail(&r->err, nr, L->ir->vars[cs->var].name);
    }
    cudaEventRecord(r->cev[2 * s + 1], 0);
    return 0;
}

static int run_rank(mg_layer *L, int k)
{
    mg_rank *r = &L->r[k];
    const kp_plan *plan = &L->v->plan;
    int s = 0;
    cudaEventRecord(r->ev0, 0);
    if (kx_reset(L->v, &r->bufs, &r->err)) return -1;
    for (int i = 0; i <= plan->nkernels; i++) {
        for (; s < L->cp->nsync && L->cp->sync[s].before == i; s++)
            if (collective(L, r, s)) return -1;
        if (i < plan->nkernels && kx_launch_one(L->v, &L->comp, &r->bufs, &r->kg, i, &r->err)) return -1;
    }
    cudaEventRecord(r->ev1, 0);
    return krt_sync(&r->err);
}

int mg_run(mg_layer *L, rg_err *err) { return on_every_rank(L, run_rank, err); }

/* ---- timing ---- */

struct timed_state {
    int repeats, warmup;
    double *wall, *span, *comm;   /* [repeats] */
    double *rank_span, *rank_comm;   /* [repeats][ranks] */
};

static double event_ms(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? ms : NAN;
}

static int timed_rank(mg_layer *L, int k)
{
    timed_state *t = L->timed;
    mg_rank *r = &L->r[k];
    for (int i = 0; i < t->warmup + t->repeats; i++) {
        pthread_barrier_wait(&L->bar);
        double t0 = rg_now();
        int rc = run_rank(L, k);
        if (rc) L->run_failed = 1;
        pthread_barrier_wait(&L->bar);
        /* all ranks stop together: one that went on alone would wait at the next barrier forever */
        if (L->run_failed) return rc ? -1 : 0;
        if (i < t->warmup) continue;
        int j = i - t->warmup;
        if (k == 0) t->wall[j] = 1e3 * (rg_now() - t0);
        double comm = 0;
        for (int s = 0; s < L->cp->nsync; s++) comm += event_ms(r->cev[2 * s], r->cev[2 * s + 1]);
        t->rank_span[j * L->n + k] = event_ms(r->ev0, r->ev1);
        t->rank_comm[j * L->n + k] = comm;
    }
    return 0;
}

int mg_time(mg_layer *L, int warmup, int repeats, mg_timing *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    timed_state t = {repeats, warmup, rg_xcalloc((size_t)repeats, sizeof(double)),
                     rg_xcalloc((size_t)repeats, sizeof(double)), rg_xcalloc((size_t)repeats, sizeof(double)),
                     rg_xcalloc((size_t)(repeats * L->n), sizeof(double)),
                     rg_xcalloc((size_t)(repeats * L->n), sizeof(double))};
    L->timed = &t;
    L->run_failed = 0;
    int rc = on_every_rank(L, timed_rank, err);
    L->timed = NULL;
    if (rc == 0) {
        for (int j = 0; j < repeats; j++)
            for (int k = 0; k < L->n; k++) {
                t.span[j] = fmax(t.span[j], t.rank_span[j * L->n + k]);
                t.comm[j] = fmax(t.comm[j], t.rank_comm[j * L->n + k]);
            }
        out->repeats = repeats;
        gsl_stats_minmax(&out->min_ms, &out->max_ms, t.wall, 1, (size_t)repeats);
        out->wall_ms = rg_median_sort(t.wall, (size_t)repeats);
        out->span_ms = rg_median_sort(t.span, (size_t)repeats);
        out->comm_ms = rg_median_sort(t.comm, (size_t)repeats);
        for (int s = 0; s < L->cp->nsync; s++)
            if (L->cp->sync[s].what == COL_ALLREDUCE) {
                out->comm_bytes += (double)kx_var_bytes(L->ir, &L->r[0].kg, L->cp->sync[s].var);
                out->ncollectives++;
            }
        for (int k = 0; k < L->n && k < 16; k++) out->rank_peak_bytes[k] = (double)kx_peak_bytes(&L->r[k].bufs);
    }
    free(t.wall);
    free(t.span);
    free(t.comm);
    free(t.rank_span);
    free(t.rank_comm);
    return rc;
}

/* ---- values ---- */

static void *host_buffer(mg_layer *L, size_t bytes)
{
    if (bytes > L->host_bytes) {
        free(L->host);
        L->host = rg_xmalloc(bytes);
        L->host_bytes = bytes;
    }
    return L->host;
}

static int download_range(mg_layer *L, int k, int var, size_t off, size_t bytes, char *dst, rg_err *err)
{
    if (cudaSetDevice(L->r[k].device) != cudaSuccess) return rg_errf(err, "cudaSetDevice(%d) failed", k);
    const char *d = kx_var_ptr(&L->r[k].bufs, var);
    if (!d) return rg_errf(err, "variable %s is not in device memory", L->ir->vars[var].name);
    return krt_download(dst + off, d + off, bytes, err);
}

const void *mg_values(mg_layer *L, int var, int64_t *count, int *elem, rg_err *err)
{
    const ir_var *x = &L->ir->vars[var];
    if (x->kind == IR_VAR_EDGE) {
        rg_errf(err, "%s is per edge: each rank holds its own relations' rows", x->name);
        return NULL;
    }
    size_t bytes = kx_var_bytes(L->ir, &L->r[0].kg, var);
    char *h = host_buffer(L, bytes ? bytes : 1);
    *elem = vt_bytes(x);
    *count = (int64_t)(bytes / (size_t)*elem);
    int rc = 0;
    if (L->cp->state[var] == COL_OWNED) {
        int32_t nt = L->r[0].g->num_etypes;
        size_t slice = bytes / (size_t)nt;
        for (int32_t r = 0; r < nt && !rc; r++)
            rc = download_range(L, L->owner[r], var, (size_t)r * slice, slice, h, err);
    } else {
        rc = download_range(L, 0, var, 0, bytes, h, err);
    }
    return rc ? NULL : h;
}
