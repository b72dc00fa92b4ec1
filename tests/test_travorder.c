/* Tests of the traversal-ordered graph arrays (in_src, in_etype, in_dst, in_compact) and edge
 * variables (<var>@in) without a GPU: their host copies, and the dst-sorted traversal kernels
 * that read them instead of gathers. */
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

/* The dst-ordered copy of an edge variable is its rows gathered through in_eid: for RGCN's norm
 * (1 / the number of incoming edges of dst with e's type, computed here from the COO), row q
 * is norm[in_eid[q]], which is also 1 / c(in_dst[q], in_etype[q]); wider rows move whole. */
static void test_in_order_values_are_rows_gathered_through_in_eid(void **state)
{
    (void)state;
    rg_err err;
    hg_graph *g = synth_generate("nodes=300,edges=4000,ntypes=3,etypes=5,ratio=0.3,seed=7", &err);
    if (!g) fail_msg("synth: %s", err.msg);
    size_t E = (size_t)g->num_edges, R = (size_t)g->num_etypes;
    int *count = rg_xcalloc((size_t)g->num_nodes * R, sizeof *count);
    for (size_t e = 0; e < E; e++) count[(size_t)g->dst[e] * R + (size_t)g->etype[e]]++;
    double *norm = rg_xmalloc(E * sizeof *norm), *wide = rg_xmalloc(3 * E * sizeof *wide);
    for (size_t e = 0; e < E; e++) {
        norm[e] = 1.0 / count[(size_t)g->dst[e] * R + (size_t)g->etype[e]];
        for (int k = 0; k < 3; k++) wide[3 * e + (size_t)k] = (double)e + 0.25 * k;
    }
    double *nq = kx_in_order_values(g, norm, 1), *wq = kx_in_order_values(g, wide, 3);
    int32_t *in_dst = kx_in_order_array(g, KG_IN_DST), *in_etype = kx_in_order_array(g, KG_IN_ETYPE);
    int moved = 0;
    for (size_t q = 0; q < E; q++) {
        size_t e = (size_t)g->in_eid[q];
        moved += e != q;
        if (nq[q] != norm[e]) fail_msg("norm@in[%zu] = %g, not norm[in_eid] = %g", q, nq[q], norm[e]);
        assert_true(nq[q] == 1.0 / count[(size_t)in_dst[q] * R + (size_t)in_etype[q]]);
        for (int k = 0; k < 3; k++) assert_true(wq[3 * q + (size_t)k] == wide[3 * e + (size_t)k]);
    }
    assert_true(moved > 0);   /* the order differs from edge ids: the test could tell them apart */
    free(nq), free(wq), free(in_dst), free(in_etype), free(norm), free(wide), free(count);
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

/* The variant of model/task under `config`; returns pl_build's status (PL_INAPPLICABLE: skip). */
static int build(const char *model, const char *task, const char *config, ir_program **ir, lw_program **lp,
                 cg_variant *v)
{
    cg_config cfg;
    rg_err err;
    cfg_default(&cfg);
    if (cfg_parse(&cfg, config, &err)) fail_msg("%s: %s", config, err.msg);
    pl_problem p = {.model = model, .task = task, .dims = {64, 64, 1}};
    int rc = pl_build(&p, &cfg, NULL, NULL, ir, lp, &err);
    if (rc == PL_INAPPLICABLE) return rc;
    if (rc) fail_msg("%s %s %s: %s", model, task, config, err.msg);
    if (cg_build(*ir, *lp, &cfg, v, &err)) fail_msg("%s %s %s: %s", model, task, config, err.msg);
    return 0;
}

static void free_variant(ir_program *ir, lw_program *lp, cg_variant *v)
{
    cg_variant_free(v);
    lw_free(lp);
    ir_free(ir);
}

/* The kind of kernel k's parameter bound to variable var (KP_VAR or KP_VAR_IN), or -1. */
static int var_param(const kp_kernel *k, int var)
{
    for (int j = 0; j < k->nparams; j++)
        if ((k->params[j].kind == KP_VAR || k->params[j].kind == KP_VAR_IN) && k->params[j].id == var)
            return (int)k->params[j].kind;
    return -1;
}

static int dst_sorted(const kp_kernel *k)
{
    return k->category == KC_TRAVERSAL && (has_param(k, KG_IN_PTR) || strstr(k->source, "dst-sorted") != NULL);
}

/* Whether kernel k's source reads variable var's rows at `row` (an edge id e, or the position qpos). */
static int reads_at(const kp_kernel *k, int var, const char *row)
{
    char at[48];
    snprintf(at, sizeof at, "v%d[(size_t)(%s) *", var, row);
    return strstr(k->source, at) != NULL;
}

/* RGCN's forward traversal walks the dst-sorted order (partial aggregation or node-centric) and
 * reads norm, a graph constant, from its copy in that order at the walk's position: it binds
 * neither in_eid nor norm itself, and the variant keeps only norm@in in device memory. */
static void test_rgcn_forward_reads_norm_in_traversal_order(void **state)
{
    (void)state;
    static const char *const configs[] = {"trav=edge", "trav=node", "trav=node,compact=bsearch,store=bf16"};
    for (int c = 0; c < 3; c++) {
        ir_program *ir;
        lw_program *lp;
        cg_variant v;
        assert_int_equal(build("rgcn", "infer", configs[c], &ir, &lp, &v), 0);
        int norm = ir_find_var(ir, "norm"), readers = 0;
        assert_true(norm >= 0);
        for (int k = 0; k < v.plan.nkernels; k++) {
            const kp_kernel *kk = &v.plan.kernels[k];
            if (var_param(kk, norm) < 0) continue;
            readers++;
            if (!dst_sorted(kk)) fail_msg("%s: %s reads norm outside the dst-sorted order", configs[c], kk->name);
            assert_int_equal(var_param(kk, norm), KP_VAR_IN);
            assert_false(has_param(kk, KG_IN_EID));
            assert_null(strstr(kk->source, "in_eid"));
            assert_false(reads_at(kk, norm, "e"));
            assert_true(reads_at(kk, norm, "qpos"));
            assert_non_null(strstr(kk->source, "const int qpos = qb + j;"));
        }
        assert_int_equal(readers, 1);
        assert_int_equal(cg_resident(&v, norm), CG_RES_IN_ORDER);
        /* plan.txt names the copy among the buffers in device memory, and binds it */
        char *dir = tu_tmpdir();
        rg_err err;
        if (cg_write_sources(&v, ir, dir, &err)) fail_msg("%s", err.msg);
        char *path = rg_xasprintf("%s/plan.txt", dir);
        char *text = tu_read_file(path, NULL);
        assert_non_null(text);
        const char *mem = strstr(text, "# device memory:");
        assert_non_null(mem);
        char line[512];
        snprintf(line, sizeof line, "%.*s ", (int)strcspn(mem, "\n"), mem);
        assert_non_null(strstr(line, " norm@in "));
        assert_null(strstr(line, " norm "));
        assert_non_null(strstr(text, "=norm@in"));
        free(text);
        free(path);
        tu_rm_tree(dir);
        free_variant(ir, lp, &v);
    }
}

/* A graph constant: a graph-derived per-edge variable that no statement writes. */
static int graph_constant(const ir_program *ir, int var)
{
    const ir_var *x = &ir->vars[var];
    if (x->role != IR_ROLE_GRAPH || x->kind != IR_VAR_EDGE || x->layout != IR_LAYOUT_VANILLA) return 0;
    for (int i = 0; i < ir->nstmts; i++)
        if (ir->stmts[i].out.var == var) return 0;
    return 1;
}

/* Edge variables of kernel k: a dst-sorted kernel reads each graph constant from its dst-ordered
 * copy at qpos and never at e; a copy is bound nowhere else. Counts the copies read (*copies) and
 * the graph constants still read at e in edge order (*at_e). */
static void check_edge_var_reads(const ir_program *ir, const kp_kernel *k, const char *what, int *copies, int *at_e)
{
    for (int j = 0; j < k->nparams; j++) {
        const kp_param *p = &k->params[j];
        if ((p->kind != KP_VAR && p->kind != KP_VAR_IN) || !graph_constant(ir, p->id)) {
            assert_true(p->kind != KP_VAR_IN);
            continue;
        }
        if (p->kind == KP_VAR_IN) {
            if (!dst_sorted(k)) fail_msg("%s %s binds %s@in outside the dst-sorted order", what, k->name, p->name);
            assert_true(reads_at(k, p->id, "qpos") && !reads_at(k, p->id, "e"));
            ++*copies;
        } else {
            if (dst_sorted(k)) fail_msg("%s %s gathers graph constant %s through in_eid", what, k->name, p->name);
            *at_e += reads_at(k, p->id, "e");
        }
    }
}

/* Every dst-sorted traversal kernel (partial aggregation, node-centric) of every model and task,
 * both softmax forms, both storage types, reads the structure from the ordered arrays at its
 * position ql and never gathers src/etype/dst/edge_compact through an edge id; it loads in_eid
 * only to read an edge variable at e (never a graph constant: that one it reads from its
 * dst-ordered copy), and some kernels need no in_eid at all. A variant keeps a graph constant's
 * own rows in device memory exactly when a kernel still reads them at e (training with edge
 * order). NVRTC compiles every traversal kernel of these variants for sm_90. */
static void test_dst_sorted_kernels_read_ordered_arrays(void **state)
{
    (void)state;
    static const char *const models[] = {"rgcn", "rgat", "hgt"}, *const tasks[] = {"infer", "train"};
    static const char *const configs[] = {"trav=edge", "trav=node", "trav=edge,softmax=single",
                                          "trav=node,softmax=single,compact=bsearch", "trav=edge,store=bf16",
                                          "trav=node,store=bf16", "trav=edge,softmax=single,store=bf16",
                                          "trav=node,softmax=single,store=bf16"};
    enum { NCONFIGS = sizeof configs / sizeof *configs };
    static const char *const gathers[] = {"src[e_l]", "etype[e_l]", "dst[e_l]", "edge_compact[e_l]"};
    int sorted = 0, without_eid = 0, with_compact = 0, copies = 0, at_e = 0, both = 0, copy_only = 0, typed = 0;
    kp_plan travs = {0};
    rg_err err;
    for (int m = 0; m < 3; m++)
        for (int t = 0; t < 2; t++)
            for (int c = 0; c < NCONFIGS; c++) {
                ir_program *ir;
                lw_program *lp;
                cg_variant v;
                if (build(models[m], tasks[t], configs[c], &ir, &lp, &v) == PL_INAPPLICABLE) {
                    assert_true(m == 0 && strstr(configs[c], "softmax=single"));
                    continue;
                }
                char what[128];
                snprintf(what, sizeof what, "%s %s %s", models[m], tasks[t], configs[c]);
                for (int k = 0; k < v.plan.nkernels; k++) {
                    const kp_kernel *kk = &v.plan.kernels[k];
                    if (kk->category == KC_TRAVERSAL) add_unique(&travs, kk);
                    check_edge_var_reads(ir, kk, what, &copies, &at_e);
                    if (!dst_sorted(kk)) continue;
                    sorted++;
                    for (int w = 0; w < 4; w++)
                        if (strstr(kk->source, gathers[w])) fail_msg("%s %s gathers %s", what, kk->name, gathers[w]);
                    /* the ids it loads at all (drop_unread_ids leaves out those no statement reads) at ql */
                    if (strstr(kk->source, "sn_l = in_")) assert_non_null(strstr(kk->source, "sn_l = in_src[ql];"));
                    if (strstr(kk->source, "t_l = in_")) assert_non_null(strstr(kk->source, "t_l = in_etype[ql];"));
                    typed += strstr(kk->source, "t_l = in_etype[ql];") != NULL;
                    assert_true(has_param(kk, KG_IN_SRC) && has_param(kk, KG_IN_ETYPE));
                    assert_false(has_param(kk, KG_SRC) || has_param(kk, KG_ETYPE) || has_param(kk, KG_DST) ||
                                 has_param(kk, KG_EDGE_COMPACT));
                    with_compact += has_param(kk, KG_IN_COMPACT);
                    if (has_param(kk, KG_IN_EID)) assert_non_null(strstr(kk->source, "[(size_t)(e) *"));
                    else without_eid++;
                }
                for (int x = 0; x < ir->nvars; x++) {
                    if (!graph_constant(ir, x) || !v.materialized[x]) continue;
                    int res = cg_resident(&v, x), rows = 0;
                    for (int k = 0; k < v.plan.nkernels; k++) rows |= var_param(&v.plan.kernels[k], x) == KP_VAR;
                    assert_int_equal(!!(res & CG_RES_ROWS), rows || !(res & CG_RES_IN_ORDER));
                    both += res == (CG_RES_ROWS | CG_RES_IN_ORDER);
                    copy_only += res == CG_RES_IN_ORDER;
                }
                free_variant(ir, lp, &v);
            }
    printf("%d dst-sorted traversal kernels, %d without in_eid, %d reading in_compact; %d reads of a dst-ordered "
           "copy, %d of a graph constant at e; %d variants keep a graph constant and its copy, %d the copy only\n",
           sorted, without_eid, with_compact, copies, at_e, both, copy_only);
    assert_true(sorted >= 40);
    assert_true(without_eid >= 1);
    assert_true(typed >= 1 && typed < sorted);   /* RGAT and HGT read the type; RGCN's aggregation does not */
    assert_true(with_compact >= 1);
    assert_true(copies >= 1 && at_e >= 1 && both >= 1 && copy_only >= 1);
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
        cmocka_unit_test(test_in_order_values_are_rows_gathered_through_in_eid),
        cmocka_unit_test(test_rgcn_forward_reads_norm_in_traversal_order),
        cmocka_unit_test(test_dst_sorted_kernels_read_ordered_arrays),
        cmocka_unit_test(test_plan_graph_bytes_count_only_what_it_binds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
