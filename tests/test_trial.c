/*
 * test_trial.c - objectives that misbehave towards their tune_trial handle:
 * one that hangs past trial_timeout_s in thread mode (abandoned, the run
 * finishes), reports through a pointer kept after its objective returned
 * (refused), replaces the objective while the study runs (refused), and
 * reports with thousands of new metric names (linear; one limit per report).
 */
#include <math.h>
#include <stdatomic.h>
#include <time.h>

#include "check_util.h"
#include "tune.h"

static tune_study *study_from(const char *json)
{
    tune_study *s = NULL;
    tune_error err;
    tune_status st = tune_study_new_from_json(json, NULL, &s, &err);
    ck_assert_msg(st == TUNE_OK, "config rejected: %d:%d: %s", err.line, err.column, err.text);
    return s;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- a hung objective in thread mode ------------------------------------- */

static atomic_int hang_release;     /* set by the test: the hung objective reports and returns */
static atomic_int hang_answer = -1; /* what that late report was answered */

/* Trial 0 neither reports nor returns until released; the others report and return. */
static tune_status obj_trial0_hangs(tune_trial *t, void *ud)
{
    (void)ud;
    if (tune_trial_id(t) == 0) {
        while (!atomic_load(&hang_release))
            nap_ms(5);
        atomic_store(&hang_answer, tune_trial_report_metric(t, "score", 1.0, NULL));
        return TUNE_OK;
    }
    tune_status st = tune_trial_report_metric(t, "score", 2.0, NULL);
    return st == TUNE_ESTOP ? TUNE_OK : st;
}

START_TEST(thread_timeout_abandons_a_hung_objective)
{
    tune_study *s = study_from("{\"metric\": \"score\", \"num_samples\": 3, \"seed\": 1,"
                               " \"storage\": \":memory:\", \"max_concurrent_trials\": 1,"
                               " \"trial_timeout_s\": 0.2, \"max_failures\": 0,"
                               " \"param_space\": {\"x\": {\"uniform\": [0, 1]}}}");
    ck_assert_int_eq(tune_study_set_objective(s, obj_trial0_hangs, NULL, NULL), TUNE_OK);
    double t0 = now_s();
    tune_error err;
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_OK);
    ck_assert_msg(now_s() - t0 < 10.0, "the run took %.1f s", now_s() - t0);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_ERROR], 1);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 2);
    ck_assert_int_eq(c[TUNE_TRIAL_RUNNING] + c[TUNE_TRIAL_PENDING], 0);
    /* The left-behind thread's late report is refused: its attempt has ended. */
    atomic_store(&hang_release, 1);
    for (int i = 0; i < 2000 && atomic_load(&hang_answer) < 0; i++)
        nap_ms(5);
    ck_assert_int_eq(atomic_load(&hang_answer), TUNE_ESTOP);
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_ERROR], 1);
    tune_study_free(s);
}
END_TEST

/* ---- stale handles and a changed objective ------------------------------- */

static tune_trial *kept; /* trial 0's handle, kept past its return */
static atomic_int stale_answer = -1;
static atomic_int set_objective_answer = -1;
static int64_t kept_iteration = -1;

static tune_status obj_other(tune_trial *t, void *ud)
{
    (void)t;
    (void)ud;
    return TUNE_OK;
}

/* Trial 0 keeps its handle; trial 1 reports through it and tries to swap the objective. */
static tune_status obj_keep_handle(tune_trial *t, void *ud)
{
    tune_study *study = ud;
    if (tune_trial_id(t) == 0) {
        kept = t;
    } else if (tune_trial_id(t) == 1) {
        atomic_store(&stale_answer, tune_trial_report_metric(kept, "score", 9.0, NULL));
        kept_iteration = tune_trial_iteration(kept);
        atomic_store(&set_objective_answer, tune_study_set_objective(study, obj_other, NULL, NULL));
    }
    tune_status st = tune_trial_report_metric(t, "score", (double)tune_trial_id(t), NULL);
    return st == TUNE_ESTOP ? TUNE_OK : st;
}

START_TEST(stale_handle_and_set_objective_are_refused)
{
    tune_study *s = study_from("{\"metric\": \"score\", \"num_samples\": 2, \"seed\": 1,"
                               " \"storage\": \":memory:\", \"max_concurrent_trials\": 1,"
                               " \"param_space\": {\"x\": {\"uniform\": [0, 1]}}}");
    ck_assert_int_eq(tune_study_set_objective(s, obj_keep_handle, s, NULL), TUNE_OK);
    ck_assert_int_eq(tune_study_run(s, NULL), TUNE_OK);
    ck_assert_int_eq(atomic_load(&stale_answer), TUNE_EINVAL);
    ck_assert_int_eq(kept_iteration, 1); /* trial 0 kept its one report */
    ck_assert_int_eq(atomic_load(&set_objective_answer), TUNE_EINVAL);
    /* After the run too, while the study lives. */
    tune_error err;
    ck_assert_int_eq(tune_trial_report_metric(kept, "score", 1.0, &err), TUNE_EINVAL);
    ck_assert_int_eq(tune_trial_should_stop(kept), 1);
    tune_result *best = NULL;
    ck_assert_int_eq(tune_study_best(s, &best, NULL), TUNE_OK);
    ck_assert_int_eq(tune_result_trial_id(best), 1);
    tune_result_free(best);
    tune_study_free(s);
}
END_TEST

/* ---- many metric names --------------------------------------------------- */

enum { NAMES_PER_REPORT = 4095, REPORTS = 40 };

/* Each report brings NAMES_PER_REPORT names never seen before, plus the main metric. */
static tune_status obj_many_names(tune_trial *t, void *ud)
{
    (void)ud;
    static char text[NAMES_PER_REPORT + 1][24];
    const char *names[NAMES_PER_REPORT + 1];
    double values[NAMES_PER_REPORT + 1];
    for (int r = 0; r < REPORTS; r++) {
        for (int i = 0; i < NAMES_PER_REPORT; i++) {
            snprintf(text[i], sizeof text[i], "m%d_%d", r, i);
            names[i] = text[i];
            values[i] = i;
        }
        names[NAMES_PER_REPORT] = "score";
        values[NAMES_PER_REPORT] = r;
        tune_status st = tune_trial_report(t, NAMES_PER_REPORT + 1, names, values, NULL);
        if (st)
            return st;
    }
    /* One metric more than the limit is refused, in every mode alike. */
    const char **many = calloc(TUNE_REPORT_MAX_METRICS + 1, sizeof *many);
    double *v = calloc(TUNE_REPORT_MAX_METRICS + 1, sizeof *v);
    for (int i = 0; i <= TUNE_REPORT_MAX_METRICS; i++)
        many[i] = "score";
    tune_status over = tune_trial_report(t, TUNE_REPORT_MAX_METRICS + 1, many, v, NULL);
    free(many);
    free(v);
    return over == TUNE_EINVAL ? TUNE_OK : TUNE_EFAILED;
}

START_TEST(many_metric_names_are_linear)
{
    tune_study *s = study_from("{\"metric\": \"score\", \"num_samples\": 1, \"seed\": 1,"
                               " \"storage\": \":memory:\", \"max_failures\": 0,"
                               " \"param_space\": {\"x\": {\"uniform\": [0, 1]}}}");
    ck_assert_int_eq(tune_study_set_objective(s, obj_many_names, NULL, NULL), TUNE_OK);
    double t0 = now_s();
    ck_assert_int_eq(tune_study_run(s, NULL), TUNE_OK);
    double took = now_s() - t0;
    /* 163,800 names: quadratic interning took a minute; a hash table well under a second. */
    ck_assert_msg(took < 10.0, "%d reports of %d new names took %.1f s", REPORTS, NAMES_PER_REPORT,
                  took);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 1);
    tune_result *best = NULL;
    ck_assert_int_eq(tune_study_best(s, &best, NULL), TUNE_OK);
    double v = 0;
    ck_assert_int_eq(tune_result_get_metric(best, "m39_4094", &v, NULL), TUNE_OK);
    ck_assert_msg(v == 4094.0, "m39_4094 = %g", v);
    tune_result_free(best);
    tune_study_free(s);
}
END_TEST

static Suite *trial_suite(void)
{
    Suite *s = suite_create("trial");
    TCase *tc = tcase_create("handles");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, thread_timeout_abandons_a_hung_objective);
    tcase_add_test(tc, stale_handle_and_set_objective_are_refused);
    tcase_add_test(tc, many_metric_names_are_linear);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(trial_suite)
