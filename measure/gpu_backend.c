/* The GPU measurement backend: for each config, build the variant, compile with NVRTC,
 * run it on the device, validate against the float64 reference, then time it with CUPTI. */
#include "measure/backend.h"
#include "measure/validate.h"
#include "codegen/codegen.h"
#include "codegen/counts.h"
#include "codegen/emit_loss.h"
#include "codegen/floor.h"
#include "codegen/pipeline.h"
#include "datasets/dataset.h"
#include "datasets/order.h"
#include "runtime/ceil.h"
#include "runtime/exec.h"
#include "runtime/gfloor.h"
#include "runtime/prof.h"
#include "runtime/metrics.h"
#include "runtime/rt.h"

#include <cupti.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The problem's graph under one node ordering (config key relabel) and what is built on it. */
typedef struct graph_state {
    hg_graph *g;
    xv_reference *ref;     /* built by gpu_prepare_reference */
    kx_graph kg;
    int graph_uploaded;
    kx_staging *stage;     /* the problem's inputs in float32, and the download buffer */
    int32_t *node_old_of, *edge_old_of;   /* relabelled: where its nodes' and edges' data come from */
    double order_s;        /* seconds the ordering and relabelling took (0 for the graph as given) */
    long long ref_bytes;   /* what building ref added to the resident set (0: not measured) */
    unsigned long used;    /* the context's clock when it was parked (least recently used first) */
} graph_state;

#define NORDERS ORD_NKINDS   /* the values of cfg_order: one ord_kind each */
_Static_assert(CFG_ORDER_BLOCK + 1 == ORD_NKINDS, "each value of relabel needs its ordering in build_ordered");

typedef struct gpu_ctx {
    krt_device dev;
    xb_problem prob;
    pl_problem pl;
    graph_state cur;       /* the ordering of the variant being measured */
    cfg_order order;       /* cur's */
    graph_state parked[NORDERS];   /* the others built so far, by ordering: variants come in any order */
    unsigned long clock;   /* counts the states parked */
    hg_stats stats;
    fl_floor floor[2];     /* the layer's floor on this problem, by store= (0 f32, 1 bf16) */
    int have_floor[2];
    kgf_floor gather[2];   /* the gather floor on the graph as given, by store= */
    int gather_state[2];   /* 0 not measured yet, 1 measured, -1 failed */
    char gather_err[2][200];   /* why it failed, said in the evidence of the problem's first variant */
    void *flush_buf;       /* twice the L2, written before timed runs under --flush-l2 */
    size_t flush_bytes;
} gpu_ctx;

static void free_state(graph_state *s)
{
    xv_reference_free(s->ref);
    kx_staging_free(s->stage);
    if (s->graph_uploaded) kx_graph_free(&s->kg);
    hg_free(s->g);
    free(s->node_old_of);
    free(s->edge_old_of);
    memset(s, 0, sizeof *s);
}

static void release_problem(gpu_ctx *c)
{
    free_state(&c->cur);
    for (int i = 0; i < NORDERS; i++) free_state(&c->parked[i]);
    c->order = CFG_ORDER_ORIG;
}

/* The graph as given relabelled by an ordering, uploaded: a new current state. */
static int build_ordered(gpu_ctx *c, const hg_graph *orig, cfg_order order, rg_err *err)
{
    static const ord_kind kinds[NORDERS] = {[CFG_ORDER_ORIG] = ORD_ORIG, [CFG_ORDER_DEGREE] = ORD_DEGREE,
                                            [CFG_ORDER_BFS] = ORD_BFS, [CFG_ORDER_RCM] = ORD_RCM,
                                            [CFG_ORDER_BLOCK] = ORD_BLOCK};
    graph_state *s = &c->cur;
    double t0 = rg_now();
    s->node_old_of = ord_compute(orig, kinds[order]);
    s->g = ord_relabel(orig, s->node_old_of, &s->edge_old_of);
    s->order_s = rg_now() - t0;
    if (kx_graph_upload(s->g, &s->kg, err)) return -1;
    s->graph_uploaded = 1;
    s->stage = kx_staging_new();
    return 0;
}

/* Makes `order`'s graph the current one, building it on first use. */
static int use_order(gpu_ctx *c, cfg_order order, rg_err *err)
{
    RG_ASSERT((int)order >= 0 && (int)order < NORDERS);
    if (c->cur.g) {   /* none after a failed build: the graph as given is parked then */
        if (order == c->order) return 0;
        c->parked[c->order] = c->cur;
        c->parked[c->order].used = ++c->clock;
        memset(&c->cur, 0, sizeof c->cur);
    }
    c->order = order;
    if (c->parked[order].g) {
        c->cur = c->parked[order];
        memset(&c->parked[order], 0, sizeof c->parked[order]);
        return 0;
    }
    int rc = build_ordered(c, c->parked[CFG_ORDER_ORIG].g, order, err);
    if (rc) free_state(&c->cur);   /* the next variant of this ordering tries again */
    return rc;
}

static int gpu_prepare(xb_backend *b, const xb_problem *p, hg_stats *stats, rg_err *err)
{
    gpu_ctx *c = b->ctx;
    release_problem(c);
    c->prob = *p;
    memset(c->gather_state, 0, sizeof c->gather_state);
    if (xb_open_problem(&c->prob, &c->pl, &c->cur.g, err)) return -1;
    hg_stats_compute(c->cur.g, &c->stats);
    if (stats) *stats = c->stats;
    rg_err ferr;
    /* the same under every ordering; a bf16-store variant is held to the floor at its own widths */
    for (int bf = 0; bf < 2; bf++) c->have_floor[bf] = fl_floor_layer_store(&c->pl, c->cur.g, bf, &c->floor[bf], &ferr) == 0;
    if (kx_graph_upload(c->cur.g, &c->cur.kg, err)) return -1;
    c->cur.graph_uploaded = 1;
    c->cur.stage = kx_staging_new();
    return 0;
}

/* The graph as given (the other orderings are built from it). */
static const hg_graph *given_graph(const gpu_ctx *c)
{
    return c->order == CFG_ORDER_ORIG ? c->cur.g : c->parked[CFG_ORDER_ORIG].g;
}

/* The gather floor on the graph as given at both storage widths (docs/floor.md), measured once
 * per problem with the reference: a one-time cost that must not count against a variant's
 * --timeout (on synth:mag training it takes seconds). */
static void measure_gather_floors(gpu_ctx *c)
{
    if (c->gather_state[0] || kceil_disabled()) return;   /* skipped silently, as the ceilings are */
    int train = pl_is_train(c->pl.task);
    for (int bf = 0; bf < 2; bf++) {
        rg_err e;
        int rc = kgf_measure(given_graph(c), c->pl.dims.in_dim, c->pl.dims.out_dim, bf, train, &c->gather[bf], &e);
        c->gather_state[bf] = rc ? -1 : 1;
        if (rc) snprintf(c->gather_err[bf], sizeof c->gather_err[bf], "%.199s", e.msg);
    }
}

/* Metrics gather_fwd_ms, gather_bwd_ms (training) and gather_floor_ms, their sum, at the
 * variant's storage width; a failure is said once, in the evidence of the variant that met it. */
static void gather_floor(gpu_ctx *c, int bf, xb_result *r)
{
    size_t used = strlen(r->evidence);
    if (c->gather_state[bf] < 0 && c->gather_err[bf][0]) {
        snprintf(r->evidence + used, sizeof r->evidence - used, "; %s", c->gather_err[bf]);
        c->gather_err[bf][0] = 0;
    }
    if (c->gather_state[bf] != 1) return;
    int train = pl_is_train(c->pl.task);
    const kgf_floor *f = &c->gather[bf];
    snprintf(r->evidence + used, sizeof r->evidence - used, "; gather floor by %s%s%s", f->fwd_alg,
             train ? " and " : "", train ? f->bwd_alg : "");
    xb_add_metric(r, "gather_fwd_ms", "ms", f->fwd_ms);
    if (train) xb_add_metric(r, "gather_bwd_ms", "ms", f->bwd_ms);
    xb_add_metric(r, "gather_floor_ms", "ms", f->fwd_ms + f->bwd_ms);
}

static long long resident_bytes(void)
{
    long kb = rg_proc_kb("/proc/self/status", "VmRSS:");
    return kb < 0 ? -1 : (long long)kb * 1024;
}

/* Each ordering's graph keeps its float64 reference while it is parked, since variants of several
 * orderings interleave; on a large graph five of them do not fit in the host's memory (HGT training
 * on synth:mag: the worker was killed building the third). Before another is built, the least
 * recently used parked references are freed until the host has room for one more of the largest
 * size seen, with half again for the build's transient arrays; a freed one is built again when its
 * ordering comes back. */
static void make_room_for_reference(gpu_ctx *c)
{
    long long need = 0;
    for (int i = 0; i < NORDERS; i++)
        if (c->parked[i].ref && c->parked[i].ref_bytes > need) need = c->parked[i].ref_bytes;
    need += need / 2;
    long avail_kb;
    while (need > 0 && (avail_kb = rg_proc_kb("/proc/meminfo", "MemAvailable:")) >= 0 && (long long)avail_kb * 1024 < need) {
        int victim = -1;
        for (int i = 0; i < NORDERS; i++)
            if (c->parked[i].ref && (victim < 0 || c->parked[i].used < c->parked[victim].used)) victim = i;
        if (victim < 0) return;
        xv_reference_free(c->parked[victim].ref);
        c->parked[victim].ref = NULL;
    }
}

/* The float64 reference of the prepared problem, and its near-kink alternatives (training). */
static int gpu_prepare_reference(xb_backend *b, rg_err *err)
{
    gpu_ctx *c = b->ctx;
    measure_gather_floors(c);
    if (c->cur.ref) return 0;
    make_room_for_reference(c);
    ref_options ro = {.node_old_of = c->cur.node_old_of, .edge_old_of = c->cur.edge_old_of,
                      .input_scale = c->prob.input_scale};
    long long before = resident_bytes();
    int rc = xb_reference(&c->cur.ref, &c->pl, c->cur.g, &ro, err);
    long long after = resident_bytes();
    if (!rc && before >= 0 && after > before) c->cur.ref_bytes = after - before;
    return rc;
}

/* The run's span, whether it started cold, the layer's floors and the device's measured
 * ceilings: measurement metrics (docs/floor.md names them). */
static void span_floor_ceilings(gpu_ctx *c, const cg_config *cfg, const kx_timing *t, xb_result *r)
{
    xb_add_metric(r, "span_ms", "ms", t->span_ms);
    xb_add_metric(r, "flush_l2", "", t->flushed_l2);
    int bf = cfg->store_bf16 != 0;
    if (c->have_floor[bf]) {
        xb_add_metric(r, "floor_bytes", "byte", c->floor[bf].bytes);
        xb_add_metric(r, "floor_flops", "flop", c->floor[bf].flops);
    }
    gather_floor(c, bf, r);
    rg_err e;
    const kceil *k = kceil_get(&e);
    if (!k) return;
    xb_add_metric(r, "ceil_copy_Bps", "byte/s", k->copy_Bps);
    xb_add_metric(r, "ceil_l2_Bps", "byte/s", k->l2_Bps);
    xb_add_metric(r, "ceil_fp32_flops", "flop/s", k->fp32_flops);
    xb_add_metric(r, "ceil_tf32_flops", "flop/s", k->tf32_flops);
    xb_add_metric(r, "ceil_bf16_flops", "flop/s", k->bf16_flops);
    xb_add_metric(r, "l2_bytes", "byte", k->l2_bytes);
}

/* The flush buffer, allocated on first use and kept for the backend's life. */
static int flush_buffer(gpu_ctx *c, rg_err *err)
{
    if (c->flush_buf) return 0;
    size_t bytes = 2 * (size_t)c->dev.l2_bytes;
    if (krt_alloc(&c->flush_buf, bytes, err)) return -1;
    c->flush_bytes = bytes;
    return 0;
}

static void fill_timing(xb_result *r, const kx_timing *t)
{
    r->median_ms = t->median_ms;
    r->min_ms = t->min_ms;
    r->max_ms = t->max_ms;
    r->stddev_ms = t->stddev_ms;
    r->repeats = t->repeats;
    r->gemm_ms = t->gemm_ms;
    r->traversal_ms = t->traversal_ms;
    r->other_ms = t->other_ms;
    r->fwd_ms = t->fwd_ms;
    r->bwd_ms = t->bwd_ms;
    r->nkernels = 0;
    for (int i = 0; i < t->nkernels && r->nkernels < XB_MAX_KERNELS; i++) {
        xb_kernel *k = &r->kernels[r->nkernels++];
        snprintf(k->name, sizeof k->name, "%s", t->kernels[i].name);
        snprintf(k->category, sizeof k->category, "%s", kp_category_name(t->kernels[i].category));
        k->backward = t->kernels[i].backward;
        k->median_ns = t->kernels[i].median_ns;
        k->spread_ns = t->kernels[i].max_ns - t->kernels[i].min_ns;
    }
}

/* The launch sequence CUPTI's range profiler replays once per pass. */
typedef struct seq_run {
    const cg_variant *var;
    const kx_compiled *comp;
    const kx_buffers *bufs;
    const kx_graph *kg;
} seq_run;

static int run_sequence(void *ctx, rg_err *err)
{
    const seq_run *q = ctx;
    return kx_reset(q->var, q->bufs, err) ? -1 : kx_launch_each(q->var, q->comp, q->bufs, q->kg, err);
}

/* Hardware counters per kernel (--metrics). Rows are matched to kernels by launch order,
 * like the timings. A collection that fails leaves the timing result as it is and says why
 * in the evidence; a device fault makes the whole variant a runtime fault. */
static void collect_metrics(gpu_ctx *c, const cg_variant *var, const kx_compiled *comp, const kx_buffers *bufs,
                            xb_result *r)
{
    seq_run q = {var, comp, bufs, &c->cur.kg};
    kmet_result m;
    rg_err e;
    int rc = kmet_collect(kmet_default_metrics, kmet_default_count, NULL, run_sequence, &q, &m, &e);
    size_t used = strlen(r->evidence);
    if (rc) {
        snprintf(r->evidence + used, sizeof r->evidence - used, "; metrics not collected: %s", e.msg);
        if (e.code == RG_ERR_FAULT) {
            r->status = RS_RUNTIME_FAULT;
            r->err_class = e.code;
            r->cuda_error = e.cuda;
        }
        return;
    }
    int *order = rg_xmalloc((size_t)(var->plan.nkernels ? var->plan.nkernels : 1) * sizeof *order);
    int n = kx_launch_order(var, &c->cur.kg, order);
    for (size_t i = 0; i < m.nlaunch_rows && r->nmetrics < XB_MAX_METRICS; i++) {
        const kmet_row *row = &m.launch_rows[i];
        if (row->launch < 0 || row->launch >= n) continue;
        xb_metric *x = &r->metrics[r->nmetrics++];
        snprintf(x->kernel, sizeof x->kernel, "%s", var->plan.kernels[order[row->launch]].name);
        snprintf(x->name, sizeof x->name, "%s", row->metric);
        snprintf(x->unit, sizeof x->unit, "%s", row->unit ? row->unit : "");
        x->value = row->value;
    }
    if (m.plan.nskipped)
        snprintf(r->evidence + used, sizeof r->evidence - used, "; %d metric(s) not collected (first: %s: %s)",
                 m.plan.nskipped, m.plan.skipped[0].metric, m.plan.skipped[0].reason);
    free(order);
    kmet_free(&m);
}

/* Test hook: RGNN_INJECT_FAULT=<substring of the config string> makes the matching variants'
 * first kernel write through an invalid pointer, to show a real device fault is recorded as a
 * runtime fault while the sweep goes on (docs/perf-notes.md). */
static void maybe_inject_fault(const cg_config *cfg, cg_variant *var)
{
    const char *want = getenv("RGNN_INJECT_FAULT");
    if (!want || !*want || var->plan.nkernels == 0) return;
    char *cs = cfg_to_string(cfg);
    int hit = strstr(cs, want) != NULL;
    free(cs);
    if (!hit) return;
    kp_kernel *k = &var->plan.kernels[0];
    /* the kernel's own body, not one of the prelude's helpers */
    char *decl = strstr(k->source, "extern \"C\" __global__");
    char *body = decl ? strstr(decl, "\n{\n") : NULL;
    if (!body) return;
    size_t at = (size_t)(body - k->source) + 3;
    char *patched = rg_xasprintf("%.*s    if (blockIdx.x == 0 && threadIdx.x == 0) *(volatile float*)(0x40) = 1.f;  /* injected */\n%s",
                                 (int)at, k->source, k->source + at);
    free(k->source);
    k->source = patched;
}

/* The run's values for the validator, downloaded into the staging buffer. */
typedef struct device_source {
    gpu_ctx *c;
    const ir_program *ir;
    const kx_buffers *bufs;
} device_source;

static const void *device_values(void *ctx, int var, int64_t *n, int *elem, rg_err *err)
{
    device_source *d = ctx;
    return kx_download_staged(d->c->cur.stage, d->ir, d->bufs, &d->c->cur.kg, var, n, elem, err);
}

static int measure_variant(gpu_ctx *c, const ir_program *ir, const lw_program *lp, const cg_config *cfg,
                           const xb_options *opt, xb_result *r)
{
    rg_err e;
    cg_variant var;
    double t0 = rg_now();
    if (cg_build(ir, lp, cfg, &var, &e)) return xb_result_fail(r, RS_INVALID, &e);
    maybe_inject_fault(cfg, &var);
    cg_counts_fill(ir, &var, c->cur.g, &r->flops, &r->bytes, &r->atomics, &r->launches);
    kx_compiled comp;
    if (kx_compile(&var.plan, c->dev.sm, opt->compile_threads > 0 ? opt->compile_threads : 8, &comp, &e)) {
        cg_variant_free(&var);
        return xb_result_fail(r, RS_COMPILE_ERROR, &e);
    }
    r->compile_s = comp.compile_wall_s;
    r->build_s = rg_now() - t0 - r->compile_s;
    t0 = rg_now();
    kx_buffers bufs;
    const double **vals = NULL;
    int rc = 0;
    if (kx_load(&comp, &e)) {
        xb_run_failed(r, &e);
        goto done_compiled;
    }
    int resolved = kx_resolve(&var.plan, &comp, &e);
    if (resolved) {
        if (resolved == KX_TOO_MANY_THREADS) xb_result_fail(r, RS_INVALID, &e);
        else xb_run_failed(r, &e);
        goto done_compiled;
    }
    mp_status ms = kx_alloc(ir, &var, &c->cur.kg, c->prob.mem_limit, &bufs, &e);
    if (ms != MP_OK) {
        xb_result_fail(r, ms == MP_OOM ? RS_OOM : RS_LAUNCH_ERROR, &e);
        kx_buffers_free(&bufs);
        goto done_compiled;
    }
    r->peak_mem_bytes = (int64_t)kx_peak_bytes(&bufs);
    vals = xv_input_values(c->cur.ref, ir, &e);
    if (!vals) {
        rc = -1;
        xb_result_fail(r, RS_INVALID, &e);
        goto done_buffers;
    }
    if (kx_prepare(ir, &var, &bufs, vals, c->cur.stage, &e)) {
        xb_run_failed(r, &e);
        goto done_buffers;
    }
    r->setup_s = rg_now() - t0;
    t0 = rg_now();
    if (kx_launch_all(&var, &comp, &bufs, &c->cur.kg, &e)) {
        xb_run_failed(r, &e);
        goto done_buffers;
    }
    double t_run = rg_now();
    device_source ds = {c, ir, &bufs};
    xv_source src = {device_values, &ds};
    int ok = xb_judge_run(c->cur.ref, &c->pl, cfg, ir, lp, &var, &src, vals, opt, r);
    r->validate_s = rg_now() - t0;
    double run_ms = 1e3 * (t_run - t0);
    if (!ok) goto done_buffers;
    if (opt->validate_only) goto done_buffers;
    t0 = rg_now();
    int warmup = opt->warmup >= 0 ? opt->warmup : 3, repeats = opt->repeats > 0 ? opt->repeats : 10;
    if (opt->slow_ms > 0 && run_ms > opt->slow_ms) {
        /* the validation run was the warm-up: see xb_options.slow_ms */
        warmup = 0;
        repeats = 1;
        size_t used = strlen(r->evidence);
        snprintf(r->evidence + used, sizeof r->evidence - used, "; timed once: its validation run took %.1f ms, over %.1f ms",
                 run_ms, opt->slow_ms);
    }
    kx_timing t;
    if ((opt->flush_l2 && flush_buffer(c, &e)) ||
        kx_time(&var, &comp, &bufs, &c->cur.kg, warmup, repeats, opt->flush_l2 ? c->flush_buf : NULL,
                opt->flush_l2 ? c->flush_bytes : 0, &t, &e)) {
        xb_run_failed(r, &e);
        goto done_buffers;
    }
    fill_timing(r, &t);
    span_floor_ceilings(c, cfg, &t, r);
    kx_timing_free(&t);
    r->time_s = rg_now() - t0;
    if (opt->metrics) collect_metrics(c, &var, &comp, &bufs, r);
done_buffers:
    free(vals);
    kx_buffers_free(&bufs);
done_compiled:
    kx_compiled_free(&comp);
    cg_variant_free(&var);
    return rc;
}

static int gpu_measure(xb_backend *b, const cg_config *cfg, const xb_options *opt, xb_result *r, rg_err *err)
{
    gpu_ctx *c = b->ctx;
    xb_result_init(r);
    if (!c->cur.g && !c->parked[CFG_ORDER_ORIG].g) return rg_errf(err, "measure before prepare");
    rg_err e;
    if (cfg_validate(cfg, &e)) return xb_result_fail(r, RS_INVALID, &e);
    cg_config dflt;
    cfg_default(&dflt);
    if (cfg->part != dflt.part) {
        rg_errf(&e, "part= splits relations over several GPUs: it applies to layers run with --ranks N");
        return xb_result_fail(r, RS_INVALID, &e);
    }
    if (use_order(c, cfg->relabel, &e)) return xb_run_failed(r, &e);
    if (gpu_prepare_reference(b, err)) return -1;
    /* the ordering's one-time cost, apart from the layer's time */
    if (cfg->relabel != CFG_ORDER_ORIG) xb_add_metric(r, "order_s", "s", c->cur.order_s);
    ir_program *ir = NULL;
    lw_program *lp = NULL;
    if (pl_build(&c->pl, cfg, c->cur.g, NULL, &ir, &lp, &e)) return xb_result_fail(r, RS_INVALID, &e);
    measure_variant(c, ir, lp, cfg, opt, r);
    lw_free(lp);
    ir_free(ir);
    return 0;
}

static void gpu_device(xb_backend *b, char *gpu_name, size_t n, int *sm, char *driver, char *cuda, char *cupti,
                       size_t vn)
{
    gpu_ctx *c = b->ctx;
    snprintf(gpu_name, n, "%s", c->dev.name);
    *sm = c->dev.sm;
    snprintf(driver, vn, "%d.%d", c->dev.driver_version / 1000, (c->dev.driver_version % 1000) / 10);
    snprintf(cuda, vn, "%d.%d", c->dev.runtime_version / 1000, (c->dev.runtime_version % 1000) / 10);
    uint32_t v = 0;
    if (cuptiGetVersion(&v) == CUPTI_SUCCESS) snprintf(cupti, vn, "%u", v);
    else snprintf(cupti, vn, "unknown");
}

static void gpu_close(xb_backend *b)
{
    gpu_ctx *c = b->ctx;
    release_problem(c);
    krt_free(c->flush_buf);
    free(c);
    free(b);
}

xb_backend *xb_gpu_backend(rg_err *err)
{
    gpu_ctx *c = rg_xcalloc(1, sizeof *c);
    if (krt_init(0, &c->dev, err)) {
        free(c);
        return NULL;
    }
    xb_backend *b = rg_xcalloc(1, sizeof *b);
    b->name = "gpu";
    b->ctx = c;
    b->prepare = gpu_prepare;
    b->prepare_reference = gpu_prepare_reference;
    b->measure = gpu_measure;
    b->device = gpu_device;
    b->close = gpu_close;
    return b;
}
