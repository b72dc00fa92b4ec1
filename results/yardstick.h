/* The yardsticks every search evaluation compares with: the static list (the one definition of the
 * "fixed strategy" of the fit, the replay and the report) and random search's exact expectation. */
#ifndef YS_YARDSTICK_H
#define YS_YARDSTICK_H

/* The static list. time[q * nconfigs + c]: config c's time on problem q, NaN (or <= 0) where it was
 * not measured. Each training problem (train[q] != 0) with a measurement is scored against its own
 * oracle (its fastest config); a config's score is its mean log(time / oracle) over them (the log of
 * its geomean slowdown), and only configs measured on every such problem get one. order[0..nconfigs)
 * receives the configs: the scored ones best first (ties: lower index), then the rest by index;
 * score (may be NULL) receives each config's score (+inf when unscored). Returns how many configs
 * are scored. Leave the held-out problem out of train[] and the list is out-of-sample. */
int ys_static_rank(const double *time, int nproblems, int nconfigs, const int *train, int *order, double *score);

/* Random search's expected best after t uniform draws without replacement from n values sorted
 * ascending (exact: value i is the minimum with probability C(n-1-i, t-1) / C(n, t)). 1 <= t <= n. */
double ys_random_expected(const double *sorted, int n, int t);

#endif
