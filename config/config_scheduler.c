/*
 * config_scheduler.c - parses the "scheduler" section with the option table
 * of the scheduler its "type" names (schedulers/scheduler.h): the row's
 * readers check each value, the row's check() the rules across keys (for
 * ASHA, Ray's asserts grace_period <= max_t and the rung limit). Every error
 * names the key path and points at the offending key (unknown keys, keys of
 * another scheduler) or value (wrong type, broken rule), as jansson's own
 * errors do. Keys are visited in document order, so the first bad key in the
 * text is the one reported. Nothing here knows a particular scheduler.
 *
 * Mutation lists (TUNEP_OPT_MUTATIONS, PBT's hyperparam_mutations) are read
 * here too: they reuse config_space.c for distributions, so they take
 * exactly param_space's primitives and rules. Whether each mutated key is a
 * parameter can only be checked once param_space is parsed, which may come
 * later in the document: tunep_config_resolve_scheduler() does that.
 */
#include "config/config_scheduler.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config/config_options.h"
#include "config/config_space.h"

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

/* ---- mutation lists ------------------------------------------------------------ */

/* What walk_mutations() does at each leaf: build the mutation, or look its name up. */
struct mwalk {
    int resolve;             /* 0: parse into muts; 1: set each mutation's param index */
    const tune_space *space; /* resolve */
    struct tunep_mutation *muts;
    size_t n, cap;
    char name[TUNEP_SPACE_MAX_NAME + 1];
    size_t name_len;
};

/* The name of a distribution primitive, or NULL: the keys config_space.c understands. */
static int is_primitive(const char *key)
{
    for (int d = TUNEP_DIST_UNIFORM; d <= TUNEP_DIST_GRID; d++)
        if (strcmp(key, tunep_dist_name((enum tunep_dist)d)) == 0)
            return 1;
    return 0;
}

/* "'lrr' is not a parameter of param_space (did you mean 'lr'?)" at the key. */
static tune_status not_a_param(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                               const char *key, const struct mwalk *w)
{
    const tune_space *sp = w->space;
    const char *best = NULL;
    size_t best_d = 3; /* only close matches, as for unknown keys */
    for (size_t i = 0; i < sp->n; i++) {
        size_t d = tunep_edit_distance(w->name, sp->params[i].name);
        if (d < best_d) {
            best_d = d;
            best = sp->params[i].name;
        }
    }
    if (best)
        return key_error(ctx, path, key, 1,
                         "'%s' is not a parameter of param_space (did you mean '%s'?)", w->name,
                         best);
    if (sp->n == 0)
        return key_error(ctx, path, key, 1, "'%s' is not a parameter of param_space (it has none)",
                         w->name);
    struct tunep_buf list;
    tunep_buf_init(&list);
    for (size_t i = 0; i < sp->n && i < 20; i++)
        tunep_buf_printf(&list, "%s%s", i ? ", " : "", sp->params[i].name);
    if (sp->n > 20)
        tunep_buf_puts(&list, ", ...");
    tune_status st =
        key_error(ctx, path, key, 1, "'%s' is not a parameter of param_space (it has: %s)", w->name,
                  list.data ? list.data : "");
    tunep_buf_done(&list);
    return st;
}

static tune_status mut_nomem(const struct tunep_cfgctx *ctx)
{
    return tunep_error_set_at(ctx->err, TUNE_ENOMEM, ctx->source, 0, 0,
                              "out of memory parsing hyperparam_mutations");
}

/* A list of values: Ray shifts to a neighbour or resamples from it. */
static tune_status parse_list(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                              const char *key, const json_t *arr, struct tunep_mutation *m)
{
    size_t n = json_array_size(arr);
    if (n == 0)
        return key_error(ctx, path, key, 0, "the list of values must not be empty");
    if (n > TUNEP_SPACE_MAX_CHOICES)
        return key_error(ctx, path, key, 0, "at most %d values", TUNEP_SPACE_MAX_CHOICES);
    m->is_list = 1;
    m->values = tunep_calloc(n, sizeof *m->values);
    if (!m->values)
        return mut_nomem(ctx);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(arr, i); /* borrowed */
        struct tunep_value *out = &m->values[i];
        if (json_is_integer(v)) {
            out->type = TUNEP_V_INT;
            out->u.i = (int64_t)json_integer_value(v);
        } else if (json_is_real(v) && isfinite(json_real_value(v))) {
            out->type = TUNEP_V_DOUBLE;
            out->u.d = json_real_value(v);
        } else if (json_is_boolean(v)) {
            out->type = TUNEP_V_BOOL;
            out->u.b = json_is_true(v);
        } else if (json_is_string(v)) {
            out->type = TUNEP_V_STRING;
            out->u.s = tunep_strdup(json_string_value(v));
            if (!out->u.s) {
                out->type = TUNEP_V_INT;
                m->n_values = i;
                return mut_nomem(ctx);
            }
        } else {
            m->n_values = i;
            tunep_cfgpath_push_key(path, key);
            tunep_cfgpath_push_index(path, (long)i);
            tune_status st = tunep_cfg_error(ctx, path, 0, "expected a number, string or boolean");
            tunep_cfgpath_pop(path);
            tunep_cfgpath_pop(path);
            return st;
        }
    }
    m->n_values = n;
    return TUNE_OK;
}

/* A distribution, parsed by config_space.c as if it were param_space's entry `key`. */
static tune_status parse_dist(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                              const char *key, const json_t *v, struct tunep_mutation *m)
{
    tune_status st = tune_space_new(&m->dist, ctx->err);
    if (st)
        return st;
    /* {key: v} read at the object holding key: errors land on the real text. */
    json_t *one = json_object(); /* new ref */
    if (!one || json_object_set(one, key, unconst(v))) {
        json_decref(one);
        return mut_nomem(ctx);
    }
    st = tunep_config_parse_space(ctx, path, one, m->dist);
    json_decref(one);
    return st;
}

static tune_status walk_mutations(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                  const json_t *obj, struct mwalk *w)
{
    json_t *o = unconst(obj);
    size_t len0 = w->name_len;
    if (json_object_size(obj) == 0)
        return tunep_cfg_error(ctx, path, 0,
                               "expected at least one parameter to mutate, e.g. "
                               "{\"lr\": {\"loguniform\": [1e-5, 1e-1]}}");
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
        const char *key = json_object_iter_key(it);   /* borrowed */
        const json_t *v = json_object_iter_value(it); /* borrowed */
        size_t klen = strlen(key), need = len0 + (len0 ? 1 : 0) + klen;
        if (klen == 0)
            return key_error(ctx, path, key, 1, "parameter name is empty");
        if (need > TUNEP_SPACE_MAX_NAME)
            return key_error(ctx, path, key, 1, "parameter name is longer than %d bytes",
                             TUNEP_SPACE_MAX_NAME);
        if (len0)
            w->name[len0] = '/';
        memcpy(w->name + need - klen, key, klen + 1);
        w->name_len = need;

        int group = json_is_object(v) &&
                    !(json_object_size(v) == 1 &&
                      is_primitive(json_object_iter_key(json_object_iter(unconst(v)))));
        tune_status st = TUNE_OK;
        if (group) {
            if (path->depth >= 12) {
                st = key_error(ctx, path, key, 1, "parameter groups nest too deeply");
            } else {
                tunep_cfgpath_push_key(path, key);
                st = walk_mutations(ctx, path, v, w);
                tunep_cfgpath_pop(path);
            }
        } else if (w->resolve) {
            long idx = tunep_space_find(w->space, w->name);
            if (idx < 0)
                st = not_a_param(ctx, path, key, w);
            else if (w->n == w->cap)
                st = tunep_error_set(ctx->err, TUNE_EINTERNAL, "hyperparam_mutations changed");
            else
                w->muts[w->n++].param = (size_t)idx;
        } else if (!json_is_array(v) && !json_is_object(v)) {
            st = key_error(ctx, path, key, 0,
                           "expected a list of values or a distribution such as "
                           "{\"loguniform\": [1e-5, 1e-1]}");
        } else if (json_is_object(v) &&
                   strcmp(json_object_iter_key(json_object_iter(unconst(v))), "grid_search") == 0) {
            st = key_error(ctx, path, key, 0,
                           "grid_search cannot be mutated: give its values as a list");
        } else {
            for (size_t i = 0; i < w->n && !st; i++)
                if (strcmp(w->muts[i].name, w->name) == 0)
                    st = key_error(ctx, path, key, 1, "'%s' is mutated twice", w->name);
            if (!st && w->n == w->cap) {
                size_t cap = w->cap ? w->cap * 2 : 8;
                struct tunep_mutation *m =
                    tunep_realloc(w->muts, w->cap * sizeof *m, cap * sizeof *m);
                if (!m) {
                    st = mut_nomem(ctx);
                } else {
                    w->muts = m;
                    w->cap = cap;
                }
            }
            if (!st) {
                struct tunep_mutation *m = &w->muts[w->n++];
                memset(m, 0, sizeof *m);
                m->param = SIZE_MAX;
                if (!(m->name = tunep_strdup(w->name)))
                    st = mut_nomem(ctx);
                else if (json_is_array(v))
                    st = parse_list(ctx, path, key, v, m);
                else
                    st = parse_dist(ctx, path, key, v, m);
            }
        }
        w->name_len = len0;
        w->name[len0] = '\0';
        if (st)
            return st;
    }
    return TUNE_OK;
}

tune_status tunep_config_read_mutations(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                        const json_t *v, const char *expected,
                                        struct tunep_mutations *m)
{
    if (!json_is_object(v))
        return tunep_cfg_error(ctx, path, 0, "expected %s", expected ? expected : "an object");
    struct mwalk w;
    memset(&w, 0, sizeof w);
    tune_status st = walk_mutations(ctx, path, v, &w);
    if (st) {
        tunep_mutations_free(w.muts, w.n);
        return st;
    }
    if (m->free)
        m->free(m->v, m->n);
    m->v = w.muts;
    m->n = w.n;
    m->free = tunep_mutations_free;
    return TUNE_OK;
}

/* Each mutation's parameter index from its name in space, or the error at its key. */
static tune_status resolve_mutations(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                     const json_t *v, const tune_space *space,
                                     struct tunep_mutations *m)
{
    struct mwalk w;
    memset(&w, 0, sizeof w);
    w.resolve = 1;
    w.space = space;
    w.muts = m->v;
    w.cap = m->n;
    tune_status st = walk_mutations(ctx, path, v, &w);
    if (st == TUNE_OK && w.n != m->n)
        return tunep_error_set(ctx->err, TUNE_EINTERNAL, "mutation list changed");
    return st;
}

/* ---- the section ----------------------------------------------------------------- */

/* The top-level row of table named key, and its index; NULL when there is none. */
static const struct tunep_option *find_row(const struct tunep_option *table, const char *key,
                                           size_t *ret_index)
{
    for (size_t i = 0; table && table[i].name; i++)
        if (strcmp(table[i].name, key) == 0) {
            *ret_index = i;
            return &table[i];
        }
    return NULL;
}

/* "\"asha\" or \"hyperband\"": the schedulers that take key, for "not an option of" errors. */
static void types_taking(const char *key, struct tunep_buf *buf)
{
    size_t total = 0, count = 0, i;
    for (size_t t = 0; t < tunep_scheduler_count(); t++)
        total += find_row(tunep_scheduler_at(t)->options, key, &i) != NULL;
    for (size_t t = 0; t < tunep_scheduler_count(); t++) {
        const struct tunep_scheduler_type *ty = tunep_scheduler_at(t);
        if (!find_row(ty->options, key, &i))
            continue;
        const char *sep = count == 0 ? "" : count + 1 == total ? " or " : ", ";
        tunep_buf_printf(buf, "%s\"%s\"", sep, ty->name);
        count++;
    }
}

/* "unknown scheduler 'x' (expected one of: fifo, asha, ...)": the registered names. */
static tune_status unknown_type(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                const char *name)
{
    struct tunep_buf list;
    tunep_buf_init(&list);
    for (size_t t = 0; t < tunep_scheduler_count(); t++)
        tunep_buf_printf(&list, "%s%s", t ? ", " : "", tunep_scheduler_at(t)->name);
    tune_status st = key_error(ctx, path, "type", 0, "unknown scheduler '%s' (expected one of: %s)",
                               name, list.data ? list.data : "");
    tunep_buf_done(&list);
    return st;
}

/* A key that the chosen scheduler does not take: another's option, or a plain unknown key. */
static tune_status not_an_option(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                 const struct tunep_scheduler_type *ty, const char *key)
{
    struct tunep_buf others;
    tunep_buf_init(&others);
    types_taking(key, &others);
    tune_status st;
    if (others.len > 0) {
        st = key_error(ctx, path, key, 1, "not an option of the %s scheduler (set \"type\": %s)",
                       ty->name, others.data);
    } else {
        /* The list the message gives: "type", then the scheduler's keys in table order. */
        const char *known[64];
        size_t n_known = 0;
        known[n_known++] = "type";
        for (size_t i = 0; ty->options && ty->options[i].name && n_known < 64; i++)
            known[n_known++] = ty->options[i].name;
        st = tunep_config_unknown_key(ctx, path, key, known, n_known);
    }
    tunep_buf_done(&others);
    return st;
}

tune_status tunep_config_parse_scheduler(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                         const json_t *obj, struct tunep_scheduler_config *out)
{
    if (!json_is_object(obj))
        return tunep_cfg_error(ctx, path, 0, "expected an object");

    const struct tunep_scheduler_type *ty = tunep_scheduler_type_default();
    const json_t *type = json_object_get(obj, "type"); /* borrowed */
    if (type) {
        if (!json_is_string(type))
            return key_error(ctx, path, "type", 0, "expected a string");
        ty = tunep_scheduler_find(json_string_value(type) /* borrowed */);
        if (!ty)
            return unknown_type(ctx, path, json_string_value(type));
    }

    struct tunep_scheduler_config c;
    tune_status st = tunep_scheduler_config_init(&c, ty, NULL);
    if (st)
        return tunep_error_set_at(ctx->err, st, ctx->source, 0, 0,
                                  "out of memory parsing the scheduler");
    uint64_t given = 0;
    json_t *o = unconst(obj);
    for (void *it = json_object_iter(o); it && !st; it = json_object_iter_next(o, it)) {
        const char *key = json_object_iter_key(it);   /* borrowed */
        const json_t *v = json_object_iter_value(it); /* borrowed */
        if (strcmp(key, "type") == 0)
            continue;
        size_t i = 0;
        const struct tunep_option *row = find_row(ty->options, key, &i);
        if (!row) {
            st = not_an_option(ctx, path, ty, key);
            break;
        }
        tunep_cfgpath_push_key(path, key);
        st = tunep_config_read_option(ctx, path, v, row, c.cfg);
        tunep_cfgpath_pop(path);
        given |= (uint64_t)1 << i;
    }
    if (!st && ty->check) {
        struct tunep_opt_error e;
        memset(&e, 0, sizeof e);
        if (ty->check(c.cfg, given, &e) != TUNE_OK)
            st = tunep_config_opt_error(ctx, path, &e);
    }
    if (st) {
        tunep_scheduler_config_done(&c);
        return st;
    }
    *out = c;
    return TUNE_OK;
}

tune_status tunep_config_resolve_scheduler(const struct tunep_cfgctx *ctx,
                                           struct tunep_cfgpath *path, const json_t *obj,
                                           const tune_space *space,
                                           struct tunep_scheduler_config *c)
{
    const struct tunep_option *table = c->type->options;
    if (!obj || !space || !table)
        return TUNE_OK;
    for (size_t i = 0; table[i].name; i++) {
        if (table[i].type != TUNEP_OPT_MUTATIONS)
            continue;
        const json_t *v = json_object_get(obj, table[i].name); /* borrowed */
        if (!v)
            continue; /* nothing was read: the row's check() said whether that is fine */
        int depth = path->depth;
        tunep_cfgpath_push_key(path, table[i].name);
        tune_status st = resolve_mutations(
            ctx, path, v, space, (struct tunep_mutations *)((char *)c->cfg + table[i].offset));
        path->depth = depth;
        if (st)
            return st;
    }
    return TUNE_OK;
}
