/* Tensor exchange with other implementations (`explore run --dump DIR` and `--weights DIR`):
 * the float64 reference's inputs, weights, outputs and gradients as .npy files and a manifest. */
#ifndef RD_REFDUMP_H
#define RD_REFDUMP_H

#include <stdint.h>
#include "codegen/ref.h"

/* What the manifest records about the problem besides the tensors. */
typedef struct rd_meta {
    const char *model, *task, *dataset;
    int dim_in, dim_out, heads;
} rd_meta;

/* The shape a variable of `rows` rows is dumped with: node/edge [rows, heads, dim], weight
 * matrix [types, heads, rows_dim, dim], weight vector [types, heads, dim], scalar () (ndim 0).
 * Returns ndim; shape needs 4 entries. */
int rd_shape(const ir_var *v, int64_t rows, int64_t *shape);

/* Writes into dir (created if needed), after the program ran: every input, graph input,
 * label (int64), weight, the output and the loss as DIR/<variable>.npy (float64); every
 * gradient of an input or weight as DIR/d_<variable>.npy (its IR name) and each updated
 * weight w - EL_SGD_LR * dw as DIR/<variable>.sgd.npy; then DIR/manifest.json naming each
 * file's variable, shape, dtype and role. */
int rd_dump(ref_exec *x, const ir_program *p, const hg_graph *g, const rd_meta *m, const char *dir, rg_err *err);

/* Replaces the seeded inputs, weights and labels of x by DIR/<variable>.npy (any of
 * '<f4', '<f8', '<i4', '<i8'), before a run. Every one must be there with the shape rd_shape
 * gives; labels must be class ids of the loss input. Errors name the file. */
int rd_load(ref_exec *x, const ir_program *p, const char *dir, rg_err *err);

#endif
