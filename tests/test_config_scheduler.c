/*
 * test_config_scheduler.c - the "scheduler" section for the median stopping
 * rule, HyperBand, ASHA's promotion variant and PBT: every option parsed with
 * its default, aliases, and every error at its exact line and column with its
 * exact text (jansson's check_error style), including PBT's
 * hyperparam_mutations checked against param_space wherever it appears in
 * the document. (FIFO and Ray's ASHA are covered by test_asha.c.)
 */
#include "check_util.h"

#include <jansson.h>
#include <math.h>
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
    ck_assert_int_eq(tunep_config_parse(k->json, strlen(k->json), "sweep.json", NULL, &c, &err),
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
    ck_assert_msg(tunep_config_parse(text, strlen(text), "x.json", NULL, &c, &err) == TUNE_OK, "%s",
                  err.text);
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
        tune_status st = tunep_config_parse(text, strlen(text), "x.json", NULL, &c, &err);
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
    return s;
}

TUNE_CHECK_MAIN(config_scheduler_suite)
