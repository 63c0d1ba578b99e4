/*
 * cli_mpi.c - `mpirun -n N tune run CONFIG` (and `tune resume DIR`): every
 * rank parses the same config; rank 0 runs the sweep as usual with its trials
 * on the other ranks, which serve trials until it is done.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_mpi_launched(void)
{
    /* What Open MPI's mpirun, Slurm's srun (PMI) and MPICH/MVAPICH set per rank. */
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 1)
            return 1;
    }
    return 0;
}

int cli_mpi_run(tune_study *study, int quiet, int trials_per_rank,
                int (*run)(tune_study *study, int quiet))
{
    int rank = 0, size = 1, argc = 0;
    char **argv = NULL;
    tune_error err;
    tune_status st = tune_mpi_init(&argc, &argv, &rank, &size, &err);
    if (st) {
        cli_print_error(&err);
        tune_study_free(study);
        return cli_exit_code(st);
    }
    int code = CLI_OK;
    if (rank == 0) {
        st = tune_study_set_mpi(study, trials_per_rank, &err);
        if (st) {
            cli_print_error(&err);
            tune_study_free(study);
            tune_mpi_abort(cli_exit_code(st)); /* the other ranks would wait for trials */
            return cli_exit_code(st);
        }
        if (!quiet)
            fprintf(stderr, "tune: MPI: controller on rank 0, trials on %d ranks x %d\n", size - 1,
                    trials_per_rank);
        code = run(study, quiet); /* frees the study */
    } else {
        st = tune_mpi_serve(study, trials_per_rank, &err);
        tune_study_free(study);
        if (st) {
            cli_print_error(&err);
            tune_mpi_abort(cli_exit_code(st));
            code = cli_exit_code(st);
        }
    }
    tune_mpi_finalize();
    return code;
}
