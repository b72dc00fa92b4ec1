/* Compact materialization pass: marks edge values that depend on (src, etype) alone as
 * COMPACT, to a fixpoint, never changing which rows any reader sums over. */
#include "codegen/pass_compact.h"

#include <stdlib.h>

/* The single writer of a variable, or -1 if none or several. */
static int single_writer(const ir_program *p, int var)
{
    int w = -1;
    for (int i = 0; i < p->nstmts; i++)
        if (ir_stmt_writes(&p->stmts[i], var)) {
            if (w >= 0) return -1;
            w = i;
        }
    return w;
}

static int candidate(const ir_program *p, int var, int dots)
{
    const ir_var *v = &p->vars[var];
    if (v->kind != IR_VAR_EDGE || v->layout != IR_LAYOUT_VANILLA || v->role != IR_ROLE_TEMP) return 0;
    int w = single_writer(p, var);
    if (w < 0) return 0;
    const ir_stmt *s = &p->stmts[w];
    if (s->dom != IR_DOM_EDGE || s->accumulate || s->out.acc != IR_ACC_ROW || (!dots && s->op == IR_OP_DOT)) return 0;
    for (int i = 0; i < s->nin; i++)
        if (!ir_operand_src_etype_only(p, &s->in[i])) return 0;
    return 1;
}

/* Marks var COMPACT unless a reader other than its writer would switch to per-unique rows. */
static int try_mark(ir_program *p, int var, char *per_unique_before)
{
    for (int i = 0; i < p->nstmts; i++) per_unique_before[i] = (char)ir_stmt_per_unique(p, &p->stmts[i]);
    p->vars[var].layout = IR_LAYOUT_COMPACT;
    for (int i = 0; i < p->nstmts; i++) {
        const ir_stmt *s = &p->stmts[i];
        if (ir_stmt_writes(s, var) || !ir_stmt_reads(s, var)) continue;
        if (!per_unique_before[i] && ir_stmt_per_unique(p, s)) {
            p->vars[var].layout = IR_LAYOUT_VANILLA;
            return 0;
        }
    }
    return 1;
}

int pc_compact(ir_program *p, FILE *log, rg_err *err)
{
    return pc_compact_opts(p, 1, NULL, log, err);
}

int pc_compact_opts(ir_program *p, int dots, int *kept, FILE *log, rg_err *err)
{
    if (p->nforward != p->nstmts)
        return rg_errf(err, "%s: compaction runs on the forward program, before autodiff", p->name);
    char *before = rg_xmalloc((size_t)p->nstmts + 1);
    int marked = 0;
    for (int changed = 1; changed;) {
        changed = 0;
        for (int v = 0; v < p->nvars; v++)
            if (candidate(p, v, dots) && try_mark(p, v, before)) {
                if (log) fprintf(log, "compact: %s depends only on (src, etype): COMPACT layout\n", p->vars[v].name);
                marked++;
                changed = 1;
            }
    }
    if (kept) {   /* the dot products that compaction would have taken */
        *kept = 0;
        for (int v = 0; v < p->nvars && !dots; v++)
            if (candidate(p, v, 1) && !candidate(p, v, 0)) {
                if (log) fprintf(log, "compact: %s left per edge (cdot=edge)\n", p->vars[v].name);
                ++*kept;
            }
    }
    free(before);
    if (log && !marked) fprintf(log, "compact: no edge value depends on (src, etype) alone\n");
    rg_err verr;
    if (ir_verify(p, &verr) < 0) RG_DIE("compaction broke the program: %s", verr.msg);
    return marked;
}
