/*
 * synthetic.c - a deterministic fake fine-tuning run, for tests, demos and
 * benchmarks.
 *
 * The curve is the one of ../shared/bench/peers/optuna_overhead.py part d, so
 * tune and Optuna can be compared on the same problem:
 *   asym = 0.93 - 0.06 dl^2 - 0.4 (wd - 0.05)^2 - pen(batch) - 0.002 |warmup - 3|,
 *          dl = log10(lr) - log10(3e-4), asym >= 0.3
 *   k    = 0.04 + 0.3 min(1, sqrt(lr / 1e-3))      (large lr learns fast, plateaus low)
 *   acc(step) = asym (1 - 0.7 exp(-k step)) + N(0, noise)
 * pen(16) = 0.01, pen(32) = 0, pen(64) = 0.015 as in the peer, extended to any
 * batch size as 0.01 log2(32/b)^2 below 32 and 0.015 log2(b/32)^2 above.
 * Parameters it does not know are ignored; missing ones take the optimum
 * (lr 3e-4, weight_decay 0.05, batch_size 32, warmup_steps 3), so any
 * param_space works. warmup_steps may also be called warmup, as in the peer.
 * Noise and failures come from the trial's own seed, so a trial's curve is
 * reproducible; failures also depend on the attempt, so a retry can succeed.
 *
 * Checkpoints make the curve a state: the remaining gap rem = exp(-k step)
 * shrinks by exp(-k) per iteration under the current lr. A trial saves
 * (step, rem) when the engine asks; one that restarts from a checkpoint,
 * its own or (PBT) a better trial's with other hyperparameters, goes on from
 * that step and gap, so progress made under earlier hyperparameters counts.
 * Without a restore the curve is exactly tunep_synthetic_curve().
 */
#include "trainer.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/rng.h"

/* The trainer's section: {"type": "synthetic", "iterations": 100, ...}. */
struct synthetic_config {
    int64_t iterations; /* reports per trial unless stopped earlier */
    double sleep_s;     /* per iteration */
    double fail_prob;   /* per iteration */
    double noise;       /* sd of the Gaussian noise on val_accuracy */
    int report_true;    /* also report the noise-free "true_accuracy" */
    int report_loss;    /* also report "val_loss" = 1 - val_accuracy */
    char *answer_log;   /* append "trial attempt iteration" per answered report (crash tests) */
};

#define ROW(name, type, field, lo, hi, def)                                                        \
    TUNEP_OPT_ROW(name, type, struct synthetic_config, field, lo, hi, def)
static const struct tunep_option synthetic_options[] = {
    ROW("iterations", TUNEP_OPT_INT64, iterations, 1, 1000000000, 100),
    ROW("sleep_s", TUNEP_OPT_NUMBER, sleep_s, 0, 86400, 0),
    ROW("fail_prob", TUNEP_OPT_NUMBER, fail_prob, 0, 1, 0),
    ROW("noise", TUNEP_OPT_NUMBER, noise, 0, 1, 0.005),
    ROW("report_true", TUNEP_OPT_BOOL, report_true, 0, 1, 0),
    ROW("report_loss", TUNEP_OPT_BOOL, report_loss, 0, 1, 0),
    ROW("answer_log", TUNEP_OPT_STRING, answer_log, 0, 4000, 0),
    {0},
};
#undef ROW

/* The plateau and the rate of the curve for these hyperparameters. */
static void curve_shape(double lr, double weight_decay, double batch_size, double warmup,
                        double *ret_asym, double *ret_k)
{
    if (!(lr > 0))
        lr = 1e-12;
    if (!(batch_size > 0))
        batch_size = 1;
    double dl = log10(lr) - log10(3e-4);
    double pen = batch_size < 32 ? 0.01 * pow(log2(32.0 / batch_size), 2)
                                 : 0.015 * pow(log2(batch_size / 32.0), 2);
    double asym = 0.93 - 0.06 * dl * dl - 0.4 * (weight_decay - 0.05) * (weight_decay - 0.05) -
                  pen - 0.002 * fabs(warmup - 3.0);
    if (asym < 0.3)
        asym = 0.3;
    *ret_asym = asym;
    *ret_k = 0.04 + 0.3 * fmin(1.0, sqrt(lr / 1e-3));
}

double tunep_synthetic_curve(double lr, double weight_decay, double batch_size, double warmup,
                             int64_t iteration)
{
    double asym, k;
    curve_shape(lr, weight_decay, batch_size, warmup, &asym, &k);
    return asym * (1.0 - 0.7 * exp(-k * (double)iteration));
}

/* What a checkpoint holds. */
struct synthetic_state {
    int64_t step; /* iterations of training behind this state */
    double rem;   /* the remaining gap: exp(-k step) for a constant lr */
};

static void sleep_s(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/*
 * Records that a report got its answer, for the crash tests: one write() with
 * O_APPEND, which survives the process being killed right after it.
 */
static void log_answer(const char *path, const tune_trial *trial, int64_t it)
{
    char line[96];
    int n = snprintf(line, sizeof line, "%lld %d %lld\n", (long long)tune_trial_id(trial),
                     tune_trial_attempt(trial), (long long)it);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0)
        return;
    if (write(fd, line, (size_t)n) != n) {
        /* A lost line makes the crash test stricter, never looser. */
    }
    close(fd);
}

static tune_status synthetic_objective(tune_trial *trial, void *user_data)
{
    const struct synthetic_config *cfg = user_data;
    double lr = tune_trial_get_double_or(trial, "lr", 3e-4);
    double wd = tune_trial_get_double_or(trial, "weight_decay", 0.05);
    double bs = tune_trial_get_double_or(trial, "batch_size", 32);
    double warm = tune_trial_get_double_or(trial, "warmup_steps",
                                           tune_trial_get_double_or(trial, "warmup", 3));
    gsl_rng *noise = gsl_rng_alloc(tunep_rng_xoshiro256);
    gsl_rng *fail = gsl_rng_alloc(tunep_rng_xoshiro256);
    tune_status st = TUNE_OK;
    if (!noise || !fail) {
        tune_trial_set_error(trial, "out of memory");
        st = TUNE_ENOMEM;
        goto out;
    }
    gsl_rng_set(noise, (unsigned long)tune_trial_seed(trial));
    gsl_rng_set(fail, (unsigned long)tunep_splitmix64(tune_trial_seed(trial) +
                                                      (uint64_t)tune_trial_attempt(trial)));
    double asym, k;
    curve_shape(lr, wd, bs, warm, &asym, &k);
    struct synthetic_state from = {0, 1.0};
    void *saved = NULL;
    size_t saved_size = 0;
    if (tune_trial_load_checkpoint(trial, &saved, &saved_size, NULL) == TUNE_OK) {
        if (saved_size == sizeof from)
            memcpy(&from, saved, sizeof from);
        tune_free(saved);
        /* The noise stream goes on where the saved run was. */
        for (int64_t i = 0; cfg->noise > 0 && i < from.step; i++)
            (void)gsl_ran_gaussian(noise, cfg->noise);
    }
    /* tune_trial_iteration() counts this trial's reports, which a PBT restart keeps. */
    for (int64_t it = from.step + 1; tune_trial_iteration(trial) < cfg->iterations; it++) {
        sleep_s(cfg->sleep_s);
        double rem = from.rem * exp(-k * (double)(it - from.step));
        double truth = asym * (1.0 - 0.7 * rem);
        double acc = truth + (cfg->noise > 0 ? gsl_ran_gaussian(noise, cfg->noise) : 0.0);
        if (cfg->fail_prob > 0 && gsl_rng_uniform(fail) < cfg->fail_prob) {
            tune_trial_set_error(trial, "synthetic failure at iteration %lld", (long long)it);
            st = TUNE_EFAILED;
            goto out;
        }
        const char *names[3] = {"val_accuracy"};
        double values[3] = {acc};
        size_t n = 1;
        if (cfg->report_true) {
            names[n] = "true_accuracy";
            values[n++] = truth;
        }
        if (cfg->report_loss) { /* for sweeps with mode "min" */
            names[n] = "val_loss";
            values[n++] = 1.0 - acc;
        }
        st = tune_trial_report(trial, n, names, values, NULL);
        if ((st == TUNE_OK || st == TUNE_ESTOP) && cfg->answer_log)
            log_answer(cfg->answer_log, trial, tune_trial_iteration(trial));
        if ((st == TUNE_OK || st == TUNE_ESTOP) && tune_trial_checkpoint_wanted(trial)) {
            struct synthetic_state now = {it, rem};
            tune_status cs = tune_trial_save_checkpoint(trial, &now, sizeof now, NULL);
            if (cs != TUNE_OK && cs != TUNE_EUNSUPPORTED) {
                tune_trial_set_error(trial, "cannot save a checkpoint: %s", tune_strerror(cs));
                st = cs;
                break;
            }
        }
        if (st == TUNE_ESTOP) {
            st = TUNE_OK;
            break;
        }
        if (st != TUNE_OK)
            break;
    }
out:
    gsl_rng_free(noise);
    gsl_rng_free(fail);
    return st;
}

static int64_t synthetic_max_iterations(const void *config)
{
    return ((const struct synthetic_config *)config)->iterations;
}

const struct tunep_trainer_type tunep_trainer_synthetic = {
    .name = "synthetic",
    .options = synthetic_options,
    .config_size = sizeof(struct synthetic_config),
    .objective = synthetic_objective,
    .max_iterations = synthetic_max_iterations,
    .can_checkpoint = 1,
};
