/*
 * matmul.cu - torch.nn.Linear on cuBLAS: out (N,OC) = inp (N,IC) . w^T + b
 * with w (OC,IC) row-major as in Hugging Face checkpoints, and its
 * backward; plus the row-major GEMM wrappers every op uses.
 *
 * The wrappers take the CPU backend's GEMM arguments unchanged
 * (cpu_kernels_tmpl.c), so each CUDA op issues the same products as its CPU
 * reference; the column-major translation lives here once. The bias is the
 * GEMM's C operand with beta = 1, as torch.addmm and the CPU backend; its
 * gradient is a deterministic column sum (no atomics).
 * TF32: the context's cuBLAS math mode (cuda_backend.cu) decides; fp32 by default.
 */
#include "models/cuda/cuda_common.cuh"

static cublasOperation_t op(int trans)
{
    return trans ? CUBLAS_OP_T : CUBLAS_OP_N;
}

tune_status tunep_cuda_gemm(struct tunep_cuda_ctx *ctx, int trans_a, int trans_b, int M, int N,
                            int K, float alpha, const float *A, int lda, const float *B, int ldb,
                            float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0)
        return TUNE_OK;
    /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T. */
    TUNEP_CUBLAS_TRY(ctx, ctx->cublas.sgemm(ctx->blas, op(trans_b), op(trans_a), N, M, K, &alpha, B,
                                            ldb, A, lda, &beta, C, ldc));
    return TUNE_OK;
}

tune_status tunep_cuda_gemm_batched(struct tunep_cuda_ctx *ctx, int trans_a, int trans_b, int M,
                                    int N, int K, float alpha, const float *A, int lda,
                                    long long strideA, const float *B, int ldb, long long strideB,
                                    float beta, float *C, int ldc, long long strideC, int count)
{
    if (M <= 0 || N <= 0 || count <= 0)
        return TUNE_OK;
    TUNEP_CUBLAS_TRY(ctx, ctx->cublas.sgemm_strided_batched(
                              ctx->blas, op(trans_b), op(trans_a), N, M, K, &alpha, B, ldb, strideB,
                              A, lda, strideA, &beta, C, ldc, strideC, count));
    return TUNE_OK;
}

/* out[r * ld + c] = b[c]. */
static __global__ void rows_set_kernel(float *out, const float *b, int N, int C, int ld)
{
    size_t n = (size_t)N * (size_t)C;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / (size_t)C, c = i % (size_t)C;
        out[r * (size_t)ld + c] = b[c];
    }
}

tune_status tunep_cuda_rows_set(struct tunep_cuda_ctx *ctx, float *out, const float *b, int N,
                                int C, int ld)
{
    size_t n = (size_t)N * (size_t)C;
    if (n == 0)
        return TUNE_OK;
    rows_set_kernel<<<tunep_cuda_blocks(n, 256), 256, 0, ctx->stream>>>(out, b, N, C, ld);
    TUNEP_CUDA_LAUNCHED(ctx);
    return TUNE_OK;
}

extern "C" tune_status tunep_cuda_matmul_fwd(void *vctx, float *out, const float *inp,
                                             const float *w, const float *b, int N, int IC, int OC)
{
    TUNEP_CUDA_ENTER(c, vctx);
    if (b) {
        tune_status st = tunep_cuda_rows_set(c, out, b, N, OC, OC);
        if (st != TUNE_OK)
            return st;
    }
    return tunep_cuda_gemm(c, 0, 1, N, OC, IC, 1.0f, inp, IC, w, IC, b ? 1.0f : 0.0f, out, OC);
}

extern "C" tune_status tunep_cuda_matmul_bwd(void *vctx, float *dinp, float *dw, float *db,
                                             const float *dout, const float *inp, const float *w,
                                             int N, int IC, int OC, int accumulate)
{
    TUNEP_CUDA_ENTER(c, vctx);
    tune_status st;
    if (dinp) /* (N,IC) (+)= (N,OC) . (OC,IC) */
        if ((st = tunep_cuda_gemm(c, 0, 0, N, IC, OC, 1.0f, dout, OC, w, IC,
                                  accumulate ? 1.0f : 0.0f, dinp, IC)))
            return st;
    /* (OC,IC) += (N,OC)^T . (N,IC) */
    if ((st = tunep_cuda_gemm(c, 1, 0, OC, IC, N, 1.0f, dout, OC, inp, IC, 1.0f, dw, IC)))
        return st;
    if (db)
        return tunep_cuda_col_sum(c, db, NULL, dout, NULL, NULL, NULL, N, OC);
    return TUNE_OK;
}
