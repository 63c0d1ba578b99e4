/*
 * config.c - the study config: JSON text -> struct tunep_config, validated.
 *
 * Every key is documented in configs/README.md. Unknown keys are errors (a
 * typo must never be silently ignored), and every error carries the file,
 * line and column of the offending key or value (config_pos.c) plus the key
 * path: "config.json:7:12: param_space.lr: loguniform needs 0 < low < high".
 * jansson is included only by config*.c files: the top level lives here,
 * param_space in config_space.c and scheduler in config_scheduler.c.
 */
#include "config/config.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tune_config.h"
#include "config/study_options.h"
#include "base/file_io.h"
#include "config/config_scheduler.h"
#include "config/config_search.h"
#include "config/config_space.h"
#include "config/config_options.h"

tune_status tunep_config_read_file(const char *path, char **ret_text, size_t *ret_len,
                                   tune_error *err)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0,
                                  "is a folder (expected a JSON config file)");
    return tunep_read_file(path, TUNEP_MAX_CONFIG_BYTES, ret_text, ret_len, err);
}

tune_status tunep_config_unknown_key(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                     const char *key, const char *const *known, size_t n_known)
{
    const char *best = NULL;
    size_t best_d = 3; /* suggest only close matches */
    struct tunep_buf list;
    tunep_buf_init(&list);
    for (size_t i = 0; i < n_known; i++) {
        size_t d = tunep_edit_distance(key, known[i]);
        if (d < best_d) {
            best_d = d;
            best = known[i];
        }
        tunep_buf_printf(&list, "%s%s", i ? ", " : "", known[i]);
    }
    tune_status st;
    tunep_cfgpath_push_key(path, key);
    if (best)
        st = tunep_cfg_error(ctx, path, 1, "unknown key (did you mean '%s'?)", best);
    else
        st = tunep_cfg_error(ctx, path, 1, "unknown key (expected one of: %s)",
                             list.data ? list.data : "");
    tunep_cfgpath_pop(path);
    tunep_buf_done(&list);
    return st;
}

/* Checks that every key of obj is in known[]. */
static tune_status check_keys(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                              const json_t *obj, const char *const *known, size_t n_known)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        size_t i;
        for (i = 0; i < n_known; i++)
            if (strcmp(key, known[i]) == 0)
                break;
        if (i == n_known)
            return tunep_config_unknown_key(ctx, path, key, known, n_known);
    }
    return TUNE_OK;
}

/* ---- sections ------------------------------------------------------------ */

/*
 * The "trainer" section: its "type" picks a row of `trainers`, whose option
 * table reads the rest; the row's own check runs once the whole config is
 * known (check_trainer()).
 */
static tune_status parse_trainer(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                 const json_t *obj,
                                 const struct tunep_trainer_type *const *trainers,
                                 struct tunep_config *c)
{
    struct tunep_buf names;
    tunep_buf_init(&names);
    size_t n = 0;
    while (trainers && trainers[n])
        n++;
    for (size_t i = 0; i < n; i++)
        tunep_buf_printf(&names, "%s\"%s\"",
                         i == 0       ? ""
                         : i + 1 == n ? " or "
                                      : ", ",
                         trainers[i]->name);
    const char *expected = names.data ? names.data : "a registered trainer";
    tune_status st = TUNE_OK;
    const json_t *type = json_is_object(obj) ? json_object_get(obj, "type") : NULL; /* borrowed */
    if (!json_is_object(obj)) {
        st = tunep_cfg_error(ctx, path, 0, "expected an object such as {\"type\": \"synthetic\"}");
    } else if (!type) {
        st = tunep_cfg_error(ctx, path, 0, "missing key 'type' (expected %s)", expected);
    } else if (!json_is_string(type) ||
               !(c->trainer_name = tunep_strdup(json_string_value(type)))) {
        tunep_cfgpath_push_key(path, "type");
        st = json_is_string(type)
                 ? tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory")
                 : tunep_cfg_error(ctx, path, 0, "expected a string: %s", expected);
        tunep_cfgpath_pop(path);
    }
    if (st || !trainers) {
        tunep_buf_done(&names);
        return st;
    }
    for (size_t i = 0; i < n && !c->trainer; i++)
        if (strcmp(trainers[i]->name, c->trainer_name) == 0)
            c->trainer = trainers[i];
    if (!c->trainer) {
        tunep_cfgpath_push_key(path, "type");
        st = tunep_cfg_error(ctx, path, 0, "unknown trainer type '%s' (expected %s)",
                             c->trainer_name, expected);
        tunep_cfgpath_pop(path);
        tunep_buf_done(&names);
        return st;
    }
    tunep_buf_done(&names);
    if (!(c->trainer_cfg =
              tunep_calloc(1, c->trainer->config_size ? c->trainer->config_size : 1)) ||
        tunep_options_default(c->trainer->options, c->trainer_cfg))
        return tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
    static const char *const type_key[] = {"type", NULL};
    return tunep_config_read_options(ctx, path, obj, c->trainer->options, type_key, NULL,
                                     c->trainer_cfg);
}

/* tunep_trainer_check_ctx's param_range, from the config's space. */
static int param_range(const struct tunep_trainer_check_ctx *cc, const char *name, double *ret_lo,
                       double *ret_hi)
{
    return tunep_space_param_range(cc->space, name, ret_lo, ret_hi);
}

/* The trainer's own rules, once the parameters are known. */
static tune_status check_trainer(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                 struct tunep_config *c)
{
    if (!c->trainer)
        return TUNE_OK;
    tune_status st = TUNE_OK;
    if (c->trainer->check) {
        const char **names = tunep_calloc(c->space->n ? c->space->n : 1, sizeof *names);
        if (!names)
            return tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
        for (size_t i = 0; i < c->space->n; i++)
            names[i] = c->space->params[i].name;
        struct tunep_trainer_check_ctx cc = {.param_names = names,
                                             .n_params = c->space->n,
                                             .param_range = param_range,
                                             .space = c->space,
                                             .source = ctx->source,
                                             .isolation_process = c->isolation_process};
        struct tunep_opt_error e = {.code = TUNE_OK};
        if (c->trainer->check(c->trainer_cfg, &cc, &e)) {
            tunep_cfgpath_push_key(path, "trainer");
            st = tunep_config_opt_error(ctx, path, &e);
            tunep_cfgpath_pop(path);
        }
        tunep_free(names);
    }
    /* A resource the trainer would not use is a mistake to say, not to ignore. */
    const struct tunep_trainer_type *tt = c->trainer;
    const char *unused = !st && c->resources_gpu > 0 && !tt->uses_gpu   ? "gpu"
                         : !st && c->resources_cpu > 0 && !tt->uses_cpu ? "cpu"
                                                                        : NULL;
    if (unused) {
        tunep_cfgpath_push_key(path, "resources_per_trial");
        tunep_cfgpath_push_key(path, unused);
        st = tunep_cfg_error(ctx, path, 0, "the %s trainer does not use a %s per trial", tt->name,
                             strcmp(unused, "gpu") == 0 ? "GPU" : "CPU count");
        tunep_cfgpath_pop(path);
        tunep_cfgpath_pop(path);
    }
    if (!st && c->resources_gpu > 1 && !tt->multi_gpu) {
        tunep_cfgpath_push_key(path, "resources_per_trial");
        tunep_cfgpath_push_key(path, "gpu");
        st = tunep_cfg_error(ctx, path, 0,
                             "the %s trainer runs a trial on one GPU: expected a share from 0 to 1",
                             tt->name);
        tunep_cfgpath_pop(path);
        tunep_cfgpath_pop(path);
    }
    if (!st && c->trainer->own_process && c->isolation_process) {
        /* A forked trial process killed on a timeout would leave the program running. */
        tunep_cfgpath_push_key(path, "isolation");
        st = tunep_cfg_error(ctx, path, 0,
                             "\"process\" is for objectives in tune's own process; the %s "
                             "trainer's program is a process of its own already",
                             c->trainer->name);
        tunep_cfgpath_pop(path);
    }
    return st;
}

static tune_status parse_stop(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                              const json_t *obj, struct tunep_config *c)
{
    if (!json_is_object(obj))
        return tunep_cfg_error(ctx, path, 0,
                               "expected an object such as {\"training_iteration\": 10}");
    size_t n = json_object_size(obj);
    c->stop.thresholds = tunep_calloc(n ? n : 1, sizeof *c->stop.thresholds);
    if (!c->stop.thresholds)
        return tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
    const char *key;
    const json_t *v;
    tune_status st = TUNE_OK;
    json_object_foreach((json_t *)obj, key, v) {
        tunep_cfgpath_push_key(path, key);
        if (strcmp(key, "training_iteration") == 0) {
            st = tunep_config_read_int(ctx, path, v, 1, INT64_MAX, &c->stop.training_iteration);
        } else if (strcmp(key, "time_budget_s") == 0) {
            st = tunep_config_read_number(ctx, path, v, 1e-9, 1e12, &c->stop.time_budget_s);
        } else if (strcmp(key, "time_total_s") == 0 || strlen(key) == 0 ||
                   strlen(key) > TUNEP_MAX_METRIC_NAME) {
            st = tunep_cfg_error(ctx, path, 1,
                                 "expected training_iteration, time_budget_s or a metric name");
        } else if (tunep_edit_distance(key, "training_iteration") <= 2 ||
                   tunep_edit_distance(key, "time_budget_s") <= 2) {
            /* Any other name is a metric threshold, so a typo would never stop anything. */
            st = tunep_cfg_error(ctx, path, 1, "unknown stop key (did you mean '%s'?)",
                                 tunep_edit_distance(key, "training_iteration") <= 2
                                     ? "training_iteration"
                                     : "time_budget_s");
        } else {
            double x = 0;
            st = tunep_config_read_number(ctx, path, v, -HUGE_VAL, HUGE_VAL, &x);
            if (!st) {
                struct tunep_threshold *t = &c->stop.thresholds[c->stop.n_thresholds];
                t->metric = tunep_strdup(key);
                t->value = x;
                if (!t->metric)
                    st = tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
                else
                    c->stop.n_thresholds++;
            }
        }
        tunep_cfgpath_pop(path);
        if (st)
            break;
    }
    return st;
}

static int valid_name(const char *s)
{
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-' || *p == '.'))
            return 0;
    return s[0] != '.';
}

/* Ray's resources_per_trial: {"cpu": n, "gpu": f}, handed to the trainer. */
static tune_status parse_resources(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                   const json_t *obj, struct tunep_config *c)
{
    static const char *const keys[] = {"cpu", "gpu"};
    if (!json_is_object(obj))
        return tunep_cfg_error(ctx, path, 0,
                               "expected an object such as {\"cpu\": 2, \"gpu\": 0.25}");
    tune_status st = check_keys(ctx, path, obj, keys, 2);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)(uintptr_t)obj, key, v) {
        if (st)
            break;
        tunep_cfgpath_push_key(path, key);
        if (strcmp(key, "cpu") == 0) {
            int64_t n = 0;
            st = tunep_config_read_int(ctx, path, v, 1, 4096, &n);
            c->resources_cpu = (int)n;
        } else {
            st = tunep_config_read_number(ctx, path, v, 0, TUNEP_MAX_TRIAL_GPUS, &c->resources_gpu);
            if (!st && c->resources_gpu > 1 && c->resources_gpu != floor(c->resources_gpu))
                st = tunep_cfg_error(ctx, path, 0,
                                     "expected a share of one GPU (0 to 1) or a whole number of "
                                     "GPUs, got %g",
                                     c->resources_gpu);
        }
        tunep_cfgpath_pop(path);
    }
    return st;
}

/* "gpus": the GPUs trials may use, a count (2) or device ids ([0, 1]). */
static tune_status parse_gpus(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                              const json_t *v, struct tunep_config *c)
{
    if (json_is_integer(v)) {
        int64_t n = 0;
        tune_status st = tunep_config_read_int(ctx, path, v, 0, TUNEP_MAX_GPUS, &n);
        c->gpus_kind = TUNEP_CONFIG_GPUS_COUNT;
        c->gpus_n = (int)n;
        return st;
    }
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > TUNEP_MAX_GPUS)
        return tunep_cfg_error(ctx, path, 0,
                               "expected a count of GPUs (2) or a list of 1 to %d device ids "
                               "([0, 1])",
                               TUNEP_MAX_GPUS);
    size_t n = json_array_size(v);
    tunep_free(c->gpus_ids);
    if (!(c->gpus_ids = tunep_calloc(n, sizeof *c->gpus_ids)))
        return tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        tunep_cfgpath_push_index(path, i);
        int64_t id = 0;
        tune_status st = tunep_config_read_int(ctx, path, json_array_get(v, i), 0, 1000000, &id);
        for (size_t j = 0; !st && j < i; j++)
            if (c->gpus_ids[j] == (int)id)
                st = tunep_cfg_error(ctx, path, 0, "GPU %d is listed twice", (int)id);
        tunep_cfgpath_pop(path);
        if (st)
            return st;
        c->gpus_ids[i] = (int)id;
    }
    c->gpus_kind = TUNEP_CONFIG_GPUS_LIST;
    c->gpus_n = (int)n;
    return TUNE_OK;
}

/* Whether a trial can never report name: the engine writes these columns itself
 * (and tune_trial_report() refuses them as metric names). */
static int metric_reserved(const char *name)
{
    static const char *const columns[] = {"training_iteration", "time_total_s", "trial_id",
                                          "status"};
    for (size_t i = 0; i < sizeof columns / sizeof *columns; i++)
        if (strcmp(name, columns[i]) == 0)
            return 1;
    return strncmp(name, "config/", 7) == 0;
}

/*
 * Warns (the config stays valid) when the scheduler waits for more training
 * iterations than a trial will report: a max_t beyond them is never reached
 * (ASHA's top rung never fills), a grace_period beyond them never lets the
 * scheduler stop anything.
 */
static void warn_unreachable_schedule(const struct tunep_cfgctx *ctx, const struct tunep_config *c)
{
    const struct tunep_scheduler_type *sched = c->scheduler.type;
    if (!c->trainer || !c->trainer->max_iterations || !c->trainer_cfg ||
        strcmp(tunep_scheduler_config_time_attr(&c->scheduler), "training_iteration") != 0)
        return;
    int64_t most = c->trainer->max_iterations(c->trainer_cfg);
    char what[96];
    snprintf(what, sizeof what, "iterations a %s trial reports", c->trainer->name);
    if (c->stop.training_iteration > 0 && (most <= 0 || c->stop.training_iteration < most)) {
        most = c->stop.training_iteration;
        snprintf(what, sizeof what, "iterations stop.training_iteration lets a trial run");
    }
    if (most <= 0)
        return;
    const char *src = ctx->source ? ctx->source : "<string>";
    /* One warning: a grace_period beyond them (and so max_t too) is the graver. */
    if (sched->min_t && sched->min_t(c->scheduler.cfg) > (double)most)
        tunep_log(TUNE_LOG_WARN,
                  "%s: scheduler.grace_period %g is beyond the %lld %s: %s never stops a trial",
                  src, sched->min_t(c->scheduler.cfg), (long long)most, what, sched->title);
    else if (sched->max_t && sched->max_t(c->scheduler.cfg) > (double)most)
        tunep_log(TUNE_LOG_WARN,
                  "%s: scheduler.max_t %g is beyond the %lld %s: no trial reaches it", src,
                  sched->max_t(c->scheduler.cfg), (long long)most, what);
}

static long default_concurrency(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

/* One metric name: a string that no engine column takes, not given twice. */
static tune_status read_metric(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                               json_t *v, struct tunep_config *c)
{
    char *name = NULL;
    tune_status st = tunep_config_read_string(ctx, path, v, TUNEP_MAX_METRIC_NAME, &name);
    if (st)
        return st;
    if (metric_reserved(name))
        st = tunep_cfg_error(ctx, path, 0,
                             "'%s' is a column the engine fills in: no trial can report it", name);
    for (size_t i = 0; !st && i < c->n_objectives; i++)
        if (strcmp(c->objectives[i], name) == 0)
            st = tunep_cfg_error(ctx, path, 0, "'%s' is already an objective", name);
    if (st) {
        tunep_free(name);
        return st;
    }
    c->objectives[c->n_objectives++] = name;
    return TUNE_OK;
}

/* "metric": a name, or a list of 1 to TUNEP_MAX_OBJECTIVES names (several objectives). */
static tune_status parse_metrics(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                 json_t *v, struct tunep_config *c)
{
    tune_status st;
    if (!json_is_array(v)) {
        if (!json_is_string(v))
            return tunep_cfg_error(ctx, path, 0, "expected a metric name or a list of names");
        st = read_metric(ctx, path, v, c);
    } else {
        size_t n = json_array_size(v);
        if (n == 0 || n > TUNEP_MAX_OBJECTIVES)
            return tunep_cfg_error(ctx, path, 0, "expected a list of 1 to %d metric names, got %zu",
                                   TUNEP_MAX_OBJECTIVES, n);
        st = TUNE_OK;
        for (size_t i = 0; !st && i < n; i++) {
            tunep_cfgpath_push_index(path, (long)i);
            st = read_metric(ctx, path, json_array_get(v, i) /* borrowed */, c);
            tunep_cfgpath_pop(path);
        }
    }
    if (st)
        return st;
    if (!(c->metric = tunep_strdup(c->objectives[0])))
        return tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
    return TUNE_OK;
}

static tune_status read_mode(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path, json_t *v,
                             int *ret_max)
{
    const char *m = json_is_string(v) ? json_string_value(v) : "";
    if (strcmp(m, "max") != 0 && strcmp(m, "min") != 0)
        return tunep_cfg_error(ctx, path, 0, "expected \"max\" or \"min\"");
    *ret_max = strcmp(m, "max") == 0;
    return TUNE_OK;
}

/* "mode": "max" or "min", or a list of them, one per metric; *ret_n is how many. */
static tune_status parse_modes(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                               json_t *v, struct tunep_config *c, size_t *ret_n)
{
    if (!json_is_array(v)) {
        *ret_n = 1;
        return read_mode(ctx, path, v, &c->objectives_max[0]);
    }
    size_t n = json_array_size(v);
    if (n == 0 || n > TUNEP_MAX_OBJECTIVES)
        return tunep_cfg_error(ctx, path, 0,
                               "expected a list of 1 to %d modes (\"max\" or \"min\"), got %zu",
                               TUNEP_MAX_OBJECTIVES, n);
    for (size_t i = 0; i < n; i++) {
        tunep_cfgpath_push_index(path, (long)i);
        tune_status st =
            read_mode(ctx, path, json_array_get(v, i) /* borrowed */, &c->objectives_max[i]);
        tunep_cfgpath_pop(path);
        if (st)
            return st;
    }
    *ret_n = n;
    return TUNE_OK;
}

/* One mode per metric: a single mode for a single metric, a list as long as the metrics. */
static tune_status check_modes(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                               json_t *root, struct tunep_config *c, size_t n_modes)
{
    json_t *mode = json_object_get(root, "mode"); /* borrowed */
    size_t n_metrics = c->n_objectives ? c->n_objectives : 1;
    tune_status st = TUNE_OK;
    if (n_modes == 0 && n_metrics > 1) {
        tunep_cfgpath_push_key(path, "metric");
        st = tunep_cfg_error(ctx, path, 0,
                             "%zu metrics need \"mode\": a list of %zu modes (\"max\" or \"min\")",
                             n_metrics, n_metrics);
    } else if (n_modes > 0 && n_modes != n_metrics) {
        tunep_cfgpath_push_key(path, "mode");
        if (json_is_array(mode))
            st = tunep_cfg_error(ctx, path, 0, "expected %zu mode%s, one per metric, got %zu",
                                 n_metrics, n_metrics == 1 ? "" : "s", n_modes);
        else
            st = tunep_cfg_error(
                ctx, path, 0, "expected a list of %zu modes (\"max\" or \"min\"), one per metric",
                n_metrics);
    }
    if (st) {
        tunep_cfgpath_pop(path);
        return st;
    }
    if (n_modes == 0)
        c->objectives_max[0] = 1; /* the default mode, "max" */
    c->mode_max = c->objectives_max[0];
    return TUNE_OK;
}

static tune_status parse_top(const struct tunep_cfgctx *ctx, json_t *root, tune_space *given_space,
                             const struct tunep_trainer_type *const *trainers,
                             struct tunep_config *c)
{
    static const char *const known[] = {
        "name",
        "metric",
        "mode",
        "num_samples",
        "seed",
        "max_concurrent_trials",
        "param_space",
        "search",
        "scheduler",
        "trainer",
        "stop",
        "max_failures",
        "storage",
        "isolation",
        "trial_timeout_s",
        "checkpoint_frequency",
        "resources_per_trial",
        "fail_fast",
        "gpus",
    };
    struct tunep_cfgpath path = {.depth = 0};
    if (!json_is_object(root))
        return tunep_cfg_error(ctx, &path, 0, "expected a JSON object at the top level");
    tune_status st = check_keys(ctx, &path, root, known, sizeof known / sizeof *known);
    if (st)
        return st;

    const char *key;
    json_t *v;
    size_t n_modes = 0; /* 0: "mode" not given */
    json_object_foreach(root, key, v) {
        tunep_cfgpath_push_key(&path, key);
        if (strcmp(key, "name") == 0) {
            st = tunep_config_read_string(ctx, &path, v, 128, &c->name);
            if (!st && !valid_name(c->name))
                st = tunep_cfg_error(
                    ctx, &path, 0, "expected letters, digits, '_', '-' or '.' (it names a folder)");
        } else if (strcmp(key, "metric") == 0) {
            st = parse_metrics(ctx, &path, v, c);
        } else if (strcmp(key, "mode") == 0) {
            st = parse_modes(ctx, &path, v, c, &n_modes);
        } else if (strcmp(key, "num_samples") == 0) {
            st = tunep_config_read_int(ctx, &path, v, 1, TUNEP_MAX_SAMPLES, &c->num_samples);
        } else if (strcmp(key, "seed") == 0) {
            int64_t seed = 0;
            st = tunep_config_read_int(ctx, &path, v, 0, INT64_MAX, &seed);
            c->seed = (uint64_t)seed;
            c->seed_given = 1;
        } else if (strcmp(key, "max_concurrent_trials") == 0) {
            int64_t n = 0;
            st = tunep_config_read_int(ctx, &path, v, 1, TUNEP_MAX_CONCURRENT, &n);
            c->max_concurrent = (int)n;
        } else if (strcmp(key, "max_failures") == 0) {
            int64_t n = 0;
            st = tunep_config_read_int(ctx, &path, v, -1, 1000000, &n);
            c->max_failures = (int)n;
        } else if (strcmp(key, "fail_fast") == 0) {
            if (json_is_boolean(v))
                c->fail_fast = json_is_true(v);
            else
                st = tunep_cfg_error(ctx, &path, 0, "expected true or false");
        } else if (strcmp(key, "isolation") == 0) {
            if (json_is_string(v) && strcmp(json_string_value(v), "thread") == 0)
                c->isolation_process = 0;
            else if (json_is_string(v) && strcmp(json_string_value(v), "process") == 0)
                c->isolation_process = 1;
            else
                st = tunep_cfg_error(ctx, &path, 0, "expected \"thread\" or \"process\"");
        } else if (strcmp(key, "resources_per_trial") == 0) {
            st = parse_resources(ctx, &path, v, c);
        } else if (strcmp(key, "gpus") == 0) {
            st = parse_gpus(ctx, &path, v, c);
        } else if (strcmp(key, "checkpoint_frequency") == 0) {
            st = tunep_config_read_int(ctx, &path, v, 0, INT64_MAX, &c->checkpoint_frequency);
        } else if (strcmp(key, "trial_timeout_s") == 0) {
            st = tunep_config_read_number(ctx, &path, v, 1e-3, 1e9, &c->trial_timeout_s);
        } else if (strcmp(key, "storage") == 0) {
            st = tunep_config_read_string(ctx, &path, v, 4000, &c->storage);
        } else if (strcmp(key, "search") == 0) {
            st = tunep_config_parse_search(ctx, &path, v, c);
        } else if (strcmp(key, "scheduler") == 0) {
            st = tunep_config_parse_scheduler(ctx, &path, v, &c->scheduler);
        } else if (strcmp(key, "trainer") == 0) {
            st = parse_trainer(ctx, &path, v, trainers, c);
        } else if (strcmp(key, "stop") == 0) {
            st = parse_stop(ctx, &path, v, c);
        } else if (strcmp(key, "param_space") == 0) {
            if (given_space)
                st = tunep_cfg_error(ctx, &path, 1, "not allowed when the space is built in code");
            else if (!json_is_object(v))
                st = tunep_cfg_error(ctx, &path, 0, "expected an object of parameters");
            else
                st = tunep_config_parse_space(ctx, &path, v, c->space);
        }
        tunep_cfgpath_pop(&path);
        if (st)
            return st;
    }

    /* Cross-key rules. */
    if ((st = check_modes(ctx, &path, root, c, n_modes)))
        return st;
    uint64_t grid = tunep_space_grid_size(c->space, c->search == TUNEP_SEARCH_GRID, ctx->err);
    if (grid == 0) {
        tunep_cfgpath_push_key(&path, "param_space");
        char text[sizeof ctx->err->text];
        snprintf(text, sizeof text, "%s", ctx->err ? ctx->err->text : "grid too large");
        st = tunep_cfg_error(ctx, &path, 0, "%s", text);
        tunep_cfgpath_pop(&path);
        return st;
    }
    if ((double)grid * (double)c->num_samples > (double)TUNEP_MAX_TRIALS) {
        tunep_cfgpath_push_key(&path, "num_samples");
        st = tunep_cfg_error(
            ctx, &path, 0, "%llu grid points x %lld samples exceeds the limit of %lld trials",
            (unsigned long long)grid, (long long)c->num_samples, (long long)TUNEP_MAX_TRIALS);
        tunep_cfgpath_pop(&path);
        return st;
    }
    if ((st = check_trainer(ctx, &path, c)))
        return st;
    if ((st = tunep_config_check_search(ctx, c)))
        return st;
    /* PBT's hyperparam_mutations name parameters: checked once param_space is known. */
    tunep_cfgpath_push_key(&path, "scheduler");
    st = tunep_config_resolve_scheduler(ctx, &path, json_object_get(root, "scheduler"), c->space,
                                        &c->scheduler);
    tunep_cfgpath_pop(&path);
    if (st)
        return st;
    /* A scheduler that lets every trial run min_t first (ASHA's grace_period) never acts when
     * a stop rule on the same attribute ends every trial earlier. */
    const struct tunep_scheduler_type *sched = c->scheduler.type;
    if (sched->min_t && c->stop.training_iteration > 0 &&
        strcmp(tunep_scheduler_config_time_attr(&c->scheduler), "training_iteration") == 0 &&
        (double)c->stop.training_iteration < sched->min_t(c->scheduler.cfg)) {
        tunep_cfgpath_push_key(&path, "stop");
        tunep_cfgpath_push_key(&path, "training_iteration");
        st = tunep_cfg_error(ctx, &path, 0,
                             "stops every trial before %s's grace_period of %g iterations",
                             sched->title, sched->min_t(c->scheduler.cfg));
        return st;
    }
    warn_unreachable_schedule(ctx, c);
    return TUNE_OK;
}

void tunep_config_done(struct tunep_config *c)
{
    if (!c)
        return;
    tunep_free(c->name);
    tunep_free(c->metric);
    for (size_t i = 0; i < c->n_objectives; i++)
        tunep_free(c->objectives[i]);
    tune_space_free(c->space);
    tunep_scheduler_config_done(&c->scheduler);
    for (size_t i = 0; i < c->stop.n_thresholds; i++)
        tunep_free(c->stop.thresholds[i].metric);
    tunep_free(c->stop.thresholds);
    tunep_free(c->storage);
    tunep_free(c->gpus_ids);
    tunep_free(c->json);
    if (c->trainer && c->trainer_cfg)
        tunep_options_done(c->trainer->options, c->trainer_cfg);
    tunep_free(c->trainer_cfg);
    tunep_free(c->trainer_name);
    memset(c, 0, sizeof *c);
}

void tunep_config_defaults(struct tunep_config *c)
{
    memset(c, 0, sizeof *c);
    c->mode_max = 1;
    c->num_samples = 1;
    c->max_concurrent = (int)default_concurrency();
    c->max_failures = 0;
    tunep_config_search_defaults(c);
    tunep_scheduler_config_default(&c->scheduler);
}

tune_status tunep_config_from_root(const struct tunep_cfgctx *ctx, json_t *root, tune_space *space,
                                   const struct tunep_trainer_type *const *trainers,
                                   struct tunep_config *out)
{
    tune_error *err = ctx->err;
    struct tunep_config c;
    tune_status st;

    tunep_config_defaults(&c);
    if (space) {
        c.space = space; /* taken, even on failure */
    } else if ((st = tune_space_new(&c.space, err)) != TUNE_OK) {
        return st;
    }
    st = parse_top(ctx, root, space, trainers, &c);
    if (st)
        goto fail;
    c.json = json_dumps(root, JSON_COMPACT | JSON_ENSURE_ASCII); /* malloc'd by jansson */
    char *copy = c.json ? tunep_strdup(c.json) : NULL;
    free(c.json);
    c.json = copy;
    if (!c.json) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto fail;
    }
    if (!c.name && !(c.name = tunep_strdup("experiment"))) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto fail;
    }
    if (!c.metric && (!(c.metric = tunep_strdup("val_accuracy")) ||
                      !(c.objectives[c.n_objectives++] = tunep_strdup("val_accuracy")))) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto fail;
    }
    if (!c.storage && !(c.storage = tunep_asprintf("tune_results/%s", c.name))) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto fail;
    }
    *out = c;
    return TUNE_OK;
fail:
    tunep_config_done(&c);
    return st;
}

tune_status tunep_config_parse(const char *text, size_t len, const char *source, tune_space *space,
                               const struct tunep_trainer_type *const *trainers,
                               struct tunep_config *out, tune_error *err)
{
    struct tunep_cfgctx ctx = {text, len, source ? source : "<string>", err};
    json_error_t jerr;
    tune_status st;

    if (len == 0 || strspn(text, " \t\r\n") == len) {
        tune_space_free(space); /* taken, even on failure */
        return tunep_error_set_at(err, TUNE_ECONFIG, ctx.source, 0, 0,
                                  "empty file (expected a JSON object)");
    }
    /* JSON (RFC 8259) has no byte order mark; jansson would only say "invalid token". */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        tune_space_free(space);
        return tunep_error_set_at(err, TUNE_ECONFIG, ctx.source, 1, 1,
                                  "the file starts with a UTF-8 byte order mark (BOM): save it "
                                  "without one");
    }
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr); /* new ref */
    if (!root) {
        tune_space_free(space);
        return tunep_error_set_at(err, TUNE_ECONFIG, ctx.source, jerr.line, jerr.column, "%s",
                                  jerr.text);
    }
    st = tunep_config_from_root(&ctx, root, space, trainers, out);
    json_decref(root);
    return st;
}

/* ---- a trial's configuration as nested JSON ------------------------------ */

static json_t *value_json(const struct tunep_value *v)
{
    switch (v->type) {
        case TUNEP_V_DOUBLE: return json_real(v->u.d);
        case TUNEP_V_INT: return json_integer((json_int_t)v->u.i);
        case TUNEP_V_STRING: return json_string(v->u.s);
        case TUNEP_V_BOOL: return json_boolean(v->u.b);
        case TUNEP_V_ABSENT: break;
    }
    return json_null();
}

/*
 * jansson prints reals with "%.17g" (0.1 -> 0.10000000000000001); users read
 * these configs, so reals go through tunep_format_double (shortest text that
 * reads back exactly) and keep a '.' or exponent so they stay reals.
 */
static void dump_compact(struct tunep_buf *b, const json_t *v)
{
    if (json_is_object(v)) {
        const char *key;
        json_t *child;
        int first = 1;
        tunep_buf_puts(b, "{");
        json_object_foreach((json_t *)v, key, child) {
            json_t *k = json_string(key); /* new ref */
            char *ks = k ? json_dumps(k, JSON_ENCODE_ANY) : NULL;
            tunep_buf_printf(b, "%s%s:", first ? "" : ",", ks ? ks : "\"\"");
            free(ks);
            json_decref(k);
            dump_compact(b, child);
            first = 0;
        }
        tunep_buf_puts(b, "}");
    } else if (json_is_real(v)) {
        char num[64];
        double d = json_real_value(v);
        if (isnan(d) || isinf(d)) {
            tunep_buf_puts(b, "null");
            return;
        }
        tunep_format_double(num, sizeof num, d);
        tunep_buf_puts(b, num);
        if (!strpbrk(num, ".eE"))
            tunep_buf_puts(b, ".0");
    } else {
        char *s = json_dumps(v, JSON_ENCODE_ANY); /* malloc'd by jansson */
        tunep_buf_puts(b, s ? s : "null");
        free(s);
    }
}

char *tunep_values_json(size_t n, const char *const *names, const struct tunep_value *values)
{
    json_t *root = json_object(); /* new ref */
    if (!root)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *name = names[i];
        json_t *obj = root;                   /* borrowed */
        if (values[i].type == TUNEP_V_ABSENT) /* a conditional parameter outside its option */
            continue;
        const char *slash;
        while ((slash = strchr(name, '/')) != NULL) {
            char part[TUNEP_SPACE_MAX_NAME + 1];
            size_t plen = (size_t)(slash - name);
            if (plen > TUNEP_SPACE_MAX_NAME)
                plen = TUNEP_SPACE_MAX_NAME;
            memcpy(part, name, plen);
            part[plen] = '\0';
            json_t *child = json_object_get(obj, part); /* borrowed */
            if (!json_is_object(child)) {
                child = json_object();
                if (!child || json_object_set_new(obj, part, child)) {
                    json_decref(root);
                    return NULL;
                }
            }
            obj = child;
            name = slash + 1;
        }
        if (json_object_set_new(obj, name, value_json(&values[i]))) {
            json_decref(root);
            return NULL;
        }
    }
    struct tunep_buf b;
    tunep_buf_init(&b);
    dump_compact(&b, root);
    json_decref(root);
    char *copy = tunep_buf_take(&b);
    return copy;
}
