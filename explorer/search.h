/* Search strategies under a budget (random, model ranking, static list, model-guided annealing,
 * Bayesian optimisation), replayed against a results store's recorded measurements without a GPU. */
#ifndef SR_SEARCH_H
#define SR_SEARCH_H

#include "explorer/costmodel.h"

/* One point of a problem's space as the store recorded it. */
typedef struct sr_point {
    cg_config cfg;
    uint64_t key;              /* cfg_hash(&cfg) */
    double time_ms;            /* the median; NaN: not measurable (the point failed or is invalid) */
    double pred_ms;            /* the cost model's prediction; NaN: none */
} sr_point;

/* One problem (model, task, dataset, dims, heads on the set's device): its space is its stored
 * points. A config the store lacks counts as not measurable: evaluating it costs a unit and finds
 * nothing. */
typedef struct sr_problem {
    cm_problem prob;
    sr_point *points;
    int n, cap;
    int *by_key;               /* point indices sorted by key (lookups) */
    double oracle_ms;          /* fastest measurable point */
    double worst_ms;           /* slowest measurable point: what "nothing found yet" scores as */
    double *sorted_ms;         /* [n] measurable times ascending, then worst_ms for each unmeasurable one */
    cg_config *static_list;    /* the static list of this problem's kind on the OTHER datasets, best first */
    int nstatic;
    double *prior_sd;          /* [CAL_NFEAT] bo's prior calibrated on held-out problems (explorer/calib.h):
                                  [0] the surrogate's noise sd, [j] the prior sd of weight j; NULL: the
                                  fixed prior (SR_BO_W_SD for every weight, 5% noise) */
    int closed;                /* the points are every config worth evaluating (a live search's valid points
                                  for its problem): anneal proposes no other; 0 in replay, where a config the
                                  store lacks stands for one a search would have measured */
} sr_problem;

typedef struct sr_set {
    sr_problem *problems;
    int n;
    char device[256], source[1024];
    char model_source[1024];   /* where the predictions come from */
    int calibrated;            /* problems whose bo prior is calibrated */
} sr_set;

#define SR_CM_LODO "lodo"      /* predictions of models fitted without the problem's dataset */
#define SR_CM_LOSO "loso"      /* predictions of models fitted without the problem's size (dims, heads) */
#define SR_CM_NONE "none"      /* no predictions: model-guided strategies lose their prior */
#define SR_MIN_POINTS 10       /* problems with fewer stored points (spot checks) are not searched */
/* bo's prior sd of a feature's effect beyond what the model predicts, where no calibration says more */
#define SR_BO_W_SD 0.25

typedef struct sr_load_options {
    const char *model, *task, *device;   /* filters; NULL: any (several devices need one chosen) */
    const char *cm;            /* SR_CM_LODO (NULL), SR_CM_LOSO, SR_CM_NONE or a model file (explore fit's) */
    const char *fit_db;        /* non-NULL: predictions of models fitted on this other store (another
                                  device's measurements) without the problem's dataset; cm must be lodo */
    int no_prior;              /* leave bo's prior uncalibrated (no strategy of the run reads it): the
                                  calibration's fits are skipped */
} sr_load_options;

/* Reads the problems of a store (only read: rs_open_read) with at least SR_MIN_POINTS points:
 * the ok measurements the cost model reads (cm_set_load: per problem the commit that measured the
 * most configs), plus the configs whose every attempt failed, as unmeasurable points; predictions
 * as o->cm says; each problem's static list from the other datasets (leave-one-dataset-out), or
 * with SR_CM_LOSO from the other sizes of its model and task (leave-one-size-out). */
int sr_load(const char *db, const sr_load_options *o, sr_set *out, rg_err *err);
/* Adds to the set's problems the configs whose every attempt in the store failed (unmeasurable
 * points; what sr_load adds to the cm_set's measurements). */
int sr_load_failed(const char *db, sr_set *s, rg_err *err);
/* A set from a cm_set already in memory (tests): every problem with at least min_points samples,
 * predictions pred[i] per sample (NULL: none), no unmeasurable points. */
void sr_from_cm_set(const cm_set *s, const double *pred, int min_points, sr_set *out);
/* Appends an unmeasurable point to problem q (a config whose attempts failed). */
void sr_add_failed(sr_set *s, int q, const cg_config *cfg);
void sr_set_free(sr_set *s);
/* A problem whose space is the given candidates (a live search): point i is cfgs[i], with
 * pred_ms[i] (NULL: no predictions) and no recorded time; no static list. */
void sr_problem_init(sr_problem *p, const cm_problem *prob, const cg_config *cfgs, const double *pred_ms, int n);
/* The same with point k's config from at(ctx, k, &cfg): a caller that can rebuild its configs (a space's
 * points from their numbers) need not hold them all beside the problem's own copies. */
typedef void (*sr_config_fn)(void *ctx, int k, cg_config *out);
void sr_problem_init_from(sr_problem *p, const cm_problem *prob, sr_config_fn at, void *ctx, const double *pred_ms,
                          int n);
void sr_problem_free(sr_problem *p);
/* The point of p with this config, or -1 when the store lacks it. */
int sr_find(const sr_problem *p, const cg_config *cfg);

/* ---- The oracle ---- */
/* 1 when the store measured (ok or failed) every valid point of p's space, so that its oracle is the
 * true optimum: the space being the one a sweep of the stored points enumerated, every combination
 * of the values each key takes among them (explorer/space.c's product, cfg_validate's pruning).
 * A spot check (fewer than SR_MIN_POINTS points) spans little more than itself and never counts.
 * nvalid (may be NULL) receives that space's valid points (-1: not enumerated, a spot check or too large). */
int sr_oracle_exhaustive(const sr_problem *p, int *nvalid);
/* "exhaustive", or "best of N measured" (N: p's measurable points), in buf. */
const char *sr_oracle_label(const sr_problem *p, char *buf, size_t cap);

/* ---- Strategies ---- */
typedef struct sr_run sr_run;
/* A strategy spends the budget with sr_evaluate until sr_left is 0. */
typedef void (*sr_strategy_fn)(sr_run *r);
typedef struct sr_strategy {
    const char *name, *summary;
    sr_strategy_fn run;
    int reads_prior;           /* reads sr_problem.prior_sd (bo): the prior is worth calibrating */
} sr_strategy;
int sr_nstrategies(void);
const sr_strategy *sr_strategy_at(int i);
const sr_strategy *sr_strategy_find(const char *name);   /* NULL: unknown */

/* Measures cfg on the run's problem through the run's evaluator: its time, or NaN when it is not
 * measurable (failed, invalid, or not in the store). Each call costs one unit of the budget,
 * unless the evaluator stops the search without evaluating. */
double sr_evaluate(sr_run *r, const cg_config *cfg);
/* Units left; 0 once the evaluator has stopped the search. */
int sr_left(const sr_run *r);

/* ---- Evaluators: where an evaluation's time comes from (replay: the store; a live sweep:
 * a measurement) ---- */
typedef enum sr_eval_status {
    SR_EVAL_NEXT,              /* evaluated (*time_ms, NaN: not measurable); the search goes on */
    SR_EVAL_LAST,              /* evaluated, and the search stops after it (a time limit ran out) */
    SR_EVAL_STOP,              /* nothing evaluated, no unit spent: the search stops now (interrupted, or
                                  measuring broke) */
} sr_eval_status;
/* point: the index of cfg in p->points, -1 when cfg is not one of the problem's points. */
typedef sr_eval_status (*sr_eval_fn)(void *ctx, const sr_problem *p, int point, const cg_config *cfg,
                                     double *time_ms);
typedef struct sr_evaluator {
    sr_eval_fn fn;
    void *ctx;
} sr_evaluator;

/* Runs the strategy on p with the budget (1..p->n) and seed; best[t] receives the best time found
 * after t + 1 evaluations, NaN while nothing was found. Deterministic for a given seed. Replay:
 * each evaluation is the point's recorded time. */
void sr_search(const sr_strategy *s, const sr_problem *p, int budget, uint64_t seed, double *best);
/* The same with each evaluation answered by ev (NULL: replay's). Returns the evaluations made:
 * fewer than budget when the strategy ran out of points or ev stopped the search (best[t] after
 * them repeats the last best). */
int sr_search_eval(const sr_strategy *s, const sr_problem *p, int budget, uint64_t seed, const sr_evaluator *ev,
                   double *best);

/* ---- Scores ---- */
#define SR_NFRACS 4
extern const double SR_FRACS[SR_NFRACS];   /* 1%, 2%, 5%, 10% of the space */
/* Evaluations that are `frac` of a space of n points: floor(frac n), at least 1. */
int sr_frac_budget(double frac, int n);
/* Random search's expected best after t draws without replacement (exact; unmeasurable points
 * count as the worst measurable time). */
double sr_random_expected(const sr_problem *p, int t);
/* The P-score of Willemsen et al. (FGCS 2024): the mean over t = 1..budget of
 * (random(t) - found(t)) / (random(t) - oracle), found[t - 1] NaN counting as the worst time; the
 * t where random(t) is already the oracle are left out. 0 for random search's expectation, 1 for a
 * search that finds the oracle first; NaN when no t counts. */
double sr_p_score(const sr_problem *p, const double *found, int budget);

/* One strategy on one problem, over several seeds. */
typedef struct sr_result {
    int budget, runs;
    double *curve;             /* [budget]: mean over runs of the best found after t + 1 evaluations
                                  (nothing found counts as worst_ms) */
    double at_frac[SR_NFRACS]; /* curve at sr_frac_budget / oracle; NaN beyond the budget */
    double p_score;
} sr_result;
/* runs seeds: seed, seed + 1, ... */
void sr_replay(const sr_strategy *s, const sr_problem *p, int budget, uint64_t seed, int runs, sr_result *out);
void sr_result_free(sr_result *r);

#endif
