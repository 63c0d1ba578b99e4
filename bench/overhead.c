/*
 * overhead.c - tune's own cost per trial on a trivial objective, the same
 * 4-parameter objective as ../shared/bench/peers/optuna_overhead.py parts a
 * and c (x uniform, lr log-uniform, act categorical, n integer; one value per
 * trial), so the two can be compared side by side (bench/run_core.sh).
 *
 *   overhead [--trials N] [--storage DIR|:memory:] [--reports R] [--concurrency C]
 *
 * Prints one JSON line: trials/s, µs per trial and per report. Each trial
 * reports R times (default 1: Optuna's tell), which is also what the store
 * commits before the objective gets its answer.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tune.h"

static int reports_per_trial = 1;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static tune_status trivial(tune_trial *t, void *ud)
{
    static const char *const cats[] = {"relu", "gelu", "tanh"};
    double x, lr;
    int64_t n;
    const char *act;
    (void)ud;
    if (tune_trial_get_double(t, "x", &x, NULL) || tune_trial_get_double(t, "lr", &lr, NULL) ||
        tune_trial_get_string(t, "act", &act, NULL) || tune_trial_get_int(t, "n", &n, NULL))
        return TUNE_EINVAL;
    int ci = 0;
    for (int i = 0; i < 3; i++)
        if (strcmp(act, cats[i]) == 0)
            ci = i;
    double v =
        x * x + (log10(lr) + 3.0) * (log10(lr) + 3.0) + ci + (double)((n - 32) * (n - 32)) / 1000.0;
    for (int r = 0; r < reports_per_trial; r++) {
        tune_status st = tune_trial_report_metric(t, "value", v, NULL);
        if (st == TUNE_ESTOP)
            break;
        if (st)
            return st;
    }
    return TUNE_OK;
}

int main(int argc, char **argv)
{
    long trials = 100000;
    int concurrency = 1;
    const char *storage = ":memory:";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc)
            trials = atol(argv[++i]);
        else if (strcmp(argv[i], "--storage") == 0 && i + 1 < argc)
            storage = argv[++i];
        else if (strcmp(argv[i], "--reports") == 0 && i + 1 < argc)
            reports_per_trial = atoi(argv[++i]);
        else if (strcmp(argv[i], "--concurrency") == 0 && i + 1 < argc)
            concurrency = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: overhead [--trials N] [--storage DIR|:memory:] [--reports R] "
                            "[--concurrency C]\n");
            return 2;
        }
    }
    char json[1024];
    snprintf(json, sizeof json,
             "{\"name\": \"overhead\", \"metric\": \"value\", \"mode\": \"min\","
             " \"num_samples\": %ld, \"seed\": 42, \"max_concurrent_trials\": %d,"
             " \"param_space\": {\"x\": {\"uniform\": [-10, 10]},"
             " \"lr\": {\"loguniform\": [1e-5, 1e-1]},"
             " \"act\": {\"choice\": [\"relu\", \"gelu\", \"tanh\"]},"
             " \"n\": {\"randint\": [1, 65]}}}",
             trials, concurrency);
    tune_study *s = NULL;
    tune_error err;
    double t0 = now();
    if (tune_study_new_from_json(json, "overhead", &s, &err) ||
        tune_study_set_storage(s, storage, &err) ||
        tune_study_set_objective(s, trivial, NULL, &err)) {
        fprintf(stderr, "overhead: %s\n", err.text);
        return 1;
    }
    double t1 = now();
    if (tune_study_run(s, &err)) {
        fprintf(stderr, "overhead: %s\n", err.text);
        return 1;
    }
    double t2 = now();
    char *best = NULL;
    tune_study_best_json(s, &best, NULL);
    double run_s = t2 - t1;
    printf("{\"bench\": \"tune\", \"part\": \"overhead\", \"storage\": \"%s\", \"trials\": %ld,"
           " \"reports_per_trial\": %d, \"concurrency\": %d, \"create_s\": %.6f,"
           " \"run_s\": %.4f, \"trials_per_s\": %.1f, \"us_per_trial\": %.3f,"
           " \"us_per_report\": %.3f, \"best\": %s}\n",
           strcmp(storage, ":memory:") == 0 ? "memory" : "sqlite", trials, reports_per_trial,
           concurrency, t1 - t0, run_s, (double)trials / run_s, 1e6 * run_s / (double)trials,
           1e6 * run_s / (double)trials / reports_per_trial, best ? best : "null");
    tune_free(best);
    tune_study_free(s);
    return 0;
}
