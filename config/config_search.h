/*
 * config_search.h - the "search" section of a study config (configs/README.md).
 */
#ifndef TUNE_CONFIG_SEARCH_H
#define TUNE_CONFIG_SEARCH_H

#include "base/base.h"

struct json_t; /* jansson's json_t, kept out of this header */
struct tunep_config;

/* The algorithms' defaults (Optuna's for TPE) into c. */
void tunep_config_search_defaults(struct tunep_config *c);

/*
 * Parses obj, the value of "search" (path already ends in "search"):
 * {"algorithm": "random" | "grid" | "tpe" | "gp" | "sobol" | "lhs" | "bohb",
 *  and that algorithm's options}. An option of another algorithm is an error
 * at its key. @return TUNE_OK, TUNE_ECONFIG.
 */
tune_status tunep_config_parse_search(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                      const struct json_t *obj, struct tunep_config *c);

/*
 * Rules between sections, checked once the whole document is read: model-based
 * searchers cannot search grid_search axes; BOHB needs the hyperband
 * scheduler; PBT explores by itself (random search only) and needs an
 * objective that checkpoints. @return TUNE_OK, TUNE_ECONFIG.
 */
tune_status tunep_config_check_search(const struct tunep_cfgctx *ctx, struct tunep_config *c);

#endif /* TUNE_CONFIG_SEARCH_H */
