/*
 * test_result.c - the best trial as typed values (tune_study_best()): the
 * same trial and values as tune_study_best_json(), each parameter's type, the
 * getters' conversions and errors (TUNE_ENOTFOUND, TUNE_ETYPE), a result
 * outliving its study, and the same result from the folder the study ran
 * into (tune_study_open()).
 */
#include <jansson.h>
#include <math.h>

#include "check_util.h"
#include "tune.h"

/* Every value type, and a nested name. */
#define RESULT_CONFIG                                                                              \
    "{\"metric\": \"score\", \"num_samples\": 12, \"seed\": 3, \"storage\": \"%s\","               \
    " \"max_concurrent_trials\": 2,"                                                               \
    " \"param_space\": {\"x\": {\"uniform\": [0, 1]}, \"n\": {\"randint\": [1, 50]},"              \
    " \"act\": {\"choice\": [\"relu\", \"gelu\"]}, \"flag\": {\"choice\": [true, false]},"         \
    " \"opt\": {\"lr\": {\"loguniform\": [1e-4, 1e-1]}}}}"

/* score = x + n / 100 (+ 0.5 with flag), aux = -score; 3 iterations, the last counts. */
static tune_status objective(tune_trial *t, void *ud)
{
    (void)ud;
    double x;
    int64_t n;
    int flag;
    if (tune_trial_get_double(t, "x", &x, NULL) || tune_trial_get_int(t, "n", &n, NULL) ||
        tune_trial_get_bool(t, "flag", &flag, NULL))
        return TUNE_EINVAL;
    for (int it = 1; it <= 3; it++) {
        double score = (x + (double)n / 100 + (flag ? 0.5 : 0)) * it / 3;
        const char *names[2] = {"score", "aux"};
        double values[2] = {score, -score};
        tune_status st = tune_trial_report(t, 2, names, values, NULL);
        if (st)
            return st == TUNE_ESTOP ? TUNE_OK : st;
    }
    return TUNE_OK;
}

static tune_study *run_study(const char *storage)
{
    char json[2048];
    snprintf(json, sizeof json, RESULT_CONFIG, storage);
    tune_study *s = NULL;
    tune_error err;
    ck_assert_msg(tune_study_new_from_json(json, NULL, &s, &err) == TUNE_OK, "%s", err.text);
    ck_assert_int_eq(tune_study_set_objective(s, objective, NULL, &err), TUNE_OK);
    ck_assert_msg(tune_study_run(s, &err) == TUNE_OK, "%s", err.text);
    return s;
}

/* The value at a flattened name ("opt/lr") of a nested JSON object; borrowed. */
static json_t *json_at(json_t *obj, const char *name)
{
    char part[256];
    const char *slash;
    while ((slash = strchr(name, '/')) != NULL) {
        snprintf(part, sizeof part, "%.*s", (int)(slash - name), name);
        obj = json_object_get(obj, part);
        name = slash + 1;
    }
    return json_object_get(obj, name);
}

/* r describes the same trial, with the same values, as best_json. */
static void check_same_as_json(const tune_result *r, const char *best_json)
{
    json_error_t jerr;
    json_t *root = json_loads(best_json, 0, &jerr);
    ck_assert_msg(root != NULL, "%s: %s", best_json, jerr.text);
    ck_assert_int_eq(tune_result_trial_id(r),
                     json_integer_value(json_object_get(root, "trial_id")));
    ck_assert_str_eq(tune_trial_status_name(tune_result_status(r)),
                     json_string_value(json_object_get(root, "status")));
    ck_assert_int_eq(tune_result_iteration(r),
                     json_integer_value(json_object_get(root, "training_iteration")));
    /* The JSON rounds time_total_s to milliseconds. */
    ck_assert_double_eq_tol(tune_result_time_total_s(r),
                            json_number_value(json_object_get(root, "time_total_s")), 0.0006);
    double score;
    ck_assert_int_eq(tune_result_get_metric(r, "score", &score, NULL), TUNE_OK);
    ck_assert_double_eq(score, json_number_value(json_object_get(root, "score")));

    json_t *config = json_object_get(root, "config");
    ck_assert_int_eq(tune_result_param_count(r), 5);
    for (size_t i = 0; i < tune_result_param_count(r); i++) {
        const char *name = tune_result_param_name(r, i);
        json_t *v = json_at(config, name);
        ck_assert_msg(v != NULL, "'%s' is not in %s", name, best_json);
        double d;
        int64_t n;
        const char *str;
        int b;
        switch (tune_result_param_type(r, i)) {
            case TUNE_PARAM_DOUBLE:
                ck_assert(json_is_real(v));
                ck_assert_int_eq(tune_result_get_double(r, name, &d, NULL), TUNE_OK);
                ck_assert_double_eq(d, json_real_value(v));
                break;
            case TUNE_PARAM_INT:
                ck_assert(json_is_integer(v));
                ck_assert_int_eq(tune_result_get_int(r, name, &n, NULL), TUNE_OK);
                ck_assert_int_eq(n, json_integer_value(v));
                break;
            case TUNE_PARAM_STRING:
                ck_assert(json_is_string(v));
                ck_assert_int_eq(tune_result_get_string(r, name, &str, NULL), TUNE_OK);
                ck_assert_str_eq(str, json_string_value(v));
                break;
            case TUNE_PARAM_BOOL:
                ck_assert(json_is_boolean(v));
                ck_assert_int_eq(tune_result_get_bool(r, name, &b, NULL), TUNE_OK);
                ck_assert_int_eq(b, json_is_true(v));
                break;
            case TUNE_PARAM_TYPE_COUNT: ck_abort_msg("parameter %zu has no type", i);
        }
    }
    json_decref(root);
}

/* Both results describe the same trial with the same values. */
static void check_same_results(const tune_result *a, const tune_result *b)
{
    ck_assert_int_eq(tune_result_trial_id(a), tune_result_trial_id(b));
    ck_assert_int_eq(tune_result_status(a), tune_result_status(b));
    ck_assert_int_eq(tune_result_iteration(a), tune_result_iteration(b));
    ck_assert_int_eq(tune_result_param_count(a), tune_result_param_count(b));
    for (size_t i = 0; i < tune_result_param_count(a); i++) {
        ck_assert_str_eq(tune_result_param_name(a, i), tune_result_param_name(b, i));
        ck_assert_int_eq(tune_result_param_type(a, i), tune_result_param_type(b, i));
        const char *name = tune_result_param_name(a, i);
        if (tune_result_param_type(a, i) == TUNE_PARAM_STRING) {
            const char *sa, *sb;
            ck_assert_int_eq(tune_result_get_string(a, name, &sa, NULL), TUNE_OK);
            ck_assert_int_eq(tune_result_get_string(b, name, &sb, NULL), TUNE_OK);
            ck_assert_str_eq(sa, sb);
        } else {
            double da, db;
            ck_assert_int_eq(tune_result_get_double(a, name, &da, NULL), TUNE_OK);
            ck_assert_int_eq(tune_result_get_double(b, name, &db, NULL), TUNE_OK);
            ck_assert_double_eq(da, db);
        }
    }
    ck_assert_int_eq(tune_result_metric_count(a), tune_result_metric_count(b));
    for (size_t i = 0; i < tune_result_metric_count(a); i++) {
        const char *name = tune_result_metric_name(a, i);
        double va, vb;
        ck_assert_int_eq(tune_result_get_metric(a, name, &va, NULL), TUNE_OK);
        ck_assert_int_eq(tune_result_get_metric(b, name, &vb, NULL), TUNE_OK);
        ck_assert_double_eq(va, vb);
    }
}

START_TEST(best_as_typed_values)
{
    char *dir = tune_test_mkdtemp();
    char storage[1100];
    snprintf(storage, sizeof storage, "%s/exp", dir);
    tune_study *s = run_study(storage);
    tune_result *r = NULL;
    tune_error err;
    ck_assert_int_eq(tune_study_best(s, &r, &err), TUNE_OK);
    char *json = NULL;
    ck_assert_int_eq(tune_study_best_json(s, &json, NULL), TUNE_OK);
    check_same_as_json(r, json);
    tune_free(json);

    /* Types, in the space's order, and what the objective reported. */
    const char *names[] = {"x", "n", "act", "flag", "opt/lr"};
    const tune_param_type types[] = {TUNE_PARAM_DOUBLE, TUNE_PARAM_INT, TUNE_PARAM_STRING,
                                     TUNE_PARAM_BOOL, TUNE_PARAM_DOUBLE};
    for (size_t i = 0; i < 5; i++) {
        ck_assert_str_eq(tune_result_param_name(r, i), names[i]);
        ck_assert_int_eq(tune_result_param_type(r, i), types[i]);
    }
    ck_assert_int_eq(tune_result_status(r), TUNE_TRIAL_TERMINATED);
    ck_assert_int_eq(tune_result_iteration(r), 3);
    double x, score, aux;
    int64_t n;
    int flag;
    ck_assert_int_eq(tune_result_get_double(r, "x", &x, &err), TUNE_OK);
    ck_assert_int_eq(tune_result_get_int(r, "n", &n, &err), TUNE_OK);
    ck_assert_int_eq(tune_result_get_bool(r, "flag", &flag, &err), TUNE_OK);
    ck_assert_int_eq(tune_result_get_metric(r, "score", &score, &err), TUNE_OK);
    ck_assert_int_eq(tune_result_get_metric(r, "aux", &aux, &err), TUNE_OK);
    ck_assert_double_eq_tol(score, x + (double)n / 100 + (flag ? 0.5 : 0), 1e-12);
    ck_assert_double_eq(aux, -score);
    ck_assert_int_eq(tune_result_metric_count(r), 2);
    int seen_score = 0, seen_aux = 0;
    for (size_t i = 0; i < 2; i++) {
        seen_score += strcmp(tune_result_metric_name(r, i), "score") == 0;
        seen_aux += strcmp(tune_result_metric_name(r, i), "aux") == 0;
    }
    ck_assert(seen_score == 1 && seen_aux == 1);
    tune_study_free(s);

    /* The result outlives its study; the folder gives the same one. */
    ck_assert_int_eq(tune_study_open(storage, &s, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_set_objective(s, objective, NULL, &err), TUNE_EINVAL);
    ck_assert_str_eq(err.text, "this study was opened read-only from a folder");
    tune_result *opened = NULL;
    ck_assert_int_eq(tune_study_best(s, &opened, &err), TUNE_OK);
    check_same_results(r, opened);
    ck_assert_int_eq(tune_study_best_json(s, &json, NULL), TUNE_OK);
    check_same_as_json(opened, json);
    tune_free(json);
    tune_result_free(opened);
    tune_study_free(s);
    tune_result_free(r);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(getter_errors)
{
    tune_study *s = run_study(":memory:");
    tune_result *r = NULL;
    ck_assert_int_eq(tune_study_best(s, &r, NULL), TUNE_OK);
    tune_study_free(s);

    tune_error err;
    double d = 42;
    int64_t n = 42;
    const char *str = "untouched";
    int b = 42;
    /* Conversions: an int and a bool read as double, a bool as int. */
    ck_assert_int_eq(tune_result_get_double(r, "n", &d, &err), TUNE_OK);
    ck_assert_int_eq(tune_result_get_int(r, "flag", &n, &err), TUNE_OK);
    ck_assert(n == 0 || n == 1);
    ck_assert_int_eq(tune_result_get_double(r, "flag", &d, &err), TUNE_OK);

    d = 42;
    n = 42;
    ck_assert_int_eq(tune_result_get_double(r, "act", &d, &err), TUNE_ETYPE);
    ck_assert_int_eq(err.code, TUNE_ETYPE);
    ck_assert_str_eq(err.text, "parameter 'act' is a string, not a number");
    ck_assert_double_eq(d, 42);
    ck_assert_int_eq(tune_result_get_int(r, "x", &n, &err), TUNE_ETYPE);
    ck_assert_int_eq(n, 42);
    ck_assert_int_eq(tune_result_get_string(r, "x", &str, &err), TUNE_ETYPE);
    ck_assert_str_eq(str, "untouched");
    ck_assert_int_eq(tune_result_get_bool(r, "n", &b, &err), TUNE_ETYPE);
    ck_assert_str_eq(err.text, "parameter 'n' is an integer, not a boolean");
    ck_assert_int_eq(b, 42);

    ck_assert_int_eq(tune_result_get_double(r, "nope", &d, &err), TUNE_ENOTFOUND);
    ck_assert_str_eq(err.text, "no parameter 'nope'");
    /* "opt" is a folder of the nested name, not a parameter. */
    ck_assert_int_eq(tune_result_get_double(r, "opt", &d, NULL), TUNE_ENOTFOUND);
    ck_assert_int_eq(tune_result_get_metric(r, "x", &d, &err), TUNE_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(err.text, "reported no metric 'x'"));
    ck_assert_int_eq(tune_result_get_metric(r, "training_iteration", &d, NULL), TUNE_ENOTFOUND);
    ck_assert_double_eq(d, 42);

    ck_assert_int_eq(tune_result_get_double(r, NULL, &d, &err), TUNE_EINVAL);
    ck_assert_int_eq(tune_result_get_double(r, "x", NULL, &err), TUNE_EINVAL);
    ck_assert_int_eq(tune_result_get_metric(NULL, "score", &d, &err), TUNE_EINVAL);
    ck_assert_ptr_null(tune_result_param_name(r, 5));
    ck_assert_int_eq(tune_result_param_type(r, 5), TUNE_PARAM_TYPE_COUNT);
    ck_assert_ptr_null(tune_result_metric_name(r, 2));
    tune_result_free(r);

    ck_assert_int_eq(tune_result_trial_id(NULL), -1);
    ck_assert_int_eq(tune_result_param_count(NULL), 0);
    ck_assert_int_eq(tune_result_metric_count(NULL), 0);
    ck_assert_int_eq(tune_result_status(NULL), TUNE_TRIAL_STATUS_COUNT);
    tune_result_free(NULL);
}
END_TEST

static tune_status obj_fail(tune_trial *t, void *ud)
{
    (void)t;
    (void)ud;
    return TUNE_EFAILED;
}

START_TEST(no_best_trial)
{
    tune_study *s = NULL;
    tune_error err;
    ck_assert_int_eq(tune_study_new_from_json("{\"metric\": \"score\", \"num_samples\": 3,"
                                              " \"storage\": \":memory:\"}",
                                              NULL, &s, &err),
                     TUNE_OK);
    tune_result *r = (tune_result *)&err; /* must stay as it is */
    /* Before the run, and after a run where every trial failed. */
    ck_assert_int_eq(tune_study_best(s, &r, &err), TUNE_ENOTFOUND);
    ck_assert_str_eq(err.text, "no trial reported the metric 'score'");
    ck_assert_int_eq(tune_study_set_objective(s, obj_fail, NULL, NULL), TUNE_OK);
    ck_assert_int_eq(tune_study_run(s, NULL), TUNE_OK);
    ck_assert_int_eq(tune_study_best(s, &r, &err), TUNE_ENOTFOUND);
    ck_assert_ptr_eq(r, (tune_result *)&err);
    ck_assert_int_eq(tune_study_best(s, NULL, &err), TUNE_EINVAL);
    ck_assert_int_eq(tune_study_best(NULL, &r, &err), TUNE_EINVAL);
    tune_study_free(s);
}
END_TEST

/* score = x at iteration 1 only; iteration 2 reports aux alone (a program's
 * final summary line without the metric). */
static tune_status obj_metric_then_aux(tune_trial *t, void *ud)
{
    (void)ud;
    double x;
    if (tune_trial_get_double(t, "x", &x, NULL))
        return TUNE_EINVAL;
    tune_status st = tune_trial_report_metric(t, "score", x, NULL);
    if (st == TUNE_OK)
        st = tune_trial_report_metric(t, "aux", -x, NULL);
    return st == TUNE_ESTOP ? TUNE_OK : st;
}

/* The "score" cell of the results.csv row of trial id. */
static double csv_score(const char *csv, int64_t id)
{
    const char *nl = strchr(csv, '\n');
    ck_assert_ptr_nonnull(nl);
    /* The column of "score" in the header. */
    int col = 0, found = -1;
    for (const char *p = csv; p < nl; col++) {
        const char *end = memchr(p, ',', (size_t)(nl - p));
        if (!end)
            end = nl;
        if ((size_t)(end - p) == 5 && strncmp(p, "score", 5) == 0)
            found = col;
        p = end + (end < nl);
        if (end == nl)
            break;
    }
    ck_assert_int_ge(found, 0);
    for (const char *row = nl + 1; *row; row = strchr(row, '\n') + 1) {
        if (strtoll(row, NULL, 10) != id)
            continue;
        const char *p = row;
        for (int c = 0; c < found; c++)
            p = strchr(p, ',') + 1;
        return strtod(p, NULL);
    }
    ck_abort_msg("no row for trial %lld", (long long)id);
    return 0;
}

/* The run's best, the folder's best, results.csv and the report agree when the
 * last report lacks the metric: each trial's last value of it counts. */
START_TEST(best_when_last_report_lacks_metric)
{
    char *dir = tune_test_mkdtemp();
    char storage[1100], path[1200];
    snprintf(storage, sizeof storage, "%s/exp", dir);
    char json[2048];
    snprintf(json, sizeof json,
             "{\"metric\": \"score\", \"num_samples\": 5, \"seed\": 4, \"storage\": \"%s\","
             " \"param_space\": {\"x\": {\"uniform\": [0, 1]}}}",
             storage);
    tune_study *s = NULL;
    tune_error err;
    ck_assert_msg(tune_study_new_from_json(json, NULL, &s, &err) == TUNE_OK, "%s", err.text);
    ck_assert_int_eq(tune_study_set_objective(s, obj_metric_then_aux, NULL, &err), TUNE_OK);
    ck_assert_msg(tune_study_run(s, &err) == TUNE_OK, "%s", err.text);
    tune_result *run_best = NULL;
    ck_assert_int_eq(tune_study_best(s, &run_best, &err), TUNE_OK);
    char *run_json = NULL;
    ck_assert_int_eq(tune_study_best_json(s, &run_json, &err), TUNE_OK);
    tune_study_free(s);
    double score;
    ck_assert_int_eq(tune_result_get_metric(run_best, "score", &score, NULL), TUNE_OK);
    ck_assert_int_eq(tune_result_iteration(run_best), 2);

    ck_assert_msg(tune_study_open(storage, &s, &err) == TUNE_OK, "%s", err.text);
    char *open_json = NULL;
    ck_assert_msg(tune_study_best_json(s, &open_json, &err) == TUNE_OK, "%s", err.text);
    ck_assert_str_eq(open_json, run_json);
    tune_result *opened = NULL;
    ck_assert_int_eq(tune_study_best(s, &opened, &err), TUNE_OK);
    check_same_results(run_best, opened);

    snprintf(path, sizeof path, "%s/results.csv", dir);
    ck_assert_msg(tune_study_export_csv(s, TUNE_CSV_RESULTS, path, &err) == TUNE_OK, "%s",
                  err.text);
    char *csv = tune_test_slurp(path);
    ck_assert_double_eq_tol(csv_score(csv, tune_result_trial_id(run_best)), score, 1e-12);
    free(csv);
    tune_study_free(s);

    snprintf(path, sizeof path, "%s/report.html", dir);
    ck_assert_msg(tune_report_html(storage, path, &err) == TUNE_OK, "%s", err.text);
    char *html = tune_test_slurp(path);
    char want[64];
    snprintf(want, sizeof want, "\"best\":%lld,", (long long)tune_result_trial_id(run_best));
    ck_assert_msg(strstr(html, want) != NULL, "report lacks %s", want);
    free(html);

    tune_free(run_json);
    tune_free(open_json);
    tune_result_free(opened);
    tune_result_free(run_best);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

static Suite *result_suite(void)
{
    Suite *s = suite_create("result");
    TCase *tc = tcase_create("best");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, best_as_typed_values);
    tcase_add_test(tc, getter_errors);
    tcase_add_test(tc, no_best_trial);
    tcase_add_test(tc, best_when_last_report_lacks_metric);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(result_suite)
