/*
 * np_argsort.h - numpy's np.argsort (kind "quicksort", numpy 1.24), bit for
 * bit, for TPE's Parzen estimators (search/tpe.c).
 *
 * Optuna gives each observation the width of its farther neighbour in
 * np.argsort(mus) order, with the prior's centre appended last, so among
 * equal values (integers repeat, the prior's centre can equal one) the order
 * numpy's unstable default sort leaves decides which trial gets which width.
 */
#ifndef TUNE_NP_ARGSORT_H
#define TUNE_NP_ARGSORT_H

#include <stddef.h>

/* A value and its position in the input, moved together. */
struct tunep_np_item {
    double v;
    size_t i;
};

/*
 * Sorts a[0..n) by v exactly as np.argsort(v) orders the indices: afterwards
 * a[k].i is np.argsort's k-th index when a[k].i was k before. work: room for
 * 2 n positions (scratch).
 */
void tunep_np_argsort(struct tunep_np_item *a, size_t n, size_t *work);

#endif /* TUNE_NP_ARGSORT_H */
