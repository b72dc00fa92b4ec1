/* Reverse-mode automatic differentiation of inter-operator IR programs: appends, in the
 * same IR, the backward statements from the loss to every input's and weight's gradient. */
#ifndef AD_AUTODIFF_H
#define AD_AUTODIFF_H

#include "codegen/ir.h"

/*
 * ad_append_backward(p):
 *  - needs a loss (p->loss, the training task) and a program without backward statements;
 *  - first puts the forward part in single-assignment form if it is not already: a
 *    variable overwritten with `=` gets a new version for every earlier value (named
 *    "<name>.<k>"; the last version keeps the original id, so p->output and p->loss stay);
 *    += into a variable after something read it is refused;
 *  - walks the forward statements backwards with a table from each op to its backward
 *    statements (LINEAR -> LINEAR with W^T into dx + WGRAD into dW; DOT/MUL -> MUL or DOT,
 *    or WGRAD for a weight-vector operand; EXP reuses its output; LEAKYRELU/RELU -> *_GRAD;
 *    DIV -> DIV and -g*out/b; CONCAT -> SLICEs; COPY/ADD/SUB -> copies; WEIGHT_MM -> a
 *    WEIGHT_MM with B^T and a WGRAD; NLL_LOSS -> NLL_GRAD). Each gradient statement keeps
 *    the domain and the accesses of its forward statement with the direction swapped
 *    (an aggregation e.dst["h"] += x reads dh at e.dst; a read of e.src["h"] adds into
 *    dh at e.src), so it runs over the same rows: gradients of COMPACT variables are
 *    COMPACT, added per edge from edge-wise gradients, or per unique row (as g = g + t)
 *    from compact ones;
 *  - gradient variables are "d_<name>", zero_init, with grad_of/grad set; every backward
 *    statement has backward = 1; the first one sets d_<loss> = 1;
 *  - only variables that depend on an input or a param get gradients, and backward
 *    statements whose results no input's or param's gradient needs are removed, with the
 *    gradient variables nothing touches (forward variable ids never change);
 *  - sets p->nforward to the number of forward statements.
 * Returns 0, or -1 with a message (no loss, an op without a derivative on the path...).
 */
int ad_append_backward(ir_program *p, rg_err *err);

#endif
