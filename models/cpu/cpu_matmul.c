/*
 * cpu_matmul.c - GEMM for the CPU backend: the CBLAS's cblas_sgemm (OpenBLAS
 * by default, or the one -Dblas names; this is the only file that includes
 * <cblas.h>) and the naive loops that serve as
 * double-precision path and as test oracle (llm.c matmul_forward_naive).
 *
 * Threading: the BLAS is kept at one thread and large GEMMs are cut into
 * `threads` row (or column) blocks, one single-threaded sgemm per OpenMP
 * thread. One pool then owns the cores: on the 2-core reference machine an
 * OpenMP pool next to OpenBLAS's own pthreads pool cost PyTorch up to 1.8x
 * (shared/bench/peers/README.md). It also keeps the thread count a property
 * of each backend instead of OpenBLAS's process-wide setting.
 *
 * One block per thread, not more: every block packs the whole other
 * operand again, and on bert-small's shapes (2 threads, OpenBLAS 0.3.21
 * Cooperlake kernels, AMD EPYC Zen 4, a one-off program with the operands
 * out of cache) 8 dynamically scheduled blocks instead of 2 cost up to 17%
 * (4096 x 512 x 2048: 153 against 184 GFLOP/s; a 512 x 512 x 4096 weight
 * gradient: 97 against 155). More blocks would let a thread take over the
 * share of one the OS deschedules on a busy machine, but the idle case is
 * the one that counts here.
 */
#include "models/cpu/cpu_matmul.h"

#include <cblas.h>
#include <stddef.h>
#include <string.h>
#if defined(TUNE_BLAS_BLIS)
#include <blis.h>
#endif

#if defined(_OPENMP)
#define CPU_PRAGMA(x) _Pragma(#x)
#else
#define CPU_PRAGMA(x)
#endif

/* Below this many multiply-adds a GEMM runs on one thread: ~2^18 MACs take
 * ~5 us at the ~60 GFLOP/s OpenBLAS reaches on small shapes here, the order
 * of an OpenMP fork/join. */
#define SPLIT_MIN_MACS (1 << 18)

/* What the CBLAS chosen at configure time (-Dblas) offers beyond cblas_sgemm: OpenBLAS
 * and BLIS have a process-wide thread count and name their kernels; another CBLAS is
 * taken as it is (run it single-threaded through its own environment variable). */
#if defined(TUNE_BLAS_OPENBLAS)
void tunep_cpu_blas_setup(void)
{
    if (openblas_get_num_threads() != 1)
        openblas_set_num_threads(1);
}

const char *tunep_cpu_blas_name(void)
{
    return "OpenBLAS";
}

const char *tunep_cpu_blas_corename(void)
{
    return openblas_get_corename();
}
#elif defined(TUNE_BLAS_BLIS)
void tunep_cpu_blas_setup(void)
{
    bli_thread_set_num_threads(1);
}

const char *tunep_cpu_blas_name(void)
{
    return "BLIS";
}

const char *tunep_cpu_blas_corename(void)
{
    return bli_arch_string(bli_arch_query_id());
}
#else
void tunep_cpu_blas_setup(void)
{
}

const char *tunep_cpu_blas_name(void)
{
    return "CBLAS";
}

const char *tunep_cpu_blas_corename(void)
{
    return "unknown";
}
#endif

/* 1 on an x86 CPU with AVX2 and FMA (the least the BLAS kernels named below need). */
static int has_avx2_fma(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

int tunep_cpu_blas_underuses_cpu(void)
{
#if defined(TUNE_BLAS_OPENBLAS)
    static const char *const old_cores[] = {"Prescott", "Core2",       "Penryn", "Dunnington",
                                            "Nehalem",  "Sandybridge", "Atom",   "Barcelona",
                                            "Opteron",  "Bobcat",      "Katmai", "Northwood"};
    const char *core = openblas_get_corename();
    if (!core || !has_avx2_fma())
        return 0;
    for (size_t i = 0; i < sizeof old_cores / sizeof old_cores[0]; i++)
        if (strcmp(core, old_cores[i]) == 0)
            return 1;
#elif defined(TUNE_BLAS_BLIS)
    /* BLIS 0.9 does not know Zen 4 and runs its reference kernels there. */
    return has_avx2_fma() && bli_arch_query_id() == BLIS_ARCH_GENERIC;
#endif
    return 0;
}

#if defined(TUNE_BLAS_BLIS)
/* BLIS_ARCH_TYPE takes the arch_t value, which blis.h defines by position: these are the
 * 0.9 values written below; a BLIS that moves them fails to build here, not at run time. */
_Static_assert(BLIS_ARCH_SKX == 0 && BLIS_ARCH_HASWELL == 3,
               "BLIS_ARCH_TYPE values differ from those tunep_cpu_blas_env_advice writes");
#endif

/* Skylake-X's AVX-512 subsets (F, CD, BW, DQ, VL), which OpenBLAS's SkylakeX and BLIS's
 * skx kernels need: forcing them elsewhere dies with SIGILL. */
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

const char *tunep_cpu_blas_env_advice(void)
{
    int under = tunep_cpu_blas_underuses_cpu();
    int avx512 = under && has_avx512_skylake();
#if defined(TUNE_BLAS_OPENBLAS)
    if (!under)
        return "OPENBLAS_NUM_THREADS=1";
    return avx512 ? "OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=SkylakeX"
                  : "OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=Haswell";
#elif defined(TUNE_BLAS_BLIS)
    if (!under)
        return "BLIS_NUM_THREADS=1";
    return avx512 ? "BLIS_NUM_THREADS=1 BLIS_ARCH_TYPE=0" : "BLIS_NUM_THREADS=1 BLIS_ARCH_TYPE=3";
#else
    (void)under, (void)avx512;
    return NULL;
#endif
}

static void sgemm1(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                   int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void tunep_cpu_gemm(int threads, int trans_a, int trans_b, int M, int N, int K, float alpha,
                    const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0)
        return;
    double macs = (double)M * (double)N * (double)K;
    if (threads <= 1 || macs < (double)SPLIT_MIN_MACS) {
        sgemm1(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    /* Cut the longer of M and N; blocks are multiples of 16 so that every
     * thread runs whole micro-kernel panels. */
    int split_m = M >= N;
    int len = split_m ? M : N;
    int nblk = threads;
    if (nblk > (len + 15) / 16)
        nblk = (len + 15) / 16;
    if (nblk <= 1) {
        sgemm1(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    int per = (len + nblk - 1) / nblk;
    per = (per + 15) / 16 * 16;
    CPU_PRAGMA(omp parallel for num_threads(nblk) schedule(static))
    for (int blk = 0; blk < nblk; blk++) {
        int lo = blk * per;
        int hi = lo + per < len ? lo + per : len;
        if (lo >= hi)
            continue;
        if (split_m) {
            const float *a = trans_a ? A + lo : A + (size_t)lo * (size_t)lda;
            sgemm1(trans_a, trans_b, hi - lo, N, K, alpha, a, lda, B, ldb, beta,
                   C + (size_t)lo * (size_t)ldc, ldc);
        } else {
            const float *b = trans_b ? B + (size_t)lo * (size_t)ldb : B + lo;
            sgemm1(trans_a, trans_b, M, hi - lo, K, alpha, A, lda, b, ldb, beta, C + lo, ldc);
        }
    }
}

/* Element (i, k) of op(A) and (k, j) of op(B), row-major. */
#define OP_A(A, i, k)                                                                              \
    ((trans_a) ? (A)[(size_t)(k) * (size_t)lda + (size_t)(i)]                                      \
               : (A)[(size_t)(i) * (size_t)lda + (size_t)(k)])
#define OP_B(B, k, j)                                                                              \
    ((trans_b) ? (B)[(size_t)(j) * (size_t)ldb + (size_t)(k)]                                      \
               : (B)[(size_t)(k) * (size_t)ldb + (size_t)(j)])

void tunep_cpu_gemm_f64(int threads, int trans_a, int trans_b, int M, int N, int K, double alpha,
                        const double *A, int lda, const double *B, int ldb, double beta, double *C,
                        int ldc)
{
    int nt = threads > 1 && (double)M * N * K >= (double)SPLIT_MIN_MACS ? threads : 1;
    (void)nt;
    CPU_PRAGMA(omp parallel for num_threads(nt) schedule(static) if(nt > 1))
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double acc = 0.0;
            for (int k = 0; k < K; k++)
                acc += OP_A(A, i, k) * OP_B(B, k, j);
            double *c = &C[(size_t)i * (size_t)ldc + (size_t)j];
            *c = beta == 0.0 ? alpha * acc : alpha * acc + beta * *c;
        }
    }
}

void tunep_cpu_gemm_naive(int trans_a, int trans_b, int M, int N, int K, float alpha,
                          const float *A, int lda, const float *B, int ldb, float beta, float *C,
                          int ldc)
{
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double acc = 0.0;
            for (int k = 0; k < K; k++)
                acc += (double)OP_A(A, i, k) * (double)OP_B(B, k, j);
            float *c = &C[(size_t)i * (size_t)ldc + (size_t)j];
            double prev = beta == 0.0f ? 0.0 : (double)beta * (double)*c;
            *c = (float)((double)alpha * acc + prev);
        }
    }
}
