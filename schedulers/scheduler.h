/*
 * scheduler.h - trial schedulers: decide after each report whether a trial goes on.
 *
 * The controller calls a scheduler under the study lock, so implementations
 * need no locking of their own. Scores are normalised so that larger is
 * better (the controller negates them for mode "min"); a NaN or missing
 * metric arrives as -INFINITY, the worst possible value.
 */
#ifndef TUNE_SCHEDULER_H
#define TUNE_SCHEDULER_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "base/base.h"
#include "search/space.h"

enum tunep_decision {
    TUNEP_CONTINUE = 0,
    TUNEP_STOP = 1,      /* stop early: the trial ends STOPPED */
    TUNEP_TERMINATE = 2, /* the trial reached the scheduler's end (max_t): it ends TERMINATED */
    TUNEP_PAUSE = 3,     /* the trial stops now and waits PAUSED until tunep_scheduler_choose() resumes it */
    TUNEP_EXPLOIT = 4,   /* PBT: the trial restarts from a better trial's checkpoint with
                          * explored hyperparameters (tunep_scheduler_exploit_donor(),
                          * tunep_scheduler_explore()); the controller may decline (the donor
                          * has no checkpoint) and let the trial go on */
};

enum tunep_scheduler_type {
    TUNEP_SCHED_FIFO = 0,
    TUNEP_SCHED_ASHA = 1,
    TUNEP_SCHED_MEDIAN = 2,    /* Ray's MedianStoppingRule */
    TUNEP_SCHED_HYPERBAND = 3, /* synchronous HyperBand (Li et al. 2018), pausing trials */
    TUNEP_SCHED_PBT = 4,       /* Ray's PopulationBasedTraining */
};

/* ASHA's options, with Ray Tune's names and defaults. */
struct tunep_asha_config {
    char time_attr[128];     /* "training_iteration" */
    double max_t;            /* 100 */
    double grace_period;     /* 1 */
    double reduction_factor; /* 4 */
    int brackets;            /* 1 */
    int stop_last_trials;    /* 1 */
    int promotion;           /* 0: Ray's stopping ASHA; 1: promotion ASHA (paper's Algorithm 2):
                              * trials pause at each rung and the top 1/rf are promoted */
};

/* Ray's MedianStoppingRule options and defaults. */
struct tunep_median_config {
    char time_attr[128];      /* "time_total_s" */
    double grace_period;      /* 60 */
    int min_samples_required; /* 3 */
    double min_time_slice;    /* 0 */
    int hard_stop;            /* 1: stop a trial below the median; 0: pause it */
};

/* Synchronous HyperBand (Li et al. 2018, Algorithm 1 run bracket after bracket). */
struct tunep_hyperband_config {
    char time_attr[128];     /* "training_iteration" */
    double max_t;            /* 81: R, the most a trial may run */
    double reduction_factor; /* 3: eta */
    int stop_last_trials;    /* 1 */
};

/* How PBT explores one hyperparameter (Ray's hyperparam_mutations entry). */
struct tunep_pbt_mutation {
    char *name;                  /* owned: the flattened parameter name ("model/lr") */
    size_t param;                /* index into the space; SIZE_MAX until the config parser
                                  * resolved it (tunep_config_resolve_scheduler()) */
    int is_list;                 /* 1: values[]; 0: draw from `dist` */
    size_t n_values;
    struct tunep_value *values;  /* owned; strings owned */
    tune_space *dist;            /* is_list 0: an owned one-parameter space to resample from */
};

/* Ray's PopulationBasedTraining options and defaults. */
struct tunep_pbt_config {
    char time_attr[128];         /* "training_iteration" (Ray: "time_total_s") */
    double perturbation_interval; /* 60 */
    double burn_in_period;       /* 0 */
    double quantile_fraction;    /* 0.25 */
    double resample_probability; /* 0.25 */
    double perturbation_factors[2]; /* 1.2, 0.8 */
    size_t n_mutations;
    struct tunep_pbt_mutation *mutations; /* owned */
};

struct tunep_scheduler_config {
    enum tunep_scheduler_type type;
    struct tunep_asha_config asha;
    struct tunep_median_config median;
    struct tunep_hyperband_config hyperband;
    struct tunep_pbt_config pbt;
};

/* Frees what a parsed config owns (PBT's mutations). */
void tunep_scheduler_config_done(struct tunep_scheduler_config *c);

/* Fills c with FIFO and ASHA's defaults. */
void tunep_scheduler_config_default(struct tunep_scheduler_config *c);

struct tunep_scheduler;

/*
 * Creates a scheduler. Options are assumed valid (the config parser checked
 * them). `space` is the study's (borrowed; PBT mutates its parameters) and
 * `seed` the study seed (PBT's choices). TUNE_ENOMEM on OOM.
 */
tune_status tunep_scheduler_new(const struct tunep_scheduler_config *c, const tune_space *space,
                                uint64_t seed, struct tunep_scheduler **ret, tune_error *err);
void tunep_scheduler_free(struct tunep_scheduler *s);

/* The name of the attribute that measures progress ("training_iteration" for FIFO). */
const char *tunep_scheduler_time_attr(const struct tunep_scheduler *s);

/*
 * A new trial starts (also a retry after a failure: the trial keeps what it
 * recorded). u is a uniform [0,1) number from the trial's own stream, which
 * ASHA uses to pick the trial's bracket reproducibly. A paused trial resumed
 * through choose() needs no call (one is harmless: it just runs on).
 */
tune_status tunep_scheduler_on_trial_add(struct tunep_scheduler *s, int64_t trial_id, double u);

/*
 * A report: t is the trial's time_attr value (has_t is 0 when the report lacks
 * it: no decision can be made then), score the normalised metric.
 */
enum tunep_decision tunep_scheduler_on_result(struct tunep_scheduler *s, int64_t trial_id,
                                              int has_t, double t, double score);

/* The trial ended (any way); last_t/last_score are its last report, if has_result. */
void tunep_scheduler_on_trial_complete(struct tunep_scheduler *s, int64_t trial_id,
                                       int has_result, double last_t, double last_score);

/*
 * Pausing schedulers (HyperBand, promotion ASHA, median stopping when it
 * yields or without hard_stop, PBT's time sharing). After a TUNEP_PAUSE
 * decision the objective returns; then the controller calls
 * on_trial_paused(). A paused trial runs again only when choose() names it.
 * If a stop condition ends the trial instead, on_trial_complete() is enough.
 * The controller tells the scheduler how many trials wait to start (new or
 * retried) before each on_result(), for the median rule's and PBT's time
 * sharing; the scheduler counts its own paused trials as waiting too. After
 * replaying a stored study (tune resume), call on_trial_paused() for the
 * trials that are PAUSED, so that they can be resumed or ranked.
 */
void tunep_scheduler_on_trial_paused(struct tunep_scheduler *s, int64_t trial_id);
void tunep_scheduler_set_waiting(struct tunep_scheduler *s, int64_t n_waiting);

enum tunep_next {
    TUNEP_NEXT_NEW = 0,    /* start a new trial (when any are left) */
    TUNEP_NEXT_RESUME = 1, /* resume paused trial *ret_id */
    TUNEP_NEXT_WAIT = 2,   /* nothing to run until a running trial reports or ends */
};

/*
 * What a free worker should do. new_left: new trials remain to be started.
 * FIFO and stopping ASHA always answer NEW. A scheduler may answer WAIT only
 * while some trial is running (n_running > 0); with nothing running and
 * nothing to resume it answers NEW, and the controller ends the study when no
 * new trials are left, ending every still-paused trial as STOPPED.
 *   HyperBand: promoted trials first (best first), else NEW while new trials
 *     are left, else WAIT. new_left == 0 closes the last bracket with the
 *     trials it has (so its rounds can end).
 *   promotion ASHA: a promotable trial (highest rung first), else NEW, else WAIT.
 *   median, PBT: NEW while new trials are left (Ray: PENDING before PAUSED),
 *     else a paused trial (median: first paused; PBT: least trained), else NEW.
 */
enum tunep_next tunep_scheduler_choose(struct tunep_scheduler *s, int new_left, int64_t n_running,
                                       int64_t *ret_id);

/*
 * Paused trials the scheduler has decided never to resume (HyperBand's round
 * losers): one id per call, returns 1; 0 when none. The controller ends them
 * STOPPED (it also calls on_trial_complete for them). Rounds end in
 * on_trial_paused(), on_trial_complete() and choose(): drain after those.
 * Promotion ASHA never gives up on a paused trial before the study ends (the
 * top of a rung grows with it); the controller ends those still paused.
 */
int tunep_scheduler_take_stopped(struct tunep_scheduler *s, int64_t *ret_id);

/*
 * PBT, after a TUNEP_EXPLOIT decision for trial_id: exploit_donor() is the
 * better trial whose checkpoint and configuration it takes (-1 when the last
 * decision for trial_id was not EXPLOIT); explore() writes the explored
 * configuration into out[space->n] from the donor's values: each mutated
 * parameter is resampled (resample_probability, or always when it is a list
 * entry not in the list) or perturbed (x perturbation factor for numbers,
 * clamped to the distribution's range, ints rounded; a neighbour in the list
 * for lists), the rest copied. r is a stream the controller seeds per
 * (trial, exploit). Calling explore() for trial_id carries the exploit out:
 * the trial takes the donor's check times (Ray's _exploit) and
 * exploit_donor() is -1 again; the controller calls it only when it copied
 * the donor's checkpoint. Strings in out are borrowed from donor_values or
 * from the scheduler (valid until it is freed). No-op for other types.
 */
int64_t tunep_scheduler_exploit_donor(const struct tunep_scheduler *s, int64_t trial_id);
void tunep_scheduler_explore(struct tunep_scheduler *s, int64_t trial_id,
                             const struct tunep_value *donor_values, gsl_rng *r,
                             struct tunep_value *out);

/*
 * Appends a short human description of the scheduler state to buf, e.g.
 * "ASHA: bracket 0: rung 1: 37 recorded, cutoff 0.8123; rung 4: ..." (cut-offs
 * in the user's metric units: sign says whether to negate back). One line per
 * bracket, each ending with '\n'. Nothing for FIFO.
 */
void tunep_scheduler_describe(const struct tunep_scheduler *s, double sign, struct tunep_buf *buf);

/*
 * numpy.percentile(values, p) with linear interpolation, p in [0, 100].
 * -INFINITY entries sort first; an interpolation that touches -INFINITY gives
 * -INFINITY (numpy would give NaN). n must be > 0. Sorts `values` in place.
 */
double tunep_percentile(double *values, size_t n, double p);

#endif /* TUNE_SCHEDULER_H */
