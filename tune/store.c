/*
 * store.c - the SQLite store of an experiment (experiment.db).
 *
 * The only library file that includes <sqlite3.h>. One store wraps one
 * connection; the controller writes through it from one thread at a time (the
 * study lock), so the connection is opened with SQLITE_OPEN_NOMUTEX. Other
 * processes (`tune status DIR`) read the same file through their own
 * read-only connection while a run writes: WAL lets readers and the writer
 * proceed together, and busy_timeout covers the short moments (checkpoints,
 * WAL recovery) where SQLite must wait for a lock.
 *
 * Schema, version 1 (PRAGMA user_version = 1, PRAGMA application_id = 'tune'):
 *
 *   experiment   (id INTEGER PRIMARY KEY CHECK (id = 1), name, config, metric,
 *                 mode, seed INTEGER, version, created REAL)
 *                one row; seed holds the uint64 seed's bit pattern as a signed
 *                64-bit integer (seeds >= 2^63 read as negative in SQL).
 *   params       (position INTEGER PRIMARY KEY, name TEXT UNIQUE, type, domain)
 *                the space, in order: type is "float", "int", "str", "bool",
 *                or "mixed" (a choice over several kinds); domain is the
 *                distribution's name ("loguniform", "choice", ...).
 *   trials       (trial_id INTEGER PRIMARY KEY, status TEXT, attempt,
 *                 training_iteration, time_total_s, start_time, end_time, error)
 *                the current (last) attempt of each trial.
 *   trial_params (trial_id, position, value, type), PRIMARY KEY (trial_id,
 *                 position), WITHOUT ROWID
 *                value keeps its SQLite type (REAL, INTEGER, TEXT; a bool is an
 *                INTEGER 0/1), type names the value's kind ("bool" tells a
 *                boolean from an integer, also inside a "mixed" parameter).
 *   reports      (trial_id, attempt, training_iteration, time_total_s,
 *                 wall_time, metrics TEXT), PRIMARY KEY (trial_id, attempt,
 *                 training_iteration), WITHOUT ROWID
 *                every report of every attempt; failed attempts stay.
 *
 * Metrics are one JSON object per report ({"loss": 0.25, "acc": null}) rather
 * than a row per metric: a report is then one INSERT into one B-tree (one page
 * written per commit instead of one per metric plus a name table), the text is
 * built in a buffer the store reuses (no malloc per report), users query it
 * with json_extract(), and the key order keeps the order in which metrics
 * appeared. NaN is written as null (read back as NaN); +-inf as 1e999 and
 * -1e999, which SQLite (and Python's json) read as infinities. Reading uses
 * SQLite's json_each(), whose number conversion calls strtod() and so follows
 * LC_NUMERIC: every step through it runs under a private "C" locale
 * (uselocale), or a host program with ',' decimals would read 0.5 as 0.
 *
 * Writes go into a transaction that the first write opens (BEGIN IMMEDIATE)
 * and tunep_store_commit() closes; with journal_mode=WAL and
 * synchronous=NORMAL a commit appends to the WAL without fsync, so committed
 * data survives a crash of the process but not necessarily a power loss.
 * Write statements are prepared once (SQLITE_PREPARE_PERSISTENT) and reused.
 * Every SQLite failure becomes TUNE_ESTORE with sqlite3_errmsg() copied at
 * once (later calls overwrite it), e.g. "store: insert report for trial 7:
 * database or disk is full", and err->source set to the database path.
 *
 * Invariants: st->in_txn is 1 exactly while a write transaction is open on
 * the connection (resynchronised with sqlite3_get_autocommit() after every
 * failure, since SQLite rolls back by itself on some errors). A failed write
 * leaves the pending transaction as it was before the call: trial_start runs
 * its several statements under a SAVEPOINT.
 *
 * Migrations: user_version is the schema version. A later version adds a
 * step from N to N + 1 run when a writable store opens an older file; a file
 * newer than this code is refused.
 *
 * References: https://sqlite.org/wal.html, https://sqlite.org/pragma.html,
 * https://sqlite.org/withoutrowid.html, https://sqlite.org/json1.html.
 */
#include "store.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#define STORE_SCHEMA_VERSION 1
#define STORE_APPLICATION_ID 0x74756E65 /* "tune" in ASCII */
/*
 * How long a connection waits for a lock before SQLITE_BUSY. Readers in WAL
 * mode wait only during checkpoints and recovery (milliseconds); 5 s leaves a
 * wide margin on a loaded machine without hanging a `tune status` for long.
 */
#define STORE_BUSY_TIMEOUT_MS 5000

static const char schema_sql[] =
    "CREATE TABLE experiment (\n"
    "    id INTEGER PRIMARY KEY CHECK (id = 1),\n"
    "    name TEXT,\n"
    "    config TEXT,\n"
    "    metric TEXT,\n"
    "    mode TEXT,\n"
    "    seed INTEGER NOT NULL,\n"
    "    version TEXT,\n"
    "    created REAL\n"
    ");\n"
    "CREATE TABLE params (\n"
    "    position INTEGER PRIMARY KEY,\n"
    "    name TEXT NOT NULL UNIQUE,\n"
    "    type TEXT NOT NULL,\n"
    "    domain TEXT\n"
    ");\n"
    "CREATE TABLE trials (\n"
    "    trial_id INTEGER PRIMARY KEY,\n"
    "    status TEXT NOT NULL,\n"
    "    attempt INTEGER NOT NULL,\n"
    "    training_iteration INTEGER NOT NULL DEFAULT 0,\n"
    "    time_total_s REAL,\n"
    "    start_time REAL,\n"
    "    end_time REAL,\n"
    "    error TEXT\n"
    ");\n"
    "CREATE TABLE trial_params (\n"
    "    trial_id INTEGER NOT NULL REFERENCES trials (trial_id),\n"
    "    position INTEGER NOT NULL REFERENCES params (position),\n"
    "    value,\n"
    "    type TEXT NOT NULL,\n"
    "    PRIMARY KEY (trial_id, position)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE reports (\n"
    "    trial_id INTEGER NOT NULL REFERENCES trials (trial_id),\n"
    "    attempt INTEGER NOT NULL,\n"
    "    training_iteration INTEGER NOT NULL,\n"
    "    time_total_s REAL,\n"
    "    wall_time REAL,\n"
    "    metrics TEXT NOT NULL,\n"
    "    PRIMARY KEY (trial_id, attempt, training_iteration)\n"
    ") WITHOUT ROWID;\n";

/* The write statements, prepared once per writable store. */
enum stmt_id {
    S_BEGIN,
    S_COMMIT,
    S_SAVEPOINT,
    S_RELEASE,
    S_ROLLBACK_TO,
    S_TRIAL_RESTART,
    S_TRIAL_INSERT,
    S_PARAM_INSERT,
    S_REPORTS_CLEAR,
    S_TRIAL_END,
    S_REPORT_INSERT,
    S_COUNT
};

static const char *const stmt_sql[S_COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_SAVEPOINT] = "SAVEPOINT trial_start",
    [S_RELEASE] = "RELEASE trial_start",
    [S_ROLLBACK_TO] = "ROLLBACK TO trial_start",
    [S_TRIAL_RESTART] = "UPDATE trials SET status = 'RUNNING', attempt = ?2, training_iteration = 0,"
                        " time_total_s = NULL, start_time = ?3, end_time = NULL, error = NULL"
                        " WHERE trial_id = ?1",
    [S_TRIAL_INSERT] = "INSERT INTO trials (trial_id, status, attempt, training_iteration,"
                       " start_time) VALUES (?1, 'RUNNING', ?2, 0, ?3)",
    [S_PARAM_INSERT] = "INSERT INTO trial_params (trial_id, position, value, type)"
                       " VALUES (?1, ?2, ?3, ?4)",
    [S_REPORTS_CLEAR] = "DELETE FROM reports WHERE trial_id = ?1 AND attempt = ?2",
    [S_TRIAL_END] = "UPDATE trials SET status = ?3, training_iteration = ?4, time_total_s = ?5,"
                    " end_time = ?6, error = ?7 WHERE trial_id = ?1 AND attempt = ?2",
    [S_REPORT_INSERT] = "INSERT INTO reports (trial_id, attempt, training_iteration,"
                        " time_total_s, wall_time, metrics) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
};

/* Kinds of parameter and value as the params and trial_params tables name them. */
enum ptype { PT_FLOAT, PT_INT, PT_STR, PT_BOOL, PT_MIXED, PT_COUNT };
static const char *const ptype_names[PT_COUNT] = {"float", "int", "str", "bool", "mixed"};

/* Trial status names, indexed by tune_trial_status (as tune_trial_status_name()). */
static const char *const status_names[TUNE_TRIAL_STATUS_COUNT] = {
    [TUNE_TRIAL_PENDING] = "PENDING",       [TUNE_TRIAL_RUNNING] = "RUNNING",
    [TUNE_TRIAL_TERMINATED] = "TERMINATED", [TUNE_TRIAL_STOPPED] = "STOPPED",
    [TUNE_TRIAL_ERROR] = "ERROR",
};

struct tunep_store {
    sqlite3 *db;
    char *path;    /* as given; the source of every error */
    int readonly;
    int in_txn;    /* a write transaction is open (see the invariants above) */
    int in_read;   /* tunep_store_read_begin() opened a read transaction */
    sqlite3_stmt *stmt[S_COUNT];
    size_t n_params;
    char **param_names;     /* owned, position order */
    enum ptype *param_types;
    struct tunep_buf json;  /* the metrics text of the report being written */
    locale_t c_locale;      /* "C", for json_each's strtod() */
};

/* ---- errors --------------------------------------------------------------- */

/* The state of in_txn after a failure: SQLite may have rolled back by itself. */
static int txn_lost(struct tunep_store *st)
{
    if (st->in_txn && st->db && sqlite3_get_autocommit(st->db)) {
        st->in_txn = 0;
        return 1;
    }
    return 0;
}

/*
 * Sets err to TUNE_ESTORE "store: <what>: <sqlite message>" and returns it.
 * Call it right after the failing call, before anything else touches the
 * connection: sqlite3_errmsg() is copied first.
 */
static tune_status TUNEP_PRINTF(3, 4) db_fail(struct tunep_store *st, tune_error *err,
                                              const char *fmt, ...)
{
    char msg[256], what[256];
    va_list ap;
    snprintf(msg, sizeof msg, "%s", st->db ? sqlite3_errmsg(st->db) : "out of memory");
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int lost = txn_lost(st);
    return tunep_error_set_at(err, TUNE_ESTORE, st->path, 0, 0, "store: %s: %s%s", what, msg,
                              lost ? " (uncommitted writes were rolled back)" : "");
}

static tune_status oom(const struct tunep_store *st, tune_error *err)
{
    return tunep_error_set_at(err, TUNE_ENOMEM, st ? st->path : NULL, 0, 0, "out of memory");
}

/* ---- small helpers -------------------------------------------------------- */

/* Runs a statement that returns no rows and resets it; SQLITE_DONE or the error code. */
static int run_stmt(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        rc = SQLITE_DONE; /* PRAGMAs and the like: the rows are not needed */
    if (rc != SQLITE_DONE) {
        sqlite3_reset(s);
        return rc;
    }
    rc = sqlite3_reset(s);
    return rc == SQLITE_OK ? SQLITE_DONE : rc;
}

static tune_status exec_sql(struct tunep_store *st, const char *sql, const char *what,
                            tune_error *err)
{
    if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(st, err, "%s", what);
    return TUNE_OK;
}

static tune_status prepare(struct tunep_store *st, const char *sql, unsigned flags,
                           sqlite3_stmt **ret, tune_error *err)
{
    if (sqlite3_prepare_v3(st->db, sql, -1, flags, ret, NULL) != SQLITE_OK) {
        *ret = NULL;
        return db_fail(st, err, "prepare '%.60s'", sql);
    }
    return TUNE_OK;
}

/* One integer from a one-row query (a PRAGMA, a count). */
static tune_status query_int64(struct tunep_store *st, const char *sql, int64_t *ret,
                               tune_error *err)
{
    sqlite3_stmt *s;
    tune_status rs = prepare(st, sql, 0, &s, err);
    if (rs)
        return rs;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *ret = sqlite3_column_int64(s, 0);
    } else if (rc == SQLITE_DONE) {
        *ret = 0;
    } else {
        rs = db_fail(st, err, "%s", sql);
    }
    sqlite3_finalize(s);
    return rs;
}

/* Binds a double; NaN becomes NULL (SQLite does the same, this only says it). */
static int bind_real(sqlite3_stmt *s, int i, double v)
{
    return isnan(v) ? sqlite3_bind_null(s, i) : sqlite3_bind_double(s, i, v);
}

static double column_real(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? (double)NAN : sqlite3_column_double(s, i);
}

static char *column_strdup(sqlite3_stmt *s, int i, int *oom_flag)
{
    const char *t = (const char *)sqlite3_column_text(s, i);
    if (!t)
        return NULL;
    char *p = tunep_strdup(t);
    if (!p)
        *oom_flag = 1;
    return p;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 1;
    size_t ncap = *cap ? *cap * 2 : 16;
    while (ncap < need)
        ncap *= 2;
    void *q = tunep_realloc(*p, *cap * elem, ncap * elem);
    if (!q)
        return 0;
    *p = q;
    *cap = ncap;
    return 1;
}

/* The kind of a parameter of the space, as the params table records it. */
static enum ptype param_kind(const struct tunep_param *p)
{
    switch (p->dist) {
        case TUNEP_DIST_UNIFORM:
        case TUNEP_DIST_QUNIFORM:
        case TUNEP_DIST_LOGUNIFORM:
        case TUNEP_DIST_QLOGUNIFORM:
        case TUNEP_DIST_RANDN:
        case TUNEP_DIST_QRANDN:
            return PT_FLOAT;
        case TUNEP_DIST_RANDINT:
        case TUNEP_DIST_QRANDINT:
        case TUNEP_DIST_LOGRANDINT:
        case TUNEP_DIST_QLOGRANDINT:
            return PT_INT;
        default:
            break;
    }
    if (p->n_values == 0)
        return PT_MIXED;
    for (size_t i = 1; i < p->n_values; i++)
        if (p->values[i].type != p->values[0].type)
            return PT_MIXED;
    return (enum ptype)p->values[0].type;
}

static enum ptype ptype_from_name(const char *s, enum ptype fallback)
{
    if (s)
        for (int k = 0; k < PT_COUNT; k++)
            if (strcmp(s, ptype_names[k]) == 0)
                return (enum ptype)k;
    return fallback;
}

/*
 * SQLite reads a name starting with "file:" as a URI when it was built with
 * SQLITE_USE_URI (Debian's is); "./file:..." is the same file, read literally.
 */
static char *sqlite_filename(const char *path)
{
    if (strncmp(path, "file:", 5) == 0)
        return tunep_asprintf("./%s", path);
    return tunep_strdup(path);
}

/* ---- opening and closing -------------------------------------------------- */

static void store_free(struct tunep_store *st)
{
    if (!st)
        return;
    for (int i = 0; i < S_COUNT; i++)
        sqlite3_finalize(st->stmt[i]);
    if (st->db)
        sqlite3_close(st->db);
    for (size_t i = 0; st->param_names && i < st->n_params; i++)
        tunep_free(st->param_names[i]);
    tunep_free(st->param_names);
    tunep_free(st->param_types);
    tunep_buf_done(&st->json);
    if (st->c_locale)
        freelocale(st->c_locale);
    tunep_free(st->path);
    tunep_free(st);
}

/* Allocates the store and opens the connection with flags; *ret_missing when there is no file. */
static tune_status store_connect(const char *db_path, int flags, int readonly,
                                 struct tunep_store **ret, int *ret_missing, tune_error *err)
{
    struct tunep_store *st = tunep_calloc(1, sizeof *st);
    if (!st)
        return oom(NULL, err);
    tunep_buf_init(&st->json);
    st->readonly = readonly;
    st->path = tunep_strdup(db_path);
    char *fname = sqlite_filename(db_path);
    st->c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (!st->path || !fname || !st->c_locale) {
        tunep_free(fname);
        store_free(st);
        return oom(NULL, err);
    }
    int rc = sqlite3_open_v2(fname, &st->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
    tunep_free(fname);
    if (rc != SQLITE_OK) {
        struct stat sb;
        tune_status rs;
        if (rc == SQLITE_CANTOPEN && stat(db_path, &sb) != 0 && errno == ENOENT) {
            *ret_missing = 1;
            rs = tunep_error_set_at(err, TUNE_ENOTFOUND, db_path, 0, 0, "no experiment here");
        } else {
            rs = db_fail(st, err, "open");
        }
        store_free(st);
        return rs;
    }
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_busy_timeout(st->db, STORE_BUSY_TIMEOUT_MS);
    *ret = st;
    return TUNE_OK;
}

/* Settings of a writing connection (journal_mode is persistent; the rest are per connection). */
static tune_status set_write_pragmas(struct tunep_store *st, tune_error *err)
{
    sqlite3_stmt *s;
    tune_status rs = prepare(st, "PRAGMA journal_mode = WAL", 0, &s, err);
    if (rs)
        return rs;
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        rs = db_fail(st, err, "set journal_mode");
    } else {
        const char *mode = (const char *)sqlite3_column_text(s, 0);
        /* ":memory:" answers "memory"; anything else means WAL is unavailable here. */
        if (mode && strcmp(mode, "wal") != 0 && strcmp(mode, "memory") != 0)
            tunep_log(TUNE_LOG_WARN, "%s: journal_mode is '%s', not 'wal': readers will block",
                      st->path, mode);
    }
    sqlite3_finalize(s);
    if (rs)
        return rs;
    return exec_sql(st, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
                    "set pragmas", err);
}

static tune_status prepare_writes(struct tunep_store *st, tune_error *err)
{
    for (int i = 0; i < S_COUNT; i++) {
        tune_status rs = prepare(st, stmt_sql[i], SQLITE_PREPARE_PERSISTENT, &st->stmt[i], err);
        if (rs)
            return rs;
    }
    return TUNE_OK;
}

/* Loads the params table: names and kinds in position order. */
static tune_status load_params(struct tunep_store *st, tune_error *err)
{
    sqlite3_stmt *s;
    size_t cap = 0, cap_t = 0;
    int rc, nomem = 0;
    tune_status rs = prepare(st, "SELECT position, name, type FROM params ORDER BY position", 0,
                             &s, err);
    if (rs)
        return rs;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        size_t n = st->n_params;
        if (sqlite3_column_int64(s, 0) != (int64_t)n) {
            rs = tunep_error_set_at(err, TUNE_ESTORE, st->path, 0, 0,
                                    "store: params table has no position %zu", n);
            goto out;
        }
        if (!grow((void **)&st->param_names, &cap, n + 1, sizeof *st->param_names) ||
            !grow((void **)&st->param_types, &cap_t, n + 1, sizeof *st->param_types)) {
            rs = oom(st, err);
            goto out;
        }
        st->param_names[n] = column_strdup(s, 1, &nomem);
        if (!st->param_names[n]) {
            rs = nomem ? oom(st, err)
                       : tunep_error_set_at(err, TUNE_ESTORE, st->path, 0, 0,
                                            "store: parameter %zu has no name", n);
            goto out;
        }
        st->param_types[n] = ptype_from_name((const char *)sqlite3_column_text(s, 2), PT_MIXED);
        st->n_params = n + 1;
    }
    if (rc != SQLITE_DONE)
        rs = db_fail(st, err, "read params");
out:
    sqlite3_finalize(s);
    return rs;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static tune_status insert_schema(struct tunep_store *st, const struct tunep_store_experiment *exp,
                                 const tune_space *space, tune_error *err)
{
    sqlite3_stmt *s = NULL;
    char pragmas[96];
    tune_status rs = exec_sql(st, schema_sql, "create tables", err);
    if (rs)
        return rs;
    snprintf(pragmas, sizeof pragmas, "PRAGMA application_id = %d; PRAGMA user_version = %d;",
             STORE_APPLICATION_ID, STORE_SCHEMA_VERSION);
    if ((rs = exec_sql(st, pragmas, "set schema version", err)))
        return rs;
    if ((rs = prepare(st,
                      "INSERT INTO experiment (id, name, config, metric, mode, seed, version,"
                      " created) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                      0, &s, err)))
        return rs;
    sqlite3_bind_text(s, 1, exp->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, exp->config_json, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, exp->metric, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, exp->mode, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)exp->seed);
    sqlite3_bind_text(s, 6, exp->version, -1, SQLITE_STATIC);
    bind_real(s, 7, exp->created);
    if (run_stmt(s) != SQLITE_DONE)
        rs = db_fail(st, err, "insert experiment");
    sqlite3_finalize(s);
    if (rs || !space)
        return rs;
    if ((rs = prepare(st, "INSERT INTO params (position, name, type, domain) VALUES (?1, ?2, ?3, ?4)",
                      0, &s, err)))
        return rs;
    for (size_t i = 0; i < space->n && !rs; i++) {
        const struct tunep_param *p = &space->params[i];
        sqlite3_bind_int64(s, 1, (sqlite3_int64)i);
        sqlite3_bind_text(s, 2, p->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, ptype_names[param_kind(p)], -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 4, tunep_dist_name(p->dist), -1, SQLITE_STATIC);
        if (run_stmt(s) != SQLITE_DONE)
            rs = db_fail(st, err, "insert parameter '%s'", p->name);
    }
    sqlite3_finalize(s);
    return rs;
}

/* Sets ESTORE when the database already has tables; the file may be empty or new. */
static tune_status check_empty(struct tunep_store *st, tune_error *err)
{
    int64_t n_tables = 0, has_exp = 0;
    tune_status rs = query_int64(st, "SELECT count(*) FROM sqlite_schema", &n_tables, err);
    if (!rs && n_tables > 0)
        rs = query_int64(st,
                         "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND"
                         " name = 'experiment'",
                         &has_exp, err);
    if (rs || n_tables == 0)
        return rs;
    return tunep_error_set_at(err, TUNE_ESTORE, st->path, 0, 0,
                              has_exp ? "%s already holds an experiment"
                                      : "%s already holds another database",
                              base_name(st->path));
}

tune_status tunep_store_create(const char *db_path, const struct tunep_store_experiment *exp,
                               const tune_space *space, struct tunep_store **ret,
                               tune_error *err)
{
    struct tunep_store *st = NULL;
    int missing = 0;
    tune_status rs;
    if (!db_path || !exp || !ret)
        return tunep_error_set(err, TUNE_EINVAL, "store: create: missing argument");
    if (space && space->n > 0 && !space->params)
        return tunep_error_set(err, TUNE_EINVAL, "store: create: space without parameters");
    rs = store_connect(db_path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 0, &st, &missing,
                       err);
    if (rs)
        return rs;
    /* Look before switching to WAL, so a foreign database keeps its journal mode. */
    if ((rs = check_empty(st, err)) || (rs = set_write_pragmas(st, err)))
        goto fail;
    if ((rs = exec_sql(st, "BEGIN IMMEDIATE", "begin transaction", err)))
        goto fail;
    /* Again under the write lock: another process may have created it meanwhile. */
    if ((rs = check_empty(st, err)) || (rs = insert_schema(st, exp, space, err))) {
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        goto fail;
    }
    if ((rs = exec_sql(st, "COMMIT", "commit schema", err))) {
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        goto fail;
    }
    if ((rs = load_params(st, err)) || (rs = prepare_writes(st, err)))
        goto fail;
    *ret = st;
    return TUNE_OK;
fail:
    store_free(st);
    return rs;
}

tune_status tunep_store_open(const char *db_path, int readonly, struct tunep_store **ret,
                             tune_error *err)
{
    struct tunep_store *st = NULL;
    int missing = 0;
    int64_t app_id = 0, version = 0, has_exp = 0;
    tune_status rs;
    if (!db_path || !ret)
        return tunep_error_set(err, TUNE_EINVAL, "store: open: missing argument");
    rs = store_connect(db_path, readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE,
                       readonly, &st, &missing, err);
    if (rs)
        return rs;
    if ((rs = query_int64(st, "PRAGMA application_id", &app_id, err)) ||
        (rs = query_int64(st, "PRAGMA user_version", &version, err)) ||
        (rs = query_int64(st,
                          "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND"
                          " name = 'experiment'",
                          &has_exp, err)))
        goto fail;
    if (!has_exp && version == 0) {
        rs = tunep_error_set_at(err, TUNE_ENOTFOUND, st->path, 0, 0, "no experiment here");
        goto fail;
    }
    if (app_id != STORE_APPLICATION_ID || !has_exp) {
        rs = tunep_error_set_at(err, TUNE_ESTORE, st->path, 0, 0,
                                "store: not an experiment database of tune");
        goto fail;
    }
    if (version != STORE_SCHEMA_VERSION) {
        rs = tunep_error_set_at(err, TUNE_ESTORE, st->path, 0, 0,
                                "store: schema version %lld is not supported (this tune reads %d)",
                                (long long)version, STORE_SCHEMA_VERSION);
        goto fail;
    }
    if (readonly)
        rs = exec_sql(st, "PRAGMA query_only = ON", "set query_only", err);
    else if (!(rs = set_write_pragmas(st, err)))
        rs = prepare_writes(st, err);
    if (rs || (rs = load_params(st, err)))
        goto fail;
    *ret = st;
    return TUNE_OK;
fail:
    store_free(st);
    return rs;
}

void tunep_store_close(struct tunep_store *st)
{
    if (!st)
        return;
    tune_error e;
    if (st->in_read)
        tunep_store_read_end(st);
    if (tunep_store_commit(st, &e) != TUNE_OK)
        tunep_log(TUNE_LOG_ERROR, "%s: %s", e.source, e.text);
    store_free(st);
}

const char *const *tunep_store_param_names(const struct tunep_store *st, size_t *ret_n)
{
    *ret_n = st->n_params;
    return (const char *const *)st->param_names;
}

/* ---- writing -------------------------------------------------------------- */

static tune_status check_writable(struct tunep_store *st, tune_error *err)
{
    if (!st)
        return tunep_error_set(err, TUNE_EINVAL, "store: no store");
    if (st->readonly)
        return tunep_error_set_at(err, TUNE_EINVAL, st->path, 0, 0, "store: opened read-only");
    if (st->in_read)
        return tunep_error_set_at(err, TUNE_EINVAL, st->path, 0, 0,
                                  "store: write inside a read snapshot");
    return TUNE_OK;
}

/* Opens the write transaction if none is open. */
static tune_status begin(struct tunep_store *st, tune_error *err)
{
    if (st->in_txn)
        return TUNE_OK;
    if (run_stmt(st->stmt[S_BEGIN]) != SQLITE_DONE)
        return db_fail(st, err, "begin transaction");
    st->in_txn = 1;
    return TUNE_OK;
}

/* Undoes a half-done trial_start. Failure here leaves only the transaction rollback. */
static void savepoint_undo(struct tunep_store *st)
{
    if (st->in_txn && !sqlite3_get_autocommit(st->db)) {
        run_stmt(st->stmt[S_ROLLBACK_TO]);
        run_stmt(st->stmt[S_RELEASE]);
    }
}

tune_status tunep_store_trial_start(struct tunep_store *st, int64_t trial_id, int attempt,
                                    const tune_space *space, const struct tunep_value *values,
                                    double start_time, tune_error *err)
{
    tune_status rs = check_writable(st, err);
    if (rs)
        return rs;
    if (space && space->n != st->n_params)
        return tunep_error_set_at(err, TUNE_EINVAL, st->path, 0, 0,
                                  "store: trial %lld: space has %zu parameters, store has %zu",
                                  (long long)trial_id, space->n, st->n_params);
    if (st->n_params > 0 && !values)
        return tunep_error_set_at(err, TUNE_EINVAL, st->path, 0, 0,
                                  "store: trial %lld: no parameter values", (long long)trial_id);
    if ((rs = begin(st, err)))
        return rs;
    if (run_stmt(st->stmt[S_SAVEPOINT]) != SQLITE_DONE)
        return db_fail(st, err, "start trial %lld", (long long)trial_id);

    /* A trial that exists is being retried (or resumed): it becomes this attempt. */
    sqlite3_stmt *s = st->stmt[S_TRIAL_RESTART];
    sqlite3_bind_int64(s, 1, trial_id);
    sqlite3_bind_int(s, 2, attempt);
    bind_real(s, 3, start_time);
    if (run_stmt(s) != SQLITE_DONE)
        goto fail;
    if (sqlite3_changes(st->db) > 0) {
        /* Reports an interrupted run of this same attempt left behind are stale. */
        s = st->stmt[S_REPORTS_CLEAR];
        sqlite3_bind_int64(s, 1, trial_id);
        sqlite3_bind_int(s, 2, attempt);
        if (run_stmt(s) != SQLITE_DONE)
            goto fail;
    } else {
        s = st->stmt[S_TRIAL_INSERT];
        sqlite3_bind_int64(s, 1, trial_id);
        sqlite3_bind_int(s, 2, attempt);
        bind_real(s, 3, start_time);
        if (run_stmt(s) != SQLITE_DONE)
            goto fail;
        s = st->stmt[S_PARAM_INSERT];
        sqlite3_bind_int64(s, 1, trial_id);
        for (size_t i = 0; i < st->n_params; i++) {
            const struct tunep_value *v = &values[i];
            int kind = (int)v->type;
            sqlite3_bind_int64(s, 2, (sqlite3_int64)i);
            switch (v->type) {
                case TUNEP_V_DOUBLE:
                    bind_real(s, 3, v->u.d);
                    break;
                case TUNEP_V_INT:
                    sqlite3_bind_int64(s, 3, v->u.i);
                    break;
                case TUNEP_V_STRING:
                    sqlite3_bind_text(s, 3, v->u.s ? v->u.s : "", -1, SQLITE_STATIC);
                    break;
                case TUNEP_V_BOOL:
                    sqlite3_bind_int(s, 3, v->u.b != 0);
                    break;
                default:
                    savepoint_undo(st);
                    return tunep_error_set_at(err, TUNE_EINVAL, st->path, 0, 0,
                                              "store: trial %lld: parameter '%s' has kind %d",
                                              (long long)trial_id, st->param_names[i], kind);
            }
            sqlite3_bind_text(s, 4, ptype_names[kind], -1, SQLITE_STATIC);
            if (run_stmt(s) != SQLITE_DONE)
                goto fail;
        }
    }
    if (run_stmt(st->stmt[S_RELEASE]) != SQLITE_DONE)
        goto fail;
    return TUNE_OK;
fail:
    rs = db_fail(st, err, "start trial %lld attempt %d", (long long)trial_id, attempt);
    savepoint_undo(st);
    return rs;
}

tune_status tunep_store_trial_end(struct tunep_store *st, int64_t trial_id, int attempt,
                                  tune_trial_status status, int64_t iteration,
                                  double time_total_s, double end_time, const char *error,
                                  tune_error *err)
{
    tune_status rs = check_writable(st, err);
    if (rs)
        return rs;
    if ((int)status < 0 || status >= TUNE_TRIAL_STATUS_COUNT)
        return tunep_error_set_at(err, TUNE_EINVAL, st->path, 0, 0,
                                  "store: trial %lld: status %d", (long long)trial_id,
                                  (int)status);
    if ((rs = begin(st, err)))
        return rs;
    sqlite3_stmt *s = st->stmt[S_TRIAL_END];
    sqlite3_bind_int64(s, 1, trial_id);
    sqlite3_bind_int(s, 2, attempt);
    sqlite3_bind_text(s, 3, status_names[status], -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, iteration);
    bind_real(s, 5, time_total_s);
    bind_real(s, 6, end_time);
    if (error)
        sqlite3_bind_text(s, 7, error, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 7);
    if (run_stmt(s) != SQLITE_DONE)
        return db_fail(st, err, "end trial %lld attempt %d", (long long)trial_id, attempt);
    if (sqlite3_changes(st->db) == 0)
        return tunep_error_set_at(err, TUNE_ENOTFOUND, st->path, 0, 0,
                                  "store: end trial %lld attempt %d: no such attempt started",
                                  (long long)trial_id, attempt);
    return TUNE_OK;
}

/* Appends s as a JSON string (quotes, backslashes and control bytes escaped; UTF-8 as is). */
static void json_put_string(struct tunep_buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const char *run = s;
    tunep_buf_append(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        tunep_buf_append(b, run, (size_t)(s - run));
        run = s + 1;
        char esc[6] = {'\\', (char)c, 0, 0, 0, 0};
        size_t n = 2;
        switch (c) {
            case '"':
            case '\\':
                break;
            case '\n':
                esc[1] = 'n';
                break;
            case '\r':
                esc[1] = 'r';
                break;
            case '\t':
                esc[1] = 't';
                break;
            default:
                esc[1] = 'u';
                esc[2] = '0';
                esc[3] = '0';
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 15];
                n = 6;
                break;
        }
        tunep_buf_append(b, esc, n);
    }
    tunep_buf_append(b, run, (size_t)(s - run));
    tunep_buf_append(b, "\"", 1);
}

static void json_put_number(struct tunep_buf *b, double v)
{
    char num[40];
    if (isnan(v)) {
        tunep_buf_append(b, "null", 4);
        return;
    }
    if (isinf(v)) {
        /* Valid JSON that overflows to an infinity in SQLite, Python and strtod(). */
        tunep_buf_puts(b, v > 0 ? "1e999" : "-1e999");
        return;
    }
    tunep_format_double(num, sizeof num, v);
    tunep_buf_puts(b, num);
}

tune_status tunep_store_report(struct tunep_store *st, int64_t trial_id, int attempt,
                               int64_t iteration, double time_total_s, double wall_time,
                               size_t n, const char *const *names, const double *values,
                               tune_error *err)
{
    tune_status rs = check_writable(st, err);
    if (rs)
        return rs;
    if (n > 0 && (!names || !values))
        return tunep_error_set_at(err, TUNE_EINVAL, st->path, 0, 0,
                                  "store: report for trial %lld: no metrics", (long long)trial_id);
    struct tunep_buf *b = &st->json;
    b->len = 0; /* reuse the buffer: no allocation once it has grown */
    tunep_buf_append(b, "{", 1);
    for (size_t i = 0; i < n; i++) {
        if (!names[i])
            return tunep_error_set_at(err, TUNE_EINVAL, st->path, 0, 0,
                                      "store: report for trial %lld: metric %zu has no name",
                                      (long long)trial_id, i);
        if (i > 0)
            tunep_buf_append(b, ",", 1);
        json_put_string(b, names[i]);
        tunep_buf_append(b, ":", 1);
        json_put_number(b, values[i]);
    }
    tunep_buf_append(b, "}", 1);
    if (b->oom) {
        tunep_buf_done(b);
        return oom(st, err);
    }
    if ((rs = begin(st, err)))
        return rs;
    sqlite3_stmt *s = st->stmt[S_REPORT_INSERT];
    sqlite3_bind_int64(s, 1, trial_id);
    sqlite3_bind_int(s, 2, attempt);
    sqlite3_bind_int64(s, 3, iteration);
    bind_real(s, 4, time_total_s);
    bind_real(s, 5, wall_time);
    sqlite3_bind_text(s, 6, b->data, (int)b->len, SQLITE_STATIC);
    if (run_stmt(s) != SQLITE_DONE)
        return db_fail(st, err, "insert report for trial %lld", (long long)trial_id);
    return TUNE_OK;
}

tune_status tunep_store_commit(struct tunep_store *st, tune_error *err)
{
    if (!st)
        return tunep_error_set(err, TUNE_EINVAL, "store: no store");
    if (!st->in_txn)
        return TUNE_OK;
    if (run_stmt(st->stmt[S_COMMIT]) != SQLITE_DONE)
        return db_fail(st, err, "commit");
    st->in_txn = 0;
    return TUNE_OK;
}

/* ---- reading -------------------------------------------------------------- */

tune_status tunep_store_read_begin(struct tunep_store *st, tune_error *err)
{
    if (!st)
        return tunep_error_set(err, TUNE_EINVAL, "store: no store");
    if (st->in_txn || st->in_read)
        return TUNE_OK; /* the open transaction already is one snapshot */
    tune_status rs = exec_sql(st, "BEGIN", "begin read", err);
    if (!rs)
        st->in_read = 1;
    return rs;
}

void tunep_store_read_end(struct tunep_store *st)
{
    if (!st || !st->in_read)
        return;
    st->in_read = 0;
    if (sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}

tune_status tunep_store_read_experiment(struct tunep_store *st,
                                        struct tunep_store_experiment_row *ret, tune_error *err)
{
    struct tunep_store_experiment_row row = {0};
    sqlite3_stmt *s;
    int nomem = 0;
    if (!st || !ret)
        return tunep_error_set(err, TUNE_EINVAL, "store: read experiment: missing argument");
    tune_status rs = prepare(st,
                             "SELECT name, config, metric, mode, seed, version, created"
                             " FROM experiment WHERE id = 1",
                             0, &s, err);
    if (rs)
        return rs;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        row.name = column_strdup(s, 0, &nomem);
        row.config_json = column_strdup(s, 1, &nomem);
        row.metric = column_strdup(s, 2, &nomem);
        row.mode = column_strdup(s, 3, &nomem);
        row.seed = (uint64_t)sqlite3_column_int64(s, 4);
        row.version = column_strdup(s, 5, &nomem);
        row.created = column_real(s, 6);
        if (nomem)
            rs = oom(st, err);
    } else if (rc == SQLITE_DONE) {
        rs = tunep_error_set_at(err, TUNE_ENOTFOUND, st->path, 0, 0,
                                "store: the experiment row is missing");
    } else {
        rs = db_fail(st, err, "read experiment");
    }
    sqlite3_finalize(s);
    if (rs) {
        tunep_store_experiment_done(&row);
        return rs;
    }
    *ret = row;
    return TUNE_OK;
}

void tunep_store_experiment_done(struct tunep_store_experiment_row *row)
{
    if (!row)
        return;
    tunep_free(row->name);
    tunep_free(row->config_json);
    tunep_free(row->metric);
    tunep_free(row->mode);
    tunep_free(row->version);
    memset(row, 0, sizeof *row);
}

/*
 * The metrics of one report, decoded from its JSON text. Names are copied into
 * an arena (each json_each step invalidates the previous row's text) and the
 * pointers are fixed once the arena stops moving. Reused from row to row.
 */
struct metric_rows {
    struct tunep_buf arena;
    size_t *off;
    const char **names;
    double *values;
    size_t n, cap, cap_names, cap_values;
};

static void metric_rows_done(struct metric_rows *m)
{
    tunep_buf_done(&m->arena);
    tunep_free(m->off);
    tunep_free((void *)m->names);
    tunep_free(m->values);
}

/* Decodes json (may be NULL: no metrics) with stmt `SELECT key, value FROM json_each(?1)`. */
static tune_status decode_metrics(struct tunep_store *st, sqlite3_stmt *q, const char *json,
                                  int64_t trial_id, struct metric_rows *m, tune_error *err)
{
    int rc;
    m->n = 0;
    m->arena.len = 0;
    if (!json)
        return TUNE_OK;
    sqlite3_bind_text(q, 1, json, -1, SQLITE_STATIC);
    for (;;) {
        /* json_each converts numbers with strtod(): under LC_NUMERIC ',' it would stop at '.'. */
        locale_t old = uselocale(st->c_locale);
        rc = sqlite3_step(q);
        uselocale(old);
        if (rc != SQLITE_ROW)
            break;
        const char *key = (const char *)sqlite3_column_text(q, 0);
        size_t len = (size_t)sqlite3_column_bytes(q, 0);
        if (!grow((void **)&m->off, &m->cap, m->n + 1, sizeof *m->off) ||
            !grow((void **)&m->values, &m->cap_values, m->n + 1, sizeof *m->values)) {
            sqlite3_reset(q);
            return oom(st, err);
        }
        m->off[m->n] = m->arena.len;
        tunep_buf_append(&m->arena, key ? key : "", len);
        tunep_buf_append(&m->arena, "", 1);
        m->values[m->n] = column_real(q, 1);
        m->n++;
    }
    if (rc != SQLITE_DONE) {
        tune_status rs = db_fail(st, err, "decode metrics of trial %lld", (long long)trial_id);
        sqlite3_reset(q);
        return rs;
    }
    sqlite3_reset(q);
    if (m->arena.oom)
        return oom(st, err);
    if (!grow((void **)&m->names, &m->cap_names, m->n, sizeof *m->names))
        return oom(st, err);
    for (size_t i = 0; i < m->n; i++)
        m->names[i] = m->arena.data + m->off[i];
    return TUNE_OK;
}

static const char metrics_sql[] = "SELECT key, value FROM json_each(?1) ORDER BY id";

static tune_trial_status status_from_name(const char *s)
{
    for (int k = 0; s && k < TUNE_TRIAL_STATUS_COUNT; k++)
        if (strcmp(s, status_names[k]) == 0)
            return (tune_trial_status)k;
    return TUNE_TRIAL_STATUS_COUNT; /* unknown: tune_trial_status_name() says "UNKNOWN" */
}

/* Reads one trial's parameter values into vals (strings into arena, fixed up after). */
static tune_status read_params(struct tunep_store *st, sqlite3_stmt *q, int64_t trial_id,
                               struct tunep_value *vals, size_t *str_off,
                               struct tunep_buf *arena, tune_error *err)
{
    int rc;
    arena->len = 0;
    for (size_t i = 0; i < st->n_params; i++) {
        vals[i].type = TUNEP_V_DOUBLE; /* a missing value reads as NaN */
        vals[i].u.d = (double)NAN;
        str_off[i] = SIZE_MAX;
    }
    sqlite3_bind_int64(q, 1, trial_id);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t pos = sqlite3_column_int64(q, 0);
        if (pos < 0 || (uint64_t)pos >= st->n_params)
            continue;
        struct tunep_value *v = &vals[pos];
        int ctype = sqlite3_column_type(q, 1);
        enum ptype fallback = ctype == SQLITE_INTEGER ? PT_INT
                              : ctype == SQLITE_TEXT  ? PT_STR
                                                      : PT_FLOAT;
        switch (ptype_from_name((const char *)sqlite3_column_text(q, 2), fallback)) {
            case PT_INT:
                v->type = TUNEP_V_INT;
                v->u.i = sqlite3_column_int64(q, 1);
                break;
            case PT_BOOL:
                v->type = TUNEP_V_BOOL;
                v->u.b = sqlite3_column_int64(q, 1) != 0;
                break;
            case PT_STR: {
                const char *t = (const char *)sqlite3_column_text(q, 1);
                v->type = TUNEP_V_STRING;
                str_off[pos] = arena->len;
                tunep_buf_append(arena, t ? t : "", (size_t)sqlite3_column_bytes(q, 1));
                tunep_buf_append(arena, "", 1);
                break;
            }
            default:
                v->type = TUNEP_V_DOUBLE;
                v->u.d = column_real(q, 1);
                break;
        }
    }
    if (rc != SQLITE_DONE) {
        tune_status rs = db_fail(st, err, "read parameters of trial %lld", (long long)trial_id);
        sqlite3_reset(q);
        return rs;
    }
    sqlite3_reset(q);
    if (arena->oom)
        return oom(st, err);
    for (size_t i = 0; i < st->n_params; i++)
        if (str_off[i] != SIZE_MAX)
            vals[i].u.s = arena->data + str_off[i];
    return TUNE_OK;
}

tune_status tunep_store_foreach_trial(struct tunep_store *st, tunep_trial_cb cb, void *ud,
                                      tune_error *err)
{
    sqlite3_stmt *q = NULL, *qp = NULL, *qm = NULL;
    struct tunep_value *vals = NULL;
    size_t *str_off = NULL;
    struct tunep_buf arena;
    struct metric_rows m = {0};
    int rc;
    tune_status rs;
    if (!st || !cb)
        return tunep_error_set(err, TUNE_EINVAL, "store: foreach trial: missing argument");
    tunep_buf_init(&arena);
    tunep_buf_init(&m.arena);
    /* The last report of the current attempt comes with its trial (an index seek each). */
    rs = prepare(st,
                 "SELECT t.trial_id, t.status, t.attempt, t.training_iteration, t.time_total_s,"
                 " t.start_time, t.end_time, t.error, r.training_iteration, r.time_total_s,"
                 " r.metrics FROM trials AS t LEFT JOIN reports AS r"
                 " ON r.trial_id = t.trial_id AND r.attempt = t.attempt"
                 " AND r.training_iteration = (SELECT max(training_iteration) FROM reports"
                 " WHERE trial_id = t.trial_id AND attempt = t.attempt)"
                 " ORDER BY t.trial_id",
                 0, &q, err);
    if (rs || (rs = prepare(st,
                            "SELECT position, value, type FROM trial_params WHERE trial_id = ?1"
                            " ORDER BY position",
                            0, &qp, err)) ||
        (rs = prepare(st, metrics_sql, 0, &qm, err)))
        goto out;
    if (st->n_params > 0) {
        vals = tunep_calloc(st->n_params, sizeof *vals);
        str_off = tunep_calloc(st->n_params, sizeof *str_off);
        if (!vals || !str_off) {
            rs = oom(st, err);
            goto out;
        }
    }
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct tunep_stored_trial t;
        memset(&t, 0, sizeof t);
        t.trial_id = sqlite3_column_int64(q, 0);
        t.status = status_from_name((const char *)sqlite3_column_text(q, 1));
        t.attempt = sqlite3_column_int(q, 2);
        t.iteration = sqlite3_column_int64(q, 3);
        t.time_total_s = column_real(q, 4);
        t.start_time = column_real(q, 5);
        t.end_time = column_real(q, 6);
        t.error = (const char *)sqlite3_column_text(q, 7);
        /* A running attempt has not written its totals yet: its last report has them. */
        if (sqlite3_column_type(q, 8) != SQLITE_NULL && sqlite3_column_int64(q, 8) > t.iteration) {
            t.iteration = sqlite3_column_int64(q, 8);
            t.time_total_s = column_real(q, 9);
        }
        if ((rs = read_params(st, qp, t.trial_id, vals, str_off, &arena, err)) ||
            (rs = decode_metrics(st, qm, (const char *)sqlite3_column_text(q, 10), t.trial_id,
                                 &m, err)))
            goto out;
        t.n_params = st->n_params;
        t.param_names = (const char *const *)st->param_names;
        t.params = vals;
        t.n_metrics = m.n;
        t.metric_names = m.names;
        t.metric_values = m.values;
        if ((rs = cb(ud, &t)) != TUNE_OK)
            goto out;
    }
    if (rc != SQLITE_DONE)
        rs = db_fail(st, err, "read trials");
out:
    sqlite3_finalize(q);
    sqlite3_finalize(qp);
    sqlite3_finalize(qm);
    tunep_free(vals);
    tunep_free(str_off);
    tunep_buf_done(&arena);
    metric_rows_done(&m);
    return rs;
}

static tune_status foreach_report(struct tunep_store *st, int last_attempt_only,
                                  tunep_report_cb cb, void *ud, tune_error *err)
{
    sqlite3_stmt *q = NULL, *qm = NULL;
    struct metric_rows m = {0};
    int rc;
    tune_status rs;
    if (!st || !cb)
        return tunep_error_set(err, TUNE_EINVAL, "store: foreach report: missing argument");
    tunep_buf_init(&m.arena);
    rs = prepare(st,
                 last_attempt_only
                     ? "SELECT r.trial_id, r.attempt, r.training_iteration, r.time_total_s,"
                       " r.metrics FROM reports AS r JOIN trials AS t"
                       " ON t.trial_id = r.trial_id AND t.attempt = r.attempt"
                       " ORDER BY r.trial_id, r.attempt, r.training_iteration"
                     : "SELECT trial_id, attempt, training_iteration, time_total_s, metrics"
                       " FROM reports ORDER BY trial_id, attempt, training_iteration",
                 0, &q, err);
    if (rs || (rs = prepare(st, metrics_sql, 0, &qm, err)))
        goto out;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t trial_id = sqlite3_column_int64(q, 0);
        if ((rs = decode_metrics(st, qm, (const char *)sqlite3_column_text(q, 4), trial_id, &m,
                                 err)))
            goto out;
        if ((rs = cb(ud, trial_id, sqlite3_column_int(q, 1), sqlite3_column_int64(q, 2),
                     column_real(q, 3), m.n, m.names, m.values)) != TUNE_OK)
            goto out;
    }
    if (rc != SQLITE_DONE)
        rs = db_fail(st, err, "read reports");
out:
    sqlite3_finalize(q);
    sqlite3_finalize(qm);
    metric_rows_done(&m);
    return rs;
}

tune_status tunep_store_foreach_report(struct tunep_store *st, tunep_report_cb cb, void *ud,
                                       tune_error *err)
{
    return foreach_report(st, 0, cb, ud, err);
}

tune_status tunep_store_foreach_last_attempt_report(struct tunep_store *st, tunep_report_cb cb,
                                                    void *ud, tune_error *err)
{
    return foreach_report(st, 1, cb, ud, err);
}
