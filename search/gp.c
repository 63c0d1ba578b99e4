/*
 * gp.c - Gaussian-process Bayesian optimisation (Rasmussen and Williams 2006,
 * ch. 2 and 5; Jones, Schonlau and Welch 1998 for expected improvement), as
 * Optuna 5.0's GPSampler does it.
 *
 * Each parameter is one input: its coordinate of the unit cube (unit.c;
 * log ranges in log space, integers and q values at the centre of their
 * cell, a choice at the centre of its value's cell). A choice's input counts
 * two different values as one length scale apart however far their cells
 * are (Hamming distance). The model is a zero-mean GP on standardised
 * scores (the constant mean is the mean of the observations) with a Matern
 * 5/2 ARD kernel; its log length scales, signal and noise variances
 * maximise the log marginal likelihood plus Optuna's log prior (gp.h), by
 * BFGS with the analytic gradient from the defaults (from the last fit past
 * FIT_CHEAP observations).
 * Without the prior, an input whose effect is small next to another's gets
 * an unbounded length scale and the search stops moving it.
 * A suggestion maximises log expected improvement over the best standardised
 * observation: n_candidates points of a freshly scrambled Sobol sequence,
 * then local searches (continuous inputs by projected L-BFGS with the
 * analytic gradient, discrete ones value by value) from the best candidate,
 * from N_LOCAL - 2 drawn in proportion to their EI and from the best
 * observation. The first n_startup_trials ids take points of a scrambled
 * Sobol design (qmc.c). Pending trials are imputed with the worst observed
 * score (constant liar, Ginsbourger et al. 2010) after fitting, so parallel
 * suggestions repel each other. A -inf score (failed metric) counts as the
 * worst finite one. Cholesky factors come from gsl_linalg_cholesky_decomp1,
 * whose failure would call GSL's aborting error handler: the noise floor in
 * gp.h keeps every matrix it sees positive definite.
 */
#include "gp.h"

#include <math.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_sf_erf.h>

#include "qmc.h"
#include "searcher.h"

#define SQRT5             2.23606797749978969641
#define LOG_SQRT_2PI      0.91893853320467274178
#define DEFAULT_LOG_LS    (-1.2039728043259361) /* log 0.3: a third of the cube */
#define DEFAULT_LOG_NOISE (-6.907755278982137)  /* log 1e-3 */

/* ---- the model ------------------------------------------------------------ */

static double clampd(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* theta clamped into the box of gp.h */
static void clamp_theta(size_t d, const double *theta, double *out)
{
    for (size_t k = 0; k < d; k++)
        out[k] = clampd(theta[k], TUNEP_GP_LOG_LS_MIN, TUNEP_GP_LOG_LS_MAX);
    out[d] = clampd(theta[d], TUNEP_GP_LOG_SF2_MIN, TUNEP_GP_LOG_SF2_MAX);
    out[d + 1] = clampd(theta[d + 1], TUNEP_GP_LOG_NOISE_MIN, TUNEP_GP_LOG_NOISE_MAX);
}

static void theta_default(size_t d, double *theta)
{
    for (size_t k = 0; k < d; k++)
        theta[k] = DEFAULT_LOG_LS;
    theta[d] = 0.0;
    theta[d + 1] = DEFAULT_LOG_NOISE;
}

static void model_free_buffers(struct tunep_gp_model *m)
{
    tunep_free(m->x);
    tunep_free(m->y);
    tunep_free(m->l);
    tunep_free(m->alpha);
    tunep_free(m->work);
    tunep_free(m->kstar);
    m->x = m->y = m->l = m->alpha = m->work = m->kstar = NULL;
}

tune_status tunep_gp_model_init(struct tunep_gp_model *m, size_t d, tune_error *err)
{
    memset(m, 0, sizeof *m);
    if (d > TUNEP_GP_MAX_DIMS)
        return tunep_error_set(err, TUNE_EINVAL, "a Gaussian process takes at most %d inputs",
                               TUNEP_GP_MAX_DIMS);
    m->d = d;
    m->theta = tunep_calloc(d + 2, sizeof *m->theta);
    m->grad = tunep_calloc(d + 2, sizeof *m->grad);
    m->best = tunep_calloc(d + 2, sizeof *m->best);
    m->cand = tunep_calloc(TUNEP_GP_BATCH * (d ? d : 1), sizeof *m->cand);
    m->cat = tunep_calloc(d ? d : 1, sizeof *m->cat);
    if (!m->theta || !m->grad || !m->best || !m->cand || !m->cat) {
        tunep_gp_model_done(m);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory for a Gaussian process");
    }
    theta_default(d, m->theta);
    /* GSL allocates this one with malloc (a real OOM goes through GSL's handler) */
    m->opt = gsl_multimin_fdfminimizer_alloc(gsl_multimin_fdfminimizer_vector_bfgs2, d + 2);
    if (!m->opt) {
        tunep_gp_model_done(m);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory for a Gaussian process");
    }
    return TUNE_OK;
}

void tunep_gp_model_done(struct tunep_gp_model *m)
{
    if (!m)
        return;
    model_free_buffers(m);
    tunep_free(m->theta);
    tunep_free(m->grad);
    tunep_free(m->best);
    tunep_free(m->cand);
    tunep_free(m->cat);
    if (m->opt)
        gsl_multimin_fdfminimizer_free(m->opt);
    memset(m, 0, sizeof *m);
}

tune_status tunep_gp_model_reserve(struct tunep_gp_model *m, size_t n, tune_error *err)
{
    if (n > TUNEP_GP_MAX_POINTS)
        return tunep_error_set(err, TUNE_EINVAL, "a Gaussian process holds at most %d points",
                               TUNEP_GP_MAX_POINTS);
    if (n <= m->cap)
        return TUNE_OK;
    size_t cap = m->cap ? m->cap : 16;
    while (cap < n)
        cap *= 2;
    if (cap > TUNEP_GP_MAX_POINTS)
        cap = TUNEP_GP_MAX_POINTS;
    size_t d = m->d ? m->d : 1;
    double *x = tunep_malloc(cap * d * sizeof *x);
    double *y = tunep_malloc(cap * sizeof *y);
    double *l = tunep_malloc(cap * cap * sizeof *l);
    double *alpha = tunep_malloc(cap * sizeof *alpha);
    double *work = tunep_malloc(cap * cap * sizeof *work);
    double *kstar = tunep_malloc(cap * TUNEP_GP_BATCH * sizeof *kstar);
    if (!x || !y || !l || !alpha || !work || !kstar) {
        tunep_free(x);
        tunep_free(y);
        tunep_free(l);
        tunep_free(alpha);
        tunep_free(work);
        tunep_free(kstar);
        return tunep_error_set(err, TUNE_ENOMEM,
                               "out of memory for a Gaussian process of %zu points", n);
    }
    if (m->n > 0) {
        memcpy(x, m->x, m->n * m->d * sizeof *x);
        memcpy(y, m->y, m->n * sizeof *y);
    }
    model_free_buffers(m);
    m->x = x;
    m->y = y;
    m->l = l;
    m->alpha = alpha;
    m->work = work;
    m->kstar = kstar;
    m->cap = cap;
    m->conditioned = 0;
    return TUNE_OK;
}

/*
 * K (n x n, stride n) for clamped theta tc into k, Matern 5/2:
 * sf2 (1 + s + s^2 / 3) e^-s with s = sqrt(5) r, r the length-scaled distance.
 * When aux is not NULL it keeps what the gradient needs: s_ij below the
 * diagonal, sf2 e^-s_ij above.
 */
static void build_k(const struct tunep_gp_model *m, const double *tc, double *k, double *aux)
{
    size_t n = m->n, d = m->d;
    double sf2 = exp(tc[d]), noise = exp(tc[d + 1]);
    double inv_ls[TUNEP_GP_MAX_DIMS];
    for (size_t t = 0; t < d; t++)
        inv_ls[t] = exp(-tc[t]);
    for (size_t i = 0; i < n; i++) {
        const double *xi = m->x + i * d;
        for (size_t j = 0; j < i; j++) {
            const double *xj = m->x + j * d;
            double r2 = 0.0;
            for (size_t t = 0; t < d; t++) {
                double z = (m->cat[t] ? xi[t] != xj[t] : xi[t] - xj[t]) * inv_ls[t];
                r2 += z * z;
            }
            double s = SQRT5 * sqrt(r2), e = sf2 * exp(-s);
            k[i * n + j] = k[j * n + i] = e * (1.0 + s + s * s / 3.0);
            if (aux) {
                aux[i * n + j] = s;
                aux[j * n + i] = e;
            }
        }
        k[i * n + i] = sf2 + noise;
    }
}

/* Cholesky of k in place (lower triangle) and alpha = K^-1 y; returns log det K. */
static double factor(const struct tunep_gp_model *m, double *k, double *alpha)
{
    size_t n = m->n;
    gsl_matrix_view kv = gsl_matrix_view_array(k, n, n);
    gsl_linalg_cholesky_decomp1(&kv.matrix);
    gsl_vector_view av = gsl_vector_view_array(alpha, n);
    memcpy(alpha, m->y, n * sizeof *alpha);
    gsl_blas_dtrsv(CblasLower, CblasNoTrans, CblasNonUnit, &kv.matrix, &av.vector);
    gsl_blas_dtrsv(CblasLower, CblasTrans, CblasNonUnit, &kv.matrix, &av.vector);
    double logdet = 0.0;
    for (size_t i = 0; i < n; i++)
        logdet += 2.0 * log(k[i * n + i]);
    return logdet;
}

double tunep_gp_model_lml(struct tunep_gp_model *m, const double *theta, double *grad)
{
    size_t n = m->n, d = m->d;
    double tc[TUNEP_GP_MAX_DIMS + 2];
    clamp_theta(d, theta, tc);
    m->conditioned = 0; /* l and alpha are scratch here */
    if (n == 0) {
        if (grad)
            memset(grad, 0, (d + 2) * sizeof *grad);
        return 0.0;
    }
    double *k = m->work, *aux = m->l, *alpha = m->alpha;
    build_k(m, tc, k, grad ? aux : NULL);
    double logdet = factor(m, k, alpha);
    double fit = 0.0;
    for (size_t i = 0; i < n; i++)
        fit += m->y[i] * alpha[i];
    double lml = -0.5 * fit - 0.5 * logdet - (double)n * LOG_SQRT_2PI;
    if (!grad)
        return lml;

    /* dL/dtheta_k = 1/2 tr((alpha alpha^T - K^-1) dK/dtheta_k) (R&W eq. 5.9) */
    gsl_matrix_view kv = gsl_matrix_view_array(k, n, n);
    gsl_linalg_cholesky_invert(&kv.matrix); /* K^-1; we read its lower triangle */
    double sf2 = exp(tc[d]), noise = exp(tc[d + 1]);
    double inv_ls[TUNEP_GP_MAX_DIMS];
    for (size_t t = 0; t < d; t++)
        inv_ls[t] = exp(-tc[t]);
    memset(grad, 0, (d + 2) * sizeof *grad);
    double trace_w = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double *xi = m->x + i * d;
        for (size_t j = 0; j < i; j++) {
            const double *xj = m->x + j * d;
            double w = alpha[i] * alpha[j] - k[i * n + j];
            double s = aux[i * n + j], e = aux[j * n + i];
            /* dK/dlog ls_t = sf2 (5/3) (1 + s) e^-s (dx_t / ls_t)^2; dK/dlog sf2 = K - noise I */
            double g = w * e * (1.0 + s) * (5.0 / 3.0);
            for (size_t t = 0; t < d; t++) {
                double z = (m->cat[t] ? xi[t] != xj[t] : xi[t] - xj[t]) * inv_ls[t];
                grad[t] += g * z * z;
            }
            grad[d] += w * e * (1.0 + s + s * s / 3.0);
        }
        trace_w += alpha[i] * alpha[i] - k[i * n + i];
    }
    grad[d] += 0.5 * trace_w * sf2;
    grad[d + 1] = 0.5 * trace_w * noise;
    /* a coordinate held by the box does not move the likelihood */
    for (size_t t = 0; t < d + 2; t++)
        if (tc[t] != theta[t])
            grad[t] = 0.0;
    return lml;
}

/* ---- fitting ------------------------------------------------------------ */

/*
 * BFGS runs on z with theta = lo + (hi - lo) sigmoid(z) per coordinate, so
 * the box of gp.h holds without kinks: a likelihood that wants the noise
 * below its floor (noiseless objectives do) sees a gradient that fades as z
 * goes to -inf instead of a wall that stalls the line search.
 */
static void box(size_t d, size_t t, double *lo, double *hi)
{
    if (t < d) {
        *lo = TUNEP_GP_LOG_LS_MIN;
        *hi = TUNEP_GP_LOG_LS_MAX;
    } else if (t == d) {
        *lo = TUNEP_GP_LOG_SF2_MIN;
        *hi = TUNEP_GP_LOG_SF2_MAX;
    } else {
        *lo = TUNEP_GP_LOG_NOISE_MIN;
        *hi = TUNEP_GP_LOG_NOISE_MAX;
    }
}

/* z -> theta, and dtheta/dz into dt when not NULL */
static void z_to_theta(size_t d, const double *z, double *theta, double *dt)
{
    for (size_t t = 0; t < d + 2; t++) {
        double lo, hi;
        box(d, t, &lo, &hi);
        double sg = 1.0 / (1.0 + exp(-z[t]));
        theta[t] = lo + (hi - lo) * sg;
        if (dt)
            dt[t] = (hi - lo) * sg * (1.0 - sg);
    }
}

static void theta_to_z(size_t d, const double *theta, double *z)
{
    for (size_t t = 0; t < d + 2; t++) {
        double lo, hi;
        box(d, t, &lo, &hi);
        double p = clampd((theta[t] - lo) / (hi - lo), 1e-6, 1.0 - 1e-6);
        z[t] = log(p / (1.0 - p));
    }
}

double tunep_gp_model_log_prior(size_t d, const double *theta, double *grad)
{
    double tc[TUNEP_GP_MAX_DIMS + 2], lp = 0.0;
    clamp_theta(d, theta, tc);
    for (size_t k = 0; k < d; k++) {
        /* q = 1 / l^2 = e^(-2 theta): -0.1 (q + 1 / q) */
        double q = exp(-2.0 * tc[k]), inv_q = exp(2.0 * tc[k]);
        lp -= 0.1 * (q + inv_q);
        if (grad && tc[k] == theta[k])
            grad[k] += 0.2 * (q - inv_q);
    }
    /* Gamma(a, b) of v = e^theta: (a - 1) theta - b v, derivative (a - 1) - b v */
    double sf2 = exp(tc[d]), noise = exp(tc[d + 1]);
    lp += tc[d] - sf2 + 0.1 * tc[d + 1] - 30.0 * noise;
    if (grad && tc[d] == theta[d])
        grad[d] += 1.0 - sf2;
    if (grad && tc[d + 1] == theta[d + 1])
        grad[d + 1] += 0.1 - 30.0 * noise;
    return lp;
}

/* GSL hands us views of its own vectors: contiguous, so data[] is the vector */
static double obj_f(const gsl_vector *z, void *params)
{
    struct tunep_gp_model *m = params;
    double theta[TUNEP_GP_MAX_DIMS + 2];
    z_to_theta(m->d, z->data, theta, NULL);
    double v = -tunep_gp_model_lml(m, theta, NULL) - tunep_gp_model_log_prior(m->d, theta, NULL);
    return isfinite(v) ? v : 1e300;
}

static void obj_fdf(const gsl_vector *z, void *params, double *f, gsl_vector *g)
{
    struct tunep_gp_model *m = params;
    double theta[TUNEP_GP_MAX_DIMS + 2], dt[TUNEP_GP_MAX_DIMS + 2];
    z_to_theta(m->d, z->data, theta, dt);
    double v = -tunep_gp_model_lml(m, theta, m->grad);
    v -= tunep_gp_model_log_prior(m->d, theta, m->grad);
    for (size_t t = 0; t < m->d + 2; t++)
        gsl_vector_set(g, t, -m->grad[t] * dt[t]);
    *f = isfinite(v) ? v : 1e300;
}

static void obj_df(const gsl_vector *z, void *params, gsl_vector *g)
{
    double f;
    obj_fdf(z, params, &f, g);
}

/* One BFGS run from theta0; returns -lml at its end, theta in out. */
static double minimise(struct tunep_gp_model *m, const double *theta0, int max_iter, double *out)
{
    size_t np = m->d + 2;
    double z0[TUNEP_GP_MAX_DIMS + 2];
    theta_to_z(m->d, theta0, z0);
    gsl_multimin_function_fdf fn = {obj_f, obj_df, obj_fdf, np, m};
    gsl_vector_view x0 = gsl_vector_view_array(z0, np);
    /* first step 0.5 in z; line-search tolerance 0.1, as GSL advises for bfgs2 */
    gsl_multimin_fdfminimizer_set(m->opt, &fn, &x0.vector, 0.5, 0.1);
    /* the likelihood grows with n: a gradient of 1e-3 per point moves it by nothing that matters */
    double gtol = 1e-3 * (double)(m->n > 10 ? m->n : 10);
    for (int it = 0; it < max_iter; it++) {
        /* tested first: a warm start is often optimal already */
        if (gsl_multimin_test_gradient(m->opt->gradient, gtol) == GSL_SUCCESS)
            break;
        if (gsl_multimin_fdfminimizer_iterate(m->opt) != GSL_SUCCESS)
            break;
    }
    z_to_theta(m->d, gsl_multimin_fdfminimizer_x(m->opt)->data, out, NULL);
    return gsl_multimin_fdfminimizer_minimum(m->opt);
}

void tunep_gp_model_fit(struct tunep_gp_model *m, gsl_rng *r, int n_starts, int max_iter)
{
    size_t d = m->d, np = d + 2;
    double start[TUNEP_GP_MAX_DIMS + 2], end[TUNEP_GP_MAX_DIMS + 2];
    double best_f = HUGE_VAL;
    memcpy(m->best, m->theta, np * sizeof *m->best);
    if (m->n < 2)
        return;
    for (int s = 0; s < n_starts; s++) {
        if (s == 0) {
            memcpy(start, m->theta, np * sizeof *start); /* warm start */
        } else if (s == 1) {
            theta_default(d, start);
            if (memcmp(start, m->theta, np * sizeof *start) == 0)
                continue; /* that is where the first start was */
        } else {
            for (size_t t = 0; t < d; t++)
                start[t] = log(0.05) + gsl_rng_uniform(r) * (log(2.0) - log(0.05));
            start[d] = gsl_rng_uniform(r) * 2.0 - 1.0;
            start[d + 1] = log(1e-5) + gsl_rng_uniform(r) * (log(1e-1) - log(1e-5));
        }
        double f = minimise(m, start, max_iter, end);
        if (f < best_f) {
            best_f = f;
            memcpy(m->best, end, np * sizeof *m->best);
        }
    }
    clamp_theta(d, m->best, m->theta);
    m->conditioned = 0;
}

void tunep_gp_model_reset(struct tunep_gp_model *m)
{
    theta_default(m->d, m->theta);
    m->conditioned = 0;
}

void tunep_gp_model_condition(struct tunep_gp_model *m)
{
    double tc[TUNEP_GP_MAX_DIMS + 2];
    clamp_theta(m->d, m->theta, tc);
    if (m->n > 0) {
        build_k(m, tc, m->l, NULL);
        factor(m, m->l, m->alpha);
    }
    m->conditioned = 1;
}

void tunep_gp_model_predict(struct tunep_gp_model *m, const double *xs, size_t k, double *mu,
                            double *var)
{
    size_t n = m->n, d = m->d;
    double tc[TUNEP_GP_MAX_DIMS + 2];
    clamp_theta(d, m->theta, tc);
    double sf2 = exp(tc[d]);
    if (!m->conditioned)
        tunep_gp_model_condition(m);
    if (n == 0) {
        for (size_t c = 0; c < k; c++) {
            mu[c] = 0.0;
            var[c] = sf2;
        }
        return;
    }
    double inv_ls[TUNEP_GP_MAX_DIMS], xsi[TUNEP_GP_MAX_DIMS];
    for (size_t t = 0; t < d; t++)
        inv_ls[t] = exp(-tc[t]);
    gsl_matrix_view lv = gsl_matrix_view_array(m->l, n, n);
    gsl_vector_view av = gsl_vector_view_array(m->alpha, n);
    for (size_t c0 = 0; c0 < k; c0 += TUNEP_GP_BATCH) {
        size_t b = k - c0 < TUNEP_GP_BATCH ? k - c0 : TUNEP_GP_BATCH;
        for (size_t c = 0; c < b; c++)
            for (size_t t = 0; t < d; t++)
                m->cand[c * d + t] = xs[(c0 + c) * d + t] * inv_ls[t];
        for (size_t i = 0; i < n; i++) {
            const double *xi = m->x + i * d;
            for (size_t t = 0; t < d; t++)
                xsi[t] = xi[t] * inv_ls[t];
            for (size_t c = 0; c < b; c++) {
                const double *xc = m->cand + c * d;
                double r2 = 0.0;
                for (size_t t = 0; t < d; t++) {
                    double z = m->cat[t] ? (xsi[t] != xc[t]) * inv_ls[t] : xsi[t] - xc[t];
                    r2 += z * z;
                }
                double s = SQRT5 * sqrt(r2);
                m->kstar[i * b + c] = sf2 * (1.0 + s + s * s / 3.0) * exp(-s);
            }
        }
        /* mu = K*^T alpha; var = sf2 - |L^-1 K*|^2 column by column */
        gsl_matrix_view ks = gsl_matrix_view_array(m->kstar, n, b);
        gsl_vector_view mv = gsl_vector_view_array(mu + c0, b);
        gsl_blas_dgemv(CblasTrans, 1.0, &ks.matrix, &av.vector, 0.0, &mv.vector);
        gsl_blas_dtrsm(CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, 1.0, &lv.matrix,
                       &ks.matrix);
        for (size_t c = 0; c < b; c++)
            var[c0 + c] = sf2;
        for (size_t i = 0; i < n; i++)
            for (size_t c = 0; c < b; c++)
                var[c0 + c] -= m->kstar[i * b + c] * m->kstar[i * b + c];
        for (size_t c = 0; c < b; c++)
            if (!(var[c0 + c] > 1e-12 * sf2))
                var[c0 + c] = 1e-12 * sf2;
    }
}

void tunep_gp_model_predict_grad(struct tunep_gp_model *m, const double *x, double *mu, double *var,
                                 double *dmu, double *dvar)
{
    size_t n = m->n, d = m->d;
    double tc[TUNEP_GP_MAX_DIMS + 2];
    clamp_theta(d, m->theta, tc);
    double sf2 = exp(tc[d]);
    if (!m->conditioned)
        tunep_gp_model_condition(m);
    if (dmu)
        memset(dmu, 0, d * sizeof *dmu);
    if (dvar)
        memset(dvar, 0, d * sizeof *dvar);
    if (n == 0) {
        *mu = 0.0;
        *var = sf2;
        return;
    }
    double inv_l2[TUNEP_GP_MAX_DIMS];
    for (size_t t = 0; t < d; t++)
        inv_l2[t] = exp(-2.0 * tc[t]);
    /* k* in ks, dk/d(r^2) in dk; then w = K^-1 k* in place of L^-1 k* */
    double *ks = m->kstar, *w = ks + n, *dk = w + n;
    double mean = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double *xi = m->x + i * d;
        double r2 = 0.0;
        for (size_t t = 0; t < d; t++) {
            double z = m->cat[t] ? x[t] != xi[t] : x[t] - xi[t];
            r2 += z * z * inv_l2[t];
        }
        double s = SQRT5 * sqrt(r2), e = sf2 * exp(-s);
        ks[i] = e * (1.0 + s + s * s / 3.0);
        dk[i] = -(5.0 / 6.0) * (1.0 + s) * e; /* smooth at r = 0, unlike dk/dr */
        mean += ks[i] * m->alpha[i];
    }
    gsl_matrix_view lv = gsl_matrix_view_array(m->l, n, n);
    gsl_vector_view wv = gsl_vector_view_array(w, n);
    memcpy(w, ks, n * sizeof *w);
    gsl_blas_dtrsv(CblasLower, CblasNoTrans, CblasNonUnit, &lv.matrix, &wv.vector);
    double v = sf2;
    for (size_t i = 0; i < n; i++)
        v -= w[i] * w[i];
    int floored = !(v > 1e-12 * sf2);
    *mu = mean;
    *var = floored ? 1e-12 * sf2 : v;
    if (!dmu && !dvar)
        return;
    if (dvar && !floored)
        gsl_blas_dtrsv(CblasLower, CblasTrans, CblasNonUnit, &lv.matrix, &wv.vector);
    /* d k*_i / dx_t = dk_i 2 (x_t - xi_t) / l_t^2;
     * dmu = sum alpha_i dk*_i, dvar = -2 sum w_i dk*_i */
    for (size_t i = 0; i < n; i++) {
        const double *xi = m->x + i * d;
        double cm = dmu ? 2.0 * dk[i] * m->alpha[i] : 0.0;
        double cv = dvar && !floored ? -4.0 * dk[i] * w[i] : 0.0;
        for (size_t t = 0; t < d; t++) {
            double z = m->cat[t] ? 0.0 : (x[t] - xi[t]) * inv_l2[t];
            if (dmu)
                dmu[t] += cm * z;
            if (dvar)
                dvar[t] += cv * z;
        }
    }
}

/* ---- expected improvement ------------------------------------------------- */

/*
 * h(z) = z Phi(z) + phi(z) directly while the two terms do not cancel much
 * (z >= -5: at most ~1.5 digits). Below, with x = -z and Mills' ratio
 * m(x) = Q(x) / phi(x) (GSL's hazard function is 1 / m), h = phi(x) g(x) with
 * g = 1 - x m(x) (the subtraction loses a factor x^2 of precision: 1e-13
 * at most); past x = 30 g comes from its asymptotic series
 * 1/x^2 - 3/x^4 + 15/x^6 - 105/x^8 + ... instead. d log h / dz = Phi(z) / h
 * = m / g there.
 */
double tunep_gp_log_h(double z, double *dlogh)
{
    if (z >= -5.0) {
        double cdf = 0.5 * erfc(-z / M_SQRT2), pdf = exp(-0.5 * z * z - LOG_SQRT_2PI);
        double h = z * cdf + pdf;
        if (dlogh)
            *dlogh = cdf / h;
        return log(h);
    }
    double x = -z, mills = 1.0 / gsl_sf_hazard(x), g;
    if (x <= 30.0) {
        g = 1.0 - x * mills;
    } else {
        /* sum over k of (-1)^k (2k + 1)!! t^(k+1), t = 1 / x^2: 9 terms reach 1e-16 at x = 30 */
        static const double c[9] = {1.0,      -3.0,     15.0,       -105.0,    945.0,
                                    -10395.0, 135135.0, -2027025.0, 34459425.0};
        double t = 1.0 / (x * x), sum = 0.0;
        for (int k = 8; k >= 0; k--)
            sum = c[k] + t * sum;
        g = t * sum;
    }
    if (dlogh)
        *dlogh = mills / g;
    return -0.5 * x * x - LOG_SQRT_2PI + log(g);
}

double tunep_gp_log_ei(double mu, double var, double f_best, double *d_mu, double *d_var)
{
    double sd = sqrt(var), z = (mu - f_best) / sd, dh;
    double v = log(sd) + tunep_gp_log_h(z, &dh);
    /* dz/dmu = 1 / sd; d/dvar: log sd gives 1 / (2 var), z gives -z / (2 var) */
    if (d_mu)
        *d_mu = dh / sd;
    if (d_var)
        *d_var = 0.5 * (1.0 - z * dh) / var;
    return v;
}

/* ---- the acquisition optimiser -------------------------------------------- */

#define GRID_MAX   16   /* discrete coordinates with at most this many values: tried in turn */
#define ROUNDS     100  /* rounds (a continuous move, then each discrete one) per local search */
#define CONT_ITERS 200  /* projected L-BFGS iterations per continuous move */
#define LBFGS_M    6    /* L-BFGS memory */
#define PGTOL      1e-3 /* projected gradient (per length scale) at which a move has converged */
#define UNIT_TOP   (1.0 - 0x1.0p-53) /* unit coordinates live in [0, 1) */

/* A unit coordinate: continuous (floats) or discrete (integers, q values, choices). */
struct coord {
    const struct tunep_param *p;
    int discrete;
    size_t n_grid;         /* discrete with at most GRID_MAX values: that many; else 0 */
    double grid[GRID_MAX]; /* their unit points, in order */
};

struct tunep_gp_opt {
    size_t dims, n_cont;
    struct coord *coord; /* dims */
    size_t *cont;        /* the continuous coordinates */
    tunep_gp_opt_fn fn;
    void *ctx;
    /* scratch: gu, un, w (dims each); sc, z, gz, zn, gn, dir (n_cont each); s, y (LBFGS_M x
     * n_cont each); rho, al (LBFGS_M each) */
    double *gu, *un, *w, *sc, *z, *gz, *zn, *gn, *dir, *s, *y, *rho, *al;
};

/*
 * The values of a discrete coordinate, when there are at most GRID_MAX:
 * walks u up from 0, each time bisecting for where the value changes (the
 * value is monotone in u; choices by index).
 */
static void find_grid(struct coord *c)
{
    const struct tunep_param *p = c->p;
    double u = 0.0;
    struct tunep_value vu, vt;
    tunep_space_value_at(p, UNIT_TOP, &vt);
    c->n_grid = 0;
    for (;;) {
        if (c->n_grid == GRID_MAX) {
            c->n_grid = 0; /* more values than that */
            return;
        }
        c->grid[c->n_grid++] = tunep_unit_snap(p, u);
        tunep_space_value_at(p, u, &vu);
        if (tunep_value_equal(&vu, &vt))
            return;
        double lo = u, hi = UNIT_TOP; /* value(lo) == vu != value(hi) */
        for (;;) {
            double mid = lo + (hi - lo) / 2.0;
            if (mid <= lo || mid >= hi)
                break;
            struct tunep_value vm;
            tunep_space_value_at(p, mid, &vm);
            if (tunep_value_equal(&vm, &vu))
                lo = mid;
            else
                hi = mid;
        }
        u = hi;
    }
}

tune_status tunep_gp_opt_new(const tune_space *space, struct tunep_gp_opt **ret, tune_error *err)
{
    size_t dims = tunep_unit_dims(space), dd = dims ? dims : 1;
    struct tunep_gp_opt *o = tunep_calloc(1, sizeof *o);
    if (!o)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory for the GP's optimiser");
    o->dims = dims;
    o->coord = tunep_calloc(dd, sizeof *o->coord);
    o->cont = tunep_calloc(dd, sizeof *o->cont);
    o->gu = tunep_calloc((9 + 2 * LBFGS_M) * dd + 2 * LBFGS_M, sizeof *o->gu);
    if (!o->coord || !o->cont || !o->gu) {
        tunep_gp_opt_free(o);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory for the GP's optimiser");
    }
    double **rows[] = {&o->un, &o->w, &o->sc, &o->z, &o->gz, &o->zn, &o->gn, &o->dir};
    double *at = o->gu + dd;
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++, at += dd)
        *rows[k] = at;
    o->s = at;
    o->y = o->s + LBFGS_M * dd;
    o->rho = o->y + LBFGS_M * dd;
    o->al = o->rho + LBFGS_M;
    size_t j = 0;
    for (size_t i = 0; i < space->n; i++) {
        const struct tunep_param *p = &space->params[i];
        if (p->dist == TUNEP_DIST_CONST)
            continue;
        struct coord *c = &o->coord[j];
        c->p = p;
        c->discrete = p->dist != TUNEP_DIST_UNIFORM && p->dist != TUNEP_DIST_LOGUNIFORM &&
                      p->dist != TUNEP_DIST_RANDN;
        if (c->discrete)
            find_grid(c);
        else
            o->cont[o->n_cont++] = j;
        j++;
    }
    *ret = o;
    return TUNE_OK;
}

void tunep_gp_opt_free(struct tunep_gp_opt *o)
{
    if (!o)
        return;
    tunep_free(o->coord);
    tunep_free(o->cont);
    tunep_free(o->gu);
    tunep_free(o);
}

void tunep_gp_opt_snap(const struct tunep_gp_opt *o, double *u)
{
    for (size_t j = 0; j < o->dims; j++)
        if (o->coord[j].discrete)
            u[j] = tunep_unit_snap(o->coord[j].p, u[j]);
}

static double eval(struct tunep_gp_opt *o, const double *u, double *gu)
{
    double v = o->fn(o->ctx, u, gu);
    return isnan(v) ? -HUGE_VAL : v; /* NaN: as bad as can be */
}

/* Coordinate k of z is held at a bound by the gradient gz of the function minimised. */
static int held(const struct tunep_gp_opt *o, size_t k)
{
    return (o->z[k] <= 0.0 && o->gz[k] > 0.0) || (o->z[k] >= 1.0 / o->sc[k] && o->gz[k] < 0.0);
}

/*
 * Maximises f over the continuous coordinates of u by projected L-BFGS
 * within the unit box, in units of each coordinate's length scale: z = u / l
 * (the kernel sees x / l, so this evens out the curvature; Optuna's
 * preconditioning). The free variables are those the gradient does not hold
 * at a bound; the step backtracks along the projected path (Armijo). Returns
 * 1 when u moved to a higher value, which goes into *f.
 */
static int cont_search(struct tunep_gp_opt *o, const double *scale, double *u, double *f)
{
    size_t nc = o->n_cont, mem = 0, head = 0;
    if (nc == 0)
        return 0;
    double *sc = o->sc, *z = o->z, *gz = o->gz, *zn = o->zn, *gn = o->gn, *dir = o->dir;
    memcpy(o->un, u, o->dims * sizeof *u);
    for (size_t k = 0; k < nc; k++) {
        sc[k] = scale[o->cont[k]];
        z[k] = u[o->cont[k]] / sc[k];
    }
    /* minimises -f: its gradient in z is -l df/du */
    double fv = -eval(o, u, o->gu), f0 = fv;
    if (!isfinite(fv))
        return 0;
    for (size_t k = 0; k < nc; k++)
        gz[k] = -o->gu[o->cont[k]] * sc[k];
    for (int it = 0; it < CONT_ITERS; it++) {
        double pg2 = 0.0, pgmax = 0.0;
        for (size_t k = 0; k < nc; k++) {
            dir[k] = held(o, k) ? 0.0 : gz[k]; /* the projected gradient, for now */
            pg2 += dir[k] * dir[k];
            pgmax = fmax(pgmax, fabs(dir[k]));
        }
        if (!(pgmax >= PGTOL))
            break;
        /* two-loop recursion: dir = H pg, then negated on the free variables */
        for (size_t h = 0; h < mem; h++) {
            size_t i = (head + LBFGS_M - 1 - h) % LBFGS_M;
            const double *si = o->s + i * nc, *yi = o->y + i * nc;
            double a = 0.0;
            for (size_t k = 0; k < nc; k++)
                a += si[k] * dir[k];
            o->al[i] = o->rho[i] * a;
            for (size_t k = 0; k < nc; k++)
                dir[k] -= o->al[i] * yi[k];
        }
        double gamma = 1.0 / sqrt(pg2); /* no memory yet: a first step of one length scale */
        if (mem > 0) {
            size_t i = (head + LBFGS_M - 1) % LBFGS_M;
            double yy = 0.0;
            for (size_t k = 0; k < nc; k++)
                yy += o->y[i * nc + k] * o->y[i * nc + k];
            gamma = 1.0 / (o->rho[i] * yy);
        }
        for (size_t k = 0; k < nc; k++)
            dir[k] *= gamma;
        for (size_t h = mem; h-- > 0;) {
            size_t i = (head + LBFGS_M - 1 - h) % LBFGS_M;
            const double *si = o->s + i * nc, *yi = o->y + i * nc;
            double b = 0.0;
            for (size_t k = 0; k < nc; k++)
                b += yi[k] * dir[k];
            b *= o->rho[i];
            for (size_t k = 0; k < nc; k++)
                dir[k] += si[k] * (o->al[i] - b);
        }
        double slope = 0.0;
        for (size_t k = 0; k < nc; k++) {
            dir[k] = held(o, k) ? 0.0 : -dir[k];
            slope += dir[k] * gz[k];
        }
        if (!(slope < 0.0)) { /* not downhill: steepest descent, the memory dropped */
            mem = 0;
            for (size_t k = 0; k < nc; k++)
                dir[k] = held(o, k) ? 0.0 : -gz[k] / sqrt(pg2);
        }
        double step = 1.0, fn = HUGE_VAL;
        int ok = 0;
        for (int bt = 0; bt < 40 && !ok; bt++, step *= 0.5) {
            double dec = 0.0;
            for (size_t k = 0; k < nc; k++) {
                zn[k] = clampd(z[k] + step * dir[k], 0.0, 1.0 / sc[k]);
                o->un[o->cont[k]] = fmin(zn[k] * sc[k], UNIT_TOP);
                dec += gz[k] * (zn[k] - z[k]);
            }
            fn = -eval(o, o->un, o->gu);
            ok = fn <= fv + 1e-4 * dec;
        }
        if (!ok)
            break;
        double *si = o->s + head * nc, *yi = o->y + head * nc, sy = 0.0, ss = 0.0, yy = 0.0;
        for (size_t k = 0; k < nc; k++) {
            gn[k] = -o->gu[o->cont[k]] * sc[k];
            si[k] = zn[k] - z[k];
            yi[k] = gn[k] - gz[k];
            sy += si[k] * yi[k];
            ss += si[k] * si[k];
            yy += yi[k] * yi[k];
        }
        if (sy > 1e-10 * sqrt(ss * yy)) { /* curvature along the step: H stays positive */
            o->rho[head] = 1.0 / sy;
            head = (head + 1) % LBFGS_M;
            mem += mem < LBFGS_M;
        }
        double gain = fv - fn;
        memcpy(z, zn, nc * sizeof *z);
        memcpy(gz, gn, nc * sizeof *gz);
        fv = fn;
        if (gain <= 1e-12 * fmax(1.0, fabs(fv)))
            break;
    }
    if (!(fv < f0))
        return 0;
    for (size_t k = 0; k < nc; k++)
        u[o->cont[k]] = fmin(z[k] * sc[k], UNIT_TOP);
    *f = -fv;
    return 1;
}

/*
 * Moves discrete coordinate j of u to its best value, the others held: every
 * value when there are at most GRID_MAX, else a pattern search in u that
 * halves its step from a quarter of the range until both probes fall in the
 * current value's cell. Returns 1 when u moved to a higher value.
 */
static int disc_search(struct tunep_gp_opt *o, size_t j, double *u, double *f)
{
    const struct coord *c = &o->coord[j];
    double *w = o->w, cur = u[j], best = cur, fb = *f;
    memcpy(w, u, o->dims * sizeof *w);
    if (c->n_grid > 0) {
        for (size_t k = 0; k < c->n_grid; k++) {
            if (c->grid[k] == cur)
                continue;
            w[j] = c->grid[k];
            double v = eval(o, w, NULL);
            if (v > fb) {
                fb = v;
                best = c->grid[k];
            }
        }
    } else {
        double delta = 0.25;
        for (int it = 0; it < 200; it++) {
            int moved = 0, probed = 0;
            for (int sgn = -1; sgn <= 1 && !moved; sgn += 2) {
                double t = tunep_unit_snap(c->p, clampd(best + sgn * delta, 0.0, UNIT_TOP));
                if (t == best)
                    continue;
                probed = 1;
                w[j] = t;
                double v = eval(o, w, NULL);
                if (v > fb) {
                    fb = v;
                    best = t;
                    moved = 1;
                }
            }
            if (!probed)
                break;
            if (!moved)
                delta *= 0.5;
        }
    }
    if (best == cur)
        return 0;
    u[j] = best;
    *f = fb;
    return 1;
}

double tunep_gp_opt_local(struct tunep_gp_opt *o, tunep_gp_opt_fn fn, void *ctx,
                          const double *scale, double *u)
{
    o->fn = fn;
    o->ctx = ctx;
    double f = eval(o, u, NULL);
    long last = -1; /* the discrete coordinate that moved last; -1: the continuous ones */
    for (int round = 0; round < ROUNDS; round++) {
        if (cont_search(o, scale, u, &f))
            last = -1;
        for (size_t j = 0; j < o->dims; j++) {
            if (!o->coord[j].discrete)
                continue;
            if (last == (long)j)
                return f; /* a whole round since j moved, and nothing else did */
            if (disc_search(o, j, u, &f))
                last = (long)j;
        }
        if (last == -1)
            return f;
    }
    return f;
}

/* ---- the searcher --------------------------------------------------------- */

enum { PENDING = 0, DONE = 1 };

struct gp_trial {
    int64_t id;
    int state;
    double score; /* DONE: the raw score, -inf for a failed metric */
};

#define N_LOCAL   10 /* local searches per suggestion (Optuna's n_local_search) */
#define FIT_CHEAP 50 /* observations up to which fits start from the defaults */

struct gp {
    struct tunep_searcher base;
    struct tunep_gp_config c;
    size_t dims; /* unit coordinates: the model's inputs */
    struct tunep_sobol_seq seq;
    int have_sobol;
    struct tunep_sobol_seq cand_seq; /* a suggestion's candidates, rescrambled each time */
    struct tunep_gp_opt *opt;
    struct gp_trial *trials; /* in order of on_start */
    double *tu;              /* the trials' unit points, dims each */
    size_t n_trials, cap_trials;
    struct tunep_gp_model model;
    size_t fitted_at; /* observations at the last fit (0: never) */
    double threshold; /* EI's incumbent (standardised) in this suggestion */
    /* scratch for one suggestion */
    double *cu, *cmu, *cvar, *cscore; /* candidates: unit points, mu, var, log EI */
    size_t cap_cand;
    size_t *order; /* model row -> index in trials */
    size_t cap_order;
    double *dmu, *dvar, *scale; /* dims each: gradients of the posterior, length scales */
};

static long find_trial(const struct gp *g, int64_t id)
{
    for (size_t i = g->n_trials; i-- > 0;)
        if (g->trials[i].id == id)
            return (long)i;
    return -1;
}

static void gp_free(struct tunep_searcher *base)
{
    struct gp *g = (struct gp *)base;
    tunep_sobol_seq_done(&g->seq);
    tunep_sobol_seq_done(&g->cand_seq);
    tunep_gp_opt_free(g->opt);
    tunep_gp_model_done(&g->model);
    tunep_free(g->trials);
    tunep_free(g->tu);
    tunep_free(g->cu);
    tunep_free(g->cmu);
    tunep_free(g->cvar);
    tunep_free(g->cscore);
    tunep_free(g->order);
    tunep_free(g->dmu);
    tunep_free(g);
}

static tune_status gp_on_start(struct tunep_searcher *base, int64_t id,
                               const struct tunep_value *values)
{
    struct gp *g = (struct gp *)base;
    long at = find_trial(g, id);
    if (at < 0) {
        if (g->n_trials == g->cap_trials) {
            size_t cap = g->cap_trials ? 2 * g->cap_trials : 32, dd = g->dims ? g->dims : 1;
            struct gp_trial *t =
                tunep_realloc(g->trials, g->cap_trials * sizeof *t, cap * sizeof *t);
            if (!t)
                return TUNE_ENOMEM;
            g->trials = t; /* larger already; cap_trials says how much is in use */
            double *u = tunep_realloc(g->tu, g->cap_trials * dd * sizeof *u, cap * dd * sizeof *u);
            if (!u)
                return TUNE_ENOMEM;
            g->tu = u;
            g->cap_trials = cap;
        }
        at = (long)g->n_trials++;
    }
    struct gp_trial *t = &g->trials[at];
    t->id = id;
    t->state = PENDING;
    t->score = -HUGE_VAL;
    tunep_values_to_unit(base->space, values, g->tu + (size_t)at * g->dims);
    return TUNE_OK;
}

static tune_status gp_on_result(struct tunep_searcher *base, int64_t id, double t, double score)
{
    (void)base;
    (void)id;
    (void)t;
    (void)score;
    return TUNE_OK; /* the model learns from final scores only */
}

static tune_status gp_on_complete(struct tunep_searcher *base, int64_t id, int has_score, double t,
                                  double score)
{
    struct gp *g = (struct gp *)base;
    (void)t;
    long at = find_trial(g, id);
    if (at < 0)
        return TUNE_OK;
    if (has_score) {
        g->trials[at].state = DONE;
        g->trials[at].score = isnan(score) ? -HUGE_VAL : score;
        return TUNE_OK;
    }
    /* an errored trial is forgotten: it neither scores nor stays pending */
    size_t i = (size_t)at, rest = g->n_trials - i - 1;
    memmove(&g->trials[i], &g->trials[i + 1], rest * sizeof *g->trials);
    memmove(g->tu + i * g->dims, g->tu + (i + 1) * g->dims, rest * g->dims * sizeof *g->tu);
    g->n_trials--;
    return TUNE_OK;
}

static tune_status reserve_candidates(struct gp *g, size_t n, tune_error *err)
{
    if (n <= g->cap_cand)
        return TUNE_OK;
    size_t dd = g->dims ? g->dims : 1;
    double *cu = tunep_malloc(n * dd * sizeof *cu);
    double *cmu = tunep_malloc(n * sizeof *cmu), *cvar = tunep_malloc(n * sizeof *cvar);
    double *cs = tunep_malloc(n * sizeof *cs);
    if (!cu || !cmu || !cvar || !cs) {
        tunep_free(cu);
        tunep_free(cmu);
        tunep_free(cvar);
        tunep_free(cs);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory for %zu GP candidates", n);
    }
    tunep_free(g->cu);
    tunep_free(g->cmu);
    tunep_free(g->cvar);
    tunep_free(g->cscore);
    g->cu = cu;
    g->cmu = cmu;
    g->cvar = cvar;
    g->cscore = cs;
    g->cap_cand = n;
    return TUNE_OK;
}

/* A start-up point: Sobol point `id`, or uniform where Sobol cannot reach. */
static tune_status startup_point(struct gp *g, int64_t id, gsl_rng *r, double *u, tune_error *err)
{
    if (g->have_sobol && id >= 0 && id < TUNEP_SOBOL_MAX_POINTS)
        return tunep_sobol_seq_point(&g->seq, id, u, err);
    for (size_t j = 0; j < g->dims; j++)
        u[j] = gsl_rng_uniform(r);
    return TUNE_OK;
}

/*
 * Loads the newest n_obs observations (standardised; -inf as `worst`), fits
 * the hyperparameters on them when due, then adds the pending trials at the
 * worst standardised score (constant liar) and factorises. Returns the model
 * row of the best observation in ret_best.
 */
static tune_status build_model(struct gp *g, gsl_rng *r, size_t n_obs, double worst,
                               size_t *ret_best, tune_error *err)
{
    size_t dims = g->dims, n_pend = 0;
    struct tunep_gp_model *m = &g->model;
    for (size_t i = 0; i < g->n_trials; i++)
        n_pend += g->trials[i].state == PENDING;
    if (n_pend > TUNEP_GP_MAX_POINTS - n_obs)
        n_pend = TUNEP_GP_MAX_POINTS - n_obs;
    tune_status st = tunep_gp_model_reserve(m, n_obs + n_pend, err);
    if (st)
        return st;
    if (g->cap_order < n_obs) {
        size_t *o = tunep_malloc(n_obs * sizeof *o);
        if (!o)
            return tunep_error_set(err, TUNE_ENOMEM, "out of memory for GP observations");
        tunep_free(g->order);
        g->order = o;
        g->cap_order = n_obs;
    }

    size_t row = 0;
    double mean = 0.0, sq = 0.0;
    for (size_t i = g->n_trials; i-- > 0 && row < n_obs;) {
        const struct gp_trial *t = &g->trials[i];
        if (t->state != DONE)
            continue;
        memcpy(m->x + row * dims, g->tu + i * dims, dims * sizeof *m->x);
        m->y[row] = isfinite(t->score) ? t->score : worst;
        mean += m->y[row];
        g->order[row++] = i;
    }
    mean /= (double)n_obs;
    for (size_t i = 0; i < n_obs; i++)
        sq += (m->y[i] - mean) * (m->y[i] - mean);
    double sd = sqrt(sq / (double)n_obs);
    if (!(sd > 0.0))
        sd = 1.0;
    double y_worst = HUGE_VAL;
    size_t best = 0;
    for (size_t i = 0; i < n_obs; i++) {
        m->y[i] = (m->y[i] - mean) / sd;
        best = m->y[i] > m->y[best] ? i : best;
        y_worst = fmin(y_worst, m->y[i]);
    }

    m->n = n_obs;
    if (g->fitted_at == 0 || n_obs >= g->fitted_at + (size_t)g->c.refit_every ||
        n_obs < g->fitted_at) {
        /*
         * While a fit is cheap, from the defaults: the fit is then a function of
         * the observations alone, so a searcher resumed with the same history
         * suggests what the unbroken one did (warm starts and random restarts
         * did no better on bench/search_bench's problems). Past FIT_CHEAP
         * observations the last fit is close to the optimum for one more point,
         * and a short warm start keeps a suggestion fast at 200 observations
         * (a 200-point likelihood and gradient is ~0.5 ms; 50 iterations from
         * the defaults would take ~10 times as long).
         */
        if (n_obs <= FIT_CHEAP) {
            tunep_gp_model_reset(m);
            tunep_gp_model_fit(m, r, 1, 50);
        } else {
            tunep_gp_model_fit(m, r, 1, 10);
        }
        g->fitted_at = n_obs;
    }

    size_t added = 0;
    for (size_t i = 0; i < g->n_trials && added < n_pend; i++) {
        if (g->trials[i].state != PENDING)
            continue;
        memcpy(m->x + (n_obs + added) * dims, g->tu + i * dims, dims * sizeof *m->x);
        m->y[n_obs + added] = y_worst;
        added++;
    }
    m->n = n_obs + added;
    tunep_gp_model_condition(m);
    *ret_best = best;
    return TUNE_OK;
}

/* log EI at unit point u (the model's input); its gradient in u into grad when not NULL. */
static double acq(void *ctx, const double *u, double *grad)
{
    struct gp *g = ctx;
    double mu, var, d_mu, d_var;
    tunep_gp_model_predict_grad(&g->model, u, &mu, &var, grad ? g->dmu : NULL,
                                grad ? g->dvar : NULL);
    double v = tunep_gp_log_ei(mu, var, g->threshold, &d_mu, &d_var);
    if (grad)
        for (size_t t = 0; t < g->dims; t++)
            grad[t] = d_mu * g->dmu[t] + d_var * g->dvar[t];
    return v;
}

/*
 * Maximises log EI as Optuna's optimize_acqf_mixed does: n_candidates points
 * of a freshly scrambled Sobol sequence (uniform beyond its 40 dimensions),
 * discrete coordinates snapped; then local searches from the best of them,
 * from N_LOCAL - 2 more drawn with probability proportional to their EI
 * (without replacement), and from the best observation. The winner goes
 * into out (dims).
 */
static tune_status maximise_ei(struct gp *g, gsl_rng *r, size_t best_row, double *out,
                               tune_error *err)
{
    size_t dims = g->dims, nc = (size_t)g->c.n_candidates;
    double *u = g->cu;
    if (g->have_sobol)
        tunep_sobol_seq_rescramble(&g->cand_seq,
                                   (uint64_t)gsl_rng_get(r) << 32 ^ (uint64_t)gsl_rng_get(r));
    for (size_t c = 0; c < nc; c++) {
        if (g->have_sobol) {
            tune_status st = tunep_sobol_seq_point(&g->cand_seq, (int64_t)c, u + c * dims, err);
            if (st)
                return st;
        } else {
            for (size_t j = 0; j < dims; j++)
                u[c * dims + j] = gsl_rng_uniform(r);
        }
        tunep_gp_opt_snap(g->opt, u + c * dims);
    }
    tunep_gp_model_predict(&g->model, u, nc, g->cmu, g->cvar);
    size_t top = 0;
    for (size_t c = 0; c < nc; c++) {
        g->cscore[c] = tunep_gp_log_ei(g->cmu[c], g->cvar[c], g->threshold, NULL, NULL);
        if (!(g->cscore[c] > -HUGE_VAL)) /* NaN too */
            g->cscore[c] = -HUGE_VAL;
        top = g->cscore[c] > g->cscore[top] ? c : top;
    }

    /* the starts, in the rows after the candidates */
    double *starts = u + nc * dims, total = 0.0;
    size_t n_starts = 1;
    memcpy(starts, u + top * dims, dims * sizeof *u);
    for (size_t c = 0; c < nc; c++) { /* roulette weights, in place of mu */
        g->cmu[c] = c == top ? 0.0 : exp(g->cscore[c] - g->cscore[top]);
        total += g->cmu[c];
    }
    for (; n_starts < N_LOCAL - 1 && total > 0.0; n_starts++) {
        double spin = gsl_rng_uniform(r) * total;
        size_t c = 0, last = nc;
        for (; c < nc; c++) {
            if (g->cmu[c] > 0.0)
                last = c;
            spin -= g->cmu[c];
            if (spin < 0.0 && g->cmu[c] > 0.0)
                break;
        }
        c = c < nc ? c : last; /* rounding left the spin past the end: the last weighted */
        if (c >= nc)
            break;
        memcpy(starts + n_starts * dims, u + c * dims, dims * sizeof *u);
        total -= g->cmu[c];
        g->cmu[c] = 0.0;
    }
    memcpy(starts + n_starts * dims, g->tu + g->order[best_row] * dims, dims * sizeof *u);
    n_starts++;

    for (size_t t = 0; t < dims; t++)
        g->scale[t] = exp(clampd(g->model.theta[t], TUNEP_GP_LOG_LS_MIN, TUNEP_GP_LOG_LS_MAX));
    double best_f = -HUGE_VAL;
    size_t pick = 0;
    for (size_t i = 0; i < n_starts; i++) {
        double f = tunep_gp_opt_local(g->opt, acq, g, g->scale, starts + i * dims);
        if (f > best_f) {
            best_f = f;
            pick = i;
        }
    }
    memcpy(out, starts + pick * dims, dims * sizeof *out);
    return TUNE_OK;
}

static tune_status gp_suggest(struct tunep_searcher *base, int64_t id, gsl_rng *r,
                              struct tunep_value *out, tune_error *err)
{
    struct gp *g = (struct gp *)base;
    if (!r)
        return tunep_error_set(err, TUNE_EINVAL, "gp: suggest needs the trial's random stream");
    if (g->dims == 0) { /* constants only */
        tunep_unit_to_values(base->space, NULL, out);
        return TUNE_OK;
    }
    /* rows: the candidates, the N_LOCAL starts, one spare */
    tune_status st = reserve_candidates(g, (size_t)g->c.n_candidates + N_LOCAL + 1, err);
    if (st)
        return st;
    double *u_spare = g->cu + ((size_t)g->c.n_candidates + N_LOCAL) * g->dims;

    /* observations, newest first, as many as the model holds */
    size_t n_obs = 0, n_finite = 0;
    double worst = HUGE_VAL;
    for (size_t i = g->n_trials; i-- > 0;) {
        const struct gp_trial *t = &g->trials[i];
        if (t->state == DONE && n_obs < TUNEP_GP_MAX_POINTS) {
            n_obs++;
            if (isfinite(t->score)) {
                n_finite++;
                worst = fmin(worst, t->score);
            }
        }
    }
    if (id < g->c.n_startup_trials || n_finite < 2) {
        st = startup_point(g, id, r, u_spare, err);
        if (st)
            return st;
        tunep_unit_to_values(base->space, u_spare, out);
        return TUNE_OK;
    }
    size_t best_row = 0;
    st = build_model(g, r, n_obs, worst, &best_row, err);
    if (st)
        return st;
    g->threshold = g->model.y[best_row] + g->c.xi;
    st = maximise_ei(g, r, best_row, u_spare, err);
    if (st)
        return st;
    tunep_unit_to_values(base->space, u_spare, out);
    return TUNE_OK;
}

static const struct tunep_searcher_ops gp_ops = {
    "gp", gp_suggest, gp_on_start, gp_on_result, gp_on_complete, gp_free, NULL,
};

void tunep_gp_config_default(struct tunep_gp_config *c)
{
    memset(c, 0, sizeof *c);
    c->n_startup_trials = 10;
    c->n_candidates = 2000;
    c->refit_every = 1;
    c->xi = 0.0;
}

tune_status tunep_gp_new(const tune_space *space, const struct tunep_gp_config *c, uint64_t seed,
                         struct tunep_searcher **ret, tune_error *err)
{
    struct tunep_gp_config def;
    if (!c) {
        tunep_gp_config_default(&def);
        c = &def;
    }
    if (!space || !ret)
        return tunep_error_set(err, TUNE_EINVAL, "space and ret must not be NULL");
    if (c->n_startup_trials < 0)
        return tunep_error_set(err, TUNE_ECONFIG, "gp: n_startup_trials must be >= 0");
    if (c->n_candidates < 1 || c->n_candidates > 1000000)
        return tunep_error_set(err, TUNE_ECONFIG, "gp: n_candidates must be in [1, 1000000]");
    if (c->refit_every < 1)
        return tunep_error_set(err, TUNE_ECONFIG, "gp: refit_every must be >= 1");
    if (!(c->xi >= 0.0) || !isfinite(c->xi))
        return tunep_error_set(err, TUNE_ECONFIG, "gp: xi must be a finite number >= 0");
    tune_status st = tunep_unit_check(space, "gp", err);
    if (st)
        return st;
    size_t dims = 0;
    for (size_t i = 0; i < space->n; i++) {
        const struct tunep_param *p = &space->params[i];
        if (p->dist != TUNEP_DIST_CONST && ++dims > TUNEP_GP_MAX_DIMS)
            return tunep_error_set(err, TUNE_ECONFIG,
                                   "gp: '%s' takes the model past %d inputs (one per "
                                   "non-constant parameter)",
                                   p->name, TUNEP_GP_MAX_DIMS);
    }

    struct gp *g = tunep_calloc(1, sizeof *g);
    if (!g)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory creating the gp searcher");
    g->base.ops = &gp_ops;
    g->base.space = space;
    g->c = *c;
    g->dims = dims;
    size_t dd = dims ? dims : 1;
    g->dmu = tunep_calloc(3 * dd, sizeof *g->dmu);
    if (!g->dmu) {
        gp_free(&g->base);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory creating the gp searcher");
    }
    g->dvar = g->dmu + dd;
    g->scale = g->dvar + dd;
    /* beyond 40 coordinates the start-up points and the candidates are uniform instead */
    if (dims <= TUNEP_SOBOL_MAX_DIMS) {
        st = tunep_sobol_seq_init(&g->seq, dims, 1, seed, err);
        if (!st)
            st = tunep_sobol_seq_init(&g->cand_seq, dims, 1, seed, err);
        if (st) {
            gp_free(&g->base);
            return st;
        }
        g->have_sobol = 1;
    }
    st = tunep_gp_opt_new(space, &g->opt, err);
    if (!st)
        st = tunep_gp_model_init(&g->model, dims, err);
    if (st) {
        gp_free(&g->base);
        return st;
    }
    /* a choice is one input whose values are all equally far apart (Hamming distance) */
    size_t j = 0;
    for (size_t i = 0; i < space->n; i++)
        if (space->params[i].dist != TUNEP_DIST_CONST)
            g->model.cat[j++] = space->params[i].dist == TUNEP_DIST_CHOICE;
    *ret = &g->base;
    return TUNE_OK;
}
