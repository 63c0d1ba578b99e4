/*
 * store.h - the SQLite store of an experiment (experiment.db), and CSV export.
 *
 * Only the controller writes it, from one thread at a time (the study lock).
 * Writes accumulate in an open transaction that tunep_store_commit() makes
 * durable; the controller commits before it answers a report, so a report
 * the objective got an answer for survives a crash of the process (WAL,
 * synchronous=NORMAL: durable against process crashes, not power loss).
 * Parameters keep their types (REAL, INTEGER, TEXT; booleans as INTEGER with
 * their type recorded), never formatted strings.
 */
#ifndef TUNE_STORE_H
#define TUNE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "search/space.h"

struct tunep_store;

/* What the experiment table records. */
struct tunep_store_experiment {
    const char *name;
    const char *config_json; /* the whole config, normalised JSON */
    const char *metric;
    const char *mode;    /* "max" or "min" */
    const char *version; /* tune_version() */
    uint64_t seed;
    double created;           /* Unix time */
    const char *cwd;          /* the creating run's working folder, or NULL */
    const char *command_line; /* its command line, or NULL */
    const char *driver;       /* "ask": ask and tell from several processes; NULL: a run */
};

/*
 * Creates db_path with the schema and the experiment row, and records the
 * space's parameter names and types. Fails with TUNE_ESTORE if db_path
 * already holds an experiment.
 */
tune_status tunep_store_create(const char *db_path, const struct tunep_store_experiment *exp,
                               const tune_space *space, struct tunep_store **ret, tune_error *err);
/* Opens an existing experiment.db; TUNE_ENOTFOUND when there is none. */
tune_status tunep_store_open(const char *db_path, int readonly, struct tunep_store **ret,
                             tune_error *err);
/* The store's file in the experiment folder dir, "<dir>/experiment.db"; NULL on OOM (tunep_free).
 */
char *tunep_store_file(const char *dir);
/* Commits what is pending and closes (NULL is fine). */
void tunep_store_close(struct tunep_store *st);
/* The database file as given to tunep_store_open() (":memory:" for none). */
const char *tunep_store_path(const struct tunep_store *st);

/* A trial attempt starts: insert (first attempt, with its parameters) or update to RUNNING. */
tune_status tunep_store_trial_start(struct tunep_store *st, int64_t trial_id, int attempt,
                                    const tune_space *space, const struct tunep_value *values,
                                    double start_time, tune_error *err);
/*
 * A trial attempt ends with status (or goes back to PENDING when interrupted):
 * its last iteration, total time, end time and error text (NULL for none).
 */
/* A PAUSED trial runs on: status RUNNING again, its reports kept (same attempt). In the open
 * transaction. */
tune_status tunep_store_trial_resume(struct tunep_store *st, int64_t trial_id, int attempt,
                                     tune_error *err);
/* Replaces a trial's parameter values (PBT's explored configuration). In the open transaction. */
tune_status tunep_store_trial_set_values(struct tunep_store *st, int64_t trial_id,
                                         const struct tunep_value *values, tune_error *err);
tune_status tunep_store_trial_end(struct tunep_store *st, int64_t trial_id, int attempt,
                                  tune_trial_status status, int64_t iteration, double time_total_s,
                                  double end_time, const char *error, tune_error *err);
/* The engine's numbers of one report; NaN (or -1 for the count) is stored as NULL (unknown). */
struct tunep_report_times {
    int64_t iteration;                /* training_iteration */
    double time_total_s;              /* over the trial's restored history (docs/results.md) */
    double time_this_iter_s;          /* since the previous report, or the restore */
    double time_since_restore;        /* since the attempt started or last restored */
    int64_t iterations_since_restore; /* reports since then, this one included */
    double wall_time;                 /* Unix time of the report */
};
/* One report with its times. Metric values may be NaN or infinite (stored as NULL / as is). */
tune_status tunep_store_report_row(struct tunep_store *st, int64_t trial_id, int attempt,
                                   const struct tunep_report_times *times, size_t n,
                                   const char *const *names, const double *values, tune_error *err);
/* tunep_store_report_row() with only the iteration, time_total_s and wall time known. */
tune_status tunep_store_report(struct tunep_store *st, int64_t trial_id, int attempt,
                               int64_t iteration, double time_total_s, double wall_time, size_t n,
                               const char *const *names, const double *values, tune_error *err);
/*
 * Where the current attempt runs: the process id (0: unknown), host name, IP
 * address and device ("cuda:0,1": the GPUs placement gave it; "cpu": none)
 * (NULL: unknown). In the open transaction.
 */
tune_status tunep_store_trial_host(struct tunep_store *st, int64_t trial_id, int attempt,
                                   int64_t pid, const char *hostname, const char *node_ip,
                                   const char *device, tune_error *err);
/* Makes everything written so far durable. Cheap when nothing is pending. */
tune_status tunep_store_commit(struct tunep_store *st, tune_error *err);

/* The space's flattened parameter names in position order; borrowed, valid until close. */
const char *const *tunep_store_param_names(const struct tunep_store *st, size_t *ret_n);
/* Parameter i's params.type ("float", "int", "str", "bool", "mixed") and params.domain
 * ("loguniform", "choice", ...; NULL when not recorded); borrowed, valid until close. */
const char *tunep_store_param_type(const struct tunep_store *st, size_t i);
/* The type a parameter of a space would be stored with ("float", "int", ..., "mixed"). */
const char *tunep_store_param_kind(const struct tunep_param *p);
const char *tunep_store_param_domain(const struct tunep_store *st, size_t i);

/* ---- reading back -------------------------------------------------------- */

/* The experiment row; strings are owned by *ret and released with tunep_store_experiment_done(). */
struct tunep_store_experiment_row {
    char *name, *config_json, *metric, *mode, *version;
    char *driver; /* "ask" or NULL (experiment.driver) */
    uint64_t seed;
    double created;
};
tune_status tunep_store_read_experiment(struct tunep_store *st,
                                        struct tunep_store_experiment_row *ret, tune_error *err);
void tunep_store_experiment_done(struct tunep_store_experiment_row *row);
/*
 * The working folder and command line of the run that created the experiment
 * (tunep_free each); both NULL for a store made before they were recorded.
 */
tune_status tunep_store_read_origin(struct tunep_store *st, char **ret_cwd, char **ret_command_line,
                                    tune_error *err);
/*
 * Opens the experiment in the folder dir (read-only or not) and, when ret_row
 * is not NULL, reads its experiment row: what `tune status`, `tune report`,
 * `tune resume` and a run continuing in its folder all start with.
 * @return TUNE_OK; TUNE_ENOTFOUND when dir holds no experiment: no
 *         experiment.db ("no experiment here (experiment.db is missing)",
 *         source dir), or one without an experiment (a run killed while
 *         creating it); TUNE_ESTORE, TUNE_ENOMEM. On failure nothing stays
 *         open and the outputs are not written.
 */
tune_status tunep_store_open_experiment(const char *dir, int readonly,
                                        struct tunep_store **ret_store,
                                        struct tunep_store_experiment_row *ret_row,
                                        tune_error *err);

/* A trial as stored; everything borrowed for the duration of the callback. */
struct tunep_stored_trial {
    int64_t trial_id;
    int attempt;
    tune_trial_status status;
    int64_t iteration;
    double time_total_s, start_time, end_time;
    const char *error; /* NULL when none */
    size_t n_params;
    const char *const *param_names; /* flattened "a/b" names, in space order */
    const struct tunep_value *params;
    size_t n_metrics; /* each metric's value in the last report of the
                       * current attempt that has it */
    const char *const *metric_names;
    const double *metric_values; /* NaN for a stored NULL */
    /* The last report of the current attempt (NaN / -1 when none, or not recorded). */
    double report_time_total_s, wall_time, time_this_iter_s, time_since_restore;
    int64_t iterations_since_restore;
    /* Where the current attempt ran: 0 / NULL when unknown. */
    int64_t pid;
    const char *hostname, *node_ip;
};
typedef tune_status (*tunep_trial_cb)(void *ud, const struct tunep_stored_trial *t);
/* Calls cb for every trial in trial_id order; stops at the first non-OK return and returns it. */
tune_status tunep_store_foreach_trial(struct tunep_store *st, tunep_trial_cb cb, void *ud,
                                      tune_error *err);

typedef tune_status (*tunep_report_cb)(void *ud, int64_t trial_id, int attempt, int64_t iteration,
                                       double time_total_s, size_t n, const char *const *names,
                                       const double *values);
/* Calls cb for every report, ordered by trial_id, attempt, iteration. */
tune_status tunep_store_foreach_report(struct tunep_store *st, tunep_report_cb cb, void *ud,
                                       tune_error *err);
/* As tunep_store_foreach_report(), for each trial's current (last) attempt only. */
tune_status tunep_store_foreach_last_attempt_report(struct tunep_store *st, tunep_report_cb cb,
                                                    void *ud, tune_error *err);

/* A stored report with its times (tunep_report_times), borrowed for the callback. */
struct tunep_stored_report {
    int64_t trial_id;
    int attempt;
    int64_t iteration;
    double time_total_s, time_this_iter_s, time_since_restore, wall_time; /* NaN: unknown */
    int64_t iterations_since_restore;                                     /* -1: unknown */
    size_t n_metrics;
    const char *const *metric_names;
    const double *metric_values; /* NaN for a stored NULL */
};
typedef tune_status (*tunep_report_row_cb)(void *ud, const struct tunep_stored_report *r);
/* Calls cb for every report of every attempt, ordered by trial_id, attempt, iteration. */
tune_status tunep_store_foreach_report_row(struct tunep_store *st, tunep_report_row_cb cb, void *ud,
                                           tune_error *err);

/*
 * Makes the reads up to tunep_store_read_end() see one snapshot, so that
 * several passes over a store that another process writes agree. No writes in
 * between. Inside a pending write transaction it does nothing (that
 * transaction is already one snapshot, with the pending writes in it).
 */
tune_status tunep_store_read_begin(struct tunep_store *st, tune_error *err);
void tunep_store_read_end(struct tunep_store *st);

/* ---- CSV export (export_csv.c) ------------------------------------------- */

/*
 * results.csv: one row per trial: trial_id, status, training_iteration, one
 * config/<param> column per parameter, the last value of every metric (union
 * over trials, in order of first appearance), time_total_s.
 */
tune_status tunep_export_results_csv(struct tunep_store *st, const char *path, tune_error *err);
/*
 * progress.csv: one row per report of each trial's last attempt: trial_id,
 * training_iteration, time_total_s, then every metric.
 */
tune_status tunep_export_progress_csv(struct tunep_store *st, const char *path, tune_error *err);

/*
 * Opens path (through tunep_atomic_open_output) for an output of the store's
 * experiment: "-" is standard output, and the store's own files (the
 * database, its -wal, -shm and -journal) are refused like non-regular files.
 */
struct tunep_atomic_file;
tune_status tunep_store_output_open(const struct tunep_store *st, struct tunep_atomic_file *f,
                                    const char *path, tune_error *err);

/* Appends one RFC 4180 field: quoted when it holds ',', '"', CR or LF (quotes doubled). */
void tunep_csv_field(struct tunep_buf *b, const char *s);

#endif /* TUNE_STORE_H */
