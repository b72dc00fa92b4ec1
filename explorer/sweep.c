/* The sweep driver (`explore --model M ...`): enumerates the design space, measures each variant
 * in a worker process, records every outcome, resumes, shows progress and reports the best. */
#include "explorer/sweep.h"
#include "explorer/costmodel.h"
#include "common/json.h"
#include "datasets/dataset.h"
#include "runtime/memplan.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_BEST_DIR "results/best"

/* ---------------------------------------------------------------- signals ---- */

/* First SIGINT/SIGTERM: finish and record the variant in flight, then stop. Second: abandon it. */
static volatile sig_atomic_t g_stop, g_abort;
static int g_session_open;

static void say(const char *m)
{
    ssize_t k = write(STDERR_FILENO, m, strlen(m));
    (void)k;
}

static void on_signal(int sig)
{
    (void)sig;
    if (g_stop) {
        g_abort = 1;
        say("\nexplore: interrupted again: abandoning the variant in flight\n");
    } else {
        g_stop = 1;
        say("\nexplore: interrupted: finishing the variant in flight (interrupt again to abandon it)\n");
    }
}

/* ---------------------------------------------------------------- options ---- */

void xs_options_default(xs_options *o)
{
    memset(o, 0, sizeof *o);
    o->space = "default";
    o->db = RS_DEFAULT_DB;
    o->best_dir = DEFAULT_BEST_DIR;
    o->measure.warmup = 3;
    o->measure.repeats = 10;
    o->measure.tolerance = 0;   /* the backend's own, per task */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    o->measure.compile_threads = cpus > 0 ? (int)cpus : 1;
    o->timeout_s = 60;
    o->slow_factor = 4;
}

static int is_sim(const char *spec) { return spec && !strncmp(spec, "sim", 3) && (!spec[3] || spec[3] == ':'); }

/* Runs in the worker process: the only place a backend is ever made. */
static xb_backend *make_backend(const char *spec, void *ctx, rg_err *err)
{
    const xs_options *o = ctx;
    if (is_sim(spec)) return xb_sim_backend(spec, err);
    if (!o->gpu_backend) {
        rg_errf(err, "this program was built without the GPU backend (--backend sim:... simulates one)");
        return NULL;
    }
    return o->gpu_backend(err);
}

/* A misspelt backend fails here, before any worker starts. */
static int check_backend_spec(const char *spec, rg_err *err)
{
    if (!spec || !strcmp(spec, "gpu")) return 0;
    if (!is_sim(spec)) return rg_errf(err, "--backend must be gpu or sim[:KEY=VAL,...] (got '%s')", spec);
    xb_backend *b = xb_sim_backend(spec, err);   /* parsing only: the simulator touches no device */
    if (!b) return -1;
    b->close(b);
    return 0;
}

static int check_problem(const xb_problem *p, rg_err *err)
{
    if (!p->model[0]) return rg_errf(err, "no model given (--model rgcn, rgat, hgt or a .rgnn file)");
    if (!p->dataset[0]) return rg_errf(err, "no dataset given");
    if (strcmp(p->task, "infer") && strcmp(p->task, "train"))
        return rg_errf(err, "task must be infer or train (got '%s')", p->task);
    if (p->dim_in < 1 || p->dim_out < 1 || p->dim_in > 65536 || p->dim_out > 65536)
        return rg_errf(err, "dims must be positive (got %d,%d)", p->dim_in, p->dim_out);
    if (p->heads < 1 || p->heads > 1024) return rg_errf(err, "heads must be at least 1 (got %d)", p->heads);
    return 0;
}

/* ---------------------------------------------------------------- names ---- */

uint64_t xs_variant_hash(const cg_config *c, const xb_problem *p)
{
    char *cfg = cfg_to_string(c);
    char *key = rg_xasprintf("%s|model=%s|task=%s|dims=%d,%d|heads=%d", cfg, p->model, p->task, p->dim_in,
                             p->dim_out, p->heads);
    uint64_t h = rg_fnv1a64(key, strlen(key), RG_FNV_SEED);
    free(key);
    free(cfg);
    return h;
}

/* Letters, digits, '.', '-' and '_' kept; any other run of characters becomes one '_'. */
static void safe_name(const char *in, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = in; *p && n + 1 < cap; p++) {
        int ok = isalnum((unsigned char)*p) || *p == '.' || *p == '-' || *p == '_';
        if (ok) out[n++] = *p;
        else if (n == 0 || out[n - 1] != '_') out[n++] = '_';
    }
    while (n > 0 && out[n - 1] == '_') n--;
    if (n == 0 || (n <= 2 && out[0] == '.')) n = 0, out[n++] = 'x';   /* never "", "." or ".." */
    out[n] = 0;
}

/* A path's last component without a trailing '/' or the given extension. */
static void base_name(const char *in, const char *ext, char *out, size_t cap)
{
    char *copy = rg_xstrdup(in);
    size_t n = strlen(copy);
    while (n > 1 && copy[n - 1] == '/') copy[--n] = 0;
    const char *slash = strrchr(copy, '/'), *b = slash ? slash + 1 : copy;
    size_t len = strlen(b), el = strlen(ext);
    if (len > el && !strcmp(b + len - el, ext)) len -= el;
    snprintf(out, cap, "%.*s", (int)len, b);
    free(copy);
}

char *xs_best_path(const char *best_dir, const char *gpu_name, const xb_problem *p)
{
    char gpu[128], model[128], dataset[128], task[32], raw[256];
    safe_name(gpu_name, gpu, sizeof gpu);
    base_name(p->model, ".rgnn", raw, sizeof raw);
    safe_name(raw, model, sizeof model);
    base_name(p->dataset, "", raw, sizeof raw);
    safe_name(raw, dataset, sizeof dataset);
    safe_name(p->task, task, sizeof task);
    char dims[64] = "";
    if (p->dim_in != 64 || p->dim_out != 64 || p->heads != 1) {
        snprintf(dims, sizeof dims, "-%dx%d", p->dim_in, p->dim_out);
        if (p->heads != 1) snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "h%d", p->heads);
    }
    return rg_xasprintf("%s/%s/%s-%s-%s%s.json", best_dir ? best_dir : DEFAULT_BEST_DIR, gpu, model, dataset, task,
                        dims);
}

static void detect_commit(char *out, size_t cap)
{
    snprintf(out, cap, "unknown");
    FILE *f = popen("git rev-parse HEAD 2>/dev/null", "r");
    if (!f) return;
    char line[128] = "";
    if (fgets(line, sizeof line, f)) {
        size_t n = strspn(line, "0123456789abcdef");
        if (n >= 7 && (line[n] == '\n' || line[n] == 0)) snprintf(out, cap, "%.*s", (int)n, line);
    }
    pclose(f);
}

/* ---------------------------------------------------------------- session ---- */

struct xs_session {
    xs_options o;
    rs_store *store;
    char commit[128];
    int64_t run_id;        /* 0 until the first worker reports its device */
    char gpu[128];
    int sm;
    char *device_key;
    int failed;            /* the backend broke or the store failed */
    int interrupted;
    struct sigaction old_int, old_term;
};

xs_session *xs_open(const xs_options *o, rg_err *err)
{
    RG_ASSERT(!g_session_open);
    if (check_backend_spec(o->backend, err)) return NULL;
    xs_session *s = rg_xcalloc(1, sizeof *s);
    s->o = *o;
    if (!s->o.space) s->o.space = "default";
    if (!s->o.db) s->o.db = RS_DEFAULT_DB;
    if (!s->o.best_dir) s->o.best_dir = DEFAULT_BEST_DIR;
    if (!s->o.out) s->o.out = stdout;
    if (o->commit) snprintf(s->commit, sizeof s->commit, "%s", o->commit);
    else detect_commit(s->commit, sizeof s->commit);
    /* An existing store is opened (and checked) now; a new one is created only when the first
     * worker has reported its device (begin_run), so a sweep that stops for lack of a GPU
     * leaves no empty store behind. */
    if (access(s->o.db, F_OK) == 0 && !(s->store = rs_open(s->o.db, err))) {
        free(s);
        return NULL;
    }
    g_stop = g_abort = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;   /* no SA_RESTART: waits wake up at once */
    sigaction(SIGINT, &sa, &s->old_int);
    sigaction(SIGTERM, &sa, &s->old_term);
    g_session_open = 1;
    return s;
}

int xs_interrupted(const xs_session *s) { return s->interrupted || g_stop; }

int xs_close(xs_session *s, rg_err *err)
{
    if (!s) return 0;
    int rc = 0;
    if (s->run_id > 0) {
        rs_run_status st = xs_interrupted(s) ? RS_RUN_INTERRUPTED : s->failed ? RS_RUN_FAILED : RS_RUN_FINISHED;
        rc = rs_finish_run(s->store, s->run_id, st, err);
    }
    sigaction(SIGINT, &s->old_int, NULL);
    sigaction(SIGTERM, &s->old_term, NULL);
    g_session_open = 0;
    rs_close(s->store);
    free(s->device_key);
    free(s);
    return rc;
}

/* The run starts when the device is known (the worker reports it). */
static int begin_run(xs_session *s, const xw_info *info, rg_err *err)
{
    if (s->run_id > 0) {
        if (strcmp(s->gpu, info->gpu_name) || s->sm != info->sm)
            return rg_errf(err, "the worker reports %s (sm_%d) but this run measures %s (sm_%d)", info->gpu_name,
                           info->sm, s->gpu, s->sm);
        return 0;
    }
    if (!s->store && !(s->store = rs_open(s->o.db, err))) return -1;
    rs_run_info ri = {.commit = s->commit, .gpu_name = info->gpu_name, .sm = info->sm,
                      .driver_version = info->driver, .cuda_version = info->cuda, .cupti_version = info->cupti,
                      .command_line = s->o.command_line};
    int64_t id = rs_begin_run(s->store, &ri, err);
    if (id < 0) return -1;
    s->run_id = id;
    snprintf(s->gpu, sizeof s->gpu, "%s", info->gpu_name);
    s->sm = info->sm;
    s->device_key = rs_device_key(info->gpu_name, info->sm);
    return 0;
}

/* ---------------------------------------------------------------- progress ---- */

typedef struct progress {
    int mode;                  /* XS_PROGRESS_OFF, _LINES or _BAR */
    int done, total;           /* variants measured / to measure in this run */
    double started, spent;     /* measuring time so far, for the ETA */
    double best_ms;
    int bar_visible;
} progress;

static void progress_init(progress *pr, int mode, int total, double best_ms)
{
    memset(pr, 0, sizeof *pr);
    if (mode == XS_PROGRESS_AUTO) mode = isatty(STDERR_FILENO) ? XS_PROGRESS_BAR : XS_PROGRESS_LINES;
    pr->mode = mode;
    pr->total = total;
    pr->best_ms = best_ms;
}

static void format_eta(const progress *pr, char *buf, size_t cap)
{
    if (pr->done == 0) {
        snprintf(buf, cap, "?");
        return;
    }
    long s = lround(pr->spent / pr->done * (pr->total - pr->done));
    if (s >= 3600) snprintf(buf, cap, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else snprintf(buf, cap, "%ld:%02ld", s / 60, s % 60);
}

static void format_ms(double ms, char *buf, size_t cap)
{
    if (isnan(ms)) snprintf(buf, cap, "-");
    else snprintf(buf, cap, "%.4f ms", ms);
}

static void progress_clear(progress *pr)
{
    if (!pr->bar_visible) return;
    fputs("\r\033[K", stderr);
    pr->bar_visible = 0;
}

static void progress_draw_bar(progress *pr)
{
    enum { WIDTH = 24 };
    char eta[32], best[32], bar[WIDTH + 1];
    int fill = pr->total ? pr->done * WIDTH / pr->total : WIDTH;
    for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '#' : '.';
    bar[WIDTH] = 0;
    format_eta(pr, eta, sizeof eta);
    format_ms(pr->best_ms, best, sizeof best);
    fprintf(stderr, "\r\033[K[%s] %d/%d  ETA %s  best %s", bar, pr->done, pr->total, eta, best);
    fflush(stderr);
    pr->bar_visible = 1;
}

static void progress_variant(progress *pr, const char *cfg, const xb_result *r, double seconds)
{
    pr->done++;
    pr->spent += seconds;
    if (r->status == RS_OK && (isnan(pr->best_ms) || r->median_ms < pr->best_ms)) pr->best_ms = r->median_ms;
    if (pr->mode == XS_PROGRESS_BAR) {
        progress_draw_bar(pr);
    } else if (pr->mode == XS_PROGRESS_LINES) {
        char eta[32], best[32], ms[32];
        format_eta(pr, eta, sizeof eta);
        format_ms(pr->best_ms, best, sizeof best);
        format_ms(r->status == RS_OK ? r->median_ms : NAN, ms, sizeof ms);
        fprintf(stderr, "[%d/%d] %-14s %12s  %s  (best %s, ETA %s)\n", pr->done, pr->total, rs_status_name(r->status),
                ms, cfg, best, eta);
    }
}

/* The worker's own output goes above the bar. */
static void on_worker_output(void *ctx, const char *line)
{
    progress *pr = ctx;
    if (pr->mode == XS_PROGRESS_OFF) return;
    int had_bar = pr->bar_visible;
    progress_clear(pr);
    fprintf(stderr, "  worker: %s\n", line);
    if (had_bar) progress_draw_bar(pr);
}

/* ---------------------------------------------------------------- one problem ---- */

typedef struct job {
    xs_session *s;
    const xb_problem *p;
    xs_summary *sum;
    xw_info info;
    sp_space space;
    sp_point *pts;
    int n;
    char (*hex)[17];            /* variant hash of each point, as stored */
    int64_t *variant_id;
    int64_t dataset_id;
    int *todo, ntodo;           /* valid points to measure, in measuring order */
    int *invalid, ninvalid;     /* invalid points to record */
    progress pr;
} job;

static void summary_init(xs_summary *sum)
{
    memset(sum, 0, sizeof *sum);
    sum->best_ms = NAN;
}

static int register_variants(job *j, rg_err *err)
{
    j->hex = rg_xcalloc((size_t)j->n, sizeof *j->hex);
    j->variant_id = rg_xcalloc((size_t)j->n, sizeof *j->variant_id);
    for (int i = 0; i < j->n; i++) {
        uint64_t h = xs_variant_hash(&j->pts[i].cfg, j->p);
        rs_hash_hex(h, j->hex[i]);
        char *json = cfg_to_json(&j->pts[i].cfg);
        rs_variant v = {.config_json = json, .hash = h, .model = j->p->model, .task = j->p->task,
                        .dim_in = j->p->dim_in, .dim_out = j->p->dim_out, .heads = j->p->heads};
        j->variant_id[i] = rs_upsert_variant(j->s->store, &v, err);
        free(json);
        if (j->variant_id[i] < 0) return -1;
    }
    return 0;
}

/* Splits the points into already measured (skipped), invalid to record and valid to measure. */
static int plan_work(job *j, rg_err *err)
{
    j->todo = rg_xcalloc((size_t)j->n + 1, sizeof *j->todo);
    j->invalid = rg_xcalloc((size_t)j->n + 1, sizeof *j->invalid);
    for (int i = 0; i < j->n; i++) {
        if (!j->s->o.no_resume) {
            rs_resume_key k = {.device_key = j->s->device_key, .dataset = j->p->dataset, .commit = j->s->commit,
                               .config_hash = xs_variant_hash(&j->pts[i].cfg, j->p), .model = j->p->model,
                               .task = j->p->task, .dim_in = j->p->dim_in, .dim_out = j->p->dim_out,
                               .heads = j->p->heads};
            int done = rs_already_measured(j->s->store, &k, NULL, err);
            if (done < 0) return -1;
            if (done) {
                j->sum->skipped++;
                continue;
            }
        }
        if (j->pts[i].valid) j->todo[j->ntodo++] = i;
        else j->invalid[j->ninvalid++] = i;
    }
    if (j->s->o.order && j->ntodo > 1)
        j->s->o.order(j->s->o.order_ctx, j->p, &j->info.stats, j->pts, j->todo, j->ntodo);
    if (j->s->o.budget > 0 && j->ntodo > j->s->o.budget) j->ntodo = j->s->o.budget;
    return 0;
}

static void add_metric(rs_metric *m, size_t *n, const char *name, const char *unit, double v)
{
    if (!isfinite(v)) return;
    m[*n] = (rs_metric){.kernel = "", .name = name, .unit = unit, .value = v};
    (*n)++;
}

/* One transaction per outcome: a kill between two records loses nothing already recorded. */
static int record(job *j, int i, const xb_result *r, rg_err *err)
{
    rs_measurement m;
    rs_measurement_init(&m);
    m.run_id = j->s->run_id;
    m.dataset_id = j->dataset_id;
    m.variant_id = j->variant_id[i];
    m.device_key = j->s->device_key;
    m.commit = j->s->commit;
    m.status = r->status;
    m.evidence = r->evidence[0] ? r->evidence : NULL;
    m.validation_error = r->validation_error;
    m.median_ms = r->median_ms;
    m.min_ms = r->min_ms;
    m.max_ms = r->max_ms;
    m.stddev_ms = r->stddev_ms;
    m.repeats = r->repeats;
    m.peak_mem_bytes = r->peak_mem_bytes;
    m.gemm_ms = r->gemm_ms;
    m.traversal_ms = r->traversal_ms;
    m.other_ms = r->other_ms;
    rs_kernel_time k[XB_MAX_KERNELS];
    int nk = r->nkernels < XB_MAX_KERNELS ? r->nkernels : XB_MAX_KERNELS;
    for (int x = 0; x < nk; x++)
        k[x] = (rs_kernel_time){.kernel = r->kernels[x].name, .category = r->kernels[x].category,
                                .median_ns = r->kernels[x].median_ns, .spread_ns = r->kernels[x].spread_ns};
    rs_metric mt[XB_MAX_METRICS + 16]; /* + the fixed metrics added below */
    size_t nm = 0;
    for (int x = 0; x < r->nmetrics && x < XB_MAX_METRICS; x++)
        mt[nm++] = (rs_metric){.kernel = r->metrics[x].kernel, .name = r->metrics[x].name,
                               .unit = r->metrics[x].unit, .value = r->metrics[x].value};
    /* what the store has no column for: forward/backward split, compile time, IR counts */
    add_metric(mt, &nm, "fwd_ms", "ms", r->fwd_ms);
    add_metric(mt, &nm, "bwd_ms", "ms", r->bwd_ms);
    if (r->compile_s > 0) add_metric(mt, &nm, "compile_s", "s", r->compile_s);
    if (r->build_s > 0) add_metric(mt, &nm, "build_s", "s", r->build_s);
    if (r->setup_s > 0) add_metric(mt, &nm, "setup_s", "s", r->setup_s);
    if (r->validate_s > 0) add_metric(mt, &nm, "validate_s", "s", r->validate_s);
    if (r->time_s > 0) add_metric(mt, &nm, "time_s", "s", r->time_s);
    if (r->flops > 0) add_metric(mt, &nm, "flops", "flop", r->flops);
    if (r->bytes > 0) add_metric(mt, &nm, "bytes", "byte", r->bytes);
    if (r->atomics > 0) add_metric(mt, &nm, "atomics", "op", r->atomics);
    if (r->launches > 0) add_metric(mt, &nm, "launches", "", r->launches);
    if (rs_record(j->s->store, &m, k, (size_t)nk, mt, nm, err) < 0) return -1;
    j->sum->recorded++;
    j->sum->count[r->status]++;
    return 0;
}

static int record_invalid(job *j, rg_err *err)
{
    for (int x = 0; x < j->ninvalid; x++) {
        int i = j->invalid[x];
        xb_result *r = rg_xmalloc(sizeof *r);
        xb_result_init(r);
        r->status = RS_INVALID;
        snprintf(r->evidence, sizeof r->evidence, "%s", j->pts[i].reason);
        int rc = record(j, i, r, err);
        free(r);
        if (rc) return -1;
    }
    if (j->ninvalid && j->pr.mode != XS_PROGRESS_OFF)
        fprintf(stderr, "recorded %d invalid points of the space as invalid, with the reason\n", j->ninvalid);
    return 0;
}

/* Measures the planned variants; stops early on an interrupt. */
static int measure_all(job *j, xw_worker *w, rg_err *err)
{
    xb_result *r = rg_xmalloc(sizeof *r);
    int rc = 0;
    for (int x = 0; x < j->ntodo && !rc; x++) {
        if (g_stop) break;
        int i = j->todo[x];
        double t0 = rg_now();
        xb_options mo = j->s->o.measure;
        if (j->s->o.slow_factor > 0 && !isnan(j->pr.best_ms)) mo.slow_ms = j->s->o.slow_factor * j->pr.best_ms;
        int m = xw_measure(w, i, &j->pts[i].cfg, &mo, r, err);
        if (m == XW_ABORTED) break;
        if (m < 0) {
            rc = -1;
            break;
        }
        j->sum->measured++;
        rc = record(j, i, r, err);
        char *cfg = cfg_to_string(&j->pts[i].cfg);
        progress_variant(&j->pr, cfg, r, rg_now() - t0);
        free(cfg);
    }
    progress_clear(&j->pr);
    if (g_stop) j->sum->interrupted = j->s->interrupted = 1;
    j->sum->restarts = xw_restarts(w);
    free(r);
    return rc;
}

/* ---------------------------------------------------------------- report ---- */

typedef struct outcome {
    int point;
    rs_status status;
    double ms;
} outcome;

static int by_time(const void *a, const void *b)
{
    const outcome *x = a, *y = b;
    return (x->ms > y->ms) - (x->ms < y->ms);
}

/* The newest outcome of each point of the space for this problem, device and commit: what
 * this run measured and what earlier runs did (resume). */
static int collect_outcomes(job *j, outcome **out, int *n, rg_err *err)
{
    const xb_problem *p = j->p;
    rs_filter f = {.model = p->model, .dataset = p->dataset, .task = p->task, .device_key = j->s->device_key,
                   .commit = j->s->commit, .system = "generated"};
    rs_row *rows;
    size_t nrows;
    if (rs_query_measurements(j->s->store, &f, &rows, &nrows, err)) return -1;
    outcome *o = rg_xcalloc((size_t)j->n + 1, sizeof *o);
    int *latest = rg_xmalloc(((size_t)j->n + 1) * sizeof *latest);
    for (int i = 0; i < j->n; i++) latest[i] = -1;
    for (size_t r = 0; r < nrows; r++) {
        if (rows[r].dim_in != p->dim_in || rows[r].dim_out != p->dim_out || rows[r].heads != p->heads) continue;
        for (int i = 0; i < j->n; i++)
            if (!strcmp(rows[r].hash, j->hex[i])) latest[i] = (int)r;   /* rows come in id order */
    }
    int k = 0;
    for (int i = 0; i < j->n; i++) {
        if (latest[i] < 0) continue;
        const rs_row *r = &rows[latest[i]];
        o[k++] = (outcome){.point = i, .status = r->status, .ms = r->status == RS_OK ? r->median_ms : NAN};
    }
    free(latest);
    rs_rows_free(rows, nrows);
    *out = o;
    *n = k;
    return 0;
}

typedef struct layout_row {
    const char *label, *what;
    int compact, reorder;       /* -1: any */
} layout_row;

static const layout_row LAYOUTS[] = {
    {"U", "compact off, reorder off", 0, 0},
    {"C", "compact on,  reorder off", 1, 0},
    {"R", "compact off, reorder on ", 0, 1},
    {"C+R", "compact on,  reorder on ", 1, 1},
    {"best", "any layout", -1, -1},
};

/* Index into ok[] of the fastest outcome with the layout choices, or -1. ok[] is sorted. */
static int best_of_layout(const job *j, const outcome *ok, int nok, const layout_row *l)
{
    for (int k = 0; k < nok; k++) {
        const cg_config *c = &j->pts[ok[k].point].cfg;
        if ((l->compact < 0 || (c->compact != CFG_COMPACT_OFF) == l->compact) &&
            (l->reorder < 0 || c->reorder == l->reorder))
            return k;
    }
    return -1;
}

static void print_speedup(FILE *f, double u_ms, double ms)
{
    if (isnan(u_ms) || isnan(ms) || ms <= 0) fprintf(f, " %7s", "-");
    else fprintf(f, " %6.2fx", u_ms / ms);
}

static void print_report(job *j, const outcome *all, int nall, const outcome *ok, int nok)
{
    FILE *f = j->s->o.out;
    const xb_problem *p = j->p;
    const xs_summary *sum = j->sum;
    fprintf(f, "\n%s on %s (%s, dims %d,%d, %d head%s) on %s (sm_%d), commit %.12s\n", p->model, p->dataset, p->task,
            p->dim_in, p->dim_out, p->heads, p->heads == 1 ? "" : "s", j->info.gpu_name, j->info.sm, j->s->commit);
    fprintf(f, "space %s: %d points, %d valid, %d invalid; this run measured %d, skipped %d already measured%s",
            j->space.name, sum->points, sum->valid, sum->invalid, sum->measured, sum->skipped,
            sum->interrupted ? " (interrupted)" : "");
    if (sum->restarts) fprintf(f, ", restarted the worker %d time%s", sum->restarts, sum->restarts == 1 ? "" : "s");
    int count[RS_STATUS_COUNT] = {0};
    for (int k = 0; k < nall; k++) count[all[k].status]++;
    fprintf(f, "\noutcomes of %d/%d points:", nall, sum->points);
    for (int st = 0; st < RS_STATUS_COUNT; st++)
        if (count[st]) fprintf(f, " %d %s", count[st], rs_status_name((rs_status)st));
    fputc('\n', f);
    if (nok == 0) {
        fprintf(f, "no variant ran correctly: nothing to rank\n");
        return;
    }
    double u_ms = NAN;
    int u = best_of_layout(j, ok, nok, &LAYOUTS[0]);
    if (u >= 0) u_ms = ok[u].ms;
    fprintf(f, "\ntop %d of %d ok variants:\n  %4s %12s %8s  %s\n", nok < 10 ? nok : 10, nok, "rank", "median ms",
            "vs U", "config");
    for (int k = 0; k < nok && k < 10; k++) {
        char *cfg = cfg_to_string(&j->pts[ok[k].point].cfg);
        fprintf(f, "  %4d %12.4f", k + 1, ok[k].ms);
        print_speedup(f, u_ms, ok[k].ms);
        fprintf(f, "  %s\n", cfg);
        free(cfg);
    }
    fprintf(f, "\nlayouts (each with its best measured schedule):\n  %-5s %-25s %12s %8s  %s\n", "", "layout",
            "median ms", "vs U", "config");
    for (size_t l = 0; l < sizeof LAYOUTS / sizeof LAYOUTS[0]; l++) {
        int k = best_of_layout(j, ok, nok, &LAYOUTS[l]);
        fprintf(f, "  %-5s %-25s", LAYOUTS[l].label, LAYOUTS[l].what);
        if (k < 0) {
            fprintf(f, " %12s %8s  (none ran correctly)\n", "-", "-");
            continue;
        }
        char *cfg = cfg_to_string(&j->pts[ok[k].point].cfg);
        fprintf(f, " %12.4f", ok[k].ms);
        print_speedup(f, u_ms, ok[k].ms);
        fprintf(f, "  %s\n", cfg);
        free(cfg);
    }
}

/* Replaces path atomically: a reader sees the old file or the new one, never a part. */
static int write_atomically(const char *path, const char *text, rg_err *err)
{
    char *dir = rg_xstrdup(path), *slash = strrchr(dir, '/');
    int rc = 0;
    if (slash) {
        *slash = 0;
        rc = rg_mkdir_p(dir, err);
    }
    free(dir);
    if (rc) return -1;
    char *tmp = rg_xasprintf("%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) rc = rg_errf(err, "cannot write %s: %s", tmp, strerror(errno));
    if (!rc && (fputs(text, f) < 0 || fflush(f) != 0 || fsync(fileno(f)) != 0))
        rc = rg_errf(err, "cannot write %s: %s", tmp, strerror(errno));
    if (f && fclose(f) != 0 && !rc) rc = rg_errf(err, "cannot write %s: %s", tmp, strerror(errno));
    if (!rc && rename(tmp, path) != 0) rc = rg_errf(err, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (rc) remove(tmp);
    free(tmp);
    return rc;
}

static char *best_json(const job *j, const outcome *best, double u_ms, int nok)
{
    const xb_problem *p = j->p;
    const cg_config *c = &j->pts[best->point].cfg;
    char *cfg = cfg_to_string(c), *cfg_json = cfg_to_json(c);
    rgj_writer w = {0};
    rgj_begin_object(&w);
    rgj_kv_string(&w, "model", p->model);
    rgj_kv_string(&w, "dataset", p->dataset);
    rgj_kv_string(&w, "task", p->task);
    rgj_kv_int(&w, "dim_in", p->dim_in);
    rgj_kv_int(&w, "dim_out", p->dim_out);
    rgj_kv_int(&w, "heads", p->heads);
    rgj_kv_string(&w, "gpu", j->info.gpu_name);
    rgj_kv_int(&w, "sm", j->info.sm);
    rgj_kv_string(&w, "device_key", j->s->device_key);
    rgj_kv_string(&w, "commit", j->s->commit);
    rgj_kv_string(&w, "space", j->space.name);
    rgj_kv_int(&w, "variants_ok", nok);
    rgj_kv_string(&w, "hash", j->hex[best->point]);
    rgj_kv_double(&w, "median_ms", best->ms);
    rgj_kv_double(&w, "speedup_over_unoptimized", isnan(u_ms) ? NAN : u_ms / best->ms);
    rgj_kv_string(&w, "config_string", cfg);
    rgj_end_object(&w);
    char *head = rgj_finish(&w);
    size_t n = strlen(head);
    RG_ASSERT(n > 1 && head[n - 1] == '}');
    head[n - 1] = 0;   /* the canonical config object goes last, as cfg_to_json writes it */
    char *text = rg_xasprintf("%s,\"config\":%s}\n", head, cfg_json);
    free(head);
    free(cfg);
    free(cfg_json);
    return text;
}

static int report(job *j, rg_err *err)
{
    outcome *all;
    int nall;
    if (collect_outcomes(j, &all, &nall, err)) return -1;
    outcome *ok = rg_xcalloc((size_t)nall + 1, sizeof *ok);
    int nok = 0;
    for (int k = 0; k < nall; k++)
        if (all[k].status == RS_OK) ok[nok++] = all[k];
    qsort(ok, (size_t)nok, sizeof *ok, by_time);
    if (!j->s->o.quiet) print_report(j, all, nall, ok, nok);
    int rc = 0;
    if (nok > 0) {
        int u = best_of_layout(j, ok, nok, &LAYOUTS[0]);
        char *cfg = cfg_to_string(&j->pts[ok[0].point].cfg);
        snprintf(j->sum->best_config, sizeof j->sum->best_config, "%s", cfg);
        free(cfg);
        j->sum->best_ms = ok[0].ms;
        char *path = xs_best_path(j->s->o.best_dir, j->info.gpu_name, j->p);
        char *text = best_json(j, &ok[0], u >= 0 ? ok[u].ms : NAN, nok);
        rc = write_atomically(path, text, err);
        if (!rc) snprintf(j->sum->best_path, sizeof j->sum->best_path, "%s", path);
        if (!rc && !j->s->o.quiet) fprintf(j->s->o.out, "\nchosen config written to %s\n", path);
        free(text);
        free(path);
    }
    free(ok);
    free(all);
    return rc;
}

/* ---------------------------------------------------------------- driver ---- */

static void job_free(job *j)
{
    free(j->pts);
    free(j->hex);
    free(j->variant_id);
    free(j->todo);
    free(j->invalid);
}

static xw_worker *start_worker(job *j, xw_config *wc, rg_err *err)
{
    memset(wc, 0, sizeof *wc);
    wc->make_backend = make_backend;
    wc->backend_spec = j->s->o.backend;
    wc->backend_ctx = &j->s->o;
    wc->before_measure = is_sim(j->s->o.backend) ? xb_sim_set_index : NULL;
    wc->timeout_s = j->s->o.timeout_s;
    wc->abort_now = &g_abort;
    wc->on_output = on_worker_output;
    wc->ctx = &j->pr;
    return xw_start(wc, j->p, &j->info, err);
}

static int sweep_with_worker(job *j, xw_worker *w, rg_err *err)
{
    if (begin_run(j->s, &j->info, err)) return -1;
    j->sum->run_id = j->s->run_id;
    j->dataset_id = rs_upsert_dataset(j->s->store, j->p->dataset, &j->info.stats, err);
    if (j->dataset_id < 0 || register_variants(j, err) || plan_work(j, err)) return -1;
    progress_init(&j->pr, j->pr.mode, j->ntodo, NAN);
    if (j->pr.mode != XS_PROGRESS_OFF)
        fprintf(stderr, "%s on %s (%s): %d points, %d already measured, %d invalid to record, %d to measure%s\n",
                j->p->model, j->p->dataset, j->p->task, j->n, j->sum->skipped, j->ninvalid, j->ntodo,
                j->s->o.budget > 0 ? " (--budget)" : "");
    if (record_invalid(j, err)) return -1;
    return measure_all(j, w, err);
}

int xs_problem(xs_session *s, const xb_problem *p, xs_summary *sum, rg_err *err)
{
    summary_init(sum);
    if (check_problem(p, err)) return -1;
    job j;
    memset(&j, 0, sizeof j);
    j.s = s;
    j.p = p;
    j.sum = sum;
    if (sp_load(s->o.space, &j.space, err) || sp_enumerate(&j.space, &j.pts, &j.n, err)) return -1;
    sum->points = j.n;
    sum->valid = sp_count_valid(j.pts, j.n);
    sum->invalid = j.n - sum->valid;
    /* the mode is settled before the worker starts: its output is shown according to it */
    progress_init(&j.pr, s->o.quiet && s->o.progress == XS_PROGRESS_AUTO ? XS_PROGRESS_OFF : s->o.progress, 0, NAN);
    xw_config wc;
    xw_worker *w = start_worker(&j, &wc, err);
    if (!w) {
        if (g_stop) sum->interrupted = s->interrupted = 1;
        job_free(&j);
        return -1;
    }
    int rc = sweep_with_worker(&j, w, err);
    xw_stop(w);
    if (rc) s->failed = 1;
    /* what was measured is reported even when the sweep stopped early */
    rg_err rerr;
    if (s->run_id > 0 && j.hex && report(&j, rc ? &rerr : err) && !rc) rc = -1;
    job_free(&j);
    return rc;
}

int xs_sweep(const xs_options *o, const xb_problem *p, xs_summary *sum, rg_err *err)
{
    summary_init(sum);
    xs_session *s = xs_open(o, err);
    if (!s) return -1;
    int rc = xs_problem(s, p, sum, err);
    rg_err cerr;
    if (xs_close(s, rc ? &cerr : err) && !rc) rc = -1;
    return rc;
}

/* ---------------------------------------------------------------- command line ---- */

enum { FOR_ANY, FOR_PROBLEM, FOR_PLAN };

typedef struct cli_def {
    const char *name, *arg;     /* arg NULL: a flag */
    int where;
    const char *help;
} cli_def;

static const cli_def CLI[] = {
    {"model", "M", FOR_PROBLEM, "rgcn, rgat, hgt or a .rgnn file (required)"},
    {"dataset", "D", FOR_PROBLEM, "registry name, synth:..., or a dataset folder (default: aifb when the\n"
                                  "                      data dir has it, else synth:aifb)"},
    {"task", "T", FOR_PROBLEM, "infer (default) or train"},
    {"dims", "IN,OUT", FOR_PROBLEM, "feature sizes (default 64,64)"},
    {"heads", "H", FOR_PROBLEM, "attention heads (default 1)"},
    {"plan", "FILE", FOR_PLAN, "the matrix to sweep (required)"},
    {"shard", "I/N", FOR_PLAN, "run the jobs k with k % N == I (0 <= I < N); default from\n"
                               "                      SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT, else 0/1"},
    {"space", "S", FOR_ANY, "default, full, or a file of 'key: values' lines (default: default)"},
    {"budget", "N", FOR_ANY, "measure at most N variants per problem (default: all)"},
    {"db", "PATH", FOR_ANY, "results database (default " RS_DEFAULT_DB ")"},
    {"data-dir", "DIR", FOR_ANY, "dataset directory (default $RGNN_DATA, else datasets/data)"},
    {"mem-limit", "BYTES", FOR_ANY, "device memory cap, e.g. 24GB; variants above it are recorded as oom"},
    {"repeats", "N", FOR_ANY, "timed runs per variant (default 10)"},
    {"warmup", "N", FOR_ANY, "untimed runs before them (default 3)"},
    {"metrics", NULL, FOR_ANY, "collect CUPTI counters (DRAM bytes, SM throughput, IPC, occupancy, L2)"},
    {"timeout", "S", FOR_ANY, "seconds a variant may take before its worker is killed (default 60)"},
    {"slow-factor", "X", FOR_ANY, "a variant whose validation run is over X times the best so far is timed\n"
                                  "                      once, without warm-up (default 4; 0: time every variant fully)"},
    {"no-resume", NULL, FOR_ANY, "measure again what the database has for this device, dataset and commit"},
    {"cost-model", "FILE", FOR_ANY, "rank the variants with this fitted model first (explore fit), so that\n"
                                    "                      --budget keeps the most promising (default: results/costmodel.txt if present)"},
    {"no-cost-model", NULL, FOR_ANY, "enumeration order even when a cost model exists"},
    {"tolerance", "X", FOR_ANY, "relative L2 error allowed against the reference (default: the\n"
                                "                      backend's, 1e-5 for infer and 1e-4 for train)"},
    {"compile-threads", "N", FOR_ANY, "parallel NVRTC compiles (default: the CPU count)"},
    {"best-dir", "DIR", FOR_ANY, "where the chosen config is written (default " DEFAULT_BEST_DIR ")"},
    {"commit", "C", FOR_ANY, "commit to record (default: git rev-parse HEAD, else 'unknown')"},
    {"no-progress", NULL, FOR_ANY, "no progress output on stderr"},
    {"backend", "B", FOR_ANY, "gpu (default), or sim[:...] to test without a GPU (see below)"},
};
#define NCLI (sizeof CLI / sizeof CLI[0])

void xs_print_options(FILE *f)
{
    for (size_t i = 0; i < NCLI; i++) {
        if (CLI[i].where != FOR_ANY) continue;
        char lhs[40];
        snprintf(lhs, sizeof lhs, "--%s%s%s", CLI[i].name, CLI[i].arg ? " " : "", CLI[i].arg ? CLI[i].arg : "");
        fprintf(f, "  %-20s%s\n", lhs, CLI[i].help);
    }
}

static void print_some(FILE *f, int where)
{
    for (size_t i = 0; i < NCLI; i++) {
        if (CLI[i].where != where) continue;
        char lhs[40];
        snprintf(lhs, sizeof lhs, "--%s %s", CLI[i].name, CLI[i].arg);
        fprintf(f, "  %-20s%s\n", lhs, CLI[i].help);
    }
}

static void print_help(FILE *f, int plan_mode)
{
    if (plan_mode) {
        fprintf(f, "usage: explore sweep --plan FILE [--shard I/N] [sweep options]\n\n"
                   "Sweeps every job of the plan's matrix (models x datasets x tasks x dims x heads). The\n"
                   "plan file has 'key: values' lines (# comments): models, datasets, tasks (default\n"
                   "infer), dims (IN,OUT pairs or N for N,N; default 64,64), heads (default 1).\n"
                   "Shards split the jobs round-robin, one process per GPU or per Slurm array task;\n"
                   "with N > 1 and no --db each shard writes results/results.shard-I-of-N.db, and\n"
                   "`explore merge --into results/results.db results/results.shard-*.db` combines them.\n\n");
        print_some(f, FOR_PLAN);
    } else {
        fprintf(f, "usage: explore --model M [--dataset D] [--task infer|train] [--dims IN,OUT] [--heads H]\n"
                   "               [sweep options]\n\n"
                   "Measures every variant of the design space for one problem: each in a worker process\n"
                   "(a crash or hang is recorded as runtime_fault or timeout and the worker restarted),\n"
                   "each outcome recorded in the results database at once. Variants already measured\n"
                   "for the same device, dataset, commit and config are skipped (resume). Prints the\n"
                   "top configs and the U/C/R/C+R comparison, and writes the chosen config to\n"
                   "results/best/<gpu>/<model>-<dataset>-<task>.json.\n\n");
        print_some(f, FOR_PROBLEM);
    }
    fprintf(f, "sweep options:\n");
    xs_print_options(f);
    fprintf(f, "\n%s", xb_sim_help());
}

static int bad(const char *cmd, const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "%s: ", cmd);
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return 2;
}

static int parse_long(const char *text, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int parse_real(const char *text, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!*text || *end || errno || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

/* "IN,OUT" or "N" (square). */
static int parse_dims(const char *text, int *in, int *out)
{
    long a, b;
    const char *comma = strchr(text, ',');
    char first[32];
    snprintf(first, sizeof first, "%.*s", comma ? (int)(comma - text) : (int)strlen(text), text);
    if (parse_long(first, 1, 65536, &a) || parse_long(comma ? comma + 1 : first, 1, 65536, &b)) return -1;
    *in = (int)a;
    *out = (int)b;
    return 0;
}

static int apply_value(const char *cmd, const cli_def *d, const char *v, xs_cli *c)
{
    const char *n = d->name;
    long x;
    double r;
    xs_options *o = &c->opt;
    xb_problem *p = &c->problem;
    if (!strcmp(n, "cost-model")) {
        c->cost_model = v;
        return 0;
    }
    if (!strcmp(n, "model") || !strcmp(n, "dataset")) {
        char *dst = n[0] == 'm' ? p->model : p->dataset;
        if (!*v || strlen(v) >= sizeof p->model) return bad(cmd, "--%s: '%s' is empty or too long", n, v);
        snprintf(dst, sizeof p->model, "%s", v);
        if (n[0] == 'd') c->have_dataset = 1;
    } else if (!strcmp(n, "task")) {
        const char *t = !strcmp(v, "infer") || !strcmp(v, "inference") ? "infer"
                        : !strcmp(v, "train") || !strcmp(v, "training") ? "train" : NULL;
        if (!t) return bad(cmd, "--task must be infer or train (got '%s')%s", v, "");
        snprintf(p->task, sizeof p->task, "%s", t);
    } else if (!strcmp(n, "dims")) {
        if (parse_dims(v, &p->dim_in, &p->dim_out)) return bad(cmd, "--dims must be IN,OUT or N (got '%s')%s", v, "");
    } else if (!strcmp(n, "heads")) {
        if (parse_long(v, 1, 1024, &x)) return bad(cmd, "--heads must be a positive number (got '%s')%s", v, "");
        p->heads = (int)x;
    } else if (!strcmp(n, "plan")) c->plan = v;
    else if (!strcmp(n, "shard")) c->shard = v;
    else if (!strcmp(n, "space")) o->space = v;
    else if (!strcmp(n, "budget")) {
        if (parse_long(v, 1, 100000000, &x)) return bad(cmd, "--budget must be a positive number (got '%s')%s", v, "");
        o->budget = (int)x;
    } else if (!strcmp(n, "db")) {
        o->db = v;
        c->have_db = 1;
    }
    else if (!strcmp(n, "data-dir")) p->data_dir = v;
    else if (!strcmp(n, "mem-limit")) {
        rg_err err;
        if (mp_parse_bytes(v, &p->mem_limit, &err)) return bad(cmd, "--mem-limit: %s%s", err.msg, "");
    } else if (!strcmp(n, "repeats") || !strcmp(n, "warmup") || !strcmp(n, "compile-threads")) {
        long lo = n[0] == 'w' ? 0 : 1;
        if (parse_long(v, lo, 100000, &x)) return bad(cmd, "--%s must be a number >= %s", n, lo ? "1" : "0");
        if (n[0] == 'r') o->measure.repeats = (int)x;
        else if (n[0] == 'w') o->measure.warmup = (int)x;
        else o->measure.compile_threads = (int)x;
    } else if (!strcmp(n, "timeout")) {
        if (parse_real(v, 0.001, 1e7, &r)) return bad(cmd, "--timeout must be a positive number of seconds (got '%s')%s", v, "");
        o->timeout_s = r;
    } else if (!strcmp(n, "slow-factor")) {
        if (parse_real(v, 0, 1e6, &r) || (r > 0 && r < 1))
            return bad(cmd, "--slow-factor must be 0 (off) or a number >= 1 (got '%s')%s", v, "");
        o->slow_factor = r;
    } else if (!strcmp(n, "tolerance")) {
        if (parse_real(v, 1e-12, 1e6, &r)) return bad(cmd, "--tolerance must be a positive number (got '%s')%s", v, "");
        o->measure.tolerance = r;
    } else if (!strcmp(n, "best-dir")) o->best_dir = v;
    else if (!strcmp(n, "commit")) o->commit = v;
    else if (!strcmp(n, "backend")) o->backend = v;
    else RG_DIE("option --%s has no handler", n);
    return 0;
}

static void apply_flag(const cli_def *d, xs_cli *c)
{
    if (!strcmp(d->name, "metrics")) c->opt.measure.metrics = 1;
    else if (!strcmp(d->name, "no-resume")) c->opt.no_resume = 1;
    else if (!strcmp(d->name, "no-progress")) c->opt.progress = XS_PROGRESS_OFF;
    else if (!strcmp(d->name, "no-cost-model")) c->no_cost_model = 1;
    else RG_DIE("flag --%s has no handler", d->name);
}

static const cli_def *find_def(const char *arg, size_t len)
{
    for (size_t i = 0; i < NCLI; i++)
        if (strlen(CLI[i].name) == len && !strncmp(arg, CLI[i].name, len)) return &CLI[i];
    return NULL;
}

static int unknown_option(const char *cmd, const char *arg)
{
    const char *name = arg + strspn(arg, "-");
    const char *best = NULL;
    int best_d = 3;
    for (size_t i = 0; i < NCLI; i++) {
        int d = rg_edit_distance(name, CLI[i].name);
        if (d < best_d) best_d = d, best = CLI[i].name;
    }
    if (best) fprintf(stderr, "%s: unknown option '%s' (did you mean --%s?)\n", cmd, arg, best);
    else fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", cmd, arg, cmd);
    return 2;
}

int xs_parse_cli(const char *cmd, int argc, char **argv, int plan_mode, xs_cli *c)
{
    memset(c, 0, sizeof *c);
    xs_options_default(&c->opt);
    snprintf(c->problem.task, sizeof c->problem.task, "infer");
    c->problem.dim_in = c->problem.dim_out = 64;
    c->problem.heads = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            print_help(stdout, plan_mode);
            return 1;
        }
        if (strncmp(a, "--", 2)) return bad(cmd, "unexpected argument '%s' (see %s --help)", a, cmd);
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        const cli_def *d = find_def(a + 2, len);
        if (!d) return unknown_option(cmd, a);
        if (d->where == (plan_mode ? FOR_PROBLEM : FOR_PLAN))
            return bad(cmd, plan_mode ? "--%s is not for a plan sweep: the plan file gives the problems%s"
                                      : "--%s only goes with `explore sweep --plan FILE`%s", d->name, "");
        if (!d->arg) {
            if (eq) return bad(cmd, "--%s takes no value%s", d->name, "");
            apply_flag(d, c);
            continue;
        }
        const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
        if (!v) return bad(cmd, "--%s needs a value%s", d->name, "");
        int rc = apply_value(cmd, d, v, c);
        if (rc) return rc;
    }
    rg_err err;
    if (check_backend_spec(c->opt.backend, &err)) return bad(cmd, "%s%s", err.msg, "");
    return 0;
}

/* aifb when the data dir has it (no download needed), else the synthetic graph with its sizes. */
static void choose_default_dataset(xb_problem *p)
{
    const ds_entry *e = ds_find("aifb");
    ds_options dopt = {.data_dir = p->data_dir};
    char *dir = e ? ds_entry_dir(e, &dopt) : NULL;
    char *missing = dir ? ds_missing_files(e, dir) : rg_xstrdup("aifb");
    if (!missing) {
        snprintf(p->dataset, sizeof p->dataset, "aifb");
        fprintf(stderr, "explore: no --dataset given: using aifb from %s\n", dir);
    } else {
        snprintf(p->dataset, sizeof p->dataset, "synth:aifb");
        fprintf(stderr, "explore: no --dataset given: using synth:aifb, a synthetic graph with aifb's sizes "
                        "(aifb itself is not in %s; --data-dir DIR points elsewhere)\n", ds_data_dir(&dopt));
    }
    free(missing);
    free(dir);
}

static char *join_args(int argc, char **argv)
{
    rg_str s = {0};
    rg_str_puts(&s, "explore");
    for (int i = 1; i < argc; i++) {
        rg_str_putc(&s, ' ');
        rg_str_puts(&s, argv[i]);
    }
    return s.s;
}

/* "no CUDA device: ..." stays the first thing on its line, as everywhere else. */
static void print_failure(const char *cmd, const rg_err *err)
{
    if (!strncmp(err->msg, "no CUDA device:", 15)) fprintf(stderr, "%s\n", err->msg);
    else fprintf(stderr, "%s: %s\n", cmd, err->msg);
}

#define XS_DEFAULT_COST_MODEL "results/costmodel.txt"

int xs_attach_cost_model(xs_cli *c, cm_model *model, rg_err *err)
{
    const char *path = c->cost_model;
    if (c->no_cost_model) return 0;
    if (!path) {
        if (!rg_file_exists(XS_DEFAULT_COST_MODEL)) return 0;
        path = XS_DEFAULT_COST_MODEL;
    }
    if (cm_load(path, model, err)) {
        rg_err_prefix(err, "cost model %s (--no-cost-model to sweep without it)", path);
        return -1;
    }
    c->opt.order = cm_sweep_order;
    c->opt.order_ctx = model;
    fprintf(stderr, "explore: ordering the variants with the cost model %s\n", path);
    return 1;
}

int xs_cli_main(int argc, char **argv, xs_gpu_backend_fn gpu_backend)
{
    xs_cli c;
    int rc = xs_parse_cli("explore", argc, argv, 0, &c);
    if (rc) return rc == 1 ? 0 : rc;
    if (!c.problem.model[0]) {
        fprintf(stderr, "explore: --model is required (rgcn, rgat, hgt or a .rgnn file); explore --help lists "
                        "the commands and options\n");
        return 2;
    }
    if (!c.have_dataset) choose_default_dataset(&c.problem);
    c.opt.gpu_backend = gpu_backend;
    rg_err err;
    cm_model model;
    int attached = xs_attach_cost_model(&c, &model, &err);
    if (attached < 0) {
        fprintf(stderr, "explore: %s\n", err.msg);
        return 2;
    }
    char *line = join_args(argc, argv);
    c.opt.command_line = line;
    xs_summary sum;
    rc = xs_sweep(&c.opt, &c.problem, &sum, &err);
    if (attached) cm_model_free(&model);
    free(line);
    if (rc) print_failure("explore", &err);
    if (sum.interrupted) return 130;
    return rc ? 1 : 0;
}
