/*
 * config_scheduler.c - parses the "scheduler" section: FIFO or ASHA with Ray
 * Tune's option names, defaults and checks (AsyncHyperBandScheduler asserts
 * max_t > 0, grace_period > 0, grace_period <= max_t, reduction_factor > 1,
 * brackets > 0). Every error names the key path and points at the offending
 * key (unknown keys) or value (wrong type, broken rule), as jansson's own
 * errors do. Keys are visited in document order, so the first bad key in the
 * text is the one reported.
 */
#include "config_scheduler.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "schedulers/asha.h"

static const char *const asha_keys[] = {
    "type",     "time_attr",        "max_t", "grace_period", "reduction_factor",
    "brackets", "stop_last_trials",
};

/* jansson's iterators take json_t *; they do not modify the object. */
static json_t *unconst(const json_t *j)
{
    return (json_t *)(uintptr_t)j;
}

/* tunep_cfg_error() at path.key (its value, or the key itself when at_key is set). */
static tune_status key_error(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                             const char *key, int at_key, const char *fmt, ...) TUNEP_PRINTF(5, 6);

static tune_status key_error(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                             const char *key, int at_key, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tunep_cfgpath_push_key(path, key);
    tune_status st = tunep_cfg_error(ctx, path, at_key, "%s", msg);
    tunep_cfgpath_pop(path);
    return st;
}

/* A finite JSON number (integer or real) into *ret. */
static tune_status get_number(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                              const char *key, const json_t *v, double *ret)
{
    if (!json_is_number(v))
        return key_error(ctx, path, key, 0, "expected a number");
    double d = json_number_value(v); /* borrowed value */
    if (!isfinite(d))
        return key_error(ctx, path, key, 0, "expected a finite number");
    *ret = d;
    return TUNE_OK;
}

/* Checks that hold for one value alone; the cross-key ones follow the loop. */
static tune_status parse_asha_key(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                  const char *key, const json_t *v, struct tunep_asha_config *a)
{
    tune_status st;
    if (strcmp(key, "time_attr") == 0) {
        if (!json_is_string(v))
            return key_error(ctx, path, key, 0, "expected a string");
        const char *s = json_string_value(v); /* borrowed */
        size_t n = strlen(s);
        if (n == 0)
            return key_error(ctx, path, key, 0, "must not be empty");
        if (n >= sizeof a->time_attr || n != json_string_length(v))
            return key_error(ctx, path, key, 0, "must be a name of at most 127 bytes");
        memcpy(a->time_attr, s, n + 1);
    } else if (strcmp(key, "max_t") == 0) {
        if ((st = get_number(ctx, path, key, v, &a->max_t)) != TUNE_OK)
            return st;
        if (!(a->max_t > 0))
            return key_error(ctx, path, key, 0, "must be > 0");
    } else if (strcmp(key, "grace_period") == 0) {
        if ((st = get_number(ctx, path, key, v, &a->grace_period)) != TUNE_OK)
            return st;
        if (!(a->grace_period > 0))
            return key_error(ctx, path, key, 0, "must be > 0");
    } else if (strcmp(key, "reduction_factor") == 0) {
        if ((st = get_number(ctx, path, key, v, &a->reduction_factor)) != TUNE_OK)
            return st;
        if (!(a->reduction_factor > 1))
            return key_error(ctx, path, key, 0, "must be > 1");
    } else if (strcmp(key, "brackets") == 0) {
        double d = 0;
        if ((st = get_number(ctx, path, key, v, &d)) != TUNE_OK)
            return st;
        if (d != floor(d))
            return key_error(ctx, path, key, 0, "expected an integer");
        if (d < 1)
            return key_error(ctx, path, key, 0, "must be >= 1");
        if (d > TUNEP_ASHA_MAX_BRACKETS)
            return key_error(ctx, path, key, 0, "must be at most %d", TUNEP_ASHA_MAX_BRACKETS);
        a->brackets = (int)d;
    } else if (strcmp(key, "stop_last_trials") == 0) {
        if (!json_is_boolean(v))
            return key_error(ctx, path, key, 0, "expected true or false");
        a->stop_last_trials = json_is_true(v);
    }
    return TUNE_OK;
}

tune_status tunep_config_parse_scheduler(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                         const json_t *obj, struct tunep_scheduler_config *out)
{
    struct tunep_scheduler_config c;
    tune_status st;

    tunep_scheduler_config_default(&c);
    if (!json_is_object(obj))
        return tunep_cfg_error(ctx, path, 0, "expected an object");

    const json_t *type = json_object_get(obj, "type"); /* borrowed */
    if (type) {
        if (!json_is_string(type))
            return key_error(ctx, path, "type", 0, "expected a string");
        const char *name = json_string_value(type); /* borrowed */
        if (strcmp(name, "fifo") == 0) {
            c.type = TUNEP_SCHED_FIFO;
        } else if (strcmp(name, "asha") == 0 || strcmp(name, "async_hyperband") == 0) {
            c.type = TUNEP_SCHED_ASHA;
        } else {
            return key_error(ctx, path, "type", 0,
                             "unknown scheduler '%s' (expected one of: fifo, asha)", name);
        }
    }

    int given_grace = 0, given_rf = 0;
    json_t *o = unconst(obj);
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
        const char *key = json_object_iter_key(it);   /* borrowed */
        const json_t *v = json_object_iter_value(it); /* borrowed */
        size_t i, n = sizeof asha_keys / sizeof asha_keys[0];
        for (i = 0; i < n; i++)
            if (strcmp(key, asha_keys[i]) == 0)
                break;
        if (i == n)
            return tunep_config_unknown_key(ctx, path, key, asha_keys,
                                            c.type == TUNEP_SCHED_FIFO ? 1 : n);
        if (i == 0)
            continue;
        if (c.type == TUNEP_SCHED_FIFO)
            return key_error(ctx, path, key, 1,
                             "not an option of the fifo scheduler (set \"type\": \"asha\")");
        if ((st = parse_asha_key(ctx, path, key, v, &c.asha)) != TUNE_OK)
            return st;
        given_grace |= i == 3;
        given_rf |= i == 4;
    }

    if (c.type == TUNEP_SCHED_ASHA) {
        struct tunep_asha_config *a = &c.asha;
        char buf[32];
        if (!(a->grace_period <= a->max_t)) {
            if (given_grace) {
                tunep_format_double(buf, sizeof buf, a->max_t);
                return key_error(ctx, path, "grace_period", 0, "must be <= max_t (%s)", buf);
            }
            tunep_format_double(buf, sizeof buf, a->grace_period);
            return key_error(ctx, path, "max_t", 0, "must be >= grace_period (%s)", buf);
        }
        /* A 64-bit mask holds a trial's rungs; rf close to 1 would also make rungs useless. */
        if (tunep_asha_rung_count(a, 0) > TUNEP_ASHA_MAX_RUNGS) {
            const char *at = given_rf ? "reduction_factor" : given_grace ? "grace_period" : "max_t";
            return key_error(
                ctx, path, at, 0,
                "more than %d rungs: log(max_t / grace_period) / log(reduction_factor) "
                "must be < %d",
                TUNEP_ASHA_MAX_RUNGS, TUNEP_ASHA_MAX_RUNGS);
        }
    }
    *out = c;
    return TUNE_OK;
}
