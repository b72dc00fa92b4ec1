/* The path from a model name to a variant's programs: parse, apply the passes a config
 * selects, append the backward program for training, and lower to template instances. */
#include "codegen/pipeline.h"
#include "codegen/emit_gemm.h"
#include "codegen/codegen.h"
#include "codegen/emit_trav.h"
#include "codegen/model.h"
#include "codegen/pass_recompute.h"
#include "codegen/pass_softmax.h"
#include "codegen/vartype.h"

#include <stdlib.h>
#include <string.h>

int pl_parse_task(const char *task, const char **canonical, rg_err *err)
{
    if (!task || !strcmp(task, "infer") || !strcmp(task, "inference")) *canonical = "infer";
    else if (!strcmp(task, "train") || !strcmp(task, "training")) *canonical = "train";
    else return rg_errf(err, "unknown task '%s' (expected infer or train)", task);
    return 0;
}

int pl_is_train(const char *task) { return task && !strncmp(task, "train", 5); }

ir_program *pl_reference_program(const pl_problem *p, rg_err *err)
{
    return model_load(p->model, &p->dims, p->task, err);
}

/* wrun changes only the kernels that sum weight gradients, crsum only those that sum into compact
 * rows, recompute only what the forward pass stores for the backward: an inference plan has none of
 * them, a plan without compaction no compact rows. */
static int run_applies(const pl_problem *p, const cg_config *cfg, rg_err *err)
{
    if (cfg->wrun != 32 && !pl_is_train(p->task)) {
        rg_errf(err, "wrun=%d changes only the traversals that sum weight gradients, and inference has none: it "
                     "would duplicate wrun=32", cfg->wrun);
        return 0;
    }
    if (cfg->recompute && !pl_is_train(p->task)) {
        /* here, before the program is parsed, as model_load_opts would say it after: inference points
         * of the default space are refused by the hundred thousand */
        rg_errf(err, "recompute=on does not apply to %s infer: " PRC_INFERENCE_WHY, p->model);
        return 0;
    }
    if (cfg->dinit && !pl_is_train(p->task)) {
        rg_errf(err, "dinit=gemm does not apply to %s infer: inference has no backward program", p->model);
        return 0;
    }
    if (cfg->rmax && pl_is_train(p->task)) {
        rg_errf(err, "rmax=on is built for inference: training's backward reads the forward's attention sum as an "
                     "unshifted one, and would need the running maximum stored beside it (not built)");
        return 0;
    }
    if (cfg->crsum == CFG_CRSUM_ATOMIC || (pl_is_train(p->task) && cfg->compact != CFG_COMPACT_OFF)) return 1;
    char name[CFG_VALUE_MAX];
    cfg_value(cfg_find_key("crsum"), cfg, name);
    if (!pl_is_train(p->task))
        rg_errf(err, "crsum=%s changes only the traversals that sum into compact (src, etype) rows, and inference has "
                     "none: it would duplicate crsum=atomic", name);
    else
        rg_errf(err, "crsum=%s changes only the traversals that sum into compact (src, etype) rows, and compact=off "
                     "has none: it would duplicate crsum=atomic", name);
    return 0;
}

/* No mapping is refused for giving wrong answers. Sessions 6-10 refused some in training (fewer than
 * 16 lanes with two-pass softmax on dst-sorted runs, fewer than 32 with acc=reg there, acc=reg with
 * trav=node) for NaN outputs that memcheck and racecheck did not explain. The cause (session 22):
 * kernels marked the buffers they write __restrict__, and where one lane stores an edge's value that
 * the group's other lanes read after a __syncwarp, the compiler hoisted those reads above the barrier
 * (codegen/emit_trav.c, assemble). With written buffers not restrict, all of them validate. */
int pl_schedule_applies(const pl_problem *p, const cg_config *cfg, rg_err *err)
{
    /* the global schedule (i = -1), then each overridden instance's, named in the reason */
    for (int i = -1; i < cfg->noverrides; i++) {
        const char *inst = i < 0 ? NULL : cfg_override_instance(&cfg->overrides[i]);
        if (i > 0 && cfg->overrides[i].inst == cfg->overrides[i - 1].inst) continue;
        cg_config one;
        if (inst) cfg_for_instance(cfg, inst, &one);
        else one = *cfg;
        if (et_mapping_applies(&one, &p->dims, err) && run_applies(p, &one, err))
            continue;
        if (inst) rg_err_prefix(err, "%s", inst);
        return 0;
    }
    return 1;
}

/* crsum=split differs from crsum=run only where a traversal that sums into compact rows has other
 * sums or outputs to split off (RGCN's backward has none). */
static int split_applies(const ir_program *ir, const lw_program *lp, const cg_config *cfg, rg_err *err)
{
    if (cfg->crsum != CFG_CRSUM_SPLIT) return 1;
    int found = 0;
    int *mat = rg_xcalloc((size_t)(ir->nvars ? ir->nvars : 1), sizeof *mat);
    cg_materialization(ir, lp, cfg, mat);
    for (int i = 0; i < lp->ninst && !found; i++) {
        const lw_instance *in = &lp->inst[i];
        if (in->kind != LW_TRAV || !et_compact_walk(ir, &in->u.trav, cfg)) continue;
        int *keep = rg_xmalloc((size_t)(in->u.trav.nstmts ? in->u.trav.nstmts : 1) * sizeof *keep);
        found = et_split_part(ir, &in->u.trav, mat, 2, keep) > 0;
        free(keep);
    }
    free(mat);
    if (!found)
        rg_errf(err, "crsum=split makes two kernels only of a traversal that sums into compact (src, etype) rows and "
                     "has other sums; this problem has none, so it would duplicate crsum=run");
    return found;
}

/* crsum=defer differs from crsum=run only where a backward traversal sums rows over destinations (RGCN's
 * has none; RGAT's without reordering leaves it to a GEMM) and what remains of it walks the compact rows. */
static int defer_applies(const ir_program *ir, const lw_program *lp, const cg_config *cfg, rg_err *err)
{
    if (cfg->crsum != CFG_CRSUM_DEFER) return 1;
    int deferred = 0, walks = 0;
    for (int i = 0; i < lp->ninst; i++) {
        const lw_instance *in = &lp->inst[i];
        if (in->kind != LW_TRAV || !in->backward) continue;
        deferred += in->u.trav.deferred;
        walks += et_compact_walk(ir, &in->u.trav, cfg);
    }
    if (deferred && walks) return 1;
    rg_errf(err, "crsum=defer moves a backward traversal's sums over destinations out of its walk of the compact (src, "
                 "etype) rows; this problem has %s, so it would duplicate crsum=run",
            deferred ? "no such walk" : "no such sums");
    return 0;
}

static int has_message_linear(const ir_program *ir)
{
    for (int i = 0; i < ir->nstmts; i++)
        if (lw_message_linear(ir, i)) return 1;
    return 0;
}

/* nchunk changes only node-centric kernels that walk a node's edges once (et_node_split). */
static int nchunk_applies(const ir_program *ir, const lw_program *lp, const cg_config *cfg, rg_err *err)
{
    if (cfg->nchunk == 64) return 1;
    for (int i = 0; i < lp->ninst; i++)
        if (lp->inst[i].kind == LW_TRAV && et_node_split(ir, &lp->inst[i].u.trav, cfg)) return 1;
    rg_errf(err, "nchunk=%d splits heavy nodes of node-centric kernels that walk a node's edges once; this plan has "
                 "none (its node-centric kernels walk each node's edges in several passes, or it has none): it would "
                 "duplicate nchunk=64", cfg->nchunk);
    return 0;
}

typedef int (*kernel_count_fn)(const ir_program *ir, const lw_trav *tr, const int *mat, const cg_config *cfg);

/* What `count` finds (et_lane_scalars, et_prefetches) over the traversals whose effective config sets the key
 * (`is_set`); *bad: the first instance that sets it by an override of its own and has none, or -1, where the
 * count stops (so that the reason names it). */
static int count_in_kernels(const ir_program *ir, const lw_program *lp, const cg_config *cfg,
                            int (*is_set)(const cg_config *), kernel_count_fn count, int *bad)
{
    int *mat = NULL;   /* found only for a plan that sets the key: every other build passes here too */
    int total = 0;
    *bad = -1;
    for (int i = 0; i < lp->ninst && *bad < 0; i++) {
        const lw_instance *in = &lp->inst[i];
        if (in->kind != LW_TRAV) continue;
        cg_config one;
        cfg_for_instance(cfg, in->name, &one);
        if (!is_set(&one)) continue;
        if (!mat) {
            mat = rg_xcalloc((size_t)(ir->nvars ? ir->nvars : 1), sizeof *mat);
            cg_materialization(ir, lp, cfg, mat);
        }
        int n = count(ir, &in->u.trav, mat, &one);
        total += n;
        if (!n && !is_set(cfg)) *bad = i;
    }
    free(mat);
    return total;
}

static int sets_lanes(const cg_config *c) { return c->lane_scalars != CFG_SCALARS_GROUP; }
static int sets_pfetch(const cg_config *c) { return c->pfetch; }
static int sets_rowpf(const cg_config *c) { return c->rowpf != CFG_ROWPF_OFF; }
static int sets_wacc(const cg_config *c) { return c->wacc; }

/* scalars=lane and scalars=replicated change only traversals with per-edge scalars a lane can evaluate
 * alone (et_lane_scalars): a plan, or an instance set to one by name, without any would duplicate
 * scalars=group. */
static int lanes_apply(const ir_program *ir, const lw_program *lp, const cg_config *cfg, rg_err *err)
{
    int bad, total = count_in_kernels(ir, lp, cfg, sets_lanes, et_lane_scalars, &bad);
    if (bad < 0 && (!cfg->lane_scalars || total)) return 1;
    char value[CFG_VALUE_MAX];
    if (bad >= 0) {
        cg_config one;
        cfg_for_instance(cfg, lp->inst[bad].name, &one);
        rg_errf(err, "%s.scalars=%s: %s has no per-edge scalars a lane could evaluate alone, so it would duplicate "
                     "scalars=group", lp->inst[bad].name, cfg_value(cfg_find_key("scalars"), &one, value),
                lp->inst[bad].name);
    } else {
        rg_errf(err, "scalars=%s evaluates per-edge scalars (attention scores) in a lane's registers; this plan's "
                     "traversals have none, so it would duplicate scalars=group",
                cfg_value(cfg_find_key("scalars"), cfg, value));
    }
    return 0;
}

/* A traversal key that changes only kernels holding what it acts on (`count`: how many such things the
 * kernels of a traversal hold under a config): a plan, or an instance set to it by name, without any would
 * duplicate the key's default. */
typedef struct trav_key {
    int (*sets)(const cg_config *c);
    int (*count)(const ir_program *ir, const lw_trav *tr, const int *materialized, const cg_config *cfg);
    const char *setting;    /* as the message names it after the instance */
    const char *lacks;      /* what an instance without any lacks */
    const char *plan_why;   /* what the key does, and that the plan has none */
    const char *dflt;       /* the value it would duplicate */
} trav_key;

static const trav_key trav_keys[] = {
    /* per-edge scalar operands to load with the ids (et_prefetches) */
    {sets_pfetch, et_prefetches, "pfetch=on", "reads no per-edge scalar operand from device memory",
     "pfetch=on loads per-edge scalar operands with the edges' ids; this plan's traversals read none", "pfetch=off"},
    /* rows gathered at ids random in the walk (et_row_prefetches) */
    {sets_rowpf, et_row_prefetches, "rowpf", "gathers no feature row at an id its walk visits out of order",
     "rowpf prefetches the feature rows edges gather out of their walk's order; this plan's traversals gather none",
     "rowpf=off"},
    /* weight-gradient sums registers can hold (et_wacc_registers) */
    {sets_wacc, et_wacc_registers, "wacc=reg",
     "has no weight-gradient sums that registers could hold (they need one edge-type slot, every statement adding "
     "at its own element, and room beside acc=reg's accumulators in 16 doubles a lane)",
     "wacc=reg keeps a traversal's weight-gradient sums in registers; this plan has none that registers could hold",
     "wacc=smem"},
};

static int trav_keys_apply(const ir_program *ir, const lw_program *lp, const cg_config *cfg, rg_err *err)
{
    for (size_t k = 0; k < sizeof trav_keys / sizeof *trav_keys; k++) {
        const trav_key *t = &trav_keys[k];
        int bad, total = count_in_kernels(ir, lp, cfg, t->sets, t->count, &bad);
        if (bad >= 0) {
            rg_errf(err, "%s.%s: %s %s, so it would duplicate %s", lp->inst[bad].name, t->setting, lp->inst[bad].name,
                    t->lacks, t->dflt);
            return 0;
        }
        if (t->sets(cfg) && !total) {
            rg_errf(err, "%s, so it would duplicate %s", t->plan_why, t->dflt);
            return 0;
        }
    }
    return 1;
}

/* gvec=on changes only tensor-core GEMMs with a float32 output whose rows keep float4 alignment
 * (eg_gvec_changes): a plan, or an instance set to it by name, without one would duplicate gvec=off. */
static int gvec_applies(const ir_program *ir, const lw_program *lp, const cg_config *cfg, rg_err *err)
{
    int total = 0;
    for (int i = 0; i < lp->ninst; i++) {
        const lw_instance *in = &lp->inst[i];
        if (in->kind != LW_GEMM) continue;
        cg_config one;
        cfg_for_instance(cfg, in->name, &one);
        if (!one.gvec) continue;
        int n = eg_gvec_changes(ir, &in->u.gemm, &one);
        total += n;
        if (!n && !cfg->gvec) {
            rg_errf(err, "%s.gvec=on: %s has no float32 tensor-core output whose rows keep 16-byte alignment, so it "
                         "would duplicate gvec=off", in->name, in->name);
            return 0;
        }
    }
    if (cfg->gvec && !total) {
        rg_errf(err, "gvec=on writes tensor-core GEMMs' float32 outputs and dW tiles 4 floats a thread; this plan "
                     "has none (its outputs are bfloat16, or their rows lose 16-byte alignment), so it would duplicate "
                     "gvec=off");
        return 0;
    }
    return 1;
}

/* epi=on changes only a plan with an aggregation whose node statements it can run (cg_fusions). */
static int epi_applies(const ir_program *ir, const lw_program *lp, const cg_config *cfg, rg_err *err)
{
    if (!cfg->epilogue) return 1;
    int *mat = rg_xcalloc((size_t)(ir->nvars ? ir->nvars : 1), sizeof *mat);
    et_fusion *fu = rg_xcalloc((size_t)(lp->ninst ? lp->ninst : 1), sizeof *fu);
    cg_materialization(ir, lp, cfg, mat);
    const char *why;
    int n = cg_fusions(ir, lp, cfg, mat, fu, &why);
    free(fu);
    free(mat);
    if (!n)
        rg_errf(err, "epi=on runs the node statements after an aggregation (the softmax's division) in the aggregating "
                     "kernel; this plan has no such pair (%s), so it would duplicate epi=off",
                why ? why : "no aggregation is followed by node statements: it needs softmax=single on a model with attention");
    return n > 0;
}

/* The passes cfg chooses, as model_load_opts takes them. */
static model_options pass_options(const pl_problem *p, const cg_config *cfg, const rr_stats *rs, FILE *log,
                                  int *inapplicable)
{
    return (model_options){
        .task = p->task,
        .reorder = cfg->reorder,
        .compact = cfg->compact != CFG_COMPACT_OFF,
        .dots_per_edge = cfg->cdot,
        .stats = rs,
        .log = log,
        .softmax_single = cfg->softmax == CFG_SOFTMAX_SINGLE,
        .recompute = cfg->recompute,
        .dinit = cfg->dinit,
        .inapplicable = inapplicable,
    };
}

int pl_passes_apply(const pl_problem *p, const cg_config *cfg, rg_err *err)
{
    rr_stats rs;
    rr_stats_nominal(&rs);
    int inapplicable = 0;
    model_options mo = pass_options(p, cfg, &rs, NULL, &inapplicable);
    ir_program *ir = model_load_opts(p->model, &p->dims, &mo, err);
    ir_free(ir);
    return !inapplicable;
}

int pl_build(const pl_problem *p, const cg_config *cfg, const hg_graph *g, FILE *log, ir_program **ir_out,
             lw_program **lp_out, rg_err *err)
{
    rr_stats rs;
    if (g) rr_stats_from_graph(&rs, g, g->name);
    return pl_build_stats(p, cfg, g ? &rs : NULL, log, ir_out, lp_out, err);
}

int pl_build_stats(const pl_problem *p, const cg_config *cfg, const rr_stats *stats, FILE *log, ir_program **ir_out,
                   lw_program **lp_out, rg_err *err)
{
    *ir_out = NULL;
    *lp_out = NULL;
    if (!pl_schedule_applies(p, cfg, err)) return PL_INAPPLICABLE;
    rr_stats rs;
    int inapplicable = 0;
    if (stats) rs = *stats;
    else rr_stats_nominal(&rs);
    model_options mo = pass_options(p, cfg, &rs, log, &inapplicable);
    ir_program *ir = model_load_opts(p->model, &p->dims, &mo, err);
    if (!ir) return inapplicable ? PL_INAPPLICABLE : -1;
    /* after every pass (and autodiff): eligibility reads the final program's writers */
    vt_mark_storage(ir, cfg->store_bf16);
    if (cfg->msg && !has_message_linear(ir)) {
        rg_errf(err, "msg=trav computes per-edge typed linears in the traversal; %s has none, so it would "
                     "duplicate msg=gemm", p->model);
        ir_free(ir);
        return PL_INAPPLICABLE;
    }
    psm_online online;
    if (cfg->rmax && !psm_find_online(ir, &online, 1)) {
        rg_errf(err, "rmax=on keeps a running maximum in a single-pass softmax aggregation; %s has none after the "
                     "passes, so it would duplicate rmax=off", p->model);
        ir_free(ir);
        return PL_INAPPLICABLE;
    }
    lw_options lo = {.fuse = 1, .msg_in_trav = cfg->msg, .defer_dst_sums = cfg->crsum == CFG_CRSUM_DEFER};
    lw_program *lp = lw_lower_opts(ir, &lo, err);
    if (!lp) {
        ir_free(ir);
        return -1;
    }
    if (!split_applies(ir, lp, cfg, err) || !defer_applies(ir, lp, cfg, err) || !nchunk_applies(ir, lp, cfg, err) ||
        !lanes_apply(ir, lp, cfg, err) || !trav_keys_apply(ir, lp, cfg, err) ||
        !epi_applies(ir, lp, cfg, err) || !gvec_applies(ir, lp, cfg, err)) {
        lw_free(lp);
        ir_free(ir);
        return PL_INAPPLICABLE;
    }
    *ir_out = ir;
    *lp_out = lp;
    return 0;
}

int pl_build_verdict(const pl_problem *p, const cg_config *cfg, const hg_graph *g, rg_err *err)
{
    ir_program *ir;
    lw_program *lp;
    int rc = pl_build(p, cfg, g, NULL, &ir, &lp, err);
    if (rc == 0) {
        lw_free(lp);
        ir_free(ir);
    }
    return rc;
}
