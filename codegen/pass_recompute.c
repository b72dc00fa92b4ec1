/* Recomputing per-edge forward values in the backward pass: finds the edge temporaries the
 * backward program reads that are cheap to compute again and clones their definitions there. */
#include "codegen/pass_recompute.h"

#include <stdlib.h>
#include <string.h>

/* Everything but the linear operators (GEMMs, whose outputs stay stored) and the loss. */
static int cheap_op(ir_opkind op)
{
    return op != IR_OP_LINEAR && op != IR_OP_WEIGHT_MM && op != IR_OP_WGRAD && op != IR_OP_NLL_LOSS &&
           op != IR_OP_NLL_GRAD;
}

static int reads_var(const ir_operand *o) { return o->acc != IR_ACC_CONST && o->var >= 0; }

/* A statement after `from` writes something s reads: a clone would read other values. */
static int inputs_change_after(const ir_program *p, const ir_stmt *s, int from)
{
    for (int k = 0; k < s->nin; k++) {
        if (!reads_var(&s->in[k])) continue;
        for (int i = from + 1; i < p->nstmts; i++)
            if (ir_stmt_writes(&p->stmts[i], s->in[k].var)) return 1;
    }
    return 0;
}

/* def[v]: the forward statement that defines candidate v (pass_recompute.h), else -1. */
static void find_candidates(const ir_program *p, int *def)
{
    for (int v = 0; v < p->nvars; v++) {
        def[v] = -1;
        const ir_var *x = &p->vars[v];
        if (x->kind != IR_VAR_EDGE || x->layout != IR_LAYOUT_VANILLA || x->role != IR_ROLE_TEMP) continue;
        int w = ir_sole_stmt(p, v, ir_stmt_writes);
        if (w < 0 || w >= p->nforward) continue;
        const ir_stmt *s = &p->stmts[w];
        if (s->dom == IR_DOM_EDGE && !s->accumulate && s->out.acc == IR_ACC_ROW && cheap_op(s->op) &&
            !inputs_change_after(p, s, w))
            def[v] = w;
    }
}

/* need[v] = 1 for the candidates the backward program reads and those their definitions read;
 * returns the first backward statement reading one (the clones go before it), or -1. */
static int mark_needed(const ir_program *p, const int *def, int *need)
{
    int first = -1;
    for (int i = p->nforward; i < p->nstmts; i++)
        for (int k = 0; k < p->stmts[i].nin; k++) {
            const ir_operand *o = &p->stmts[i].in[k];
            if (!reads_var(o) || def[o->var] < 0) continue;
            need[o->var] = 1;
            if (first < 0) first = i;
        }
    for (int grew = 1; grew;) {
        grew = 0;
        for (int v = 0; v < p->nvars; v++) {
            if (!need[v]) continue;
            const ir_stmt *s = &p->stmts[def[v]];
            for (int k = 0; k < s->nin; k++)
                if (reads_var(&s->in[k]) && def[s->in[k].var] >= 0 && !need[s->in[k].var]) grew = need[s->in[k].var] = 1;
        }
    }
    return first;
}

/* A new temporary of v's shape, named v's name with "_r" (and a number, if that name is taken). */
static int add_clone_var(ir_program *p, int v)
{
    ir_var c = p->vars[v];
    snprintf(c.name, sizeof c.name, "%.60s_r", p->vars[v].name);
    for (int n = 2; ir_find_var(p, c.name) >= 0 && n < 1000; n++)
        snprintf(c.name, sizeof c.name, "%.50s_r%d", p->vars[v].name, n);
    c.zero_init = 0;
    c.grad = c.grad_of = -1;
    c.bf16 = 0;
    return ir_add_var(p, &c);
}

static void rename_reads(ir_stmt *s, const int *clone)
{
    for (int k = 0; k < s->nin; k++)
        if (reads_var(&s->in[k]) && clone[s->in[k].var] >= 0) s->in[k].var = clone[s->in[k].var];
}

/* Clones the needed definitions, in their order, before statement `at`; returns how many. */
static int insert_clones(ir_program *p, const int *def, const int *need, int nvars, int at, int *clone)
{
    int *order = rg_xmalloc((size_t)(nvars ? nvars : 1) * sizeof *order), n = 0;
    for (int i = 0; i < p->nforward; i++)
        for (int v = 0; v < nvars; v++)
            if (need[v] && def[v] == i) order[n++] = v;
    for (int k = 0; k < n; k++) clone[order[k]] = add_clone_var(p, order[k]);
    for (int k = 0; k < n; k++) {
        ir_stmt s = p->stmts[def[order[k]]];
        s.out.var = clone[order[k]];
        rename_reads(&s, clone);
        s.backward = 1;
        ir_insert_stmt(p, at + k, &s);
    }
    free(order);
    return n;
}

static void report(const ir_program *p, const int *need, int nvars, FILE *log)
{
    fprintf(log, "recompute: the backward pass computes");
    for (int v = 0, first = 1; v < nvars; v++)
        if (need[v]) {
            fprintf(log, "%s %s", first ? "" : ",", p->vars[v].name);
            first = 0;
        }
    fprintf(log, " again instead of reading them per edge\n");
}

int prc_recompute_edge_values(ir_program *p, FILE *log, char *why, size_t why_len)
{
    int nvars = p->nvars;
    int *def = rg_xmalloc((size_t)(nvars ? nvars : 1) * sizeof *def);
    int *need = rg_xcalloc((size_t)(nvars ? nvars : 1), sizeof *need);
    find_candidates(p, def);
    int at = mark_needed(p, def, need), n = 0;
    if (at < 0) {
        if (why)
            snprintf(why, why_len, "the backward pass reads no per-edge value of the forward pass that is cheap to "
                                   "compute again (those it reads, if any, come from linear operators)");
    } else {
        int *clone = rg_xmalloc((size_t)nvars * sizeof *clone);
        for (int v = 0; v < nvars; v++) clone[v] = -1;
        n = insert_clones(p, def, need, nvars, at, clone);
        for (int i = at + n; i < p->nstmts; i++) rename_reads(&p->stmts[i], clone);
        if (log) report(p, need, nvars, log);
        free(clone);
    }
    free(def);
    free(need);
    return n;
}
