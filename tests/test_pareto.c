/*
 * test_pareto.c - dominance, non-dominated sorting, crowding distance and
 * hypervolume (search/pareto.c) against tables worked out by hand in the
 * comments, and the general hypervolume against inclusion-exclusion.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check_util.h"
#include "base/rng.h"
#include "search/pareto.h"

static tune_error err;

#define OK(call) ck_assert_msg((call) == TUNE_OK, "%s: %s", #call, err.text)

START_TEST(test_dominates)
{
    /* a, b, m = 2, does a dominate b */
    static const struct {
        double a[2], b[2];
        int want;
    } rows[] = {
        {{1, 2}, {2, 3}, 1},
        {{2, 3}, {1, 2}, 0},
        {{1, 2}, {1, 2}, 0},           /* duplicates: neither */
        {{1, 3}, {2, 2}, 0},           /* a trade-off: neither */
        {{1, 2}, {1, 3}, 1},           /* tied in one, better in the other */
        {{5, 5}, {(double)NAN, 0}, 1}, /* a missing metric loses to any complete point */
        {{(double)NAN, 0}, {5, 5}, 0},
        {{(double)NAN, 0}, {(double)NAN, 1}, 1}, /* both incomplete: NaN reads as +inf */
        {{(double)NAN, 1}, {1, (double)NAN}, 0},
        {{(double)NAN, 1}, {(double)NAN, 1}, 0},
        {{-(double)INFINITY, 9}, {0, 9}, 1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        ck_assert_msg(tunep_pareto_dominates(rows[i].a, rows[i].b, 2) == rows[i].want, "row %zu",
                      i);
}
END_TEST

/*
 * accuracy (max), latency (min):
 *   A (0.9, 10)  B (0.8, 5)  C (0.9, 12)  D (0.7, 6)  E = A  F (NaN, 1)  G (0.95, 20)
 * A and E (duplicates) dominate C (same accuracy, slower); B dominates D;
 * A, B, G trade off; F misses accuracy, so every complete point dominates it.
 * Ranks: A 0, B 0, C 1, D 1, E 0, F 2 (below C and D), G 0.
 */
static const double mixed[] = {0.9, 10, 0.8, 5, 0.9, 12, 0.7, 6, 0.9, 10, (double)NAN, 1, 0.95, 20};
static const int mixed_max[] = {1, 0};

START_TEST(test_sort_mixed_directions)
{
    double y[14];
    tunep_pareto_minimize(mixed, 7, 2, mixed_max, y);
    ck_assert(y[0] == -0.9 && y[1] == 10 && isnan(y[10]) && y[11] == 1);
    int rank[7], front[7];
    OK(tunep_pareto_sort(y, 7, 2, rank, &err));
    static const int want[] = {0, 0, 1, 1, 0, 2, 0};
    for (int i = 0; i < 7; i++)
        ck_assert_msg(rank[i] == want[i], "point %d: rank %d, want %d", i, rank[i], want[i]);
    ck_assert_uint_eq(tunep_pareto_front(y, 7, 2, front), 4);
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(front[i], want[i] == 0);

    /* Both maximised: G is best in accuracy, C in latency; A and E dominate B and D. */
    static const int both_max[] = {1, 1};
    tunep_pareto_minimize(mixed, 7, 2, both_max, y);
    OK(tunep_pareto_sort(y, 7, 2, rank, &err));
    /*
     * Worked out: G (0.95, 20) dominates everyone complete. Below it, C (0.9, 12)
     * dominates A, E (0.9, 10), B (0.8, 5), D (0.7, 6). Then A = E dominate B and D;
     * B (0.8, 5) and D (0.7, 6) trade off. Ranks: G 0, C 1, A 2, E 2, B 3, D 3, F 4.
     */
    static const int want_both[] = {2, 3, 1, 3, 2, 4, 0};
    for (int i = 0; i < 7; i++)
        ck_assert_msg(rank[i] == want_both[i], "point %d: rank %d, want %d", i, rank[i],
                      want_both[i]);
}
END_TEST

START_TEST(test_sort_chain_ties_duplicates)
{
    /* A chain: each point dominates the next. */
    static const double chain[] = {4, 4, 1, 1, 3, 3, 2, 2};
    int rank[8];
    OK(tunep_pareto_sort(chain, 4, 2, rank, &err));
    ck_assert(rank[0] == 3 && rank[1] == 0 && rank[2] == 2 && rank[3] == 1);

    /* (1,5) twice, (2,4) trades off with it, (2,6) is dominated by both (1,5)s. */
    static const double ties[] = {1, 5, 1, 5, 2, 4, 2, 6};
    OK(tunep_pareto_sort(ties, 4, 2, rank, &err));
    ck_assert(rank[0] == 0 && rank[1] == 0 && rank[2] == 0 && rank[3] == 1);

    /* All equal: one front. All NaN: one front too (nothing is better). */
    static const double same[] = {1, 1, 1, 1, 1, 1};
    OK(tunep_pareto_sort(same, 3, 2, rank, &err));
    ck_assert(rank[0] == 0 && rank[1] == 0 && rank[2] == 0);
    static const double nans[] = {(double)NAN, (double)NAN, (double)NAN, (double)NAN};
    OK(tunep_pareto_sort(nans, 2, 2, rank, &err));
    ck_assert(rank[0] == 0 && rank[1] == 0);

    /* Three objectives: (1,2,3) (2,1,3) trade off; (2,2,3) below both; (3,3,3) below it. */
    static const double three[] = {1, 2, 3, 2, 1, 3, 2, 2, 3, 3, 3, 3};
    OK(tunep_pareto_sort(three, 4, 3, rank, &err));
    ck_assert(rank[0] == 0 && rank[1] == 0 && rank[2] == 1 && rank[3] == 2);
    OK(tunep_pareto_sort(three, 0, 3, rank, &err));
}
END_TEST

/* The ranks satisfy the definition on random sets with many ties (values 0..3). */
START_TEST(test_sort_definition_random)
{
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    gsl_rng_set(r, 7);
    enum { N = 60, M = 3 };
    double y[N * M];
    int rank[N];
    for (int rep = 0; rep < 50; rep++) {
        for (int i = 0; i < N * M; i++)
            y[i] = gsl_rng_uniform_int(r, 5) == 4 ? (double)NAN : (double)gsl_rng_uniform_int(r, 4);
        OK(tunep_pareto_sort(y, N, M, rank, &err));
        for (int i = 0; i < N; i++) {
            int best_dominator = -1;
            for (int k = 0; k < N; k++)
                if (tunep_pareto_dominates(y + k * M, y + i * M, M)) {
                    ck_assert_int_lt(rank[k], rank[i]);
                    if (rank[k] > best_dominator)
                        best_dominator = rank[k];
                }
            /* Rank is exactly one below the worst-ranked dominator (0 if none). */
            ck_assert_int_eq(rank[i], best_dominator + 1);
        }
    }
    gsl_rng_free(r);
}
END_TEST

START_TEST(test_crowding)
{
    /*
     * P0 (1,5) P1 (2,3) P2 (4,2) P3 (5,1). Objective 0, range 4: P0 and P3 are
     * ends; P1 gets (4-1)/4 = 0.75, P2 (5-2)/4 = 0.75. Objective 1, range 4,
     * order P3 P2 P1 P0: P2 gets (3-1)/4 = 0.5, P1 (5-2)/4 = 0.75.
     * Totals: inf, 1.5, 1.25, inf.
     */
    static const double y[] = {1, 5, 2, 3, 4, 2, 5, 1};
    size_t idx[] = {0, 1, 2, 3};
    double d[4];
    OK(tunep_pareto_crowding(y, 2, idx, 4, d, &err));
    ck_assert(isinf(d[0]) && isinf(d[3]));
    ck_assert_double_eq_tol(d[1], 1.5, 1e-15);
    ck_assert_double_eq_tol(d[2], 1.25, 1e-15);

    /* idx picks and orders points: d follows idx. */
    size_t sub[] = {2, 0, 1};
    OK(tunep_pareto_crowding(y, 2, sub, 3, d, &err));
    /* obj 0: 1 (P0), 2 (P1), 4 (P2): P1 gets (4-1)/3 = 1; obj 1: 2, 3, 5: P1 gets (5-2)/3 = 1. */
    ck_assert(isinf(d[0]) && isinf(d[1]));
    ck_assert_double_eq_tol(d[2], 2.0, 1e-15);

    /* Zero range in objective 0 adds nothing: (1,3) (1,2) (1,1): middle gets (3-1)/2 = 1. */
    static const double flat[] = {1, 3, 1, 2, 1, 1};
    OK(tunep_pareto_crowding(flat, 2, idx, 3, d, &err));
    ck_assert(isinf(d[0]) && d[1] == 1.0 && isinf(d[2]));

    /* One point, or all equal: no range anywhere, distance 0 (as Optuna). */
    OK(tunep_pareto_crowding(flat, 2, idx, 1, d, &err));
    ck_assert(d[0] == 0);
    static const double same[] = {2, 2, 2, 2, 2, 2};
    OK(tunep_pareto_crowding(same, 2, idx, 3, d, &err));
    ck_assert(d[0] == 0 && d[1] == 0 && d[2] == 0);

    /*
     * Ties keep idx order: (0,1) (0,1) (1,0). Obj 0 order: #0, #1, #2, range 1:
     * #1 gets (1-0)/1 = 1. Obj 1 order: #2 (0), #0 (1), #1 (1): ends #2 and #1,
     * #0 is inner but already an end of obj 0. Result: inf, inf, inf.
     */
    static const double dup[] = {0, 1, 0, 1, 1, 0};
    OK(tunep_pareto_crowding(dup, 2, idx, 3, d, &err));
    ck_assert(isinf(d[0]) && isinf(d[1]) && isinf(d[2]));
}
END_TEST

START_TEST(test_hypervolume_hand)
{
    double hv;
    /* 1-D: reference 5, best 1: 4. */
    static const double one[] = {3, 1, 2};
    OK(tunep_pareto_hypervolume(one, 3, 1, (double[]){5}, &hv, &err));
    ck_assert_double_eq(hv, 4);

    /*
     * (1,3) (2,2) (3,1), reference (4,4): strips 3*1 + 2*1 + 1*1 = 6; by
     * inclusion-exclusion 3 + 4 + 3 - 2 - 1 - 2 + 1 = 6. A dominated point
     * (2.5,2.5), a duplicate (2,2), points outside or on the reference's
     * boundary (5,0) (0,4) and a NaN point change nothing.
     */
    static const double two[] = {1, 3, 2, 2, 3, 1, 2.5, 2.5, 2, 2, 5, 0, 0, 4, (double)NAN, 0};
    const double ref2[] = {4, 4};
    OK(tunep_pareto_hypervolume(two, 3, 2, ref2, &hv, &err));
    ck_assert_double_eq_tol(hv, 6, 1e-12);
    OK(tunep_pareto_hypervolume(two, 8, 2, ref2, &hv, &err));
    ck_assert_double_eq_tol(hv, 6, 1e-12);
    OK(tunep_pareto_hypervolume(two, 0, 2, ref2, &hv, &err));
    ck_assert_double_eq(hv, 0);

    /*
     * (1,2,3) (2,3,1) (3,1,2), reference (4,4,4): boxes 6 + 6 + 6, pairwise
     * overlaps 2 + 2 + 2, the triple 1: 18 - 6 + 1 = 13.
     */
    static const double three[] = {1, 2, 3, 2, 3, 1, 3, 1, 2};
    OK(tunep_pareto_hypervolume(three, 3, 3, (double[]){4, 4, 4}, &hv, &err));
    ck_assert_double_eq_tol(hv, 13, 1e-12);

    /* (1,0,0,0) (0,1,0,0), reference (2,2,2,2): 8 + 8 - 4 = 12. */
    static const double four[] = {1, 0, 0, 0, 0, 1, 0, 0};
    OK(tunep_pareto_hypervolume(four, 2, 4, (double[]){2, 2, 2, 2}, &hv, &err));
    ck_assert_double_eq_tol(hv, 12, 1e-12);
}
END_TEST

/* Inclusion-exclusion over every subset: the union of boxes [y_i, ref]. */
static double hv_brute(const double *y, size_t n, size_t m, const double *ref)
{
    double total = 0;
    for (uint32_t set = 1; set < (1u << n); set++) {
        double vol = 1;
        int bits = 0;
        for (size_t j = 0; j < m; j++) {
            double lo = -HUGE_VAL;
            for (size_t i = 0; i < n; i++)
                if (set >> i & 1u)
                    lo = fmax(lo, y[i * m + j]);
            vol *= fmax(0, ref[j] - lo);
        }
        for (size_t i = 0; i < n; i++)
            bits += (int)(set >> i & 1u);
        total += bits % 2 ? vol : -vol;
    }
    return total;
}

START_TEST(test_hypervolume_random)
{
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    gsl_rng_set(r, 11);
    const double ref[] = {1, 1, 1, 1, 1};
    double y[10 * 5];
    for (size_t m = 2; m <= 5; m++)
        for (int rep = 0; rep < 40; rep++) {
            size_t n = 1 + gsl_rng_uniform_int(r, 10);
            for (size_t i = 0; i < n * m; i++)
                /* A coarse grid makes ties and duplicates common; some points lie past ref. */
                y[i] = (double)gsl_rng_uniform_int(r, 6) / 5.0;
            double hv;
            OK(tunep_pareto_hypervolume(y, n, m, ref, &hv, &err));
            ck_assert_msg(fabs(hv - hv_brute(y, n, m, ref)) < 1e-12, "m %zu rep %d: %g vs %g", m,
                          rep, hv, hv_brute(y, n, m, ref));
        }
    gsl_rng_free(r);
}
END_TEST

/*
 * The default reference point and the hypervolume after each point, by hand:
 *   i  point      ref (4.3, 4.3): worst of each column (4, 4) + a tenth of its range (3)
 *   0  (3, 3)     1.3 x 1.3 = 1.69
 *   1  (1, 3.5)   + 3.3 x 0.8 - the overlap 1.3 x 0.8 = 3.29
 *   2  (3, 3)     a duplicate: 3.29
 *   3  (4, 4)     dominated: 3.29
 *   4  (NaN, 1)   missing: 3.29
 *   5  (2, 2)     2.3 x 2.3 + what 1 adds past it, 1 x 0.8 = 6.09
 * Random sets against tunep_pareto_hypervolume() of each prefix; a work cap of
 * 0 leaves every entry NaN.
 */
START_TEST(test_hypervolume_history)
{
    const double y[] = {3, 3, 1, 3.5, 3, 3, 4, 4, (double)NAN, 1, 2, 2};
    const double want[] = {1.69, 3.29, 3.29, 3.29, 3.29, 6.09};
    double ref[2], hv[6];
    size_t done;
    tunep_pareto_reference(y, 6, 2, ref);
    ck_assert_double_eq_tol(ref[0], 4.3, 1e-12);
    ck_assert_double_eq_tol(ref[1], 4.3, 1e-12);
    OK(tunep_pareto_hypervolume_history(y, 6, 2, ref, 1e9, hv, &done, &err));
    ck_assert_uint_eq(done, 6);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(fabs(hv[i] - want[i]) < 1e-12, "%d: %.17g vs %g", i, hv[i], want[i]);
    OK(tunep_pareto_hypervolume_history(y, 6, 2, ref, 0, hv, &done, &err));
    ck_assert_uint_eq(done, 0);
    for (int i = 0; i < 6; i++)
        ck_assert(isnan(hv[i]));
    /* All equal: a tenth of |worst|; all zero: 1; no finite value: NaN. */
    tunep_pareto_reference((double[]){2, 0, 2, 0, 2, (double)NAN}, 3, 2, ref);
    ck_assert_double_eq_tol(ref[0], 2.2, 1e-12);
    ck_assert_double_eq_tol(ref[1], 1, 1e-12);
    tunep_pareto_reference((double[]){(double)NAN, 1}, 1, 2, ref);
    ck_assert(isnan(ref[0]));

    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    gsl_rng_set(r, 5);
    double z[30 * 4], h[30];
    const double ref1[] = {1, 1, 1, 1};
    for (size_t m = 2; m <= 4; m++)
        for (int rep = 0; rep < 20; rep++) {
            size_t n = 1 + gsl_rng_uniform_int(r, 30);
            for (size_t i = 0; i < n * m; i++)
                z[i] = (double)gsl_rng_uniform_int(r, 6) / 5.0;
            OK(tunep_pareto_hypervolume_history(z, n, m, ref1, 1e9, h, &done, &err));
            ck_assert_uint_eq(done, n);
            for (size_t i = 0; i < n; i++) {
                double prefix;
                OK(tunep_pareto_hypervolume(z, i + 1, m, ref1, &prefix, &err));
                ck_assert_msg(fabs(h[i] - prefix) < 1e-12, "m %zu rep %d i %zu: %g vs %g", m, rep,
                              i, h[i], prefix);
            }
        }
    gsl_rng_free(r);
}
END_TEST

START_TEST(test_alloc_failures)
{
    static const double y[] = {1, 2, 3, 2, 3, 1, 3, 1, 2};
    int rank[3];
    double d[3], hv;
    size_t idx[] = {0, 1, 2};
    for (int k = 0; k < 8; k++) {
        tune_test_alloc_fail_after(k);
        tune_status a = tunep_pareto_sort(y, 3, 3, rank, &err);
        tune_test_alloc_reset();
        ck_assert(a == TUNE_OK || a == TUNE_ENOMEM);
        tune_test_alloc_fail_after(k);
        a = tunep_pareto_crowding(y, 3, idx, 3, d, &err);
        tune_test_alloc_reset();
        ck_assert(a == TUNE_OK || a == TUNE_ENOMEM);
        tune_test_alloc_fail_after(k);
        a = tunep_pareto_hypervolume(y, 3, 3, (double[]){4, 4, 4}, &hv, &err);
        tune_test_alloc_reset();
        ck_assert(a == TUNE_OK || a == TUNE_ENOMEM);
        if (a == TUNE_OK)
            ck_assert_double_eq_tol(hv, 13, 1e-12);
        double hist[3];
        size_t done;
        tune_test_alloc_fail_after(k);
        a = tunep_pareto_hypervolume_history(y, 3, 3, (double[]){4, 4, 4}, 1e9, hist, &done, &err);
        tune_test_alloc_reset();
        ck_assert(a == TUNE_OK || a == TUNE_ENOMEM);
        if (a == TUNE_OK)
            ck_assert_double_eq_tol(hist[2], 13, 1e-12);
    }
}
END_TEST

static Suite *pareto_suite(void)
{
    Suite *s = suite_create("pareto");
    TCase *tc = tcase_create("pareto");
    tcase_add_test(tc, test_dominates);
    tcase_add_test(tc, test_sort_mixed_directions);
    tcase_add_test(tc, test_sort_chain_ties_duplicates);
    tcase_add_test(tc, test_sort_definition_random);
    tcase_add_test(tc, test_crowding);
    tcase_add_test(tc, test_hypervolume_hand);
    tcase_add_test(tc, test_hypervolume_random);
    tcase_add_test(tc, test_hypervolume_history);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(pareto_suite)
