/* Tests of recompute=on (codegen/pass_recompute.h): the float64 reference agrees with the original
 * program, the per-edge forward values leave device memory, the refusals, and the kernels compile. */
#include "tests/testutil.h"
#include "tests/irbuild.h"
#include "tests/kcover.h"
#include "tests/refcmp.h"
#include "codegen/codegen.h"
#include "codegen/pass_recompute.h"
#include "codegen/pipeline.h"
#include "runtime/exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const MODELS[] = {"rgat", "hgt"};

static void build(const char *model, const char *task, const char *config, ir_program **ir, lw_program **lp)
{
    pl_problem pb = {.model = model, .task = task, .dims = {64, 64, 1}};
    cg_config cfg;
    rg_err err;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, config, &err), 0);
    if (pl_build(&pb, &cfg, NULL, NULL, ir, lp, &err)) fail_msg("%s %s %s: %s", model, task, config, err.msg);
}

/* Loss, output and every parameter's gradient equal the unoptimized program's, with the passes of
 * the default space around it, on a graph with shared (src, etype) rows, 1 and 2 heads. */
static void test_reference_agrees(void **state)
{
    (void)state;
    static const char *const configs[] = {"recompute=on", "recompute=on,softmax=single",
                                          "recompute=on,compact=off,reorder=off",
                                          "recompute=on,compact=bsearch,reorder=off,softmax=single"};
    hg_graph *g = irb_small_graph();
    for (int m = 0; m < 2; m++)
        for (int c = 0; c < 4; c++)
            for (int heads = 1; heads <= 2; heads++)
                assert_true(refcmp_with_original(MODELS[m], "train", configs[c], g, heads) >= 3);
    hg_free(g);
}

/* An edge value stored one row per edge that a forward elementwise or dot statement wrote. */
static int cheap_forward_edge_value(const ir_program *ir, int v)
{
    const ir_var *x = &ir->vars[v];
    if (x->kind != IR_VAR_EDGE || x->layout != IR_LAYOUT_VANILLA || x->role != IR_ROLE_TEMP) return 0;
    for (int i = 0; i < ir->nforward; i++) {
        const ir_stmt *s = &ir->stmts[i];
        if (ir_stmt_writes(s, v)) return s->op != IR_OP_LINEAR;
    }
    return 0;
}

/* How many such values the variant keeps in device memory, and (*read_back) the backward pass reads. */
static int stored_values(const char *model, const char *config, int *read_back)
{
    ir_program *ir;
    lw_program *lp;
    build(model, "train", config, &ir, &lp);
    int *mat = rg_xcalloc((size_t)ir->nvars, sizeof *mat), stored = 0;
    cg_config cfg;
    rg_err err;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, config, &err), 0);
    cg_materialization(ir, lp, &cfg, mat);
    *read_back = 0;
    for (int v = 0; v < ir->nvars; v++) {
        if (!cheap_forward_edge_value(ir, v)) continue;
        stored += mat[v];
        for (int i = ir->nforward; i < ir->nstmts; i++) *read_back += ir_stmt_reads(&ir->stmts[i], v);
    }
    free(mat);
    lw_free(lp);
    ir_free(ir);
    return stored;
}

static void test_forward_values_leave_memory(void **state)
{
    (void)state;
    static const char *const layouts[] = {"", "softmax=single,", "compact=off,reorder=off,"};
    for (int m = 0; m < 2; m++)
        for (int l = 0; l < 3; l++) {
            char off[96], on[96];
            snprintf(off, sizeof off, "%srecompute=off", layouts[l]);
            snprintf(on, sizeof on, "%srecompute=on", layouts[l]);
            int read_off, read_on;
            int stored_off = stored_values(MODELS[m], off, &read_off), stored_on = stored_values(MODELS[m], on, &read_on);
            if (!(stored_off > 0 && read_off > 0)) fail_msg("%s %s stores no per-edge value for the backward", MODELS[m], off);
            /* two-pass softmax still stores the scores its second phase reads back in the forward pass */
            if (stored_on >= stored_off || read_on)
                fail_msg("%s %s: %d per-edge forward values still stored (%d with recompute=off), %d backward reads",
                         MODELS[m], on, stored_on, stored_off, read_on);
        }
}

/* The pass names what it recomputes; a program whose backward reads none is left alone. */
static void test_pass_reports_and_leaves_others_alone(void **state)
{
    (void)state;
    pl_problem pb = {.model = "hgt", .task = "train", .dims = {64, 64, 1}};
    rg_err err;
    ir_program *ir = pl_reference_program(&pb, &err);
    assert_non_null(ir);
    char *text = NULL;
    size_t len = 0;
    FILE *log = open_memstream(&text, &len);
    int before = ir->nstmts;
    int n = prc_recompute_edge_values(ir, log, NULL, 0);
    fclose(log);
    assert_true(n >= 2 && ir->nstmts == before + n);
    assert_non_null(strstr(text, "recompute: the backward pass computes"));
    assert_non_null(strstr(text, "att"));
    assert_int_equal(ir_verify(ir, &err), 0);
    free(text);
    ir_free(ir);
    pb.model = "rgcn";
    ir = pl_reference_program(&pb, &err);
    before = ir->nstmts;
    char why[200];
    assert_int_equal(prc_recompute_edge_values(ir, NULL, why, sizeof why), 0);
    assert_int_equal(ir->nstmts, before);
    assert_non_null(strstr(why, "reads no per-edge value"));
    ir_free(ir);
}

/* Inference and RGCN are refused as inapplicable, saying why, so sweeps record them invalid. */
static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *model, *task, *why;
    } cases[] = {{"rgat", "infer", "inference stores no per-edge value"},
                 {"hgt", "infer", "inference stores no per-edge value"},
                 {"rgcn", "train", "reads no per-edge value"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        tu_expect_inapplicable(cases[i].model, cases[i].task, "recompute=on", "recompute=on does not apply", cases[i].why);
}

/* NVRTC compiles every distinct kernel of recompute=on across the traversal forms, the compact-row
 * sums, both softmaxes and both accumulators, for sm_90. */
static void test_kernels_compile(void **state)
{
    (void)state;
    static const char *const forms[] = {"trav=edge", "trav=node"};
    static const char *const crsums[] = {"crsum=atomic", "crsum=run", "crsum=split"};
    static const char *const rest[] = {"softmax=twopass", "softmax=single,acc=reg,store=bf16,mma=bf16"};
    kp_plan plan = {0};
    kc_set seen = {0};
    int built = 0;
    for (int m = 0; m < 2; m++)
        for (int f = 0; f < 2; f++)
            for (int c = 0; c < 3; c++)
                for (int r = 0; r < 2; r++) {
                    char config[200];
                    snprintf(config, sizeof config, "recompute=on,%s,%s,%s", forms[f], crsums[c], rest[r]);
                    cg_variant v;
                    rg_err err;
                    if (tu_build_variant(MODELS[m], "train", config, &v, NULL, &err))
                        fail_msg("%s %s: %s", MODELS[m], config, err.msg);
                    for (int k = 0; k < v.plan.nkernels; k++)
                        if (kc_set_add(&seen, kc_kernel_class(&v.plan.kernels[k]))) {
                            kp_kernel *copy = kp_add_kernel(&plan);
                            *copy = v.plan.kernels[k];
                            copy->source = rg_xstrdup(v.plan.kernels[k].source);
                        }
                    cg_variant_free(&v);
                    built++;
                }
    kx_compiled c;
    rg_err err;
    if (kx_compile(&plan, 90, 2, &c, &err)) fail_msg("sm_90: %s", err.msg);
    printf("recompute=on: %d variants, %d distinct kernels compiled for sm_90 (%d from the cache)\n", built,
           plan.nkernels, c.cache_hits);
    kx_compiled_free(&c);
    kp_plan_free(&plan);
    kc_set_free(&seen);
}

int main(void)
{
    /* cubins cached under build/, never in the home folder of the machine running the tests */
    setenv("RGNN_KCACHE", "build/kcache-test", 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_agrees),
        cmocka_unit_test(test_forward_values_leave_memory),
        cmocka_unit_test(test_pass_reports_and_leaves_others_alone),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_kernels_compile),
    };
    return cmocka_run_group_tests_name("recompute", tests, NULL, NULL);
}
