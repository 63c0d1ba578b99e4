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
#include <stdint.h>

#include "search/tpe_kernel.h"

/*
 * Sorts a[0..n) by key exactly as np.argsort(keys) orders the positions:
 * afterwards TUNEP_NP_POS(a[k]) is np.argsort's k-th index when a[k] held
 * position k before. numpy's order depends only on the outcomes of its
 * comparisons, so keys that rank doubles (equal for equal values, in the
 * same order) give the permutation of np.argsort on the doubles themselves.
 * kern: any variant (tunep_tpe_kernels_get), all give the same order. work:
 * room for 2 n + 2 TUNEP_TPE_LANES positions (scratch); n < 2^32.
 */
void tunep_np_argsort(const struct tunep_tpe_kernels *kern, uint64_t *a, size_t n, size_t *work);

#endif /* TUNE_NP_ARGSORT_H */
