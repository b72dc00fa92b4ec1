/* The Bayesian-optimisation search's config encoding and its prior, calibrated on held-out problems:
 * how far the cost model's predictions were off, feature by feature, on problems it did not see. */
#ifndef CAL_CALIB_H
#define CAL_CALIB_H

#include "explorer/costmodel.h"

/* The encoding: an intercept, the key table's one-hot bits (cfg_features) and their pairs (the
 * model file names them: cm_bo_feature_name). */
#define CAL_NFEAT CM_BO_NFEAT
void cal_features(const cg_config *c, double x[CAL_NFEAT]);

/* How wrong the predictions pred[] (one per sample of s, NaN: none) were on problem q, feature by
 * feature: a ridge fit of the residual log time (measured minus predicted, centred over the
 * problem) on the encoding, coef[j] for feature j >= 1; coef[0] receives the misfit, the rms
 * residual the fit leaves (what no weight of the encoding can express: the surrogate's noise).
 * varied[j] receives whether feature j takes both values among the problem's samples (its
 * coefficient says something only then). -1 when fewer than CAL_MIN_ROWS samples have a
 * prediction. */
#define CAL_MIN_ROWS 10
int cal_residual_effects(const cm_set *s, int q, const double *pred, double coef[CAL_NFEAT],
                         unsigned char varied[CAL_NFEAT]);

/* A prior under construction: the training problems' squared effects, per feature. */
typedef struct cal_prior {
    double sum_sq[CAL_NFEAT];  /* over the problems where feature j varied */
    int count[CAL_NFEAT];
    double misfit_sq;          /* sum of the training problems' squared misfits */
    int problems;
} cal_prior;
void cal_prior_init(cal_prior *p);
void cal_prior_add(cal_prior *p, const double coef[CAL_NFEAT], const unsigned char varied[CAL_NFEAT]);
/* The prior sd of each weight (sd[0], the intercept's, is left to the caller): the root mean square
 * of the training problems' effects, the variance a normal prior on the effect would have, at
 * least CAL_SD_MIN; fallback where no training problem varied the feature. */
#define CAL_SD_MIN 0.02
void cal_prior_sd(const cal_prior *p, double fallback, double sd[CAL_NFEAT]);
/* The noise sd of the surrogate: the rms misfit of the training problems, at least CAL_SD_MIN. */
double cal_prior_noise(const cal_prior *p);

/* The whole prior from the problems of s that use[] marks, with the held-out predictions pred[] (one
 * per sample): out[0] the noise sd, out[j] weight j's sd (fallback where no problem varied it).
 * Returns how many problems it was calibrated on (0: none could be; out is left alone). */
int cal_prior_of(const cm_set *s, const double *pred, const unsigned char *use, double fallback,
                 double out[CAL_NFEAT]);

#endif
