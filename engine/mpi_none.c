/*
 * mpi_none.c - the MPI entry points of a libtune built without MPI: they say
 * so (TUNE_EUNSUPPORTED), and a study never runs trials remotely.
 */
#include "engine/study.h"

#include <stdio.h>

tune_status tunep_run_remote(struct tune_study *s, struct tune_trial *t, int slot)
{
    (void)s, (void)slot;
    snprintf(t->error, sizeof t->error, "this libtune was built without MPI");
    return TUNE_EUNSUPPORTED;
}

tune_status tunep_mpi_report(struct tune_trial *t, size_t n, const char *const *names,
                             const double *values)
{
    (void)t, (void)n, (void)names, (void)values;
    return TUNE_EUNSUPPORTED;
}

void tunep_mpi_quit_workers(struct tune_study *s)
{
    (void)s;
}

int tune_mpi_available(void)
{
    return 0;
}

tune_status tune_mpi_init(int *argc, char ***argv, int *ret_rank, int *ret_size, tune_error *err)
{
    (void)argc, (void)argv;
    *ret_rank = 0;
    *ret_size = 1;
    return tunep_error_set(err, TUNE_EUNSUPPORTED,
                           "this tune was built without MPI (install libopenmpi-dev and rebuild)");
}

void tune_mpi_finalize(void)
{
}

void tune_mpi_abort(int code)
{
    (void)code;
}

tune_status tune_study_set_mpi(tune_study *s, int trials_per_rank, tune_error *err)
{
    (void)s, (void)trials_per_rank;
    return tunep_error_set(err, TUNE_EUNSUPPORTED, "this libtune was built without MPI");
}

tune_status tune_mpi_serve(tune_study *s, int trials_per_rank, tune_error *err)
{
    (void)s, (void)trials_per_rank;
    return tunep_error_set(err, TUNE_EUNSUPPORTED, "this libtune was built without MPI");
}
