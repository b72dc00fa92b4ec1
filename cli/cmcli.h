/* `explore fit` (fit the cost models on the results store, print the leave-one-dataset-out and
 * leave-one-size-out tables)
 * and `explore pick` (rank a dataset's configs by the model; optionally measure the top K). */
#ifndef CM_CMCLI_H
#define CM_CMCLI_H

#include "explorer/sweep.h"

int cm_cli_fit(int argc, char **argv);
/* The leave-one-size-out table of `explore fit --db DB` (per held-out size, the model's and the
 * static list's picks over the oracle, with how many oracles are exhaustive) as markdown, for
 * docs/perf-tables.md; the text depends only on the store and the path as given. */
int cm_cli_loso_markdown(const char *db, FILE *out, rg_err *err);
/* gpu_backend: xb_gpu_backend, passed in by main so that the library links without it. */
int cm_cli_pick(int argc, char **argv, xs_gpu_backend_fn gpu_backend);

#endif
