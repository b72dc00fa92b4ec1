/* The yardsticks of search: the static list (configs ranked by geomean slowdown over training
 * problems) and the exact expectation of random search. */
#include "results/yardstick.h"
#include "common/util.h"

#include <math.h>
#include <stdlib.h>

typedef struct scored {
    double score;
    int index;
} scored;

static int cmp_scored(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    /* +inf (unscored) sorts last; among equals the lower index first */
    if (x->score != y->score) return x->score < y->score ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static int measured(double t) { return isfinite(t) && t > 0; }

int ys_static_rank(const double *time, int nproblems, int nconfigs, const int *train, int *order, double *score)
{
    RG_ASSERT(nproblems >= 0 && nconfigs >= 0);
    scored *s = rg_xmalloc((size_t)(nconfigs ? nconfigs : 1) * sizeof *s);
    for (int c = 0; c < nconfigs; c++) s[c] = (scored){0, c};
    int ntrain = 0;
    for (int q = 0; q < nproblems; q++) {
        if (!train[q]) continue;
        const double *row = time + (size_t)q * (size_t)nconfigs;
        double oracle = INFINITY;
        for (int c = 0; c < nconfigs; c++)
            if (measured(row[c])) oracle = fmin(oracle, row[c]);
        if (!isfinite(oracle)) continue;   /* nothing measured there: it says nothing */
        ntrain++;
        for (int c = 0; c < nconfigs; c++)
            s[c].score = measured(row[c]) ? s[c].score + log(row[c] / oracle) : INFINITY;
    }
    int nscored = 0;
    for (int c = 0; c < nconfigs; c++) {
        /* without any training problem no config has earned a place */
        if (ntrain == 0) s[c].score = INFINITY;
        else if (isfinite(s[c].score)) s[c].score /= ntrain;
        nscored += isfinite(s[c].score);
    }
    qsort(s, (size_t)nconfigs, sizeof *s, cmp_scored);
    for (int k = 0; k < nconfigs; k++) {
        order[k] = s[k].index;
        if (score) score[s[k].index] = s[k].score;
    }
    free(s);
    return nscored;
}

double ys_random_expected(const double *sorted, int n, int t)
{
    RG_ASSERT(t >= 1 && t <= n);
    /* p = P(the minimum is value i): t/n for i = 0, then p(i+1) = p(i) (n-i-t) / (n-i-1), a
     * product of ratios that stays exact where the binomials themselves would overflow */
    double p = (double)t / n, e = 0;
    for (int i = 0; i <= n - t; i++) {
        e += p * sorted[i];
        if (i + 1 <= n - t) p *= (double)(n - i - t) / (double)(n - i - 1);
    }
    return e;
}
