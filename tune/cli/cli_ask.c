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
    "  --state S            complete (default: needs --value or --metric), pruned\n"
    "                       (stopped early; values optional), failed (retried up to\n"
    "                       the config's max_failures, then ERROR)\n"
    "  --reason TEXT        why it failed (with --state failed), the trial's error\n"
    "  --wait SECONDS       as for tune ask (default 60)\n"
    "The values are one report (one more training iteration), then the trial ends.\n"
    "exit status: 0 told; 2 usage, an unknown trial or one that is not open; 1 other\n";

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

/* "NAME=VALUE", split at the last '='; 0, or -1 with the message printed. */
static int parse_metric(char *arg, const char **ret_name, double *ret_value)
{
    char *eq = strrchr(arg, '=');
    if (!eq || eq == arg || parse_double(eq + 1, ret_value)) {
        fprintf(stderr, "tune tell: --metric: expected NAME=VALUE with a number, got '%s'\n", arg);
        return -1;
    }
    *eq = '\0';
    *ret_name = arg;
    return 0;
}

int cli_tell(int argc, char **argv)
{
    const char *dir = NULL, *id_text = NULL, *reason = NULL, *state_text = "complete";
    const char *names[MAX_METRICS + 1];
    double values[MAX_METRICS + 1];
    size_t n = 0;
    int has_value = 0;
    double value = 0, wait_s = DEFAULT_WAIT_S;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(tell_usage, stdout);
            return CLI_OK;
        } else if (strcmp(argv[i], "--value") == 0 && i + 1 < argc) {
            if (parse_double(argv[++i], &value)) {
                fprintf(stderr, "tune tell: --value: expected a number, got '%s'\n", argv[i]);
                return CLI_USAGE;
            }
            has_value = 1;
        } else if (strcmp(argv[i], "--metric") == 0 && i + 1 < argc) {
            if (n == MAX_METRICS) {
                fprintf(stderr, "tune tell: at most %d --metric\n", MAX_METRICS);
                return CLI_USAGE;
            }
            if (parse_metric(argv[++i], &names[n], &values[n]))
                return CLI_USAGE;
            n++;
        } else if (strcmp(argv[i], "--state") == 0 && i + 1 < argc) {
            state_text = argv[++i];
        } else if (strcmp(argv[i], "--reason") == 0 && i + 1 < argc) {
            reason = argv[++i];
        } else if (strcmp(argv[i], "--wait") == 0 && i + 1 < argc) {
            if (parse_wait("tell", argv[++i], &wait_s))
                return CLI_USAGE;
        } else if (argv[i][0] == '-' || id_text) {
            fprintf(stderr, "tune tell: unexpected argument '%s' (see tune tell --help)\n",
                    argv[i]);
            return CLI_USAGE;
        } else if (!dir) {
            dir = argv[i];
        } else {
            id_text = argv[i];
        }
    }
    if (!dir || !id_text) {
        fprintf(stderr, "tune tell: missing %s (see tune tell --help)\n", dir ? "ID" : "DIR");
        return CLI_USAGE;
    }
    char *end;
    errno = 0;
    long long id = strtoll(id_text, &end, 10);
    if (!*id_text || *end || errno || id < 0) {
        fprintf(stderr, "tune tell: ID: expected a trial id (an integer >= 0), got '%s'\n",
                id_text);
        return CLI_USAGE;
    }
    tune_tell_state state;
    if (strcmp(state_text, "complete") == 0) {
        state = TUNE_TELL_COMPLETE;
    } else if (strcmp(state_text, "pruned") == 0) {
        state = TUNE_TELL_PRUNED;
    } else if (strcmp(state_text, "failed") == 0) {
        state = TUNE_TELL_FAILED;
    } else {
        fprintf(stderr, "tune tell: --state: expected complete, pruned or failed, got '%s'\n",
                state_text);
        return CLI_USAGE;
    }
    if (reason && state != TUNE_TELL_FAILED) {
        fprintf(stderr, "tune tell: --reason goes with --state failed\n");
        return CLI_USAGE;
    }
    if (state == TUNE_TELL_COMPLETE && !has_value && n == 0) {
        fprintf(stderr, "tune tell: a complete trial needs its result: --value X (the study's "
                        "metric) or --metric NAME=VALUE\n");
        return CLI_USAGE;
    }

    tune_error err;
    tune_study *s = NULL;
    tune_status st = open_study("tell", dir, NULL, wait_s, &s, &err);
    if (st)
        return cli_exit_code(st);
    if (has_value) {
        /* The study's metric first, as tune_study_tell_value() reports it. */
        memmove(names + 1, names, n * sizeof *names);
        memmove(values + 1, values, n * sizeof *values);
        names[0] = tune_study_metric(s);
        values[0] = value;
        n++;
    }
    tune_trial *t = NULL;
    st = tune_study_get_trial(s, (int64_t)id, &t, &err);
    if (!st && n > 0) {
        st = tune_trial_report(t, n, names, values, &err);
        if (st == TUNE_ESTOP)
            st = TUNE_OK; /* the scheduler's stop: the tell below ends it anyway */
    }
    if (!st)
        st = tune_study_tell(s, t, state, reason, &err);
    if (!st)
        st = tune_study_finish(s, &err);
    if (st)
        cli_print_error(&err);
    tune_study_free(s);
    return cli_exit_code(st);
}
