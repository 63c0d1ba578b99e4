/*
 * asha.h - private declarations shared by asha.c, percentile.c and the tests.
 *
 * ASHA's row (tunep_asha_type, in the registry), state and options live in
 * asha.c; this header has its config struct and what tests inspect.
 * percentile.c holds numpy's 'linear' percentile in pieces so that ASHA's
 * rungs, which keep their values split around the percentile position, give
 * bit-identical cut-offs to tunep_percentile() on the same values.
 */
#ifndef TUNE_ASHA_H
#define TUNE_ASHA_H

#include <stddef.h>
#include <stdint.h>

#include "schedulers/scheduler.h"

/* ASHA's options ("type": "asha"), with Ray Tune's names and defaults. */
struct tunep_asha_config {
    char time_attr[128];     /* "training_iteration" */
    double max_t;            /* 100 */
    double grace_period;     /* 1 */
    double reduction_factor; /* 4 */
    int brackets;            /* 1 */
    int stop_last_trials;    /* 1 */
    int promotion;           /* "variant": 0: "stopping", Ray's stopping ASHA (the default);
                              * 1: "promotion", the paper's Algorithm 2: trials pause at each
                              * rung and the top 1/rf are promoted */
};

/* Limits: a trial's recorded rungs are a 64-bit mask, so a bracket has at most 64 rungs. */
#define TUNEP_ASHA_MAX_RUNGS    64
#define TUNEP_ASHA_MAX_BRACKETS 64

/*
 * numpy's 'linear' method (numpy/lib/function_base.py, _quantile and _lerp):
 * for n sorted values and q = p / 100, the value is between v[lo] and v[lo+1]
 * with weight gamma on v[lo+1]. When the position is at or past the last
 * value, lo is n - 1 and gamma 0 (v[lo+1] is not read). n must be > 0.
 */
void tunep_percentile_position(size_t n, double q, size_t *ret_lo, double *ret_gamma);
/* numpy's _lerp(a, b, gamma), with the -INFINITY rule of tunep_percentile(). */
double tunep_percentile_lerp(double a, double b, double gamma);

/*
 * Ray's rung count for bracket s: int(log(max_t / grace) / log(rf) - s + 1),
 * in doubles as numpy computes it; 0 when that is not positive. Capped at
 * TUNEP_ASHA_MAX_RUNGS + 1 so that callers can detect "too many".
 */
int tunep_asha_rung_count(const struct tunep_asha_config *c, int s);

struct tunep_asha;

/*
 * Inspection for tests and tools: the bracket count, a bracket's rung count,
 * a rung's milestone, number of recorded values and cut-off (returns 0 and
 * leaves *ret_cutoff alone when the rung is empty; in the promotion variant
 * the cut-off is the worst score in the rung's top floor(n / rf), and 0 is
 * returned while that top is empty), and the number of trials promoted from
 * it (promotion variant). Rungs are indexed in descending milestone order, as
 * Ray keeps them. The trial's bracket, or -1 when the trial is unknown or
 * finished.
 */
int tunep_asha_bracket_count(const struct tunep_asha *a);
int tunep_asha_rung_count_of(const struct tunep_asha *a, int bracket);
double tunep_asha_milestone(const struct tunep_asha *a, int bracket, int rung);
size_t tunep_asha_recorded(const struct tunep_asha *a, int bracket, int rung);
int tunep_asha_cutoff(const struct tunep_asha *a, int bracket, int rung, double *ret_cutoff);
size_t tunep_asha_promoted(const struct tunep_asha *a, int bracket, int rung);
int tunep_asha_trial_bracket(const struct tunep_asha *a, int64_t trial_id);

/* The ASHA state of a scheduler, or NULL for another type. */
struct tunep_asha *tunep_scheduler_asha(struct tunep_scheduler *s);

#endif /* TUNE_ASHA_H */
