/*
 * report_html.c - report.html: one self-contained page that shows a sweep.
 *
 * The summary (best trial and its config, counts by status, compute, wall
 * time, scheduler) is HTML written here, readable without scripts. What is
 * plotted travels as one JSON document in a <script type="application/json">
 * element, which the inline script (store/report/report.js, with its style
 * in report.css; both pasted in at build time by scripts/embed.c) draws
 * through its one entry point, window.tuneReport(D), which a live page may
 * call again with a newer document (so fields are added, never renamed),
 * as SVG: the learning curve of every trial with ASHA's rung milestones, each
 * parameter against the final metric (log axes for log domains), parallel
 * coordinates, and a sortable table of trials. Nothing is fetched (no
 * network, fonts or external scripts), so the file can be mailed or opened
 * offline.
 *
 * What the page adds to the store's rows is computed here: the importance
 * of each hyperparameter by fANOVA (search/importance.c) over the TERMINATED
 * trials, per metric of the table (the first REPORT_IMPORTANCE_METRICS), with
 * the experiment's seed, so the same store gives the same page; and, for
 * several objectives, the Pareto front of the finished trials and its
 * hypervolume after each of them (search/pareto.c), with the reference point
 * tunep_pareto_reference() chooses.
 *
 * Size and speed: one JSON row per trial (parameters and last metrics
 * exact, as in results.csv); per report of its last attempt, an (iteration,
 * value) pair of the main metric ("curves", kept for pages that read only
 * it); and per attempt, every report's iteration, time_total_s and value of
 * every table metric with 6 significant digits ("series"), which is all a
 * plot can show. Measured on the 2-core dev VM under load: 1,000 trials of
 * ASHA over 10 iterations give 278 kB, drawn by Chromium in 0.4 to 0.7 s;
 * 1,000 trials of 100 reports of two metrics (FIFO) give 4.6 MB
 * (tests/cli/test_report.sh holds a 1,000-trial page to at most 5 MB, drawn
 * and loaded in under 2 s). The table shows its first 200 rows until asked
 * for all, which keeps the first drawing of a big sweep short.
 *
 * Escaping: every string from the store (names, parameter values, error
 * texts) goes through html_text() in HTML and json_string() in the JSON. The
 * latter writes '<', '>' and '&' as \u003c, \u003e, \u0026, so no stored text
 * can end the script element ("</script>" in a parameter stays data), and the
 * script builds markup only through tag() and esc(), which escape everything.
 *
 * The library never prints: failures are tune_status with the file as
 * err->source. The page goes through the atomic writer (base/file_io.h), so
 * a crash leaves the previous report or the new one; it is written only to a
 * regular file or to "-" (standard output), never over the store's own files
 * (tunep_store_output_open).
 */
#include "store/report_html.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/file_io.h"
#include "base/text.h"
#include "config/config.h"
#include "schedulers/scheduler.h"
#include "search/importance.h"
#include "search/pareto.h"
/* report_css and report_js: store/report/report.css and report.js, embedded at build time. */
#include "report_assets.h"

/* Metric columns of the table, the main one included; more are in results.csv only. */
#define REPORT_MAX_METRICS 32

struct report {
    const char *path; /* the output file, for errors */
    tune_error *err;
    const char *metric;
    double sign; /* +1 for mode max, -1 for min: larger sign * value is better */
    /* The table's metric columns: the main metric first, then the others in
     * order of first appearance (a linear search: at most REPORT_MAX_METRICS). */
    char *metrics[REPORT_MAX_METRICS];
    size_t n_metrics;
    int metrics_truncated;
    int64_t counts[TUNE_TRIAL_STATUS_COUNT];
    int64_t n_trials;
    int64_t best_id; /* -1 until a trial has a metric */
    double best_score, best_value;
    tune_trial_status best_status;
    int64_t best_iteration;
    double compute_s, first_start, last_end; /* NaN until seen */
    struct tunep_buf json;                   /* the data document */
    struct tunep_buf best_html;              /* the best trial's config, for the summary */
    int first_row;
    int64_t curve_trial; /* the trial whose curve is open, or -1 */
    double t0;           /* the first trial's start: trial times are written from it */
    /* The stored config, parsed: the space places values for the importance. */
    struct tunep_config cfg;
    int cfg_ok;
    long *space_of; /* [n_space_of stored params]: the parameter's index in cfg.space, or -1 */
    size_t n_space_of;
    /* The finished (TERMINATED) trials: configurations in space order and last metric values. */
    struct tunep_value *fin_cfg; /* [cap * cfg.space->n] */
    double *fin_y;               /* [cap * REPORT_MAX_METRICS] */
    size_t n_fin, cap_fin;
    /* Several objectives (cfg.n_objectives > 1): the finished trials (TERMINATED or
     * STOPPED) that reported at least one, in id order, and their last values. */
    size_t n_obj;
    int obj_max[TUNEP_MAX_OBJECTIVES];
    int64_t *obj_id;
    double *obj_y; /* [cap_obj * n_obj], each in its own direction; NaN: not reported */
    size_t n_objfin, cap_obj;
    size_t n_front; /* trials on the Pareto front */
    /* The series pass: the reports of one (trial, attempt) until it changes. */
    int64_t ser_trial;
    int ser_attempt;
    size_t ser_n, ser_cap;
    int64_t *ser_it;
    double *ser_t, *ser_v; /* [ser_cap], [ser_cap * REPORT_MAX_METRICS] */
    int ser_first;
};

/* ---- text output ----------------------------------------------------------- */

static void html_text(struct tunep_buf *b, const char *s)
{
    const char *run = s;
    for (; *s; s++) {
        const char *rep;
        switch (*s) {
            case '&': rep = "&amp;"; break;
            case '<': rep = "&lt;"; break;
            case '>': rep = "&gt;"; break;
            case '"': rep = "&quot;"; break;
            case '\'': rep = "&#39;"; break;
            default: continue;
        }
        tunep_buf_append(b, run, (size_t)(s - run));
        tunep_buf_puts(b, rep);
        run = s + 1;
    }
    tunep_buf_puts(b, run);
}

/*
 * A JSON string that is also safe inside <script>: control characters, '<',
 * '>' and '&' as \u00XX, and U+2028/U+2029 escaped (JavaScript before ES2019
 * read them as line ends). Bytes that are not UTF-8 pass through; the page's
 * decoder turns them into U+FFFD.
 */
static void json_string(struct tunep_buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    tunep_buf_append(b, "\"", 1);
    const char *run = s;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char u[8];
        const char *rep = u;
        size_t skip = 0;
        if (*p == '"') {
            rep = "\\\"";
        } else if (*p == '\\') {
            rep = "\\\\";
        } else if (*p == '\n') {
            rep = "\\n";
        } else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&' || *p == 0x7f) {
            snprintf(u, sizeof u, "\\u00%c%c", hex[*p >> 4], hex[*p & 15]);
        } else if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
            rep = p[2] == 0xa8 ? "\\u2028" : "\\u2029";
            skip = 2;
        } else {
            continue;
        }
        tunep_buf_append(b, run, (size_t)((const char *)p - run));
        tunep_buf_puts(b, rep);
        p += skip;
        run = (const char *)p + 1;
    }
    tunep_buf_puts(b, run);
    tunep_buf_append(b, "\"", 1);
}

/* v with 6 significant digits: the nearest double to a 6-digit decimal, which
 * tunep_format_double() then prints short ("0.830939"), whatever the locale. */
static double round6(double v)
{
    if (!isfinite(v) || v == 0)
        return v;
    int k = 5 - (int)floor(log10(fabs(v)));
    if (k > 22 || k < -22) /* 10^k is exact only up to 10^22 */
        return v;
    double p = pow(10.0, (double)abs(k));
    return k >= 0 ? round(v * p) / p : round(v / p) * p;
}

/* A JSON number (tunep_json_put_number): exact, or with 6 digits. */
static void json_number(struct tunep_buf *b, double v, int short_form)
{
    tunep_json_put_number(b, short_form ? round6(v) : v);
}

static void json_value(struct tunep_buf *b, const struct tunep_value *v)
{
    switch (v->type) {
        case TUNEP_V_DOUBLE: json_number(b, v->u.d, 0); return;
        case TUNEP_V_INT: tunep_buf_printf(b, "%" PRId64, v->u.i); return;
        case TUNEP_V_STRING: json_string(b, v->u.s ? v->u.s : ""); return;
        case TUNEP_V_BOOL: tunep_buf_puts(b, v->u.b ? "true" : "false"); return;
        case TUNEP_V_ABSENT: break;
    }
    tunep_buf_puts(b, "null");
}

/* A number for people: 6 digits, "-" for NaN. */
static void html_number(struct tunep_buf *b, double v)
{
    char num[40];
    if (isnan(v)) {
        tunep_buf_puts(b, "-");
        return;
    }
    tunep_format_double(num, sizeof num, round6(v));
    tunep_buf_puts(b, num);
}

static void html_value(struct tunep_buf *b, const struct tunep_value *v)
{
    switch (v->type) {
        case TUNEP_V_DOUBLE: html_number(b, v->u.d); return;
        case TUNEP_V_INT: tunep_buf_printf(b, "%" PRId64, v->u.i); return;
        case TUNEP_V_STRING: html_text(b, v->u.s ? v->u.s : ""); return;
        case TUNEP_V_BOOL: tunep_buf_puts(b, v->u.b ? "true" : "false"); return;
        case TUNEP_V_ABSENT: return; /* an empty cell */
    }
}

/* "950 ms", "12.3 s", "4 min 05 s", "2 h 07 min"; integers and tunep_format_double
 * only, since printf's %f would follow LC_NUMERIC. */
static void html_duration(struct tunep_buf *b, double s)
{
    char num[40];
    if (!isfinite(s) || s < 0) {
        tunep_buf_puts(b, "-");
    } else if (s < 1) {
        tunep_format_double(num, sizeof num, round(s * 1000));
        tunep_buf_printf(b, "%s ms", num);
    } else if (s < 60) {
        tunep_format_double(num, sizeof num, round(s * 10) / 10);
        tunep_buf_printf(b, "%s s", num);
    } else if (s < 3600) {
        long t = lround(s);
        tunep_buf_printf(b, "%ld min %02ld s", t / 60, t % 60);
    } else {
        long t = lround(s / 60);
        tunep_buf_printf(b, "%ld h %02ld min", t / 60, t % 60);
    }
}

/* ---- reading the store ------------------------------------------------------ */

/* Adds a metric column when it is new and there is room; TUNE_ENOMEM on OOM. */
static tune_status add_metric(struct report *r, const char *name)
{
    for (size_t i = 0; i < r->n_metrics; i++)
        if (strcmp(r->metrics[i], name) == 0)
            return TUNE_OK;
    if (r->n_metrics == REPORT_MAX_METRICS) {
        r->metrics_truncated = 1;
        return TUNE_OK;
    }
    if (!(r->metrics[r->n_metrics] = tunep_strdup(name)))
        return tunep_error_set_at(r->err, TUNE_ENOMEM, r->path, 0, 0, "out of memory");
    r->n_metrics++;
    return TUNE_OK;
}

/* The value of name among a report's metrics, or NaN. */
static double metric_of(const char *name, size_t n, const char *const *names, const double *values)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return values[i];
    return (double)NAN;
}

/* Pass 1: counts, compute, the best trial (as tunep_study_best_trial()) and the metric columns. */
static tune_status summary_trial(void *ud, const struct tunep_stored_trial *t)
{
    struct report *r = ud;
    r->n_trials++;
    if ((int)t->status >= 0 && t->status < TUNE_TRIAL_STATUS_COUNT)
        r->counts[t->status]++;
    if (isfinite(t->time_total_s))
        r->compute_s += t->time_total_s;
    if (isfinite(t->start_time) && !(t->start_time >= r->first_start))
        r->first_start = t->start_time;
    if (isfinite(t->end_time) && !(t->end_time <= r->last_end))
        r->last_end = t->end_time;
    for (size_t i = 0; i < t->n_metrics; i++) {
        tune_status rs = add_metric(r, t->metric_names[i]);
        if (rs)
            return rs;
    }
    /* An errored trial's last value comes from an attempt that failed. */
    double v = metric_of(r->metric, t->n_metrics, t->metric_names, t->metric_values);
    if (t->status != TUNE_TRIAL_ERROR && !isnan(v) &&
        (r->best_id < 0 || r->sign * v > r->best_score)) {
        r->best_id = t->trial_id;
        r->best_score = r->sign * v;
        r->best_value = v;
        r->best_status = t->status;
        r->best_iteration = t->iteration;
    }
    return TUNE_OK;
}

/* The best trial's configuration as "name = value" lines of the summary. */
static void best_config_html(struct report *r, const struct tunep_stored_trial *t)
{
    struct tunep_buf *b = &r->best_html;
    for (size_t i = 0; i < t->n_params; i++) {
        tunep_buf_puts(b, i ? "<br><code>" : "<code>");
        html_text(b, t->param_names[i]);
        tunep_buf_puts(b, "</code> = <code>");
        html_value(b, &t->params[i]);
        tunep_buf_puts(b, "</code>");
    }
    if (t->n_params == 0)
        tunep_buf_puts(b, "(no parameters)");
}

/* A stored value in the space's terms: a string becomes the space's own copy of
 * that choice (the stored one lives only during the callback), or "" when the
 * parameter has no such value. */
static struct tunep_value space_value(const struct tunep_param *p, const struct tunep_value *v)
{
    struct tunep_value out = *v;
    if (v->type != TUNEP_V_STRING)
        return out;
    out.u.s = "";
    for (size_t k = 0; k < p->n_values; k++)
        if (p->values[k].type == TUNEP_V_STRING && v->u.s && strcmp(p->values[k].u.s, v->u.s) == 0)
            out.u.s = p->values[k].u.s;
    return out;
}

/* Keeps a TERMINATED trial's configuration and last metric values for the importance. */
static tune_status keep_finished(struct report *r, const struct tunep_stored_trial *t)
{
    if (!r->cfg_ok || t->status != TUNE_TRIAL_TERMINATED || !r->space_of)
        return TUNE_OK;
    const tune_space *sp = r->cfg.space;
    if (r->n_fin == r->cap_fin) {
        size_t cap = r->cap_fin ? 2 * r->cap_fin : 64;
        struct tunep_value *c =
            tunep_realloc(r->fin_cfg, r->cap_fin * sp->n * sizeof *c, cap * sp->n * sizeof *c + 1);
        if (!c)
            return TUNE_ENOMEM;
        r->fin_cfg = c;
        double *y = tunep_realloc(r->fin_y, r->cap_fin * REPORT_MAX_METRICS * sizeof *y,
                                  cap * REPORT_MAX_METRICS * sizeof *y);
        if (!y)
            return TUNE_ENOMEM;
        r->fin_y = y;
        r->cap_fin = cap;
    }
    struct tunep_value *row = r->fin_cfg + r->n_fin * sp->n;
    for (size_t i = 0; i < sp->n; i++)
        row[i] = sp->params[i].n_values ? sp->params[i].values[0]
                                        : (struct tunep_value){TUNEP_V_DOUBLE, {.d = 0}};
    for (size_t i = 0; i < t->n_params && i < r->n_space_of; i++)
        if (r->space_of[i] >= 0)
            row[r->space_of[i]] = space_value(&sp->params[r->space_of[i]], &t->params[i]);
    for (size_t k = 0; k < r->n_metrics; k++)
        r->fin_y[r->n_fin * REPORT_MAX_METRICS + k] =
            metric_of(r->metrics[k], t->n_metrics, t->metric_names, t->metric_values);
    r->n_fin++;
    return TUNE_OK;
}

/* Keeps a finished trial's last value of each objective, for the Pareto front. */
static tune_status keep_objectives(struct report *r, const struct tunep_stored_trial *t)
{
    if (r->n_obj < 2 || (t->status != TUNE_TRIAL_TERMINATED && t->status != TUNE_TRIAL_STOPPED))
        return TUNE_OK;
    double v[TUNEP_MAX_OBJECTIVES];
    size_t have = 0;
    for (size_t j = 0; j < r->n_obj; j++) {
        v[j] = metric_of(r->cfg.objectives[j], t->n_metrics, t->metric_names, t->metric_values);
        have += !isnan(v[j]);
    }
    if (!have)
        return TUNE_OK;
    if (r->n_objfin == r->cap_obj) {
        size_t cap = r->cap_obj ? 2 * r->cap_obj : 64;
        int64_t *id = tunep_realloc(r->obj_id, r->cap_obj * sizeof *id, cap * sizeof *id);
        if (!id)
            return TUNE_ENOMEM;
        r->obj_id = id;
        double *y =
            tunep_realloc(r->obj_y, r->cap_obj * r->n_obj * sizeof *y, cap * r->n_obj * sizeof *y);
        if (!y)
            return TUNE_ENOMEM;
        r->obj_y = y;
        r->cap_obj = cap;
    }
    r->obj_id[r->n_objfin] = t->trial_id;
    memcpy(r->obj_y + r->n_objfin * r->n_obj, v, r->n_obj * sizeof *v);
    r->n_objfin++;
    return TUNE_OK;
}

/* Pass 2: one row per trial: [id, status, iteration, time_total_s, [params], [metrics], error,
 * attempt, start, end] (start and end in seconds from the first trial's start, t0). */
static tune_status trial_row(void *ud, const struct tunep_stored_trial *t)
{
    struct report *r = ud;
    struct tunep_buf *b = &r->json;
    tunep_buf_printf(b, "%s\n[%" PRId64 ",%d,%" PRId64 ",", r->first_row ? "" : ",", t->trial_id,
                     (int)t->status, t->iteration);
    r->first_row = 0;
    json_number(b, t->time_total_s, 0);
    tunep_buf_puts(b, ",[");
    for (size_t i = 0; i < t->n_params; i++) {
        if (i)
            tunep_buf_append(b, ",", 1);
        json_value(b, &t->params[i]);
    }
    tunep_buf_puts(b, "],[");
    for (size_t k = 0; k < r->n_metrics; k++) {
        if (k)
            tunep_buf_append(b, ",", 1);
        json_number(b, metric_of(r->metrics[k], t->n_metrics, t->metric_names, t->metric_values),
                    0);
    }
    tunep_buf_puts(b, "],");
    if (t->error)
        json_string(b, t->error);
    else
        tunep_buf_puts(b, "null");
    tunep_buf_printf(b, ",%d,", t->attempt);
    json_number(b, t->start_time - r->t0, 1);
    tunep_buf_puts(b, ",");
    json_number(b, t->end_time - r->t0, 1);
    tunep_buf_puts(b, "]");
    if (t->trial_id == r->best_id)
        best_config_html(r, t);
    if (keep_finished(r, t) || keep_objectives(r, t))
        return TUNE_ENOMEM;
    return b->oom ? TUNE_ENOMEM : TUNE_OK;
}

/* Pass 3: per trial [id, it, value, it, value, ...] of the main metric, last attempt only. */
static tune_status curve_point(void *ud, int64_t trial_id, int attempt, int64_t iteration,
                               double time_total_s, size_t n, const char *const *names,
                               const double *values)
{
    struct report *r = ud;
    struct tunep_buf *b = &r->json;
    (void)attempt, (void)time_total_s;
    if (trial_id != r->curve_trial) {
        tunep_buf_printf(b, "%s\n[%" PRId64, r->curve_trial < 0 ? "" : "],", trial_id);
        r->curve_trial = trial_id;
    }
    tunep_buf_printf(b, ",%" PRId64 ",", iteration);
    json_number(b, metric_of(r->metric, n, names, values), 1);
    return b->oom ? TUNE_ENOMEM : TUNE_OK;
}

/* Writes the open (trial, attempt) series: [id, attempt, [iterations], [time_total_s],
 * [[values of metric 0], ...]], a metric that no report of it holds as null. */
static void series_flush(struct report *r)
{
    struct tunep_buf *b = &r->json;
    if (!r->ser_n)
        return;
    tunep_buf_printf(b, "%s\n[%" PRId64 ",%d,[", r->ser_first ? "" : ",", r->ser_trial,
                     r->ser_attempt);
    r->ser_first = 0;
    for (size_t i = 0; i < r->ser_n; i++)
        tunep_buf_printf(b, "%s%" PRId64, i ? "," : "", r->ser_it[i]);
    tunep_buf_puts(b, "],[");
    for (size_t i = 0; i < r->ser_n; i++) {
        if (i)
            tunep_buf_append(b, ",", 1);
        json_number(b, r->ser_t[i], 1);
    }
    tunep_buf_puts(b, "],[");
    for (size_t k = 0; k < r->n_metrics; k++) {
        size_t any = 0;
        for (size_t i = 0; i < r->ser_n; i++)
            any += !isnan(r->ser_v[i * REPORT_MAX_METRICS + k]);
        tunep_buf_puts(b, k ? (any ? ",[" : ",null") : (any ? "[" : "null"));
        for (size_t i = 0; any && i < r->ser_n; i++) {
            if (i)
                tunep_buf_append(b, ",", 1);
            json_number(b, r->ser_v[i * REPORT_MAX_METRICS + k], 1);
        }
        if (any)
            tunep_buf_puts(b, "]");
    }
    tunep_buf_puts(b, "]]");
    r->ser_n = 0;
}

/* Pass 4: every report of every attempt, every metric of the table. */
static tune_status series_point(void *ud, int64_t trial_id, int attempt, int64_t iteration,
                                double time_total_s, size_t n, const char *const *names,
                                const double *values)
{
    struct report *r = ud;
    if (trial_id != r->ser_trial || attempt != r->ser_attempt) {
        series_flush(r);
        r->ser_trial = trial_id;
        r->ser_attempt = attempt;
    }
    if (r->ser_n == r->ser_cap) {
        size_t cap = r->ser_cap ? 2 * r->ser_cap : 64;
        int64_t *it = tunep_realloc(r->ser_it, r->ser_cap * sizeof *it, cap * sizeof *it);
        if (!it)
            return TUNE_ENOMEM;
        r->ser_it = it;
        double *t = tunep_realloc(r->ser_t, r->ser_cap * sizeof *t, cap * sizeof *t);
        if (!t)
            return TUNE_ENOMEM;
        r->ser_t = t;
        double *v = tunep_realloc(r->ser_v, r->ser_cap * REPORT_MAX_METRICS * sizeof *v,
                                  cap * REPORT_MAX_METRICS * sizeof *v);
        if (!v)
            return TUNE_ENOMEM;
        r->ser_v = v;
        r->ser_cap = cap;
    }
    size_t i = r->ser_n++;
    r->ser_it[i] = iteration;
    r->ser_t[i] = time_total_s;
    for (size_t k = 0; k < r->n_metrics; k++)
        r->ser_v[i * REPORT_MAX_METRICS + k] = metric_of(r->metrics[k], n, names, values);
    return r->json.oom ? TUNE_ENOMEM : TUNE_OK;
}

/* ---- several objectives: the Pareto front and its hypervolume ---------------- */

/* The cap on the sum of k^(m-1) over the hypervolume's recomputations (k: the
 * front's size): it bounds the page's cost for three or more objectives, where
 * the exact hypervolume grows as k^(m-1); two objectives stay far below it. */
#define REPORT_HV_WORK_MAX 2e8

/* "pareto" (several objectives only): the objectives and their modes; the finished
 * trials that reported one ("trials", ids in order) with their last values ("values",
 * null where missing); the front's trial ids in id order (the trials tune best
 * lists); the reference point in the objectives' own directions and the
 * rule that chose it; the front's hypervolume after each of those trials, null past
 * the work cap ("hypervolume_complete" false then). */
static tune_status pareto_json(struct report *r)
{
    struct tunep_buf *b = &r->json;
    size_t n = r->n_objfin, m = r->n_obj;
    if (m < 2)
        return TUNE_OK;
    double *y = tunep_malloc((n * m + 1) * sizeof *y);
    double *hv = tunep_malloc((n + 1) * sizeof *hv);
    int *front = tunep_malloc((n + 1) * sizeof *front);
    double ref[TUNEP_MAX_OBJECTIVES];
    size_t done = 0;
    tune_status st = TUNE_OK;
    if (!y || !hv || !front) {
        st = TUNE_ENOMEM;
        goto out;
    }
    tunep_pareto_minimize(r->obj_y, n, m, r->obj_max, y);
    tunep_pareto_front(y, n, m, front);
    tunep_pareto_reference(y, n, m, ref);
    if ((st =
             tunep_pareto_hypervolume_history(y, n, m, ref, REPORT_HV_WORK_MAX, hv, &done, r->err)))
        goto out;
    tunep_buf_puts(b, ",\n\"pareto\":{\"objectives\":[");
    for (size_t j = 0; j < m; j++) {
        tunep_buf_puts(b, j ? "," : "");
        json_string(b, r->cfg.objectives[j]);
    }
    tunep_buf_puts(b, "],\"modes\":[");
    for (size_t j = 0; j < m; j++)
        tunep_buf_puts(b,
                       r->obj_max[j] ? (j ? ",\"max\"" : "\"max\"") : (j ? ",\"min\"" : "\"min\""));
    tunep_buf_puts(b, "],\"from\":\"TERMINATED and STOPPED\",\"trials\":[");
    for (size_t i = 0; i < n; i++)
        tunep_buf_printf(b, "%s%" PRId64, i ? "," : "", r->obj_id[i]);
    tunep_buf_puts(b, "],\n\"values\":[");
    for (size_t i = 0; i < n; i++) {
        tunep_buf_puts(b, i ? ",[" : "[");
        for (size_t j = 0; j < m; j++) {
            tunep_buf_puts(b, j ? "," : "");
            json_number(b, r->obj_y[i * m + j], 0);
        }
        tunep_buf_puts(b, "]");
    }
    tunep_buf_puts(b, "],\n\"front\":[");
    size_t f = 0;
    for (size_t i = 0; i < n; i++)
        if (front[i])
            tunep_buf_printf(b, "%s%" PRId64, f++ ? "," : "", r->obj_id[i]);
    r->n_front = f;
    tunep_buf_puts(b, "],\"reference\":[");
    for (size_t j = 0; j < m; j++) {
        tunep_buf_puts(b, j ? "," : "");
        json_number(b, r->obj_max[j] ? -ref[j] : ref[j], 0);
    }
    tunep_buf_puts(b, "],\"reference_rule\":\"each objective's worst value among the finished "
                      "trials, a tenth of their range further\",\n\"hypervolume\":[");
    for (size_t i = 0; i < n; i++) {
        tunep_buf_puts(b, i ? "," : "");
        json_number(b, hv[i], 0);
    }
    tunep_buf_printf(b, "],\"hypervolume_complete\":%s}", done == n ? "true" : "false");
out:
    tunep_free(y);
    tunep_free(hv);
    tunep_free(front);
    return st ? st : b->oom ? TUNE_ENOMEM : TUNE_OK;
}

/* ---- hyperparameter importance ---------------------------------------------- */

/* Metrics whose importance is computed (the main one first); pairs kept per metric. */
#define REPORT_IMPORTANCE_METRICS 8
#define REPORT_IMPORTANCE_PAIRS   10

/* "importance": fANOVA over the finished trials, per metric of the table (the first
 * REPORT_IMPORTANCE_METRICS): each parameter's main-effect share of the variance
 * (null for constants), in D.params order, and the largest pairwise interactions. */
static tune_status importance_json(struct report *r, uint64_t seed)
{
    struct tunep_buf *b = &r->json;
    struct tunep_importance_config c;
    tunep_importance_config_default(&c);
    c.seed = seed;
    tunep_buf_printf(b,
                     ",\n\"importance\":{\"method\":\"fANOVA\",\"trees\":%d,"
                     "\"max_depth\":%d,\"seed\":%" PRIu64 ",\"from\":\"TERMINATED\","
                     "\"n_finished\":%zu,\"by_metric\":[",
                     c.n_trees, c.max_depth, seed, r->n_fin);
    double *y = tunep_malloc((r->n_fin + 1) * sizeof *y);
    if (!y)
        return TUNE_ENOMEM;
    tune_status rs = TUNE_OK;
    for (size_t k = 0; k < r->n_metrics && k < REPORT_IMPORTANCE_METRICS; k++) {
        struct tunep_importance imp = {0};
        tune_error e = {0};
        size_t n_ok = 0;
        for (size_t i = 0; i < r->n_fin; i++) {
            y[i] = r->fin_y[i * REPORT_MAX_METRICS + k];
            n_ok += isfinite(y[i]) != 0;
        }
        tunep_buf_puts(b, k ? ",\n{\"metric\":" : "\n{\"metric\":");
        json_string(b, r->metrics[k]);
        tunep_buf_printf(b, ",\"n_trials\":%zu", n_ok);
        if (!r->cfg_ok || !r->space_of) {
            tunep_buf_puts(b, ",\"error\":\"the stored config does not validate here\"}");
            continue;
        }
        rs = tunep_importance_fanova(r->cfg.space, r->fin_cfg, y, r->n_fin, &c, &imp, &e);
        if (rs == TUNE_ENOMEM)
            break;
        if (rs) {
            tunep_buf_puts(b, ",\"error\":");
            json_string(b, e.text);
            tunep_buf_puts(b, "}");
            rs = TUNE_OK;
            continue;
        }
        tunep_buf_printf(b, ",\"n_trees\":%d,\"params\":[", imp.n_trees);
        for (size_t i = 0; i < r->n_space_of; i++) {
            long j = r->space_of[i];
            if (i)
                tunep_buf_append(b, ",", 1);
            json_number(b, j >= 0 ? imp.importance[j] : (double)NAN, 1);
        }
        tunep_buf_puts(b, "],\"sd\":[");
        for (size_t i = 0; i < r->n_space_of; i++) {
            long j = r->space_of[i];
            if (i)
                tunep_buf_append(b, ",", 1);
            json_number(b, j >= 0 ? imp.sd[j] : (double)NAN, 1);
        }
        /* The largest interactions, as [a, b, share] with a, b indices into D.params. */
        tunep_buf_puts(b, "],\"pairs\":[");
        int used[REPORT_IMPORTANCE_PAIRS];
        size_t n_used = 0, n_written = 0;
        while (n_used < REPORT_IMPORTANCE_PAIRS) {
            long best = -1;
            for (size_t p = 0; p < imp.n_pairs; p++) {
                int taken = 0;
                for (size_t q = 0; q < n_used; q++)
                    taken |= used[q] == (int)p;
                if (!taken && (best < 0 || imp.pairs[p].importance > imp.pairs[best].importance))
                    best = (long)p;
            }
            if (best < 0)
                break;
            used[n_used] = (int)best;
            long a = -1, bb = -1;
            for (size_t i = 0; i < r->n_space_of; i++) {
                if (r->space_of[i] == (long)imp.pairs[best].a)
                    a = (long)i;
                if (r->space_of[i] == (long)imp.pairs[best].b)
                    bb = (long)i;
            }
            if (a >= 0 && bb >= 0) {
                tunep_buf_printf(b, "%s[%ld,%ld,", n_written++ ? "," : "", a, bb);
                json_number(b, imp.pairs[best].importance, 1);
                tunep_buf_puts(b, "]");
            }
            n_used++;
        }
        tunep_buf_puts(b, "]}");
        tunep_importance_done(&imp);
    }
    tunep_buf_puts(b, "]}");
    tunep_free(y);
    return rs;
}

/* ---- the page --------------------------------------------------------------- */

/* Rung milestones the curves can mark: the same 64 a trial's rung mask holds at most. */
#define REPORT_MAX_RUNGS 64

/* The scheduler line of the summary (its row's summary and rungs), the searcher line,
 * and in the data: "rungs" (the milestones, in time_attr units), "time_attr" (the
 * scheduler's time attribute), "searcher" and "scheduler" ({name, seed or summary}). */
static void scheduler_info(const struct report *r, const struct tunep_store_experiment_row *exp,
                           struct tunep_buf *html, struct tunep_buf *search_html,
                           struct tunep_buf *json)
{
    tunep_buf_puts(json, "\"rungs\":[");
    if (!r->cfg_ok) {
        tunep_buf_puts(html, "unknown: the stored config does not validate here");
        tunep_buf_puts(search_html, "unknown: the stored config does not validate here");
        tunep_buf_printf(json,
                         "],\"time_attr\":\"training_iteration\",\"searcher\":{\"seed\":%" PRIu64
                         "},\"scheduler\":{}",
                         exp->seed);
        return;
    }
    const struct tunep_config *cfg = &r->cfg;
    const char *time_attr = tunep_scheduler_config_time_attr(&cfg->scheduler);
    const struct tunep_scheduler_type *sched = cfg->scheduler.type;
    struct tunep_buf line;
    tunep_buf_init(&line);
    if (sched->summary)
        sched->summary(cfg->scheduler.cfg, &line);
    else
        tunep_buf_puts(&line, sched->title ? sched->title : sched->name);
    html_text(html, line.data ? line.data : "");
    if (sched->rungs) {
        tunep_buf_puts(html, "; rungs at <code>");
        html_text(html, time_attr);
        tunep_buf_puts(html, "</code> = ");
        double rungs[REPORT_MAX_RUNGS];
        size_t n = sched->rungs(cfg->scheduler.cfg, rungs, REPORT_MAX_RUNGS);
        for (size_t k = 0; k < n; k++) {
            char num[40];
            tunep_format_double(num, sizeof num, rungs[k]);
            tunep_buf_printf(json, "%s%s", k ? "," : "", num);
            tunep_buf_printf(html, "%s%s", k ? ", " : "", num);
        }
    }
    tunep_buf_puts(json, "],\"time_attr\":");
    json_string(json, time_attr);
    tunep_buf_puts(json, ",\n\"scheduler\":{\"name\":");
    json_string(json, sched->name);
    tunep_buf_puts(json, ",\"summary\":");
    json_string(json, line.data ? line.data : "");
    tunep_buf_puts(json, "},\"searcher\":{\"name\":");
    json_string(json, tunep_search_algo_name(cfg->search));
    tunep_buf_puts(json, ",\"summary\":");
    tunep_buf_done(&line);
    tunep_buf_init(&line);
    tunep_config_search_summary(cfg, &line);
    json_string(json, line.data ? line.data : "");
    tunep_buf_printf(json, ",\"seed\":%" PRIu64 ",\"seed_given\":%s}", exp->seed,
                     cfg->seed_given ? "true" : "false");
    html_text(search_html, line.data ? line.data : "");
    tunep_buf_done(&line);
}

/* A status's colour in every plot, by name so that statuses added later get one too. */
static const char *status_colour(int s)
{
    static const char *const colours[][2] = {
        {"PENDING", "#8c8c8c"}, {"RUNNING", "#2ca02c"}, {"TERMINATED", "#1f77b4"},
        {"STOPPED", "#ff7f0e"}, {"ERROR", "#d62728"},   {"PAUSED", "#9467bd"},
    };
    const char *name = tune_trial_status_name((tune_trial_status)s);
    for (size_t i = 0; i < sizeof colours / sizeof *colours; i++)
        if (strcmp(colours[i][0], name) == 0)
            return colours[i][1];
    return "#17becf";
}

static void html_status_counts(struct tunep_buf *b, const struct report *r)
{
    tunep_buf_printf(b, "%" PRId64 ":", r->n_trials);
    for (int s = 0; s < TUNE_TRIAL_STATUS_COUNT; s++)
        if (r->counts[s])
            tunep_buf_printf(b, " <span class=\"st\" style=\"background:%s\">%s</span> %" PRId64,
                             status_colour(s), tune_trial_status_name((tune_trial_status)s),
                             r->counts[s]);
}

/* Writes the whole page into b from what the passes gathered. */
static void page(struct tunep_buf *b, const struct report *r,
                 const struct tunep_store_experiment_row *exp, const char *dir,
                 const struct tunep_buf *sched, const struct tunep_buf *search)
{
    const char *name = exp->name ? exp->name : "experiment";
    tunep_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                      "<meta name=\"generator\" content=\"tune ");
    html_text(b, tune_version());
    tunep_buf_puts(b, "\">\n<title>");
    html_text(b, name);
    tunep_buf_puts(b, " - tune report</title>\n<style>\n");
    tunep_buf_append(b, report_css, sizeof report_css);
    tunep_buf_puts(b, "</style>\n</head>\n<body>\n<h1>");
    html_text(b, name);
    tunep_buf_puts(b, "</h1>\n<p class=\"sub\">tune report of <code>");
    html_text(b, dir);
    tunep_buf_puts(b, "</code>");
    if (isfinite(exp->created) && exp->created > 0) {
        time_t t = (time_t)exp->created;
        struct tm tm;
        char when[64];
        if (gmtime_r(&t, &tm) && strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm) > 0)
            tunep_buf_printf(b, ", created %s", when);
    }
    if (exp->version) {
        tunep_buf_puts(b, " by tune ");
        html_text(b, exp->version);
    }
    tunep_buf_puts(b, "</p>\n<h2>Summary</h2>\n<table class=\"kv\" id=\"summary\">\n"
                      "<tr><th>metric</th><td><code>");
    html_text(b, r->metric);
    tunep_buf_printf(b, "</code> (%s)</td></tr>\n<tr><th>best trial</th><td>",
                     r->sign > 0 ? "max" : "min");
    if (r->best_id >= 0) {
        tunep_buf_printf(b, "<b>%" PRId64 "</b>: <code>", r->best_id);
        html_text(b, r->metric);
        tunep_buf_puts(b, "</code> = <b>");
        html_number(b, r->best_value);
        tunep_buf_printf(b,
                         "</b> (%s after %" PRId64 " iterations)</td></tr>\n"
                         "<tr><th>its config</th><td>",
                         tune_trial_status_name(r->best_status), r->best_iteration);
        tunep_buf_append(b, r->best_html.data ? r->best_html.data : "", r->best_html.len);
    } else {
        tunep_buf_puts(b, "none: no trial reported the metric");
    }
    if (r->n_obj > 1) {
        tunep_buf_puts(b, "</td></tr>\n<tr><th>objectives</th><td>");
        for (size_t j = 0; j < r->n_obj; j++) {
            tunep_buf_puts(b, j ? ", <code>" : "<code>");
            html_text(b, r->cfg.objectives[j]);
            tunep_buf_printf(b, "</code> (%s)", r->obj_max[j] ? "max" : "min");
        }
        tunep_buf_printf(b, "; Pareto front: %zu of %zu finished trials", r->n_front, r->n_objfin);
    }
    tunep_buf_puts(b, "</td></tr>\n<tr><th>trials</th><td>");
    html_status_counts(b, r);
    tunep_buf_puts(b, "</td></tr>\n<tr><th>compute</th><td>");
    html_duration(b, r->compute_s);
    tunep_buf_puts(b, " (sum of the trials' time_total_s)</td></tr>\n<tr><th>wall time</th><td>");
    html_duration(b, r->last_end - r->first_start);
    tunep_buf_puts(b, " (first trial start to last trial end)</td></tr>\n"
                      "<tr><th>searcher</th><td id=\"searcher\">");
    tunep_buf_append(b, search->data ? search->data : "", search->len);
    tunep_buf_printf(b, "</td></tr>\n<tr><th>seed</th><td id=\"seed\">%" PRIu64 "%s</td></tr>\n",
                     exp->seed,
                     r->cfg_ok && !r->cfg.seed_given ? " (drawn: the config gives none)" : "");
    tunep_buf_puts(b, "<tr><th>scheduler</th><td id=\"scheduler\">");
    tunep_buf_append(b, sched->data ? sched->data : "", sched->len);
    tunep_buf_puts(b, "</td></tr>\n</table>\n"
                      "<noscript><p class=\"note\">The plots and the table need JavaScript; "
                      "results.csv holds the same rows.</p></noscript>\n"
                      "<div id=\"controls\"></div>\n"
                      "<h2>Optimisation history</h2>\n<div class=\"plot\" id=\"history\"></div>\n"
                      "<p class=\"note\">Each trial's last (or best) value of the metric "
                      "against its number and against the wall time when it ended, with the best "
                      "so far.</p>\n");
    if (r->n_obj > 1)
        tunep_buf_puts(b, "<h2>Pareto front</h2>\n<div class=\"plot\" id=\"pareto\"></div>\n"
                          "<h2>Hypervolume</h2>\n<div class=\"plot\" id=\"hypervolume\"></div>\n");
    tunep_buf_puts(b, "<h2>Hyperparameter importance</h2>\n"
                      "<div class=\"plot\" id=\"importance\"></div>\n"
                      "<h2>Learning curves</h2>\n<p id=\"legend\"></p>\n"
                      "<p><button type=\"button\" id=\"logx\">log x</button></p>\n"
                      "<div class=\"plot\" id=\"curves\"></div>\n"
                      "<p class=\"note\">Each trial's metric at every report, against the "
                      "chosen time attribute; earlier attempts of a trial (before a restore "
                      "from a checkpoint, or a PBT exploit) are drawn faded and dashed; dots mark "
                      "trials stopped early or failed, dashed lines the scheduler's rung "
                      "milestones.</p>\n"
                      "<h2>Hyperparameters against the final metric</h2>\n"
                      "<div class=\"plot\" id=\"scatter\"></div>\n"
                      "<h2>Contour</h2>\n<div class=\"plot\" id=\"contour\"></div>\n"
                      "<h2>Parallel coordinates</h2>\n<div class=\"plot\" id=\"parallel\"></div>\n"
                      "<p class=\"note\">One line per trial through its parameters and final "
                      "metric (better at the top).</p>\n"
                      "<h2>Trials</h2>\n<p class=\"note\">Click a column to sort by it.</p>\n"
                      "<div id=\"table\"></div>\n"
                      "<script type=\"application/json\" id=\"tune-data\">");
    tunep_buf_append(b, r->json.data ? r->json.data : "", r->json.len);
    tunep_buf_puts(b, "</script>\n<script>\n");
    tunep_buf_append(b, report_js, sizeof report_js);
    tunep_buf_puts(b, "</script>\n</body>\n</html>\n");
}

/* Parses the stored config (the space, the searcher, the scheduler) and maps
 * the stored parameters onto the space; a config that does not validate here
 * (written by another version) leaves cfg_ok 0, and the page says so. */
static tune_status read_config(struct report *r, struct tunep_store *st,
                               const struct tunep_store_experiment_row *exp)
{
    const char *text = exp->config_json ? exp->config_json : "{}";
    if (tunep_config_parse(text, strlen(text), r->path, NULL, NULL, &r->cfg, NULL) != TUNE_OK)
        return TUNE_OK;
    r->cfg_ok = 1;
    if (r->cfg.n_objectives > 1) {
        r->n_obj = r->cfg.n_objectives;
        for (size_t j = 0; j < r->n_obj; j++)
            r->obj_max[j] = r->cfg.objectives_max[j];
    }
    size_t n = 0;
    const char *const *names = tunep_store_param_names(st, &n);
    if (!(r->space_of = tunep_malloc((n + 1) * sizeof *r->space_of)))
        return TUNE_ENOMEM;
    r->n_space_of = n;
    size_t matched = 0;
    for (size_t i = 0; i < n; i++) {
        r->space_of[i] = tunep_space_find(r->cfg.space, names[i]);
        matched += r->space_of[i] >= 0;
    }
    /* Every parameter of the space must have its stored column. */
    if (matched != r->cfg.space->n) {
        tunep_free(r->space_of);
        r->space_of = NULL;
    }
    return TUNE_OK;
}

/* The page into out (initialised by the caller); path names the page in errors. */
static tune_status build_page(struct tunep_store *st, const char *dir, const char *path,
                              struct tunep_buf *out, tune_error *err)
{
    struct tunep_store_experiment_row exp = {0};
    struct report r = {.path = path,
                       .err = err,
                       .best_id = -1,
                       .first_start = (double)NAN,
                       .last_end = (double)NAN,
                       .first_row = 1,
                       .curve_trial = -1,
                       .ser_trial = -1,
                       .ser_first = 1};
    struct tunep_buf sched, search;
    tunep_buf_init(&r.json);
    tunep_buf_init(&r.best_html);
    tunep_buf_init(&sched);
    tunep_buf_init(&search);
    tune_status rs = tunep_store_read_begin(st, err);
    if (rs)
        return rs;
    if ((rs = tunep_store_read_experiment(st, &exp, err)))
        goto out;
    r.metric = exp.metric ? exp.metric : "";
    r.sign = exp.mode && strcmp(exp.mode, "min") == 0 ? -1.0 : 1.0;
    if ((rs = add_metric(&r, r.metric)) ||
        (rs = tunep_store_foreach_trial(st, summary_trial, &r, err)) ||
        (rs = read_config(&r, st, &exp)))
        goto out;
    r.t0 = isfinite(r.first_start) ? r.first_start : 0;

    /* The data document, read by the script (report.js says what each field holds). */
    struct tunep_buf *j = &r.json;
    tunep_buf_puts(j, "{\"metric\":");
    json_string(j, r.metric);
    tunep_buf_printf(j, ",\"mode\":\"%s\",\"best\":%" PRId64 ",\"statuses\":[",
                     r.sign > 0 ? "max" : "min", r.best_id);
    for (int s = 0; s < TUNE_TRIAL_STATUS_COUNT; s++)
        tunep_buf_printf(j, "%s[\"%s\",\"%s\"]", s ? "," : "",
                         tune_trial_status_name((tune_trial_status)s), status_colour(s));
    tunep_buf_puts(j, "],\n");
    scheduler_info(&r, &exp, &sched, &search, j);
    tunep_buf_puts(j, ",\"t0\":");
    json_number(j, r.t0, 0);
    size_t n_params = 0;
    const char *const *names = tunep_store_param_names(st, &n_params);
    tunep_buf_puts(j, ",\n\"params\":[");
    for (size_t i = 0; i < n_params; i++) {
        const char *domain = tunep_store_param_domain(st, i);
        tunep_buf_puts(j, i ? ",{\"name\":" : "{\"name\":");
        json_string(j, names[i]);
        tunep_buf_puts(j, ",\"type\":");
        json_string(j, tunep_store_param_type(st, i));
        tunep_buf_puts(j, ",\"domain\":");
        if (domain)
            json_string(j, domain);
        else
            tunep_buf_puts(j, "null");
        tunep_buf_puts(j, "}");
    }
    tunep_buf_puts(j, "],\n\"metrics\":[");
    for (size_t k = 0; k < r.n_metrics; k++) {
        if (k)
            tunep_buf_append(j, ",", 1);
        json_string(j, r.metrics[k]);
    }
    tunep_buf_printf(j, "],\"metrics_truncated\":%s,\n\"trials\":[",
                     r.metrics_truncated ? "true" : "false");
    if ((rs = tunep_store_foreach_trial(st, trial_row, &r, err)))
        goto out;
    tunep_buf_puts(j, "],\n\"curves\":[");
    if ((rs = tunep_store_foreach_last_attempt_report(st, curve_point, &r, err)))
        goto out;
    tunep_buf_puts(j, r.curve_trial >= 0 ? "]]," : "],");
    tunep_buf_puts(j, "\n\"series\":[");
    if ((rs = tunep_store_foreach_report(st, series_point, &r, err)))
        goto out;
    series_flush(&r);
    tunep_buf_puts(j, "]");
    tunep_store_read_end(st);
    if ((rs = importance_json(&r, exp.seed)) || (rs = pareto_json(&r)))
        goto out;
    tunep_buf_puts(j, "}");

    page(out, &r, &exp, dir, &sched, &search);
    if (out->oom || j->oom || r.best_html.oom || sched.oom || search.oom)
        rs = tunep_error_set_at(err, TUNE_ENOMEM, path, 0, 0, "out of memory");
out:
    /* The passes' callbacks return TUNE_ENOMEM without a message. */
    if (rs == TUNE_ENOMEM)
        tunep_error_set_at(err, TUNE_ENOMEM, path, 0, 0, "out of memory");
    tunep_store_read_end(st);
    tunep_store_experiment_done(&exp);
    if (r.cfg_ok)
        tunep_config_done(&r.cfg);
    for (size_t k = 0; k < r.n_metrics; k++)
        tunep_free(r.metrics[k]);
    tunep_free(r.space_of);
    tunep_free(r.fin_cfg);
    tunep_free(r.fin_y);
    tunep_free(r.obj_id);
    tunep_free(r.obj_y);
    tunep_free(r.ser_it);
    tunep_free(r.ser_t);
    tunep_free(r.ser_v);
    tunep_buf_done(&r.json);
    tunep_buf_done(&r.best_html);
    tunep_buf_done(&sched);
    tunep_buf_done(&search);
    return rs;
}

tune_status tunep_report_html_build(struct tunep_store *st, const char *dir, char **ret_page,
                                    size_t *ret_len, tune_error *err)
{
    if (!st || !dir || !ret_page || !ret_len)
        return tunep_error_set(err, TUNE_EINVAL, "report: missing argument");
    struct tunep_buf out;
    tunep_buf_init(&out);
    tune_status rs = build_page(st, dir, dir, &out, err);
    if (rs) {
        tunep_buf_done(&out);
        return rs;
    }
    *ret_len = out.len;
    *ret_page = tunep_buf_take(&out);
    return *ret_page ? TUNE_OK : tunep_error_set(err, TUNE_ENOMEM, "report: out of memory");
}

tune_status tunep_report_html(struct tunep_store *st, const char *dir, const char *path,
                              tune_error *err)
{
    if (!st || !dir || !path)
        return tunep_error_set(err, TUNE_EINVAL, "report: missing argument");
    struct tunep_buf out;
    tunep_buf_init(&out);
    tune_status rs = build_page(st, dir, path, &out, err);
    if (!rs) {
        /* Only a regular file or "-", and never the store's own files. */
        struct tunep_atomic_file f;
        if (!(rs = tunep_store_output_open(st, &f, path, err)) &&
            !(rs = tunep_atomic_write(&f, out.data, out.len, err)))
            rs = tunep_atomic_commit(&f, err);
        tunep_atomic_abort(&f);
    }
    tunep_buf_done(&out);
    return rs;
}

tune_status tune_report_html(const char *experiment_dir, const char *out_path, tune_error *err)
{
    if (!experiment_dir)
        return tunep_error_set(err, TUNE_EINVAL, "report: experiment_dir must not be NULL");
    char *def = out_path ? NULL : tunep_asprintf("%s/report.html", experiment_dir);
    tune_status rs = TUNE_OK;
    struct tunep_store *st = NULL;
    if (!out_path && !def)
        rs = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    else if (!(rs = tunep_store_open_experiment(experiment_dir, 1, &st, NULL, err)))
        rs = tunep_report_html(st, experiment_dir, out_path ? out_path : def, err);
    tunep_store_close(st);
    tunep_free(def);
    return rs;
}
