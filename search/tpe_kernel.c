/*
 * tpe_kernel.c - picks the variant of tpe_kernel.h's kernels for the running
 * CPU. __builtin_cpu_supports also checks that the OS saves the wider
 * registers; the AVX2 and AVX-512 builds use -mavx2 and -mavx512f alone
 * (no FMA, BMI or other extensions), so these two checks suffice.
 */
#include "search/tpe_kernel.h"

const struct tunep_tpe_kernels *tunep_tpe_kernels_get(int i)
{
    switch (i) {
        case 0: return &tunep_tpe_kernels_generic;
#if defined(TUNEP_TPE_HAVE_AVX2)
        case 1: return __builtin_cpu_supports("avx2") ? &tunep_tpe_kernels_avx2 : NULL;
#endif
#if defined(TUNEP_TPE_HAVE_AVX512)
        case 2: return __builtin_cpu_supports("avx512f") ? &tunep_tpe_kernels_avx512 : NULL;
#endif
        default: return NULL;
    }
}

const struct tunep_tpe_kernels *tunep_tpe_kernels_best(void)
{
    for (int i = 2; i > 0; i--) {
        const struct tunep_tpe_kernels *k = tunep_tpe_kernels_get(i);
        if (k)
            return k;
    }
    return &tunep_tpe_kernels_generic;
}
