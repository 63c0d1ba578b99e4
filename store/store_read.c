/*
 * store_read.c - a watcher's own read-only connection to an experiment's
 * store (store_read.h).
 *
 * A connection of its own rather than store.c's: SQLite's data_version is per
 * connection, and the dashboard asks it on every poll while the store object
 * that builds the report reads the same file through another. Opened
 * read-only with query_only set, so nothing here can write; busy_timeout
 * covers the moments where SQLite must wait (WAL recovery after a crash).
 * The connection is used from one thread at a time (SQLITE_OPEN_NOMUTEX).
 */
#include "store/store_read.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>

/* As store.c's: a few seconds is plenty for a checkpoint or a recovery. */
#define READER_BUSY_TIMEOUT_MS 5000

struct tunep_store_reader {
    sqlite3 *db;
    char *path; /* the source of every error */
    sqlite3_stmt *version, *exists, *reports;
};

static tune_status fail(struct tunep_store_reader *r, tune_error *err, const char *what)
{
    return tunep_error_set_at(err, TUNE_ESTORE, r->path, 0, 0, "store: %s: %s", what,
                              r->db ? sqlite3_errmsg(r->db) : "out of memory");
}

static tune_status prepare(struct tunep_store_reader *r, const char *sql, sqlite3_stmt **ret,
                           tune_error *err)
{
    if (sqlite3_prepare_v3(r->db, sql, -1, SQLITE_PREPARE_PERSISTENT, ret, NULL) != SQLITE_OK)
        return fail(r, err, "prepare a read");
    return TUNE_OK;
}

void tunep_store_reader_close(struct tunep_store_reader *r)
{
    if (!r)
        return;
    sqlite3_finalize(r->version);
    sqlite3_finalize(r->exists);
    sqlite3_finalize(r->reports);
    sqlite3_close_v2(r->db);
    tunep_free(r->path);
    tunep_free(r);
}

tune_status tunep_store_reader_open(const char *db_path, struct tunep_store_reader **ret,
                                    tune_error *err)
{
    if (!db_path || !ret)
        return tunep_error_set(err, TUNE_EINVAL, "store: reader: missing argument");
    *ret = NULL;
    struct stat sb;
    if (stat(db_path, &sb) != 0)
        return tunep_error_set_at(err, errno == ENOENT ? TUNE_ENOTFOUND : TUNE_EIO, db_path, 0, 0,
                                  "cannot open: %s", strerror(errno));
    struct tunep_store_reader *r = tunep_calloc(1, sizeof *r);
    /* SQLite reads a name starting with "file:" as a URI (Debian builds it so). */
    char *fname =
        strncmp(db_path, "file:", 5) == 0 ? tunep_asprintf("./%s", db_path) : tunep_strdup(db_path);
    if (!r || !fname || !(r->path = tunep_strdup(db_path))) {
        tunep_free(fname);
        tunep_store_reader_close(r);
        return tunep_error_set_at(err, TUNE_ENOMEM, db_path, 0, 0, "out of memory");
    }
    int rc = sqlite3_open_v2(fname, &r->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    tunep_free(fname);
    tune_status rs = TUNE_OK;
    if (rc != SQLITE_OK) {
        rs = fail(r, err, "open");
        goto out;
    }
    sqlite3_extended_result_codes(r->db, 1);
    sqlite3_busy_timeout(r->db, READER_BUSY_TIMEOUT_MS);
    if (sqlite3_exec(r->db, "PRAGMA query_only = ON", NULL, NULL, NULL) != SQLITE_OK) {
        rs = fail(r, err, "set query_only");
        goto out;
    }
    if ((rs = prepare(r, "PRAGMA data_version", &r->version, err)) ||
        (rs = prepare(r, "SELECT 1 FROM trials WHERE trial_id = ?1", &r->exists, err)) ||
        (rs = prepare(r,
                      "SELECT attempt, training_iteration, time_total_s, wall_time, json(metrics)"
                      " FROM reports WHERE trial_id = ?1 ORDER BY attempt, training_iteration",
                      &r->reports, err)))
        goto out;
    *ret = r;
    return TUNE_OK;
out:
    tunep_store_reader_close(r);
    return rs;
}

tune_status tunep_store_reader_data_version(struct tunep_store_reader *r, int64_t *ret,
                                            tune_error *err)
{
    tune_status rs = TUNE_OK;
    if (sqlite3_step(r->version) == SQLITE_ROW)
        *ret = sqlite3_column_int64(r->version, 0);
    else
        rs = fail(r, err, "read data_version");
    sqlite3_reset(r->version);
    return rs;
}

static double column_real(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? (double)NAN : sqlite3_column_double(q, i);
}

tune_status tunep_store_reader_trial_reports(struct tunep_store_reader *r, int64_t trial_id,
                                             tunep_read_report_cb cb, void *ud, int *ret_found,
                                             tune_error *err)
{
    tune_status rs = TUNE_OK;
    int rc;
    *ret_found = 0;
    /* One read transaction: the trial and its reports come from one snapshot. */
    if (sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return fail(r, err, "begin a read");
    sqlite3_bind_int64(r->exists, 1, trial_id);
    rc = sqlite3_step(r->exists);
    if (rc == SQLITE_ROW)
        *ret_found = 1;
    else if (rc != SQLITE_DONE)
        rs = fail(r, err, "read trials");
    sqlite3_reset(r->exists);
    if (rs || !*ret_found)
        goto out;
    sqlite3_bind_int64(r->reports, 1, trial_id);
    while ((rc = sqlite3_step(r->reports)) == SQLITE_ROW) {
        const char *metrics = (const char *)sqlite3_column_text(r->reports, 4);
        struct tunep_read_report rep = {
            .attempt = sqlite3_column_int(r->reports, 0),
            .iteration = sqlite3_column_int64(r->reports, 1),
            .time_total_s = column_real(r->reports, 2),
            .wall_time = column_real(r->reports, 3),
            .metrics_json = metrics ? metrics : "{}",
        };
        if ((rs = cb(ud, &rep)) != TUNE_OK)
            break;
    }
    if (!rs && rc != SQLITE_DONE)
        rs = fail(r, err, "read reports");
    sqlite3_reset(r->reports);
out:
    sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL);
    return rs;
}

tune_status tunep_store_reader_foreach_device(struct tunep_store_reader *r,
                                              tunep_trial_device_cb cb, void *ud, tune_error *err)
{
    sqlite3_stmt *q = NULL;
    /* The column is optional: look it up on every call, as a run may add it meanwhile. */
    int rc = sqlite3_prepare_v2(r->db,
                                "SELECT count(*) FROM pragma_table_info('trials')"
                                " WHERE name = 'device'",
                                -1, &q, NULL);
    int have = 0;
    if (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW)
        have = sqlite3_column_int(q, 0) > 0;
    sqlite3_finalize(q);
    q = NULL;
    if (rc != SQLITE_ROW)
        return fail(r, err, "read the trials table's columns");
    if (!have)
        return TUNE_OK;
    if (sqlite3_prepare_v2(r->db,
                           "SELECT trial_id, device FROM trials WHERE device IS NOT NULL"
                           " ORDER BY trial_id",
                           -1, &q, NULL) != SQLITE_OK)
        return fail(r, err, "read devices");
    tune_status rs = TUNE_OK;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *dev = (const char *)sqlite3_column_text(q, 1);
        if ((rs = cb(ud, sqlite3_column_int64(q, 0), dev ? dev : "")) != TUNE_OK)
            break;
    }
    if (!rs && rc != SQLITE_DONE)
        rs = fail(r, err, "read devices");
    sqlite3_finalize(q);
    return rs;
}
