/*
 * test_conditional.c - conditional parameters: a choice of objects (Ray
 * Tune's form) flattened into a selector and per-option members, config
 * errors at their line and column, sampling only the chosen option's members
 * (reproducibly), the searchers that refuse such spaces, TPE against random
 * search on a conditional toy objective, and a study through the public API
 * whose getters see absent parameters as unknown names.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "base/rng.h"
#include "check_util.h"
#include "config/config.h"
#include "config/config_space.h"
#include "search/importance.h"
#include "search/searcher.h"
#include "search/space.h"

static tune_space *sp;
static tune_error err;

static void setup(void)
{
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(tune_space_new(&sp, &err), TUNE_OK);
}

static void teardown(void)
{
    tune_space_free(sp);
    sp = NULL;
}

/* Parses text's "param_space" into sp as config.c does. */
static tune_status parse(const char *text)
{
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    ck_assert_msg(root != NULL, "test JSON does not parse: %s (line %d)", jerr.text, jerr.line);
    struct tunep_cfgctx ctx = {
        .text = text, .len = strlen(text), .source = "config.json", .err = &err};
    struct tunep_cfgpath path;
    memset(&path, 0, sizeof path);
    tunep_cfgpath_push_key(&path, "param_space");
    memset(&err, 0, sizeof err);
    tune_status st =
        tunep_config_parse_space(&ctx, &path, json_object_get(root, "param_space"), sp);
    ck_assert_int_eq(path.depth, 1);
    json_decref(root);
    return st;
}

/* Parsing fails with msg at line 1, at the column where `at` first occurs, adding nothing. */
static void parse_fails(const char *text, const char *at, const char *msg)
{
    size_t n = sp->n;
    const char *pos = strstr(text, at);
    ck_assert_ptr_nonnull(pos);
    ck_assert_int_eq(parse(text), TUNE_ECONFIG);
    ck_assert_str_eq(err.text, msg);
    ck_assert_str_eq(err.source, "config.json");
    ck_assert_int_eq(err.line, 1);
    ck_assert_int_eq(err.column, (int)(pos - text) + 1);
    ck_assert_uint_eq(sp->n, n);
}

static const struct tunep_param *param(const char *name)
{
    long i = tunep_space_find(sp, name);
    ck_assert_msg(i >= 0, "no parameter %s", name);
    return &sp->params[i];
}

static size_t idx(const char *name)
{
    long i = tunep_space_find(sp, name);
    ck_assert_msg(i >= 0, "no parameter %s", name);
    return (size_t)i;
}

/* The classic: lr always, momentum and nesterov only for sgd, beta1 only for adam. */
static const char *const SGD_ADAM =
    "{\"param_space\": {\"lr\": {\"loguniform\": [1e-4, 1e-1]}, \"opt\": {\"choice\": ["
    "{\"name\": \"sgd\", \"momentum\": {\"uniform\": [0.5, 0.99]}, \"nesterov\": true},"
    " {\"name\": \"adam\", \"beta1\": {\"uniform\": [0.8, 0.95]}}]}, \"batch\": 32}}";

START_TEST(test_flatten)
{
    ck_assert_int_eq(parse(SGD_ADAM), TUNE_OK);
    const char *names[] = {"lr", "opt/name", "opt/momentum", "opt/nesterov", "opt/beta1", "batch"};
    ck_assert_uint_eq(sp->n, 6);
    for (size_t i = 0; i < 6; i++)
        ck_assert_str_eq(sp->params[i].name, names[i]);
    const struct tunep_param *sel = param("opt/name");
    ck_assert_int_eq(sel->dist, TUNEP_DIST_CHOICE);
    ck_assert_uint_eq(sel->n_values, 2);
    ck_assert_str_eq(sel->values[0].u.s, "sgd");
    ck_assert_str_eq(sel->values[1].u.s, "adam");
    ck_assert_uint_eq(sel->n_cond, 0);
    ck_assert_uint_eq(param("lr")->n_cond, 0);
    ck_assert_uint_eq(param("batch")->n_cond, 0);
    const char *sgd_only[] = {"opt/momentum", "opt/nesterov"};
    for (size_t i = 0; i < 2; i++) {
        const struct tunep_param *p = param(sgd_only[i]);
        ck_assert_uint_eq(p->n_cond, 1);
        ck_assert_uint_eq(p->cond_parent, 1);
        ck_assert_uint_eq(p->cond_values[0], 0);
    }
    ck_assert_int_eq(param("opt/nesterov")->dist, TUNEP_DIST_CONST);
    ck_assert_int_eq(param("opt/momentum")->dist, TUNEP_DIST_UNIFORM);
    ck_assert_uint_eq(param("opt/beta1")->n_cond, 1);
    ck_assert_uint_eq(param("opt/beta1")->cond_values[0], 1);
    ck_assert_int_eq(tunep_space_first_conditional(sp), 2);
    /* A clone keeps the conditions. */
    tune_space *copy = NULL;
    ck_assert_int_eq(tunep_space_clone(sp, &copy, &err), TUNE_OK);
    ck_assert_uint_eq(copy->params[4].n_cond, 1);
    ck_assert_uint_eq(copy->params[4].cond_parent, 1);
    ck_assert_uint_eq(copy->params[4].cond_values[0], 1);
    tune_space_free(copy);
}
END_TEST

/* A member two options share with one distribution is one parameter present in both. */
START_TEST(test_shared_and_nested)
{
    const char *text =
        "{\"param_space\": {\"opt\": {\"choice\": ["
        "{\"kind\": 1, \"wd\": {\"uniform\": [0, 0.1]}, \"sched\": {\"choice\": ["
        "{\"type\": \"step\", \"gamma\": {\"uniform\": [0.1, 0.9]}}, {\"type\": \"cos\"}]}},"
        " {\"kind\": 2, \"wd\": {\"uniform\": [0, 0.1]}},"
        " {\"kind\": 3, \"eps\": {\"loguniform\": [1e-8, 1e-6]}}]}}}";
    ck_assert_int_eq(parse(text), TUNE_OK);
    const char *names[] = {"opt/kind", "opt/wd", "opt/sched/type", "opt/sched/gamma", "opt/eps"};
    ck_assert_uint_eq(sp->n, 5);
    for (size_t i = 0; i < 5; i++)
        ck_assert_str_eq(sp->params[i].name, names[i]);
    ck_assert_int_eq(sp->params[0].values[2].type, TUNEP_V_INT);
    const struct tunep_param *wd = param("opt/wd");
    ck_assert_uint_eq(wd->n_cond, 2);
    ck_assert_uint_eq(wd->cond_values[0], 0);
    ck_assert_uint_eq(wd->cond_values[1], 1);
    ck_assert_uint_eq(param("opt/sched/type")->cond_parent, 0);
    ck_assert_uint_eq(param("opt/sched/gamma")->cond_parent, idx("opt/sched/type"));
    ck_assert_uint_eq(param("opt/sched/gamma")->cond_values[0], 0);
    ck_assert_uint_eq(param("opt/eps")->cond_values[0], 2);

    /* Presence over many draws: each option's members exactly, nested ones by the inner
     * selector; every option and inner option is drawn. */
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    struct tunep_value v[5];
    int seen[3] = {0, 0, 0}, gamma_seen = 0, cos_seen = 0;
    for (int t = 0; t < 600; t++) {
        gsl_rng_set(r, (unsigned long)t);
        tunep_space_sample(sp, r, 0, 0, v);
        ck_assert_int_eq(v[0].type, TUNEP_V_INT);
        int64_t k = v[0].u.i;
        ck_assert(k >= 1 && k <= 3);
        seen[k - 1]++;
        ck_assert_int_eq(v[1].type == TUNEP_V_ABSENT, k == 3);
        ck_assert_int_eq(v[2].type == TUNEP_V_ABSENT, k != 1);
        ck_assert_int_eq(v[4].type == TUNEP_V_ABSENT, k != 3);
        if (k == 1) {
            int step = strcmp(v[2].u.s, "step") == 0;
            ck_assert_int_eq(v[3].type == TUNEP_V_ABSENT, !step);
            gamma_seen += step;
            cos_seen += !step;
            if (step)
                ck_assert(v[3].u.d >= 0.1 && v[3].u.d < 0.9);
        } else {
            ck_assert_int_eq(v[3].type, TUNEP_V_ABSENT);
        }
    }
    for (int k = 0; k < 3; k++)
        ck_assert_int_gt(seen[k], 150); /* 200 expected of each */
    ck_assert_int_gt(gamma_seen, 50);
    ck_assert_int_gt(cos_seen, 50);
    gsl_rng_free(r);
}
END_TEST

/* Only the chosen option's members draw, and a trial's stream gives the same configuration. */
START_TEST(test_sampling)
{
    ck_assert_int_eq(parse(SGD_ADAM), TUNE_OK);
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256), *r2 = gsl_rng_alloc(tunep_rng_xoshiro256);
    struct tunep_value v[6], w[6];
    int n_sgd = 0;
    for (int t = 0; t < 2000; t++) {
        gsl_rng_set(r, (unsigned long)t + 1000u);
        tunep_space_sample(sp, r, 0, 0, v);
        int sgd = strcmp(v[1].u.s, "sgd") == 0;
        n_sgd += sgd;
        ck_assert_int_eq(v[0].type, TUNEP_V_DOUBLE);
        ck_assert_int_eq(v[5].type, TUNEP_V_INT);
        ck_assert_int_eq(v[2].type, sgd ? TUNEP_V_DOUBLE : TUNEP_V_ABSENT);
        ck_assert_int_eq(v[3].type, sgd ? TUNEP_V_BOOL : TUNEP_V_ABSENT);
        ck_assert_int_eq(v[4].type, sgd ? TUNEP_V_ABSENT : TUNEP_V_DOUBLE);
        if (sgd)
            ck_assert(v[2].u.d >= 0.5 && v[2].u.d < 0.99);
        else
            ck_assert(v[4].u.d >= 0.8 && v[4].u.d < 0.95);
        /* Ray's order: lr, then the choice, then only its option's members; nothing else
         * draws. The next uniform of the stream is the one after those. */
        gsl_rng_set(r2, (unsigned long)t + 1000u);
        double u_lr = gsl_rng_uniform(r2), u_sel = gsl_rng_uniform(r2);
        double u_member = gsl_rng_uniform(r2);
        struct tunep_value x;
        tunep_space_value_at(&sp->params[0], u_lr, &x);
        ck_assert(x.u.d == v[0].u.d);
        ck_assert_int_eq(u_sel < 0.5, sgd);
        tunep_space_value_at(&sp->params[sgd ? 2 : 4], u_member, &x);
        ck_assert(x.u.d == v[sgd ? 2 : 4].u.d);
        ck_assert(gsl_rng_uniform(r) == gsl_rng_uniform(r2));
        /* Reproducible per (seed, trial). */
        gsl_rng_set(r, (unsigned long)t + 1000u);
        tunep_space_sample(sp, r, 0, 0, w);
        for (int i = 0; i < 6; i++)
            ck_assert(tunep_value_equal(&v[i], &w[i]));
    }
    ck_assert(n_sgd > 900 && n_sgd < 1100);
    /* The grid search algorithm expands the selector: 2 points, members drawn within. */
    ck_assert_uint_eq(tunep_space_grid_size(sp, 1, &err), 2);
    for (uint64_t g = 0; g < 4; g++) {
        tunep_space_sample(sp, r, g, 1, v);
        ck_assert_str_eq(v[1].u.s, g % 2 ? "adam" : "sgd");
        ck_assert_int_eq(v[2].type, g % 2 ? TUNEP_V_ABSENT : TUNEP_V_DOUBLE);
    }
    gsl_rng_free(r);
    gsl_rng_free(r2);
}
END_TEST

START_TEST(test_config_errors)
{
    parse_fails("{\"param_space\": {\"opt\": {\"choice\": [{\"a\": 1, \"x\": 2}, {\"a\": 1}]}}}",
                "[{",
                "param_space.opt: each option of a choice of objects needs a key that "
                "names it with a different constant in each, such as \"name\": \"sgd\" and "
                "\"name\": \"adam\"");
    parse_fails("{\"param_space\": {\"opt\": {\"choice\": [{\"name\": \"a\"}, 3]}}}", "3]",
                "param_space.opt: choice mixes objects and other values: make every option an "
                "object (conditional parameters) or none");
    parse_fails("{\"param_space\": {\"opt\": {\"choice\": [{\"name\": \"a\", \"x\": "
                "{\"grid_search\": [1, 2]}}, {\"name\": \"b\"}]}}}",
                "[1, 2]",
                "param_space.opt.choice[0].x: grid_search inside an option of a choice is not "
                "supported: use choice");
    parse_fails("{\"param_space\": {\"opt\": {\"grid_search\": [{\"name\": \"a\"}]}}}", "{\"name",
                "param_space.opt: grid_search over objects is not supported: use choice, which "
                "makes each object's members conditional parameters");
    parse_fails("{\"param_space\": {\"opt\": {\"choice\": [{\"name\": \"a\", \"x\": "
                "{\"uniform\": [0, 1]}}, {\"name\": \"b\", \"x\": {\"uniform\": [0, 2]}}]}}}",
                "[0, 2]",
                "param_space.opt.choice[1].x: options of 'opt/name' give 'opt/x' different "
                "values or distributions: give it another name in one of them");
    parse_fails("{\"param_space\": {\"opt\": {\"choice\": [{\"name\": \"a\", \"x\": "
                "{\"uniform\": [1, 0]}}, {\"name\": \"b\"}]}}}",
                "0]", "param_space.opt.choice[0].x: uniform needs low < high");
    /* The selector's name clashes with a parameter already there. */
    parse_fails("{\"param_space\": {\"opt/name\": 1, \"opt\": {\"choice\": [{\"name\": \"a\"}, "
                "{\"name\": \"b\"}]}}}",
                "\"choice\"", "param_space.opt.choice: duplicate parameter 'opt/name'");
}
END_TEST

/* The C API's tune_space_add_json() takes the same form. */
START_TEST(test_add_json)
{
    ck_assert_int_eq(tune_space_add_json(sp, "opt",
                                         "{\"choice\": [{\"name\": \"sgd\", \"momentum\": "
                                         "{\"uniform\": [0.5, 0.99]}}, {\"name\": \"adam\"}]}",
                                         &err),
                     TUNE_OK);
    ck_assert_uint_eq(sp->n, 2);
    ck_assert_str_eq(sp->params[0].name, "opt/name");
    ck_assert_str_eq(sp->params[1].name, "opt/momentum");
    ck_assert_uint_eq(sp->params[1].n_cond, 1);
}
END_TEST

/* Searchers that model every parameter in every trial refuse, naming what to use. */
START_TEST(test_refusals)
{
    ck_assert_int_eq(parse(SGD_ADAM), TUNE_OK);
    struct tunep_searcher *s = NULL;
    struct tunep_gp_config gc;
    struct tunep_qmc_config qc;
    struct tunep_tpe_config tc;
    struct tunep_nsga2_config nc;
    tunep_gp_config_default(&gc);
    tunep_qmc_config_default(&qc);
    tunep_tpe_config_default(&tc);
    tunep_nsga2_config_default(&nc);
#define WANT(algo)                                                                                 \
    "search algorithm \"" algo "\" cannot search conditional parameters ('opt/momentum' exists "   \
    "only for some values of 'opt/name'): use \"tpe\" or \"random\""
    ck_assert_int_eq(tunep_gp_new(sp, &gc, 1, &s, &err), TUNE_ECONFIG);
    ck_assert_str_eq(err.text, WANT("gp"));
    ck_assert_int_eq(tunep_sobol_new(sp, &qc, 1, &s, &err), TUNE_ECONFIG);
    ck_assert_str_eq(err.text, WANT("sobol"));
    ck_assert_int_eq(tunep_lhs_new(sp, &qc, 1, 10, &s, &err), TUNE_ECONFIG);
    ck_assert_str_eq(err.text, WANT("lhs"));
    ck_assert_int_eq(tunep_bohb_new(sp, &tc, 1, &s, &err), TUNE_ECONFIG);
    ck_assert_str_eq(err.text, WANT("bohb"));
    ck_assert_int_eq(tunep_nsga2_new(sp, &nc, 1, &s, &err), TUNE_ECONFIG);
    ck_assert_str_eq(err.text, WANT("nsga2"));
#undef WANT
    tc.multivariate = 1;
    ck_assert_int_eq(tunep_tpe_new(sp, &tc, 1, &s, &err), TUNE_ECONFIG);
    ck_assert_str_eq(err.text, "multivariate tpe cannot model conditional parameters "
                               "('opt/momentum'): set \"multivariate\": false");
    tc.multivariate = 0;
    ck_assert_int_eq(tunep_tpe_new(sp, &tc, 1, &s, &err), TUNE_OK);
    tunep_searcher_free(s);
}
END_TEST

/* A whole config: `tune validate` refuses what cannot search a conditional space, at the key. */
static void validate_fails(const char *text, const char *at, const char *msg)
{
    struct tunep_config c;
    memset(&c, 0, sizeof c);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(tunep_config_parse(text, strlen(text), "x.json", NULL, NULL, &c, &err),
                     TUNE_ECONFIG);
    ck_assert_str_eq(err.text, msg);
    ck_assert_int_eq(err.line, 1);
    ck_assert_int_eq(err.column, (int)(strstr(text, at) - text) + 1);
}

#define COND_SPACE                                                                                 \
    "\"param_space\": {\"lr\": {\"loguniform\": [1e-4, 1e-1]}, \"opt\": {\"choice\": ["            \
    "{\"name\": \"sgd\", \"momentum\": {\"uniform\": [0.5, 0.99]}}, {\"name\": \"adam\"}]}}"

START_TEST(test_validate_refusals)
{
    validate_fails("{\"search\": {\"algorithm\": \"sobol\"}, " COND_SPACE "}", "\"sobol\"",
                   "search.algorithm: search algorithm \"sobol\" cannot search conditional "
                   "parameters ('opt/momentum' exists only for some values of 'opt/name'): use "
                   "\"tpe\" or \"random\"");
    validate_fails("{\"search\": {\"algorithm\": \"tpe\", \"multivariate\": true}, " COND_SPACE "}",
                   "true",
                   "search.multivariate: multivariate tpe cannot model conditional parameters "
                   "('opt/momentum'): set \"multivariate\": false");
    validate_fails(
        "{\"scheduler\": {\"type\": \"pbt\", \"perturbation_interval\": 2, "
        "\"hyperparam_mutations\": {\"lr\": {\"loguniform\": [1e-4, 1e-1]}}}, " COND_SPACE "}",
        "\"pbt\"",
        "scheduler.type: the pbt scheduler perturbs parameters, and cannot perturb "
        "conditional ones ('opt/momentum'): use another scheduler");
    /* tpe and random accept it. */
    const char *ok = "{\"search\": {\"algorithm\": \"tpe\"}, " COND_SPACE "}";
    struct tunep_config c;
    memset(&c, 0, sizeof c);
    ck_assert_msg(tunep_config_parse(ok, strlen(ok), "x.json", NULL, NULL, &c, &err) == TUNE_OK,
                  "%s", err.text);
    tunep_config_done(&c);
}
END_TEST

/*
 * A toy conditional objective (a loss, smaller is better): sgd reaches 0 at
 * momentum 0.9, adam no better than 0.2, and lr adds (log10 lr + 2.5)^2 / 10.
 */
static double toy_loss(const struct tunep_value *v)
{
    double lr = 0.1 * pow(log10(v[0].u.d) + 2.5, 2);
    if (strcmp(v[1].u.s, "sgd") == 0)
        return lr + 4.0 * pow(v[2].u.d - 0.9, 2);
    return lr + 0.2 + pow(v[4].u.d - 0.85, 2);
}

/* The best loss of 60 trials, searched by TPE (tpe = 1) or random search, on seed `seed`. */
static double best_of_60(int tpe, unsigned long seed)
{
    struct tunep_searcher *s = NULL;
    struct tunep_tpe_config tc;
    tunep_tpe_config_default(&tc);
    if (tpe)
        ck_assert_int_eq(tunep_tpe_new(sp, &tc, seed, &s, &err), TUNE_OK);
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    struct tunep_value v[6];
    double best = HUGE_VAL;
    for (int64_t id = 0; id < 60; id++) {
        gsl_rng_set(r, seed * 1000u + (unsigned long)id);
        if (s) {
            ck_assert_int_eq(s->ops->suggest(s, id, r, v, &err), TUNE_OK);
            ck_assert_int_eq(s->ops->on_start(s, id, v), TUNE_OK);
        } else {
            tunep_space_sample(sp, r, 0, 0, v);
        }
        /* Every suggestion holds exactly its option's members. */
        int sgd = strcmp(v[1].u.s, "sgd") == 0;
        ck_assert_int_eq(v[2].type, sgd ? TUNEP_V_DOUBLE : TUNEP_V_ABSENT);
        ck_assert_int_eq(v[3].type, sgd ? TUNEP_V_BOOL : TUNEP_V_ABSENT);
        ck_assert_int_eq(v[4].type, sgd ? TUNEP_V_ABSENT : TUNEP_V_DOUBLE);
        double loss = toy_loss(v);
        if (s)
            ck_assert_int_eq(s->ops->on_complete(s, id, 1, 1.0, -loss), TUNE_OK);
        best = fmin(best, loss);
    }
    gsl_rng_free(r);
    tunep_searcher_free(s);
    return best;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/*
 * TPE against random search on 20 seeds: TPE wins on at least 15 (a sign test,
 * p = 0.021 if both were alike) and its median best loss is under half of
 * random search's.
 */
START_TEST(test_tpe_beats_random)
{
    ck_assert_int_eq(parse(SGD_ADAM), TUNE_OK);
    double t[20], rnd[20];
    int wins = 0;
    for (unsigned long seed = 0; seed < 20; seed++) {
        t[seed] = best_of_60(1, seed + 1);
        rnd[seed] = best_of_60(0, seed + 1);
        wins += t[seed] < rnd[seed];
    }
    qsort(t, 20, sizeof *t, cmp_double);
    qsort(rnd, 20, sizeof *rnd, cmp_double);
    double med_t = 0.5 * (t[9] + t[10]), med_r = 0.5 * (rnd[9] + rnd[10]);
    printf("conditional toy, best of 60 over 20 seeds: tpe median %.5f, random median %.5f, "
           "tpe better on %d\n",
           med_t, med_r, wins);
    ck_assert_int_ge(wins, 15);
    ck_assert(med_t < 0.5 * med_r);
}
END_TEST

/* fANOVA leaves conditional parameters out (NaN, as constants) and weighs the rest. */
START_TEST(test_importance_skips_conditional)
{
    ck_assert_int_eq(parse(SGD_ADAM), TUNE_OK);
    enum { N = 200 };
    static struct tunep_value v[N * 6];
    double y[N];
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    gsl_rng_set(r, 5);
    for (size_t i = 0; i < N; i++) {
        tunep_space_sample(sp, r, 0, 0, v + i * 6);
        /* adam a whole unit worse: the option matters, and lr too. */
        y[i] = toy_loss(v + i * 6) + (strcmp(v[i * 6 + 1].u.s, "adam") == 0 ? 1.0 : 0.0);
    }
    gsl_rng_free(r);
    struct tunep_importance_config c;
    struct tunep_importance imp;
    memset(&imp, 0, sizeof imp);
    tunep_importance_config_default(&c);
    c.n_trees = 16;
    ck_assert_int_eq(tunep_importance_fanova(sp, v, y, N, &c, &imp, &err), TUNE_OK);
    ck_assert_uint_eq(imp.n_params, 6);
    ck_assert(isfinite(imp.importance[0]) && imp.importance[0] > 0.01); /* lr */
    ck_assert(isfinite(imp.importance[1]) && imp.importance[1] > 0.5);  /* opt/name */
    for (size_t i = 2; i < 6; i++) /* momentum, nesterov, beta1 (conditional); batch */
        ck_assert(isnan(imp.importance[i]));
    ck_assert_uint_eq(imp.n_pairs, 1);
    ck_assert_uint_eq(imp.pairs[0].a, 0);
    ck_assert_uint_eq(imp.pairs[0].b, 1);
    tunep_importance_done(&imp);
}
END_TEST

/* ---- a study through the public API --------------------------------------- */

struct seen {
    int sgd, adam, bad;
};

static tune_status objective(tune_trial *trial, void *ud)
{
    struct seen *seen = ud;
    const char *name = NULL;
    double m, b1;
    if (tune_trial_get_string(trial, "opt/name", &name, NULL))
        return TUNE_EINVAL;
    int sgd = strcmp(name, "sgd") == 0;
    tune_status sm = tune_trial_get_double(trial, "opt/momentum", &m, NULL);
    tune_status sb = tune_trial_get_double(trial, "opt/beta1", &b1, NULL);
    /* Absent reads as an unknown name, and the _or getter gives its fallback. */
    if (sgd ? (sm != TUNE_OK || sb != TUNE_ENOTFOUND) : (sm != TUNE_ENOTFOUND || sb != TUNE_OK))
        seen->bad++;
    if (tune_trial_get_double_or(trial, sgd ? "opt/beta1" : "opt/momentum", -7.0) != -7.0)
        seen->bad++;
    char *json = NULL;
    if (tune_trial_config_json(trial, &json, NULL) == TUNE_OK) {
        if ((strstr(json, "momentum") != NULL) != sgd || (strstr(json, "beta1") != NULL) == sgd)
            seen->bad++;
        tune_free(json);
    } else {
        seen->bad++;
    }
    if (sgd)
        seen->sgd++;
    else
        seen->adam++;
    tune_status st = tune_trial_report_metric(trial, "loss", sgd ? 1.0 - m : b1, NULL);
    return st == TUNE_ESTOP ? TUNE_OK : st;
}

START_TEST(test_study_api)
{
    tune_study *study = NULL;
    tune_result *best = NULL;
    tune_options o;
    struct seen seen = {0, 0, 0};
    ck_assert_int_eq(tune_space_add_json(sp, "opt",
                                         "{\"choice\": [{\"name\": \"sgd\", \"momentum\": "
                                         "{\"uniform\": [0.5, 0.99]}}, {\"name\": \"adam\", "
                                         "\"beta1\": {\"uniform\": [0.8, 0.95]}}]}",
                                         &err),
                     TUNE_OK);
    tune_options_default(&o);
    o.name = "conditional";
    o.metric = "loss";
    o.mode = TUNE_MODE_MIN;
    o.num_samples = 30;
    o.seed = 3;
    o.storage = ":memory:";
    ck_assert_int_eq(tune_study_new(&o, sp, &study, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_set_objective(study, objective, &seen, &err), TUNE_OK);
    ck_assert_msg(tune_study_run(study, &err) == TUNE_OK, "run: %s", err.text);
    ck_assert_int_eq(seen.bad, 0);
    ck_assert_int_eq(seen.sgd + seen.adam, 30);
    ck_assert_int_gt(seen.sgd, 5);
    ck_assert_int_gt(seen.adam, 5);
    /* The best (smallest loss) is an sgd trial (1 - momentum < 0.5 < beta1); beta1 absent. */
    ck_assert_int_eq(tune_study_best(study, &best, &err), TUNE_OK);
    const char *name = NULL;
    double m = 0, b1 = 0;
    ck_assert_int_eq(tune_result_get_string(best, "opt/name", &name, &err), TUNE_OK);
    ck_assert_str_eq(name, "sgd");
    ck_assert_int_eq(tune_result_get_double(best, "opt/momentum", &m, &err), TUNE_OK);
    ck_assert(m >= 0.5 && m < 0.99);
    ck_assert_int_eq(tune_result_get_double(best, "opt/beta1", &b1, &err), TUNE_ENOTFOUND);
    ck_assert_int_eq(tune_result_param_type(best, 2), TUNE_PARAM_TYPE_COUNT);
    ck_assert_int_eq(tune_result_param_type(best, 1), TUNE_PARAM_DOUBLE);
    tune_result_free(best);
    tune_study_free(study);
}
END_TEST

static Suite *conditional_suite(void)
{
    Suite *s = suite_create("conditional");
    TCase *tc = tcase_create("conditional");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_flatten);
    tcase_add_test(tc, test_shared_and_nested);
    tcase_add_test(tc, test_sampling);
    tcase_add_test(tc, test_config_errors);
    tcase_add_test(tc, test_add_json);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_validate_refusals);
    tcase_add_test(tc, test_tpe_beats_random);
    tcase_add_test(tc, test_importance_skips_conditional);
    tcase_add_test(tc, test_study_api);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(conditional_suite)
