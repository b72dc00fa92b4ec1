/* Single-pass softmax aggregation: matches edge_softmax feeding an aggregation exactly
 * (pass_softmax.h) and rewrites it to aggregate unnormalised, then divide per node. */
#include "codegen/pass_softmax.h"

#include <string.h>

typedef struct sm_match {
    int x, s, d, g;     /* statements: exp, sum, division, aggregation */
    int a, sum, n, h;   /* variables: attention, its sum, normalised attention, aggregate */
    int n_slot;         /* which input of g reads N */
} sm_match;

static int is_row(const ir_operand *o, int var) { return o->acc == IR_ACC_ROW && o->var == var; }

static int same_shape(const ir_var *u, const ir_var *v) { return u->heads == v->heads && u->dim == v->dim; }

static int fits(int narrow, int wide) { return narrow == 1 || narrow == wide; }

static int max_int(int a, int b) { return a > b ? a : b; }

/* Statement d is a candidate: an edge value divided by a destination's node value. */
static int is_candidate(const ir_program *p, const ir_stmt *d)
{
    return d->op == IR_OP_DIV && d->dom == IR_DOM_EDGE && !d->accumulate && d->out.acc == IR_ACC_ROW &&
           p->vars[d->out.var].kind == IR_VAR_EDGE && d->in[0].acc == IR_ACC_ROW && d->in[0].var >= 0 &&
           p->vars[d->in[0].var].kind == IR_VAR_EDGE && d->in[1].acc == IR_ACC_DST;
}

/* S's one writer is e.dst[S] += e[A] before d, and A's one writer an exp before that. */
static const char *match_sum(const ir_program *p, sm_match *m)
{
    if (!p->vars[m->sum].zero_init) return "the divisor is not a zero-initialised sum";
    m->s = ir_sole_stmt(p, m->sum, ir_stmt_writes);
    if (m->s < 0 || m->s > m->d) return "the divisor is not written by exactly one sum before the division";
    const ir_stmt *s = &p->stmts[m->s];
    if (s->op != IR_OP_COPY || s->dom != IR_DOM_EDGE || !s->accumulate || s->out.acc != IR_ACC_DST ||
        !is_row(&s->in[0], m->a))
        return "the divisor is not the sum over incoming edges of the divided value";
    m->x = ir_sole_stmt(p, m->a, ir_stmt_writes);
    if (m->x < 0 || m->x > m->s) return "the divided value is not written by exactly one statement before its sum";
    const ir_stmt *x = &p->stmts[m->x];
    if (x->op != IR_OP_EXP || x->dom != IR_DOM_EDGE || x->accumulate)
        return "the divided value is not an exp (its sum could be 0 on a node with incoming edges)";
    if (!same_shape(&p->vars[m->a], &p->vars[m->sum]) || !same_shape(&p->vars[m->a], &p->vars[m->n]))
        return "the attention, its sum and the normalised attention differ in shape";
    return NULL;
}

/* N's one reader is e.dst[H] += e[N] * e[M] after d, H written there only and read after it. */
static const char *match_aggregation(const ir_program *p, sm_match *m)
{
    m->g = ir_sole_stmt(p, m->n, ir_stmt_reads);
    if (m->g < 0) return "the normalised attention is not read by exactly one statement";
    const ir_stmt *g = &p->stmts[m->g];
    m->h = g->out.var;
    if (g->op != IR_OP_MUL || g->dom != IR_DOM_EDGE || !g->accumulate || g->out.acc != IR_ACC_DST)
        return "the normalised attention does not weight an aggregation into the destination";
    m->n_slot = is_row(&g->in[0], m->n) ? 0 : is_row(&g->in[1], m->n) ? 1 : -1;
    const ir_operand *mo = &g->in[1 - m->n_slot];
    if (m->n_slot < 0 || (mo->acc != IR_ACC_CONST && (mo->var == m->n || mo->var == m->sum || mo->var == m->h)))
        return "the aggregation reads the normalised attention or the sum other than as one weight";
    const ir_var *h = &p->vars[m->h], *n = &p->vars[m->n], *s = &p->vars[m->sum];
    const ir_var *mv = mo->acc == IR_ACC_CONST ? n : &p->vars[mo->var];
    if (h->kind != IR_VAR_NODE || !h->zero_init || ir_sole_stmt(p, m->h, ir_stmt_writes) != m->g)
        return "the aggregate is not a zero-initialised node value written only by the aggregation";
    for (int i = 0; i < m->g; i++)
        if (ir_stmt_reads(&p->stmts[i], m->h)) return "the aggregate is read before the aggregation";
    /* a narrower aggregate would sum heads (or features) with different divisors */
    if (h->heads != max_int(n->heads, mv->heads) || h->dim != max_int(n->dim, mv->dim))
        return "the aggregate sums over heads or features of the weighted message";
    if (!fits(s->heads, h->heads) || !fits(s->dim, h->dim)) return "the sum does not broadcast onto the aggregate";
    return NULL;
}

static const char *match(const ir_program *p, int d, sm_match *m)
{
    memset(m, 0, sizeof *m);
    const ir_stmt *ds = &p->stmts[d];
    m->d = d;
    m->a = ds->in[0].var;
    m->sum = ds->in[1].var;
    m->n = ds->out.var;
    if (ir_sole_stmt(p, m->n, ir_stmt_writes) != d) return "the normalised attention has other writers";
    const char *why = match_sum(p, m);
    return why ? why : match_aggregation(p, m);
}

static int add_unnormalised(ir_program *p, int h)
{
    ir_var v = p->vars[h];
    snprintf(v.name, sizeof v.name, "%.56s_un", p->vars[h].name);
    for (int k = 2; ir_find_var(p, v.name) >= 0; k++) snprintf(v.name, sizeof v.name, "%.40s_un_%d", p->vars[h].name, k % 1000);
    v.role = IR_ROLE_TEMP;
    v.zero_init = 1;
    v.grad = v.grad_of = -1;
    return ir_add_var(p, &v);
}

static void rewrite(ir_program *p, const sm_match *m, FILE *log)
{
    int un = add_unnormalised(p, m->h);
    ir_stmt *g = &p->stmts[m->g];
    g->out.var = un;
    g->in[m->n_slot] = (ir_operand){m->a, IR_ACC_ROW, 0};
    ir_stmt norm = {0};
    norm.op = IR_OP_DIV_NZ;
    norm.dom = IR_DOM_NODE;
    norm.out = (ir_operand){m->h, IR_ACC_ROW, 0};
    norm.nin = 2;
    norm.in[0] = (ir_operand){un, IR_ACC_ROW, 0};
    norm.in[1] = (ir_operand){m->sum, IR_ACC_ROW, 0};
    norm.line = g->line;
    p->vars[m->h].zero_init = 0;   /* every row is now assigned */
    if (log)
        fprintf(log, "softmax: %s aggregated unnormalised into %s, divided by %s per node\n", p->vars[m->h].name,
                p->vars[un].name, p->vars[m->sum].name);
    ir_insert_stmt(p, m->g + 1, &norm);
    ir_remove_stmt(p, m->d);
}

int psm_single_pass(ir_program *p, FILE *log, char *why, size_t why_len)
{
    RG_ASSERT(p->nforward == p->nstmts && p->loss < 0);
    int done = 0, seen = 0;
    if (why && why_len) snprintf(why, why_len, "no edge value is divided by a destination's sum (no edge_softmax)");
    for (int d = 0; d < p->nstmts; d++) {
        if (!is_candidate(p, &p->stmts[d])) continue;
        sm_match m;
        const char *no = match(p, d, &m);
        if (no) {
            if (!seen++ && why && why_len) snprintf(why, why_len, "%s (statement %d)", no, d);
            continue;
        }
        rewrite(p, &m, log);
        done++;
        d--;   /* d now holds the statement after the removed division */
    }
    if (done) ir_remove_dead(p);
    return done;
}

/* Whether statements a and b are the only ones that read var (an accumulation reads its target). */
static int read_only_by(const ir_program *p, int var, int a, int b)
{
    for (int i = 0; i < p->nstmts; i++)
        if (i != a && i != b && ir_stmt_reads(&p->stmts[i], var)) return 0;
    return 1;
}

/* norm's operands lead back to the sums, the sums to one exp: the shape psm_single_pass writes. */
static int online_at(const ir_program *p, int norm, psm_online *o)
{
    const ir_stmt *d = &p->stmts[norm];
    if (d->op != IR_OP_DIV_NZ || d->dom != IR_DOM_NODE || d->accumulate || d->in[0].acc != IR_ACC_ROW ||
        d->in[1].acc != IR_ACC_ROW || d->in[0].var < 0 || d->in[1].var < 0)
        return 0;
    *o = (psm_online){.norm = norm, .un = d->in[0].var, .sum = d->in[1].var};
    o->s = ir_sole_stmt(p, o->sum, ir_stmt_writes);
    o->g = ir_sole_stmt(p, o->un, ir_stmt_writes);
    if (o->s < 0 || o->g < 0 || !read_only_by(p, o->sum, o->s, norm) || !read_only_by(p, o->un, o->g, norm)) return 0;
    const ir_stmt *s = &p->stmts[o->s], *g = &p->stmts[o->g];
    if (s->op != IR_OP_COPY || !s->accumulate || s->out.acc != IR_ACC_DST || s->in[0].acc != IR_ACC_ROW) return 0;
    o->a = s->in[0].var;
    int slot = g->in[0].acc == IR_ACC_ROW && g->in[0].var == o->a ? 0 : g->in[1].acc == IR_ACC_ROW && g->in[1].var == o->a ? 1 : -1;
    if (g->op != IR_OP_MUL || !g->accumulate || g->out.acc != IR_ACC_DST || slot < 0 || g->in[1 - slot].var == o->a)
        return 0;
    o->x = ir_sole_stmt(p, o->a, ir_stmt_writes);
    if (o->x < 0 || p->stmts[o->x].op != IR_OP_EXP || p->stmts[o->x].accumulate || p->stmts[o->x].in[0].acc != IR_ACC_ROW)
        return 0;
    o->arg = p->stmts[o->x].in[0].var;
    if (!read_only_by(p, o->a, o->s, o->g)) return 0;   /* A has no reader but the two sums */
    return p->vars[o->sum].zero_init && p->vars[o->un].zero_init && p->vars[o->a].heads == p->vars[o->sum].heads;
}

int psm_find_online(const ir_program *p, psm_online *out, int max)
{
    int n = 0;
    for (int d = 0; d < p->nstmts && n < max; d++)
        if (online_at(p, d, &out[n])) n++;
    return n;
}
