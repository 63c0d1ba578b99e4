/*
 * cpu_backend.c - memory side of the CPU backend (struct tunep_backend):
 * 64-byte aligned host blocks from the replaceable allocator, plain copies,
 * and the thread count handed to every kernel through struct tunep_cpu_ctx.
 *
 * Invariant: every block from cpu_alloc() stores the pointer tunep_malloc()
 * returned just below the aligned address, so cpu_free() can find it.
 */
#include "models/cpu/cpu_backend.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "models/cpu/cpu_matmul.h"

#define CPU_ALIGN 64

#if defined(_OPENMP)
#define CPU_PRAGMA(x) _Pragma(#x)
#else
#define CPU_PRAGMA(x)
#endif

struct cpu_backend {
    struct tunep_backend base; /* first: the public part */
    struct tunep_cpu_ctx ctx;
};

static tune_status cpu_alloc(void *ctx, size_t size, void **ret_ptr, tune_error *err)
{
    (void)ctx;
    if (size > SIZE_MAX - CPU_ALIGN - sizeof(void *))
        return tunep_error_set(err, TUNE_ENOMEM, "cpu backend: %zu bytes is too large", size);
    unsigned char *raw = tunep_malloc(size + CPU_ALIGN + sizeof(void *));
    if (!raw)
        return tunep_error_set(err, TUNE_ENOMEM, "cpu backend: out of memory allocating %zu bytes",
                               size);
    uintptr_t p = ((uintptr_t)(raw + sizeof(void *)) + CPU_ALIGN - 1) & ~(uintptr_t)(CPU_ALIGN - 1);
    memcpy((unsigned char *)p - sizeof(void *), &raw, sizeof raw);
    *ret_ptr = (void *)p;
    return TUNE_OK;
}

static void cpu_free(void *ctx, void *ptr)
{
    (void)ctx;
    if (!ptr)
        return;
    void *raw;
    memcpy(&raw, (unsigned char *)ptr - sizeof(void *), sizeof raw);
    tunep_free(raw);
}

static tune_status cpu_copy(void *ctx, void *dst, const void *src, size_t size, tune_error *err)
{
    (void)ctx;
    (void)err;
    if (size > 0)
        memcpy(dst, src, size);
    return TUNE_OK;
}

static tune_status cpu_memzero(void *ctx, void *dst, size_t size, tune_error *err)
{
    (void)err;
    const struct tunep_cpu_ctx *c = ctx;
    /* Large gradient arenas (~100 MB for bert-tiny at B=32, T=128) are zeroed
     * every step; one thread does not saturate memory bandwidth. */
    const size_t chunk = (size_t)1 << 20;
    size_t nchunks = (size + chunk - 1) / chunk;
    int nt = c->threads;
    (void)nt;
    CPU_PRAGMA(omp parallel for num_threads(nt) schedule(static) if(nchunks > 1 && nt > 1))
    for (size_t i = 0; i < nchunks; i++) {
        size_t lo = i * chunk;
        size_t n = size - lo < chunk ? size - lo : chunk;
        memset((unsigned char *)dst + lo, 0, n);
    }
    return TUNE_OK;
}

static tune_status cpu_sync(void *ctx, tune_error *err)
{
    (void)ctx;
    (void)err;
    return TUNE_OK;
}

tune_status tunep_cpu_backend_new(int threads, struct tunep_backend **ret_backend, tune_error *err)
{
    if (!ret_backend)
        return tunep_error_set(err, TUNE_EINVAL, "cpu backend: NULL output");
    if (threads < 1 || threads > TUNEP_CPU_MAX_THREADS)
        return tunep_error_set(err, TUNE_EINVAL, "cpu backend: %d threads is outside [1, %d]",
                               threads, TUNEP_CPU_MAX_THREADS);
    struct cpu_backend *cb = tunep_malloc(sizeof *cb);
    if (!cb)
        return tunep_error_set(err, TUNE_ENOMEM, "cpu backend: out of memory");
#if !defined(_OPENMP)
    threads = 1;
#endif
    cb->ctx.threads = threads;
    cb->base = (struct tunep_backend){
        .name = "cpu",
        .ctx = &cb->ctx,
        .kernels = &tunep_cpu_kernels,
        .kernels_f64 = &tunep_cpu_kernels_f64,
        .alloc = cpu_alloc,
        .free = cpu_free,
        .upload = cpu_copy,
        .download = cpu_copy,
        .memzero = cpu_memzero,
        .sync = cpu_sync,
    };
    tunep_cpu_blas_setup();
    /* Said once per process: every trial creates a backend. */
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    if (tunep_cpu_blas_underuses_cpu() && !atomic_flag_test_and_set(&warned))
        tunep_log(TUNE_LOG_WARN,
                  "OpenBLAS uses its '%s' kernels on a CPU with AVX2 and FMA; "
                  "set OPENBLAS_CORETYPE=Haswell for up to 4x faster matrix products",
                  tunep_cpu_blas_corename());
    *ret_backend = &cb->base;
    return TUNE_OK;
}

void tunep_cpu_backend_free(struct tunep_backend *backend)
{
    if (!backend)
        return;
    /* base is the first member, so this is the block tunep_malloc returned. */
    tunep_free((struct cpu_backend *)(void *)backend);
}
