/*
 * store_read.h - a watcher's own read-only connection to an experiment's
 * store (store_read.c): whether a run has committed since the last look, and
 * one trial's every report. The dashboard polls through it while a controller
 * writes; everything else reads through store.h.
 *
 * Reading never blocks the writer: the store is in WAL mode, where a reader
 * sees the last commit before its read began and the controller appends to
 * the log meanwhile. Each call is one short read transaction, so the reader
 * holds back no checkpoint for longer than the call.
 */
#ifndef TUNE_STORE_READ_H
#define TUNE_STORE_READ_H

#include <stdint.h>

#include "base/base.h"

struct tunep_store_reader;

/*
 * Opens db_path (an experiment.db) read-only, with its own connection.
 * @return TUNE_OK; TUNE_ENOTFOUND when there is no such file; TUNE_ESTORE
 *         ("store: ...: <sqlite message>", source db_path), TUNE_ENOMEM.
 */
tune_status tunep_store_reader_open(const char *db_path, struct tunep_store_reader **ret,
                                    tune_error *err);
void tunep_store_reader_close(struct tunep_store_reader *r);

/*
 * SQLite's data_version of the reader's connection: it differs from the
 * previous call's value exactly when another connection (the controller)
 * committed in between. Cheap: it reads the WAL index, not the database.
 */
tune_status tunep_store_reader_data_version(struct tunep_store_reader *r, int64_t *ret,
                                            tune_error *err);

/* One stored report; everything borrowed for the duration of the callback. */
struct tunep_read_report {
    int attempt;
    int64_t iteration;
    double time_total_s, wall_time; /* NaN for a stored NULL */
    /* The metrics as the store keeps them: one JSON object, validated and
     * minified by SQLite's json() ({"loss":0.25,"acc":null}; NaN is null,
     * infinities 1e999 and -1e999). */
    const char *metrics_json;
};
typedef tune_status (*tunep_read_report_cb)(void *ud, const struct tunep_read_report *rep);

/*
 * Calls cb for every report of trial_id, of every attempt, ordered by attempt
 * and iteration, in one snapshot; stops at the first non-OK return and
 * returns it. *ret_found is 1 when the trial exists (even without reports).
 */
tune_status tunep_store_reader_trial_reports(struct tunep_store_reader *r, int64_t trial_id,
                                             tunep_read_report_cb cb, void *ud, int *ret_found,
                                             tune_error *err);

/*
 * Calls cb with each trial's device (the GPUs it was placed on, as the trials
 * table's optional "device" column records them), in trial_id order, for the
 * trials that have one. A store without the column calls cb for none.
 */
typedef tune_status (*tunep_trial_device_cb)(void *ud, int64_t trial_id, const char *device);
tune_status tunep_store_reader_foreach_device(struct tunep_store_reader *r,
                                              tunep_trial_device_cb cb, void *ud, tune_error *err);

#endif /* TUNE_STORE_READ_H */
