/* Baseline RGCN, RGAT and HGT inference layers composed the way frameworks compose them:
 * one kernel per step, every typed linear through cuBLAS in one of three styles. */
#ifndef BL_CUBLAS_LAYERS_H
#define BL_CUBLAS_LAYERS_H

#include "codegen/ir.h"
#include "datasets/hgraph.h"
#include "measure/backend.h"

/*
 * Styles of the typed linear Y[i] = X[i] * W[type(i)] (rows grouped by type):
 *   seg      gather the rows into a contiguous buffer, one cublasSgemm per type (per-head
 *            weights: one strided-batched call over the heads of a type), scatter after:
 *            DGL's segment_mm.
 *   bmm      replicate W per row into a rows x K x N tensor (a copy kernel) and run one
 *            cublasSgemmStridedBatched over the rows: PyG's FastRGCNConv. Its memory cost
 *            goes through the planner, so a memory limit turns it into an OOM result.
 *   grouped  one cublasSgemmGroupedBatched over the types (cuBLAS 12.5+): pyg-lib style.
 * Everything else (gather, dot products, leakyrelu, exp, edge-softmax sum and divide,
 * aggregation) is a separate simple kernel (baselines/blkernels.h).
 *
 * Inputs and weights are the CPU reference's seeded values, fetched by variable name
 * (feature, W0, W, norm / W, w_s, w_t / WK, WQ, WV, Wa, Wm, mu), and the output is checked
 * against the reference's float64 output. Inference only: the cuBLAS baselines have no
 * backward pass (PyG's layers, measured by baselines/pyg_bench.py, cover training).
 */

typedef enum bl_style { BL_SEG, BL_BMM, BL_GROUPED, BL_STYLE_COUNT } bl_style;

const char *bl_style_name(bl_style s);          /* "seg", "bmm", "grouped" */
int bl_style_parse(const char *name, bl_style *out, rg_err *err);
/* Results-store system name of a style: "cublas-seg", "cublas-bmm", "cublas-grouped". */
const char *bl_system_name(bl_style s);
/* Layer column of a model's baseline: "RGCN", "RGAT", "HGT"; NULL for other models. */
const char *bl_layer_name(const char *model);

typedef struct bl_options {
    int warmup, repeats;     /* 0: defaults 3 and 10; a negative warmup: none */
    size_t mem_limit;        /* bytes the layer's tensors may occupy at once; 0: none */
    double tolerance;        /* relative L2 error allowed; 0: 1e-5 */
    int validate_only;       /* no timing */
} bl_options;

/* A model on a graph with its reference answer, shared by the measurements of all styles. */
typedef struct bl_problem bl_problem;

/* Loads models/<model>.rgnn for inference, builds and runs the CPU reference on g.
 * model: rgcn, rgat or hgt. g must outlive the problem. */
bl_problem *bl_problem_new(const char *model, const hg_graph *g, const ir_dims *dims, rg_err *err);
void bl_problem_free(bl_problem *p);

/* Runs one style on the current CUDA device: allocate (planner), upload, run, validate,
 * then time (CUPTI, sum of kernel times per run, median over repeats after warm-up).
 * Failures of the layer go into out->status (oom, wrong_answer, launch_error...) with the
 * evidence; -1 only for errors of the harness itself (no device, kernels that do not compile). */
int bl_run(bl_problem *p, bl_style style, const bl_options *opt, xb_result *out, rg_err *err);

/* Backend-like entry: problem + run in one call (style by name). */
int bl_measure(const char *model, const char *style, const hg_graph *g, const ir_dims *dims,
               const bl_options *opt, xb_result *out, rg_err *err);

#endif
