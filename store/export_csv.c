/*
 * export_csv.c - results.csv and progress.csv from an experiment's store.
 *
 * Format (docs/experiment-folder.md): RFC 4180, comma-separated, "\r\n" after
 * every record, a header row first. A field is quoted when it holds ',', '"',
 * CR or LF, with quotes doubled. Numbers come from tunep_format_double()
 * ('.' decimals whatever the locale, shortest text that reads back exactly,
 * integral values without a fraction, "inf"/"-inf"); NaN and missing values
 * are empty cells; booleans are True/False, as pandas and Ray write them.
 *
 * Metric columns are the union of the metric names over the rows written, in
 * order of first appearance, so the file needs two passes over the store: the
 * first collects the names, the second writes. Both run inside one read
 * snapshot (tunep_store_read_begin), so a run writing meanwhile cannot make
 * them disagree. Rows are streamed, never held in memory all at once.
 *
 * The file is written through the atomic writer (base/file_io.h): a crash
 * leaves either the old file or the complete new one. Only regular files are
 * written ("-" is standard output): never the store's own files, a folder, a
 * device, a FIFO or a socket (tunep_store_output_open).
 */
#include "store/store.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/file_io.h"
#include "base/text.h"
#include "store/trial_dir.h"

void tunep_csv_field(struct tunep_buf *b, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\r\n")) {
        tunep_buf_puts(b, s);
        return;
    }
    tunep_buf_append(b, "\"", 1);
    for (const char *q; (q = strchr(s, '"')) != NULL; s = q + 1) {
        tunep_buf_append(b, s, (size_t)(q - s + 1));
        tunep_buf_append(b, "\"", 1);
    }
    tunep_buf_puts(b, s);
    tunep_buf_append(b, "\"", 1);
}

static void put_double(struct tunep_buf *b, double v)
{
    char num[40];
    if (isnan(v))
        return;
    tunep_format_double(num, sizeof num, v);
    tunep_buf_puts(b, num);
}

static void put_int(struct tunep_buf *b, int64_t v)
{
    char num[24];
    snprintf(num, sizeof num, "%" PRId64, v);
    tunep_buf_puts(b, num);
}

static void put_value(struct tunep_buf *b, const struct tunep_value *v)
{
    switch (v->type) {
        case TUNEP_V_DOUBLE: put_double(b, v->u.d); break;
        case TUNEP_V_INT: put_int(b, v->u.i); break;
        case TUNEP_V_STRING: tunep_csv_field(b, v->u.s); break;
        case TUNEP_V_BOOL: tunep_buf_puts(b, v->u.b ? "True" : "False"); break;
        case TUNEP_V_ABSENT: break; /* an empty cell */
    }
}

/* ---- the metric columns: names in order of first appearance ---------------- */

/*
 * An insertion-ordered set of names with an open-addressing index, so a row
 * finds its columns in O(1) each even with thousands of metric names.
 */
struct columns {
    char **names; /* owned */
    size_t n, cap;
    size_t *slots; /* index + 1 into names; 0 is empty; size is a power of two */
    size_t n_slots;
};

static uint64_t name_hash(const char *s)
{
    uint64_t h = 14695981039346656037u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static void columns_done(struct columns *c)
{
    for (size_t i = 0; i < c->n; i++)
        tunep_free(c->names[i]);
    tunep_free(c->names);
    tunep_free(c->slots);
    memset(c, 0, sizeof *c);
}

/* The column of name, or -1. */
static long columns_find(const struct columns *c, const char *name)
{
    if (c->n_slots == 0)
        return -1;
    size_t mask = c->n_slots - 1;
    for (size_t i = (size_t)name_hash(name) & mask; c->slots[i]; i = (i + 1) & mask)
        if (strcmp(c->names[c->slots[i] - 1], name) == 0)
            return (long)(c->slots[i] - 1);
    return -1;
}

static void columns_index(struct columns *c, size_t k)
{
    size_t mask = c->n_slots - 1;
    size_t i = (size_t)name_hash(c->names[k]) & mask;
    while (c->slots[i])
        i = (i + 1) & mask;
    c->slots[i] = k + 1;
}

/* Adds name when it is new; 0 on OOM. */
static int columns_add(struct columns *c, const char *name)
{
    if (columns_find(c, name) >= 0)
        return 1;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        char **p = tunep_realloc(c->names, c->cap * sizeof *p, cap * sizeof *p);
        if (!p)
            return 0;
        c->names = p;
        c->cap = cap;
    }
    if (2 * (c->n + 1) > c->n_slots) { /* load factor stays <= 1/2 */
        size_t n_slots = c->n_slots ? c->n_slots * 2 : 32;
        size_t *slots = tunep_calloc(n_slots, sizeof *slots);
        if (!slots)
            return 0;
        tunep_free(c->slots);
        c->slots = slots;
        c->n_slots = n_slots;
        for (size_t k = 0; k < c->n; k++)
            columns_index(c, k);
    }
    c->names[c->n] = tunep_strdup(name);
    if (!c->names[c->n])
        return 0;
    columns_index(c, c->n);
    c->n++;
    return 1;
}

/* ---- the output file ------------------------------------------------------ */

tune_status tunep_store_output_open(const struct tunep_store *st, struct tunep_atomic_file *f,
                                    const char *path, tune_error *err)
{
    const char *db = st ? tunep_store_path(st) : NULL;
    char *keep[4] = {NULL, NULL, NULL, NULL};
    size_t n_keep = 0;
    tune_status rs = TUNE_OK;
    if (db && *db && strcmp(db, ":memory:") != 0) {
        static const char *const suffix[4] = {"", "-wal", "-shm", "-journal"};
        for (; n_keep < 4; n_keep++)
            if (!(keep[n_keep] = tunep_asprintf("%s%s", db, suffix[n_keep]))) {
                f->path = f->tmp = NULL;
                f->fd = -1;
                rs = tunep_error_set_at(err, TUNE_ENOMEM, path, 0, 0, "out of memory");
                break;
            }
    }
    if (!rs)
        rs = tunep_atomic_open_output(f, path, (const char *const *)keep, n_keep,
                                      "the experiment's store", err);
    for (size_t i = 0; i < 4; i++)
        tunep_free(keep[i]);
    return rs;
}

struct csv_out {
    const char *path;
    struct tunep_atomic_file file;
    struct tunep_buf row; /* the records built and not written yet */
    struct columns cols;
    double *cells; /* one per metric column, for the current row */
    tune_error *err;
};

/* Records are written in blocks of about this many bytes. */
#define CSV_BLOCK 65536

static tune_status out_open(struct csv_out *o, const struct tunep_store *st, const char *path,
                            tune_error *err)
{
    memset(o, 0, sizeof *o);
    tunep_buf_init(&o->row);
    o->path = path;
    o->err = err;
    return tunep_store_output_open(st, &o->file, path, err);
}

/* Writes what the buffer holds. */
static tune_status out_flush(struct csv_out *o)
{
    if (o->row.oom) {
        tunep_buf_done(&o->row);
        return tunep_error_set_at(o->err, TUNE_ENOMEM, o->path, 0, 0, "out of memory");
    }
    tune_status rs = tunep_atomic_write(&o->file, o->row.data, o->row.len, o->err);
    o->row.len = 0;
    return rs;
}

/* Ends the record being built with CRLF; writes the buffer once it holds a block. */
static tune_status out_row(struct csv_out *o)
{
    tunep_buf_append(&o->row, "\r\n", 2);
    return o->row.len >= CSV_BLOCK || o->row.oom ? out_flush(o) : TUNE_OK;
}

/* Writes the rest and puts the complete, durable file in place. */
static tune_status out_finish(struct csv_out *o)
{
    tune_status rs = out_flush(o);
    return rs ? rs : tunep_atomic_commit(&o->file, o->err);
}

/* Releases everything; a file left unfinished is removed. */
static void out_done(struct csv_out *o)
{
    tunep_atomic_abort(&o->file);
    tunep_buf_done(&o->row);
    columns_done(&o->cols);
    tunep_free(o->cells);
}

/* Sizes the per-row cells once the columns are known. */
static tune_status out_cells(struct csv_out *o)
{
    if (o->cols.n == 0)
        return TUNE_OK;
    o->cells = tunep_calloc(o->cols.n, sizeof *o->cells);
    if (!o->cells)
        return tunep_error_set_at(o->err, TUNE_ENOMEM, o->path, 0, 0, "out of memory");
    return TUNE_OK;
}

/* Appends ",<cell>" for every metric column, from the row's (names, values). */
static void put_metrics(struct csv_out *o, size_t n, const char *const *names, const double *values)
{
    for (size_t k = 0; k < o->cols.n; k++)
        o->cells[k] = (double)NAN;
    for (size_t i = 0; i < n; i++) {
        long k = columns_find(&o->cols, names[i]);
        if (k >= 0)
            o->cells[k] = values[i];
    }
    for (size_t k = 0; k < o->cols.n; k++) {
        tunep_buf_append(&o->row, ",", 1);
        put_double(&o->row, o->cells[k]);
    }
}

static tune_status collect_names(struct csv_out *o, size_t n, const char *const *names)
{
    for (size_t i = 0; i < n; i++)
        if (!columns_add(&o->cols, names[i]))
            return tunep_error_set_at(o->err, TUNE_ENOMEM, o->path, 0, 0, "out of memory");
    return TUNE_OK;
}

/* ---- the columns Ray's result rows have ----------------------------------- */

/* ",<timestamp>,<date>": Ray's int(time.time()) and local "%Y-%m-%d_%H-%M-%S" of a report. */
static void put_when(struct tunep_buf *b, double wall_time)
{
    tunep_buf_append(b, ",", 1);
    if (isnan(wall_time) || isinf(wall_time)) {
        tunep_buf_append(b, ",", 1);
        return;
    }
    time_t secs = (time_t)floor(wall_time);
    struct tm tm;
    char date[64];
    put_int(b, (int64_t)secs);
    tunep_buf_append(b, ",", 1);
    if (localtime_r(&secs, &tm) && strftime(date, sizeof date, "%Y-%m-%d_%H-%M-%S", &tm) > 0)
        tunep_buf_puts(b, date);
}

/* ",<time_this_iter_s>,<time_since_restore>,<iterations_since_restore>" */
static void put_restore_times(struct tunep_buf *b, double this_iter, double since, int64_t iters)
{
    tunep_buf_append(b, ",", 1);
    put_double(b, this_iter);
    tunep_buf_append(b, ",", 1);
    put_double(b, since);
    tunep_buf_append(b, ",", 1);
    if (iters >= 0)
        put_int(b, iters);
}

/* The header cells of the parameters, ",config/<name>" each. */
static tune_status put_config_header(struct csv_out *o, const struct tunep_store *st)
{
    size_t n_params = 0;
    const char *const *params = tunep_store_param_names(st, &n_params);
    for (size_t i = 0; i < n_params; i++) {
        tunep_buf_append(&o->row, ",", 1);
        if (strpbrk(params[i], ",\"\r\n")) {
            char *col = tunep_asprintf("config/%s", params[i]);
            if (!col)
                return tunep_error_set_at(o->err, TUNE_ENOMEM, o->path, 0, 0, "out of memory");
            tunep_csv_field(&o->row, col);
            tunep_free(col);
        } else {
            tunep_buf_puts(&o->row, "config/");
            tunep_buf_puts(&o->row, params[i]);
        }
    }
    return TUNE_OK;
}

static void put_metric_header(struct csv_out *o)
{
    for (size_t k = 0; k < o->cols.n; k++) {
        tunep_buf_append(&o->row, ",", 1);
        tunep_csv_field(&o->row, o->cols.names[k]);
    }
}

/*
 * A text a program wrote (an error message) as one field, control characters
 * shown as \xNN (as `tune status` shows them), so that `tune export --csv -`
 * cannot drive the terminal it prints to. 0, or -1 on OOM.
 */
static int put_text(struct csv_out *o, const char *s)
{
    if (!s)
        return 0;
    size_t n = tunep_escape_ctrl(NULL, 0, s, NULL);
    if (n == strlen(s)) {
        tunep_csv_field(&o->row, s);
        return 0;
    }
    char *shown = tunep_malloc(n + 1);
    if (!shown)
        return -1;
    tunep_escape_ctrl(shown, n + 1, s, NULL);
    tunep_csv_field(&o->row, shown);
    tunep_free(shown);
    return 0;
}

/* A finished trial reports no more: Ray's done is True on its final result. */
static int finished(tune_trial_status status)
{
    return status == TUNE_TRIAL_TERMINATED || status == TUNE_TRIAL_STOPPED;
}

/* The experiment folder (the store's), absolute when it can be resolved; NULL on OOM. */
static char *experiment_dir(const struct tunep_store *st)
{
    const char *db = tunep_store_path(st);
    const char *slash = strrchr(db, '/');
    char *dir = slash ? tunep_strndup(db, (size_t)(slash - db) + (slash == db)) : tunep_strdup(".");
    if (!dir)
        return NULL;
    char *abs = realpath(dir, NULL); /* malloc'd by libc */
    if (abs) {
        char *copy = tunep_strdup(abs);
        free(abs);
        if (copy) {
            tunep_free(dir);
            dir = copy;
        }
    }
    return dir;
}

/* ---- results.csv ---------------------------------------------------------- */

struct results_ctx {
    struct csv_out o;
    char *dir; /* the experiment folder, for logdir; NULL for an in-memory store */
};

static tune_status results_collect(void *ud, const struct tunep_stored_trial *t)
{
    return collect_names(ud, t->n_metrics, t->metric_names);
}

static tune_status results_row(void *ud, const struct tunep_stored_trial *t)
{
    struct results_ctx *c = ud;
    struct csv_out *o = &c->o;
    struct tunep_buf *b = &o->row;
    put_int(b, t->trial_id);
    tunep_buf_append(b, ",", 1);
    tunep_buf_puts(b, tune_trial_status_name(t->status));
    tunep_buf_append(b, ",", 1);
    put_int(b, t->iteration);
    for (size_t i = 0; i < t->n_params; i++) {
        tunep_buf_append(b, ",", 1);
        put_value(b, &t->params[i]);
    }
    put_metrics(o, t->n_metrics, t->metric_names, t->metric_values);
    tunep_buf_append(b, ",", 1);
    /* As Ray's: the last result's time, like the other per-report columns. */
    put_double(b, isnan(t->report_time_total_s) ? t->time_total_s : t->report_time_total_s);
    tunep_buf_append(b, ",", 1);
    put_int(b, t->attempt);
    tunep_buf_append(b, ",", 1);
    if (put_text(o, t->error))
        return tunep_error_set_at(o->err, TUNE_ENOMEM, o->path, 0, 0, "out of memory");
    put_restore_times(b, t->time_this_iter_s, t->time_since_restore, t->iterations_since_restore);
    put_when(b, t->wall_time);
    tunep_buf_puts(b, finished(t->status) ? ",True," : ",False,");
    if (t->pid > 0)
        put_int(b, t->pid);
    tunep_buf_append(b, ",", 1);
    tunep_csv_field(b, t->hostname);
    tunep_buf_append(b, ",", 1);
    tunep_csv_field(b, t->node_ip);
    tunep_buf_append(b, ",", 1);
    if (c->dir) {
        char *logdir = tunep_trial_dir_path(c->dir, t->trial_id);
        if (!logdir)
            return tunep_error_set_at(o->err, TUNE_ENOMEM, o->path, 0, 0, "out of memory");
        tunep_csv_field(b, logdir);
        tunep_free(logdir);
    }
    return out_row(o);
}

tune_status tunep_export_results_csv(struct tunep_store *st, const char *path, tune_error *err)
{
    struct results_ctx c = {.dir = NULL};
    struct csv_out *o = &c.o;
    if (!st || !path)
        return tunep_error_set(err, TUNE_EINVAL, "export: missing argument");
    tune_status rs = tunep_store_read_begin(st, err);
    if (rs)
        return rs;
    if ((rs = out_open(o, st, path, err)) ||
        (rs = tunep_store_foreach_trial(st, results_collect, o, err)) || (rs = out_cells(o)))
        goto out;
    if (strcmp(tunep_store_path(st), ":memory:") != 0 && !(c.dir = experiment_dir(st))) {
        rs = tunep_error_set_at(err, TUNE_ENOMEM, path, 0, 0, "out of memory");
        goto out;
    }
    tunep_buf_puts(&o->row, "trial_id,status,training_iteration");
    if ((rs = put_config_header(o, st)))
        goto out;
    put_metric_header(o);
    tunep_buf_puts(&o->row, ",time_total_s,attempts,error,time_this_iter_s,time_since_restore,"
                            "iterations_since_restore,timestamp,date,done,pid,hostname,node_ip,"
                            "logdir");
    if ((rs = out_row(o)) || (rs = tunep_store_foreach_trial(st, results_row, &c, err)))
        goto out;
    rs = out_finish(o);
out:
    tunep_store_read_end(st);
    out_done(o);
    tunep_free(c.dir);
    return rs;
}

/* ---- progress.csv --------------------------------------------------------- */

/* What a report row needs of its trial, found in a first pass over the trials. */
struct progress_trial {
    int64_t trial_id, iteration;
    int attempt, done; /* done: finished, so its last report is its final result */
    size_t tail;       /* offset of ",<status>,<config/...>" in the arena */
};

struct progress_ctx {
    struct csv_out o;
    struct progress_trial *trials;
    size_t n, cap, cursor;
    struct tunep_buf arena; /* the trials' tails, each NUL-terminated */
};

static tune_status progress_collect_trial(void *ud, const struct tunep_stored_trial *t)
{
    struct progress_ctx *c = ud;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        struct progress_trial *p = tunep_realloc(c->trials, c->cap * sizeof *p, cap * sizeof *p);
        if (!p)
            return tunep_error_set_at(c->o.err, TUNE_ENOMEM, c->o.path, 0, 0, "out of memory");
        c->trials = p;
        c->cap = cap;
    }
    struct progress_trial *pt = &c->trials[c->n++];
    pt->trial_id = t->trial_id;
    pt->iteration = t->iteration;
    pt->attempt = t->attempt;
    pt->done = finished(t->status);
    pt->tail = c->arena.len;
    tunep_buf_append(&c->arena, ",", 1);
    tunep_buf_puts(&c->arena, tune_trial_status_name(t->status));
    for (size_t i = 0; i < t->n_params; i++) {
        tunep_buf_append(&c->arena, ",", 1);
        put_value(&c->arena, &t->params[i]);
    }
    tunep_buf_append(&c->arena, "", 1);
    return c->arena.oom
               ? tunep_error_set_at(c->o.err, TUNE_ENOMEM, c->o.path, 0, 0, "out of memory")
               : TUNE_OK;
}

static tune_status progress_collect(void *ud, const struct tunep_stored_report *r)
{
    return collect_names(&((struct progress_ctx *)ud)->o, r->n_metrics, r->metric_names);
}

static tune_status progress_row(void *ud, const struct tunep_stored_report *r)
{
    struct progress_ctx *c = ud;
    struct csv_out *o = &c->o;
    /* Both passes run in trial_id order: the trial of a report is at or after the cursor. */
    while (c->cursor < c->n && c->trials[c->cursor].trial_id < r->trial_id)
        c->cursor++;
    const struct progress_trial *pt =
        c->cursor < c->n && c->trials[c->cursor].trial_id == r->trial_id ? &c->trials[c->cursor]
                                                                         : NULL;
    put_int(&o->row, r->trial_id);
    tunep_buf_append(&o->row, ",", 1);
    put_int(&o->row, r->iteration);
    tunep_buf_append(&o->row, ",", 1);
    put_double(&o->row, r->time_total_s);
    put_metrics(o, r->n_metrics, r->metric_names, r->metric_values);
    tunep_buf_append(&o->row, ",", 1);
    put_int(&o->row, r->attempt);
    put_restore_times(&o->row, r->time_this_iter_s, r->time_since_restore,
                      r->iterations_since_restore);
    put_when(&o->row, r->wall_time);
    int done = pt && pt->done && pt->attempt == r->attempt && pt->iteration == r->iteration;
    tunep_buf_puts(&o->row, done ? ",True" : ",False");
    if (pt)
        tunep_buf_puts(&o->row, c->arena.data + pt->tail);
    return out_row(o);
}

tune_status tunep_export_progress_csv(struct tunep_store *st, const char *path, tune_error *err)
{
    struct progress_ctx c;
    struct csv_out *o = &c.o;
    if (!st || !path)
        return tunep_error_set(err, TUNE_EINVAL, "export: missing argument");
    memset(&c, 0, sizeof c);
    tunep_buf_init(&c.arena);
    tune_status rs = tunep_store_read_begin(st, err);
    if (rs) {
        tunep_buf_done(&c.arena);
        return rs;
    }
    if ((rs = out_open(o, st, path, err)) ||
        (rs = tunep_store_foreach_report_row(st, progress_collect, &c, err)) ||
        (rs = out_cells(o)) ||
        (rs = tunep_store_foreach_trial(st, progress_collect_trial, &c, err)))
        goto out;
    tunep_buf_puts(&o->row, "trial_id,training_iteration,time_total_s");
    put_metric_header(o);
    tunep_buf_puts(&o->row, ",attempt,time_this_iter_s,time_since_restore,"
                            "iterations_since_restore,timestamp,date,done,status");
    if ((rs = put_config_header(o, st)) || (rs = out_row(o)) ||
        (rs = tunep_store_foreach_report_row(st, progress_row, &c, err)))
        goto out;
    rs = out_finish(o);
out:
    tunep_store_read_end(st);
    out_done(o);
    tunep_free(c.trials);
    tunep_buf_done(&c.arena);
    return rs;
}
