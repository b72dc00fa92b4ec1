/* Analytic counts of a variant from its IR on a given graph: floating-point operations,
 * bytes of device memory each statement must touch, atomic updates, and kernel launches. */
#include "codegen/counts.h"
#include "codegen/emit_loss.h"
#include "codegen/vartype.h"

static int64_t var_rows(const ir_var *v, const hg_graph *g)
{
    return ir_var_rows(v, g->num_nodes, g->num_edges, g->num_unique, g->num_ntypes, g->num_etypes);
}

int64_t cg_stmt_rows(const ir_program *ir, int stmt, const hg_graph *g)
{
    const ir_stmt *s = &ir->stmts[stmt];
    switch (s->dom) {
    case IR_DOM_EDGE: return ir_stmt_per_unique(ir, s) ? g->num_unique : g->num_edges;
    case IR_DOM_NODE: return g->num_nodes;
    case IR_DOM_TYPE: return g->num_etypes;
    case IR_DOM_GLOBAL: return 1;
    }
    return 0;
}

static double width(const ir_var *v) { return (double)ir_var_row_width(v); }

/* Multiply-adds count 2. Broadcast shapes use the widest operand. */
double cg_stmt_flops(const ir_program *ir, const ir_stmt *s, double rows)
{
    const ir_var *o = &ir->vars[s->out.var];
    double wide = width(o);
    for (int k = 0; k < s->nin; k++)
        if (s->in[k].var >= 0 && width(&ir->vars[s->in[k].var]) > wide) wide = width(&ir->vars[s->in[k].var]);
    switch (s->op) {
    case IR_OP_LINEAR: {
        const ir_var *w = &ir->vars[s->in[1].var];
        return 2.0 * rows * (w->heads > 0 ? w->heads : 1) * w->rows_dim * w->dim;
    }
    case IR_OP_WGRAD: {
        const ir_var *w = &ir->vars[s->out.var];
        return 2.0 * rows * width(w);
    }
    case IR_OP_WEIGHT_MM: {
        const ir_var *a = &ir->vars[s->in[0].var];
        return 2.0 * rows * width(o) * (a->dim > 0 ? a->dim : 1);
    }
    case IR_OP_DOT: return 2.0 * rows * wide;
    case IR_OP_NLL_LOSS: case IR_OP_NLL_GRAD: return 4.0 * rows * wide;
    default: return rows * wide;
    }
}

static double operand_bytes(const ir_program *ir, const cg_variant *v, const ir_operand *op, double rows,
                            const hg_graph *g)
{
    if (op->var < 0 || !v->materialized[op->var]) return 0;
    const ir_var *x = &ir->vars[op->var];
    double r = (double)var_rows(x, g);
    /* bfloat16 rows (store=bf16) at their 2 bytes; everything else at the 4 these counts have
     * always used (float64 scalars included), so stored analytic bytes keep their meaning */
    double elem = vt_is_bf16(x) ? 2.0 : 4.0;
    if (x->kind == IR_VAR_WEIGHT || x->kind == IR_VAR_SCALAR) return elem * r * width(x);
    return elem * (rows < r ? rows : r) * width(x);
}

void cg_counts_fill(const ir_program *ir, const cg_variant *v, const hg_graph *g, double *flops, double *bytes,
                    double *atomics, int *launches)
{
    *flops = *bytes = *atomics = 0;
    for (int i = 0; i < ir->nstmts; i++) {
        const ir_stmt *s = &ir->stmts[i];
        double rows = (double)cg_stmt_rows(ir, i, g);
        *flops += cg_stmt_flops(ir, s, rows);
        *bytes += operand_bytes(ir, v, &s->out, rows, g);
        for (int k = 0; k < s->nin; k++) *bytes += operand_bytes(ir, v, &s->in[k], rows, g);
        const ir_var *o = &ir->vars[s->out.var];
        int scattered = s->accumulate && (s->out.acc == IR_ACC_DST || s->out.acc == IR_ACC_SRC ||
                                          o->kind == IR_VAR_WEIGHT || o->layout == IR_LAYOUT_COMPACT);
        if (scattered) *atomics += rows * width(o);
    }
    /* the SGD step: each trainable weight read and written, its gradient read */
    for (int w = 0; w < ir->nvars; w++) {
        const ir_var *x = &ir->vars[w];
        if (!el_sgd_updates(x) || !v->materialized[x->grad]) continue;
        double n = (double)var_rows(x, g) * width(x);
        *flops += 2 * n;
        *bytes += n * (2 * sizeof(float) + (double)vt_bytes(&ir->vars[x->grad]));
    }
    *launches = v->plan.nkernels;
}
