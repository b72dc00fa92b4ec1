/* `explore replay --db STORE --strategy S [--budget N | --budget-frac F] ...`: per problem and
 * strategy, best found / oracle at 1/2/5/10% of the space and the P-score; a summary per strategy
 * and, with --out, the curves as CSV. */
#include "cli/replaycli.h"
#include "cli/problem.h"
#include "explorer/search.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct replay_args {
    cp_problem p;              /* --db, --model, --task */
    const char *strategies, *device, *cm, *fit_db, *out, *summary_out;
    int budget, runs, seed, verbose;
    double budget_frac;
} replay_args;

static const char USAGE[] =
    "usage: explore replay [--db STORE] [--strategy S[,S...]|all] [--budget N | --budget-frac F]\n"
    "                      [--seed K] [--runs R] [--model M] [--task T] [--device KEY]\n"
    "                      [--cm lodo|loso|none|FILE] [--fit-db STORE] [--out CSV] [--summary-out CSV]\n"
    "                      [--verbose]\n"
    "Runs search strategies against the recorded measurements of a results store, without a GPU\n"
    "(the store is only read). The space of a problem (model, task, dataset, dims, heads, device)\n"
    "is its stored points: the ok ones of the commit that measured the most of them, and those\n"
    "whose every attempt failed; evaluating a failed point, or a config the store lacks, costs a\n"
    "unit of the budget and finds nothing. Problems of fewer than 10 points are left out.\n"
    "Strategies: random (the baseline), model (cost-model ranking), static (the static list: the\n"
    "configs with the best geomean on the OTHER datasets, or sizes with --cm loso, then random),\n"
    "anneal (model-guided simulated annealing, one-key mutations), bo (Bayesian optimisation).\n"
    "Each runs R times with seeds K, K+1, ...; the curve is the mean best found after each\n"
    "evaluation. Scores per problem: found / oracle after 1, 2, 5 and 10% of the space, and\n"
    "P = (random(t) - found(t)) / (random(t) - oracle) averaged over t = 1..budget (Willemsen et\n"
    "al., FGCS 2024), random(t) being the exact expectation of the best of t uniform draws: 0 is\n"
    "random search, 1 finds the oracle first. The summary is the geomean of found / oracle and\n"
    "the mean P over problems, then the same per model and task.\n"
    "--cm lodo (default) predicts each dataset with models fitted on the other datasets; --cm loso\n"
    "predicts each size (dims, heads) with models fitted on the other sizes, and the static list\n"
    "is then built from the other sizes too; a model file (explore fit's) fitted on the same store\n"
    "is in-sample. --fit-db STORE fits the models on another store (another GPU's measurements)\n"
    "without each problem's dataset: the transfer to this store's device and graph (the static\n"
    "list stays this store's other datasets).\n"
    "Each problem's oracle is named: exhaustive when the store measured every valid\n"
    "point of the space its points span (every combination of the values each key takes among\n"
    "them), else the best of the points measured; the summary counts both kinds.\n";

static int parse(int argc, char **argv, replay_args *a)
{
    memset(a, 0, sizeof *a);
    cp_init(&a->p);
    a->p.task = NULL;   /* a filter: every task */
    a->strategies = "all";
    a->cm = SR_CM_LODO;
    a->runs = 10;
    a->seed = 1;
    ro_cmd c;
    ro_init(&c, "explore replay", USAGE, NULL);
    cp_add_options(&c, &a->p, CP_DB | CP_MODEL | CP_TASK);
    ro_add(&c, (ro_opt){.name = "strategy", .arg = "S", .kind = RO_STR, .dst = &a->strategies,
                        .help = "random, model, static, anneal, bo, a comma list, or all (default)"});
    ro_add(&c, (ro_opt){.name = "budget", .arg = "N", .kind = RO_INT, .dst = &a->budget,
                        .help = "evaluations per problem (at most its space)", .lo = 1, .hi = 100000000});
    ro_add(&c, (ro_opt){.name = "budget-frac", .arg = "F", .kind = RO_REAL, .dst = &a->budget_frac,
                        .help = "evaluations as a fraction of each problem's space (default 0.1)", .lo = 1e-9, .hi = 1});
    ro_add(&c, (ro_opt){.name = "seed", .arg = "K", .kind = RO_INT, .dst = &a->seed, .help = "first seed (default 1)", .lo = 0, .hi = 2000000000});
    ro_add(&c, (ro_opt){.name = "runs", .arg = "R", .kind = RO_INT, .dst = &a->runs, .help = "seeds per strategy and problem (default 10)", .lo = 1, .hi = 100000});
    ro_add(&c, (ro_opt){.name = "device", .arg = "KEY", .kind = RO_STR, .dst = &a->device, .help = "device key, when the store holds several"});
    ro_add(&c, (ro_opt){.name = "cm", .arg = "M", .kind = RO_STR, .dst = &a->cm,
                        .help = "predictions: lodo (default), loso, none, or a cost model file"});
    ro_add(&c, (ro_opt){.name = "fit-db", .arg = "STORE", .kind = RO_STR, .dst = &a->fit_db,
                        .help = "fit the models on this other store (another device), leaving out each\nproblem's dataset"});
    ro_add(&c, (ro_opt){.name = "out", .arg = "CSV", .kind = RO_STR, .dst = &a->out, .help = "the curves: one row per strategy, problem and evaluation"});
    ro_add(&c, (ro_opt){.name = "summary-out", .arg = "CSV", .kind = RO_STR, .dst = &a->summary_out,
                        .help = "per strategy, geomean found / oracle against the share of the space\nmeasured (plots/search_replay.gp draws it)"});
    ro_add(&c, (ro_opt){.name = "verbose", .arg = NULL, .kind = RO_FLAG, .dst = &a->verbose, .help = "a table per problem too"});
    int rc = ro_parse(&c, argc, argv);
    if (rc) return ro_exit(rc);
    if (ro_given(&c, "budget") && ro_given(&c, "budget-frac"))
        return ro_bad(c.name, "--budget and --budget-frac exclude each other");
    if (!a->budget && !(a->budget_frac > 0)) a->budget_frac = 0.10;
    return -1;
}

/* The strategies named (comma list or "all"); NULL after a message when one is unknown. */
static const sr_strategy **strategies_of(const char *spec, int *n)
{
    const sr_strategy **list = rg_xmalloc((size_t)sr_nstrategies() * sizeof *list);
    *n = 0;
    if (!strcmp(spec, "all")) {
        for (int i = 0; i < sr_nstrategies(); i++) list[(*n)++] = sr_strategy_at(i);
        return list;
    }
    char *copy = rg_xstrdup(spec), *save = NULL;
    for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        const sr_strategy *s = sr_strategy_find(w);
        int dup = 0;
        for (int k = 0; s && k < *n; k++) dup |= list[k] == s;
        if (!s || dup) {
            rg_str names = {0};
            for (int i = 0; i < sr_nstrategies(); i++) rg_str_printf(&names, "%s%s", i ? ", " : "", sr_strategy_at(i)->name);
            ro_bad("explore replay", "--strategy: %s '%s' (strategies: %s, all)", s ? "twice:" : "unknown strategy", w, names.s);
            rg_str_free(&names);
            free(copy);
            free(list);
            return NULL;
        }
        list[(*n)++] = s;
    }
    free(copy);
    if (*n == 0) {
        ro_bad("explore replay", "--strategy: no strategy named");
        free(list);
        return NULL;
    }
    return list;
}

static int budget_of(const replay_args *a, const sr_problem *p)
{
    if (a->budget) return a->budget < p->n ? a->budget : p->n;
    return sr_frac_budget(a->budget_frac, p->n);
}

static void dims_text(const cm_problem *p, char *out, size_t cap)
{
    if (p->heads > 1) snprintf(out, cap, "%dx%dh%d", p->dim_in, p->dim_out, p->heads);
    else snprintf(out, cap, "%dx%d", p->dim_in, p->dim_out);
}

static void print_num(double v, const char *fmt)
{
    if (isfinite(v)) printf(fmt, v);
    else printf("%7s", "-");
}

static void print_fracs(const double *f)
{
    for (int k = 0; k < SR_NFRACS; k++) print_num(f[k], " %6.3f");
}

/* The exact random expectation at each fraction, over the oracle. */
static void random_fracs(const sr_problem *p, int budget, double *f)
{
    for (int k = 0; k < SR_NFRACS; k++) {
        int t = sr_frac_budget(SR_FRACS[k], p->n);
        f[k] = t <= budget ? sr_random_expected(p, t) / p->oracle_ms : NAN;
    }
}

static void csv_rows(FILE *f, const sr_set *set, const sr_problem *p, const char *strategy, const sr_result *r)
{
    for (int t = 1; t <= r->budget; t++)
        fprintf(f, "%s,%s,%s,\"%s\",%d,%d,%d,\"%s\",%d,%d,%.6g,%.9g,%.9g,%.9g,%.6f,%.6f\n", strategy, p->prob.model,
                p->prob.task, p->prob.dataset, p->prob.dim_in, p->prob.dim_out, p->prob.heads, set->device, p->n, t,
                (double)t / p->n, r->curve[t - 1], p->oracle_ms, sr_random_expected(p, t), r->curve[t - 1] / p->oracle_ms,
                sr_random_expected(p, t) / p->oracle_ms);
}

/* The summary curve: geomean over problems of found / oracle after each step of GRID_STEP of the
 * space (problems whose budget does not reach a step leave it). */
#define GRID_STEP 0.005
#define GRID_MAX 200
typedef struct grid {
    double log_sum[GRID_MAX];
    int n[GRID_MAX];
} grid;

static void grid_add(grid *g, const sr_problem *p, const double *curve, int budget)
{
    for (int j = 0; j < GRID_MAX; j++) {
        int t = sr_frac_budget((j + 1) * GRID_STEP, p->n);
        if (t > budget || (j + 1) * GRID_STEP * p->n < 1 - 1e-9) continue;
        g->log_sum[j] += log(curve[t - 1] / p->oracle_ms);
        g->n[j]++;
    }
}

static void grid_write(FILE *f, const grid *g, int series, const char *name, int problems)
{
    for (int j = 0; j < GRID_MAX; j++)
        if (g->n[j] == problems && problems > 0)
            fprintf(f, "%d,%s,%.2f,%.6f\n", series, name, 100 * (j + 1) * GRID_STEP, exp(g->log_sum[j] / g->n[j]));
}

/* Geomean of found / oracle per fraction and mean P over the problems, per strategy. */
typedef struct summary {
    double log_frac[SR_NFRACS], p_sum;
    int n_frac[SR_NFRACS], n_p, problems;
} summary;

static void summary_add(summary *s, const double *fracs, double p)
{
    s->problems++;
    for (int k = 0; k < SR_NFRACS; k++)
        if (isfinite(fracs[k])) {
            s->log_frac[k] += log(fracs[k]);
            s->n_frac[k]++;
        }
    if (isfinite(p)) {
        s->p_sum += p;
        s->n_p++;
    }
}

/* The geomeans per fraction and the mean P (NaN where no problem counts). */
static void summary_values(const summary *s, double *f, double *p)
{
    for (int k = 0; k < SR_NFRACS; k++) f[k] = s->n_frac[k] ? exp(s->log_frac[k] / s->n_frac[k]) : NAN;
    *p = s->n_p ? s->p_sum / s->n_p : NAN;
}

/* A replay's scores: per strategy (the last one random's exact expectation) over every problem and
 * per (model, task), and how each problem's oracle is known. */
typedef struct replay_scores {
    int nst;                   /* strategies run; the summaries have nst + 1 columns */
    summary *all;              /* [nst + 1] */
    int ngroups;
    cm_problem *group;         /* [ngroups]: model and task of each group */
    summary *by_group;         /* [ngroups * (nst + 1)] */
    int *group_exhaustive;     /* [ngroups] problems whose oracle is exhaustive */
    unsigned char *exhaustive; /* [problems of the set] */
    grid *curves;              /* [nst + 1] */
} replay_scores;

static int group_of(replay_scores *rs, const cm_problem *p)
{
    for (int g = 0; g < rs->ngroups; g++)
        if (!strcmp(rs->group[g].model, p->model) && !strcmp(rs->group[g].task, p->task)) return g;
    int g = rs->ngroups++;
    rs->group = rg_xrealloc(rs->group, (size_t)rs->ngroups * sizeof *rs->group);
    rs->group[g] = *p;
    rs->by_group = rg_xrealloc(rs->by_group, (size_t)rs->ngroups * (size_t)(rs->nst + 1) * sizeof *rs->by_group);
    memset(&rs->by_group[(size_t)g * (size_t)(rs->nst + 1)], 0, (size_t)(rs->nst + 1) * sizeof *rs->by_group);
    rs->group_exhaustive = rg_xrealloc(rs->group_exhaustive, (size_t)rs->ngroups * sizeof *rs->group_exhaustive);
    rs->group_exhaustive[g] = 0;
    return g;
}

static void scores_free(replay_scores *rs)
{
    free(rs->all);
    free(rs->group);
    free(rs->by_group);
    free(rs->group_exhaustive);
    free(rs->exhaustive);
    free(rs->curves);
    memset(rs, 0, sizeof *rs);
}

static void print_problem_row(const sr_problem *p, const char *strategy, const double *fracs, double score)
{
    char dims[48], oracle[64];
    dims_text(&p->prob, dims, sizeof dims);
    printf("%-6s %-6s %-18s %-9s %6d %10.4f %-20s %-18s", p->prob.model, p->prob.task, p->prob.dataset, dims, p->n,
           p->oracle_ms, sr_oracle_label(p, oracle, sizeof oracle), strategy);
    print_fracs(fracs);
    print_num(score, " %7.3f");
    printf("\n");
}

/* Runs every strategy on every problem of the set (verbose: a row per problem and strategy). */
static void replay_run(const replay_args *a, const sr_set *set, const sr_strategy **st, int nst, FILE *csv,
                       replay_scores *rs)
{
    memset(rs, 0, sizeof *rs);
    rs->nst = nst;
    rs->all = rg_xcalloc((size_t)nst + 1, sizeof *rs->all);
    rs->curves = rg_xcalloc((size_t)nst + 1, sizeof *rs->curves);
    rs->exhaustive = rg_xcalloc((size_t)(set->n ? set->n : 1), 1);
    if (a->verbose)
        printf("\n%-6s %-6s %-18s %-9s %6s %10s %-20s %-18s %6s%% %6s%% %6s%% %6s%% %7s\n", "model", "task", "dataset",
               "dims", "points", "oracle ms", "oracle", "strategy", "1", "2", "5", "10", "P");
    for (int q = 0; q < set->n; q++) {
        const sr_problem *p = &set->problems[q];
        int budget = budget_of(a, p), g = group_of(rs, &p->prob);
        summary *gs = &rs->by_group[(size_t)g * (size_t)(nst + 1)];
        rs->exhaustive[q] = (unsigned char)sr_oracle_exhaustive(p, NULL);
        rs->group_exhaustive[g] += rs->exhaustive[q];
        double rf[SR_NFRACS];
        random_fracs(p, budget, rf);
        summary_add(&rs->all[nst], rf, 0);
        summary_add(&gs[nst], rf, 0);
        double *expected = rg_xmalloc((size_t)budget * sizeof *expected);
        for (int t = 1; t <= budget; t++) expected[t - 1] = sr_random_expected(p, t);
        grid_add(&rs->curves[nst], p, expected, budget);
        free(expected);
        for (int k = 0; k < nst; k++) {
            sr_result r;
            sr_replay(st[k], p, budget, (uint64_t)a->seed, a->runs, &r);
            summary_add(&rs->all[k], r.at_frac, r.p_score);
            summary_add(&gs[k], r.at_frac, r.p_score);
            grid_add(&rs->curves[k], p, r.curve, budget);
            if (a->verbose) print_problem_row(p, st[k]->name, r.at_frac, r.p_score);
            if (csv) csv_rows(csv, set, p, st[k]->name, &r);
            sr_result_free(&r);
        }
    }
}

static int count_exhaustive(const replay_scores *rs, int nproblems)
{
    int n = 0;
    for (int q = 0; q < nproblems; q++) n += rs->exhaustive[q];
    return n;
}

static void summary_print(const char *name, const summary *s)
{
    double f[SR_NFRACS], p;
    summary_values(s, f, &p);
    printf("%-18s %8d", name, s->problems);
    print_fracs(f);
    print_num(p, " %7.3f");
    printf("\n");
}

static void summary_header(const char *title, const char *first)
{
    printf("\n%s\n%-18s %8s %6s%% %6s%% %6s%% %6s%% %7s\n", title, first, "problems", "1", "2", "5", "10", "P");
}

static const char ORACLE_NOTE[] =
    "exhaustive: the store measured every valid point of the space its points span (every combination "
    "of the values each key takes among them); else the oracle is the best of the points measured";

static void replay_print(const sr_set *set, const sr_strategy **st, const replay_scores *rs)
{
    int nst = rs->nst, ex = count_exhaustive(rs, set->n);
    printf("\noracles: %d problem%s exhaustive, %d best of the points measured (%s)\n", ex, ex == 1 ? "" : "s",
           set->n - ex, ORACLE_NOTE);
    summary_header("summary: geomean over problems of best found / oracle after 1/2/5/10% of each space; mean P over the budget",
                   "strategy");
    for (int k = 0; k < nst; k++) summary_print(st[k]->name, &rs->all[k]);
    summary_print("random (expected)", &rs->all[nst]);
    for (int g = 0; g < rs->ngroups; g++) {
        char title[600];
        const summary *gs = &rs->by_group[(size_t)g * (size_t)(nst + 1)];
        snprintf(title, sizeof title, "%s %s: %d problems, %d with an exhaustive oracle", rs->group[g].model,
                 rs->group[g].task, gs[nst].problems, rs->group_exhaustive[g]);
        summary_header(title, "strategy");
        for (int k = 0; k < nst; k++) summary_print(st[k]->name, &gs[k]);
        summary_print("random (expected)", &gs[nst]);
    }
}

static int replay(const replay_args *a, const sr_set *set, const sr_strategy **st, int nst, FILE *csv, FILE *sumcsv)
{
    replay_scores rs;
    replay_run(a, set, st, nst, csv, &rs);
    replay_print(set, st, &rs);
    if (sumcsv) {
        fputs("series,strategy,percent_of_space,found_over_oracle\n", sumcsv);
        for (int k = 0; k <= nst; k++) grid_write(sumcsv, &rs.curves[k], k, k < nst ? st[k]->name : "random-expected", set->n);
    }
    scores_free(&rs);
    return 0;
}

/* ---------------------------------------------------------------- markdown (perf-tables) ---- */

static void md_num(FILE *out, double v, const char *fmt)
{
    if (isfinite(v)) fprintf(out, fmt, v);
    else fputs(" - |", out);
}

static void md_summary_row(FILE *out, const char *lead, const char *name, const summary *s)
{
    double f[SR_NFRACS], p;
    summary_values(s, f, &p);
    fprintf(out, "|%s %s | %d |", lead, name, s->problems);
    for (int k = 0; k < SR_NFRACS; k++) md_num(out, f[k], " %.3f |");
    md_num(out, p, " %.3f |");
    fputc('\n', out);
}

static void md_header(FILE *out, const char *lead_cols, int nlead)
{
    fprintf(out, "|%s strategy | problems | 1%% | 2%% | 5%% | 10%% | P |\n|", lead_cols);
    for (int k = 0; k < nlead + 7; k++) fputs("---|", out);
    fputc('\n', out);
}

static void md_problems(FILE *out, const sr_set *set)
{
    fprintf(out, "\nEach problem's oracle:\n\n| model | task | dataset | dims | points | oracle ms | oracle |\n"
                 "|---|---|---|---|---|---|---|\n");
    for (int q = 0; q < set->n; q++) {
        const sr_problem *p = &set->problems[q];
        char dims[48], oracle[64];
        dims_text(&p->prob, dims, sizeof dims);
        fprintf(out, "| %s | %s | %s | %s | %d | %.4f | %s |\n", p->prob.model, p->prob.task, p->prob.dataset, dims, p->n,
                p->oracle_ms, sr_oracle_label(p, oracle, sizeof oracle));
    }
}

static void md_write(FILE *out, const replay_args *a, const sr_set *set, const sr_strategy **st, const replay_scores *rs)
{
    int nst = rs->nst, ex = count_exhaustive(rs, set->n);
    fprintf(out, "\n#### %s\n\n", a->p.db);
    fprintf(out, "Store `%s`, device %s: %d problems of at least %d stored points; budget %g of each space; seeds "
                 "%d..%d; predictions: %s. The same numbers: `build/explore replay --db %s --strategy all --budget-frac %g "
                 "--seed %d --runs %d --cm %s%s%s`.\n\n",
            a->p.db, set->device, set->n, SR_MIN_POINTS, a->budget_frac, a->seed, a->seed + a->runs - 1,
            set->model_source, a->p.db, a->budget_frac, a->seed, a->runs, a->cm, a->fit_db ? " --fit-db " : "",
            a->fit_db ? a->fit_db : "");
    fprintf(out, "Oracles: %d problem%s exhaustive, %d best of the points measured (%s). The prior of `bo` is calibrated "
                 "on the model's held-out errors for %d of the %d problems; `bo-fixed` has one prior sd for every feature.\n\n",
            ex, ex == 1 ? "" : "s", set->n - ex, ORACLE_NOTE, set->calibrated, set->n);
    md_header(out, "", 0);
    for (int k = 0; k < nst; k++) md_summary_row(out, "", st[k]->name, &rs->all[k]);
    md_summary_row(out, "", "random (expected)", &rs->all[nst]);
    fprintf(out, "\nBy model and task (oracles: exhaustive / problems):\n\n");
    md_header(out, " model | task | oracles |", 3);
    for (int g = 0; g < rs->ngroups; g++) {
        const summary *gs = &rs->by_group[(size_t)g * (size_t)(nst + 1)];
        char lead[600];
        snprintf(lead, sizeof lead, " %s | %s | %d / %d |", rs->group[g].model, rs->group[g].task, rs->group_exhaustive[g],
                 gs[nst].problems);
        for (int k = 0; k < nst; k++) md_summary_row(out, lead, st[k]->name, &gs[k]);
        md_summary_row(out, lead, "random (expected)", &gs[nst]);
    }
    md_problems(out, set);
}

int sr_cli_replay_markdown(const char *db, const char *fit_db, FILE *out, rg_err *err)
{
    replay_args a;
    memset(&a, 0, sizeof a);
    cp_init(&a.p);
    a.p.db = db;
    a.fit_db = fit_db;
    a.p.task = NULL;
    a.cm = SR_CM_LODO;
    a.budget_frac = 0.10;
    a.seed = 1;
    a.runs = 10;
    int nst = sr_nstrategies();
    const sr_strategy **st = rg_xmalloc((size_t)nst * sizeof *st);
    for (int k = 0; k < nst; k++) st[k] = sr_strategy_at(k);
    sr_set set;
    sr_load_options o = {.cm = a.cm, .fit_db = fit_db};
    if (sr_load(db, &o, &set, err)) {
        free(st);
        return -1;
    }
    replay_scores rs;
    replay_run(&a, &set, st, nst, NULL, &rs);
    md_write(out, &a, &set, st, &rs);
    scores_free(&rs);
    sr_set_free(&set);
    free(st);
    return 0;
}

int sr_cli_replay(int argc, char **argv)
{
    replay_args a;
    int parsed = parse(argc, argv, &a);
    if (parsed >= 0) return parsed;
    int nst;
    const sr_strategy **st = strategies_of(a.strategies, &nst);
    if (!st) return 2;
    rg_err err = {0};
    sr_set set;
    int reads_prior = 0;
    for (int k = 0; k < nst; k++) reads_prior |= st[k]->reads_prior;
    sr_load_options o = {.model = a.p.model, .task = a.p.task, .device = a.device, .cm = a.cm, .fit_db = a.fit_db,
                         .no_prior = !reads_prior};
    if (sr_load(a.p.db, &o, &set, &err)) {
        fprintf(stderr, "explore replay: %s\n", err.msg);
        free(st);
        return 1;
    }
    FILE *csv = NULL, *sumcsv = NULL;
    if ((a.out && !(csv = fopen(a.out, "w"))) || (a.summary_out && !(sumcsv = fopen(a.summary_out, "w")))) {
        fprintf(stderr, "explore replay: %s: %s\n", csv || !a.out ? a.summary_out : a.out, strerror(errno));
        if (csv) fclose(csv);
        sr_set_free(&set);
        free(st);
        return 2;
    }
    if (csv)
        fputs("strategy,model,task,dataset,dim_in,dim_out,heads,device,points,evaluations,fraction,found_ms,oracle_ms,"
              "random_ms,found_over_oracle,random_over_oracle\n", csv);
    printf("replay of %s on '%s': %d problems; budget ", a.p.db, set.device, set.n);
    if (a.budget) printf("%d evaluations", a.budget);
    else printf("%g of each space", a.budget_frac);
    printf("; seeds %d..%d; predictions: %s\n", a.seed, a.seed + a.runs - 1, set.model_source);
    if (reads_prior)
        printf("bo's prior: calibrated on the model's held-out errors for %d of %d problems (bo-fixed: one sd for all)\n",
               set.calibrated, set.n);
    int rc = replay(&a, &set, st, nst, csv, sumcsv);
    FILE *files[2] = {csv, sumcsv};
    const char *names[2] = {a.out, a.summary_out};
    for (int k = 0; k < 2; k++) {
        if (!files[k]) continue;
        if (fclose(files[k])) {
            fprintf(stderr, "explore replay: %s: %s\n", names[k], strerror(errno));
            rc = 1;
        } else {
            printf("wrote %s\n", names[k]);
        }
    }
    sr_set_free(&set);
    free(st);
    return rc;
}
