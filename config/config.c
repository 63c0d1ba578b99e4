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
#include "config/config_scheduler.h"
#include "config/config_search.h"
#include "config/config_space.h"
#include "trainers/trainer.h"

const char *tunep_trainer_name(enum tunep_trainer_type t)
{
    switch (t) {
        case TUNEP_TRAINER_SYNTHETIC: return "synthetic";
        case TUNEP_TRAINER_BERT: return "bert";
        case TUNEP_TRAINER_COMMAND: return "command";
        case TUNEP_TRAINER_PLUGIN: return "plugin";
        case TUNEP_TRAINER_NONE: break;
    }
    return "none";
}

tune_status tunep_read_file(const char *path, char **ret_text, size_t *ret_len, tune_error *err)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0,
                                  "is a folder (expected a JSON config file)");
    FILE *f = fopen(path, "rb");
    if (!f)
        return tunep_error_set_at(err, errno == ENOENT ? TUNE_ENOTFOUND : TUNE_EIO, path, 0, 0,
                                  "cannot open: %s", strerror(errno));
    struct tunep_buf b;
    tunep_buf_init(&b);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (b.len + n > TUNEP_MAX_CONFIG_BYTES) {
            fclose(f);
            tunep_buf_done(&b);
            return tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0,
                                      "file is larger than the limit of %u bytes",
                                      TUNEP_MAX_CONFIG_BYTES);
        }
        tunep_buf_append(&b, chunk, n);
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        tunep_buf_done(&b);
        return tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "read error");
    }
    size_t len = b.len;
    char *text = tunep_buf_take(&b);
    if (!text)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory reading '%s'", path);
    *ret_text = text;
    *ret_len = len;
    return TUNE_OK;
}

/* ---- small typed readers ------------------------------------------------- */

static tune_status want_string(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                               const json_t *v, size_t max, char **ret)
{
    if (!json_is_string(v))
        return tunep_cfg_error(ctx, path, 0, "expected a string");
    const char *s = json_string_value(v); /* borrowed */
    if (strlen(s) == 0 || strlen(s) > max)
        return tunep_cfg_error(ctx, path, 0, "expected a non-empty string of at most %zu bytes",
                               max);
    char *copy = tunep_strdup(s);
    if (!copy)
        return tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
    tunep_free(*ret);
    *ret = copy;
    return TUNE_OK;
}

static tune_status want_int(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                            const json_t *v, int64_t lo, int64_t hi, int64_t *ret)
{
    if (!json_is_integer(v))
        return tunep_cfg_error(ctx, path, 0, "expected an integer");
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return tunep_cfg_error(ctx, path, 0, "expected an integer in [%lld, %lld], got %lld",
                               (long long)lo, (long long)hi, (long long)x);
    *ret = (int64_t)x;
    return TUNE_OK;
}

static tune_status want_number(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                               const json_t *v, double lo, double hi, double *ret)
{
    if (!json_is_number(v))
        return tunep_cfg_error(ctx, path, 0, "expected a number");
    double x = json_number_value(v);
    if (!(x >= lo && x <= hi))
        return tunep_cfg_error(ctx, path, 0, "expected a number in [%g, %g], got %g", lo, hi, x);
    *ret = x;
    return TUNE_OK;
}

static tune_status want_bool(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                             const json_t *v, int *ret)
{
    if (!json_is_boolean(v))
        return tunep_cfg_error(ctx, path, 0, "expected true or false");
    *ret = json_is_true(v);
    return TUNE_OK;
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

static tune_status parse_synthetic(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                   const json_t *obj, struct tunep_config *c)
{
    static const char *const keys[] = {"type",  "iterations",  "sleep_s",     "fail_prob",
                                       "noise", "report_true", "report_loss", "answer_log"};
    c->trainer = TUNEP_TRAINER_SYNTHETIC;
    tune_status st = check_keys(ctx, path, obj, keys, sizeof keys / sizeof *keys);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        if (st)
            break;
        tunep_cfgpath_push_key(path, key);
        if (strcmp(key, "iterations") == 0)
            st = want_int(ctx, path, v, 1, 1000000000, &c->synthetic.iterations);
        else if (strcmp(key, "sleep_s") == 0)
            st = want_number(ctx, path, v, 0, 86400, &c->synthetic.sleep_s);
        else if (strcmp(key, "fail_prob") == 0)
            st = want_number(ctx, path, v, 0, 1, &c->synthetic.fail_prob);
        else if (strcmp(key, "noise") == 0)
            st = want_number(ctx, path, v, 0, 1, &c->synthetic.noise);
        else if (strcmp(key, "report_true") == 0)
            st = want_bool(ctx, path, v, &c->synthetic.report_true);
        else if (strcmp(key, "report_loss") == 0)
            st = want_bool(ctx, path, v, &c->synthetic.report_loss);
        else if (strcmp(key, "answer_log") == 0)
            st = want_string(ctx, path, v, 4000, &c->synthetic.answer_log);
        tunep_cfgpath_pop(path);
    }
    return st;
}

/* A path that must name a readable file (or folder, when dir is set). */
static tune_status want_path(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                             const json_t *v, int dir, char **ret)
{
    tune_status st = want_string(ctx, path, v, 4000, ret);
    if (st)
        return st;
    struct stat sb;
    if (stat(*ret, &sb) != 0)
        return tunep_cfg_error(ctx, path, 0, "'%s': %s", *ret, strerror(errno));
    if (dir ? !S_ISDIR(sb.st_mode) : !S_ISREG(sb.st_mode))
        return tunep_cfg_error(ctx, path, 0, "'%s' is not a %s", *ret, dir ? "folder" : "file");
    if (access(*ret, R_OK) != 0)
        return tunep_cfg_error(ctx, path, 0, "'%s': %s", *ret, strerror(errno));
    return TUNE_OK;
}

static tune_status parse_bert_model(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                    const json_t *obj, struct tunep_bert_trainer_config *b)
{
    static const char *const keys[] = {"layers", "hidden", "heads", "intermediate",
                                       "max_position"};
    if (!json_is_object(obj))
        return tunep_cfg_error(ctx, path, 0, "expected an object such as {\"layers\": 2}");
    tune_status st = check_keys(ctx, path, obj, keys, sizeof keys / sizeof *keys);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        if (st)
            break;
        int64_t x = 0;
        tunep_cfgpath_push_key(path, key);
        if (strcmp(key, "layers") == 0 && !(st = want_int(ctx, path, v, 1, 48, &x)))
            b->layers = (int)x;
        else if (strcmp(key, "hidden") == 0 && !(st = want_int(ctx, path, v, 8, 8192, &x)))
            b->hidden = (int)x;
        else if (strcmp(key, "heads") == 0 && !(st = want_int(ctx, path, v, 1, 128, &x)))
            b->heads = (int)x;
        else if (strcmp(key, "intermediate") == 0 &&
                 !(st = want_int(ctx, path, v, 8, 65536, &x)))
            b->intermediate = (int)x;
        else if (strcmp(key, "max_position") == 0 && !(st = want_int(ctx, path, v, 8, 4096, &x)))
            b->max_position = (int)x;
        tunep_cfgpath_pop(path);
    }
    if (!st && b->hidden % b->heads != 0)
        st = tunep_cfg_error(ctx, path, 0, "hidden (%d) must be a multiple of heads (%d)",
                             b->hidden, b->heads);
    return st;
}

/* "device": "auto", "cpu", "cuda" or "cuda:N" (models/cuda/device.h). */
static tune_status parse_device(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                const json_t *v, struct tunep_bert_trainer_config *b)
{
    tune_error perr = {0};
    if (!json_is_string(v) ||
        tunep_device_parse(json_string_value(v), &b->device, &perr) != TUNE_OK)
        return tunep_cfg_error(ctx, path, 0, "%s",
                               perr.text[0] ? perr.text
                                            : "expected \"auto\", \"cpu\", \"cuda\" or \"cuda:N\"");
    if (b->device.kind == TUNEP_DEVICE_CUDA && !TUNE_HAVE_CUDA)
        return tunep_cfg_error(ctx, path, 0,
                               "this build has no CUDA backend (configure with -Dcuda=enabled)");
    return TUNE_OK;
}

static tune_status parse_bert(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                              const json_t *obj, struct tunep_config *c)
{
    static const char *const keys[] = {"type",        "train",      "dev",
                                       "vocab",       "checkpoint", "model",
                                       "epochs",      "eval_every", "max_train_examples",
                                       "max_eval_examples", "max_seq_len", "eval_batch_size",
                                       "threads",     "lowercase",  "device",
                                       "precision"};
    struct tunep_bert_trainer_config *b = &c->bert;
    c->trainer = TUNEP_TRAINER_BERT;
    tune_status st = check_keys(ctx, path, obj, keys, sizeof keys / sizeof *keys);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        if (st)
            break;
        int64_t x = 0;
        tunep_cfgpath_push_key(path, key);
        if (strcmp(key, "train") == 0)
            st = want_path(ctx, path, v, 0, &b->train);
        else if (strcmp(key, "dev") == 0)
            st = want_path(ctx, path, v, 0, &b->dev);
        else if (strcmp(key, "vocab") == 0)
            st = want_path(ctx, path, v, 0, &b->vocab);
        else if (strcmp(key, "checkpoint") == 0)
            st = json_is_null(v) ? TUNE_OK : want_path(ctx, path, v, 1, &b->checkpoint);
        else if (strcmp(key, "model") == 0)
            st = parse_bert_model(ctx, path, v, b);
        else if (strcmp(key, "epochs") == 0 && !(st = want_int(ctx, path, v, 1, 1000, &x)))
            b->epochs = (int)x;
        else if (strcmp(key, "eval_every") == 0)
            st = want_int(ctx, path, v, 0, INT64_MAX, &b->eval_every);
        else if (strcmp(key, "max_train_examples") == 0)
            st = want_int(ctx, path, v, 0, INT64_MAX, &b->max_train_examples);
        else if (strcmp(key, "max_eval_examples") == 0)
            st = want_int(ctx, path, v, 0, INT64_MAX, &b->max_eval_examples);
        else if (strcmp(key, "max_seq_len") == 0 && !(st = want_int(ctx, path, v, 8, 4096, &x)))
            b->max_seq_len = (int)x;
        else if (strcmp(key, "eval_batch_size") == 0 &&
                 !(st = want_int(ctx, path, v, 1, 4096, &x)))
            b->eval_batch_size = (int)x;
        else if (strcmp(key, "threads") == 0 && !(st = want_int(ctx, path, v, 0, 256, &x)))
            b->threads = (int)x;
        else if (strcmp(key, "lowercase") == 0)
            st = want_bool(ctx, path, v, &b->lowercase);
        else if (strcmp(key, "device") == 0)
            st = parse_device(ctx, path, v, b);
        else if (strcmp(key, "precision") == 0) {
            const char *p = json_is_string(v) ? json_string_value(v) : "";
            if (strcmp(p, "fp32") == 0 || strcmp(p, "tf32") == 0)
                b->tf32 = strcmp(p, "tf32") == 0;
            else
                st = tunep_cfg_error(ctx, path, 0, "expected \"fp32\" or \"tf32\"");
        }
        tunep_cfgpath_pop(path);
    }
    if (st)
        return st;
    static const char *const required[] = {"train", "dev", "vocab"};
    for (size_t i = 0; i < 3; i++) {
        if (json_object_get(obj, required[i]))
            continue;
        if (i == 2 && b->checkpoint) {
            /* A Hugging Face folder carries its vocabulary. */
            b->vocab = tunep_asprintf("%s/vocab.txt", b->checkpoint);
            if (!b->vocab)
                return tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
            if (access(b->vocab, R_OK) != 0)
                return tunep_cfg_error(ctx, path, 0,
                                       "missing key 'vocab', and the checkpoint has no vocab.txt");
            continue;
        }
        return tunep_cfg_error(ctx, path, 0, "missing key '%s' (a path)", required[i]);
    }
    if (!b->checkpoint && b->max_seq_len > b->max_position) {
        tunep_cfgpath_push_key(path, "max_seq_len");
        st = tunep_cfg_error(ctx, path, 0, "%d is longer than model.max_position (%d)",
                             b->max_seq_len, b->max_position);
        tunep_cfgpath_pop(path);
    }
    return st;
}

/* An environment variable's name: what a POSIX shell accepts. */
static int valid_env_name(const char *s)
{
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return 0;
    for (const char *p = s + 1; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return 0;
    return 1;
}

/* A C identifier, as dlsym() symbols are: catches "my objective" and "lib.so" early. */
static int valid_symbol(const char *s)
{
    return valid_env_name(s);
}

static tune_status parse_command_argv(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                      const json_t *v, struct tunep_command_config *cmd)
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return tunep_cfg_error(ctx, path, 0,
                               "expected a non-empty array of strings such as "
                               "[\"python3\", \"train.py\", \"--lr\", \"{lr}\"]");
    size_t n = json_array_size(v);
    if (n > 65536)
        return tunep_cfg_error(ctx, path, 0, "more than 65536 arguments");
    cmd->argv = tunep_calloc(n, sizeof *cmd->argv);
    if (!cmd->argv)
        return tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
    cmd->argc = n;
    for (size_t i = 0; i < n; i++) {
        const json_t *a = json_array_get(v, i); /* borrowed */
        tune_status st = TUNE_OK;
        tunep_cfgpath_push_index(path, (long)i);
        if (!json_is_string(a))
            st = tunep_cfg_error(ctx, path, 0, "expected a string");
        else if (i == 0 && json_string_length(a) == 0)
            st = tunep_cfg_error(ctx, path, 0, "expected the program (a non-empty string)");
        else if (strlen(json_string_value(a)) != json_string_length(a))
            st = tunep_cfg_error(ctx, path, 0, "contains a NUL character");
        else if (!(cmd->argv[i] = tunep_strdup(json_string_value(a))))
            st = tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
        tunep_cfgpath_pop(path);
        if (st)
            return st;
    }
    return TUNE_OK;
}

static tune_status parse_command_env(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                     const json_t *v, struct tunep_command_config *cmd)
{
    if (!json_is_object(v))
        return tunep_cfg_error(ctx, path, 0,
                               "expected an object of strings such as {\"OMP_NUM_THREADS\": \"1\"}");
    size_t n = json_object_size(v);
    cmd->env_names = tunep_calloc(n ? n : 1, sizeof *cmd->env_names);
    cmd->env_values = tunep_calloc(n ? n : 1, sizeof *cmd->env_values);
    if (!cmd->env_names || !cmd->env_values)
        return tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)v, key, val) {
        tune_status st = TUNE_OK;
        tunep_cfgpath_push_key(path, key);
        if (!valid_env_name(key))
            st = tunep_cfg_error(ctx, path, 1, "not a variable name (letters, digits and '_')");
        else if (strncmp(key, "TUNE_", 5) == 0)
            st = tunep_cfg_error(ctx, path, 1, "TUNE_ variables are set by tune itself");
        else if (!json_is_string(val))
            st = tunep_cfg_error(ctx, path, 0, "expected a string");
        else if (strlen(json_string_value(val)) != json_string_length(val))
            st = tunep_cfg_error(ctx, path, 0, "contains a NUL character");
        else if (!(cmd->env_names[cmd->n_env] = tunep_strdup(key)))
            st = tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
        else if (!(cmd->env_values[cmd->n_env++] = tunep_strdup(json_string_value(val))))
            st = tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
        tunep_cfgpath_pop(path);
        if (st)
            return st;
    }
    return TUNE_OK;
}

static tune_status parse_command(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                 const json_t *obj, struct tunep_config *c)
{
    static const char *const keys[] = {"type", "argv", "env", "cwd", "kill_grace_s", "report_fd"};
    struct tunep_command_config *cmd = &c->command;
    c->trainer = TUNEP_TRAINER_COMMAND;
    tune_status st = check_keys(ctx, path, obj, keys, sizeof keys / sizeof *keys);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        if (st)
            break;
        int64_t x = 0;
        tunep_cfgpath_push_key(path, key);
        if (strcmp(key, "argv") == 0)
            st = parse_command_argv(ctx, path, v, cmd);
        else if (strcmp(key, "env") == 0)
            st = parse_command_env(ctx, path, v, cmd);
        else if (strcmp(key, "cwd") == 0)
            st = want_path(ctx, path, v, 1, &cmd->cwd);
        else if (strcmp(key, "kill_grace_s") == 0)
            st = want_number(ctx, path, v, 0, 3600, &cmd->kill_grace_s);
        else if (strcmp(key, "report_fd") == 0 && !(st = want_int(ctx, path, v, 3, 1023, &x)))
            cmd->report_fd = (int)x;
        tunep_cfgpath_pop(path);
    }
    if (st)
        return st;
    if (!cmd->argv)
        return tunep_cfg_error(ctx, path, 0,
                               "missing key 'argv' (the program and its arguments, e.g. "
                               "[\"python3\", \"train.py\", \"--lr\", \"{lr}\"])");
    if (!strchr(cmd->argv[0], '{')) {
        /* A program that is not there fails every trial: say so before the first. */
        const char *path_env = NULL;
        for (size_t i = 0; i < cmd->n_env; i++)
            if (strcmp(cmd->env_names[i], "PATH") == 0)
                path_env = cmd->env_values[i];
        char why[600];
        char *found = NULL;
        int r = tunep_command_find_program(cmd->argv[0], cmd->cwd, path_env, &found, why,
                                           sizeof why);
        tunep_free(found);
        if (r == -2)
            return tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
        if (r) {
            tunep_cfgpath_push_key(path, "argv");
            tunep_cfgpath_push_index(path, 0);
            st = tunep_cfg_error(ctx, path, 0, "%s", why);
            tunep_cfgpath_pop(path);
            tunep_cfgpath_pop(path);
        }
    }
    return st;
}

/* Placeholder lookups at validation time: the name must be a parameter or a built-in. */
static int known_placeholder(void *ud, const char *name, struct tunep_buf *out)
{
    const tune_space *space = ud;
    (void)out;
    if (strcmp(name, "trial_id") == 0 || strcmp(name, "trial_dir") == 0)
        return 0;
    for (size_t i = 0; i < space->n; i++)
        if (strcmp(space->params[i].name, name) == 0)
            return 0;
    return -1;
}

/* One argv or env template: every placeholder must name a parameter. path points at it. */
static tune_status check_template(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                  const char *tmpl, const tune_space *space)
{
    char bad[TUNEP_SPACE_MAX_NAME + 64];
    struct tunep_buf scratch;
    tunep_buf_init(&scratch);
    int r = tunep_command_expand(tmpl, known_placeholder, (void *)space, &scratch, bad,
                                 sizeof bad);
    tunep_buf_done(&scratch);
    if (r == -2)
        return tunep_cfg_error(ctx, path, 0,
                               "unterminated placeholder '%s' (write '{{' for a literal '{')", bad);
    if (r == 0)
        return TUNE_OK;
    const char *best = NULL;
    size_t best_d = 3;
    struct tunep_buf list;
    tunep_buf_init(&list);
    for (size_t i = 0; i < space->n; i++) {
        size_t d = tunep_edit_distance(bad, space->params[i].name);
        if (d < best_d) {
            best_d = d;
            best = space->params[i].name;
        }
        tunep_buf_printf(&list, "%s, ", space->params[i].name);
    }
    tune_status st;
    if (best)
        st = tunep_cfg_error(ctx, path, 0, "unknown placeholder '{%s}' (did you mean '{%s}'?)", bad,
                             best);
    else
        st = tunep_cfg_error(ctx, path, 0,
                             "unknown placeholder '{%s}' (expected a parameter: %strial_id or "
                             "trial_dir; write '{{' for a literal '{')",
                             bad, list.data ? list.data : "");
    tunep_buf_done(&list);
    return st;
}

/* The command trainer's templates against the parameters (known once the whole config is read). */
static tune_status check_command_templates(const struct tunep_cfgctx *ctx,
                                           struct tunep_cfgpath *path,
                                           const struct tunep_config *c)
{
    const struct tunep_command_config *cmd = &c->command;
    tune_status st = TUNE_OK;
    tunep_cfgpath_push_key(path, "trainer");
    tunep_cfgpath_push_key(path, "argv");
    for (size_t i = 0; i < cmd->argc && !st; i++) {
        tunep_cfgpath_push_index(path, (long)i);
        st = check_template(ctx, path, cmd->argv[i], c->space);
        tunep_cfgpath_pop(path);
    }
    tunep_cfgpath_pop(path);
    tunep_cfgpath_push_key(path, "env");
    for (size_t i = 0; i < cmd->n_env && !st; i++) {
        tunep_cfgpath_push_key(path, cmd->env_names[i]);
        st = check_template(ctx, path, cmd->env_values[i], c->space);
        tunep_cfgpath_pop(path);
    }
    tunep_cfgpath_pop(path);
    tunep_cfgpath_pop(path);
    return st;
}

/* A string naming a symbol; its position is kept for the errors dlopen/dlsym give later. */
static tune_status want_symbol(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                               const json_t *v, char **ret)
{
    tune_status st = want_string(ctx, path, v, 255, ret);
    if (!st && !valid_symbol(*ret))
        st = tunep_cfg_error(ctx, path, 0, "expected a C identifier (the function's name)");
    return st;
}

static tune_status parse_plugin(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                const json_t *obj, struct tunep_config *c)
{
    static const char *const keys[] = {"type",        "library",     "symbol",
                                       "init_symbol", "fini_symbol", "data"};
    struct tunep_plugin_config *p = &c->plugin;
    c->trainer = TUNEP_TRAINER_PLUGIN;
    tune_status st = check_keys(ctx, path, obj, keys, sizeof keys / sizeof *keys);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        if (st)
            break;
        int which = -1;
        tunep_cfgpath_push_key(path, key);
        if (strcmp(key, "library") == 0) {
            st = want_string(ctx, path, v, 4000, &p->library);
            which = 0;
        } else if (strcmp(key, "symbol") == 0) {
            st = want_symbol(ctx, path, v, &p->symbol);
            which = 1;
        } else if (strcmp(key, "init_symbol") == 0) {
            st = want_symbol(ctx, path, v, &p->init_symbol);
            which = 2;
        } else if (strcmp(key, "fini_symbol") == 0) {
            st = want_symbol(ctx, path, v, &p->fini_symbol);
            which = 3;
        } else if (strcmp(key, "data") == 0) {
            char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY); /* malloc'd by jansson */
            p->data = text ? tunep_strdup(text) : NULL;
            free(text);
            if (!p->data)
                st = tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
        }
        if (!st && which >= 0 &&
            tunep_json_locate(ctx->text, ctx->len, path, 0, &p->line[which], &p->column[which]))
            p->line[which] = p->column[which] = 0;
        tunep_cfgpath_pop(path);
    }
    if (st)
        return st;
    if (!p->library)
        return tunep_cfg_error(ctx, path, 0,
                               "missing key 'library' (a shared library, e.g. \"./libobjective.so\")");
    if (!p->symbol)
        return tunep_cfg_error(ctx, path, 0,
                               "missing key 'symbol' (the tune_objective_fn's name in the library)");
    return TUNE_OK;
}

#define TRAINER_TYPES "\"synthetic\", \"bert\", \"command\" or \"plugin\""

static tune_status parse_trainer(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                 const json_t *obj, struct tunep_config *c)
{
    if (!json_is_object(obj))
        return tunep_cfg_error(ctx, path, 0, "expected an object such as {\"type\": \"synthetic\"}");
    const json_t *type = json_object_get(obj, "type"); /* borrowed */
    if (!type)
        return tunep_cfg_error(ctx, path, 0, "missing key 'type' (expected " TRAINER_TYPES ")");
    const char *name = json_is_string(type) ? json_string_value(type) : "";
    if (strcmp(name, "synthetic") == 0)
        return parse_synthetic(ctx, path, obj, c);
    if (strcmp(name, "bert") == 0)
        return parse_bert(ctx, path, obj, c);
    if (strcmp(name, "command") == 0)
        return parse_command(ctx, path, obj, c);
    if (strcmp(name, "plugin") == 0)
        return parse_plugin(ctx, path, obj, c);
    tunep_cfgpath_push_key(path, "type");
    tune_status st =
        tunep_cfg_error(ctx, path, 0, "unknown trainer type (expected " TRAINER_TYPES ")");
    tunep_cfgpath_pop(path);
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
            st = want_int(ctx, path, v, 1, INT64_MAX, &c->stop.training_iteration);
        } else if (strcmp(key, "time_budget_s") == 0) {
            st = want_number(ctx, path, v, 1e-9, 1e12, &c->stop.time_budget_s);
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
            st = want_number(ctx, path, v, -HUGE_VAL, HUGE_VAL, &x);
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

/* Ray's resources_per_trial: {"cpu": n, "gpu": f}; used by the bert trainer. */
static tune_status parse_resources(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                   const json_t *obj, struct tunep_config *c)
{
    static const char *const keys[] = {"cpu", "gpu"};
    if (!json_is_object(obj))
        return tunep_cfg_error(ctx, path, 0, "expected an object such as {\"cpu\": 2, \"gpu\": 0.25}");
    tune_status st = check_keys(ctx, path, obj, keys, 2);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)(uintptr_t)obj, key, v) {
        if (st)
            break;
        tunep_cfgpath_push_key(path, key);
        if (strcmp(key, "cpu") == 0) {
            int64_t n = 0;
            st = want_int(ctx, path, v, 1, 4096, &n);
            c->bert.resources_cpu = (int)n;
        } else {
            st = want_number(ctx, path, v, 0, 1, &c->bert.resources_gpu);
        }
        tunep_cfgpath_pop(path);
    }
    return st;
}

static long default_concurrency(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

static tune_status parse_top(const struct tunep_cfgctx *ctx, json_t *root, tune_space *given_space,
                             struct tunep_config *c)
{
    static const char *const known[] = {
        "name",    "metric", "mode",      "num_samples", "seed", "max_concurrent_trials",
        "param_space", "search", "scheduler", "trainer",  "stop", "max_failures", "storage",
        "isolation", "trial_timeout_s", "checkpoint_frequency", "resources_per_trial",
    };
    struct tunep_cfgpath path = {.depth = 0};
    if (!json_is_object(root))
        return tunep_cfg_error(ctx, &path, 0, "expected a JSON object at the top level");
    tune_status st = check_keys(ctx, &path, root, known, sizeof known / sizeof *known);
    if (st)
        return st;

    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        tunep_cfgpath_push_key(&path, key);
        if (strcmp(key, "name") == 0) {
            st = want_string(ctx, &path, v, 128, &c->name);
            if (!st && !valid_name(c->name))
                st = tunep_cfg_error(ctx, &path, 0,
                                     "expected letters, digits, '_', '-' or '.' (it names a folder)");
        } else if (strcmp(key, "metric") == 0) {
            st = want_string(ctx, &path, v, TUNEP_MAX_METRIC_NAME, &c->metric);
        } else if (strcmp(key, "mode") == 0) {
            if (json_is_string(v) && strcmp(json_string_value(v), "max") == 0)
                c->mode_max = 1;
            else if (json_is_string(v) && strcmp(json_string_value(v), "min") == 0)
                c->mode_max = 0;
            else
                st = tunep_cfg_error(ctx, &path, 0, "expected \"max\" or \"min\"");
        } else if (strcmp(key, "num_samples") == 0) {
            st = want_int(ctx, &path, v, 1, TUNEP_MAX_SAMPLES, &c->num_samples);
        } else if (strcmp(key, "seed") == 0) {
            int64_t seed = 0;
            st = want_int(ctx, &path, v, 0, INT64_MAX, &seed);
            c->seed = (uint64_t)seed;
            c->seed_given = 1;
        } else if (strcmp(key, "max_concurrent_trials") == 0) {
            int64_t n = 0;
            st = want_int(ctx, &path, v, 1, TUNEP_MAX_CONCURRENT, &n);
            c->max_concurrent = (int)n;
        } else if (strcmp(key, "max_failures") == 0) {
            int64_t n = 0;
            st = want_int(ctx, &path, v, -1, 1000000, &n);
            c->max_failures = (int)n;
        } else if (strcmp(key, "isolation") == 0) {
            if (json_is_string(v) && strcmp(json_string_value(v), "thread") == 0)
                c->isolation_process = 0;
            else if (json_is_string(v) && strcmp(json_string_value(v), "process") == 0)
                c->isolation_process = 1;
            else
                st = tunep_cfg_error(ctx, &path, 0, "expected \"thread\" or \"process\"");
        } else if (strcmp(key, "resources_per_trial") == 0) {
            st = parse_resources(ctx, &path, v, c);
        } else if (strcmp(key, "checkpoint_frequency") == 0) {
            st = want_int(ctx, &path, v, 0, INT64_MAX, &c->checkpoint_frequency);
        } else if (strcmp(key, "trial_timeout_s") == 0) {
            st = want_number(ctx, &path, v, 1e-3, 1e9, &c->trial_timeout_s);
        } else if (strcmp(key, "storage") == 0) {
            st = want_string(ctx, &path, v, 4000, &c->storage);
        } else if (strcmp(key, "search") == 0) {
            st = tunep_config_parse_search(ctx, &path, v, c);
        } else if (strcmp(key, "scheduler") == 0) {
            st = tunep_config_parse_scheduler(ctx, &path, v, &c->scheduler);
        } else if (strcmp(key, "trainer") == 0) {
            st = parse_trainer(ctx, &path, v, c);
        } else if (strcmp(key, "stop") == 0) {
            st = parse_stop(ctx, &path, v, c);
        } else if (strcmp(key, "param_space") == 0) {
            if (given_space)
                st = tunep_cfg_error(ctx, &path, 1,
                                     "not allowed when the space is built in code");
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
        st = tunep_cfg_error(ctx, &path, 0,
                             "%llu grid points x %lld samples exceeds the limit of %lld trials",
                             (unsigned long long)grid, (long long)c->num_samples,
                             (long long)TUNEP_MAX_TRIALS);
        tunep_cfgpath_pop(&path);
        return st;
    }
    if (c->trainer == TUNEP_TRAINER_COMMAND && (st = check_command_templates(ctx, &path, c)))
        return st;
    if (c->trainer == TUNEP_TRAINER_COMMAND && c->isolation_process) {
        /* A forked trial process killed on a timeout would leave the program running. */
        tunep_cfgpath_push_key(&path, "isolation");
        st = tunep_cfg_error(ctx, &path, 0,
                             "\"process\" is for objectives in tune's own process; the command "
                             "trainer's program is a process of its own already");
        tunep_cfgpath_pop(&path);
        return st;
    }
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
    return TUNE_OK;
}

void tunep_config_done(struct tunep_config *c)
{
    if (!c)
        return;
    tunep_free(c->name);
    tunep_free(c->metric);
    tune_space_free(c->space);
    tunep_scheduler_config_done(&c->scheduler);
    for (size_t i = 0; i < c->stop.n_thresholds; i++)
        tunep_free(c->stop.thresholds[i].metric);
    tunep_free(c->stop.thresholds);
    tunep_free(c->storage);
    tunep_free(c->json);
    tunep_free(c->synthetic.answer_log);
    tunep_free(c->bert.train);
    tunep_free(c->bert.dev);
    tunep_free(c->bert.vocab);
    tunep_free(c->bert.checkpoint);
    for (size_t i = 0; c->command.argv && i < c->command.argc; i++)
        tunep_free(c->command.argv[i]);
    tunep_free(c->command.argv);
    for (size_t i = 0; i < c->command.n_env; i++) {
        tunep_free(c->command.env_names[i]);
        tunep_free(c->command.env_values[i]);
    }
    tunep_free(c->command.env_names);
    tunep_free(c->command.env_values);
    tunep_free(c->command.cwd);
    tunep_free(c->plugin.library);
    tunep_free(c->plugin.symbol);
    tunep_free(c->plugin.init_symbol);
    tunep_free(c->plugin.fini_symbol);
    tunep_free(c->plugin.data);
    memset(c, 0, sizeof *c);
}

static void config_defaults(struct tunep_config *c)
{
    memset(c, 0, sizeof *c);
    c->mode_max = 1;
    c->num_samples = 1;
    c->max_concurrent = (int)default_concurrency();
    c->max_failures = 0;
    tunep_config_search_defaults(c);
    tunep_scheduler_config_default(&c->scheduler);
    c->synthetic.iterations = 100;
    c->synthetic.noise = 0.005;
    /* bert-tiny shapes (L2 H128 A2 I512) for random initialisation. */
    c->bert.layers = 2;
    c->bert.hidden = 128;
    c->bert.heads = 2;
    c->bert.intermediate = 512;
    c->bert.max_position = 512;
    c->bert.epochs = 3;
    c->bert.max_seq_len = 128;
    c->bert.eval_batch_size = 128;
    c->bert.lowercase = 1;
    c->command.kill_grace_s = 10;
    c->command.report_fd = 3;
}

tune_status tunep_config_parse(const char *text, size_t len, const char *source, tune_space *space,
                               struct tunep_config *out, tune_error *err)
{
    struct tunep_cfgctx ctx = {text, len, source ? source : "<string>", err};
    struct tunep_config c;
    json_error_t jerr;
    tune_status st;

    config_defaults(&c);
    if (space) {
        c.space = space; /* taken, even on failure */
    } else if ((st = tune_space_new(&c.space, err)) != TUNE_OK) {
        return st;
    }
    if (len == 0 || strspn(text, " \t\r\n") == len) {
        st = tunep_error_set_at(err, TUNE_ECONFIG, ctx.source, 0, 0,
                                "empty file (expected a JSON object)");
        goto fail;
    }
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr); /* new ref */
    if (!root) {
        st = tunep_error_set_at(err, TUNE_ECONFIG, ctx.source, jerr.line, jerr.column, "%s",
                                jerr.text);
        goto fail;
    }
    st = parse_top(&ctx, root, space, &c);
    if (!st) {
        c.json = json_dumps(root, JSON_COMPACT | JSON_ENSURE_ASCII); /* malloc'd by jansson */
        char *copy = c.json ? tunep_strdup(c.json) : NULL;
        free(c.json);
        c.json = copy;
        if (!c.json)
            st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    }
    json_decref(root);
    if (st)
        goto fail;
    if (!c.name && !(c.name = tunep_strdup("experiment"))) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto fail;
    }
    if (!c.metric && !(c.metric = tunep_strdup("val_accuracy"))) {
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

/* ---- a trial's configuration as nested JSON ------------------------------ */

static json_t *value_json(const struct tunep_value *v)
{
    switch (v->type) {
        case TUNEP_V_DOUBLE: return json_real(v->u.d);
        case TUNEP_V_INT: return json_integer((json_int_t)v->u.i);
        case TUNEP_V_STRING: return json_string(v->u.s);
        case TUNEP_V_BOOL: return json_boolean(v->u.b);
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
        json_t *obj = root; /* borrowed */
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
