/* From a lowered program and one config to a launch plan: decides which variables live in
 * device memory, emits every instance's kernels in program order (each with its per-kernel
 * overrides applied), and lists zero-fills. */
#include "codegen/codegen.h"
#include "codegen/emit_gemm.h"
#include "codegen/emit_loss.h"
#include "codegen/emit_trav.h"
#include "codegen/emit_wmm.h"
#include "codegen/pass_softmax.h"
#include "codegen/templates.h"

#include <stdlib.h>
#include <string.h>

#define TOUCH_NONE (-1)
#define TOUCH_MANY (-2)

static void touch(int *owner, int var, int inst)
{
    if (var < 0) return;
    if (owner[var] == TOUCH_NONE) owner[var] = inst;
    else if (owner[var] != inst) owner[var] = TOUCH_MANY;
}

static void touch_stmt(int *owner, const ir_stmt *s, int inst)
{
    touch(owner, s->out.var, inst);
    for (int k = 0; k < s->nin; k++) touch(owner, s->in[k].var, inst);
}

/* Which instance touches each variable (TOUCH_MANY if several). */
static void find_owners(const ir_program *ir, const lw_program *lp, int *owner)
{
    for (int v = 0; v < ir->nvars; v++) owner[v] = TOUCH_NONE;
    for (int i = 0; i < lp->ninst; i++) {
        const lw_instance *in = &lp->inst[i];
        if (in->kind == LW_GEMM) touch_stmt(owner, &ir->stmts[in->u.gemm.stmt], i);
        else if (in->kind == LW_FALLBACK) touch_stmt(owner, &ir->stmts[in->u.fallback_stmt], i);
        else
            for (int j = 0; j < in->u.trav.nstmts; j++) touch_stmt(owner, &ir->stmts[in->u.trav.stmts[j].stmt], i);
        if (in->kind == LW_GEMM && in->u.gemm.scalar_var >= 0) touch(owner, in->u.gemm.scalar_var, i);
        /* a GEMM that fuses an aggregation (y[dst] += s * x W) writes a variable its statement
         * does not name: without this a node-wise reader of y would keep it as scratch */
        if (in->kind == LW_GEMM) touch(owner, in->u.gemm.y_var, i);
    }
}

/* Variables whose values the run reports or validates can never be scratch. */
static int must_materialize(const ir_program *ir, int v)
{
    const ir_var *x = &ir->vars[v];
    if (x->role != IR_ROLE_TEMP || v == ir->output || v == ir->loss) return 1;
    if (x->layout == IR_LAYOUT_COMPACT || x->kind == IR_VAR_WEIGHT || x->kind == IR_VAR_SCALAR) return 1;
    if (x->grad_of >= 0) {
        ir_role r = ir->vars[x->grad_of].role;
        if (r == IR_ROLE_PARAM || r == IR_ROLE_INPUT) return 1;
    }
    return 0;
}

/* A temporary touched only by this traversal can live in per-row shared memory when every
 * access sees the same row within one pass, or (node-centric) it is a per-dst sum. */
static int scratch_ok(const ir_program *ir, const lw_trav *tr, const int *phases, int node_form, int v)
{
    const ir_var *x = &ir->vars[v];
    int phase = -1, agg_only = 1;
    for (int i = 0; i < tr->nstmts; i++) {
        const ir_stmt *s = &ir->stmts[tr->stmts[i].stmt];
        const ir_operand *ops[1 + IR_MAX_IN];
        int nops = 0;
        ops[nops++] = &s->out;
        for (int k = 0; k < s->nin; k++) ops[nops++] = &s->in[k];
        for (int k = 0; k < nops; k++) {
            if (ops[k]->var != v) continue;
            if (ops[k]->acc != IR_ACC_ROW) {
                if (!(ops[k]->acc == IR_ACC_DST && x->kind == IR_VAR_NODE)) return 0;
            } else {
                agg_only = 0;
            }
            if (k == 0 && s->op == IR_OP_WGRAD) return 0;
            if (phase < 0) phase = phases[i];
            else if (phase != phases[i] && !(node_form && agg_only)) return 0;
        }
    }
    if (x->kind == IR_VAR_NODE && tr->dom == IR_DOM_EDGE) return node_form && agg_only;
    return agg_only == 0;
}

void cg_materialization(const ir_program *ir, const lw_program *lp, const cg_config *cfg, int *mat)
{
    int *owner = rg_xmalloc((size_t)ir->nvars * sizeof *owner);
    find_owners(ir, lp, owner);
    for (int v = 0; v < ir->nvars; v++) mat[v] = owner[v] != TOUCH_NONE || must_materialize(ir, v);
    for (int i = 0; i < lp->ninst; i++) {
        const lw_instance *in = &lp->inst[i];
        if (in->kind != LW_TRAV) continue;
        const lw_trav *tr = &in->u.trav;
        int *phases = rg_xmalloc((size_t)(tr->nstmts ? tr->nstmts : 1) * sizeof *phases);
        et_phases(ir, tr, phases);
        /* a traversal whose compact rows' sums walk the (etype, src) order keeps its per-node sums in
         * device memory: its kernels do not walk each node's edges together */
        int node_form = tr->dom == IR_DOM_EDGE && !tr->compact_rows && cfg->node_centric &&
                        !et_compact_walk(ir, tr, cfg);
        for (int v = 0; v < ir->nvars; v++)
            if (owner[v] == i && !must_materialize(ir, v) && scratch_ok(ir, tr, phases, node_form, v)) mat[v] = 0;
        free(phases);
    }
    free(owner);
}

int cg_fusions(const ir_program *ir, const lw_program *lp, const cg_config *cfg, const int *mat, et_fusion *fu,
               const char **why)
{
    memset(fu, 0, (size_t)lp->ninst * sizeof *fu);
    if (why) *why = NULL;
    int n = 0;
    for (int i = 0; i + 1 < lp->ninst; i++) {
        const lw_instance *a = &lp->inst[i], *b = &lp->inst[i + 1];
        if (a->kind != LW_TRAV || b->kind != LW_TRAV || a->backward != b->backward) continue;
        cg_config one;
        cfg_for_instance(cfg, a->name, &one);
        et_fusion fa, fb;
        const char *no = et_fusion_plan(ir, &a->u.trav, &b->u.trav, mat, &one, &fa, &fb);
        if (no) {
            if (why && !*why && a->u.trav.has_dst_aggregation && b->u.trav.dom == IR_DOM_NODE) *why = no;
            continue;
        }
        fu[i].epilogue = fa.epilogue;
        fu[i + 1].guard = fb.guard;
        fu[i + 1].chunk = fb.chunk;
        n++;
    }
    return n;
}

static int trav_has_stmt(const lw_instance *in, int stmt)
{
    if (in->kind != LW_TRAV) return 0;
    for (int k = 0; k < in->u.trav.nstmts; k++)
        if (in->u.trav.stmts[k].stmt == stmt) return 1;
    return 0;
}

int cg_rmax_links(const ir_program *ir, const lw_program *lp, const cg_config *cfg, et_fusion *fu, rg_err *err)
{
    if (!cfg->rmax) return 0;
    psm_online on[8];
    int n = psm_find_online(ir, on, 8);
    for (int j = 0; j < n; j++) {
        int i = 0;
        while (i + 1 < lp->ninst && !trav_has_stmt(&lp->inst[i], on[j].x)) i++;
        if (i + 1 >= lp->ninst || !trav_has_stmt(&lp->inst[i + 1], on[j].norm))
            return rg_errf(err, "invalid: rmax=on: the softmax's division is not in the node traversal right after "
                                "its aggregation, which would merge its tiles");
        if (fu[i].rmax_linked) return rg_errf(err, "invalid: rmax=on: one aggregation holds two softmaxes (not built)");
        cg_config one;
        cfg_for_instance(cfg, lp->inst[i].name, &one);
        fu[i].rmax = fu[i + 1].rmax = on[j];
        fu[i].rmax_linked = fu[i + 1].rmax_linked = 1;
        fu[i + 1].rmax_chunk = et_node_split(ir, &lp->inst[i].u.trav, &one) ? one.nchunk : 0;
    }
    return 0;
}

static void add_zero_fills(const ir_program *ir, const int *mat, kp_plan *plan)
{
    plan->zero_vars = rg_xmalloc((size_t)(ir->nvars ? ir->nvars : 1) * sizeof(int));
    for (int v = 0; v < ir->nvars; v++) {
        int zero = ir->vars[v].zero_init;
        for (int s = 0; s < ir->nstmts && !zero; s++)
            zero = ir->stmts[s].op == IR_OP_NLL_LOSS && ir->stmts[s].out.var == v;
        /* a kernel that writes every element before anything reads it makes the zeros dead */
        if (zero && mat[v] && !kp_plan_covers(plan, v)) plan->zero_vars[plan->nzero++] = v;
    }
}

/* One kernel for statement `stmt` by an emitter of a single statement (weight products, the
 * loss); nothing is left in the plan when it fails. */
static int emit_stmt_kernel(int (*emit)(const ir_program *, const ir_stmt *, kp_kernel *, rg_str *, rg_err *),
                            const ir_program *ir, int stmt, const char *name, int backward, kp_plan *plan,
                            rg_err *err)
{
    kp_kernel *k = kp_add_kernel(plan);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->backward = backward;
    rg_str src = {0};
    if (emit(ir, &ir->stmts[stmt], k, &src, err)) {
        rg_str_free(&src);
        plan->nkernels--;
        rg_err_prefix(err, "cannot emit %s", name);
        return -1;
    }
    k->source = src.s;
    return 0;
}

/* A statement lowered outside both templates: per-type weight products, the loss and its
 * gradient, or any other statement as a traversal of one statement in its own domain. */
static int emit_fallback(const ir_program *ir, int stmt, const int *materialized, const cg_config *cfg,
                         const char *name, int backward, kp_plan *plan, rg_err *err)
{
    const ir_stmt *s = &ir->stmts[stmt];
    if (ew_handles(s)) return emit_stmt_kernel(ew_emit, ir, stmt, name, backward, plan, err);
    if (el_handles(s)) return emit_stmt_kernel(el_emit_nll, ir, stmt, name, backward, plan, err);
    lw_trav_stmt ts = {.stmt = stmt, .level = LW_LEVEL_FEAT};
    lw_trav tr = {.dom = s->dom, .nstmts = 1, .stmts = &ts};
    tr.compact_rows = s->dom == IR_DOM_EDGE && ir_stmt_per_unique(ir, s);
    tr.has_dst_aggregation = s->accumulate && s->out.acc == IR_ACC_DST;
    tr.has_src_aggregation = s->accumulate && s->out.acc == IR_ACC_SRC;
    return et_emit(ir, &tr, materialized, cfg, name, backward, plan, err);
}

/* Emitters write kernel text only; each source gets the device helpers in front here. */
static void add_helpers(kp_plan *plan)
{
    for (int i = 0; i < plan->nkernels; i++) {
        char *full = tpl_source(plan->kernels[i].source);
        free(plan->kernels[i].source);
        plan->kernels[i].source = full;
    }
}

/* Every per-kernel override names an instance of this plan; the error lists the plan's instances. */
static int check_override_instances(const lw_program *lp, const cg_config *cfg, rg_err *err)
{
    for (int o = 0; o < cfg->noverrides; o++) {
        const char *name = cfg_override_instance(&cfg->overrides[o]);
        int found = 0;
        for (int i = 0; i < lp->ninst && !found; i++) found = !strcmp(lp->inst[i].name, name);
        if (found) continue;
        rg_str known = {0};
        for (int i = 0; i < lp->ninst; i++) rg_str_printf(&known, "%s%s", i ? ", " : "", lp->inst[i].name);
        rg_errf(err, "config: the override %s.%s names no instance of this plan (its instances: %s)", name,
                cfg_key_at(cfg->overrides[o].key)->name, known.s ? known.s : "none");
        rg_str_free(&known);
        return -1;
    }
    return 0;
}

/* Every override changes its instance's kernels: an override of a key that none of them reads
 * (coarsen of a traversal) would be a second name, and hash, for the same kernels. */
static int check_overrides_read(const lw_program *lp, const cg_config *cfg, const kp_plan *plan, rg_err *err)
{
    for (int o = 0; o < cfg->noverrides; o++) {
        const cfg_key *k = cfg_key_at(cfg->overrides[o].key);
        const char *inst = cfg_override_instance(&cfg->overrides[o]);
        unsigned kinds = 0;
        for (int i = 0; i < plan->nkernels; i++) {
            const kp_kernel *kk = &plan->kernels[i];
            if (kk->inst < 0 || strcmp(lp->inst[kk->inst].name, inst)) continue;
            kinds |= kk->category == KC_GEMM ? CFG_ON_GEMM : kk->category == KC_TRAVERSAL ? CFG_ON_TRAV : 0;
        }
        if (kinds & cfg_key_kernels(k)) continue;
        return rg_errf(err, "config: %s.%s changes nothing: %s is read by %s kernels and %s launches %s", inst,
                       k->name, k->name, cfg_key_kernels(k) == CFG_ON_GEMM ? "GEMM" : cfg_key_kernels(k) == CFG_ON_TRAV ? "traversal" : "GEMM and traversal", inst,
                       kinds == CFG_ON_GEMM ? "a GEMM" : kinds == CFG_ON_TRAV ? "traversal kernels" : "no kernel that reads a schedule key");
    }
    return 0;
}

int cg_build(const ir_program *ir, const lw_program *lp, const cg_config *cfg, cg_variant *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    if (cfg_validate(cfg, err) || check_override_instances(lp, cfg, err)) return -1;
    out->nvars = ir->nvars;
    out->plan.launch = (kp_launch)cfg->launch;
    out->materialized = rg_xcalloc((size_t)(ir->nvars ? ir->nvars : 1), sizeof(int));
    cg_materialization(ir, lp, cfg, out->materialized);
    et_fusion *fu = rg_xcalloc((size_t)(lp->ninst ? lp->ninst : 1), sizeof *fu);
    cg_fusions(ir, lp, cfg, out->materialized, fu, NULL);
    int rc = cg_rmax_links(ir, lp, cfg, fu, err);
    for (int i = 0; i < lp->ninst && !rc; i++) {
        const lw_instance *in = &lp->inst[i];
        int first = out->plan.nkernels;
        cg_config one;   /* the global schedule with this instance's overrides */
        cfg_for_instance(cfg, in->name, &one);
        switch (in->kind) {
        case LW_GEMM: rc = eg_emit(ir, &in->u.gemm, &one, in->name, in->backward, &out->plan, err); break;
        case LW_TRAV:
            rc = et_emit_fused(ir, &in->u.trav, out->materialized, &one, &fu[i], in->name, in->backward, &out->plan, err);
            break;
        case LW_FALLBACK:
            rc = emit_fallback(ir, in->u.fallback_stmt, out->materialized, &one, in->name, in->backward, &out->plan, err);
            break;
        }
        for (int k = first; k < out->plan.nkernels; k++) out->plan.kernels[k].inst = i;
    }
    free(fu);
    if (!rc && lp->ninst > 0) rc = el_emit_sgd(ir, out->materialized, "sgd_update", &out->plan, err);
    if (!rc) rc = check_overrides_read(lp, cfg, &out->plan, err);
    if (rc) {
        cg_variant_free(out);
        return -1;
    }
    add_helpers(&out->plan);
    add_zero_fills(ir, out->materialized, &out->plan);
    return 0;
}

void cg_variant_free(cg_variant *v)
{
    kp_plan_free(&v->plan);
    free(v->materialized);
    memset(v, 0, sizeof *v);
}

int cg_resident(const cg_variant *v, int var)
{
    RG_ASSERT(var >= 0 && var < v->nvars);
    if (!v->materialized[var]) return 0;
    int rows = 0, in_order = 0;
    for (int i = 0; i < v->plan.nkernels; i++)
        for (int j = 0; j < v->plan.kernels[i].nparams; j++) {
            const kp_param *p = &v->plan.kernels[i].params[j];
            rows |= p->kind == KP_VAR && p->id == var;
            in_order |= p->kind == KP_VAR_IN && p->id == var;
        }
    return (rows || !in_order ? CG_RES_ROWS : 0) | (in_order ? CG_RES_IN_ORDER : 0);
}

int cg_write_sources(const cg_variant *v, const ir_program *ir, const char *dir, rg_err *err)
{
    if (rg_mkdir_p(dir, err)) return -1;
    for (int i = 0; i < v->plan.nkernels; i++) {
        const kp_kernel *k = &v->plan.kernels[i];
        char *path = rg_xasprintf("%s/%s.cu", dir, k->name);
        FILE *f = fopen(path, "w");
        if (!f) {
            rg_errf(err, "cannot write %s", path);
            free(path);
            return -1;
        }
        fputs(k->source, f);
        fclose(f);
        free(path);
    }
    const char **names = rg_xmalloc((size_t)(ir->nvars ? ir->nvars : 1) * sizeof *names);
    for (int i = 0; i < ir->nvars; i++) names[i] = ir->vars[i].name;
    char *path = rg_xasprintf("%s/plan.txt", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        free(names);
        rg_errf(err, "cannot write %s", path);
        free(path);
        return -1;
    }
    fprintf(f, "# launch plan of %s: kernels in order (each in <name>.cu)\n", ir->name);
    fprintf(f, "# device memory:");
    for (int i = 0; i < ir->nvars; i++) {
        int res = cg_resident(v, i);
        if (res & CG_RES_ROWS) fprintf(f, " %s", ir->vars[i].name);
        if (res & CG_RES_IN_ORDER) fprintf(f, " %s@in", ir->vars[i].name);
    }
    fputc('\n', f);
    kp_print(&v->plan, names, f);
    fclose(f);
    free(path);
    free(names);
    return 0;
}
