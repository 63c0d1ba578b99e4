/*
 * test_pareto_front.c - tune_study_pareto_front() on a hand-made table of
 * two objectives (f1 minimised, f2 maximised), run through a real study:
 * duplicates, ties on one objective, a missing objective, a trial that ended
 * in ERROR with the best values of all; the same front from the folder the
 * study ran into (tune_study_open()), the JSON of its members, the
 * single-objective case (every trial sharing the best value) and the error
 * when no finished trial reported an objective.
 *
 * Then studies that search with two objectives (accuracy maximised, latency
 * minimised, from two parameters): set up with tune_options' metric lists
 * (random search), with JSON and "nsga2", with JSON and "tpe" (MOTPE), and
 * driven by ask and tell with "tpe" (each trial reports both metrics, then
 * is told COMPLETE). Each study's front must be the one computed by hand from
 * the values its trials reported, in the documented order.
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
#include "engine/study.h"
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

/* ---- searched studies of two objectives ----------------------------------- */

#define SEARCH_TRIALS 40

/* Each trial's reported (accuracy, latency) by id; NaN until it reports. */
static double reported[SEARCH_TRIALS][2];

/* Accuracy (max) peaks at x = 0.7 and falls with y; latency (min) grows with x and falls with y. */
static void two_objectives(double x, double y, double *acc, double *lat)
{
    *acc = 1 - (x - 0.7) * (x - 0.7) - 0.2 * y;
    *lat = 1 + 5 * x + 2 * (1 - y) * (1 - y);
}

static tune_status search_objective(tune_trial *t, void *ud)
{
    (void)ud;
    int64_t id = tune_trial_id(t);
    ck_assert(id >= 0 && id < SEARCH_TRIALS);
    double acc, lat, x = tune_trial_get_double_or(t, "x", -1),
                     y = tune_trial_get_double_or(t, "y", -1);
    two_objectives(x, y, &acc, &lat);
    reported[id][0] = acc;
    reported[id][1] = lat;
    const char *names[2] = {"acc", "latency"};
    double v[2] = {acc, lat};
    return tune_trial_report(t, 2, names, v, NULL);
}

static void reset_reported(void)
{
    for (int i = 0; i < SEARCH_TRIALS; i++)
        reported[i][0] = reported[i][1] = (double)NAN;
}

/*
 * The front by hand: every trial that no other beats in one objective while
 * matching it in the other (accuracy larger, latency smaller), sorted by
 * accuracy, largest first, ties by id. Returns how many.
 */
static size_t front_by_hand(int64_t *ids)
{
    size_t n = 0;
    for (int a = 0; a < SEARCH_TRIALS; a++) {
        ck_assert_msg(!isnan(reported[a][0]), "trial %d never reported", a);
        int dominated = 0;
        for (int b = 0; b < SEARCH_TRIALS && !dominated; b++)
            dominated = reported[b][0] >= reported[a][0] && reported[b][1] <= reported[a][1] &&
                        (reported[b][0] > reported[a][0] || reported[b][1] < reported[a][1]);
        if (!dominated)
            ids[n++] = a;
    }
    for (size_t i = 1; i < n; i++) /* insertion sort: accuracy down, then id up */
        for (size_t j = i; j > 0 && reported[ids[j]][0] > reported[ids[j - 1]][0]; j--) {
            int64_t t = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    return n;
}

static void check_searched_front(tune_study *s, const char *what)
{
    int64_t want[SEARCH_TRIALS];
    size_t n_want = front_by_hand(want), n = 0;
    tune_result **front = NULL;
    tune_error err;
    ck_assert_uint_eq(tune_study_objective_count(s), 2);
    ck_assert_msg(tune_study_pareto_front(s, &front, &n, &err) == TUNE_OK, "%s", err.text);
    ck_assert_msg(n == n_want && n >= 2, "%s: %zu on the front, by hand %zu", what, n, n_want);
    for (size_t i = 0; i < n; i++) {
        double acc, lat;
        ck_assert_int_eq(tune_result_trial_id(front[i]), want[i]);
        ck_assert_int_eq(tune_result_get_metric(front[i], "acc", &acc, NULL), TUNE_OK);
        ck_assert_int_eq(tune_result_get_metric(front[i], "latency", &lat, NULL), TUNE_OK);
        ck_assert(acc == reported[want[i]][0] && lat == reported[want[i]][1]);
    }
    tune_results_free(front, n);
}

static tune_space *xy_space(void)
{
    tune_space *sp = NULL;
    ck_assert_int_eq(tune_space_new(&sp, NULL), TUNE_OK);
    ck_assert_int_eq(tune_space_add_uniform(sp, "x", 0, 1, NULL), TUNE_OK);
    ck_assert_int_eq(tune_space_add_uniform(sp, "y", 0, 1, NULL), TUNE_OK);
    return sp;
}

static void run_searched(tune_study *s, const char *what)
{
    tune_error err;
    reset_reported();
    ck_assert_int_eq(tune_study_set_objective(s, search_objective, NULL, &err), TUNE_OK);
    ck_assert_msg(tune_study_run(s, &err) == TUNE_OK, "%s: %s", what, err.text);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], SEARCH_TRIALS);
    check_searched_front(s, what);
}

/* tune_options with the metric lists: random search over the same two objectives. */
START_TEST(front_of_options_study)
{
    static const char *const metrics[] = {"acc", "latency"};
    static const tune_mode modes[] = {TUNE_MODE_MAX, TUNE_MODE_MIN};
    tune_options o;
    tune_options_default(&o);
    o.metric = "ignored"; /* metrics overrides it */
    o.metrics = metrics;
    o.modes = modes;
    o.num_metrics = 2;
    o.num_samples = SEARCH_TRIALS;
    o.seed = 3;
    o.max_concurrent_trials = 2;
    o.storage = ":memory:";
    tune_space *sp = xy_space();
    tune_study *s = NULL;
    tune_error err;
    ck_assert_msg(tune_study_new(&o, sp, &s, &err) == TUNE_OK, "%s", err.text);
    tune_space_free(sp);
    ck_assert_str_eq(tune_study_metric(s), "acc");
    run_searched(s, "options");
    tune_study_free(s);
}
END_TEST

static tune_study *json_study(const char *search)
{
    char json[512];
    snprintf(json, sizeof json,
             "{\"metric\": [\"acc\", \"latency\"], \"mode\": [\"max\", \"min\"],"
             " \"num_samples\": %d, \"seed\": 5, \"storage\": \":memory:\","
             " \"max_concurrent_trials\": 2, \"search\": %s}",
             SEARCH_TRIALS, search);
    tune_study *s = NULL;
    tune_error err;
    ck_assert_msg(tune_study_new_with_space_take(json, xy_space(), &s, &err) == TUNE_OK, "%s",
                  err.text);
    return s;
}

START_TEST(front_of_nsga2_and_tpe_studies)
{
    static const char *const searches[] = {
        "{\"algorithm\": \"nsga2\", \"population_size\": 10}",
        "{\"algorithm\": \"tpe\"}",
        "{\"algorithm\": \"tpe\", \"weights_below\": \"uniform\", \"multivariate\": true}",
    };
    for (size_t i = 0; i < sizeof searches / sizeof *searches; i++) {
        tune_study *s = json_study(searches[i]);
        run_searched(s, searches[i]);
        /* the searcher took both objectives */
        ck_assert_ptr_nonnull(s->searcher);
        ck_assert(s->searcher->ops->on_complete_values != NULL);
        tune_study_free(s);
    }
}
END_TEST

/* Ask and tell with MOTPE: each trial reports both metrics, then is told COMPLETE. */
START_TEST(front_of_ask_tell_tpe)
{
    tune_study *s = json_study("{\"algorithm\": \"tpe\", \"n_startup_trials\": 5}");
    tune_trial *t;
    tune_error err;
    reset_reported();
    int asked = 0;
    tune_status st;
    while ((st = tune_study_ask(s, &t, &err)) == TUNE_OK) {
        asked++;
        int64_t id = tune_trial_id(t);
        double acc, lat, x, y;
        ck_assert_int_eq(tune_trial_get_double(t, "x", &x, NULL), TUNE_OK);
        ck_assert_int_eq(tune_trial_get_double(t, "y", &y, NULL), TUNE_OK);
        two_objectives(x, y, &acc, &lat);
        reported[id][0] = acc;
        reported[id][1] = lat;
        const char *names[2] = {"acc", "latency"};
        double v[2] = {acc, lat};
        ck_assert_int_eq(tune_trial_report(t, 2, names, v, &err), TUNE_OK);
        ck_assert_msg(tune_study_tell(s, t, TUNE_TELL_COMPLETE, NULL, &err) == TUNE_OK, "%s",
                      err.text);
    }
    ck_assert_int_eq(st, TUNE_EEXHAUSTED);
    ck_assert_int_eq(asked, SEARCH_TRIALS);
    ck_assert_int_eq(tune_study_finish(s, &err), TUNE_OK);
    ck_assert(s->searcher->ops->on_complete_values != NULL);
    check_searched_front(s, "ask and tell");
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
    tcase_add_test(tc, front_of_options_study);
    tcase_add_test(tc, front_of_nsga2_and_tpe_studies);
    tcase_add_test(tc, front_of_ask_tell_tpe);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(pareto_front_suite)
