/* Tests of the graph core: sorting, CSRs, compaction maps, reverse types, statistics
 * and validation, on small hand-made graphs whose answers are known. */
#include "tests/testutil.h"
#include "datasets/hgraph.h"

#include <stdlib.h>
#include <string.h>

/* Two node types (user: 3 nodes, item: 2 nodes), relations buys user->item and knows user->user. */
static hg_graph *small_graph(int add_reverse)
{
    hg_builder *b = hgb_new("small");
    int32_t user = hgb_ntype(b, "user"), item = hgb_ntype(b, "item");
    int32_t buys = hgb_etype(b, "buys", user, item), knows = hgb_etype(b, "knows", user, user);
    hgb_add_edge(b, knows, 2, 0);
    hgb_add_edge(b, buys, 1, 0);
    hgb_add_edge(b, buys, 0, 1);
    hgb_add_edge(b, buys, 1, 1);
    hgb_add_edge(b, knows, 0, 1);
    hgb_add_edge(b, buys, 0, 0);
    rg_err err;
    hg_graph *g = hgb_finish(b, add_reverse, &err);
    assert_non_null(g);
    return g;
}

static void test_sort_and_segments(void **state)
{
    (void)state;
    hg_graph *g = small_graph(0);
    assert_int_equal(g->num_nodes, 5);
    assert_int_equal(g->ntype_ptr[1], 3);
    assert_int_equal(g->num_edges, 6);
    assert_int_equal(g->etype_ptr[1], 4);   /* 4 buys edges first */
    /* buys sorted by src: 0->item1, 0->item0, 1->item0, 1->item1 (stable) */
    int32_t want_src[] = {0, 0, 1, 1, 0, 2}, want_dst[] = {4, 3, 3, 4, 1, 0};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(g->src[i], want_src[i]);
        assert_int_equal(g->dst[i], want_dst[i]);
    }
    rg_err err;
    assert_int_equal(hg_validate(g, &err), 0);
    hg_free(g);
}

static void test_compaction(void **state)
{
    (void)state;
    hg_graph *g = small_graph(0);
    /* unique (src, etype): buys {0,1}, knows {0,2} */
    assert_int_equal(g->num_unique, 4);
    assert_int_equal(g->unique_etype_ptr[1], 2);
    assert_int_equal(g->edge_compact[1], 0);
    assert_int_equal(g->edge_compact[2], 1);
    assert_int_equal(hg_compact_lookup(g, 2, 1), 3);
    assert_int_equal(hg_compact_lookup(g, 2, 0), -1);
    hg_stats s;
    hg_stats_compute(g, &s);
    assert_float_equal(s.compaction_ratio, 4.0 / 6.0, 1e-12);
    assert_float_equal(s.avg_degree, 6.0 / 5.0, 1e-12);
    assert_int_equal(s.rel_min, 2);
    assert_int_equal(s.rel_max, 4);
    hg_free(g);
}

static void test_csr(void **state)
{
    (void)state;
    hg_graph *g = small_graph(0);
    /* node 3 (item 0) has incoming edges 1 and 2 */
    assert_int_equal(g->in_ptr[4] - g->in_ptr[3], 2);
    assert_int_equal(g->in_eid[g->in_ptr[3]], 1);
    assert_int_equal(g->out_ptr[1] - g->out_ptr[0], 3);
    hg_free(g);
}

static void test_reverse(void **state)
{
    (void)state;
    hg_graph *g = small_graph(1);
    assert_int_equal(g->num_etypes, 4);
    assert_int_equal(g->num_edges, 12);
    assert_string_equal(g->etype_names[2], "rev-buys");
    assert_int_equal(g->etype_src[2], 1);
    assert_int_equal(g->etype_dst[2], 0);
    rg_err err;
    assert_int_equal(hg_validate(g, &err), 0);
    hg_free(g);
}

static void test_empty_graph_is_an_error(void **state)
{
    (void)state;
    hg_builder *b = hgb_new("nothing");
    hgb_ntype(b, "a");
    rg_err err;
    assert_null(hgb_finish(b, 1, &err));
    assert_non_null(strstr(err.msg, "empty"));
}

/* Any loader: a node type far larger than its edges make plausible (a corrupted id or
 * count) is refused by hgb_finish before anything per node is allocated. */
static void test_implausible_node_count_is_an_error(void **state)
{
    (void)state;
    hg_builder *b = hgb_new("bad");
    int32_t t = hgb_ntype(b, "a");
    int32_t r = hgb_etype(b, "r", t, t);
    hgb_add_edge(b, r, 0, 1);
    hgb_add_edge(b, r, 1, HG_PLAUSIBLE_IDS_MIN);   /* one id past the bound for 2 edges */
    rg_err err;
    assert_null(hgb_finish(b, 1, &err));
    assert_non_null(strstr(err.msg, "graph 'bad': node type 'a' would have 16777217 nodes for 2 edges, more than "
                                    "max(2^24, 64 x edges) = 16777216"));
    /* a declared count (loaders that read one from a file) is bounded the same way */
    b = hgb_new("declared");
    t = hgb_ntype(b, "a");
    r = hgb_etype(b, "r", t, t);
    hgb_add_edge(b, r, 0, 1);
    hgb_ntype_count_at_least(b, t, 3000000000LL);
    assert_null(hgb_finish(b, 0, &err));
    assert_non_null(strstr(err.msg, "must be corrupt"));
    assert_int_equal(hg_plausible_nodes(1000000), 64000000);
    assert_int_equal(hg_plausible_nodes(0), HG_PLAUSIBLE_IDS_MIN);
}

static void test_validate_catches_corruption(void **state)
{
    (void)state;
    hg_graph *g = small_graph(0);
    g->edge_compact[3] = 0;
    rg_err err;
    assert_int_equal(hg_validate(g, &err), -1);
    assert_non_null(strstr(err.msg, "compact"));
    hg_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sort_and_segments),
        cmocka_unit_test(test_compaction),
        cmocka_unit_test(test_csr),
        cmocka_unit_test(test_reverse),
        cmocka_unit_test(test_empty_graph_is_an_error),
        cmocka_unit_test(test_validate_catches_corruption),
        cmocka_unit_test(test_implausible_node_count_is_an_error),
    };
    return cmocka_run_group_tests_name("hgraph", tests, NULL, NULL);
}
