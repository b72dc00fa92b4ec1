/* `explore fit` (fit the cost models on the results store, print the leave-one-dataset-out and
 * leave-one-size-out tables)
 * and `explore pick` (rank a dataset's configs by the model; optionally measure the top K). */
#include "cli/cmcli.h"
#include "codegen/pipeline.h"
#include "datasets/dataset.h"
#include "explorer/calib.h"
#include "explorer/costmodel.h"
#include "explorer/search.h"
#include "results/yardstick.h"
#include "cli/problem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void dims_text(const cm_problem *p, char *out, size_t cap)
{
    if (p->heads > 1) snprintf(out, cap, "%dx%dh%d", p->dim_in, p->dim_out, p->heads);
    else snprintf(out, cap, "%dx%d", p->dim_in, p->dim_out);
}

/* ================================================================ explore fit ==== */

typedef struct fit_args {
    cp_problem p;            /* --db, and --model/--task as filters */
    const char *out, *device;
    cm_fit_options opt;
    int no_eval, store_predictions, no_store, verbose;
} fit_args;

static const char FIT_USAGE[] =
    "usage: explore fit [--db PATH] [--out FILE] [--model M] [--task infer|train] [--device KEY]\n"
    "                   [--top K | --top-frac F] [--lambda L] [--weight-tau T]\n"
    "                   [--bw BYTES_PER_S] [--peak FLOPS] [--no-eval] [--store-predictions] [--verbose]\n"
    "Fits the cost models on the ok measurements of the results store (one section per model and\n"
    "task) and writes them to a readable file. First it evaluates them leave-one-dataset-out: for\n"
    "each dataset, fit on the others and rank that dataset's measured configs. Columns: the oracle\n"
    "(fastest measured), the best fixed strategy (the first config of the static list: the config\n"
    "with the best geomean of time / oracle over the OTHER datasets, the one definition the replay\n"
    "and the report use too), the picked config (best predicted), gap = picked / oracle, top-1\n"
    "(picked is the oracle), top-K (fastest of the K best predicted: what measuring K variants\n"
    "gives), the same K spent on the static list (static-K) and on random search (random-K: the\n"
    "exact expectation of the best of K uniform draws), each over the oracle, and the Spearman\n"
    "rank correlation of predicted and measured times. The results database is only\n"
    "read, unless --store-predictions: then each measured config's leave-one-dataset-out\n"
    "prediction is stored back as its metric predicted_ms (replacing the previous fit's), which\n"
    "`explore report` draws against the measured times.\n";

#define STR_(x) #x
#define STR(x) STR_(x)

/* -1 to go on; else the exit status. */
static int parse_fit(int argc, char **argv, fit_args *a)
{
    memset(a, 0, sizeof *a);
    cp_init(&a->p);
    a->p.task = NULL;   /* a filter here: every task */
    a->out = CM_DEFAULT_FILE;
    cm_fit_options_default(&a->opt);
    ro_cmd c;
    ro_init(&c, "explore fit", FIT_USAGE, NULL);
    cp_add_options(&c, &a->p, CP_DB);
    ro_add(&c, (ro_opt){.name = "out", .arg = "FILE", .kind = RO_STR, .dst = &a->out, .help = "model file (default " CM_DEFAULT_FILE ")"});
    cp_add_options(&c, &a->p, CP_MODEL | CP_TASK);
    ro_add(&c, (ro_opt){.name = "device", .arg = "KEY", .kind = RO_STR, .dst = &a->device, .help = "device key, when the database holds several devices"});
    ro_add(&c, (ro_opt){.name = "top", .arg = "K", .kind = RO_INT, .dst = &a->opt.top_k,
                        .help = "measure-K in the table (default: 10% of each dataset's configs, --top-frac)", .lo = 1, .hi = 1000000});
    ro_add(&c, (ro_opt){.name = "top-frac", .arg = "F", .kind = RO_REAL, .dst = &a->opt.top_frac, .help = "K as a fraction of each dataset's configs", .lo = 1e-6, .hi = 1});
    ro_add(&c, (ro_opt){.name = "lambda", .arg = "L", .kind = RO_REAL, .dst = &a->opt.lambda,
                        .help = "ridge parameter (relative, standardized features); default: chosen by inner\n"
                        "leave-one-dataset-out", .lo = 0, .hi = 1e6});
    ro_add(&c, (ro_opt){.name = "weight-tau", .arg = "T", .kind = RO_REAL, .dst = &a->opt.weight_tau,
                        .help = "rows of the ranking fit weigh e^-(log time - log best)/T, so that it\n"
                        "learns the order of the fast configs (default " STR(CM_WEIGHT_TAU) "; 0: every row alike)", .lo = 0, .hi = 100});
    ro_add(&c, (ro_opt){.name = "bw", .arg = "BYTES_PER_S", .kind = RO_REAL, .dst = &a->opt.bw, .help = "device bandwidth of the analytic model (default H100: " STR(CM_DEFAULT_BW) " B/s)", .lo = 1e6, .hi = 1e16});
    ro_add(&c, (ro_opt){.name = "peak", .arg = "FLOPS", .kind = RO_REAL, .dst = &a->opt.peak, .help = "device FLOP/s of the analytic model (default H100: " STR(CM_DEFAULT_PEAK) ")", .lo = 1e6, .hi = 1e18});
    ro_add(&c, (ro_opt){.name = "no-eval", .arg = NULL, .kind = RO_FLAG, .dst = &a->no_eval, .help = "only fit and write the model (nothing is stored)"});
    ro_add(&c, (ro_opt){.name = "store-predictions", .arg = NULL, .kind = RO_FLAG, .dst = &a->store_predictions,
                        .help = "write the predictions into the results database (default: leave it unchanged)"});
    ro_add(&c, (ro_opt){.name = "no-store", .arg = NULL, .kind = RO_FLAG, .dst = &a->no_store,
                        .help = "the old spelling of the default (the database is left unchanged)"});
    ro_add(&c, (ro_opt){.name = "verbose", .arg = NULL, .kind = RO_FLAG, .dst = &a->verbose, .help = "also print the picked, oracle and fixed configs of every row"});
    int rc = ro_parse(&c, argc, argv);
    return rc ? ro_exit(rc) : -1;
}

/* How each problem's oracle is known (sr_oracle_label: "exhaustive" or "best of N measured"), from
 * its ok configs and those whose every attempt failed in the store. */
typedef struct oracle_kinds {
    char (*label)[48];         /* [problems of the set] */
    unsigned char *exhaustive;
} oracle_kinds;

static int oracle_kinds_load(const char *db, const cm_set *s, oracle_kinds *k, rg_err *err)
{
    k->label = rg_xcalloc((size_t)(s->nproblems ? s->nproblems : 1), sizeof *k->label);
    k->exhaustive = rg_xcalloc((size_t)(s->nproblems ? s->nproblems : 1), 1);
    sr_set set;
    sr_from_cm_set(s, NULL, 1, &set);
    int rc = sr_load_failed(db, &set, err);
    for (int i = 0; !rc && i < set.n; i++) {
        const sr_problem *p = &set.problems[i];
        for (int q = 0; q < s->nproblems; q++)
            if (!memcmp(&s->problems[q], &p->prob, sizeof p->prob)) {   /* p->prob is a copy of it */
                sr_oracle_label(p, k->label[q], sizeof k->label[q]);
                k->exhaustive[q] = !strcmp(k->label[q], "exhaustive");
            }
    }
    sr_set_free(&set);
    return rc;
}

static void oracle_kinds_free(oracle_kinds *k)
{
    free(k->label);
    free(k->exhaustive);
}

static void print_row(const cm_set *s, const cm_eval_row *r, const oracle_kinds *ok, int verbose)
{
    const cm_problem *p = &s->problems[r->problem];
    const cm_score *sc = &r->score;
    char dims[48], fixed[32], fixed_gap[16];
    dims_text(p, dims, sizeof dims);
    if (isfinite(r->fixed_ms)) {
        snprintf(fixed, sizeof fixed, "%.4f", r->fixed_ms);
        snprintf(fixed_gap, sizeof fixed_gap, "%.3f", r->fixed_ms / sc->oracle_ms);
    } else {
        snprintf(fixed, sizeof fixed, "%s", r->have_fixed ? "not here" : "-");
        snprintf(fixed_gap, sizeof fixed_gap, "-");
    }
    char static_gap[16] = "-";
    if (isfinite(r->static_topk_ms)) snprintf(static_gap, sizeof static_gap, "%.3f", r->static_topk_ms / sc->oracle_ms);
    printf("%-22s %-9s %7d %10.4f %-20s %10.4f %10s %10.4f %6.3f %5s %10.4f %4d %6.3f %8s %8.3f %6s %8.3f\n", p->dataset,
           dims, sc->n, sc->oracle_ms, ok->label[r->problem], r->predicted_ms, fixed, sc->picked_ms,
           sc->picked_ms / sc->oracle_ms, sc->hit ? "yes" : "no", sc->topk_ms, sc->top_k, sc->topk_ms / sc->oracle_ms,
           static_gap, r->random_topk_ms / sc->oracle_ms, fixed_gap, sc->spearman);
    if (!verbose) return;
    char *pc = cfg_to_string(&r->picked), *oc = cfg_to_string(&r->oracle);
    printf("    picked %s\n    oracle %s\n", pc, oc);
    if (r->have_fixed) {
        char *fc = cfg_to_string(&r->fixed);
        printf("    fixed  %s\n", fc);
        free(fc);
    }
    free(pc);
    free(oc);
}

static void print_summary(const cm_eval_summary *g)
{
    printf("%s %s, %d sweeps (problems of >= %d configs): top-1 hit rate %.2f; geomean picked/oracle %.3f; top-K/oracle %.3f measuring %.1f%% "
           "of the configs (at the same K: static list %.3f, random search %.3f); best fixed/oracle %.3f; picked/best fixed %.3f; "
           "mean Spearman %.3f\n",
           g->model, g->task, g->nrows, CM_MIN_SWEEP, g->hit_rate, g->gap_geomean, g->topk_gap_geomean, 100 * g->topk_fraction,
           g->static_topk_gap_geomean, g->random_topk_gap_geomean, g->fixed_gap_geomean, g->picked_vs_fixed, g->spearman_mean);
}

/* How many of the evaluated problems (rows of at least CM_MIN_SWEEP configs) have an exhaustive oracle. */
static void print_oracle_count(const cm_eval *e, const oracle_kinds *ok)
{
    int ex = 0, n = 0;
    for (int r = 0; r < e->nrows; r++) {
        if (e->rows[r].score.n < CM_MIN_SWEEP) continue;
        n++;
        ex += ok->exhaustive[e->rows[r].problem];
    }
    printf("oracles of the %d sweeps: %d exhaustive (the store measured every valid point of the space its points span), "
           "%d best of the configs measured\n", n, ex, n - ex);
}

static void print_eval(const cm_set *s, const cm_eval *e, const oracle_kinds *ok, int verbose)
{
    for (int g = 0; g < e->ngroups; g++) {
        const cm_eval_summary *sum = &e->groups[g];
        printf("\n%s %s, leave-one-dataset-out (fit on the other datasets, rank this one's measured configs):\n",
               sum->model, sum->task);
        printf("%-22s %-9s %7s %10s %-20s %10s %10s %10s %6s %5s %10s %4s %6s %8s %8s %6s %8s\n", "dataset", "dims",
               "configs", "oracle ms", "oracle", "pred ms", "fixed ms", "picked ms", "gap", "top-1", "top-K ms", "K", "K gap",
               "static-K", "random-K", "fixed", "spearman");
        for (int r = 0; r < e->nrows; r++) {
            const cm_problem *p = &s->problems[e->rows[r].problem];
            if (!strcmp(p->model, sum->model) && !strcmp(p->task, sum->task)) print_row(s, &e->rows[r], ok, verbose);
        }
    }
    printf("\n");
    for (int g = 0; g < e->ngroups; g++) print_summary(&e->groups[g]);
    print_oracle_count(e, ok);
}

/* ---- leave-one-size-out, per held-out size ---- */

/* One held-out size of one model and task: geomeans over its problems (sweeps of at least
 * CM_MIN_SWEEP configs) of the model's and the static list's top-1 and top-K over the oracle. */
typedef struct size_row {
    cm_problem kind;           /* model, task, dims, heads */
    int problems, exhaustive, nfixed, nstatic_k;
    double top1, fixed, topk, static_k, random_k, k, configs;   /* sums of logs; K and configs: sums */
} size_row;

/* By model, task, heads and dims. */
static int cmp_size_rows(const void *a, const void *b)
{
    const cm_problem *x = &((const size_row *)a)->kind, *y = &((const size_row *)b)->kind;
    int c = strcmp(x->model, y->model);
    if (!c) c = strcmp(x->task, y->task);
    if (!c) c = (x->heads > y->heads) - (x->heads < y->heads);
    if (!c) c = (x->dim_in > y->dim_in) - (x->dim_in < y->dim_in);
    if (!c) c = (x->dim_out > y->dim_out) - (x->dim_out < y->dim_out);
    return c;
}

static int size_rows(const cm_set *s, const cm_eval *e, const oracle_kinds *ok, size_row **out)
{
    size_row *rows = NULL;
    int n = 0;
    for (int r = 0; r < e->nrows; r++) {
        const cm_eval_row *row = &e->rows[r];
        const cm_problem *p = &s->problems[row->problem];
        if (row->score.n < CM_MIN_SWEEP) continue;
        int i = 0;
        while (i < n && (strcmp(rows[i].kind.model, p->model) || strcmp(rows[i].kind.task, p->task) ||
                         rows[i].kind.dim_in != p->dim_in || rows[i].kind.dim_out != p->dim_out || rows[i].kind.heads != p->heads))
            i++;
        if (i == n) {
            rows = rg_xrealloc(rows, (size_t)(n + 1) * sizeof *rows);
            memset(&rows[n], 0, sizeof rows[n]);
            rows[n++].kind = *p;
        }
        size_row *x = &rows[i];
        double oracle = row->score.oracle_ms;
        x->problems++;
        x->exhaustive += ok->exhaustive[row->problem];
        x->top1 += log(row->score.picked_ms / oracle);
        x->topk += log(row->score.topk_ms / oracle);
        x->random_k += log(row->random_topk_ms / oracle);
        x->k += row->score.top_k;
        x->configs += row->score.n;
        if (isfinite(row->fixed_ms)) x->fixed += log(row->fixed_ms / oracle), x->nfixed++;
        if (isfinite(row->static_topk_ms)) x->static_k += log(row->static_topk_ms / oracle), x->nstatic_k++;
    }
    qsort(rows, (size_t)n, sizeof *rows, cmp_size_rows);
    *out = rows;
    return n;
}

/* exp(sum / n) as text, "-" when nothing counted. */
static const char *geo(double sum, int n, char *buf)
{
    if (n > 0) snprintf(buf, 16, "%.3f", exp(sum / n));
    else snprintf(buf, 16, "-");
    return buf;
}

/* The cells of one size row, in the order of SIZE_COLUMNS. */
#define SIZE_NCELLS 11
static const char *const SIZE_COLUMNS[SIZE_NCELLS] = {"model", "task", "dims", "problems", "oracles exhaustive",
                                                      "model top-1", "static top-1", "model top-K", "static-K",
                                                      "random-K", "K % of space"};

static void size_cells(const size_row *x, char cells[SIZE_NCELLS][256])
{
    char dims[48];
    dims_text(&x->kind, dims, sizeof dims);
    snprintf(cells[0], 256, "%s", x->kind.model);
    snprintf(cells[1], 256, "%s", x->kind.task);
    snprintf(cells[2], 256, "%s", dims);
    snprintf(cells[3], 256, "%d", x->problems);
    snprintf(cells[4], 256, "%d / %d", x->exhaustive, x->problems);
    geo(x->top1, x->problems, cells[5]);
    geo(x->fixed, x->nfixed, cells[6]);
    geo(x->topk, x->problems, cells[7]);
    geo(x->static_k, x->nstatic_k, cells[8]);
    geo(x->random_k, x->problems, cells[9]);
    snprintf(cells[10], 256, "%.1f", 100 * x->k / x->configs);
}

static void print_loso(const cm_set *s, const cm_eval *e, const oracle_kinds *ok)
{
    size_row *rows;
    int n = size_rows(s, e, ok, &rows);
    printf("\nleave-one-size-out (fit on every other size (dims, heads) of the model and task, all datasets; the static\n"
           "list from the other sizes too): per held-out size, geomean over its problems of each pick / oracle\n");
    for (int c = 0; c < SIZE_NCELLS; c++) printf(c < 3 ? "%-9s " : "%13s ", SIZE_COLUMNS[c]);
    printf("\n");
    for (int i = 0; i < n; i++) {
        char cells[SIZE_NCELLS][256];
        size_cells(&rows[i], cells);
        for (int c = 0; c < SIZE_NCELLS; c++) printf(c < 3 ? "%-9s " : "%13s ", cells[c]);
        printf("\n");
    }
    printf("\n");
    for (int g = 0; g < e->ngroups; g++) print_summary(&e->groups[g]);
    print_oracle_count(e, ok);
    free(rows);
}

int cm_cli_loso_markdown(const char *db, FILE *out, rg_err *err)
{
    cm_set s;
    if (cm_set_load(db, NULL, &s, err)) return -1;
    cm_eval e;
    oracle_kinds ok;
    int rc = cm_loso(&s, NULL, &e, err);
    if (rc) {
        cm_set_free(&s);
        return -1;
    }
    if ((rc = oracle_kinds_load(db, &s, &ok, err)) == 0) {
        size_row *rows;
        int n = size_rows(&s, &e, &ok, &rows), ex = 0, total = 0;
        for (int i = 0; i < n; i++) ex += rows[i].exhaustive, total += rows[i].problems;
        fprintf(out, "\n#### %s\n\nStore `%s`, device %s: %d measurements of %d problems. The same numbers: "
                     "`build/explore fit --db %s --out /tmp/costmodel.txt` (its leave-one-size-out table). Oracles: %d of "
                     "the %d problems exhaustive (the store measured every valid point of the space its points span), the "
                     "others the best of the configs measured.\n\n|",
                db, db, s.device, s.nsamples, s.nproblems, db, ex, total);
        for (int c = 0; c < SIZE_NCELLS; c++) fprintf(out, " %s |", SIZE_COLUMNS[c]);
        fputs("\n|", out);
        for (int c = 0; c < SIZE_NCELLS; c++) fputs("---|", out);
        fputc('\n', out);
        for (int i = 0; i < n; i++) {
            char cells[SIZE_NCELLS][256];
            size_cells(&rows[i], cells);
            fputc('|', out);
            for (int c = 0; c < SIZE_NCELLS; c++) fprintf(out, " %s |", cells[c]);
            fputc('\n', out);
        }
        free(rows);
        oracle_kinds_free(&ok);
    }
    cm_eval_free(&e);
    cm_set_free(&s);
    return rc;
}

/* Stores each evaluated sample's out-of-dataset prediction as its predicted_ms metric. The
 * predictions of earlier fits are removed from the whole scope of this one (device, and the
 * --model/--task filter), so that measurements this fit left out (an older commit's) keep none
 * that the report would mix in. A failure leaves the store as it was. */
static int store_predictions(const fit_args *a, const cm_set *s, const cm_eval *e, rg_err *err)
{
    int64_t *ids = rg_xmalloc((size_t)(s->nsamples ? s->nsamples : 1) * sizeof *ids);
    double *vals = rg_xmalloc((size_t)(s->nsamples ? s->nsamples : 1) * sizeof *vals);
    size_t n = 0;
    for (int i = 0; i < s->nsamples; i++)
        if (s->samples[i].measurement_id > 0 && isfinite(e->sample_pred[i])) {
            ids[n] = s->samples[i].measurement_id;
            vals[n++] = e->sample_pred[i];
        }
    rs_filter scope = {.device_key = s->device, .model = a->p.model, .task = a->p.task, .system = "generated"};
    rs_store *st = rs_open_existing(a->p.db, err);
    int rc = st ? rs_set_metric(st, "predicted_ms", "ms", &scope, ids, vals, n, err) : -1;
    if (st) rs_close(st);
    if (!rc) printf("stored %zu leave-one-dataset-out predictions as metric predicted_ms in %s\n", n, a->p.db);
    free(ids);
    free(vals);
    return rc;
}


/* bo's prior for each section of m (explorer/calib.h): what the leave-one-dataset-out predictions
 * pred[] got wrong on the store's problems of its model and task. A graph the fit never saw is
 * searched with it (`explore --strategy bo`); sections left uncalibrated keep the fixed prior. */
static void calibrate_sections(const cm_set *s, const double *pred, cm_model *m)
{
    unsigned char *use = rg_xmalloc((size_t)(s->nproblems ? s->nproblems : 1));
    for (int k = 0; k < m->nsections; k++) {
        cm_section *sec = &m->sections[k];
        for (int q = 0; q < s->nproblems; q++)
            use[q] = !strcmp(s->problems[q].model, sec->model) && !strcmp(s->problems[q].task, sec->task);
        double prior[CAL_NFEAT];
        int n = cal_prior_of(s, pred, use, NAN, prior);
        if (!n) continue;
        sec->bo_prior = rg_xmalloc(sizeof prior);
        memcpy(sec->bo_prior, prior, sizeof prior);
        sec->bo_problems = n;
    }
    free(use);
}

int cm_cli_fit(int argc, char **argv)
{
    fit_args a;
    int parsed = parse_fit(argc, argv, &a);
    if (parsed >= 0) return parsed;
    rg_err err = {0};
    cm_filter f = {.model = a.p.model, .task = a.p.task, .device = a.device};
    cm_set s;
    if (cm_set_load(a.p.db, &f, &s, &err)) {
        fprintf(stderr, "explore fit: %s\n", err.msg);
        return 1;
    }
    printf("training set: %d measurements of %d problems on '%s' from %s", s.nsamples, s.nproblems, s.device, s.source);
    if (s.skipped) printf(" (%d left out: no dataset statistics or analytic counts)", s.skipped);
    printf("\n");
    int rc = 0, store_failed = 0;
    double t0 = rg_now();
    oracle_kinds ok = {0};
    if (!a.no_eval && oracle_kinds_load(a.p.db, &s, &ok, &err)) {
        fprintf(stderr, "explore fit: %s\n", err.msg);
        oracle_kinds_free(&ok);
        cm_set_free(&s);
        return 1;
    }
    double *lodo_pred = NULL;   /* the held-out predictions bo's prior is calibrated on */
    if (!a.no_eval) {
        cm_eval e;
        if (cm_lodo(&s, &a.opt, &e, &err)) {
            /* too few datasets to evaluate still makes a model; a failing fit fails below */
            fprintf(stderr, "explore fit: no evaluation: %s\n", err.msg);
            err.msg[0] = 0;
        } else {
            print_eval(&s, &e, &ok, a.verbose);
            lodo_pred = rg_xmalloc((size_t)(s.nsamples ? s.nsamples : 1) * sizeof *lodo_pred);
            memcpy(lodo_pred, e.sample_pred, (size_t)s.nsamples * sizeof *lodo_pred);
            /* a store we cannot write (read-only copy) still gets its model written below */
            if (a.store_predictions && store_predictions(&a, &s, &e, &err)) {
                fprintf(stderr, "explore fit: predictions not stored: %s\n", err.msg);
                err.msg[0] = 0;
                store_failed = 1;
            }
            cm_eval_free(&e);
        }
        if (cm_loso(&s, &a.opt, &e, &err)) {
            printf("\nno leave-one-size-out evaluation: %s\n", err.msg);
            err.msg[0] = 0;
        } else {
            print_loso(&s, &e, &ok);
            cm_eval_free(&e);
        }
    }
    oracle_kinds_free(&ok);
    cm_model m;
    if (rc == 0 && cm_fit(&s, &a.opt, &m, &err) == 0) {
        if (lodo_pred) calibrate_sections(&s, lodo_pred, &m);
        if (cm_save(&m, a.out, &err) == 0) {
            printf("wrote %s: %d section%s (", a.out, m.nsections, m.nsections == 1 ? "" : "s");
            for (int k = 0; k < m.nsections; k++)
                printf("%s%s %s, lambda %g, bo prior from %d problems", k ? "; " : "", m.sections[k].model,
                       m.sections[k].task, m.sections[k].ranker.lambda, m.sections[k].bo_problems);
            printf(") in %.1f s\n", rg_now() - t0);
        } else {
            rc = 1;
        }
        cm_model_free(&m);
    } else if (rc == 0) {
        rc = 1;
    }
    if (rc && err.msg[0]) fprintf(stderr, "explore fit: %s\n", err.msg);
    free(lodo_pred);
    cm_set_free(&s);
    return rc ? rc : store_failed;
}

/* ================================================================ explore pick ==== */

typedef struct pick_args {
    cp_problem p;            /* --db: the results store for the oracle (skipped when absent) */
    const char *cm, *space, *backend;
    xb_problem prob;
    int measure_top, show;
} pick_args;

static const char PICK_USAGE[] =
    "usage: explore pick --model M --dataset D [--task infer|train] [--dims IN,OUT] [--heads H]\n"
    "                    [--cm FILE] [--space S] [--measure-top K] [--show N] [--db PATH]\n"
    "                    [--backend gpu|sim[:...]] [--repeats N] [--warmup N] [--data-dir DIR]\n"
    "Ranks every valid config of the space for the dataset with the cost model: it needs only the\n"
    "graph (statistics and analytic counts of each variant, no GPU). With --measure-top K it then\n"
    "measures the K best predicted configs (GPU) and chooses the fastest. It prints the chosen\n"
    "config with its predicted and measured time and, when the results store (--db) has the oracle\n"
    "(the fastest measured config) for this problem on the model's device, the gap to it. The\n"
    "static list (the configs with the best geomean on the store's other datasets) comes with it and,\n"
    "when the store measured this problem, what the model, the static list and random search find\n"
    "in the same K measurements (K: --measure-top, else 10% of the space).\n";

/* -1 to go on; else the exit status. */
static int parse_pick(int argc, char **argv, pick_args *a)
{
    memset(a, 0, sizeof *a);
    cp_init(&a->p);
    a->cm = CM_DEFAULT_FILE;
    a->space = "default";
    a->show = 10;
    ro_cmd c;
    ro_init(&c, "explore pick", PICK_USAGE, NULL);
    cp_add_options(&c, &a->p, CP_PROBLEM | CP_DB | CP_REPEATS);
    ro_add(&c, (ro_opt){.name = "cm", .arg = "FILE", .kind = RO_STR, .dst = &a->cm, .help = "cost model file (default " CM_DEFAULT_FILE ", written by explore fit)"});
    ro_add(&c, (ro_opt){.name = "space", .arg = "S", .kind = RO_STR, .dst = &a->space, .help = "default, full or a space file (default: default)"});
    ro_add(&c, (ro_opt){.name = "measure-top", .arg = "K", .kind = RO_INT, .dst = &a->measure_top, .help = "measure the K best predicted configs", .lo = 1, .hi = 100000});
    ro_add(&c, (ro_opt){.name = "show", .arg = "N", .kind = RO_INT, .dst = &a->show, .help = "how many ranked configs to list (default 10)", .lo = 0, .hi = 100000});
    ro_add(&c, (ro_opt){.name = "backend", .arg = "B", .kind = RO_STR, .dst = &a->backend,
                        .help = "measurement backend for --measure-top (default gpu; sim[:...] simulates)"});
    int rc = ro_parse(&c, argc, argv);
    if (rc) return ro_exit(rc);
    rg_err err;
    if (!a->p.model) return ro_bad(c.name, "--model is required (rgat, hgt, rgcn or a .rgnn file)");
    if (!a->p.dataset) return ro_bad(c.name, "--dataset is required");
    if (cp_check(&a->p, &err) || cp_to_xb(&a->p, &a->prob, &err)) return ro_fail(c.name, &err);
    if (a->backend && strcmp(a->backend, "gpu") && strncmp(a->backend, "sim", 3))
        return ro_bad(c.name, "--backend must be gpu or sim[:...] (got '%s')", a->backend);
    return -1;
}

/* The valid configs of the space. */
static cg_config *space_configs(const char *spec, int *n, rg_err *err)
{
    sp_space sp;
    sp_point *pts;
    int np;
    if (sp_load(spec, &sp, err) || sp_enumerate(&sp, &pts, &np, err)) return NULL;
    cg_config *cfgs;
    *n = sp_valid_configs(&sp, pts, np, &cfgs, NULL);
    free(pts);
    return cfgs;
}

/* What the results store knows of this problem on the model's device: the oracle, and the stored
 * time of the chosen config. */
typedef struct known {
    int have_oracle;
    double oracle_ms, chosen_ms;
    char oracle_cfg[512];
    int64_t n_ok;
} known;

static void lookup_store(const char *db, const char *device, const xb_problem *p, const cg_config *chosen, known *k)
{
    memset(k, 0, sizeof *k);
    k->chosen_ms = NAN;
    if (!rg_file_exists(db)) return;
    rg_err err;
    rs_store *s = rs_open_read(db, &err);
    if (!s) {
        fprintf(stderr, "explore pick: no oracle lookup: %s\n", err.msg);
        return;
    }
    rs_filter f = {.model = p->model, .dataset = p->dataset, .task = p->task, .device_key = device, .system = "generated"};
    rs_best *best;
    size_t nb;
    if (rs_query_best(s, &f, &best, &nb, &err) == 0) {
        for (size_t i = 0; i < nb; i++)
            if (best[i].dim_in == p->dim_in && best[i].dim_out == p->dim_out && best[i].heads == p->heads &&
                isfinite(best[i].best_ms)) {
                k->have_oracle = 1;
                k->oracle_ms = best[i].best_ms;
                k->n_ok = best[i].n_ok;
                snprintf(k->oracle_cfg, sizeof k->oracle_cfg, "%s", best[i].config_json);
            }
        rs_best_free(best, nb);
    }
    rs_row *rows;
    size_t nr;
    char hex[17];
    rs_hash_hex(xs_variant_hash(chosen, p), hex);
    if (rs_query_measurements(s, &f, &rows, &nr, &err) == 0) {
        for (size_t i = 0; i < nr; i++)
            if (rows[i].status == RS_OK && !strcmp(rows[i].hash, hex)) k->chosen_ms = rows[i].median_ms;
        rs_rows_free(rows, nr);
    }
    rs_close(s);
}

static xb_backend *make_backend(const pick_args *a, xs_gpu_backend_fn gpu_backend, rg_err *err)
{
    if (a->backend && !strncmp(a->backend, "sim", 3)) return xb_sim_backend(a->backend, err);
    if (!gpu_backend) {
        rg_errf(err, "no CUDA device: this program was built without the GPU backend");
        return NULL;
    }
    return gpu_backend(err);
}

/* Measures the first K configs of the order; returns the index of the fastest ok one, or -1. */
static int measure_top(const pick_args *a, xs_gpu_backend_fn gpu_backend, const cm_model *m, const cg_config *cfgs,
                       const int *order, const double *pred, int k, double *meas, char *device, size_t cap, rg_err *err)
{
    xb_backend *b = make_backend(a, gpu_backend, err);
    if (!b) return -2;
    hg_stats st;
    if (b->prepare(b, &a->prob, &st, err)) {
        b->close(b);
        return -2;
    }
    char gpu[128] = "", drv[64], cuda[64], cupti[64];
    int sm = 0;
    b->device(b, gpu, sizeof gpu, &sm, drv, cuda, cupti, sizeof drv);
    char *dev = rs_device_key(gpu, sm);
    if (strcmp(dev, m->device))
        fprintf(stderr, "explore pick: note: measuring on '%s', the cost model was fitted on '%s'\n", dev, m->device);
    snprintf(device, cap, "%s", dev);
    free(dev);
    xb_options opt = {.warmup = a->p.warmup, .repeats = a->p.repeats};
    xb_result *r = rg_xmalloc(sizeof *r);
    int best = -1;
    printf("\nmeasuring the %d best predicted:\n%4s %12s %12s  %s\n", k, "rank", "predicted ms", "measured ms", "config");
    for (int i = 0; i < k; i++) {
        int c = order[i];
        meas[c] = NAN;
        xb_result_init(r);
        if (b->measure(b, &cfgs[c], &opt, r, err)) {
            best = -2;
            break;
        }
        char *cs = cfg_to_string(&cfgs[c]);
        if (r->status == RS_OK) {
            meas[c] = r->median_ms;
            printf("%4d %12.4f %12.4f  %s\n", i + 1, pred[c], r->median_ms, cs);
            if (best < 0 || meas[c] < meas[best]) best = c;
        } else {
            printf("%4d %12.4f %12s  %s\n", i + 1, pred[c], rs_status_name(r->status), cs);
        }
        free(cs);
    }
    free(r);
    b->close(b);
    return best;
}

static void print_ranking(const pick_args *a, const cm_model *m, const hg_graph *g, const cg_config *cfgs, int n,
                          const int *order, const double *pred)
{
    hg_stats st;
    hg_stats_compute(g, &st);
    printf("%s %s on %s (%lld nodes, %lld edges, %d relations, compaction ratio %.3f), dims %d,%d, heads %d\n",
           a->prob.model, a->prob.task, a->prob.dataset, (long long)st.nodes, (long long)st.edges, st.edge_types,
           st.compaction_ratio, a->prob.dim_in, a->prob.dim_out, a->prob.heads);
    printf("cost model %s (%s, fitted %s on '%s'): %d configs of space '%s' ranked\n", a->cm, m->source, m->created,
           m->device, n, a->space);
    int show = a->show < n ? a->show : n;
    if (show) printf("%4s %12s  %s\n", "rank", "predicted ms", "config");
    for (int i = 0; i < show; i++) {
        char *cs = cfg_to_string(&cfgs[order[i]]);
        if (isfinite(pred[order[i]])) printf("%4d %12.4f  %s\n", i + 1, pred[order[i]], cs);
        else printf("%4d %12s  %s\n", i + 1, "cannot build", cs);
        free(cs);
    }
}

/* device: where meas was measured (the oracle must be of the same device and backend: a
 * simulated time against a real GPU's oracle is no gap), or the model's device. */
static void print_choice(const pick_args *a, const char *device, const cg_config *cfg, double pred, double meas)
{
    known k;
    lookup_store(a->p.db, device, &a->prob, cfg, &k);
    if (!isfinite(meas)) meas = k.chosen_ms;
    char *cs = cfg_to_string(cfg);
    printf("\nchosen: %s\n  predicted %.4f ms", cs, pred);
    if (isfinite(meas)) printf(", measured %.4f ms%s", meas, a->measure_top ? "" : " (in the results store)");
    printf("\n");
    if (k.have_oracle) {
        printf("  oracle in %s: %.4f ms over %lld measured configs, %s\n", a->p.db, k.oracle_ms, (long long)k.n_ok,
               k.oracle_cfg);
        if (isfinite(meas)) printf("  gap to the oracle: %.3fx\n", meas / k.oracle_ms);
    } else {
        printf("  no oracle for this problem in %s on '%s'\n", a->p.db, device);
    }
    free(cs);
}

/* Time of cfg among the problem's samples, NaN when not measured. */
static double stored_ms(const cm_set *s, int q, const cg_config *cfg)
{
    uint64_t h = cfg_hash(cfg);
    for (int i = 0; i < s->nsamples; i++)
        if (s->samples[i].problem == q && s->samples[i].cfg_key == h) return s->samples[i].time_ms;
    return NAN;
}

static int cmp_ms(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* What model, static list and random search find in the same K measurements of problem q. */
static void print_same_k(const cm_set *s, int q, const cg_config *cfgs, const int *order, const cg_config *list,
                         int nlist, int k)
{
    double model_ms = NAN, static_ms = NAN, *t = rg_xmalloc((size_t)s->nsamples * sizeof *t);
    int nt = 0;
    for (int i = 0; i < k; i++) {
        double x = stored_ms(s, q, &cfgs[order[i]]);
        if (isfinite(x) && !(x >= model_ms)) model_ms = x;
        x = i < nlist ? stored_ms(s, q, &list[i]) : NAN;
        if (isfinite(x) && !(x >= static_ms)) static_ms = x;
    }
    for (int i = 0; i < s->nsamples; i++)
        if (s->samples[i].problem == q) t[nt++] = s->samples[i].time_ms;
    qsort(t, (size_t)nt, sizeof *t, cmp_ms);
    printf("at K = %d measurements, best found / oracle (this problem's %d stored configs; a config not stored finds "
           "nothing): model %.3f, static list %.3f, random search %.3f (expected)\n",
           k, nt, model_ms / t[0], static_ms / t[0], ys_random_expected(t, nt, k < nt ? k : nt) / t[0]);
    free(t);
}

/* The yardsticks at the model's K: the static list of this kind of problem on the store's other
 * datasets and, when the store measured this problem, what each of model, static list and random
 * search finds in K measurements. */
static void print_yardsticks(const pick_args *a, const cm_model *m, const char *task, const cg_config *cfgs, int n,
                             const int *order)
{
    int k = a->measure_top ? a->measure_top : (int)floor(0.10 * n + 1e-9);
    k = k < 1 ? 1 : k > n ? n : k;
    cm_set s;
    rg_err err;
    cm_filter f = {.model = a->prob.model, .task = task, .device = m->device};
    if (!rg_file_exists(a->p.db) || cm_set_load(a->p.db, &f, &s, &err)) {
        printf("\nno static list: %s\n", rg_file_exists(a->p.db) ? err.msg : "the results store is absent");
        return;
    }
    cm_problem kind = {.dim_in = a->prob.dim_in, .dim_out = a->prob.dim_out, .heads = a->prob.heads};
    snprintf(kind.model, sizeof kind.model, "%s", a->prob.model);
    snprintf(kind.task, sizeof kind.task, "%s", task);
    int *train = rg_xmalloc((size_t)s.nproblems * sizeof *train), self = -1;
    for (int q = 0; q < s.nproblems; q++) {
        train[q] = strcmp(s.problems[q].dataset, a->prob.dataset) != 0;
        if (!train[q] && s.problems[q].dim_in == kind.dim_in && s.problems[q].dim_out == kind.dim_out &&
            s.problems[q].heads == kind.heads)
            self = q;
    }
    cg_config *list;
    int nlist;
    if (cm_static_list(&s, train, &kind, &list, &nlist)) {
        printf("\nno static list: no config was measured on every other dataset of %s %s in %s\n", kind.model, kind.task,
               a->p.db);
    } else {
        char *first = cfg_to_string(&list[0]);
        printf("\nstatic list (best geomean over the other datasets in %s): %d configs, first %s\n", a->p.db, nlist, first);
        free(first);
        if (self >= 0) print_same_k(&s, self, cfgs, order, list, nlist, k);
        free(list);
    }
    free(train);
    cm_set_free(&s);
}

static int pick_run(const pick_args *a, xs_gpu_backend_fn gpu_backend, const cm_model *m, rg_err *err)
{
    if (!cm_find_section(m, a->prob.model, a->prob.task, err)) return 1;
    ds_options dopt = {.data_dir = a->p.data_dir, .quiet = 1};
    hg_graph *g = ds_open(a->prob.dataset, &dopt, err);
    if (!g) return 1;
    int n, rc = 0;
    cg_config *cfgs = space_configs(a->space, &n, err);
    if (!cfgs) {
        hg_free(g);
        return 2;
    }
    int *order = rg_xmalloc((size_t)(n ? n : 1) * sizeof *order);
    double *pred = rg_xmalloc((size_t)(n ? n : 1) * sizeof *pred), *meas = rg_xmalloc((size_t)(n ? n : 1) * sizeof *meas);
    for (int i = 0; i < n; i++) meas[i] = NAN;
    char measured_on[256] = "";
    if (n == 0) {
        rg_errf(err, "space '%s' has no valid config", a->space);
        rc = 1;
    } else if (cm_order(m, &a->prob, g, cfgs, n, order, pred, err)) {
        rc = 1;
    } else if (!isfinite(pred[order[0]])) {
        /* say why with the first config's own error */
        cm_counts c;
        cm_count(a->prob.model, a->prob.task, a->prob.dim_in, a->prob.dim_out, a->prob.heads, g, &cfgs[0], &c, err);
        rg_err_prefix(err, "no config of space '%s' can be built; the first fails with", a->space);
        rc = 1;
    } else {
        print_ranking(a, m, g, cfgs, n, order, pred);
        print_yardsticks(a, m, cm_find_section(m, a->prob.model, a->prob.task, NULL)->task, cfgs, n, order);
        int chosen = order[0];
        if (a->measure_top) {
            int k = a->measure_top < n ? a->measure_top : n;
            chosen = measure_top(a, gpu_backend, m, cfgs, order, pred, k, meas, measured_on, sizeof measured_on, err);
            if (chosen == -1) rg_errf(err, "none of the %d measured configs ran successfully", k);
            if (chosen < 0) rc = 1;
        }
        if (rc == 0) print_choice(a, measured_on[0] ? measured_on : m->device, &cfgs[chosen], pred[chosen], meas[chosen]);
    }
    free(order);
    free(pred);
    free(meas);
    free(cfgs);
    hg_free(g);
    return rc;
}

int cm_cli_pick(int argc, char **argv, xs_gpu_backend_fn gpu_backend)
{
    pick_args a;
    int parsed = parse_pick(argc, argv, &a);
    if (parsed >= 0) return parsed;
    rg_err err = {0};
    cm_model m;
    if (cm_load(a.cm, &m, &err)) {
        fprintf(stderr, "explore pick: %s\n", err.msg);
        return 1;
    }
    int rc = pick_run(&a, gpu_backend, &m, &err);
    if (rc) {
        /* "no CUDA device: ..." stays the first thing on its line, as everywhere else */
        if (!strncmp(err.msg, "no CUDA device:", 15)) fprintf(stderr, "%s\n", err.msg);
        else fprintf(stderr, "explore pick: %s\n", err.msg);
    }
    cm_model_free(&m);
    return rc;
}
