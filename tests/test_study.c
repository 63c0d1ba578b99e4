/*
 * test_study.c - the controller with fake objectives: trial states, retries,
 * NaN handling, stop conditions, reproducibility whatever the concurrency,
 * interruption, the best trial, and a store-backed run read back by
 * tune_study_open().
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <stdatomic.h>

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

static void counts(tune_study *s, int64_t c[TUNE_TRIAL_STATUS_COUNT])
{
    tune_study_counts(s, c);
}

/* ---- objectives ---------------------------------------------------------- */

/* Reports x as the metric for `iters` iterations (default 5). */
static tune_status obj_constant(tune_trial *t, void *ud)
{
    int iters = ud ? *(int *)ud : 5;
    double x = tune_trial_get_double_or(t, "x", 0);
    for (int i = 0; i < iters; i++) {
        tune_status st = tune_trial_report_metric(t, "score", x, NULL);
        if (st == TUNE_ESTOP)
            return TUNE_OK;
        if (st)
            return st;
    }
    return TUNE_OK;
}

static tune_status obj_fail_first_attempt(tune_trial *t, void *ud)
{
    (void)ud;
    if (tune_trial_attempt(t) == 1) {
        tune_trial_report_metric(t, "score", 1.0, NULL);
        tune_trial_set_error(t, "boom in trial %lld", (long long)tune_trial_id(t));
        return TUNE_EFAILED;
    }
    return obj_constant(t, NULL);
}

static tune_status obj_always_fail(tune_trial *t, void *ud)
{
    (void)ud;
    (void)t;
    return TUNE_EIO;
}

/* Odd trials report NaN; trials 2 and 6 never report the metric; the others 1 + id. */
static tune_status obj_nan_for_odd(tune_trial *t, void *ud)
{
    (void)ud;
    int64_t id = tune_trial_id(t);
    double v = (id % 2) ? (double)NAN : 1.0 + (double)id;
    for (int i = 0; i < 4; i++) {
        tune_status st = (id == 2 || id == 6) ? tune_trial_report_metric(t, "other", 1.0, NULL)
                                              : tune_trial_report_metric(t, "score", v, NULL);
        if (st == TUNE_ESTOP)
            return TUNE_OK;
    }
    return TUNE_OK;
}

/* ---- tests --------------------------------------------------------------- */

START_TEST(fifo_all_terminate)
{
    tune_study *s = study_from("{\"metric\": \"score\", \"num_samples\": 20, \"seed\": 1,"
                               " \"storage\": \":memory:\", \"max_concurrent_trials\": 3,"
                               " \"param_space\": {\"x\": {\"uniform\": [0, 1]}}}");
    tune_study_set_objective(s, obj_constant, NULL, NULL);
    tune_error err;
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_OK);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 20);
    ck_assert_int_eq(c[TUNE_TRIAL_PENDING] + c[TUNE_TRIAL_RUNNING] + c[TUNE_TRIAL_ERROR], 0);
    tune_study_free(s);
}
END_TEST

START_TEST(retry_then_succeed)
{
    tune_study *s = study_from("{\"metric\": \"score\", \"num_samples\": 6, \"seed\": 1,"
                               " \"storage\": \":memory:\", \"max_failures\": 1,"
                               " \"param_space\": {\"x\": {\"uniform\": [0, 1]}}}");
    tune_study_set_objective(s, obj_fail_first_attempt, NULL, NULL);
    ck_assert_int_eq(tune_study_run(s, NULL), TUNE_OK);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 6);
    ck_assert_int_eq(c[TUNE_TRIAL_ERROR], 0);
    tune_study_free(s);
}
END_TEST

START_TEST(errors_do_not_stop_the_sweep)
{
    tune_study *s = study_from("{\"metric\": \"score\", \"num_samples\": 5, \"seed\": 1,"
                               " \"storage\": \":memory:\", \"max_failures\": 2,"
                               " \"max_concurrent_trials\": 2}");
    tune_study_set_objective(s, obj_always_fail, NULL, NULL);
    ck_assert_int_eq(tune_study_run(s, NULL), TUNE_OK);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_ERROR], 5);
    char *best = NULL;
    tune_error err;
    ck_assert_int_eq(tune_study_best_json(s, &best, &err), TUNE_ENOTFOUND);
    tune_study_free(s);
}
END_TEST

START_TEST(nan_is_worst_and_never_best)
{
    /* ASHA with rf 2: a NaN trial arriving after a finite one is below the cutoff. */
    tune_study *s = study_from("{\"metric\": \"score\", \"num_samples\": 10, \"seed\": 1,"
                               " \"storage\": \":memory:\", \"max_concurrent_trials\": 1,"
                               " \"scheduler\": {\"type\": \"asha\", \"max_t\": 4,"
                               " \"grace_period\": 1, \"reduction_factor\": 2}}");
    tune_study_set_objective(s, obj_nan_for_odd, NULL, NULL);
    ck_assert_int_eq(tune_study_run(s, NULL), TUNE_OK);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    counts(s, c);
    /* A NaN ends the attempt as an error with its reason (no retries: max_failures 0);
     * a missing metric is the worst value, below trial 0's 1.0 at rung 1: stopped there. */
    ck_assert_int_eq(c[TUNE_TRIAL_ERROR], 5);
    ck_assert_int_eq(c[TUNE_TRIAL_STOPPED], 2);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 3);
    char *text = NULL;
    ck_assert_int_eq(tune_study_progress_text(s, 5, &text, NULL), TUNE_OK);
    ck_assert_msg(strstr(text, "ERROR trial 9 (attempt 1): reported score = nan at iteration 1"),
                  "%s", text);
    tune_free(text);
    char *best = NULL;
    ck_assert_int_eq(tune_study_best_json(s, &best, NULL), TUNE_OK);
    ck_assert_msg(strstr(best, "\"trial_id\":8") != NULL, "best: %s", best);
    tune_free(best);
    tune_study_free(s);
}
END_TEST

START_TEST(stop_training_iteration_and_threshold)
{
    int iters = 50;
    tune_study *s = study_from("{\"metric\": \"score\", \"num_samples\": 8, \"seed\": 5,"
                               " \"storage\": \":memory:\", \"max_concurrent_trials\": 2,"
                               " \"param_space\": {\"x\": {\"grid_search\": [0.1, 0.9]}},"
                               " \"stop\": {\"training_iteration\": 7, \"score\": 0.5}}");
    tune_study_set_objective(s, obj_constant, &iters, NULL);
    ck_assert_int_eq(tune_study_run(s, NULL), TUNE_OK);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    counts(s, c);
    /* 16 trials: x=0.1 runs to iteration 7 (TERMINATED), x=0.9 passes 0.5 at once (STOPPED). */
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 8);
    ck_assert_int_eq(c[TUNE_TRIAL_STOPPED], 8);
    char *best = NULL;
    ck_assert_int_eq(tune_study_best_json(s, &best, NULL), TUNE_OK);
    ck_assert_msg(strstr(best, "\"training_iteration\":1,") != NULL, "best: %s", best);
    tune_free(best);
    tune_study_free(s);
}
END_TEST

/* Records each trial's config JSON by id. */
struct capture {
    pthread_mutex_t lock;
    char *configs[64];
};

static tune_status obj_capture(tune_trial *t, void *ud)
{
    struct capture *cap = ud;
    char *json = NULL;
    ck_assert_int_eq(tune_trial_config_json(t, &json, NULL), TUNE_OK);
    pthread_mutex_lock(&cap->lock);
    cap->configs[tune_trial_id(t)] = strdup(json);
    pthread_mutex_unlock(&cap->lock);
    tune_free(json);
    return tune_trial_report_metric(t, "score", 0.5, NULL) == TUNE_ESTORE ? TUNE_ESTORE : TUNE_OK;
}

static void run_capture(int concurrency, struct capture *cap)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"metric\": \"score\", \"num_samples\": 20, \"seed\": 1234,"
             " \"storage\": \":memory:\", \"max_concurrent_trials\": %d,"
             " \"param_space\": {\"lr\": {\"loguniform\": [1e-6, 1e-1]},"
             " \"bs\": {\"choice\": [16, 32, 64]}, \"w\": {\"randint\": [0, 100]},"
             " \"act\": {\"choice\": [\"relu\", \"gelu\"]}}}",
             concurrency);
    tune_study *s = study_from(json);
    pthread_mutex_init(&cap->lock, NULL);
    tune_study_set_objective(s, obj_capture, cap, NULL);
    ck_assert_int_eq(tune_study_run(s, NULL), TUNE_OK);
    tune_study_free(s);
}

/* Reports a = b = x, and records x by trial id. */
struct xs {
    pthread_mutex_t lock;
    double x[64];
};

static tune_status obj_two_objectives(tune_trial *t, void *ud)
{
    struct xs *xs = ud;
    double x = tune_trial_get_double_or(t, "x", -1);
    pthread_mutex_lock(&xs->lock);
    xs->x[tune_trial_id(t)] = x;
    pthread_mutex_unlock(&xs->lock);
    const char *const names[2] = {"a", "b"};
    const double v[2] = {x, x};
    tune_status st = tune_trial_report(t, 2, names, v, NULL);
    return st == TUNE_ESTOP ? TUNE_OK : st;
}

/*
 * The controller hands NSGA-II every objective: with a population of 4, no
 * crossover and no mutation, each trial after the first 4 (random) copies
 * one of them. A searcher that got only the main metric would forget every
 * trial (it expects two scores), never complete generation 0, and keep
 * drawing new values.
 */
START_TEST(nsga2_gets_every_objective)
{
    tune_study *s = study_from(
        "{\"metric\": [\"a\", \"b\"], \"mode\": [\"min\", \"max\"], \"num_samples\": 24,"
        " \"seed\": 7, \"storage\": \":memory:\", \"max_concurrent_trials\": 1,"
        " \"search\": {\"algorithm\": \"nsga2\", \"population_size\": 4, \"crossover_prob\": 0,"
        " \"mutation_prob\": 0}, \"param_space\": {\"x\": {\"uniform\": [0, 1]}}}");
    struct xs xs;
    memset(&xs, 0, sizeof xs);
    pthread_mutex_init(&xs.lock, NULL);
    tune_study_set_objective(s, obj_two_objectives, &xs, NULL);
    ck_assert_int_eq(tune_study_run(s, NULL), TUNE_OK);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 24);
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < i; k++)
            ck_assert(xs.x[i] != xs.x[k]);
    for (int i = 4; i < 24; i++) {
        int copy = 0;
        for (int k = 0; k < 4; k++)
            copy |= xs.x[i] == xs.x[k];
        ck_assert_msg(copy, "trial %d: x %g is none of the first four", i, xs.x[i]);
    }
    pthread_mutex_destroy(&xs.lock);
    tune_study_free(s);
}
END_TEST

START_TEST(same_seed_same_configs_any_concurrency)
{
    struct capture a = {0}, b = {0};
    run_capture(1, &a);
    run_capture(7, &b);
    for (int i = 0; i < 20; i++) {
        ck_assert_ptr_nonnull(a.configs[i]);
        ck_assert_ptr_nonnull(b.configs[i]);
        ck_assert_str_eq(a.configs[i], b.configs[i]);
        if (i > 0)
            ck_assert_str_ne(a.configs[i], a.configs[i - 1]);
    }
    for (int i = 0; i < 20; i++) {
        free(a.configs[i]);
        free(b.configs[i]);
    }
}
END_TEST

static tune_status obj_slow_until_stopped(tune_trial *t, void *ud)
{
    tune_study *s = *(tune_study **)ud;
    for (int i = 0; i < 1000; i++) {
        if (tune_trial_id(t) == 3 && i == 2)
            tune_study_request_stop(s);
        tune_status st = tune_trial_report_metric(t, "score", (double)i, NULL);
        if (st == TUNE_ESTOP)
            return TUNE_OK;
    }
    return TUNE_OK;
}

START_TEST(request_stop_interrupts)
{
    tune_study *s = study_from("{\"metric\": \"score\", \"num_samples\": 50, \"seed\": 1,"
                               " \"storage\": \":memory:\", \"max_concurrent_trials\": 1}");
    tune_study *self = s;
    tune_study_set_objective(s, obj_slow_until_stopped, &self, NULL);
    tune_error err;
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_EINTERRUPTED);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 3);
    ck_assert_int_eq(c[TUNE_TRIAL_RUNNING], 0);
    ck_assert_int_eq(c[TUNE_TRIAL_PENDING], 47);
    tune_study_free(s);
}
END_TEST

START_TEST(store_run_reopened)
{
    char *dir = tune_test_mkdtemp();
    char json[1024];
    snprintf(json, sizeof json,
             "{\"name\": \"t\", \"metric\": \"val_accuracy\", \"num_samples\": 12, \"seed\": 9,"
             " \"storage\": \"%s/exp\", \"max_concurrent_trials\": 3,"
             " \"param_space\": {\"lr\": {\"loguniform\": [1e-5, 1e-2]},"
             " \"opt\": {\"name\": {\"choice\": [\"adam\", \"sgd\"]}}},"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 9, \"reduction_factor\": 3},"
             " \"trainer\": {\"type\": \"synthetic\", \"iterations\": 9}}",
             dir);
    tune_study *s = study_from(json);
    tune_error err;
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_OK);
    char *best_live = NULL, *best_open = NULL;
    ck_assert_int_eq(tune_study_best_json(s, &best_live, NULL), TUNE_OK);
    int64_t c[TUNE_TRIAL_STATUS_COUNT], c2[TUNE_TRIAL_STATUS_COUNT];
    counts(s, c);
    tune_study_free(s);

    /* Running again into the same folder is refused: an old sweep is never reused unasked. */
    s = study_from(json);
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_EEXIST);
    ck_assert_ptr_nonnull(strstr(err.text, "tune resume"));
    tune_study_free(s);

    /* With TUNE_RESUME_EXISTING it resumes: everything is finished already. */
    s = study_from(json);
    ck_assert_int_eq(tune_study_set_resume_flags(s, TUNE_RESUME_EXISTING, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_OK);
    counts(s, c2);
    for (int i = 0; i < TUNE_TRIAL_STATUS_COUNT; i++)
        ck_assert_int_eq(c[i], c2[i]);
    tune_study_free(s);

    /* Another config is refused: nothing recorded is overwritten. */
    char other[1200];
    snprintf(other, sizeof other, "%s", json);
    char *ns = strstr(other, "\"num_samples\": 12");
    ck_assert_ptr_nonnull(ns);
    memcpy(ns, "\"num_samples\": 13", 17);
    s = study_from(other);
    ck_assert_int_eq(tune_study_set_resume_flags(s, TUNE_RESUME_EXISTING, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.text, "another config"));
    tune_study_free(s);

    /* Not even with TUNE_RESUME_FORCE may a parameter change its type: the
     * store's column keeps it, and the values would be exported wrongly. */
    char retyped[1200];
    const char *lr = strstr(json, "{\"loguniform\": [1e-5, 1e-2]}");
    ck_assert_ptr_nonnull(lr);
    snprintf(retyped, sizeof retyped, "%.*s{\"randint\": [1, 100]}%s", (int)(lr - json), json,
             lr + strlen("{\"loguniform\": [1e-5, 1e-2]}"));
    s = study_from(retyped);
    ck_assert_int_eq(tune_study_set_resume_flags(s, TUNE_RESUME_EXISTING | TUNE_RESUME_FORCE, &err),
                     TUNE_OK);
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_ECONFIG);
    ck_assert_msg(strstr(err.text, "param_space.lr: the stored experiment has it as float, this "
                                   "config as int"),
                  "%s", err.text);
    tune_study_free(s);

    char path[1200];
    snprintf(path, sizeof path, "%s/exp", dir);
    ck_assert_int_eq(tune_study_open(path, &s, &err), TUNE_OK);
    counts(s, c2);
    for (int i = 0; i < TUNE_TRIAL_STATUS_COUNT; i++)
        ck_assert_int_eq(c[i], c2[i]);
    ck_assert_int_eq(tune_study_best_json(s, &best_open, NULL), TUNE_OK);
    /* The stored config keeps nesting and the time differs only in rounding. */
    ck_assert_msg(strncmp(best_live, best_open, strlen(best_live) - 25) == 0, "%s\n%s", best_live,
                  best_open);
    ck_assert_ptr_nonnull(strstr(best_open, "\"opt\":{\"name\":"));
    tune_free(best_live);
    tune_free(best_open);
    tune_study_free(s);

    snprintf(path, sizeof path, "%s/exp/results.csv", dir);
    char *csv = tune_test_slurp(path);
    ck_assert_ptr_nonnull(csv);
    ck_assert_msg(
        strncmp(csv, "trial_id,status,training_iteration,config/lr,config/opt/name,", 61) == 0,
        "header: %.200s", csv);
    int rows = 0;
    for (char *p = csv; *p; p++)
        rows += *p == '\n';
    ck_assert_int_eq(rows, 13);
    free(csv);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/*
 * Stops the study at trial `stop_at`'s third report. That trial scores far
 * above every other, so ASHA never stops it first, however the threads are
 * scheduled (trials started after it may reach its rungs before it does).
 */
struct stopper {
    tune_study *study;
    int64_t stop_at;
};

static tune_status obj_stop_once(tune_trial *t, void *ud)
{
    struct stopper *sp = ud;
    double bonus = tune_trial_id(t) == sp->stop_at ? 100.0 : 0.0;
    for (int i = 0; i < 6; i++) {
        if (tune_trial_id(t) == sp->stop_at && i == 2)
            tune_study_request_stop(sp->study);
        tune_status st =
            tune_trial_report_metric(t, "score", 0.1 * (double)tune_trial_id(t) + i + bonus, NULL);
        if (st == TUNE_ESTOP)
            return TUNE_OK;
        if (st)
            return st;
    }
    return TUNE_OK;
}

START_TEST(interrupted_sweep_resumes)
{
    char *dir = tune_test_mkdtemp();
    char json[1024];
    snprintf(json, sizeof json,
             "{\"metric\": \"score\", \"num_samples\": 30, \"seed\": 4, \"storage\": \"%s/e\","
             " \"max_concurrent_trials\": 3, \"param_space\": {\"x\": {\"uniform\": [0, 1]},"
             " \"opt\": {\"choice\": [\"adam\", \"sgd\"]}},"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 6, \"reduction_factor\": 2}}",
             dir);
    tune_study *s = study_from(json);
    struct stopper sp = {s, 10};
    tune_study_set_objective(s, obj_stop_once, &sp, NULL);
    tune_error err;
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_EINTERRUPTED);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    counts(s, c);
    int64_t done_before = c[TUNE_TRIAL_TERMINATED] + c[TUNE_TRIAL_STOPPED];
    ck_assert_int_ge(done_before, 8); /* trials 0..7 are sure to have ended; 3 run at once */
    ck_assert_int_lt(done_before, 30);
    tune_study_free(s);

    /* The resumed study finishes the sweep: exactly num_samples trials, none twice. */
    char path[1100];
    snprintf(path, sizeof path, "%s/e", dir);
    ck_assert_int_eq(tune_study_resume(path, 0, &s, &err), TUNE_OK);
    sp.study = s;
    sp.stop_at = -1;
    tune_study_set_objective(s, obj_stop_once, &sp, NULL);
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_OK);
    counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED] + c[TUNE_TRIAL_STOPPED], 30);
    ck_assert_int_eq(c[TUNE_TRIAL_PENDING] + c[TUNE_TRIAL_RUNNING] + c[TUNE_TRIAL_ERROR], 0);
    tune_study_free(s);

    /* results.csv: 30 rows, ids 0..29 once each. */
    snprintf(path, sizeof path, "%s/e/results.csv", dir);
    char *csv = tune_test_slurp(path);
    ck_assert_ptr_nonnull(csv);
    int seen[30] = {0}, rows = 0;
    for (char *line = strstr(csv, "\n"); line && line[1]; line = strstr(line + 1, "\n")) {
        int id = atoi(line + 1);
        ck_assert(id >= 0 && id < 30);
        seen[id]++;
        rows++;
    }
    ck_assert_int_eq(rows, 30);
    for (int i = 0; i < 30; i++)
        ck_assert_int_eq(seen[i], 1);
    free(csv);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/* Trial 1 segfaults on its first attempt, trial 2 hangs, trial 3 aborts; the others report. */
static tune_status obj_misbehave(tune_trial *t, void *ud)
{
    (void)ud;
    int64_t id = tune_trial_id(t);
    if (id == 1 && tune_trial_attempt(t) == 1) {
        tune_trial_report_metric(t, "score", 5.0, NULL);
        raise(SIGSEGV);
    }
    if (id == 2)
        sleep(100);
    if (id == 3)
        abort();
    for (int i = 0; i < 3; i++)
        if (tune_trial_report_metric(t, "score", (double)id + i, NULL) != TUNE_OK)
            return TUNE_OK;
    return TUNE_OK;
}

START_TEST(process_isolation_contains_crashes_and_hangs)
{
    tune_study *s = study_from("{\"metric\": \"score\", \"num_samples\": 6, \"seed\": 1,"
                               " \"storage\": \":memory:\", \"max_concurrent_trials\": 3,"
                               " \"max_failures\": 1, \"isolation\": \"process\","
                               " \"trial_timeout_s\": 0.5}");
    tune_study_set_objective(s, obj_misbehave, NULL, NULL);
    tune_error err;
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_OK);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    counts(s, c);
    /* 0, 1 (second attempt), 4, 5 finish; 2 (timeout) and 3 (abort) fail twice each. */
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 4);
    ck_assert_int_eq(c[TUNE_TRIAL_ERROR], 2);
    char *text = NULL;
    ck_assert_int_eq(tune_study_progress_text(s, 10, &text, NULL), TUNE_OK);
    ck_assert_msg(strstr(text, "ERROR trial 2 (attempt 2): timed out after 0.5 s") != NULL, "%s",
                  text);
    ck_assert_msg(strstr(text, "ERROR trial 3 (attempt 2): trial process killed by signal 6") !=
                      NULL,
                  "%s", text);
    tune_free(text);
    char *best = NULL;
    ck_assert_int_eq(tune_study_best_json(s, &best, NULL), TUNE_OK);
    ck_assert_msg(strstr(best, "\"trial_id\":5") && strstr(best, "\"training_iteration\":3"), "%s",
                  best);
    tune_free(best);
    tune_study_free(s);
}
END_TEST

/* Reports every 0.1 s: past a 0.25 s timeout the next report ends the attempt. */
static tune_status obj_slow(tune_trial *t, void *ud)
{
    (void)ud;
    for (int i = 0; i < 20; i++) {
        usleep(100000);
        if (tune_trial_report_metric(t, "score", i, NULL) != TUNE_OK)
            return TUNE_OK;
    }
    return TUNE_OK;
}

START_TEST(thread_timeout_at_next_report)
{
    tune_study *s = study_from("{\"metric\": \"score\", \"num_samples\": 2, \"seed\": 1,"
                               " \"storage\": \":memory:\", \"max_concurrent_trials\": 2,"
                               " \"trial_timeout_s\": 0.25}");
    tune_study_set_objective(s, obj_slow, NULL, NULL);
    ck_assert_int_eq(tune_study_run(s, NULL), TUNE_OK);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_ERROR], 2);
    char *text = NULL;
    ck_assert_int_eq(tune_study_progress_text(s, 10, &text, NULL), TUNE_OK);
    ck_assert_msg(strstr(text, "timed out after 0.25 s (trial_timeout_s)") != NULL, "%s", text);
    tune_free(text);
    tune_study_free(s);
}
END_TEST

START_TEST(no_objective_is_a_config_error)
{
    tune_study *s = study_from("{\"storage\": \":memory:\"}");
    tune_error err;
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.text, "no objective"));
    tune_study_free(s);
}
END_TEST

/* What the objective of errors_carry_details saw, asserted on the test's thread. */
struct seen_errors {
    tune_status st[5];
    tune_error err[5];
};

static tune_status obj_bad_calls(tune_trial *t, void *ud)
{
    struct seen_errors *se = ud;
    double d;
    const char *str;
    const char *reserved = "trial_id";
    double v = 1.0;
    se->st[0] = tune_trial_get_double(t, "nope", &d, &se->err[0]);
    se->st[1] = tune_trial_get_string(t, "x", &str, &se->err[1]);
    se->st[2] = tune_trial_report(t, 1, &reserved, &v, &se->err[2]);
    se->st[3] = tune_trial_report_metric(t, "score", 1.0, &se->err[3]);
    se->st[4] = tune_trial_report_metric(t, "score", 1.0, &se->err[4]);
    return TUNE_OK;
}

START_TEST(errors_carry_details)
{
    /* One trial on this thread: it reaches stop.training_iteration at its first report. */
    tune_study *s = study_from("{\"metric\": \"score\", \"num_samples\": 1, \"seed\": 1,"
                               " \"storage\": \":memory:\", \"max_concurrent_trials\": 1,"
                               " \"param_space\": {\"x\": {\"uniform\": [0, 1]}},"
                               " \"stop\": {\"training_iteration\": 1}}");
    struct seen_errors se;
    memset(&se, 0, sizeof se);
    tune_error err;
    ck_assert_int_eq(tune_study_set_objective(s, obj_bad_calls, &se, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_set_resume_flags(s, 2, &err), TUNE_EINVAL);
    ck_assert_str_eq(err.text, "unknown resume flags 0x2");
    ck_assert_int_eq(tune_study_set_storage(s, "", &err), TUNE_EINVAL);
    ck_assert_int_eq(tune_study_set_objective(s, NULL, NULL, &err), TUNE_EINVAL);
    ck_assert_int_eq(err.code, TUNE_EINVAL);
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_OK);

    ck_assert_int_eq(se.st[0], TUNE_ENOTFOUND);
    ck_assert_int_eq(se.err[0].code, TUNE_ENOTFOUND);
    ck_assert_str_eq(se.err[0].text, "no parameter 'nope'");
    ck_assert_int_eq(se.st[1], TUNE_ETYPE);
    ck_assert_str_eq(se.err[1].text, "parameter 'x' is a float, not a string");
    ck_assert_int_eq(se.st[2], TUNE_EINVAL);
    ck_assert_str_eq(se.err[2].text, "metric name 'trial_id' is reserved: the engine reports it");
    /* TUNE_ESTOP says why; so does the answer to a report after it. */
    ck_assert_int_eq(se.st[3], TUNE_ESTOP);
    ck_assert_int_eq(se.err[3].code, TUNE_ESTOP);
    ck_assert_str_eq(se.err[3].text,
                     "the trial reached its end (max_t or stop.training_iteration)");
    ck_assert_int_eq(se.st[4], TUNE_ESTOP);
    ck_assert_str_eq(se.err[4].text, se.err[3].text);

    /* Settings that are too late say so. */
    ck_assert_int_eq(tune_study_set_storage(s, "elsewhere", &err), TUNE_EINVAL);
    ck_assert_str_eq(err.text, "this study has already run");
    ck_assert_int_eq(tune_study_set_resume_flags(s, TUNE_RESUME_ERRORED, &err), TUNE_EINVAL);
    ck_assert_str_eq(err.text, "this study has already run");
    tune_study_free(s);
}
END_TEST

/* Trials with an even id fail while *fail_even is set; the others report their id. */
static tune_status obj_fail_even(tune_trial *t, void *ud)
{
    const int *fail_even = ud;
    if (*fail_even && tune_trial_id(t) % 2 == 0)
        return TUNE_EFAILED;
    return tune_trial_report_metric(t, "score", (double)tune_trial_id(t), NULL) == TUNE_ESTORE
               ? TUNE_ESTORE
               : TUNE_OK;
}

START_TEST(resume_errored_retries_error_trials)
{
    char *dir = tune_test_mkdtemp();
    char json[1024];
    snprintf(json, sizeof json,
             "{\"metric\": \"score\", \"num_samples\": 6, \"seed\": 2, \"storage\": \"%s/e\","
             " \"max_concurrent_trials\": 2}",
             dir);
    int fail_even = 1;
    tune_study *s = study_from(json);
    tune_study_set_objective(s, obj_fail_even, &fail_even, NULL);
    ck_assert_int_eq(tune_study_run(s, NULL), TUNE_OK);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_ERROR], 3);
    tune_study_free(s);

    /* Without the flag ERROR trials stay; the objective would now succeed. */
    char path[1100];
    snprintf(path, sizeof path, "%s/e", dir);
    fail_even = 0;
    tune_error err;
    ck_assert_int_eq(tune_study_resume(path, 0, &s, &err), TUNE_OK);
    tune_study_set_objective(s, obj_fail_even, &fail_even, NULL);
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_OK);
    counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_ERROR], 3);
    tune_study_free(s);

    /* With it they run again (an unknown flag bit is refused). */
    ck_assert_int_eq(tune_study_resume(path, 2, &s, &err), TUNE_EINVAL);
    ck_assert_int_eq(tune_study_resume(path, TUNE_RESUME_ERRORED, &s, &err), TUNE_OK);
    tune_study_set_objective(s, obj_fail_even, &fail_even, NULL);
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_OK);
    counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_ERROR], 0);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 6);
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/* What obj_duplicate_metrics got: two refused reports, then one that counts. */
struct dup_seen {
    tune_status st[3];
    tune_error err[3];
};

static tune_status obj_duplicate_metrics(tune_trial *t, void *ud)
{
    struct dup_seen *ds = ud;
    const char *two[2] = {"score", "score"};
    double v2[2] = {1, 2};
    ds->st[0] = tune_trial_report(t, 2, two, v2, &ds->err[0]);
    /* Many names (the sorted path), the duplicate far apart. */
    char buf[40][16];
    const char *many[40];
    double vm[40];
    for (int i = 0; i < 40; i++) {
        snprintf(buf[i], sizeof buf[i], "m%d", i % 39);
        many[i] = buf[i];
        vm[i] = i;
    }
    ds->st[1] = tune_trial_report(t, 40, many, vm, &ds->err[1]);
    ds->st[2] = tune_trial_report(t, 39, many, vm, &ds->err[2]);
    return TUNE_OK;
}

/* A metric twice in one report is refused and stores nothing. */
START_TEST(duplicate_metric_refused)
{
    tune_study *s = study_from("{\"metric\": \"m0\", \"num_samples\": 1, \"seed\": 1,"
                               " \"storage\": \":memory:\", \"max_concurrent_trials\": 1}");
    struct dup_seen ds;
    memset(&ds, 0, sizeof ds);
    tune_error err;
    ck_assert_int_eq(tune_study_set_objective(s, obj_duplicate_metrics, &ds, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_OK);
    ck_assert_int_eq(ds.st[0], TUNE_EINVAL);
    ck_assert_str_eq(ds.err[0].text, "metric 'score' appears twice in one report");
    ck_assert_int_eq(ds.st[1], TUNE_EINVAL);
    ck_assert_str_eq(ds.err[1].text, "metric 'm0' appears twice in one report");
    ck_assert_int_eq(ds.st[2], TUNE_OK);
    tune_result *r = NULL;
    ck_assert_int_eq(tune_study_best(s, &r, &err), TUNE_OK);
    ck_assert_int_eq(tune_result_iteration(r), 1);
    tune_result_free(r);
    tune_study_free(s);
}
END_TEST

/* A second controller of the same folder, started from inside the first one's objective. */
struct second_run {
    char path[1100];
    tune_status st, st_open, st_resume;
    tune_error err;
    atomic_int tried; /* trials run on several worker threads: one of them tries */
};

static tune_status obj_second_controller(tune_trial *t, void *ud)
{
    struct second_run *sr = ud;
    if (atomic_exchange(&sr->tried, 1) == 0) {
        tune_study *s2 = NULL;
        tune_error e;
        ck_assert_int_eq(tune_study_resume(sr->path, 0, &s2, &e), TUNE_OK);
        tune_study_set_objective(s2, obj_constant, NULL, NULL);
        sr->st = tune_study_run(s2, &sr->err);
        tune_study_free(s2);
        /* Readers stay allowed while the run holds the folder. */
        sr->st_open = tune_study_open(sr->path, &s2, &e);
        tune_study_free(s2);
    }
    return obj_constant(t, NULL);
}

START_TEST(one_controller_per_folder)
{
    char *dir = tune_test_mkdtemp();
    struct second_run sr = {0};
    snprintf(sr.path, sizeof sr.path, "%s/exp", dir);
    char json[1400];
    snprintf(json, sizeof json,
             "{\"metric\": \"score\", \"num_samples\": 4, \"seed\": 1, \"storage\": \"%s\","
             " \"param_space\": {\"x\": {\"uniform\": [0, 1]}}}",
             sr.path);
    tune_study *s = study_from(json);
    tune_study_set_objective(s, obj_second_controller, &sr, NULL);
    tune_error err;
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_OK);
    ck_assert_int_eq(atomic_load(&sr.tried), 1);
    ck_assert_int_eq(sr.st, TUNE_EBUSY);
    ck_assert_msg(strstr(sr.err.text, "another tune run is using this experiment folder (pid ") &&
                      strstr(sr.err.text, "tune resume"),
                  "%s", sr.err.text);
    char pid[32];
    snprintf(pid, sizeof pid, "pid %ld on host ", (long)getpid());
    ck_assert_msg(strstr(sr.err.text, pid), "%s", sr.err.text);
    ck_assert_int_eq(sr.st_open, TUNE_OK);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 4);
    tune_study_free(s);

    /* The lock ends with the run: the folder can be resumed at once. */
    ck_assert_int_eq(tune_study_resume(sr.path, 0, &s, &err), TUNE_OK);
    tune_study_set_objective(s, obj_constant, NULL, NULL);
    ck_assert_msg(tune_study_run(s, &err) == TUNE_OK, "%s", err.text);
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/* A GPU-placed objective: counts the trials running at once and, in trial 1,
 * keeps the live table while another trial runs beside it. */
struct placed {
    tune_study *study;
    atomic_int running, most;
    char *table;
    int bad_gpu;
};

static tune_status obj_placed(tune_trial *t, void *ud)
{
    struct placed *p = ud;
    int now = atomic_fetch_add(&p->running, 1) + 1;
    int most = atomic_load(&p->most);
    while (now > most && !atomic_compare_exchange_weak(&p->most, &most, now))
        ;
    int gpu = tune_trial_gpu(t, 0);
    if (tune_trial_gpu_count(t) != 1 || (gpu != 0 && gpu != 1))
        p->bad_gpu = 1;
    nanosleep(&(struct timespec){0, 150 * 1000000L}, NULL);
    if (tune_trial_id(t) == 1) {
        /* Another objective is inside too: its trial holds the other GPU. */
        for (int i = 0; i < 400 && atomic_load(&p->running) < 2; i++)
            nanosleep(&(struct timespec){0, 5 * 1000000L}, NULL);
        tune_study_progress_text(p->study, 10, &p->table, NULL);
    }
    atomic_fetch_sub(&p->running, 1);
    const char *name = "score";
    double v = 1;
    tune_trial_report(t, 1, &name, &v, NULL);
    return TUNE_OK;
}

/* "gpu": 1 on two GPUs: two trials at once whatever max_concurrent_trials
 * allows, each with its own GPU, shown in the live table's device column. */
START_TEST(gpu_placement_bounds_concurrency)
{
    struct placed p = {0};
    p.study = study_from("{\"metric\": \"score\", \"num_samples\": 6, \"storage\": \":memory:\","
                         " \"max_concurrent_trials\": 8, \"gpus\": [0, 1],"
                         " \"resources_per_trial\": {\"gpu\": 1}}");
    tune_study_set_objective(p.study, obj_placed, &p, NULL);
    ck_assert_int_eq(tune_study_run(p.study, NULL), TUNE_OK);
    ck_assert_int_eq(atomic_load(&p.most), 2);
    ck_assert_int_eq(p.bad_gpu, 0);
    ck_assert_ptr_nonnull(p.table);
    /* The device column sits after status; RUNNING sets the status column's
     * width unless a finished best trial (TERMINATED) is shown too. */
    ck_assert_msg(strstr(p.table, "| trial | status  | device |") ||
                      strstr(p.table, "| trial | status     | device |"),
                  "%s", p.table);
    ck_assert_msg(
        (strstr(p.table, "| RUNNING | cuda:0 |") && strstr(p.table, "| RUNNING | cuda:1 |")) ||
            (strstr(p.table, "| RUNNING    | cuda:0 |") &&
             strstr(p.table, "| RUNNING    | cuda:1 |")),
        "%s", p.table);
    tune_free(p.table);
    tune_study_free(p.study);
}
END_TEST

static Suite *study_suite(void)
{
    Suite *s = suite_create("study");
    TCase *tc = tcase_create("controller");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, fifo_all_terminate);
    tcase_add_test(tc, retry_then_succeed);
    tcase_add_test(tc, errors_do_not_stop_the_sweep);
    tcase_add_test(tc, nan_is_worst_and_never_best);
    tcase_add_test(tc, stop_training_iteration_and_threshold);
    tcase_add_test(tc, same_seed_same_configs_any_concurrency);
    tcase_add_test(tc, request_stop_interrupts);
    tcase_add_test(tc, store_run_reopened);
    tcase_add_test(tc, no_objective_is_a_config_error);
    tcase_add_test(tc, interrupted_sweep_resumes);
    tcase_add_test(tc, process_isolation_contains_crashes_and_hangs);
    tcase_add_test(tc, thread_timeout_at_next_report);
    tcase_add_test(tc, errors_carry_details);
    tcase_add_test(tc, duplicate_metric_refused);
    tcase_add_test(tc, resume_errored_retries_error_trials);
    tcase_add_test(tc, one_controller_per_folder);
    tcase_add_test(tc, gpu_placement_bounds_concurrency);
    tcase_add_test(tc, nsga2_gets_every_objective);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(study_suite)
