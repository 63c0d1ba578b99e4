/*
 * motpe.h - what multi-objective TPE (MOTPE: Ozaki et al., GECCO 2020 and
 * JAIR 2022) changes in TPE: which finished trials are the good ones
 * ("below") and how much each good one weighs in l(x). search/tpe.c uses it
 * when a study has several objectives; the rest of TPE is unchanged.
 *
 * Points are rows of an n x m row-major array of losses (minimisation form,
 * as search/pareto.h), in trial order; NaN marks a missing objective, with
 * pareto.h's order (a point with a NaN is dominated by every point without).
 * The semantics are Optuna's TPESampler with several objectives
 * (optuna/samplers/_tpe/sampler.py and optuna/_hypervolume/hssp.py):
 * the split is that of Optuna 5.0, the weights by hypervolume contribution
 * those of Optuna 2.x to 4.9 (_calculate_weights_below_for_multi_objective;
 * Optuna 5.0 weighs the good trials uniformly instead).
 */
#ifndef TUNE_MOTPE_H
#define TUNE_MOTPE_H

#include <stddef.h>

#include "base/base.h"

/*
 * Optuna's reference point for a set of losses: per objective, the worst
 * (largest) value w, moved to max(1.1 w, 0.9 w), and 1e-12 where that is 0.
 * NaN where a point has a NaN. n > 0.
 */
void tunep_motpe_reference(const double *y, size_t n, size_t m, double *ret_ref);

/*
 * Greedy hypervolume subset selection (Optuna's _solve_hssp): picks k of the
 * n points y, which must be mutually non-dominated (one front), into
 * ret_chosen[i] = 1, the others 0.
 * - Equal points count once: the greedy works on the distinct points, each
 *   standing for its first occurrence. When there are fewer than k distinct
 *   points, all of them are chosen and then the earliest repeats.
 * - When ref is not finite in every objective (or a point is not finite),
 *   the first k distinct points in lexicographic order are chosen.
 * - Otherwise, k times, the point whose hypervolume contribution (bounded by
 *   ref) to those chosen so far is largest joins them; ties go to the first
 *   in lexicographic order. Two objectives: Optuna's exact rectangles; more:
 *   the exclusive volume, prod(ref - p) minus the volume of the chosen points
 *   clipped to p, evaluated lazily (a contribution only shrinks as the
 *   chosen set grows, so a candidate is recomputed only while its last
 *   value could still win), which picks what the plain greedy picks.
 * TUNE_ENOMEM.
 */
tune_status tunep_motpe_hssp(const double *y, size_t n, size_t m, size_t k, const double *ref,
                             unsigned char *ret_chosen, tune_error *err);

/*
 * MOTPE's split of n finished trials into n_below good ones (ret_below[i] =
 * 1) and the rest (0), as Optuna's _split_complete_trials_multi_objective:
 * whole non-dominated fronts (the ranks of tunep_pareto_sort()) in rank
 * order while they fit, then tunep_motpe_hssp() picks the remainder from the
 * first front that does not fit (its members in trial order), bounded by
 * that front's tunep_motpe_reference(). n_below >= n takes every trial. The
 * fronts are peeled only as far as needed: O(m n f) for f points per front.
 * TUNE_ENOMEM.
 */
tune_status tunep_motpe_split(const double *y, size_t n, size_t m, size_t n_below,
                              unsigned char *ret_below, tune_error *err);

/*
 * The weights of the n good trials in l(x), as Optuna 4.9's
 * _calculate_weights_below_for_multi_objective: a trial on the good set's
 * own Pareto front weighs its hypervolume contribution (the volume only it
 * dominates, bounded by the good set's tunep_motpe_reference()) divided by
 * the largest contribution; every other trial, and a front member whose
 * contribution is 0 (one of equal points), weighs 1e-12. All weigh 1 when
 * n <= 1 or when a point or the reference is not finite (Optuna's infinite
 * hypervolume). TUNE_ENOMEM.
 */
tune_status tunep_motpe_weights(const double *y, size_t n, size_t m, double *ret_w,
                                tune_error *err);

#endif /* TUNE_MOTPE_H */
