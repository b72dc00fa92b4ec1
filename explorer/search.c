/* Search strategies under a budget and their replay on recorded measurements: the space of a
 * problem is what the store holds of it, so strategies are compared and tuned without a GPU. */
#include "explorer/search.h"
#include "explorer/calib.h"
#include "codegen/pipeline.h"
#include "results/store.h"
#include "results/yardstick.h"

#include <gsl/gsl_blas.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_randist.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ problems ==== */

static const sr_problem *cmp_keys_problem;   /* qsort has no context argument */

static int cmp_by_key(const void *a, const void *b)
{
    uint64_t x = cmp_keys_problem->points[*(const int *)a].key, y = cmp_keys_problem->points[*(const int *)b].key;
    return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int measurable(double t) { return isfinite(t) && t > 0; }

/* Lookup index, oracle, worst and the sorted times, after the points changed. */
static void problem_index(sr_problem *p)
{
    free(p->by_key);
    free(p->sorted_ms);
    p->by_key = rg_xmalloc((size_t)(p->n ? p->n : 1) * sizeof *p->by_key);
    p->sorted_ms = rg_xmalloc((size_t)(p->n ? p->n : 1) * sizeof *p->sorted_ms);
    for (int i = 0; i < p->n; i++) p->by_key[i] = i;
    cmp_keys_problem = p;
    qsort(p->by_key, (size_t)p->n, sizeof *p->by_key, cmp_by_key);
    p->oracle_ms = INFINITY;
    p->worst_ms = -INFINITY;
    int m = 0;
    for (int i = 0; i < p->n; i++)
        if (measurable(p->points[i].time_ms)) {
            p->oracle_ms = fmin(p->oracle_ms, p->points[i].time_ms);
            p->worst_ms = fmax(p->worst_ms, p->points[i].time_ms);
            p->sorted_ms[m++] = p->points[i].time_ms;
        }
    qsort(p->sorted_ms, (size_t)m, sizeof *p->sorted_ms, cmp_double);
    for (int i = m; i < p->n; i++) p->sorted_ms[i] = p->worst_ms;
}

int sr_find(const sr_problem *p, const cg_config *cfg)
{
    uint64_t k = cfg_hash(cfg);
    int lo = 0, hi = p->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (p->points[p->by_key[mid]].key < k) lo = mid + 1;
        else hi = mid;
    }
    return lo < p->n && p->points[p->by_key[lo]].key == k ? p->by_key[lo] : -1;
}

static void add_point(sr_problem *p, const cg_config *cfg, double time_ms, double pred_ms)
{
    if (p->n == p->cap) {   /* doubling: a point is a whole config, and a space has 10^5 of them */
        p->cap = p->cap ? 2 * p->cap : 64;
        p->points = rg_xrealloc(p->points, (size_t)p->cap * sizeof *p->points);
    }
    p->points[p->n++] = (sr_point){.cfg = *cfg, .key = cfg_hash(cfg), .time_ms = time_ms, .pred_ms = pred_ms};
}

void sr_add_failed(sr_set *s, int q, const cg_config *cfg)
{
    RG_ASSERT(q >= 0 && q < s->n);
    sr_problem *p = &s->problems[q];
    if (sr_find(p, cfg) >= 0) return;   /* an ok measurement of the same config wins */
    add_point(p, cfg, NAN, NAN);
    problem_index(p);
}

/* The static list of problem q: its kind on every other dataset (leave-one-dataset-out), or its
 * model and task at every other size (by_size: leave-one-size-out). */
static void static_list_of(const cm_set *s, int q, int by_size, sr_problem *p)
{
    const cm_problem *h = &s->problems[q];
    int *train = rg_xmalloc((size_t)s->nproblems * sizeof *train), rc;
    for (int k = 0; k < s->nproblems; k++) {
        const cm_problem *x = &s->problems[k];
        train[k] = by_size ? x->dim_in != h->dim_in || x->dim_out != h->dim_out || x->heads != h->heads
                           : strcmp(x->dataset, h->dataset) != 0;
    }
    if (by_size) rc = cm_static_list_any_size(s, train, h, &p->static_list, &p->nstatic);
    else rc = cm_static_list(s, train, h, &p->static_list, &p->nstatic);
    if (rc) p->nstatic = 0;
    free(train);
}

static void from_cm_set(const cm_set *s, const double *pred, int min_points, int by_size, sr_set *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->device, sizeof out->device, "%s", s->device);
    snprintf(out->source, sizeof out->source, "%s", s->source);
    int *count = rg_xcalloc((size_t)(s->nproblems ? s->nproblems : 1), sizeof *count);
    for (int i = 0; i < s->nsamples; i++) count[s->samples[i].problem]++;
    out->problems = rg_xcalloc((size_t)(s->nproblems ? s->nproblems : 1), sizeof *out->problems);
    for (int q = 0; q < s->nproblems; q++) {
        if (count[q] < min_points) continue;
        sr_problem *p = &out->problems[out->n++];
        p->prob = s->problems[q];
        for (int i = 0; i < s->nsamples; i++)
            if (s->samples[i].problem == q)
                add_point(p, &s->samples[i].cfg, s->samples[i].time_ms, pred ? pred[i] : NAN);
        problem_index(p);
        static_list_of(s, q, by_size, p);
    }
    free(count);
}

void sr_problem_init_from(sr_problem *p, const cm_problem *prob, sr_config_fn at, void *ctx, const double *pred_ms,
                          int n)
{
    memset(p, 0, sizeof *p);
    p->prob = *prob;
    p->cap = n;   /* exactly: a live search of the full space has millions of points */
    p->points = rg_xmalloc((size_t)(n ? n : 1) * sizeof *p->points);
    for (int i = 0; i < n; i++) {
        cg_config c;
        at(ctx, i, &c);
        add_point(p, &c, NAN, pred_ms ? pred_ms[i] : NAN);
    }
    problem_index(p);
}

static void array_config(void *ctx, int k, cg_config *out) { *out = ((const cg_config *)ctx)[k]; }

void sr_problem_init(sr_problem *p, const cm_problem *prob, const cg_config *cfgs, const double *pred_ms, int n)
{
    sr_problem_init_from(p, prob, array_config, (void *)cfgs, pred_ms, n);
}

void sr_problem_free(sr_problem *p)
{
    free(p->points);
    free(p->by_key);
    free(p->sorted_ms);
    free(p->static_list);
    free(p->prior_sd);
    memset(p, 0, sizeof *p);
}

void sr_from_cm_set(const cm_set *s, const double *pred, int min_points, sr_set *out)
{
    from_cm_set(s, pred, min_points, 0, out);
}

void sr_set_free(sr_set *s)
{
    for (int q = 0; q < s->n; q++) sr_problem_free(&s->problems[q]);
    free(s->problems);
    memset(s, 0, sizeof *s);
}

/* ================================================================ reading a store ==== */

/* Configs with no ok attempt in the problem (device, generated variants, the layer itself). */
static const char *const FAILED_SQL =
    "SELECT d.name, v.model, v.task, v.dim_in, v.dim_out, v.heads, v.config"
    " FROM measurements m JOIN variants v ON v.id = m.variant_id JOIN datasets d ON d.id = m.dataset_id"
    " WHERE m.device_key = ?1 AND m.system = 'generated' AND m.layer = ''"
    " GROUP BY m.dataset_id, m.variant_id HAVING sum(m.status = 'ok') = 0";

static const char *col_text(sqlite3_stmt *st, int c)
{
    const unsigned char *t = sqlite3_column_text(st, c);
    return t ? (const char *)t : "";
}

static int find_problem(const sr_set *s, const char *model, const char *task, const char *dataset, int in, int out,
                        int heads)
{
    for (int q = 0; q < s->n; q++) {
        const cm_problem *p = &s->problems[q].prob;
        if (!strcmp(p->model, model) && !strcmp(p->task, task) && !strcmp(p->dataset, dataset) && p->dim_in == in &&
            p->dim_out == out && p->heads == heads)
            return q;
    }
    return -1;
}

int sr_load_failed(const char *db_path, sr_set *s, rg_err *err)
{
    rs_store *reader = rs_open_read(db_path, err);
    if (!reader) return -1;
    sqlite3 *db = rs_detach(reader);
    sqlite3_stmt *st;
    int rc = -1;
    if (sqlite3_prepare_v2(db, FAILED_SQL, -1, &st, NULL) != SQLITE_OK) {
        rg_errf(err, "%s: %s", db_path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return -1;
    }
    sqlite3_bind_text(st, 1, s->device, -1, SQLITE_TRANSIENT);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *task;
        cg_config cfg;
        cfg_default(&cfg);
        if (pl_parse_task(col_text(st, 2), &task, NULL) || cfg_parse_json(&cfg, col_text(st, 6), NULL)) continue;
        int q = find_problem(s, col_text(st, 1), task, col_text(st, 0), sqlite3_column_int(st, 3),
                             sqlite3_column_int(st, 4), sqlite3_column_int(st, 5));
        if (q >= 0) sr_add_failed(s, q, &cfg);
    }
    rc = rc == SQLITE_DONE ? 0 : rg_errf(err, "%s: %s", db_path, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

static int same_group(const cm_problem *a, const cm_problem *b, int by_size)
{
    return by_size ? a->dim_in == b->dim_in && a->dim_out == b->dim_out && a->heads == b->heads
                   : !strcmp(a->dataset, b->dataset);
}

/* Each sample's prediction by model m, for the problems of only's group (its dataset; by_size: its
 * size; only NULL: every problem); problems without a section get none. */
static void predict_problems(const cm_set *s, const cm_model *m, const cm_problem *only, int by_size, double *pred)
{
    for (int q = 0; q < s->nproblems; q++) {
        if (only && !same_group(&s->problems[q], only, by_size)) continue;
        const cm_section *sec = cm_find_section(m, s->problems[q].model, s->problems[q].task, NULL);
        int n = 0;
        for (int i = 0; i < s->nsamples; i++) n += s->samples[i].problem == q;
        cg_config *cfgs = rg_xmalloc((size_t)(n ? n : 1) * sizeof *cfgs);
        cm_counts *counts = rg_xmalloc((size_t)(n ? n : 1) * sizeof *counts);
        int *idx = rg_xmalloc((size_t)(n ? n : 1) * sizeof *idx);
        double *out = rg_xmalloc((size_t)(n ? n : 1) * sizeof *out);
        n = 0;
        for (int i = 0; i < s->nsamples; i++)
            if (s->samples[i].problem == q) {
                cfgs[n] = s->samples[i].cfg;
                counts[n] = s->samples[i].counts;
                idx[n++] = i;
            }
        if (sec) cm_predict(sec, &s->problems[q], cfgs, counts, n, out);
        for (int k = 0; k < n; k++) pred[idx[k]] = sec ? out[k] : NAN;
        free(cfgs);
        free(counts);
        free(idx);
        free(out);
    }
}

/* Each sample's prediction by a model file, loaded into m (the caller frees it). */
static int file_predictions(const cm_set *s, const char *path, double *pred, char *note, size_t cap, cm_model *m,
                            rg_err *err)
{
    if (cm_load(path, m, err)) return -1;
    snprintf(note, cap, "%.400s (fitted %s on %.400s; in-sample where it was fitted on this store)", path, m->created, m->source);
    if (strcmp(m->device, s->device))
        fprintf(stderr, "explore replay: note: the cost model was fitted on '%s', the store's times are of '%s'\n",
                m->device, s->device);
    predict_problems(s, m, NULL, 0, pred);
    return 0;
}

/* Each sample's prediction by models fitted on another store's measurements (fit: another device's,
 * typically) without the sample's dataset: a pick on a graph and a device neither of which the
 * fit saw. */
static int cross_predictions(const cm_set *s, const cm_set *fit, double *pred, rg_err *err)
{
    cm_fit_options fo;
    cm_fit_options_default(&fo);
    int rc = 0;
    for (int q = 0; q < s->nproblems && !rc; q++) {
        int first = 1;   /* one fit per dataset, at its first problem */
        for (int j = 0; j < q && first; j++) first = strcmp(s->problems[j].dataset, s->problems[q].dataset) != 0;
        if (!first) continue;
        cm_set held;
        cm_set_without_dataset(fit, s->problems[q].dataset, &held);
        cm_model m;
        rc = cm_fit(&held, &fo, &m, err);
        if (!rc) {
            predict_problems(s, &m, &s->problems[q], 0, pred);
            cm_model_free(&m);
        } else {
            rg_err_prefix(err, "the fit store without %s", s->problems[q].dataset);
        }
        cm_set_free(&held);
    }
    return rc;
}

/* Each sample's held-out prediction (pred[], NaN where none): by models fitted without its dataset
 * (by_size: without its size) on s itself, or with fit, on that other store without its dataset. */
static int held_out_predictions(const cm_set *s, const cm_set *fit, int by_size, double *pred, rg_err *err)
{
    for (int i = 0; i < s->nsamples; i++) pred[i] = NAN;
    if (fit) return cross_predictions(s, fit, pred, err);
    cm_eval e;
    if ((by_size ? cm_loso : cm_lodo)(s, NULL, &e, err)) return -1;
    memcpy(pred, e.sample_pred, (size_t)s->nsamples * sizeof *pred);
    cm_eval_free(&e);
    return 0;
}

/* ---- The calibrated prior of Bayesian optimisation (explorer/calib.h) ---- */

/* p's prior becomes a copy of prior[CAL_NFEAT] (replacing any it had). */
static void set_prior(sr_problem *p, const double *prior)
{
    free(p->prior_sd);
    p->prior_sd = rg_xmalloc(CAL_NFEAT * sizeof *p->prior_sd);
    memcpy(p->prior_sd, prior, CAL_NFEAT * sizeof *p->prior_sd);
}

/* The prior explore fit calibrated into a model file, for the problems of its sections that have
 * one (in-sample where the file was fitted on this store, as its predictions are). */
static int file_priors(const cm_model *m, sr_set *out)
{
    int set = 0;
    for (int q = 0; q < out->n; q++) {
        sr_problem *p = &out->problems[q];
        const cm_section *sec = cm_find_section(m, p->prob.model, p->prob.task, NULL);
        if (!sec || !sec->bo_prior) continue;
        set_prior(p, sec->bo_prior);
        set++;
    }
    return set;
}

static void without_group(const cm_set *s, const cm_problem *g, int by_size, cm_set *out)
{
    if (by_size) cm_set_without_size(s, g->dim_in, g->dim_out, g->heads, out);
    else cm_set_without_dataset(s, g->dataset, out);
}

/* The prior of the problems of group a (a dataset; by_size: a size): how wrong the held-out
 * predictions were on the problems of the other groups, each of those predictions made by models
 * fitted without group a too (nested), so that no time of group a reaches its own prior. pred_a:
 * those predictions, per sample of s. */
static int prior_of_group(const cm_set *s, const cm_problem *a, int by_size, const double *pred_a, sr_set *out)
{
    int set = 0;
    unsigned char *use = rg_xmalloc((size_t)(s->nproblems ? s->nproblems : 1));
    for (int q = 0; q < out->n; q++) {
        sr_problem *p = &out->problems[q];
        if (!same_group(&p->prob, a, by_size)) continue;
        for (int k = 0; k < s->nproblems; k++) {
            const cm_problem *x = &s->problems[k];
            use[k] = !same_group(x, a, by_size) && !strcmp(x->model, p->prob.model) && !strcmp(x->task, p->prob.task);
        }
        double prior[CAL_NFEAT];
        if (cal_prior_of(s, pred_a, use, SR_BO_W_SD, prior) == 0) continue;
        set_prior(p, prior);
        set++;
    }
    free(use);
    return set;
}

/* Calibrates the prior of every problem of out; returns how many got one. For each pair of groups
 * (a, b), one fit without both (on s, or on the fit store: fit) predicts b's problems as group a's
 * calibration sees them, and a's as b's does: half the fits of a held-out evaluation per group. A
 * group whose pairs cannot be fitted (fewer than three datasets or sizes) keeps the fixed prior. */
static int calibrate(const cm_set *s, const cm_set *fit, int by_size, sr_set *out)
{
    int *first = rg_xmalloc((size_t)(s->nproblems ? s->nproblems : 1) * sizeof *first), ng = 0;
    for (int q = 0; q < s->nproblems; q++) {
        int seen = 0;
        for (int g = 0; g < ng && !seen; g++) seen = same_group(&s->problems[first[g]], &s->problems[q], by_size);
        if (!seen) first[ng++] = q;
    }
    size_t ns = (size_t)(s->nsamples ? s->nsamples : 1);
    double *pred = rg_xmalloc((size_t)ng * ns * sizeof *pred);
    for (size_t i = 0; i < (size_t)ng * ns; i++) pred[i] = NAN;
    cm_fit_options fo;
    cm_fit_options_default(&fo);
    for (int a = 0; a < ng; a++)
        for (int b = a + 1; b < ng; b++) {
            const cm_problem *ga = &s->problems[first[a]], *gb = &s->problems[first[b]];
            cm_set t1, t2;
            without_group(fit ? fit : s, ga, by_size, &t1);
            without_group(&t1, gb, by_size, &t2);
            cm_model m;
            rg_err ignored;
            if (t2.nsamples && cm_fit(&t2, &fo, &m, &ignored) == 0) {
                predict_problems(s, &m, gb, by_size, pred + (size_t)a * ns);
                predict_problems(s, &m, ga, by_size, pred + (size_t)b * ns);
                cm_model_free(&m);
            }
            cm_set_free(&t1);
            cm_set_free(&t2);
        }
    int set = 0;
    for (int a = 0; a < ng; a++) set += prior_of_group(s, &s->problems[first[a]], by_size, pred + (size_t)a * ns, out);
    free(pred);
    free(first);
    return set;
}

int sr_load(const char *db, const sr_load_options *o, sr_set *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    const char *cm = o->cm ? o->cm : SR_CM_LODO;
    cm_filter f = {.model = o->model, .task = o->task, .device = o->device};
    cm_set s, fit;
    cm_model file_model;
    int have_fit = 0, have_file = 0;
    if (cm_set_load(db, &f, &s, err)) return -1;
    double *pred = rg_xmalloc((size_t)s.nsamples * sizeof *pred);
    for (int i = 0; i < s.nsamples; i++) pred[i] = NAN;
    char note[1024] = "none";
    int rc = 0, by_size = !strcmp(cm, SR_CM_LOSO), held_out = 0;
    if (o->fit_db && strcmp(cm, SR_CM_LODO)) {
        rc = rg_errf(err, "--fit-db fits leave-one-dataset-out on the other store; it takes no --cm %s", cm);
    } else if (o->fit_db) {
        /* the filters (model, task) are the target's; the fit store must hold one device */
        cm_filter ff = {.model = o->model, .task = o->task};
        if ((rc = cm_set_load(o->fit_db, &ff, &fit, err)) != 0) {
            rg_err_prefix(err, "--fit-db");
        } else {
            have_fit = held_out = 1;
            if ((rc = held_out_predictions(&s, &fit, 0, pred, err)) != 0) rg_err_prefix(err, "--fit-db %s", o->fit_db);
            snprintf(note, sizeof note, "cost models fitted on %.400s (device %.200s) without the problem's dataset",
                     o->fit_db, fit.device);
        }
    } else if (!strcmp(cm, SR_CM_LODO) || by_size) {
        const char *how = by_size ? "leave-one-size-out" : "leave-one-dataset-out";
        held_out = 1;
        if ((rc = held_out_predictions(&s, NULL, by_size, pred, err)) == 0)
            snprintf(note, sizeof note, "cost models fitted %s on %.900s", how, db);
        else
            rg_err_prefix(err, "no %s model (--cm none searches without one)", how);
    } else if (strcmp(cm, SR_CM_NONE)) {
        rc = file_predictions(&s, cm, pred, note, sizeof note, &file_model, err);
        have_file = rc == 0;
    }
    if (rc == 0) {
        from_cm_set(&s, pred, SR_MIN_POINTS, by_size, out);
        snprintf(out->model_source, sizeof out->model_source, "%s", note);
        /* held out: calibrated on this store; a model file: the prior explore fit wrote into it, if any */
        if (o->no_prior) out->calibrated = 0;
        else if (held_out) out->calibrated = calibrate(&s, have_fit ? &fit : NULL, by_size, out);
        else if (have_file) out->calibrated = file_priors(&file_model, out);
        rc = sr_load_failed(db, out, err);
        if (rc == 0 && out->n == 0)
            rc = rg_errf(err, "%s: no problem with at least %d stored configs on '%s'", db, SR_MIN_POINTS, s.device);
    }
    free(pred);
    cm_set_free(&s);
    if (have_fit) cm_set_free(&fit);
    if (have_file) cm_model_free(&file_model);
    if (rc) sr_set_free(out);
    return rc;
}

/* ================================================================ a run ==== */

struct sr_run {
    const sr_problem *p;
    sr_evaluator ev;
    int budget, used;
    int stopped;               /* the evaluator ended the search */
    rg_rng rng;
    unsigned char *done;       /* [n]: evaluated points */
    uint64_t *outside;         /* configs evaluated that the store lacks */
    int noutside;
    double *best;              /* [budget] */
    double best_ms;            /* NaN: nothing found */
};

int sr_left(const sr_run *r) { return r->stopped ? 0 : r->budget - r->used; }

static int evaluated(const sr_run *r, const cg_config *cfg)
{
    int i = sr_find(r->p, cfg);
    if (i >= 0) return r->done[i];
    uint64_t k = cfg_hash(cfg);
    for (int j = 0; j < r->noutside; j++)
        if (r->outside[j] == k) return 1;
    return 0;
}

/* Replay's evaluator: the time the store recorded (a config it lacks is not measurable). */
static sr_eval_status replay_time(void *ctx, const sr_problem *p, int point, const cg_config *cfg, double *time_ms)
{
    (void)ctx, (void)cfg;
    *time_ms = point >= 0 ? p->points[point].time_ms : NAN;
    return SR_EVAL_NEXT;
}

double sr_evaluate(sr_run *r, const cg_config *cfg)
{
    RG_ASSERT(r->used < r->budget && !r->stopped);
    int i = sr_find(r->p, cfg);
    double t = NAN;
    sr_eval_status st = r->ev.fn(r->ev.ctx, r->p, i, cfg, &t);
    if (st == SR_EVAL_STOP) {   /* nothing was evaluated: no unit spent */
        r->stopped = 1;
        return NAN;
    }
    r->stopped = st == SR_EVAL_LAST;
    if (i >= 0) {
        r->done[i] = 1;
    } else {
        r->outside = rg_xrealloc(r->outside, (size_t)(r->noutside + 1) * sizeof *r->outside);
        r->outside[r->noutside++] = cfg_hash(cfg);
    }
    if (!measurable(t)) t = NAN;
    if (isfinite(t) && !(t >= r->best_ms)) r->best_ms = t;
    r->best[r->used++] = r->best_ms;
    return t;
}

static double evaluate_point(sr_run *r, int i) { return sr_evaluate(r, &r->p->points[i].cfg); }

/* A uniformly random point not evaluated yet, or -1. */
static int random_unevaluated(sr_run *r)
{
    int left = 0;
    for (int i = 0; i < r->p->n; i++) left += !r->done[i];
    if (!left) return -1;
    int k = (int)rg_rng_below(&r->rng, (uint64_t)left);
    for (int i = 0; i < r->p->n; i++)
        if (!r->done[i] && k-- == 0) return i;
    return -1;
}

/* Points in a seeded random order (Fisher-Yates). */
static void shuffled(sr_run *r, int *order)
{
    for (int i = 0; i < r->p->n; i++) order[i] = i;
    for (int i = r->p->n - 1; i > 0; i--) {
        int j = (int)rg_rng_below(&r->rng, (uint64_t)i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* ================================================================ random, model, static ==== */

static void run_random(sr_run *r)
{
    int *order = rg_xmalloc((size_t)r->p->n * sizeof *order);
    shuffled(r, order);
    for (int k = 0; k < r->p->n && sr_left(r); k++) evaluate_point(r, order[k]);
    free(order);
}

/* Prediction as a sort key: unknown goes last. */
static double pred_key(const sr_point *x) { return isfinite(x->pred_ms) ? x->pred_ms : INFINITY; }

static int cmp_by_prediction(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    double x = pred_key(&cmp_keys_problem->points[i]), y = pred_key(&cmp_keys_problem->points[j]);
    if (x != y) return (x > y) - (x < y);
    return (i > j) - (i < j);   /* stable: qsort is not */
}

/* Point indices by prediction, best first (ties: the store's order). A default space has 10^5 points:
 * the insertion sort this once was took a minute of a 60-second search. */
static void by_prediction(const sr_problem *p, int *order)
{
    for (int i = 0; i < p->n; i++) order[i] = i;
    cmp_keys_problem = p;
    qsort(order, (size_t)p->n, sizeof *order, cmp_by_prediction);
}

static void run_model(sr_run *r)
{
    int *order = rg_xmalloc((size_t)r->p->n * sizeof *order);
    by_prediction(r->p, order);
    for (int k = 0; k < r->p->n && sr_left(r); k++) evaluate_point(r, order[k]);
    free(order);
}

/* The static list's configs of this space in order, then the rest at random. */
static void run_static(sr_run *r)
{
    for (int k = 0; k < r->p->nstatic && sr_left(r); k++) {
        int i = sr_find(r->p, &r->p->static_list[k]);
        if (i >= 0 && !r->done[i]) evaluate_point(r, i);
    }
    int *order = rg_xmalloc((size_t)r->p->n * sizeof *order);
    shuffled(r, order);
    for (int k = 0; k < r->p->n && sr_left(r); k++)
        if (!r->done[order[k]]) evaluate_point(r, order[k]);
    free(order);
}

/* ================================================================ anneal ==== */

/* Model-guided simulated annealing over the key table: each step mutates one key of a parent
 * drawn from the configs measured so far, with Boltzmann weights exp(-(log t - log best) / T) at
 * a temperature falling to 0 over the budget (early steps wander, late ones refine the best); of
 * the parent's unevaluated neighbours that cfg_validate accepts, the one the model predicts
 * fastest (or, with probability ANNEAL_EXPLORE, a random one). Values of a key are those the
 * space has; a valid neighbour the store lacks is not measurable and costs its unit (in replay: a
 * live search's problem is closed, its neighbours are its valid points only). */
#define ANNEAL_T0 0.2
#define ANNEAL_EXPLORE 0.25

typedef struct key_values {
    int n, code[16];
} key_values;

static void space_values(const sr_problem *p, key_values kv[CFG_NKEYS])
{
    for (int k = 0; k < CFG_NKEYS; k++) {
        const cfg_key *key = cfg_key_at(k);
        kv[k].n = 0;
        for (int i = 0; i < p->n; i++) {
            int c = key->get(&p->points[i].cfg), j = 0;
            while (j < kv[k].n && kv[k].code[j] != c) j++;
            if (j == kv[k].n && kv[k].n < 16) kv[k].code[kv[k].n++] = c;
        }
    }
}

/* The parent's valid unevaluated neighbours (one key changed); returns how many. */
static int neighbours(const sr_run *r, const key_values kv[CFG_NKEYS], const cg_config *parent, cg_config *out)
{
    int n = 0;
    for (int k = 0; k < CFG_NKEYS; k++) {
        const cfg_key *key = cfg_key_at(k);
        for (int j = 0; j < kv[k].n; j++) {
            if (kv[k].code[j] == key->get(parent)) continue;
            cg_config c = *parent;
            key->set(&c, kv[k].code[j]);
            if (cfg_validate(&c, NULL) == 0 && !evaluated(r, &c) && (!r->p->closed || sr_find(r->p, &c) >= 0))
                out[n++] = c;
        }
    }
    return n;
}

/* A parent among the measured configs, Boltzmann-weighted at temperature T; -1 if none is left. */
static int pick_parent(sr_run *r, const double *t, const unsigned char *spent, int n, double T)
{
    double best = INFINITY, total = 0;
    for (int i = 0; i < n; i++)
        if (!spent[i]) best = fmin(best, t[i]);
    if (!isfinite(best)) return -1;
    double *w = rg_xmalloc((size_t)n * sizeof *w);
    for (int i = 0; i < n; i++) total += w[i] = spent[i] ? 0 : exp(-log(t[i] / best) / T);
    double u = rg_rng_uniform(&r->rng) * total;
    int pick = -1;
    for (int i = 0; i < n && pick < 0; i++) {
        if (spent[i]) continue;
        if (u < w[i]) pick = i;
        u -= w[i];
    }
    if (pick < 0)   /* rounding left u just above the last weight */
        for (int i = n - 1; i >= 0 && pick < 0; i--)
            if (!spent[i]) pick = i;
    free(w);
    return pick;
}

static double neighbour_pred(const sr_problem *p, const cg_config *c)
{
    int i = sr_find(p, c);
    return i >= 0 ? pred_key(&p->points[i]) : INFINITY;
}

/* Index of the neighbour to measure: the best predicted, or at random to explore. */
static int choose_neighbour(sr_run *r, const cg_config *nb, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (neighbour_pred(r->p, &nb[i]) < neighbour_pred(r->p, &nb[best])) best = i;
    if (!isfinite(neighbour_pred(r->p, &nb[best])) || rg_rng_uniform(&r->rng) < ANNEAL_EXPLORE)
        return (int)rg_rng_below(&r->rng, (uint64_t)n);
    return best;
}

static void run_anneal(sr_run *r)
{
    const sr_problem *p = r->p;
    key_values kv[CFG_NKEYS];
    space_values(p, kv);
    int cap = r->budget, nmeas = 0, maxnb = 0;
    for (int k = 0; k < CFG_NKEYS; k++) maxnb += kv[k].n;
    cg_config *meas = rg_xmalloc((size_t)cap * sizeof *meas), *nb = rg_xmalloc((size_t)(maxnb ? maxnb : 1) * sizeof *nb);
    double *t = rg_xmalloc((size_t)cap * sizeof *t);
    unsigned char *spent = rg_xcalloc((size_t)cap, 1);   /* parents without unevaluated neighbours */
    int *order = rg_xmalloc((size_t)p->n * sizeof *order);
    by_prediction(p, order);
    /* the start: the model's best guess, or a random point without a model */
    int first = isfinite(p->points[order[0]].pred_ms) ? order[0] : random_unevaluated(r);
    cg_config c = p->points[first].cfg;
    while (sr_left(r)) {
        double x = sr_evaluate(r, &c);
        if (isfinite(x)) {
            meas[nmeas] = c;
            t[nmeas++] = x;
        }
        if (!sr_left(r)) break;
        double T = ANNEAL_T0 * (double)sr_left(r) / r->budget + 1e-3;
        int found = 0;
        for (;;) {
            int parent = pick_parent(r, t, spent, nmeas, T);
            if (parent < 0) break;
            int n = neighbours(r, kv, &meas[parent], nb);
            if (n == 0) {
                spent[parent] = 1;
                continue;
            }
            c = nb[choose_neighbour(r, nb, n)];
            found = 1;
            break;
        }
        if (!found) {   /* every measured config's neighbourhood is used up: restart at random */
            int i = random_unevaluated(r);
            if (i < 0) break;
            c = p->points[i].cfg;
        }
    }
    free(order);
    free(meas);
    free(nb);
    free(t);
    free(spent);
}

/* ================================================================ Bayesian optimisation ==== */

/* A Bayesian linear regression of log time on the config's cost-model encoding (explorer/calib.h:
 * the key table's one-hot bits and their pairs, plus an intercept), with the cost model's log
 * prediction as the prior mean, refitted after every measurement; the next point maximises expected
 * improvement. The prior sd of each weight is the problem's calibrated one where it has one (how
 * wrong the model was on that feature on held-out problems: wide where compaction's effect flips
 * between graphs, tight where the model is right everywhere) and its noise sd the misfit the
 * encoding left there; else SR_BO_W_SD for all and BO_NOISE. */
#define BO_NOISE 0.05          /* log-time noise sd: ~5% between repeated sweeps */
#define BO_W_SD_BARE 1.0       /* prior sd of a feature's effect without a model */
#define BO_B_SD 10.0           /* prior sd of the intercept (the level is unknown) */
#define BO_NFEAT CAL_NFEAT

typedef struct bo_state {
    gsl_matrix *A;             /* posterior precision, then its Cholesky factor */
    gsl_vector *b, *w, *v;
    double *offset;            /* [n] prior mean of each point's log time */
    double *X;                 /* [n * BO_NFEAT] */
    const double *prior_sd;    /* [BO_NFEAT] the problem's calibrated prior, or NULL */
    int have_model;
} bo_state;

static void bo_init(const sr_problem *p, int calibrated, bo_state *s)
{
    s->A = gsl_matrix_alloc(BO_NFEAT, BO_NFEAT);
    s->b = gsl_vector_alloc(BO_NFEAT);
    s->w = gsl_vector_alloc(BO_NFEAT);
    s->v = gsl_vector_alloc(BO_NFEAT);
    s->offset = rg_xmalloc((size_t)p->n * sizeof *s->offset);
    s->X = rg_xmalloc((size_t)p->n * BO_NFEAT * sizeof *s->X);
    double mean = 0;
    int known = 0;
    for (int i = 0; i < p->n; i++) {
        cal_features(&p->points[i].cfg, s->X + (size_t)i * BO_NFEAT);
        if (isfinite(p->points[i].pred_ms) && p->points[i].pred_ms > 0) {
            mean += log(p->points[i].pred_ms);
            known++;
        }
    }
    s->have_model = known > 0;
    s->prior_sd = s->have_model && calibrated ? p->prior_sd : NULL;
    mean = known ? mean / known : 0;
    for (int i = 0; i < p->n; i++)
        s->offset[i] = isfinite(p->points[i].pred_ms) && p->points[i].pred_ms > 0 ? log(p->points[i].pred_ms) : mean;
}

static void bo_free(bo_state *s)
{
    gsl_matrix_free(s->A);
    gsl_vector_free(s->b);
    gsl_vector_free(s->w);
    gsl_vector_free(s->v);
    free(s->offset);
    free(s->X);
}

/* Posterior of the weights given the measured points (idx, log times y). */
static void bo_fit(bo_state *s, const int *idx, const double *y, int m)
{
    double noise = s->prior_sd && isfinite(s->prior_sd[0]) ? s->prior_sd[0] : BO_NOISE;
    double wsd = s->have_model ? SR_BO_W_SD : BO_W_SD_BARE, prec = 1 / (noise * noise);
    gsl_matrix_set_zero(s->A);
    gsl_vector_set_zero(s->b);
    for (int j = 0; j < BO_NFEAT; j++) {
        double sd = j == 0 ? BO_B_SD : s->prior_sd && isfinite(s->prior_sd[j]) ? s->prior_sd[j] : wsd;
        gsl_matrix_set(s->A, j, j, 1 / (sd * sd));
    }
    for (int k = 0; k < m; k++) {
        const double *x = s->X + (size_t)idx[k] * BO_NFEAT;
        double r = y[k] - s->offset[idx[k]];
        for (int a = 0; a < BO_NFEAT; a++) {
            if (x[a] == 0) continue;
            *gsl_vector_ptr(s->b, a) += prec * x[a] * r;
            for (int c = 0; c < BO_NFEAT; c++) *gsl_matrix_ptr(s->A, a, c) += prec * x[a] * x[c];
        }
    }
    /* the prior keeps A positive definite */
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int rc = gsl_linalg_cholesky_decomp1(s->A);
    gsl_set_error_handler(old);
    RG_ASSERT(rc == 0);
    gsl_linalg_cholesky_solve(s->A, s->b, s->w);
}

/* Expected improvement (in log time) of point i over the best log time f. */
static double bo_ei(bo_state *s, int i, double f)
{
    const double *x = s->X + (size_t)i * BO_NFEAT;
    double mu = s->offset[i];
    for (int a = 0; a < BO_NFEAT; a++) mu += x[a] * gsl_vector_get(s->w, a);
    for (int a = 0; a < BO_NFEAT; a++) gsl_vector_set(s->v, a, x[a]);
    gsl_blas_dtrsv(CblasLower, CblasNoTrans, CblasNonUnit, s->A, s->v);
    double var, sd;
    gsl_blas_ddot(s->v, s->v, &var);
    sd = sqrt(var);
    if (sd < 1e-12) return fmax(f - mu, 0);
    double z = (f - mu) / sd;
    return (f - mu) * gsl_cdf_ugaussian_P(z) + sd * gsl_ran_ugaussian_pdf(z);
}

static void run_bo_prior(sr_run *r, int calibrated)
{
    const sr_problem *p = r->p;
    bo_state s;
    bo_init(p, calibrated, &s);
    int *idx = rg_xmalloc((size_t)r->budget * sizeof *idx), m = 0;
    double *y = rg_xmalloc((size_t)r->budget * sizeof *y);
    int *order = rg_xmalloc((size_t)p->n * sizeof *order);
    by_prediction(p, order);
    int next = s.have_model ? order[0] : random_unevaluated(r);
    while (sr_left(r) && next >= 0) {
        double t = evaluate_point(r, next);
        if (isfinite(t)) {
            idx[m] = next;
            y[m++] = log(t);
        }
        if (!sr_left(r)) break;
        if (m == 0) {   /* nothing measured yet: nothing to learn from */
            next = random_unevaluated(r);
            continue;
        }
        bo_fit(&s, idx, y, m);
        double f = INFINITY, best_ei = -1;
        for (int k = 0; k < m; k++) f = fmin(f, y[k]);
        next = -1;
        for (int k = 0; k < p->n; k++) {   /* in prediction order: ties go to the model's favourite */
            int i = order[k];
            if (r->done[i]) continue;
            double ei = bo_ei(&s, i, f);
            if (ei > best_ei) best_ei = ei, next = i;
        }
    }
    free(idx);
    free(y);
    free(order);
    bo_free(&s);
}

/* The calibrated prior where the problem has one (explorer/calib.h), and the fixed one, to compare. */
static void run_bo(sr_run *r) { run_bo_prior(r, 1); }
static void run_bo_fixed(sr_run *r) { run_bo_prior(r, 0); }

/* ================================================================ the table ==== */

static const sr_strategy STRATEGIES[] = {
    {"random", "uniform random order (seeded): the baseline", run_random, 0},
    {"model", "the cost model's ranking, best predicted first", run_model, 0},
    {"static", "the static list (best geomean on the other datasets), then random", run_static, 0},
    {"anneal", "model-guided simulated annealing: one-key mutations of the best so far", run_anneal, 0},
    {"bo", "Bayesian optimisation: linear surrogate over the config encoding, expected improvement; its prior "
           "calibrated on the model's held-out errors where replay has them", run_bo, 1},
    {"bo-fixed", "bo with one fixed prior sd for every feature (bo before calibration)", run_bo_fixed, 0},
};
#define NSTRATEGIES (int)(sizeof STRATEGIES / sizeof *STRATEGIES)

int sr_nstrategies(void) { return NSTRATEGIES; }

const sr_strategy *sr_strategy_at(int i)
{
    RG_ASSERT(i >= 0 && i < NSTRATEGIES);
    return &STRATEGIES[i];
}

const sr_strategy *sr_strategy_find(const char *name)
{
    for (int i = 0; i < NSTRATEGIES; i++)
        if (!strcmp(STRATEGIES[i].name, name)) return &STRATEGIES[i];
    return NULL;
}

void sr_search(const sr_strategy *s, const sr_problem *p, int budget, uint64_t seed, double *best)
{
    sr_search_eval(s, p, budget, seed, NULL, best);
}

/* One search; *drew (may be NULL) receives whether it drew any random number: a search that drew
 * none gives the same sequence for every seed. */
static int search_run(const sr_strategy *s, const sr_problem *p, int budget, uint64_t seed, const sr_evaluator *ev,
                      double *best, int *drew)
{
    RG_ASSERT(budget >= 1 && budget <= p->n);
    sr_run r = {.p = p, .ev = ev ? *ev : (sr_evaluator){replay_time, NULL}, .budget = budget, .best = best,
                .best_ms = NAN};
    /* the problem goes into the seed: with one seed for all, every problem of the same size would
     * get the same permutation, and their errors would not average out over problems */
    char id[600];
    snprintf(id, sizeof id, "%s/%s/%s/%d/%d/%d", p->prob.model, p->prob.task, p->prob.dataset, p->prob.dim_in,
             p->prob.dim_out, p->prob.heads);
    rg_rng_seed(&r.rng, seed ^ rg_fnv1a64(id, strlen(id), RG_FNV_SEED));
    rg_rng seeded = r.rng;
    r.done = rg_xcalloc((size_t)p->n, 1);
    s->run(&r);
    if (drew) *drew = memcmp(&seeded, &r.rng, sizeof seeded) != 0;
    /* a strategy that stops early (it ran out of points, or the evaluator stopped it) found
     * nothing more */
    int used = r.used;
    while (r.used < budget) r.best[r.used++] = r.best_ms;
    free(r.done);
    free(r.outside);
    return used;
}

int sr_search_eval(const sr_strategy *s, const sr_problem *p, int budget, uint64_t seed, const sr_evaluator *ev,
                   double *best)
{
    return search_run(s, p, budget, seed, ev, best, NULL);
}

/* ================================================================ scores ==== */

const double SR_FRACS[SR_NFRACS] = {0.01, 0.02, 0.05, 0.10};

int sr_frac_budget(double frac, int n)
{
    int t = (int)floor(frac * n + 1e-9);
    return t < 1 ? 1 : t > n ? n : t;
}

double sr_random_expected(const sr_problem *p, int t) { return ys_random_expected(p->sorted_ms, p->n, t); }

double sr_p_score(const sr_problem *p, const double *found, int budget)
{
    double sum = 0;
    int counted = 0;
    for (int t = 1; t <= budget && t <= p->n; t++) {
        double rnd = sr_random_expected(p, t), f = isfinite(found[t - 1]) ? found[t - 1] : p->worst_ms;
        if (rnd - p->oracle_ms <= 1e-12 * p->oracle_ms) continue;
        sum += (rnd - f) / (rnd - p->oracle_ms);
        counted++;
    }
    return counted ? sum / counted : NAN;
}

void sr_replay(const sr_strategy *s, const sr_problem *p, int budget, uint64_t seed, int runs, sr_result *out)
{
    RG_ASSERT(runs >= 1);
    memset(out, 0, sizeof *out);
    out->budget = budget;
    out->runs = runs;
    out->curve = rg_xcalloc((size_t)budget, sizeof *out->curve);
    double *best = rg_xmalloc((size_t)budget * sizeof *best);
    for (int k = 0, drew = 1; k < runs && drew; k++) {
        search_run(s, p, budget, seed + (uint64_t)k, NULL, best, &drew);
        /* a run that drew no random number (the model's ranking, bo with a model) is every run */
        double weight = drew ? 1.0 / runs : (double)(runs - k) / runs;
        for (int t = 0; t < budget; t++) out->curve[t] += (isfinite(best[t]) ? best[t] : p->worst_ms) * weight;
    }
    free(best);
    for (int f = 0; f < SR_NFRACS; f++) {
        int t = sr_frac_budget(SR_FRACS[f], p->n);
        out->at_frac[f] = t <= budget ? out->curve[t - 1] / p->oracle_ms : NAN;
    }
    out->p_score = sr_p_score(p, out->curve, budget);
}

void sr_result_free(sr_result *r)
{
    free(r->curve);
    memset(r, 0, sizeof *r);
}

/* ================================================================ the oracle ==== */

/* The space the stored points span: each key with the values it takes among them (the smallest
 * space whose sweep stored these points), as explorer/space.c enumerates it. */
static void stored_space(const sr_problem *p, sp_space *sp)
{
    key_values kv[CFG_NKEYS];
    space_values(p, kv);
    memset(sp, 0, sizeof *sp);
    snprintf(sp->name, sizeof sp->name, "stored points");
    RG_ASSERT(CFG_NKEYS <= SP_MAX_DIMS);
    for (int k = 0; k < CFG_NKEYS; k++) {
        const cfg_key *key = cfg_key_at(k);
        sp_dim *d = &sp->dims[sp->ndims++];
        snprintf(d->key, sizeof d->key, "%s", key->name);
        RG_ASSERT(kv[k].n <= SP_MAX_VALS);   /* no key has more allowed values */
        for (int j = 0; j < kv[k].n; j++) {
            cg_config c = p->points[0].cfg;
            char buf[CFG_VALUE_MAX];
            key->set(&c, kv[k].code[j]);
            snprintf(d->vals[d->nvals++], sizeof d->vals[0], "%s", cfg_value(key, &c, buf));
        }
    }
}

int sr_oracle_exhaustive(const sr_problem *p, int *nvalid)
{
    if (nvalid) *nvalid = -1;
    if (p->n < SR_MIN_POINTS) return 0;   /* a spot check spans only itself: it is no sweep */
    sp_space sp;
    stored_space(p, &sp);
    sp_point *pts;
    int n, covered = 1, valid = 0;
    /* a span past what space.c enumerates is far more than any store holds */
    if (sp_enumerate(&sp, &pts, &n, NULL)) return 0;
    for (int i = 0; i < n; i++) {
        if (!pts[i].valid) continue;
        valid++;
        cg_config c;
        sp_config_at(&sp, i, &c);
        if (sr_find(p, &c) < 0) covered = 0;
    }
    free(pts);
    if (nvalid) *nvalid = valid;
    return covered;
}

const char *sr_oracle_label(const sr_problem *p, char *buf, size_t cap)
{
    int measured = 0;
    for (int i = 0; i < p->n; i++) measured += measurable(p->points[i].time_ms);
    if (sr_oracle_exhaustive(p, NULL)) snprintf(buf, cap, "exhaustive");
    else snprintf(buf, cap, "best of %d measured", measured);
    return buf;
}
