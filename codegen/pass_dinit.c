/* dinit=gemm: a gradient that several backward statements add into is started by its node-wide linear,
 * moved ahead of the other writers and turned into an assignment, so that no zero-fill precedes it. */
#include "codegen/pass_dinit.h"
#include "common/util.h"

#include <string.h>

/* The node-wide linear that can start v: a backward LINEAR over every node adding into v's own row, its
 * weight with at most v's heads. -1 when none. */
static int node_linear_writer(const ir_program *p, int v)
{
    for (int i = p->nforward; i < p->nstmts; i++) {
        const ir_stmt *s = &p->stmts[i];
        if (s->out.var != v || s->op != IR_OP_LINEAR || s->dom != IR_DOM_NODE || s->out.acc != IR_ACC_ROW ||
            !s->accumulate)
            continue;
        const ir_var *w = &p->vars[s->in[1].var];
        if (w->heads > 1 && p->vars[v].heads < w->heads) continue;
        return i;
    }
    return -1;
}

/* Whether writer x (an earlier `+=` into v) may move to just after statement s: nothing in (x, s] reads
 * v as an input, writes what x reads, or reads or writes what x writes besides adding into v. */
static int may_sink(const ir_program *p, int x, int s, int v)
{
    const ir_stmt *sx = &p->stmts[x];
    if (!sx->accumulate || ir_stmt_reads_operand(sx, v)) return 0;
    for (int i = x + 1; i <= s; i++) {
        const ir_stmt *y = &p->stmts[i];
        /* y writes only its output: x must not read it */
        if (ir_stmt_reads_operand(y, v) || (y->out.var == v && !y->accumulate) || ir_stmt_reads_operand(sx, y->out.var))
            return 0;
    }
    return 1;
}

/* Moves statement x to just after statement s (x < s); the statements between move up by one. */
static void move_after(ir_program *p, int x, int s)
{
    ir_stmt moved = p->stmts[x];
    memmove(p->stmts + x, p->stmts + x + 1, (size_t)(s - x) * sizeof *p->stmts);
    p->stmts[s] = moved;
}

/* Starts v with its node-wide linear where that is legal; 1 when done. */
static int assign_first(ir_program *p, int v, FILE *log)
{
    int s = node_linear_writer(p, v);
    if (s < 0) return 0;
    for (int i = 0; i < p->nforward; i++)
        if (ir_stmt_reads(&p->stmts[i], v) || ir_stmt_writes(&p->stmts[i], v)) return 0;
    int earlier = 0;
    for (int i = p->nforward; i < s; i++) {
        if (ir_stmt_writes(&p->stmts[i], v)) {
            if (!may_sink(p, i, s, v)) return 0;
            earlier++;
        } else if (ir_stmt_reads_operand(&p->stmts[i], v)) {
            return 0;
        }
    }
    /* each earlier writer in turn goes right after the node linear, which moves up by one each time */
    for (int moved = 0; moved < earlier; moved++, s--) {
        int x = p->nforward;
        while (!ir_stmt_writes(&p->stmts[x], v)) x++;
        move_after(p, x, s + moved);
    }
    p->stmts[s].accumulate = 0;
    p->vars[v].zero_init = 0;
    if (log) fprintf(log, "dinit: %s assigned first by its node-wide linear, %d scatter(s) after it; no zero-fill\n",
                     p->vars[v].name, earlier);
    return 1;
}

int pdi_assign_first(ir_program *p, FILE *log, char *why, size_t why_len)
{
    int n = 0;
    for (int v = 0; v < p->nvars; v++)
        if (p->vars[v].kind == IR_VAR_NODE && p->vars[v].zero_init) n += assign_first(p, v, log);
    if (!n && why)
        snprintf(why, why_len, "no zero-initialised node gradient is written both by a node-wide linear and by "
                               "statements before it that it could precede");
    return n;
}
