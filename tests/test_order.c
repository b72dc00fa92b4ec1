/* Tests of node orderings (datasets/order.h): each is a permutation within node types, the relabelled
 * graph is the same graph, the reference computes the same layer on it; RCM, first touch, the cache. */
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
    hg_graph *g = tu_synth(SYNTH);
    check_ordering(g, ORD_ORIG);
    check_ordering(g, ORD_DEGREE);
    check_ordering(g, ORD_BFS);
    check_ordering(g, ORD_RCM);
    check_ordering(g, ORD_BLOCK);
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
    check_ordering(g, ORD_RCM);
    check_ordering(g, ORD_BLOCK);
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

/* ids 0 .. n-1 in a random order (seeded). */
static void shuffle_ids(int32_t *ids, int32_t n, uint64_t seed)
{
    rg_rng rng;
    rg_rng_seed(&rng, seed);
    for (int32_t i = 0; i < n; i++) ids[i] = i;
    for (int32_t i = n - 1; i > 0; i--) {
        int32_t j = (int32_t)rg_rng_below(&rng, (uint64_t)i + 1), t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
    }
}

/* The bandwidth of a graph: the largest |src - dst| over its edges. */
static int32_t bandwidth(const hg_graph *g)
{
    int32_t widest = 0;
    for (int32_t e = 0; e < g->num_edges; e++)
        if (abs(g->src[e] - g->dst[e]) > widest) widest = abs(g->src[e] - g->dst[e]);
    return widest;
}

static hg_graph *finish(hg_builder *b, int add_reverse)
{
    rg_err err;
    hg_graph *g = hgb_finish(b, add_reverse, &err);
    if (!g) fail_msg("%s", err.msg);
    return g;
}

/* RCM on a chain whose ids are shuffled gives the chain's order back: bandwidth 1, and the end
 * George-Liu starts from (the end of least id: both ends have the least degree) gets the last id,
 * since the sequence is reversed. */
static void test_rcm_restores_a_chain(void **state)
{
    (void)state;
    enum { N = 500 };
    int32_t ids[N];
    shuffle_ids(ids, N, 3);
    hg_builder *b = hgb_new("chain");
    int32_t nt = hgb_ntype(b, "node"), et = hgb_etype(b, "next", nt, nt);
    for (int32_t i = 0; i + 1 < N; i++) hgb_add_edge(b, et, ids[i], ids[i + 1]);
    hg_graph *g = finish(b, 1);
    assert_true(bandwidth(g) > 100);
    int32_t *old_of = ord_compute(g, ORD_RCM);
    hg_graph *r = ord_relabel(g, old_of, NULL);
    assert_int_equal(bandwidth(r), 1);
    assert_int_equal(old_of[N - 1], ids[0] < ids[N - 1] ? ids[0] : ids[N - 1]);
    assert_int_equal(old_of[0], ids[0] < ids[N - 1] ? ids[N - 1] : ids[0]);
    hg_free(r);
    free(old_of);
    hg_free(g);
}

/* A W x H grid (W << H), ids shuffled, with a leaf hung on the middle of a long side: the leaf has
 * the least degree, so the search starts there. From there levels are diamonds up to 2W wide;
 * George-Liu moves the start to a corner, whose levels (anti-diagonals) are at most W wide, and
 * RCM's bandwidth stays within W + 1. BFS from the highest-degree node shows the gap. */
static void test_rcm_finds_a_peripheral_start(void **state)
{
    (void)state;
    enum { W = 6, H = 80, N = W * H + 1 };
    int32_t ids[N];
    shuffle_ids(ids, N, 7);
    hg_builder *b = hgb_new("grid");
    int32_t nt = hgb_ntype(b, "node"), et = hgb_etype(b, "link", nt, nt);
    for (int32_t y = 0; y < H; y++)
        for (int32_t x = 0; x < W; x++) {
            if (x + 1 < W) hgb_add_edge(b, et, ids[y * W + x], ids[y * W + x + 1]);
            if (y + 1 < H) hgb_add_edge(b, et, ids[y * W + x], ids[(y + 1) * W + x]);
        }
    hgb_add_edge(b, et, ids[W * H], ids[(H / 2) * W]);   /* the leaf */
    hg_graph *g = finish(b, 1);
    int32_t *rcm = ord_compute(g, ORD_RCM), *bfs = ord_compute(g, ORD_BFS);
    hg_graph *r = ord_relabel(g, rcm, NULL), *rb = ord_relabel(g, bfs, NULL);
    if (bandwidth(r) > W + 1) fail_msg("rcm bandwidth %d on a %d-wide grid", bandwidth(r), W);
    assert_true(bandwidth(rb) > W + 1);
    hg_free(r);
    hg_free(rb);
    free(rcm);
    free(bfs);
    hg_free(g);
}

/* First touch by hand (one node type, no reverse edges; node 6 isolated). Edges by (src):
 * 0->5, 2->0, 2->1, 3->0, 4->1. BFS from node 0 (largest degree): out-neighbour 5, in-neighbours
 * 2, 3; then 2's out-neighbour 1; then 1's in-neighbour 4; then 6: 0 5 2 3 1 4 6. The walk of
 * destinations in that order: 0 (sources 2, 3), 5 (source 0), 1 (sources 2, 4); 2, 3, 4 have no
 * in-edges; 6 nobody touches and goes last: 0 2 3 5 1 4 6, not the BFS order. */
static void test_block_numbers_by_first_touch(void **state)
{
    (void)state;
    hg_builder *b = hgb_new("touch");
    int32_t nt = hgb_ntype(b, "node"), et = hgb_etype(b, "e", nt, nt);
    static const int32_t edges[][2] = {{2, 0}, {3, 0}, {4, 1}, {2, 1}, {0, 5}};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) hgb_add_edge(b, et, edges[i][0], edges[i][1]);
    hgb_ntype_count_at_least(b, nt, 7);
    hg_graph *g = finish(b, 0);
    int32_t *bfs = ord_compute(g, ORD_BFS), *blk = ord_compute(g, ORD_BLOCK);
    static const int32_t want_bfs[] = {0, 5, 2, 3, 1, 4, 6}, want_blk[] = {0, 2, 3, 5, 1, 4, 6};
    for (int32_t n = 0; n < 7; n++) {
        assert_int_equal(bfs[n], want_bfs[n]);
        assert_int_equal(blk[n], want_blk[n]);
    }
    free(bfs);
    free(blk);
    hg_free(g);
}

/* On a graph of three node types with isolated nodes of each: every node gets exactly one new id
 * of its own type, the nodes first met earlier in the walk of destinations (in BFS order) get the
 * smaller ids, and the isolated ones come last in their type. */
static void test_block_numbers_every_node_once(void **state)
{
    (void)state;
    hg_graph *s = tu_synth(SYNTH);
    hg_builder *b = hgb_new("isolated");
    int32_t nt[3];
    for (int t = 0; t < 3; t++) nt[t] = hgb_ntype(b, s->ntype_names[t]);
    for (int32_t r = 0; r < s->num_etypes; r++) {
        int32_t et = hgb_etype(b, s->etype_names[r], nt[s->etype_src[r]], nt[s->etype_dst[r]]);
        for (int32_t e = s->etype_ptr[r]; e < s->etype_ptr[r + 1]; e++)
            hgb_add_edge(b, et, s->src[e] - s->ntype_ptr[s->etype_src[r]], s->dst[e] - s->ntype_ptr[s->etype_dst[r]]);
    }
    for (int t = 0; t < 3; t++) hgb_ntype_count_at_least(b, nt[t], s->ntype_ptr[t + 1] - s->ntype_ptr[t] + 5);
    hg_graph *g = finish(b, 0);
    int32_t N = g->num_nodes, *blk = ord_compute(g, ORD_BLOCK), *bfs = ord_compute(g, ORD_BFS);
    rg_err err;
    if (ord_check(g, blk, &err)) fail_msg("%s", err.msg);
    /* when each node is first met: its destination turn, or the in-edge that reads it first */
    int64_t *met = malloc((size_t)N * sizeof *met), clock = 0;
    for (int32_t n = 0; n < N; n++) met[n] = -1;
    for (int32_t p = 0; p < N; p++) {
        int32_t d = bfs[p];
        if (g->in_ptr[d] == g->in_ptr[d + 1]) continue;
        if (met[d] < 0) met[d] = clock++;
        for (int32_t q = g->in_ptr[d]; q < g->in_ptr[d + 1]; q++)
            if (met[g->src[g->in_eid[q]]] < 0) met[g->src[g->in_eid[q]]] = clock++;
    }
    int isolated = 0;
    for (int32_t p = 0; p < N; p++)
        if (met[bfs[p]] < 0) met[bfs[p]] = clock++, isolated++;
    for (int32_t t = 0; t < g->num_ntypes; t++) {
        int32_t zero = 0;   /* the 5 added and any the random graph has */
        for (int32_t n = g->ntype_ptr[t]; n < g->ntype_ptr[t + 1]; n++) zero += deg(g, n) == 0;
        assert_true(zero >= 5);
        isolated -= zero;
        for (int32_t n = g->ntype_ptr[t] + 1; n < g->ntype_ptr[t + 1]; n++) assert_true(met[blk[n - 1]] < met[blk[n]]);
        for (int32_t n = g->ntype_ptr[t + 1] - zero; n < g->ntype_ptr[t + 1]; n++) assert_int_equal(deg(g, blk[n]), 0);
    }
    assert_int_equal(isolated, 0);   /* every node never met has no edges */
    free(met);
    free(blk);
    free(bfs);
    hg_free(g);
    hg_free(s);
}

/* Sources 0, 1, 2 and destinations 3, 4, 5: in-edges 3 <- {0, 1}, 4 <- {0, 2}, 5 <- {0, 1}, so
 * the gathers read rows 0 1 0 2 0 1. LRU of 2 rows: miss miss hit miss(out 1) hit miss(out 2) = 4
 * of 6 (FIFO would miss 5: the hit on 0 keeps it). One row: every read misses. Three rows or
 * more: only the 3 first reads. */
static void test_miss_rate_by_hand(void **state)
{
    (void)state;
    hg_builder *b = hgb_new("gathers");
    int32_t nt = hgb_ntype(b, "node"), et = hgb_etype(b, "e", nt, nt);
    static const int32_t edges[][2] = {{0, 3}, {1, 3}, {0, 4}, {2, 4}, {0, 5}, {1, 5}};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) hgb_add_edge(b, et, edges[i][0], edges[i][1]);
    hg_graph *g = finish(b, 0);
    assert_true(ord_gather_miss_rate(g, 2) == 4.0 / 6);
    assert_true(ord_gather_miss_rate(g, 1) == 1.0);
    assert_true(ord_gather_miss_rate(g, 3) == 0.5);
    assert_true(ord_gather_miss_rate(g, 1000) == 0.5);
    hg_free(g);
}

/* On a random graph, under every ordering: a cache of every row misses only on the first read of
 * each source (the same count under every ordering), and a larger LRU cache never misses more
 * (LRU keeps what a smaller one keeps). */
static void test_miss_rate_bounds(void **state)
{
    (void)state;
    hg_graph *g = tu_synth(SYNTH);
    int64_t sources = 0;
    for (int32_t n = 0; n < g->num_nodes; n++) sources += g->out_ptr[n + 1] > g->out_ptr[n];
    for (int k = 0; k < ORD_NKINDS; k++) {
        int32_t *old_of = ord_compute(g, (ord_kind)k);
        hg_graph *r = ord_relabel(g, old_of, NULL);
        assert_true(ord_gather_miss_rate(r, r->num_nodes) == (double)sources / g->num_edges);
        double last = 1.0;
        for (int64_t rows = 1; rows <= 512; rows *= 2) {
            double m = ord_gather_miss_rate(r, rows);
            assert_true(m <= last && m >= (double)sources / g->num_edges);
            last = m;
        }
        assert_true(last < ord_gather_miss_rate(r, 1));
        hg_free(r);
        free(old_of);
    }
    hg_free(g);
}

/* The names are the config key's values, in cfg_order's order. */
static void test_kind_names(void **state)
{
    (void)state;
    static const char *const want[] = {"orig", "degree", "bfs", "rcm", "block"};
    assert_int_equal(ORD_NKINDS, 5);
    for (int k = 0; k < ORD_NKINDS; k++) assert_string_equal(ord_kind_name((ord_kind)k), want[k]);
}

/* A map that is not a permutation within node types is named. */
static void test_check_refuses_bad_maps(void **state)
{
    (void)state;
    hg_graph *g = tu_synth(SYNTH);
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
static void check_reference_equivalence(const char *model, const char *task, ord_kind kind)
{
    rg_err err;
    hg_graph *g = tu_synth(SYNTH);
    int32_t *old_of = ord_compute(g, kind), *eo;
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

static void test_rgcn_reference_follows_relabelling(void **s) { (void)s; check_reference_equivalence("rgcn", "infer", ORD_BFS); check_reference_equivalence("rgcn", "train", ORD_BFS); }
static void test_rgat_reference_follows_relabelling(void **s) { (void)s; check_reference_equivalence("rgat", "infer", ORD_BFS); check_reference_equivalence("rgat", "train", ORD_BFS); }
static void test_hgt_reference_follows_relabelling(void **s) { (void)s; check_reference_equivalence("hgt", "infer", ORD_BFS); check_reference_equivalence("hgt", "train", ORD_BFS); }
/* The other orderings move data the same way (one model each is enough: the maps are what differ). */
static void test_reference_follows_rcm_and_block(void **s)
{
    (void)s;
    check_reference_equivalence("rgcn", "train", ORD_RCM);
    check_reference_equivalence("rgat", "train", ORD_BLOCK);
    check_reference_equivalence("hgt", "infer", ORD_RCM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_orderings_keep_the_graph),
        cmocka_unit_test(test_orderings_on_a_real_graph),
        cmocka_unit_test(test_bfs_brings_neighbours_closer),
        cmocka_unit_test(test_rcm_restores_a_chain),
        cmocka_unit_test(test_rcm_finds_a_peripheral_start),
        cmocka_unit_test(test_block_numbers_by_first_touch),
        cmocka_unit_test(test_block_numbers_every_node_once),
        cmocka_unit_test(test_miss_rate_by_hand),
        cmocka_unit_test(test_miss_rate_bounds),
        cmocka_unit_test(test_kind_names),
        cmocka_unit_test(test_check_refuses_bad_maps),
        cmocka_unit_test(test_rgcn_reference_follows_relabelling),
        cmocka_unit_test(test_rgat_reference_follows_relabelling),
        cmocka_unit_test(test_hgt_reference_follows_relabelling),
        cmocka_unit_test(test_reference_follows_rcm_and_block),
    };
    return cmocka_run_group_tests_name("order", tests, NULL, NULL);
}
