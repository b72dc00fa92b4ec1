/* Tests of the float64 reference executor: hand-built programs on a small typed graph,
 * each checked against an independent naive loop written here; plus error handling. */
#include "tests/testutil.h"
#include "tests/irbuild.h"
#include "codegen/model.h"
#include "codegen/ref.h"
#include "measure/validate.h"
#include "datasets/loaders.h"
#include "datasets/dataset.h"
#include "codegen/pipeline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* ------------------------------------------------------------------ builders */

static int edge_var(ir_program *p, const char *name, int heads, int dim, int compact, ir_role role, int zero_init)
{
    return irb_var(p, name, IR_VAR_EDGE, compact ? IR_LAYOUT_COMPACT : IR_LAYOUT_VANILLA, role, IR_WIDX_NONE,
                   heads, 0, dim, zero_init);
}

static int weight_var(ir_program *p, const char *name, ir_widx widx, int heads, int rows_dim, int dim, ir_role role)
{
    return irb_var(p, name, IR_VAR_WEIGHT, IR_LAYOUT_WEIGHT, role, widx, heads, rows_dim, dim, 0);
}

static int scalar_var(ir_program *p, const char *name, ir_role role, int zero_init)
{
    return irb_var(p, name, IR_VAR_SCALAR, IR_LAYOUT_SCALAR, role, IR_WIDX_NONE, 1, 0, 1, zero_init);
}

static ir_operand O(int var, ir_access acc) { return (ir_operand){var, acc, 0}; }
static ir_operand Kc(double c) { return (ir_operand){-1, IR_ACC_CONST, c}; }

static ref_exec *run_prog(const ir_program *p, const hg_graph *g, int nthreads)
{
    rg_err err;
    ref_options o = {.seed = 7, .nthreads = nthreads};
    ref_exec *x = ref_new(p, g, &o, &err);
    if (!x) fail_msg("ref_new: %s", err.msg);
    if (ref_run(x, &err) < 0) fail_msg("ref_run: %s", err.msg);
    return x;
}

static int32_t ntype_of(const hg_graph *g, int32_t n) { return hg_ntype_of(g, n); }

static void assert_close_at(const double *want, const double *got, int64_t n, int line)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(want[i] - got[i]) <= 1e-12 * (1 + fabs(want[i]))))
            fail_msg("line %d, value %lld: want %.17g, got %.17g", line, (long long)i, want[i], got[i]);
}
#define assert_close(want, got, n) assert_close_at(want, got, n, __LINE__)

/* ------------------------------------------------------------------ tests */

/* Typed linear per edge, the same as compact rows, aggregation with e.norm. */
static void test_linear_compact_and_aggregation(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    ir_program *p = irb_new_prog("lin");
    int h = irb_node_var(p, "h", 1, 4, IR_ROLE_INPUT, 0);
    int W = weight_var(p, "W", IR_WIDX_ETYPE, 1, 4, 3, IR_ROLE_PARAM);
    int norm = edge_var(p, "norm", 1, 1, 0, IR_ROLE_GRAPH, 0);
    int hs = edge_var(p, "hs", 1, 3, 0, IR_ROLE_TEMP, 0);
    int hc = edge_var(p, "hc", 1, 3, 1, IR_ROLE_TEMP, 0);
    int out = irb_node_var(p, "out", 1, 3, IR_ROLE_OUTPUT, 1);
    p->output = out;
    S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(hs, IR_ACC_ROW), 0, O(h, IR_ACC_SRC), O(W, IR_ACC_ETYPE));
    S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(hc, IR_ACC_ROW), 0, O(h, IR_ACC_SRC), O(W, IR_ACC_ETYPE));
    S2(p, IR_OP_MUL, IR_DOM_EDGE, O(out, IR_ACC_DST), 1, O(hc, IR_ACC_ROW), O(norm, IR_ACC_ROW));
    rg_err err;
    assert_int_equal(ir_verify(p, &err), 0);
    ref_exec *x = run_prog(p, g, 2);
    const double *vh = ref_values(x, h), *vw = ref_values(x, W), *vn = ref_values(x, norm);
    int64_t E = g->num_edges;
    double *want_hs = calloc((size_t)E * 3, sizeof(double)), *want_out = calloc((size_t)g->num_nodes * 3, sizeof(double));
    for (int64_t e = 0; e < E; e++) {
        int cnt = 0;   /* incoming edges of dst with this etype */
        for (int64_t f = 0; f < E; f++) cnt += g->dst[f] == g->dst[e] && g->etype[f] == g->etype[e];
        assert_float_equal(vn[e], 1.0 / cnt, 1e-15);
        for (int j = 0; j < 3; j++) {
            for (int k = 0; k < 4; k++) want_hs[e * 3 + j] += vh[g->src[e] * 4 + k] * vw[(g->etype[e] * 4 + k) * 3 + j];
            want_out[g->dst[e] * 3 + j] += want_hs[e * 3 + j] * vn[e];
        }
    }
    assert_close(want_hs, ref_values(x, hs), E * 3);
    const double *vc = ref_values(x, hc);
    for (int64_t e = 0; e < E; e++) assert_close(want_hs + e * 3, vc + g->edge_compact[e] * 3, 3);
    assert_close(want_out, ref_values(x, out), g->num_nodes * 3);
    /* inputs are U(-1, 1), Glorot limit sqrt(6 / (4 + 3)) */
    for (int64_t i = 0; i < ref_count(x, h); i++) assert_true(vh[i] >= -1 && vh[i] < 1);
    for (int64_t i = 0; i < ref_count(x, W); i++) assert_true(fabs(vw[i]) <= sqrt(6.0 / 7));
    free(want_hs);
    free(want_out);
    ref_free(x);
    ir_free(p);
    hg_free(g);
}

/* RGAT-style attention with edge softmax (no max subtraction, as in the papers). */
static void test_edge_softmax_attention(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    ir_program *p = irb_new_prog("att");
    int h = irb_node_var(p, "h", 1, 4, IR_ROLE_INPUT, 0);
    int W = weight_var(p, "W", IR_WIDX_ETYPE, 1, 4, 3, IR_ROLE_PARAM);
    int ws = weight_var(p, "ws", IR_WIDX_ETYPE, 1, 0, 3, IR_ROLE_PARAM);
    int hs = edge_var(p, "hs", 1, 3, 1, IR_ROLE_TEMP, 0);
    int ht = edge_var(p, "ht", 1, 3, 0, IR_ROLE_TEMP, 0);
    int a1 = edge_var(p, "a1", 1, 1, 1, IR_ROLE_TEMP, 0);
    int a2 = edge_var(p, "a2", 1, 1, 0, IR_ROLE_TEMP, 0);
    int a3 = edge_var(p, "a3", 1, 1, 0, IR_ROLE_TEMP, 0);
    int a4 = edge_var(p, "a4", 1, 1, 0, IR_ROLE_TEMP, 0);
    int ex = edge_var(p, "ex", 1, 1, 0, IR_ROLE_TEMP, 0);
    int sum = irb_node_var(p, "sum", 1, 1, IR_ROLE_TEMP, 1);
    int att = edge_var(p, "att", 1, 1, 0, IR_ROLE_TEMP, 0);
    int out = irb_node_var(p, "out", 1, 3, IR_ROLE_OUTPUT, 1);
    p->output = out;
    S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(hs, IR_ACC_ROW), 0, O(h, IR_ACC_SRC), O(W, IR_ACC_ETYPE));
    S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(ht, IR_ACC_ROW), 0, O(h, IR_ACC_DST), O(W, IR_ACC_ETYPE));
    S2(p, IR_OP_DOT, IR_DOM_EDGE, O(a1, IR_ACC_ROW), 0, O(hs, IR_ACC_ROW), O(ws, IR_ACC_ETYPE));
    S2(p, IR_OP_DOT, IR_DOM_EDGE, O(a2, IR_ACC_ROW), 0, O(ht, IR_ACC_ROW), O(ws, IR_ACC_ETYPE));
    S2(p, IR_OP_ADD, IR_DOM_EDGE, O(a3, IR_ACC_ROW), 0, O(a1, IR_ACC_ROW), O(a2, IR_ACC_ROW));
    int lr = S1(p, IR_OP_LEAKYRELU, IR_DOM_EDGE, O(a4, IR_ACC_ROW), 0, O(a3, IR_ACC_ROW));
    p->stmts[lr].cval = 0.2;
    S1(p, IR_OP_EXP, IR_DOM_EDGE, O(ex, IR_ACC_ROW), 0, O(a4, IR_ACC_ROW));
    S1(p, IR_OP_COPY, IR_DOM_EDGE, O(sum, IR_ACC_DST), 1, O(ex, IR_ACC_ROW));
    S2(p, IR_OP_DIV, IR_DOM_EDGE, O(att, IR_ACC_ROW), 0, O(ex, IR_ACC_ROW), O(sum, IR_ACC_DST));
    S2(p, IR_OP_MUL, IR_DOM_EDGE, O(out, IR_ACC_DST), 1, O(att, IR_ACC_ROW), O(hs, IR_ACC_ROW));
    rg_err err;
    assert_int_equal(ir_verify(p, &err), 0);
    ref_exec *x = run_prog(p, g, 2);
    const double *vh = ref_values(x, h), *vw = ref_values(x, W), *vs = ref_values(x, ws);
    int64_t E = g->num_edges, N = g->num_nodes;
    double *msg = calloc((size_t)E * 3, sizeof(double)), *e_ex = calloc((size_t)E, sizeof(double));
    double *den = calloc((size_t)N, sizeof(double)), *want = calloc((size_t)N * 3, sizeof(double));
    for (int64_t e = 0; e < E; e++) {
        double s = 0, t = 0;
        for (int j = 0; j < 3; j++) {
            double zs = 0, zt = 0;
            for (int k = 0; k < 4; k++) {
                zs += vh[g->src[e] * 4 + k] * vw[(g->etype[e] * 4 + k) * 3 + j];
                zt += vh[g->dst[e] * 4 + k] * vw[(g->etype[e] * 4 + k) * 3 + j];
            }
            msg[e * 3 + j] = zs;
            s += zs * vs[g->etype[e] * 3 + j];
            t += zt * vs[g->etype[e] * 3 + j];
        }
        double z = s + t;
        e_ex[e] = exp(z > 0 ? z : 0.2 * z);
        den[g->dst[e]] += e_ex[e];
    }
    for (int64_t e = 0; e < E; e++)
        for (int j = 0; j < 3; j++) want[g->dst[e] * 3 + j] += e_ex[e] / den[g->dst[e]] * msg[e * 3 + j];
    assert_close(want, ref_values(x, out), N * 3);
    free(msg); free(e_ex); free(den); free(want);
    ref_free(x);
    ir_free(p);
    hg_free(g);
}

/* Heads: broadcasting operands, per-head weights with a 1-head input, and outputs
 * narrower than the broadcast shape receiving sums. */
static void test_heads_broadcast_and_sums(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    ir_program *p = irb_new_prog("heads");
    int a = irb_node_var(p, "a", 2, 3, IR_ROLE_INPUT, 0);
    int b = irb_node_var(p, "b", 1, 3, IR_ROLE_INPUT, 0);
    int c = irb_node_var(p, "c", 2, 1, IR_ROLE_INPUT, 0);
    int Wh = weight_var(p, "Wh", IR_WIDX_NONE, 2, 3, 2, IR_ROLE_PARAM);
    int m = irb_node_var(p, "m", 2, 3, IR_ROLE_TEMP, 0);
    int sh = irb_node_var(p, "sh", 1, 3, IR_ROLE_TEMP, 0);
    int sd = irb_node_var(p, "sd", 2, 1, IR_ROLE_TEMP, 0);
    int dt = irb_node_var(p, "dt", 2, 1, IR_ROLE_TEMP, 0);
    int lin = irb_node_var(p, "lin", 2, 2, IR_ROLE_TEMP, 0);
    int lsum = irb_node_var(p, "lsum", 1, 2, IR_ROLE_TEMP, 0);
    int cat = irb_node_var(p, "cat", 2, 4, IR_ROLE_TEMP, 0);
    int sl = irb_node_var(p, "sl", 2, 2, IR_ROLE_TEMP, 0);
    int rs = irb_node_var(p, "rs", 3, 2, IR_ROLE_OUTPUT, 0);
    p->output = rs;
    S2(p, IR_OP_MUL, IR_DOM_NODE, O(m, IR_ACC_ROW), 0, O(a, IR_ACC_ROW), O(b, IR_ACC_ROW));
    S2(p, IR_OP_MUL, IR_DOM_NODE, O(sh, IR_ACC_ROW), 0, O(a, IR_ACC_ROW), O(b, IR_ACC_ROW));
    S2(p, IR_OP_MUL, IR_DOM_NODE, O(sd, IR_ACC_ROW), 0, O(a, IR_ACC_ROW), O(c, IR_ACC_ROW));
    S2(p, IR_OP_DOT, IR_DOM_NODE, O(dt, IR_ACC_ROW), 0, O(a, IR_ACC_ROW), O(b, IR_ACC_ROW));
    S2(p, IR_OP_LINEAR, IR_DOM_NODE, O(lin, IR_ACC_ROW), 0, O(b, IR_ACC_ROW), O(Wh, IR_ACC_ALL));
    S2(p, IR_OP_LINEAR, IR_DOM_NODE, O(lsum, IR_ACC_ROW), 0, O(b, IR_ACC_ROW), O(Wh, IR_ACC_ALL));
    S2(p, IR_OP_CONCAT, IR_DOM_NODE, O(cat, IR_ACC_ROW), 0, O(c, IR_ACC_ROW), O(a, IR_ACC_ROW));
    int si = S1(p, IR_OP_SLICE, IR_DOM_NODE, O(sl, IR_ACC_ROW), 0, O(cat, IR_ACC_ROW));
    p->stmts[si].iarg = 2;
    S1(p, IR_OP_COPY, IR_DOM_NODE, O(rs, IR_ACC_ROW), 0, O(a, IR_ACC_ROW));   /* reshape 2x3 -> 3x2 */
    rg_err err;
    assert_int_equal(ir_verify(p, &err), 0);
    ref_exec *x = run_prog(p, g, 1);
    const double *va = ref_values(x, a), *vb = ref_values(x, b), *vc = ref_values(x, c), *vw = ref_values(x, Wh);
    for (int n = 0; n < g->num_nodes; n++) {
        const double *A = va + n * 6, *B = vb + n * 3, *C = vc + n * 2;
        double w_m[6], w_sh[3] = {0}, w_sd[2] = {0}, w_dt[2] = {0}, w_lin[4] = {0}, w_lsum[2] = {0}, w_cat[8], w_sl[4];
        for (int hh = 0; hh < 2; hh++)
            for (int d = 0; d < 3; d++) {
                w_m[hh * 3 + d] = A[hh * 3 + d] * B[d];
                w_sh[d] += A[hh * 3 + d] * B[d];
                w_sd[hh] += A[hh * 3 + d] * C[hh];
                w_dt[hh] += A[hh * 3 + d] * B[d];
            }
        for (int hh = 0; hh < 2; hh++)
            for (int j = 0; j < 2; j++)
                for (int k = 0; k < 3; k++) {
                    w_lin[hh * 2 + j] += B[k] * vw[(hh * 3 + k) * 2 + j];
                    w_lsum[j] += B[k] * vw[(hh * 3 + k) * 2 + j];
                }
        for (int hh = 0; hh < 2; hh++) {
            w_cat[hh * 4] = C[hh];
            for (int d = 0; d < 3; d++) w_cat[hh * 4 + 1 + d] = A[hh * 3 + d];
            w_sl[hh * 2] = w_cat[hh * 4 + 2];
            w_sl[hh * 2 + 1] = w_cat[hh * 4 + 3];
        }
        assert_close(w_m, ref_values(x, m) + n * 6, 6);
        assert_close(w_sh, ref_values(x, sh) + n * 3, 3);
        assert_close(w_sd, ref_values(x, sd) + n * 2, 2);
        assert_close(w_dt, ref_values(x, dt) + n * 2, 2);
        assert_close(w_lin, ref_values(x, lin) + n * 4, 4);
        assert_close(w_lsum, ref_values(x, lsum) + n * 2, 2);
        assert_close(w_cat, ref_values(x, cat) + n * 8, 8);
        assert_close(w_sl, ref_values(x, sl) + n * 4, 4);
        assert_close(A, ref_values(x, rs) + n * 6, 6);
    }
    ref_free(x);
    ir_free(p);
    hg_free(g);
}

/* Backward-style statements: input gradients through W^T scattered to e.src, weight
 * gradients (outer products), node-typed weights, compact gradients from edges, and the
 * per-unique-row evaluation of dx[src] += dhs_compact * W^T. */
static void test_gradient_statements(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    ir_program *p = irb_new_prog("grads");
    int h = irb_node_var(p, "h", 1, 4, IR_ROLE_INPUT, 0);
    int dy = edge_var(p, "dy", 1, 3, 0, IR_ROLE_INPUT, 0);   /* stands for an edge gradient */
    int W = weight_var(p, "W", IR_WIDX_ETYPE, 1, 4, 3, IR_ROLE_PARAM);
    int Wn = weight_var(p, "Wn", IR_WIDX_NTYPE, 1, 4, 3, IR_ROLE_PARAM);
    int dh = irb_node_var(p, "dh", 1, 4, IR_ROLE_TEMP, 1);
    int dW = weight_var(p, "dW", IR_WIDX_ETYPE, 1, 4, 3, IR_ROLE_TEMP);
    p->vars[dW].zero_init = 1;
    int dWn = weight_var(p, "dWn", IR_WIDX_NTYPE, 1, 4, 3, IR_ROLE_TEMP);
    p->vars[dWn].zero_init = 1;
    int dc = edge_var(p, "dc", 1, 3, 1, IR_ROLE_TEMP, 1);
    int dhu = irb_node_var(p, "dhu", 1, 4, IR_ROLE_OUTPUT, 1);
    int dWu = weight_var(p, "dWu", IR_WIDX_ETYPE, 1, 4, 3, IR_ROLE_TEMP);
    p->vars[dWu].zero_init = 1;
    int hn = irb_node_var(p, "hn", 1, 3, IR_ROLE_TEMP, 0);
    p->output = dhu;
    ir_stmt s = {0};
    s.op = IR_OP_LINEAR; s.dom = IR_DOM_EDGE; s.out = O(dh, IR_ACC_SRC); s.accumulate = 1; s.nin = 2;
    s.in[0] = O(dy, IR_ACC_ROW); s.in[1] = O(W, IR_ACC_ETYPE); s.transpose_w = 1;
    ir_add_stmt(p, &s);
    S2(p, IR_OP_WGRAD, IR_DOM_EDGE, O(dW, IR_ACC_ETYPE), 1, O(h, IR_ACC_SRC), O(dy, IR_ACC_ROW));
    S2(p, IR_OP_LINEAR, IR_DOM_NODE, O(hn, IR_ACC_ROW), 0, O(h, IR_ACC_ROW), O(Wn, IR_ACC_NTYPE));
    S2(p, IR_OP_WGRAD, IR_DOM_NODE, O(dWn, IR_ACC_NTYPE), 1, O(h, IR_ACC_ROW), O(hn, IR_ACC_ROW));
    S1(p, IR_OP_COPY, IR_DOM_EDGE, O(dc, IR_ACC_ROW), 1, O(dy, IR_ACC_ROW));          /* per edge */
    s.out = O(dhu, IR_ACC_SRC); s.in[0] = O(dc, IR_ACC_ROW);
    ir_add_stmt(p, &s);                                                               /* per unique */
    S2(p, IR_OP_WGRAD, IR_DOM_EDGE, O(dWu, IR_ACC_ETYPE), 1, O(h, IR_ACC_SRC), O(dc, IR_ACC_ROW));
    rg_err err;
    assert_int_equal(ir_verify(p, &err), 0);
    assert_true(ir_stmt_per_unique(p, &p->stmts[5]));
    ref_exec *x = run_prog(p, g, 2);
    const double *vh = ref_values(x, h), *vy = ref_values(x, dy), *vw = ref_values(x, W), *vwn = ref_values(x, Wn);
    int64_t E = g->num_edges, N = g->num_nodes, U = g->num_unique, R = g->num_etypes;
    double *w_dh = calloc((size_t)N * 4, 8), *w_dW = calloc((size_t)R * 12, 8), *w_dc = calloc((size_t)U * 3, 8);
    double *w_dhu = calloc((size_t)N * 4, 8), *w_dWn = calloc((size_t)g->num_ntypes * 12, 8);
    for (int64_t e = 0; e < E; e++) {
        int t = g->etype[e];
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < 3; j++) {
                w_dh[g->src[e] * 4 + k] += vy[e * 3 + j] * vw[(t * 4 + k) * 3 + j];
                w_dW[(t * 4 + k) * 3 + j] += vh[g->src[e] * 4 + k] * vy[e * 3 + j];
            }
        for (int j = 0; j < 3; j++) w_dc[g->edge_compact[e] * 3 + j] += vy[e * 3 + j];
    }
    for (int64_t u = 0; u < U; u++) {
        int t = 0;
        while (u >= g->unique_etype_ptr[t + 1]) t++;
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < 3; j++) w_dhu[g->unique_src[u] * 4 + k] += w_dc[u * 3 + j] * vw[(t * 4 + k) * 3 + j];
    }
    for (int64_t n = 0; n < N; n++) {
        int t = ntype_of(g, (int32_t)n);
        double hn_row[3] = {0};
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) hn_row[j] += vh[n * 4 + k] * vwn[(t * 4 + k) * 3 + j];
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < 3; j++) w_dWn[(t * 4 + k) * 3 + j] += vh[n * 4 + k] * hn_row[j];
    }
    assert_close(w_dh, ref_values(x, dh), N * 4);
    assert_close(w_dW, ref_values(x, dW), R * 12);
    assert_close(w_dc, ref_values(x, dc), U * 3);
    assert_close(w_dhu, ref_values(x, dhu), N * 4);
    assert_close(w_dWn, ref_values(x, dWn), g->num_ntypes * 12);
    /* dW from compact rows (per unique) equals dW from edges */
    assert_close(w_dW, ref_values(x, dWu), R * 12);
    free(w_dh); free(w_dW); free(w_dc); free(w_dhu); free(w_dWn);
    ref_free(x);
    ir_free(p);
    hg_free(g);
}

/* The register-tiled kernels (groups of rows sharing a weight slice, 8-wide column tiles
 * with remainders) against naive loops, for plain, transposed and per-head weights. */
static void test_dense_kernels_against_naive(void **state)
{
    (void)state;
    rg_err err;
    hg_graph *g = synth_generate("nodes=300,edges=5000,ntypes=2,etypes=3,ratio=0.1,seed=4", &err);
    if (!g) fail_msg("synth: %s", err.msg);
    enum { KD = 9, ND = 19, HD = 2, KH = 5, NH = 12 };
    ir_program *p = irb_new_prog("dense");
    int h = irb_node_var(p, "h", 1, KD, IR_ROLE_INPUT, 0);
    int W = weight_var(p, "W", IR_WIDX_ETYPE, 1, KD, ND, IR_ROLE_PARAM);
    int Wh = weight_var(p, "Wh", IR_WIDX_ETYPE, HD, KH, NH, IR_ROLE_PARAM);
    int xh = irb_node_var(p, "xh", HD, KH, IR_ROLE_INPUT, 0);
    int y = edge_var(p, "y", 1, ND, 0, IR_ROLE_TEMP, 0);
    int yh = edge_var(p, "yh", HD, NH, 0, IR_ROLE_TEMP, 0);
    int dx = irb_node_var(p, "dx", 1, KD, IR_ROLE_TEMP, 1);
    int dW = weight_var(p, "dW", IR_WIDX_ETYPE, 1, KD, ND, IR_ROLE_TEMP);
    p->vars[dW].zero_init = 1;
    int dWh = weight_var(p, "dWh", IR_WIDX_ETYPE, HD, KH, NH, IR_ROLE_OUTPUT);
    p->vars[dWh].zero_init = 1;
    p->output = dWh;
    S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(y, IR_ACC_ROW), 0, O(h, IR_ACC_SRC), O(W, IR_ACC_ETYPE));
    S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(yh, IR_ACC_ROW), 0, O(xh, IR_ACC_DST), O(Wh, IR_ACC_ETYPE));
    int t = S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(dx, IR_ACC_DST), 1, O(y, IR_ACC_ROW), O(W, IR_ACC_ETYPE));
    p->stmts[t].transpose_w = 1;
    S2(p, IR_OP_WGRAD, IR_DOM_EDGE, O(dW, IR_ACC_ETYPE), 1, O(h, IR_ACC_SRC), O(y, IR_ACC_ROW));
    S2(p, IR_OP_WGRAD, IR_DOM_EDGE, O(dWh, IR_ACC_ETYPE), 1, O(xh, IR_ACC_DST), O(yh, IR_ACC_ROW));
    assert_int_equal(ir_verify(p, &err), 0);
    ref_exec *x = run_prog(p, g, 2);
    const double *vh = ref_values(x, h), *vw = ref_values(x, W), *vwh = ref_values(x, Wh), *vx = ref_values(x, xh);
    int64_t E = g->num_edges, R = g->num_etypes;
    double *wy = calloc((size_t)E * ND, 8), *wyh = calloc((size_t)E * HD * NH, 8);
    double *wdx = calloc((size_t)g->num_nodes * KD, 8), *wdW = calloc((size_t)R * KD * ND, 8);
    double *wdWh = calloc((size_t)R * HD * KH * NH, 8);
    for (int64_t e = 0; e < E; e++) {
        int r = g->etype[e], s = g->src[e], d = g->dst[e];
        for (int j = 0; j < ND; j++)
            for (int k = 0; k < KD; k++) wy[e * ND + j] += vh[s * KD + k] * vw[(r * KD + k) * ND + j];
        for (int hh = 0; hh < HD; hh++)
            for (int j = 0; j < NH; j++)
                for (int k = 0; k < KH; k++)
                    wyh[(e * HD + hh) * NH + j] += vx[(d * HD + hh) * KH + k] * vwh[((r * HD + hh) * KH + k) * NH + j];
        for (int k = 0; k < KD; k++)
            for (int j = 0; j < ND; j++) {
                wdx[d * KD + k] += wy[e * ND + j] * vw[(r * KD + k) * ND + j];
                wdW[(r * KD + k) * ND + j] += vh[s * KD + k] * wy[e * ND + j];
            }
        for (int hh = 0; hh < HD; hh++)
            for (int k = 0; k < KH; k++)
                for (int j = 0; j < NH; j++)
                    wdWh[((r * HD + hh) * KH + k) * NH + j] += vx[(d * HD + hh) * KH + k] * wyh[(e * HD + hh) * NH + j];
    }
    assert_close(wy, ref_values(x, y), E * ND);
    assert_close(wyh, ref_values(x, yh), E * HD * NH);
    assert_true(xv_rel_l2(wdx, ref_values(x, dx), g->num_nodes * KD) < 1e-13);
    assert_true(xv_rel_l2(wdW, ref_values(x, dW), R * KD * ND) < 1e-13);
    assert_true(xv_rel_l2(wdWh, ref_values(x, dWh), R * HD * KH * NH) < 1e-13);
    free(wy); free(wyh); free(wdx); free(wdW); free(wdWh);
    ref_free(x);
    ir_free(p);
    hg_free(g);
}

/* One shape of test_products_at_model_sizes: typed products at dims D with H heads, against
 * naive loops. Covers per-head edge linears (forward, transposed into a scatter), full-width
 * node linears and weight gradients from edges and nodes, with panel and row remainders. */
static void check_products(const hg_graph *g, int D, int H)
{
    int d = D / H;
    ir_program *p = irb_new_prog("sizes");
    int h = irb_node_var(p, "h", H, d, IR_ROLE_INPUT, 0);
    int hf = irb_node_var(p, "hf", 1, D, IR_ROLE_INPUT, 0);
    int We = weight_var(p, "We", IR_WIDX_ETYPE, H, d, d, IR_ROLE_PARAM);
    int Wn = weight_var(p, "Wn", IR_WIDX_NTYPE, 1, D, D, IR_ROLE_PARAM);
    int y = edge_var(p, "y", H, d, 0, IR_ROLE_TEMP, 0);
    int yn = irb_node_var(p, "yn", 1, D, IR_ROLE_TEMP, 0);
    int dx = irb_node_var(p, "dx", H, d, IR_ROLE_TEMP, 1);
    int dWe = weight_var(p, "dWe", IR_WIDX_ETYPE, H, d, d, IR_ROLE_TEMP);
    p->vars[dWe].zero_init = 1;
    int dWn = weight_var(p, "dWn", IR_WIDX_NTYPE, 1, D, D, IR_ROLE_OUTPUT);
    p->vars[dWn].zero_init = 1;
    p->output = dWn;
    S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(y, IR_ACC_ROW), 0, O(h, IR_ACC_SRC), O(We, IR_ACC_ETYPE));
    S2(p, IR_OP_LINEAR, IR_DOM_NODE, O(yn, IR_ACC_ROW), 0, O(hf, IR_ACC_ROW), O(Wn, IR_ACC_NTYPE));
    int t = S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(dx, IR_ACC_DST), 1, O(y, IR_ACC_ROW), O(We, IR_ACC_ETYPE));
    p->stmts[t].transpose_w = 1;
    S2(p, IR_OP_WGRAD, IR_DOM_EDGE, O(dWe, IR_ACC_ETYPE), 1, O(h, IR_ACC_SRC), O(y, IR_ACC_ROW));
    S2(p, IR_OP_WGRAD, IR_DOM_NODE, O(dWn, IR_ACC_NTYPE), 1, O(hf, IR_ACC_ROW), O(yn, IR_ACC_ROW));
    rg_err err;
    if (ir_verify(p, &err)) fail_msg("dims %d heads %d: %s", D, H, err.msg);
    ref_exec *x = run_prog(p, g, 2);
    const double *vh = ref_values(x, h), *vf = ref_values(x, hf), *vwe = ref_values(x, We), *vwn = ref_values(x, Wn);
    int64_t E = g->num_edges, N = g->num_nodes, R = g->num_etypes, T = g->num_ntypes;
    double *wy = calloc((size_t)E * D, 8), *wyn = calloc((size_t)N * D, 8), *wdx = calloc((size_t)N * D, 8);
    double *wdWe = calloc((size_t)R * H * d * d, 8), *wdWn = calloc((size_t)T * D * D, 8);
    for (int64_t e = 0; e < E; e++) {
        int64_t r = g->etype[e], s = g->src[e], v = g->dst[e];
        for (int q = 0; q < H; q++) {
            const double *w = vwe + (r * H + q) * d * d, *xs = vh + (s * H + q) * d;
            double *ye = wy + (e * H + q) * d;
            for (int j = 0; j < d; j++)
                for (int k = 0; k < d; k++) ye[j] += xs[k] * w[k * d + j];
            for (int k = 0; k < d; k++)
                for (int j = 0; j < d; j++) {
                    wdx[(v * H + q) * d + k] += ye[j] * w[k * d + j];
                    wdWe[((r * H + q) * d + k) * d + j] += xs[k] * ye[j];
                }
        }
    }
    for (int64_t n = 0; n < N; n++) {
        int64_t tt = ntype_of(g, (int32_t)n);
        for (int j = 0; j < D; j++)
            for (int k = 0; k < D; k++) wyn[n * D + j] += vf[n * D + k] * vwn[(tt * D + k) * D + j];
        for (int k = 0; k < D; k++)
            for (int j = 0; j < D; j++) wdWn[(tt * D + k) * D + j] += vf[n * D + k] * wyn[n * D + j];
    }
    assert_close(wy, ref_values(x, y), E * D);
    assert_close(wyn, ref_values(x, yn), N * D);
    /* sums in another order (and weight gradients per thread): relative to the whole */
    assert_true(xv_rel_l2(wdx, ref_values(x, dx), N * D) < 1e-13);
    assert_true(xv_rel_l2(wdWe, ref_values(x, dWe), R * H * d * d) < 1e-13);
    assert_true(xv_rel_l2(wdWn, ref_values(x, dWn), T * D * D) < 1e-13);
    free(wy); free(wyn); free(wdx); free(wdWe); free(wdWn);
    ref_free(x);
    ir_free(p);
}

/* The packed products at the sizes the nightly plan sweeps (dims 16 to 256, heads 1, 4, 8)
 * and at widths that leave partial panels (24 / 4 = 6, 200 / 8 = 25). */
static void test_products_at_model_sizes(void **state)
{
    (void)state;
    rg_err err;
    hg_graph *g = synth_generate("nodes=200,edges=1500,ntypes=3,etypes=5,ratio=0.2,seed=9", &err);
    if (!g) fail_msg("synth: %s", err.msg);
    static const int shapes[][2] = {{16, 1}, {16, 8}, {24, 4}, {64, 1}, {64, 8}, {128, 4}, {200, 8}, {256, 1}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) check_products(g, shapes[i][0], shapes[i][1]);
    hg_free(g);
}

/* DOM_TYPE weight products: W[r] * w[r] (reordering's weight-vector product), a node-typed
 * matrix times a per-relation per-head matrix with column split, and their gradient forms. */
static void test_weight_products(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    ir_program *p = irb_new_prog("wmm");
    int W = weight_var(p, "W", IR_WIDX_ETYPE, 1, 4, 3, IR_ROLE_PARAM);
    int w = weight_var(p, "w", IR_WIDX_ETYPE, 1, 0, 3, IR_ROLE_PARAM);
    int Wv = weight_var(p, "Wv", IR_WIDX_ETYPE, 1, 0, 4, IR_ROLE_TEMP);
    int K = weight_var(p, "K", IR_WIDX_NTYPE, 1, 4, 6, IR_ROLE_PARAM);    /* 2 heads x 3 */
    int A = weight_var(p, "A", IR_WIDX_ETYPE, 2, 3, 3, IR_ROLE_PARAM);
    int KA = weight_var(p, "KA", IR_WIDX_ETYPE, 2, 4, 3, IR_ROLE_TEMP);
    int gK = weight_var(p, "gK", IR_WIDX_NTYPE, 1, 4, 6, IR_ROLE_TEMP);
    p->vars[gK].zero_init = 1;
    int gw = weight_var(p, "gw", IR_WIDX_ETYPE, 1, 0, 3, IR_ROLE_OUTPUT);
    p->vars[gw].zero_init = 1;
    int gA = weight_var(p, "gA", IR_WIDX_ETYPE, 2, 3, 3, IR_ROLE_TEMP);
    p->vars[gA].zero_init = 1;
    p->output = gw;
    S2(p, IR_OP_WEIGHT_MM, IR_DOM_TYPE, O(Wv, IR_ACC_ETYPE), 0, O(W, IR_ACC_ETYPE), O(w, IR_ACC_ETYPE));
    S2(p, IR_OP_WEIGHT_MM, IR_DOM_TYPE, O(KA, IR_ACC_ETYPE), 0, O(K, IR_ACC_SRC_NTYPE), O(A, IR_ACC_ETYPE));
    /* gradient forms (as autodiff emits them): gK += KA * A^T (split), gA += K^T KA, gw += Wv * W */
    int i1 = S2(p, IR_OP_WEIGHT_MM, IR_DOM_TYPE, O(gK, IR_ACC_SRC_NTYPE), 1, O(KA, IR_ACC_ETYPE), O(A, IR_ACC_ETYPE));
    p->stmts[i1].transpose_w = 1;
    p->stmts[i1].backward = 1;
    S2(p, IR_OP_WGRAD, IR_DOM_TYPE, O(gA, IR_ACC_ETYPE), 1, O(K, IR_ACC_SRC_NTYPE), O(KA, IR_ACC_ETYPE));
    int i3 = S2(p, IR_OP_WEIGHT_MM, IR_DOM_TYPE, O(gw, IR_ACC_ETYPE), 1, O(Wv, IR_ACC_ETYPE), O(W, IR_ACC_ETYPE));
    p->stmts[i3].backward = 1;
    rg_err err;
    assert_int_equal(ir_verify(p, &err), 0);
    ref_exec *x = run_prog(p, g, 2);
    const double *vW = ref_values(x, W), *vw = ref_values(x, w), *vK = ref_values(x, K), *vA = ref_values(x, A);
    int R = g->num_etypes;
    double *wKA = calloc((size_t)R * 24, 8), *wgK = calloc((size_t)g->num_ntypes * 24, 8);
    double *wgA = calloc((size_t)R * 18, 8), *wgw = calloc((size_t)R * 3, 8), *wWv = calloc((size_t)R * 4, 8);
    for (int r = 0; r < R; r++) {
        int ts = g->etype_src[r];
        for (int k = 0; k < 4; k++)
            for (int m = 0; m < 3; m++) wWv[r * 4 + k] += vW[(r * 4 + k) * 3 + m] * vw[r * 3 + m];
        for (int hh = 0; hh < 2; hh++)
            for (int k = 0; k < 4; k++)
                for (int n = 0; n < 3; n++)
                    for (int m = 0; m < 3; m++)
                        wKA[((r * 2 + hh) * 4 + k) * 3 + n] += vK[(ts * 4 + k) * 6 + hh * 3 + m] * vA[((r * 2 + hh) * 3 + m) * 3 + n];
    }
    for (int r = 0; r < R; r++) {
        int ts = g->etype_src[r];
        for (int hh = 0; hh < 2; hh++)
            for (int k = 0; k < 4; k++)
                for (int m = 0; m < 3; m++)
                    for (int n = 0; n < 3; n++) {
                        double ka = wKA[((r * 2 + hh) * 4 + k) * 3 + n];
                        wgK[(ts * 4 + k) * 6 + hh * 3 + m] += ka * vA[((r * 2 + hh) * 3 + m) * 3 + n];
                        wgA[((r * 2 + hh) * 3 + m) * 3 + n] += vK[(ts * 4 + k) * 6 + hh * 3 + m] * ka;
                    }
        for (int m = 0; m < 3; m++)
            for (int k = 0; k < 4; k++) wgw[r * 3 + m] += wWv[r * 4 + k] * vW[(r * 4 + k) * 3 + m];
    }
    assert_close(wWv, ref_values(x, Wv), R * 4);
    assert_close(wKA, ref_values(x, KA), R * 24);
    assert_close(wgK, ref_values(x, gK), g->num_ntypes * 24);
    assert_close(wgA, ref_values(x, gA), R * 18);
    assert_close(wgw, ref_values(x, gw), R * 3);
    free(wKA); free(wgK); free(wgA); free(wgw); free(wWv);
    ref_free(x);
    ir_free(p);
    hg_free(g);
}

/* NLL loss against seeded labels and its gradient: (softmax - onehot) * dloss / N. */
static void test_nll(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    ir_program *p = irb_new_prog("nll");
    int z = irb_node_var(p, "z", 1, 3, IR_ROLE_INPUT, 0);
    int lab = irb_node_var(p, "label", 1, 1, IR_ROLE_LABEL, 0);
    int loss = scalar_var(p, "loss", IR_ROLE_LOSS, 0);
    int dl = scalar_var(p, "dloss", IR_ROLE_TEMP, 0);
    int dz = irb_node_var(p, "dz", 1, 3, IR_ROLE_OUTPUT, 1);
    p->output = dz;
    p->loss = loss;
    p->label = lab;
    S2(p, IR_OP_NLL_LOSS, IR_DOM_GLOBAL, O(loss, IR_ACC_ALL), 0, O(z, IR_ACC_ALL), O(lab, IR_ACC_ALL));
    S1(p, IR_OP_COPY, IR_DOM_GLOBAL, O(dl, IR_ACC_ALL), 0, Kc(2.0));
    irb_stmt(p, IR_OP_NLL_GRAD, IR_DOM_NODE, O(dz, IR_ACC_ROW), 1, 3, O(z, IR_ACC_ROW), O(lab, IR_ACC_ROW),
         O(dl, IR_ACC_ALL));
    rg_err err;
    assert_int_equal(ir_verify(p, &err), 0);
    ref_exec *x = run_prog(p, g, 2);
    const double *vz = ref_values(x, z), *vl = ref_values(x, lab), *vd = ref_values(x, dz);
    int N = g->num_nodes;
    double want = 0;
    int seen[3] = {0};
    for (int n = 0; n < N; n++) {
        int c = (int)vl[n];
        assert_true(c >= 0 && c < 3 && vl[n] == c);
        seen[c]++;
        double s = exp(vz[n * 3]) + exp(vz[n * 3 + 1]) + exp(vz[n * 3 + 2]);
        want -= (vz[n * 3 + c] - log(s)) / N;
        for (int j = 0; j < 3; j++)
            assert_float_equal(vd[n * 3 + j], (exp(vz[n * 3 + j]) / s - (j == c)) * 2.0 / N, 1e-14);
    }
    assert_float_equal(ref_loss(x), want, 1e-14);
    ref_free(x);
    ir_free(p);
    hg_free(g);
}

/* Thread counts only reorder float sums; layouts only change addressing. */
static void test_threads_agree_on_a_synth_graph(void **state)
{
    (void)state;
    rg_err err;
    hg_graph *g = synth_generate("nodes=3000,edges=40000,ntypes=3,etypes=6,ratio=0.2,seed=3", &err);
    if (!g) fail_msg("synth: %s", err.msg);
    ir_program *p = irb_new_prog("thr");
    int h = irb_node_var(p, "h", 1, 4, IR_ROLE_INPUT, 0);
    int W = weight_var(p, "W", IR_WIDX_ETYPE, 1, 4, 3, IR_ROLE_PARAM);
    int hs = edge_var(p, "hs", 1, 3, 0, IR_ROLE_TEMP, 0);
    int out = irb_node_var(p, "out", 1, 3, IR_ROLE_OUTPUT, 1);
    int dW = weight_var(p, "dW", IR_WIDX_ETYPE, 1, 4, 3, IR_ROLE_TEMP);
    p->vars[dW].zero_init = 1;
    p->output = out;
    S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(hs, IR_ACC_ROW), 0, O(h, IR_ACC_SRC), O(W, IR_ACC_ETYPE));
    S1(p, IR_OP_EXP, IR_DOM_EDGE, O(out, IR_ACC_DST), 1, O(hs, IR_ACC_ROW));
    S2(p, IR_OP_WGRAD, IR_DOM_EDGE, O(dW, IR_ACC_ETYPE), 1, O(h, IR_ACC_DST), O(hs, IR_ACC_ROW));
    ref_exec *x1 = run_prog(p, g, 1), *x3 = run_prog(p, g, 3);
    assert_true(xv_rel_l2(ref_values(x1, out), ref_values(x3, out), ref_count(x1, out)) < 1e-14);
    assert_true(xv_rel_l2(ref_values(x1, dW), ref_values(x3, dW), ref_count(x1, dW)) < 1e-14);
    assert_int_equal(ref_nthreads(x3), 3);
    ref_free(x1);
    ref_free(x3);
    ir_free(p);
    hg_free(g);
}

/* An output row nothing writes stays NaN (the comparisons are tested in test_validate.c). */
static void test_unwritten_rows_are_poisoned(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    ir_program *p = irb_new_prog("poison");
    int h = irb_node_var(p, "h", 1, 2, IR_ROLE_INPUT, 0);
    int t = irb_node_var(p, "t", 1, 2, IR_ROLE_TEMP, 0);
    int out = irb_node_var(p, "out", 1, 2, IR_ROLE_OUTPUT, 0);
    p->output = out;
    S1(p, IR_OP_COPY, IR_DOM_NODE, O(out, IR_ACC_ROW), 0, O(t, IR_ACC_ROW));   /* t never written */
    (void)h;
    ref_exec *xp = run_prog(p, g, 1);
    assert_true(isnan(ref_values(xp, out)[0]));
    assert_true(isnan(xv_rel_l2(ref_values(xp, h), ref_values(xp, out), ref_count(xp, out))));
    ref_free(xp);
    ir_free(p);
    hg_free(g);
}

static void expect_ref_error(ir_program *p, const hg_graph *g, const char *needle)
{
    rg_err err = {0};
    ref_exec *x = ref_new(p, g, NULL, &err);
    if (x) fail_msg("expected an error containing '%s'", needle);
    if (!strstr(err.msg, needle)) fail_msg("error '%s' lacks '%s'", err.msg, needle);
}

static void test_errors(void **state)
{
    (void)state;
    hg_graph *g = irb_small_graph();
    ir_program *p = irb_new_prog("bad");
    int h = irb_node_var(p, "h", 1, 4, IR_ROLE_INPUT, 0);
    int W = weight_var(p, "W", IR_WIDX_ETYPE, 1, 5, 3, IR_ROLE_PARAM);
    int hs = edge_var(p, "hs", 1, 3, 0, IR_ROLE_TEMP, 0);
    p->output = hs;
    S2(p, IR_OP_LINEAR, IR_DOM_EDGE, O(hs, IR_ACC_ROW), 0, O(h, IR_ACC_SRC), O(W, IR_ACC_ETYPE));
    expect_ref_error(p, g, "linear 4 -> 3");
    p->stmts[0].in[1].acc = IR_ACC_NTYPE;
    expect_ref_error(p, g, "cannot access 'W' with NTYPE");
    p->stmts[0] = p->stmts[0];
    p->stmts[0].op = IR_OP_ADD;
    p->stmts[0].in[1] = O(h, IR_ACC_DST);
    p->stmts[0].out = O(h, IR_ACC_SRC);   /* aggregation written with = */
    expect_ref_error(p, g, "needs +=");
    ir_free(p);

    p = irb_new_prog("graphvar");
    int deg = irb_node_var(p, "degree", 1, 1, IR_ROLE_GRAPH, 0);
    int o = irb_node_var(p, "o", 1, 1, IR_ROLE_OUTPUT, 0);
    p->output = o;
    S1(p, IR_OP_COPY, IR_DOM_NODE, O(o, IR_ACC_ROW), 0, O(deg, IR_ACC_ROW));
    expect_ref_error(p, g, "unknown graph-derived input 'degree'");
    ir_free(p);
    hg_free(g);
}

/* ------------------------------------------------------------------ models and passes */

#define MODELS tu_models

static ir_program *load_model(const char *model, const ir_dims *d, const char *task, int reorder, int compact,
                              const rr_stats *st)
{
    rg_err err;
    model_options o = {.task = task, .reorder = reorder, .compact = compact, .stats = st};
    ir_program *p = model_load_opts(model, d, &o, &err);
    if (!p) fail_msg("%s (reorder %d, compact %d): %s", model, reorder, compact, err.msg);
    return p;
}

/* For each model, the forward output under reorder, compact and both equals the output
 * of the program without passes (relative L2 < 1e-10). Returns how many programs had a
 * weight product (reordering applied). */
static int check_passes_keep_outputs(const hg_graph *g, const char *name, const ir_dims *d)
{
    rr_stats st;
    rr_stats_from_graph(&st, g, name);
    int reordered = 0;
    for (int m = 0; m < tu_nmodels; m++) {
        ir_dims md = tu_model_dims(MODELS[m], d);
        ir_program *base = load_model(MODELS[m], &md, "infer", 0, 0, &st);
        ref_exec *xb = run_prog(base, g, 0);
        const double *want = ref_values(xb, base->output);
        int64_t n = ref_count(xb, base->output);
        for (int cfg = 1; cfg < 4; cfg++) {
            ir_program *p = load_model(MODELS[m], &md, "infer", cfg & 1, cfg >> 1, &st);
            for (int i = 0; i < p->nstmts; i++) reordered += p->stmts[i].op == IR_OP_WEIGHT_MM;
            ref_exec *x = run_prog(p, g, 0);
            assert_int_equal(ref_count(x, p->output), n);
            double rel = xv_rel_l2(want, ref_values(x, p->output), n);
            if (!(rel < 1e-10))
                fail_msg("%s on %s, reorder %d compact %d: output differs by %.3g", MODELS[m], name, cfg & 1,
                         cfg >> 1, rel);
            ref_free(x);
            ir_free(p);
        }
        ref_free(xb);
        ir_free(base);
    }
    return reordered;
}

static void test_passes_on_aifb(void **state)
{
    (void)state;
    TU_REQUIRE_DATASET(dir, "aifb");
    rg_err err;
    hg_graph *g = rdf_load_aifb(dir, "aifb", &err);
    if (!g) fail_msg("aifb: %s", err.msg);
    ir_dims d = {16, 16, 1};
    assert_true(check_passes_keep_outputs(g, "aifb", &d) > 0);
    hg_free(g);
    free(dir);
}

static void test_passes_on_fb15k237(void **state)
{
    (void)state;
    TU_REQUIRE_DATASET(dir, "fb15k237");
    rg_err err;
    hg_graph *g = kg_load_openke(dir, "fb15k237", &err);
    if (!g) fail_msg("fb15k237: %s", err.msg);
    ir_dims d = {8, 8, 2};
    check_passes_keep_outputs(g, "fb15k237", &d);
    hg_free(g);
    free(dir);
}

static void test_passes_on_synth(void **state)
{
    (void)state;
    rg_err err;
    hg_graph *g = synth_generate("nodes=2000,edges=30000,ntypes=3,etypes=8,ratio=0.25,seed=9", &err);
    if (!g) fail_msg("synth: %s", err.msg);
    ir_dims d1 = {12, 8, 1}, d2 = {12, 8, 4};
    assert_true(check_passes_keep_outputs(g, "synth", &d1) > 0);
    check_passes_keep_outputs(g, "synth", &d2);
    hg_free(g);
}

/* ------------------------------------------------------------------ benchmark */

/* `test_ref --bench-ref [fb15k237 dir] [dims] [reps]`: RGAT forward + backward on
 * fb15k237 (no passes and reorder+compact), for docs/perf-notes.md. Not a timed test. */
static int bench_ref(int argc, char **argv)
{
    const char *dir = argc > 2 ? argv[2] : "../shared/datasets/fb15k237";
    int dim = argc > 3 ? atoi(argv[3]) : 64, reps = argc > 4 ? atoi(argv[4]) : 3;
    rg_err err;
    double t0 = rg_now();
    hg_graph *g = kg_load_openke(dir, "fb15k237", &err);
    if (!g) {
        fprintf(stderr, "bench-ref: %s\n", err.msg);
        return 1;
    }
    printf("fb15k237: %d nodes, %d edges, %d unique (src, etype), loaded in %.2f s\n", g->num_nodes,
           g->num_edges, g->num_unique, rg_now() - t0);
    ir_dims d = {dim, dim, 1};
    for (int cfg = 0; cfg < 4; cfg += 3) {
        model_options o = {.task = "train", .reorder = cfg & 1, .compact = cfg >> 1};
        ir_program *p = model_load_opts("rgat", &d, &o, &err);
        if (!p) {
            fprintf(stderr, "bench-ref: %s\n", err.msg);
            return 1;
        }
        double t_new = rg_now();
        ref_exec *x = ref_new(p, g, NULL, &err);
        if (!x) {
            fprintf(stderr, "bench-ref: %s\n", err.msg);
            return 1;
        }
        t_new = rg_now() - t_new;
        double best_f = 1e30, best_b = 1e30;
        for (int r = 0; r < reps; r++) {
            double a = rg_now();
            if (ref_run_forward(x, &err) < 0 || (best_f = fmin(best_f, rg_now() - a), 0)) break;
            a = rg_now();
            if (ref_run_range(x, p->nforward, p->nstmts, &err) < 0) break;
            best_b = fmin(best_b, rg_now() - a);
        }
        printf("rgat train dims %d %-16s threads %d: forward %.3f s, backward %.3f s, total %.3f s "
               "(best of %d; setup %.2f s), loss %.6f, peak RSS %ld MB\n", dim, cfg ? "reorder+compact" : "no passes",
               ref_nthreads(x), best_f, best_b, best_f + best_b, reps, t_new, ref_loss(x), rg_peak_rss_kb() / 1024);
        ref_free(x);
        ir_free(p);
    }
    hg_free(g);
    return 0;
}

static double cpu_seconds(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_sec +
           1e-6 * (double)u.ru_stime.tv_usec;
}

/* `test_ref --bench-sweep-ref MODEL DATASET TASK DIMS [HEADS] [DATA_DIR]`: the reference a sweep
 * builds once per problem (xv_reference_new: forward, backward and any near-kink
 * alternatives), with wall and process CPU time: on a loaded machine the CPU time is the
 * steadier of the two. Not a timed test. */
static int bench_sweep_ref(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: test_ref --bench-sweep-ref MODEL DATASET TASK DIMS [HEADS] [DATA_DIR]\n");
        return 2;
    }
    int dim = atoi(argv[5]), heads = argc > 6 ? atoi(argv[6]) : 1;
    ds_options dso = {.data_dir = argc > 7 ? argv[7] : "../shared/datasets"};
    rg_err err;
    hg_graph *g = ds_open(argv[3], &dso, &err);
    if (!g) {
        fprintf(stderr, "bench-sweep-ref: %s\n", err.msg);
        return 1;
    }
    pl_problem pp = {.model = argv[2], .task = argv[4], .dims = {dim, dim, heads}};
    double w0 = rg_now(), c0 = cpu_seconds();
    xv_reference *r = xv_reference_new(&pp, g, &err);
    if (!r) {
        fprintf(stderr, "bench-sweep-ref: %s\n", err.msg);
        return 1;
    }
    printf("%s %s on %s dims %d heads %d, %d threads: %.2f s wall, %.2f s CPU, peak RSS %ld MB\n", argv[2],
           argv[4], argv[3], dim, heads, ref_nthreads(xv_reference_exec(r)), rg_now() - w0, cpu_seconds() - c0,
           rg_peak_rss_kb() / 1024);
    xv_reference_free(r);
    hg_free(g);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--bench-ref")) return bench_ref(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "--bench-sweep-ref")) return bench_sweep_ref(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_compact_and_aggregation),
        cmocka_unit_test(test_edge_softmax_attention),
        cmocka_unit_test(test_heads_broadcast_and_sums),
        cmocka_unit_test(test_gradient_statements),
        cmocka_unit_test(test_dense_kernels_against_naive),
        cmocka_unit_test(test_products_at_model_sizes),
        cmocka_unit_test(test_weight_products),
        cmocka_unit_test(test_nll),
        cmocka_unit_test(test_threads_agree_on_a_synth_graph),
        cmocka_unit_test(test_unwritten_rows_are_poisoned),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_passes_on_aifb),
        cmocka_unit_test(test_passes_on_fb15k237),
        cmocka_unit_test(test_passes_on_synth),
    };
    return cmocka_run_group_tests_name("ref", tests, NULL, NULL);
}
