/*
 * median.h - private interface of the median stopping rule (median.c), for
 * scheduler.c's dispatch and the tests. See scheduler.h for what each event means.
 */
#ifndef TUNE_MEDIAN_H
#define TUNE_MEDIAN_H

#include <stddef.h>
#include <stdint.h>

#include "schedulers/scheduler.h"

struct tunep_median;

tune_status tunep_median_new(const struct tunep_median_config *cfg, struct tunep_median **ret,
                             tune_error *err);
void tunep_median_free(struct tunep_median *m);
tune_status tunep_median_on_trial_add(struct tunep_median *m, int64_t trial_id);
/* n_waiting: trials waiting to start, from tunep_scheduler_set_waiting(). */
enum tunep_decision tunep_median_on_result(struct tunep_median *m, int64_t trial_id, int has_t,
                                           double t, double score, int64_t n_waiting);
void tunep_median_on_trial_complete(struct tunep_median *m, int64_t trial_id, int has_result,
                                    double last_t, double last_score);
void tunep_median_on_trial_paused(struct tunep_median *m, int64_t trial_id);
enum tunep_next tunep_median_choose(struct tunep_median *m, int new_left, int64_t *ret_id);
void tunep_median_describe(const struct tunep_median *m, struct tunep_buf *buf);
const char *tunep_median_time_attr(const struct tunep_median *m);

/*
 * Inspection for tests: the running mean of a trial's scores with
 * grace_period <= time <= t (returns 0 when it has none), and the counts of
 * trials stopped below the median and of trials paused now.
 */
int tunep_median_running_mean(const struct tunep_median *m, int64_t trial_id, double t,
                              double *ret_mean);
int64_t tunep_median_num_stopped(const struct tunep_median *m);
int64_t tunep_median_num_paused(const struct tunep_median *m);

/* The median state of a scheduler, or NULL for another type. */
struct tunep_median *tunep_scheduler_median(struct tunep_scheduler *s);

#endif /* TUNE_MEDIAN_H */
