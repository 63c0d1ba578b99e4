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

int cli_best(int argc, char **argv)
{
    tune_study *study = NULL;
    int rc = open_dir("best", argc, argv,
                      "usage: tune best DIR\nPrints the best trial (last value of the metric) "
                      "as JSON.\n",
                      &study);
    if (rc)
        return rc < 0 ? CLI_OK : rc;
    if (argc > 2) {
        fprintf(stderr, "tune best: unexpected argument '%s'\n", argv[2]);
        tune_study_free(study);
        return CLI_USAGE;
    }
    char *json = NULL;
    tune_error err;
    tune_status st = tune_study_best_json(study, &json, &err);
    if (st)
        cli_print_error(&err);
    else
        printf("%s\n", json);
    tune_free(json);
    tune_study_free(study);
    return st == TUNE_ENOTFOUND ? CLI_FAILED : cli_exit_code(st);
}

int cli_export(int argc, char **argv)
{
    tune_study *study = NULL;
    int rc = open_dir("export", argc, argv,
                      "usage: tune export DIR --csv FILE [--progress]\n"
                      "Writes one row per trial, or with --progress one row per report of each\n"
                      "trial's last attempt (failed attempts stay in experiment.db).\n"
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
