/*
 * config_options.c - reads a config section with an option table: one
 * reader per option type, one message per kind of mistake.
 */
#include "config/config_options.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "config/config_scheduler.h"

#define DEFAULT_MAX_STRING 4000
#define MAX_ARGV           65536

static tune_status oom(const struct tunep_cfgctx *ctx)
{
    return tunep_error_set(ctx->err, TUNE_ENOMEM, "out of memory");
}

tune_status tunep_config_read_string(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
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
        return oom(ctx);
    tunep_free(*ret);
    *ret = copy;
    return TUNE_OK;
}

/* A path that must name a readable file (or folder, when dir is set). */
static tune_status read_path(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                             const json_t *v, int dir, char **ret)
{
    tune_status st = tunep_config_read_string(ctx, path, v, DEFAULT_MAX_STRING, ret);
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

tune_status tunep_config_read_int(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
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

tune_status tunep_config_read_number(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
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

/* "expected \"a\", \"b\" or \"c\"" */
static tune_status read_choice(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                               const json_t *v, const char *const *choices, int *ret)
{
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    size_t n = 0;
    for (; choices[n]; n++)
        if (s && strcmp(s, choices[n]) == 0) {
            *ret = (int)n;
            return TUNE_OK;
        }
    struct tunep_buf list;
    tunep_buf_init(&list);
    for (size_t i = 0; i < n; i++)
        tunep_buf_printf(&list, "%s\"%s\"", i == 0 ? "" : i + 1 == n ? " or " : ", ", choices[i]);
    tune_status st = tunep_cfg_error(ctx, path, 0, "expected %s", list.data ? list.data : "");
    tunep_buf_done(&list);
    return st;
}

static tune_status read_argv(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                             const json_t *v, const char *expected, struct tunep_strv *out)
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return tunep_cfg_error(ctx, path, 0, "expected %s",
                               expected ? expected : "a non-empty array of strings");
    size_t n = json_array_size(v);
    if (n > MAX_ARGV)
        return tunep_cfg_error(ctx, path, 0, "more than %d arguments", MAX_ARGV);
    struct tunep_strv sv = {tunep_calloc(n, sizeof *sv.v), n};
    if (!sv.v)
        return oom(ctx);
    tune_status st = TUNE_OK;
    for (size_t i = 0; i < n && !st; i++) {
        const json_t *a = json_array_get(v, i); /* borrowed */
        tunep_cfgpath_push_index(path, (long)i);
        if (!json_is_string(a))
            st = tunep_cfg_error(ctx, path, 0, "expected a string");
        else if (i == 0 && json_string_length(a) == 0)
            st = tunep_cfg_error(ctx, path, 0, "expected the program (a non-empty string)");
        else if (strlen(json_string_value(a)) != json_string_length(a))
            st = tunep_cfg_error(ctx, path, 0, "contains a NUL character");
        else if (!(sv.v[i] = tunep_strdup(json_string_value(a))))
            st = oom(ctx);
        tunep_cfgpath_pop(path);
    }
    for (size_t i = 0; out->v && i < out->n; i++)
        tunep_free(out->v[i]);
    tunep_free(out->v);
    *out = sv; /* freed with the rest on failure */
    return st;
}

static tune_status read_env(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                            const json_t *v, const char *expected, struct tunep_strmap *m)
{
    if (!json_is_object(v))
        return tunep_cfg_error(ctx, path, 0, "expected %s",
                               expected ? expected : "an object of strings");
    size_t n = json_object_size(v);
    char **names = tunep_realloc(m->names, m->n * sizeof *names, (m->n + n + 1) * sizeof *names);
    if (!names)
        return oom(ctx);
    m->names = names;
    char **values =
        tunep_realloc(m->values, m->n * sizeof *values, (m->n + n + 1) * sizeof *values);
    if (!values)
        return oom(ctx);
    m->values = values;
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)v, key, val) {
        tune_status st = TUNE_OK;
        tunep_cfgpath_push_key(path, key);
        if (!tunep_is_identifier(key))
            st = tunep_cfg_error(ctx, path, 1, "not a variable name (letters, digits and '_')");
        else if (strncmp(key, "TUNE_", 5) == 0)
            st = tunep_cfg_error(ctx, path, 1, "TUNE_ variables are set by tune itself");
        else if (!json_is_string(val))
            st = tunep_cfg_error(ctx, path, 0, "expected a string");
        else if (strlen(json_string_value(val)) != json_string_length(val))
            st = tunep_cfg_error(ctx, path, 0, "contains a NUL character");
        else if (!(m->names[m->n] = tunep_strdup(key)))
            st = oom(ctx);
        else if (!(m->values[m->n++] = tunep_strdup(json_string_value(val))))
            st = oom(ctx);
        tunep_cfgpath_pop(path);
        if (st)
            return st;
    }
    return TUNE_OK;
}

static tune_status read_json(const struct tunep_cfgctx *ctx, const json_t *v, char **ret)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY); /* malloc'd by jansson */
    char *copy = text ? tunep_strdup(text) : NULL;
    free(text);
    if (!copy)
        return oom(ctx);
    tunep_free(*ret);
    *ret = copy;
    return TUNE_OK;
}

/* A finite number, with the rule said in words (REAL, REAL_GT). */
static tune_status read_real(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                             const json_t *v, double lo, int lo_open, double hi, double *ret)
{
    if (!json_is_number(v))
        return tunep_cfg_error(ctx, path, 0, "expected a number");
    double d = json_number_value(v);
    if (!isfinite(d))
        return tunep_cfg_error(ctx, path, 0, "expected a finite number");
    char a[32], b[32];
    tunep_format_double(a, sizeof a, lo);
    tunep_format_double(b, sizeof b, hi);
    int above = lo_open ? d > lo : d >= lo;
    if (isinf(hi) && !above)
        return tunep_cfg_error(ctx, path, 0, "must be %s %s", lo_open ? ">" : ">=", a);
    if (!isinf(hi) && !(above && d <= hi))
        return tunep_cfg_error(ctx, path, 0, "must be between %s and %s", a, b);
    *ret = d;
    return TUNE_OK;
}

/* A number without a fraction (WHOLE): 2.0 is as good as 2. */
static tune_status read_whole(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                              const json_t *v, double lo, double hi, int *ret)
{
    double d = 0;
    tune_status st = read_real(ctx, path, v, -HUGE_VAL, 0, HUGE_VAL, &d);
    if (st)
        return st;
    if (d != floor(d))
        return tunep_cfg_error(ctx, path, 0, "expected an integer");
    if (d < lo)
        return tunep_cfg_error(ctx, path, 0, "must be >= %lld", (long long)lo);
    if (d > hi)
        return tunep_cfg_error(ctx, path, 0, "must be at most %lld", (long long)hi);
    *ret = (int)d;
    return TUNE_OK;
}

/* A name into char[size] (NAME): no NUL inside, as it is used as a C string. */
static tune_status read_name(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                             const json_t *v, size_t size, char *out)
{
    if (!json_is_string(v))
        return tunep_cfg_error(ctx, path, 0, "expected a string");
    const char *s = json_string_value(v); /* borrowed */
    size_t n = strlen(s);
    if (n == 0)
        return tunep_cfg_error(ctx, path, 0, "must not be empty");
    if (n >= size || n != json_string_length(v))
        return tunep_cfg_error(ctx, path, 0, "must be a name of at most %zu bytes", size - 1);
    memcpy(out, s, n + 1);
    return TUNE_OK;
}

static tune_status read_value(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                              const json_t *v, const struct tunep_option *o, void *cfg);

/* An array of one value per row of o->sub (TUPLE), each read with its row. */
static tune_status read_tuple(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                              const json_t *v, const struct tunep_option *o, void *cfg)
{
    size_t n = 0;
    while (o->sub[n].name)
        n++;
    if (!json_is_array(v) || json_array_size(v) != n)
        return tunep_cfg_error(ctx, path, 0, "expected %s", o->expected ? o->expected : "an array");
    tune_status st = TUNE_OK;
    for (size_t i = 0; i < n && !st; i++) {
        tunep_cfgpath_push_index(path, (long)i);
        st = read_value(ctx, path, json_array_get(v, i) /* borrowed */, &o->sub[i], cfg);
        tunep_cfgpath_pop(path);
    }
    return st;
}

static tune_status read_value(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                              const json_t *v, const struct tunep_option *o, void *cfg)
{
    void *f = (char *)cfg + o->offset;
    int64_t x = 0;
    tune_status st = TUNE_OK;
    switch (o->type) {
        case TUNEP_OPT_BOOL:
            if (!json_is_boolean(v))
                return tunep_cfg_error(ctx, path, 0, "expected true or false");
            *(int *)f = json_is_true(v);
            break;
        case TUNEP_OPT_INT:
            if (!(st = tunep_config_read_int(ctx, path, v, (int64_t)o->lo, (int64_t)o->hi, &x)))
                *(int *)f = (int)x;
            break;
        case TUNEP_OPT_INT64:
            st = tunep_config_read_int(ctx, path, v, (int64_t)o->lo,
                                       o->hi == 0 ? INT64_MAX : (int64_t)o->hi, (int64_t *)f);
            break;
        case TUNEP_OPT_NUMBER:
            st = tunep_config_read_number(ctx, path, v, o->lo, o->hi, (double *)f);
            break;
        case TUNEP_OPT_STRING:
            st = tunep_config_read_string(
                ctx, path, v, o->hi > 0 ? (size_t)o->hi : DEFAULT_MAX_STRING, (char **)f);
            break;
        case TUNEP_OPT_TEXT: {
            char *s = NULL;
            if (!(st = tunep_config_read_string(ctx, path, v, (size_t)o->hi - 1, &s)))
                memcpy(f, s, strlen(s) + 1);
            tunep_free(s);
            break;
        }
        case TUNEP_OPT_FILE: st = read_path(ctx, path, v, 0, (char **)f); break;
        case TUNEP_OPT_DIR:
            if (!json_is_null(v))
                st = read_path(ctx, path, v, 1, (char **)f);
            break;
        case TUNEP_OPT_CHOICE: st = read_choice(ctx, path, v, o->choices, (int *)f); break;
        case TUNEP_OPT_ARGV: st = read_argv(ctx, path, v, o->expected, f); break;
        case TUNEP_OPT_ENV: st = read_env(ctx, path, v, o->expected, f); break;
        case TUNEP_OPT_JSON: st = read_json(ctx, v, (char **)f); break;
        case TUNEP_OPT_OBJECT:
            st = tunep_config_read_options(ctx, path, v, o->sub, NULL, o->expected, cfg);
            break;
        case TUNEP_OPT_REAL: st = read_real(ctx, path, v, o->lo, 0, o->hi, (double *)f); break;
        case TUNEP_OPT_REAL_GT: st = read_real(ctx, path, v, o->lo, 1, o->hi, (double *)f); break;
        case TUNEP_OPT_WHOLE: st = read_whole(ctx, path, v, o->lo, o->hi, (int *)f); break;
        case TUNEP_OPT_NAME: st = read_name(ctx, path, v, (size_t)o->hi, (char *)f); break;
        case TUNEP_OPT_TUPLE: st = read_tuple(ctx, path, v, o, cfg); break;
        case TUNEP_OPT_MUTATIONS:
            st = tunep_config_read_mutations(ctx, path, v, o->expected, f);
            break;
        case TUNEP_OPT_TYPE_COUNT: break;
    }
    if (!st && o->pos_offset) {
        struct tunep_opt_pos *pos = (struct tunep_opt_pos *)((char *)cfg + o->pos_offset - 1);
        if (tunep_json_locate(ctx->text, ctx->len, path, 0, &pos->line, &pos->column))
            pos->line = pos->column = 0;
    }
    return st;
}

tune_status tunep_config_read_options(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                      const json_t *obj, const struct tunep_option *table,
                                      const char *const *extra_keys, const char *expected,
                                      void *cfg)
{
    if (!json_is_object(obj))
        return tunep_cfg_error(ctx, path, 0, "expected %s", expected ? expected : "an object");
    /* Every key is known before any value is read, so a misspelt key is named first. */
    const char *known[128];
    size_t n_known = 0;
    for (size_t i = 0; extra_keys && extra_keys[i] && n_known < 128; i++)
        known[n_known++] = extra_keys[i];
    for (const struct tunep_option *o = table; o->name && n_known < 128; o++)
        known[n_known++] = o->name;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        size_t i = 0;
        while (i < n_known && strcmp(key, known[i]) != 0)
            i++;
        if (i == n_known)
            return tunep_config_unknown_key(ctx, path, key, known, n_known);
    }
    json_object_foreach((json_t *)obj, key, v) {
        const struct tunep_option *o = table;
        while (o->name && strcmp(o->name, key) != 0)
            o++;
        if (!o->name)
            continue; /* an extra key: the caller's */
        tunep_cfgpath_push_key(path, key);
        tune_status st = read_value(ctx, path, v, o, cfg);
        tunep_cfgpath_pop(path);
        if (st)
            return st;
    }
    return TUNE_OK;
}

tune_status tunep_config_opt_error(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                   const struct tunep_opt_error *e)
{
    if (e->code != TUNE_ECONFIG)
        return tunep_error_set(ctx->err, e->code, "%s", e->text);
    /* "model", "argv[0]", "env.PATH": keys split at '.', indexes in brackets. */
    int depth = path->depth;
    char keys[8][sizeof e->path];
    int n_keys = 0;
    for (const char *p = e->path; *p;) {
        if (*p == '.') {
            p++;
        } else if (*p == '[') {
            char *end;
            tunep_cfgpath_push_index(path, strtol(p + 1, &end, 10));
            p = *end == ']' ? end + 1 : end;
        } else if (n_keys < 8) {
            size_t n = strcspn(p, ".[");
            snprintf(keys[n_keys], sizeof keys[n_keys], "%.*s", (int)n, p);
            tunep_cfgpath_push_key(path, keys[n_keys++]);
            p += n;
        } else {
            break;
        }
    }
    char text[sizeof e->text];
    snprintf(text, sizeof text, "%s", e->text);
    tune_status st = tunep_cfg_error(ctx, path, e->at_key, "%s", text);
    while (path->depth > depth)
        tunep_cfgpath_pop(path);
    return st;
}

tune_status tunep_config_read_option(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                     const json_t *v, const struct tunep_option *o, void *cfg)
{
    return read_value(ctx, path, v, o, cfg);
}
