/*
 * cpu_backend.h - the reference CPU backend: host memory, OpenMP threads,
 * OpenBLAS GEMMs, float and double kernel tables.
 */
#ifndef TUNE_CPU_BACKEND_H
#define TUNE_CPU_BACKEND_H

#include "models/bert/backend.h"

/* Upper limit on a backend's thread count. */
#define TUNEP_CPU_MAX_THREADS 256

/* The context every CPU kernel receives. */
struct tunep_cpu_ctx {
    int threads; /* OpenMP team size of every parallel region (1 = serial) */
};

/*
 * Creates a CPU backend that runs on exactly `threads` threads (1 ..
 * TUNEP_CPU_MAX_THREADS; without OpenMP, always 1). Side effect, process-
 * wide: OpenBLAS is set to one thread (see cpu_matmul.c for why).
 * @return TUNE_OK, TUNE_EINVAL, TUNE_ENOMEM; *ret_backend untouched on failure.
 */
tune_status tunep_cpu_backend_new(int threads, struct tunep_backend **ret_backend, tune_error *err);
/* NULL is a no-op. Models using the backend must be freed first. */
void tunep_cpu_backend_free(struct tunep_backend *backend);

/* The kernel tables (cpu_kernels_tmpl.c compiled as float and as double). */
extern const struct tunep_kernels tunep_cpu_kernels;
extern const struct tunep_kernels_f64 tunep_cpu_kernels_f64;
/* The float table compiled again for x86-64-v3 (AVX2, FMA) and x86-64-v4
 * (AVX-512 F/BW/DQ/VL/CD); defined only where the build has them (on x86-64,
 * TUNEP_CPU_HAVE_AVX2 / TUNEP_CPU_HAVE_AVX512). Reach them through
 * tunep_cpu_kernels_for(), which also checks the running CPU. */
extern const struct tunep_kernels tunep_cpu_kernels_avx2;
extern const struct tunep_kernels tunep_cpu_kernels_avx512;

/*
 * Instruction-set levels of the float kernels. Every level computes the
 * same bits (the builds keep -ffp-contract=off, Philox is integer math, and
 * every reduction has a fixed order written out in the source), so results
 * do not depend on which one runs; only the speed does.
 */
enum tunep_cpu_isa {
    TUNEP_CPU_ISA_GENERIC, /* the compiler's baseline (SSE2 on x86-64) */
    TUNEP_CPU_ISA_AVX2,
    TUNEP_CPU_ISA_AVX512,
    TUNEP_CPU_ISA_COUNT
};

/* "generic", "avx2", "avx512"; "?" outside the enum. */
const char *tunep_cpu_isa_name(enum tunep_cpu_isa isa);
/* The float table of `isa`, or NULL when this build lacks it or this CPU
 * (and OS) cannot run it. GENERIC is always there. */
const struct tunep_kernels *tunep_cpu_kernels_for(enum tunep_cpu_isa isa);
/* The highest level tunep_cpu_kernels_for() answers; what a new backend uses. */
enum tunep_cpu_isa tunep_cpu_isa_best(void);

/* r[j] = tunep_rng_u32_at(seed, stream, idx0 + j) for j < n, computed the way
 * the dropout kernels of `isa` compute it (tests only: every level must give
 * the scalar generator's bits). NULL where tunep_cpu_kernels_for(isa) is. */
typedef void (*tunep_cpu_philox_fill_fn)(uint32_t *r, uint64_t idx0, size_t n, uint64_t seed,
                                         uint64_t stream);
tunep_cpu_philox_fill_fn tunep_cpu_philox_fill_for(enum tunep_cpu_isa isa);
void tunep_cpu_philox_fill_generic(uint32_t *r, uint64_t idx0, size_t n, uint64_t seed,
                                   uint64_t stream);
void tunep_cpu_philox_fill_avx2(uint32_t *r, uint64_t idx0, size_t n, uint64_t seed,
                                uint64_t stream);
void tunep_cpu_philox_fill_avx512(uint32_t *r, uint64_t idx0, size_t n, uint64_t seed,
                                  uint64_t stream);

#endif /* TUNE_CPU_BACKEND_H */
