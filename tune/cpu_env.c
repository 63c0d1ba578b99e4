/*
 * cpu_env.c - advice on the process environment for the CPU trainer.
 *
 * OpenBLAS picks its kernels once, when it is loaded, from the CPU model it
 * recognises; an OpenBLAS older than the CPU falls back to SSE3 kernels and
 * nothing can change that later in the process, so the advice is for whoever
 * starts the process (the CLI re-executes itself with it).
 */
#include "internal.h"

#include "models/cpu/cpu_matmul.h"

const char *tune_cpu_env_advice(void)
{
    return tunep_cpu_blas_underuses_cpu() ? "OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=Haswell"
                                          : "OPENBLAS_NUM_THREADS=1";
}
