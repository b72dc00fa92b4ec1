/* Loading a model program by name (models/NAME.rgnn) or path, for given dims and task,
 * with the inter-operator passes chosen by switches, in one call. */
#ifndef MODEL_H
#define MODEL_H

#include <stdio.h>
#include "codegen/ir.h"
#include "codegen/pass_reorder.h"

typedef struct model_options {
    const char *task;       /* "infer" (default) or "train" */
    int reorder, compact;   /* inter-operator passes */
    int dots_per_edge;      /* compaction leaves dot products per edge (cdot=edge) */
    const rr_stats *stats;  /* for reordering decisions; NULL: nominal counts */
    FILE *log;              /* pass reports (reorder counts, compacted variables); NULL: quiet */
    int softmax_single;     /* pass_softmax: edge_softmax's division deferred to the nodes */
    int recompute;          /* pass_recompute (training): per-edge forward values computed again backward */
    int dinit;              /* pass_dinit (training): a summed gradient started by its node-wide linear */
    int *inapplicable;      /* may be NULL; set to 1 when a chosen pass finds nothing to rewrite
                               (the load then fails, saying why) */
} model_options;

/* Parses the model, runs the chosen passes, and for "train" appends the loss and (when
 * codegen/autodiff.h is part of the build) the backward program. */
ir_program *model_load_opts(const char *name_or_path, const ir_dims *dims, const model_options *opt, rg_err *err);
/* model_load_opts without passes. */
ir_program *model_load(const char *name_or_path, const ir_dims *dims, const char *task, rg_err *err);

/* Appends the training loss: NLL of log-softmax(output) against fixed labels. */
int model_add_loss(ir_program *p, rg_err *err);
/* 1 when this build can generate the backward program. */
int model_has_autodiff(void);

#endif
