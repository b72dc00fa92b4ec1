/* From a lowered program and one config to a launch plan: decides which variables live in
 * device memory, emits every instance's kernels in program order, and lists zero-fills. */
#ifndef CG_CODEGEN_H
#define CG_CODEGEN_H

#include "codegen/config.h"
#include "codegen/kplan.h"
#include "codegen/lower.h"

typedef struct cg_variant {
    kp_plan plan;
    int *materialized;   /* [ir->nvars] 1: allocated in device memory */
    int nvars;
} cg_variant;

/* Element type of a variable in device memory. Per-row scalars (edge, node and global
 * values of dim 1: attention logits, softmax sums, their gradients, the loss) are float64:
 * the edge-softmax backward subtracts nearly equal terms, and float32 there loses the
 * 1e-4 agreement with the reference; they cost 4 extra bytes per row. Gradients of vector
 * weights (attention vectors such as RGAT's w_s, w_t and W w_t) are float64 too: they sum
 * softmax gradients over every edge of a type, terms that largely cancel, and they are
 * only types x width values, so the safety costs nothing measurable. Features, weights and
 * weight-matrix gradients are float32. */
int cg_var_is_f64(const ir_var *v);
static inline const char *cg_ctype(const ir_var *v) { return cg_var_is_f64(v) ? "double" : "float"; }
static inline int cg_elem_bytes(const ir_var *v) { return cg_var_is_f64(v) ? 8 : 4; }

/* Learning rate of the SGD step that ends every training plan (sgd_update). */
#define CG_SGD_LR 0.01
/* The weights that step updates: trainable ones with a gradient. */
static inline int cg_sgd_updates(const ir_var *v) { return v->role == IR_ROLE_PARAM && v->grad >= 0; }
/* The host's copy of that step for one weight value, bit for bit what the kernel computes. */
static inline float cg_sgd_step(float w, double dw) { return w - (float)(CG_SGD_LR * dw); }

/* Emits the kernels of lp (lowered from ir) under cfg. Fails with the reason when an
 * instance cannot be expressed; nothing is left allocated then. */
int cg_build(const ir_program *ir, const lw_program *lp, const cg_config *cfg, cg_variant *out, rg_err *err);
void cg_variant_free(cg_variant *v);
/* Writes each kernel's source to DIR/<name>.cu and the launch plan to DIR/plan.txt. */
int cg_write_sources(const cg_variant *v, const ir_program *ir, const char *dir, rg_err *err);

#endif
