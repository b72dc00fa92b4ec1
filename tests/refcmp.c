/* Comparing a variant's program with the unoptimized one on the float64 CPU reference (the
 * passes that rewrite a program without changing what it computes: softmax=single, recompute=on). */
#include "tests/refcmp.h"
#include "tests/testutil.h"
#include "codegen/config.h"
#include "codegen/pipeline.h"
#include "codegen/ref.h"

#include <math.h>

static double rel_l2(const double *a, const double *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num += (a[i] - b[i]) * (a[i] - b[i]);
        den += b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* The same variable (by name) in two executors agrees to 1e-12 and is not all zero. */
static void expect_same(ref_exec *got, ref_exec *want, const char *name)
{
    int64_t ng, nw;
    double *g = ref_values_by_name(got, name, &ng), *w = ref_values_by_name(want, name, &nw);
    if (!g || !w) fail_msg("'%s' missing from a program", name);
    assert_int_equal(ng, nw);
    double mag = 0;
    for (int64_t i = 0; i < nw; i++) mag += fabs(w[i]);
    if (!(mag > 0)) fail_msg("'%s' is all zero: the comparison would show nothing", name);
    double e = rel_l2(g, w, nw);
    if (!(e < 1e-12)) fail_msg("'%s' differs: relative L2 %.3e", name, e);
}

/* Runs the original program and a variant's program, and compares the output, the loss and
 * every parameter's and input's gradient. Returns how many gradients were compared. */
int refcmp_with_original(const char *model, const char *task, const char *config, const hg_graph *g,
                                 int heads)
{
    rg_err err;
    pl_problem pb = {.model = model, .task = task, .dims = {8, 8, heads}};
    cg_config cfg;
    cfg_default(&cfg);
    assert_int_equal(cfg_parse(&cfg, config, &err), 0);
    ir_program *orig = pl_reference_program(&pb, &err), *ir;
    lw_program *lp;
    if (!orig || pl_build(&pb, &cfg, g, NULL, &ir, &lp, &err)) fail_msg("%s %s: %s", model, task, err.msg);
    ref_options ro = {.seed = 7};
    ref_exec *xo = ref_new(orig, g, &ro, &err), *xs = ref_new(ir, g, &ro, &err);
    if (!xo || !xs) fail_msg("%s", err.msg);
    assert_int_equal(ref_run(xo, &err), 0);
    assert_int_equal(ref_run(xs, &err), 0);
    expect_same(xs, xo, orig->vars[orig->output].name);
    int grads = 0;
    if (orig->loss >= 0) {
        double lo = ref_loss(xo), ls = ref_loss(xs);
        assert_true(isfinite(lo) && fabs(ls - lo) <= 1e-12 * fabs(lo));
        for (int v = 0; v < orig->nvars; v++) {
            /* the inputs' gradients too: passes that reorder the backward sums (dinit) change them */
            if ((orig->vars[v].role != IR_ROLE_PARAM && orig->vars[v].role != IR_ROLE_INPUT) || orig->vars[v].grad < 0)
                continue;
            expect_same(xs, xo, orig->vars[orig->vars[v].grad].name);
            grads++;
        }
    }
    ref_free(xo);
    ref_free(xs);
    lw_free(lp);
    ir_free(ir);
    ir_free(orig);
    return grads;
}

