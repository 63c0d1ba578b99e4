/*
 * test_config_scheduler.c - the "scheduler" section for the median stopping
 * rule, HyperBand, ASHA's promotion variant and PBT: every option parsed with
 * its default, aliases, and every error at its exact line and column with its
 * exact text (jansson's check_error style), including PBT's
 * hyperparam_mutations checked against param_space wherever it appears in
 * the document. (FIFO and Ray's ASHA are covered by test_asha.c.)
 *
 * The registry: a scheduler defined only in this file ("stop_below", one
 * option) is registered through the same function and checks as the
 * built-ins, and then parses, reports its errors and makes its decisions in
 * a study run from a config string like any built-in: a scheduler is one
 * file and one row.
 */
#include "check_util.h"

#include <jansson.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>

#include "schedulers/hyperband.h"
#include "schedulers/median.h"
#include "schedulers/pbt.h"
#include "schedulers/asha.h"
#include "schedulers/scheduler.h"
#include "config/config.h"
#include "config/config_scheduler.h"

static const struct tunep_scheduler_type *find(const char *name)
{
    const struct tunep_scheduler_type *t = tunep_scheduler_find(name);
    ck_assert_ptr_nonnull(t);
    return t;
}

/* Parses the "scheduler" value of text alone (no param_space). */
static tune_status parse(const char *text, struct tunep_scheduler_config *out, tune_error *err)
{
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr); /* new ref */
    ck_assert_msg(root != NULL, "bad test JSON: %s", jerr.text);
    struct tunep_cfgctx ctx = {text, strlen(text), "<test>", err};
    struct tunep_cfgpath path;
    memset(&path, 0, sizeof path);
    tunep_cfgpath_push_key(&path, "scheduler");
    memset(err, 0, sizeof *err);
    tune_status st =
        tunep_config_parse_scheduler(&ctx, &path, json_object_get(root, "scheduler"), out);
    ck_assert_int_eq(path.depth, 1); /* balanced push/pop */
    json_decref(root);
    return st;
}

START_TEST(test_median_ok)
{
    struct tunep_scheduler_config c;
    tune_error err;
    ck_assert_int_eq(parse("{\"scheduler\": {\"type\": \"median_stopping\", \"time_attr\": "
                           "\"epoch\", \"grace_period\": 0, \"min_samples_required\": 2.0, "
                           "\"min_time_slice\": 1.5, \"hard_stop\": false}}",
                           &c, &err),
                     TUNE_OK);
    ck_assert_ptr_eq(c.type, find("median_stopping"));
    const struct tunep_median_config *md = c.cfg;
    ck_assert_str_eq(md->time_attr, "epoch");
    ck_assert_double_eq(md->grace_period, 0);
    ck_assert_int_eq(md->min_samples_required, 2);
    ck_assert_double_eq(md->min_time_slice, 1.5);
    ck_assert_int_eq(md->hard_stop, 0);
    tunep_scheduler_config_done(&c);
    /* Ray's class name, and Ray's defaults */
    ck_assert_int_eq(parse("{\"scheduler\": {\"type\": \"median_stopping_rule\"}}", &c, &err),
                     TUNE_OK);
    ck_assert_ptr_eq(c.type, find("median_stopping"));
    md = c.cfg;
    ck_assert_str_eq(md->time_attr, "time_total_s");
    ck_assert_double_eq(md->grace_period, 60);
    ck_assert_int_eq(md->min_samples_required, 3);
    ck_assert_double_eq(md->min_time_slice, 0);
    ck_assert_int_eq(md->hard_stop, 1);
    struct tunep_scheduler *s = NULL;
    ck_assert_int_eq(tunep_scheduler_new(&c, NULL, 0, &s, &err), TUNE_OK);
    ck_assert_str_eq(tunep_scheduler_time_attr(s), "time_total_s");
    tunep_scheduler_free(s);
    tunep_scheduler_config_done(&c);
}
END_TEST

START_TEST(test_hyperband_and_promotion_ok)
{
    struct tunep_scheduler_config c;
    tune_error err;
    ck_assert_int_eq(parse("{\"scheduler\": {\"type\": \"hyperband\"}}", &c, &err), TUNE_OK);
    ck_assert_ptr_eq(c.type, find("hyperband"));
    const struct tunep_hyperband_config *hb = c.cfg;
    ck_assert_str_eq(hb->time_attr, "training_iteration");
    ck_assert_double_eq(hb->max_t, 81);
    ck_assert_double_eq(hb->reduction_factor, 3);
    ck_assert_int_eq(hb->stop_last_trials, 1);
    tunep_scheduler_config_done(&c);
    ck_assert_int_eq(parse("{\"scheduler\": {\"type\": \"hyperband\", \"time_attr\": \"step\", "
                           "\"max_t\": 27.5, \"reduction_factor\": 2, \"stop_last_trials\": "
                           "false}}",
                           &c, &err),
                     TUNE_OK);
    hb = c.cfg;
    ck_assert_str_eq(hb->time_attr, "step");
    ck_assert_double_eq(hb->max_t, 27.5);
    ck_assert_double_eq(hb->reduction_factor, 2);
    ck_assert_int_eq(hb->stop_last_trials, 0);
    tunep_scheduler_config_done(&c);
    ck_assert_int_eq(
        parse("{\"scheduler\": {\"type\": \"asha\", \"variant\": \"promotion\"}}", &c, &err),
        TUNE_OK);
    ck_assert_ptr_eq(c.type, find("asha"));
    ck_assert_int_eq(((const struct tunep_asha_config *)c.cfg)->promotion, 1);
    tunep_scheduler_config_done(&c);
    ck_assert_int_eq(parse("{\"scheduler\": {\"type\": \"async_hyperband\", \"variant\": "
                           "\"stopping\"}}",
                           &c, &err),
                     TUNE_OK);
    ck_assert_int_eq(((const struct tunep_asha_config *)c.cfg)->promotion, 0);
    tunep_scheduler_config_done(&c);
    ck_assert_int_eq(parse("{\"scheduler\": {\"type\": \"asha\"}}", &c, &err), TUNE_OK);
    /* Ray's stopping variant by default */
    ck_assert_int_eq(((const struct tunep_asha_config *)c.cfg)->promotion, 0);
    tunep_scheduler_config_done(&c);
}
END_TEST

START_TEST(test_pbt_ok)
{
    struct tunep_scheduler_config c;
    tune_error err;
    const char *text =
        "{\"scheduler\": {\"type\": \"pbt\", \"time_attr\": \"epoch\", \"perturbation_interval\": "
        "4, "
        "\"burn_in_period\": 2, \"quantile_fraction\": 0.5, \"resample_probability\": 0, "
        "\"perturbation_factors\": [2, 0.5], \"hyperparam_mutations\": {"
        "\"lr\": {\"loguniform\": [1e-5, 1e-1]}, \"batch_size\": [16, 32, 64], "
        "\"model\": {\"act\": [\"relu\", \"gelu\", true, 1.5], \"drop\": {\"uniform\": [0, 0.5]}}, "
        "\"opt/beta\": {\"choice\": [0.9, 0.99]}}}}";
    ck_assert_int_eq(parse(text, &c, &err), TUNE_OK);
    ck_assert_ptr_eq(c.type, find("population_based_training"));
    const struct tunep_pbt_config *pc = c.cfg;
    ck_assert_str_eq(pc->time_attr, "epoch");
    ck_assert_double_eq(pc->perturbation_interval, 4);
    ck_assert_double_eq(pc->burn_in_period, 2);
    ck_assert_double_eq(pc->quantile_fraction, 0.5);
    ck_assert_double_eq(pc->resample_probability, 0);
    ck_assert_double_eq(pc->perturbation_factors[0], 2);
    ck_assert_double_eq(pc->perturbation_factors[1], 0.5);
    ck_assert_uint_eq(pc->mutations.n, 5);
    const struct tunep_mutation *m = pc->mutations.v;
    ck_assert_str_eq(m[0].name, "lr");
    ck_assert_int_eq(m[0].is_list, 0);
    ck_assert_uint_eq(m[0].dist->n, 1);
    ck_assert_int_eq(m[0].dist->params[0].dist, TUNEP_DIST_LOGUNIFORM);
    ck_assert_double_eq(m[0].dist->params[0].lo, 1e-5);
    ck_assert_str_eq(m[1].name, "batch_size");
    ck_assert_int_eq(m[1].is_list, 1);
    ck_assert_uint_eq(m[1].n_values, 3);
    ck_assert_int_eq(m[1].values[2].type, TUNEP_V_INT);
    ck_assert_int_eq(m[1].values[2].u.i, 64);
    ck_assert_str_eq(m[2].name, "model/act"); /* groups flatten as in param_space */
    ck_assert_int_eq(m[2].values[0].type, TUNEP_V_STRING);
    ck_assert_str_eq(m[2].values[1].u.s, "gelu");
    ck_assert_int_eq(m[2].values[2].type, TUNEP_V_BOOL);
    ck_assert_int_eq(m[2].values[3].type, TUNEP_V_DOUBLE);
    ck_assert_str_eq(m[3].name, "model/drop");
    ck_assert_int_eq(m[3].dist->params[0].dist, TUNEP_DIST_UNIFORM);
    ck_assert_str_eq(m[4].name, "opt/beta");
    ck_assert_int_eq(m[4].dist->params[0].dist, TUNEP_DIST_CHOICE);
    for (size_t i = 0; i < 5; i++)
        ck_assert_uint_eq(m[i].param, SIZE_MAX); /* resolved against the space later */

    /* Resolving against a space (in any order) gives each mutation its parameter. */
    tune_space *space = NULL;
    ck_assert_int_eq(tune_space_new(&space, &err), TUNE_OK);
    const char *names[6] = {"opt/beta", "model/drop", "x", "model/act", "batch_size", "lr"};
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(tune_space_add_json(space, names[i], "{\"uniform\": [0, 1]}", &err),
                         TUNE_OK);
    json_t *root = json_loads(text, 0, NULL);
    struct tunep_cfgctx ctx = {text, strlen(text), "<test>", &err};
    struct tunep_cfgpath path;
    memset(&path, 0, sizeof path);
    tunep_cfgpath_push_key(&path, "scheduler");
    ck_assert_int_eq(
        tunep_config_resolve_scheduler(&ctx, &path, json_object_get(root, "scheduler"), space, &c),
        TUNE_OK);
    ck_assert_int_eq(path.depth, 1);
    static const size_t want[5] = {5, 4, 3, 1, 0};
    for (size_t i = 0; i < 5; i++)
        ck_assert_uint_eq(pc->mutations.v[i].param, want[i]);
    /* and the scheduler accepts it */
    struct tunep_scheduler *s = NULL;
    ck_assert_int_eq(tunep_scheduler_new(&c, space, 1, &s, &err), TUNE_OK);
    ck_assert_str_eq(tunep_scheduler_time_attr(s), "epoch");
    tunep_scheduler_free(s);
    json_decref(root);
    tune_space_free(space);
    tunep_scheduler_config_done(&c);
    ck_assert_ptr_null(c.cfg);
    ck_assert_ptr_eq(c.type, find("fifo"));
    tunep_scheduler_config_done(&c); /* twice is fine */
}
END_TEST

struct cfg_case {
    const char *json;
    int line, column;
    const char *text;
};

/* Each position is the first character of the offending key, value or array element,
 * 1-based; they were found by writing a marker at that character and counting. */
static const struct cfg_case sched_errors[] = {
    {"{\"scheduler\": {\"type\": \"median_stopping\",\n  \"min_sample_required\": 2}}", 2, 3,
     "scheduler.min_sample_required: unknown key (did you mean 'min_samples_required'?)"},
    {"{\"scheduler\": {\"type\": \"median_stopping_rule\", \"max_t\": 3}}", 1, 48,
     "scheduler.max_t: not an option of the median_stopping scheduler (set \"type\": \"asha\" or "
     "\"hyperband\")"},
    {"{\"scheduler\": {\"type\": \"hyperband\", \"max_t\": 27,\n  \"grace_period\": 3}}", 2, 3,
     "scheduler.grace_period: not an option of the hyperband scheduler (set \"type\": \"asha\" or "
     "\"median_stopping\")"},
    {"{\"scheduler\": {\"type\": \"asha\", \"hyperparam_mutations\": {}}}", 1, 32,
     "scheduler.hyperparam_mutations: not an option of the asha scheduler (set \"type\": \"pbt\")"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"bogus\": 1}}", 1, 31,
     "scheduler.bogus: unknown key (expected one of: type, time_attr, perturbation_interval, "
     "burn_in_period, quantile_fraction, resample_probability, perturbation_factors, "
     "hyperparam_mutations)"},
    {"{\"scheduler\": {\"type\": \"median_stopping\", \"min_samples_required\": 0}}", 1, 67,
     "scheduler.min_samples_required: must be >= 1"},
    {"{\"scheduler\": {\"type\": \"median_stopping\", \"min_samples_required\": 1.5}}", 1, 67,
     "scheduler.min_samples_required: expected an integer"},
    {"{\"scheduler\": {\"type\": \"median_stopping\",\n    \"grace_period\": -1}}", 2, 21,
     "scheduler.grace_period: must be >= 0"},
    {"{\"scheduler\": {\"type\": \"median_stopping\", \"min_time_slice\": -0.5}}", 1, 61,
     "scheduler.min_time_slice: must be >= 0"},
    {"{\"scheduler\": {\"type\": \"median_stopping\", \"hard_stop\": \"yes\"}}", 1, 56,
     "scheduler.hard_stop: expected true or false"},
    {"{\"scheduler\": {\"type\": \"median_stopping\", \"time_attr\": \"\"}}", 1, 56,
     "scheduler.time_attr: must not be empty"},
    {"{\"scheduler\": {\"type\": \"asha\", \"variant\": \"promote\"}}", 1, 43,
     "scheduler.variant: expected \"stopping\" or \"promotion\""},
    {"{\"scheduler\": {\"type\": \"hyperband\", \"reduction_factor\": 1}}", 1, 57,
     "scheduler.reduction_factor: must be > 1"},
    {"{\"scheduler\": {\"type\": \"hyperband\", \"max_t\": -81}}", 1, 46,
     "scheduler.max_t: must be > 0"},
    {"{\"scheduler\": {\"type\": \"hyperband\", \"stop_last_trials\": 0}}", 1, 57,
     "scheduler.stop_last_trials: expected true or false"},
    {"{\"scheduler\": {\"type\": \"hyperband\", \"max_t\": 1e30,\n  \"reduction_factor\": 1.5}}", 2,
     23,
     "scheduler.reduction_factor: more than 64 brackets: log(max_t) / log(reduction_factor) must "
     "be < 64"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"quantile_fraction\": 0.5}}", 1, 15,
     "scheduler: pbt needs \"hyperparam_mutations\": the parameters it explores, e.g. {\"lr\": "
     "{\"loguniform\": [1e-5, 1e-1]}}"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"quantile_fraction\": 0.6}}", 1, 52,
     "scheduler.quantile_fraction: must be between 0 and 0.5"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"resample_probability\": 1.5}}", 1, 55,
     "scheduler.resample_probability: must be between 0 and 1"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"perturbation_interval\": 0}}", 1, 56,
     "scheduler.perturbation_interval: must be > 0"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"burn_in_period\": -1}}", 1, 49,
     "scheduler.burn_in_period: must be >= 0"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"perturbation_factors\": [1.2]}}", 1, 55,
     "scheduler.perturbation_factors: expected two numbers such as [1.2, 0.8]"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"perturbation_factors\": [1.2, \"x\"]}}", 1, 61,
     "scheduler.perturbation_factors[1]: expected a number"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"perturbation_factors\": [0, 0.8]}}", 1, 56,
     "scheduler.perturbation_factors[0]: must be > 0"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"hyperparam_mutations\": [\"lr\"]}}", 1, 55,
     "scheduler.hyperparam_mutations: expected an object such as {\"lr\": {\"loguniform\": [1e-5, "
     "1e-1]}, \"batch_size\": [16, 32, 64]}"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"hyperparam_mutations\": {}}}", 1, 55,
     "scheduler.hyperparam_mutations: expected at least one parameter to mutate, e.g. {\"lr\": "
     "{\"loguniform\": [1e-5, 1e-1]}}"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"hyperparam_mutations\": {\n  \"lr\": 0.1}}}", 2, 9,
     "scheduler.hyperparam_mutations.lr: expected a list of values or a distribution such as "
     "{\"loguniform\": [1e-5, 1e-1]}"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"hyperparam_mutations\": {\"lr\": []}}}", 1, 62,
     "scheduler.hyperparam_mutations.lr: the list of values must not be empty"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"hyperparam_mutations\": {\"bs\": [16, null]}}}", 1, 67,
     "scheduler.hyperparam_mutations.bs[1]: expected a number, string or boolean"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"hyperparam_mutations\": {\"bs\": {\"grid_search\": [1, "
     "2]}}}}",
     1, 62,
     "scheduler.hyperparam_mutations.bs: grid_search cannot be mutated: give its values as a list"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"hyperparam_mutations\": {\n  \"lr\": {\"loguniform\": "
     "[0, 1]}}}}",
     2, 25, "scheduler.hyperparam_mutations.lr: loguniform needs 0 < low < high"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"hyperparam_mutations\": {\"lr\": {\"loguniform\": "
     "[1e-5]}}}}",
     1, 77, "scheduler.hyperparam_mutations.lr: loguniform takes [low, high] or [low, high, base]"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"hyperparam_mutations\": {\"lr\": [1e-3],\n  \"model\": "
     "{}}}}",
     2, 12,
     "scheduler.hyperparam_mutations.model: expected at least one parameter to mutate, e.g. "
     "{\"lr\": {\"loguniform\": [1e-5, 1e-1]}}"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"hyperparam_mutations\": {\"a/b\": [1],\n  \"a\": "
     "{\"b\": [2]}}}}",
     2, 9, "scheduler.hyperparam_mutations.a.b: 'a/b' is mutated twice"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"hyperparam_mutations\": {\"a\": {\"b\": {\"c\": "
     "{\"d\": {\"e\": {\"f\": {\"g\": {\"h\": {\"i\": {\"j\": {\"k\": {\"l\": [1]}}}}}}}}}}}}}}",
     1, 116,
     "scheduler.hyperparam_mutations.a.b.c.d.e.f.g.h.i.j.k: parameter groups nest too deeply"},
};

START_TEST(test_errors)
{
    const struct cfg_case *k = &sched_errors[_i];
    struct tunep_scheduler_config c;
    memset(&c, 0x5a, sizeof c);
    tune_error err;
    ck_assert_msg(parse(k->json, &c, &err) == TUNE_ECONFIG, "case %d passed", _i);
    ck_assert_int_eq(err.code, TUNE_ECONFIG);
    ck_assert_msg(strcmp(err.text, k->text) == 0, "case %d: '%s'", _i, err.text);
    ck_assert_msg(err.line == k->line && err.column == k->column, "case %d: at %d:%d, want %d:%d",
                  _i, err.line, err.column, k->line, k->column);
    ck_assert_str_eq(err.source, "<test>");
    /* out is untouched on failure (and nothing leaks: ASan) */
    unsigned char *p = (unsigned char *)&c;
    for (size_t j = 0; j < sizeof c; j++)
        ck_assert_int_eq(p[j], 0x5a);
}
END_TEST

/* Whole documents: the mutated names are checked against param_space, before or after. */
static const struct cfg_case full_errors[] = {
    {"{\"param_space\": {\"lr\": {\"loguniform\": [1e-5, 1e-1]}, \"bs\": {\"choice\": [16, "
     "32]}},\n \"scheduler\": {\"type\": \"pbt\", \"hyperparam_mutations\": {\n   \"lr\": [1e-3, "
     "1e-2],\n   \"lrr\": {\"uniform\": [0, 1]}}}}",
     4, 4,
     "scheduler.hyperparam_mutations.lrr: 'lrr' is not a parameter of param_space (did you mean "
     "'lr'?)"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"hyperparam_mutations\": {\n   \"model\": {\"actt\": "
     "[\"relu\", \"gelu\"]}}},\n \"param_space\": {\"model\": {\"act\": {\"choice\": [\"relu\", "
     "\"gelu\"]}, \"depth\": 3}}}",
     2, 14,
     "scheduler.hyperparam_mutations.model.actt: 'model/actt' is not a parameter of param_space "
     "(did you mean 'model/act'?)"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"hyperparam_mutations\": {\"momentum\": [0.9, "
     "0.99]}},\n \"param_space\": {\"lr\": {\"loguniform\": [1e-5, 1e-1]}, \"batch_size\": "
     "{\"choice\": [16, 32]}}}",
     1, 56,
     "scheduler.hyperparam_mutations.momentum: 'momentum' is not a parameter of param_space (it "
     "has: lr, batch_size)"},
    {"{\"scheduler\": {\"type\": \"pbt\", \"hyperparam_mutations\": {\"lr\": [0.1]}}}", 1, 56,
     "scheduler.hyperparam_mutations.lr: 'lr' is not a parameter of param_space (it has none)"},
};

START_TEST(test_full_errors)
{
    const struct cfg_case *k = &full_errors[_i];
    struct tunep_config c;
    tune_error err;
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(
        tunep_config_parse(k->json, strlen(k->json), "sweep.json", NULL, NULL, &c, &err),
        TUNE_ECONFIG);
    ck_assert_msg(strcmp(err.text, k->text) == 0, "case %d: '%s'", _i, err.text);
    ck_assert_msg(err.line == k->line && err.column == k->column, "case %d: at %d:%d, want %d:%d",
                  _i, err.line, err.column, k->line, k->column);
    ck_assert_str_eq(err.source, "sweep.json");
}
END_TEST

START_TEST(test_full_ok)
{
    /* param_space after the scheduler: resolved all the same; config_done frees the copies */
    const char *text =
        "{\"scheduler\": {\"type\": \"pbt\", \"perturbation_interval\": 2, "
        "\"hyperparam_mutations\": "
        "{\"model\": {\"lr\": {\"loguniform\": [1e-5, 1e-1]}}, \"bs\": [16, 32]}},"
        " \"param_space\": {\"bs\": {\"choice\": [16, 32]}, \"model\": {\"lr\": 0.01}}}";
    struct tunep_config c;
    tune_error err;
    ck_assert_msg(tunep_config_parse(text, strlen(text), "x.json", NULL, NULL, &c, &err) == TUNE_OK,
                  "%s", err.text);
    ck_assert_ptr_eq(c.scheduler.type, find("pbt"));
    const struct tunep_pbt_config *pc = c.scheduler.cfg;
    ck_assert_uint_eq(pc->mutations.n, 2);
    ck_assert_str_eq(pc->mutations.v[0].name, "model/lr");
    ck_assert_uint_eq(pc->mutations.v[0].param, 1);
    ck_assert_uint_eq(pc->mutations.v[1].param, 0);
    tunep_config_done(&c);
}
END_TEST

START_TEST(test_alloc_failures)
{
    /* Every allocation of a PBT parse fails in turn: TUNE_ENOMEM, nothing leaks (ASan). */
    const char *text =
        "{\"scheduler\": {\"type\": \"pbt\", \"hyperparam_mutations\": {\"lr\": {\"loguniform\": "
        "[1e-5, 1e-1]}, \"act\": [\"relu\", \"gelu\"], \"m\": {\"a\": [1, 2], \"b\": {\"choice\": "
        "[\"x\", \"y\"]}}, \"c\": [3], \"d\": [4], \"e\": [5], \"f\": [6], \"g\": [7], \"h\": [8], "
        "\"i\": [9]}}, \"param_space\": {\"lr\": 0.1, \"act\": \"relu\", \"m\": {\"a\": 1, \"b\": "
        "\"x\"}, \"c\": 3, \"d\": 4, \"e\": 5, \"f\": 6, \"g\": 7, \"h\": 8, \"i\": 9}}";
    int failures = 0;
    for (long n = 0;; n++) {
        struct tunep_config c;
        tune_error err;
        tune_test_alloc_fail_after(n);
        tune_status st = tunep_config_parse(text, strlen(text), "x.json", NULL, NULL, &c, &err);
        tune_test_alloc_reset();
        if (!tune_test_alloc_failed()) {
            ck_assert_int_eq(st, TUNE_OK);
            ck_assert_int_gt(failures, 20);
            ck_assert_uint_eq(((const struct tunep_pbt_config *)c.scheduler.cfg)->mutations.n, 11);
            tunep_config_done(&c);
            break;
        }
        failures++;
        if (st == TUNE_OK) /* jansson's own allocations do not go through ours */
            tunep_config_done(&c);
        else
            ck_assert_int_eq(st, TUNE_ENOMEM);
    }
}
END_TEST

/* ---- a scheduler defined here: one file, one row --------------------------------------- */

/* "stop_below": stops a trial at its first report below threshold (one option). */
struct stop_below_config {
    double threshold;
};

struct stop_below {
    double threshold;
    int64_t n_stopped;
};

static const struct tunep_option stop_below_options[] = {
    TUNEP_OPT_ROW("threshold", TUNEP_OPT_REAL, struct stop_below_config, threshold, 0, 1, 0.5),
    {0},
};

/* A rule of its own, to show check() errors land on the key: 0 would stop nothing. */
static tune_status stop_below_check(const void *cfg, uint64_t given, struct tunep_opt_error *e)
{
    (void)given;
    if (((const struct stop_below_config *)cfg)->threshold == 0)
        return tunep_opt_fail(e, "threshold", 0, "0 would stop no trial");
    return TUNE_OK;
}

static tune_status stop_below_create(const void *cfg, const tune_space *space, uint64_t seed,
                                     void **ret, tune_error *err)
{
    (void)space;
    (void)seed;
    struct stop_below *sb = calloc(1, sizeof *sb);
    if (!sb)
        return tunep_error_set(err, TUNE_ENOMEM, "stop_below: out of memory");
    sb->threshold = ((const struct stop_below_config *)cfg)->threshold;
    *ret = sb;
    return TUNE_OK;
}

static void stop_below_free(void *self)
{
    free(self);
}

static enum tunep_decision stop_below_on_result(void *self, int64_t trial_id, int has_t, double t,
                                                double score, int64_t n_waiting)
{
    struct stop_below *sb = self;
    (void)trial_id;
    (void)t;
    (void)n_waiting;
    if (!has_t || !(score < sb->threshold))
        return TUNEP_CONTINUE;
    sb->n_stopped++;
    return TUNEP_STOP;
}

static void stop_below_describe(const void *self, double sign, struct tunep_buf *buf)
{
    const struct stop_below *sb = self;
    tunep_buf_printf(buf, "stop below %g: %lld stopped\n", sign * sb->threshold,
                     (long long)sb->n_stopped);
}

static const struct tunep_scheduler_type stop_below_type = {
    .name = "stop_below",
    .title = "Stop below",
    .options = stop_below_options,
    .config_size = sizeof(struct stop_below_config),
    .check = stop_below_check,
    .create = stop_below_create,
    .free = stop_below_free,
    .on_result = stop_below_on_result,
    .describe = stop_below_describe,
};

/* Registers the row once per process (Check may run the tests in one process). */
static void register_stop_below(void)
{
    if (tunep_scheduler_find("stop_below") == &stop_below_type)
        return;
    tune_error err;
    ck_assert_msg(tunep_scheduler_register(&stop_below_type, &err) == TUNE_OK, "%s", err.text);
}

START_TEST(test_register_rejects)
{
    tune_error err;
    /* names and aliases are unique across the registry, built-ins included */
    static const struct tunep_scheduler_type taken = {.name = "asha", .title = "x"};
    ck_assert_int_eq(tunep_scheduler_register(&taken, &err), TUNE_EINVAL);
    ck_assert_str_eq(err.text, "scheduler: 'asha' is registered already");
    static const char *const aliases[] = {"fresh", "median_stopping_rule", NULL};
    static const struct tunep_scheduler_type alias_taken = {
        .name = "fresh", .aliases = aliases, .title = "x"};
    ck_assert_int_eq(tunep_scheduler_register(&alias_taken, &err), TUNE_EINVAL);
    /* incomplete rows */
    static const struct tunep_scheduler_type no_title = {.name = "fresh"};
    ck_assert_int_eq(tunep_scheduler_register(&no_title, &err), TUNE_EINVAL);
    static const struct tunep_scheduler_type no_free = {
        .name = "fresh", .title = "x", .create = stop_below_create};
    ck_assert_int_eq(tunep_scheduler_register(&no_free, &err), TUNE_EINVAL);
    static const struct tunep_scheduler_type no_size = {
        .name = "fresh", .title = "x", .options = stop_below_options};
    ck_assert_int_eq(tunep_scheduler_register(&no_size, &err), TUNE_EINVAL);
    ck_assert_ptr_null(tunep_scheduler_find("fresh"));
    /* the built-ins, in their order, FIFO the default */
    static const char *const builtin[] = {"fifo", "asha", "median_stopping", "hyperband", "pbt"};
    ck_assert_uint_ge(tunep_scheduler_count(), 5);
    for (size_t i = 0; i < 5; i++)
        ck_assert_str_eq(tunep_scheduler_at(i)->name, builtin[i]);
    ck_assert_ptr_eq(tunep_scheduler_type_default(), tunep_scheduler_at(0));
    register_stop_below();
    ck_assert_int_eq(tunep_scheduler_register(&stop_below_type, &err), TUNE_EINVAL); /* twice */
}
END_TEST

START_TEST(test_registered_parses)
{
    register_stop_below();
    struct tunep_scheduler_config c;
    tune_error err;
    ck_assert_int_eq(
        parse("{\"scheduler\": {\"type\": \"stop_below\", \"threshold\": 0.25}}", &c, &err),
        TUNE_OK);
    ck_assert_ptr_eq(c.type, &stop_below_type);
    ck_assert_double_eq(((const struct stop_below_config *)c.cfg)->threshold, 0.25);
    ck_assert_str_eq(tunep_scheduler_config_time_attr(&c), "training_iteration");
    tunep_scheduler_config_done(&c);
    ck_assert_int_eq(parse("{\"scheduler\": {\"type\": \"stop_below\"}}", &c, &err), TUNE_OK);
    ck_assert_double_eq(((const struct stop_below_config *)c.cfg)->threshold, 0.5); /* default */
    tunep_scheduler_config_done(&c);

    /* its errors, and the built-ins' errors that now know it */
    static const struct cfg_case cases[] = {
        {"{\"scheduler\": {\"type\": \"stop_below\", \"threshold\": 2}}", 1, 51,
         "scheduler.threshold: must be between 0 and 1"},
        {"{\"scheduler\": {\"type\": \"stop_below\", \"threshold\": 0}}", 1, 51,
         "scheduler.threshold: 0 would stop no trial"},
        {"{\"scheduler\": {\"type\": \"stop_below\", \"treshold\": 0.1}}", 1, 38,
         "scheduler.treshold: unknown key (did you mean 'threshold'?)"},
        {"{\"scheduler\": {\"type\": \"stop_below\", \"bogus\": 0.1}}", 1, 38,
         "scheduler.bogus: unknown key (expected one of: type, threshold)"},
        {"{\"scheduler\": {\"type\": \"stop_below\", \"max_t\": 9}}", 1, 38,
         "scheduler.max_t: not an option of the stop_below scheduler (set \"type\": \"asha\" or "
         "\"hyperband\")"},
        {"{\"scheduler\": {\"type\": \"asha\", \"threshold\": 0.1}}", 1, 32,
         "scheduler.threshold: not an option of the asha scheduler (set \"type\": "
         "\"stop_below\")"},
        {"{\"scheduler\": {\"type\": \"stop_bellow\"}}", 1, 24,
         "scheduler.type: unknown scheduler 'stop_bellow' (expected one of: fifo, asha, "
         "median_stopping, hyperband, pbt, stop_below)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_msg(parse(cases[i].json, &c, &err) == TUNE_ECONFIG, "case %zu passed", i);
        ck_assert_msg(strcmp(err.text, cases[i].text) == 0, "case %zu: '%s'", i, err.text);
        ck_assert_msg(err.line == cases[i].line && err.column == cases[i].column,
                      "case %zu: at %d:%d, want %d:%d", i, err.line, err.column, cases[i].line,
                      cases[i].column);
    }
}
END_TEST

/* What the objective saw: trials stopped early, and any report answered against the rule. */
struct seen {
    atomic_int stopped, finished, wrong;
};

/* Reports x five times; the scheduler must stop it at the first report exactly when x < 0.3. */
static tune_status obj_report_x(tune_trial *t, void *ud)
{
    struct seen *seen = ud;
    double x = tune_trial_get_double_or(t, "x", -1);
    for (int i = 0; i < 5; i++) {
        tune_status st = tune_trial_report_metric(t, "score", x, NULL);
        if (st == TUNE_ESTOP) {
            atomic_fetch_add(&seen->stopped, 1);
            if (!(x < 0.3) || i != 0)
                atomic_fetch_add(&seen->wrong, 1);
            return TUNE_OK;
        }
        if (st)
            return st;
    }
    atomic_fetch_add(&seen->finished, 1);
    if (x < 0.3)
        atomic_fetch_add(&seen->wrong, 1);
    return TUNE_OK;
}

START_TEST(test_registered_runs_a_study)
{
    register_stop_below();
    tune_study *s = NULL;
    tune_error err;
    ck_assert_msg(tune_study_new_from_json(
                      "{\"metric\": \"score\", \"mode\": \"max\", \"num_samples\": 40, \"seed\": 7,"
                      " \"storage\": \":memory:\", \"max_concurrent_trials\": 3,"
                      " \"param_space\": {\"x\": {\"uniform\": [0, 1]}},"
                      " \"scheduler\": {\"type\": \"stop_below\", \"threshold\": 0.3}}",
                      NULL, &s, &err) == TUNE_OK,
                  "%s", err.text);
    struct seen seen = {0};
    ck_assert_int_eq(tune_study_set_objective(s, obj_report_x, &seen, NULL), TUNE_OK);
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_OK);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(atomic_load(&seen.wrong), 0);
    /* 40 uniform draws: some on each side of 0.3 (seed 7) */
    ck_assert_int_gt(atomic_load(&seen.stopped), 0);
    ck_assert_int_gt(atomic_load(&seen.finished), 0);
    ck_assert_int_eq(c[TUNE_TRIAL_STOPPED], atomic_load(&seen.stopped));
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], atomic_load(&seen.finished));
    ck_assert_int_eq(c[TUNE_TRIAL_STOPPED] + c[TUNE_TRIAL_TERMINATED], 40);
    /* the progress table shows the scheduler's own description */
    char *text = NULL;
    ck_assert_int_eq(tune_study_progress_text(s, 5, &text, &err), TUNE_OK);
    char want[64];
    snprintf(want, sizeof want, "stop below 0.3: %d stopped", atomic_load(&seen.stopped));
    ck_assert_msg(strstr(text, want) != NULL, "no '%s' in:\n%s", want, text);
    tune_free(text);
    tune_study_free(s);
}
END_TEST

static Suite *config_scheduler_suite(void)
{
    Suite *s = suite_create("config_scheduler");
    TCase *tc = tcase_create("config_scheduler");
    tcase_add_test(tc, test_median_ok);
    tcase_add_test(tc, test_hyperband_and_promotion_ok);
    tcase_add_test(tc, test_pbt_ok);
    tcase_add_loop_test(tc, test_errors, 0, (int)(sizeof sched_errors / sizeof sched_errors[0]));
    tcase_add_loop_test(tc, test_full_errors, 0, (int)(sizeof full_errors / sizeof full_errors[0]));
    tcase_add_test(tc, test_full_ok);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);
    /* Last: in a run without fork, the registered row stays for the rest of the program. */
    tc = tcase_create("registry");
    tcase_add_test(tc, test_register_rejects);
    tcase_add_test(tc, test_registered_parses);
    tcase_add_test(tc, test_registered_runs_a_study);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(config_scheduler_suite)
