/* The loss and update emitters of a training plan: the mean NLL loss of log-softmax and its
 * gradient (one kernel each, a group of lanes per node), and the SGD step that ends the plan. */
#ifndef EL_EMIT_LOSS_H
#define EL_EMIT_LOSS_H

#include "codegen/ir.h"
#include "codegen/kplan.h"

/* Learning rate of the SGD step that ends every training plan (sgd_update). */
#define EL_SGD_LR 0.01
/* The weights that step updates: trainable ones with a gradient. */
static inline int el_sgd_updates(const ir_var *v) { return v->role == IR_ROLE_PARAM && v->grad >= 0; }
/* The host's copy of that step for one weight value, bit for bit what the kernel computes. */
static inline float el_sgd_step(float w, double dw) { return w - (float)(EL_SGD_LR * dw); }

/* 1 when statement s is the loss or its gradient (the other statements are not emitted here). */
static inline int el_handles(const ir_stmt *s) { return s->op == IR_OP_NLL_LOSS || s->op == IR_OP_NLL_GRAD; }

/* Fills kernel k (named already) for the NLL_LOSS or NLL_GRAD statement s and appends its
 * kernel text, without the device helpers, to *src. Fails when a row has too many classes. */
int el_emit_nll(const ir_program *ir, const ir_stmt *s, kp_kernel *k, rg_str *src, rg_err *err);

/* The SGD step that ends a training plan: kernels updating every trainable weight in place,
 * w -= EL_SGD_LR * dw, NAME for the first ten weights, NAME_2 for the next ten and so on (one
 * kernel's parameters take ten); nothing is emitted when the program has no gradients. The
 * kernels' text comes without the device helpers. */
int el_emit_sgd(const ir_program *ir, const int *materialized, const char *name, kp_plan *plan, rg_err *err);

#endif
