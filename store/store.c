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
 *   experiment (id INTEGER PRIMARY KEY CHECK (id = 1), name, config, metric,
 *               mode, seed INTEGER, version, created REAL, driver TEXT)
 *       One row. seed holds the uint64 seed's bit pattern as a signed 64-bit
 *       integer (a seed >= 2^63 reads as negative in SQL). driver is "ask"
 *       for an experiment driven by ask and tell from several processes
 *       (`tune ask`, tune_study_set_ask_shared()), whose asked trials stay
 *       open until told; NULL for one that tune_study_run() drives. It is
 *       written when the experiment is created and never changed; added
 *       within version 1, as origin was: older files lack the column (read
 *       as NULL).
 *   origin (id INTEGER PRIMARY KEY CHECK (id = 1), cwd TEXT, command_line TEXT)
 *       One row: the working folder and command line of the run that created
 *       the experiment, which `tune resume` runs trainers from. Added within
 *       version 1 without a version bump: older files lack the table (read as
 *       unknown), and older code ignores it.
 *   params (position INTEGER PRIMARY KEY, name TEXT UNIQUE, type, domain,
 *           column_name, type_column)
 *       The space in order. type is "float", "int", "str", "bool" or "mixed"
 *       (a choice over several kinds); domain the distribution ("loguniform",
 *       "choice", ...); column_name the parameter's column in trials;
 *       type_column, for a "mixed" parameter only, the column that names each
 *       trial's value kind.
 *   trials (trial_id INTEGER PRIMARY KEY, status TEXT, attempt,
 *           training_iteration, time_total_s, start_time, end_time, error,
 *           "config/<name>" ... one column per parameter, pid, hostname,
 *           node_ip, device)
 *       The current (last) attempt of each trial, and its configuration.
 *       Values keep their SQLite type: REAL, INTEGER, TEXT; a bool is an
 *       INTEGER 0/1 (params.type, or the type column, says "bool").
 *   reports (trial_id, attempt, training_iteration, time_total_s, wall_time,
 *            metrics TEXT, time_this_iter_s, time_since_restore,
 *            iterations_since_restore), PRIMARY KEY (trial_id, attempt,
 *            training_iteration), WITHOUT ROWID
 *       Every report of every attempt; failed, retried, resumed and
 *       PBT-exploited attempts all stay (nothing deletes a report).
 *
 * The three reports columns after metrics and trials' pid, hostname,
 * node_ip and device (the process that ran the current attempt, and its GPUs
 * "cuda:0,1" or "cpu") were added within
 * version 1, as origin was: a writable open adds them to an older file
 * (ALTER TABLE ... ADD COLUMN), a read-only one reads them as NULL, and older
 * code ignores them.
 *
 * Parameters are columns of trials rather than rows of a (trial, position,
 * value) table: starting a trial is then one INSERT into one B-tree. Measured
 * on the 2-core dev VM with 3 parameters, the separate table cost 11 us of
 * CPU per trial (three inserts, their B-tree pages in every commit) on top of
 * 25 us. SQLite compares column names ignoring ASCII case, so two parameters
 * "lr" and "LR" get "config/lr" and "config/LR:2"; params.column_name is the
 * truth. Foreign keys are declared (PRAGMA foreign_key_check works) but not
 * enforced: the checks cost 4 us per trial and only the controller writes.
 *
 * Metrics are one JSON object per report ({"loss": 0.25, "acc": null}) rather
 * than a row per metric: a report is then one INSERT into one B-tree, the text
 * is built in a buffer the store reuses (no malloc per report), users query it
 * with json_extract(), and the key order keeps the order in which metrics were
 * reported. NaN is written as null (read back as NaN); +-inf as 1e999 and
 * -1e999, which SQLite (and Python's json) read as infinities. Reading uses
 * SQLite's json_each(), whose number conversion calls strtod() and so follows
 * LC_NUMERIC: each step through it runs under a private "C" locale
 * (uselocale), or a host program with ',' decimals would read 0.5 as 0.
 *
 * Writes go into a transaction that the first write opens (BEGIN IMMEDIATE)
 * and tunep_store_commit() closes. With journal_mode=WAL and
 * synchronous=NORMAL a commit appends to the WAL without fsync: committed data
 * survives a crash of the process, not necessarily a power loss. Write
 * statements are prepared once (SQLITE_PREPARE_PERSISTENT) and reused. Every
 * SQLite failure becomes TUNE_ESTORE with sqlite3_errmsg() copied at once
 * (later calls overwrite it), e.g. "store: insert report for trial 7: database
 * or disk is full", with err->source set to the database path.
 *
 * Invariants: st->in_txn is 1 exactly while a write transaction is open on the
 * connection (resynchronised with sqlite3_get_autocommit() after a failure,
 * since SQLite rolls back by itself on some errors). A failed write leaves the
 * pending transaction as it was before the call: every write is one
 * statement, except a restart, which runs under a SAVEPOINT.
 *
 * Migrations: user_version is the schema version. A later version adds a step
 * from N to N + 1, run when a writable store opens an older file; a file newer
 * than this code is refused.
 *
 * References: https://sqlite.org/wal.html, https://sqlite.org/pragma.html,
 * https://sqlite.org/withoutrowid.html, https://sqlite.org/json1.html,
 * https://sqlite.org/datatype3.html (affinity).
 */
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/text.h"

#define STORE_SCHEMA_VERSION 1
#define STORE_APPLICATION_ID 0x74756E65 /* "tune" in ASCII */
/*
 * How long a connection waits for a lock before SQLITE_BUSY. Readers in WAL
 * mode wait only during checkpoints and recovery (milliseconds); 5 s leaves a
 * wide margin on a loaded machine without hanging a `tune status` for long.
 */
#define STORE_BUSY_TIMEOUT_MS 5000
/*
 * WAL pages between automatic checkpoints (SQLite's default is 1000). A trial
 * appends about 3 pages (two commits), and each checkpoint fsyncs the WAL and
 * the database: at 1000 pages that is every ~300 trials, which a disk with
 * 5 ms fsyncs would turn into ~30 us per trial. 10000 pages (40 MiB of WAL at
 * most) cuts it tenfold; on the dev VM (0.4 ms fsyncs) it saved 1.6 us/trial.
 */
#define STORE_WAL_AUTOCHECKPOINT 10000

static const char schema_sql[] = "CREATE TABLE experiment (\n"
                                 "    id INTEGER PRIMARY KEY CHECK (id = 1),\n"
                                 "    name TEXT,\n"
                                 "    config TEXT,\n"
                                 "    metric TEXT,\n"
                                 "    mode TEXT,\n"
                                 "    seed INTEGER NOT NULL,\n"
                                 "    version TEXT,\n"
                                 "    created REAL,\n"
                                 "    driver TEXT\n"
                                 ");\n"
                                 "CREATE TABLE origin (\n"
                                 "    id INTEGER PRIMARY KEY CHECK (id = 1),\n"
                                 "    cwd TEXT,\n"
                                 "    command_line TEXT\n"
                                 ");\n"
                                 "CREATE TABLE params (\n"
                                 "    position INTEGER PRIMARY KEY,\n"
                                 "    name TEXT NOT NULL UNIQUE,\n"
                                 "    type TEXT NOT NULL,\n"
                                 "    domain TEXT,\n"
                                 "    column_name TEXT NOT NULL,\n"
                                 "    type_column TEXT\n"
                                 ");\n"
                                 "CREATE TABLE reports (\n"
                                 "    trial_id INTEGER NOT NULL REFERENCES trials (trial_id),\n"
                                 "    attempt INTEGER NOT NULL,\n"
                                 "    training_iteration INTEGER NOT NULL,\n"
                                 "    time_total_s REAL,\n"
                                 "    wall_time REAL,\n"
                                 "    metrics TEXT NOT NULL,\n"
                                 "    time_this_iter_s REAL,\n"
                                 "    time_since_restore REAL,\n"
                                 "    iterations_since_restore INTEGER,\n"
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
    S_REPORTS_CLEAR,
    S_TRIAL_END,
    S_REPORT_INSERT,
    S_TRIAL_RESUME,
    S_TRIAL_HOST,
    S_TRIAL_INSERT, /* built from the parameter columns */
    S_COUNT
};

static const char *const stmt_sql[S_TRIAL_INSERT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_SAVEPOINT] = "SAVEPOINT trial_restart",
    [S_RELEASE] = "RELEASE trial_restart",
    [S_ROLLBACK_TO] = "ROLLBACK TO trial_restart",
    [S_TRIAL_RESTART] =
        "UPDATE trials SET status = 'RUNNING', attempt = ?2, training_iteration = 0,"
        " time_total_s = NULL, start_time = ?3, end_time = NULL, error = NULL"
        " WHERE trial_id = ?1",
    [S_REPORTS_CLEAR] = "DELETE FROM reports WHERE trial_id = ?1 AND attempt = ?2",
    [S_TRIAL_END] = "UPDATE trials SET status = ?3, training_iteration = ?4, time_total_s = ?5,"
                    " end_time = ?6, error = ?7 WHERE trial_id = ?1 AND attempt = ?2",
    [S_REPORT_INSERT] = "INSERT INTO reports (trial_id, attempt, training_iteration,"
                        " time_total_s, wall_time, metrics, time_this_iter_s,"
                        " time_since_restore, iterations_since_restore)"
                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [S_TRIAL_RESUME] = "UPDATE trials SET status = 'RUNNING', end_time = NULL"
                       " WHERE trial_id = ?1 AND attempt = ?2",
    [S_TRIAL_HOST] = "UPDATE trials SET pid = ?3, hostname = ?4, node_ip = ?5, device = ?6"
                     " WHERE trial_id = ?1 AND attempt = ?2",
};

/* Kinds of parameter and value, as the params table and type columns name them. */
enum ptype { PT_FLOAT, PT_INT, PT_STR, PT_BOOL, PT_MIXED, PT_COUNT };
static const char *const ptype_names[PT_COUNT] = {"float", "int", "str", "bool", "mixed"};
/* Declared column types: the affinity keeps each kind as bound; none for mixed. */
static const char *const ptype_decl[PT_COUNT] = {" REAL", " INTEGER", " TEXT", " INTEGER", ""};

/* Trial status names, indexed by tune_trial_status (as tune_trial_status_name()). */
static const char *const status_names[TUNE_TRIAL_STATUS_COUNT] = {
    [TUNE_TRIAL_PENDING] = "PENDING",       [TUNE_TRIAL_RUNNING] = "RUNNING",
    [TUNE_TRIAL_TERMINATED] = "TERMINATED", [TUNE_TRIAL_STOPPED] = "STOPPED",
    [TUNE_TRIAL_ERROR] = "ERROR",           [TUNE_TRIAL_PAUSED] = "PAUSED",
};

struct store_param {
    char *name;        /* flattened "a/b" */
    char *column;      /* its column in trials */
    char *type_column; /* a mixed parameter's kind column, else NULL */
    char *domain;      /* "loguniform", "choice", ...; NULL when not recorded */
    enum ptype type;
};

struct tunep_store {
    sqlite3 *db;
    char *path; /* as given; the source of every error */
    int readonly;
    int in_txn;  /* a write transaction is open (see the invariants above) */
    int in_read; /* tunep_store_read_begin() opened a read transaction */
    sqlite3_stmt *stmt[S_COUNT];
    size_t n_params;
    struct store_param *params;
    const char **param_names; /* params[i].name, for tunep_stored_trial */
    struct tunep_buf json;    /* the metrics text of the report being written */
    locale_t c_locale;        /* "C", for json_each's strtod() */
    int has_host;             /* the file has the columns added within version 1 (above) */
};

/* ---- errors --------------------------------------------------------------- */

/* Brings in_txn in line after a failure: SQLite may have rolled back by itself. */
static int txn_lost(struct tunep_store *st)
{
    if (st->in_txn && st->db && sqlite3_get_autocommit(st->db)) {
        st->in_txn = 0;
        return 1;
    }
    return 0;
}

static tune_status explain_lost_wal(const char *db_path, tune_status rs, tune_error *err);

/*
 * Sets err to TUNE_ESTORE "store: <what>: <sqlite message>" and returns it.
 * Call it right after the failing call, before anything else touches the
 * connection: sqlite3_errmsg() is copied first.
 */
static tune_status TUNEP_PRINTF(3, 4)
    db_fail(struct tunep_store *st, tune_error *err, const char *fmt, ...)
{
    char msg[256], what[256];
    va_list ap;
    snprintf(msg, sizeof msg, "%s", st->db ? sqlite3_errmsg(st->db) : "out of memory");
    /* "disk I/O error" alone hides ENOSPC, EROFS, EIO: the system's errno says which. */
    int code = st->db ? sqlite3_errcode(st->db) & 0xff : 0;
    int sys = st->db ? sqlite3_system_errno(st->db) : 0;
    if ((code == SQLITE_IOERR || code == SQLITE_CANTOPEN) && sys != 0) {
        size_t n = strlen(msg);
        snprintf(msg + n, sizeof msg - n, " (%s)", strerror(sys));
    }
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int lost = txn_lost(st);
    tune_status rs = tunep_error_set_at(err, TUNE_ESTORE, st->path, 0, 0, "store: %s: %s%s", what,
                                        msg, lost ? " (uncommitted writes were rolled back)" : "");
    /* A reader may open the file fine and fail only at its first read. */
    return st->readonly && code == SQLITE_IOERR ? explain_lost_wal(st->path, rs, err) : rs;
}

static tune_status oom(const struct tunep_store *st, tune_error *err)
{
    return tunep_error_set_at(err, TUNE_ENOMEM, st ? st->path : NULL, 0, 0, "out of memory");
}

/* ---- small helpers -------------------------------------------------------- */

/* Runs a statement to its end and resets it; SQLITE_DONE or the error code. */
static int run_stmt(sqlite3_stmt *s)
{
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    }
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

/* One integer from a query (a PRAGMA, a count); 0 when it returns no row. */
static tune_status query_int64(struct tunep_store *st, const char *sql, int64_t *ret,
                               tune_error *err)
{
    sqlite3_stmt *s;
    tune_status rs = prepare(st, sql, 0, &s, err);
    if (rs)
        return rs;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *ret = sqlite3_column_int64(s, 0);
    else if (rc == SQLITE_DONE)
        *ret = 0;
    else
        rs = db_fail(st, err, "%s", sql);
    sqlite3_finalize(s);
    return rs;
}

/* Binds a double; NaN becomes NULL (SQLite does the same; this makes it explicit). */
static void bind_real(sqlite3_stmt *s, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(s, i);
    else
        sqlite3_bind_double(s, i, v);
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

/* Appends s as an SQL identifier: in double quotes, quotes doubled. */
static void put_ident(struct tunep_buf *b, const char *s)
{
    tunep_buf_append(b, "\"", 1);
    for (const char *q; (q = strchr(s, '"')) != NULL; s = q + 1) {
        tunep_buf_append(b, s, (size_t)(q - s + 1));
        tunep_buf_append(b, "\"", 1);
    }
    tunep_buf_puts(b, s);
    tunep_buf_append(b, "\"", 1);
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
        case TUNEP_DIST_QRANDN: return PT_FLOAT;
        case TUNEP_DIST_RANDINT:
        case TUNEP_DIST_QRANDINT:
        case TUNEP_DIST_LOGRANDINT:
        case TUNEP_DIST_QLOGRANDINT: return PT_INT;
        default: break;
    }
    if (p->n_values == 0 || (unsigned)p->values[0].type >= (unsigned)PT_MIXED)
        return PT_MIXED;
    for (size_t i = 1; i < p->n_values; i++)
        if (p->values[i].type != p->values[0].type)
            return PT_MIXED;
    return (enum ptype)p->values[0].type;
}

const char *tunep_store_param_kind(const struct tunep_param *p)
{
    return ptype_names[param_kind(p)];
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

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* ---- opening and closing -------------------------------------------------- */

/* The columns added within version 1 (see the top of the file), by table. */
static const char *const added_columns[][2] = {
    {"reports", "time_this_iter_s REAL"},
    {"reports", "time_since_restore REAL"},
    {"reports", "iterations_since_restore INTEGER"},
    {"trials", "pid INTEGER"},
    {"trials", "hostname TEXT"},
    {"trials", "node_ip TEXT"},
    {"trials", "device TEXT"},
};

/*
 * Sets st->has_host when the file has every added column; a writable store
 * adds those an older file lacks first (one transaction), a read-only one
 * reads them as NULL.
 */
static tune_status upgrade_columns(struct tunep_store *st, tune_error *err)
{
    size_t n = sizeof added_columns / sizeof *added_columns, missing = 0;
    int have[sizeof added_columns / sizeof *added_columns];
    tune_status rs = TUNE_OK;
    for (size_t i = 0; i < n && !rs; i++) {
        char sql[160];
        int64_t found = 0;
        size_t len = strcspn(added_columns[i][1], " ");
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM pragma_table_info('%s') WHERE name = '%.*s'",
                 added_columns[i][0], (int)len, added_columns[i][1]);
        rs = query_int64(st, sql, &found, err);
        have[i] = found > 0;
        missing += !have[i];
    }
    if (rs || missing == 0 || st->readonly) {
        st->has_host = !rs && missing == 0;
        return rs;
    }
    if ((rs = exec_sql(st, "BEGIN IMMEDIATE", "begin upgrade", err)))
        return rs;
    for (size_t i = 0; i < n && !rs; i++) {
        char sql[160];
        if (have[i])
            continue;
        snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s", added_columns[i][0],
                 added_columns[i][1]);
        rs = exec_sql(st, sql, "add a column to an older store", err);
    }
    if (!rs)
        rs = exec_sql(st, "COMMIT", "commit upgrade", err);
    if (rs)
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    st->has_host = !rs;
    return rs;
}

static void params_free(struct store_param *p, size_t n)
{
    for (size_t i = 0; p && i < n; i++) {
        tunep_free(p[i].name);
        tunep_free(p[i].column);
        tunep_free(p[i].type_column);
        tunep_free(p[i].domain);
    }
    tunep_free(p);
}

static void store_free(struct tunep_store *st)
{
    if (!st)
        return;
    for (int i = 0; i < S_COUNT; i++)
        sqlite3_finalize(st->stmt[i]);
    if (st->db)
        sqlite3_close(st->db);
    params_free(st->params, st->n_params);
    tunep_free((void *)st->param_names);
    tunep_buf_done(&st->json);
    if (st->c_locale)
        freelocale(st->c_locale);
    tunep_free(st->path);
    tunep_free(st);
}

/* Allocates the store and opens its connection with flags. */
/* Whether the folder of path cannot take a new file (errno says why); 0 when it can or on OOM. */
static int folder_unwritable(const char *path)
{
    char *dir = tunep_strdup(path);
    if (!dir)
        return 0;
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir] = '\0';
    int bad = access(slash ? dir : ".", W_OK | X_OK) != 0;
    int saved = errno;
    tunep_free(dir);
    errno = saved;
    return bad;
}

static tune_status store_connect(const char *db_path, int flags, int readonly,
                                 struct tunep_store **ret, tune_error *err)
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
        if (rc == SQLITE_CANTOPEN && stat(db_path, &sb) != 0 && errno == ENOENT &&
            (flags & SQLITE_OPEN_CREATE) && folder_unwritable(db_path))
            rs = tunep_error_set_at(err, TUNE_EIO, db_path, 0, 0, "cannot create: %s",
                                    strerror(errno));
        else if (rc == SQLITE_CANTOPEN && stat(db_path, &sb) != 0 && errno == ENOENT)
            rs = tunep_error_set_at(err, TUNE_ENOTFOUND, db_path, 0, 0, "no experiment here");
        else
            rs = db_fail(st, err, "open");
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
    char sql[96];
    tune_status rs = prepare(st, "PRAGMA journal_mode = WAL", 0, &s, err);
    if (rs)
        return rs;
    if (sqlite3_step(s) != SQLITE_ROW) {
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
    snprintf(sql, sizeof sql, "PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = %d;",
             STORE_WAL_AUTOCHECKPOINT);
    return exec_sql(st, sql, "set pragmas", err);
}

/* INSERT INTO trials (..., "config/a", ...) VALUES (?1, 'RUNNING', ?2, 0, ?3, ?4, ...) */
static tune_status prepare_trial_insert(struct tunep_store *st, tune_error *err)
{
    struct tunep_buf b;
    int n = 3;
    tunep_buf_init(&b);
    tunep_buf_puts(&b, "INSERT INTO trials (trial_id, status, attempt, training_iteration, "
                       "start_time");
    for (size_t i = 0; i < st->n_params; i++) {
        tunep_buf_append(&b, ", ", 2);
        put_ident(&b, st->params[i].column);
        if (st->params[i].type_column) {
            tunep_buf_append(&b, ", ", 2);
            put_ident(&b, st->params[i].type_column);
        }
    }
    tunep_buf_puts(&b, ") VALUES (?1, 'RUNNING', ?2, 0, ?3");
    for (size_t i = 0; i < st->n_params; i++)
        for (int k = st->params[i].type_column ? 2 : 1; k > 0; k--)
            tunep_buf_printf(&b, ", ?%d", ++n);
    tunep_buf_append(&b, ")", 1);
    if (b.oom) {
        tunep_buf_done(&b);
        return oom(st, err);
    }
    tune_status rs = prepare(st, b.data, SQLITE_PREPARE_PERSISTENT, &st->stmt[S_TRIAL_INSERT], err);
    tunep_buf_done(&b);
    return rs;
}

static tune_status prepare_writes(struct tunep_store *st, tune_error *err)
{
    for (int i = 0; i < S_TRIAL_INSERT; i++) {
        tune_status rs = prepare(st, stmt_sql[i], SQLITE_PREPARE_PERSISTENT, &st->stmt[i], err);
        if (rs)
            return rs;
    }
    return prepare_trial_insert(st, err);
}

/* Loads the params table: names, kinds and columns in position order. */
static tune_status load_params(struct tunep_store *st, tune_error *err)
{
    sqlite3_stmt *s;
    size_t cap = 0;
    int rc, nomem = 0;
    tune_status rs = prepare(st,
                             "SELECT position, name, type, column_name, type_column, domain"
                             " FROM params"
                             " ORDER BY position",
                             0, &s, err);
    if (rs)
        return rs;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        size_t n = st->n_params;
        if (sqlite3_column_int64(s, 0) != (int64_t)n) {
            rs = tunep_error_set_at(err, TUNE_ESTORE, st->path, 0, 0,
                                    "store: params table has no position %zu", n);
            goto out;
        }
        if (!grow((void **)&st->params, &cap, n + 1, sizeof *st->params)) {
            rs = oom(st, err);
            goto out;
        }
        struct store_param *p = &st->params[n];
        memset(p, 0, sizeof *p);
        st->n_params = n + 1;
        p->name = column_strdup(s, 1, &nomem);
        p->type = ptype_from_name((const char *)sqlite3_column_text(s, 2), PT_MIXED);
        p->column = column_strdup(s, 3, &nomem);
        p->type_column = column_strdup(s, 4, &nomem);
        p->domain = column_strdup(s, 5, &nomem);
        if (nomem) {
            rs = oom(st, err);
            goto out;
        }
        if (!p->name || !p->column) {
            rs = tunep_error_set_at(err, TUNE_ESTORE, st->path, 0, 0,
                                    "store: parameter %zu has no name or column", n);
            goto out;
        }
    }
    if (rc != SQLITE_DONE) {
        rs = db_fail(st, err, "read params");
        goto out;
    }
    if (st->n_params > 0) {
        st->param_names = tunep_calloc(st->n_params, sizeof *st->param_names);
        if (!st->param_names) {
            rs = oom(st, err);
            goto out;
        }
        for (size_t i = 0; i < st->n_params; i++)
            st->param_names[i] = st->params[i].name;
    }
out:
    sqlite3_finalize(s);
    return rs;
}

/* A column name not yet in cols[0..n) ignoring ASCII case (SQLite's rule): base, base:2, ... */
static char *unique_column(char *const *cols, size_t n, const char *base)
{
    char *cand = tunep_strdup(base);
    for (int k = 2; cand; k++) {
        size_t i = 0;
        while (i < n && sqlite3_stricmp(cols[i], cand) != 0)
            i++;
        if (i == n)
            return cand;
        tunep_free(cand);
        cand = tunep_asprintf("%s:%d", base, k);
    }
    return NULL;
}

/* The parameters of the space with their columns (not yet loaded from a file). */
static tune_status plan_columns(const tune_space *space, struct store_param **ret, tune_error *err)
{
    size_t n = space ? space->n : 0, n_cols = 0;
    struct store_param *p = n ? tunep_calloc(n, sizeof *p) : NULL;
    char **cols = n ? tunep_calloc(2 * n, sizeof *cols) : NULL;
    if (n && (!p || !cols))
        goto nomem;
    for (size_t i = 0; i < n; i++) {
        const struct tunep_param *sp = &space->params[i];
        char *base = tunep_asprintf("config/%s", sp->name ? sp->name : "");
        p[i].name = tunep_strdup(sp->name ? sp->name : "");
        p[i].type = param_kind(sp);
        p[i].column = base ? unique_column(cols, n_cols, base) : NULL;
        tunep_free(base);
        if (!p[i].name || !p[i].column)
            goto nomem;
        cols[n_cols++] = p[i].column;
        if (p[i].type == PT_MIXED) {
            base = tunep_asprintf("%s:type", p[i].column);
            p[i].type_column = base ? unique_column(cols, n_cols, base) : NULL;
            tunep_free(base);
            if (!p[i].type_column)
                goto nomem;
            cols[n_cols++] = p[i].type_column;
        }
    }
    tunep_free(cols);
    *ret = p;
    return TUNE_OK;
nomem:
    params_free(p, n);
    tunep_free(cols);
    return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
}

/* CREATE TABLE trials with one column per parameter. */
static tune_status create_trials(struct tunep_store *st, const struct store_param *p, size_t n,
                                 tune_error *err)
{
    struct tunep_buf b;
    tunep_buf_init(&b);
    tunep_buf_puts(&b, "CREATE TABLE trials (\n"
                       "    trial_id INTEGER PRIMARY KEY,\n"
                       "    status TEXT NOT NULL,\n"
                       "    attempt INTEGER NOT NULL,\n"
                       "    training_iteration INTEGER NOT NULL DEFAULT 0,\n"
                       "    time_total_s REAL,\n"
                       "    start_time REAL,\n"
                       "    end_time REAL,\n"
                       "    error TEXT,\n"
                       "    pid INTEGER,\n"
                       "    hostname TEXT,\n"
                       "    node_ip TEXT,\n"
                       "    device TEXT");
    for (size_t i = 0; i < n; i++) {
        tunep_buf_puts(&b, ",\n    ");
        put_ident(&b, p[i].column);
        tunep_buf_puts(&b, ptype_decl[p[i].type]);
        if (p[i].type_column) {
            tunep_buf_puts(&b, ",\n    ");
            put_ident(&b, p[i].type_column);
            tunep_buf_puts(&b, " TEXT");
        }
    }
    tunep_buf_puts(&b, "\n)");
    if (b.oom) {
        tunep_buf_done(&b);
        return oom(st, err);
    }
    tune_status rs = exec_sql(st, b.data, "create table trials", err);
    tunep_buf_done(&b);
    return rs;
}

static tune_status insert_schema(struct tunep_store *st, const struct tunep_store_experiment *exp,
                                 const tune_space *space, tune_error *err)
{
    sqlite3_stmt *s = NULL;
    struct store_param *p = NULL;
    size_t n = space ? space->n : 0;
    char pragmas[96];
    tune_status rs = exec_sql(st, schema_sql, "create tables", err);
    if (rs || (rs = plan_columns(space, &p, err)) || (rs = create_trials(st, p, n, err)))
        goto out;
    snprintf(pragmas, sizeof pragmas, "PRAGMA application_id = %d; PRAGMA user_version = %d;",
             STORE_APPLICATION_ID, STORE_SCHEMA_VERSION);
    if ((rs = exec_sql(st, pragmas, "set schema version", err)) ||
        (rs = prepare(st,
                      "INSERT INTO experiment (id, name, config, metric, mode, seed, version,"
                      " created, driver) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                      0, &s, err)))
        goto out;
    sqlite3_bind_text(s, 1, exp->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, exp->config_json, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, exp->metric, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, exp->mode, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)exp->seed);
    sqlite3_bind_text(s, 6, exp->version, -1, SQLITE_STATIC);
    bind_real(s, 7, exp->created);
    sqlite3_bind_text(s, 8, exp->driver, -1, SQLITE_STATIC);
    if (run_stmt(s) != SQLITE_DONE) {
        rs = db_fail(st, err, "insert experiment");
        goto out;
    }
    sqlite3_finalize(s);
    if ((rs = prepare(st, "INSERT INTO origin (id, cwd, command_line) VALUES (1, ?1, ?2)", 0, &s,
                      err)))
        goto out;
    sqlite3_bind_text(s, 1, exp->cwd, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, exp->command_line, -1, SQLITE_STATIC);
    if (run_stmt(s) != SQLITE_DONE) {
        rs = db_fail(st, err, "insert origin");
        goto out;
    }
    sqlite3_finalize(s);
    if ((rs = prepare(st,
                      "INSERT INTO params (position, name, type, domain, column_name, type_column)"
                      " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                      0, &s, err)))
        goto out;
    for (size_t i = 0; i < n && !rs; i++) {
        sqlite3_bind_int64(s, 1, (sqlite3_int64)i);
        sqlite3_bind_text(s, 2, p[i].name, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, ptype_names[p[i].type], -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 4, tunep_dist_name(space->params[i].dist), -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 5, p[i].column, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 6, p[i].type_column, -1, SQLITE_STATIC);
        if (run_stmt(s) != SQLITE_DONE)
            rs = db_fail(st, err, "insert parameter '%s'", p[i].name);
    }
out:
    sqlite3_finalize(s);
    params_free(p, n);
    return rs;
}

/* TUNE_ESTORE when the database already has tables; the file may be empty or new. */
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
                               const tune_space *space, struct tunep_store **ret, tune_error *err)
{
    struct tunep_store *st = NULL;
    tune_status rs;
    if (!db_path || !exp || !ret)
        return tunep_error_set(err, TUNE_EINVAL, "store: create: missing argument");
    if (space && space->n > 0 && !space->params)
        return tunep_error_set(err, TUNE_EINVAL, "store: create: space without parameters");
    rs = store_connect(db_path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 0, &st, err);
    if (rs)
        return rs;
    /* Look before switching to WAL, so that a foreign database keeps its journal mode. */
    /* 1 KiB pages: a commit writes each dirty page to the WAL, and a report
     * dirties a few small rows; measured 10-20% more trials/s than 4 KiB with
     * bench/overhead --storage (interleaved runs, 30,000 trials). */
    if ((rs = check_empty(st, err)) ||
        (rs = exec_sql(st, "PRAGMA page_size = 1024", "set page size", err)) ||
        (rs = set_write_pragmas(st, err)) ||
        (rs = exec_sql(st, "BEGIN IMMEDIATE", "begin transaction", err)))
        goto fail;
    /* Again under the write lock: another process may have created it meanwhile. */
    if ((rs = check_empty(st, err)) || (rs = insert_schema(st, exp, space, err)) ||
        (rs = exec_sql(st, "COMMIT", "commit schema", err))) {
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        goto fail;
    }
    /* The schema and the experiment go into the database file itself, not
     * only into the WAL: a lost -wal then costs at most the reports since the
     * last checkpoint, never the experiment. */
    if (sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_FULL, NULL, NULL) != SQLITE_OK) {
        rs = db_fail(st, err, "checkpoint the new experiment");
        goto fail;
    }
    st->has_host = 1;
    if ((rs = load_params(st, err)) || (rs = prepare_writes(st, err)))
        goto fail;
    *ret = st;
    return TUNE_OK;
fail:
    store_free(st);
    return rs;
}

/*
 * TUNE_ESTORE when the database or its folder cannot be written (a read-only
 * file system, an immutable file, missing permissions): said before SQLite
 * opens it, which would fall back to reading and fail later with less clear
 * messages. A missing file is left to the open, which reports it.
 */
static tune_status check_folder_writable(const char *db_path, tune_error *err)
{
    char *dir = tunep_strdup(db_path);
    if (!dir)
        return oom(NULL, err);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir] = '\0';
    tune_status rs = TUNE_OK;
    errno = 0;
    if ((access(db_path, W_OK) != 0 && errno != ENOENT) || access(slash ? dir : ".", W_OK) != 0)
        rs = tunep_error_set_at(err, TUNE_ESTORE, db_path, 0, 0,
                                "store: the experiment cannot be written: %s", strerror(errno));
    tunep_free(dir);
    return rs;
}

/*
 * A reader of a WAL database needs its -shm file. When the writer has closed
 * (and removed it) and the folder is read-only, SQLite cannot create one and
 * every read fails with SQLITE_CANTOPEN. Nobody can write there either, so the
 * file is opened as immutable instead (https://sqlite.org/uri.html#uriimmutable),
 * unless a non-empty -wal file holds changes that immutable would ignore.
 */
static tune_status reopen_immutable_if_needed(struct tunep_store **pst, tune_error *err)
{
    struct tunep_store *st = *pst;
    int rc = sqlite3_exec(st->db, "SELECT 1 FROM sqlite_schema LIMIT 1", NULL, NULL, NULL);
    if ((rc & 0xff) != SQLITE_CANTOPEN)
        return TUNE_OK;
    struct stat sb;
    char *wal = tunep_asprintf("%s-wal", st->path);
    int wal_used = !wal || (stat(wal, &sb) == 0 && sb.st_size > 0);
    tunep_free(wal);
    if (wal_used)
        return TUNE_OK; /* the next query reports the failure */
    struct tunep_buf b;
    tunep_buf_init(&b);
    tunep_buf_puts(&b, "file:");
    for (const char *p = st->path; *p; p++) {
        if (*p == '%' || *p == '?' || *p == '#')
            tunep_buf_printf(&b, "%%%02X", (unsigned)(unsigned char)*p);
        else
            tunep_buf_append(&b, p, 1);
    }
    tunep_buf_puts(&b, "?immutable=1");
    char *uri = tunep_buf_take(&b);
    if (!uri) {
        tune_status rs = oom(st, err);
        store_free(st);
        *pst = NULL;
        return rs;
    }
    sqlite3_close_v2(st->db);
    st->db = NULL;
    rc = sqlite3_open_v2(uri, &st->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                         NULL);
    tunep_free(uri);
    if (rc != SQLITE_OK) {
        tune_status rs = db_fail(st, err, "open");
        store_free(st);
        *pst = NULL;
        return rs;
    }
    sqlite3_extended_result_codes(st->db, 1);
    return TUNE_OK;
}

/*
 * Whether another process has the database open: every SQLite connection
 * holds a shared lock on the -shm file's "dead man switch" byte (offset 128,
 * SQLite's documented WAL-index locking) while it is open. Locks of this
 * process do not count (POSIX record locks), so a caller that has its own
 * connection open still sees other processes only.
 */
static int shm_in_use(const char *shm)
{
    int fd = open(shm, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = 128;
    fl.l_len = 1;
    int used = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
    close(fd);
    return used;
}

/*
 * Whether the -wal of a running writer is gone: the -shm is there and the
 * -wal is not (with empty_too, or is empty: a failed open may have made a
 * new, empty one). A live writer always has its -wal, and the last
 * connection to close removes both. With live_only, only while another
 * process has the database open (after a crash, a writer rebuilds the -shm).
 */
static int wal_lost(const char *db_path, int empty_too, int live_only)
{
    char *wal = tunep_asprintf("%s-wal", db_path), *shm = tunep_asprintf("%s-shm", db_path);
    struct stat sb;
    int lost = wal && shm && access(shm, F_OK) == 0 &&
               (stat(wal, &sb) != 0 ? errno == ENOENT : empty_too && sb.st_size == 0) &&
               (!live_only || shm_in_use(shm));
    tunep_free(wal);
    tunep_free(shm);
    return lost;
}

/*
 * SQLite reports a -wal deleted under a running writer as "disk I/O error"
 * to every later reader, or reads the database without the writes the -wal
 * held: say what happened instead.
 */
static tune_status explain_lost_wal(const char *db_path, tune_status rs, tune_error *err)
{
    if (rs == TUNE_ESTORE && wal_lost(db_path, 1, 0))
        rs = tunep_error_set_at(
            err, TUNE_ESTORE, db_path, 0, 0,
            "store: %s-wal was deleted while a run was writing: it cannot be read until that run "
            "ends (the run still writes the deleted file and folds it in when it ends); if the "
            "run was killed, %s holds the experiment and the reports up to its last checkpoint",
            base_name(db_path), base_name(db_path));
    return rs;
}

tune_status tunep_store_open(const char *db_path, int readonly, struct tunep_store **ret,
                             tune_error *err)
{
    struct tunep_store *st = NULL;
    int64_t app_id = 0, version = 0, has_exp = 0;
    tune_status rs;
    if (!db_path || !ret)
        return tunep_error_set(err, TUNE_EINVAL, "store: open: missing argument");
    if (!readonly && (rs = check_folder_writable(db_path, err)))
        return rs;
    /* Reading might succeed, on a database without the writes the -wal held: refuse. */
    if (readonly && wal_lost(db_path, 0, 1))
        return explain_lost_wal(db_path, TUNE_ESTORE, err);
    rs = store_connect(db_path, readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE, readonly,
                       &st, err);
    if (rs)
        return rs;
    if (readonly && (rs = reopen_immutable_if_needed(&st, err)))
        return explain_lost_wal(db_path, rs, err);
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
    if ((rs = load_params(st, err)))
        goto fail;
    if (readonly)
        rs = exec_sql(st, "PRAGMA query_only = ON", "set query_only", err);
    else
        rs = set_write_pragmas(st, err);
    if (!rs)
        rs = upgrade_columns(st, err);
    if (!rs && !readonly)
        rs = prepare_writes(st, err);
    if (rs)
        goto fail;
    *ret = st;
    return TUNE_OK;
fail:
    store_free(st);
    return explain_lost_wal(db_path, rs, err);
}

char *tunep_store_file(const char *dir)
{
    return tunep_asprintf("%s/experiment.db", dir);
}

tune_status tunep_store_open_experiment(const char *dir, int readonly,
                                        struct tunep_store **ret_store,
                                        struct tunep_store_experiment_row *ret_row, tune_error *err)
{
    if (!dir || !ret_store)
        return tunep_error_set(err, TUNE_EINVAL, "store: open: missing argument");
    char *db = tunep_store_file(dir);
    if (!db)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    struct tunep_store *st = NULL;
    tune_status rs;
    /* Checked first: opening a missing file would be a SQLite error, not "no experiment".
     * A folder that cannot be searched (or a path through a file) says so instead. */
    if (access(db, F_OK) != 0 && errno != ENOENT)
        rs = tunep_error_set_at(err, TUNE_EIO, dir, 0, 0, "cannot open: %s", strerror(errno));
    else if (access(db, F_OK) != 0)
        rs = tunep_error_set_at(err, TUNE_ENOTFOUND, dir, 0, 0,
                                "no experiment here (experiment.db is missing)");
    else
        rs = tunep_store_open(db, readonly, &st, err);
    tunep_free(db);
    if (!rs && ret_row)
        rs = tunep_store_read_experiment(st, ret_row, err);
    if (rs) {
        tunep_store_close(st);
        return rs;
    }
    *ret_store = st;
    return TUNE_OK;
}

void tunep_store_close(struct tunep_store *st)
{
    tune_error e;
    if (!st)
        return;
    tunep_store_read_end(st);
    if (tunep_store_commit(st, &e) != TUNE_OK)
        tunep_log(TUNE_LOG_ERROR, "%s: %s", e.source, e.text);
    store_free(st);
}

const char *tunep_store_path(const struct tunep_store *st)
{
    return st->path;
}

const char *const *tunep_store_param_names(const struct tunep_store *st, size_t *ret_n)
{
    *ret_n = st->n_params;
    return st->param_names;
}

const char *tunep_store_param_type(const struct tunep_store *st, size_t i)
{
    return i < st->n_params ? ptype_names[st->params[i].type] : NULL;
}

const char *tunep_store_param_domain(const struct tunep_store *st, size_t i)
{
    return i < st->n_params ? st->params[i].domain : NULL;
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

/* Binds the parameter values from index ?4 on, in the order of prepare_trial_insert(). */
static tune_status bind_values(struct tunep_store *st, sqlite3_stmt *s, int64_t trial_id,
                               const struct tunep_value *values, tune_error *err)
{
    int k = 4;
    for (size_t i = 0; i < st->n_params; i++) {
        const struct tunep_value *v = &values[i];
        switch (v->type) {
            case TUNEP_V_DOUBLE: bind_real(s, k, v->u.d); break;
            case TUNEP_V_INT: sqlite3_bind_int64(s, k, v->u.i); break;
            case TUNEP_V_STRING:
                sqlite3_bind_text(s, k, v->u.s ? v->u.s : "", -1, SQLITE_STATIC);
                break;
            case TUNEP_V_BOOL: sqlite3_bind_int(s, k, v->u.b != 0); break;
            case TUNEP_V_ABSENT: /* a conditional parameter outside its option */
                sqlite3_bind_null(s, k++);
                if (st->params[i].type_column)
                    sqlite3_bind_null(s, k++);
                continue;
            default:
                return tunep_error_set_at(err, TUNE_EINVAL, st->path, 0, 0,
                                          "store: trial %lld: parameter '%s' has kind %d",
                                          (long long)trial_id, st->params[i].name, (int)v->type);
        }
        k++;
        if (st->params[i].type_column)
            sqlite3_bind_text(s, k++, ptype_names[v->type], -1, SQLITE_STATIC);
    }
    return TUNE_OK;
}

/* A trial that exists is retried or resumed: it becomes this attempt, with no stale reports. */
static tune_status restart_trial(struct tunep_store *st, int64_t trial_id, int attempt,
                                 double start_time, int *ret_found, tune_error *err)
{
    sqlite3_stmt *s = st->stmt[S_TRIAL_RESTART];
    tune_status rs;
    *ret_found = 0;
    if (run_stmt(st->stmt[S_SAVEPOINT]) != SQLITE_DONE)
        return db_fail(st, err, "restart trial %lld", (long long)trial_id);
    sqlite3_bind_int64(s, 1, trial_id);
    sqlite3_bind_int(s, 2, attempt);
    bind_real(s, 3, start_time);
    if (run_stmt(s) != SQLITE_DONE)
        goto fail;
    if (sqlite3_changes(st->db) > 0) {
        /* Reports that an interrupted run of this same attempt left behind. */
        s = st->stmt[S_REPORTS_CLEAR];
        sqlite3_bind_int64(s, 1, trial_id);
        sqlite3_bind_int(s, 2, attempt);
        if (run_stmt(s) != SQLITE_DONE)
            goto fail;
        *ret_found = 1;
    }
    if (run_stmt(st->stmt[S_RELEASE]) != SQLITE_DONE)
        goto fail;
    return TUNE_OK;
fail:
    rs = db_fail(st, err, "restart trial %lld attempt %d", (long long)trial_id, attempt);
    if (st->in_txn) {
        run_stmt(st->stmt[S_ROLLBACK_TO]);
        run_stmt(st->stmt[S_RELEASE]);
    }
    *ret_found = 0;
    return rs;
}

tune_status tunep_store_trial_start(struct tunep_store *st, int64_t trial_id, int attempt,
                                    const tune_space *space, const struct tunep_value *values,
                                    double start_time, tune_error *err)
{
    int found = 0;
    tune_status rs = check_writable(st, err);
    if (rs)
        return rs;
    if (space && space->n != st->n_params)
        return tunep_error_set_at(err, TUNE_EINVAL, st->path, 0, 0,
                                  "store: trial %lld: space has %zu parameters, store has %zu",
                                  (long long)trial_id, space->n, st->n_params);
    if ((rs = begin(st, err)))
        return rs;
    if (values || st->n_params == 0) {
        /* A new trial is the common case: one INSERT, no look-up first. */
        sqlite3_stmt *s = st->stmt[S_TRIAL_INSERT];
        sqlite3_bind_int64(s, 1, trial_id);
        sqlite3_bind_int(s, 2, attempt);
        bind_real(s, 3, start_time);
        if ((rs = bind_values(st, s, trial_id, values, err)))
            return rs;
        int rc = run_stmt(s);
        if (rc == SQLITE_DONE)
            return TUNE_OK;
        /* Anything but "the trial is there already" is a failure (which changed nothing). */
        if (rc != SQLITE_CONSTRAINT_PRIMARYKEY)
            return db_fail(st, err, "start trial %lld attempt %d", (long long)trial_id, attempt);
    }
    if ((rs = restart_trial(st, trial_id, attempt, start_time, &found, err)))
        return rs;
    if (!found)
        return tunep_error_set_at(err, TUNE_EINVAL, st->path, 0, 0,
                                  "store: start trial %lld: a new trial needs its values",
                                  (long long)trial_id);
    return TUNE_OK;
}

tune_status tunep_store_trial_resume(struct tunep_store *st, int64_t trial_id, int attempt,
                                     tune_error *err)
{
    tune_status rs = check_writable(st, err);
    if (rs)
        return rs;
    if ((rs = begin(st, err)))
        return rs;
    sqlite3_stmt *s = st->stmt[S_TRIAL_RESUME];
    sqlite3_bind_int64(s, 1, trial_id);
    sqlite3_bind_int(s, 2, attempt);
    if (run_stmt(s) != SQLITE_DONE)
        return db_fail(st, err, "resume trial %lld", (long long)trial_id);
    return TUNE_OK;
}

tune_status tunep_store_trial_set_values(struct tunep_store *st, int64_t trial_id,
                                         const struct tunep_value *values, tune_error *err)
{
    tune_status rs = check_writable(st, err);
    if (rs || st->n_params == 0)
        return rs;
    if ((rs = begin(st, err)))
        return rs;
    /* Rare (a PBT exploit), so the statement is built each time; numbered as the INSERT's. */
    struct tunep_buf b;
    int n = 3;
    tunep_buf_init(&b);
    tunep_buf_puts(&b, "UPDATE trials SET ");
    for (size_t i = 0; i < st->n_params; i++) {
        if (i)
            tunep_buf_append(&b, ", ", 2);
        put_ident(&b, st->params[i].column);
        tunep_buf_printf(&b, " = ?%d", ++n);
        if (st->params[i].type_column) {
            tunep_buf_append(&b, ", ", 2);
            put_ident(&b, st->params[i].type_column);
            tunep_buf_printf(&b, " = ?%d", ++n);
        }
    }
    tunep_buf_puts(&b, " WHERE trial_id = ?1");
    if (b.oom) {
        tunep_buf_done(&b);
        return oom(st, err);
    }
    sqlite3_stmt *s = NULL;
    rs = prepare(st, b.data, 0, &s, err);
    tunep_buf_done(&b);
    if (rs)
        return rs;
    sqlite3_bind_int64(s, 1, trial_id);
    if (!(rs = bind_values(st, s, trial_id, values, err)) && run_stmt(s) != SQLITE_DONE)
        rs = db_fail(st, err, "set the values of trial %lld", (long long)trial_id);
    sqlite3_finalize(s);
    return rs;
}

tune_status tunep_store_trial_end(struct tunep_store *st, int64_t trial_id, int attempt,
                                  tune_trial_status status, int64_t iteration, double time_total_s,
                                  double end_time, const char *error, tune_error *err)
{
    tune_status rs = check_writable(st, err);
    if (rs)
        return rs;
    if ((unsigned)status >= (unsigned)TUNE_TRIAL_STATUS_COUNT)
        return tunep_error_set_at(err, TUNE_EINVAL, st->path, 0, 0, "store: trial %lld: status %d",
                                  (long long)trial_id, (int)status);
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

static void json_put_number(struct tunep_buf *b, double v)
{
    char num[40];
    if (isnan(v)) {
        tunep_buf_append(b, "null", 4);
    } else if (isinf(v)) {
        /* Valid JSON that overflows to an infinity in SQLite, Python and strtod(). */
        tunep_buf_puts(b, v > 0 ? "1e999" : "-1e999");
    } else {
        tunep_format_double(num, sizeof num, v);
        tunep_buf_puts(b, num);
    }
}

tune_status tunep_store_report_row(struct tunep_store *st, int64_t trial_id, int attempt,
                                   const struct tunep_report_times *rt, size_t n,
                                   const char *const *names, const double *values, tune_error *err)
{
    tune_status rs = check_writable(st, err);
    if (rs)
        return rs;
    if (!rt)
        return tunep_error_set_at(err, TUNE_EINVAL, st->path, 0, 0,
                                  "store: report for trial %lld: no times", (long long)trial_id);
    if (n > 0 && (!names || !values))
        return tunep_error_set_at(err, TUNE_EINVAL, st->path, 0, 0,
                                  "store: report for trial %lld: no metrics", (long long)trial_id);
    struct tunep_buf *b = &st->json;
    b->len = 0; /* the buffer is reused: no allocation once it has grown */
    tunep_buf_append(b, "{", 1);
    for (size_t i = 0; i < n; i++) {
        if (!names[i])
            return tunep_error_set_at(err, TUNE_EINVAL, st->path, 0, 0,
                                      "store: report for trial %lld: metric %zu has no name",
                                      (long long)trial_id, i);
        if (i > 0)
            tunep_buf_append(b, ",", 1);
        tunep_json_put_string(b, names[i]);
        tunep_buf_append(b, ":", 1);
        json_put_number(b, values[i]);
    }
    tunep_buf_append(b, "}", 1);
    if (b->oom) {
        tunep_buf_done(b);
        return oom(st, err);
    }
    if (b->len > INT_MAX)
        return tunep_error_set_at(err, TUNE_EINVAL, st->path, 0, 0,
                                  "store: report for trial %lld: metrics too large",
                                  (long long)trial_id);
    if ((rs = begin(st, err)))
        return rs;
    sqlite3_stmt *s = st->stmt[S_REPORT_INSERT];
    sqlite3_bind_int64(s, 1, trial_id);
    sqlite3_bind_int(s, 2, attempt);
    sqlite3_bind_int64(s, 3, rt->iteration);
    bind_real(s, 4, rt->time_total_s);
    bind_real(s, 5, rt->wall_time);
    sqlite3_bind_text(s, 6, b->data, (int)b->len, SQLITE_STATIC);
    bind_real(s, 7, rt->time_this_iter_s);
    bind_real(s, 8, rt->time_since_restore);
    if (rt->iterations_since_restore >= 0)
        sqlite3_bind_int64(s, 9, rt->iterations_since_restore);
    else
        sqlite3_bind_null(s, 9);
    if (run_stmt(s) != SQLITE_DONE)
        return db_fail(st, err, "insert report for trial %lld", (long long)trial_id);
    return TUNE_OK;
}

tune_status tunep_store_report(struct tunep_store *st, int64_t trial_id, int attempt,
                               int64_t iteration, double time_total_s, double wall_time, size_t n,
                               const char *const *names, const double *values, tune_error *err)
{
    struct tunep_report_times rt = {.iteration = iteration,
                                    .time_total_s = time_total_s,
                                    .time_this_iter_s = (double)NAN,
                                    .time_since_restore = (double)NAN,
                                    .iterations_since_restore = -1,
                                    .wall_time = wall_time};
    return tunep_store_report_row(st, trial_id, attempt, &rt, n, names, values, err);
}

tune_status tunep_store_trial_host(struct tunep_store *st, int64_t trial_id, int attempt,
                                   int64_t pid, const char *hostname, const char *node_ip,
                                   const char *device, tune_error *err)
{
    tune_status rs = check_writable(st, err);
    if (rs)
        return rs;
    if ((rs = begin(st, err)))
        return rs;
    sqlite3_stmt *s = st->stmt[S_TRIAL_HOST];
    sqlite3_bind_int64(s, 1, trial_id);
    sqlite3_bind_int(s, 2, attempt);
    if (pid > 0)
        sqlite3_bind_int64(s, 3, pid);
    else
        sqlite3_bind_null(s, 3);
    if (hostname)
        sqlite3_bind_text(s, 4, hostname, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 4);
    if (node_ip)
        sqlite3_bind_text(s, 5, node_ip, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 5);
    if (device)
        sqlite3_bind_text(s, 6, device, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 6);
    if (run_stmt(s) != SQLITE_DONE)
        return db_fail(st, err, "record where trial %lld runs", (long long)trial_id);
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

/* experiment.driver, or NULL where the file predates the column. */
static tune_status read_driver(struct tunep_store *st, char **ret, tune_error *err)
{
    int64_t has = 0;
    tune_status rs = query_int64(st,
                                 "SELECT count(*) FROM pragma_table_info('experiment')"
                                 " WHERE name = 'driver'",
                                 &has, err);
    if (rs || !has)
        return rs;
    sqlite3_stmt *s;
    if ((rs = prepare(st, "SELECT driver FROM experiment WHERE id = 1", 0, &s, err)))
        return rs;
    int nomem = 0;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *ret = column_strdup(s, 0, &nomem);
    else if (rc != SQLITE_DONE)
        rs = db_fail(st, err, "read experiment driver");
    sqlite3_finalize(s);
    return !rs && nomem ? oom(st, err) : rs;
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
    if (!rs)
        rs = read_driver(st, &row.driver, err);
    if (rs) {
        tunep_store_experiment_done(&row);
        return rs;
    }
    *ret = row;
    return TUNE_OK;
}

tune_status tunep_store_read_origin(struct tunep_store *st, char **ret_cwd, char **ret_command_line,
                                    tune_error *err)
{
    *ret_cwd = *ret_command_line = NULL;
    int64_t has = 0;
    tune_status rs = query_int64(st,
                                 "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND"
                                 " name = 'origin'",
                                 &has, err);
    if (rs || !has)
        return rs; /* a store from before the table: unknown */
    sqlite3_stmt *s;
    if ((rs = prepare(st, "SELECT cwd, command_line FROM origin WHERE id = 1", 0, &s, err)))
        return rs;
    int nomem = 0;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *ret_cwd = column_strdup(s, 0, &nomem);
        *ret_command_line = column_strdup(s, 1, &nomem);
        if (nomem) {
            tunep_free(*ret_cwd);
            tunep_free(*ret_command_line);
            *ret_cwd = *ret_command_line = NULL;
            rs = oom(st, err);
        }
    } else if (rc != SQLITE_DONE) {
        rs = db_fail(st, err, "read origin");
    }
    sqlite3_finalize(s);
    return rs;
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
    tunep_free(row->driver);
    memset(row, 0, sizeof *row);
}

/*
 * The metrics of one report, decoded from its JSON text. Names are copied into
 * an arena (each json_each step invalidates the previous row's text) and the
 * pointers are set once the arena stops moving. Reused from row to row.
 */
struct metric_rows {
    struct tunep_buf arena;
    size_t *off;
    const char **names;
    double *values;
    size_t n, cap_off, cap_names, cap_values;
};

static void metric_rows_done(struct metric_rows *m)
{
    tunep_buf_done(&m->arena);
    tunep_free(m->off);
    tunep_free((void *)m->names);
    tunep_free(m->values);
}

static const char metrics_sql[] = "SELECT key, value FROM json_each(?1) ORDER BY id";

/*
 * A trial's last value of each metric: the value in the last report of its
 * current attempt (?1, ?2) that has the metric, as Ray's scope "last" and as
 * the engine keeps it while running (tunep_trial_rec_set_last()). The bare
 * value and id come from the row of max(training_iteration) (SQLite's rule for
 * bare columns beside one max()). Metrics of the last report come first, in
 * its order.
 */
static const char last_metrics_sql[] =
    "SELECT j.key, j.value, max(r.training_iteration) AS it, j.id"
    " FROM reports AS r, json_each(r.metrics) AS j"
    " WHERE r.trial_id = ?1 AND r.attempt = ?2 GROUP BY j.key ORDER BY it DESC, j.id";

/* Reads (key, value) rows of a bound statement into m, and resets it. */
static tune_status step_metrics(struct tunep_store *st, sqlite3_stmt *q, int64_t trial_id,
                                struct metric_rows *m, tune_error *err)
{
    int rc;
    for (;;) {
        /* json_each converts numbers with strtod(): under a ',' LC_NUMERIC it stops at '.'. */
        locale_t old = uselocale(st->c_locale);
        rc = sqlite3_step(q);
        uselocale(old);
        if (rc != SQLITE_ROW)
            break;
        const char *key = (const char *)sqlite3_column_text(q, 0);
        size_t len = (size_t)sqlite3_column_bytes(q, 0);
        if (!grow((void **)&m->off, &m->cap_off, m->n + 1, sizeof *m->off) ||
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
    if (m->arena.oom || !grow((void **)&m->names, &m->cap_names, m->n, sizeof *m->names))
        return oom(st, err);
    for (size_t i = 0; i < m->n; i++)
        m->names[i] = m->arena.data + m->off[i];
    return TUNE_OK;
}

/* Decodes json (NULL: no metrics) with a statement prepared from metrics_sql. */
static tune_status decode_metrics(struct tunep_store *st, sqlite3_stmt *q, const char *json,
                                  int64_t trial_id, struct metric_rows *m, tune_error *err)
{
    m->n = 0;
    m->arena.len = 0;
    if (!json)
        return TUNE_OK;
    sqlite3_bind_text(q, 1, json, -1, SQLITE_STATIC);
    return step_metrics(st, q, trial_id, m, err);
}

/* The last value of each metric of a trial's attempt, with last_metrics_sql. */
static tune_status decode_last_metrics(struct tunep_store *st, sqlite3_stmt *q, int64_t trial_id,
                                       int attempt, struct metric_rows *m, tune_error *err)
{
    m->n = 0;
    m->arena.len = 0;
    sqlite3_bind_int64(q, 1, trial_id);
    sqlite3_bind_int(q, 2, attempt);
    return step_metrics(st, q, trial_id, m, err);
}

static tune_trial_status status_from_name(const char *s)
{
    for (int k = 0; s && k < TUNE_TRIAL_STATUS_COUNT; k++)
        if (strcmp(s, status_names[k]) == 0)
            return (tune_trial_status)k;
    return TUNE_TRIAL_STATUS_COUNT; /* unknown: tune_trial_status_name() says "UNKNOWN" */
}

/* Columns of the trial query, before the parameters'. */
enum {
    QT_ID,
    QT_STATUS,
    QT_ATTEMPT,
    QT_ITER,
    QT_TIME,
    QT_START,
    QT_END,
    QT_ERROR,
    QT_R_ITER,
    QT_R_TIME,
    QT_R_WALL,
    QT_R_THIS,
    QT_R_SINCE,
    QT_R_ITERS,
    QT_PID,
    QT_HOST,
    QT_IP,
    QT_PARAMS
};

/* The trial query: each trial with the last report of its current attempt, then its values
 * (its metrics come from last_metrics_sql). */
static tune_status prepare_trial_query(struct tunep_store *st, sqlite3_stmt **ret, tune_error *err)
{
    struct tunep_buf b;
    tunep_buf_init(&b);
    tunep_buf_puts(&b, "SELECT t.trial_id, t.status, t.attempt, t.training_iteration,"
                       " t.time_total_s, t.start_time, t.end_time, t.error,"
                       " r.training_iteration, r.time_total_s, r.wall_time");
    tunep_buf_puts(&b, st->has_host ? ", r.time_this_iter_s, r.time_since_restore,"
                                      " r.iterations_since_restore, t.pid, t.hostname, t.node_ip"
                                    : ", NULL, NULL, NULL, NULL, NULL, NULL");
    for (size_t i = 0; i < st->n_params; i++) {
        tunep_buf_puts(&b, ", t.");
        put_ident(&b, st->params[i].column);
        if (st->params[i].type_column) {
            tunep_buf_puts(&b, ", t.");
            put_ident(&b, st->params[i].type_column);
        }
    }
    tunep_buf_puts(&b, " FROM trials AS t LEFT JOIN reports AS r"
                       " ON r.trial_id = t.trial_id AND r.attempt = t.attempt"
                       " AND r.training_iteration = (SELECT max(training_iteration) FROM reports"
                       " WHERE trial_id = t.trial_id AND attempt = t.attempt)"
                       " ORDER BY t.trial_id");
    if (b.oom) {
        tunep_buf_done(&b);
        return oom(st, err);
    }
    tune_status rs = prepare(st, b.data, 0, ret, err);
    tunep_buf_done(&b);
    return rs;
}

/* One value from column k of the trial query (kind column k + 1 for a mixed parameter). */
static void read_value(const struct store_param *p, sqlite3_stmt *q, int k, struct tunep_value *v)
{
    int ctype = sqlite3_column_type(q, k);
    enum ptype kind = p->type;
    if (ctype == SQLITE_NULL) { /* a conditional parameter outside its option */
        v->type = TUNEP_V_ABSENT;
        return;
    }
    if (kind == PT_MIXED) {
        enum ptype fallback = ctype == SQLITE_INTEGER ? PT_INT
                              : ctype == SQLITE_TEXT  ? PT_STR
                                                      : PT_FLOAT;
        kind = ptype_from_name((const char *)sqlite3_column_text(q, k + 1), fallback);
    }
    switch (kind) {
        case PT_INT:
            v->type = TUNEP_V_INT;
            v->u.i = sqlite3_column_int64(q, k);
            break;
        case PT_BOOL:
            v->type = TUNEP_V_BOOL;
            v->u.b = sqlite3_column_int64(q, k) != 0;
            break;
        case PT_STR: {
            const char *t = (const char *)sqlite3_column_text(q, k);
            v->type = TUNEP_V_STRING;
            v->u.s = t ? t : "";
            break;
        }
        default: /* a float */
            v->type = TUNEP_V_DOUBLE;
            v->u.d = column_real(q, k);
            break;
    }
}

tune_status tunep_store_foreach_trial(struct tunep_store *st, tunep_trial_cb cb, void *ud,
                                      tune_error *err)
{
    sqlite3_stmt *q = NULL, *qm = NULL;
    struct tunep_value *vals = NULL;
    struct metric_rows m;
    int rc;
    if (!st || !cb)
        return tunep_error_set(err, TUNE_EINVAL, "store: foreach trial: missing argument");
    memset(&m, 0, sizeof m);
    tune_status rs = prepare_trial_query(st, &q, err);
    if (rs || (rs = prepare(st, last_metrics_sql, 0, &qm, err)))
        goto out;
    if (st->n_params > 0 && !(vals = tunep_calloc(st->n_params, sizeof *vals))) {
        rs = oom(st, err);
        goto out;
    }
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct tunep_stored_trial t;
        memset(&t, 0, sizeof t);
        t.trial_id = sqlite3_column_int64(q, QT_ID);
        t.status = status_from_name((const char *)sqlite3_column_text(q, QT_STATUS));
        t.attempt = sqlite3_column_int(q, QT_ATTEMPT);
        t.iteration = sqlite3_column_int64(q, QT_ITER);
        t.time_total_s = column_real(q, QT_TIME);
        t.start_time = column_real(q, QT_START);
        t.end_time = column_real(q, QT_END);
        t.error = (const char *)sqlite3_column_text(q, QT_ERROR);
        t.report_time_total_s = column_real(q, QT_R_TIME);
        t.wall_time = column_real(q, QT_R_WALL);
        t.time_this_iter_s = column_real(q, QT_R_THIS);
        t.time_since_restore = column_real(q, QT_R_SINCE);
        t.iterations_since_restore = sqlite3_column_type(q, QT_R_ITERS) == SQLITE_NULL
                                         ? -1
                                         : sqlite3_column_int64(q, QT_R_ITERS);
        t.pid = sqlite3_column_int64(q, QT_PID);
        t.hostname = (const char *)sqlite3_column_text(q, QT_HOST);
        t.node_ip = (const char *)sqlite3_column_text(q, QT_IP);
        /* A running attempt has not written its totals yet: its last report has them. */
        if (sqlite3_column_type(q, QT_R_ITER) != SQLITE_NULL &&
            sqlite3_column_int64(q, QT_R_ITER) > t.iteration) {
            t.iteration = sqlite3_column_int64(q, QT_R_ITER);
            t.time_total_s = column_real(q, QT_R_TIME);
        }
        /* Column texts stay valid until q steps again: values borrow them. */
        for (size_t i = 0, k = QT_PARAMS; i < st->n_params; i++) {
            read_value(&st->params[i], q, (int)k, &vals[i]);
            k += st->params[i].type_column ? 2 : 1;
        }
        if ((rs = decode_last_metrics(st, qm, t.trial_id, t.attempt, &m, err)))
            goto out;
        t.n_params = st->n_params;
        t.param_names = st->param_names;
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
    sqlite3_finalize(qm);
    tunep_free(vals);
    metric_rows_done(&m);
    return rs;
}

/*
 * Calls cb for every stored report, ordered by trial_id, attempt, iteration;
 * with last_attempt_only, for each trial's current attempt only. Stores made
 * before the host columns existed give their times as unknown.
 */
static tune_status foreach_report_row(struct tunep_store *st, int last_attempt_only,
                                      tunep_report_row_cb cb, void *ud, tune_error *err)
{
    sqlite3_stmt *q = NULL, *qm = NULL;
    struct metric_rows m;
    struct tunep_buf sql;
    int rc;
    if (!st || !cb)
        return tunep_error_set(err, TUNE_EINVAL, "store: foreach report: missing argument");
    memset(&m, 0, sizeof m);
    tunep_buf_init(&sql);
    tunep_buf_puts(&sql, "SELECT r.trial_id, r.attempt, r.training_iteration, r.time_total_s,"
                         " r.metrics, r.wall_time");
    tunep_buf_puts(&sql, st->has_host ? ", r.time_this_iter_s, r.time_since_restore,"
                                        " r.iterations_since_restore"
                                      : ", NULL, NULL, NULL");
    tunep_buf_puts(&sql, " FROM reports AS r");
    if (last_attempt_only)
        tunep_buf_puts(&sql, " JOIN trials AS t ON t.trial_id = r.trial_id"
                             " AND t.attempt = r.attempt");
    tunep_buf_puts(&sql, " ORDER BY r.trial_id, r.attempt, r.training_iteration");
    tune_status rs = sql.oom ? oom(st, err) : prepare(st, sql.data, 0, &q, err);
    tunep_buf_done(&sql);
    if (rs || (rs = prepare(st, metrics_sql, 0, &qm, err)))
        goto out;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct tunep_stored_report r;
        r.trial_id = sqlite3_column_int64(q, 0);
        if ((rs = decode_metrics(st, qm, (const char *)sqlite3_column_text(q, 4), r.trial_id, &m,
                                 err)))
            goto out;
        r.attempt = sqlite3_column_int(q, 1);
        r.iteration = sqlite3_column_int64(q, 2);
        r.time_total_s = column_real(q, 3);
        r.wall_time = column_real(q, 5);
        r.time_this_iter_s = column_real(q, 6);
        r.time_since_restore = column_real(q, 7);
        r.iterations_since_restore =
            sqlite3_column_type(q, 8) == SQLITE_NULL ? -1 : sqlite3_column_int64(q, 8);
        r.n_metrics = m.n;
        r.metric_names = m.names;
        r.metric_values = m.values;
        if ((rs = cb(ud, &r)) != TUNE_OK)
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

/* Hands a stored report to a tunep_report_cb, which takes its fields one by one. */
struct report_fields {
    tunep_report_cb cb;
    void *ud;
};

static tune_status report_fields_cb(void *ud, const struct tunep_stored_report *r)
{
    const struct report_fields *f = ud;
    return f->cb(f->ud, r->trial_id, r->attempt, r->iteration, r->time_total_s, r->n_metrics,
                 r->metric_names, r->metric_values);
}

tune_status tunep_store_foreach_report(struct tunep_store *st, tunep_report_cb cb, void *ud,
                                       tune_error *err)
{
    struct report_fields f = {cb, ud};
    if (!cb)
        return tunep_error_set(err, TUNE_EINVAL, "store: foreach report: missing argument");
    return foreach_report_row(st, 0, report_fields_cb, &f, err);
}

tune_status tunep_store_foreach_last_attempt_report(struct tunep_store *st, tunep_report_cb cb,
                                                    void *ud, tune_error *err)
{
    struct report_fields f = {cb, ud};
    if (!cb)
        return tunep_error_set(err, TUNE_EINVAL, "store: foreach report: missing argument");
    return foreach_report_row(st, 1, report_fields_cb, &f, err);
}

tune_status tunep_store_foreach_report_row(struct tunep_store *st, tunep_report_row_cb cb, void *ud,
                                           tune_error *err)
{
    return foreach_report_row(st, 0, cb, ud, err);
}
