/*
 * trial.c - what an objective calls: typed parameter getters and reports.
 * The getters' conversions (tunep_value_get_*) serve tune_result's too.
 *
 * A report takes the study lock once: it numbers the iteration, writes the
 * store and commits (so an answered report survives a crash), asks the
 * scheduler, checks the stop conditions and answers TUNE_OK or TUNE_ESTOP.
 * A NaN, an infinity or a missing main metric is the worst possible score for
 * the scheduler and is logged; it never crashes (Ray crashes on None).
 */
#include "engine/study.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/text.h"
#include "engine/host.h"

int64_t tune_trial_id(const tune_trial *t)
{
    return t ? t->rec->id : -1;
}

int tune_trial_gpu_count(const tune_trial *t)
{
    return t ? t->n_gpus : 0;
}

int tune_trial_gpu(const tune_trial *t, int i)
{
    if (!t || i < 0 || i >= t->n_gpus || !t->study->gpus)
        return -1;
    return t->study->gpus->ordinal[t->gpu[i]];
}

const char *tune_trial_gpu_ids(const tune_trial *t)
{
    return t && t->n_gpus ? t->gpu_ids : "";
}

int tune_trial_attempt(const tune_trial *t)
{
    return t ? t->rec->attempt : 0;
}

uint64_t tune_trial_seed(const tune_trial *t)
{
    if (!t)
        return 0;
    uint64_t seed = t->remote_tag ? t->remote_seed : t->study->cfg.seed;
    return tunep_trial_seed(seed, t->rec->id, TUNEP_RNG_OBJECTIVE);
}

int64_t tune_trial_iteration(const tune_trial *t)
{
    return t ? t->rec->iteration : 0;
}

static const struct tunep_value *find_value(const tune_trial *t, const char *name)
{
    const struct tune_study *s = t->study;
    for (size_t i = 0; i < s->n_params; i++)
        if (strcmp(s->param_names[i], name) == 0)
            return &t->rec->values[i];
    return NULL;
}

static tune_status wrong_type(const char *name, const struct tunep_value *v, const char *wanted,
                              tune_error *err)
{
    const char *is = "a float";
    if (v->type == TUNEP_V_INT)
        is = "an integer";
    else if (v->type == TUNEP_V_STRING)
        is = "a string";
    else if (v->type == TUNEP_V_BOOL)
        is = "a boolean";
    return tunep_error_set(err, TUNE_ETYPE, "parameter '%s' is %s, not %s", name, is, wanted);
}

/* A conditional parameter outside its option reads as one the trial does not have. */
static tune_status absent(const char *name, tune_error *err)
{
    return tunep_error_set(err, TUNE_ENOTFOUND,
                           "no parameter '%s' in this trial (its option was not chosen)", name);
}

tune_status tunep_value_get_double(const struct tunep_value *v, const char *name, double *ret,
                                   tune_error *err)
{
    switch (v->type) {
        case TUNEP_V_DOUBLE: *ret = v->u.d; return TUNE_OK;
        case TUNEP_V_INT: *ret = (double)v->u.i; return TUNE_OK;
        case TUNEP_V_BOOL: *ret = v->u.b ? 1.0 : 0.0; return TUNE_OK;
        case TUNEP_V_STRING: break;
        case TUNEP_V_ABSENT: return absent(name, err);
    }
    return wrong_type(name, v, "a number", err);
}

tune_status tunep_value_get_int(const struct tunep_value *v, const char *name, int64_t *ret,
                                tune_error *err)
{
    switch (v->type) {
        case TUNEP_V_INT: *ret = v->u.i; return TUNE_OK;
        case TUNEP_V_BOOL: *ret = v->u.b; return TUNE_OK;
        case TUNEP_V_DOUBLE:
            if (v->u.d == floor(v->u.d) && fabs(v->u.d) < 9.0e15) {
                *ret = (int64_t)v->u.d;
                return TUNE_OK;
            }
            break;
        case TUNEP_V_STRING: break;
        case TUNEP_V_ABSENT: return absent(name, err);
    }
    return wrong_type(name, v, "an integer", err);
}

tune_status tunep_value_get_string(const struct tunep_value *v, const char *name, const char **ret,
                                   tune_error *err)
{
    if (v->type == TUNEP_V_ABSENT)
        return absent(name, err);
    if (v->type != TUNEP_V_STRING)
        return wrong_type(name, v, "a string", err);
    *ret = v->u.s;
    return TUNE_OK;
}

tune_status tunep_value_get_bool(const struct tunep_value *v, const char *name, int *ret,
                                 tune_error *err)
{
    if (v->type == TUNEP_V_ABSENT)
        return absent(name, err);
    if (v->type != TUNEP_V_BOOL)
        return wrong_type(name, v, "a boolean", err);
    *ret = v->u.b;
    return TUNE_OK;
}

/* The trial's parameter `name`, or NULL with the getters' error in *ret_st. */
static const struct tunep_value *get_value(const tune_trial *t, const char *name, const void *ret,
                                           tune_status *ret_st, tune_error *err)
{
    const struct tunep_value *v = NULL;
    if (!t || !name || !ret)
        *ret_st = tunep_error_set(err, TUNE_EINVAL, "trial, name and ret_value must not be NULL");
    else if (!(v = find_value(t, name)))
        *ret_st = tunep_error_set(err, TUNE_ENOTFOUND, "no parameter '%s'", name);
    return v;
}

tune_status tune_trial_get_double(const tune_trial *t, const char *name, double *ret,
                                  tune_error *err)
{
    tune_status st;
    const struct tunep_value *v = get_value(t, name, ret, &st, err);
    return v ? tunep_value_get_double(v, name, ret, err) : st;
}

tune_status tune_trial_get_int(const tune_trial *t, const char *name, int64_t *ret, tune_error *err)
{
    tune_status st;
    const struct tunep_value *v = get_value(t, name, ret, &st, err);
    return v ? tunep_value_get_int(v, name, ret, err) : st;
}

tune_status tune_trial_get_string(const tune_trial *t, const char *name, const char **ret,
                                  tune_error *err)
{
    tune_status st;
    const struct tunep_value *v = get_value(t, name, ret, &st, err);
    return v ? tunep_value_get_string(v, name, ret, err) : st;
}

tune_status tune_trial_get_bool(const tune_trial *t, const char *name, int *ret, tune_error *err)
{
    tune_status st;
    const struct tunep_value *v = get_value(t, name, ret, &st, err);
    return v ? tunep_value_get_bool(v, name, ret, err) : st;
}

double tune_trial_get_double_or(const tune_trial *t, const char *name, double fallback)
{
    double v;
    return tune_trial_get_double(t, name, &v, NULL) == TUNE_OK ? v : fallback;
}

int64_t tune_trial_get_int_or(const tune_trial *t, const char *name, int64_t fallback)
{
    int64_t v;
    return tune_trial_get_int(t, name, &v, NULL) == TUNE_OK ? v : fallback;
}

tune_status tune_trial_config_json(const tune_trial *t, char **ret_json, tune_error *err)
{
    if (!t || !ret_json)
        return tunep_error_set(err, TUNE_EINVAL, "trial and ret_json must not be NULL");
    char *json = tunep_values_json(t->study->n_params, t->study->param_names, t->rec->values);
    if (!json)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    *ret_json = json;
    return TUNE_OK;
}

void tune_trial_set_error(tune_trial *t, const char *fmt, ...)
{
    if (!t || !fmt)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->error, sizeof t->error, fmt, ap);
    va_end(ap);
}

const char *tune_trial_error(const tune_trial *t)
{
    return t ? t->error : "";
}

int tune_trial_should_stop(const tune_trial *t)
{
    /* A closed or abandoned handle answers without looking at its study, which may be gone. */
    if (t && atomic_load(&((tune_trial *)t)->state) != TUNEP_HANDLE_OPEN)
        return 1;
    return t && atomic_load(&t->study->stop_requested);
}

double tune_trial_timeout_s(const tune_trial *t)
{
    return t && t->study->cfg.trial_timeout_s > 0 ? t->study->cfg.trial_timeout_s
                                                  : (double)INFINITY;
}

double tune_trial_time_left(const tune_trial *t)
{
    double limit = tune_trial_timeout_s(t);
    return isinf(limit) ? (double)INFINITY : limit - (tunep_now_monotonic() - t->t0);
}

/* Keeps the trial's last value of each metric, for progress and best. Lock held. */
static int remember(struct tune_study *s, struct tunep_trial_rec *rec, size_t n,
                    const char *const *names, const double *values)
{
    /* Every name first, so that the record's slots grow once per report, not once per name. */
    for (size_t i = 0; i < n; i++)
        if (tunep_study_metric_id(s, names[i]) < 0)
            return -1;
    for (size_t i = 0; i < n; i++)
        if (tunep_trial_rec_set_last(s, rec, names[i], values[i]))
            return -1;
    return 0;
}

/* The value of the scheduler's time attribute in this report. */
static int time_value(const struct tune_study *s, const struct tune_trial *t, size_t n,
                      const char *const *names, const double *values, double *ret)
{
    const char *attr = tunep_scheduler_time_attr(s->sched);
    if (strcmp(attr, "training_iteration") == 0) {
        *ret = (double)t->rec->iteration;
        return 1;
    }
    if (strcmp(attr, "time_total_s") == 0) {
        *ret = t->rec->time_total_s;
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], attr) == 0 && !isnan(values[i])) {
            *ret = values[i];
            return 1;
        }
    return 0;
}

/* The main metric's value in this report (the last one when repeated). */
static double main_value(const struct tune_study *s, size_t n, const char *const *names,
                         const double *values)
{
    double v = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], s->cfg.metric) == 0)
            v = values[i];
    return v;
}

/* The stop conditions of the config; the end reason or NONE. Lock held. */
static enum tunep_end_reason check_stop(struct tune_study *s, const struct tune_trial *t, size_t n,
                                        const char *const *names, const double *values)
{
    const struct tunep_stop_config *stop = &s->cfg.stop;
    if (stop->training_iteration > 0 && t->rec->iteration >= stop->training_iteration)
        return TUNEP_END_TERMINATED;
    for (size_t k = 0; k < stop->n_thresholds; k++) {
        for (size_t i = 0; i < n; i++) {
            if (strcmp(names[i], stop->thresholds[k].metric) != 0 || isnan(values[i]))
                continue;
            /* The main metric in mode min stops when it falls to the threshold. */
            int is_min_main = !s->cfg.mode_max && strcmp(names[i], s->cfg.metric) == 0;
            if (is_min_main ? values[i] <= stop->thresholds[k].value
                            : values[i] >= stop->thresholds[k].value)
                return TUNEP_END_STOPPED;
        }
    }
    if (stop->time_budget_s > 0 && tunep_now_monotonic() - s->t_start >= stop->time_budget_s) {
        s->budget_exhausted = 1;
        return TUNEP_END_STOPPED;
    }
    return TUNEP_END_NONE;
}

/*
 * Asks the objective for a checkpoint every checkpoint_frequency iterations,
 * and, for a scheduler that copies checkpoints between trials (PBT), every
 * checkpoint_interval of its time attribute, so that a donor's state is
 * fresh when a worse trial copies it. Lock held.
 */
static void want_checkpoint(const struct tune_study *s, struct tunep_trial_rec *rec, int has_t,
                            double tv)
{
    int64_t freq = s->cfg.checkpoint_frequency;
    if (freq > 0 && rec->iteration % freq == 0)
        rec->want_ckpt = 1;
    const struct tunep_scheduler_config *c = &s->cfg.scheduler;
    if (c->type->checkpoint_interval && has_t &&
        (!rec->has_ckpt || tv - rec->ckpt_t >= c->type->checkpoint_interval(c->cfg)))
        rec->want_ckpt = 1;
}

/* Records the first store failure; every worker stops at its next chance. Lock held. */
static void store_failed(struct tune_study *s, const tune_error *e)
{
    if (!s->fatal) {
        s->fatal = 1;
        s->fatal_err = *e;
        tunep_log(TUNE_LOG_DEBUG, "%s", e->text);
    }
}

/*
 * Returns once a commit covers the report with this ticket: the calling
 * thread commits everything written so far unless another thread's commit
 * already did (group commit; see study.h). Lock not held.
 */
static tune_status make_durable(struct tune_study *s, uint64_t ticket)
{
    tune_status st = TUNE_OK;
    pthread_mutex_lock(&s->commit_lock);
    pthread_mutex_lock(&s->lock);
    if (s->fatal) {
        st = TUNE_ESTORE;
    } else if (s->durable_seq < ticket) {
        tune_error e;
        uint64_t upto = s->write_seq;
        if (tunep_store_commit(s->store, &e)) {
            store_failed(s, &e);
            st = TUNE_ESTORE;
        } else {
            s->durable_seq = upto;
        }
    }
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_unlock(&s->commit_lock);
    return st;
}

/*
 * Records where this run of the objective is: this process, or the isolated
 * child (t->pid); unknown for a trial on an MPI worker rank, which runs on
 * another host. Lock held.
 */
static tune_status record_host(struct tune_study *s, tune_trial *t, tune_error *err)
{
    int remote = s->mpi_size > 1;
    t->host_done = 1;
    char device[sizeof t->gpu_ids + 8] = "cpu";
    if (t->n_gpus > 0)
        snprintf(device, sizeof device, "cuda:%s", t->gpu_ids);
    return tunep_store_trial_host(s->store, t->rec->id, t->rec->attempt,
                                  remote   ? 0
                                  : t->pid ? t->pid
                                           : (int64_t)getpid(),
                                  remote ? NULL : tunep_host_name(),
                                  remote ? NULL : tunep_host_ip(), remote ? NULL : device, err);
}

/* A report in the controller's process: written, committed and answered. */
static tune_status report_local(tune_trial *t, size_t n, const char *const *names,
                                const double *values)
{
    struct tune_study *s = t->study;
    struct tunep_trial_rec *rec = t->rec;
    tune_status ret = TUNE_OK;
    uint64_t ticket = 0; /* of this report's write, for make_durable() */

    pthread_mutex_lock(&s->lock);
    if (atomic_load(&t->state) != TUNEP_HANDLE_OPEN) {
        /* Closed or abandoned since tune_trial_report() looked: the attempt has ended. */
        ret = TUNE_ESTOP;
        goto out;
    }
    if (s->fatal) {
        ret = TUNE_ESTORE;
        goto out;
    }
    if (t->end != TUNEP_END_NONE) {
        /* Reporting after being told to stop: ignore, and say stop again. */
        ret = TUNE_ESTOP;
        goto out;
    }
    rec->iteration++;
    /* The attempt's own time (its timeout's), and the trial's as Ray reports it. */
    double now = tunep_now_monotonic();
    double attempt_s = rec->time_base + (now - t->t0);
    double restored = t->t_restore > 0 ? t->t_restore : t->t0;
    struct tunep_report_times rt = {
        .iteration = rec->iteration,
        .time_total_s = rec->time_offset + attempt_s,
        .time_this_iter_s = now - (t->t_last > restored ? t->t_last : restored),
        .time_since_restore = now - restored,
        .iterations_since_restore = ++t->iters_since_restore,
        .wall_time = tunep_now_wall(),
    };
    rec->time_total_s = rt.time_total_s;
    t->t_last = now;
    if (rec->iteration <= rec->ff_until) {
        /* A resumed objective that did not load a checkpoint replays what it
         * reported before its pause: answered, not recorded again. */
        if (atomic_load(&s->stop_requested)) {
            t->end = TUNEP_END_INTERRUPTED;
            ret = TUNE_ESTOP;
        }
        goto out;
    }
    s->n_reports++;
    if (s->store) {
        tune_error e;
        if (!t->host_done && record_host(s, t, &e)) {
            store_failed(s, &e);
            ret = TUNE_ESTORE;
            goto out;
        }
        if (tunep_store_report_row(s->store, rec->id, rec->attempt, &rt, n, names, values, &e)) {
            store_failed(s, &e);
            ret = TUNE_ESTORE;
            goto out;
        }
        ticket = ++s->write_seq;
    }
    if (remember(s, rec, n, names, values)) {
        ret = TUNE_ENOMEM;
        goto out;
    }

    double score = -HUGE_VAL, tv = 0;
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], s->cfg.metric) == 0) {
            found = 1;
            if (isfinite(values[i]))
                score = s->sign * values[i];
        }
    }
    if (!found && s->n_warned_nan++ < 20)
        tunep_log(TUNE_LOG_WARN,
                  "trial %lld iteration %lld: metric '%s' is missing; counted as the worst value",
                  (long long)rec->id, (long long)rec->iteration, s->cfg.metric);

    enum tunep_end_reason end = TUNEP_END_NONE;
    double bad_value = 0;
    if (found && score == -HUGE_VAL && !isfinite(bad_value = main_value(s, n, names, values))) {
        /* A diverged run: the attempt fails with its reason (the scheduler saw the worst value). */
        char num[32];
        tunep_format_double(num, sizeof num, bad_value);
        snprintf(t->error, sizeof t->error, "reported %s = %s at iteration %lld", s->cfg.metric,
                 num, (long long)rec->iteration);
        t->fail_now = 1;
        end = TUNEP_END_STOPPED;
        (void)tunep_scheduler_on_result(s->sched, rec->id, 0, 0, -HUGE_VAL);
    } else if (s->cfg.trial_timeout_s > 0 && attempt_s > s->cfg.trial_timeout_s) {
        /* In a thread a hung objective cannot be stopped, but a slow one is at its next report. */
        snprintf(t->error, sizeof t->error, "timed out after %g s (trial_timeout_s)",
                 s->cfg.trial_timeout_s);
        t->fail_now = 1;
        end = TUNEP_END_STOPPED;
    } else if (atomic_load(&s->stop_requested)) {
        end = TUNEP_END_INTERRUPTED;
    } else {
        int has_t = time_value(s, t, n, names, values, &tv);
        if (has_t) {
            rec->last_t = tv;
            rec->has_last_t = 1;
        }
        tunep_scheduler_set_waiting(s->sched,
                                    (s->n_retry - s->head_retry) + (s->total_trials - s->n_trials));
        enum tunep_decision d = tunep_scheduler_on_result(s->sched, rec->id, has_t, tv, score);
        if (s->searcher && has_t)
            (void)s->searcher->ops->on_result(s->searcher, rec->id, tv, score);
        if (d == TUNEP_STOP) {
            end = TUNEP_END_STOPPED;
        } else if (d == TUNEP_TERMINATE) {
            end = TUNEP_END_TERMINATED;
        } else if (d == TUNEP_PAUSE) {
            end = TUNEP_END_PAUSED;
            rec->want_ckpt = 1; /* so that it resumes where it paused */
        } else if (d == TUNEP_EXPLOIT) {
            /* Only a donor with a checkpoint can be copied; otherwise go on. */
            int64_t donor = tunep_scheduler_exploit_donor(s->sched, rec->id);
            if (donor >= 0 && donor < s->n_trials && donor != rec->id &&
                s->trials[donor]->has_ckpt) {
                end = TUNEP_END_EXPLOIT;
                t->donor = donor;
            }
        }
        if (end == TUNEP_END_NONE || end == TUNEP_END_PAUSED || end == TUNEP_END_EXPLOIT) {
            /* A stop condition wins over a pause: the trial would never resume. */
            enum tunep_end_reason stop = check_stop(s, t, n, names, values);
            if (stop != TUNEP_END_NONE)
                end = stop;
        }
        if (end == TUNEP_END_NONE)
            want_checkpoint(s, rec, has_t, tv);
    }
    t->end = end;
    if (end != TUNEP_END_NONE)
        ret = TUNE_ESTOP;
out:
    pthread_mutex_unlock(&s->lock);
    if (ticket && make_durable(s, ticket) != TUNE_OK)
        ret = TUNE_ESTORE;
    return ret;
}

/* Why a report was answered with st, into err. */
static void explain_answer(const tune_trial *t, tune_status st, tune_error *err)
{
    if (!err)
        return;
    struct tune_study *s = t->study;
    const char *why = "the trial must stop now";
    switch (st) {
        case TUNE_ESTOP:
            if (t->fail_now && t->error[0])
                why = t->error;
            else if (t->end == TUNEP_END_TERMINATED)
                why = "the trial reached its end (max_t or stop.training_iteration)";
            else if (t->end == TUNEP_END_STOPPED)
                why = "the trial was stopped (scheduler, stop condition or time budget)";
            else if (t->end == TUNEP_END_INTERRUPTED)
                why = "the study is stopping";
            else if (t->end == TUNEP_END_PAUSED)
                why = "the scheduler paused the trial";
            else if (t->end == TUNEP_END_EXPLOIT)
                why = "PBT restarts the trial from a better trial's checkpoint";
            tunep_error_set(err, st, "%s", why);
            return;
        case TUNE_ESTORE:
            /* The first store failure stopped the study; its message says what failed. */
            if (t->ipc_req < 0 && !t->remote_tag) {
                pthread_mutex_lock(&s->lock);
                int fatal = s->fatal;
                if (fatal)
                    *err = s->fatal_err;
                pthread_mutex_unlock(&s->lock);
                if (fatal)
                    return;
            }
            tunep_error_set(err, st, "the store failed: the study is stopping");
            return;
        default: tunep_error_set(err, st, "report failed: %s", tune_strerror(st)); return;
    }
}

/* The CSV columns the engine writes itself (docs/results.md). */
static const char *const reserved_names[] = {
    "trial_id",
    "status",
    "attempt",
    "attempts",
    "error",
    "training_iteration",
    "time_total_s",
    "time_this_iter_s",
    "time_since_restore",
    "iterations_since_restore",
    "timestamp",
    "date",
    "done",
    "pid",
    "hostname",
    "node_ip",
    "logdir",
};

int tune_metric_name_reserved(const char *name)
{
    if (!name)
        return 0;
    for (size_t k = 0; k < sizeof reserved_names / sizeof *reserved_names; k++)
        if (strcmp(name, reserved_names[k]) == 0)
            return 1;
    return strncmp(name, "config/", 7) == 0;
}

/*
 * The rule for metric names, the one for parameter names plus the CSV's:
 * UTF-8 of 1 to TUNEP_MAX_METRIC_NAME bytes without control characters (C0,
 * DEL, C1), not a column the engine writes itself (reserved_names) and not
 * "config/..." (the parameters' columns), so that results.csv and
 * progress.csv always have one header cell per column and load in pandas
 * whatever a program prints.
 */
static tune_status check_metric_name(const char *name, size_t i, tune_error *err)
{
    if (!name || !name[0] || strlen(name) > TUNEP_MAX_METRIC_NAME)
        return tunep_error_set(err, TUNE_EINVAL, "metric name %zu is empty or longer than %d bytes",
                               i, TUNEP_MAX_METRIC_NAME);
    char shown[4 * TUNEP_MAX_METRIC_NAME + 1];
    if (!tunep_utf8_valid(name) ||
        tunep_escape_ctrl(shown, sizeof shown, name, NULL) != strlen(name)) {
        tunep_escape_ctrl(shown, sizeof shown, name, NULL);
        return tunep_error_set(err, TUNE_EINVAL,
                               "metric name '%s' is not UTF-8 text without control characters",
                               shown);
    }
    if (strncmp(name, "config/", 7) == 0)
        return tunep_error_set(err, TUNE_EINVAL,
                               "metric name '%s' is reserved: 'config/' columns are parameters",
                               name);
    if (tune_metric_name_reserved(name))
        return tunep_error_set(err, TUNE_EINVAL,
                               "metric name '%s' is reserved: the engine reports it", name);
    return TUNE_OK;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A name given twice in one report (which value would count?): sets err. Names are non-NULL. */
static tune_status check_duplicate_metrics(size_t n, const char *const *names, tune_error *err)
{
    const char *dup = NULL;
    if (n <= 16) { /* pairwise for the usual few names */
        for (size_t i = 1; i < n && !dup; i++)
            for (size_t j = 0; j < i && !dup; j++)
                if (strcmp(names[i], names[j]) == 0)
                    dup = names[i];
    } else { /* sorted pointers keep thousands of names O(n log n) */
        const char **sorted = tunep_malloc(n * sizeof *sorted);
        if (!sorted)
            return tunep_error_set(err, TUNE_ENOMEM, "out of memory checking metric names");
        memcpy(sorted, names, n * sizeof *sorted);
        qsort(sorted, n, sizeof *sorted, name_cmp);
        for (size_t i = 1; i < n && !dup; i++)
            if (strcmp(sorted[i], sorted[i - 1]) == 0)
                dup = sorted[i]; /* the caller's string: valid after the free */
        tunep_free(sorted);
    }
    return dup ? tunep_error_set(err, TUNE_EINVAL, "metric '%s' appears twice in one report", dup)
               : TUNE_OK;
}

tune_status tune_trial_report(tune_trial *t, size_t n, const char *const *names,
                              const double *values, tune_error *err)
{
    if (!t || (n && (!names || !values)))
        return tunep_error_set(err, TUNE_EINVAL,
                               "trial must not be NULL, nor names and values when n > 0");
    for (size_t i = 0; i < n; i++) {
        tune_status bad = check_metric_name(names[i], i, err);
        if (bad)
            return bad;
    }
    if (n > TUNE_REPORT_MAX_METRICS)
        return tunep_error_set(err, TUNE_EINVAL, "a report holds %zu metrics, more than %d", n,
                               TUNE_REPORT_MAX_METRICS);
    /* busy tells tune_study_run() that this report may still use the study
     * (see abandon_overdue() in study.c); the handle's state is read after it. */
    atomic_fetch_add(&t->busy, 1);
    int state = atomic_load(&t->state);
    if (state != TUNEP_HANDLE_OPEN) {
        atomic_fetch_sub(&t->busy, 1);
        if (state == TUNEP_HANDLE_ABANDONED)
            return tunep_error_set(err, TUNE_ESTOP,
                                   "the trial timed out and was abandoned: return now");
        return tunep_error_set(err, TUNE_EINVAL,
                               "this trial has ended (its objective returned, or it was told): the "
                               "report is refused");
    }
    tune_status st = check_duplicate_metrics(n, names, err);
    if (st)
        return st;
    if (t->ipc_req >= 0) /* an isolated trial's process: the controller answers */
        st = tunep_ipc_report(t, n, names, values);
    else if (t->remote_tag) /* a trial on an MPI worker rank: rank 0 answers */
        st = tunep_mpi_report(t, n, names, values);
    else
        st = report_local(t, n, names, values);
    if (st)
        explain_answer(t, st, err);
    atomic_fetch_sub(&t->busy, 1);
    return st;
}

tune_status tune_trial_report_metric(tune_trial *t, const char *name, double value, tune_error *err)
{
    return tune_trial_report(t, 1, &name, &value, err);
}
