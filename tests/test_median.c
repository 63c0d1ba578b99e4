/*
 * test_median.c - the median stopping rule: hand-computed decisions, time
 * slicing with too few samples, pausing without hard_stop, and a randomised
 * comparison with a direct transcription of Ray Tune's MedianStoppingRule
 * (ray/tune/schedulers/median_stopping_rule.py: _trials_beyond_time,
 * _running_mean, np.median, compare_op) on thousands of reports.
 */
#include "check_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "schedulers/median.h"
#include "schedulers/scheduler.h"

static const struct tunep_scheduler_type *median_type(void)
{
    const struct tunep_scheduler_type *t = tunep_scheduler_find("median_stopping");
    ck_assert_ptr_nonnull(t);
    return t;
}

/* A median config whose options live in *m (caller storage, at the defaults). */
static struct tunep_scheduler_config median_config(struct tunep_median_config *m)
{
    ck_assert_int_eq(tunep_options_default(median_type()->options, m), 0);
    return (struct tunep_scheduler_config){median_type(), m};
}

static struct tunep_scheduler *new_median(double grace, int min_samples, double min_slice,
                                          int hard_stop)
{
    struct tunep_median_config m;
    struct tunep_scheduler_config c = median_config(&m);
    m.grace_period = grace;
    m.min_samples_required = min_samples;
    m.min_time_slice = min_slice;
    m.hard_stop = hard_stop;
    struct tunep_scheduler *s = NULL;
    tune_error err;
    ck_assert_int_eq(tunep_scheduler_new(&c, NULL, 0, &s, &err), TUNE_OK);
    return s;
}

static enum tunep_decision report(struct tunep_scheduler *s, int64_t id, double t, double v)
{
    return tunep_scheduler_on_result(s, id, 1, t, v);
}

START_TEST(test_defaults)
{
    struct tunep_median_config m;
    struct tunep_scheduler_config c = median_config(&m);
    ck_assert_str_eq(m.time_attr, "time_total_s");
    ck_assert_double_eq(m.grace_period, 60);
    ck_assert_int_eq(m.min_samples_required, 3);
    ck_assert_double_eq(m.min_time_slice, 0);
    ck_assert_int_eq(m.hard_stop, 1);
    struct tunep_scheduler *s = NULL;
    struct tunep_scheduler_config fifo;
    tunep_scheduler_config_default(&fifo);
    ck_assert_int_eq(tunep_scheduler_new(&fifo, NULL, 0, &s, NULL), TUNE_OK);
    ck_assert_str_eq(tunep_scheduler_time_attr(s), "training_iteration"); /* FIFO */
    tunep_scheduler_free(s);
    ck_assert_int_eq(tunep_scheduler_new(&c, NULL, 0, &s, NULL), TUNE_OK);
    ck_assert_str_eq(tunep_scheduler_time_attr(s), "time_total_s");
    tunep_scheduler_free(s);
    m.min_samples_required = 0;
    ck_assert_int_eq(tunep_scheduler_new(&c, NULL, 0, &s, NULL), TUNE_EINVAL);
}
END_TEST

START_TEST(test_hand_computed)
{
    /* grace 1, two samples needed, hard stop. */
    struct tunep_scheduler *s = new_median(1, 2, 0, 1);
    struct tunep_median *m = tunep_scheduler_median(s);
    for (int64_t i = 0; i < 6; i++)
        ck_assert_int_eq(tunep_scheduler_on_trial_add(s, i, 0.0), TUNE_OK);
    /* A: 0.5, 0.7, 0.9 at t = 1, 2, 3; B: 0.3, 0.4, 0.5. Too few samples: continue. */
    ck_assert_int_eq(report(s, 0, 1, 0.5), TUNEP_CONTINUE);
    ck_assert_int_eq(report(s, 0, 2, 0.7), TUNEP_CONTINUE);
    ck_assert_int_eq(report(s, 0, 3, 0.9), TUNEP_CONTINUE);
    ck_assert_int_eq(report(s, 1, 1, 0.3), TUNEP_CONTINUE);
    ck_assert_int_eq(report(s, 1, 2, 0.4), TUNEP_CONTINUE);
    ck_assert_int_eq(report(s, 1, 3, 0.5), TUNEP_CONTINUE);
    double mean;
    ck_assert(tunep_median_running_mean(m, 0, 2, &mean));
    ck_assert_double_eq_tol(mean, 0.6, 1e-15);
    ck_assert(tunep_median_running_mean(m, 1, 2.5, &mean));
    ck_assert_double_eq_tol(mean, 0.35, 1e-15);
    ck_assert(!tunep_median_running_mean(m, 1, 0.5, &mean)); /* before grace: none */
    /* C at t=1 scores 0.1: median of A's 0.5 and B's 0.3 is 0.4 > 0.1: stop. */
    ck_assert_int_eq(report(s, 2, 1, 0.1), TUNEP_STOP);
    /* D at t=1 scores 0.45: C (stopped, but its results count) joins: median(0.5, 0.3, 0.1) =
     * 0.3 <= 0.45: continue. */
    ck_assert_int_eq(report(s, 3, 1, 0.45), TUNEP_CONTINUE);
    /* D at t=2 scores 0.2: its best is 0.45; trials past t=2 are A (0.6) and B (0.35): the
     * median (0.35 + 0.6) / 2 = 0.475 > 0.45: stop. */
    ck_assert_int_eq(report(s, 3, 2, 0.2), TUNEP_STOP);
    /* E: a report before grace counts for its best (0.9), not for the running means. */
    ck_assert_int_eq(report(s, 4, 0.5, 0.9), TUNEP_CONTINUE);
    /* past t=2: A (0.6), B (0.35), D (0.325): median 0.35 <= 0.9 */
    ck_assert_int_eq(report(s, 4, 2, 0.0), TUNEP_CONTINUE);
    ck_assert(tunep_median_running_mean(m, 4, 2, &mean));
    ck_assert_double_eq(mean, 0.0);
    /* F equal to the median goes on (Ray: max(median, best) != best is false). At t=3 the
     * trials past 3 are A (0.7) and B (0.4): median 0.55. */
    ck_assert_int_eq(report(s, 5, 3, 0.55), TUNEP_CONTINUE);
    ck_assert_int_eq(tunep_median_num_stopped(m), 2);
    struct tunep_buf buf;
    tunep_buf_init(&buf);
    tunep_scheduler_describe(s, 1.0, &buf);
    ck_assert_str_eq(buf.data, "Median stopping: 6 trials with results, 2 stopped, 0 paused\n");
    tunep_buf_done(&buf);
    /* No time: no decision; unknown trial: none. */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 5, 0, 3, -1e9), TUNEP_CONTINUE);
    ck_assert_int_eq(report(s, 99, 3, -1e9), TUNEP_CONTINUE);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_nan_is_worst)
{
    struct tunep_scheduler *s = new_median(0, 1, 0, 1);
    for (int64_t i = 0; i < 3; i++)
        tunep_scheduler_on_trial_add(s, i, 0.0);
    ck_assert_int_eq(report(s, 0, 1, 0.5), TUNEP_CONTINUE);
    /* -inf (a missing or NaN metric) is below any finite median */
    ck_assert_int_eq(report(s, 1, 1, -HUGE_VAL), TUNEP_STOP);
    /* NaN is -inf too; but now the median of {0.5, -inf} is -inf: nobody is below it */
    ck_assert_int_eq(report(s, 2, 1, nan("")), TUNEP_CONTINUE);
    tunep_scheduler_free(s);
    s = new_median(0, 2, 0, 1);
    for (int64_t i = 0; i < 4; i++)
        tunep_scheduler_on_trial_add(s, i, 0.0);
    report(s, 0, 1, 0.5);
    report(s, 1, 1, 0.7);
    ck_assert_int_eq(report(s, 2, 1, nan("")), TUNEP_STOP); /* median 0.6 > -inf */
    tunep_scheduler_free(s);
    /* ... and a median of -inf stops nobody: (-inf + 0.5) / 2 = -inf */
    s = new_median(0, 2, 0, 1);
    for (int64_t i = 0; i < 3; i++)
        tunep_scheduler_on_trial_add(s, i, 0.0);
    ck_assert_int_eq(report(s, 0, 1, -HUGE_VAL), TUNEP_CONTINUE);
    ck_assert_int_eq(report(s, 1, 1, 0.5), TUNEP_CONTINUE);
    ck_assert_int_eq(report(s, 2, 1, -1e300), TUNEP_CONTINUE);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_time_slicing)
{
    /* Three samples needed; yield at most every 2 time units. */
    struct tunep_scheduler *s = new_median(1, 3, 2, 1);
    struct tunep_median *m = tunep_scheduler_median(s);
    tunep_scheduler_on_trial_add(s, 0, 0.0);
    tunep_scheduler_on_trial_add(s, 1, 0.0);
    ck_assert_int_eq(report(s, 1, 5, 0.5), TUNEP_CONTINUE);
    /* Nobody waits: too few samples, go on. */
    tunep_scheduler_set_waiting(s, 0);
    ck_assert_int_eq(report(s, 0, 1, 0.5), TUNEP_CONTINUE);
    /* A trial waits to start: the first time past grace it yields (last pause -inf)... */
    tunep_scheduler_set_waiting(s, 1);
    ck_assert_int_eq(report(s, 0, 2, 0.5), TUNEP_PAUSE);
    tunep_scheduler_on_trial_paused(s, 0);
    ck_assert_int_eq(tunep_median_num_paused(m), 1);
    int64_t id = -1;
    ck_assert_int_eq(tunep_scheduler_choose(s, 1, 1, &id), TUNEP_NEXT_NEW); /* new first */
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 1, &id), TUNEP_NEXT_RESUME);
    ck_assert_int_eq(id, 0);
    ck_assert_int_eq(tunep_median_num_paused(m), 0);
    /* ... then only once more than min_time_slice passed since: 3 - 2 = 1, 4 - 2 = 2 (not
     * > 2), 4.5 - 2 = 2.5. */
    ck_assert_int_eq(report(s, 0, 3, 0.5), TUNEP_CONTINUE);
    ck_assert_int_eq(report(s, 0, 4, 0.5), TUNEP_CONTINUE);
    ck_assert_int_eq(report(s, 0, 4.5, 0.5), TUNEP_PAUSE);
    tunep_scheduler_on_trial_paused(s, 0);
    /* With no new trial waiting, a paused one counts as waiting (Ray: PENDING or PAUSED). */
    tunep_scheduler_set_waiting(s, 0);
    tunep_scheduler_on_trial_add(s, 2, 0.0);
    ck_assert_int_eq(report(s, 2, 2, 0.9), TUNEP_PAUSE);
    tunep_scheduler_on_trial_paused(s, 2);
    /* FIFO: trial 0 paused before trial 2. */
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 0, &id), TUNEP_NEXT_RESUME);
    ck_assert_int_eq(id, 0);
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 1, &id), TUNEP_NEXT_RESUME);
    ck_assert_int_eq(id, 2);
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 2, &id), TUNEP_NEXT_NEW);
    /* A paused trial the controller ends is not resumed. */
    ck_assert_int_eq(report(s, 2, 3, 0.9), TUNEP_CONTINUE); /* nobody waits now */
    tunep_scheduler_set_waiting(s, 3);
    ck_assert_int_eq(report(s, 2, 6, 0.9), TUNEP_PAUSE);
    tunep_scheduler_on_trial_paused(s, 2);
    tunep_scheduler_on_trial_complete(s, 2, 1, 6, 0.9);
    ck_assert_int_eq(tunep_median_num_paused(m), 0);
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 0, &id), TUNEP_NEXT_NEW);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_soft_stop)
{
    /* hard_stop false: a trial below the median pauses, and is never judged again. */
    struct tunep_scheduler *s = new_median(0, 1, 0, 0);
    struct tunep_median *m = tunep_scheduler_median(s);
    for (int64_t i = 0; i < 3; i++)
        tunep_scheduler_on_trial_add(s, i, 0.0);
    ck_assert_int_eq(report(s, 0, 1, 0.8), TUNEP_CONTINUE);
    ck_assert_int_eq(report(s, 1, 1, 0.1), TUNEP_PAUSE);
    tunep_scheduler_on_trial_paused(s, 1);
    ck_assert_int_eq(report(s, 2, 1, 0.2), TUNEP_PAUSE);
    tunep_scheduler_on_trial_paused(s, 2);
    ck_assert_int_eq(tunep_median_num_stopped(m), 2);
    int64_t id;
    ck_assert_int_eq(tunep_scheduler_choose(s, 1, 1, &id), TUNEP_NEXT_NEW);
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 1, &id), TUNEP_NEXT_RESUME);
    ck_assert_int_eq(id, 1);
    /* FIFO from now on: far below the median, it goes on */
    ck_assert_int_eq(report(s, 1, 2, -5), TUNEP_CONTINUE);
    struct tunep_buf buf;
    tunep_buf_init(&buf);
    tunep_scheduler_describe(s, 1.0, &buf);
    ck_assert_str_eq(buf.data,
                     "Median stopping: 3 trials with results, 2 below the median, 1 paused\n");
    tunep_buf_done(&buf);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_times_going_back)
{
    /* A retried trial reports from t = 1 again: the running mean scans its reports. */
    struct tunep_scheduler *s = new_median(1, 1, 0, 1);
    struct tunep_median *m = tunep_scheduler_median(s);
    tunep_scheduler_on_trial_add(s, 0, 0.0);
    report(s, 0, 1, 0.2);
    report(s, 0, 2, 0.4);
    report(s, 0, 3, 0.6);
    tunep_scheduler_on_trial_add(s, 0, 0.0); /* retry keeps the reports */
    report(s, 0, 1, 0.3);
    report(s, 0, 2, 0.5);
    double mean;
    ck_assert(tunep_median_running_mean(m, 0, 2, &mean)); /* 0.2, 0.4, 0.3, 0.5 */
    ck_assert_double_eq_tol(mean, 0.35, 1e-15);
    ck_assert(tunep_median_running_mean(m, 0, 3, &mean)); /* all five */
    ck_assert_double_eq_tol(mean, 0.4, 1e-15);
    /* The completion's report is the last one seen: not counted twice (Ray does). */
    tunep_scheduler_on_trial_complete(s, 0, 1, 2, 0.5);
    ck_assert(tunep_median_running_mean(m, 0, 3, &mean));
    ck_assert_double_eq_tol(mean, 0.4, 1e-15);
    /* A completion with a report the scheduler had not seen is recorded. */
    tunep_scheduler_on_trial_complete(s, 0, 1, 3, 1.0);
    ck_assert(tunep_median_running_mean(m, 0, 3, &mean));
    ck_assert_double_eq_tol(mean, 0.5, 1e-15);
    tunep_scheduler_free(s);
}
END_TEST

/* ---- against a transcription of Ray's rule ---------------------------------------------- */

enum { R_TRIALS = 40, R_REPORTS = 60 };

struct ray_ref {
    double grace;
    int min_samples;
    double t[R_TRIALS][R_REPORTS], v[R_TRIALS][R_REPORTS];
    int n[R_TRIALS];
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Ray's on_trial_result with hard_stop and nobody waiting; the mean is summed in report
 * order (numpy's pairwise sum may differ in the last bit on long runs). */
static enum tunep_decision ray_decide(struct ray_ref *r, int trial, double time, double score)
{
    r->t[trial][r->n[trial]] = time;
    r->v[trial][r->n[trial]++] = score;
    if (time < r->grace)
        return TUNEP_CONTINUE;
    double means[R_TRIALS];
    int count = 0;
    for (int j = 0; j < R_TRIALS; j++) {
        if (j == trial || r->n[j] == 0 || !(r->t[j][r->n[j] - 1] >= time))
            continue;
        double sum = 0;
        int k = 0;
        for (int i = 0; i < r->n[j]; i++)
            if (r->grace <= r->t[j][i] && r->t[j][i] <= time) {
                sum += r->v[j][i];
                k++;
            }
        if (k > 0) /* Ray would take np.mean([]) = NaN here; see median.c */
            means[count++] = sum / k;
    }
    if (count < r->min_samples)
        return TUNEP_CONTINUE;
    qsort(means, (size_t)count, sizeof *means, cmp_double);
    double median = count % 2 ? means[count / 2] : (means[count / 2 - 1] + means[count / 2]) / 2.0;
    double best = -HUGE_VAL;
    for (int i = 0; i < r->n[trial]; i++)
        if (r->v[trial][i] > best)
            best = r->v[trial][i];
    return median > best ? TUNEP_STOP : TUNEP_CONTINUE;
}

static double uniform01(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return (double)((*x * 2685821657736338717ULL) >> 11) * 0x1.0p-53;
}

START_TEST(test_matches_ray)
{
    static struct ray_ref ref;
    int stops = 0, decisions = 0;
    for (int round = 0; round < 4; round++) {
        memset(&ref, 0, sizeof ref);
        ref.grace = round == 0 ? 0 : 5 * round;
        ref.min_samples = 1 + round;
        struct tunep_scheduler *s = new_median(ref.grace, ref.min_samples, 0, 1);
        uint64_t x = 0x1234567ULL + (uint64_t)round;
        double now[R_TRIALS] = {0}, quality[R_TRIALS];
        int alive[R_TRIALS];
        for (int i = 0; i < R_TRIALS; i++) {
            tunep_scheduler_on_trial_add(s, i, 0.0);
            quality[i] = uniform01(&x);
            alive[i] = 1;
        }
        /* Interleaved reports: random trial, time advancing by a random step (time_total_s
         * like; round 3 uses integer steps so that times tie across trials). */
        for (int step = 0; step < R_TRIALS * R_REPORTS; step++) {
            int i = (int)(uniform01(&x) * R_TRIALS);
            if (!alive[i] || ref.n[i] >= R_REPORTS)
                continue;
            now[i] += round == 3 ? 1.0 : 0.1 + 2 * uniform01(&x);
            double v = quality[i] * (1 - exp(-now[i] / 10)) + 0.05 * uniform01(&x);
            if (uniform01(&x) < 0.01)
                v = -HUGE_VAL;
            enum tunep_decision want = ray_decide(&ref, i, now[i], v);
            enum tunep_decision got = report(s, i, now[i], v);
            ck_assert_msg(got == want, "round %d step %d trial %d: got %d want %d", round, step, i,
                          got, want);
            decisions++;
            if (got == TUNEP_STOP) {
                alive[i] = 0;
                stops++;
                tunep_scheduler_on_trial_complete(s, i, 1, now[i], v);
            }
        }
        tunep_scheduler_free(s);
    }
    /* both outcomes were exercised */
    ck_assert_int_gt(stops, 20);
    ck_assert_int_gt(decisions - stops, 1000);
}
END_TEST

START_TEST(test_speed)
{
    /* 2000 trials x 20 reports: O(n) per decision (as Ray), so 4e4 x 2e3 trial visits. */
    enum { N = 2000, R = 20 };
    struct tunep_scheduler *s = new_median(1, 3, 0, 1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0); /* CPU time: the machine may be busy */
    int stopped = 0;
    for (int64_t i = 0; i < N; i++)
        ck_assert_int_eq(tunep_scheduler_on_trial_add(s, i, 0.0), TUNE_OK);
    for (int r = 1; r <= R; r++)
        for (int64_t i = 0; i < N; i++)
            stopped += report(s, i, r, (double)((i * 7919) % N) / N + 0.001 * r) == TUNEP_STOP;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double elapsed = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("median: 2000 trials x 20 reports: %.3f s CPU\n", elapsed);
    ck_assert_int_gt(stopped, N / 4);
    /* ~0.3 s at -O2 on this machine */
    ck_assert_msg(elapsed < 5.0, "took %g s", elapsed);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_alloc_failures)
{
    int failures = 0;
    for (long n = 0;; n++) {
        struct tunep_scheduler *s = NULL;
        struct tunep_median_config m;
        struct tunep_scheduler_config c = median_config(&m);
        m.grace_period = 0;
        tune_error err;
        tune_test_alloc_fail_after(n);
        tune_status st = tunep_scheduler_new(&c, NULL, 0, &s, &err);
        for (int64_t i = 0; st == TUNE_OK && i < 100; i++) {
            st = tunep_scheduler_on_trial_add(s, i, 0.0);
            if (st == TUNE_OK)
                for (int r = 1; r <= 12; r++)
                    (void)tunep_scheduler_on_result(s, i, 1, r, 0.5); /* may drop a report */
        }
        int failed = tune_test_alloc_failed();
        tune_test_alloc_reset();
        if (!failed) {
            ck_assert_int_eq(st, TUNE_OK);
            ck_assert_int_gt(failures, 5);
            tunep_scheduler_free(s);
            break;
        }
        failures++;
        if (st != TUNE_OK)
            ck_assert_int_eq(st, TUNE_ENOMEM);
        if (s) {
            ck_assert_int_eq(tunep_scheduler_on_trial_add(s, 1000, 0.0), TUNE_OK);
            ck_assert_int_eq(tunep_scheduler_on_result(s, 1000, 1, 1, 1.0), TUNEP_CONTINUE);
        }
        tunep_scheduler_free(s); /* ASan reports any leak */
    }
}
END_TEST

static Suite *median_suite(void)
{
    Suite *s = suite_create("median");
    TCase *tc = tcase_create("median");
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_hand_computed);
    tcase_add_test(tc, test_nan_is_worst);
    tcase_add_test(tc, test_time_slicing);
    tcase_add_test(tc, test_soft_stop);
    tcase_add_test(tc, test_times_going_back);
    tcase_add_test(tc, test_matches_ray);
    tcase_add_test(tc, test_speed);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(median_suite)
