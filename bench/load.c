/*
 * load.c - the load benchmark: a long sweep of the synthetic trainer with the
 * SQLite store, many trials at once, then a check that the store holds every
 * row exactly once and a record of how resident memory moved meanwhile (Ray
 * Tune and Optuna users report memory growing with the trial count).
 *
 *   load [--trials N] [--iterations R] [--concurrency C] [--dir DIR] [--keep]
 *        [--baseline-trials B] [--rss-log FILE]
 *
 * Defaults: 100,000 trials of 10 reports, 64 at once, in a fresh folder under
 * /tmp that is removed afterwards unless --keep. The study comes from a JSON
 * config (tune_study_new_from_json) with the synthetic trainer, so the run
 * goes through the same path as `tune run`.
 *
 * A sampler thread reads VmRSS from /proc/self/status every 0.5 s (and the
 * trial counts every 10 ms, to catch the moment B trials have ended: the
 * baseline, so that start-up allocations such as SQLite's page cache and
 * thread stacks do not count as growth). growth_mb = peak - baseline, where
 * peak is the larger of the sampled maximum and VmHWM at the end. The same
 * polling times the sweep (until the last trial ended, sweep_s) apart from
 * the CSV export that tune_study_run does afterwards (export_s); wall_s and
 * reports_per_s cover the whole tune_study_run call.
 *
 * Every allocation of libtune goes through a counting allocator
 * (tune_set_alloc_funcs, glibc's malloc_usable_size plus 8 bytes of chunk
 * header), so the JSON also says how much of the growth is libtune's own heap
 * and how many bytes each further trial keeps (lib_bytes_per_trial); the rest
 * is SQLite's page cache, thread stacks and allocator slack.
 *
 * After the run it opens experiment.db read-only and checks: N trial rows,
 * N*R report rows, no (trial_id, attempt, training_iteration) twice, each
 * trial's iterations 1..R exactly once, every trial TERMINATED, no orphan
 * report, PRAGMA integrity_check ok; results.csv has N+1 lines and
 * progress.csv N*R+1. Prints one JSON line; exits 1 when a check fails.
 */
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tune.h"

/* Live bytes and blocks allocated by libtune. */
static atomic_llong lib_bytes, lib_blocks;

static void *count_malloc(size_t n)
{
    void *p = malloc(n);
    if (p) {
        atomic_fetch_add(&lib_bytes, (long long)malloc_usable_size(p) + 8);
        atomic_fetch_add(&lib_blocks, 1);
    }
    return p;
}

static void count_free(void *p)
{
    if (p) {
        atomic_fetch_sub(&lib_bytes, (long long)malloc_usable_size(p) + 8);
        atomic_fetch_sub(&lib_blocks, 1);
    }
    free(p);
}

static double lib_mb(void)
{
    return (double)atomic_load(&lib_bytes) / (1024.0 * 1024.0);
}

struct sampler {
    tune_study *study;
    int64_t baseline_trials;
    int64_t trials;
    FILE *log;
    double t0;
    atomic_int quit;
    /* written by the sampler thread, read after join */
    double rss_peak_mb;
    double rss_base_mb; /* NaN until baseline_trials have ended */
    double t_base;
    double t_all_ended;   /* when the last trial ended; the rest of the run is the CSV export */
    double lib_base_mb;   /* libtune's heap at the baseline */
    int64_t started_base; /* trials started (ended + running) at the baseline */
    long n_samples;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A "Key:   123 kB" line of /proc/self/status, in MB (1 MB = 2^20 bytes); NaN if missing. */
static double proc_status_mb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return (double)NAN;
    char line[256];
    size_t klen = strlen(key);
    double mb = (double)NAN;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            mb = strtod(line + klen + 1, NULL) / 1024.0;
            break;
        }
    }
    fclose(f);
    return mb;
}

static int64_t ended_trials(tune_study *s, int64_t *ret_running)
{
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(s, c);
    if (ret_running)
        *ret_running = c[TUNE_TRIAL_RUNNING];
    return c[TUNE_TRIAL_TERMINATED] + c[TUNE_TRIAL_STOPPED] + c[TUNE_TRIAL_ERROR];
}

static void *sampler_main(void *arg)
{
    struct sampler *sp = arg;
    const struct timespec tick = {0, 10 * 1000 * 1000};
    for (long n = 0; !atomic_load(&sp->quit); n++) {
        int64_t running = 0;
        int64_t done = ended_trials(sp->study, &running);
        if (isnan(sp->t_all_ended) && done >= sp->trials)
            sp->t_all_ended = now() - sp->t0;
        if (isnan(sp->rss_base_mb)) {
            if (done >= sp->baseline_trials) {
                sp->rss_base_mb = proc_status_mb("VmRSS");
                sp->lib_base_mb = lib_mb();
                sp->started_base = done + running;
                sp->t_base = now() - sp->t0;
            }
        }
        if (n % 50 == 0) {
            double rss = proc_status_mb("VmRSS");
            if (rss > sp->rss_peak_mb)
                sp->rss_peak_mb = rss;
            sp->n_samples++;
            if (sp->log)
                fprintf(sp->log, "%.2f\t%.1f\t%.1f\t%lld\n", now() - sp->t0, rss, lib_mb(),
                        (long long)done);
        }
        nanosleep(&tick, NULL);
    }
    return NULL;
}

/* One integer from a query; -1 on error (printed). */
static long long query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *stmt = NULL;
    long long v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK) {
        fprintf(stderr, "load: %s: %s\n", sql, sqlite3_errmsg(db));
        return -1;
    }
    if (sqlite3_step(stmt) == SQLITE_ROW)
        v = sqlite3_column_int64(stmt, 0);
    else
        fprintf(stderr, "load: %s: %s\n", sql, sqlite3_errmsg(db));
    sqlite3_finalize(stmt);
    return v;
}

/* Number of '\n' in a file; -1 if it cannot be read. */
static long long count_lines(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    static char buf[1 << 16];
    long long n = 0;
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < got; i++)
            n += buf[i] == '\n';
    fclose(f);
    return n;
}

/* dir/name into out; -1 if it does not fit. */
static int join(char *out, size_t size, const char *dir, const char *name)
{
    int n = snprintf(out, size, "%s/%s", dir, name);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

struct checks {
    long long trial_rows, report_rows, duplicate_keys, bad_iteration_trials, trials_without_reports,
        orphan_reports, not_terminated, retried_reports, id_min, id_max;
    char integrity[64];
    long long results_lines, progress_lines;
};

static int check_store(const char *dir, struct checks *c)
{
    char path[4096];
    if (join(path, sizeof path, dir, "experiment.db"))
        return -1;
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, "load: %s: %s\n", path, db ? sqlite3_errmsg(db) : "cannot open");
        sqlite3_close(db);
        return -1;
    }
    c->trial_rows = query_int(db, "SELECT count(*) FROM trials");
    c->report_rows = query_int(db, "SELECT count(*) FROM reports");
    c->duplicate_keys = query_int(db, "SELECT count(*) FROM (SELECT 1 FROM reports"
                                      " GROUP BY trial_id, attempt, training_iteration"
                                      " HAVING count(*) > 1)");
    /* iterations 1..R, each once, in the attempt that ended the trial */
    c->bad_iteration_trials =
        query_int(db, "SELECT count(*) FROM (SELECT r.trial_id FROM reports r JOIN trials t"
                      " ON t.trial_id = r.trial_id AND t.attempt = r.attempt GROUP BY r.trial_id"
                      " HAVING count(*) != max(t.training_iteration)"
                      " OR count(DISTINCT r.training_iteration) != count(*)"
                      " OR min(r.training_iteration) != 1"
                      " OR max(r.training_iteration) != max(t.training_iteration))");
    c->trials_without_reports =
        query_int(db, "SELECT count(*) FROM trials t WHERE NOT EXISTS"
                      " (SELECT 1 FROM reports r WHERE r.trial_id = t.trial_id)");
    c->orphan_reports = query_int(db, "SELECT count(*) FROM reports r WHERE NOT EXISTS"
                                      " (SELECT 1 FROM trials t WHERE t.trial_id = r.trial_id)");
    c->not_terminated = query_int(db, "SELECT count(*) FROM trials WHERE status != 'TERMINATED'");
    c->retried_reports = query_int(db, "SELECT count(*) FROM reports WHERE attempt != 1");
    c->id_min = query_int(db, "SELECT min(trial_id) FROM trials");
    c->id_max = query_int(db, "SELECT max(trial_id) FROM trials");
    snprintf(c->integrity, sizeof c->integrity, "%s", "error");
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, NULL) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
        const unsigned char *txt = sqlite3_column_text(stmt, 0);
        snprintf(c->integrity, sizeof c->integrity, "%s", txt ? (const char *)txt : "null");
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    c->results_lines = join(path, sizeof path, dir, "results.csv") ? -1 : count_lines(path);
    c->progress_lines = join(path, sizeof path, dir, "progress.csv") ? -1 : count_lines(path);
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: load [--trials N] [--iterations R] [--concurrency C] [--dir DIR]"
                    " [--keep] [--baseline-trials B] [--rss-log FILE]\n");
}

int main(int argc, char **argv)
{
    long long trials = 100000, baseline_trials = 1000;
    int iterations = 10, concurrency = 64, keep = 0;
    const char *dir = NULL, *rss_log = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc)
            trials = atoll(argv[++i]);
        else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
            iterations = atoi(argv[++i]);
        else if (strcmp(argv[i], "--concurrency") == 0 && i + 1 < argc)
            concurrency = atoi(argv[++i]);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--baseline-trials") == 0 && i + 1 < argc)
            baseline_trials = atoll(argv[++i]);
        else if (strcmp(argv[i], "--rss-log") == 0 && i + 1 < argc)
            rss_log = argv[++i];
        else if (strcmp(argv[i], "--keep") == 0)
            keep = 1;
        else {
            usage();
            return 2;
        }
    }
    if (trials < 1 || iterations < 1 || concurrency < 1) {
        usage();
        return 2;
    }
    if (baseline_trials > trials)
        baseline_trials = trials;

    char tmpl[] = "/tmp/tune-load-XXXXXX";
    char storage[4096];
    if (!dir) {
        if (!mkdtemp(tmpl)) {
            fprintf(stderr, "load: mkdtemp: %s\n", strerror(errno));
            return 1;
        }
        join(storage, sizeof storage, tmpl, "exp");
    } else {
        snprintf(storage, sizeof storage, "%s", dir);
    }

    char json[1024];
    snprintf(json, sizeof json,
             "{\"name\": \"load\", \"metric\": \"val_accuracy\", \"mode\": \"max\","
             " \"num_samples\": %lld, \"seed\": 7, \"max_concurrent_trials\": %d,"
             " \"param_space\": {\"lr\": {\"loguniform\": [1e-6, 1e-1]},"
             " \"weight_decay\": {\"uniform\": [0, 0.3]},"
             " \"batch_size\": {\"choice\": [16, 32, 64]},"
             " \"warmup_steps\": {\"randint\": [0, 11]}},"
             " \"trainer\": {\"type\": \"synthetic\", \"iterations\": %d, \"noise\": 0.005}}",
             trials, concurrency, iterations);

    tune_set_alloc_funcs(count_malloc, count_free);
    double rss_start = proc_status_mb("VmRSS");
    tune_study *s = NULL;
    tune_error err;
    memset(&err, 0, sizeof err);
    if (tune_study_new_from_json(json, "load", &s, &err)) {
        fprintf(stderr, "load: %s\n", err.text);
        return 1;
    }
    if (tune_study_set_storage(s, storage, &err)) {
        fprintf(stderr, "load: %s\n", err.text);
        tune_study_free(s);
        return 1;
    }

    struct sampler sp = {.study = s,
                         .baseline_trials = baseline_trials,
                         .rss_peak_mb = rss_start,
                         .rss_base_mb = (double)NAN,
                         .t_base = (double)NAN,
                         .trials = trials,
                         .t_all_ended = (double)NAN};
    if (rss_log && !(sp.log = fopen(rss_log, "w")))
        fprintf(stderr, "load: %s: %s (no RSS log)\n", rss_log, strerror(errno));
    if (sp.log)
        fprintf(sp.log, "t_s\trss_mb\tlib_heap_mb\tended_trials\n");
    atomic_init(&sp.quit, 0);
    pthread_t th;
    sp.t0 = now();
    if (pthread_create(&th, NULL, sampler_main, &sp) != 0) {
        fprintf(stderr, "load: cannot start the sampler thread\n");
        tune_study_free(s);
        return 1;
    }
    double t0 = now();
    tune_status st = tune_study_run(s, &err);
    double wall = now() - t0;
    double rss_end = proc_status_mb("VmRSS");
    double lib_end = lib_mb();
    atomic_store(&sp.quit, 1);
    pthread_join(th, NULL);
    if (sp.log)
        fclose(sp.log);
    double hwm = proc_status_mb("VmHWM");
    double peak = hwm > sp.rss_peak_mb ? hwm : sp.rss_peak_mb;
    if (rss_end > peak)
        peak = rss_end;
    if (st) {
        fprintf(stderr, "load: run: %s\n", err.text);
        tune_study_free(s);
        return 1;
    }
    tune_study_free(s);
    double rss_freed = proc_status_mb("VmRSS");
    double lib_freed = lib_mb();
    double base = isnan(sp.rss_base_mb) ? rss_end : sp.rss_base_mb;
    double lib_per_trial =
        (double)trials > (double)sp.started_base && !isnan(sp.rss_base_mb)
            ? (lib_end - sp.lib_base_mb) * 1024.0 * 1024.0 / (double)(trials - sp.started_base)
            : (double)NAN;

    struct checks c;
    memset(&c, 0, sizeof c);
    int ok = check_store(storage, &c) == 0;
    long long want_reports = trials * iterations;
    ok = ok && c.trial_rows == trials && c.report_rows == want_reports && c.duplicate_keys == 0 &&
         c.bad_iteration_trials == 0 && c.trials_without_reports == 0 && c.orphan_reports == 0 &&
         c.not_terminated == 0 && c.id_min == 0 && c.id_max == trials - 1 &&
         strcmp(c.integrity, "ok") == 0 && c.results_lines == trials + 1 &&
         c.progress_lines == want_reports + 1;

    double sweep = sp.t_all_ended - (t0 - sp.t0);
    printf("{\"bench\": \"tune\", \"part\": \"load\", \"trials\": %lld, \"iterations\": %d,"
           " \"concurrency\": %d, \"reports\": %lld, \"wall_s\": %.3f, \"reports_per_s\": %.1f,"
           " \"trials_per_s\": %.1f, \"sweep_s\": %.2f, \"sweep_reports_per_s\": %.1f,"
           " \"export_s\": %.2f,",
           trials, iterations, concurrency, want_reports, wall, (double)want_reports / wall,
           (double)trials / wall, sweep, (double)want_reports / sweep, wall - sweep);
    printf(" \"rss_start_mb\": %.1f, \"rss_base_mb\": %.1f, \"baseline_trials\": %lld,"
           " \"baseline_t_s\": %.2f, \"rss_peak_mb\": %.1f, \"rss_end_mb\": %.1f,"
           " \"rss_after_free_mb\": %.1f, \"growth_mb\": %.1f, \"rss_samples\": %ld,"
           " \"lib_heap_base_mb\": %.1f, \"lib_heap_end_mb\": %.1f,"
           " \"lib_heap_after_free_mb\": %.3f, \"lib_bytes_per_trial\": %.0f,",
           rss_start, base, baseline_trials, sp.t_base, peak, rss_end, rss_freed, peak - base,
           sp.n_samples, sp.lib_base_mb, lib_end, lib_freed, lib_per_trial);
    printf(" \"checks\": {\"trial_rows\": %lld, \"report_rows\": %lld,"
           " \"duplicate_keys\": %lld, \"bad_iteration_trials\": %lld,"
           " \"trials_without_reports\": %lld, \"orphan_reports\": %lld,"
           " \"not_terminated\": %lld, \"retried_reports\": %lld, \"trial_id_min\": %lld,"
           " \"trial_id_max\": %lld, \"integrity_check\": \"%s\", \"results_csv_lines\": %lld,"
           " \"progress_csv_lines\": %lld}, \"ok\": %s}\n",
           c.trial_rows, c.report_rows, c.duplicate_keys, c.bad_iteration_trials,
           c.trials_without_reports, c.orphan_reports, c.not_terminated, c.retried_reports,
           c.id_min, c.id_max, c.integrity, c.results_lines, c.progress_lines,
           ok ? "true" : "false");

    if (!dir && !keep) {
        const char *files[] = {"experiment.db", "experiment.db-wal", "experiment.db-shm",
                               "results.csv", "progress.csv"};
        char path[4200];
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
            if (join(path, sizeof path, storage, files[i]) == 0)
                unlink(path);
        rmdir(storage);
        rmdir(tmpl);
    } else if (!dir) {
        fprintf(stderr, "load: kept %s\n", storage);
    }
    return ok ? 0 : 1;
}
