/*
 * pooler.cu - BERT's pooler on the first ([CLS]) token (Hugging Face
 * BertPooler): pre (B,C) = inp[:,0,:] . w^T + b, out = tanh(pre), and its
 * backward (ADDS into dw and db; WRITES dpre and dinp: the gradient at
 * t = 0, zero at every other position).
 *
 * The [CLS] rows of inp (B,T,C) are a (B,C) matrix with leading dimension
 * T*C, so the GEMMs read them in place, exactly as the CPU reference.
 */
#include "models/cuda/cuda_common.cuh"

static __global__ void tanh_kernel(float *out, const float *pre, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = tanhf(pre[i]);
}

/* dpre = dout (1 - out^2) */
static __global__ void tanh_bwd_kernel(float *dpre, const float *dout, const float *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dpre[i] = dout[i] * (1.0f - out[i] * out[i]);
}

/* Rows t = 1..T-1 of each sequence of x (B,T,C) set to 0. */
static __global__ void zero_rest_kernel(float *x, int B, int T, int C)
{
    size_t per = (size_t)(T - 1) * (size_t)C, n = (size_t)B * per;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[(i / per * (size_t)T + 1) * (size_t)C + i % per] = 0.0f;
}

extern "C" tune_status tunep_cuda_pooler_fwd(void *vctx, float *out, float *pre, const float *inp,
                                             const float *w, const float *b, int B, int T, int C)
{
    TUNEP_CUDA_ENTER(c, vctx);
    size_t n = (size_t)B * (size_t)C;
    if (n == 0)
        return TUNE_OK;
    tune_status st;
    if ((st = tunep_cuda_rows_set(c, pre, b, B, C, C)) != TUNE_OK ||
        (st = tunep_cuda_gemm(c, 0, 1, B, C, C, 1.0f, inp, T * C, w, C, 1.0f, pre, C)) != TUNE_OK)
        return st;
    tanh_kernel<<<tunep_cuda_blocks(n, 256), 256, 0, c->stream>>>(out, pre, n);
    TUNEP_CUDA_LAUNCHED(c);
    return TUNE_OK;
}

extern "C" tune_status tunep_cuda_pooler_bwd(void *vctx, float *dinp, float *dw, float *db,
                                             float *dpre, const float *dout, const float *out,
                                             const float *inp, const float *w, int B, int T, int C)
{
    TUNEP_CUDA_ENTER(c, vctx);
    size_t n = (size_t)B * (size_t)C;
    if (n == 0)
        return TUNE_OK;
    tanh_bwd_kernel<<<tunep_cuda_blocks(n, 256), 256, 0, c->stream>>>(dpre, dout, out, n);
    TUNEP_CUDA_LAUNCHED(c);
    if (T > 1) {
        size_t rest = n * (size_t)(T - 1);
        zero_rest_kernel<<<tunep_cuda_blocks(rest, 256), 256, 0, c->stream>>>(dinp, B, T, C);
        TUNEP_CUDA_LAUNCHED(c);
    }
    tune_status st;
    if ((st = tunep_cuda_gemm(c, 0, 0, B, C, C, 1.0f, dpre, C, w, C, 0.0f, dinp, T * C)) !=
            TUNE_OK ||
        (st = tunep_cuda_gemm(c, 1, 0, C, C, B, 1.0f, dpre, C, inp, T * C, 1.0f, dw, C)) != TUNE_OK)
        return st;
    return tunep_cuda_col_sum(c, db, NULL, dpre, NULL, NULL, NULL, B, C);
}
