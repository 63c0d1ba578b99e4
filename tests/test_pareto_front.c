/*
 * test_pareto_front.c - tune_study_pareto_front() on a hand-made table of
 * two objectives (f1 minimised, f2 maximised), run through a real study:
 * duplicates, ties on one objective, a missing objective, a trial that ended
 * in ERROR with the best values of all; the same front from the folder the
 * study ran into (tune_study_open()), the JSON of its members, the
 * single-objective case (every trial sharing the best value) and the error
 * when no finished trial reported an objective.
 *
 * Each trial k (a grid over 0..N-1, one at a time) reports TABLE[k]:
 *
 *   k   f1    f2    front?
 *   0   1     1     yes
 *   1   2     3     yes (equal to 2: duplicates never dominate each other)
 *   2   2     3     yes
 *   3   3     3     no: 1 has the same f2 and a smaller f1
 *   4   0.5   0     yes (smallest f1)
 *   5   4     5     yes (largest f2)
 *   6   1     0.5   no: 0 has the same f1 and a larger f2
 *   7   0.1   -     no: f2 missing, dominated by every complete trial
 *   8   0     10    no: ended in ERROR, left out (it would dominate all)
 *   9   1.5   2     yes
 *  10   2     2.5   no: 1 has the same f1 and a larger f2
 *
 * Sorted by f1 (minimised), ties by trial id: 4, 0, 9, 1, 2, 5.
 */
#include <jansson.h>
#include <math.h>

#include "check_util.h"
#include "tune.h"

#define N_ROWS 11

static const double TABLE[N_ROWS][2] = {
    {1, 1},  {2, 3},   {2, 3},   {3, 3}, {0.5, 0}, {4, 5}, {1, 0.5}, {0.1, (double)NAN},
    {0, 10}, {1.5, 2}, {2, 2.5},
};
static const int64_t FRONT[] = {4, 0, 9, 1, 2, 5};
#define N_FRONT (sizeof FRONT / sizeof *FRONT)

static tune_status objective(tune_trial *t, void *ud)
{
    (void)ud;
    int64_t k;
    if (tune_trial_get_int(t, "k", &k, NULL))
        return TUNE_EINVAL;
    if (k == 8) {
        const char *names[2] = {"f1", "f2"};
        double v[2] = {TABLE[8][0], TABLE[8][1]};
        tune_trial_report(t, 2, names, v, NULL);
        return TUNE_EINVAL; /* ERROR after reporting the best values of all */
    }
    /* f1, f2 (unless missing), aux = 100 + k and c = min(k, 5) (ties for one objective). */
    const char *names[4];
    double v[4];
    size_t n = 0;
    names[n] = "f1", v[n++] = TABLE[k][0];
    if (!isnan(TABLE[k][1]))
        names[n] = "f2", v[n++] = TABLE[k][1];
    names[n] = "aux", v[n++] = (double)(100 + k);
    names[n] = "c", v[n++] = (double)(k < 5 ? k : 5);
    return tune_trial_report(t, n, names, v, NULL);
}

#define GRID "\"k\": {\"grid_search\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}"

static tune_study *run(const char *metric_mode, const char *storage)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{%s, \"num_samples\": 1, \"seed\": 1, \"storage\": \"%s\","
             " \"max_concurrent_trials\": 1, \"max_failures\": 0,"
             " \"param_space\": {" GRID "}}",
             metric_mode, storage);
    tune_study *s = NULL;
    tune_error err;
    ck_assert_msg(tune_study_new_from_json(json, NULL, &s, &err) == TUNE_OK, "%s", err.text);
    ck_assert_int_eq(tune_study_set_objective(s, objective, NULL, &err), TUNE_OK);
    /* One trial ends in ERROR: the run says so, and the rest ran. */
    tune_status st = tune_study_run(s, &err);
    ck_assert_msg(st == TUNE_OK || st == TUNE_EFAILED, "%s", err.text);
    return s;
}

#define TWO_OBJECTIVES "\"metric\": [\"f1\", \"f2\"], \"mode\": [\"min\", \"max\"]"

/* The front of s is FRONT, in order, with the table's values and its metrics. */
static void check_front(tune_study *s)
{
    tune_result **front = NULL;
    size_t n = 0;
    tune_error err;
    ck_assert_uint_eq(tune_study_objective_count(s), 2);
    ck_assert_msg(tune_study_pareto_front(s, &front, &n, &err) == TUNE_OK, "%s", err.text);
    ck_assert_uint_eq(n, N_FRONT);
    for (size_t i = 0; i < n; i++) {
        int64_t k;
        double f1, f2, aux;
        ck_assert_int_eq(tune_result_get_int(front[i], "k", &k, NULL), TUNE_OK);
        ck_assert_int_eq(k, FRONT[i]);
        ck_assert_int_eq(tune_result_status(front[i]), TUNE_TRIAL_TERMINATED);
        ck_assert_int_eq(tune_result_get_metric(front[i], "f1", &f1, NULL), TUNE_OK);
        ck_assert_int_eq(tune_result_get_metric(front[i], "f2", &f2, NULL), TUNE_OK);
        ck_assert_int_eq(tune_result_get_metric(front[i], "aux", &aux, NULL), TUNE_OK);
        ck_assert_double_eq(f1, TABLE[k][0]);
        ck_assert_double_eq(f2, TABLE[k][1]);
        ck_assert_double_eq(aux, (double)(100 + k));
        ck_assert_double_eq(tune_result_score(front[i]), TABLE[k][0]);

        char *json = NULL;
        ck_assert_int_eq(tune_result_json(front[i], &json, &err), TUNE_OK);
        json_error_t jerr;
        json_t *root = json_loads(json, 0, &jerr);
        ck_assert_msg(root != NULL, "%s: %s", json, jerr.text);
        json_t *obj = json_object_get(root, "objectives"), *modes = json_object_get(root, "modes");
        ck_assert_msg(json_object_size(obj) == 2 && json_object_size(modes) == 2, "%s", json);
        ck_assert_double_eq(json_number_value(json_object_get(obj, "f1")), TABLE[k][0]);
        ck_assert_double_eq(json_number_value(json_object_get(obj, "f2")), TABLE[k][1]);
        ck_assert_str_eq(json_string_value(json_object_get(modes, "f1")), "min");
        ck_assert_str_eq(json_string_value(json_object_get(modes, "f2")), "max");
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(root, "config"), "k")),
                         k);
        ck_assert_double_eq(
            json_number_value(json_object_get(json_object_get(root, "metrics"), "aux")),
            (double)(100 + k));
        json_decref(root);
        tune_free(json);
    }
    tune_results_free(front, n);
}

START_TEST(front_in_memory)
{
    tune_study *s = run(TWO_OBJECTIVES, ":memory:");
    check_front(s);
    tune_study_free(s);
}
END_TEST

/* The folder the study ran into gives the same front. */
START_TEST(front_from_folder)
{
    char *dir = tune_test_mkdtemp();
    char storage[1100];
    snprintf(storage, sizeof storage, "%s/exp", dir);
    tune_study *s = run(TWO_OBJECTIVES, storage);
    check_front(s);
    tune_study_free(s);
    tune_error err;
    ck_assert_msg(tune_study_open(storage, &s, &err) == TUNE_OK, "%s", err.text);
    check_front(s);
    /* --metric f2 without a mode ranks f2 in its own direction (max): trial 8 is ERROR,
     * so 5 (f2 = 5) wins. */
    tune_result *best = NULL;
    ck_assert_msg(tune_study_best_by(s, "f2", NULL, TUNE_SCOPE_LAST, &best, &err) == TUNE_OK, "%s",
                  err.text);
    int64_t k;
    ck_assert_int_eq(tune_result_get_int(best, "k", &k, NULL), TUNE_OK);
    ck_assert_int_eq(k, 5);
    tune_result_free(best);
    tune_study_free(s);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/* Both directions flipped: f1 maximised, f2 minimised. By hand: 5 has the
 * largest f1; 3 (3, 3), 10 (2, 2.5), 9 (1.5, 2), 6 (1, 0.5) and 4 (0.5, 0) each
 * trade a smaller f1 for a smaller f2; 0 is dominated by 6 (same f1, larger
 * f2), 1 and 2 by 10, 7 lacks f2. Sorted by f1, largest first: 5, 3, 10, 9, 6, 4. */
START_TEST(front_mixed_directions_flipped)
{
    tune_study *s = run("\"metric\": [\"f1\", \"f2\"], \"mode\": [\"max\", \"min\"]", ":memory:");
    static const int64_t want[] = {5, 3, 10, 9, 6, 4};
    tune_result **front = NULL;
    size_t n = 0;
    tune_error err;
    ck_assert_msg(tune_study_pareto_front(s, &front, &n, &err) == TUNE_OK, "%s", err.text);
    ck_assert_uint_eq(n, sizeof want / sizeof *want);
    for (size_t i = 0; i < n; i++) {
        int64_t k;
        ck_assert_int_eq(tune_result_get_int(front[i], "k", &k, NULL), TUNE_OK);
        ck_assert_int_eq(k, want[i]);
    }
    tune_results_free(front, n);
    tune_study_free(s);
}
END_TEST

/* One objective: the front is every finished trial sharing the best value,
 * in trial order (c = min(k, 5) is 5 for 5, 6, 7, 9 and 10; 8 ended in ERROR). */
START_TEST(front_single_objective)
{
    static const struct {
        const char *metric_mode;
        int64_t want[5];
        size_t n;
    } cases[] = {
        {"\"metric\": \"f1\", \"mode\": \"min\"", {7}, 1},
        {"\"metric\": \"f2\", \"mode\": \"max\"", {5}, 1},
        {"\"metric\": \"f1\", \"mode\": \"max\"", {5}, 1},
        {"\"metric\": \"f2\", \"mode\": \"min\"", {4}, 1},
        {"\"metric\": \"c\", \"mode\": \"max\"", {5, 6, 7, 9, 10}, 5},
        {"\"metric\": [\"c\"], \"mode\": [\"min\"]", {0}, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        tune_study *s = run(cases[c].metric_mode, ":memory:");
        ck_assert_uint_eq(tune_study_objective_count(s), 1);
        tune_result **front = NULL;
        size_t n = 0;
        tune_error err;
        ck_assert_msg(tune_study_pareto_front(s, &front, &n, &err) == TUNE_OK, "%s", err.text);
        ck_assert_uint_eq(n, cases[c].n);
        for (size_t i = 0; i < n; i++) {
            int64_t k;
            ck_assert_int_eq(tune_result_get_int(front[i], "k", &k, NULL), TUNE_OK);
            ck_assert_int_eq(k, cases[c].want[i]);
        }
        tune_results_free(front, n);
        tune_study_free(s);
    }
}
END_TEST

/* No finished trial reported an objective: TUNE_ENOTFOUND naming them; NULL arguments. */
START_TEST(front_errors)
{
    tune_study *s = run("\"metric\": [\"g1\", \"g2\"], \"mode\": [\"min\", \"min\"]", ":memory:");
    tune_result **front = (tune_result **)1;
    size_t n = 77;
    tune_error err;
    ck_assert_int_eq(tune_study_pareto_front(s, &front, &n, &err), TUNE_ENOTFOUND);
    ck_assert_msg(strstr(err.text, "'g1', 'g2'") != NULL, "%s", err.text);
    ck_assert_ptr_eq(front, (tune_result **)1);
    ck_assert_uint_eq(n, 77);
    ck_assert_int_eq(tune_study_pareto_front(NULL, &front, &n, NULL), TUNE_EINVAL);
    ck_assert_int_eq(tune_study_pareto_front(s, NULL, &n, NULL), TUNE_EINVAL);
    ck_assert_uint_eq(tune_study_objective_count(NULL), 0);
    tune_results_free(NULL, 3);
    tune_study_free(s);
}
END_TEST

static Suite *pareto_front_suite(void)
{
    Suite *s = suite_create("pareto_front");
    TCase *tc = tcase_create("front");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, front_in_memory);
    tcase_add_test(tc, front_from_folder);
    tcase_add_test(tc, front_mixed_directions_flipped);
    tcase_add_test(tc, front_single_objective);
    tcase_add_test(tc, front_errors);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(pareto_front_suite)
