/*
 * study_options.h - what config.c shares with study_options.c: one set of
 * defaults and one validation, whether the config comes as JSON text or as
 * a tune_options struct.
 */
#ifndef TUNE_STUDY_OPTIONS_H
#define TUNE_STUDY_OPTIONS_H

#include "base/base.h"

struct json_t; /* jansson's json_t, kept out of this header */
struct tunep_config;
struct tunep_trainer_type;

/* Every key's default into c (no allocation: a plain value). */
void tunep_config_defaults(struct tunep_config *c);

/*
 * Validates the config object root (borrowed) into *out, as
 * tunep_config_parse() does once the text is parsed: positions in errors
 * refer to ctx->text (none when it is NULL). `space` as there: taken, even
 * on failure; NULL for param_space (or none). On failure out is left empty.
 */
tune_status tunep_config_from_root(const struct tunep_cfgctx *ctx, struct json_t *root,
                                   tune_space *space,
                                   const struct tunep_trainer_type *const *trainers,
                                   struct tunep_config *out);

#endif /* TUNE_STUDY_OPTIONS_H */
