/*
 * trainer.h - built-in objectives. Each implements tune_objective_fn on top of
 * the public trial API only, exactly as a user's objective would.
 */
#ifndef TUNE_TRAINER_H
#define TUNE_TRAINER_H

#include "tune.h"

struct tunep_synthetic_config;

/*
 * The synthetic trainer: a deterministic learning curve with a known optimum
 * (user_data is a const struct tunep_synthetic_config *). See synthetic.c.
 */
tune_status tunep_synthetic_objective(tune_trial *trial, void *user_data);

/* The synthetic curve without noise, for tests and benchmarks. */
double tunep_synthetic_curve(double lr, double weight_decay, double batch_size, double warmup,
                             int64_t iteration);

struct tunep_bert_trainer_config;
struct tunep_bert_trainer;

/*
 * The BERT fine-tuning trainer's shared state (tokenizer and datasets, loaded
 * by the first trial). cfg is borrowed for the trainer's lifetime;
 * concurrency divides the cores among trials. The objective's user_data is
 * the trainer. See bert_trainer.c.
 */
tune_status tunep_bert_trainer_new(const struct tunep_bert_trainer_config *cfg, int concurrency,
                                   struct tunep_bert_trainer **ret, tune_error *err);
void tunep_bert_trainer_free(struct tunep_bert_trainer *t);
/* Loads the vocabulary and datasets now, so data errors stop the run before any trial. */
tune_status tunep_bert_trainer_prepare(struct tunep_bert_trainer *t, tune_error *err);
tune_status tunep_bert_objective(tune_trial *trial, void *user_data);

/* ---- "type": "command": an external program per attempt (command.c) ------ */

struct tunep_buf;
struct tunep_command_config;
struct tunep_command_trainer;

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
/* The trainer's shared state; cfg is borrowed for its lifetime. */
tune_status tunep_command_trainer_new(const struct tunep_command_config *cfg,
                                      struct tunep_command_trainer **ret, tune_error *err);
void tunep_command_trainer_free(struct tunep_command_trainer *t);
/* user_data is the struct tunep_command_trainer. */
tune_status tunep_command_objective(tune_trial *trial, void *user_data);

/* ---- "type": "plugin": a tune_objective_fn from a shared library (plugin.c) */

struct tunep_plugin_config;
struct tunep_plugin;

/*
 * dlopen()s the library and looks its symbols up (no code of the plugin but
 * its constructors runs yet). Errors are TUNE_ECONFIG at the key's position
 * in `source`. cfg is borrowed for the plugin's lifetime.
 */
tune_status tunep_plugin_open(const struct tunep_plugin_config *cfg, const char *source,
                              struct tunep_plugin **ret, tune_error *err);
/* Calls init_symbol (once) before the first trial. */
tune_status tunep_plugin_prepare(struct tunep_plugin *p, tune_error *err);
/* Calls fini_symbol when init ran, then dlclose()s. NULL is fine. */
void tunep_plugin_free(struct tunep_plugin *p);
/* user_data is the struct tunep_plugin. */
tune_status tunep_plugin_objective(tune_trial *trial, void *user_data);

#endif /* TUNE_TRAINER_H */
