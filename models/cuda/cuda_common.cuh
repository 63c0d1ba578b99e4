/*
 * cuda_common.cuh - what every .cu file of the CUDA backend shares: the
 * context (device, stream, cuBLAS handle and workspace, scratch), the macros
 * that turn CUDA and cuBLAS failures into a tune_status with the failing
 * call, file and line (ggml's CUDA_CHECK_GEN returning instead
 * of aborting), and the helpers several ops use: a row-major GEMM over
 * cuBLAS that takes the CPU backend's exact arguments, a deterministic
 * column sum, and warp reductions.
 *
 * Nothing here is global: each backend (one per trial) has its own context,
 * so trials sharing a GPU run on their own streams and handles.
 */
#ifndef TUNE_CUDA_COMMON_CUH
#define TUNE_CUDA_COMMON_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "models/cuda/cuda_backend.h"

/*
 * cuBLAS entry points, loaded with dlopen when the first context is made,
 * not linked: linking cuBLAS made every program that links libtune map its
 * ~600 MB of libraries at start, GPU or not (0.3 s per process and 30 ms
 * per fork here, which every CPU-only run and test paid). decltype keeps
 * cuBLAS's own declarations as the types.
 */
struct tunep_cublas_api {
    decltype(&cublasCreate_v2) create;
    decltype(&cublasDestroy_v2) destroy;
    decltype(&cublasSetStream_v2) set_stream;
    decltype(&cublasSetWorkspace_v2) set_workspace;
    decltype(&cublasSetMathMode) set_math_mode;
    decltype(&cublasSgemm_v2) sgemm;
    decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
    decltype(&cublasGetStatusString) status_string;
    decltype(&cublasGetStatusName) status_name;
};

struct tunep_cuda_ctx {
    int device;
    int tf32;
    char name[16];                  /* "cuda:N" */
    cudaStream_t stream;            /* non-blocking: never synchronises with the legacy stream */
    struct tunep_cublas_api cublas; /* the loaded library's functions */
    cublasHandle_t blas;            /* bound to stream, with blas_ws as its workspace */
    void *blas_ws;
    void *scratch; /* grown on demand; contents live for one launcher call */
    size_t scratch_size;
    int scratch_sync;    /* the device has no stream-ordered allocator: cudaMalloc/cudaFree */
    double *sumsq;       /* TUNEP_CUDA_SUMSQ_BLOCKS partial sums, then the total */
    tune_error last_err; /* the last launcher failure, for messages */
};

/* cuBLAS workspace per context: cuBLAS's documented recommendation for
 * Hopper is 32 MiB (cuBLAS docs, cublasSetWorkspace); smaller GPUs use less. */
#define TUNEP_CUDA_BLAS_WS_BYTES ((size_t)32 << 20)
/* Blocks of the first grad_sumsq pass; fixed, so the sum's order is too. */
#define TUNEP_CUDA_SUMSQ_BLOCKS 512

/* Records a failure in ctx->last_err and an error-level log line; returns
 * TUNE_ENOMEM for out-of-memory, else TUNE_EDEVICE. Clears CUDA's per-thread
 * last error, so a recoverable failure (an allocation) does not resurface at
 * the next launch check. */
tune_status tunep_cuda_fail(struct tunep_cuda_ctx *ctx, cudaError_t e, const char *what,
                            const char *file, int line);
tune_status tunep_cublas_fail(struct tunep_cuda_ctx *ctx, cublasStatus_t s, const char *what,
                              const char *file, int line);

#define TUNEP_CUDA_TRY(ctx, expr)                                                                  \
    do {                                                                                           \
        cudaError_t e_ = (expr);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return tunep_cuda_fail((ctx), e_, #expr, __FILE__, __LINE__);                          \
    } while (0)

#define TUNEP_CUBLAS_TRY(ctx, expr)                                                                \
    do {                                                                                           \
        cublasStatus_t s_ = (expr);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                           \
            return tunep_cublas_fail((ctx), s_, #expr, __FILE__, __LINE__);                        \
    } while (0)

/* After a <<<...>>> launch: a bad configuration shows up here. */
#define TUNEP_CUDA_LAUNCHED(ctx) TUNEP_CUDA_TRY((ctx), cudaGetLastError())

/* In a launcher: `c` is the context behind void *vctx, made current on this
 * thread (trial threads are pooled, and each context may be on another GPU). */
#define TUNEP_CUDA_ENTER(c, vctx)                                                                  \
    struct tunep_cuda_ctx *c = (struct tunep_cuda_ctx *)(vctx);                                    \
    TUNEP_CUDA_TRY(c, cudaSetDevice(c->device))

/* Scratch device memory of at least `bytes` for the current launcher call
 * (all work is on ctx->stream, so the next call may reuse it). */
tune_status tunep_cuda_scratch(struct tunep_cuda_ctx *ctx, size_t bytes, void **ret);

/* Blocks for a grid-stride loop over n items, at most 65535 * 32: beyond
 * that each thread takes several items. n must be > 0. */
static inline unsigned tunep_cuda_blocks(size_t n, unsigned threads)
{
    size_t b = (n + threads - 1) / threads;
    const size_t cap = (size_t)65535 * 32;
    return (unsigned)(b < cap ? b : cap);
}

/*
 * Row-major GEMM with the CPU backend's arguments (models/cpu/cpu_matmul.h):
 * C (M,N) = alpha op(A) op(B) + beta C, op(X) = X^T when trans_x. cuBLAS is
 * column-major, and a row-major matrix read column-major is its transpose,
 * so this computes C^T = op(B)^T op(A)^T: the operands swap places and keep
 * their own transposition flags. The batched form runs `count` such
 * products, operand i at X + i * strideX.
 */
tune_status tunep_cuda_gemm(struct tunep_cuda_ctx *ctx, int trans_a, int trans_b, int M, int N,
                            int K, float alpha, const float *A, int lda, const float *B, int ldb,
                            float beta, float *C, int ldc);
tune_status tunep_cuda_gemm_batched(struct tunep_cuda_ctx *ctx, int trans_a, int trans_b, int M,
                                    int N, int K, float alpha, const float *A, int lda,
                                    long long strideA, const float *B, int ldb, long long strideB,
                                    float beta, float *C, int ldc, long long strideC, int count);

/*
 * Column sums over N rows of C, deterministic (fixed row split and order):
 * dst_sum[c] += sum_r a[r,c] (skipped when dst_sum is NULL) and, when x is
 * not NULL, dst_xhat[c] += sum_r a[r,c] (x[r,c] - mean[r]) rstd[r]. The
 * bias gradients of Linear and the pooler and both LayerNorm parameter
 * gradients. Uses the scratch.
 */
tune_status tunep_cuda_col_sum(struct tunep_cuda_ctx *ctx, float *dst_sum, float *dst_xhat,
                               const float *a, const float *x, const float *mean, const float *rstd,
                               int N, int C);

/* out[r * ld + c] = b[c] for r < N, c < C: a bias as the GEMM's C operand (beta = 1). */
tune_status tunep_cuda_rows_set(struct tunep_cuda_ctx *ctx, float *out, const float *b, int N,
                                int C, int ld);

/* ---- device helpers ------------------------------------------------------ */

#define TUNEP_FULL_MASK 0xffffffffu

/* Sum and max over the 32 lanes of a warp (xor butterfly: every lane gets
 * the same result, combined in the same fixed order on every run). */
static __device__ __forceinline__ float tunep_warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(TUNEP_FULL_MASK, v, o);
    return v;
}

static __device__ __forceinline__ float tunep_warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(TUNEP_FULL_MASK, v, o));
    return v;
}

#endif /* TUNE_CUDA_COMMON_CUH */
