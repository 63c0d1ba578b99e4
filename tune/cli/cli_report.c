/*
 * cli_report.c - `tune report DIR [-o FILE]`: writes the experiment's HTML
 * report (tune_report_html), by default DIR/report.html, "-" for standard
 * output. The store is opened read-only, so it also works while a sweep is
 * writing to it.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_report(int argc, char **argv)
{
    const char *dir = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            printf("usage: tune report DIR [-o FILE]\n"
                   "Writes one self-contained HTML page (no network needed) with the summary,\n"
                   "learning curves, each parameter against the metric, parallel coordinates\n"
                   "and a sortable table of trials. Default FILE: DIR/report.html; '-' is\n"
                   "standard output. FILE must be a regular file (or not exist): folders,\n"
                   "devices, FIFOs, sockets and the experiment's own files are refused, and a\n"
                   "symbolic link is written through.\n");
            return CLI_OK;
        } else if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) &&
                   i + 1 < argc) {
            out = argv[++i];
        } else if (strncmp(argv[i], "--output=", 9) == 0) {
            out = argv[i] + 9;
        } else if (argv[i][0] == '-' || dir) {
            fprintf(stderr, "tune report: unexpected argument '%s' (see tune report --help)\n",
                    argv[i]);
            return CLI_USAGE;
        } else {
            dir = argv[i];
        }
    }
    if (!dir) {
        fprintf(stderr, "tune report: missing DIR (see tune report --help)\n");
        return CLI_USAGE;
    }
    tune_error err;
    fflush(stdout); /* "-o -" writes to fd 1 directly */
    tune_status st = tune_report_html(dir, out, &err);
    if (st) {
        cli_print_error(&err);
        return cli_exit_code(st);
    }
    return CLI_OK;
}
