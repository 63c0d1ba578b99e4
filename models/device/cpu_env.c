/*
 * cpu_env.c - advice on the process environment for the CPU trainer.
 *
 * OpenBLAS picks its kernels once, when it is loaded, from the CPU model it
 * recognises; an OpenBLAS older than the CPU falls back to SSE3 kernels and
 * nothing can change that later in the process, so the advice is for whoever
 * starts the process (the CLI re-executes itself with it). The core named is
 * the best one the CPU can run: SkylakeX needs AVX-512 F, CD, BW, DQ and VL
 * (forcing it elsewhere dies with SIGILL); it doubled the SGEMM peak on this
 * project's AVX-512 machine (301 against 164 GFLOP/s on 2 threads,
 * bench/run_bert.sh), Haswell needs AVX2 and FMA.
 */
#include "base/base.h"

#include "models/cpu/cpu_matmul.h"

static int has_avx512_skylake(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}

const char *tune_cpu_env_advice(void)
{
    if (!tunep_cpu_blas_underuses_cpu())
        return "OPENBLAS_NUM_THREADS=1";
    return has_avx512_skylake() ? "OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=SkylakeX"
                                : "OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=Haswell";
}
