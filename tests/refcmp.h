/* Comparing a variant's program with the unoptimized one on the float64 CPU reference, for the
 * tests of the passes that rewrite a program without changing what it computes. */
#ifndef REFCMP_REFCMP_H
#define REFCMP_REFCMP_H

#include "datasets/hgraph.h"

/* Runs the original program of model/task (dims 8, 8, heads) and the program pl_build makes for
 * config on g, and fails the test unless the output, the loss and every parameter's and input's gradient agree
 * to a relative L2 of 1e-12 (and none of them is all zero). Returns how many gradients it compared. */
int refcmp_with_original(const char *model, const char *task, const char *config, const hg_graph *g, int heads);

#endif
