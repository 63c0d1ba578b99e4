/*
 * test_sampler.c - drawing configurations from a space: exact supports of the
 * integer primitives (high exclusive or inclusive, as Ray), quantization and
 * half-to-even rounding pinned with a scripted generator, distribution tests
 * (Kolmogorov-Smirnov for loguniform, moments for randn, chi-square for
 * choice and randint), grid enumeration order and limits, and determinism.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "check_util.h"
#include "base/rng.h"
#include "search/space.h"

static tune_space *sp;
static tune_error err;

static void setup(void)
{
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(tune_space_new(&sp, &err), TUNE_OK);
}

static void teardown(void)
{
    tune_space_free(sp);
    sp = NULL;
}

#define OK(call) ck_assert_msg((call) == TUNE_OK, "%s: %s", #call, err.text)

static gsl_rng *rng_new(uint64_t seed)
{
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    ck_assert_ptr_nonnull(r);
    gsl_rng_set(r, (unsigned long)seed);
    return r;
}

/* ---- a scripted generator: gsl_rng_uniform returns the listed values ------ */

static const double *script;
static size_t script_len, script_pos;

static void script_set(void *state, unsigned long seed)
{
    (void)state;
    (void)seed;
}

static double script_get_double(void *state)
{
    (void)state;
    return script[script_pos++ % script_len];
}

static unsigned long script_get(void *state)
{
    return (unsigned long)(script_get_double(state) * 4294967296.0);
}

static const gsl_rng_type script_type = {"script",    0xffffffffUL,      0, 1, &script_set,
                                         &script_get, &script_get_double};

/* Draws one configuration of sp with gsl_rng_uniform returning u. */
static struct tunep_value draw_with(double u, size_t param)
{
    struct tunep_value out[16];
    gsl_rng *r = gsl_rng_alloc(&script_type);
    script = &u;
    script_len = 1;
    script_pos = 0;
    ck_assert_uint_le(sp->n, 16);
    tunep_space_sample(sp, r, 0, 0, out);
    gsl_rng_free(r);
    return out[param];
}

static const double U_MAX = 1.0 - 0x1.0p-53; /* the largest double below 1 */

/* ---- supports of the integer primitives ----------------------------------- */

/* Counts, over n draws, how often each value in [lo, lo + width) comes out. */
static void int_support(size_t param, int n, int64_t lo, int64_t width, long *counts)
{
    gsl_rng *r = rng_new(7);
    struct tunep_value out[16];
    memset(counts, 0, (size_t)width * sizeof *counts);
    for (int i = 0; i < n; i++) {
        tunep_space_sample(sp, r, 0, 0, out);
        ck_assert_int_eq(out[param].type, TUNEP_V_INT);
        int64_t v = out[param].u.i;
        ck_assert_msg(v >= lo && v < lo + width, "%lld out of range", (long long)v);
        counts[v - lo]++;
    }
    gsl_rng_free(r);
}

START_TEST(test_int_supports)
{
    long c[32];
    OK(tune_space_add_randint(sp, "ri", 0, 3, &err));
    OK(tune_space_add_qrandint(sp, "qri5", 0, 10, 5, &err));
    OK(tune_space_add_qrandint(sp, "qri1", 0, 4, 1, &err));
    OK(tune_space_add_qrandint(sp, "qrineg", -10, 10, 5, &err));
    OK(tune_space_add_lograndint(sp, "lri", 1, 4, 10, &err));
    OK(tune_space_add_lograndint(sp, "lri1", 10, 11, 2, &err));
    OK(tune_space_add_qlograndint(sp, "qlri1", 1, 4, 1, 10, &err));
    OK(tune_space_add_qlograndint(sp, "qlri2", 2, 8, 2, 10, &err));

    /* randint: high exclusive, exactly {0, 1, 2} */
    int_support(0, 10000, 0, 4, c);
    ck_assert(c[0] > 0 && c[1] > 0 && c[2] > 0 && c[3] == 0);
    /* qrandint: high inclusive, exactly the multiples {0, 5, 10} */
    int_support(1, 10000, 0, 11, c);
    for (int v = 0; v <= 10; v++)
        ck_assert_msg((v % 5 == 0) == (c[v] > 0), "qrandint(0, 10, 5) gave %d %ld times", v, c[v]);
    /* qrandint with q = 1: every value of [0, 4] */
    int_support(2, 10000, 0, 5, c);
    for (int v = 0; v <= 4; v++)
        ck_assert_int_gt(c[v], 0);
    int_support(3, 10000, -10, 21, c);
    for (int v = -10; v <= 10; v++)
        ck_assert((v % 5 == 0) == (c[v + 10] > 0));
    /* lograndint: high exclusive, never 4 */
    int_support(4, 10000, 1, 4, c);
    ck_assert(c[0] > 0 && c[1] > 0 && c[2] > 0 && c[3] == 0);
    /* log-uniform: P(1) = log 2 / log 4 = 1/2 */
    ck_assert(labs(c[0] - 5000) < 300);
    int_support(5, 1000, 10, 1, c);
    ck_assert_int_eq(c[0], 1000);
    /* qlograndint: high inclusive */
    int_support(6, 10000, 1, 4, c);
    ck_assert(c[0] > 0 && c[1] > 0 && c[2] > 0 && c[3] > 0);
    int_support(7, 10000, 2, 7, c);
    for (int v = 2; v <= 8; v++)
        ck_assert((v % 2 == 0) == (c[v - 2] > 0));
}
END_TEST

START_TEST(test_int_extremes)
{
    OK(tune_space_add_randint(sp, "full", INT64_MIN, INT64_MAX, &err));
    OK(tune_space_add_qrandint(sp, "fullq", INT64_MIN, INT64_MAX, 1, &err));
    OK(tune_space_add_lograndint(sp, "big", 1, INT64_MAX, 10, &err));
    OK(tune_space_add_qlograndint(sp, "bigq", 1, INT64_MAX, 1, 10, &err));
    struct tunep_value v = draw_with(0.0, 0);
    ck_assert_int_eq(v.u.i, INT64_MIN);
    v = draw_with(U_MAX, 0);
    ck_assert_int_lt(v.u.i, INT64_MAX);
    ck_assert_int_gt(v.u.i, INT64_MAX - 4096);
    ck_assert_int_eq(draw_with(0.0, 1).u.i, INT64_MIN);
    ck_assert_int_gt(draw_with(U_MAX, 1).u.i, INT64_MAX - 4096);
    ck_assert_int_eq(draw_with(0.0, 2).u.i, 1);
    /* 10 ** (log10(9) + (log10(10) - log10(9)) * U_MAX) rounds to 10.0: the guard keeps high out */
    OK(tune_space_add_lograndint(sp, "near", 9, 10, 10, &err));
    ck_assert_int_eq(draw_with(U_MAX, 4).u.i, 9);
    ck_assert_int_eq(draw_with(0.0, 4).u.i, 9);
    ck_assert_int_lt(draw_with(U_MAX, 2).u.i, INT64_MAX);
    /* near 2^63 pow() is only good to ~1e-14 relative; the point is: no overflow */
    ck_assert_int_gt(draw_with(U_MAX, 3).u.i, INT64_MAX - (INT64_MAX >> 40));
    gsl_rng *r = rng_new(3);
    struct tunep_value out[5];
    int neg = 0, pos = 0;
    for (int i = 0; i < 200; i++) {
        tunep_space_sample(sp, r, 0, 0, out);
        neg += out[0].u.i < 0;
        pos += out[0].u.i > 0;
        ck_assert_int_ge(out[2].u.i, 1);
        ck_assert_int_lt(out[2].u.i, INT64_MAX);
    }
    ck_assert(neg > 50 && pos > 50);
    gsl_rng_free(r);
}
END_TEST

/* ---- float ranges and quantization ---------------------------------------- */

static int is_exact_multiple(double v, double q)
{
    return v == nearbyint(v / q) * q;
}

START_TEST(test_float_bounds)
{
    OK(tune_space_add_uniform(sp, "u", -1, 2, &err));
    OK(tune_space_add_quniform(sp, "qu", 0, 1, 0.1, &err));
    OK(tune_space_add_loguniform(sp, "lu", 1e-6, 1e-2, 10, &err));
    OK(tune_space_add_qloguniform(sp, "qlu", 1e-4, 1e-1, 5e-5, 10, &err));
    OK(tune_space_add_qrandn(sp, "qn", 0, 5, 0.5, &err));
    gsl_rng *r = rng_new(11);
    struct tunep_value out[5];
    int seen[11] = {0};
    for (int i = 0; i < 20000; i++) {
        tunep_space_sample(sp, r, 0, 0, out);
        for (int k = 0; k < 5; k++)
            ck_assert_int_eq(out[k].type, TUNEP_V_DOUBLE);
        ck_assert(out[0].u.d >= -1 && out[0].u.d < 2);
        ck_assert(is_exact_multiple(out[1].u.d, 0.1));
        /* within [low, high] up to the rounding of k * q */
        ck_assert(out[1].u.d >= 0 && out[1].u.d <= 1.0 + 1e-15);
        seen[(int)nearbyint(out[1].u.d / 0.1)]++;
        ck_assert(out[2].u.d >= 1e-6 && out[2].u.d < 1e-2);
        ck_assert(is_exact_multiple(out[3].u.d, 5e-5));
        ck_assert(out[3].u.d >= 1e-4 * (1 - 1e-12) && out[3].u.d <= 1e-1 * (1 + 1e-12));
        ck_assert(is_exact_multiple(out[4].u.d, 0.5));
    }
    /* quantization makes high reachable: every multiple of 0.1 in [0, 1] comes out */
    for (int k = 0; k <= 10; k++)
        ck_assert_int_gt(seen[k], 0);
    /* the two ends get half a step each: about 1/20 of the draws */
    ck_assert(abs(seen[0] - 1000) < 200 && abs(seen[10] - 1000) < 200);
    gsl_rng_free(r);
}
END_TEST

/*
 * With a scripted u the exact Ray semantics are visible: uniform is
 * low + (high - low) * u; quantized values round half to even (numpy's round);
 * integer indexes are floor(u * count).
 */
START_TEST(test_scripted_semantics)
{
    OK(tune_space_add_quniform(sp, "qu", 0, 2, 1, &err));                /* 0 */
    OK(tune_space_add_qrandint(sp, "qri", 0, 4, 2, &err));               /* 1 */
    OK(tune_space_add_qrandint(sp, "qrineg", -4, 4, 4, &err));           /* 2 */
    OK(tune_space_add_randint(sp, "ri", 0, 3, &err));                    /* 3 */
    OK(tune_space_add_uniform(sp, "u", 1, 1 + 0x1.0p-52, &err));         /* 4 */
    OK(tune_space_add_loguniform(sp, "lu", 1e-6, 1e-2, 10, &err));       /* 5 */
    OK(tune_space_add_lograndint(sp, "lri", 1, 1000, 10, &err));         /* 6 */
    OK(tune_space_add_qlograndint(sp, "qlri", 1, 1000, 1, 10, &err));    /* 7 */
    OK(tune_space_add_qlograndint(sp, "qlri10", 10, 100, 10, 10, &err)); /* 8 */
    const char *abc[] = {"a", "b", "c"};
    OK(tune_space_add_choice_string(sp, "c", abc, 3, &err));     /* 9 */
    OK(tune_space_add_qloguniform(sp, "qlu", 1, 4, 1, 2, &err)); /* 10 */

    /* quniform(0, 2, 1): 0.5 -> 0 and 1.5 -> 2 (ties to even), 1.25 -> 1 */
    ck_assert(draw_with(0.25, 0).u.d == 0.0);
    ck_assert(draw_with(0.75, 0).u.d == 2.0);
    ck_assert(draw_with(0.625, 0).u.d == 1.0);
    /* qrandint(0, 4, 2): x = floor(5u) in [0, 4]; 1 -> 0.5 -> 0, 3 -> 1.5 -> 2 -> 4 */
    ck_assert_int_eq(draw_with(0.3, 1).u.i, 0);
    ck_assert_int_eq(draw_with(0.5, 1).u.i, 2);
    ck_assert_int_eq(draw_with(0.7, 1).u.i, 4);
    ck_assert_int_eq(draw_with(U_MAX, 1).u.i, 4);
    ck_assert_int_eq(draw_with(0.0, 1).u.i, 0);
    /* qrandint(-4, 4, 4): x = -4 + floor(9u); -2 -> -0.5 -> 0, 2 -> 0.5 -> 0, -3 -> -4 */
    ck_assert_int_eq(draw_with(2.5 / 9, 2).u.i, 0);
    ck_assert_int_eq(draw_with(6.5 / 9, 2).u.i, 0);
    ck_assert_int_eq(draw_with(1.5 / 9, 2).u.i, -4);
    ck_assert_int_eq(draw_with(7.5 / 9, 2).u.i, 4);
    /* randint(0, 3): floor(3u) */
    ck_assert_int_eq(draw_with(0.0, 3).u.i, 0);
    ck_assert_int_eq(draw_with(0.34, 3).u.i, 1);
    ck_assert_int_eq(draw_with(U_MAX, 3).u.i, 2);
    /* uniform stays below high even when low + w * u rounds up to it */
    ck_assert(draw_with(U_MAX, 4).u.d < 1 + 0x1.0p-52);
    ck_assert(draw_with(0.0, 4).u.d == 1.0);
    /* loguniform: 10 ** uniform(-6, -2) */
    ck_assert(draw_with(0.0, 5).u.d >= 1e-6);
    ck_assert(fabs(draw_with(0.0, 5).u.d - 1e-6) < 1e-20);
    ck_assert(fabs(draw_with(0.5, 5).u.d - 1e-4) < 1e-18);
    ck_assert(draw_with(U_MAX, 5).u.d < 1e-2);
    /* lograndint(1, 1000): floor(10 ** (3u)), never 1000 */
    ck_assert_int_eq(draw_with(0.0, 6).u.i, 1);
    ck_assert_int_eq(draw_with(0.5, 6).u.i, 31);
    ck_assert_int_eq(draw_with(U_MAX, 6).u.i, 999);
    /* qlograndint(1, 1000, 1): Integer(1, 1001).loguniform(): reaches 1000 */
    ck_assert_int_eq(draw_with(U_MAX, 7).u.i, 1000);
    ck_assert_int_eq(draw_with(0.0, 7).u.i, 1);
    /* qlograndint(10, 100, 10): x = floor(10 ** (1 + u log10(10.1)));
     * 15 -> 20, 25 -> 20 (tie to even), 35 -> 40 */
    double span = log10(101.0) - 1.0;
    ck_assert_int_eq(draw_with((log10(15.5) - 1) / span, 8).u.i, 20);
    ck_assert_int_eq(draw_with((log10(25.5) - 1) / span, 8).u.i, 20);
    ck_assert_int_eq(draw_with((log10(35.5) - 1) / span, 8).u.i, 40);
    ck_assert_int_eq(draw_with((log10(14.5) - 1) / span, 8).u.i, 10);
    ck_assert_int_eq(draw_with(U_MAX, 8).u.i, 100);
    /* choice: index floor(3u), strings borrowed from the space */
    ck_assert_str_eq(draw_with(0.34, 9).u.s, "b");
    ck_assert_str_eq(draw_with(U_MAX, 9).u.s, "c");
    ck_assert_ptr_eq(draw_with(0.0, 9).u.s, sp->params[9].values[0].u.s);
    /* qloguniform(1, 4, 1, base 2): 2 ** (2u); u = log2(2.5) / 2 -> 2.5 -> 2 */
    ck_assert(draw_with(log2(2.5) / 2, 10).u.d == 2.0);
    ck_assert(draw_with(log2(3.5) / 2, 10).u.d == 4.0);
}
END_TEST

/* Exactly one uniform per random parameter; constants and grid axes take none. */
START_TEST(test_one_draw_per_param)
{
    const int64_t g[] = {1, 2};
    const double c[] = {0.5, 1.5, 2.5};
    double us[8] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8};
    struct tunep_value out[8];
    OK(tune_space_add_uniform(sp, "u", 0, 1, &err));
    OK(tune_space_add_const_int(sp, "k", 3, &err));
    OK(tune_space_add_randint(sp, "ri", 0, 10, &err));
    OK(tune_space_add_grid_int(sp, "g", g, 2, &err));
    OK(tune_space_add_choice_double(sp, "c", c, 3, &err));
    OK(tune_space_add_qlograndint(sp, "ql", 1, 100, 1, 10, &err));
    OK(tune_space_add_loguniform(sp, "lu", 1, 10, 10, &err));
    gsl_rng *r = gsl_rng_alloc(&script_type);
    script = us;
    script_len = 8;
    script_pos = 0;
    tunep_space_sample(sp, r, 1, 0, out);
    ck_assert_uint_eq(script_pos, 5);
    ck_assert(out[0].u.d == 0.1);
    ck_assert_int_eq(out[1].u.i, 3);
    ck_assert_int_eq(out[2].u.i, 2); /* floor(10 * 0.2) */
    ck_assert_int_eq(out[3].u.i, 2); /* grid index 1 */
    ck_assert(out[4].u.d == 0.5);    /* index floor(3 * 0.3) = 0 */
    /* expanding choices turns c into a grid axis: one uniform fewer */
    script_pos = 0;
    tunep_space_sample(sp, r, 3, 1, out);
    ck_assert_uint_eq(script_pos, 4);
    ck_assert_int_eq(out[3].u.i, 2); /* 3 % 2 = 1 */
    ck_assert(out[4].u.d == 1.5);    /* 3 / 2 % 3 = 1 */
    gsl_rng_free(r);
}
END_TEST

/* ---- distributions -------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Kolmogorov-Smirnov distance of sorted samples in [0, 1] from U(0, 1). */
static double ks_uniform(double *y, int n)
{
    double d = 0.0;
    qsort(y, (size_t)n, sizeof *y, cmp_double);
    for (int i = 0; i < n; i++) {
        double lo = y[i] - (double)i / n, hi = (double)(i + 1) / n - y[i];
        d = fmax(d, fmax(lo, hi));
    }
    return d;
}

START_TEST(test_ks_loguniform)
{
    enum { N = 20000 };
    static double y[N], z[N];
    OK(tune_space_add_loguniform(sp, "lr", 1e-6, 1e-2, 10, &err));
    gsl_rng *r = rng_new(42);
    struct tunep_value out[1];
    for (int i = 0; i < N; i++) {
        tunep_space_sample(sp, r, 0, 0, out);
        y[i] = (log10(out[0].u.d) + 6.0) / 4.0; /* uniform in log space */
        z[i] = out[0].u.d / 1e-2;               /* not uniform in linear space */
    }
    gsl_rng_free(r);
    /* 1.63 / sqrt(n): the asymptotic 1% critical value of the KS statistic */
    double crit = 1.63 / sqrt((double)N);
    double d = ks_uniform(y, N);
    ck_assert_msg(d < crit, "KS D = %g >= %g", d, crit);
    /* the same test rejects the linear reading, so it has power */
    ck_assert(ks_uniform(z, N) > 10 * crit);
}
END_TEST

START_TEST(test_randn_moments)
{
    enum { N = 20000 };
    OK(tune_space_add_randn(sp, "n", 2.0, 3.0, &err));
    gsl_rng *r = rng_new(5);
    struct tunep_value out[1];
    double sum = 0, sum2 = 0;
    for (int i = 0; i < N; i++) {
        tunep_space_sample(sp, r, 0, 0, out);
        sum += out[0].u.d;
        sum2 += out[0].u.d * out[0].u.d;
    }
    gsl_rng_free(r);
    double mean = sum / N, sd = sqrt(sum2 / N - mean * mean);
    /* 4 standard errors: sd/sqrt(n) for the mean, sd/sqrt(2n) for the sd */
    ck_assert_msg(fabs(mean - 2.0) < 4 * 3.0 / sqrt((double)N), "mean %g", mean);
    ck_assert_msg(fabs(sd - 3.0) < 4 * 3.0 / sqrt(2.0 * N), "sd %g", sd);
}
END_TEST

START_TEST(test_chisq_choice_randint)
{
    enum { N = 20000 };
    const char *names[] = {"a", "b", "c", "d", "e"};
    OK(tune_space_add_choice_string(sp, "c", names, 5, &err));
    OK(tune_space_add_randint(sp, "r", 0, 10, &err));
    gsl_rng *r = rng_new(9);
    struct tunep_value out[2];
    long cc[5] = {0}, rc[10] = {0};
    for (int i = 0; i < N; i++) {
        tunep_space_sample(sp, r, 0, 0, out);
        ck_assert_int_eq(out[0].type, TUNEP_V_STRING);
        cc[out[0].u.s[0] - 'a']++;
        rc[out[1].u.i]++;
    }
    gsl_rng_free(r);
    double x2 = 0, e = N / 5.0;
    for (int k = 0; k < 5; k++)
        x2 += (cc[k] - e) * (cc[k] - e) / e;
    /* 13.28: the 1% critical value of chi-square with 4 degrees of freedom */
    ck_assert_msg(x2 < 13.28, "choice chi2 = %g", x2);
    x2 = 0;
    e = N / 10.0;
    for (int k = 0; k < 10; k++)
        x2 += (rc[k] - e) * (rc[k] - e) / e;
    /* 21.67: the 1% critical value with 9 degrees of freedom */
    ck_assert_msg(x2 < 21.67, "randint chi2 = %g", x2);
}
END_TEST

/* Chi-square of the low 8 bits of ((v - lo) / step) over 256 bins. */
static double low_byte_chisq(const long *bins, int n)
{
    double x2 = 0, e = n / 256.0;
    for (int k = 0; k < 256; k++)
        x2 += (bins[k] - e) * (bins[k] - e) / e;
    return x2;
}

/* Ranges wider than 2^53 reach every integer: their low bits are uniform (a
 * 53-bit u only reaches every 2048th integer of int64), as is every bit. */
/* A generator that always says 5: with randint [0, 3 * 2^60) every 64-bit draw
 * (5 << 32 | 5, which is 5 mod 16) lands in the rejected zone. */
static unsigned long const5_get(void *state)
{
    (void)state;
    return 5;
}
static double const5_get_double(void *state)
{
    (void)state;
    return 5.0 / 4294967296.0;
}
static void const5_set(void *state, unsigned long seed)
{
    (void)state, (void)seed;
}
static const gsl_rng_type const5_type = {
    "const5", 0xffffffffUL, 0, sizeof(int), &const5_set, &const5_get, &const5_get_double};

/* A degenerate generator cannot make a wide draw loop forever, nor leave its range. */
START_TEST(test_wide_int_draw_ends_with_a_constant_generator)
{
    OK(tune_space_add_randint(sp, "n", 0, INT64_C(3) << 60, &err));
    gsl_rng *r = gsl_rng_alloc(&const5_type);
    ck_assert_ptr_nonnull(r);
    struct tunep_value out[1];
    tunep_space_sample(sp, r, 0, 0, out);
    ck_assert(out[0].u.i >= 0 && out[0].u.i < (INT64_C(3) << 60));
    gsl_rng_free(r);
}
END_TEST

START_TEST(test_wide_int_ranges_uniform)
{
    enum { N = 25600 };
    OK(tune_space_add_randint(sp, "full", INT64_MIN, INT64_MAX, &err));
    OK(tune_space_add_qrandint(sp, "fullq", INT64_MIN, INT64_MAX, 1, &err));
    OK(tune_space_add_qrandint(sp, "q3", -(INT64_C(3) << 60), INT64_C(3) << 60, 3, &err));
    OK(tune_space_add_randint(sp, "odd", 5, (INT64_C(1) << 62) + 3, &err));
    gsl_rng *r = rng_new(11);
    struct tunep_value out[4];
    static long bins[4][256];
    long ones[64] = {0};
    memset(bins, 0, sizeof bins);
    for (int i = 0; i < N; i++) {
        tunep_space_sample(sp, r, 0, 0, out);
        uint64_t off[4];
        off[0] = (uint64_t)out[0].u.i - (uint64_t)INT64_MIN;
        off[1] = (uint64_t)out[1].u.i - (uint64_t)INT64_MIN;
        off[2] = (uint64_t)out[2].u.i + (UINT64_C(3) << 60);
        ck_assert_msg(off[2] % 3 == 0, "qrandint q=3 gave %lld", (long long)out[2].u.i);
        off[2] /= 3;
        ck_assert(out[3].u.i >= 5 && out[3].u.i < (INT64_C(1) << 62) + 3);
        off[3] = (uint64_t)out[3].u.i - 5;
        for (int k = 0; k < 4; k++)
            bins[k][off[k] & 255]++;
        for (int b = 0; b < 64; b++)
            ones[b] += (off[0] >> b) & 1;
    }
    gsl_rng_free(r);
    /* 330.5: the 0.1% critical value of chi-square with 255 degrees of freedom */
    for (int k = 0; k < 4; k++)
        ck_assert_msg(low_byte_chisq(bins[k], N) < 330.5, "parameter %d: low byte chi2 = %g", k,
                      low_byte_chisq(bins[k], N));
    /* each bit is set half the time: 5 sd = 5 * sqrt(N / 4) = 400 */
    for (int b = 0; b < 64; b++)
        ck_assert_msg(labs(ones[b] - N / 2) < 400, "bit %d set %ld times of %d", b, ones[b], N);
}
END_TEST

/* ---- grids ---------------------------------------------------------------- */

START_TEST(test_grid_order_two_axes)
{
    const int64_t a[] = {1, 2}, b[] = {3, 4};
    const int64_t want[4][2] = {{1, 3}, {2, 3}, {1, 4}, {2, 4}}; /* Ray's order */
    struct tunep_value out[2];
    OK(tune_space_add_grid_int(sp, "a", a, 2, &err));
    OK(tune_space_add_grid_int(sp, "b", b, 2, &err));
    ck_assert_uint_eq(tunep_space_grid_size(sp, 0, &err), 4);
    for (uint64_t g = 0; g < 8; g++) {
        tunep_space_sample(sp, NULL, g, 0, out);
        ck_assert_int_eq(out[0].u.i, want[g % 4][0]);
        ck_assert_int_eq(out[1].u.i, want[g % 4][1]);
    }
}
END_TEST

START_TEST(test_grid_order_three_axes)
{
    const char *a[] = {"x", "y"};
    const double b[] = {0.1, 0.2, 0.3};
    const int64_t c[] = {7, 8};
    struct tunep_value out[4];
    int seen[2][3][2] = {{{0}}};
    OK(tune_space_add_grid_string(sp, "a", a, 2, &err));
    OK(tune_space_add_uniform(sp, "u", 0, 1, &err));
    OK(tune_space_add_grid_double(sp, "b", b, 3, &err));
    OK(tune_space_add_grid_int(sp, "c", c, 2, &err));
    ck_assert_uint_eq(tunep_space_grid_size(sp, 0, &err), 12);
    gsl_rng *r = rng_new(1);
    for (uint64_t g = 0; g < 12; g++) {
        tunep_space_sample(sp, r, g, 0, out);
        int ia = out[0].u.s[0] - 'x';
        int ib = (int)nearbyint(out[2].u.d * 10) - 1;
        int ic = (int)out[3].u.i - 7;
        /* first axis fastest: g = ia + 2 * (ib + 3 * ic) */
        ck_assert_uint_eq(g, (uint64_t)(ia + 2 * (ib + 3 * ic)));
        seen[ia][ib][ic]++;
        ck_assert(out[1].u.d >= 0 && out[1].u.d < 1);
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 2; k++)
                ck_assert_int_eq(seen[i][j][k], 1);
    gsl_rng_free(r);
}
END_TEST

/* Grid axes take no randomness, so the random parameters' draws do not change. */
START_TEST(test_grid_with_random)
{
    const int64_t g[] = {1, 2, 3};
    const char *s[] = {"p", "q"};
    tune_space *plain = NULL;
    struct tunep_value out[4], ref[2];
    OK(tune_space_add_uniform(sp, "x", 0, 1, &err));
    OK(tune_space_add_grid_int(sp, "a", g, 3, &err));
    OK(tune_space_add_randint(sp, "y", 0, 1000, &err));
    OK(tune_space_add_grid_string(sp, "b", s, 2, &err));
    OK(tune_space_new(&plain, &err));
    OK(tune_space_add_uniform(plain, "x", 0, 1, &err));
    OK(tune_space_add_randint(plain, "y", 0, 1000, &err));
    ck_assert_uint_eq(tunep_space_grid_size(sp, 0, &err), 6);
    ck_assert_uint_eq(tunep_space_grid_size(plain, 0, &err), 1);
    gsl_rng *r1 = rng_new(77), *r2 = rng_new(77);
    for (uint64_t t = 0; t < 12; t++) {
        tunep_space_sample(sp, r1, t, 0, out);
        tunep_space_sample(plain, r2, 0, 0, ref);
        ck_assert(out[0].u.d == ref[0].u.d);
        ck_assert_int_eq(out[2].u.i, ref[1].u.i);
        ck_assert_int_eq(out[1].u.i, g[t % 3]);
        ck_assert_str_eq(out[3].u.s, s[(t / 3) % 2]);
    }
    gsl_rng_free(r1);
    gsl_rng_free(r2);
    tune_space_free(plain);
}
END_TEST

START_TEST(test_grid_limits)
{
    static int64_t v[TUNEP_SPACE_MAX_CHOICES];
    for (int i = 0; i < TUNEP_SPACE_MAX_CHOICES; i++)
        v[i] = i;
    ck_assert_uint_eq(tunep_space_grid_size(sp, 0, &err), 1);
    OK(tune_space_add_choice_int(sp, "c", v, 7, &err));
    ck_assert_uint_eq(tunep_space_grid_size(sp, 0, &err), 1);
    ck_assert_uint_eq(tunep_space_grid_size(sp, 1, &err), 7);
    tunep_space_truncate(sp, 0);
    OK(tune_space_add_grid_int(sp, "a", v, 100, &err));
    OK(tune_space_add_grid_int(sp, "b", v, 100, &err));
    OK(tune_space_add_grid_int(sp, "c", v, 100, &err));
    ck_assert_uint_eq(tunep_space_grid_size(sp, 0, &err), 1000000);
    OK(tune_space_add_choice_int(sp, "d", v, 100, &err));
    ck_assert_uint_eq(tunep_space_grid_size(sp, 0, &err), 1000000);
    memset(&err, 0, sizeof err);
    ck_assert_uint_eq(tunep_space_grid_size(sp, 1, &err), 0);
    ck_assert_int_eq(err.code, TUNE_ECONFIG);
    ck_assert_str_eq(err.text, "grid of 100000000 points exceeds the limit of 1000000");
    /* a product past 2^64 is reported without wrapping around */
    tunep_space_truncate(sp, 0);
    OK(tune_space_add_grid_int(sp, "a", v, TUNEP_SPACE_MAX_CHOICES, &err));
    OK(tune_space_add_grid_int(sp, "b", v, TUNEP_SPACE_MAX_CHOICES, &err));
    OK(tune_space_add_grid_int(sp, "c", v, TUNEP_SPACE_MAX_CHOICES, &err));
    OK(tune_space_add_grid_int(sp, "d", v, TUNEP_SPACE_MAX_CHOICES, &err));
    ck_assert_uint_eq(tunep_space_grid_size(sp, 0, &err), 0);
    ck_assert_str_eq(err.text,
                     "grid of more than 18446744073709551615 points exceeds the limit of 1000000");
    ck_assert_uint_eq(tunep_space_grid_size(NULL, 0, NULL), 0);
}
END_TEST

/* ---- determinism ---------------------------------------------------------- */

static void fill_all(void)
{
    const char *s[] = {"a", "b", "c"};
    const int64_t g[] = {1, 2};
    OK(tune_space_add_uniform(sp, "u", 0, 1, &err));
    OK(tune_space_add_quniform(sp, "qu", 0, 1, 0.25, &err));
    OK(tune_space_add_loguniform(sp, "lu", 1e-5, 1, 10, &err));
    OK(tune_space_add_qloguniform(sp, "qlu", 1, 100, 1, 10, &err));
    OK(tune_space_add_randn(sp, "n", 0, 1, &err));
    OK(tune_space_add_qrandn(sp, "qn", 0, 1, 0.1, &err));
    OK(tune_space_add_randint(sp, "ri", 0, 100, &err));
    OK(tune_space_add_qrandint(sp, "qri", 0, 100, 10, &err));
    OK(tune_space_add_lograndint(sp, "lri", 1, 100, 10, &err));
    OK(tune_space_add_qlograndint(sp, "qlri", 1, 100, 1, 10, &err));
    OK(tune_space_add_choice_string(sp, "c", s, 3, &err));
    OK(tune_space_add_grid_int(sp, "g", g, 2, &err));
    OK(tune_space_add_const_bool(sp, "k", 1, &err));
}

static int same_value(const struct tunep_value *a, const struct tunep_value *b)
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

START_TEST(test_determinism)
{
    struct tunep_value a[13], b[13], c[13];
    tune_space *copy = NULL;
    fill_all();
    OK(tunep_space_clone(sp, &copy, &err));
    gsl_rng *r1 = rng_new(123), *r2 = rng_new(123), *r3 = rng_new(124);
    int differ = 0;
    for (uint64_t t = 0; t < 100; t++) {
        tunep_space_sample(sp, r1, t, 0, a);
        tunep_space_sample(copy, r2, t, 0, b);
        tunep_space_sample(sp, r3, t, 0, c);
        for (int k = 0; k < 13; k++) {
            ck_assert_msg(same_value(&a[k], &b[k]), "trial %d param %d", (int)t, k);
            differ += !same_value(&a[k], &c[k]);
        }
    }
    /* another seed gives another stream (the continuous ones differ every time) */
    ck_assert_int_gt(differ, 500);
    gsl_rng_free(r1);
    gsl_rng_free(r2);
    gsl_rng_free(r3);
    tune_space_free(copy);
}
END_TEST

static Suite *sampler_suite(void)
{
    Suite *s = suite_create("sampler");
    TCase *tc = tcase_create("draws");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_int_supports);
    tcase_add_test(tc, test_int_extremes);
    tcase_add_test(tc, test_float_bounds);
    tcase_add_test(tc, test_scripted_semantics);
    tcase_add_test(tc, test_one_draw_per_param);
    tcase_add_test(tc, test_ks_loguniform);
    tcase_add_test(tc, test_randn_moments);
    tcase_add_test(tc, test_chisq_choice_randint);
    tcase_add_test(tc, test_wide_int_ranges_uniform);
    tcase_add_test(tc, test_wide_int_draw_ends_with_a_constant_generator);
    tcase_add_test(tc, test_determinism);
    suite_add_tcase(s, tc);

    tc = tcase_create("grid");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_grid_order_two_axes);
    tcase_add_test(tc, test_grid_order_three_axes);
    tcase_add_test(tc, test_grid_with_random);
    tcase_add_test(tc, test_grid_limits);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(sampler_suite)
