/* Tests of the model language: the shipped models instantiate as expected IR, and every
 * kind of bad input gives one "file:line:col: ..." message, never a crash. */
#include "tests/testutil.h"
#include "codegen/model.h"
#include "codegen/modeldir.h"
#include "codegen/parse.h"

#include <stdlib.h>
#include <string.h>

static const ir_dims D64 = {64, 64, 1};

static ir_program *load_ok(const char *model, const ir_dims *d)
{
    rg_err err;
    ir_program *p = model_load(model, d, "infer", &err);
    if (!p) fail_msg("%s: %s", model, err.msg);
    assert_int_equal(ir_verify(p, &err), 0);
    return p;
}

static int var(const ir_program *p, const char *name)
{
    int v = ir_find_var(p, name);
    if (v < 0) fail_msg("%s has no variable %s", p->name, name);
    return v;
}

/* Parses text as a model file; returns the error message (static) or NULL on success. */
static const char *parse_error(const char *text, const ir_dims *d)
{
    static rg_err err;
    ir_program *p = ps_load_string("t.rgnn", text, d, &err);
    if (p) {
        ir_free(p);
        return NULL;
    }
    return err.msg;
}

static void expect_error(const char *text, const char *where, const char *what)
{
    const char *msg = parse_error(text, &D64);
    if (!msg) fail_msg("accepted:\n%s", text);
    if (strncmp(msg, where, strlen(where)) || !strstr(msg, what))
        fail_msg("got '%s', want it to start with '%s' and contain '%s'", msg, where, what);
}

#define HEADER "input feature: (IN)\nweight W[etype]: (IN, OUT)\noutput n[\"h\"]\n"

static void test_rgcn_shape(void **state)
{
    (void)state;
    ir_program *p = load_ok("rgcn", &D64);
    assert_int_equal(p->nstmts, 3);
    /* self-loop GEMM over nodes, typed linear per edge, then the normalised aggregation */
    assert_int_equal(p->stmts[0].op, IR_OP_LINEAR);
    assert_int_equal(p->stmts[0].dom, IR_DOM_NODE);
    assert_int_equal(p->stmts[0].in[1].acc, IR_ACC_ALL);
    assert_int_equal(p->stmts[1].op, IR_OP_LINEAR);
    assert_int_equal(p->stmts[1].in[0].acc, IR_ACC_SRC);
    assert_int_equal(p->stmts[1].in[1].acc, IR_ACC_ETYPE);
    const ir_stmt *agg = &p->stmts[2];
    assert_int_equal(agg->op, IR_OP_MUL);
    assert_int_equal(agg->dom, IR_DOM_EDGE);
    assert_int_equal(agg->out.acc, IR_ACC_DST);
    assert_true(agg->accumulate);
    assert_int_equal(agg->out.var, p->output);
    assert_int_equal(p->vars[var(p, "norm")].role, IR_ROLE_GRAPH);
    assert_int_equal(p->vars[p->output].role, IR_ROLE_OUTPUT);
    ir_free(p);
}

static void test_rgat_shape(void **state)
{
    (void)state;
    ir_dims d = {32, 64, 4};
    ir_program *p = load_ok("rgat", &d);
    /* heads as a dimension: hs is 4 heads of 16, w_s per head */
    const ir_var *hs = &p->vars[var(p, "hs")];
    assert_int_equal(hs->heads, 4);
    assert_int_equal(hs->dim, 16);
    assert_int_equal(p->vars[var(p, "w_s")].heads, 4);
    assert_int_equal(p->vars[var(p, "W")].rows_dim, 32);
    /* edge_softmax inlined from lib.rgnn: exp, per-dst sum (zero_init), divide, in SSA form */
    int sum = var(p, "att_sum");
    assert_true(p->vars[sum].zero_init);
    var(p, "att_2");
    var(p, "att_3");
    int aggregations = 0;
    for (int i = 0; i < p->nstmts; i++) {
        const ir_stmt *s = &p->stmts[i];
        assert_true(s->nin <= 2);
        if (s->out.acc == IR_ACC_DST) {
            assert_true(s->accumulate);
            assert_true(p->vars[s->out.var].zero_init);
            aggregations++;
        }
    }
    assert_int_equal(aggregations, 2);   /* att_sum and h */
    assert_int_equal(p->nforward, p->nstmts);
    ir_free(p);
}

static void test_hgt_shape(void **state)
{
    (void)state;
    ir_dims d = {64, 64, 4};
    ir_program *p = load_ok("hgt", &d);
    assert_int_equal(p->vars[var(p, "WK")].widx, IR_WIDX_NTYPE);
    assert_int_equal(p->vars[var(p, "Wa")].heads, 4);
    assert_int_equal(p->vars[var(p, "Wa")].rows_dim, 16);
    assert_int_equal(p->vars[var(p, "mu")].dim, 1);
    /* 1/sqrt(d) folded into a constant divide by 4 */
    int found = 0;
    for (int i = 0; i < p->nstmts; i++)
        if (p->stmts[i].op == IR_OP_DIV && p->stmts[i].in[1].acc == IR_ACC_CONST) {
            assert_float_equal(p->stmts[i].in[1].cval, 4.0, 1e-12);
            found = 1;
        }
    assert_true(found);
    ir_free(p);
}

static void test_train_adds_loss(void **state)
{
    (void)state;
    rg_err err;
    ir_program *p = model_load("rgcn", &D64, "train", &err);
    assert_non_null(p);
    assert_true(p->loss >= 0 && p->label >= 0);
    int has_loss = 0;
    for (int i = 0; i < p->nforward; i++) has_loss |= p->stmts[i].op == IR_OP_NLL_LOSS;
    assert_true(has_loss);
    assert_int_equal(ir_verify(p, &err), 0);
    ir_free(p);
    assert_null(model_load("rgcn", &D64, "fly", &err));
    assert_non_null(strstr(err.msg, "unknown task"));
}

static void test_model_by_path_and_unknown(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *path = tu_write_file(dir, "mine.rgnn",
                               "# a user's model\n" HEADER
                               "def twice(g, name):\n"
                               "    for e in g.edges():\n"
                               "        e[name] = e[name] * 2\n"
                               "for e in g.edges():\n"
                               "    e[\"m\"] = linear(e.src.feature, W[e.etype])\n"
                               "twice(g, \"m\")\n"
                               "for n in g.dst_nodes():\n"
                               "    for e in n.incoming_edges():\n"
                               "        n[\"h\"] += e[\"m\"]\n");
    ir_program *p = load_ok(path, &D64);
    var(p, "m_2");
    ir_free(p);
    rg_err err;
    assert_null(model_load("no_such_model", &D64, "infer", &err));
    assert_non_null(strstr(err.msg, "rgat"));   /* lists the known models */
    char *missing = rg_xasprintf("%s/absent.rgnn", dir);
    assert_null(model_load(missing, &D64, "infer", &err));
    assert_non_null(strstr(err.msg, "does not exist"));
    free(missing);
    free(path);
    free(dir);
}

static void test_error_undefined_name(void **state)
{
    (void)state;
    expect_error(HEADER "for e in g.edges():\n    e[\"m\"] = linear(e.src.feature, Wx[e.etype])\n", "t.rgnn:5:36:",
                 "undefined name 'Wx' (did you mean 'W'?)");
    expect_error(HEADER "for e in g.edges():\n    e[\"m\"] = e[\"nothing\"]\n", "t.rgnn:5:14:",
                 "\"nothing\" is read before anything assigns it");
    expect_error(HEADER "e[\"m\"] = 1\n", "t.rgnn:4:1:", "assignments belong inside a loop");
    expect_error(HEADER "x = e[\"m\"]\n", "t.rgnn:4:1:", "assignments belong inside a loop");
    expect_error(HEADER "for n in g.nodes():\n    n[\"h\"] = linear(e.src.feature, W[e.etype])\n", "t.rgnn:5:21:",
                 "undefined name 'e'");
    expect_error(HEADER "for e in g.edges():\n    e[\"m\"] = lienar(e.src.feature, W[e.etype])\n", "t.rgnn:5:14:",
                 "unknown function 'lienar' (did you mean 'linear'?)");
}

static void test_error_slicing(void **state)
{
    (void)state;
    expect_error(HEADER "for e in g.edges():\n    e[\"m\"] = linear(e.src.feature, W[e.src])\n", "t.rgnn:5:38:",
                 "must be sliced by its edge type (e.etype), not by a node");
    expect_error(HEADER "for e in g.edges():\n    e[\"m\"] = linear(e.src.feature, W[e.src.ntype])\n", "t.rgnn:5:38:",
                 "indexed by edge type");
    expect_error(HEADER "for e in g.edges():\n    e[\"m\"] = linear(e.src.feature, W)\n", "t.rgnn:5:36:",
                 "slice it, e.g. W[e.etype]");
    expect_error(HEADER "weight V: (IN, OUT)\nfor e in g.edges():\n    e[\"m\"] = linear(e.src.feature, V[e.etype])\n",
                 "t.rgnn:6:", "not indexed by a type");
}

static void test_error_shapes(void **state)
{
    (void)state;
    ir_dims d = {32, 64, 1};
    rg_err err;
    const char *text = "input feature: (IN)\nweight W[etype]: (64, 64)\noutput n[\"h\"]\n"
                       "for e in g.edges():\n    e.dst[\"h\"] += linear(e.src.feature, W[e.etype])\n";
    assert_null(ps_load_string("s.rgnn", text, &d, &err));
    assert_non_null(strstr(err.msg, "s.rgnn:5:19:"));
    assert_non_null(strstr(err.msg, "input is 32 wide but weight 'W' is (64, 64)"));
    expect_error(HEADER "weight w[etype]: (32)\nfor e in g.edges():\n    e[\"a\"] = dot(e.src.feature, w[e.etype])\n",
                 "t.rgnn:6:14:", "dot: shapes 1x64 and 1x32");
    expect_error(HEADER "for e in g.edges():\n    e[\"a\"] = reshape(e.src.feature, 3, 5)\n", "t.rgnn:5:14:",
                 "reshape to 3x5 of a 1x64 value");
    ir_dims h3 = {64, 64, 3};
    const char *msg = parse_error("input feature: (IN)\nweight w[etype]: heads (OUT/HEADS)\noutput n[\"h\"]\n", &h3);
    assert_non_null(msg);
    assert_non_null(strstr(msg, "t.rgnn:2:25: a weight vector's size must be a positive whole number"));
}

static void test_error_unsupported(void **state)
{
    (void)state;
    expect_error(HEADER "while True:\n    pass\n", "t.rgnn:4:1:", "unsupported construct 'while'");
    expect_error(HEADER "for e in g.edges():\n    if e.etype:\n        e[\"a\"] = e.src.feature\n", "t.rgnn:5:5:",
                 "unsupported construct 'if'");
    expect_error(HEADER "for e in g.edges():\n    for f in g.edges():\n        e[\"a\"] = e.src.feature\n", "t.rgnn:5:5:",
                 "cannot be nested");
    expect_error(HEADER "for e in g.edges():\n    e.dst[\"h\"] = e.src.feature\n", "t.rgnn:5:5:",
                 "can only be aggregated (+=)");
    expect_error(HEADER "for e in g.edges():\n    e[\"a\"] = e.src.feature % 2\n", "t.rgnn:5:28:",
                 "unexpected character '%'");
}

static void test_error_syntax(void **state)
{
    (void)state;
    expect_error(HEADER "for e in g.edges()\n    e[\"a\"] = e.src.feature\n", "t.rgnn:4:19:",
                 "expected ':' ending the for header");
    expect_error(HEADER "for e in g.edges():\n    e[\"a\"] = (e.src.feature\n", "t.rgnn:", "expected ')'");
    expect_error(HEADER "for e in g.edges():\n  e[\"a\"] = e.src.feature\n e[\"b\"] = e.src.feature\n", "t.rgnn:6:2:",
                 "indentation");
    expect_error(HEADER "for e in g.edges():\n\te[\"a\"] = e.src.feature\n", "t.rgnn:5:1:", "tab in indentation");
    expect_error(HEADER "for e in g.edges():\n    e[\"a\"] = \"open\n", "t.rgnn:5:14:", "string is not closed");
    expect_error("input feature: (IN)\nweight W[etype]: (IN, OUT)\nfor e in g.edges():\n    e[\"a\"] = e.src.feature\n",
                 "t.rgnn: ", "declares no output");
    expect_error(HEADER "weight W[etype]: (IN, OUT)\n", "t.rgnn:4:1:", "declared twice");
    expect_error(HEADER "import nosuchlib\n", "t.rgnn:4:1:", "cannot import 'nosuchlib'");
}

/* HEADER, a node loop, and `n["h"] = ` followed by expr (at line 5, column 14). */
static char *node_assign(const char *expr)
{
    return rg_xasprintf(HEADER "for n in g.nodes():\n    n[\"h\"] = %s\n", expr);
}

/* n copies of s, then tail, then n copies of close (which may be ""). */
static char *repeat(const char *s, int n, const char *tail, const char *close)
{
    rg_str b = {0};
    for (int i = 0; i < n; i++) rg_str_puts(&b, s);
    rg_str_puts(&b, tail);
    for (int i = 0; i < n && *close; i++) rg_str_puts(&b, close);
    return b.s;
}

static void expect_error_owned(char *expr, const char *where, const char *what)
{
    char *text = node_assign(expr);
    expect_error(text, where, what);
    free(text);
    free(expr);
}

/* Hostile depths used to overflow the stack (exit 139) in the parser's descent or in
 * elab's evaluation; each is now one located error. */
static void test_error_too_deep(void **state)
{
    (void)state;
    /* the expression is level 1, so what follows the 256th '(' or '-' (column 14 + 256) is
     * level 257: the error names where that sub-expression starts */
    expect_error_owned(repeat("(", 100000, "n.feature", ")"), "t.rgnn:5:270:", "nested too deeply");
    expect_error_owned(repeat("-", 200000, "n.feature", ""), "t.rgnn:5:270:", "nested too deeply");
    /* a + chain is as deep as it is long; the 256th '+' makes 257 levels */
    expect_error_owned(repeat("n.feature + ", 30000, "n.feature", ""), "t.rgnn:5:",
                       "expression too long: more than 256 operations");
    expect_error_owned(repeat("n.feature * ", 30000, "n.feature", ""), "t.rgnn:5:",
                       "expression too long");
    /* postfix chains build deep trees without recursing too */
    char *chain = repeat(".src", 30000, "", "");
    char *expr = rg_xasprintf("n%s", chain);
    free(chain);
    expect_error_owned(expr, "t.rgnn:5:", "expression too long");
}

/* The bounds leave room for any expression a person writes: 200 levels of parentheses, a
 * 200-term sum and 200 signs still instantiate. */
static void test_deep_but_bounded_expressions_load(void **state)
{
    (void)state;
    char *exprs[] = {repeat("(", 200, "n.feature", ")"), repeat("n.feature + ", 199, "n.feature", ""),
                     repeat("-", 200, "n.feature", "")};
    for (int i = 0; i < 3; i++) {
        char *text = node_assign(exprs[i]);
        const char *msg = parse_error(text, &D64);
        if (msg) fail_msg("refused: %s", msg);
        free(text);
        free(exprs[i]);
    }
}

/* A constant that overflows a double was emitted as `inf` (which nvcc rejects); a literal
 * divisor of 0 was accepted. Both are refused where they are written. */
static void test_error_bad_constants(void **state)
{
    (void)state;
    expect_error(HEADER "for n in g.nodes():\n    n[\"h\"] = 1e999999 * n.feature\n", "t.rgnn:5:14:",
                 "number too large: constants must be finite");
    expect_error(HEADER "for n in g.nodes():\n    n[\"h\"] = 1e-999999 * n.feature\n", "t.rgnn:5:14:",
                 "number too small");
    expect_error(HEADER "for n in g.nodes():\n    n[\"h\"] = n.feature / 0\n", "t.rgnn:5:24:", "division by zero");
    expect_error(HEADER "for n in g.nodes():\n    n[\"h\"] = n.feature / -(0.0)\n", "t.rgnn:5:24:",
                 "division by zero");
    expect_error(HEADER "for n in g.nodes():\n    n[\"h\"] = n.feature\n    n[\"h\"] /= 0\n", "t.rgnn:6:12:",
                 "division by zero");
    /* folds: an overflowing product, a divisor that folds to 0 */
    expect_error(HEADER "for n in g.nodes():\n    n[\"h\"] = (1e300 * 1e300) * n.feature\n", "t.rgnn:5:15:",
                 "constant overflows");
    expect_error(HEADER "for n in g.nodes():\n    n[\"h\"] = n.feature / (1 - 1)\n", "t.rgnn:5:14:",
                 "division by zero");
    /* a zero that is not a literal divisor, and tiny but representable numbers, are fine */
    assert_null(parse_error(HEADER "for n in g.nodes():\n    n[\"h\"] = (n.feature - 0) / 1e-300\n", &D64));
    assert_null(parse_error(HEADER "for n in g.nodes():\n    n[\"h\"] = 0.000 * n.feature + 1e308 * n.feature\n", &D64));
}

/* Every prefix of every shipped model either loads or gives a located message. */
static void test_truncations_never_crash(void **state)
{
    (void)state;
    const char *const *models = tu_models;
    ir_dims d = {16, 16, 2};
    for (int m = 0; m < tu_nmodels; m++) {
        char *path = md_find(models[m]);
        assert_non_null(path);
        rg_err err;
        char *text = ps_read_file(path, &err);
        assert_non_null(text);
        size_t n = strlen(text);
        for (size_t cut = 0; cut < n; cut += 3) {
            char *prefix = rg_xasprintf("%.*s", (int)cut, text);
            ir_program *p = ps_load_string(path, prefix, &d, &err);
            if (p) {
                assert_int_equal(ir_verify(p, NULL), 0);
                ir_free(p);
            } else {
                assert_non_null(strstr(err.msg, ".rgnn"));
            }
            free(prefix);
        }
        free(text);
        free(path);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rgcn_shape),
        cmocka_unit_test(test_rgat_shape),
        cmocka_unit_test(test_hgt_shape),
        cmocka_unit_test(test_train_adds_loss),
        cmocka_unit_test(test_model_by_path_and_unknown),
        cmocka_unit_test(test_error_undefined_name),
        cmocka_unit_test(test_error_slicing),
        cmocka_unit_test(test_error_shapes),
        cmocka_unit_test(test_error_unsupported),
        cmocka_unit_test(test_error_syntax),
        cmocka_unit_test(test_truncations_never_crash),
        cmocka_unit_test(test_error_too_deep),
        cmocka_unit_test(test_deep_but_bounded_expressions_load),
        cmocka_unit_test(test_error_bad_constants),
    };
    return cmocka_run_group_tests_name("parse", tests, NULL, NULL);
}
