/* The path from a model name to a variant's programs: parse, apply the passes a config
 * selects, append the backward program for training, and lower to template instances. */
#ifndef PL_PIPELINE_H
#define PL_PIPELINE_H

#include "codegen/config.h"
#include "codegen/ir.h"
#include "codegen/lower.h"
#include "codegen/pass_reorder.h"
#include <stdio.h>
#include "datasets/hgraph.h"

typedef struct pl_problem {
    const char *model;      /* name in models/ or a .rgnn path */
    const char *task;       /* "infer" or "train" */
    ir_dims dims;
} pl_problem;

/* The unoptimized program (no passes), with its backward part for training: what the
 * CPU reference runs. */
ir_program *pl_reference_program(const pl_problem *p, rg_err *err);
/* pl_build's failure when cfg chooses a pass that does not apply to the model (e.g.
 * softmax=single for a model without edge_softmax), or a traversal mapping that does not apply
 * to its feature sizes (et_mapping_applies): the point is invalid for this problem. */
#define PL_INAPPLICABLE (-2)
/* Whether cfg's traversal mapping applies to the problem (et_mapping_applies) and is not a point
 * known to give wrong results: of the global schedule and of each overridden instance's (named in
 * the reason); pl_build's first check (PL_INAPPLICABLE when it fails). */
int pl_schedule_applies(const pl_problem *p, const cg_config *cfg, rg_err *err);
/* Whether the passes cfg chooses (softmax=single, recompute=on) apply to the problem's program: 0,
 * with err saying why, where pl_build would fail with PL_INAPPLICABLE for them; 1 otherwise (a
 * program that fails to load for another reason is left to pl_build to report). Only the pass keys
 * of cfg are read. Parses the model: callers ask it once per combination of those keys. */
int pl_passes_apply(const pl_problem *p, const cg_config *cfg, rg_err *err);
/* The program of one variant (passes chosen by cfg; reordering decided with the graph's
 * sizes, or nominal ones when g is NULL) and its lowering. On failure nothing is returned:
 * -1, or PL_INAPPLICABLE. `log` (may be NULL) receives the passes' reports. */
int pl_build(const pl_problem *p, const cg_config *cfg, const hg_graph *g, FILE *log, ir_program **ir_out,
             lw_program **lp_out, rg_err *err);
/* pl_build with the graph's counts given directly (NULL: the nominal ones), as a results store keeps
 * them: the passes read only these counts of the graph. */
int pl_build_stats(const pl_problem *p, const cg_config *cfg, const rr_stats *rs, FILE *log, ir_program **ir_out,
                   lw_program **lp_out, rg_err *err);
/* pl_build's verdict alone (0, -1 or PL_INAPPLICABLE, err saying why), what it built freed: whether
 * a point applies to a problem. */
int pl_build_verdict(const pl_problem *p, const cg_config *cfg, const hg_graph *g, rg_err *err);
int pl_is_train(const char *task);
/* Normalizes "infer"/"inference"/"train"/"training"; -1 for anything else. */
int pl_parse_task(const char *task, const char **canonical, rg_err *err);

#endif
