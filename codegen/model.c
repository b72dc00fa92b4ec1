/* Loading a model program by name or path, with the chosen inter-operator passes, the
 * training loss and (when available) the backward program, in one call. */
#include "codegen/model.h"
#include "codegen/modeldir.h"
#include "codegen/parse.h"
#include "codegen/pass_compact.h"
#include "codegen/pass_dinit.h"
#include "codegen/pass_recompute.h"
#include "codegen/pass_softmax.h"

#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include("codegen/autodiff.h")
#include "codegen/autodiff.h"
#define MODEL_HAVE_AUTODIFF 1
#endif
#endif

int model_has_autodiff(void)
{
#ifdef MODEL_HAVE_AUTODIFF
    return 1;
#else
    return 0;
#endif
}

static int add_var(ir_program *p, const char *name, ir_var_kind kind, ir_layout layout, ir_role role, int dim)
{
    ir_var v;
    memset(&v, 0, sizeof v);
    snprintf(v.name, sizeof v.name, "%s", name);
    for (int k = 2; ir_find_var(p, v.name) >= 0; k++) snprintf(v.name, sizeof v.name, "%s_%d", name, k);
    v.kind = kind;
    v.layout = layout;
    v.role = role;
    v.heads = 1;
    v.dim = dim;
    v.grad_of = v.grad = -1;
    return ir_add_var(p, &v);
}

int model_add_loss(ir_program *p, rg_err *err)
{
    if (p->loss >= 0) return rg_errf(err, "%s: the program already has a loss", p->name);
    if (p->nforward != p->nstmts) return rg_errf(err, "%s: the loss must be added before the backward part", p->name);
    p->label = add_var(p, "label", IR_VAR_NODE, IR_LAYOUT_NODE, IR_ROLE_LABEL, 1);
    p->loss = add_var(p, "loss", IR_VAR_SCALAR, IR_LAYOUT_SCALAR, IR_ROLE_LOSS, 1);
    ir_stmt s;
    memset(&s, 0, sizeof s);
    s.op = IR_OP_NLL_LOSS;
    s.dom = IR_DOM_GLOBAL;
    s.out = (ir_operand){p->loss, IR_ACC_ALL, 0};
    s.nin = 2;
    s.in[0] = (ir_operand){p->output, IR_ACC_ALL, 0};
    s.in[1] = (ir_operand){p->label, IR_ACC_ALL, 0};
    ir_add_stmt(p, &s);
    return 0;
}

/* cdot=edge: refused where compaction takes no dot product (it would duplicate cdot=table). */
static int compact(ir_program *p, const model_options *opt, rg_err *err)
{
    int kept = 0;
    if (pc_compact_opts(p, !opt->dots_per_edge, &kept, opt->log, err) < 0) return -1;
    if (!opt->dots_per_edge || kept) return 0;
    if (opt->inapplicable) *opt->inapplicable = 1;
    return rg_errf(err, "cdot=edge leaves per edge the dot products compaction would put in a table of their own; %s has "
                        "none, so it would duplicate cdot=table", p->name);
}

/* A config that asks for the rewrite where it cannot apply is refused, so that it is not
 * measured as a copy of the two-pass program. */
static int single_pass_softmax(ir_program *p, const model_options *opt, rg_err *err)
{
    char why[160];
    if (psm_single_pass(p, opt->log, why, sizeof why) > 0) return 0;
    if (opt->inapplicable) *opt->inapplicable = 1;
    return rg_errf(err, "softmax=single does not apply to %s: %s", p->name, why);
}

/* recompute=on: refused in inference (nothing is stored for a backward pass) and where the backward
 * pass reads nothing cheap to compute again, so that it is not measured as a copy of recompute=off. */
static int recompute_edge_values(ir_program *p, const model_options *opt, rg_err *err)
{
    char why[200];
    if (!strcmp(opt->task, "train") && prc_recompute_edge_values(p, opt->log, why, sizeof why) > 0) return 0;
    if (!strcmp(opt->task, "infer"))
        snprintf(why, sizeof why, "%s", PRC_INFERENCE_WHY);
    if (opt->inapplicable) *opt->inapplicable = 1;
    return rg_errf(err, "recompute=on does not apply to %s %s: %s", p->name, opt->task, why);
}

/* dinit=gemm: refused where no gradient can be started by its node-wide linear (inference has none), so that
 * it is not measured as a copy of dinit=zero. */
static int assign_gradients_first(ir_program *p, const model_options *opt, rg_err *err)
{
    char why[200] = "inference has no backward program";
    if (!strcmp(opt->task, "train") && pdi_assign_first(p, opt->log, why, sizeof why) > 0) return 0;
    if (opt->inapplicable) *opt->inapplicable = 1;
    return rg_errf(err, "dinit=gemm does not apply to %s %s: %s", p->name, opt->task, why);
}

ir_program *model_load_opts(const char *name_or_path, const ir_dims *dims, const model_options *opt, rg_err *err)
{
    char *path = md_find(name_or_path);
    if (!path) {
        char *list = md_list();
        if (md_is_path(name_or_path)) rg_errf(err, "model file '%s' does not exist", name_or_path);
        else rg_errf(err, "unknown model '%s' (models: %s; or give the path of a .rgnn file)", name_or_path, list);
        free(list);
        return NULL;
    }
    const char *task = opt && opt->task ? opt->task : "infer";
    if (strcmp(task, "infer") && strcmp(task, "train")) {
        free(path);
        rg_errf(err, "unknown task '%s' (infer or train)", task);
        return NULL;
    }
    ir_program *p = ps_load_file(path, dims, err);
    free(path);
    if (!p) return NULL;
    if (opt && opt->reorder) {
        rr_options ro = {.stats = opt->stats, .assume_compact = opt->compact, .log = opt->log};
        if (rr_reorder(p, &ro, err) < 0) goto fail;
    }
    if (opt && opt->compact && compact(p, opt, err) < 0) goto fail;
    if (opt && opt->softmax_single && single_pass_softmax(p, opt, err) < 0) goto fail;
    if (!strcmp(task, "train")) {
        if (model_add_loss(p, err) < 0) goto fail;
#ifdef MODEL_HAVE_AUTODIFF
        if (ad_append_backward(p, err) < 0) goto fail;
#endif
    }
    if (opt && opt->recompute && recompute_edge_values(p, opt, err) < 0) goto fail;
    if (opt && opt->dinit && assign_gradients_first(p, opt, err) < 0) goto fail;
    if (ir_verify(p, err) < 0) goto fail;
    return p;
fail:
    ir_free(p);
    return NULL;
}

ir_program *model_load(const char *name_or_path, const ir_dims *dims, const char *task, rg_err *err)
{
    model_options opt = {.task = task};
    return model_load_opts(name_or_path, dims, &opt, err);
}
