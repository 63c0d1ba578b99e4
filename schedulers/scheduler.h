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

#include "internal.h"

enum tunep_decision {
    TUNEP_CONTINUE = 0,
    TUNEP_STOP = 1,      /* stop early: the trial ends STOPPED */
    TUNEP_TERMINATE = 2, /* the trial reached the scheduler's end (max_t): it ends TERMINATED */
};

enum tunep_scheduler_type {
    TUNEP_SCHED_FIFO = 0,
    TUNEP_SCHED_ASHA = 1,
};

/* ASHA's options, with Ray Tune's names and defaults. */
struct tunep_asha_config {
    char time_attr[128];     /* "training_iteration" */
    double max_t;            /* 100 */
    double grace_period;     /* 1 */
    double reduction_factor; /* 4 */
    int brackets;            /* 1 */
    int stop_last_trials;    /* 1 */
};

struct tunep_scheduler_config {
    enum tunep_scheduler_type type;
    struct tunep_asha_config asha;
};

/* Fills c with FIFO and ASHA's defaults. */
void tunep_scheduler_config_default(struct tunep_scheduler_config *c);

struct tunep_scheduler;

/*
 * Creates a scheduler. Options are assumed valid (the config parser checked
 * them). TUNE_ENOMEM on OOM.
 */
tune_status tunep_scheduler_new(const struct tunep_scheduler_config *c,
                                struct tunep_scheduler **ret, tune_error *err);
void tunep_scheduler_free(struct tunep_scheduler *s);

/* The name of the attribute that measures progress ("training_iteration" for FIFO). */
const char *tunep_scheduler_time_attr(const struct tunep_scheduler *s);

/*
 * A new trial starts (also a retry after a failure: the trial keeps what it
 * recorded). u is a uniform [0,1) number from the trial's own stream, which
 * ASHA uses to pick the trial's bracket reproducibly.
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
