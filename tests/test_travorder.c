/* Tests of the traversal-ordered graph arrays (in_src, in_etype, in_dst, in_compact) without a
 * GPU: their host copies, and the dst-sorted traversal kernels that read them instead of gathers. */
#include "tests/testutil.h"
#include "codegen/codegen.h"
#include "codegen/pipeline.h"
#include "datasets/dataset.h"
#include "datasets/loaders.h"
#include "runtime/exec.h"

#include <stdlib.h>
#include <string.h>

/* Each array is the edge array gathered through in_eid, and has the properties of the
 * dst-sorted order that the kernels rely on: in_dst[q] is the node whose CSR row holds q, and
 * within a node the edges keep the (etype, src) order of edge ids. */
static void check_in_order_arrays(const hg_graph *g)
{
    static const kp_graph_array ids[] = {KG_IN_SRC, KG_IN_ETYPE, KG_IN_DST, KG_IN_COMPACT};
    const int32_t *of[] = {g->src, g->etype, g->dst, g->edge_compact};
    int32_t *a[4];
    for (int i = 0; i < 4; i++) {
        assert_true(kp_graph_array_in_order(ids[i]));
        a[i] = kx_in_order_array(g, ids[i]);
        for (int32_t q = 0; q < g->num_edges; q++)
            if (a[i][q] != of[i][g->in_eid[q]])
                fail_msg("%s: %s[%d] = %d, not %d", g->name, kp_graph_array_name(ids[i]), q, a[i][q],
                         of[i][g->in_eid[q]]);
    }
    const int32_t *src = a[0], *etype = a[1], *dst = a[2], *cr = a[3];
    for (int32_t n = 0; n < g->num_nodes; n++)
        for (int32_t q = g->in_ptr[n]; q < g->in_ptr[n + 1]; q++) {
            assert_int_equal(dst[q], n);
            assert_int_equal(g->unique_src[cr[q]], src[q]);
            if (q > g->in_ptr[n])
                assert_true(etype[q - 1] < etype[q] || (etype[q - 1] == etype[q] && src[q - 1] <= src[q]));
        }
    for (int i = 0; i < 4; i++) free(a[i]);
    assert_false(kp_graph_array_in_order(KG_SRC));
    assert_false(kp_graph_array_in_order(KG_IN_EID));
}

static void test_in_order_arrays_small(void **state)
{
    (void)state;
    rg_err err;
    hg_graph *g = synth_generate("nodes=300,edges=4000,ntypes=3,etypes=5,ratio=0.3,seed=4", &err);
    if (!g) fail_msg("synth: %s", err.msg);
    check_in_order_arrays(g);
    hg_free(g);
}

static void test_in_order_arrays_real(void **state)
{
    (void)state;
    TU_REQUIRE_DATASET(dir, "aifb");
    free(dir);
    ds_options opt = {.data_dir = tu_shared_datasets(), .quiet = 1};
    rg_err err;
    hg_graph *g = ds_open("aifb", &opt, &err);
    if (!g) fail_msg("aifb: %s", err.msg);
    check_in_order_arrays(g);
    hg_free(g);
}

static int has_param(const kp_kernel *k, kp_graph_array a)
{
    for (int j = 0; j < k->nparams; j++)
        if (k->params[j].kind == KP_GRAPH && k->params[j].id == (int)a) return 1;
    return 0;
}

/* Adds a copy of k to p unless a kernel of the same text is there (variants share kernels). */
static void add_unique(kp_plan *p, const kp_kernel *k)
{
    for (int i = 0; i < p->nkernels; i++)
        if (!strcmp(p->kernels[i].source, k->source)) return;
    kp_kernel *c = kp_add_kernel(p);
    *c = *k;
    c->source = rg_xstrdup(k->source);
}

/* Every dst-sorted traversal kernel (partial aggregation, node-centric) of every model and task,
 * both softmax forms, reads the structure from the ordered arrays at its position ql and never
 * gathers src/etype/dst/edge_compact through an edge id; it loads in_eid only to read an edge
 * variable at e, and some kernels need no in_eid at all. NVRTC compiles every traversal kernel
 * of these variants for sm_90. */
static void test_dst_sorted_kernels_read_ordered_arrays(void **state)
{
    (void)state;
    static const char *const models[] = {"rgcn", "rgat", "hgt"}, *const tasks[] = {"infer", "train"};
    static const char *const configs[] = {"trav=edge", "trav=node", "trav=edge,softmax=single",
                                          "trav=node,softmax=single,compact=bsearch"};
    static const char *const gathers[] = {"src[e_l]", "etype[e_l]", "dst[e_l]", "edge_compact[e_l]"};
    int sorted = 0, without_eid = 0, with_compact = 0;
    kp_plan travs = {0};
    rg_err err;
    for (int m = 0; m < 3; m++)
        for (int t = 0; t < 2; t++)
            for (int c = 0; c < 4; c++) {
                cg_config cfg;
                cfg_default(&cfg);
                assert_int_equal(cfg_parse(&cfg, configs[c], &err), 0);
                pl_problem p = {.model = models[m], .task = tasks[t], .dims = {64, 64, 1}};
                ir_program *ir;
                lw_program *lp;
                int rc = pl_build(&p, &cfg, NULL, NULL, &ir, &lp, &err);
                if (rc == PL_INAPPLICABLE && m == 0 && cfg.softmax == CFG_SOFTMAX_SINGLE) continue;
                if (rc) fail_msg("%s %s %s: %s", models[m], tasks[t], configs[c], err.msg);
                cg_variant v;
                if (cg_build(ir, lp, &cfg, &v, &err)) fail_msg("%s %s %s: %s", models[m], tasks[t], configs[c], err.msg);
                for (int k = 0; k < v.plan.nkernels; k++) {
                    const kp_kernel *kk = &v.plan.kernels[k];
                    if (kk->category == KC_TRAVERSAL) add_unique(&travs, kk);
                    int dst_sorted = has_param(kk, KG_IN_PTR) || strstr(kk->source, "dst-sorted") != NULL;
                    if (kk->category != KC_TRAVERSAL || !dst_sorted)
                        continue;
                    sorted++;
                    for (int w = 0; w < 4; w++)
                        if (strstr(kk->source, gathers[w])) fail_msg("%s %s %s %s gathers %s", models[m], tasks[t],
                                                                     configs[c], kk->name, gathers[w]);
                    assert_non_null(strstr(kk->source, "sn_l = in_src[ql]; t_l = in_etype[ql];"));
                    assert_true(has_param(kk, KG_IN_SRC) && has_param(kk, KG_IN_ETYPE));
                    assert_false(has_param(kk, KG_SRC) || has_param(kk, KG_ETYPE) || has_param(kk, KG_DST) ||
                                 has_param(kk, KG_EDGE_COMPACT));
                    with_compact += has_param(kk, KG_IN_COMPACT);
                    if (has_param(kk, KG_IN_EID)) assert_non_null(strstr(kk->source, "[(size_t)(e) *"));
                    else without_eid++;
                }
                cg_variant_free(&v);
                lw_free(lp);
                ir_free(ir);
            }
    printf("%d dst-sorted traversal kernels, %d without in_eid, %d reading in_compact\n", sorted, without_eid,
           with_compact);
    assert_true(sorted >= 20);
    assert_true(without_eid >= 1);
    assert_true(with_compact >= 1);
    kx_compiled comp;
    if (kx_compile(&travs, 90, 2, &comp, &err)) fail_msg("sm_90: %s", err.msg);
    printf("%d unique traversal kernels compiled for sm_90 (%d from the cache)\n", travs.nkernels, comp.cache_hits);
    kx_compiled_free(&comp);
    kp_plan_free(&travs);
}

/* A plan's graph bytes count the arrays uploaded up front, and of the lazily added ones (ordered
 * arrays, tile tables) only those it binds, each once: not those an earlier plan added. */
static void test_plan_graph_bytes_count_only_what_it_binds(void **state)
{
    (void)state;
    hg_graph g = {.name = "g", .num_edges = 1000};
    kx_tiles tiles[2] = {{.rowset = KR_EDGES, .rows_per_tile = 32, .ntiles = 40},
                         {.rowset = KR_NODES_ALL, .rows_per_tile = 64, .ntiles = 0}};
    /* an upload on which earlier plans added both tile tables and in_src, in_dst, in_compact */
    kx_graph kg = {.g = &g, .base_bytes = 5000, .ntiles = 2, .tiles = tiles};
    kp_plan plan = {0};
    assert_int_equal(kx_plan_graph_bytes(&kg, &plan), 5000);
    kp_kernel *a = kp_add_kernel(&plan);
    kp_add_param(a, KP_GRAPH, KG_IN_SRC, 0, "in_src");
    kp_add_param(a, KP_GRAPH, KG_SRC, 0, "src");
    kp_add_param(a, KP_TILE_TYPE, KR_EDGES, 32, "tile_type");
    kp_add_param(a, KP_TILE_ROW0, KR_EDGES, 32, "tile_row0");
    kp_kernel *b = kp_add_kernel(&plan);
    kp_add_param(b, KP_GRAPH, KG_IN_SRC, 0, "in_src");
    kp_add_param(b, KP_GRAPH, KG_IN_DST, 0, "in_dst");
    kp_add_param(b, KP_TILE_TYPE, KR_EDGES, 32, "tile_type");
    assert_int_equal(kx_plan_graph_bytes(&kg, &plan), 5000 + 2 * 4000 + 2 * 40 * 4);
    kp_plan_free(&plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order_arrays_small),
        cmocka_unit_test(test_in_order_arrays_real),
        cmocka_unit_test(test_dst_sorted_kernels_read_ordered_arrays),
        cmocka_unit_test(test_plan_graph_bytes_count_only_what_it_binds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
