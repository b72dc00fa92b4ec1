/* The measurement backend of layers over several GPUs: builds a variant once, partitions the
 * relations, runs it on every rank with its collectives, validates the whole layer, times it. */
#include "measure/mgpu_backend.h"
#include "codegen/collective.h"
#include "codegen/counts.h"
#include "codegen/pipeline.h"
#include "datasets/relpart.h"
#include "runtime/mgpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct mgb_ctx {
    mg_layer *L;
    xb_problem prob;
    pl_problem pl;
    hg_graph *g;
    xv_reference *ref;
} mgb_ctx;

static void release_problem(mgb_ctx *c)
{
    xv_reference_free(c->ref);
    c->ref = NULL;
    hg_free(c->g);
    c->g = NULL;
}

static int mgb_prepare(xb_backend *b, const xb_problem *p, hg_stats *stats, rg_err *err)
{
    mgb_ctx *c = b->ctx;
    release_problem(c);
    c->prob = *p;
    if (xb_open_problem(&c->prob, &c->pl, &c->g, err)) return -1;
    if (stats) hg_stats_compute(c->g, stats);
    return 0;
}

static int mgb_prepare_reference(xb_backend *b, rg_err *err)
{
    mgb_ctx *c = b->ctx;
    ref_options ro = {.input_scale = c->prob.input_scale};
    return xb_reference(&c->ref, &c->pl, c->g, &ro, err);
}

static const void *layer_values(void *ctx, int var, int64_t *n, int *elem, rg_err *err)
{
    return mg_values(ctx, var, n, elem, err);
}

static void fill_timing(const mg_timing *t, int nranks, const char *part, xb_result *r)
{
    r->median_ms = t->wall_ms;
    r->min_ms = t->min_ms;
    r->max_ms = t->max_ms;
    r->repeats = t->repeats;
    xb_add_metric(r, "gpus", "", nranks);
    xb_add_metric(r, "span_ms", "ms", t->span_ms);
    xb_add_metric(r, "comm_ms", "ms", t->comm_ms);
    xb_add_metric(r, "comm_bytes", "byte", t->comm_bytes);
    xb_add_metric(r, "collectives", "", t->ncollectives);
    double peak = 0;
    for (int k = 0; k < nranks && k < 16; k++) {
        char name[32];
        snprintf(name, sizeof name, "peak_bytes_rank%d", k);
        xb_add_metric(r, name, "byte", t->rank_peak_bytes[k]);
        peak = fmax(peak, t->rank_peak_bytes[k]);
    }
    r->peak_mem_bytes = (int64_t)peak;
    size_t used = strlen(r->evidence);
    snprintf(r->evidence + used, sizeof r->evidence - used, "%s%d GPUs, relations split by %s, %d all-reduces",
             used ? "; " : "", nranks, part, t->ncollectives);
}

static void run_variant(mgb_ctx *c, const ir_program *ir, const lw_program *lp, const cg_config *cfg,
                        const xb_options *opt, xb_result *r)
{
    rg_err e;
    cg_variant var;
    if (cg_build(ir, lp, cfg, &var, &e)) {
        xb_result_fail(r, RS_INVALID, &e);
        return;
    }
    cg_counts_fill(ir, &var, c->g, &r->flops, &r->bytes, &r->atomics, &r->launches);
    col_plan cp = {0};
    int32_t *owner = rg_xmalloc((size_t)c->g->num_etypes * sizeof *owner);
    const double **vals = NULL;
    if (col_plan_build(ir, lp, &var, &cp, &e) || rlp_partition(c->g, mg_nranks(c->L), (rlp_method)cfg->part, owner, &e)) {
        if (cp.state) col_plan_free(&cp);
        xb_result_fail(r, RS_INVALID, &e);
        goto done_variant;
    }
    vals = xv_input_values(c->ref, ir, &e);
    int oom = 0;
    if (!vals) {
        xb_result_fail(r, RS_INVALID, &e);
    } else if (mg_setup(c->L, ir, &var, &cp, c->g, owner, vals, c->prob.mem_limit, &oom, &e)) {
        if (oom) xb_result_fail(r, RS_OOM, &e);
        else xb_run_failed(r, &e);
    } else if (mg_run(c->L, &e)) {
        xb_run_failed(r, &e);
    } else if (xb_judge_run(c->ref, &c->pl, cfg, ir, lp, &var, &(xv_source){layer_values, c->L}, vals, opt, r) &&
               !opt->validate_only) {
        mg_timing t;
        int warmup = opt->warmup >= 0 ? opt->warmup : 3, repeats = opt->repeats > 0 ? opt->repeats : 10;
        if (mg_time(c->L, warmup, repeats, &t, &e)) xb_run_failed(r, &e);
        else fill_timing(&t, mg_nranks(c->L), rlp_method_name((rlp_method)cfg->part), r);
    }
    mg_teardown(c->L);
    free(vals);
    col_plan_free(&cp);
done_variant:
    free(owner);
    cg_variant_free(&var);
}

static int mgb_measure(xb_backend *b, const cg_config *cfg, const xb_options *opt, xb_result *r, rg_err *err)
{
    mgb_ctx *c = b->ctx;
    xb_result_init(r);
    if (!c->g) return rg_errf(err, "measure before prepare");
    if (mgb_prepare_reference(b, err)) return -1;
    rg_err e;
    if (cfg_validate(cfg, &e)) return xb_result_fail(r, RS_INVALID, &e);
    if (cfg->relabel != CFG_ORDER_ORIG) {
        rg_errf(&e, "relabel= is not applied by layers over several GPUs: their ranks run the graph as given");
        return xb_result_fail(r, RS_INVALID, &e);
    }
    if (cfg->store_bf16) {
        rg_errf(&e, "store=bf16 is not run by layers over several GPUs: their read-back (mg_values) returns elements "
                    "as stored, and the validator reads float32 or float64 only");
        return xb_result_fail(r, RS_INVALID, &e);
    }
    if (cfg->rmax) {
        /* each rank's sums would be shifted by its own relations' maximum, and the all-reduce adds them as they are */
        rg_errf(&e, "rmax=on is not run by layers over several GPUs: each rank's softmax sums are relative to its own "
                    "relations' running maximum, which the all-reduce of the node sums does not rescale");
        return xb_result_fail(r, RS_INVALID, &e);
    }
    ir_program *ir = NULL;
    lw_program *lp = NULL;
    if (pl_build(&c->pl, cfg, c->g, NULL, &ir, &lp, &e)) return xb_result_fail(r, RS_INVALID, &e);
    double t0 = rg_now();
    run_variant(c, ir, lp, cfg, opt, r);
    r->time_s = rg_now() - t0;
    lw_free(lp);
    ir_free(ir);
    return 0;
}

static void mgb_device(xb_backend *b, char *gpu_name, size_t n, int *sm, char *driver, char *cuda, char *cupti,
                       size_t vn)
{
    mgb_ctx *c = b->ctx;
    snprintf(gpu_name, n, "%s x%d", mg_device_name(c->L), mg_nranks(c->L));
    *sm = mg_sm(c->L);
    snprintf(driver, vn, "unknown");
    snprintf(cuda, vn, "unknown");
    snprintf(cupti, vn, "none (host wall time)");
}

static void mgb_close(xb_backend *b)
{
    mgb_ctx *c = b->ctx;
    release_problem(c);
    mg_close(c->L);
    free(c);
    free(b);
}

xb_backend *xb_mgpu_backend(int nranks, rg_err *err)
{
    mg_layer *L = mg_open(nranks, err);
    if (!L) return NULL;
    mgb_ctx *c = rg_xcalloc(1, sizeof *c);
    c->L = L;
    xb_backend *b = rg_xcalloc(1, sizeof *b);
    b->name = "mgpu";
    b->ctx = c;
    b->prepare = mgb_prepare;
    b->prepare_reference = mgb_prepare_reference;
    b->measure = mgb_measure;
    b->device = mgb_device;
    b->close = mgb_close;
    return b;
}
