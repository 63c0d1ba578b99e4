/*
 * ask_tell.c - a study driven by the caller's own loop (Optuna's ask and
 * tell): tune_study_ask() takes the next trial through the workers' own path
 * (tunep_study_next_trial()), tune_study_tell() ends it through theirs
 * (tunep_study_finish_trial()), so the store, the searcher and the scheduler
 * see what a run of tune_study_run() shows them. Reports go through
 * tune_trial_report() unchanged: the handle is an ordinary one.
 *
 * Everything happens under the study lock. There is no flusher thread: an
 * ask and a tell each commit before they return, so a trial's start and end
 * are durable by then, as its reports are.
 *
 * Shared among processes (tune_study_set_ask_shared(), `tune ask` and `tune
 * tell`): an asked trial stays RUNNING in the store when the study is
 * finished, and a later process, resuming the experiment, finds it open
 * (resume.c) and gets a handle to it by id (tune_study_get_trial()).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/rng.h"
#include "engine/study.h"
#include "engine/trial_dir.h"
#include "store/lock.h"

struct tunep_ask {
    gsl_rng *r;       /* the workers' stream, reseeded per trial: only its state changes */
    tune_status open; /* how opening went: anything but TUNE_OK leaves the study unusable */
    int finished;     /* tune_study_finish() ran */
};

/* Commits what asks, tells and reports wrote; a failure stops the study. Lock held. */
static void commit(struct tune_study *s)
{
    if (!s->store || s->fatal)
        return;
    tune_error e;
    uint64_t upto = s->write_seq;
    if (tunep_store_commit(s->store, &e))
        tunep_study_set_fatal(s, &e);
    else
        s->durable_seq = upto;
}

/* The study's first store failure, into err. Lock held. */
static tune_status fatal_status(const struct tune_study *s, tune_error *err)
{
    if (err)
        *err = s->fatal_err;
    return s->fatal_err.code ? s->fatal_err.code : TUNE_ESTORE;
}

/* The first ask: what tune_study_run() sets up before its workers start. Lock held. */
static tune_status open_ask(struct tune_study *s, tune_error *err)
{
    if (s->readonly)
        return tunep_error_set(err, TUNE_EINVAL, "this study was opened read-only from a folder");
    if (s->has_run)
        return tunep_error_set(err, TUNE_EINVAL, "this study has already run");
    if (s->mpi_size > 1)
        return tunep_error_set(err, TUNE_EUNSUPPORTED,
                               "ask and tell drive trials in this process: not under MPI");
    struct tunep_ask *a = tunep_calloc(1, sizeof *a);
    if (!a || !(a->r = gsl_rng_alloc(tunep_rng_xoshiro256))) {
        tunep_free(a);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    }
    s->ask = a;
    s->has_run = 1;
    a->open = tunep_study_open_run(s, err);
    return a->open;
}

/* Why tunep_study_next_trial() gave nothing, as an ask's answer. Lock held. */
static tune_status no_trial(struct tune_study *s, int wait, tune_error *err)
{
    if (s->fatal)
        return fatal_status(s, err);
    if (s->fail_fast_hit)
        return tunep_error_set(err, TUNE_EINTERRUPTED, "fail_fast: trial %lld ended in ERROR",
                               (long long)s->fail_fast_trial);
    if (atomic_load(&s->stop_requested))
        return tunep_error_set(err, TUNE_EINTERRUPTED,
                               "the study is stopping (tune_study_request_stop())");
    if (s->budget_exhausted)
        return tunep_error_set(err, TUNE_EEXHAUSTED,
                               "the time budget (stop.time_budget_s) is spent");
    int64_t paused = s->counts[TUNE_TRIAL_PAUSED];
    if (wait && (s->n_trials < s->total_trials || paused > 0))
        return tunep_error_set(err, TUNE_EWAIT,
                               "no trial can start until one of the %lld open trials reports or "
                               "is told (the scheduler waits for it)",
                               (long long)s->counts[TUNE_TRIAL_RUNNING]);
    return tunep_error_set(err, TUNE_EEXHAUSTED, "all %lld trials were asked%s",
                           (long long)s->total_trials,
                           wait ? "; one told FAILED may come back as a retry" : "");
}

/* Opens the study on first use; then whether it can still be asked. Lock held. */
static tune_status ready(struct tune_study *s, tune_error *err)
{
    tune_status st;
    if (!s->ask && (st = open_ask(s, err)))
        return st;
    if (s->ask->open)
        return tunep_error_set(err, s->ask->open, "this study could not be opened: %s",
                               tune_strerror(s->ask->open));
    if (s->ask->finished)
        return tunep_error_set(err, TUNE_EINVAL, "tune_study_finish() closed this study");
    return TUNE_OK;
}

/* A new handle for rec's attempt, in the study's open list. Lock held. */
static void hand_out(struct tune_study *s, tune_trial *t, struct tunep_trial_rec *rec, double t0)
{
    t->study = s;
    t->rec = rec;
    t->end = TUNEP_END_NONE;
    t->donor = -1;
    t->t0 = t0;
    t->ipc_req = t->ipc_resp = -1;
    t->next = s->live;
    s->live = t;
    tunep_trial_dir_open(s, t);
}

tune_status tune_study_ask(tune_study *s, tune_trial **ret_trial, tune_error *err)
{
    if (!s || !ret_trial)
        return tunep_error_set(err, TUNE_EINVAL, "study and ret_trial must not be NULL");
    tune_status st = TUNE_OK;
    pthread_mutex_lock(&s->lock);
    tune_trial *t = tunep_study_new_handle(s);
    if (!t) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto out;
    }
    if ((st = ready(s, err)))
        goto out;
    int wait = 0;
    struct tunep_trial_rec *rec = s->fatal ? NULL : tunep_study_next_trial(s, s->ask->r, &wait);
    if (!rec) {
        st = no_trial(s, wait, err);
        goto out;
    }
    hand_out(s, t, rec, tunep_now_monotonic());
    commit(s);
    if (s->fatal) {
        /* The start is not durable: the attempt ends (back to PENDING) and the study stops. */
        atomic_store(&t->state, TUNEP_HANDLE_CLOSED);
        for (struct tune_trial **p = &s->live; *p; p = &(*p)->next)
            if (*p == t) {
                *p = t->next;
                break;
            }
        tunep_study_finish_trial(s, t, TUNE_ESTORE);
        t->next = s->closed;
        s->closed = t;
        st = fatal_status(s, err);
        t = NULL;
        goto out;
    }
    *ret_trial = t;
    t = NULL;
out:
    tunep_study_drop_handle(s, t); /* not handed out */
    pthread_mutex_unlock(&s->lock);
    return st;
}

tune_status tune_study_set_ask_shared(tune_study *s, double lock_wait_s, tune_error *err)
{
    if (!s)
        return tunep_error_set(err, TUNE_EINVAL, "study must not be NULL");
    if (!(lock_wait_s >= 0) || !isfinite(lock_wait_s))
        return tunep_error_set(err, TUNE_EINVAL, "lock_wait_s must be a finite number >= 0");
    tune_status st = TUNE_OK;
    pthread_mutex_lock(&s->lock);
    if (s->readonly)
        st = tunep_error_set(err, TUNE_EINVAL, "this study was opened read-only from a folder");
    else if (s->has_run)
        st = tunep_error_set(err, TUNE_EINVAL, "too late: this study has run or was asked already");
    else if (strcmp(s->cfg.storage, ":memory:") == 0)
        st = tunep_error_set(err, TUNE_EINVAL,
                             "ask and tell shared among processes need an experiment folder, "
                             "not storage \":memory:\"");
    if (!st) {
        s->ask_shared = 1;
        s->lock_wait_s = lock_wait_s;
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

/* Why trial rec has no open handle to give, as tune_study_get_trial()'s error. Lock held. */
static tune_status not_open(const struct tunep_trial_rec *rec, tune_error *err)
{
    const char *why;
    switch (rec->status) {
        case TUNE_TRIAL_PENDING: why = "it waits for another attempt: an ask hands it out"; break;
        case TUNE_TRIAL_PAUSED: why = "the scheduler paused it: an ask hands it out again"; break;
        case TUNE_TRIAL_RUNNING: why = "it runs in another study of this process"; break;
        default: why = "it has ended"; break;
    }
    return tunep_error_set(err, TUNE_EINVAL, "trial %lld is not open (%s): %s", (long long)rec->id,
                           tune_trial_status_name(rec->status), why);
}

tune_status tune_study_get_trial(tune_study *s, int64_t trial_id, tune_trial **ret_trial,
                                 tune_error *err)
{
    if (!s || !ret_trial)
        return tunep_error_set(err, TUNE_EINVAL, "study and ret_trial must not be NULL");
    tune_status st = TUNE_OK;
    tune_trial *t = NULL;
    pthread_mutex_lock(&s->lock);
    if ((st = ready(s, err)))
        goto out;
    if (trial_id < 0 || trial_id >= s->n_trials || !s->trials[trial_id]) {
        st = tunep_error_set(err, TUNE_ENOTFOUND,
                             "no trial %lld in this experiment: the trials asked so far are 0 to "
                             "%lld",
                             (long long)trial_id, (long long)s->n_trials - 1);
        goto out;
    }
    struct tunep_trial_rec *rec = s->trials[trial_id];
    for (tune_trial *h = s->live; h; h = h->next)
        if (h->rec == rec) {
            *ret_trial = h;
            goto out;
        }
    if (rec->status != TUNE_TRIAL_RUNNING || !s->ask_shared) {
        st = not_open(rec, err);
        goto out;
    }
    /* Asked by an earlier process: its attempt's clock runs from when it was asked. */
    if (!(t = tunep_study_new_handle(s))) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto out;
    }
    double since = tunep_now_wall() - rec->start_wall;
    hand_out(s, t, rec, tunep_now_monotonic() - (since > 0 && isfinite(since) ? since : 0));
    *ret_trial = t;
out:
    pthread_mutex_unlock(&s->lock);
    return st;
}

/*
 * Finds t among the study's open handles and unlinks it, without reading
 * *t before it is found (a pointer from elsewhere may be anything). Lock held.
 */
static tune_status take_open(struct tune_study *s, tune_trial *t, tune_error *err)
{
    for (struct tune_trial **p = &s->live; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            t->next = NULL;
            return TUNE_OK;
        }
    for (const struct tune_trial *c = s->closed; c; c = c->next)
        if (c == t)
            return tunep_error_set(err, TUNE_EINVAL, "trial %lld was already told",
                                   (long long)t->rec->id);
    return tunep_error_set(err, TUNE_EINVAL,
                           "this trial was not asked from this study with tune_study_ask()");
}

tune_status tune_study_tell(tune_study *s, tune_trial *t, tune_tell_state state, const char *reason,
                            tune_error *err)
{
    if (!s || !t)
        return tunep_error_set(err, TUNE_EINVAL, "study and trial must not be NULL");
    if ((int)state < 0 || state >= TUNE_TELL_STATE_COUNT)
        return tunep_error_set(err, TUNE_EINVAL, "unknown tell state %d", (int)state);
    if (reason && state != TUNE_TELL_FAILED)
        return tunep_error_set(err, TUNE_EINVAL, "a reason goes with TUNE_TELL_FAILED only");
    pthread_mutex_lock(&s->lock);
    tune_status st = s->ask
                         ? take_open(s, t, err)
                         : tunep_error_set(err, TUNE_EINVAL, "no trial was asked from this study");
    if (st)
        goto out;
    /* From here a report through the handle is refused, as after an objective returned. */
    atomic_store(&t->state, TUNEP_HANDLE_CLOSED);
    tune_status ret = TUNE_OK;
    if (state == TUNE_TELL_PRUNED) {
        if (t->end == TUNEP_END_NONE)
            t->end = TUNEP_END_STOPPED; /* the caller's own decision to stop it */
        ret = TUNE_ESTOP;
    } else if (state == TUNE_TELL_FAILED) {
        snprintf(t->error, sizeof t->error, "%s", reason ? reason : "told FAILED");
        ret = TUNE_EFAILED;
    }
    tunep_study_finish_trial(s, t, ret);
    tunep_trial_dir_close(t);
    t->next = s->closed; /* kept, so that a stale pointer finds it told */
    s->closed = t;
    commit(s);
    if (s->fatal)
        st = fatal_status(s, err);
out:
    pthread_mutex_unlock(&s->lock);
    return st;
}

tune_status tune_study_tell_value(tune_study *s, tune_trial *t, double value, tune_error *err)
{
    if (!s || !t)
        return tunep_error_set(err, TUNE_EINVAL, "study and trial must not be NULL");
    tune_status st = tune_trial_report_metric(t, s->cfg.metric, value, err);
    if (st && st != TUNE_ESTOP)
        return st;
    return tune_study_tell(s, t, TUNE_TELL_COMPLETE, NULL, err);
}

/*
 * Closes the study: open trials back to PENDING (shared: left open for a
 * later process), commit, the CSVs, the lock. Lock held.
 */
static tune_status finish_locked(struct tune_study *s, tune_error *err)
{
    while (s->live) {
        tune_trial *t = s->live;
        s->live = t->next;
        atomic_store(&t->state, TUNEP_HANDLE_CLOSED);
        if (!s->ask_shared)
            tunep_study_finish_trial(s, t, TUNE_EINTERRUPTED);
        tunep_trial_dir_close(t);
        t->next = s->closed;
        s->closed = t;
    }
    s->ask->finished = 1;
    commit(s);
    tune_status st = s->fatal ? fatal_status(s, err) : tunep_study_export_all(s, err);
    tunep_store_lock_release(s->store_lock);
    s->store_lock = NULL;
    return st;
}

tune_status tune_study_finish(tune_study *s, tune_error *err)
{
    if (!s)
        return tunep_error_set(err, TUNE_EINVAL, "study must not be NULL");
    pthread_mutex_lock(&s->lock);
    tune_status st = TUNE_OK;
    if (!s->ask)
        st = tunep_error_set(err, TUNE_EINVAL, "no trial was asked from this study");
    else if (!s->ask->open && !s->ask->finished)
        st = finish_locked(s, err);
    pthread_mutex_unlock(&s->lock);
    return st;
}

void tunep_ask_done(struct tune_study *s)
{
    if (!s->ask)
        return;
    (void)tune_study_finish(s, NULL);
    gsl_rng_free(s->ask->r);
    tunep_free(s->ask);
    s->ask = NULL;
}
