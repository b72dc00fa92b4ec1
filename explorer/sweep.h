/* The sweep driver (`explore --model M ...`): enumerates the design space, measures each variant
 * in a worker process, records every outcome, resumes, shows progress and reports the best. */
#ifndef XS_SWEEP_H
#define XS_SWEEP_H

#include "explorer/space.h"
#include "measure/worker.h"

/* Orders the variants still to be measured, before the budget keeps the first ones (the cost
 * model plugs in here). idx[0..n) are point numbers of the space (sp_config_at), in enumeration
 * order: permute them. */
typedef void (*xs_order_fn)(void *ctx, const xb_problem *p, const hg_stats *stats, const sp_space *space,
                            int *idx, int n);

/* Predictions (ms) of the cost model for n configs of the problem, for a search strategy's model
 * prior: pred_ms[i] of cfgs[i], NaN where there is none. */
typedef void (*xs_predict_fn)(void *ctx, const xb_problem *p, const cg_config *cfgs, int n, double *pred_ms);
/* The cost model's calibrated prior for bo (sr_problem.prior_sd's layout, CM_BO_NFEAT values) in sd:
 * 1, or 0 when the model has none for the problem (bo then keeps its fixed prior). */
typedef int (*xs_prior_fn)(void *ctx, const xb_problem *p, double *sd);

/* The GPU backend's constructor (xb_gpu_backend), passed in by the program's main so that the
 * library and the CPU tests link without it. */
typedef xb_backend *(*xs_gpu_backend_fn)(rg_err *err);

enum { XS_PROGRESS_AUTO, XS_PROGRESS_OFF, XS_PROGRESS_LINES, XS_PROGRESS_BAR };

/* What a sweep ranks its variants by (and a search minimizes): the sum of the kernels' median times
 * (the stored median_ms), or the median span of a run, first kernel start to last kernel end (the
 * stored metric span_ms). The span counts the gaps between launches and, under the config key launch,
 * what a CUDA graph saves of them and what kernels that overlap save; the sum cannot see either. A
 * variant without a stored span is left out of a span ranking (the report says how many). */
enum { XS_RANK_SUM, XS_RANK_SPAN };

/* Without --strategy, --budget or --exhaustive, a problem whose space has more valid points than
 * this is searched (XS_DEFAULT_SEARCH over XS_DEFAULT_SEARCH_PERCENT of them), not swept. */
#define XS_EXHAUSTIVE_MAX 2000
#define XS_DEFAULT_SEARCH "anneal"
#define XS_DEFAULT_SEARCH_PERCENT 2

typedef struct xs_options {
    const char *space;            /* "default", "full" or a space file */
    int budget;                   /* measure at most this many variants; <= 0: no limit */
    const char *db;               /* results database */
    const char *best_dir;         /* where best-config JSON files go: <dir>/<gpu>/<problem>.json */
    const char *backend;          /* NULL or "gpu": gpu_backend; "sim[:...]": the simulated backend */
    xs_gpu_backend_fn gpu_backend;
    xb_options measure;
    double timeout_s;             /* per variant; <= 0: none */
    double slow_factor;           /* variants slower than this x the best so far are timed once;
                                   * <= 0: every variant gets the full warm-up and repeats */
    int no_resume;                /* measure again what the store already has */
    const char *commit;           /* NULL: `git rev-parse HEAD`, "unknown" when that fails */
    const char *command_line;     /* recorded with the run */
    const char *group;            /* the run's group (explore compare's unit); NULL: its own */
    xs_order_fn order;            /* NULL: enumeration order */
    void *order_ctx;
    /* A search (explorer/search.h) in place of measuring in order: the strategy picks each next
     * variant from what it measured so far, within the budget (none: the valid points). */
    const char *strategy;         /* NULL: measure in order up to the budget (the default), or search
                                   * a space of over XS_EXHAUSTIVE_MAX valid points (below) */
    int exhaustive;               /* measure every valid point however large the space */
    xs_predict_fn predict;        /* the strategy's model prior (ctx: order_ctx); NULL: none */
    xs_prior_fn bo_prior;         /* bo's calibrated prior (ctx: order_ctx); NULL: none */
    uint64_t seed;                /* the strategy's seed */
    double time_limit_s;          /* wall seconds per problem, then the sweep or search stops; <= 0: none */
    int progress;                 /* XS_PROGRESS_*; AUTO: a bar on a terminal, lines otherwise */
    int rank;                     /* XS_RANK_SUM (the default) or XS_RANK_SPAN */
    int quiet;                    /* no report table */
    FILE *out;                    /* the report (NULL: stdout) */
} xs_options;

/* Defaults: space default, database results/results.db, best dir results/best, 3 warm-up
 * runs, 10 repeats, tolerance 0 (the backend's default for the task), timeout 60 s, slow
 * factor 4. */
void xs_options_default(xs_options *o);

typedef struct xs_summary {
    int points, valid, invalid;   /* the space */
    int skipped;                  /* already in the store (resume), or measured by a concurrent sweep */
    int concurrent;               /* of those, claimed by a concurrent sweep of the same store */
    int measured;                 /* variants this run sent to the backend */
    int recorded;                 /* rows this run wrote (invalid points included) */
    int count[RS_STATUS_COUNT];   /* rows this run wrote, per status */
    int restarts;                 /* worker restarts after a fault or a timeout */
    int interrupted;              /* stopped by SIGINT/SIGTERM */
    int partial;                  /* not every point of the space has an outcome: the best is of a part */
    int64_t run_id;
    /* the search (xs_options.strategy) or the time limit */
    char strategy[32];            /* "" without --strategy */
    int budget, evaluations;      /* a search's budget and units spent (read-back points included) */
    int read_back;                /* evaluations answered from the store (resume), not measured */
    const char *stopped_by;       /* "budget", "time limit", "space" (no point left), "interrupted",
                                   * "error"; NULL: the sweep ran to its end (or its budget) */
    double elapsed_s;             /* wall time of the problem */
    double search_best_ms;        /* best time the search found (as xs_options.rank ranks); NaN: none */
    char search_best_config[256];
    double best_ms;               /* best ok time of the problem in the store (this commit), as
                                   * xs_options.rank ranks; NaN: none */
    char best_config[256];
    char best_path[1024];         /* the best-config JSON written, "" if none */
} xs_summary;

/* A session: one store and one run (begun when the first problem's worker reports its device),
 * with SIGINT/SIGTERM caught until xs_close. One session per process at a time. */
typedef struct xs_session xs_session;
xs_session *xs_open(const xs_options *o, rg_err *err);
/* Sweeps one problem. 0 when the sweep went through (failed variants are results, not errors);
 * -1 when the problem could not be prepared, the backend broke or the store failed. */
int xs_problem(xs_session *s, const xb_problem *p, xs_summary *sum, rg_err *err);
int xs_interrupted(const xs_session *s);
/* Marks the run finished, interrupted or failed; restores the signal handlers; frees. */
int xs_close(xs_session *s, rg_err *err);
/* xs_open + xs_problem + xs_close. */
int xs_sweep(const xs_options *o, const xb_problem *p, xs_summary *sum, rg_err *err);

/* The variant's key in the store: its config and the problem (model, task, dims, heads). */
uint64_t xs_variant_hash(const cg_config *c, const xb_problem *p);
/* <best_dir>/<gpu>/<model>-<dataset>-<task>[-<in>x<out>[h<heads>]].json, names made safe for a
 * path; the dims suffix only when they differ from 64x64 with one head (caller frees). */
char *xs_best_path(const char *best_dir, const char *gpu_name, const xb_problem *p);

/* Where best-config JSON files go unless told otherwise. */
#define XS_DEFAULT_BEST_DIR "results/best"
/* NULL or a strategy of explorer/search.h, else an error naming them. */
int xs_check_strategy(const char *name, rg_err *err);
/* NULL or "gpu", or "sim[:KEY=VAL,...]" that the simulator accepts: a misspelt backend fails here,
 * before any worker starts. */
int xs_check_backend(const char *spec, rg_err *err);

#endif
