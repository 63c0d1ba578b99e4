/*
 * config_scheduler.h - the "scheduler" section of a study config (configs/README.md).
 */
#ifndef TUNE_CONFIG_SCHEDULER_H
#define TUNE_CONFIG_SCHEDULER_H

#include "base/base.h"
#include "schedulers/scheduler.h"

struct json_t; /* jansson's json_t, kept out of this header */

/*
 * Parses obj, the value of "scheduler" (path already ends in "scheduler"),
 * into out: {"type": T, T's options} for T a registered scheduler's name or
 * alias (fifo, asha or "async_hyperband", median_stopping or
 * "median_stopping_rule", hyperband, pbt or "population_based_training");
 * a missing type means FIFO, missing options take their defaults. Each
 * option is read with T's option table and the rules across options are
 * T's check(). Unknown keys, keys of another scheduler, wrong types and
 * broken rules are reported through tunep_cfg_error() with the position of
 * the offending key or value. Mutation lists (PBT's) are parsed but not yet
 * matched to parameters (param SIZE_MAX): call
 * tunep_config_resolve_scheduler() once the space is known.
 * @return TUNE_OK, TUNE_ECONFIG, TUNE_ENOMEM; out is written only on success
 * and then owns its options (tunep_scheduler_config_done()).
 */
tune_status tunep_config_parse_scheduler(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                         const struct json_t *obj,
                                         struct tunep_scheduler_config *out);

/*
 * Sets the parameter index of each mutation in c's mutation lists (PBT's
 * hyperparam_mutations) from its name in space, or fails at the mutation's
 * key: "scheduler.hyperparam_mutations.lrr: 'lrr' is not a parameter of
 * param_space (did you mean 'lr'?)". obj is the same "scheduler" value that
 * c was parsed from, path ends in "scheduler" and is back at that depth on
 * return. Nothing to do for schedulers without mutation lists.
 * @return TUNE_OK, TUNE_ECONFIG.
 */
tune_status tunep_config_resolve_scheduler(const struct tunep_cfgctx *ctx,
                                           struct tunep_cfgpath *path, const struct json_t *obj,
                                           const tune_space *space,
                                           struct tunep_scheduler_config *c);

/*
 * Reads v, a TUNEP_OPT_MUTATIONS value (path ends in its key), into m: an
 * object of parameter names (groups nest as in param_space), each a list of
 * values or a param_space distribution other than grid_search. `expected`
 * is said when v is not an object. On success m owns the list (its previous
 * one freed); on failure m is unchanged.
 * @return TUNE_OK, TUNE_ECONFIG, TUNE_ENOMEM.
 */
tune_status tunep_config_read_mutations(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                        const struct json_t *v, const char *expected,
                                        struct tunep_mutations *m);

#endif /* TUNE_CONFIG_SCHEDULER_H */
