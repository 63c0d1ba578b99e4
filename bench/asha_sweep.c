/*
 * asha_sweep.c - tune's side of the Ray Tune comparison (bench/ray/ray_sweep.py
 * is Ray's side, bench/run runs both): N trials of the noise-free synthetic
 * curve (trainers/synthetic.c, the value tune's `synthetic` trainer reports with
 * "noise": 0), I reports each, ASHA with grace 1, reduction factor 4 and
 * max_t I, over lr loguniform(1e-6, 1e-1), weight_decay uniform(0, 0.3),
 * batch_size choice(16, 32, 64), warmup_steps randint(0, 11).
 *
 *   asha_sweep [--trials N] [--iterations I] [--concurrency C] [--seed S]
 *              [--storage DIR|:memory:] [--log FILE]
 *
 * Prints one JSON line: the run's wall time, the time spent computing the
 * curve (the objective's own work), the number of reports, and the engine's
 * overhead per report, (wall - objective) / reports. --log writes one line per
 * report, "trial lr weight_decay batch_size warmup_steps iteration value
 * answer" (floats with 17 digits, answer "continue" or "stop"), which is how
 * Ray is given the same configurations and how the decisions are compared.
 * The log is kept in memory during the run, so writing it costs the run
 * nothing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tune.h"
#include "trainers/trainer.h"

struct entry {
    double value;
    int answer; /* 0 none, 1 continue, 2 stop */
};

struct sweep {
    int64_t trials;
    int iterations;
    double *config;       /* trials x 4: lr, weight_decay, batch_size, warmup_steps */
    struct entry *log;    /* trials x iterations */
    double *objective_ns; /* per trial: time spent in the curve */
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Every slot a trial writes is its own (indexed by trial id), so the worker
 * threads share nothing and the bookkeeping needs no lock.
 */
static tune_status objective(tune_trial *t, void *ud)
{
    struct sweep *sw = ud;
    int64_t id = tune_trial_id(t), bs, warm;
    double lr, wd, spent = 0.0;
    if (id < 0 || id >= sw->trials || tune_trial_get_double(t, "lr", &lr, NULL) ||
        tune_trial_get_double(t, "weight_decay", &wd, NULL) ||
        tune_trial_get_int(t, "batch_size", &bs, NULL) ||
        tune_trial_get_int(t, "warmup_steps", &warm, NULL))
        return TUNE_EINVAL;
    double *c = &sw->config[id * 4];
    c[0] = lr, c[1] = wd, c[2] = (double)bs, c[3] = (double)warm;
    for (int it = 1; it <= sw->iterations; it++) {
        double t0 = now();
        double v = tunep_synthetic_curve(lr, wd, (double)bs, (double)warm, it);
        spent += now() - t0;
        tune_status st = tune_trial_report_metric(t, "val_accuracy", v, NULL);
        struct entry *e = &sw->log[id * sw->iterations + it - 1];
        e->value = v;
        e->answer = st == TUNE_ESTOP ? 2 : 1;
        if (st == TUNE_ESTOP)
            break;
        if (st != TUNE_OK)
            return st;
    }
    sw->objective_ns[id] = spent * 1e9;
    return TUNE_OK;
}

static int write_log(const struct sweep *sw, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    for (int64_t id = 0; id < sw->trials; id++) {
        const double *c = &sw->config[id * 4];
        for (int it = 1; it <= sw->iterations; it++) {
            const struct entry *e = &sw->log[id * sw->iterations + it - 1];
            if (e->answer == 0)
                break;
            fprintf(f, "%" PRId64 " %.17g %.17g %.0f %.0f %d %.17g %s\n", id, c[0], c[1], c[2],
                    c[3], it, e->value, e->answer == 2 ? "stop" : "continue");
        }
    }
    if (fclose(f) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: asha_sweep [--trials N] [--iterations I] [--concurrency C] [--seed S]"
                    " [--storage DIR|:memory:] [--log FILE]\n");
    return 2;
}

int main(int argc, char **argv)
{
    struct sweep sw = {.trials = 1000, .iterations = 10};
    int concurrency = 1;
    long long seed = 42;
    const char *storage = ":memory:", *log_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            return usage();
        if (strcmp(argv[i], "--trials") == 0)
            sw.trials = atoll(argv[++i]);
        else if (strcmp(argv[i], "--iterations") == 0)
            sw.iterations = atoi(argv[++i]);
        else if (strcmp(argv[i], "--concurrency") == 0)
            concurrency = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0)
            seed = atoll(argv[++i]);
        else if (strcmp(argv[i], "--storage") == 0)
            storage = argv[++i];
        else if (strcmp(argv[i], "--log") == 0)
            log_path = argv[++i];
        else
            return usage();
    }
    if (sw.trials < 1 || sw.iterations < 1 || concurrency < 1 || seed < 0)
        return usage();
    size_t n = (size_t)sw.trials;
    sw.config = calloc(n * 4, sizeof *sw.config);
    sw.log = calloc(n * (size_t)sw.iterations, sizeof *sw.log);
    sw.objective_ns = calloc(n, sizeof *sw.objective_ns);
    if (!sw.config || !sw.log || !sw.objective_ns) {
        fprintf(stderr, "asha_sweep: out of memory\n");
        return 1;
    }

    char json[1024];
    snprintf(json, sizeof json,
             "{\"name\": \"asha_sweep\", \"metric\": \"val_accuracy\", \"mode\": \"max\","
             " \"num_samples\": %" PRId64 ", \"seed\": %lld, \"max_concurrent_trials\": %d,"
             " \"param_space\": {\"lr\": {\"loguniform\": [1e-6, 1e-1]},"
             " \"weight_decay\": {\"uniform\": [0, 0.3]},"
             " \"batch_size\": {\"choice\": [16, 32, 64]},"
             " \"warmup_steps\": {\"randint\": [0, 11]}},"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": %d, \"grace_period\": 1,"
             " \"reduction_factor\": 4}}",
             sw.trials, seed, concurrency, sw.iterations);
    tune_study *s = NULL;
    tune_error err;
    double t0 = now();
    if (tune_study_new_from_json(json, "asha_sweep", &s, &err) ||
        tune_study_set_storage(s, storage, &err) ||
        tune_study_set_objective(s, objective, &sw, &err)) {
        fprintf(stderr, "asha_sweep: %s\n", err.text);
        return 1;
    }
    double t1 = now();
    if (tune_study_run(s, &err)) {
        fprintf(stderr, "asha_sweep: %s\n", err.text);
        return 1;
    }
    double t2 = now();

    /* How many trials ended after each number of reports: the rungs, and max_t. */
    int64_t reports = 0, *ended_at = calloc((size_t)sw.iterations + 1, sizeof *ended_at);
    double objective_s = 0.0;
    if (!ended_at) {
        fprintf(stderr, "asha_sweep: out of memory\n");
        return 1;
    }
    for (int64_t id = 0; id < sw.trials; id++) {
        int last = 0;
        while (last < sw.iterations && sw.log[id * sw.iterations + last].answer != 0)
            last++;
        reports += last;
        ended_at[last]++;
        objective_s += sw.objective_ns[id] * 1e-9;
    }
    double run_s = t2 - t1;
    printf(
        "{\"bench\": \"tune\", \"part\": \"ray_sweep\", \"storage\": \"%s\", \"trials\": %" PRId64
        ", \"iterations\": %d, \"concurrency\": %d, \"seed\": %lld, \"create_s\": %.6f,"
        " \"wall_s\": %.6f, \"objective_s\": %.6f, \"reports\": %" PRId64 ","
        " \"us_per_report\": %.4f, \"ended_at\": {",
        strcmp(storage, ":memory:") == 0 ? "memory" : "sqlite", sw.trials, sw.iterations,
        concurrency, seed, t1 - t0, run_s, objective_s, reports,
        1e6 * (run_s - objective_s) / (double)reports);
    const char *sep = "";
    for (int it = 0; it <= sw.iterations; it++)
        if (ended_at[it]) {
            printf("%s\"%d\": %" PRId64, sep, it, ended_at[it]);
            sep = ", ";
        }
    printf("}}\n");
    free(ended_at);
    int rc = log_path ? write_log(&sw, log_path) : 0;
    tune_study_free(s);
    free(sw.config);
    free(sw.log);
    free(sw.objective_ns);
    return rc;
}
