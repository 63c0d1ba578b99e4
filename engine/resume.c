/*
 * resume.c - continuing a sweep from its experiment folder.
 *
 * `tune resume DIR` (or a run with TUNE_RESUME_EXISTING, `tune run --resume`,
 * on a folder that already holds the experiment) rebuilds the study from
 * experiment.db and goes on:
 *  - finished trials (TERMINATED, STOPPED) are kept as they are;
 *  - trials that were running or waiting (a crash, SIGKILL, Ctrl-C) run again
 *    as a new attempt (their earlier reports stay in the database);
 *  - ERROR trials stay, or get another round of max_failures + 1 attempts
 *    with TUNE_RESUME_ERRORED (Ray's resume_errored: from the trial's last
 *    checkpoint when it has one, else from the start, as restart_errored);
 *  - the scheduler's state is rebuilt by replaying every stored report of
 *    each trial's last attempt in the order they happened (start time plus
 *    time_total_s), so ASHA's rungs hold what they held before the crash;
 *  - random and grid search continue the same sequence: trial i's
 *    configuration is a function of (seed, i) only, and the stored seed is
 *    used; a model-based searcher is given every stored trial (finished ones
 *    with their last score, the rest as pending) before it suggests again;
 *  - in an experiment driven by ask and tell from several processes
 *    (driver "ask": `tune ask`, `tune tell`), a RUNNING trial was asked and
 *    not told yet: it stays RUNNING, known to the scheduler and to the
 *    searcher as pending, for a later tell from any process;
 *  - PAUSED trials stay paused, and the replayed scheduler is told so: it
 *    resumes them when their turn comes, from their checkpoint or replayed
 *    up to where they paused; RUNNING and PENDING ones run again as a new
 *    attempt, from their checkpoint when their folder has one.
 * The store also records where the first run started (tune_study_origin()),
 * since the stored config's relative paths point from there.
 * A config that differs from the stored one is refused unless
 * TUNE_RESUME_FORCE; parameters must keep their names and types either way,
 * because the store's columns are made from them.
 */
#include "engine/study.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

struct load {
    struct tune_study *s;
    unsigned flags;
    tune_error *err;
};

static tune_status grow_trials(struct tune_study *s, int64_t need)
{
    if (need <= s->cap_trials)
        return TUNE_OK;
    int64_t cap = s->cap_trials ? s->cap_trials : 64;
    while (cap < need)
        cap *= 2;
    struct tunep_trial_rec **p =
        tunep_realloc(s->trials, (size_t)s->n_trials * sizeof *p, (size_t)cap * sizeof *p);
    if (!p)
        return TUNE_ENOMEM;
    memset(p + s->n_trials, 0, (size_t)(cap - s->n_trials) * sizeof *p);
    s->trials = p;
    s->cap_trials = cap;
    return TUNE_OK;
}

static tune_status load_trial(void *ud, const struct tunep_stored_trial *t)
{
    struct load *ld = ud;
    struct tune_study *s = ld->s;
    if (t->trial_id < 0 || t->trial_id >= s->total_trials)
        return tunep_error_set(ld->err, TUNE_ECONFIG,
                               "the store holds trial %lld, but the config makes %lld trials "
                               "(num_samples or the grid shrank)",
                               (long long)t->trial_id, (long long)s->total_trials);
    if (t->n_params != s->n_params)
        return tunep_error_set(ld->err, TUNE_ESTORE, "trial %lld has %zu parameters, expected %zu",
                               (long long)t->trial_id, t->n_params, s->n_params);
    if (grow_trials(s, t->trial_id + 1))
        return TUNE_ENOMEM;
    struct tunep_trial_rec *r = tunep_trial_rec_from_store(s, t);
    if (!r)
        return TUNE_ENOMEM;
    if (isnan(r->time_total_s)) /* a trial that never reported */
        r->time_total_s = 0;
    s->trials[t->trial_id] = r;
    if (t->trial_id >= s->n_trials)
        s->n_trials = t->trial_id + 1;
    return TUNE_OK;
}

/* One stored report, for replaying the scheduler and the searcher. */
struct event {
    double when;
    int64_t trial, iteration;
    int has_t;
    double t, score;
};

struct events {
    struct tune_study *s;
    struct event *v;
    size_t n, cap;
};

static tune_status collect_report(void *ud, int64_t trial_id, int attempt, int64_t iteration,
                                  double time_total_s, size_t n, const char *const *names,
                                  const double *values)
{
    struct events *ev = ud;
    struct tune_study *s = ev->s;
    if (trial_id < 0 || trial_id >= s->n_trials || !s->trials[trial_id] ||
        attempt != s->trials[trial_id]->attempt)
        return TUNE_OK;
    if (ev->n == ev->cap) {
        size_t cap = ev->cap ? ev->cap * 2 : 1024;
        struct event *p = tunep_realloc(ev->v, ev->n * sizeof *p, cap * sizeof *p);
        if (!p)
            return TUNE_ENOMEM;
        ev->v = p;
        ev->cap = cap;
    }
    struct event *e = &ev->v[ev->n++];
    const struct tunep_trial_rec *r = s->trials[trial_id];
    e->when = r->start_wall + time_total_s;
    e->trial = trial_id;
    e->iteration = iteration;
    e->score = -HUGE_VAL;
    e->t = 0.0; /* defined even where has_t stays 0 */
    const char *attr = tunep_scheduler_time_attr(s->sched);
    e->has_t = 1;
    if (strcmp(attr, "training_iteration") == 0) {
        e->t = (double)iteration;
    } else if (strcmp(attr, "time_total_s") == 0) {
        e->t = time_total_s;
    } else {
        e->has_t = 0;
        for (size_t i = 0; i < n; i++)
            if (strcmp(names[i], attr) == 0 && !isnan(values[i])) {
                e->t = values[i];
                e->has_t = 1;
            }
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], s->cfg.metric) == 0 && isfinite(values[i]))
            e->score = s->sign * values[i];
    return TUNE_OK;
}

/* One trial's reports within one clock tick (qsort is not stable): in the
 * order they were made. */
static int by_iteration(const struct event *x, const struct event *y)
{
    return x->iteration < y->iteration ? -1 : x->iteration > y->iteration;
}

static int by_time(const void *a, const void *b)
{
    const struct event *x = a, *y = b;
    if (x->when != y->when)
        return x->when < y->when ? -1 : 1;
    if (x->trial != y->trial)
        return x->trial < y->trial ? -1 : 1;
    return by_iteration(x, y);
}

static int by_trial_then_time(const void *a, const void *b)
{
    const struct event *x = a, *y = b;
    if (x->trial != y->trial)
        return x->trial < y->trial ? -1 : 1;
    if (x->when != y->when)
        return x->when < y->when ? -1 : 1;
    return by_iteration(x, y);
}

/*
 * Rebuilds the scheduler's state from the stored reports (last attempts),
 * which it leaves in *ev sorted by trial, then time, for feed_searcher.
 */
static tune_status replay_scheduler(struct tune_study *s, struct events *ret_ev, tune_error *err)
{
    struct events ev = {s, NULL, 0, 0};
    tune_status st = tunep_store_foreach_last_attempt_report(s->store, collect_report, &ev, err);
    if (st) {
        tunep_free(ev.v);
        return st == TUNE_ENOMEM ? tunep_error_set(err, st, "out of memory") : st;
    }
    if (ev.n > 1) /* qsort must not see the NULL of an empty list */
        qsort(ev.v, ev.n, sizeof *ev.v, by_time);
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    char *added = tunep_calloc((size_t)(s->n_trials ? s->n_trials : 1), 1);
    if (!r || !added) {
        gsl_rng_free(r);
        tunep_free(added);
        tunep_free(ev.v);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < ev.n && !st; i++) {
        const struct event *e = &ev.v[i];
        if (!added[e->trial]) {
            added[e->trial] = 1;
            gsl_rng_set(
                r, (unsigned long)tunep_trial_seed(s->cfg.seed, e->trial, TUNEP_RNG_SCHEDULER));
            st = tunep_scheduler_on_trial_add(s->sched, e->trial, gsl_rng_uniform(r));
        }
        if (!st)
            (void)tunep_scheduler_on_result(s->sched, e->trial, e->has_t, e->t, e->score);
        struct tunep_trial_rec *rec = s->trials[e->trial];
        if (e->has_t) {
            rec->last_t = e->t;
            rec->has_last_t = 1;
        }
    }
    /* Asked by another process and not told yet: the trial is still running. */
    for (int64_t i = 0; i < s->n_trials && !st && s->ask_shared; i++) {
        const struct tunep_trial_rec *rec = s->trials[i];
        if (!rec || added[i] || rec->status != TUNE_TRIAL_RUNNING)
            continue;
        added[i] = 1;
        gsl_rng_set(r, (unsigned long)tunep_trial_seed(s->cfg.seed, i, TUNEP_RNG_SCHEDULER));
        st = tunep_scheduler_on_trial_add(s->sched, i, gsl_rng_uniform(r));
    }
    /* Finished trials complete as they did; the others will be added again when they run. */
    for (int64_t i = 0; i < s->n_trials && !st; i++) {
        struct tunep_trial_rec *rec = s->trials[i];
        if (!rec || !added[i])
            continue;
        if (rec->status == TUNE_TRIAL_TERMINATED || rec->status == TUNE_TRIAL_STOPPED) {
            double score = s->main_metric >= 0 && (size_t)s->main_metric < rec->n_last
                               ? s->sign * rec->last[s->main_metric]
                               : -HUGE_VAL;
            tunep_scheduler_on_trial_complete(s->sched, i, rec->has_last_t, rec->last_t,
                                              isfinite(score) ? score : -HUGE_VAL);
        }
    }
    gsl_rng_free(r);
    tunep_free(added);
    if (st) {
        tunep_free(ev.v);
        return tunep_error_set(err, st, "out of memory replaying the scheduler");
    }
    if (ev.n > 1)
        qsort(ev.v, ev.n, sizeof *ev.v, by_trial_then_time);
    *ret_ev = ev;
    return TUNE_OK;
}

/*
 * A stored trial as the searcher would have seen it: started, its reports of
 * the last attempt in order (BOHB models every budget; *cursor walks ev,
 * sorted by trial, past this trial's events), and finished with its score.
 */
static tune_status feed_searcher(struct tune_study *s, const struct tunep_trial_rec *rec,
                                 const struct events *ev, size_t *cursor)
{
    const struct tunep_searcher_ops *ops = s->searcher->ops;
    tune_status st = ops->on_start(s->searcher, rec->id, rec->values);
    if (st)
        return st;
    while (*cursor < ev->n && ev->v[*cursor].trial < rec->id)
        (*cursor)++;
    for (; *cursor < ev->n && ev->v[*cursor].trial == rec->id; (*cursor)++) {
        const struct event *e = &ev->v[*cursor];
        if (e->has_t && (st = ops->on_result(s->searcher, rec->id, e->t, e->score)))
            return st;
    }
    if (rec->status == TUNE_TRIAL_TERMINATED || rec->status == TUNE_TRIAL_STOPPED) {
        double score = s->main_metric >= 0 && (size_t)s->main_metric < rec->n_last
                           ? s->sign * rec->last[s->main_metric]
                           : -HUGE_VAL;
        return tunep_study_searcher_complete(s, rec, isfinite(score) ? score : -HUGE_VAL);
    }
    if (rec->status == TUNE_TRIAL_ERROR)
        return ops->on_complete(s->searcher, rec->id, 0, 0, -HUGE_VAL);
    return TUNE_OK;
}

static tune_status push_retry(struct tune_study *s, int64_t id)
{
    if (s->n_retry == s->cap_retry) {
        int64_t cap = s->cap_retry ? s->cap_retry * 2 : 16;
        int64_t *p =
            tunep_realloc(s->retry, (size_t)s->n_retry * sizeof *p, (size_t)cap * sizeof *p);
        if (!p)
            return TUNE_ENOMEM;
        s->retry = p;
        s->cap_retry = cap;
    }
    s->retry[s->n_retry++] = id;
    return TUNE_OK;
}

tune_status tunep_study_resume_store(struct tune_study *s,
                                     const struct tunep_store_experiment_row *row, tune_error *err)
{
    struct events ev = {s, NULL, 0, 0}; /* stored reports, for the searcher */
    size_t cursor = 0;
    tune_status st = TUNE_OK;
    /* Who drives the experiment is fixed when it is created. */
    int by_ask = row->driver && strcmp(row->driver, "ask") == 0;
    if (by_ask && !s->ask) {
        st = tunep_error_set_at(err, TUNE_ECONFIG, s->cfg.storage, 0, 0,
                                "this experiment is driven by ask and tell (`tune ask`, `tune "
                                "tell`): its asked trials are open in other hands, so it cannot "
                                "be run or resumed; continue it with `tune ask %s`",
                                s->cfg.storage);
        goto out;
    }
    if (!by_ask && s->ask_shared) {
        st = tunep_error_set_at(err, TUNE_ECONFIG, s->cfg.storage, 0, 0,
                                "this folder holds an experiment that `tune run` drives: ask and "
                                "tell from several processes need a folder they created (`tune "
                                "ask DIR --config CONFIG` into a new DIR)");
        goto out;
    }
    s->ask_shared = by_ask;
    if (!(s->resume_flags & TUNE_RESUME_FORCE) && strcmp(row->config_json, s->cfg.json) != 0) {
        st = tunep_error_set_at(err, TUNE_ECONFIG, s->cfg.storage, 0, 0,
                                "holds an experiment with another config (use --force to resume "
                                "it with this one, or choose another --storage)");
        goto out;
    }
    size_t n_names;
    const char *const *names = tunep_store_param_names(s->store, &n_names);
    int same = n_names == s->n_params;
    for (size_t i = 0; same && i < n_names; i++)
        same = strcmp(names[i], s->param_names[i]) == 0;
    if (!same) {
        st = tunep_error_set_at(err, TUNE_ECONFIG, s->cfg.storage, 0, 0,
                                "the stored experiment has other parameters: a resumed sweep "
                                "must keep param_space's names");
        goto out;
    }
    /* Columns keep the type they were made with: values of another type would
     * be stored and exported wrongly, so a type change is refused. */
    for (size_t i = 0; i < n_names; i++) {
        const char *was = tunep_store_param_type(s->store, i);
        const char *now = tunep_store_param_kind(&s->cfg.space->params[i]);
        if (was && strcmp(was, now) != 0) {
            st = tunep_error_set_at(err, TUNE_ECONFIG, s->cfg.storage, 0, 0,
                                    "param_space.%s: the stored experiment has it as %s, this "
                                    "config as %s; a resumed sweep keeps each parameter's type "
                                    "(choose another --storage)",
                                    names[i], was, now);
            goto out;
        }
    }
    /* The sequence continues from the stored seed (drawn from the clock when the config has none).
     */
    s->cfg.seed = row->seed;

    struct load ld = {s, s->resume_flags, err};
    if ((st = tunep_store_foreach_trial(s->store, load_trial, &ld, err))) {
        if (st == TUNE_ENOMEM)
            tunep_error_set(err, st, "out of memory loading trials");
        goto out;
    }
    if ((st = replay_scheduler(s, &ev, err)))
        goto out;

    /*
     * Trials that were running or waiting run again, in id order. A trial id
     * missing below the highest stored one was created but never committed:
     * it is drawn again (its configuration depends on (seed, id) only).
     */
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    if (!r) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto out;
    }
    uint64_t grid = tunep_space_grid_size(s->cfg.space, s->expand_choices, NULL);
    for (int64_t i = 0; i < s->n_trials && !st; i++) {
        struct tunep_trial_rec *rec = s->trials[i];
        if (!rec) {
            rec = tunep_calloc(1, sizeof *rec);
            if (!rec ||
                !(rec->values = tunep_calloc(s->n_params ? s->n_params : 1, sizeof *rec->values))) {
                tunep_free(rec);
                st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
                break;
            }
            rec->id = i;
            rec->status = TUNE_TRIAL_PENDING;
            gsl_rng_set(r, (unsigned long)tunep_trial_seed(s->cfg.seed, i, TUNEP_RNG_SAMPLE));
            if (s->searcher)
                st = s->searcher->ops->suggest(s->searcher, i, r, rec->values, err);
            else
                tunep_space_sample(s->cfg.space, r, (uint64_t)i % grid, s->expand_choices,
                                   rec->values);
            s->trials[i] = rec;
            if (st) {
                tunep_trial_rec_free(rec, s->n_params);
                s->trials[i] = NULL;
                break;
            }
        }
        tunep_checkpoint_probe(s, rec);
        if (s->searcher && (st = feed_searcher(s, rec, &ev, &cursor))) {
            tunep_error_set(err, st, "out of memory giving trial %lld to the searcher",
                            (long long)i);
            break;
        }
        /* Shared ask and tell: a RUNNING trial is open in some caller's hands, not interrupted. */
        int again = rec->status == TUNE_TRIAL_PENDING ||
                    (rec->status == TUNE_TRIAL_RUNNING && !s->ask_shared);
        if (rec->status == TUNE_TRIAL_PAUSED) {
            rec->time_base = rec->time_total_s;
            tunep_scheduler_on_trial_paused(s->sched, i);
        }
        if (rec->status == TUNE_TRIAL_ERROR && (s->resume_flags & TUNE_RESUME_ERRORED)) {
            again = 1;
            /* A new round of max_failures + 1 attempts; attempt numbers go on. */
            rec->failures_base = rec->attempt;
        }
        if (again) {
            rec->status = TUNE_TRIAL_PENDING;
            if (push_retry(s, i))
                st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        }
        s->counts[rec->status]++;
    }
    gsl_rng_free(r);
    if (!st)
        tunep_log(TUNE_LOG_INFO, "resuming %s: %lld trials stored, %lld to run again",
                  s->cfg.storage, (long long)s->n_trials, (long long)s->n_retry);
out:
    tunep_free(ev.v);
    return st;
}

tune_status tune_study_origin(const char *dir, char **ret_cwd, char **ret_command_line,
                              tune_error *err)
{
    if (!dir || !ret_cwd)
        return tunep_error_set(err, TUNE_EINVAL, "dir and ret_cwd must not be NULL");
    *ret_cwd = NULL;
    if (ret_command_line)
        *ret_command_line = NULL;
    struct tunep_store *store = NULL;
    char *cwd = NULL, *command_line = NULL;
    tune_status st = tunep_store_open_experiment(dir, 1, &store, NULL, err);
    if (!st)
        st = tunep_store_read_origin(store, &cwd, &command_line, err);
    tunep_store_close(store);
    if (st)
        return st;
    *ret_cwd = cwd;
    if (ret_command_line)
        *ret_command_line = command_line;
    else
        tunep_free(command_line);
    return TUNE_OK;
}
