/*
 * test_metric_names.c - the rule for metric names at tune_trial_report()
 * (UTF-8, no control characters, at most TUNEP_MAX_METRIC_NAME bytes, not a
 * column the engine writes, not "config/..."), the CSV that follows from it
 * (one header cell per column), and the progress text, which shows control
 * characters from values and error texts escaped.
 */
#include "check_util.h"
#include "base/base.h"

static char *tmpdir;

static void setup(void)
{
    tmpdir = tune_test_mkdtemp();
    ck_assert_ptr_nonnull(tmpdir);
}

static void teardown(void)
{
    tune_test_rmtree(tmpdir);
    free(tmpdir);
    tmpdir = NULL;
}

static char long_ok[TUNEP_MAX_METRIC_NAME + 1], too_long[TUNEP_MAX_METRIC_NAME + 2];

static const char *const bad_names[] = {
    "a\x1b[2Jb",  /* ESC */
    "tab\there",  /* C0 */
    "del\x7f",    /* DEL */
    "c1\xc2\x9b", /* the C1 CSI, valid UTF-8 */
    "bad\xff",    /* not UTF-8 */
    "line\nbreak",
    "config/lr",
    "status",
    "trial_id",
    "training_iteration",
    "time_total_s",
    too_long,
    "",
    /* the columns the CSVs gained with Ray's schema */
    "attempt",
    "attempts",
    "error",
    "time_this_iter_s",
    "time_since_restore",
    "iterations_since_restore",
    "timestamp",
    "date",
    "done",
    "pid",
    "hostname",
    "node_ip",
    "logdir",
};
#define N_BAD (sizeof bad_names / sizeof *bad_names)

struct seen {
    tune_status st[N_BAD];
    char text[N_BAD][512];
    tune_status ok_st;
};

static tune_status objective(tune_trial *t, void *ud)
{
    struct seen *seen = ud;
    if (tune_trial_id(t) == 1) {
        tune_trial_set_error(t, "program said \x1b]0;pwned\x07 and \x1b[2J");
        return TUNE_EINVAL;
    }
    for (size_t i = 0; i < N_BAD; i++) {
        tune_error err;
        double v = 1.0;
        seen->st[i] = tune_trial_report(t, 1, &bad_names[i], &v, &err);
        snprintf(seen->text[i], sizeof seen->text[i], "%s", err.text);
    }
    /* Valid names, odd for a CSV: quoted, one cell each. */
    const char *names[] = {"score", long_ok, "caf\xc3\xa9, \"q\"", "configx/lr"};
    double values[] = {0.5, 1, 2, 3};
    seen->ok_st = tune_trial_report(t, 4, names, values, NULL);
    return TUNE_OK;
}

START_TEST(test_rule)
{
    memset(long_ok, 'm', TUNEP_MAX_METRIC_NAME);
    memset(too_long, 'm', TUNEP_MAX_METRIC_NAME + 1);
    char json[1024];
    snprintf(json, sizeof json,
             "{\"metric\": \"score\", \"num_samples\": 2, \"seed\": 1, \"storage\": \"%s/exp\","
             " \"max_concurrent_trials\": 1, \"max_failures\": 0,"
             " \"param_space\": {\"opt\": {\"choice\": [\"a\\u001b[2Jb\"]}}}",
             tmpdir);
    tune_study *s = NULL;
    tune_error err;
    ck_assert_int_eq(tune_study_new_from_json(json, NULL, &s, &err), TUNE_OK);
    struct seen seen;
    memset(&seen, 0, sizeof seen);
    ck_assert_int_eq(tune_study_set_objective(s, objective, &seen, &err), TUNE_OK);
    tune_study_run(s, &err);

    for (size_t i = 0; i < N_BAD; i++)
        ck_assert_msg(seen.st[i] == TUNE_EINVAL, "name %zu: status %d", i, (int)seen.st[i]);
    ck_assert_str_eq(seen.text[0],
                     "metric name 'a\\x1b[2Jb' is not UTF-8 text without control characters");
    ck_assert_str_eq(seen.text[3],
                     "metric name 'c1\\xc2\\x9b' is not UTF-8 text without control characters");
    ck_assert_str_eq(seen.text[4],
                     "metric name 'bad\\xff' is not UTF-8 text without control characters");
    ck_assert_str_eq(seen.text[6],
                     "metric name 'config/lr' is reserved: 'config/' columns are parameters");
    ck_assert_str_eq(seen.text[7], "metric name 'status' is reserved: the engine reports it");
    ck_assert_str_eq(seen.text[N_BAD - 5], "metric name 'done' is reserved: the engine reports it");
    ck_assert_int_eq(seen.ok_st, TUNE_OK);
    /* the public check agrees with what reports refuse */
    for (size_t i = 6; i < 11; i++)
        ck_assert_msg(tune_metric_name_reserved(bad_names[i]), "%s", bad_names[i]);
    for (size_t i = 13; i < N_BAD; i++)
        ck_assert_msg(tune_metric_name_reserved(bad_names[i]), "%s", bad_names[i]);
    ck_assert(!tune_metric_name_reserved("score") && !tune_metric_name_reserved("configx/lr") &&
              !tune_metric_name_reserved("dates") && !tune_metric_name_reserved(NULL));

    /* The header has exactly one cell per column. */
    char path[600];
    snprintf(path, sizeof path, "%s/r.csv", tmpdir);
    ck_assert_int_eq(tune_study_export_csv(s, TUNE_CSV_RESULTS, path, &err), TUNE_OK);
    char *csv = tune_test_slurp(path);
    ck_assert_ptr_nonnull(csv);
    char want[1024];
    snprintf(want, sizeof want,
             "trial_id,status,training_iteration,config/opt,score,%s,\"caf\xc3\xa9, \"\"q\"\"\","
             "configx/lr,time_total_s,attempts,error,time_this_iter_s,time_since_restore,"
             "iterations_since_restore,timestamp,date,done,pid,hostname,node_ip,logdir\r\n",
             long_ok);
    ck_assert_msg(strncmp(csv, want, strlen(want)) == 0, "%s", csv);
    free(csv);

    /* The progress text shows the value and the error escaped. */
    char *text = NULL;
    ck_assert_int_eq(tune_study_progress_text(s, 20, &text, &err), TUNE_OK);
    ck_assert_msg(strchr(text, '\x1b') == NULL && strchr(text, '\x07') == NULL, "%s", text);
    ck_assert_msg(strstr(text, "a\\x1b[2Jb") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "program said \\x1b]0;pwned\\x07 and \\x1b[2J") != NULL, "%s", text);
    tune_free(text);
    tune_study_free(s);
}
END_TEST

static Suite *metric_names_suite(void)
{
    Suite *s = suite_create("metric_names");
    TCase *tc = tcase_create("metric_names");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_rule);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(metric_names_suite)
