/*
 * dropout.cu - inverted dropout with the post-LN residual fused:
 * out = dropout(inp) + res (res may be NULL), and its backward
 * dinp = mask dout / (1-p), dres = dout (written, not added).
 *
 * The mask is the CPU backend's, bit for bit: element i of a stream keeps
 * its value iff word (i mod 4) of Philox4x32-10 block i/4 keyed by the seed
 * (models/bert/bert_rng.h, compiled here as __host__ __device__) is at or
 * above tunep_dropout_threshold(p). One thread draws one Philox block and
 * serves its four elements. The product x * scale is rounded before the
 * residual is added (__fmul_rn: no FMA contraction), as on the CPU, so
 * forward outputs match the CPU exactly.
 */
#include "models/bert/bert_rng.h"
#include "models/cuda/cuda_common.cuh"

#define DROP_THREADS 256

static __global__ void dropout_fwd_kernel(float *out, const float *inp, const float *res, size_t n,
                                          uint32_t thr, float scale, uint64_t seed, uint64_t stream)
{
    size_t groups = (n + 3) / 4;
    for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < groups;
         g += (size_t)gridDim.x * blockDim.x) {
        uint32_t r[4] = {0, 0, 0, 0};
        if (thr > 0)
            tunep_philox4x32(r, g, stream, seed);
        for (int q = 0; q < 4; q++) {
            size_t i = 4 * g + (size_t)q;
            if (i >= n)
                break;
            float v = thr > 0 ? __fmul_rn(inp[i], r[q] >= thr ? scale : 0.0f) : inp[i];
            out[i] = res ? v + res[i] : v;
        }
    }
}

static __global__ void dropout_bwd_kernel(float *dinp, float *dres, const float *dout, size_t n,
                                          uint32_t thr, float scale, uint64_t seed, uint64_t stream)
{
    size_t groups = (n + 3) / 4;
    for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < groups;
         g += (size_t)gridDim.x * blockDim.x) {
        uint32_t r[4] = {0, 0, 0, 0};
        if (thr > 0)
            tunep_philox4x32(r, g, stream, seed);
        for (int q = 0; q < 4; q++) {
            size_t i = 4 * g + (size_t)q;
            if (i >= n)
                break;
            float d = dout[i];
            dinp[i] = thr > 0 ? __fmul_rn(d, r[q] >= thr ? scale : 0.0f) : d;
            if (dres)
                dres[i] = d;
        }
    }
}

extern "C" tune_status tunep_cuda_dropout_fwd(void *vctx, float *out, const float *inp,
                                              const float *res, size_t n, double p, uint64_t seed,
                                              uint64_t stream)
{
    TUNEP_CUDA_ENTER(c, vctx);
    if (n == 0)
        return TUNE_OK;
    uint32_t thr = tunep_dropout_threshold(p);
    float scale = (float)(1.0 / (1.0 - p));
    size_t groups = (n + 3) / 4;
    dropout_fwd_kernel<<<tunep_cuda_blocks(groups, DROP_THREADS), DROP_THREADS, 0, c->stream>>>(
        out, inp, res, n, thr, scale, seed, stream);
    TUNEP_CUDA_LAUNCHED(c);
    return TUNE_OK;
}

extern "C" tune_status tunep_cuda_dropout_bwd(void *vctx, float *dinp, float *dres,
                                              const float *dout, size_t n, double p, uint64_t seed,
                                              uint64_t stream)
{
    TUNEP_CUDA_ENTER(c, vctx);
    if (n == 0)
        return TUNE_OK;
    uint32_t thr = tunep_dropout_threshold(p);
    float scale = (float)(1.0 / (1.0 - p));
    size_t groups = (n + 3) / 4;
    dropout_bwd_kernel<<<tunep_cuda_blocks(groups, DROP_THREADS), DROP_THREADS, 0, c->stream>>>(
        dinp, dres, dout, n, thr, scale, seed, stream);
    TUNEP_CUDA_LAUNCHED(c);
    return TUNE_OK;
}
