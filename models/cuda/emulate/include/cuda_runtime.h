/*
 * cuda_runtime.h (emulation) - the part of the CUDA runtime API that the
 * backend calls, implemented on host memory by emu_cudart.cc. Test builds
 * with -Demulate_cuda=true only; never installed.
 */
#ifndef TUNEP_EMU_CUDA_RUNTIME_H
#define TUNEP_EMU_CUDA_RUNTIME_H

#include <stddef.h>

#define TUNEP_EMU_API __attribute__((visibility("default")))

#define CUDART_VERSION 13000

enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidDevice = 101,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchTimeout = 702,
    cudaErrorAssert = 710,
    cudaErrorHardwareStackError = 714,
    cudaErrorIllegalInstruction = 715,
    cudaErrorMisalignedAddress = 716,
    cudaErrorInvalidAddressSpace = 717,
    cudaErrorInvalidPc = 718,
    cudaErrorLaunchFailure = 719,
    cudaErrorNotSupported = 801,
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};

typedef struct tunep_emu_stream *cudaStream_t;
#define cudaStreamNonBlocking 0x01u

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    int major, minor;
    int multiProcessorCount;
};
typedef struct cudaDeviceProp cudaDeviceProp;

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz)
    {
    }
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z)
    {
    }
};

TUNEP_EMU_API cudaError_t cudaGetDeviceCount(int *count);
TUNEP_EMU_API cudaError_t cudaDriverGetVersion(int *v);
TUNEP_EMU_API cudaError_t cudaRuntimeGetVersion(int *v);
TUNEP_EMU_API const char *cudaGetErrorString(cudaError_t e);
TUNEP_EMU_API const char *cudaGetErrorName(cudaError_t e);
TUNEP_EMU_API cudaError_t cudaGetLastError(void);
TUNEP_EMU_API cudaError_t cudaPeekAtLastError(void);
TUNEP_EMU_API cudaError_t cudaSetDevice(int device);
TUNEP_EMU_API cudaError_t cudaGetDevice(int *device);
TUNEP_EMU_API cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
TUNEP_EMU_API cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
TUNEP_EMU_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
TUNEP_EMU_API cudaError_t cudaStreamDestroy(cudaStream_t s);
TUNEP_EMU_API cudaError_t cudaStreamSynchronize(cudaStream_t s);
TUNEP_EMU_API cudaError_t cudaDeviceSynchronize(void);
TUNEP_EMU_API cudaError_t cudaMalloc(void **p, size_t size);
TUNEP_EMU_API cudaError_t cudaFree(void *p);
/* Stream-ordered allocation: streams are synchronous here, so these are cudaMalloc and cudaFree. */
TUNEP_EMU_API cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t stream);
TUNEP_EMU_API cudaError_t cudaFreeAsync(void *p, cudaStream_t stream);
TUNEP_EMU_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t size,
                                          enum cudaMemcpyKind kind, cudaStream_t s);
TUNEP_EMU_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t size,
                                     enum cudaMemcpyKind kind);
TUNEP_EMU_API cudaError_t cudaMemsetAsync(void *dst, int value, size_t size, cudaStream_t s);

template <class T> static inline cudaError_t cudaMalloc(T **p, size_t size)
{
    return cudaMalloc((void **)p, size);
}

/* ---- the harness's own entry points (not CUDA) --------------------------- */

/* Whether [p, p + bytes) lies inside one live allocation. */
TUNEP_EMU_API int tunep_emu_in_allocation(const void *p, size_t bytes);
/* Whether s is 0 (the legacy stream) or a live stream. */
TUNEP_EMU_API int tunep_emu_stream_ok(cudaStream_t s);
/* A harness finding: "tunep-emu: file:line: text" on stderr. */
TUNEP_EMU_API void tunep_emu_report(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* TUNEP_EMU_CUDA_RUNTIME_H */
