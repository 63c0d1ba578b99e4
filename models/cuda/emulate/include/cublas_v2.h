/*
 * cublas_v2.h (emulation) - the cuBLAS types and entry points the backend
 * loads with dlopen; emu_cublas.cc builds them into a stand-in
 * libcublas.so.0 on OpenBLAS. Test builds with -Demulate_cuda=true only.
 */
#ifndef TUNEP_EMU_CUBLAS_V2_H
#define TUNEP_EMU_CUBLAS_V2_H

#include <cuda_runtime.h>

/* Not a real cuBLAS major: the backend's dlopen of libcublas.so.0 cannot
 * pick up an installed cuBLAS. */
#define CUBLAS_VER_MAJOR 0

typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
} cublasStatus_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 } cublasMath_t;

typedef struct tunep_emu_cublas *cublasHandle_t;

#define TUNEP_EMU_BLAS extern "C" TUNEP_EMU_API
TUNEP_EMU_BLAS cublasStatus_t cublasCreate_v2(cublasHandle_t *h);
TUNEP_EMU_BLAS cublasStatus_t cublasDestroy_v2(cublasHandle_t h);
TUNEP_EMU_BLAS cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s);
TUNEP_EMU_BLAS cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void *ws, size_t bytes);
TUNEP_EMU_BLAS cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode);
TUNEP_EMU_BLAS cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta,
                                             cublasOperation_t tb, int m, int n, int k,
                                             const float *alpha, const float *A, int lda,
                                             const float *B, int ldb, const float *beta, float *C,
                                             int ldc);
TUNEP_EMU_BLAS cublasStatus_t cublasSgemmStridedBatched(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const float *alpha, const float *A, int lda, long long strideA, const float *B, int ldb,
    long long strideB, const float *beta, float *C, int ldc, long long strideC, int count);
TUNEP_EMU_BLAS const char *cublasGetStatusString(cublasStatus_t s);
TUNEP_EMU_BLAS const char *cublasGetStatusName(cublasStatus_t s);

#endif /* TUNEP_EMU_CUBLAS_V2_H */
