/*
 * config_space.h - a config's "param_space" object -> tune_space (private).
 *
 * json_t is only forward-declared here so that <jansson.h> stays in the .c
 * files that parse JSON; jansson defines it as `typedef struct json_t {...} json_t`.
 */
#ifndef TUNE_CONFIG_SPACE_H
#define TUNE_CONFIG_SPACE_H

#include "base/base.h"
#include "search/space.h"

struct json_t;

/*
 * Adds every parameter of param_space (an object) to space, in document
 * order, nested objects flattened to "a/b" names. `path` points at the
 * param_space value in ctx->text and is back at that depth on return. Errors
 * (TUNE_ECONFIG) go through tunep_cfg_error(): "param_space.lr: loguniform
 * needs 0 < low < high" at the line and column of the offending value (the
 * array element for a bad bound). On failure the parameters added by this
 * call are removed again, so the space is unchanged.
 * @return TUNE_OK, TUNE_ECONFIG, TUNE_ENOMEM, TUNE_EINVAL (NULL ctx or space).
 */
tune_status tunep_config_parse_space(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                     const struct json_t *param_space, tune_space *space);

#endif /* TUNE_CONFIG_SPACE_H */
