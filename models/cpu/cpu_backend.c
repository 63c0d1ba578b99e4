/*
 * cpu_backend.c - memory side of the CPU backend (struct tunep_backend):
 * 64-byte aligned host blocks from the replaceable allocator, plain copies,
 * and the thread count handed to every kernel through struct tunep_cpu_ctx.
 *
 * The float kernels come in one table per x86-64 level the build has
 * (cpu_kernels_tmpl.c compiled with that level's -march) and a backend takes
 * the best one the running CPU supports, checked with
 * __builtin_cpu_supports, which also checks that the OS saves the wider
 * registers: a global -march would not run on older machines.
 *
 * Invariant: every block from cpu_alloc() stores the pointer tunep_malloc()
 * returned just below the aligned address, so cpu_free() can find it.
 */
#include "models/cpu/cpu_backend.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__GNUC__) && defined(__x86_64__)
#include <cpuid.h>
#endif

#include "base/base.h"
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

const char *tunep_cpu_isa_name(enum tunep_cpu_isa isa)
{
    switch (isa) {
        case TUNEP_CPU_ISA_GENERIC: return "generic";
        case TUNEP_CPU_ISA_AVX2: return "avx2";
        case TUNEP_CPU_ISA_AVX512: return "avx512";
        default: return "?";
    }
}

/* x86-64-v3 and v4 as the builds' -march give them to the compiler. F16C,
 * MOVBE and LZCNT come from CPUID directly: clang 14's
 * __builtin_cpu_supports does not know them. */
static int cpu_has_v3(void)
{
#if defined(__GNUC__) && defined(__x86_64__)
    unsigned a, b, c, d, c_ext = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    if (__get_cpuid(0x80000001u, &a, &b, &c_ext, &d) == 0)
        c_ext = 0;
    int f16c = (c >> 29) & 1, movbe = (c >> 22) & 1, lzcnt = (c_ext >> 5) & 1;
    return f16c && movbe && lzcnt && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
           __builtin_cpu_supports("bmi2");
#else
    return 0;
#endif
}

static int cpu_has_v4(void)
{
#if defined(__GNUC__) && defined(__x86_64__)
    return cpu_has_v3() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512cd") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}

const struct tunep_kernels *tunep_cpu_kernels_for(enum tunep_cpu_isa isa)
{
    switch (isa) {
        case TUNEP_CPU_ISA_GENERIC: return &tunep_cpu_kernels;
#if defined(TUNEP_CPU_HAVE_AVX2)
        case TUNEP_CPU_ISA_AVX2: return cpu_has_v3() ? &tunep_cpu_kernels_avx2 : NULL;
#endif
#if defined(TUNEP_CPU_HAVE_AVX512)
        case TUNEP_CPU_ISA_AVX512: return cpu_has_v4() ? &tunep_cpu_kernels_avx512 : NULL;
#endif
        default: return NULL;
    }
}

tunep_cpu_philox_fill_fn tunep_cpu_philox_fill_for(enum tunep_cpu_isa isa)
{
    if (!tunep_cpu_kernels_for(isa))
        return NULL;
    switch (isa) {
        case TUNEP_CPU_ISA_GENERIC: return tunep_cpu_philox_fill_generic;
#if defined(TUNEP_CPU_HAVE_AVX2)
        case TUNEP_CPU_ISA_AVX2: return tunep_cpu_philox_fill_avx2;
#endif
#if defined(TUNEP_CPU_HAVE_AVX512)
        case TUNEP_CPU_ISA_AVX512: return tunep_cpu_philox_fill_avx512;
#endif
        default: return NULL;
    }
}

enum tunep_cpu_isa tunep_cpu_isa_best(void)
{
    for (int isa = TUNEP_CPU_ISA_COUNT - 1; isa > TUNEP_CPU_ISA_GENERIC; isa--)
        if (tunep_cpu_kernels_for((enum tunep_cpu_isa)isa))
            return (enum tunep_cpu_isa)isa;
    return TUNEP_CPU_ISA_GENERIC;
}

/* Blocks of at least HUGE_MIN bytes (the model's arenas: 100 MB to GBs) are
 * aligned to 2 MiB and offered to the kernel for transparent huge pages
 * (madvise; a hint, ignored where unsupported). With 4 KiB pages the TLB
 * covers a few MB, and the GEMMs' packing and the attention kernels walk
 * strided rows of arrays hundreds of MB long; most distributions only give
 * huge pages to memory that asks (transparent_hugepage=madvise). */
#define HUGE_ALIGN ((size_t)2 << 20)
#define HUGE_MIN   ((size_t)8 << 20)

static tune_status cpu_alloc(void *ctx, size_t size, void **ret_ptr, tune_error *err)
{
    (void)ctx;
    size_t align = size >= HUGE_MIN ? HUGE_ALIGN : CPU_ALIGN;
    if (size > SIZE_MAX - align - sizeof(void *))
        return tunep_error_set(err, TUNE_ENOMEM, "cpu backend: %zu bytes is too large", size);
    unsigned char *raw = tunep_malloc(size + align + sizeof(void *));
    if (!raw)
        return tunep_error_set(err, TUNE_ENOMEM, "cpu backend: out of memory allocating %zu bytes",
                               size);
    uintptr_t p = ((uintptr_t)(raw + sizeof(void *)) + align - 1) & ~(uintptr_t)(align - 1);
    memcpy((unsigned char *)p - sizeof(void *), &raw, sizeof raw);
#if defined(MADV_HUGEPAGE)
    if (align == HUGE_ALIGN)
        (void)madvise((void *)p, size & ~(HUGE_ALIGN - 1), MADV_HUGEPAGE);
#endif
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
        .kernels = tunep_cpu_kernels_for(tunep_cpu_isa_best()),
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
                  "%s uses its '%s' kernels on a CPU with AVX2 and FMA; start the process with "
                  "%s for up to 4x faster matrix products",
                  tunep_cpu_blas_name(), tunep_cpu_blas_corename(), tunep_cpu_blas_env_advice());
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
