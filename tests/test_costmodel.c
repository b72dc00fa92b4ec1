/* Tests of the cost models: coefficient recovery on synthetic data, robustness to outliers, the
 * model file, leave-one-dataset-out on a fixture results store, Spearman, ordering and the CLI. */
#include "tests/testutil.h"
#include <fcntl.h>
#include <unistd.h>
#include "datasets/dataset.h"
#include "cli/cmcli.h"
#include "explorer/calib.h"
#include "explorer/costmodel.h"
#include "explorer/space.h"
#include "codegen/pipeline.h"
#include "tests/kcover.h"
#include "results/store.h"

#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DEVICE "Test GPU (sm_90)"
#define SMALL_GRAPH "synth:nodes=400,edges=3000,ntypes=3,etypes=6,ratio=0.6,seed=3"

/* ---- helpers ---- */

/* Log-uniform in [lo, hi). */
static double log_uniform(rg_rng *r, double lo, double hi)
{
    return exp(log(lo) + (log(hi) - log(lo)) * rg_rng_uniform(r));
}

static cm_problem problem(const char *dataset, double compaction, double degree, int etypes)
{
    cm_problem p;
    memset(&p, 0, sizeof p);
    snprintf(p.model, sizeof p.model, "rgat");
    snprintf(p.task, sizeof p.task, "infer");
    snprintf(p.dataset, sizeof p.dataset, "%s", dataset);
    p.dim_in = p.dim_out = 64;
    p.heads = 1;
    /* only the features the fixture varies differ between datasets */
    p.stats.nodes = 10000;
    p.stats.edges = 100000;
    p.stats.unique_pairs = (int64_t)(compaction * 100000);
    p.stats.node_types = 3;
    p.stats.edge_types = etypes;
    p.stats.avg_degree = degree;
    p.stats.compaction_ratio = compaction;
    p.stats.rel_min = 10;
    p.stats.rel_max = 5000;
    p.stats.rel_median = 800;
    p.stats.rel_skew = 1.5;
    p.stats.max_in_degree = 300;
    p.stats.in_degree_skew = 4;
    return p;
}

/* Known analytic coefficients per category: a (bytes), b (flops), c (per launch, ms), d (ms). */
static const double TRUE_COEF[CM_NCAT][CM_A_NCOEF] = {
    {0.40, 1.80, 0.0030, 0.010},   /* gemm */
    {1.50, 0.00, 0.0040, 0.005},   /* traversal */
    {0.00, 0.00, 0.0020, 0.001},   /* other */
};

/* A set whose category times follow TRUE_COEF with 1% noise; every tenth gemm time multiplied by
 * outlier_factor (1: none). */
static void synthetic_analytic_set(cm_set *s, int n, double outlier_factor)
{
    memset(s, 0, sizeof *s);
    cm_problem p = problem("synthetic", 0.5, 5, 8);
    int q = cm_set_problem(s, &p);
    rg_rng r;
    rg_rng_seed(&r, 42);
    for (int i = 0; i < n; i++) {
        cm_sample x;
        memset(&x, 0, sizeof x);
        x.problem = q;
        cfg_default(&x.cfg);
        /* sizes where every term matters: 0.3 us - 0.3 ms of traffic, 2 us - 2 ms of math */
        x.counts.bytes = log_uniform(&r, 1e6, 1e9);
        x.counts.flops = log_uniform(&r, 1e8, 1e11);
        x.counts.atomics = 0;
        x.time_ms = 0;
        for (int c = 0; c < CM_NCAT; c++) {
            x.counts.cat_launches[c] = 1 + (double)rg_rng_below(&r, 30);
            x.counts.launches += x.counts.cat_launches[c];
            const double *k = TRUE_COEF[c];
            double t = k[0] * x.counts.bytes / CM_DEFAULT_BW * 1e3 + k[1] * x.counts.flops / CM_DEFAULT_PEAK * 1e3 +
                       k[2] * x.counts.cat_launches[c] + k[3];
            t *= 1 + 0.02 * (rg_rng_uniform(&r) - 0.5);
            if (c == CM_GEMM && i % 10 == 3) t *= outlier_factor;
            x.cat_ms[c] = t;
            x.time_ms += t;
        }
        cm_set_add(s, &x);
    }
}

/* |got - want| within rel of the larger of |want| and the coefficient's scale. */
static int close_to(double got, double want, double rel, double scale)
{
    return fabs(got - want) <= rel * fmax(fabs(want), scale);
}

/* ---- (a) the analytic model ---- */

/* 1% noise on the times: the bandwidth and throughput factors within 5%, the per-launch and
 * constant terms (microseconds) within 10%. */
static const double TOLERANCE[CM_A_NCOEF] = {0.05, 0.05, 0.10, 0.10};

static void test_analytic_recovers_coefficients(void **state)
{
    (void)state;
    cm_set s;
    synthetic_analytic_set(&s, 400, 1);
    cm_analytic a;
    rg_err err;
    assert_int_equal(cm_fit_analytic(&s, NULL, 0, 0, 1, &a, &err), 0);
    assert_float_equal(a.bw, CM_DEFAULT_BW, 1);
    const double scale[CM_A_NCOEF] = {0.1, 0.1, 0.001, 0.005};
    for (int c = 0; c < CM_NCAT; c++) {
        assert_int_equal(a.rows[c], 400);
        for (int j = 0; j < CM_A_NCOEF; j++) {
            if (!close_to(a.coef[c][j], TRUE_COEF[c][j], TOLERANCE[j], scale[j]))
                fail_msg("%s coef %d: got %g, want %g", cm_category_name(c), j, a.coef[c][j], TRUE_COEF[c][j]);
        }
    }
    /* the sum of the categories predicts the whole time */
    cm_counts k = s.samples[7].counts;
    assert_true(fabs(cm_analytic_predict(&a, &k, NULL) / s.samples[7].time_ms - 1) < 0.03);
    cm_set_free(&s);
}

static void test_robust_fit_ignores_outliers(void **state)
{
    (void)state;
    cm_set s;
    synthetic_analytic_set(&s, 400, 6.0);
    cm_analytic robust, ordinary;
    rg_err err;
    assert_int_equal(cm_fit_analytic(&s, NULL, 0, 0, 1, &robust, &err), 0);
    assert_int_equal(cm_fit_analytic(&s, NULL, 0, 0, 0, &ordinary, &err), 0);
    const double scale[CM_A_NCOEF] = {0.1, 0.1, 0.001, 0.005};
    int ordinary_off = 0;
    for (int j = 0; j < CM_A_NCOEF; j++) {
        if (!close_to(robust.coef[CM_GEMM][j], TRUE_COEF[CM_GEMM][j], TOLERANCE[j], scale[j]))
            fail_msg("robust gemm coef %d: got %g, want %g", j, robust.coef[CM_GEMM][j], TRUE_COEF[CM_GEMM][j]);
        ordinary_off |= !close_to(ordinary.coef[CM_GEMM][j], TRUE_COEF[CM_GEMM][j], 0.20, scale[j]);
    }
    /* the outliers are strong enough that least squares is pulled off: the test can fail */
    assert_true(ordinary_off);
    cm_set_free(&s);
}

static void test_analytic_too_few_rows(void **state)
{
    (void)state;
    cm_set s;
    synthetic_analytic_set(&s, 3, 1);
    cm_analytic a;
    rg_err err;
    assert_int_equal(cm_fit_analytic(&s, NULL, 0, 0, 1, &a, &err), -1);
    assert_non_null(strstr(err.msg, "too few"));
    cm_set_free(&s);
}

/* ---- a ranking fixture: 6 datasets x 12 configs with a known log-time function ---- */

typedef struct fixture_ds {
    const char *name;
    double compaction, degree;
    int etypes;
    double level;   /* ms of the all-off config */
} fixture_ds;

static const fixture_ds DATASETS[] = {
    {"alpha", 0.30, 2.0, 4, 1.0},   {"beta", 0.95, 20.0, 40, 3.0}, {"gamma", 0.50, 8.0, 20, 2.0},
    {"delta", 0.70, 3.0, 6, 0.5},   {"eps", 0.40, 12.0, 9, 1.5},   {"zeta", 0.85, 5.0, 30, 0.8},
};
#define NDS 6

static void fixture_config(int i, cg_config *c)
{
    static const char *const compact[3] = {"off", "bsearch", "direct"};
    char kv[96];
    snprintf(kv, sizeof kv, "compact=%s,reorder=%s,trav=%s", compact[i % 3], (i / 3) % 2 ? "on" : "off",
             (i / 6) % 2 ? "edge" : "node");
    cfg_default(c);
    assert_int_equal(cfg_parse(c, kv, NULL), 0);
}
#define NCFG 12

/* Compaction pays with the compaction ratio (bsearch a bit less), edge-centric traversal pays on
 * high degrees, reordering on few relations: each best config depends on the graph. */
static double fixture_time(const fixture_ds *d, const cg_config *c)
{
    double e = 0;
    if (c->compact != CFG_COMPACT_OFF) e += 0.9 * log(d->compaction) + (c->compact == CFG_COMPACT_BSEARCH ? 0.05 : 0);
    if (!c->node_centric) e += 0.3 - 0.2 * log(d->degree);
    if (c->reorder) e += 0.1 * (log(d->etypes) - log(10));
    return d->level * exp(e);
}

static cm_counts fixture_counts(const fixture_ds *d)
{
    /* the same counts for every config of a dataset: the ranking must come from the features */
    cm_counts k;
    memset(&k, 0, sizeof k);
    k.flops = 1e9 * d->level;
    k.bytes = 4e8 * d->level * (1 + d->degree / 50);
    k.launches = 3;
    for (int c = 0; c < CM_NCAT; c++) k.cat_launches[c] = 1;
    return k;
}

static int fixture_oracle(const fixture_ds *d)
{
    int best = 0;
    for (int i = 1; i < NCFG; i++) {
        cg_config a, b;
        fixture_config(i, &a);
        fixture_config(best, &b);
        if (fixture_time(d, &a) < fixture_time(d, &b)) best = i;
    }
    return best;
}

typedef double (*fixture_time_fn)(const fixture_ds *d, const cg_config *c);

static void fixture_set_with(cm_set *s, fixture_time_fn time_of)
{
    memset(s, 0, sizeof *s);
    snprintf(s->device, sizeof s->device, DEVICE);
    for (int d = 0; d < NDS; d++) {
        cm_problem p = problem(DATASETS[d].name, DATASETS[d].compaction, DATASETS[d].degree, DATASETS[d].etypes);
        int q = cm_set_problem(s, &p);
        for (int i = 0; i < NCFG; i++) {
            cm_sample x;
            memset(&x, 0, sizeof x);
            x.problem = q;
            fixture_config(i, &x.cfg);
            x.counts = fixture_counts(&DATASETS[d]);
            x.time_ms = time_of(&DATASETS[d], &x.cfg);
            x.cat_ms[CM_GEMM] = 0.4 * x.time_ms;
            x.cat_ms[CM_TRAVERSAL] = 0.5 * x.time_ms;
            x.cat_ms[CM_OTHER] = 0.1 * x.time_ms;
            cm_set_add(s, &x);
        }
    }
}

static void fixture_set(cm_set *s) { fixture_set_with(s, fixture_time); }

/* ---- the fixture as a results store, through the rs_ API ---- */

static int64_t record_on(rs_store *st, const char *device, int64_t run, int64_t ds, const cg_config *cfg, double ms,
                         rs_status status, const cm_counts *k, int with_counts)
{
    char *json = cfg_to_json(cfg);
    rs_variant v = {.config_json = json, .model = "rgat", .task = "infer", .dim_in = 64, .dim_out = 64, .heads = 1};
    rs_measurement m;
    rs_measurement_init(&m);
    m.run_id = run;
    m.dataset_id = ds;
    m.device_key = device;
    m.status = status;
    if (status == RS_OK) {
        m.median_ms = m.min_ms = m.max_ms = ms;
        m.gemm_ms = 0.4 * ms;
        m.traversal_ms = 0.5 * ms;
        m.other_ms = 0.1 * ms;
    }
    rs_kernel_time kt[3] = {{"gemm_0", "gemm", 0.4 * ms * 1e6, 0},
                            {"trav_0", "traversal", 0.5 * ms * 1e6, 0},
                            {"copy_0", "copy", 0.1 * ms * 1e6, 0}};
    rs_metric mt[4] = {{"", "analytic_flops", "count", k->flops},
                       {"", "analytic_bytes", "count", k->bytes},
                       {"", "analytic_atomics", "count", k->atomics},
                       {"", "analytic_launches", "count", k->launches}};
    int64_t id = tu_store_measurement(st, &v, &m, kt, status == RS_OK ? 3 : 0, mt, with_counts ? 4 : 0);
    free(json);
    return id;
}

static int64_t record_one(rs_store *st, int64_t run, int64_t ds, const cg_config *cfg, double ms, rs_status status,
                          const cm_counts *k, int with_counts)
{
    return record_on(st, DEVICE, run, ds, cfg, ms, status, k, with_counts);
}

/* The fixture database, plus what the loader must leave out: a failed variant, an older slower
 * measurement of a config (the newest wins), a measurement without counts, a dataset without
 * statistics. */
static char *fixture_db(char *dir)
{
    char *path = rg_xasprintf("%s/results.db", dir);
    rg_err err;
    rs_store *st = rs_open(path, &err);
    assert_non_null(st);
    rs_run_info info = {.commit = "abc", .host = "test", .gpu_name = "Test GPU", .sm = 90};
    int64_t run = rs_begin_run(st, &info, &err);
    assert_true(run > 0);
    for (int d = 0; d < NDS; d++) {
        cm_problem p = problem(DATASETS[d].name, DATASETS[d].compaction, DATASETS[d].degree, DATASETS[d].etypes);
        int64_t ds = rs_upsert_dataset(st, p.dataset, &p.stats, &err);
        assert_true(ds > 0);
        cm_counts k = fixture_counts(&DATASETS[d]);
        for (int i = 0; i < NCFG; i++) {
            cg_config c;
            fixture_config(i, &c);
            double t = fixture_time(&DATASETS[d], &c);
            if (i == 5) record_one(st, run, ds, &c, t * 0.5, RS_OK, &k, 1);   /* older: replaced below */
            record_one(st, run, ds, &c, t, RS_OK, &k, 1);
        }
        cg_config failed;
        cfg_default(&failed);
        assert_int_equal(cfg_parse(&failed, "tile=16,coarsen=1", NULL), 0);
        record_one(st, run, ds, &failed, 0, RS_COMPILE_ERROR, &k, 0);
        if (d == 0) {
            cg_config nocounts;
            cfg_default(&nocounts);
            assert_int_equal(cfg_parse(&nocounts, "tile=16", NULL), 0);
            record_one(st, run, ds, &nocounts, 0.1, RS_OK, &k, 0);
        }
    }
    int64_t bare = rs_upsert_dataset(st, "nostats", NULL, &err);
    cg_config c;
    fixture_config(0, &c);
    cm_counts k = fixture_counts(&DATASETS[0]);
    record_one(st, run, bare, &c, 1.0, RS_OK, &k, 1);
    assert_int_equal(rs_finish_run(st, run, RS_RUN_FINISHED, &err), 0);
    rs_close(st);
    return path;
}

static void test_load_from_store(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = fixture_db(dir);
    cm_set s;
    rg_err err;
    assert_int_equal(cm_set_load(db, NULL, &s, &err), 0);
    assert_string_equal(s.device, DEVICE);
    assert_int_equal(s.nproblems, NDS);
    assert_int_equal(s.nsamples, NDS * NCFG);
    assert_int_equal(s.skipped, 2);   /* no counts; no statistics */
    for (int i = 0; i < s.nsamples; i++) {
        const cm_sample *x = &s.samples[i];
        const cm_problem *p = &s.problems[x->problem];
        int d = 0;
        while (strcmp(DATASETS[d].name, p->dataset)) d++;
        assert_float_equal(x->time_ms, fixture_time(&DATASETS[d], &x->cfg), 1e-9);   /* newest wins */
        assert_float_equal(x->cat_ms[CM_OTHER], 0.1 * x->time_ms, 1e-9);             /* "copy" counts as other */
        assert_float_equal(x->counts.cat_launches[CM_GEMM], 1, 0);
        assert_float_equal(x->counts.flops, fixture_counts(&DATASETS[d]).flops, 1e-3);
        assert_float_equal(p->stats.compaction_ratio, DATASETS[d].compaction, 1e-12);
    }
    cm_set_free(&s);
    cm_filter other = {.model = "hgt"};
    assert_int_equal(cm_set_load(db, &other, &s, &err), -1);
    assert_non_null(strstr(err.msg, "no usable measurements"));
    assert_int_equal(cm_set_load("/nonexistent/x.db", NULL, &s, &err), -1);
    free(db);
    tu_rm_tree(dir);
}

static void test_load_several_devices(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = fixture_db(dir);
    rg_err err;
    rs_store *st = rs_open(db, &err);
    assert_non_null(st);
    rs_run_info info = {.commit = "abc", .host = "test", .gpu_name = "Other GPU", .sm = 80};
    int64_t run = rs_begin_run(st, &info, &err);
    cm_problem p = problem(DATASETS[1].name, DATASETS[1].compaction, DATASETS[1].degree, DATASETS[1].etypes);
    int64_t ds = rs_upsert_dataset(st, p.dataset, &p.stats, &err);
    cg_config c;
    fixture_config(3, &c);
    cm_counts k = fixture_counts(&DATASETS[1]);
    record_on(st, "Other GPU (sm_80)", run, ds, &c, 2.0, RS_OK, &k, 1);
    rs_close(st);
    cm_set s;
    assert_int_equal(cm_set_load(db, NULL, &s, &err), -1);
    assert_non_null(strstr(err.msg, "several devices"));
    assert_non_null(strstr(err.msg, "--device"));
    cm_filter other = {.device = "Other GPU (sm_80)"};
    assert_int_equal(cm_set_load(db, &other, &s, &err), 0);
    assert_int_equal(s.nsamples, 1);
    assert_float_equal(s.samples[0].time_ms, 2.0, 0);
    cm_set_free(&s);
    cm_filter missing = {.device = "Nope"};
    assert_int_equal(cm_set_load(db, &missing, &s, &err), -1);
    assert_non_null(strstr(err.msg, "Other GPU (sm_80)"));
    free(db);
    tu_rm_tree(dir);
}

static void test_lodo_on_fixture_store(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = fixture_db(dir);
    cm_set s;
    rg_err err;
    assert_int_equal(cm_set_load(db, NULL, &s, &err), 0);
    cm_fit_options o;
    cm_fit_options_default(&o);
    o.top_k = 2;
    cm_eval e;
    assert_int_equal(cm_lodo(&s, &o, &e, &err), 0);
    assert_int_equal(e.nrows, NDS);
    assert_int_equal(e.ngroups, 1);
    double fixed_log = 0;
    for (int r = 0; r < e.nrows; r++) {
        const cm_eval_row *row = &e.rows[r];
        const cm_problem *p = &s.problems[row->problem];
        int d = 0;
        while (strcmp(DATASETS[d].name, p->dataset)) d++;
        cg_config want;
        fixture_config(fixture_oracle(&DATASETS[d]), &want);
        assert_int_equal(cfg_hash(&row->oracle), cfg_hash(&want));
        if (!row->score.hit) fail_msg("%s: picked %s", p->dataset, cfg_to_string(&row->picked));
        assert_float_equal(row->score.picked_ms / row->score.oracle_ms, 1.0, 1e-12);
        assert_true(row->score.spearman > 0.95);
        assert_int_equal(row->score.top_k, 2);
        /* the best fixed strategy, worked out independently: the config of the static list's
         * definition (any config, the best geomean of time / oracle over the OTHER datasets) */
        int best_cfg = -1;
        double best_score = INFINITY;
        for (int i = 0; i < NCFG; i++) {
            double sc = 0;
            for (int k = 0; k < NDS; k++) {
                if (k == d) continue;
                cg_config ci, co;
                fixture_config(i, &ci);
                fixture_config(fixture_oracle(&DATASETS[k]), &co);
                sc += log(fixture_time(&DATASETS[k], &ci) / fixture_time(&DATASETS[k], &co));
            }
            if (sc < best_score - 1e-12) best_score = sc, best_cfg = i;
        }
        cg_config fixed;
        fixture_config(best_cfg, &fixed);
        assert_true(row->have_fixed);
        assert_int_equal(cfg_hash(&row->fixed), cfg_hash(&fixed));
        assert_float_equal(row->fixed_ms, fixture_time(&DATASETS[d], &fixed), 1e-9);
        fixed_log += log(row->fixed_ms / row->score.oracle_ms);
        /* the picked config's prediction is also that sample's stored prediction */
        int found = 0;
        for (int i = 0; i < s.nsamples; i++)
            if (s.samples[i].problem == row->problem && cfg_hash(&s.samples[i].cfg) == cfg_hash(&row->picked)) {
                assert_float_equal(e.sample_pred[i], row->predicted_ms, 1e-12);
                found++;
            }
        assert_int_equal(found, 1);
    }
    for (int i = 0; i < s.nsamples; i++) {
        assert_true(s.samples[i].measurement_id > 0);
        assert_true(isfinite(e.sample_pred[i]) && e.sample_pred[i] > 0);
    }
    const cm_eval_summary *g = &e.groups[0];
    assert_float_equal(g->hit_rate, 1.0, 0);
    assert_float_equal(g->gap_geomean, 1.0, 1e-12);
    assert_float_equal(g->topk_gap_geomean, 1.0, 1e-12);
    assert_float_equal(g->fixed_gap_geomean, exp(fixed_log / NDS), 1e-9);
    assert_true(g->fixed_gap_geomean > 1.05);   /* the fixture is one where the oracle beats fixed */
    assert_float_equal(g->topk_fraction, 2.0 / NCFG, 1e-12);
    cm_eval_free(&e);
    cm_set_free(&s);
    free(db);
    tu_rm_tree(dir);
}

/* Compaction helps node-centric kernels and hurts the (always faster) edge-centric ones, as in
 * RGAT training: an effect no sum of per-option terms can express. The ranking needs the pair
 * features to put compact=off first among the edge-centric configs of every held-out graph. */
static double flipped_time(const fixture_ds *d, const cg_config *c)
{
    double e = c->node_centric ? 0 : -1.5;
    if (c->compact != CFG_COMPACT_OFF) e += c->node_centric ? -0.6 : 0.2;
    if (c->reorder) e += 0.1 * (log(d->etypes) - log(10));
    return d->level * exp(e);
}

static void test_lodo_learns_an_effect_that_flips(void **state)
{
    (void)state;
    cm_set s;
    fixture_set_with(&s, flipped_time);
    cm_fit_options o;
    cm_fit_options_default(&o);
    o.top_k = 1;
    cm_eval e;
    rg_err err;
    assert_int_equal(cm_lodo(&s, &o, &e, &err), 0);
    assert_int_equal(e.nrows, NDS);
    for (int r = 0; r < e.nrows; r++) {
        const cm_eval_row *row = &e.rows[r];
        if (!row->score.hit)
            fail_msg("%s: picked %s, oracle %s", s.problems[row->problem].dataset, cfg_to_string(&row->picked),
                     cfg_to_string(&row->oracle));
        assert_int_equal(row->oracle.compact, CFG_COMPACT_OFF);
        assert_false(row->oracle.node_centric);
    }
    assert_float_equal(e.groups[0].topk_gap_geomean, 1.0, 1e-12);
    cm_eval_free(&e);
    cm_set_free(&s);
}

/* Slow node-centric configs whose compaction effect grows with the degree, fast edge-centric
 * ones where it shrinks: one compact x degree coefficient cannot serve both. Weighting the
 * rows by their distance from the best lets the fit follow the fast configs, which decide. */
static double two_regimes_time(const fixture_ds *d, const cg_config *c)
{
    int compact = c->compact != CFG_COMPACT_OFF;
    double e = c->node_centric ? 3.0 + 1.0 * compact * log(d->degree)
                               : compact * (0.3 * (log(5.5) - log(d->degree)) + (c->compact == CFG_COMPACT_BSEARCH ? 0.05 : 0));
    if (c->reorder) e += 0.1 * (log(d->etypes) - log(10));
    return d->level * exp(e);
}

static int lodo_hits(const cm_set *s, double tau)
{
    cm_fit_options o;
    cm_fit_options_default(&o);
    o.top_k = 1;
    o.weight_tau = tau;
    cm_eval e;
    rg_err err;
    assert_int_equal(cm_lodo(s, &o, &e, &err), 0);
    int hits = 0;
    for (int r = 0; r < e.nrows; r++) hits += e.rows[r].score.hit;
    cm_eval_free(&e);
    return hits;
}

static void test_weighted_fit_follows_the_fast_configs(void **state)
{
    (void)state;
    cm_set s;
    fixture_set_with(&s, two_regimes_time);
    assert_int_equal(lodo_hits(&s, CM_WEIGHT_TAU), NDS);
    assert_true(lodo_hits(&s, 0) < NDS);   /* unweighted, the slow rows pull the shared slope */
    cm_set_free(&s);
}

static void test_lodo_needs_two_datasets(void **state)
{
    (void)state;
    cm_set s;
    synthetic_analytic_set(&s, 20, 1);
    cm_eval e;
    rg_err err;
    assert_int_equal(cm_lodo(&s, NULL, &e, &err), -1);
    assert_non_null(strstr(err.msg, "at least 2 datasets"));
    cm_set_free(&s);
}

/* ---- the model file ---- */

static void test_model_file_round_trip(void **state)
{
    (void)state;
    cm_set s;
    fixture_set(&s);
    cm_model m, back;
    rg_err err;
    assert_int_equal(cm_fit(&s, NULL, &m, &err), 0);
    assert_int_equal(m.nsections, 1);
    char *dir = tu_tmpdir(), *path = rg_xasprintf("%s/model.txt", dir);
    assert_int_equal(cm_save(&m, path, &err), 0);
    assert_int_equal(cm_load(path, &back, &err), 0);
    assert_string_equal(back.device, DEVICE);
    assert_string_equal(back.created, m.created);
    assert_int_equal(back.nsections, 1);
    const cm_section *a = &m.sections[0], *b = cm_find_section(&back, "rgat", "inference", &err);
    assert_non_null(b);
    assert_string_equal(b->training, a->training);
    assert_memory_equal(&a->analytic, &b->analytic, sizeof a->analytic);
    assert_memory_equal(a->ranker.coef, b->ranker.coef, (size_t)cm_nfeatures() * sizeof *a->ranker.coef);
    assert_true(a->ranker.lambda == b->ranker.lambda && a->ranker.level_shift == b->ranker.level_shift);
    /* same predictions */
    cg_config cfgs[NCFG];
    cm_counts k[NCFG];
    double pa[NCFG], pb[NCFG];
    for (int i = 0; i < NCFG; i++) {
        fixture_config(i, &cfgs[i]);
        k[i] = fixture_counts(&DATASETS[2]);
    }
    cm_predict(a, &s.problems[2], cfgs, k, NCFG, pa);
    cm_predict(b, &s.problems[2], cfgs, k, NCFG, pb);
    assert_memory_equal(pa, pb, sizeof pa);
    /* the predicted level follows the measured one (the shift calibrates the analytic model) */
    assert_true(fabs(log(pa[0] / fixture_time(&DATASETS[2], &cfgs[0]))) < 0.3);
    assert_null(cm_find_section(&back, "hgt", "train", &err));
    assert_non_null(strstr(err.msg, "rgat infer"));
    cm_model_free(&back);
    cm_model_free(&m);
    cm_set_free(&s);
    free(path);
    tu_rm_tree(dir);
}

/* bo's calibrated prior goes through the model file as written (a weight it lacks: NaN); a file
 * without one loads without one. */
static void test_model_file_bo_prior(void **state)
{
    (void)state;
    cm_set s;
    fixture_set(&s);
    cm_model m, back;
    rg_err err;
    assert_int_equal(cm_fit(&s, NULL, &m, &err), 0);
    char *dir = tu_tmpdir(), *path = rg_xasprintf("%s/model.txt", dir);
    assert_int_equal(cm_save(&m, path, &err), 0);
    assert_int_equal(cm_load(path, &back, &err), 0);
    assert_null(back.sections[0].bo_prior);
    cm_model_free(&back);
    cm_section *a = &m.sections[0];
    a->bo_prior = rg_xmalloc(CM_BO_NFEAT * sizeof *a->bo_prior);
    for (int j = 0; j < CM_BO_NFEAT; j++) a->bo_prior[j] = 0.03 + 0.001 * j;
    a->bo_prior[5] = NAN;
    a->bo_problems = 3;
    assert_int_equal(cm_save(&m, path, &err), 0);
    assert_int_equal(cm_load(path, &back, &err), 0);
    const cm_section *b = &back.sections[0];
    assert_non_null(b->bo_prior);
    assert_int_equal(b->bo_problems, 3);
    for (int j = 0; j < CM_BO_NFEAT; j++) {
        if (j == 5) assert_true(isnan(b->bo_prior[j]));
        else assert_true(b->bo_prior[j] == a->bo_prior[j]);
    }
    cm_model_free(&back);
    cm_model_free(&m);
    cm_set_free(&s);
    free(path);
    tu_rm_tree(dir);
}

static void expect_load_error(const char *dir, const char *text, const char *want)
{
    char *path = tu_write_file(dir, "bad.txt", text);
    cm_model m;
    rg_err err;
    assert_int_equal(cm_load(path, &m, &err), -1);
    if (!strstr(err.msg, want)) fail_msg("error '%s' lacks '%s'", err.msg, want);
    free(path);
}

/* Runs cm_load with stderr in a file: 0 or -1, and what it wrote there. */
static int load_capturing(const char *path, cm_model *m, char **text)
{
    char *dir = tu_tmpdir(), *log = rg_xasprintf("%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    rg_err err;
    int rc = cm_load(path, m, &err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    *text = tu_read_file(log, NULL);
    free(log);
    tu_rm_tree(dir);
    return rc;
}

static int feature_index(const char *name)
{
    for (int j = 0; j < cm_nfeatures(); j++)
        if (!strcmp(cm_feature_name(j), name)) return j;
    fail_msg("no feature %s", name);
    return -1;
}

/* A fitted model written to DIR/model.txt, then again to DIR/old.txt without the lines that contain
 * any of `drop` (NULL-terminated), as an older writer would have left them out; returns old.txt. */
static char *older_model_file(const char *dir, const char *const *drop, cm_set *s, cm_model *m)
{
    rg_err err;
    fixture_set(s);
    assert_int_equal(cm_fit(s, NULL, m, &err), 0);
    char *path = rg_xasprintf("%s/model.txt", dir);
    assert_int_equal(cm_save(m, path, &err), 0);
    char *text = tu_read_file(path, NULL);
    rg_str old = {0};
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        int keep = 1;
        for (int i = 0; drop[i]; i++) keep &= strstr(line, drop[i]) == NULL;
        if (keep) rg_str_printf(&old, "%s\n", line);
    }
    char *oldpath = tu_write_file(dir, "old.txt", old.s);
    rg_str_free(&old);
    free(text), free(path);
    return oldpath;
}

/* A model file without some ranking coefficients (written before those features existed)
 * loads: the missing ones are 0, the rest as written, with one warning for the file. */
static void test_model_file_with_missing_coefficients(void **state)
{
    (void)state;
    cm_set s;
    cm_model m, back;
    char *dir = tu_tmpdir();
    /* the size features' lines and one more */
    static const char *const drop[] = {"tile_idle_", "ranking.coef.reorder =", NULL};
    char *oldpath = older_model_file(dir, drop, &s, &m);
    char *warned;
    assert_int_equal(load_capturing(oldpath, &back, &warned), 0);
    assert_non_null(strstr(warned, "3 ranking coefficients missing"));
    assert_non_null(strstr(warned, "counted as 0"));
    assert_null(strstr(strstr(warned, "warning") + 1, "warning"));   /* one warning */
    const cm_section *a = &m.sections[0], *b = &back.sections[0];
    for (int j = 0; j < cm_nfeatures(); j++) {
        const char *n = cm_feature_name(j);
        if (!strncmp(n, "tile_idle_", 10) || !strcmp(n, "reorder")) assert_true(b->ranker.coef[j] == 0);
        else assert_true(b->ranker.coef[j] == a->ranker.coef[j]);
    }
    free(warned);
    cm_model_free(&back);
    /* the committed H100 model (format 2, before the size features) loads the same way */
    assert_int_equal(load_capturing("results/h100/costmodel.txt", &back, &warned), 0);
    assert_non_null(strstr(warned, "tile_idle_dim_out"));
    assert_true(back.nsections >= 6);
    assert_true(back.sections[0].ranker.coef[feature_index("tile_idle_head_dim")] == 0);
    free(warned);
    cm_model_free(&back);
    free(oldpath);
    cm_model_free(&m);
    cm_set_free(&s);
    tu_rm_tree(dir);
}

/* A model file written before two config features were added at once (tile8 and tile128 came
 * together) loads with both taken as new: their pair coefficient is one of the absent lines, and
 * zeroing the first feature's once counted it as present for the second, which then looked like
 * a damaged file (156 coefficients "missing"). */
static void test_model_file_before_two_features(void **state)
{
    (void)state;
    cm_set s;
    cm_model m, back;
    char *dir = tu_tmpdir();
    static const char *const drop[] = {"tile8", "tile128", NULL};
    char *oldpath = older_model_file(dir, drop, &s, &m);
    char *warned;
    assert_int_equal(load_capturing(oldpath, &back, &warned), 0);
    assert_non_null(strstr(warned, "no coefficients for tile8, tile128"));
    assert_null(strstr(warned, "missing"));
    for (int j = 0; j < cm_nfeatures(); j++) {
        const char *n = cm_feature_name(j);
        if (strstr(n, "tile8") || strstr(n, "tile128")) assert_true(back.sections[0].ranker.coef[j] == 0);
    }
    free(warned);
    cm_model_free(&back);
    free(oldpath);
    cm_model_free(&m);
    cm_set_free(&s);
    tu_rm_tree(dir);
}

/* Dims and heads reach the features: log dims and heads with every config bit, and the idle
 * share of a GEMM tile wider than the product (full width or one head's). */
static void test_size_features(void **state)
{
    (void)state;
    cm_problem p = problem("synthetic", 0.5, 5, 8);
    cm_counts k = {1e9, 1e8, 0, 10, {4, 4, 2}};
    cg_config c;
    cfg_default(&c);
    double *x = calloc((size_t)cm_nfeatures(), sizeof *x);
    int out = feature_index("tile_idle_dim_out"), head = feature_index("tile_idle_head_dim");
    int t16 = feature_index("tile16*log_dim_out"), h16 = feature_index("tile16*log_heads");
    struct { int dim, heads, tile; double out, head; } cases[] = {
        {64, 1, 64, 0, 0}, {16, 1, 64, 2, 2}, {16, 1, 16, 0, 0}, {128, 4, 64, 0, 1}, {128, 4, 32, 0, 0},
        {256, 8, 64, 0, 1}, {16, 8, 16, 0, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        p.dim_in = p.dim_out = cases[i].dim;
        p.heads = cases[i].heads;
        c.tile = cases[i].tile;
        cm_features(&p, &c, &k, 0, x);
        assert_float_equal(x[out], cases[i].out, 1e-12);
        assert_float_equal(x[head], cases[i].head, 1e-12);
        assert_float_equal(x[t16], c.tile == 16 ? log(cases[i].dim) : 0, 1e-12);
        assert_float_equal(x[h16], c.tile == 16 ? log(cases[i].heads) : 0, 1e-12);
    }
    free(x);
}

static void test_model_file_errors(void **state)
{
    (void)state;
    cm_set s;
    fixture_set(&s);
    cm_model m;
    rg_err err;
    assert_int_equal(cm_fit(&s, NULL, &m, &err), 0);
    char *dir = tu_tmpdir(), *path = rg_xasprintf("%s/model.txt", dir);
    assert_int_equal(cm_save(&m, path, &err), 0);
    FILE *f = fopen(path, "r");
    rg_str good = {0};
    char line[4096];
    while (fgets(line, sizeof line, f)) rg_str_puts(&good, line);
    fclose(f);
    /* a good file with one line changed or dropped */
    char *edited = rg_xstrdup(good.s), *at = strstr(edited, "ranking.lambda =");
    at[8] = 'X';   /* ranking.XambdA: unknown key */
    expect_load_error(dir, edited, "unknown key 'ranking.Xambda'");
    free(edited);
    edited = rg_xstrdup(good.s);
    at = strstr(edited, "ranking.level_shift =");
    memcpy(at, "#", 1);
    expect_load_error(dir, edited, "lacks ranking.level_shift");
    free(edited);
    /* a file without any coefficient of one config feature predates its key: loaded, that
     * feature's coefficients 0, the others as written */
    rg_str older = {0};
    char *copy = rg_xstrdup(good.s), *save = NULL;
    int dropped = 0;
    for (char *ln = strtok_r(copy, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        char name[128];
        int mine = sscanf(ln, "ranking.coef.%127s", name) == 1;
        if (mine) {
            mine = 0;
            for (char *w = strtok(name, "*"); w; w = strtok(NULL, "*")) mine |= !strcmp(w, "lb");
        }
        if (mine) dropped++;
        else rg_str_printf(&older, "%s\n", ln);
    }
    assert_true(dropped > 1);
    char *older_path = tu_write_file(dir, "older.txt", older.s);
    cm_model back;
    if (cm_load(older_path, &back, &err)) fail_msg("%s", err.msg);
    int zeros = 0;
    for (int j = 0; j < cm_nfeatures(); j++) {
        const char *fn = cm_feature_name(j);
        int lb = !strcmp(fn, "lb") || !strncmp(fn, "lb*", 3) || (strlen(fn) > 3 && !strcmp(fn + strlen(fn) - 3, "*lb"));
        if (lb) {
            assert_true(back.sections[0].ranker.coef[j] == 0);
            zeros++;
        } else {
            assert_true(back.sections[0].ranker.coef[j] == m.sections[0].ranker.coef[j]);
        }
    }
    assert_int_equal(zeros, dropped);
    cm_model_free(&back);
    free(older_path);
    free(copy);
    rg_str_free(&older);
    edited = rg_xstrdup(good.s);
    at = strstr(edited, "analytic.gemm.a_bytes = ") + strlen("analytic.gemm.a_bytes = ");
    at[0] = 'z';
    expect_load_error(dir, edited, "is not a number");
    free(edited);
    /* bo's prior lines: a feature no key has, a value that is no sd, one given twice, sds without
     * the noise */
    const char *bo_bad[][2] = {{"bo.noise = 0.05\nbo.sd.nope = 0.1\n", "unknown key 'bo.sd.nope'"},
                               {"bo.noise = 0.05\nbo.sd.reorder = -1\n", "must be positive"},
                               {"bo.noise = 0.05\nbo.sd.reorder = 0.1\nbo.sd.reorder = 0.2\n", "given twice"},
                               {"bo.sd.reorder = 0.1\n", "no bo.noise"}};
    for (int k = 0; k < 4; k++) {
        edited = rg_xasprintf("%s%s", good.s, bo_bad[k][0]);
        expect_load_error(dir, edited, bo_bad[k][1]);
        free(edited);
    }
    expect_load_error(dir, "format = rgnn-costmodel 9\n", "bad.txt:1: format");
    expect_load_error(dir, "device = x\n", "not a cost model file");
    expect_load_error(dir, "format = rgnn-costmodel 2\nbandwidth_bytes_per_s = 1e12\npeak_flops_per_s = 1e13\n[rgat\n",
                      "bad.txt:4: expected a section header");
    expect_load_error(dir, "format = rgnn-costmodel 2\n[rgat walk]\n", "bad.txt:2: unknown task");
    cm_model none;
    assert_int_equal(cm_load("/nonexistent/model.txt", &none, &err), -1);
    assert_non_null(strstr(err.msg, "explore fit"));
    rg_str_free(&good);
    cm_model_free(&m);
    cm_set_free(&s);
    free(path);
    tu_rm_tree(dir);
}

/* ---- ranking metrics ---- */

static void test_spearman_known(void **state)
{
    (void)state;
    double x[5] = {1, 2, 3, 4, 5}, same[5] = {10, 20, 30, 40, 50}, rev[5] = {9, 7, 5, 3, 1}, ties[5] = {5, 6, 7, 8, 7};
    assert_float_equal(cm_spearman(x, same, 5), 1.0, 1e-12);
    assert_float_equal(cm_spearman(x, rev, 5), -1.0, 1e-12);
    /* ranks of ties: 1 2 3.5 5 3.5 -> 8 / sqrt(10 * 9.5) */
    assert_float_equal(cm_spearman(x, ties, 5), 8 / sqrt(95.0), 1e-12);
    assert_true(isnan(cm_spearman(x, same, 1)));
}

static void test_score_ranking(void **state)
{
    (void)state;
    double pred[5] = {3, 1, 2, 5, 4}, meas[5] = {10, 12, 9, 20, 15};
    cm_score sc;
    cm_score_ranking(pred, meas, 5, 2, &sc);
    assert_int_equal(sc.picked, 1);
    assert_int_equal(sc.oracle, 2);
    assert_float_equal(sc.picked_ms, 12, 0);
    assert_float_equal(sc.oracle_ms, 9, 0);
    assert_float_equal(sc.topk_ms, 9, 0);
    assert_false(sc.hit);
    cm_score_ranking(pred, meas, 5, 1, &sc);
    assert_float_equal(sc.topk_ms, 12, 0);
    cm_score_ranking(meas, meas, 5, 99, &sc);
    assert_true(sc.hit);
    assert_int_equal(sc.top_k, 5);
    assert_float_equal(sc.spearman, 1.0, 1e-12);
}

/* ---- counting and ordering on a real (small) graph ---- */

static hg_graph *small_graph(void)
{
    rg_err err;
    ds_options o = {.no_cache = 1, .quiet = 1};
    hg_graph *g = ds_open(SMALL_GRAPH, &o, &err);
    if (!g) fail_msg("%s", err.msg);
    return g;
}

static void test_count_variants(void **state)
{
    (void)state;
    hg_graph *g = small_graph();
    cg_config off, on;
    cfg_default(&on);
    cfg_default(&off);
    assert_int_equal(cfg_parse(&off, "compact=off", NULL), 0);
    cm_counts a, b;
    rg_err err;
    assert_int_equal(cm_count("rgat", "infer", 64, 64, 1, g, &off, &a, &err), 0);
    assert_int_equal(cm_count("rgat", "inference", 64, 64, 1, g, &on, &b, &err), 0);
    assert_true(a.flops > 0 && a.bytes > 0 && a.launches >= 2);
    assert_float_equal(a.launches, a.cat_launches[CM_GEMM] + a.cat_launches[CM_TRAVERSAL] + a.cat_launches[CM_OTHER], 0);
    assert_true(a.cat_launches[CM_GEMM] >= 1);
    /* compaction (ratio 0.6) computes the compactable GEMM on fewer rows */
    assert_true(b.flops < a.flops);
    assert_int_equal(cm_count("nosuchmodel", "infer", 64, 64, 1, g, &on, &a, &err), -1);
    assert_int_equal(cm_count("rgat", "walk", 64, 64, 1, g, &on, &a, &err), -1);
    hg_free(g);
}

static void test_order_and_sweep_hook(void **state)
{
    (void)state;
    cm_set s;
    fixture_set(&s);
    cm_model m;
    rg_err err;
    assert_int_equal(cm_fit(&s, NULL, &m, &err), 0);
    hg_graph *g = small_graph();
    cg_config cfgs[NCFG];
    for (int i = 0; i < NCFG; i++) fixture_config(i, &cfgs[i]);
    xb_problem p = {.model = "rgat", .dataset = SMALL_GRAPH, .task = "infer", .dim_in = 64, .dim_out = 64, .heads = 1};
    int order[NCFG], seen[NCFG] = {0};
    double pred[NCFG];
    assert_int_equal(cm_order(&m, &p, g, cfgs, NCFG, order, pred, &err), 0);
    for (int i = 0; i < NCFG; i++) {
        seen[order[i]]++;
        if (i) assert_true(pred[order[i - 1]] <= pred[order[i]]);
        assert_true(isfinite(pred[i]) && pred[i] > 0);
    }
    for (int i = 0; i < NCFG; i++) assert_int_equal(seen[i], 1);
    /* the fixture's rule for a compaction ratio of 0.6: compacting pays, so it leads */
    assert_int_not_equal(cfgs[order[0]].compact, CFG_COMPACT_OFF);
    /* the sweep hook permutes the indices it is given the same way */
    sp_space space = {.name = "fixture", .ndims = 3,
                      .dims = {{"trav", 2, {"node", "edge"}}, {"reorder", 2, {"off", "on"}},
                               {"compact", 3, {"off", "bsearch", "direct"}}}};
    int idx[NCFG];
    for (int i = 0; i < NCFG; i++) {
        cg_config c;
        sp_config_at(&space, i, &c);
        assert_true(cfg_hash(&c) == cfg_hash(&cfgs[i]));   /* point i is fixture config i */
        idx[i] = NCFG - 1 - i;   /* the driver's list need not be in enumeration order */
    }
    xs_order_fn hook = cm_sweep_order;   /* the sweep driver's type: a mismatch fails to compile */
    hook(&m, &p, NULL, &space, idx, NCFG);
    assert_int_equal(idx[0], order[0]);
    /* without a section for the problem the hook leaves the order alone */
    xb_problem other = p;
    snprintf(other.model, sizeof other.model, "hgt");
    for (int i = 0; i < NCFG; i++) idx[i] = i;
    hook(&m, &other, NULL, &space, idx, NCFG);
    for (int i = 0; i < NCFG; i++) assert_int_equal(idx[i], i);
    hg_free(g);
    cm_model_free(&m);
    cm_set_free(&s);
}

/* cm_order counts each structure once: the counts of a point must be those of its structure with
 * every per-kernel-capable key at its default. Checked on a pairwise-covering sample of the default
 * space, RGAT training and HGT inference (a schedule that does not apply is skipped, as cm_order does). */
static void test_counts_depend_on_structure_only(void **state)
{
    (void)state;
    hg_graph *g = small_graph();
    sp_space sp;
    rg_err err;
    assert_int_equal(sp_load("default", &sp, &err), 0);
    long *idx;
    int n = kc_pairwise(&sp, 256, 5, &idx), compared = 0;
    static const char *const problems[][2] = {{"rgat", "train"}, {"hgt", "infer"}};
    for (int q = 0; q < 2; q++)
        for (int i = 0; i < n; i++) {
            cg_config c, base;
            sp_config_at(&sp, idx[i], &c);
            pl_problem p = {.model = problems[q][0], .task = problems[q][1], .dims = {64, 64, 1}};
            if (cfg_validate(&c, &err) || !pl_schedule_applies(&p, &c, &err)) continue;
            cfg_structure(&c, &base);
            cm_counts a, b;
            if (cm_count(p.model, p.task, 64, 64, 1, g, &c, &a, &err) ||
                cm_count(p.model, p.task, 64, 64, 1, g, &base, &b, &err))
                continue;
            if (a.flops != b.flops || a.bytes != b.bytes || a.atomics != b.atomics || a.launches != b.launches ||
                memcmp(a.cat_launches, b.cat_launches, sizeof a.cat_launches))
                fail_msg("%s %s: %s counts differ from its structure's", p.model, p.task, cfg_to_string(&c));
            compared++;
        }
    if (compared < 40) fail_msg("%d of %d points compared", compared, 2 * n);
    printf("%d of %d points compared\n", compared, 2 * n);
    free(idx);
    hg_free(g);
}

/* ---- the command line ---- */

static int run_cli(int (*fn)(int, char **), char **argv)
{
    int argc = 0;
    while (argv[argc]) argc++;
    return fn(argc, argv);
}

static int pick_no_gpu(int argc, char **argv) { return cm_cli_pick(argc, argv, NULL); }

/* What `explore pick` prints on stdout. */
static char *pick_output(const char *dir, char **argv)
{
    char *path = rg_xasprintf("%s/pick.out", dir);
    fflush(stdout);
    int saved = dup(1), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    dup2(fd, 1);
    close(fd);
    int rc = run_cli(pick_no_gpu, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    assert_int_equal(rc, 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *text = rg_xcalloc(1, 65536);
    size_t n = fread(text, 1, 65535, f);
    text[n] = 0;
    fclose(f);
    free(path);
    return text;
}

static void test_cli_fit_and_pick(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = fixture_db(dir), *model = rg_xasprintf("%s/cm.txt", dir);
    rg_err err;
    const char *count_pred = "SELECT count(*) FROM metrics WHERE name = 'predicted_ms' AND kernel = ''";
    char *no_store[] = {"fit", "--db", db, "--out", model, "--top", "2", "--no-store", NULL};
    assert_int_equal(run_cli(cm_cli_fit, no_store), 0);
    assert_int_equal(tu_sql_int(db, count_pred), 0);
    /* stale predictions on every row, the older and failed measurements included */
    rs_store *st = rs_open_existing(db, &err);
    assert_non_null(st);
    rs_row *rows;
    size_t nrows;
    assert_int_equal(rs_query_measurements(st, NULL, &rows, &nrows, &err), 0);
    int64_t *ids = rg_xmalloc(nrows * sizeof *ids);
    double *ones = rg_xmalloc(nrows * sizeof *ones);
    for (size_t i = 0; i < nrows; i++) ids[i] = rows[i].id, ones[i] = 1;
    assert_int_equal(rs_set_metric(st, "predicted_ms", "ms", NULL, ids, ones, nrows, &err), 0);
    assert_true((int64_t)nrows > NDS * NCFG);
    size_t nrows_all = nrows;
    rs_rows_free(rows, nrows);
    rs_close(st);
    free(ids);
    free(ones);
    /* by default a fit only reads the store: fitting the committed store leaves the checkout clean */
    char *plain[] = {"fit", "--db", db, "--out", model, "--top", "2", NULL};
    assert_int_equal(run_cli(cm_cli_fit, plain), 0);
    assert_int_equal(tu_sql_int(db, count_pred), (int64_t)nrows_all);
    char *fit[] = {"fit", "--db", db, "--out", model, "--top", "2", "--store-predictions", NULL};
    assert_int_equal(run_cli(cm_cli_fit, fit), 0);
    /* one out-of-dataset prediction per newest ok measurement (the stale ones of the rows the fit
     * leaves out are gone), replaced (not added) by a refit */
    int64_t stored = tu_sql_int(db, count_pred);
    assert_int_equal(stored, NDS * NCFG);
    assert_int_equal(run_cli(cm_cli_fit, fit), 0);
    assert_int_equal(tu_sql_int(db, count_pred), stored);
    cm_model m;
    assert_int_equal(cm_load(model, &m, &err), 0);
    /* calibrated on the held-out errors of the fit's evaluation: every dataset's problem */
    assert_non_null(m.sections[0].bo_prior);
    assert_int_equal(m.sections[0].bo_problems, NDS);
    assert_true(m.sections[0].bo_prior[0] >= CAL_SD_MIN);
    cm_model_free(&m);
    char *bad_fit[] = {"fit", "--db", db, "--top", "0", NULL};
    assert_int_equal(run_cli(cm_cli_fit, bad_fit), 2);
    /* pick ranks the fixture's twelve configs (compact x reorder x trav), not the default space: what
     * it prints and stores does not depend on the space's size, and ranking the default space's
     * points took each pick seconds (tens under ASan) */
    char *space = tu_write_file(dir, "space.txt", "compact: off bsearch direct\nreorder: off on\ntrav: node edge\n");
    char *pick[] = {"pick", "--model", "rgat", "--dataset", SMALL_GRAPH, "--cm", model, "--db", db, "--show", "3",
                    "--space", space, NULL};
    assert_int_equal(run_cli(pick_no_gpu, pick), 0);
    /* with the static list of the store's datasets (every one of them: the graph is none of them) */
    char *ranked = pick_output(dir, pick);
    cm_set all;
    assert_int_equal(cm_set_load(db, NULL, &all, &err), 0);
    int *train = rg_xmalloc((size_t)all.nproblems * sizeof *train), nlist;
    for (int q = 0; q < all.nproblems; q++) train[q] = 1;
    cg_config *list;
    assert_int_equal(cm_static_list(&all, train, &all.problems[0], &list, &nlist), 0);
    char *first = cfg_to_string(&list[0]), *want = rg_xasprintf("static list (best geomean over the other datasets in %s): %d configs, first %s\n", db, nlist, first);
    if (!strstr(ranked, want)) fail_msg("pick does not show the static list \"%s\":\n%s", want, ranked);
    free(want);
    free(first);
    free(list);
    free(train);
    cm_set_free(&all);
    free(ranked);
    /* measuring needs a device: without one, the "no CUDA device" failure */
    char *measure[] = {"pick", "--model", "rgat", "--dataset", SMALL_GRAPH, "--cm", model, "--db", db,
                       "--measure-top", "2", "--space", space, NULL};
    assert_int_equal(run_cli(pick_no_gpu, measure), 1);
    /* the simulated backend measures the top K */
    char *sim[] = {"pick", "--model", "rgat", "--dataset", SMALL_GRAPH, "--cm", model, "--db", db, "--show", "0",
                   "--measure-top", "3", "--backend", "sim", "--repeats", "3", "--space", space, NULL};
    assert_int_equal(run_cli(pick_no_gpu, sim), 0);
    /* like with like: the oracle is looked up on the device measured on (the simulated one),
     * never the fixture GPU's, so a simulated time is never set against a real GPU's oracle */
    char *text = pick_output(dir, sim);
    if (strstr(text, "gap to the oracle") || !strstr(text, "on 'Simulated GPU (sm_90)'"))
        fail_msg("pick --backend sim compared with another device's oracle:\n%s", text);
    free(text);
    char *no_section[] = {"pick", "--model", "hgt", "--dataset", SMALL_GRAPH, "--cm", model, NULL};
    assert_int_equal(run_cli(pick_no_gpu, no_section), 1);
    char *usage[] = {"pick", "--dataset", SMALL_GRAPH, NULL};
    assert_int_equal(run_cli(pick_no_gpu, usage), 2);
    free(space);
    free(model);
    free(db);
    tu_rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_analytic_recovers_coefficients),
        cmocka_unit_test(test_robust_fit_ignores_outliers),
        cmocka_unit_test(test_analytic_too_few_rows),
        cmocka_unit_test(test_load_from_store),
        cmocka_unit_test(test_load_several_devices),
        cmocka_unit_test(test_lodo_on_fixture_store),
        cmocka_unit_test(test_lodo_learns_an_effect_that_flips),
        cmocka_unit_test(test_weighted_fit_follows_the_fast_configs),
        cmocka_unit_test(test_lodo_needs_two_datasets),
        cmocka_unit_test(test_model_file_round_trip),
        cmocka_unit_test(test_model_file_bo_prior),
        cmocka_unit_test(test_model_file_errors),
        cmocka_unit_test(test_model_file_with_missing_coefficients),
        cmocka_unit_test(test_model_file_before_two_features),
        cmocka_unit_test(test_size_features),
        cmocka_unit_test(test_spearman_known),
        cmocka_unit_test(test_score_ranking),
        cmocka_unit_test(test_count_variants),
        cmocka_unit_test(test_order_and_sweep_hook),
        cmocka_unit_test(test_counts_depend_on_structure_only),
        cmocka_unit_test(test_cli_fit_and_pick),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
