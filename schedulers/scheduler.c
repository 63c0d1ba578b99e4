/*
 * scheduler.c - the scheduler front: a parsed config's lifetime, and each
 * tunep_scheduler_* call dispatched through the scheduler's row
 * (scheduler.h), with the row's NULL members standing for their documented
 * defaults. Nothing here knows any particular scheduler: the rows live in
 * their own files and the list of them in registry.c.
 *
 * A scheduler is only called under the study lock (scheduler.h), so nothing
 * here locks. Events for trials a scheduler does not know are ignored (no
 * decision), so the controller may call every hook for every type.
 */
#include "schedulers/scheduler.h"

#include <string.h>

#define DEFAULT_TIME_ATTR "training_iteration"

struct tunep_scheduler {
    const struct tunep_scheduler_type *type;
    void *self;        /* type->create()'s state; NULL for a scheduler without state */
    char *time_attr;   /* owned copy: the config may go before the scheduler */
    int64_t n_waiting; /* from tunep_scheduler_set_waiting() */
};

/* ---- configs ------------------------------------------------------------------ */

void tunep_mutations_free(struct tunep_mutation *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        tunep_free(v[i].name);
        for (size_t j = 0; v[i].values && j < v[i].n_values; j++)
            if (v[i].values[j].type == TUNEP_V_STRING)
                tunep_free((char *)(uintptr_t)v[i].values[j].u.s);
        tunep_free(v[i].values);
        tune_space_free(v[i].dist);
    }
    tunep_free(v);
}

void tunep_scheduler_config_default(struct tunep_scheduler_config *c)
{
    c->type = tunep_scheduler_type_default();
    c->cfg = NULL;
}

tune_status tunep_scheduler_config_init(struct tunep_scheduler_config *c,
                                        const struct tunep_scheduler_type *type, tune_error *err)
{
    if (!c || !type)
        return tunep_error_set(err, TUNE_EINVAL, "scheduler: missing argument");
    void *cfg = NULL;
    if (type->config_size > 0) {
        cfg = tunep_calloc(1, type->config_size);
        if (!cfg || (type->options && tunep_options_default(type->options, cfg) != 0)) {
            if (cfg && type->options)
                tunep_options_done(type->options, cfg);
            tunep_free(cfg);
            return tunep_error_set(err, TUNE_ENOMEM, "scheduler: out of memory");
        }
    }
    c->type = type;
    c->cfg = cfg;
    return TUNE_OK;
}

void tunep_scheduler_config_done(struct tunep_scheduler_config *c)
{
    if (!c)
        return;
    if (c->type && c->type->options && c->cfg)
        tunep_options_done(c->type->options, c->cfg);
    tunep_free(c->cfg);
    tunep_scheduler_config_default(c);
}

const char *tunep_scheduler_config_time_attr(const struct tunep_scheduler_config *c)
{
    if (c && c->type && c->type->time_attr)
        return c->type->time_attr(c->cfg);
    return DEFAULT_TIME_ATTR;
}

/* ---- instances ---------------------------------------------------------------- */

tune_status tunep_scheduler_new(const struct tunep_scheduler_config *c, const tune_space *space,
                                uint64_t seed, struct tunep_scheduler **ret, tune_error *err)
{
    if (!c || !c->type || !ret || (c->type->config_size > 0 && !c->cfg))
        return tunep_error_set(err, TUNE_EINVAL, "scheduler: missing argument");
    struct tunep_scheduler *s = tunep_calloc(1, sizeof *s);
    if (!s || !(s->time_attr = tunep_strdup(tunep_scheduler_config_time_attr(c)))) {
        tunep_free(s);
        return tunep_error_set(err, TUNE_ENOMEM, "scheduler: out of memory");
    }
    s->type = c->type;
    if (c->type->create) {
        tune_status st = c->type->create(c->cfg, space, seed, &s->self, err);
        if (st != TUNE_OK) {
            tunep_free(s->time_attr);
            tunep_free(s);
            return st;
        }
    }
    *ret = s;
    return TUNE_OK;
}

void tunep_scheduler_free(struct tunep_scheduler *s)
{
    if (!s)
        return;
    if (s->self)
        s->type->free(s->self);
    tunep_free(s->time_attr);
    tunep_free(s);
}

const struct tunep_scheduler_type *tunep_scheduler_type_of(const struct tunep_scheduler *s)
{
    return s ? s->type : NULL;
}

void *tunep_scheduler_state(struct tunep_scheduler *s)
{
    return s ? s->self : NULL;
}

const char *tunep_scheduler_time_attr(const struct tunep_scheduler *s)
{
    return s ? s->time_attr : DEFAULT_TIME_ATTR;
}

tune_status tunep_scheduler_on_trial_add(struct tunep_scheduler *s, int64_t trial_id, double u)
{
    if (!s || trial_id < 0)
        return TUNE_EINVAL;
    return s->type->on_trial_add ? s->type->on_trial_add(s->self, trial_id, u) : TUNE_OK;
}

enum tunep_decision tunep_scheduler_on_result(struct tunep_scheduler *s, int64_t trial_id,
                                              int has_t, double t, double score)
{
    if (!s || !s->type->on_result)
        return TUNEP_CONTINUE;
    return s->type->on_result(s->self, trial_id, has_t, t, score, s->n_waiting);
}

void tunep_scheduler_on_trial_complete(struct tunep_scheduler *s, int64_t trial_id, int has_result,
                                       double last_t, double last_score)
{
    if (s && s->type->on_trial_complete)
        s->type->on_trial_complete(s->self, trial_id, has_result, last_t, last_score);
}

void tunep_scheduler_on_trial_paused(struct tunep_scheduler *s, int64_t trial_id)
{
    if (s && s->type->on_trial_paused)
        s->type->on_trial_paused(s->self, trial_id);
}

void tunep_scheduler_set_waiting(struct tunep_scheduler *s, int64_t n_waiting)
{
    if (s)
        s->n_waiting = n_waiting < 0 ? 0 : n_waiting;
}

enum tunep_next tunep_scheduler_choose(struct tunep_scheduler *s, int new_left, int64_t n_running,
                                       int64_t *ret_id)
{
    if (!s || !s->type->choose)
        return TUNEP_NEXT_NEW;
    return s->type->choose(s->self, new_left, n_running, ret_id);
}

int tunep_scheduler_take_stopped(struct tunep_scheduler *s, int64_t *ret_id)
{
    if (!s || !s->type->take_stopped)
        return 0;
    return s->type->take_stopped(s->self, ret_id);
}

int64_t tunep_scheduler_exploit_donor(const struct tunep_scheduler *s, int64_t trial_id)
{
    if (!s || !s->type->exploit_donor)
        return -1;
    return s->type->exploit_donor(s->self, trial_id);
}

void tunep_scheduler_explore(struct tunep_scheduler *s, int64_t trial_id,
                             const struct tunep_value *donor_values, gsl_rng *r,
                             struct tunep_value *out)
{
    if (s && s->type->explore && donor_values && r && out)
        s->type->explore(s->self, trial_id, donor_values, r, out);
}

void tunep_scheduler_describe(const struct tunep_scheduler *s, double sign, struct tunep_buf *buf)
{
    if (s && buf && s->type->describe)
        s->type->describe(s->self, sign, buf);
}
