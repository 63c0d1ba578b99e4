/*
 * registry.c - the one place that lists the trainers.
 *
 * A trainer is one row: add its file to trainers/meson.build and its row to
 * builtin[] below. The config names it by "type"; nothing else in tune knows
 * it. Rows added at run time (tests, programs embedding libtune) go through
 * tunep_trainer_register(), the same call the built-in rows go through.
 */
#include "trainers/trainer.h"

#include <pthread.h>
#include <string.h>

static const struct tunep_trainer_type *const builtin[] = {
    &tunep_trainer_synthetic,
    &tunep_trainer_bert,
    &tunep_trainer_command,
    &tunep_trainer_plugin,
};

#define MAX_TYPES 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const struct tunep_trainer_type *types[MAX_TYPES + 1]; /* NULL-terminated */
static size_t n_types;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static tune_status add(const struct tunep_trainer_type *type, tune_error *err)
{
    if (!type || !type->name || !type->name[0] || !type->options || !type->objective)
        return tunep_error_set(err, TUNE_EINVAL,
                               "a trainer type needs a name, an option table and an objective");
    tune_status st = TUNE_OK;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_types && !st; i++)
        if (strcmp(types[i]->name, type->name) == 0)
            st = tunep_error_set(err, TUNE_EINVAL, "trainer type \"%s\" is registered already",
                                 type->name);
    if (!st && n_types == MAX_TYPES)
        st = tunep_error_set(err, TUNE_ENOMEM, "more than %d trainer types", MAX_TYPES);
    if (!st) {
        types[n_types++] = type;
        types[n_types] = NULL;
    }
    pthread_mutex_unlock(&lock);
    return st;
}

/* The built-in rows, registered on first use (through add(), which
 * tunep_trainer_register() is too: it cannot re-enter pthread_once). */
static void add_builtin(void)
{
    for (size_t i = 0; i < sizeof builtin / sizeof *builtin; i++)
        (void)add(builtin[i], NULL);
}

tune_status tunep_trainer_register(const struct tunep_trainer_type *type, tune_error *err)
{
    pthread_once(&builtin_once, add_builtin);
    return add(type, err);
}

const struct tunep_trainer_type *const *tunep_trainer_types(void)
{
    pthread_once(&builtin_once, add_builtin);
    return types;
}
