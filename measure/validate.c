/* Validation of a variant's run against the float64 CPU reference: comparisons, tolerance,
 * near-kink alternatives, the SGD step check, and locating the first kernel that went wrong. */
#include "measure/validate.h"
#include "codegen/emit_loss.h"
#include "codegen/emit_trav.h"
#include "codegen/vartype.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define KINK_TEXT(x) #x
#define KINK_REL_TEXT(x) KINK_TEXT(x)   /* "1e-6" in messages */

/* ------------------------------------------------------------------ comparisons */

/* Relative L2 distance, summed in parallel ranges: validation compares arrays of 1e8
 * elements once per variant, and one thread made that most of a large graph's sweep. */
typedef struct l2_job {
    const double *ref;
    const double *x64;
    const float *x32;
    double num[REF_MAX_THREADS], den[REF_MAX_THREADS];
} l2_job;

static void l2_range(void *arg, int tid, int64_t lo, int64_t hi)
{
    l2_job *j = arg;
    double num = 0, den = 0;
    for (int64_t i = lo; i < hi; i++) {
        double d = (j->x64 ? j->x64[i] : (double)j->x32[i]) - j->ref[i];
        num += d * d;
        den += j->ref[i] * j->ref[i];
    }
    j->num[tid] = num;
    j->den[tid] = den;
}

#define L2_SERIAL_BELOW (1 << 20)

static double rel_l2(l2_job *j, int64_t n)
{
    int nt = n < L2_SERIAL_BELOW ? 1 : ref_default_threads();
    memset(j->num, 0, sizeof j->num);
    memset(j->den, 0, sizeof j->den);
    ref_parallel_for(nt, n, l2_range, j);
    double num = 0, den = 0;
    for (int t = 0; t < nt; t++) {
        num += j->num[t];
        den += j->den[t];
    }
    if (isnan(num) || isnan(den)) return NAN;
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

double xv_rel_l2(const double *ref, const double *x, int64_t n)
{
    l2_job j = {.ref = ref, .x64 = x};
    return rel_l2(&j, n);
}

double xv_nmse(const double *ref, const double *x, int64_t n)
{
    double r = xv_rel_l2(ref, x, n);
    return r * r;
}

double xv_compare_f32(const double *ref, const float *x, int64_t n)
{
    l2_job j = {.ref = ref, .x32 = x};
    return rel_l2(&j, n);
}

void xv_poison_f32(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] = NAN;
}

double xv_tolerance(double requested, int train)
{
    return requested > 0 ? requested : train ? 1e-4 : 1e-5;
}

/* The operand precisions cfg_precision names, by explicit mantissa bits. */
static const struct {
    const char *name;
    int bits;
} PRECISIONS[] = {{"fp32", 23}, {"tf32", 10}, {"bf16", 7}};

/* The storage part cfg_precision appends under store=bf16. */
#define BF16_STORE "+bf16-store"

int xv_mantissa_bits(const char *precision)
{
    /* the operands' name: what comes before a storage suffix */
    size_t len = strcspn(precision, "+");
    for (size_t i = 0; i < sizeof PRECISIONS / sizeof PRECISIONS[0]; i++)
        if (strlen(PRECISIONS[i].name) == len && !strncmp(precision, PRECISIONS[i].name, len) &&
            (!precision[len] || !strcmp(precision + len, BF16_STORE)))
            return PRECISIONS[i].bits;
    RG_DIE("precision %s has no mantissa width here", precision);
}

double xv_variant_tolerance(double requested, const pl_problem *p, const cg_config *cfg)
{
    int train = pl_is_train(p->task);
    double tol = xv_tolerance(requested, train);
    const char *precision = cfg_precision(cfg);
    int bits = xv_mantissa_bits(precision), store = strstr(precision, BF16_STORE) != NULL;
    if (requested > 0 || (bits == 23 && !store)) return tol;
    /* per-operand rounding units: the GEMM operands' (mma), plus bfloat16 storage's
     * when features and messages are stored rounded. Storage rounds each stored feature or
     * message once, by at most u of its size, before a product or an aggregation reads it: the
     * same bound per product term as rounding one operand, and c covers the two stored levels
     * of a layer (input features into the typed linear, its messages into the aggregation or
     * attention) in inference, twice that in training, whose backward products read the stored
     * forward values again. The two roundings are independent, so their bounds add. */
    double u = (bits < 23 ? ldexp(1.0, -(bits + 1)) : 0) + (store ? ldexp(1.0, -(xv_mantissa_bits("bf16") + 1)) : 0);
    int k = p->dims.in_dim > p->dims.out_dim ? p->dims.in_dim : p->dims.out_dim;
    return tol + (train ? 4 : 2) * u * sqrt((double)k);
}

/* Values as stored (float or double) against reference values. */
static double compare_stored(const double *want, const void *got, int elem, int64_t n)
{
    return elem == (int)sizeof(float) ? xv_compare_f32(want, got, n) : xv_rel_l2(want, got, n);
}

/* ------------------------------------------------------------------ the reference */

struct xv_reference {
    int train;
    ir_program *prog;
    ref_exec *ref;
    /* Training: the near-kink rows (nkinks may exceed the XV_KINK_MAX_ENUM listed) and, for
     * each non-empty subset (bit i: kink i flipped) as alternative 1 .. nalt, the values of
     * the checked reference variables alt_var[] with those branches flipped:
     * alt_val[(alt - 1) * nalt_vars + j] */
    int nkinks;
    ref_kink kinks[XV_KINK_MAX_ENUM];
    int nalt, nalt_vars;
    int *alt_var;
    double **alt_val;
};

/* "LeakyReLU", "ReLU" or both, for the listed kinks in mask. */
static const char *kink_ops(const xv_reference *r, int mask)
{
    int leaky = 0, plain = 0;
    for (int i = 0; i < r->nkinks && i < XV_KINK_MAX_ENUM; i++)
        if (mask >> i & 1) {
            if (r->prog->stmts[r->kinks[i].stmt].op == IR_OP_LEAKYRELU_GRAD) leaky = 1;
            else plain = 1;
        }
    return leaky && plain ? "ReLU/LeakyReLU" : leaky ? "LeakyReLU" : "ReLU";
}

/* What a statement's iteration rows are (ref_kink.row). */
static const char *row_word(const ir_program *p, const ir_stmt *s)
{
    if (s->dom == IR_DOM_NODE) return "node";
    if (s->dom != IR_DOM_EDGE) return "row";
    return ir_stmt_per_unique(p, s) ? "compact row" : "edge";
}

/* "stmt 21, edge 235838; ..." for the listed kinks in mask. */
static void describe_kinks(const xv_reference *r, int mask, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < r->nkinks && i < XV_KINK_MAX_ENUM && used < n; i++) {
        if (!(mask >> i & 1)) continue;
        int stmt = r->kinks[i].stmt;
        used += (size_t)snprintf(buf + used, n - used, "%sstmt %d, %s %lld", used ? "; " : "", stmt,
                                 row_word(r->prog, &r->prog->stmts[stmt]), (long long)r->kinks[i].row);
    }
}

static int ones(int mask) { return __builtin_popcount((unsigned)mask); }

static void print_kinks(const xv_reference *r)
{
    char rows[256];
    int all = (1 << (r->nkinks < XV_KINK_MAX_ENUM ? r->nkinks : XV_KINK_MAX_ENUM)) - 1;
    describe_kinks(r, all, rows, sizeof rows);
    int many = r->nkinks > 1;
    fprintf(stderr, "reference: %d %s input%s within %s rms of %s kink%s (%s%s); ", r->nkinks, kink_ops(r, all),
            many ? "s" : "", KINK_REL_TEXT(XV_KINK_REL), many ? "their" : "its", many ? "s" : "", rows,
            r->nkinks > XV_KINK_MAX_ENUM ? "; ..." : "");
    if (r->nkinks > XV_KINK_MAX_ENUM)
        fprintf(stderr, "too many to enumerate, validating against the plain reference only\n");
    else if (r->nkinks == 1)
        fprintf(stderr, "validating against both branches\n");
    else
        fprintf(stderr, "validating against all %d branch combinations\n", 1 << r->nkinks);
}

/* The variables a validation compares: the output (inference) or the loss (training), and
 * every input/weight gradient. */
static int checked_var(const ir_program *ir, int v, int train)
{
    const ir_var *x = &ir->vars[v];
    if (x->grad_of >= 0) {
        ir_role pr = ir->vars[x->grad_of].role;
        return pr == IR_ROLE_PARAM || pr == IR_ROLE_INPUT;
    }
    return train ? v == ir->loss : v == ir->output;
}

/* The reference variables a training run is compared with. */
static int *checked_ref_vars(const ir_program *p, int *n)
{
    int *vars = rg_xmalloc(((size_t)p->nvars + 1) * sizeof *vars);
    *n = 0;
    for (int v = 0; v < p->nvars; v++)
        if (checked_var(p, v, 1)) vars[(*n)++] = v;
    return vars;
}

/* Later backward runs take the other branch at the kinks in mask (0: none). */
static void set_flips(xv_reference *r, int mask)
{
    ref_kink sub[XV_KINK_MAX_ENUM];
    int n = 0;
    for (int i = 0; i < r->nkinks && i < XV_KINK_MAX_ENUM; i++)
        if (mask >> i & 1) sub[n++] = r->kinks[i];
    ref_set_flips(r->ref, sub, n, n ? XV_KINK_REL : 0);
}

/* Reruns the reference's backward with the kinks in mask flipped and keeps copies of
 * the checked variables as alternative `mask`. */
static int run_alternative(xv_reference *r, int mask, rg_err *err)
{
    set_flips(r, mask);
    if (ref_run_range(r->ref, r->prog->nforward, r->prog->nstmts, err)) return -1;
    for (int j = 0; j < r->nalt_vars; j++) {
        int v = r->alt_var[j];
        size_t bytes = (size_t)ref_count(r->ref, v) * sizeof(double);
        double *copy = rg_xmalloc(bytes ? bytes : 1);
        memcpy(copy, ref_values(r->ref, v), bytes);
        r->alt_val[(mask - 1) * r->nalt_vars + j] = copy;
    }
    return 0;
}

/* After the reference run of a training task: finds the near-kink rows and, when there
 * are few, computes the alternatives; the reference is left as it was (flips cleared,
 * backward rerun). */
static int prepare_alternatives(xv_reference *r, rg_err *err)
{
    r->nkinks = ref_find_kinks(r->ref, XV_KINK_REL, r->kinks, XV_KINK_MAX_ENUM);
    if (r->nkinks == 0) return 0;
    print_kinks(r);
    if (r->nkinks > XV_KINK_MAX_ENUM) return 0;
    r->alt_var = checked_ref_vars(r->prog, &r->nalt_vars);
    r->nalt = (1 << r->nkinks) - 1;
    r->alt_val = rg_xcalloc((size_t)r->nalt * (size_t)r->nalt_vars + 1, sizeof *r->alt_val);
    for (int mask = 1; mask <= r->nalt; mask++)
        if (run_alternative(r, mask, err)) return -1;
    set_flips(r, 0);
    return ref_run_range(r->ref, r->prog->nforward, r->prog->nstmts, err);
}

xv_reference *xv_reference_new(const pl_problem *p, const hg_graph *g, rg_err *err)
{
    return xv_reference_new_opts(p, g, NULL, err);
}

xv_reference *xv_reference_new_opts(const pl_problem *p, const hg_graph *g, const ref_options *opt, rg_err *err)
{
    xv_reference *r = rg_xcalloc(1, sizeof *r);
    r->train = pl_is_train(p->task);
    r->prog = pl_reference_program(p, err);
    if (!r->prog) {
        free(r);
        return NULL;
    }
    ref_options ro = {0};
    r->ref = ref_new(r->prog, g, opt ? opt : &ro, err);
    if (!r->ref || ref_run(r->ref, err) || (r->train && prepare_alternatives(r, err))) {
        xv_reference_free(r);
        return NULL;
    }
    return r;
}

void xv_reference_free(xv_reference *r)
{
    if (!r) return;
    for (int i = 0; r->alt_val && i < r->nalt * r->nalt_vars; i++) free(r->alt_val[i]);
    free(r->alt_val);
    free(r->alt_var);
    ref_free(r->ref);
    ir_free(r->prog);
    free(r);
}

const ir_program *xv_reference_program(const xv_reference *r) { return r->prog; }

ref_exec *xv_reference_exec(xv_reference *r) { return r->ref; }

/* Reference values of reference variable rv under alternative alt (0: the plain one). */
static const double *alternative_values(xv_reference *r, int rv, int alt)
{
    for (int j = 0; alt > 0 && j < r->nalt_vars; j++)
        if (r->alt_var[j] == rv) return r->alt_val[(alt - 1) * r->nalt_vars + j];
    return ref_values(r->ref, rv);
}

/* " (reference with ...)" naming alternative alt in a validation report ("" for 0). */
static void describe_alternative(const xv_reference *r, int alt, char *buf, size_t n)
{
    buf[0] = 0;
    if (r->nkinks > XV_KINK_MAX_ENUM) {
        snprintf(buf, n, " (reference: %d near-kink rows, too many to enumerate)", r->nkinks);
        return;
    }
    if (alt == 0) return;
    char rows[256];
    describe_kinks(r, alt, rows, sizeof rows);
    snprintf(buf, n, " (reference with the %s branch flipped at %d near-kink row%s, %s: |x| < %s rms)",
             kink_ops(r, alt), ones(alt), ones(alt) > 1 ? "s" : "", rows, KINK_REL_TEXT(XV_KINK_REL));
}

/* The reference variable that holds what `var` of the variant program holds: the same
 * name, or for a gradient, the gradient of the same-named primal. */
static int reference_var(const xv_reference *r, const ir_program *ir, int var)
{
    const ir_var *v = &ir->vars[var];
    if (v->grad_of >= 0) {
        int primal = ir_find_var(r->prog, ir->vars[v->grad_of].name);
        return primal >= 0 ? r->prog->vars[primal].grad : -1;
    }
    return ir_find_var(r->prog, v->name);
}

const double **xv_input_values(xv_reference *r, const ir_program *ir, rg_err *err)
{
    const double **vals = rg_xcalloc((size_t)(ir->nvars ? ir->nvars : 1), sizeof *vals);
    for (int v = 0; v < ir->nvars; v++) {
        ir_role role = ir->vars[v].role;
        if (role != IR_ROLE_INPUT && role != IR_ROLE_PARAM && role != IR_ROLE_LABEL && role != IR_ROLE_GRAPH) continue;
        int rv = ir_find_var(r->prog, ir->vars[v].name);
        if (rv < 0) {
            rg_errf(err, "input %s of the variant has no counterpart in the reference program", ir->vars[v].name);
            free(vals);
            return NULL;
        }
        vals[v] = ref_values(r->ref, rv);
    }
    return vals;
}

/* ------------------------------------------------------------------ locating the culprit */

/* The lowered instance a plan kernel comes from (codegen names kernels after instances):
 * its name, or <name>_p<phase> for one phase of a traversal (*phase, else -1); -1 for
 * kernels of no instance (sgd_update). */
static int instance_of(const lw_program *lp, const char *kernel, int *phase)
{
    *phase = -1;
    for (int i = 0; i < lp->ninst; i++) {
        size_t n = strlen(lp->inst[i].name);
        if (strncmp(kernel, lp->inst[i].name, n)) continue;
        const char *rest = kernel + n;
        if (!*rest) return i;
        if (rest[0] == '_' && rest[1] == 'p' && rest[2] && strspn(rest + 2, "0123456789") == strlen(rest + 2)) {
            *phase = atoi(rest + 2);
            return i;
        }
    }
    return -1;
}

/* Marks what kernel k, phase `phase` of instance `in` (-1: all of it), writes (the last
 * writer wins). Register-only outputs of the lowering are marked too: a traversal split in
 * phases keeps in memory what one phase hands the next (the variant's materialized[]
 * decides what is compared). */
static void mark_writes(const ir_program *ir, const lw_instance *in, int phase, int k, int *last_writer)
{
    if (in->kind == LW_GEMM) {
        last_writer[ir->stmts[in->u.gemm.stmt].out.var] = k;
    } else if (in->kind == LW_FALLBACK) {
        last_writer[ir->stmts[in->u.fallback_stmt].out.var] = k;
    } else {
        const lw_trav *tr = &in->u.trav;
        int *phases = rg_xmalloc((size_t)(tr->nstmts ? tr->nstmts : 1) * sizeof *phases);
        et_phases(ir, tr, phases);
        for (int i = 0; i < tr->nstmts; i++)
            if (phase < 0 || phases[i] == phase)
                last_writer[ir->stmts[tr->stmts[i].stmt].out.var] = k;
        free(phases);
    }
}

/* Same shape and layout in both programs: values can be compared element by element. */
static int comparable(const ir_var *a, const ir_var *b)
{
    return a->kind == b->kind && a->layout == b->layout && a->heads == b->heads && a->dim == b->dim &&
           a->rows_dim == b->rows_dim && a->widx == b->widx;
}

/* The error of variant variable v against the reference, or -1 (not comparable: *cmp 0). */
static int var_error(xv_reference *r, const ir_program *ir, int v, const xv_source *src, double *e, int *cmp,
                     rg_err *err)
{
    *cmp = 0;
    int rv = reference_var(r, ir, v);
    if (rv < 0 || !comparable(&ir->vars[v], &r->prog->vars[rv])) return 0;
    int64_t n;
    int elem;
    const void *got = src->values(src->ctx, v, &n, &elem, err);
    if (!got) return -1;
    if (n != ref_count(r->ref, rv)) return 0;
    *cmp = 1;
    *e = compare_stored(ref_values(r->ref, rv), got, elem, n);
    return 0;
}

/* Scans the kernels in order for the first completed variable over the tolerance. */
static int scan_kernels(xv_reference *r, const ir_program *ir, const cg_variant *v, const int *last_writer,
                        const xv_source *src, double tol, xv_culprit *out, rg_err *err)
{
    for (int k = 0; k < v->plan.nkernels; k++)
        for (int var = 0; var < ir->nvars; var++) {
            if (last_writer[var] != k || !v->materialized[var]) continue;
            double e;
            int cmp;
            if (var_error(r, ir, var, src, &e, &cmp, err)) return -1;
            if (cmp && !(e < tol)) {
                *out = (xv_culprit){k, var, e};
                return 0;
            }
        }
    return 0;
}

int xv_locate(xv_reference *r, const ir_program *ir, const lw_program *lp, const cg_variant *v, const xv_source *src,
              int alt, double tol, xv_culprit *out, rg_err *err)
{
    *out = (xv_culprit){-1, -1, NAN};
    int *last_writer = rg_xmalloc((size_t)(ir->nvars ? ir->nvars : 1) * sizeof *last_writer);
    for (int i = 0; i < ir->nvars; i++) last_writer[i] = -1;
    for (int k = 0; k < v->plan.nkernels; k++) {
        int phase, inst = instance_of(lp, v->plan.kernels[k].name, &phase);
        if (inst >= 0) mark_writes(ir, &lp->inst[inst], phase, k, last_writer);
    }
    /* intermediates of the backward with the alternative's branches: the reference itself
     * is rerun under them (and put back after), since only checked variables were kept */
    int flipped = alt > 0 && r->train && alt <= r->nalt;
    int rc = 0;
    if (flipped) {
        set_flips(r, alt);
        rc = ref_run_range(r->ref, r->prog->nforward, r->prog->nstmts, err);
    }
    if (rc == 0) rc = scan_kernels(r, ir, v, last_writer, src, tol, out, err);
    if (flipped) {
        rg_err e2;
        set_flips(r, 0);
        if (ref_run_range(r->ref, r->prog->nforward, r->prog->nstmts, &e2) && rc == 0) {
            *err = e2;
            rc = -1;
        }
    }
    free(last_writer);
    return rc;
}

/* ------------------------------------------------------------------ validation */

/* Relative L2 errors of the checked variables (row i: one per reference, plain first) and
 * of the SGD steps (one per weight, the same for every reference), with their names in the
 * order of the report. */
typedef struct val_errors {
    int nvars, nsgd;
    const char **names;   /* [nvars + nsgd] */
    double *var_err;      /* [nvars * nrefs] */
    double *sgd_err;      /* [nsgd] */
} val_errors;

/* A copy of a variable's values as float64 (the source's buffer is reused). */
static double *values_f64(const xv_source *src, int var, int64_t *n, rg_err *err)
{
    int elem;
    const void *got = src->values(src->ctx, var, n, &elem, err);
    if (!got) return NULL;
    double *out = rg_xmalloc((size_t)(*n ? *n : 1) * sizeof *out);
    for (int64_t i = 0; i < *n; i++) out[i] = elem == (int)sizeof(float) ? ((const float *)got)[i] : ((const double *)got)[i];
    return out;
}

/* How far the device's SGD step of weight w is from the host's, from the weight before
 * the run (w0) and the device's gradient (itself checked against the reference): the
 * relative L2 distance between the weights after the step and the expected ones, scaled
 * by the step's size. A bit-exact step gives 0; a missing step gives 1. -1 after an error. */
static int sgd_step_error(const ir_program *ir, const xv_source *src, int w, const double *w0, double *out,
                          rg_err *err)
{
    int64_t n, ndw;
    double *after = values_f64(src, w, &n, err);
    double *dw = after ? values_f64(src, ir->vars[w].grad, &ndw, err) : NULL;
    int rc = dw ? 0 : -1;
    if (dw && ndw != n) rc = rg_errf(err, "%s has %lld values, its gradient %lld", ir->vars[w].name, (long long)n,
                                     (long long)ndw);
    double num = 0, den = 0;
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        double want = el_sgd_step((float)w0[i], dw[i]), step = EL_SGD_LR * dw[i];
        num += (after[i] - want) * (after[i] - want);
        den += step * step;
    }
    free(after);
    free(dw);
    *out = isnan(num) || isnan(den) ? NAN : den > 0 ? sqrt(num / den) : sqrt(num);
    return rc;
}

/* Reads each checked variable once and compares it with every reference. -1 after an
 * error (what was compared before it stays). */
static int compare_vars(xv_reference *r, const ir_program *ir, const xv_source *src, int nrefs, val_errors *ve,
                        rg_err *err)
{
    for (int var = 0; var < ir->nvars; var++) {
        if (!checked_var(ir, var, r->train)) continue;
        int rv = reference_var(r, ir, var);
        if (rv < 0) return rg_errf(err, "no reference for %s", ir->vars[var].name);
        int64_t n;
        int elem;
        const void *got = src->values(src->ctx, var, &n, &elem, err);
        if (!got) return -1;
        if (n != ref_count(r->ref, rv))
            return rg_errf(err, "%s has %lld elements on the device, %lld in the reference", ir->vars[var].name,
                           (long long)n, (long long)ref_count(r->ref, rv));
        for (int a = 0; a < nrefs; a++)
            ve->var_err[ve->nvars * nrefs + a] = compare_stored(alternative_values(r, rv, a), got, elem, n);
        ve->names[ve->nvars++] = ir->vars[var].name;
    }
    return 0;
}

static int compare_sgd(const xv_reference *r, const ir_program *ir, const cg_variant *v, const xv_source *src,
                       const double *const *inputs, val_errors *ve, rg_err *err)
{
    for (int var = 0; var < ir->nvars && r->train; var++) {
        if (!el_sgd_updates(&ir->vars[var]) || !v->materialized[var]) continue;
        if (sgd_step_error(ir, src, var, inputs[var], &ve->sgd_err[ve->nsgd], err)) return -1;
        ve->names[ve->nvars + ve->nsgd++] = ir->vars[var].name;
    }
    return 0;
}

/* The largest error against reference a; NaN where any is NaN (a NaN output). Taking the larger of
 * each pair with `!(e <= worst)` let a later finite error replace a NaN: a variant whose d_feature was
 * NaN passed on its last, clean, variable (session 26). */
static double worst_error(const val_errors *ve, int nrefs, int a)
{
    double worst = 0;
    for (int i = 0; i < ve->nvars + ve->nsgd; i++) {
        double e = i < ve->nvars ? ve->var_err[i * nrefs + a] : ve->sgd_err[i - ve->nvars];
        if (isnan(e)) return NAN;
        if (e > worst) worst = e;
    }
    return worst;
}

static void format_report(const xv_reference *r, const val_errors *ve, int nrefs, int a, char *report, size_t n)
{
    size_t used = 0;
    report[0] = 0;
    for (int i = 0; i < ve->nvars && used < n; i++)
        used += (size_t)snprintf(report + used, n - used, "%s%s=%.3g", used ? " " : "", ve->names[i],
                                 ve->var_err[i * nrefs + a]);
    for (int i = 0; i < ve->nsgd && used < n; i++)
        used += (size_t)snprintf(report + used, n - used, "%ssgd(%s)=%.3g", used ? " " : "", ve->names[ve->nvars + i],
                                 ve->sgd_err[i]);
    if (used < n && ve->nvars + ve->nsgd > 0) describe_alternative(r, a, report + used, n - used);
}

/* "; first wrong output: att=0.5 (kernel trav_1)" or why none is named, after the report. */
static void describe_culprit(xv_reference *r, const ir_program *ir, const lw_program *lp, const cg_variant *v,
                             const xv_source *src, double tol, xv_verdict *out)
{
    size_t used = strlen(out->evidence), n = sizeof out->evidence;
    if (used >= n - 1) return;
    rg_err e;
    if (xv_locate(r, ir, lp, v, src, out->alt, tol, &out->culprit, &e)) {
        snprintf(out->evidence + used, n - used, "; first wrong kernel not located: %s", e.msg);
    } else if (out->culprit.kernel < 0) {
        snprintf(out->evidence + used, n - used, "; every comparable intermediate agrees");
    } else {
        snprintf(out->evidence + used, n - used, "; first wrong output: %s=%.3g (kernel %s)",
                 ir->vars[out->culprit.var].name, out->culprit.error, v->plan.kernels[out->culprit.kernel].name);
    }
}

int xv_validate(xv_reference *r, const ir_program *ir, const lw_program *lp, const cg_variant *v, const xv_source *src,
                const double *const *inputs, double tol, xv_verdict *out, rg_err *err)
{
    int nrefs = 1 + r->nalt;
    size_t slots = (size_t)ir->nvars + 1;
    val_errors ve = {0, 0, rg_xmalloc(2 * slots * sizeof(char *)), rg_xmalloc(slots * (size_t)nrefs * sizeof(double)),
                     rg_xmalloc(slots * sizeof(double))};
    int failed = compare_vars(r, ir, src, nrefs, &ve, err) < 0;
    if (!failed) failed = compare_sgd(r, ir, v, src, inputs, &ve, err) < 0;
    out->alt = 0;
    for (int a = 1; a < nrefs && !failed; a++)
        if (worst_error(&ve, nrefs, a) < worst_error(&ve, nrefs, out->alt)) out->alt = a;
    char report[2048];
    format_report(r, &ve, nrefs, out->alt, report, sizeof report);
    out->ncompared = ve.nvars + ve.nsgd;
    out->error = failed ? NAN : worst_error(&ve, nrefs, out->alt);
    out->ok = out->error < tol;
    out->culprit = (xv_culprit){-1, -1, NAN};
    if (out->ok) snprintf(out->evidence, sizeof out->evidence, "validated: %s", report);
    else snprintf(out->evidence, sizeof out->evidence, "relative L2 error above %.0e: %s", tol, report);
    if (!out->ok && !failed) describe_culprit(r, ir, lp, v, src, tol, out);
    free(ve.names);
    free(ve.var_err);
    free(ve.sgd_err);
    return failed ? -1 : 0;
}
