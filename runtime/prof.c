/* Kernel timing through the CUPTI Activity API (kernel, memset and memcpy records), with a
 * cudaEvent fallback around krt_launch when CUPTI cannot start, and aggregation (GSL). */
#include "runtime/prof.h"
#include "runtime/rt.h"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Collected records (shared with CUPTI's buffer thread) ---------------------------- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int active = 0;               /* between kprof_start and kprof_stop */
static kprof_method active_method;
static kprof_record *recs = NULL;
static size_t nrecs = 0, caprecs = 0;
static uint64_t dropped = 0;
static char fallback_reason[sizeof(((rg_err *)0)->msg)];
/* CUPTI's id of kprof_untimed_memset's stream; its records are dropped */
static int have_untimed_stream = 0;
static uint32_t untimed_stream_id = 0;

/* Caller holds `lock`. */
static kprof_record *append_record(void)
{
    if (nrecs == caprecs) {
        caprecs = caprecs ? 2 * caprecs : 256;
        recs = rg_xrealloc(recs, caprecs * sizeof *recs);
    }
    kprof_record *r = &recs[nrecs++];
    memset(r, 0, sizeof *r);
    return r;
}

static void discard_records(void)
{
    for (size_t i = 0; i < nrecs; i++) free(recs[i].name);
    nrecs = 0;
    dropped = 0;
}

const char *kprof_method_name(kprof_method m)
{
    switch (m) {
    case KPROF_CUPTI: return "cupti";
    case KPROF_EVENTS: return "cudaEvent";
    default: return "auto";
    }
}

const char *kprof_fallback_reason(void)
{
    return fallback_reason[0] ? fallback_reason : NULL;
}

/* ---- CUPTI ------------------------------------------------------------------------------ */

#define CUPTI_BUFFER_BYTES (4u << 20)

static const char *cupti_error(CUptiResult r)
{
    const char *s = NULL;
    if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) s = "unknown CUPTI error";
    return s;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, CUPTI_BUFFER_BYTES);
    *size = *buffer ? CUPTI_BUFFER_BYTES : 0;
    *max_records = 0;   /* as many as fit */
}

static void copy_kernel_record(const CUpti_ActivityKernel10 *k)
{
    kprof_record *r = append_record();
    r->name = rg_xstrdup(k->name ? k->name : "?");
    r->start_ns = k->start;
    r->end_ns = k->end;
    r->grid[0] = k->gridX, r->grid[1] = k->gridY, r->grid[2] = k->gridZ;
    r->block[0] = k->blockX, r->block[1] = k->blockY, r->block[2] = k->blockZ;
    r->registers = k->registersPerThread;
    r->static_smem = k->staticSharedMemory;
    r->dynamic_smem = k->dynamicSharedMemory;
    r->stream_id = k->streamId;
}

/* Memset and memcpy records share the fields the span needs. */
static void copy_transfer_record(kprof_kind kind, uint64_t start, uint64_t end, uint32_t stream)
{
    if (have_untimed_stream && stream == untimed_stream_id) return;
    kprof_record *r = append_record();
    r->name = rg_xstrdup(kind == KPROF_MEMSET ? "[memset]" : "[memcpy]");
    r->kind = kind;
    r->start_ns = start;
    r->end_ns = end;
    r->stream_id = stream;
}

static void copy_record(const CUpti_Activity *rec)
{
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        copy_kernel_record((const CUpti_ActivityKernel10 *)rec);
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
        copy_transfer_record(KPROF_MEMSET, m->start, m->end, m->streamId);
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
        copy_transfer_record(KPROF_MEMCPY, m->start, m->end, m->streamId);
    }
}

/* Runs on a CUPTI thread or inside cuptiActivityFlushAll. Records that arrive while no
 * collection is active (e.g. at process exit) are dropped. */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid)
{
    (void)size;
    pthread_mutex_lock(&lock);
    CUpti_Activity *rec = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (active && active_method == KPROF_CUPTI) copy_record(rec);
    }
    size_t lost = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &lost) == CUPTI_SUCCESS && active)
        dropped += lost;
    pthread_mutex_unlock(&lock);
    free(buffer);
}

static pthread_once_t cupti_once = PTHREAD_ONCE_INIT;
static CUptiResult cupti_registered = CUPTI_SUCCESS;

static void register_cupti(void)
{
    cupti_registered = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
}

static int cupti_start(rg_err *err)
{
    pthread_once(&cupti_once, register_cupti);
    if (cupti_registered != CUPTI_SUCCESS)
        return rg_errf(err, "CUPTI cannot register activity buffers: %s",
                       cupti_error(cupti_registered));
    CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS)
        return rg_errf(err, "CUPTI cannot enable kernel activity records: %s", cupti_error(r));
    /* the plan's zero-fills and copies belong to the run's span */
    r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
    if (r == CUPTI_SUCCESS) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
    if (r != CUPTI_SUCCESS) {
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
        return rg_errf(err, "CUPTI cannot enable memset/memcpy activity records: %s", cupti_error(r));
    }
    return 0;
}

static int cupti_stop(rg_err *err)
{
    CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    CUptiResult d = cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    CUptiResult d2 = cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
    CUptiResult d3 = cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
    if (d == CUPTI_SUCCESS) d = d2 != CUPTI_SUCCESS ? d2 : d3;
    if (r != CUPTI_SUCCESS) return rg_errf(err, "CUPTI flush failed: %s", cupti_error(r));
    if (d != CUPTI_SUCCESS) return rg_errf(err, "CUPTI disable failed: %s", cupti_error(d));
    return 0;
}

/* ---- cudaEvent fallback ------------------------------------------------------------------ */

typedef struct event_pair {
    cudaEvent_t start, end;
    kprof_record rec;   /* name owned; times filled at stop */
} event_pair;

static event_pair *pairs = NULL;
static size_t npairs = 0, cappairs = 0;
static event_pair *open_pair = NULL;

static void events_before(void *ctx, const krt_kernel *k, krt_dim3 grid, krt_dim3 block,
                          size_t shmem)
{
    (void)ctx;
    if (npairs == cappairs) {
        cappairs = cappairs ? 2 * cappairs : 256;
        pairs = rg_xrealloc(pairs, cappairs * sizeof *pairs);
    }
    event_pair *p = &pairs[npairs];
    memset(p, 0, sizeof *p);
    if (cudaEventCreate(&p->start) != cudaSuccess || cudaEventCreate(&p->end) != cudaSuccess ||
        cudaEventRecord(p->start, 0) != cudaSuccess) {
        (void)cudaGetLastError();
        open_pair = NULL;
        return;
    }
    kprof_record *r = &p->rec;
    r->name = rg_xstrdup(k->name);
    r->grid[0] = (int)grid.x, r->grid[1] = (int)grid.y, r->grid[2] = (int)grid.z;
    r->block[0] = (int)block.x, r->block[1] = (int)block.y, r->block[2] = (int)block.z;
    r->registers = k->num_regs;
    r->static_smem = k->static_smem;
    r->dynamic_smem = (int)shmem;
    open_pair = p;
    npairs++;
}

static void events_after(void *ctx, const krt_kernel *k, int launched)
{
    (void)ctx;
    (void)k;
    event_pair *p = open_pair;
    open_pair = NULL;
    if (!p) return;
    if (launched && cudaEventRecord(p->end, 0) == cudaSuccess) return;
    /* Not launched: forget the pair (it is the last one). */
    (void)cudaGetLastError();
    cudaEventDestroy(p->start);
    cudaEventDestroy(p->end);
    free(p->rec.name);
    npairs--;
}

/* Index of the open KPROF_RUN pair, or -1 (an index: pairs may move as kernels are added). */
static long open_run = -1;

static int events_active(void)
{
    pthread_mutex_lock(&lock);
    int on = active && active_method == KPROF_EVENTS;
    pthread_mutex_unlock(&lock);
    return on;
}

void kprof_run_begin(void)
{
    if (!events_active()) return;
    static const krt_kernel run = {.name = "[run]"};
    events_before(NULL, &run, (krt_dim3){0, 0, 0}, (krt_dim3){0, 0, 0}, 0);
    if (!open_pair) return;
    open_pair->rec.kind = KPROF_RUN;
    open_run = (long)(open_pair - pairs);
    open_pair = NULL;
}

void kprof_run_end(void)
{
    if (!events_active() || open_run < 0) return;
    if (cudaEventRecord(pairs[open_run].end, 0) != cudaSuccess) (void)cudaGetLastError();
    open_run = -1;
}

static void destroy_pairs(void)
{
    open_run = -1;
    for (size_t i = 0; i < npairs; i++) {
        cudaEventDestroy(pairs[i].start);
        cudaEventDestroy(pairs[i].end);
        free(pairs[i].rec.name);
    }
    npairs = 0;
}

/* Converts the event pairs (already synchronised) into records, times relative to the
 * first start event. */
static int events_collect(rg_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < npairs && rc == 0; i++) {
        float t0 = 0, t1 = 0;
        cudaError_t e = cudaEventElapsedTime(&t0, pairs[0].start, pairs[i].start);
        if (e == cudaSuccess) e = cudaEventElapsedTime(&t1, pairs[0].start, pairs[i].end);
        if (e != cudaSuccess) {
            rc = rg_errf(err, "cudaEvent timing failed: %s: %s", cudaGetErrorName(e),
                         cudaGetErrorString(e));
            (void)cudaGetLastError();
            break;
        }
        kprof_record *r = append_record();
        *r = pairs[i].rec;
        pairs[i].rec.name = NULL;   /* moved */
        r->start_ns = (uint64_t)llround((double)t0 * 1e6);
        r->end_ns = (uint64_t)llround((double)t1 * 1e6);
    }
    destroy_pairs();
    return rc;
}

static int events_start(void)
{
    static const krt_launch_hooks h = {events_before, events_after, NULL};
    destroy_pairs();
    krt_set_launch_hooks(&h);
    return 0;
}

/* ---- Untimed work ------------------------------------------------------------------------ */

static cudaStream_t untimed_stream;

int kprof_untimed_memset(void *buf, size_t bytes, rg_err *err)
{
    if (krt_require_device(err)) return -1;
    if (!have_untimed_stream) {
        cudaError_t e = cudaStreamCreateWithFlags(&untimed_stream, cudaStreamNonBlocking);
        if (e != cudaSuccess) return rg_errf(err, "cannot create a stream: %s", cudaGetErrorString(e));
        uint32_t id = 0;
        if (cuptiGetStreamIdEx(NULL, (CUstream)untimed_stream, 0, &id) == CUPTI_SUCCESS) {
            pthread_mutex_lock(&lock);
            untimed_stream_id = id;
            have_untimed_stream = 1;
            pthread_mutex_unlock(&lock);
        } else {
            /* without its id its records could not be told apart: refuse rather than mix */
            cudaStreamDestroy(untimed_stream);
            return rg_errf(err, "CUPTI cannot name the flush stream");
        }
    }
    /* the previous run must be over before the flush, and the flush before the next run */
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaMemsetAsync(buf, 0x5a, bytes, untimed_stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(untimed_stream);
    if (e != cudaSuccess) return rg_errf(err, "L2 flush failed: %s", cudaGetErrorString(e));
    return 0;
}

/* ---- Start / stop ---------------------------------------------------------------------- */

int kprof_start(rg_err *err)
{
    return kprof_start_with(KPROF_AUTO, err);
}

int kprof_start_with(kprof_method method, rg_err *err)
{
    if (krt_require_device(err)) return -1;
    pthread_mutex_lock(&lock);
    int busy = active;
    if (!busy) discard_records();
    pthread_mutex_unlock(&lock);
    if (busy) return rg_errf(err, "kprof_start: a collection is already running");
    kprof_method used = KPROF_EVENTS;
    if (method != KPROF_EVENTS) {
        rg_err cerr;
        if (cupti_start(&cerr) == 0) {
            used = KPROF_CUPTI;
        } else if (method == KPROF_CUPTI) {
            return rg_errf(err, "%s", cerr.msg);
        } else {
            snprintf(fallback_reason, sizeof fallback_reason, "%s", cerr.msg);
            fprintf(stderr, "kprof: %s; timing krt_launch kernels with cudaEvent instead\n",
                    cerr.msg);
        }
    }
    if (used == KPROF_EVENTS) events_start();
    pthread_mutex_lock(&lock);
    active = 1;
    active_method = used;
    pthread_mutex_unlock(&lock);
    return 0;
}

void kprof_prime(void)
{
    static int primed;
    pthread_mutex_lock(&lock);
    int skip = primed || active;
    primed = 1;
    pthread_mutex_unlock(&lock);
    if (skip) return;
    rg_err err;
    kprof_records r;
    if (kprof_start(&err)) return;
    kprof_stop(&r, &err);   /* it clears r first: freeing is safe either way */
    kprof_records_free(&r);
}

static int record_order(const void *a, const void *b)
{
    const kprof_record *x = a, *y = b;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    return x->end_ns < y->end_ns ? -1 : x->end_ns > y->end_ns;
}

int kprof_stop(kprof_records *out, rg_err *err)
{
    RG_ASSERT(out);
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&lock);
    int was_active = active;
    kprof_method method = active_method;
    pthread_mutex_unlock(&lock);
    if (!was_active) return rg_errf(err, "kprof_stop: no collection is running");

    int rc = krt_sync(err);
    if (method == KPROF_CUPTI) {
        rg_err serr;
        if (cupti_stop(&serr) && rc == 0) rc = rg_errf(err, "%s", serr.msg);
    } else {
        krt_set_launch_hooks(NULL);
        if (rc == 0) {
            pthread_mutex_lock(&lock);
            rc = events_collect(err);
            pthread_mutex_unlock(&lock);
        } else {
            destroy_pairs();
        }
    }
    pthread_mutex_lock(&lock);
    active = 0;
    if (rc == 0) {
        qsort(recs, nrecs, sizeof *recs, record_order);
        out->v = nrecs ? rg_xmalloc(nrecs * sizeof *recs) : NULL;
        if (nrecs) memcpy(out->v, recs, nrecs * sizeof *recs);
        out->n = nrecs;
        out->method = method;
        out->dropped = dropped;
        nrecs = 0;   /* names moved to out */
        dropped = 0;
    } else {
        discard_records();
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

void kprof_records_free(kprof_records *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) free(r->v[i].name);
    free(r->v);
    memset(r, 0, sizeof *r);
}

/* ---- Aggregation ------------------------------------------------------------------------- */

double kprof_span_ns(const kprof_records *r)
{
    if (!r->n) return 0;
    uint64_t lo = r->v[0].start_ns, hi = r->v[0].end_ns;
    for (size_t i = 1; i < r->n; i++) {
        if (r->v[i].start_ns < lo) lo = r->v[i].start_ns;
        if (r->v[i].end_ns > hi) hi = r->v[i].end_ns;
    }
    return (double)(hi - lo);
}

size_t kprof_count(const kprof_records *r, kprof_kind kind)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++) n += r->v[i].kind == kind;
    return n;
}

void kprof_keep(kprof_records *r, kprof_kind kind)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->v[i].kind == kind) r->v[n++] = r->v[i];
        else free(r->v[i].name);
    }
    r->n = n;
}

/* Spans from the KPROF_RUN records (the cudaEvent fallback). */
static void spans_of_runs(const kprof_records *r, double *span_ns)
{
    int k = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].kind == KPROF_RUN) span_ns[k++] = (double)(r->v[i].end_ns - r->v[i].start_ns);
}

int kprof_run_spans(const kprof_records *r, int per_run, int repeats, double *span_ns)
{
    if (repeats <= 0 || per_run <= 0) return -1;
    if (kprof_count(r, KPROF_RUN) == (size_t)repeats) {
        spans_of_runs(r, span_ns);
        return 0;
    }
    if (kprof_count(r, KPROF_KERNEL) != (size_t)per_run * (size_t)repeats) return -1;
    /* records are sorted by start: walk them, closing a run at its per_run-th kernel */
    uint64_t prev_end = 0, lo = UINT64_MAX, hi = 0;
    int run = 0, kernels = 0;
    for (size_t i = 0; i < r->n && run < repeats; i++) {
        const kprof_record *x = &r->v[i];
        if (x->kind == KPROF_RUN || (run > 0 && x->start_ns < prev_end)) continue;
        if (x->start_ns < lo) lo = x->start_ns;
        if (x->end_ns > hi) hi = x->end_ns;
        if (x->kind != KPROF_KERNEL || ++kernels < per_run) continue;
        span_ns[run++] = (double)(hi - lo);
        prev_end = hi;
        lo = UINT64_MAX, hi = 0, kernels = 0;
    }
    return run == repeats ? 0 : -1;
}

static double duration(const kprof_record *r)
{
    return r->end_ns > r->start_ns ? (double)(r->end_ns - r->start_ns) : 0.0;
}

/* Median over runs of the per-run sum; `d` holds the durations in launch order. */
static double per_repeat_median(const double *d, size_t n, int repeats)
{
    if (repeats <= 0 || n == 0 || n % (size_t)repeats) return NAN;
    size_t per = n / (size_t)repeats;
    double *sums = rg_xcalloc((size_t)repeats, sizeof *sums);
    for (size_t i = 0; i < n; i++) sums[i / per] += d[i];
    double m = rg_median_sort(sums, (size_t)repeats);
    free(sums);
    return m;
}

/* Fills s from the records of one name, given by index in launch order. */
static void summarize_one(const kprof_records *r, const size_t *idx, size_t n, int repeats,
                          kprof_summary *s)
{
    double *d = rg_xmalloc(n * sizeof *d);
    double total = 0;
    for (size_t i = 0; i < n; i++) total += d[i] = duration(&r->v[idx[i]]);
    s->name = rg_xstrdup(r->v[idx[0]].name);
    s->calls = n;
    s->total_ns = total;
    s->first_start_ns = r->v[idx[0]].start_ns;
    s->median_per_repeat_ns = per_repeat_median(d, n, repeats);
    s->mean_ns = gsl_stats_mean(d, 1, n);
    s->median_ns = rg_median_sort(d, n);   /* sorts d */
    s->min_ns = d[0];
    s->max_ns = d[n - 1];
    free(d);
}

/* Orders record indices by kernel name, then by launch order. */
static int by_name_then_index(const void *a, const void *b, void *ctx)
{
    const kprof_records *r = ctx;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = strcmp(r->v[x].name, r->v[y].name);
    if (c) return c;
    return x < y ? -1 : x > y;
}

static int by_first_start(const void *a, const void *b)
{
    const kprof_summary *x = a, *y = b;
    if (x->first_start_ns != y->first_start_ns) return x->first_start_ns < y->first_start_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

kprof_summary *kprof_summarize(const kprof_records *r, int repeats, size_t *count)
{
    *count = 0;
    if (!r->n) return NULL;
    size_t *idx = rg_xmalloc(r->n * sizeof *idx);
    for (size_t i = 0; i < r->n; i++) idx[i] = i;
    qsort_r(idx, r->n, sizeof *idx, by_name_then_index, (void *)r);
    kprof_summary *out = rg_xcalloc(r->n, sizeof *out);
    for (size_t lo = 0, hi; lo < r->n; lo = hi) {
        for (hi = lo + 1; hi < r->n && strcmp(r->v[idx[hi]].name, r->v[idx[lo]].name) == 0; hi++) {}
        summarize_one(r, idx + lo, hi - lo, repeats, &out[(*count)++]);
    }
    free(idx);
    qsort(out, *count, sizeof *out, by_first_start);
    return out;
}

void kprof_summary_free(kprof_summary *s, size_t count)
{
    if (!s) return;
    for (size_t i = 0; i < count; i++) free(s[i].name);
    free(s);
}
