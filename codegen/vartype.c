/* How a variable is stored in device memory: its element type (float32 or float64) and its
 * heads, shared by every emitter and by the runtime that allocates and copies the buffers. */
#include "codegen/vartype.h"

int vt_is_f64(const ir_var *v)
{
    if (v->kind == IR_VAR_WEIGHT) return v->rows_dim == 0 && v->grad_of >= 0;
    return v->dim == 1;
}
