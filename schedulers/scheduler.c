/*
 * scheduler.c - the scheduler front: defaults, construction, and dispatch to
 * FIFO or ASHA.
 *
 * FIFO is Ray Tune's FIFOScheduler: it never stops a trial, so it keeps no
 * state. ASHA lives in asha.c. A scheduler is only called under the study
 * lock (scheduler.h), so nothing here locks.
 */
#include "schedulers/scheduler.h"

#include <string.h>

#include "schedulers/asha.h"

#define FIFO_TIME_ATTR "training_iteration"

struct tunep_scheduler {
    enum tunep_scheduler_type type;
    struct tunep_asha *asha; /* NULL for FIFO */
};

void tunep_scheduler_config_default(struct tunep_scheduler_config *c)
{
    memset(c, 0, sizeof *c);
    c->type = TUNEP_SCHED_FIFO;
    /* Ray's AsyncHyperBandScheduler defaults. */
    memcpy(c->asha.time_attr, FIFO_TIME_ATTR, sizeof FIFO_TIME_ATTR);
    c->asha.max_t = 100;
    c->asha.grace_period = 1;
    c->asha.reduction_factor = 4;
    c->asha.brackets = 1;
    c->asha.stop_last_trials = 1;
}

tune_status tunep_scheduler_new(const struct tunep_scheduler_config *c,
                                struct tunep_scheduler **ret, tune_error *err)
{
    if (!c || !ret)
        return tunep_error_set(err, TUNE_EINVAL, "scheduler: missing argument");
    if (c->type != TUNEP_SCHED_FIFO && c->type != TUNEP_SCHED_ASHA)
        return tunep_error_set(err, TUNE_EINVAL, "scheduler: unknown type %d", (int)c->type);
    struct tunep_scheduler *s = tunep_calloc(1, sizeof *s);
    if (!s)
        return tunep_error_set(err, TUNE_ENOMEM, "scheduler: out of memory");
    s->type = c->type;
    if (c->type == TUNEP_SCHED_ASHA) {
        tune_status st = tunep_asha_new(&c->asha, &s->asha, err);
        if (st != TUNE_OK) {
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
    tunep_asha_free(s->asha);
    tunep_free(s);
}

struct tunep_asha *tunep_scheduler_asha(struct tunep_scheduler *s)
{
    return s ? s->asha : NULL;
}

const char *tunep_scheduler_time_attr(const struct tunep_scheduler *s)
{
    if (s && s->asha)
        return tunep_asha_time_attr(s->asha);
    return FIFO_TIME_ATTR;
}

tune_status tunep_scheduler_on_trial_add(struct tunep_scheduler *s, int64_t trial_id, double u)
{
    if (!s || trial_id < 0)
        return TUNE_EINVAL;
    if (s->asha)
        return tunep_asha_on_trial_add(s->asha, trial_id, u);
    return TUNE_OK;
}

enum tunep_decision tunep_scheduler_on_result(struct tunep_scheduler *s, int64_t trial_id,
                                              int has_t, double t, double score)
{
    if (s && s->asha)
        return tunep_asha_on_result(s->asha, trial_id, has_t, t, score);
    return TUNEP_CONTINUE;
}

void tunep_scheduler_on_trial_complete(struct tunep_scheduler *s, int64_t trial_id, int has_result,
                                       double last_t, double last_score)
{
    if (s && s->asha)
        tunep_asha_on_trial_complete(s->asha, trial_id, has_result, last_t, last_score);
}

void tunep_scheduler_describe(const struct tunep_scheduler *s, double sign, struct tunep_buf *buf)
{
    if (s && s->asha && buf)
        tunep_asha_describe(s->asha, sign, buf);
}
