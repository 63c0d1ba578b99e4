/*
 * test_ask_tell.c - a study driven by the caller's loop (tune_study_ask(),
 * tune_study_tell()): the same trials, configurations, decisions and CSV rows
 * as tune_study_run(); several open trials; the end of num_samples; FAILED
 * with its reason and its retries; refused tells; resume; shared among
 * processes (open trials by id across studies); many threads.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "check_util.h"
#include "tune.h"

static tune_study *study_from(const char *json)
{
    tune_study *s = NULL;
    tune_error err;
    tune_status st = tune_study_new_from_json(json, NULL, &s, &err);
    ck_assert_msg(st == TUNE_OK, "config rejected: %d:%d: %s", err.line, err.column, err.text);
    return s;
}

/* The value trial (x, lr, opt) reports at iteration i: deterministic, so both drivers agree. */
static double curve(const tune_trial *t, int i)
{
    double x = tune_trial_get_double_or(t, "x", -1);
    double lr = tune_trial_get_double_or(t, "lr", -1);
    const char *opt = "";
    ck_assert_int_eq(tune_trial_get_string(t, "opt", &opt, NULL), TUNE_OK);
    double bonus = strcmp(opt, "adam") == 0 ? 0.1 : 0.0;
    return x * (1.0 - 1.0 / (1.0 + lr * 1000.0 * i)) + bonus;
}

#define MAX_T 8

/* The objective tune_study_run() gets; ask_tell_loop() does the same by hand. */
static tune_status objective(tune_trial *t, void *ud)
{
    (void)ud;
    for (int i = 1; i <= MAX_T; i++) {
        tune_status st = tune_trial_report_metric(t, "score", curve(t, i), NULL);
        if (st == TUNE_ESTOP)
            return TUNE_OK;
        if (st)
            return st;
    }
    return TUNE_OK;
}

/* Asks, reports and tells one trial at a time until the study says it is exhausted. */
static int ask_tell_loop(tune_study *s)
{
    int n = 0;
    tune_trial *t;
    tune_error err;
    tune_status st;
    while ((st = tune_study_ask(s, &t, &err)) == TUNE_OK) {
        tune_tell_state end = TUNE_TELL_COMPLETE;
        for (int i = 1; i <= MAX_T; i++) {
            tune_status r = tune_trial_report_metric(t, "score", curve(t, i), NULL);
            if (r == TUNE_ESTOP) {
                end = TUNE_TELL_PRUNED;
                break;
            }
            ck_assert_int_eq(r, TUNE_OK);
        }
        ck_assert_int_eq(tune_study_tell(s, t, end, NULL, &err), TUNE_OK);
        n++;
    }
    ck_assert_msg(st == TUNE_EEXHAUSTED, "ask: %s", err.text);
    return n;
}

static const char *const volatile_columns[] = {
    "time_total_s",
    "time_this_iter_s",
    "time_since_restore",
    "timestamp",
    "date",
    "pid",
    "hostname",
    "node_ip",
    "logdir",
    NULL,
};

static int listed(const char *const *list, const char *name, size_t len)
{
    for (const char *const *v = list; v && *v; v++)
        if (strlen(*v) == len && strncmp(*v, name, len) == 0)
            return 1;
    return 0;
}

/*
 * A CSV file without the columns that depend on the clock, the process or
 * the folder: the rest must match cell for cell. Quoted cells may hold commas.
 * Returns a malloc'd text, one line per row; *ret_rows counts the data rows.
 */
static char *csv_stable(const char *path, const char *const *skip, int *ret_rows)
{
    char *text = tune_test_slurp(path);
    ck_assert_msg(text != NULL, "cannot read %s", path);
    size_t cap = strlen(text) + 1;
    char *out = calloc(1, cap);
    size_t o = 0;
    int keep[512];
    int rows = -1;
    for (char *line = text; *line;) {
        char *eol = strchr(line, '\n');
        size_t full = eol ? (size_t)(eol - line) : strlen(line);
        size_t len = full && line[full - 1] == '\r' ? full - 1 : full; /* the CSVs end lines CRLF */
        int col = 0;
        size_t start = 0;
        int quoted = 0;
        for (size_t i = 0; i <= len; i++) {
            if (i < len && line[i] == '"')
                quoted = !quoted;
            if (i < len && (quoted || line[i] != ','))
                continue;
            ck_assert_int_lt(col, 512);
            if (rows < 0)
                keep[col] = !listed(volatile_columns, line + start, i - start) &&
                            !listed(skip, line + start, i - start);
            if (keep[col]) {
                memcpy(out + o, line + start, i - start);
                o += i - start;
                out[o++] = ',';
            }
            col++;
            start = i + 1;
        }
        out[o++] = '\n';
        rows++;
        line += full + (eol ? 1 : 0);
    }
    out[o] = '\0';
    free(text);
    *ret_rows = rows;
    return out;
}

/* Compares two CSV files row by row on their stable columns; returns the data rows. */
static int csv_same(const char *a, const char *b, const char *const *skip)
{
    int na, nb;
    char *ta = csv_stable(a, skip, &na), *tb = csv_stable(b, skip, &nb);
    ck_assert_int_eq(na, nb);
    const char *pa = ta, *pb = tb;
    for (int row = 0; *pa || *pb; row++) {
        size_t la = strcspn(pa, "\n"), lb = strcspn(pb, "\n");
        ck_assert_msg(la == lb && memcmp(pa, pb, la) == 0, "%s row %d differs:\n%.*s\n%.*s", a, row,
                      (int)la, pa, (int)lb, pb);
        pa += la + (pa[la] ? 1 : 0);
        pb += lb + (pb[lb] ? 1 : 0);
    }
    free(ta);
    free(tb);
    return na;
}

#define SPACE                                                                                      \
    "\"param_space\": {\"x\": {\"uniform\": [0, 1]}, \"lr\": {\"loguniform\": [1e-4, 1e-1]},"      \
    " \"opt\": {\"choice\": [\"sgd\", \"adam\"]}}"

static char *config(const char *dir, const char *sub, int n, const char *extra)
{
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"metric\": \"score\", \"mode\": \"max\", \"num_samples\": %d, \"seed\": 7,"
             " \"storage\": \"%s%s%s\", \"max_concurrent_trials\": 1, %s%s}",
             n, dir ? dir : ":memory:", dir ? "/" : "", dir ? sub : "", SPACE, extra);
    return buf;
}

#define ASHA                                                                                       \
    ", \"scheduler\": {\"type\": \"asha\", \"max_t\": 8, \"grace_period\": 1, "                    \
    "\"reduction_factor\": 2}"

/* Random search and ASHA, one trial at a time: the same trials and rows as tune_study_run(). */
START_TEST(same_as_run)
{
    char *dir = tune_test_mkdtemp();
    tune_study *ref = study_from(config(dir, "run", 24, ASHA));
    ck_assert_int_eq(tune_study_set_objective(ref, objective, NULL, NULL), TUNE_OK);
    tune_error err;
    ck_assert_msg(tune_study_run(ref, &err) == TUNE_OK, "%s", err.text);
    int64_t c_ref[TUNE_TRIAL_STATUS_COUNT], c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(ref, c_ref);
    tune_study_free(ref);
    /* ASHA must have stopped some, or the decisions were never compared. */
    ck_assert_int_gt(c_ref[TUNE_TRIAL_STOPPED], 3);
    ck_assert_int_gt(c_ref[TUNE_TRIAL_TERMINATED], 0);

    tune_study *s = study_from(config(dir, "ask", 24, ASHA));
    ck_assert_int_eq(ask_tell_loop(s), 24);
    tune_study_counts(s, c);
    for (int i = 0; i < TUNE_TRIAL_STATUS_COUNT; i++)
        ck_assert_int_eq(c[i], c_ref[i]);
    ck_assert_int_eq(tune_study_finish(s, &err), TUNE_OK);
    tune_study_free(s);

    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/run/results.csv", dir);
    snprintf(b, sizeof b, "%s/ask/results.csv", dir);
    ck_assert_int_eq(csv_same(a, b, NULL), 24);
    snprintf(a, sizeof a, "%s/run/progress.csv", dir);
    snprintf(b, sizeof b, "%s/ask/progress.csv", dir);
    ck_assert_int_gt(csv_same(a, b, NULL), 24);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/*
 * HyperBand pauses trials and resumes them later: an ask then hands out a
 * paused trial again, whose reports up to its pause are replayed unrecorded,
 * as tune_study_run() runs its objective again.
 */
START_TEST(same_as_run_pausing)
{
    const char *hb = ", \"scheduler\": {\"type\": \"hyperband\", \"max_t\": 8, "
                     "\"reduction_factor\": 2}";
    char *dir = tune_test_mkdtemp();
    tune_study *ref = study_from(config(dir, "run", 12, hb));
    ck_assert_int_eq(tune_study_set_objective(ref, objective, NULL, NULL), TUNE_OK);
    tune_error err;
    ck_assert_msg(tune_study_run(ref, &err) == TUNE_OK, "%s", err.text);
    int64_t c_ref[TUNE_TRIAL_STATUS_COUNT], c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(ref, c_ref);
    tune_study_free(ref);
    ck_assert_int_gt(c_ref[TUNE_TRIAL_STOPPED], 0);

    tune_study *s = study_from(config(dir, "ask", 12, hb));
    int asked = ask_tell_loop(s);
    ck_assert_int_gt(asked, 12); /* some trials were handed out again after a pause */
    tune_study_counts(s, c);
    for (int i = 0; i < TUNE_TRIAL_STATUS_COUNT; i++)
        ck_assert_int_eq(c[i], c_ref[i]);
    ck_assert_int_eq(tune_study_finish(s, &err), TUNE_OK);
    tune_study_free(s);
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/run/results.csv", dir);
    snprintf(b, sizeof b, "%s/ask/results.csv", dir);
    ck_assert_int_eq(csv_same(a, b, NULL), 12);
    snprintf(a, sizeof a, "%s/run/progress.csv", dir);
    snprintf(b, sizeof b, "%s/ask/progress.csv", dir);
    csv_same(a, b, NULL);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/* Several trials open at once, told out of order; then the end of num_samples. */
START_TEST(several_open_then_exhausted)
{
    tune_study *s = study_from(config(NULL, NULL, 5, ""));
    tune_trial *t[5];
    tune_error err;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(tune_study_ask(s, &t[i], &err), TUNE_OK);
        ck_assert_int_eq(tune_trial_id(t[i]), i);
        ck_assert_int_eq(tune_trial_attempt(t[i]), 1);
    }
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_RUNNING], 3);
    ck_assert_int_eq(c[TUNE_TRIAL_PENDING], 2);
    /* Interleaved reports: each trial counts its own iterations. */
    for (int i = 1; i <= 3; i++)
        for (int k = 2; k >= 0; k--) {
            ck_assert_int_eq(tune_trial_report_metric(t[k], "score", curve(t[k], i), NULL),
                             TUNE_OK);
            ck_assert_int_eq(tune_trial_iteration(t[k]), i);
        }
    ck_assert_int_eq(tune_study_tell(s, t[2], TUNE_TELL_COMPLETE, NULL, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_tell(s, t[0], TUNE_TELL_PRUNED, NULL, &err), TUNE_OK);
    for (int i = 3; i < 5; i++) {
        ck_assert_int_eq(tune_study_ask(s, &t[i], &err), TUNE_OK);
        ck_assert_int_eq(tune_trial_id(t[i]), i);
    }
    /* All five handed out, two still open: a distinct answer, and nothing changes. */
    tune_trial *none = NULL;
    ck_assert_int_eq(tune_study_ask(s, &none, &err), TUNE_EEXHAUSTED);
    ck_assert_ptr_null(none);
    ck_assert_ptr_nonnull(strstr(err.text, "all 5 trials were asked"));
    for (int i = 3; i < 5; i++)
        ck_assert_int_eq(tune_study_tell_value(s, t[i], 0.5, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_tell(s, t[1], TUNE_TELL_COMPLETE, NULL, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_ask(s, &none, &err), TUNE_EEXHAUSTED);
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 4);
    ck_assert_int_eq(c[TUNE_TRIAL_STOPPED], 1); /* trial 0, told PRUNED */
    ck_assert_int_eq(c[TUNE_TRIAL_RUNNING] + c[TUNE_TRIAL_PENDING], 0);
    /* tell_value reported the value as one more iteration: the best is 0.5 or better. */
    tune_result *best = NULL;
    ck_assert_int_eq(tune_study_best(s, &best, &err), TUNE_OK);
    ck_assert(tune_result_score(best) >= 0.5);
    tune_result_free(best);
    ck_assert_int_eq(tune_study_finish(s, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_finish(s, &err), TUNE_OK); /* a second call does nothing */
    ck_assert_int_eq(tune_study_ask(s, &none, &err), TUNE_EINVAL);
    tune_study_free(s);
}
END_TEST

/* FAILED with a reason: retried (same id, same configuration) up to max_failures, then ERROR. */
START_TEST(failed_with_reason)
{
    char *dir = tune_test_mkdtemp();
    tune_study *s = study_from(config(dir, "e", 2, ", \"max_failures\": 1"));
    tune_trial *t, *u;
    tune_error err;
    ck_assert_int_eq(tune_study_ask(s, &t, &err), TUNE_OK);
    double x = tune_trial_get_double_or(t, "x", -1);
    ck_assert_int_eq(tune_study_tell(s, t, TUNE_TELL_COMPLETE, "no", &err), TUNE_EINVAL);
    ck_assert_int_eq(tune_study_tell(s, t, TUNE_TELL_FAILED, "diverged, loss 1e9", &err), TUNE_OK);
    /* The retry comes first, with the same configuration. */
    ck_assert_int_eq(tune_study_ask(s, &u, &err), TUNE_OK);
    ck_assert_ptr_ne(u, t);
    ck_assert_int_eq(tune_trial_id(u), 0);
    ck_assert_int_eq(tune_trial_attempt(u), 2);
    ck_assert(tune_trial_get_double_or(u, "x", -2) == x);
    ck_assert_int_eq(tune_trial_report_metric(u, "score", 0.25, NULL), TUNE_OK);
    ck_assert_int_eq(tune_study_tell(s, u, TUNE_TELL_FAILED, "diverged, loss 1e9", &err), TUNE_OK);
    ck_assert_int_eq(tune_study_ask(s, &t, &err), TUNE_OK);
    ck_assert_int_eq(tune_trial_id(t), 1);
    ck_assert_int_eq(tune_study_tell(s, t, TUNE_TELL_FAILED, NULL, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_ask(s, &u, &err), TUNE_OK);
    ck_assert_int_eq(tune_trial_id(u), 1);
    ck_assert_int_eq(tune_study_tell_value(s, u, 0.75, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_ask(s, &u, &err), TUNE_EEXHAUSTED);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_ERROR], 1);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 1);
    ck_assert_int_eq(tune_study_finish(s, &err), TUNE_OK);
    tune_study_free(s);

    char path[4096];
    snprintf(path, sizeof path, "%s/e/results.csv", dir);
    char *csv = tune_test_slurp(path);
    ck_assert_ptr_nonnull(csv);
    /* Trial 0: ERROR after two attempts, the reason quoted (it holds a comma). */
    char *row0 = strstr(csv, "\n0,");
    ck_assert_ptr_nonnull(row0);
    char *row1 = strstr(csv, "\n1,");
    ck_assert_ptr_nonnull(row1);
    *row1 = '\0';
    ck_assert_ptr_nonnull(strstr(row0, ",ERROR,"));
    ck_assert_ptr_nonnull(strstr(row0, "\"diverged, loss 1e9\""));
    ck_assert_ptr_nonnull(strstr(row1 + 1, ",TERMINATED,"));
    ck_assert_ptr_nonnull(strstr(row1 + 1, "0.75"));
    free(csv);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/* Tells that cannot be: twice, a handle of another study, a pointer that is no handle. */
START_TEST(refused_tells)
{
    tune_study *s = study_from(config(NULL, NULL, 3, ""));
    tune_study *other = study_from(config(NULL, NULL, 3, ""));
    tune_trial *t, *o;
    tune_error err;
    ck_assert_int_eq(tune_study_tell(s, NULL, TUNE_TELL_COMPLETE, NULL, &err), TUNE_EINVAL);
    ck_assert_int_eq(tune_study_finish(s, &err), TUNE_EINVAL); /* nothing asked yet */
    ck_assert_int_eq(tune_study_ask(s, &t, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_ask(other, &o, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_tell(s, o, TUNE_TELL_COMPLETE, NULL, &err), TUNE_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.text, "not asked from this study"));
    long not_a_trial[64] = {0};
    ck_assert_int_eq(tune_study_tell(s, (tune_trial *)not_a_trial, TUNE_TELL_COMPLETE, NULL, &err),
                     TUNE_EINVAL);
    ck_assert_int_eq(tune_study_tell(s, t, (tune_tell_state)7, NULL, &err), TUNE_EINVAL);
    ck_assert_int_eq(tune_study_tell(s, t, TUNE_TELL_PRUNED, NULL, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_tell(s, t, TUNE_TELL_COMPLETE, NULL, &err), TUNE_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.text, "already told"));
    ck_assert_int_eq(tune_study_tell_value(s, t, 1.0, &err), TUNE_EINVAL);
    /* After its tell the handle takes no reports; the study records none. */
    ck_assert_int_eq(tune_trial_report_metric(t, "score", 1.0, NULL), TUNE_EINVAL);
    ck_assert_int_eq(tune_trial_iteration(t), 0);
    /* A study driven by ask and tell does not also run. */
    ck_assert_int_eq(tune_study_set_objective(s, objective, NULL, NULL), TUNE_EINVAL);
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_EINVAL);
    /* Freed with a trial still open: finished on the way (nothing leaks, ASan checks). */
    tune_study_free(other);
    tune_study_free(s);
}
END_TEST

/* Finish with an open trial, resume the folder, continue: the trials of an uninterrupted loop. */
START_TEST(resume_continues)
{
    char *dir = tune_test_mkdtemp();
    tune_study *s = study_from(config(dir, "r", 6, ASHA));
    tune_trial *t;
    tune_error err;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(tune_study_ask(s, &t, &err), TUNE_OK);
        ck_assert_int_eq(tune_study_tell_value(s, t, curve(t, 1), &err), TUNE_OK);
    }
    ck_assert_int_eq(tune_study_ask(s, &t, &err), TUNE_OK);
    /* Asked, not told (nor reported: the scheduler's view then matches the reference's). */
    double x3 = tune_trial_get_double_or(t, "x", -1);
    /* The folder is locked while the study is open. */
    char path[4096];
    snprintf(path, sizeof path, "%s/r", dir);
    tune_study *busy = NULL;
    ck_assert_int_eq(tune_study_resume(path, 0, &busy, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_ask(busy, &t, &err), TUNE_EBUSY);
    tune_study_free(busy);
    ck_assert_int_eq(tune_study_finish(s, &err), TUNE_OK);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED] + c[TUNE_TRIAL_STOPPED], 3); /* ASHA stops some */
    ck_assert_int_eq(c[TUNE_TRIAL_PENDING], 3); /* the open one and the two never asked */
    tune_study_free(s);

    tune_study *r = NULL;
    ck_assert_msg(tune_study_resume(path, 0, &r, &err) == TUNE_OK, "%s", err.text);
    /* The trial left open comes back first, same id and configuration, a new attempt. */
    ck_assert_int_eq(tune_study_ask(r, &t, &err), TUNE_OK);
    ck_assert_int_eq(tune_trial_id(t), 3);
    ck_assert_int_eq(tune_trial_attempt(t), 2);
    ck_assert(tune_trial_get_double_or(t, "x", -2) == x3);
    ck_assert_int_eq(tune_study_tell_value(r, t, curve(t, 1), &err), TUNE_OK);
    int n = 1;
    while (tune_study_ask(r, &t, &err) == TUNE_OK) {
        ck_assert_int_eq(tune_trial_id(t), 3 + n++);
        ck_assert_int_eq(tune_study_tell_value(r, t, curve(t, 1), &err), TUNE_OK);
    }
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(tune_study_finish(r, &err), TUNE_OK);
    tune_study_counts(r, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED] + c[TUNE_TRIAL_STOPPED], 6);
    tune_study_free(r);

    /* The same configurations as six trials asked in one go. */
    tune_study *ref = study_from(config(dir, "ref", 6, ASHA));
    while (tune_study_ask(ref, &t, &err) == TUNE_OK)
        ck_assert_int_eq(tune_study_tell_value(ref, t, curve(t, 1), &err), TUNE_OK);
    tune_study_free(ref); /* finishes: writes the CSVs */
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/r/results.csv", dir);
    snprintf(b, sizeof b, "%s/ref/results.csv", dir);
    /* Row by row the same but for trial 3's attempt count. */
    static const char *const attempts[] = {"attempt", "attempts", NULL};
    ck_assert_int_eq(csv_same(a, b, attempts), 6);
    tune_study *ra = NULL, *rb = NULL;
    ck_assert_int_eq(tune_study_open(path, &ra, &err), TUNE_OK);
    snprintf(b, sizeof b, "%s/ref", dir);
    ck_assert_int_eq(tune_study_open(b, &rb, &err), TUNE_OK);
    tune_result *best_a = NULL, *best_b = NULL;
    ck_assert_int_eq(tune_study_best(ra, &best_a, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_best(rb, &best_b, &err), TUNE_OK);
    ck_assert_int_eq(tune_result_trial_id(best_a), tune_result_trial_id(best_b));
    ck_assert(tune_result_score(best_a) == tune_result_score(best_b));
    tune_result_free(best_a);
    tune_result_free(best_b);
    tune_study_free(ra);
    tune_study_free(rb);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/*
 * Shared among processes (each study here plays one process): asked trials
 * stay open across tune_study_free() and resume, a later study gets them by
 * id, reports continue their iterations, and runs are refused.
 */
START_TEST(shared_across_studies)
{
    char *dir = tune_test_mkdtemp();
    tune_error err;
    tune_trial *t, *u;
    tune_study *m = study_from(config(NULL, NULL, 3, ""));
    ck_assert_int_eq(tune_study_set_ask_shared(m, 0, &err), TUNE_EINVAL); /* ":memory:" */
    ck_assert_ptr_nonnull(strstr(err.text, ":memory:"));
    ck_assert_int_eq(tune_study_ask(m, &t, &err), TUNE_OK);
    /* Not shared: its own open trial by id is the same handle; an unknown id is not found. */
    ck_assert_int_eq(tune_study_get_trial(m, 0, &u, &err), TUNE_OK);
    ck_assert_ptr_eq(u, t);
    ck_assert_int_eq(tune_study_get_trial(m, 5, &u, &err), TUNE_ENOTFOUND);
    ck_assert_int_eq(tune_study_set_ask_shared(m, 0, &err), TUNE_EINVAL); /* too late */
    tune_study_free(m);

    char path[4096];
    snprintf(path, sizeof path, "%s/s", dir);
    tune_study *a = study_from(config(dir, "s", 4, ASHA));
    ck_assert_int_eq(tune_study_set_ask_shared(a, 1, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_ask(a, &t, &err), TUNE_OK);
    double x0 = tune_trial_get_double_or(t, "x", -1);
    ck_assert_int_eq(tune_trial_report_metric(t, "score", 0.25, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_ask(a, &u, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_finish(a, &err), TUNE_OK);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(a, c);
    ck_assert_int_eq(c[TUNE_TRIAL_RUNNING], 2); /* left open, not back to PENDING */
    tune_study_free(a);

    /* A later "process": resumed, shared by the folder's record without the call. */
    tune_study *b = NULL;
    ck_assert_msg(tune_study_resume(path, 0, &b, &err) == TUNE_OK, "%s", err.text);
    ck_assert_int_eq(tune_study_get_trial(b, 0, &t, &err), TUNE_OK);
    ck_assert_int_eq(tune_trial_id(t), 0);
    ck_assert_int_eq(tune_trial_attempt(t), 1);
    ck_assert_int_eq(tune_trial_iteration(t), 1);
    ck_assert(tune_trial_get_double_or(t, "x", -2) == x0);
    ck_assert_int_eq(tune_trial_report_metric(t, "score", 0.5, &err), TUNE_OK);
    ck_assert_int_eq(tune_trial_iteration(t), 2);
    ck_assert_int_eq(tune_study_tell(b, t, TUNE_TELL_COMPLETE, NULL, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_get_trial(b, 0, &t, &err), TUNE_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.text, "trial 0 is not open (TERMINATED)"));
    ck_assert_int_eq(tune_study_get_trial(b, 7, &t, &err), TUNE_ENOTFOUND);
    /* The next ask is trial 2: trial 1 is still open in another's hands. */
    ck_assert_int_eq(tune_study_ask(b, &t, &err), TUNE_OK);
    ck_assert_int_eq(tune_trial_id(t), 2);
    ck_assert_int_eq(tune_study_tell_value(b, t, 0.75, &err), TUNE_OK);
    tune_study_free(b);

    tune_study *c2 = NULL;
    ck_assert_int_eq(tune_study_resume(path, 0, &c2, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_get_trial(c2, 1, &t, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_tell(c2, t, TUNE_TELL_FAILED, "gave up", &err), TUNE_OK);
    ck_assert_int_eq(tune_study_finish(c2, &err), TUNE_OK);
    tune_study_counts(c2, c);
    ck_assert_int_eq(c[TUNE_TRIAL_RUNNING], 0);
    ck_assert_int_eq(c[TUNE_TRIAL_ERROR], 1); /* max_failures 0 */
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED] + c[TUNE_TRIAL_STOPPED], 2);
    tune_study_free(c2);

    /* A run of the folder is refused: its trials are driven by ask and tell. */
    tune_study *r = NULL;
    ck_assert_int_eq(tune_study_resume(path, 0, &r, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_set_objective(r, objective, NULL, NULL), TUNE_OK);
    ck_assert_int_eq(tune_study_run(r, &err), TUNE_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.text, "driven by ask and tell"));
    tune_study_free(r);

    /* And a folder of an unshared study cannot be shared later. */
    tune_study *p = study_from(config(dir, "plain", 2, ""));
    ck_assert_int_eq(tune_study_ask(p, &t, &err), TUNE_OK);
    tune_study_free(p);
    snprintf(path, sizeof path, "%s/plain", dir);
    ck_assert_int_eq(tune_study_resume(path, 0, &p, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_set_ask_shared(p, 0, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_ask(p, &t, &err), TUNE_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.text, "drives"));
    tune_study_free(p);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/*
 * TPE (constant liar) with trials open across "processes": each study
 * rebuilds the searcher from the store, where an asked trial is pending, so
 * the suggestions are those of one study asking the same way.
 */
START_TEST(shared_searcher_pending)
{
    char *dir = tune_test_mkdtemp();
    static const char tpe[] = ", \"search\": {\"algorithm\": \"tpe\", \"n_startup_trials\": 2}";
    tune_error err;
    tune_trial *t;
    double ref_x[7];
    tune_study *one = study_from(config(dir, "one", 7, tpe));
    for (int i = 0; i < 7; i++) {
        ck_assert_int_eq(tune_study_ask(one, &t, &err), TUNE_OK);
        ref_x[i] = tune_trial_get_double_or(t, "x", -1);
        /* Trials 3 and 4 stay open while 4, 5 and 6 are asked; 3 is told after 5. */
        if (i < 3 || i == 6)
            ck_assert_int_eq(tune_study_tell_value(one, t, curve(t, 1), &err), TUNE_OK);
        if (i == 5) {
            tune_trial *t3;
            ck_assert_int_eq(tune_study_get_trial(one, 3, &t3, &err), TUNE_OK);
            ck_assert_int_eq(tune_study_tell_value(one, t3, curve(t3, 1), &err), TUNE_OK);
        }
    }
    tune_study_free(one);

    char path[4096];
    snprintf(path, sizeof path, "%s/many", dir);
    for (int i = 0; i < 7; i++) {
        tune_study *s = NULL;
        if (i == 0) {
            s = study_from(config(dir, "many", 7, tpe));
            ck_assert_int_eq(tune_study_set_ask_shared(s, 0, &err), TUNE_OK);
        } else {
            ck_assert_msg(tune_study_resume(path, 0, &s, &err) == TUNE_OK, "%s", err.text);
        }
        ck_assert_int_eq(tune_study_ask(s, &t, &err), TUNE_OK);
        ck_assert_int_eq(tune_trial_id(t), i);
        ck_assert_msg(tune_trial_get_double_or(t, "x", -1) == ref_x[i], "trial %d: %.17g vs %.17g",
                      i, tune_trial_get_double_or(t, "x", -1), ref_x[i]);
        if (i < 3 || i == 6)
            ck_assert_int_eq(tune_study_tell_value(s, t, curve(t, 1), &err), TUNE_OK);
        tune_study_free(s);
        if (i == 5) {
            ck_assert_int_eq(tune_study_resume(path, 0, &s, &err), TUNE_OK);
            ck_assert_int_eq(tune_study_get_trial(s, 3, &t, &err), TUNE_OK);
            ck_assert_int_eq(tune_study_tell_value(s, t, curve(t, 1), &err), TUNE_OK);
            tune_study_free(s);
        }
    }
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/* ---- many threads ---------------------------------------------------------- */

#define N_THREADS 4
#define N_TRIALS  400

struct shared {
    tune_study *s;
    atomic_int seen[N_TRIALS];
    atomic_int told;
};

static void *asker(void *arg)
{
    struct shared *sh = arg;
    for (;;) {
        tune_trial *t;
        tune_error err;
        tune_status st = tune_study_ask(sh->s, &t, &err);
        if (st == TUNE_EWAIT) {
            sched_yield();
            continue;
        }
        if (st == TUNE_EEXHAUSTED)
            break;
        ck_assert_msg(st == TUNE_OK, "ask: %s", err.text);
        int64_t id = tune_trial_id(t);
        ck_assert(id >= 0 && id < N_TRIALS);
        atomic_fetch_add(&sh->seen[id], 1);
        tune_tell_state end = TUNE_TELL_COMPLETE;
        for (int i = 1; i <= MAX_T; i++)
            if (tune_trial_report_metric(t, "score", curve(t, i), NULL) == TUNE_ESTOP) {
                end = TUNE_TELL_PRUNED;
                break;
            }
        ck_assert_int_eq(tune_study_tell(sh->s, t, end, NULL, &err), TUNE_OK);
        atomic_fetch_add(&sh->told, 1);
    }
    return NULL;
}

START_TEST(threads)
{
    static struct shared sh;
    memset(&sh, 0, sizeof sh);
    char *dir = tune_test_mkdtemp();
    sh.s = study_from(config(dir, "t", N_TRIALS, ASHA));
    pthread_t th[N_THREADS];
    for (int i = 0; i < N_THREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, asker, &sh), 0);
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(atomic_load(&sh.told), N_TRIALS);
    for (int i = 0; i < N_TRIALS; i++)
        ck_assert_int_eq(atomic_load(&sh.seen[i]), 1);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(sh.s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED] + c[TUNE_TRIAL_STOPPED], N_TRIALS);
    ck_assert_int_gt(c[TUNE_TRIAL_STOPPED], 0);
    tune_error err;
    ck_assert_int_eq(tune_study_finish(sh.s, &err), TUNE_OK);
    tune_study_free(sh.s);
    char path[4096];
    snprintf(path, sizeof path, "%s/t/results.csv", dir);
    int rows;
    free(csv_stable(path, NULL, &rows));
    ck_assert_int_eq(rows, N_TRIALS);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ask_tell");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, same_as_run);
    tcase_add_test(tc, same_as_run_pausing);
    tcase_add_test(tc, several_open_then_exhausted);
    tcase_add_test(tc, failed_with_reason);
    tcase_add_test(tc, refused_tells);
    tcase_add_test(tc, resume_continues);
    tcase_add_test(tc, shared_across_studies);
    tcase_add_test(tc, shared_searcher_pending);
    tcase_add_test(tc, threads);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(suite)
