/* Tests of per-kernel schedules without a GPU: an override changes only its instance's kernels (into
 * the uniform config's kernels at that value), bad overrides are refused at build time, and the
 * per-kernel optimum of a store with known kernel times is exact; the per-kernel space's size. */
#include "tests/testutil.h"
#include "codegen/codegen.h"
#include "codegen/pipeline.h"
#include "explorer/perkernel.h"
#include "explorer/space.h"
#include "results/store.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const ir_dims DIMS = {64, 64, 1};

/* rgat inference at dims 64 under `kv` (on the default config), built with nominal sizes. */
static int build(const char *kv, cg_variant *v, rg_err *err)
{
    cg_config c;
    cfg_default(&c);
    if (cfg_parse(&c, kv, err)) return -1;
    pl_problem p = {.model = "rgat", .task = "infer", .dims = DIMS};
    ir_program *ir;
    lw_program *lp;
    int rc = pl_build(&p, &c, NULL, NULL, &ir, &lp, err);
    if (rc) return rc;
    rc = cg_build(ir, lp, &c, v, err);
    lw_free(lp);
    ir_free(ir);
    return rc;
}

static void build_ok(const char *kv, cg_variant *v)
{
    rg_err err;
    if (build(kv, v, &err)) fail_msg("%s: %s", kv, err.msg);
}

/* Whether kernel `name` belongs to instance `inst` (itself or one of its phases INST_pN). */
static int of_instance(const char *name, const char *inst)
{
    size_t n = strlen(inst);
    return !strncmp(name, inst, n) && (name[n] == 0 || (name[n] == '_' && name[n + 1] == 'p'));
}

/* The variant of `base` + `override` differs from `base` exactly in inst's kernels, each equal
 * to the kernel of the uniform config `uniform` (base with the override's value globally). */
static void check_override(const char *base, const char *override, const char *uniform, const char *inst)
{
    char *with = rg_xasprintf("%s,%s", base, override);
    cg_variant a, b, c;
    build_ok(base, &a);
    build_ok(with, &b);
    build_ok(uniform, &c);
    assert_int_equal(a.plan.nkernels, b.plan.nkernels);
    assert_int_equal(c.plan.nkernels, b.plan.nkernels);
    int changed = 0;
    for (int k = 0; k < b.plan.nkernels; k++) {
        const kp_kernel *ka = &a.plan.kernels[k], *kb = &b.plan.kernels[k], *kc = &c.plan.kernels[k];
        assert_string_equal(ka->name, kb->name);
        if (of_instance(kb->name, inst)) {
            if (!strcmp(ka->source, kb->source)) fail_msg("%s: %s did not change", with, kb->name);
            if (strcmp(kc->source, kb->source)) fail_msg("%s: %s is not the kernel of %s", with, kb->name, uniform);
            assert_int_equal(kb->block_x, kc->block_x);
            changed++;
        } else if (strcmp(ka->source, kb->source)) {
            fail_msg("%s: %s changed, but the override is of %s", with, kb->name, inst);
        }
    }
    assert_true(changed > 0);
    cg_variant_free(&a);
    cg_variant_free(&b);
    cg_variant_free(&c);
    free(with);
}

static void test_override_changes_only_its_instance(void **state)
{
    (void)state;
    /* rgat inference's plan: other_1, gemm_2, trav_3, trav_4 (phases trav_4_p0, trav_4_p1) */
    check_override("tile=64,coarsen=4", "gemm_2.tile=32", "tile=32,coarsen=4", "gemm_2");
    check_override("tile=64,coarsen=4", "trav_4.lanes=16", "tile=64,coarsen=4,lanes=16", "trav_4");
    check_override("tile=32", "trav_3.lb=on", "tile=32,lb=on", "trav_3");
    check_override("tile=32", "gemm_2.mma=tf32", "tile=32,mma=tf32", "gemm_2");
}

static void expect_build_error(const char *kv, int want_rc, const char *want)
{
    cg_variant v;
    rg_err err;
    int rc = build(kv, &v, &err);
    if (rc == 0) fail_msg("%s: built", kv);
    assert_int_equal(rc, want_rc);
    if (!strstr(err.msg, want)) fail_msg("%s: '%s' lacks '%s'", kv, err.msg, want);
}

/* A space file may list per-instance keys (`gemm_2.tile: 16 64`): each value is enumerated as that
 * instance's override, like any key (an override equal to the global value is dropped). */
/* A per-kernel combined config of a training plan (explore perkernel) has more per-instance keys than
 * there are global keys; written as a one-point space file it must load whole. */
static void test_space_file_of_a_combined_config(void **state)
{
    (void)state;
    rg_str text = {0};
    rg_str_puts(&text, "compact: direct\nreorder: on\ntile: 16\ncoarsen: 2\nlb: off\n");
    for (int i = 1; i <= 30; i++) rg_str_printf(&text, "gemm_%d.lb: on\n", i);
    char *dir = tu_tmpdir();
    char *path = tu_write_file(dir, "combined.space", text.s);
    sp_space sp;
    sp_point *pts;
    int n;
    rg_err err;
    if (sp_load(path, &sp, &err) || sp_enumerate(&sp, &pts, &n, &err)) fail_msg("%s", err.msg);
    assert_int_equal(sp.ndims, 35);
    assert_int_equal(n, 1);
    cg_config c;
    sp_config_at(&sp, 0, &c);
    assert_int_equal(c.noverrides, 30);
    free(pts);
    free(path);
    rg_str_free(&text);
    tu_rm_tree(dir);
}

static void test_space_file_lists_overrides(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = tu_write_file(dir, "pk.space", "compact: direct\ntile: 32 64\ngemm_2.tile: 16 64\n");
    sp_space sp;
    sp_point *pts;
    int n;
    rg_err err;
    if (sp_load(path, &sp, &err) || sp_enumerate(&sp, &pts, &n, &err)) fail_msg("%s", err.msg);
    assert_int_equal(n, 4);
    static const char *const want[] = {"tile=32,", "tile=32,", "tile=64,", "tile=64,"};
    static const char *const over[] = {"gemm_2.tile=16", "gemm_2.tile=64", "gemm_2.tile=16", NULL};
    for (int i = 0; i < n; i++) {
        cg_config c;
        sp_config_at(&sp, i, &c);
        char *str = cfg_to_string(&c);
        assert_non_null(strstr(str, want[i]));
        if (over[i]) assert_non_null(strstr(str, over[i]));
        else assert_null(strstr(str, "gemm_2."));
        free(str);
    }
    free(pts);
    free(path);
    tu_rm_tree(dir);
}

static void test_override_build_errors(void **state)
{
    (void)state;
    expect_build_error("gemm_9.tile=16", -1, "its instances: other_1, gemm_2, trav_3, trav_4");
    expect_build_error("trav_3.coarsen=8", -1, "trav_3.coarsen changes nothing");
    expect_build_error("other_1.lanes=16", -1, "other_1.lanes changes nothing");
    /* vec=4 with 32 lanes steps over 128 floats of a 64-wide row: the instance's mapping is refused */
    expect_build_error("trav_4.vec=4", PL_INAPPLICABLE, "trav_4: vec=4 does not apply with lanes=32");
    expect_build_error("tile=64,gemm_2.w=reg", -1, "gemm_2: invalid: w=reg");
}

/* ---- the per-kernel optimum of a store with known kernel times ---- */

#define DEVICE "Test GPU (sm_90)"

typedef struct toy_kernel {
    const char *name, *category;
    double ms;
} toy_kernel;

/* A store with one run and the dataset `dataset` (its counts when stats is not NULL). */
static rs_store *open_store(const char *path, const char *dataset, const hg_stats *stats, int64_t *run, int64_t *ds)
{
    rg_err err;
    rs_store *st = rs_open(path, &err);
    assert_non_null(st);
    rs_run_info info = {.commit = "abc", .host = "test", .gpu_name = "Test GPU", .sm = 90};
    *run = rs_begin_run(st, &info, &err);
    *ds = rs_upsert_dataset(st, dataset, stats, &err);
    assert_true(*run > 0 && *ds > 0);
    return st;
}

static void close_store(rs_store *st, int64_t run)
{
    rg_err err;
    assert_int_equal(rs_finish_run(st, run, RS_RUN_FINISHED, &err), 0);
    rs_close(st);
}

/* Stores rgat `task` at dims 64 under config c with the given kernel times (their sum is the
 * layer's time), and a span `span_extra` above that sum when it is positive. */
static void store_variant(rs_store *st, int64_t run, int64_t ds, const cg_config *c, const char *task,
                          const rs_kernel_time *kt, int nk, double span_extra)
{
    char *json = cfg_to_json(c);
    rs_variant v = {.config_json = json, .hash = cfg_hash(c), .model = "rgat", .task = task, .dim_in = 64, .dim_out = 64, .heads = 1};
    rs_measurement m;
    rs_measurement_init(&m);
    m.run_id = run;
    m.dataset_id = ds;
    m.device_key = DEVICE;
    double sum = 0;
    for (int i = 0; i < nk; i++) sum += kt[i].median_ns / 1e6;
    m.median_ms = m.min_ms = m.max_ms = sum;
    rs_metric span = {"", "span_ms", "ms", sum + span_extra};
    tu_store_measurement(st, &v, &m, kt, (size_t)nk, &span, span_extra > 0);
    free(json);
}

static void record(rs_store *st, int64_t run, int64_t ds, const char *kv, const toy_kernel *k, int nk, double span_extra)
{
    rg_err err;
    cg_config c;
    cfg_default(&c);
    if (cfg_parse(&c, kv, &err)) fail_msg("%s: %s", kv, err.msg);
    rs_kernel_time kt[8];
    for (int i = 0; i < nk; i++)
        kt[i] = (rs_kernel_time){.kernel = k[i].name, .category = k[i].category, .median_ns = k[i].ms * 1e6, .spread_ns = NAN};
    store_variant(st, run, ds, &c, "infer", kt, nk, span_extra);
}

/* Structure trav=edge: gemm_2 is fastest at tile 16 (1.0 or 1.2 ms: median 1.1), gemm_5 at tile 32
 * (1.5), trav_3 (two phases) at lanes 16 (0.5), other_1 reads no key (0.1). The best uniform variant
 * is tile=32,lanes=16 (4.1 ms); per kernel: 1.1 + 1.5 + 0.5 + 0.1 = 3.2 with gemm_2.tile=16.
 * Structure trav=node: every kernel 1 ms slower. */
static void toy_structure(rs_store *st, int64_t run, int64_t ds, int node)
{
    for (int tile = 16; tile <= 32; tile *= 2)
        for (int lanes = 16; lanes <= 32; lanes *= 2) {
            double d = node ? 1.0 : 0.0;
            double g2 = tile == 16 ? (lanes == 16 ? 1.0 : 1.2) : 2.0, g5 = tile == 16 ? 3.0 : 1.5;
            double p0 = lanes == 16 ? 0.3 : 0.4, p1 = lanes == 16 ? 0.2 : 0.3;
            toy_kernel edge[] = {{"other_1", "other", 0.1}, {"gemm_2", "gemm", g2}, {"trav_3_p0", "traversal", p0},
                                 {"trav_3_p1", "traversal", p1}, {"gemm_5", "gemm", g5}};
            toy_kernel nodek[] = {{"other_1", "other", 0.1 + d}, {"gemm_2", "gemm", g2 + d},
                                  {"trav_3", "traversal", p0 + p1 + d}, {"gemm_5", "gemm", g5 + d}};
            char kv[128];
            snprintf(kv, sizeof kv, "trav=%s,tile=%d,lanes=%d", node ? "node" : "edge", tile, lanes);
            if (node) record(st, run, ds, kv, nodek, 4, 0);
            else record(st, run, ds, kv, edge, 5, 0.05);
        }
}

static char *toy_store(const char *dir)
{
    char *path = rg_xasprintf("%s/pk.db", dir);
    int64_t run, ds;
    rs_store *st = open_store(path, "toy", NULL, &run, &ds);
    toy_structure(st, run, ds, 0);
    toy_structure(st, run, ds, 1);
    /* a per-kernel variant, faster than all: not a uniform schedule, so left out */
    toy_kernel k[] = {{"other_1", "other", 0.01}};
    record(st, run, ds, "trav=edge,tile=32,lanes=16,gemm_2.tile=16", k, 1, 0);
    close_store(st, run);
    return path;
}

static const pk_inst *find_inst(const pk_structure *s, const char *name)
{
    for (int u = 0; u < s->ninst; u++)
        if (!strcmp(s->inst[u].name, name)) return &s->inst[u];
    fail_msg("no instance %s", name);
    return NULL;
}

static void test_optimum_of_a_store(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *db = toy_store(dir);
    pk_query q = {.db = db, .model = "rgat", .task = "infer", .dataset = "toy", .dim_in = 64, .dim_out = 64, .heads = 1};
    pk_result r;
    rg_err err;
    if (pk_solve_store(&q, &r, &err)) fail_msg("%s", err.msg);
    assert_int_equal(r.nvariants, 8);
    assert_int_equal(r.nother, 1);
    assert_int_equal(r.nstructures, 2);
    assert_true(r.best >= 0);
    const pk_structure *s = &r.s[r.best];
    assert_string_equal(s->name, "compact=direct,reorder=on,trav=edge");
    assert_int_equal(s->skipped, 0);
    assert_int_equal(s->ninst, 4);
    assert_int_equal(find_inst(s, "trav_3")->nkernels, 2);
    assert_int_equal(find_inst(s, "other_1")->kinds, 0);
    assert_float_equal(find_inst(s, "gemm_2")->best_ms, 1.1, 1e-9);
    assert_float_equal(find_inst(s, "gemm_2")->uniform_ms, 2.0, 1e-9);
    assert_float_equal(s->uniform_ms, 4.1, 1e-9);
    assert_float_equal(s->predicted_ms, 3.2, 1e-9);
    assert_float_equal(s->predicted_span_ms, 3.25, 1e-9);
    assert_float_equal(s->model_uniform_ms, 4.1, 1e-9);
    assert_float_equal(s->fixed_ms, 0.1, 1e-9);
    assert_float_equal(s->points, 8, 0);   /* 2 x 2 x 2 x 1 */
    char *c = cfg_to_string(&s->combined);
    assert_string_equal(c, "compact=direct,reorder=on,tile=32,coarsen=2,lb=off,w=shmem,trav=edge,pagg=on,lanes=16,"
                           "gemm_2.tile=16");
    free(c);
    const pk_structure *node = &r.s[1 - r.best];
    assert_string_equal(node->name, "compact=direct,reorder=on,trav=node");
    assert_float_equal(node->predicted_ms, 7.2, 1e-9);
    assert_true(isnan(node->predicted_span_ms));
    assert_float_equal(r.points, 16, 0);
    pk_result_free(&r);

    q.dataset = "absent";
    assert_int_not_equal(pk_solve_store(&q, &r, &err), 0);
    assert_non_null(strstr(err.msg, "no ok uniform-schedule measurement"));
    tu_rm_tree(dir);
    free(db);
}

/* ---- schedules that generate the same kernel are one choice ---- */

static const rr_stats GSTATS = {.nodes = 1000, .edges = 10000, .unique_pairs = 3000, .ntypes = 3, .etypes = 6};
static const pl_problem TRAIN = {.model = "rgat", .task = "train", .dims = {64, 64, 1}};
#define TRAIN_KV "softmax=single,crsum=run,recompute=on"

static void build_train(int wrun, cg_config *c, cg_variant *v)
{
    rg_err err;
    char kv[128];
    snprintf(kv, sizeof kv, TRAIN_KV ",wrun=%d", wrun);
    cfg_default(c);
    if (cfg_parse(c, kv, &err)) fail_msg("%s: %s", kv, err.msg);
    ir_program *ir;
    lw_program *lp;
    if (pl_build_stats(&TRAIN, c, &GSTATS, NULL, &ir, &lp, &err) || cg_build(ir, lp, c, v, &err))
        fail_msg("%s: %s", kv, err.msg);
    lw_free(lp);
    ir_free(ir);
}

/* wrun 16 and 32 of RGAT training stored with made-up kernel times: the first kernel wrun changes
 * (the walk) is twice as fast at 32, the others it changes 20% faster at 16, and every kernel it does
 * not change measures 1% faster at 16 (noise: the same kernel). Returns the store's path; changed[k]
 * says whether kernel k's source differs (the plan's kernels, in order, in names). */
static char *wrun_store(const char *dir, char names[][64], int *changed, int *nk)
{
    char *path = rg_xasprintf("%s/wrun.db", dir);
    hg_stats hs = {.nodes = GSTATS.nodes, .edges = GSTATS.edges, .unique_pairs = GSTATS.unique_pairs,
                   .node_types = (int32_t)GSTATS.ntypes, .edge_types = (int32_t)GSTATS.etypes};
    int64_t run, ds;
    rs_store *st = open_store(path, "toyg", &hs, &run, &ds);
    cg_config c[2];
    cg_variant v[2];
    build_train(16, &c[0], &v[0]);
    build_train(32, &c[1], &v[1]);
    assert_int_equal(v[0].plan.nkernels, v[1].plan.nkernels);
    *nk = v[0].plan.nkernels;
    assert_true(*nk <= 32);
    int first = -1;
    for (int k = 0; k < *nk; k++) {
        snprintf(names[k], 64, "%s", v[0].plan.kernels[k].name);
        changed[k] = strcmp(v[0].plan.kernels[k].source, v[1].plan.kernels[k].source) != 0;
        if (changed[k] && first < 0) first = k;
    }
    assert_true(first >= 0);
    for (int i = 0; i < 2; i++) {
        rs_kernel_time kt[32];
        for (int k = 0; k < *nk; k++) {
            const kp_kernel *kk = &v[i].plan.kernels[k];
            double ms = !changed[k] ? (i == 0 ? 0.100 : 0.101) : k == first ? (i == 0 ? 2.0 : 1.0) : (i == 0 ? 0.5 : 0.6);
            kt[k] = (rs_kernel_time){.kernel = kk->name, .category = kp_category_name(kk->category), .median_ns = ms * 1e6,
                                     .spread_ns = NAN};
        }
        store_variant(st, run, ds, &c[i], "train", kt, *nk, 0);
        cg_variant_free(&v[i]);
    }
    close_store(st, run);
    return path;
}

static void test_same_kernel_is_one_choice(void **state)
{
    (void)state;
    char names[32][64];
    int changed[32], nk;
    char *dir = tu_tmpdir(), *db = wrun_store(dir, names, changed, &nk);
    pk_query q = {.db = db, .model = "rgat", .task = "train", .dataset = "toyg", .dim_in = 64, .dim_out = 64, .heads = 1};
    pk_result r;
    rg_err err;
    if (pk_solve_store(&q, &r, &err)) fail_msg("%s", err.msg);
    assert_int_equal(r.nvariants, 2);
    assert_int_equal(r.nregenerated, 2);
    assert_int_equal(r.nstructures, 1);
    const pk_structure *s = &r.s[0];
    assert_int_equal(s->skipped, 0);
    /* the uniform winner is wrun=32 (the walk); the kernels wrun changes after the walk take 16, and
     * no kernel it leaves alone is overridden, however its two measurements compare */
    rg_str want = {0};
    rg_str_printf(&want, "compact=direct,reorder=on,tile=32,coarsen=2,lb=off,w=shmem,trav=edge,pagg=on,softmax=single,"
                         "crsum=run,recompute=on");
    int first = 1, nchanged = 0;
    for (int k = 0; k < nk; k++) {
        char inst[64];
        memcpy(inst, names[k], sizeof inst);
        inst[63] = 0;
        const pk_inst *in = find_inst(s, inst);
        if (!changed[k]) {
            if (in->kinds) assert_int_equal(in->nchoices, 1);
            assert_float_equal(in->best_ms, 0.1005, 1e-9);   /* the two measurements pooled */
            continue;
        }
        nchanged++;
        assert_int_equal(in->nchoices, 2);
        if (first) {
            first = 0;
            assert_float_equal(in->best_ms, 1.0, 1e-9);
        } else {
            assert_float_equal(in->best_ms, 0.5, 1e-9);
            rg_str_printf(&want, ",%s.wrun=16", inst);
        }
    }
    assert_true(nchanged >= 2);
    char *c = cfg_to_string(&s->combined);
    assert_string_equal(c, want.s);
    free(c);
    free(want.s);
    pk_result_free(&r);
    tu_rm_tree(dir);
    free(db);
}

static void test_space_size(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *space = tu_write_file(dir, "space.txt", "tile: 16 32 64\nlanes: 16 32\ncompact: off direct\n");
    pl_problem p = {.model = "rgcn", .task = "infer", .dims = DIMS};
    pk_space_count n;
    rg_err err;
    if (pk_space_size(space, &p, NULL, &n, &err)) fail_msg("%s", err.msg);
    /* compact=direct: gemm_1, gemm_2 (3 tiles each) and trav_3 (2 lane counts): 18; compact=off: the
     * aggregation fused into gemm_2, no traversal: 9 */
    assert_int_equal(n.nstructures, 2);
    assert_int_equal(n.uniform, 12);
    assert_float_equal(n.points, 27, 0);
    free(space);
    tu_rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_override_changes_only_its_instance),
        cmocka_unit_test(test_override_build_errors),
        cmocka_unit_test(test_space_file_lists_overrides),
        cmocka_unit_test(test_space_file_of_a_combined_config),
        cmocka_unit_test(test_optimum_of_a_store),
        cmocka_unit_test(test_same_kernel_is_one_choice),
        cmocka_unit_test(test_space_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
