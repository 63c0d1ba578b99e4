/*
 * cli_ask.c - `tune ask DIR` and `tune tell DIR ID`: Optuna's ask and tell
 * from a shell script or any language, one short process per call, on a
 * study that lives in an experiment folder (tune_study_set_ask_shared()).
 *
 * Each call resumes the experiment from its store, takes the folder's lock
 * (waiting up to --wait seconds for another call to finish), does its one
 * step, commits, writes results.csv and progress.csv, and lets the lock go.
 * An asked trial stays open in the store between calls until a tell ends it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Exit statuses of `tune ask` beyond CLI_OK, CLI_FAILED and CLI_USAGE. */
enum {
    CLI_ASK_EXHAUSTED = 3, /* every trial was asked (num_samples): nothing more to ask */
    CLI_ASK_WAIT = 4,      /* the scheduler holds new trials until an open one is told */
    CLI_STEP_PRUNE = 3,    /* `tune step`: the scheduler says stop (Optuna's should_prune()) */
};

#define DEFAULT_WAIT_S 60.0
#define MAX_METRICS    256

static const char ask_usage[] =
    "usage: tune ask DIR [--config CONFIG] [--wait SECONDS]\n"
    "Asks the study in experiment folder DIR for its next trial and prints it as\n"
    "one JSON line on standard output: {\"trial_id\": 3, \"config\": {...}}. The\n"
    "trial stays open (RUNNING) until `tune tell DIR 3 ...` ends it, from this or\n"
    "any other process. The first ask creates the experiment from CONFIG; later\n"
    "ones continue it (with CONFIG, it must be the same config). The config needs\n"
    "no trainer: the caller trains.\n"
    "  --wait SECONDS  wait up to this long for another ask or tell on DIR to end\n"
    "                  (the folder's lock; default 60); 0: fail at once\n"
    "exit status: 0 a trial was printed; 3 every trial was asked (num_samples);\n"
    "4 the scheduler holds new trials back until an open one is told; 2 usage or\n"
    "config error, a folder another run holds; 1 other failures\n";

static const char tell_usage[] =
    "usage: tune tell DIR ID [--value X] [--metric NAME=VALUE ...]\n"
    "                        [--state complete|pruned|failed] [--reason TEXT] [--wait SECONDS]\n"
    "Ends open trial ID of the study in DIR (Optuna's tell):\n"
    "  --value X            the study's metric (Optuna's tell(trial, value))\n"
    "  --metric NAME=VALUE  more metrics of the same final report (repeatable)\n"
    "  --state S            complete (default: needs --value, --metric or earlier\n"
    "                       steps), pruned (stopped early; values optional), failed\n"
    "                       (retried up to the config's max_failures, then ERROR)\n"
    "  --reason TEXT        why it failed (with --state failed), the trial's error\n"
    "  --wait SECONDS       as for tune ask (default 60)\n"
    "The values are one report (one more training iteration), then the trial ends.\n"
    "exit status: 0 told; 2 usage, an unknown trial or one that is not open; 1 other\n";

static const char step_usage[] =
    "usage: tune step DIR ID [--value X] [--metric NAME=VALUE ...] [--wait SECONDS]\n"
    "Reports intermediate values of open trial ID (Optuna's trial.report() and\n"
    "should_prune()): one more training iteration, which the scheduler judges.\n"
    "Prints 'continue' (exit 0), or 'prune' (exit 3) when the trial must stop now:\n"
    "it has then ended, as a trainer told to stop (STOPPED by the scheduler,\n"
    "TERMINATED at max_t, PAUSED by a pausing scheduler: a later ask hands it\n"
    "out again), and is not told. After the last step, `tune tell DIR ID`\n"
    "without values completes it with its last values.\n"
    "exit status: 0 continue; 3 prune; 2 usage, an unknown trial or one that is\n"
    "not open; 1 other\n";

/* A number that is the whole of text; 0, or -1. */
static int parse_double(const char *text, double *ret)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!*text || *end || errno == ERANGE)
        return -1;
    *ret = v;
    return 0;
}

static int parse_wait(const char *cmd, const char *text, double *ret)
{
    if (parse_double(text, ret) == 0 && *ret >= 0 && isfinite(*ret))
        return 0;
    fprintf(stderr, "tune %s: --wait: expected seconds >= 0, got '%s'\n", cmd, text);
    return -1;
}

/* Opens the study in dir (from config when given) shared among processes. */
static tune_status open_study(const char *cmd, const char *dir, const char *config, double wait_s,
                              tune_study **ret_study, tune_error *err)
{
    tune_study *s = NULL;
    tune_status st;
    if (config) {
        st = tune_study_new_from_file(config, &s, err);
        if (!st)
            st = tune_study_set_storage(s, dir, err);
        if (!st)
            st = tune_study_set_resume_flags(s, TUNE_RESUME_EXISTING, err);
    } else {
        st = tune_study_resume(dir, 0, &s, err);
        if (st == TUNE_ENOTFOUND && strcmp(cmd, "ask") == 0) {
            cli_print_error(err);
            fprintf(stderr,
                    "tune ask: the first ask creates the experiment: "
                    "tune ask %s --config CONFIG\n",
                    dir);
            tune_study_free(s);
            return st;
        }
    }
    if (!st)
        st = tune_study_set_ask_shared(s, wait_s, err);
    if (st) {
        cli_print_error(err);
        tune_study_free(s);
        return st;
    }
    *ret_study = s;
    return TUNE_OK;
}

int cli_ask(int argc, char **argv)
{
    const char *dir = NULL, *config = NULL;
    double wait_s = DEFAULT_WAIT_S;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(ask_usage, stdout);
            return CLI_OK;
        } else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            config = argv[++i];
        } else if (strcmp(argv[i], "--wait") == 0 && i + 1 < argc) {
            if (parse_wait("ask", argv[++i], &wait_s))
                return CLI_USAGE;
        } else if (argv[i][0] == '-' || dir) {
            fprintf(stderr, "tune ask: unexpected argument '%s' (see tune ask --help)\n", argv[i]);
            return CLI_USAGE;
        } else {
            dir = argv[i];
        }
    }
    if (!dir) {
        fprintf(stderr, "tune ask: missing DIR (see tune ask --help)\n");
        return CLI_USAGE;
    }
    tune_error err;
    tune_study *s = NULL;
    tune_status st = open_study("ask", dir, config, wait_s, &s, &err);
    if (st)
        return cli_exit_code(st);
    tune_trial *t = NULL;
    char *json = NULL;
    int64_t id = -1;
    st = tune_study_ask(s, &t, &err);
    if (!st) {
        id = tune_trial_id(t);
        st = tune_trial_config_json(t, &json, &err);
    }
    if (st == TUNE_EEXHAUSTED || st == TUNE_EWAIT) {
        /* Nothing to hand out is an answer, not a failure: the CSVs are still written. */
        tune_error e2;
        int code = st == TUNE_EEXHAUSTED ? CLI_ASK_EXHAUSTED : CLI_ASK_WAIT;
        fprintf(stderr, "tune ask: %s\n", err.text);
        st = tune_study_finish(s, &e2);
        if (st)
            cli_print_error(&e2);
        tune_study_free(s);
        return st ? cli_exit_code(st) : code;
    }
    /* The trial is printed only once the folder is consistent and free again. */
    if (!st)
        st = tune_study_finish(s, &err);
    if (st) {
        cli_print_error(&err);
        tune_free(json);
        tune_study_free(s);
        return cli_exit_code(st);
    }
    printf("{\"trial_id\": %lld, \"config\": %s}\n", (long long)id, json);
    tune_free(json);
    tune_study_free(s);
    return fflush(stdout) == 0 ? CLI_OK : CLI_FAILED;
}

/* What `tune tell` and `tune step` are given. */
struct trial_args {
    const char *cmd, *dir, *reason, *state_text;
    long long id;
    const char *names[MAX_METRICS + 1];
    double values[MAX_METRICS + 1];
    size_t n;
    int has_value;
    double value, wait_s;
};

/* "NAME=VALUE", split at the last '='; 0, or -1 with the message printed. */
static int parse_metric(const char *cmd, char *arg, const char **ret_name, double *ret_value)
{
    char *eq = strrchr(arg, '=');
    if (!eq || eq == arg || parse_double(eq + 1, ret_value)) {
        fprintf(stderr, "tune %s: --metric: expected NAME=VALUE with a number, got '%s'\n", cmd,
                arg);
        return -1;
    }
    *eq = '\0';
    *ret_name = arg;
    return 0;
}

/*
 * DIR ID and the options; --state and --reason only for tell. CLI_OK, a
 * usage error (printed), or -1 after --help.
 */
static int parse_trial_args(int argc, char **argv, const char *usage, int tell,
                            struct trial_args *a)
{
    const char *id_text = NULL;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(usage, stdout);
            return -1;
        } else if (strcmp(argv[i], "--value") == 0 && i + 1 < argc) {
            if (parse_double(argv[++i], &a->value)) {
                fprintf(stderr, "tune %s: --value: expected a number, got '%s'\n", a->cmd, argv[i]);
                return CLI_USAGE;
            }
            a->has_value = 1;
        } else if (strcmp(argv[i], "--metric") == 0 && i + 1 < argc) {
            if (a->n == MAX_METRICS) {
                fprintf(stderr, "tune %s: at most %d --metric\n", a->cmd, MAX_METRICS);
                return CLI_USAGE;
            }
            if (parse_metric(a->cmd, argv[++i], &a->names[a->n], &a->values[a->n]))
                return CLI_USAGE;
            a->n++;
        } else if (tell && strcmp(argv[i], "--state") == 0 && i + 1 < argc) {
            a->state_text = argv[++i];
        } else if (tell && strcmp(argv[i], "--reason") == 0 && i + 1 < argc) {
            a->reason = argv[++i];
        } else if (strcmp(argv[i], "--wait") == 0 && i + 1 < argc) {
            if (parse_wait(a->cmd, argv[++i], &a->wait_s))
                return CLI_USAGE;
        } else if (argv[i][0] == '-' || id_text) {
            fprintf(stderr, "tune %s: unexpected argument '%s' (see tune %s --help)\n", a->cmd,
                    argv[i], a->cmd);
            return CLI_USAGE;
        } else if (!a->dir) {
            a->dir = argv[i];
        } else {
            id_text = argv[i];
        }
    }
    if (!a->dir || !id_text) {
        fprintf(stderr, "tune %s: missing %s (see tune %s --help)\n", a->cmd, a->dir ? "ID" : "DIR",
                a->cmd);
        return CLI_USAGE;
    }
    char *end;
    errno = 0;
    a->id = strtoll(id_text, &end, 10);
    if (!*id_text || *end || errno || a->id < 0) {
        fprintf(stderr, "tune %s: ID: expected a trial id (an integer >= 0), got '%s'\n", a->cmd,
                id_text);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/*
 * Opens the study and the trial, and reports the values given (the study's
 * metric first, as tune_study_tell_value() reports it) as one report, when
 * there are any. *ret_report: the report's answer (TUNE_OK or TUNE_ESTOP).
 */
static tune_status open_and_report(struct trial_args *a, tune_study **ret_study,
                                   tune_trial **ret_trial, tune_status *ret_report, tune_error *err)
{
    tune_study *s = NULL;
    tune_status st = open_study(a->cmd, a->dir, NULL, a->wait_s, &s, err);
    if (st)
        return st;
    *ret_study = s;
    if (a->has_value) {
        memmove(a->names + 1, a->names, a->n * sizeof *a->names);
        memmove(a->values + 1, a->values, a->n * sizeof *a->values);
        a->names[0] = tune_study_metric(s);
        a->values[0] = a->value;
        a->n++;
    }
    *ret_report = TUNE_OK;
    st = tune_study_get_trial(s, (int64_t)a->id, ret_trial, err);
    if (!st && a->n > 0) {
        st = tune_trial_report(*ret_trial, a->n, a->names, a->values, err);
        if (st == TUNE_ESTOP) {
            *ret_report = st;
            st = TUNE_OK;
        }
    }
    if (st)
        cli_print_error(err);
    return st;
}

int cli_tell(int argc, char **argv)
{
    struct trial_args a = {.cmd = "tell", .state_text = "complete", .wait_s = DEFAULT_WAIT_S};
    int code = parse_trial_args(argc, argv, tell_usage, 1, &a);
    if (code)
        return code < 0 ? CLI_OK : code;
    tune_tell_state state;
    if (strcmp(a.state_text, "complete") == 0) {
        state = TUNE_TELL_COMPLETE;
    } else if (strcmp(a.state_text, "pruned") == 0) {
        state = TUNE_TELL_PRUNED;
    } else if (strcmp(a.state_text, "failed") == 0) {
        state = TUNE_TELL_FAILED;
    } else {
        fprintf(stderr, "tune tell: --state: expected complete, pruned or failed, got '%s'\n",
                a.state_text);
        return CLI_USAGE;
    }
    if (a.reason && state != TUNE_TELL_FAILED) {
        fprintf(stderr, "tune tell: --reason goes with --state failed\n");
        return CLI_USAGE;
    }
    tune_error err;
    tune_study *s = NULL;
    tune_trial *t = NULL;
    tune_status answer;
    tune_status st = open_and_report(&a, &s, &t, &answer, &err);
    if (st) {
        tune_study_free(s);
        return cli_exit_code(st);
    }
    if (state == TUNE_TELL_COMPLETE && tune_trial_iteration(t) == 0) {
        /* Optuna's tell(trial, value): complete needs a result, told now or by a step. */
        fprintf(stderr,
                "tune tell: trial %lld reported nothing: a complete trial needs its result "
                "(--value X, the study's metric, or --metric NAME=VALUE)\n",
                a.id);
        tune_study_free(s);
        return CLI_USAGE;
    }
    /* A stop the scheduler answered to the values: the tell ends the trial anyway. */
    st = tune_study_tell(s, t, state, a.reason, &err);
    if (!st)
        st = tune_study_finish(s, &err);
    if (st)
        cli_print_error(&err);
    tune_study_free(s);
    return cli_exit_code(st);
}

int cli_step(int argc, char **argv)
{
    struct trial_args a = {.cmd = "step", .wait_s = DEFAULT_WAIT_S};
    int code = parse_trial_args(argc, argv, step_usage, 0, &a);
    if (code)
        return code < 0 ? CLI_OK : code;
    if (!a.has_value && a.n == 0) {
        fprintf(stderr, "tune step: nothing to report: --value X or --metric NAME=VALUE\n");
        return CLI_USAGE;
    }
    tune_error err;
    tune_study *s = NULL;
    tune_trial *t = NULL;
    tune_status answer;
    tune_status st = open_and_report(&a, &s, &t, &answer, &err);
    /*
     * Told to stop, the trial ends here, as an objective that returns on
     * TUNE_ESTOP: STOPPED, TERMINATED at max_t, PAUSED for a pausing
     * scheduler (a later ask hands it out again), or failed on a NaN.
     */
    if (!st && answer == TUNE_ESTOP)
        st = tune_study_tell(s, t, TUNE_TELL_COMPLETE, NULL, &err);
    if (!st)
        st = tune_study_finish(s, &err);
    if (st)
        cli_print_error(&err);
    tune_study_free(s);
    if (st)
        return cli_exit_code(st);
    puts(answer == TUNE_ESTOP ? "prune" : "continue");
    if (fflush(stdout) != 0)
        return CLI_FAILED;
    return answer == TUNE_ESTOP ? CLI_STEP_PRUNE : CLI_OK;
}
