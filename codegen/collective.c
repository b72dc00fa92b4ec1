/* Where a relation-partitioned run needs collectives: follows each variable's state (zero,
 * clean, local, partial, owned) through the plan's kernels and places the all-reduces. */
#include "codegen/collective.h"
#include "codegen/emit_loss.h"
#include "codegen/emit_trav.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int col_kernel_stmts(const ir_program *ir, const lw_program *lp, const int *materialized, const kp_kernel *k,
                     int *stmts)
{
    if (k->inst < 0) return 0;
    RG_ASSERT(k->inst < lp->ninst);
    const lw_instance *in = &lp->inst[k->inst];
    switch (in->kind) {
    case LW_GEMM:
        stmts[0] = in->u.gemm.stmt;
        if (in->u.gemm.scalar_stmt < 0) return 1;
        stmts[1] = in->u.gemm.scalar_stmt;   /* the multiply it absorbed runs right after */
        return 2;
    case LW_FALLBACK: stmts[0] = in->u.fallback_stmt; return 1;
    case LW_TRAV: break;
    }
    const lw_trav *tr = &in->u.trav;
    int *phases = rg_xmalloc((size_t)(tr->nstmts ? tr->nstmts : 1) * sizeof *phases);
    et_phases(ir, tr, phases);
    int *keep = NULL;   /* crsum=split: the kernel runs one part of the statements */
    if (k->part) {
        keep = rg_xmalloc((size_t)(tr->nstmts ? tr->nstmts : 1) * sizeof *keep);
        et_split_part(ir, tr, materialized, k->part, keep);
    }
    int n = 0;
    for (int i = 0; i < tr->nstmts; i++)
        if ((k->phase < 0 || phases[i] == k->phase) && (!keep || keep[i])) stmts[n++] = tr->stmts[i].stmt;
    free(keep);
    free(phases);
    return n;
}

static void add_sync(col_plan *p, int before, int var, col_action what)
{
    if (p->nsync == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 8;
        p->sync = rg_xrealloc(p->sync, (size_t)p->cap * sizeof *p->sync);
    }
    p->sync[p->nsync++] = (col_sync){before, var, what};
}

static int is_etype_weight(const ir_program *ir, int var)
{
    return var >= 0 && ir->vars[var].kind == IR_VAR_WEIGHT && ir->vars[var].widx == IR_WIDX_ETYPE;
}

/* The analysis' working state: per variable, its state and the unit that made it partial. */
typedef struct walk {
    const ir_program *ir;
    col_plan *plan;
    int *partial_in;      /* [nvars] unit that last added into a PARTIAL var, -1 */
    int *touched_in;      /* [nvars] unit that last read it or made it CLEAN by replicated work, -1 */
    int unit;
} walk;

static int reduce_before_unit(walk *w, int var, rg_err *err)
{
    if (w->partial_in[var] == w->unit)
        return rg_errf(err, "a kernel reads %s, which its own edges summed: the sum over relations needs a "
                       "collective between two passes of one kernel", w->ir->vars[var].name);
    for (int i = 0; i < w->plan->nsync; i++)
        if (w->plan->sync[i].before == w->unit && w->plan->sync[i].var == var) goto done;
    add_sync(w->plan, w->unit, var, COL_ALLREDUCE);
done:
    w->plan->state[var] = COL_CLEAN;
    w->partial_in[var] = -1;
    return 0;
}

static int read_operands(walk *w, const ir_stmt *s, int *reads_owned, rg_err *err)
{
    *reads_owned = 0;
    for (int k = 0; k < s->nin; k++) {
        int v = s->in[k].var;
        if (v < 0) continue;
        if (w->plan->state[v] == COL_PARTIAL && reduce_before_unit(w, v, err)) return -1;
        w->touched_in[v] = w->unit;
        if (w->plan->state[v] == COL_OWNED && s->dom != IR_DOM_EDGE) *reads_owned = 1;
    }
    return 0;
}

/* Sums start on a value every rank holds (a replicated term, or an all-reduced sum): the
 * other ranks zero their copy first, so the sum over ranks counts it once. Not possible
 * inside the kernel that reads it or computed it. */
static int make_partial(walk *w, int var, rg_err *err)
{
    col_state *st = &w->plan->state[var];
    if (*st == COL_CLEAN) {
        if (w->touched_in[var] == w->unit)
            return rg_errf(err, "a kernel adds its relations' share into %s, which it also reads or computes for "
                           "every rank", w->ir->vars[var].name);
        add_sync(w->plan, w->unit, var, COL_ZERO_NONROOT);
    }
    *st = COL_PARTIAL;
    w->partial_in[var] = w->unit;
    return 0;
}

/* An edge statement's output: local rows, a partial sum, or an owned weight slice. */
static int write_from_edges(walk *w, const ir_stmt *s, rg_err *err)
{
    const ir_program *ir = w->ir;
    int v = s->out.var;
    col_state *st = &w->plan->state[v];
    if (ir->vars[v].kind == IR_VAR_EDGE) {
        *st = COL_LOCAL;
        return 0;
    }
    if (!s->accumulate)
        return rg_errf(err, "an edge statement assigns %s, a value shared by all relations", ir->vars[v].name);
    if (is_etype_weight(ir, v) && (s->out.acc == IR_ACC_ETYPE || s->out.acc == IR_ACC_ROW)) {
        if (*st != COL_ZERO && *st != COL_OWNED)
            return rg_errf(err, "edges add into %s after it was made whole", ir->vars[v].name);
        *st = COL_OWNED;
        return 0;
    }
    if (*st == COL_OWNED || *st == COL_LOCAL) return rg_errf(err, "edges add into %s in two roles", ir->vars[v].name);
    return make_partial(w, v, err);
}

/* A replicated statement's output (node, type or global domain). */
static int write_replicated(walk *w, const ir_stmt *s, int reads_owned, rg_err *err)
{
    const ir_program *ir = w->ir;
    int v = s->out.var;
    col_state *st = &w->plan->state[v];
    if (s->accumulate && *st == COL_PARTIAL && reduce_before_unit(w, v, err)) return -1;
    if (!reads_owned) {
        if (*st == COL_OWNED)
            return rg_errf(err, "%s adds replicated work into %s, which only the owners of its relations hold",
                           ir_op_name(s->op), ir->vars[v].name);
        *st = COL_CLEAN;
        w->touched_in[v] = w->unit;
        return 0;
    }
    /* linear in owned slices: an owned slice again, or one share of a sum over relations */
    if (is_etype_weight(ir, v) && (s->out.acc == IR_ACC_ETYPE || s->out.acc == IR_ACC_ROW)) {
        *st = COL_OWNED;
        return 0;
    }
    if (!s->accumulate)
        return rg_errf(err, "%s assigns %s from weights only the owners of their relations hold", ir_op_name(s->op),
                       ir->vars[v].name);
    return make_partial(w, v, err);
}

static int run_stmt(walk *w, const ir_stmt *s, rg_err *err)
{
    int reads_owned;
    if (read_operands(w, s, &reads_owned, err)) return -1;
    if (s->out.var < 0) return 0;
    if (s->dom == IR_DOM_EDGE) return write_from_edges(w, s, err);
    return write_replicated(w, s, reads_owned, err);
}

/* The SGD step: each parameter minus its gradient; a parameter with an owned gradient is
 * then owned too (each relation's weights are updated on its owner). */
static int run_sgd(walk *w, rg_err *err)
{
    const ir_program *ir = w->ir;
    for (int v = 0; v < ir->nvars; v++) {
        if (!el_sgd_updates(&ir->vars[v])) continue;
        int g = ir->vars[v].grad;
        if (w->plan->state[g] == COL_PARTIAL && reduce_before_unit(w, g, err)) return -1;
        w->plan->state[v] = w->plan->state[g] == COL_OWNED ? COL_OWNED : COL_CLEAN;
    }
    return 0;
}

/* A value a run hands over (the output, the loss, input and weight gradients) must be whole. */
static int handed_over(const ir_program *ir, int v)
{
    const ir_var *x = &ir->vars[v];
    if (v == ir->output || v == ir->loss) return 1;
    if (x->grad_of < 0) return 0;
    ir_role r = ir->vars[x->grad_of].role;
    return r == IR_ROLE_PARAM || r == IR_ROLE_INPUT;
}

static void init_states(const ir_program *ir, col_state *state)
{
    for (int v = 0; v < ir->nvars; v++) {
        ir_role r = ir->vars[v].role;
        int data = r == IR_ROLE_INPUT || r == IR_ROLE_PARAM || r == IR_ROLE_LABEL;
        state[v] = data ? COL_CLEAN : r == IR_ROLE_GRAPH ? COL_LOCAL : COL_ZERO;
        if (r == IR_ROLE_GRAPH && ir->vars[v].kind != IR_VAR_EDGE) state[v] = COL_CLEAN;
    }
}

int col_analyze(const ir_program *ir, const col_unit *units, int nunits, col_plan *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    out->nvars = ir->nvars;
    out->state = rg_xcalloc((size_t)(ir->nvars ? ir->nvars : 1), sizeof *out->state);
    init_states(ir, out->state);
    size_t nv = (size_t)(ir->nvars ? ir->nvars : 1);
    walk w = {ir, out, rg_xmalloc(nv * sizeof(int)), rg_xmalloc(nv * sizeof(int)), 0};
    for (int v = 0; v < ir->nvars; v++) w.partial_in[v] = w.touched_in[v] = -1;
    int rc = 0;
    for (w.unit = 0; w.unit < nunits && !rc; w.unit++) {
        const col_unit *u = &units[w.unit];
        if (u->sgd) rc = run_sgd(&w, err);
        for (int i = 0; i < u->nstmts && !rc; i++) rc = run_stmt(&w, &ir->stmts[u->stmts[i]], err);
    }
    for (int v = 0; v < ir->nvars && !rc; v++)
        if (out->state[v] == COL_PARTIAL && handed_over(ir, v)) {
            add_sync(out, nunits, v, COL_ALLREDUCE);
            out->state[v] = COL_CLEAN;
        }
    free(w.partial_in);
    free(w.touched_in);
    if (rc) col_plan_free(out);
    return rc;
}

int col_plan_build(const ir_program *ir, const lw_program *lp, const cg_variant *v, col_plan *out, rg_err *err)
{
    int n = v->plan.nkernels;
    col_unit *units = rg_xcalloc((size_t)(n ? n : 1), sizeof *units);
    int *stmts = rg_xmalloc((size_t)(n ? n : 1) * (size_t)(ir->nstmts + 1) * sizeof *stmts);
    for (int k = 0; k < n; k++) {
        const kp_kernel *kk = &v->plan.kernels[k];
        int *mine = stmts + (size_t)k * (size_t)(ir->nstmts + 1);
        units[k] = (col_unit){col_kernel_stmts(ir, lp, v->materialized, kk, mine), mine, kk->inst < 0};
    }
    int rc = col_analyze(ir, units, n, out, err);
    for (int i = 0; rc == 0 && i < out->nsync; i++)
        if (!v->materialized[out->sync[i].var]) {
            /* a value summed or zeroed between kernels lives in device memory: a register-only
             * temporary would be one kernel's, which the analysis already refused */
            rc = rg_errf(err, "%s must be summed over ranks but lives only inside a kernel",
                         ir->vars[out->sync[i].var].name);
            col_plan_free(out);
        }
    free(units);
    free(stmts);
    return rc;
}

void col_plan_free(col_plan *p)
{
    free(p->sync);
    free(p->state);
    memset(p, 0, sizeof *p);
}

void col_merge_lse(int nranks, const double *m, const double *s, const double *acc, int w, double *m_out,
                   double *s_out, double *acc_out)
{
    double mx = -INFINITY;
    for (int k = 0; k < nranks; k++)
        if (s[k] > 0 && m[k] > mx) mx = m[k];
    *m_out = mx;
    *s_out = 0;
    for (int j = 0; j < w; j++) acc_out[j] = 0;
    if (mx == -INFINITY) return;
    for (int k = 0; k < nranks; k++) {
        if (s[k] <= 0) continue;
        double scale = exp(m[k] - mx);
        *s_out += scale * s[k];
        for (int j = 0; j < w; j++) acc_out[j] += scale * acc[(size_t)k * (size_t)w + j];
    }
}
