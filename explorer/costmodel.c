/* Cost models that pick a config per dataset without a full sweep: features from graph statistics,
 * config and IR counts; a robust per-category analytic model and a ridge ranking model (GSL). */
#include "explorer/costmodel.h"
#include "codegen/codegen.h"
#include "codegen/counts.h"
#include "codegen/pipeline.h"
#include "datasets/dataset.h"
#include "results/store.h"
#include "results/yardstick.h"

#include <errno.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ================================================================ categories, sets ==== */

static const char *const CAT_NAMES[CM_NCAT + 1] = {"gemm", "traversal", "other", "total"};

const char *cm_category_name(int cat)
{
    RG_ASSERT(cat >= 0 && cat <= CM_NCAT);
    return CAT_NAMES[cat];
}

int cm_category_of(const char *name)
{
    if (!strcmp(name, "gemm")) return CM_GEMM;
    if (!strcmp(name, "traversal")) return CM_TRAVERSAL;
    return CM_OTHER;
}

static int same_problem(const cm_problem *a, const cm_problem *b)
{
    return !strcmp(a->model, b->model) && !strcmp(a->task, b->task) && !strcmp(a->dataset, b->dataset) &&
           a->dim_in == b->dim_in && a->dim_out == b->dim_out && a->heads == b->heads;
}

/* Same model, task, dims and heads: problems whose configs compete on different graphs. */
static int same_kind(const cm_problem *a, const cm_problem *b)
{
    return !strcmp(a->model, b->model) && !strcmp(a->task, b->task) && a->dim_in == b->dim_in &&
           a->dim_out == b->dim_out && a->heads == b->heads;
}

int cm_set_problem(cm_set *s, const cm_problem *p)
{
    for (int i = 0; i < s->nproblems; i++)
        if (same_problem(&s->problems[i], p)) return i;
    if (s->nproblems == s->cap_problems) {
        s->cap_problems = s->cap_problems ? 2 * s->cap_problems : 16;
        s->problems = rg_xrealloc(s->problems, (size_t)s->cap_problems * sizeof *s->problems);
    }
    s->problems[s->nproblems] = *p;
    return s->nproblems++;
}

void cm_set_add(cm_set *s, const cm_sample *x)
{
    RG_ASSERT(x->problem >= 0 && x->problem < s->nproblems);
    if (s->nsamples == s->cap_samples) {
        s->cap_samples = s->cap_samples ? 2 * s->cap_samples : 256;
        s->samples = rg_xrealloc(s->samples, (size_t)s->cap_samples * sizeof *s->samples);
    }
    s->samples[s->nsamples] = *x;
    s->samples[s->nsamples++].cfg_key = cfg_hash(&x->cfg);
}

/* A copy of s without the problems that drop[] marks. */
static void set_without(const cm_set *s, const int *drop, cm_set *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->device, sizeof out->device, "%s", s->device);
    snprintf(out->source, sizeof out->source, "%s", s->source);
    int *renum = rg_xmalloc(((size_t)s->nproblems + 1) * sizeof *renum);
    for (int q = 0; q < s->nproblems; q++) renum[q] = drop[q] ? -1 : cm_set_problem(out, &s->problems[q]);
    for (int i = 0; i < s->nsamples; i++) {
        if (renum[s->samples[i].problem] < 0) continue;
        cm_sample x = s->samples[i];
        x.problem = renum[x.problem];
        cm_set_add(out, &x);
    }
    free(renum);
}

void cm_set_without_dataset(const cm_set *s, const char *dataset, cm_set *out)
{
    int *drop = rg_xmalloc(((size_t)s->nproblems + 1) * sizeof *drop);
    for (int q = 0; q < s->nproblems; q++) drop[q] = !strcmp(s->problems[q].dataset, dataset);
    set_without(s, drop, out);
    free(drop);
}

void cm_set_without_size(const cm_set *s, int dim_in, int dim_out, int heads, cm_set *out)
{
    int *drop = rg_xmalloc(((size_t)s->nproblems + 1) * sizeof *drop);
    for (int q = 0; q < s->nproblems; q++) {
        const cm_problem *p = &s->problems[q];
        drop[q] = p->dim_in == dim_in && p->dim_out == dim_out && p->heads == heads;
    }
    set_without(s, drop, out);
    free(drop);
}

void cm_set_free(cm_set *s)
{
    free(s->problems);
    free(s->samples);
    memset(s, 0, sizeof *s);
}

/* ================================================================ reading the store ==== */

/* One ok measurement per (device, dataset, variant): the newest one from the commit that
 * measured most of the problem's configs (ties: the newest commit). A problem's configs are
 * then compared as one code version measured them, never old kernels against new ones (a
 * partial re-sweep of a few configs after a change would otherwise be its oracle). */
#define CM_NEWEST_OK                                                                                      \
    "WITH ok AS (SELECT m.id, m.device_key, m.dataset_id, m.variant_id, m.git_commit, v.model, v.task,"    \
    "                   v.dim_in, v.dim_out, v.heads"                                                      \
    "            FROM measurements m JOIN variants v ON v.id = m.variant_id"                               \
    "            WHERE m.status = 'ok' AND m.system = 'generated' AND m.layer = ''),"                      \
    " per_commit AS (SELECT device_key, dataset_id, model, task, dim_in, dim_out, heads, git_commit,"      \
    "                       count(DISTINCT variant_id) AS n, max(id) AS newest FROM ok"                    \
    "                GROUP BY device_key, dataset_id, model, task, dim_in, dim_out, heads, git_commit),"   \
    " chosen AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY device_key, dataset_id, model,"  \
    "                   task, dim_in, dim_out, heads ORDER BY n DESC, newest DESC) AS rn FROM per_commit)"  \
    "            WHERE rn = 1)"                                                                            \
    " SELECT max(ok.id) FROM ok JOIN chosen"                                                               \
    "   USING (device_key, dataset_id, model, task, dim_in, dim_out, heads, git_commit)"                   \
    " GROUP BY ok.device_key, ok.dataset_id, ok.variant_id"

static const char *const ROWS_SQL =
    "SELECT m.id, m.device_key, d.name, d.nodes, d.edges, d.unique_pairs, d.node_types, d.edge_types,"
    " d.avg_degree, d.density, d.compaction_ratio, d.rel_min, d.rel_max, d.rel_median, d.rel_skew,"
    " d.max_in_degree, d.in_degree_skew, v.model, v.task, v.dim_in, v.dim_out, v.heads,"
    " v.config, m.median_ms, m.gemm_ms, m.traversal_ms, m.other_ms"
    " FROM measurements m JOIN variants v ON v.id = m.variant_id JOIN datasets d ON d.id = m.dataset_id"
    " WHERE m.id IN (" CM_NEWEST_OK ") AND m.device_key = ?1 AND (?2 IS NULL OR v.model = ?2)"
    " ORDER BY m.id";

static const char *const KERNELS_SQL =
    "SELECT measurement_id, category, sum(median_ns), count(*) FROM kernel_times"
    " WHERE measurement_id IN (" CM_NEWEST_OK ") GROUP BY measurement_id, category";

static const char *const METRICS_SQL =
    "SELECT measurement_id, name, value FROM metrics WHERE kernel = '' AND value IS NOT NULL AND name IN"
    " ('analytic_flops', 'analytic_bytes', 'analytic_atomics', 'analytic_launches',"
    "  'flops', 'bytes', 'atomics', 'launches') AND measurement_id IN (" CM_NEWEST_OK ")";

/* One measurement while it is being read: what the three queries contribute. */
typedef struct pending {
    int64_t id;
    cm_problem prob;
    cg_config cfg;
    int cfg_ok, stats_ok;
    double time_ms, col_ms[CM_NCAT], kern_ms[CM_NCAT], kern_n[CM_NCAT];
    int have_kernels;
    double count[4];           /* flops, bytes, atomics, launches; NaN unknown */
    int count_rank[4];         /* 2: analytic_<name>, 1: <name>, 0: none */
} pending;

static int db_err(sqlite3 *db, const char *path, rg_err *err)
{
    return rg_errf(err, "%s: %s", path, sqlite3_errmsg(db));
}

static const char *col_text(sqlite3_stmt *st, int c)
{
    const unsigned char *t = sqlite3_column_text(st, c);
    return t ? (const char *)t : "";
}

static double col_double(sqlite3_stmt *st, int c)
{
    return sqlite3_column_type(st, c) == SQLITE_NULL ? NAN : sqlite3_column_double(st, c);
}

/* The config stored as JSON, back to a cg_config. */
static int read_config(sqlite3_stmt *st, int col, cg_config *cfg)
{
    cfg_default(cfg);
    return sqlite3_column_type(st, col) != SQLITE_NULL && cfg_parse_json(cfg, col_text(st, col), NULL) == 0;
}

static void read_row(sqlite3_stmt *st, pending *p)
{
    memset(p, 0, sizeof *p);
    p->id = sqlite3_column_int64(st, 0);
    snprintf(p->prob.dataset, sizeof p->prob.dataset, "%s", col_text(st, 2));
    hg_stats *s = &p->prob.stats;
    p->stats_ok = sqlite3_column_type(st, 3) != SQLITE_NULL && sqlite3_column_type(st, 4) != SQLITE_NULL;
    s->nodes = sqlite3_column_int64(st, 3);
    s->edges = sqlite3_column_int64(st, 4);
    s->unique_pairs = sqlite3_column_int64(st, 5);
    s->node_types = sqlite3_column_int(st, 6);
    s->edge_types = sqlite3_column_int(st, 7);
    s->avg_degree = col_double(st, 8);
    s->density = col_double(st, 9);
    s->compaction_ratio = col_double(st, 10);
    s->rel_min = sqlite3_column_int64(st, 11);
    s->rel_max = sqlite3_column_int64(st, 12);
    s->rel_median = col_double(st, 13);
    s->rel_skew = col_double(st, 14);
    s->max_in_degree = sqlite3_column_int64(st, 15);
    s->in_degree_skew = col_double(st, 16);
    snprintf(p->prob.model, sizeof p->prob.model, "%s", col_text(st, 17));
    const char *task;
    if (pl_parse_task(col_text(st, 18), &task, NULL)) task = "?";
    snprintf(p->prob.task, sizeof p->prob.task, "%s", task);
    p->prob.dim_in = sqlite3_column_int(st, 19);
    p->prob.dim_out = sqlite3_column_int(st, 20);
    p->prob.heads = sqlite3_column_int(st, 21);
    p->cfg_ok = read_config(st, 22, &p->cfg);
    p->time_ms = col_double(st, 23);
    for (int c = 0; c < CM_NCAT; c++) p->col_ms[c] = col_double(st, 24 + c);
    for (int k = 0; k < 4; k++) p->count[k] = NAN;
}

static int cmp_pending_id(const void *key, const void *elem)
{
    int64_t a = *(const int64_t *)key, b = ((const pending *)elem)->id;
    return (a > b) - (a < b);
}

static pending *find_pending(pending *rows, int n, int64_t id)
{
    return bsearch(&id, rows, (size_t)n, sizeof *rows, cmp_pending_id);
}

/* Which device to read: the one asked for, or the only one with ok measurements. */
static int choose_device(sqlite3 *db, const char *path, const char *want, char *out, size_t cap, rg_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT device_key, count(*) FROM measurements WHERE status = 'ok' AND system = 'generated'"
                           " GROUP BY device_key ORDER BY 2 DESC",
                           -1, &st, NULL) != SQLITE_OK)
        return db_err(db, path, err);
    rg_str all = {0};
    int n = 0, found = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *d = col_text(st, 0);
        if (want && !strcmp(d, want)) found = 1;
        if (n++ == 0) snprintf(out, cap, "%s", d);
        rg_str_printf(&all, "%s'%s' (%lld)", all.len ? ", " : "", d, (long long)sqlite3_column_int64(st, 1));
    }
    sqlite3_finalize(st);
    int rc = 0;
    if (n == 0) rc = rg_errf(err, "%s: no successful measurements of generated variants", path);
    else if (want && !found) rc = rg_errf(err, "%s: no successful measurements on device '%s' (there are: %s)", path, want, all.s);
    else if (want) snprintf(out, cap, "%s", want);
    else if (n > 1) rc = rg_errf(err, "%s: measurements of several devices (%s): choose one with --device", path, all.s);
    rg_str_free(&all);
    return rc;
}

static int read_rows(sqlite3 *db, const char *path, const char *device, const cm_filter *f, pending **out, int *n,
                     rg_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, ROWS_SQL, -1, &st, NULL) != SQLITE_OK) return db_err(db, path, err);
    sqlite3_bind_text(st, 1, device, -1, SQLITE_TRANSIENT);
    if (f->model) sqlite3_bind_text(st, 2, f->model, -1, SQLITE_TRANSIENT);
    int cap = 256, rc;
    *n = 0;
    *out = rg_xmalloc((size_t)cap * sizeof **out);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) *out = rg_xrealloc(*out, (size_t)(cap *= 2) * sizeof **out);
        read_row(st, &(*out)[*n]);
        if (f->task && strcmp((*out)[*n].prob.task, f->task)) continue;
        (*n)++;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_err(db, path, err);
}

static int read_kernels(sqlite3 *db, const char *path, pending *rows, int n, rg_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, KERNELS_SQL, -1, &st, NULL) != SQLITE_OK) return db_err(db, path, err);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        pending *p = find_pending(rows, n, sqlite3_column_int64(st, 0));
        if (!p) continue;
        int c = cm_category_of(col_text(st, 1));
        p->kern_ms[c] += sqlite3_column_double(st, 2) / 1e6;
        p->kern_n[c] += (double)sqlite3_column_int64(st, 3);
        p->have_kernels = 1;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_err(db, path, err);
}

static int read_metrics(sqlite3 *db, const char *path, pending *rows, int n, rg_err *err)
{
    static const char *const names[4] = {"flops", "bytes", "atomics", "launches"};
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, METRICS_SQL, -1, &st, NULL) != SQLITE_OK) return db_err(db, path, err);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        pending *p = find_pending(rows, n, sqlite3_column_int64(st, 0));
        if (!p) continue;
        const char *name = col_text(st, 1);
        int rank = strncmp(name, "analytic_", 9) ? 1 : 2;
        if (rank == 2) name += 9;
        for (int k = 0; k < 4; k++)
            if (!strcmp(name, names[k]) && rank > p->count_rank[k]) {
                p->count[k] = sqlite3_column_double(st, 2);
                p->count_rank[k] = rank;
            }
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_err(db, path, err);
}

/* A read measurement as a sample; 0 when it lacks what the models need. */
static int to_sample(cm_set *s, const pending *p, cm_sample *x)
{
    if (!p->stats_ok || !p->cfg_ok || !(p->time_ms > 0) || !isfinite(p->count[0]) || !isfinite(p->count[1]))
        return 0;
    memset(x, 0, sizeof *x);
    x->measurement_id = p->id;
    x->problem = cm_set_problem(s, &p->prob);
    x->cfg = p->cfg;
    x->time_ms = p->time_ms;
    x->counts.flops = p->count[0];
    x->counts.bytes = p->count[1];
    x->counts.atomics = isfinite(p->count[2]) ? p->count[2] : 0;   /* the sweep omits zero atomics */
    double kernels = 0;
    for (int c = 0; c < CM_NCAT; c++) {
        /* kernel rows give exact category times and launch counts; else the summary columns */
        x->cat_ms[c] = p->have_kernels ? p->kern_ms[c] : p->col_ms[c];
        x->counts.cat_launches[c] = p->kern_n[c];
        kernels += p->kern_n[c];
    }
    x->counts.launches = isfinite(p->count[3]) ? p->count[3] : kernels;
    return 1;
}

int cm_set_load(const char *db_path, const cm_filter *f, cm_set *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    cm_filter none = {0};
    if (!f) f = &none;
    /* the store's reader refuses what is not one of our stores, or a damaged one, and never
     * writes (a store in a read-only folder is read as it is) */
    rs_store *reader = rs_open_read(db_path, err);
    if (!reader) return -1;
    sqlite3 *db = rs_detach(reader);
    pending *rows = NULL;
    int n = 0, rc = -1;
    if (choose_device(db, db_path, f->device, out->device, sizeof out->device, err) ||
        read_rows(db, db_path, out->device, f, &rows, &n, err) || read_kernels(db, db_path, rows, n, err) ||
        read_metrics(db, db_path, rows, n, err))
        goto done;
    snprintf(out->source, sizeof out->source, "%s", db_path);
    for (int i = 0; i < n; i++) {
        cm_sample x;
        if (to_sample(out, &rows[i], &x)) cm_set_add(out, &x);
        else out->skipped++;
    }
    if (out->nsamples == 0) {
        rg_errf(err, "%s: no usable measurements%s%s%s%s on '%s' (%d without dataset statistics or analytic counts)",
                db_path, f->model ? " of " : "", f->model ? f->model : "", f->task ? " " : "", f->task ? f->task : "",
                out->device, out->skipped);
        goto done;
    }
    rc = 0;
done:
    free(rows);
    sqlite3_close(db);
    if (rc) cm_set_free(out);
    return rc;
}

/* ================================================================ features ==== */

/* Problem features: everything about the graph and the layer shape that decides which configs win. */
enum { Z_NODES, Z_EDGES, Z_ETYPES, Z_NTYPES, Z_COMPACTION, Z_DEGREE, Z_IN_SKEW, Z_REL_SPREAD, Z_REL_SKEW,
       Z_DIM_IN, Z_DIM_OUT, Z_HEADS, NZ };
static const char *const Z_NAMES[NZ] = {"log_nodes", "log_edges", "log_etypes", "log_ntypes", "log_compaction",
                                        "log_degree", "in_skew", "rel_spread", "rel_skew", "log_dim_in",
                                        "log_dim_out", "log_heads"};
/* Config encodings: the key table's one-hot bits (cfg_features). */
enum { NC = CFG_NFEATURES };
/* Analytic counts (logs: times scale multiplicatively with them). */
enum { A_FLOPS, A_BYTES, A_ATOMICS, A_LAUNCHES, A_PRED, NA };
static const char *const A_NAMES[NA] = {"log_flops", "log_bytes", "log_atomics", "log_launches", "log_pred_a"};

/* Pairs of config bits: an option's effect can change sign with another's (compaction helps
 * node-centric RGAT training and hurts its edge-centric kernels on the same graph). Of the first
 * CM_NPAIRED bits only (costmodel.h says why). */
enum { NCP = CM_NPAIRED };
#define NPAIR (NCP * (NCP - 1) / 2)
/* Problem size against the GEMM tile: a block computes tile x tile outputs, so a product
 * narrower than the tile leaves lanes idle, in proportion to log2(tile / width). Linear terms
 * in log dims cannot express that kink (at dims 16 tile 16 wins, with 4 heads at dims 128
 * tile 32 does): typed linears are dim_out wide, per-head ones (HGT's attention and
 * message) dim_out / heads. Both are 0 at dims 64 heads 1, so fits on such stores are
 * unchanged. */
enum { S_TILE_OUT, S_TILE_HEAD, NS };
static const char *const S_NAMES[NS] = {"tile_idle_dim_out", "tile_idle_head_dim"};
#define NFEAT (NC + NA + NC * NZ + NPAIR + NS)

/* The two config bits of pair k (i < j, in row order). */
static void pair_of(int k, int *i, int *j)
{
    RG_ASSERT(k >= 0 && k < NPAIR);
    for (*i = 0; k >= NCP - 1 - *i; (*i)++) k -= NCP - 1 - *i;
    *j = *i + 1 + k;
}

int cm_nfeatures(void) { return NFEAT; }

const char *cm_feature_name(int i)
{
    static char names[NFEAT][48];
    RG_ASSERT(i >= 0 && i < NFEAT);
    if (!names[i][0]) {
        if (i < NC) snprintf(names[i], sizeof names[i], "%s", cfg_feature_name(i));
        else if (i < NC + NA) snprintf(names[i], sizeof names[i], "%s", A_NAMES[i - NC]);
        else if (i < NC + NA + NC * NZ)
            snprintf(names[i], sizeof names[i], "%s*%s", cfg_feature_name((i - NC - NA) / NZ),
                     Z_NAMES[(i - NC - NA) % NZ]);
        else if (i >= NC + NA + NC * NZ + NPAIR)
            snprintf(names[i], sizeof names[i], "%s", S_NAMES[i - NC - NA - NC * NZ - NPAIR]);
        else {
            int a, b;
            pair_of(i - NC - NA - NC * NZ, &a, &b);
            snprintf(names[i], sizeof names[i], "%s*%s", cfg_feature_name(a), cfg_feature_name(b));
        }
    }
    return names[i];
}

static double safe_log(double v, double floor) { return log(v > floor ? v : floor); }

static void problem_features(const cm_problem *p, double z[NZ])
{
    const hg_stats *s = &p->stats;
    z[Z_NODES] = safe_log((double)s->nodes, 1);
    z[Z_EDGES] = safe_log((double)s->edges, 1);
    z[Z_ETYPES] = safe_log(s->edge_types, 1);
    z[Z_NTYPES] = safe_log(s->node_types, 1);
    z[Z_COMPACTION] = safe_log(isfinite(s->compaction_ratio) ? s->compaction_ratio : 1, 1e-6);
    z[Z_DEGREE] = safe_log(isfinite(s->avg_degree) ? s->avg_degree : 1, 1e-6);
    /* asinh: a log-like scale that keeps the sign of a skewness */
    z[Z_IN_SKEW] = isfinite(s->in_degree_skew) ? asinh(s->in_degree_skew) : 0;
    z[Z_REL_SPREAD] = log(((double)s->rel_max + 1) / ((isfinite(s->rel_median) ? s->rel_median : 0) + 1));
    z[Z_REL_SKEW] = isfinite(s->rel_skew) ? asinh(s->rel_skew) : 0;
    z[Z_DIM_IN] = safe_log(p->dim_in, 1);
    z[Z_DIM_OUT] = safe_log(p->dim_out, 1);
    z[Z_HEADS] = safe_log(p->heads, 1);
}

void cm_features(const cm_problem *p, const cg_config *c, const cm_counts *k, double log_pred_a, double *x)
{
    double z[NZ];
    problem_features(p, z);
    cfg_features(c, x);
    double *a = x + NC;
    a[A_FLOPS] = safe_log(k->flops, 1);
    a[A_BYTES] = safe_log(k->bytes, 1);
    a[A_ATOMICS] = log1p(k->atomics > 0 ? k->atomics : 0);
    a[A_LAUNCHES] = safe_log(k->launches, 1);
    a[A_PRED] = log_pred_a;
    double *inter = x + NC + NA;
    for (int i = 0; i < NC; i++)
        for (int j = 0; j < NZ; j++) inter[i * NZ + j] = x[i] * z[j];
    double *pairs = inter + NC * NZ;
    for (int k = 0, i = 0; i < NCP; i++)
        for (int j = i + 1; j < NCP; j++) pairs[k++] = x[i] * x[j];
    double *size = pairs + NPAIR, head_dim = p->heads > 0 ? (double)p->dim_out / p->heads : p->dim_out;
    size[S_TILE_OUT] = p->dim_out > 0 && c->tile > p->dim_out ? log2((double)c->tile / p->dim_out) : 0;
    size[S_TILE_HEAD] = head_dim > 0 && c->tile > head_dim ? log2(c->tile / head_dim) : 0;
}

/* ================================================================ (a) analytic model ==== */

/* The regressors of category cat (CM_NCAT: total) in ms / count units. */
static void analytic_row(const cm_counts *k, int cat, double bw, double peak, double r[CM_A_NCOEF])
{
    r[CM_A_BYTES] = k->bytes / bw * 1e3;
    r[CM_A_FLOPS] = k->flops / peak * 1e3;
    r[CM_A_LAUNCH] = cat < CM_NCAT ? k->cat_launches[cat] : k->launches;
    r[CM_A_CONST] = 1;
}

static double analytic_target(const cm_sample *x, int cat) { return cat < CM_NCAT ? x->cat_ms[cat] : x->time_ms; }

/* Fits y = X c on the columns that vary (each scaled to unit RMS, so that ms and launch counts
 * condition alike); columns that do not vary keep coefficient 0. 0, or -1 if GSL fails. */
static int fit_columns(const double *X, const double *y, int n, double *coef, int robust, double *sigma)
{
    int keep[CM_A_NCOEF], p = 0;
    double scale[CM_A_NCOEF];
    for (int j = 0; j < CM_A_NCOEF; j++) {
        double lo = X[j], hi = X[j], ss = 0;
        for (int i = 0; i < n; i++) {
            double v = X[i * CM_A_NCOEF + j];
            lo = fmin(lo, v);
            hi = fmax(hi, v);
            ss += v * v;
        }
        coef[j] = 0;
        scale[j] = sqrt(ss / n);
        /* a constant column is the intercept's business */
        if (j == CM_A_CONST || (hi - lo > 1e-12 * fmax(fabs(hi), fabs(lo)) && scale[j] > 0)) keep[p++] = j;
    }
    gsl_matrix *A = gsl_matrix_alloc((size_t)n, (size_t)p);
    gsl_vector *b = gsl_vector_alloc((size_t)n), *c = gsl_vector_alloc((size_t)p);
    gsl_matrix *cov = gsl_matrix_alloc((size_t)p, (size_t)p);
    for (int i = 0; i < n; i++) {
        gsl_vector_set(b, (size_t)i, y[i]);
        for (int q = 0; q < p; q++) gsl_matrix_set(A, (size_t)i, (size_t)q, X[i * CM_A_NCOEF + keep[q]] / scale[keep[q]]);
    }
    int status;
    if (robust) {
        gsl_multifit_robust_workspace *w = gsl_multifit_robust_alloc(gsl_multifit_robust_bisquare, (size_t)n, (size_t)p);
        status = gsl_multifit_robust(A, b, c, cov, w);
        if (status == GSL_EMAXITER) status = GSL_SUCCESS;   /* the last iterate is still a good fit */
        *sigma = gsl_multifit_robust_statistics(w).sigma;
        gsl_multifit_robust_free(w);
    } else {
        gsl_multifit_linear_workspace *w = gsl_multifit_linear_alloc((size_t)n, (size_t)p);
        double chisq;
        status = gsl_multifit_linear(A, b, c, cov, &chisq, w);
        *sigma = n > p ? sqrt(chisq / (n - p)) : 0;
        gsl_multifit_linear_free(w);
    }
    for (int q = 0; q < p && status == GSL_SUCCESS; q++) coef[keep[q]] = gsl_vector_get(c, (size_t)q) / scale[keep[q]];
    gsl_matrix_free(A);
    gsl_matrix_free(cov);
    gsl_vector_free(b);
    gsl_vector_free(c);
    for (int j = 0; j < CM_A_NCOEF; j++)
        if (!isfinite(coef[j])) status = GSL_FAILURE;
    return status == GSL_SUCCESS ? 0 : -1;
}

/* One category: rows with a known target. 1 when fitted. */
static int fit_category(const cm_set *s, const int *use, int cat, cm_analytic *a, int robust)
{
    double *X = rg_xmalloc((size_t)s->nsamples * CM_A_NCOEF * sizeof *X), *y = rg_xmalloc((size_t)s->nsamples * sizeof *y);
    int n = 0, nonzero = 0;
    for (int i = 0; i < s->nsamples; i++) {
        const cm_sample *x = &s->samples[i];
        double t = analytic_target(x, cat);
        if ((use && !use[i]) || !isfinite(t)) continue;
        analytic_row(&x->counts, cat, a->bw, a->peak, X + n * CM_A_NCOEF);
        y[n++] = t;
        nonzero += t != 0;
    }
    memset(a->coef[cat], 0, sizeof a->coef[cat]);
    a->rows[cat] = 0;
    a->sigma[cat] = 0;
    int fitted = 0;
    if (n >= CM_A_NCOEF + 2 && nonzero == 0) {
        a->rows[cat] = n;   /* the category never runs: a model of zero */
        fitted = 1;
    } else if (n >= CM_A_NCOEF + 2 && fit_columns(X, y, n, a->coef[cat], robust, &a->sigma[cat]) == 0) {
        a->rows[cat] = n;
        fitted = 1;
    } else {
        memset(a->coef[cat], 0, sizeof a->coef[cat]);
    }
    free(X);
    free(y);
    return fitted;
}

int cm_fit_analytic(const cm_set *s, const int *use, double bw, double peak, int robust, cm_analytic *out,
                    rg_err *err)
{
    memset(out, 0, sizeof *out);
    out->bw = bw > 0 ? bw : CM_DEFAULT_BW;
    out->peak = peak > 0 ? peak : CM_DEFAULT_PEAK;
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int fitted = 0;
    for (int cat = 0; cat <= CM_NCAT; cat++) fitted += fit_category(s, use, cat, out, robust);
    gsl_set_error_handler(old);
    if (!fitted) return rg_errf(err, "analytic model: too few measurements to fit (need %d)", CM_A_NCOEF + 2);
    return 0;
}

static double analytic_term(const cm_analytic *a, const cm_counts *k, int cat)
{
    double r[CM_A_NCOEF], t = 0;
    analytic_row(k, cat, a->bw, a->peak, r);
    for (int j = 0; j < CM_A_NCOEF; j++) t += a->coef[cat][j] * r[j];
    return t;
}

double cm_analytic_predict(const cm_analytic *a, const cm_counts *k, double cat_ms[CM_NCAT])
{
    double total = 0;
    int any = 0;
    for (int cat = 0; cat < CM_NCAT; cat++) {
        double t = a->rows[cat] ? fmax(0, analytic_term(a, k, cat)) : 0;
        if (cat_ms) cat_ms[cat] = t;
        total += t;
        any |= a->rows[cat] > 0;
    }
    if (!any && a->rows[CM_NCAT]) total = analytic_term(a, k, CM_NCAT);
    return fmax(total, 1e-3);   /* a launch costs microseconds: keeps the log finite */
}

/* ================================================================ (b) ranking model ==== */

/* Ridge grid, relative to sqrt(rows) on standardized columns (so it means the same for any size). */
static const double LAMBDA_GRID[] = {0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30};
#define NLAMBDA ((int)(sizeof LAMBDA_GRID / sizeof LAMBDA_GRID[0]))
#define LAMBDA_DEFAULT 0.1

/* The regression's rows: used samples, features and log times centred within each problem,
 * the columns that vary kept and standardized. */
typedef struct design {
    int n, p;
    int *col;          /* [p] feature of each kept column */
    double *sd;        /* [p] */
    double *X;         /* [n*p] */
    double *y;         /* [n] */
    int *problem;      /* [n] problem of each row */
} design;

static void design_free(design *d)
{
    free(d->col);
    free(d->sd);
    free(d->X);
    free(d->y);
    free(d->problem);
    memset(d, 0, sizeof *d);
}

static double log_analytic(const cm_analytic *a, const cm_counts *k) { return log(cm_analytic_predict(a, k, NULL)); }

/* Subtracts each problem's weighted mean from its rows (columns 0..w of a row-major n x w
 * matrix): a free intercept per problem, since only the order within a problem matters. */
static void center_by_problem(double *F, int n, int w, const int *problem, const double *weight, int nproblems)
{
    double *sum = rg_xcalloc((size_t)nproblems * (size_t)w, sizeof *sum);
    double *total = rg_xcalloc((size_t)nproblems, sizeof *total);
    for (int i = 0; i < n; i++) {
        total[problem[i]] += weight[i];
        for (int j = 0; j < w; j++) sum[problem[i] * w + j] += weight[i] * F[i * w + j];
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < w; j++) F[i * w + j] -= sum[problem[i] * w + j] / total[problem[i]];
    free(sum);
    free(total);
}

/* Row weights, e^-(log time - log best of the problem) / tau (CM_WEIGHT_TAU); tau 0: 1. */
static void row_weights(const double *logt, const int *problem, int n, int nproblems, double tau, double *weight)
{
    double *best = rg_xmalloc((size_t)(nproblems ? nproblems : 1) * sizeof *best);
    for (int q = 0; q < nproblems; q++) best[q] = INFINITY;
    for (int i = 0; i < n; i++) best[problem[i]] = fmin(best[problem[i]], logt[i]);
    for (int i = 0; i < n; i++) weight[i] = tau > 0 ? exp(-(logt[i] - best[problem[i]]) / tau) : 1;
    free(best);
}

static void build_design(const cm_set *s, const int *use, const cm_analytic *a, double tau, design *d)
{
    memset(d, 0, sizeof *d);
    int w = NFEAT + 1;   /* the features, then log time, centred together */
    double *F = rg_xmalloc((size_t)s->nsamples * (size_t)w * sizeof *F);
    d->problem = rg_xmalloc((size_t)s->nsamples * sizeof *d->problem);
    double *logt = rg_xmalloc((size_t)(s->nsamples ? s->nsamples : 1) * sizeof *logt);
    double *weight = rg_xmalloc((size_t)(s->nsamples ? s->nsamples : 1) * sizeof *weight);
    for (int i = 0; i < s->nsamples; i++) {
        const cm_sample *x = &s->samples[i];
        if (!use[i]) continue;
        double *row = F + (size_t)d->n * w;
        cm_features(&s->problems[x->problem], &x->cfg, &x->counts, log_analytic(a, &x->counts), row);
        row[NFEAT] = logt[d->n] = log(x->time_ms);
        d->problem[d->n++] = x->problem;
    }
    row_weights(logt, d->problem, d->n, s->nproblems, tau, weight);
    center_by_problem(F, d->n, w, d->problem, weight, s->nproblems);
    /* weighted least squares: plain least squares on rows scaled by sqrt(weight) */
    for (int i = 0; i < d->n; i++)
        for (int j = 0; j < w; j++) F[i * w + j] *= sqrt(weight[i]);
    free(logt);
    free(weight);
    d->col = rg_xmalloc(NFEAT * sizeof *d->col);
    d->sd = rg_xmalloc(NFEAT * sizeof *d->sd);
    for (int j = 0; j < NFEAT; j++) {
        double ss = 0;
        for (int i = 0; i < d->n; i++) ss += F[i * w + j] * F[i * w + j];
        double sd = d->n ? sqrt(ss / d->n) : 0;
        if (sd > 1e-9) {
            d->col[d->p] = j;
            d->sd[d->p++] = sd;
        }
    }
    d->X = rg_xmalloc((size_t)(d->n ? d->n : 1) * (size_t)(d->p ? d->p : 1) * sizeof *d->X);
    d->y = rg_xmalloc((size_t)(d->n ? d->n : 1) * sizeof *d->y);
    for (int i = 0; i < d->n; i++) {
        for (int q = 0; q < d->p; q++) d->X[i * d->p + q] = F[i * w + d->col[q]] / d->sd[q];
        d->y[i] = F[i * w + NFEAT];
    }
    free(F);
}

/* Normal equations of the ridge regression: the Gram matrix X^T X and X^T y of a set of rows.
 * Kept per dataset, so that leaving one dataset out is a subtraction, not a new pass. */
typedef struct gram {
    int p;
    double *G;   /* [p*p] */
    double *b;   /* [p] */
} gram;

static void gram_init(gram *g, int p)
{
    g->p = p;
    g->G = rg_xcalloc((size_t)p * (size_t)p + 1, sizeof *g->G);
    g->b = rg_xcalloc((size_t)p + 1, sizeof *g->b);
}

static void gram_free(gram *g)
{
    free(g->G);
    free(g->b);
}

static void gram_add_row(gram *g, const double *x, double y)
{
    int p = g->p;
    for (int i = 0; i < p; i++) {
        if (x[i] == 0) continue;   /* config bits and their products are mostly zero */
        double *row = g->G + (size_t)i * p;
        for (int j = i; j < p; j++) row[j] += x[i] * x[j];
        g->b[i] += x[i] * y;
    }
}

/* a += sign * b */
static void gram_axpy(gram *a, const gram *b, double sign)
{
    for (size_t k = 0; k < (size_t)a->p * (size_t)a->p; k++) a->G[k] += sign * b->G[k];
    for (int k = 0; k < a->p; k++) a->b[k] += sign * b->b[k];
}

/* The eigendecomposition G = V diag(e) V^T (GSL, symmetric), from which the ridge solution for
 * any lambda is c = V diag(1 / (e + lambda^2)) V^T b. */
typedef struct ridge_eig {
    int p;
    gsl_matrix *V;
    gsl_vector *e, *vb;   /* eigenvalues, V^T b */
} ridge_eig;

static int ridge_eig_init(const gram *g, ridge_eig *r)
{
    int p = g->p;
    r->p = p;
    gsl_matrix *A = gsl_matrix_alloc((size_t)p, (size_t)p);
    for (int i = 0; i < p; i++)
        for (int j = i; j < p; j++) {
            gsl_matrix_set(A, (size_t)i, (size_t)j, g->G[(size_t)i * p + j]);
            gsl_matrix_set(A, (size_t)j, (size_t)i, g->G[(size_t)i * p + j]);
        }
    r->V = gsl_matrix_alloc((size_t)p, (size_t)p);
    r->e = gsl_vector_alloc((size_t)p);
    r->vb = gsl_vector_calloc((size_t)p);
    gsl_eigen_symmv_workspace *w = gsl_eigen_symmv_alloc((size_t)p);
    int status = gsl_eigen_symmv(A, r->e, r->V, w);
    gsl_eigen_symmv_free(w);
    gsl_matrix_free(A);
    gsl_vector_const_view b = gsl_vector_const_view_array(g->b, (size_t)p);
    if (status == GSL_SUCCESS) gsl_blas_dgemv(CblasTrans, 1.0, r->V, &b.vector, 0.0, r->vb);
    return status == GSL_SUCCESS ? 0 : -1;
}

static void ridge_eig_free(ridge_eig *r)
{
    gsl_matrix_free(r->V);
    gsl_vector_free(r->e);
    gsl_vector_free(r->vb);
}

/* The minimizer of |y - Xc|^2 + lambda^2 |c|^2. */
static void ridge_solve(const ridge_eig *r, double lambda, double *c)
{
    int p = r->p;
    for (int q = 0; q < p; q++) c[q] = 0;
    for (int k = 0; k < p; k++) {
        /* rounding can leave tiny negative eigenvalues: a Gram matrix has none */
        double denom = fmax(gsl_vector_get(r->e, (size_t)k), 0) + lambda * lambda;
        double t = denom > 0 ? gsl_vector_get(r->vb, (size_t)k) / denom : 0;
        for (int q = 0; q < p; q++) c[q] += gsl_matrix_get(r->V, (size_t)q, (size_t)k) * t;
    }
}

/* Index of each row's dataset among the distinct datasets of the design. */
static int dataset_ids(const cm_set *s, const design *d, int *id)
{
    int nd = 0;
    const char **names = rg_xmalloc((size_t)(d->n ? d->n : 1) * sizeof *names);
    for (int i = 0; i < d->n; i++) {
        const char *name = s->problems[d->problem[i]].dataset;
        int k = 0;
        while (k < nd && strcmp(names[k], name)) k++;
        if (k == nd) names[nd++] = name;
        id[i] = k;
    }
    free(names);
    return nd;
}

/* Held-out squared error of each lambda of the grid when dataset `out` is left out. */
static void held_out_errors(const design *d, const int *ds, int out, const gram *total, const gram *part, int n_out,
                            double *sse)
{
    gram g;
    gram_init(&g, d->p);
    gram_axpy(&g, total, 1);
    gram_axpy(&g, part, -1);
    ridge_eig r;
    double *c = rg_xmalloc((size_t)d->p * sizeof *c);
    if (ridge_eig_init(&g, &r) == 0) {
        double scale = sqrt((double)(d->n - n_out));
        for (int l = 0; l < NLAMBDA; l++) {
            ridge_solve(&r, LAMBDA_GRID[l] * scale, c);
            for (int i = 0; i < d->n; i++) {
                if (ds[i] != out) continue;
                double e = d->y[i];
                for (int q = 0; q < d->p; q++) e -= d->X[(size_t)i * d->p + q] * c[q];
                sse[l] += e * e;
            }
        }
    } else {
        for (int l = 0; l < NLAMBDA; l++) sse[l] = INFINITY;
    }
    ridge_eig_free(&r);
    free(c);
    gram_free(&g);
}

/* Ridge parameter (relative to sqrt(rows)) with the least held-out squared error when each
 * training dataset in turn is left out. */
static double choose_lambda(const cm_set *s, const design *d, const gram *total)
{
    int *ds = rg_xmalloc((size_t)(d->n ? d->n : 1) * sizeof *ds);
    int nd = dataset_ids(s, d, ds);
    double sse[NLAMBDA] = {0};
    for (int out = 0; out < nd && nd >= 2; out++) {
        gram part;
        gram_init(&part, d->p);
        int n_out = 0;
        for (int i = 0; i < d->n; i++)
            if (ds[i] == out) {
                gram_add_row(&part, d->X + (size_t)i * d->p, d->y[i]);
                n_out++;
            }
        held_out_errors(d, ds, out, total, &part, n_out, sse);
        gram_free(&part);
    }
    int best = -1;
    for (int l = 0; l < NLAMBDA && nd >= 2; l++)
        if (isfinite(sse[l]) && (best < 0 || sse[l] < sse[best])) best = l;
    free(ds);
    return best < 0 ? LAMBDA_DEFAULT : LAMBDA_GRID[best];
}

/* Mean over the used problems of mean log(measured) - mean log(analytic): the analytic model's bias. */
static double level_shift(const cm_set *s, const int *use, const cm_analytic *a)
{
    double *sum = rg_xcalloc((size_t)s->nproblems, sizeof *sum);
    int *count = rg_xcalloc((size_t)s->nproblems, sizeof *count);
    for (int i = 0; i < s->nsamples; i++) {
        if (!use[i]) continue;
        const cm_sample *x = &s->samples[i];
        sum[x->problem] += log(x->time_ms) - log_analytic(a, &x->counts);
        count[x->problem]++;
    }
    double total = 0;
    int np = 0;
    for (int q = 0; q < s->nproblems; q++)
        if (count[q]) {
            total += sum[q] / count[q];
            np++;
        }
    free(sum);
    free(count);
    return np ? total / np : 0;
}

static int fit_ranker(const cm_set *s, const int *use, const cm_analytic *a, double lambda, double tau, cm_ranker *out,
                      rg_err *err)
{
    memset(out, 0, sizeof *out);
    out->nfeat = NFEAT;
    out->coef = rg_xcalloc(NFEAT, sizeof *out->coef);
    out->level_shift = level_shift(s, use, a);
    design d;
    build_design(s, use, a, tau, &d);
    int rc = 0;
    if (d.n == 0) {
        rc = rg_errf(err, "ranking model: no measurements to fit");
    } else if (d.p > 0) {
        gram total;
        gram_init(&total, d.p);
        for (int i = 0; i < d.n; i++) gram_add_row(&total, d.X + (size_t)i * d.p, d.y[i]);
        out->lambda = lambda >= 0 ? lambda : choose_lambda(s, &d, &total);
        double *c = rg_xmalloc((size_t)d.p * sizeof *c);
        ridge_eig r;
        if (ridge_eig_init(&total, &r)) {
            rc = rg_errf(err, "ranking model: the eigendecomposition of the %d x %d normal equations failed", d.p, d.p);
        } else {
            ridge_solve(&r, out->lambda * sqrt(d.n), c);
            /* back to the features' own units: the file and the predictions need no scaling */
            for (int q = 0; q < d.p; q++) out->coef[d.col[q]] = c[q] / d.sd[q];
        }
        ridge_eig_free(&r);
        gram_free(&total);
        free(c);
    } else {
        /* every config looks alike to the features (one config per problem): no ranking to learn */
        out->lambda = lambda >= 0 ? lambda : LAMBDA_DEFAULT;
    }
    design_free(&d);
    return rc;
}

static void ranker_free(cm_ranker *r)
{
    free(r->coef);
    r->coef = NULL;
}

/* ================================================================ fitting, predicting ==== */

void cm_fit_options_default(cm_fit_options *o)
{
    memset(o, 0, sizeof *o);
    o->bw = CM_DEFAULT_BW;
    o->peak = CM_DEFAULT_PEAK;
    o->lambda = -1;
    o->weight_tau = CM_WEIGHT_TAU;
    o->top_frac = 0.10;
}

/* Distinct datasets of the used samples, as "a, b, c" (caller frees); *count receives how many. */
static char *dataset_list(const cm_set *s, const int *use, int *count)
{
    rg_str out = {0};
    int *seen = rg_xcalloc((size_t)(s->nproblems ? s->nproblems : 1), sizeof *seen);
    *count = 0;
    for (int i = 0; i < s->nsamples; i++) {
        const cm_problem *p = &s->problems[s->samples[i].problem];
        if (!use[i] || seen[s->samples[i].problem]) continue;
        int dup = 0;
        for (int q = 0; q < s->nproblems; q++)
            if (seen[q] && !strcmp(s->problems[q].dataset, p->dataset)) dup = 1;
        seen[s->samples[i].problem] = 1;
        if (dup) continue;
        rg_str_printf(&out, "%s%s", out.len ? ", " : "", p->dataset);
        (*count)++;
    }
    free(seen);
    if (!out.s) rg_str_puts(&out, "");
    return out.s;
}

/* Samples of one (model, task) among those base allows. */
static int *group_mask(const cm_set *s, const int *base, const char *model, const char *task, int *n)
{
    int *use = rg_xcalloc((size_t)(s->nsamples ? s->nsamples : 1), sizeof *use);
    *n = 0;
    for (int i = 0; i < s->nsamples; i++) {
        const cm_problem *p = &s->problems[s->samples[i].problem];
        use[i] = (!base || base[i]) && !strcmp(p->model, model) && !strcmp(p->task, task);
        *n += use[i];
    }
    return use;
}

static int fit_section(const cm_set *s, const int *use, const cm_fit_options *o, const char *model, const char *task,
                       cm_section *sec, rg_err *err)
{
    memset(sec, 0, sizeof *sec);
    snprintf(sec->model, sizeof sec->model, "%s", model);
    snprintf(sec->task, sizeof sec->task, "%s", task);
    for (int i = 0; i < s->nsamples; i++) sec->samples += use[i] != 0;
    char *names = dataset_list(s, use, &sec->ndatasets);
    snprintf(sec->training, sizeof sec->training, "%d measurements of %s %s on %d datasets (%s)", sec->samples, model,
             task, sec->ndatasets, names);
    free(names);
    if (cm_fit_analytic(s, use, o->bw, o->peak, !o->ordinary, &sec->analytic, err) ||
        fit_ranker(s, use, &sec->analytic, o->lambda, o->weight_tau, &sec->ranker, err)) {
        rg_err_prefix(err, "%s %s", model, task);
        ranker_free(&sec->ranker);
        return -1;
    }
    return 0;
}

static void utc_now(char *out, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int cm_fit(const cm_set *s, const cm_fit_options *o, cm_model *out, rg_err *err)
{
    cm_fit_options defaults;
    if (!o) {
        cm_fit_options_default(&defaults);
        o = &defaults;
    }
    memset(out, 0, sizeof *out);
    snprintf(out->device, sizeof out->device, "%s", s->device);
    snprintf(out->source, sizeof out->source, "%s", s->source);
    utc_now(out->created, sizeof out->created);
    out->bw = o->bw > 0 ? o->bw : CM_DEFAULT_BW;
    out->peak = o->peak > 0 ? o->peak : CM_DEFAULT_PEAK;
    out->sections = rg_xcalloc((size_t)(s->nproblems ? s->nproblems : 1), sizeof *out->sections);
    for (int q = 0; q < s->nproblems; q++) {
        const cm_problem *p = &s->problems[q];
        int known = 0;
        for (int k = 0; k < out->nsections; k++)
            known |= !strcmp(out->sections[k].model, p->model) && !strcmp(out->sections[k].task, p->task);
        if (known) continue;
        int n;
        int *use = group_mask(s, NULL, p->model, p->task, &n);
        int rc = n ? fit_section(s, use, o, p->model, p->task, &out->sections[out->nsections], err) : 0;
        free(use);
        if (rc) {
            cm_model_free(out);
            return -1;
        }
        out->nsections += n > 0;
    }
    if (!out->nsections) {
        cm_model_free(out);
        return rg_errf(err, "cost model: no measurements to fit");
    }
    return 0;
}

void cm_model_free(cm_model *m)
{
    for (int k = 0; k < m->nsections; k++) {
        ranker_free(&m->sections[k].ranker);
        free(m->sections[k].bo_prior);
    }
    free(m->sections);
    memset(m, 0, sizeof *m);
}

const cm_section *cm_find_section(const cm_model *m, const char *model, const char *task, rg_err *err)
{
    const char *canon;
    if (pl_parse_task(task, &canon, err)) return NULL;
    for (int k = 0; k < m->nsections; k++)
        if (!strcmp(m->sections[k].model, model) && !strcmp(m->sections[k].task, canon)) return &m->sections[k];
    rg_str have = {0};
    for (int k = 0; k < m->nsections; k++)
        rg_str_printf(&have, "%s%s %s", have.len ? ", " : "", m->sections[k].model, m->sections[k].task);
    rg_errf(err, "the cost model has no section for %s %s (it has: %s); fit one with `explore fit --model %s --task %s`",
            model, canon, have.s ? have.s : "none", model, canon);
    rg_str_free(&have);
    return NULL;
}

void cm_predict(const cm_section *sec, const cm_problem *p, const cg_config *cfgs, const cm_counts *counts, int n,
                double *pred_ms)
{
    if (n <= 0) return;
    double *w = rg_xmalloc((size_t)n * sizeof *w), x[NFEAT], mean_w = 0, mean_la = 0;
    for (int i = 0; i < n; i++) {
        double la = log_analytic(&sec->analytic, &counts[i]);
        cm_features(p, &cfgs[i], &counts[i], la, x);
        w[i] = 0;
        for (int j = 0; j < NFEAT; j++) w[i] += sec->ranker.coef[j] * x[j];
        mean_w += w[i] / n;
        mean_la += la / n;
    }
    /* the ranking model knows differences within a problem; the analytic model sets the level */
    for (int i = 0; i < n; i++) pred_ms[i] = exp(mean_la + sec->ranker.level_shift + w[i] - mean_w);
    free(w);
}

/* ================================================================ the model file ==== */

#define CM_FORMAT "rgnn-costmodel 2"   /* 2: pairs of config bits among the features */
enum { F_ROWS, F_SIGMA, F_A, F_B, F_C, F_D, NFIELD };
static const char *const FIELD_NAMES[NFIELD] = {"rows", "sigma_ms", "a_bytes", "b_flops", "c_launch_ms", "d_ms"};
/* Keys of a section: analytic fields per category, then the ranker's scalars, then its coefficients. */
enum { K_ANALYTIC = 0, K_LAMBDA = (CM_NCAT + 1) * NFIELD, K_SHIFT, K_COEF, NKEYS = K_COEF + NFEAT };

static double *analytic_field(cm_analytic *a, int cat, int field, double *rows_tmp)
{
    switch (field) {
    case F_ROWS: return rows_tmp;
    case F_SIGMA: return &a->sigma[cat];
    default: return &a->coef[cat][field - F_A];
    }
}

/* The shortest of %.15g .. %.17g that reads back to the same double: exact, yet readable. */
static const char *num(double v, char buf[32])
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

const char *cm_bo_feature_name(int j)
{
    RG_ASSERT(j >= 1 && j < CM_BO_NFEAT);
    /* the bits and their pairs, in the order of the ranking features' bits and pairs */
    return j <= NC ? cm_feature_name(j - 1) : cm_feature_name(NC + NA + NC * NZ + (j - 1 - NC));
}

/* bo's calibrated prior: "bo.noise", "bo.problems" and one "bo.sd.<feature>" per weight. */
static void write_bo_prior(FILE *f, const cm_section *sec)
{
    char b[32];
    if (!sec->bo_prior) return;
    fprintf(f, "bo.problems = %d\nbo.noise = %s\n", sec->bo_problems, num(sec->bo_prior[0], b));
    for (int j = 1; j < CM_BO_NFEAT; j++)
        if (isfinite(sec->bo_prior[j])) fprintf(f, "bo.sd.%s = %s\n", cm_bo_feature_name(j), num(sec->bo_prior[j], b));
}

static void write_section(FILE *f, const cm_section *sec)
{
    char b[32];
    fprintf(f, "\n[%s %s]\ntraining = %s\nsamples = %d\ndatasets = %d\n", sec->model, sec->task, sec->training,
            sec->samples, sec->ndatasets);
    for (int cat = 0; cat <= CM_NCAT; cat++) {
        const cm_analytic *a = &sec->analytic;
        fprintf(f, "analytic.%s.rows = %d\n", CAT_NAMES[cat], a->rows[cat]);
        fprintf(f, "analytic.%s.sigma_ms = %s\n", CAT_NAMES[cat], num(a->sigma[cat], b));
        for (int j = 0; j < CM_A_NCOEF; j++)
            fprintf(f, "analytic.%s.%s = %s\n", CAT_NAMES[cat], FIELD_NAMES[F_A + j], num(a->coef[cat][j], b));
    }
    fprintf(f, "ranking.lambda = %s\n", num(sec->ranker.lambda, b));
    fprintf(f, "ranking.level_shift = %s\n", num(sec->ranker.level_shift, b));
    for (int j = 0; j < NFEAT; j++) fprintf(f, "ranking.coef.%s = %s\n", cm_feature_name(j), num(sec->ranker.coef[j], b));
    write_bo_prior(f, sec);
}

int cm_save(const cm_model *m, const char *path, rg_err *err)
{
    char b[32];
    char *tmp = rg_xasprintf("%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        rg_errf(err, "%s: cannot write: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    fprintf(f, "# Cost model of `explore` (explorer/costmodel.c): key = value lines, one [model task] section each.\n"
               "# analytic.<category>: t_ms = a_bytes * bytes/BW*1e3 + b_flops * flops/peak*1e3"
               " + c_launch_ms * launches + d_ms\n"
               "#   (robust bisquare fit per kernel category; 'total' fits the whole time).\n"
               "# ranking.coef.<feature>: ridge coefficients of log time within a problem, features in their own\n"
               "#   units (config bits, log counts, and config bit * graph/shape feature products).\n"
               "# bo.*: the prior of the Bayesian-optimisation search (explorer/calib.h), calibrated on the\n"
               "#   held-out errors of the fit's leave-one-dataset-out evaluation (absent without one).\n"
               "format = %s\ncreated = %s\ndevice = %s\nsource = %s\n"
               "bandwidth_bytes_per_s = %s\n",
            CM_FORMAT, m->created, m->device, m->source, num(m->bw, b));
    fprintf(f, "peak_flops_per_s = %s\n", num(m->peak, b));
    for (int k = 0; k < m->nsections; k++) write_section(f, &m->sections[k]);
    int bad = ferror(f);
    if (fclose(f) || bad || rename(tmp, path)) {
        rg_errf(err, "%s: cannot write: %s", path, strerror(errno));
        remove(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r')) *--e = 0;
    return s;
}

static int parse_number(const char *v, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(v, &end);
    return *v && !*end && !errno ? 0 : -1;
}

/* Which section key this is (NKEYS: a descriptive key; -1: unknown). */
static int section_key(const char *key)
{
    if (!strcmp(key, "training") || !strcmp(key, "samples") || !strcmp(key, "datasets")) return NKEYS;
    if (!strcmp(key, "ranking.lambda")) return K_LAMBDA;
    if (!strcmp(key, "ranking.level_shift")) return K_SHIFT;
    if (!strncmp(key, "ranking.coef.", 13)) {
        for (int j = 0; j < NFEAT; j++)
            if (!strcmp(key + 13, cm_feature_name(j))) return K_COEF + j;
        return -1;
    }
    for (int cat = 0; cat <= CM_NCAT; cat++) {
        size_t n = strlen(CAT_NAMES[cat]);
        if (strncmp(key, "analytic.", 9) || strncmp(key + 9, CAT_NAMES[cat], n) || key[9 + n] != '.') continue;
        for (int fld = 0; fld < NFIELD; fld++)
            if (!strcmp(key + 10 + n, FIELD_NAMES[fld])) return K_ANALYTIC + cat * NFIELD + fld;
    }
    return -1;
}

typedef struct load_state {
    const char *path;
    int line;
    cm_model *m;
    cm_section *sec;
    unsigned char seen[NKEYS];
    int have_format;
    char new_features[512];    /* config features the file predates */
    int missing_coef;          /* ranking coefficients absent from the file (counted as 0) */
    char first_missing[400];
} load_state;

/* A "bo." key of a section: its calibrated prior (optional; a feature the file lacks stays NaN). */
static int set_bo_value(load_state *st, const char *key, const char *val, rg_err *err)
{
    cm_section *sec = st->sec;
    double v;
    if (parse_number(val, &v)) return rg_errf(err, "%s:%d: %s: '%s' is not a number", st->path, st->line, key, val);
    if (!sec->bo_prior) {
        sec->bo_prior = rg_xmalloc(CM_BO_NFEAT * sizeof *sec->bo_prior);
        for (int j = 0; j < CM_BO_NFEAT; j++) sec->bo_prior[j] = NAN;
    }
    int j = -1;
    if (!strcmp(key, "bo.problems")) {
        sec->bo_problems = (int)v;
        return 0;
    }
    if (!strcmp(key, "bo.noise")) j = 0;
    else if (!strncmp(key, "bo.sd.", 6))
        for (int i = 1; i < CM_BO_NFEAT && j < 0; i++)
            if (!strcmp(key + 6, cm_bo_feature_name(i))) j = i;
    if (j < 0) return rg_errf(err, "%s:%d: unknown key '%s'", st->path, st->line, key);
    if (!isnan(sec->bo_prior[j])) return rg_errf(err, "%s:%d: %s given twice", st->path, st->line, key);
    if (!(v > 0)) return rg_errf(err, "%s:%d: %s must be positive (got '%s')", st->path, st->line, key, val);
    sec->bo_prior[j] = v;
    return 0;
}

static int set_section_value(load_state *st, const char *key, const char *val, rg_err *err)
{
    if (!strncmp(key, "bo.", 3)) return set_bo_value(st, key, val, err);
    int k = section_key(key);
    if (k < 0) return rg_errf(err, "%s:%d: unknown key '%s'", st->path, st->line, key);
    cm_section *sec = st->sec;
    if (k == NKEYS) {
        if (!strcmp(key, "training")) snprintf(sec->training, sizeof sec->training, "%s", val);
        else if (!strcmp(key, "samples")) sec->samples = atoi(val);
        else sec->ndatasets = atoi(val);
        return 0;
    }
    double v;
    if (parse_number(val, &v)) return rg_errf(err, "%s:%d: %s: '%s' is not a number", st->path, st->line, key, val);
    if (st->seen[k]) return rg_errf(err, "%s:%d: %s given twice", st->path, st->line, key);
    st->seen[k] = 1;
    if (k >= K_COEF) sec->ranker.coef[k - K_COEF] = v;
    else if (k == K_LAMBDA) sec->ranker.lambda = v;
    else if (k == K_SHIFT) sec->ranker.level_shift = v;
    else {
        int cat = k / NFIELD, fld = k % NFIELD;
        double rows = 0;
        *analytic_field(&sec->analytic, cat, fld, &rows) = v;
        if (fld == F_ROWS) sec->analytic.rows[cat] = (int)v;
    }
    return 0;
}

/* Whether ranking coefficient j belongs to config feature f (alone, times a problem feature, or
 * in a pair); the size features after the pairs belong to none. */
static int coef_involves(int j, int f)
{
    if (j < NC) return j == f;
    if (j < NC + NA) return 0;
    if (j < NC + NA + NC * NZ) return (j - NC - NA) / NZ == f;
    if (j >= NC + NA + NC * NZ + NPAIR) return 0;
    int a, b;
    pair_of(j - NC - NA - NC * NZ, &a, &b);
    return a == f || b == f;
}

/* A config feature of which the section has no coefficient at all was added to the key table
 * after the fit: the model knows nothing of it, so its coefficients are 0 (noted once per file).
 * A feature with some coefficients but not all is a damaged file, and stays an error. */
static void zero_new_features(load_state *st)
{
    /* which features are new is decided on the file's coefficients alone, before any is zeroed:
     * two features added at once share a pair coefficient, which zeroing the first would mark
     * as read, making the second look present */
    int fresh[NC];
    for (int f = 0; f < NC; f++) {
        int any = 0;
        for (int j = 0; j < NFEAT && !any; j++) any = coef_involves(j, f) && st->seen[K_COEF + j];
        fresh[f] = !any;
    }
    for (int f = 0; f < NC; f++) {
        if (!fresh[f]) continue;
        for (int j = 0; j < NFEAT; j++)
            if (coef_involves(j, f)) st->seen[K_COEF + j] = 1;   /* calloc'ed: already 0 */
        if (!strstr(st->new_features, cfg_feature_name(f)))
            snprintf(st->new_features + strlen(st->new_features), sizeof st->new_features - strlen(st->new_features),
                     "%s%s", st->new_features[0] ? ", " : "", cfg_feature_name(f));
    }
}

/* The section just read must have every number (a model with a silent 0 would rank wrongly),
 * except ranking coefficients of features its writer lacked: those count as 0, as they did in
 * the fit that wrote it, and cm_load warns once per file. */
static int check_section(load_state *st, rg_err *err)
{
    if (!st->sec) return 0;
    if (st->sec->bo_prior && isnan(st->sec->bo_prior[0]))
        return rg_errf(err, "%s: section [%s %s] has bo.* lines but no bo.noise", st->path, st->sec->model,
                       st->sec->task);
    zero_new_features(st);
    for (int k = 0; k < NKEYS; k++) {
        if (st->seen[k] || (k < K_LAMBDA && k % NFIELD == F_SIGMA)) continue;
        char key[96];
        if (k >= K_COEF) {
            /* a feature this file's writer did not have: it adds nothing (begin_section zeroed it) */
            if (!st->missing_coef++)
                snprintf(st->first_missing, sizeof st->first_missing, "[%.200s %s] %s", st->sec->model, st->sec->task,
                         cm_feature_name(k - K_COEF));
            continue;
        }
        if (k == K_LAMBDA) snprintf(key, sizeof key, "ranking.lambda");
        else if (k == K_SHIFT) snprintf(key, sizeof key, "ranking.level_shift");
        else snprintf(key, sizeof key, "analytic.%s.%s", CAT_NAMES[k / NFIELD], FIELD_NAMES[k % NFIELD]);
        return rg_errf(err, "%s: section [%s %s] lacks %s (written by another version?)", st->path, st->sec->model,
                       st->sec->task, key);
    }
    return 0;
}

static int begin_section(load_state *st, char *line, rg_err *err)
{
    if (check_section(st, err)) return -1;
    char *end = strchr(line, ']'), model[256], task[16];
    if (!end || trim(end + 1)[0] || sscanf(line + 1, "%255s %15[^] ]", model, task) != 2)
        return rg_errf(err, "%s:%d: expected a section header '[model task]'", st->path, st->line);
    const char *canon;
    if (pl_parse_task(task, &canon, err)) {
        rg_err_prefix(err, "%s:%d", st->path, st->line);
        return -1;
    }
    cm_model *m = st->m;
    m->sections = rg_xrealloc(m->sections, (size_t)(m->nsections + 1) * sizeof *m->sections);
    st->sec = &m->sections[m->nsections++];
    memset(st->sec, 0, sizeof *st->sec);
    snprintf(st->sec->model, sizeof st->sec->model, "%s", model);
    snprintf(st->sec->task, sizeof st->sec->task, "%s", canon);
    st->sec->ranker.nfeat = NFEAT;
    st->sec->ranker.coef = rg_xcalloc(NFEAT, sizeof *st->sec->ranker.coef);
    memset(st->seen, 0, sizeof st->seen);
    return 0;
}

static int set_header_value(load_state *st, const char *key, const char *val, rg_err *err)
{
    cm_model *m = st->m;
    double v;
    if (!strcmp(key, "format")) {
        if (strcmp(val, CM_FORMAT))
            return rg_errf(err, "%s:%d: format '%s', expected '%s'", st->path, st->line, val, CM_FORMAT);
        st->have_format = 1;
    } else if (!strcmp(key, "created")) snprintf(m->created, sizeof m->created, "%s", val);
    else if (!strcmp(key, "device")) snprintf(m->device, sizeof m->device, "%s", val);
    else if (!strcmp(key, "source")) snprintf(m->source, sizeof m->source, "%s", val);
    else if (!strcmp(key, "bandwidth_bytes_per_s") || !strcmp(key, "peak_flops_per_s")) {
        if (parse_number(val, &v) || !(v > 0))
            return rg_errf(err, "%s:%d: %s must be a positive number (got '%s')", st->path, st->line, key, val);
        *(key[0] == 'b' ? &m->bw : &m->peak) = v;
    } else
        return rg_errf(err, "%s:%d: unknown key '%s'", st->path, st->line, key);
    return 0;
}

static int load_line(load_state *st, char *raw, rg_err *err)
{
    char *line = trim(raw);
    if (!*line || *line == '#') return 0;
    if (*line == '[') return begin_section(st, line, err);
    char *eq = strchr(line, '=');
    if (!eq) return rg_errf(err, "%s:%d: expected 'key = value'", st->path, st->line);
    *eq = 0;
    char *key = trim(line), *val = trim(eq + 1);
    return st->sec ? set_section_value(st, key, val, err) : set_header_value(st, key, val, err);
}

int cm_load(const char *path, cm_model *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) return rg_errf(err, "%s: cannot read the cost model: %s (fit one with `explore fit`)", path, strerror(errno));
    load_state st = {.path = path, .m = out};
    char *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    while (!rc && getline(&buf, &cap, f) >= 0) {
        st.line++;
        rc = load_line(&st, buf, err);
    }
    free(buf);
    fclose(f);
    if (!rc) rc = check_section(&st, err);
    if (!rc && st.new_features[0])
        fprintf(stderr, "cost model %s: no coefficients for %s (config keys newer than the fit): taken as 0; "
                        "`explore fit` refits\n", path, st.new_features);
    if (!rc && !st.have_format) rc = rg_errf(err, "%s: not a cost model file (no 'format = %s' line)", path, CM_FORMAT);
    if (!rc && !out->nsections) rc = rg_errf(err, "%s: no [model task] section", path);
    if (!rc && !(out->bw > 0 && out->peak > 0))
        rc = rg_errf(err, "%s: bandwidth_bytes_per_s and peak_flops_per_s are required", path);
    if (!rc && st.missing_coef)
        fprintf(stderr, "warning: %s: %d ranking coefficient%s missing (first: %s), counted as 0: written by an older "
                        "version; refit with `explore fit` to use those features\n",
                path, st.missing_coef, st.missing_coef == 1 ? "" : "s", st.first_missing);
    for (int k = 0; k < out->nsections && !rc; k++) {
        out->sections[k].analytic.bw = out->bw;
        out->sections[k].analytic.peak = out->peak;
    }
    if (rc) cm_model_free(out);
    return rc;
}

/* ================================================================ counting, ordering ==== */

int cm_count(const char *model, const char *task, int dim_in, int dim_out, int heads, const hg_graph *g,
             const cg_config *cfg, cm_counts *out, rg_err *err)
{
    memset(out, 0, sizeof *out);
    const char *canon;
    if (pl_parse_task(task, &canon, err)) return -1;
    pl_problem p = {.model = model, .task = canon, .dims = {dim_in, dim_out, heads}};
    ir_program *ir;
    lw_program *lp;
    if (pl_build(&p, cfg, g, NULL, &ir, &lp, err)) return -1;
    cg_variant v;
    int rc = cg_build(ir, lp, cfg, &v, err);
    if (rc == 0) {
        int launches;
        cg_counts_fill(ir, &v, g, &out->flops, &out->bytes, &out->atomics, &launches);
        out->launches = launches;
        for (int i = 0; i < v.plan.nkernels; i++)
            out->cat_launches[cm_category_of(kp_category_name(v.plan.kernels[i].category))] += 1;
        cg_variant_free(&v);
    }
    lw_free(lp);
    ir_free(ir);
    return rc;
}

/* cm_count per structure. The counts read the program and its plan, which the structure keys alone
 * decide: a per-kernel-capable key changes how an instance's kernels run, never which kernels exist
 * or what they store (codegen/config_keys.def, CFG_SCHEDULE). So each structure is built once, where
 * a search's ordering of the default space built every point (58,368 at dims 64 in training, most of
 * a 60-second search); whether a schedule applies to the problem is still asked per point. */
typedef struct count_memo {
    int n, cap;
    struct memo_entry { uint64_t structure; cm_counts counts; } *e;
} count_memo;

static int count_by_structure(count_memo *m, const char *model, const char *task, int dim_in, int dim_out, int heads,
                              const hg_graph *g, const cg_config *cfg, cm_counts *out)
{
    pl_problem p = {.model = model, .task = task, .dims = {dim_in, dim_out, heads}};
    if (!pl_schedule_applies(&p, cfg, NULL)) return -1;
    cg_config structure;
    cfg_structure(cfg, &structure);
    uint64_t h = cfg_hash(&structure);
    for (int i = 0; i < m->n; i++)
        if (m->e[i].structure == h) {
            *out = m->e[i].counts;
            return 0;
        }
    /* a build that fails (a schedule the emitter refuses) says nothing of the structure's counts */
    if (cm_count(model, task, dim_in, dim_out, heads, g, cfg, out, NULL)) return -1;
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 16;
        m->e = rg_xrealloc(m->e, (size_t)m->cap * sizeof *m->e);
    }
    m->e[m->n++] = (struct memo_entry){h, *out};
    return 0;
}

typedef struct ranked {
    double pred;
    int index;
} ranked;

static int cmp_ranked(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->pred != y->pred) return x->pred < y->pred ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static void problem_of(const xb_problem *p, const char *task, const hg_graph *g, cm_problem *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->model, sizeof out->model, "%s", p->model);
    snprintf(out->task, sizeof out->task, "%s", task);
    snprintf(out->dataset, sizeof out->dataset, "%s", p->dataset);
    out->dim_in = p->dim_in;
    out->dim_out = p->dim_out;
    out->heads = p->heads > 0 ? p->heads : 1;
    hg_stats_compute(g, &out->stats);
}

int cm_order(const cm_model *m, const xb_problem *p, const hg_graph *g, const cg_config *cfgs, int n, int *order,
             double *pred_ms, rg_err *err)
{
    const cm_section *sec = cm_find_section(m, p->model, p->task, err);
    if (!sec) return -1;
    hg_graph *own = NULL;
    if (!g) {
        ds_options dopt = {.data_dir = p->data_dir, .quiet = 1};
        if (!(g = own = ds_open(p->dataset, &dopt, err))) return -1;
    }
    cm_problem prob;
    problem_of(p, sec->task, g, &prob);
    cm_counts *counts = rg_xcalloc((size_t)(n ? n : 1), sizeof *counts);
    /* the configs that could be counted, copied only once one could not: a search of the full space
     * predicts millions at once, a gigabyte a copy */
    cg_config *ok_cfg = NULL;
    int *ok_index = rg_xmalloc((size_t)(n ? n : 1) * sizeof *ok_index), nok = 0;
    count_memo memo = {0};
    for (int i = 0; i < n; i++) {
        if (count_by_structure(&memo, p->model, sec->task, p->dim_in, p->dim_out, prob.heads, g, &cfgs[i],
                               &counts[nok])) {
            if (!ok_cfg) {
                ok_cfg = rg_xmalloc((size_t)(n ? n : 1) * sizeof *ok_cfg);
                memcpy(ok_cfg, cfgs, (size_t)nok * sizeof *ok_cfg);
            }
            continue;
        }
        if (ok_cfg) ok_cfg[nok] = cfgs[i];
        ok_index[nok++] = i;
    }
    free(memo.e);
    double *ok_pred = rg_xmalloc((size_t)(nok ? nok : 1) * sizeof *ok_pred);
    cm_predict(sec, &prob, ok_cfg ? ok_cfg : cfgs, counts, nok, ok_pred);
    ranked *r = rg_xmalloc((size_t)(n ? n : 1) * sizeof *r);
    for (int i = 0; i < n; i++) r[i] = (ranked){INFINITY, i};
    for (int k = 0; k < nok; k++) r[ok_index[k]].pred = ok_pred[k];
    qsort(r, (size_t)n, sizeof *r, cmp_ranked);
    for (int i = 0; i < n; i++) {
        order[i] = r[i].index;
        if (pred_ms) pred_ms[r[i].index] = r[i].pred;
    }
    free(r);
    free(ok_pred);
    free(ok_index);
    free(ok_cfg);
    free(counts);
    if (own) hg_free(own);
    return 0;
}

void cm_sweep_order(void *ctx, const xb_problem *p, const hg_stats *stats, const sp_space *space, int *idx, int n)
{
    (void)stats;   /* the counts need the graph itself, which cm_order opens */
    const cm_model *m = ctx;
    cg_config *cfgs = rg_xmalloc((size_t)(n ? n : 1) * sizeof *cfgs);
    int *order = rg_xmalloc((size_t)(n ? n : 1) * sizeof *order), *before = rg_xmalloc((size_t)(n ? n : 1) * sizeof *before);
    for (int i = 0; i < n; i++) {
        sp_config_at(space, idx[i], &cfgs[i]);
        before[i] = idx[i];
    }
    rg_err err;
    if (cm_order(m, p, NULL, cfgs, n, order, NULL, &err))
        fprintf(stderr, "cost model: %s; measuring in enumeration order\n", err.msg);
    else
        for (int i = 0; i < n; i++) idx[i] = before[order[i]];
    free(cfgs);
    free(order);
    free(before);
}

/* ================================================================ evaluation ==== */

double cm_spearman(const double *a, const double *b, int n)
{
    if (n < 2) return NAN;
    double *work = rg_xmalloc(2 * (size_t)n * sizeof *work);
    double r = gsl_stats_spearman(a, 1, b, 1, (size_t)n, work);
    free(work);
    return r;
}

void cm_score_ranking(const double *pred_ms, const double *meas_ms, int n, int top_k, cm_score *out)
{
    RG_ASSERT(n > 0);
    memset(out, 0, sizeof *out);
    out->n = n;
    out->top_k = top_k < 1 ? 1 : top_k > n ? n : top_k;
    ranked *r = rg_xmalloc((size_t)n * sizeof *r);
    for (int i = 0; i < n; i++) {
        r[i] = (ranked){pred_ms[i], i};
        if (meas_ms[i] < meas_ms[out->oracle]) out->oracle = i;
    }
    qsort(r, (size_t)n, sizeof *r, cmp_ranked);
    out->picked = r[0].index;
    out->topk_ms = INFINITY;
    for (int k = 0; k < out->top_k; k++) out->topk_ms = fmin(out->topk_ms, meas_ms[r[k].index]);
    out->picked_ms = meas_ms[out->picked];
    out->oracle_ms = meas_ms[out->oracle];
    out->hit = out->picked_ms <= out->oracle_ms;
    out->spearman = cm_spearman(pred_ms, meas_ms, n);
    free(r);
}

/* Time of cfg on problem q, or NaN when it was not measured there. */
static double time_of(const cm_set *s, int q, const cg_config *cfg)
{
    uint64_t h = cfg_hash(cfg);
    for (int i = 0; i < s->nsamples; i++)
        if (s->samples[i].problem == q && s->samples[i].cfg_key == h) return s->samples[i].time_ms;
    return NAN;
}

/* Index of the config with hash h in keys[0..n), or -1. */
static int key_index(const uint64_t *keys, int n, uint64_t h)
{
    for (int i = 0; i < n; i++)
        if (keys[i] == h) return i;
    return -1;
}

/* The static list over the training problems of kind's model and task: of its dims and heads too
 * (any_size 0), or of every size (any_size 1: leave-one-size-out, where the kind's size is held out). */
static int static_list(const cm_set *s, const int *train_problem, const cm_problem *kind, int any_size, cg_config **out,
                       int *n)
{
    *out = NULL;
    *n = 0;
    int *qs = rg_xmalloc((size_t)(s->nproblems ? s->nproblems : 1) * sizeof *qs), nq = 0;
    for (int q = 0; q < s->nproblems; q++) {
        const cm_problem *p = &s->problems[q];
        int kind_ok = any_size ? !strcmp(p->model, kind->model) && !strcmp(p->task, kind->task) : same_kind(p, kind);
        if (train_problem[q] && kind_ok) qs[nq++] = q;
    }
    /* the candidates: every config measured on a training problem of this kind */
    uint64_t *keys = rg_xmalloc((size_t)(s->nsamples ? s->nsamples : 1) * sizeof *keys);
    cg_config *cfgs = rg_xmalloc((size_t)(s->nsamples ? s->nsamples : 1) * sizeof *cfgs);
    int *row_of = rg_xmalloc((size_t)(s->nproblems ? s->nproblems : 1) * sizeof *row_of), nc = 0;
    for (int q = 0; q < s->nproblems; q++) row_of[q] = -1;
    for (int k = 0; k < nq; k++) row_of[qs[k]] = k;
    for (int i = 0; i < s->nsamples; i++)
        if (row_of[s->samples[i].problem] >= 0 && key_index(keys, nc, s->samples[i].cfg_key) < 0) {
            keys[nc] = s->samples[i].cfg_key;
            cfgs[nc++] = s->samples[i].cfg;
        }
    double *time = rg_xmalloc((size_t)(nq ? nq : 1) * (size_t)(nc ? nc : 1) * sizeof *time);
    for (size_t i = 0; i < (size_t)nq * (size_t)nc; i++) time[i] = NAN;
    for (int i = 0; i < s->nsamples; i++) {
        int r = row_of[s->samples[i].problem];
        if (r >= 0) time[(size_t)r * (size_t)nc + (size_t)key_index(keys, nc, s->samples[i].cfg_key)] = s->samples[i].time_ms;
    }
    int *order = rg_xmalloc((size_t)(nc ? nc : 1) * sizeof *order), *train = rg_xmalloc((size_t)(nq ? nq : 1) * sizeof *train);
    for (int k = 0; k < nq; k++) train[k] = 1;
    int ns = ys_static_rank(time, nq, nc, train, order, NULL);
    if (ns > 0) {
        *out = rg_xmalloc((size_t)ns * sizeof **out);
        for (int k = 0; k < ns; k++) (*out)[k] = cfgs[order[k]];
        *n = ns;
    }
    free(order);
    free(train);
    free(time);
    free(row_of);
    free(cfgs);
    free(keys);
    free(qs);
    return ns > 0 ? 0 : -1;
}

int cm_static_list(const cm_set *s, const int *train_problem, const cm_problem *kind, cg_config **out, int *n)
{
    return static_list(s, train_problem, kind, 0, out, n);
}

int cm_static_list_any_size(const cm_set *s, const int *train_problem, const cm_problem *kind, cg_config **out, int *n)
{
    return static_list(s, train_problem, kind, 1, out, n);
}

int cm_best_fixed(const cm_set *s, const int *train_problem, const cm_problem *kind, cg_config *out)
{
    cg_config *list;
    int n;
    if (cm_static_list(s, train_problem, kind, &list, &n)) return -1;
    *out = list[0];
    free(list);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int top_k_of(const cm_fit_options *o, int n)
{
    if (o->top_k > 0) return o->top_k < n ? o->top_k : n;
    /* floor: "at most 10% of the space" (21 of 216 configs, not 22) */
    int k = (int)floor((o->top_frac > 0 ? o->top_frac : 0.10) * n + 1e-9);
    return k < 1 ? 1 : k;
}

/* Scores problem q with a section fitted without it (its dataset or its size); each of its samples'
 * predictions goes to sample_pred. The static list comes from the training problems of q's size
 * (any_size 0) or, when q's size is held out, of every other size (any_size 1). */
static void score_problem(const cm_set *s, int q, const cm_section *sec, const int *train_problem, int any_size,
                          const cm_fit_options *o, cm_eval_row *row, double *sample_pred)
{
    int n = 0;
    for (int i = 0; i < s->nsamples; i++) n += s->samples[i].problem == q;
    cg_config *cfgs = rg_xmalloc((size_t)n * sizeof *cfgs);
    cm_counts *counts = rg_xmalloc((size_t)n * sizeof *counts);
    double *meas = rg_xmalloc((size_t)n * sizeof *meas), *pred = rg_xmalloc((size_t)n * sizeof *pred);
    int *sample_of = rg_xmalloc((size_t)n * sizeof *sample_of);
    n = 0;
    for (int i = 0; i < s->nsamples; i++)
        if (s->samples[i].problem == q) {
            cfgs[n] = s->samples[i].cfg;
            counts[n] = s->samples[i].counts;
            sample_of[n] = i;
            meas[n++] = s->samples[i].time_ms;
        }
    cm_predict(sec, &s->problems[q], cfgs, counts, n, pred);
    for (int k = 0; k < n; k++) sample_pred[sample_of[k]] = pred[k];
    free(sample_of);
    memset(row, 0, sizeof *row);
    row->problem = q;
    cm_score_ranking(pred, meas, n, top_k_of(o, n), &row->score);
    row->predicted_ms = pred[row->score.picked];
    row->picked = cfgs[row->score.picked];
    row->oracle = cfgs[row->score.oracle];
    row->fixed_ms = row->static_topk_ms = NAN;
    cg_config *list;
    int nlist;
    row->have_fixed = static_list(s, train_problem, &s->problems[q], any_size, &list, &nlist) == 0;
    if (row->have_fixed) {
        row->fixed = list[0];
        row->fixed_ms = time_of(s, q, &row->fixed);
        /* the static list measured at the model's K: its configs not measured here find nothing */
        for (int k = 0; k < row->score.top_k && k < nlist; k++) {
            double t = time_of(s, q, &list[k]);
            if (isfinite(t) && !(t >= row->static_topk_ms)) row->static_topk_ms = t;
        }
        free(list);
    }
    qsort(meas, (size_t)n, sizeof *meas, cmp_double);
    row->random_topk_ms = ys_random_expected(meas, n, row->score.top_k);
    free(cfgs);
    free(counts);
    free(meas);
    free(pred);
}

static void add_row(cm_eval *e, const cm_eval_row *row)
{
    e->rows = rg_xrealloc(e->rows, (size_t)(e->nrows + 1) * sizeof *e->rows);
    e->rows[e->nrows++] = *row;
}

/* What an evaluation holds out with a problem: its dataset or its size (dims and heads). */
typedef enum { HOLD_DATASET, HOLD_SIZE } holdout;

static int same_size(const cm_problem *a, const cm_problem *b)
{
    return a->dim_in == b->dim_in && a->dim_out == b->dim_out && a->heads == b->heads;
}

static int held_with(holdout h, const cm_problem *held, const cm_problem *p)
{
    return h == HOLD_DATASET ? !strcmp(held->dataset, p->dataset) : same_size(held, p);
}

/* Fits on everything but what is held out with problem h0 (its dataset or its size) and scores
 * each held-out problem, group by group: no time of a held-out problem reaches its fit or its
 * static list. */
static int eval_held_out(const cm_set *s, int h0, holdout h, const cm_fit_options *o, cm_eval *e, rg_err *err)
{
    const cm_problem *held = &s->problems[h0];
    int *base = rg_xmalloc((size_t)(s->nsamples ? s->nsamples : 1) * sizeof *base);
    int *train_problem = rg_xmalloc((size_t)s->nproblems * sizeof *train_problem);
    int *done = rg_xcalloc((size_t)s->nproblems, sizeof *done), rc = 0;
    for (int i = 0; i < s->nsamples; i++) base[i] = !held_with(h, held, &s->problems[s->samples[i].problem]);
    for (int q = 0; q < s->nproblems; q++) train_problem[q] = !held_with(h, held, &s->problems[q]);
    for (int q = 0; q < s->nproblems && !rc; q++) {
        const cm_problem *p = &s->problems[q];
        if (train_problem[q] || done[q]) continue;
        int n;
        int *use = group_mask(s, base, p->model, p->task, &n);
        cm_section sec;
        if (n && (rc = fit_section(s, use, o, p->model, p->task, &sec, err)) == 0) {
            /* every held-out problem in the group (other dims or heads, or other datasets) */
            for (int k = q; k < s->nproblems; k++) {
                const cm_problem *pk = &s->problems[k];
                if (train_problem[k] || strcmp(pk->model, p->model) || strcmp(pk->task, p->task)) continue;
                cm_eval_row row;
                score_problem(s, k, &sec, train_problem, h == HOLD_SIZE, o, &row, e->sample_pred);
                add_row(e, &row);
                done[k] = 1;
            }
            ranker_free(&sec.ranker);
        }
        free(use);
    }
    free(base);
    free(train_problem);
    free(done);
    return rc;
}

static void summarize(const cm_set *s, cm_eval *e)
{
    for (int r = 0; r < e->nrows; r++) {
        const cm_problem *p = &s->problems[e->rows[r].problem];
        int g = 0;
        while (g < e->ngroups && (strcmp(e->groups[g].model, p->model) || strcmp(e->groups[g].task, p->task))) g++;
        if (g == e->ngroups) {
            e->groups = rg_xrealloc(e->groups, (size_t)(e->ngroups + 1) * sizeof *e->groups);
            memset(&e->groups[g], 0, sizeof e->groups[g]);
            snprintf(e->groups[g].model, sizeof e->groups[g].model, "%s", p->model);
            snprintf(e->groups[g].task, sizeof e->groups[g].task, "%s", p->task);
            e->ngroups++;
        }
    }
    for (int g = 0; g < e->ngroups; g++) {
        cm_eval_summary *sum = &e->groups[g];
        double hits = 0, gap = 0, topk = 0, fixed = 0, vs = 0, rho = 0, k = 0, cands = 0, stk = 0, rtk = 0;
        int nfixed = 0, nrho = 0, nstk = 0;
        for (int r = 0; r < e->nrows; r++) {
            const cm_eval_row *row = &e->rows[r];
            const cm_problem *p = &s->problems[row->problem];
            if (strcmp(sum->model, p->model) || strcmp(sum->task, p->task)) continue;
            /* spot checks (a config or two, e.g. other dims) have a trivial oracle: the
               summary is over sweeps of the space */
            if (row->score.n < CM_MIN_SWEEP) continue;
            sum->nrows++;
            hits += row->score.hit;
            gap += log(row->score.picked_ms / row->score.oracle_ms);
            topk += log(row->score.topk_ms / row->score.oracle_ms);
            k += row->score.top_k;
            cands += row->score.n;
            rtk += log(row->random_topk_ms / row->score.oracle_ms);
            if (isfinite(row->static_topk_ms)) {
                stk += log(row->static_topk_ms / row->score.oracle_ms);
                nstk++;
            }
            if (isfinite(row->fixed_ms)) {
                fixed += log(row->fixed_ms / row->score.oracle_ms);
                vs += log(row->score.picked_ms / row->fixed_ms);
                nfixed++;
            }
            if (isfinite(row->score.spearman)) {
                rho += row->score.spearman;
                nrho++;
            }
        }
        if (sum->nrows == 0) {
            sum->hit_rate = sum->gap_geomean = sum->topk_gap_geomean = sum->fixed_gap_geomean = NAN;
            sum->picked_vs_fixed = sum->spearman_mean = sum->topk_fraction = NAN;
            sum->static_topk_gap_geomean = sum->random_topk_gap_geomean = NAN;
            continue;
        }
        sum->hit_rate = hits / sum->nrows;
        sum->gap_geomean = exp(gap / sum->nrows);
        sum->topk_gap_geomean = exp(topk / sum->nrows);
        sum->fixed_gap_geomean = nfixed ? exp(fixed / nfixed) : NAN;
        sum->picked_vs_fixed = nfixed ? exp(vs / nfixed) : NAN;
        sum->spearman_mean = nrho ? rho / nrho : NAN;
        sum->topk_fraction = cands > 0 ? k / cands : NAN;
        sum->static_topk_gap_geomean = nstk ? exp(stk / nstk) : NAN;
        sum->random_topk_gap_geomean = exp(rtk / sum->nrows);
    }
}

/* The problems that stand for their dataset (HOLD_DATASET) or size (HOLD_SIZE): the first of each,
 * in order of appearance; returns how many. */
static int held_out_sets(const cm_set *s, holdout h, int *first)
{
    int n = 0;
    for (int q = 0; q < s->nproblems; q++) {
        int seen = 0;
        for (int k = 0; k < n && !seen; k++) seen = held_with(h, &s->problems[first[k]], &s->problems[q]);
        if (!seen) first[n++] = q;
    }
    return n;
}

/* Sizes with a sweep of at least CM_MIN_SWEEP configs: a model fitted on spot checks of one or two
 * configs per size has nothing to rank with. */
static int swept_sizes(const cm_set *s)
{
    int *count = rg_xcalloc((size_t)(s->nproblems ? s->nproblems : 1), sizeof *count), n = 0;
    for (int i = 0; i < s->nsamples; i++) count[s->samples[i].problem]++;
    for (int q = 0; q < s->nproblems; q++) {
        int seen = count[q] < CM_MIN_SWEEP;
        for (int k = 0; k < q && !seen; k++) seen = count[k] >= CM_MIN_SWEEP && same_size(&s->problems[k], &s->problems[q]);
        n += !seen;
    }
    free(count);
    return n;
}

static int evaluate(const cm_set *s, holdout h, const cm_fit_options *o, cm_eval *out, rg_err *err)
{
    cm_fit_options defaults;
    if (!o) {
        cm_fit_options_default(&defaults);
        o = &defaults;
    }
    memset(out, 0, sizeof *out);
    int *first = rg_xmalloc((size_t)(s->nproblems ? s->nproblems : 1) * sizeof *first);
    int nheld = held_out_sets(s, h, first), counted = h == HOLD_DATASET ? nheld : swept_sizes(s);
    if (counted < 2) {
        free(first);
        if (h == HOLD_DATASET)
            return rg_errf(err, "leave-one-dataset-out needs measurements of at least 2 datasets (found %d)", counted);
        return rg_errf(err, "leave-one-size-out needs sweeps (problems of at least %d configs) of at least 2 sizes "
                            "(dims, heads) (found %d)", CM_MIN_SWEEP, counted);
    }
    out->sample_pred = rg_xmalloc((size_t)(s->nsamples ? s->nsamples : 1) * sizeof *out->sample_pred);
    for (int i = 0; i < s->nsamples; i++) out->sample_pred[i] = NAN;
    int rc = 0;
    for (int k = 0; k < nheld && !rc; k++) rc = eval_held_out(s, first[k], h, o, out, err);
    free(first);
    if (rc) {
        cm_eval_free(out);
        return -1;
    }
    summarize(s, out);
    return 0;
}

int cm_lodo(const cm_set *s, const cm_fit_options *o, cm_eval *out, rg_err *err)
{
    return evaluate(s, HOLD_DATASET, o, out, err);
}

int cm_loso(const cm_set *s, const cm_fit_options *o, cm_eval *out, rg_err *err)
{
    return evaluate(s, HOLD_SIZE, o, out, err);
}

void cm_eval_free(cm_eval *e)
{
    free(e->rows);
    free(e->groups);
    free(e->sample_pred);
    memset(e, 0, sizeof *e);
}
