/*
 * cli.h - the `tune` command's subcommands. The CLI sees only tune.h (curl's
 * tool rule): everything it shows comes through the public API.
 */
#ifndef TUNE_CLI_H
#define TUNE_CLI_H

#include "tune.h"

/* Exit codes, as documented in README.md. */
enum {
    CLI_OK = 0,
    CLI_FAILED = 1, /* the run failed, was interrupted, or trials errored */
    CLI_USAGE = 2,  /* bad command line or config */
};

int cli_run(int argc, char **argv);
int cli_resume(int argc, char **argv);
int cli_validate(int argc, char **argv);
int cli_status(int argc, char **argv);
int cli_best(int argc, char **argv);
int cli_export(int argc, char **argv);
int cli_report(int argc, char **argv);
int cli_dashboard(int argc, char **argv);
int cli_ask(int argc, char **argv);
int cli_tell(int argc, char **argv);
int cli_step(int argc, char **argv);

/* MPI (cli_mpi.c): whether mpirun/srun started this process as one of several
 * ranks, and the run on every rank (rank 0 calls run(), which frees the study). */
int cli_mpi_launched(void);
int cli_mpi_run(tune_study *study, int quiet, int trials_per_rank,
                int (*run)(tune_study *study, int quiet));

/* Prints "tune: <formatted error>" to stderr. */
void cli_print_error(const tune_error *err);
/* Exit code for a library status: config and usage problems are 2, the rest 1. */
int cli_exit_code(tune_status st);
/* Whether argv[i] asks for help. */
int cli_is_help(const char *arg);

#endif /* TUNE_CLI_H */
