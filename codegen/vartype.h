/* How a variable is stored in device memory: its element type (float32 or float64) and its
 * heads, shared by every emitter and by the runtime that allocates and copies the buffers. */
#ifndef VT_VARTYPE_H
#define VT_VARTYPE_H

#include "codegen/ir.h"

/* Element type of a variable in device memory. Per-row scalars (edge, node and global
 * values of dim 1: attention logits, softmax sums, their gradients, the loss) are float64:
 * the edge-softmax backward subtracts nearly equal terms, and float32 there loses the
 * 1e-4 agreement with the reference; they cost 4 extra bytes per row. Gradients of vector
 * weights (attention vectors such as RGAT's w_s, w_t and W w_t) are float64 too: they sum
 * softmax gradients over every edge of a type, terms that largely cancel, and they are
 * only types x width values, so the safety costs nothing measurable. Features, weights and
 * weight-matrix gradients are float32. */
int vt_is_f64(const ir_var *v);
static inline const char *vt_ctype(const ir_var *v) { return vt_is_f64(v) ? "double" : "float"; }
static inline int vt_bytes(const ir_var *v) { return vt_is_f64(v) ? 8 : 4; }
/* Heads of a variable's rows (0 in the IR means one). */
static inline int vt_heads(const ir_var *v) { return v->heads > 0 ? v->heads : 1; }

#endif
