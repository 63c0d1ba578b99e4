/*
 * test_options.c - studies configured with tune_options instead of JSON
 * (tune_study_new()): the defaults, every option landing on the same config
 * as its JSON key, the checks and messages shared with the config parser,
 * the space borrowed, ASHA, a rerun into the same folder resuming, and
 * several objectives (metrics, modes, num_metrics) as the "metric" and
 * "mode" lists, with errors that name those fields.
 */
#include <math.h>

#include "check_util.h"
#include "schedulers/asha.h"
#include "engine/study.h"
#include "tune.h"

static tune_space *small_space(void)
{
    tune_space *sp = NULL;
    const char *acts[] = {"relu", "gelu"};
    ck_assert_int_eq(tune_space_new(&sp, NULL), TUNE_OK);
    ck_assert_int_eq(tune_space_add_uniform(sp, "x", 0, 1, NULL), TUNE_OK);
    ck_assert_int_eq(tune_space_add_choice_string(sp, "act", acts, 2, NULL), TUNE_OK);
    return sp;
}

/* Reports x + it / 100 for `iterations` iterations (9 unless ud says otherwise). */
static tune_status objective(tune_trial *t, void *ud)
{
    int iterations = ud ? *(int *)ud : 9;
    double x = tune_trial_get_double_or(t, "x", 0);
    for (int it = 1; it <= iterations; it++) {
        tune_status st = tune_trial_report_metric(t, "score", x + it / 100.0, NULL);
        if (st)
            return st == TUNE_ESTOP ? TUNE_OK : st;
    }
    return TUNE_OK;
}

START_TEST(defaults)
{
    tune_options o;
    memset(&o, 0x5a, sizeof o);
    tune_options_default(&o);
    ck_assert_ptr_null(o.name);
    ck_assert_ptr_null(o.metric);
    ck_assert_ptr_null(o.storage);
    ck_assert_int_eq(o.mode, TUNE_MODE_MAX);
    ck_assert_int_eq(o.num_samples, 1);
    ck_assert_int_eq(o.seed, -1);
    ck_assert_int_eq(o.max_concurrent_trials, 0);
    ck_assert_int_eq(o.max_failures, 0);
    ck_assert_int_eq(o.isolation, TUNE_ISOLATION_THREAD);
    ck_assert_double_eq(o.trial_timeout_s, 0);
    ck_assert_int_eq(o.checkpoint_frequency, 0);
    ck_assert_int_eq(o.fail_fast, 0);
    ck_assert_int_eq(o.scheduler, TUNE_SCHEDULER_FIFO);
    /* Ray's AsyncHyperBandScheduler defaults. */
    ck_assert_double_eq(o.asha.max_t, 100);
    ck_assert_double_eq(o.asha.grace_period, 1);
    ck_assert_double_eq(o.asha.reduction_factor, 4);
    ck_assert_int_eq(o.asha.brackets, 1);
    ck_assert_ptr_null(o.metrics);
    ck_assert_ptr_null(o.modes);
    ck_assert_uint_eq(o.num_metrics, 0);

    /* A study from the defaults is one from "{}". */
    tune_study *a = NULL, *b = NULL;
    tune_error err;
    ck_assert_int_eq(tune_study_new(&o, NULL, &a, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_new_from_json("{}", NULL, &b, &err), TUNE_OK);
    ck_assert_str_eq(tune_study_name(a), "experiment");
    ck_assert_str_eq(tune_study_storage(a), "tune_results/experiment");
    ck_assert_str_eq(a->cfg.json, b->cfg.json);
    ck_assert_int_eq(a->cfg.max_concurrent, b->cfg.max_concurrent);
    ck_assert_int_eq(a->cfg.seed_given, 0);
    ck_assert_ptr_eq(a->cfg.scheduler.type, b->cfg.scheduler.type);
    tune_study_free(a);
    tune_study_free(b);
}
END_TEST

START_TEST(every_option_is_its_key)
{
    tune_options o;
    tune_options_default(&o);
    o.name = "opts";
    o.metric = "score";
    o.mode = TUNE_MODE_MIN;
    o.num_samples = 7;
    o.seed = 11;
    o.max_concurrent_trials = 3;
    o.max_failures = -1;
    o.isolation = TUNE_ISOLATION_PROCESS;
    o.storage = ":memory:";
    o.trial_timeout_s = 2.5;
    o.checkpoint_frequency = 4;
    o.fail_fast = 1;
    o.scheduler = TUNE_SCHEDULER_ASHA;
    o.asha.max_t = 27;
    o.asha.grace_period = 3;
    o.asha.reduction_factor = 3;
    o.asha.brackets = 2;
    tune_space *sp = small_space();
    tune_study *a = NULL, *b = NULL;
    tune_error err;
    ck_assert_msg(tune_study_new(&o, sp, &a, &err) == TUNE_OK, "%s", err.text);
    /* The space is borrowed: still the caller's, and copied. */
    ck_assert_int_eq(tune_space_size(sp), 2);
    ck_assert_ptr_ne(a->cfg.space, sp);
    ck_assert_int_eq(tune_space_add_uniform(sp, "y", 0, 1, NULL), TUNE_OK);
    ck_assert_int_eq(tune_space_size(a->cfg.space), 2);
    tune_space_free(sp);

    const char *json = "{\"name\": \"opts\", \"metric\": \"score\", \"mode\": \"min\","
                       " \"num_samples\": 7, \"seed\": 11, \"max_concurrent_trials\": 3,"
                       " \"max_failures\": -1, \"isolation\": \"process\","
                       " \"storage\": \":memory:\", \"trial_timeout_s\": 2.5,"
                       " \"checkpoint_frequency\": 4, \"fail_fast\": true,"
                       " \"scheduler\": {\"type\": \"asha\","
                       " \"max_t\": 27, \"grace_period\": 3, \"reduction_factor\": 3,"
                       " \"brackets\": 2}}";
    ck_assert_int_eq(tune_study_new_with_space_take(json, small_space(), &b, &err), TUNE_OK);
    /* The stored config is the same JSON, so either program resumes the other's folder. */
    ck_assert_str_eq(a->cfg.json, b->cfg.json);
    ck_assert_str_eq(a->cfg.name, "opts");
    ck_assert_str_eq(a->cfg.metric, "score");
    ck_assert_int_eq(a->cfg.mode_max, 0);
    ck_assert_int_eq(a->cfg.num_samples, 7);
    ck_assert_int_eq(a->cfg.seed, 11);
    ck_assert_int_eq(a->cfg.seed_given, 1);
    ck_assert_int_eq(a->cfg.max_concurrent, 3);
    ck_assert_int_eq(a->cfg.max_failures, -1);
    ck_assert_int_eq(a->cfg.isolation_process, 1);
    ck_assert_str_eq(a->cfg.storage, ":memory:");
    ck_assert_double_eq(a->cfg.trial_timeout_s, 2.5);
    ck_assert_int_eq(a->cfg.checkpoint_frequency, 4);
    ck_assert_int_eq(a->cfg.fail_fast, 1);
    ck_assert_ptr_eq(a->cfg.scheduler.type, b->cfg.scheduler.type);
    const struct tunep_asha_config *asha_a = a->cfg.scheduler.cfg, *asha_b = b->cfg.scheduler.cfg;
    ck_assert(memcmp(asha_a, asha_b, sizeof *asha_a) == 0);
    ck_assert_double_eq(asha_a->max_t, 27);
    ck_assert_int_eq(asha_a->brackets, 2);
    tune_study_free(a);
    tune_study_free(b);
}
END_TEST

/* tune_study_new(o) fails with code and exactly this message, leaving *ret_study alone. */
static void check_error(const tune_options *o, tune_status code, const char *text)
{
    tune_space *sp = small_space();
    tune_study *s = (tune_study *)&code;
    tune_error err;
    ck_assert_int_eq(tune_study_new(o, sp, &s, &err), code);
    ck_assert_ptr_eq(s, (tune_study *)&code);
    ck_assert_int_eq(err.code, code);
    ck_assert_str_eq(err.text, text);
    if (code == TUNE_ECONFIG) {
        ck_assert_str_eq(err.source, "<options>");
        ck_assert_int_eq(err.line, 0);
    }
    /* The space is still the caller's. */
    ck_assert_int_eq(tune_space_size(sp), 2);
    tune_space_free(sp);
}

START_TEST(errors_name_the_option)
{
    tune_options o;
    tune_options_default(&o);
    o.num_samples = 0;
    check_error(&o, TUNE_ECONFIG, "num_samples: expected an integer in [1, 100000000], got 0");
    tune_options_default(&o);
    o.name = "a/b";
    check_error(&o, TUNE_ECONFIG,
                "name: expected letters, digits, '_', '-' or '.' (it names a folder)");
    tune_options_default(&o);
    o.metric = "";
    check_error(&o, TUNE_ECONFIG, "metric: expected a non-empty string of at most 128 bytes");
    tune_options_default(&o);
    o.metric = "acc\xff";
    check_error(&o, TUNE_ECONFIG, "metric: expected UTF-8 text");
    tune_options_default(&o);
    o.seed = -2;
    check_error(&o, TUNE_ECONFIG, "seed: expected an integer in [0, 9223372036854775807], got -2");
    tune_options_default(&o);
    o.max_concurrent_trials = 5000;
    check_error(&o, TUNE_ECONFIG,
                "max_concurrent_trials: expected an integer in [1, 4096], got 5000");
    tune_options_default(&o);
    o.trial_timeout_s = (double)NAN;
    check_error(&o, TUNE_ECONFIG, "trial_timeout_s: expected a finite number");
    tune_options_default(&o);
    o.checkpoint_frequency = -1;
    check_error(&o, TUNE_ECONFIG,
                "checkpoint_frequency: expected an integer in [0, 9223372036854775807], got -1");
    tune_options_default(&o);
    o.scheduler = TUNE_SCHEDULER_ASHA;
    o.asha.grace_period = 200;
    check_error(&o, TUNE_ECONFIG, "scheduler.grace_period: must be <= max_t (100)");
    tune_options_default(&o);
    o.asha.max_t = 20;
    check_error(&o, TUNE_ECONFIG, "asha: set, but the scheduler is not TUNE_SCHEDULER_ASHA");
    tune_options_default(&o);
    o.mode = (tune_mode)7;
    check_error(&o, TUNE_EINVAL, "mode: not a value of its enum");
    tune_options_default(&o);
    o.isolation = TUNE_ISOLATION_COUNT;
    check_error(&o, TUNE_EINVAL, "isolation: not a value of its enum");
    tune_options_default(&o);
    o.scheduler = TUNE_SCHEDULER_TYPE_COUNT;
    check_error(&o, TUNE_EINVAL, "scheduler: not a value of its enum");
    check_error(NULL, TUNE_EINVAL, "options and ret_study must not be NULL");
}
END_TEST

START_TEST(asha_runs_as_from_json)
{
    tune_options o;
    tune_options_default(&o);
    o.metric = "score";
    o.num_samples = 12;
    o.seed = 5;
    o.max_concurrent_trials = 1;
    o.storage = ":memory:";
    o.scheduler = TUNE_SCHEDULER_ASHA;
    o.asha.max_t = 9;
    o.asha.reduction_factor = 3;
    tune_space *sp = small_space();
    tune_study *a = NULL, *b = NULL;
    tune_error err;
    ck_assert_int_eq(tune_study_new(&o, sp, &a, &err), TUNE_OK);
    ck_assert_int_eq(
        tune_study_new_with_space_take("{\"metric\": \"score\", \"num_samples\": 12, \"seed\": 5,"
                                       " \"max_concurrent_trials\": 1, \"storage\": \":memory:\","
                                       " \"scheduler\": {\"type\": \"asha\", \"max_t\": 9,"
                                       " \"reduction_factor\": 3}}",
                                       sp, &b, &err),
        TUNE_OK);
    int64_t ca[TUNE_TRIAL_STATUS_COUNT], cb[TUNE_TRIAL_STATUS_COUNT];
    tune_study *studies[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(tune_study_set_objective(studies[i], objective, NULL, &err), TUNE_OK);
        ck_assert_int_eq(tune_study_run(studies[i], &err), TUNE_OK);
    }
    tune_study_counts(a, ca);
    tune_study_counts(b, cb);
    /* ASHA stopped some trials, the same ones either way. */
    ck_assert_int_gt(ca[TUNE_TRIAL_STOPPED], 0);
    for (int i = 0; i < TUNE_TRIAL_STATUS_COUNT; i++)
        ck_assert_int_eq(ca[i], cb[i]);
    tune_result *ra = NULL, *rb = NULL;
    ck_assert_int_eq(tune_study_best(a, &ra, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_best(b, &rb, &err), TUNE_OK);
    ck_assert_int_eq(tune_result_trial_id(ra), tune_result_trial_id(rb));
    tune_result_free(ra);
    tune_result_free(rb);
    tune_study_free(a);
    tune_study_free(b);
}
END_TEST

static tune_status counting_objective(tune_trial *t, void *ud)
{
    __atomic_add_fetch((int *)ud, 1, __ATOMIC_SEQ_CST);
    return objective(t, NULL);
}

START_TEST(rerun_resumes)
{
    char *dir = tune_test_mkdtemp();
    char storage[1100];
    snprintf(storage, sizeof storage, "%s/exp", dir);
    tune_options o;
    tune_options_default(&o);
    o.metric = "score";
    o.num_samples = 6;
    o.seed = 1;
    o.max_concurrent_trials = 2;
    o.storage = storage;
    tune_space *sp = small_space();
    int calls = 0;
    tune_study *s = NULL;
    tune_error err;
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            /* Without TUNE_RESUME_EXISTING the finished experiment is not reused. */
            ck_assert_int_eq(tune_study_new(&o, sp, &s, &err), TUNE_OK);
            ck_assert_int_eq(tune_study_set_objective(s, counting_objective, &calls, &err),
                             TUNE_OK);
            ck_assert_int_eq(tune_study_run(s, &err), TUNE_EEXIST);
            ck_assert_ptr_nonnull(strstr(err.text, "tune resume"));
            tune_study_free(s);
            ck_assert_int_eq(calls, 6);
        }
        ck_assert_int_eq(tune_study_new(&o, sp, &s, &err), TUNE_OK);
        ck_assert_int_eq(tune_study_set_objective(s, counting_objective, &calls, &err), TUNE_OK);
        ck_assert_int_eq(tune_study_set_resume_flags(s, TUNE_RESUME_EXISTING, &err), TUNE_OK);
        ck_assert_msg(tune_study_run(s, &err) == TUNE_OK, "%s", err.text);
        int64_t c[TUNE_TRIAL_STATUS_COUNT];
        tune_study_counts(s, c);
        ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 6);
        tune_study_free(s);
        /* The second run found everything finished. */
        ck_assert_int_eq(calls, 6);
    }
    o.num_samples = 7;
    ck_assert_int_eq(tune_study_new(&o, sp, &s, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_set_objective(s, counting_objective, &calls, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_set_resume_flags(s, TUNE_RESUME_EXISTING, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.text, "another config"));
    tune_study_free(s);
    tune_space_free(sp);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

static const char *const two_metrics[] = {"acc", "latency"};
static const tune_mode two_modes[] = {TUNE_MODE_MAX, TUNE_MODE_MIN};

START_TEST(objective_lists)
{
    tune_options o;
    tune_options_default(&o);
    o.metric = "score"; /* ignored: the lists override metric and mode */
    o.mode = TUNE_MODE_MIN;
    o.metrics = two_metrics;
    o.modes = two_modes;
    o.num_metrics = 2;
    tune_study *a = NULL, *b = NULL;
    tune_error err;
    ck_assert_msg(tune_study_new(&o, NULL, &a, &err) == TUNE_OK, "%s", err.text);
    ck_assert_int_eq(tune_study_new_from_json("{\"metric\": [\"acc\", \"latency\"],"
                                              " \"mode\": [\"max\", \"min\"]}",
                                              NULL, &b, &err),
                     TUNE_OK);
    ck_assert_str_eq(a->cfg.json, b->cfg.json);
    ck_assert_uint_eq(a->cfg.n_objectives, 2);
    ck_assert_str_eq(a->cfg.objectives[0], "acc");
    ck_assert_str_eq(a->cfg.objectives[1], "latency");
    ck_assert_int_eq(a->cfg.objectives_max[0], 1);
    ck_assert_int_eq(a->cfg.objectives_max[1], 0);
    ck_assert_str_eq(a->cfg.metric, "acc");
    ck_assert_uint_eq(tune_study_objective_count(a), 2);
    tune_study_free(a);
    tune_study_free(b);

    /* One objective: the same study as metric and mode. */
    static const tune_mode min[] = {TUNE_MODE_MIN};
    o.metrics = two_metrics + 1;
    o.modes = min;
    o.num_metrics = 1;
    ck_assert_int_eq(tune_study_new(&o, NULL, &a, &err), TUNE_OK);
    tune_options_default(&o);
    o.metric = "latency";
    o.mode = TUNE_MODE_MIN;
    ck_assert_int_eq(tune_study_new(&o, NULL, &b, &err), TUNE_OK);
    ck_assert_str_eq(a->cfg.json, b->cfg.json);
    ck_assert_uint_eq(a->cfg.n_objectives, 1);
    tune_study_free(a);
    tune_study_free(b);
}
END_TEST

START_TEST(objective_list_errors)
{
    tune_options o;
    const char *dup[] = {"acc", "acc"}, *reserved[] = {"acc", "training_iteration"};
    const char *empty[] = {""}, *bad_utf8[] = {"acc", "lat\xff"}, *with_null[] = {"acc", NULL};
    const char *many[17];
    tune_mode modes[17], bad_mode[] = {TUNE_MODE_MAX, (tune_mode)9};
    for (int i = 0; i < 17; i++) {
        many[i] = "m";
        modes[i] = TUNE_MODE_MAX;
    }
    tune_options_default(&o);
    o.metrics = dup, o.modes = two_modes, o.num_metrics = 2;
    check_error(&o, TUNE_ECONFIG, "metrics[1]: 'acc' is already an objective");
    o.metrics = reserved;
    check_error(&o, TUNE_ECONFIG,
                "metrics[1]: 'training_iteration' is a column the engine fills in: no trial can "
                "report it");
    o.metrics = bad_utf8;
    check_error(&o, TUNE_ECONFIG, "metrics[1]: expected UTF-8 text");
    o.metrics = empty, o.num_metrics = 1;
    check_error(&o, TUNE_ECONFIG, "metrics[0]: expected a non-empty string of at most 128 bytes");
    o.metrics = many, o.modes = modes, o.num_metrics = 17;
    check_error(&o, TUNE_ECONFIG, "metrics: expected a list of 1 to 16 metric names, got 17");
    o.metrics = two_metrics, o.modes = two_modes, o.num_metrics = 2;
    o.scheduler = TUNE_SCHEDULER_ASHA; /* a rule of the config, named as there */
    check_error(&o, TUNE_ECONFIG,
                "scheduler.type: the ASHA scheduler compares trials by one metric, and \"metric\" "
                "lists 2: use the fifo scheduler, or one metric");
    tune_options_default(&o);
    o.metrics = NULL, o.modes = two_modes, o.num_metrics = 2;
    check_error(&o, TUNE_EINVAL, "metrics: NULL, with num_metrics 2");
    o.metrics = two_metrics, o.modes = NULL;
    check_error(&o, TUNE_EINVAL, "modes: NULL, with num_metrics 2");
    o.metrics = with_null, o.modes = two_modes;
    check_error(&o, TUNE_EINVAL, "metrics[1]: NULL");
    o.metrics = two_metrics, o.modes = bad_mode;
    check_error(&o, TUNE_EINVAL, "modes[1]: not a value of its enum");
}
END_TEST

static Suite *options_suite(void)
{
    Suite *s = suite_create("options");
    TCase *tc = tcase_create("options");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, defaults);
    tcase_add_test(tc, every_option_is_its_key);
    tcase_add_test(tc, errors_name_the_option);
    tcase_add_test(tc, asha_runs_as_from_json);
    tcase_add_test(tc, rerun_resumes);
    tcase_add_test(tc, objective_lists);
    tcase_add_test(tc, objective_list_errors);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(options_suite)
