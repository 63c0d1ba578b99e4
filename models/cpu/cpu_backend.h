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

#endif /* TUNE_CPU_BACKEND_H */
