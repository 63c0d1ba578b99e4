/*
 * gp.h - the Gaussian-process regression model behind the GP searcher
 * (search/gp.c), exposed to search/ and to tests/test_gp.c.
 *
 * Zero prior mean (the caller standardises its targets), Matern 5/2 kernel
 * with one length scale per input dimension (ARD), a signal variance and a
 * Gaussian noise variance. The hyperparameters live in theta as logarithms:
 * theta[0..d-1] length scales, theta[d] signal variance, theta[d+1] noise
 * variance, each kept inside the box below (values outside are clamped).
 */
#ifndef TUNE_GP_H
#define TUNE_GP_H

#include <stddef.h>

#include <gsl/gsl_multimin.h>
#include <gsl/gsl_rng.h>

#include "base/base.h"

/*
 * The hyperparameter box, for inputs in the unit cube and standardised
 * targets. The noise floor keeps K positive definite in floating point for
 * the at most TUNEP_GP_MAX_POINTS rows a model holds: its smallest eigenvalue
 * is >= 1e-6 while ||K|| <= n * 20, a ratio far above Cholesky's n * eps.
 */
#define TUNEP_GP_LOG_LS_MIN    (-4.605170185988091)  /* log 0.01 */
#define TUNEP_GP_LOG_LS_MAX    (3.4011973816621555)  /* log 30 */
#define TUNEP_GP_LOG_SF2_MIN   (-2.995732273553991)  /* log 0.05 */
#define TUNEP_GP_LOG_SF2_MAX   (2.995732273553991)   /* log 20 */
#define TUNEP_GP_LOG_NOISE_MIN (-13.815510557964274) /* log 1e-6 */
#define TUNEP_GP_LOG_NOISE_MAX (0.0)                 /* log 1 */

/* Rows a model holds (observations plus imputed pending points): O(n^3) per fit beyond. */
#define TUNEP_GP_MAX_POINTS 1000
/* Inputs (features) a model takes: one per parameter, one per value of a choice. */
#define TUNEP_GP_MAX_DIMS 256

struct tunep_gp_model {
    size_t d;      /* input dimension */
    size_t n, cap; /* rows in use, rows allocated */
    double *x;     /* cap x d inputs, row-major */
    double *y;     /* cap targets */
    double *theta; /* d + 2 log hyperparameters */
    double *l;     /* cap x cap: lower triangle holds the Cholesky factor after condition() */
    double *alpha; /* K^-1 y after condition() */
    double *work;  /* cap x cap scratch: K, then its inverse, while fitting */
    double *grad;  /* d + 2 scratch */
    double *kstar; /* cap x TUNEP_GP_BATCH scratch for predict() */
    double *cand;  /* TUNEP_GP_BATCH x d scratch: scaled inputs */
    double *best;  /* d + 2: best theta of a fit */
    gsl_multimin_fdfminimizer *opt; /* allocated by GSL once, in init */
    int conditioned;
};

#define TUNEP_GP_BATCH 256 /* points per predict() block: n x 256 doubles of scratch */

/* theta starts at the defaults (length scales 0.3, signal 1, noise 1e-3). */
tune_status tunep_gp_model_init(struct tunep_gp_model *m, size_t d, tune_error *err);
void tunep_gp_model_done(struct tunep_gp_model *m);
/* Room for n rows (n <= TUNEP_GP_MAX_POINTS); keeps the rows in use. */
tune_status tunep_gp_model_reserve(struct tunep_gp_model *m, size_t n, tune_error *err);
/* Log marginal likelihood of the first m->n rows at theta; grad (d + 2) when not NULL. */
double tunep_gp_model_lml(struct tunep_gp_model *m, const double *theta, double *grad);
/*
 * Maximises the log marginal likelihood over theta (GSL's vector_bfgs2 with
 * the analytic gradient, at most max_iter iterations per start) from
 * n_starts starting points: the current theta, then the defaults, then
 * random points drawn from r. Keeps the best in m->theta.
 */
void tunep_gp_model_fit(struct tunep_gp_model *m, gsl_rng *r, int n_starts, int max_iter);
/* Factorises K for the current theta and rows; predictions need it. */
void tunep_gp_model_condition(struct tunep_gp_model *m);
/* Posterior mean and variance of the latent function at k points xs (k x d). */
void tunep_gp_model_predict(struct tunep_gp_model *m, const double *xs, size_t k, double *mu,
                            double *var);

#endif /* TUNE_GP_H */
