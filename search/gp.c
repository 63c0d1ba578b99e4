/*
 * gp.c - Gaussian-process Bayesian optimisation (Rasmussen and Williams 2006,
 * ch. 2 and 5; Jones, Schonlau and Welch 1998 for expected improvement).
 *
 * Each parameter is a coordinate of the unit cube (unit.c); integers, q
 * values and choices are snapped to their cell, and a choice becomes one-hot
 * features. The model is a zero-mean GP on standardised scores (the constant
 * mean is the mean of the observations) with a Matern 5/2 ARD kernel; its
 * log length scales, signal and noise variances maximise the log marginal
 * likelihood (BFGS with the analytic gradient, a few starts). A suggestion
 * maximises log expected improvement over random points, perturbations of
 * the best observations and a short local search from the best candidates.
 * The first n_startup_trials ids take points of a scrambled Sobol design
 * (qmc.c). Pending trials are imputed with the worst observed score
 * (constant liar, Ginsbourger et al. 2010) after fitting, so parallel
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
    if (!m->theta || !m->grad || !m->best || !m->cand) {
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
                double z = (xi[t] - xj[t]) * inv_ls[t];
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
                double z = (xi[t] - xj[t]) * inv_ls[t];
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

/* GSL hands us views of its own vectors: contiguous, so data[] is the vector */
static double obj_f(const gsl_vector *z, void *params)
{
    struct tunep_gp_model *m = params;
    double theta[TUNEP_GP_MAX_DIMS + 2];
    z_to_theta(m->d, z->data, theta, NULL);
    double v = -tunep_gp_model_lml(m, theta, NULL);
    return isfinite(v) ? v : 1e300;
}

static void obj_fdf(const gsl_vector *z, void *params, double *f, gsl_vector *g)
{
    struct tunep_gp_model *m = params;
    double theta[TUNEP_GP_MAX_DIMS + 2], dt[TUNEP_GP_MAX_DIMS + 2];
    z_to_theta(m->d, z->data, theta, dt);
    double v = -tunep_gp_model_lml(m, theta, m->grad);
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
                    double z = xsi[t] - xc[t];
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

/* ---- expected improvement ------------------------------------------------- */

/*
 * log EI for a maximisation with posterior N(mu, var) and incumbent f_best:
 * EI = sd h(z), h(z) = z Phi(z) + phi(z), z = (mu - f_best) / sd. Far in the
 * lower tail h(z) = phi(z) (1 - x m(x)) with x = -z and Mills' ratio m(x);
 * beyond x = 30 its asymptotic series 1/x^2 - 3/x^4 + 15/x^6 avoids the
 * cancellation (and erfc's underflow past x = 38). The log keeps the ranking
 * meaningful where EI itself underflows.
 */
static double log_ei(double mu, double var, double f_best)
{
    double sd = sqrt(var), z = (mu - f_best) / sd, lh;
    if (z >= -5.0) {
        double cdf = 0.5 * erfc(-z / M_SQRT2), pdf = exp(-0.5 * z * z - LOG_SQRT_2PI);
        lh = log(z * cdf + pdf);
    } else {
        double x = -z, log_pdf = -0.5 * x * x - LOG_SQRT_2PI;
        if (x <= 30.0) {
            double mills = 0.5 * erfc(x / M_SQRT2) / exp(log_pdf);
            lh = log_pdf + log(1.0 - x * mills);
        } else {
            double t = 1.0 / (x * x);
            lh = log_pdf + log(t * (1.0 - 3.0 * t + 15.0 * t * t));
        }
    }
    return log(sd) + lh;
}

/* ---- the searcher --------------------------------------------------------- */

enum { PENDING = 0, DONE = 1 };

struct gp_trial {
    int64_t id;
    int state;
    double score; /* DONE: the raw score, -inf for a failed metric */
};

/* How one unit coordinate becomes features: itself, or n one-hot features. */
struct feature {
    size_t off;      /* first feature */
    size_t n_onehot; /* 0: one continuous feature */
};

struct gp {
    struct tunep_searcher base;
    struct tunep_gp_config c;
    size_t dims, n_feat;  /* unit coordinates, model features */
    struct feature *feat; /* dims */
    struct tunep_sobol_seq seq;
    int have_sobol;
    struct gp_trial *trials; /* in order of on_start */
    double *tu;              /* the trials' unit points, dims each */
    size_t n_trials, cap_trials;
    struct tunep_gp_model model;
    size_t fitted_at; /* observations at the last fit (0: never) */
    /* scratch for one suggestion */
    double *cu, *cx, *cmu, *cvar, *cscore; /* candidates: units, features, mu, var, log EI */
    size_t cap_cand;
    size_t *order; /* model row -> index in trials */
    size_t cap_order;
    struct tunep_value *vals; /* space->n */
};

#define N_REFINE     3  /* candidates polished by local search */
#define REFINE_STEPS 25 /* local search steps each */
#define N_TOP        5  /* best observations that local candidates perturb */
#define FIT_CHEAP    50 /* observations up to which fits restart from several points */

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
    tunep_gp_model_done(&g->model);
    tunep_free(g->feat);
    tunep_free(g->trials);
    tunep_free(g->tu);
    tunep_free(g->cu);
    tunep_free(g->cx);
    tunep_free(g->cmu);
    tunep_free(g->cvar);
    tunep_free(g->cscore);
    tunep_free(g->order);
    tunep_free(g->vals);
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

/* Unit point u -> features: u snapped to the value it stands for, choices one-hot. */
static void encode(struct gp *g, double *u, double *x)
{
    tunep_unit_to_values(g->base.space, u, g->vals);
    tunep_values_to_unit(g->base.space, g->vals, u);
    for (size_t j = 0; j < g->dims; j++) {
        const struct feature *f = &g->feat[j];
        if (f->n_onehot == 0) {
            x[f->off] = u[j];
        } else {
            size_t k = (size_t)(u[j] * (double)f->n_onehot);
            for (size_t h = 0; h < f->n_onehot; h++)
                x[f->off + h] = h == k ? 1.0 : 0.0;
        }
    }
}

static tune_status reserve_candidates(struct gp *g, size_t n, tune_error *err)
{
    if (n <= g->cap_cand)
        return TUNE_OK;
    size_t dd = g->dims ? g->dims : 1, ff = g->n_feat ? g->n_feat : 1;
    double *cu = tunep_malloc(n * dd * sizeof *cu), *cx = tunep_malloc(n * ff * sizeof *cx);
    double *cmu = tunep_malloc(n * sizeof *cmu), *cvar = tunep_malloc(n * sizeof *cvar);
    double *cs = tunep_malloc(n * sizeof *cs);
    if (!cu || !cx || !cmu || !cvar || !cs) {
        tunep_free(cu);
        tunep_free(cx);
        tunep_free(cmu);
        tunep_free(cvar);
        tunep_free(cs);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory for %zu GP candidates", n);
    }
    tunep_free(g->cu);
    tunep_free(g->cx);
    tunep_free(g->cmu);
    tunep_free(g->cvar);
    tunep_free(g->cscore);
    g->cu = cu;
    g->cx = cx;
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

/* Scores candidates [from, to) by log EI. */
static void score(struct gp *g, size_t from, size_t to, double f_best)
{
    size_t ff = g->n_feat;
    for (size_t c = from; c < to; c++)
        encode(g, g->cu + c * g->dims, g->cx + c * ff);
    tunep_gp_model_predict(&g->model, g->cx + from * ff, to - from, g->cmu + from, g->cvar + from);
    for (size_t c = from; c < to; c++)
        g->cscore[c] = log_ei(g->cmu[c], g->cvar[c], f_best + g->c.xi);
}

/* u + sd N(0, 1), reflected into [0, 1) */
static double jitter(double u, double sd, gsl_rng *r)
{
    double v = fmod(fabs(u + gsl_ran_gaussian(r, sd)), 2.0);
    if (v >= 1.0)
        v = 2.0 - v;
    return v >= 1.0 ? nextafter(1.0, 0.0) : v;
}

/*
 * Moves each coordinate with probability min(1, 4 / dims) (at least one
 * moves), so that in many dimensions a step changes a few at a time; a
 * choice moves by a fresh draw.
 */
static void perturb(const struct gp *g, const double *from, double *to, double sd, gsl_rng *r)
{
    double p = g->dims <= 4 ? 1.0 : 4.0 / (double)g->dims;
    size_t forced = (size_t)gsl_rng_uniform_int(r, g->dims);
    for (size_t j = 0; j < g->dims; j++) {
        to[j] = from[j];
        if (j != forced && gsl_rng_uniform(r) >= p)
            continue;
        to[j] = g->feat[j].n_onehot ? gsl_rng_uniform(r) : jitter(from[j], sd, r);
    }
}

/*
 * Loads the newest n_obs observations (standardised; -inf as `worst`), fits
 * the hyperparameters on them when due, then adds the pending trials at the
 * worst standardised score (constant liar) and factorises. Returns the best
 * standardised observation in ret_y_best.
 */
static tune_status build_model(struct gp *g, gsl_rng *r, size_t n_obs, double worst,
                               double *u_spare, double *ret_y_best, tune_error *err)
{
    size_t dims = g->dims, ff = g->n_feat, n_pend = 0;
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
        memcpy(u_spare, g->tu + i * dims, dims * sizeof *u_spare);
        encode(g, u_spare, m->x + row * ff);
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
    double y_best = -HUGE_VAL, y_worst = HUGE_VAL;
    for (size_t i = 0; i < n_obs; i++) {
        m->y[i] = (m->y[i] - mean) / sd;
        y_best = fmax(y_best, m->y[i]);
        y_worst = fmin(y_worst, m->y[i]);
    }

    m->n = n_obs;
    if (g->fitted_at == 0 || n_obs >= g->fitted_at + (size_t)g->c.refit_every ||
        n_obs < g->fitted_at) {
        /*
         * While a fit is cheap: the warm start, the defaults and two random starts.
         * Past FIT_CHEAP observations the last fit is close to the optimum for one
         * more point, and a short warm start keeps a suggestion under ~50 ms at
         * 200 observations in 6-D (a 200-point likelihood and gradient is ~0.5 ms).
         */
        if (n_obs <= FIT_CHEAP)
            tunep_gp_model_fit(m, r, 4, 50);
        else
            tunep_gp_model_fit(m, r, 1, 10);
        g->fitted_at = n_obs;
    }

    size_t added = 0;
    for (size_t i = 0; i < g->n_trials && added < n_pend; i++) {
        if (g->trials[i].state != PENDING)
            continue;
        memcpy(u_spare, g->tu + i * dims, dims * sizeof *u_spare);
        encode(g, u_spare, m->x + (n_obs + added) * ff);
        m->y[n_obs + added] = y_worst;
        added++;
    }
    m->n = n_obs + added;
    tunep_gp_model_condition(m);
    *ret_y_best = y_best;
    return TUNE_OK;
}

/*
 * Expected improvement over y_best, maximised: half the candidates uniform,
 * half perturbations of the N_TOP best observations at four radii, then a
 * (1+1) local search with an adaptive radius from the N_REFINE best.
 * Returns the index of the winner in g->cu.
 */
static size_t maximise_ei(struct gp *g, gsl_rng *r, size_t n_obs, double y_best)
{
    static const double sds[4] = {0.2, 0.07, 0.02, 0.005};
    size_t dims = g->dims, nc = (size_t)g->c.n_candidates, n_rand = nc / 2;
    const double *y = g->model.y;
    size_t top[N_TOP], n_top = 0; /* model rows, best first */
    for (size_t i = 0; i < n_obs; i++) {
        size_t k = n_top < N_TOP ? n_top++ : N_TOP;
        while (k > 0 && y[i] > y[top[k - 1]]) {
            if (k < N_TOP)
                top[k] = top[k - 1];
            k--;
        }
        if (k < N_TOP)
            top[k] = i;
    }
    for (size_t c = 0; c < nc; c++) {
        double *u = g->cu + c * dims;
        if (c < n_rand) {
            for (size_t j = 0; j < dims; j++)
                u[j] = gsl_rng_uniform(r);
        } else {
            const double *centre = g->tu + g->order[top[(c - n_rand) % n_top]] * dims;
            perturb(g, centre, u, sds[gsl_rng_uniform_int(r, 4)], r);
        }
    }
    score(g, 0, nc, y_best);

    size_t best[N_REFINE], n_best = nc < N_REFINE ? nc : N_REFINE;
    for (size_t i = 0; i < n_best; i++) {
        size_t b = nc;
        for (size_t c = 0; c < nc; c++) {
            int taken = 0;
            for (size_t h = 0; h < i; h++)
                taken |= best[h] == c;
            if (!taken && (b == nc || g->cscore[c] > g->cscore[b]))
                b = c;
        }
        best[i] = b;
    }
    double radius[N_REFINE];
    for (size_t i = 0; i < n_best; i++)
        radius[i] = 0.05;
    for (int step = 0; step < REFINE_STEPS; step++) {
        /* proposals in the rows after the candidates */
        for (size_t i = 0; i < n_best; i++)
            perturb(g, g->cu + best[i] * dims, g->cu + (nc + i) * dims, radius[i], r);
        score(g, nc, nc + n_best, y_best);
        for (size_t i = 0; i < n_best; i++) {
            if (g->cscore[nc + i] > g->cscore[best[i]]) {
                memcpy(g->cu + best[i] * dims, g->cu + (nc + i) * dims, dims * sizeof *g->cu);
                g->cscore[best[i]] = g->cscore[nc + i];
                radius[i] = fmin(radius[i] * 1.5, 0.3);
            } else {
                radius[i] = fmax(radius[i] * 0.6, 1e-4);
            }
        }
    }
    size_t pick = 0;
    for (size_t c = 1; c < nc; c++)
        if (g->cscore[c] > g->cscore[pick])
            pick = c;
    return pick;
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
    /* rows: the candidates, N_REFINE local-search proposals, one spare */
    tune_status st = reserve_candidates(g, (size_t)g->c.n_candidates + N_REFINE + 1, err);
    if (st)
        return st;
    double *u_spare = g->cu + ((size_t)g->c.n_candidates + N_REFINE) * g->dims;

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
    double y_best = 0.0;
    st = build_model(g, r, n_obs, worst, u_spare, &y_best, err);
    if (st)
        return st;
    size_t pick = maximise_ei(g, r, n_obs, y_best);
    tunep_unit_to_values(base->space, g->cu + pick * g->dims, out);
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
    size_t dims = tunep_unit_dims(space), n_feat = 0;
    for (size_t i = 0; i < space->n; i++) {
        const struct tunep_param *p = &space->params[i];
        if (p->dist == TUNEP_DIST_CONST)
            continue;
        n_feat += p->dist == TUNEP_DIST_CHOICE ? p->n_values : 1;
        if (n_feat > TUNEP_GP_MAX_DIMS)
            return tunep_error_set(err, TUNE_ECONFIG,
                                   "gp: '%s' takes the model past %d inputs (one per parameter, "
                                   "one per value of a choice)",
                                   p->name, TUNEP_GP_MAX_DIMS);
    }

    struct gp *g = tunep_calloc(1, sizeof *g);
    if (!g)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory creating the gp searcher");
    g->base.ops = &gp_ops;
    g->base.space = space;
    g->c = *c;
    g->dims = dims;
    g->n_feat = n_feat;
    g->feat = tunep_calloc(dims ? dims : 1, sizeof *g->feat);
    g->vals = tunep_calloc(space->n ? space->n : 1, sizeof *g->vals);
    if (!g->feat || !g->vals) {
        gp_free(&g->base);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory creating the gp searcher");
    }
    size_t j = 0, off = 0;
    for (size_t i = 0; i < space->n; i++) {
        const struct tunep_param *p = &space->params[i];
        if (p->dist == TUNEP_DIST_CONST)
            continue;
        g->feat[j].off = off;
        g->feat[j].n_onehot = p->dist == TUNEP_DIST_CHOICE ? p->n_values : 0;
        off += p->dist == TUNEP_DIST_CHOICE ? p->n_values : 1;
        j++;
    }
    /* beyond 40 coordinates the start-up points are uniform instead */
    if (dims <= TUNEP_SOBOL_MAX_DIMS) {
        st = tunep_sobol_seq_init(&g->seq, dims, 1, seed, err);
        if (st) {
            gp_free(&g->base);
            return st;
        }
        g->have_sobol = 1;
    }
    st = tunep_gp_model_init(&g->model, n_feat, err);
    if (st) {
        gp_free(&g->base);
        return st;
    }
    *ret = &g->base;
    return TUNE_OK;
}
