/*
 * json.c - the dashboard's JSON documents: the trials (GET /api/trials) and
 * one trial with its reports (GET /api/trials/<id>).
 *
 * The trials document is three passes over the store: each trial's best
 * report (every report of every attempt, the main metric compared in the
 * experiment's mode, as `tune best --scope all` does), the devices the
 * store records, then the trials themselves with their last metrics. The
 * first and last run in one snapshot of the store (tunep_store_read_begin),
 * so a trial's best and last values agree.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/text.h"
#include "dashboard/dashboard.h"
#include "store/store.h"
#include "store/store_read.h"

static void json_value(struct tunep_buf *b, const struct tunep_value *v)
{
    switch (v->type) {
        case TUNEP_V_DOUBLE: tunep_json_put_number(b, v->u.d); return;
        case TUNEP_V_INT: tunep_buf_printf(b, "%" PRId64, v->u.i); return;
        case TUNEP_V_STRING: tunep_json_put_string(b, v->u.s ? v->u.s : ""); return;
        case TUNEP_V_BOOL: tunep_buf_puts(b, v->u.b ? "true" : "false"); return;
        case TUNEP_V_ABSENT: break;
    }
    tunep_buf_puts(b, "null");
}

/* {"name":value,...} */
static void json_metrics(struct tunep_buf *b, size_t n, const char *const *names,
                         const double *values)
{
    tunep_buf_append(b, "{", 1);
    for (size_t i = 0; i < n; i++) {
        if (i)
            tunep_buf_append(b, ",", 1);
        tunep_json_put_string(b, names[i]);
        tunep_buf_append(b, ":", 1);
        tunep_json_put_number(b, values[i]);
    }
    tunep_buf_append(b, "}", 1);
}

/* A trial's best report so far: its "best" object's text in the arena. */
struct best {
    int64_t trial_id;
    double score; /* sign * value: larger is better */
    size_t off, len;
};

struct trials_doc {
    const char *metric;
    double sign;            /* +1 for mode max, -1 for min */
    struct tunep_buf arena; /* the best reports' texts */
    struct best *best;
    size_t n_best, cap_best;
    struct tunep_buf *out;
    struct tunep_dash_span *spans;
    size_t n_spans, cap_spans;
    struct {
        int64_t trial_id;
        size_t off; /* in the arena */
    } * dev;
    size_t n_dev, cap_dev;
    size_t i_best, i_dev; /* cursors: the trials come in trial_id order, as these arrays */
};

/* Makes room for n items of size each in *p (capacity *cap); 0 on OOM. */
static int grow(void **p, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap)
        return 1;
    size_t cap_new = *cap ? *cap * 2 : 64;
    while (cap_new < n)
        cap_new *= 2;
    void *q = tunep_realloc(*p, *cap * size, cap_new * size);
    if (!q)
        return 0;
    *p = q;
    *cap = cap_new;
    return 1;
}

static double metric_of(const char *name, size_t n, const char *const *names, const double *values)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return values[i];
    return (double)NAN;
}

/* Pass 1: reports come ordered by trial, attempt and iteration; the first best one wins ties. */
static tune_status best_report(void *ud, int64_t trial_id, int attempt, int64_t iteration,
                               double time_total_s, size_t n, const char *const *names,
                               const double *values)
{
    struct trials_doc *d = ud;
    double v = metric_of(d->metric, n, names, values);
    if (isnan(v))
        return TUNE_OK;
    struct best *last = d->n_best ? &d->best[d->n_best - 1] : NULL;
    if (last && last->trial_id == trial_id && !(d->sign * v > last->score))
        return TUNE_OK;
    if (!last || last->trial_id != trial_id) {
        if (!grow((void **)&d->best, &d->cap_best, d->n_best + 1, sizeof *d->best))
            return TUNE_ENOMEM;
        last = &d->best[d->n_best++];
        last->trial_id = trial_id;
    }
    last->score = d->sign * v;
    /* The text of a replaced best stays in the arena, unused: at most one per report. */
    last->off = d->arena.len;
    tunep_buf_printf(&d->arena, "{\"attempt\":%d,\"training_iteration\":%" PRId64 ",", attempt,
                     iteration);
    tunep_buf_puts(&d->arena, "\"time_total_s\":");
    tunep_json_put_number(&d->arena, time_total_s);
    tunep_buf_puts(&d->arena, ",\"metrics\":");
    json_metrics(&d->arena, n, names, values);
    tunep_buf_append(&d->arena, "}", 1);
    last->len = d->arena.len - last->off;
    return d->arena.oom ? TUNE_ENOMEM : TUNE_OK;
}

static tune_status device_of(void *ud, int64_t trial_id, const char *device)
{
    struct trials_doc *d = ud;
    if (!grow((void **)&d->dev, &d->cap_dev, d->n_dev + 1, sizeof *d->dev))
        return TUNE_ENOMEM;
    d->dev[d->n_dev].trial_id = trial_id;
    d->dev[d->n_dev++].off = d->arena.len;
    tunep_buf_puts(&d->arena, device);
    tunep_buf_append(&d->arena, "", 1); /* the NUL that ends it */
    return d->arena.oom ? TUNE_ENOMEM : TUNE_OK;
}

/* Pass 3: one object per trial. */
static tune_status trial_object(void *ud, const struct tunep_stored_trial *t)
{
    struct trials_doc *d = ud;
    struct tunep_buf *b = d->out;
    if (!grow((void **)&d->spans, &d->cap_spans, d->n_spans + 1, sizeof *d->spans))
        return TUNE_ENOMEM;
    if (d->n_spans)
        tunep_buf_append(b, ",\n", 2);
    struct tunep_dash_span *sp = &d->spans[d->n_spans++];
    sp->trial_id = t->trial_id;
    sp->start = b->len;
    tunep_buf_printf(b, "{\"trial_id\":%" PRId64 ",\"status\":", t->trial_id);
    tunep_json_put_string(b, tune_trial_status_name(t->status));
    tunep_buf_printf(b, ",\"attempt\":%d,\"training_iteration\":%" PRId64 ",\"time_total_s\":",
                     t->attempt, t->iteration);
    tunep_json_put_number(b, t->time_total_s);
    tunep_buf_puts(b, ",\"start_time\":");
    tunep_json_put_number(b, t->start_time);
    tunep_buf_puts(b, ",\"end_time\":");
    tunep_json_put_number(b, t->end_time);
    tunep_buf_puts(b, ",\"error\":");
    if (t->error)
        tunep_json_put_string(b, t->error);
    else
        tunep_buf_puts(b, "null");
    tunep_buf_puts(b, ",\"config\":{");
    for (size_t i = 0; i < t->n_params; i++) {
        if (i)
            tunep_buf_append(b, ",", 1);
        tunep_json_put_string(b, t->param_names[i]);
        tunep_buf_append(b, ":", 1);
        json_value(b, &t->params[i]);
    }
    tunep_buf_puts(b, "},\"last\":");
    json_metrics(b, t->n_metrics, t->metric_names, t->metric_values);
    tunep_buf_puts(b, ",\"best\":");
    while (d->i_best < d->n_best && d->best[d->i_best].trial_id < t->trial_id)
        d->i_best++;
    if (d->i_best < d->n_best && d->best[d->i_best].trial_id == t->trial_id)
        tunep_buf_append(b, d->arena.data + d->best[d->i_best].off, d->best[d->i_best].len);
    else
        tunep_buf_puts(b, "null");
    tunep_buf_puts(b, ",\"device\":");
    while (d->i_dev < d->n_dev && d->dev[d->i_dev].trial_id < t->trial_id)
        d->i_dev++;
    if (d->i_dev < d->n_dev && d->dev[d->i_dev].trial_id == t->trial_id)
        tunep_json_put_string(b, d->arena.data + d->dev[d->i_dev].off);
    else
        tunep_buf_puts(b, "null");
    tunep_buf_append(b, "}", 1);
    sp->end = b->len;
    return b->oom ? TUNE_ENOMEM : TUNE_OK;
}

tune_status tunep_dash_trials_json(struct tunep_store *st, struct tunep_store_reader *rd,
                                   struct tunep_buf *out, struct tunep_dash_span **ret_spans,
                                   size_t *ret_n, tune_error *err)
{
    struct tunep_store_experiment_row exp = {0};
    struct trials_doc d = {.out = out};
    tunep_buf_init(&d.arena);
    tune_status rs = tunep_store_read_begin(st, err);
    if (rs)
        return rs;
    if ((rs = tunep_store_read_experiment(st, &exp, err)))
        goto out;
    d.metric = exp.metric ? exp.metric : "";
    d.sign = exp.mode && strcmp(exp.mode, "min") == 0 ? -1.0 : 1.0;
    if ((rs = tunep_store_foreach_report(st, best_report, &d, err)) ||
        (rs = tunep_store_reader_foreach_device(rd, device_of, &d, err)))
        goto out;
    tunep_buf_puts(out, "{\"metric\":");
    tunep_json_put_string(out, d.metric);
    tunep_buf_printf(out, ",\"mode\":\"%s\",\"trials\":[\n", d.sign > 0 ? "max" : "min");
    if ((rs = tunep_store_foreach_trial(st, trial_object, &d, err)))
        goto out;
    tunep_buf_puts(out, "]}\n");
    if (out->oom)
        rs = TUNE_ENOMEM;
out:
    tunep_store_read_end(st);
    tunep_store_experiment_done(&exp);
    tunep_buf_done(&d.arena);
    tunep_free(d.best);
    tunep_free(d.dev);
    if (rs == TUNE_ENOMEM)
        tunep_error_set(err, TUNE_ENOMEM, "dashboard: out of memory");
    if (rs) {
        tunep_free(d.spans);
        return rs;
    }
    *ret_spans = d.spans;
    *ret_n = d.n_spans;
    return TUNE_OK;
}

struct reports_doc {
    struct tunep_buf *out;
    int first;
};

static tune_status report_object(void *ud, const struct tunep_read_report *rep)
{
    struct reports_doc *d = ud;
    struct tunep_buf *b = d->out;
    tunep_buf_printf(b, "%s\n{\"attempt\":%d,\"training_iteration\":%" PRId64 ",\"time_total_s\":",
                     d->first ? "" : ",", rep->attempt, rep->iteration);
    d->first = 0;
    tunep_json_put_number(b, rep->time_total_s);
    tunep_buf_puts(b, ",\"timestamp\":");
    tunep_json_put_number(b, rep->wall_time);
    tunep_buf_puts(b, ",\"metrics\":");
    tunep_buf_puts(b, rep->metrics_json);
    tunep_buf_append(b, "}", 1);
    return b->oom ? TUNE_ENOMEM : TUNE_OK;
}

tune_status tunep_dash_trial_json(struct tunep_store_reader *rd, int64_t trial_id, const char *obj,
                                  size_t len, struct tunep_buf *out, tune_error *err)
{
    if (len < 2 || obj[len - 1] != '}')
        return tunep_error_set(err, TUNE_EINTERNAL, "dashboard: trial %" PRId64 ": bad object",
                               trial_id);
    struct reports_doc d = {.out = out, .first = 1};
    int found = 0;
    tunep_buf_append(out, obj, len - 1);
    tunep_buf_puts(out, ",\"reports\":[");
    tune_status rs = tunep_store_reader_trial_reports(rd, trial_id, report_object, &d, &found, err);
    if (rs == TUNE_ENOMEM || (!rs && out->oom))
        return tunep_error_set(err, TUNE_ENOMEM, "dashboard: out of memory");
    if (rs)
        return rs;
    if (!found)
        return tunep_error_set(err, TUNE_ENOTFOUND, "no trial %" PRId64, trial_id);
    tunep_buf_puts(out, "]}\n");
    return out->oom ? tunep_error_set(err, TUNE_ENOMEM, "dashboard: out of memory") : TUNE_OK;
}
