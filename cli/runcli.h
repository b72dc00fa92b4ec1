/* `explore run` (one variant: validate against the CPU reference, then time it) and
 * `explore gen` (write the generated CUDA sources and launch plan of variants). */
#ifndef XR_RUNCLI_H
#define XR_RUNCLI_H

#include "common/util.h"

int xr_run_main(int argc, char **argv);
int xr_gen_main(int argc, char **argv);

#endif
