/*
 * tune.h - the one public header of libtune, a hyperparameter tuning engine.
 *
 * A study draws trial configurations from a search space, runs an objective on
 * each (several at once), lets a scheduler stop weak trials early, records
 * every report in an SQLite store and exports CSV. A study is configured by
 * the JSON document that `tune run config.json` reads (configs/README.md
 * lists every key), or in code: tune_options and a space built with
 * tune_space_add_*(), as below.
 *
 * A complete program (examples/quickstart.c is this example, built and run by
 * the tests):
 *
 *     #include <math.h>
 *     #include <stdio.h>
 *     #include <tune.h>
 *
 *     static tune_status objective(tune_trial *trial, void *user_data)
 *     {
 *         double lr, acc = 0.0;
 *         int64_t batch;
 *         (void)user_data;
 *         if (tune_trial_get_double(trial, "lr", &lr, NULL) ||
 *             tune_trial_get_int(trial, "batch_size", &batch, NULL))
 *             return TUNE_EINVAL;
 *         for (int it = 1; it <= 20; it++) {
 *             acc = 0.9 - 0.01 * fabs(log10(lr) + 3.0) * (1.0 + 8.0 / it) -
 *                   0.001 * (double)batch / 64;
 *             tune_status st = tune_trial_report_metric(trial, "val_accuracy", acc, NULL);
 *             if (st == TUNE_ESTOP)
 *                 return TUNE_OK; // the scheduler stopped this trial: leave promptly
 *             if (st != TUNE_OK)
 *                 return st;
 *         }
 *         return TUNE_OK;
 *     }
 *
 *     int main(void)
 *     {
 *         tune_error err;
 *         tune_space *space = NULL;
 *         tune_study *study = NULL;
 *         tune_result *best = NULL;
 *         tune_options o;
 *         const int64_t batches[] = {16, 32, 64};
 *         double lr, acc;
 *         int64_t batch;
 *
 *         if (tune_space_new(&space, &err) ||
 *             tune_space_add_loguniform(space, "lr", 1e-5, 1e-1, 10, &err) ||
 *             tune_space_add_choice_int(space, "batch_size", batches, 3, &err))
 *             goto fail;
 *         tune_options_default(&o);
 *         o.name = "quickstart";
 *         o.metric = "val_accuracy";
 *         o.mode = TUNE_MODE_MAX;
 *         o.num_samples = 50;
 *         o.seed = 7;
 *         o.storage = ":memory:";
 *         o.scheduler = TUNE_SCHEDULER_ASHA;
 *         o.asha.max_t = 20;
 *         if (tune_study_new(&o, space, &study, &err) ||
 *             tune_study_set_objective(study, objective, NULL, &err) ||
 *             tune_study_run(study, &err) || tune_study_best(study, &best, &err) ||
 *             tune_result_get_double(best, "lr", &lr, &err) ||
 *             tune_result_get_int(best, "batch_size", &batch, &err) ||
 *             tune_result_get_metric(best, "val_accuracy", &acc, &err))
 *             goto fail;
 *         printf("best trial %lld: lr=%g batch_size=%lld val_accuracy=%.4f\n",
 *                (long long)tune_result_trial_id(best), lr, (long long)batch, acc);
 *         tune_result_free(best);
 *         tune_study_free(study);
 *         tune_space_free(space);
 *         return 0;
 *     fail:
 *         fprintf(stderr, "%s:%d:%d: %s\n", err.source, err.line, err.column, err.text);
 *         tune_result_free(best);
 *         tune_study_free(study);
 *         tune_space_free(space);
 *         return 1;
 *     }
 *
 * Conventions:
 *  - Every function that returns tune_status takes an optional `tune_error
 *    *err` as its last parameter; NULL is fine. For any status but TUNE_OK a
 *    non-NULL err receives the details (for TUNE_ESTOP: why the trial must
 *    stop); on TUNE_OK it is left untouched. Functions that cannot fail
 *    (ids, counts, names, *_free) return their value directly.
 *  - Outputs come back through `ret_` parameters, just before err.
 *  - Objects come from *_new and go with *_free, which accept NULL.
 *  - Arguments are borrowed for the call: what the library keeps (names,
 *    paths, values) is copied. A function that takes ownership of an object
 *    ends in `_take`, and takes it even when it fails.
 *  - Strings handed out as `const char *` are borrowed (each getter states
 *    for how long); those handed out as `char *` are freed with tune_free().
 *  - Enums are append-only and end with a _COUNT sentinel.
 * The library never prints, never exits, and keeps no mutable global state but
 * the allocator and log hooks, which are set before anything else.
 *
 * libtune is free software under the GNU General Public License, version 3 or
 * (at your option) any later version; see LICENSE and README.md, "Licence".
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef TUNE_H
#define TUNE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define TUNE_API
#elif defined(__GNUC__) && __GNUC__ >= 4
#define TUNE_API __attribute__((visibility("default")))
#else
#define TUNE_API
#endif

#if defined(__GNUC__)
#define TUNE_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TUNE_PRINTF(a, b)
#endif

/** Version of the library this header belongs to, "MAJOR.MINOR.PATCH". */
#define TUNE_VERSION_MAJOR 0
#define TUNE_VERSION_MINOR 1
#define TUNE_VERSION_PATCH 0

/** Version of the library actually linked, e.g. "0.1.0". Static string. */
TUNE_API const char *tune_version(void);

/* ------------------------------------------------------------------------ */
/* Status codes and errors                                                   */
/* ------------------------------------------------------------------------ */

/** Result of every fallible call. Append-only: values are never renumbered. */
typedef enum tune_status {
    TUNE_OK = 0,
    TUNE_EINVAL = 1,      /**< invalid argument (a programming error) */
    TUNE_ENOMEM = 2,      /**< out of memory */
    TUNE_EIO = 3,         /**< a file could not be read or written */
    TUNE_ECONFIG = 4,     /**< the configuration or search space is invalid */
    TUNE_ESTORE = 5,      /**< the SQLite store failed */
    TUNE_EDEVICE = 6,     /**< a compute device failed */
    TUNE_ENUMERIC = 7,    /**< NaN or infinity where a number was needed */
    TUNE_ESTOP = 8,       /**< not an error: the trial must stop now (scheduler, limit, Ctrl-C) */
    TUNE_EUNSUPPORTED = 9,/**< the feature is not compiled in or not available */
    TUNE_EINTERNAL = 10,  /**< a bug in libtune */
    TUNE_ENOTFOUND = 11,  /**< no such parameter, trial or experiment */
    TUNE_ETYPE = 12,      /**< the parameter exists with another type */
    TUNE_EINTERRUPTED = 13,/**< the run was stopped by tune_study_request_stop() */
    TUNE_EFAILED = 14,    /**< the objective failed (used for trial errors) */
    TUNE_EEXIST = 15,     /**< the experiment folder already holds an experiment */
    TUNE_EBUSY = 16,      /**< another process is running the experiment in that folder */
    TUNE_STATUS_COUNT
} tune_status;

/** Short description of a status code, e.g. "invalid configuration". Static; never NULL. */
TUNE_API const char *tune_strerror(tune_status code);

/**
 * Details of a failure. Every field is set whenever a function that received a
 * non-NULL err returns anything but TUNE_OK; on TUNE_OK err is left untouched.
 */
typedef struct tune_error {
    tune_status code;
    int line, column; /**< 1-based position in `source`; 0 when not applicable */
    char source[256]; /**< file name, "<string>", "trial 17", or "" */
    char text[512];   /**< lowercase, no trailing period; starts with the key path when there is one */
} tune_error;

/**
 * Formats err as "source:line:column: text" (leaving out what is unset) into
 * buf, NUL-terminated and truncated to size. Returns buf.
 */
TUNE_API char *tune_error_format(const tune_error *err, char *buf, size_t size);

/* ------------------------------------------------------------------------ */
/* Process-wide hooks (set them before any other call)                       */
/* ------------------------------------------------------------------------ */

/**
 * Replaces the allocator used by every allocation of libtune (tests use it to
 * make the N-th allocation fail). Passing NULL for both restores malloc/free.
 * Not thread-safe: call before creating any object.
 */
TUNE_API void tune_set_alloc_funcs(void *(*malloc_fn)(size_t), void (*free_fn)(void *));

/** Frees memory that libtune handed out as `char *` (JSON, CSV text, progress). NULL is fine. */
TUNE_API void tune_free(void *ptr);

/** Log levels, most severe first. */
typedef enum tune_log_level {
    TUNE_LOG_ERROR = 0,
    TUNE_LOG_WARN = 1,
    TUNE_LOG_INFO = 2,
    TUNE_LOG_DEBUG = 3,
    TUNE_LOG_LEVEL_COUNT
} tune_log_level;

/** Receives one log line, without a trailing newline. Called from any thread. */
typedef void (*tune_log_fn)(tune_log_level level, const char *message, void *user_data);

/**
 * Installs the log callback (default: none, the library is silent) and the
 * most verbose level that is delivered. Not thread-safe: call before running.
 */
TUNE_API void tune_set_log_callback(tune_log_fn fn, tune_log_level max_level, void *user_data);

/**
 * Environment settings that make the CPU trainer faster and must be in place
 * before the process starts, as space-separated "NAME=value" pairs, or NULL
 * when none is needed:
 *  - "OPENBLAS_NUM_THREADS=1": the CPU backend splits matrix products over
 *    its own OpenMP threads and runs OpenBLAS single-threaded, so OpenBLAS's
 *    own thread pool would only spin (and, started at load, it competes with
 *    every trial for the cores);
 *  - "OPENBLAS_CORETYPE=SkylakeX" (AVX-512 CPUs) or "=Haswell" (AVX2 and
 *    FMA) when the installed OpenBLAS does not recognise this CPU and fell
 *    back to pre-AVX2 kernels (OpenBLAS 0.3.21 on recent Intel CPUs: a BERT
 *    step is 2-2.4x slower then).
 * The `tune` command applies them (those the user has not set) by
 * re-executing itself; programs using the library can set them in their
 * environment. Static string; thread-safe.
 */
TUNE_API const char *tune_cpu_env_advice(void);

/* ------------------------------------------------------------------------ */
/* Search spaces built in code                                               */
/* ------------------------------------------------------------------------ */

/**
 * A search space: named parameters, each a distribution, a choice, a grid axis
 * or a constant. Names may contain '/' to express nesting ("optimizer/lr"),
 * exactly as nested objects in a config's param_space are flattened. Bound
 * rules are Ray Tune's and are listed in configs/README.md; a violated rule
 * fails with TUNE_ECONFIG and leaves the space unchanged. Adding a name twice
 * fails with TUNE_ECONFIG. Not thread-safe.
 */
typedef struct tune_space tune_space;

/** Creates an empty space. @return TUNE_OK, TUNE_ENOMEM. */
TUNE_API tune_status tune_space_new(tune_space **ret_space, tune_error *err);
/** Frees a space (NULL is fine). Not one handed to tune_study_new_with_space_take(). */
TUNE_API void tune_space_free(tune_space *space);

/** Float uniform in [low, high); needs low < high. */
TUNE_API tune_status tune_space_add_uniform(tune_space *s, const char *name, double low, double high,
                                            tune_error *err);
/** uniform rounded to a multiple of q; low and high must be multiples of q. */
TUNE_API tune_status tune_space_add_quniform(tune_space *s, const char *name, double low,
                                             double high, double q, tune_error *err);
/** Float log-uniform in [low, high) in the given base (10 as Ray); needs 0 < low < high. */
TUNE_API tune_status tune_space_add_loguniform(tune_space *s, const char *name, double low,
                                               double high, double base, tune_error *err);
/** loguniform rounded to a multiple of q; low and high must be multiples of q. */
TUNE_API tune_status tune_space_add_qloguniform(tune_space *s, const char *name, double low,
                                                double high, double q, double base,
                                                tune_error *err);
/** Normal(mean, sd); needs sd > 0. */
TUNE_API tune_status tune_space_add_randn(tune_space *s, const char *name, double mean, double sd,
                                          tune_error *err);
/** randn rounded to a multiple of q. */
TUNE_API tune_status tune_space_add_qrandn(tune_space *s, const char *name, double mean, double sd,
                                           double q, tune_error *err);
/** Integer uniform in [low, high): high is exclusive, as Ray's randint. */
TUNE_API tune_status tune_space_add_randint(tune_space *s, const char *name, int64_t low,
                                            int64_t high, tune_error *err);
/** Integer uniform in [low, high] rounded to a multiple of q: high inclusive, as Ray's qrandint. */
TUNE_API tune_status tune_space_add_qrandint(tune_space *s, const char *name, int64_t low,
                                             int64_t high, int64_t q, tune_error *err);
/** Integer log-uniform in [low, high): high exclusive, as Ray's lograndint; needs 0 < low < high. */
TUNE_API tune_status tune_space_add_lograndint(tune_space *s, const char *name, int64_t low,
                                               int64_t high, double base, tune_error *err);
/** Integer log-uniform in [low, high] rounded to a multiple of q: high inclusive. */
TUNE_API tune_status tune_space_add_qlograndint(tune_space *s, const char *name, int64_t low,
                                                int64_t high, int64_t q, double base,
                                                tune_error *err);
/** Uniform choice among n >= 1 floats. */
TUNE_API tune_status tune_space_add_choice_double(tune_space *s, const char *name,
                                                  const double *values, size_t n, tune_error *err);
/** Uniform choice among n >= 1 integers. */
TUNE_API tune_status tune_space_add_choice_int(tune_space *s, const char *name,
                                               const int64_t *values, size_t n, tune_error *err);
/** Uniform choice among n >= 1 strings (copied). */
TUNE_API tune_status tune_space_add_choice_string(tune_space *s, const char *name,
                                                  const char *const *values, size_t n,
                                                  tune_error *err);
/** A grid axis of n >= 1 floats: every trial set is repeated for each value. */
TUNE_API tune_status tune_space_add_grid_double(tune_space *s, const char *name,
                                                const double *values, size_t n, tune_error *err);
/** A grid axis of n >= 1 integers. */
TUNE_API tune_status tune_space_add_grid_int(tune_space *s, const char *name,
                                             const int64_t *values, size_t n, tune_error *err);
/** A grid axis of n >= 1 strings (copied). */
TUNE_API tune_status tune_space_add_grid_string(tune_space *s, const char *name,
                                                const char *const *values, size_t n,
                                                tune_error *err);
/** A constant float, passed to every trial and shown in results. */
TUNE_API tune_status tune_space_add_const_double(tune_space *s, const char *name, double value,
                                                 tune_error *err);
/** A constant integer. */
TUNE_API tune_status tune_space_add_const_int(tune_space *s, const char *name, int64_t value,
                                              tune_error *err);
/** A constant string (copied). */
TUNE_API tune_status tune_space_add_const_string(tune_space *s, const char *name,
                                                 const char *value, tune_error *err);
/** A constant boolean (0 or 1). */
TUNE_API tune_status tune_space_add_const_bool(tune_space *s, const char *name, int value,
                                               tune_error *err);
/**
 * Adds one parameter written as in a config file's param_space, e.g.
 * `{"choice": [16, "auto", true]}` or `{"qloguniform": [1e-4, 1e-1, 5e-5]}`.
 * Positions in err refer to `json`.
 */
TUNE_API tune_status tune_space_add_json(tune_space *s, const char *name, const char *json,
                                         tune_error *err);
/** Number of parameters in the space. */
TUNE_API size_t tune_space_size(const tune_space *s);

/* ------------------------------------------------------------------------ */
/* Trials: what an objective sees                                            */
/* ------------------------------------------------------------------------ */

/** One run of the objective on one configuration. Owned by the study. */
typedef struct tune_trial tune_trial;

/** Trial states. Append-only. */
typedef enum tune_trial_status {
    TUNE_TRIAL_PENDING = 0,    /**< waiting to run (or interrupted, to be rerun) */
    TUNE_TRIAL_RUNNING = 1,    /**< the objective is running */
    TUNE_TRIAL_TERMINATED = 2, /**< reached its end: returned, max_t, or stop.training_iteration */
    TUNE_TRIAL_STOPPED = 3,    /**< ended early: scheduler, metric threshold or time budget */
    TUNE_TRIAL_ERROR = 4,      /**< failed more than max_failures times */
    TUNE_TRIAL_PAUSED = 5,     /**< stopped by a pausing scheduler (HyperBand, promotion ASHA,
                                    median stopping without hard_stop, PBT), to run on later */
    TUNE_TRIAL_STATUS_COUNT
} tune_trial_status;

/** "PENDING", "RUNNING", "TERMINATED", "STOPPED", "ERROR", "PAUSED"; "UNKNOWN" otherwise. Static. */
TUNE_API const char *tune_trial_status_name(tune_trial_status status);

/**
 * The objective: reads its configuration from `trial`, trains, reports metrics
 * with tune_trial_report*() and returns when it is done or when a report
 * answers TUNE_ESTOP. Returning TUNE_OK or TUNE_ESTOP ends the trial normally;
 * TUNE_EINTERRUPTED (after tune_trial_should_stop()) puts it back to PENDING;
 * any other status fails the attempt (see tune_trial_set_error()), and the
 * trial is retried up to max_failures times. Called from worker threads, up to
 * max_concurrent_trials at once: user_data must be safe to share.
 */
typedef tune_status (*tune_objective_fn)(tune_trial *trial, void *user_data);

/** The trial's id: 0, 1, 2 ... in the order the search generated them. */
TUNE_API int64_t tune_trial_id(const tune_trial *trial);
/**
 * A seed for the objective's own randomness (initialisation, dropout, noise),
 * derived from the study seed and the trial id: reruns of a trial see the same seed.
 */
TUNE_API uint64_t tune_trial_seed(const tune_trial *trial);
/** The attempt number: 1, then 2, 3 ... when the trial is retried after a failure. */
TUNE_API int tune_trial_attempt(const tune_trial *trial);
/** Number of reports this attempt has made so far (the last training_iteration). */
TUNE_API int64_t tune_trial_iteration(const tune_trial *trial);

/**
 * Reads a parameter as a double (integers and booleans convert).
 * @return TUNE_OK, TUNE_ENOTFOUND (no such name), TUNE_ETYPE (a string), TUNE_EINVAL.
 */
TUNE_API tune_status tune_trial_get_double(const tune_trial *trial, const char *name,
                                           double *ret_value, tune_error *err);
/**
 * Reads a parameter as an integer; a float converts only when it is integral
 * (quniform with q = 1, say). @return TUNE_OK, TUNE_ENOTFOUND, TUNE_ETYPE, TUNE_EINVAL.
 */
TUNE_API tune_status tune_trial_get_int(const tune_trial *trial, const char *name,
                                        int64_t *ret_value, tune_error *err);
/**
 * Reads a string parameter; the string is borrowed and valid while the
 * objective runs. @return TUNE_OK, TUNE_ENOTFOUND, TUNE_ETYPE, TUNE_EINVAL.
 */
TUNE_API tune_status tune_trial_get_string(const tune_trial *trial, const char *name,
                                           const char **ret_value, tune_error *err);
/** Reads a boolean parameter (0 or 1). @return TUNE_OK, TUNE_ENOTFOUND, TUNE_ETYPE, TUNE_EINVAL. */
TUNE_API tune_status tune_trial_get_bool(const tune_trial *trial, const char *name, int *ret_value,
                                         tune_error *err);
/** The parameter as a double, or `fallback` when it is missing or not numeric. */
TUNE_API double tune_trial_get_double_or(const tune_trial *trial, const char *name,
                                         double fallback);
/** The parameter as an integer, or `fallback` when it is missing or not integral. */
TUNE_API int64_t tune_trial_get_int_or(const tune_trial *trial, const char *name,
                                       int64_t fallback);
/**
 * The trial's own folder, `<storage>/trials/trial_000042` as an absolute path,
 * where the objective may keep its files. The first call (of any attempt)
 * makes it, with `params.json` (the trial's configuration) inside; the
 * command trainer calls it at the start of every attempt and keeps the
 * program's `stdout.log` and `stderr.log` there. NULL when the study keeps
 * no files (storage ":memory:") or the folder cannot be made (logged).
 * Borrowed; valid while the objective runs. Call it from the objective's
 * thread.
 */
TUNE_API const char *tune_trial_dir(const tune_trial *trial);
/** The trial's configuration as a JSON object (nested as in param_space). Caller frees with tune_free(). */
TUNE_API tune_status tune_trial_config_json(const tune_trial *trial, char **ret_json,
                                            tune_error *err);

/**
 * Reports n metrics for the next training iteration (1, 2, 3 ... per attempt).
 * training_iteration and time_total_s are filled in by the engine; those
 * names, trial_id and status are reserved (TUNE_EINVAL).
 * The report is in the store before this returns. A missing main metric
 * counts as the worst value for the scheduler (logged); a NaN or infinite
 * one also fails the attempt ("reported <metric> = nan at iteration N"),
 * which is retried up to max_failures: the answer is then TUNE_ESTOP.
 * err, when given, says why for every answer but TUNE_OK (for TUNE_ESTOP:
 * scheduler, stop condition, pause, study stopping, or the failure).
 * @return TUNE_OK to go on; TUNE_ESTOP when the trial must stop now (the
 *         scheduler stopped it, it reached max_t or a stop condition, or the
 *         study is stopping); TUNE_EINVAL for bad arguments; TUNE_ESTORE when
 *         the store failed (the trial should return this status).
 */
TUNE_API tune_status tune_trial_report(tune_trial *trial, size_t n, const char *const *names,
                                       const double *values, tune_error *err);
/** tune_trial_report() with one metric. */
TUNE_API tune_status tune_trial_report_metric(tune_trial *trial, const char *name, double value,
                                              tune_error *err);
/*
 * Checkpoints. An objective that can save its state makes pausing schedulers
 * (HyperBand, promotion ASHA), PBT, retries and `tune resume` continue where
 * it was instead of starting over:
 *
 *     void *state; size_t size;
 *     if (tune_trial_load_checkpoint(trial, &state, &size, NULL) == TUNE_OK) {
 *         ... restore from state ...; tune_free(state);
 *     }
 *     for (...) {
 *         ... train one iteration ...
 *         tune_status st = tune_trial_report(trial, n, names, values);
 *         if (tune_trial_checkpoint_wanted(trial))
 *             tune_trial_save_checkpoint(trial, my_state, my_size, NULL);
 *         if (st == TUNE_ESTOP) return TUNE_OK;
 *     }
 *
 * An objective that never saves is still correct: a paused trial is then
 * rerun from its start, and the engine answers the reports it already made
 * (up to where it paused) without recording them again ("fast-forward").
 * PBT needs checkpoints: a trial without one is never exploited.
 */

/**
 * Saves the objective's state as of the last report. The bytes are copied:
 * into the trial's folder (`checkpoint.bin`, written atomically and synced)
 * when the study has a storage folder, else kept in memory. Each save
 * replaces the previous one. @return TUNE_OK, TUNE_EINVAL, TUNE_ENOMEM, TUNE_EIO.
 */
TUNE_API tune_status tune_trial_save_checkpoint(tune_trial *trial, const void *data, size_t size,
                                                tune_error *err);
/**
 * The checkpoint this attempt should start from: the trial's own last one
 * (after a pause, a failure or `tune resume`), or a better trial's that PBT
 * copied. On TUNE_OK, *ret_data (free with tune_free()) holds *ret_size bytes
 * and the engine's iteration count continues from the checkpoint's iteration.
 * @return TUNE_OK, TUNE_ENOTFOUND (start from scratch), TUNE_EINVAL,
 *         TUNE_ENOMEM, TUNE_EIO (an unreadable or corrupt checkpoint file).
 */
TUNE_API tune_status tune_trial_load_checkpoint(tune_trial *trial, void **ret_data,
                                                size_t *ret_size, tune_error *err);
/**
 * 1 when the engine asks for a checkpoint now: after a report answered by a
 * pause or a PBT exploit decision, every `checkpoint_frequency` iterations,
 * or every PBT perturbation_interval. 0 otherwise.
 */
TUNE_API int tune_trial_checkpoint_wanted(const tune_trial *trial);

/**
 * Records why the objective is about to fail, for the trial's error column.
 * Call it before returning an error status. printf-style; always succeeds.
 */
TUNE_API void tune_trial_set_error(tune_trial *trial, const char *fmt, ...) TUNE_PRINTF(2, 3);

/**
 * The text tune_trial_set_error() last recorded for this attempt; "" when
 * none. Borrowed: valid until the next tune_trial_set_error() or the end of
 * the attempt.
 */
TUNE_API const char *tune_trial_error(const tune_trial *trial);

/**
 * 1 once the study is stopping (Ctrl-C, tune_study_request_stop()). An
 * objective that waits on something other than its reports (a program it
 * runs, say) should look here and return soon: returning TUNE_EINTERRUPTED
 * puts the trial back to PENDING, so `tune resume` runs it again.
 */
TUNE_API int tune_trial_should_stop(const tune_trial *trial);

/** The config's trial_timeout_s; INFINITY when trials have no limit. */
TUNE_API double tune_trial_timeout_s(const tune_trial *trial);

/**
 * Seconds this attempt has left before trial_timeout_s (negative once it is
 * past); INFINITY without a limit. Past it, the next report fails the
 * attempt; an objective that does not report often should check and fail
 * itself (tune_trial_set_error(), then return TUNE_EFAILED).
 */
TUNE_API double tune_trial_time_left(const tune_trial *trial);

/* ------------------------------------------------------------------------ */
/* Studies                                                                   */
/* ------------------------------------------------------------------------ */

/** A sweep: space, searcher, scheduler, store and the trials. */
typedef struct tune_study tune_study;

/**
 * Creates a study from a JSON config file (configs/README.md). Errors carry the
 * file name, line and column of the offending value.
 * @return TUNE_OK, TUNE_EIO (unreadable file), TUNE_ECONFIG, TUNE_ENOMEM.
 */
TUNE_API tune_status tune_study_new_from_file(const char *path, tune_study **ret_study,
                                              tune_error *err);
/** Creates a study from a JSON config held in a string; `source` names it in errors (NULL: "<string>"). */
TUNE_API tune_status tune_study_new_from_json(const char *json, const char *source,
                                              tune_study **ret_study, tune_error *err);
/**
 * Creates a study from a JSON config without param_space and a space built in
 * code. Takes ownership of `space`, even when it fails: do not free it.
 * @return TUNE_OK, TUNE_EINVAL, TUNE_ECONFIG, TUNE_ENOMEM.
 */
TUNE_API tune_status tune_study_new_with_space_take(const char *json, tune_space *space,
                                                    tune_study **ret_study, tune_error *err);

/** Whether a larger or a smaller main metric is better. Append-only. */
typedef enum tune_mode {
    TUNE_MODE_MAX = 0, /**< "mode": "max" */
    TUNE_MODE_MIN = 1, /**< "mode": "min" */
    TUNE_MODE_COUNT
} tune_mode;

/** Where trial attempts run ("isolation"). Append-only. */
typedef enum tune_isolation {
    TUNE_ISOLATION_THREAD = 0,  /**< threads of this process */
    TUNE_ISOLATION_PROCESS = 1, /**< each attempt in a child process: a crash costs only it */
    TUNE_ISOLATION_COUNT
} tune_isolation;

/**
 * The schedulers tune_options can choose. Median stopping, HyperBand and PBT
 * are configured in JSON only for now (tune_study_new_from_json()).
 * Append-only.
 */
typedef enum tune_scheduler_type {
    TUNE_SCHEDULER_FIFO = 0, /**< every trial runs to its end */
    TUNE_SCHEDULER_ASHA = 1, /**< Ray's stopping ASHA (AsyncHyperBandScheduler) */
    TUNE_SCHEDULER_TYPE_COUNT
} tune_scheduler_type;

/** ASHA's main options, with Ray Tune's names and defaults (configs/README.md). */
typedef struct tune_asha_options {
    double max_t;            /**< the most a trial runs, in iterations (default 100) */
    double grace_period;     /**< the least a trial runs before it may be stopped (default 1) */
    double reduction_factor; /**< each rung keeps the top 1/reduction_factor (default 4) */
    int brackets;            /**< (default 1) */
} tune_asha_options;

/**
 * A study's options as plain data, for tune_study_new(). Each field is the
 * config file's top-level key of the same name (configs/README.md), with its
 * rules and default. Fill it with tune_options_default() first, then set what
 * differs, so that fields added later keep their defaults. Strings are
 * borrowed for the call. JSON only for now (tune_study_new_from_json()):
 * search algorithms other than random search, the median stopping,
 * HyperBand and PBT schedulers, ASHA's time_attr, stop_last_trials and
 * variant, "stop", "resources_per_trial" and the built-in trainers.
 */
typedef struct tune_options {
    const char *name;              /**< names the experiment (default NULL: "experiment") */
    const char *metric;            /**< the main metric (default NULL: "val_accuracy") */
    tune_mode mode;                /**< (default TUNE_MODE_MAX) */
    int64_t num_samples;           /**< trials, times the grid's points (default 1) */
    int64_t seed;                  /**< >= 0; default -1: drawn from the clock, then stored */
    int max_concurrent_trials;     /**< 1 to 4096; default 0: one per CPU */
    int max_failures;              /**< retries of a failed trial, -1: forever (default 0) */
    tune_isolation isolation;      /**< (default TUNE_ISOLATION_THREAD) */
    const char *storage;           /**< experiment folder or ":memory:" (default NULL:
                                        "tune_results/<name>") */
    double trial_timeout_s;        /**< an attempt running longer fails; default 0: none */
    int64_t checkpoint_frequency;  /**< ask for a checkpoint every n iterations; default 0: never */
    tune_scheduler_type scheduler; /**< (default TUNE_SCHEDULER_FIFO) */
    tune_asha_options asha;        /**< with TUNE_SCHEDULER_ASHA only (else: TUNE_ECONFIG) */
} tune_options;

/** Fills o with every option's default (listed in tune_options). Cannot fail. */
TUNE_API void tune_options_default(tune_options *o);

/**
 * Creates a study from options and a space built in code, without JSON. The
 * options go through the same defaults and checks as a config file's keys,
 * and an error names the key: source "<options>", text "num_samples:
 * expected an integer in [1, 100000000], got 0". experiment.db stores the
 * config as the equivalent JSON (the keys that differ from the defaults), so
 * running the same program into the same folder with TUNE_RESUME_EXISTING
 * resumes the experiment.
 * @param space borrowed, unlike tune_study_new_with_space_take()'s: the study
 *        keeps a copy and the caller still frees it; NULL for no parameters
 * @return TUNE_OK, TUNE_EINVAL (o or ret_study NULL, an enum field out of
 *         its range), TUNE_ECONFIG (a value breaks a rule), TUNE_ENOMEM.
 */
TUNE_API tune_status tune_study_new(const tune_options *o, const tune_space *space,
                                    tune_study **ret_study, tune_error *err);

/**
 * Opens a finished or interrupted experiment folder (the one holding
 * experiment.db) read-only, for best/status/export.
 * @return TUNE_OK, TUNE_ENOTFOUND (no experiment there), TUNE_ESTORE, TUNE_ENOMEM.
 */
TUNE_API tune_status tune_study_open(const char *dir, tune_study **ret_study, tune_error *err);
/**
 * Flags for resuming an experiment (Ray Tune's Tuner.restore options), for
 * tune_study_resume() and tune_study_set_resume_flags().
 */
enum tune_resume_flags {
    TUNE_RESUME_ERRORED = 1, /**< ERROR trials get another max_failures + 1 attempts, from
                                  their last checkpoint when the objective saved one (Ray's
                                  resume_errored; with no checkpoint this is restart_errored) */
    TUNE_RESUME_FORCE = 4,   /**< resume even when the config differs from the stored one
                                  (its parameters keep their names and types) */
    TUNE_RESUME_EXISTING = 8,/**< tune_study_run() continues the experiment its folder holds
                                  instead of refusing with TUNE_EEXIST (tune_study_resume()
                                  sets it; `tune run --resume`); a folder without one starts it */
};

/**
 * Creates a study that continues the experiment in dir, from the config
 * stored there (paths in it are relative to the current folder: change into
 * the one it started in, tune_study_origin(), to resume from elsewhere). It
 * sets TUNE_RESUME_EXISTING. tune_study_run() then keeps finished trials, runs interrupted ones
 * again as new attempts, rebuilds the scheduler from the stored reports, and
 * draws the remaining trials from the same sequence. A study built with a
 * space in code resumes by running the same program again instead, with
 * TUNE_RESUME_EXISTING set: then a folder that holds the same experiment is
 * continued (without the flag it is refused with TUNE_EEXIST).
 * @return TUNE_OK, TUNE_ENOTFOUND (no experiment there), TUNE_ESTORE,
 *         TUNE_ECONFIG (the stored config no longer validates), TUNE_ENOMEM.
 */
TUNE_API tune_status tune_study_resume(const char *dir, unsigned flags, tune_study **ret_study,
                                       tune_error *err);
/**
 * Where the experiment in dir was started: the working folder and the
 * command line of the run that created it. Relative paths in the stored
 * config (a command trainer's `train.py`, data files) are relative to that
 * folder, so a program that resumes from elsewhere changes into it first, as
 * `tune resume` does.
 * @param ret_cwd set to the folder (caller frees with tune_free()), or NULL
 *        when the store was made before tune recorded it
 * @param ret_command_line set likewise, or NULL; may itself be NULL when not wanted
 * @return TUNE_OK, TUNE_EINVAL, TUNE_ENOTFOUND (no experiment there),
 *         TUNE_ESTORE, TUNE_ENOMEM.
 */
TUNE_API tune_status tune_study_origin(const char *dir, char **ret_cwd, char **ret_command_line,
                                       tune_error *err);
/**
 * Sets TUNE_RESUME_* flags for a run into an existing experiment folder.
 * Not after tune_study_run(), nor on a study from tune_study_open().
 * @return TUNE_OK, TUNE_EINVAL (unknown flags, or too late).
 */
TUNE_API tune_status tune_study_set_resume_flags(tune_study *study, unsigned flags,
                                                 tune_error *err);

/** Frees a study and closes its store (NULL is fine). Not while tune_study_run() runs. */
TUNE_API void tune_study_free(tune_study *study);

/**
 * Sets the objective, replacing the config's trainer. Not while running, nor
 * on a study from tune_study_open(). @return TUNE_OK, TUNE_EINVAL.
 */
TUNE_API tune_status tune_study_set_objective(tune_study *study, tune_objective_fn fn,
                                              void *user_data, tune_error *err);
/**
 * Overrides the config's storage: an experiment folder, or ":memory:" for no
 * files at all. Not after tune_study_run(), nor on a study from
 * tune_study_open(). @return TUNE_OK, TUNE_EINVAL, TUNE_ENOMEM.
 */
TUNE_API tune_status tune_study_set_storage(tune_study *study, const char *dir, tune_error *err);
/** The experiment folder, or ":memory:". Borrowed; valid until the study is freed or the storage changes. */
TUNE_API const char *tune_study_storage(const tune_study *study);
/** The study's name. Borrowed; valid until the study is freed. */
TUNE_API const char *tune_study_name(const tune_study *study);

/**
 * Runs the sweep to the end: creates the experiment folder and store, runs up
 * to max_concurrent_trials trials at once on worker threads, and writes
 * results.csv and progress.csv at the end. A failed trial does not fail the
 * run. The run holds the folder's lock (an fcntl lock on experiment.lock,
 * released when the run ends or the process dies): a second run into the
 * folder meanwhile, from this process or another, fails at once with
 * TUNE_EBUSY; reading the folder (tune_study_open()) stays allowed. A folder
 * that already holds an experiment is refused with TUNE_EEXIST, unless
 * TUNE_RESUME_EXISTING is set (tune_study_resume() sets it): then it is
 * resumed, and one that holds another config is refused with TUNE_ECONFIG
 * unless TUNE_RESUME_FORCE is set.
 * @return TUNE_OK; TUNE_EINTERRUPTED after tune_study_request_stop() (the store
 *         is consistent and the CSV files are written); TUNE_EEXIST, TUNE_EBUSY,
 *         TUNE_ESTORE, TUNE_EIO, TUNE_ECONFIG (no objective), TUNE_ENOMEM.
 */
TUNE_API tune_status tune_study_run(tune_study *study, tune_error *err);
/**
 * Asks a running study to stop: no new trial starts, running trials get
 * TUNE_ESTOP at their next report and go back to PENDING. Async-signal-safe,
 * so a SIGINT handler may call it.
 */
TUNE_API void tune_study_request_stop(tune_study *study);

/** Counts of trials by status, for progress displays. Thread-safe while running. */
TUNE_API void tune_study_counts(tune_study *study, int64_t ret_counts[TUNE_TRIAL_STATUS_COUNT]);

/**
 * The live progress table, as Ray's reporter shows it: counts by status, the
 * best so far, the running and best trials with their parameters and latest
 * metrics, and the scheduler's rung cut-offs. At most max_rows trial rows.
 * Thread-safe while running. Caller frees with tune_free().
 */
TUNE_API tune_status tune_study_progress_text(tune_study *study, int max_rows, char **ret_text,
                                              tune_error *err);
/**
 * The best trial by the last reported value of the main metric (Ray's
 * scope="last"; trials that ended in ERROR are left out), as
 * `{"trial_id": 3, "status": "TERMINATED", "config": {...}, "<metric>": 0.91,
 * "training_iteration": 20, "time_total_s": 1.234}`. Caller frees with tune_free().
 * tune_study_best() gives the same trial as typed values.
 * @return TUNE_OK, TUNE_ENOTFOUND (no trial reported the metric), TUNE_ENOMEM.
 */
TUNE_API tune_status tune_study_best_json(tune_study *study, char **ret_json, tune_error *err);

/* ------------------------------------------------------------------------ */
/* The best trial as typed values                                            */
/* ------------------------------------------------------------------------ */

/*
 *     tune_result *best;
 *     double lr, acc;
 *     if (tune_study_best(study, &best, &err) == TUNE_OK) {
 *         tune_result_get_double(best, "lr", &lr, NULL);
 *         tune_result_get_metric(best, "val_accuracy", &acc, NULL);
 *         printf("trial %lld: lr=%g val_accuracy=%g\n",
 *                (long long)tune_result_trial_id(best), lr, acc);
 *         tune_result_free(best);
 *     }
 */

/**
 * A copy of one trial's outcome: id, status, parameters and last metrics. It
 * does not change while the study runs on and stays valid after the study is
 * freed. Read-only, so any number of threads may read one result at once.
 */
typedef struct tune_result tune_result;

/** The type of a parameter's value. Append-only. */
typedef enum tune_param_type {
    TUNE_PARAM_DOUBLE = 0, /**< a float: tune_result_get_double() */
    TUNE_PARAM_INT = 1,    /**< an integer: tune_result_get_int() (or _double) */
    TUNE_PARAM_STRING = 2, /**< tune_result_get_string() */
    TUNE_PARAM_BOOL = 3,   /**< tune_result_get_bool() (or _int, _double) */
    TUNE_PARAM_TYPE_COUNT
} tune_param_type;

/**
 * The best trial, the one tune_study_best_json() describes: the best last
 * value of the main metric (Ray's scope="last"), trials that ended in ERROR
 * left out. Works while the study runs (the best so far), after
 * tune_study_run(), and on a study from tune_study_open().
 * @param ret_result receives the result; free it with tune_result_free()
 * @return TUNE_OK, TUNE_ENOTFOUND (no trial reported the metric), TUNE_EINVAL,
 *         TUNE_ENOMEM. On failure *ret_result is untouched.
 */
TUNE_API tune_status tune_study_best(tune_study *study, tune_result **ret_result, tune_error *err);
/** Frees a result and every string it handed out (NULL is fine). */
TUNE_API void tune_result_free(tune_result *result);

/** The trial's id; -1 for NULL. */
TUNE_API int64_t tune_result_trial_id(const tune_result *result);
/** The trial's status when the result was taken; TUNE_TRIAL_STATUS_COUNT for NULL. */
TUNE_API tune_trial_status tune_result_status(const tune_result *result);
/** Its last training_iteration (that of its last report); 0 for NULL. */
TUNE_API int64_t tune_result_iteration(const tune_result *result);
/** Its time_total_s: seconds its last attempt ran (pauses left out); NaN for NULL. */
TUNE_API double tune_result_time_total_s(const tune_result *result);

/** Number of parameters: the whole space, in its order. 0 for NULL. */
TUNE_API size_t tune_result_param_count(const tune_result *result);
/**
 * The name of parameter i (0 <= i < count), flattened with '/' for nesting
 * ("optimizer/lr") as in tune_space; NULL when i is out of range. Borrowed;
 * valid until the result is freed.
 */
TUNE_API const char *tune_result_param_name(const tune_result *result, size_t i);
/** The type of parameter i's value; TUNE_PARAM_TYPE_COUNT when i is out of range. */
TUNE_API tune_param_type tune_result_param_type(const tune_result *result, size_t i);
/**
 * Reads a parameter as a double (integers and booleans convert), as
 * tune_trial_get_double() does. @return TUNE_OK, TUNE_ENOTFOUND (no such
 * name), TUNE_ETYPE (a string), TUNE_EINVAL. On failure *ret_value is untouched.
 */
TUNE_API tune_status tune_result_get_double(const tune_result *result, const char *name,
                                            double *ret_value, tune_error *err);
/**
 * Reads a parameter as an integer (booleans and integral floats convert).
 * @return TUNE_OK, TUNE_ENOTFOUND, TUNE_ETYPE, TUNE_EINVAL.
 */
TUNE_API tune_status tune_result_get_int(const tune_result *result, const char *name,
                                         int64_t *ret_value, tune_error *err);
/**
 * Reads a string parameter. The string is borrowed; valid until the result is
 * freed. @return TUNE_OK, TUNE_ENOTFOUND, TUNE_ETYPE, TUNE_EINVAL.
 */
TUNE_API tune_status tune_result_get_string(const tune_result *result, const char *name,
                                            const char **ret_value, tune_error *err);
/** Reads a boolean parameter (0 or 1). @return TUNE_OK, TUNE_ENOTFOUND, TUNE_ETYPE, TUNE_EINVAL. */
TUNE_API tune_status tune_result_get_bool(const tune_result *result, const char *name,
                                          int *ret_value, tune_error *err);

/**
 * Number of metrics the trial reported (the main one among them), in no
 * particular order; training_iteration and time_total_s have getters of
 * their own. A metric whose last value was NaN counts as not reported.
 * 0 for NULL.
 */
TUNE_API size_t tune_result_metric_count(const tune_result *result);
/** The name of metric i; NULL when i is out of range. Borrowed; valid until the result is freed. */
TUNE_API const char *tune_result_metric_name(const tune_result *result, size_t i);
/**
 * The last reported value of metric `name`.
 * @return TUNE_OK, TUNE_ENOTFOUND (the trial never reported it), TUNE_EINVAL.
 */
TUNE_API tune_status tune_result_get_metric(const tune_result *result, const char *name,
                                            double *ret_value, tune_error *err);

/** Which CSV tune_study_export_csv() writes. */
typedef enum tune_csv_kind {
    TUNE_CSV_RESULTS = 0,  /**< one row per trial: trial_id, status, training_iteration, config/..., metrics, time_total_s */
    TUNE_CSV_PROGRESS = 1, /**< one row per report: trial_id, training_iteration, time_total_s, metrics */
    TUNE_CSV_KIND_COUNT
} tune_csv_kind;

/**
 * Writes a CSV file (RFC 4180, comma-separated, '.' decimals whatever the
 * locale). Progress needs a store (not ":memory:").
 * @return TUNE_OK, TUNE_EIO, TUNE_ESTORE, TUNE_EUNSUPPORTED, TUNE_ENOMEM.
 */
TUNE_API tune_status tune_study_export_csv(tune_study *study, tune_csv_kind kind,
                                           const char *path, tune_error *err);

/**
 * Writes report.html for the experiment folder experiment_dir (the one holding
 * experiment.db): one self-contained page (no network, fonts or external
 * scripts) with the summary (best trial and its config, counts by status,
 * compute and wall time), the learning curve of every trial with ASHA's rung
 * milestones, each parameter against the final metric (log axes for log
 * domains), parallel coordinates and a sortable table of trials. The store is
 * opened read-only, so this works during a run too. The file is written to
 * "<out_path>.tmp" and renamed into place.
 * @param out_path the page to write; NULL for "<experiment_dir>/report.html"
 * @return TUNE_OK, TUNE_EINVAL, TUNE_ENOTFOUND (no experiment there), TUNE_ESTORE,
 *         TUNE_EIO (err->source names the file), TUNE_ENOMEM.
 */
TUNE_API tune_status tune_report_html(const char *experiment_dir, const char *out_path,
                                      tune_error *err);

/* ------------------------------------------------------------------------ */
/* Beyond one machine: MPI                                                   */
/* ------------------------------------------------------------------------ */

/*
 * `mpirun -n N tune run CONFIG` runs the controller on rank 0 and trials on
 * ranks 1 .. N-1 (tune_study_set_mpi()'s trials_per_rank each). Only rank 0
 * touches the store; the results are those of a local run. The CLI does all
 * of this; a C program does the same:
 *
 *     int rank, size;
 *     tune_mpi_init(&argc, &argv, &rank, &size, &err);
 *     ... create the study from the same config on every rank, set the objective ...
 *     if (rank == 0) { tune_study_set_mpi(study, 1, &err); tune_study_run(study, &err); }
 *     else           tune_mpi_serve(study, 1, &err);
 *     tune_mpi_finalize();
 */

/** 1 when this libtune was built with MPI, else 0 (the functions below then return TUNE_EUNSUPPORTED). */
TUNE_API int tune_mpi_available(void);
/**
 * MPI_Init_thread with MPI_THREAD_MULTIPLE (several trials per rank talk at
 * once); the rank and the number of ranks. @return TUNE_OK, TUNE_EUNSUPPORTED.
 */
TUNE_API tune_status tune_mpi_init(int *argc, char ***argv, int *ret_rank, int *ret_size,
                                   tune_error *err);
/** MPI_Finalize, once; a no-op without MPI. */
TUNE_API void tune_mpi_finalize(void);
/** MPI_Abort of the whole job (for a rank that cannot go on); a no-op without MPI. */
TUNE_API void tune_mpi_abort(int code);
/**
 * On rank 0, before tune_study_run(): trials run on the other ranks,
 * trials_per_rank at once on each (max_concurrent_trials is then ignored).
 * Checkpoints stay local, so PBT is refused (TUNE_ECONFIG) and pausing
 * schedulers fast-forward resumed trials. @return TUNE_OK, TUNE_EINVAL, TUNE_ECONFIG.
 */
TUNE_API tune_status tune_study_set_mpi(tune_study *study, int trials_per_rank, tune_error *err);
/**
 * On ranks > 0: runs the trials rank 0 sends with this study's objective
 * (the same config as rank 0's; its own store is never opened), until rank
 * 0's run ends. trials_per_rank must equal rank 0's. @return TUNE_OK,
 * TUNE_EINVAL, TUNE_ENOMEM.
 */
TUNE_API tune_status tune_mpi_serve(tune_study *study, int trials_per_rank, tune_error *err);

#ifdef __cplusplus
}
#endif

#endif /* TUNE_H */
