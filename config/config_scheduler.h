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
 * into out: {"type": T, T's options with Ray's names} for T one of fifo,
 * asha ("async_hyperband"), median_stopping ("median_stopping_rule"),
 * hyperband, pbt ("population_based_training"); a missing type means FIFO,
 * missing options take Ray's defaults. Unknown keys, keys of another
 * scheduler, wrong types and broken rules are reported through
 * tunep_cfg_error() with the position of the offending key or value. PBT's
 * mutations are parsed but not yet matched to parameters (param SIZE_MAX):
 * call tunep_config_resolve_scheduler() once the space is known.
 * @return TUNE_OK, TUNE_ECONFIG, TUNE_ENOMEM; out is written only on success
 * and then owns PBT's mutations (tunep_scheduler_config_done()).
 */
tune_status tunep_config_parse_scheduler(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                         const struct json_t *obj,
                                         struct tunep_scheduler_config *out);

/*
 * PBT: sets each mutation's parameter index in c from its name in space, or
 * fails at the mutation's key: "scheduler.hyperparam_mutations.lrr: 'lrr' is
 * not a parameter of param_space (did you mean 'lr'?)". obj is the same
 * "scheduler" value that c was parsed from, path ends in "scheduler" and is
 * back at that depth on return. Nothing to do for other types.
 * @return TUNE_OK, TUNE_ECONFIG.
 */
tune_status tunep_config_resolve_scheduler(const struct tunep_cfgctx *ctx,
                                           struct tunep_cfgpath *path, const struct json_t *obj,
                                           const tune_space *space,
                                           struct tunep_scheduler_config *c);

#endif /* TUNE_CONFIG_SCHEDULER_H */
