/*
 * progress.c - looking at a study: the best trial, CSV export, and opening
 * a finished experiment folder read-only. The live progress table is
 * progress_table.c's.
 */
#include "engine/study.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/text.h"

static double last_metric(const struct tune_study *s, const struct tunep_trial_rec *r)
{
    if (s->main_metric < 0 || (size_t)s->main_metric >= r->n_last)
        return (double)NAN;
    return r->last[s->main_metric];
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
        /* The objectives (a "metric" list): the stored row holds only the first. */
        for (size_t j = 0; j < parsed.n_objectives; j++) {
            s->cfg.objectives[j] = parsed.objectives[j];
            s->cfg.objectives_max[j] = parsed.objectives_max[j];
            parsed.objectives[j] = NULL;
        }
        s->cfg.n_objectives = parsed.n_objectives;
        parsed.n_objectives = 0;
        tunep_config_done(&parsed);
    }
    if (s->cfg.n_objectives == 0) {
        if (!(s->cfg.objectives[0] = tunep_strdup(s->cfg.metric))) {
            st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
            goto fail;
        }
        s->cfg.objectives_max[0] = s->cfg.mode_max;
        s->cfg.n_objectives = 1;
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
