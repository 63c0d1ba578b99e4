/*
 * test_store.c - the SQLite store (store/store.c) and CSV export (store/export_csv.c).
 *
 * Round trips of every parameter kind and of awkward metric values and names,
 * refusal to create twice, ENOTFOUND, transaction visibility between two
 * connections, a crash of a writing child process, byte-exact CSV output, the
 * last-attempt rule for retried trials, locale independence and allocation
 * failures. SQLite is called directly only to look at what is on disk
 * (typeof(), PRAGMA integrity_check).
 */
#include "check_util.h"
#include <dirent.h>

#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "store/lock.h"
#include "store/store.h"

/* ---- fixtures ------------------------------------------------------------- */

/* A space with every kind: float, int, str, bool, and a choice mixing kinds. */
static struct tunep_value opt_values[] = {
    {.type = TUNEP_V_STRING, .u.s = "adam"},
    {.type = TUNEP_V_STRING, .u.s = "sgd"},
};
static struct tunep_value flag_values[] = {{.type = TUNEP_V_BOOL, .u.b = 1}};
static struct tunep_value mix_values[] = {
    {.type = TUNEP_V_INT, .u.i = 16},
    {.type = TUNEP_V_STRING, .u.s = "auto"},
    {.type = TUNEP_V_BOOL, .u.b = 1},
    {.type = TUNEP_V_DOUBLE, .u.d = 0.5},
};
/* tunep_param.name is a char * (the space owns it): the names live in arrays. */
static char name_lr[] = "lr", name_batch[] = "batch", name_opt[] = "opt", name_flag[] = "flag",
            name_mix[] = "mix";
static struct tunep_param params5[] = {
    {.name = name_lr, .dist = TUNEP_DIST_LOGUNIFORM, .lo = 1e-5, .hi = 1e-1, .base = 10},
    {.name = name_batch, .dist = TUNEP_DIST_RANDINT, .ilo = 8, .ihi = 128},
    {.name = name_opt, .dist = TUNEP_DIST_CHOICE, .n_values = 2, .values = opt_values},
    {.name = name_flag, .dist = TUNEP_DIST_CONST, .n_values = 1, .values = flag_values},
    {.name = name_mix, .dist = TUNEP_DIST_CHOICE, .n_values = 4, .values = mix_values},
};
static tune_space space5 = {.n = 5, .cap = 5, .params = params5};

static const struct tunep_store_experiment exp1 = {
    .name = "exp \"one\"",
    .config_json = "{\"metric\": \"loss\", \"mode\": \"min\"}",
    .metric = "loss",
    .mode = "min",
    .version = "0.1.0",
    .seed = 0xfedcba9876543210u, /* above 2^63: stored as its bit pattern */
    .created = 1700000000.25,
};

static char *tmpdir;
static char db_path[512];

static void setup(void)
{
    /* The CSVs' date column is local time: UTC makes it the same everywhere. */
    setenv("TZ", "UTC", 1);
    tzset();
    tmpdir = tune_test_mkdtemp();
    ck_assert_ptr_nonnull(tmpdir);
    snprintf(db_path, sizeof db_path, "%s/experiment.db", tmpdir);
}

static void teardown(void)
{
    tune_test_rmtree(tmpdir);
    free(tmpdir);
    tmpdir = NULL;
}

static void set5(struct tunep_value *v, double lr, int64_t batch, const char *opt, int flag,
                 struct tunep_value mix)
{
    v[0] = (struct tunep_value){.type = TUNEP_V_DOUBLE, .u.d = lr};
    v[1] = (struct tunep_value){.type = TUNEP_V_INT, .u.i = batch};
    v[2] = (struct tunep_value){.type = TUNEP_V_STRING, .u.s = opt};
    v[3] = (struct tunep_value){.type = TUNEP_V_BOOL, .u.b = flag};
    v[4] = mix;
}

#define OK(call)                                                                                   \
    do {                                                                                           \
        tune_error e_;                                                                             \
        memset(&e_, 0, sizeof e_);                                                                 \
        tune_status s_ = (call);                                                                   \
        ck_assert_msg(s_ == TUNE_OK, "%s -> %d: %s", #call, (int)s_, e_.text);                     \
    } while (0)
#define E (&e_)

static struct tunep_store *create5(void)
{
    struct tunep_store *st = NULL;
    OK(tunep_store_create(db_path, &exp1, &space5, &st, E));
    return st;
}

/* Same double, NaN equal to NaN, -0 equal to 0 (the JSON text drops the sign of zero). */
static int same(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

/* ---- collecting what the store reads back --------------------------------- */

#define MAXT 16
#define MAXM 8

struct seen_trial {
    int64_t id;
    int attempt;
    tune_trial_status status;
    int64_t iteration;
    double time_total_s, start_time, end_time;
    char error[64];
    int has_error;
    size_t n_params;
    struct tunep_value params[5];
    char strs[5][64];
    size_t n_metrics;
    char names[MAXM][64];
    double values[MAXM];
};

struct seen {
    int n;
    struct seen_trial t[MAXT];
};

static tune_status collect_trial(void *ud, const struct tunep_stored_trial *t)
{
    struct seen *s = ud;
    if (s->n++ >= MAXT)
        return TUNE_OK; /* counted, not kept */
    struct seen_trial *o = &s->t[s->n - 1];
    o->id = t->trial_id;
    o->attempt = t->attempt;
    o->status = t->status;
    o->iteration = t->iteration;
    o->time_total_s = t->time_total_s;
    o->start_time = t->start_time;
    o->end_time = t->end_time;
    o->has_error = t->error != NULL;
    snprintf(o->error, sizeof o->error, "%s", t->error ? t->error : "");
    o->n_params = t->n_params;
    ck_assert_uint_le(t->n_params, 5);
    for (size_t i = 0; i < t->n_params; i++) {
        o->params[i] = t->params[i];
        if (t->params[i].type == TUNEP_V_STRING) {
            snprintf(o->strs[i], sizeof o->strs[i], "%s", t->params[i].u.s);
            o->params[i].u.s = o->strs[i];
        }
    }
    o->n_metrics = t->n_metrics;
    ck_assert_uint_le(t->n_metrics, MAXM);
    for (size_t i = 0; i < t->n_metrics; i++) {
        snprintf(o->names[i], sizeof o->names[i], "%s", t->metric_names[i]);
        o->values[i] = t->metric_values[i];
    }
    return TUNE_OK;
}

struct seen_report {
    int64_t id, iteration;
    int attempt;
    double time_total_s;
    size_t n;
    char names[MAXM][64];
    double values[MAXM];
};

struct seen_reports {
    int n;
    struct seen_report r[64];
};

static tune_status collect_report(void *ud, int64_t trial_id, int attempt, int64_t iteration,
                                  double time_total_s, size_t n, const char *const *names,
                                  const double *values)
{
    struct seen_reports *s = ud;
    if (s->n++ >= 64)
        return TUNE_OK; /* counted, not kept */
    struct seen_report *o = &s->r[s->n - 1];
    o->id = trial_id;
    o->attempt = attempt;
    o->iteration = iteration;
    o->time_total_s = time_total_s;
    o->n = n;
    ck_assert_uint_le(n, MAXM);
    for (size_t i = 0; i < n; i++) {
        snprintf(o->names[i], sizeof o->names[i], "%s", names[i]);
        o->values[i] = values[i];
    }
    return TUNE_OK;
}

static int count_trials(struct tunep_store *st)
{
    struct seen *s = calloc(1, sizeof *s);
    OK(tunep_store_foreach_trial(st, collect_trial, s, E));
    int n = s->n;
    free(s);
    return n;
}

/* One integer from SQL on the file, through a separate read-only connection. */
static int64_t sql_int(const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    int64_t v = -12345;
    ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(db));
    if (sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

static void sql_text(const char *sql, char *out, size_t size)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    out[0] = '\0';
    ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(db));
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
        snprintf(out, size, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    sqlite3_close(db);
}

/* ---- round trip ----------------------------------------------------------- */

static const char *const weird = "we\"ird\\na\nme\t\x01/ü.$";

START_TEST(test_roundtrip)
{
    struct tunep_store *st = create5();
    struct tunep_value v[5];
    const double third = 1.0 / 3.0;

    /* trial 0: two reports, a metric that appears only in the second */
    set5(v, third * 1e-3, 64, "adam", 1, mix_values[0]);
    OK(tunep_store_trial_start(st, 0, 1, &space5, v, 100.5, E));
    const char *n1[] = {"loss"};
    double v1[] = {0.5};
    OK(tunep_store_report(st, 0, 1, 1, 0.25, 101.0, 1, n1, v1, E));
    const char *n2[] = {"loss", "acc", weird, ""};
    double v2[] = {third, (double)NAN, DBL_TRUE_MIN, -DBL_MAX};
    OK(tunep_store_report(st, 0, 1, 2, 0.5, 102.0, 4, n2, v2, E));
    OK(tunep_store_commit(st, E));
    OK(tunep_store_trial_end(st, 0, 1, TUNE_TRIAL_TERMINATED, 2, 0.75, 103.0, NULL, E));
    OK(tunep_store_commit(st, E));

    /* trial 1: infinities; mixed value is a string; failed with an error text */
    set5(v, 0.1, -7, "s,g\"d\n", 0, mix_values[1]);
    OK(tunep_store_trial_start(st, 1, 1, &space5, v, 200.0, E));
    const char *n3[] = {"acc", "loss"};
    double v3[] = {(double)INFINITY, -(double)INFINITY};
    OK(tunep_store_report(st, 1, 1, 1, 1.0, 201.0, 2, n3, v3, E));
    OK(tunep_store_trial_end(st, 1, 1, TUNE_TRIAL_ERROR, 1, 1.5, 202.0, "boom: 'x'", E));

    /* trials 2 and 3: the mixed choice as a bool and as a float; 3 stays RUNNING */
    set5(v, 1e-5, INT64_MIN, "", 1, mix_values[2]);
    OK(tunep_store_trial_start(st, 2, 1, &space5, v, 300.0, E));
    OK(tunep_store_trial_end(st, 2, 1, TUNE_TRIAL_STOPPED, 0, 0.0, 301.0, NULL, E));
    set5(v, DBL_MAX, INT64_MAX, "sgd", 0, mix_values[3]);
    OK(tunep_store_trial_start(st, 3, 1, &space5, v, 400.0, E));
    const char *n4[] = {"loss"};
    double v4[] = {7.0};
    OK(tunep_store_report(st, 3, 1, 1, 2.5, 401.0, 1, n4, v4, E));
    tunep_store_close(st); /* commits */

    OK(tunep_store_open(db_path, 1, &st, E));
    struct tunep_store_experiment_row row;
    OK(tunep_store_read_experiment(st, &row, E));
    ck_assert_str_eq(row.name, exp1.name);
    ck_assert_str_eq(row.config_json, exp1.config_json);
    ck_assert_str_eq(row.metric, "loss");
    ck_assert_str_eq(row.mode, "min");
    ck_assert_str_eq(row.version, "0.1.0");
    ck_assert(row.seed == exp1.seed);
    ck_assert(row.created == exp1.created);
    tunep_store_experiment_done(&row);
    ck_assert_ptr_null(row.name);

    size_t np;
    const char *const *pn = tunep_store_param_names(st, &np);
    ck_assert_uint_eq(np, 5);
    ck_assert_str_eq(pn[0], "lr");
    ck_assert_str_eq(pn[4], "mix");

    struct seen *s = calloc(1, sizeof *s);
    OK(tunep_store_foreach_trial(st, collect_trial, s, E));
    ck_assert_int_eq(s->n, 4);

    struct seen_trial *t = &s->t[0];
    ck_assert(t->id == 0 && t->attempt == 1 && t->status == TUNE_TRIAL_TERMINATED);
    ck_assert(t->iteration == 2 && t->time_total_s == 0.75);
    ck_assert(t->start_time == 100.5 && t->end_time == 103.0 && !t->has_error);
    ck_assert_int_eq(t->params[0].type, TUNEP_V_DOUBLE);
    ck_assert(t->params[0].u.d == third * 1e-3);
    ck_assert_int_eq(t->params[1].type, TUNEP_V_INT);
    ck_assert(t->params[1].u.i == 64);
    ck_assert_int_eq(t->params[2].type, TUNEP_V_STRING);
    ck_assert_str_eq(t->params[2].u.s, "adam");
    ck_assert_int_eq(t->params[3].type, TUNEP_V_BOOL);
    ck_assert_int_eq(t->params[3].u.b, 1);
    ck_assert_int_eq(t->params[4].type, TUNEP_V_INT);
    ck_assert(t->params[4].u.i == 16);
    /* the last report's metrics, in reported order, exactly */
    ck_assert_uint_eq(t->n_metrics, 4);
    for (int i = 0; i < 4; i++) {
        ck_assert_str_eq(t->names[i], n2[i]);
        ck_assert_msg(same(t->values[i], v2[i]), "%s: %.17g != %.17g", n2[i], t->values[i], v2[i]);
    }

    t = &s->t[1];
    ck_assert(t->status == TUNE_TRIAL_ERROR && t->has_error);
    ck_assert_str_eq(t->error, "boom: 'x'");
    ck_assert(t->params[0].u.d == 0.1 && t->params[1].u.i == -7);
    ck_assert_str_eq(t->params[2].u.s, "s,g\"d\n");
    ck_assert(t->params[3].type == TUNEP_V_BOOL && t->params[3].u.b == 0);
    ck_assert_int_eq(t->params[4].type, TUNEP_V_STRING);
    ck_assert_str_eq(t->params[4].u.s, "auto");
    ck_assert_uint_eq(t->n_metrics, 2);
    ck_assert_str_eq(t->names[0], "acc");
    ck_assert(t->values[0] == (double)INFINITY && t->values[1] == -(double)INFINITY);

    t = &s->t[2];
    ck_assert(t->status == TUNE_TRIAL_STOPPED && t->n_metrics == 0 && t->iteration == 0);
    ck_assert(t->params[1].u.i == INT64_MIN);
    ck_assert_str_eq(t->params[2].u.s, "");
    ck_assert_int_eq(t->params[4].type, TUNEP_V_BOOL);
    ck_assert_int_eq(t->params[4].u.b, 1);

    /* still running: totals come from its last report */
    t = &s->t[3];
    ck_assert(t->status == TUNE_TRIAL_RUNNING && t->iteration == 1 && t->time_total_s == 2.5);
    ck_assert(isnan(t->end_time));
    ck_assert(t->params[0].u.d == DBL_MAX && t->params[1].u.i == INT64_MAX);
    ck_assert_int_eq(t->params[4].type, TUNEP_V_DOUBLE);
    ck_assert(t->params[4].u.d == 0.5);
    free(s);

    struct seen_reports *r = calloc(1, sizeof *r);
    OK(tunep_store_foreach_report(st, collect_report, r, E));
    ck_assert_int_eq(r->n, 4);
    ck_assert(r->r[0].id == 0 && r->r[0].iteration == 1 && r->r[0].n == 1);
    ck_assert(r->r[0].values[0] == 0.5 && r->r[0].time_total_s == 0.25);
    ck_assert(r->r[1].id == 0 && r->r[1].iteration == 2 && r->r[1].n == 4);
    ck_assert_str_eq(r->r[1].names[2], weird);
    ck_assert(r->r[1].values[2] == DBL_TRUE_MIN);
    ck_assert(r->r[2].id == 1 && r->r[3].id == 3);
    free(r);
    tunep_store_close(st);

    /* What SQL users see: typed values, kinds in params, JSON metrics. */
    ck_assert_int_eq(sql_int("PRAGMA user_version"), 1);
    ck_assert_int_eq(sql_int("SELECT seed FROM experiment"), (int64_t)exp1.seed);
    char buf[256];
    sql_text("SELECT group_concat(type, ',') FROM (SELECT type FROM params ORDER BY position)", buf,
             sizeof buf);
    ck_assert_str_eq(buf, "float,int,str,bool,mixed");
    sql_text("SELECT group_concat(domain, ',') FROM (SELECT domain FROM params ORDER BY position)",
             buf, sizeof buf);
    ck_assert_str_eq(buf, "loguniform,randint,choice,constant,choice");
    sql_text("SELECT typeof(\"config/lr\") || typeof(\"config/batch\") || typeof(\"config/opt\")"
             " || typeof(\"config/flag\") || typeof(\"config/mix\") || \"config/mix:type\""
             " FROM trials WHERE trial_id = 0",
             buf, sizeof buf);
    ck_assert_str_eq(buf, "realintegertextintegerintegerint");
    sql_text("SELECT group_concat(\"config/mix:type\", ',') FROM trials", buf, sizeof buf);
    ck_assert_str_eq(buf, "int,str,bool,float");
    sql_text("SELECT json_extract(metrics, '$.loss') FROM reports WHERE trial_id = 0 AND"
             " training_iteration = 1",
             buf, sizeof buf);
    ck_assert_str_eq(buf, "0.5");
    ck_assert_int_eq(sql_int("SELECT json_extract(metrics, '$.acc') IS NULL FROM reports"
                             " WHERE trial_id = 0 AND training_iteration = 2"),
                     1);
    ck_assert_int_eq(sql_int("SELECT json_extract(metrics, '$.acc') > 1e308 FROM reports"
                             " WHERE trial_id = 1"),
                     1);
    ck_assert_int_eq(sql_int("SELECT count(*) FROM pragma_foreign_key_check"), 0);
}
END_TEST

/* Parameter names that SQLite would take for the same column. */
START_TEST(test_column_names)
{
    char n0[] = "lr", n1[] = "LR", n2[] = "a\"b/c", n3[] = "a\"B/c:type";
    struct tunep_param p[] = {
        {.name = n0, .dist = TUNEP_DIST_UNIFORM, .lo = 0, .hi = 1},
        {.name = n1, .dist = TUNEP_DIST_RANDINT, .ilo = 0, .ihi = 9},
        {.name = n2, .dist = TUNEP_DIST_CHOICE, .n_values = 4, .values = mix_values},
        {.name = n3, .dist = TUNEP_DIST_UNIFORM, .lo = 0, .hi = 1},
    };
    tune_space sp = {.n = 4, .cap = 4, .params = p};
    struct tunep_value v[4] = {
        {.type = TUNEP_V_DOUBLE, .u.d = 0.25},
        {.type = TUNEP_V_INT, .u.i = 3},
        {.type = TUNEP_V_BOOL, .u.b = 0},
        {.type = TUNEP_V_DOUBLE, .u.d = 0.75},
    };
    struct tunep_store *st = NULL;
    OK(tunep_store_create(db_path, &exp1, &sp, &st, E));
    OK(tunep_store_trial_start(st, 5, 1, &sp, v, 0.0, E));
    tunep_store_close(st);

    char buf[256];
    sql_text("SELECT group_concat(column_name, '|') FROM (SELECT column_name FROM params"
             " ORDER BY position)",
             buf, sizeof buf);
    ck_assert_str_eq(buf, "config/lr|config/LR:2|config/a\"b/c|config/a\"B/c:type:2");

    OK(tunep_store_open(db_path, 1, &st, E));
    struct seen *s = calloc(1, sizeof *s);
    OK(tunep_store_foreach_trial(st, collect_trial, s, E));
    ck_assert_int_eq(s->n, 1);
    ck_assert(s->t[0].id == 5);
    ck_assert(s->t[0].params[0].type == TUNEP_V_DOUBLE && s->t[0].params[0].u.d == 0.25);
    ck_assert(s->t[0].params[1].type == TUNEP_V_INT && s->t[0].params[1].u.i == 3);
    ck_assert(s->t[0].params[2].type == TUNEP_V_BOOL && s->t[0].params[2].u.b == 0);
    ck_assert(s->t[0].params[3].type == TUNEP_V_DOUBLE && s->t[0].params[3].u.d == 0.75);
    free(s);
    tunep_store_close(st);
}
END_TEST

/* ---- refusals and errors -------------------------------------------------- */

START_TEST(test_create_twice)
{
    tune_error err;
    struct tunep_store *st = create5(), *st2 = (struct tunep_store *)&err;
    ck_assert_int_eq(tunep_store_create(db_path, &exp1, &space5, &st2, &err), TUNE_ESTORE);
    ck_assert_str_eq(err.text, "experiment.db already holds an experiment");
    ck_assert_str_eq(err.source, db_path);
    ck_assert_ptr_eq(st2, (struct tunep_store *)&err); /* untouched on failure */
    tunep_store_close(st);
    ck_assert_int_eq(tunep_store_create(db_path, &exp1, &space5, &st2, &err), TUNE_ESTORE);
    ck_assert_str_eq(err.text, "experiment.db already holds an experiment");
    /* the refused create left the experiment intact */
    ck_assert_int_eq(sql_int("SELECT count(*) FROM params"), 5);

    /* a foreign SQLite file is refused too, and keeps its journal mode */
    char other[600];
    sqlite3 *db;
    snprintf(other, sizeof other, "%s/other.db", tmpdir);
    ck_assert_int_eq(sqlite3_open(other, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE t (x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    ck_assert_int_eq(tunep_store_create(other, &exp1, &space5, &st2, &err), TUNE_ESTORE);
    ck_assert_str_eq(err.text, "other.db already holds another database");
    ck_assert_int_eq(tunep_store_open(other, 1, &st2, &err), TUNE_ENOTFOUND);
    ck_assert_int_eq(sqlite3_open(other, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE experiment (x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    ck_assert_int_eq(tunep_store_open(other, 1, &st2, &err), TUNE_ESTORE);
    ck_assert_str_eq(err.text, "store: not an experiment database of tune");
    ck_assert_ptr_eq(st2, (struct tunep_store *)&err);
}
END_TEST

/* A folder that cannot be read or written says why, not "no experiment here". */
START_TEST(test_open_unreachable_folder)
{
    tune_error err;
    struct tunep_store *st = NULL;
    char path[600];
    /* A path through a regular file (any user). */
    snprintf(path, sizeof path, "%s/plain", tmpdir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_int_eq(tunep_store_open_experiment(path, 1, &st, NULL, &err), TUNE_EIO);
    ck_assert_str_eq(err.text, "cannot open: Not a directory");
    ck_assert_ptr_null(st);
    /* Permissions bind only a user other than root: as root (CI), the rest
     * runs in a child that has become nobody, in a folder anyone may enter. */
    char *open_dir = tune_test_mkdtemp();
    ck_assert_ptr_nonnull(open_dir);
    ck_assert_int_eq(chmod(open_dir, 0777), 0);
    int as_root = geteuid() == 0;
    pid_t pid = as_root ? fork() : 0;
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (as_root && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(3);
        int bad = 0;
        snprintf(path, sizeof path, "%s/locked", open_dir);
        bad |= mkdir(path, 0555) != 0;
        char db[700];
        snprintf(db, sizeof db, "%s/experiment.db", path);
        bad |= tunep_store_create(db, &exp1, &space5, &st, &err) != TUNE_EIO ||
               strcmp(err.text, "cannot create: Permission denied") != 0;
        bad |= chmod(path, 0) != 0;
        bad |= tunep_store_open_experiment(path, 1, &st, NULL, &err) != TUNE_EIO ||
               strcmp(err.text, "cannot open: Permission denied") != 0;
        bad |= chmod(path, 0755) != 0;
        if (as_root)
            _exit(bad ? 1 : 0);
        ck_assert_int_eq(bad, 0);
    } else {
        int status = 0;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "as nobody: permission errors not as expected (status %d)", status);
    }
    tune_test_rmtree(open_dir);
    free(open_dir);
}
END_TEST

/* The one open-the-experiment sequence: a folder without an experiment, with an
 * empty experiment.db (a run killed while creating it), and with one. */
START_TEST(test_open_experiment)
{
    tune_error err;
    struct tunep_store *st = NULL;
    struct tunep_store_experiment_row row = {0};
    ck_assert_int_eq(tunep_store_open_experiment(tmpdir, 1, &st, &row, &err), TUNE_ENOTFOUND);
    ck_assert_ptr_null(st);
    ck_assert_ptr_null(row.name);
    ck_assert_str_eq(err.source, tmpdir);
    ck_assert_str_eq(err.text, "no experiment here (experiment.db is missing)");
    ck_assert_int_eq(tunep_store_open_experiment(tmpdir, 0, &st, &row, &err), TUNE_ENOTFOUND);
    ck_assert_int_eq(access(db_path, F_OK), -1); /* opening created nothing */

    FILE *f = fopen(db_path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_int_eq(tunep_store_open_experiment(tmpdir, 0, &st, &row, &err), TUNE_ENOTFOUND);
    ck_assert_ptr_null(st);
    ck_assert_str_eq(err.source, db_path);

    tunep_store_close(create5());
    OK(tunep_store_open_experiment(tmpdir, 1, &st, &row, E));
    ck_assert_ptr_nonnull(st);
    ck_assert_str_eq(row.name, exp1.name);
    ck_assert_str_eq(row.config_json, exp1.config_json);
    ck_assert_str_eq(row.mode, exp1.mode);
    tunep_store_experiment_done(&row);
    tunep_store_close(st);
    st = NULL;
    OK(tunep_store_open_experiment(tmpdir, 0, &st, NULL, E)); /* the row is optional */
    ck_assert_int_eq(count_trials(st), 0);
    tunep_store_close(st);

    char *file = tunep_store_file(tmpdir);
    ck_assert_str_eq(file, db_path);
    tunep_free(file);
}
END_TEST

/* Where the experiment started: recorded at creation; a store from before the table opens. */
START_TEST(test_origin)
{
    struct tunep_store_experiment exp = exp1;
    exp.cwd = "/home/me/proj";
    exp.command_line = "tune run 'my sweep.json' --storage out";
    struct tunep_store *st = NULL;
    OK(tunep_store_create(db_path, &exp, &space5, &st, E));
    tunep_store_close(st);
    st = NULL;
    char *cwd = NULL, *cmd = NULL;
    OK(tunep_store_open_experiment(tmpdir, 1, &st, NULL, E));
    OK(tunep_store_read_origin(st, &cwd, &cmd, E));
    ck_assert_str_eq(cwd, exp.cwd);
    ck_assert_str_eq(cmd, exp.command_line);
    tunep_free(cwd);
    tunep_free(cmd);
    tunep_store_close(st);
    st = NULL;

    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "DROP TABLE origin", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    struct tunep_store_experiment_row row = {0};
    OK(tunep_store_open_experiment(tmpdir, 0, &st, &row, E));
    ck_assert_str_eq(row.name, exp1.name);
    tunep_store_experiment_done(&row);
    cwd = cmd = (char *)"unset";
    OK(tunep_store_read_origin(st, &cwd, &cmd, E));
    ck_assert_ptr_null(cwd);
    ck_assert_ptr_null(cmd);
    tunep_store_close(st);
}
END_TEST

/* Right after creation the database file alone holds the experiment: a lost -wal cannot lose it. */
START_TEST(test_created_without_wal)
{
    struct tunep_store *st = create5(); /* kept open: nothing is checkpointed at close yet */
    char copy_dir[600], copy[700];
    snprintf(copy_dir, sizeof copy_dir, "%s/copy", tmpdir);
    ck_assert_int_eq(mkdir(copy_dir, 0777), 0);
    snprintf(copy, sizeof copy, "%s/experiment.db", copy_dir);
    FILE *in = fopen(db_path, "rb"), *out = fopen(copy, "wb");
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(out);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
    struct tunep_store *st2 = NULL;
    struct tunep_store_experiment_row row = {0};
    OK(tunep_store_open_experiment(copy_dir, 1, &st2, &row, E));
    ck_assert_str_eq(row.name, exp1.name);
    tunep_store_experiment_done(&row);
    tunep_store_close(st2);
    tunep_store_close(st);
}
END_TEST

/* One holder at a time, also within one process (open-file-description locks). */
START_TEST(test_lock)
{
    struct tunep_store_lock *a = NULL, *b = NULL;
    tune_error err;
    OK(tunep_store_lock_take(tmpdir, &a, E));
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(tunep_store_lock_take(tmpdir, &b, &err), TUNE_EBUSY);
    ck_assert_ptr_null(b);
    char want[64];
    snprintf(want, sizeof want, "(pid %ld on host ", (long)getpid());
    ck_assert_msg(strstr(err.text, want), "%s", err.text);
    ck_assert_str_eq(err.source, tmpdir);
    tunep_store_lock_release(a);
    OK(tunep_store_lock_take(tmpdir, &b, E));
    tunep_store_lock_release(b);
}
END_TEST

START_TEST(test_open_missing)
{
    tune_error err;
    struct tunep_store *st = NULL;
    ck_assert_int_eq(tunep_store_open(db_path, 1, &st, &err), TUNE_ENOTFOUND);
    ck_assert_ptr_null(st);
    ck_assert_str_eq(err.source, db_path);
    ck_assert_int_eq(tunep_store_open(db_path, 0, &st, &err), TUNE_ENOTFOUND);
    ck_assert_int_eq(access(db_path, F_OK), -1); /* opening created nothing */

    /* an empty file holds no experiment either */
    FILE *f = fopen(db_path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_int_eq(tunep_store_open(db_path, 1, &st, &err), TUNE_ENOTFOUND);
    /* ... and may be created into */
    st = create5();
    tunep_store_close(st);

    /* a file that is not a database */
    char junk[600];
    snprintf(junk, sizeof junk, "%s/junk.db", tmpdir);
    f = fopen(junk, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 200; i++)
        fputs("this is not an SQLite database. ", f);
    fclose(f);
    ck_assert_int_eq(tunep_store_open(junk, 1, &st, &err), TUNE_ESTORE);
    ck_assert_msg(strstr(err.text, "store: ") == err.text, "%s", err.text);
    ck_assert_msg(strstr(err.text, "not a database") != NULL, "%s", err.text);
}
END_TEST

START_TEST(test_errors)
{
    tune_error err;
    struct tunep_store *st = create5(), *ro = NULL;
    struct tunep_value v[5];
    set5(v, 0.01, 8, "sgd", 0, mix_values[0]);
    const char *n[] = {"loss"};
    double x[] = {1.0};
    OK(tunep_store_trial_start(st, 7, 1, &space5, v, 0.0, E));
    OK(tunep_store_report(st, 7, 1, 1, 0.1, 0.0, 1, n, x, E));
    /* the same iteration twice: refused, and the pending transaction survives */
    ck_assert_int_eq(tunep_store_report(st, 7, 1, 1, 0.1, 0.0, 1, n, x, &err), TUNE_ESTORE);
    ck_assert_msg(strncmp(err.text, "store: insert report for trial 7: ", 34) == 0, "%s", err.text);
    ck_assert_msg(strstr(err.text, "UNIQUE constraint failed") != NULL, "%s", err.text);
    ck_assert_str_eq(err.source, db_path);
    ck_assert_int_eq(
        tunep_store_trial_end(st, 8, 1, TUNE_TRIAL_TERMINATED, 1, 1.0, 1.0, NULL, &err),
        TUNE_ENOTFOUND);
    ck_assert_int_eq(
        tunep_store_trial_end(st, 7, 2, TUNE_TRIAL_TERMINATED, 1, 1.0, 1.0, NULL, &err),
        TUNE_ENOTFOUND);
    ck_assert_int_eq(
        tunep_store_trial_end(st, 7, 1, TUNE_TRIAL_STATUS_COUNT, 1, 1.0, 1.0, NULL, &err),
        TUNE_EINVAL);
    ck_assert_int_eq(tunep_store_trial_start(st, 9, 1, &space5, NULL, 0.0, &err), TUNE_EINVAL);
    tune_space small = {.n = 2, .cap = 2, .params = params5};
    ck_assert_int_eq(tunep_store_trial_start(st, 9, 1, &small, v, 0.0, &err), TUNE_EINVAL);
    ck_assert_int_eq(tunep_store_report(st, 7, 1, 2, 0.1, 0.0, 1, NULL, x, &err), TUNE_EINVAL);
    OK(tunep_store_commit(st, E));
    OK(tunep_store_commit(st, E)); /* nothing pending: cheap no-op */

    OK(tunep_store_open(db_path, 1, &ro, E));
    ck_assert_int_eq(count_trials(ro), 1);
    ck_assert_int_eq(tunep_store_trial_start(ro, 10, 1, &space5, v, 0.0, &err), TUNE_EINVAL);
    ck_assert_int_eq(tunep_store_report(ro, 7, 1, 2, 0.1, 0.0, 1, n, x, &err), TUNE_EINVAL);
    struct seen_reports *r = calloc(1, sizeof *r);
    OK(tunep_store_foreach_report(ro, collect_report, r, E));
    ck_assert_int_eq(r->n, 1);
    free(r);
    tunep_store_close(ro);
    tunep_store_close(st);
    tunep_store_close(NULL);
}
END_TEST

/* ---- transactions and crashes --------------------------------------------- */

START_TEST(test_visibility)
{
    struct tunep_store *w = create5(), *r = NULL;
    struct tunep_value v[5];
    const char *n[] = {"loss"};
    double x[] = {0.5};
    set5(v, 0.01, 8, "sgd", 0, mix_values[1]);
    OK(tunep_store_open(db_path, 1, &r, E));
    OK(tunep_store_trial_start(w, 0, 1, &space5, v, 0.0, E));
    OK(tunep_store_report(w, 0, 1, 1, 0.1, 0.0, 1, n, x, E));
    /* the writer sees its own pending writes; another connection does not */
    ck_assert_int_eq(count_trials(w), 1);
    ck_assert_int_eq(count_trials(r), 0);
    OK(tunep_store_commit(w, E));
    ck_assert_int_eq(count_trials(r), 1);
    /* the reader keeps reading while the writer holds a transaction */
    OK(tunep_store_trial_start(w, 1, 1, &space5, v, 0.0, E));
    ck_assert_int_eq(count_trials(r), 1);
    /* a read snapshot stays put across a commit */
    OK(tunep_store_read_begin(r, E));
    ck_assert_int_eq(count_trials(r), 1);
    OK(tunep_store_commit(w, E));
    ck_assert_int_eq(count_trials(r), 1);
    tunep_store_read_end(r);
    ck_assert_int_eq(count_trials(r), 2);
    tunep_store_close(r);
    tunep_store_close(w);
}
END_TEST

START_TEST(test_crash)
{
    enum { COMMITTED = 200 };
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /*
         * The child writes, commits after each answer as the controller does,
         * then dies without closing. It says how far it got through the pipe,
         * not its exit status, which Valgrind replaces when it reports the
         * connection that was never closed.
         */
        struct tunep_store *st = NULL;
        struct tunep_value v[5];
        const char *n[] = {"loss", "acc"};
        char stage = 'c';
        close(fds[0]);
        if (tunep_store_create(db_path, &exp1, &space5, &st, NULL))
            goto out;
        for (int i = 0; i <= COMMITTED; i++) {
            double x[] = {1.0 / (i + 1), (double)i};
            stage = 'w';
            set5(v, 1e-3 * i, i, "adam", i & 1, mix_values[i % 4]);
            if (tunep_store_trial_start(st, i, 1, &space5, v, i, NULL) ||
                tunep_store_report(st, i, 1, 1, 0.5, i, 2, n, x, NULL))
                goto out;
            stage = 'k'; /* the last trial and report are never committed */
            if (i == COMMITTED)
                goto out;
            stage = 'm';
            if (tunep_store_commit(st, NULL) ||
                tunep_store_trial_end(st, i, 1, TUNE_TRIAL_TERMINATED, 1, 0.5, i, NULL, NULL) ||
                tunep_store_commit(st, NULL))
                goto out;
        }
    out:
        if (write(fds[1], &stage, 1) != 1)
            _exit(9);
        _exit(0);
    }
    close(fds[1]);
    char stage = 0;
    int status = 0;
    ck_assert_int_eq(read(fds[0], &stage, 1), 1);
    close(fds[0]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_msg(stage == 'k', "the child stopped at stage '%c'", stage);

    struct tunep_store *st = NULL;
    OK(tunep_store_open(db_path, 1, &st, E));
    ck_assert_int_eq(count_trials(st), COMMITTED);
    struct seen_reports *r = calloc(1, sizeof *r);
    OK(tunep_store_foreach_report(st, collect_report, r, E));
    ck_assert_int_eq(r->n, COMMITTED);
    ck_assert(r->r[9].id == 9 && r->r[9].n == 2 && r->r[9].values[0] == 1.0 / 10);
    free(r);
    tunep_store_close(st);
    ck_assert_int_eq(sql_int("SELECT count(*) FROM trials"), COMMITTED);
    ck_assert_int_eq(sql_int("SELECT count(*) FROM reports"), COMMITTED);
    ck_assert_int_eq(sql_int("SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), COMMITTED);
    ck_assert_int_eq(sql_int("SELECT sum(json_extract(metrics, '$.acc')) FROM reports"),
                     COMMITTED * (COMMITTED - 1) / 2);
    char ok[64];
    sql_text("PRAGMA integrity_check", ok, sizeof ok);
    ck_assert_str_eq(ok, "ok");

    /* a writer can take over the file and go on */
    OK(tunep_store_open(db_path, 0, &st, E));
    struct tunep_value v[5];
    set5(v, 0.5, 1, "sgd", 0, mix_values[0]);
    OK(tunep_store_trial_start(st, COMMITTED, 1, &space5, v, 0.0, E));
    OK(tunep_store_commit(st, E));
    tunep_store_close(st);
    ck_assert_int_eq(sql_int("SELECT count(*) FROM trials"), COMMITTED + 1);
    sql_text("PRAGMA integrity_check", ok, sizeof ok);
    ck_assert_str_eq(ok, "ok");
}
END_TEST

/* ---- CSV ------------------------------------------------------------------ */

/* Compares tmpdir/name with expected, where each '@' stands for the absolute tmpdir (logdir). */
static void check_file(const char *name, const char *expected_at)
{
    char path[600];
    char *abs = realpath(tmpdir, NULL);
    ck_assert_ptr_nonnull(abs);
    size_t cap = strlen(expected_at) * (strlen(abs) + 1) + 1, n = 0;
    char *expected = malloc(cap);
    ck_assert_ptr_nonnull(expected);
    for (const char *p = expected_at; *p; p++)
        n += (size_t)snprintf(expected + n, cap - n, "%s", *p == '@' ? abs : (char[2]){*p, 0});
    free(abs);
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    char *text = tune_test_slurp(path);
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(strcmp(text, expected) == 0, "%s:\n--- got ---\n%s\n--- expected ---\n%s", name,
                  text, expected);
    free(text);
    free(expected);
    /* no temporary file (".<name>.tmp.<host>-<pid>.XXXXXX") is left */
    snprintf(path, sizeof path, ".%s.tmp.", name);
    DIR *d = opendir(tmpdir);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        ck_assert_msg(strncmp(e->d_name, path, strlen(path)) != 0, "left: %s", e->d_name);
    closedir(d);
}

static void export_both(struct tunep_store *st)
{
    char path[600];
    snprintf(path, sizeof path, "%s/results.csv", tmpdir);
    OK(tunep_export_results_csv(st, path, E));
    snprintf(path, sizeof path, "%s/progress.csv", tmpdir);
    OK(tunep_export_progress_csv(st, path, E));
}

START_TEST(test_csv_field)
{
    struct tunep_buf b;
    tunep_buf_init(&b);
    tunep_csv_field(&b, "plain");
    tunep_buf_puts(&b, "|");
    tunep_csv_field(&b, "a,b");
    tunep_buf_puts(&b, "|");
    tunep_csv_field(&b, "say \"hi\"");
    tunep_buf_puts(&b, "|");
    tunep_csv_field(&b, "l1\nl2\r");
    tunep_buf_puts(&b, "|");
    tunep_csv_field(&b, "\"");
    tunep_buf_puts(&b, "|");
    tunep_csv_field(&b, "");
    tunep_buf_puts(&b, "|");
    tunep_csv_field(&b, NULL);
    tunep_buf_puts(&b, "|");
    tunep_csv_field(&b, " spaced ");
    ck_assert_str_eq(b.data, "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"l1\nl2\r\"|\"\"\"\"||| spaced ");
    tunep_buf_done(&b);
}
END_TEST

START_TEST(test_csv_export)
{
    struct tunep_store *st = create5();
    struct tunep_value v[5];

    set5(v, 0.001, 32, "adam", 1, mix_values[0]);
    OK(tunep_store_trial_start(st, 0, 1, &space5, v, 0.0, E));
    const char *a1[] = {"loss"};
    double x1[] = {0.5};
    OK(tunep_store_report(st, 0, 1, 1, 0.5, 0.0, 1, a1, x1, E));
    const char *a2[] = {"loss", "acc"};
    double x2[] = {0.25, 0.75};
    OK(tunep_store_report(st, 0, 1, 2, 1.5, 0.0, 2, a2, x2, E));
    OK(tunep_store_trial_end(st, 0, 1, TUNE_TRIAL_TERMINATED, 2, 1.5, 0.0, NULL, E));

    set5(v, 0.1, 8, "a,b \"c\"\nd", 0, mix_values[1]);
    OK(tunep_store_trial_start(st, 1, 1, &space5, v, 0.0, E));
    const char *a3[] = {"acc", "x,y", "loss"};
    double x3[] = {(double)NAN, 3.0, (double)INFINITY};
    OK(tunep_store_report(st, 1, 1, 1, 0.25, 0.0, 3, a3, x3, E));
    OK(tunep_store_trial_end(st, 1, 1, TUNE_TRIAL_STOPPED, 1, 0.25, 0.0, NULL, E));

    set5(v, 1e-5, 64, "sgd", 1, mix_values[2]);
    OK(tunep_store_trial_start(st, 2, 1, &space5, v, 0.0, E));
    OK(tunep_store_trial_end(st, 2, 1, TUNE_TRIAL_ERROR, 0, 0.125, 0.0, "boom", E));

    set5(v, 2.5e-7, -3, "sgd", 0, mix_values[3]);
    OK(tunep_store_trial_start(st, 3, 1, &space5, v, 0.0, E));
    OK(tunep_store_trial_end(st, 3, 1, TUNE_TRIAL_TERMINATED, 0, (double)NAN, 0.0, NULL, E));

    /* exported from inside the pending write transaction, then again after commit */
    export_both(st);
    /* Reports written without times (tunep_store_report) leave those cells empty; the
     * wall time 0 is 1970-01-01 in UTC (the fixture's TZ). No pid, host or IP recorded. */
    static const char results[] =
        "trial_id,status,training_iteration,config/lr,config/batch,config/opt,config/flag,"
        "config/mix,loss,acc,\"x,y\",time_total_s,attempts,error,time_this_iter_s,"
        "time_since_restore,iterations_since_restore,timestamp,date,done,pid,hostname,node_ip,"
        "logdir\r\n"
        "0,TERMINATED,2,0.001,32,adam,True,16,0.25,0.75,,1.5,1,,,,,0,1970-01-01_00-00-00,True,,,,"
        "@/trials/trial_000000\r\n"
        "1,STOPPED,1,0.1,8,\"a,b \"\"c\"\"\nd\",False,auto,inf,,3,0.25,1,,,,,0,"
        "1970-01-01_00-00-00,True,,,,@/trials/trial_000001\r\n"
        "2,ERROR,0,1e-05,64,sgd,True,True,,,,0.125,1,boom,,,,,,False,,,,@/trials/trial_000002\r\n"
        "3,TERMINATED,0,2.5e-07,-3,sgd,False,0.5,,,,,1,,,,,,,True,,,,@/trials/trial_000003\r\n";
    static const char progress[] =
        "trial_id,training_iteration,time_total_s,loss,acc,\"x,y\",attempt,time_this_iter_s,"
        "time_since_restore,iterations_since_restore,timestamp,date,done,status,config/lr,"
        "config/batch,config/opt,config/flag,config/mix\r\n"
        "0,1,0.5,0.5,,,1,,,,0,1970-01-01_00-00-00,False,TERMINATED,0.001,32,adam,True,16\r\n"
        "0,2,1.5,0.25,0.75,,1,,,,0,1970-01-01_00-00-00,True,TERMINATED,0.001,32,adam,True,16\r\n"
        "1,1,0.25,inf,,3,1,,,,0,1970-01-01_00-00-00,True,STOPPED,0.1,8,\"a,b \"\"c\"\"\nd\","
        "False,auto\r\n";
    check_file("results.csv", results);
    check_file("progress.csv", progress);
    tunep_store_close(st);

    OK(tunep_store_open(db_path, 1, &st, E));
    export_both(st);
    check_file("results.csv", results);
    check_file("progress.csv", progress);

    /* an unwritable destination fails cleanly */
    tune_error err;
    char bad[600];
    snprintf(bad, sizeof bad, "%s/no/such/dir/results.csv", tmpdir);
    ck_assert_int_eq(tunep_export_results_csv(st, bad, &err), TUNE_EIO);
    ck_assert_msg(strstr(err.text, "results.csv.tmp") != NULL, "%s", err.text);
    tunep_store_close(st);
}
END_TEST

/* The store's own files are never an output, whatever their name; nor is a folder. */
START_TEST(test_csv_refuses_store)
{
    struct tunep_store *st = create5();
    OK(tunep_store_commit(st, E));
    tunep_store_close(st);
    OK(tunep_store_open(db_path, 1, &st, E));
    char path[600], alias[600];
    tune_error err;
    static const char *const names[] = {"", "-wal", "-shm", "-journal"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s%s", db_path, names[i]);
        ck_assert_int_eq(tunep_export_results_csv(st, path, &err), TUNE_EINVAL);
        ck_assert_msg(strstr(err.text, "it is the experiment's store") != NULL, "%s", err.text);
        ck_assert_int_eq(tunep_export_progress_csv(st, path, &err), TUNE_EINVAL);
    }
    snprintf(alias, sizeof alias, "%s/alias.csv", tmpdir);
    ck_assert_int_eq(link(db_path, alias), 0);
    ck_assert_int_eq(tunep_export_results_csv(st, alias, &err), TUNE_EINVAL);
    ck_assert_int_eq(tunep_export_results_csv(st, tmpdir, &err), TUNE_EINVAL);
    ck_assert_msg(strstr(err.text, "it is a directory") != NULL, "%s", err.text);
    tunep_store_close(st);
    /* the store is still a database */
    ck_assert_int_eq(sql_int("SELECT count(*) FROM trials"), 0);
    char magic[16] = "";
    FILE *f = fopen(db_path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(magic, 1, 15, f), 15);
    fclose(f);
    ck_assert_str_eq(magic, "SQLite format 3");
}
END_TEST

START_TEST(test_csv_empty)
{
    struct tunep_store *st = create5();
    export_both(st);
    check_file("results.csv", "trial_id,status,training_iteration,config/lr,config/batch,"
                              "config/opt,config/flag,config/mix,time_total_s,attempts,error,"
                              "time_this_iter_s,time_since_restore,iterations_since_restore,"
                              "timestamp,date,done,pid,hostname,node_ip,logdir\r\n");
    check_file("progress.csv", "trial_id,training_iteration,time_total_s,attempt,time_this_iter_s,"
                               "time_since_restore,iterations_since_restore,timestamp,date,done,"
                               "status,config/lr,config/batch,config/opt,config/flag,"
                               "config/mix\r\n");
    tunep_store_close(st);
}
END_TEST

/* A failed attempt stays in the database and in progress.csv (attempt column); results.csv
 * shows the last one. */
START_TEST(test_retry)
{
    struct tunep_store *st = create5();
    struct tunep_value v[5];
    const char *n[] = {"loss"};
    double x;

    set5(v, 0.5, 16, "adam", 0, mix_values[0]);
    OK(tunep_store_trial_start(st, 0, 1, &space5, v, 10.0, E));
    x = 1.0;
    OK(tunep_store_report(st, 0, 1, 1, 0.5, 11.0, 1, n, &x, E));
    x = 2.0;
    OK(tunep_store_report(st, 0, 1, 2, 1.0, 12.0, 1, n, &x, E));
    OK(tunep_store_trial_end(st, 0, 1, TUNE_TRIAL_PENDING, 2, 1.0, 13.0, "diverged", E));
    OK(tunep_store_commit(st, E));

    /* attempt 2, without values (a retry keeps the trial's configuration) */
    OK(tunep_store_trial_start(st, 0, 2, &space5, NULL, 20.0, E));
    struct seen *s = calloc(1, sizeof *s);
    OK(tunep_store_foreach_trial(st, collect_trial, s, E));
    ck_assert(s->n == 1 && s->t[0].attempt == 2 && s->t[0].status == TUNE_TRIAL_RUNNING);
    ck_assert(s->t[0].n_metrics == 0 && s->t[0].iteration == 0 && !s->t[0].has_error);
    ck_assert(s->t[0].start_time == 20.0 && s->t[0].params[0].u.d == 0.5);
    x = 3.0;
    OK(tunep_store_report(st, 0, 2, 1, 0.25, 21.0, 1, n, &x, E));
    OK(tunep_store_trial_end(st, 0, 2, TUNE_TRIAL_TERMINATED, 1, 0.25, 22.0, NULL, E));
    OK(tunep_store_commit(st, E));

    struct seen_reports *r = calloc(1, sizeof *r);
    OK(tunep_store_foreach_report(st, collect_report, r, E));
    ck_assert_int_eq(r->n, 3);
    ck_assert(r->r[0].attempt == 1 && r->r[0].iteration == 1 && r->r[0].values[0] == 1.0);
    ck_assert(r->r[1].attempt == 1 && r->r[1].iteration == 2 && r->r[1].values[0] == 2.0);
    ck_assert(r->r[2].attempt == 2 && r->r[2].iteration == 1 && r->r[2].values[0] == 3.0);
    memset(r, 0, sizeof *r);
    OK(tunep_store_foreach_last_attempt_report(st, collect_report, r, E));
    ck_assert_int_eq(r->n, 1);
    ck_assert(r->r[0].attempt == 2 && r->r[0].values[0] == 3.0);
    memset(s, 0, sizeof *s);
    OK(tunep_store_foreach_trial(st, collect_trial, s, E));
    ck_assert(s->t[0].attempt == 2 && s->t[0].n_metrics == 1 && s->t[0].values[0] == 3.0);

    export_both(st);
    check_file("results.csv",
               "trial_id,status,training_iteration,config/lr,config/batch,config/opt,config/flag,"
               "config/mix,loss,time_total_s,attempts,error,time_this_iter_s,time_since_restore,"
               "iterations_since_restore,timestamp,date,done,pid,hostname,node_ip,logdir\r\n"
               "0,TERMINATED,1,0.5,16,adam,False,16,3,0.25,2,,,,,21,1970-01-01_00-00-21,True,,,,"
               "@/trials/trial_000000\r\n");
    check_file("progress.csv",
               "trial_id,training_iteration,time_total_s,loss,attempt,time_this_iter_s,"
               "time_since_restore,iterations_since_restore,timestamp,date,done,status,config/lr,"
               "config/batch,config/opt,config/flag,config/mix\r\n"
               "0,1,0.5,1,1,,,,11,1970-01-01_00-00-11,False,TERMINATED,0.5,16,adam,False,16\r\n"
               "0,2,1,2,1,,,,12,1970-01-01_00-00-12,False,TERMINATED,0.5,16,adam,False,16\r\n"
               "0,1,0.25,3,2,,,,21,1970-01-01_00-00-21,True,TERMINATED,0.5,16,adam,False,16\r\n");

    /* an interrupted attempt rerun under the same number loses its stale reports */
    OK(tunep_store_trial_end(st, 0, 2, TUNE_TRIAL_PENDING, 1, 0.25, 23.0, NULL, E));
    OK(tunep_store_trial_start(st, 0, 2, &space5, v, 30.0, E));
    memset(r, 0, sizeof *r);
    OK(tunep_store_foreach_report(st, collect_report, r, E));
    ck_assert_int_eq(r->n, 2);
    x = 4.0;
    OK(tunep_store_report(st, 0, 2, 1, 0.5, 31.0, 1, n, &x, E));
    tunep_store_close(st);
    free(r);
    free(s);
    ck_assert_int_eq(sql_int("SELECT count(*) FROM reports"), 3);
}
END_TEST

/* ---- report times, where a trial ran, and files from before them ----------- */

struct seen_rows {
    int n;
    struct tunep_stored_report r[8];
    double first_value[8];
};

static tune_status collect_row(void *ud, const struct tunep_stored_report *r)
{
    struct seen_rows *s = ud;
    ck_assert_int_lt(s->n, 8);
    s->r[s->n] = *r;
    s->first_value[s->n] = r->n_metrics ? r->metric_values[0] : (double)NAN;
    s->r[s->n].metric_names = NULL; /* borrowed: not valid after the callback */
    s->r[s->n].metric_values = NULL;
    s->n++;
    return TUNE_OK;
}

static tune_status keep_trial(void *ud, const struct tunep_stored_trial *t)
{
    struct tunep_stored_trial *o = ud;
    *o = *t;
    /* Strings are borrowed: keep what the test looks at. */
    static char host[64], ip[64];
    snprintf(host, sizeof host, "%s", t->hostname ? t->hostname : "(null)");
    snprintf(ip, sizeof ip, "%s", t->node_ip ? t->node_ip : "(null)");
    o->hostname = host;
    o->node_ip = ip;
    return TUNE_OK;
}

/* Every report keeps its times across attempts; the trial row has where its attempt ran. */
START_TEST(test_report_times)
{
    struct tunep_store *st = create5();
    struct tunep_value v[5];
    const char *n[] = {"loss"};
    double x = 1.0;
    set5(v, 0.5, 16, "adam", 0, mix_values[0]);
    OK(tunep_store_trial_start(st, 0, 1, &space5, v, 100.0, E));
    OK(tunep_store_trial_host(st, 0, 1, 4242, "node-a", "10.0.0.7", "cuda:1", E));
    struct tunep_report_times rt = {1, 2.5, 2.5, 2.5, 1, 102.5};
    OK(tunep_store_report_row(st, 0, 1, &rt, 1, n, &x, E));
    x = 0.5;
    rt = (struct tunep_report_times){2, 4.0, 1.5, 4.0, 2, 104.0};
    OK(tunep_store_report_row(st, 0, 1, &rt, 1, n, &x, E));
    OK(tunep_store_trial_end(st, 0, 1, TUNE_TRIAL_PENDING, 2, 4.25, 104.25, NULL, E));
    /* attempt 2 restored the checkpoint of iteration 2: its time goes on from 4.0 */
    OK(tunep_store_trial_start(st, 0, 2, &space5, NULL, 200.0, E));
    OK(tunep_store_trial_host(st, 0, 2, 4343, "node-b", NULL, NULL, E));
    x = 0.25;
    rt = (struct tunep_report_times){3, 5.0, 1.0, 1.0, 1, 201.0};
    OK(tunep_store_report_row(st, 0, 2, &rt, 1, n, &x, E));
    OK(tunep_store_trial_end(st, 0, 2, TUNE_TRIAL_TERMINATED, 3, 5.125, 201.125, NULL, E));
    OK(tunep_store_commit(st, E));

    struct seen_rows *r = calloc(1, sizeof *r);
    OK(tunep_store_foreach_report_row(st, collect_row, r, E));
    ck_assert_int_eq(r->n, 3);
    ck_assert(r->r[0].attempt == 1 && r->r[0].iteration == 1 && r->r[0].time_total_s == 2.5);
    ck_assert(r->r[1].attempt == 1 && r->r[1].time_this_iter_s == 1.5 &&
              r->r[1].time_since_restore == 4.0 && r->r[1].iterations_since_restore == 2);
    ck_assert(r->r[2].attempt == 2 && r->r[2].iteration == 3 && r->r[2].time_total_s == 5.0 &&
              r->r[2].time_since_restore == 1.0 && r->r[2].iterations_since_restore == 1 &&
              r->r[2].wall_time == 201.0 && r->first_value[2] == 0.25);
    struct tunep_stored_trial t;
    OK(tunep_store_foreach_trial(st, keep_trial, &t, E));
    ck_assert(t.attempt == 2 && t.pid == 4343 && t.report_time_total_s == 5.0 &&
              t.time_total_s == 5.125 && t.iterations_since_restore == 1);
    ck_assert_str_eq(t.hostname, "node-b");
    ck_assert_str_eq(t.node_ip, "(null)");

    export_both(st);
    check_file("results.csv",
               "trial_id,status,training_iteration,config/lr,config/batch,config/opt,config/flag,"
               "config/mix,loss,time_total_s,attempts,error,time_this_iter_s,time_since_restore,"
               "iterations_since_restore,timestamp,date,done,pid,hostname,node_ip,logdir\r\n"
               "0,TERMINATED,3,0.5,16,adam,False,16,0.25,5,2,,1,1,1,201,1970-01-01_00-03-21,True,"
               "4343,node-b,,@/trials/trial_000000\r\n");
    check_file(
        "progress.csv",
        "trial_id,training_iteration,time_total_s,loss,attempt,time_this_iter_s,"
        "time_since_restore,iterations_since_restore,timestamp,date,done,status,config/lr,"
        "config/batch,config/opt,config/flag,config/mix\r\n"
        "0,1,2.5,1,1,2.5,2.5,1,102,1970-01-01_00-01-42,False,TERMINATED,0.5,16,adam,False,16\r\n"
        "0,2,4,0.5,1,1.5,4,2,104,1970-01-01_00-01-44,False,TERMINATED,0.5,16,adam,False,16\r\n"
        "0,3,5,0.25,2,1,1,1,201,1970-01-01_00-03-21,True,TERMINATED,0.5,16,adam,False,16\r\n");
    tunep_store_close(st);
    free(r);
}
END_TEST

static void sql_exec_rw(const char *sql)
{
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(db));
    sqlite3_close(db);
}

/* A file from before the times and host columns: read as unknown, upgraded by a writer. */
START_TEST(test_older_file)
{
    struct tunep_store *st = create5();
    struct tunep_value v[5];
    const char *n[] = {"loss"};
    double x = 1.0;
    set5(v, 0.5, 16, "adam", 0, mix_values[0]);
    OK(tunep_store_trial_start(st, 0, 1, &space5, v, 0.0, E));
    OK(tunep_store_report(st, 0, 1, 1, 0.5, 3.0, 1, n, &x, E));
    tunep_store_close(st);
    sql_exec_rw("ALTER TABLE reports DROP COLUMN time_this_iter_s;"
                "ALTER TABLE reports DROP COLUMN time_since_restore;"
                "ALTER TABLE reports DROP COLUMN iterations_since_restore;"
                "ALTER TABLE trials DROP COLUMN pid; ALTER TABLE trials DROP COLUMN hostname;"
                "ALTER TABLE trials DROP COLUMN node_ip;");

    OK(tunep_store_open(db_path, 1, &st, E));
    struct seen_rows *r = calloc(1, sizeof *r);
    OK(tunep_store_foreach_report_row(st, collect_row, r, E));
    ck_assert(r->n == 1 && r->r[0].time_total_s == 0.5 && isnan(r->r[0].time_this_iter_s) &&
              r->r[0].iterations_since_restore == -1 && r->r[0].wall_time == 3.0);
    struct tunep_stored_trial t;
    OK(tunep_store_foreach_trial(st, keep_trial, &t, E));
    ck_assert(t.pid == 0 && isnan(t.time_since_restore) && t.n_metrics == 1);
    ck_assert_str_eq(t.hostname, "(null)");
    tunep_store_close(st);
    ck_assert_int_eq(sql_int("SELECT count(*) FROM pragma_table_info('trials') WHERE name = 'pid'"),
                     0);

    /* a writer adds the columns and records into them */
    OK(tunep_store_open(db_path, 0, &st, E));
    OK(tunep_store_trial_host(st, 0, 1, 77, "h", "127.0.0.1", "cpu", E));
    struct tunep_report_times rt = {2, 1.0, 0.5, 1.0, 2, 4.0};
    x = 0.5;
    OK(tunep_store_report_row(st, 0, 1, &rt, 1, n, &x, E));
    tunep_store_close(st);
    ck_assert_int_eq(sql_int("SELECT pid FROM trials"), 77);
    ck_assert_int_eq(sql_int("SELECT count(*) FROM reports WHERE time_this_iter_s IS NULL"), 1);
    ck_assert_int_eq(sql_int("SELECT iterations_since_restore FROM reports WHERE"
                             " training_iteration = 2"),
                     2);
    free(r);
}
END_TEST

/* ---- memory store, locale, allocation failures ---------------------------- */

START_TEST(test_memory)
{
    struct tunep_store *st = NULL;
    struct tunep_value v[5];
    const char *n[] = {"m"};
    double x = 0.125;
    OK(tunep_store_create(":memory:", &exp1, &space5, &st, E));
    set5(v, 0.5, 16, "adam", 0, mix_values[0]);
    OK(tunep_store_trial_start(st, 0, 1, &space5, v, 0.0, E));
    OK(tunep_store_report(st, 0, 1, 1, 0.5, 0.0, 1, n, &x, E));
    OK(tunep_store_commit(st, E));
    struct seen *s = calloc(1, sizeof *s);
    OK(tunep_store_foreach_trial(st, collect_trial, s, E));
    ck_assert(s->n == 1 && s->t[0].n_metrics == 1 && s->t[0].values[0] == 0.125);
    free(s);
    tunep_store_close(st);
}
END_TEST

/* A host program with ',' decimals must not change what is stored or read back. */
START_TEST(test_locale)
{
    static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8",  "fr_FR.UTF-8", "fr_FR.utf8",
                                        "ru_RU.UTF-8", "nl_NL.UTF-8", "it_IT.UTF-8"};
    locale_t comma = (locale_t)0;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !comma; i++)
        comma = newlocale(LC_NUMERIC_MASK, names[i], (locale_t)0);
    if (!comma) {
        fprintf(stderr, "test_locale: no locale with ',' decimals installed; checked in C only\n");
        comma = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    }
    ck_assert(comma != (locale_t)0);
    locale_t old = uselocale(comma);

    struct tunep_store *st = create5();
    struct tunep_value v[5];
    const char *n[] = {"loss"};
    double x = 0.5;
    set5(v, 0.25, 16, "adam", 0, mix_values[3]);
    OK(tunep_store_trial_start(st, 0, 1, &space5, v, 0.0, E));
    struct tunep_report_times rt = {1, 1.5, 1.25, 0.75, 1, 0.0};
    OK(tunep_store_report_row(st, 0, 1, &rt, 1, n, &x, E));
    OK(tunep_store_trial_end(st, 0, 1, TUNE_TRIAL_TERMINATED, 1, 1.5, 0.0, NULL, E));
    OK(tunep_store_commit(st, E));
    struct seen *s = calloc(1, sizeof *s);
    OK(tunep_store_foreach_trial(st, collect_trial, s, E));
    ck_assert_msg(s->t[0].values[0] == 0.5, "read back %g", s->t[0].values[0]);
    free(s);
    export_both(st);
    check_file("progress.csv",
               "trial_id,training_iteration,time_total_s,loss,attempt,time_this_iter_s,"
               "time_since_restore,iterations_since_restore,timestamp,date,done,status,config/lr,"
               "config/batch,config/opt,config/flag,config/mix\r\n"
               "0,1,1.5,0.5,1,1.25,0.75,1,0,1970-01-01_00-00-00,True,TERMINATED,0.25,16,adam,"
               "False,0.5\r\n");
    tunep_store_close(st);
    uselocale(old);
    freelocale(comma);
}
END_TEST

/* Creates, writes and exports with the allocator failing at every position in turn. */
START_TEST(test_alloc_failures)
{
    int completed = 0;
    long runs = 0; /* more than one: the injected failures were really hit */
    for (long fail_at = 0; fail_at < 10000 && !completed; fail_at++, runs++) {
        char path[600];
        tune_error err;
        struct tunep_store *st = NULL;
        struct tunep_value v[5];
        const char *n[] = {"loss", "a much longer metric name to make the buffer grow"};
        double x[] = {0.5, 1.5};
        tune_status rs;
        snprintf(path, sizeof path, "%s/chaos%ld.db", tmpdir, fail_at);
        tune_test_alloc_fail_from(fail_at);
        set5(v, 0.5, 16, "adam", 0, mix_values[1]);
        rs = tunep_store_create(path, &exp1, &space5, &st, &err);
        if (!rs)
            rs = tunep_store_trial_start(st, 0, 1, &space5, v, 0.0, &err);
        if (!rs)
            rs = tunep_store_report(st, 0, 1, 1, 0.5, 0.0, 2, n, x, &err);
        if (!rs)
            rs = tunep_store_commit(st, &err);
        if (!rs) {
            struct seen *s = calloc(1, sizeof *s);
            rs = tunep_store_foreach_trial(st, collect_trial, s, &err);
            free(s);
        }
        if (!rs) {
            snprintf(path, sizeof path, "%s/chaos.csv", tmpdir);
            rs = tunep_export_results_csv(st, path, &err);
        }
        if (!rs) {
            snprintf(path, sizeof path, "%s/chaos-progress.csv", tmpdir);
            rs = tunep_export_progress_csv(st, path, &err);
        }
        tunep_store_close(st);
        tune_test_alloc_reset();
        if (rs == TUNE_OK)
            completed = !tune_test_alloc_failed(); /* the failing allocation never came */
        else
            ck_assert_msg(rs == TUNE_ENOMEM, "fail_at %ld: %d %s", fail_at, (int)rs, err.text);
    }
    ck_assert(completed);
    ck_assert_int_gt(runs, 1);
}
END_TEST

static Suite *store_suite(void)
{
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("store");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_column_names);
    tcase_add_test(tc, test_create_twice);
    tcase_add_test(tc, test_open_missing);
    tcase_add_test(tc, test_open_experiment);
    tcase_add_test(tc, test_open_unreachable_folder);
    tcase_add_test(tc, test_origin);
    tcase_add_test(tc, test_lock);
    tcase_add_test(tc, test_created_without_wal);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_visibility);
    tcase_add_test(tc, test_crash);
    tcase_add_test(tc, test_csv_field);
    tcase_add_test(tc, test_csv_export);
    tcase_add_test(tc, test_csv_empty);
    tcase_add_test(tc, test_csv_refuses_store);
    tcase_add_test(tc, test_retry);
    tcase_add_test(tc, test_report_times);
    tcase_add_test(tc, test_older_file);
    tcase_add_test(tc, test_memory);
    tcase_add_test(tc, test_locale);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(store_suite)
