/*
 * config_scheduler.c - parses the "scheduler" section: FIFO, ASHA (Ray's
 * stopping variant or the paper's promotion variant), the median stopping
 * rule, synchronous HyperBand and PBT, with Ray Tune's option names, defaults
 * and checks (AsyncHyperBandScheduler asserts max_t > 0, grace_period > 0,
 * grace_period <= max_t, reduction_factor > 1, brackets > 0; PBT checks
 * 0 <= quantile_fraction <= 0.5 and perturbation_interval > 0). Every error
 * names the key path and points at the offending key (unknown keys, keys of
 * another scheduler) or value (wrong type, broken rule), as jansson's own
 * errors do. Keys are visited in document order, so the first bad key in the
 * text is the one reported.
 *
 * PBT's hyperparam_mutations reuse config_space.c for distributions, so they
 * take exactly param_space's primitives and rules. Whether each mutated key
 * is a parameter can only be checked once param_space is parsed, which may
 * come later in the document: tunep_config_resolve_scheduler() does that.
 */
#include "config/config_scheduler.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config/config_space.h"
#include "schedulers/asha.h"
#include "schedulers/hyperband.h"
#include "schedulers/pbt.h"

static const char *const fifo_keys[] = {"type"};
static const char *const asha_keys[] = {
    "type",     "time_attr",        "max_t",   "grace_period", "reduction_factor",
    "brackets", "stop_last_trials", "variant",
};
static const char *const median_keys[] = {
    "type", "time_attr", "grace_period", "min_samples_required", "min_time_slice", "hard_stop",
};
static const char *const hyperband_keys[] = {
    "type", "time_attr", "max_t", "reduction_factor", "stop_last_trials",
};
static const char *const pbt_keys[] = {
    "type",
    "time_attr",
    "perturbation_interval",
    "burn_in_period",
    "quantile_fraction",
    "resample_probability",
    "perturbation_factors",
    "hyperparam_mutations",
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

struct sched_type {
    const char *name;
    enum tunep_scheduler_type type;
    const char *const *keys;
    size_t n_keys;
};

/* In enum order, so that types[type] is the type's row. */
static const struct sched_type types[] = {
    {"fifo", TUNEP_SCHED_FIFO, fifo_keys, N_OF(fifo_keys)},
    {"asha", TUNEP_SCHED_ASHA, asha_keys, N_OF(asha_keys)},
    {"median_stopping", TUNEP_SCHED_MEDIAN, median_keys, N_OF(median_keys)},
    {"hyperband", TUNEP_SCHED_HYPERBAND, hyperband_keys, N_OF(hyperband_keys)},
    {"pbt", TUNEP_SCHED_PBT, pbt_keys, N_OF(pbt_keys)},
};

/* Ray's class names that users may write instead. */
static const struct {
    const char *alias;
    enum tunep_scheduler_type type;
} aliases[] = {
    {"async_hyperband", TUNEP_SCHED_ASHA},
    {"median_stopping_rule", TUNEP_SCHED_MEDIAN},
    {"population_based_training", TUNEP_SCHED_PBT},
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

/* A number with lo < d (strict) or lo <= d, and d <= hi. */
static tune_status get_range(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                             const char *key, const json_t *v, double lo, int lo_strict, double hi,
                             double *ret)
{
    double d = 0;
    tune_status st = get_number(ctx, path, key, v, &d);
    if (st)
        return st;
    char a[32], b[32];
    tunep_format_double(a, sizeof a, lo);
    tunep_format_double(b, sizeof b, hi);
    if (isinf(hi) && (lo_strict ? !(d > lo) : !(d >= lo)))
        return key_error(ctx, path, key, 0, "must be %s %s", lo_strict ? ">" : ">=", a);
    if (!isinf(hi) && !(d >= lo && d <= hi))
        return key_error(ctx, path, key, 0, "must be between %s and %s", a, b);
    *ret = d;
    return TUNE_OK;
}

static tune_status get_bool(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                            const char *key, const json_t *v, int *ret)
{
    if (!json_is_boolean(v))
        return key_error(ctx, path, key, 0, "expected true or false");
    *ret = json_is_true(v);
    return TUNE_OK;
}

static tune_status get_time_attr(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                 const json_t *v, char out[128])
{
    const char *key = "time_attr";
    if (!json_is_string(v))
        return key_error(ctx, path, key, 0, "expected a string");
    const char *s = json_string_value(v); /* borrowed */
    size_t n = strlen(s);
    if (n == 0)
        return key_error(ctx, path, key, 0, "must not be empty");
    if (n >= 128 || n != json_string_length(v))
        return key_error(ctx, path, key, 0, "must be a name of at most 127 bytes");
    memcpy(out, s, n + 1);
    return TUNE_OK;
}

/* ---- hyperparam_mutations ----------------------------------------------------- */

/* What walk_mutations() does at each leaf: build the mutation, or look its name up. */
struct mwalk {
    int resolve;             /* 0: parse into muts; 1: set each mutation's param index */
    const tune_space *space; /* resolve */
    struct tunep_pbt_mutation *muts;
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
                              const char *key, const json_t *arr, struct tunep_pbt_mutation *m)
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
                              const char *key, const json_t *v, struct tunep_pbt_mutation *m)
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
                struct tunep_pbt_mutation *m =
                    tunep_realloc(w->muts, w->cap * sizeof *m, cap * sizeof *m);
                if (!m) {
                    st = mut_nomem(ctx);
                } else {
                    w->muts = m;
                    w->cap = cap;
                }
            }
            if (!st) {
                struct tunep_pbt_mutation *m = &w->muts[w->n++];
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

/* ---- options ------------------------------------------------------------------ */

/* "\"asha\" or \"hyperband\"": the types that take key, for "not an option of" errors. */
static void types_taking(const char *key, char *buf, size_t size)
{
    size_t n = 0, count = 0, total = 0;
    for (size_t t = 0; t < N_OF(types); t++)
        for (size_t k = 1; k < types[t].n_keys; k++)
            total += strcmp(types[t].keys[k], key) == 0;
    buf[0] = '\0';
    for (size_t t = 0; t < N_OF(types) && n < size; t++) {
        for (size_t k = 1; k < types[t].n_keys; k++) {
            if (strcmp(types[t].keys[k], key) != 0)
                continue;
            const char *sep = count == 0 ? "" : count + 1 == total ? " or " : ", ";
            n += (size_t)snprintf(buf + n, size - n, "%s\"%s\"", sep, types[t].name);
            count++;
        }
    }
}

/* The value of one known key of the chosen type; cross-key rules follow the loop. */
static tune_status parse_key(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                             const char *key, const json_t *v, struct tunep_scheduler_config *c)
{
    struct tunep_asha_config *a = &c->asha;
    struct tunep_median_config *md = &c->median;
    struct tunep_hyperband_config *hb = &c->hyperband;
    struct tunep_pbt_config *pb = &c->pbt;
    enum tunep_scheduler_type type = c->type;
    tune_status st = TUNE_OK;
    double d = 0;
    if (strcmp(key, "time_attr") == 0) {
        char *dst = type == TUNEP_SCHED_ASHA     ? a->time_attr
                    : type == TUNEP_SCHED_MEDIAN ? md->time_attr
                    : type == TUNEP_SCHED_PBT    ? pb->time_attr
                                                 : hb->time_attr;
        st = get_time_attr(ctx, path, v, dst);
    } else if (strcmp(key, "max_t") == 0) {
        st = get_range(ctx, path, key, v, 0, 1, HUGE_VAL, &d);
        *(type == TUNEP_SCHED_ASHA ? &a->max_t : &hb->max_t) = d;
    } else if (strcmp(key, "grace_period") == 0) {
        if (type == TUNEP_SCHED_ASHA)
            st = get_range(ctx, path, key, v, 0, 1, HUGE_VAL, &a->grace_period);
        else
            st = get_range(ctx, path, key, v, 0, 0, HUGE_VAL, &md->grace_period);
    } else if (strcmp(key, "reduction_factor") == 0) {
        st = get_range(ctx, path, key, v, 1, 1, HUGE_VAL, &d);
        *(type == TUNEP_SCHED_ASHA ? &a->reduction_factor : &hb->reduction_factor) = d;
    } else if (strcmp(key, "brackets") == 0) {
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
        st = get_bool(ctx, path, key, v,
                      type == TUNEP_SCHED_ASHA ? &a->stop_last_trials : &hb->stop_last_trials);
    } else if (strcmp(key, "variant") == 0) {
        const char *s = json_is_string(v) ? json_string_value(v) : "";
        if (strcmp(s, "stopping") == 0)
            a->promotion = 0;
        else if (strcmp(s, "promotion") == 0)
            a->promotion = 1;
        else
            st = key_error(ctx, path, key, 0, "expected \"stopping\" or \"promotion\"");
    } else if (strcmp(key, "min_samples_required") == 0) {
        if ((st = get_number(ctx, path, key, v, &d)) != TUNE_OK)
            return st;
        if (d != floor(d))
            return key_error(ctx, path, key, 0, "expected an integer");
        if (d < 1)
            return key_error(ctx, path, key, 0, "must be >= 1");
        if (d > 1e9)
            return key_error(ctx, path, key, 0, "must be at most 1000000000");
        md->min_samples_required = (int)d;
    } else if (strcmp(key, "min_time_slice") == 0) {
        st = get_range(ctx, path, key, v, 0, 0, HUGE_VAL, &md->min_time_slice);
    } else if (strcmp(key, "hard_stop") == 0) {
        st = get_bool(ctx, path, key, v, &md->hard_stop);
    } else if (strcmp(key, "perturbation_interval") == 0) {
        st = get_range(ctx, path, key, v, 0, 1, HUGE_VAL, &pb->perturbation_interval);
    } else if (strcmp(key, "burn_in_period") == 0) {
        st = get_range(ctx, path, key, v, 0, 0, HUGE_VAL, &pb->burn_in_period);
    } else if (strcmp(key, "quantile_fraction") == 0) {
        st = get_range(ctx, path, key, v, 0, 0, 0.5, &pb->quantile_fraction);
    } else if (strcmp(key, "resample_probability") == 0) {
        st = get_range(ctx, path, key, v, 0, 0, 1, &pb->resample_probability);
    } else if (strcmp(key, "perturbation_factors") == 0) {
        if (!json_is_array(v) || json_array_size(v) != 2)
            return key_error(ctx, path, key, 0, "expected two numbers such as [1.2, 0.8]");
        tunep_cfgpath_push_key(path, key);
        for (size_t i = 0; i < 2 && !st; i++) {
            const json_t *e = json_array_get(v, i); /* borrowed */
            tunep_cfgpath_push_index(path, (long)i);
            if (!json_is_number(e) || !isfinite(json_number_value(e)))
                st = tunep_cfg_error(ctx, path, 0, "expected a number");
            else if (!(json_number_value(e) > 0))
                st = tunep_cfg_error(ctx, path, 0, "must be > 0");
            else
                pb->perturbation_factors[i] = json_number_value(e);
            tunep_cfgpath_pop(path);
        }
        tunep_cfgpath_pop(path);
    } else if (strcmp(key, "hyperparam_mutations") == 0) {
        if (!json_is_object(v))
            return key_error(ctx, path, key, 0,
                             "expected an object such as {\"lr\": {\"loguniform\": [1e-5, 1e-1]}, "
                             "\"batch_size\": [16, 32, 64]}");
        struct mwalk w;
        memset(&w, 0, sizeof w);
        tunep_cfgpath_push_key(path, key);
        st = walk_mutations(ctx, path, v, &w);
        tunep_cfgpath_pop(path);
        if (st) {
            tunep_pbt_mutations_free(w.muts, w.n);
            return st;
        }
        tunep_pbt_mutations_free(pb->mutations, pb->n_mutations);
        pb->mutations = w.muts;
        pb->n_mutations = w.n;
    }
    return st;
}

/* Rules across keys: ASHA's grace <= max_t and rung count, HyperBand's band size, PBT's
 * mutations. given: the keys the document set (bit i for keys[i] of the type). */
static tune_status cross_checks(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                const struct tunep_scheduler_config *c, int given_grace,
                                int given_rf)
{
    char buf[32];
    if (c->type == TUNEP_SCHED_ASHA) {
        const struct tunep_asha_config *a = &c->asha;
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
    } else if (c->type == TUNEP_SCHED_HYPERBAND) {
        if (tunep_hyperband_s_max(&c->hyperband) > TUNEP_HYPERBAND_MAX_S)
            return key_error(ctx, path, given_rf ? "reduction_factor" : "max_t", 0,
                             "more than %d brackets: log(max_t) / log(reduction_factor) must be "
                             "< %d",
                             TUNEP_HYPERBAND_MAX_S + 1, TUNEP_HYPERBAND_MAX_S + 1);
    } else if (c->type == TUNEP_SCHED_PBT && c->pbt.n_mutations == 0) {
        return tunep_cfg_error(ctx, path, 0,
                               "pbt needs \"hyperparam_mutations\": the parameters it explores, "
                               "e.g. {\"lr\": {\"loguniform\": [1e-5, 1e-1]}}");
    }
    return TUNE_OK;
}

tune_status tunep_config_parse_scheduler(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                         const json_t *obj, struct tunep_scheduler_config *out)
{
    struct tunep_scheduler_config c;
    tune_status st = TUNE_OK;

    tunep_scheduler_config_default(&c);
    if (!json_is_object(obj))
        return tunep_cfg_error(ctx, path, 0, "expected an object");

    const json_t *type = json_object_get(obj, "type"); /* borrowed */
    if (type) {
        if (!json_is_string(type))
            return key_error(ctx, path, "type", 0, "expected a string");
        const char *name = json_string_value(type); /* borrowed */
        size_t t, n = N_OF(types);
        for (t = 0; t < n; t++)
            if (strcmp(name, types[t].name) == 0)
                break;
        if (t < n) {
            c.type = types[t].type;
        } else {
            size_t i;
            for (i = 0; i < N_OF(aliases); i++)
                if (strcmp(name, aliases[i].alias) == 0)
                    break;
            if (i == N_OF(aliases))
                return key_error(ctx, path, "type", 0,
                                 "unknown scheduler '%s' (expected one of: fifo, asha, "
                                 "median_stopping, hyperband, pbt)",
                                 name);
            c.type = aliases[i].type;
        }
    }
    const struct sched_type *ty = &types[c.type];

    int given_grace = 0, given_rf = 0;
    json_t *o = unconst(obj);
    for (void *it = json_object_iter(o); it && !st; it = json_object_iter_next(o, it)) {
        const char *key = json_object_iter_key(it);   /* borrowed */
        const json_t *v = json_object_iter_value(it); /* borrowed */
        if (strcmp(key, "type") == 0)
            continue;
        size_t i;
        for (i = 1; i < ty->n_keys; i++)
            if (strcmp(key, ty->keys[i]) == 0)
                break;
        if (i == ty->n_keys) {
            char others[128];
            types_taking(key, others, sizeof others);
            if (others[0])
                st = key_error(ctx, path, key, 1,
                               "not an option of the %s scheduler (set \"type\": %s)", ty->name,
                               others);
            else
                st = tunep_config_unknown_key(ctx, path, key, ty->keys, ty->n_keys);
            break;
        }
        st = parse_key(ctx, path, key, v, &c);
        given_grace |= strcmp(key, "grace_period") == 0;
        given_rf |= strcmp(key, "reduction_factor") == 0;
    }
    if (!st)
        st = cross_checks(ctx, path, &c, given_grace, given_rf);
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
    if (c->type != TUNEP_SCHED_PBT || !obj || !space)
        return TUNE_OK;
    const json_t *muts = json_object_get(obj, "hyperparam_mutations"); /* borrowed */
    if (!muts)
        return TUNE_OK; /* parse_scheduler() would have refused */
    struct mwalk w;
    memset(&w, 0, sizeof w);
    w.resolve = 1;
    w.space = space;
    w.muts = c->pbt.mutations;
    w.cap = c->pbt.n_mutations;
    int depth = path->depth;
    tunep_cfgpath_push_key(path, "hyperparam_mutations");
    tune_status st = walk_mutations(ctx, path, muts, &w);
    path->depth = depth;
    if (st == TUNE_OK && w.n != c->pbt.n_mutations)
        return tunep_error_set(ctx->err, TUNE_EINTERNAL, "hyperparam_mutations changed");
    return st;
}
