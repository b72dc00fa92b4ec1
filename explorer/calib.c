/* The Bayesian-optimisation search's config encoding and its prior, calibrated on held-out problems
 * (explorer/calib.h): a key whose effect the model gets right elsewhere keeps a tight prior. */
#include "explorer/calib.h"

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void cal_features(const cg_config *c, double x[CAL_NFEAT])
{
    double bits[CFG_NFEATURES];
    cfg_features(c, bits);
    int k = 0;
    x[k++] = 1;
    for (int i = 0; i < CFG_NFEATURES; i++) x[k++] = bits[i];
    for (int i = 0; i < CM_NPAIRED; i++)
        for (int j = i + 1; j < CM_NPAIRED; j++) x[k++] = bits[i] * bits[j];
}

static int usable(const cm_sample *x, double pred)
{
    return isfinite(pred) && pred > 0 && isfinite(x->time_ms) && x->time_ms > 0;
}

/* The ridge parameter on the 0/1 encoding: about one problem's worth of a feature's rows pulls a
 * coefficient half-way to 0, so features seen on a handful of configs say little. */
#define CAL_LAMBDA 1.0

int cal_residual_effects(const cm_set *s, int q, const double *pred, double coef[CAL_NFEAT],
                         unsigned char varied[CAL_NFEAT])
{
    int m = 0;
    for (int i = 0; i < s->nsamples; i++) m += s->samples[i].problem == q && usable(&s->samples[i], pred[i]);
    if (m < CAL_MIN_ROWS) return -1;
    gsl_matrix *X = gsl_matrix_alloc((size_t)m, CAL_NFEAT), *A = gsl_matrix_calloc(CAL_NFEAT, CAL_NFEAT);
    gsl_vector *r = gsl_vector_alloc((size_t)m), *b = gsl_vector_alloc(CAL_NFEAT), *w = gsl_vector_alloc(CAL_NFEAT);
    double mean = 0;
    for (int i = 0, k = 0; i < s->nsamples; i++) {
        if (s->samples[i].problem != q || !usable(&s->samples[i], pred[i])) continue;
        cal_features(&s->samples[i].cfg, gsl_matrix_ptr(X, (size_t)k, 0));
        double y = log(s->samples[i].time_ms / pred[i]);
        gsl_vector_set(r, (size_t)k++, y);
        mean += y;
    }
    gsl_vector_add_constant(r, -mean / m);   /* the level is the intercept's, which BO leaves free */
    for (int a = 0; a < CAL_NFEAT; a++) {
        double lo = INFINITY, hi = -INFINITY;
        for (int k = 0; k < m; k++) lo = fmin(lo, gsl_matrix_get(X, (size_t)k, a)), hi = fmax(hi, gsl_matrix_get(X, (size_t)k, a));
        varied[a] = a > 0 && hi > lo;
    }
    gsl_blas_dgemm(CblasTrans, CblasNoTrans, 1.0, X, X, 0.0, A);
    gsl_blas_dgemv(CblasTrans, 1.0, X, r, 0.0, b);
    for (int a = 0; a < CAL_NFEAT; a++) *gsl_matrix_ptr(A, a, a) += CAL_LAMBDA;
    /* X'X + lambda I is positive definite */
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int rc = gsl_linalg_cholesky_decomp1(A);
    gsl_set_error_handler(old);
    RG_ASSERT(rc == 0);
    gsl_linalg_cholesky_solve(A, b, w);
    for (int a = 0; a < CAL_NFEAT; a++) coef[a] = varied[a] ? gsl_vector_get(w, a) : 0;
    /* what the encoding cannot express: the rms residual after the fit */
    gsl_blas_dgemv(CblasNoTrans, -1.0, X, w, 1.0, r);
    double rss;
    gsl_blas_ddot(r, r, &rss);
    coef[0] = sqrt(rss / m);
    gsl_matrix_free(X);
    gsl_matrix_free(A);
    gsl_vector_free(r);
    gsl_vector_free(b);
    gsl_vector_free(w);
    return 0;
}

void cal_prior_init(cal_prior *p) { memset(p, 0, sizeof *p); }

void cal_prior_add(cal_prior *p, const double coef[CAL_NFEAT], const unsigned char varied[CAL_NFEAT])
{
    p->misfit_sq += coef[0] * coef[0];
    for (int a = 0; a < CAL_NFEAT; a++)
        if (varied[a]) {
            p->sum_sq[a] += coef[a] * coef[a];
            p->count[a]++;
        }
    p->problems++;
}

void cal_prior_sd(const cal_prior *p, double fallback, double sd[CAL_NFEAT])
{
    for (int a = 0; a < CAL_NFEAT; a++)
        sd[a] = p->count[a] ? fmax(CAL_SD_MIN, sqrt(p->sum_sq[a] / p->count[a])) : fallback;
}

double cal_prior_noise(const cal_prior *p)
{
    return p->problems ? fmax(CAL_SD_MIN, sqrt(p->misfit_sq / p->problems)) : CAL_SD_MIN;
}

int cal_prior_of(const cm_set *s, const double *pred, const unsigned char *use, double fallback,
                 double out[CAL_NFEAT])
{
    cal_prior prior;
    cal_prior_init(&prior);
    double coef[CAL_NFEAT];
    unsigned char varied[CAL_NFEAT];
    for (int k = 0; k < s->nproblems; k++)
        if (use[k] && cal_residual_effects(s, k, pred, coef, varied) == 0) cal_prior_add(&prior, coef, varied);
    int n = prior.problems;
    if (n) {
        cal_prior_sd(&prior, fallback, out);
        out[0] = cal_prior_noise(&prior);
    }
    return n;
}
