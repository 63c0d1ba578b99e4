/*
 * result.c - the best trial as typed values (tune_result), for programs that
 * would otherwise parse tune_study_best_json().
 *
 * tune_study_best() gives the trial tune_study_best_json() describes
 * (tunep_study_best_trial()), with the trial's last value of each metric.
 * tune_study_best_by() is Ray's ResultGrid.get_best_result(metric, mode,
 * scope): it reads every stored report of every attempt and scores each
 * trial as Ray's Trial.metric_analysis does (see score_trials()); its result
 * holds every metric of the chosen report. A result is a deep copy taken
 * under the study lock: it does not change while the study runs on, and it
 * outlives the study. Parameters keep the space's order and flattened names
 * ("optimizer/lr").
 *
 * tune_study_pareto_front() is Optuna's study.best_trials for a study of
 * several objectives: the finished trials (TERMINATED or STOPPED) that no
 * other finished trial dominates on the objectives' last values
 * (search/pareto.h: a missing objective counts worst), best first by the
 * first objective.
 */
#include "engine/study.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/text.h"
#include "search/pareto.h"

struct tune_result {
    int64_t trial_id;
    tune_trial_status status;
    int attempt;
    int64_t iteration;
    double time_total_s;
    /* How it was chosen: the metric, mode and scope, and the trial's score by them. */
    char *metric;
    int mode_max;
    tune_scope scope;
    double score;
    size_t n_params;
    char **param_names;         /* owned */
    struct tunep_value *params; /* strings owned */
    size_t n_metrics;
    char **metric_names; /* owned */
    double *metric_values;
    /* A trial of a Pareto front: every objective in order, its direction and last value. */
    size_t n_objectives;
    char **objective_names; /* owned */
    int *objective_max;
    double *objective_values; /* NaN: never reported */
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
    for (size_t i = 0; r->objective_names && i < r->n_objectives; i++)
        tunep_free(r->objective_names[i]);
    tunep_free(r->metric_names);
    tunep_free(r->metric_values);
    tunep_free(r->objective_names);
    tunep_free(r->objective_max);
    tunep_free(r->objective_values);
    tunep_free(r->metric);
    tunep_free(r);
}

/* A result of trial rec of s with its parameters and no metrics yet; NULL on OOM. Lock held. */
static tune_result *result_params(const struct tune_study *s, const struct tunep_trial_rec *rec)
{
    tune_result *r = tunep_calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->trial_id = rec->id;
    r->status = rec->status;
    r->attempt = rec->attempt;
    r->iteration = rec->iteration;
    r->time_total_s = rec->time_total_s;
    r->mode_max = s->cfg.mode_max;
    r->scope = TUNE_SCOPE_LAST;
    r->score = (double)NAN;
    if (!(r->metric = tunep_strdup(s->cfg.metric)))
        goto fail;
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
    return r;
fail:
    tune_result_free(r);
    return NULL;
}

/* A copy of trial rec of s with its last value of each metric; NULL on OOM. Lock held. */
static tune_result *result_copy(const struct tune_study *s, const struct tunep_trial_rec *rec)
{
    tune_result *r = result_params(s, rec);
    if (!r)
        return NULL;
    if (s->main_metric >= 0 && (size_t)s->main_metric < rec->n_last)
        r->score = rec->last[s->main_metric];
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
        case TUNEP_V_ABSENT: break;
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

/* ---- Ray's get_best_result(metric, mode, scope) ---------------------------- */

static const char *const scope_names[TUNE_SCOPE_COUNT] = {
    [TUNE_SCOPE_LAST] = "last",
    [TUNE_SCOPE_AVG] = "avg",
    [TUNE_SCOPE_LAST_5_AVG] = "last-5-avg",
    [TUNE_SCOPE_LAST_10_AVG] = "last-10-avg",
    [TUNE_SCOPE_ALL] = "all",
};

const char *tune_scope_name(tune_scope scope)
{
    return (unsigned)scope < (unsigned)TUNE_SCOPE_COUNT ? scope_names[scope] : "unknown";
}

tune_status tune_scope_from_name(const char *name, tune_scope *ret_scope, tune_error *err)
{
    if (!name || !ret_scope)
        return tunep_error_set(err, TUNE_EINVAL, "name and ret_scope must not be NULL");
    for (int k = 0; k < TUNE_SCOPE_COUNT; k++) {
        if (strcmp(name, scope_names[k]) == 0) {
            *ret_scope = (tune_scope)k;
            return TUNE_OK;
        }
    }
    return tunep_error_set(err, TUNE_EINVAL,
                           "scope '%s': expected last, avg, last-5-avg, last-10-avg or all", name);
}

/* The longest of Ray's windows (metric_n_steps = [5, 10]). */
#define WINDOW_MAX 10

/*
 * One trial's analysis of the metric over its reports in order (attempt,
 * iteration), as Ray's Trial.update_metric() keeps metric_analysis: last
 * value, running average weighted by training_iteration, the newest
 * WINDOW_MAX values, and the best one by mode (NaN values never best). The
 * report each scope chooses is kept by (attempt, iteration).
 */
struct analysis {
    int64_t n;
    double last, avg, best;
    double window[WINDOW_MAX]; /* a ring: the newest value at (head + n_window - 1) % WINDOW_MAX */
    int head, n_window;
    int last_attempt, best_attempt;
    int64_t last_iter, best_iter;
};

struct best_pass {
    const struct tune_study *s;
    const char *metric;
    int mode_max;
    struct analysis *a; /* by trial id, s->n_trials of them */
    /* pass 2: the chosen report, copied into r */
    int64_t want_trial, want_iter;
    int want_attempt, found;
    tune_result *r;
};

static void analyse(struct analysis *a, int mode_max, const struct tunep_stored_report *rep,
                    double v)
{
    if (a->n == 0) {
        a->avg = v;
    } else {
        double step = rep->iteration > 0 ? (double)rep->iteration : 1.0; /* Ray: step or 1 */
        a->avg = 1.0 / step * (v + (step - 1.0) * a->avg);
    }
    a->n++;
    a->last = v;
    a->last_attempt = rep->attempt;
    a->last_iter = rep->iteration;
    if (a->n_window < WINDOW_MAX) {
        a->window[(a->head + a->n_window++) % WINDOW_MAX] = v;
    } else {
        a->window[a->head] = v;
        a->head = (a->head + 1) % WINDOW_MAX;
    }
    if (!isnan(v) && (a->best_iter == 0 || (mode_max ? v > a->best : v < a->best))) {
        a->best = v;
        a->best_attempt = rep->attempt;
        a->best_iter = rep->iteration;
    }
}

/* The mean of the newest k values, oldest first (Python's sum over the deque). */
static double window_mean(const struct analysis *a, int k)
{
    if (k > a->n_window)
        k = a->n_window;
    double sum = 0;
    for (int i = a->n_window - k; i < a->n_window; i++)
        sum += a->window[(a->head + i) % WINDOW_MAX];
    return sum / k;
}

static double scope_score(const struct analysis *a, tune_scope scope)
{
    switch (scope) {
        case TUNE_SCOPE_LAST: return a->last;
        case TUNE_SCOPE_AVG: return a->avg;
        case TUNE_SCOPE_LAST_5_AVG: return window_mean(a, 5);
        case TUNE_SCOPE_LAST_10_AVG: return window_mean(a, 10);
        case TUNE_SCOPE_ALL: return a->best_iter > 0 ? a->best : (double)NAN;
        case TUNE_SCOPE_COUNT: break;
    }
    return (double)NAN;
}

/* A value of the metric in the report; 0 when it has none. */
static int metric_value(const struct tunep_stored_report *rep, const char *metric, double *ret)
{
    for (size_t i = 0; i < rep->n_metrics; i++) {
        if (strcmp(rep->metric_names[i], metric) == 0) {
            *ret = rep->metric_values[i]; /* NaN for a reported NaN (stored null) */
            return 1;
        }
    }
    return 0;
}

static tune_status best_collect(void *ud, const struct tunep_stored_report *rep)
{
    struct best_pass *p = ud;
    double v;
    if (rep->trial_id >= 0 && rep->trial_id < p->s->n_trials && metric_value(rep, p->metric, &v))
        analyse(&p->a[rep->trial_id], p->mode_max, rep, v);
    return TUNE_OK;
}

static tune_status best_fetch(void *ud, const struct tunep_stored_report *rep)
{
    struct best_pass *p = ud;
    if (p->found || rep->trial_id != p->want_trial || rep->attempt != p->want_attempt ||
        rep->iteration != p->want_iter)
        return TUNE_OK;
    tune_result *r = p->r;
    p->found = 1;
    r->attempt = rep->attempt;
    r->iteration = rep->iteration;
    r->time_total_s = rep->time_total_s;
    size_t n = rep->n_metrics;
    r->metric_names = tunep_calloc(n ? n : 1, sizeof *r->metric_names);
    r->metric_values = tunep_calloc(n ? n : 1, sizeof *r->metric_values);
    if (!r->metric_names || !r->metric_values)
        return TUNE_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (!(r->metric_names[i] = tunep_strdup(rep->metric_names[i])))
            return TUNE_ENOMEM;
        r->metric_values[i] = rep->metric_values[i];
        r->n_metrics = i + 1;
    }
    return TUNE_OK;
}

tune_status tune_study_best_by(tune_study *s, const char *metric, const char *mode,
                               tune_scope scope, tune_result **ret_result, tune_error *err)
{
    if (!s || !ret_result || (unsigned)scope >= (unsigned)TUNE_SCOPE_COUNT)
        return tunep_error_set(err, TUNE_EINVAL,
                               "study and ret_result must not be NULL, and "
                               "scope one of tune_scope");
    if (mode && strcmp(mode, "max") != 0 && strcmp(mode, "min") != 0)
        return tunep_error_set(err, TUNE_EINVAL, "mode '%s': expected max or min", mode);
    if (!s->store)
        return tunep_error_set(err, TUNE_EUNSUPPORTED,
                               "the best trial by scope reads the stored reports: this study "
                               "runs with storage ':memory:' or has not run yet");
    struct best_pass p = {.s = s, .want_trial = -1};
    tune_result *r = NULL;
    tune_status st = TUNE_OK;
    pthread_mutex_lock(&s->lock);
    p.metric = metric ? metric : s->cfg.metric;
    /* A metric that is one of the objectives is ranked in its own direction by default. */
    p.mode_max = s->cfg.mode_max;
    for (size_t j = 0; j < s->cfg.n_objectives; j++)
        if (strcmp(s->cfg.objectives[j], p.metric) == 0)
            p.mode_max = s->cfg.objectives_max[j];
    if (mode)
        p.mode_max = strcmp(mode, "max") == 0;
    if (s->n_trials > 0 && !(p.a = tunep_calloc((size_t)s->n_trials, sizeof *p.a))) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto out;
    }
    if ((st = tunep_store_read_begin(s->store, err)))
        goto out;
    st = tunep_store_foreach_report_row(s->store, best_collect, &p, err);
    /* Ray's get_best_trial: the first strictly better score wins; NaN and inf are left out
     * (filter_nan_and_inf). Trials that ended in ERROR are left out, as tune_study_best(). */
    int64_t best = -1;
    double best_score = 0;
    for (int64_t i = 0; !st && i < s->n_trials; i++) {
        const struct tunep_trial_rec *rec = s->trials[i];
        double v = scope_score(&p.a[i], scope);
        if (!rec || rec->status == TUNE_TRIAL_ERROR || p.a[i].n == 0 || !isfinite(v))
            continue;
        if (best < 0 || (p.mode_max ? v > best_score : v < best_score)) {
            best = i;
            best_score = v;
        }
    }
    if (!st && best < 0) {
        st = tunep_error_set(err, TUNE_ENOTFOUND,
                             "no trial reported a finite value of '%s' (scope %s)", p.metric,
                             scope_names[scope]);
    } else if (!st) {
        const struct analysis *a = &p.a[best];
        int all = scope == TUNE_SCOPE_ALL;
        p.want_trial = best;
        p.want_attempt = all ? a->best_attempt : a->last_attempt;
        p.want_iter = all ? a->best_iter : a->last_iter;
        char *name = tunep_strdup(p.metric);
        r = result_params(s, s->trials[best]);
        if (!r || !name) {
            tunep_free(name);
            st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        } else {
            tunep_free(r->metric);
            r->metric = name;
            p.r = r;
            st = tunep_store_foreach_report_row(s->store, best_fetch, &p, err);
            if (!st && !p.found) /* one read snapshot: the first pass saw it */
                st = tunep_error_set(err, TUNE_EINTERNAL, "the chosen report is gone");
        }
        if (!st) {
            r->mode_max = p.mode_max;
            r->scope = scope;
            r->score = best_score;
        }
    }
    tunep_store_read_end(s->store);
out:
    pthread_mutex_unlock(&s->lock);
    tunep_free(p.a);
    if (st == TUNE_ENOMEM)
        tunep_error_set(err, st, "out of memory");
    if (st) {
        tune_result_free(r);
        return st;
    }
    *ret_result = r;
    return TUNE_OK;
}

int tune_result_attempt(const tune_result *r)
{
    return r ? r->attempt : 0;
}

double tune_result_score(const tune_result *r)
{
    return r ? r->score : (double)NAN;
}

tune_status tune_result_json(const tune_result *r, char **ret_json, tune_error *err)
{
    if (!r || !ret_json)
        return tunep_error_set(err, TUNE_EINVAL, "result and ret_json must not be NULL");
    struct tunep_buf b;
    tunep_buf_init(&b);
    char *config = tunep_values_json(r->n_params, (const char *const *)r->param_names, r->params);
    tunep_buf_printf(&b, "{\"trial_id\":%lld,\"status\":\"%s\",\"attempt\":%d,\"config\":%s,",
                     (long long)r->trial_id, tune_trial_status_name(r->status), r->attempt,
                     config ? config : "{}");
    tunep_buf_puts(&b, "\"metric\":");
    tunep_json_put_string(&b, r->metric ? r->metric : "");
    tunep_buf_printf(&b,
                     ",\"mode\":\"%s\",\"scope\":\"%s\",\"score\":", r->mode_max ? "max" : "min",
                     tune_scope_name(r->scope));
    tunep_json_put_number(&b, r->score);
    if (r->n_objectives) {
        tunep_buf_puts(&b, ",\"objectives\":{");
        for (size_t i = 0; i < r->n_objectives; i++) {
            tunep_buf_puts(&b, i ? "," : "");
            tunep_json_put_string(&b, r->objective_names[i]);
            tunep_buf_puts(&b, ":");
            tunep_json_put_number(&b, r->objective_values[i]);
        }
        tunep_buf_puts(&b, "},\"modes\":{");
        for (size_t i = 0; i < r->n_objectives; i++) {
            tunep_buf_puts(&b, i ? "," : "");
            tunep_json_put_string(&b, r->objective_names[i]);
            tunep_buf_puts(&b, r->objective_max[i] ? ":\"max\"" : ":\"min\"");
        }
        tunep_buf_puts(&b, "}");
    }
    tunep_buf_printf(&b, ",\"training_iteration\":%lld,\"time_total_s\":", (long long)r->iteration);
    tunep_json_put_number(&b, r->time_total_s);
    tunep_buf_puts(&b, ",\"metrics\":{");
    for (size_t i = 0; i < r->n_metrics; i++) {
        if (i)
            tunep_buf_puts(&b, ",");
        tunep_json_put_string(&b, r->metric_names[i]);
        tunep_buf_puts(&b, ":");
        tunep_json_put_number(&b, r->metric_values[i]);
    }
    tunep_buf_puts(&b, "}}");
    int nomem = !config || b.oom;
    tunep_free(config);
    char *json = tunep_buf_take(&b);
    if (nomem || !json) {
        tunep_free(json);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    }
    *ret_json = json;
    return TUNE_OK;
}

/* ---- the Pareto front (several objectives) --------------------------------- */

size_t tune_study_objective_count(tune_study *s)
{
    if (!s)
        return 0;
    return s->cfg.n_objectives ? s->cfg.n_objectives : 1;
}

/* Objective j's name and direction; a study without a list has its one metric. */
static const char *objective_name(const struct tune_study *s, size_t j)
{
    return s->cfg.n_objectives ? s->cfg.objectives[j] : s->cfg.metric;
}

static int objective_max(const struct tune_study *s, size_t j)
{
    return s->cfg.n_objectives ? s->cfg.objectives_max[j] : s->cfg.mode_max;
}

/* The interned id of metric name, or -1 when no trial reported it (no interning here). */
static long metric_id_of(const struct tune_study *s, const char *name)
{
    for (size_t i = 0; i < s->n_metrics; i++)
        if (strcmp(s->metric_names[i], name) == 0)
            return (long)i;
    return -1;
}

/* A front member's place: its first objective in minimisation form (NaN last), then its id. */
struct front_key {
    double y0;
    int64_t id;
};

static int front_key_cmp(const void *pa, const void *pb)
{
    const struct front_key *a = pa, *b = pb;
    int an = isnan(a->y0), bn = isnan(b->y0);
    if (an != bn)
        return an - bn;
    if (!an && a->y0 != b->y0)
        return a->y0 < b->y0 ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* Adds the objectives' names, directions and values y (study form, not negated) to r. */
static int result_objectives(tune_result *r, const struct tune_study *s, size_t m, const double *y)
{
    r->objective_names = tunep_calloc(m, sizeof *r->objective_names);
    r->objective_max = tunep_calloc(m, sizeof *r->objective_max);
    r->objective_values = tunep_calloc(m, sizeof *r->objective_values);
    if (!r->objective_names || !r->objective_max || !r->objective_values)
        return -1;
    for (size_t j = 0; j < m; j++) {
        if (!(r->objective_names[j] = tunep_strdup(objective_name(s, j))))
            return -1;
        r->objective_max[j] = objective_max(s, j);
        r->objective_values[j] = y[j];
        r->n_objectives = j + 1;
    }
    r->score = y[0];
    r->mode_max = r->objective_max[0];
    return 0;
}

void tune_results_free(tune_result **results, size_t count)
{
    if (!results)
        return;
    for (size_t i = 0; i < count; i++)
        tune_result_free(results[i]);
    tunep_free(results);
}

tune_status tune_study_pareto_front(tune_study *s, tune_result ***ret_results, size_t *ret_count,
                                    tune_error *err)
{
    if (!s || !ret_results || !ret_count)
        return tunep_error_set(err, TUNE_EINVAL,
                               "study, ret_results and ret_count must not be NULL");
    tune_status st = TUNE_OK;
    tune_result **out = NULL;
    size_t k = 0, n = 0;
    double *y = NULL, *raw = NULL;
    int64_t *ids = NULL;
    int *on_front = NULL;
    struct front_key *keys = NULL;
    pthread_mutex_lock(&s->lock);
    size_t m = tune_study_objective_count(s);
    long mid[TUNEP_PARETO_MAX_OBJECTIVES];
    int maximize[TUNEP_PARETO_MAX_OBJECTIVES];
    if (m > TUNEP_PARETO_MAX_OBJECTIVES) {
        st = tunep_error_set(err, TUNE_EINVAL, "%zu objectives: at most %d", m,
                             TUNEP_PARETO_MAX_OBJECTIVES);
        goto out;
    }
    for (size_t j = 0; j < m; j++) {
        mid[j] = metric_id_of(s, objective_name(s, j));
        maximize[j] = objective_max(s, j);
    }
    size_t cap = s->n_trials > 0 ? (size_t)s->n_trials : 1;
    raw = tunep_malloc(cap * m * sizeof *raw);
    y = tunep_malloc(cap * m * sizeof *y);
    ids = tunep_malloc(cap * sizeof *ids);
    on_front = tunep_malloc(cap * sizeof *on_front);
    if (!raw || !y || !ids || !on_front) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto out;
    }
    /* The finished trials that reported at least one objective. */
    for (int64_t i = 0; i < s->n_trials; i++) {
        const struct tunep_trial_rec *rec = s->trials[i];
        if (!rec || (rec->status != TUNE_TRIAL_TERMINATED && rec->status != TUNE_TRIAL_STOPPED))
            continue;
        size_t have = 0;
        for (size_t j = 0; j < m; j++) {
            double v =
                mid[j] >= 0 && (size_t)mid[j] < rec->n_last ? rec->last[mid[j]] : (double)NAN;
            raw[n * m + j] = v;
            have += !isnan(v);
        }
        if (have)
            ids[n++] = i;
    }
    tunep_pareto_minimize(raw, n, m, maximize, y);
    k = tunep_pareto_front(y, n, m, on_front);
    if (k == 0) {
        struct tunep_buf names;
        tunep_buf_init(&names);
        for (size_t j = 0; j < m; j++) {
            tunep_buf_puts(&names, j ? ", '" : "'");
            tunep_buf_puts(&names, objective_name(s, j));
            tunep_buf_puts(&names, "'");
        }
        st = tunep_error_set(err, TUNE_ENOTFOUND,
                             "no finished trial (TERMINATED or STOPPED) reported %s",
                             names.data ? names.data : "the objectives");
        tunep_buf_done(&names);
        goto out;
    }
    keys = tunep_malloc(k * sizeof *keys);
    out = tunep_calloc(k, sizeof *out);
    if (!keys || !out) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto out;
    }
    size_t f = 0;
    for (size_t i = 0; i < n; i++)
        if (on_front[i])
            keys[f++] = (struct front_key){y[i * m], (int64_t)i};
    qsort(keys, k, sizeof *keys, front_key_cmp);
    for (size_t q = 0; q < k; q++) {
        size_t i = (size_t)keys[q].id;
        if (!(out[q] = result_copy(s, s->trials[ids[i]])) ||
            result_objectives(out[q], s, m, raw + i * m)) {
            st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
            goto out;
        }
    }
out:
    pthread_mutex_unlock(&s->lock);
    tunep_free(raw);
    tunep_free(y);
    tunep_free(ids);
    tunep_free(on_front);
    tunep_free(keys);
    if (st) {
        tune_results_free(out, k);
        return st;
    }
    *ret_results = out;
    *ret_count = k;
    return TUNE_OK;
}
