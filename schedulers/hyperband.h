/*
 * hyperband.h - synchronous HyperBand's options, its plan, and what the tests
 * inspect; its row (tunep_hyperband_type, in the registry) and state live in
 * hyperband.c. See scheduler.h for what each event means.
 */
#ifndef TUNE_HYPERBAND_H
#define TUNE_HYPERBAND_H

#include <stddef.h>
#include <stdint.h>

#include "schedulers/scheduler.h"

/* Synchronous HyperBand's options ("type": "hyperband"): Li et al. 2018, Algorithm 1, run
 * bracket after bracket. */
struct tunep_hyperband_config {
    char time_attr[128];     /* "training_iteration" */
    double max_t;            /* 81: R, the most a trial may run */
    double reduction_factor; /* 3: eta */
    int stop_last_trials;    /* 1 */
};

/* A band has s_max + 1 brackets; eta^s_max <= max_t keeps s_max small, but the cap
 * guards against reduction_factor close to 1. */
#define TUNEP_HYPERBAND_MAX_S 63

/*
 * The paper's plan (Li et al. 2018, Algorithm 1) from the options alone:
 * s_max = floor(log_eta(R)), found by multiplying eta up to R (a relative slack
 * of 1e-9 absorbs rounding: log(81)/log(3) is 4.000000000000001 and
 * log(243)/log(3) 4.999999999999999 in doubles); TUNEP_HYPERBAND_MAX_S + 1 when
 * it is larger than the cap. Bracket s starts n = ceil((s_max + 1) eta^s / (s + 1))
 * trials at r = R eta^-s (n capped at 2^53). Round i of a bracket that holds m
 * trials runs n_i = max(1, floor(m eta^-i)) of them to r_i = R eta^(i - s).
 */
int tunep_hyperband_s_max(const struct tunep_hyperband_config *c);
int64_t tunep_hyperband_bracket_n(const struct tunep_hyperband_config *c, int s_max, int s);
double tunep_hyperband_round_r(const struct tunep_hyperband_config *c, int s, int i);
int64_t tunep_hyperband_round_n(const struct tunep_hyperband_config *c, int64_t m, int i);

struct tunep_hyperband;

/*
 * Inspection for tests: the number of brackets created so far; a bracket's s,
 * band, trial count and current round (s + 1 once finished); a trial's bracket
 * (-1 if unknown) and round.
 */
int64_t tunep_hyperband_bracket_count(const struct tunep_hyperband *h);
int tunep_hyperband_bracket_info(const struct tunep_hyperband *h, int64_t bracket, int *ret_s,
                                 int64_t *ret_band, int64_t *ret_trials, int *ret_round);
int64_t tunep_hyperband_trial_bracket(const struct tunep_hyperband *h, int64_t trial_id);
int tunep_hyperband_trial_round(const struct tunep_hyperband *h, int64_t trial_id);

/* The HyperBand state of a scheduler, or NULL for another type. */
struct tunep_hyperband *tunep_scheduler_hyperband(struct tunep_scheduler *s);

#endif /* TUNE_HYPERBAND_H */
