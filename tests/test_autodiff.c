/* Tests of autodiff: every gradient of inputs and weights checked by central finite
 * differences on the float64 reference, for tiny programs covering each op and for the
 * rgcn, rgat and hgt models under every pass configuration; plus structure and errors. */
#include "tests/testutil.h"
#include "tests/irbuild.h"
#include "codegen/autodiff.h"
#include "codegen/model.h"
#include "codegen/ref.h"
#include "measure/validate.h"
#include "datasets/loaders.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ builders */

static int edge_var(ir_program *p, const char *name, int heads, int dim, int compact)
{
    return irb_var(p, name, IR_VAR_EDGE, compact ? IR_LAYOUT_COMPACT : IR_LAYOUT_VANILLA, IR_ROLE_TEMP,
                   IR_WIDX_NONE, heads, 0, dim, 0);
}

static int param(ir_program *p, const char *name, ir_widx widx, int heads, int rows_dim, int dim)
{
    return irb_var(p, name, IR_VAR_WEIGHT, IR_LAYOUT_WEIGHT, IR_ROLE_PARAM, widx, heads, rows_dim, dim, 0);
}

static ir_operand O(int var, ir_access acc) { return (ir_operand){var, acc, 0}; }

/* Appends loss = nll(out, labels) (as the training task does) to a forward program. */
static void add_loss(ir_program *p)
{
    assert_int_equal(model_add_loss(p, NULL), 0);
}

/* ------------------------------------------------------------------ finite differences */

/* Relative error of the analytic gradient of every input and param, against central
 * differences of the loss, over up to `samples` entries per variable. Fails the test with
 * the variable's name when any exceeds tol. */
static void fd_check(const ir_program *p, const hg_graph *g, int samples, double tol)
{
    rg_err err;
    ref_options o = {.seed = 11, .nthreads = 2};
    ref_exec *x = ref_new(p, g, &o, &err);
    if (!x) fail_msg("ref_new: %s", err.msg);
    if (ref_run(x, &err) < 0) fail_msg("ref_run: %s", err.msg);
    double loss0 = ref_loss(x);
    assert_true(isfinite(loss0));
    rg_rng rng;
    rg_rng_seed(&rng, 5);
    for (int v = 0; v < p->nvars; v++) {
        ir_role role = p->vars[v].role;
        if (role != IR_ROLE_INPUT && role != IR_ROLE_PARAM) continue;
        int64_t n = ref_count(x, v);
        const double *an = p->vars[v].grad >= 0 ? ref_values(x, p->vars[v].grad) : NULL;
        double *w = ref_values(x, v), num = 0, den = 0;
        int m = n < samples ? (int)n : samples;
        for (int s = 0; s < m; s++) {
            int64_t i = n <= samples ? s : (int64_t)rg_rng_below(&rng, (uint64_t)n);
            double w0 = w[i], eps = 1e-5 * (fabs(w0) > 1 ? fabs(w0) : 1);
            w[i] = w0 + eps;
            if (ref_run_forward(x, &err) < 0) fail_msg("%s", err.msg);
            double lp = ref_loss(x);
            w[i] = w0 - eps;
            if (ref_run_forward(x, &err) < 0) fail_msg("%s", err.msg);
            double lm = ref_loss(x);
            w[i] = w0;
            double fd = (lp - lm) / (2 * eps), a = an ? an[i] : 0.0;
            num += (fd - a) * (fd - a);
            den += fd * fd > a * a ? fd * fd : a * a;
        }
        double rel = den > 1e-24 ? sqrt(num / den) : sqrt(num);
        if (!(rel < tol))
            fail_msg("%s: gradient of '%s' has relative error %.3g against finite differences", p->name,
                     p->vars[v].name, rel);
    }
    ref_free(x);
}

/* Structure every backward program must have (ad.h), and ir_verify accepting it. */
static void check_structure(const ir_program *p, int nforward_expected)
{
    rg_err err;
    if (ir_verify(p, &err) < 0) fail_msg("ir_verify: %s", err.msg);
    assert_int_equal(p->nforward, nforward_expected);
    char *needed = calloc((size_t)p->nvars, 1);
    for (int v = 0; v < p->nvars; v++) {
        const ir_var *gv = &p->vars[v];
        if (gv->grad_of < 0) continue;
        assert_int_equal(p->vars[gv->grad_of].grad, v);
        assert_true(gv->zero_init);
        ir_role r = p->vars[gv->grad_of].role;
        assert_true(r != IR_ROLE_GRAPH && r != IR_ROLE_LABEL);
        needed[v] = r == IR_ROLE_INPUT || r == IR_ROLE_PARAM;
    }
    for (int i = 0; i < p->nstmts; i++) assert_int_equal(p->stmts[i].backward, i >= p->nforward);
    /* no dead gradient: each backward statement's result is needed by a later one or is
     * a required gradient */
    for (int i = p->nstmts - 1; i >= p->nforward; i--) {
        const ir_stmt *s = &p->stmts[i];
        if (!needed[s->out.var]) fail_msg("backward statement %d computes an unused value", i);
        for (int k = 0; k < s->nin; k++)
            if (s->in[k].acc != IR_ACC_CONST) needed[s->in[k].var] = 1;
    }
    free(needed);
}

/* Differentiates p (which has a loss), checks the structure and finite differences. */
static void differentiate_and_check(ir_program *p, const hg_graph *g)
{
    int nfwd = p->nstmts;
    rg_err err;
    if (ad_append_backward(p, &err) < 0) fail_msg("autodiff: %s", err.msg);
    check_structure(p, nfwd);
    fd_check(p, g, 40, 1e-6);
}

/* ------------------------------------------------------------------ tiny programs */

/* Typed linears per edge (gather src, scatter dst) and per node, norm scaling. */
static void test_linear_and_aggregation(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    ir_program *p = irb_new_prog("linear");
    int h = irb_node_var(p, "h", 1, 4, IR_ROLE_INPUT, 0);
    int W = param(p, "W", IR_WIDX_ETYPE, 1, 4, 3), Wn = param(p, "Wn", IR_WIDX_NTYPE, 1, 4, 3);
    int W0 = param(p, "W0", IR_WIDX_NONE, 1, 4, 3);
    int norm = irb_var(p, "norm", IR_VAR_EDGE, IR_LAYOUT_VANILLA, IR_ROLE_GRAPH, IR_WIDX_NONE, 1, 0, 1, 0);
    int m = edge_var(p, "m", 1, 3, 0), mc = edge_var(p, "mc", 1, 3, 1);
    int out = irb_node_var(p, "out", 1, 3, IR_ROLE_OUTPUT, 1);
    p->output = out;
    S2(p, IR_OP_LINEAR, IR_DOM_NODE, O(out, IR_ACC_ROW), 0, O(h, IR_ACC_ROW), O(W0, IR_ACC_ALL));
    S2(p, IR_OP_LINEAR, IR_DOM_NODE, O(out, IR_ACC_ROW), 1, O(h, IR_ACC_ROW), O(Wn, IR_ACC_NTYPE));
    S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(m, IR_ACC_ROW), 0, O(h, IR_ACC_DST), O(W, IR_ACC_ETYPE));
    S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(mc, IR_ACC_ROW), 0, O(h, IR_ACC_SRC), O(W, IR_ACC_ETYPE));
    S2(p, IR_OP_MUL, IR_DOM_EDGE, O(out, IR_ACC_DST), 1, O(mc, IR_ACC_ROW), O(norm, IR_ACC_ROW));
    S2(p, IR_OP_MUL, IR_DOM_EDGE, O(out, IR_ACC_SRC), 1, O(m, IR_ACC_ROW), O(norm, IR_ACC_ROW));
    add_loss(p);
    differentiate_and_check(p, g);
    assert_int_equal(p->vars[norm].grad, -1);   /* graph data gets no gradient */
    ir_free(p);
    hg_free(g);
}

/* RGAT as in the papers (concat form of the attention), compact message, edge softmax
 * in place: exercises LINEAR, CONCAT, DOT with a weight vector, ADD, LEAKYRELU, EXP,
 * DIV by an aggregated sum, MUL, and single-assignment renaming. */
static void test_attention_in_place(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    ir_program *p = irb_new_prog("attention");
    int h = irb_node_var(p, "h", 1, 4, IR_ROLE_INPUT, 0);
    int W = param(p, "W", IR_WIDX_ETYPE, 1, 4, 3), a = param(p, "a", IR_WIDX_ETYPE, 1, 0, 6);
    int ws = param(p, "ws", IR_WIDX_ETYPE, 1, 0, 3);
    int hs = edge_var(p, "hs", 1, 3, 1), ht = edge_var(p, "ht", 1, 3, 0), cat = edge_var(p, "cat", 1, 6, 0);
    int s1 = edge_var(p, "s1", 1, 1, 1), att = edge_var(p, "att", 1, 1, 0);
    int sum = irb_node_var(p, "sum", 1, 1, IR_ROLE_TEMP, 1), out = irb_node_var(p, "out", 1, 3, IR_ROLE_OUTPUT, 1);
    p->output = out;
    S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(hs, IR_ACC_ROW), 0, O(h, IR_ACC_SRC), O(W, IR_ACC_ETYPE));
    S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(ht, IR_ACC_ROW), 0, O(h, IR_ACC_DST), O(W, IR_ACC_ETYPE));
    S2(p, IR_OP_CONCAT, IR_DOM_EDGE, O(cat, IR_ACC_ROW), 0, O(hs, IR_ACC_ROW), O(ht, IR_ACC_ROW));
    S2(p, IR_OP_DOT, IR_DOM_EDGE, O(att, IR_ACC_ROW), 0, O(cat, IR_ACC_ROW), O(a, IR_ACC_ETYPE));
    S2(p, IR_OP_DOT, IR_DOM_EDGE, O(s1, IR_ACC_ROW), 0, O(hs, IR_ACC_ROW), O(ws, IR_ACC_ETYPE));
    S2(p, IR_OP_ADD, IR_DOM_EDGE, O(att, IR_ACC_ROW), 0, O(att, IR_ACC_ROW), O(s1, IR_ACC_ROW));
    int lr = S1(p, IR_OP_LEAKYRELU, IR_DOM_EDGE, O(att, IR_ACC_ROW), 0, O(att, IR_ACC_ROW));
    p->stmts[lr].cval = 0.2;
    S1(p, IR_OP_EXP, IR_DOM_EDGE, O(att, IR_ACC_ROW), 0, O(att, IR_ACC_ROW));
    S1(p, IR_OP_COPY, IR_DOM_EDGE, O(sum, IR_ACC_DST), 1, O(att, IR_ACC_ROW));
    S2(p, IR_OP_DIV, IR_DOM_EDGE, O(att, IR_ACC_ROW), 0, O(att, IR_ACC_ROW), O(sum, IR_ACC_DST));
    S2(p, IR_OP_MUL, IR_DOM_EDGE, O(out, IR_ACC_DST), 1, O(att, IR_ACC_ROW), O(hs, IR_ACC_ROW));
    add_loss(p);
    int nvars_before = p->nvars;
    /* the forward result before differentiation, to check renaming keeps semantics */
    rg_err err;
    ref_exec *x0 = ref_new(p, g, NULL, &err);
    if (!x0) fail_msg("%s", err.msg);
    assert_int_equal(ref_run(x0, &err), 0);
    int64_t n = ref_count(x0, out);
    double *want = malloc((size_t)n * sizeof *want);
    memcpy(want, ref_values(x0, out), (size_t)n * sizeof *want);
    ref_free(x0);
    differentiate_and_check(p, g);
    /* att was written 5 times: 4 earlier versions renamed, the last keeps the id */
    assert_true(ir_find_var(p, "att.0") >= nvars_before);
    assert_true(ir_find_var(p, "att.3") >= 0);
    assert_int_equal(ir_find_var(p, "att"), att);
    assert_int_equal(p->output, out);
    ref_exec *x1 = ref_new(p, g, NULL, &err);
    assert_int_equal(ref_run_forward(x1, &err), 0);
    assert_true(xv_rel_l2(want, ref_values(x1, out), n) < 1e-15);
    ref_free(x1);
    free(want);
    ir_free(p);
    hg_free(g);
}

/* Heads and broadcasting: per-head linear of a 1-head input, a per-head scalar weight
 * (times 1-wide and wide rows, and divided), a bias vector, SUB, RELU, a reshape, an exp aggregated (recomputed in backward) and a
 * division by it, a dot of a 1-head row with a per-head weight vector. */
static void test_heads_broadcast(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    ir_dims d = {4, 4, 2};
    ir_program *p = ir_new("heads", &d);
    int h = irb_node_var(p, "h", 1, 4, IR_ROLE_INPUT, 0);
    int Wh = param(p, "Wh", IR_WIDX_ETYPE, 2, 4, 2), mu = param(p, "mu", IR_WIDX_ETYPE, 2, 0, 1);
    int bias = param(p, "bias", IR_WIDX_NTYPE, 1, 0, 2), wv = param(p, "wv", IR_WIDX_ETYPE, 2, 0, 4);
    int z = edge_var(p, "z", 2, 2, 0), za = edge_var(p, "za", 2, 1, 0), zb = edge_var(p, "zb", 2, 1, 0);
    int zc = edge_var(p, "zc", 2, 1, 0), zr = edge_var(p, "zr", 2, 2, 0), q = edge_var(p, "q", 2, 1, 1);
    int s = irb_node_var(p, "s", 2, 1, IR_ROLE_TEMP, 1), agg = irb_node_var(p, "agg", 2, 2, IR_ROLE_TEMP, 1);
    int hn = irb_node_var(p, "hn", 2, 2, IR_ROLE_TEMP, 0), flat = irb_node_var(p, "flat", 1, 4, IR_ROLE_TEMP, 0);
    int out = irb_node_var(p, "out", 1, 4, IR_ROLE_OUTPUT, 0);
    p->output = out;
    S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(z, IR_ACC_ROW), 0, O(h, IR_ACC_SRC), O(Wh, IR_ACC_ETYPE));
    S2(p, IR_OP_DOT, IR_DOM_EDGE, O(za, IR_ACC_ROW), 0, O(z, IR_ACC_ROW), O(z, IR_ACC_ROW));
    S2(p, IR_OP_MUL, IR_DOM_EDGE, O(zb, IR_ACC_ROW), 0, O(za, IR_ACC_ROW), O(mu, IR_ACC_ETYPE));
    S2(p, IR_OP_DOT, IR_DOM_EDGE, O(q, IR_ACC_ROW), 0, O(h, IR_ACC_SRC), O(wv, IR_ACC_ETYPE));
    S2(p, IR_OP_SUB, IR_DOM_EDGE, O(zc, IR_ACC_ROW), 0, O(zb, IR_ACC_ROW), O(q, IR_ACC_ROW));
    S1(p, IR_OP_EXP, IR_DOM_EDGE, O(s, IR_ACC_DST), 1, O(zc, IR_ACC_ROW));
    S2(p, IR_OP_DIV, IR_DOM_EDGE, O(zr, IR_ACC_ROW), 0, O(z, IR_ACC_ROW), O(s, IR_ACC_DST));
    S1(p, IR_OP_RELU, IR_DOM_EDGE, O(agg, IR_ACC_DST), 1, O(zr, IR_ACC_ROW));
    /* a per-head scalar weight times a wide row (its gradient sums over dim), and a weight
     * divided by a row */
    int zw = edge_var(p, "zw", 2, 2, 0), zn = edge_var(p, "zn", 2, 1, 0);
    S2(p, IR_OP_MUL, IR_DOM_EDGE, O(zw, IR_ACC_ROW), 0, O(z, IR_ACC_ROW), O(mu, IR_ACC_ETYPE));
    S2(p, IR_OP_DIV, IR_DOM_EDGE, O(zn, IR_ACC_ROW), 0, O(mu, IR_ACC_ETYPE), O(s, IR_ACC_DST));
    S2(p, IR_OP_MUL, IR_DOM_EDGE, O(agg, IR_ACC_DST), 1, O(zw, IR_ACC_ROW), O(zn, IR_ACC_ROW));
    S2(p, IR_OP_ADD, IR_DOM_NODE, O(hn, IR_ACC_ROW), 0, O(agg, IR_ACC_ROW), O(bias, IR_ACC_NTYPE));
    S1(p, IR_OP_COPY, IR_DOM_NODE, O(flat, IR_ACC_ROW), 0, O(hn, IR_ACC_ROW));   /* reshape 2x2 -> 1x4 */
    S2(p, IR_OP_SUB, IR_DOM_NODE, O(out, IR_ACC_ROW), 0, O(flat, IR_ACC_ROW), O(h, IR_ACC_ROW));
    add_loss(p);
    differentiate_and_check(p, g);
    ir_free(p);
    hg_free(g);
}

/* Reordered forms: a relation's weight-vector product (W[r] @ w[r]) read by a dot with the
 * source feature, and a node-typed shared matrix times per-head relation matrices (column
 * split) read by a per-head linear of a 1-head row. */
static void test_weight_products(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    ir_dims d = {4, 4, 2};
    ir_program *p = ir_new("wmm", &d);
    int h = irb_node_var(p, "h", 1, 4, IR_ROLE_INPUT, 0);
    int W = param(p, "W", IR_WIDX_ETYPE, 1, 4, 3), w = param(p, "w", IR_WIDX_ETYPE, 1, 0, 3);
    int K = param(p, "K", IR_WIDX_NTYPE, 1, 4, 4), A = param(p, "A", IR_WIDX_ETYPE, 2, 2, 2);
    int Wv = irb_var(p, "Wv", IR_VAR_WEIGHT, IR_LAYOUT_WEIGHT, IR_ROLE_TEMP, IR_WIDX_ETYPE, 1, 0, 4, 0);
    int KA = irb_var(p, "KA", IR_VAR_WEIGHT, IR_LAYOUT_WEIGHT, IR_ROLE_TEMP, IR_WIDX_ETYPE, 2, 4, 2, 0);
    int att = edge_var(p, "att", 1, 1, 1), m = edge_var(p, "m", 2, 2, 1);
    int out = irb_node_var(p, "out", 2, 2, IR_ROLE_OUTPUT, 1);
    p->output = out;
    S2(p, IR_OP_WEIGHT_MM, IR_DOM_TYPE, O(Wv, IR_ACC_ETYPE), 0, O(W, IR_ACC_ETYPE), O(w, IR_ACC_ETYPE));
    S2(p, IR_OP_WEIGHT_MM, IR_DOM_TYPE, O(KA, IR_ACC_ETYPE), 0, O(K, IR_ACC_SRC_NTYPE), O(A, IR_ACC_ETYPE));
    S2(p, IR_OP_DOT, IR_DOM_EDGE, O(att, IR_ACC_ROW), 0, O(h, IR_ACC_SRC), O(Wv, IR_ACC_ETYPE));
    S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(m, IR_ACC_ROW), 0, O(h, IR_ACC_SRC), O(KA, IR_ACC_ETYPE));
    S2(p, IR_OP_MUL, IR_DOM_EDGE, O(out, IR_ACC_DST), 1, O(m, IR_ACC_ROW), O(att, IR_ACC_ROW));
    add_loss(p);
    differentiate_and_check(p, g);
    ir_free(p);
    hg_free(g);
}

/* GELU and SIGMOID (PyG's HGTConv): their float64 values against libm's erf, and their gradients,
 * sigmoid also of a weight (the gated skip), against finite differences. */
static void test_gelu_sigmoid(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    ir_program *p = irb_new_prog("gelu_sigmoid");
    int h = irb_node_var(p, "h", 1, 4, IR_ROLE_INPUT, 0);
    int W = param(p, "W", IR_WIDX_NONE, 1, 4, 3), skip = param(p, "skip", IR_WIDX_NTYPE, 1, 0, 1);
    int z = irb_node_var(p, "z", 1, 3, IR_ROLE_TEMP, 0), y = irb_node_var(p, "y", 1, 3, IR_ROLE_TEMP, 0);
    int a = irb_node_var(p, "a", 1, 1, IR_ROLE_TEMP, 0), s = edge_var(p, "s", 1, 3, 0);
    int out = irb_node_var(p, "out", 1, 3, IR_ROLE_OUTPUT, 1);
    p->output = out;
    S2(p, IR_OP_LINEAR, IR_DOM_NODE, O(z, IR_ACC_ROW), 0, O(h, IR_ACC_ROW), O(W, IR_ACC_ALL));
    S1(p, IR_OP_GELU, IR_DOM_NODE, O(y, IR_ACC_ROW), 0, O(z, IR_ACC_ROW));
    S1(p, IR_OP_SIGMOID, IR_DOM_NODE, O(a, IR_ACC_ROW), 0, O(skip, IR_ACC_NTYPE));
    S1(p, IR_OP_SIGMOID, IR_DOM_EDGE, O(s, IR_ACC_ROW), 0, O(y, IR_ACC_SRC));
    S2(p, IR_OP_MUL, IR_DOM_EDGE, O(out, IR_ACC_DST), 1, O(s, IR_ACC_ROW), O(a, IR_ACC_DST));
    S2(p, IR_OP_MUL, IR_DOM_NODE, O(out, IR_ACC_ROW), 1, O(y, IR_ACC_ROW), O(a, IR_ACC_ROW));
    add_loss(p);

    rg_err err;
    ref_options o = {.seed = 11, .nthreads = 2};
    ref_exec *x = ref_new(p, g, &o, &err);
    if (!x) fail_msg("ref_new: %s", err.msg);
    if (ref_run(x, &err) < 0) fail_msg("ref_run: %s", err.msg);
    const double *zv = ref_values(x, z), *yv = ref_values(x, y), *av = ref_values(x, a), *kv = ref_values(x, skip);
    int below = 0, above = 0;
    for (int64_t i = 0; i < ref_count(x, z); i++) {
        assert_true(fabs(yv[i] - (0.5 * zv[i] * (1.0 + erf(zv[i] / sqrt(2.0))))) < 1e-15);
        below += zv[i] < 0, above += zv[i] > 0;
    }
    assert_true(below > 0 && above > 0);   /* both sides of GELU's bend are checked */
    for (int t = 0; t < g->num_ntypes; t++)
        for (int n = g->ntype_ptr[t]; n < g->ntype_ptr[t + 1]; n++)
            assert_true(fabs(av[n] - (1.0 / (1.0 + exp(-kv[t])))) < 1e-15);
    ref_free(x);
    differentiate_and_check(p, g);
    ir_free(p);
    hg_free(g);
}

static void expect_ad_error(ir_program *p, const char *needle)
{
    rg_err err = {0};
    if (ad_append_backward(p, &err) == 0) fail_msg("expected an error containing '%s'", needle);
    if (!strstr(err.msg, needle)) fail_msg("error '%s' lacks '%s'", err.msg, needle);
}

static void test_errors(void **state)
{
    (void)state;
    ir_program *p = irb_new_prog("noloss");
    int h = irb_node_var(p, "h", 1, 3, IR_ROLE_INPUT, 0);
    int t = irb_node_var(p, "t", 1, 3, IR_ROLE_TEMP, 1), out = irb_node_var(p, "out", 1, 3, IR_ROLE_OUTPUT, 0);
    p->output = out;
    S1(p, IR_OP_RELU, IR_DOM_NODE, O(t, IR_ACC_ROW), 1, O(h, IR_ACC_ROW));
    S1(p, IR_OP_EXP, IR_DOM_NODE, O(out, IR_ACC_ROW), 0, O(t, IR_ACC_ROW));
    expect_ad_error(p, "needs a loss");
    /* += into t after out read it */
    S1(p, IR_OP_RELU, IR_DOM_NODE, O(t, IR_ACC_ROW), 1, O(h, IR_ACC_ROW));
    add_loss(p);
    expect_ad_error(p, "adds into 't' after it was read");
    ir_free(p);

    p = irb_new_prog("noderiv");
    h = irb_node_var(p, "h", 1, 4, IR_ROLE_INPUT, 0);
    out = irb_node_var(p, "out", 1, 3, IR_ROLE_OUTPUT, 0);
    p->output = out;
    int sl = S1(p, IR_OP_SLICE, IR_DOM_NODE, O(out, IR_ACC_ROW), 0, O(h, IR_ACC_ROW));
    p->stmts[sl].iarg = 1;
    add_loss(p);
    expect_ad_error(p, "no gradient rule for slice");
    ir_free(p);

    p = irb_new_prog("twice");
    h = irb_node_var(p, "h", 1, 3, IR_ROLE_INPUT, 0);
    out = irb_node_var(p, "out", 1, 3, IR_ROLE_OUTPUT, 0);
    p->output = out;
    S1(p, IR_OP_EXP, IR_DOM_NODE, O(out, IR_ACC_ROW), 0, O(h, IR_ACC_ROW));
    add_loss(p);
    rg_err err;
    assert_int_equal(ad_append_backward(p, &err), 0);
    expect_ad_error(p, "already has a backward part");
    ir_free(p);
}

/* ------------------------------------------------------------------ the models */

#define MODELS tu_models

static ir_program *load(const char *model, const ir_dims *d, int reorder, int compact)
{
    rg_err err;
    model_options o = {.task = "train", .reorder = reorder, .compact = compact};
    ir_program *p = model_load_opts(model, d, &o, &err);
    if (!p) fail_msg("%s (reorder %d, compact %d): %s", model, reorder, compact, err.msg);
    return p;
}

static int count_op(const ir_program *p, ir_opkind op)
{
    int n = 0;
    for (int i = 0; i < p->nstmts; i++) n += p->stmts[i].op == op;
    return n;
}

/* Gradients of every input and weight, for each model and pass configuration, against
 * finite differences; and the same gradients whatever the passes. */
static void models_gradients_on(hg_graph *g, int samples)
{
    ir_dims dims[] = {{6, 4, 1}, {6, 4, 2}};
    int saw_weight_mm = 0;
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (int m = 0; m < tu_nmodels; m++) {
            ir_dims md = tu_model_dims(MODELS[m], &dims[di]);
            ir_program *base = load(MODELS[m], &md, 0, 0);
            ref_exec *xb = ref_new(base, g, NULL, NULL);
            assert_non_null(xb);
            assert_int_equal(ref_run(xb, NULL), 0);
            for (int cfg = 0; cfg < 4; cfg++) {
                ir_program *p = load(MODELS[m], &md, cfg & 1, cfg >> 1);
                check_structure(p, p->nforward);
                fd_check(p, g, samples, 1e-6);
                saw_weight_mm += count_op(p, IR_OP_WEIGHT_MM) > 0;
                ref_exec *x = ref_new(p, g, NULL, NULL);
                assert_non_null(x);
                assert_int_equal(ref_run(x, NULL), 0);
                for (int v = 0; v < base->nvars; v++) {
                    /* compact temporaries' gradients hold sums over edges: compare the
                     * gradients of inputs and weights */
                    if (base->vars[v].grad_of < 0) continue;
                    ir_role r = base->vars[base->vars[v].grad_of].role;
                    if (r != IR_ROLE_INPUT && r != IR_ROLE_PARAM) continue;
                    const char *of = base->vars[base->vars[v].grad_of].name;
                    int pv = ir_find_var(p, of);
                    assert_true(pv >= 0 && p->vars[pv].grad >= 0);
                    double rel = xv_rel_l2(ref_values(xb, v), ref_values(x, p->vars[pv].grad), ref_count(x, pv));
                    if (!(rel < 1e-10))
                        fail_msg("%s cfg %d heads %d: d_%s differs from the unoptimized one by %.3g", MODELS[m], cfg,
                                 dims[di].heads, of, rel);
                }
                ref_free(x);
                ir_free(p);
            }
            ref_free(xb);
            ir_free(base);
        }
    assert_true(saw_weight_mm > 0);   /* reordering's weight products were differentiated */
}

static void test_models_gradients(void **state)
{
    (void)state;
    if (!model_has_autodiff()) fail_msg("codegen/model.c was built without autodiff");
    hg_graph *g = irb_small_graph();
    models_gradients_on(g, 30);
    hg_free(g);
    /* more types, hubs and shared (src, etype) rows */
    rg_err err;
    g = synth_generate("nodes=60,edges=400,ntypes=3,etypes=5,ratio=0.5,seed=2", &err);
    if (!g) fail_msg("synth: %s", err.msg);
    models_gradients_on(g, 12);
    hg_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_and_aggregation),
        cmocka_unit_test(test_attention_in_place),
        cmocka_unit_test(test_heads_broadcast),
        cmocka_unit_test(test_weight_products),
        cmocka_unit_test(test_gelu_sigmoid),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_models_gradients),
    };
    return cmocka_run_group_tests_name("autodiff", tests, NULL, NULL);
}
