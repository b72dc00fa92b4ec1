/* Tests of the validator (measure/validate.c) on the CPU: the comparisons, and a run whose
 * values are the reference's, whole or with one intermediate corrupted, as a device would give. */
#include "tests/testutil.h"
#include "tests/irbuild.h"
#include "measure/validate.h"
#include "codegen/emit_loss.h"
#include "codegen/vartype.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- comparisons ---- */

static void test_comparisons_and_poison(void **state)
{
    (void)state;
    double ref[3] = {3, 0, 4}, x[3] = {3, 1, 4};
    assert_float_equal(xv_rel_l2(ref, x, 3), 0.2, 1e-15);
    assert_float_equal(xv_nmse(ref, x, 3), 0.04, 1e-15);
    float f[3] = {3, 1, 4};
    assert_float_equal(xv_compare_f32(ref, f, 3), 0.2, 1e-7);
    double zero[2] = {0, 0}, y[2] = {3, 4};
    assert_float_equal(xv_rel_l2(zero, y, 2), 5.0, 1e-15);
    xv_poison_f32(f, 3);
    assert_true(isnan(xv_compare_f32(ref, f, 3)));
    assert_false(xv_compare_f32(ref, f, 3) < 1e-3);

    /* large arrays are compared on several threads: the same answer as one sum, and one
     * NaN anywhere (here in the last thread's range) still fails the comparison */
    int64_t n = 3 << 20;
    double *big = rg_xmalloc((size_t)n * sizeof *big), *near = rg_xmalloc((size_t)n * sizeof *near);
    float *near32 = rg_xmalloc((size_t)n * sizeof *near32);
    rg_rng rng;
    rg_rng_seed(&rng, 7);
    long double num = 0, den = 0, num32 = 0;
    for (int64_t i = 0; i < n; i++) {
        big[i] = rg_rng_uniform(&rng) - 0.5;
        near[i] = big[i] * (1 + 1e-3 * (rg_rng_uniform(&rng) - 0.5));
        near32[i] = (float)near[i];
        num += (long double)(near[i] - big[i]) * (near[i] - big[i]);
        num32 += (long double)((double)near32[i] - big[i]) * ((double)near32[i] - big[i]);
        den += (long double)big[i] * big[i];
    }
    assert_float_equal(xv_rel_l2(big, near, n), (double)sqrtl(num / den), 1e-12 * (double)sqrtl(num / den));
    assert_float_equal(xv_compare_f32(big, near32, n), (double)sqrtl(num32 / den), 1e-12 * (double)sqrtl(num32 / den));
    near32[n - 1] = NAN;
    near[n - 1] = NAN;
    assert_true(isnan(xv_compare_f32(big, near32, n)));
    assert_true(isnan(xv_rel_l2(big, near, n)));
    free(big), free(near), free(near32);

}

static void test_tolerance(void **state)
{
    (void)state;
    assert_float_equal(xv_tolerance(0, 0), 1e-5, 0);
    assert_float_equal(xv_tolerance(0, 1), 1e-4, 0);
    assert_float_equal(xv_tolerance(3e-3, 1), 3e-3, 0);
}

/* The tolerance follows the variant's precision: fp32 keeps xv_tolerance's; tf32 and bf16 add
 * c u sqrt(K) (validate.h), u = 2^-(mantissa bits + 1), K the wider of the problem's dims. */
static void test_tolerance_per_precision(void **state)
{
    (void)state;
    assert_int_equal(xv_mantissa_bits("fp32"), 23);
    assert_int_equal(xv_mantissa_bits("tf32"), 10);
    assert_int_equal(xv_mantissa_bits("bf16"), 7);
    cg_config fp32, tf32, bf16;
    rg_err err;
    cfg_default(&fp32);
    cfg_default(&tf32);
    cfg_default(&bf16);
    assert_int_equal(cfg_parse(&tf32, "mma=tf32", &err), 0);
    assert_int_equal(cfg_parse(&bf16, "mma=bf16", &err), 0);
    pl_problem inf = {"rgat", "infer", {64, 64, 1}}, train = {"hgt", "train", {128, 128, 4}};
    assert_float_equal(xv_variant_tolerance(0, &inf, &fp32), 1e-5, 0);
    assert_float_equal(xv_variant_tolerance(0, &train, &fp32), 1e-4, 0);
    assert_float_equal(xv_variant_tolerance(0, &inf, &tf32), 1e-5 + 2 * ldexp(1, -11) * 8, 1e-15);
    assert_float_equal(xv_variant_tolerance(0, &inf, &bf16), 1e-5 + 2 * ldexp(1, -8) * 8, 1e-15);
    assert_float_equal(xv_variant_tolerance(0, &train, &tf32), 1e-4 + 4 * ldexp(1, -11) * sqrt(128), 1e-15);
    assert_float_equal(xv_variant_tolerance(0, &train, &bf16), 1e-4 + 4 * ldexp(1, -8) * sqrt(128), 1e-15);
    pl_problem wide = {"rgcn", "infer", {16, 256, 1}};   /* K is the wider dim */
    assert_float_equal(xv_variant_tolerance(0, &wide, &tf32), 1e-5 + 2 * ldexp(1, -11) * 16, 1e-15);
    assert_float_equal(xv_variant_tolerance(2e-3, &train, &bf16), 2e-3, 0);   /* a requested one wins */
}

/* ---- a run on a "device" that is host memory ---- */

/* A variant of a model built on the small graph, its reference, and the run's values: per
 * variant variable, a float or double array (as the device stores it) or NULL where the
 * reference has no value of the same shape (the validator must not ask for those). */
typedef struct host_run {
    pl_problem pl;
    hg_graph *g;
    ir_program *ir;
    lw_program *lp;
    cg_variant var;
    xv_reference *ref;
    const double **inputs;
    void **vals;
    int64_t *n;
    int *asked;
} host_run;

static const void *host_values(void *ctx, int v, int64_t *n, int *elem, rg_err *err)
{
    host_run *h = ctx;
    h->asked[v]++;
    if (!h->vals[v]) {
        rg_errf(err, "%s is not on the test device", h->ir->vars[v].name);
        return NULL;
    }
    *n = h->n[v];
    *elem = vt_bytes(&h->ir->vars[v]);
    return h->vals[v];
}

/* The reference variable holding what variant variable v holds (by name, or gradient of). */
static int ref_var_of(const ir_program *rp, const ir_program *ir, int v)
{
    const ir_var *x = &ir->vars[v];
    if (x->grad_of < 0) return ir_find_var(rp, x->name);
    int primal = ir_find_var(rp, ir->vars[x->grad_of].name);
    return primal >= 0 ? rp->vars[primal].grad : -1;
}

/* The value a correct device holds after the run: the reference's, rounded to float32
 * where the device stores float32; a weight after the SGD step with its reference gradient. */
static void fill_value(host_run *h, int v, int rv, const ir_program *rp, ref_exec *x)
{
    int64_t n = ref_count(x, rv);
    const double *want = ref_values(x, rv);
    const double *dw = NULL;
    int dw_f32 = 0;   /* the step uses the gradient as the device stores it */
    if (el_sgd_updates(&h->ir->vars[v])) {
        dw = ref_values(x, rp->vars[rv].grad);
        dw_f32 = vt_bytes(&h->ir->vars[h->ir->vars[v].grad]) == 4;
    }
    int f64 = vt_bytes(&h->ir->vars[v]) == 8;
    h->vals[v] = rg_xmalloc((size_t)(n ? n : 1) * (f64 ? sizeof(double) : sizeof(float)));
    h->n[v] = n;
    for (int64_t i = 0; i < n; i++) {
        double y = !dw ? want[i] : el_sgd_step((float)want[i], dw_f32 ? (double)(float)dw[i] : dw[i]);
        if (f64) ((double *)h->vals[v])[i] = y;
        else ((float *)h->vals[v])[i] = (float)y;
    }
}

static void host_run_open(host_run *h, const char *model, const char *task, const char *config)
{
    memset(h, 0, sizeof *h);
    h->pl = (pl_problem){model, task, {8, 8, 2}};
    h->g = irb_small_graph();
    cg_config cfg;
    cfg_default(&cfg);
    rg_err err;
    if (config && cfg_parse(&cfg, config, &err)) fail_msg("%s", err.msg);
    if (pl_build(&h->pl, &cfg, h->g, NULL, &h->ir, &h->lp, &err)) fail_msg("%s", err.msg);
    if (cg_build(h->ir, h->lp, &cfg, &h->var, &err)) fail_msg("%s", err.msg);
    h->ref = xv_reference_new(&h->pl, h->g, &err);
    if (!h->ref) fail_msg("%s", err.msg);
    h->inputs = xv_input_values(h->ref, h->ir, &err);
    if (!h->inputs) fail_msg("%s", err.msg);
    int nv = h->ir->nvars;
    h->vals = rg_xcalloc((size_t)nv, sizeof *h->vals);
    h->n = rg_xcalloc((size_t)nv, sizeof *h->n);
    h->asked = rg_xcalloc((size_t)nv, sizeof *h->asked);
    const ir_program *rp = xv_reference_program(h->ref);
    ref_exec *x = xv_reference_exec(h->ref);
    for (int v = 0; v < nv; v++) {
        int rv = ref_var_of(rp, h->ir, v);
        const ir_var *a = &h->ir->vars[v];
        if (!h->var.materialized[v] || rv < 0) continue;
        const ir_var *b = &rp->vars[rv];
        if (a->layout != b->layout || a->heads != b->heads || a->dim != b->dim || a->kind != b->kind) continue;
        fill_value(h, v, rv, rp, x);
    }
}

static void host_run_close(host_run *h)
{
    for (int v = 0; v < h->ir->nvars; v++) free(h->vals[v]);
    free(h->vals), free(h->n), free(h->asked);
    free(h->inputs);
    xv_reference_free(h->ref);
    cg_variant_free(&h->var);
    lw_free(h->lp);
    ir_free(h->ir);
    hg_free(h->g);
}

static int var_id(const host_run *h, const char *name)
{
    int v = ir_find_var(h->ir, name);
    if (v < 0 || !h->vals[v]) fail_msg("%s is not a comparable materialized variable of the variant", name);
    return v;
}

/* Multiplies one element of a stored variable: a kernel that computed it wrong. */
static void corrupt(host_run *h, const char *name, int64_t i, double factor)
{
    int v = var_id(h, name);
    assert_true(i < h->n[v]);
    if (vt_bytes(&h->ir->vars[v]) == 8) ((double *)h->vals[v])[i] = ((double *)h->vals[v])[i] * factor + 1;
    else ((float *)h->vals[v])[i] = (float)(((float *)h->vals[v])[i] * factor + 1);
}

static const char *kernel_name(const host_run *h, int k)
{
    assert_true(k >= 0 && k < h->var.plan.nkernels);
    return h->var.plan.kernels[k].name;
}

static void validate(host_run *h, xv_verdict *vd)
{
    xv_source src = {host_values, h};
    rg_err err;
    double tol = xv_tolerance(0, pl_is_train(h->pl.task));
    if (xv_validate(h->ref, h->ir, h->lp, &h->var, &src, h->inputs, tol, vd, &err)) fail_msg("%s", err.msg);
}

static void test_agreeing_run_validates(void **state)
{
    (void)state;
    host_run h;
    host_run_open(&h, "rgat", "infer", NULL);
    xv_verdict *vd = rg_xmalloc(sizeof *vd);
    validate(&h, vd);
    assert_true(vd->ok);
    assert_true(vd->error < 1e-6);
    assert_int_equal(vd->ncompared, 1);
    assert_int_equal(strncmp(vd->evidence, "validated: h=", 13), 0);
    assert_int_equal(vd->culprit.kernel, -1);
    xv_source src = {host_values, &h};
    xv_culprit c;
    rg_err err;
    assert_int_equal(xv_locate(h.ref, h.ir, h.lp, &h.var, &src, 0, 1e-5, &c, &err), 0);
    assert_int_equal(c.kernel, -1);
    free(vd);
    host_run_close(&h);
}

/* The plan of rgat inference here (default config): other_1 (W w_t), gemm_2 (hs) and
 * trav_3 (atts) on compact rows (no reference of that layout), trav_4_p0 (att_2, a
 * register temporary of the lowering kept for the next phase, and att_sum), trav_4_p1 (h).
 * A wrong value shows downstream too (h), as it would on a device. */
static void test_first_wrong_kernel_is_named(void **state)
{
    (void)state;
    static const struct {
        const char *var, *kernel;
    } cases[] = {{"att_2", "trav_4_p0"}, {"att_sum", "trav_4_p0"}, {"h", "trav_4_p1"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        host_run h;
        host_run_open(&h, "rgat", "infer", NULL);
        corrupt(&h, cases[i].var, 1, 3.0);
        if (strcmp(cases[i].var, "h")) corrupt(&h, "h", 0, 2.0);
        xv_verdict *vd = rg_xmalloc(sizeof *vd);
        validate(&h, vd);
        assert_false(vd->ok);
        assert_int_equal(strncmp(vd->evidence, "relative L2 error above 1e-05: h=", 33), 0);
        assert_int_equal(vd->culprit.var, var_id(&h, cases[i].var));
        assert_string_equal(kernel_name(&h, vd->culprit.kernel), cases[i].kernel);
        char *want = rg_xasprintf("; first wrong output: %s=", cases[i].var);
        assert_non_null(strstr(vd->evidence, want));
        free(want);
        want = rg_xasprintf("(kernel %s)", cases[i].kernel);
        assert_non_null(strstr(vd->evidence, want));
        free(want);
        free(vd);
        host_run_close(&h);
    }
}

/* Several wrong variables: the one completed first is named. Without compaction and
 * reordering the plan is gemm_1 (hs), gemm_2 (ht), trav_3_p0 (att_2, att_sum), trav_3_p1
 * (h), all edge or node variables the reference has too. */
static void test_earliest_wrong_output_is_named(void **state)
{
    (void)state;
    host_run h;
    host_run_open(&h, "rgat", "infer", "compact=off,reorder=off");
    corrupt(&h, "h", 3, 5.0);
    corrupt(&h, "att_sum", 0, 5.0);
    corrupt(&h, "ht", 2, 5.0);
    xv_source src = {host_values, &h};
    xv_culprit c;
    rg_err err;
    assert_int_equal(xv_locate(h.ref, h.ir, h.lp, &h.var, &src, 0, 1e-5, &c, &err), 0);
    assert_int_equal(c.var, var_id(&h, "ht"));
    assert_string_equal(kernel_name(&h, c.kernel), "gemm_2");
    assert_true(c.error > 1e-3);
    corrupt(&h, "hs", 1, 5.0);
    assert_int_equal(xv_locate(h.ref, h.ir, h.lp, &h.var, &src, 0, 1e-5, &c, &err), 0);
    assert_int_equal(c.var, var_id(&h, "hs"));
    assert_string_equal(kernel_name(&h, c.kernel), "gemm_1");
    host_run_close(&h);
    /* with compaction, hs has no reference of its layout: never read, never blamed */
    host_run_open(&h, "rgat", "infer", NULL);
    corrupt(&h, "att_sum", 0, 5.0);
    int hs = ir_find_var(h.ir, "hs");
    assert_true(hs >= 0 && h.var.materialized[hs] && !h.vals[hs]);
    assert_int_equal(xv_locate(h.ref, h.ir, h.lp, &h.var, &src, 0, 1e-5, &c, &err), 0);
    assert_int_equal(c.var, var_id(&h, "att_sum"));
    assert_int_equal(h.asked[hs], 0);
    host_run_close(&h);
}

/* Training: loss, gradients and the SGD step of every weight agree. */
/* x rounded to the nearest value with `bits` explicit mantissa bits (ties to even). */
static float round_mantissa(float x, int bits)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    int drop = 23 - bits;
    u += ((1u << (drop - 1)) - 1) + ((u >> drop) & 1);
    u &= ~((1u << drop) - 1);
    memcpy(&x, &u, sizeof x);
    return x;
}

/* A run whose every stored float32 carries a bf16 (or tf32) rounding error, as results computed
 * from rounded operands would: it fails float32's tolerance and passes its precision's, as the
 * GPU backend chooses it from the variant's config. */
static void test_rounded_run_validates_at_its_precision(void **state)
{
    (void)state;
    static const char *const configs[] = {"mma=tf32", "mma=bf16"};
    for (int i = 0; i < 2; i++) {
        host_run h;
        host_run_open(&h, "rgat", "infer", configs[i]);
        cg_config cfg;
        rg_err err;
        cfg_default(&cfg);
        assert_int_equal(cfg_parse(&cfg, configs[i], &err), 0);
        int bits = xv_mantissa_bits(cfg_precision(&cfg));
        for (int v = 0; v < h.ir->nvars; v++)
            if (h.vals[v] && vt_bytes(&h.ir->vars[v]) == 4)
                for (int64_t j = 0; j < h.n[v]; j++) ((float *)h.vals[v])[j] = round_mantissa(((float *)h.vals[v])[j], bits);
        xv_verdict *vd = rg_xmalloc(sizeof *vd);
        validate(&h, vd);   /* float32's tolerance */
        assert_false(vd->ok);
        xv_source src = {host_values, &h};
        double tol = xv_variant_tolerance(0, &h.pl, &cfg);
        if (xv_validate(h.ref, h.ir, h.lp, &h.var, &src, h.inputs, tol, vd, &err)) fail_msg("%s", err.msg);
        assert_true(vd->ok);
        assert_true(vd->error > 1e-5);
        free(vd);
        host_run_close(&h);
    }
}

static void test_agreeing_training_run_validates(void **state)
{
    (void)state;
    host_run h;
    host_run_open(&h, "rgcn", "train", NULL);
    xv_verdict *vd = rg_xmalloc(sizeof *vd);
    validate(&h, vd);
    if (!vd->ok) fail_msg("%s", vd->evidence);
    assert_non_null(strstr(vd->evidence, "sgd(W)=0"));
    assert_non_null(strstr(vd->evidence, "d_W="));
    /* a wrong weight gradient is found before the step that used it */
    corrupt(&h, "d_W", 0, 10.0);
    validate(&h, vd);
    assert_false(vd->ok);
    assert_int_equal(vd->culprit.var, var_id(&h, "d_W"));
    assert_int_not_equal(strncmp(kernel_name(&h, vd->culprit.kernel), "sgd", 3), 0);
    free(vd);
    host_run_close(&h);
}

/* A NaN output fails however clean the variables compared after it are: d_feature is compared
 * before d_W, d_W0 and the SGD steps (the largest error once took a later finite one over a NaN). */
static void test_nan_output_fails(void **state)
{
    (void)state;
    host_run h;
    host_run_open(&h, "rgcn", "train", NULL);
    xv_verdict *vd = rg_xmalloc(sizeof *vd);
    int v = var_id(&h, "d_feature");
    if (vt_bytes(&h.ir->vars[v]) == 8) ((double *)h.vals[v])[3] = NAN;
    else ((float *)h.vals[v])[3] = NAN;
    validate(&h, vd);
    assert_false(vd->ok);
    assert_true(isnan(vd->error));
    assert_non_null(strstr(vd->evidence, "d_feature=nan"));
    assert_non_null(strstr(vd->evidence, "d_W="));
    free(vd);
    host_run_close(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_comparisons_and_poison),
        cmocka_unit_test(test_tolerance),
        cmocka_unit_test(test_tolerance_per_precision),
        cmocka_unit_test(test_rounded_run_validates_at_its_precision),
        cmocka_unit_test(test_agreeing_run_validates),
        cmocka_unit_test(test_first_wrong_kernel_is_named),
        cmocka_unit_test(test_earliest_wrong_output_is_named),
        cmocka_unit_test(test_agreeing_training_run_validates),
        cmocka_unit_test(test_nan_output_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
