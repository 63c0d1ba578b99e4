/*
 * config_scheduler.h - the "scheduler" section of a study config (configs/README.md).
 */
#ifndef TUNE_CONFIG_SCHEDULER_H
#define TUNE_CONFIG_SCHEDULER_H

#include "internal.h"
#include "schedulers/scheduler.h"

struct json_t; /* jansson's json_t, kept out of this header */

/*
 * Parses obj, the value of "scheduler" (path already ends in "scheduler"),
 * into out: {"type": "fifo"} or {"type": "asha", ASHA's options with Ray's
 * names}; a missing type means FIFO, missing options take Ray's defaults.
 * Unknown keys, wrong types and broken rules are reported through
 * tunep_cfg_error() with the position of the offending key or value.
 * @return TUNE_OK, TUNE_ECONFIG; out is written only on success.
 */
tune_status tunep_config_parse_scheduler(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                         const struct json_t *obj,
                                         struct tunep_scheduler_config *out);

#endif /* TUNE_CONFIG_SCHEDULER_H */
