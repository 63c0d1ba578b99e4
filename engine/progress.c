/*
 * progress.c - looking at a study: the live progress table, the best trial,
 * CSV export, and opening a finished experiment folder read-only.
 *
 * The progress table follows Ray Tune's CLIReporter: counts by status, the
 * best trial so far, rows for running trials and the best ones, and ASHA's
 * rung cut-offs. Formatting lives here; printing is the CLI's job. The text
 * is safe to print to a terminal: control characters in it are escaped.
 */
#include "engine/study.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/text.h"

static void fmt_value(char *buf, size_t size, const struct tunep_value *v)
{
    switch (v->type) {
        case TUNEP_V_DOUBLE: snprintf(buf, size, "%.4g", v->u.d); return;
        case TUNEP_V_INT: snprintf(buf, size, "%lld", (long long)v->u.i); return;
        case TUNEP_V_STRING: snprintf(buf, size, "%s", v->u.s); return;
        case TUNEP_V_BOOL: snprintf(buf, size, "%s", v->u.b ? "true" : "false"); return;
    }
    buf[0] = '\0';
}

static double last_metric(const struct tune_study *s, const struct tunep_trial_rec *r)
{
    if (s->main_metric < 0 || (size_t)s->main_metric >= r->n_last)
        return (double)NAN;
    return r->last[s->main_metric];
}

#define COLS_MAX 12
#define COL_W    12

/* The GPU column's width: shown while a run places trials on GPUs. */
#define GPU_W 8

/* The GPUs a running trial holds ("0", "1,3"); "-" when it holds none. Lock held. */
static const char *trial_gpus(const struct tune_study *s, const struct tunep_trial_rec *r)
{
    if (r->status == TUNE_TRIAL_RUNNING)
        for (const struct tune_trial *t = s->live; t; t = t->next)
            if (t->rec == r && t->n_gpus > 0)
                return t->gpu_ids;
    return "-";
}

/* One table row: trial, status, GPU (when placing), shown params, iter, time, metric. */
static void table_row(struct tunep_buf *b, const struct tune_study *s,
                      const struct tunep_trial_rec *r, size_t n_cols)
{
    char cell[64];
    tunep_buf_printf(b, "| %-8lld | %-10s |", (long long)r->id, tune_trial_status_name(r->status));
    if (s->gpu_pool)
        tunep_buf_printf(b, " %-*.*s |", GPU_W, GPU_W, trial_gpus(s, r));
    for (size_t i = 0; i < n_cols; i++) {
        fmt_value(cell, sizeof cell, &r->values[i]);
        tunep_buf_printf(b, " %*.*s |", COL_W, COL_W, cell);
    }
    char tcell[32];
    if (isnan(r->time_total_s))
        snprintf(tcell, sizeof tcell, "-");
    else
        snprintf(tcell, sizeof tcell, "%.2f", r->time_total_s);
    double m = last_metric(s, r);
    if (isnan(m))
        snprintf(cell, sizeof cell, "-");
    else
        snprintf(cell, sizeof cell, "%.5g", m);
    tunep_buf_printf(b, " %6lld | %10s | %12s |\n", (long long)r->iteration, tcell, cell);
}

static void table_rule(struct tunep_buf *b, const struct tune_study *s, size_t n_cols)
{
    tunep_buf_puts(b, "+----------+------------+");
    if (s->gpu_pool)
        tunep_buf_puts(b, "----------+");
    for (size_t i = 0; i < n_cols; i++)
        tunep_buf_puts(b, "--------------+");
    tunep_buf_puts(b, "--------+------------+--------------+\n");
}

tune_status tune_study_progress_text(tune_study *s, int max_rows, char **ret_text, tune_error *err)
{
    if (!s || !ret_text)
        return tunep_error_set(err, TUNE_EINVAL, "study and ret_text must not be NULL");
    struct tunep_buf b;
    tunep_buf_init(&b);
    pthread_mutex_lock(&s->lock);

    int64_t pending = s->counts[TUNE_TRIAL_PENDING] + (s->total_trials - s->n_trials);
    if (s->readonly) {
        tunep_buf_printf(&b, "== %s == (from %s)\n", s->cfg.name, s->cfg.storage);
    } else {
        double elapsed = s->t_start > 0 ? tunep_now_monotonic() - s->t_start : 0;
        tunep_buf_printf(&b, "== %s == running for %02d:%02d:%05.2f  %lld reports\n", s->cfg.name,
                         (int)(elapsed / 3600), (int)fmod(elapsed / 60, 60), fmod(elapsed, 60),
                         (long long)s->n_reports);
    }
    char paused[48] = "";
    if (s->counts[TUNE_TRIAL_PAUSED] > 0)
        snprintf(paused, sizeof paused, ", %lld PAUSED", (long long)s->counts[TUNE_TRIAL_PAUSED]);
    tunep_buf_printf(
        &b,
        "Trials: %lld (%lld PENDING, %lld RUNNING, %lld TERMINATED, %lld STOPPED, "
        "%lld ERROR%s)\n",
        (long long)s->total_trials, (long long)pending, (long long)s->counts[TUNE_TRIAL_RUNNING],
        (long long)s->counts[TUNE_TRIAL_TERMINATED], (long long)s->counts[TUNE_TRIAL_STOPPED],
        (long long)s->counts[TUNE_TRIAL_ERROR], paused);
    int64_t best = tunep_study_best_trial(s);
    if (best >= 0)
        tunep_buf_printf(&b, "Best so far: trial %lld with %s=%.6g (%s)\n", (long long)best,
                         s->cfg.metric, last_metric(s, s->trials[best]),
                         s->cfg.mode_max ? "max" : "min");
    if (s->sched)
        tunep_scheduler_describe(s->sched, s->sign, &b);
    if (s->store)
        tunep_buf_printf(&b, "Results: %s\n", s->cfg.storage);

    size_t n_cols = s->n_params < COLS_MAX ? s->n_params : COLS_MAX;
    if (max_rows > 0 && s->n_trials > 0) {
        table_rule(&b, s, n_cols);
        tunep_buf_puts(&b, "| trial    | status     |");
        if (s->gpu_pool)
            tunep_buf_printf(&b, " %-*s |", GPU_W, "gpu");
        for (size_t i = 0; i < n_cols; i++) {
            const char *name = s->param_names[i];
            size_t len = strlen(name);
            /* Keep the end of long names: "optimizer/lr" -> "mizer/lr". */
            tunep_buf_printf(&b, " %*s |", COL_W, len > COL_W ? name + len - COL_W : name);
        }
        tunep_buf_printf(&b, " %6s | %10s | %12.12s |\n", "iter", "time (s)", s->cfg.metric);
        table_rule(&b, s, n_cols);
        int rows = 0;
        /* Running trials first, then the best finished ones. */
        for (int64_t i = 0; i < s->n_trials && rows < max_rows; i++)
            if (s->trials[i]->status == TUNE_TRIAL_RUNNING) {
                table_row(&b, s, s->trials[i], n_cols);
                rows++;
            }
        int best_apart = best >= 0 && s->trials[best]->status != TUNE_TRIAL_RUNNING;
        if (best_apart && rows < max_rows) {
            table_row(&b, s, s->trials[best], n_cols);
            rows++;
        }
        table_rule(&b, s, n_cols);
        int64_t wanted = s->counts[TUNE_TRIAL_RUNNING] + best_apart;
        if (wanted > rows)
            tunep_buf_printf(&b, "... %lld more trials not shown\n", (long long)(wanted - rows));
    }
    /* The last errors, so a failing sweep says why without opening the store. */
    int shown_errors = 0;
    for (int64_t i = s->n_trials - 1; i >= 0 && shown_errors < 5; i--) {
        const struct tunep_trial_rec *r = s->trials[i];
        if (r->error && (r->status == TUNE_TRIAL_ERROR || r->status == TUNE_TRIAL_PENDING)) {
            tunep_buf_printf(&b, "%s trial %lld (attempt %d): %s\n",
                             r->status == TUNE_TRIAL_ERROR ? "ERROR" : "retrying", (long long)r->id,
                             r->attempt, r->error);
            shown_errors++;
        }
    }
    pthread_mutex_unlock(&s->lock);
    char *text = tunep_buf_take(&b);
    if (!text)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    /* Names, string values and error texts come from outside (a program's
     * stderr, a config): control characters are shown as \xNN, so that the
     * table cannot steer the terminal it is printed to. */
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
    *ret_text = text;
    return TUNE_OK;
}

tune_status tune_study_best_json(tune_study *s, char **ret_json, tune_error *err)
{
    if (!s || !ret_json)
        return tunep_error_set(err, TUNE_EINVAL, "study and ret_json must not be NULL");
    pthread_mutex_lock(&s->lock);
    int64_t best = tunep_study_best_trial(s);
    tune_status st = TUNE_OK;
    char *json = NULL;
    if (best < 0) {
        st = tunep_error_set(err, TUNE_ENOTFOUND, "no trial reported the metric '%s'",
                             s->cfg.metric);
    } else {
        const struct tunep_trial_rec *r = s->trials[best];
        char *config = tunep_values_json(s->n_params, s->param_names, r->values);
        char num[64];
        tunep_format_double(num, sizeof num, last_metric(s, r));
        /* The metric name is escaped through a one-element config object. */
        const char *names[1] = {s->cfg.metric};
        struct tunep_value mv = {.type = TUNEP_V_DOUBLE, .u.d = last_metric(s, r)};
        char *metric_obj = tunep_values_json(1, names, &mv);
        if (config && metric_obj) {
            /* metric_obj is {"name":value}: splice its inside into the result. */
            size_t mlen = strlen(metric_obj);
            metric_obj[mlen - 1] = '\0';
            json = tunep_asprintf("{\"trial_id\":%lld,\"status\":\"%s\",\"config\":%s,%s,"
                                  "\"training_iteration\":%lld,\"time_total_s\":%.3f}",
                                  (long long)r->id, tune_trial_status_name(r->status), config,
                                  metric_obj + 1, (long long)r->iteration, r->time_total_s);
        }
        tunep_free(config);
        tunep_free(metric_obj);
        if (!json)
            st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    }
    pthread_mutex_unlock(&s->lock);
    if (!st)
        *ret_json = json;
    return st;
}

tune_status tune_study_export_csv(tune_study *s, tune_csv_kind kind, const char *path,
                                  tune_error *err)
{
    if (!s || !path || kind < 0 || kind >= TUNE_CSV_KIND_COUNT)
        return tunep_error_set(err, TUNE_EINVAL, "invalid arguments");
    if (!s->store)
        return tunep_error_set(err, TUNE_EUNSUPPORTED,
                               "CSV export needs a store: this study runs with storage ':memory:' "
                               "or has not run yet");
    pthread_mutex_lock(&s->lock);
    tune_status st = kind == TUNE_CSV_RESULTS ? tunep_export_results_csv(s->store, path, err)
                                              : tunep_export_progress_csv(s->store, path, err);
    pthread_mutex_unlock(&s->lock);
    return st;
}

/* ---- opening an experiment folder ---------------------------------------- */

struct load_ctx {
    struct tune_study *s;
    tune_error *err;
};

static tune_status load_trial(void *ud, const struct tunep_stored_trial *t)
{
    struct load_ctx *lc = ud;
    struct tune_study *s = lc->s;
    if (s->n_params == 0 && t->n_params > 0) {
        s->param_names = tunep_calloc(t->n_params, sizeof *s->param_names);
        if (!s->param_names)
            return TUNE_ENOMEM;
        for (size_t i = 0; i < t->n_params; i++)
            if (!(s->param_names[i] = tunep_strdup(t->param_names[i])))
                return TUNE_ENOMEM;
        s->n_params = t->n_params;
    }
    if (t->n_params != s->n_params)
        return tunep_error_set(lc->err, TUNE_ESTORE, "trial %lld has %zu parameters, expected %zu",
                               (long long)t->trial_id, t->n_params, s->n_params);
    if (s->n_trials == s->cap_trials) {
        int64_t cap = s->cap_trials ? s->cap_trials * 2 : 64;
        struct tunep_trial_rec **p =
            tunep_realloc(s->trials, (size_t)s->n_trials * sizeof *p, (size_t)cap * sizeof *p);
        if (!p)
            return TUNE_ENOMEM;
        s->trials = p;
        s->cap_trials = cap;
    }
    struct tunep_trial_rec *r = tunep_trial_rec_from_store(s, t);
    if (!r)
        return TUNE_ENOMEM;
    s->trials[s->n_trials++] = r;
    s->counts[r->status]++;
    return TUNE_OK;
}

tune_status tune_study_open(const char *dir, tune_study **ret_study, tune_error *err)
{
    if (!dir || !ret_study)
        return tunep_error_set(err, TUNE_EINVAL, "dir and ret_study must not be NULL");
    struct tunep_store *store = NULL;
    struct tunep_store_experiment_row row = {0};
    struct tune_study *s = NULL;
    tune_status st = tunep_store_open_experiment(dir, 1, &store, &row, err);
    if (st)
        return st;
    s = tunep_calloc(1, sizeof *s);
    if (!s || pthread_mutex_init(&s->lock, NULL)) {
        tunep_free(s);
        s = NULL;
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto fail;
    }
    s->main_metric = -1;
    s->readonly = 1;
    s->has_run = 1;
    s->store = store;
    store = NULL;
    s->cfg.name = tunep_strdup(row.name ? row.name : "experiment");
    s->cfg.metric = tunep_strdup(row.metric ? row.metric : "val_accuracy");
    s->cfg.storage = tunep_strdup(dir);
    s->cfg.json = tunep_strdup(row.config_json ? row.config_json : "{}");
    s->cfg.mode_max = !(row.mode && strcmp(row.mode, "min") == 0);
    s->cfg.seed = row.seed;
    s->sign = s->cfg.mode_max ? 1.0 : -1.0;
    if (!s->cfg.name || !s->cfg.metric || !s->cfg.storage || !s->cfg.json ||
        tune_space_new(&s->cfg.space, err)) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto fail;
    }
    struct load_ctx lc = {s, err};
    st = tunep_store_foreach_trial(s->store, load_trial, &lc, err);
    if (st == TUNE_ENOMEM)
        tunep_error_set(err, st, "out of memory loading trials");
    if (st)
        goto fail;
    /* The sweep's size comes from its stored config; trials not started yet are
     * not in the store. A config that no longer validates here (its data files
     * moved, say) still leaves everything stored readable. */
    s->total_trials = s->n_trials;
    struct tunep_config parsed;
    if (tunep_config_parse(s->cfg.json, strlen(s->cfg.json), dir, NULL, NULL, &parsed, NULL) ==
        TUNE_OK) {
        int64_t total =
            (int64_t)tunep_space_grid_size(parsed.space, parsed.search == TUNEP_SEARCH_GRID, NULL) *
            parsed.num_samples;
        if (total > s->total_trials)
            s->total_trials = total;
        tunep_config_done(&parsed);
    }
    tunep_store_experiment_done(&row);
    *ret_study = s;
    return TUNE_OK;
fail:
    tunep_store_experiment_done(&row);
    tunep_store_close(store);
    tune_study_free(s);
    return st;
}
