/*
 * bert_test_util.h - helpers shared by the BERT test suites: a seeded
 * generator for test data, the t_eff = atol + rtol |ref| comparison that
 * reports the first mismatches (llm.c style, with names), and the
 * central-difference gradient check (ggml test-backend-ops grad mode).
 */
#ifndef TUNE_BERT_TEST_UTIL_H
#define TUNE_BERT_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* splitmix64: test data only. */
struct test_rng {
    uint64_t s;
};

static inline uint64_t test_rng_u64(struct test_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
static inline double test_rng_uniform(struct test_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * (double)(test_rng_u64(r) >> 11) * 0x1p-53;
}

static inline void test_fill(struct test_rng *r, double *x, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = test_rng_uniform(r, lo, hi);
}

/*
 * Counts elements with |got - ref| > atol + rtol |ref| (or non-finite got),
 * printing the first few with the tensor name and the max errors.
 */
static inline size_t test_compare(const char *name, const double *got, const double *ref, size_t n,
                                  double atol, double rtol)
{
    size_t bad = 0;
    double max_abs = 0.0, max_rel = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(got[i] - ref[i]);
        double rel = d / (fabs(ref[i]) > 1e-30 ? fabs(ref[i]) : 1e-30);
        max_abs = d > max_abs ? d : max_abs;
        max_rel = rel > max_rel ? rel : max_rel;
        if (!(d <= atol + rtol * fabs(ref[i]))) {
            if (bad < 5)
                fprintf(stderr, "  %s[%zu]: got %.9g, want %.9g (|diff| %.3g > %.3g)\n", name, i,
                        got[i], ref[i], d, atol + rtol * fabs(ref[i]));
            bad++;
        }
    }
    if (bad)
        fprintf(stderr, "%s: %zu of %zu mismatches, max abs err %.3g, max rel err %.3g\n", name,
                bad, n, max_abs, max_rel);
    return bad;
}

/*
 * Central-difference check of d loss / d x[i] for all i against analytic[i]:
 * returns max |analytic - numeric| / max(1, |numeric|). loss() re-evaluates
 * the scalar with x as it currently is.
 */
static inline double test_gradcheck(const char *name, double (*loss)(void *), void *ctx, double *x,
                                    size_t n, const double *analytic, double h)
{
    double worst = 0.0;
    size_t worst_i = 0;
    double worst_num = 0.0;
    for (size_t i = 0; i < n; i++) {
        double x0 = x[i];
        x[i] = x0 + h;
        double lp = loss(ctx);
        x[i] = x0 - h;
        double lm = loss(ctx);
        x[i] = x0;
        double num = (lp - lm) / (2.0 * h);
        double e = fabs(analytic[i] - num) / fmax(1.0, fabs(num));
        if (e > worst || isnan(e)) {
            worst = isnan(e) ? HUGE_VAL : e;
            worst_i = i;
            worst_num = num;
        }
    }
    if (worst >= 1e-6)
        fprintf(stderr, "gradcheck %s: worst error %.3g at [%zu] (analytic %.12g, numeric %.12g)\n",
                name, worst, worst_i, analytic[worst_i], worst_num);
    return worst;
}

#endif /* TUNE_BERT_TEST_UTIL_H */
