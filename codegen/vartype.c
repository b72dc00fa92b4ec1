/* How a variable is stored in device memory: its element type (float32, float64 or bfloat16) and
 * its heads, shared by every emitter and by the runtime that allocates and copies the buffers. */
#include "codegen/vartype.h"

#include <stdio.h>

int vt_is_f64(const ir_var *v)
{
    if (v->kind == IR_VAR_WEIGHT) return v->rows_dim == 0 && v->grad_of >= 0;
    /* a graph-derived input (RGCN's e.norm = 1/c) is exact to float32's 6e-8 and no sum of
     * cancelling terms: float64 would be 4 bytes more an edge in every traversal that reads it */
    if (v->role == IR_ROLE_GRAPH) return 0;
    return v->dim == 1;
}

/* Why a statement's write keeps its output out of bfloat16, or NULL. */
static const char *write_exclusion(const ir_stmt *s)
{
    /* a sum over edges (or over heads) in bfloat16 would round every partial sum, and there is
     * no bfloat16 atomicAdd that rounds once: accumulation stays float32 */
    if (s->accumulate) return "accumulated (+=): aggregation outputs and sums stay float32";
    /* the backward pass writes gradients and their terms, which sum over edges and cancel */
    if (s->backward) return "written by the backward pass (a gradient term)";
    return NULL;
}

/* In: node and edge rows of dim > 1 that are written once per row by the forward pass or come
 * from the host: the input features, the typed linears' outputs (compact or per-edge message
 * tables, HGT's K/Q/V, RGCN's and RGAT's messages) and elementwise feature temporaries: what
 * the traversals gather, row after row, and where the bytes of a layer are.
 * Out, each for its reason below: weights (read once per type, where bfloat16 saves nothing
 * measurable and SGD updates them in float32), the loss, per-row scalars (float64, see
 * vt_is_f64), graph-derived inputs and labels (scalars), the layer output (an aggregation
 * target, validated and read by the loss), gradients, and whatever is accumulated. */
const char *vt_bf16_exclusion(const ir_program *p, int var)
{
    const ir_var *x = &p->vars[var];
    if (x->kind == IR_VAR_WEIGHT) return "a weight: read once per type; SGD updates it in float32";
    if (x->kind == IR_VAR_SCALAR) return "the loss (a float64 scalar)";
    if (x->role == IR_ROLE_GRAPH || x->role == IR_ROLE_LABEL) return "graph-derived input or label";
    if (vt_is_f64(x)) return "a per-row scalar: float64 (vt_is_f64)";
    if (x->grad_of >= 0) return "a gradient: summed over edges with atomics";
    if (x->role == IR_ROLE_OUTPUT || var == p->output) return "the layer output: aggregated, validated, read by the loss";
    if (x->zero_init) return "an accumulation target";
    for (int i = 0; i < p->nstmts; i++) {
        const ir_stmt *s = &p->stmts[i];
        if (s->out.var != var) continue;
        const char *why = write_exclusion(s);
        if (why) return why;
    }
    return NULL;
}

void vt_mark_storage(ir_program *p, int bf16)
{
    for (int v = 0; v < p->nvars; v++) p->vars[v].bf16 = bf16 && !vt_bf16_exclusion(p, v);
}

const char *vt_load(const ir_var *v, const char *elem, char *out, size_t n)
{
    if (vt_is_bf16(v)) snprintf(out, n, "__bfloat162float(%s)", elem);
    else snprintf(out, n, "%s", elem);
    return out;
}

const char *vt_store(const ir_var *v, const char *value, char *out, size_t n)
{
    /* from double straight to bfloat16: one rounding, not two through float */
    if (vt_is_bf16(v)) snprintf(out, n, "__double2bfloat16((double)(%s))", value);
    else snprintf(out, n, "%s", value);
    return out;
}
