/* The GEMM template emitter: specializes Y[S] (+)= s * X[G] x W[T] (and its outer-product
 * form dW[T] += X[G]^T dY[S]) for one lowered instance and one schedule, as CUDA C. */
#ifndef EG_EMIT_GEMM_H
#define EG_EMIT_GEMM_H

#include "codegen/config.h"
#include "codegen/kplan.h"
#include "codegen/lower.h"

/* Appends one kernel named `name` to the plan. Fails (nothing appended) when the instance
 * cannot be expressed by the template, saying why. The kernel text comes without the device
 * helpers (codegen/templates.h). */
int eg_emit(const ir_program *ir, const lw_gemm *gm, const cg_config *cfg, const char *name, int backward,
            kp_plan *plan, rg_err *err);

/* Whether gvec=on changes the instance's kernel under cfg (its other keys): a tensor-core product with
 * a float32 Y, or outer product into dW, whose rows keep float4 alignment. */
int eg_gvec_changes(const ir_program *ir, const lw_gemm *gm, const cg_config *cfg);

#endif
