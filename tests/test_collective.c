/* Tests of the relation-partitioned layer's CPU side: the partitioner, the subgraphs, the
 * log-sum-exp merge, and the collective plan, run rank by rank on the float64 reference. */
#include "tests/testutil.h"
#include "tests/irbuild.h"
#include "codegen/collective.h"
#include "codegen/pipeline.h"
#include "codegen/ref.h"
#include "datasets/dataset.h"
#include "datasets/relpart.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static hg_graph *synth_graph(void)
{
    rg_err err;
    char *dir = tu_tmpdir();
    ds_options o = {.data_dir = dir, .cache_dir = dir};
    hg_graph *g = ds_open("synth:nodes=400,edges=3000,ntypes=3,etypes=7,ratio=0.6,seed=5", &o, &err);
    if (!g) fail_msg("synth: %s", err.msg);
    tu_rm_tree(dir);
    return g;
}

/* ---------------------------------------------------------------- partitioner */

static void test_partition_balances_and_covers(void **state)
{
    (void)state;
    hg_graph *g = synth_graph();
    int32_t *owner = rg_xmalloc((size_t)g->num_etypes * sizeof *owner);
    int32_t *itself = rg_xmalloc((size_t)g->num_etypes * sizeof *itself);
    double *weight = rg_xmalloc((size_t)g->num_etypes * sizeof *weight);
    for (int32_t r = 0; r < g->num_etypes; r++) itself[r] = r;
    for (int m = 0; m < RLP__COUNT; m++) {
        /* each relation on a rank of its own: the loads are the relations' weights */
        rlp_loads(g, itself, g->num_etypes, (rlp_method)m, weight);
        double heaviest = 0;
        for (int32_t r = 0; r < g->num_etypes; r++) heaviest = fmax(heaviest, weight[r]);
        for (int R = 1; R <= 4; R++) {
            rg_err err;
            assert_int_equal(rlp_partition(g, R, (rlp_method)m, owner, &err), 0);
            double load[4], total = 0, mx = 0;
            rlp_loads(g, owner, R, (rlp_method)m, load);
            for (int k = 0; k < R; k++) {
                assert_true(load[k] > 0);   /* every rank owns a relation with edges */
                total += load[k];
                if (load[k] > mx) mx = load[k];
            }
            /* LPT's bound: no rank exceeds the average by more than the heaviest relation */
            assert_true(mx <= total / R + (R > 1 ? heaviest : 0) + 1e-9);
        }
    }
    free(itself);
    free(weight);
    rg_err err;
    assert_int_not_equal(rlp_partition(g, g->num_etypes + 1, RLP_EDGES, owner, &err), 0);
    assert_non_null(strstr(err.msg, "fewer than"));
    rlp_method m;
    assert_int_not_equal(rlp_parse_method("bogus", &m, &err), 0);
    assert_int_equal(rlp_parse_method("edges", &m, &err), 0);
    assert_int_equal(m, RLP_EDGES);
    free(owner);
    hg_free(g);
}

static void test_subgraphs_split_the_edges(void **state)
{
    (void)state;
    hg_graph *g = synth_graph();
    int32_t owner[64];
    rg_err err;
    assert_int_equal(rlp_partition(g, 3, RLP_EDGES, owner, &err), 0);
    char *seen = rg_xcalloc((size_t)g->num_edges, 1);
    int64_t total = 0;
    for (int k = 0; k < 3; k++) {
        int32_t *orig;
        hg_graph *s = rlp_subgraph(g, owner, k, &orig, &err);
        assert_non_null(s);
        assert_int_equal(hg_validate(s, &err), 0);
        assert_int_equal(s->num_nodes, g->num_nodes);
        assert_int_equal(s->num_etypes, g->num_etypes);
        for (int32_t e = 0; e < s->num_edges; e++) {
            int32_t o = orig[e];
            assert_int_equal(owner[g->etype[o]], k);
            assert_int_equal(s->src[e], g->src[o]);
            assert_int_equal(s->dst[e], g->dst[o]);
            assert_int_equal(s->etype[e], g->etype[o]);
            assert_int_equal(seen[o], 0);
            seen[o] = 1;
        }
        total += s->num_edges;
        free(orig);
        hg_free(s);
    }
    assert_int_equal(total, g->num_edges);
    free(seen);
    hg_free(g);
}

/* ---------------------------------------------------------------- the merge */

static void test_lse_merge_equals_one_softmax(void **state)
{
    (void)state;
    /* 9 scores over 3 ranks (rank 2 empty), 2-wide values: merged == softmax over all nine */
    double a[9] = {3.0, -1.0, 40.0, 0.5, 2.0, 39.0, -7.0, 1.0, 38.5};
    double x[9][2];
    int rank_of[9] = {0, 0, 0, 1, 1, 1, 0, 1, 1};
    for (int i = 0; i < 9; i++) x[i][0] = i, x[i][1] = 1.0 / (i + 1);
    double m[3] = {-INFINITY, -INFINITY, 123.0}, s[3] = {0}, acc[3][2] = {{0}};
    for (int i = 0; i < 9; i++) m[rank_of[i]] = fmax(m[rank_of[i]], a[i]);
    for (int i = 0; i < 9; i++) {
        int k = rank_of[i];
        double p = exp(a[i] - m[k]);
        s[k] += p;
        acc[k][0] += p * x[i][0];
        acc[k][1] += p * x[i][1];
    }
    double mo, so, ao[2];
    col_merge_lse(3, m, s, &acc[0][0], 2, &mo, &so, ao);
    double mx = 40.0, z = 0, want[2] = {0, 0};
    for (int i = 0; i < 9; i++) z += exp(a[i] - mx);
    for (int i = 0; i < 9; i++)
        for (int j = 0; j < 2; j++) want[j] += exp(a[i] - mx) / z * x[i][j];
    assert_true(mo == mx);
    assert_true(fabs(so - z) < 1e-12 * z);
    for (int j = 0; j < 2; j++) assert_true(fabs(ao[j] / so - want[j]) < 1e-12);
    /* nothing anywhere: an empty destination */
    double s0[2] = {0, 0}, a0[2] = {0, 0}, m0[2] = {1, 2};
    col_merge_lse(2, m0, s0, a0, 1, &mo, &so, ao);
    assert_true(so == 0 && ao[0] == 0);
}

/* ---------------------------------------------------------------- plans */

typedef struct built {
    ir_program *ir;
    lw_program *lp;
    cg_variant v;
} built;

static int build(const char *model, const char *task, const char *cfgs, const hg_graph *g, built *b)
{
    rg_err err;
    cg_config cfg;
    cfg_default(&cfg);
    if (cfg_parse(&cfg, cfgs, &err)) fail_msg("%s: %s", cfgs, err.msg);
    pl_problem p = {model, task, {8, 8, 2}};
    int rc = pl_build(&p, &cfg, g, NULL, &b->ir, &b->lp, &err);
    if (rc == PL_INAPPLICABLE) return 1;
    if (rc) fail_msg("pl_build %s %s %s: %s", model, task, cfgs, err.msg);
    if (cg_build(b->ir, b->lp, &cfg, &b->v, &err)) fail_msg("cg_build %s: %s", cfgs, err.msg);
    return 0;
}

static void built_free(built *b)
{
    cg_variant_free(&b->v);
    lw_free(b->lp);
    ir_free(b->ir);
}

static double max_rel_diff(const double *want, const double *got, int64_t n)
{
    double scale = 0, d = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (int64_t i = 0; i < n; i++) d = fmax(d, fabs(want[i] - got[i]));
    return scale > 0 ? d / scale : d;
}

static void all_reduce(ref_exec **x, int R, int var)
{
    int64_t n = ref_count(x[0], var);
    double *sum = rg_xcalloc((size_t)n, sizeof *sum);
    for (int k = 0; k < R; k++) {
        const double *v = ref_values(x[k], var);
        for (int64_t i = 0; i < n; i++) sum[i] += v[i];
    }
    for (int k = 0; k < R; k++) memcpy(ref_values(x[k], var), sum, (size_t)n * sizeof *sum);
    free(sum);
}

static void run_partitioned(const built *b, const col_plan *cp, ref_exec **x, int R)
{
    rg_err err;
    int *stmts = rg_xmalloc((size_t)(b->ir->nstmts + 1) * sizeof *stmts);
    for (int k = 0; k < R; k++)
        if (ref_reset_all(x[k], &err)) fail_msg("reset: %s", err.msg);
    int nk = b->v.plan.nkernels, s = 0;
    for (int kern = 0; kern <= nk; kern++) {
        for (; s < cp->nsync && cp->sync[s].before == kern; s++) {
            int v = cp->sync[s].var;
            if (cp->sync[s].what == COL_ALLREDUCE) all_reduce(x, R, v);
            else
                for (int k = 1; k < R; k++) memset(ref_values(x[k], v), 0, (size_t)ref_count(x[k], v) * sizeof(double));
        }
        if (kern == nk) break;
        int n = col_kernel_stmts(b->ir, b->lp, b->v.materialized, &b->v.plan.kernels[kern], stmts);
        for (int i = 0; i < n; i++)
            for (int k = 0; k < R; k++)
                if (ref_run_stmt(x[k], stmts[i], &err)) fail_msg("stmt %d: %s", stmts[i], err.msg);
    }
    free(stmts);
}

/* The handed-over values of the partitioned run against the whole graph's run: clean ones
 * from rank 0, owned weight gradients slice by slice from each relation's owner. */
static double compare_handed_over(const built *b, const col_plan *cp, ref_exec *full, ref_exec **x,
                                  const int32_t *owner, int netypes, int *ncompared)
{
    const ir_program *ir = b->ir;
    double worst = 0;
    for (int v = 0; v < ir->nvars; v++) {
        int grad = ir->vars[v].grad_of >= 0 &&
                   (ir->vars[ir->vars[v].grad_of].role == IR_ROLE_PARAM ||
                    ir->vars[ir->vars[v].grad_of].role == IR_ROLE_INPUT);
        if (v != ir->output && v != ir->loss && !grad) continue;
        int64_t n = ref_count(full, v);
        double *got = rg_xmalloc((size_t)n * sizeof *got);
        if (cp->state[v] == COL_OWNED) {
            int64_t slice = n / netypes;
            for (int r = 0; r < netypes; r++)
                memcpy(got + r * slice, ref_values(x[owner[r]], v) + r * slice, (size_t)slice * sizeof *got);
        } else {
            assert_int_equal(cp->state[v], COL_CLEAN);
            memcpy(got, ref_values(x[0], v), (size_t)n * sizeof *got);
        }
        double d = max_rel_diff(ref_values(full, v), got, n);
        if (d > worst) worst = d;
        ++*ncompared;
        free(got);
    }
    return worst;
}

static void check_variant(const hg_graph *g, const char *model, const char *task, const char *cfgs, int R,
                          int *refused)
{
    built b;
    if (build(model, task, cfgs, g, &b)) return;
    rg_err err;
    col_plan cp;
    if (col_plan_build(b.ir, b.lp, &b.v, &cp, &err)) {
        /* only a kernel that sums and then reads its own sums is refused */
        if (!strstr(err.msg, "collective between two passes")) fail_msg("%s %s %s: %s", model, task, cfgs, err.msg);
        ++*refused;
        built_free(&b);
        return;
    }
    ref_options o = {.seed = 3, .nthreads = 1};
    ref_exec *full = ref_new(b.ir, g, &o, &err);
    assert_non_null(full);
    assert_int_equal(ref_run(full, &err), 0);
    int32_t owner[64];
    assert_int_equal(rlp_partition(g, R, RLP_ROWS, owner, &err), 0);
    hg_graph *sub[4];
    ref_exec *x[4];
    for (int k = 0; k < R; k++) {
        int32_t *orig;
        sub[k] = rlp_subgraph(g, owner, k, &orig, &err);
        assert_non_null(sub[k]);
        free(orig);
        x[k] = ref_new(b.ir, sub[k], &o, &err);
        if (!x[k]) fail_msg("ref_new rank %d: %s", k, err.msg);
    }
    run_partitioned(&b, &cp, x, R);
    int ncompared = 0;
    double d = compare_handed_over(&b, &cp, full, x, owner, g->num_etypes, &ncompared);
    if (!(d < 1e-9)) fail_msg("%s %s %s on %d ranks: differs by %.3g", model, task, cfgs, R, d);
    assert_true(ncompared >= (pl_is_train(task) ? 3 : 1));
    for (int k = 0; k < R; k++) {
        ref_free(x[k]);
        hg_free(sub[k]);
    }
    ref_free(full);
    col_plan_free(&cp);
    built_free(&b);
}

static const char *const configs[] = {
    "softmax=single,trav=edge", "softmax=single,trav=node", "softmax=twopass,trav=edge",
    "softmax=twopass,trav=node", "softmax=single,compact=off,reorder=off",
    "softmax=twopass,compact=bsearch,reorder=off,pagg=off", "softmax=single,compact=direct,reorder=on,trav=node",
};

static void check_model(const char *model, const char *task)
{
    hg_graph *g = synth_graph();
    int refused = 0, n = (int)(sizeof configs / sizeof configs[0]);
    for (int c = 0; c < n; c++)
        for (int R = 1; R <= 3; R++) check_variant(g, model, task, configs[c], R, &refused);
    /* node-centric two-pass softmax reads its sums inside one kernel: refused (3 ranks each) */
    assert_true(refused <= 3 * 2);
    hg_free(g);
}

static void test_rgat_infer(void **state) { (void)state; check_model("rgat", "infer"); }
static void test_rgat_train(void **state) { (void)state; check_model("rgat", "train"); }
static void test_hgt_infer(void **state) { (void)state; check_model("hgt", "infer"); }
static void test_hgt_train(void **state) { (void)state; check_model("hgt", "train"); }
static void test_rgcn_train(void **state) { (void)state; check_model("rgcn", "train"); }

static void test_single_softmax_syncs_sum_and_aggregate(void **state)
{
    (void)state;
    hg_graph *g = synth_graph();
    built b;
    assert_int_equal(build("rgat", "infer", "softmax=single,trav=edge", g, &b), 0);
    rg_err err;
    col_plan cp;
    assert_int_equal(col_plan_build(b.ir, b.lp, &b.v, &cp, &err), 0);
    /* exactly the softmax sum and the unnormalised aggregate, both before the division */
    assert_int_equal(cp.nsync, 2);
    assert_int_equal(cp.sync[0].before, cp.sync[1].before);
    assert_true(cp.sync[0].before < b.v.plan.nkernels);
    int names = 0;
    for (int i = 0; i < 2; i++) names += strstr(b.ir->vars[cp.sync[i].var].name, "att_sum") != NULL;
    assert_int_equal(names, 1);
    col_plan_free(&cp);
    built_free(&b);
    assert_int_equal(build("rgat", "infer", "softmax=twopass,trav=node", g, &b), 0);
    assert_int_not_equal(col_plan_build(b.ir, b.lp, &b.v, &cp, &err), 0);
    assert_non_null(strstr(err.msg, "collective between two passes"));
    built_free(&b);
    hg_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partition_balances_and_covers),
        cmocka_unit_test(test_subgraphs_split_the_edges),
        cmocka_unit_test(test_lse_merge_equals_one_softmax),
        cmocka_unit_test(test_single_softmax_syncs_sum_and_aggregate),
        cmocka_unit_test(test_rgat_infer),
        cmocka_unit_test(test_rgat_train),
        cmocka_unit_test(test_hgt_infer),
        cmocka_unit_test(test_hgt_train),
        cmocka_unit_test(test_rgcn_train),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
