/*
 * plugin_fixture.c - the shared library test_plugin.c loads as a plugin
 * objective (trainer "type": "plugin"), one symbol per behaviour to check.
 * It calls tune.h's API from the test program, which exports it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tune.h"

#define FIXTURE_API __attribute__((visibility("default")))

struct state {
    double offset;
};

/* A constructor as a plugin may have: TUNE_TEST_PLUGIN_CTOR=crash or =exit makes
 * loading the library crash or end the process, as a broken plugin's would. */
__attribute__((constructor)) static void fixture_loaded(void)
{
    const char *how = getenv("TUNE_TEST_PLUGIN_CTOR");
    if (how && strcmp(how, "crash") == 0)
        raise(SIGSEGV);
    if (how && strcmp(how, "exit") == 0)
        exit(3);
}

/* Calls of fixture_fini so far: test_plugin reads it to see that fini ran once. */
FIXTURE_API int fixture_fini_calls;

FIXTURE_API tune_status fixture_objective(tune_trial *trial, void *user_data);
FIXTURE_API tune_status fixture_init(const char *data, void **ret_user_data, tune_error *err);
FIXTURE_API tune_status fixture_objective_state(tune_trial *trial, void *user_data);
FIXTURE_API void fixture_fini(void *user_data);
FIXTURE_API tune_status fixture_flaky(tune_trial *trial, void *user_data);

/* Without init_symbol user_data is the "data" text: reports its length (-1 for none) and x. */
tune_status fixture_objective(tune_trial *trial, void *user_data)
{
    const char *data = user_data;
    const char *names[2] = {"val_accuracy", "data_len"};
    double values[2] = {tune_trial_get_double_or(trial, "x", -1), data ? (double)strlen(data) : -1};
    for (int it = 0; it < 3; it++) {
        tune_status st = tune_trial_report(trial, 2, names, values, NULL);
        if (st != TUNE_OK)
            return st == TUNE_ESTOP ? TUNE_OK : st;
    }
    return TUNE_OK;
}

tune_status fixture_init(const char *data, void **ret_user_data, tune_error *err)
{
    if (data && strstr(data, "\"fail\""))
        return snprintf(err->text, sizeof err->text, "fixture refuses: fail requested"),
               TUNE_ECONFIG;
    struct state *s = calloc(1, sizeof *s);
    if (!s)
        return TUNE_ENOMEM;
    const char *at = data ? strstr(data, "\"offset\":") : NULL;
    s->offset = at ? strtod(at + 9, NULL) : 0;
    *ret_user_data = s;
    return TUNE_OK;
}

/* With init_symbol: reports x + the offset init read from "data". */
tune_status fixture_objective_state(tune_trial *trial, void *user_data)
{
    const struct state *s = user_data;
    return tune_trial_report_metric(trial, "val_accuracy",
                                    tune_trial_get_double_or(trial, "x", -1) + s->offset,
                                    NULL) == TUNE_ESTORE
               ? TUNE_ESTORE
               : TUNE_OK;
}

void fixture_fini(void *user_data)
{
    free(user_data);
    fixture_fini_calls++;
}

/* Fails its first attempt, as a flaky objective does; the retry reports. */
tune_status fixture_flaky(tune_trial *trial, void *user_data)
{
    (void)user_data;
    if (tune_trial_attempt(trial) == 1) {
        tune_trial_set_error(trial, "fixture failure on attempt 1");
        return TUNE_EFAILED;
    }
    tune_trial_report_metric(trial, "val_accuracy", 1.0, NULL);
    return TUNE_OK;
}

/*
 * Objectives that wedge a run, for tests/cli/test_objectives.sh:
 * fixture_hang reports once and then waits for signals forever (pause() returns
 * after each one it catches); fixture_exit calls exit(0) in trial 1 after one
 * report; fixture_spin reports every 10 ms whatever the answer.
 */
FIXTURE_API tune_status fixture_hang(tune_trial *trial, void *user_data);
FIXTURE_API tune_status fixture_exit(tune_trial *trial, void *user_data);
FIXTURE_API tune_status fixture_spin(tune_trial *trial, void *user_data);

tune_status fixture_hang(tune_trial *trial, void *user_data)
{
    (void)user_data;
    tune_trial_report_metric(trial, "val_accuracy", 0.5, NULL);
    for (;;)
        pause();
}

tune_status fixture_exit(tune_trial *trial, void *user_data)
{
    (void)user_data;
    tune_trial_report_metric(trial, "val_accuracy", 0.5, NULL);
    if (tune_trial_id(trial) == 1)
        exit(0);
    return TUNE_OK;
}

tune_status fixture_spin(tune_trial *trial, void *user_data)
{
    (void)user_data;
    for (;;) {
        tune_trial_report_metric(trial, "val_accuracy", 0.5, NULL);
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
}

FIXTURE_API tune_status fixture_gpu(tune_trial *trial, void *user_data);

/* Reports the GPU the engine placed the trial on ("gpu", -1 for none) and how
 * many it holds ("gpus"), with x as val_accuracy; fails when the ids for a child process disagree.
 */
tune_status fixture_gpu(tune_trial *trial, void *user_data)
{
    (void)user_data;
    int n = tune_trial_gpu_count(trial);
    char want[32] = "";
    if (n > 0)
        snprintf(want, sizeof want, "%d", tune_trial_gpu(trial, 0));
    if (strcmp(tune_trial_gpu_ids(trial), want) != 0 || tune_trial_gpu(trial, n) != -1) {
        tune_trial_set_error(trial, "gpu ids '%s', expected '%s'", tune_trial_gpu_ids(trial), want);
        return TUNE_EFAILED;
    }
    const char *names[3] = {"val_accuracy", "gpu", "gpus"};
    double values[3] = {tune_trial_get_double_or(trial, "x", -1),
                        n > 0 ? tune_trial_gpu(trial, 0) : -1, n};
    tune_status st = tune_trial_report(trial, 3, names, values, NULL);
    return st == TUNE_ESTOP ? TUNE_OK : st;
}
