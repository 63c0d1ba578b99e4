/*
 * cuda_backend.cu - the CUDA backend's context and memory side: device
 * discovery with a reason when there is no usable GPU, one non-blocking
 * stream, one cuBLAS handle and workspace, and scratch per context, and the
 * memory members of struct tunep_backend (alloc, free, upload, download,
 * memzero, sync), all on the context's stream.
 *
 * Invariants: nothing is global but one flag per device saying that a
 * sticky error hit it (tunep_cuda_device_broken); every entry point first
 * makes its context's device current on the calling thread (trial threads
 * are pooled and contexts may sit on different GPUs); every CUDA or cuBLAS failure
 * becomes a tune_status whose text names the call, CUDA's message and
 * file:line. Copies synchronise before returning, so the host buffer may be
 * reused or read at once, as with the CPU backend.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "models/cuda/cuda_common.cuh"

extern "C" {
#include "base/base.h"
}

/* __FILE__ from the models/ folder on ("../models/cuda/x.cu" -> "models/cuda/x.cu"). */
static const char *short_file(const char *file)
{
    const char *p = strstr(file, "models/");
    return p ? p : file;
}

/* ---- sticky errors ------------------------------------------------------- */

/* Devices whose CUDA context a sticky error has corrupted in this process
 * (written once, 0 -> 1, read by any thread: atomics). */
static int broken[TUNEP_CUDA_MAX_DEVICES];

extern "C" int tunep_cuda_error_is_sticky(int cuda_error)
{
    switch (cuda_error) {
        case cudaErrorIllegalAddress:
        case cudaErrorLaunchTimeout:
        case cudaErrorAssert:
        case cudaErrorHardwareStackError:
        case cudaErrorIllegalInstruction:
        case cudaErrorMisalignedAddress:
        case cudaErrorInvalidAddressSpace:
        case cudaErrorInvalidPc:
        case cudaErrorLaunchFailure: return 1;
        default: return 0;
    }
}

extern "C" int tunep_cuda_device_broken(int device)
{
    if (device < 0 || device >= TUNEP_CUDA_MAX_DEVICES)
        return 0;
    return __atomic_load_n(&broken[device], __ATOMIC_ACQUIRE);
}

/* For a sticky e: marks ctx's device broken and returns what the message
 * adds; "" otherwise. */
static const char *note_sticky(const struct tunep_cuda_ctx *ctx, cudaError_t e)
{
    if (!tunep_cuda_error_is_sticky((int)e))
        return "";
    if (ctx->device >= 0 && ctx->device < TUNEP_CUDA_MAX_DEVICES)
        __atomic_store_n(&broken[ctx->device], 1, __ATOMIC_RELEASE);
    return "; a sticky error: this GPU's CUDA context is unusable until the process ends, and no "
           "new trial starts on it";
}

tune_status tunep_cuda_fail(struct tunep_cuda_ctx *ctx, cudaError_t e, const char *what,
                            const char *file, int line)
{
    tune_status code = e == cudaErrorMemoryAllocation ? TUNE_ENOMEM : TUNE_EDEVICE;
    (void)cudaGetLastError(); /* clears a recoverable error; a sticky one stays anyway */
    tunep_error_set_at(&ctx->last_err, code, ctx->name, 0, 0, "%s failed: %s (%s, %s:%d)%s", what,
                       cudaGetErrorString(e), cudaGetErrorName(e), short_file(file), line,
                       note_sticky(ctx, e));
    tunep_log(TUNE_LOG_ERROR, "%s: %s", ctx->name, ctx->last_err.text);
    return code;
}

/* cuBLAS's text for s ("the resource allocation failed", "CUBLAS_STATUS_ALLOC_FAILED"). */
static void cublas_text(const struct tunep_cuda_ctx *ctx, cublasStatus_t s, const char **ret_text,
                        const char **ret_name)
{
    *ret_text = ctx->cublas.status_string ? ctx->cublas.status_string(s) : "cuBLAS error";
    *ret_name = ctx->cublas.status_name ? ctx->cublas.status_name(s) : "CUBLAS_STATUS_?";
}

tune_status tunep_cublas_fail(struct tunep_cuda_ctx *ctx, cublasStatus_t s, const char *what,
                              const char *file, int line)
{
    tune_status code = s == CUBLAS_STATUS_ALLOC_FAILED ? TUNE_ENOMEM : TUNE_EDEVICE;
    const char *text, *name;
    cublas_text(ctx, s, &text, &name);
    (void)cudaGetLastError();
    tunep_error_set_at(&ctx->last_err, code, ctx->name, 0, 0, "%s failed: %s (%s, %s:%d)", what,
                       text, name, short_file(file), line);
    tunep_log(TUNE_LOG_ERROR, "%s: %s", ctx->name, ctx->last_err.text);
    return code;
}

/*
 * Loads cuBLAS (libcublas.so.<major> of the toolkit this was built with,
 * from the loader's path, then from the toolkit's library folder) and its
 * entry points into *api. The library stays loaded for the process's life:
 * each context takes a dlopen reference and none is dropped, since
 * unloading CUDA libraries is not something their makers support.
 */
static tune_status load_cublas(struct tunep_cublas_api *api, tune_error *err)
{
#ifndef TUNEP_CUDA_LIBDIR
#define TUNEP_CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif
    char path[512];
    const char *dirs[] = {"", TUNEP_CUDA_LIBDIR "/"};
    void *lib = NULL;
    /* dlerror's text lives in a buffer the next dlopen may free or reuse, so
     * the first failure's reason (the loader's path) is copied out. */
    char why[256] = "";
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0] && !lib; i++) {
        snprintf(path, sizeof path, "%slibcublas.so.%d", dirs[i], CUBLAS_VER_MAJOR);
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!lib && i == 0) {
            const char *e = dlerror();
            snprintf(why, sizeof why, "%s", e ? e : "");
        }
    }
    if (!lib)
        return tunep_error_set(err, TUNE_EDEVICE, "cannot load cuBLAS %d: %s", CUBLAS_VER_MAJOR,
                               why);
#define CUBLAS_SYM(field, symbol)                                                                  \
    if (!(api->field = reinterpret_cast<decltype(api->field)>(dlsym(lib, symbol))))                \
        return tunep_error_set(err, TUNE_EDEVICE, "cuBLAS '%s' has no '%s'", path, symbol);
    CUBLAS_SYM(create, "cublasCreate_v2")
    CUBLAS_SYM(destroy, "cublasDestroy_v2")
    CUBLAS_SYM(set_stream, "cublasSetStream_v2")
    CUBLAS_SYM(set_workspace, "cublasSetWorkspace_v2")
    CUBLAS_SYM(set_math_mode, "cublasSetMathMode")
    CUBLAS_SYM(sgemm, "cublasSgemm_v2")
    CUBLAS_SYM(sgemm_strided_batched, "cublasSgemmStridedBatched")
    CUBLAS_SYM(status_string, "cublasGetStatusString")
    CUBLAS_SYM(status_name, "cublasGetStatusName")
#undef CUBLAS_SYM
    return TUNE_OK;
}

/* In a function with a tune_error *err: the failure goes to err as well (no log). */
static tune_status fail_err(struct tunep_cuda_ctx *ctx, tune_error *err, cudaError_t e,
                            const char *what, const char *file, int line)
{
    tune_status code = e == cudaErrorMemoryAllocation ? TUNE_ENOMEM : TUNE_EDEVICE;
    (void)cudaGetLastError();
    tunep_error_set_at(&ctx->last_err, code, ctx->name, 0, 0, "%s failed: %s (%s, %s:%d)%s", what,
                       cudaGetErrorString(e), cudaGetErrorName(e), short_file(file), line,
                       note_sticky(ctx, e));
    if (err)
        *err = ctx->last_err;
    return code;
}

#define TRY_ERR(ctx, err, expr)                                                                    \
    do {                                                                                           \
        cudaError_t e_ = (expr);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return fail_err((ctx), (err), e_, #expr, __FILE__, __LINE__);                          \
    } while (0)

/* ---- devices ------------------------------------------------------------- */

extern "C" tune_status tunep_cuda_device_count(int *ret_count, tune_error *err)
{
    if (!ret_count)
        return tunep_error_set(err, TUNE_EINVAL, "cuda: NULL argument");
    *ret_count = 0;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n > 0) {
        *ret_count = n;
        return TUNE_OK;
    }
    (void)cudaGetLastError();
    int drv = 0, rt = 0;
    (void)cudaDriverGetVersion(&drv); /* 0 when no driver is loaded */
    (void)cudaRuntimeGetVersion(&rt);
    (void)cudaGetLastError();
    if (e == cudaSuccess || e == cudaErrorNoDevice)
        return tunep_error_set(err, TUNE_EDEVICE, "no CUDA device found");
    if (drv == 0)
        return tunep_error_set(err, TUNE_EDEVICE,
                               "no NVIDIA driver found (cudaGetDeviceCount: %s, error %d)",
                               cudaGetErrorString(e), (int)e);
    if (e == cudaErrorInsufficientDriver)
        return tunep_error_set(err, TUNE_EDEVICE,
                               "the NVIDIA driver is too old: it supports CUDA %d.%d, this build "
                               "needs CUDA %d.%d",
                               drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
    return tunep_error_set(err, TUNE_EDEVICE, "cudaGetDeviceCount failed: %s (error %d)",
                           cudaGetErrorString(e), (int)e);
}

/* TUNE_OK when `device` names an existing device. */
static tune_status check_device(int device, tune_error *err)
{
    int n = 0;
    tune_status st = tunep_cuda_device_count(&n, err);
    if (st != TUNE_OK)
        return st;
    if (device < 0 || device >= n)
        return tunep_error_set(err, TUNE_EDEVICE, "no device 'cuda:%d' (%d CUDA device%s found)",
                               device, n, n == 1 ? "" : "s");
    return TUNE_OK;
}

extern "C" tune_status tunep_cuda_mem_info(int device, size_t *ret_free, size_t *ret_total,
                                           tune_error *err)
{
    if (!ret_free || !ret_total)
        return tunep_error_set(err, TUNE_EINVAL, "cuda: NULL argument");
    tune_status st = check_device(device, err);
    if (st != TUNE_OK)
        return st;
    size_t fr = 0, tot = 0;
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess)
        e = cudaMemGetInfo(&fr, &tot);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return tunep_error_set(err, TUNE_EDEVICE, "cuda:%d: cudaMemGetInfo failed: %s", device,
                               cudaGetErrorString(e));
    }
    *ret_free = fr;
    *ret_total = tot;
    return TUNE_OK;
}

extern "C" tune_status tunep_cuda_device_name(int device, char *buf, size_t size, tune_error *err)
{
    if (!buf || size == 0)
        return tunep_error_set(err, TUNE_EINVAL, "cuda: NULL argument");
    buf[0] = '\0';
    tune_status st = check_device(device, err);
    if (st != TUNE_OK)
        return st;
    cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, device);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return tunep_error_set(err, TUNE_EDEVICE, "cuda:%d: cudaGetDeviceProperties failed: %s",
                               device, cudaGetErrorString(e));
    }
    snprintf(buf, size, "%s", prop.name);
    return TUNE_OK;
}

/* ---- the context --------------------------------------------------------- */

extern "C" void tunep_cuda_ctx_free(struct tunep_cuda_ctx *ctx)
{
    if (!ctx)
        return;
    /* Errors are ignored: there is nothing left to report them to, and a
     * failed step must still release what it can. */
    (void)cudaSetDevice(ctx->device);
    if (ctx->stream)
        (void)cudaStreamSynchronize(ctx->stream);
    if (ctx->blas)
        (void)ctx->cublas.destroy(ctx->blas);
    (void)cudaFree(ctx->blas_ws);
    (void)cudaFree(ctx->scratch); /* from either allocator; the stream is idle */
    (void)cudaFree(ctx->sumsq);
    if (ctx->stream)
        (void)cudaStreamDestroy(ctx->stream);
    (void)cudaGetLastError();
    tunep_free(ctx);
}

extern "C" tune_status tunep_cuda_ctx_new(const struct tunep_cuda_options *opt,
                                          struct tunep_cuda_ctx **ret_ctx, tune_error *err)
{
    struct tunep_cuda_ctx *ctx = NULL;
    tune_status st = TUNE_OK;
    cudaError_t e = cudaSuccess;
    cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
    const char *what = NULL, *text = NULL, *name = NULL;

    if (!opt || !ret_ctx)
        return tunep_error_set(err, TUNE_EINVAL, "cuda: NULL argument");
    if ((st = check_device(opt->device, err)) != TUNE_OK)
        return st;
    if (tunep_cuda_device_broken(opt->device))
        return tunep_error_set(err, TUNE_EDEVICE,
                               "cuda:%d is unusable in this process: a sticky CUDA error (such as "
                               "an illegal address) corrupted its context earlier",
                               opt->device);
    ctx = (struct tunep_cuda_ctx *)tunep_calloc(1, sizeof *ctx);
    if (!ctx)
        return tunep_error_set(err, TUNE_ENOMEM, "cuda: out of memory");
    ctx->device = opt->device;
    ctx->tf32 = opt->tf32 != 0;
    snprintf(ctx->name, sizeof ctx->name, "cuda:%d", opt->device);

#define CTX_CUDA(expr)                                                                             \
    if ((e = (expr)) != cudaSuccess) {                                                             \
        what = #expr;                                                                              \
        goto cuda_fail;                                                                            \
    }
#define CTX_CUBLAS(expr)                                                                           \
    if ((bs = (expr)) != CUBLAS_STATUS_SUCCESS) {                                                  \
        what = #expr;                                                                              \
        goto cublas_fail;                                                                          \
    }
    if ((st = load_cublas(&ctx->cublas, err)) != TUNE_OK) {
        tunep_cuda_ctx_free(ctx);
        return st;
    }
    CTX_CUDA(cudaSetDevice(ctx->device));
    CTX_CUDA(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
    CTX_CUBLAS(ctx->cublas.create(&ctx->blas));
    CTX_CUBLAS(ctx->cublas.set_stream(ctx->blas, ctx->stream));
    CTX_CUDA(cudaMalloc(&ctx->blas_ws, TUNEP_CUDA_BLAS_WS_BYTES));
    CTX_CUBLAS(ctx->cublas.set_workspace(ctx->blas, ctx->blas_ws, TUNEP_CUDA_BLAS_WS_BYTES));
    /* CUBLAS_DEFAULT_MATH keeps SGEMM in full fp32 (the reference); TF32
     * rounds the inputs to 10-bit mantissas on the tensor cores. */
    CTX_CUBLAS(ctx->cublas.set_math_mode(ctx->blas, ctx->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                              : CUBLAS_DEFAULT_MATH));
    CTX_CUDA(cudaMalloc((void **)&ctx->sumsq, (TUNEP_CUDA_SUMSQ_BLOCKS + 1) * sizeof(double)));
#undef CTX_CUDA
#undef CTX_CUBLAS
    *ret_ctx = ctx;
    return TUNE_OK;

cuda_fail:
    st = fail_err(ctx, err, e, what, __FILE__, __LINE__);
    tunep_cuda_ctx_free(ctx);
    return st;
cublas_fail:
    (void)cudaGetLastError();
    cublas_text(ctx, bs, &text, &name);
    st = tunep_error_set_at(err, bs == CUBLAS_STATUS_ALLOC_FAILED ? TUNE_ENOMEM : TUNE_EDEVICE,
                            ctx->name, 0, 0, "%s failed: %s (%s, %s:%d)", what, text, name,
                            short_file(__FILE__), __LINE__);
    tunep_cuda_ctx_free(ctx);
    return st;
}

extern "C" const char *tunep_cuda_ctx_name(const struct tunep_cuda_ctx *ctx)
{
    return ctx->name;
}

extern "C" const tune_error *tunep_cuda_ctx_last_error(const struct tunep_cuda_ctx *ctx)
{
    return &ctx->last_err;
}

tune_status tunep_cuda_scratch(struct tunep_cuda_ctx *ctx, size_t bytes, void **ret)
{
    if (bytes <= ctx->scratch_size && ctx->scratch) {
        *ret = ctx->scratch;
        return TUNE_OK;
    }
    /* Growth happens in a model's first steps only (launchers ask for the
     * most they will need), but other trials' streams run on the same GPU
     * meanwhile, and cudaFree waits for the whole device. The block is
     * therefore stream-ordered: freed after the work already queued on this
     * stream has read it and allocated from the device's memory pool, in
     * stream order, with nothing waiting on the host or elsewhere. */
    const size_t mib = (size_t)1 << 20;
    size_t want = (bytes + mib - 1) / mib * mib;
    if (!ctx->scratch_sync) {
        if (ctx->scratch)
            TUNEP_CUDA_TRY(ctx, cudaFreeAsync(ctx->scratch, ctx->stream));
        ctx->scratch = NULL;
        ctx->scratch_size = 0;
        cudaError_t e = cudaMallocAsync(&ctx->scratch, want, ctx->stream);
        if (e == cudaSuccess) {
            ctx->scratch_size = want;
            *ret = ctx->scratch;
            return TUNE_OK;
        }
        if (e != cudaErrorNotSupported)
            return tunep_cuda_fail(ctx, e, "cudaMallocAsync(&ctx->scratch, want, ctx->stream)",
                                   __FILE__, __LINE__);
        /* No memory pools on this device (some virtual GPUs): the blocking way. */
        (void)cudaGetLastError();
        ctx->scratch = NULL;
        ctx->scratch_sync = 1;
    }
    TUNEP_CUDA_TRY(ctx, cudaStreamSynchronize(ctx->stream)); /* queued work may read the block */
    TUNEP_CUDA_TRY(ctx, cudaFree(ctx->scratch));
    ctx->scratch = NULL;
    ctx->scratch_size = 0;
    TUNEP_CUDA_TRY(ctx, cudaMalloc(&ctx->scratch, want));
    ctx->scratch_size = want;
    *ret = ctx->scratch;
    return TUNE_OK;
}

/* ---- the memory members of struct tunep_backend -------------------------- */

extern "C" tune_status tunep_cuda_alloc(void *vctx, size_t size, void **ret_ptr, tune_error *err)
{
    struct tunep_cuda_ctx *c = (struct tunep_cuda_ctx *)vctx;
    TRY_ERR(c, err, cudaSetDevice(c->device));
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, size ? size : 1); /* 256-byte aligned */
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        size_t fr = 0, tot = 0;
        if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
            (void)cudaGetLastError();
        return tunep_error_set_at(err, TUNE_ENOMEM, c->name, 0, 0,
                                  "out of device memory allocating %.1f MiB (%.1f MiB free of "
                                  "%.1f MiB)",
                                  (double)size / 1048576.0, (double)fr / 1048576.0,
                                  (double)tot / 1048576.0);
    }
    if (e != cudaSuccess)
        return fail_err(c, err, e, "cudaMalloc", __FILE__, __LINE__);
    *ret_ptr = p;
    return TUNE_OK;
}

extern "C" void tunep_cuda_free(void *vctx, void *ptr)
{
    struct tunep_cuda_ctx *c = (struct tunep_cuda_ctx *)vctx;
    if (!ptr)
        return;
    /* cudaFree waits for the device; nothing to report it to on failure. */
    if (cudaSetDevice(c->device) != cudaSuccess || cudaFree(ptr) != cudaSuccess)
        (void)cudaGetLastError();
}

extern "C" tune_status tunep_cuda_upload(void *vctx, void *dst, const void *src, size_t size,
                                         tune_error *err)
{
    struct tunep_cuda_ctx *c = (struct tunep_cuda_ctx *)vctx;
    if (size == 0)
        return TUNE_OK;
    TRY_ERR(c, err, cudaSetDevice(c->device));
    TRY_ERR(c, err, cudaMemcpyAsync(dst, src, size, cudaMemcpyHostToDevice, c->stream));
    /* The caller may overwrite src as soon as this returns (the model's
     * staging buffer is reused tensor after tensor). */
    TRY_ERR(c, err, cudaStreamSynchronize(c->stream));
    return TUNE_OK;
}

extern "C" tune_status tunep_cuda_download(void *vctx, void *dst, const void *src, size_t size,
                                           tune_error *err)
{
    struct tunep_cuda_ctx *c = (struct tunep_cuda_ctx *)vctx;
    if (size == 0)
        return TUNE_OK;
    TRY_ERR(c, err, cudaSetDevice(c->device));
    TRY_ERR(c, err, cudaMemcpyAsync(dst, src, size, cudaMemcpyDeviceToHost, c->stream));
    TRY_ERR(c, err, cudaStreamSynchronize(c->stream));
    return TUNE_OK;
}

extern "C" tune_status tunep_cuda_memzero(void *vctx, void *dst, size_t size, tune_error *err)
{
    struct tunep_cuda_ctx *c = (struct tunep_cuda_ctx *)vctx;
    if (size == 0)
        return TUNE_OK;
    TRY_ERR(c, err, cudaSetDevice(c->device));
    TRY_ERR(c, err, cudaMemsetAsync(dst, 0, size, c->stream));
    return TUNE_OK;
}

extern "C" tune_status tunep_cuda_sync(void *vctx, tune_error *err)
{
    struct tunep_cuda_ctx *c = (struct tunep_cuda_ctx *)vctx;
    TRY_ERR(c, err, cudaSetDevice(c->device));
    TRY_ERR(c, err, cudaStreamSynchronize(c->stream));
    return TUNE_OK;
}
