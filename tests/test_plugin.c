/*
 * test_plugin.c - trainer "type": "plugin": objectives loaded with dlopen
 * from tests/plugin_fixture.c (built as libtune_test_plugin.so).
 *
 * Checks the exact errors for a missing library, a missing symbol and a bad
 * symbol name (TUNE_ECONFIG at the key's line and column, at study creation,
 * so before anything is written), that user_data is the "data" text without
 * an init function and init's result with one, that fini runs exactly once,
 * that a failing init stops the run before the experiment folder exists, and
 * that a plugin's failed attempts are retried like any objective's.
 */
#include <dlfcn.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include "check_util.h"
#include "tune.h"

/* The fixture library's absolute path (meson test sets TUNE_BUILD_ROOT). */
static const char *fixture_path(void)
{
    static char path[4096];
    const char *root = getenv("TUNE_BUILD_ROOT");
    ck_assert_msg(root != NULL, "TUNE_BUILD_ROOT is not set (run through meson test)");
    snprintf(path, sizeof path, "%s/tests/libtune_test_plugin.so", root);
    return path;
}

/* A config around a trainer object; x is a grid of 0, 1, 2 so results are known. */
static char *config_with(const char *trainer, const char *storage)
{
    static char buf[16384];
    snprintf(buf, sizeof buf,
             "{\"name\": \"plugin\", \"metric\": \"val_accuracy\", \"seed\": 3,\n"
             " \"max_concurrent_trials\": 2, \"storage\": \"%s\",\n"
             " \"param_space\": {\"x\": {\"grid_search\": [0, 1, 2]}},\n"
             " \"trainer\": %s}\n",
             storage, trainer);
    return buf;
}

/* Creating the study fails; returns the error. */
static tune_error creation_error(const char *json)
{
    tune_study *s = NULL;
    tune_error err;
    memset(&err, 0, sizeof err);
    tune_status st = tune_study_new_from_json(json, "plugin.json", &s, &err);
    ck_assert_int_eq(st, TUNE_ECONFIG);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(err.code, TUNE_ECONFIG);
    ck_assert_str_eq(err.source, "plugin.json");
    return err;
}

START_TEST(missing_library_is_a_config_error)
{
    char trainer[512];
    snprintf(trainer, sizeof trainer,
             "{\"type\": \"plugin\", \"library\": \"/nonexistent/libnope.so\", \"symbol\": \"f\"}");
    tune_error err = creation_error(config_with(trainer, ":memory:"));
    /* The library's value: line 4, after `"trainer": {"type": "plugin", "library": `. */
    ck_assert_int_eq(err.line, 4);
    ck_assert_int_eq(err.column, 43);
    ck_assert_str_eq(err.text, "trainer.library: cannot load '/nonexistent/libnope.so': cannot "
                               "open shared object file: No such file or directory");
}
END_TEST

START_TEST(missing_symbols_are_config_errors)
{
    const char *lib = fixture_path();
    char trainer[4600], want[4800];
    snprintf(trainer, sizeof trainer,
             "{\"type\": \"plugin\", \"library\": \"%s\",\n  \"symbol\": \"no_such_fn\"}", lib);
    tune_error err = creation_error(config_with(trainer, ":memory:"));
    ck_assert_int_eq(err.line, 5);
    ck_assert_int_eq(err.column, 13);
    snprintf(want, sizeof want,
             "trainer.symbol: 'no_such_fn' is not in '%s' (undefined symbol: no_such_fn)", lib);
    ck_assert_str_eq(err.text, want);

    snprintf(trainer, sizeof trainer,
             "{\"type\": \"plugin\", \"library\": \"%s\", \"symbol\": \"fixture_objective\",\n"
             "  \"init_symbol\": \"fixture_init\", \"fini_symbol\": \"no_fini\"}",
             lib);
    err = creation_error(config_with(trainer, ":memory:"));
    ck_assert_int_eq(err.line, 5);
    ck_assert_int_eq(err.column, 49);
    snprintf(want, sizeof want,
             "trainer.fini_symbol: 'no_fini' is not in '%s' (undefined symbol: no_fini)", lib);
    ck_assert_str_eq(err.text, want);
}
END_TEST

START_TEST(bad_keys_are_config_errors)
{
    tune_error err = creation_error(config_with(
        "{\"type\": \"plugin\", \"library\": \"x.so\", \"symbol\": \"my objective\"}", ":memory:"));
    ck_assert_int_eq(err.line, 4);
    ck_assert_int_eq(err.column, 61);
    ck_assert_str_eq(err.text, "trainer.symbol: expected a C identifier (the function's name)");

    err = creation_error(config_with("{\"type\": \"plugin\", \"symbol\": \"f\"}", ":memory:"));
    ck_assert_int_eq(err.line, 4);
    ck_assert_int_eq(err.column, 13);
    ck_assert_str_eq(
        err.text, "trainer: missing key 'library' (a shared library, e.g. \"./libobjective.so\")");

    err = creation_error(config_with(
        "{\"type\": \"plugin\", \"library\": \"x.so\", \"symbol\": \"f\", \"init\": \"g\"}",
        ":memory:"));
    ck_assert_int_eq(err.line, 4);
    ck_assert_int_eq(err.column, 66);
    ck_assert_str_eq(err.text, "trainer.init: unknown key (expected one of: type, library, "
                               "symbol, init_symbol, fini_symbol, data)");
}
END_TEST

static tune_study *run_ok(const char *json)
{
    tune_study *s = NULL;
    tune_error err;
    tune_status st = tune_study_new_from_json(json, NULL, &s, &err);
    ck_assert_msg(st == TUNE_OK, "config: %d:%d: %s", err.line, err.column, err.text);
    st = tune_study_run(s, &err);
    ck_assert_msg(st == TUNE_OK, "run: %s", err.text);
    return s;
}

/* The best trial's JSON, for checking values. */
static char *best_of(tune_study *s)
{
    char *best = NULL;
    ck_assert_int_eq(tune_study_best_json(s, &best, NULL), TUNE_OK);
    return best;
}

/* One column of the study's results.csv, the rows joined by ',' (static buffer). */
static const char *results_column(tune_study *s, const char *column)
{
    static char out[1024];
    char path[4200];
    snprintf(path, sizeof path, "%s/results.csv", tune_study_storage(s));
    char *text = tune_test_slurp(path);
    ck_assert_ptr_nonnull(text);
    out[0] = '\0';
    int col = -1, row = 0;
    for (char *line = strtok(text, "\r\n"); line; line = strtok(NULL, "\r\n"), row++) {
        int i = 0;
        for (char *f = line, *comma;; f = comma + 1, i++) {
            comma = strchr(f, ',');
            size_t len = comma ? (size_t)(comma - f) : strlen(f);
            if (row == 0 && len == strlen(column) && strncmp(f, column, len) == 0)
                col = i;
            if (row > 0 && i == col)
                snprintf(out + strlen(out), sizeof out - strlen(out), "%s%.*s", row > 1 ? "," : "",
                         (int)len, f);
            if (!comma)
                break;
        }
    }
    ck_assert_msg(col >= 0, "no column %s", column);
    free(text);
    return out;
}

START_TEST(without_init_user_data_is_the_data_text)
{
    char *dir = tune_test_mkdtemp();
    char storage[4200], trainer[4600];
    snprintf(trainer, sizeof trainer,
             "{\"type\": \"plugin\", \"library\": \"%s\", \"symbol\": \"fixture_objective\","
             " \"data\": {\"a\": [1, 2], \"b\": \"text\"}}",
             fixture_path());
    snprintf(storage, sizeof storage, "%s/with-data", dir);
    tune_study *s = run_ok(config_with(trainer, storage));
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 3);
    /* data_len is strlen of the compact text {"a":[1,2],"b":"text"}: 22, in every trial. */
    ck_assert_str_eq(results_column(s, "data_len"), "22,22,22");
    ck_assert_str_eq(results_column(s, "val_accuracy"), "0,1,2");
    tune_study_free(s);

    /* No data at all: user_data is NULL (data_len -1). */
    snprintf(trainer, sizeof trainer,
             "{\"type\": \"plugin\", \"library\": \"%s\", \"symbol\": \"fixture_objective\"}",
             fixture_path());
    snprintf(storage, sizeof storage, "%s/without-data", dir);
    s = run_ok(config_with(trainer, storage));
    ck_assert_str_eq(results_column(s, "data_len"), "-1,-1,-1");
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(init_and_fini_wrap_the_run)
{
    /* Keep the library loaded ourselves, so its counter survives the study's dlclose. */
    void *h = dlopen(fixture_path(), RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
    int *fini_calls = dlsym(h, "fixture_fini_calls");
    ck_assert_ptr_nonnull(fini_calls);
    int before = *fini_calls;

    char trainer[4600];
    snprintf(trainer, sizeof trainer,
             "{\"type\": \"plugin\", \"library\": \"%s\", \"symbol\": \"fixture_objective_state\","
             " \"init_symbol\": \"fixture_init\", \"fini_symbol\": \"fixture_fini\","
             " \"data\": {\"offset\": 0.25}}",
             fixture_path());
    tune_study *s = run_ok(config_with(trainer, ":memory:"));
    char *best = best_of(s);
    /* x = 2 plus init's offset from "data". */
    ck_assert_msg(strstr(best, "\"val_accuracy\":2.25"), "best: %s", best);
    tune_free(best);
    ck_assert_int_eq(*fini_calls, before); /* fini runs when the study is freed */
    tune_study_free(s);
    ck_assert_int_eq(*fini_calls, before + 1);

    /* A study that never ran never called init, so fini is not owed. */
    tune_study *unused = NULL;
    ck_assert_int_eq(
        tune_study_new_from_json(config_with(trainer, ":memory:"), NULL, &unused, NULL), TUNE_OK);
    tune_study_free(unused);
    ck_assert_int_eq(*fini_calls, before + 1);
    dlclose(h);
}
END_TEST

START_TEST(failing_init_stops_before_anything_is_written)
{
    char *dir = tune_test_mkdtemp();
    char storage[4200], trainer[4600];
    snprintf(storage, sizeof storage, "%s/exp", dir);
    snprintf(trainer, sizeof trainer,
             "{\"type\": \"plugin\", \"library\": \"%s\", \"symbol\": \"fixture_objective_state\","
             " \"init_symbol\": \"fixture_init\", \"data\": [\"fail\"]}",
             fixture_path());
    tune_study *s = NULL;
    tune_error err;
    ck_assert_int_eq(tune_study_new_from_json(config_with(trainer, storage), NULL, &s, &err),
                     TUNE_OK);
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_ECONFIG);
    ck_assert_str_eq(err.text,
                     "trainer.init_symbol: 'fixture_init' failed: fixture refuses: fail requested");
    struct stat sb;
    ck_assert_int_ne(stat(storage, &sb), 0); /* no experiment folder */
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(plugin_failures_are_retried)
{
    char trainer[4600];
    snprintf(trainer, sizeof trainer,
             "{\"type\": \"plugin\", \"library\": \"%s\", \"symbol\": \"fixture_flaky\"}",
             fixture_path());
    char json[17000];
    /* max_failures 1: every trial succeeds on its second attempt. */
    snprintf(json, sizeof json, "%s", config_with(trainer, ":memory:"));
    char *end = strrchr(json, '}');
    snprintf(end, sizeof json - (size_t)(end - json), ", \"max_failures\": 1}");
    tune_study *s = run_ok(json);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 3);
    ck_assert_int_eq(c[TUNE_TRIAL_ERROR], 0);
    tune_study_free(s);

    /* max_failures 0: all end in ERROR, the sweep still finishes. */
    s = run_ok(config_with(trainer, ":memory:"));
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_ERROR], 3);
    tune_study_free(s);
}
END_TEST

/* The plugin's objective gets the GPUs the engine placed its trial on through
 * the trial API: the config's "gpus", or tune_set_gpus() over them. */
START_TEST(plugin_gets_its_gpu_through_the_trial_api)
{
    char *dir = tune_test_mkdtemp();
    char storage[4200], trainer[4600], json[17000];
    snprintf(trainer, sizeof trainer,
             "{\"type\": \"plugin\", \"library\": \"%s\", \"symbol\": \"fixture_gpu\"}",
             fixture_path());
    unsetenv("CUDA_VISIBLE_DEVICES");
    snprintf(storage, sizeof storage, "%s/config-gpus", dir);
    snprintf(json, sizeof json, "%s", config_with(trainer, storage));
    char *end = strrchr(json, '}');
    snprintf(end, sizeof json - (size_t)(end - json),
             ", \"gpus\": [3, 5], \"resources_per_trial\": {\"gpu\": 0.5}}");
    tune_study *s = run_ok(json);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 3);
    ck_assert_str_eq(results_column(s, "gpus"), "1,1,1");
    /* Each trial on one of the config's GPUs (ids as CUDA numbers them here). */
    const char *gpu = results_column(s, "gpu");
    for (const char *g = gpu; *g; g += g[1] ? 2 : 1)
        ck_assert_msg(*g == '3' || *g == '5', "%s", gpu);
    ck_assert_int_eq(strlen(gpu), 5);
    tune_study_free(s);

    /* tune_set_gpus() overrides the config: "1" is GPU 0 alone. */
    ck_assert_int_eq(tune_set_gpus("1", NULL), TUNE_OK);
    snprintf(storage, sizeof storage, "%s/set-gpus", dir);
    snprintf(json, sizeof json, "%s", config_with(trainer, storage));
    end = strrchr(json, '}');
    snprintf(end, sizeof json - (size_t)(end - json),
             ", \"gpus\": [3, 5], \"resources_per_trial\": {\"gpu\": 0.5}}");
    s = run_ok(json);
    ck_assert_str_eq(results_column(s, "gpu"), "0,0,0");
    tune_study_free(s);
    ck_assert_int_eq(tune_set_gpus(NULL, NULL), TUNE_OK);
    ck_assert_int_eq(tune_set_gpus("0,x", NULL), TUNE_EINVAL);

    /* Without "resources_per_trial" the trial holds no GPU. */
    snprintf(storage, sizeof storage, "%s/no-gpu", dir);
    s = run_ok(config_with(trainer, storage));
    ck_assert_str_eq(results_column(s, "gpu"), "-1,-1,-1");
    ck_assert_str_eq(results_column(s, "gpus"), "0,0,0");
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/* Study creation (what `tune validate` does) checks the library in a child:
 * none of its code runs in this process until the sweep starts. */
START_TEST(constructors_run_in_a_child_until_the_run)
{
    char trainer[4600];
    snprintf(trainer, sizeof trainer,
             "{\"type\": \"plugin\", \"library\": \"%s\", \"symbol\": \"fixture_objective\"}",
             fixture_path());
    tune_study *s = NULL;
    tune_error err;
    ck_assert_msg(tune_study_new_from_json(config_with(trainer, ":memory:"), NULL, &s, &err) ==
                      TUNE_OK,
                  "%s", err.text);
    ck_assert_ptr_null(dlopen(fixture_path(), RTLD_NOW | RTLD_NOLOAD));
    ck_assert_msg(tune_study_run(s, &err) == TUNE_OK, "%s", err.text);
    void *h = dlopen(fixture_path(), RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(h);
    dlclose(h);
    tune_study_free(s);
}
END_TEST

/* A constructor that crashes or exits fails the check, not this process. */
START_TEST(crashing_constructor_is_a_config_error)
{
    char trainer[4600], want[4800];
    snprintf(trainer, sizeof trainer,
             "{\"type\": \"plugin\", \"library\": \"%s\", \"symbol\": \"fixture_objective\"}",
             fixture_path());
    setenv("TUNE_TEST_PLUGIN_CTOR", "crash", 1);
    tune_error err = creation_error(config_with(trainer, ":memory:"));
    /* SIGSEGV; under AddressSanitizer (abort_on_error) the same crash ends in SIGABRT. */
    char want_abrt[4800];
    snprintf(want, sizeof want, "trainer.library: loading '%s' crashed (signal %d: %s)",
             fixture_path(), SIGSEGV, strsignal(SIGSEGV));
    snprintf(want_abrt, sizeof want_abrt, "trainer.library: loading '%s' crashed (signal %d: %s)",
             fixture_path(), SIGABRT, strsignal(SIGABRT));
    ck_assert_msg(strcmp(err.text, want) == 0 || strcmp(err.text, want_abrt) == 0, "%s", err.text);
    ck_assert_int_eq(err.line, 4);
    setenv("TUNE_TEST_PLUGIN_CTOR", "exit", 1);
    err = creation_error(config_with(trainer, ":memory:"));
    snprintf(want, sizeof want, "trainer.library: loading '%s' ended the process (exit status 3)",
             fixture_path());
    ck_assert_str_eq(err.text, want);
    unsetenv("TUNE_TEST_PLUGIN_CTOR");
}
END_TEST

static Suite *plugin_suite(void)
{
    Suite *s = suite_create("plugin");
    TCase *tc = tcase_create("plugin");
    tcase_add_test(tc, missing_library_is_a_config_error);
    tcase_add_test(tc, missing_symbols_are_config_errors);
    tcase_add_test(tc, bad_keys_are_config_errors);
    tcase_add_test(tc, without_init_user_data_is_the_data_text);
    tcase_add_test(tc, init_and_fini_wrap_the_run);
    tcase_add_test(tc, failing_init_stops_before_anything_is_written);
    tcase_add_test(tc, plugin_failures_are_retried);
    tcase_add_test(tc, plugin_gets_its_gpu_through_the_trial_api);
    tcase_add_test(tc, constructors_run_in_a_child_until_the_run);
    tcase_add_test(tc, crashing_constructor_is_a_config_error);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(plugin_suite)
