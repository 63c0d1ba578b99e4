/*
 * layernorm.cu - LayerNorm over the last axis of N rows of C channels
 * (torch.nn.LayerNorm: biased variance, out = (x - mean) rstd w + b) and
 * its backward, one warp per row as in llm.c's layernorm kernels.
 *
 * Forward: out (N,C); mean, rstd (N) saved for the backward. The variance
 * is two-pass, (x - mean)^2, as the CPU reference; the warp sums are xor
 * butterflies, fixed in order. Backward (WRITES dinp, ADDS into dw, db):
 * dx = rstd (dn - mean(dn) - xhat mean(dn xhat)) with dn = dout w, per row;
 * dw += sum_r dout xhat and db += sum_r dout through the deterministic
 * column sum (reduce.cu).
 */
#include "models/cuda/cuda_common.cuh"

#define LN_THREADS 128 /* 4 warps, 4 rows per block */

static __global__ void layernorm_fwd_kernel(float *out, float *mean, float *rstd, const float *inp,
                                            const float *w, const float *b, int N, int C, float eps)
{
    int row = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32);
    int lane = threadIdx.x % 32;
    if (row >= N) /* whole warps leave together: the shuffles below see all 32 lanes */
        return;
    const float *x = inp + (size_t)row * (size_t)C;
    float s = 0.0f;
    for (int c = lane; c < C; c += 32)
        s += x[c];
    float m = tunep_warp_sum(s) / (float)C;
    float v = 0.0f;
    for (int c = lane; c < C; c += 32) {
        float d = x[c] - m;
        v += d * d;
    }
    float rs = 1.0f / sqrtf(tunep_warp_sum(v) / (float)C + eps);
    float *o = out + (size_t)row * (size_t)C;
    for (int c = lane; c < C; c += 32)
        o[c] = (x[c] - m) * rs * w[c] + b[c];
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = rs;
    }
}

static __global__ void layernorm_bwd_kernel(float *dinp, const float *dout, const float *inp,
                                            const float *w, const float *mean, const float *rstd,
                                            int N, int C)
{
    int row = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32);
    int lane = threadIdx.x % 32;
    if (row >= N)
        return;
    const float *x = inp + (size_t)row * (size_t)C;
    const float *d = dout + (size_t)row * (size_t)C;
    float m = mean[row], s = rstd[row];
    float sum_dn = 0.0f, sum_dn_xhat = 0.0f;
    for (int c = lane; c < C; c += 32) {
        float dn = d[c] * w[c];
        sum_dn += dn;
        sum_dn_xhat += dn * ((x[c] - m) * s);
    }
    float a = tunep_warp_sum(sum_dn) / (float)C;
    float bb = tunep_warp_sum(sum_dn_xhat) / (float)C;
    float *dx = dinp + (size_t)row * (size_t)C;
    for (int c = lane; c < C; c += 32) {
        float xhat = (x[c] - m) * s;
        dx[c] = s * (d[c] * w[c] - a - xhat * bb);
    }
}

static unsigned warp_rows_blocks(int N)
{
    return (unsigned)(((size_t)N * 32 + LN_THREADS - 1) / LN_THREADS);
}

extern "C" tune_status tunep_cuda_layernorm_fwd(void *vctx, float *out, float *mean, float *rstd,
                                                const float *inp, const float *w, const float *b,
                                                int N, int C, double eps)
{
    TUNEP_CUDA_ENTER(c, vctx);
    if (N <= 0 || C <= 0)
        return TUNE_OK;
    layernorm_fwd_kernel<<<warp_rows_blocks(N), LN_THREADS, 0, c->stream>>>(out, mean, rstd, inp, w,
                                                                            b, N, C, (float)eps);
    TUNEP_CUDA_LAUNCHED(c);
    return TUNE_OK;
}

extern "C" tune_status tunep_cuda_layernorm_bwd(void *vctx, float *dinp, float *dw, float *db,
                                                const float *dout, const float *inp, const float *w,
                                                const float *mean, const float *rstd, int N, int C)
{
    TUNEP_CUDA_ENTER(c, vctx);
    if (N <= 0 || C <= 0)
        return TUNE_OK;
    layernorm_bwd_kernel<<<warp_rows_blocks(N), LN_THREADS, 0, c->stream>>>(dinp, dout, inp, w,
                                                                            mean, rstd, N, C);
    TUNEP_CUDA_LAUNCHED(c);
    return tunep_cuda_col_sum(c, db, dw, dout, inp, mean, rstd, N, C);
}
