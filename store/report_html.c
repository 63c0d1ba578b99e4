/*
 * report_html.c - report.html: one self-contained page that shows a sweep.
 *
 * The summary (best trial and its config, counts by status, compute, wall
 * time, scheduler) is HTML written here, readable without scripts. What is
 * plotted travels as one JSON document in a <script type="application/json">
 * element, which the inline script below draws as SVG: the learning curve of
 * every trial with ASHA's rung milestones, each parameter against the final
 * metric (log axes for log domains), parallel coordinates, and a sortable
 * table of trials. Nothing is fetched (no network, fonts or external
 * scripts), so the file can be mailed or opened offline.
 *
 * Size and speed: one JSON row per trial (parameters and last metrics
 * exact, as in results.csv) and, per report of its last attempt, an
 * (iteration, value) pair of the main metric with 6 significant digits, which
 * is all a plot can show. Measured on the 2-core dev VM: 1,000 trials of ASHA
 * over 10 iterations give 167 kB, drawn by Chromium in about 0.3 s; 1,000
 * trials of 100 reports each (FIFO) give 1.4 MB (issue 8 allows 5 MB and 2 s).
 * The table shows its first 200 rows until asked for all, which keeps the
 * first drawing of a big sweep short.
 *
 * Escaping: every string from the store (names, parameter values, error
 * texts) goes through html_text() in HTML and json_string() in the JSON. The
 * latter writes '<', '>' and '&' as \u003c, \u003e, \u0026, so no stored text
 * can end the script element ("</script>" in a parameter stays data), and the
 * script builds markup only through tag() and esc(), which escape everything.
 *
 * The library never prints: failures are tune_status with the output path as
 * err->source. The page is written to "<path>.tmp" and renamed into place, so
 * a crash leaves the previous report or the new one.
 */
#include "store/report_html.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "schedulers/scheduler.h"

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

/* A JSON number: exact, or with 6 digits; NaN is null, infinities 1e999 and -1e999
 * (JSON.parse reads those as Infinity, as the store's metrics do). */
static void json_number(struct tunep_buf *b, double v, int short_form)
{
    char num[40];
    if (isnan(v)) {
        tunep_buf_puts(b, "null");
    } else if (isinf(v)) {
        tunep_buf_puts(b, v > 0 ? "1e999" : "-1e999");
    } else {
        tunep_format_double(num, sizeof num, short_form ? round6(v) : v);
        tunep_buf_puts(b, num);
    }
}

static void json_value(struct tunep_buf *b, const struct tunep_value *v)
{
    switch (v->type) {
        case TUNEP_V_DOUBLE: json_number(b, v->u.d, 0); return;
        case TUNEP_V_INT: tunep_buf_printf(b, "%" PRId64, v->u.i); return;
        case TUNEP_V_STRING: json_string(b, v->u.s ? v->u.s : ""); return;
        case TUNEP_V_BOOL: tunep_buf_puts(b, v->u.b ? "true" : "false"); return;
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

/* Pass 2: one row per trial: [id, status, iteration, time_total_s, [params], [metrics], error]. */
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
    tunep_buf_puts(b, "]");
    if (t->trial_id == r->best_id)
        best_config_html(r, t);
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

/* ---- the page --------------------------------------------------------------- */

/* The inline style and script, split into pieces under C's 4095-byte literal limit. */
static const char *const report_css[] = {
    "body {\n"
    "  font: 14px/1.4 system-ui, -apple-system, \"Segoe UI\", Roboto, Arial, sans-serif;\n"
    "  margin: 0 auto; padding: 0 24px 48px; max-width: 1240px;\n"
    "  color: #1d1d1f; background: #fff;\n"
    "}\n"
    "h1 { font-size: 24px; margin: 24px 0 4px; word-break: break-word; }\n"
    "h2 { font-size: 18px; margin: 32px 0 8px; padding-bottom: 4px; }\n"
    "h2 { border-bottom: 1px solid #ccc; }\n"
    ".sub, .note { color: #555; }\n"
    "table.kv th {\n"
    "  text-align: left; vertical-align: top; padding: 3px 16px 3px 0; white-space: nowrap;\n"
    "}\n"
    "table.kv td { padding: 3px 0; word-break: break-word; }\n"
    "code { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px; }\n"
    ".st {\n"
    "  display: inline-block; color: #fff; border-radius: 3px; padding: 0 5px; font-size: 12px;\n"
    "}\n"
    "#legend span { margin-right: 14px; white-space: nowrap; }\n"
    "#legend i {\n"
    "  display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 4px;\n"
    "  vertical-align: -1px;\n"
    "}\n"
    "#legend i.bestkey { background: #fff; border: 2px solid #111; width: 9px; height: 9px; }\n"
    "#legend i.rungkey { width: 0; border-left: 2px dashed #888; border-radius: 0; }\n"
    ".plot { overflow-x: auto; }\n"
    "svg { font: 11px system-ui, sans-serif; display: block; }\n"
    "svg .ax { stroke: #444; }\n"
    "svg .gr { stroke: #eee; }\n"
    "svg .tk { fill: #444; }\n"
    "svg .lb { fill: #111; font-size: 12px; }\n"
    "svg .rung { stroke: #888; stroke-dasharray: 4 3; }\n"
    "svg .cv, svg .pc { fill: none; stroke-width: 1; }\n"
    "svg .cv.best, svg .pc.best { stroke-width: 3; stroke-opacity: 1; }\n"
    "svg circle { fill-opacity: 0.75; }\n"
    "svg circle.best { stroke: #111; stroke-width: 2; fill-opacity: 1; }\n"
    "svg path:hover { stroke-opacity: 1; stroke-width: 2.5; }\n"
    "#scatter { display: flex; flex-wrap: wrap; gap: 8px; }\n"
    "#scatter figure { margin: 0; }\n"
    "button { font: inherit; padding: 2px 10px; }\n"
    "#table { overflow: auto; max-height: 640px; border: 1px solid #ddd; }\n"
    "table.trials { border-collapse: collapse; font-size: 13px; }\n"
    "table.trials th {\n"
    "  position: sticky; top: 0; background: #f4f4f6; cursor: pointer; text-align: left;\n"
    "  padding: 4px 8px; border-bottom: 1px solid #ccc; white-space: nowrap; user-select: none;\n"
    "}\n"
    "table.trials th.asc::after { content: \" \\25B2\"; }\n"
    "table.trials th.desc::after { content: \" \\25BC\"; }\n"
    "table.trials td { padding: 2px 8px; border-bottom: 1px solid #eee; white-space: nowrap; }\n"
    "table.trials td.n { text-align: right; font-variant-numeric: tabular-nums; }\n"
    "table.trials td.err { white-space: normal; min-width: 240px; color: #a11; }\n"
    "table.trials tr.best td { background: #fff6d5; }\n"
    "#tip {\n"
    "  position: fixed; display: none; pointer-events: none; z-index: 10; padding: 2px 6px;\n"
    "  background: #222; color: #fff; border-radius: 3px; font-size: 12px; white-space: pre;\n"
    "}\n"
    "/* Parts below the first screen are laid out when scrolled to: a faster first paint. */\n"
    "#scatter, #parallel, #table {\n"
    "  content-visibility: auto; contain-intrinsic-size: auto 600px;\n"
    "}\n",
};

static const char *const report_js[] = {
    "(function () {\n"
    "'use strict';\n"
    "var D = JSON.parse(document.getElementById('tune-data').textContent);\n"
    "var T = D.trials, NP = D.params.length;\n"
    "var SN = D.statuses.map(function (s) { return s[0]; });\n"
    "var SC = D.statuses.map(function (s) { return s[1]; });\n"
    "var sign = D.mode === 'min' ? -1 : 1;\n"
    "var byId = {};\n"
    "T.forEach(function (t) { byId[t[0]] = t; });\n"
    "/* A trial row: [id, status, iterations, time_total_s, [params], [metrics], error]. */\n"
    "function final(t) { return t[5][0]; }\n"
    "function esc(s) {\n"
    "  return String(s).replace(/[&<>\"']/g, function (c) {\n"
    "    return '&#' + c.charCodeAt(0) + ';';\n"
    "  });\n"
    "}\n"
    "/* The element `name` with attrs (escaped) around body; self-closing without a body. */\n"
    "function tag(name, attrs, body) {\n"
    "  var o = '<' + name;\n"
    "  for (var k in attrs)\n"
    "    if (attrs[k] !== undefined) o += ' ' + k + '=\"' + esc(attrs[k]) + '\"';\n"
    "  return body === undefined ? o + '/>' : o + '>' + body + '<\\/' + name + '>';\n"
    "}\n"
    "function fmt(v) {\n"
    "  if (v === null || v === undefined) return '';\n"
    "  if (typeof v === 'boolean') return v ? 'true' : 'false';\n"
    "  if (typeof v !== 'number') return String(v);\n"
    "  if (!isFinite(v)) return v > 0 ? 'inf' : '-inf';\n"
    "  var a = Math.abs(v);\n"
    "  if (a !== 0 && (a < 1e-3 || a >= 1e6))\n"
    "    return v.toExponential(2).replace(/\\.?0+e/, 'e').replace('e+', 'e');\n"
    "  return String(+v.toPrecision(4));\n"
    "}\n"
    "function clip(s, n) {\n"
    "  s = String(s);\n"
    "  return s.length > n ? s.slice(0, n - 1) + '\\u2026' : s;\n"
    "}\n"
    "function fin(v) { return typeof v === 'number' && isFinite(v); }\n"
    "function r1(v) { return Math.round(v * 10) / 10; }\n"
    "/* Worse trials first, so that the better ones are drawn on top. */\n"
    "function score(t) { return t && fin(final(t)) ? sign * final(t) : -Infinity; }\n"
    "function byScore(a, b) { return score(a) - score(b) || 0; }\n"
    "/* Fainter lines as they pile up: 0.4 up to 90 lines, 0.12 at 1,000. */\n"
    "function opacity(n) {\n"
    "  return Math.max(0.08, Math.min(0.4, 3.8 / Math.sqrt(Math.max(n, 1)))).toFixed(2);\n"
    "}\n"
    "function key(v) { return typeof v + ':' + String(v); }\n"
    "/* A scale maps data to pixels [a, b]: 'lin' or 'log' over vals, or 'cat' over cats. */\n"
    "function scale(kind, vals, a, b, cats) {\n"
    "  var s = {kind: kind, a: a, b: b};\n"
    "  if (kind === 'cat') {\n"
    "    s.cats = cats;\n"
    "    s.idx = {};\n"
    "    cats.forEach(function (c, i) { s.idx[c.k] = i; });\n"
    "    s.f = function (v) {\n"
    "      var i = s.idx[key(v)];\n"
    "      return i === undefined ? NaN : a + (i + 0.5) / cats.length * (b - a);\n"
    "    };\n"
    "    return s;\n"
    "  }\n"
    "  var lo = Infinity, hi = -Infinity;\n"
    "  vals.forEach(function (v) {\n"
    "    if (!fin(v) || (kind === 'log' && !(v > 0))) return;\n"
    "    v = kind === 'log' ? Math.log10(v) : v;\n"
    "    if (v < lo) lo = v;\n"
    "    if (v > hi) hi = v;\n"
    "  });\n"
    "  if (lo > hi) { lo = 0; hi = 1; }\n"
    "  if (hi === lo) { var d = Math.abs(lo) * 0.1 || 0.5; lo -= d; hi += d; }\n"
    "  var pad = (hi - lo) * 0.04;\n"
    "  s.lo = lo - pad;\n"
    "  s.hi = hi + pad;\n"
    "  s.f = function (v) {\n"
    "    if (!fin(v) || (kind === 'log' && !(v > 0))) return NaN;\n"
    "    if (kind === 'log') v = Math.log10(v);\n"
    "    return a + (v - s.lo) / (s.hi - s.lo) * (b - a);\n"
    "  };\n"
    "  return s;\n"
    "}\n"
    "/* The distinct values of a categorical axis: numbers ascending, then strings. */\n"
    "function categories(vals) {\n"
    "  var seen = {}, out = [];\n"
    "  vals.forEach(function (v) {\n"
    "    if (v === null || v === undefined) return;\n"
    "    var k = key(v);\n"
    "    if (!seen[k]) { seen[k] = 1; out.push({k: k, v: v}); }\n"
    "  });\n"
    "  out.sort(function (x, y) {\n"
    "    var nx = typeof x.v === 'number', ny = typeof y.v === 'number';\n"
    "    if (nx && ny) return x.v - y.v;\n"
    "    if (nx !== ny) return nx ? -1 : 1;\n"
    "    return String(x.v) < String(y.v) ? -1 : String(x.v) > String(y.v) ? 1 : 0;\n"
    "  });\n"
    "  return out;\n"
    "}\n"
    "/* Tick values of a scale, in data units: powers of ten on log axes, 1-2-5 steps else. */\n"
    "function ticks(s, n) {\n"
    "  var out = [], i, v;\n"
    "  if (s.kind === 'cat') return s.cats.map(function (c) { return c.v; });\n",
    "  if (s.kind === 'log') {\n"
    "    for (i = Math.ceil(s.lo); i <= Math.floor(s.hi); i++) out.push(Math.pow(10, i));\n"
    "    if (out.length >= 2) return out;\n"
    "    out = [];\n"
    "  }\n"
    "  var step = Math.pow(10, Math.floor(Math.log10((s.hi - s.lo) / n)));\n"
    "  var err = (s.hi - s.lo) / n / step;\n"
    "  step *= err >= 5 ? 5 : err >= 2 ? 2 : 1;\n"
    "  if (s.integer && s.kind === 'lin') step = Math.max(step, 1);\n"
    "  for (v = Math.ceil(s.lo / step) * step; v <= s.hi + step * 1e-9; v += step)\n"
    "    out.push(s.kind === 'log' ? Math.pow(10, v) : +v.toPrecision(12));\n"
    "  return out;\n"
    "}\n"
    "function line(x1, y1, x2, y2, cls) {\n"
    "  return tag('line', {'class': cls, x1: r1(x1), y1: r1(y1), x2: r1(x2), y2: r1(y2)});\n"
    "}\n"
    "function text(x, y, s, cls, anchor, rotate) {\n"
    "  return tag('text', {'class': cls, x: r1(x), y: r1(y), 'text-anchor': anchor,\n"
    "                      transform: rotate}, esc(s));\n"
    "}\n"
    "/* Axes: x at the bottom, y on the left, with ticks, grid lines and labels. */\n"
    "function axes(xs, ys, w, h, m, xl, yl) {\n"
    "  var o = line(m.l, h - m.b, w - m.r, h - m.b, 'ax') + line(m.l, m.t, m.l, h - m.b, 'ax');\n"
    "  /* Category labels get the room of their category, at about 7 px per character. */\n"
    "  var room = xs.kind === 'cat' ? Math.floor((w - m.l - m.r) / xs.cats.length / 7) : 12;\n"
    "  ticks(xs, 6).forEach(function (v) {\n"
    "    var x = xs.f(v);\n"
    "    if (!(x >= m.l - 0.5 && x <= w - m.r + 0.5)) return;\n"
    "    o += line(x, h - m.b, x, h - m.b + 4, 'ax') +\n"
    "      text(x, h - m.b + 15, clip(fmt(v), Math.max(3, room)), 'tk', 'middle');\n"
    "  });\n"
    "  ticks(ys, 5).forEach(function (v) {\n"
    "    var y = ys.f(v);\n"
    "    if (!(y >= m.t - 0.5 && y <= h - m.b + 0.5)) return;\n"
    "    o += line(m.l - 4, y, m.l, y, 'ax') + line(m.l, y, w - m.r, y, 'gr') +\n"
    "      text(m.l - 6, y + 3, fmt(v), 'tk', 'end');\n"
    "  });\n"
    "  var ym = r1((m.t + h - m.b) / 2);\n"
    "  o += text((m.l + w - m.r) / 2, h - 4, clip(xl, 48), 'lb', 'middle');\n"
    "  o += text(12, ym, clip(yl, 40), 'lb', 'middle', 'rotate(-90 12 ' + ym + ')');\n"
    "  return o;\n"
    "}\n"
    "function svg(w, h, body, marks) {\n"
    "  return tag('svg', {xmlns: 'http://www.w3.org/2000/svg', width: w, height: h,\n"
    "                     viewBox: '0 0 ' + w + ' ' + h, 'data-marks': marks}, body);\n"
    "}\n"
    "function note(s) { return tag('p', {'class': 'note'}, esc(s)); }\n"
    "/* The width a plot gets: its container's, within [600, 1200] px. */\n"
    "function width(el) { return Math.max(600, Math.min(1200, el.clientWidth || 920)); }\n"
    "function nodata(el, why) {\n"
    "  el.innerHTML = note(why);\n"
    "  el.setAttribute('data-drawn', '0');\n"
    "}\n"
    "function legend(el) {\n"
    "  function entry(cls, style, label) {\n"
    "    return tag('span', {}, tag('i', {'class': cls, style: style}, '') + esc(label));\n"
    "  }\n"
    "  var n = SN.map(function () { return 0; }), o = '';\n"
    "  T.forEach(function (t) { n[t[1]]++; });\n"
    "  SN.forEach(function (s, i) {\n"
    "    if (n[i]) o += entry(undefined, 'background:' + SC[i], s + ' (' + n[i] + ')');\n"
    "  });\n"
    "  if (D.best >= 0) o += entry('bestkey', undefined, 'best: trial ' + D.best);\n"
    "  if (D.rungs.length) o += entry('rungkey', undefined, 'ASHA rung');\n"
    "  el.innerHTML = o;\n"
    "}\n"
    "/* ---- learning curves: D.curves has [id, iteration, value, iteration, value, ...] ---- */\n"
    "function curves(el, logx) {\n"
    "  var C = D.curves, xv = [], yv = [], drawn = 0, best = null, ends = '';\n"
    "  C.forEach(function (c) {\n"
    "    for (var i = 1; i + 1 < c.length; i += 2) { xv.push(c[i]); yv.push(c[i + 1]); }\n"
    "  });\n"
    "  if (!C.length) return nodata(el, 'No trial reported ' + D.metric + '.');\n"
    "  D.rungs.forEach(function (r) { xv.push(r); });\n"
    "  var w = width(el), h = 420, m = {l: 64, r: 16, t: 24, b: 42};\n"
    "  var xs = scale(logx ? 'log' : 'lin', xv, m.l, w - m.r);\n"
    "  var ys = scale('lin', yv, h - m.b, m.t);\n"
    "  var o = axes(xs, ys, w, h, m, D.time_attr + (logx ? ' (log)' : ''), D.metric);\n"
    "  D.rungs.forEach(function (r) {\n"
    "    var x = xs.f(r);\n"
    "    if (!isNaN(x))\n",
    "      o += line(x, m.t, x, h - m.b, 'rung') + text(x + 3, m.t - 6, 'rung ' + fmt(r), 'tk');\n"
    "  });\n"
    "  function path(c, t, cls) {\n"
    "    var d = '', pen = 'M', lx = NaN, ly = NaN, s = t ? t[1] : 0;\n"
    "    for (var i = 1; i + 1 < c.length; i += 2) {\n"
    "      var x = xs.f(c[i]), y = ys.f(c[i + 1]);\n"
    "      if (isNaN(x) || isNaN(y)) { pen = 'M'; continue; }\n"
    "      d += pen + r1(x) + ' ' + r1(y);\n"
    "      pen = 'L';\n"
    "      lx = x;\n"
    "      ly = y;\n"
    "    }\n"
    "    if (!d) return '';\n"
    "    if (d.indexOf('L') < 0) d += 'h0.01';\n"
    "    /* A dot where a trial stopped early or failed: it ends at its rung. */\n"
    "    if (SN[s] === 'STOPPED' || SN[s] === 'ERROR')\n"
    "      ends += tag('circle', {'class': 'end', cx: r1(lx), cy: r1(ly), r: 2.5, fill: SC[s]});\n"
    "    drawn++;\n"
    "    var tip = 'trial ' + c[0] + ' (' + SN[s] + ')';\n"
    "    if (t) tip += ': ' + fmt(final(t)) + ' after ' + t[2];\n"
    "    return tag('path', {'class': cls, stroke: SC[s], d: d, 'data-tip': tip});\n"
    "  }\n"
    "  var g = '';\n"
    "  C = C.slice().sort(function (a, b) { return byScore(byId[a[0]], byId[b[0]]); });\n"
    "  C.forEach(function (c) {\n"
    "    if (c[0] === D.best) best = c;\n"
    "    else g += path(c, byId[c[0]], 'cv');\n"
    "  });\n"
    "  o += tag('g', {'stroke-opacity': opacity(C.length)}, g) + ends;\n"
    "  if (best) o += path(best, byId[best[0]], 'cv best');\n"
    "  el.innerHTML = svg(w, h, o, drawn);\n"
    "  el.setAttribute('data-drawn', String(drawn));\n"
    "}\n"
    "/* ---- each parameter against the final metric ---- */\n"
    "/* null for constants, 'cat' for choices and non-numbers, 'log' for log domains, 'lin'. */\n"
    "function paramKind(p, j) {\n"
    "  var d = p.domain || '';\n"
    "  if (d === 'constant') return null;\n"
    "  if (p.type !== 'float' && p.type !== 'int') return 'cat';\n"
    "  if (d === 'choice' || d === 'grid_search') return 'cat';\n"
    "  if (d.indexOf('log') < 0) return 'lin';\n"
    "  for (var i = 0; i < T.length; i++)\n"
    "    if (fin(T[i][4][j]) && !(T[i][4][j] > 0)) return 'lin';\n"
    "  return 'log';\n"
    "}\n"
    "function paramScale(j, a, b) {\n"
    "  var p = D.params[j], kind = paramKind(p, j);\n"
    "  var vals = T.map(function (t) { return t[4][j]; });\n"
    "  if (!kind) return null;\n"
    "  if (kind === 'cat') return scale('cat', null, a, b, categories(vals));\n"
    "  var s = scale(kind, vals, a, b);\n"
    "  s.integer = p.type === 'int';\n"
    "  return s;\n"
    "}\n"
    "/* A fixed offset in [-0.5, 0.5) per trial, to spread points within a category. */\n"
    "function jitter(id) {\n"
    "  var x = Math.sin(id * 12.9898 + 78.233) * 43758.5453;\n"
    "  return x - Math.floor(x) - 0.5;\n"
    "}\n"
    "function scatter(el) {\n"
    "  var withm = T.filter(function (t) { return fin(final(t)); }).sort(byScore);\n"
    "  var total = 0, consts = [], html = '';\n"
    "  if (!NP) return nodata(el, 'The search space has no parameters.');\n"
    "  if (!withm.length) return nodata(el, 'No trial reported ' + D.metric + '.');\n"
    "  /* Four plots a row when they fit at 240 px or more (8 px gaps). */\n"
    "  var cw = width(el), per = Math.max(1, Math.min(4, Math.floor((cw + 8) / 248)));\n"
    "  var w = Math.min(340, Math.floor((cw + 8) / per) - 8), h = 230;\n"
    "  var m = {l: 58, r: 12, t: 12, b: 40};\n"
    "  var ys = scale('lin', withm.map(final), h - m.b, m.t);\n"
    "  D.params.forEach(function (p, j) {\n"
    "    var xs = paramScale(j, m.l, w - m.r), n = 0, bo = '';\n"
    "    if (!xs) return consts.push(p.name + ' = ' + fmt(T.length ? T[0][4][j] : ''));\n"
    "    var o = axes(xs, ys, w, h, m, p.name + (xs.kind === 'log' ? ' (log)' : ''), D.metric);\n"
    "    withm.forEach(function (t) {\n"
    "      var x = xs.f(t[4][j]), y = ys.f(final(t)), b = t[0] === D.best;\n"
    "      if (isNaN(x) || isNaN(y)) return;\n"
    "      if (xs.kind === 'cat') x += jitter(t[0]) * 0.5 * (w - m.l - m.r) / xs.cats.length;\n"
    "      var tip = 'trial ' + t[0] + ': ' + fmt(t[4][j]) + ' \\u2192 ' + fmt(final(t));\n"
    "      var c = tag('circle', {cx: r1(x), cy: r1(y), r: b ? 5 : 2.5, fill: SC[t[1]],\n"
    "                             'class': b ? 'best' : undefined, 'data-tip': tip});\n"
    "      if (b) bo = c;\n"
    "      else o += c;\n"
    "      n++;\n"
    "    });\n"
    "    total += n;\n",
    "    html += tag('figure', {}, svg(w, h, o + bo, n));\n"
    "  });\n"
    "  if (consts.length) html += note('Constant: ' + consts.join(', '));\n"
    "  el.innerHTML = html;\n"
    "  el.setAttribute('data-drawn', String(total));\n"
    "}\n"
    "/* ---- parallel coordinates: one axis per varying parameter, then the metric ---- */\n"
    "function parallel(el) {\n"
    "  var axs = [], j;\n"
    "  for (j = 0; j < NP; j++) if (paramKind(D.params[j], j)) axs.push(j);\n"
    "  axs.push(-1);\n"
    "  var withm = T.filter(function (t) { return fin(final(t)); }).sort(byScore);\n"
    "  if (!withm.length) return nodata(el, 'No trial reported ' + D.metric + '.');\n"
    "  var gap = 130, m = {l: 60, r: 60, t: 20, b: 56}, h = 380;\n"
    "  var w = Math.max(width(el), m.l + m.r + gap * (axs.length - 1));\n"
    "  if (axs.length > 1) gap = (w - m.l - m.r) / (axs.length - 1);\n"
    "  var sc = axs.map(function (j) {\n"
    "    if (j >= 0) return paramScale(j, h - m.b, m.t);\n"
    "    /* Better at the top whatever the mode. */\n"
    "    var f = withm.map(final);\n"
    "    return sign > 0 ? scale('lin', f, h - m.b, m.t) : scale('lin', f, m.t, h - m.b);\n"
    "  });\n"
    "  var o = '', bo = '', n = 0, lines = '';\n"
    "  axs.forEach(function (j, k) {\n"
    "    var x = m.l + k * gap, s = sc[k], tv = ticks(s, 5);\n"
    "    o += line(x, m.t, x, h - m.b, 'ax');\n"
    "    var every = Math.ceil(tv.length / 12);\n"
    "    tv = tv.filter(function (v, i) { return i % every === 0; });\n"
    "    tv.forEach(function (v) {\n"
    "      var y = s.f(v);\n"
    "      if (y >= m.t - 0.5 && y <= h - m.b + 0.5)\n"
    "        o += line(x - 3, y, x, y, 'ax') +\n"
    "          text(x - 5, y + 3, clip(fmt(v), 16), 'tk', 'end');\n"
    "    });\n"
    "    var name = j < 0 ? D.metric : D.params[j].name + (s.kind === 'log' ? ' (log)' : '');\n"
    "    o += text(x, h - m.b + 18 + (k % 2) * 14, clip(name, 24), 'lb', 'middle');\n"
    "  });\n"
    "  withm.forEach(function (t) {\n"
    "    var d = '', pen = 'M';\n"
    "    axs.forEach(function (j, k) {\n"
    "      var y = sc[k].f(j < 0 ? final(t) : t[4][j]);\n"
    "      if (sc[k].kind === 'cat' && !isNaN(y))\n"
    "        y += jitter(t[0] + k) * 0.4 * (h - m.t - m.b) / sc[k].cats.length;\n"
    "      if (isNaN(y)) { pen = 'M'; return; }\n"
    "      d += pen + r1(m.l + k * gap) + ' ' + r1(y);\n"
    "      pen = 'L';\n"
    "    });\n"
    "    if (!d) return;\n"
    "    var cls = t[0] === D.best ? 'pc best' : 'pc';\n"
    "    var tip = 'trial ' + t[0] + ': ' + fmt(final(t));\n"
    "    var p = tag('path', {'class': cls, stroke: SC[t[1]], d: d, 'data-tip': tip});\n"
    "    if (t[0] === D.best) bo = p;\n"
    "    else lines += p;\n"
    "    n++;\n"
    "  });\n"
    "  o = tag('g', {'stroke-opacity': opacity(n)}, lines) + o;\n"
    "  el.innerHTML = svg(w, h, o + bo, n);\n"
    "  el.setAttribute('data-drawn', String(n));\n"
    "}\n"
    "/* ---- the table of trials, sorted by the main metric (best first) until a click ---- */\n"
    "function table(el) {\n"
    "  var cols = [{h: 'trial', v: function (t) { return t[0]; }},\n"
    "              {h: 'status', v: function (t) { return SN[t[1]]; }},\n"
    "              {h: 'iterations', v: function (t) { return t[2]; }}];\n"
    "  D.params.forEach(function (p, j) {\n"
    "    cols.push({h: p.name, v: function (t) { return t[4][j]; }});\n"
    "  });\n"
    "  D.metrics.forEach(function (name, k) {\n"
    "    cols.push({h: name, v: function (t) { return t[5][k]; }});\n"
    "  });\n"
    "  cols.push({h: 'time_total_s', v: function (t) { return t[3]; }});\n"
    "  cols.push({h: 'error', v: function (t) { return t[6]; }});\n"
    "  var order = T.slice(), sortCol = 3 + NP, dir = -sign, last = cols.length - 1;\n"
    "  function none(x) {\n"
    "    return x === null || x === undefined || (typeof x === 'number' && isNaN(x));\n"
    "  }\n"
    "  /* Missing values last; ties by trial id. */\n"
    "  function cmp(a, b) {\n"
    "    var x = cols[sortCol].v(a), y = cols[sortCol].v(b), nx = none(x), ny = none(y);\n"
    "    if (nx || ny) return nx === ny ? a[0] - b[0] : nx ? 1 : -1;\n"
    "    if (typeof x !== 'number' || typeof y !== 'number') { x = String(x); y = String(y); }\n"
    "    return x === y ? a[0] - b[0] : x < y ? -dir : dir;\n"
    "  }\n"
    "  function head() {\n"
    "    return '<thead><tr>' + cols.map(function (c, i) {\n",
    "      var cls = i === sortCol ? (dir > 0 ? 'asc' : 'desc') : undefined;\n"
    "      return tag('th', {'data-col': i, 'class': cls}, esc(c.h));\n"
    "    }).join('') + '<\\/tr><\\/thead>';\n"
    "  }\n"
    "  function cell(t, c, i) {\n"
    "    var v = c.v(t);\n"
    "    if (i === 1) {\n"
    "      var st = {'class': 'st', style: 'background:' + SC[t[1]]};\n"
    "      return tag('td', {}, tag('span', st, esc(v)));\n"
    "    }\n"
    "    if (i === last)\n"
    "      return v ? tag('td', {'class': 'err', title: v}, esc(clip(v, 120))) : '<td><\\/td>';\n"
    "    if (typeof v !== 'number') return tag('td', {}, esc(fmt(v)));\n"
    "    return tag('td', {'class': 'n', title: isFinite(v) ? v : undefined}, esc(fmt(v)));\n"
    "  }\n"
    "  /* The first 200 rows (current order) until asked for all: big sweeps open fast. */\n"
    "  var limit = 200;\n"
    "  function draw() {\n"
    "    order.sort(cmp);\n"
    "    var rows = order.slice(0, limit).map(function (t) {\n"
    "      var cells = cols.map(function (c, i) { return cell(t, c, i); }).join('');\n"
    "      return tag('tr', {'class': t[0] === D.best ? 'best' : undefined}, cells);\n"
    "    });\n"
    "    var body = head() + tag('tbody', {}, rows.join(''));\n"
    "    var more = order.length - rows.length;\n"
    "    el.innerHTML = tag('table', {'class': 'trials'}, body) +\n"
    "      (more > 0 ? tag('p', {}, tag('button', {type: 'button', id: 'all'}, 'show all ' +\n"
    "                                   order.length + ' trials (' + more + ' more)')) : '') +\n"
    "      (D.metrics_truncated ? note('More metrics are in results.csv.') : '');\n"
    "    el.setAttribute('data-drawn', String(rows.length));\n"
    "    el.setAttribute('data-rows', String(order.length));\n"
    "  }\n"
    "  el.addEventListener('click', function (e) {\n"
    "    if (e.target.id === 'all') { limit = Infinity; draw(); return; }\n"
    "    var th = e.target.closest('th');\n"
    "    if (!th) return;\n"
    "    var c = +th.getAttribute('data-col');\n"
    "    if (c === sortCol) dir = -dir;\n"
    "    else { sortCol = c; dir = 1; }\n"
    "    draw();\n"
    "  });\n"
    "  draw();\n"
    "}\n"
    "/* Each part draws on its own: a failure shows in its place and in data-error (tests). */\n"
    "function run(id, f) {\n"
    "  var el = document.getElementById(id), t0 = performance.now();\n"
    "  try {\n"
    "    f(el);\n"
    "    el.setAttribute('data-ms', String(Math.round(performance.now() - t0)));\n"
    "  } catch (e) {\n"
    "    el.setAttribute('data-error', String(e));\n"
    "    el.textContent = 'could not draw: ' + e;\n"
    "  }\n"
    "}\n"
    "/* One tooltip for every mark (data-tip): a <title> per mark would double the nodes. */\n"
    "function tooltips() {\n"
    "  var tip = document.createElement('div');\n"
    "  tip.id = 'tip';\n"
    "  document.body.appendChild(tip);\n"
    "  document.addEventListener('mousemove', function (e) {\n"
    "    var s = e.target.getAttribute && e.target.getAttribute('data-tip');\n"
    "    tip.style.display = s ? 'block' : 'none';\n"
    "    if (!s) return;\n"
    "    tip.textContent = s;\n"
    "    tip.style.left = (e.clientX + 12) + 'px';\n"
    "    tip.style.top = (e.clientY + 12) + 'px';\n"
    "  });\n"
    "}\n"
    "var logx = false, btn = document.getElementById('logx');\n"
    "function drawCurves(el) { curves(el, logx); }\n"
    "run('legend', legend);\n"
    "run('curves', drawCurves);\n"
    "btn.addEventListener('click', function () {\n"
    "  logx = !logx;\n"
    "  btn.textContent = logx ? 'linear x' : 'log x';\n"
    "  run('curves', drawCurves);\n"
    "});\n"
    "run('scatter', scatter);\n"
    "run('parallel', parallel);\n"
    "run('table', table);\n"
    "tooltips();\n"
    "/* For the tests: milliseconds from navigation start to drawn, and to the load event. */\n"
    "document.body.setAttribute('data-render-ms', String(Math.round(performance.now())));\n"
    "window.addEventListener('load', function () {\n"
    "  document.body.setAttribute('data-load-ms', String(Math.round(performance.now())));\n"
    "});\n"
    "document.body.setAttribute('data-report', 'ready');\n"
    "})();\n",
};

/* Rung milestones the curves can mark: the same 64 a trial's rung mask holds at most. */
#define REPORT_MAX_RUNGS 64

/* The scheduler line of the summary (its row's summary and rungs), and the rungs the curves
 * plot mark. */
static void scheduler_info(const struct tunep_store_experiment_row *exp, const char *source,
                           struct tunep_buf *html, struct tunep_buf *json)
{
    struct tunep_config cfg;
    const char *text = exp->config_json ? exp->config_json : "{}";
    tunep_buf_puts(json, "\"rungs\":[");
    if (tunep_config_parse(text, strlen(text), source, NULL, &cfg, NULL) != TUNE_OK) {
        tunep_buf_puts(html, "unknown: the stored config does not validate here");
        tunep_buf_puts(json, "],\"time_attr\":\"training_iteration\"");
        return;
    }
    const char *time_attr = "training_iteration";
    const struct tunep_scheduler_type *sched = cfg.scheduler.type;
    if (sched->summary) {
        struct tunep_buf line;
        tunep_buf_init(&line);
        sched->summary(cfg.scheduler.cfg, &line);
        html_text(html, line.data ? line.data : "");
        tunep_buf_done(&line);
    } else {
        tunep_buf_puts(html, "see the stored config");
    }
    if (sched->rungs) {
        const char *attr = tunep_scheduler_config_time_attr(&cfg.scheduler);
        tunep_buf_puts(html, "; rungs at <code>");
        html_text(html, attr);
        tunep_buf_puts(html, "</code> = ");
        /* The curves are drawn against training_iteration: other time attributes
         * get their rungs listed here, not drawn. */
        int drawn = strcmp(attr, "training_iteration") == 0;
        double rungs[REPORT_MAX_RUNGS];
        size_t n = sched->rungs(cfg.scheduler.cfg, rungs, REPORT_MAX_RUNGS);
        for (size_t k = 0; k < n; k++) {
            char num[40];
            tunep_format_double(num, sizeof num, rungs[k]);
            if (drawn)
                tunep_buf_printf(json, "%s%s", k ? "," : "", num);
            tunep_buf_printf(html, "%s%s", k ? ", " : "", num);
        }
        if (!drawn) {
            tunep_buf_puts(html, " (not drawn: the curves are against training_iteration)");
        }
    }
    tunep_buf_puts(json, "],\"time_attr\":");
    json_string(json, time_attr);
    tunep_config_done(&cfg);
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
                 const struct tunep_buf *sched)
{
    const char *name = exp->name ? exp->name : "experiment";
    tunep_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                      "<meta name=\"generator\" content=\"tune ");
    html_text(b, tune_version());
    tunep_buf_puts(b, "\">\n<title>");
    html_text(b, name);
    tunep_buf_puts(b, " - tune report</title>\n<style>\n");
    for (size_t i = 0; i < sizeof report_css / sizeof *report_css; i++)
        tunep_buf_puts(b, report_css[i]);
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
    tunep_buf_puts(b, "</td></tr>\n<tr><th>trials</th><td>");
    html_status_counts(b, r);
    tunep_buf_puts(b, "</td></tr>\n<tr><th>compute</th><td>");
    html_duration(b, r->compute_s);
    tunep_buf_puts(b, " (sum of the trials' time_total_s)</td></tr>\n<tr><th>wall time</th><td>");
    html_duration(b, r->last_end - r->first_start);
    tunep_buf_puts(b, " (first trial start to last trial end)</td></tr>\n"
                      "<tr><th>scheduler</th><td>");
    tunep_buf_append(b, sched->data ? sched->data : "", sched->len);
    tunep_buf_puts(b, "</td></tr>\n</table>\n"
                      "<noscript><p class=\"note\">The plots and the table need JavaScript; "
                      "results.csv holds the same rows.</p></noscript>\n"
                      "<h2>Learning curves</h2>\n<p id=\"legend\"></p>\n"
                      "<p><button type=\"button\" id=\"logx\">log x</button></p>\n"
                      "<div class=\"plot\" id=\"curves\"></div>\n"
                      "<p class=\"note\">Each trial's main metric at every report of its last "
                      "attempt; dots mark trials stopped early or failed, dashed lines the "
                      "scheduler's rung milestones.</p>\n"
                      "<h2>Hyperparameters against the final metric</h2>\n"
                      "<div class=\"plot\" id=\"scatter\"></div>\n"
                      "<h2>Parallel coordinates</h2>\n<div class=\"plot\" id=\"parallel\"></div>\n"
                      "<p class=\"note\">One line per trial through its parameters and final "
                      "metric (better at the top).</p>\n"
                      "<h2>Trials</h2>\n<p class=\"note\">Click a column to sort by it.</p>\n"
                      "<div id=\"table\"></div>\n"
                      "<script type=\"application/json\" id=\"tune-data\">");
    tunep_buf_append(b, r->json.data ? r->json.data : "", r->json.len);
    tunep_buf_puts(b, "</script>\n<script>\n");
    for (size_t i = 0; i < sizeof report_js / sizeof *report_js; i++)
        tunep_buf_puts(b, report_js[i]);
    tunep_buf_puts(b, "</script>\n</body>\n</html>\n");
}

/* Writes text to path through "<path>.tmp", fsync and rename. */
static tune_status write_file(const char *path, const char *text, size_t len, tune_error *err)
{
    char *tmp = tunep_asprintf("%s.tmp", path);
    if (!tmp)
        return tunep_error_set_at(err, TUNE_ENOMEM, path, 0, 0, "out of memory");
    tune_status rs = TUNE_OK;
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        rs = tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "report: cannot create '%s': %s", tmp,
                                strerror(errno));
        goto out;
    }
    int bad = fwrite(text, 1, len, f) != len || fflush(f) != 0 || fsync(fileno(f)) != 0;
    int saved = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (bad) {
        unlink(tmp);
        rs = tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "report: cannot write '%s': %s", tmp,
                                strerror(saved));
    } else if (rename(tmp, path) != 0) {
        rs = tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "report: cannot rename '%s' to '%s': %s",
                                tmp, path, strerror(errno));
        unlink(tmp);
    }
out:
    tunep_free(tmp);
    return rs;
}

tune_status tunep_report_html(struct tunep_store *st, const char *dir, const char *path,
                              tune_error *err)
{
    if (!st || !dir || !path)
        return tunep_error_set(err, TUNE_EINVAL, "report: missing argument");
    struct tunep_store_experiment_row exp = {0};
    struct report r = {.path = path,
                       .err = err,
                       .best_id = -1,
                       .first_start = (double)NAN,
                       .last_end = (double)NAN,
                       .first_row = 1,
                       .curve_trial = -1};
    struct tunep_buf sched, out;
    tunep_buf_init(&r.json);
    tunep_buf_init(&r.best_html);
    tunep_buf_init(&sched);
    tunep_buf_init(&out);
    tune_status rs = tunep_store_read_begin(st, err);
    if (rs)
        return rs;
    if ((rs = tunep_store_read_experiment(st, &exp, err)))
        goto out;
    r.metric = exp.metric ? exp.metric : "";
    r.sign = exp.mode && strcmp(exp.mode, "min") == 0 ? -1.0 : 1.0;
    if ((rs = add_metric(&r, r.metric)) ||
        (rs = tunep_store_foreach_trial(st, summary_trial, &r, err)))
        goto out;

    /* The data document, read by the script. */
    struct tunep_buf *j = &r.json;
    tunep_buf_puts(j, "{\"metric\":");
    json_string(j, r.metric);
    tunep_buf_printf(j, ",\"mode\":\"%s\",\"best\":%" PRId64 ",\"statuses\":[",
                     r.sign > 0 ? "max" : "min", r.best_id);
    for (int s = 0; s < TUNE_TRIAL_STATUS_COUNT; s++)
        tunep_buf_printf(j, "%s[\"%s\",\"%s\"]", s ? "," : "",
                         tune_trial_status_name((tune_trial_status)s), status_colour(s));
    tunep_buf_puts(j, "],\n");
    scheduler_info(&exp, path, &sched, j);
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
    tunep_buf_puts(j, r.curve_trial >= 0 ? "]]}" : "]}");
    tunep_store_read_end(st);

    page(&out, &r, &exp, dir, &sched);
    if (out.oom || j->oom || r.best_html.oom || sched.oom) {
        rs = tunep_error_set_at(err, TUNE_ENOMEM, path, 0, 0, "out of memory");
        goto out;
    }
    rs = write_file(path, out.data, out.len, err);
out:
    /* The passes' callbacks return TUNE_ENOMEM without a message. */
    if (rs == TUNE_ENOMEM)
        tunep_error_set_at(err, TUNE_ENOMEM, path, 0, 0, "out of memory");
    tunep_store_read_end(st);
    tunep_store_experiment_done(&exp);
    for (size_t k = 0; k < r.n_metrics; k++)
        tunep_free(r.metrics[k]);
    tunep_buf_done(&r.json);
    tunep_buf_done(&r.best_html);
    tunep_buf_done(&sched);
    tunep_buf_done(&out);
    return rs;
}

tune_status tune_report_html(const char *experiment_dir, const char *out_path, tune_error *err)
{
    if (!experiment_dir)
        return tunep_error_set(err, TUNE_EINVAL, "report: experiment_dir must not be NULL");
    char *db = tunep_asprintf("%s/experiment.db", experiment_dir);
    char *def = out_path ? NULL : tunep_asprintf("%s/report.html", experiment_dir);
    tune_status rs = TUNE_OK;
    struct tunep_store *st = NULL;
    if (!db || (!out_path && !def)) {
        rs = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    } else if (access(db, F_OK) != 0) {
        rs = tunep_error_set_at(err, TUNE_ENOTFOUND, experiment_dir, 0, 0,
                                "no experiment here (experiment.db is missing)");
    } else if (!(rs = tunep_store_open(db, 1, &st, err))) {
        rs = tunep_report_html(st, experiment_dir, out_path ? out_path : def, err);
    }
    tunep_store_close(st);
    tunep_free(db);
    tunep_free(def);
    return rs;
}
