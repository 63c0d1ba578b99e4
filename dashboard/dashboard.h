/*
 * dashboard.h - the live dashboard's documents (views.c), shared with its
 * HTTP server (server.c).
 *
 * Every response body is a blob: immutable bytes with a reference count, so
 * that a document being sent to a slow client survives its replacement by a
 * newer one. All of it runs on libmicrohttpd's one internal thread (and on
 * the thread that stops the server, after that thread has ended), so the
 * counts need no atomics.
 */
#ifndef TUNE_DASHBOARD_H
#define TUNE_DASHBOARD_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

struct tunep_dash_blob {
    int refs;
    size_t len;
    char data[]; /* len bytes and a NUL */
};
/* A blob holding a copy of len bytes of data (one reference); NULL on OOM. */
struct tunep_dash_blob *tunep_dash_blob_new(const char *data, size_t len);
/* The text of b (which is reset) as a blob; NULL on OOM or after b ran out of memory. */
struct tunep_dash_blob *tunep_dash_blob_take(struct tunep_buf *b);
void tunep_dash_blob_ref(struct tunep_dash_blob *blob);
void tunep_dash_blob_unref(struct tunep_dash_blob *blob);

/* The documents of one experiment, rebuilt from its store when it has changed. */
struct tunep_dash_views;

/*
 * Opens the experiment in dir as a reader: its store (read-only) for the
 * report and the trials, and a second connection for changes and one
 * trial's reports. refresh_ms: the page's poll interval.
 */
tune_status tunep_dash_views_open(const char *dir, int refresh_ms, struct tunep_dash_views **ret,
                                  tune_error *err);
void tunep_dash_views_close(struct tunep_dash_views *v);

/* What a route answers: a blob (a new reference) and its type, or a status and message. */
struct tunep_dash_doc {
    struct tunep_dash_blob *body;
    const char *type; /* the Content-Type */
    char etag[64];    /* a quoted entity tag, or "" */
};

/* GET / : the report page with the live script. */
tune_status tunep_dash_view_page(struct tunep_dash_views *v, struct tunep_dash_doc *ret,
                                 tune_error *err);
/* GET /api/report : the page's data document, which window.tuneReport(D) draws. */
tune_status tunep_dash_view_report(struct tunep_dash_views *v, struct tunep_dash_doc *ret,
                                   tune_error *err);
/* GET /api/summary : the page's summary table. */
tune_status tunep_dash_view_summary(struct tunep_dash_views *v, struct tunep_dash_doc *ret,
                                    tune_error *err);
/* GET /api/trials */
tune_status tunep_dash_view_trials(struct tunep_dash_views *v, struct tunep_dash_doc *ret,
                                   tune_error *err);
/* GET /api/trials/<id>: TUNE_ENOTFOUND when the store has no such trial. */
tune_status tunep_dash_view_trial(struct tunep_dash_views *v, int64_t trial_id,
                                  struct tunep_dash_doc *ret, tune_error *err);

/* ---- JSON documents (json.c) ---------------------------------------------- */

struct tunep_store;
struct tunep_store_reader;

/* Where one trial's object lies in the trials document. */
struct tunep_dash_span {
    int64_t trial_id;
    size_t start, end; /* [start, end) of the object's text */
};
/*
 * The trials document (GET /api/trials) of the store st into out, in one
 * snapshot of st, with each trial's span in trial_id order (*ret_spans, from
 * tunep_malloc); devices come from rd.
 */
tune_status tunep_dash_trials_json(struct tunep_store *st, struct tunep_store_reader *rd,
                                   struct tunep_buf *out, struct tunep_dash_span **ret_spans,
                                   size_t *ret_n, tune_error *err);
/*
 * One trial's document (GET /api/trials/<id>): its object from the trials
 * document (obj, len bytes) with "reports" added, every report of every
 * attempt as rd reads them now. TUNE_ENOTFOUND when rd has no such trial.
 */
tune_status tunep_dash_trial_json(struct tunep_store_reader *rd, int64_t trial_id, const char *obj,
                                  size_t len, struct tunep_buf *out, tune_error *err);

#endif /* TUNE_DASHBOARD_H */
