/*
 * cli_inspect.c - `tune status`, `tune best` and `tune export` on an
 * experiment folder. They open the store read-only, so they also work while
 * a sweep is writing to it (WAL readers do not block the writer).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int open_dir(const char *cmd, int argc, char **argv, const char *help, tune_study **ret)
{
    if (argc >= 2 && cli_is_help(argv[1])) {
        printf("%s", help);
        return -1;
    }
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "tune %s: missing DIR (see tune %s --help)\n", cmd, cmd);
        return CLI_USAGE;
    }
    tune_error err;
    tune_status st = tune_study_open(argv[1], ret, &err);
    if (st) {
        cli_print_error(&err);
        return cli_exit_code(st);
    }
    return CLI_OK;
}

int cli_status(int argc, char **argv)
{
    tune_study *study = NULL;
    int rc = open_dir("status", argc, argv, "usage: tune status DIR\n", &study);
    if (rc)
        return rc < 0 ? CLI_OK : rc;
    if (argc > 2) {
        fprintf(stderr, "tune status: unexpected argument '%s'\n", argv[2]);
        tune_study_free(study);
        return CLI_USAGE;
    }
    char *text = NULL;
    tune_error err;
    tune_status st = tune_study_progress_text(study, 20, &text, &err);
    if (st)
        cli_print_error(&err);
    else
        fputs(text, stdout);
    tune_free(text);
    tune_study_free(study);
    return cli_exit_code(st);
}

/* The Pareto front as a JSON list, one trial a line; frees the study. */
static int print_front(tune_study *study)
{
    tune_result **front = NULL;
    size_t n = 0;
    tune_error err;
    tune_status st = tune_study_pareto_front(study, &front, &n, &err);
    for (size_t i = 0; !st && i < n; i++) {
        char *json = NULL;
        if (!(st = tune_result_json(front[i], &json, &err)))
            printf("%s%s", i ? ",\n " : "[", json);
        tune_free(json);
    }
    if (st)
        cli_print_error(&err);
    else
        printf("]\n");
    tune_results_free(front, n);
    tune_study_free(study);
    return st == TUNE_ENOTFOUND ? CLI_FAILED : cli_exit_code(st);
}

int cli_best(int argc, char **argv)
{
    tune_study *study = NULL;
    int rc =
        open_dir("best", argc, argv,
                 "usage: tune best DIR [--metric M] [--mode min|max] [--scope SCOPE]\n"
                 "Prints the best trial as JSON, chosen as Ray's get_best_result(metric, mode,\n"
                 "scope): every report of every attempt counts; trials that ended in ERROR and\n"
                 "NaN or infinite scores are left out.\n"
                 "  --metric M    the metric to rank by (default: the experiment's)\n"
                 "  --mode MODE   max or min (default: the experiment's)\n"
                 "  --scope SCOPE how a trial's values of M make its score:\n"
                 "                last (default) its last value; avg its running average;\n"
                 "                last-5-avg, last-10-avg the mean of its last 5 or 10 values;\n"
                 "                all its best value in any report\n"
                 "The JSON holds the chosen report (the best one for --scope all, else the\n"
                 "trial's last with M) with every metric it has, under \"metrics\".\n"
                 "An experiment of several objectives (a \"metric\" list) prints its Pareto\n"
                 "front instead, unless --metric is given: a JSON list of every finished\n"
                 "(TERMINATED or STOPPED) trial that no other finished trial dominates on the\n"
                 "objectives' last values, best first by the first objective; each entry adds\n"
                 "\"objectives\" (their values) and \"modes\" to the fields above.\n",
                 &study);
    if (rc)
        return rc < 0 ? CLI_OK : rc;
    const char *metric = NULL, *mode = NULL;
    tune_scope scope = TUNE_SCOPE_LAST;
    tune_error err;
    for (int i = 2; i < argc; i++) {
        const char *opt = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if ((strcmp(opt, "--metric") == 0 || strcmp(opt, "--mode") == 0 ||
             strcmp(opt, "--scope") == 0) &&
            !val) {
            fprintf(stderr, "tune best: %s needs a value\n", opt);
            tune_study_free(study);
            return CLI_USAGE;
        }
        if (strcmp(opt, "--metric") == 0) {
            metric = argv[++i];
        } else if (strcmp(opt, "--mode") == 0) {
            mode = argv[++i];
            if (strcmp(mode, "max") != 0 && strcmp(mode, "min") != 0) {
                fprintf(stderr, "tune best: --mode '%s': expected max or min\n", mode);
                tune_study_free(study);
                return CLI_USAGE;
            }
        } else if (strcmp(opt, "--scope") == 0) {
            if (tune_scope_from_name(argv[++i], &scope, &err)) {
                fprintf(stderr, "tune best: --%s\n", err.text);
                tune_study_free(study);
                return CLI_USAGE;
            }
        } else {
            fprintf(stderr, "tune best: unexpected argument '%s'\n", opt);
            tune_study_free(study);
            return CLI_USAGE;
        }
    }
    if (!metric && tune_study_objective_count(study) > 1) {
        if (mode || scope != TUNE_SCOPE_LAST) {
            fprintf(stderr,
                    "tune best: the experiment has %zu objectives: --mode and --scope rank by "
                    "one metric, give it with --metric\n",
                    tune_study_objective_count(study));
            tune_study_free(study);
            return CLI_USAGE;
        }
        return print_front(study);
    }
    tune_result *best = NULL;
    char *json = NULL;
    tune_status st = tune_study_best_by(study, metric, mode, scope, &best, &err);
    if (!st)
        st = tune_result_json(best, &json, &err);
    if (st)
        cli_print_error(&err);
    else
        printf("%s\n", json);
    tune_free(json);
    tune_result_free(best);
    tune_study_free(study);
    return st == TUNE_ENOTFOUND ? CLI_FAILED : cli_exit_code(st);
}

int cli_export(int argc, char **argv)
{
    tune_study *study = NULL;
    int rc = open_dir("export", argc, argv,
                      "usage: tune export DIR --csv FILE [--progress]\n"
                      "Writes results.csv's one row per trial, or with --progress one row per\n"
                      "report of every attempt (progress.csv); columns in docs/results.md.\n"
                      "FILE '-' is standard output; otherwise FILE must be a regular file (or\n"
                      "not exist): folders, devices, FIFOs, sockets and the experiment's own\n"
                      "files are refused, and a symbolic link is written through.\n",
                      &study);
    if (rc)
        return rc < 0 ? CLI_OK : rc;
    const char *csv = NULL;
    int progress = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
            csv = argv[++i];
        } else if (strcmp(argv[i], "--progress") == 0) {
            progress = 1;
        } else {
            fprintf(stderr, "tune export: unexpected argument '%s'\n", argv[i]);
            tune_study_free(study);
            return CLI_USAGE;
        }
    }
    if (!csv) {
        fprintf(stderr, "tune export: missing --csv FILE\n");
        tune_study_free(study);
        return CLI_USAGE;
    }
    tune_error err;
    fflush(stdout); /* "--csv -" writes to fd 1 directly */
    tune_status st =
        tune_study_export_csv(study, progress ? TUNE_CSV_PROGRESS : TUNE_CSV_RESULTS, csv, &err);
    if (st)
        cli_print_error(&err);
    tune_study_free(study);
    return st ? CLI_FAILED : CLI_OK;
}
