/* GPU correctness sweep: every variant of the default design space, for each model and
 * dataset, and every value of the traversal mapping and relabelling keys, is run with its outputs
 * poisoned and compared with the float64 CPU reference. */
#include "tests/testutil.h"
#include "tests/kcover.h"
#include "measure/backend.h"
#include "explorer/space.h"
#include "codegen/pipeline.h"

#include <stdlib.h>
#include <string.h>

/* ';'-separated lists, overridable for quick runs: RGNN_GPU_MODELS, RGNN_GPU_DATASETS,
 * RGNN_GPU_TASKS (default infer), RGNN_GPU_SPACE (default "default"), RGNN_GPU_SHAPES (dims x
 * heads, default "64x1"; "64x1;128x4" also checks the tensor-core variants at dims 128 with 4
 * heads). */
static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

/* A point whose pass does not apply to the model (pl_build says PL_INAPPLICABLE). */
static int not_for_model(const pl_problem *p, const cg_config *cfg)
{
    rg_err err;
    return pl_build_verdict(p, cfg, NULL, &err) == PL_INAPPLICABLE;
}

/* The points of a space this test validates: all of them, or, for a space of more valid points than
 * RGNN_GPU_MAX_POINTS (default 400; the built-in default space has over 20,000 per problem), a sample
 * covering every pair of values of every two keys plus 16 more drawn with a fixed seed, so that
 * `make gpu-test` on the default space ends in minutes. Returns how many; caller frees *idx. */
static int points_to_check(const sp_space *sp, const sp_point *pts, int n, long **idx)
{
    const char *cap_s = getenv("RGNN_GPU_MAX_POINTS");
    int cap = cap_s && *cap_s ? atoi(cap_s) : 400;
    if (sp_count_valid(pts, n) <= cap) {
        *idx = rg_xmalloc((size_t)(n > 0 ? n : 1) * sizeof **idx);
        for (int i = 0; i < n; i++) (*idx)[i] = i;
        return n;
    }
    return kc_pairwise(sp, 16, 7, idx);
}

typedef struct tally {
    int checked, failed;
} tally;

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
    sp_space sp;
    sp_point *pts;
    int n;
    assert_int_equal(sp_load(space, &sp, &err), 0);
    assert_int_equal(sp_enumerate(&sp, &pts, &n, &err), 0);
    long *idx;
    int npick = points_to_check(&sp, pts, n, &idx);
    /* RGNN_GPU_TIME=1 also times every variant (a quick look at the space, not a sweep) */
    int timed = getenv("RGNN_GPU_TIME") && !strcmp(getenv("RGNN_GPU_TIME"), "1");
    xb_options opt = {.validate_only = !timed, .compile_threads = 16, .repeats = 5, .warmup = 2};
    int ok = 0, bad = 0, inapplicable = 0;
    double worst = 0;
    pl_problem pp = {.model = model, .task = task, .dims = {p.dim_in, p.dim_out, p.heads}};
    for (int k = 0; k < npick; k++) {
        const long i = idx[k];
        if (!pts[i].valid) continue;
        cg_config c;
        sp_config_at(&sp, i, &c);
        if (not_for_model(&pp, &c)) {   /* softmax=single for rgcn, vec wider than rows: recorded invalid */
            inapplicable++;
            continue;
        }
        xb_result r;
        if (b->measure(b, &c, &opt, &r, &err)) fail_msg("backend broken: %s", err.msg);
        t->checked++;
        if (r.status == RS_INVALID && strstr(r.evidence, "registers a thread, so a block may have")) {
            inapplicable++;   /* tblock 1024 past a kernel's registers: refused by name (runtime/exec.h) */
            char *cs = cfg_to_string(&c);
            printf("refused %s %s %s [%s]: %.300s\n", model, dataset, task, cs, r.evidence);
            free(cs);
        } else if (r.status == RS_OK) {
            ok++;
            if (r.validation_error > worst) worst = r.validation_error;
            if (timed) {
                char *cs = cfg_to_string(&c);
                printf("TIME %s %s %s %.4f ms (gemm %.4f, traversal %.4f, other %.4f) [%s]\n", model, dataset, task,
                       r.median_ms, r.gemm_ms, r.traversal_ms, r.other_ms, cs);
                free(cs);
            }
        } else {
            bad++;
            t->failed++;
            char *cs = cfg_to_string(&c);
            printf("FAIL %s %s %s [%s]: %s: %.300s\n", model, dataset, task, cs, rs_status_name(r.status), r.evidence);
            free(cs);
        }
    }
    printf("%-5s %-10s %-5s dims %d heads %d: %3d variants ok, %d failed, worst relative L2 error %.2e (%d not for "
           "this model)%s\n", model, dataset, task, dims, heads, ok, bad, worst, inapplicable,
           npick < n ? " [pairwise-covering sample of a larger space]" : "");
    fflush(stdout);
    free(idx);
    free(pts);
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

/* Every value of the traversal mapping and ordering keys (tblock's ends with and without launch
 * bounds), msg=trav, nchunk at both ends and between, scalars=lane and replicated, epi=on, cdot=edge, rmax=on,
 * vec=8 and unroll on float32 and bfloat16 rows, GEMM coarsening 8 and launch=graph|dag (the default space leaves some out), across the traversal forms,
 * for every model, inference and training, on a synthetic graph (RGNN_GPU_MAPPING_DATASETS: ';'-separated others;
 * RGNN_GPU_MAPPING_MODELS, RGNN_GPU_MAPPING_TASKS: ';'-separated subsets; RGNN_GPU_MAPPING_ONLY=K: the K-th
 * space below alone, from 0). */
static void test_mapping_values_match_reference(void **state)
{
    (void)state;
    TU_REQUIRE_GPU();
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
    const char *only_s = getenv("RGNN_GPU_MAPPING_ONLY");
    int only = only_s && *only_s ? atoi(only_s) : -1;
    tally t = {0, 0};
    for (int i = 0; i < nt; i++)
        for (int j = 0; j < nm; j++)
            for (int k = 0; k < nd; k++)
                for (int q = 0; q < NSPACES; q++)
                    if (only < 0 || q == only) sweep_problem(b, space[q], models[j], sets[k], tasks[i], 64, 1, &t);
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
        cmocka_unit_test(test_default_space_matches_reference),
        cmocka_unit_test(test_mapping_values_match_reference),
    };
    return cmocka_run_group_tests_name("gpu_variants", tests, NULL, NULL);
}
