/*
 * adamw.cu - one torch.optim.AdamW step on n elements (PyTorch 1.13's
 * _single_tensor_adamw order, as the CPU reference): the gradient scaled by
 * grad_scale (clipping), param *= 1 - lr wd, m and v updated, then
 * param -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps) with bc_i = 1 - beta_i^t.
 * Overwrites param, m and v. The scalars are computed once in double on the
 * host and rounded to float, as the CPU backend rounds them.
 */
#include <math.h>

#include "models/cuda/cuda_common.cuh"

struct adamw_consts {
    float decay, b1, b2, one_b1, one_b2, step_size, bc2_sqrt, eps, gs;
    int scaled; /* grad_scale != 1 */
};

static __global__ void adamw_kernel(float *param, float *m, float *v, const float *grad, size_t n,
                                    struct adamw_consts k)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float g = k.scaled ? grad[i] * k.gs : grad[i];
        float pi = param[i] * k.decay;
        float mi = m[i] * k.b1 + g * k.one_b1;
        float vi = v[i] * k.b2 + g * g * k.one_b2;
        float denom = sqrtf(vi) / k.bc2_sqrt + k.eps;
        param[i] = pi - k.step_size * (mi / denom);
        m[i] = mi;
        v[i] = vi;
    }
}

extern "C" tune_status tunep_cuda_adamw_step(void *vctx, float *param, float *m, float *v,
                                             const float *grad, size_t n, double lr, double beta1,
                                             double beta2, double eps, double weight_decay,
                                             double grad_scale, long step)
{
    TUNEP_CUDA_ENTER(c, vctx);
    if (n == 0)
        return TUNE_OK;
    double bc1 = 1.0 - pow(beta1, (double)step);
    double bc2 = 1.0 - pow(beta2, (double)step);
    struct adamw_consts k;
    k.decay = (float)(1.0 - lr * weight_decay);
    k.b1 = (float)beta1;
    k.b2 = (float)beta2;
    k.one_b1 = (float)(1.0 - beta1);
    k.one_b2 = (float)(1.0 - beta2);
    k.step_size = (float)(lr / bc1);
    k.bc2_sqrt = (float)sqrt(bc2);
    k.eps = (float)eps;
    k.gs = (float)grad_scale;
    k.scaled = grad_scale != 1.0;
    adamw_kernel<<<tunep_cuda_blocks(n, 256), 256, 0, c->stream>>>(param, m, v, grad, n, k);
    TUNEP_CUDA_LAUNCHED(c);
    return TUNE_OK;
}
