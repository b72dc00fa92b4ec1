/* Linear-operator reordering pass: rewrites a linear operator followed by another into a
 * weight-weight product first, when multiply-add counts on the graph's sizes favour it. */
#include "codegen/pass_reorder.h"

#include <stdlib.h>
#include <string.h>

void rr_stats_nominal(rr_stats *s)
{
    memset(s, 0, sizeof *s);
    s->nodes = 7262;
    s->edges = 48810;
    s->unique_pairs = 24299;
    s->ntypes = 7;
    s->etypes = 104;
    s->nominal = 1;
    snprintf(s->source, sizeof s->source, "aifb (nominal counts)");
}

void rr_stats_from_graph(rr_stats *s, const hg_graph *g, const char *name)
{
    memset(s, 0, sizeof *s);
    s->nodes = g->num_nodes;
    s->edges = g->num_edges;
    s->unique_pairs = g->num_unique;
    s->ntypes = g->num_ntypes;
    s->etypes = g->num_etypes;
    snprintf(s->source, sizeof s->source, "%s", name ? name : g->name);
}

/* ------------------------------------------------------------------ helpers */

/* The only statement writing var, with `=`, or -1. */
static int sole_producer(const ir_program *p, int var)
{
    int w = -1;
    for (int i = 0; i < p->nstmts; i++)
        if (ir_stmt_writes(&p->stmts[i], var)) {
            if (w >= 0 || p->stmts[i].accumulate) return -1;
            w = i;
        }
    return w;
}

static int readers(const ir_program *p, int var)
{
    int n = 0;
    for (int i = 0; i < p->nstmts; i++) n += ir_stmt_reads(&p->stmts[i], var);
    return n;
}

static int written_between(const ir_program *p, int var, int from, int to)
{
    for (int j = from + 1; j < to; j++)
        if (ir_stmt_writes(&p->stmts[j], var)) return 1;
    return 0;
}

/* Would compaction make this operand a (src, etype)-only read? Edge temporaries whose
 * one `=` writer reads only such operands, transitively (what pass_compact will mark). */
static int will_be_src_etype_only(const ir_program *p, const ir_operand *o, int depth)
{
    if (ir_operand_src_etype_only(p, o)) return 1;
    if (depth > 64 || o->acc != IR_ACC_ROW) return 0;
    const ir_var *v = &p->vars[o->var];
    if (v->kind != IR_VAR_EDGE || v->role != IR_ROLE_TEMP) return 0;
    int w = sole_producer(p, o->var);
    if (w < 0 || p->stmts[w].dom != IR_DOM_EDGE) return 0;
    for (int i = 0; i < p->stmts[w].nin; i++)
        if (!will_be_src_etype_only(p, &p->stmts[w].in[i], depth + 1)) return 0;
    return 1;
}

/* Rows a statement runs over; with assume_compact, edge values depending on (src, etype)
 * alone count as unique pairs (they will be compact). */
static double stmt_rows(const ir_program *p, const ir_stmt *s, const rr_options *o)
{
    const rr_stats *st = o->stats;
    switch (s->dom) {
    case IR_DOM_NODE: return (double)st->nodes;
    case IR_DOM_TYPE: return (double)st->etypes;
    case IR_DOM_GLOBAL: return 1;
    case IR_DOM_EDGE: break;
    }
    if (ir_stmt_per_unique(p, s)) return (double)st->unique_pairs;
    const ir_var *out = &p->vars[s->out.var];
    if (o->assume_compact && !s->accumulate && out->kind == IR_VAR_EDGE) {
        int only = 1;
        for (int i = 0; i < s->nin && only; i++) only = will_be_src_etype_only(p, &s->in[i], 0);
        if (only) return (double)st->unique_pairs;
    }
    return (double)st->edges;
}

static int width_of(const ir_program *p, const ir_operand *o, int *heads)
{
    if (o->acc == IR_ACC_CONST) {
        *heads = 1;
        return 1;
    }
    *heads = p->vars[o->var].heads;
    return p->vars[o->var].dim;
}

/* Multiply-adds of one statement (linear, dot and weight products; 0 for the rest). */
static double stmt_macs(const ir_program *p, const ir_stmt *s, const rr_options *o)
{
    double rows = stmt_rows(p, s, o);
    if (s->op == IR_OP_LINEAR) {
        const ir_var *w = &p->vars[s->in[1].var];
        return rows * w->heads * (double)w->rows_dim * w->dim;
    }
    if (s->op == IR_OP_DOT) {
        int ha, hb, da = width_of(p, &s->in[0], &ha), db = width_of(p, &s->in[1], &hb);
        return rows * (ha > hb ? ha : hb) * (double)(da > db ? da : db);
    }
    if (s->op == IR_OP_WEIGHT_MM) {
        const ir_var *a = &p->vars[s->in[0].var], *b = &p->vars[s->in[1].var];
        int kb = b->rows_dim ? b->rows_dim : b->dim;
        return rows * b->heads * (double)a->rows_dim * kb * (b->rows_dim ? b->dim : 1);
    }
    return 0;
}

static void replace_program(ir_program *p, ir_program *c)
{
    free(p->vars);
    free(p->stmts);
    *p = *c;
    free(c);
}

/* ------------------------------------------------------------------ candidates */

typedef struct candidate {
    int d;          /* the statement consuming t (dot or linear) */
    int t_slot;     /* which operand of d is t */
    int l;          /* the linear producing t */
} candidate;

/* The weight access the producer's weight has when looked up per edge type r. */
static int type_access(const ir_stmt *l, const ir_operand *t_read, ir_access *acc)
{
    ir_access a = l->in[1].acc;
    if (l->dom == IR_DOM_EDGE) {
        if (a == IR_ACC_NTYPE) return 0;
        *acc = a;
        return 1;
    }
    /* node linear read at e.src / e.dst: W[n.ntype] becomes W[src/dst ntype of r] */
    if (a == IR_ACC_ALL) *acc = IR_ACC_ALL;
    else if (a == IR_ACC_NTYPE) *acc = t_read->acc == IR_ACC_SRC ? IR_ACC_SRC_NTYPE : IR_ACC_DST_NTYPE;
    else return 0;
    return 1;
}

static int find_candidate_at(const ir_program *p, int d, candidate *c)
{
    const ir_stmt *s = &p->stmts[d];
    if (d >= p->nforward || s->dom != IR_DOM_EDGE) return 0;
    if (s->op != IR_OP_DOT && !(s->op == IR_OP_LINEAR && !s->transpose_w)) return 0;
    for (int k = 0; k < 2; k++) {
        const ir_operand *t = &s->in[k], *w = &s->in[1 - k];
        if (t->acc == IR_ACC_CONST || w->acc != IR_ACC_ETYPE) continue;
        if (s->op == IR_OP_LINEAR && k != 0) continue;
        const ir_var *wv = &p->vars[w->var];
        if (wv->kind != IR_VAR_WEIGHT || (s->op == IR_OP_DOT) != (wv->rows_dim == 0)) continue;
        const ir_var *tv = &p->vars[t->var];
        if (tv->kind == IR_VAR_WEIGHT || tv->role != IR_ROLE_TEMP) continue;
        int l = sole_producer(p, t->var);
        if (l < 0 || l >= d) continue;
        const ir_stmt *ls = &p->stmts[l];
        if (ls->op != IR_OP_LINEAR || ls->transpose_w || ls->in[0].acc == IR_ACC_CONST) continue;
        int node_t = ls->dom == IR_DOM_NODE && (t->acc == IR_ACC_SRC || t->acc == IR_ACC_DST);
        int edge_t = ls->dom == IR_DOM_EDGE && t->acc == IR_ACC_ROW;
        if (!node_t && !edge_t) continue;
        if (written_between(p, ls->in[0].var, l, d)) continue;
        ir_access acc;
        if (!type_access(ls, t, &acc)) continue;
        c->d = d;
        c->t_slot = k;
        c->l = l;
        return 1;
    }
    return 0;
}

/* Builds the rewritten program (a clone) for a candidate, or NULL if shapes do not compose. */
static ir_program *rewrite(const ir_program *p, const candidate *c, int *mm_index)
{
    const ir_stmt *ls = &p->stmts[c->l];
    const ir_stmt *ds = &p->stmts[c->d];
    const ir_operand *t = &ds->in[c->t_slot], *b = &ds->in[1 - c->t_slot];
    ir_access a_acc = IR_ACC_ALL;
    RG_ASSERT(type_access(ls, t, &a_acc));
    const ir_var *A = &p->vars[ls->in[1].var], *B = &p->vars[b->var];

    ir_program *q = ir_clone(p);
    ir_var prod;
    memset(&prod, 0, sizeof prod);
    char base[64];
    snprintf(base, sizeof base, "%.30s_%.30s", A->name, B->name);
    snprintf(prod.name, sizeof prod.name, "%s", base);
    for (int k = 2; ir_find_var(q, prod.name) >= 0 && k < 1000; k++)
        snprintf(prod.name, sizeof prod.name, "%.50s_%d", base, k);
    prod.kind = IR_VAR_WEIGHT;
    prod.layout = IR_LAYOUT_WEIGHT;
    prod.role = IR_ROLE_TEMP;
    prod.widx = IR_WIDX_ETYPE;
    prod.heads = B->heads;
    prod.rows_dim = B->rows_dim ? A->rows_dim : 0;
    prod.dim = B->rows_dim ? B->dim : A->rows_dim;
    prod.grad_of = prod.grad = -1;
    int pv = ir_add_var(q, &prod);

    ir_stmt mm;
    memset(&mm, 0, sizeof mm);
    mm.op = IR_OP_WEIGHT_MM;
    mm.dom = IR_DOM_TYPE;
    mm.out = (ir_operand){pv, IR_ACC_ETYPE, 0};
    mm.nin = 2;
    mm.in[0] = (ir_operand){ls->in[1].var, a_acc, 0};
    mm.in[1] = (ir_operand){b->var, IR_ACC_ETYPE, 0};
    mm.line = ds->line;

    ir_operand x = ls->in[0];
    if (ls->dom == IR_DOM_NODE) x.acc = t->acc;   /* the node's input, read at e.src / e.dst */
    ir_stmt nd = *ds;
    nd.in[c->t_slot] = x;
    nd.in[1 - c->t_slot] = (ir_operand){pv, IR_ACC_ETYPE, 0};
    q->stmts[c->d] = nd;
    /* weight products go first: they read only weights */
    int at = 0;
    while (at < q->nstmts && q->stmts[at].op == IR_OP_WEIGHT_MM) at++;
    ir_insert_stmt(q, at, &mm);
    *mm_index = at;
    if (ir_verify(q, NULL) < 0) {
        ir_free(q);
        return NULL;
    }
    return q;
}

static void describe(const ir_program *p, const candidate *c, char *out, size_t n)
{
    const ir_stmt *ls = &p->stmts[c->l], *ds = &p->stmts[c->d];
    const char *x = p->vars[ls->in[0].var].name, *A = p->vars[ls->in[1].var].name;
    const char *B = p->vars[ds->in[1 - c->t_slot].var].name, *t = p->vars[ds->in[c->t_slot].var].name;
    const char *out_name = p->vars[ds->out.var].name;
    if (ds->op == IR_OP_DOT)
        snprintf(out, n, "%s = dot(%s = linear(%s, %s), %s[e.etype])  (line %d)", out_name, t, x, A, B, ds->line);
    else
        snprintf(out, n, "%s = linear(%s = linear(%s, %s), %s[e.etype])  (line %d)", out_name, t, x, A, B, ds->line);
}

/* Counts one candidate; returns the rewritten program if profitable (else NULL). */
static ir_program *evaluate(const ir_program *p, const candidate *c, const rr_options *o, int log_it)
{
    int mm;
    ir_program *q = rewrite(p, c, &mm);
    char what[512];
    describe(p, c, what, sizeof what);
    if (!q) {
        if (o->log && log_it) fprintf(o->log, "reorder: %s: shapes do not compose, skipped\n", what);
        return NULL;
    }
    const ir_stmt *ls = &p->stmts[c->l], *ds = &p->stmts[c->d];
    int t_dies = readers(p, ds->in[c->t_slot].var) == 1;
    double lin = stmt_macs(p, ls, o), op_before = stmt_macs(p, ds, o);
    double before = op_before + (t_dies ? lin : 0);
    /* the rewritten consumer sits one position later in q (the product went in front) */
    double prod = stmt_macs(q, &q->stmts[mm], o), op_after = stmt_macs(q, &q->stmts[c->d + 1], o);
    double after = prod + op_after;
    int apply = after < before;
    if (o->log && (log_it || apply)) {
        fprintf(o->log, "reorder: %s\n", what);
        fprintf(o->log, "  before: %.4g multiply-adds (%s %.4g%s)\n", before, ds->op == IR_OP_DOT ? "dot" : "linear",
                op_before, t_dies ? "" : "; the first linear stays, its result has other readers");
        if (t_dies) fprintf(o->log, "          + first linear %.4g\n", lin);
        fprintf(o->log, "  after:  %.4g multiply-adds (weight product %s over %lld relations %.4g + %s %.4g)\n", after,
                q->vars[q->stmts[mm].out.var].name, (long long)o->stats->etypes, prod,
                ds->op == IR_OP_DOT ? "dot" : "linear", op_after);
        fprintf(o->log, "  -> %s\n", apply ? "applied" : "not applied (no fewer multiply-adds)");
    }
    if (!apply) {
        ir_free(q);
        return NULL;
    }
    return q;
}

static int seen(char (*names)[64], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name)) return 1;
    return 0;
}

int rr_reorder(ir_program *p, const rr_options *opt, rg_err *err)
{
    if (p->nforward != p->nstmts)
        return rg_errf(err, "%s: reordering runs on the forward program, before autodiff", p->name);
    rr_stats nominal;
    rr_options o = opt ? *opt : (rr_options){0};
    if (!o.stats) {
        rr_stats_nominal(&nominal);
        o.stats = &nominal;
    }
    if (o.log)
        fprintf(o.log, "reorder: counting multiply-adds on %s: %lld nodes, %lld edges, %lld unique (src, etype), "
                       "%lld node types, %lld edge types%s\n",
                o.stats->source, (long long)o.stats->nodes, (long long)o.stats->edges, (long long)o.stats->unique_pairs,
                (long long)o.stats->ntypes, (long long)o.stats->etypes,
                o.assume_compact ? "; compactable values counted per unique pair" : "");
    char (*logged)[64] = NULL;
    int nlogged = 0, applied = 0;
    for (int again = 1; again;) {
        again = 0;
        for (int d = 0; d < p->nstmts; d++) {
            candidate c;
            if (!find_candidate_at(p, d, &c)) continue;
            const char *key = p->vars[p->stmts[d].out.var].name;
            int first = !seen(logged, nlogged, key);
            if (first) {
                logged = rg_xrealloc(logged, (size_t)(nlogged + 1) * sizeof *logged);
                snprintf(logged[nlogged++], 64, "%s", key);
            }
            ir_program *q = evaluate(p, &c, &o, first);
            if (!q) continue;
            replace_program(p, q);
            ir_remove_dead(p);
            applied++;
            again = 1;
            break;
        }
    }
    free(logged);
    if (o.log) fprintf(o.log, "reorder: %d rewrite(s) applied\n", applied);
    rg_err verr;
    if (ir_verify(p, &verr) < 0) RG_DIE("reordering broke the program: %s", verr.msg);
    return applied;
}
