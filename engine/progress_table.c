/*
 * progress_table.c - the live progress table that `tune run` redraws in a
 * terminal, and the one-line progress it prints to a log instead.
 *
 * The table follows Ray Tune's CLIReporter: counts by status, the best trial
 * so far with its parameters, the scheduler's own lines, then rows for the
 * running trials (with the device each holds) and the best finished one, in
 * the columns the user picked (parameters, metrics, iteration, time). Each
 * column is as wide as its widest cell, up to CELL_MAX characters. A width
 * limit (the terminal's) leaves out whole columns, lowest priority first,
 * and names them; a line still too long is cut, so no line ever wraps.
 * Widths count code points (a wide CJK character counts one).
 *
 * Everything shown is escaped (control characters as \xNN): names, string
 * values and error texts come from configs and programs' output, and the
 * text goes to a terminal. Cells are escaped before they are measured, so
 * the columns stay aligned.
 */
#include "engine/study.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/text.h"

#define DEFAULT_ROWS 20
/* Parameter columns shown by default (without a column list). */
#define DEFAULT_PARAMS 12
/* The widest a column gets; numbers (%.5g) need at most 12. */
#define CELL_MAX 16
/* A header wider than its column's values is cut to this (the end kept). */
#define HEADER_MAX 12
/* A cell's text: CELL_MAX code points of up to 4 bytes each, or escapes. */
#define CELL_BYTES (4 * CELL_MAX + 8)

enum col_kind { COL_TRIAL, COL_STATUS, COL_DEVICE, COL_PARAM, COL_METRIC, COL_ITER, COL_TIME };

struct col {
    enum col_kind kind;
    size_t param;     /* COL_PARAM: the parameter's index */
    const char *name; /* COL_METRIC: the metric (borrowed from the column list or config) */
    int priority;     /* lower stays longer; < 0 never leaves */
    int width;
    int shown;
};

/* The table's own columns, under Ray's names and short ones. */
static const struct {
    const char *name;
    enum col_kind kind;
} builtin_cols[] = {
    {"training_iteration", COL_ITER}, {"iter", COL_ITER},
    {"time_total_s", COL_TIME},       {"time", COL_TIME},
    {"trial_id", COL_TRIAL},          {"trial", COL_TRIAL},
    {"status", COL_STATUS},           {"device", COL_DEVICE},
};
#define N_BUILTIN (sizeof builtin_cols / sizeof builtin_cols[0])

/* Display width of UTF-8 text: its code points. */
static size_t text_cols(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* The byte offset after the first n code points of s. */
static size_t cols_offset(const char *s, size_t n)
{
    size_t i = 0;
    for (; s[i]; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80 && n-- == 0)
            break;
    return i;
}

static long find_param(const struct tune_study *s, const char *name)
{
    for (size_t i = 0; i < s->n_params; i++)
        if (strcmp(s->param_names[i], name) == 0)
            return (long)i;
    return -1;
}

/* A metric's interned id without interning it; -1 when never reported. */
static long find_metric(const struct tune_study *s, const char *name)
{
    for (size_t i = 0; i < s->n_metrics; i++)
        if (strcmp(s->metric_names[i], name) == 0)
            return (long)i;
    return -1;
}

/* Levenshtein distance of a and b, or more than `most` once it exceeds it. */
static size_t edit_distance(const char *a, const char *b, size_t most)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > lb + most || lb > la + most || lb > 63)
        return most + 1;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* A parameter or table column that `name` looks like a typo of, or NULL. */
static const char *near_name(const struct tune_study *s, const char *name)
{
    size_t len = strlen(name);
    if (len < 4)
        return NULL;
    size_t most = len <= 5 ? 1 : 2;
    for (size_t i = 0; i < s->n_params; i++)
        if (edit_distance(name, s->param_names[i], most) <= most)
            return s->param_names[i];
    for (size_t k = 0; k < N_BUILTIN; k++)
        if (edit_distance(name, builtin_cols[k].name, most) <= most)
            return builtin_cols[k].name;
    return NULL;
}

/* The names as "a, b, c" in buf, cut with "..." when they do not fit. */
static void list_names(char *buf, size_t size, const char *const *names, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(buf + len, size - len, "%s%s", i ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= size - len) {
            memcpy(buf + size - 4, "...", 4);
            return;
        }
        len += (size_t)w;
    }
}

/* The table's columns and where their names live. */
struct layout {
    char *text; /* the column list, split in place: metric names point into it */
    struct col *cols;
    size_t n;
    char unreported[256]; /* metric columns no trial reported while others did */
};

static void layout_done(struct layout *l)
{
    tunep_free(l->text);
    tunep_free(l->cols);
    memset(l, 0, sizeof *l);
}

static int same_column(const struct col *a, const struct col *b)
{
    if (a->kind != b->kind)
        return 0;
    if (a->kind == COL_PARAM)
        return a->param == b->param;
    if (a->kind == COL_METRIC)
        return strcmp(a->name, b->name) == 0;
    return 1;
}

/* One name of a column list as a column; 0, or an error naming it. Lock held. */
static tune_status parse_column(const struct tune_study *s, char *name, int pos, struct col *c,
                                struct layout *l, tune_error *err)
{
    char list[512];
    *c = (struct col){.kind = COL_METRIC, .priority = pos, .name = name};
    size_t len = strlen(name);
    if (len == 0)
        return tunep_error_set(err, TUNE_EINVAL,
                               "column %d is empty (expected names such as lr,batch_size,val_loss)",
                               pos);
    char shown[4 * TUNEP_MAX_METRIC_NAME + 8];
    if (len > TUNEP_MAX_METRIC_NAME || !tunep_utf8_valid(name) ||
        tunep_escape_ctrl(shown, sizeof shown, name, NULL) != len) {
        tunep_escape_ctrl(shown, sizeof shown, name, NULL);
        return tunep_error_set(err, TUNE_EINVAL,
                               "column %d ('%.64s') is not a name: UTF-8 text of at most %d bytes "
                               "without control characters",
                               pos, shown, TUNEP_MAX_METRIC_NAME);
    }
    const char *pname = strncmp(name, "config/", 7) == 0 ? name + 7 : NULL;
    long param = find_param(s, pname ? pname : name);
    if (param >= 0) {
        c->kind = COL_PARAM;
        c->param = (size_t)param;
        return TUNE_OK;
    }
    list_names(list, sizeof list, s->param_names, s->n_params);
    if (pname)
        return tunep_error_set(err, TUNE_EINVAL, "column '%s': no parameter '%s' (parameters: %s)",
                               name, pname, s->n_params ? list : "none");
    for (size_t k = 0; k < N_BUILTIN; k++) {
        if (strcmp(name, builtin_cols[k].name) != 0)
            continue;
        c->kind = builtin_cols[k].kind;
        if (c->kind == COL_TRIAL || c->kind == COL_STATUS || c->kind == COL_DEVICE)
            return tunep_error_set(err, TUNE_EINVAL,
                                   "column '%s' is always shown (trial, status and, while trials "
                                   "are placed on GPUs, device)",
                                   name);
        return TUNE_OK;
    }
    /* A metric: any name a trial may report, unless it looks like a typo. */
    int known = strcmp(name, s->cfg.metric) == 0 || find_metric(s, name) >= 0;
    const char *near = known ? NULL : near_name(s, name);
    if (near)
        return tunep_error_set(err, TUNE_EINVAL,
                               "unknown column '%s': did you mean '%s'? (parameters: %s; columns: "
                               "training_iteration, time_total_s; or a metric a trial reports)",
                               name, near, s->n_params ? list : "none");
    size_t ulen = strlen(l->unreported);
    if (!known && s->n_metrics > 0)
        snprintf(l->unreported + ulen, sizeof l->unreported - ulen, "%s'%s'", ulen ? ", " : "",
                 name);
    return TUNE_OK;
}

/* Trims spaces and tabs at both ends, in place. */
static char *trim(char *t)
{
    while (*t == ' ' || *t == '\t')
        t++;
    size_t n = strlen(t);
    while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t'))
        t[--n] = '\0';
    return t;
}

/*
 * The table's columns in display order: trial, status, device (while trials
 * are placed on GPUs), then the list's columns in its order (priority: the
 * order given) or the defaults (parameters, iteration, time, main metric).
 * Lock held.
 */
static tune_status layout_columns(const struct tune_study *s, const char *spec, struct layout *l,
                                  tune_error *err)
{
    memset(l, 0, sizeof *l);
    size_t n_list = 0;
    if (spec && spec[0]) {
        n_list = 1;
        for (const char *q = spec; *q; q++)
            n_list += *q == ',';
        if (!(l->text = tunep_strdup(spec)))
            return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    }
    size_t n_params = s->n_params < DEFAULT_PARAMS ? s->n_params : DEFAULT_PARAMS;
    size_t cap = 3 + (l->text ? n_list : n_params + 3);
    if (!(l->cols = tunep_calloc(cap, sizeof *l->cols))) {
        layout_done(l);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    }
    struct col *c = l->cols;
    c[l->n++] = (struct col){.kind = COL_TRIAL, .priority = -1};
    c[l->n++] = (struct col){.kind = COL_STATUS, .priority = -1};
    int device = s->gpu_pool != NULL;
    if (l->text) {
        /* Device leaves before any column asked for. */
        if (device)
            c[l->n++] = (struct col){.kind = COL_DEVICE, .priority = (int)n_list + 1};
        char *name = l->text;
        for (int pos = 1;; pos++) {
            char *comma = strchr(name, ',');
            if (comma)
                *comma = '\0';
            struct col nc;
            tune_status st = parse_column(s, trim(name), pos, &nc, l, err);
            for (size_t k = 0; st == TUNE_OK && k < l->n; k++)
                if (same_column(&c[k], &nc))
                    st =
                        tunep_error_set(err, TUNE_EINVAL, "column '%s' is named twice", trim(name));
            if (st) {
                layout_done(l);
                return st;
            }
            c[l->n++] = nc;
            if (!comma)
                break;
            name = comma + 1;
        }
        return TUNE_OK;
    }
    /* Defaults. Leaving first: time, the parameters from the last, the
     * iteration, the device; the main metric last. */
    int prio = 4 + (int)n_params;
    if (device)
        c[l->n++] = (struct col){.kind = COL_DEVICE, .priority = 2};
    for (size_t i = 0; i < n_params; i++)
        c[l->n++] = (struct col){.kind = COL_PARAM, .param = i, .priority = 3 + (int)i};
    c[l->n++] = (struct col){.kind = COL_ITER, .priority = 1};
    c[l->n++] = (struct col){.kind = COL_TIME, .priority = prio};
    c[l->n++] = (struct col){.kind = COL_METRIC, .name = s->cfg.metric, .priority = 0};
    return TUNE_OK;
}

/* The header of a column. */
static const char *col_header(const struct tune_study *s, const struct col *c)
{
    switch (c->kind) {
        case COL_TRIAL: return "trial";
        case COL_STATUS: return "status";
        case COL_DEVICE: return "device";
        case COL_PARAM: return s->param_names[c->param];
        case COL_METRIC: return c->name;
        case COL_ITER: return "iter";
        case COL_TIME: return "time (s)";
    }
    return "";
}

static void fmt_value(char *buf, size_t size, const struct tunep_value *v)
{
    switch (v->type) {
        case TUNEP_V_DOUBLE: snprintf(buf, size, "%.4g", v->u.d); return;
        case TUNEP_V_INT: snprintf(buf, size, "%lld", (long long)v->u.i); return;
        case TUNEP_V_STRING: snprintf(buf, size, "%s", v->u.s); return;
        case TUNEP_V_BOOL: snprintf(buf, size, "%s", v->u.b ? "true" : "false"); return;
        case TUNEP_V_ABSENT: break;
    }
    buf[0] = '\0';
}

static double metric_of(const struct tune_study *s, const struct tunep_trial_rec *r,
                        const char *name)
{
    long id = strcmp(name, s->cfg.metric) == 0 ? s->main_metric : find_metric(s, name);
    if (id < 0 || (size_t)id >= r->n_last)
        return (double)NAN;
    return r->last[id];
}

/* The device a trial runs on: its GPUs while it holds some, "cpu" while it
 * runs without, "-" when not running. Lock held. */
static void fmt_device(char *buf, size_t size, const struct tune_study *s,
                       const struct tunep_trial_rec *r)
{
    snprintf(buf, size, "-");
    if (r->status != TUNE_TRIAL_RUNNING)
        return;
    snprintf(buf, size, "cpu");
    for (const struct tune_trial *t = s->live; t; t = t->next)
        if (t->rec == r && t->n_gpus > 0)
            snprintf(buf, size, "cuda:%s", t->gpu_ids);
}

/* A cell's text, escaped, at most CELL_BYTES - 1 bytes. Lock held. */
static void fmt_cell(char *out, const struct tune_study *s, const struct col *c,
                     const struct tunep_trial_rec *r)
{
    char raw[1024]; /* a device list is up to TUNEP_MAX_TRIAL_GPUS ids */
    double v;
    switch (c->kind) {
        case COL_TRIAL: snprintf(raw, sizeof raw, "%lld", (long long)r->id); break;
        case COL_STATUS: snprintf(raw, sizeof raw, "%s", tune_trial_status_name(r->status)); break;
        case COL_DEVICE: fmt_device(raw, sizeof raw, s, r); break;
        case COL_PARAM: fmt_value(raw, sizeof raw, &r->values[c->param]); break;
        case COL_METRIC:
            v = metric_of(s, r, c->name);
            snprintf(raw, sizeof raw, isnan(v) ? "-" : "%.5g", v);
            break;
        case COL_ITER: snprintf(raw, sizeof raw, "%lld", (long long)r->iteration); break;
        case COL_TIME:
            snprintf(raw, sizeof raw, isnan(r->time_total_s) ? "-" : "%.2f", r->time_total_s);
            break;
    }
    tunep_escape_ctrl(out, CELL_BYTES, raw, NULL);
}

/* Appends text padded to w columns, right-aligned or left; a cut keeps the
 * start of a value and marks it with '~' at the end, or keeps the end of a
 * header ("optimizer/lr" -> "~mizer/lr") with the mark in front. */
static void put_cell(struct tunep_buf *b, const char *text, int w, int right, int keep_end)
{
    size_t n = text_cols(text);
    if (n > (size_t)w) {
        if (keep_end) {
            tunep_buf_puts(b, "~");
            tunep_buf_puts(b, text + cols_offset(text, n - (size_t)w + 1));
        } else {
            tunep_buf_append(b, text, cols_offset(text, (size_t)w - 1));
            tunep_buf_puts(b, "~");
        }
        return;
    }
    if (right)
        for (size_t i = n; i < (size_t)w; i++)
            tunep_buf_puts(b, " ");
    tunep_buf_puts(b, text);
    if (!right)
        for (size_t i = n; i < (size_t)w; i++)
            tunep_buf_puts(b, " ");
}

static int col_right(const struct col *c)
{
    return c->kind != COL_STATUS && c->kind != COL_DEVICE && c->kind != COL_TRIAL;
}

static void table_rule(struct tunep_buf *b, const struct layout *l)
{
    tunep_buf_puts(b, "+");
    for (size_t i = 0; i < l->n; i++) {
        if (!l->cols[i].shown)
            continue;
        for (int k = 0; k < l->cols[i].width + 2; k++)
            tunep_buf_puts(b, "-");
        tunep_buf_puts(b, "+");
    }
    tunep_buf_puts(b, "\n");
}

static void table_line(struct tunep_buf *b, const struct tune_study *s, const struct layout *l,
                       const char *cells)
{
    tunep_buf_puts(b, "|");
    for (size_t i = 0; i < l->n; i++) {
        const struct col *c = &l->cols[i];
        if (!c->shown)
            continue;
        tunep_buf_puts(b, " ");
        if (cells) {
            put_cell(b, cells + i * CELL_BYTES, c->width, col_right(c), 0);
        } else {
            char h[CELL_BYTES];
            tunep_escape_ctrl(h, sizeof h, col_header(s, c), NULL);
            put_cell(b, h, c->width, col_right(c), 1);
        }
        tunep_buf_puts(b, " |");
    }
    tunep_buf_puts(b, "\n");
}

/* Widths from the cells; then, past `width`, columns leave by priority. */
static void fit_columns(const struct tune_study *s, struct layout *l, const char *cells,
                        size_t n_rows, int width)
{
    for (size_t i = 0; i < l->n; i++) {
        struct col *c = &l->cols[i];
        char h[CELL_BYTES];
        tunep_escape_ctrl(h, sizeof h, col_header(s, c), NULL);
        size_t w = 0;
        for (size_t r = 0; r < n_rows; r++) {
            size_t cw = text_cols(cells + (r * l->n + i) * CELL_BYTES);
            if (cw > w)
                w = cw;
        }
        /* A header wider than its values takes up to HEADER_MAX. */
        size_t hw = text_cols(h);
        if (hw > w)
            w = hw < HEADER_MAX ? hw : w > HEADER_MAX ? w : HEADER_MAX;
        c->width = (int)(w < CELL_MAX ? w : CELL_MAX);
        c->shown = 1;
    }
    if (width <= 0)
        return;
    int total = 1;
    for (size_t i = 0; i < l->n; i++)
        total += l->cols[i].width + 3;
    while (total > width) {
        long drop = -1;
        for (size_t i = 0; i < l->n; i++)
            if (l->cols[i].shown && l->cols[i].priority >= 0 &&
                (drop < 0 || l->cols[i].priority > l->cols[drop].priority))
                drop = (long)i;
        if (drop < 0)
            return; /* trial and status alone are too wide: fit_lines cuts */
        l->cols[drop].shown = 0;
        total -= l->cols[drop].width + 3;
    }
    /* Room a wide column left: narrower ones that went come back, in priority order. */
    for (;;) {
        long back = -1;
        for (size_t i = 0; i < l->n; i++)
            if (!l->cols[i].shown && total + l->cols[i].width + 3 <= width &&
                (back < 0 || l->cols[i].priority < l->cols[back].priority))
                back = (long)i;
        if (back < 0)
            return;
        l->cols[back].shown = 1;
        total += l->cols[back].width + 3;
    }
}

/* Copies text to b with every line cut to width code points ("..." marks a
 * cut); width <= 0 copies it whole. */
static void fit_lines(struct tunep_buf *b, const char *text, int width)
{
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t len = nl ? (size_t)(nl - text) : strlen(text);
        char *line = tunep_strndup(text, len);
        if (!line) {
            b->oom = 1;
            return;
        }
        if (width > 0 && text_cols(line) > (size_t)width) {
            size_t keep = width > 3 ? (size_t)width - 3 : 0;
            tunep_buf_append(b, line, cols_offset(line, keep));
            tunep_buf_append(b, "...", width > 3 ? 3 : (size_t)width);
        } else {
            tunep_buf_puts(b, line);
        }
        tunep_free(line);
        if (nl)
            tunep_buf_puts(b, "\n");
        text += len + (nl != NULL);
    }
}

/* The rows shown: running trials first, then the best one. Lock held. */
static size_t pick_rows(const struct tune_study *s, int max_rows, int64_t best,
                        const struct tunep_trial_rec **rows, int64_t *ret_wanted)
{
    size_t n = 0;
    for (int64_t i = 0; i < s->n_trials && (int)n < max_rows; i++)
        if (s->trials[i]->status == TUNE_TRIAL_RUNNING)
            rows[n++] = s->trials[i];
    int best_apart = best >= 0 && s->trials[best]->status != TUNE_TRIAL_RUNNING;
    if (best_apart && (int)n < max_rows)
        rows[n++] = s->trials[best];
    *ret_wanted = s->counts[TUNE_TRIAL_RUNNING] + best_apart;
    return n;
}

/* The best trial's parameters as "a=1, b=x", for the best-so-far line; absent ones left out. */
static void best_params(struct tunep_buf *b, const struct tune_study *s,
                        const struct tunep_trial_rec *r)
{
    char v[128];
    int first = 1;
    for (size_t i = 0; i < s->n_params; i++) {
        if (r->values[i].type == TUNEP_V_ABSENT)
            continue;
        fmt_value(v, sizeof v, &r->values[i]);
        tunep_buf_printf(b, "%s%s=%s", first ? ": " : ", ", s->param_names[i], v);
        first = 0;
    }
}

static void table_text(struct tunep_buf *b, struct tune_study *s, struct layout *l, int max_rows,
                       int width)
{
    int64_t pending = s->counts[TUNE_TRIAL_PENDING] + (s->total_trials - s->n_trials);
    if (s->readonly) {
        tunep_buf_printf(b, "== %s == (from %s)\n", s->cfg.name, s->cfg.storage);
    } else {
        double elapsed = s->t_start > 0 ? tunep_now_monotonic() - s->t_start : 0;
        tunep_buf_printf(b, "== %s == running for %02d:%02d:%05.2f  %lld reports\n", s->cfg.name,
                         (int)(elapsed / 3600), (int)fmod(elapsed / 60, 60), fmod(elapsed, 60),
                         (long long)s->n_reports);
    }
    char paused[48] = "";
    if (s->counts[TUNE_TRIAL_PAUSED] > 0)
        snprintf(paused, sizeof paused, ", %lld PAUSED", (long long)s->counts[TUNE_TRIAL_PAUSED]);
    tunep_buf_printf(
        b,
        "Trials: %lld (%lld PENDING, %lld RUNNING, %lld TERMINATED, %lld STOPPED, "
        "%lld ERROR%s)\n",
        (long long)s->total_trials, (long long)pending, (long long)s->counts[TUNE_TRIAL_RUNNING],
        (long long)s->counts[TUNE_TRIAL_TERMINATED], (long long)s->counts[TUNE_TRIAL_STOPPED],
        (long long)s->counts[TUNE_TRIAL_ERROR], paused);
    int64_t best = tunep_study_best_trial(s);
    if (best >= 0) {
        tunep_buf_printf(b, "Best so far: trial %lld with %s=%.6g (%s)", (long long)best,
                         s->cfg.metric, metric_of(s, s->trials[best], s->cfg.metric),
                         s->cfg.mode_max ? "max" : "min");
        best_params(b, s, s->trials[best]);
        tunep_buf_puts(b, "\n");
    }
    if (s->sched)
        tunep_scheduler_describe(s->sched, s->sign, b);
    if (s->store)
        tunep_buf_printf(b, "Results: %s\n", s->cfg.storage);

    if (max_rows > 0 && s->n_trials > 0) {
        const struct tunep_trial_rec **rows = tunep_calloc((size_t)max_rows, sizeof *rows);
        char *cells = rows ? tunep_calloc((size_t)max_rows * l->n, CELL_BYTES) : NULL;
        if (!cells) {
            tunep_free(rows);
            b->oom = 1;
            return;
        }
        int64_t wanted = 0;
        size_t n_rows = pick_rows(s, max_rows, best, rows, &wanted);
        for (size_t r = 0; r < n_rows; r++)
            for (size_t i = 0; i < l->n; i++)
                fmt_cell(cells + (r * l->n + i) * CELL_BYTES, s, &l->cols[i], rows[r]);
        fit_columns(s, l, cells, n_rows, width);
        table_rule(b, l);
        table_line(b, s, l, NULL);
        table_rule(b, l);
        for (size_t r = 0; r < n_rows; r++)
            table_line(b, s, l, cells + r * l->n * CELL_BYTES);
        table_rule(b, l);
        if (wanted > (int64_t)n_rows)
            tunep_buf_printf(b, "... %lld more trials not shown\n",
                             (long long)(wanted - (int64_t)n_rows));
        size_t hidden = 0;
        for (size_t i = 0; i < l->n; i++)
            if (!l->cols[i].shown)
                tunep_buf_printf(b, "%s%s", hidden++ ? ", " : "Columns left out to fit: ",
                                 col_header(s, &l->cols[i]));
        if (hidden)
            tunep_buf_puts(b, "\n");
        tunep_free(cells);
        tunep_free(rows);
    }
    if (l->unreported[0])
        tunep_buf_printf(b, "Not reported by any trial: %s\n", l->unreported);
    /* The last errors, so a failing sweep says why without opening the store. */
    int shown_errors = 0;
    for (int64_t i = s->n_trials - 1; i >= 0 && shown_errors < 5; i--) {
        const struct tunep_trial_rec *r = s->trials[i];
        if (r->error && (r->status == TUNE_TRIAL_ERROR || r->status == TUNE_TRIAL_PENDING)) {
            tunep_buf_printf(b, "%s trial %lld (attempt %d): %s\n",
                             r->status == TUNE_TRIAL_ERROR ? "ERROR" : "retrying", (long long)r->id,
                             r->attempt, r->error);
            shown_errors++;
        }
    }
}

/* Escapes control characters (keeping line breaks) and cuts lines to width. */
static tune_status finish_text(char *text, int width, char **ret_text, tune_error *err)
{
    if (!text)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    size_t len = strlen(text), shown = tunep_escape_ctrl(NULL, 0, text, "\n");
    if (shown != len) {
        char *escaped = tunep_malloc(shown + 1);
        if (!escaped) {
            tunep_free(text);
            return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        }
        tunep_escape_ctrl(escaped, shown + 1, text, "\n");
        tunep_free(text);
        text = escaped;
    }
    if (width > 0) {
        struct tunep_buf b;
        tunep_buf_init(&b);
        fit_lines(&b, text, width);
        tunep_free(text);
        if (!(text = tunep_buf_take(&b)))
            return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    }
    *ret_text = text;
    return TUNE_OK;
}

/* The table with `columns` (NULL: the defaults), at most max_rows trial rows
 * (none when negative), every line at most width characters (0: any). */
static tune_status render(struct tune_study *s, const char *columns, int max_rows, int width,
                          char **ret_text, tune_error *err)
{
    if (!s || !ret_text)
        return tunep_error_set(err, TUNE_EINVAL, "study and ret_text must not be NULL");
    pthread_mutex_lock(&s->lock);
    struct layout l;
    tune_status st = layout_columns(s, columns, &l, err);
    if (st) {
        pthread_mutex_unlock(&s->lock);
        return st;
    }
    struct tunep_buf b;
    tunep_buf_init(&b);
    table_text(&b, s, &l, max_rows, width);
    pthread_mutex_unlock(&s->lock);
    layout_done(&l);
    char *text = b.len || b.oom ? tunep_buf_take(&b) : tunep_strdup("");
    return finish_text(text, width, ret_text, err);
}

tune_status tune_study_progress_table(tune_study *s, const tune_progress_options *options,
                                      char **ret_text, tune_error *err)
{
    tune_progress_options o = {0};
    if (options)
        o = *options;
    return render(s, o.columns, o.max_rows == 0 ? DEFAULT_ROWS : o.max_rows,
                  o.width > 0 ? o.width : 0, ret_text, err);
}

tune_status tune_study_progress_text(tune_study *s, int max_rows, char **ret_text, tune_error *err)
{
    return render(s, NULL, max_rows > 0 ? max_rows : -1, 0, ret_text, err);
}

tune_status tune_study_check_columns(tune_study *s, const char *columns, tune_error *err)
{
    if (!s)
        return tunep_error_set(err, TUNE_EINVAL, "study must not be NULL");
    pthread_mutex_lock(&s->lock);
    struct layout l;
    tune_status st = layout_columns(s, columns, &l, err);
    if (st == TUNE_OK && l.unreported[0])
        st = tunep_error_set(err, TUNE_ENOTFOUND,
                             "no trial reported the metric(s) %s that --columns names",
                             l.unreported);
    pthread_mutex_unlock(&s->lock);
    layout_done(&l);
    return st;
}

tune_status tune_study_progress_line(tune_study *s, char **ret_text, tune_error *err)
{
    if (!s || !ret_text)
        return tunep_error_set(err, TUNE_EINVAL, "study and ret_text must not be NULL");
    struct tunep_buf b;
    tunep_buf_init(&b);
    pthread_mutex_lock(&s->lock);
    int64_t pending = s->counts[TUNE_TRIAL_PENDING] + (s->total_trials - s->n_trials);
    tunep_buf_printf(
        &b, "%s: %lld pending, %lld running, %lld terminated, %lld stopped, %lld error",
        s->cfg.name, (long long)pending, (long long)s->counts[TUNE_TRIAL_RUNNING],
        (long long)s->counts[TUNE_TRIAL_TERMINATED], (long long)s->counts[TUNE_TRIAL_STOPPED],
        (long long)s->counts[TUNE_TRIAL_ERROR]);
    if (s->counts[TUNE_TRIAL_PAUSED] > 0)
        tunep_buf_printf(&b, ", %lld paused", (long long)s->counts[TUNE_TRIAL_PAUSED]);
    int64_t best = tunep_study_best_trial(s);
    if (best >= 0)
        tunep_buf_printf(&b, "; best trial %lld %s=%.6g", (long long)best, s->cfg.metric,
                         metric_of(s, s->trials[best], s->cfg.metric));
    else
        tunep_buf_printf(&b, "; no %s reported yet", s->cfg.metric);
    pthread_mutex_unlock(&s->lock);
    return finish_text(tunep_buf_take(&b), 0, ret_text, err);
}
