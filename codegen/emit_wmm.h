/* The per-type weight-product emitter: weight-by-weight matrix products (DOM_TYPE WEIGHT_MM) and
 * their gradients (DOM_TYPE WGRAD), one thread block row per edge type, as the reference defines them. */
#ifndef EW_EMIT_WMM_H
#define EW_EMIT_WMM_H

#include "codegen/ir.h"
#include "codegen/kplan.h"

/* Fills kernel k (named already) for statement s and appends its kernel text, without the
 * device helpers, to *src. Fails, saying why, when the shapes do not agree. */
int ew_emit(const ir_program *ir, const ir_stmt *s, kp_kernel *k, rg_str *src, rg_err *err);

/* 1 when statement s is such a product (the other statements are not emitted here). */
static inline int ew_handles(const ir_stmt *s)
{
    return s->op == IR_OP_WEIGHT_MM || (s->op == IR_OP_WGRAD && s->dom == IR_DOM_TYPE);
}

#endif
