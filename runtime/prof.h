/* Kernel timing: CUPTI activity records (CONCURRENT_KERNEL, MEMSET, MEMCPY) of the work that
 * runs between kprof_start and kprof_stop, a cudaEvent fallback, per-kernel medians, spans. */
#ifndef KPROF_PROF_H
#define KPROF_PROF_H

#include <stddef.h>
#include <stdint.h>
#include "common/util.h"

typedef enum kprof_method {
    KPROF_AUTO = 0,   /* CUPTI, else cudaEvent (saying so on stderr) */
    KPROF_CUPTI,      /* CUPTI or an error */
    KPROF_EVENTS      /* cudaEvent pairs around each krt_launch (sees no cuBLAS kernels) */
} kprof_method;

typedef enum kprof_kind {
    KPROF_KERNEL = 0,
    KPROF_MEMSET,                /* "[memset]" */
    KPROF_MEMCPY,                /* "[memcpy]" */
    KPROF_RUN                    /* "[run]": a kprof_run_begin/end pair (cudaEvent fallback only) */
} kprof_kind;

typedef struct kprof_record {
    char *name;
    kprof_kind kind;
    uint64_t start_ns, end_ns;   /* only differences are meaningful */
    int grid[3], block[3];
    int registers;               /* per thread; CUPTI gives the allocation (may exceed numRegs) */
    int static_smem, dynamic_smem;
    uint32_t stream_id;          /* 0 under the cudaEvent fallback */
} kprof_record;

typedef struct kprof_records {
    kprof_record *v;             /* sorted by start time */
    size_t n;
    kprof_method method;         /* KPROF_CUPTI or KPROF_EVENTS: what actually measured */
    uint64_t dropped;            /* records CUPTI lost (buffers full) */
} kprof_records;

/* Starts collecting (KPROF_AUTO). Fails with "no CUDA device: ..." without a device, and
 * when a collection is already running. */
int kprof_start(rg_err *err);
int kprof_start_with(kprof_method method, rg_err *err);
/* Waits for the GPU, flushes and returns the records of the kernels that ran. */
int kprof_stop(kprof_records *out, rg_err *err);
void kprof_records_free(kprof_records *r);
/* Starts and stops one empty collection, once per process and only when none is running, so that the
 * profiler is attached before the first CUDA graph is built (exec.c calls it before capturing). A
 * `explore run` whose graph was built before the profiler was ever enabled saw one kernel per run more
 * than it launched (H100, session 31; sweeps whose workers had timed a stream variant first saw none).
 * Failures are ignored: the collection that times the graph reports them. */
void kprof_prime(void);
const char *kprof_method_name(kprof_method m);
/* Why CUPTI could not be used by the last KPROF_AUTO start that fell back, or NULL. */
const char *kprof_fallback_reason(void);

/* Per-kernel-name statistics over the records (durations in ns). */
typedef struct kprof_summary {
    char *name;
    size_t calls;
    double median_ns, mean_ns, min_ns, max_ns, total_ns;
    /* With `repeats` runs of the same work: the median over runs of this kernel's summed
     * time per run (its calls split into `repeats` consecutive groups); NaN when calls is
     * not a multiple of repeats or repeats <= 0. */
    double median_per_repeat_ns;
    uint64_t first_start_ns;
} kprof_summary;

/* One entry per kernel name, in order of first launch; *count receives the number. */
kprof_summary *kprof_summarize(const kprof_records *r, int repeats, size_t *count);
void kprof_summary_free(kprof_summary *s, size_t count);
/* Time from the first start to the last end (0 for no records). */
double kprof_span_ns(const kprof_records *r);
/* The number of records of one kind. */
size_t kprof_count(const kprof_records *r, kprof_kind kind);
/* Frees and removes every record of another kind (order kept). */
void kprof_keep(kprof_records *r, kprof_kind kind);

/* Bounds of one timed run (a repeat). Under CUPTI they do nothing (the records carry the
 * memsets and copies); under the cudaEvent fallback, which sees only krt_launch kernels, they
 * record an event pair on stream 0 that becomes a KPROF_RUN record. */
void kprof_run_begin(void);
void kprof_run_end(void);
/* The span of each of `repeats` runs whose kernels are `per_run` consecutive KPROF_KERNEL
 * records: the KPROF_RUN records when there are `repeats` of them, else from the earliest
 * memset, copy or kernel after the previous run's last kernel to the run's last kernel end.
 * Returns 0, or -1 when the records do not split into the runs. */
int kprof_run_spans(const kprof_records *r, int per_run, int repeats, double *span_ns);

/* Sets buf's bytes on a stream of its own and waits for it: its records are left out of the
 * collection, so a cache flush between repeats stays outside the timed runs. */
int kprof_untimed_memset(void *buf, size_t bytes, rg_err *err);

#endif
