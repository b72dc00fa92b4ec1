/* Lowering by preference: GEMM instances first (absorbing a following per-row scalar
 * multiply), then fused traversal instances, then fallbacks, into an lw_program. */
#include "codegen/lower.h"
#include "codegen/pass_fuse.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ index lists */

static lw_rows rows_of(const ir_program *p, const ir_stmt *s)
{
    if (s->dom == IR_DOM_NODE) return LW_ROWS_NODES;
    return ir_stmt_per_unique(p, s) ? LW_ROWS_UNIQUE : LW_ROWS_EDGES;
}

/* The row list that reaches an operand's row from the instance's rows; -1 if none. */
static int index_of(const ir_program *p, lw_rows rows, const ir_operand *o, lw_index *idx)
{
    const ir_var *v = &p->vars[o->var];
    if (v->kind == IR_VAR_NODE) {
        if (rows == LW_ROWS_NODES && o->acc == IR_ACC_ROW) *idx = LW_IDX_ROW;
        else if (rows == LW_ROWS_EDGES && o->acc == IR_ACC_SRC) *idx = LW_IDX_SRC;
        else if (rows == LW_ROWS_EDGES && o->acc == IR_ACC_DST) *idx = LW_IDX_DST;
        else if (rows == LW_ROWS_UNIQUE && o->acc == IR_ACC_SRC) *idx = LW_IDX_SRC;
        else return -1;
        return 0;
    }
    if (v->kind == IR_VAR_EDGE && o->acc == IR_ACC_ROW) {
        if (rows == LW_ROWS_EDGES) *idx = v->layout == IR_LAYOUT_COMPACT ? LW_IDX_COMPACT : LW_IDX_ROW;
        else if (rows == LW_ROWS_UNIQUE && v->layout == IR_LAYOUT_COMPACT) *idx = LW_IDX_ROW;
        else return -1;
        return 0;
    }
    return -1;
}

/* Several rows update one output row: a scatter to e.dst / e.src, or edges into a compact row. */
static int needs_atomic(lw_rows rows, lw_index y_idx)
{
    if (y_idx == LW_IDX_DST || y_idx == LW_IDX_SRC || y_idx == LW_IDX_COMPACT) return 1;
    (void)rows;
    return 0;
}

/* ------------------------------------------------------------------ scan 1: GEMM */

static int row_operand(const ir_program *p, const ir_operand *o)
{
    return o->acc != IR_ACC_CONST && p->vars[o->var].kind != IR_VAR_WEIGHT && p->vars[o->var].kind != IR_VAR_SCALAR;
}

/* Fills a GEMM instance for a LINEAR or a matrix WGRAD statement; 0 if not expressible. */
static int gemm_of(const ir_program *p, int i, lw_gemm *g)
{
    const ir_stmt *s = &p->stmts[i];
    if (s->dom != IR_DOM_EDGE && s->dom != IR_DOM_NODE) return 0;
    memset(g, 0, sizeof *g);
    g->stmt = i;
    g->scalar_var = -1;
    g->scalar_stmt = -1;
    g->rows = rows_of(p, s);
    if (s->op == IR_OP_LINEAR) {
        const ir_var *w = &p->vars[s->in[1].var];
        if (!row_operand(p, &s->in[0]) || !row_operand(p, &s->out)) return 0;
        if (index_of(p, g->rows, &s->in[0], &g->x_idx) < 0 || index_of(p, g->rows, &s->out, &g->y_idx) < 0) return 0;
        g->x_var = s->in[0].var;
        g->w_var = s->in[1].var;
        g->y_var = s->out.var;
        g->w_acc = s->in[1].acc;
        g->transpose_w = s->transpose_w;
        g->K = s->transpose_w ? w->dim : w->rows_dim;
        g->N = s->transpose_w ? w->rows_dim : w->dim;
        g->heads = w->heads;
        g->accumulate = s->accumulate;
        g->y_atomic = needs_atomic(g->rows, g->y_idx);
        return 1;
    }
    if (s->op == IR_OP_WGRAD) {
        const ir_var *w = &p->vars[s->out.var];
        if (w->rows_dim == 0 || !row_operand(p, &s->in[0]) || !row_operand(p, &s->in[1])) return 0;
        if (index_of(p, g->rows, &s->in[0], &g->x_idx) < 0 || index_of(p, g->rows, &s->in[1], &g->y_idx) < 0) return 0;
        /* outer product: X = x, Y = dy (read), W = the gradient (written) */
        g->outer_product = 1;
        g->x_var = s->in[0].var;
        g->y_var = s->in[1].var;
        g->w_var = s->out.var;
        g->w_acc = s->out.acc;
        g->K = w->rows_dim;
        g->N = w->dim;
        g->heads = w->heads;
        g->accumulate = 1;
        return 1;
    }
    return 0;
}

static int count_readers(const ir_program *p, int var, int *only)
{
    int n = 0;
    for (int i = 0; i < p->nstmts; i++)
        if (ir_stmt_reads(&p->stmts[i], var)) {
            n++;
            *only = i;
        }
    return n;
}

static int count_writers(const ir_program *p, int var)
{
    int n = 0;
    for (int i = 0; i < p->nstmts; i++) n += ir_stmt_writes(&p->stmts[i], var);
    return n;
}

/* GEMM + consumer fusion: t = linear(...) read once, by m: out (+)= t * s with s a per-row
 * scalar in the same loop nest. The GEMM then writes m's output with s applied. */
static int absorb_scalar(const ir_program *p, lw_gemm *g, const char *taken, int *absorbed)
{
    const ir_stmt *l = &p->stmts[g->stmt];
    if (l->op != IR_OP_LINEAR || l->accumulate || l->out.acc != IR_ACC_ROW) return 0;
    int t = l->out.var, m = -1;
    const ir_var *tv = &p->vars[t];
    if (tv->role != IR_ROLE_TEMP || t == p->output || tv->layout == IR_LAYOUT_COMPACT || tv->grad_of >= 0) return 0;
    if (count_writers(p, t) != 1 || count_readers(p, t, &m) != 1 || m <= g->stmt || taken[m]) return 0;
    const ir_stmt *ms = &p->stmts[m];
    if (ms->op != IR_OP_MUL || ms->dom != l->dom || rows_of(p, ms) != g->rows) return 0;
    int slot = ms->in[0].var == t && ms->in[0].acc == IR_ACC_ROW ? 0 : ms->in[1].var == t && ms->in[1].acc == IR_ACC_ROW ? 1 : -1;
    if (slot < 0) return 0;
    const ir_operand *sc = &ms->in[1 - slot];
    if (sc->acc == IR_ACC_CONST || !row_operand(p, sc)) return 0;
    const ir_var *sv = &p->vars[sc->var];
    if (sv->dim != 1 || !(sv->heads == 1 || (sv->heads == g->heads && g->heads > 1))) return 0;
    const ir_var *ov = &p->vars[ms->out.var];
    if (!row_operand(p, &ms->out) || ov->heads != tv->heads || ov->dim != tv->dim) return 0;
    lw_index y_idx, s_idx;
    if (index_of(p, g->rows, &ms->out, &y_idx) < 0 || index_of(p, g->rows, sc, &s_idx) < 0) return 0;
    for (int k = g->stmt + 1; k < m; k++)   /* the linear must be able to move down to m */
        if (pf_depends(l, &p->stmts[k])) return 0;
    g->y_var = ms->out.var;
    g->y_idx = y_idx;
    g->accumulate = ms->accumulate;
    g->y_atomic = needs_atomic(g->rows, y_idx);
    g->scalar_var = sc->var;
    g->scalar_idx = s_idx;
    g->scalar_stmt = m;
    *absorbed = m;
    return 1;
}

/* The forward pass's per-edge typed linears: a row of an edge variable from a gathered node row and
 * the edge's relation's weight. The backward pass's linears and weight gradients stay GEMMs: their
 * results are sums over edges into source rows or weights, which a traversal could form only with an
 * atomic per element (K x N of them per edge for a weight gradient). */
int lw_message_linear(const ir_program *p, int i)
{
    const ir_stmt *s = &p->stmts[i];
    if (s->op != IR_OP_LINEAR || s->backward || i >= p->nforward || s->dom != IR_DOM_EDGE) return 0;
    if (s->accumulate || s->out.acc != IR_ACC_ROW || p->vars[s->out.var].layout == IR_LAYOUT_COMPACT) return 0;
    if (s->in[0].acc != IR_ACC_SRC && s->in[0].acc != IR_ACC_DST) return 0;
    return s->in[1].acc == IR_ACC_ETYPE;
}

/* ------------------------------------------------------------------ scan 2: traversal */

static int traversal_eligible(const ir_stmt *s)
{
    if (s->dom != IR_DOM_EDGE && s->dom != IR_DOM_NODE) return 0;
    return s->op != IR_OP_WEIGHT_MM && s->op != IR_OP_NLL_LOSS && s->op != IR_OP_NLL_GRAD;
}

/* Hoisting: a statement's outermost legal loop level follows from its output's shape. */
static lw_level level_of(const ir_program *p, const ir_stmt *s)
{
    const ir_var *o = &p->vars[s->out.var];
    if (o->dim > 1) return LW_LEVEL_FEAT;
    if (o->heads > 1) return LW_LEVEL_HEAD;
    return LW_LEVEL_OUTER;
}

static int must_materialize(const ir_program *p, int v)
{
    const ir_var *x = &p->vars[v];
    if (x->role != IR_ROLE_TEMP || v == p->output || v == p->loss) return 1;
    if (x->kind == IR_VAR_WEIGHT || x->kind == IR_VAR_SCALAR || x->layout == IR_LAYOUT_COMPACT) return 1;
    return x->grad_of >= 0;   /* gradients are results (or feed other instances) */
}

/* A temporary written and read only inside this instance, always at its own row. */
static int register_only(const ir_program *p, const lw_trav *tr, int v, const int *inst_of_stmt, int inst)
{
    if (must_materialize(p, v)) return 0;
    for (int i = 0; i < p->nstmts; i++) {
        const ir_stmt *s = &p->stmts[i];
        if (!ir_stmt_reads(s, v) && !ir_stmt_writes(s, v)) continue;
        if (inst_of_stmt[i] != inst) return 0;
        if (s->out.var == v && (s->out.acc != IR_ACC_ROW || s->accumulate)) return 0;
        for (int k = 0; k < s->nin; k++)
            if (s->in[k].var == v && s->in[k].acc != IR_ACC_ROW) return 0;
    }
    const ir_var *x = &p->vars[v];
    return (tr->dom == IR_DOM_EDGE && x->kind == IR_VAR_EDGE) || (tr->dom == IR_DOM_NODE && x->kind == IR_VAR_NODE);
}

/* ------------------------------------------------------------------ assembly */

typedef struct builder {
    const ir_program *p;
    lw_program *lp;
    pf_unit *units;
    int nunits;
    lw_gemm *unit_gemm;     /* per unit (when a GEMM) */
    lw_kind *unit_kind;
    int counter;
} builder;

int lw_defers_dst_sum(const ir_program *p, int i)
{
    const ir_stmt *s = &p->stmts[i];
    /* a scalar's sum (softmax's d_att_sum) is one atomic an edge: its own kernel would cost more */
    return i >= p->nforward && s->dom == IR_DOM_EDGE && !ir_stmt_per_unique(p, s) && s->accumulate &&
           s->out.acc == IR_ACC_DST && ir_var_row_width(&p->vars[s->out.var]) > 1;
}

static int add_unit(builder *b, lw_kind kind, int s0, int s1, const lw_gemm *g, int segment)
{
    pf_unit u = {0};
    u.stmts[u.nstmts++] = s0;
    if (s1 >= 0) u.stmts[u.nstmts++] = s1;
    u.fusible = kind == LW_TRAV;
    u.segment = segment;
    b->units = rg_xrealloc(b->units, (size_t)(b->nunits + 1) * sizeof *b->units);
    b->unit_gemm = rg_xrealloc(b->unit_gemm, (size_t)(b->nunits + 1) * sizeof *b->unit_gemm);
    b->unit_kind = rg_xrealloc(b->unit_kind, (size_t)(b->nunits + 1) * sizeof *b->unit_kind);
    b->units[b->nunits] = u;
    if (g) b->unit_gemm[b->nunits] = *g;
    b->unit_kind[b->nunits] = kind;
    return b->nunits++;
}

static lw_instance *new_instance(builder *b, lw_kind kind, int backward)
{
    lw_program *lp = b->lp;
    lp->inst = rg_xrealloc(lp->inst, (size_t)(lp->ninst + 1) * sizeof *lp->inst);
    lw_instance *in = &lp->inst[lp->ninst++];
    memset(in, 0, sizeof *in);
    in->kind = kind;
    in->backward = backward;
    const char *base = kind == LW_GEMM ? "gemm" : kind == LW_TRAV ? "trav" : "other";
    snprintf(in->name, sizeof in->name, "%s_%d%s", base, ++b->counter, backward ? "_bwd" : "");
    return in;
}

static void build_instances(builder *b, const pf_schedule *sc)
{
    for (int gi = 0; gi < sc->ngroups; gi++) {
        const pf_group *g = &sc->groups[gi];
        int u0 = g->units[0];
        lw_kind kind = b->unit_kind[u0];
        lw_instance *in = new_instance(b, kind, g->backward);
        if (kind == LW_GEMM) {
            in->u.gemm = b->unit_gemm[u0];
        } else if (kind == LW_FALLBACK) {
            in->u.fallback_stmt = b->units[u0].stmts[0];
        } else {
            lw_trav *tr = &in->u.trav;
            tr->dom = b->p->stmts[b->units[u0].stmts[0]].dom;
            tr->compact_rows = g->nest == PF_NEST_UNIQUE;
            tr->deferred = g->segment == 1;
            tr->stmts = rg_xcalloc((size_t)g->nunits, sizeof *tr->stmts);
            for (int k = 0; k < g->nunits; k++) {
                int si = b->units[g->units[k]].stmts[0];
                const ir_stmt *s = &b->p->stmts[si];
                tr->stmts[tr->nstmts].stmt = si;
                tr->stmts[tr->nstmts].level = level_of(b->p, s);
                tr->nstmts++;
                if (s->accumulate && s->out.acc == IR_ACC_DST) tr->has_dst_aggregation = 1;
                if (s->accumulate && s->out.acc == IR_ACC_SRC) tr->has_src_aggregation = 1;
            }
        }
    }
}

static void decide_materialization(const ir_program *p, lw_program *lp, const int *absorbed_temp)
{
    int *inst_of = rg_xmalloc(((size_t)p->nstmts + 1) * sizeof *inst_of);
    for (int i = 0; i < p->nstmts; i++) inst_of[i] = -1;
    for (int i = 0; i < lp->ninst; i++) {
        const lw_instance *in = &lp->inst[i];
        if (in->kind == LW_GEMM) inst_of[in->u.gemm.stmt] = i;
        else if (in->kind == LW_FALLBACK) inst_of[in->u.fallback_stmt] = i;
        else
            for (int k = 0; k < in->u.trav.nstmts; k++) inst_of[in->u.trav.stmts[k].stmt] = i;
    }
    lp->materialized = rg_xcalloc((size_t)p->nvars + 1, sizeof *lp->materialized);
    for (int i = 0; i < p->nstmts; i++) {
        const ir_stmt *s = &p->stmts[i];
        lp->materialized[s->out.var] = 1;
        for (int k = 0; k < s->nin; k++)
            if (s->in[k].acc != IR_ACC_CONST) lp->materialized[s->in[k].var] = 1;
    }
    for (int v = 0; v < p->nvars; v++)
        if (absorbed_temp[v]) lp->materialized[v] = 0;
    for (int i = 0; i < lp->ninst; i++) {
        lw_instance *in = &lp->inst[i];
        if (in->kind != LW_TRAV) continue;
        for (int k = 0; k < in->u.trav.nstmts; k++) {
            lw_trav_stmt *ts = &in->u.trav.stmts[k];
            int v = p->stmts[ts->stmt].out.var;
            ts->out_in_register = register_only(p, &in->u.trav, v, inst_of, i);
            if (ts->out_in_register) lp->materialized[v] = 0;
        }
    }
    free(inst_of);
}

lw_program *lw_lower_opts(const ir_program *p, const lw_options *opt, rg_err *err)
{
    if (ir_verify(p, err) < 0) return NULL;
    int fuse = opt ? opt->fuse : 1, msg_in_trav = opt ? opt->msg_in_trav : 0, defer = opt ? opt->defer_dst_sums : 0;
    builder b = {0};
    b.p = p;
    b.lp = rg_xcalloc(1, sizeof *b.lp);
    b.lp->ir = p;
    char *taken = rg_xcalloc((size_t)p->nstmts + 1, 1);
    int *absorbed_temp = rg_xcalloc((size_t)p->nvars + 1, sizeof *absorbed_temp);
    /* scan 1: GEMM-eligible statements, each with the scalar multiply it can absorb */
    for (int i = 0; i < p->nstmts; i++) {
        lw_gemm g;
        if (taken[i] || (msg_in_trav && lw_message_linear(p, i)) || !gemm_of(p, i, &g)) continue;
        int m = -1;
        if (absorb_scalar(p, &g, taken, &m)) {
            taken[m] = 1;
            absorbed_temp[p->stmts[i].out.var] = 1;
        }
        taken[i] = 1;
        add_unit(&b, LW_GEMM, i, m, &g, 0);
    }
    /* scan 2: traversal statements (fused by loop nest when scheduling) */
    for (int i = 0; i < p->nstmts; i++)
        if (!taken[i] && traversal_eligible(&p->stmts[i])) {
            taken[i] = 1;
            add_unit(&b, LW_TRAV, i, -1, NULL, defer && lw_defers_dst_sum(p, i));
        }
    /* scan 3: the rest as plain loops */
    for (int i = 0; i < p->nstmts; i++)
        if (!taken[i]) {
            taken[i] = 1;
            add_unit(&b, LW_FALLBACK, i, -1, NULL, 0);
        }
    pf_schedule *sc = pf_schedule_units(p, b.units, b.nunits, fuse);
    build_instances(&b, sc);
    decide_materialization(p, b.lp, absorbed_temp);
    pf_free(sc);
    free(taken);
    free(absorbed_temp);
    free(b.units);
    free(b.unit_gemm);
    free(b.unit_kind);
    return b.lp;
}

lw_program *lw_lower(const ir_program *p, rg_err *err)
{
    lw_options o = {.fuse = 1};
    return lw_lower_opts(p, &o, err);
}

void lw_free(lw_program *lp)
{
    if (!lp) return;
    for (int i = 0; i < lp->ninst; i++)
        if (lp->inst[i].kind == LW_TRAV) free(lp->inst[i].u.trav.stmts);
    free(lp->inst);
    free(lp->materialized);
    free(lp);
}

/* ------------------------------------------------------------------ printing */

static const char *rows_name(lw_rows r)
{
    switch (r) {
    case LW_ROWS_EDGES: return "edges (segments by etype)";
    case LW_ROWS_UNIQUE: return "unique (src, etype) rows (segments by etype)";
    case LW_ROWS_NODES: return "nodes";
    case LW_ROWS_TYPES: return "edge types";
    }
    return "?";
}

static const char *idx_name(lw_index i)
{
    switch (i) {
    case LW_IDX_ROW: return "row";
    case LW_IDX_SRC: return "src";
    case LW_IDX_DST: return "dst";
    case LW_IDX_COMPACT: return "compact(row)";
    }
    return "?";
}

static const char *wacc_name(ir_access a)
{
    switch (a) {
    case IR_ACC_ETYPE: return "etype";
    case IR_ACC_NTYPE: return "ntype";
    case IR_ACC_SRC_NTYPE: return "src ntype";
    case IR_ACC_DST_NTYPE: return "dst ntype";
    case IR_ACC_ALL: return "all";
    default: return "?";
    }
}

static const char *level_name(lw_level l)
{
    return l == LW_LEVEL_OUTER ? "row" : l == LW_LEVEL_HEAD ? "head" : "feature";
}

static void print_gemm(const lw_program *lp, const lw_instance *in, FILE *f)
{
    const ir_program *p = lp->ir;
    const lw_gemm *g = &in->u.gemm;
    const char *X = p->vars[g->x_var].name, *W = p->vars[g->w_var].name, *Y = p->vars[g->y_var].name;
    fprintf(f, "  %-14s GEMM over %s\n", in->name, rows_name(g->rows));
    if (g->outer_product) {
        fprintf(f, "      %s[%s] += %s[%s]^T x %s[%s]   (outer product, weight gradient)\n", W, wacc_name(g->w_acc), X,
                idx_name(g->x_idx), Y, idx_name(g->y_idx));
    } else {
        char scalar[96] = "";
        if (g->scalar_var >= 0)
            snprintf(scalar, sizeof scalar, "%s[%s] * ", p->vars[g->scalar_var].name, idx_name(g->scalar_idx));
        fprintf(f, "      %s[%s] %s %s%s[%s] x %s[%s]%s\n", Y, idx_name(g->y_idx), g->accumulate || g->y_atomic ? "+=" : "=",
                scalar, X, idx_name(g->x_idx), W, wacc_name(g->w_acc), g->transpose_w ? "^T" : "");
    }
    fprintf(f, "      K=%d N=%d heads=%d gather=%s scatter=%s%s%s   (stmt %d%s)\n", g->K, g->N, g->heads,
            idx_name(g->x_idx), idx_name(g->y_idx), g->y_atomic ? " atomic" : "",
            g->scalar_var >= 0 ? " per-row scalar fused" : "", g->stmt,
            g->scalar_var >= 0 ? " + its scalar multiply" : "");
}

static void print_trav(const lw_program *lp, const lw_instance *in, FILE *f)
{
    const ir_program *p = lp->ir;
    const lw_trav *t = &in->u.trav;
    const char *loop = t->dom == IR_DOM_NODE ? "nodes -> head -> feature"
                       : t->compact_rows ? "unique (src, etype) rows -> head -> feature"
                                         : "edges -> head -> feature";
    fprintf(f, "  %-14s TRAVERSAL, loop nest %s, %d statement(s)%s%s%s\n", in->name, loop, t->nstmts,
            t->has_dst_aggregation ? ", aggregates into e.dst (node-centric form legal)" : "",
            t->has_src_aggregation ? ", aggregates into e.src" : "",
            t->deferred ? ", deferred from the edge walk (crsum=defer)" : "");
    for (int k = 0; k < t->nstmts; k++) {
        fprintf(f, "      [%-7s] ", level_name(t->stmts[k].level));
        ir_print_stmt(p, t->stmts[k].stmt, f);
        fprintf(f, "%s\n", t->stmts[k].out_in_register ? "   (register, not materialized)" : "");
    }
}

void lw_print(const lw_program *lp, FILE *f)
{
    const ir_program *p = lp->ir;
    int ng = 0, nt = 0, nf = 0;
    for (int i = 0; i < lp->ninst; i++) {
        ng += lp->inst[i].kind == LW_GEMM;
        nt += lp->inst[i].kind == LW_TRAV;
        nf += lp->inst[i].kind == LW_FALLBACK;
    }
    fprintf(f, "lowered program %s: %d instances (%d GEMM, %d traversal, %d other)\n", p->name, lp->ninst, ng, nt, nf);
    int bwd_shown = 0;
    for (int i = 0; i < lp->ninst; i++) {
        const lw_instance *in = &lp->inst[i];
        if (in->backward && !bwd_shown) {
            fprintf(f, "  -- backward --\n");
            bwd_shown = 1;
        }
        if (in->kind == LW_GEMM) print_gemm(lp, in, f);
        else if (in->kind == LW_TRAV) print_trav(lp, in, f);
        else {
            fprintf(f, "  %-14s OTHER (plain loop)\n      ", in->name);
            ir_print_stmt(p, in->u.fallback_stmt, f);
            fputc('\n', f);
        }
    }
    fprintf(f, "materialized in memory:");
    for (int v = 0; v < p->nvars; v++)
        if (lp->materialized[v]) fprintf(f, " %s", p->vars[v].name);
    fprintf(f, "\nnot materialized (fused temporaries):");
    int none = 1;
    for (int v = 0; v < p->nvars; v++)
        if (!lp->materialized[v]) {
            int used = 0;
            for (int i = 0; i < p->nstmts && !used; i++) used = ir_stmt_reads(&p->stmts[i], v) || ir_stmt_writes(&p->stmts[i], v);
            if (used) {
                fprintf(f, " %s", p->vars[v].name);
                none = 0;
            }
        }
    fprintf(f, "%s\n", none ? " none" : "");
}
