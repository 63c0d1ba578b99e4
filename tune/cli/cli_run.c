/*
 * cli_run.c - `tune run` and `tune validate`.
 *
 * The sweep runs on a second thread while the main thread shows progress:
 * in a terminal a table redrawn in place twice a second (as Ray's reporter),
 * as wide and tall as the terminal is now (TIOCGWINSZ, else $COLUMNS and
 * $LINES) with the columns --columns picks; otherwise one line every 10
 * seconds with the counts and the best trial so far. SIGINT and SIGTERM
 * ask the study to stop (tune_study_request_stop is async-signal-safe);
 * running trials are put back to PENDING, the store stays consistent and
 * the CSVs are written. A second signal does not wait for objectives that
 * never return: the main thread puts the running trials back to PENDING
 * (tune_study_stop_now) and ends the process. A third, for when even that
 * cannot get through, ends it from the handler.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static tune_study *volatile running_study;
static volatile sig_atomic_t signals_seen;
/* --columns of tune run and resume: the table's columns (NULL: the defaults). */
static const char *table_columns;

static void on_signal(int sig)
{
    (void)sig;
    if (++signals_seen >= 3)
        _exit(CLI_FAILED);
    if (running_study)
        tune_study_request_stop(running_study);
}

/* After a second signal: the store made consistent without the objectives, then exit. */
static void stop_now(tune_study *study)
{
    tune_error err;
    fflush(stdout);
    if (tune_study_stop_now(study, &err)) {
        fprintf(stderr, "tune: stopped at once, but the store failed: %s\n", err.text);
    } else {
        const char *dir = tune_study_storage(study);
        if (dir && strcmp(dir, ":memory:") != 0)
            fprintf(stderr,
                    "tune: stopped at once; running trials are back to PENDING; "
                    "`tune resume %s` continues\n",
                    dir);
        else
            fprintf(stderr, "tune: stopped at once\n");
    }
    _exit(CLI_FAILED);
}

static void log_to_stderr(tune_log_level level, const char *msg, void *ud)
{
    (void)ud;
    static const char *const names[] = {"error", "warning", "info", "debug"};
    fprintf(stderr, "tune: %s: %s\n", names[level < TUNE_LOG_LEVEL_COUNT ? level : 0], msg);
}

struct run_job {
    tune_study *study;
    tune_error err;
    tune_status st;
    atomic_int done;
};

static void *run_thread(void *arg)
{
    struct run_job *job = arg;
    job->st = tune_study_run(job->study, &job->err);
    atomic_store_explicit(&job->done, 1, memory_order_release);
    return NULL;
}

static void nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* A size from the environment ($COLUMNS, $LINES), or fallback. */
static int env_size(const char *name, int fallback)
{
    const char *v = getenv(name);
    char *end;
    long n = v ? strtol(v, &end, 10) : 0;
    return v && *v && !*end && n > 0 && n < 100000 ? (int)n : fallback;
}

/* The terminal's columns and lines now (it may have been resized). */
static void terminal_size(int *ret_cols, int *ret_lines)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
        *ret_cols = ws.ws_col;
        *ret_lines = ws.ws_row > 0 ? ws.ws_row : 24;
        return;
    }
    *ret_cols = env_size("COLUMNS", 80);
    *ret_lines = env_size("LINES", 24);
}

static void show_progress(tune_study *study, int tty, int final)
{
    if (tty) {
        char *text = NULL;
        int cols, lines;
        terminal_size(&cols, &lines);
        /* Rows for trials: what the lines above and below the table leave
         * (about 14: counts, best, scheduler, rules, errors), 3 to 20. */
        int rows = lines - 14;
        tune_progress_options o = {.width = cols,
                                   .max_rows = rows < 3    ? 3
                                               : rows > 20 ? 20
                                                           : rows,
                                   .columns = table_columns};
        if (tune_study_progress_table(study, &o, &text, NULL) == TUNE_OK) {
            /* Home the cursor and clear the screen below it, then draw. */
            fputs("\033[H\033[J", stdout);
            fputs(text, stdout);
            fflush(stdout);
        }
        tune_free(text);
        return;
    }
    char *line = NULL;
    if (tune_study_progress_line(study, &line, NULL) == TUNE_OK)
        printf("%s%s\n", line, final ? " (done)" : "");
    tune_free(line);
    fflush(stdout);
}

/* Runs a study with live progress and returns the exit code; frees the study. */
static int run_study(tune_study *study, int quiet)
{
    struct run_job job = {0};
    job.study = study;
    running_study = job.study;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    int tty = isatty(STDOUT_FILENO);
    pthread_t th;
    if (pthread_create(&th, NULL, run_thread, &job) != 0) {
        run_thread(&job);
    } else {
        double last_line = 0, t = 0;
        while (!atomic_load_explicit(&job.done, memory_order_acquire)) {
            nap(0.1);
            t += 0.1;
            if (signals_seen >= 2)
                stop_now(job.study);
            if (quiet)
                continue;
            if (tty && t - last_line >= 0.5) {
                show_progress(job.study, 1, 0);
                last_line = t;
            } else if (!tty && t - last_line >= 10.0) {
                show_progress(job.study, 0, 0);
                last_line = t;
            }
        }
        pthread_join(th, NULL);
    }
    running_study = NULL;
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);

    int code = CLI_OK;
    /* Results exist after a finished, interrupted or fail_fast-stopped run, not after one
     * that failed to start. */
    int wrote = job.st == TUNE_OK || job.st == TUNE_EINTERRUPTED || job.st == TUNE_EFAILED;
    if (!quiet && wrote)
        show_progress(job.study, tty, 1);
    if (job.st) {
        cli_print_error(&job.err);
        /* Nothing ran: a config to fix, or a folder in use or already used. */
        code = job.st == TUNE_ECONFIG || job.st == TUNE_EEXIST || job.st == TUNE_EBUSY ? CLI_USAGE
                                                                                       : CLI_FAILED;
    }
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(job.study, c);
    int64_t ended = c[TUNE_TRIAL_TERMINATED] + c[TUNE_TRIAL_STOPPED] + c[TUNE_TRIAL_ERROR];
    if (!job.st && c[TUNE_TRIAL_ERROR] > 0 && c[TUNE_TRIAL_ERROR] == ended) {
        fprintf(stderr,
                "tune: every trial ended in ERROR (%lld of %lld): the sweep has no result "
                "(`tune status DIR` shows why)\n",
                (long long)c[TUNE_TRIAL_ERROR], (long long)ended);
        code = CLI_FAILED;
    } else if (!job.st && c[TUNE_TRIAL_ERROR] > 0) {
        fprintf(stderr, "tune: %lld trial(s) ended in ERROR (`tune status DIR` shows why)\n",
                (long long)c[TUNE_TRIAL_ERROR]);
        code = CLI_FAILED;
    }
    const char *dir = tune_study_storage(job.study);
    /* The report is a view of the store: failing to write it loses nothing, so
     * it only warns and the exit code stays the run's. */
    int report = wrote && strcmp(dir, ":memory:") != 0;
    if (report) {
        tune_error err;
        if (tune_report_html(dir, NULL, &err) != TUNE_OK) {
            char buf[1024];
            fprintf(stderr, "tune: warning: no report: %s\n",
                    tune_error_format(&err, buf, sizeof buf));
            report = 0;
        }
    }
    if (!quiet && wrote) {
        char *best = NULL;
        if (tune_study_best_json(job.study, &best, NULL) == TUNE_OK)
            printf("best: %s\n", best);
        tune_free(best);
        if (strcmp(dir, ":memory:") != 0)
            printf("results: %s/results.csv, %s/progress.csv%s%s%s\n", dir, dir, report ? ", " : "",
                   report ? dir : "", report ? "/report.html" : "");
    }
    if (table_columns && !quiet) {
        tune_error cerr;
        if (tune_study_check_columns(job.study, table_columns, &cerr) == TUNE_ENOTFOUND)
            fprintf(stderr, "tune: warning: --columns: %s\n", cerr.text);
    }
    /* Said last, so it is what an interrupted user reads. */
    if (job.st == TUNE_EINTERRUPTED && strcmp(dir, ":memory:") != 0) {
        fflush(stdout);
        fprintf(stderr, "tune: continue with `tune resume %s`\n", dir);
    }
    tune_study_free(job.study);
    return code;
}

/* Parses --resume, --resume-errored and --force into flags; 1 if argv[i] was one. */
static int resume_flag(const char *arg, unsigned *flags)
{
    if (strcmp(arg, "--resume-errored") == 0)
        *flags |= TUNE_RESUME_ERRORED;
    else if (strcmp(arg, "--force") == 0)
        *flags |= TUNE_RESUME_FORCE;
    else if (strcmp(arg, "--resume") == 0)
        *flags |= TUNE_RESUME_EXISTING;
    else
        return 0;
    return 1;
}

static const char resume_help[] =
    "Resuming keeps finished trials, runs interrupted ones again and draws the rest\n"
    "from the same sequence. Only one tune run or resume may use DIR at a time.\n"
    "  --resume-errored    give ERROR trials another max_failures + 1 attempts, from\n"
    "                      their last checkpoint if they saved one, else from the start\n"
    "  --force             continue even if the config differs from the stored one\n"
    "Under mpirun (or srun), rank 0 runs the sweep and the other ranks run trials:\n"
    "  --trials-per-rank N trials at once on each worker rank (default 1)\n";

/* --trials-per-rank N: 1 when argv[*i] is that option (and consumes it), -1 when bad. */
static int per_rank_flag(int argc, char **argv, int *i, int *ret)
{
    const char *v = NULL;
    if (strcmp(argv[*i], "--trials-per-rank") == 0 && *i + 1 < argc)
        v = argv[++*i];
    else if (strncmp(argv[*i], "--trials-per-rank=", 18) == 0)
        v = argv[*i] + 18;
    else
        return 0;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 1 || n > 4096)
        return -1;
    *ret = (int)n;
    return 1;
}

static int run_or_serve(tune_study *study, int quiet, int per_rank)
{
    if (cli_mpi_launched())
        return cli_mpi_run(study, quiet, per_rank, run_study);
    return run_study(study, quiet);
}

/* --columns LIST: 1 when argv[*i] is that option (it and its value consumed), 0 otherwise. */
static int columns_flag(int argc, char **argv, int *i)
{
    if (strcmp(argv[*i], "--columns") == 0 && *i + 1 < argc)
        table_columns = argv[++*i];
    else if (strncmp(argv[*i], "--columns=", 10) == 0)
        table_columns = argv[*i] + 10;
    else
        return 0;
    return 1;
}

/* The study can show the columns --columns names; else says why, and 0. */
static int columns_ok(const char *cmd, tune_study *study)
{
    tune_error err;
    if (!table_columns || tune_study_check_columns(study, table_columns, &err) != TUNE_EINVAL)
        return 1;
    fprintf(stderr, "tune %s: --columns: %s\n", cmd, err.text);
    return 0;
}

static const char columns_help[] =
    "  --columns LIST      the live table's columns after trial and status, in order:\n"
    "                      parameters (or config/NAME), metrics, training_iteration,\n"
    "                      time_total_s; e.g. lr,batch_size,val_loss. Columns that do\n"
    "                      not fit the terminal are left out from the end\n";

/* --gpus LIST: 1 when argv[*i] is that option (it and its value consumed), -1 when its value is
 * bad (said on stderr), 0 otherwise. */
static int gpus_flag(const char *cmd, int argc, char **argv, int *i)
{
    const char *v = NULL;
    if (strcmp(argv[*i], "--gpus") == 0 && *i + 1 < argc)
        v = argv[++*i];
    else if (strncmp(argv[*i], "--gpus=", 7) == 0)
        v = argv[*i] + 7;
    else
        return 0;
    tune_error err;
    if (tune_set_gpus(v, &err) != TUNE_OK) {
        fprintf(stderr, "tune %s: --gpus: %s\n", cmd, err.text);
        return -1;
    }
    return 1;
}

int cli_run(int argc, char **argv)
{
    const char *config = NULL, *storage = NULL;
    int quiet = 0, per_rank = 1, pr;
    unsigned flags = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            printf("usage: tune run CONFIG [--storage DIR] [--quiet] [--resume] "
                   "[--resume-errored] [--force] [--trials-per-rank N] [--gpus LIST] "
                   "[--columns LIST]\n"
                   "Runs the sweep; results go to DIR (default: the config's storage, or\n"
                   "tune_results/<name>): experiment.db, results.csv, progress.csv.\n"
                   "A DIR that already holds an experiment is refused: continue it with\n"
                   "`tune resume DIR`, or choose another DIR.\n"
                   "  --gpus LIST         the GPUs trials are placed on: a count (2) or device\n"
                   "                      ids (0,1; one as 3,), instead of the config's \"gpus\"\n"
                   "                      and the GPUs found\n%s"
                   "  --resume            continue the experiment in DIR if there is one\n%s",
                   columns_help, resume_help);
            return CLI_OK;
        } else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
            quiet = 1;
        } else if (strcmp(argv[i], "--storage") == 0 && i + 1 < argc) {
            storage = argv[++i];
        } else if (strncmp(argv[i], "--storage=", 10) == 0) {
            storage = argv[i] + 10;
        } else if (resume_flag(argv[i], &flags)) {
            continue;
        } else if (columns_flag(argc, argv, &i)) {
            continue;
        } else if ((pr = gpus_flag("run", argc, argv, &i)) != 0) {
            if (pr < 0)
                return CLI_USAGE;
        } else if ((pr = per_rank_flag(argc, argv, &i, &per_rank)) != 0) {
            if (pr < 0) {
                fprintf(stderr, "tune run: --trials-per-rank needs an integer from 1 to 4096\n");
                return CLI_USAGE;
            }
        } else if (argv[i][0] == '-' || config) {
            fprintf(stderr, "tune run: unexpected argument '%s' (see tune run --help)\n", argv[i]);
            return CLI_USAGE;
        } else {
            config = argv[i];
        }
    }
    if (!config) {
        fprintf(stderr, "tune run: missing CONFIG (see tune run --help)\n");
        return CLI_USAGE;
    }
    tune_set_log_callback(log_to_stderr, quiet ? TUNE_LOG_ERROR : TUNE_LOG_WARN, NULL);

    tune_study *study = NULL;
    tune_error err;
    tune_status st = tune_study_new_from_file(config, &study, &err);
    if (st) {
        cli_print_error(&err);
        return cli_exit_code(st);
    }
    if (storage && tune_study_set_storage(study, storage, &err) != TUNE_OK) {
        fprintf(stderr, "tune run: invalid --storage '%s'\n", storage);
        tune_study_free(study);
        return CLI_USAGE;
    }
    if (tune_study_set_resume_flags(study, flags, &err) != TUNE_OK) {
        cli_print_error(&err);
        tune_study_free(study);
        return cli_exit_code(err.code);
    }
    if (!columns_ok("run", study)) {
        tune_study_free(study);
        return CLI_USAGE;
    }
    return run_or_serve(study, quiet, per_rank);
}

int cli_resume(int argc, char **argv)
{
    const char *dir = NULL;
    int quiet = 0, per_rank = 1, pr;
    unsigned flags = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            printf("usage: tune resume DIR [--quiet] [--resume-errored] [--force] "
                   "[--columns LIST]\n"
                   "Continues the experiment in DIR with the config stored there.\n%s%s",
                   columns_help, resume_help);
            return CLI_OK;
        } else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
            quiet = 1;
        } else if (resume_flag(argv[i], &flags)) {
            continue;
        } else if (columns_flag(argc, argv, &i)) {
            continue;
        } else if ((pr = per_rank_flag(argc, argv, &i, &per_rank)) != 0) {
            if (pr < 0) {
                fprintf(stderr, "tune resume: --trials-per-rank needs an integer from 1 to 4096\n");
                return CLI_USAGE;
            }
        } else if (argv[i][0] == '-' || dir) {
            fprintf(stderr, "tune resume: unexpected argument '%s' (see tune resume --help)\n",
                    argv[i]);
            return CLI_USAGE;
        } else {
            dir = argv[i];
        }
    }
    if (!dir) {
        fprintf(stderr, "tune resume: missing DIR (see tune resume --help)\n");
        return CLI_USAGE;
    }
    tune_set_log_callback(log_to_stderr, quiet ? TUNE_LOG_ERROR : TUNE_LOG_WARN, NULL);
    /* The folder is named absolutely before changing into the one the
     * experiment started in, where its config's relative paths point. */
    char absdir[PATH_MAX];
    if (realpath(dir, absdir))
        dir = absdir;
    char *origin = NULL;
    if (tune_study_origin(dir, &origin, NULL, NULL) == TUNE_OK && origin) {
        char here[PATH_MAX];
        if (!getcwd(here, sizeof here) || strcmp(here, origin) != 0) {
            if (chdir(origin) == 0) {
                if (!quiet)
                    fprintf(stderr,
                            "tune: running trainers from %s, where the experiment "
                            "started\n",
                            origin);
            } else {
                fprintf(stderr,
                        "tune: warning: %s, the folder the experiment started in, cannot be "
                        "entered (%s): relative paths in its config are taken from the current "
                        "folder\n",
                        origin, strerror(errno));
            }
        }
    }
    tune_free(origin);
    tune_study *study = NULL;
    tune_error err;
    tune_status st = tune_study_resume(dir, flags, &study, &err);
    if (st) {
        cli_print_error(&err);
        return cli_exit_code(st);
    }
    if (!columns_ok("resume", study)) {
        tune_study_free(study);
        return CLI_USAGE;
    }
    return run_or_serve(study, quiet, per_rank);
}

int cli_validate(int argc, char **argv)
{
    if (argc >= 2 && cli_is_help(argv[1])) {
        printf("usage: tune validate CONFIG [--gpus LIST]\nChecks the config; writes nothing.\n"
               "  --gpus LIST  the GPUs trials would be placed on (as tune run --gpus)\n");
        return CLI_OK;
    }
    const char *config = NULL;
    for (int i = 1; i < argc; i++) {
        int g = gpus_flag("validate", argc, argv, &i);
        if (g < 0)
            return CLI_USAGE;
        if (g == 0 && (argv[i][0] == '-' || config)) {
            fprintf(stderr, "tune validate: expected exactly one CONFIG\n");
            return CLI_USAGE;
        }
        if (g == 0)
            config = argv[i];
    }
    if (!config) {
        fprintf(stderr, "tune validate: expected exactly one CONFIG\n");
        return CLI_USAGE;
    }
    /* Warnings (a schedule no trial can reach) are part of what validate says. */
    tune_set_log_callback(log_to_stderr, TUNE_LOG_WARN, NULL);
    tune_study *study = NULL;
    tune_error err;
    tune_status st = tune_study_new_from_file(config, &study, &err);
    if (st) {
        cli_print_error(&err);
        return cli_exit_code(st);
    }
    int64_t c[TUNE_TRIAL_STATUS_COUNT];
    tune_study_counts(study, c);
    printf("%s: ok (%lld trials, storage %s)\n", config, (long long)c[TUNE_TRIAL_PENDING],
           tune_study_storage(study));
    tune_study_free(study);
    return CLI_OK;
}
