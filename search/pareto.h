/*
 * pareto.h - comparing trials on several objectives at once.
 *
 * Points are rows of an n x m row-major array (n points, m objectives).
 * Every function here works in minimisation form; tunep_pareto_minimize()
 * turns a table with mixed directions into it (maximised objectives are
 * negated). A NaN objective marks a missing metric and counts worst:
 *
 * - a point with no NaN dominates every point that has one;
 * - two points that both have NaNs compare with each NaN read as +inf;
 * - otherwise a dominates b when it is no worse in every objective and
 *   strictly better in at least one (Deb et al. 2002).
 *
 * This is a strict partial order, so non-dominated sorting is well defined.
 * Equal points (duplicates) never dominate each other and share a rank.
 */
#ifndef TUNE_PARETO_H
#define TUNE_PARETO_H

#include <stddef.h>

#include "base/base.h"

/* The most objectives a study may have (hypervolume's cost grows as n^(m-1)). */
#define TUNEP_PARETO_MAX_OBJECTIVES 16

/*
 * out[i*m + j] = in[i*m + j], negated where maximize[j]; NaNs stay NaN.
 * in and out may be the same array.
 */
void tunep_pareto_minimize(const double *in, size_t n, size_t m, const int *maximize, double *out);

/* 1 when a dominates b (both in minimisation form, m objectives), else 0. */
int tunep_pareto_dominates(const double *a, const double *b, size_t m);

/*
 * Fast non-dominated sort (Deb et al. 2002): ret_rank[i] = the front of
 * point i, 0 for the non-dominated points, 1 for those dominated only by
 * front 0, and so on. O(m n^2) time; memory for the domination lists grows
 * with the number of dominating pairs (at most n(n-1)/2). TUNE_ENOMEM.
 */
tune_status tunep_pareto_sort(const double *y, size_t n, size_t m, int *ret_rank, tune_error *err);

/*
 * ret_front[i] = 1 when point i is non-dominated, else 0; returns how many
 * are. O(m n^2) time, no allocation.
 */
size_t tunep_pareto_front(const double *y, size_t n, size_t m, int *ret_front);

/*
 * Crowding distance of the k points y[idx[0..k-1]] (one front), as Optuna's
 * NSGA-II computes it: per objective, the points are ordered by value (ties
 * by position in idx); when the objective's range is non-zero, the two ends
 * get +inf and each inner point adds (next - previous) / range. An objective
 * with zero or infinite range adds nothing. NaN values are read as +inf.
 * ret_dist[j] belongs to idx[j]. TUNE_ENOMEM.
 */
tune_status tunep_pareto_crowding(const double *y, size_t m, const size_t *idx, size_t k,
                                  double *ret_dist, tune_error *err);

/*
 * The exact hypervolume that points y (minimisation form) dominate, bounded
 * by the reference point ref[m]: the measure of the union of the boxes
 * [y_i, ref]. Points that do not strictly dominate ref in every objective
 * (NaN included) add nothing. Two objectives: a sweep, O(n log n); more:
 * slicing along the last objective (HSO, While et al. 2006), O(n^(m-1)),
 * meant for fronts of modest size. *ret_hv is 0 for no points. TUNE_ENOMEM.
 */
tune_status tunep_pareto_hypervolume(const double *y, size_t n, size_t m, const double *ref,
                                     double *ret_hv, tune_error *err);

/*
 * A reference point for the hypervolume of points y (minimisation form, n x
 * m) when the user gives none: per objective, the worst (largest) finite
 * value among the points, moved a tenth of their range further (a tenth of
 * |worst| when all are equal, 1 when that is 0 too), so that the front's
 * extreme points add volume as well. NaN for an objective no point has.
 */
void tunep_pareto_reference(const double *y, size_t n, size_t m, double *ret_ref);

/*
 * The hypervolume (bounded by ref) of points 0..i, for each i in turn:
 * ret_hv[i]. Only the running front of the points strictly inside ref is
 * kept, and its volume is recomputed only when a point joins it. work_max
 * caps the sum of k^(m-1) (k: the front's size) over those recomputations,
 * which bounds the time for three or more objectives; once it would be
 * passed, the remaining entries stay NaN. *ret_done: how many entries were
 * computed (n unless the cap was reached). TUNE_ENOMEM.
 */
tune_status tunep_pareto_hypervolume_history(const double *y, size_t n, size_t m, const double *ref,
                                             double work_max, double *ret_hv, size_t *ret_done,
                                             tune_error *err);

#endif /* TUNE_PARETO_H */
