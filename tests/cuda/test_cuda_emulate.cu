/*
 * test_cuda_emulate.cu - the CUDA emulation's own checks (-Demulate_cuda=true
 * builds only): barriers and warp collectives give the right values, and
 * each misuse the harness exists to catch is reported with this file's
 * name and a line (a barrier after threads exited, threads at different
 * barriers, a collective naming an exited or absent lane, a deadlock, a bad
 * launch configuration, a GEMM operand outside its allocation, a wrong
 * leading dimension, a copy in the wrong direction). Each misuse runs in a
 * child whose stderr is read back; a fatal finding aborts the child.
 */
#include <cublas_v2.h>
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* ---- kernels --------------------------------------------------------------- */

/* Block sum of 0..n-1 through shared memory and __syncthreads, then the
 * first warp's xor butterfly. */
__global__ void block_sum(float *out)
{
    __shared__ float s[256];
    unsigned t = threadIdx.x;
    s[t] = (float)(t + blockIdx.x);
    __syncthreads();
    for (unsigned h = blockDim.x / 2; h >= 32; h /= 2) {
        if (t < h)
            s[t] += s[t + h];
        __syncthreads();
    }
    if (t < 32) {
        float v = s[t];
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, o);
        if (t == 0)
            out[blockIdx.x] = v;
        int any = __any_sync(0xffffffffu, t == 7);
        if (t == 1)
            out[gridDim.x + blockIdx.x] = (float)any;
    }
}

__global__ void exit_then_barrier(float *out)
{
    if (threadIdx.x >= 16)
        return;
    __syncthreads();
    out[threadIdx.x] = 1.0f;
}

__global__ void two_barriers(float *out)
{
    if (threadIdx.x < 16)
        __syncthreads();
    else
        __syncthreads();
    out[threadIdx.x] = 1.0f;
}

__global__ void lane_exits_before_shuffle(float *out)
{
    if (threadIdx.x == 5)
        return;
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

__global__ void shuffle(float *out)
{
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, (float)threadIdx.x, 1);
}

__global__ void deadlock(float *out)
{
    if (threadIdx.x == 0)
        __syncthreads();
    else
        out[threadIdx.x] = (float)__any_sync(0xffffffffu, 1);
}

/* Thread 0 writes s after the barrier and the others read it with no
 * barrier between: a race whose outcome depends on the thread order. */
__global__ void racy(int *out)
{
    __shared__ int s;
    if (threadIdx.x == blockDim.x - 1)
        s = 7;
    __syncthreads();
    if (threadIdx.x == 0)
        s = 42;
    out[threadIdx.x] = s;
}

/* ---- helpers --------------------------------------------------------------- */

/* Runs fn in a child; returns its stderr (static buffer) and whether it died
 * of a signal (abort) or exited non-zero in *ret_failed. */
static const char *in_child(void (*fn)(void), int *ret_failed)
{
    static char buf[8192];
    int fd[2];
    if (pipe(fd) != 0)
        abort();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        fn();
        fflush(NULL);
        _exit(0);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while (n < sizeof buf - 1 && (r = read(fd[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    *ret_failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    return buf;
}

/* The child fails with a report containing `what`, and naming this file
 * when `here` (kernel findings; the cuBLAS and copy checks name their own
 * file, and the backend's TRY macros the caller's). */
static void expect_report(const char *name, void (*fn)(void), const char *what, int here)
{
    int failed = 0;
    const char *err = in_child(fn, &failed);
    int ok = failed && strstr(err, "tunep-emu: ") && strstr(err, what) &&
             (!here || strstr(err, "test_cuda_emulate.cu:"));
    fprintf(stderr, "  %-28s %s\n", name, ok ? "caught" : "NOT CAUGHT");
    if (!ok) {
        fprintf(stderr, "    child stderr: %s\n", err);
        failures++;
    }
}

static float *dev_floats(size_t n)
{
    float *p = NULL;
    if (cudaMalloc(&p, n * sizeof(float)) != cudaSuccess)
        abort();
    return p;
}

/* ---- misuses, each run in a child ------------------------------------------ */

static void run_exit_then_barrier(void)
{
    exit_then_barrier<<<1, 32>>>(dev_floats(32));
}

static void run_two_barriers(void)
{
    two_barriers<<<1, 32>>>(dev_floats(32));
}

static void run_lane_exits(void)
{
    lane_exits_before_shuffle<<<1, 32>>>(dev_floats(32));
}

static void run_absent_lane(void)
{
    shuffle<<<1, 48>>>(dev_floats(48));
}

static void run_deadlock(void)
{
    deadlock<<<1, 32>>>(dev_floats(32));
}

/* A configuration error is not fatal: the launch is refused and
 * cudaGetLastError says so, as on a GPU. */
static void run_bad_config(void)
{
    shuffle<<<1, 2048>>>(dev_floats(32));
    if (cudaGetLastError() == cudaErrorInvalidConfiguration)
        _exit(1);
}

static void run_gemm(int ld_wrong)
{
    cublasHandle_t h = NULL;
    if (cublasCreate_v2(&h) != CUBLAS_STATUS_SUCCESS)
        abort();
    /* C (4x4) = A (4x8) B (8x4), column-major; A is one row short */
    float *A = dev_floats(ld_wrong ? 32 : 31), *B = dev_floats(32), *C = dev_floats(16);
    float one = 1.0f, zero = 0.0f;
    cublasStatus_t s = cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 8, &one, A,
                                      ld_wrong ? 3 : 4, B, 8, &zero, C, 4);
    if (s == CUBLAS_STATUS_INVALID_VALUE)
        _exit(1);
}

static void run_gemm_outside(void)
{
    run_gemm(0);
}

static void run_gemm_ld(void)
{
    run_gemm(1);
}

static void run_wrong_direction(void)
{
    float h[8] = {0};
    float *d = dev_floats(8);
    /* device-to-host with the arguments of a host-to-device copy */
    if (cudaMemcpy(d, h, sizeof h, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue)
        _exit(1);
}

/* ---- checks in this process ------------------------------------------------ */

static void check_values(void)
{
    float *d = dev_floats(8);
    float h[8];
    /* 0xFF poison reads as NaN before anything is written */
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(isnan(h[0]));
    block_sum<<<3, 256>>>(d);
    CHECK(cudaGetLastError() == cudaSuccess);
    CHECK(cudaMemcpy(h, d, 6 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    for (int b = 0; b < 3; b++) {
        CHECK(h[b] == (float)(255 * 256 / 2 + 256 * b));
        CHECK(h[3 + b] == 1.0f);
    }
    CHECK(cudaFree(d) == cudaSuccess);
}

static void check_sort(void)
{
    const int n = 6;
    unsigned keys[n] = {3, 1, 3 + 256, 0, 1, 2}; /* bits above 8 are ignored */
    int vals[n] = {0, 1, 2, 3, 4, 5};
    unsigned *dk = NULL, *dko = NULL;
    int *dv = NULL, *dvo = NULL;
    cudaMalloc(&dk, sizeof keys);
    cudaMalloc(&dko, sizeof keys);
    cudaMalloc(&dv, sizeof vals);
    cudaMalloc(&dvo, sizeof vals);
    cudaMemcpy(dk, keys, sizeof keys, cudaMemcpyHostToDevice);
    cudaMemcpy(dv, vals, sizeof vals, cudaMemcpyHostToDevice);
    size_t tb = 0;
    CHECK(cub::DeviceRadixSort::SortPairs((void *)NULL, tb, (const unsigned *)NULL,
                                          (unsigned *)NULL, (const int *)NULL, (int *)NULL, n, 0,
                                          8) == cudaSuccess);
    CHECK(tb > 0);
    void *temp = NULL;
    cudaMalloc(&temp, tb);
    CHECK(cub::DeviceRadixSort::SortPairs(temp, tb, dk, dko, dv, dvo, n, 0, 8) == cudaSuccess);
    int out[n];
    cudaMemcpy(out, dvo, sizeof out, cudaMemcpyDeviceToHost);
    const int want[n] = {3, 1, 4, 5, 0, 2}; /* stable: equal keys keep their order */
    for (int i = 0; i < n; i++)
        CHECK(out[i] == want[i]);
    CHECK(cudaFree(temp) == cudaSuccess && cudaFree(dk) == cudaSuccess &&
          cudaFree(dko) == cudaSuccess && cudaFree(dv) == cudaSuccess &&
          cudaFree(dvo) == cudaSuccess);
}

static void run_racy(int *ret_out0, int *ret_out1)
{
    int *d = NULL;
    cudaMalloc(&d, 64 * sizeof(int));
    racy<<<1, 64>>>(d);
    int h[64];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    *ret_out0 = h[0];
    *ret_out1 = h[1];
    cudaFree(d);
}

static void check_reverse_order(void)
{
    int a0, a1, b0, b1;
    unsetenv("TUNEP_EMU_REVERSE");
    run_racy(&a0, &a1);
    setenv("TUNEP_EMU_REVERSE", "1", 1);
    run_racy(&b0, &b1);
    unsetenv("TUNEP_EMU_REVERSE");
    CHECK(a0 == 42 && b0 == 42);
    CHECK(a1 == 42 && b1 == 7); /* the race shows as a different result */
}

int main(void)
{
    check_values();
    check_sort();
    check_reverse_order();
    fprintf(stderr, "misuses:\n");
    expect_report("barrier after exit", run_exit_then_barrier, "after 16 thread(s)", 1);
    expect_report("different barriers", run_two_barriers, "different __syncthreads", 1);
    expect_report("lane exited before shuffle", run_lane_exits, "which has exited", 1);
    expect_report("block not a warp multiple", run_absent_lane, "absent from a block of 48", 1);
    expect_report("deadlock", run_deadlock, "deadlock", 1);
    expect_report("bad launch configuration", run_bad_config, "bad launch configuration", 1);
    expect_report("GEMM operand outside", run_gemm_outside, "not inside one allocation", 0);
    expect_report("GEMM leading dimension", run_gemm_ld, "lda smaller", 0);
    expect_report("copy in wrong direction", run_wrong_direction, "wrong direction", 0);
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
