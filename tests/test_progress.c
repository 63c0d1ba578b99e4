/*
 * test_progress.c - the live progress table (tune_study_progress_table) and
 * the progress line, rendered while three trials run: the tables at widths
 * 120, 84 and 80 and with a column selection, against hand-computed header
 * and row lines (the widths derivation is next to each), every line within
 * the width, the column-list errors, and the line a log gets.
 *
 * Every trial has the same configuration (one-value grids) and reports
 * val_loss = 1 + id / 4 and val_accuracy = id / 4 at iteration 1, so every
 * cell but the time is known in advance.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "check_util.h"

#define TRIALS 3

static const char config[] =
    "{\"name\": \"progress\", \"metric\": \"val_loss\", \"mode\": \"min\", \"num_samples\": 3,"
    " \"seed\": 1, \"storage\": \":memory:\", \"max_concurrent_trials\": 3,"
    " \"param_space\": {\"lr\": {\"grid_search\": [0.001]},"
    " \"batch_size\": {\"grid_search\": [32]},"
    " \"optimizer\": {\"grid_search\": [\"adamw\"]},"
    " \"weight_decay\": {\"grid_search\": [0.01]},"
    " \"warmup_ratio\": {\"grid_search\": [0.1]}}}";

struct seen {
    tune_study *study;
    atomic_int reported, done;
    char *t120, *t84, *t80, *pick, *pick40, *line, *unreported;
    tune_status st;
};

static tune_status objective(tune_trial *t, void *ud)
{
    struct seen *p = ud;
    int64_t id = tune_trial_id(t);
    const char *names[2] = {"val_loss", "val_accuracy"};
    double v[2] = {1.0 + (double)id / 4, (double)id / 4};
    tune_status st = tune_trial_report(t, 2, names, v, NULL);
    if (st)
        return st;
    atomic_fetch_add(&p->reported, 1);
    /* All three running and reported: trial 0 draws the tables. */
    for (int i = 0; i < 2000 && atomic_load(&p->reported) < TRIALS; i++)
        nanosleep(&(struct timespec){0, 2 * 1000000L}, NULL);
    if (id == 0) {
        tune_progress_options o = {.width = 120};
        p->st |= tune_study_progress_table(p->study, &o, &p->t120, NULL);
        o.width = 84;
        p->st |= tune_study_progress_table(p->study, &o, &p->t84, NULL);
        o.width = 80;
        p->st |= tune_study_progress_table(p->study, &o, &p->t80, NULL);
        o = (tune_progress_options){.columns = " val_accuracy, config/lr ,batch_size"};
        p->st |= tune_study_progress_table(p->study, &o, &p->pick, NULL);
        o.width = 40;
        p->st |= tune_study_progress_table(p->study, &o, &p->pick40, NULL);
        o = (tune_progress_options){.columns = "lr,val_los"};
        p->st |= tune_study_progress_table(p->study, &o, &p->unreported, NULL);
        p->st |= tune_study_progress_line(p->study, &p->line, NULL);
        atomic_store(&p->done, 1);
    }
    for (int i = 0; i < 2000 && !atomic_load(&p->done); i++)
        nanosleep(&(struct timespec){0, 2 * 1000000L}, NULL);
    return TUNE_OK;
}

/* The longest line of text, in code points. */
static size_t widest(const char *text)
{
    size_t most = 0, n = 0;
    for (const char *c = text; *c; c++) {
        if (*c == '\n') {
            most = n > most ? n : most;
            n = 0;
        } else if (((unsigned char)*c & 0xC0) != 0x80) {
            n++;
        }
    }
    return n > most ? n : most;
}

/* Whether text has a line that is exactly `line`. */
static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = strstr(text, line); p; p = strstr(p + 1, line))
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return 1;
    return 0;
}

static struct seen seen;
static tune_status sweep_st = TUNE_EINTERNAL;

/* The sweep, once, in Check's parent process: every test reads its tables. */
static void setup_all(void)
{
    if (tune_study_new_from_json(config, NULL, &seen.study, NULL) != TUNE_OK)
        return;
    tune_study_set_objective(seen.study, objective, &seen, NULL);
    sweep_st = tune_study_run(seen.study, NULL);
}

static void run_once(void)
{
    ck_assert_int_eq(sweep_st, TUNE_OK);
    ck_assert_int_eq(seen.st, TUNE_OK);
    ck_assert_int_eq(atomic_load(&seen.done), 1);
}

/* The best-so-far line whole, and cut to width as the table cuts lines. */
static const char best_line[] = "Best so far: trial 0 with val_loss=1 (min): lr=0.001, "
                                "batch_size=32, optimizer=adamw, weight_decay=0.01, "
                                "warmup_ratio=0.1";

static void check_best_line(const char *t, int width)
{
    char want[256];
    if (width == 0 || (int)strlen(best_line) <= width)
        snprintf(want, sizeof want, "%s", best_line);
    else
        snprintf(want, sizeof want, "%.*s...", width - 3, best_line);
    ck_assert_msg(has_line(t, want), "no line '%s' in\n%s", want, t);
}

/*
 * Widths (each column: its widest cell, a header wider than that up to 12):
 * trial 5, status 7 (RUNNING), lr 5 (0.001), batch_size 10, optimizer 9,
 * weight_decay 12, warmup_ratio 12, iter 4, time (s) 8, val_loss 8; a line is
 * the widths + 3 per column + 1 = 80 + 31 = 111.
 */
START_TEST(width_120_shows_every_column)
{
    run_once();
    const char *t = seen.t120;
    ck_assert_msg(has_line(t, "| trial | status  |    lr | batch_size | optimizer | weight_decay "
                              "| warmup_ratio | iter | time (s) | val_loss |"),
                  "%s", t);
    /* rows: the running trials, in id order */
    const char *rows[TRIALS] = {"| 0     | RUNNING | 0.001 |         32 |     adamw |         0.01 "
                                "|          0.1 |    1 |",
                                "| 1     | RUNNING | 0.001 |         32 |     adamw |         0.01 "
                                "|          0.1 |    1 |",
                                "| 2     | RUNNING | 0.001 |         32 |     adamw |         0.01 "
                                "|          0.1 |    1 |"};
    const char *loss[TRIALS] = {"|        1 |\n", "|     1.25 |\n", "|      1.5 |\n"};
    for (int i = 0; i < TRIALS; i++) {
        const char *row = strstr(t, rows[i]);
        ck_assert_msg(row != NULL, "no row %d in\n%s", i, t);
        /* the time cell (8 wide) between iter and the metric */
        ck_assert_msg(strncmp(row + strlen(rows[i]) + 10, loss[i], strlen(loss[i])) == 0,
                      "row %d: %.120s", i, row);
    }
    ck_assert_msg(has_line(t, "+-------+---------+-------+------------+-----------+--------------+"
                              "--------------+------+----------+----------+"),
                  "%s", t);
    ck_assert_msg(strstr(t, "Trials: 3 (0 PENDING, 3 RUNNING, 0 TERMINATED, 0 STOPPED, 0 ERROR)"),
                  "%s", t);
    /* 121 characters: cut at 120 */
    check_best_line(t, 120);
    ck_assert_ptr_null(strstr(t, "left out"));
    ck_assert_uint_le(widest(t), 120);
}
END_TEST

/*
 * 84: columns leave lowest priority first: time (111 - 11 = 100), then the
 * parameters from the last, warmup_ratio (85) and weight_decay (70); then the
 * 14 columns left make room for time again (81): the main metric, iteration
 * and first parameters stay.
 */
START_TEST(width_84_drops_then_refills)
{
    run_once();
    const char *t = seen.t84;
    ck_assert_msg(has_line(t,
                           "| trial | status  |    lr | batch_size | optimizer | iter | time (s) "
                           "| val_loss |"),
                  "%s", t);
    ck_assert_msg(has_line(t, "Columns left out to fit: weight_decay, warmup_ratio"), "%s", t);
    ck_assert_uint_le(widest(t), 84);
}
END_TEST

/* 80: the same three leave, and time (81) no longer comes back: 70 wide. */
START_TEST(width_80_fits_without_wrapping)
{
    run_once();
    const char *t = seen.t80;
    ck_assert_msg(
        has_line(t, "| trial | status  |    lr | batch_size | optimizer | iter | val_loss |"), "%s",
        t);
    ck_assert_msg(
        has_line(t, "| 1     | RUNNING | 0.001 |         32 |     adamw |    1 |     1.25 |"), "%s",
        t);
    ck_assert_msg(has_line(t, "Columns left out to fit: weight_decay, warmup_ratio, time (s)"),
                  "%s", t);
    /* every line fits: the best-so-far line is cut */
    ck_assert_uint_le(widest(t), 80);
    check_best_line(t, 80);
}
END_TEST

/*
 * --columns val_accuracy,config/lr,batch_size: in that order after trial and
 * status (val_accuracy 12: its header; values 0, 0.25, 0.5), no time or
 * iteration. At 40 characters (5 + 7 + 12 + 5 + 10 + 16 = 55 whole) the list
 * loses its end: batch_size (42), lr (34).
 */
START_TEST(column_selection)
{
    run_once();
    ck_assert_msg(has_line(seen.pick, "| trial | status  | val_accuracy |    lr | batch_size |"),
                  "%s", seen.pick);
    ck_assert_msg(has_line(seen.pick, "| 2     | RUNNING |          0.5 | 0.001 |         32 |"),
                  "%s", seen.pick);
    check_best_line(seen.pick, 0); /* no width: whole */
    ck_assert_msg(has_line(seen.pick40, "| trial | status  | val_accuracy |"), "%s", seen.pick40);
    ck_assert_msg(has_line(seen.pick40, "| 1     | RUNNING |         0.25 |"), "%s", seen.pick40);
    ck_assert_uint_le(widest(seen.pick40), 40);
    /* a metric no trial reported while others did: shown empty, and named */
    ck_assert_msg(has_line(seen.unreported, "| trial | status  |    lr | val_los |"), "%s",
                  seen.unreported);
    ck_assert_msg(has_line(seen.unreported, "| 0     | RUNNING | 0.001 |       - |"), "%s",
                  seen.unreported);
    ck_assert_msg(has_line(seen.unreported, "Not reported by any trial: 'val_los'"), "%s",
                  seen.unreported);
}
END_TEST

START_TEST(progress_line_has_the_best_so_far)
{
    run_once();
    ck_assert_str_eq(seen.line, "progress: 0 pending, 3 running, 0 terminated, 0 stopped, 0 error; "
                                "best trial 0 val_loss=1");
    char *line = NULL;
    ck_assert_int_eq(tune_study_progress_line(seen.study, &line, NULL), TUNE_OK);
    ck_assert_str_eq(line, "progress: 0 pending, 0 running, 3 terminated, 0 stopped, 0 error; "
                           "best trial 0 val_loss=1");
    tune_free(line);
    /* before any report */
    tune_study *s = NULL;
    ck_assert_int_eq(tune_study_new_from_json(config, NULL, &s, NULL), TUNE_OK);
    ck_assert_int_eq(tune_study_progress_line(s, &line, NULL), TUNE_OK);
    ck_assert_str_eq(line, "progress: 3 pending, 0 running, 0 terminated, 0 stopped, 0 error; "
                           "no val_loss reported yet");
    tune_free(line);
    tune_study_free(s);
}
END_TEST

static const struct {
    const char *columns;
    tune_status st;
    const char *text;
} column_errors[] = {
    {"lr,,val_loss", TUNE_EINVAL, "column 2 is empty"},
    {"lr,config/lr", TUNE_EINVAL, "column 'config/lr' is named twice"},
    {"iter,training_iteration", TUNE_EINVAL, "column 'training_iteration' is named twice"},
    {"config/lrr", TUNE_EINVAL,
     "column 'config/lrr': no parameter 'lrr' (parameters: lr, batch_size, optimizer, "
     "weight_decay, warmup_ratio)"},
    {"batch_sizes", TUNE_EINVAL, "unknown column 'batch_sizes': did you mean 'batch_size'?"},
    {"optimiser", TUNE_EINVAL, "did you mean 'optimizer'?"},
    {"status", TUNE_EINVAL, "column 'status' is always shown"},
    {"a\x1b[2J", TUNE_EINVAL, "column 1 ('a\\x1b[2J') is not a name"},
    /* reported by no trial although trials reported other metrics */
    {"val_los", TUNE_ENOTFOUND, "no trial reported the metric(s) 'val_los'"},
    /* fine: parameters, reported metrics, the table's columns */
    {"val_accuracy,lr,time_total_s,iter", TUNE_OK, ""},
    {" time , val_loss ", TUNE_OK, ""},
};

START_TEST(column_list_errors)
{
    run_once();
    tune_error err = {0};
    tune_status st = tune_study_check_columns(seen.study, column_errors[_i].columns, &err);
    ck_assert_msg(st == column_errors[_i].st, "'%s': %d (%s)", column_errors[_i].columns, st,
                  err.text);
    ck_assert_msg(strstr(err.text, column_errors[_i].text) != NULL, "'%s': %s",
                  column_errors[_i].columns, err.text);
    if (st == TUNE_EINVAL) {
        /* the table refuses it the same way */
        char *text = NULL;
        tune_progress_options o = {.columns = column_errors[_i].columns};
        ck_assert_int_eq(tune_study_progress_table(seen.study, &o, &text, NULL), TUNE_EINVAL);
        ck_assert_ptr_null(text);
    }
}
END_TEST

/* Before any report, a metric name cannot be known wrong: it is taken. */
START_TEST(unreported_metric_before_any_report)
{
    tune_study *s = NULL;
    ck_assert_int_eq(tune_study_new_from_json(config, NULL, &s, NULL), TUNE_OK);
    tune_error err = {0};
    ck_assert_int_eq(tune_study_check_columns(s, "lr,val_f1", &err), TUNE_OK);
    ck_assert_int_eq(tune_study_check_columns(s, "lr,batch_sz", &err), TUNE_EINVAL);
    ck_assert_msg(strstr(err.text, "did you mean 'batch_size'?"), "%s", err.text);
    tune_study_free(s);
}
END_TEST

static void teardown_all(void)
{
    tune_free(seen.t120);
    tune_free(seen.t84);
    tune_free(seen.t80);
    tune_free(seen.pick);
    tune_free(seen.pick40);
    tune_free(seen.unreported);
    tune_free(seen.line);
    tune_study_free(seen.study);
    memset(&seen, 0, sizeof seen);
}

static Suite *progress_suite(void)
{
    Suite *s = suite_create("progress");
    TCase *tc = tcase_create("table");
    /* one sweep for every test, in the parent: the forked tests read it */
    tcase_add_unchecked_fixture(tc, setup_all, teardown_all);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, width_120_shows_every_column);
    tcase_add_test(tc, width_84_drops_then_refills);
    tcase_add_test(tc, width_80_fits_without_wrapping);
    tcase_add_test(tc, column_selection);
    tcase_add_test(tc, progress_line_has_the_best_so_far);
    tcase_add_loop_test(tc, column_list_errors, 0,
                        (int)(sizeof column_errors / sizeof column_errors[0]));
    tcase_add_test(tc, unreported_metric_before_any_report);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(progress_suite)
