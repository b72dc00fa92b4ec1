/* The sweep driver (`explore --model M ...`): enumerates the design space, measures each variant
 * in a worker process, records every outcome, resumes, shows progress and reports the best. */
#include "explorer/sweep.h"
#include "common/git.h"
#include "common/json.h"
#include "common/opts.h"
#include "codegen/pipeline.h"
#include "explorer/search.h"
#include "measure/rows.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    o->best_dir = XS_DEFAULT_BEST_DIR;
    o->measure.warmup = 3;
    o->measure.repeats = 10;
    o->measure.tolerance = 0;   /* the backend's own, per task */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    o->measure.compile_threads = cpus > 0 ? (int)cpus : 1;
    o->timeout_s = 60;
    o->slow_factor = 4;
    o->seed = 1;
}

int xs_check_strategy(const char *name, rg_err *err)
{
    if (!name || sr_strategy_find(name)) return 0;
    char names[256] = "";
    for (int i = 0; i < sr_nstrategies(); i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", sr_strategy_at(i)->name);
    return rg_errf(err, "--strategy must be one of %s (got '%s')", names, name);
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

int xs_check_backend(const char *spec, rg_err *err)
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
    /* the limits every command applies to its options (common/opts.h) */
    if (p->dim_in < 1 || p->dim_out < 1 || p->dim_in > RO_MAX_DIM || p->dim_out > RO_MAX_DIM)
        return rg_errf(err, "dims must be 1 to %d (got %d,%d)", RO_MAX_DIM, p->dim_in, p->dim_out);
    return ro_check_heads(p->heads, p->dim_out, err);
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
    return rg_xasprintf("%s/%s/%s-%s-%s%s.json", best_dir ? best_dir : XS_DEFAULT_BEST_DIR, gpu, model, dataset, task,
                        dims);
}

/* ---------------------------------------------------------------- session ---- */

struct xs_session {
    xs_options o;
    rs_store *store;       /* NULL until the first worker reports its device */
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
    if (xs_check_backend(o->backend, err) || xs_check_strategy(o->strategy, err)) return NULL;
    xs_session *s = rg_xcalloc(1, sizeof *s);
    s->o = *o;
    if (!s->o.space) s->o.space = "default";
    if (!s->o.db) s->o.db = RS_DEFAULT_DB;
    if (!s->o.best_dir) s->o.best_dir = XS_DEFAULT_BEST_DIR;
    if (!s->o.out) s->o.out = stdout;
    if (o->commit) snprintf(s->commit, sizeof s->commit, "%s", o->commit);
    else git_head_commit(s->commit, sizeof s->commit);
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
    /* a new store is created only now (see xs_open) */
    if (!s->store && !(s->store = rs_open(s->o.db, err))) return -1;
    rs_run_info ri = {.commit = s->commit, .gpu_name = info->gpu_name, .sm = info->sm,
                      .driver_version = info->driver, .cuda_version = info->cuda, .cupti_version = info->cupti,
                      .command_line = s->o.command_line, .group = s->o.group};
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
    double t0;                 /* the problem's start; shown as elapsed with show_elapsed */
    int show_elapsed;          /* a search or a time limit: the elapsed time matters */
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
    if (pr->show_elapsed) fprintf(stderr, "  elapsed %.0f s", rg_now() - pr->t0);
    fflush(stderr);
    pr->bar_visible = 1;
}

/* ms: the variant's time as the sweep ranks it (xs_options.rank), NaN when it has none. */
static void progress_variant(progress *pr, const char *cfg, const xb_result *r, double ms, double seconds)
{
    pr->done++;
    pr->spent += seconds;
    if (isfinite(ms) && (isnan(pr->best_ms) || ms < pr->best_ms)) pr->best_ms = ms;
    if (pr->mode == XS_PROGRESS_BAR) {
        progress_draw_bar(pr);
    } else if (pr->mode == XS_PROGRESS_LINES) {
        char eta[32], best[32], shown[32];
        format_eta(pr, eta, sizeof eta);
        format_ms(pr->best_ms, best, sizeof best);
        format_ms(ms, shown, sizeof shown);
        char elapsed[48] = "";
        if (pr->show_elapsed) snprintf(elapsed, sizeof elapsed, ", elapsed %.1f s", rg_now() - pr->t0);
        fprintf(stderr, "[%d/%d] %-14s %12s  %s  (best %s%s, ETA %s)\n", pr->done, pr->total,
                rs_status_name(r->status), shown, cfg, best, elapsed, eta);
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
    double t0;                  /* the problem's start (--time-limit) */
    const char *strategy;       /* the search in use: --strategy, or the default one of a large space */
    int budget;                 /* its budget or the measuring order's: --budget, or the default's */
} job;

/* Point i's config: points hold none (sp_point), it is rebuilt from the space. */
static cg_config point_config(const job *j, int i)
{
    cg_config c;
    sp_config_at(&j->space, i, &c);
    return c;
}

static char *point_string(const job *j, int i)
{
    cg_config c = point_config(j, i);
    return cfg_to_string(&c);
}

/* A variant's time as the sweep ranks it: its kernel sum, or under XS_RANK_SPAN its run's span (NaN
 * when none is stored). NaN when it did not run correctly. */
static double rank_time(const job *j, rs_status status, double sum_ms, double span_ms)
{
    if (status != RS_OK) return NAN;
    return j->s->o.rank == XS_RANK_SPAN ? span_ms : sum_ms;
}

/* rank_time of a measurement this run made. */
static double ranked_ms(const job *j, const xb_result *r)
{
    return rank_time(j, r->status, r->median_ms, xb_run_metric(r, "span_ms"));
}

static void summary_init(xs_summary *sum)
{
    memset(sum, 0, sizeof *sum);
    sum->best_ms = NAN;
    sum->search_best_ms = NAN;
}

/* The problem's wall time has reached --time-limit. */
static int time_up(const job *j)
{
    return j->s->o.time_limit_s > 0 && rg_now() - j->t0 >= j->s->o.time_limit_s;
}

/* Only a sweep of the whole space records its invalid points (with the reason): a search or a sweep
 * under --budget measures a few of them, and recording the default space's half a million invalid
 * points (in inference) took longer than measuring those few. */
static int records_invalid(const job *j) { return !j->strategy && j->budget <= 0; }

/* Each point's variant hash, computed once: the resume check, the store and the report use it. An
 * invalid point's only where it is recorded (its hash stays ""): a search of a space of millions of
 * points would spend most of its start printing configs that it never measures. */
static void hash_points(job *j)
{
    j->hex = rg_xcalloc((size_t)j->n, sizeof *j->hex);
    j->variant_id = rg_xcalloc((size_t)j->n, sizeof *j->variant_id);
    for (int i = 0; i < j->n; i++) {
        if (!j->pts[i].valid && !records_invalid(j)) continue;
        cg_config c = point_config(j, i);
        rs_hash_hex(xs_variant_hash(&c, j->p), j->hex[i]);
    }
}

/* The store's id of point i's variant, stored on first use: a search of the default space records
 * a few thousand of its 829,440 points, and registering them all first took most of its minute. */
static int64_t variant_of(job *j, int i, rg_err *err)
{
    if (j->variant_id[i] > 0) return j->variant_id[i];
    cg_config c = point_config(j, i);
    char *json = cfg_to_json(&c);
    rs_variant v = {.config_json = json, .hash = strtoull(j->hex[i], NULL, 16), .model = j->p->model,
                    .task = j->p->task, .dim_in = j->p->dim_in, .dim_out = j->p->dim_out, .heads = j->p->heads};
    j->variant_id[i] = rs_upsert_variant(j->s->store, &v, err);
    free(json);
    return j->variant_id[i];
}

static int cmp_hex(const void *a, const void *b) { return strcmp(a, b); }

/* Splits the points into already measured (skipped), invalid to record and valid to measure. */
static int plan_work(job *j, rg_err *err)
{
    j->todo = rg_xcalloc((size_t)j->n + 1, sizeof *j->todo);
    j->invalid = rg_xcalloc((size_t)j->n + 1, sizeof *j->invalid);
    char(*done)[17] = NULL;
    size_t ndone = 0;
    if (!j->s->o.no_resume) {
        rs_resume_key k = {.device_key = j->s->device_key, .dataset = j->p->dataset, .commit = j->s->commit,
                           .model = j->p->model, .task = j->p->task, .dim_in = j->p->dim_in,
                           .dim_out = j->p->dim_out, .heads = j->p->heads};
        if (rs_measured_hashes(j->s->store, &k, &done, &ndone, err)) return -1;
    }
    for (int i = 0; i < j->n; i++) {
        if (ndone && bsearch(j->hex[i], done, ndone, sizeof *done, cmp_hex)) {
            j->sum->skipped++;
            continue;
        }
        if (j->pts[i].valid) j->todo[j->ntodo++] = i;
        else j->invalid[j->ninvalid++] = i;
    }
    free(done);
    if (j->strategy) return 0;   /* a search picks its own points (search below) */
    if (j->s->o.order && j->ntodo > 1)
        j->s->o.order(j->s->o.order_ctx, j->p, &j->info.stats, &j->space, j->todo, j->ntodo);
    if (j->budget > 0 && j->ntodo > j->budget) j->ntodo = j->budget;
    return 0;
}

/* Takes point i for this run, so that concurrent sweeps of the store measure it once: 1 when
 * it is ours to measure or record, 0 when another sweep measured it meanwhile or is measuring
 * it now (counted as skipped), -1 on error. */
static int claim(job *j, int i, rg_err *err)
{
    if (variant_of(j, i, err) < 0) return -1;
    rs_claim_key k = {.run_id = j->s->run_id, .variant_id = j->variant_id[i], .dataset_id = j->dataset_id,
                      .device_key = j->s->device_key, .commit = j->s->commit};
    int c = rs_claim(j->s->store, &k, j->s->o.no_resume, err);
    if (c < 0) return -1;
    if (c == RS_CLAIMED) return 1;
    j->sum->skipped++;
    j->sum->concurrent++;
    return 0;
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
    if (xrow_record(j->s->store, &m, r, err) < 0) return -1;
    j->sum->recorded++;
    j->sum->count[r->status]++;
    return 0;
}

static int record_invalid(job *j, rg_err *err)
{
    for (int x = 0; x < j->ninvalid; x++) {
        int i = j->invalid[x];
        int mine = claim(j, i, err);
        if (mine <= 0) {
            if (mine < 0) return -1;
            continue;
        }
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

enum { MP_MEASURED, MP_TAKEN, MP_ABORTED, MP_FAILED = -1 };

/* Claims, measures and records point i, its outcome in *r: MP_MEASURED; MP_TAKEN when a
 * concurrent sweep has it; MP_ABORTED on a second interrupt; MP_FAILED when the backend broke or
 * the store failed (err says why). */
static int measure_point(job *j, xw_worker *w, int i, xb_result *r, rg_err *err)
{
    int mine = claim(j, i, err);
    if (mine <= 0) return mine < 0 ? MP_FAILED : MP_TAKEN;
    double t0 = rg_now();
    xb_options mo = j->s->o.measure;
    if (j->s->o.slow_factor > 0 && !isnan(j->pr.best_ms)) mo.slow_ms = j->s->o.slow_factor * j->pr.best_ms;
    cg_config c = point_config(j, i);
    int m = xw_measure(w, i, &c, &mo, r, err);
    if (m == XW_ABORTED) return MP_ABORTED;
    if (m < 0) return MP_FAILED;
    j->sum->measured++;
    int rc = record(j, i, r, err);
    char *cfg = cfg_to_string(&c);
    progress_variant(&j->pr, cfg, r, ranked_ms(j, r), rg_now() - t0);
    free(cfg);
    return rc ? MP_FAILED : MP_MEASURED;
}

/* Measures the planned variants; stops early on an interrupt or at the time limit. */
static int measure_all(job *j, xw_worker *w, rg_err *err)
{
    xb_result *r = rg_xmalloc(sizeof *r);
    int rc = 0;
    for (int x = 0; x < j->ntodo && !rc; x++) {
        if (g_stop) break;
        int m = measure_point(j, w, j->todo[x], r, err);
        if (m == MP_TAKEN) {
            j->pr.total--;
            continue;
        }
        if (m == MP_ABORTED) break;
        if (m == MP_FAILED) rc = -1;
        else if (x + 1 < j->ntodo && time_up(j)) {
            j->sum->stopped_by = "time limit";
            break;
        }
    }
    progress_clear(&j->pr);
    if (j->sum->stopped_by && j->pr.mode != XS_PROGRESS_OFF)
        fprintf(stderr, "time limit of %g s reached after %d variants\n", j->s->o.time_limit_s, j->pr.done);
    if (g_stop) j->sum->interrupted = j->s->interrupted = 1;
    j->sum->restarts = xw_restarts(w);
    free(r);
    return rc;
}

/* ---------------------------------------------------------------- report ---- */

typedef struct outcome {
    int point;
    rs_status status;
    double ms;                  /* as the sweep ranks (rank_time), NaN unless ok */
    double sum_ms, span_ms;     /* the kernel sum and the span, NaN when none */
} outcome;

static int by_time(const void *a, const void *b)
{
    const outcome *x = a, *y = b;
    return (x->ms > y->ms) - (x->ms < y->ms);
}

typedef struct point_hash {
    const char *hex;
    int i;
} point_hash;

static int cmp_point_hash(const void *a, const void *b)
{
    return strcmp(((const point_hash *)a)->hex, ((const point_hash *)b)->hex);
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
    /* the points by hash, so that each row finds its point in log time: a search over the default
     * space reads back tens of thousands of rows (its invalid points) against as many points */
    point_hash *by_hash = rg_xmalloc(((size_t)j->n + 1) * sizeof *by_hash);
    long nh = 0;
    for (int i = 0; i < j->n; i++)
        if (j->hex[i][0]) by_hash[nh++] = (point_hash){j->hex[i], i};   /* hash_points left the rest unhashed */
    qsort(by_hash, (size_t)nh, sizeof *by_hash, cmp_point_hash);
    for (size_t r = 0; r < nrows; r++) {
        if (rows[r].dim_in != p->dim_in || rows[r].dim_out != p->dim_out || rows[r].heads != p->heads) continue;
        point_hash key = {rows[r].hash, -1};
        const point_hash *hit = bsearch(&key, by_hash, (size_t)nh, sizeof *by_hash, cmp_point_hash);
        if (!hit) continue;
        /* every point of that hash (a space may list one config twice); rows come in id order, so
         * the last row of a point stands */
        long lo = hit - by_hash, hi = lo;
        while (lo > 0 && !strcmp(by_hash[lo - 1].hex, key.hex)) lo--;
        while (hi + 1 < nh && !strcmp(by_hash[hi + 1].hex, key.hex)) hi++;
        for (long k = lo; k <= hi; k++) latest[by_hash[k].i] = (int)r;
    }
    free(by_hash);
    int k = 0;
    for (int i = 0; i < j->n; i++) {
        if (latest[i] < 0) continue;
        const rs_row *r = &rows[latest[i]];
        o[k++] = (outcome){.point = i, .status = r->status, .ms = rank_time(j, r->status, r->median_ms, r->span_ms),
                           .sum_ms = r->median_ms, .span_ms = r->span_ms};
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
        cg_config c = point_config(j, ok[k].point);
        if ((l->compact < 0 || (c.compact != CFG_COMPACT_OFF) == l->compact) &&
            (l->reorder < 0 || c.reorder == l->reorder))
            return k;
    }
    return -1;
}

static void print_speedup(FILE *f, double u_ms, double ms)
{
    if (isnan(u_ms) || isnan(ms) || ms <= 0) fprintf(f, " %7s", "-");
    else fprintf(f, " %6.2fx", u_ms / ms);
}

/* The valid points with no outcome in the store: a search records no invalid point, and those
 * never bear on the chosen config. */
static int valid_without_outcome(const job *j, const outcome *all, int nall)
{
    int with = 0;
    for (int k = 0; k < nall; k++) with += j->pts[all[k].point].valid;
    return j->sum->valid - with;
}

/* A table row's times: the ranked one, and under XS_RANK_SPAN the kernel sum beside it. */
static void print_times(FILE *f, const job *j, double u_ms, const outcome *o)
{
    fprintf(f, " %12.4f", o->ms);
    if (j->s->o.rank == XS_RANK_SPAN) fprintf(f, " %12.4f", o->sum_ms);
    print_speedup(f, u_ms, o->ms);
}

/* The header of a table's time columns (print_times). */
static void print_time_heads(FILE *f, const job *j)
{
    if (j->s->o.rank == XS_RANK_SPAN) fprintf(f, " %12s %12s %8s", "span ms", "kernel sum", "vs U");
    else fprintf(f, " %12s %8s", "median ms", "vs U");
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
    int missing = valid_without_outcome(j, all, nall);
    if (missing > 0)
        fprintf(f, "PARTIAL: %d of %d valid points have no outcome yet; the ranking and the chosen config are of the "
                   "measured part only (run the same command again to complete it)\n", missing, sum->valid);
    if (sum->concurrent)
        fprintf(f, "%d of the skipped variants were measured by a concurrent sweep of this store\n", sum->concurrent);
    int unranked = count[RS_OK] - nok;   /* ok, but no span stored to rank by */
    if (unranked > 0)
        fprintf(f, "%d ok variant%s without a stored span left out of the ranking (--rank span)\n", unranked,
                unranked == 1 ? "" : "s");
    if (nok == 0) {
        fprintf(f, "no variant ran correctly%s: nothing to rank\n", unranked ? " with a span" : "");
        return;
    }
    double u_ms = NAN;
    int u = best_of_layout(j, ok, nok, &LAYOUTS[0]);
    if (u >= 0) u_ms = ok[u].ms;
    fprintf(f, "\ntop %d of %d ok variants%s:\n  %4s", nok < 10 ? nok : 10, nok,
            j->s->o.rank == XS_RANK_SPAN ? ", ranked by the run's span" : "", "rank");
    print_time_heads(f, j);
    fprintf(f, "  config\n");
    for (int k = 0; k < nok && k < 10; k++) {
        char *cfg = point_string(j, ok[k].point);
        fprintf(f, "  %4d", k + 1);
        print_times(f, j, u_ms, &ok[k]);
        fprintf(f, "  %s\n", cfg);
        free(cfg);
    }
    fprintf(f, "\nlayouts (each with its best measured schedule):\n  %-5s %-25s", "", "layout");
    print_time_heads(f, j);
    fprintf(f, "  config\n");
    for (size_t l = 0; l < sizeof LAYOUTS / sizeof LAYOUTS[0]; l++) {
        int k = best_of_layout(j, ok, nok, &LAYOUTS[l]);
        fprintf(f, "  %-5s %-25s", LAYOUTS[l].label, LAYOUTS[l].what);
        if (k < 0) {
            fprintf(f, " %12s", "-");
            if (j->s->o.rank == XS_RANK_SPAN) fprintf(f, " %12s", "-");
            fprintf(f, " %8s  (none ran correctly)\n", "-");
            continue;
        }
        char *cfg = point_string(j, ok[k].point);
        print_times(f, j, u_ms, &ok[k]);
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

static char *best_json(const job *j, const outcome *best, double u_ms, int nok, int nall)
{
    const xb_problem *p = j->p;
    cg_config c = point_config(j, best->point);
    char *cfg = cfg_to_string(&c), *cfg_json = cfg_to_json(&c);
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
    /* the best of a part of the space (an interrupted sweep, a --budget) is no final answer */
    rgj_key(&w, "partial");
    rgj_bool(&w, nall < j->n);
    rgj_kv_int(&w, "points_with_outcome", nall);
    rgj_kv_int(&w, "points", j->n);
    rgj_kv_string(&w, "hash", j->hex[best->point]);
    rgj_kv_string(&w, "ranked_by", j->s->o.rank == XS_RANK_SPAN ? "span" : "kernel sum");
    rgj_kv_double(&w, "median_ms", best->sum_ms);
    rgj_kv_double(&w, "span_ms", best->span_ms);
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
        if (all[k].status == RS_OK && isfinite(all[k].ms)) ok[nok++] = all[k];
    qsort(ok, (size_t)nok, sizeof *ok, by_time);
    j->sum->partial = valid_without_outcome(j, all, nall) > 0;
    if (!j->s->o.quiet) print_report(j, all, nall, ok, nok);
    int rc = 0;
    if (nok > 0) {
        int u = best_of_layout(j, ok, nok, &LAYOUTS[0]);
        char *cfg = point_string(j, ok[0].point);
        snprintf(j->sum->best_config, sizeof j->sum->best_config, "%s", cfg);
        free(cfg);
        j->sum->best_ms = ok[0].ms;
        char *path = xs_best_path(j->s->o.best_dir, j->info.gpu_name, j->p);
        char *text = best_json(j, &ok[0], u >= 0 ? ok[u].ms : NAN, nok, nall);
        rc = write_atomically(path, text, err);
        if (!rc) snprintf(j->sum->best_path, sizeof j->sum->best_path, "%s", path);
        if (!rc && !j->s->o.quiet)
            fprintf(j->s->o.out, "\nchosen config%s written to %s\n", j->sum->partial ? " (PARTIAL)" : "", path);
        free(text);
        free(path);
    }
    free(ok);
    free(all);
    return rc;
}

/* ---------------------------------------------------------------- a search ---- */

/* A strategy of explorer/search.h on the space's valid points: each evaluation is the sweep's
 * measurement of a point (worker, validation, rows), or its outcome read back from the store
 * when this device and commit have one (resume); either costs a unit. */
typedef struct live {
    job *j;
    xw_worker *w;
    const int *cand;            /* the search's point k is point cand[k] of the space */
    outcome *stored;            /* the store's outcomes (collect_outcomes) */
    int *stored_at;             /* [n]: index into stored, -1: none */
    xb_result *r;
    rg_err *err;
    int failed;                 /* the backend broke or the store failed */
    const char *stop;           /* why the evaluator stopped the search; NULL: it did not */
    int best;                   /* point of the best time found; -1: none */
} live;

/* The store's outcomes of the problem's points, for reading back instead of measuring. */
static int load_stored(live *L, rg_err *err)
{
    int n;
    free(L->stored);
    L->stored = NULL;
    for (int i = 0; i < L->j->n; i++) L->stored_at[i] = -1;
    if (collect_outcomes(L->j, &L->stored, &n, err)) return -1;
    for (int k = 0; k < n; k++) L->stored_at[L->stored[k].point] = k;
    return 0;
}

/* Point i's time from the store; NaN when it failed, or when a concurrent sweep is still
 * measuring it. */
static int read_back(live *L, int i, double *ms)
{
    job *j = L->j;
    if (L->stored_at[i] < 0 && load_stored(L, L->err)) return -1;   /* measured meanwhile by another sweep */
    j->sum->read_back++;
    if (L->stored_at[i] < 0) {   /* another sweep is measuring it now: not measurable for this search */
        j->pr.done++;
        return 0;
    }
    const outcome *o = &L->stored[L->stored_at[i]];
    xb_result_init(L->r);
    L->r->status = o->status;
    L->r->median_ms = o->sum_ms;
    *ms = o->ms;
    char *cfg = point_string(j, i), *shown = rg_xasprintf("(stored) %s", cfg);
    progress_variant(&j->pr, shown, L->r, o->ms, 0);
    free(shown);
    free(cfg);
    return 0;
}

static sr_eval_status live_eval(void *ctx, const sr_problem *p, int k, const cg_config *cfg, double *ms)
{
    (void)p, (void)cfg;
    live *L = ctx;
    job *j = L->j;
    *ms = NAN;
    if (g_stop) {
        L->stop = "interrupted";
        return SR_EVAL_STOP;
    }
    if (k >= 0) {   /* a config that is no valid point of the space is not measurable: it costs its unit */
        int i = L->cand[k];
        int m = L->stored_at[i] >= 0 ? MP_TAKEN : measure_point(j, L->w, i, L->r, L->err);
        if (m == MP_MEASURED) *ms = ranked_ms(j, L->r);
        if (m == MP_ABORTED) {
            L->stop = "interrupted";
            return SR_EVAL_STOP;
        }
        if (m == MP_FAILED || (m == MP_TAKEN && read_back(L, i, ms))) {
            L->stop = "error";
            L->failed = 1;
            return SR_EVAL_STOP;
        }
        if (isfinite(*ms) && (L->best < 0 || *ms < j->sum->search_best_ms)) {
            L->best = i;
            j->sum->search_best_ms = *ms;
        }
    } else {
        j->pr.done++;   /* counted, with no line: there is no variant to show */
    }
    j->sum->evaluations++;
    if (time_up(j)) {
        L->stop = "time limit";
        return SR_EVAL_LAST;
    }
    return SR_EVAL_NEXT;
}

/* The search's budget: --budget, at most the valid points. */
static int search_budget(const job *j)
{
    int valid = j->sum->valid;
    return j->budget > 0 && j->budget < valid ? j->budget : valid;
}

/* A live search's static list, as replay builds it (leave-one-dataset-out): the configs with the best
 * geomean on this problem's kind (model, task, dims, heads) on the store's OTHER datasets, for this
 * device. Without such problems in the store the list stays empty and `static` is a random search,
 * which the progress says. */
static void live_static_list(job *j, sr_problem *sp)
{
    if (strcmp(j->strategy, "static")) return;
    cm_filter f = {.model = j->p->model, .task = j->p->task, .device = j->s->device_key};
    cm_set set;
    rg_err e;
    if (cm_set_load(j->s->o.db, &f, &set, &e) == 0) {
        int *train = rg_xmalloc(((size_t)set.nproblems + 1) * sizeof *train);
        for (int k = 0; k < set.nproblems; k++) train[k] = strcmp(set.problems[k].dataset, j->p->dataset) != 0;
        if (cm_static_list(&set, train, &sp->prob, &sp->static_list, &sp->nstatic)) sp->nstatic = 0;
        free(train);
        cm_set_free(&set);
    }
    if (j->pr.mode != XS_PROGRESS_OFF)
        fprintf(stderr, "static list: %d config(s) from the store's other datasets%s\n", sp->nstatic,
                sp->nstatic ? "" : " (none: the search is random)");
}

/* Candidate k's config, rebuilt from its point number (search_problem's sr_config_fn). */
typedef struct cand_configs {
    const sp_space *space;
    const int *cand;
} cand_configs;

static void cand_config(void *ctx, int k, cg_config *out)
{
    const cand_configs *cc = ctx;
    sp_config_at(cc->space, cc->cand[k], out);
}

/* The search problem of the space's valid points, with the cost model's predictions; *cand (caller
 * frees) maps its point k to the space's point number. The configs the model reads are an array of
 * their own, freed before the search's points copy them again from their numbers: at the full
 * space's 3M valid points of RGAT training each copy is about a gigabyte. */
static void search_problem(job *j, int **cand, sr_problem *sp)
{
    const xs_options *o = &j->s->o;
    cg_config *cfgs = NULL;
    int nc = sp_valid_configs(&j->space, j->pts, j->n, o->predict ? &cfgs : NULL, cand);
    double *pred = NULL;
    if (o->predict && nc) {
        pred = rg_xmalloc((size_t)nc * sizeof *pred);
        for (int k = 0; k < nc; k++) pred[k] = NAN;
        o->predict(o->order_ctx, j->p, cfgs, nc, pred);
    }
    free(cfgs);
    cm_problem prob;
    memset(&prob, 0, sizeof prob);
    snprintf(prob.model, sizeof prob.model, "%s", j->p->model);
    snprintf(prob.task, sizeof prob.task, "%.7s", j->p->task);   /* infer or train */
    snprintf(prob.dataset, sizeof prob.dataset, "%s", j->p->dataset);
    prob.dim_in = j->p->dim_in;
    prob.dim_out = j->p->dim_out;
    prob.heads = j->p->heads;
    prob.stats = j->info.stats;
    cand_configs cc = {&j->space, *cand};
    sr_problem_init_from(sp, &prob, cand_config, &cc, pred, nc);
    sp->closed = 1;   /* the points that do not apply to the problem are not worth a unit of the budget */
    if (pred && o->bo_prior) {
        sp->prior_sd = rg_xmalloc(CM_BO_NFEAT * sizeof *sp->prior_sd);
        if (!o->bo_prior(o->order_ctx, j->p, sp->prior_sd)) {
            free(sp->prior_sd);
            sp->prior_sd = NULL;
        }
    }
    free(pred);
    live_static_list(j, sp);
}

/* The one-line summary of a search, on stderr with the progress. */
static void search_summary(const job *j, const live *L)
{
    const xs_summary *sum = j->sum;
    if (j->pr.mode == XS_PROGRESS_OFF) return;
    char stop[64] = "at the budget", best[300] = "nothing measurable found";
    if (!strcmp(sum->stopped_by, "time limit"))
        snprintf(stop, sizeof stop, "by the time limit (%g s)", j->s->o.time_limit_s);
    else if (!strcmp(sum->stopped_by, "space"))
        snprintf(stop, sizeof stop, "with no point left");
    else if (!strcmp(sum->stopped_by, "interrupted"))
        snprintf(stop, sizeof stop, "by an interrupt");
    if (L->best >= 0) snprintf(best, sizeof best, "best %.4f ms %s", sum->search_best_ms, sum->search_best_config);
    fprintf(stderr, "search %s: %d of %d evaluations (%d read back from the store), stopped %s; %s; %.1f s\n",
            sum->strategy, sum->evaluations, sum->budget, sum->read_back, stop, best, rg_now() - j->t0);
}

static int search(job *j, xw_worker *w, rg_err *err)
{
    const xs_options *o = &j->s->o;
    xs_summary *sum = j->sum;
    int *cand;
    sr_problem sp;
    search_problem(j, &cand, &sp);
    live L = {.j = j, .w = w, .cand = cand, .err = err, .best = -1};
    L.r = rg_xmalloc(sizeof *L.r);
    L.stored_at = rg_xmalloc((size_t)j->n * sizeof *L.stored_at + 1);
    for (int i = 0; i < j->n; i++) L.stored_at[i] = -1;
    int rc = o->no_resume ? 0 : load_stored(&L, err);
    if (!rc && sum->budget > 0) {
        double *best = rg_xmalloc((size_t)sum->budget * sizeof *best);
        sr_evaluator ev = {live_eval, &L};
        int used = sr_search_eval(sr_strategy_find(j->strategy), &sp, sum->budget, o->seed, &ev, best);
        sum->stopped_by = L.stop ? L.stop : used == sum->budget ? "budget" : "space";
        rc = L.failed ? -1 : 0;
        free(best);
    } else if (!rc) {
        sum->stopped_by = "space";
    }
    if (L.best >= 0) {
        char *cfg = point_string(j, L.best);
        snprintf(sum->search_best_config, sizeof sum->search_best_config, "%s", cfg);
        free(cfg);
    }
    progress_clear(&j->pr);
    if (!rc) search_summary(j, &L);
    if (g_stop) sum->interrupted = j->s->interrupted = 1;
    sum->restarts = xw_restarts(w);
    free(L.r);
    free(L.stored);
    free(L.stored_at);
    free(cand);
    sr_problem_free(&sp);
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

/* Runs fn's writes in one store transaction (rs_batch_begin): a sweep of the whole default space
 * records hundreds of thousands of invalid points before it measures anything. */
static int batched(job *j, int (*fn)(job *, rg_err *), rg_err *err)
{
    if (rs_batch_begin(j->s->store, err)) return -1;
    int rc = fn(j, err);
    rg_err end_err;
    if (rs_batch_end(j->s->store, &end_err) && !rc) {
        *err = end_err;
        rc = -1;
    }
    return rc;
}

static int sweep_with_worker(job *j, xw_worker *w, rg_err *err)
{
    if (begin_run(j->s, &j->info, err)) return -1;
    j->sum->run_id = j->s->run_id;
    j->dataset_id = rs_upsert_dataset(j->s->store, j->p->dataset, &j->info.stats, err);
    if (j->dataset_id < 0) return -1;
    hash_points(j);
    if (plan_work(j, err)) return -1;
    const xs_options *o = &j->s->o;
    if (j->strategy) {
        snprintf(j->sum->strategy, sizeof j->sum->strategy, "%s", j->strategy);
        j->sum->budget = search_budget(j);
    }
    progress_init(&j->pr, j->pr.mode, j->strategy ? j->sum->budget : j->ntodo, NAN);
    j->pr.t0 = j->t0;
    j->pr.show_elapsed = j->strategy || o->time_limit_s > 0;
    if (j->pr.mode != XS_PROGRESS_OFF && j->strategy)
        fprintf(stderr, "%s on %s (%s): %d points, %d valid, %d already measured, %d invalid (not recorded in a search); search %s, "
                        "budget %d, seed %llu%s\n", j->p->model, j->p->dataset, j->p->task, j->n, j->sum->valid,
                j->sum->skipped, j->ninvalid, j->strategy, j->sum->budget, (unsigned long long)o->seed,
                o->time_limit_s > 0 ? ", with a time limit" : "");
    else if (j->pr.mode != XS_PROGRESS_OFF)
        fprintf(stderr, "%s on %s (%s): %d points, %d already measured, %d invalid%s, %d to measure%s\n",
                j->p->model, j->p->dataset, j->p->task, j->n, j->sum->skipped, j->ninvalid,
                records_invalid(j) ? " to record" : " (not recorded under --budget)", j->ntodo,
                j->budget > 0 ? " (--budget)" : "");
    if (j->strategy && !o->strategy && j->pr.mode != XS_PROGRESS_OFF)   /* choose_search's default */
        fprintf(stderr, "the space has %d valid points, too many to sweep: searching %d of them (%d%%) with %s "
                        "(--exhaustive measures every point, --budget and --strategy choose)\n",
                j->sum->valid, j->sum->budget, XS_DEFAULT_SEARCH_PERCENT, j->strategy);
    if (records_invalid(j) && batched(j, record_invalid, err)) return -1;
    return j->strategy ? search(j, w, err) : measure_all(j, w, err);
}

/* pl_build's verdict on a point, asked once per class of points that build the same plan: the keys
 * that change only GEMM text (tile, coarsen, w, mma) and the node order (relabel) are set to their
 * defaults, since no refusal reads them (a GEMM key's limits are cfg_validate's). A class is a
 * config's hash; the table is open addressing on it. */
typedef struct build_verdict {
    uint64_t key;            /* 0: empty slot */
    const char *why;         /* NULL: it builds */
} build_verdict;

typedef struct verdict_cache {
    build_verdict *slot;
    size_t cap, used;
} verdict_cache;

static uint64_t plan_class(const cg_config *c)
{
    if (c->noverrides) return cfg_hash(c) | 1;   /* overrides: its own class */
    int code[CFG_NKEYS];   /* the other keys' codes, hashed as they are: printing them took most of the time */
    for (int i = 0; i < CFG_NKEYS; i++) {
        const cfg_key *key = cfg_key_at(i);
        code[i] = cfg_key_kernels(key) == CFG_ON_GEMM || !strcmp(key->name, "relabel") ? -1 : key->get(c);
    }
    return rg_fnv1a64(code, sizeof code, RG_FNV_SEED) | 1;
}

static build_verdict *verdict_slot(verdict_cache *vc, uint64_t key)
{
    if (2 * (vc->used + 1) > vc->cap) {
        verdict_cache grown = {rg_xcalloc(vc->cap ? 2 * vc->cap : 1024, sizeof *grown.slot), vc->cap ? 2 * vc->cap : 1024,
                               vc->used};
        for (size_t i = 0; i < vc->cap; i++) {
            if (!vc->slot[i].key) continue;
            size_t h = vc->slot[i].key & (grown.cap - 1);
            while (grown.slot[h].key) h = (h + 1) & (grown.cap - 1);
            grown.slot[h] = vc->slot[i];
        }
        free(vc->slot);
        *vc = grown;
    }
    size_t h = key & (vc->cap - 1);
    while (vc->slot[h].key && vc->slot[h].key != key) h = (h + 1) & (vc->cap - 1);
    return &vc->slot[h];
}

/* Why pl_build refuses c for the problem (with nominal graph statistics), or NULL when it builds. */
static const char *build_refusal(verdict_cache *vc, const pl_problem *pp, const cg_config *c)
{
    uint64_t key = plan_class(c);
    build_verdict *v = verdict_slot(vc, key);
    if (!v->key) {
        rg_err e;
        v->key = key;
        v->why = pl_build_verdict(pp, c, NULL, &e) == PL_INAPPLICABLE ? sp_intern(e.msg) : NULL;
        vc->used++;
    }
    return v->why;
}

/* The points that do not apply to this problem are invalid for it, with pl_build's reason: their
 * schedule (pl_schedule_applies, no program parsed) or their plan (build_refusal: passes that do not
 * apply, a node split, lanes or an epilogue that would duplicate another point). In inference seven
 * in eight points of the default space are such (wrun, crsum and recompute change only training
 * plans), and epi=on and cdot=edge do not apply to RGCN: a search that took them for candidates spent
 * most of its budget on variants the worker could only refuse. A plan that fails to build for
 * another reason stays valid: the worker records its failure. */
static void mark_inapplicable(job *j)
{
    pl_problem pp = {.model = j->p->model, .task = j->p->task, .dims = {j->p->dim_in, j->p->dim_out, j->p->heads}};
    verdict_cache vc = {0};
    for (int i = 0; i < j->n; i++) {
        sp_point *pt = &j->pts[i];
        rg_err e;
        if (!pt->valid) continue;
        cg_config c = point_config(j, i);
        const char *why = pl_schedule_applies(&pp, &c, &e) ? build_refusal(&vc, &pp, &c) : sp_intern(e.msg);
        if (!why) continue;
        pt->valid = 0;
        pt->reason = why;
    }
    free(vc.slot);
}

/* The search of a problem: --strategy and --budget as given; without them (and without --exhaustive)
 * a space of more than XS_EXHAUSTIVE_MAX valid points is not swept but searched, XS_DEFAULT_SEARCH
 * over XS_DEFAULT_SEARCH_PERCENT of its points (issue 19: an exhaustive sweep is no longer the
 * default once per-kernel and precision choices make the space large). */
static void choose_search(job *j)
{
    const xs_options *o = &j->s->o;
    j->strategy = o->strategy;
    j->budget = o->budget;
    if (o->strategy || o->budget > 0 || o->exhaustive || j->sum->valid <= XS_EXHAUSTIVE_MAX) return;
    j->strategy = XS_DEFAULT_SEARCH;
    j->budget = (j->sum->valid * XS_DEFAULT_SEARCH_PERCENT + 99) / 100;
}

int xs_problem(xs_session *s, const xb_problem *p, xs_summary *sum, rg_err *err)
{
    summary_init(sum);
    if (check_problem(p, err)) return -1;
    job j;
    memset(&j, 0, sizeof j);
    j.t0 = rg_now();
    j.s = s;
    j.p = p;
    j.sum = sum;
    if (sp_load(s->o.space, &j.space, err) || sp_enumerate(&j.space, &j.pts, &j.n, err)) return -1;
    mark_inapplicable(&j);
    sum->points = j.n;
    sum->valid = sp_count_valid(j.pts, j.n);
    sum->invalid = j.n - sum->valid;
    choose_search(&j);
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
    if (sum->interrupted && !sum->stopped_by) sum->stopped_by = "interrupted";
    sum->elapsed_s = rg_now() - j.t0;
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
