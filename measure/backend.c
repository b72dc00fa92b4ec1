/* CPU-side helpers shared by every measurement backend: an empty result, a failure's stored
 * status from its error class, opening a problem, metrics and the verdict of a validated run. */
#include "measure/backend.h"
#include "datasets/dataset.h"

#include <math.h>
#include <stdlib.h>
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

int xb_run_failed(xb_result *r, const rg_err *e) { return xb_result_fail(r, xb_status_of(e, RS_LAUNCH_ERROR), e); }

int xb_open_problem(const xb_problem *p, pl_problem *pl, hg_graph **g, rg_err *err)
{
    const char *task;
    if (pl_parse_task(p->task, &task, err)) return -1;
    *pl = (pl_problem){p->model, task, {p->dim_in, p->dim_out, p->heads}};
    ds_options dso = {.data_dir = p->data_dir};
    *g = ds_open(p->dataset, &dso, err);
    return *g ? 0 : -1;
}

int xb_reference(xv_reference **ref, const pl_problem *pl, const hg_graph *g, const ref_options *ro, rg_err *err)
{
    if (!g) return rg_errf(err, "reference before prepare");
    if (*ref) return 0;
    *ref = xv_reference_new_opts(pl, g, ro, err);
    if (*ref) return 0;
    rg_err_prefix(err, "CPU reference of %s on %s", pl->model, g->name);
    return -1;
}

void xb_add_metric(xb_result *r, const char *name, const char *unit, double value)
{
    if (r->nmetrics >= XB_MAX_METRICS || !isfinite(value)) return;
    xb_metric *m = &r->metrics[r->nmetrics++];
    m->kernel[0] = 0;
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->unit, sizeof m->unit, "%s", unit);
    m->value = value;
}

double xb_run_metric(const xb_result *r, const char *name)
{
    for (int i = 0; i < r->nmetrics; i++)
        if (!r->metrics[i].kernel[0] && !strcmp(r->metrics[i].name, name)) return r->metrics[i].value;
    return NAN;
}

int xb_judge_run(xv_reference *ref, const pl_problem *pl, const cg_config *cfg, const ir_program *ir,
                 const lw_program *lp, const cg_variant *v, const xv_source *src, const double **vals,
                 const xb_options *opt, xb_result *r)
{
    rg_err e;
    double tol = xv_variant_tolerance(opt->tolerance, pl, cfg);
    xv_verdict *vd = rg_xmalloc(sizeof *vd);
    int vrc = xv_validate(ref, ir, lp, v, src, vals, tol, vd, &e);
    r->validation_error = vd->error;
    /* an error before anything was compared, or a device error, is the run's failure; an
     * error of the comparison itself after some values were compared is a wrong answer */
    if (vrc && (vd->ncompared == 0 || e.code != RG_ERR_OTHER)) {
        xb_run_failed(r, &e);
    } else {
        snprintf(r->evidence, sizeof r->evidence, "%s", vd->evidence);
        if (!vd->ok) {
            r->status = RS_WRONG_ANSWER;
            r->err_class = RG_ERR_WRONG_ANSWER;
        }
    }
    int ok = vd->ok && !vrc;
    free(vd);
    return ok;
}
