/*
 * gelu.cu - GELU in the erf form BERT uses (torch.nn.functional.gelu,
 * approximate='none'): out = x/2 (1 + erf(x/sqrt 2)), and its backward
 * dinp = dout (Phi(x) + x phi(x)), phi the standard normal density.
 *
 * CUDA's erff and expf are accurate to 2 ulp (CUDA C Programming Guide,
 * "Mathematical Functions"); the build never uses --use_fast_math, so these
 * are not the fast intrinsics (llm.c's GeLU incident).
 * Element-wise over n elements with grid-stride loops.
 */
#include "models/cuda/cuda_common.cuh"

#define GELU_THREADS 256
#define RSQRT2       0.70710678118654752440f /* 1/sqrt(2) */
#define RSQRT2PI     0.39894228040143267794f /* 1/sqrt(2 pi) */

static __global__ void gelu_fwd_kernel(float *out, const float *inp, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float x = inp[i];
        out[i] = x * 0.5f * (1.0f + erff(x * RSQRT2));
    }
}

static __global__ void gelu_bwd_kernel(float *dinp, const float *dout, const float *inp, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float x = inp[i];
        float cdf = 0.5f * (1.0f + erff(x * RSQRT2));
        float pdf = expf(-0.5f * x * x) * RSQRT2PI;
        dinp[i] = dout[i] * (cdf + x * pdf);
    }
}

extern "C" tune_status tunep_cuda_gelu_fwd(void *vctx, float *out, const float *inp, size_t n)
{
    TUNEP_CUDA_ENTER(c, vctx);
    if (n == 0)
        return TUNE_OK;
    gelu_fwd_kernel<<<tunep_cuda_blocks(n, GELU_THREADS), GELU_THREADS, 0, c->stream>>>(out, inp,
                                                                                        n);
    TUNEP_CUDA_LAUNCHED(c);
    return TUNE_OK;
}

extern "C" tune_status tunep_cuda_gelu_bwd(void *vctx, float *dinp, const float *dout,
                                           const float *inp, size_t n)
{
    TUNEP_CUDA_ENTER(c, vctx);
    if (n == 0)
        return TUNE_OK;
    gelu_bwd_kernel<<<tunep_cuda_blocks(n, GELU_THREADS), GELU_THREADS, 0, c->stream>>>(dinp, dout,
                                                                                        inp, n);
    TUNEP_CUDA_LAUNCHED(c);
    return TUNE_OK;
}
