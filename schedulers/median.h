/*
 * median.h - the median stopping rule's options and what the tests inspect;
 * its row (tunep_median_type, in the registry) and state live in median.c.
 * See scheduler.h for what each event means.
 */
#ifndef TUNE_MEDIAN_H
#define TUNE_MEDIAN_H

#include <stddef.h>
#include <stdint.h>

#include "schedulers/scheduler.h"

/* Ray's MedianStoppingRule options ("type": "median_stopping") and defaults. */
struct tunep_median_config {
    char time_attr[128];      /* "time_total_s" */
    double grace_period;      /* 60 */
    int min_samples_required; /* 3 */
    double min_time_slice;    /* 0 */
    int hard_stop;            /* 1: stop a trial below the median; 0: pause it */
};

struct tunep_median;

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
