/*
 * test_gp.c - Gaussian-process Bayesian optimisation (search/gp.c).
 *
 * The model: the posterior mean interpolates its observations and the
 * variance vanishes there when the noise is tiny; the analytic gradient of
 * the log marginal likelihood matches central differences; the fitted length
 * scale of a dimension the function ignores is longer than the others.
 * The searcher: sequential suggestions find the optimum of a 1-D quadratic
 * within 0.02 in 25 trials; the same seed and history give the same
 * suggestions; pending trials push parallel suggestions apart; every value is
 * legal for its parameter (integers, q values, choices of each type); -inf
 * scores and errored trials are handled; grid axes and bad options are
 * rejected naming the culprit; every allocation failure returns TUNE_ENOMEM.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_linalg.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "check_util.h"
#include "base/rng.h"
#include "search/gp.h"
#include "search/searcher.h"
#include "search/space.h"

static tune_error err;

#define OK(call) ck_assert_msg((call) == TUNE_OK, "%s: %s", #call, err.text)

static gsl_rng *rng_new(uint64_t seed)
{
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    ck_assert_ptr_nonnull(r);
    gsl_rng_set(r, (unsigned long)seed);
    return r;
}

/* theta back at the model's defaults, as after init. */
static void theta_reset(struct tunep_gp_model *m)
{
    struct tunep_gp_model fresh;
    OK(tunep_gp_model_init(&fresh, m->d, &err));
    memcpy(m->theta, fresh.theta, (m->d + 2) * sizeof *m->theta);
    tunep_gp_model_done(&fresh);
}

/* A smooth test function on [0, 1]^2. */
static double smooth2(const double *x)
{
    return sin(5.0 * x[0]) * cos(3.0 * x[1]) + 0.5 * x[0];
}

/* Fills a model with n random points of smooth2 (or of a 1-D sine when ignore_x1). */
static void fill(struct tunep_gp_model *m, size_t n, uint64_t seed, int ignore_x1)
{
    gsl_rng *r = rng_new(seed);
    OK(tunep_gp_model_reserve(m, n, &err));
    for (size_t i = 0; i < n; i++) {
        double *x = m->x + i * m->d;
        for (size_t t = 0; t < m->d; t++)
            x[t] = gsl_rng_uniform(r);
        m->y[i] = ignore_x1 ? sin(6.0 * x[0]) : smooth2(x);
    }
    m->n = n;
    gsl_rng_free(r);
}

START_TEST(test_model_interpolates)
{
    struct tunep_gp_model m;
    OK(tunep_gp_model_init(&m, 2, &err));
    fill(&m, 30, 1, 0);
    /* tiny noise: the noise floor of gp.h */
    m.theta[0] = log(0.3);
    m.theta[1] = log(0.3);
    m.theta[2] = 0.0;
    m.theta[3] = TUNEP_GP_LOG_NOISE_MIN;
    tunep_gp_model_condition(&m);
    double mu[30], var[30];
    tunep_gp_model_predict(&m, m.x, 30, mu, var);
    for (int i = 0; i < 30; i++) {
        ck_assert_msg(fabs(mu[i] - m.y[i]) < 1e-3 * fmax(1.0, fabs(m.y[i])), "%d: mu %g y %g", i,
                      mu[i], m.y[i]);
        ck_assert_msg(var[i] < 1e-5, "%d: var %g", i, var[i]); /* prior variance 1 */
    }
    /* away from the data the variance comes back towards the prior's */
    double far[2] = {2.5, -1.5}, mf, vf;
    tunep_gp_model_predict(&m, far, 1, &mf, &vf);
    ck_assert_double_gt(vf, 0.99);
    ck_assert_double_lt(fabs(mf), 1e-2);

    /* fitted on noiseless data, the model still interpolates and predicts between points */
    tunep_gp_model_fit(&m, NULL, 2, 100);
    ck_assert_double_lt(exp(m.theta[3]), 1e-3);
    tunep_gp_model_condition(&m);
    tunep_gp_model_predict(&m, m.x, 30, mu, var);
    for (int i = 0; i < 30; i++)
        ck_assert_msg(fabs(mu[i] - m.y[i]) < 1e-2 * fmax(1.0, fabs(m.y[i])), "%d: mu %g y %g", i,
                      mu[i], m.y[i]);
    gsl_rng *r = rng_new(99);
    double worst = 0.0;
    for (int k = 0; k < 200; k++) {
        double x[2] = {0.2 + 0.6 * gsl_rng_uniform(r), 0.2 + 0.6 * gsl_rng_uniform(r)}, mx, vx;
        tunep_gp_model_predict(&m, x, 1, &mx, &vx);
        worst = fmax(worst, fabs(mx - smooth2(x)));
    }
    ck_assert_msg(worst < 0.1, "worst error %g inside the data", worst); /* range of f: ~2.5 */
    gsl_rng_free(r);
    tunep_gp_model_done(&m);
}
END_TEST

START_TEST(test_model_gradient)
{
    struct tunep_gp_model m;
    OK(tunep_gp_model_init(&m, 3, &err));
    gsl_rng *r = rng_new(4);
    OK(tunep_gp_model_reserve(&m, 25, &err));
    for (int i = 0; i < 25; i++) {
        for (int t = 0; t < 3; t++)
            m.x[i * 3 + t] = gsl_rng_uniform(r);
        m.y[i] = smooth2(m.x + i * 3) + 0.1 * m.x[i * 3 + 2] + 0.05 * gsl_rng_uniform(r);
    }
    m.n = 25;
    gsl_rng_free(r);
    double theta[5] = {log(0.4), log(0.2), log(0.9), log(0.7), log(1e-2)}, grad[5];
    tunep_gp_model_lml(&m, theta, grad);
    for (int k = 0; k < 5; k++) {
        double h = 1e-5, tp[5], tm[5];
        memcpy(tp, theta, sizeof tp);
        memcpy(tm, theta, sizeof tm);
        tp[k] += h;
        tm[k] -= h;
        double fd = (tunep_gp_model_lml(&m, tp, NULL) - tunep_gp_model_lml(&m, tm, NULL)) / (2 * h);
        /* central differences: O(h^2) error, and ~1e-10 of cancellation in a likelihood ~30 */
        ck_assert_msg(fabs(fd - grad[k]) < 1e-5 * fmax(1.0, fabs(fd)), "theta %d: %g vs %g", k,
                      grad[k], fd);
    }
    tunep_gp_model_done(&m);
}
END_TEST

START_TEST(test_model_ignored_dimension)
{
    struct tunep_gp_model m;
    OK(tunep_gp_model_init(&m, 2, &err));
    fill(&m, 40, 7, 1);
    gsl_rng *r = rng_new(3);
    tunep_gp_model_fit(&m, r, 4, 100);
    gsl_rng_free(r);
    double ls0 = exp(m.theta[0]), ls1 = exp(m.theta[1]);
    /* f = sin(6 x0): x0 needs a length scale near 1/6 of a period; x1 none at all */
    ck_assert_msg(ls1 > 10.0 * ls0, "length scales %g (used) and %g (ignored)", ls0, ls1);
    ck_assert_double_lt(ls0, 1.0);
    tunep_gp_model_done(&m);
}
END_TEST

/*
 * Reference for log h(z), h(z) = z Phi(z) + phi(z), in long double: the direct
 * formula for z >= -5; below, Laplace's continued fraction for Mills' ratio
 * m(x) = 1 / T1, T_k = x + k / T_(k+1), x = -z, which gives h = phi(x) / (T1 T2)
 * with no subtraction, and d log h / dz = Phi / h = T2.
 */
static long double ref_log_h(long double z, long double *dlogh)
{
    if (z >= -5.0L) {
        long double cdf = 0.5L * erfcl(-z / sqrtl(2.0L));
        long double pdf = expl(-0.5L * z * z) / sqrtl(2.0L * 3.14159265358979323846264L);
        *dlogh = cdf / (z * cdf + pdf);
        return logl(z * cdf + pdf);
    }
    long double x = -z, t = x, t1 = x, t2 = x;
    for (int k = 4000; k >= 1; k--) {
        t = x + (long double)k / t;
        if (k == 2)
            t2 = t;
        if (k == 1)
            t1 = t;
    }
    *dlogh = t2;
    return -0.5L * x * x - 0.5L * logl(2.0L * 3.14159265358979323846264L) - logl(t1 * t2);
}

/* log h and its derivative against the reference, from z = 8 out to z = -1e6. */
START_TEST(test_log_h)
{
    static const double zs[] = {8.0,    3.0,    1.0,    0.0,   -0.5,  -1.0,  -3.0,
                                -4.999, -5.001, -6.0,   -10.0, -20.0, -29.9, -30.1,
                                -38.5,  -40.0,  -100.0, -1e3,  -1e4,  -1e6};
    for (size_t i = 0; i < sizeof zs / sizeof zs[0]; i++) {
        double d, v = tunep_gp_log_h(zs[i], &d);
        long double rd, rv = ref_log_h((long double)zs[i], &rd);
        /* log h is ~ -z^2 / 2 in the tail: relative precision there, absolute near 0 */
        double tol = 1e-12 * fmax(1.0, fabs((double)rv));
        ck_assert_msg(fabs(v - (double)rv) < tol, "z %g: log h %.17g, reference %.17Lg", zs[i], v,
                      rv);
        ck_assert_msg(fabs(d - (double)rd) < 1e-10 * fmax(1.0, fabs((double)rd)),
                      "z %g: d log h %.17g, reference %.17Lg", zs[i], d, rd);
        ck_assert(isfinite(v) && isfinite(d));
    }
    /* expected improvement itself, where it does not underflow: sd h(z) */
    double mu = 0.3, var = 0.04, fb = 0.5, sd = 0.2, z = (mu - fb) / sd;
    double ei = sd * (z * 0.5 * erfc(-z / M_SQRT2) + exp(-0.5 * z * z) / sqrt(2.0 * M_PI));
    ck_assert_double_eq_tol(tunep_gp_log_ei(mu, var, fb, NULL, NULL), log(ei), 1e-13);
}
END_TEST

/* The partial derivatives of log EI in mu and var against central differences. */
START_TEST(test_log_ei_gradient)
{
    static const double cases[][3] = {
        {0.3, 0.04, 0.5}, {1.2, 0.5, 0.1}, {-2.0, 0.01, 1.0}, {0.0, 1e-4, 0.8}, {-30.0, 0.2, 2.0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double mu = cases[i][0], var = cases[i][1], fb = cases[i][2], dm, dv;
        tunep_gp_log_ei(mu, var, fb, &dm, &dv);
        double hm = 1e-6 * sqrt(var), hv = 1e-6 * var;
        double fdm = (tunep_gp_log_ei(mu + hm, var, fb, NULL, NULL) -
                      tunep_gp_log_ei(mu - hm, var, fb, NULL, NULL)) /
                     (2 * hm);
        double fdv = (tunep_gp_log_ei(mu, var + hv, fb, NULL, NULL) -
                      tunep_gp_log_ei(mu, var - hv, fb, NULL, NULL)) /
                     (2 * hv);
        ck_assert_msg(fabs(dm - fdm) < 1e-6 * fmax(1.0, fabs(fdm)), "case %zu: d/dmu %g vs %g", i,
                      dm, fdm);
        ck_assert_msg(fabs(dv - fdv) < 1e-6 * fmax(1.0, fabs(fdv)), "case %zu: d/dvar %g vs %g", i,
                      dv, fdv);
    }
}
END_TEST

/* The posterior's gradient in x against central differences; mean and variance as predict's. */
START_TEST(test_predict_gradient)
{
    struct tunep_gp_model m;
    OK(tunep_gp_model_init(&m, 3, &err));
    gsl_rng *r = rng_new(11);
    OK(tunep_gp_model_reserve(&m, 20, &err));
    for (int i = 0; i < 20; i++) {
        for (int t = 0; t < 3; t++)
            m.x[i * 3 + t] = gsl_rng_uniform(r);
        m.y[i] = smooth2(m.x + i * 3) + 0.3 * m.x[i * 3 + 2];
    }
    m.n = 20;
    m.theta[0] = log(0.3);
    m.theta[1] = log(0.6);
    m.theta[2] = log(1.5);
    m.theta[3] = log(1.3);
    m.theta[4] = log(1e-4);
    tunep_gp_model_condition(&m);
    for (int k = 0; k < 10; k++) {
        double x[3], mu, var, dmu[3], dvar[3], pm, pv;
        for (int t = 0; t < 3; t++)
            x[t] = gsl_rng_uniform(r);
        if (k == 0) /* next to an observation, where the variance is small */
            for (int t = 0; t < 3; t++)
                x[t] = m.x[t] + 1e-3;
        tunep_gp_model_predict_grad(&m, x, &mu, &var, dmu, dvar);
        tunep_gp_model_predict(&m, x, 1, &pm, &pv);
        ck_assert_double_eq_tol(mu, pm, 1e-12);
        ck_assert_double_eq_tol(var, pv, 1e-12);
        for (int t = 0; t < 3; t++) {
            double h = 1e-6, xp[3], xm[3], mp, vp, mm, vm;
            memcpy(xp, x, sizeof xp);
            memcpy(xm, x, sizeof xm);
            xp[t] += h;
            xm[t] -= h;
            tunep_gp_model_predict_grad(&m, xp, &mp, &vp, NULL, NULL);
            tunep_gp_model_predict_grad(&m, xm, &mm, &vm, NULL, NULL);
            double fm = (mp - mm) / (2 * h), fv = (vp - vm) / (2 * h);
            ck_assert_msg(fabs(dmu[t] - fm) < 1e-6 * fmax(1.0, fabs(fm)), "%d/%d: dmu %g vs %g", k,
                          t, dmu[t], fm);
            ck_assert_msg(fabs(dvar[t] - fv) < 1e-6 * fmax(1.0, fabs(fv)), "%d/%d: dvar %g vs %g",
                          k, t, dvar[t], fv);
        }
    }
    gsl_rng_free(r);
    tunep_gp_model_done(&m);
}
END_TEST

/* The log prior's gradient against central differences; its mode is Optuna's. */
START_TEST(test_log_prior)
{
    double theta[4] = {log(0.15), log(4.0), log(2.5), log(3e-3)}, grad[4] = {0};
    tunep_gp_model_log_prior(2, theta, grad);
    for (int k = 0; k < 4; k++) {
        double h = 1e-6, tp[4], tm[4];
        memcpy(tp, theta, sizeof tp);
        memcpy(tm, theta, sizeof tm);
        tp[k] += h;
        tm[k] -= h;
        double fd =
            (tunep_gp_model_log_prior(2, tp, NULL) - tunep_gp_model_log_prior(2, tm, NULL)) /
            (2 * h);
        ck_assert_msg(fabs(fd - grad[k]) < 1e-6 * fmax(1.0, fabs(fd)), "theta %d: %g vs %g", k,
                      grad[k], fd);
    }
    /* the mode: length scale 1, signal variance 1 (Gamma(2, 1)), noise 0.1 / 30 (Gamma(1.1, 30)) */
    double mode[4] = {0.0, 0.0, 0.0, log(0.1 / 30.0)}, gm[4] = {0};
    tunep_gp_model_log_prior(2, mode, gm);
    for (int k = 0; k < 4; k++)
        ck_assert_msg(fabs(gm[k]) < 1e-12, "theta %d: gradient %g at the mode", k, gm[k]);
    /* values outside the box count as the box's edge, with no gradient */
    double out[4] = {log(1e-3), log(2.0), 0.0, log(1e-9)};
    double edge[4] = {TUNEP_GP_LOG_LS_MIN, log(2.0), 0.0, TUNEP_GP_LOG_NOISE_MIN};
    double go[4] = {0};
    ck_assert_double_eq(tunep_gp_model_log_prior(2, out, go),
                        tunep_gp_model_log_prior(2, edge, NULL));
    ck_assert(go[0] == 0.0 && go[3] == 0.0 && go[1] != 0.0);
}
END_TEST

/* Matern 5/2 at squared scaled distance r2, unit signal variance. */
static double matern52(double r2)
{
    double s = sqrt(5.0 * r2);
    return (1.0 + s + s * s / 3.0) * exp(-s);
}

/*
 * The MAP fit recovers the length scales of data drawn from the model
 * itself (a 2-D Matern 5/2 draw with length scales 0.2 and 0.8, 60 points),
 * and its prior keeps the length scale of an ignored input finite: maximum
 * likelihood would take it to the box's 30.
 */
START_TEST(test_map_fit)
{
    enum { N = 60 };
    static const double ls[2] = {0.2, 0.8};
    for (uint64_t seed = 1; seed <= 3; seed++) {
        gsl_rng *r = rng_new(seed);
        struct tunep_gp_model m;
        OK(tunep_gp_model_init(&m, 2, &err));
        OK(tunep_gp_model_reserve(&m, N, &err));
        for (int i = 0; i < 2 * N; i++)
            m.x[i] = gsl_rng_uniform(r);
        gsl_matrix *k = gsl_matrix_alloc(N, N);
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) {
                double r2 = 0.0;
                for (int t = 0; t < 2; t++) {
                    double z = (m.x[2 * i + t] - m.x[2 * j + t]) / ls[t];
                    r2 += z * z;
                }
                gsl_matrix_set(k, i, j, matern52(r2) + (i == j ? 1e-6 : 0.0));
            }
        gsl_linalg_cholesky_decomp1(k);
        double e[N], mean = 0.0, sq = 0.0;
        for (int i = 0; i < N; i++)
            e[i] = gsl_ran_gaussian(r, 1.0);
        for (int i = 0; i < N; i++) {
            m.y[i] = 0.0;
            for (int j = 0; j <= i; j++)
                m.y[i] += gsl_matrix_get(k, i, j) * e[j];
            mean += m.y[i] / N;
        }
        for (int i = 0; i < N; i++)
            sq += (m.y[i] - mean) * (m.y[i] - mean) / N;
        for (int i = 0; i < N; i++)
            m.y[i] = (m.y[i] - mean) / sqrt(sq); /* standardised, as the searcher does */
        m.n = N;
        tunep_gp_model_fit(&m, r, 2, 200);
        for (int t = 0; t < 2; t++)
            ck_assert_msg(fabs(m.theta[t] - log(ls[t])) < log(1.5),
                          "seed %d: length scale %d is %g, drawn with %g", (int)seed, t,
                          exp(m.theta[t]), ls[t]);
        /* the same inputs, y = sin(6 x0): x1 is ignored */
        for (int i = 0; i < 40; i++)
            m.y[i] = sin(6.0 * m.x[2 * i]);
        m.n = 40;
        theta_reset(&m);
        tunep_gp_model_fit(&m, r, 2, 200);
        ck_assert_msg(exp(m.theta[1]) > 10.0 * exp(m.theta[0]) && exp(m.theta[1]) < 15.0,
                      "seed %d: length scales %g (used) and %g (ignored)", (int)seed,
                      exp(m.theta[0]), exp(m.theta[1]));
        gsl_matrix_free(k);
        tunep_gp_model_done(&m);
        gsl_rng_free(r);
    }
}
END_TEST

/*
 * A categorical input: two values are as far apart whatever their codes, so
 * the covariance of the posterior at 0.9 and at 0.2 with one observation at
 * 0.1 is the same, and its gradient there is 0.
 */
START_TEST(test_categorical_input)
{
    struct tunep_gp_model m;
    OK(tunep_gp_model_init(&m, 2, &err));
    OK(tunep_gp_model_reserve(&m, 1, &err));
    m.cat[1] = 1;
    m.x[0] = 0.5;
    m.x[1] = 0.1;
    m.y[0] = 1.0;
    m.n = 1;
    m.theta[0] = log(0.3);
    m.theta[1] = log(0.7);
    m.theta[2] = 0.0;
    m.theta[3] = log(1e-4);
    tunep_gp_model_condition(&m);
    double a[2] = {0.6, 0.9}, b[2] = {0.6, 0.2}, same_cat[2] = {0.6, 0.1};
    double ma, va, mb, vb, ms, vs, dmu[2], dvar[2];
    tunep_gp_model_predict_grad(&m, a, &ma, &va, dmu, dvar);
    tunep_gp_model_predict_grad(&m, b, &mb, &vb, NULL, NULL);
    tunep_gp_model_predict_grad(&m, same_cat, &ms, &vs, NULL, NULL);
    ck_assert_double_eq_tol(ma, mb, 1e-15);
    ck_assert_double_eq_tol(va, vb, 1e-15);
    ck_assert(dmu[1] == 0.0 && dvar[1] == 0.0 && dmu[0] != 0.0);
    /* k(a, x) / sf2 = Matern at (0.1 / 0.3)^2 + 1 / 0.7^2; with K = 1 + 1e-4, mu = k / K */
    double kax = matern52(pow(0.1 / 0.3, 2) + 1.0 / (0.7 * 0.7));
    ck_assert_double_eq_tol(ma, kax / (1.0 + 1e-4), 1e-12);
    ck_assert_double_eq_tol(ms, matern52(pow(0.1 / 0.3, 2)) / (1.0 + 1e-4), 1e-12);
    double mx, vx; /* the batch predict agrees */
    tunep_gp_model_predict(&m, a, 1, &mx, &vx);
    ck_assert_double_eq_tol(mx, ma, 1e-14);
    ck_assert_double_eq_tol(vx, va, 1e-14);
    tunep_gp_model_done(&m);
}
END_TEST

/* ---- the acquisition optimiser ------------------------------------------- */

/*
 * A known function of a mixed space: x uniform, y log-uniform, k an integer
 * 0..10, c a choice of 3, m an integer 0..999 (too many values to try
 * each). In unit coordinates u: -((u0 - 0.3 - 0.02 k) / 0.1)^2 - (u1 - 1.2)^2
 * - 0.05 (k - 7)^2 + [c == "b"] - ((m - 613) / 100)^2: its maximum is at
 * u0 = 0.44, u1 at the top of the cube, k = 7, c = "b", m = 613.
 */
struct known {
    const tune_space *sp;
    long evals;
};

static double known_f(void *ctx, const double *u, double *grad)
{
    struct known *kn = ctx;
    struct tunep_value v[5];
    tunep_unit_to_values(kn->sp, u, v);
    kn->evals++;
    double k = (double)v[2].u.i, m = (double)v[4].u.i, a = (u[0] - 0.3 - 0.02 * k) / 0.1;
    if (grad) {
        grad[0] = -2.0 * a / 0.1;
        grad[1] = -2.0 * (u[1] - 1.2);
    }
    return -a * a - (u[1] - 1.2) * (u[1] - 1.2) - 0.05 * (k - 7.0) * (k - 7.0) +
           (strcmp(v[3].u.s, "b") == 0) - (m - 613.0) * (m - 613.0) / 1e4;
}

START_TEST(test_optimiser_known_maximum)
{
    static const char *const cv[] = {"a", "b", "c"};
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_uniform(sp, "x", -1.0, 1.0, &err));
    OK(tune_space_add_loguniform(sp, "y", 1e-4, 1.0, 10.0, &err));
    OK(tune_space_add_randint(sp, "k", 0, 11, &err));
    OK(tune_space_add_choice_string(sp, "c", cv, 3, &err));
    OK(tune_space_add_randint(sp, "m", 0, 1000, &err));
    struct tunep_gp_opt *o;
    OK(tunep_gp_opt_new(sp, &o, &err));
    struct known kn = {sp, 0};
    static const double scale[5] = {0.1, 1.0, 1.0, 1.0, 1.0};
    gsl_rng *r = rng_new(8);
    for (int start = 0; start < 10; start++) {
        double u[5];
        for (int j = 0; j < 5; j++)
            u[j] = gsl_rng_uniform(r);
        tunep_gp_opt_snap(o, u);
        kn.evals = 0;
        double f = tunep_gp_opt_local(o, known_f, &kn, scale, u);
        struct tunep_value v[5];
        tunep_unit_to_values(sp, u, v);
        ck_assert_msg(v[2].u.i == 7 && strcmp(v[3].u.s, "b") == 0 && v[4].u.i == 613,
                      "start %d: k %lld, c %s, m %lld", start, (long long)v[2].u.i, v[3].u.s,
                      (long long)v[4].u.i);
        ck_assert_msg(fabs(u[0] - 0.44) < 1e-4, "start %d: u0 %.6f", start, u[0]);
        ck_assert_msg(u[1] == 1.0 - 0x1.0p-53, "start %d: u1 %.17g not at the bound", start, u[1]);
        ck_assert(f == known_f(&kn, u, NULL));
        ck_assert_double_eq_tol(f, 1.0 - 0.04, 1e-7);
        ck_assert_msg(kn.evals < 3000, "start %d: %ld evaluations", start, kn.evals);
    }
    gsl_rng_free(r);
    tunep_gp_opt_free(o);
    tune_space_free(sp);
}
END_TEST

/*
 * Two correlated continuous inputs on very different length scales: the
 * maximum of -((u0 - 0.3) / 0.01)^2 - (u0 + u1 - 0.9)^2 is reached from any
 * start, to the optimiser's tolerance (a gradient of 1e-3 per length scale:
 * u1 within 1e-3, f within 1e-6).
 */
static double valley_f(void *ctx, const double *u, double *grad)
{
    (void)ctx;
    double a = (u[0] - 0.3) / 0.01, b = u[0] + u[1] - 0.9;
    if (grad) {
        grad[0] = -2.0 * a / 0.01 - 2.0 * b;
        grad[1] = -2.0 * b;
    }
    return -a * a - b * b;
}

START_TEST(test_optimiser_valley)
{
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_uniform(sp, "a", 0.0, 1.0, &err));
    OK(tune_space_add_uniform(sp, "b", 0.0, 1.0, &err));
    struct tunep_gp_opt *o;
    OK(tunep_gp_opt_new(sp, &o, &err));
    static const double scale[2] = {0.01, 1.0};
    gsl_rng *r = rng_new(2);
    for (int start = 0; start < 10; start++) {
        double u[2] = {gsl_rng_uniform(r), gsl_rng_uniform(r)};
        double f = tunep_gp_opt_local(o, valley_f, NULL, scale, u);
        ck_assert_msg(fabs(u[0] - 0.3) < 1e-5 && fabs(u[1] - 0.6) < 1e-3, "start %d: %g %g", start,
                      u[0], u[1]);
        ck_assert_double_lt(-f, 1e-6);
    }
    gsl_rng_free(r);
    tunep_gp_opt_free(o);
    tune_space_free(sp);
}
END_TEST

static int same(const struct tunep_value *a, const struct tunep_value *b)
{
    if (a->type != b->type)
        return 0;
    switch (a->type) {
        case TUNEP_V_DOUBLE: return a->u.d == b->u.d;
        case TUNEP_V_INT: return a->u.i == b->u.i;
        case TUNEP_V_STRING: return strcmp(a->u.s, b->u.s) == 0;
        case TUNEP_V_BOOL: return a->u.b == b->u.b;
        case TUNEP_V_ABSENT: return 1;
    }
    return 0;
}

/* ---- the searcher --------------------------------------------------------- */

/* Ask, start, tell: one sequential trial. Returns the suggested values in v. */
static void run_trial(struct tunep_searcher *s, int64_t id, uint64_t seed, struct tunep_value *v)
{
    gsl_rng *r = rng_new(tunep_trial_seed(seed, id, TUNEP_RNG_SAMPLE));
    OK(s->ops->suggest(s, id, r, v, &err));
    gsl_rng_free(r);
    ck_assert_int_eq(s->ops->on_start(s, id, v), TUNE_OK);
}

START_TEST(test_quadratic_1d)
{
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_uniform(sp, "x", -2.0, 3.0, &err));
    double opt = 0.737;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        struct tunep_searcher *s;
        OK(tunep_gp_new(sp, NULL, seed, &s, &err));
        ck_assert_str_eq(s->ops->name, "gp");
        double best_dist = HUGE_VAL;
        for (int id = 0; id < 25; id++) {
            struct tunep_value v[1];
            run_trial(s, id, seed, v);
            double x = v[0].u.d;
            ck_assert(x >= -2.0 && x < 3.0);
            best_dist = fmin(best_dist, fabs(x - opt));
            ck_assert_int_eq(s->ops->on_complete(s, id, 1, 1.0, -(x - opt) * (x - opt)), TUNE_OK);
        }
        /* random search: P(25 draws miss a 0.04 window of 5) = 0.992^25 = 0.82 */
        ck_assert_msg(best_dist < 0.02, "seed %d: closest %g", (int)seed, best_dist);
        tunep_searcher_free(s);
    }
    tune_space_free(sp);
}
END_TEST

/*
 * bench/search_bench.c's learning curve: lr (log) and weight decay matter a
 * lot, batch size (a choice) and warm-up steps (an integer) a little (0.01
 * and 0.002 per step from their best, 32 and 3). After 40 trials every
 * seed has found both: length scales left to maximum likelihood let the
 * weak inputs drift to irrelevance (half the seeds stopped 3 steps off).
 */
static double curve27(double lr, double wd, int64_t bs, int64_t warm)
{
    double dl = log10(lr) - log10(3e-4);
    double pen = bs == 16 ? 0.01 : bs == 64 ? 0.015 : 0.0;
    double asym = 0.93 - 0.06 * dl * dl - 0.4 * (wd - 0.05) * (wd - 0.05) - pen -
                  0.002 * fabs((double)warm - 3.0);
    asym = asym > 0.3 ? asym : 0.3;
    double k = 0.04 + 0.3 * fmin(1.0, sqrt(lr / 1e-3));
    return asym * (1.0 - 0.7 * exp(-k * 27.0));
}

START_TEST(test_weak_parameters)
{
    static const int64_t bss[3] = {16, 32, 64};
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_loguniform(sp, "lr", 1e-6, 1e-1, 10.0, &err));
    OK(tune_space_add_uniform(sp, "weight_decay", 0.0, 0.3, &err));
    OK(tune_space_add_choice_int(sp, "batch_size", bss, 3, &err));
    OK(tune_space_add_randint(sp, "warmup", 0, 11, &err));
    for (uint64_t seed = 1; seed <= 6; seed++) {
        struct tunep_searcher *s;
        OK(tunep_gp_new(sp, NULL, seed, &s, &err));
        double best = -HUGE_VAL;
        int64_t best_bs = 0, best_warm = 0;
        for (int id = 0; id < 40; id++) {
            struct tunep_value v[4];
            run_trial(s, id, seed, v);
            double y = curve27(v[0].u.d, v[1].u.d, v[2].u.i, v[3].u.i);
            if (y > best) {
                best = y;
                best_bs = v[2].u.i;
                best_warm = v[3].u.i;
            }
            OK(s->ops->on_complete(s, id, 1, 1.0, y));
        }
        ck_assert_msg(best_bs == 32 && best_warm == 3,
                      "seed %d: best %.6f at batch %lld, warm-up %lld", (int)seed, best,
                      (long long)best_bs, (long long)best_warm);
        tunep_searcher_free(s);
    }
    tune_space_free(sp);
}
END_TEST

/* Two searchers fed the same history suggest the same values, bit for bit. */
START_TEST(test_reproducible)
{
    tune_space *sp;
    static const char *const opts[] = {"adam", "sgd", "lamb"};
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_loguniform(sp, "lr", 1e-5, 1e-1, 10.0, &err));
    OK(tune_space_add_randint(sp, "layers", 1, 9, &err));
    OK(tune_space_add_choice_string(sp, "opt", opts, 3, &err));
    OK(tune_space_add_uniform(sp, "dropout", 0.0, 0.5, &err));
    struct tunep_searcher *a, *b, *c;
    OK(tunep_gp_new(sp, NULL, 42, &a, &err));
    OK(tunep_gp_new(sp, NULL, 42, &b, &err));
    OK(tunep_gp_new(sp, NULL, 43, &c, &err));
    int differ = 0;
    for (int id = 0; id < 20; id++) {
        struct tunep_value va[4], vb[4], vc[4];
        run_trial(a, id, 42, va);
        run_trial(b, id, 42, vb);
        run_trial(c, id, 43, vc);
        for (int k = 0; k < 4; k++)
            ck_assert(same(&va[k], &vb[k]));
        differ += va[0].u.d != vc[0].u.d;
        double y = -fabs(log10(va[0].u.d) + 3.0) - 0.1 * (double)va[1].u.i +
                   (strcmp(va[2].u.s, "sgd") == 0 ? 0.5 : 0.0) - va[3].u.d;
        OK(a->ops->on_complete(a, id, 1, 1.0, y));
        OK(b->ops->on_complete(b, id, 1, 1.0, y));
        OK(c->ops->on_complete(c, id, 1, 1.0, y));
    }
    ck_assert_int_ge(differ, 15);
    tunep_searcher_free(a);
    tunep_searcher_free(b);
    tunep_searcher_free(c);
    tune_space_free(sp);
}
END_TEST

/* The parameter rules of space.c's header, written out (as test_qmc.c's). */
static int possible(const struct tunep_param *p, const struct tunep_value *v)
{
    switch (p->dist) {
        case TUNEP_DIST_UNIFORM:
        case TUNEP_DIST_LOGUNIFORM:
            return v->type == TUNEP_V_DOUBLE && v->u.d >= p->lo && v->u.d < p->hi;
        case TUNEP_DIST_QUNIFORM:
        case TUNEP_DIST_QLOGUNIFORM:
            return v->type == TUNEP_V_DOUBLE && v->u.d >= p->lo && v->u.d <= p->hi &&
                   v->u.d == nearbyint(v->u.d / p->q) * p->q;
        case TUNEP_DIST_RANDN: return v->type == TUNEP_V_DOUBLE && isfinite(v->u.d);
        case TUNEP_DIST_RANDINT:
        case TUNEP_DIST_LOGRANDINT:
            return v->type == TUNEP_V_INT && v->u.i >= p->ilo && v->u.i < p->ihi;
        case TUNEP_DIST_QRANDINT:
        case TUNEP_DIST_QLOGRANDINT:
            return v->type == TUNEP_V_INT && v->u.i >= p->ilo && v->u.i <= p->ihi &&
                   (v->u.i - p->ilo) % p->iq == 0;
        case TUNEP_DIST_CHOICE:
        case TUNEP_DIST_CONST:
            /* the very value of the space: strings borrowed, not copied */
            for (size_t k = 0; k < p->n_values; k++)
                if (same(&p->values[k], v) &&
                    (v->type != TUNEP_V_STRING || v->u.s == p->values[k].u.s))
                    return 1;
            return 0;
        default: return 0;
    }
}

/*
 * A space of every kind, sequential trials with a score that depends on all
 * of them, a few failed metrics (-inf) and errored trials: every suggestion
 * is legal, and the model run beats its start-up phase.
 */
START_TEST(test_mixed_space_legal)
{
    static const double dv[] = {0.5, -2.0, 1e-3};
    static const int64_t iv[] = {7, -3, 0};
    static const char *const sv[] = {"adam", "sgd", "rmsprop"};
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_quniform(sp, "qu", 0.0, 1.0, 0.1, &err));
    OK(tune_space_add_qloguniform(sp, "qlu", 0.5, 64.0, 0.5, 2.0, &err));
    OK(tune_space_add_randn(sp, "n", 1.0, 2.0, &err));
    OK(tune_space_add_qrandint(sp, "qri", 0, 100, 20, &err));
    OK(tune_space_add_lograndint(sp, "lri", 1, 1000, 10.0, &err));
    OK(tune_space_add_qlograndint(sp, "qlri", 2, 512, 2, 2.0, &err));
    OK(tune_space_add_choice_double(sp, "cd", dv, 3, &err));
    OK(tune_space_add_choice_int(sp, "ci", iv, 3, &err));
    OK(tune_space_add_choice_string(sp, "cs", sv, 3, &err));
    OK(tune_space_add_const_string(sp, "k", "fixed", &err));
    struct tunep_value bv[2] = {{TUNEP_V_BOOL, {.b = 1}}, {TUNEP_V_BOOL, {.b = 0}}};
    char cb_name[] = "cb";
    struct tunep_param bp = {
        .name = cb_name, .dist = TUNEP_DIST_CHOICE, .n_values = 2, .values = bv};
    OK(tunep_space_add(sp, &bp, &err));
    struct tunep_searcher *s;
    OK(tunep_gp_new(sp, NULL, 9, &s, &err));
    double best_start = -HUGE_VAL, best_model = -HUGE_VAL;
    for (int id = 0; id < 40; id++) {
        struct tunep_value v[11];
        run_trial(s, id, 9, v);
        for (size_t i = 0; i < sp->n; i++)
            ck_assert_msg(possible(&sp->params[i], &v[i]), "trial %d: '%s' is not legal", id,
                          sp->params[i].name);
        ck_assert_str_eq(v[9].u.s, "fixed");
        if (id % 7 == 3) { /* an errored trial: forgotten */
            OK(s->ops->on_complete(s, id, 0, 0.0, 0.0));
            continue;
        }
        double y = -fabs(v[0].u.d - 0.3) - fabs(log2(v[1].u.d) - 3.0) - 0.1 * fabs(v[2].u.d) -
                   fabs((double)v[3].u.i - 60.0) / 50.0 - fabs(log10((double)v[4].u.i) - 2.0) +
                   (v[6].u.d == 1e-3) + (v[7].u.i == -3) + (strcmp(v[8].u.s, "sgd") == 0) +
                   v[10].u.b;
        if (id % 5 == 4)
            y = -HUGE_VAL; /* a failed metric counts as the worst */
        OK(s->ops->on_result(s, id, 1.0, y));
        OK(s->ops->on_complete(s, id, 1, 1.0, y));
        if (id < 10)
            best_start = fmax(best_start, y);
        else
            best_model = fmax(best_model, y);
    }
    ck_assert_msg(best_model > best_start, "model %g, start-up %g", best_model, best_start);
    tunep_searcher_free(s);
    tune_space_free(sp);
}
END_TEST

/*
 * Eight workers ask at once after 15 finished trials. With the eight
 * pending (on_start called), the suggestions spread out; asked the same
 * without telling the searcher they started, they pile up at the optimum.
 */
static double closest_of_eight(int tell_start)
{
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_uniform(sp, "x", 0.0, 1.0, &err));
    OK(tune_space_add_uniform(sp, "y", 0.0, 1.0, &err));
    struct tunep_searcher *s;
    OK(tunep_gp_new(sp, NULL, 3, &s, &err));
    int id = 0;
    for (; id < 15; id++) {
        struct tunep_value v[2];
        run_trial(s, id, 3, v);
        double f = -((v[0].u.d - 0.6) * (v[0].u.d - 0.6) + (v[1].u.d - 0.4) * (v[1].u.d - 0.4));
        OK(s->ops->on_complete(s, id, 1, 1.0, f));
    }
    double pts[8][2];
    for (int k = 0; k < 8; k++, id++) {
        struct tunep_value v[2];
        gsl_rng *r = rng_new(tunep_trial_seed(3, id, TUNEP_RNG_SAMPLE));
        OK(s->ops->suggest(s, id, r, v, &err));
        gsl_rng_free(r);
        if (tell_start)
            OK(s->ops->on_start(s, id, v));
        pts[k][0] = v[0].u.d;
        pts[k][1] = v[1].u.d;
    }
    double closest = HUGE_VAL;
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < a; b++)
            closest = fmin(closest, hypot(pts[a][0] - pts[b][0], pts[a][1] - pts[b][1]));
    tunep_searcher_free(s);
    tune_space_free(sp);
    return closest;
}

START_TEST(test_pending_repel)
{
    double apart = closest_of_eight(1), together = closest_of_eight(0);
    ck_assert_msg(apart > 0.05 && apart > 10.0 * together, "closest pair %g pending, %g not", apart,
                  together);
}
END_TEST

START_TEST(test_rejects)
{
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_uniform(sp, "x", 0.0, 1.0, &err));
    static const double g[] = {0.1, 0.2};
    OK(tune_space_add_grid_double(sp, "wd", g, 2, &err));
    struct tunep_searcher *s = NULL;
    ck_assert_int_eq(tunep_gp_new(sp, NULL, 1, &s, &err), TUNE_ECONFIG);
    ck_assert_msg(strstr(err.text, "'wd'") && strstr(err.text, "'gp'"), "%s", err.text);
    ck_assert_ptr_null(s);
    tune_space_free(sp);

    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_uniform(sp, "x", 0.0, 1.0, &err));
    struct tunep_gp_config c;
    tunep_gp_config_default(&c);
    ck_assert_int_eq(c.n_startup_trials, 10);
    ck_assert_int_eq(c.n_candidates, 2000);
    c.n_candidates = 0;
    ck_assert_int_eq(tunep_gp_new(sp, &c, 1, &s, &err), TUNE_ECONFIG);
    ck_assert_msg(strstr(err.text, "n_candidates"), "%s", err.text);
    tunep_gp_config_default(&c);
    c.refit_every = 0;
    ck_assert_int_eq(tunep_gp_new(sp, &c, 1, &s, &err), TUNE_ECONFIG);
    tunep_gp_config_default(&c);
    c.xi = -1.0;
    ck_assert_int_eq(tunep_gp_new(sp, &c, 1, &s, &err), TUNE_ECONFIG);
    tunep_gp_config_default(&c);
    c.n_startup_trials = -1;
    ck_assert_int_eq(tunep_gp_new(sp, &c, 1, &s, &err), TUNE_ECONFIG);

    /* a choice is one input however many values it has */
    static const char *many[300];
    char names[300][8];
    for (int i = 0; i < 300; i++) {
        snprintf(names[i], sizeof names[i], "v%d", i);
        many[i] = names[i];
    }
    OK(tune_space_add_choice_string(sp, "vocab", many, 300, &err));
    OK(tunep_gp_new(sp, NULL, 1, &s, &err));
    tunep_searcher_free(s);
    s = NULL;
    /* inputs beyond the model's limit: the parameter that crosses it is named */
    for (int i = 2; i < TUNEP_GP_MAX_DIMS; i++)
        OK(tune_space_add_uniform(sp, names[i], 0.0, 1.0, &err));
    OK(tunep_gp_new(sp, NULL, 1, &s, &err)); /* 256 inputs: the most */
    tunep_searcher_free(s);
    s = NULL;
    OK(tune_space_add_uniform(sp, "one_more", 0.0, 1.0, &err));
    ck_assert_int_eq(tunep_gp_new(sp, NULL, 1, &s, &err), TUNE_ECONFIG);
    ck_assert_msg(strstr(err.text, "'one_more'"), "%s", err.text);
    ck_assert_ptr_null(s);
    tune_space_free(sp);
}
END_TEST

/* The start-up trials are the scrambled Sobol design: the Sobol searcher's points. */
START_TEST(test_startup_is_sobol)
{
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_uniform(sp, "x", 0.0, 1.0, &err));
    OK(tune_space_add_randint(sp, "k", 0, 50, &err));
    struct tunep_searcher *g, *q;
    OK(tunep_gp_new(sp, NULL, 17, &g, &err));
    OK(tunep_sobol_new(sp, NULL, 17, &q, &err));
    for (int id = 0; id < 10; id++) {
        struct tunep_value vg[2], vq[2];
        run_trial(g, id, 17, vg);
        OK(q->ops->suggest(q, id, NULL, vq, &err));
        ck_assert(same(&vg[0], &vq[0]) && same(&vg[1], &vq[1]));
        OK(g->ops->on_complete(g, id, 1, 1.0, vg[0].u.d));
    }
    tunep_searcher_free(g);
    tunep_searcher_free(q);
    tune_space_free(sp);
}
END_TEST

START_TEST(test_alloc_failures)
{
    tune_space *sp;
    static const char *const sv[] = {"a", "b"};
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_uniform(sp, "x", 0.0, 1.0, &err));
    OK(tune_space_add_choice_string(sp, "c", sv, 2, &err));
    struct tunep_gp_config c;
    tunep_gp_config_default(&c);
    c.n_startup_trials = 3;
    c.n_candidates = 50;
    int clean = 0;
    for (long k = 0; k < 400 && !clean; k++) {
        struct tunep_searcher *s = NULL;
        tune_test_alloc_fail_after(k);
        tune_status st = tunep_gp_new(sp, &c, 1, &s, &err);
        /* 40 trials: the trial table grows past 32 */
        for (int id = 0; id < 40 && st == TUNE_OK; id++) {
            struct tunep_value v[2];
            gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
            gsl_rng_set(r, (unsigned long)id);
            st = s->ops->suggest(s, id, r, v, &err);
            gsl_rng_free(r);
            if (st == TUNE_OK)
                st = s->ops->on_start(s, id, v);
            if (st == TUNE_OK)
                st = s->ops->on_complete(s, id, 1, 1.0, -fabs(v[0].u.d - 0.5));
        }
        int hit = tune_test_alloc_failed();
        tune_test_alloc_reset();
        ck_assert_int_eq(st, hit ? TUNE_ENOMEM : TUNE_OK);
        clean = !hit;
        tunep_searcher_free(s);
    }
    ck_assert_msg(clean, "allocations never stopped failing");
    tune_space_free(sp);
}
END_TEST

static Suite *gp_suite(void)
{
    Suite *s = suite_create("gp");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_model_interpolates);
    tcase_add_test(tc, test_model_gradient);
    tcase_add_test(tc, test_model_ignored_dimension);
    tcase_add_test(tc, test_log_h);
    tcase_add_test(tc, test_log_ei_gradient);
    tcase_add_test(tc, test_predict_gradient);
    tcase_add_test(tc, test_log_prior);
    tcase_add_test(tc, test_map_fit);
    tcase_add_test(tc, test_categorical_input);
    tcase_add_test(tc, test_optimiser_known_maximum);
    tcase_add_test(tc, test_optimiser_valley);
    suite_add_tcase(s, tc);
    tc = tcase_create("searcher");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_quadratic_1d);
    tcase_add_test(tc, test_weak_parameters);
    tcase_add_test(tc, test_reproducible);
    tcase_add_test(tc, test_mixed_space_legal);
    tcase_add_test(tc, test_pending_repel);
    tcase_add_test(tc, test_rejects);
    tcase_add_test(tc, test_startup_is_sobol);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(gp_suite)
