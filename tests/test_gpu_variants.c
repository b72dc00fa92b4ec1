/* GPU correctness sweep: every variant of the default design space, for each model and
 * dataset, and every value of the traversal mapping and relabelling keys, is run with its outputs
 * poisoned and compared with the float64 CPU reference. */
#include "tests/testutil.h"
#include "tests/kcover.h"
#include "measure/backend.h"
#include "codegen/pipeline.h"

#include <stdlib.h>
#include <string.h>

/* ';'-separated lists, overridable for quick runs: RGNN_GPU_MODELS, RGNN_GPU_DATASETS,
 * RGNN_GPU_TASKS (default infer), RGNN_GPU_SPACE (default "default"), RGNN_GPU_SHAPES (dims x
 * heads, default "64x1"; "64x1;128x4" also checks the tensor-core variants at dims 128 with 4
 * heads), RGNN_GPU_TEST (default or mapping: that test alone). */
static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

/* Whether RGNN_GPU_TEST (default: both) names this test, "default" or "mapping": a device call of ten
 * minutes runs one of them. */
static int selected(const char *which)
{
    const char *only = getenv("RGNN_GPU_TEST");
    if (!only || !*only || !strcmp(only, which)) return 1;
    printf("skip: RGNN_GPU_TEST=%s\n", only);
    return 0;
}

/* A point whose pass does not apply to the model (pl_build says PL_INAPPLICABLE). */
static int not_for_model(const pl_problem *p, const cg_config *cfg)
{
    rg_err err;
    return pl_build_verdict(p, cfg, NULL, &err) == PL_INAPPLICABLE;
}

typedef struct tally {
    int checked, failed;
} tally;

/* One problem's sweep: what check_variant needs and what it counts. */
typedef struct sweep {
    xb_backend *b;
    const kc_space *s;
    pl_problem pp;
    const char *model, *dataset, *task;
    xb_options opt;
    int timed;
    int ok, bad, inapplicable;
    double worst;
    tally *t;
} sweep;

/* Valid point v run with its outputs poisoned and compared with the reference (and timed under
 * RGNN_GPU_TIME=1): 0, or 1 when it is not a variant of this problem, so that a covering walk seeks
 * its pairs of values in another point. */
static int check_variant(int v, void *ctx)
{
    sweep *w = ctx;
    cg_config c = kc_config(w->s, v);
    if (not_for_model(&w->pp, &c)) {   /* softmax=single for rgcn, vec wider than rows: recorded invalid */
        w->inapplicable++;
        return 1;
    }
    xb_result r;
    rg_err err;
    if (w->b->measure(w->b, &c, &w->opt, &r, &err)) fail_msg("backend broken: %s", err.msg);
    w->t->checked++;
    char *cs = cfg_to_string(&c);
    int inapplicable = 0;
    if (r.status == RS_INVALID && strstr(r.evidence, "registers a thread, so a block may have")) {
        inapplicable = 1;   /* tblock 1024 past a kernel's registers: refused by name (runtime/exec.h) */
        w->inapplicable++;
        printf("refused %s %s %s [%s]: %.300s\n", w->model, w->dataset, w->task, cs, r.evidence);
    } else if (r.status == RS_OK) {
        w->ok++;
        if (r.validation_error > w->worst) w->worst = r.validation_error;
        if (w->timed)
            printf("TIME %s %s %s %.4f ms (gemm %.4f, traversal %.4f, other %.4f) [%s]\n", w->model, w->dataset,
                   w->task, r.median_ms, r.gemm_ms, r.traversal_ms, r.other_ms, cs);
    } else {
        w->bad++;
        w->t->failed++;
        printf("FAIL %s %s %s [%s]: %s: %.300s\n", w->model, w->dataset, w->task, cs, rs_status_name(r.status),
               r.evidence);
    }
    free(cs);
    return inapplicable;
}

/* Every valid point of the space, or, for a space of more valid points than RGNN_GPU_MAX_POINTS
 * (default 400; the built-in default space has over 20,000 per problem), those of kc_pairs_walk: each
 * pair of values of two keys that a valid point of this problem has, in at least one such point (34 to
 * 57 per problem for the default space, H100 session 34), so that `make gpu-test` ends in minutes. */
static void sweep_problem(xb_backend *b, const char *space, const char *model, const char *dataset, const char *task,
                          int dims, int heads, tally *t)
{
    rg_err err;
    xb_problem p = {.dim_in = dims, .dim_out = dims, .heads = heads, .data_dir = tu_shared_datasets()};
    snprintf(p.model, sizeof p.model, "%s", model);
    snprintf(p.dataset, sizeof p.dataset, "%s", dataset);
    snprintf(p.task, sizeof p.task, "%s", task);
    hg_stats st;
    if (b->prepare(b, &p, &st, &err)) {
        printf("FAIL prepare %s %s %s: %s\n", model, dataset, task, err.msg);
        t->failed++;
        return;
    }
    const char *cap_s = getenv("RGNN_GPU_MAX_POINTS");
    int cap = cap_s && *cap_s ? atoi(cap_s) : 400;
    /* RGNN_GPU_TIME=1 also times every variant (a quick look at the space, not a sweep) */
    const char *timed_s = getenv("RGNN_GPU_TIME");
    sweep w = {.b = b, .s = kc_space_get(space), .model = model, .dataset = dataset, .task = task, .t = t,
               .pp = {.model = model, .task = task, .dims = {p.dim_in, p.dim_out, p.heads}},
               .timed = timed_s && !strcmp(timed_s, "1")};
    w.opt = (xb_options){.validate_only = !w.timed, .compile_threads = 16, .repeats = 5, .warmup = 2};
    int sampled = w.s->nvalid > cap;
    if (sampled) {
        unsigned char *built = rg_xcalloc((size_t)w.s->nvalid + 1, 1);
        kc_set classes = {0};
        kc_walk walk;
        kc_pairs_walk(w.s, &w.pp, check_variant, &w, &classes, built, &walk);
        kc_set_free(&classes);
        free(built);
    } else {
        for (int v = 0; v < w.s->nvalid; v++) check_variant(v, &w);
    }
    printf("%-5s %-10s %-5s dims %d heads %d: %3d variants ok, %d failed, worst relative L2 error %.2e (%d not for "
           "this model)%s\n", model, dataset, task, dims, heads, w.ok, w.bad, w.worst, w.inapplicable,
           sampled ? " [sample covering the pairs of values of its valid points]" : "");
    fflush(stdout);
}

typedef struct pair_probe {
    const kc_space *s;
    pl_problem pp;
    int visits;
} pair_probe;

static int probe_variant(int v, void *ctx)
{
    pair_probe *q = ctx;
    cg_config c = kc_config(q->s, v);
    q->visits++;
    return not_for_model(&q->pp, &c);
}

/* Without a GPU: the sample sweep_problem validates has, in some point it found applicable, every pair of
 * values of two keys that any valid point applicable to the problem has, on a space where the model leaves
 * out most points (RGCN inference: no softmax=single, recompute=on or crsum=run), and it is smaller than
 * the applicable points. */
static void test_sample_covers_pairs_of_valid_points(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = tu_write_file(dir, "pairs.space",
                               "compact: off direct\ntrav: node edge\nsoftmax: twopass single\nlanes: 4 8 32\n"
                               "vec: 1 4\nrecompute: off on\ncrsum: atomic run\n");
    pair_probe q = {.s = kc_space_get(path), .pp = {.model = "rgcn", .task = "infer", .dims = {64, 64, 1}}};
    const kc_space *s = q.s;
    unsigned char *built = rg_xcalloc((size_t)s->nvalid + 1, 1);
    kc_set classes = {0};
    kc_walk walk;
    kc_pairs_walk(s, &q.pp, probe_variant, &q, &classes, built, &walk);
    enum { MAXD = 8, MAXV = 8 };
    int nd = s->sp.ndims, val[SP_MAX_DIMS];
    assert_true(nd <= MAXD);
    for (int a = 0; a < nd; a++) assert_true(s->sp.dims[a].nvals <= MAXV);
    static unsigned char have[MAXD][MAXV][MAXD][MAXV], covered[MAXD][MAXV][MAXD][MAXV];
    memset(have, 0, sizeof have);
    memset(covered, 0, sizeof covered);
    int applicable = 0, picked = 0;
    for (int v = 0; v < s->nvalid; v++) {
        cg_config c = kc_config(s, v);
        if (not_for_model(&q.pp, &c)) continue;
        applicable++;
        kc_point_values(&s->sp, s->point[v], val);
        picked += built[v] == 1;
        for (int a = 0; a < nd; a++)
            for (int b = a + 1; b < nd; b++) {
                have[a][val[a]][b][val[b]] = 1;
                if (built[v] == 1) covered[a][val[a]][b][val[b]] = 1;
            }
    }
    int pairs = 0;
    for (int a = 0; a < nd; a++)
        for (int b = a + 1; b < nd; b++)
            for (int x = 0; x < s->sp.dims[a].nvals; x++)
                for (int y = 0; y < s->sp.dims[b].nvals; y++) {
                    if (!have[a][x][b][y]) continue;
                    pairs++;
                    if (!covered[a][x][b][y])
                        fail_msg("pair %s=%d, %s=%d of an applicable point is not in the sample", s->sp.dims[a].key, x,
                                 s->sp.dims[b].key, y);
                }
    printf("%d applicable of %d valid points, %d pairs, sample %d (%d visits)\n", applicable, s->nvalid, pairs,
           picked, q.visits);
    assert_true(pairs > 0 && picked > 0 && picked < applicable);
    assert_int_equal(walk.built, q.visits);
    kc_set_free(&classes);
    free(built);
    free(path);
    tu_rm_tree(dir);
}

/* Splits a ';'-separated list in place (dataset specs contain commas). */
static int split_list(char *s, char **items, int max)
{
    int n = 0;
    char *save;
    for (char *t = strtok_r(s, ";", &save); t && n < max; t = strtok_r(NULL, ";", &save)) items[n++] = t;
    return n;
}

static void test_default_space_matches_reference(void **state)
{
    (void)state;
    TU_REQUIRE_GPU();
    if (!selected("default")) skip();
    rg_err err;
    xb_backend *b = xb_gpu_backend(&err);
    if (!b) fail_msg("%s", err.msg);
    const char *synth = "synth:nodes=3000,edges=40000,ntypes=3,etypes=8,ratio=0.4";
    char dflt_sets[256];
    snprintf(dflt_sets, sizeof dflt_sets, "%s%s", tu_shared_datasets() ? "aifb;mutag;fb15k237;mag_0.1;" : "", synth);
    char *models_s = rg_xstrdup(env_or("RGNN_GPU_MODELS", "rgcn;rgat;hgt"));
    char *tasks_s = rg_xstrdup(env_or("RGNN_GPU_TASKS", "infer"));
    char *sets_s = rg_xstrdup(env_or("RGNN_GPU_DATASETS", dflt_sets));
    char *shapes_s = rg_xstrdup(env_or("RGNN_GPU_SHAPES", "64x1"));
    char *models[8], *tasks[2], *sets[16], *shapes[8];
    int nm = split_list(models_s, models, 8), nt = split_list(tasks_s, tasks, 2), nd = split_list(sets_s, sets, 16);
    int ns = split_list(shapes_s, shapes, 8);
    tally t = {0, 0};
    for (int s = 0; s < ns; s++) {
        int dims, heads;
        char extra;
        if (sscanf(shapes[s], "%dx%d%c", &dims, &heads, &extra) != 2 || dims < 1 || heads < 1 || dims % heads)
            fail_msg("RGNN_GPU_SHAPES: '%s' is not DIMSxHEADS (e.g. 128x4, heads dividing dims)", shapes[s]);
        for (int i = 0; i < nt; i++)
            for (int j = 0; j < nm; j++)
                for (int k = 0; k < nd; k++) sweep_problem(b, env_or("RGNN_GPU_SPACE", "default"), models[j], sets[k], tasks[i], dims, heads, &t);
    }
    printf("GPU variant sweep: %d variants checked, %d failed\n", t.checked, t.failed);
    b->close(b);
    free(models_s);
    free(tasks_s);
    free(sets_s);
    free(shapes_s);
    assert_int_equal(t.failed, 0);
}

/* Marks in `on` the spaces a ';'- or ','-separated list of indices names (all of them when the list is
 * absent or empty); an index out of range fails the test, naming it. */
static void select_spaces(const char *list, int *on, int n)
{
    for (int i = 0; i < n; i++) on[i] = !list || !*list;
    for (const char *p = list; p && *p;) {
        char *end;
        long k = strtol(p, &end, 10);
        if (end == p || k < 0 || k >= n) fail_msg("RGNN_GPU_MAPPING_ONLY: '%s' is not a list of spaces 0 to %d", list, n - 1);
        on[k] = 1;
        p = *end ? end + 1 : end;
    }
}

/* Every value of the traversal mapping and ordering keys (tblock's ends with and without launch
 * bounds), msg=trav, nchunk at both ends and between, scalars=lane and replicated, epi=on, cdot=edge, rmax=on,
 * vec=8 and unroll on float32 and bfloat16 rows, GEMM coarsening 8, launch=graph|dag, gvec=on and dinit=gemm (the default space leaves some out), across the traversal forms,
 * for every model, inference and training, on a synthetic graph (RGNN_GPU_MAPPING_DATASETS: ';'-separated others;
 * RGNN_GPU_MAPPING_MODELS, RGNN_GPU_MAPPING_TASKS: ';'-separated subsets; RGNN_GPU_MAPPING_ONLY=K or K;L;..: those spaces
 * below alone, counted from 0). */
static void test_mapping_values_match_reference(void **state)
{
    (void)state;
    TU_REQUIRE_GPU();
    if (!selected("mapping")) skip();
    rg_err err;
    xb_backend *b = xb_gpu_backend(&err);
    if (!b) fail_msg("%s", err.msg);
    char *dir = tu_tmpdir();
    /* three small spaces rather than their product: each value meets each form it changes */
    static const char *const spaces[] = {
        "compact: direct\ntile: 64\ncoarsen: 4 8\ntrav: node edge\nvec: 1 2 4\nlanes: 4 8 16 32\n",
        "compact: off bsearch\ntrav: edge\npagg: off\nvec: 1 4\nlanes: 4 16\n",
        "trav: node edge\nlanes: 8 32\ntblock: 128 256 512\nrelabel: orig degree bfs rcm block\n",
        "compact: off direct\ntrav: node edge\nsoftmax: twopass single\nmsg: gemm trav\nnchunk: 1 8 64 1024\n",
        "trav: node edge\nsoftmax: twopass single\nlanes: 8 32\ntblock: 32 64 1024\nlb: off on\n",
        "trav: node edge\npagg: on off\nsoftmax: twopass single\nlanes: 8 16 32\nrecompute: off on\nscalars: lane replicated\n",
        "trav: node edge\npagg: on off\nsoftmax: single\nlanes: 8 32\nacc: smem reg\nnchunk: 4 64\nscalars: group lane\n"
        "recompute: off on\nepi: on\ncdot: table edge\n",
        "trav: node edge\npagg: on off\nsoftmax: twopass single\nlanes: 4 8\nvec: 1 8\nunroll: auto 1 4 8\nstore: f32 bf16\n"
        "acc: smem reg\n",
        /* float32 register accumulators and feature arithmetic (session 24) */
        "trav: node edge\npagg: on off\nsoftmax: twopass single\nlanes: 8 16\nvec: 1 4\nacc: smem reg32\nfarith: f64 f32\n"
        "store: f32 bf16\n",
        /* the run as one CUDA graph, in plan order and as its dependency DAG (session 30), across the structures
         * whose plans differ most in what may overlap */
        "compact: off direct\ntrav: node edge\nsoftmax: twopass single\ncrsum: atomic run\nrecompute: off on\n"
        "launch: stream graph dag\n",
        /* the running maximum of the single-pass softmax (session 33) in each form of the lanes' scalars and the
         * accumulators, split destinations merged through the workspace or not, with and without the epilogue */
        "trav: node\nsoftmax: single\nrmax: off on\nlanes: 8 32\nscalars: group lane replicated\nacc: smem reg reg32\n"
        "epi: off on\nnchunk: 4 1024\n",
        /* the tensor-core GEMMs' float32 outputs 4 floats a thread (gvec, session 35): scattered with vector
         * atomics, stored, added, and the dW tiles, at both tile sizes of the fragments' layouts */
        "compact: off direct\nmma: tf32 bf16\ngvec: off on\nstore: f32 bf16\ntile: 16 64\n",
        /* a summed gradient started by its node-wide linear (dinit, session 35; training only), with and without
         * compaction, tensor cores and the compact rows' run sums */
        "compact: off direct\nmma: off bf16\ndinit: zero gemm\ncrsum: atomic run\nstore: f32 bf16\n",
    };
    enum { NSPACES = sizeof spaces / sizeof spaces[0] };
    char *space[NSPACES];
    for (int i = 0; i < NSPACES; i++) {
        char name[32];
        snprintf(name, sizeof name, "mapping%d.space", i);
        space[i] = tu_write_file(dir, name, spaces[i]);
    }
    char *sets_s = rg_xstrdup(env_or("RGNN_GPU_MAPPING_DATASETS", "synth:nodes=3000,edges=40000,ntypes=3,etypes=8,ratio=0.4"));
    char *sets[16];
    int nd = split_list(sets_s, sets, 16);
    char *models_s = rg_xstrdup(env_or("RGNN_GPU_MAPPING_MODELS", "rgcn;rgat;hgt"));
    char *tasks_s = rg_xstrdup(env_or("RGNN_GPU_MAPPING_TASKS", "infer;train"));
    char *models[8], *tasks[2];
    int nm = split_list(models_s, models, 8), nt = split_list(tasks_s, tasks, 2);
    int only[NSPACES];   /* RGNN_GPU_MAPPING_ONLY's spaces, or all */
    select_spaces(getenv("RGNN_GPU_MAPPING_ONLY"), only, NSPACES);
    tally t = {0, 0};
    for (int i = 0; i < nt; i++)
        for (int j = 0; j < nm; j++)
            for (int k = 0; k < nd; k++)
                for (int q = 0; q < NSPACES; q++)
                    if (only[q]) sweep_problem(b, space[q], models[j], sets[k], tasks[i], 64, 1, &t);
    printf("GPU mapping sweep: %d variants checked, %d failed\n", t.checked, t.failed);
    b->close(b);
    free(models_s);
    free(tasks_s);
    free(sets_s);
    for (int q = 0; q < NSPACES; q++) free(space[q]);
    tu_rm_tree(dir);
    assert_int_equal(t.failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_covers_pairs_of_valid_points),
        cmocka_unit_test(test_default_space_matches_reference),
        cmocka_unit_test(test_mapping_values_match_reference),
    };
    return cmocka_run_group_tests_name("gpu_variants", tests, NULL, NULL);
}
