/*
 * config_options.h - reading one section of the config file with an option
 * table (base/options.h), with a file position for every error.
 */
#ifndef TUNE_CONFIG_OPTIONS_H
#define TUNE_CONFIG_OPTIONS_H

#include <jansson.h>

#include "base/base.h"
#include "base/options.h"

/*
 * Reads the object obj (the value at path) into cfg with table: every key
 * must be a row of table or one of extra_keys (NULL-terminated; keys the
 * caller reads itself, such as "type"), each value must have its row's type
 * and range. Defaults are not applied here (tunep_options_default()).
 * `expected` is said when obj is not an object. Errors are TUNE_ECONFIG at
 * the value's position; on failure cfg holds what was read so far (free it
 * with tunep_options_done()).
 */
tune_status tunep_config_read_options(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                      const json_t *obj, const struct tunep_option *table,
                                      const char *const *extra_keys, const char *expected,
                                      void *cfg);

/* One value (at path) of the kind each name says, with the same messages as tables get. */
tune_status tunep_config_read_string(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                     const json_t *v, size_t max, char **ret);
tune_status tunep_config_read_int(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                  const json_t *v, int64_t lo, int64_t hi, int64_t *ret);
tune_status tunep_config_read_number(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                     const json_t *v, double lo, double hi, double *ret);

/*
 * Reads v, the value of row o's key (path already ends in that key), into
 * cfg: one step of tunep_config_read_options(), for a caller that walks the
 * section itself because the rows depend on another key (the scheduler's
 * "type"). Errors as above.
 */
tune_status tunep_config_read_option(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                     const json_t *v, const struct tunep_option *o, void *cfg);

/*
 * The positioned config error for a component's own check (e->path is
 * relative to path, the section). Returns e->code.
 */
tune_status tunep_config_opt_error(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                   const struct tunep_opt_error *e);

#endif /* TUNE_CONFIG_OPTIONS_H */
