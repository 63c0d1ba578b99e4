/*
 * asha.h - private declarations shared by scheduler.c, asha.c and percentile.c.
 *
 * scheduler.c dispatches on the scheduler type; ASHA's state lives in asha.c.
 * percentile.c holds numpy's 'linear' percentile in pieces so that ASHA's
 * rungs, which keep their values split around the percentile position, give
 * bit-identical cut-offs to tunep_percentile() on the same values.
 */
#ifndef TUNE_ASHA_H
#define TUNE_ASHA_H

#include <stddef.h>
#include <stdint.h>

#include "schedulers/scheduler.h"

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

tune_status tunep_asha_new(const struct tunep_asha_config *cfg, struct tunep_asha **ret,
                           tune_error *err);
void tunep_asha_free(struct tunep_asha *a);
tune_status tunep_asha_on_trial_add(struct tunep_asha *a, int64_t trial_id, double u);
enum tunep_decision tunep_asha_on_result(struct tunep_asha *a, int64_t trial_id, int has_t,
                                         double t, double score);
void tunep_asha_on_trial_complete(struct tunep_asha *a, int64_t trial_id, int has_result,
                                  double last_t, double last_score);
/* Promotion variant only (no-ops, or NEW, for Ray's stopping variant). */
void tunep_asha_on_trial_paused(struct tunep_asha *a, int64_t trial_id);
enum tunep_next tunep_asha_choose(struct tunep_asha *a, int new_left, int64_t n_running,
                                  int64_t *ret_id);
void tunep_asha_describe(const struct tunep_asha *a, double sign, struct tunep_buf *buf);
/* Borrowed; valid until the scheduler is freed. */
const char *tunep_asha_time_attr(const struct tunep_asha *a);

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

/* The ASHA state of a scheduler, or NULL for FIFO. */
struct tunep_asha *tunep_scheduler_asha(struct tunep_scheduler *s);

#endif /* TUNE_ASHA_H */
