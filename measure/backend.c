/* CPU-side helpers shared by every measurement backend: an empty result, and a failure's
 * stored status taken from its error class (linked without the GPU backend). */
#include "measure/backend.h"

#include <math.h>
#include <string.h>

void xb_result_init(xb_result *r)
{
    memset(r, 0, sizeof *r);
    r->status = RS_OK;
    r->err_class = RG_ERR_OTHER;
    r->validation_error = r->median_ms = r->min_ms = r->max_ms = r->stddev_ms = NAN;
    r->gemm_ms = r->traversal_ms = r->other_ms = r->fwd_ms = r->bwd_ms = NAN;
    r->peak_mem_bytes = -1;
}

rs_status xb_status_of(const rg_err *e, rs_status otherwise)
{
    switch (e->code) {
    case RG_ERR_COMPILE: return RS_COMPILE_ERROR;
    case RG_ERR_FAULT: return RS_RUNTIME_FAULT;   /* the context is gone: the worker restarts */
    case RG_ERR_WRONG_ANSWER: return RS_WRONG_ANSWER;
    case RG_ERR_TIMEOUT: return RS_TIMEOUT;
    case RG_ERR_OOM: return RS_OOM;
    default: return otherwise;
    }
}

int xb_result_fail(xb_result *r, rs_status st, const rg_err *e)
{
    r->status = st;
    r->err_class = e->code;
    r->cuda_error = e->cuda;
    snprintf(r->evidence, sizeof r->evidence, "%s", e->msg);
    return 0;
}
