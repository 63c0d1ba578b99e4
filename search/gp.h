/*
 * gp.h - the Gaussian-process regression model behind the GP searcher
 * (search/gp.c), exposed to search/ and to tests/test_gp.c.
 *
 * Zero prior mean (the caller standardises its targets), Matern 5/2 kernel
 * with one length scale per input dimension (ARD), a signal variance and a
 * Gaussian noise variance. The hyperparameters live in theta as logarithms:
 * theta[0..d-1] length scales, theta[d] signal variance, theta[d+1] noise
 * variance, each kept inside the box below (values outside are clamped).
 * Fits maximise the log marginal likelihood plus the log prior density of
 * tunep_gp_model_log_prior() (a MAP estimate, as Optuna's GPSampler makes).
 */
#ifndef TUNE_GP_H
#define TUNE_GP_H

#include <stddef.h>

#include <gsl/gsl_multimin.h>
#include <gsl/gsl_rng.h>

#include "base/base.h"
#include "space.h"

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
    /* d flags, 0 after init; 1: input t is categorical, its part of the squared distance
     * 1 when two values differ and 0 when they are equal (Hamming) instead of their
     * squared difference; predict_grad's gradient in it is 0 */
    unsigned char *cat;
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
 * Log prior density of the hyperparameters (up to a constant), as functions
 * of the values, not of their logarithms: for each inverse squared length
 * scale q = 1 / l^2, -0.1 (q + 1 / q), which peaks at l = 1 (the width of
 * the cube) and keeps l within ~[0.1, 10] unless the data insist; a
 * Gamma(2, 1) signal variance; a Gamma(1.1, 30) noise variance. These are
 * Optuna 5.0's GPSampler priors. theta is clamped into the box first; its
 * gradient in theta is added into grad (d + 2) when not NULL, 0 where the
 * box holds a coordinate.
 */
double tunep_gp_model_log_prior(size_t d, const double *theta, double *grad);
/*
 * Maximises the log marginal likelihood plus the log prior over theta (GSL's
 * vector_bfgs2 with the analytic gradient, at most max_iter iterations per
 * start) from n_starts starting points: the current theta, then the
 * defaults, then random points drawn from r. Keeps the best in m->theta.
 */
void tunep_gp_model_fit(struct tunep_gp_model *m, gsl_rng *r, int n_starts, int max_iter);
/* theta back at the defaults. */
void tunep_gp_model_reset(struct tunep_gp_model *m);
/* Factorises K for the current theta and rows; predictions need it. */
void tunep_gp_model_condition(struct tunep_gp_model *m);
/* Posterior mean and variance of the latent function at k points xs (k x d). */
void tunep_gp_model_predict(struct tunep_gp_model *m, const double *xs, size_t k, double *mu,
                            double *var);
/*
 * Posterior mean and variance at one point x (d), and their gradients in x
 * into dmu and dvar (d each) when those are not NULL; where the variance is
 * held at its floor (1e-12 signal variances) its gradient is 0.
 */
void tunep_gp_model_predict_grad(struct tunep_gp_model *m, const double *x, double *mu, double *var,
                                 double *dmu, double *dvar);

/*
 * log h(z), h(z) = z Phi(z) + phi(z) = E[max(0, z + N(0, 1))], accurate far
 * into the lower tail where h underflows (z < -38); d log h / dz = Phi(z) / h(z)
 * into dlogh when not NULL.
 */
double tunep_gp_log_h(double z, double *dlogh);
/*
 * log expected improvement over f_best of a maximisation with posterior
 * N(mu, var): log sd + log h((mu - f_best) / sd); its partial derivatives in
 * mu and var into d_mu and d_var when not NULL.
 */
double tunep_gp_log_ei(double mu, double var, double f_best, double *d_mu, double *d_var);

/*
 * The GP searcher's acquisition optimiser, on any function of a space's unit
 * cube (tests give it known ones). Continuous coordinates (uniform,
 * log-uniform, normal) move by projected L-BFGS within [0, 1), in units of
 * a length scale per coordinate; discrete ones (integers, q values, choices)
 * from value to value: all of them when there are at most 16, else by a
 * pattern search. A local search alternates the two until a whole round
 * changes nothing (Optuna's local_search_mixed).
 */
struct tunep_gp_opt;
/* f at unit point u (dims, discrete coordinates snapped); with grad (dims), its gradient in u
 * there (only the continuous coordinates' entries are read). */
typedef double (*tunep_gp_opt_fn)(void *ctx, const double *u, double *grad);
tune_status tunep_gp_opt_new(const tune_space *space, struct tunep_gp_opt **ret, tune_error *err);
void tunep_gp_opt_free(struct tunep_gp_opt *o);
/* Discrete coordinates of u (dims) moved onto the unit point of their value. */
void tunep_gp_opt_snap(const struct tunep_gp_opt *o, double *u);
/*
 * A local search for the maximum of f from u (snapped), which it leaves at
 * the end point; returns f there. scale (dims): the length scale of each
 * continuous coordinate, in unit-cube units.
 */
double tunep_gp_opt_local(struct tunep_gp_opt *o, tunep_gp_opt_fn f, void *ctx, const double *scale,
                          double *u);

#endif /* TUNE_GP_H */
