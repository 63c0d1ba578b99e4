/*
 * trainer.h - the built-in trainers and their registry.
 *
 * Each trainer is one file that defines one struct tunep_trainer_type row
 * (base/trainer_type.h) on top of the public trial API only, exactly as a
 * user's objective would; registry.c lists the rows. Adding a trainer is a
 * new file here plus one row there.
 */
#ifndef TUNE_TRAINER_H
#define TUNE_TRAINER_H

#include "tune.h"

#include "base/base.h"
#include "base/trainer_type.h"

/* The built-in rows (synthetic.c, bert_trainer.c, command.c, plugin.c). */
extern const struct tunep_trainer_type tunep_trainer_synthetic;
extern const struct tunep_trainer_type tunep_trainer_bert;
extern const struct tunep_trainer_type tunep_trainer_command;
extern const struct tunep_trainer_type tunep_trainer_plugin;

/*
 * The registered trainer types, NULL-terminated: the built-in rows, then
 * every type added with tunep_trainer_register(). Process-wide, like the
 * allocator and log hooks; valid until the next registration.
 */
const struct tunep_trainer_type *const *tunep_trainer_types(void);

/*
 * Adds a trainer type (borrowed: it must outlive every study that uses it).
 * The built-in rows are added through this same call. TUNE_EINVAL for a
 * type without a name, options or objective, or whose name is taken;
 * TUNE_ENOMEM past the registry's capacity. Thread-safe, but register
 * before creating studies.
 */
tune_status tunep_trainer_register(const struct tunep_trainer_type *type, tune_error *err);

/* The synthetic curve without noise, for tests and benchmarks. */
double tunep_synthetic_curve(double lr, double weight_decay, double batch_size, double warmup,
                             int64_t iteration);

/* ---- the command trainer's templates (command.c) --------------------------- */

/*
 * Appends the value of placeholder `name` to out; returns 0, or -1 when the
 * name is unknown.
 */
typedef int (*tunep_placeholder_fn)(void *ud, const char *name, struct tunep_buf *out);
/*
 * Expands a template: "{name}" becomes lookup's text for name, "{{" and "}}"
 * are literal braces, a lone '}' stays itself. Returns 0; -1 for an unknown
 * placeholder (its name in bad); -2 for a '{' without its '}' (the rest of
 * the template in bad). out holds the text so far either way (OOM: out->oom).
 */
int tunep_command_expand(const char *tmpl, tunep_placeholder_fn lookup, void *ud,
                         struct tunep_buf *out, char *bad, size_t bad_size);
/*
 * Finds the program the command trainer would run: a name with a '/' as it
 * is (relative to cwd when cwd is set), else the first executable match in
 * path_env (NULL: tune's PATH). Returns 0 with *ret_path (tunep_free);
 * -1 with the reason in why ("'pyhton3' not found in PATH"); -2 on OOM.
 */
int tunep_command_find_program(const char *program, const char *cwd, const char *path_env,
                               char **ret_path, char *why, size_t why_size);

#endif /* TUNE_TRAINER_H */
