/* `explore report`: paper-style figures from the results store. SQL exports one CSV per figure,
 * the gnuplot scripts of plots/ draw it (PNG + SVG), and index.md shows every figure with a one-line reading. */
#include "results/report.h"
#include "codegen/config.h"
#include "results/store.h"
#include "results/yardstick.h"

#include <errno.h>
#include <fcntl.h>
#include <gsl/gsl_statistics_double.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ================================================================ context ==== */

typedef struct rp_ctx {
    const rp_options *opt;
    const char *db_path;
    sqlite3 *db;
    char device[256];
    int64_t device_rows;
    rg_str other_devices;      /* "name (n), ..." of the devices not shown */
    int has_ref, dim_in, dim_out, heads;   /* the reference problem size (most figures) */
    char *plots_dir, *out_dir;             /* absolute paths */
    char **datasets;           /* every dataset measured on the device, by number of edges */
    int nds;
    int have_pred;             /* cost-model predictions stored for reference-size rows */
} rp_ctx;

typedef struct rp_fig {
    int index;
    const char *stem, *title;
    int width, height;
    rg_str vars;               /* gnuplot -e assignments beyond datafile and outfile */
    rg_str reading;            /* the one-line reading under the figure */
    rg_str md;                 /* markdown after the figure (tables, notes) */
    rg_str skip;               /* non-empty: not drawn, and why */
    FILE *csv;
    char *csv_path;
    double vmin, vmax;         /* range of the positive values written by bar_row */
    int has_range;
} rp_fig;

typedef int (*rp_fig_fn)(rp_ctx *c, rp_fig *f, rg_err *err);

static const char *const LAYOUTS[4] = {"U", "C", "R", "C+R"};

/* ================================================================ small helpers ==== */

static double geomean(const double *v, int n)
{
    double s = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i]) && v[i] > 0) {
            s += log(v[i]);
            k++;
        }
    return k ? exp(s / k) : NAN;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int count_finite(const double *v, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++) k += isfinite(v[i]) != 0;
    return k;
}

static const char *model_name(const char *model, char *buf, size_t n)
{
    snprintf(buf, n, "%s", model);
    for (char *p = buf; *p; p++)
        if (*p >= 'a' && *p <= 'z') *p = (char)(*p - 'a' + 'A');
    return buf;
}

static const char *task_name(const char *task)
{
    return !strcmp(task, "infer") ? "inference" : !strcmp(task, "train") ? "training" : task;
}

/* "RGAT inference" */
static char *problem_title(const char *model, const char *task)
{
    char m[64];
    return rg_xasprintf("%s %s", model_name(model, m, sizeof m), task_name(task));
}

/* 7262 -> "7.26K", 5668682 -> "5.67M" */
static void fmt_count(double v, char *out, size_t n)
{
    if (!isfinite(v)) snprintf(out, n, "n/a");
    else if (v >= 1e9) snprintf(out, n, "%.3gB", v / 1e9);
    else if (v >= 1e6) snprintf(out, n, "%.3gM", v / 1e6);
    else if (v >= 1e3) snprintf(out, n, "%.3gK", v / 1e3);
    else snprintf(out, n, "%.0f", v);
}

static void fmt_x(double v, char *out, size_t n)
{
    if (isfinite(v)) snprintf(out, n, "%.2fx", v);
    else snprintf(out, n, "n/a");
}

/* Names safe in a CSV field and inside gnuplot strings, word lists and eval'd tics: no
 * separators, quotes, backquotes (gnuplot's command substitution) or backslashes. */
static void put_safe(rg_str *s, const char *text)
{
    for (const char *p = text; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        rg_str_putc(s, ch < ' ' ? ' ' : strchr(",'\"`\\", ch) ? '_' : (char)ch);
    }
}

static void csv_num(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, "%.10g", v);
    else fputs("NaN", f);
}

static void csv_text(FILE *f, const char *s)
{
    rg_str b = {0};
    put_safe(&b, s ? s : "");
    if (b.s) fputs(b.s, f);
    rg_str_free(&b);
}

static void track_range(rp_fig *fig, double v)
{
    if (!isfinite(v) || v <= 0) return;
    fig->vmin = fig->has_range && fig->vmin < v ? fig->vmin : v;
    fig->vmax = fig->has_range && fig->vmax > v ? fig->vmax : v;
    fig->has_range = 1;
}

/* One bar (or point) of the long-format tables most figures use:
 * panel,x,value,base,halfwidth,series,label,xtic. Tracks the range of the values. */
static void bar_row(rp_fig *fig, int panel, double x, double value, double base, double halfwidth, int series,
                    const char *label, const char *xtic)
{
    FILE *f = fig->csv;
    track_range(fig, value);
    fprintf(f, "%d,", panel);
    csv_num(f, x);
    fputc(',', f);
    csv_num(f, value);
    fputc(',', f);
    csv_num(f, base);
    fputc(',', f);
    csv_num(f, halfwidth);
    fprintf(f, ",%d,", series);
    csv_text(f, label);
    fputc(',', f);
    csv_text(f, xtic);
    fputc('\n', f);
}
#define BAR_HEADER "panel,x,value,base,halfwidth,series,label,xtic\n"

/* Bars of a cluster side by side around its center. */
static double bar_x(int cluster, int series, int nseries, double *halfwidth)
{
    double w = 0.8 / nseries;
    *halfwidth = w / 2 * 0.9;
    return cluster + (series - (nseries - 1) / 2.0) * w;
}

static void var_num(rp_fig *f, const char *name, double v) { rg_str_printf(&f->vars, "%s=%.10g; ", name, v); }

/* A string variable; its parts were made safe (put_safe) when built, so only the quotes of
 * the single-quoted gnuplot string need doubling. */
static void var_str(rp_fig *f, const char *name, const char *v)
{
    rg_str_printf(&f->vars, "%s='", name);
    for (const char *p = v; *p; p++) {
        if (*p == '\'') rg_str_putc(&f->vars, '\'');
        rg_str_putc(&f->vars, *p);
    }
    rg_str_puts(&f->vars, "'; ");
}

/* Word lists for gnuplot's word(): "a b" "c" ... */
static void word_add(rg_str *w, const char *word)
{
    if (w->len) rg_str_putc(w, ' ');
    rg_str_putc(w, '"');
    put_safe(w, word);
    rg_str_putc(w, '"');
}

/* ("name" 0, "name" 1, ...) for `set xtics`. */
static void tic_add(rg_str *t, const char *name, double pos)
{
    rg_str_puts(t, t->len ? ", " : "(");
    rg_str_putc(t, '"');
    put_safe(t, name);
    rg_str_printf(t, "\" %g", pos);
}

static const char *tic_end(rg_str *t)
{
    if (!t->len) rg_str_puts(t, "(");
    rg_str_puts(t, ")");
    return t->s;
}

/* The dataset clusters of a bar panel: only datasets with data get a slot, so that no panel
 * shows a row of empty slots (baselines and CUPTI counters exist on few datasets). */
typedef struct rp_slots {
    int *of;        /* per dataset index: its cluster, or -1 when not shown */
    int n;          /* clusters */
    rg_str tics;    /* ("name" 0, ...) for xticsdef */
} rp_slots;

static void slots_init(rp_slots *s, int nds)
{
    s->of = rg_xmalloc((size_t)(nds ? nds : 1) * sizeof *s->of);
    for (int d = 0; d < nds; d++) s->of[d] = -1;
    s->n = 0;
    s->tics = (rg_str){0};
}

static void slots_mark(rp_slots *s, int d) { s->of[d] = 0; }

/* Numbers the marked datasets (of[d] >= 0) in the global order and names their tics. */
static void slots_number(rp_slots *s, char *const *datasets, int nds)
{
    s->n = 0;
    for (int d = 0; d < nds; d++)
        if (s->of[d] >= 0) {
            s->of[d] = s->n++;
            tic_add(&s->tics, datasets[d], s->of[d]);
        }
}

/* A further cluster after the datasets (e.g. "geomean"); returns its position. */
static int slots_extra(rp_slots *s, const char *name)
{
    tic_add(&s->tics, name, s->n);
    return s->n++;
}

static void slots_free(rp_slots *s)
{
    free(s->of);
    rg_str_free(&s->tics);
}

static void skipf(rp_fig *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void skipf(rp_fig *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) RG_DIE("out of memory");
    va_end(ap);
    rg_str_puts(&f->skip, s);
    free(s);
}

/* Panels laid out in a grid of at most `maxcols` columns; the height grows with the rows, and
 * with the room that rotated dataset names take under each row (over 6 clusters: the scripts
 * rotate them; 0: no clusters). */
static void grid_layout(rp_fig *f, int npanels, int maxcols, int nclusters, int panel_height)
{
    int cols = npanels < maxcols ? npanels : maxcols, rows = (npanels + cols - 1) / cols;
    var_num(f, "rows", rows);
    var_num(f, "cols", cols);
    f->height = 140 + rows * (panel_height + (nclusters > 6 ? 50 : 0));   /* title, legend, x labels */
}

/* Tics of a log axis at round values (1, 1.5, 2, 3, 5 ... per decade, thinned to a readable
 * count), labelled with a suffix such as "x". */
static void log_tics(double lo, double hi, const char *suffix, rg_str *out)
{
    static const double mant[4][10] = {{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8}, {1, 1.5, 2, 3, 5, 7}, {1, 2, 5}, {1}};
    static const int nmant[4] = {10, 6, 3, 1};
    int d0 = (int)floor(log10(lo)), d1 = (int)ceil(log10(hi));
    for (int level = 0; level < 4; level++) {
        int count = 0;
        for (int d = d0; d <= d1; d++)
            for (int m = 0; m < nmant[level]; m++) {
                double v = mant[level][m] * pow(10, d);
                count += v >= lo && v <= hi;
            }
        if (count > 6 && level < 3) continue;
        for (int d = d0; d <= d1; d++)
            for (int m = 0; m < nmant[level]; m++) {
                double v = mant[level][m] * pow(10, d);
                if (v < lo || v > hi) continue;
                char label[32];
                snprintf(label, sizeof label, "%g%s", v, suffix);
                tic_add(out, label, v);
            }
        return;
    }
}

/* y range and tics of a speed-up axis (log, bars grow from 1) fitted to the values written. */
static void speedup_axis(rp_fig *f)
{
    double lo = f->has_range && f->vmin < 1 ? f->vmin : 1, hi = f->has_range && f->vmax > 1 ? f->vmax : 1;
    lo /= 1.15;
    hi = hi * 1.3 > 1.6 ? hi * 1.3 : 1.6;   /* room for the labels of failed cells above 1 */
    rg_str t = {0};
    log_tics(lo, hi, "x", &t);
    var_num(f, "ymin", lo);
    var_num(f, "ymax", hi);
    var_str(f, "yticsdef", tic_end(&t));
    rg_str_free(&t);
}

/* ================================================================ SQL helpers ==== */

static int sql_fail(rp_ctx *c, rg_err *err, const char *what)
{
    return rg_errf(err, "%s: %s: %s", c->db_path, what, sqlite3_errmsg(c->db));
}

static sqlite3_stmt *sqlv(rp_ctx *c, rg_err *err, const char *fmt, va_list ap)
{
    char *sql = sqlite3_vmprintf(fmt, ap);
    if (!sql) RG_DIE("out of memory");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) {
        sql_fail(c, err, "report query");
        sqlite3_finalize(st);
        st = NULL;
    }
    sqlite3_free(sql);
    return st;
}

/* Prepares a query formatted with sqlite3_mprintf (%Q quotes strings). */
static sqlite3_stmt *sqlf(rp_ctx *c, rg_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sqlite3_stmt *st = sqlv(c, err, fmt, ap);
    va_end(ap);
    return st;
}

static int execf(rp_ctx *c, rg_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *sql = sqlite3_vmprintf(fmt, ap);
    va_end(ap);
    if (!sql) RG_DIE("out of memory");
    char *msg = NULL;
    int rc = sqlite3_exec(c->db, sql, NULL, NULL, &msg);
    sqlite3_free(sql);
    if (rc != SQLITE_OK) rg_errf(err, "%s: report query: %s", c->db_path, msg ? msg : sqlite3_errmsg(c->db));
    sqlite3_free(msg);
    return rc == SQLITE_OK ? 0 : -1;
}

static double col_num(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

/* Finishes a row loop: 0 when the statement ran to completion. */
static int step_end(rp_ctx *c, sqlite3_stmt *st, int rc, rg_err *err)
{
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : sql_fail(c, err, "reading the store");
}

/* One number from a query (NaN when no row or NULL). */
static int query_num(rp_ctx *c, double *out, rg_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sqlite3_stmt *st = sqlv(c, err, fmt, ap);
    va_end(ap);
    if (!st) return -1;
    int rc = sqlite3_step(st);
    *out = rc == SQLITE_ROW ? col_num(st, 0) : NAN;
    if (rc == SQLITE_ROW) rc = SQLITE_DONE;
    return step_end(c, st, rc, err);
}

/* The fastest ok attempt among rows of `ref` matching a WHERE clause, with attempt counts. */
typedef struct rp_best {
    double ms;
    int64_t id;
    int n, n_ok, n_oom;
} rp_best;

static int best_in(rp_ctx *c, const char *table, rp_best *b, const char *where, rg_err *err)
{
    memset(b, 0, sizeof *b);
    b->ms = NAN;
    sqlite3_stmt *st = sqlf(c, err,
                            "SELECT id, ms, status FROM %s WHERE %s"
                            " ORDER BY (status = 'ok' AND ms IS NOT NULL) DESC, ms, id",
                            table, where);
    if (!st) return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int ok = !strcmp(col_text(st, 2), "ok") && sqlite3_column_type(st, 1) != SQLITE_NULL;
        if (ok && !b->n_ok) {
            b->id = sqlite3_column_int64(st, 0);
            b->ms = sqlite3_column_double(st, 1);
        }
        b->n++;
        b->n_ok += ok;
        b->n_oom += !strcmp(col_text(st, 2), "oom");
    }
    return step_end(c, st, rc, err);
}

static int best_where(rp_ctx *c, rp_best *b, const char *where, rg_err *err)
{
    return best_in(c, "ref", b, where, err);
}

/* Best generated attempt of one problem at the reference size; layout NULL: any. */
static int best_generated(rp_ctx *c, rp_best *b, const char *model, const char *task, const char *dataset,
                          const char *layout, rg_err *err)
{
    char *w = layout ? sqlite3_mprintf("system = 'generated' AND model = %Q AND task = %Q AND dataset = %Q"
                                       " AND layout = %Q", model, task, dataset, layout)
                     : sqlite3_mprintf("system = 'generated' AND model = %Q AND task = %Q AND dataset = %Q", model,
                                       task, dataset);
    int rc = best_where(c, b, w, err);
    sqlite3_free(w);
    return rc;
}

/* "" when some attempt was ok or none was made; "OOM" or "fail" otherwise. */
static const char *fail_label(const rp_best *b)
{
    if (b->n_ok || !b->n) return "";
    return b->n_oom ? "OOM" : "fail";
}

/* Distinct (model, task) pairs of generated reference-size rows, in the papers' order. */
typedef struct rp_problem {
    char model[64], task[32];
} rp_problem;

#define PROBLEM_ORDER                                                                                             \
    " ORDER BY CASE model WHEN 'rgcn' THEN 0 WHEN 'rgat' THEN 1 WHEN 'hgt' THEN 2 ELSE 3 END, model,"          \
    " CASE task WHEN 'infer' THEN 0 WHEN 'train' THEN 1 ELSE 2 END, task"

static int list_problems_in(rp_ctx *c, const char *table, const char *where, rp_problem **out, int *n, rg_err *err)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = sqlf(c, err, "SELECT DISTINCT model, task FROM %s WHERE %s" PROBLEM_ORDER, table, where);
    if (!st) return -1;
    int rc, cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) *out = rg_xrealloc(*out, (size_t)(cap = cap ? 2 * cap : 8) * sizeof **out);
        rp_problem *p = &(*out)[(*n)++];
        snprintf(p->model, sizeof p->model, "%s", col_text(st, 0));
        snprintf(p->task, sizeof p->task, "%s", col_text(st, 1));
    }
    return step_end(c, st, rc, err);
}

static int list_problems(rp_ctx *c, const char *where, rp_problem **out, int *n, rg_err *err)
{
    return list_problems_in(c, "ref", where, out, n, err);
}

/* Moves the preferred (model, task) pairs to the front, in the preference order. */
static void prefer_problems(rp_problem *pr, int np, const char *const (*prefs)[2], int nprefs)
{
    int front = 0;
    for (int k = 0; k < nprefs; k++)
        for (int p = front; p < np; p++)
            if (!strcmp(pr[p].model, prefs[k][0]) && !strcmp(pr[p].task, prefs[k][1])) {
                rp_problem t = pr[p];
                memmove(&pr[front + 1], &pr[front], (size_t)(p - front) * sizeof *pr);
                pr[front++] = t;
                break;
            }
}

/* Index of a dataset in the global order, or -1. */
static int dataset_index(const rp_ctx *c, const char *name)
{
    for (int i = 0; i < c->nds; i++)
        if (!strcmp(c->datasets[i], name)) return i;
    return -1;
}

/* Marks the datasets a query returns (its first column: a dataset name). */
static int slots_mark_query(rp_ctx *c, rp_slots *s, rg_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sqlite3_stmt *st = sqlv(c, err, fmt, ap);
    va_end(ap);
    if (!st) return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int d = dataset_index(c, col_text(st, 0));
        if (d >= 0) slots_mark(s, d);
    }
    return step_end(c, st, rc, err);
}

/* The best fixed config of a problem for dataset ds: the first of the static list over the OTHER
 * datasets (ys_static_rank, the one definition explore fit and explore replay use too), so that it
 * is out-of-sample like the cost model's pick. *config: malloc'd, or NULL when no config was
 * measured ok on every other dataset. */
static int best_fixed_config(rp_ctx *c, const char *model, const char *task, const char *ds, char **config,
                             rg_err *err)
{
    *config = NULL;
    sqlite3_stmt *st = sqlf(c, err,
                            "SELECT config, dataset, min(ms) FROM ref WHERE system = 'generated' AND status = 'ok'"
                            " AND ms IS NOT NULL AND model = %Q AND task = %Q GROUP BY config, dataset"
                            " ORDER BY config, dataset",
                            model, task);
    if (!st) return -1;
    char **cfgs = NULL;
    int ncfg = 0, cap = 0, rc;
    double *time = NULL;   /* [config][dataset in c->datasets] */
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *cfg = col_text(st, 0);
        if (!ncfg || strcmp(cfgs[ncfg - 1], cfg)) {
            if (ncfg == cap) {
                cap = cap ? 2 * cap : 64;
                cfgs = rg_xrealloc(cfgs, (size_t)cap * sizeof *cfgs);
                time = rg_xrealloc(time, (size_t)cap * (size_t)(c->nds ? c->nds : 1) * sizeof *time);
            }
            cfgs[ncfg] = rg_xstrdup(cfg);
            for (int d = 0; d < c->nds; d++) time[(size_t)ncfg * (size_t)c->nds + (size_t)d] = NAN;
            ncfg++;
        }
        int d = dataset_index(c, col_text(st, 1));
        if (d >= 0) time[(size_t)(ncfg - 1) * (size_t)c->nds + (size_t)d] = sqlite3_column_double(st, 2);
    }
    int ret = step_end(c, st, rc, err);
    if (!ret && ncfg && c->nds) {
        /* ys_static_rank takes problems x configs */
        double *t = rg_xmalloc((size_t)ncfg * (size_t)c->nds * sizeof *t);
        int *train = rg_xmalloc((size_t)c->nds * sizeof *train), *order = rg_xmalloc((size_t)ncfg * sizeof *order);
        for (int d = 0; d < c->nds; d++) {
            train[d] = strcmp(c->datasets[d], ds) != 0;
            for (int k = 0; k < ncfg; k++) t[(size_t)d * (size_t)ncfg + (size_t)k] = time[(size_t)k * (size_t)c->nds + (size_t)d];
        }
        if (ys_static_rank(t, c->nds, ncfg, train, order, NULL) > 0) *config = rg_xstrdup(cfgs[order[0]]);
        free(t);
        free(train);
        free(order);
    }
    for (int k = 0; k < ncfg; k++) free(cfgs[k]);
    free(cfgs);
    free(time);
    return ret;
}

/* ================================================================ 1. datasets ==== */

static int fig_datasets(rp_ctx *c, rp_fig *f, rg_err *err)
{
    sqlite3_stmt *st = sqlf(c, err,
                            "SELECT name, node_types, edge_types, nodes, edges, density, avg_degree, compaction_ratio"
                            " FROM datasets WHERE nodes IS NOT NULL AND edges IS NOT NULL"
                            " AND (name IN (SELECT dataset FROM mx) OR NOT EXISTS (SELECT 1 FROM mx))"
                            " ORDER BY edges, name");
    if (!st) return -1;
    fputs("idx,dataset,node_types,edge_types,nodes,edges,density_e6,avg_degree,compaction_pct\n", f->csv);
    rg_str_puts(&f->md, "| dataset | node types | edge types | nodes | edges | density (×10⁻⁶) | avg degree |"
                        " entity compaction ratio |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    rg_str tics = {0};
    int n = 0, rc;
    double cr_min = INFINITY, cr_max = -INFINITY, e_min = INFINITY, e_max = -INFINITY;
    char cr_min_name[128] = "", cr_max_name[128] = "", e_min_name[128] = "", e_max_name[128] = "";
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = col_text(st, 0);
        double nodes = col_num(st, 3), edges = col_num(st, 4), density = col_num(st, 5), deg = col_num(st, 6),
               cr = col_num(st, 7);
        fprintf(f->csv, "%d,", n);
        csv_text(f->csv, name);
        fputc(',', f->csv);
        double nums[] = {col_num(st, 1), col_num(st, 2), nodes, edges, density * 1e6, deg, cr * 100};
        for (int i = 0; i < 7; i++) {
            csv_num(f->csv, nums[i]);
            fputc(i == 6 ? '\n' : ',', f->csv);
        }
        char sn[32], se[32];
        fmt_count(nodes, sn, sizeof sn);
        fmt_count(edges, se, sizeof se);
        rg_str_printf(&f->md, "| %s | %s | %s | %s | %s | %.4g | %.1f | ", name, col_text(st, 1), col_text(st, 2), sn,
                      se, density * 1e6, deg);
        if (isfinite(cr)) rg_str_printf(&f->md, "%.1f%% |\n", cr * 100);
        else rg_str_puts(&f->md, "n/a |\n");
        tic_add(&tics, name, n);
        if (isfinite(cr) && cr < cr_min) cr_min = cr, snprintf(cr_min_name, sizeof cr_min_name, "%s", name);
        if (isfinite(cr) && cr > cr_max) cr_max = cr, snprintf(cr_max_name, sizeof cr_max_name, "%s", name);
        if (edges < e_min) e_min = edges, snprintf(e_min_name, sizeof e_min_name, "%s", name);
        if (edges > e_max) e_max = edges, snprintf(e_max_name, sizeof e_max_name, "%s", name);
        n++;
    }
    if (step_end(c, st, rc, err)) {
        rg_str_free(&tics);
        return -1;
    }
    if (!n) {
        skipf(f, "needs dataset statistics (nodes, edges, compaction ratio) in the datasets table; a sweep stores "
                 "them for every dataset it measures");
    } else {
        char a[32], b[32];
        fmt_count(e_min, a, sizeof a);
        fmt_count(e_max, b, sizeof b);
        rg_str_printf(&f->reading, "%d dataset%s, from %s edges (%s) to %s (%s)", n, n == 1 ? "" : "s", a, e_min_name,
                      b, e_max_name);
        if (isfinite(cr_min))
            rg_str_printf(&f->reading, "; entity compaction ratio from %.0f%% (%s) to %.0f%% (%s): the lower it is, "
                                       "the more compaction saves",
                          cr_min * 100, cr_min_name, cr_max * 100, cr_max_name);
        rg_str_putc(&f->reading, '.');
    }
    var_num(f, "ndatasets", n);
    var_str(f, "xticsdef", tic_end(&tics));
    f->width = 1000;
    f->height = 480;
    rg_str_free(&tics);
    return 0;
}

/* ================================================================ 2. baselines ==== */

/* pos[s]: the place of baseline system s among those measured on problem p (-1: none), so a
 * panel with one system shows one full-width bar per dataset instead of a narrow one aside. */
static int panel_systems(rp_ctx *c, const rp_problem *p, char *const *sys, int ns, int *pos, int *npos, rg_err *err)
{
    for (int s = 0; s < ns; s++) pos[s] = -1;
    sqlite3_stmt *st = sqlf(c, err, "SELECT DISTINCT system FROM ref WHERE system <> 'generated' AND model = %Q"
                                    " AND task = %Q", p->model, p->task);
    if (!st) return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        for (int s = 0; s < ns; s++)
            if (!strcmp(sys[s], col_text(st, 0))) pos[s] = 0;
    *npos = 0;
    for (int s = 0; s < ns; s++)
        if (pos[s] >= 0) pos[s] = (*npos)++;
    return step_end(c, st, rc, err);
}

static int fig_baselines(rp_ctx *c, rp_fig *f, rg_err *err)
{
    if (!c->has_ref) {
        skipf(f, "needs ok generated measurements (system 'generated') on this device");
        return 0;
    }
    rp_problem *pr;
    int np;
    if (list_problems(c, "system <> 'generated'", &pr, &np, err)) return -1;
    /* baseline systems, sorted */
    char **sys = NULL;
    int ns = 0;
    sqlite3_stmt *st = sqlf(c, err, "SELECT DISTINCT system FROM ref WHERE system <> 'generated' ORDER BY system");
    if (!st) {
        free(pr);
        return -1;
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        sys = rg_xrealloc(sys, (size_t)(ns + 1) * sizeof *sys);
        sys[ns++] = rg_xstrdup(col_text(st, 0));
    }
    int ret = step_end(c, st, rc, err);
    /* clusters: the datasets with a baseline and a generated measurement of the same problem */
    rp_slots sl;
    slots_init(&sl, c->nds);
    if (!ret)
        ret = slots_mark_query(c, &sl, err,
                               "SELECT DISTINCT b.dataset FROM ref b WHERE b.system <> 'generated' AND EXISTS"
                               " (SELECT 1 FROM ref g WHERE g.system = 'generated' AND g.model = b.model"
                               " AND g.task = b.task AND g.dataset = b.dataset)");
    slots_number(&sl, c->datasets, c->nds);
    rg_str panels = {0}, series = {0};
    double *speed = NULL;
    int *pos = rg_xcalloc((size_t)(ns ? ns : 1), sizeof *pos);
    const char **missing = rg_xcalloc((size_t)(c->nds ? c->nds : 1), sizeof *missing);
    int panel = 0, slowdowns = 0, gen_oom = 0, base_oom = 0;
    fputs(BAR_HEADER, f->csv);
    rg_str_puts(&f->md, "Speed-up of the best generated variant over the best baseline per dataset:\n\n"
                        "| model | task | worst | geomean | best | slowdowns | generated OOM | every baseline OOM |\n"
                        "|---|---|---:|---:|---:|---:|---:|---:|\n");
    for (int p = 0; !ret && p < np; p++) {
        speed = rg_xrealloc(speed, (size_t)(c->nds ? c->nds : 1) * sizeof *speed);
        int drawn = 0, p_gen_oom = 0, p_base_oom = 0, npos = 0;
        if ((ret = panel_systems(c, &pr[p], sys, ns, pos, &npos, err))) break;
        for (int d = 0; !ret && d < c->nds; d++) {
            speed[d] = NAN;
            missing[d] = NULL;
            int drawn_d = 0;
            rp_best gen;
            if ((ret = best_generated(c, &gen, pr[p].model, pr[p].task, c->datasets[d], NULL, err))) break;
            double best_base = NAN;
            int any_base = 0, all_oom = 1;
            for (int s = 0; s < ns; s++) {
                rp_best b;
                char *w = sqlite3_mprintf("system = %Q AND model = %Q AND task = %Q AND dataset = %Q", sys[s],
                                          pr[p].model, pr[p].task, c->datasets[d]);
                ret = best_where(c, &b, w, err);
                sqlite3_free(w);
                if (ret) break;
                if (!b.n) continue;
                any_base = 1;
                all_oom &= !b.n_ok && b.n_oom;
                if (b.n_ok && !(b.ms >= best_base)) best_base = b.ms;
                if (!gen.n || sl.of[d] < 0 || pos[s] < 0) continue;
                double hw, x = bar_x(sl.of[d], pos[s], npos, &hw);
                const char *label = gen.n_ok ? fail_label(&b) : !strcmp(fail_label(&gen), "OOM") ? "gen. OOM" : "gen. fail";
                bar_row(f, panel, x, gen.n_ok && b.n_ok ? b.ms / gen.ms : NAN, 1, hw, s, label, c->datasets[d]);
                drawn_d++;
            }
            drawn += drawn_d;
            if (sl.of[d] >= 0 && !drawn_d) missing[d] = gen.n ? "no baseline" : "not measured";
            if (!any_base || !gen.n) continue;
            if (!gen.n_ok && gen.n_oom) p_gen_oom++;
            if (all_oom) p_base_oom++;
            if (gen.n_ok && isfinite(best_base)) speed[d] = best_base / gen.ms;
        }
        if (ret || !drawn) continue;
        /* a slot this problem has no bar in says why instead of staying blank */
        for (int d = 0; d < c->nds; d++)
            if (missing[d]) bar_row(f, panel, sl.of[d], NAN, 1, 0.4, 0, missing[d], c->datasets[d]);
        char *title = problem_title(pr[p].model, pr[p].task);
        word_add(&panels, title);
        double lo = INFINITY, hi = -INFINITY;
        int p_slowdowns = 0;
        for (int d = 0; d < c->nds; d++)
            if (isfinite(speed[d])) {
                if (speed[d] < lo) lo = speed[d];
                if (speed[d] > hi) hi = speed[d];
                p_slowdowns += speed[d] < 1;
            }
        slowdowns += p_slowdowns;
        char g[32], w[32], b[32];
        fmt_x(geomean(speed, c->nds), g, sizeof g);
        fmt_x(count_finite(speed, c->nds) ? lo : NAN, w, sizeof w);
        fmt_x(count_finite(speed, c->nds) ? hi : NAN, b, sizeof b);
        rg_str_printf(&f->md, "| %s | %s | %s | %s | %s | %d | %d | %d |\n", pr[p].model, pr[p].task, w, g, b,
                      p_slowdowns, p_gen_oom, p_base_oom);
        rg_str_printf(&f->reading, "%s%s %s", panel ? ", " : "Best generated variant vs the best baseline (geomean): ",
                      title, g);
        gen_oom += p_gen_oom;
        base_oom += p_base_oom;
        free(title);
        panel++;
    }
    if (!ret && !panel) {
        skipf(f, "needs baseline measurements (system other than 'generated', e.g. pyg, cublas-seg) and generated "
                 "measurements of the same model, task and dataset at %dx%d dims on this device",
              c->dim_in, c->dim_out);
    } else if (!ret) {
        rg_str_printf(&f->reading, "; %d slowdown%s; the generated code ran out of memory on %d problem%s, every "
                                   "baseline on %d.",
                      slowdowns, slowdowns == 1 ? "" : "s", gen_oom, gen_oom == 1 ? "" : "s", base_oom);
        for (int s = 0; s < ns; s++) word_add(&series, sys[s]);
        var_num(f, "npanels", panel);
        var_str(f, "panels", panels.s);
        var_num(f, "nseries", ns);
        var_str(f, "series", series.s);
        var_str(f, "xticsdef", tic_end(&sl.tics));
        var_num(f, "nclusters", sl.n);
        speedup_axis(f);
        grid_layout(f, panel, 2, sl.n, 250);
        f->width = 1000;
    }
    for (int s = 0; s < ns; s++) free(sys[s]);
    free(sys);
    free(pr);
    free(speed);
    free(pos);
    free(missing);
    slots_free(&sl);
    rg_str_free(&panels);
    rg_str_free(&series);
    return ret;
}

/* ================================================================ 3. ablation ==== */

enum { AB_C, AB_R, AB_CR, AB_ORACLE, AB_FIXED, AB_PICK, AB_NSERIES };
static const char *const AB_SERIES[AB_NSERIES] = {"C", "R", "C+R", "oracle", "best fixed", "cost-model pick"};

/* Measured time of the config the cost model ranks first on one problem (NaN: no prediction). */
static int cost_model_pick(rp_ctx *c, const char *model, const char *task, const char *dataset, double *ms,
                           int64_t *id, rg_err *err)
{
    *ms = NAN;
    *id = 0;
    sqlite3_stmt *st = sqlf(c, err,
                            "SELECT r.ms, r.id FROM ref r JOIN pred p ON p.id = r.id WHERE r.system = 'generated'"
                            " AND r.model = %Q AND r.task = %Q AND r.dataset = %Q ORDER BY p.predicted, r.id LIMIT 1",
                            model, task, dataset);
    if (!st) return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *ms = col_num(st, 0);
        *id = sqlite3_column_int64(st, 1);
        rc = SQLITE_DONE;
    }
    return step_end(c, st, rc, err);
}

static int best_of_config(rp_ctx *c, rp_best *b, const char *model, const char *task, const char *dataset,
                          const char *config, rg_err *err)
{
    char *w = sqlite3_mprintf("system = 'generated' AND model = %Q AND task = %Q AND dataset = %Q AND config = %Q",
                              model, task, dataset, config);
    int rc = best_where(c, b, w, err);
    sqlite3_free(w);
    return rc;
}

/* Problems of the ablation: RGAT and HGT (the papers' choice), else any model measured
 * with at least two layouts. */
static int ablation_problems(rp_ctx *c, rp_problem **pr, int *np, rg_err *err)
{
    const char *wheres[] = {"system = 'generated' AND model IN ('rgat', 'hgt')", "system = 'generated'"};
    for (int w = 0; w < 2; w++) {
        if (list_problems(c, wheres[w], pr, np, err)) return -1;
        int kept = 0;
        for (int p = 0; p < *np; p++) {
            double layouts;
            if (query_num(c, &layouts, err,
                          "SELECT count(DISTINCT layout) FROM ref WHERE system = 'generated' AND status = 'ok'"
                          " AND model = %Q AND task = %Q",
                          (*pr)[p].model, (*pr)[p].task)) {
                free(*pr);
                return -1;
            }
            if (layouts >= 2) (*pr)[kept++] = (*pr)[p];
        }
        *np = kept;
        if (kept) return 0;
        free(*pr);
        *pr = NULL;
    }
    return 0;
}

typedef struct ab_panel {
    double (*val)[AB_NSERIES];      /* [nds + 1]: speed-up over U; the last row is the geomean */
    char (*label)[AB_NSERIES][16];
    int *normalized;                /* dataset normalized by C (U failed) */
    int *present;
} ab_panel;

/* Speed-ups of one (model, task) over U on every dataset. */
static int ablation_panel(rp_ctx *c, const rp_problem *p, ab_panel *a, rg_err *err)
{
    for (int d = 0; d < c->nds; d++) {
        const char *ds = c->datasets[d];
        char *fixed = NULL;
        rp_best l[4], all, fx;
        for (int i = 0; i < 4; i++)
            if (best_generated(c, &l[i], p->model, p->task, ds, LAYOUTS[i], err)) return -1;
        if (best_generated(c, &all, p->model, p->task, ds, NULL, err)) return -1;
        for (int s = 0; s < AB_NSERIES; s++) {
            a->val[d][s] = NAN;
            a->label[d][s][0] = 0;
        }
        if (!(a->present[d] = all.n > 0)) continue;
        double base = l[0].n_ok ? l[0].ms : l[1].n_ok ? l[1].ms : NAN;
        a->normalized[d] = !l[0].n_ok && l[1].n_ok;
        if (!isfinite(base)) {   /* nothing to compare with: say why each bar is missing */
            for (int i = 1; i < 4; i++) snprintf(a->label[d][i - 1], 16, "%s", l[i].n_ok ? "no U/C" : fail_label(&l[i]));
            snprintf(a->label[d][AB_ORACLE], 16, "%s", all.n_ok ? "no U/C" : fail_label(&all));
            continue;
        }
        for (int i = 1; i < 4; i++) {
            a->val[d][i - 1] = base / l[i].ms;
            snprintf(a->label[d][i - 1], 16, "%s", fail_label(&l[i]));
        }
        if (a->normalized[d]) snprintf(a->label[d][AB_C], 16, "U %s", fail_label(&l[0]));
        a->val[d][AB_ORACLE] = base / all.ms;
        if (best_fixed_config(c, p->model, p->task, ds, &fixed, err)) return -1;
        if (fixed) {
            int bad = best_of_config(c, &fx, p->model, p->task, ds, fixed, err);
            free(fixed);
            if (bad) return -1;
            a->val[d][AB_FIXED] = base / fx.ms;
        }
        double pick;
        int64_t pick_id;
        if (c->have_pred && cost_model_pick(c, p->model, p->task, ds, &pick, &pick_id, err)) return -1;
        if (c->have_pred) a->val[d][AB_PICK] = base / pick;
    }
    /* geomean over datasets not normalized by C, as the papers average */
    double *v = rg_xmalloc((size_t)(c->nds ? c->nds : 1) * sizeof *v);
    for (int s = 0; s < AB_NSERIES; s++) {
        for (int d = 0; d < c->nds; d++) v[d] = a->normalized[d] ? NAN : a->val[d][s];
        a->val[c->nds][s] = geomean(v, c->nds);
        a->label[c->nds][s][0] = 0;
    }
    free(v);
    return 0;
}

static void ablation_md(rp_ctx *c, rp_fig *f, const char *title, const ab_panel *a, int nser)
{
    rg_str_printf(&f->md, "\n**%s**: speed-up over U (each layout with its best schedule); best fixed: per dataset, the "
                          "config with the best geomean on the other datasets.\n\n| dataset |",
                  title);
    for (int s = 0; s < nser; s++) rg_str_printf(&f->md, " %s |", AB_SERIES[s]);
    rg_str_puts(&f->md, "\n|---|");
    for (int s = 0; s < nser; s++) rg_str_puts(&f->md, "---:|");
    rg_str_putc(&f->md, '\n');
    for (int d = 0; d <= c->nds; d++) {
        if (d < c->nds && !a->present[d]) continue;
        rg_str_printf(&f->md, "| %s%s |", d < c->nds ? c->datasets[d] : "geomean",
                      d < c->nds && a->normalized[d] ? "*" : "");
        for (int s = 0; s < nser; s++) {
            if (isfinite(a->val[d][s])) rg_str_printf(&f->md, " %.2f |", a->val[d][s]);
            else rg_str_printf(&f->md, " %s |", a->label[d][s][0] ? a->label[d][s] : "–");
        }
        rg_str_putc(&f->md, '\n');
    }
}

/* "RGAT inference: C+R 1.41x over U (geomean), best on fb15k237 (1.90x); oracle 1.06x over best fixed" */
static void ablation_reading(rp_ctx *c, rp_fig *f, const char *title, const ab_panel *a, int first)
{
    /* C+R as in the papers; when it was not measured, the best layout that was */
    int s = AB_CR;
    for (int k = AB_C; k <= AB_R && !isfinite(a->val[c->nds][AB_CR]); k++)
        if (isfinite(a->val[c->nds][k]) && (s == AB_CR || a->val[c->nds][k] > a->val[c->nds][s])) s = k;
    double best = -INFINITY;
    int best_d = -1;
    for (int d = 0; d < c->nds; d++)
        if (isfinite(a->val[d][s]) && a->val[d][s] > best) best = a->val[d][s], best_d = d;
    char g[32], b[32];
    fmt_x(a->val[c->nds][s], g, sizeof g);
    fmt_x(best, b, sizeof b);
    rg_str_printf(&f->reading, "%s%s: %s %s over U (geomean)", first ? "" : "; ", title, AB_SERIES[s], g);
    if (best_d >= 0) rg_str_printf(&f->reading, ", best on %s (%s)", c->datasets[best_d], b);
    double *ratio = rg_xmalloc((size_t)(c->nds ? c->nds : 1) * sizeof *ratio);
    for (int d = 0; d < c->nds; d++) ratio[d] = a->val[d][AB_ORACLE] / a->val[d][AB_FIXED];
    double r = geomean(ratio, c->nds);
    free(ratio);
    if (isfinite(r)) rg_str_printf(&f->reading, "; oracle %.2fx over best fixed", r);
}

static int fig_ablation(rp_ctx *c, rp_fig *f, rg_err *err)
{
    rp_problem *pr = NULL;
    int np = 0;
    if (c->has_ref && ablation_problems(c, &pr, &np, err)) return -1;
    if (!np) {
        skipf(f, "needs generated measurements with at least two of the layouts U, C, R, C+R (config keys compact "
                 "and reorder) for one model and task at %dx%d dims", c->dim_in, c->dim_out);
        return 0;
    }
    int nser = c->have_pred ? AB_NSERIES : AB_NSERIES - 1, ret = 0, any_norm = 0;
    ab_panel a = {rg_xcalloc((size_t)c->nds + 1, sizeof *a.val), rg_xcalloc((size_t)c->nds + 1, sizeof *a.label),
                  rg_xcalloc((size_t)c->nds + 1, sizeof(int)), rg_xcalloc((size_t)c->nds + 1, sizeof(int))};
    rg_str panels = {0}, series = {0};
    /* clusters: the datasets any panel measured, then the geomean */
    rp_slots sl;
    slots_init(&sl, c->nds);
    for (int p = 0; p < np && !ret; p++)
        ret = slots_mark_query(c, &sl, err, "SELECT DISTINCT dataset FROM ref WHERE system = 'generated'"
                                            " AND model = %Q AND task = %Q", pr[p].model, pr[p].task);
    slots_number(&sl, c->datasets, c->nds);
    int geo = slots_extra(&sl, "geomean");
    fputs(BAR_HEADER, f->csv);
    for (int p = 0; p < np && !ret; p++) {
        char *title = problem_title(pr[p].model, pr[p].task);
        ret = ablation_panel(c, &pr[p], &a, err);
        if (!ret) {
            for (int d = 0; d <= c->nds; d++) {
                int slot = d < c->nds ? sl.of[d] : geo;
                if (slot < 0) continue;
                if (d < c->nds && !a.present[d]) {   /* another panel's dataset: say so, not a blank slot */
                    bar_row(f, p, slot, NAN, 1, 0.4, 0, "not measured", c->datasets[d]);
                    continue;
                }
                any_norm |= d < c->nds && a.normalized[d];
                for (int s = 0; s < nser; s++) {
                    double hw, x = bar_x(slot, s, nser, &hw);
                    bar_row(f, p, x, a.val[d][s], 1, hw, s, a.label[d][s], d < c->nds ? c->datasets[d] : "geomean");
                }
            }
            word_add(&panels, title);
            ablation_md(c, f, title, &a, nser);
            ablation_reading(c, f, title, &a, p == 0);
        }
        free(title);
    }
    if (!ret) {
        rg_str_putc(&f->reading, '.');
        if (any_norm)
            rg_str_puts(&f->md, "\n\\* U failed there (label on the C bar): speed-ups are normalized by C and the "
                                "dataset is left out of the geomean, as in the papers.\n");
        for (int s = 0; s < nser; s++) word_add(&series, AB_SERIES[s]);
        var_num(f, "npanels", np);
        var_str(f, "panels", panels.s);
        var_num(f, "nseries", nser);
        var_str(f, "series", series.s);
        var_str(f, "xticsdef", tic_end(&sl.tics));
        var_num(f, "nclusters", sl.n);
        speedup_axis(f);
        grid_layout(f, np, 2, sl.n, 260);
        f->width = 1100;
    }
    slots_free(&sl);
    free(a.val);
    free(a.label);
    free(a.normalized);
    free(a.present);
    free(pr);
    rg_str_free(&panels);
    rg_str_free(&series);
    return ret;
}

/* ================================================================ 4. breakdown ==== */

/* GEMM / traversal / other ms of one measurement: its own columns, else its kernel times. */
static int breakdown_of(rp_ctx *c, int64_t id, double part[3], rg_err *err)
{
    sqlite3_stmt *st = sqlf(c, err, "SELECT gemm_ms, trav_ms, other_ms FROM ref WHERE id = %lld", (long long)id);
    if (!st) return -1;
    int rc = sqlite3_step(st);
    for (int i = 0; i < 3; i++) part[i] = rc == SQLITE_ROW ? col_num(st, i) : NAN;
    if (rc == SQLITE_ROW) rc = SQLITE_DONE;
    if (step_end(c, st, rc, err)) return -1;
    if (isfinite(part[0]) && isfinite(part[1])) {
        if (!isfinite(part[2])) part[2] = 0;
        return 0;
    }
    st = sqlf(c, err,
              "SELECT sum(CASE WHEN category = 'gemm' THEN median_ns END),"
              " sum(CASE WHEN category = 'traversal' THEN median_ns END),"
              " sum(CASE WHEN category NOT IN ('gemm', 'traversal') THEN median_ns END), count(*)"
              " FROM kernel_times WHERE measurement_id = %lld",
              (long long)id);
    if (!st) return -1;
    rc = sqlite3_step(st);
    int have = rc == SQLITE_ROW && sqlite3_column_int(st, 3) > 0;
    for (int i = 0; i < 3; i++) {
        double v = have ? col_num(st, i) : NAN;
        part[i] = have ? (isfinite(v) ? v / 1e6 : 0) : NAN;
    }
    if (rc == SQLITE_ROW) rc = SQLITE_DONE;
    return step_end(c, st, rc, err);
}

static int is_fb15k(const char *name) { return !strncasecmp(name, "fb15k", 5); }

/* Datasets of a problem where all four layouts ran ok. */
static int full_layout_datasets(rp_ctx *c, const rp_problem *p, int *idx, int *n, rg_err *err)
{
    *n = 0;
    sqlite3_stmt *st = sqlf(c, err,
                            "SELECT dataset FROM ref WHERE system = 'generated' AND status = 'ok' AND ms IS NOT NULL"
                            " AND model = %Q AND task = %Q GROUP BY dataset HAVING count(DISTINCT layout) = 4",
                            p->model, p->task);
    if (!st) return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int d = dataset_index(c, col_text(st, 0));
        if (d >= 0) idx[(*n)++] = d;
    }
    return step_end(c, st, rc, err);
}

/* Two contrasting datasets: AM and FB15k as in the papers, else the lowest and highest
 * compaction ratio. */
static int pick_two(rp_ctx *c, const int *idx, int n, int out[2], rg_err *err)
{
    int am = -1, fb = -1;
    for (int i = 0; i < n; i++) {
        if (!strcasecmp(c->datasets[idx[i]], "am")) am = idx[i];
        if (is_fb15k(c->datasets[idx[i]])) fb = idx[i];
    }
    if (am >= 0 && fb >= 0) {
        out[0] = am;
        out[1] = fb;
        return 2;
    }
    double lo = INFINITY, hi = -INFINITY;
    out[0] = out[1] = idx[0];
    for (int i = 0; i < n; i++) {
        double cr;
        if (query_num(c, &cr, err, "SELECT compaction_ratio FROM datasets WHERE name = %Q", c->datasets[idx[i]]))
            return -1;
        if (isfinite(cr) && cr < lo) lo = cr, out[0] = idx[i];
        if (isfinite(cr) && cr > hi) hi = cr, out[1] = idx[i];
    }
    return out[0] == out[1] ? 1 : 2;
}

static int fig_breakdown(rp_ctx *c, rp_fig *f, rg_err *err)
{
    rp_problem *pr = NULL;
    int np = 0, ret = 0;
    static const char *const prefs[][2] = {{"rgat", "infer"}, {"hgt", "infer"}, {"rgat", "train"}, {"hgt", "train"}};
    if (c->has_ref && list_problems(c, "system = 'generated'", &pr, &np, err)) return -1;
    prefer_problems(pr, np, prefs, 4);
    int *idx = rg_xcalloc((size_t)c->nds + 1, sizeof *idx), n = 0, chosen = -1;
    for (int p = 0; p < np && chosen < 0; p++) {
        if ((ret = full_layout_datasets(c, &pr[p], idx, &n, err))) break;
        if (n) chosen = p;
    }
    if (!ret && chosen < 0)
        skipf(f, "needs ok generated measurements of all four layouts U, C, R and C+R of one model and task on one "
                 "dataset, with GEMM/traversal/other times (measurement columns or kernel times)");
    int two[2], npanels = 0;
    if (!ret && chosen >= 0 && (npanels = pick_two(c, idx, n, two, err)) < 0) ret = -1;
    rg_str panels = {0};
    char *title = chosen >= 0 ? problem_title(pr[chosen].model, pr[chosen].task) : NULL;
    if (npanels > 0) fputs("panel,row,layout,gemm,traversal,other,total\n", f->csv);
    for (int k = 0; !ret && k < npanels; k++) {
        const char *ds = c->datasets[two[k]];
        double total[4], gemm[4];
        for (int l = 0; l < 4 && !ret; l++) {
            rp_best b;
            double part[3];
            if ((ret = best_generated(c, &b, pr[chosen].model, pr[chosen].task, ds, LAYOUTS[l], err)) ||
                (ret = breakdown_of(c, b.id, part, err)))
                break;
            if (!isfinite(part[0])) part[0] = part[1] = 0, part[2] = b.ms;   /* no split known: all "other" */
            total[l] = b.ms;
            gemm[l] = part[0];
            fprintf(f->csv, "%d,%d,%s,", k, 3 - l, LAYOUTS[l]);
            for (int i = 0; i < 3; i++) {
                csv_num(f->csv, part[i]);
                fputc(',', f->csv);
            }
            csv_num(f->csv, b.ms);
            fputc('\n', f->csv);
        }
        if (ret) break;
        double cr;
        if ((ret = query_num(c, &cr, err, "SELECT compaction_ratio FROM datasets WHERE name = %Q", ds))) break;
        char *pt = isfinite(cr) ? rg_xasprintf("%s (entity compaction ratio %.0f%%)", ds, cr * 100) : rg_xstrdup(ds);
        word_add(&panels, pt);
        free(pt);
        rg_str_printf(&f->reading, "%son %s: C+R takes %.3g ms vs %.3g ms for U (%.2fx), GEMM time %.3g -> %.3g ms",
                      k ? "; " : "", ds, total[3], total[0], total[0] / total[3], gemm[0], gemm[3]);
    }
    if (!ret && npanels > 0) {
        char *lead = rg_xasprintf("%s, %dx%d dims: ", title, c->dim_in, c->dim_out);
        rg_str body = f->reading;
        f->reading = (rg_str){0};
        rg_str_puts(&f->reading, lead);
        rg_str_puts(&f->reading, body.s);
        rg_str_putc(&f->reading, '.');
        rg_str_free(&body);
        free(lead);
        var_num(f, "npanels", npanels);
        var_str(f, "panels", panels.s);
        var_str(f, "figtitle", title);
        f->width = 1000;
        f->height = 420;
    }
    free(title);
    free(idx);
    free(pr);
    rg_str_free(&panels);
    return ret;
}

/* ================================================================ 5. memory ==== */

/* Lowest peak memory (MB) of the ok generated attempts of one layout (NaN: none known). */
static int peak_mb(rp_ctx *c, const rp_problem *p, const char *ds, const char *layout, double *mb, rg_err *err)
{
    if (query_num(c, mb, err,
                  "SELECT min(peak) FROM ref WHERE system = 'generated' AND status = 'ok' AND peak > 0"
                  " AND model = %Q AND task = %Q AND dataset = %Q AND layout = %Q",
                  p->model, p->task, ds, layout))
        return -1;
    *mb /= 1048576.0;
    return 0;
}

typedef struct mem_cell {
    double u_mb, c_mb;
    char u_fail[16];
} mem_cell;

static int memory_cell(rp_ctx *c, const rp_problem *p, int d, mem_cell *m, rg_err *err)
{
    rp_best u;
    if (peak_mb(c, p, c->datasets[d], "U", &m->u_mb, err) || peak_mb(c, p, c->datasets[d], "C", &m->c_mb, err) ||
        best_generated(c, &u, p->model, p->task, c->datasets[d], "U", err))
        return -1;
    snprintf(m->u_fail, sizeof m->u_fail, "%s", fail_label(&u));
    return 0;
}

/* Figure 5a's dataset names, in axis units of its 0..100 x 0..110 panel as drawn (about 4.5 px
 * per x unit, 3.3 per y unit, 9-point text). */
#define NAME_CHAR_W 1.45
#define NAME_LINE_H 3.9
#define NAME_POINT_RX 1.3   /* half a marker (ps 1.4) */
#define NAME_POINT_RY 1.8

typedef struct name_box {
    double x0, x1, y0, y1;
} name_box;

static int boxes_meet(const name_box *a, const name_box *b)
{
    return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1;
}

/* Whether a name may go at box b: inside the panel, clear of the legend, of every point and of
 * the names already placed. */
static int name_fits(const name_box *b, const name_box *taken, int ntaken)
{
    static const name_box legend = {45, 100, 0, 29};   /* bottom right (05_memory.gp) */
    if (b->x0 < 1 || b->x1 > 99 || b->y0 < 1 || b->y1 > 109 || boxes_meet(b, &legend)) return 0;
    for (int i = 0; i < ntaken; i++)
        if (boxes_meet(b, &taken[i])) return 0;
    return 1;
}

/* Writes each dataset's name (panel 2) under its lowest point when there is room, else at
 * the nearest free place beside, below or above its points, with a leader line to its lowest
 * or highest point (panel 3: the point, then the offset to the name), so that no two names overlap:
 * datasets of equal compaction ratio have their points in one column. */
static void place_names(rp_fig *f, char *const *names, int nds, const double *x, const double *low,
                        const double *high, const double *pt_x, const double *pt_y, int npts)
{
    name_box *taken = rg_xmalloc((size_t)(npts + nds + 1) * sizeof *taken);
    int ntaken = 0;
    for (int i = 0; i < npts; i++)
        taken[ntaken++] = (name_box){pt_x[i] - NAME_POINT_RX, pt_x[i] + NAME_POINT_RX, pt_y[i] - NAME_POINT_RY,
                                     pt_y[i] + NAME_POINT_RY};
    for (int d = 0; d < nds; d++) {
        if (!isfinite(low[d])) continue;
        double w = (double)strlen(names[d]) * NAME_CHAR_W + 1, cx = x[d], cy = low[d] - 5;
        int found = 0;
        for (int step = 0; step < 24 && !found; step++)
            for (int k = 0; k < 6 && !found; k++) {
                double xo = k / 2 == 0 ? 0 : k / 2 == 1 ? w / 2 + 2 : -(w / 2 + 2);
                double yo = k % 2 == 0 ? low[d] - 5 - step * NAME_LINE_H : high[d] + 5 + step * NAME_LINE_H;
                name_box b = {x[d] + xo - w / 2, x[d] + xo + w / 2, yo - NAME_LINE_H / 2, yo + NAME_LINE_H / 2};
                if (name_fits(&b, taken, ntaken)) cx = x[d] + xo, cy = yo, found = 1;
            }
        taken[ntaken++] = (name_box){cx - w / 2, cx + w / 2, cy - NAME_LINE_H / 2, cy + NAME_LINE_H / 2};
        bar_row(f, 2, cx, cy, NAN, NAN, 0, names[d], "");
        if (fabs(cx - x[d]) > 0.1 || fabs(cy - (low[d] - 5)) > 0.1) {
            /* from the nearer end of the dataset's column of points to the name's near edge */
            int below = cy < low[d];
            double py = below ? low[d] : high[d], ey = below ? cy + NAME_LINE_H / 2 : cy - NAME_LINE_H / 2;
            bar_row(f, 3, x[d], py, cx - x[d], ey - py, 0, "", "");
        }
    }
    free(taken);
}

static int fig_memory(rp_ctx *c, rp_fig *f, rg_err *err)
{
    rp_problem *pr = NULL;
    int np = 0, ret = 0;
    static const char *const prefs[][2] = {{"hgt", "train"}, {"hgt", "infer"}, {"rgat", "train"}, {"rgat", "infer"}};
    if (c->has_ref && list_problems(c, "system = 'generated'", &pr, &np, err)) return -1;
    prefer_problems(pr, np, prefs, 4);
    mem_cell *cells = rg_xcalloc((size_t)(np ? np : 1) * (size_t)(c->nds ? c->nds : 1), sizeof *cells);
    double *ratios = rg_xcalloc((size_t)(np ? np : 1) * (size_t)(c->nds ? c->nds : 1), sizeof *ratios);
    double *pt_x = rg_xcalloc((size_t)(np ? np : 1) * (size_t)(c->nds ? c->nds : 1), sizeof *pt_x);
    double *highest = rg_xmalloc((size_t)(c->nds ? c->nds : 1) * sizeof *highest);
    double *lowest = rg_xmalloc((size_t)(c->nds ? c->nds : 1) * sizeof *lowest);
    double *cr_of = rg_xmalloc((size_t)(c->nds ? c->nds : 1) * sizeof *cr_of);
    for (int d = 0; d < c->nds; d++) lowest[d] = highest[d] = cr_of[d] = NAN;
    int npts = 0, above = 0, avoided = 0, bars_p = -1, bars_n = 0;
    char avoided_example[256] = "";
    rg_str series = {0};
    rp_slots sl;
    slots_init(&sl, c->nds);
    fputs(BAR_HEADER, f->csv);
    int nser = 0;
    for (int p = 0; p < np && !ret; p++) {
        int pts = 0, with_c = 0, p_avoided = 0;
        for (int d = 0; d < c->nds && !ret; d++) {
            mem_cell *m = &cells[p * c->nds + d];
            if ((ret = memory_cell(c, &pr[p], d, m, err))) break;
            double cr;
            if ((ret = query_num(c, &cr, err, "SELECT compaction_ratio FROM datasets WHERE name = %Q", c->datasets[d])))
                break;
            with_c += isfinite(m->c_mb) && (isfinite(m->u_mb) || m->u_fail[0]);
            if (isfinite(m->c_mb) && !isfinite(m->u_mb) && !strcmp(m->u_fail, "OOM")) {
                avoided++;
                p_avoided++;
                if (!avoided_example[0]) {
                    char *t = problem_title(pr[p].model, pr[p].task);
                    snprintf(avoided_example, sizeof avoided_example, "%s on %s", t, c->datasets[d]);
                    free(t);
                }
            }
            if (!isfinite(m->c_mb) || !isfinite(m->u_mb) || !isfinite(cr)) continue;
            double r = m->c_mb / m->u_mb;
            pt_x[npts] = cr * 100;
            ratios[npts++] = r;
            above += r > cr;
            bar_row(f, 0, cr * 100, r * 100, NAN, NAN, nser, "", "");
            if (!isfinite(lowest[d]) || r < lowest[d]) lowest[d] = r, cr_of[d] = cr;
            if (!isfinite(highest[d]) || r > highest[d]) highest[d] = r;
            pts++;
        }
        if (pts) {
            char *t = problem_title(pr[p].model, pr[p].task);
            word_add(&series, t);
            free(t);
            nser++;
        }
        /* panel b: a problem where C avoids U's OOM when there is one, else the widest */
        int score = with_c + (p_avoided ? 1000 : 0);
        if (with_c && score > bars_n) bars_n = score, bars_p = p;
    }
    /* each dataset's name once, near its points, in percent as drawn */
    if (!ret) {
        double *pt_y = rg_xmalloc((size_t)(npts ? npts : 1) * sizeof *pt_y);
        for (int i = 0; i < npts; i++) pt_y[i] = ratios[i] * 100;
        for (int d = 0; d < c->nds; d++) cr_of[d] *= 100, lowest[d] *= 100, highest[d] *= 100;
        place_names(f, c->datasets, c->nds, cr_of, lowest, highest, pt_x, pt_y, npts);
        free(pt_y);
    }
    if (!ret && bars_p < 0) {
        skipf(f, "needs the peak memory (peak_mem_bytes) of ok generated measurements with compaction on (layout C: "
                 "compact bsearch or direct, reorder off) and of the unoptimized layout U on the same problem");
    } else if (!ret) {
        /* panel b: U and C of the chosen problem on the datasets it has either (or U's failure) for */
        for (int d = 0; d < c->nds; d++) {
            mem_cell *m = &cells[bars_p * c->nds + d];
            if (isfinite(m->u_mb) || isfinite(m->c_mb) || m->u_fail[0]) slots_mark(&sl, d);
        }
        slots_number(&sl, c->datasets, c->nds);
        for (int d = 0; d < c->nds; d++) {
            mem_cell *m = &cells[bars_p * c->nds + d];
            if (sl.of[d] < 0) continue;
            double hw, x;
            x = bar_x(sl.of[d], 0, 2, &hw);
            bar_row(f, 1, x, m->u_mb, NAN, hw, 0, isfinite(m->u_mb) ? "" : m->u_fail, c->datasets[d]);
            x = bar_x(sl.of[d], 1, 2, &hw);
            bar_row(f, 1, x, m->c_mb, NAN, hw, 1, "", c->datasets[d]);
        }
        char *bt = problem_title(pr[bars_p].model, pr[bars_p].task);
        var_str(f, "barstitle", bt);
        free(bt);
        if (npts)
            rg_str_printf(&f->reading, "Compaction cuts peak memory to %.0f%% of U (geomean over %d problem x dataset "
                                       "points); the memory ratio stays above the entity compaction ratio in %d of %d",
                          geomean(ratios, npts) * 100, npts, above, npts);
        else
            rg_str_puts(&f->reading, "No dataset has both U and C peak memory");
        if (avoided) rg_str_printf(&f->reading, "; C avoids U's out-of-memory in %d case%s (e.g. %s)", avoided,
                                   avoided == 1 ? "" : "s", avoided_example);
        rg_str_putc(&f->reading, '.');
        var_num(f, "nseries", nser);
        var_str(f, "series", series.s ? series.s : "");
        var_str(f, "xticsdef", tic_end(&sl.tics));
        var_num(f, "nclusters", sl.n);
        f->width = 1100;
        f->height = 480;
    }
    free(cells);
    free(ratios);
    free(lowest);
    free(highest);
    free(pt_x);
    free(cr_of);
    free(pr);
    slots_free(&sl);
    rg_str_free(&series);
    return ret;
}

/* ================================================================ 6. dims ==== */

static int fig_dims(rp_ctx *c, rp_fig *f, rg_err *err)
{
    int heads = c->has_ref ? c->heads : 1, ret = 0;
    char *where = sqlite3_mprintf("system = 'generated' AND layout = 'U' AND dim_in = dim_out AND heads = %d", heads);
    int dims[16], nd = 0;
    sqlite3_stmt *st = sqlf(c, err, "SELECT DISTINCT dim_in FROM mx WHERE %s ORDER BY 1 LIMIT 16", where);
    if (!st) {
        sqlite3_free(where);
        return -1;
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) dims[nd++] = sqlite3_column_int(st, 0);
    rp_problem *pr = NULL;
    int np = 0;
    if (step_end(c, st, rc, err) || list_problems_in(c, "mx", where, &pr, &np, err)) {
        sqlite3_free(where);
        return -1;
    }
    if (nd < 2) {
        skipf(f, "needs the unoptimized layout U (compact off, reorder off) measured at two or more square dims "
                 "(e.g. 32, 64, 128) with %d head%s", heads, heads == 1 ? "" : "s");
        sqlite3_free(where);
        free(pr);
        return 0;
    }
    fputs("panel,series,dims,ms,label,failed\n", f->csv);
    double lo = INFINITY, hi = -INFINITY, *growth = rg_xcalloc((size_t)np * (size_t)(c->nds ? c->nds : 1) + 1, sizeof(double));
    int ng = 0, gaps = 0;
    rg_str panels = {0}, series = {0}, tics = {0};
    for (int p = 0; p < np && !ret; p++) {
        for (int d = 0; d < c->nds && !ret; d++) {
            double first = NAN, last = NAN;
            for (int k = 0; k < nd; k++) {
                rp_best b;
                char *w = sqlite3_mprintf("%s AND model = %Q AND task = %Q AND dataset = %Q AND dim_in = %d", where,
                                          pr[p].model, pr[p].task, c->datasets[d], dims[k]);
                ret = best_in(c, "mx", &b, w, err);
                sqlite3_free(w);
                if (ret) break;
                if (!b.n) continue;
                fprintf(f->csv, "%d,%d,%d,", p, d, dims[k]);
                csv_num(f->csv, b.ms);
                fprintf(f->csv, ",%s,%d\n", fail_label(&b), !b.n_ok);
                gaps += !b.n_ok;
                if (b.n_ok) {
                    lo = b.ms < lo ? b.ms : lo;
                    hi = b.ms > hi ? b.ms : hi;
                }
                if (k == 0) first = b.ms;
                if (k == nd - 1) last = b.ms;
            }
            if (isfinite(first) && isfinite(last)) growth[ng++] = last / first;
        }
        char *t = problem_title(pr[p].model, pr[p].task);
        word_add(&panels, t);
        free(t);
    }
    if (!ret) {
        for (int d = 0; d < c->nds; d++) word_add(&series, c->datasets[d]);
        for (int k = 0; k < nd; k++) {
            char s[16];
            snprintf(s, sizeof s, "%d", dims[k]);
            tic_add(&tics, s, dims[k]);
        }
        double work = (double)dims[nd - 1] * dims[nd - 1] / ((double)dims[0] * dims[0]);
        rg_str_printf(&f->reading, "From %d to %d dims (%.0fx the GEMM work) unoptimized time grows %.2fx (geomean over "
                                   "%d model x dataset x task)%s; %d out-of-memory or failed point%s left as gaps.",
                      dims[0], dims[nd - 1], work, geomean(growth, ng), ng,
                      ng && geomean(growth, ng) < work ? ": sublinear" : "", gaps, gaps == 1 ? "" : "s");
        var_num(f, "npanels", np);
        var_str(f, "panels", panels.s);
        var_num(f, "nseries", c->nds);
        var_str(f, "series", series.s);
        var_str(f, "xticsdef", tic_end(&tics));
        var_num(f, "xmin", dims[0] / 1.4);
        var_num(f, "xmax", dims[nd - 1] * 1.4);
        var_num(f, "ymin", isfinite(lo) ? lo / 3 : 0.01);
        var_num(f, "ymax", isfinite(hi) ? hi * 2 : 10);
        var_num(f, "oomy", isfinite(lo) ? lo / 1.8 : 0.02);
        grid_layout(f, np, 3, 0, 300);
        f->width = 1100;
    }
    sqlite3_free(where);
    free(growth);
    free(pr);
    rg_str_free(&panels);
    rg_str_free(&series);
    rg_str_free(&tics);
    return ret;
}

/* ================================================================ 7. CUPTI metrics ==== */

/* Known counters by a distinctive part of their name, in the order the panels show them. */
static const struct metric_kind {
    const char *needle, *label;
} METRIC_KINDS[] = {
    {"inst_executed.avg.per_cycle", "IPC"}, {"sm__throughput", "SM throughput"},
    {"dram__throughput", "DRAM throughput"}, {"dram_throughput", "DRAM throughput"},
    {"warps_active", "achieved occupancy"}, {"achieved_occupancy", "achieved occupancy"},
    {"l1tex__throughput", "L1 throughput"}, {"lts__throughput", "L2 throughput"}, {"sector_hit_rate", "L2 hit rate"},
};
#define N_METRIC_KINDS (int)(sizeof METRIC_KINDS / sizeof METRIC_KINDS[0])
#define MAX_METRIC_PANELS 4

static int metric_rank(const char *name, const char **label)
{
    if (!strcasecmp(name, "ipc")) {
        *label = "IPC";
        return 0;
    }
    for (int i = 0; i < N_METRIC_KINDS; i++)
        if (strcasestr(name, METRIC_KINDS[i].needle)) {
            *label = METRIC_KINDS[i].label;
            return i;
        }
    *label = name;
    return N_METRIC_KINDS;
}

/* Per-kernel counters joined to their kernel's time and category, with the pass (forward or
 * backward) from a per-kernel metric named "backward" when the sweep stored one, else from
 * the task (inference is forward only) and the kernel name. */
static const char KM_SQL[] =
    "CREATE TEMP TABLE km AS SELECT r.model AS model, r.task AS task, r.dim_in AS dim_in, r.dim_out AS dim_out,"
    " r.heads AS heads, r.dataset AS dataset, x.name AS name, x.unit AS unit, x.value AS value,"
    " k.category AS category, k.median_ns AS ns,"
    " CASE WHEN bw.value IS NOT NULL THEN bw.value > 0 WHEN r.task = 'infer' THEN 0"
    "  WHEN lower(x.kernel) LIKE '%%bwd%%' OR lower(x.kernel) LIKE '%%backward%%' OR lower(x.kernel) LIKE '%%grad%%'"
    "  THEN 1 ELSE 0 END AS backward"
    " FROM metrics x JOIN mx r ON r.id = x.measurement_id"
    " JOIN kernel_times k ON k.measurement_id = x.measurement_id AND k.kernel = x.kernel"
    " LEFT JOIN metrics bw ON bw.measurement_id = x.measurement_id AND bw.kernel = x.kernel AND bw.name = 'backward'"
    " WHERE r.system = 'generated' AND r.status = 'ok' AND x.kernel <> '' AND x.value IS NOT NULL"
    " AND x.name NOT IN ('backward', 'predicted_ms') AND x.name NOT LIKE 'analytic%%'"
    " AND k.category IN ('gemm', 'traversal') AND k.median_ns > 0";

typedef struct km_group {
    char model[64], task[32];
    int dim_in, dim_out, heads;
    int n;
} km_group;

static int metric_group(rp_ctx *c, km_group *g, rg_err *err)
{
    memset(g, 0, sizeof *g);
    sqlite3_stmt *st = sqlf(c, err,
                            "SELECT model, task, dim_in, dim_out, heads, count(*) FROM km GROUP BY 1, 2, 3, 4, 5"
                            " ORDER BY (model = 'rgat') DESC, (task = 'train') DESC,"
                            " (dim_in = %d AND dim_out = %d AND heads = %d) DESC, count(*) DESC, 1, 2, 3 LIMIT 1",
                            c->dim_in, c->dim_out, c->heads);
    if (!st) return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        snprintf(g->model, sizeof g->model, "%s", col_text(st, 0));
        snprintf(g->task, sizeof g->task, "%s", col_text(st, 1));
        g->dim_in = sqlite3_column_int(st, 2);
        g->dim_out = sqlite3_column_int(st, 3);
        g->heads = sqlite3_column_int(st, 4);
        g->n = sqlite3_column_int(st, 5);
        rc = SQLITE_DONE;
    }
    return step_end(c, st, rc, err);
}

typedef struct km_metric {
    char name[128], unit[32];
    const char *label;
    int rank;
} km_metric;

static int km_metric_cmp(const void *a, const void *b)
{
    const km_metric *x = a, *y = b;
    return x->rank != y->rank ? x->rank - y->rank : strcmp(x->name, y->name);
}

static int metric_list(rp_ctx *c, const char *gw, km_metric *out, int *n, rg_err *err)
{
    km_metric all[64];
    int na = 0;
    sqlite3_stmt *st = sqlf(c, err, "SELECT name, max(unit) FROM km WHERE %s GROUP BY name LIMIT 64", gw);
    if (!st) return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        km_metric *m = &all[na++];
        snprintf(m->name, sizeof m->name, "%s", col_text(st, 0));
        snprintf(m->unit, sizeof m->unit, "%s", col_text(st, 1));
        m->rank = metric_rank(m->name, &m->label);
        if (m->label == m->name) m->label = NULL;   /* unknown: the title shows the name (the struct moves) */
    }
    if (step_end(c, st, rc, err)) return -1;
    qsort(all, (size_t)na, sizeof all[0], km_metric_cmp);
    *n = na < MAX_METRIC_PANELS ? na : MAX_METRIC_PANELS;
    memcpy(out, all, (size_t)*n * sizeof all[0]);
    return 0;
}

/* Time-weighted mean of a metric over the group's kernels of one category and pass (NaN: none). */
static int metric_mean(rp_ctx *c, const char *gw, const char *metric, const char *dataset, const char *category,
                       int backward, double *out, rg_err *err)
{
    char *dw = dataset ? sqlite3_mprintf(" AND dataset = %Q", dataset) : sqlite3_mprintf("%s", "");
    char *pw = backward >= 0 ? sqlite3_mprintf(" AND backward = %d", backward) : sqlite3_mprintf("%s", "");
    int rc = query_num(c, out, err, "SELECT sum(value * ns) / sum(ns) FROM km WHERE %s AND name = %Q%s%s AND category = %Q",
                       gw, metric, dw, pw, category);
    sqlite3_free(dw);
    sqlite3_free(pw);
    return rc;
}

static void metric_title(const km_metric *m, char *out, size_t n)
{
    const char *label = m->label ? m->label : m->name;
    if (m->unit[0]) snprintf(out, n, "%.120s (%.30s)", label, m->unit);
    else snprintf(out, n, "%.150s", label);
}

static int fig_metrics(rp_ctx *c, rp_fig *f, rg_err *err)
{
    if (execf(c, err, KM_SQL)) return -1;
    km_group g;
    if (metric_group(c, &g, err)) return -1;
    if (!g.n) {
        skipf(f, "needs per-kernel CUPTI metrics (metrics rows with a kernel name, e.g. "
                 "sm__throughput.avg.pct_of_peak_sustained_elapsed) of ok generated measurements whose kernel times "
                 "(same kernel name) have the category gemm or traversal");
        return 0;
    }
    char *gw = sqlite3_mprintf("model = %Q AND task = %Q AND dim_in = %d AND dim_out = %d AND heads = %d", g.model,
                               g.task, g.dim_in, g.dim_out, g.heads);
    km_metric ms[MAX_METRIC_PANELS];
    int nm = 0, ret = metric_list(c, gw, ms, &nm, err);
    int has_bwd = 0;
    if (!ret) {
        double v;
        ret = query_num(c, &v, err, "SELECT count(*) FROM km WHERE %s AND backward", gw);
        has_bwd = v > 0;
    }
    static const char *const cats[2] = {"gemm", "traversal"}, *const cat_names[2] = {"GEMM", "traversal"};
    int nser = has_bwd ? 4 : 2;
    rg_str panels = {0}, series = {0};
    /* clusters: the datasets profiled (CUPTI runs are few: a slot per dataset would be mostly empty) */
    rp_slots sl;
    slots_init(&sl, c->nds);
    if (!ret) ret = slots_mark_query(c, &sl, err, "SELECT DISTINCT dataset FROM km WHERE %s", gw);
    slots_number(&sl, c->datasets, c->nds);
    fputs(BAR_HEADER, f->csv);
    for (int m = 0; m < nm && !ret; m++) {
        char t[192];
        metric_title(&ms[m], t, sizeof t);
        word_add(&panels, t);
        for (int d = 0; d < c->nds && !ret; d++) {
            if (sl.of[d] < 0) continue;
            int any = 0;
            for (int s = 0; s < nser && !ret; s++) {
                double v, hw, x = bar_x(sl.of[d], s, nser, &hw);
                if ((ret = metric_mean(c, gw, ms[m].name, c->datasets[d], cats[s / (nser / 2)], has_bwd ? s % 2 : -1, &v,
                                       err)))
                    break;
                bar_row(f, m, x, v, 0, hw, s, "", c->datasets[d]);
                any |= isfinite(v);
            }
            if (!ret && !any) bar_row(f, m, sl.of[d], NAN, 0, 0.4, 0, "not profiled", c->datasets[d]);
        }
    }
    if (!ret) {
        /* reading: the first metric, GEMM vs traversal and forward vs backward over every dataset */
        double gm, tr, fw = NAN, bw = NAN;
        char t[192], *title = problem_title(g.model, g.task);
        metric_title(&ms[0], t, sizeof t);
        if (!(ret = metric_mean(c, gw, ms[0].name, NULL, "gemm", -1, &gm, err)) &&
            !(ret = metric_mean(c, gw, ms[0].name, NULL, "traversal", -1, &tr, err))) {
            rg_str_printf(&f->reading, "%s at %dx%d dims, time-weighted over the profiled kernels: %s %.3g for GEMM vs "
                                       "%.3g for traversal kernels",
                          title, g.dim_in, g.dim_out, t, gm, tr);
            if (has_bwd) {
                double a, b;
                char *w0 = sqlite3_mprintf("%s AND backward = 0", gw), *w1 = sqlite3_mprintf("%s AND backward = 1", gw);
                if (!(ret = query_num(c, &a, err, "SELECT sum(value * ns) / sum(ns) FROM km WHERE %s AND name = %Q", w0,
                                      ms[0].name)) &&
                    !(ret = query_num(c, &b, err, "SELECT sum(value * ns) / sum(ns) FROM km WHERE %s AND name = %Q", w1,
                                      ms[0].name)))
                    fw = a, bw = b;
                sqlite3_free(w0);
                sqlite3_free(w1);
                if (!ret) rg_str_printf(&f->reading, "; %.3g forward vs %.3g backward", fw, bw);
            }
            rg_str_putc(&f->reading, '.');
        }
        for (int s = 0; s < nser; s++) {
            char *name = rg_xasprintf("%s%s", cat_names[s / (nser / 2)], has_bwd ? (s % 2 ? " backward" : " forward") : "");
            word_add(&series, name);
            free(name);
        }
        char *ft = rg_xasprintf("%s, %dx%d dims: CUPTI counters per kernel class (time-weighted means)", title, g.dim_in,
                                g.dim_out);
        var_str(f, "figtitle", ft);
        free(ft);
        free(title);
        var_num(f, "npanels", nm);
        var_str(f, "panels", panels.s);
        var_num(f, "nseries", nser);
        var_str(f, "series", series.s);
        var_str(f, "xticsdef", tic_end(&sl.tics));
        var_num(f, "nclusters", sl.n);
        grid_layout(f, nm, 2, sl.n, 300);
        f->width = 1000;
    }
    sqlite3_free(gw);
    slots_free(&sl);
    rg_str_free(&panels);
    rg_str_free(&series);
    return ret;
}

/* ================================================================ 8. cost model ==== */

typedef struct cm_stats {
    double *pick, *fixed, *rho;   /* per problem x dataset: picked / oracle, best fixed / oracle, Spearman */
    int *hit;                     /* picked config is the oracle */
    int n;
} cm_stats;

/* Spearman rank correlation of predicted vs measured time over one problem's configs. */
static int problem_spearman(rp_ctx *c, const rp_problem *p, const char *ds, double *rho, rg_err *err)
{
    *rho = NAN;
    sqlite3_stmt *st = sqlf(c, err,
                            "SELECT p.predicted, r.ms FROM ref r JOIN pred p ON p.id = r.id WHERE r.system = 'generated'"
                            " AND r.model = %Q AND r.task = %Q AND r.dataset = %Q",
                            p->model, p->task, ds);
    if (!st) return -1;
    double *a = NULL, *b = NULL;
    int n = 0, cap = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            a = rg_xrealloc(a, (size_t)cap * sizeof *a);
            b = rg_xrealloc(b, (size_t)cap * sizeof *b);
        }
        a[n] = sqlite3_column_double(st, 0);
        b[n++] = sqlite3_column_double(st, 1);
    }
    if (n >= 3) {
        double *work = rg_xmalloc(2 * (size_t)n * sizeof *work);
        *rho = gsl_stats_spearman(a, 1, b, 1, (size_t)n, work);
        free(work);
    }
    free(a);
    free(b);
    return step_end(c, st, rc, err);
}

static int cm_collect(rp_ctx *c, const rp_problem *pr, int np, cm_stats *s, rg_err *err)
{
    size_t cells = (size_t)(np ? np : 1) * (size_t)(c->nds ? c->nds : 1);
    s->pick = rg_xmalloc(cells * sizeof(double));
    s->fixed = rg_xmalloc(cells * sizeof(double));
    s->rho = rg_xmalloc(cells * sizeof(double));
    s->hit = rg_xcalloc(cells, sizeof(int));
    s->n = (int)cells;
    for (int p = 0; p < np; p++) {
        char *fixed = NULL;
        for (int d = 0; d < c->nds; d++) {
            int i = p * c->nds + d;
            s->pick[i] = s->fixed[i] = s->rho[i] = NAN;
            rp_best o, fx;
            if (best_generated(c, &o, pr[p].model, pr[p].task, c->datasets[d], NULL, err)) goto fail;
            if (!o.n_ok) continue;
            free(fixed);
            if (best_fixed_config(c, pr[p].model, pr[p].task, c->datasets[d], &fixed, err)) return -1;
            if (fixed) {
                if (best_of_config(c, &fx, pr[p].model, pr[p].task, c->datasets[d], fixed, err)) goto fail;
                s->fixed[i] = fx.ms / o.ms;
            }
            if (!c->have_pred) continue;
            double ms;
            int64_t id;
            if (cost_model_pick(c, pr[p].model, pr[p].task, c->datasets[d], &ms, &id, err) ||
                problem_spearman(c, &pr[p], c->datasets[d], &s->rho[i], err))
                goto fail;
            s->pick[i] = ms / o.ms;
            s->hit[i] = isfinite(ms) && (id == o.id || ms <= o.ms);
        }
        free(fixed);
        continue;
    fail:
        free(fixed);
        return -1;
    }
    return 0;
}

static void cm_stats_free(cm_stats *s)
{
    free(s->pick);
    free(s->fixed);
    free(s->rho);
    free(s->hit);
}

/* Panel a with predictions: predicted vs measured time of every predicted variant. */
static int cm_scatter(rp_ctx *c, rp_fig *f, rg_err *err)
{
    sqlite3_stmt *st = sqlf(c, err,
                            "SELECT p.predicted, r.ms, r.dataset FROM ref r JOIN pred p ON p.id = r.id"
                            " WHERE r.system = 'generated' ORDER BY r.dataset, r.id");
    if (!st) return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        track_range(f, col_num(st, 0));   /* both axes share the range */
        bar_row(f, 0, col_num(st, 0), col_num(st, 1), NAN, NAN, dataset_index(c, col_text(st, 2)), "", "");
    }
    return step_end(c, st, rc, err);
}

/* Panel a without predictions: every measured config's time over its problem's oracle,
 * sorted, per dataset: how much the choice of config matters. */
static int cm_spread(rp_ctx *c, rp_fig *f, double *median_ratio, rg_err *err)
{
    double *all = NULL;
    int nall = 0;
    for (int d = 0; d < c->nds; d++) {
        sqlite3_stmt *st = sqlf(c, err,
                                "WITH o AS (SELECT model, task, min(ms) AS oracle FROM ref WHERE system = 'generated'"
                                "  AND status = 'ok' AND ms IS NOT NULL AND dataset = %Q GROUP BY model, task)"
                                " SELECT r.ms / o.oracle FROM ref r JOIN o ON o.model = r.model AND o.task = r.task"
                                " WHERE r.system = 'generated' AND r.status = 'ok' AND r.ms IS NOT NULL"
                                " AND r.dataset = %Q ORDER BY 1",
                                c->datasets[d], c->datasets[d]);
        if (!st) {
            free(all);
            return -1;
        }
        double *v = NULL;
        int n = 0, rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            v = rg_xrealloc(v, (size_t)(n + 1) * sizeof *v);
            v[n++] = sqlite3_column_double(st, 0);
        }
        if (step_end(c, st, rc, err)) {
            free(v);
            free(all);
            return -1;
        }
        for (int i = 0; i < n; i++) bar_row(f, 0, 100.0 * (i + 0.5) / n, v[i], NAN, NAN, d, "", "");
        all = rg_xrealloc(all, (size_t)(nall + n + 1) * sizeof *all);
        memcpy(all + nall, v, (size_t)n * sizeof *v);
        nall += n;
        free(v);
    }
    *median_ratio = NAN;
    if (nall) {
        qsort(all, (size_t)nall, sizeof *all, cmp_double);
        *median_ratio = gsl_stats_median_from_sorted_data(all, 1, (size_t)nall);
    }
    free(all);
    return 0;
}

static int fig_costmodel(rp_ctx *c, rp_fig *f, rg_err *err)
{
    rp_problem *pr = NULL;
    int np = 0;
    if (c->has_ref && list_problems(c, "system = 'generated' AND status = 'ok'", &pr, &np, err)) return -1;
    if (!np) {
        skipf(f, "needs ok generated measurements at %dx%d dims (and, for the cost model, metrics named predicted_ms "
                 "on them)", c->dim_in, c->dim_out);
        free(pr);
        return 0;
    }
    cm_stats s = {0};
    double median_ratio = NAN;
    fputs(BAR_HEADER, f->csv);
    int ret = cm_collect(c, pr, np, &s, err);
    if (!ret) ret = c->have_pred ? cm_scatter(c, f, err) : cm_spread(c, f, &median_ratio, err);
    if (!ret) {
        /* the left panel's log axis, fitted to its values (the bars come later) */
        rg_str t = {0};
        double lo = f->has_range ? f->vmin / 1.3 : 0.01, hi = f->has_range ? f->vmax * 1.3 : 10;
        if (!c->have_pred) lo = 1;
        log_tics(lo, hi, c->have_pred ? "" : "x", &t);
        var_num(f, "ymin0", lo);
        var_num(f, "ymax0", hi);
        var_str(f, "yticsdef0", tic_end(&t));
        rg_str_free(&t);
    }
    rg_str series = {0}, bars = {0};
    rp_slots sl;
    slots_init(&sl, c->nds);
    if (!ret) {
        /* clusters: the datasets with an oracle for some problem */
        for (int d = 0; d < c->nds; d++)
            for (int p = 0; p < np; p++)
                if (isfinite(s.fixed[p * c->nds + d]) || isfinite(s.pick[p * c->nds + d])) slots_mark(&sl, d);
        slots_number(&sl, c->datasets, c->nds);
        /* panel b: per dataset, geomean over problems of picked / oracle and best fixed / oracle */
        double *pick = rg_xmalloc((size_t)np * sizeof *pick), *fixed = rg_xmalloc((size_t)np * sizeof *fixed);
        rg_str_printf(&f->md, "| dataset | problems | best fixed / oracle |%s\n|---|---:|---:|%s\n",
                      c->have_pred ? " cost-model pick / oracle | top-1 hits | Spearman ρ (mean) |" : "",
                      c->have_pred ? "---:|---:|---:|" : "");
        for (int d = 0; d < c->nds; d++) {
            if (sl.of[d] < 0) continue;
            int nprob = 0, hits = 0, nrho = 0;
            double rho = 0;
            for (int p = 0; p < np; p++) {
                int i = p * c->nds + d;
                pick[p] = s.pick[i];
                fixed[p] = s.fixed[i];
                nprob += isfinite(s.fixed[i]) || isfinite(s.pick[i]);
                hits += s.hit[i];
                if (isfinite(s.rho[i])) rho += s.rho[i], nrho++;
            }
            double gp = geomean(pick, np), gf = geomean(fixed, np), hw, x;
            /* bars in percent of extra time over the oracle: the gaps are small numbers */
            int slot = sl.of[d];
            if (c->have_pred) {
                x = bar_x(slot, 0, 2, &hw);
                bar_row(f, 1, x, (gp - 1) * 100, 0, hw, 0, "", c->datasets[d]);
            }
            x = c->have_pred ? bar_x(slot, 1, 2, &hw) : bar_x(slot, 0, 1, &hw);
            bar_row(f, 1, x, (gf - 1) * 100, 0, hw, c->have_pred, "", c->datasets[d]);
            rg_str_printf(&f->md, "| %s | %d | %.3f |", c->datasets[d], nprob, gf);
            if (c->have_pred)
                rg_str_printf(&f->md, " %.3f | %d/%d | %s%.2f |", gp, hits, nprob, nrho ? "" : "n/a ",
                              nrho ? rho / nrho : 0.0);
            rg_str_putc(&f->md, '\n');
        }
        free(pick);
        free(fixed);
        int nhit = 0, nrho = 0, npick = 0;
        double rho = 0;
        for (int i = 0; i < s.n; i++) {
            nhit += s.hit[i];
            npick += isfinite(s.pick[i]);
            if (isfinite(s.rho[i])) rho += s.rho[i], nrho++;
        }
        double gfix = geomean(s.fixed, s.n);
        if (c->have_pred) {
            rg_str_printf(&f->reading, "Cost-model picks run %.2fx the oracle time (geomean over %d problems), top-1 "
                                       "hit %d/%d, Spearman ρ %.2f (mean); the best fixed config runs %.2fx.",
                          geomean(s.pick, s.n), npick, nhit, npick, nrho ? rho / nrho : NAN, gfix);
            word_add(&bars, "cost-model pick");
        } else {
            rg_str_printf(&f->reading, "No cost model fitted (no predicted_ms metrics on this device): measured times "
                                       "only. The best fixed config runs %.2fx the oracle (geomean over %d problems); "
                                       "the median measured config %.2fx.",
                          gfix, count_finite(s.fixed, s.n), median_ratio);
        }
        word_add(&bars, "best fixed");
        for (int d = 0; d < c->nds; d++) word_add(&series, c->datasets[d]);
        var_num(f, "have_pred", c->have_pred);
        var_num(f, "nseries", c->nds);
        var_str(f, "series", series.s);
        var_num(f, "nbars", c->have_pred ? 2 : 1);
        var_str(f, "bars", bars.s);
        var_str(f, "xticsdef", tic_end(&sl.tics));
        var_num(f, "nclusters", sl.n);
        f->width = 1100;
        f->height = 480;
    }
    cm_stats_free(&s);
    free(pr);
    slots_free(&sl);
    rg_str_free(&series);
    rg_str_free(&bars);
    return ret;
}

/* ================================================================ 9. heatmaps ==== */

typedef struct hm_axis {
    int v[8];
    int n;
} hm_axis;

static int distinct_ints(rp_ctx *c, const char *col, const char *where, hm_axis *a, rg_err *err)
{
    a->n = 0;
    sqlite3_stmt *st = sqlf(c, err, "SELECT DISTINCT %s FROM ref WHERE %s AND %s IS NOT NULL ORDER BY 1 LIMIT 8", col,
                            where, col);
    if (!st) return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) a->v[a->n++] = sqlite3_column_int(st, 0);
    return step_end(c, st, rc, err);
}

/* The problem with the most distinct (tile, coarsen, lb) cells (RGAT inference on ties). */
static int heatmap_problem(rp_ctx *c, rp_problem *p, int *cells, rg_err *err)
{
    *cells = 0;
    sqlite3_stmt *st = sqlf(c, err,
                            "SELECT model, task, count(DISTINCT tile || '/' || coarsen || '/' || lb) FROM ref"
                            " WHERE system = 'generated' AND status = 'ok' AND tile IS NOT NULL AND coarsen IS NOT NULL"
                            " GROUP BY model, task ORDER BY 3 DESC, (model = 'rgat') DESC, (task = 'infer') DESC,"
                            " model, task LIMIT 1");
    if (!st) return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        snprintf(p->model, sizeof p->model, "%s", col_text(st, 0));
        snprintf(p->task, sizeof p->task, "%s", col_text(st, 1));
        *cells = sqlite3_column_int(st, 2);
        rc = SQLITE_DONE;
    }
    return step_end(c, st, rc, err);
}

static int fig_heatmaps(rp_ctx *c, rp_fig *f, rg_err *err)
{
    rp_problem p;
    int cells = 0;
    if (c->has_ref && heatmap_problem(c, &p, &cells, err)) return -1;
    hm_axis tiles = {0}, coars = {0}, lbs = {0};
    char *w = cells ? sqlite3_mprintf("system = 'generated' AND status = 'ok' AND ms IS NOT NULL AND tile IS NOT NULL"
                                      " AND coarsen IS NOT NULL AND model = %Q AND task = %Q", p.model, p.task)
                    : NULL;
    int ret = 0;
    if (w && (distinct_ints(c, "tile", w, &tiles, err) || distinct_ints(c, "coarsen", w, &coars, err) ||
              distinct_ints(c, "lb", w, &lbs, err)))
        ret = -1;
    if (!ret && (tiles.n < 2 || coars.n < 2)) {
        skipf(f, "needs a sweep over at least two GEMM tile sizes and two coarsening factors (config keys tile, "
                 "coarsen, optionally lb) for one model and task at %dx%d dims", c->dim_in, c->dim_out);
        sqlite3_free(w);
        return 0;
    }
    rg_str panels = {0}, xt = {0}, yt = {0};
    int npanels = 0, distinct_best = 0;
    char best_cells[8][32];
    double worst = 1, vmax = 1;
    char worst_ds[128] = "";
    fputs("panel,x,y,value,label\n", f->csv);
    for (int d = 0; d < c->nds && !ret; d++) {
        double best;
        if ((ret = query_num(c, &best, err, "SELECT min(ms) FROM ref WHERE %s AND dataset = %Q", w, c->datasets[d])))
            break;
        if (!isfinite(best)) continue;
        double pmax = 1;
        char best_cell[32] = "";
        for (int ti = 0; ti < tiles.n && !ret; ti++)
            for (int li = 0; li < lbs.n && !ret; li++)
                for (int ci = 0; ci < coars.n && !ret; ci++) {
                    double ms;
                    if ((ret = query_num(c, &ms, err,
                                         "SELECT min(ms) FROM ref WHERE %s AND dataset = %Q AND tile = %d AND coarsen = %d"
                                         " AND lb = %d",
                                         w, c->datasets[d], tiles.v[ti], coars.v[ci], lbs.v[li])))
                        break;
                    double v = ms / best;
                    fprintf(f->csv, "%d,%d,%d,", npanels, ti * lbs.n + li, ci);
                    csv_num(f->csv, v);
                    if (isfinite(v)) fprintf(f->csv, ",%.2f\n", v);
                    else fputs(",n/a\n", f->csv);   /* nothing ok measured in this cell */
                    if (isfinite(v) && v > pmax) pmax = v;
                    if (v == 1 && !best_cell[0])
                        snprintf(best_cell, sizeof best_cell, "tile %d, coarsen %d%s", tiles.v[ti], coars.v[ci],
                                 lbs.n > 1 ? (lbs.v[li] ? ", lb on" : ", lb off") : "");
                }
        if (ret) break;
        if (pmax > worst) worst = pmax, snprintf(worst_ds, sizeof worst_ds, "%s", c->datasets[d]);
        vmax = pmax > vmax ? pmax : vmax;
        int seen = 0;
        for (int k = 0; k < distinct_best && k < 8; k++) seen |= !strcmp(best_cells[k], best_cell);
        if (!seen && distinct_best < 8) snprintf(best_cells[distinct_best++], 32, "%s", best_cell);
        rg_str_printf(&f->md, "%s %s: best %s", npanels ? ";" : "Best schedule per dataset:", c->datasets[d], best_cell);
        word_add(&panels, c->datasets[d]);
        npanels++;
    }
    if (!ret && !npanels) {
        skipf(f, "needs ok measurements of the tile x coarsen sweep on at least one dataset");
    } else if (!ret) {
        rg_str_puts(&f->md, ".\n");
        char *title = problem_title(p.model, p.task);
        rg_str_printf(&f->reading, "%s: the slowest schedule is %.2fx the best (on %s); %d dataset%s share%s %d "
                                   "distinct best schedule%s.",
                      title, worst, worst_ds[0] ? worst_ds : c->datasets[0], npanels, npanels == 1 ? "" : "s",
                      npanels == 1 ? "s" : "", distinct_best, distinct_best == 1 ? "" : "s");
        for (int ti = 0; ti < tiles.n; ti++)
            for (int li = 0; li < lbs.n; li++) {
                char s[32];
                snprintf(s, sizeof s, "%d%s", tiles.v[ti], lbs.n > 1 ? (lbs.v[li] ? " lb" : "") : "");
                tic_add(&xt, s, ti * lbs.n + li);
            }
        for (int ci = 0; ci < coars.n; ci++) {
            char s[16];
            snprintf(s, sizeof s, "%d", coars.v[ci]);
            tic_add(&yt, s, ci);
        }
        char *ft = rg_xasprintf("%s, %dx%d dims: time of the best config per schedule / best overall", title, c->dim_in,
                                c->dim_out);
        var_str(f, "figtitle", ft);
        free(ft);
        free(title);
        var_num(f, "npanels", npanels);
        var_str(f, "panels", panels.s);
        var_str(f, "xticsdef", tic_end(&xt));
        var_str(f, "yticsdef", tic_end(&yt));
        var_num(f, "nx", tiles.n * lbs.n);
        var_num(f, "ny", coars.n);
        var_num(f, "cbmax", vmax > 1.05 ? vmax : 1.05);
        var_str(f, "xlabel", lbs.n > 1 ? "GEMM tile (lb: launch bounds)" : "GEMM tile");
        grid_layout(f, npanels, 4, 0, 260);
        f->width = 1100;
    }
    sqlite3_free(w);
    rg_str_free(&panels);
    rg_str_free(&xt);
    rg_str_free(&yt);
    return ret;
}

/* ================================================================ the figure list ==== */

static const struct fig_def {
    const char *stem, *title;
    rp_fig_fn build;
} FIGS[RP_NFIGURES] = {
    {"01_datasets", "Datasets", fig_datasets},
    {"02_baselines", "Speed-up over the baselines", fig_baselines},
    {"03_ablation", "Compaction (C) and reordering (R) over unoptimized (U)", fig_ablation},
    {"04_breakdown", "Kernel-time breakdown of U, C, R and C+R", fig_breakdown},
    {"05_memory", "Peak memory: unoptimized vs compact", fig_memory},
    {"06_dims", "Time against dims", fig_dims},
    {"07_metrics", "Architecture metrics (CUPTI): GEMM vs traversal, forward vs backward", fig_metrics},
    {"08_costmodel", "Cost model: predicted vs measured, gap to the oracle", fig_costmodel},
    {"09_heatmaps", "Sensitivity: tile x coarsening (x launch bounds)", fig_heatmaps},
};

const char *rp_figure_stem(int i)
{
    RG_ASSERT(i >= 0 && i < RP_NFIGURES);
    return FIGS[i].stem;
}

const char *rp_figure_title(int i)
{
    RG_ASSERT(i >= 0 && i < RP_NFIGURES);
    return FIGS[i].title;
}

/* ================================================================ the store ==== */

/* Every table and column the report reads: a store without one fails, naming it. */
static const struct rp_need {
    const char *table;
    const char *const cols[16];
} NEEDED[] = {
    {"measurements", {"id", "variant_id", "dataset_id", "device_key", "system", "layer", "status", "median_ms",
                      "peak_mem_bytes", "gemm_ms", "traversal_ms", "other_ms"}},
    {"variants", {"id", "config", "model", "task", "dim_in", "dim_out", "heads"}},
    {"datasets", {"id", "name", "nodes", "edges", "node_types", "edge_types", "compaction_ratio", "avg_degree",
                  "density"}},
    {"kernel_times", {"measurement_id", "kernel", "category", "median_ns"}},
    {"metrics", {"measurement_id", "kernel", "name", "value", "unit"}},
};

static int check_schema(rp_ctx *c, rg_err *err)
{
    for (size_t t = 0; t < sizeof NEEDED / sizeof NEEDED[0]; t++) {
        rg_str have = {0};
        sqlite3_stmt *st = sqlf(c, err, "SELECT name FROM pragma_table_info(%Q)", NEEDED[t].table);
        if (!st) return -1;
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) rg_str_printf(&have, ",%s,", col_text(st, 0));
        if (step_end(c, st, rc, err)) {
            rg_str_free(&have);
            return -1;
        }
        int missing_table = !have.len;
        const char *missing = NULL;
        for (int i = 0; !missing_table && NEEDED[t].cols[i] && !missing; i++) {
            char *key = rg_xasprintf(",%s,", NEEDED[t].cols[i]);
            if (!strstr(have.s, key)) missing = NEEDED[t].cols[i];
            free(key);
        }
        rg_str_free(&have);
        if (missing_table)
            return rg_errf(err, "%s: the results store has no table %s (explore report needs it)", c->db_path,
                           NEEDED[t].table);
        if (missing)
            return rg_errf(err, "%s: table %s has no column %s (explore report needs it)", c->db_path, NEEDED[t].table,
                           missing);
    }
    return 0;
}

/* The device the figures describe: the one with the most measurements, or the one whose
 * name contains --gpu. Figures never mix devices. */
static int choose_device(rp_ctx *c, rg_err *err)
{
    sqlite3_stmt *st = sqlf(c, err, "SELECT device_key, count(*) FROM measurements GROUP BY device_key"
                                    " ORDER BY count(*) DESC, device_key");
    if (!st) return -1;
    rg_str all = {0};
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *key = col_text(st, 0);
        int64_t n = sqlite3_column_int64(st, 1);
        rg_str_printf(&all, "%s%s (%lld)", all.len ? ", " : "", key, (long long)n);
        int match = !c->opt->gpu || strcasestr(key, c->opt->gpu);
        if (match && !c->device[0]) {
            snprintf(c->device, sizeof c->device, "%s", key);
            c->device_rows = n;
        } else {
            rg_str_printf(&c->other_devices, "%s%s (%lld)", c->other_devices.len ? ", " : "", key, (long long)n);
        }
    }
    int ret = step_end(c, st, rc, err);
    if (!ret && c->opt->gpu && !c->device[0])
        ret = rg_errf(err, "%s: no measurements on a GPU matching '%s' (devices in the store: %s)", c->db_path,
                      c->opt->gpu, all.len ? all.s : "none");
    rg_str_free(&all);
    return ret;
}

/* mx's columns of the config keys, one per key of the table, read from the variant's JSON: a generated
 * variant stored before a key existed has that key at its default; baselines have no config (NULL,
 * booleans off). Key names do not clash with mx's other columns (config_keys.def says so). */
static char *config_columns(void)
{
    cg_config dflt;
    cfg_default(&dflt);
    rg_str s = {0};
    char v[CFG_VALUE_MAX];
    for (int i = 0; i < CFG_NKEYS; i++) {
        const cfg_key *k = cfg_key_at(i);
        char *d = k->kind == CFG_ENUM ? sqlite3_mprintf("%Q", cfg_value(k, &dflt, v))
                                      : sqlite3_mprintf("%d", k->get(&dflt));
        char *x = sqlite3_mprintf("coalesce(json_extract(v.config, '$.%q'), CASE WHEN m.system = 'generated' THEN %s END)",
                                  k->name, d);
        if (!d || !x) RG_DIE("out of memory");
        if (k->kind == CFG_BOOL) rg_str_printf(&s, "%scoalesce(%s IN (1, 'on', 'true'), 0) AS %s", i ? ", " : "", x, k->name);
        else rg_str_printf(&s, "%s%s AS %s", i ? ", " : "", x, k->name);
        sqlite3_free(d);
        sqlite3_free(x);
    }
    return s.s;
}

/* mx: measurements of the device with their problem, dataset and layout; ref: those at the
 * reference problem size; pred: cost-model predictions of ref rows. */
static int build_tables(rp_ctx *c, rg_err *err)
{
    char *cols = config_columns();
    if (execf(c, err,
              "CREATE TEMP TABLE mx AS SELECT *, CASE WHEN compact <> 'off' AND reorder THEN 'C+R'"
              " WHEN compact <> 'off' THEN 'C' WHEN reorder THEN 'R' ELSE 'U' END AS layout FROM ("
              " SELECT m.id AS id, m.system AS system, m.layer AS layer, v.model AS model,"
              "  CASE lower(v.task) WHEN 'inference' THEN 'infer' WHEN 'training' THEN 'train' ELSE lower(v.task) END"
              "   AS task,"
              "  v.dim_in AS dim_in, v.dim_out AS dim_out, v.heads AS heads, v.config AS config, d.name AS dataset,"
              "  m.status AS status, m.median_ms AS ms, m.gemm_ms AS gemm_ms, m.traversal_ms AS trav_ms,"
              "  m.other_ms AS other_ms, m.peak_mem_bytes AS peak, %s"
              " FROM measurements m JOIN variants v ON v.id = m.variant_id JOIN datasets d ON d.id = m.dataset_id"
              " WHERE m.device_key = %Q AND json_valid(v.config))",
              cols, c->device)) {
        free(cols);
        return -1;
    }
    free(cols);
    sqlite3_stmt *st = sqlf(c, err,
                            "SELECT dim_in, dim_out, heads FROM mx WHERE system = 'generated' AND status = 'ok'"
                            " GROUP BY 1, 2, 3 ORDER BY (dim_in = 64 AND dim_out = 64 AND heads = 1) DESC, count(*) DESC,"
                            " 1, 2, 3 LIMIT 1");
    if (!st) return -1;
    int rc = sqlite3_step(st);
    c->has_ref = rc == SQLITE_ROW;
    c->dim_in = c->has_ref ? sqlite3_column_int(st, 0) : 64;
    c->dim_out = c->has_ref ? sqlite3_column_int(st, 1) : 64;
    c->heads = c->has_ref ? sqlite3_column_int(st, 2) : 1;
    if (rc == SQLITE_ROW) rc = SQLITE_DONE;
    if (step_end(c, st, rc, err)) return -1;
    if (execf(c, err,
              "CREATE TEMP TABLE ref AS SELECT * FROM mx WHERE dim_in = %d AND dim_out = %d AND heads = %d;"
              "CREATE INDEX temp.ref_problem ON ref(model, task, dataset, system);"
              "CREATE INDEX temp.mx_problem ON mx(model, task, dataset, system);"
              "CREATE UNIQUE INDEX temp.ref_id ON ref(id);"
              "CREATE UNIQUE INDEX temp.mx_id ON mx(id);"
              "CREATE TEMP TABLE pred AS SELECT x.measurement_id AS id, x.value AS predicted, max(x.id) AS latest"
              " FROM metrics x JOIN ref r ON r.id = x.measurement_id"
              " WHERE x.name = 'predicted_ms' AND x.kernel = '' AND x.value > 0 AND r.system = 'generated'"
              " AND r.status = 'ok' AND r.ms IS NOT NULL GROUP BY x.measurement_id",
              c->dim_in, c->dim_out, c->heads))
        return -1;
    double n;
    if (query_num(c, &n, err, "SELECT count(*) FROM pred")) return -1;
    c->have_pred = n > 0;
    st = sqlf(c, err, "SELECT d.name FROM datasets d WHERE d.name IN (SELECT dataset FROM mx)"
                      " ORDER BY d.edges IS NULL, d.edges, d.name");
    if (!st) return -1;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        c->datasets = rg_xrealloc(c->datasets, (size_t)(c->nds + 1) * sizeof *c->datasets);
        c->datasets[c->nds++] = rg_xstrdup(col_text(st, 0));
    }
    return step_end(c, st, rc, err);
}

/* The store's reader checks identity, schema and damage and never writes (a read-only folder
 * works); its connection is ours then (temporary tables live in its temp schema). */
static int open_store(rp_ctx *c, rg_err *err)
{
    rs_store *s = rs_open_read(c->db_path, err);
    if (!s) return -1;
    c->db = rs_detach(s);
    return 0;
}

/* ================================================================ gnuplot ==== */

static char *find_plots_dir(const char *given, rg_err *err)
{
    char exe[PATH_MAX], buf[PATH_MAX + 32];
    const char *tries[4] = {given, NULL, NULL, "plots"};
    char up1[PATH_MAX + 32] = "", up2[PATH_MAX + 32] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (!given && n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        snprintf(up1, sizeof up1, "%s/../plots", exe);     /* build/explore */
        snprintf(up2, sizeof up2, "%s/../../plots", exe);  /* build/tests/<test> */
        tries[1] = up1;
        tries[2] = up2;
    }
    for (int i = 0; i < 4; i++) {
        if (!tries[i] || (given && i > 0)) continue;
        snprintf(buf, sizeof buf, "%s/common.gp", tries[i]);
        char real[PATH_MAX];
        if (rg_file_exists(buf) && realpath(tries[i], real)) return rg_xstrdup(real);
    }
    if (given) rg_errf(err, "%s: no gnuplot scripts there (common.gp missing)", given);
    else rg_errf(err, "cannot find the gnuplot scripts (plots/common.gp next to the build directory or in the "
                      "current directory); pass --plots DIR");
    return NULL;
}

static int gnuplot_in_path(void)
{
    const char *path = getenv("PATH");
    if (!path) return 0;
    char *copy = rg_xstrdup(path), *save = NULL;
    int found = 0;
    for (char *dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
        char *p = rg_xasprintf("%s/gnuplot", *dir ? dir : ".");
        found = access(p, X_OK) == 0;
        free(p);
    }
    free(copy);
    return found;
}

typedef struct gp_job {
    char *expr, *script, *output, *log;
    pid_t pid;
} gp_job;

static char *gp_expr(const rp_fig *f, const char *ext)
{
    return rg_xasprintf("datafile='data/%s.csv'; outfile='%s.%s'; width=%d; height=%d; %s", f->stem, f->stem, ext,
                        f->width, f->height, f->vars.s ? f->vars.s : "");
}

static pid_t gp_spawn(const rp_ctx *c, const gp_job *j)
{
    pid_t pid = fork();
    if (pid != 0) return pid;
    /* child: run in the report directory so every path in the command stays relative */
    int fd = open(j->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (chdir(c->out_dir) != 0 || fd < 0) _exit(126);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    setenv("GNUPLOT_LIB", c->plots_dir, 1);
    char *argv[] = {"gnuplot", "-e", j->expr, j->script, NULL};
    execvp("gnuplot", argv);
    _exit(127);
}

/* Last non-empty line of a log (for error messages). */
static void last_line(const char *path, char *out, size_t n)
{
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (line[0]) snprintf(out, n, "%s", line);
    }
    fclose(f);
}

static int gp_finish(const gp_job *j, int status, rg_err *err)
{
    char line[1024];
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        last_line(j->log, line, sizeof line);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
            return rg_errf(err, "cannot run gnuplot (install it: make deps)");
        return rg_errf(err, "gnuplot failed on %s drawing %s: %s (log: %s)", j->script, j->output,
                       line[0] ? line : "no message", j->log);
    }
    struct stat st;
    if (stat(j->output, &st) != 0 || st.st_size == 0)
        return rg_errf(err, "gnuplot wrote no %s (script %s, log %s)", j->output, j->script, j->log);
    if (stat(j->log, &st) == 0 && st.st_size == 0) unlink(j->log);
    else {
        last_line(j->log, line, sizeof line);
        fprintf(stderr, "explore report: gnuplot warned on %s: %s (log: %s)\n", j->script, line, j->log);
    }
    return 0;
}

#define GP_PARALLEL 4

/* Draws every figure in PNG and SVG, a few gnuplot processes at a time. */
static int run_gnuplot(rp_ctx *c, rp_fig *figs, rg_err *err)
{
    static const char *const exts[] = {"png", "svg"};
    gp_job jobs[RP_NFIGURES * 2];
    int nj = 0;
    for (int i = 0; i < RP_NFIGURES; i++) {
        if (figs[i].skip.len) continue;
        for (int e = 0; e < 2; e++) {
            gp_job *j = &jobs[nj++];
            j->expr = gp_expr(&figs[i], exts[e]);
            j->script = rg_xasprintf("%s/%s.gp", c->plots_dir, figs[i].stem);
            j->output = rg_xasprintf("%s/%s.%s", c->out_dir, figs[i].stem, exts[e]);
            j->log = rg_xasprintf("%s/data/%s.%s.log", c->out_dir, figs[i].stem, exts[e]);
            j->pid = -1;
        }
    }
    int next = 0, running = 0, ret = 0;
    while (next < nj || running) {
        while (!ret && next < nj && running < GP_PARALLEL) {
            if ((jobs[next].pid = gp_spawn(c, &jobs[next])) < 0) {
                ret = rg_errf(err, "cannot start gnuplot: %s", strerror(errno));
                break;
            }
            next++;
            running++;
        }
        if (!running) break;
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            ret = ret ? ret : rg_errf(err, "waiting for gnuplot: %s", strerror(errno));
            break;
        }
        for (int k = 0; k < next; k++)
            if (jobs[k].pid == pid) {
                running--;
                jobs[k].pid = -1;
                if (!ret && gp_finish(&jobs[k], status, err)) ret = -1;
            }
        if (ret) next = nj;   /* start nothing more; wait for the rest */
    }
    for (int k = 0; k < nj; k++) {
        free(jobs[k].expr);
        free(jobs[k].script);
        free(jobs[k].output);
        free(jobs[k].log);
    }
    return ret;
}

/* The path of directory `to` as seen from directory `from` (both absolute and canonical), so
 * that a report committed with its source tree still redraws from another checkout. */
static char *relative_dir(const char *from, const char *to)
{
    size_t common = 0;
    for (size_t i = 0; from[i] && from[i] == to[i]; i++)
        if (from[i + 1] == '/' || from[i + 1] == 0)
            if (to[i + 1] == '/' || to[i + 1] == 0) common = i + 1;
    rg_str r = {0};
    for (const char *p = from + common; *p; p++)
        if (*p == '/' && p[1] && p[1] != '/') rg_str_puts(&r, r.len ? "/.." : "..");
    const char *rest = to + common;
    while (*rest == '/') rest++;
    if (*rest) rg_str_printf(&r, "%s%s", r.len ? "/" : "", rest);
    if (!r.len) rg_str_puts(&r, ".");
    return r.s;
}

/* data/replot.sh: the exact gnuplot commands, to redraw after editing a script. */
static int write_replot(const rp_ctx *c, rp_fig *figs, rg_err *err)
{
    char *path = rg_xasprintf("%s/data/replot.sh", c->out_dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        int rc = rg_errf(err, "cannot write %s: %s", path, strerror(errno));
        free(path);
        return rc;
    }
    /* relative to the report: the script cds there first */
    char *plots = relative_dir(c->out_dir, c->plots_dir);
    fprintf(f, "#!/bin/sh\n# Redraws the figures of this report from data/*.csv (written by explore report).\n"
               "cd \"$(dirname \"$0\")/..\" || exit 1\nplots=${RGNN_PLOTS:-'%s'}\nexport GNUPLOT_LIB=\"$plots\"\n",
            plots);
    free(plots);
    for (int i = 0; i < RP_NFIGURES; i++) {
        if (figs[i].skip.len) continue;
        for (int e = 0; e < 2; e++) {
            char *expr = gp_expr(&figs[i], e ? "svg" : "png");
            fputs("gnuplot -e '", f);
            for (const char *p = expr; *p; p++) fputs(*p == '\'' ? "'\\''" : (char[2]){*p, 0}, f);
            fprintf(f, "' \"$plots/%s.gp\"\n", figs[i].stem);
            free(expr);
        }
    }
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    chmod(path, 0755);
    int rc = bad ? rg_errf(err, "cannot write %s", path) : 0;
    free(path);
    return rc;
}

/* ================================================================ index.md ==== */

static int write_index(const rp_ctx *c, rp_fig *figs, rg_err *err)
{
    char *path = rg_xasprintf("%s/index.md", c->out_dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        int rc = rg_errf(err, "cannot write %s: %s", path, strerror(errno));
        free(path);
        return rc;
    }
    fprintf(f, "# RGNN explorer report\n\nResults store `%s`", c->db_path);
    if (c->device[0]) fprintf(f, ", device **%s** (%lld measurements)", c->device, (long long)c->device_rows);
    else fputs(", no measurements yet", f);
    fputs(".", f);
    if (c->other_devices.len)
        fprintf(f, " Also in the store, not shown (choose with `--gpu NAME`): %s.", c->other_devices.s);
    fprintf(f, "\n\nReference problem size (figures 2–5, 7–9): %d → %d dims, %d head%s. Layouts: **U** unoptimized "
               "(compact off, reorder off), **C** compact materialization (compact bsearch or direct), **R** linear-"
               "operator reordering, **C+R** both; each with its best measured schedule. Speed-ups are ratios of "
               "median times; averages are geometric means. **Oracle**: the fastest measured config of each problem; "
               "**best fixed**: for each dataset, the config with the best geomean of time / oracle over the OTHER "
               "datasets (leave-one-dataset-out, as `explore fit` and `explore replay` define it).\n\n"
               "The CSV table behind each figure is in `data/`; `data/replot.sh` redraws them with the scripts of "
               "`plots/`.\n",
            c->dim_in, c->dim_out, c->heads, c->heads == 1 ? "" : "s");
    for (int i = 0; i < RP_NFIGURES; i++) {
        rp_fig *g = &figs[i];
        fprintf(f, "\n## %d. %s\n\n", i + 1, g->title);
        if (g->skip.len) {
            fprintf(f, "*Figure %d (%s) skipped:* %s.\n", i + 1, g->stem, g->skip.s);
            continue;
        }
        fprintf(f, "%s\n\n![%s](%s.png)\n\n[SVG](%s.svg) · [data](data/%s.csv)\n", g->reading.s ? g->reading.s : "",
                g->title, g->stem, g->stem, g->stem);
        if (g->md.len) fprintf(f, "\n%s", g->md.s);
    }
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    int rc = bad ? rg_errf(err, "cannot write %s", path) : 0;
    free(path);
    return rc;
}

/* ================================================================ build ==== */

static int build_figure(rp_ctx *c, rp_fig *f, rg_err *err)
{
    f->csv_path = rg_xasprintf("%s/data/%s.csv", c->out_dir, f->stem);
    if (!(f->csv = fopen(f->csv_path, "w"))) return rg_errf(err, "cannot write %s: %s", f->csv_path, strerror(errno));
    int rc = FIGS[f->index].build(c, f, err);
    int bad = ferror(f->csv);
    bad |= fclose(f->csv) != 0;
    f->csv = NULL;
    if (!rc && bad) rc = rg_errf(err, "cannot write %s", f->csv_path);
    if (rc) rg_err_prefix(err, "figure %d (%s)", f->index + 1, f->stem);
    if (!rc && f->skip.len) unlink(f->csv_path);
    return rc;
}

static int prepare_dirs(rp_ctx *c, rg_err *err)
{
    char *data = rg_xasprintf("%s/data", c->opt->out_dir);
    int rc = rg_mkdir_p(data, err);
    free(data);
    if (rc) return -1;
    char real[PATH_MAX];
    if (!realpath(c->opt->out_dir, real)) return rg_errf(err, "%s: %s", c->opt->out_dir, strerror(errno));
    c->out_dir = rg_xstrdup(real);
    /* stale figures of an earlier report must not survive as if they were current */
    for (int i = 0; i < RP_NFIGURES; i++)
        for (int e = 0; e < 2; e++) {
            const char *ext = e ? "svg" : "png";
            char *p = rg_xasprintf("%s/%s.%s", c->out_dir, FIGS[i].stem, ext);
            char *log = rg_xasprintf("%s/data/%s.%s.log", c->out_dir, FIGS[i].stem, ext);
            unlink(p);
            unlink(log);
            free(p);
            free(log);
        }
    return 0;
}

static void ctx_free(rp_ctx *c)
{
    if (c->db) sqlite3_close(c->db);
    rg_str_free(&c->other_devices);
    for (int i = 0; i < c->nds; i++) free(c->datasets[i]);
    free(c->datasets);
    free(c->plots_dir);
    free(c->out_dir);
}

int rp_build(const rp_options *o, rp_summary *out, rg_err *err)
{
    if (!o->out_dir || !*o->out_dir) return rg_errf(err, "report: no output directory (--out DIR)");
    rp_ctx c = {.opt = o, .db_path = o->db_path ? o->db_path : RS_DEFAULT_DB};
    rp_fig figs[RP_NFIGURES];
    memset(figs, 0, sizeof figs);
    int ret = -1;
    if (!(c.plots_dir = find_plots_dir(o->plots_dir, err))) goto done;
    for (int i = 0; i < RP_NFIGURES; i++) {
        char *p = rg_xasprintf("%s/%s.gp", c.plots_dir, FIGS[i].stem);
        int ok = rg_file_exists(p);
        free(p);
        if (!ok) {
            rg_errf(err, "%s/%s.gp: missing plot script", c.plots_dir, FIGS[i].stem);
            goto done;
        }
    }
    if (!gnuplot_in_path()) {
        rg_errf(err, "gnuplot not found in PATH (install it: make deps)");
        goto done;
    }
    if (open_store(&c, err) || check_schema(&c, err) || choose_device(&c, err) || build_tables(&c, err) ||
        prepare_dirs(&c, err))
        goto done;
    for (int i = 0; i < RP_NFIGURES; i++) {
        figs[i] = (rp_fig){.index = i, .stem = FIGS[i].stem, .title = FIGS[i].title, .width = 900, .height = 600};
        if (build_figure(&c, &figs[i], err)) goto done;
    }
    if (run_gnuplot(&c, figs, err) || write_replot(&c, figs, err) || write_index(&c, figs, err)) goto done;
    if (out) {
        memset(out, 0, sizeof *out);
        snprintf(out->device, sizeof out->device, "%s", c.device);
        for (int i = 0; i < RP_NFIGURES; i++) {
            out->figure_drawn[i] = !figs[i].skip.len;
            out->drawn += out->figure_drawn[i];
        }
        out->skipped = RP_NFIGURES - out->drawn;
    }
    ret = 0;
done:
    for (int i = 0; i < RP_NFIGURES; i++) {
        rg_str_free(&figs[i].vars);
        rg_str_free(&figs[i].reading);
        rg_str_free(&figs[i].md);
        rg_str_free(&figs[i].skip);
        free(figs[i].csv_path);
    }
    ctx_free(&c);
    return ret;
}
