/*
 * test_tpe_kernel.c - search/tpe_kernel.h's kernels, every variant this CPU
 * runs (generic, AVX2, AVX-512):
 * - exp against libm's on 4 million points of [-708, 709] (denser where TPE
 *   uses it: [-40.5, 0] for kernels, [-50, 0] for log-sum-exp): relative
 *   error below 5e-16 (the worst seen: 4.0e-16); 0 below -708; NaN stays NaN;
 * - exp2 against libm's on 3 million points of [-1022, 1023] (denser in
 *   [-60, 0], where the Gaussian kernels use it): below 5e-16; 0 from -1022
 *   down; NaN stays NaN;
 * - log against libm's on 3 million positive normal numbers (every binade,
 *   around 1 and around sqrt(2)/2, where its reduction switches): relative
 *   error below 4.5e-16 (the worst seen: 2.2e-16); an array holding zero, a
 *   negative, a subnormal or infinity gets libm's logs;
 * - the Gaussian kernel sum (2^(-log2(e)/2 z^2) per term) and the sum of
 *   exponentials against plain libm loops (exp(-z^2/2)): relative difference
 *   below 1e-14 for sums of up to 2,000 terms;
 * - the fitting helpers (maximum, division, coefficients, widths, ties,
 *   merging, reach bounds) and the multivariate terms equal to the plain
 *   loops, bit for bit;
 * - every variant gives the same bits as the generic one on every input.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"
#include "search/tpe_kernel.h"

/* ck_assert_msg for hot loops: Check logs every assertion it evaluates, this only failures. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg(__VA_ARGS__);                                                             \
    } while (0)

static uint64_t rng_state = 0x2545f4914f6cdd1du;

static double uniform(double lo, double hi) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    z ^= z >> 31;
    return lo + (hi - lo) * ((double)(z >> 11) * 0x1.0p-53);
}

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* The variants this CPU runs, generic first. */
static size_t variants(const struct tunep_tpe_kernels **out)
{
    size_t n = 0;
    for (int i = 0; i < 3; i++)
        if (tunep_tpe_kernels_get(i))
            out[n++] = tunep_tpe_kernels_get(i);
    return n;
}

START_TEST(test_best_is_a_variant)
{
    const struct tunep_tpe_kernels *v[3], *best = tunep_tpe_kernels_best();
    size_t n = variants(v);
    ck_assert_uint_ge(n, 1);
    ck_assert_str_eq(v[0]->name, "generic");
    ck_assert_ptr_eq(best, v[n - 1]); /* the widest */
}
END_TEST

START_TEST(test_exp_against_libm)
{
    enum { N = 1 << 20 };
    const struct tunep_tpe_kernels *v[3];
    size_t nv = variants(v);
    double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *y0 = malloc(N * sizeof *y0);
    ck_assert(x && y && y0);
    double worst = 0.0;
    for (int round = 0; round < 4; round++) {
        double lo = round == 0 ? -708.0 : round == 1 ? -40.5 : round == 2 ? -50.0 : -1e-3;
        double hi = round == 0 ? 709.0 : 0.0;
        for (size_t k = 0; k < N; k++)
            x[k] = uniform(lo, hi);
        /* the rounding boundaries of k / 64 and the ends */
        for (size_t k = 0; k < 64; k++)
            x[k] = -(double)(k + round * 64) * 0x1.62e42fefa39efp-1 / 64.0;
        x[64] = 0.0;
        x[65] = -0.0;
        x[66] = -708.0;
        x[67] = 709.0;
        x[68] = -0x1.0p-1074;
        x[69] = -1e-300;
        v[0]->exp_n(x, y0, N);
        for (size_t k = 0; k < N; k++) {
            double e = exp(x[k]), err = fabs(y0[k] - e) / e;
            worst = err > worst ? err : worst;
            CHECK(err < 5e-16, "exp(%a) = %a, libm %a: relative error %g", x[k], y0[k], e, err);
        }
        for (size_t i = 1; i < nv; i++) {
            v[i]->exp_n(x, y, N);
            for (size_t k = 0; k < N; k++)
                CHECK(same_bits(y[k], y0[k]), "%s exp(%a) = %a, generic %a", v[i]->name, x[k], y[k],
                      y0[k]);
        }
    }
    ck_assert(worst > 0.0); /* the approximation is one: it is not libm's bits everywhere */
    free(x);
    free(y);
    free(y0);
}
END_TEST

START_TEST(test_exp2_against_libm)
{
    enum { N = 1 << 20 };
    const struct tunep_tpe_kernels *v[3];
    size_t nv = variants(v);
    double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *y0 = malloc(N * sizeof *y0);
    ck_assert(x && y && y0);
    for (int round = 0; round < 3; round++) {
        double lo = round == 0   ? -1021.9
                    : round == 1 ? -60.0
                                 : -1.0,
               hi = round == 0 ? 1023.0 : 0.0;
        for (size_t k = 0; k < N; k++)
            x[k] = uniform(lo, hi);
        for (size_t k = 0; k < 128; k++) /* the rounding boundaries of k / 64 */
            x[k] = -(double)(k + round * 128) / 128.0;
        v[0]->exp2_n(x, y0, N);
        for (size_t k = 0; k < N; k++) {
            double e = exp2(x[k]), err = fabs(y0[k] - e) / e;
            CHECK(err < 5e-16, "exp2(%a) = %a, libm %a: relative error %g", x[k], y0[k], e, err);
        }
        for (size_t i = 1; i < nv; i++) {
            v[i]->exp2_n(x, y, N);
            for (size_t k = 0; k < N; k++)
                CHECK(same_bits(y[k], y0[k]), "%s exp2(%a) = %a, generic %a", v[i]->name, x[k],
                      y[k], y0[k]);
        }
    }
    double e[5] = {-1022.0, -1100.5, -1e300, (double)NAN, 0.0}, f[5];
    for (size_t i = 0; i < nv; i++) {
        v[i]->exp2_n(e, f, 5);
        for (int k = 0; k < 3; k++)
            CHECK(f[k] == 0.0, "%s exp2(%g) = %g, want 0", v[i]->name, e[k], f[k]);
        CHECK(isnan(f[3]), "%s exp2(NaN) = %g", v[i]->name, f[3]);
        CHECK(f[4] == 1.0, "%s exp2(0) = %g", v[i]->name, f[4]);
    }
    free(x);
    free(y);
    free(y0);
}
END_TEST

START_TEST(test_log_against_libm)
{
    enum { N = 1 << 20 };
    const struct tunep_tpe_kernels *v[3];
    size_t nv = variants(v);
    double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *y0 = malloc(N * sizeof *y0);
    ck_assert(x && y && y0);
    for (int round = 0; round < 3; round++) {
        for (size_t k = 0; k < N; k++) /* every binade; around 1; around sqrt(2) / 2 */
            x[k] = round == 0   ? exp2(uniform(-1022.0, 1023.99))
                   : round == 1 ? uniform(0.999, 1.001)
                                : uniform(0.70, 0.72);
        x[0] = 1.0;
        x[1] = 0x1.0p-1022;
        x[2] = 0x1.fffffffffffffp1023;
        x[3] = 0x1.6a09e667f3bcdp-1;
        v[0]->log_n(x, y0, N);
        for (size_t k = 0; k < N; k++) {
            double e = log(x[k]), err = e == 0.0 ? fabs(y0[k]) : fabs(y0[k] - e) / fabs(e);
            CHECK(err < 4.5e-16, "log(%a) = %a, libm %a: relative error %g", x[k], y0[k], e, err);
        }
        for (size_t i = 1; i < nv; i++) {
            v[i]->log_n(x, y, N);
            for (size_t k = 0; k < N; k++)
                CHECK(same_bits(y[k], y0[k]), "%s log(%a) = %a, generic %a", v[i]->name, x[k], y[k],
                      y0[k]);
        }
    }
    /* one value outside the positive normal numbers: libm's logs for the whole array, in place */
    double e[6] = {0.5, 0x1.0p-1070, 2.0, 0.0, -1.0, (double)INFINITY};
    for (size_t i = 0; i < nv; i++) {
        double f[6];
        memcpy(f, e, sizeof f);
        v[i]->log_n(f, f, 6);
        for (int k = 0; k < 6; k++)
            CHECK(same_bits(f[k], log(e[k])) || (isnan(f[k]) && isnan(log(e[k]))),
                  "%s log(%g) = %g, libm %g", v[i]->name, e[k], f[k], log(e[k]));
    }
    free(x);
    free(y);
    free(y0);
}
END_TEST

START_TEST(test_exp_edges)
{
    const struct tunep_tpe_kernels *v[3];
    size_t nv = variants(v);
    double x[6] = {-708.5, -745.2, -1e300, -(double)INFINITY, (double)NAN, 0.0}, y[6];
    for (size_t i = 0; i < nv; i++) {
        v[i]->exp_n(x, y, 6);
        for (int k = 0; k < 4; k++)
            ck_assert_msg(y[k] == 0.0, "%s exp(%g) = %g, want 0", v[i]->name, x[k], y[k]);
        CHECK(isnan(y[4]), "%s exp(NaN) = %g", v[i]->name, y[4]);
        ck_assert(y[5] == 1.0);
    }
}
END_TEST

START_TEST(test_sums_against_libm)
{
    enum { N = 2000 };
    const struct tunep_tpe_kernels *v[3];
    size_t nv = variants(v);
    double mu[N], isig[N], coef[N], lp[N];
    for (int round = 0; round < 300; round++) {
        size_t n = round < 100 ? (size_t)round : (size_t)uniform(0.0, N);
        for (size_t k = 0; k < n; k++) {
            mu[k] = uniform(-1.0, 1.0);
            isig[k] = 1.0 / uniform(0.005, 2.0);
            coef[k] = uniform(0.0, 1.0) / (double)(n + 1);
            lp[k] = uniform(-60.0, 0.0);
        }
        double x = uniform(-1.2, 1.2), shift = uniform(-3.0, 3.0);
        double g = 0.0, s = 0.0;
        for (size_t k = 0; k < n; k++) {
            double z = (x - mu[k]) * isig[k];
            g += coef[k] * exp(-0.5 * z * z);
            s += exp(lp[k] - shift);
        }
        double g0 = v[0]->gauss_sum(mu, isig, coef, n, x), s0 = v[0]->exp_sum(lp, n, shift);
        ck_assert_msg(fabs(g0 - g) <= 1e-14 * g, "gauss_sum n = %zu: %.17g, libm %.17g", n, g0, g);
        ck_assert_msg(fabs(s0 - s) <= 1e-14 * s, "exp_sum n = %zu: %.17g, libm %.17g", n, s0, s);
        for (size_t i = 1; i < nv; i++) {
            CHECK(same_bits(v[i]->gauss_sum(mu, isig, coef, n, x), g0), "%s gauss_sum, n = %zu",
                  v[i]->name, n);
            CHECK(same_bits(v[i]->exp_sum(lp, n, shift), s0), "%s exp_sum, n = %zu", v[i]->name, n);
        }
    }
}
END_TEST

START_TEST(test_fitting_helpers_exact)
{
    enum { N = 700 };
    const struct tunep_tpe_kernels *v[3];
    size_t nv = variants(v);
    double mu[N], sig[N], w[N], x[N + 2], a[N], b[N], c[N], d[N], m2[N], s2[N], w2[N];
    for (int round = 0; round < 200; round++) {
        size_t n = round < 40 ? (size_t)round : (size_t)uniform(0.0, N);
        double low = -1.0, high = 2.0, cut = 9.0, norm = 2.5066282746310002;
        x[0] = low;
        for (size_t k = 0; k < n; k++) /* sorted, with runs of equal centres and widths */
            mu[k] = k > 0 && uniform(0.0, 1.0) < 0.3 ? mu[k - 1] : uniform(low, high);
        for (size_t k = 1; k < n; k++)
            for (size_t j = k; j > 0 && mu[j] < mu[j - 1]; j--) {
                double t = mu[j];
                mu[j] = mu[j - 1];
                mu[j - 1] = t;
            }
        for (size_t k = 0; k < n; k++) {
            sig[k] = k > 0 && mu[k] == mu[k - 1] && uniform(0.0, 1.0) < 0.5 ? sig[k - 1]
                                                                            : uniform(0.001, 0.5);
            w[k] = uniform(0.0, 1.0);
            x[k + 1] = mu[k];
        }
        x[n + 1] = high;
        for (size_t i = 0; i < nv; i++) {
            const struct tunep_tpe_kernels *kv = v[i];
            double mx = -(double)INFINITY;
            for (size_t k = 0; k < n; k++)
                mx = w[k] > mx ? w[k] : mx;
            CHECK(same_bits(kv->max_n(w, n), mx), "%s max_n, n = %zu", kv->name, n);
            memcpy(a, w, n * sizeof *a);
            kv->div_n(a, n, 3.7);
            for (size_t k = 0; k < n; k++)
                CHECK(same_bits(a[k], w[k] / 3.7), "%s div_n at %zu", kv->name, k);

            kv->fit_coef(mu, sig, w, n, low, high, cut, norm, a, b);
            for (size_t k = 0; k < n; k++) {
                double is = 1.0 / sig[k], za = (low - mu[k]) * is, zb = (high - mu[k]) * is;
                CHECK(same_bits(a[k], is), "%s fit_coef isig at %zu", kv->name, k);
                if (za < -cut && zb > cut)
                    CHECK(same_bits(b[k], w[k] / norm), "%s fit_coef at %zu", kv->name, k);
                else
                    CHECK(isnan(b[k]), "%s fit_coef at %zu: NaN expected", kv->name, k);
            }

            kv->widths(x, n, 0.01, 2.5, a);
            for (size_t k = 0; k < n; k++) {
                double left = x[k + 1] - x[k], right = x[k + 2] - x[k + 1];
                double sg = left > right ? left : right;
                CHECK(same_bits(a[k], sg < 0.01  ? 0.01
                                      : sg > 2.5 ? 2.5
                                                 : sg),
                      "%s widths at %zu", kv->name, k);
            }

            int ties = 0;
            for (size_t k = 1; k < n; k++)
                ties = ties || mu[k] == mu[k - 1];
            ck_assert_int_eq(kv->has_ties(mu, n) != 0, ties);

            size_t u = 0;
            for (size_t k = 0; k < n; k++) { /* the plain merge */
                if (u > 0 && mu[k] == c[u - 1] && sig[k] == d[u - 1]) {
                    a[u - 1] += w[k];
                    continue;
                }
                c[u] = mu[k];
                d[u] = sig[k];
                a[u++] = w[k];
            }
            memcpy(m2, mu, n * sizeof *m2);
            memcpy(s2, sig, n * sizeof *s2);
            memcpy(w2, w, n * sizeof *w2);
            ck_assert_uint_eq(kv->merge(m2, s2, w2, n), u);
            for (size_t k = 0; k < u; k++)
                CHECK(same_bits(m2[k], c[k]) && same_bits(s2[k], d[k]) && same_bits(w2[k], a[k]),
                      "%s merge at %zu", kv->name, k);

            kv->reach(mu, sig, n, cut, a, b);
            double hi = -(double)INFINITY, lo = (double)INFINITY;
            for (size_t k = 0; k < n; k++) {
                hi = fmax(hi, mu[k] + cut * sig[k]);
                CHECK(same_bits(a[k], hi), "%s reach hi at %zu", kv->name, k);
            }
            for (size_t k = n; k-- > 0;) {
                lo = fmin(lo, mu[k] - cut * sig[k]);
                CHECK(same_bits(b[k], lo), "%s reach lo at %zu", kv->name, k);
            }
        }
    }
}
END_TEST

START_TEST(test_multivariate_terms_exact)
{
    enum { N = 900 };
    const struct tunep_tpe_kernels *v[3];
    size_t nv = variants(v);
    double mu[N], lz[N], lp[N], want[N], tab[64];
    size_t id[N];
    for (int round = 0; round < 100; round++) {
        size_t n = round < 20 ? (size_t)round : (size_t)uniform(0.0, N);
        double x = uniform(-1.0, 1.0), sig = uniform(0.01, 1.0);
        for (size_t k = 0; k < n; k++) {
            mu[k] = uniform(0.0, 1.0) < 0.3 ? x : uniform(-1.0, 1.0);
            lz[k] = uniform(-3.0, 3.0);
            id[k] = (size_t)uniform(0.0, 64.0);
        }
        for (size_t i = 0; i < 64; i++)
            tab[i] = uniform(-5.0, 0.0);
        for (size_t i = 0; i < nv; i++) {
            for (size_t k = 0; k < n; k++)
                lp[k] = want[k] = uniform(-9.0, 0.0);
            v[i]->mv_dens(lp, mu, lz, n, x, sig);
            v[i]->mv_cat(lp, mu, n, x, -0.25, -1.75);
            v[i]->mv_gather_add(lp, tab, id, n);
            for (size_t k = 0; k < n; k++) {
                double z = (x - mu[k]) / sig;
                want[k] += -0.5 * z * z + lz[k];
                want[k] += mu[k] == x ? -0.25 : -1.75;
                want[k] += tab[id[k]];
                CHECK(same_bits(lp[k], want[k]), "%s multivariate terms at %zu", v[i]->name, k);
            }
        }
    }
}
END_TEST

static Suite *tpe_kernel_suite(void)
{
    Suite *s = suite_create("tpe_kernel");
    TCase *tc = tcase_create("tpe_kernel");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_best_is_a_variant);
    tcase_add_test(tc, test_exp_against_libm);
    tcase_add_test(tc, test_exp2_against_libm);
    tcase_add_test(tc, test_log_against_libm);
    tcase_add_test(tc, test_exp_edges);
    tcase_add_test(tc, test_sums_against_libm);
    tcase_add_test(tc, test_fitting_helpers_exact);
    tcase_add_test(tc, test_multivariate_terms_exact);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(tpe_kernel_suite)
