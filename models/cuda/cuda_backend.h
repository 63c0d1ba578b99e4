/*
 * cuda_backend.h - the CUDA + cuBLAS backend of the BERT model, as plain C.
 *
 * No CUDA type crosses this header: the context is opaque and
 * every launcher has exactly the signature of its struct tunep_kernels
 * member (models/bert/kernels_tmpl.h), so cuda_backend.c can fill the table
 * with designated initializers and the C compiler checks each type. The
 * launchers are implemented in one .cu file per op family and enqueue work
 * on the context's stream; they return TUNE_EDEVICE on a launch or cuBLAS
 * failure, with the detail (call, CUDA's message, file:line) in the
 * context's last error and in an error-level log line, because the kernel
 * signatures carry no tune_error.
 *
 * In a build without CUDA (-Dcuda=disabled, or no nvcc/cuBLAS found),
 * cuda_none.c provides the device functions below, each answering
 * TUNE_EUNSUPPORTED, and no launcher exists.
 */
#ifndef TUNE_CUDA_BACKEND_H
#define TUNE_CUDA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "tune.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tunep_backend;
struct tunep_cuda_ctx;

/* ---- devices (every build) ----------------------------------------------- */

/*
 * Number of CUDA devices. TUNE_OK with *ret_count >= 1; otherwise why there
 * is none, as TUNE_EDEVICE (no driver, a driver older than the runtime, no
 * device; err says which, with the driver's and runtime's CUDA versions) or
 * TUNE_EUNSUPPORTED (this build has no CUDA backend). *ret_count is 0 then.
 */
tune_status tunep_cuda_device_count(int *ret_count, tune_error *err);

/* Free and total memory of device `device` in bytes (cudaMemGetInfo). */
tune_status tunep_cuda_mem_info(int device, size_t *ret_free, size_t *ret_total, tune_error *err);

/* The device's name ("NVIDIA H200") into buf; "" on failure. */
tune_status tunep_cuda_device_name(int device, char *buf, size_t size, tune_error *err);

/*
 * Sticky errors. Some CUDA errors (an illegal or misaligned address, an
 * illegal instruction, a device-side assert, a launch failure or timeout)
 * corrupt the device's CUDA context for the rest of the process: every later
 * call on that device, by any trial, fails the same way. The backend marks
 * the device when one of them fails a trial (the trial's message says so),
 * refuses new backends on it, and the GPU pool's users stop placing trials
 * on it. Only a new process clears it.
 */
#define TUNEP_CUDA_MAX_DEVICES 256
/* 1 when cuda_error (a cudaError_t value) is one of the sticky errors. */
int tunep_cuda_error_is_sticky(int cuda_error);
/* 1 when a sticky error hit `device` in this process (0 without CUDA). */
int tunep_cuda_device_broken(int device);

/* How a CUDA backend computes. */
struct tunep_cuda_options {
    int device; /* CUDA device index, >= 0 */
    int tf32;   /* 1: cuBLAS GEMMs may round their inputs to TF32 (tensor cores); 0: fp32 */
};

/*
 * Creates a CUDA backend on opt->device: its own non-blocking stream, a
 * cuBLAS handle bound to that stream with its own workspace, and scratch
 * memory, so that trials sharing a GPU never share a handle or a queue. Only
 * the float kernel table is filled (kernels_f64 is NULL: gradient checks run
 * on the CPU). @return TUNE_OK, TUNE_EINVAL, TUNE_EDEVICE (no such device,
 * driver problems), TUNE_ENOMEM (host or device memory), TUNE_EUNSUPPORTED
 * (no CUDA in this build); *ret_backend untouched on failure.
 */
tune_status tunep_cuda_backend_new(const struct tunep_cuda_options *opt,
                                   struct tunep_backend **ret_backend, tune_error *err);
/* Waits for queued work, then releases everything. NULL is a no-op. Models
 * using the backend must be freed first. */
void tunep_cuda_backend_free(struct tunep_backend *backend);

/* ---- the context (CUDA builds only) -------------------------------------- */

tune_status tunep_cuda_ctx_new(const struct tunep_cuda_options *opt,
                               struct tunep_cuda_ctx **ret_ctx, tune_error *err);
void tunep_cuda_ctx_free(struct tunep_cuda_ctx *ctx);
/* "cuda:N", for messages. Borrowed; valid while ctx lives. */
const char *tunep_cuda_ctx_name(const struct tunep_cuda_ctx *ctx);
/* The last failure of a launcher (err->code is TUNE_OK when there was none). */
const tune_error *tunep_cuda_ctx_last_error(const struct tunep_cuda_ctx *ctx);

/* The memory members of struct tunep_backend (ctx is the struct tunep_cuda_ctx). */
tune_status tunep_cuda_alloc(void *ctx, size_t size, void **ret_ptr, tune_error *err);
void tunep_cuda_free(void *ctx, void *ptr);
tune_status tunep_cuda_upload(void *ctx, void *dst, const void *src, size_t size, tune_error *err);
tune_status tunep_cuda_download(void *ctx, void *dst, const void *src, size_t size,
                                tune_error *err);
tune_status tunep_cuda_memzero(void *ctx, void *dst, size_t size, tune_error *err);
tune_status tunep_cuda_sync(void *ctx, tune_error *err);

/* ---- the kernels: the members of struct tunep_kernels, in its order ------ */

/* embed.cu */
tune_status tunep_cuda_embed_fwd(void *ctx, float *out, const int32_t *ids, const int32_t *types,
                                 const float *wte, const float *wpe, const float *wtt, int B, int T,
                                 int C);
tune_status tunep_cuda_embed_bwd(void *ctx, float *dwte, float *dwpe, float *dwtt,
                                 const float *dout, const int32_t *ids, const int32_t *types, int B,
                                 int T, int C);
/* layernorm.cu */
tune_status tunep_cuda_layernorm_fwd(void *ctx, float *out, float *mean, float *rstd,
                                     const float *inp, const float *w, const float *b, int N, int C,
                                     double eps);
tune_status tunep_cuda_layernorm_bwd(void *ctx, float *dinp, float *dw, float *db,
                                     const float *dout, const float *inp, const float *w,
                                     const float *mean, const float *rstd, int N, int C);
/* matmul.cu */
tune_status tunep_cuda_matmul_fwd(void *ctx, float *out, const float *inp, const float *w,
                                  const float *b, int N, int IC, int OC);
tune_status tunep_cuda_matmul_bwd(void *ctx, float *dinp, float *dw, float *db, const float *dout,
                                  const float *inp, const float *w, int N, int IC, int OC,
                                  int accumulate);
/* attention.cu */
tune_status tunep_cuda_attention_fwd(void *ctx, float *out, float *att, float *att_drop,
                                     const float *q, const float *k, const float *v,
                                     const int32_t *mask, int B, int T, int C, int NH, int ld,
                                     double p, uint64_t seed, uint64_t stream);
tune_status tunep_cuda_attention_bwd(void *ctx, float *dq, float *dk, float *dv, float *dpreatt,
                                     float *datt, float *datt_drop, const float *dout,
                                     const float *q, const float *k, const float *v,
                                     const float *att, const float *att_drop, const int32_t *mask,
                                     int B, int T, int C, int NH, int ld, double p, uint64_t seed,
                                     uint64_t stream);
/* gelu.cu */
tune_status tunep_cuda_gelu_fwd(void *ctx, float *out, const float *inp, size_t n);
tune_status tunep_cuda_gelu_bwd(void *ctx, float *dinp, const float *dout, const float *inp,
                                size_t n);
/* softmax_xent.cu */
tune_status tunep_cuda_softmax_xent_fwd(void *ctx, float *losses, float *probs, const float *logits,
                                        const int32_t *labels, int B, int K);
tune_status tunep_cuda_softmax_xent_bwd(void *ctx, float *dlogits, const float *dlosses,
                                        const float *probs, const int32_t *labels, int B, int K);
/* pooler.cu */
tune_status tunep_cuda_pooler_fwd(void *ctx, float *out, float *pre, const float *inp,
                                  const float *w, const float *b, int B, int T, int C);
tune_status tunep_cuda_pooler_bwd(void *ctx, float *dinp, float *dw, float *db, float *dpre,
                                  const float *dout, const float *out, const float *inp,
                                  const float *w, int B, int T, int C);
/* dropout.cu */
tune_status tunep_cuda_dropout_fwd(void *ctx, float *out, const float *inp, const float *res,
                                   size_t n, double p, uint64_t seed, uint64_t stream);
tune_status tunep_cuda_dropout_bwd(void *ctx, float *dinp, float *dres, const float *dout, size_t n,
                                   double p, uint64_t seed, uint64_t stream);
/* adamw.cu */
tune_status tunep_cuda_adamw_step(void *ctx, float *param, float *m, float *v, const float *grad,
                                  size_t n, double lr, double beta1, double beta2, double eps,
                                  double weight_decay, double grad_scale, long step);
/* grad_sumsq.cu */
tune_status tunep_cuda_grad_sumsq(void *ctx, double *ret_sumsq, const float *g, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* TUNE_CUDA_BACKEND_H */
