/*
 * registry.c - the one list of schedulers: the built-in rows, each defined
 * in its own file (fifo.c, asha.c, median.c, hyperband.c, pbt.c), plus any
 * added with tunep_scheduler_register(). The config's "type" is looked up
 * here, and the messages that list the schedulers list them in this order.
 *
 * The list is process-wide state, like the allocator hooks: the built-ins
 * are there from the start (no initialisation call, nothing to race on), and
 * a registration happens before any study is made, never concurrently with
 * another call. Adding a built-in scheduler is one file with its row, and
 * its declaration and entry below.
 */
#include "schedulers/scheduler.h"

#include <string.h>

/* The built-in rows, each defined in its own file. */
extern const struct tunep_scheduler_type tunep_fifo_type;      /* fifo.c */
extern const struct tunep_scheduler_type tunep_asha_type;      /* asha.c */
extern const struct tunep_scheduler_type tunep_median_type;    /* median.c */
extern const struct tunep_scheduler_type tunep_hyperband_type; /* hyperband.c */
extern const struct tunep_scheduler_type tunep_pbt_type;       /* pbt.c */

static const struct tunep_scheduler_type *const builtin[] = {
    &tunep_fifo_type, /* the default, so first */
    &tunep_asha_type, &tunep_median_type, &tunep_hyperband_type, &tunep_pbt_type,
};
#define N_BUILTIN (sizeof builtin / sizeof builtin[0])

/* Rows registered at run time, after the built-ins; a registry need not grow without bound. */
#define MAX_ADDED 16
static const struct tunep_scheduler_type *added[MAX_ADDED];
static size_t n_added;

/* Whether name is a name or an alias of t. */
static int answers_to(const struct tunep_scheduler_type *t, const char *name)
{
    if (strcmp(t->name, name) == 0)
        return 1;
    for (size_t i = 0; t->aliases && t->aliases[i]; i++)
        if (strcmp(t->aliases[i], name) == 0)
            return 1;
    return 0;
}

static tune_status check_name(const char *name, tune_error *err)
{
    if (!name || !name[0])
        return tunep_error_set(err, TUNE_EINVAL, "scheduler: a row needs a name");
    if (tunep_scheduler_find(name))
        return tunep_error_set(err, TUNE_EINVAL, "scheduler: '%s' is registered already", name);
    return TUNE_OK;
}

tune_status tunep_scheduler_register(const struct tunep_scheduler_type *type, tune_error *err)
{
    if (!type)
        return tunep_error_set(err, TUNE_EINVAL, "scheduler: missing argument");
    tune_status st = check_name(type->name, err);
    for (size_t i = 0; !st && type->aliases && type->aliases[i]; i++)
        st = check_name(type->aliases[i], err);
    if (st)
        return st;
    size_t n_options = 0;
    while (type->options && type->options[n_options].name)
        n_options++;
    /* check() learns which options were given as a 64-bit mask */
    if (!type->title || (type->create && !type->free) || (type->options && !type->config_size) ||
        n_options >= 64)
        return tunep_error_set(err, TUNE_EINVAL, "scheduler '%s': incomplete row", type->name);
    if (n_added == MAX_ADDED)
        return tunep_error_set(err, TUNE_ENOMEM, "scheduler '%s': the registry is full",
                               type->name);
    added[n_added++] = type;
    return TUNE_OK;
}

size_t tunep_scheduler_count(void)
{
    return N_BUILTIN + n_added;
}

const struct tunep_scheduler_type *tunep_scheduler_at(size_t i)
{
    if (i < N_BUILTIN)
        return builtin[i];
    return i - N_BUILTIN < n_added ? added[i - N_BUILTIN] : NULL;
}

const struct tunep_scheduler_type *tunep_scheduler_find(const char *name)
{
    for (size_t i = 0; name && i < tunep_scheduler_count(); i++)
        if (answers_to(tunep_scheduler_at(i), name))
            return tunep_scheduler_at(i);
    return NULL;
}

const struct tunep_scheduler_type *tunep_scheduler_type_default(void)
{
    return builtin[0];
}
