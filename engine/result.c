/*
 * result.c - the best trial as typed values (tune_result), for programs that
 * would otherwise parse tune_study_best_json().
 *
 * The best trial is the one tune_study_best_json() describes
 * (tunep_study_best_trial()). A result is a deep copy taken under the study
 * lock: it does not change while the study runs on, and it outlives the
 * study. Parameters keep the space's order and flattened names
 * ("optimizer/lr"); metrics are the trial's last reported value of each.
 */
#include "engine/study.h"

#include <math.h>
#include <string.h>

struct tune_result {
    int64_t trial_id;
    tune_trial_status status;
    int64_t iteration;
    double time_total_s;
    size_t n_params;
    char **param_names;         /* owned */
    struct tunep_value *params; /* strings owned */
    size_t n_metrics;
    char **metric_names; /* owned */
    double *metric_values;
};

void tune_result_free(tune_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_params; i++) {
        if (r->param_names)
            tunep_free(r->param_names[i]);
        if (r->params && r->params[i].type == TUNEP_V_STRING)
            tunep_free((char *)r->params[i].u.s);
    }
    for (size_t i = 0; r->metric_names && i < r->n_metrics; i++)
        tunep_free(r->metric_names[i]);
    tunep_free(r->param_names);
    tunep_free(r->params);
    tunep_free(r->metric_names);
    tunep_free(r->metric_values);
    tunep_free(r);
}

/* A copy of trial rec of s; NULL on OOM. Lock held. */
static tune_result *result_copy(const struct tune_study *s, const struct tunep_trial_rec *rec)
{
    tune_result *r = tunep_calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->trial_id = rec->id;
    r->status = rec->status;
    r->iteration = rec->iteration;
    r->time_total_s = rec->time_total_s;
    size_t n = s->n_params;
    r->param_names = tunep_calloc(n ? n : 1, sizeof *r->param_names);
    r->params = tunep_calloc(n ? n : 1, sizeof *r->params);
    if (!r->param_names || !r->params)
        goto fail;
    /* n_params counts the entries set so far, so that a half-made copy frees exactly those. */
    for (size_t i = 0; i < n; i++) {
        struct tunep_value v = rec->values[i];
        char *name = tunep_strdup(s->param_names[i]);
        char *str = NULL;
        if (v.type == TUNEP_V_STRING && !(str = tunep_strdup(v.u.s ? v.u.s : ""))) {
            tunep_free(name);
            goto fail;
        }
        if (!name) {
            tunep_free(str);
            goto fail;
        }
        if (str)
            v.u.s = str;
        r->param_names[i] = name;
        r->params[i] = v;
        r->n_params++;
    }
    /* A NaN slot is a metric the trial never reported (tunep_trial_rec_set_last()). */
    size_t m = 0;
    for (size_t i = 0; i < rec->n_last && i < s->n_metrics; i++)
        m += !isnan(rec->last[i]);
    r->metric_names = tunep_calloc(m ? m : 1, sizeof *r->metric_names);
    r->metric_values = tunep_calloc(m ? m : 1, sizeof *r->metric_values);
    if (!r->metric_names || !r->metric_values)
        goto fail;
    for (size_t i = 0; i < rec->n_last && i < s->n_metrics; i++) {
        if (isnan(rec->last[i]))
            continue;
        if (!(r->metric_names[r->n_metrics] = tunep_strdup(s->metric_names[i])))
            goto fail;
        r->metric_values[r->n_metrics++] = rec->last[i];
    }
    return r;
fail:
    tune_result_free(r);
    return NULL;
}

tune_status tune_study_best(tune_study *s, tune_result **ret_result, tune_error *err)
{
    if (!s || !ret_result)
        return tunep_error_set(err, TUNE_EINVAL, "study and ret_result must not be NULL");
    tune_status st = TUNE_OK;
    tune_result *r = NULL;
    pthread_mutex_lock(&s->lock);
    int64_t best = tunep_study_best_trial(s);
    if (best < 0)
        st = tunep_error_set(err, TUNE_ENOTFOUND, "no trial reported the metric '%s'",
                             s->cfg.metric);
    else if (!(r = result_copy(s, s->trials[best])))
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    pthread_mutex_unlock(&s->lock);
    if (!st)
        *ret_result = r;
    return st;
}

int64_t tune_result_trial_id(const tune_result *r)
{
    return r ? r->trial_id : -1;
}

tune_trial_status tune_result_status(const tune_result *r)
{
    return r ? r->status : TUNE_TRIAL_STATUS_COUNT;
}

int64_t tune_result_iteration(const tune_result *r)
{
    return r ? r->iteration : 0;
}

double tune_result_time_total_s(const tune_result *r)
{
    return r ? r->time_total_s : (double)NAN;
}

size_t tune_result_param_count(const tune_result *r)
{
    return r ? r->n_params : 0;
}

const char *tune_result_param_name(const tune_result *r, size_t i)
{
    return r && i < r->n_params ? r->param_names[i] : NULL;
}

tune_param_type tune_result_param_type(const tune_result *r, size_t i)
{
    if (!r || i >= r->n_params)
        return TUNE_PARAM_TYPE_COUNT;
    switch (r->params[i].type) {
        case TUNEP_V_DOUBLE: return TUNE_PARAM_DOUBLE;
        case TUNEP_V_INT: return TUNE_PARAM_INT;
        case TUNEP_V_STRING: return TUNE_PARAM_STRING;
        case TUNEP_V_BOOL: return TUNE_PARAM_BOOL;
    }
    return TUNE_PARAM_TYPE_COUNT;
}

/* The parameter `name`, or NULL with the getters' error in *ret_st. */
static const struct tunep_value *find_param(const tune_result *r, const char *name, const void *ret,
                                            tune_status *ret_st, tune_error *err)
{
    if (!r || !name || !ret) {
        *ret_st = tunep_error_set(err, TUNE_EINVAL, "result, name and ret_value must not be NULL");
        return NULL;
    }
    for (size_t i = 0; i < r->n_params; i++)
        if (strcmp(r->param_names[i], name) == 0)
            return &r->params[i];
    *ret_st = tunep_error_set(err, TUNE_ENOTFOUND, "no parameter '%s'", name);
    return NULL;
}

tune_status tune_result_get_double(const tune_result *r, const char *name, double *ret_value,
                                   tune_error *err)
{
    tune_status st;
    const struct tunep_value *v = find_param(r, name, ret_value, &st, err);
    return v ? tunep_value_get_double(v, name, ret_value, err) : st;
}

tune_status tune_result_get_int(const tune_result *r, const char *name, int64_t *ret_value,
                                tune_error *err)
{
    tune_status st;
    const struct tunep_value *v = find_param(r, name, ret_value, &st, err);
    return v ? tunep_value_get_int(v, name, ret_value, err) : st;
}

tune_status tune_result_get_string(const tune_result *r, const char *name, const char **ret_value,
                                   tune_error *err)
{
    tune_status st;
    const struct tunep_value *v = find_param(r, name, ret_value, &st, err);
    return v ? tunep_value_get_string(v, name, ret_value, err) : st;
}

tune_status tune_result_get_bool(const tune_result *r, const char *name, int *ret_value,
                                 tune_error *err)
{
    tune_status st;
    const struct tunep_value *v = find_param(r, name, ret_value, &st, err);
    return v ? tunep_value_get_bool(v, name, ret_value, err) : st;
}

size_t tune_result_metric_count(const tune_result *r)
{
    return r ? r->n_metrics : 0;
}

const char *tune_result_metric_name(const tune_result *r, size_t i)
{
    return r && i < r->n_metrics ? r->metric_names[i] : NULL;
}

tune_status tune_result_get_metric(const tune_result *r, const char *name, double *ret_value,
                                   tune_error *err)
{
    if (!r || !name || !ret_value)
        return tunep_error_set(err, TUNE_EINVAL, "result, name and ret_value must not be NULL");
    for (size_t i = 0; i < r->n_metrics; i++) {
        if (strcmp(r->metric_names[i], name) == 0) {
            *ret_value = r->metric_values[i];
            return TUNE_OK;
        }
    }
    return tunep_error_set(err, TUNE_ENOTFOUND, "trial %lld reported no metric '%s'",
                           (long long)r->trial_id, name);
}
