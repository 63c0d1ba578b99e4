/*
 * cuda_backend.c - struct tunep_backend for CUDA: the context from
 * cuda_backend.cu, its memory members, and the float kernel table filled
 * with the .cu launchers. Written in C so the table uses designated
 * initializers and the compiler checks every launcher's type against its
 * struct tunep_kernels member (models/bert/kernels_tmpl.h).
 */
#include "models/cuda/cuda_backend.h"

#include "base/base.h"
#include "models/bert/backend.h"

static const struct tunep_kernels cuda_kernels = {
    .embed_fwd = tunep_cuda_embed_fwd,
    .embed_bwd = tunep_cuda_embed_bwd,
    .layernorm_fwd = tunep_cuda_layernorm_fwd,
    .layernorm_bwd = tunep_cuda_layernorm_bwd,
    .matmul_fwd = tunep_cuda_matmul_fwd,
    .matmul_bwd = tunep_cuda_matmul_bwd,
    .attention_fwd = tunep_cuda_attention_fwd,
    .attention_bwd = tunep_cuda_attention_bwd,
    .gelu_fwd = tunep_cuda_gelu_fwd,
    .gelu_bwd = tunep_cuda_gelu_bwd,
    .softmax_xent_fwd = tunep_cuda_softmax_xent_fwd,
    .softmax_xent_bwd = tunep_cuda_softmax_xent_bwd,
    .pooler_fwd = tunep_cuda_pooler_fwd,
    .pooler_bwd = tunep_cuda_pooler_bwd,
    .dropout_fwd = tunep_cuda_dropout_fwd,
    .dropout_bwd = tunep_cuda_dropout_bwd,
    .adamw_step = tunep_cuda_adamw_step,
    .grad_sumsq = tunep_cuda_grad_sumsq,
};

struct cuda_backend {
    struct tunep_backend base; /* first: the public part */
    struct tunep_cuda_ctx *ctx;
};

tune_status tunep_cuda_backend_new(const struct tunep_cuda_options *opt,
                                   struct tunep_backend **ret_backend, tune_error *err)
{
    if (!opt || !ret_backend)
        return tunep_error_set(err, TUNE_EINVAL, "cuda backend: NULL argument");
    if (opt->device < 0)
        return tunep_error_set(err, TUNE_EINVAL, "cuda backend: invalid device %d", opt->device);
    struct cuda_backend *cb = tunep_malloc(sizeof *cb);
    if (!cb)
        return tunep_error_set(err, TUNE_ENOMEM, "cuda backend: out of memory");
    tune_status st = tunep_cuda_ctx_new(opt, &cb->ctx, err);
    if (st != TUNE_OK) {
        tunep_free(cb);
        return st;
    }
    cb->base = (struct tunep_backend){
        .name = "cuda",
        .ctx = cb->ctx,
        .kernels = &cuda_kernels,
        .kernels_f64 = NULL,
        .alloc = tunep_cuda_alloc,
        .free = tunep_cuda_free,
        .upload = tunep_cuda_upload,
        .download = tunep_cuda_download,
        .memzero = tunep_cuda_memzero,
        .sync = tunep_cuda_sync,
    };
    *ret_backend = &cb->base;
    return TUNE_OK;
}

void tunep_cuda_backend_free(struct tunep_backend *backend)
{
    if (!backend)
        return;
    /* base is the first member, so this is the block tunep_malloc returned. */
    struct cuda_backend *cb = (struct cuda_backend *)(void *)backend;
    tunep_cuda_ctx_free(cb->ctx);
    tunep_free(cb);
}
