/* `explore fit` (fit the cost models on the results store, print the leave-one-dataset-out table)
 * and `explore pick` (rank a dataset's configs by the model; optionally measure the top K). */
#ifndef CM_CMCLI_H
#define CM_CMCLI_H

#include "explorer/sweep.h"

int cm_cli_fit(int argc, char **argv);
/* gpu_backend: xb_gpu_backend, passed in by main so that the library links without it. */
int cm_cli_pick(int argc, char **argv, xs_gpu_backend_fn gpu_backend);

#endif
