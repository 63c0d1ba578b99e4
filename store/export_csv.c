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
#include <string.h>

#include "base/file_io.h"

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

/* ---- results.csv ---------------------------------------------------------- */

static tune_status results_collect(void *ud, const struct tunep_stored_trial *t)
{
    return collect_names(ud, t->n_metrics, t->metric_names);
}

static tune_status results_row(void *ud, const struct tunep_stored_trial *t)
{
    struct csv_out *o = ud;
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
    put_double(b, t->time_total_s);
    return out_row(o);
}

tune_status tunep_export_results_csv(struct tunep_store *st, const char *path, tune_error *err)
{
    struct csv_out o;
    size_t n_params = 0;
    if (!st || !path)
        return tunep_error_set(err, TUNE_EINVAL, "export: missing argument");
    tune_status rs = tunep_store_read_begin(st, err);
    if (rs)
        return rs;
    if ((rs = out_open(&o, st, path, err)) ||
        (rs = tunep_store_foreach_trial(st, results_collect, &o, err)) || (rs = out_cells(&o)))
        goto out;
    const char *const *params = tunep_store_param_names(st, &n_params);
    tunep_buf_puts(&o.row, "trial_id,status,training_iteration");
    for (size_t i = 0; i < n_params; i++) {
        tunep_buf_append(&o.row, ",", 1);
        if (strpbrk(params[i], ",\"\r\n")) {
            char *col = tunep_asprintf("config/%s", params[i]);
            if (!col) {
                rs = tunep_error_set_at(err, TUNE_ENOMEM, path, 0, 0, "out of memory");
                goto out;
            }
            tunep_csv_field(&o.row, col);
            tunep_free(col);
        } else {
            tunep_buf_puts(&o.row, "config/");
            tunep_buf_puts(&o.row, params[i]);
        }
    }
    for (size_t k = 0; k < o.cols.n; k++) {
        tunep_buf_append(&o.row, ",", 1);
        tunep_csv_field(&o.row, o.cols.names[k]);
    }
    tunep_buf_puts(&o.row, ",time_total_s");
    if ((rs = out_row(&o)) || (rs = tunep_store_foreach_trial(st, results_row, &o, err)))
        goto out;
    rs = out_finish(&o);
out:
    tunep_store_read_end(st);
    out_done(&o);
    return rs;
}

/* ---- progress.csv --------------------------------------------------------- */

static tune_status progress_collect(void *ud, int64_t trial_id, int attempt, int64_t iteration,
                                    double time_total_s, size_t n, const char *const *names,
                                    const double *values)
{
    (void)trial_id, (void)attempt, (void)iteration, (void)time_total_s, (void)values;
    return collect_names(ud, n, names);
}

static tune_status progress_row(void *ud, int64_t trial_id, int attempt, int64_t iteration,
                                double time_total_s, size_t n, const char *const *names,
                                const double *values)
{
    struct csv_out *o = ud;
    (void)attempt;
    put_int(&o->row, trial_id);
    tunep_buf_append(&o->row, ",", 1);
    put_int(&o->row, iteration);
    tunep_buf_append(&o->row, ",", 1);
    put_double(&o->row, time_total_s);
    put_metrics(o, n, names, values);
    return out_row(o);
}

tune_status tunep_export_progress_csv(struct tunep_store *st, const char *path, tune_error *err)
{
    struct csv_out o;
    if (!st || !path)
        return tunep_error_set(err, TUNE_EINVAL, "export: missing argument");
    tune_status rs = tunep_store_read_begin(st, err);
    if (rs)
        return rs;
    if ((rs = out_open(&o, st, path, err)) ||
        (rs = tunep_store_foreach_last_attempt_report(st, progress_collect, &o, err)) ||
        (rs = out_cells(&o)))
        goto out;
    tunep_buf_puts(&o.row, "trial_id,training_iteration,time_total_s");
    for (size_t k = 0; k < o.cols.n; k++) {
        tunep_buf_append(&o.row, ",", 1);
        tunep_csv_field(&o.row, o.cols.names[k]);
    }
    if ((rs = out_row(&o)) ||
        (rs = tunep_store_foreach_last_attempt_report(st, progress_row, &o, err)))
        goto out;
    rs = out_finish(&o);
out:
    tunep_store_read_end(st);
    out_done(&o);
    return rs;
}
