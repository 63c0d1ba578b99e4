/*
 * emu_cudart.cc - the CUDA emulation's runtime: the cudart subset the
 * backend calls, on host memory, and the kernel scheduler behind
 * tunep_emu_run. Test builds with -Demulate_cuda=true only.
 *
 * Memory: cudaMalloc returns 256-byte aligned host memory filled with 0xFF
 * (an uninitialised float reads as NaN) and records it in a registry of
 * live allocations; copies and memsets check that their device side lies
 * inside one allocation, cudaFree that its pointer is one. Streams are
 * tokens: every operation completes before it returns, so stream order
 * always holds and synchronisation is a check only.
 *
 * Kernels: blocks run one after another on the calling thread; each CUDA
 * thread of a block is a ucontext fiber. The scheduler runs every ready
 * fiber until it finishes or waits at a barrier (__syncthreads, or a warp
 * collective); a warp's collective is released when all its lanes wait at
 * it, the block barrier when all live threads do. Misuse is reported with
 * file and line and aborts: a barrier after some threads exited, threads at
 * different barriers, a collective whose mask names an absent or exited
 * lane, a deadlock. TUNEP_EMU_REVERSE=1 runs each block's threads in
 * reverse order, which changes the results of a kernel with an intra-block
 * race.
 *
 * It cannot show rounding differences, performance, or races between
 * blocks or streams.
 */
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <vector>

#include "tunep_emu.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
/* AddressSanitizer is told of each stack switch, so it does not mistake a
 * fiber's stack for the scheduler's. */
#define SWITCH_START(save, bottom, size)  __sanitizer_start_switch_fiber((save), (bottom), (size))
#define SWITCH_FINISH(save, bottom, size) __sanitizer_finish_switch_fiber((save), (bottom), (size))
#else
#define SWITCH_START(save, bottom, size)  ((void)(save), (void)(bottom), (void)(size))
#define SWITCH_FINISH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#endif
/* A fiber's stack, with a guard page below it. Kernels are small; a larger
 * stack makes each switch slower under AddressSanitizer, which clears the
 * target stack's shadow at every swapcontext. */
#define EMU_STACK_BYTES ((size_t)64 << 10)
#define EMU_TOTAL_MEM   ((size_t)16 << 30)
#define EMU_MAX_THREADS 1024

thread_local struct tunep_emu_builtins tunep_emu_bi;

/* ---- reports and the last error ------------------------------------------ */

static thread_local cudaError_t last_error = cudaSuccess;

static cudaError_t set_error(cudaError_t e)
{
    if (e != cudaSuccess)
        last_error = e;
    return e;
}

void tunep_emu_report(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tunep-emu: %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

[[noreturn]] static void fatal(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fatal(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tunep-emu: %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

/* ---- devices and errors -------------------------------------------------- */

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

static const struct {
    cudaError_t e;
    const char *name, *text;
} errors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress",
     "an illegal memory access was encountered"},
    {cudaErrorLaunchTimeout, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
    {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
    {cudaErrorHardwareStackError, "cudaErrorHardwareStackError", "hardware stack error"},
    {cudaErrorIllegalInstruction, "cudaErrorIllegalInstruction",
     "an illegal instruction was encountered"},
    {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", "misaligned address"},
    {cudaErrorInvalidAddressSpace, "cudaErrorInvalidAddressSpace",
     "operation not supported on global/shared address space"},
    {cudaErrorInvalidPc, "cudaErrorInvalidPc", "invalid program counter"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
};

const char *cudaGetErrorString(cudaError_t e)
{
    for (const auto &r : errors)
        if (r.e == e)
            return r.text;
    return "unrecognized error code";
}

const char *cudaGetErrorName(cudaError_t e)
{
    for (const auto &r : errors)
        if (r.e == e)
            return r.name;
    return "cudaErrorUnknown";
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    return last_error;
}

cudaError_t cudaSetDevice(int device)
{
    return set_error(device == 0 ? cudaSuccess : cudaErrorInvalidDevice);
}

cudaError_t cudaGetDevice(int *device)
{
    *device = 0;
    return cudaSuccess;
}

/* ---- memory -------------------------------------------------------------- */

static std::mutex mem_lock;
static std::map<uintptr_t, size_t> live; /* start -> size */
static size_t used;

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    std::lock_guard<std::mutex> g(mem_lock);
    *free_bytes = EMU_TOTAL_MEM - used;
    *total_bytes = EMU_TOTAL_MEM;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
{
    if (device != 0)
        return set_error(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "CUDA emulation (CPU)");
    prop->totalGlobalMem = EMU_TOTAL_MEM;
    prop->major = 9;
    prop->multiProcessorCount = 1;
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t size)
{
    *p = NULL;
    size_t rounded = (size + 255) / 256 * 256;
    std::lock_guard<std::mutex> g(mem_lock);
    if (size == 0 || rounded > EMU_TOTAL_MEM - used)
        return set_error(size == 0 ? cudaErrorInvalidValue : cudaErrorMemoryAllocation);
    void *m = aligned_alloc(256, rounded);
    if (!m)
        return set_error(cudaErrorMemoryAllocation);
    memset(m, 0xFF, rounded);
    live[(uintptr_t)m] = size;
    used += rounded;
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t stream)
{
    (void)stream;
    return cudaMalloc(p, size);
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t stream)
{
    (void)stream;
    return cudaFree(p);
}

cudaError_t cudaFree(void *p)
{
    if (!p)
        return cudaSuccess;
    std::lock_guard<std::mutex> g(mem_lock);
    auto it = live.find((uintptr_t)p);
    if (it == live.end()) {
        tunep_emu_report(__FILE__, __LINE__, "cudaFree(%p): not a live allocation", p);
        return set_error(cudaErrorInvalidDevicePointer);
    }
    used -= (it->second + 255) / 256 * 256;
    live.erase(it);
    free(p);
    return cudaSuccess;
}

int tunep_emu_in_allocation(const void *p, size_t bytes)
{
    std::lock_guard<std::mutex> g(mem_lock);
    uintptr_t a = (uintptr_t)p;
    auto it = live.upper_bound(a);
    if (it == live.begin())
        return 0;
    --it;
    return a >= it->first && bytes <= it->second && a - it->first <= it->second - bytes;
}

/* ---- streams ------------------------------------------------------------- */

struct tunep_emu_stream {
    unsigned flags;
};
static std::mutex stream_lock;
static std::vector<cudaStream_t> streams;

int tunep_emu_stream_ok(cudaStream_t s)
{
    if (!s)
        return 1;
    std::lock_guard<std::mutex> g(stream_lock);
    for (cudaStream_t t : streams)
        if (t == s)
            return 1;
    return 0;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    *s = new tunep_emu_stream{flags};
    std::lock_guard<std::mutex> g(stream_lock);
    streams.push_back(*s);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    std::lock_guard<std::mutex> g(stream_lock);
    for (size_t i = 0; i < streams.size(); i++)
        if (streams[i] == s) {
            streams.erase(streams.begin() + (long)i);
            delete s;
            return cudaSuccess;
        }
    return set_error(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    return set_error(tunep_emu_stream_ok(s) ? cudaSuccess : cudaErrorInvalidResourceHandle);
}

cudaError_t cudaDeviceSynchronize(void)
{
    return cudaSuccess;
}

/* A copy's device side must lie in one allocation, its host side in none. */
static cudaError_t check_side(const void *p, size_t size, int device, const char *what)
{
    if (device && !tunep_emu_in_allocation(p, size)) {
        tunep_emu_report(__FILE__, __LINE__, "%s: %zu bytes at %p are not inside one allocation",
                         what, size, p);
        return cudaErrorInvalidValue;
    }
    if (!device && tunep_emu_in_allocation(p, 1)) {
        tunep_emu_report(__FILE__, __LINE__,
                         "%s: host pointer %p lies in a device allocation (wrong direction?)", what,
                         p);
        return cudaErrorInvalidValue;
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t size, enum cudaMemcpyKind kind)
{
    if (size == 0)
        return cudaSuccess;
    cudaError_t e = cudaSuccess;
    int dd = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    int sd = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (kind != cudaMemcpyDefault && kind != cudaMemcpyHostToHost) {
        if ((e = check_side(dst, size, dd, "cudaMemcpy destination")) == cudaSuccess)
            e = check_side(src, size, sd, "cudaMemcpy source");
    }
    if (e != cudaSuccess)
        return set_error(e);
    memmove(dst, src, size);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t size, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    if (!tunep_emu_stream_ok(s))
        return set_error(cudaErrorInvalidResourceHandle);
    return cudaMemcpy(dst, src, size, kind);
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t size, cudaStream_t s)
{
    if (!tunep_emu_stream_ok(s))
        return set_error(cudaErrorInvalidResourceHandle);
    if (size == 0)
        return cudaSuccess;
    cudaError_t e = check_side(dst, size, 1, "cudaMemsetAsync");
    if (e != cudaSuccess)
        return set_error(e);
    memset(dst, value, size);
    return cudaSuccess;
}

/* ---- the block scheduler ------------------------------------------------- */

enum fiber_state { READY, AT_BLOCK, AT_WARP, DONE };

struct fiber {
    ucontext_t ctx;
    char *stack;
    fiber_state state;
    uint3 tid;
    const char *file; /* the barrier it waits at */
    int line;
    unsigned mask;    /* of the warp collective it waits at */
    unsigned rounds;  /* collectives passed: picks the slot buffer */
    void *fake_stack; /* AddressSanitizer's, while switched away */
};

struct block_run {
    ucontext_t sched;
    std::vector<fiber> fibers;
    int cur;
    int exited;
    int nthreads;
    void (*body)(void *);
    void *arg;
    const char *kernel;
    /* two buffers of lane slots per warp, alternating between collectives */
    std::vector<uint64_t> slots;
    /* the scheduler's stack, for AddressSanitizer's switch annotations */
    const void *sched_bottom;
    size_t sched_size;
    void *sched_fake_stack;
};

static thread_local block_run *run_now;

static fiber &me()
{
    return run_now->fibers[(size_t)run_now->cur];
}

unsigned tunep_emu_lane(void)
{
    return (unsigned)run_now->cur % 32;
}

static void fiber_main(void)
{
    block_run *r = run_now;
    SWITCH_FINISH(NULL, &r->sched_bottom, &r->sched_size);
    r->body(r->arg);
    r->fibers[(size_t)r->cur].state = DONE;
    /* uc_link returns to the scheduler; this fiber's stack is done with */
    SWITCH_START(NULL, r->sched_bottom, r->sched_size);
}

static void wait_here(fiber_state st, const char *file, int line)
{
    fiber &f = me();
    f.state = st;
    f.file = file;
    f.line = line;
    SWITCH_START(&f.fake_stack, run_now->sched_bottom, run_now->sched_size);
    swapcontext(&f.ctx, &run_now->sched);
    SWITCH_FINISH(f.fake_stack, NULL, NULL);
}

void tunep_emu_syncthreads(const char *file, int line)
{
    if (!run_now)
        fatal(file, line, "__syncthreads outside a kernel");
    if (run_now->exited)
        fatal(file, line, "%s: __syncthreads reached after %d thread(s) of the block exited",
              run_now->kernel, run_now->exited);
    wait_here(AT_BLOCK, file, line);
}

const uint64_t *tunep_emu_warp_exchange(unsigned mask, uint64_t value, const char *file, int line)
{
    if (!run_now)
        fatal(file, line, "warp collective outside a kernel");
    block_run *r = run_now;
    int t = r->cur, warp = t / 32;
    unsigned lane = (unsigned)t % 32;
    if (!(mask & (1u << lane)))
        fatal(file, line, "%s: lane %u calls a collective whose mask 0x%08x omits it", r->kernel,
              lane, mask);
    for (unsigned l = 0; l < 32; l++) {
        if (!(mask & (1u << l)))
            continue;
        int o = warp * 32 + (int)l;
        if (o >= r->nthreads)
            fatal(file, line,
                  "%s: collective mask 0x%08x names lane %u, absent from a block of %d threads",
                  r->kernel, mask, l, r->nthreads);
        if (r->fibers[(size_t)o].state == DONE)
            fatal(file, line, "%s: collective mask 0x%08x names lane %u, which has exited",
                  r->kernel, mask, l);
    }
    fiber &f = me();
    f.mask = mask;
    uint64_t *buf = &r->slots[((size_t)warp * 2 + (f.rounds & 1)) * 32];
    buf[lane] = value;
    wait_here(AT_WARP, file, line);
    f.rounds++;
    return buf;
}

/* Releases warp collectives whose lanes all wait; 1 when one was. */
static int release_warps(block_run *r)
{
    int released = 0;
    int nwarps = (r->nthreads + 31) / 32;
    for (int w = 0; w < nwarps; w++) {
        fiber *first = NULL;
        int all = 1;
        for (int t = w * 32; t < r->nthreads && t < w * 32 + 32; t++) {
            fiber &f = r->fibers[(size_t)t];
            if (f.state == DONE)
                continue;
            if (f.state != AT_WARP) {
                all = 0;
                break;
            }
            if (!first)
                first = &f;
            else if (f.file != first->file || f.line != first->line || f.mask != first->mask)
                fatal(f.file, f.line,
                      "%s: lanes of warp %d wait at different collectives (this one and %s:%d)",
                      r->kernel, w, first->file, first->line);
        }
        if (!all || !first)
            continue;
        for (unsigned l = 0; l < 32; l++) {
            int o = w * 32 + (int)l;
            if ((first->mask & (1u << l)) && r->fibers[(size_t)o].state == DONE)
                fatal(first->file, first->line,
                      "%s: collective mask 0x%08x names lane %u, which has exited", r->kernel,
                      first->mask, l);
        }
        for (int t = w * 32; t < r->nthreads && t < w * 32 + 32; t++)
            if (r->fibers[(size_t)t].state == AT_WARP)
                r->fibers[(size_t)t].state = READY;
        released = 1;
    }
    return released;
}

static int release_block(block_run *r)
{
    const fiber *first = NULL;
    for (const fiber &f : r->fibers) {
        if (f.state == DONE)
            continue;
        if (f.state != AT_BLOCK)
            return 0;
        if (!first)
            first = &f;
        else if (f.file != first->file || f.line != first->line)
            fatal(f.file, f.line,
                  "%s: threads wait at different __syncthreads (this one and %s:%d)", r->kernel,
                  first->file, first->line);
    }
    if (!first)
        return 0;
    if (r->exited)
        fatal(first->file, first->line,
              "%s: __syncthreads reached after %d thread(s) of the block exited", r->kernel,
              r->exited);
    for (fiber &f : r->fibers)
        if (f.state == AT_BLOCK)
            f.state = READY;
    return 1;
}

static void run_block(block_run *r, const char *file, int line, int reverse)
{
    int n = r->nthreads;
    for (int i = 0; i < n; i++) {
        fiber &f = r->fibers[(size_t)i];
        f.state = READY;
        f.rounds = 0;
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = f.stack;
        f.ctx.uc_stack.ss_size = EMU_STACK_BYTES;
        f.ctx.uc_link = &r->sched;
        makecontext(&f.ctx, fiber_main, 0);
    }
    r->exited = 0;
    int live_threads = n;
    const dim3 bd = tunep_emu_bi.block_dim;
    while (live_threads > 0) {
        int progress = 0;
        for (int k = 0; k < n; k++) {
            int i = reverse ? n - 1 - k : k;
            fiber &f = r->fibers[(size_t)i];
            if (f.state != READY)
                continue;
            r->cur = i;
            tunep_emu_bi.thread =
                uint3{(unsigned)i % bd.x, (unsigned)i / bd.x % bd.y, (unsigned)i / (bd.x * bd.y)};
            SWITCH_START(&r->sched_fake_stack, f.stack, EMU_STACK_BYTES);
            swapcontext(&r->sched, &f.ctx);
            SWITCH_FINISH(r->sched_fake_stack, NULL, NULL);
            progress = 1;
            if (f.state == DONE) {
                live_threads--;
                r->exited++;
            }
        }
        if (live_threads == 0)
            break;
        if (release_warps(r) || release_block(r) || progress)
            continue;
        for (const fiber &f : r->fibers)
            if (f.state == AT_BLOCK || f.state == AT_WARP)
                tunep_emu_report(f.file, f.line, "thread (%u,%u,%u) waits at %s here", f.tid.x,
                                 f.tid.y, f.tid.z,
                                 f.state == AT_BLOCK ? "__syncthreads" : "a warp collective");
        fatal(file, line, "%s: deadlock in block (%u,%u,%u): no thread can go on", r->kernel,
              tunep_emu_bi.block.x, tunep_emu_bi.block.y, tunep_emu_bi.block.z);
    }
}

/* The fiber stacks of this host thread, kept between launches. */
static thread_local std::vector<char *> stacks;

void tunep_emu_run(const char *file, int line, const char *kernel, const tunep_emu_config *cfg,
                   void (*body)(void *), void *arg)
{
    const dim3 g = cfg->grid, b = cfg->block;
    unsigned long long threads = (unsigned long long)b.x * b.y * b.z;
    if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535 ||
        b.x == 0 || b.y == 0 || b.z == 0 || b.x > 1024 || b.y > 1024 || b.z > 64 ||
        threads > EMU_MAX_THREADS || cfg->shmem > 48 * 1024) {
        tunep_emu_report(file, line,
                         "%s: bad launch configuration: grid (%u,%u,%u), block (%u,%u,%u), "
                         "%zu bytes of dynamic shared memory",
                         kernel, g.x, g.y, g.z, b.x, b.y, b.z, cfg->shmem);
        set_error(cudaErrorInvalidConfiguration);
        return;
    }
    if (!tunep_emu_stream_ok(cfg->stream)) {
        tunep_emu_report(file, line, "%s: launch on a stream that does not exist", kernel);
        set_error(cudaErrorInvalidResourceHandle);
        return;
    }
    if (run_now)
        fatal(file, line, "%s: launched from inside a kernel", kernel);
    const char *rev = getenv("TUNEP_EMU_REVERSE");
    int reverse = rev && rev[0] == '1';

    while (stacks.size() < threads) {
        const size_t guard = 4096;
        void *s = mmap(NULL, EMU_STACK_BYTES + guard, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (s == MAP_FAILED || mprotect(s, guard, PROT_NONE) != 0)
            fatal(file, line, "cannot map a fiber stack");
        stacks.push_back((char *)s + guard);
    }
    block_run r;
    r.nthreads = (int)threads;
    r.fibers.resize(threads);
    for (size_t i = 0; i < threads; i++) {
        r.fibers[i].stack = stacks[i];
        r.fibers[i].tid =
            uint3{(unsigned)i % b.x, (unsigned)i / b.x % b.y, (unsigned)(i / ((size_t)b.x * b.y))};
    }
    r.slots.assign((threads + 31) / 32 * 64, 0);
    r.body = body;
    r.arg = arg;
    r.kernel = kernel;
    tunep_emu_bi.block_dim = b;
    tunep_emu_bi.grid_dim = g;
    run_now = &r;
    for (unsigned z = 0; z < g.z; z++)
        for (unsigned y = 0; y < g.y; y++)
            for (unsigned x = 0; x < g.x; x++) {
                tunep_emu_bi.block = uint3{x, y, z};
                run_block(&r, file, line, reverse);
            }
    run_now = NULL;
}
