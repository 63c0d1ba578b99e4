/*
 * test_trainer_registry.c - a trainer is one table row: a trainer defined only
 * in this file, registered the way the built-in ones are, is named by a
 * config file's "trainer" section, has its options read and checked with
 * positioned errors, and runs a sweep; the built-in types stay listed.
 */
#include <stdatomic.h>
#include <stddef.h>

#include "check_util.h"
#include "trainers/trainer.h"

/* ---- the "ramp" trainer: score = scale * x * iteration ------------------------ */

struct ramp_config {
    int iterations;
    double scale;
    char *label;
};

static const struct tunep_option ramp_options[] = {
    TUNEP_OPT_ROW("iterations", TUNEP_OPT_INT, struct ramp_config, iterations, 1, 100, 3),
    TUNEP_OPT_ROW("scale", TUNEP_OPT_NUMBER, struct ramp_config, scale, 0, 10, 1),
    {.name = "label",
     .type = TUNEP_OPT_STRING,
     .offset = offsetof(struct ramp_config, label),
     .hi = 32,
     .def_text = "ramp"},
    {0},
};

struct ramp_state {
    const struct ramp_config *cfg;
    atomic_int objective_calls;
    int prepared, concurrency, local_rank;
};

static atomic_int frees;
static struct ramp_state *last_state; /* the state create() made last */

static tune_status ramp_check(void *vcfg, const struct tunep_trainer_check_ctx *ctx,
                              struct tunep_opt_error *e)
{
    const struct ramp_config *c = vcfg;
    if (strcmp(c->label, "bad") == 0)
        return tunep_opt_fail(e, "label", 0, "'bad' is not a label");
    for (size_t i = 0; i < ctx->n_params; i++)
        if (strcmp(ctx->param_names[i], "x") == 0)
            return TUNE_OK;
    return tunep_opt_fail(e, "", 0, "the ramp trainer needs a parameter 'x'");
}

static tune_status ramp_create(const void *cfg, const char *source, void **ret_state,
                               tune_error *err)
{
    (void)source, (void)err;
    struct ramp_state *s = calloc(1, sizeof *s);
    ck_assert_ptr_nonnull(s);
    s->cfg = cfg;
    last_state = s;
    *ret_state = s;
    return TUNE_OK;
}

static tune_status ramp_prepare(void *state, const struct tunep_trainer_env *env, tune_error *err)
{
    (void)err;
    struct ramp_state *s = state;
    s->prepared++;
    s->concurrency = env->concurrency;
    s->local_rank = env->local_rank;
    return TUNE_OK;
}

static tune_status ramp_objective(tune_trial *t, void *user_data)
{
    struct ramp_state *s = user_data;
    atomic_fetch_add(&s->objective_calls, 1);
    double x = tune_trial_get_double_or(t, "x", 0);
    for (int i = 1; i <= s->cfg->iterations; i++) {
        tune_status st = tune_trial_report_metric(t, "score", s->cfg->scale * x * i, NULL);
        if (st == TUNE_ESTOP)
            return TUNE_OK;
        if (st)
            return st;
    }
    return TUNE_OK;
}

static void ramp_free(void *state)
{
    atomic_fetch_add(&frees, 1);
    free(state);
}

static const struct tunep_trainer_type ramp = {
    .name = "ramp",
    .options = ramp_options,
    .config_size = sizeof(struct ramp_config),
    .check = ramp_check,
    .create = ramp_create,
    .prepare = ramp_prepare,
    .objective = ramp_objective,
    .free = ramp_free,
};

static void register_ramp(void)
{
    static int done;
    if (done++)
        return;
    tune_error err = {0};
    ck_assert_msg(tunep_trainer_register(&ramp, &err) == TUNE_OK, "%s", err.text);
}

#define SWEEP(trainer)                                                                             \
    "{\"metric\": \"score\", \"mode\": \"max\", \"max_concurrent_trials\": 2, \"seed\": 1,\n"      \
    " \"param_space\": {\"x\": {\"grid_search\": [1, 2, 3]}},\n"                                   \
    " \"storage\": \":memory:\",\n"                                                                \
    " \"trainer\": " trainer "}"

/* ---- tests ---------------------------------------------------------------- */

START_TEST(a_test_trainer_runs_a_sweep_from_a_config)
{
    register_ramp();
    tune_study *s = NULL;
    tune_error err = {0};
    int frees_before = atomic_load(&frees);
    ck_assert_msg(tune_study_new_from_json(SWEEP("{\"type\": \"ramp\", \"iterations\": 4, "
                                                 "\"scale\": 2.5}"),
                                           "sweep.json", &s, &err) == TUNE_OK,
                  "%s", err.text);
    ck_assert_msg(tune_study_run(s, &err) == TUNE_OK, "%s", err.text);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 3);
    char *best = NULL;
    ck_assert_int_eq(tune_study_best_json(s, &best, &err), TUNE_OK);
    /* x = 3 after 4 iterations at scale 2.5: the options reached the trainer. */
    ck_assert_msg(strstr(best, "\"score\":30") || strstr(best, "\"score\": 30"), "%s", best);
    tune_free(best);
    tune_study_free(s);
    ck_assert_int_eq(atomic_load(&frees), frees_before + 1);
}
END_TEST

/* The engine hands the trainer where it runs: trials at once (2 of 3), no MPI rank. */
START_TEST(prepare_gets_the_environment_once_before_the_trials)
{
    register_ramp();
    tune_study *s = NULL;
    tune_error err = {0};
    ck_assert_int_eq(tune_study_new_from_json(SWEEP("{\"type\": \"ramp\"}"), NULL, &s, &err),
                     TUNE_OK);
    struct ramp_state *state = last_state;
    ck_assert_int_eq(state->prepared, 0);
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_OK);
    ck_assert_int_eq(state->prepared, 1);
    ck_assert_int_eq(state->concurrency, 2);
    ck_assert_int_eq(state->local_rank, -1);
    ck_assert_int_eq(atomic_load(&state->objective_calls), 3);
    ck_assert_str_eq(state->cfg->label, "ramp"); /* a string default */
    ck_assert_int_eq(state->cfg->iterations, 3);
    tune_study_free(s);
}
END_TEST

START_TEST(defaults_and_ranges_come_from_the_table)
{
    register_ramp();
    static const struct {
        const char *trainer, *text;
        int line, column;
    } cases[] = {
        {"{\"type\": \"ramp\", \"scale\": 11}",
         "trainer.scale: expected a number in [0, 10], got 11", 4, 39},
        {"{\"type\": \"ramp\", \"scal\": 1}", "trainer.scal: unknown key (did you mean 'scale'?)",
         4, 30},
        {"{\"type\": \"ramp\", \"iterations\": 1.5}", "trainer.iterations: expected an integer", 4,
         44},
        {"{\"type\": \"ramp\", \"label\": \"bad\"}", "trainer.label: 'bad' is not a label", 4, 39},
        {"{\"type\": \"rampp\"}", NULL, 4, 22},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char json[1024];
        snprintf(json, sizeof json, SWEEP("%s"), cases[i].trainer);
        tune_study *s = NULL;
        tune_error err = {0};
        ck_assert_int_eq(tune_study_new_from_json(json, "sweep.json", &s, &err), TUNE_ECONFIG);
        if (cases[i].text)
            ck_assert_str_eq(err.text, cases[i].text);
        else /* every registered type is offered, the built-in ones and this one */
            ck_assert_msg(strstr(err.text,
                                 "unknown trainer type 'rampp' (expected \"synthetic\", \"bert\", "
                                 "\"command\", \"plugin\"") &&
                              strstr(err.text, "\"ramp\""),
                          "%s", err.text);
        ck_assert_str_eq(err.source, "sweep.json");
        ck_assert_int_eq(err.line, cases[i].line);
        ck_assert_int_eq(err.column, cases[i].column);
        ck_assert_ptr_null(s);
    }
}
END_TEST

START_TEST(the_check_sees_the_parameters)
{
    register_ramp();
    tune_study *s = NULL;
    tune_error err = {0};
    const char *json = "{\"param_space\": {\"y\": {\"uniform\": [0, 1]}},\n"
                       " \"trainer\": {\"type\": \"ramp\"}}";
    ck_assert_int_eq(tune_study_new_from_json(json, "s.json", &s, &err), TUNE_ECONFIG);
    ck_assert_str_eq(err.text, "trainer: the ramp trainer needs a parameter 'x'");
    ck_assert_int_eq(err.line, 2);
    ck_assert_int_eq(err.column, 13);
}
END_TEST

START_TEST(names_are_unique_and_rows_complete)
{
    register_ramp();
    tune_error err = {0};
    ck_assert_int_eq(tunep_trainer_register(&ramp, &err), TUNE_EINVAL);
    ck_assert_str_eq(err.text, "trainer type \"ramp\" is registered already");
    struct tunep_trainer_type bert_again = ramp;
    bert_again.name = "bert";
    ck_assert_int_eq(tunep_trainer_register(&bert_again, &err), TUNE_EINVAL);
    struct tunep_trainer_type no_objective = ramp;
    no_objective.name = "lazy";
    no_objective.objective = NULL;
    ck_assert_int_eq(tunep_trainer_register(&no_objective, &err), TUNE_EINVAL);
    /* The registry lists the built-in rows first, in their table's order. */
    const struct tunep_trainer_type *const *types = tunep_trainer_types();
    const char *expect[] = {"synthetic", "bert", "command", "plugin", "ramp"};
    for (size_t i = 0; i < 5; i++) {
        ck_assert_ptr_nonnull(types[i]);
        ck_assert_str_eq(types[i]->name, expect[i]);
    }
    ck_assert_ptr_null(types[5]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("trainer_registry");
    TCase *tc = tcase_create("registry");
    tcase_add_test(tc, a_test_trainer_runs_a_sweep_from_a_config);
    tcase_add_test(tc, prepare_gets_the_environment_once_before_the_trials);
    tcase_add_test(tc, defaults_and_ranges_come_from_the_table);
    tcase_add_test(tc, the_check_sees_the_parameters);
    tcase_add_test(tc, names_are_unique_and_rows_complete);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(suite)
