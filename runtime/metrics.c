/* Hardware counters per kernel launch with the CUPTI Profiler Host API (planning, config
 * images, evaluation) and the Range Profiler API (auto range, user or kernel replay). */
#include "runtime/metrics.h"
#include "runtime/rt.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- CUPTI Profiler Host API declarations (KMET_HOST_DECLS_BEGIN) ----------------------
 * cupti_profiler_host.h (CUDA 13) includes the C++ header <string>, so C cannot include
 * it. These are the types and functions this file uses, copied field for field from that
 * header (a g++ build with static_asserts on every size, field offset, enum value and
 * prototype matched CUDA 13.0's). Each struct carries its size in structSize, so a newer
 * CUPTI still accepts them. */

typedef enum CUpti_MetricType {
    CUPTI_METRIC_TYPE_COUNTER = 0,
    CUPTI_METRIC_TYPE_RATIO,
    CUPTI_METRIC_TYPE_THROUGHPUT,
    CUPTI_METRIC_TYPE__COUNT
} CUpti_MetricType;

typedef enum CUpti_ProfilerType {
    CUPTI_PROFILER_TYPE_RANGE_PROFILER,
    CUPTI_PROFILER_TYPE_PM_SAMPLING,
    CUPTI_PROFILER_TYPE_PROFILER_INVALID
} CUpti_ProfilerType;

typedef struct CUpti_Profiler_Host_Object CUpti_Profiler_Host_Object;

typedef struct CUpti_Profiler_Host_Initialize_Params {
    size_t structSize;
    void *pPriv;
    CUpti_ProfilerType profilerType;
    const char *pChipName;
    const uint8_t *pCounterAvailabilityImage;
    CUpti_Profiler_Host_Object *pHostObject;
} CUpti_Profiler_Host_Initialize_Params;

typedef struct CUpti_Profiler_Host_Deinitialize_Params {
    size_t structSize;
    void *pPriv;
    struct CUpti_Profiler_Host_Object *pHostObject;
} CUpti_Profiler_Host_Deinitialize_Params;

typedef struct CUpti_Profiler_Host_GetSupportedChips_Params {
    size_t structSize;
    void *pPriv;
    size_t numChips;
    const char *const *ppChipNames;
} CUpti_Profiler_Host_GetSupportedChips_Params;

typedef struct CUpti_Profiler_Host_GetMetricProperties_Params {
    size_t structSize;
    void *pPriv;
    CUpti_Profiler_Host_Object *pHostObject;
    const char *pMetricName;
    const char *pDescription;
    const char *pHwUnit;
    const char *pDimUnit;
    CUpti_MetricType metricType;
} CUpti_Profiler_Host_GetMetricProperties_Params;

typedef struct CUpti_Profiler_Host_EvaluateToGpuValues_Params {
    size_t structSize;
    void *pPriv;
    CUpti_Profiler_Host_Object *pHostObject;
    const uint8_t *pCounterDataImage;
    size_t counterDataImageSize;
    size_t rangeIndex;
    const char **ppMetricNames;
    size_t numMetrics;
    double *pMetricValues;
} CUpti_Profiler_Host_EvaluateToGpuValues_Params;

typedef struct CUpti_Profiler_Host_ConfigAddMetrics_Params {
    size_t structSize;
    void *pPriv;
    struct CUpti_Profiler_Host_Object *pHostObject;
    const char **ppMetricNames;
    size_t numMetrics;
} CUpti_Profiler_Host_ConfigAddMetrics_Params;

typedef struct CUpti_Profiler_Host_GetConfigImageSize_Params {
    size_t structSize;
    void *pPriv;
    CUpti_Profiler_Host_Object *pHostObject;
    size_t configImageSize;
} CUpti_Profiler_Host_GetConfigImageSize_Params;

typedef struct CUpti_Profiler_Host_GetConfigImage_Params {
    size_t structSize;
    void *pPriv;
    CUpti_Profiler_Host_Object *pHostObject;
    size_t configImageSize;
    uint8_t *pConfigImage;
} CUpti_Profiler_Host_GetConfigImage_Params;

typedef struct CUpti_Profiler_Host_GetNumOfPasses_Params {
    size_t structSize;
    void *pPriv;
    size_t configImageSize;
    uint8_t *pConfigImage;
    size_t numOfPasses;
} CUpti_Profiler_Host_GetNumOfPasses_Params;

#define CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE \
    CUPTI_PROFILER_STRUCT_SIZE(CUpti_Profiler_Host_Initialize_Params, pHostObject)
#define CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE \
    CUPTI_PROFILER_STRUCT_SIZE(CUpti_Profiler_Host_Deinitialize_Params, pHostObject)
#define CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE \
    CUPTI_PROFILER_STRUCT_SIZE(CUpti_Profiler_Host_GetSupportedChips_Params, ppChipNames)
#define CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE \
    CUPTI_PROFILER_STRUCT_SIZE(CUpti_Profiler_Host_GetMetricProperties_Params, metricType)
#define CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE \
    CUPTI_PROFILER_STRUCT_SIZE(CUpti_Profiler_Host_EvaluateToGpuValues_Params, pMetricValues)
#define CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE \
    CUPTI_PROFILER_STRUCT_SIZE(CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics)
#define CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE \
    CUPTI_PROFILER_STRUCT_SIZE(CUpti_Profiler_Host_GetConfigImageSize_Params, configImageSize)
#define CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE \
    CUPTI_PROFILER_STRUCT_SIZE(CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage)
#define CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE \
    CUPTI_PROFILER_STRUCT_SIZE(CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses)

CUptiResult CUPTIAPI cuptiProfilerHostInitialize(CUpti_Profiler_Host_Initialize_Params *pParams);
CUptiResult CUPTIAPI cuptiProfilerHostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params *pParams);
CUptiResult CUPTIAPI cuptiProfilerHostGetSupportedChips(CUpti_Profiler_Host_GetSupportedChips_Params *pParams);
CUptiResult CUPTIAPI cuptiProfilerHostGetMetricProperties(CUpti_Profiler_Host_GetMetricProperties_Params *pParams);
CUptiResult CUPTIAPI cuptiProfilerHostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params *pParams);
CUptiResult CUPTIAPI cuptiProfilerHostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params *pParams);
CUptiResult CUPTIAPI cuptiProfilerHostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params *pParams);
CUptiResult CUPTIAPI cuptiProfilerHostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params *pParams);
CUptiResult CUPTIAPI cuptiProfilerHostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params *pParams);

/* ---- KMET_HOST_DECLS_END ---------------------------------------------------------------- */

const char *const kmet_default_metrics[] = {
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__inst_executed.sum",
    "sm__cycles_elapsed.avg",
    "sm__inst_executed.avg.per_cycle_active",              /* IPC per SM */
    "sm__warps_active.avg.pct_of_peak_sustained_active",   /* achieved occupancy */
    "lts__t_sector_hit_rate.pct",                          /* L2 hit rate */
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
};
const int kmet_default_count = (int)(sizeof kmet_default_metrics / sizeof *kmet_default_metrics);

static const char *cupti_str(CUptiResult r)
{
    const char *s = NULL;
    if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) s = "unknown CUPTI error";
    return s;
}

static int is_denied(CUptiResult r)
{
    return r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ||
           r == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES;
}

static int denied(rg_err *err, const char *where, CUptiResult r)
{
    rg_errf(err, "hardware counters not permitted (%s in %s): run as root, or load the nvidia "
            "module with NVreg_RestrictProfilingToAdminUsers=0", cupti_str(r), where);
    return KMET_DENIED;
}

/* An error from a CUPTI call: KMET_DENIED for missing privileges, else -1. */
static int cupti_fail(rg_err *err, const char *where, CUptiResult r)
{
    if (is_denied(r)) return denied(err, where, r);
    return rg_errf(err, "%s failed: %s", where, cupti_str(r));
}

/* ---- Host objects and config images ---------------------------------------------------- */

static CUptiResult host_open(const char *chip, const uint8_t *avail, CUpti_Profiler_Host_Object **out)
{
    CUpti_Profiler_Host_Initialize_Params p = {.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip;
    p.pCounterAvailabilityImage = avail;
    CUptiResult r = cuptiProfilerHostInitialize(&p);
    *out = r == CUPTI_SUCCESS ? p.pHostObject : NULL;
    return r;
}

static void host_close(CUpti_Profiler_Host_Object *h)
{
    if (!h) return;
    CUpti_Profiler_Host_Deinitialize_Params p = {.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    p.pHostObject = h;
    (void)cuptiProfilerHostDeinitialize(&p);
}

static CUptiResult host_add(CUpti_Profiler_Host_Object *h, char *const *metrics, size_t n)
{
    CUpti_Profiler_Host_ConfigAddMetrics_Params p = {.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    p.pHostObject = h;
    p.ppMetricNames = (const char **)metrics;
    p.numMetrics = n;
    return cuptiProfilerHostConfigAddMetrics(&p);
}

/* A config image. */
typedef struct config_image {
    uint8_t *data;
    size_t size;
    size_t passes;
} config_image;

static void config_free(config_image *c)
{
    free(c->data);
    memset(c, 0, sizeof *c);
}

static CUptiResult config_from_host(CUpti_Profiler_Host_Object *h, config_image *out)
{
    CUpti_Profiler_Host_GetConfigImageSize_Params s = {.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    s.pHostObject = h;
    CUptiResult r = cuptiProfilerHostGetConfigImageSize(&s);
    if (r != CUPTI_SUCCESS) return r;
    out->size = s.configImageSize;
    out->data = rg_xmalloc(out->size ? out->size : 1);
    CUpti_Profiler_Host_GetConfigImage_Params g = {.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    g.pHostObject = h;
    g.configImageSize = out->size;
    g.pConfigImage = out->data;
    r = cuptiProfilerHostGetConfigImage(&g);
    if (r != CUPTI_SUCCESS) return r;
    CUpti_Profiler_Host_GetNumOfPasses_Params n = {.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    n.configImageSize = out->size;
    n.pConfigImage = out->data;
    r = cuptiProfilerHostGetNumOfPasses(&n);
    out->passes = n.numOfPasses;
    return r;
}

/* The config image of `metrics` on a fresh host object: a failed ConfigAddMetrics leaves a
 * host object unusable, so every trial gets its own. */
static CUptiResult config_for(const char *chip, const uint8_t *avail, char *const *metrics, size_t n,
                              config_image *out)
{
    memset(out, 0, sizeof *out);
    CUpti_Profiler_Host_Object *h;
    CUptiResult r = host_open(chip, avail, &h);
    if (r == CUPTI_SUCCESS) r = host_add(h, metrics, n);
    if (r == CUPTI_SUCCESS) r = config_from_host(h, out);
    host_close(h);
    if (r != CUPTI_SUCCESS) config_free(out);
    return r;
}

/* ---- Planning ------------------------------------------------------------------------------ */

/* CUPTI's dimension, shortened to fit small columns ("instruction/gpc_cycle" becomes
 * "inst/gpc_cycle", "percent" becomes "%"). */
static char *short_unit(const char *dim)
{
    rg_str b = {0};
    rg_str_puts(&b, "");
    for (const char *p = dim ? dim : ""; *p;) {
        if (strncmp(p, "instruction", 11) == 0) rg_str_puts(&b, "inst"), p += 11;
        else if (strncmp(p, "percent", 7) == 0) rg_str_puts(&b, "%"), p += 7;
        else rg_str_putc(&b, *p++);
    }
    return b.s;
}

/* Counters without a submetric ("dram__bytes_read.sum", "sm__cycles_elapsed.avg") add up
 * over launches; ratios, throughputs and submetrics (pct_of_peak, per_cycle) do not. */
static int is_additive(const char *metric, CUpti_MetricType type)
{
    const char *dot = strchr(metric, '.');
    return type == CUPTI_METRIC_TYPE_COUNTER && dot && !strchr(dot + 1, '.');
}

static void plan_skip(kmet_plan *p, const char *metric, char *reason)
{
    p->skipped = rg_xrealloc(p->skipped, (size_t)(p->nskipped + 1) * sizeof *p->skipped);
    p->skipped[p->nskipped].metric = rg_xstrdup(metric);
    p->skipped[p->nskipped].reason = reason;
    p->nskipped++;
}

static void plan_take(kmet_plan *p, const char *metric, char *unit, int additive)
{
    size_t n = (size_t)p->nmetrics + 1;
    p->metrics = rg_xrealloc(p->metrics, n * sizeof *p->metrics);
    p->units = rg_xrealloc(p->units, n * sizeof *p->units);
    p->additive = rg_xrealloc(p->additive, n * sizeof *p->additive);
    p->metrics[p->nmetrics] = rg_xstrdup(metric);
    p->units[p->nmetrics] = unit;
    p->additive[p->nmetrics] = additive;
    p->nmetrics++;
}

void kmet_plan_free(kmet_plan *p)
{
    if (!p) return;
    for (int i = 0; i < p->nmetrics; i++) free(p->metrics[i]), free(p->units[i]);
    for (int i = 0; i < p->nskipped; i++) free(p->skipped[i].metric), free(p->skipped[i].reason);
    free(p->metrics);
    free(p->units);
    free(p->additive);
    free(p->skipped);
    memset(p, 0, sizeof *p);
}

static int chip_error(const char *chip, CUptiResult r, rg_err *err)
{
    CUpti_Profiler_Host_GetSupportedChips_Params s = {.structSize = CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE};
    rg_str list = {0};
    rg_str_puts(&list, "");
    if (cuptiProfilerHostGetSupportedChips(&s) == CUPTI_SUCCESS)
        for (size_t i = 0; i < s.numChips; i++) rg_str_printf(&list, "%s%s", i ? " " : "", s.ppChipNames[i]);
    rg_errf(err, "CUPTI cannot profile chip '%s' (%s); it knows: %s", chip, cupti_str(r), list.s);
    rg_str_free(&list);
    return -1;
}

static int already_requested(const char *const *metrics, int i)
{
    for (int j = 0; j < i; j++)
        if (strcmp(metrics[j], metrics[i]) == 0) return 1;
    return 0;
}

/* Checks one metric alone: known to the chip, schedulable, within the pass limit. On
 * success unit and additive are set; otherwise a skip reason is recorded and 0 returned. */
static int metric_usable(const char *chip, const uint8_t *avail, CUpti_Profiler_Host_Object *props,
                         const char *metric, int max_passes, kmet_plan *p, char **unit, int *additive)
{
    CUpti_Profiler_Host_GetMetricProperties_Params mp = {.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
    mp.pHostObject = props;
    mp.pMetricName = metric;
    CUptiResult r = cuptiProfilerHostGetMetricProperties(&mp);
    if (r != CUPTI_SUCCESS) {
        plan_skip(p, metric, rg_xasprintf("unsupported on %s (%s)", chip, cupti_str(r)));
        return 0;
    }
    config_image alone;
    char *one[] = {(char *)metric};
    r = config_for(chip, avail, one, 1, &alone);
    if (r != CUPTI_SUCCESS) {
        plan_skip(p, metric, rg_xasprintf("%s on %s (%s)",
                                          is_denied(r) ? "counters not permitted" : "cannot be scheduled",
                                          chip, cupti_str(r)));
        return 0;
    }
    size_t passes = alone.passes;
    config_free(&alone);
    if (passes > (size_t)max_passes) {
        plan_skip(p, metric, rg_xasprintf("needs %zu passes, more than the %d allowed", passes, max_passes));
        return 0;
    }
    *unit = short_unit(mp.pDimUnit);
    *additive = is_additive(metric, mp.metricType);
    return 1;
}

/* Greedy: each usable metric joins the set when the set still fits in max_passes. *config
 * receives the image of the final set (empty when nothing is collected). */
static int plan_metrics(const char *chip, const uint8_t *avail, const char *const *metrics, int n,
                        int max_passes, kmet_plan *p, config_image *config, rg_err *err)
{
    memset(p, 0, sizeof *p);
    memset(config, 0, sizeof *config);
    snprintf(p->chip, sizeof p->chip, "%s", chip);
    CUpti_Profiler_Host_Object *props;
    CUptiResult r = host_open(chip, avail, &props);
    if (r != CUPTI_SUCCESS) return chip_error(chip, r, err);
    for (int i = 0; i < n; i++) {
        char *unit = NULL;
        int additive = 0;
        if (already_requested(metrics, i) ||
            !metric_usable(chip, avail, props, metrics[i], max_passes, p, &unit, &additive))
            continue;
        plan_take(p, metrics[i], unit, additive);
        config_image trial;
        r = config_for(chip, avail, p->metrics, (size_t)p->nmetrics, &trial);
        if (r == CUPTI_SUCCESS && trial.passes <= (size_t)max_passes) {
            config_free(config);
            *config = trial;
            continue;
        }
        /* Does not fit with the metrics before it: take it back out. */
        p->nmetrics--;
        free(p->metrics[p->nmetrics]);
        free(p->units[p->nmetrics]);
        plan_skip(p, metrics[i], r != CUPTI_SUCCESS
                  ? rg_xasprintf("cannot be scheduled with the metrics before it (%s)", cupti_str(r))
                  : rg_xasprintf("the set would need %zu passes with it, more than the %d allowed",
                                 trial.passes, max_passes));
        config_free(&trial);
    }
    host_close(props);
    p->passes = (int)config->passes;
    return 0;
}

int kmet_plan_for_chip(const char *chip, const char *const *metrics, int n, int max_passes,
                       kmet_plan *out, rg_err *err)
{
    RG_ASSERT(chip && out && n >= 0 && (n == 0 || metrics));
    config_image c;
    if (max_passes <= 0) max_passes = KMET_DEFAULT_MAX_PASSES;
    int rc = plan_metrics(chip, NULL, metrics, n, max_passes, out, &c, err);
    config_free(&c);
    return rc;
}

/* kmet_begin plans the same metric list for every variant of a sweep: the last plan is
 * kept (planning creates a host object per trial, ~10 ms each). */
static struct {
    char *key;          /* chip, pass limit and metric names; NULL: none */
    kmet_plan plan;
    config_image config;
} cached;

static char *plan_key(const char *chip, int max_passes, const char *const *metrics, int n)
{
    rg_str b = {0};
    rg_str_printf(&b, "%s|%d", chip, max_passes);
    for (int i = 0; i < n; i++) rg_str_printf(&b, "|%s", metrics[i]);
    return b.s;
}

static void plan_copy(const kmet_plan *src, kmet_plan *dst)
{
    memset(dst, 0, sizeof *dst);
    snprintf(dst->chip, sizeof dst->chip, "%s", src->chip);
    for (int i = 0; i < src->nmetrics; i++)
        plan_take(dst, src->metrics[i], rg_xstrdup(src->units[i]), src->additive[i]);
    for (int i = 0; i < src->nskipped; i++)
        plan_skip(dst, src->skipped[i].metric, rg_xstrdup(src->skipped[i].reason));
    dst->passes = src->passes;
}

static void config_copy(const config_image *src, config_image *dst)
{
    *dst = *src;
    dst->data = rg_xmalloc(src->size ? src->size : 1);
    if (src->size) memcpy(dst->data, src->data, src->size);
}

/* The plan for this device, from the cache when the request is the same. */
static int plan_cached(const char *chip, const uint8_t *avail, const char *const *metrics, int n,
                       int max_passes, kmet_plan *plan, config_image *config, rg_err *err)
{
    char *key = plan_key(chip, max_passes, metrics, n);
    if (!cached.key || strcmp(cached.key, key) != 0) {
        kmet_plan p;
        config_image c;
        if (plan_metrics(chip, avail, metrics, n, max_passes, &p, &c, err)) {
            free(key);
            return -1;
        }
        free(cached.key);
        kmet_plan_free(&cached.plan);
        config_free(&cached.config);
        cached.key = key;
        cached.plan = p;
        cached.config = c;
    } else {
        free(key);
    }
    plan_copy(&cached.plan, plan);
    config_copy(&cached.config, config);
    return 0;
}

/* ---- Kernel names: launch callbacks ------------------------------------------------------
 * Auto ranges are numbered, not named; the launch callbacks of a pass give the names in the
 * same order. Both the runtime and the driver domain are logged (a runtime launch shows in
 * both; a library may call the driver directly): the log with as many launches as ranges
 * names them. */

enum { LOG_DRIVER, LOG_RUNTIME, NLOGS };

typedef struct launch_log {
    char **names;               /* first pass */
    size_t n, cap;
    size_t pass_count;          /* launches in the current pass */
} launch_log;

static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;
static int counting;            /* between Start and Stop */
static int recording;           /* first pass: keep the names */
static launch_log logs[NLOGS];

static const CUpti_CallbackId driver_launches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
};

static const CUpti_CallbackId runtime_launches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
};

#define COUNT_OF(a) (sizeof(a) / sizeof *(a))

static void record_launch(int which, const char *name)
{
    launch_log *l = &logs[which];
    pthread_mutex_lock(&launch_lock);
    if (counting) {
        l->pass_count++;
        if (recording) {
            if (l->n == l->cap) {
                l->cap = l->cap ? 2 * l->cap : 64;
                l->names = rg_xrealloc(l->names, l->cap * sizeof *l->names);
            }
            l->names[l->n++] = rg_xstrdup(name ? name : "?");
        }
    }
    pthread_mutex_unlock(&launch_lock);
}

/* Logs launches that succeeded: the name is taken on entry (where CUPTI documents it) and
 * kept in correlationData until the exit callback sees the result. Only the launch
 * callbacks are enabled. */
static void CUPTIAPI on_launch(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                               const void *cbdata)
{
    (void)userdata;
    (void)cbid;
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API && domain != CUPTI_CB_DOMAIN_RUNTIME_API) return;
    const CUpti_CallbackData *d = cbdata;
    if (!d->correlationData) return;
    if (d->callbackSite == CUPTI_API_ENTER) {
        *d->correlationData = (uint64_t)(uintptr_t)rg_xstrdup(d->symbolName ? d->symbolName : "?");
        return;
    }
    char *name = (char *)(uintptr_t)*d->correlationData;
    *d->correlationData = 0;
    int ok = 0;
    if (d->functionReturnValue)
        ok = domain == CUPTI_CB_DOMAIN_DRIVER_API ? *(const CUresult *)d->functionReturnValue == CUDA_SUCCESS
                                                   : *(const cudaError_t *)d->functionReturnValue == cudaSuccess;
    if (ok) record_launch(domain == CUPTI_CB_DOMAIN_DRIVER_API ? LOG_DRIVER : LOG_RUNTIME, name);
    free(name);
}

static void logs_pass_begin(int first)
{
    pthread_mutex_lock(&launch_lock);
    counting = 1;
    recording = first;
    for (int i = 0; i < NLOGS; i++) logs[i].pass_count = 0;
    pthread_mutex_unlock(&launch_lock);
}

/* Ends the pass; returns its launches (as the driver saw them, else the runtime). */
static size_t logs_pass_end(void)
{
    pthread_mutex_lock(&launch_lock);
    counting = recording = 0;
    size_t n = logs[LOG_DRIVER].pass_count ? logs[LOG_DRIVER].pass_count : logs[LOG_RUNTIME].pass_count;
    pthread_mutex_unlock(&launch_lock);
    return n;
}

/* The log naming `nranges` ranges, or NULL. */
static const launch_log *naming_log(size_t nranges)
{
    for (int i = 0; i < NLOGS; i++)
        if (logs[i].n == nranges) return &logs[i];
    return NULL;
}

static void logs_reset(void)
{
    pthread_mutex_lock(&launch_lock);
    for (int i = 0; i < NLOGS; i++) {
        for (size_t j = 0; j < logs[i].n; j++) free(logs[i].names[j]);
        logs[i].n = logs[i].pass_count = 0;
    }
    counting = recording = 0;
    pthread_mutex_unlock(&launch_lock);
}

/* ---- The collection ------------------------------------------------------------------------ */

typedef enum { IDLE, READY, COLLECTED } session_state;

static struct session {
    session_state state;
    kmet_options opt;
    kmet_plan plan;
    config_image config;
    CUpti_Profiler_Host_Object *host;       /* evaluates the counter data */
    CUpti_RangeProfiler_Object *rp;
    uint8_t *counter_data;
    size_t counter_size;
    CUpti_SubscriberHandle sub;
    int subscribed;
    char subscribe_error[160];
    size_t launches;                        /* per pass, from the first pass */
    int runs;
} S;

static void unsubscribe(void)
{
    if (S.subscribed) (void)cuptiUnsubscribe(S.sub);
    S.subscribed = 0;
}

static void session_close(void)
{
    if (S.rp) {
        CUpti_RangeProfiler_Disable_Params p = {.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
        p.pRangeProfilerObject = S.rp;
        (void)cuptiRangeProfilerDisable(&p);
    }
    unsubscribe();
    host_close(S.host);
    kmet_plan_free(&S.plan);
    config_free(&S.config);
    free(S.counter_data);
    logs_reset();
    memset(&S, 0, sizeof S);
}

static int current_context(CUcontext *ctx, rg_err *err)
{
    typedef CUresult (CUDAAPI *ctx_get_current_fn)(CUcontext *);
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q;
    cudaError_t e = cudaFree(NULL);   /* makes the primary context current */
    if (e == cudaSuccess) e = cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || !fn || q != cudaDriverEntryPointSuccess)
        return rg_errf(err, "cannot reach cuCtxGetCurrent through the CUDA runtime: %s",
                       e != cudaSuccess ? cudaGetErrorString(e) : "symbol not found");
    CUresult r = ((ctx_get_current_fn)fn)(ctx);
    if (r != CUDA_SUCCESS || !*ctx) return rg_errf(err, "no current CUDA context (CUresult %d)", (int)r);
    return 0;
}

static int chip_name(char *out, size_t n, rg_err *err)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return rg_errf(err, "cudaGetDevice failed: %s", cudaGetErrorString(e));
    CUpti_Device_GetChipName_Params p = {.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    p.deviceIndex = (size_t)dev;
    CUptiResult r = cuptiDeviceGetChipName(&p);
    if (r != CUPTI_SUCCESS) return cupti_fail(err, "cuptiDeviceGetChipName", r);
    snprintf(out, n, "%s", p.pChipName);
    return 0;
}

static int counter_availability(CUcontext ctx, uint8_t **image, rg_err *err)
{
    CUpti_Profiler_GetCounterAvailability_Params p = {.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    p.ctx = ctx;
    CUptiResult r = cuptiProfilerGetCounterAvailability(&p);
    if (r != CUPTI_SUCCESS) return cupti_fail(err, "cuptiProfilerGetCounterAvailability", r);
    *image = rg_xcalloc(p.counterAvailabilityImageSize ? p.counterAvailabilityImageSize : 1, 1);
    p.pCounterAvailabilityImage = *image;
    r = cuptiProfilerGetCounterAvailability(&p);
    if (r != CUPTI_SUCCESS) {
        free(*image);
        *image = NULL;
        return cupti_fail(err, "cuptiProfilerGetCounterAvailability", r);
    }
    return 0;
}

static int profiler_initialized;

static int profiler_init(rg_err *err)
{
    if (profiler_initialized) return 0;
    CUpti_Profiler_Initialize_Params p = {.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    CUptiResult r = cuptiProfilerInitialize(&p);
    if (r != CUPTI_SUCCESS) return cupti_fail(err, "cuptiProfilerInitialize", r);
    profiler_initialized = 1;
    return 0;
}

static CUptiResult enable_launch_callbacks(void)
{
    CUptiResult r = CUPTI_SUCCESS;
    for (size_t i = 0; i < COUNT_OF(driver_launches) && r == CUPTI_SUCCESS; i++)
        r = cuptiEnableCallback(1, S.sub, CUPTI_CB_DOMAIN_DRIVER_API, driver_launches[i]);
    for (size_t i = 0; i < COUNT_OF(runtime_launches) && r == CUPTI_SUCCESS; i++)
        r = cuptiEnableCallback(1, S.sub, CUPTI_CB_DOMAIN_RUNTIME_API, runtime_launches[i]);
    return r;
}

/* Subscribes to the launch callbacks for the kernel names. Another CUPTI subscriber (e.g.
 * running under Nsight) leaves the ranges unnamed, which is not an error. */
static void subscribe_launches(void)
{
    char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";
    CUpti_SubscriberParams sp = {.structSize = CUpti_SubscriberParams_STRUCT_SIZE};
    sp.subscriberName = "rgnn runtime/metrics";
    sp.oldSubscriberName = old;
    sp.oldSubscriberSize = sizeof old;
    CUptiResult r = cuptiSubscribe_v2(&S.sub, on_launch, NULL, &sp);
    if (r == CUPTI_SUCCESS) {
        S.subscribed = 1;
        r = enable_launch_callbacks();
        if (r == CUPTI_SUCCESS) return;
        unsubscribe();
    }
    snprintf(S.subscribe_error, sizeof S.subscribe_error, "%s%s%s", cupti_str(r), old[0] ? " by " : "", old);
}

/* Enable, counter data image, config: the range profiler ready to start. */
static int range_profiler_setup(CUcontext ctx, rg_err *err)
{
    CUpti_RangeProfiler_Enable_Params en = {.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    en.ctx = ctx;
    CUptiResult r = cuptiRangeProfilerEnable(&en);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && S.subscribed) {
        /* The range profiler wants to be the only client: collect without the names. */
        unsubscribe();
        snprintf(S.subscribe_error, sizeof S.subscribe_error, "the range profiler refused a subscriber");
        r = cuptiRangeProfilerEnable(&en);
    }
    if (r != CUPTI_SUCCESS) return cupti_fail(err, "cuptiRangeProfilerEnable", r);
    S.rp = en.pRangeProfilerObject;

    size_t ranges = (size_t)S.opt.max_launches;
    CUpti_RangeProfiler_GetCounterDataSize_Params sz = {.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    sz.pRangeProfilerObject = S.rp;
    sz.pMetricNames = (const char **)S.plan.metrics;
    sz.numMetrics = (size_t)S.plan.nmetrics;
    sz.maxNumOfRanges = ranges;
    sz.maxNumRangeTreeNodes = (uint32_t)ranges;
    r = cuptiRangeProfilerGetCounterDataSize(&sz);
    if (r != CUPTI_SUCCESS) return cupti_fail(err, "cuptiRangeProfilerGetCounterDataSize", r);
    S.counter_size = sz.counterDataSize;
    S.counter_data = rg_xcalloc(S.counter_size ? S.counter_size : 1, 1);

    CUpti_RangeProfiler_CounterDataImage_Initialize_Params ci = {
        .structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    ci.pRangeProfilerObject = S.rp;
    ci.counterDataSize = S.counter_size;
    ci.pCounterData = S.counter_data;
    r = cuptiRangeProfilerCounterDataImageInitialize(&ci);
    if (r != CUPTI_SUCCESS) return cupti_fail(err, "cuptiRangeProfilerCounterDataImageInitialize", r);

    CUpti_RangeProfiler_SetConfig_Params sc = {.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    sc.pRangeProfilerObject = S.rp;
    sc.configSize = S.config.size;
    sc.pConfig = S.config.data;
    sc.counterDataImageSize = S.counter_size;
    sc.pCounterDataImage = S.counter_data;
    sc.range = CUPTI_AutoRange;
    sc.replayMode = S.opt.replay == KMET_REPLAY_KERNEL ? CUPTI_KernelReplay : CUPTI_UserReplay;
    sc.maxRangesPerPass = ranges;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    r = cuptiRangeProfilerSetConfig(&sc);
    if (r != CUPTI_SUCCESS) return cupti_fail(err, "cuptiRangeProfilerSetConfig", r);
    return 0;
}

/* Everything kmet_begin does once the session is claimed; the caller closes on failure. */
static int begin_session(const char *const *metrics, int n, rg_err *err)
{
    CUcontext ctx;
    char chip[64];
    uint8_t *avail = NULL;
    int rc = current_context(&ctx, err);
    if (!rc) rc = profiler_init(err);
    if (!rc) rc = chip_name(chip, sizeof chip, err);
    if (!rc) rc = counter_availability(ctx, &avail, err);
    if (!rc) rc = plan_cached(chip, avail, metrics, n, S.opt.max_passes, &S.plan, &S.config, err);
    if (!rc && S.plan.nmetrics > 0) {
        CUptiResult r = host_open(chip, avail, &S.host);
        if (r == CUPTI_SUCCESS) r = host_add(S.host, S.plan.metrics, (size_t)S.plan.nmetrics);
        if (r != CUPTI_SUCCESS) rc = cupti_fail(err, "cuptiProfilerHostConfigAddMetrics", r);
        if (!rc) subscribe_launches();
        if (!rc) rc = range_profiler_setup(ctx, err);
    }
    free(avail);
    return rc;
}

int kmet_begin(const char *const *metrics, int n, rg_err *err)
{
    return kmet_begin_with(metrics, n, NULL, err);
}

int kmet_begin_with(const char *const *metrics, int n, const kmet_options *opt, rg_err *err)
{
    RG_ASSERT(n >= 0 && (n == 0 || metrics));
    if (krt_require_device(err)) return -1;
    if (S.state != IDLE) return rg_errf(err, "kmet_begin: a collection is already running");
    memset(&S, 0, sizeof S);
    if (opt) S.opt = *opt;
    if (S.opt.max_passes <= 0) S.opt.max_passes = KMET_DEFAULT_MAX_PASSES;
    if (S.opt.max_launches <= 0) S.opt.max_launches = KMET_DEFAULT_MAX_LAUNCHES;
    if (S.opt.replay != KMET_REPLAY_USER && S.opt.replay != KMET_REPLAY_KERNEL)
        return rg_errf(err, "kmet_begin: unknown replay mode %d", (int)S.opt.replay);
    S.state = READY;
    int rc = begin_session(metrics, n, err);
    if (rc) session_close();
    return rc;
}

static int range_start(rg_err *err)
{
    CUpti_RangeProfiler_Start_Params p = {.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = S.rp;
    CUptiResult r = cuptiRangeProfilerStart(&p);
    return r == CUPTI_SUCCESS ? 0 : cupti_fail(err, "cuptiRangeProfilerStart", r);
}

static int range_stop(int *all_submitted, rg_err *err)
{
    CUpti_RangeProfiler_Stop_Params p = {.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = S.rp;
    CUptiResult r = cuptiRangeProfilerStop(&p);
    *all_submitted = p.isAllPassSubmitted;
    return r == CUPTI_SUCCESS ? 0 : cupti_fail(err, "cuptiRangeProfilerStop", r);
}

/* One pass: run() between Start and Stop, waiting for the GPU so that faults show here.
 * Every pass must launch as many kernels as the first. */
static int one_pass(int pass, kmet_run_fn run, void *ctx, int *all_submitted, rg_err *err)
{
    int rc = range_start(err);
    if (rc) return rc;
    logs_pass_begin(pass == 0);
    S.runs++;
    rc = run(ctx, err);
    if (rc) rg_err_prefix(err, "metrics pass %d", pass + 1);
    if (!rc) rc = krt_sync(err);
    size_t launched = logs_pass_end();
    rg_err serr;
    int src = range_stop(all_submitted, &serr);
    if (rc) return rc;
    if (src) {
        rg_errf(err, "%s", serr.msg);
        return src;
    }
    if (pass == 0) S.launches = launched;
    else if (S.subscribed && launched != S.launches)
        return rg_errf(err, "the launch sequence changed between metric passes: %zu kernel launches, "
                       "then %zu in pass %d", S.launches, launched, pass + 1);
    return 0;
}

int kmet_run(kmet_run_fn run, void *ctx, rg_err *err)
{
    RG_ASSERT(run);
    if (S.state != READY) return rg_errf(err, "kmet_run: no collection is waiting (kmet_begin first)");
    S.state = COLLECTED;
    if (S.plan.nmetrics == 0) return 0;   /* nothing to count: the skipped list says why */
    /* Kernel replay submits every pass in one run; user replay needs one run per pass.
     * The bound only guards against a CUPTI that never reports completion. */
    int limit = S.opt.replay == KMET_REPLAY_KERNEL ? 1 : S.plan.passes + 2;
    int all_submitted = 0;
    for (int pass = 0; pass < limit && !all_submitted; pass++) {
        int rc = one_pass(pass, run, ctx, &all_submitted, err);
        if (rc) {
            session_close();
            return rc;
        }
    }
    if (!all_submitted) {
        rg_errf(err, "CUPTI still wants passes after %d runs (%d planned)", limit, S.plan.passes);
        session_close();
        return -1;
    }
    return 0;
}

/* ---- Results --------------------------------------------------------------------------------- */

static int evaluate_range(size_t range, double *values, rg_err *err)
{
    CUpti_Profiler_Host_EvaluateToGpuValues_Params p = {.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    p.pHostObject = S.host;
    p.pCounterDataImage = S.counter_data;
    p.counterDataImageSize = S.counter_size;
    p.rangeIndex = range;
    p.ppMetricNames = (const char **)S.plan.metrics;
    p.numMetrics = (size_t)S.plan.nmetrics;
    p.pMetricValues = values;
    CUptiResult r = cuptiProfilerHostEvaluateToGpuValues(&p);
    if (r != CUPTI_SUCCESS)
        return rg_errf(err, "cuptiProfilerHostEvaluateToGpuValues (range %zu) failed: %s", range, cupti_str(r));
    return 0;
}

static void note_append(kmet_result *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_append(kmet_result *out, const char *fmt, ...)
{
    size_t used = strlen(out->note);
    if (used && used + 2 < sizeof out->note) out->note[used++] = ';', out->note[used++] = ' ', out->note[used] = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->note + used, sizeof out->note - used, fmt, ap);
    va_end(ap);
}

static const char *range_name(size_t range, size_t launched, char *buf, size_t n)
{
    const launch_log *l = naming_log(launched);
    if (l) return l->names[range];
    snprintf(buf, n, "range_%zu", range);
    return buf;
}

/* Per-launch rows: one per (range, metric). */
static int fill_launch_rows(kmet_result *out, size_t nranges, size_t launched, rg_err *err)
{
    size_t m = (size_t)out->plan.nmetrics;
    out->launch_rows = rg_xcalloc(nranges * m > 0 ? nranges * m : 1, sizeof *out->launch_rows);
    double *values = rg_xcalloc(m, sizeof *values);
    for (size_t i = 0; i < nranges; i++) {
        if (evaluate_range(i, values, err)) {
            free(values);
            return -1;
        }
        char buf[32];
        const char *name = range_name(i, launched, buf, sizeof buf);
        for (size_t j = 0; j < m; j++) {
            kmet_row *row = &out->launch_rows[out->nlaunch_rows++];
            row->kernel = rg_xstrdup(name);
            row->launch = (int)i;
            row->calls = 1;
            row->metric = out->plan.metrics[j];
            row->unit = out->plan.units[j];
            row->value = values[j];
        }
    }
    free(values);
    return 0;
}

static kmet_row *find_row(kmet_row *rows, size_t n, const char *kernel, const char *metric)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].kernel, kernel) == 0 && strcmp(rows[i].metric, metric) == 0) return &rows[i];
    return NULL;
}

/* Per-kernel rows: counters summed over the launches of one name, the rest averaged. */
static void fill_kernel_rows(kmet_result *out)
{
    out->kernel_rows = rg_xcalloc(out->nlaunch_rows ? out->nlaunch_rows : 1, sizeof *out->kernel_rows);
    for (size_t i = 0; i < out->nlaunch_rows; i++) {
        const kmet_row *l = &out->launch_rows[i];
        kmet_row *k = find_row(out->kernel_rows, out->nkernel_rows, l->kernel, l->metric);
        if (!k) {
            k = &out->kernel_rows[out->nkernel_rows++];
            *k = *l;
            k->kernel = rg_xstrdup(l->kernel);
            k->launch = -1;
            continue;
        }
        k->calls++;
        k->value += l->value;
    }
    for (size_t i = 0; i < out->nkernel_rows; i++) {
        kmet_row *k = &out->kernel_rows[i];
        int j = 0;
        while (out->plan.metrics[j] != k->metric) j++;
        if (!out->plan.additive[j]) k->value /= k->calls;
    }
}

static int decode(size_t *nranges, size_t *dropped, rg_err *err)
{
    CUpti_RangeProfiler_DecodeData_Params d = {.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    d.pRangeProfilerObject = S.rp;
    CUptiResult r = cuptiRangeProfilerDecodeData(&d);
    if (r != CUPTI_SUCCESS) return cupti_fail(err, "cuptiRangeProfilerDecodeData", r);
    *dropped = d.numOfRangeDropped;
    CUpti_RangeProfiler_GetCounterDataInfo_Params info = {.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    info.pCounterDataImage = S.counter_data;
    info.counterDataImageSize = S.counter_size;
    r = cuptiRangeProfilerGetCounterDataInfo(&info);
    if (r != CUPTI_SUCCESS) return cupti_fail(err, "cuptiRangeProfilerGetCounterDataInfo", r);
    *nranges = info.numTotalRanges;
    return 0;
}

static int end_session(kmet_result *out, rg_err *err)
{
    out->runs = S.runs;
    out->launches = S.launches;
    plan_copy(&S.plan, &out->plan);
    if (S.plan.nmetrics == 0) {
        note_append(out, "no requested metric can be collected");
        return 0;
    }
    size_t nranges = 0;
    if (decode(&nranges, &out->dropped_ranges, err)) return -1;
    if (out->dropped_ranges)
        note_append(out, "%zu kernel launches beyond max_launches=%d were not measured",
                    out->dropped_ranges, S.opt.max_launches);
    /* Ranges beyond max_launches are the last ones: the names of the first still apply. */
    size_t launched = nranges + out->dropped_ranges;
    if (!out->launches) out->launches = launched;
    if (!S.subscribed)
        note_append(out, "kernel names unavailable (launch callbacks: %s)", S.subscribe_error);
    else if (!naming_log(launched))
        note_append(out, "kernel names unavailable: %zu ranges, but the driver saw %zu launches and the "
                    "runtime %zu", launched, logs[LOG_DRIVER].n, logs[LOG_RUNTIME].n);
    if (fill_launch_rows(out, nranges, launched, err)) return -1;
    fill_kernel_rows(out);
    return 0;
}

int kmet_end(kmet_result *out, rg_err *err)
{
    RG_ASSERT(out);
    memset(out, 0, sizeof *out);
    if (S.state == IDLE) return rg_errf(err, "kmet_end: no collection is running");
    if (S.state != COLLECTED) {
        session_close();
        return rg_errf(err, "kmet_end: kmet_run was not called");
    }
    int rc = end_session(out, err);
    session_close();
    if (rc) kmet_free(out);
    return rc;
}

void kmet_free(kmet_result *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->nlaunch_rows; i++) free(r->launch_rows[i].kernel);
    for (size_t i = 0; i < r->nkernel_rows; i++) free(r->kernel_rows[i].kernel);
    free(r->launch_rows);
    free(r->kernel_rows);
    kmet_plan_free(&r->plan);
    memset(r, 0, sizeof *r);
}

int kmet_collect(const char *const *metrics, int n, const kmet_options *opt, kmet_run_fn run,
                 void *ctx, kmet_result *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = kmet_begin_with(metrics, n, opt, err);
    if (rc) return rc;
    rc = kmet_run(run, ctx, err);
    if (rc) return rc;
    return kmet_end(out, err);
}

const kmet_row *kmet_find(const kmet_result *r, const char *kernel, const char *metric)
{
    return find_row(r->kernel_rows, r->nkernel_rows, kernel, metric);
}
