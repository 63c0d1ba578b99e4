/*
 * study_options.c - a study config from a tune_options struct instead of
 * JSON text (tune_study_new()).
 *
 * Each option is a top-level config key of the same name. The options that
 * differ from tune_options_default() become a JSON object, which goes
 * through tunep_config_from_root() exactly as a parsed file does: one set of
 * defaults, one set of checks and messages ("num_samples: expected an
 * integer in [1, 100000000], got 0"), and the same stored form of the config
 * (experiment.db keeps it as JSON, and a rerun into the same folder resumes
 * only when it is unchanged). No JSON text is written or parsed on the way.
 */
#include "config/study_options.h"
#include "base/text.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

#include "config/config.h"

#define OPTIONS_SOURCE "<options>"

static double asha_default(const struct tunep_scheduler_type *asha, const char *name)
{
    const struct tunep_option *o = asha ? tunep_options_find(asha->options, name) : NULL;
    return o ? o->def : 0;
}

void tune_options_default(tune_options *o)
{
    struct tunep_config c;
    if (!o)
        return;
    tunep_config_defaults(&c);
    memset(o, 0, sizeof *o);
    o->mode = c.mode_max ? TUNE_MODE_MAX : TUNE_MODE_MIN;
    o->num_samples = c.num_samples;
    o->seed = -1;
    o->max_concurrent_trials = 0; /* the config's default depends on the machine */
    o->max_failures = c.max_failures;
    o->isolation = c.isolation_process ? TUNE_ISOLATION_PROCESS : TUNE_ISOLATION_THREAD;
    o->trial_timeout_s = c.trial_timeout_s;
    o->checkpoint_frequency = c.checkpoint_frequency;
    o->scheduler = TUNE_SCHEDULER_FIFO;
    /* ASHA's defaults are its option table's. */
    const struct tunep_scheduler_type *asha = tunep_scheduler_find("asha");
    o->asha.max_t = asha_default(asha, "max_t");
    o->asha.grace_period = asha_default(asha, "grace_period");
    o->asha.reduction_factor = asha_default(asha, "reduction_factor");
    o->asha.brackets = (int)asha_default(asha, "brackets");
    tunep_config_done(&c);
}

/* Sets obj[key] = v (stolen; NULL means out of memory). */
static tune_status put(const struct tunep_cfgctx *ctx, json_t *obj, const char *key, json_t *v)
{
    if (!v || json_object_set_new(obj, key, v))
        return tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
    return TUNE_OK;
}

static tune_status put_string(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                              json_t *obj, const char *key, const char *value)
{
    if (!tunep_utf8_valid(value)) {
        tunep_cfgpath_push_key(path, key);
        tune_status st = tunep_cfg_error(ctx, path, 0, "expected UTF-8 text");
        tunep_cfgpath_pop(path);
        return st;
    }
    return put(ctx, obj, key, json_string(value));
}

/* A number, as an integer when it is one (so that the stored config reads as written). */
static tune_status put_number(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                              json_t *obj, const char *key, double value)
{
    if (!isfinite(value)) {
        tunep_cfgpath_push_key(path, key);
        tune_status st = tunep_cfg_error(ctx, path, 0, "expected a finite number");
        tunep_cfgpath_pop(path);
        return st;
    }
    if (value == floor(value) && fabs(value) < 9.0e15)
        return put(ctx, obj, key, json_integer((json_int_t)value));
    return put(ctx, obj, key, json_real(value));
}

/*
 * Several objectives: "metric" and "mode" from metrics and modes (checked
 * non-NULL), as lists; one objective as the single metric and mode would be,
 * so that both spellings store the same config.
 */
static tune_status put_objectives(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                  const tune_options *o, const tune_options *d, json_t *root)
{
    for (size_t i = 0; i < o->num_metrics; i++)
        if (!tunep_utf8_valid(o->metrics[i])) {
            tunep_cfgpath_push_key(path, "metrics");
            tunep_cfgpath_push_index(path, (long)i);
            tune_status st = tunep_cfg_error(ctx, path, 0, "expected UTF-8 text");
            tunep_cfgpath_pop(path);
            tunep_cfgpath_pop(path);
            return st;
        }
    if (o->num_metrics == 1) {
        tune_status st = put(ctx, root, "metric", json_string(o->metrics[0]));
        if (!st && o->modes[0] != d->mode)
            st = put(ctx, root, "mode", json_string(o->modes[0] == TUNE_MODE_MIN ? "min" : "max"));
        return st;
    }
    json_t *names = json_array(), *modes = json_array(); /* new refs */
    tune_status st = names && modes ? TUNE_OK : TUNE_ENOMEM;
    for (size_t i = 0; !st && i < o->num_metrics; i++)
        if (json_array_append_new(names, json_string(o->metrics[i])) ||
            json_array_append_new(modes, json_string(o->modes[i] == TUNE_MODE_MIN ? "min" : "max")))
            st = TUNE_ENOMEM;
    if (st) {
        json_decref(names);
        json_decref(modes);
        return tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
    }
    if ((st = put(ctx, root, "metric", names))) {
        json_decref(modes);
        return st;
    }
    return put(ctx, root, "mode", modes);
}

/*
 * The config names the list of objectives "metric"; errors about it name the
 * options' field instead: "metric[1]: ..." becomes "metrics[1]: ...", and
 * with one objective "metric: ..." becomes "metrics[0]: ...". (Modes are
 * checked before: the "mode" list is always right.)
 */
static void name_metrics_field(tune_error *err, size_t num_metrics)
{
    if (!err || err->code != TUNE_ECONFIG || strncmp(err->text, "metric", 6) != 0 ||
        (err->text[6] != ':' && err->text[6] != '['))
        return;
    char text[sizeof err->text];
    const char *to = num_metrics == 1 && err->text[6] == ':' ? "metrics[0]" : "metrics";
    size_t tn = strlen(to), rest = strlen(err->text + 6);
    if (tn + rest >= sizeof text)
        rest = sizeof text - 1 - tn;
    memcpy(text, to, tn);
    memcpy(text + tn, err->text + 6, rest);
    text[tn + rest] = 0;
    memcpy(err->text, text, tn + rest + 1);
}

/* The "scheduler" object for ASHA: its type and the options that differ from the defaults. */
static tune_status asha_object(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                               const tune_asha_options *a, const tune_asha_options *d, json_t **ret)
{
    json_t *obj = json_object(); /* new ref */
    tune_status st = put(ctx, obj, "type", json_string("asha"));
    tunep_cfgpath_push_key(path, "scheduler");
    if (!st && a->max_t != d->max_t)
        st = put_number(ctx, path, obj, "max_t", a->max_t);
    if (!st && a->grace_period != d->grace_period)
        st = put_number(ctx, path, obj, "grace_period", a->grace_period);
    if (!st && a->reduction_factor != d->reduction_factor)
        st = put_number(ctx, path, obj, "reduction_factor", a->reduction_factor);
    if (!st && a->brackets != d->brackets)
        st = put(ctx, obj, "brackets", json_integer(a->brackets));
    tunep_cfgpath_pop(path);
    if (st) {
        json_decref(obj);
        return st;
    }
    *ret = obj;
    return TUNE_OK;
}

/* The JSON object of the options that differ from tune_options_default()'s. */
static tune_status options_object(const struct tunep_cfgctx *ctx, const tune_options *o,
                                  json_t *root)
{
    tune_options d;
    tune_options_default(&d);
    struct tunep_cfgpath path = {.depth = 0};
    tune_status st = TUNE_OK;
    if (!st && o->name)
        st = put_string(ctx, &path, root, "name", o->name);
    if (!st && o->num_metrics > 0) { /* metric and mode are ignored */
        st = put_objectives(ctx, &path, o, &d, root);
    } else {
        if (!st && o->metric)
            st = put_string(ctx, &path, root, "metric", o->metric);
        if (!st && o->mode != d.mode)
            st = put(ctx, root, "mode", json_string(o->mode == TUNE_MODE_MIN ? "min" : "max"));
    }
    if (!st && o->num_samples != d.num_samples)
        st = put(ctx, root, "num_samples", json_integer((json_int_t)o->num_samples));
    if (!st && o->seed != d.seed)
        st = put(ctx, root, "seed", json_integer((json_int_t)o->seed));
    if (!st && o->max_concurrent_trials != d.max_concurrent_trials)
        st = put(ctx, root, "max_concurrent_trials", json_integer(o->max_concurrent_trials));
    if (!st && o->max_failures != d.max_failures)
        st = put(ctx, root, "max_failures", json_integer(o->max_failures));
    if (!st && o->isolation != d.isolation)
        st = put(ctx, root, "isolation",
                 json_string(o->isolation == TUNE_ISOLATION_PROCESS ? "process" : "thread"));
    if (!st && o->storage)
        st = put_string(ctx, &path, root, "storage", o->storage);
    if (!st && o->trial_timeout_s != d.trial_timeout_s)
        st = put_number(ctx, &path, root, "trial_timeout_s", o->trial_timeout_s);
    if (!st && o->checkpoint_frequency != d.checkpoint_frequency)
        st = put(ctx, root, "checkpoint_frequency",
                 json_integer((json_int_t)o->checkpoint_frequency));
    if (!st && o->fail_fast)
        st = put(ctx, root, "fail_fast", json_true());
    if (!st && o->scheduler == TUNE_SCHEDULER_ASHA) {
        json_t *sched = NULL;
        st = asha_object(ctx, &path, &o->asha, &d.asha, &sched);
        if (!st)
            st = put(ctx, root, "scheduler", sched);
    } else if (!st &&
               (o->asha.max_t != d.asha.max_t || o->asha.grace_period != d.asha.grace_period ||
                o->asha.reduction_factor != d.asha.reduction_factor ||
                o->asha.brackets != d.asha.brackets)) {
        /* Set but unused: most likely the scheduler was forgotten. */
        tunep_cfgpath_push_key(&path, "asha");
        st = tunep_cfg_error(ctx, &path, 0, "set, but the scheduler is not TUNE_SCHEDULER_ASHA");
        tunep_cfgpath_pop(&path);
    }
    return st;
}

tune_status tunep_config_from_options(const tune_options *o, tune_space *space,
                                      struct tunep_config *out, tune_error *err)
{
    struct tunep_cfgctx ctx = {NULL, 0, OPTIONS_SOURCE, err};
    tune_status st;
    json_t *root = NULL;
    if (!o) {
        st = tunep_error_set(err, TUNE_EINVAL, "options must not be NULL");
        goto fail;
    }
    const char *bad = NULL;
    if ((unsigned)o->mode >= TUNE_MODE_COUNT)
        bad = "mode";
    else if ((unsigned)o->isolation >= TUNE_ISOLATION_COUNT)
        bad = "isolation";
    else if ((unsigned)o->scheduler >= TUNE_SCHEDULER_TYPE_COUNT)
        bad = "scheduler";
    if (bad) {
        st = tunep_error_set(err, TUNE_EINVAL, "%s: not a value of its enum", bad);
        goto fail;
    }
    if (o->num_metrics > 0 && (!o->metrics || !o->modes)) {
        st = tunep_error_set(err, TUNE_EINVAL, "%s: NULL, with num_metrics %zu",
                             o->metrics ? "modes" : "metrics", o->num_metrics);
        goto fail;
    }
    if (o->num_metrics > TUNEP_MAX_OBJECTIVES) {
        struct tunep_cfgpath path = {.depth = 0};
        tunep_cfgpath_push_key(&path, "metrics");
        st = tunep_cfg_error(&ctx, &path, 0, "expected a list of 1 to %d metric names, got %zu",
                             TUNEP_MAX_OBJECTIVES, o->num_metrics);
        goto fail;
    }
    for (size_t i = 0; i < o->num_metrics; i++) {
        st = TUNE_OK;
        if (!o->metrics[i])
            st = tunep_error_set(err, TUNE_EINVAL, "metrics[%zu]: NULL", i);
        else if ((unsigned)o->modes[i] >= TUNE_MODE_COUNT)
            st = tunep_error_set(err, TUNE_EINVAL, "modes[%zu]: not a value of its enum", i);
        if (st)
            goto fail;
    }
    if (!(root = json_object())) { /* new ref */
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto fail;
    }
    if ((st = options_object(&ctx, o, root)))
        goto fail;
    st = tunep_config_from_root(&ctx, root, space, NULL, out); /* no trainer section */
    space = NULL;                                              /* taken */
    if (st && o->num_metrics > 0)
        name_metrics_field(err, o->num_metrics);
fail:
    tune_space_free(space);
    json_decref(root);
    return st;
}
