/*
 * scheduler.c - the scheduler front: defaults, construction, and dispatch to
 * FIFO, ASHA (asha.c, both variants), the median stopping rule (median.c),
 * synchronous HyperBand (hyperband.c) or PBT (pbt.c).
 *
 * FIFO is Ray Tune's FIFOScheduler: it never stops a trial, so it keeps no
 * state. A scheduler is only called under the study lock (scheduler.h), so
 * nothing here locks. Events for trials a scheduler does not know are
 * ignored (no decision), so the controller may call every hook for every type.
 */
#include "schedulers/scheduler.h"

#include <string.h>

#include "schedulers/asha.h"
#include "schedulers/hyperband.h"
#include "schedulers/median.h"
#include "schedulers/pbt.h"

#define FIFO_TIME_ATTR "training_iteration"

struct tunep_scheduler {
    enum tunep_scheduler_type type;
    struct tunep_asha *asha; /* exactly one of these for a non-FIFO type */
    struct tunep_median *median;
    struct tunep_hyperband *hyperband;
    struct tunep_pbt *pbt;
    int64_t n_waiting; /* from tunep_scheduler_set_waiting() */
};

#define SET_NAME(dst, lit) memcpy((dst), (lit), sizeof(lit))

void tunep_scheduler_config_default(struct tunep_scheduler_config *c)
{
    memset(c, 0, sizeof *c);
    c->type = TUNEP_SCHED_FIFO;
    /* Ray's AsyncHyperBandScheduler defaults. */
    SET_NAME(c->asha.time_attr, FIFO_TIME_ATTR);
    c->asha.max_t = 100;
    c->asha.grace_period = 1;
    c->asha.reduction_factor = 4;
    c->asha.brackets = 1;
    c->asha.stop_last_trials = 1;
    c->asha.promotion = 0;
    /* Ray's MedianStoppingRule defaults. */
    SET_NAME(c->median.time_attr, "time_total_s");
    c->median.grace_period = 60;
    c->median.min_samples_required = 3;
    c->median.min_time_slice = 0;
    c->median.hard_stop = 1;
    /* Ray's HyperBandScheduler defaults (R = 81, eta = 3: the paper's example). */
    SET_NAME(c->hyperband.time_attr, "training_iteration");
    c->hyperband.max_t = 81;
    c->hyperband.reduction_factor = 3;
    c->hyperband.stop_last_trials = 1;
    /* Ray's PopulationBasedTraining defaults, except time_attr (configs/README.md). */
    SET_NAME(c->pbt.time_attr, "training_iteration");
    c->pbt.perturbation_interval = 60;
    c->pbt.burn_in_period = 0;
    c->pbt.quantile_fraction = 0.25;
    c->pbt.resample_probability = 0.25;
    c->pbt.perturbation_factors[0] = 1.2;
    c->pbt.perturbation_factors[1] = 0.8;
    c->pbt.n_mutations = 0;
    c->pbt.mutations = NULL;
}

void tunep_scheduler_config_done(struct tunep_scheduler_config *c)
{
    if (!c)
        return;
    tunep_pbt_mutations_free(c->pbt.mutations, c->pbt.n_mutations);
    c->pbt.mutations = NULL;
    c->pbt.n_mutations = 0;
}

tune_status tunep_scheduler_new(const struct tunep_scheduler_config *c, const tune_space *space,
                                uint64_t seed, struct tunep_scheduler **ret, tune_error *err)
{
    if (!c || !ret)
        return tunep_error_set(err, TUNE_EINVAL, "scheduler: missing argument");
    if ((int)c->type < (int)TUNEP_SCHED_FIFO || (int)c->type > (int)TUNEP_SCHED_PBT)
        return tunep_error_set(err, TUNE_EINVAL, "scheduler: unknown type %d", (int)c->type);
    if (c->type == TUNEP_SCHED_PBT && !space)
        return tunep_error_set(err, TUNE_EINVAL, "pbt: needs the study's space");
    struct tunep_scheduler *s = tunep_calloc(1, sizeof *s);
    if (!s)
        return tunep_error_set(err, TUNE_ENOMEM, "scheduler: out of memory");
    s->type = c->type;
    tune_status st = TUNE_OK;
    switch (c->type) {
        case TUNEP_SCHED_FIFO: break;
        case TUNEP_SCHED_ASHA: st = tunep_asha_new(&c->asha, &s->asha, err); break;
        case TUNEP_SCHED_MEDIAN: st = tunep_median_new(&c->median, &s->median, err); break;
        case TUNEP_SCHED_HYPERBAND:
            st = tunep_hyperband_new(&c->hyperband, &s->hyperband, err);
            break;
        case TUNEP_SCHED_PBT: st = tunep_pbt_new(&c->pbt, space, seed, &s->pbt, err); break;
    }
    if (st != TUNE_OK) {
        tunep_free(s);
        return st;
    }
    *ret = s;
    return TUNE_OK;
}

void tunep_scheduler_free(struct tunep_scheduler *s)
{
    if (!s)
        return;
    tunep_asha_free(s->asha);
    tunep_median_free(s->median);
    tunep_hyperband_free(s->hyperband);
    tunep_pbt_free(s->pbt);
    tunep_free(s);
}

struct tunep_asha *tunep_scheduler_asha(struct tunep_scheduler *s)
{
    return s ? s->asha : NULL;
}

struct tunep_median *tunep_scheduler_median(struct tunep_scheduler *s)
{
    return s ? s->median : NULL;
}

struct tunep_hyperband *tunep_scheduler_hyperband(struct tunep_scheduler *s)
{
    return s ? s->hyperband : NULL;
}

struct tunep_pbt *tunep_scheduler_pbt(struct tunep_scheduler *s)
{
    return s ? s->pbt : NULL;
}

const char *tunep_scheduler_time_attr(const struct tunep_scheduler *s)
{
    if (s && s->asha)
        return tunep_asha_time_attr(s->asha);
    if (s && s->median)
        return tunep_median_time_attr(s->median);
    if (s && s->hyperband)
        return tunep_hyperband_time_attr(s->hyperband);
    if (s && s->pbt)
        return tunep_pbt_time_attr(s->pbt);
    return FIFO_TIME_ATTR;
}

tune_status tunep_scheduler_on_trial_add(struct tunep_scheduler *s, int64_t trial_id, double u)
{
    if (!s || trial_id < 0)
        return TUNE_EINVAL;
    if (s->asha)
        return tunep_asha_on_trial_add(s->asha, trial_id, u);
    if (s->median)
        return tunep_median_on_trial_add(s->median, trial_id);
    if (s->hyperband)
        return tunep_hyperband_on_trial_add(s->hyperband, trial_id);
    if (s->pbt)
        return tunep_pbt_on_trial_add(s->pbt, trial_id);
    return TUNE_OK;
}

enum tunep_decision tunep_scheduler_on_result(struct tunep_scheduler *s, int64_t trial_id,
                                              int has_t, double t, double score)
{
    if (!s)
        return TUNEP_CONTINUE;
    if (s->asha)
        return tunep_asha_on_result(s->asha, trial_id, has_t, t, score);
    if (s->median)
        return tunep_median_on_result(s->median, trial_id, has_t, t, score, s->n_waiting);
    if (s->hyperband)
        return tunep_hyperband_on_result(s->hyperband, trial_id, has_t, t, score);
    if (s->pbt)
        return tunep_pbt_on_result(s->pbt, trial_id, has_t, t, score, s->n_waiting);
    return TUNEP_CONTINUE;
}

void tunep_scheduler_on_trial_complete(struct tunep_scheduler *s, int64_t trial_id, int has_result,
                                       double last_t, double last_score)
{
    if (!s)
        return;
    if (s->asha)
        tunep_asha_on_trial_complete(s->asha, trial_id, has_result, last_t, last_score);
    if (s->median)
        tunep_median_on_trial_complete(s->median, trial_id, has_result, last_t, last_score);
    if (s->hyperband)
        tunep_hyperband_on_trial_complete(s->hyperband, trial_id, has_result, last_score);
    if (s->pbt)
        tunep_pbt_on_trial_complete(s->pbt, trial_id);
}

void tunep_scheduler_on_trial_paused(struct tunep_scheduler *s, int64_t trial_id)
{
    if (!s)
        return;
    if (s->asha)
        tunep_asha_on_trial_paused(s->asha, trial_id);
    if (s->median)
        tunep_median_on_trial_paused(s->median, trial_id);
    if (s->hyperband)
        tunep_hyperband_on_trial_paused(s->hyperband, trial_id);
    if (s->pbt)
        tunep_pbt_on_trial_paused(s->pbt, trial_id);
}

void tunep_scheduler_set_waiting(struct tunep_scheduler *s, int64_t n_waiting)
{
    if (s)
        s->n_waiting = n_waiting < 0 ? 0 : n_waiting;
}

enum tunep_next tunep_scheduler_choose(struct tunep_scheduler *s, int new_left, int64_t n_running,
                                       int64_t *ret_id)
{
    if (!s)
        return TUNEP_NEXT_NEW;
    if (s->asha)
        return tunep_asha_choose(s->asha, new_left, n_running, ret_id);
    if (s->median)
        return tunep_median_choose(s->median, new_left, ret_id);
    if (s->hyperband)
        return tunep_hyperband_choose(s->hyperband, new_left, n_running, ret_id);
    if (s->pbt)
        return tunep_pbt_choose(s->pbt, new_left, ret_id);
    return TUNEP_NEXT_NEW;
}

int tunep_scheduler_take_stopped(struct tunep_scheduler *s, int64_t *ret_id)
{
    if (s && s->hyperband)
        return tunep_hyperband_take_stopped(s->hyperband, ret_id);
    return 0;
}

int64_t tunep_scheduler_exploit_donor(const struct tunep_scheduler *s, int64_t trial_id)
{
    if (s && s->pbt)
        return tunep_pbt_exploit_donor(s->pbt, trial_id);
    return -1;
}

void tunep_scheduler_explore(struct tunep_scheduler *s, int64_t trial_id,
                             const struct tunep_value *donor_values, gsl_rng *r,
                             struct tunep_value *out)
{
    if (s && s->pbt && donor_values && r && out)
        tunep_pbt_explore(s->pbt, trial_id, donor_values, r, out);
}

void tunep_scheduler_describe(const struct tunep_scheduler *s, double sign, struct tunep_buf *buf)
{
    if (!s || !buf)
        return;
    if (s->asha)
        tunep_asha_describe(s->asha, sign, buf);
    if (s->median)
        tunep_median_describe(s->median, buf);
    if (s->hyperband)
        tunep_hyperband_describe(s->hyperband, sign, buf);
    if (s->pbt)
        tunep_pbt_describe(s->pbt, sign, buf);
}
