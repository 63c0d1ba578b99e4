/*
 * registry.c - the one list of schedulers: the built-in rows, each defined
 * in its own file (fifo.c, asha.c, median.c, hyperband.c, pbt.c), then any
 * added with tunep_scheduler_register(). The config's "type" is looked up
 * here, and the messages that list the schedulers list them in this order.
 *
 * The list is process-wide state, like the allocator hooks. The built-ins
 * enter it through the same checks as any other row, once, on the first
 * call of any function here (pthread_once, so a study made on any thread
 * sees them); a registration of one's own happens before any study is made,
 * never concurrently with another call. Adding a built-in scheduler is one
 * file with its row, and its declaration and entry below.
 */
#include "schedulers/scheduler.h"

#include <pthread.h>
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

/* Room for the built-ins and a few more; a registry need not grow without bound. */
#define MAX_TYPES 32

static const struct tunep_scheduler_type *types[MAX_TYPES];
static size_t n_types;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

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

static const struct tunep_scheduler_type *lookup(const char *name)
{
    for (size_t i = 0; i < n_types; i++)
        if (answers_to(types[i], name))
            return types[i];
    return NULL;
}

static tune_status check_name(const char *name, tune_error *err)
{
    if (!name || !name[0])
        return tunep_error_set(err, TUNE_EINVAL, "scheduler: a row needs a name");
    if (lookup(name))
        return tunep_error_set(err, TUNE_EINVAL, "scheduler: '%s' is registered already", name);
    return TUNE_OK;
}

/* Appends type after the checks every row passes, the built-ins' included. */
static tune_status add(const struct tunep_scheduler_type *type, tune_error *err)
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
    if (n_types == MAX_TYPES)
        return tunep_error_set(err, TUNE_ENOMEM, "scheduler '%s': the registry is full",
                               type->name);
    types[n_types++] = type;
    return TUNE_OK;
}

static void add_builtins(void)
{
    /* A broken row would be left out: test_config_scheduler checks that all are there. */
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
        (void)add(builtin[i], NULL);
}

static void ready(void)
{
    pthread_once(&builtin_once, add_builtins);
}

tune_status tunep_scheduler_register(const struct tunep_scheduler_type *type, tune_error *err)
{
    ready();
    return add(type, err);
}

const struct tunep_scheduler_type *tunep_scheduler_find(const char *name)
{
    ready();
    return name ? lookup(name) : NULL;
}

size_t tunep_scheduler_count(void)
{
    ready();
    return n_types;
}

const struct tunep_scheduler_type *tunep_scheduler_at(size_t i)
{
    ready();
    return i < n_types ? types[i] : NULL;
}

const struct tunep_scheduler_type *tunep_scheduler_type_default(void)
{
    ready();
    return types[0];
}
