/*
 * cpu_matmul.h - row-major GEMM for the CPU kernels:
 * C (M,N) = alpha op(A) op(B) + beta C, op(X) = X or X^T; beta == 0 means C
 * is not read. `threads` <= 1 runs on the calling thread (the attention
 * kernel calls it from inside its own parallel loop over heads).
 */
#ifndef TUNE_CPU_MATMUL_H
#define TUNE_CPU_MATMUL_H

/* float: OpenBLAS cblas_sgemm, split into row or column blocks across
 * `threads` OpenMP threads, each running a single-threaded sgemm. */
void tunep_cpu_gemm(int threads, int trans_a, int trans_b, int M, int N, int K, float alpha,
                    const float *A, int lda, const float *B, int ldb, float beta, float *C,
                    int ldc);
/* double: the naive triple loop (gradient checks only), rows split across threads. */
void tunep_cpu_gemm_f64(int threads, int trans_a, int trans_b, int M, int N, int K, double alpha,
                        const double *A, int lda, const double *B, int ldb, double beta, double *C,
                        int ldc);
/* float naive loop with double accumulation: the test oracle and BLAS-free fallback. */
void tunep_cpu_gemm_naive(int trans_a, int trans_b, int M, int N, int K, float alpha,
                          const float *A, int lda, const float *B, int ldb, float beta, float *C,
                          int ldc);

/*
 * Puts the BLAS (OpenBLAS, BLIS) in single-threaded mode (process-wide;
 * idempotent), so that the only thread pool is the backend's OpenMP team and
 * the two never fight for cores. Called when a CPU backend is created.
 */
void tunep_cpu_blas_setup(void);
/* The BLAS this build uses ("OpenBLAS", "BLIS", "CBLAS"), and the kernels it
 * picked for this CPU (OpenBLAS's core name "Zen", "Haswell"; BLIS's
 * configuration "zen3", "skx"), for logs and benchmarks. */
const char *tunep_cpu_blas_name(void);
const char *tunep_cpu_blas_corename(void);
/*
 * 1 when the BLAS runs pre-AVX2 kernels on a CPU that has AVX2 and FMA: an
 * OpenBLAS older than the CPU (0.3.21 does not know Intel family 6 model 207)
 * falls back to "Prescott" SSE3 kernels, which made a bert-tiny step ~1.5x
 * slower here; OPENBLAS_CORETYPE=Haswell (set before the process starts)
 * restores the FMA kernels.
 */
int tunep_cpu_blas_underuses_cpu(void);
/*
 * The environment the BLAS should start in (read when it loads, so only a new
 * process can take it): one BLAS thread, and where it underuses the CPU the
 * best kernels this CPU runs (Skylake-X with AVX-512, else Haswell). BLIS 0.9
 * picks its reference kernels on CPUs it does not know, such as Zen 4. NULL
 * for another CBLAS. This is tune_cpu_env_advice().
 */
const char *tunep_cpu_blas_env_advice(void);

#endif /* TUNE_CPU_MATMUL_H */
