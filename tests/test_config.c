/*
 * test_config.c - the top-level config keys: defaults, every error with its
 * exact line, column and message (jansson's check_error style), unknown keys
 * with a suggestion, files that are missing, empty or not JSON.
 */
#include "check_util.h"
#include "tune.h"

struct bad_case {
    const char *json;
    int line, column;
    const char *text; /* exact */
};

static const struct bad_case bad[] = {
    {"{\"nmae\": \"x\"}", 1, 2, "nmae: unknown key (did you mean 'name'?)"},
    {"{\n  \"metric\": \"acc\",\n  \"mode\": \"maximize\"\n}", 3, 11,
     "mode: expected \"max\" or \"min\""},
    {"{\"num_samples\": 0}", 1, 17, "num_samples: expected an integer in [1, 100000000], got 0"},
    {"{\"num_samples\": 2.5}", 1, 17, "num_samples: expected an integer"},
    {"{\"seed\": -1}", 1, 10, "seed: expected an integer in [0, 9223372036854775807], got -1"},
    {"{\"max_concurrent_trials\": \"4\"}", 1, 27, "max_concurrent_trials: expected an integer"},
    {"{\"name\": \"a/b\"}", 1, 10,
     "name: expected letters, digits, '_', '-' or '.' (it names a folder)"},
    {"{\"search\": {\"algorithm\": \"tpe2\"}}", 1, 26,
     "search.algorithm: unknown search algorithm 'tpe2' (expected \"random\", \"grid\", \"tpe\", "
     "\"gp\", \"sobol\", \"lhs\", \"bohb\" or \"nsga2\")"},
    {"{\"search\": {\"algorithm\": 3}}", 1, 26,
     "search.algorithm: expected \"random\", \"grid\", \"tpe\", \"gp\", \"sobol\", \"lhs\", "
     "\"bohb\" or \"nsga2\""},
    {"{\"search\": {\"algoritm\": \"grid\"}}", 1, 13,
     "search.algoritm: unknown key (did you mean 'algorithm'?)"},
    {"{\"search\": {\"algorithm\": \"tpe\", \"xi\": 0.1}}", 1, 33,
     "search.xi: not an option of search algorithm \"tpe\""},
    {"{\"search\": {\"algorithm\": \"tpe\", \"gamma\": 0}}", 1, 42,
     "search.gamma: expected a number > 0 and <= 1"},
    {"{\"search\": {\"algorithm\": \"gp\"}, \"param_space\": {\"a\": {\"grid_search\": [1, 2]}}}",
     1, 26,
     "search.algorithm: search algorithm \"gp\" cannot search the grid_search axis 'a': use "
     "choice, or search \"random\" or \"grid\""},
    {"{\"resources_per_trial\": {\"gpu\": 1.5}}", 1, 33,
     "resources_per_trial.gpu: expected a share of one GPU (0 to 1) or a whole number of GPUs, got "
     "1.5"},
    {"{\"resources_per_trial\": {\"cpus\": 2}}", 1, 26,
     "resources_per_trial.cpus: unknown key (did you mean 'cpu'?)"},
    {"{\"checkpoint_frequency\": -1}", 1, 26,
     "checkpoint_frequency: expected an integer in [0, 9223372036854775807], got -1"},
    {"{\"trainer\": {\"type\": \"bert2\"}}", 1, 22,
     "trainer.type: unknown trainer type 'bert2' (expected \"synthetic\", \"bert\", \"command\" or "
     "\"plugin\")"},
    {"{\"trainer\": {\"type\": \"synthetic\", \"sleep\": 1}}", 1, 35,
     "trainer.sleep: unknown key (did you mean 'sleep_s'?)"},
    {"{\"trainer\": {\"type\": \"synthetic\", \"fail_prob\": 2}}", 1, 48,
     "trainer.fail_prob: expected a number in [0, 1], got 2"},
    {"{\"stop\": {\"training_iteration\": 0}}", 1, 33,
     "stop.training_iteration: expected an integer in [1, 9223372036854775807], got 0"},
    {"{\"stop\": {\"val_accuracy\": \"high\"}}", 1, 27, "stop.val_accuracy: expected a number"},
    {"{\"max_failures\": -2}", 1, 18, "max_failures: expected an integer in [-1, 1000000], got -2"},
    {"{\"metric\": [\"a\", \"b\"], \"mode\": \"max\"}", 1, 32,
     "mode: expected a list of 2 modes (\"max\" or \"min\"), one per metric"},
    {"{\"metric\": [\"a\", \"b\"], \"mode\": [\"max\"]}", 1, 32,
     "mode: expected 2 modes, one per metric, got 1"},
    {"{\"metric\": [\"a\", \"b\"]}", 1, 12,
     "metric: 2 metrics need \"mode\": a list of 2 modes (\"max\" or \"min\")"},
    {"{\"metric\": [\"a\", \"a\"], \"mode\": [\"max\", \"min\"]}", 1, 18,
     "metric[1]: 'a' is already an objective"},
    {"{\"metric\": [\"a\", \"b\"], \"mode\": [\"max\", \"down\"]}", 1, 40,
     "mode[1]: expected \"max\" or \"min\""},
    {"{\"metric\": []}", 1, 12, "metric: expected a list of 1 to 16 metric names, got 0"},
    {"{\"metric\": 3}", 1, 12, "metric: expected a metric name or a list of names"},
    {"{\"metric\": [\"a\", \"training_iteration\"], \"mode\": [\"max\", \"min\"]}", 1, 18,
     "metric[1]: 'training_iteration' is a column the engine fills in: no trial can report it"},
    {"{\"metric\": [\"a\", \"b\"], \"mode\": [\"max\", \"min\"], \"search\": {\"algorithm\": "
     "\"gp\"}}",
     1, 72,
     "search.algorithm: search algorithm \"gp\" optimises one metric, and \"metric\" lists 2: "
     "use \"tpe\", \"nsga2\", \"random\" or \"grid\""},
    {"{\"search\": {\"algorithm\": \"tpe\", \"weights_below\": \"flat\"}}", 1, 50,
     "search.weights_below: expected \"hypervolume\" or \"uniform\""},
    {"{\"search\": {\"algorithm\": \"nsga2\", \"weights_below\": \"uniform\"}}", 1, 35,
     "search.weights_below: not an option of search algorithm \"nsga2\""},
    {"{\"metric\": [\"a\", \"b\"], \"mode\": [\"max\", \"min\"], \"scheduler\": {\"type\": "
     "\"asha\"}}",
     1, 70,
     "scheduler.type: the ASHA scheduler compares trials by one metric, and \"metric\" lists 2: "
     "use the fifo scheduler, or one metric"},
    {"{\"search\": {\"algorithm\": \"nsga2\", \"population_size\": 1}}", 1, 54,
     "search.population_size: expected an integer from 2 to 100000"},
    {"{\"search\": {\"algorithm\": \"nsga2\", \"swapping_prob\": 1.5}}", 1, 52,
     "search.swapping_prob: expected a number >= 0 and <= 1"},
    {"[1, 2]", 1, 1, "expected a JSON object at the top level"},
    {"{\"name\": \"a\",}", 1, 14, "string or '}' expected near '}'"},
    {"{\"name\": \"a\", \"name\": \"b\"}", 1, 20, "duplicate object key near '\"name\"'"},
    {"{\"scheduler\": {\"type\": \"asha\", \"grace_period\": 5}, \"stop\": "
     "{\"training_iteration\": "
     "3}}",
     1, 83,
     "stop.training_iteration: stops every trial before ASHA's grace_period of 5 iterations"},
};

START_TEST(bad_configs)
{
    const struct bad_case *c = &bad[_i];
    tune_study *s = NULL;
    tune_error err;
    tune_status st = tune_study_new_from_json(c->json, "config.json", &s, &err);
    ck_assert_int_eq(st, TUNE_ECONFIG);
    ck_assert_ptr_null(s);
    ck_assert_str_eq(err.source, "config.json");
    ck_assert_msg(err.line == c->line && err.column == c->column,
                  "case %d: got %d:%d, want %d:%d (%s)", _i, err.line, err.column, c->line,
                  c->column, err.text);
    ck_assert_str_eq(err.text, c->text);
}
END_TEST

START_TEST(defaults)
{
    tune_study *s = NULL;
    tune_error err;
    ck_assert_int_eq(tune_study_new_from_json("{}", NULL, &s, &err), TUNE_OK);
    ck_assert_str_eq(tune_study_name(s), "experiment");
    ck_assert_str_eq(tune_study_storage(s), "tune_results/experiment");
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_PENDING], 1); /* num_samples 1 */
    tune_study_free(s);
}
END_TEST

START_TEST(files)
{
    tune_study *s = NULL;
    tune_error err;
    char buf[600];
    ck_assert_int_eq(tune_study_new_from_file("/nonexistent/c.json", &s, &err), TUNE_ENOTFOUND);
    ck_assert_str_eq(tune_error_format(&err, buf, sizeof buf),
                     "/nonexistent/c.json: cannot open: No such file or directory");
    char *dir = tune_test_mkdtemp();
    char path[256];
    snprintf(path, sizeof path, "%s/empty.json", dir);
    FILE *f = fopen(path, "w");
    fputs("  \n", f);
    fclose(f);
    ck_assert_int_eq(tune_study_new_from_file(path, &s, &err), TUNE_ECONFIG);
    ck_assert_str_eq(err.text, "empty file (expected a JSON object)");
    ck_assert_str_eq(err.source, path);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(grid_times_samples)
{
    tune_study *s = NULL;
    tune_error err;
    ck_assert_int_eq(
        tune_study_new_from_json(
            "{\"num_samples\": 3, \"param_space\": {\"a\": {\"grid_search\": [1, 2]},"
            " \"b\": {\"grid_search\": [\"x\", \"y\", \"z\"]}, \"c\": {\"choice\": [1, 2]}}}",
            NULL, &s, &err),
        TUNE_OK);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_PENDING], 18);
    tune_study_free(s);
    /* The grid algorithm expands choices too. */
    ck_assert_int_eq(
        tune_study_new_from_json(
            "{\"num_samples\": 3, \"search\": {\"algorithm\": \"grid\"}, \"param_space\":"
            " {\"a\": {\"grid_search\": [1, 2]}, \"c\": {\"choice\": [1, 2]}}}",
            NULL, &s, &err),
        TUNE_OK);
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_PENDING], 12);
    tune_study_free(s);
}
END_TEST

START_TEST(space_in_code_excludes_param_space)
{
    tune_space *sp = NULL;
    tune_study *s = NULL;
    tune_error err;
    ck_assert_int_eq(tune_space_new(&sp, &err), TUNE_OK);
    ck_assert_int_eq(tune_space_add_uniform(sp, "x", 0, 1, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_new_with_space_take("{\"param_space\": {}}", sp, &s, &err),
                     TUNE_ECONFIG);
    ck_assert_str_eq(err.text, "param_space: not allowed when the space is built in code");
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("errors");
    tcase_add_loop_test(tc, bad_configs, 0, (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, defaults);
    tcase_add_test(tc, files);
    tcase_add_test(tc, grid_times_samples);
    tcase_add_test(tc, space_in_code_excludes_param_space);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(config_suite)
