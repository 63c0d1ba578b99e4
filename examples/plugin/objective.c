/*
 * objective.c - a plugin objective: a tune_objective_fn in a shared library
 * that `tune run` loads itself (trainer "type": "plugin"), so C code is tuned
 * from the command line without writing a program around it.
 *
 *     cc -shared -fPIC -O2 objective.c -o libobjective.so
 *     tune run plugin.json                       (plugin.json: this folder)
 *
 * No -ltune: the plugin calls the tune.h API of the program that loads it
 * (`tune` exports it). The build compiles it as build/examples/plugin/
 * libobjective.so, which plugin.json names (run from the repository root).
 *
 * objective_init gets the config's "data" as JSON text and returns the
 * settings every trial shares; objective_fini frees them at the end and, if
 * "summary" names a file, writes how many trials ran there. The objective is
 * a made-up training curve over lr and momentum, best at data.target_lr and
 * momentum 0.9: replace it with real training.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tune.h>

struct settings {
    double target_lr;
    int iterations;
    char summary[1024]; /* "" for none */
    atomic_long trials; /* objectives run on several threads at once */
};

/*
 * The number after "key": in flat JSON text, or fallback (a real plugin would
 * use a JSON library).
 */
static double json_number(const char *json, const char *key, double fallback)
{
    char pattern[128];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = json ? strstr(json, pattern) : NULL;
    return at ? strtod(at + strlen(pattern), NULL) : fallback;
}

/* The string after "key": (without escapes) into out, or "". */
static void json_string(const char *json, const char *key, char *out, size_t size)
{
    char pattern[128];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    const char *at = json ? strstr(json, pattern) : NULL;
    out[0] = '\0';
    if (at) {
        at += strlen(pattern);
        const char *end = strchr(at, '"');
        if (end && (size_t)(end - at) < size) {
            memcpy(out, at, (size_t)(end - at));
            out[end - at] = '\0';
        }
    }
}

/* The symbols tune looks up must be visible even when built with -fvisibility=hidden. */
#define PLUGIN_EXPORT __attribute__((visibility("default")))

PLUGIN_EXPORT tune_status objective_init(const char *data_json, void **ret_user_data,
                                         tune_error *err);
PLUGIN_EXPORT tune_status objective(tune_trial *trial, void *user_data);
PLUGIN_EXPORT void objective_fini(void *user_data);

tune_status objective_init(const char *data_json, void **ret_user_data, tune_error *err)
{
    struct settings *s = calloc(1, sizeof *s);
    if (!s)
        return TUNE_ENOMEM;
    s->target_lr = json_number(data_json, "target_lr", 3e-3);
    s->iterations = (int)json_number(data_json, "iterations", 20);
    json_string(data_json, "summary", s->summary, sizeof s->summary);
    if (!(s->target_lr > 0) || s->iterations < 1) {
        snprintf(err->text, sizeof err->text,
                 "data: target_lr must be > 0 and iterations >= 1");
        free(s);
        return TUNE_ECONFIG;
    }
    atomic_init(&s->trials, 0);
    *ret_user_data = s;
    return TUNE_OK;
}

tune_status objective(tune_trial *trial, void *user_data)
{
    struct settings *s = user_data;
    double lr = tune_trial_get_double_or(trial, "lr", 1e-3);
    double momentum = tune_trial_get_double_or(trial, "momentum", 0.9);
    double miss = log10(lr / s->target_lr);
    double best = 0.95 - 0.05 * miss * miss - 0.5 * (momentum - 0.9) * (momentum - 0.9);
    double speed = 0.05 + 0.25 * fmin(1.0, lr / s->target_lr);
    atomic_fetch_add(&s->trials, 1);
    for (int it = 1; it <= s->iterations; it++) {
        const char *names[2] = {"val_accuracy", "train_loss"};
        double acc = best * (1.0 - 0.8 * exp(-speed * it));
        double values[2] = {acc, 1.0 - acc};
        tune_status st = tune_trial_report(trial, 2, names, values, NULL);
        if (st == TUNE_ESTOP)
            return TUNE_OK; /* the scheduler stopped this trial */
        if (st != TUNE_OK)
            return st;
    }
    return TUNE_OK;
}

void objective_fini(void *user_data)
{
    struct settings *s = user_data;
    if (s->summary[0]) {
        FILE *f = fopen(s->summary, "w");
        if (f) {
            fprintf(f, "trials %ld\n", (long)atomic_load(&s->trials));
            fclose(f);
        }
    }
    free(s);
}
