/* A relation-partitioned layer over several GPUs of one host: each rank runs a variant's
 * kernels on its relations' subgraph, with NCCL collectives where codegen/collective.h says. */
#ifndef MG_MGPU_H
#define MG_MGPU_H

#include "codegen/collective.h"
#include "runtime/exec.h"

typedef struct mg_layer mg_layer;

/* Opens ranks 0..nranks-1 on devices 0..nranks-1, one NCCL communicator each (one process,
 * one thread per GPU while running). NVLink multicast stays off (NCCL_NVLS_ENABLE=0). Fails
 * with one line when the machine has no GPU or fewer than nranks. */
mg_layer *mg_open(int nranks, rg_err *err);
void mg_close(mg_layer *L);
int mg_nranks(const mg_layer *L);
const char *mg_device_name(const mg_layer *L);
int mg_sm(const mg_layer *L);

/* Sets up a variant (ir, v, cp must outlive the layer's use of it): rank k gets the subgraph
 * of the relations owner[] gives it (of g, which must outlive it), the kernels (compiled once,
 * loaded on every device), its buffers (mem_limit per GPU, 0 = none) and its inputs:
 * `values` as xv_input_values gives them for g, edge-indexed graph inputs re-indexed to the
 * rank's edges. On failure *oom tells an out-of-memory apart. */
int mg_setup(mg_layer *L, const ir_program *ir, const cg_variant *v, const col_plan *cp, const hg_graph *g,
             const int32_t *owner, const double *const *values, size_t mem_limit, int *oom, rg_err *err);
/* Frees what mg_setup made (the layer stays open for the next variant). */
void mg_teardown(mg_layer *L);

/* One run of the whole layer on every rank: zero-fills, kernels, collectives; waits. */
int mg_run(mg_layer *L, rg_err *err);

typedef struct mg_timing {
    int repeats;
    double wall_ms;          /* median: host time from every rank ready to every rank done */
    double span_ms;          /* median of the slowest rank's first zero-fill to last collective */
    double comm_ms;          /* median of the slowest rank's time inside collectives */
    double min_ms, max_ms;   /* of wall_ms */
    double comm_bytes;       /* bytes each rank sends into all-reduces per run */
    int ncollectives;
    double rank_peak_bytes[16];   /* per rank: buffers + graph structures (NCCL's own not counted) */
} mg_timing;

/* Warm-up runs, then `repeats` timed runs. */
int mg_time(mg_layer *L, int warmup, int repeats, mg_timing *out, rg_err *err);

/* The whole layer's value of a variable, as a run left it: from rank 0, or for a weight each
 * relation's slice from its owner (codegen/collective.h, COL_OWNED). Valid until the next
 * call; elements as stored (*elem bytes each). NULL with the reason for an edge variable. */
const void *mg_values(mg_layer *L, int var, int64_t *count, int *elem, rg_err *err);

#endif
