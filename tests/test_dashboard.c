/*
 * test_dashboard.c - the dashboard's store reader (store/store_read.c) and
 * documents (dashboard/views.c, dashboard/json.c), without the HTTP server.
 *
 * A store written here with a trial retried after a failed attempt (its best
 * report in attempt 1, its last ones in attempt 2), NaN and infinite
 * metrics (as null and 1e999), awkward strings, and a running trial. Checked: data_version moves
 * exactly when another connection commits; one trial's reports come with
 * every attempt; the trials document (parsed with jansson) holds the
 * hand-computed last and best values; the page is the report with the live
 * script and its data document is the page's #tune-data; documents are
 * rebuilt only once the store changed and 0.5 s have passed.
 */
#include "check_util.h"

#include <jansson.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dashboard/dashboard.h"
#include "store/store.h"
#include "store/store_read.h"

static char name_lr[] = "lr", name_opt[] = "opt";
static struct tunep_value opt_values[] = {
    {.type = TUNEP_V_STRING, .u.s = "adam"},
    {.type = TUNEP_V_STRING, .u.s = "say \"hi\"\n"},
};
static struct tunep_param params[] = {
    {.name = name_lr, .dist = TUNEP_DIST_LOGUNIFORM, .lo = 1e-5, .hi = 1e-1, .base = 10},
    {.name = name_opt, .dist = TUNEP_DIST_CHOICE, .n_values = 2, .values = opt_values},
};
static tune_space space = {.n = 2, .cap = 2, .params = params};

static const struct tunep_store_experiment exp1 = {
    .name = "live",
    .config_json = "{\"metric\": \"acc\", \"mode\": \"max\", \"num_samples\": 2,"
                   " \"param_space\": {\"lr\": {\"loguniform\": [1e-5, 0.1]},"
                   " \"opt\": {\"choice\": [\"adam\", \"say \\\"hi\\\"\\n\"]}},"
                   " \"trainer\": {\"type\": \"synthetic\"}}",
    .metric = "acc",
    .mode = "max",
    .version = "0.1.0",
    .seed = 7,
    .created = 1700000000.0,
};

#define OK(call)                                                                                   \
    do {                                                                                           \
        tune_error e_;                                                                             \
        memset(&e_, 0, sizeof e_);                                                                 \
        tune_status s_ = (call);                                                                   \
        ck_assert_msg(s_ == TUNE_OK, "%s -> %d: %s", #call, (int)s_, e_.text);                     \
    } while (0)
#define E (&e_)

static char *tmpdir;
static char db_path[512];
static struct tunep_store *st;

static void report(int64_t id, int attempt, int64_t it, double acc, double loss)
{
    const char *names[] = {"acc", "loss"};
    double values[] = {acc, loss};
    OK(tunep_store_report(st, id, attempt, it, 0.5 * (double)it, 1700000000.0 + (double)it, 2,
                          names, values, E));
}

/* Trial 0: attempt 1 reports acc 0.5, 0.9 and errors; attempt 2 reports 0.3, 0.4 and ends.
 * Trial 1 runs: acc 0.1. */
static void setup(void)
{
    tmpdir = tune_test_mkdtemp();
    ck_assert_ptr_nonnull(tmpdir);
    snprintf(db_path, sizeof db_path, "%s/experiment.db", tmpdir);
    OK(tunep_store_create(db_path, &exp1, &space, &st, E));
    struct tunep_value v0[] = {{.type = TUNEP_V_DOUBLE, .u.d = 0.001},
                               {.type = TUNEP_V_STRING, .u.s = "say \"hi\"\n"}};
    struct tunep_value v1[] = {{.type = TUNEP_V_DOUBLE, .u.d = 0.02},
                               {.type = TUNEP_V_STRING, .u.s = "adam"}};
    OK(tunep_store_trial_start(st, 0, 1, &space, v0, 100.0, E));
    report(0, 1, 1, 0.5, (double)NAN);
    report(0, 1, 2, 0.9, 0.25);
    OK(tunep_store_trial_end(st, 0, 1, TUNE_TRIAL_ERROR, 2, 1.0, 101.0, "boom", E));
    OK(tunep_store_trial_start(st, 0, 2, &space, v0, 102.0, E));
    report(0, 2, 1, 0.3, 0.5);
    report(0, 2, 2, 0.4, 0.75);
    OK(tunep_store_trial_end(st, 0, 2, TUNE_TRIAL_TERMINATED, 2, 1.0, 103.0, NULL, E));
    OK(tunep_store_trial_start(st, 1, 1, &space, v1, 104.0, E));
    report(1, 1, 1, 0.1, 2.0);
    OK(tunep_store_commit(st, E));
}

static void teardown(void)
{
    tunep_store_close(st);
    st = NULL;
    tune_test_rmtree(tmpdir);
    free(tmpdir);
    tmpdir = NULL;
}

struct seen {
    int n, attempts[8];
    int64_t its[8];
    char first[128];
};

static tune_status collect(void *ud, const struct tunep_read_report *rep)
{
    struct seen *s = ud;
    ck_assert_int_lt(s->n, 8);
    if (s->n == 0)
        snprintf(s->first, sizeof s->first, "%s", rep->metrics_json);
    s->attempts[s->n] = rep->attempt;
    s->its[s->n++] = rep->iteration;
    return TUNE_OK;
}

START_TEST(test_reader)
{
    struct tunep_store_reader *rd = NULL;
    int64_t v0, v1, v2;
    OK(tunep_store_reader_open(db_path, &rd, E));
    OK(tunep_store_reader_data_version(rd, &v0, E));
    OK(tunep_store_reader_data_version(rd, &v1, E));
    ck_assert_int_eq(v0, v1); /* nothing committed in between */
    report(1, 1, 2, 0.2, 1.0);
    OK(tunep_store_commit(st, E));
    OK(tunep_store_reader_data_version(rd, &v2, E));
    ck_assert_int_ne(v1, v2);

    struct seen s = {0};
    int found = 0;
    OK(tunep_store_reader_trial_reports(rd, 0, collect, &s, &found, E));
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(s.n, 4);
    const int attempts[] = {1, 1, 2, 2};
    const int64_t its[] = {1, 2, 1, 2};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(s.attempts[i], attempts[i]);
        ck_assert_int_eq(s.its[i], its[i]);
    }
    ck_assert_str_eq(s.first, "{\"acc\":0.5,\"loss\":null}");
    memset(&s, 0, sizeof s);
    OK(tunep_store_reader_trial_reports(rd, 42, collect, &s, &found, E));
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(s.n, 0);

    tunep_store_reader_close(rd);

    tune_error err;
    struct tunep_store_reader *none = NULL;
    ck_assert_int_eq(tunep_store_reader_open("/nonexistent/experiment.db", &none, &err),
                     TUNE_ENOTFOUND);
    ck_assert_ptr_null(none);
    ck_assert_str_eq(err.source, "/nonexistent/experiment.db");
}
END_TEST

static json_t *parse(const struct tunep_dash_blob *b)
{
    json_error_t je;
    json_t *j = json_loadb(b->data, b->len, JSON_ALLOW_NUL, &je);
    ck_assert_msg(j != NULL, "not JSON: %s: %.200s", je.text, b->data);
    return j;
}

static double num(json_t *o, const char *path_key)
{
    json_t *v = json_object_get(o, path_key);
    ck_assert_msg(json_is_number(v), "%s is not a number", path_key);
    return json_number_value(v);
}

START_TEST(test_trials_json)
{
    struct tunep_dash_views *v = NULL;
    struct tunep_dash_doc doc = {0};
    OK(tunep_dash_views_open(tmpdir, 1000, &v, E));
    OK(tunep_dash_view_trials(v, &doc, E));
    ck_assert_str_eq(doc.type, "application/json");
    json_t *j = parse(doc.body);
    tunep_dash_blob_unref(doc.body);
    ck_assert_str_eq(json_string_value(json_object_get(j, "metric")), "acc");
    ck_assert_str_eq(json_string_value(json_object_get(j, "mode")), "max");
    json_t *trials = json_object_get(j, "trials");
    ck_assert_int_eq((int)json_array_size(trials), 2);

    json_t *t0 = json_array_get(trials, 0);
    ck_assert_int_eq(json_integer_value(json_object_get(t0, "trial_id")), 0);
    ck_assert_str_eq(json_string_value(json_object_get(t0, "status")), "TERMINATED");
    ck_assert_int_eq(json_integer_value(json_object_get(t0, "attempt")), 2);
    ck_assert(json_is_null(json_object_get(t0, "error")));
    ck_assert(json_is_null(json_object_get(t0, "device")));
    json_t *cfg = json_object_get(t0, "config");
    ck_assert_double_eq(num(cfg, "lr"), 0.001);
    ck_assert_str_eq(json_string_value(json_object_get(cfg, "opt")), "say \"hi\"\n");
    /* last: the current attempt's last report; best: attempt 1's 0.9, across attempts. */
    ck_assert_double_eq(num(json_object_get(t0, "last"), "acc"), 0.4);
    ck_assert_double_eq(num(json_object_get(t0, "last"), "loss"), 0.75);
    json_t *best = json_object_get(t0, "best");
    ck_assert_int_eq(json_integer_value(json_object_get(best, "attempt")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(best, "training_iteration")), 2);
    ck_assert_double_eq(num(json_object_get(best, "metrics"), "acc"), 0.9);
    ck_assert_double_eq(num(json_object_get(best, "metrics"), "loss"), 0.25);

    json_t *t1 = json_array_get(trials, 1);
    ck_assert_str_eq(json_string_value(json_object_get(t1, "status")), "RUNNING");
    ck_assert(json_is_null(json_object_get(t1, "end_time")));
    ck_assert_double_eq(num(json_object_get(t1, "last"), "acc"), 0.1);
    json_decref(j);

    /* One trial: its row plus every report of every attempt. */
    OK(tunep_dash_view_trial(v, 0, &doc, E));
    j = parse(doc.body);
    tunep_dash_blob_unref(doc.body);
    json_t *reps = json_object_get(j, "reports");
    ck_assert_int_eq((int)json_array_size(reps), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(reps, 2), "attempt")), 2);
    ck_assert(
        json_is_null(json_object_get(json_object_get(json_array_get(reps, 0), "metrics"), "loss")));
    ck_assert_double_eq(num(json_array_get(reps, 3), "timestamp"), 1700000002.0);
    ck_assert_double_eq(num(json_object_get(j, "best"), "time_total_s"), 1.0);
    json_decref(j);

    tune_error err;
    ck_assert_int_eq(tunep_dash_view_trial(v, 7, &doc, &err), TUNE_ENOTFOUND);
    ck_assert_str_eq(err.text, "no trial 7 (yet)");
    tunep_dash_views_close(v);
}
END_TEST

/* The trials document's text: infinities as the store writes them (1e999, which JSON.parse
 * and Python read as infinities; jansson refuses them), strings escaped. */
START_TEST(test_trials_json_text)
{
    struct tunep_dash_views *v = NULL;
    struct tunep_dash_doc doc = {0};
    report(1, 1, 2, 0.1, (double)INFINITY);
    OK(tunep_store_commit(st, E));
    OK(tunep_dash_views_open(tmpdir, 1000, &v, E));
    OK(tunep_dash_view_trials(v, &doc, E));
    ck_assert_msg(strstr(doc.body->data, "\"last\":{\"acc\":0.1,\"loss\":1e999}") != NULL, "%s",
                  doc.body->data);
    ck_assert_msg(strstr(doc.body->data, "\"opt\":\"say \\\"hi\\\"\\n\"") != NULL, "%s",
                  doc.body->data);
    tunep_dash_blob_unref(doc.body);
    tunep_dash_views_close(v);
}
END_TEST

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

START_TEST(test_page_and_rebuilds)
{
    struct tunep_dash_views *v = NULL;
    struct tunep_dash_doc page = {0}, data = {0}, summary = {0}, again = {0};
    OK(tunep_dash_views_open(tmpdir, 250, &v, E));
    OK(tunep_dash_view_page(v, &page, E));
    OK(tunep_dash_view_report(v, &data, E));
    OK(tunep_dash_view_summary(v, &summary, E));
    ck_assert_str_eq(page.type, "text/html; charset=utf-8");
    const char *p = page.body->data;
    /* The data document is exactly the page's #tune-data, and parses. */
    const char *open = "<script type=\"application/json\" id=\"tune-data\">";
    const char *d = strstr(p, open);
    ck_assert_ptr_nonnull(d);
    d += strlen(open);
    ck_assert_int_eq(strncmp(d, data.body->data, data.body->len), 0);
    ck_assert_int_eq(strncmp(d + data.body->len, "</script>", 9), 0);
    json_t *j = parse(data.body);
    ck_assert_int_eq((int)json_array_size(json_object_get(j, "trials")), 2);
    json_decref(j);
    /* The summary is the page's table; the live badge and script come before </body>. */
    ck_assert_ptr_nonnull(strstr(p, summary.body->data));
    ck_assert_int_eq(strncmp(summary.body->data, "<table class=\"kv\" id=\"summary\">", 31), 0);
    const char *live = strstr(p, "<div id=\"tune-live\" role=\"status\" data-refresh-ms=\"250\"");
    ck_assert_ptr_nonnull(live);
    ck_assert_ptr_nonnull(strstr(live, "window.tuneReport(D)"));
    ck_assert_str_eq(p + page.body->len - strlen("</body>\n</html>\n"), "</body>\n</html>\n");
    ck_assert(data.etag[0] == '"' && strcmp(data.etag, summary.etag) == 0);

    /* Unchanged store: the same build. A commit within 0.5 s: still the same. After: new. */
    OK(tunep_dash_view_report(v, &again, E));
    ck_assert_ptr_eq(again.body, data.body);
    tunep_dash_blob_unref(again.body);
    report(1, 1, 2, 0.95, 0.0);
    OK(tunep_store_commit(st, E));
    OK(tunep_dash_view_report(v, &again, E));
    ck_assert_str_eq(again.etag, data.etag);
    tunep_dash_blob_unref(again.body);
    sleep_s(0.6);
    OK(tunep_dash_view_report(v, &again, E));
    ck_assert_str_ne(again.etag, data.etag);
    j = parse(again.body);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "best")), 1); /* 0.95 beats 0.4 */
    json_decref(j);
    /* The old document stays valid while a response still holds it. */
    ck_assert_int_eq(strncmp(data.body->data, "{\"metric\":\"acc\"", 15), 0);
    tunep_dash_blob_unref(again.body);
    tunep_dash_blob_unref(page.body);
    tunep_dash_blob_unref(data.body);
    tunep_dash_blob_unref(summary.body);
    tunep_dash_views_close(v);
}
END_TEST

START_TEST(test_open_errors)
{
    struct tunep_dash_views *v = NULL;
    tune_error err;
    char missing[600];
    snprintf(missing, sizeof missing, "%s/none", tmpdir);
    ck_assert_int_eq(tunep_dash_views_open(missing, 1000, &v, &err), TUNE_ENOTFOUND);
    ck_assert_ptr_null(v);

    tune_dashboard_options o;
    tune_dashboard_options_default(&o);
    ck_assert_str_eq(o.host, "127.0.0.1");
    ck_assert_int_eq(o.port, 8080);
    ck_assert_int_eq(tune_dashboard_start(&o, &(tune_dashboard *){NULL}, &err), TUNE_EINVAL);
    ck_assert_str_eq(err.text, "dashboard: experiment_dir must not be NULL");
    o.experiment_dir = tmpdir;
    o.port = 70000;
    ck_assert_int_eq(tune_dashboard_start(&o, &(tune_dashboard *){NULL}, &err), TUNE_EINVAL);
    o.port = 0;
    o.refresh_ms = 5;
    ck_assert_int_eq(tune_dashboard_start(&o, &(tune_dashboard *){NULL}, &err), TUNE_EINVAL);
    ck_assert_str_eq(err.text, "dashboard: refresh_ms 5 is out of range (100 to 3600000)");
    /* A working one on any free loopback port. */
    tune_dashboard *d = NULL;
    o.refresh_ms = 1000;
    OK(tune_dashboard_start(&o, &d, E));
    ck_assert_int_gt(tune_dashboard_port(d), 0);
    ck_assert_int_eq(tune_dashboard_is_loopback(d), 1);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", tune_dashboard_port(d));
    ck_assert_str_eq(tune_dashboard_url(d), url);
    tune_dashboard_stop(d);
    tune_dashboard_stop(NULL);
}
END_TEST

static Suite *dashboard_suite(void)
{
    Suite *s = suite_create("dashboard");
    TCase *tc = tcase_create("dashboard");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_reader);
    tcase_add_test(tc, test_trials_json);
    tcase_add_test(tc, test_trials_json_text);
    tcase_add_test(tc, test_page_and_rebuilds);
    tcase_add_test(tc, test_open_errors);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(dashboard_suite)
