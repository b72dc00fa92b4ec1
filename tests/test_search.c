/* Tests of search and replay: random search's exact expectation, the P-score, the static list
 * (leave-one-dataset-out), every strategy on a synthetic store, determinism, unmeasurable points. */
#include "tests/testutil.h"
#include "cli/cmcli.h"
#include "cli/replaycli.h"
#include "explorer/calib.h"
#include "explorer/search.h"
#include "results/store.h"
#include "results/yardstick.h"

#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEVICE "Test GPU (sm_90)"

/* ---- a synthetic store: 4 datasets x 36 configs (compact x reorder x tile x trav) ---- */

typedef struct synth_ds {
    const char *name;
    double compaction, degree;
    int etypes;
} synth_ds;

static const synth_ds DS[] = {
    {"alpha", 0.30, 2.0, 4}, {"beta", 0.95, 20.0, 40}, {"gamma", 0.50, 8.0, 20}, {"delta", 0.70, 3.0, 6}};
#define NDS 4
#define NCFG 36

static void config_of(int i, cg_config *c)
{
    static const char *const compact[3] = {"off", "bsearch", "direct"};
    static const int tile[3] = {16, 32, 64};
    char kv[128];
    snprintf(kv, sizeof kv, "compact=%s,reorder=%s,tile=%d,trav=%s", compact[i % 3], (i / 3) % 2 ? "on" : "off",
             tile[(i / 6) % 3], (i / 18) % 2 ? "edge" : "node");
    cfg_default(c);
    assert_int_equal(cfg_parse(c, kv, NULL), 0);
}

/* Each dataset has its own optimum: compaction pays with the ratio, edges with the degree,
 * reordering with few relations, and the tile with the number of relations. scale changes only
 * the held-out times of one dataset (the leave-one-dataset-out test). */
static double time_of(int d, const cg_config *c, double scale)
{
    const synth_ds *s = &DS[d];
    double e = 0;
    if (c->compact != CFG_COMPACT_OFF) e += 0.9 * log(s->compaction) + (c->compact == CFG_COMPACT_BSEARCH ? 0.05 : 0);
    if (!c->node_centric) e += 0.3 - 0.2 * log(s->degree);
    if (c->reorder) e += 0.1 * (log(s->etypes) - log(10));
    e += 0.02 * fabs(log(c->tile / 32.0) - 0.3 * log(s->etypes / 10.0));
    return (1 + d) * exp(e) * scale;
}

static hg_stats stats_of(int d)
{
    hg_stats st;
    memset(&st, 0, sizeof st);
    st.nodes = 10000;
    st.edges = 100000;
    st.unique_pairs = (int64_t)(DS[d].compaction * 100000);
    st.node_types = 3;
    st.edge_types = DS[d].etypes;
    st.avg_degree = DS[d].degree;
    st.compaction_ratio = DS[d].compaction;
    st.rel_min = 10;
    st.rel_max = 5000;
    st.rel_median = 800;
    st.rel_skew = 1.5;
    st.max_in_degree = 300;
    st.in_degree_skew = 4;
    return st;
}

static void record(rs_store *st, int64_t run, int64_t ds, const cg_config *cfg, double ms, rs_status status)
{
    char *json = cfg_to_json(cfg);
    rs_variant v = {.config_json = json, .model = "rgat", .task = "infer", .dim_in = 64, .dim_out = 64, .heads = 1};
    rs_measurement m;
    rs_measurement_init(&m);
    m.run_id = run;
    m.dataset_id = ds;
    m.device_key = DEVICE;
    m.status = status;
    if (status == RS_OK) m.median_ms = m.min_ms = m.max_ms = ms;
    /* counts that differ per config, so that the cost model has something to rank with */
    rs_metric mt[4] = {{"", "analytic_flops", "count", 1e9 * (1 + cfg->tile / 64.0)},
                       {"", "analytic_bytes", "count", 4e8 * (cfg->compact == CFG_COMPACT_OFF ? 2 : 1)},
                       {"", "analytic_atomics", "count", 0},
                       {"", "analytic_launches", "count", 3}};
    tu_store_measurement(st, &v, &m, NULL, 0, mt, status == RS_OK ? 4 : 0);
    free(json);
}

/* Multiplies dataset held's compacted configs' times by e^held_warp in the next synth_db: unlike
 * held_scale, a change the ranking sees. */
static double held_warp;

/* The store; held_scale multiplies dataset held's times (1: as the others). A compile error of
 * one extra config per dataset is an unmeasurable point of its space. */
static char *synth_db(const char *dir, const char *name, int held, double held_scale)
{
    char *path = rg_xasprintf("%s/%s", dir, name);
    rg_err err;
    rs_store *st = rs_open(path, &err);
    assert_non_null(st);
    rs_run_info info = {.commit = "abc", .host = "test", .gpu_name = "Test GPU", .sm = 90};
    int64_t run = rs_begin_run(st, &info, &err);
    assert_true(run > 0);
    for (int d = 0; d < NDS; d++) {
        hg_stats s = stats_of(d);
        int64_t ds = rs_upsert_dataset(st, DS[d].name, &s, &err);
        assert_true(ds > 0);
        for (int i = 0; i < NCFG; i++) {
            cg_config c;
            config_of(i, &c);
            double warp = d == held && c.compact != CFG_COMPACT_OFF ? exp(held_warp) : 1;
            record(st, run, ds, &c, time_of(d, &c, d == held ? held_scale : 1) * warp, RS_OK);
        }
        cg_config failed;
        cfg_default(&failed);
        assert_int_equal(cfg_parse(&failed, "lb=on", NULL), 0);
        record(st, run, ds, &failed, 0, RS_COMPILE_ERROR);
    }
    assert_int_equal(rs_finish_run(st, run, RS_RUN_FINISHED, &err), 0);
    rs_close(st);
    return path;
}

static void load(const char *db, const char *cm, sr_set *s)
{
    rg_err err;
    sr_load_options o = {.cm = cm};
    if (sr_load(db, &o, s, &err)) fail_msg("sr_load: %s", err.msg);
    assert_int_equal(s->n, NDS);
}

/* ---- random search's expectation, the P-score ---- */

static void test_random_expectation_is_exact(void **state)
{
    (void)state;
    /* ties included: the formula ranks values, equal ones are interchangeable */
    const double v[] = {0.5, 1.0, 1.0, 2.0, 3.5, 4.0, 4.0, 9.0};
    enum { N = 8 };
    for (int t = 1; t <= N; t++) {
        double sum = 0;
        int subsets = 0;
        for (unsigned mask = 0; mask < 1u << N; mask++) {
            if (__builtin_popcount(mask) != t) continue;
            double best = INFINITY;
            for (int i = 0; i < N; i++)
                if (mask & 1u << i) best = fmin(best, v[i]);
            sum += best;
            subsets++;
        }
        assert_float_equal(ys_random_expected(v, N, t), sum / subsets, 1e-12);
    }
}

static void test_p_score_random_zero_oracle_one(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = synth_db(dir, "s.db", -1, 1);
    sr_set s;
    load(db, SR_CM_NONE, &s);
    const sr_problem *p = &s.problems[0];
    assert_int_equal(p->n, NCFG + 1);   /* the failed point belongs to the space */
    double *rnd = rg_xmalloc((size_t)p->n * sizeof *rnd), *orc = rg_xmalloc((size_t)p->n * sizeof *orc);
    for (int t = 1; t <= p->n; t++) {
        rnd[t - 1] = sr_random_expected(p, t);
        orc[t - 1] = p->oracle_ms;
    }
    assert_float_equal(sr_p_score(p, rnd, p->n), 0, 1e-12);
    assert_float_equal(sr_p_score(p, orc, p->n), 1, 1e-12);
    /* random(n) is the oracle itself, and the unmeasurable point counts as the worst */
    assert_float_equal(rnd[p->n - 1], p->oracle_ms, 1e-12);
    assert_float_equal(p->sorted_ms[p->n - 1], p->worst_ms, 0);
    /* nothing found yet scores as the worst time: below random, a negative P */
    double nothing[3] = {NAN, NAN, NAN};
    assert_true(sr_p_score(p, nothing, 3) < 0);
    free(rnd);
    free(orc);
    sr_set_free(&s);
    free(db);
    tu_rm_tree(dir);
}

/* ---- the static list ---- */

static void test_static_rank(void **state)
{
    (void)state;
    /* 3 problems x 4 configs; problem 2 is held out; config 3 was not measured on problem 1 */
    const double t[3 * 4] = {1.0, 1.9, 1.5, 0.9,   /* oracle 0.9 */
                             4.0, 2.0, 3.0, NAN,   /* oracle 2.0 */
                             0.1, 9.0, 9.0, 9.0};  /* held out: would make config 0 win alone */
    const int train[3] = {1, 1, 0};
    int order[4];
    double score[4];
    assert_int_equal(ys_static_rank(t, 3, 4, train, order, score), 3);
    /* mean log(t / oracle): c0 (log(1/.9) + log 2)/2 = .399, c1 (log(1.9/.9) + 0)/2 = .374,
     * c2 (log(1.5/.9) + log 1.5)/2 = .458; c3 is unscored */
    assert_int_equal(order[0], 1);
    assert_int_equal(order[1], 0);
    assert_int_equal(order[2], 2);
    assert_int_equal(order[3], 3);
    assert_float_equal(score[1], log(1.9 / 0.9) / 2, 1e-12);
    assert_true(isinf(score[3]));
    const int none[3] = {0, 0, 0};
    assert_int_equal(ys_static_rank(t, 3, 4, none, order, NULL), 0);
}

/* The static list of a dataset is the same whatever that dataset's own times are. */
static void test_static_list_leaves_the_dataset_out(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *a = synth_db(dir, "a.db", 1, 1), *b = synth_db(dir, "b.db", 1, 0.2);
    sr_set sa, sb;
    load(a, SR_CM_NONE, &sa);
    load(b, SR_CM_NONE, &sb);
    for (int q = 0; q < NDS; q++) {
        const sr_problem *pa = &sa.problems[q], *pb = &sb.problems[q];
        assert_string_equal(pa->prob.dataset, pb->prob.dataset);
        assert_int_equal(pa->nstatic, NCFG);
        if (strcmp(pa->prob.dataset, DS[1].name)) continue;
        /* beta's times differ between the stores, its list does not */
        assert_true(fabs(pa->oracle_ms - pb->oracle_ms) > 1e-6);
        for (int k = 0; k < pa->nstatic; k++) assert_int_equal(cfg_hash(&pa->static_list[k]), cfg_hash(&pb->static_list[k]));
    }
    /* and it is the geomean ranking over the other datasets, worked out here */
    const sr_problem *beta = NULL;
    for (int q = 0; q < NDS; q++)
        if (!strcmp(sa.problems[q].prob.dataset, DS[1].name)) beta = &sa.problems[q];
    assert_non_null(beta);
    int best = -1;
    double best_score = INFINITY;
    for (int i = 0; i < NCFG; i++) {
        double sc = 0;
        cg_config c;
        config_of(i, &c);
        for (int d = 0; d < NDS; d++) {
            if (d == 1) continue;
            double oracle = INFINITY;
            for (int j = 0; j < NCFG; j++) {
                cg_config cj;
                config_of(j, &cj);
                oracle = fmin(oracle, time_of(d, &cj, 1));
            }
            sc += log(time_of(d, &c, 1) / oracle);
        }
        if (sc < best_score - 1e-12) best_score = sc, best = i;
    }
    cg_config want;
    config_of(best, &want);
    assert_int_equal(cfg_hash(&beta->static_list[0]), cfg_hash(&want));
    sr_set_free(&sa);
    sr_set_free(&sb);
    free(a);
    free(b);
    tu_rm_tree(dir);
}

/* Predictions fitted on another store (--fit-db) leave the problem's dataset out: the held-out
 * dataset's own times in the fit store do not change them, and fitted on this very store they are
 * the leave-one-dataset-out predictions. */
static void test_fit_db_leaves_the_dataset_out(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *a = synth_db(dir, "a.db", -1, 1), *b = synth_db(dir, "b.db", 1, 0.2);
    rg_err err;
    sr_set lodo, self, other;
    load(a, SR_CM_LODO, &lodo);
    sr_load_options o = {.cm = SR_CM_LODO, .fit_db = a};
    if (sr_load(a, &o, &self, &err)) fail_msg("sr_load --fit-db: %s", err.msg);
    o.fit_db = b;
    if (sr_load(a, &o, &other, &err)) fail_msg("sr_load --fit-db: %s", err.msg);
    assert_non_null(strstr(other.model_source, b));
    for (int q = 0; q < NDS; q++) {
        const sr_problem *pl = &lodo.problems[q], *ps = &self.problems[q], *po = &other.problems[q];
        assert_string_equal(pl->prob.dataset, ps->prob.dataset);
        assert_int_equal(pl->n, ps->n);
        int beta = !strcmp(ps->prob.dataset, DS[1].name), differ = 0;
        for (int i = 0; i < ps->n; i++) {
            if (!isfinite(ps->points[i].time_ms)) continue;   /* an unmeasurable point: no counts, no prediction */
            assert_true(isfinite(ps->points[i].pred_ms));
            assert_float_equal(ps->points[i].pred_ms, pl->points[i].pred_ms, 1e-9 * pl->points[i].pred_ms);
            if (beta) assert_float_equal(po->points[i].pred_ms, ps->points[i].pred_ms, 1e-9 * ps->points[i].pred_ms);
            differ |= fabs(po->points[i].pred_ms - ps->points[i].pred_ms) > 1e-6 * ps->points[i].pred_ms;
        }
        /* the other datasets' models did see beta's times, which differ between the stores */
        if (!beta) assert_true(differ);
    }
    sr_set_free(&other);
    o.cm = SR_CM_LOSO;
    assert_int_equal(sr_load(a, &o, &other, &err), -1);
    assert_non_null(strstr(err.msg, "--fit-db"));
    sr_set_free(&lodo);
    sr_set_free(&self);
    free(a);
    free(b);
    tu_rm_tree(dir);
}

/* ---- bo's calibrated prior ---- */

/* The prior of a dataset's problems comes from the other datasets' held-out errors, each of those
 * predictions made without it too: changing its own times (how much compaction costs there) leaves
 * its prior as it was, and changes the others'. */
static void test_calibrated_prior_leaves_the_dataset_out(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *a = synth_db(dir, "a.db", -1, 1);
    held_warp = 0.8;
    char *b = synth_db(dir, "b.db", 1, 1);
    held_warp = 0;
    sr_set sa, sb;
    load(a, SR_CM_LODO, &sa);
    load(b, SR_CM_LODO, &sb);
    assert_int_equal(sa.calibrated, NDS);
    assert_int_equal(sb.calibrated, NDS);
    for (int q = 0; q < NDS; q++) {
        const sr_problem *pa = &sa.problems[q], *pb = &sb.problems[q];
        assert_string_equal(pa->prob.dataset, pb->prob.dataset);
        assert_non_null(pa->prior_sd);
        assert_non_null(pb->prior_sd);
        int beta = !strcmp(pa->prob.dataset, DS[1].name), differ = 0;
        for (int j = 0; j < CAL_NFEAT; j++) {
            assert_true(pa->prior_sd[j] > 0);
            if (beta) assert_float_equal(pa->prior_sd[j], pb->prior_sd[j], 1e-9 * pa->prior_sd[j]);
            differ |= fabs(pa->prior_sd[j] - pb->prior_sd[j]) > 1e-6 * pa->prior_sd[j];
        }
        if (!beta) assert_true(differ);   /* beta's times reach the other datasets' priors */
    }
    /* a run whose strategies do not read the prior skips its calibration */
    sr_set_free(&sb);
    rg_err err;
    sr_load_options skip = {.cm = SR_CM_LODO, .no_prior = 1};
    if (sr_load(a, &skip, &sb, &err)) fail_msg("sr_load: %s", err.msg);
    assert_int_equal(sb.calibrated, 0);
    for (int q = 0; q < sb.n; q++) assert_null(sb.problems[q].prior_sd);
    /* no predictions: no calibration */
    sr_set_free(&sb);
    load(a, SR_CM_NONE, &sb);
    assert_int_equal(sb.calibrated, 0);
    for (int q = 0; q < NDS; q++) assert_null(sb.problems[q].prior_sd);
    /* a model file: the prior explore fit calibrated into it, the same for every dataset */
    sr_set_free(&sb);
    char *model = rg_xasprintf("%s/cm.txt", dir);
    char *fit[] = {"fit", "--db", a, "--out", model, NULL};
    assert_int_equal(cm_cli_fit(5, fit), 0);
    load(a, model, &sb);
    assert_int_equal(sb.calibrated, NDS);
    for (int q = 0; q < NDS; q++) {
        assert_non_null(sb.problems[q].prior_sd);
        assert_memory_equal(sb.problems[q].prior_sd, sb.problems[0].prior_sd, CAL_NFEAT * sizeof(double));
    }
    free(model);
    sr_set_free(&sa);
    sr_set_free(&sb);
    free(a);
    free(b);
    tu_rm_tree(dir);
}

static int feature_index(const char *name)
{
    for (int i = 0; i < CFG_NFEATURES; i++)
        if (!strcmp(cfg_feature_name(i), name)) return 1 + i;   /* after the intercept */
    fail_msg("no feature %s", name);
    return -1;
}

/* A model that misses compaction's cost on a problem: the residual fit puts its largest effect on
 * the compaction bits, none on a key the problem never varies, and leaves little unexplained. */
static void test_residual_effects_find_what_the_model_missed(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = synth_db(dir, "r.db", -1, 1);
    cm_set s;
    rg_err err;
    if (cm_set_load(db, NULL, &s, &err)) fail_msg("cm_set_load: %s", err.msg);
    double *pred = rg_xmalloc((size_t)s.nsamples * sizeof *pred);
    for (int i = 0; i < s.nsamples; i++)   /* the truth, but 2x too fast wherever rows are compacted */
        pred[i] = s.samples[i].time_ms / (s.samples[i].cfg.compact == CFG_COMPACT_DIRECT ? 2 : 1);
    double coef[CAL_NFEAT];
    unsigned char varied[CAL_NFEAT];
    assert_int_equal(cal_residual_effects(&s, 0, pred, coef, varied), 0);
    int direct = feature_index("compact_direct"), lb = feature_index("lb");
    assert_true(varied[direct]);
    assert_false(varied[lb]);   /* every config of the store has lb off */
    assert_true(coef[lb] == 0);
    assert_true(coef[direct] > 0.2);
    for (int j = 1; j < CAL_NFEAT; j++)
        if (j != direct) assert_true(fabs(coef[j]) < coef[direct]);
    assert_true(coef[0] < 0.1);   /* the misfit: log 2 split over bits and pairs leaves little */
    /* too few predicted rows: nothing to say */
    for (int i = 0; i < s.nsamples; i++) pred[i] = NAN;
    assert_int_equal(cal_residual_effects(&s, 0, pred, coef, varied), -1);
    free(pred);
    cm_set_free(&s);
    free(db);
    tu_rm_tree(dir);
}

/* The prior sd: the root mean square of the effects where the feature varied, at least
 * CAL_SD_MIN, the fallback where it never did. */
static void test_prior_sd_is_the_rms_effect(void **state)
{
    (void)state;
    cal_prior p;
    cal_prior_init(&p);
    double coef[CAL_NFEAT] = {0};
    unsigned char varied[CAL_NFEAT] = {0};
    varied[1] = varied[2] = 1;
    coef[1] = 0.3, coef[2] = 0.001;
    cal_prior_add(&p, coef, varied);
    coef[1] = -0.4;
    cal_prior_add(&p, coef, varied);
    double sd[CAL_NFEAT];
    cal_prior_sd(&p, 0.25, sd);
    assert_int_equal(p.problems, 2);
    assert_float_equal(sd[1], sqrt((0.09 + 0.16) / 2), 1e-12);
    assert_float_equal(sd[2], CAL_SD_MIN, 1e-12);
    assert_float_equal(sd[3], 0.25, 1e-12);
}

/* ---- strategies ---- */

static void test_every_strategy_finds_the_optimum(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = synth_db(dir, "s.db", -1, 1);
    const char *cms[2] = {SR_CM_NONE, SR_CM_LODO};
    for (int m = 0; m < 2; m++) {
        sr_set s;
        load(db, cms[m], &s);
        for (int q = 0; q < s.n; q++) {
            const sr_problem *p = &s.problems[q];
            double *best = rg_xmalloc((size_t)p->n * sizeof *best);
            for (int k = 0; k < sr_nstrategies(); k++) {
                sr_search(sr_strategy_at(k), p, p->n, 7, best);
                if (best[p->n - 1] != p->oracle_ms)
                    fail_msg("%s (cm %s) on %s: %g after the whole space, oracle %g", sr_strategy_at(k)->name, cms[m],
                             p->prob.dataset, best[p->n - 1], p->oracle_ms);
                for (int t = 1; t < p->n; t++)   /* best so far never gets worse */
                    assert_true(!isfinite(best[t - 1]) || best[t] <= best[t - 1]);
            }
            free(best);
        }
        sr_set_free(&s);
    }
    free(db);
    tu_rm_tree(dir);
}

static void test_strategies_are_deterministic(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = synth_db(dir, "s.db", -1, 1);
    sr_set s;
    load(db, SR_CM_LODO, &s);
    const sr_problem *p = &s.problems[2];
    int budget = p->n / 2;
    double *a = rg_xmalloc((size_t)budget * sizeof *a), *b = rg_xmalloc((size_t)budget * sizeof *b);
    for (int k = 0; k < sr_nstrategies(); k++) {
        sr_search(sr_strategy_at(k), p, budget, 11, a);
        sr_search(sr_strategy_at(k), p, budget, 11, b);
        assert_memory_equal(a, b, (size_t)budget * sizeof *a);
    }
    /* and the seed matters to random search: some seed of a few finds a different curve */
    const sr_strategy *rnd = sr_strategy_find("random");
    sr_search(rnd, p, budget, 1, a);
    int differs = 0;
    for (uint64_t seed = 2; seed < 6 && !differs; seed++) {
        sr_search(rnd, p, budget, seed, b);
        differs = memcmp(a, b, (size_t)budget * sizeof *a) != 0;
    }
    assert_true(differs);
    assert_null(sr_strategy_find("exhaustive"));
    free(a);
    free(b);
    sr_set_free(&s);
    free(db);
    tu_rm_tree(dir);
}

/* Sampled random search averages to its exact expectation, and problems of one size do not
 * share a permutation for one seed (their errors would not average out over problems). */
static void test_random_search_matches_its_expectation(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = synth_db(dir, "s.db", -1, 1);
    sr_set s;
    load(db, SR_CM_NONE, &s);
    const sr_strategy *rnd = sr_strategy_find("random");
    double log_ratio = 0;
    for (int q = 0; q < s.n; q++) {
        sr_result r;
        sr_replay(rnd, &s.problems[q], 10, 1, 4000, &r);
        assert_true(fabs(r.p_score) < 0.05);
        log_ratio += log(r.curve[2] / sr_random_expected(&s.problems[q], 3));
        sr_result_free(&r);
    }
    assert_true(fabs(log_ratio / s.n) < 0.01);
    /* one seed on problems that differ only in their dataset's name: different first draws */
    cm_set twins;
    memset(&twins, 0, sizeof twins);
    for (int d = 0; d < 20; d++) {
        cm_problem p;
        memset(&p, 0, sizeof p);
        snprintf(p.model, sizeof p.model, "rgat");
        snprintf(p.task, sizeof p.task, "infer");
        snprintf(p.dataset, sizeof p.dataset, "twin%d", d);
        p.dim_in = p.dim_out = 64;
        p.heads = 1;
        int q = cm_set_problem(&twins, &p);
        for (int i = 0; i < NCFG; i++) {
            cm_sample x;
            memset(&x, 0, sizeof x);
            x.problem = q;
            config_of(i, &x.cfg);
            x.time_ms = 1 + i;
            cm_set_add(&twins, &x);
        }
    }
    sr_set ts;
    sr_from_cm_set(&twins, NULL, 1, &ts);
    double first[20];
    int distinct = 0;
    for (int q = 0; q < ts.n; q++) {
        sr_search(rnd, &ts.problems[q], 1, 3, &first[q]);
        distinct += q > 0 && first[q] != first[0];
    }
    assert_true(distinct > 0);
    sr_set_free(&ts);
    cm_set_free(&twins);
    sr_set_free(&s);
    free(db);
    tu_rm_tree(dir);
}

/* A strategy of the test's own: a config the store lacks, the failed point, then the oracle. */
static const sr_problem *probe_problem;
static double probe_t[3];
static int probe_left[4];

static void run_probe(sr_run *r)
{
    cg_config lacking, failed;
    cfg_default(&lacking);
    assert_int_equal(cfg_parse(&lacking, "tile=16,coarsen=1,lb=on", NULL), 0);
    cfg_default(&failed);
    assert_int_equal(cfg_parse(&failed, "lb=on", NULL), 0);
    assert_int_equal(sr_find(probe_problem, &lacking), -1);
    assert_true(sr_find(probe_problem, &failed) >= 0);
    const cg_config *oracle = NULL;
    for (int i = 0; i < probe_problem->n; i++)
        if (probe_problem->points[i].time_ms == probe_problem->oracle_ms) oracle = &probe_problem->points[i].cfg;
    probe_left[0] = sr_left(r);
    probe_t[0] = sr_evaluate(r, &lacking);
    probe_left[1] = sr_left(r);
    probe_t[1] = sr_evaluate(r, &failed);
    probe_left[2] = sr_left(r);
    probe_t[2] = sr_evaluate(r, oracle);
    probe_left[3] = sr_left(r);
}

static void test_unmeasurable_points_cost_a_unit(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = synth_db(dir, "s.db", -1, 1);
    sr_set s;
    load(db, SR_CM_NONE, &s);
    probe_problem = &s.problems[0];
    const sr_strategy probe = {"probe", "test", run_probe, 0};
    double best[4];
    sr_search(&probe, probe_problem, 4, 1, best);
    assert_true(isnan(probe_t[0]) && isnan(probe_t[1]));
    assert_float_equal(probe_t[2], probe_problem->oracle_ms, 0);
    for (int k = 0; k < 4; k++) assert_int_equal(probe_left[k], 4 - k);
    assert_true(isnan(best[0]) && isnan(best[1]));
    assert_float_equal(best[2], probe_problem->oracle_ms, 0);
    assert_float_equal(best[3], probe_problem->oracle_ms, 0);   /* the unspent unit found nothing new */
    /* a replay's curve counts nothing found as the worst time */
    sr_result r;
    sr_replay(&probe, probe_problem, 3, 1, 2, &r);
    assert_float_equal(r.curve[0], probe_problem->worst_ms, 0);
    assert_float_equal(r.curve[2], probe_problem->oracle_ms, 0);
    sr_result_free(&r);
    sr_set_free(&s);
    free(db);
    tu_rm_tree(dir);
}

/* ---- evaluators: the strategies' one path for replay and for a live search ---- */

typedef struct counting {
    int calls, last_at, stop_at;
} counting;

/* Twice the recorded time (a "live" device half as fast); ends the search as told. */
static sr_eval_status counting_eval(void *ctx, const sr_problem *p, int point, const cg_config *cfg, double *t)
{
    counting *c = ctx;
    (void)cfg;
    if (++c->calls == c->stop_at) return SR_EVAL_STOP;
    *t = point >= 0 ? 2 * p->points[point].time_ms : NAN;
    return c->calls == c->last_at ? SR_EVAL_LAST : SR_EVAL_NEXT;
}

static void test_evaluator_answers_and_stops(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = synth_db(dir, "s.db", -1, 1);
    sr_set s;
    load(db, SR_CM_LODO, &s);
    const sr_problem *p = &s.problems[1];
    int n = p->n;
    double *replay = rg_xmalloc((size_t)n * sizeof *replay), *live = rg_xmalloc((size_t)n * sizeof *live);
    const char *names[] = {"random", "model"};
    for (int k = 0; k < 2; k++) {   /* the same picks as replay: only where the times come from differs */
        counting c = {0};
        sr_evaluator ev = {counting_eval, &c};
        sr_search(sr_strategy_find(names[k]), p, n, 3, replay);
        assert_int_equal(sr_search_eval(sr_strategy_find(names[k]), p, n, 3, &ev, live), n);
        assert_int_equal(c.calls, n);
        for (int t = 0; t < n; t++)
            if (!(isnan(replay[t]) && isnan(live[t])) && live[t] != 2 * replay[t])
                fail_msg("%s: evaluation %d found %g, replay %g", names[k], t + 1, live[t], replay[t]);
    }
    counting last = {.last_at = 5};
    sr_evaluator ev = {counting_eval, &last};
    assert_int_equal(sr_search_eval(sr_strategy_find("anneal"), p, n, 3, &ev, live), 5);
    assert_int_equal(last.calls, 5);
    for (int t = 5; t < n; t++) assert_true(live[t] == live[4] || (isnan(live[t]) && isnan(live[4])));
    counting stop = {.stop_at = 3};   /* the stopped call evaluated nothing and costs nothing */
    ev.ctx = &stop;
    assert_int_equal(sr_search_eval(sr_strategy_find("bo"), p, n, 3, &ev, live), 2);
    assert_int_equal(stop.calls, 3);
    free(replay);
    free(live);
    sr_set_free(&s);
    free(db);
    tu_rm_tree(dir);
}

/* ---- the command line ---- */

static int run_replay(char **argv)
{
    int argc = 0;
    while (argv[argc]) argc++;
    fflush(stdout);
    int saved = dup(1), fd = open("/dev/null", O_WRONLY);
    dup2(fd, 1);
    close(fd);
    int rc = sr_cli_replay(argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    return rc;
}

static void test_cli_replay(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = synth_db(dir, "s.db", -1, 1), *csv = rg_xasprintf("%s/curves.csv", dir);
    char *sum = rg_xasprintf("%s/summary.csv", dir);
    size_t n_before;
    char *before = tu_read_file(db, &n_before);
    char *ok[] = {"replay", "--db", db, "--strategy", "random,static", "--budget", "5", "--runs", "2", "--cm", "none",
                  "--out", csv, "--summary-out", sum, NULL};
    assert_int_equal(run_replay(ok), 0);
    size_t n_after;
    char *after = tu_read_file(db, &n_after);
    assert_int_equal(n_before, n_after);   /* the store is only read */
    assert_memory_equal(before, after, n_before);
    char *text = tu_read_file(csv, NULL);
    assert_non_null(text);
    int lines = 0;
    for (char *c = text; *c; c++) lines += *c == '\n';
    assert_int_equal(lines, 1 + 2 * NDS * 5);   /* header, then 2 strategies x 4 problems x 5 evaluations */
    assert_non_null(strstr(text, "static,rgat,infer,\"beta\",64,64,1,\"" DEVICE "\",37,5,"));
    /* the summary curve: each strategy and random's expectation, at the steps every problem reaches
     * (at most 5 of 37 points: floor(f 37) from 3% to 16%); with the whole space measured, random's expectation is the oracle */
    char *summary = tu_read_file(sum, NULL);
    assert_non_null(summary);
    assert_non_null(strstr(summary, "series,strategy,percent_of_space,found_over_oracle\n0,random,3.00,"));
    assert_non_null(strstr(summary, "\n1,static,16.00,"));
    assert_null(strstr(summary, ",16.50,"));
    assert_non_null(strstr(summary, "\n2,random-expected,3.00,"));
    free(summary);
    char *whole[] = {"replay", "--db", db, "--strategy", "model", "--budget-frac", "1", "--runs", "1", "--cm", "lodo",
                     "--summary-out", sum, NULL};
    assert_int_equal(run_replay(whole), 0);
    summary = tu_read_file(sum, NULL);
    assert_non_null(strstr(summary, "\n1,random-expected,100.00,1.000000\n"));
    assert_non_null(strstr(summary, "\n0,model,100.00,1.000000\n"));
    free(summary);
    char *bad[] = {"replay", "--db", db, "--strategy", "random,nope", NULL};
    assert_int_equal(run_replay(bad), 2);
    char *both[] = {"replay", "--db", db, "--budget", "3", "--budget-frac", "0.5", NULL};
    assert_int_equal(run_replay(both), 2);
    char *missing[] = {"replay", "--db", csv, "--cm", "none", NULL};
    assert_int_equal(run_replay(missing), 1);
    free(text);
    free(before);
    free(after);
    free(csv);
    free(sum);
    free(db);
    tu_rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_expectation_is_exact),
        cmocka_unit_test(test_p_score_random_zero_oracle_one),
        cmocka_unit_test(test_static_rank),
        cmocka_unit_test(test_static_list_leaves_the_dataset_out),
        cmocka_unit_test(test_fit_db_leaves_the_dataset_out),
        cmocka_unit_test(test_calibrated_prior_leaves_the_dataset_out),
        cmocka_unit_test(test_residual_effects_find_what_the_model_missed),
        cmocka_unit_test(test_prior_sd_is_the_rms_effect),
        cmocka_unit_test(test_every_strategy_finds_the_optimum),
        cmocka_unit_test(test_strategies_are_deterministic),
        cmocka_unit_test(test_random_search_matches_its_expectation),
        cmocka_unit_test(test_unmeasurable_points_cost_a_unit),
        cmocka_unit_test(test_evaluator_answers_and_stops),
        cmocka_unit_test(test_cli_replay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
