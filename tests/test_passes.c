/* Tests of the IR core and the passes: reordering decisions and rewrites, compaction
 * marks, loop fusion and lowering (GEMM/traversal instances, legal order), verify after each. */
#include "tests/testutil.h"
#include "codegen/lower.h"
#include "codegen/model.h"
#include "codegen/parse.h"
#include "codegen/pass_compact.h"
#include "codegen/pass_fuse.h"
#include "codegen/pass_reorder.h"

#include <stdlib.h>
#include <string.h>

static ir_program *load(const char *model, int in, int out, int heads)
{
    ir_dims d = {in, out, heads};
    rg_err err;
    ir_program *p = model_load(model, &d, "infer", &err);
    if (!p) fail_msg("%s: %s", model, err.msg);
    return p;
}

static ir_program *load_text(const char *text)
{
    ir_dims d = {16, 16, 1};
    rg_err err;
    ir_program *p = ps_load_string("t.rgnn", text, &d, &err);
    if (!p) fail_msg("%s", err.msg);
    return p;
}

static int var(const ir_program *p, const char *name)
{
    int v = ir_find_var(p, name);
    if (v < 0) fail_msg("%s has no variable %s", p->name, name);
    return v;
}

static void verified(const ir_program *p)
{
    rg_err err;
    if (ir_verify(p, &err) < 0) fail_msg("%s", err.msg);
}

static int writer_of(const ir_program *p, int v)
{
    for (int i = 0; i < p->nstmts; i++)
        if (p->stmts[i].out.var == v) return i;
    return -1;
}

/* ------------------------------------------------------------------ IR core */

static int add(ir_program *p, const char *name, ir_var_kind k, ir_role r, ir_widx w, int heads, int rows, int dim)
{
    ir_var v;
    memset(&v, 0, sizeof v);
    snprintf(v.name, sizeof v.name, "%s", name);
    v.kind = k;
    v.layout = k == IR_VAR_NODE ? IR_LAYOUT_NODE : k == IR_VAR_EDGE ? IR_LAYOUT_VANILLA : IR_LAYOUT_WEIGHT;
    v.role = r;
    v.widx = w;
    v.heads = heads;
    v.rows_dim = rows;
    v.dim = dim;
    v.grad_of = v.grad = -1;
    return ir_add_var(p, &v);
}

static ir_stmt stmt2(ir_opkind op, ir_domain dom, ir_operand out, ir_operand a, ir_operand b)
{
    ir_stmt s;
    memset(&s, 0, sizeof s);
    s.op = op;
    s.dom = dom;
    s.out = out;
    s.nin = 2;
    s.in[0] = a;
    s.in[1] = b;
    return s;
}

static void test_ir_core(void **state)
{
    (void)state;
    ir_dims d = {8, 4, 1};
    ir_program *p = ir_new("core", &d);
    int x = add(p, "x", IR_VAR_NODE, IR_ROLE_INPUT, IR_WIDX_NONE, 1, 0, 8);
    int w = add(p, "W", IR_VAR_WEIGHT, IR_ROLE_PARAM, IR_WIDX_ETYPE, 1, 8, 4);
    int t = add(p, "t", IR_VAR_EDGE, IR_ROLE_TEMP, IR_WIDX_NONE, 1, 0, 4);
    int u = add(p, "unused", IR_VAR_EDGE, IR_ROLE_TEMP, IR_WIDX_NONE, 1, 0, 4);
    int h = add(p, "h", IR_VAR_NODE, IR_ROLE_OUTPUT, IR_WIDX_NONE, 1, 0, 4);
    p->vars[h].zero_init = 1;
    p->output = h;
    ir_stmt lin = stmt2(IR_OP_LINEAR, IR_DOM_EDGE, (ir_operand){t, IR_ACC_ROW, 0}, (ir_operand){x, IR_ACC_SRC, 0},
                        (ir_operand){w, IR_ACC_ETYPE, 0});
    ir_add_stmt(p, &lin);
    ir_stmt agg = lin;
    agg.op = IR_OP_COPY;
    agg.nin = 1;
    agg.in[0] = (ir_operand){t, IR_ACC_ROW, 0};
    agg.out = (ir_operand){h, IR_ACC_DST, 0};
    agg.accumulate = 1;
    ir_add_stmt(p, &agg);
    ir_stmt dead = lin;
    dead.out.var = u;
    ir_insert_stmt(p, 1, &dead);
    assert_int_equal(p->nforward, 3);
    verified(p);
    /* verify catches a non-aggregating write to e.dst, a bad width and a read before write */
    ir_program *c = ir_clone(p);
    c->stmts[2].accumulate = 0;
    rg_err err;
    assert_int_equal(ir_verify(c, &err), -1);
    assert_non_null(strstr(err.msg, "needs +="));
    c->stmts[2].accumulate = 1;
    c->vars[x].dim = 7;
    assert_int_equal(ir_verify(c, &err), -1);
    assert_non_null(strstr(err.msg, "linear input is 7 wide"));
    c->vars[x].dim = 8;
    ir_stmt first = c->stmts[2];
    ir_remove_stmt(c, 2);
    ir_insert_stmt(c, 0, &first);
    assert_int_equal(ir_verify(c, &err), -1);
    assert_non_null(strstr(err.msg, "before anything writes it"));
    ir_free(c);
    /* the clone was independent; dead-code removal drops the statement and remaps ids */
    verified(p);
    assert_int_equal(ir_remove_dead(p), 2);   /* one statement, one variable */
    assert_int_equal(p->nstmts, 2);
    assert_int_equal(p->nvars, 4);
    assert_int_equal(p->output, ir_find_var(p, "h"));
    assert_int_equal(ir_find_var(p, "unused"), -1);
    verified(p);
    /* rows by layout */
    p->vars[ir_find_var(p, "t")].layout = IR_LAYOUT_COMPACT;
    assert_int_equal(ir_var_rows(&p->vars[ir_find_var(p, "t")], 10, 20, 7, 2, 3), 7);
    assert_int_equal(ir_var_rows(&p->vars[ir_find_var(p, "W")], 10, 20, 7, 2, 3), 3);
    assert_int_equal(ir_var_row_width(&p->vars[ir_find_var(p, "W")]), 32);
    ir_free(p);
}

/* ------------------------------------------------------------------ reorder */

static char *log_buf;
static size_t log_len;

static FILE *open_log(void)
{
    free(log_buf);
    log_buf = NULL;
    log_len = 0;
    FILE *f = open_memstream(&log_buf, &log_len);
    assert_non_null(f);
    return f;
}

static void test_reorder_rgat(void **state)
{
    (void)state;
    ir_program *p = load("rgat", 64, 64, 1);
    FILE *log = open_log();
    rr_options o = {.stats = NULL, .assume_compact = 0, .log = log};
    rg_err err;
    assert_int_equal(rr_reorder(p, &o, &err), 1);
    fclose(log);
    verified(p);
    /* attt = dot(e.dst.feature, (W w_t)[e.etype]): the ht GEMM is gone */
    assert_int_equal(ir_find_var(p, "ht"), -1);
    int prod = var(p, "W_w_t");
    const ir_stmt *mm = &p->stmts[writer_of(p, prod)];
    assert_int_equal(mm->op, IR_OP_WEIGHT_MM);
    assert_int_equal(mm->dom, IR_DOM_TYPE);
    assert_int_equal(p->vars[prod].rows_dim, 0);   /* a weight vector per relation */
    const ir_stmt *dot = &p->stmts[writer_of(p, var(p, "attt"))];
    assert_int_equal(dot->op, IR_OP_DOT);
    assert_int_equal(dot->in[0].acc, IR_ACC_DST);
    assert_int_equal(dot->in[1].var, prod);
    /* atts keeps its dot: hs stays for the message, so no multiply-adds are saved */
    assert_int_equal(p->stmts[writer_of(p, var(p, "atts"))].in[0].var, var(p, "hs"));
    assert_non_null(strstr(log_buf, "-> applied"));
    assert_non_null(strstr(log_buf, "-> not applied"));
    assert_non_null(strstr(log_buf, "before:"));
    ir_free(p);
}

static void test_reorder_hgt(void **state)
{
    (void)state;
    rg_err err;
    /* one head, aifb's counts: (WK Wa) and (WV Wm) per relation save multiply-adds */
    ir_program *p = load("hgt", 64, 64, 1);
    assert_int_equal(rr_reorder(p, NULL, &err), 2);
    verified(p);
    int wka = var(p, "WK_Wa");
    const ir_stmt *mm = &p->stmts[writer_of(p, wka)];
    assert_int_equal(mm->in[0].acc, IR_ACC_SRC_NTYPE);
    assert_int_equal(ir_find_var(p, "k"), -1);
    assert_int_equal(ir_find_var(p, "v"), -1);
    const ir_stmt *katt = &p->stmts[writer_of(p, var(p, "katt"))];
    assert_int_equal(katt->in[0].acc, IR_ACC_SRC);
    assert_int_equal(katt->in[1].var, wka);
    ir_free(p);
    /* fb15k237's counts (474 relations on 14,541 nodes): the product costs more */
    rr_stats fb = {14541, 620232, 161922, 1, 474, 0, "fb15k237"};
    rr_options o = {.stats = &fb};
    p = load("hgt", 64, 64, 1);
    assert_int_equal(rr_reorder(p, &o, &err), 0);
    var(p, "k");
    ir_free(p);
    /* four heads: the rewritten edge linear is 4x wider, so it is not applied either */
    p = load("hgt", 64, 64, 4);
    assert_int_equal(rr_reorder(p, NULL, &err), 0);
    ir_free(p);
}

static void test_reorder_needs_forward_only(void **state)
{
    (void)state;
    ir_program *p = load("rgat", 16, 16, 1);
    ir_stmt s = p->stmts[0];
    s.backward = 1;
    ir_add_stmt(p, &s);
    rg_err err;
    assert_int_equal(rr_reorder(p, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "before autodiff"));
    assert_int_equal(pc_compact(p, NULL, &err), -1);
    ir_free(p);
}

/* ------------------------------------------------------------------ compact */

static int layout(const ir_program *p, const char *name) { return p->vars[var(p, name)].layout; }

static void test_compact_rgat_hgt(void **state)
{
    (void)state;
    rg_err err;
    ir_program *p = load("rgat", 64, 64, 2);
    assert_int_equal(pc_compact(p, NULL, &err), 2);
    verified(p);
    assert_int_equal(layout(p, "hs"), IR_LAYOUT_COMPACT);    /* the message */
    assert_int_equal(layout(p, "atts"), IR_LAYOUT_COMPACT);  /* transitively */
    assert_int_equal(layout(p, "ht"), IR_LAYOUT_VANILLA);    /* depends on (dst, etype) */
    assert_int_equal(layout(p, "att"), IR_LAYOUT_VANILLA);
    assert_true(ir_stmt_per_unique(p, &p->stmts[writer_of(p, var(p, "hs"))]));
    ir_free(p);
    p = load("hgt", 64, 64, 2);
    assert_int_equal(pc_compact(p, NULL, &err), 2);
    verified(p);
    assert_int_equal(layout(p, "msg"), IR_LAYOUT_COMPACT);
    assert_int_equal(layout(p, "katt"), IR_LAYOUT_COMPACT);
    assert_int_equal(layout(p, "att"), IR_LAYOUT_VANILLA);
    ir_free(p);
    p = load("rgcn", 16, 16, 1);   /* the typed linear (not e.norm * it, which reads dst) */
    FILE *log = open_log();
    assert_int_equal(pc_compact(p, log, &err), 1);
    fclose(log);
    assert_non_null(strstr(log_buf, "_t1"));
    ir_free(p);
}

/* cdot=edge: compaction without its dot products leaves RGAT's atts per edge (the message stays
 * compact) and counts it; HGT's and RGCN's compact values are linears, so nothing is left. */
static void test_compact_dots_per_edge(void **state)
{
    (void)state;
    rg_err err;
    int kept = -1;
    ir_program *p = load("rgat", 64, 64, 2);
    FILE *log = open_log();
    assert_int_equal(pc_compact_opts(p, 0, &kept, log, &err), 1);
    fclose(log);
    verified(p);
    assert_int_equal(kept, 1);
    assert_int_equal(layout(p, "hs"), IR_LAYOUT_COMPACT);
    assert_int_equal(layout(p, "atts"), IR_LAYOUT_VANILLA);
    assert_non_null(strstr(log_buf, "atts left per edge (cdot=edge)"));
    ir_free(p);
    static const char *const others[] = {"hgt", "rgcn"};
    for (int i = 0; i < 2; i++) {
        p = load(others[i], 64, 64, 1);
        int before = pc_compact_opts(p, 0, &kept, NULL, &err);
        assert_true(before >= 1);
        assert_int_equal(kept, 0);
        ir_free(p);
    }
}

static void test_compact_keeps_summed_rows(void **state)
{
    (void)state;
    const char *head = "input feature: (IN)\nweight W[etype]: (IN, OUT)\noutput n[\"y\"]\n"
                       "for e in g.edges():\n    e[\"m\"] = linear(e.src.feature, W[e.etype])\n";
    rg_err err;
    /* e.src["y"] += m sums over edges; compact m would make it sum over unique pairs */
    char *text = rg_xasprintf("%s    e.src[\"y\"] += e[\"m\"]\n", head);
    ir_program *p = load_text(text);
    assert_int_equal(pc_compact(p, NULL, &err), 0);
    assert_int_equal(layout(p, "m"), IR_LAYOUT_VANILLA);
    ir_free(p);
    free(text);
    text = rg_xasprintf("%s    e.dst[\"y\"] += e[\"m\"]\n", head);
    p = load_text(text);
    assert_int_equal(pc_compact(p, NULL, &err), 1);
    assert_int_equal(layout(p, "m"), IR_LAYOUT_COMPACT);
    verified(p);
    ir_free(p);
    free(text);
}

/* ------------------------------------------------------------------ lowering */

/* Flattened position of every statement in the lowered order; the statement a GEMM
 * absorbed (its scalar multiply) sits right after the GEMM's own. */
static void positions(const ir_program *p, const lw_program *lp, int *pos)
{
    for (int i = 0; i < p->nstmts; i++) pos[i] = -1;
    for (int k = 0; k < lp->ninst; k++) {
        const lw_instance *in = &lp->inst[k];
        if (in->kind == LW_GEMM) {
            const lw_gemm *g = &in->u.gemm;
            assert_int_equal(pos[g->stmt], -1);
            pos[g->stmt] = k * 1000;
            int t = p->stmts[g->stmt].out.var;
            if (!g->outer_product && g->y_var != t)
                for (int i = 0; i < p->nstmts; i++)
                    if (i != g->stmt && ir_stmt_reads(&p->stmts[i], t)) {
                        assert_int_equal(pos[i], -1);
                        pos[i] = k * 1000 + 1;
                    }
        } else if (in->kind == LW_FALLBACK) {
            assert_int_equal(pos[in->u.fallback_stmt], -1);
            pos[in->u.fallback_stmt] = k * 1000;
        } else {
            for (int j = 0; j < in->u.trav.nstmts; j++) {
                int s = in->u.trav.stmts[j].stmt;
                assert_int_equal(pos[s], -1);
                pos[s] = k * 1000 + j;
            }
        }
    }
}

/* Every statement lowered once, in an order that keeps every dependence. */
static void assert_legal(const ir_program *p, const lw_program *lp)
{
    int *pos = malloc(((size_t)p->nstmts + 1) * sizeof *pos);
    positions(p, lp, pos);
    for (int i = 0; i < p->nstmts; i++) {
        if (pos[i] < 0) fail_msg("%s: statement %d was not lowered", p->name, i);
        for (int j = i + 1; j < p->nstmts; j++)
            if (pf_depends(&p->stmts[i], &p->stmts[j]) && pos[i] >= pos[j])
                fail_msg("%s: statement %d depends on %d but runs first", p->name, j, i);
    }
    free(pos);
}

static lw_program *lower(const ir_program *p, int fuse)
{
    rg_err err;
    lw_options o = {.fuse = fuse};
    lw_program *lp = lw_lower_opts(p, &o, &err);
    if (!lp) fail_msg("%s", err.msg);
    assert_legal(p, lp);
    return lp;
}

static int count_kind(const lw_program *lp, lw_kind k)
{
    int n = 0;
    for (int i = 0; i < lp->ninst; i++) n += lp->inst[i].kind == k;
    return n;
}

static void test_lower_rgcn(void **state)
{
    (void)state;
    ir_program *p = load("rgcn", 64, 64, 1);
    lw_program *lp = lower(p, 1);
    assert_int_equal(lp->ninst, 2);
    assert_int_equal(count_kind(lp, LW_GEMM), 2);
    const lw_gemm *self = &lp->inst[0].u.gemm, *msg = &lp->inst[1].u.gemm;
    assert_int_equal(self->rows, LW_ROWS_NODES);
    assert_int_equal(self->w_acc, IR_ACC_ALL);
    /* e.dst["h"] += e.norm * linear(...): one GEMM, per-row scalar norm, atomic scatter to dst */
    assert_int_equal(msg->rows, LW_ROWS_EDGES);
    assert_int_equal(msg->scalar_var, var(p, "norm"));
    assert_int_equal(msg->x_idx, LW_IDX_SRC);
    assert_int_equal(msg->y_idx, LW_IDX_DST);
    assert_true(msg->y_atomic && msg->accumulate);
    assert_int_equal(msg->y_var, p->output);
    assert_int_equal(msg->w_acc, IR_ACC_ETYPE);
    assert_int_equal(lp->materialized[var(p, "_t1")], 0);
    assert_int_equal(lp->materialized[p->output], 1);
    lw_free(lp);
    ir_free(p);
}

static void test_lower_rgat(void **state)
{
    (void)state;
    ir_program *p = load("rgat", 64, 64, 1);
    lw_program *lp = lower(p, 1);
    /* two GEMMs (hs, ht) first, then one traversal: dots, leakyrelu, softmax, aggregation */
    assert_int_equal(lp->ninst, 3);
    assert_int_equal(lp->inst[0].kind, LW_GEMM);
    assert_int_equal(lp->inst[1].kind, LW_GEMM);
    assert_int_equal(lp->inst[1].u.gemm.x_idx, LW_IDX_DST);
    const lw_trav *tr = &lp->inst[2].u.trav;
    assert_int_equal(lp->inst[2].kind, LW_TRAV);
    assert_int_equal(tr->nstmts, 8);
    assert_true(tr->has_dst_aggregation);
    assert_int_equal(tr->dom, IR_DOM_EDGE);
    assert_int_equal(tr->stmts[tr->nstmts - 1].level, LW_LEVEL_FEAT);
    assert_int_equal(tr->stmts[0].level, LW_LEVEL_OUTER);
    assert_int_equal(lp->materialized[var(p, "att")], 0);      /* fused temporary */
    assert_int_equal(lp->materialized[var(p, "att_sum")], 1);  /* per-dst sum */
    assert_int_equal(lp->materialized[var(p, "hs")], 1);       /* a GEMM's output */
    lw_free(lp);
    /* without fusion every traversal statement is its own instance */
    lp = lower(p, 0);
    assert_int_equal(count_kind(lp, LW_TRAV), 8);
    assert_int_equal(count_kind(lp, LW_GEMM), 2);
    lw_free(lp);
    /* multi-head: the per-head attention scales the per-head message GEMM in HGT */
    ir_free(p);
    p = load("hgt", 64, 64, 4);
    lp = lower(p, 1);
    const lw_gemm *last = &lp->inst[lp->ninst - 1].u.gemm;
    assert_int_equal(lp->inst[lp->ninst - 1].kind, LW_GEMM);
    assert_int_equal(last->scalar_var, var(p, "att_3"));
    assert_int_equal(last->heads, 4);
    assert_int_equal(last->y_idx, LW_IDX_DST);
    lw_free(lp);
    ir_free(p);
}

static void test_lower_rgat_reorder_compact(void **state)
{
    (void)state;
    ir_program *p = load("rgat", 64, 64, 1);
    rg_err err;
    assert_int_equal(rr_reorder(p, NULL, &err), 1);
    verified(p);
    assert_int_equal(pc_compact(p, NULL, &err), 2);
    verified(p);
    lw_program *lp = lower(p, 1);
    assert_int_equal(count_kind(lp, LW_FALLBACK), 1);   /* the weight-vector product */
    assert_int_equal(lp->inst[0].kind, LW_FALLBACK);
    int unique_gemm = 0, compact_trav = 0, edge_trav = 0;
    for (int i = 0; i < lp->ninst; i++) {
        const lw_instance *in = &lp->inst[i];
        if (in->kind == LW_GEMM && in->u.gemm.rows == LW_ROWS_UNIQUE) unique_gemm++;
        if (in->kind == LW_TRAV && in->u.trav.compact_rows) compact_trav++;
        if (in->kind == LW_TRAV && !in->u.trav.compact_rows) {
            edge_trav++;
            assert_true(in->u.trav.has_dst_aggregation);
        }
    }
    assert_int_equal(unique_gemm, 1);
    assert_int_equal(compact_trav, 1);
    assert_int_equal(edge_trav, 1);
    lw_free(lp);
    ir_free(p);
}

/* All models x passes x tasks: every pass keeps the IR valid; lowering is legal. */
static void test_all_configs_verify_and_lower(void **state)
{
    (void)state;
    const char *const *models = tu_models;
    const char *tasks[] = {"infer", "train"};
    for (int m = 0; m < tu_nmodels; m++)
        for (int cfgi = 0; cfgi < 4; cfgi++)
            for (int t = 0; t < 2; t++) {
                ir_dims d = {32, 32, strstr(models[m], "rgcn") ? 1 : 2};
                model_options o = {.task = tasks[t], .reorder = cfgi & 1, .compact = (cfgi >> 1) & 1};
                rg_err err;
                ir_program *p = model_load_opts(models[m], &d, &o, &err);
                if (!p) fail_msg("%s %d %s: %s", models[m], cfgi, tasks[t], err.msg);
                verified(p);
                for (int fuse = 0; fuse < 2; fuse++) {
                    lw_program *lp = lower(p, fuse);
                    for (int i = 0; i < lp->ninst; i++)
                        if (lp->inst[i].kind == LW_GEMM)
                            assert_true(lp->inst[i].u.gemm.K > 0 && lp->inst[i].u.gemm.N > 0);
                    lw_free(lp);
                }
                ir_free(p);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ir_core),
        cmocka_unit_test(test_reorder_rgat),
        cmocka_unit_test(test_reorder_hgt),
        cmocka_unit_test(test_reorder_needs_forward_only),
        cmocka_unit_test(test_compact_rgat_hgt),
        cmocka_unit_test(test_compact_dots_per_edge),
        cmocka_unit_test(test_compact_keeps_summed_rows),
        cmocka_unit_test(test_lower_rgcn),
        cmocka_unit_test(test_lower_rgat),
        cmocka_unit_test(test_lower_rgat_reorder_compact),
        cmocka_unit_test(test_all_configs_verify_and_lower),
    };
    int rc = cmocka_run_group_tests_name("passes", tests, NULL, NULL);
    free(log_buf);
    return rc;
}
