/*
 * test_asha.c - FIFO and ASHA schedulers, numpy-compatible percentile, and
 * the "scheduler" config section.
 *
 * Reference values were computed with numpy 1.24 (the call is given next to
 * each); decision tables were worked out by hand with Ray Tune's
 * AsyncHyperBandScheduler rules and checked against numpy's cut-offs.
 */
#include "check_util.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <time.h>

#include "schedulers/asha.h"
#include "schedulers/scheduler.h"
#include "config/config_scheduler.h"

/* ---- helpers ----------------------------------------------------------------- */

static const struct tunep_scheduler_type *asha_type(void)
{
    const struct tunep_scheduler_type *t = tunep_scheduler_find("asha");
    ck_assert_ptr_nonnull(t);
    return t;
}

/* An ASHA config whose options live in *a (caller storage, at the defaults but for these). */
static struct tunep_scheduler_config asha_config(struct tunep_asha_config *a, double grace,
                                                 double max_t, double rf, int brackets,
                                                 int stop_last)
{
    ck_assert_int_eq(tunep_options_default(asha_type()->options, a), 0);
    a->grace_period = grace;
    a->max_t = max_t;
    a->reduction_factor = rf;
    a->brackets = brackets;
    a->stop_last_trials = stop_last;
    return (struct tunep_scheduler_config){asha_type(), a};
}

static struct tunep_scheduler *new_asha(double grace, double max_t, double rf, int brackets,
                                        int stop_last)
{
    struct tunep_asha_config a;
    struct tunep_scheduler_config c = asha_config(&a, grace, max_t, rf, brackets, stop_last);
    struct tunep_scheduler *s = NULL;
    tune_error err;
    ck_assert_int_eq(tunep_scheduler_new(&c, NULL, 0, &s, &err), TUNE_OK);
    ck_assert_ptr_nonnull(s);
    return s;
}

static void check_milestones(const struct tunep_asha *a, int bracket, const double *want, int n)
{
    ck_assert_int_eq(tunep_asha_rung_count_of(a, bracket), n);
    for (int k = 0; k < n; k++)
        ck_assert_double_eq(tunep_asha_milestone(a, bracket, k), want[k]);
}

/* ---- percentile -------------------------------------------------------------- */

START_TEST(test_percentile_numpy)
{
    struct {
        double v[11];
        size_t n;
        double p, want;
    } cases[] = {
        {{3.0, 1.0, 2.0}, 3, 50, 2.0},           /* np.percentile([3,1,2], 50) */
        {{0.1, 0.7, 0.3, 0.9}, 4, 75, 0.75},     /* np.percentile([.1,.7,.3,.9], 75) */
        {{0.1, 0.7, 0.3, 0.9, 0.5}, 5, 75, 0.7}, /* np.percentile([.1,.7,.3,.9,.5], 75) */
        {{5.0}, 1, 75, 5.0},                     /* np.percentile([5.], 75) */
        {{1.0, 2.0}, 2, 75, 1.75},               /* np.percentile([1.,2.], 75) */
        /* np.percentile([.1,.2,.3,.4,.5,.6,.7], (1 - 1/3) * 100) */
        {{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7}, 7, (1.0 - 1.0 / 3.0) * 100.0, 0.5},
        /* np.percentile([.83,.61,.95,.12,.47,.77], 75.0) */
        {{0.83, 0.61, 0.95, 0.12, 0.47, 0.77}, 6, 75.0, 0.815},
        {{2.5, -1.25, 7.0, 0.0, 3.3}, 5, 0, -1.25}, /* np.percentile([2.5,-1.25,7,0,3.3], 0) */
        {{2.5, -1.25, 7.0, 0.0, 3.3}, 5, 100, 7.0}, /* ..., 100) */
        {{2.5, -1.25, 7.0, 0.0, 3.3}, 5, 33.3, 0.8299999999999996}, /* ..., 33.3) */
        {{0.1, 0.2, 0.3}, 3, 90, 0.28}, /* np.percentile([.1,.2,.3], 90) */
        /* the gamma >= 0.5 branch of numpy's _lerp, b - (b - a) * (1 - gamma); a + (b - a) *
         * gamma would give 0.41500000000000004 and 0.7866666666666666 */
        {{0.43, 0.27, 0.1, 0.38}, 4, 90, 0.415}, /* np.percentile([.43,.27,.1,.38], 90) */
        /* np.percentile([.38,.99], (1 - 1/3) * 100) */
        {{0.38, 0.99}, 2, (1.0 - 1.0 / 3.0) * 100.0, 0.7866666666666667},
        /* np.percentile(np.linspace(0, 1, 11), 62.5) */
        {{0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6000000000000001, 0.7000000000000001, 0.8,
          0.9, 1.0},
         11,
         62.5,
         0.6250000000000001},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double got = tunep_percentile(cases[i].v, cases[i].n, cases[i].p);
        ck_assert_msg(got == cases[i].want, "case %zu: got %.17g, want %.17g", i, got,
                      cases[i].want);
        /* sorted in place */
        for (size_t j = 1; j < cases[i].n; j++)
            ck_assert(cases[i].v[j - 1] <= cases[i].v[j]);
    }
}
END_TEST

START_TEST(test_percentile_infinity)
{
    double v[4];
    /* -inf sorts first; interpolating from it gives -inf, exact positions do not. */
    double src[4] = {3.0, -HUGE_VAL, 1.0, 2.0};
    memcpy(v, src, sizeof v);
    ck_assert(tunep_percentile(v, 4, 0) == -HUGE_VAL);
    ck_assert(v[0] == -HUGE_VAL);
    memcpy(v, src, sizeof v);
    ck_assert(tunep_percentile(v, 4, 25) == -HUGE_VAL); /* position 0.75 */
    memcpy(v, src, sizeof v);
    ck_assert_double_eq(tunep_percentile(v, 4, 100.0 / 3.0), 1.0); /* position 1.0 */
    memcpy(v, src, sizeof v);
    ck_assert_double_eq(tunep_percentile(v, 4, 50), 1.5); /* position 1.5: finite neighbours */
    double all[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
    ck_assert(tunep_percentile(all, 3, 75) == -HUGE_VAL);
    double top[3] = {1.0, HUGE_VAL, 0.0};
    ck_assert(tunep_percentile(top, 3, 75) == HUGE_VAL); /* position 1.5 */
    double mid[3] = {1.0, HUGE_VAL, 0.0};
    ck_assert_double_eq(tunep_percentile(mid, 3, 50), 1.0); /* position 1.0 */
}
END_TEST

/* ---- rungs and brackets ---------------------------------------------------------- */

START_TEST(test_rungs)
{
    struct tunep_scheduler *s = new_asha(1, 100, 4, 1, 1);
    struct tunep_asha *a = tunep_scheduler_asha(s);
    ck_assert_int_eq(tunep_asha_bracket_count(a), 1);
    /* int(log(100)/log(4) - 0 + 1) = int(4.32) = 4 */
    check_milestones(a, 0, (const double[]){64, 16, 4, 1}, 4);
    tunep_scheduler_free(s);

    /* Exact power: log(64)/log(4) == 3.0 in doubles, so max_t itself is a rung. */
    s = new_asha(1, 64, 4, 1, 1);
    check_milestones(tunep_scheduler_asha(s), 0, (const double[]){64, 16, 4, 1}, 4);
    tunep_scheduler_free(s);

    /*
     * Just below an integer: log(133.1 / 0.1) / log(11) == 2.9999999999999996 and
     * log(19487171) / log(11) == 6.999999999999999, both with libm's log and with numpy's
     * own AVX-512 log, so Ray everywhere gets 3 (not 4) and 7 (not 8) rungs.
     */
    s = new_asha(0.1, 133.1, 11, 1, 1);
    check_milestones(tunep_scheduler_asha(s), 0, (const double[]){0.1 * 121, 0.1 * 11, 0.1}, 3);
    tunep_scheduler_free(s);
    s = new_asha(1, 19487171, 11, 1, 1);
    check_milestones(tunep_scheduler_asha(s), 0,
                     (const double[]){1771561, 161051, 14641, 1331, 121, 11, 1}, 7);
    tunep_scheduler_free(s);
    /*
     * log(1000) / log(10) == 2.9999999999999996 with libm (numpy without AVX-512): 3 rungs.
     * numpy's AVX-512 log gives 3.0 there (4 rungs): Ray itself differs by machine.
     */
    s = new_asha(1, 1000, 10, 1, 1);
    check_milestones(tunep_scheduler_asha(s), 0, (const double[]){100, 10, 1}, 3);
    tunep_scheduler_free(s);

    /* Three brackets: bracket s starts at grace * rf^s and has int(4.32 - s) rungs. */
    s = new_asha(1, 100, 4, 3, 1);
    a = tunep_scheduler_asha(s);
    ck_assert_int_eq(tunep_asha_bracket_count(a), 3);
    check_milestones(a, 0, (const double[]){64, 16, 4, 1}, 4);
    check_milestones(a, 1, (const double[]){64, 16, 4}, 3);
    check_milestones(a, 2, (const double[]){64, 16}, 2);
    tunep_scheduler_free(s);

    /* Five brackets: int(4.32 - 3) = 1 rung, int(4.32 - 4) = int(0.32) = 0 rungs. */
    s = new_asha(1, 100, 4, 5, 1);
    a = tunep_scheduler_asha(s);
    check_milestones(a, 3, (const double[]){64}, 1);
    ck_assert_int_eq(tunep_asha_rung_count_of(a, 4), 0);
    tunep_scheduler_free(s);

    /* Non-integer grace and a larger one: log(20)/log(2) = 4.32; log(10)/log(3) = 2.096. */
    s = new_asha(0.5, 10, 2, 1, 1);
    check_milestones(tunep_scheduler_asha(s), 0, (const double[]){8, 4, 2, 1, 0.5}, 5);
    tunep_scheduler_free(s);
    s = new_asha(10, 100, 3, 1, 1);
    check_milestones(tunep_scheduler_asha(s), 0, (const double[]){90, 30, 10}, 3);
    tunep_scheduler_free(s);

    /* grace == max_t: one rung at max_t. */
    s = new_asha(5, 5, 4, 1, 1);
    check_milestones(tunep_scheduler_asha(s), 0, (const double[]){5}, 1);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_new_rejects_bad_options)
{
    struct tunep_scheduler *s = NULL;
    tune_error err;
    struct tunep_asha_config a;
    struct tunep_scheduler_config c = asha_config(&a, 1, 100, 1, 1, 1);
    ck_assert_int_eq(tunep_scheduler_new(&c, NULL, 0, &s, &err), TUNE_EINVAL);
    c = asha_config(&a, 0, 100, 4, 1, 1);
    ck_assert_int_eq(tunep_scheduler_new(&c, NULL, 0, &s, &err), TUNE_EINVAL);
    c = asha_config(&a, 200, 100, 4, 1, 1);
    ck_assert_int_eq(tunep_scheduler_new(&c, NULL, 0, &s, &err), TUNE_EINVAL);
    c = asha_config(&a, 1, 100, 4, 0, 1);
    ck_assert_int_eq(tunep_scheduler_new(&c, NULL, 0, &s, &err), TUNE_EINVAL);
    c = asha_config(&a, 1, 1e6, 1.01, 1, 1); /* 1389 rungs */
    ck_assert_int_eq(tunep_scheduler_new(&c, NULL, 0, &s, &err), TUNE_EINVAL);
    ck_assert_ptr_null(s);
}
END_TEST

/* ---- decisions --------------------------------------------------------------- */

/*
 * rf = 4, eight trials reaching rung 1 in this order. Cut-off = numpy
 * percentile at 75 of the values already recorded there:
 *   0.5 first: continue | 0.3 < 0.5 stop | 0.8 >= 0.45 | 0.6 < 0.65 stop |
 *   0.2 < 0.65 stop | 0.9 >= 0.6 | 0.7 < 0.75 stop | 0.4 < 0.75 stop
 */
static const double table_scores[8] = {0.5, 0.3, 0.8, 0.6, 0.2, 0.9, 0.7, 0.4};
static const int table_stop[8] = {0, 1, 0, 1, 1, 0, 1, 1};
/* [np.nanpercentile(scores[:i], 75) for i in 1..7] */
static const double table_cutoff[8] = {0, 0.5, 0.45, 0.65, 0.65, 0.6, 0.75, 0.75};

START_TEST(test_decision_table_rf4)
{
    struct tunep_scheduler *s = new_asha(1, 100, 4, 1, 1);
    struct tunep_asha *a = tunep_scheduler_asha(s);
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(tunep_scheduler_on_trial_add(s, i, 0.5), TUNE_OK);
        double cut;
        int have = tunep_asha_cutoff(a, 0, 3, &cut);
        ck_assert_int_eq(have, i > 0);
        if (have)
            ck_assert_msg(cut == table_cutoff[i], "trial %d: cutoff %.17g", i, cut);
        enum tunep_decision d = tunep_scheduler_on_result(s, i, 1, 1, table_scores[i]);
        ck_assert_msg((int)d == (table_stop[i] ? TUNEP_STOP : TUNEP_CONTINUE), "trial %d", i);
        /* recorded even when stopped */
        ck_assert_uint_eq(tunep_asha_recorded(a, 0, 3), (size_t)i + 1);
    }
    /* A second report at the same rung changes nothing: already recorded there. */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 1, 1, 2, 0.0), TUNEP_CONTINUE);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 3), 8);
    /* Trial 5 (0.9) reaches rung 4 first: continues and is recorded there. */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 5, 1, 4, 0.9), TUNEP_CONTINUE);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 2), 1);
    tunep_scheduler_free(s);
}
END_TEST

/* rf = 3: cut-off at (1 - 1/3) * 100 = 66.666... */
START_TEST(test_decision_table_rf3)
{
    static const double scores[6] = {0.4, 0.9, 0.1, 0.6, 0.65, 0.3};
    static const int stop[6] = {0, 0, 1, 0, 0, 1};
    /* np.nanpercentile(scores[:i], (1 - 1/3) * 100) */
    static const double cutoff[6] = {
        0, 0.4, 0.7333333333333334, 0.5666666666666668, 0.6, 0.6333333333333333};
    struct tunep_scheduler *s = new_asha(2, 50, 3, 1, 1);
    struct tunep_asha *a = tunep_scheduler_asha(s);
    check_milestones(a, 0, (const double[]){18, 6, 2}, 3);
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(tunep_scheduler_on_trial_add(s, i, 0.1), TUNE_OK);
        double cut;
        if (tunep_asha_cutoff(a, 0, 2, &cut))
            ck_assert_msg(cut == cutoff[i], "trial %d: cutoff %.17g", i, cut);
        /* t = 1 is below grace: nothing happens */
        ck_assert_int_eq(tunep_scheduler_on_result(s, i, 1, 1, scores[i]), TUNEP_CONTINUE);
        enum tunep_decision d = tunep_scheduler_on_result(s, i, 1, 2, scores[i]);
        ck_assert_msg((int)d == (stop[i] ? TUNEP_STOP : TUNEP_CONTINUE), "trial %d", i);
    }
    tunep_scheduler_free(s);
}
END_TEST

/* mode "min": the controller negates losses; the same order gives the same decisions. */
START_TEST(test_mode_min_negated)
{
    struct tunep_scheduler *s = new_asha(1, 100, 4, 1, 1);
    for (int i = 0; i < 8; i++) {
        double loss = 1.0 - table_scores[i];
        tunep_scheduler_on_trial_add(s, i, 0.5);
        enum tunep_decision d = tunep_scheduler_on_result(s, i, 1, 1, -loss);
        ck_assert_int_eq((int)d, table_stop[i] ? TUNEP_STOP : TUNEP_CONTINUE);
    }
    tunep_scheduler_free(s);

    /* describe() shows cut-offs in the user's units: losses 1..5 -> scores -1..-5. */
    s = new_asha(1, 100, 4, 1, 1);
    for (int i = 0; i < 5; i++) {
        tunep_scheduler_on_trial_add(s, i, 0.5);
        tunep_scheduler_on_result(s, i, 1, 1, -(double)(i + 1));
    }
    struct tunep_buf buf;
    tunep_buf_init(&buf);
    tunep_scheduler_describe(s, -1.0, &buf);
    /* np.percentile([-1,-2,-3,-4,-5], 75) = -2 -> loss 2 */
    ck_assert_str_eq(buf.data, "ASHA: bracket 0: rung 1: 5 recorded, cutoff 2; rung 4: 0 recorded, "
                               "no cutoff; rung 16: 0 recorded, no cutoff; rung 64: 0 recorded, "
                               "no cutoff\n");
    tunep_buf_done(&buf);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_nan_is_worst)
{
    struct tunep_scheduler *s = new_asha(1, 100, 4, 1, 1);
    struct tunep_asha *a = tunep_scheduler_asha(s);
    for (int i = 0; i < 6; i++)
        tunep_scheduler_on_trial_add(s, i, 0.5);
    /* The first arrival has no cut-off: even a failed one continues. */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 0, 1, 1, -HUGE_VAL), TUNEP_CONTINUE);
    /* cut-off of {-inf} is -inf; 0.5 is not below it */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 1, 1, 1, 0.5), TUNEP_CONTINUE);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 2, 1, 1, 0.7), TUNEP_CONTINUE);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 3, 1, 1, 0.9), TUNEP_CONTINUE);
    /* {-inf, .5, .7, .9}: position 2.25 -> 0.75; a NaN trial (-inf) is stopped and recorded */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 4, 1, 1, -HUGE_VAL), TUNEP_STOP);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 3), 5);
    /* A NaN that slipped through is treated the same way, never stored as NaN. */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 5, 1, 1, nan("")), TUNEP_STOP);
    double cut;
    ck_assert(tunep_asha_cutoff(a, 0, 3, &cut));
    /* {-inf, -inf, -inf, .5, .7, .9}: position 3.75 -> .5 + .2 * .75 */
    ck_assert_double_eq_tol(cut, 0.65, 1e-15);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_max_t_terminates)
{
    struct tunep_scheduler *s = new_asha(1, 100, 4, 1, 1);
    struct tunep_asha *a = tunep_scheduler_asha(s);
    tunep_scheduler_on_trial_add(s, 0, 0.5);
    tunep_scheduler_on_trial_add(s, 1, 0.5);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 0, 1, 64, 0.3), TUNEP_CONTINUE);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 0), 1);
    /* Ray's order with stop_last_trials: a later report fills the next lower rung. */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 0, 1, 99, 0.3), TUNEP_CONTINUE);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 1), 1);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 0, 1, 100, 0.3), TUNEP_TERMINATE);
    /* Terminating at max_t decides before the rungs: even a bad score is not recorded. */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 1, 1, 100, -5), TUNEP_TERMINATE);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 0), 1);
    /* Completion records the final result at the highest rung not yet recorded (Ray). */
    tunep_scheduler_on_trial_complete(s, 1, 1, 100, -5);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 0), 2);
    ck_assert_int_eq(tunep_asha_trial_bracket(a, 1), -1);
    /* After completion the trial is forgotten: further results record nothing. */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 1, 1, 70, 1.0), TUNEP_CONTINUE);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 1), 1);
    /* No time attribute: no decision, nothing recorded. */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 0, 0, 1000, -1e9), TUNEP_CONTINUE);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 3), 0);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_stop_last_trials_false)
{
    struct tunep_scheduler *s = new_asha(1, 100, 4, 1, 0);
    struct tunep_asha *a = tunep_scheduler_asha(s);
    for (int i = 0; i < 3; i++)
        tunep_scheduler_on_trial_add(s, i, 0.5);
    /* Past max_t, no termination: the trial is judged at rung 64 like any other. */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 0, 1, 100, 0.9), TUNEP_CONTINUE);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 1, 1, 150, 0.1), TUNEP_STOP);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 0), 2);
    /* Once recorded at a rung it has passed, the trial skips the lower ones (break). */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 0, 1, 101, 0.9), TUNEP_CONTINUE);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 3), 0);
    /* A trial first seen at t = 5 records at rung 4; at t = 6 it does not fill rung 1. */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 2, 1, 5, 0.5), TUNEP_CONTINUE);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 2, 1, 6, 0.5), TUNEP_CONTINUE);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 2), 1);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 3), 0);
    tunep_scheduler_free(s);

    /* With stop_last_trials (Ray's default) the same trial fills rung 1 at t = 6. */
    s = new_asha(1, 100, 4, 1, 1);
    a = tunep_scheduler_asha(s);
    tunep_scheduler_on_trial_add(s, 2, 0.5);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 2, 1, 5, 0.5), TUNEP_CONTINUE);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 2, 1, 6, 0.5), TUNEP_CONTINUE);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 2), 1);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 3), 1);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_bracket_probabilities)
{
    /* sizes 4,3,2,1,0: softmax = [.63640865 .23412166 .08612854 .03168492 .01165623]
     * (p = np.e ** (sizes - 4); p / p.sum()) */
    static const double want[5] = {0.63640865, 0.23412166, 0.08612854, 0.03168492, 0.01165623};
    enum { N = 100000 };
    struct tunep_scheduler *s = new_asha(1, 100, 4, 5, 1);
    struct tunep_asha *a = tunep_scheduler_asha(s);
    int count[5] = {0};
    for (int i = 0; i < N; i++) {
        /* evenly spaced u: each bracket gets its probability mass to within one trial */
        ck_assert_int_eq(tunep_scheduler_on_trial_add(s, i, (i + 0.5) / N), TUNE_OK);
        int b = tunep_asha_trial_bracket(a, i);
        ck_assert(b >= 0 && b < 5);
        count[b]++;
    }
    for (int b = 0; b < 5; b++)
        ck_assert_msg(fabs(count[b] - want[b] * N) <= 1.5, "bracket %d: %d", b, count[b]);
    /* The brackets are in index order along u. */
    ck_assert_int_eq(tunep_asha_trial_bracket(a, 0), 0);
    ck_assert_int_eq(tunep_asha_trial_bracket(a, N - 1), 4);
    /* A retry keeps its bracket (and values) whatever u it brings. */
    tunep_scheduler_on_result(s, N - 1, 1, 64, 0.25);
    ck_assert_int_eq(tunep_scheduler_on_trial_add(s, N - 1, 0.0), TUNE_OK);
    ck_assert_int_eq(tunep_asha_trial_bracket(a, N - 1), 4);
    ck_assert_int_eq(tunep_scheduler_on_trial_add(s, 0, 0.999), TUNE_OK);
    ck_assert_int_eq(tunep_asha_trial_bracket(a, 0), 0);
    /* The zero-rung bracket 4 records nothing; its trials only stop at max_t. */
    ck_assert_int_eq(tunep_scheduler_on_result(s, N - 1, 1, 99, -1e9), TUNEP_CONTINUE);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_retry_keeps_records)
{
    struct tunep_scheduler *s = new_asha(1, 100, 4, 2, 1);
    struct tunep_asha *a = tunep_scheduler_asha(s);
    tunep_scheduler_on_trial_add(s, 0, 0.9); /* p(bracket 0) = 1/(1+e^-1) = .731 -> bracket 1 */
    ck_assert_int_eq(tunep_asha_trial_bracket(a, 0), 1);
    tunep_scheduler_on_trial_add(s, 1, 0.1);
    ck_assert_int_eq(tunep_asha_trial_bracket(a, 1), 0);
    tunep_scheduler_on_trial_add(s, 2, 0.1);
    tunep_scheduler_on_result(s, 1, 1, 1, 0.8);
    tunep_scheduler_on_result(s, 2, 1, 1, 0.2); /* stopped */
    /* Trial 2 fails and is retried: it is still recorded at rung 1, not judged again. */
    tunep_scheduler_on_trial_add(s, 2, 0.9);
    ck_assert_int_eq(tunep_asha_trial_bracket(a, 2), 0);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 2, 1, 1, 0.1), TUNEP_CONTINUE);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 3), 2);
    /* Also after a completion (the controller may report the failure first). */
    tunep_scheduler_on_trial_complete(s, 2, 0, 0, 0);
    tunep_scheduler_on_trial_add(s, 2, 0.9);
    ck_assert_int_eq(tunep_asha_trial_bracket(a, 2), 0);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 2, 1, 1, 0.1), TUNEP_CONTINUE);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 3), 2);
    ck_assert_int_eq(tunep_scheduler_on_trial_add(s, -1, 0.5), TUNE_EINVAL);
    /* unknown trial: no decision */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 77, 1, 1, 0.0), TUNEP_CONTINUE);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_fifo)
{
    struct tunep_scheduler_config c;
    tunep_scheduler_config_default(&c);
    ck_assert_ptr_eq(c.type, tunep_scheduler_find("fifo"));
    ck_assert_ptr_null(c.cfg); /* FIFO has no options */
    /* ASHA's defaults are Ray's */
    struct tunep_scheduler_config ca;
    ck_assert_int_eq(tunep_scheduler_config_init(&ca, asha_type(), NULL), TUNE_OK);
    struct tunep_asha_config *a = ca.cfg;
    ck_assert_str_eq(a->time_attr, "training_iteration");
    ck_assert_double_eq(a->max_t, 100);
    ck_assert_double_eq(a->grace_period, 1);
    ck_assert_double_eq(a->reduction_factor, 4);
    ck_assert_int_eq(a->brackets, 1);
    ck_assert_int_eq(a->stop_last_trials, 1);
    ck_assert_int_eq(a->promotion, 0);
    ck_assert_ptr_eq(tunep_scheduler_find("async_hyperband"), asha_type()); /* Ray's name */
    struct tunep_scheduler *s = NULL;
    ck_assert_int_eq(tunep_scheduler_new(&c, NULL, 0, &s, NULL), TUNE_OK);
    ck_assert_ptr_null(tunep_scheduler_asha(s));
    ck_assert_str_eq(tunep_scheduler_time_attr(s), "training_iteration");
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(tunep_scheduler_on_trial_add(s, i, 0.5), TUNE_OK);
        ck_assert_int_eq(tunep_scheduler_on_result(s, i, 1, 1e9, -HUGE_VAL), TUNEP_CONTINUE);
        ck_assert_int_eq(tunep_scheduler_on_result(s, i, 1, i, i), TUNEP_CONTINUE);
        tunep_scheduler_on_trial_complete(s, i, 1, 1, 1);
    }
    struct tunep_buf buf;
    tunep_buf_init(&buf);
    tunep_scheduler_describe(s, 1.0, &buf);
    ck_assert_uint_eq(buf.len, 0);
    tunep_buf_done(&buf);
    tunep_scheduler_free(s);
    tunep_scheduler_free(NULL);

    strcpy(a->time_attr, "epoch");
    ck_assert_int_eq(tunep_scheduler_new(&ca, NULL, 0, &s, NULL), TUNE_OK);
    tunep_scheduler_config_done(&ca); /* the scheduler keeps its own copy */
    ck_assert_ptr_eq(ca.type, c.type);
    ck_assert_str_eq(tunep_scheduler_time_attr(s), "epoch");
    tunep_scheduler_free(s);
}
END_TEST

/* xorshift64*: a self-contained score stream for the stress test. */
static double next_uniform(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return (double)((*x * 2685821657736338717ULL) >> 11) * 0x1.0p-53;
}

START_TEST(test_stress_100k)
{
    enum { N = 100000, CHECK_EVERY = 4999 };
    struct tunep_scheduler *s = new_asha(1, 100, 4, 1, 1);
    struct tunep_asha *a = tunep_scheduler_asha(s);
    double *seen = malloc(N * sizeof *seen), *copy = malloc(N * sizeof *copy);
    ck_assert(seen && copy);
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    size_t continued = 0;
    double elapsed = 0;
    for (int i = 0; i < N; i++) {
        if (i % CHECK_EVERY == 1) {
            /* the heap cut-off equals a full sort's, to the bit (not timed) */
            double cut;
            ck_assert(tunep_asha_cutoff(a, 0, 3, &cut));
            memcpy(copy, seen, (size_t)i * sizeof *copy);
            ck_assert(cut == tunep_percentile(copy, (size_t)i, 75.0));
        }
        double u = next_uniform(&x), score = next_uniform(&x);
        if (i % 1000 == 999)
            score = -HUGE_VAL; /* a sprinkling of failed trials */
        seen[i] = score;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        ck_assert_int_eq(tunep_scheduler_on_trial_add(s, i, u), TUNE_OK);
        enum tunep_decision d = tunep_scheduler_on_result(s, i, 1, 1, score);
        if (d == TUNEP_CONTINUE) {
            /* survivors go on to rung 4 */
            continued++;
            tunep_scheduler_on_result(s, i, 1, 4, score);
        }
        tunep_scheduler_on_trial_complete(s, i, 1, d == TUNEP_CONTINUE ? 4 : 1, score);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        elapsed += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    }
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 3), N);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 2), continued);
    /* iid scores: the n-th arrival beats the 75th percentile of the others with p ~ 1/4
     * (sd of the fraction ~ 0.0014 at N = 1e5) */
    double frac = (double)continued / N;
    ck_assert_msg(fabs(frac - 0.25) < 0.01, "continued fraction %g", frac);
    /* O(log n) per record: ~0.05 s here at -O2, ~0.2 s under ASan; an O(n) insert or an
     * O(n log n) cut-off per decision takes seconds to minutes at this size. */
    ck_assert_msg(elapsed < 2.0, "100k trials took %g s", elapsed);
    double cut;
    ck_assert(tunep_asha_cutoff(a, 0, 3, &cut));
    memcpy(copy, seen, N * sizeof *copy);
    ck_assert(cut == tunep_percentile(copy, N, 75.0));
    free(seen);
    free(copy);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_alloc_failures)
{
    int failures = 0;
    for (long n = 0;; n++) {
        struct tunep_asha_config opts;
        struct tunep_scheduler_config c = asha_config(&opts, 1, 100, 4, 3, 1);
        struct tunep_scheduler *s = NULL;
        tune_error err;
        tune_test_alloc_fail_after(n); /* jansson's test_chaos: the n-th allocation fails */
        tune_status st = tunep_scheduler_new(&c, NULL, 0, &s, &err);
        for (int i = 0; st == TUNE_OK && i < 200; i++) {
            st = tunep_scheduler_on_trial_add(s, i, (i % 10) / 10.0);
            if (st == TUNE_OK)
                tunep_scheduler_on_result(s, i, 1, 1, i % 7);
        }
        tune_test_alloc_reset();
        if (st == TUNE_OK && !tune_test_alloc_failed()) {
            ck_assert_int_gt(failures, 5);
            tunep_scheduler_free(s);
            break;
        }
        ck_assert_int_eq(st, TUNE_ENOMEM);
        failures++;
        if (s) {
            /* a failed add left the scheduler usable and unchanged */
            struct tunep_asha *a = tunep_scheduler_asha(s);
            size_t before = tunep_asha_recorded(a, 0, 3);
            ck_assert_int_eq(tunep_scheduler_on_trial_add(s, 1000, 0.0), TUNE_OK);
            tunep_scheduler_on_result(s, 1000, 1, 1, 0.0);
            ck_assert_uint_eq(tunep_asha_recorded(a, 0, 3), before + 1);
        }
        tunep_scheduler_free(s); /* ASan reports any leak */
    }
}
END_TEST

/* ---- promotion variant (ASHA paper, Algorithm 2) ----------------------------------- */

static struct tunep_scheduler *new_promotion(double grace, double max_t, double rf, int brackets,
                                             int stop_last)
{
    struct tunep_asha_config a;
    struct tunep_scheduler_config c = asha_config(&a, grace, max_t, rf, brackets, stop_last);
    a.promotion = 1;
    struct tunep_scheduler *s = NULL;
    tune_error err;
    ck_assert_int_eq(tunep_scheduler_new(&c, NULL, 0, &s, &err), TUNE_OK);
    return s;
}

/* Distinct known scores: a fixed permutation of the ids. */
static double promo_score(int64_t id)
{
    return (double)((id * 7919) % 10007) / 10007.0;
}

static int by_promo_score_desc(const void *a, const void *b)
{
    double x = promo_score(*(const int64_t *)a), y = promo_score(*(const int64_t *)b);
    return (x < y) - (x > y);
}

START_TEST(test_promotion_top_fraction)
{
    /* rf 4, rungs 1, 4, 16, 64 (= max_t). All 64 trials pause at rung 1 before any worker
     * is free: the promotions from rung 1 are exactly the top floor(64 / 4) = 16, best
     * first; from rung 4 the top 4 of those, from rung 16 the top 1. */
    enum { N = 64 };
    struct tunep_scheduler *s = new_promotion(1, 64, 4, 1, 1);
    struct tunep_asha *a = tunep_scheduler_asha(s);
    int64_t ids[N], level[N], n_level = N;
    for (int64_t i = 0; i < N; i++) {
        ck_assert_int_eq(tunep_scheduler_on_trial_add(s, i, 0.5), TUNE_OK);
        ck_assert_int_eq(tunep_scheduler_on_result(s, i, 1, 0.5, 0.0), TUNEP_CONTINUE);
        ck_assert_int_eq(tunep_scheduler_on_result(s, i, 1, 1, promo_score(i)), TUNEP_PAUSE);
        tunep_scheduler_on_trial_paused(s, i);
        ids[i] = i;
        level[i] = i;
    }
    static const double milestones[3] = {1, 4, 16};
    static const int rung_index[3] = {3, 2, 1};
    for (int k = 0; k < 3; k++) {
        qsort(level, (size_t)n_level, sizeof *level, by_promo_score_desc);
        int64_t want = n_level / 4;
        int64_t got[N], n_got = 0, id;
        enum tunep_next next;
        while ((next = tunep_scheduler_choose(s, 0, n_got, &id)) == TUNEP_NEXT_RESUME)
            got[n_got++] = id;
        ck_assert_int_eq(next, n_got > 0 ? TUNEP_NEXT_WAIT : TUNEP_NEXT_NEW);
        ck_assert_int_eq(n_got, want);
        for (int64_t j = 0; j < want; j++)
            ck_assert_int_eq(got[j], level[j]); /* the top, best first */
        ck_assert_uint_eq(tunep_asha_recorded(a, 0, rung_index[k]), (size_t)n_level);
        ck_assert_uint_eq(tunep_asha_promoted(a, 0, rung_index[k]), (size_t)want);
        /* the promoted trials run to the next rung and pause there (or end at max_t) */
        double next_t = k < 2 ? milestones[k + 1] : 64;
        for (int64_t j = 0; j < want; j++) {
            int64_t t = got[j];
            ck_assert_int_eq(tunep_scheduler_on_result(s, t, 1, milestones[k] + 1, promo_score(t)),
                             next_t > milestones[k] + 1 ? TUNEP_CONTINUE : TUNEP_PAUSE);
            enum tunep_decision d = tunep_scheduler_on_result(s, t, 1, next_t, promo_score(t));
            if (k < 2) {
                ck_assert_int_eq(d, TUNEP_PAUSE);
                tunep_scheduler_on_trial_paused(s, t);
            } else {
                ck_assert_int_eq(d, TUNEP_TERMINATE);
                tunep_scheduler_on_trial_complete(s, t, 1, next_t, promo_score(t));
            }
        }
        memcpy(level, got, (size_t)want * sizeof *level);
        n_level = want;
    }
    /* The winner's final result fills the max_t rung. */
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 0), 1);
    (void)ids;
    int64_t id;
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 0, &id), TUNEP_NEXT_NEW);
    ck_assert_int_eq(tunep_scheduler_choose(s, 1, 0, &id), TUNEP_NEXT_NEW);
    tunep_scheduler_free(s);
}
END_TEST

/* ---- an asynchronous run against a brute-force rung table ---- */

enum { PN = 400, PW = 8, PRUNGS = 4 };

struct promo_sim {
    struct tunep_scheduler *s;
    double rf;
    double milestone[PRUNGS]; /* ascending: 1, 3, 9, 27 */
    int64_t rung_ids[PRUNGS][PN];
    int n_rung[PRUNGS];
    int promoted[PRUNGS][PN];
    int paused_at[PN]; /* rung (ascending index) it is paused at, -1 if not paused */
};

/* Is id among the top floor(n / rf) recorded at rung k (best score, then lower id)? */
static int in_top(const struct promo_sim *m, int k, int64_t id)
{
    int n = m->n_rung[k], better = 0;
    int64_t m_top = (int64_t)floor(n / m->rf);
    for (int j = 0; j < n; j++) {
        int64_t o = m->rung_ids[k][j];
        if (promo_score(o) > promo_score(id) || (promo_score(o) == promo_score(id) && o < id))
            better++;
    }
    return better < m_top;
}

/* No paused trial may be promotable when choose() answers NEW or WAIT. */
static void check_nothing_promotable(const struct promo_sim *m)
{
    for (int64_t i = 0; i < PN; i++) {
        int k = m->paused_at[i];
        if (k >= 0)
            ck_assert_msg(!in_top(m, k, i) || m->promoted[k][i],
                          "trial %lld is promotable at rung %d", (long long)i, k);
    }
}

START_TEST(test_promotion_async)
{
    /* rf 3, rungs 1, 3, 9, 27 (max_t 30 is not a rung: the top rung promotes to it). */
    static struct promo_sim m;
    memset(&m, 0, sizeof m);
    m.rf = 3;
    for (int k = 0; k < PRUNGS; k++)
        m.milestone[k] = pow(3, k);
    m.s = new_promotion(1, 30, 3, 1, 1);
    for (int64_t i = 0; i < PN; i++)
        m.paused_at[i] = -1;
    int64_t running[PW], started = 0, promotions = 0, terminated = 0;
    int n_running = 0;
    double t[PN] = {0};
    uint64_t x = 99;
    for (long guard = 0; guard < 10000000; guard++) {
        /* fill the free workers */
        while (n_running < PW) {
            int64_t id;
            int new_left = started < PN;
            enum tunep_next next = tunep_scheduler_choose(m.s, new_left, n_running, &id);
            if (next == TUNEP_NEXT_RESUME) {
                int k = m.paused_at[id];
                ck_assert_int_ge(k, 0);
                ck_assert_msg(in_top(&m, k, id), "trial %lld promoted from outside the top",
                              (long long)id);
                ck_assert(!m.promoted[k][id]);
                m.promoted[k][id] = 1;
                m.paused_at[id] = -1;
                running[n_running++] = id;
                promotions++;
                continue;
            }
            check_nothing_promotable(&m);
            if (next == TUNEP_NEXT_NEW && new_left) {
                ck_assert_int_eq(tunep_scheduler_on_trial_add(m.s, started, 0.5), TUNE_OK);
                running[n_running++] = started++;
                continue;
            }
            ck_assert_int_eq(next, n_running > 0 ? TUNEP_NEXT_WAIT : TUNEP_NEXT_NEW);
            break;
        }
        if (n_running == 0)
            break;
        /* a random running trial reports its next iteration */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int j = (int)(x % (uint64_t)n_running);
        int64_t id = running[j];
        t[id] += 1;
        enum tunep_decision d = tunep_scheduler_on_result(m.s, id, 1, t[id], promo_score(id));
        if (d == TUNEP_CONTINUE)
            continue;
        running[j] = running[--n_running];
        if (d == TUNEP_PAUSE) {
            int k = 0;
            while (k < PRUNGS && m.milestone[k] != t[id])
                k++;
            ck_assert_msg(k < PRUNGS, "paused at t=%g, not a rung", t[id]);
            m.rung_ids[k][m.n_rung[k]++] = id;
            m.paused_at[id] = k;
            tunep_scheduler_on_trial_paused(m.s, id);
        } else {
            ck_assert_int_eq(d, TUNEP_TERMINATE);
            ck_assert_double_eq(t[id], 30);
            tunep_scheduler_on_trial_complete(m.s, id, 1, t[id], promo_score(id));
            terminated++;
        }
    }
    ck_assert_int_eq(started, PN);
    /* Every trial in the final top floor(n_k / rf) of each rung was promoted from it. */
    struct tunep_asha *a = tunep_scheduler_asha(m.s);
    int64_t total = 0, from_top = 0;
    for (int k = 0; k < PRUNGS; k++) {
        int64_t want = (int64_t)floor(m.n_rung[k] / 3.0), got = 0;
        for (int j = 0; j < m.n_rung[k]; j++) {
            int64_t id = m.rung_ids[k][j];
            if (in_top(&m, k, id))
                ck_assert_msg(m.promoted[k][id], "rung %d: top trial %lld left paused", k,
                              (long long)id);
            got += m.promoted[k][id];
        }
        /* early promotions can exceed the final top (ASHA's known property) */
        ck_assert_int_ge(got, want);
        ck_assert_uint_eq(tunep_asha_promoted(a, 0, PRUNGS - 1 - k), (size_t)got);
        ck_assert_uint_eq(tunep_asha_recorded(a, 0, PRUNGS - 1 - k), (size_t)m.n_rung[k]);
        total += got;
        from_top = got;
    }
    ck_assert_int_eq(total, promotions);
    ck_assert_int_eq(m.n_rung[0], PN);
    /* the trials promoted from the top rung (27) ran to max_t (30) */
    ck_assert_int_gt(from_top, 0);
    ck_assert_int_eq(terminated, from_top);
    tunep_scheduler_free(m.s);
}
END_TEST

START_TEST(test_promotion_edges)
{
    /* Without stop_last_trials, a rung at or past max_t records but does not pause. */
    struct tunep_scheduler *s = new_promotion(1, 8, 2, 1, 0);
    struct tunep_asha *a = tunep_scheduler_asha(s);
    ck_assert_int_eq(tunep_scheduler_on_trial_add(s, 0, 0.5), TUNE_OK);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 0, 1, 8.5, 0.3), TUNEP_CONTINUE);
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 0), 1); /* rung 8 */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 0, 1, 100, 0.3), TUNEP_CONTINUE);
    /* A jump past several rungs records at the highest only, and pauses there. */
    ck_assert_int_eq(tunep_scheduler_on_trial_add(s, 1, 0.5), TUNE_OK);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 1, 1, 5, 0.3), TUNEP_PAUSE);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 1, 1, 5, 0.3), TUNEP_PAUSE); /* still */
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 1), 1);                        /* rung 4 */
    ck_assert_uint_eq(tunep_asha_recorded(a, 0, 3), 0);                        /* rung 1 */
    tunep_scheduler_on_trial_paused(s, 1);
    /* One value at rung 4: floor(1 / 2) = 0 promotable; nothing runs: NEW, then the
     * controller ends it. */
    int64_t id;
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 0, &id), TUNEP_NEXT_NEW);
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 1, &id), TUNEP_NEXT_WAIT);
    ck_assert_int_eq(tunep_scheduler_choose(s, 1, 1, &id), TUNEP_NEXT_NEW);
    /* A second trial at rung 4 with a worse score: now the top 1 of 2 is trial 1. */
    ck_assert_int_eq(tunep_scheduler_on_trial_add(s, 2, 0.5), TUNE_OK);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 2, 1, 4, 0.1), TUNEP_PAUSE);
    tunep_scheduler_on_trial_paused(s, 2);
    double cut;
    ck_assert(tunep_asha_cutoff(a, 0, 1, &cut));
    ck_assert_double_eq(cut, 0.3);
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 0, &id), TUNEP_NEXT_RESUME);
    ck_assert_int_eq(id, 1);
    /* The controller ends trial 2 at the end of the study: no longer promotable. */
    tunep_scheduler_on_trial_complete(s, 2, 1, 4, 0.1);
    /* A retried trial keeps its rungs: it does not pause at rung 4 again. */
    ck_assert_int_eq(tunep_scheduler_on_trial_add(s, 1, 0.5), TUNE_OK);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 1, 1, 4, 0.3), TUNEP_CONTINUE);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 1, 1, 8, 0.3), TUNEP_CONTINUE); /* >= max_t */
    struct tunep_buf buf;
    tunep_buf_init(&buf);
    tunep_scheduler_describe(s, 1.0, &buf);
    ck_assert_str_eq(buf.data, "ASHA (promotion): bracket 0: rung 1: 0 recorded, 0 promoted, "
                               "0 paused; rung 2: 0 recorded, 0 promoted, 0 paused; rung 4: 2 "
                               "recorded, 1 promoted, 0 paused, top 1 from 0.3; rung 8: 2 "
                               "recorded, 0 promoted, 0 paused, top 1 from 0.3\n");
    tunep_buf_done(&buf);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_promotion_alloc_failures)
{
    int failures = 0;
    for (long n = 0;; n++) {
        struct tunep_asha_config a;
        struct tunep_scheduler_config c = asha_config(&a, 1, 100, 4, 3, 1);
        a.promotion = 1;
        struct tunep_scheduler *s = NULL;
        tune_error err;
        tune_test_alloc_fail_after(n);
        tune_status st = tunep_scheduler_new(&c, NULL, 0, &s, &err);
        for (int i = 0; st == TUNE_OK && i < 200; i++) {
            st = tunep_scheduler_on_trial_add(s, i, (i % 10) / 10.0);
            if (st == TUNE_OK && tunep_scheduler_on_result(s, i, 1, 16, i % 7) == TUNEP_PAUSE)
                tunep_scheduler_on_trial_paused(s, i);
        }
        tune_test_alloc_reset();
        if (st == TUNE_OK && !tune_test_alloc_failed()) {
            ck_assert_int_gt(failures, 5);
            tunep_scheduler_free(s);
            break;
        }
        ck_assert_int_eq(st, TUNE_ENOMEM);
        failures++;
        if (s) {
            ck_assert_int_eq(tunep_scheduler_on_trial_add(s, 1000, 0.0), TUNE_OK);
            ck_assert_int_eq(tunep_scheduler_on_result(s, 1000, 1, 1, 0.0), TUNEP_PAUSE);
            int64_t id;
            (void)tunep_scheduler_choose(s, 0, 0, &id);
        }
        tunep_scheduler_free(s); /* ASan reports any leak */
    }
}
END_TEST

/* ---- config ------------------------------------------------------------------ */

static tune_status parse(const char *text, struct tunep_scheduler_config *out, tune_error *err)
{
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr); /* new ref */
    ck_assert_msg(root != NULL, "bad test JSON: %s", jerr.text);
    struct tunep_cfgctx ctx = {text, strlen(text), "<test>", err};
    struct tunep_cfgpath path;
    memset(&path, 0, sizeof path);
    tunep_cfgpath_push_key(&path, "scheduler");
    memset(err, 0, sizeof *err);
    tune_status st =
        tunep_config_parse_scheduler(&ctx, &path, json_object_get(root, "scheduler"), out);
    ck_assert_int_eq(path.depth, 1); /* balanced push/pop */
    json_decref(root);
    return st;
}

START_TEST(test_config_ok)
{
    struct tunep_scheduler_config c;
    tune_error err;
    ck_assert_int_eq(parse("{\"scheduler\": {\"type\": \"asha\", \"time_attr\": \"epoch\", "
                           "\"max_t\": 81, \"grace_period\": 1.5, \"reduction_factor\": 3.0, "
                           "\"brackets\": 2.0, \"stop_last_trials\": false}}",
                           &c, &err),
                     TUNE_OK);
    ck_assert_ptr_eq(c.type, asha_type());
    const struct tunep_asha_config *a = c.cfg;
    ck_assert_str_eq(a->time_attr, "epoch");
    ck_assert_double_eq(a->max_t, 81);
    ck_assert_double_eq(a->grace_period, 1.5);
    ck_assert_double_eq(a->reduction_factor, 3);
    ck_assert_int_eq(a->brackets, 2);
    ck_assert_int_eq(a->stop_last_trials, 0);
    tunep_scheduler_config_done(&c);

    ck_assert_int_eq(parse("{\"scheduler\": {\"type\": \"async_hyperband\"}}", &c, &err), TUNE_OK);
    ck_assert_ptr_eq(c.type, asha_type());
    a = c.cfg;
    ck_assert_double_eq(a->max_t, 100);
    ck_assert_double_eq(a->grace_period, 1);
    ck_assert_double_eq(a->reduction_factor, 4);
    ck_assert_int_eq(a->brackets, 1);
    ck_assert_int_eq(a->stop_last_trials, 1);
    ck_assert_str_eq(a->time_attr, "training_iteration");
    tunep_scheduler_config_done(&c);

    c.type = asha_type();
    ck_assert_int_eq(parse("{\"scheduler\": {}}", &c, &err), TUNE_OK);
    ck_assert_ptr_eq(c.type, tunep_scheduler_find("fifo"));
    c.type = asha_type();
    ck_assert_int_eq(parse("{\"scheduler\": {\"type\": \"fifo\"}}", &c, &err), TUNE_OK);
    ck_assert_ptr_eq(c.type, tunep_scheduler_find("fifo"));
}
END_TEST

struct cfg_case {
    const char *json;
    int line, column;
    const char *text;
};

START_TEST(test_config_errors)
{
    static const struct cfg_case cases[] = {
        {"{\n  \"metric\": \"acc\",\n  \"scheduler\": {\n    \"type\": \"asha\",\n"
         "    \"grace_perod\": 2\n  }\n}",
         5, 5, "scheduler.grace_perod: unknown key (did you mean 'grace_period'?)"},
        {"{\"scheduler\": {\"type\": \"asha\",\n  \"max_t\": \"10\"}}", 2, 12,
         "scheduler.max_t: expected a number"},
        {"{\"scheduler\": {\"type\": \"asha\", \"reduction_factor\": 1}}", 1, 52,
         "scheduler.reduction_factor: must be > 1"},
        {"{\"scheduler\": {\"type\": \"asha\",\n\"brackets\": 1.5}}", 2, 13,
         "scheduler.brackets: expected an integer"},
        {"{\"scheduler\": {\"type\": \"asha\",\n\"brackets\": 0}}", 2, 13,
         "scheduler.brackets: must be >= 1"},
        {"{\"scheduler\": {\"type\": \"asha\",\n\"brackets\": 65}}", 2, 13,
         "scheduler.brackets: must be at most 64"},
        {"{\"scheduler\": {\"type\": \"asha\",\n\"max_t\": 0}}", 2, 10,
         "scheduler.max_t: must be > 0"},
        {"{\"scheduler\": {\"type\": \"asha\",\n\"grace_period\": -1}}", 2, 17,
         "scheduler.grace_period: must be > 0"},
        {"{\"scheduler\": {\"type\": \"asha\",\n\"grace_period\": 200}}", 2, 17,
         "scheduler.grace_period: must be <= max_t (100)"},
        {"{\"scheduler\": {\"type\": \"asha\",\n\"max_t\": 0.5}}", 2, 10,
         "scheduler.max_t: must be >= grace_period (1)"},
        {"{\"scheduler\": {\"type\": \"asha\",\n\"stop_last_trials\": 1}}", 2, 21,
         "scheduler.stop_last_trials: expected true or false"},
        {"{\"scheduler\": {\"type\": \"asha\",\n\"time_attr\": 3}}", 2, 14,
         "scheduler.time_attr: expected a string"},
        {"{\"scheduler\": {\"type\": \"asha\",\n\"time_attr\": \"\"}}", 2, 14,
         "scheduler.time_attr: must not be empty"},
        {"{\"scheduler\": {\"type\": \"hyperbnd\"}}", 1, 24,
         "scheduler.type: unknown scheduler 'hyperbnd' (expected one of: fifo, asha, "
         "median_stopping, hyperband, pbt)"},
        {"{\"scheduler\": {\"type\": 4}}", 1, 24, "scheduler.type: expected a string"},
        {"{\"scheduler\": {\"max_t\": 10}}", 1, 16,
         "scheduler.max_t: not an option of the fifo scheduler (set \"type\": \"asha\" or "
         "\"hyperband\")"},
        {"{\"scheduler\": {\"type\": \"fifo\", \"x\": 1}}", 1, 32,
         "scheduler.x: unknown key (expected one of: type)"},
        {"{\"scheduler\": \"asha\"}", 1, 15, "scheduler: expected an object"},
        {"{\"scheduler\": {\"type\": \"asha\", \"max_t\": 1e6,\n \"reduction_factor\": 1.01}}", 2,
         22,
         "scheduler.reduction_factor: more than 64 rungs: log(max_t / grace_period) / "
         "log(reduction_factor) must be < 64"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tunep_scheduler_config c;
        memset(&c, 0x5a, sizeof c);
        tune_error err;
        ck_assert_msg(parse(cases[i].json, &c, &err) == TUNE_ECONFIG, "case %zu passed", i);
        ck_assert_int_eq(err.code, TUNE_ECONFIG);
        ck_assert_msg(strcmp(err.text, cases[i].text) == 0, "case %zu: '%s'", i, err.text);
        ck_assert_msg(err.line == cases[i].line && err.column == cases[i].column,
                      "case %zu: at %d:%d, want %d:%d", i, err.line, err.column, cases[i].line,
                      cases[i].column);
        ck_assert_str_eq(err.source, "<test>");
        /* out is untouched on failure */
        unsigned char *p = (unsigned char *)&c;
        for (size_t j = 0; j < sizeof c; j++)
            ck_assert_int_eq(p[j], 0x5a);
    }
}
END_TEST

static Suite *asha_suite(void)
{
    Suite *s = suite_create("asha");
    TCase *tc = tcase_create("percentile");
    tcase_add_test(tc, test_percentile_numpy);
    tcase_add_test(tc, test_percentile_infinity);
    suite_add_tcase(s, tc);
    tc = tcase_create("asha");
    tcase_add_test(tc, test_rungs);
    tcase_add_test(tc, test_new_rejects_bad_options);
    tcase_add_test(tc, test_decision_table_rf4);
    tcase_add_test(tc, test_decision_table_rf3);
    tcase_add_test(tc, test_mode_min_negated);
    tcase_add_test(tc, test_nan_is_worst);
    tcase_add_test(tc, test_max_t_terminates);
    tcase_add_test(tc, test_stop_last_trials_false);
    tcase_add_test(tc, test_bracket_probabilities);
    tcase_add_test(tc, test_retry_keeps_records);
    tcase_add_test(tc, test_fifo);
    tcase_add_test(tc, test_stress_100k);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);
    tc = tcase_create("promotion");
    tcase_add_test(tc, test_promotion_top_fraction);
    tcase_add_test(tc, test_promotion_async);
    tcase_add_test(tc, test_promotion_edges);
    tcase_add_test(tc, test_promotion_alloc_failures);
    suite_add_tcase(s, tc);
    tc = tcase_create("config");
    tcase_add_test(tc, test_config_ok);
    tcase_add_test(tc, test_config_errors);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(asha_suite)
