/*
 * config_space.c - parses param_space entries (Ray Tune's primitives written
 * as JSON) into a tune_space; the only search-space code that sees jansson.
 *
 * Forms: {"loguniform": [1e-6, 1e-4]} (extra elements follow Ray's argument
 * order: q, then base), {"choice": [...]}, {"grid_search": [...]}, a scalar
 * for a constant, or any other object for a group whose keys are flattened
 * to "group/key" (document order; jansson keeps insertion order). The bound
 * rules themselves live in search/space.c; this file maps a failed rule back
 * to the JSON element at fault so errors read "file:line:col: param_space.lr:
 * message". Every call leaves the space as it found it when it fails.
 *
 * A choice whose options are objects is a conditional branch (Ray's form):
 * {"opt": {"choice": [{"name": "sgd", "momentum": {...}}, {"name": "adam",
 * ...}]}}. The first key that every option holds with a different constant
 * ("name") becomes the selector, a choice over those constants named
 * "opt/name"; every other member of an option is flattened under "opt/" and
 * present only when the selector has that option's value. A member that
 * several options hold with the same distribution is one parameter present
 * in each of them. Options nest: an option's member may itself be a choice of
 * objects, which then depends on the outer selector.
 */
#include "config/config_space.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

/* Options of one choice of objects (each is a branch of parameters, not a value). */
#define MAX_OPTIONS 1000

#define PATH_MAX_DEPTH ((int)(sizeof(((struct tunep_cfgpath *)0)->keys) / sizeof(const char *)))

/* A numeric primitive: its JSON array and what each element means. */
struct prim {
    const char *key;
    enum tunep_dist dist;
    int n_min, n_max;
    int integer; /* bounds and q must be JSON integers */
    enum tunep_arg args[4];
};

/* One primitive per row: clang-format would put every field on its own line. */
/* clang-format off */
#define LO TUNEP_ARG_LOW
#define HI TUNEP_ARG_HIGH
#define Q TUNEP_ARG_Q
#define BASE TUNEP_ARG_BASE
static const struct prim prims[] = {
    {"uniform",     TUNEP_DIST_UNIFORM,     2, 2, 0, {LO, HI}},
    {"quniform",    TUNEP_DIST_QUNIFORM,    3, 3, 0, {LO, HI, Q}},
    {"loguniform",  TUNEP_DIST_LOGUNIFORM,  2, 3, 0, {LO, HI, BASE}},
    {"qloguniform", TUNEP_DIST_QLOGUNIFORM, 3, 4, 0, {LO, HI, Q, BASE}},
    {"randn",       TUNEP_DIST_RANDN,       0, 2, 0, {LO, HI}},
    {"qrandn",      TUNEP_DIST_QRANDN,      3, 3, 0, {LO, HI, Q}},
    {"randint",     TUNEP_DIST_RANDINT,     2, 2, 1, {LO, HI}},
    {"qrandint",    TUNEP_DIST_QRANDINT,    2, 3, 1, {LO, HI, Q}},
    {"lograndint",  TUNEP_DIST_LOGRANDINT,  2, 3, 1, {LO, HI, BASE}},
    {"qlograndint", TUNEP_DIST_QLOGRANDINT, 3, 4, 1, {LO, HI, Q, BASE}},
};
#undef LO
#undef HI
#undef Q
#undef BASE
/* clang-format on */

#define N_PRIMS (sizeof prims / sizeof prims[0])

struct pctx {
    const struct tunep_cfgctx *ctx;
    int api;   /* tune_space_add_json(): messages start with the quoted name, not the path */
    int plain; /* with api: the message names the parameter itself, leave the prefix out */
    tune_space *space;
    size_t name_len;
    char name[TUNEP_SPACE_MAX_NAME + 1]; /* flattened name of the value being parsed */
    /* inside an option of a choice of objects: parameters added now depend on it */
    int cond;
    size_t cond_parent, cond_value;
    size_t last; /* index of the parameter the last add_param() added or joined */
};

static const char *type_name(const json_t *v)
{
    if (!v)
        return "nothing";
    switch (json_typeof(v)) {
        case JSON_OBJECT: return "object";
        case JSON_ARRAY: return "array";
        case JSON_STRING: return "string";
        case JSON_INTEGER:
        case JSON_REAL: return "number";
        case JSON_TRUE:
        case JSON_FALSE: return "boolean";
        case JSON_NULL: return "null";
    }
    return "unknown";
}

/*
 * Reports an error about the parameter whose value is at `path`. The text
 * names the parameter; the position is that of path's value (or key, with
 * at_key), or of element `elem` of primitive `prim` when elem >= 0.
 */
static tune_status perr(const struct pctx *pc, struct tunep_cfgpath *path, int at_key,
                        const char *prim, long elem, const char *fmt, ...) TUNEP_PRINTF(6, 7);

static tune_status perr(const struct pctx *pc, struct tunep_cfgpath *path, int at_key,
                        const char *prim, long elem, const char *fmt, ...)
{
    const struct tunep_cfgctx *ctx = pc->ctx;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!ctx->err)
        return TUNE_ECONFIG;
    int line = 0, col = 0;
    if (pc->api) {
        tunep_json_locate(ctx->text, ctx->len, path, at_key, &line, &col);
        if (pc->plain)
            tunep_error_set_at(ctx->err, TUNE_ECONFIG, ctx->source, line, col, "%s", msg);
        else
            tunep_error_set_at(ctx->err, TUNE_ECONFIG, ctx->source, line, col, "'%s': %s", pc->name,
                               msg);
    } else {
        tunep_cfg_error(ctx, path, at_key, "%s", msg);
    }
    if (prim) {
        int depth = path->depth;
        tunep_cfgpath_push_key(path, prim);
        if (elem >= 0)
            tunep_cfgpath_push_index(path, elem);
        if (path->depth <= PATH_MAX_DEPTH &&
            tunep_json_locate(ctx->text, ctx->len, path, 0, &line, &col) == 0) {
            ctx->err->line = line;
            ctx->err->column = col;
        }
        path->depth = depth;
    }
    return TUNE_ECONFIG;
}

static tune_status nomem(const struct pctx *pc)
{
    const struct tunep_cfgctx *ctx = pc->ctx;
    return tunep_error_set_at(ctx->err, TUNE_ENOMEM, ctx->source, 0, 0,
                              "out of memory adding parameter '%s'", pc->name);
}

/*
 * The parameter of an earlier option of the same choice that this name
 * joins (a member several options share), or -1.
 */
static long shared_member(const struct pctx *pc)
{
    if (!pc->cond)
        return -1;
    long i = tunep_space_find(pc->space, pc->name);
    if (i < 0)
        return -1;
    const struct tunep_param *q = &pc->space->params[i];
    return q->n_cond > 0 && q->cond_parent == pc->cond_parent ? i : -1;
}

/* Adds a checked parameter; name rules were checked at its key by leaf_name_ok(). */
static tune_status add_param(struct pctx *pc, struct tunep_cfgpath *path, struct tunep_param *p,
                             const char *prim)
{
    tune_error e;
    p->name = pc->name;
    long shared = shared_member(pc);
    if (shared >= 0) {
        if (!tunep_param_same_dist(&pc->space->params[shared], p))
            return perr(pc, path, 0, prim, -1,
                        "options of '%s' give '%s' different values or distributions: give it "
                        "another name in one of them",
                        pc->space->params[pc->cond_parent].name, pc->name);
        tune_status st = tunep_space_condition_add(pc->space, (size_t)shared, pc->cond_parent,
                                                   pc->cond_value, &e);
        if (st == TUNE_ENOMEM)
            return nomem(pc);
        if (st)
            return perr(pc, path, 0, prim, -1, "%s", e.text);
        pc->last = (size_t)shared;
        return TUNE_OK;
    }
    if (pc->cond && p->dist == TUNEP_DIST_GRID)
        return perr(pc, path, 0, prim, -1,
                    "grid_search inside an option of a choice is not supported: use choice");
    tune_status st = tunep_space_add(pc->space, p, &e);
    if (st == TUNE_ENOMEM)
        return nomem(pc);
    if (st)
        return perr(pc, path, 0, prim, -1, "%s", e.text);
    pc->last = pc->space->n - 1;
    if (pc->cond) {
        st = tunep_space_condition_add(pc->space, pc->last, pc->cond_parent, pc->cond_value, &e);
        if (st) {
            tunep_space_truncate(pc->space, pc->last);
            return st == TUNE_ENOMEM ? nomem(pc) : perr(pc, path, 0, prim, -1, "%s", e.text);
        }
    }
    if (p->dist == TUNEP_DIST_GRID && tunep_space_grid_size(pc->space, 0, &e) == 0) {
        tunep_space_truncate(pc->space, pc->space->n - 1);
        return perr(pc, path, 0, prim, -1, "%s", e.text);
    }
    return TUNE_OK;
}

/* Rules on the flattened name of a leaf, reported at its key. */
static tune_status leaf_name_ok(struct pctx *pc, struct tunep_cfgpath *path)
{
    int at_key = path->depth > 0;
    tune_status st = TUNE_OK;
    pc->plain = 1;
    tune_error e;
    if (pc->name_len == 0)
        st = perr(pc, path, at_key, NULL, -1, "parameter name is empty");
    else if (shared_member(pc) < 0 && tunep_space_name_check(pc->space, pc->name, &e))
        st = perr(pc, path, at_key, NULL, -1, "%s", e.text);
    else if (pc->space->n >= TUNEP_SPACE_MAX_PARAMS)
        st = perr(pc, path, at_key, NULL, -1, "a space holds at most %d parameters",
                  TUNEP_SPACE_MAX_PARAMS);
    pc->plain = 0;
    return st;
}

/* A JSON scalar as a value; strings are borrowed from v. Returns -1 for anything else. */
static int scalar_value(const json_t *v, struct tunep_value *out)
{
    switch (json_typeof(v)) {
        case JSON_INTEGER:
            out->type = TUNEP_V_INT;
            out->u.i = (int64_t)json_integer_value(v);
            return 0;
        case JSON_REAL:
            out->type = TUNEP_V_DOUBLE;
            out->u.d = json_real_value(v);
            return 0;
        case JSON_STRING:
            out->type = TUNEP_V_STRING;
            out->u.s = json_string_value(v);
            return 0;
        case JSON_TRUE:
        case JSON_FALSE:
            out->type = TUNEP_V_BOOL;
            out->u.b = json_is_true(v);
            return 0;
        default: return -1;
    }
}

static tune_status parse_values(struct pctx *pc, struct tunep_cfgpath *path, const char *key,
                                enum tunep_dist dist, const json_t *arr)
{
    struct tunep_param p;
    tune_error e;
    enum tunep_arg arg;
    memset(&p, 0, sizeof p);
    p.dist = dist;
    if (!json_is_array(arr))
        return perr(pc, path, 0, key, -1, "%s takes a list of values, got %s", key, type_name(arr));
    p.n_values = json_array_size(arr);
    if (p.n_values > 0 && p.n_values <= TUNEP_SPACE_MAX_CHOICES) {
        p.values = tunep_calloc(p.n_values, sizeof *p.values);
        if (!p.values)
            return nomem(pc);
        for (size_t i = 0; i < p.n_values; i++) {
            const json_t *v = json_array_get(arr, i); /* borrowed */
            if (scalar_value(v, &p.values[i])) {
                tunep_free(p.values);
                return perr(pc, path, 0, key, (long)i,
                            "%s values must be numbers, strings or booleans, got %s", key,
                            type_name(v));
            }
        }
    }
    p.name = pc->name;
    tune_status st = tunep_space_check(&p, &arg, &e);
    if (st == TUNE_OK)
        st = add_param(pc, path, &p, key);
    else
        st = perr(pc, path, 0, key, -1, "%s", e.text);
    tunep_free(p.values);
    return st;
}

/* "[low, high] or [low, high, base]": the accepted arrays, for arity errors. */
static void usage(const struct prim *pr, char *buf, size_t size)
{
    int normal = pr->dist == TUNEP_DIST_RANDN || pr->dist == TUNEP_DIST_QRANDN;
    size_t n = 0;
    buf[0] = '\0';
    for (int k = pr->n_min; k <= pr->n_max && n < size; k++) {
        const char *sep = k == pr->n_min ? "" : k == pr->n_max ? " or " : ", ";
        n += (size_t)snprintf(buf + n, size - n, "%s[", sep);
        for (int i = 0; i < k && n < size; i++) {
            const char *arg = "";
            switch (pr->args[i]) {
                case TUNEP_ARG_LOW: arg = normal ? "mean" : "low"; break;
                case TUNEP_ARG_HIGH: arg = normal ? "sd" : "high"; break;
                case TUNEP_ARG_Q: arg = "q"; break;
                case TUNEP_ARG_BASE: arg = "base"; break;
                case TUNEP_ARG_NONE:
                case TUNEP_ARG_VALUES: break;
            }
            n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "", arg);
        }
        if (n < size)
            n += (size_t)snprintf(buf + n, size - n, "]");
    }
}

static tune_status parse_numeric(struct pctx *pc, struct tunep_cfgpath *path, const struct prim *pr,
                                 const json_t *arr)
{
    struct tunep_param p;
    tune_error e;
    enum tunep_arg arg;
    const char *key = pr->key;
    memset(&p, 0, sizeof p);
    p.dist = pr->dist;
    p.name = pc->name;
    p.base = 10.0; /* Ray's default */
    p.hi = 1.0;    /* randn's default sd (lo, the mean, defaults to 0) */
    p.q = 1.0;
    p.iq = 1; /* qrandint's default q */
    if (!json_is_array(arr) || (int)json_array_size(arr) < pr->n_min ||
        json_array_size(arr) > (size_t)pr->n_max) {
        char forms[128];
        usage(pr, forms, sizeof forms);
        return perr(pc, path, 0, key, -1, "%s takes %s", key, forms);
    }
    int n = (int)json_array_size(arr);
    for (int i = 0; i < n; i++) {
        const json_t *v = json_array_get(arr, (size_t)i); /* borrowed */
        enum tunep_arg a = pr->args[i];
        if (pr->integer && a != TUNEP_ARG_BASE) {
            if (!json_is_integer(v))
                return perr(pc, path, 0, key, i,
                            a == TUNEP_ARG_Q ? "%s needs an integer q" : "%s needs integer bounds",
                            key);
            int64_t x = (int64_t)json_integer_value(v);
            if (a == TUNEP_ARG_LOW)
                p.ilo = x;
            else if (a == TUNEP_ARG_HIGH)
                p.ihi = x;
            else
                p.iq = x;
            continue;
        }
        if (!json_is_number(v))
            return perr(pc, path, 0, key, i, "%s: expected a number, got %s", key, type_name(v));
        double x = json_number_value(v);
        switch (a) {
            case TUNEP_ARG_LOW: p.lo = x; break;
            case TUNEP_ARG_HIGH: p.hi = x; break;
            case TUNEP_ARG_Q: p.q = x; break;
            case TUNEP_ARG_BASE: p.base = x; break;
            case TUNEP_ARG_NONE:
            case TUNEP_ARG_VALUES: break;
        }
    }
    if (tunep_space_check(&p, &arg, &e)) {
        long elem = -1;
        for (int i = 0; i < n; i++)
            if (pr->args[i] == arg)
                elem = i;
        return perr(pc, path, 0, key, elem, "%s", e.text);
    }
    return add_param(pc, path, &p, key);
}

static tune_status parse_value(struct pctx *pc, struct tunep_cfgpath *path, const json_t *v);

/* One member `key` of a group (or of an option), flattened under the group's name. */
static tune_status parse_member(struct pctx *pc, struct tunep_cfgpath *path, const char *key,
                                const json_t *v)
{
    size_t len0 = pc->name_len, klen = strlen(key);
    tune_status st;
    tunep_cfgpath_push_key(path, key);
    if (path->depth > PATH_MAX_DEPTH - 2) { /* room for a primitive's key and index */
        st = perr(pc, path, 1, NULL, -1, "parameter groups nest too deeply");
        tunep_cfgpath_pop(path);
        return st;
    }
    if (klen == 0) {
        st = perr(pc, path, 1, NULL, -1, "parameter name is empty");
        tunep_cfgpath_pop(path);
        return st;
    }
    size_t need = len0 + (len0 ? 1 : 0) + klen;
    if (need > TUNEP_SPACE_MAX_NAME) {
        st = perr(pc, path, 1, NULL, -1, "parameter name is longer than %d bytes",
                  TUNEP_SPACE_MAX_NAME);
        tunep_cfgpath_pop(path);
        return st;
    }
    if (len0)
        pc->name[len0] = '/';
    memcpy(pc->name + need - klen, key, klen + 1);
    pc->name_len = need;
    st = parse_value(pc, path, v);
    tunep_cfgpath_pop(path);
    pc->name_len = len0;
    pc->name[len0] = '\0';
    return st;
}

/* Members of a group object, each flattened under the group's name. */
static tune_status parse_group(struct pctx *pc, struct tunep_cfgpath *path, const json_t *obj)
{
    json_t *o = (json_t *)(uintptr_t)obj; /* jansson's iterators take non-const; read only */
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
        tune_status st = parse_member(pc, path, json_object_iter_key(it),
                                      json_object_iter_value(it) /* borrowed */);
        if (st)
            return st;
    }
    return TUNE_OK;
}

/*
 * The selector of a choice of objects: the first key of the first option that
 * every option holds with a scalar value, each different. NULL when none.
 */
static const char *selector_key(const json_t *arr)
{
    const json_t *first = json_array_get(arr, 0);
    json_t *o = (json_t *)(uintptr_t)first;
    size_t n = json_array_size(arr);
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
        const char *key = json_object_iter_key(it);
        int ok = 1;
        for (size_t a = 0; a < n && ok; a++) {
            struct tunep_value va, vb;
            const json_t *x = json_object_get(json_array_get(arr, a), key);
            ok = x && scalar_value(x, &va) == 0;
            for (size_t b = 0; b < a && ok; b++) {
                scalar_value(json_object_get(json_array_get(arr, b), key), &vb);
                ok = !tunep_value_equal(&va, &vb);
            }
        }
        if (ok)
            return key;
    }
    return NULL;
}

/* A choice whose options are objects: a selector, then each option's members. */
static tune_status parse_options(struct pctx *pc, struct tunep_cfgpath *path, const json_t *arr)
{
    size_t n = json_array_size(arr);
    for (size_t k = 0; k < n; k++)
        if (!json_is_object(json_array_get(arr, k)))
            return perr(pc, path, 0, "choice", (long)k,
                        "choice mixes objects and other values: make every option an object "
                        "(conditional parameters) or none");
    if (n > MAX_OPTIONS) /* selector_key() compares every pair */
        return perr(pc, path, 0, "choice", -1,
                    "a choice of objects has %zu options, more than the limit of %d", n,
                    MAX_OPTIONS);
    const char *key = selector_key(arr);
    if (!key)
        return perr(pc, path, 0, "choice", -1,
                    "each option of a choice of objects needs a key that names it with a "
                    "different constant in each, such as \"name\": \"sgd\" and \"name\": \"adam\"");
    /* The selector: a choice over the options' constants, named after the key. */
    struct tunep_param p;
    memset(&p, 0, sizeof p);
    p.dist = TUNEP_DIST_CHOICE;
    p.n_values = n;
    p.values = tunep_calloc(n, sizeof *p.values);
    if (!p.values)
        return nomem(pc);
    for (size_t k = 0; k < n; k++)
        scalar_value(json_object_get(json_array_get(arr, k), key), &p.values[k]);
    size_t len0 = pc->name_len, klen = strlen(key);
    size_t need = len0 + (len0 ? 1 : 0) + klen;
    tune_status st = TUNE_OK;
    tunep_cfgpath_push_key(path, "choice");
    if (need > TUNEP_SPACE_MAX_NAME) {
        st = perr(pc, path, 0, NULL, -1, "parameter name is longer than %d bytes",
                  TUNEP_SPACE_MAX_NAME);
    } else {
        if (len0)
            pc->name[len0] = '/';
        memcpy(pc->name + need - klen, key, klen + 1);
        pc->name_len = need;
        st = leaf_name_ok(pc, path);
        if (!st)
            st = add_param(pc, path, &p, NULL);
        pc->name_len = len0;
        pc->name[len0] = '\0';
    }
    tunep_free(p.values);
    size_t selector = pc->last;
    int cond0 = pc->cond;
    size_t parent0 = pc->cond_parent, value0 = pc->cond_value;
    for (size_t k = 0; k < n && !st; k++) {
        json_t *o = json_array_get(arr, k); /* borrowed */
        tunep_cfgpath_push_index(path, (long)k);
        pc->cond = 1;
        pc->cond_parent = selector;
        pc->cond_value = k;
        for (void *it = json_object_iter(o); it && !st; it = json_object_iter_next(o, it))
            if (strcmp(json_object_iter_key(it), key) != 0)
                st = parse_member(pc, path, json_object_iter_key(it), json_object_iter_value(it));
        tunep_cfgpath_pop(path);
    }
    pc->cond = cond0;
    pc->cond_parent = parent0;
    pc->cond_value = value0;
    tunep_cfgpath_pop(path);
    return st;
}

static tune_status parse_value(struct pctx *pc, struct tunep_cfgpath *path, const json_t *v)
{
    if (json_is_object(v)) {
        if (json_object_size(v) == 1) {
            json_t *o = (json_t *)(uintptr_t)v;
            void *it = json_object_iter(o);
            const char *key = json_object_iter_key(it);
            const json_t *arg = json_object_iter_value(it); /* borrowed */
            for (size_t i = 0; i < N_PRIMS; i++)
                if (strcmp(key, prims[i].key) == 0) {
                    tune_status st = leaf_name_ok(pc, path);
                    return st ? st : parse_numeric(pc, path, &prims[i], arg);
                }
            if (strcmp(key, "choice") == 0 && json_is_array(arg) && json_array_size(arg) > 0 &&
                json_is_object(json_array_get(arg, 0)))
                return parse_options(pc, path, arg);
            if (strcmp(key, "grid_search") == 0 && json_is_array(arg) && json_array_size(arg) > 0 &&
                json_is_object(json_array_get(arg, 0)))
                return perr(pc, path, 0, key, 0,
                            "grid_search over objects is not supported: use choice, which makes "
                            "each object's members conditional parameters");
            if (strcmp(key, "choice") == 0 || strcmp(key, "grid_search") == 0) {
                tune_status st = leaf_name_ok(pc, path);
                if (st)
                    return st;
                return parse_values(pc, path, key,
                                    key[0] == 'c' ? TUNEP_DIST_CHOICE : TUNEP_DIST_GRID, arg);
            }
        }
        if (json_object_size(v) == 0)
            return perr(pc, path, 0, NULL, -1,
                        "empty object: expected parameters or a primitive such as "
                        "{\"choice\": [...]}");
        return parse_group(pc, path, v);
    }
    if (json_is_array(v))
        return perr(pc, path, 0, NULL, -1,
                    "expected a number, string, boolean, object or primitive such as "
                    "{\"choice\": [...]}");
    if (json_is_null(v))
        return perr(pc, path, 0, NULL, -1, "null is not a valid parameter value");
    struct tunep_param p;
    memset(&p, 0, sizeof p);
    p.dist = TUNEP_DIST_CONST;
    p.n_values = 1;
    struct tunep_value value;
    scalar_value(v, &value);
    p.values = &value;
    tune_status st = leaf_name_ok(pc, path);
    return st ? st : add_param(pc, path, &p, NULL);
}

tune_status tunep_config_parse_space(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                     const struct json_t *param_space, tune_space *space)
{
    if (!ctx || !path || !space)
        return tunep_error_set(ctx ? ctx->err : NULL, TUNE_EINVAL,
                               "ctx, path and space must not be NULL");
    if (!param_space)
        return TUNE_OK;
    struct pctx pc = {.ctx = ctx, .api = 0, .space = space, .name_len = 0};
    pc.name[0] = '\0';
    if (!json_is_object(param_space))
        return tunep_cfg_error(ctx, path, 0, "expected an object of parameters, got %s",
                               type_name(param_space));
    size_t n0 = space->n;
    int depth0 = path->depth;
    tune_status st = parse_group(&pc, path, param_space);
    path->depth = depth0;
    if (st)
        tunep_space_truncate(space, n0);
    return st;
}

tune_status tune_space_add_json(tune_space *s, const char *name, const char *json, tune_error *err)
{
    if (!s || !name || !json)
        return tunep_error_set(err, TUNE_EINVAL, "space, name and json must not be NULL");
    if (strlen(name) > TUNEP_SPACE_MAX_NAME)
        return tunep_error_set(err, TUNE_ECONFIG, "parameter name is longer than %d bytes",
                               TUNEP_SPACE_MAX_NAME);
    json_error_t jerr;
    json_t *root = json_loads(json, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr); /* new ref */
    if (!root)
        return tunep_error_set_at(err, TUNE_ECONFIG, "<string>", jerr.line, jerr.column, "'%s': %s",
                                  name, jerr.text);
    struct tunep_cfgctx ctx = {.text = json, .len = strlen(json), .source = "<string>", .err = err};
    struct tunep_cfgpath path;
    memset(&path, 0, sizeof path);
    struct pctx pc = {.ctx = &ctx, .api = 1, .space = s, .name_len = strlen(name)};
    memcpy(pc.name, name, pc.name_len + 1);
    size_t n0 = s->n;
    tune_status st = parse_value(&pc, &path, root);
    if (st)
        tunep_space_truncate(s, n0);
    json_decref(root);
    return st;
}
