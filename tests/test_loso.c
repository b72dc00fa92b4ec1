/* Tests of leave-one-size-out (the fit and the replay never see the held-out size's times), of the
 * oracle label (exhaustive exactly when every valid point is stored) and of the replay section. */
#include "tests/testutil.h"
#include "cli/cmcli.h"
#include "cli/replaycli.h"
#include "explorer/search.h"
#include "results/store.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEVICE "Test GPU (sm_90)"

/* ---- a store: 2 datasets x 3 sizes x 36 configs (compact x reorder x tile x trav) ---- */

#define NDS 2
#define NSIZE 3
#define NCFG 36

static const char *const DS[NDS] = {"alpha", "beta"};
static const double COMPACTION[NDS] = {0.3, 0.9};
static const int DIM[NSIZE] = {32, 64, 64}, HEADS[NSIZE] = {1, 1, 4};

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

/* The optimum moves with the dataset and the size: compaction pays with the ratio, the tile
 * with the dims, edges with the heads. */
static double time_of(int d, int z, const cg_config *c)
{
    double e = 0;
    if (c->compact != CFG_COMPACT_OFF) e += 0.9 * log(COMPACTION[d]) + (c->compact == CFG_COMPACT_BSEARCH ? 0.05 : 0);
    e += 0.1 * fabs(log(c->tile / (double)DIM[z]));
    if (!c->node_centric) e += 0.2 - 0.1 * HEADS[z];
    if (c->reorder) e -= 0.05;
    return (1 + d) * (DIM[z] / 32.0) * HEADS[z] * exp(e);
}

static void record(rs_store *st, int64_t run, int64_t ds, int z, const cg_config *cfg, double ms)
{
    char *json = cfg_to_json(cfg);
    /* one variant per config and size: the size goes into the hash, as the sweep's does */
    rs_variant v = {.config_json = json, .hash = cfg_hash(cfg) ^ (uint64_t)(z + 1) * 0x9e3779b97f4a7c15ull, .model = "rgat",
                    .task = "infer", .dim_in = DIM[z], .dim_out = DIM[z], .heads = HEADS[z]};
    rs_measurement m;
    rs_measurement_init(&m);
    m.run_id = run;
    m.dataset_id = ds;
    m.device_key = DEVICE;
    m.status = RS_OK;
    m.median_ms = m.min_ms = m.max_ms = ms;
    double dim = DIM[z] * HEADS[z];
    rs_metric mt[4] = {{"", "analytic_flops", "count", 1e6 * dim * (1 + cfg->tile / 64.0)},
                       {"", "analytic_bytes", "count", 1e6 * dim * (cfg->compact == CFG_COMPACT_OFF ? 2 : 1)},
                       {"", "analytic_atomics", "count", cfg->node_centric ? 0 : 1e5 * dim},
                       {"", "analytic_launches", "count", 3}};
    tu_store_measurement(st, &v, &m, NULL, 0, mt, 4);
    free(json);
}

/* The store; size `held` (-1: none) has its times multiplied by a factor that reorders its configs. */
static char *make_db(const char *dir, const char *name, int held)
{
    char *path = rg_xasprintf("%s/%s", dir, name);
    rg_err err;
    rs_store *st = rs_open(path, &err);
    assert_non_null(st);
    rs_run_info info = {.commit = "abc", .host = "test", .gpu_name = "Test GPU", .sm = 90};
    int64_t run = rs_begin_run(st, &info, &err);
    assert_true(run > 0);
    for (int d = 0; d < NDS; d++) {
        hg_stats s;
        memset(&s, 0, sizeof s);
        s.nodes = 10000, s.edges = 100000, s.node_types = 3, s.edge_types = 10 + 30 * d;
        s.unique_pairs = (int64_t)(COMPACTION[d] * 100000), s.compaction_ratio = COMPACTION[d];
        s.avg_degree = 5 + 10 * d, s.rel_min = 10, s.rel_max = 5000, s.rel_median = 800, s.rel_skew = 1.5;
        s.max_in_degree = 300, s.in_degree_skew = 4;
        int64_t ds = rs_upsert_dataset(st, DS[d], &s, &err);
        assert_true(ds > 0);
        for (int z = 0; z < NSIZE; z++)
            for (int i = 0; i < NCFG; i++) {
                cg_config c;
                config_of(i, &c);
                record(st, run, ds, z, &c, time_of(d, z, &c) * (z == held ? 1 + 0.7 * ((i * 7) % 5) : 1));
            }
    }
    assert_int_equal(rs_finish_run(st, run, RS_RUN_FINISHED, &err), 0);
    rs_close(st);
    return path;
}

static int size_index(const cm_problem *p)
{
    for (int z = 0; z < NSIZE; z++)
        if (p->dim_in == DIM[z] && p->heads == HEADS[z]) return z;
    fail_msg("unknown size %dx%dh%d", p->dim_in, p->dim_out, p->heads);
    return -1;
}

static void loso_of(const char *db, cm_set *s, cm_eval *e)
{
    rg_err err;
    if (cm_set_load(db, NULL, s, &err)) fail_msg("cm_set_load: %s", err.msg);
    assert_int_equal(s->nsamples, NDS * NSIZE * NCFG);
    if (cm_loso(s, NULL, e, &err)) fail_msg("cm_loso: %s", err.msg);
}

/* The row of problem q, or NULL. */
static const cm_eval_row *row_of(const cm_eval *e, int q)
{
    for (int r = 0; r < e->nrows; r++)
        if (e->rows[r].problem == q) return &e->rows[r];
    return NULL;
}

/* Changing the held-out size's times moves none of its predictions, picks or static lists; changing
 * them moves the other sizes' predictions (they are trained on it), so the check can fail. */
static void test_loso_ignores_the_held_out_size(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *plain = make_db(dir, "plain.db", -1), *moved = make_db(dir, "moved.db", 0);
    cm_set a, b;
    cm_eval ea, eb;
    loso_of(plain, &a, &ea);
    loso_of(moved, &b, &eb);
    int held = 0, changed = 0, other_moved = 0;
    for (int i = 0; i < a.nsamples; i++) {
        assert_int_equal(a.samples[i].cfg_key, b.samples[i].cfg_key);   /* same store order */
        int z = size_index(&a.problems[a.samples[i].problem]);
        assert_true(isfinite(ea.sample_pred[i]));
        if (z == 0) {
            changed += a.samples[i].time_ms != b.samples[i].time_ms;
            assert_true(ea.sample_pred[i] == eb.sample_pred[i]);
            held++;
        } else {
            other_moved += ea.sample_pred[i] != eb.sample_pred[i];
        }
    }
    assert_int_equal(held, NDS * NCFG);
    assert_true(changed > held / 2);
    assert_true(other_moved > 0);
    for (int q = 0; q < a.nproblems; q++) {
        if (size_index(&a.problems[q]) != 0) continue;
        const cm_eval_row *ra = row_of(&ea, q), *rb = row_of(&eb, q);
        assert_non_null(ra);
        assert_non_null(rb);
        assert_true(ra->have_fixed && rb->have_fixed);
        assert_int_equal(cfg_hash(&ra->picked), cfg_hash(&rb->picked));
        assert_int_equal(cfg_hash(&ra->fixed), cfg_hash(&rb->fixed));
    }
    /* the replay's --cm loso: the same predictions and static lists for the held-out size */
    sr_set sa, sb;
    rg_err err;
    sr_load_options o = {.cm = SR_CM_LOSO};
    if (sr_load(plain, &o, &sa, &err) || sr_load(moved, &o, &sb, &err)) fail_msg("sr_load: %s", err.msg);
    assert_int_equal(sa.n, NDS * NSIZE);
    assert_non_null(strstr(sa.model_source, "leave-one-size-out"));
    for (int q = 0; q < sa.n; q++) {
        const sr_problem *pa = &sa.problems[q], *pb = &sb.problems[q];
        if (size_index(&pa->prob) != 0) continue;
        assert_true(pa->nstatic > 0);
        assert_int_equal(pa->nstatic, pb->nstatic);
        for (int k = 0; k < pa->nstatic; k++) assert_int_equal(cfg_hash(&pa->static_list[k]), cfg_hash(&pb->static_list[k]));
        for (int i = 0; i < pa->n; i++) assert_true(pa->points[i].pred_ms == pb->points[i].pred_ms);
    }
    sr_set_free(&sa);
    sr_set_free(&sb);
    cm_eval_free(&ea);
    cm_eval_free(&eb);
    cm_set_free(&a);
    cm_set_free(&b);
    free(plain);
    free(moved);
    tu_rm_tree(dir);
}

/* One size (and spot checks of another) is nothing to hold out. */
static void test_loso_needs_two_swept_sizes(void **state)
{
    (void)state;
    cm_set s;
    memset(&s, 0, sizeof s);
    snprintf(s.device, sizeof s.device, DEVICE);
    for (int z = 0; z < 2; z++) {
        cm_problem p;
        memset(&p, 0, sizeof p);
        snprintf(p.model, sizeof p.model, "rgat");
        snprintf(p.task, sizeof p.task, "infer");
        snprintf(p.dataset, sizeof p.dataset, "alpha");
        p.dim_in = p.dim_out = DIM[z];
        p.heads = 1;
        int q = cm_set_problem(&s, &p);
        for (int i = 0; i < (z == 0 ? NCFG : 2); i++) {
            cm_sample x;
            memset(&x, 0, sizeof x);
            x.problem = q;
            config_of(i, &x.cfg);
            x.time_ms = time_of(0, z, &x.cfg);
            x.counts.flops = x.counts.bytes = 1e6;
            cm_set_add(&s, &x);
        }
    }
    cm_eval e;
    rg_err err;
    assert_int_equal(cm_loso(&s, NULL, &e, &err), -1);
    assert_non_null(strstr(err.msg, "at least 2 sizes"));
    cm_set_free(&s);
}

/* ---- the oracle label ---- */

/* tile x w x compact: 18 points, of which the 3 with w=reg and tile=64 are invalid. */
static void label_config(int i, cg_config *c)
{
    static const char *const compact[3] = {"off", "bsearch", "direct"};
    static const int tile[3] = {16, 32, 64};
    char kv[128];
    snprintf(kv, sizeof kv, "tile=%d,w=%s,compact=%s", tile[i % 3], (i / 3) % 2 ? "reg" : "shmem", compact[i / 6]);
    cfg_default(c);
    assert_int_equal(cfg_parse(c, kv, NULL), 0);
}

/* A set of one problem with the valid points except `skip` (-1: none). */
static void label_set(int skip, sr_set *out, int *skipped_cfg)
{
    cm_set s;
    memset(&s, 0, sizeof s);
    snprintf(s.device, sizeof s.device, DEVICE);
    cm_problem p;
    memset(&p, 0, sizeof p);
    snprintf(p.model, sizeof p.model, "rgcn");
    snprintf(p.task, sizeof p.task, "infer");
    snprintf(p.dataset, sizeof p.dataset, "alpha");
    p.dim_in = p.dim_out = 64;
    p.heads = 1;
    int q = cm_set_problem(&s, &p), valid = 0;
    *skipped_cfg = -1;
    for (int i = 0; i < 18; i++) {
        cm_sample x;
        memset(&x, 0, sizeof x);
        x.problem = q;
        label_config(i, &x.cfg);
        if (cfg_validate(&x.cfg, NULL)) continue;
        if (valid++ == skip) {
            *skipped_cfg = i;
            continue;
        }
        x.time_ms = 1 + i;
        cm_set_add(&s, &x);
    }
    assert_int_equal(valid, 15);
    sr_from_cm_set(&s, NULL, 1, out);
    assert_int_equal(out->n, 1);
    cm_set_free(&s);
}

static void test_oracle_label(void **state)
{
    (void)state;
    char buf[64];
    int skipped, nvalid;
    sr_set all;
    label_set(-1, &all, &skipped);
    assert_int_equal(sr_oracle_exhaustive(&all.problems[0], &nvalid), 1);
    assert_int_equal(nvalid, 15);   /* the invalid points are not asked for */
    assert_string_equal(sr_oracle_label(&all.problems[0], buf, sizeof buf), "exhaustive");
    sr_set_free(&all);
    /* each valid point missing in turn: the oracle is only the best of what was measured */
    for (int skip = 0; skip < 15; skip++) {
        sr_set part;
        label_set(skip, &part, &skipped);
        assert_int_equal(sr_oracle_exhaustive(&part.problems[0], NULL), 0);
        assert_string_equal(sr_oracle_label(&part.problems[0], buf, sizeof buf), "best of 14 measured");
        /* measured and failed: every valid point was measured */
        cg_config c;
        label_config(skipped, &c);
        sr_add_failed(&part, 0, &c);
        assert_int_equal(sr_oracle_exhaustive(&part.problems[0], NULL), 1);
        sr_set_free(&part);
    }
    /* a spot check spans only itself: never exhaustive */
    sr_set few;
    label_set(-1, &few, &skipped);
    few.problems[0].n = SR_MIN_POINTS - 1;
    assert_int_equal(sr_oracle_exhaustive(&few.problems[0], NULL), 0);
    few.problems[0].n = 15;
    sr_set_free(&few);
}

/* ---- the sections of docs/perf-tables.md ---- */

static char *markdown_of(int (*fn)(const char *, FILE *, rg_err *), const char *db)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    assert_non_null(mem);
    rg_err err;
    if (fn(db, mem, &err)) fail_msg("%s", err.msg);
    fclose(mem);
    return text;
}

static int replay_markdown(const char *db, FILE *out, rg_err *err)
{
    return sr_cli_replay_markdown(db, NULL, out, err);
}

/* The transfer section, with models fitted on the same store (the test has one device). */
static int transfer_markdown(const char *db, FILE *out, rg_err *err)
{
    return sr_cli_replay_markdown(db, db, out, err);
}

static void test_sections_are_deterministic(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = make_db(dir, "s.db", -1);
    char *a = markdown_of(replay_markdown, db), *b = markdown_of(replay_markdown, db);
    assert_string_equal(a, b);
    char *cmd = rg_xasprintf("`build/explore replay --db %s --strategy all --budget-frac 0.1 --seed 1 --runs 10 --cm lodo`", db);
    if (!strstr(a, cmd)) fail_msg("the replay section does not name its command %s:\n%s", cmd, a);
    assert_non_null(strstr(a, "Oracles: 6 problems exhaustive, 0 best"));
    assert_non_null(strstr(a, "| random (expected) | 6 |"));
    char *c = markdown_of(cm_cli_loso_markdown, db), *d = markdown_of(cm_cli_loso_markdown, db);
    assert_string_equal(c, d);
    assert_non_null(strstr(c, "| rgat | infer | 64x64h4 | 2 | 2 / 2 |"));
    char *e = markdown_of(transfer_markdown, db), *f = markdown_of(transfer_markdown, db);
    assert_string_equal(e, f);
    char *tcmd = rg_xasprintf("--cm lodo --fit-db %s`", db);
    if (!strstr(e, tcmd)) fail_msg("the transfer section does not name its command %s:\n%s", tcmd, e);
    free(a), free(b), free(c), free(d), free(e), free(f), free(cmd), free(tcmd), free(db);
    tu_rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loso_ignores_the_held_out_size),
        cmocka_unit_test(test_loso_needs_two_swept_sizes),
        cmocka_unit_test(test_oracle_label),
        cmocka_unit_test(test_sections_are_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
