/* Tests of the synthetic graph generator: profile sizes against the registry and the real
 * files, exact compaction ratios, determinism, bad specs, and synth:mag's time and memory. */
#include "tests/testutil.h"
#include "datasets/dataset.h"
#include "datasets/loaders.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hg_graph *generate(const char *spec)
{
    rg_err err;
    hg_graph *g = synth_generate(spec, &err);
    if (!g) fail_msg("synth_generate(%s): %s", spec, err.msg);
    return g;
}

static void assert_valid(const hg_graph *g)
{
    rg_err err;
    if (hg_validate(g, &err) != 0) fail_msg("%s is invalid: %s", g->name, err.msg);
}

static void test_fb15k237_shape(void **state)
{
    (void)state;
    hg_graph *g = generate("synth:fb15k237");
    assert_int_equal(g->num_ntypes, 1);
    assert_int_equal(g->num_etypes, 474);
    assert_int_equal(g->num_nodes, 14541);
    assert_int_equal(g->num_edges, 620232);
    hg_stats s;
    hg_stats_compute(g, &s);
    assert_true(s.compaction_ratio > 0.261 * 0.98 && s.compaction_ratio < 0.261 * 1.02);
    assert_string_equal(g->name, "synth:fb15k237");
    assert_valid(g);
    hg_free(g);
}

/* Every profile small enough for a unit test has the registry's expected sizes. */
static void test_profiles_match_registry(void **state)
{
    (void)state;
    static const char *const names[] = {"aifb", "mutag", "bgs", "fb15k237", "biokg", "mag_0.1"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const ds_entry *e = ds_find(names[i]);
        assert_non_null(e);
        hg_graph *g = generate(names[i]);
        assert_int_equal(g->num_ntypes, e->expected.node_types);
        assert_int_equal(g->num_etypes, e->expected.edge_types);
        assert_int_equal(g->num_nodes, e->expected.nodes);
        assert_int_equal(g->num_edges, e->expected.edges);
        if (e->expected.unique_pairs) assert_int_equal(g->num_unique, e->expected.unique_pairs);
        assert_valid(g);
        hg_free(g);
    }
}

static int same_array(const int32_t *a, const int32_t *b, int32_t n)
{
    return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

static void test_deterministic_for_a_seed(void **state)
{
    (void)state;
    hg_graph *a = generate("aifb,seed=7"), *b = generate("synth:aifb,seed=7"), *c = generate("aifb,seed=8");
    assert_int_equal(a->num_edges, b->num_edges);
    assert_true(same_array(a->src, b->src, a->num_edges));
    assert_true(same_array(a->dst, b->dst, a->num_edges));
    /* another seed: other edges, same shape (relation sizes, unique pairs) */
    assert_true(same_array(a->etype_ptr, c->etype_ptr, a->num_etypes + 1));
    assert_int_equal(a->num_unique, c->num_unique);
    assert_false(same_array(a->dst, c->dst, a->num_edges));
    hg_free(a);
    hg_free(b);
    hg_free(c);
}

static void test_custom_spec(void **state)
{
    (void)state;
    hg_graph *g = generate("nodes=1000,edges=20000,ntypes=3,etypes=5,ratio=0.1,seed=4");
    assert_int_equal(g->num_ntypes, 3);
    assert_int_equal(g->num_etypes, 10);
    assert_int_equal(g->num_nodes, 1000);
    assert_int_equal(g->num_edges, 20000);
    assert_int_equal(g->num_unique, 2000);
    assert_string_equal(g->etype_names[5], "rev-r0");
    assert_valid(g);
    hg_free(g);

    g = generate("synth:nodes=2K,edges=1e4,ntypes=2,etypes=4,ratio=0.25,reverse=0,skew=0");
    assert_int_equal(g->num_etypes, 4);
    assert_int_equal(g->num_nodes, 2000);
    assert_int_equal(g->num_edges, 10000);
    assert_int_equal(g->num_unique, 2500);
    assert_valid(g);
    hg_free(g);
}

static void expect_error(const char *spec, const char *part)
{
    rg_err err = {0};
    hg_graph *g = synth_generate(spec, &err);
    if (g) fail_msg("'%s' was accepted", spec);
    if (!strstr(err.msg, part)) fail_msg("'%s': message '%s' lacks '%s'", spec, err.msg, part);
}

static void test_bad_specs(void **state)
{
    (void)state;
    expect_error("synth:nodes=abc", "nodes=abc is not a positive whole number");
    expect_error("nodes=10,edges=20,ntypes=1,etypes=1,ratio=0.5,colour=3", "unknown key 'colour'");
    expect_error("synth:aifx", "did you mean aifb");
    expect_error("nosuchthing", "unknown profile 'nosuchthing'");
    expect_error("nodes=10,edges=20,ntypes=1,etypes=1", "missing ratio=");
    expect_error("nodes=10,edges=21,ntypes=1,etypes=1,ratio=0.5", "must be even");
    expect_error("nodes=10,edges=1000,ntypes=1,etypes=1,ratio=0.9", "cannot be reached");
    expect_error("nodes=10,edges=20,ntypes=11,etypes=1,ratio=0.5", "ntypes=11 exceeds nodes=10");
    expect_error("nodes=3G,edges=20,ntypes=1,etypes=1,ratio=0.5", "too large");
    expect_error("aifb,nodes=5", "only seed= can");
    expect_error("aifb,seed=-1", "seed=-1");
    expect_error("aifb,,seed=1", "empty item");
    expect_error("aifb,seed=1,seed=2", "given twice");
    expect_error("synth:", "empty synth spec");
    expect_error("nodes=10,edges=20,ntypes=1,etypes=1,ratio=0", "above 0");
    expect_error("nodes=10,edges=20,ntypes=1,etypes=1,ratio=0.5,reverse=2", "reverse=0 or reverse=1");
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t *sorted_relation_sizes(const hg_graph *g)
{
    int64_t *s = rg_xmalloc((size_t)g->num_etypes * sizeof *s);
    for (int32_t r = 0; r < g->num_etypes; r++) s[r] = g->etype_ptr[r + 1] - g->etype_ptr[r];
    qsort(s, (size_t)g->num_etypes, sizeof *s, cmp_i64);
    return s;
}

/* Against the real FB15k-237: the same relation sizes, the same unique pairs, and an
 * in-degree skewness of the same order. */
static void test_fb15k237_matches_real(void **state)
{
    (void)state;
    TU_REQUIRE_DATASET(dir, "fb15k237");
    rg_err err;
    hg_graph *real = kg_load_openke(dir, "fb15k237", &err);
    if (!real) fail_msg("loading %s: %s", dir, err.msg);
    hg_graph *syn = generate("fb15k237");
    assert_int_equal(real->num_etypes, syn->num_etypes);
    int64_t *a = sorted_relation_sizes(real), *b = sorted_relation_sizes(syn);
    assert_memory_equal(a, b, (size_t)real->num_etypes * sizeof *a);
    assert_int_equal(real->num_unique, syn->num_unique);
    hg_stats rs, ss;
    hg_stats_compute(real, &rs);
    hg_stats_compute(syn, &ss);
    printf("in-degree skewness: real %.1f, synthetic %.1f\n", rs.in_degree_skew, ss.in_degree_skew);
    assert_true(ss.in_degree_skew > rs.in_degree_skew / 2 && ss.in_degree_skew < rs.in_degree_skew * 2);
    free(a);
    free(b);
    hg_free(real);
    hg_free(syn);
    free(dir);
}

/* The largest profile: generate + preprocess with a peak RSS under 3x the edge arrays
 * (src + dst + etype, 12 B/edge). Its time is reported by `make bench-datasets`. */
static void test_mag_memory(void **state)
{
    (void)state;
    hg_graph *g = generate("synth:mag");
    assert_int_equal(g->num_ntypes, 4);
    assert_int_equal(g->num_etypes, 4);
    assert_int_equal(g->num_nodes, 1939743);
    assert_int_equal(g->num_edges, 21111007);
    double edge_mb = 12.0 * g->num_edges / (1 << 20), peak_mb = rg_peak_rss_kb() / 1024.0;
    printf("synth:mag: peak RSS %.0f MB = %.2fx the edge arrays (%.0f MB)\n", peak_mb, peak_mb / edge_mb, edge_mb);
    if (tu_under_asan()) printf("ASan build: its shadow memory and quarantine inflate the RSS; bound not checked\n");
    else assert_true(peak_mb < 3 * edge_mb);
    hg_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fb15k237_shape),
        cmocka_unit_test(test_profiles_match_registry),
        cmocka_unit_test(test_deterministic_for_a_seed),
        cmocka_unit_test(test_custom_spec),
        cmocka_unit_test(test_bad_specs),
        cmocka_unit_test(test_fb15k237_matches_real),
        cmocka_unit_test(test_mag_memory),
    };
    return cmocka_run_group_tests_name("synth", tests, NULL, NULL);
}
