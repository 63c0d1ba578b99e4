/*
 * grad_sumsq.cu - the sum of squares of n gradient values, in double, for
 * global-norm clipping (torch.nn.utils.clip_grad_norm_); the result is
 * copied to the host.
 *
 * Deterministic: TUNEP_CUDA_SUMSQ_BLOCKS blocks (fewer for small n, a
 * function of n only) each sum a fixed grid-stride subset per thread and
 * reduce it with a fixed shared-memory tree; one block then adds the block
 * sums with the same tree. No atomics, so the same gradients give the same
 * bits on every run (the CPU reference is deterministic the same way, with
 * another order, so the two agree to double rounding only).
 */
#include "models/cuda/cuda_common.cuh"

#define SUMSQ_THREADS 256

/* Fixed-order tree over the SUMSQ_THREADS values of s; thread 0 gets the total. */
static __device__ double block_sum(double *s)
{
    for (int w = SUMSQ_THREADS / 2; w > 0; w >>= 1) {
        __syncthreads();
        if ((int)threadIdx.x < w)
            s[threadIdx.x] += s[threadIdx.x + w];
    }
    __syncthreads();
    return s[0];
}

static __global__ void sumsq_partial_kernel(double *part, const float *g, size_t n)
{
    __shared__ double s[SUMSQ_THREADS];
    double acc = 0.0;
    for (size_t i = blockIdx.x * (size_t)SUMSQ_THREADS + threadIdx.x; i < n;
         i += (size_t)gridDim.x * SUMSQ_THREADS) {
        double x = (double)g[i];
        acc += x * x;
    }
    s[threadIdx.x] = acc;
    double total = block_sum(s);
    if (threadIdx.x == 0)
        part[blockIdx.x] = total;
}

/* part[nblocks] = sum of part[0 .. nblocks) */
static __global__ void sumsq_final_kernel(double *part, int nblocks)
{
    __shared__ double s[SUMSQ_THREADS];
    double acc = 0.0;
    for (int i = threadIdx.x; i < nblocks; i += SUMSQ_THREADS)
        acc += part[i];
    s[threadIdx.x] = acc;
    double total = block_sum(s);
    if (threadIdx.x == 0)
        part[nblocks] = total;
}

extern "C" tune_status tunep_cuda_grad_sumsq(void *vctx, double *ret_sumsq, const float *g,
                                             size_t n)
{
    TUNEP_CUDA_ENTER(c, vctx);
    if (n == 0) {
        *ret_sumsq = 0.0;
        return TUNE_OK;
    }
    size_t want = (n + SUMSQ_THREADS - 1) / SUMSQ_THREADS;
    int nblocks = want < TUNEP_CUDA_SUMSQ_BLOCKS ? (int)want : TUNEP_CUDA_SUMSQ_BLOCKS;
    sumsq_partial_kernel<<<(unsigned)nblocks, SUMSQ_THREADS, 0, c->stream>>>(c->sumsq, g, n);
    TUNEP_CUDA_LAUNCHED(c);
    sumsq_final_kernel<<<1, SUMSQ_THREADS, 0, c->stream>>>(c->sumsq, nblocks);
    TUNEP_CUDA_LAUNCHED(c);
    double total = 0.0;
    TUNEP_CUDA_TRY(c, cudaMemcpyAsync(&total, c->sumsq + nblocks, sizeof total,
                                      cudaMemcpyDeviceToHost, c->stream));
    TUNEP_CUDA_TRY(c, cudaStreamSynchronize(c->stream));
    *ret_sumsq = total;
    return TUNE_OK;
}
