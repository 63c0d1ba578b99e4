/*
 * pbt.h - private interface of population based training (pbt.c), for
 * scheduler.c's dispatch and the tests. See scheduler.h for what each event means.
 */
#ifndef TUNE_PBT_H
#define TUNE_PBT_H

#include <stddef.h>
#include <stdint.h>

#include "schedulers/scheduler.h"

struct tunep_pbt;

/*
 * The mutations are deep-copied; `space` is only read for its parameter
 * count (explore() writes space->n values). TUNE_EINVAL when a mutation is
 * unresolved (param SIZE_MAX) or out of range, or an option is out of range.
 */
tune_status tunep_pbt_new(const struct tunep_pbt_config *cfg, const tune_space *space,
                          uint64_t seed, struct tunep_pbt **ret, tune_error *err);
void tunep_pbt_free(struct tunep_pbt *p);
/* Frees n mutations (names, values, strings, spaces) and the array; NULL is fine. */
void tunep_pbt_mutations_free(struct tunep_pbt_mutation *m, size_t n);
tune_status tunep_pbt_on_trial_add(struct tunep_pbt *p, int64_t trial_id);
enum tunep_decision tunep_pbt_on_result(struct tunep_pbt *p, int64_t trial_id, int has_t, double t,
                                        double score, int64_t n_waiting);
void tunep_pbt_on_trial_complete(struct tunep_pbt *p, int64_t trial_id);
void tunep_pbt_on_trial_paused(struct tunep_pbt *p, int64_t trial_id);
enum tunep_next tunep_pbt_choose(struct tunep_pbt *p, int new_left, int64_t *ret_id);
int64_t tunep_pbt_exploit_donor(const struct tunep_pbt *p, int64_t trial_id);
/*
 * The controller exploits: the trial takes the donor's check times (Ray's
 * _exploit; not done at the EXPLOIT answer, since the controller may decline
 * when the donor has no checkpoint) and out gets the explored configuration.
 */
void tunep_pbt_explore(struct tunep_pbt *p, int64_t trial_id,
                       const struct tunep_value *donor_values, gsl_rng *r, struct tunep_value *out);
void tunep_pbt_describe(const struct tunep_pbt *p, double sign, struct tunep_buf *buf);
const char *tunep_pbt_time_attr(const struct tunep_pbt *p);

/*
 * Inspection for tests: the number of live trials ranked (those with a score
 * from a perturbation check), a trial's rank among them (0 = worst; returns 0
 * when it is not ranked), Ray's quantile size for n ranked trials, and the
 * number of exploits carried out (explore() calls after an EXPLOIT answer).
 */
size_t tunep_pbt_ranked(const struct tunep_pbt *p);
int tunep_pbt_rank(const struct tunep_pbt *p, int64_t trial_id, size_t *ret_rank);
size_t tunep_pbt_quantile_size(double quantile_fraction, size_t n);
int64_t tunep_pbt_num_exploits(const struct tunep_pbt *p);

/* The PBT state of a scheduler, or NULL for another type. */
struct tunep_pbt *tunep_scheduler_pbt(struct tunep_scheduler *s);

#endif /* TUNE_PBT_H */
