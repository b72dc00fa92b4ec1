/* The path from a model name to a variant's programs: parse, apply the passes a config
 * selects, append the backward program for training, and lower to template instances. */
#include "codegen/pipeline.h"
#include "codegen/emit_trav.h"
#include "codegen/model.h"

#include <string.h>

int pl_parse_task(const char *task, const char **canonical, rg_err *err)
{
    if (!task || !strcmp(task, "infer") || !strcmp(task, "inference")) *canonical = "infer";
    else if (!strcmp(task, "train") || !strcmp(task, "training")) *canonical = "train";
    else return rg_errf(err, "unknown task '%s' (expected infer or train)", task);
    return 0;
}

int pl_is_train(const char *task) { return task && !strncmp(task, "train", 5); }

ir_program *pl_reference_program(const pl_problem *p, rg_err *err)
{
    return model_load(p->model, &p->dims, p->task, err);
}

int pl_build(const pl_problem *p, const cg_config *cfg, const hg_graph *g, FILE *log, ir_program **ir_out,
             lw_program **lp_out, rg_err *err)
{
    *ir_out = NULL;
    *lp_out = NULL;
    if (!et_mapping_applies(cfg, &p->dims, err)) return PL_INAPPLICABLE;
    rr_stats rs;
    int inapplicable = 0;
    if (g) rr_stats_from_graph(&rs, g, g->name);
    else rr_stats_nominal(&rs);
    model_options mo = {
        .task = p->task,
        .reorder = cfg->reorder,
        .compact = cfg->compact != CFG_COMPACT_OFF,
        .stats = &rs,
        .log = log,
        .softmax_single = cfg->softmax == CFG_SOFTMAX_SINGLE,
        .inapplicable = &inapplicable,
    };
    ir_program *ir = model_load_opts(p->model, &p->dims, &mo, err);
    if (!ir) return inapplicable ? PL_INAPPLICABLE : -1;
    lw_program *lp = lw_lower(ir, err);
    if (!lp) {
        ir_free(ir);
        return -1;
    }
    *ir_out = ir;
    *lp_out = lp;
    return 0;
}
