/* Tests of the tensor exchange (cli/refdump.c, `explore run --dump/--weights/--backend ref`):
 * what a dump holds, that loading it reproduces the run, and the errors of bad directories. */
#include "tests/testutil.h"
#include "cli/refdump.h"
#include "cli/runcli.h"
#include "codegen/pipeline.h"
#include "datasets/loaders.h"
#include "datasets/npy.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GRAPH "nodes=60,edges=300,ntypes=3,etypes=4,ratio=0.3,seed=2"

typedef struct fixture {
    hg_graph *g;
    ir_program *p;
    ref_exec *x;
} fixture;

static void setup_run(fixture *f, const char *model, int out, int heads, uint64_t seed)
{
    rg_err err;
    if (!f->g) f->g = synth_generate(GRAPH, &err);
    assert_non_null(f->g);
    pl_problem pp = {.model = model, .task = "train", .dims = {6, out, heads}};
    f->p = pl_reference_program(&pp, &err);
    if (!f->p) fail_msg("%s", err.msg);
    ref_options ro = {.seed = seed, .nthreads = 2};
    f->x = ref_new(f->p, f->g, &ro, &err);
    if (!f->x) fail_msg("%s", err.msg);
}

static void teardown_run(fixture *f)
{
    ref_free(f->x);
    ir_free(f->p);
    f->x = NULL, f->p = NULL;
}

static void read_numeric(const char *dir, const char *file, npy_array *a)
{
    char *path = rg_xasprintf("%s/%s", dir, file);
    rg_err err;
    if (npy_read_numeric_file(path, a, &err)) fail_msg("%s", err.msg);
    free(path);
}

static void assert_same_values(const npy_array *a, const double *v, int64_t n)
{
    assert_int_equal(a->count, n);
    for (int64_t i = 0; i < n; i++) assert_true(npy_value_at(a, i) == v[i]);
}

/* A training dump holds the weights, their gradients and the SGD-updated weights, labels as
 * int64, with rd_shape's shapes; loading it into an executor seeded differently gives back the
 * same tensors and the same loss, bit for bit. */
static void test_dump_and_reload(void **state)
{
    (void)state;
    fixture f = {0};
    rg_err err;
    setup_run(&f, "hgt", 4, 2, 1);
    assert_int_equal(ref_run(f.x, &err), 0);
    char *dir = tu_tmpdir();
    rd_meta m = {"hgt", "train", GRAPH, 6, 4, 2};
    if (rd_dump(f.x, f.p, f.g, &m, dir, &err)) fail_msg("%s", err.msg);

    int wa = ir_find_var(f.p, "Wa");
    npy_array a;
    read_numeric(dir, "Wa.npy", &a);
    assert_int_equal(a.kind, NPY_F8);
    assert_int_equal(a.ndim, 4);
    assert_int_equal(a.shape[0], f.g->num_etypes);
    assert_int_equal(a.shape[1], 2);
    assert_int_equal(a.shape[2], 2);
    assert_int_equal(a.shape[3], 2);
    assert_same_values(&a, ref_values(f.x, wa), ref_count(f.x, wa));
    npy_free(&a);
    read_numeric(dir, "Wa.sgd.npy", &a);
    const double *w = ref_values(f.x, wa), *dw = ref_values(f.x, f.p->vars[wa].grad);
    for (int64_t i = 0; i < a.count; i++) assert_true(npy_value_at(&a, i) == w[i] - 0.01 * dw[i]);
    npy_free(&a);
    read_numeric(dir, "d_feature.npy", &a);
    assert_same_values(&a, ref_values_by_name(f.x, "d_feature", NULL), ref_count(f.x, ir_find_var(f.p, "d_feature")));
    npy_free(&a);
    read_numeric(dir, "label.npy", &a);
    assert_int_equal(a.kind, NPY_I8);
    npy_free(&a);
    char *manifest = rg_xasprintf("%s/manifest.json", dir);
    char *text = tu_read_file(manifest, NULL);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"file\":\"d_Wm.npy\",\"variable\":\"d_Wm\",\"role\":\"grad\",\"of\":\"Wm\""));
    assert_non_null(strstr(text, "\"role\":\"updated\""));
    free(text), free(manifest);

    double loss = ref_loss(f.x);
    int64_t nw = ref_count(f.x, wa);
    double *w1 = rg_xmalloc((size_t)nw * sizeof *w1);
    memcpy(w1, ref_values(f.x, wa), (size_t)nw * sizeof *w1);
    teardown_run(&f);
    setup_run(&f, "hgt", 4, 2, 77);
    assert_true(ref_values(f.x, wa)[0] != w1[0]);   /* another seed, other weights */
    if (rd_load(f.x, f.p, dir, &err)) fail_msg("%s", err.msg);
    assert_int_equal(ref_run(f.x, &err), 0);
    assert_memory_equal(ref_values(f.x, wa), w1, (size_t)nw * sizeof *w1);
    assert_true(ref_loss(f.x) == loss);
    free(w1);
    teardown_run(&f);
    hg_free(f.g);
    tu_rm_tree(dir);
}

static void expect_load_error(fixture *f, const char *dir, const char *want)
{
    rg_err err;
    assert_int_not_equal(rd_load(f->x, f->p, dir, &err), 0);
    if (!strstr(err.msg, want)) fail_msg("expected '%s' in: %s", want, err.msg);
}

/* Bad --weights directories are refused with the file named: another shape, a missing file,
 * a label that is no class id; the strict .npy reader of datasets still refuses floats. */
static void test_load_errors(void **state)
{
    (void)state;
    fixture f = {0};
    rg_err err;
    setup_run(&f, "rgcn", 4, 1, 1);
    assert_int_equal(ref_run(f.x, &err), 0);
    char *dir = tu_tmpdir();
    rd_meta m = {"rgcn", "train", GRAPH, 6, 4, 1};
    if (rd_dump(f.x, f.p, f.g, &m, dir, &err)) fail_msg("%s", err.msg);
    teardown_run(&f);

    setup_run(&f, "rgcn", 8, 1, 1);
    expect_load_error(&f, dir, "W0.npy: shape (1,1,6,4), but rgcn's 'W0' on this graph has shape (1,1,6,8)");
    teardown_run(&f);

    setup_run(&f, "rgcn", 4, 1, 1);
    char *label = rg_xasprintf("%s/label.npy", dir);
    int64_t shape[3] = {f.g->num_nodes, 1, 1}, *ids = rg_xcalloc((size_t)f.g->num_nodes, sizeof *ids);
    ids[3] = 4;   /* 4 classes: 0..3 */
    assert_int_equal(npy_write_i64(label, 3, shape, ids, &err), 0);
    expect_load_error(&f, dir, "label.npy: label 3 is 4, not a class id in [0, 4)");
    char *w = rg_xasprintf("%s/W.npy", dir);
    npy_array a;
    assert_int_not_equal(npy_read_file(w, &a, &err), 0);
    assert_non_null(strstr(err.msg, "unsupported dtype '<f8'"));
    assert_int_equal(unlink(w), 0);
    expect_load_error(&f, dir, "W.npy: missing");
    free(w), free(ids), free(label);
    teardown_run(&f);
    hg_free(f.g);
    tu_rm_tree(dir);
}

/* `explore run --backend ref --dump DIR` writes the manifest without a GPU; --weights without
 * --backend ref and an unknown backend are usage errors (status 2). */
static void test_run_command(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *out = rg_xasprintf("%s/d", dir);
    char *ok[] = {"run", "--model", "rgat", "--dataset", "synth:" GRAPH, "--dims", "6,4", "--heads", "2",
                  "--task", "train", "--backend", "ref", "--dump", out, NULL};
    assert_int_equal(xr_run_main(15, ok), 0);
    char *manifest = rg_xasprintf("%s/manifest.json", out);
    assert_true(rg_file_exists(manifest));
    char *again[] = {"run", "--model", "rgat", "--dataset", "synth:" GRAPH, "--dims", "6,4", "--heads", "2",
                     "--task", "train", "--backend", "ref", "--weights", out, NULL};
    assert_int_equal(xr_run_main(15, again), 0);
    char *gpu[] = {"run", "--model", "rgat", "--dataset", "synth:" GRAPH, "--weights", out, NULL};
    assert_int_equal(xr_run_main(7, gpu), 2);
    char *bad[] = {"run", "--model", "rgat", "--dataset", "synth:" GRAPH, "--backend", "cpu", NULL};
    assert_int_equal(xr_run_main(7, bad), 2);
    free(manifest), free(out);
    tu_rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dump_and_reload),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_run_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
