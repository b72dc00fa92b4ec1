/* Tests of node orderings (datasets/order.h): each is a permutation within node types, the
 * relabelled graph is the same graph, and the float64 reference on it computes the same layer. */
#include "tests/testutil.h"
#include "codegen/pipeline.h"
#include "codegen/ref.h"
#include "datasets/dataset.h"
#include "datasets/loaders.h"
#include "datasets/order.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SYNTH "nodes=400,edges=6000,ntypes=3,etypes=5,ratio=0.2,seed=9"

static hg_graph *synth(void)
{
    rg_err err;
    hg_graph *g = synth_generate(SYNTH, &err);
    if (!g) fail_msg("synth: %s", err.msg);
    return g;
}

static int32_t deg(const hg_graph *g, int32_t n)
{
    return g->in_ptr[n + 1] - g->in_ptr[n] + g->out_ptr[n + 1] - g->out_ptr[n];
}

/* r is g relabelled by old_of with edge map eo: the same typed graph, edge for edge. */
static void expect_same_graph(const hg_graph *g, const hg_graph *r, const int32_t *old_of, const int32_t *eo)
{
    rg_err err;
    if (hg_validate(r, &err)) fail_msg("relabelled graph: %s", err.msg);
    assert_int_equal(r->num_nodes, g->num_nodes);
    assert_int_equal(r->num_edges, g->num_edges);
    assert_int_equal(r->num_unique, g->num_unique);
    for (int32_t t = 0; t <= g->num_ntypes; t++) assert_int_equal(r->ntype_ptr[t], g->ntype_ptr[t]);
    if (ord_check(g, old_of, &err)) fail_msg("%s", err.msg);
    /* the edge map is a bijection, and each edge is its original under the node map */
    char *hit = calloc((size_t)g->num_edges, 1);
    for (int32_t e = 0; e < r->num_edges; e++) {
        int32_t o = eo[e];
        assert_true(o >= 0 && o < g->num_edges && !hit[o]);
        hit[o] = 1;
        assert_int_equal(old_of[r->src[e]], g->src[o]);
        assert_int_equal(old_of[r->dst[e]], g->dst[o]);
        assert_int_equal(r->etype[e], g->etype[o]);
    }
    free(hit);
    /* so every node keeps its degree (each type's degree sequence is preserved) */
    for (int32_t n = 0; n < r->num_nodes; n++) assert_int_equal(deg(r, n), deg(g, old_of[n]));
}

static void check_ordering(const hg_graph *g, ord_kind kind)
{
    int32_t *old_of = ord_compute(g, kind), *eo = NULL;
    hg_graph *r = ord_relabel(g, old_of, &eo);
    expect_same_graph(g, r, old_of, eo);
    int moved = 0;
    for (int32_t n = 0; n < g->num_nodes; n++) moved += old_of[n] != n;
    if (kind == ORD_ORIG) assert_int_equal(moved, 0);
    else assert_true(moved > 0);   /* a random graph is in neither order already */
    if (kind == ORD_DEGREE)
        for (int32_t t = 0; t < g->num_ntypes; t++)
            for (int32_t n = g->ntype_ptr[t] + 1; n < g->ntype_ptr[t + 1]; n++) assert_true(deg(r, n - 1) >= deg(r, n));
    hg_free(r);
    free(old_of);
    free(eo);
}

static void test_orderings_keep_the_graph(void **state)
{
    (void)state;
    hg_graph *g = synth();
    check_ordering(g, ORD_ORIG);
    check_ordering(g, ORD_DEGREE);
    check_ordering(g, ORD_BFS);
    hg_free(g);
}

/* A real graph with a node type of its own per entity class (the cache's read-only arrays are
 * never written by relabelling). */
static void test_orderings_on_a_real_graph(void **state)
{
    (void)state;
    TU_REQUIRE_DATASET(dir, "aifb");
    free(dir);
    ds_options opt = {.data_dir = tu_shared_datasets(), .quiet = 1};
    rg_err err;
    hg_graph *g = ds_open("aifb", &opt, &err);
    if (!g) fail_msg("aifb: %s", err.msg);
    check_ordering(g, ORD_DEGREE);
    check_ordering(g, ORD_BFS);
    hg_free(g);
}

/* BFS keeps neighbours near: a chain whose ids are shuffled gets ids along the chain back, so
 * the two ends of every edge, far apart before, are at most 2 apart after. */
static void test_bfs_brings_neighbours_closer(void **state)
{
    (void)state;
    enum { N = 500 };
    int32_t shuffled[N];
    for (int32_t i = 0; i < N; i++) shuffled[i] = i;
    rg_rng rng;
    rg_rng_seed(&rng, 3);
    for (int32_t i = N - 1; i > 0; i--) {
        int32_t j = (int32_t)rg_rng_below(&rng, (uint64_t)i + 1), t = shuffled[i];
        shuffled[i] = shuffled[j];
        shuffled[j] = t;
    }
    hg_builder *b = hgb_new("chain");
    int32_t nt = hgb_ntype(b, "node"), et = hgb_etype(b, "next", nt, nt);
    for (int32_t i = 0; i + 1 < N; i++) hgb_add_edge(b, et, shuffled[i], shuffled[i + 1]);
    rg_err err;
    hg_graph *g = hgb_finish(b, 1, &err);
    if (!g) fail_msg("%s", err.msg);
    int32_t *old_of = ord_compute(g, ORD_BFS);
    hg_graph *r = ord_relabel(g, old_of, NULL);
    double span[2] = {0, 0};
    int32_t widest = 0;
    for (int32_t e = 0; e < g->num_edges; e++) {
        span[0] += abs(g->src[e] - g->dst[e]);
        span[1] += abs(r->src[e] - r->dst[e]);
        if (abs(r->src[e] - r->dst[e]) > widest) widest = abs(r->src[e] - r->dst[e]);
    }
    assert_true(widest <= 2);
    assert_true(span[1] * 20 < span[0]);
    hg_free(r);
    free(old_of);
    hg_free(g);
}

/* A map that is not a permutation within node types is named. */
static void test_check_refuses_bad_maps(void **state)
{
    (void)state;
    hg_graph *g = synth();
    int32_t *old_of = ord_compute(g, ORD_ORIG);
    rg_err err;
    old_of[1] = old_of[0];
    assert_int_equal(ord_check(g, old_of, &err), -1);
    assert_non_null(strstr(err.msg, "which another node carries too"));
    old_of[1] = 1;
    int32_t a = g->ntype_ptr[1] - 1, b = g->ntype_ptr[1];   /* the last of type 0, the first of type 1 */
    old_of[a] = b;
    old_of[b] = a;
    assert_int_equal(ord_check(g, old_of, &err), -1);
    assert_non_null(strstr(err.msg, "of type 1"));
    free(old_of);
    hg_free(g);
}

/* Largest |x - y| relative to the largest |y| of two arrays. */
static double rel_max_diff(const double *x, const double *y, int64_t n)
{
    double d = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (fabs(x[i] - y[i]) > d) d = fabs(x[i] - y[i]);
        if (fabs(y[i]) > m) m = fabs(y[i]);
    }
    return m > 0 ? d / m : d;
}

/* Values of variable v on the relabelled run (xr) against the original run (xo), rows mapped
 * back: node rows through old_of, edge rows through eo, anything else as is. */
static double mapped_diff(ref_exec *xr, ref_exec *xo, const ir_var *var, int v, const int32_t *old_of, const int32_t *eo)
{
    int64_t rows = ref_rows(xo, v), width = rows ? ref_count(xo, v) / rows : 0;
    const double *r = ref_values(xr, v), *o = ref_values(xo, v);
    const int32_t *map = var->kind == IR_VAR_NODE ? old_of : var->kind == IR_VAR_EDGE ? eo : NULL;
    double *back = malloc(((size_t)ref_count(xo, v) + 1) * sizeof *back);
    for (int64_t i = 0; i < rows; i++)
        memcpy(back + (map ? map[i] : i) * width, r + i * width, (size_t)width * sizeof *back);
    double d = rel_max_diff(back, o, ref_count(xo, v));
    free(back);
    return d;
}

/* The reference on the relabelled graph, data following its nodes, computes the original's
 * values row for row: outputs, loss and every gradient. Without the data maps it does not
 * (the data would stay with the ids), which shows the comparison can fail. */
static void check_reference_equivalence(const char *model, const char *task)
{
    rg_err err;
    hg_graph *g = synth();
    int32_t *old_of = ord_compute(g, ORD_BFS), *eo;
    hg_graph *r = ord_relabel(g, old_of, &eo);
    pl_problem p = {.model = model, .task = task, .dims = {8, 8, 2}};
    ir_program *prog = pl_reference_program(&p, &err);
    if (!prog) fail_msg("%s: %s", model, err.msg);
    ref_options oo = {.seed = 5, .nthreads = 2};
    ref_options ro = {.seed = 5, .nthreads = 2, .node_old_of = old_of, .edge_old_of = eo};
    ref_exec *xo = ref_new(prog, g, &oo, &err), *xr = ref_new(prog, r, &ro, &err), *xu = ref_new(prog, r, &oo, &err);
    if (!xo || !xr || !xu) fail_msg("%s", err.msg);
    assert_int_equal(ref_run(xo, &err), 0);
    assert_int_equal(ref_run(xr, &err), 0);
    assert_int_equal(ref_run(xu, &err), 0);
    int compared = 0;
    for (int v = 0; v < prog->nvars; v++) {
        const ir_var *var = &prog->vars[v];
        if (var->kind == IR_VAR_EDGE && var->layout != IR_LAYOUT_VANILLA) continue;
        int64_t n = ref_count(xo, v);
        int finite = n > 0;
        for (int64_t i = 0; i < n && finite; i++) finite = isfinite(ref_values(xo, v)[i]);
        if (!finite) continue;   /* temporaries no statement left values in */
        double d = mapped_diff(xr, xo, var, v, old_of, eo);
        /* sums over edges run in another order: float64 rounding, far below any real difference */
        if (!(d < 1e-10)) fail_msg("%s %s: %s differs by %.3e after relabelling", model, task, var->name, d);
        compared++;
    }
    assert_true(compared > 3);
    int out = prog->output;
    assert_true(mapped_diff(xu, xo, &prog->vars[out], out, old_of, eo) > 1e-3);
    if (prog->loss >= 0) assert_true(fabs(ref_loss(xr) - ref_loss(xo)) <= 1e-12 * fabs(ref_loss(xo)));
    ref_free(xo);
    ref_free(xr);
    ref_free(xu);
    ir_free(prog);
    hg_free(r);
    hg_free(g);
    free(old_of);
    free(eo);
}

static void test_rgcn_reference_follows_relabelling(void **s) { (void)s; check_reference_equivalence("rgcn", "infer"); check_reference_equivalence("rgcn", "train"); }
static void test_rgat_reference_follows_relabelling(void **s) { (void)s; check_reference_equivalence("rgat", "infer"); check_reference_equivalence("rgat", "train"); }
static void test_hgt_reference_follows_relabelling(void **s) { (void)s; check_reference_equivalence("hgt", "infer"); check_reference_equivalence("hgt", "train"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_orderings_keep_the_graph),
        cmocka_unit_test(test_orderings_on_a_real_graph),
        cmocka_unit_test(test_bfs_brings_neighbours_closer),
        cmocka_unit_test(test_check_refuses_bad_maps),
        cmocka_unit_test(test_rgcn_reference_follows_relabelling),
        cmocka_unit_test(test_rgat_reference_follows_relabelling),
        cmocka_unit_test(test_hgt_reference_follows_relabelling),
    };
    return cmocka_run_group_tests_name("order", tests, NULL, NULL);
}
