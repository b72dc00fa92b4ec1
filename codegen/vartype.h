/* How a variable is stored in device memory: its element type (float32, float64 or bfloat16) and
 * its heads, shared by every emitter and by the runtime that allocates and copies the buffers. */
#ifndef VT_VARTYPE_H
#define VT_VARTYPE_H

#include <stddef.h>
#include "codegen/ir.h"

/* Element type of a variable in device memory. Per-row scalars (edge, node and global
 * values of dim 1: attention logits, softmax sums, their gradients, the loss) are float64:
 * the edge-softmax backward subtracts nearly equal terms, and float32 there loses the
 * 1e-4 agreement with the reference; they cost 4 extra bytes per row. Gradients of vector
 * weights (attention vectors such as RGAT's w_s, w_t and W w_t) are float64 too: they sum
 * softmax gradients over every edge of a type, terms that largely cancel, and they are
 * only types x width values, so the safety costs nothing measurable. Graph-derived inputs
 * (RGCN's e.norm) are float32 whatever their width. Features, weights and
 * weight-matrix gradients are float32, except the features and messages vt_mark_storage
 * gives bfloat16 under store=bf16 (ir_var.bf16). */
int vt_is_f64(const ir_var *v);
static inline int vt_is_bf16(const ir_var *v) { return v->bf16 && !vt_is_f64(v); }
static inline const char *vt_ctype(const ir_var *v)
{
    return vt_is_f64(v) ? "double" : vt_is_bf16(v) ? "__nv_bfloat16" : "float";
}
static inline int vt_bytes(const ir_var *v) { return vt_is_f64(v) ? 8 : vt_is_bf16(v) ? 2 : 4; }
/* Heads of a variable's rows (0 in the IR means one). */
static inline int vt_heads(const ir_var *v) { return v->heads > 0 ? v->heads : 1; }

/* store=bf16: why variable `var` of p keeps its element type, or NULL when it may be stored as
 * bfloat16 (the one place that decides; vartype.c says why each class is in or out). */
const char *vt_bf16_exclusion(const ir_program *p, int var);
/* Sets ir_var.bf16 of every variable of p: vt_bf16_exclusion's eligible ones when bf16 is 1,
 * none when 0. pl_build calls it after the passes, before lowering. */
void vt_mark_storage(ir_program *p, int bf16);
/* The CUDA expression (a float, or the double of a float64 variable) of an element of v given as
 * the text `elem` (an lvalue or a load of v's element type): `elem` itself, or its conversion
 * from bfloat16. Every read of a variable's device memory goes through it. */
const char *vt_load(const ir_var *v, const char *elem, char *out, size_t n);
/* The CUDA expression to assign to an element of v from the float or double expression `value`:
 * `value`, or its rounding to bfloat16 (once, to nearest even). */
const char *vt_store(const ir_var *v, const char *value, char *out, size_t n);

#endif
