/* rmax=on, the single-pass softmax under a running maximum: the pattern it rescales, the configs it
 * refuses and why, the plans' workspace and merge, and the tile slots the merge relies on. */
#include "tests/testutil.h"
#include "codegen/codegen.h"
#include "codegen/model.h"
#include "codegen/pass_softmax.h"
#include "codegen/pipeline.h"
#include "datasets/dataset.h"
#include "runtime/exec.h"

#include <stdlib.h>
#include <string.h>

static ir_program *program(const char *model, const char *task, int single, int heads)
{
    rg_err err;
    ir_dims d = {16, 16, heads};
    model_options mo = {.task = task, .reorder = 1, .compact = 1, .softmax_single = single};
    ir_program *ir = model_load_opts(model, &d, &mo, &err);
    if (!ir) fail_msg("%s: %s", model, err.msg);
    return ir;
}

/* psm_find_online finds psm_single_pass's result in RGAT and HGT, one or several heads, and nothing in
 * the two-pass program. */
static void test_finds_the_single_pass_softmax(void **state)
{
    (void)state;
    static const char *const models[] = {"rgat", "hgt"};
    for (int m = 0; m < 2; m++)
        for (int heads = 1; heads <= 4; heads *= 4) {
            ir_program *ir = program(models[m], "infer", 1, heads);
            psm_online on[4];
            assert_int_equal(psm_find_online(ir, on, 4), 1);
            assert_int_equal(ir->stmts[on[0].x].op, IR_OP_EXP);
            assert_int_equal(ir->stmts[on[0].norm].op, IR_OP_DIV_NZ);
            assert_int_equal(ir->stmts[on[0].s].out.var, on[0].sum);
            assert_int_equal(ir->stmts[on[0].g].out.var, on[0].un);
            assert_int_equal(ir->stmts[on[0].x].out.var, on[0].a);
            assert_int_equal(ir->vars[on[0].a].heads, heads);
            ir_free(ir);
            ir = program(models[m], "infer", 0, heads);
            assert_int_equal(psm_find_online(ir, on, 4), 0);
            ir_free(ir);
        }
}

static void parse(cg_config *cfg, const char *kv)
{
    rg_err err;
    cfg_default(cfg);
    if (cfg_parse(cfg, kv, &err)) fail_msg("%s: %s", kv, err.msg);
}

/* The refusals say why: no single-pass softmax to keep a maximum in, an edge-centric aggregation,
 * training, a model without attention. */
static void test_refusals_say_why(void **state)
{
    (void)state;
    rg_err err;
    cg_config cfg;
    parse(&cfg, "trav=node,rmax=on");
    assert_int_not_equal(cfg_validate(&cfg, &err), 0);
    assert_non_null(strstr(err.msg, "softmax=single"));
    parse(&cfg, "trav=edge,softmax=single,rmax=on");
    assert_int_not_equal(cfg_validate(&cfg, &err), 0);
    assert_non_null(strstr(err.msg, "trav=node"));
    parse(&cfg, "trav=node,softmax=single,rmax=on");
    assert_int_equal(cfg_validate(&cfg, &err), 0);
    pl_problem train = {.model = "rgat", .task = "train", .dims = {16, 16, 1}};
    assert_int_equal(pl_build_verdict(&train, &cfg, NULL, &err), PL_INAPPLICABLE);
    assert_non_null(strstr(err.msg, "inference"));
    pl_problem rgcn = {.model = "rgcn", .task = "infer", .dims = {16, 16, 1}};
    assert_int_equal(pl_build_verdict(&rgcn, &cfg, NULL, &err), PL_INAPPLICABLE);
    pl_problem rgat = {.model = "rgat", .task = "infer", .dims = {16, 16, 1}};
    assert_int_equal(pl_build_verdict(&rgat, &cfg, NULL, &err), 0);
}

/* The kernels of a plan that bind a workspace (KP_WORK), into ks; returns how many. */
static int work_kernels(const cg_variant *v, const kp_param **ps, const kp_kernel **ks)
{
    int n = 0;
    for (int k = 0; k < v->plan.nkernels; k++)
        for (int p = 0; p < v->plan.kernels[k].nparams; p++)
            if (v->plan.kernels[k].params[p].kind == KP_WORK) {
                assert_true(n < 2);
                ps[n] = &v->plan.kernels[k].params[p];
                ks[n++] = &v->plan.kernels[k];
            }
    return n;
}

/* Across the lanes' and accumulators' forms, split or not, fused epilogue or not, 1 and 4 heads: the
 * aggregation subtracts the running maximum in its exp and the node kernel after it merges the tiles,
 * both binding one workspace of one layout, so that launch=dag orders them; rmax=off binds none. */
static void test_plans_share_one_workspace(void **state)
{
    (void)state;
    static const char *const models[] = {"rgat", "hgt"};
    static const char *const forms[] = {"scalars=group,acc=smem", "scalars=lane,acc=reg32", "scalars=replicated,acc=reg"};
    static const char *const chunks[] = {"nchunk=4,epi=off", "nchunk=256,epi=on"};
    for (int m = 0; m < 2; m++)
        for (int heads = 1; heads <= 4; heads *= 4)
            for (int f = 0; f < 3; f++)
                for (int c = 0; c < 2; c++)
                    for (int on = 0; on < 2; on++) {
                        rg_err err;
                        char *kv = rg_xasprintf("trav=node,softmax=single,%s,%s,rmax=%s", forms[f], chunks[c], on ? "on" : "off");
                        cg_config cfg;
                        parse(&cfg, kv);
                        pl_problem pb = {.model = models[m], .task = "infer", .dims = {32, 32, heads}};
                        ir_program *ir;
                        lw_program *lp;
                        cg_variant v;
                        if (pl_build(&pb, &cfg, NULL, NULL, &ir, &lp, &err) || cg_build(ir, lp, &cfg, &v, &err))
                            fail_msg("%s %d heads %s: %s", models[m], heads, kv, err.msg);
                        const kp_param *ps[2];
                        const kp_kernel *ks[2];
                        int n = work_kernels(&v, ps, ks);
                        if (!on) {
                            assert_int_equal(n, 0);
                        } else {
                            assert_int_equal(n, 2);
                            assert_int_equal(ps[0]->id, ps[1]->id);
                            assert_int_equal(ps[0]->ival, cfg.nchunk);
                            assert_int_equal(ps[0]->ival, ps[1]->ival);
                            assert_int_equal(ps[0]->work_node, heads);
                            assert_int_equal(ps[0]->work_node, ps[1]->work_node);
                            assert_int_equal(ps[0]->work_row, ps[1]->work_row);
                            assert_non_null(strstr(ks[0]->source, "- rm_[h])"));
                            assert_non_null(strstr(ks[1]->source, "their maxima and sums merged"));
                            assert_non_null(strstr(ks[1]->source, "a hub: the lanes split its tiles"));
                            assert_true(kp_kernels_conflict(ks[0], ks[1]));
                        }
                        cg_variant_free(&v);
                        lw_free(lp);
                        ir_free(ir);
                        free(kv);
                    }
}

/* The merge finds a tile other than its node's first at slot q_begin / nchunk of the workspace: those
 * slots must be distinct and fewer than edges / nchunk + 1 (kp_work_values' count), on a graph whose
 * degrees vary, at chunk sizes that do and do not divide them. */
static void test_tile_slots_are_distinct(void **state)
{
    (void)state;
    rg_err err;
    ds_options dso = {0};
    hg_graph *g = ds_open("synth:nodes=3000,edges=40000,ntypes=3,etypes=8,ratio=0.4", &dso, &err);
    if (!g) fail_msg("%s", err.msg);
    static const int chunks[] = {1, 3, 4, 7, 64, 256};
    for (int c = 0; c < 6; c++) {
        int N = chunks[c], *type, *row0;
        int n = kx_tile_table(g, KR_IN_EDGES, N, &type, &row0);
        int64_t slots = g->num_edges / N + 1;
        char *used = rg_xcalloc((size_t)slots, 1);
        int split = 0;
        for (int t = 0; t < n; t++) {
            if (row0[t] == g->in_ptr[type[t]]) continue;   /* a node's first tile: its sums hold it */
            int64_t s = row0[t] / N;
            assert_true(s < slots);
            assert_int_equal(used[s], 0);
            used[s] = 1;
            split++;
        }
        assert_true(N > 64 || split > 0);   /* the graph has nodes of more than 64 incoming edges */
        free(used);
        free(type);
        free(row0);
    }
    hg_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_finds_the_single_pass_softmax),
        cmocka_unit_test(test_refusals_say_why),
        cmocka_unit_test(test_plans_share_one_workspace),
        cmocka_unit_test(test_tile_slots_are_distinct),
    };
    return cmocka_run_group_tests_name("rmax", tests, NULL, NULL);
}
