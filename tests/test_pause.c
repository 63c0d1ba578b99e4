/*
 * test_pause.c - checkpoints and the pause/resume protocol of the controller:
 * what tune_trial_save/load_checkpoint() keep (in memory and in the trial's
 * folder), retries and `tune resume` continuing from a checkpoint, when the
 * engine asks for one, a paused objective that never saves being
 * fast-forwarded, and PBT restarting trials from a donor's checkpoint.
 *
 * Objectives log every report they make (trial, attempt, iteration the
 * engine counts, the value of their own state) so that each test can check
 * the run event by event.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_util.h"
#include "tune.h"
#include "store/store.h"

#define MAX_EVENTS 20000

struct event {
    int64_t trial;
    int attempt;
    int64_t iteration; /* tune_trial_iteration() after the report */
    int64_t state;     /* the objective's own step counter */
    int loaded;        /* this attempt started from a checkpoint */
    int wanted;        /* tune_trial_checkpoint_wanted() after the report */
    tune_status answer;
    double x;  /* the trial's parameter */
    int first; /* the first report of this run of the objective */
};

struct log {
    pthread_mutex_t lock;
    struct event ev[MAX_EVENTS];
    int n;
    /* objective behaviour */
    int iters;         /* reports per trial */
    int fail_at;       /* attempt 1 fails after this report (0: never) */
    int save;          /* save when asked */
    int stop_study_at; /* request stop after this many events (0: never) */
    int step_us;       /* sleep before each report, so that times are measurable */
    tune_study *study;
};

static void log_event(struct log *lg, const struct event *e)
{
    pthread_mutex_lock(&lg->lock);
    if (lg->n < MAX_EVENTS)
        lg->ev[lg->n++] = *e;
    int n = lg->n;
    pthread_mutex_unlock(&lg->lock);
    if (lg->stop_study_at && n == lg->stop_study_at)
        tune_study_request_stop(lg->study);
}

/*
 * The objective's state is a step counter; its metric is x * step, so a
 * trial's value tells how far it has trained. Saves when the engine asks.
 */
static tune_status obj_counter(tune_trial *t, void *ud)
{
    struct log *lg = ud;
    double x = tune_trial_get_double_or(t, "x", 1.0);
    int64_t step = 0;
    int loaded = 0;
    void *data = NULL;
    size_t size = 0;
    tune_status st = tune_trial_load_checkpoint(t, &data, &size, NULL);
    if (st == TUNE_OK) {
        ck_assert_uint_eq(size, sizeof step);
        memcpy(&step, data, sizeof step);
        tune_free(data);
        loaded = 1;
    } else {
        ck_assert_int_eq(st, TUNE_ENOTFOUND);
    }
    int first = 1;
    while (tune_trial_iteration(t) < lg->iters) {
        step++;
        if (lg->step_us)
            usleep((useconds_t)lg->step_us);
        tune_status ans = tune_trial_report_metric(t, "score", x * (double)step, NULL);
        struct event e = {tune_trial_id(t),
                          tune_trial_attempt(t),
                          tune_trial_iteration(t),
                          step,
                          loaded,
                          tune_trial_checkpoint_wanted(t),
                          ans,
                          x,
                          first};
        first = 0;
        log_event(lg, &e);
        if (lg->save && (ans == TUNE_OK || ans == TUNE_ESTOP) && tune_trial_checkpoint_wanted(t))
            ck_assert_int_eq(tune_trial_save_checkpoint(t, &step, sizeof step, NULL), TUNE_OK);
        if (ans == TUNE_ESTOP)
            return TUNE_OK;
        if (ans != TUNE_OK)
            return ans;
        if (lg->fail_at && tune_trial_attempt(t) == 1 && step == lg->fail_at) {
            tune_trial_set_error(t, "planned failure");
            return TUNE_EFAILED;
        }
    }
    return TUNE_OK;
}

static struct log *log_new(void)
{
    struct log *lg = calloc(1, sizeof *lg);
    ck_assert_ptr_nonnull(lg);
    pthread_mutex_init(&lg->lock, NULL);
    lg->iters = 10;
    lg->save = 1;
    return lg;
}

static void log_free(struct log *lg)
{
    pthread_mutex_destroy(&lg->lock);
    free(lg);
}

static tune_study *study_from(const char *json, struct log *lg)
{
    tune_study *s = NULL;
    tune_error err;
    tune_status st = tune_study_new_from_json(json, NULL, &s, &err);
    ck_assert_msg(st == TUNE_OK, "config rejected: %d:%d: %s", err.line, err.column, err.text);
    ck_assert_int_eq(tune_study_set_objective(s, obj_counter, lg, NULL), TUNE_OK);
    lg->study = s;
    return s;
}

static void run_ok(tune_study *s)
{
    tune_error err;
    tune_status st = tune_study_run(s, &err);
    ck_assert_msg(st == TUNE_OK, "run failed: %s", err.text);
}

/* Resumes the study in dir with obj_counter logging into lg and runs it to its end. */
static tune_study *resume_run(const char *dir, struct log *lg)
{
    tune_study *s = NULL;
    tune_error err;
    ck_assert_int_eq(tune_study_resume(dir, 0, &s, &err), TUNE_OK);
    ck_assert_int_eq(tune_study_set_objective(s, obj_counter, lg, NULL), TUNE_OK);
    lg->study = s;
    run_ok(s);
    return s;
}

/* Stored reports of one trial, in (attempt, iteration) order, for row-by-row checks. */
struct stored {
    int64_t trial;
    int n;
    int attempt[64];
    int64_t iteration[64];
};

static tune_status collect(void *ud, int64_t trial_id, int attempt, int64_t iteration,
                           double time_total_s, size_t n, const char *const *names,
                           const double *values)
{
    (void)time_total_s, (void)n, (void)names, (void)values;
    struct stored *s = ud;
    if (trial_id == s->trial && s->n < 64) {
        s->attempt[s->n] = attempt;
        s->iteration[s->n++] = iteration;
    }
    return TUNE_OK;
}

static void read_reports(const char *dir, int64_t trial, struct stored *out)
{
    char db[4096];
    snprintf(db, sizeof db, "%s/experiment.db", dir);
    struct tunep_store *st = NULL;
    tune_error err;
    ck_assert_int_eq(tunep_store_open(db, 1, &st, &err), TUNE_OK);
    memset(out, 0, sizeof *out);
    out->trial = trial;
    ck_assert_int_eq(tunep_store_foreach_report(st, collect, out, &err), TUNE_OK);
    tunep_store_close(st);
}

/* ---- tests --------------------------------------------------------------- */

/* A failed attempt's retry continues from the checkpoint, in memory and on disk. */
static void check_retry_continues(const char *storage)
{
    struct log *lg = log_new();
    lg->fail_at = 4;
    char json[1024];
    snprintf(json, sizeof json,
             "{\"metric\": \"score\", \"num_samples\": 3, \"seed\": 5, \"max_failures\": 1,"
             " \"max_concurrent_trials\": 1, \"checkpoint_frequency\": 2,"
             " \"param_space\": {\"x\": {\"uniform\": [1, 2]}}, \"storage\": \"%s\"}",
             storage);
    tune_study *s = study_from(json, lg);
    run_ok(s);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 3);
    /* Per trial: attempt 1 reports 1..4 and fails after 4 (checkpoint at 4,
     * the last even iteration); attempt 2 loads step 4 and reports 5..10. */
    for (int64_t id = 0; id < 3; id++) {
        int n1 = 0, n2 = 0;
        for (int i = 0; i < lg->n; i++) {
            const struct event *e = &lg->ev[i];
            if (e->trial != id)
                continue;
            if (e->attempt == 1) {
                n1++;
                ck_assert_int_eq(e->loaded, 0);
                ck_assert_int_eq(e->iteration, e->state);
            } else {
                ck_assert_int_eq(e->attempt, 2);
                ck_assert_int_eq(e->loaded, 1);
                ck_assert_int_eq(e->state, 4 + ++n2);
                ck_assert_int_eq(e->iteration, e->state); /* counting goes on from 4 */
            }
        }
        ck_assert_int_eq(n1, 4);
        ck_assert_int_eq(n2, 6);
    }
    tune_study_free(s);
    log_free(lg);
}

START_TEST(retry_continues_in_memory)
{
    check_retry_continues(":memory:");
}
END_TEST

START_TEST(retry_continues_on_disk)
{
    char *dir = tune_test_mkdtemp();
    check_retry_continues(dir);
    /* The checkpoint file is in each trial's folder; the store has attempt 2's
     * reports numbered 5..10 after attempt 1's 1..4. */
    char path[4200];
    struct stat sb;
    for (int id = 0; id < 3; id++) {
        snprintf(path, sizeof path, "%s/trials/trial_%06d/checkpoint.bin", dir, id);
        ck_assert_msg(stat(path, &sb) == 0, "missing %s", path);
        ck_assert_int_eq(sb.st_size, 40 + 8); /* the header, then the objective's 8 bytes */
        struct stored r;
        read_reports(dir, id, &r);
        ck_assert_int_eq(r.n, 10);
        for (int i = 0; i < r.n; i++) {
            ck_assert_int_eq(r.attempt[i], i < 4 ? 1 : 2);
            ck_assert_int_eq(r.iteration[i], i + 1);
        }
    }
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/* checkpoint_frequency asks every n iterations and at no other time. */
START_TEST(wanted_every_n)
{
    struct log *lg = log_new();
    /* Saving answers the request: the next one comes 3 iterations later. */
    tune_study *s = study_from("{\"metric\": \"score\", \"num_samples\": 1, \"seed\": 1,"
                               " \"checkpoint_frequency\": 3, \"storage\": \":memory:\"}",
                               lg);
    run_ok(s);
    ck_assert_int_eq(lg->n, 10);
    for (int i = 0; i < lg->n; i++)
        ck_assert_int_eq(lg->ev[i].wanted, lg->ev[i].iteration % 3 == 0);
    tune_study_free(s);
    log_free(lg);
}
END_TEST

/* An interrupted run resumed from its folder continues each trial from its checkpoint. */
START_TEST(resume_continues_from_checkpoint)
{
    char *dir = tune_test_mkdtemp();
    char json[1024];
    snprintf(json, sizeof json,
             "{\"metric\": \"score\", \"num_samples\": 2, \"seed\": 9,"
             " \"max_concurrent_trials\": 1, \"checkpoint_frequency\": 1,"
             " \"param_space\": {\"x\": {\"uniform\": [1, 2]}}, \"storage\": \"%s\"}",
             dir);
    struct log *lg = log_new();
    lg->stop_study_at = 6; /* trial 0 is stopped after its 6th report */
    tune_study *s = study_from(json, lg);
    tune_error err;
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_EINTERRUPTED);
    tune_study_free(s);
    log_free(lg);

    lg = log_new();
    s = NULL;
    s = resume_run(dir, lg);
    /* Trial 0 goes on from step 6 in attempt 2: 7..10; trial 1 runs from scratch. */
    int seen0 = 0;
    for (int i = 0; i < lg->n; i++) {
        const struct event *e = &lg->ev[i];
        if (e->trial == 0) {
            ck_assert_int_eq(e->loaded, 1);
            ck_assert_int_eq(e->state, 7 + seen0++);
            ck_assert_int_eq(e->iteration, e->state);
        } else {
            ck_assert_int_eq(e->loaded, 0);
        }
    }
    ck_assert_int_eq(seen0, 4);
    /* Attempt 1 recorded 1..7 (its 7th report came back "stop": the study
     * was stopping; the last checkpoint was at 6), attempt 2 recorded 7..10. */
    struct stored r;
    read_reports(dir, 0, &r);
    ck_assert_int_eq(r.n, 11);
    for (int i = 0; i < r.n; i++) {
        ck_assert_int_eq(r.attempt[i], i < 7 ? 1 : 2);
        ck_assert_int_eq(r.iteration[i], i < 7 ? i + 1 : i);
    }
    tune_study_free(s);
    log_free(lg);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/* Bad arguments and a corrupt checkpoint file are errors, never crashes. */
START_TEST(corrupt_checkpoint_is_an_error)
{
    char *dir = tune_test_mkdtemp();
    char json[1024];
    snprintf(json, sizeof json,
             "{\"metric\": \"score\", \"num_samples\": 1, \"seed\": 2, \"max_failures\": 1,"
             " \"checkpoint_frequency\": 1, \"storage\": \"%s\"}",
             dir);
    struct log *lg = log_new();
    lg->stop_study_at = 3;
    tune_study *s = study_from(json, lg);
    tune_error err;
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_EINTERRUPTED);
    tune_study_free(s);
    log_free(lg);
    /* Truncate the checkpoint: the header promises 8 bytes that are not there. */
    char path[4200];
    snprintf(path, sizeof path, "%s/trials/trial_000000/checkpoint.bin", dir);
    ck_assert_int_eq(truncate(path, 44), 0);
    ck_assert_int_eq(tune_study_resume(dir, 0, &s, &err), TUNE_OK);
    tune_study_free(s);
    /* The probe refuses it: the trial starts over (no has_ckpt), nothing crashes. */
    lg = log_new();
    s = resume_run(dir, lg);
    ck_assert_int_eq(lg->n, 10);
    ck_assert_int_eq(lg->ev[0].loaded, 0);
    tune_study_free(s);
    log_free(lg);

    ck_assert_int_eq(tune_trial_save_checkpoint(NULL, "x", 1, NULL), TUNE_EINVAL);
    ck_assert_int_eq(tune_trial_load_checkpoint(NULL, NULL, NULL, NULL), TUNE_EINVAL);
    ck_assert_int_eq(tune_trial_checkpoint_wanted(NULL), 0);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/*
 * Every trial of a sweep under a pausing scheduler ends TERMINATED or STOPPED
 * (none left PAUSED), and its stored reports are 1..n in one attempt, each
 * once, whether the objective saves checkpoints or is fast-forwarded.
 */
static void check_pausing_sweep(const char *scheduler, int save, int64_t n_trials)
{
    char *dir = tune_test_mkdtemp();
    char json[2048];
    snprintf(json, sizeof json,
             "{\"metric\": \"score\", \"num_samples\": %lld, \"seed\": 3,"
             " \"max_concurrent_trials\": 3, \"param_space\": {\"x\": {\"uniform\": [1, 2]}},"
             " \"scheduler\": %s, \"storage\": \"%s\"}",
             (long long)n_trials, scheduler, dir);
    struct log *lg = log_new();
    lg->iters = 9;
    lg->save = save;
    tune_study *s = study_from(json, lg);
    run_ok(s);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_PAUSED], 0);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED] + c[TUNE_TRIAL_STOPPED], n_trials);
    ck_assert_int_gt(c[TUNE_TRIAL_STOPPED], 0);
    int loaded = 0;
    for (int i = 0; i < lg->n; i++)
        loaded += lg->ev[i].loaded;
    if (save)
        ck_assert_int_gt(loaded, 0);
    else
        ck_assert_int_eq(loaded, 0);
    int64_t max_iter = 0, events = 0, stored = 0;
    for (int64_t id = 0; id < n_trials; id++) {
        struct stored r;
        read_reports(dir, id, &r);
        ck_assert_int_gt(r.n, 0);
        stored += r.n;
        for (int i = 0; i < r.n; i++) {
            ck_assert_int_eq(r.attempt[i], 1);
            ck_assert_int_eq(r.iteration[i], i + 1);
        }
        if (r.n > max_iter)
            max_iter = r.n;
    }
    ck_assert_int_eq(max_iter, 9); /* some trial was resumed to the end */
    /* With checkpoints no report is made twice; without, resumed trials replay
     * theirs (answered, not stored). */
    events = lg->n;
    if (save)
        ck_assert_int_eq(events, stored);
    else
        ck_assert_int_gt(events, stored);
    tune_study_free(s);
    log_free(lg);
    tune_test_rmtree(dir);
    free(dir);
}

START_TEST(hyperband_with_checkpoints)
{
    check_pausing_sweep("{\"type\": \"hyperband\", \"max_t\": 9, \"reduction_factor\": 3}", 1, 17);
}
END_TEST

START_TEST(hyperband_fast_forward)
{
    check_pausing_sweep("{\"type\": \"hyperband\", \"max_t\": 9, \"reduction_factor\": 3}", 0, 17);
}
END_TEST

START_TEST(promotion_asha_fast_forward)
{
    check_pausing_sweep("{\"type\": \"asha\", \"variant\": \"promotion\", \"max_t\": 9,"
                        " \"grace_period\": 1, \"reduction_factor\": 3}",
                        0, 20);
}
END_TEST

/*
 * A HyperBand sweep interrupted while trials are paused, then resumed: the
 * paused trials stay in their brackets and run on; every trial ends, and each
 * attempt's reports are 1..n without gaps or repeats.
 */
START_TEST(hyperband_resume_keeps_paused)
{
    char *dir = tune_test_mkdtemp();
    char json[2048];
    snprintf(json, sizeof json,
             "{\"metric\": \"score\", \"num_samples\": 17, \"seed\": 4,"
             " \"max_concurrent_trials\": 2, \"param_space\": {\"x\": {\"uniform\": [1, 2]}},"
             " \"scheduler\": {\"type\": \"hyperband\", \"max_t\": 9, \"reduction_factor\": 3},"
             " \"storage\": \"%s\"}",
             dir);
    struct log *lg = log_new();
    lg->iters = 9;
    lg->stop_study_at = 20;
    tune_study *s = study_from(json, lg);
    tune_error err;
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_EINTERRUPTED);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    int64_t paused_before = c[TUNE_TRIAL_PAUSED];
    tune_study_free(s);
    log_free(lg);
    ck_assert_int_gt(paused_before, 0);

    lg = log_new();
    lg->iters = 9;
    s = resume_run(dir, lg);
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_PAUSED], 0);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED] + c[TUNE_TRIAL_STOPPED], 17);
    for (int64_t id = 0; id < 17; id++) {
        struct stored r;
        read_reports(dir, id, &r);
        int64_t expect = 1;
        for (int i = 0; i < r.n; i++) {
            if (i > 0 && r.attempt[i] != r.attempt[i - 1])
                expect = r.iteration[i]; /* a new attempt may start from a checkpoint */
            ck_assert_int_eq(r.iteration[i], expect);
            expect++;
        }
    }
    tune_study_free(s);
    log_free(lg);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/* x of every trial that reported in lg into xs (NAN: none). */
static void trial_xs(const struct log *lg, double *xs, int n)
{
    for (int i = 0; i < lg->n; i++)
        if (lg->ev[i].trial < n)
            xs[lg->ev[i].trial] = lg->ev[i].x;
}

/*
 * A resumed sweep gives its searcher the stored history as it saw it live:
 * run one trial at a time, a sweep interrupted while trials are paused and
 * then resumed suggests the same configurations as the same sweep run
 * without a break. BOHB models the largest budget with enough results, so it
 * must get every stored report, not only final scores.
 */
#define RESUME_FMT                                                                                 \
    "{\"metric\": \"score\", \"num_samples\": 40, \"seed\": 6,"                                    \
    " \"max_concurrent_trials\": 1, \"param_space\": {\"x\": {\"uniform\": [1, 2]},"               \
    " \"y\": {\"uniform\": [0, 1]}}, \"search\": {\"algorithm\": \"%s\"},"                         \
    " \"scheduler\": {\"type\": \"hyperband\", \"max_t\": 9,"                                      \
    " \"reduction_factor\": 3}, \"storage\": \"%s\"}"

START_TEST(resume_searcher_same_as_unbroken)
{
    static const char *const algos[] = {"bohb", "tpe", "gp"};
    const char *algo = algos[_i];
    enum { N = 40 };
    double whole[N], parts[N];
    for (int i = 0; i < N; i++)
        whole[i] = parts[i] = (double)NAN;
    char json[1024];
    char *dir = tune_test_mkdtemp();
    snprintf(json, sizeof json, RESUME_FMT, algo, dir);
    struct log *lg = log_new();
    lg->iters = 9;
    tune_study *s = study_from(json, lg);
    run_ok(s);
    trial_xs(lg, whole, N);
    tune_study_free(s);
    log_free(lg);
    tune_test_rmtree(dir);
    free(dir);

    dir = tune_test_mkdtemp();
    snprintf(json, sizeof json, RESUME_FMT, algo, dir);
    lg = log_new();
    lg->iters = 9;
    lg->stop_study_at = 60; /* past the first models, inside HyperBand's second bracket */
    s = study_from(json, lg);
    tune_error err;
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_EINTERRUPTED);
    trial_xs(lg, parts, N);
    tune_study_free(s);
    log_free(lg);
    lg = log_new();
    lg->iters = 9;
    s = resume_run(dir, lg);
    trial_xs(lg, parts, N);
    for (int i = 0; i < N; i++)
        ck_assert_msg(whole[i] == parts[i],
                      "%s, trial %d: x = %.17g without a break, %.17g resumed", algo, i, whole[i],
                      parts[i]);
    tune_study_free(s);
    log_free(lg);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/*
 * PBT: trials in the bottom quarter restart from a top trial's checkpoint;
 * their own iteration count goes on while their state jumps to the donor's.
 */
START_TEST(pbt_exploits_from_checkpoints)
{
    char *dir = tune_test_mkdtemp();
    char json[2048];
    snprintf(json, sizeof json,
             "{\"metric\": \"score\", \"num_samples\": 8, \"seed\": 11,"
             " \"max_concurrent_trials\": 8, \"param_space\": {\"x\": {\"uniform\": [1, 2]}},"
             " \"scheduler\": {\"type\": \"pbt\", \"perturbation_interval\": 2,"
             " \"hyperparam_mutations\": {\"x\": {\"uniform\": [1, 2]}}},"
             " \"storage\": \"%s\"}",
             dir);
    struct log *lg = log_new();
    lg->iters = 12;
    tune_study *s = study_from(json, lg);
    run_ok(s);
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    ck_assert_int_eq(c[TUNE_TRIAL_TERMINATED], 8);
    /* An exploited attempt starts from a loaded checkpoint whose step is the donor's. */
    int exploited = 0;
    for (int i = 0; i < lg->n; i++)
        exploited += lg->ev[i].loaded;
    ck_assert_int_gt(exploited, 0);
    for (int64_t id = 0; id < 8; id++) {
        struct stored r;
        read_reports(dir, id, &r);
        ck_assert_int_eq(r.n, 12);
        for (int i = 0; i < r.n; i++)
            ck_assert_int_eq(r.iteration[i], i + 1);
    }
    tune_study_free(s);
    log_free(lg);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/* ---- progress.csv: every attempt with Ray's time columns --------------------- */

#define CSV_ROWS 256
#define CSV_COLS 32

/* progress.csv of a study, parsed: cells as text by row and by header name. */
struct csv {
    char *text;
    int n_cols, n_rows;
    char *head[CSV_COLS];
    char *cell[CSV_ROWS][CSV_COLS];
};

/* Splits the file in place; its cells hold no quotes (numbers, names, dates). */
static void csv_read(tune_study *s, const char *path, struct csv *c)
{
    memset(c, 0, sizeof *c);
    tune_error err;
    ck_assert_int_eq(tune_study_export_csv(s, TUNE_CSV_PROGRESS, path, &err), TUNE_OK);
    c->text = tune_test_slurp(path);
    ck_assert_ptr_nonnull(c->text);
    int row = -1;
    for (char *line = strtok(c->text, "\r\n"); line; line = strtok(NULL, "\r\n")) {
        ck_assert_msg(strchr(line, '"') == NULL, "quoted cell in %s", line);
        char **cells = row < 0 ? c->head : c->cell[row];
        int k = 0;
        for (char *p = line;; p++) {
            ck_assert_int_lt(k, CSV_COLS);
            cells[k++] = p;
            p += strcspn(p, ",");
            if (!*p)
                break;
            *p = '\0';
        }
        if (row < 0)
            c->n_cols = k;
        else
            ck_assert_int_eq(k, c->n_cols);
        ck_assert_int_lt(++row, CSV_ROWS);
    }
    c->n_rows = row;
}

static int csv_col(const struct csv *c, const char *name)
{
    for (int k = 0; k < c->n_cols; k++)
        if (strcmp(c->head[k], name) == 0)
            return k;
    ck_abort_msg("no column %s", name);
    return -1;
}

static double csv_num(const struct csv *c, int row, const char *name)
{
    const char *v = c->cell[row][csv_col(c, name)];
    return *v ? strtod(v, NULL) : (double)NAN;
}

static const char *csv_str(const struct csv *c, int row, const char *name)
{
    return c->cell[row][csv_col(c, name)];
}

/*
 * A trial stopped with the study and resumed from its checkpoint keeps both
 * attempts in progress.csv, and its time_total_s goes on from the
 * checkpoint's as Ray's does (attempt 1 ran 1..7 and saved at 6; attempt 2
 * reports 7..10 from there), while the since-restore columns start again.
 */
START_TEST(resume_history_in_progress_csv)
{
    char *dir = tune_test_mkdtemp();
    char json[1024];
    snprintf(json, sizeof json,
             "{\"metric\": \"score\", \"num_samples\": 2, \"seed\": 9,"
             " \"max_concurrent_trials\": 1, \"checkpoint_frequency\": 1,"
             " \"param_space\": {\"x\": {\"uniform\": [1, 2]}}, \"storage\": \"%s\"}",
             dir);
    struct log *lg = log_new();
    lg->stop_study_at = 6;
    lg->step_us = 20000;
    tune_study *s = study_from(json, lg);
    tune_error err;
    ck_assert_int_eq(tune_study_run(s, &err), TUNE_EINTERRUPTED);
    tune_study_free(s);
    log_free(lg);
    lg = log_new();
    lg->step_us = 20000;
    s = resume_run(dir, lg);

    char path[4200];
    snprintf(path, sizeof path, "%s/p.csv", dir);
    struct csv *c = malloc(sizeof *c);
    ck_assert_ptr_nonnull(c);
    csv_read(s, path, c);
    int rows0[16], n0 = 0;
    for (int i = 0; i < c->n_rows; i++)
        if (strcmp(csv_str(c, i, "trial_id"), "0") == 0 && n0 < 16)
            rows0[n0++] = i;
    ck_assert_int_eq(n0, 11);
    double t6 = 0, prev = 0;
    for (int k = 0; k < n0; k++) {
        int i = rows0[k];
        int attempt = (int)csv_num(c, i, "attempt");
        double it = csv_num(c, i, "training_iteration"), tt = csv_num(c, i, "time_total_s");
        double since = csv_num(c, i, "time_since_restore");
        double iters = csv_num(c, i, "iterations_since_restore");
        double this_iter = csv_num(c, i, "time_this_iter_s");
        ck_assert_int_eq(attempt, k < 7 ? 1 : 2);
        ck_assert_int_eq((int)it, k < 7 ? k + 1 : k);
        ck_assert_str_eq(csv_str(c, i, "status"), "TERMINATED");
        ck_assert_str_eq(csv_str(c, i, "done"), k == n0 - 1 ? "True" : "False");
        ck_assert_msg(this_iter >= 0.015 && this_iter <= since + 1e-9, "row %d: %g", k, this_iter);
        if (attempt == 1) {
            /* No restore: since-restore is the whole run. */
            ck_assert_int_eq((int)iters, (int)it);
            ck_assert_double_eq_tol(since, tt, 1e-9);
            if (it == 6)
                t6 = tt;
        } else {
            /* From the checkpoint of iteration 6: its time plus the time since the load. */
            ck_assert_int_eq((int)iters, k - 6);
            ck_assert_double_eq_tol(tt, t6 + since, 1e-6);
            ck_assert_msg(tt > prev - 0.1 && tt >= t6 + 0.015 * (k - 6), "row %d: %g", k, tt);
            ck_assert_msg(since < tt - 0.1, "row %d: %g of %g", k, since, tt);
        }
        prev = tt;
    }
    /* the store's copy of the trial: time_total_s of the last report */
    tune_result *best = NULL;
    ck_assert_int_eq(tune_study_best_by(s, "score", "max", TUNE_SCOPE_LAST, &best, &err), TUNE_OK);
    if (tune_result_trial_id(best) == 0) {
        ck_assert_int_eq(tune_result_attempt(best), 2);
        ck_assert_double_eq_tol(tune_result_time_total_s(best), prev, 1e-12);
    }
    tune_result_free(best);
    free(c->text);
    free(c);
    tune_study_free(s);
    log_free(lg);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/*
 * PBT: an exploited trial's whole path stays (one attempt, iterations 1..12,
 * time_total_s never going back: its own time, which the restart from a
 * donor's checkpoint does not reset), and its since-restore columns start
 * again where it took the donor's checkpoint.
 */
START_TEST(pbt_history_in_progress_csv)
{
    char *dir = tune_test_mkdtemp();
    char json[2048];
    snprintf(json, sizeof json,
             "{\"metric\": \"score\", \"num_samples\": 4, \"seed\": 11,"
             " \"max_concurrent_trials\": 4, \"param_space\": {\"x\": {\"uniform\": [1, 2]}},"
             " \"scheduler\": {\"type\": \"pbt\", \"perturbation_interval\": 2,"
             " \"hyperparam_mutations\": {\"x\": {\"uniform\": [1, 2]}}},"
             " \"storage\": \"%s\"}",
             dir);
    struct log *lg = log_new();
    lg->iters = 12;
    lg->step_us = 2000;
    tune_study *s = study_from(json, lg);
    run_ok(s);
    char path[4200];
    snprintf(path, sizeof path, "%s/p.csv", dir);
    struct csv *c = malloc(sizeof *c);
    ck_assert_ptr_nonnull(c);
    csv_read(s, path, c);
    ck_assert_int_eq(c->n_rows, 4 * 12);
    int restarts = 0;
    for (int id = 0; id < 4; id++) {
        double prev_tt = -1;
        int64_t k = 0;
        for (int i = 0; i < c->n_rows; i++) {
            if ((int)csv_num(c, i, "trial_id") != id)
                continue;
            k++;
            double tt = csv_num(c, i, "time_total_s");
            double iters = csv_num(c, i, "iterations_since_restore");
            ck_assert_int_eq((int)csv_num(c, i, "attempt"), 1);
            ck_assert_int_eq((int)csv_num(c, i, "training_iteration"), (int)k);
            ck_assert_msg(tt >= prev_tt, "trial %d iteration %d: %g after %g", id, (int)k, tt,
                          prev_tt);
            ck_assert_msg(csv_num(c, i, "time_since_restore") <= tt + 1e-9, "trial %d", id);
            ck_assert_msg(iters >= 1 && iters <= (double)k, "trial %d: %g", id, iters);
            if (iters < (double)k && iters == 1)
                restarts++;
            prev_tt = tt;
        }
        ck_assert_int_eq((int)k, 12);
    }
    /* The count restarts at 1 exactly where a run of the objective loaded a donor's
     * checkpoint: at that run's first report. */
    int loads = 0;
    for (int i = 0; i < lg->n; i++) {
        const struct event *e = &lg->ev[i];
        if (!e->loaded || !e->first)
            continue;
        loads++;
        int found = 0;
        for (int r = 0; r < c->n_rows && !found; r++)
            found = (int)csv_num(c, r, "trial_id") == (int)e->trial &&
                    (int64_t)csv_num(c, r, "training_iteration") == e->iteration &&
                    csv_num(c, r, "iterations_since_restore") == 1;
        ck_assert_msg(found, "trial %d iteration %d", (int)e->trial, (int)e->iteration);
    }
    ck_assert_int_gt(loads, 0);
    ck_assert_int_eq(restarts, loads);
    free(c->text);
    free(c);
    tune_study_free(s);
    log_free(lg);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

static Suite *pause_suite(void)
{
    Suite *s = suite_create("pause");
    TCase *tc = tcase_create("checkpoints");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, retry_continues_in_memory);
    tcase_add_test(tc, retry_continues_on_disk);
    tcase_add_test(tc, wanted_every_n);
    tcase_add_test(tc, resume_continues_from_checkpoint);
    tcase_add_test(tc, resume_history_in_progress_csv);
    tcase_add_test(tc, corrupt_checkpoint_is_an_error);
    suite_add_tcase(s, tc);
    TCase *tp = tcase_create("pausing");
    tcase_set_timeout(tp, 60);
    tcase_add_test(tp, hyperband_with_checkpoints);
    tcase_add_test(tp, hyperband_fast_forward);
    tcase_add_test(tp, promotion_asha_fast_forward);
    tcase_add_test(tp, pbt_exploits_from_checkpoints);
    tcase_add_test(tp, pbt_history_in_progress_csv);
    tcase_add_test(tp, hyperband_resume_keeps_paused);
    tcase_add_loop_test(tp, resume_searcher_same_as_unbroken, 0, 3);
    suite_add_tcase(s, tp);
    return s;
}

TUNE_CHECK_MAIN(pause_suite)
