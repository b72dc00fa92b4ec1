/* Hardware counters per kernel launch: CUPTI Profiler Host API (metric planning, config
 * images, evaluation) and Range Profiler API (auto range: one range per kernel launch). */
#ifndef KMET_METRICS_H
#define KMET_METRICS_H

#include <stddef.h>
#include "common/util.h"

/* DRAM bytes read/written, SM throughput %, warp instructions, SM cycles, IPC, achieved
 * occupancy, L2 hit rate, DRAM throughput %. */
extern const char *const kmet_default_metrics[];
extern const int kmet_default_count;

/* kmet_begin's pass limit. The default set needs 8 passes on GH100 (sm__throughput alone
 * does; the others ride along in those passes); with max_passes 1 it is cut to the
 * single-pass subset and the rest is reported as skipped. */
#define KMET_DEFAULT_MAX_PASSES 8
#define KMET_DEFAULT_MAX_LAUNCHES 512

typedef enum kmet_replay {
    KMET_REPLAY_USER = 0,   /* run() is called once per pass: it must repeat the same launches */
    KMET_REPLAY_KERNEL      /* run() once; CUPTI replays each kernel, saving/restoring memory */
} kmet_replay;

typedef struct kmet_options {
    int max_passes;         /* 0: KMET_DEFAULT_MAX_PASSES; metrics beyond it are skipped */
    int max_launches;       /* ranges (kernel launches) one pass can hold; 0: default */
    kmet_replay replay;
} kmet_options;

/* A requested metric that is not collected, and why (one line). */
typedef struct kmet_skip {
    char *metric;
    char *reason;
} kmet_skip;

/* Which metrics one configuration collects on a chip. */
typedef struct kmet_plan {
    char chip[64];          /* e.g. "GH100" */
    int nmetrics;
    char **metrics;         /* collected, in request order */
    char **units;           /* CUPTI's dimension, shortened ("byte", "%", "inst/gpc_cycle") */
    int *additive;          /* 1: summed over launches of a kernel; 0: averaged */
    int passes;             /* passes the whole set needs (0 when nothing is collected) */
    int nskipped;
    kmet_skip *skipped;     /* unsupported, not schedulable, or over the pass limit */
} kmet_plan;

/* Plans `metrics` for `chip` on the host only (no GPU needed; counter availability is
 * assumed complete). Fails only when the chip is unknown to CUPTI. */
int kmet_plan_for_chip(const char *chip, const char *const *metrics, int n, int max_passes,
                       kmet_plan *out, rg_err *err);
void kmet_plan_free(kmet_plan *p);

typedef struct kmet_row {
    char *kernel;           /* symbol name as the driver saw it (mangled for C++ kernels) */
    int launch;             /* index in the launch sequence; -1 in per-kernel rows */
    int calls;              /* launches folded into this row (1 in per-launch rows) */
    const char *metric;     /* points into the result's plan */
    const char *unit;
    double value;
} kmet_row;

typedef struct kmet_result {
    kmet_plan plan;         /* collected metrics, units, passes, skipped ones and why */
    kmet_row *launch_rows;  /* one per (launch, metric), in launch order */
    size_t nlaunch_rows;
    kmet_row *kernel_rows;  /* one per (kernel name, metric), in order of first launch */
    size_t nkernel_rows;
    size_t launches;        /* kernel launches of one run of the sequence */
    size_t dropped_ranges;  /* launches beyond max_launches, not measured */
    int runs;               /* times run() was called */
    char note[512];         /* warnings ("" when none): dropped ranges, names unavailable */
} kmet_result;

enum { KMET_DENIED = -2 };  /* counters not permitted (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) */

/* Launches the whole sequence once on the current device; returns 0 or -1 with err. */
typedef int (*kmet_run_fn)(void *ctx, rg_err *err);

/* Starts a collection on the current device (krt_init first). Fails with "no CUDA device:
 * ..." without a device, KMET_DENIED when counters are not permitted, -1 otherwise.
 * Metrics that cannot be collected are skipped (see kmet_result.plan.skipped), never an
 * error. One collection at a time; not while runtime/prof.c collects. */
int kmet_begin(const char *const *metrics, int n, rg_err *err);
int kmet_begin_with(const char *const *metrics, int n, const kmet_options *opt, rg_err *err);
/* Calls run() as many times as the replay mode needs (passes, or once). A failure (of
 * run, a fault, CUPTI) ends the collection: kmet_end is then not needed. */
int kmet_run(kmet_run_fn run, void *ctx, rg_err *err);
/* Decodes and evaluates the counters, ends the collection. out is valid after success. */
int kmet_end(kmet_result *out, rg_err *err);
void kmet_free(kmet_result *r);

/* begin + run + end. */
int kmet_collect(const char *const *metrics, int n, const kmet_options *opt, kmet_run_fn run,
                 void *ctx, kmet_result *out, rg_err *err);

/* The per-kernel row of (kernel, metric), or NULL. */
const kmet_row *kmet_find(const kmet_result *r, const char *kernel, const char *metric);

#endif
