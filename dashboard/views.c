/*
 * views.c - the dashboard's documents, built from the store when it has
 * changed and kept until it changes again.
 *
 * The page is report.html as store/report_html.c writes it, with the live
 * script (dashboard/live.js, style live.css; embedded at build time) added
 * before </body>. That script polls GET /api/report, the page's data
 * document (the JSON of its #tune-data element), and redraws through
 * window.tuneReport(D), the report's one entry point; it replaces the
 * summary table with GET /api/summary's. The three come from one build, so
 * they always agree, and carry one entity tag: a poll of an unchanged store
 * is answered 304 with no body.
 *
 * The page is built in memory (tunep_report_html_build) and never touches
 * the disk.
 *
 * Rebuilding: each request first asks the store's data_version (a read of
 * the WAL index, no query); a document is rebuilt when the store changed
 * since it was built, at least REBUILD_MIN_S after the last build, and at
 * least READ_GAP times that build's duration after it ended. Polls from any
 * number of pages thus cost at most two reads of the store per second, and
 * the reader holds a snapshot at most a quarter of the time. Both the CPU
 * and the snapshot matter: while a reader holds one SQLite cannot restart
 * the WAL, and a big sweep's page takes a second to build. Measured on
 * 1,000 trials x 100 reports polled every 200 ms (bench/run_dashboard.sh),
 * rebuilding back to back let the WAL grow to 131 MB and cost the sweep a
 * third of its reports/s; with the wait, 65 MB and 12-21%. Pages poll
 * every refresh_ms (1 s), so a report shows up within refresh_ms +
 * REBUILD_MIN_S + the build time for sweeps whose page builds in under
 * REBUILD_MIN_S / READ_GAP (a few hundred trials of a hundred reports),
 * later for bigger ones.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dashboard/dashboard.h"
#include "store/report_html.h"
#include "store/store.h"
#include "store/store_read.h"
/* live_js and live_css: dashboard/live.js and live.css, embedded at build time. */
#include "dashboard_assets.h"

#define REBUILD_MIN_S 0.5
/* After a build of t seconds, the next waits READ_GAP * t: the reader is idle 3/4 of the time. */
#define READ_GAP 3.0

/* One cached build of some documents, and the store version it shows. */
struct cached {
    int64_t version;
    int valid;
};

struct tunep_dash_views {
    char *dir; /* the experiment folder */
    int refresh_ms;
    struct tunep_store *st;
    struct tunep_store_reader *rd;
    uint64_t epoch;    /* this server's start, so that entity tags never repeat across restarts */
    uint64_t seq;      /* builds of the report so far */
    double next_build; /* monotonic seconds: no document is rebuilt before (READ_GAP) */
    /* The report: the live page, its data document and summary table, one entity tag. */
    struct cached report;
    struct tunep_dash_blob *page, *data, *summary;
    char report_etag[64];
    /* The trials document and each trial's place in it. */
    struct cached trials;
    struct tunep_dash_blob *trials_doc;
    struct tunep_dash_span *spans;
    size_t n_spans;
};

/* ---- blobs ---------------------------------------------------------------- */

struct tunep_dash_blob *tunep_dash_blob_new(const char *data, size_t len)
{
    struct tunep_dash_blob *b = tunep_malloc(sizeof *b + len + 1);
    if (!b)
        return NULL;
    b->refs = 1;
    b->len = len;
    if (len)
        memcpy(b->data, data, len);
    b->data[len] = '\0';
    return b;
}

struct tunep_dash_blob *tunep_dash_blob_take(struct tunep_buf *b)
{
    struct tunep_dash_blob *blob = b->oom ? NULL : tunep_dash_blob_new(b->data, b->len);
    tunep_buf_done(b);
    tunep_buf_init(b);
    return blob;
}

void tunep_dash_blob_ref(struct tunep_dash_blob *blob)
{
    blob->refs++;
}

void tunep_dash_blob_unref(struct tunep_dash_blob *blob)
{
    if (blob && --blob->refs == 0)
        tunep_free(blob);
}

/* ---- opening ---------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void tunep_dash_views_close(struct tunep_dash_views *v)
{
    if (!v)
        return;
    tunep_store_close(v->st);
    tunep_store_reader_close(v->rd);
    tunep_dash_blob_unref(v->page);
    tunep_dash_blob_unref(v->data);
    tunep_dash_blob_unref(v->summary);
    tunep_dash_blob_unref(v->trials_doc);
    tunep_free(v->spans);
    tunep_free(v->dir);
    tunep_free(v);
}

tune_status tunep_dash_views_open(const char *dir, int refresh_ms, struct tunep_dash_views **ret,
                                  tune_error *err)
{
    struct tunep_dash_views *v = tunep_calloc(1, sizeof *v);
    char *db = tunep_store_file(dir);
    tune_status rs = TUNE_OK;
    if (!v || !db || !(v->dir = tunep_strdup(dir))) {
        rs = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto fail;
    }
    v->refresh_ms = refresh_ms;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    v->epoch = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    if ((rs = tunep_store_open_experiment(dir, 1, &v->st, NULL, err)) ||
        (rs = tunep_store_reader_open(db, &v->rd, err)))
        goto fail;
    tunep_free(db);
    *ret = v;
    return TUNE_OK;
fail:
    tunep_free(db);
    tunep_dash_views_close(v);
    return rs;
}

/* ---- the report ------------------------------------------------------------ */

/*
 * Whether c must be rebuilt, with the store's version now in *ret_version:
 * never built, or built from an older version at least REBUILD_MIN_S ago.
 */
static tune_status stale(struct tunep_dash_views *v, const struct cached *c, int *ret_stale,
                         int64_t *ret_version, tune_error *err)
{
    tune_status rs = tunep_store_reader_data_version(v->rd, ret_version, err);
    if (rs)
        return rs;
    *ret_stale = !c->valid || (c->version != *ret_version && now_s() >= v->next_build);
    return TUNE_OK;
}

/* A build that started at t0 has ended: when the next one may start. */
static void built(struct tunep_dash_views *v, double t0)
{
    double t1 = now_s();
    double gap = READ_GAP * (t1 - t0);
    v->next_build = t1 + (gap > REBUILD_MIN_S ? gap : REBUILD_MIN_S);
}

/* The text between the first open and the next close after it (close included when keep). */
static const char *between(const char *text, const char *open, const char *close, int keep_tags,
                           size_t *ret_len)
{
    const char *a = strstr(text, open);
    const char *b = a ? strstr(a + strlen(open), close) : NULL;
    if (!b)
        return NULL;
    if (keep_tags) {
        *ret_len = (size_t)(b + strlen(close) - a);
        return a;
    }
    a += strlen(open);
    *ret_len = (size_t)(b - a);
    return a;
}

static const char *last_of(const char *text, size_t len, const char *what)
{
    size_t n = strlen(what);
    for (size_t i = len >= n ? len - n + 1 : 0; i-- > 0;)
        if (memcmp(text + i, what, n) == 0)
            return text + i;
    return NULL;
}

static tune_status build_report(struct tunep_dash_views *v, tune_error *err)
{
    char *page = NULL;
    size_t len = 0;
    struct tunep_buf b;
    tunep_buf_init(&b);
    tune_status rs = tunep_report_html_build(v->st, v->dir, &page, &len, err);
    if (rs)
        return rs;
    size_t data_len = 0, summary_len = 0;
    const char *data = between(page, "<script type=\"application/json\" id=\"tune-data\">",
                               "</script>", 0, &data_len);
    const char *summary =
        between(page, "<table class=\"kv\" id=\"summary\">", "</table>", 1, &summary_len);
    const char *body_end = last_of(page, len, "</body>");
    if (!data || !summary || !body_end) {
        rs = tunep_error_set(err, TUNE_EINTERNAL, "dashboard: the report page has no %s",
                             !data      ? "#tune-data element"
                             : !summary ? "#summary table"
                                        : "</body>");
        goto out;
    }
    v->seq++;
    snprintf(v->report_etag, sizeof v->report_etag, "\"%" PRIx64 "-%" PRIu64 "\"", v->epoch,
             v->seq);
    /* The live page: the report, then the badge, its style and the script before </body>. */
    tunep_buf_append(&b, page, (size_t)(body_end - page));
    tunep_buf_puts(&b, "<style>\n");
    tunep_buf_append(&b, live_css, sizeof live_css);
    tunep_buf_printf(&b,
                     "</style>\n<div id=\"tune-live\" role=\"status\" data-refresh-ms=\"%d\""
                     " data-etag=\"%" PRIx64 "-%" PRIu64 "\">live</div>\n<script>\n",
                     v->refresh_ms, v->epoch, v->seq);
    tunep_buf_append(&b, live_js, sizeof live_js);
    tunep_buf_puts(&b, "</script>\n");
    tunep_buf_puts(&b, body_end);
    struct tunep_dash_blob *p = tunep_dash_blob_take(&b);
    struct tunep_dash_blob *d = tunep_dash_blob_new(data, data_len);
    struct tunep_dash_blob *s = tunep_dash_blob_new(summary, summary_len);
    if (!p || !d || !s) {
        tunep_dash_blob_unref(p);
        tunep_dash_blob_unref(d);
        tunep_dash_blob_unref(s);
        rs = tunep_error_set(err, TUNE_ENOMEM, "dashboard: out of memory");
        goto out;
    }
    tunep_dash_blob_unref(v->page);
    tunep_dash_blob_unref(v->data);
    tunep_dash_blob_unref(v->summary);
    v->page = p;
    v->data = d;
    v->summary = s;
out:
    tunep_buf_done(&b);
    tunep_free(page);
    return rs;
}

static tune_status fresh_report(struct tunep_dash_views *v, tune_error *err)
{
    int64_t version;
    int old;
    tune_status rs = stale(v, &v->report, &old, &version, err);
    if (rs || !old)
        return rs;
    double t0 = now_s();
    rs = build_report(v, err);
    built(v, t0);
    if (rs)
        return rs;
    v->report = (struct cached){.version = version, .valid = 1};
    return TUNE_OK;
}

static void doc(struct tunep_dash_doc *ret, struct tunep_dash_blob *body, const char *type,
                const char *etag)
{
    tunep_dash_blob_ref(body);
    ret->body = body;
    ret->type = type;
    snprintf(ret->etag, sizeof ret->etag, "%s", etag ? etag : "");
}

tune_status tunep_dash_view_page(struct tunep_dash_views *v, struct tunep_dash_doc *ret,
                                 tune_error *err)
{
    tune_status rs = fresh_report(v, err);
    if (!rs)
        doc(ret, v->page, "text/html; charset=utf-8", NULL);
    return rs;
}

tune_status tunep_dash_view_report(struct tunep_dash_views *v, struct tunep_dash_doc *ret,
                                   tune_error *err)
{
    tune_status rs = fresh_report(v, err);
    if (!rs)
        doc(ret, v->data, "application/json", v->report_etag);
    return rs;
}

tune_status tunep_dash_view_summary(struct tunep_dash_views *v, struct tunep_dash_doc *ret,
                                    tune_error *err)
{
    tune_status rs = fresh_report(v, err);
    if (!rs)
        doc(ret, v->summary, "text/html; charset=utf-8", v->report_etag);
    return rs;
}

/* ---- the trials -------------------------------------------------------------- */

static tune_status build_trials(struct tunep_dash_views *v, tune_error *err)
{
    struct tunep_buf b;
    struct tunep_dash_span *spans = NULL;
    size_t n = 0;
    tunep_buf_init(&b);
    tune_status rs = tunep_dash_trials_json(v->st, v->rd, &b, &spans, &n, err);
    if (rs) {
        tunep_buf_done(&b);
        return rs;
    }
    struct tunep_dash_blob *blob = tunep_dash_blob_take(&b);
    if (!blob) {
        tunep_free(spans);
        return tunep_error_set(err, TUNE_ENOMEM, "dashboard: out of memory");
    }
    tunep_dash_blob_unref(v->trials_doc);
    tunep_free(v->spans);
    v->trials_doc = blob;
    v->spans = spans;
    v->n_spans = n;
    return TUNE_OK;
}

static tune_status fresh_trials(struct tunep_dash_views *v, tune_error *err)
{
    int64_t version;
    int old;
    tune_status rs = stale(v, &v->trials, &old, &version, err);
    if (rs || !old)
        return rs;
    double t0 = now_s();
    rs = build_trials(v, err);
    built(v, t0);
    if (rs)
        return rs;
    v->trials = (struct cached){.version = version, .valid = 1};
    return TUNE_OK;
}

tune_status tunep_dash_view_trials(struct tunep_dash_views *v, struct tunep_dash_doc *ret,
                                   tune_error *err)
{
    tune_status rs = fresh_trials(v, err);
    if (!rs)
        doc(ret, v->trials_doc, "application/json", NULL);
    return rs;
}

static const struct tunep_dash_span *find_span(const struct tunep_dash_views *v, int64_t id)
{
    size_t lo = 0, hi = v->n_spans;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->spans[mid].trial_id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < v->n_spans && v->spans[lo].trial_id == id ? &v->spans[lo] : NULL;
}

tune_status tunep_dash_view_trial(struct tunep_dash_views *v, int64_t trial_id,
                                  struct tunep_dash_doc *ret, tune_error *err)
{
    /* A trial newer than the trials document (up to REBUILD_MIN_S old, more for a big
     * sweep) is not found until the next build: a client asks again. */
    tune_status rs = fresh_trials(v, err);
    if (rs)
        return rs;
    const struct tunep_dash_span *sp = find_span(v, trial_id);
    if (!sp)
        return tunep_error_set(err, TUNE_ENOTFOUND, "no trial %" PRId64 " (yet)", trial_id);
    struct tunep_buf b;
    tunep_buf_init(&b);
    rs = tunep_dash_trial_json(v->rd, trial_id, v->trials_doc->data + sp->start,
                               sp->end - sp->start, &b, err);
    struct tunep_dash_blob *blob = rs ? NULL : tunep_dash_blob_take(&b);
    tunep_buf_done(&b);
    if (rs)
        return rs;
    if (!blob)
        return tunep_error_set(err, TUNE_ENOMEM, "dashboard: out of memory");
    doc(ret, blob, "application/json", NULL);
    tunep_dash_blob_unref(blob); /* doc() took its own reference */
    return TUNE_OK;
}
