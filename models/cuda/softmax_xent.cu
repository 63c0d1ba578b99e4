/*
 * softmax_xent.cu - softmax cross-entropy per example (torch's
 * F.cross_entropy with reduction='none'): losses (B) = logsumexp(logits) -
 * logit[label], probs (B,K) saved for the backward; and
 * dlogits = dlosses[b] (probs - onehot(label)).
 *
 * One thread per example, in double, as the CPU reference: K is the number
 * of labels (2 for SST-2), far too small to parallelise within a row, and
 * log1p of the non-maximal terms keeps a confident prediction's tiny loss
 * exact.
 */
#include "models/cuda/cuda_common.cuh"

static __global__ void softmax_xent_fwd_kernel(float *losses, float *probs, const float *logits,
                                               const int32_t *labels, int B, int K)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= B)
        return;
    const float *l = logits + (size_t)b * (size_t)K;
    float *pr = probs + (size_t)b * (size_t)K;
    int jmax = 0;
    for (int j = 1; j < K; j++)
        jmax = l[j] > l[jmax] ? j : jmax;
    double mx = (double)l[jmax];
    double rest = 0.0;
    for (int j = 0; j < K; j++)
        rest += j == jmax ? 0.0 : exp((double)l[j] - mx);
    double sum = 1.0 + rest;
    for (int j = 0; j < K; j++)
        pr[j] = (float)(exp((double)l[j] - mx) / sum);
    losses[b] = (float)(log1p(rest) + (mx - (double)l[labels[b]]));
}

static __global__ void softmax_xent_bwd_kernel(float *dlogits, const float *dlosses,
                                               const float *probs, const int32_t *labels, int B,
                                               int K)
{
    size_t n = (size_t)B * (size_t)K;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int b = (int)(i / (size_t)K), j = (int)(i % (size_t)K);
        dlogits[i] = dlosses[b] * (probs[i] - (j == labels[b] ? 1.0f : 0.0f));
    }
}

extern "C" tune_status tunep_cuda_softmax_xent_fwd(void *vctx, float *losses, float *probs,
                                                   const float *logits, const int32_t *labels,
                                                   int B, int K)
{
    TUNEP_CUDA_ENTER(c, vctx);
    if (B <= 0 || K <= 0)
        return TUNE_OK;
    softmax_xent_fwd_kernel<<<(unsigned)((B + 127) / 128), 128, 0, c->stream>>>(
        losses, probs, logits, labels, B, K);
    TUNEP_CUDA_LAUNCHED(c);
    return TUNE_OK;
}

extern "C" tune_status tunep_cuda_softmax_xent_bwd(void *vctx, float *dlogits, const float *dlosses,
                                                   const float *probs, const int32_t *labels, int B,
                                                   int K)
{
    TUNEP_CUDA_ENTER(c, vctx);
    size_t n = (size_t)B * (size_t)K;
    if (B <= 0 || K <= 0)
        return TUNE_OK;
    softmax_xent_bwd_kernel<<<tunep_cuda_blocks(n, 256), 256, 0, c->stream>>>(dlogits, dlosses,
                                                                              probs, labels, B, K);
    TUNEP_CUDA_LAUNCHED(c);
    return TUNE_OK;
}
