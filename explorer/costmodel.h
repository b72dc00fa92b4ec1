/* Cost models that pick a config per dataset without a full sweep: features from graph statistics,
 * config and IR counts; a robust per-category analytic model and a ridge ranking model (GSL). */
#ifndef CM_COSTMODEL_H
#define CM_COSTMODEL_H

#include "codegen/config.h"
#include "datasets/hgraph.h"
#include "measure/backend.h"
#include "explorer/space.h"

/* Kernel categories of the analytic model; a store category other than gemm/traversal counts as other. */
enum { CM_GEMM, CM_TRAVERSAL, CM_OTHER, CM_NCAT };
const char *cm_category_name(int cat);
int cm_category_of(const char *name);   /* CM_GEMM, CM_TRAVERSAL or CM_OTHER */

/* Device constants stored with a model: H100 copy bandwidth and SGEMM throughput. */
#define CM_DEFAULT_BW 3.0e12
#define CM_DEFAULT_PEAK 51.6e12
#define CM_DEFAULT_FILE "results/costmodel.txt"

/* One problem: a model on a dataset with dims, heads and task. */
typedef struct cm_problem {
    char model[256], task[8], dataset[256];
    int dim_in, dim_out, heads;
    hg_stats stats;
} cm_problem;

/* Analytic counts of one variant (codegen/counts.c): totals over the whole run, and the number
 * of kernels of each category (the category model's launch term). */
typedef struct cm_counts {
    double flops, bytes, atomics, launches;
    double cat_launches[CM_NCAT];
} cm_counts;

/* One measured variant. */
typedef struct cm_sample {
    int problem;               /* index into cm_set.problems */
    cg_config cfg;
    cm_counts counts;
    double time_ms;            /* median of the whole variant */
    double cat_ms[CM_NCAT];    /* per category; NaN unknown */
    uint64_t cfg_key;          /* cfg_hash(&cfg), filled by cm_set_add */
    int64_t measurement_id;    /* the store row it was read from; 0: not from a store */
} cm_sample;

/* Training data: problems and their measured variants (ok measurements only). */
typedef struct cm_set {
    cm_problem *problems;
    int nproblems, cap_problems;
    cm_sample *samples;
    int nsamples, cap_samples;
    char device[256];          /* device key of the measurements */
    char source[1024];         /* where they come from (database path) */
    int skipped;               /* measurements left out: no statistics or no analytic counts */
} cm_set;

/* Returns the problem's index, adding it when new (same model, task, dataset, dims, heads). */
int cm_set_problem(cm_set *s, const cm_problem *p);
/* Appends a sample (cm_set_load keeps only the newest measurement of each problem and config). */
void cm_set_add(cm_set *s, const cm_sample *x);
/* A copy of s without the problems on `dataset` (a leave-one-dataset-out training set taken from
 * another store). */
void cm_set_without_dataset(const cm_set *s, const char *dataset, cm_set *out);
/* A copy of s without the problems of one size (dims and heads). */
void cm_set_without_size(const cm_set *s, int dim_in, int dim_out, int heads, cm_set *out);
void cm_set_free(cm_set *s);

typedef struct cm_filter {
    const char *model, *task, *device;   /* NULL: any (several devices in the database is an error) */
} cm_filter;
/* Reads the ok measurements of generated variants with their dataset statistics, kernel times
 * per category and analytic counts (metrics analytic_flops/_bytes/_atomics/_launches, or the
 * sweep's flops/bytes/atomics/launches). */
int cm_set_load(const char *db_path, const cm_filter *f, cm_set *out, rg_err *err);

/* ---- Features ---- */
/* Problem features (each interacts with every config feature), config encodings, analytic counts,
 * and their products: a fixed list, named in the model file. */
int cm_nfeatures(void);
const char *cm_feature_name(int i);
/* x[cm_nfeatures()]; log_pred_a is the log of the analytic model's prediction (ms). */
void cm_features(const cm_problem *p, const cg_config *c, const cm_counts *k, double log_pred_a, double *x);

/* ---- (a) The analytic model: per category t = a*bytes/BW + b*flops/peak + c*launches + d (ms),
 * bytes/BW and flops/peak in ms, fitted robustly (bisquare); "total" fits the whole time. ---- */
enum { CM_A_BYTES, CM_A_FLOPS, CM_A_LAUNCH, CM_A_CONST, CM_A_NCOEF };
typedef struct cm_analytic {
    double bw, peak;
    double coef[CM_NCAT + 1][CM_A_NCOEF];   /* [CM_NCAT] is the total model */
    int rows[CM_NCAT + 1];                   /* training rows; 0: not fitted */
    double sigma[CM_NCAT + 1];               /* robust residual scale (ms) */
} cm_analytic;

/* Fits on the samples with use[i] != 0 (use NULL: all). robust = 0 gives ordinary least squares
 * (for comparison). Categories with too few rows stay unfitted; -1 only if nothing can be fitted. */
int cm_fit_analytic(const cm_set *s, const int *use, double bw, double peak, int robust, cm_analytic *out,
                    rg_err *err);
/* Predicted time (ms): the sum over fitted categories (each at least 0), or the total model when
 * no category is fitted; at least 1 us. cat_ms (may be NULL) receives the per-category terms. */
double cm_analytic_predict(const cm_analytic *a, const cm_counts *k, double cat_ms[CM_NCAT]);

/* ---- (b) The ranking model: ridge regression of log time on the features, within each problem
 * (features and log times centred per problem, so it learns how configs differ on a graph);
 * the level comes from the analytic model plus a fitted log shift. ---- */
typedef struct cm_ranker {
    int nfeat;
    double *coef;              /* [nfeat], in the features' own units */
    double lambda;             /* ridge parameter on standardized features */
    double level_shift;        /* mean log(measured / analytic) over training problems */
} cm_ranker;

typedef struct cm_fit_options {
    double bw, peak;           /* 0: the H100 defaults */
    double lambda;             /* < 0: chosen by leave-one-dataset-out inside the training set */
    double weight_tau;         /* ranking rows weigh e^-(log time - log best)/tau; 0: all alike */
    int top_k;                 /* evaluation: measure the K best predicted; 0: top_frac of the candidates */
    double top_frac;           /* 0: 0.10 */
    int ordinary;              /* analytic model by ordinary least squares (tests) */
} cm_fit_options;
/* The ranking fit is for finding the few best configs: rows far from their problem's best
 * weigh little (tau 0.5: a config 2x slower than the best weighs 0.25, 10x slower 0.01).
 * Unweighted, the 20-50x slower node-centric variants dominated the squared error. */
#define CM_WEIGHT_TAU 0.5
void cm_fit_options_default(cm_fit_options *o);

/* The config bits that enter the models in pairs too: the first 22. Those appended in session 27
 * (softmax, mma, vec, lanes) enter alone (and, in the ranking model, times the problem features): their
 * pairs would add 260 columns, and the fits' decompositions grow as the cube of the columns (make
 * perf-tables took 4x as long with them; docs/perf-notes.md, session 27). */
#define CM_NPAIRED (CFG_NFEATURES < 22 ? CFG_NFEATURES : 22)
/* Bayesian optimisation's config encoding (explorer/calib.h): an intercept, the key table's one-hot
 * bits, the pairs of the first CM_NPAIRED. */
#define CM_BO_NFEAT (1 + CFG_NFEATURES + CM_NPAIRED * (CM_NPAIRED - 1) / 2)
/* Feature j >= 1 of that encoding as the model file names it: a config bit, or a pair "a*b". */
const char *cm_bo_feature_name(int j);

/* A section of a model file: the models for one (model, task). */
typedef struct cm_section {
    char model[256], task[8];
    char training[1024];       /* readable description of the training set */
    int samples, ndatasets;
    cm_analytic analytic;
    cm_ranker ranker;
    double *bo_prior;          /* [CM_BO_NFEAT] bo's prior calibrated on the fit's held-out errors
                                  (explorer/calib.h): [0] the noise sd, [j] weight j's sd (NaN: a feature
                                  the file predates); NULL: none (written without an evaluation) */
    int bo_problems;           /* the training problems it was calibrated on */
} cm_section;

typedef struct cm_model {
    char device[256], created[32], source[1024];
    double bw, peak;
    int nsections;
    cm_section *sections;
} cm_model;

/* One section per (model, task) present in the set. */
int cm_fit(const cm_set *s, const cm_fit_options *o, cm_model *out, rg_err *err);
void cm_model_free(cm_model *m);
int cm_save(const cm_model *m, const char *path, rg_err *err);
/* Parses a model file; errors name file:line. */
int cm_load(const char *path, cm_model *out, rg_err *err);
const cm_section *cm_find_section(const cm_model *m, const char *model, const char *task, rg_err *err);

/* Predicted times (ms) of n configs of one problem, with their counts. */
void cm_predict(const cm_section *sec, const cm_problem *p, const cg_config *cfgs, const cm_counts *counts, int n,
                double *pred_ms);

/* ---- Counting without a GPU ---- */
/* The analytic counts of one config on a graph: the variant is built (passes, lowering, codegen)
 * and counted. -1 with the reason when the config cannot be built. */
int cm_count(const char *model, const char *task, int dim_in, int dim_out, int heads, const hg_graph *g,
             const cg_config *cfg, cm_counts *out, rg_err *err);

/* Orders configs by predicted time (best first): order[0..n) receives indices into cfgs, and
 * pred_ms (may be NULL) the prediction of each config (+inf for configs that cannot be built,
 * which go last). g: the problem's graph (NULL: opened with ds_open). */
int cm_order(const cm_model *m, const xb_problem *p, const hg_graph *g, const cg_config *cfgs, int n, int *order,
             double *pred_ms, rg_err *err);
/* The sweep driver's ordering hook (xs_order_fn in explorer/sweep.h): ctx is a cm_model*. On an
 * error (no section for the problem, dataset unreadable) the order is left as it was and a
 * warning goes to stderr. */
void cm_sweep_order(void *ctx, const xb_problem *p, const hg_stats *stats, const sp_space *space, int *idx, int n);

/* ---- Evaluation ---- */
/* Spearman rank correlation (gsl_stats_spearman, ties averaged); NaN for n < 2. */
double cm_spearman(const double *a, const double *b, int n);

/* How a ranking does on one problem whose every candidate was measured. */
typedef struct cm_score {
    int n, top_k;
    int picked, oracle;        /* indices: best predicted, best measured */
    double picked_ms, oracle_ms, topk_ms, spearman;
    int hit;                   /* the picked config is the fastest (or as fast) */
} cm_score;
void cm_score_ranking(const double *pred_ms, const double *meas_ms, int n, int top_k, cm_score *out);

typedef struct cm_eval_row {
    int problem;               /* index into the set */
    cm_score score;
    double predicted_ms;       /* the prediction for the picked config */
    double fixed_ms;           /* best fixed strategy on this problem; NaN: not measured here */
    double static_topk_ms;     /* fastest here of the static list's first K (the same K); NaN: none measured */
    double random_topk_ms;     /* random search's expected best after K draws (ys_random_expected) */
    cg_config picked, oracle, fixed;
    int have_fixed;
} cm_eval_row;

/* Problems with fewer measured configs are listed but left out of the summaries. */
#define CM_MIN_SWEEP 10

typedef struct cm_eval_summary {
    char model[256], task[8];
    int nrows;                 /* problems with at least CM_MIN_SWEEP configs */
    double hit_rate, gap_geomean, topk_gap_geomean, fixed_gap_geomean, picked_vs_fixed, spearman_mean;
    double static_topk_gap_geomean, random_topk_gap_geomean;   /* the yardsticks at the model's K */
    double topk_fraction;      /* measured share: sum of K / sum of candidates */
} cm_eval_summary;

typedef struct cm_eval {
    cm_eval_row *rows;
    int nrows;
    double *sample_pred;       /* [nsamples of the set]: each sample's prediction (ms) by the model
                                  fitted without its dataset; NaN where none was made */
    cm_eval_summary *groups;   /* one per (model, task) */
    int ngroups;
} cm_eval;

/* Leave-one-dataset-out: for each dataset, fits on the others and scores every problem of it. */
int cm_lodo(const cm_set *s, const cm_fit_options *o, cm_eval *out, rg_err *err);
/* Leave-one-size-out: for each size (dim_in, dim_out, heads), fits on the problems of every other
 * size (all datasets) and scores every problem of it; each row's static list is built from the other
 * sizes too (cm_static_list_any_size), so no time of the held-out size reaches its row. Needs
 * sweeps (problems of at least CM_MIN_SWEEP configs) of at least 2 sizes. */
int cm_loso(const cm_set *s, const cm_fit_options *o, cm_eval *out, rg_err *err);
void cm_eval_free(cm_eval *e);
/* The static list of one kind of problem (model, task, dims, heads): the configs measured on every
 * training problem of that kind (train_problem[q] != 0), best geomean of time / oracle first
 * (ys_static_rank in results/yardstick.h, the one definition the fit, the replay and the report
 * share). Leave-one-dataset-out callers mark the held-out dataset's problems as not training, so
 * the list never uses its times. 0 with *out (caller frees) and *n >= 1, or -1 when no config was
 * measured on every training problem. */
int cm_static_list(const cm_set *s, const int *train_problem, const cm_problem *kind, cg_config **out, int *n);
/* The same over the training problems of kind's model and task at every size (dims and heads): the
 * static list of a leave-one-size-out evaluation, whose training problems are of other sizes. */
int cm_static_list_any_size(const cm_set *s, const int *train_problem, const cm_problem *kind, cg_config **out, int *n);
/* The best fixed strategy: the first config of the static list. 0 and *out, or -1. */
int cm_best_fixed(const cm_set *s, const int *train_problem, const cm_problem *kind, cg_config *out);

#endif
