/*
 * test_importance.c - fANOVA importance (search/importance.c) on functions
 * whose functional ANOVA is known in closed form, for x, y, z uniform on
 * [0, 1]:
 *   f = 10x + y, z unused: x explains 100/101 of the variance, y 1/101, z
 *       nothing, no pair interacts;
 *   f = x + y + 12 (x - 1/2)(y - 1/2): each main effect 1/12 of a variance
 *       of 7/6 (0.0714), the x-y interaction the remaining 6/7 (0.857);
 *   a log-scale float and a categorical choice: f = log10(lr) + (opt == "c"
 *       ? 3 : 0) with lr loguniform on [1e-5, 1e-1] and opt one of a, b, c:
 *       variances 16/12 and 2, so lr 0.4 and opt 0.6 (lr is 0.4 only when
 *       it is measured in log space), and an unused choice near 0;
 *   two choices, f = a + b with a in {0, 1} and b in {0, 2}, every
 *       combination observed: each tree is the function itself, so the
 *       fractions are exactly 0.2 and 0.8 and the pair 0.
 * Also: the same seed gives the same result and another seed another one;
 * constants get NaN, constant y gives 0 with no tree used; non-finite values
 * are left out; bad arguments and every allocation failure are reported.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "check_util.h"
#include "base/rng.h"
#include "search/importance.h"
#include "search/space.h"

static tune_error err;

#define OK(call) ck_assert_msg((call) == TUNE_OK, "%s: %s", #call, err.text)

/* n configurations drawn from sp (seed), and f of each into y. */
static struct tunep_value *draw(const tune_space *sp, size_t n, uint64_t seed,
                                double (*f)(const struct tunep_value *), double *y)
{
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    ck_assert_ptr_nonnull(r);
    gsl_rng_set(r, (unsigned long)seed);
    struct tunep_value *v = calloc(n * sp->n, sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < n; i++) {
        tunep_space_sample(sp, r, 0, 0, v + i * sp->n);
        y[i] = f(v + i * sp->n);
    }
    gsl_rng_free(r);
    return v;
}

static tune_space *xyz_space(void)
{
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_uniform(sp, "x", 0.0, 1.0, &err));
    OK(tune_space_add_uniform(sp, "y", 0.0, 1.0, &err));
    OK(tune_space_add_uniform(sp, "z", 0.0, 1.0, &err));
    return sp;
}

static const struct tunep_importance_pair *pair(const struct tunep_importance *imp, size_t a,
                                                size_t b)
{
    for (size_t p = 0; p < imp->n_pairs; p++)
        if (imp->pairs[p].a == a && imp->pairs[p].b == b)
            return &imp->pairs[p];
    ck_abort_msg("no pair (%zu, %zu)", a, b);
    return NULL;
}

static double linear(const struct tunep_value *v)
{
    return 10 * v[0].u.d + v[1].u.d;
}

START_TEST(test_linear)
{
    tune_space *sp = xyz_space();
    double y[300];
    struct tunep_value *v = draw(sp, 300, 1, linear, y);
    struct tunep_importance_config c;
    struct tunep_importance imp;
    tunep_importance_config_default(&c);
    OK(tunep_importance_fanova(sp, v, y, 300, &c, &imp, &err));
    ck_assert_uint_eq(imp.n_params, 3);
    ck_assert_uint_eq(imp.n_trials, 300);
    ck_assert_int_eq(imp.n_trees, 64);
    ck_assert_uint_eq(imp.n_pairs, 3);
    /* Closed form: 100/101 = 0.990, 1/101 = 0.0099, 0. */
    ck_assert_msg(fabs(imp.importance[0] - 100.0 / 101) < 0.02, "x: %g", imp.importance[0]);
    ck_assert_msg(imp.importance[1] > 0.002 && imp.importance[1] < 0.02, "y: %g",
                  imp.importance[1]);
    ck_assert_msg(imp.importance[2] < 0.001, "z: %g", imp.importance[2]);
    ck_assert(imp.importance[0] > imp.importance[1] && imp.importance[1] > 4 * imp.importance[2]);
    for (size_t p = 0; p < imp.n_pairs; p++)
        ck_assert_msg(imp.pairs[p].importance < 0.01, "pair %zu-%zu: %g", imp.pairs[p].a,
                      imp.pairs[p].b, imp.pairs[p].importance);
    /* The terms of each tree add up to at most its variance. */
    double sum = imp.importance[0] + imp.importance[1] + imp.importance[2];
    for (size_t p = 0; p < imp.n_pairs; p++)
        sum += imp.pairs[p].importance;
    ck_assert_msg(sum <= 1 + 1e-9, "sum %g", sum);
    ck_assert(imp.sd[0] >= 0 && imp.sd[0] < 0.05);
    tunep_importance_done(&imp);
    free(v);
    tune_space_free(sp);
}
END_TEST

static double interacting(const struct tunep_value *v)
{
    double x = v[0].u.d, y = v[1].u.d;
    return x + y + 12 * (x - 0.5) * (y - 0.5);
}

START_TEST(test_interaction)
{
    tune_space *sp = xyz_space();
    double y[600];
    struct tunep_value *v = draw(sp, 600, 2, interacting, y);
    struct tunep_importance_config c;
    struct tunep_importance imp;
    tunep_importance_config_default(&c);
    OK(tunep_importance_fanova(sp, v, y, 600, &c, &imp, &err));
    double xy = pair(&imp, 0, 1)->importance;
    /* Closed form: 1/14 = 0.0714 each, 6/7 = 0.857 for the pair. */
    ck_assert_msg(fabs(imp.importance[0] - 1.0 / 14) < 0.03, "x: %g", imp.importance[0]);
    ck_assert_msg(fabs(imp.importance[1] - 1.0 / 14) < 0.03, "y: %g", imp.importance[1]);
    ck_assert_msg(fabs(xy - 6.0 / 7) < 0.06, "x-y: %g", xy);
    ck_assert_msg(imp.importance[2] < 0.01, "z: %g", imp.importance[2]);
    ck_assert_msg(pair(&imp, 0, 2)->importance < 0.02 && pair(&imp, 1, 2)->importance < 0.02,
                  "pairs with z: %g %g", pair(&imp, 0, 2)->importance,
                  pair(&imp, 1, 2)->importance);
    tunep_importance_done(&imp);

    /* Without pairs: the same main effects, no pair list. */
    c.pairs = 0;
    struct tunep_importance mains;
    OK(tunep_importance_fanova(sp, v, y, 600, &c, &mains, &err));
    ck_assert_uint_eq(mains.n_pairs, 0);
    ck_assert_ptr_null(mains.pairs);
    ck_assert(mains.importance[0] < 0.15);
    tunep_importance_done(&mains);
    free(v);
    tune_space_free(sp);
}
END_TEST

static double log_and_choice(const struct tunep_value *v)
{
    return log10(v[0].u.d) + (strcmp(v[1].u.s, "c") == 0 ? 3.0 : 0.0);
}

START_TEST(test_log_and_categorical)
{
    static const char *const opts[] = {"a", "b", "c"};
    static const char *const unused[] = {"p", "q", "r", "s"};
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_loguniform(sp, "lr", 1e-5, 1e-1, 10.0, &err));
    OK(tune_space_add_choice_string(sp, "opt", opts, 3, &err));
    OK(tune_space_add_const_int(sp, "k", 7, &err));
    OK(tune_space_add_choice_string(sp, "unused", unused, 4, &err));
    double y[500];
    struct tunep_value *v = draw(sp, 500, 3, log_and_choice, y);
    struct tunep_importance_config c;
    struct tunep_importance imp;
    tunep_importance_config_default(&c);
    OK(tunep_importance_fanova(sp, v, y, 500, &c, &imp, &err));
    ck_assert_uint_eq(imp.n_params, 4);
    /* Closed form: (16/12) / (16/12 + 2) = 0.4 and 2 / (16/12 + 2) = 0.6. */
    ck_assert_msg(fabs(imp.importance[0] - 0.4) < 0.03, "lr: %g", imp.importance[0]);
    ck_assert_msg(fabs(imp.importance[1] - 0.6) < 0.03, "opt: %g", imp.importance[1]);
    ck_assert(isnan(imp.importance[2]) && isnan(imp.sd[2]));
    ck_assert_msg(imp.importance[3] < 0.01, "unused: %g", imp.importance[3]);
    /* Pairs of varying parameters only, named by space index. */
    ck_assert_uint_eq(imp.n_pairs, 3);
    ck_assert_msg(pair(&imp, 0, 1)->importance < 0.02, "lr-opt: %g", pair(&imp, 0, 1)->importance);
    ck_assert_uint_eq(pair(&imp, 1, 3)->b, 3);
    tunep_importance_done(&imp);
    free(v);
    tune_space_free(sp);
}
END_TEST

START_TEST(test_exact_on_a_grid)
{
    static const int64_t av[] = {0, 1}, bv[] = {0, 2};
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_choice_int(sp, "a", av, 2, &err));
    OK(tune_space_add_choice_int(sp, "b", bv, 2, &err));
    struct tunep_value v[80 * 2];
    double y[80];
    for (size_t i = 0; i < 80; i++) {
        v[2 * i] = (struct tunep_value){TUNEP_V_INT, {.i = av[i % 2]}};
        v[2 * i + 1] = (struct tunep_value){TUNEP_V_INT, {.i = bv[(i / 2) % 2]}};
        y[i] = (double)(av[i % 2] + bv[(i / 2) % 2]);
    }
    struct tunep_importance_config c;
    struct tunep_importance imp;
    tunep_importance_config_default(&c);
    c.seed = 11;
    OK(tunep_importance_fanova(sp, v, y, 80, &c, &imp, &err));
    ck_assert_msg(fabs(imp.importance[0] - 0.2) < 1e-9, "a: %.17g", imp.importance[0]);
    ck_assert_msg(fabs(imp.importance[1] - 0.8) < 1e-9, "b: %.17g", imp.importance[1]);
    ck_assert_msg(imp.sd[0] < 1e-9 && imp.sd[1] < 1e-9, "sd %g %g", imp.sd[0], imp.sd[1]);
    ck_assert_msg(imp.pairs[0].importance < 1e-9, "a-b: %g", imp.pairs[0].importance);
    tunep_importance_done(&imp);
    tune_space_free(sp);
}
END_TEST

START_TEST(test_seed_and_edge_cases)
{
    tune_space *sp = xyz_space();
    double y[120];
    struct tunep_value *v = draw(sp, 120, 4, linear, y);
    struct tunep_importance_config c;
    struct tunep_importance a, b, o;
    tunep_importance_config_default(&c);
    c.seed = 5;
    OK(tunep_importance_fanova(sp, v, y, 120, &c, &a, &err));
    OK(tunep_importance_fanova(sp, v, y, 120, &c, &b, &err));
    c.seed = 6;
    OK(tunep_importance_fanova(sp, v, y, 120, &c, &o, &err));
    for (size_t i = 0; i < 3; i++)
        ck_assert(a.importance[i] == b.importance[i] && a.sd[i] == b.sd[i]);
    for (size_t p = 0; p < 3; p++)
        ck_assert(a.pairs[p].importance == b.pairs[p].importance);
    ck_assert(a.importance[1] != o.importance[1]);
    tunep_importance_done(&a);
    tunep_importance_done(&b);
    tunep_importance_done(&o);

    /* Non-finite values are left out: the same result as without them. */
    double y2[121];
    struct tunep_value v2[121 * 3];
    memcpy(y2, y, sizeof y);
    memcpy(v2, v, 120 * 3 * sizeof *v);
    y2[120] = (double)NAN;
    v2[360] = v2[361] = v2[362] = v[0];
    c.seed = 5;
    OK(tunep_importance_fanova(sp, v, y, 120, &c, &a, &err));
    OK(tunep_importance_fanova(sp, v2, y2, 121, &c, &b, &err));
    ck_assert_uint_eq(b.n_trials, 120);
    ck_assert(a.importance[0] == b.importance[0]);
    tunep_importance_done(&a);
    tunep_importance_done(&b);

    /* A constant objective: nothing to explain, no tree used. */
    for (size_t i = 0; i < 120; i++)
        y[i] = 3.0;
    OK(tunep_importance_fanova(sp, v, y, 120, &c, &a, &err));
    ck_assert_int_eq(a.n_trees, 0);
    ck_assert(a.importance[0] == 0 && a.importance[2] == 0 && a.pairs[0].importance == 0);
    tunep_importance_done(&a);

    /* Too few observations and bad options. */
    y[0] = 1.0;
    ck_assert_int_eq(tunep_importance_fanova(sp, v, y, 1, &c, &a, &err), TUNE_EINVAL);
    ck_assert_msg(strstr(err.text, "at least 2 observations") != NULL, "%s", err.text);
    y[1] = (double)INFINITY;
    ck_assert_int_eq(tunep_importance_fanova(sp, v, y, 2, &c, &a, &err), TUNE_EINVAL);
    c.n_trees = 0;
    ck_assert_int_eq(tunep_importance_fanova(sp, v, y, 120, &c, &a, &err), TUNE_EINVAL);
    ck_assert_msg(strstr(err.text, "n_trees") != NULL, "%s", err.text);
    tunep_importance_config_default(&c);
    c.max_depth = 0;
    ck_assert_int_eq(tunep_importance_fanova(sp, v, y, 120, &c, &a, &err), TUNE_EINVAL);
    tunep_importance_config_default(&c);
    ck_assert_int_eq(tunep_importance_fanova(NULL, v, y, 120, &c, &a, &err), TUNE_EINVAL);
    free(v);
    tune_space_free(sp);
}
END_TEST

START_TEST(test_alloc_failures)
{
    static const char *const opts[] = {"a", "b", "c"};
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_loguniform(sp, "lr", 1e-5, 1e-1, 10.0, &err));
    OK(tune_space_add_choice_string(sp, "opt", opts, 3, &err));
    double y[40];
    struct tunep_value *v = draw(sp, 40, 7, log_and_choice, y);
    struct tunep_importance_config c;
    tunep_importance_config_default(&c);
    c.n_trees = 3;
    int clean = 0;
    for (long k = 0; k < 2000 && !clean; k++) {
        struct tunep_importance imp = {0};
        tune_test_alloc_fail_after(k);
        tune_status st = tunep_importance_fanova(sp, v, y, 40, &c, &imp, &err);
        int hit = tune_test_alloc_failed();
        tune_test_alloc_reset();
        ck_assert_int_eq(st, hit ? TUNE_ENOMEM : TUNE_OK);
        if (hit)
            ck_assert_ptr_null(imp.importance);
        clean = !hit;
        tunep_importance_done(&imp);
    }
    ck_assert_msg(clean, "allocations never stopped failing");
    free(v);
    tune_space_free(sp);
}
END_TEST

static Suite *importance_suite(void)
{
    Suite *s = suite_create("importance");
    TCase *tc = tcase_create("fanova");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_linear);
    tcase_add_test(tc, test_interaction);
    tcase_add_test(tc, test_log_and_categorical);
    tcase_add_test(tc, test_exact_on_a_grid);
    tcase_add_test(tc, test_seed_and_edge_cases);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(importance_suite)
