/* The measurement backend of layers over several GPUs of one host (relation-partitioned,
 * runtime/mgpu.h): the same validation against the float64 reference, timed as a whole. */
#ifndef XMG_MGPU_BACKEND_H
#define XMG_MGPU_BACKEND_H

#include "measure/backend.h"

/* A backend whose variants run over `nranks` GPUs (devices 0..nranks-1); the config key
 * `part` says how relations are split. Its device name says "xN" and the split, so every
 * stored problem carries its number of GPUs. nranks 1 runs the same code path on one GPU. */
xb_backend *xb_mgpu_backend(int nranks, rg_err *err);

#endif
