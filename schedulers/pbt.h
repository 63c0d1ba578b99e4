/*
 * pbt.h - population based training's options and what the tests inspect;
 * its row (tunep_pbt_type, in the registry) and state live in pbt.c. See
 * scheduler.h for what each event means.
 */
#ifndef TUNE_PBT_H
#define TUNE_PBT_H

#include <stddef.h>
#include <stdint.h>

#include "schedulers/scheduler.h"

/* Ray's PopulationBasedTraining options ("type": "pbt") and defaults. */
struct tunep_pbt_config {
    char time_attr[128];              /* "training_iteration" (Ray: "time_total_s") */
    double perturbation_interval;     /* 60 */
    double burn_in_period;            /* 0 */
    double quantile_fraction;         /* 0.25 */
    double resample_probability;      /* 0.25 */
    double perturbation_factors[2];   /* 1.2, 0.8 */
    struct tunep_mutations mutations; /* "hyperparam_mutations": at least one; the scheduler
                                       * copies them, and each needs its param resolved */
};

struct tunep_pbt;

/*
 * Inspection for tests: the number of live trials ranked (those with a score
 * from a perturbation check), a trial's rank among them (0 = worst; returns 0
 * when it is not ranked), Ray's quantile size for n ranked trials, and the
 * number of exploits carried out (explore() calls after an EXPLOIT answer).
 */
size_t tunep_pbt_ranked(const struct tunep_pbt *p);
int tunep_pbt_rank(const struct tunep_pbt *p, int64_t trial_id, size_t *ret_rank);
size_t tunep_pbt_quantile_size(double quantile_fraction, size_t n);
int64_t tunep_pbt_num_exploits(const struct tunep_pbt *p);

/* The PBT state of a scheduler, or NULL for another type. */
struct tunep_pbt *tunep_scheduler_pbt(struct tunep_scheduler *s);

#endif /* TUNE_PBT_H */
