/*
 * tunep_emu.h - force-included (-include) into every .cu file of a
 * -Demulate_cuda=true build, which g++ compiles as C++: the CUDA keywords,
 * the built-in variables (threadIdx, blockIdx, blockDim, gridDim), the
 * device intrinsics the backend uses, and the launch that stands in for
 * `kernel<<<grid, block, shmem, stream>>>(args)` (emu_launch.py rewrites
 * each launch into a call of tunep_emu_launch).
 *
 * Each CUDA thread of a block runs as a fiber; emu_cudart.cc schedules a
 * block's fibers so that __syncthreads and the warp collectives are
 * barriers, and reports misuse with file and line. __shared__ variables
 * are thread-local statics: a block runs on one host thread, blocks one
 * after another.
 *
 * What it cannot show: GPU rounding (the host FPU and OpenBLAS compute,
 * TF32 as fp32), performance, and races between blocks or streams (blocks
 * run one at a time, every stream operation completes before it returns).
 * scripts/cuda-mutants checks that what it can show is caught.
 */
#ifndef TUNEP_EMU_H
#define TUNEP_EMU_H

#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__      static thread_local

/* The calling fiber's CUDA coordinates, set by the scheduler. */
struct tunep_emu_builtins {
    uint3 thread, block;
    dim3 block_dim, grid_dim;
};
extern TUNEP_EMU_API thread_local struct tunep_emu_builtins tunep_emu_bi;
#define threadIdx (tunep_emu_bi.thread)
#define blockIdx  (tunep_emu_bi.block)
#define blockDim  (tunep_emu_bi.block_dim)
#define gridDim   (tunep_emu_bi.grid_dim)
#define warpSize  32

/* Barriers. The site (file, line) must be the same for every thread that
 * meets at one. */
TUNEP_EMU_API void tunep_emu_syncthreads(const char *file, int line);
/* A warp collective: stores `value` as this lane's contribution, waits for
 * every lane of `mask`, and returns the lanes' contributions (32 slots). */
TUNEP_EMU_API const uint64_t *tunep_emu_warp_exchange(unsigned mask, uint64_t value,
                                                      const char *file, int line);
/* The calling lane (0..31). */
TUNEP_EMU_API unsigned tunep_emu_lane(void);

#define __syncthreads()             tunep_emu_syncthreads(__FILE__, __LINE__)
#define __shfl_xor_sync(mask, v, o) tunep_emu_shfl_xor((mask), (v), (o), __FILE__, __LINE__)
#define __any_sync(mask, p)         tunep_emu_any((mask), (p), __FILE__, __LINE__)

template <class T>
static inline T tunep_emu_shfl_xor(unsigned mask, T v, int offset, const char *file, int line)
{
    static_assert(sizeof(T) <= sizeof(uint64_t), "shuffle of a value wider than 8 bytes");
    uint64_t bits = 0;
    memcpy(&bits, &v, sizeof v);
    const uint64_t *slots = tunep_emu_warp_exchange(mask, bits, file, line);
    unsigned src = tunep_emu_lane() ^ (unsigned)offset;
    if (src >= 32 || !(mask & (1u << src))) {
        tunep_emu_report(file, line, "__shfl_xor_sync reads lane %u, outside the mask 0x%08x", src,
                         mask);
        src = tunep_emu_lane();
    }
    T r;
    memcpy(&r, &slots[src], sizeof r);
    return r;
}

static inline int tunep_emu_any(unsigned mask, int pred, const char *file, int line)
{
    const uint64_t *slots = tunep_emu_warp_exchange(mask, pred != 0, file, line);
    for (unsigned l = 0; l < 32; l++)
        if ((mask & (1u << l)) && slots[l])
            return 1;
    return 0;
}

/* Rounded products without FMA contraction: the host compiler is told not
 * to contract (-ffp-contract=off), so a plain product is one rounding. */
static inline float __fmul_rn(float a, float b)
{
    return a * b;
}

/* ---- launches ------------------------------------------------------------ */

struct tunep_emu_config {
    dim3 grid, block;
    size_t shmem;
    cudaStream_t stream;
};
static inline tunep_emu_config tunep_emu_cfg(dim3 grid, dim3 block, size_t shmem = 0,
                                             cudaStream_t stream = 0)
{
    return tunep_emu_config{grid, block, shmem, stream};
}

/* Checks the configuration (a failure becomes cudaGetLastError's answer and
 * a report naming file:line), then runs body(arg) once per CUDA thread. */
TUNEP_EMU_API void tunep_emu_run(const char *file, int line, const char *kernel,
                                 const tunep_emu_config *cfg, void (*body)(void *), void *arg);

/* tunep_emu_launch(file, line, name, cfg, kernel)(args): the call takes the
 * kernel's own parameter types, so arguments convert as in a direct call
 * (NULL to a pointer). Each CUDA thread gets its own copy of them. */
template <class... P> struct tunep_emu_launcher {
    const char *file;
    int line;
    const char *name;
    tunep_emu_config cfg;
    void (*kernel)(P...);

    void operator()(P... p) const
    {
        struct call {
            void (*kernel)(P...);
            std::tuple<typename std::decay<P>::type...> args;
        } c{kernel, std::tuple<typename std::decay<P>::type...>(p...)};
        tunep_emu_run(
            file, line, name, &cfg,
            [](void *v) {
                const call *cp = (const call *)v;
                std::tuple<typename std::decay<P>::type...> own = cp->args;
                std::apply(cp->kernel, own);
            },
            &c);
    }
};

template <class... P>
static inline tunep_emu_launcher<P...> tunep_emu_launch(const char *file, int line,
                                                        const char *name, tunep_emu_config cfg,
                                                        void (*kernel)(P...))
{
    return tunep_emu_launcher<P...>{file, line, name, cfg, kernel};
}

#endif /* TUNEP_EMU_H */
