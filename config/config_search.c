/*
 * config_search.c - parses the "search" section: the algorithm and its
 * options, with Optuna's names and defaults for TPE, and the rules that tie
 * the searcher to the space and the scheduler.
 */
#include "config/config_search.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"

struct algo {
    const char *name;
    enum tunep_search_algo algo;
};

static const struct algo algos[] = {
    {"random", TUNEP_SEARCH_RANDOM}, {"grid", TUNEP_SEARCH_GRID},   {"tpe", TUNEP_SEARCH_TPE},
    {"gp", TUNEP_SEARCH_GP},         {"sobol", TUNEP_SEARCH_SOBOL}, {"lhs", TUNEP_SEARCH_LHS},
    {"bohb", TUNEP_SEARCH_BOHB},     {"nsga2", TUNEP_SEARCH_NSGA2},
};

/* Which algorithms take each option (bit i = algos[i]). */
#define A(x) (1u << (x))
struct option {
    const char *key;
    unsigned algos;
};
static const struct option options[] = {
    {"algorithm", ~0u},
    {"n_startup_trials", A(TUNEP_SEARCH_TPE) | A(TUNEP_SEARCH_GP) | A(TUNEP_SEARCH_BOHB)},
    {"n_ei_candidates", A(TUNEP_SEARCH_TPE) | A(TUNEP_SEARCH_BOHB)},
    {"prior_weight", A(TUNEP_SEARCH_TPE) | A(TUNEP_SEARCH_BOHB)},
    {"consider_endpoints", A(TUNEP_SEARCH_TPE) | A(TUNEP_SEARCH_BOHB)},
    {"multivariate", A(TUNEP_SEARCH_TPE) | A(TUNEP_SEARCH_BOHB)},
    {"constant_liar", A(TUNEP_SEARCH_TPE) | A(TUNEP_SEARCH_BOHB)},
    {"gamma", A(TUNEP_SEARCH_TPE) | A(TUNEP_SEARCH_BOHB)},
    {"weights_below", A(TUNEP_SEARCH_TPE)},
    {"n_candidates", A(TUNEP_SEARCH_GP)},
    {"xi", A(TUNEP_SEARCH_GP)},
    {"scramble", A(TUNEP_SEARCH_SOBOL)},
    {"lhs_samples", A(TUNEP_SEARCH_LHS)},
    {"population_size", A(TUNEP_SEARCH_NSGA2)},
    {"mutation_prob", A(TUNEP_SEARCH_NSGA2)},
    {"crossover_prob", A(TUNEP_SEARCH_NSGA2)},
    {"swapping_prob", A(TUNEP_SEARCH_NSGA2)},
};
#undef A

const char *tunep_search_algo_name(enum tunep_search_algo a)
{
    for (size_t i = 0; i < sizeof algos / sizeof *algos; i++)
        if (algos[i].algo == a)
            return algos[i].name;
    return "unknown";
}

/* The value of option key for c's algorithm, as the report prints it. */
static void option_value(const struct tunep_config *c, const char *key, struct tunep_buf *out)
{
    int is_tpe = c->search == TUNEP_SEARCH_TPE || c->search == TUNEP_SEARCH_BOHB;
    char num[40];
    num[0] = 0;
    if (strcmp(key, "n_startup_trials") == 0)
        tunep_buf_printf(out, "%d", is_tpe ? c->tpe.n_startup_trials : c->gp.n_startup_trials);
    else if (strcmp(key, "n_ei_candidates") == 0)
        tunep_buf_printf(out, "%d", c->tpe.n_ei_candidates);
    else if (strcmp(key, "prior_weight") == 0)
        tunep_format_double(num, sizeof num, c->tpe.prior_weight);
    else if (strcmp(key, "consider_endpoints") == 0)
        tunep_buf_puts(out, c->tpe.consider_endpoints ? "true" : "false");
    else if (strcmp(key, "multivariate") == 0)
        tunep_buf_puts(out, c->tpe.multivariate ? "true" : "false");
    else if (strcmp(key, "constant_liar") == 0)
        tunep_buf_puts(out, c->tpe.constant_liar ? "true" : "false");
    else if (strcmp(key, "gamma") == 0)
        tunep_format_double(num, sizeof num, c->tpe.gamma);
    else if (strcmp(key, "weights_below") == 0)
        tunep_buf_puts(out, c->tpe.uniform_weights_below ? "uniform" : "hypervolume");
    else if (strcmp(key, "n_candidates") == 0)
        tunep_buf_printf(out, "%d", c->gp.n_candidates);
    else if (strcmp(key, "xi") == 0)
        tunep_format_double(num, sizeof num, c->gp.xi);
    else if (strcmp(key, "scramble") == 0)
        tunep_buf_puts(out, c->qmc.scramble ? "true" : "false");
    else if (strcmp(key, "lhs_samples") == 0)
        tunep_buf_printf(out, "%lld", (long long)c->qmc.lhs_samples);
    else if (strcmp(key, "population_size") == 0)
        tunep_buf_printf(out, "%d", c->nsga2.population_size);
    else if (strcmp(key, "mutation_prob") == 0 && c->nsga2.mutation_prob < 0)
        tunep_buf_puts(out, "1/parameters");
    else if (strcmp(key, "mutation_prob") == 0)
        tunep_format_double(num, sizeof num, c->nsga2.mutation_prob);
    else if (strcmp(key, "crossover_prob") == 0)
        tunep_format_double(num, sizeof num, c->nsga2.crossover_prob);
    else if (strcmp(key, "swapping_prob") == 0)
        tunep_format_double(num, sizeof num, c->nsga2.swapping_prob);
    tunep_buf_puts(out, num);
}

void tunep_config_search_summary(const struct tunep_config *c, struct tunep_buf *out)
{
    tunep_buf_puts(out, tunep_search_algo_name(c->search));
    const char *sep = ": ";
    /* Row 0 is "algorithm" itself. */
    for (size_t i = 1; i < sizeof options / sizeof *options; i++) {
        if (!(options[i].algos & (1u << c->search)))
            continue;
        if (strcmp(options[i].key, "weights_below") == 0 && c->n_objectives < 2)
            continue; /* only several objectives have it */
        tunep_buf_printf(out, "%s%s ", sep, options[i].key);
        option_value(c, options[i].key, out);
        sep = ", ";
    }
}

void tunep_config_search_defaults(struct tunep_config *c)
{
    c->search = TUNEP_SEARCH_RANDOM;
    /* Optuna 3.1's TPESampler. */
    c->tpe = (struct tunep_tpe_config){
        .n_startup_trials = 10,
        .n_ei_candidates = 24,
        .prior_weight = 1.0,
        .consider_endpoints = 0,
        .multivariate = 0,
        .constant_liar = 1,
        .gamma = 0.1,
    };
    c->gp = (struct tunep_gp_config){
        .n_startup_trials = 10, .n_candidates = 2000, .refit_every = 1, .xi = 0.0};
    c->qmc = (struct tunep_qmc_config){.scramble = 1, .lhs_samples = 0};
    tunep_nsga2_config_default(&c->nsga2);
}

static tune_status key_error(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                             const char *key, int at_key, const char *msg)
{
    tunep_cfgpath_push_key(path, key);
    tune_status st = tunep_cfg_error(ctx, path, at_key, "%s", msg);
    tunep_cfgpath_pop(path);
    return st;
}

static tune_status get_int(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                           const char *key, const json_t *v, int64_t lo, int64_t hi, int64_t *ret)
{
    char msg[96];
    if (!json_is_integer(v)) {
        snprintf(msg, sizeof msg, "expected an integer");
        return key_error(ctx, path, key, 0, msg);
    }
    json_int_t n = json_integer_value(v);
    if (n < lo || n > hi) {
        snprintf(msg, sizeof msg, "expected an integer from %lld to %lld", (long long)lo,
                 (long long)hi);
        return key_error(ctx, path, key, 0, msg);
    }
    *ret = n;
    return TUNE_OK;
}

static tune_status get_number(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                              const char *key, const json_t *v, double lo, double hi, int lo_open,
                              double *ret)
{
    char msg[96];
    double d = json_is_number(v) ? json_number_value(v) : (double)NAN;
    if (!(d >= lo && d <= hi) || (lo_open && d == lo)) {
        snprintf(msg, sizeof msg, "expected a number %s %g and <= %g", lo_open ? ">" : ">=", lo,
                 hi);
        return key_error(ctx, path, key, 0, msg);
    }
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

static tune_status parse_option(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                const char *key, const json_t *v, struct tunep_config *c)
{
    int64_t n = 0;
    tune_status st = TUNE_OK;
    int is_tpe = c->search == TUNEP_SEARCH_TPE || c->search == TUNEP_SEARCH_BOHB;
    if (strcmp(key, "n_startup_trials") == 0) {
        if (!(st = get_int(ctx, path, key, v, 0, 1000000, &n))) {
            if (is_tpe)
                c->tpe.n_startup_trials = (int)n;
            else
                c->gp.n_startup_trials = (int)n;
        }
    } else if (strcmp(key, "n_ei_candidates") == 0) {
        if (!(st = get_int(ctx, path, key, v, 1, 100000, &n)))
            c->tpe.n_ei_candidates = (int)n;
    } else if (strcmp(key, "prior_weight") == 0) {
        st = get_number(ctx, path, key, v, 0, 1e6, 1, &c->tpe.prior_weight);
    } else if (strcmp(key, "consider_endpoints") == 0) {
        st = get_bool(ctx, path, key, v, &c->tpe.consider_endpoints);
    } else if (strcmp(key, "multivariate") == 0) {
        st = get_bool(ctx, path, key, v, &c->tpe.multivariate);
    } else if (strcmp(key, "constant_liar") == 0) {
        st = get_bool(ctx, path, key, v, &c->tpe.constant_liar);
    } else if (strcmp(key, "gamma") == 0) {
        st = get_number(ctx, path, key, v, 0, 1, 1, &c->tpe.gamma);
    } else if (strcmp(key, "weights_below") == 0) {
        const char *w = json_is_string(v) ? json_string_value(v) : "";
        if (strcmp(w, "hypervolume") != 0 && strcmp(w, "uniform") != 0)
            return key_error(ctx, path, key, 0, "expected \"hypervolume\" or \"uniform\"");
        c->tpe.uniform_weights_below = strcmp(w, "uniform") == 0;
    } else if (strcmp(key, "n_candidates") == 0) {
        if (!(st = get_int(ctx, path, key, v, 1, 1000000, &n)))
            c->gp.n_candidates = (int)n;
    } else if (strcmp(key, "xi") == 0) {
        st = get_number(ctx, path, key, v, 0, 1e6, 0, &c->gp.xi);
    } else if (strcmp(key, "scramble") == 0) {
        st = get_bool(ctx, path, key, v, &c->qmc.scramble);
    } else if (strcmp(key, "lhs_samples") == 0) {
        st = get_int(ctx, path, key, v, 0, TUNEP_MAX_TRIALS, &c->qmc.lhs_samples);
    } else if (strcmp(key, "population_size") == 0) {
        if (!(st = get_int(ctx, path, key, v, 2, 100000, &n)))
            c->nsga2.population_size = (int)n;
    } else if (strcmp(key, "mutation_prob") == 0) {
        /* null: Optuna's None, 1 / the number of parameters */
        if (json_is_null(v))
            c->nsga2.mutation_prob = -1;
        else
            st = get_number(ctx, path, key, v, 0, 1, 0, &c->nsga2.mutation_prob);
    } else if (strcmp(key, "crossover_prob") == 0) {
        st = get_number(ctx, path, key, v, 0, 1, 0, &c->nsga2.crossover_prob);
    } else if (strcmp(key, "swapping_prob") == 0) {
        st = get_number(ctx, path, key, v, 0, 1, 0, &c->nsga2.swapping_prob);
    }
    return st;
}

tune_status tunep_config_parse_search(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                      const json_t *obj, struct tunep_config *c)
{
    if (!json_is_object(obj))
        return tunep_cfg_error(ctx, path, 0,
                               "expected an object such as {\"algorithm\": \"random\"}");
    const json_t *a = json_object_get(obj, "algorithm"); /* borrowed */
    if (a) {
        size_t i, n = sizeof algos / sizeof *algos;
        for (i = 0; i < n; i++)
            if (json_is_string(a) && strcmp(json_string_value(a), algos[i].name) == 0)
                break;
        if (i == n && json_is_string(a)) {
            char msg[300];
            snprintf(msg, sizeof msg,
                     "unknown search algorithm '%.100s' (expected \"random\", \"grid\", \"tpe\", "
                     "\"gp\", \"sobol\", \"lhs\", \"bohb\" or \"nsga2\")",
                     json_string_value(a));
            return key_error(ctx, path, "algorithm", 0, msg);
        }
        if (i == n)
            return key_error(ctx, path, "algorithm", 0,
                             "expected \"random\", \"grid\", \"tpe\", \"gp\", \"sobol\", \"lhs\", "
                             "\"bohb\" or \"nsga2\"");
        c->search = algos[i].algo;
    }
    const char *known[sizeof options / sizeof *options];
    size_t n_known = sizeof options / sizeof *options;
    for (size_t i = 0; i < n_known; i++)
        known[i] = options[i].key;
    json_t *o = (json_t *)(uintptr_t)obj; /* jansson's iterators take json_t *; nothing changes */
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
        const char *key = json_object_iter_key(it);   /* borrowed */
        const json_t *v = json_object_iter_value(it); /* borrowed */
        size_t i;
        for (i = 0; i < n_known; i++)
            if (strcmp(key, options[i].key) == 0)
                break;
        if (i == n_known)
            return tunep_config_unknown_key(ctx, path, key, known, n_known);
        if (!(options[i].algos & (1u << c->search))) {
            char msg[160];
            snprintf(msg, sizeof msg, "not an option of search algorithm \"%s\"",
                     tunep_search_algo_name(c->search));
            return key_error(ctx, path, key, 1, msg);
        }
        tune_status st = parse_option(ctx, path, key, v, c);
        if (st)
            return st;
    }
    return TUNE_OK;
}

static tune_status error_at(const struct tunep_cfgctx *ctx, const char *k1, const char *k2,
                            const char *msg)
{
    struct tunep_cfgpath path = {.depth = 0};
    tunep_cfgpath_push_key(&path, k1);
    if (k2)
        tunep_cfgpath_push_key(&path, k2);
    return tunep_cfg_error(ctx, &path, 0, "%s", msg);
}

tune_status tunep_config_check_search(const struct tunep_cfgctx *ctx, struct tunep_config *c)
{
    char msg[384];
    int model = c->search != TUNEP_SEARCH_RANDOM && c->search != TUNEP_SEARCH_GRID;
    if (model) {
        for (size_t i = 0; i < c->space->n; i++) {
            if (c->space->params[i].dist != TUNEP_DIST_GRID)
                continue;
            snprintf(msg, sizeof msg,
                     "search algorithm \"%s\" cannot search the grid_search axis '%s': use "
                     "choice, or search \"random\" or \"grid\"",
                     tunep_search_algo_name(c->search), c->space->params[i].name);
            return error_at(ctx, "search", "algorithm", msg);
        }
    }
    long cond = tunep_space_first_conditional(c->space);
    if (cond >= 0 && model && c->search != TUNEP_SEARCH_TPE) {
        tune_error e;
        tunep_space_refuse_conditional(c->space, tunep_search_algo_name(c->search), &e);
        return error_at(ctx, "search", "algorithm", e.text);
    }
    if (cond >= 0 && c->search == TUNEP_SEARCH_TPE && c->tpe.multivariate) {
        snprintf(msg, sizeof msg,
                 "multivariate tpe cannot model conditional parameters ('%s'): set "
                 "\"multivariate\": false",
                 c->space->params[cond].name);
        return error_at(ctx, "search", "multivariate", msg);
    }
    const struct tunep_scheduler_type *sched = c->scheduler.type;
    if (cond >= 0 && (sched->flags & TUNEP_SCHEDULER_EXPLORES)) {
        snprintf(msg, sizeof msg,
                 "the %s scheduler perturbs parameters, and cannot perturb conditional ones "
                 "('%s'): use another scheduler",
                 sched->name, c->space->params[cond].name);
        return error_at(ctx, "scheduler", "type", msg);
    }
    if (c->n_objectives > 1 && c->search != TUNEP_SEARCH_RANDOM && c->search != TUNEP_SEARCH_GRID &&
        c->search != TUNEP_SEARCH_NSGA2 && c->search != TUNEP_SEARCH_TPE) {
        snprintf(msg, sizeof msg,
                 "search algorithm \"%s\" optimises one metric, and \"metric\" lists %zu: use "
                 "\"tpe\", \"nsga2\", \"random\" or \"grid\"",
                 tunep_search_algo_name(c->search), c->n_objectives);
        return error_at(ctx, "search", "algorithm", msg);
    }
    if (c->n_objectives > 1 && !(sched->flags & TUNEP_SCHEDULER_MULTI_OBJECTIVE)) {
        snprintf(msg, sizeof msg,
                 "the %s scheduler compares trials by one metric, and \"metric\" lists %zu: use "
                 "the fifo scheduler, or one metric",
                 sched->title, c->n_objectives);
        return error_at(ctx, "scheduler", "type", msg);
    }
    if (c->search == TUNEP_SEARCH_BOHB && !(sched->flags & TUNEP_SCHEDULER_SYNC_BRACKETS)) {
        /* Name the scheduler that runs the brackets BOHB needs. */
        const struct tunep_scheduler_type *with = NULL;
        for (size_t i = 0; !with && i < tunep_scheduler_count(); i++)
            if (tunep_scheduler_at(i)->flags & TUNEP_SCHEDULER_SYNC_BRACKETS)
                with = tunep_scheduler_at(i);
        snprintf(msg, sizeof msg,
                 "\"bohb\" runs with the %s scheduler: set \"scheduler\": {\"type\": \"%s\", ...}",
                 with ? with->name : "?", with ? with->name : "?");
        return error_at(ctx, "search", "algorithm", msg);
    }
    if ((sched->flags & TUNEP_SCHEDULER_EXPLORES) && model) {
        snprintf(msg, sizeof msg,
                 "%s explores the space by itself: use search \"random\" with the %s scheduler",
                 sched->title, sched->name);
        return error_at(ctx, "search", "algorithm", msg);
    }
    if (sched->checkpoint_interval) {
        if (c->trainer && !c->trainer->can_checkpoint) {
            snprintf(msg, sizeof msg,
                     "the %s scheduler copies checkpoints, and trainer \"%s\" does not save any",
                     sched->name, c->trainer->name);
            return error_at(ctx, "scheduler", "type", msg);
        }
        if (c->isolation_process) {
            snprintf(msg, sizeof msg,
                     "the %s scheduler copies checkpoints, which isolated trials cannot save: use "
                     "\"isolation\": \"thread\"",
                     sched->name);
            return error_at(ctx, "isolation", NULL, msg);
        }
    }
    return TUNE_OK;
}
