/*
 * cpu_env.c - advice on the process environment for the CPU trainer: the
 * public face of tunep_cpu_blas_env_advice() (models/cpu/cpu_matmul.c).
 *
 * OpenBLAS and BLIS pick their kernels once, when they load, from the CPU
 * model they recognise; one older than the CPU falls back to slow kernels
 * and nothing can change that later in the process, so the advice is for
 * whoever starts the process (the CLI re-executes itself with it). Forcing
 * the best kernels the CPU runs doubled the SGEMM peak on this project's
 * AVX-512 machine (OpenBLAS SkylakeX: 301 against 164 GFLOP/s on 2 threads,
 * bench/run_bert.sh).
 */
#include "base/base.h"

#include "models/cpu/cpu_matmul.h"

const char *tune_cpu_env_advice(void)
{
    return tunep_cpu_blas_env_advice();
}
