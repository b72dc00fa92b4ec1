/* The measurement backend the sweep driver talks to: prepare a problem (model, dataset,
 * task, dims), then measure one config at a time. Real (GPU) and simulated backends. */
#ifndef XB_BACKEND_H
#define XB_BACKEND_H

#include "codegen/config.h"
#include "datasets/hgraph.h"
#include "measure/validate.h"
#include "results/store.h"

typedef struct xb_problem {
    char model[256];     /* name in models/ or a .rgnn path */
    char dataset[256];   /* registry name, synth:..., or a folder */
    char task[16];       /* "infer" or "train" */
    int dim_in, dim_out, heads;
    const char *data_dir;   /* NULL: default */
    size_t mem_limit;       /* 0: none */
    double input_scale;     /* the reference's input features from U(-s, s) (ref_options; 0: 1) */
} xb_problem;

typedef struct xb_options {
    int warmup, repeats;    /* untimed runs first (< 0: 3; 0: none, as --warmup 0 asks), timed runs (<= 0: 10) */
    int metrics;            /* collect CUPTI counters */
    int compile_threads;    /* NVRTC threads */
    double tolerance;       /* relative L2 error allowed vs the float64 reference */
    int validate_only;      /* stop after validation (correctness sweeps): no timing */
    int flush_l2;           /* write twice the L2 before each timed run (stored as metric flush_l2) */
    double slow_ms;         /* > 0: a variant whose validation run took longer is timed once,
                             * without warm-up (the sweep sets it from the best time so far:
                             * such a variant cannot win, and on large graphs the slowest
                             * variants took most of a sweep's time) */
} xb_options;

#define XB_MAX_KERNELS 64
#define XB_MAX_METRICS 512

typedef struct xb_kernel {
    char name[64];
    char category[16];      /* "gemm", "traversal", "other" */
    int backward;
    double median_ns, spread_ns;
} xb_kernel;

typedef struct xb_metric {
    char kernel[64], name[64], unit[16];
    double value;
} xb_metric;

typedef struct xb_result {
    rs_status status;
    rg_err_class err_class; /* the class of the error behind a failed status (RG_ERR_OTHER: none) */
    int cuda_error;         /* the cudaError_t behind it, 0 when none */
    char evidence[4096];    /* compile log, error, or the validation report */
    double validation_error;
    double median_ms, min_ms, max_ms, stddev_ms;
    int repeats;
    double gemm_ms, traversal_ms, other_ms, fwd_ms, bwd_ms;
    int64_t peak_mem_bytes;
    double compile_s;
    /* wall seconds of the other phases of one measurement (where a sweep's time goes) */
    double build_s, setup_s, validate_s, time_s;
    int nkernels;
    xb_kernel kernels[XB_MAX_KERNELS];
    int nmetrics;
    xb_metric metrics[XB_MAX_METRICS];
    /* analytic counts from the IR, for cost models and the roofline floor */
    double flops, bytes, atomics;
    int launches;
} xb_result;

/* ---- CPU-side helpers of every backend (measure/backend.c) ---- */

/* An empty result: status ok, every time NaN, peak memory -1, nothing else set. */
void xb_result_init(xb_result *r);
/* The stored status of a failure of this class: a fault, an OOM, a compile error... by the
 * error's code, never its text; `otherwise` for launch errors and unclassified ones. */
rs_status xb_status_of(const rg_err *e, rs_status otherwise);
/* Records a failed variant: status st, the error's class and CUDA error, its message as the
 * evidence. Returns 0 (the backend itself is fine). */
int xb_result_fail(xb_result *r, rs_status st, const rg_err *e);
/* A failure while loading, preparing, running or timing a variant: a sticky fault (the CUDA
 * context is unusable) or an OOM by the error's class, any other a launch error. Returns 0. */
int xb_run_failed(xb_result *r, const rg_err *e);

/* ---- shared by the GPU backends (one GPU, several) ---- */

/* Opens p's graph (*g, caller frees) and fills pl, whose strings point into *p (which must
 * outlive it): model, canonical task, dims. */
int xb_open_problem(const xb_problem *p, pl_problem *pl, hg_graph **g, rg_err *err);
/* Builds *ref, the float64 reference of the opened problem (and its near-kink alternatives)
 * once: nothing when *ref is set already. ro (NULL: defaults) gives a relabelled graph's maps. */
int xb_reference(xv_reference **ref, const pl_problem *pl, const hg_graph *g, const ref_options *ro, rg_err *err);
/* Adds a measurement-level metric (no kernel); NaN and a full table are skipped. */
void xb_add_metric(xb_result *r, const char *name, const char *unit, double value);
/* The measurement-level metric of that name (no kernel), NaN when r has none. */
double xb_run_metric(const xb_result *r, const char *name);
/* Validates a finished run of variant v (xv_validate at the tolerance of cfg's precision, or
 * opt's) and records the verdict in r: its error, the evidence, wrong_answer, or the failure
 * that kept values from being read (an error after some values were compared is a wrong
 * answer). 1 when the run matched the reference. */
int xb_judge_run(xv_reference *ref, const pl_problem *pl, const cg_config *cfg, const ir_program *ir,
                 const lw_program *lp, const cg_variant *v, const xv_source *src, const double **vals,
                 const xb_options *opt, xb_result *r);

typedef struct xb_backend xb_backend;
struct xb_backend {
    const char *name;
    void *ctx;
    /* Loads the dataset; the device description for runs. A failure here stops the sweep
     * of this problem (not the whole sweep). */
    int (*prepare)(xb_backend *b, const xb_problem *p, hg_stats *stats, rg_err *err);
    /* Optional: builds what measuring needs that takes long (the CPU reference answer).
     * measure does it on first use when nobody called this; the sweep's worker calls it
     * only once a variant is to be measured, so a resumed sweep that finds a problem
     * complete never pays for it. A failure stops the sweep of this problem. */
    int (*prepare_reference)(xb_backend *b, rg_err *err);
    /* Measures one config; failures of the variant go into r->status, never a crash of
     * the driver. Returns -1 only when the backend itself is broken. */
    int (*measure)(xb_backend *b, const cg_config *cfg, const xb_options *opt, xb_result *r, rg_err *err);
    /* Device description for rs_begin_run. */
    void (*device)(xb_backend *b, char *gpu_name, size_t n, int *sm, char *driver, char *cuda, char *cupti, size_t vn);
    void (*close)(xb_backend *b);
};

/* The GPU backend (measure/gpu_backend.c): NVRTC + CUPTI on the current device. */
xb_backend *xb_gpu_backend(rg_err *err);

/* The simulated backend (measure/simbackend.c), for tests and --backend sim: times from a
 * model of the configs, failures injected by spec. */
xb_backend *xb_sim_backend(const char *spec, rg_err *err);
/* Tells it which variant comes next (its injected failures may be keyed by index). */
void xb_sim_set_index(xb_backend *b, int index);
const char *xb_sim_help(void);

#endif
