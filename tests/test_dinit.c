/* Tests of dinit=gemm (codegen/pass_dinit.h): the float64 reference agrees with the original program, the
 * gradient loses its zero-fill and its node-wide GEMM assigns, the refusals, and the kernels compile. */
#include "tests/testutil.h"
#include "tests/irbuild.h"
#include "tests/kcover.h"
#include "tests/refcmp.h"
#include "codegen/codegen.h"
#include "codegen/model.h"
#include "codegen/pass_dinit.h"
#include "codegen/pipeline.h"
#include "runtime/exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const MODELS[] = {"rgcn", "hgt"};

/* Loss, output, the parameters' and the input's gradients equal the original program's, with the passes
 * of the default space around it, on a graph with shared (src, etype) rows, 1 and 2 heads. */
static void test_reference_agrees(void **state)
{
    (void)state;
    static const char *const configs[] = {"dinit=gemm", "dinit=gemm,compact=off,reorder=off",
                                          "dinit=gemm,softmax=single,recompute=on", "dinit=gemm,crsum=run"};
    hg_graph *g = irb_small_graph();
    for (int m = 0; m < 2; m++)
        for (int c = 0; c < 4; c++)
            for (int heads = 1; heads <= 2; heads++) {
                if (m == 0 && c == 2) continue;   /* RGCN has no softmax */
                assert_true(refcmp_with_original(MODELS[m], "train", configs[c], g, heads) >= 3);
            }
    hg_free(g);
}

/* The zero-fill list of the plan names d_feature under zero and not under gemm, where exactly one GEMM
 * assigns it (`d_feature[row] = `) and runs before every kernel that adds into it. */
static void test_no_zero_fill_and_gemm_assigns(void **state)
{
    (void)state;
    rg_err err;
    for (int m = 0; m < 2; m++)
        for (int on = 0; on <= 1; on++) {
            cg_variant v;
            ir_program *ir;
            if (tu_build_variant(MODELS[m], "train", on ? "dinit=gemm,mma=bf16,store=bf16" : "mma=bf16,store=bf16", &v, &ir, &err))
                fail_msg("%s: %s", MODELS[m], err.msg);
            int zeroed = 0;
            for (int z = 0; z < v.plan.nzero; z++) zeroed += !strcmp(ir->vars[v.plan.zero_vars[z]].name, "d_feature");
            assert_int_equal(zeroed, !on);
            int assigns = 0, first_assign = -1, first_add = -1;
            for (int k = 0; k < v.plan.nkernels; k++) {
                const char *src = v.plan.kernels[k].source;
                if (v.plan.kernels[k].category != KC_GEMM || !strstr(src, ": d_feature[")) continue;
                if (strstr(src, "d_feature[row] = ")) {
                    assigns++;
                    if (first_assign < 0) first_assign = k;
                } else if (first_add < 0) {
                    first_add = k;
                }
            }
            assert_int_equal(assigns, on);
            assert_true(first_add >= 0);
            if (on) assert_true(first_assign < first_add);
            cg_variant_free(&v);
            ir_free(ir);
        }
}

/* Inference and RGAT are refused as inapplicable, saying why. */
static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *model, *task, *why;
    } cases[] = {{"rgcn", "infer", "inference has no backward program"},
                 {"hgt", "infer", "inference has no backward program"},
                 {"rgat", "train", "no zero-initialised node gradient is written both by a node-wide linear"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        tu_expect_inapplicable(cases[i].model, cases[i].task, "dinit=gemm", "dinit=gemm does not apply", cases[i].why);
}

/* A statement that reads the gradient between its first writer and the node-wide linear blocks the move:
 * the pass then changes nothing and says why; without it the pass applies. */
static void test_pass_leaves_readers_alone(void **state)
{
    (void)state;
    rg_err err;
    ir_dims d = {8, 8, 1};
    ir_program *p = model_load("rgcn", &d, "train", &err);
    assert_non_null(p);
    int v = -1, first = -1, lin = -1;
    for (int i = 0; i < p->nvars; i++)
        if (!strcmp(p->vars[i].name, "d_feature")) v = i;
    assert_true(v >= 0);
    for (int i = p->nforward; i < p->nstmts; i++)
        if (ir_stmt_writes(&p->stmts[i], v)) {
            if (first < 0) first = i;
            if (p->stmts[i].op == IR_OP_LINEAR && p->stmts[i].dom == IR_DOM_NODE) lin = i;
        }
    assert_true(first >= 0 && lin > first);
    /* d_feature_seen = copy(d_feature), just before the linear */
    ir_program *q = ir_clone(p);
    ir_var seen = p->vars[v];
    snprintf(seen.name, sizeof seen.name, "d_feature_seen");
    seen.zero_init = 0;
    seen.role = IR_ROLE_TEMP;
    seen.grad = -1;
    ir_stmt reader = {.op = IR_OP_COPY, .dom = IR_DOM_NODE, .nin = 1, .backward = 1};
    reader.out = (ir_operand){.var = ir_add_var(q, &seen), .acc = IR_ACC_ROW};
    reader.in[0] = (ir_operand){.var = v, .acc = IR_ACC_ROW};
    ir_insert_stmt(q, lin, &reader);
    char why[200];
    assert_int_equal(pdi_assign_first(q, NULL, why, sizeof why), 0);
    assert_non_null(strstr(why, "no zero-initialised node gradient"));
    assert_true(q->stmts[lin + 1].accumulate && q->vars[v].zero_init);
    assert_int_equal(pdi_assign_first(p, NULL, why, sizeof why), 1);
    /* the first writer is now the node-wide linear, assigning */
    int now = p->nforward;
    while (!ir_stmt_writes(&p->stmts[now], v)) now++;
    assert_true(!p->vars[v].zero_init && !p->stmts[now].accumulate && p->stmts[now].dom == IR_DOM_NODE &&
                p->stmts[now].op == IR_OP_LINEAR);
    ir_free(q);
    ir_free(p);
}

static void test_kernels_compile(void **state)
{
    (void)state;
    static const char *const rest[] = {"mma=off", "mma=bf16,store=bf16,crsum=run,gvec=on", "mma=tf32,compact=off"};
    kp_plan plan = {0};
    kc_set seen = {0};
    for (int m = 0; m < 2; m++)
        for (int r = 0; r < 3; r++) {
            char config[200];
            snprintf(config, sizeof config, "dinit=gemm,%s", rest[r]);
            cg_variant v;
            rg_err err;
            if (tu_build_variant(MODELS[m], "train", config, &v, NULL, &err)) fail_msg("%s %s: %s", MODELS[m], config, err.msg);
            for (int k = 0; k < v.plan.nkernels; k++)
                if (kc_set_add(&seen, kc_kernel_class(&v.plan.kernels[k]))) {
                    kp_kernel *copy = kp_add_kernel(&plan);
                    *copy = v.plan.kernels[k];
                    copy->source = rg_xstrdup(v.plan.kernels[k].source);
                }
            cg_variant_free(&v);
        }
    kx_compiled c;
    rg_err err;
    if (kx_compile(&plan, 90, 2, &c, &err)) fail_msg("sm_90: %s", err.msg);
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
        cmocka_unit_test(test_no_zero_fill_and_gemm_assigns),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_pass_leaves_readers_alone),
        cmocka_unit_test(test_kernels_compile),
    };
    return cmocka_run_group_tests_name("dinit", tests, NULL, NULL);
}
