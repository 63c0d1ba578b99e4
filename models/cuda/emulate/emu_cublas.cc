/*
 * emu_cublas.cc - the stand-in libcublas.so.0 of the CUDA emulation: the
 * entry points the backend loads with dlopen, on OpenBLAS, with cuBLAS's
 * column-major convention and its argument checks (sizes >= 0, leading
 * dimensions at least the rows of each operand as stored), plus a check
 * that each operand's whole extent lies inside one cudaMalloc allocation.
 * TF32 math mode computes in full fp32. Test builds with
 * -Demulate_cuda=true only.
 */
#include <cublas_v2.h>

#include <cblas.h>
#include <stdint.h>

struct tunep_emu_cublas {
    cudaStream_t stream;
    void *ws;
    size_t ws_bytes;
    cublasMath_t mode;
};

cublasStatus_t cublasCreate_v2(cublasHandle_t *h)
{
    if (!h)
        return CUBLAS_STATUS_INVALID_VALUE;
    *h = new tunep_emu_cublas{};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t h)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!tunep_emu_stream_ok(s))
        return CUBLAS_STATUS_INVALID_VALUE;
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void *ws, size_t bytes)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (bytes && !tunep_emu_in_allocation(ws, bytes)) {
        tunep_emu_report(__FILE__, __LINE__,
                         "cublasSetWorkspace: %zu bytes at %p outside an "
                         "allocation",
                         bytes, ws);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    h->ws = ws;
    h->ws_bytes = bytes;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode != CUBLAS_DEFAULT_MATH && mode != CUBLAS_TF32_TENSOR_OP_MATH)
        return CUBLAS_STATUS_INVALID_VALUE;
    h->mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

/* A rows x cols column-major operand with leading dimension ld at p (plus
 * `offset` elements): inside one allocation? Reports which one is not. */
static int operand_ok(const char *fn, const char *name, const float *p, int rows, int cols, int ld)
{
    if (rows == 0 || cols == 0)
        return 1;
    size_t n = (size_t)ld * (size_t)(cols - 1) + (size_t)rows;
    if (p && tunep_emu_in_allocation(p, n * sizeof(float)))
        return 1;
    tunep_emu_report(__FILE__, __LINE__,
                     "%s: operand %s (%d x %d, ld %d: %zu floats at %p) is not inside one "
                     "allocation",
                     fn, name, rows, cols, ld, n, (const void *)p);
    return 0;
}

static cublasStatus_t check(const char *fn, cublasHandle_t h, cublasOperation_t ta,
                            cublasOperation_t tb, int m, int n, int k, const float *alpha,
                            const float *beta, int lda, int ldb, int ldc)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    int ar = ta == CUBLAS_OP_N ? m : k, br = tb == CUBLAS_OP_N ? k : n;
    const char *why = NULL;
    if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T))
        why = "transposition";
    else if (m < 0 || n < 0 || k < 0)
        why = "a negative size";
    else if (lda < (ar > 1 ? ar : 1))
        why = "lda smaller than A's rows";
    else if (ldb < (br > 1 ? br : 1))
        why = "ldb smaller than B's rows";
    else if (ldc < (m > 1 ? m : 1))
        why = "ldc smaller than C's rows";
    else if (!alpha || !beta)
        why = "a NULL alpha or beta";
    if (why) {
        tunep_emu_report(__FILE__, __LINE__,
                         "%s: invalid value: %s (ta %d tb %d m %d n %d k %d lda %d ldb %d ldc %d)",
                         fn, why, (int)ta, (int)tb, m, n, k, lda, ldb, ldc);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    return CUBLAS_STATUS_SUCCESS;
}

static int operands_ok(const char *fn, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                       int k, const float *A, int lda, const float *B, int ldb, const float *C,
                       int ldc)
{
    int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
    int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
    return (k == 0 ||
            (operand_ok(fn, "A", A, ar, ac, lda) && operand_ok(fn, "B", B, br, bc, ldb))) &&
           operand_ok(fn, "C", C, m, n, ldc);
}

static void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                 const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    if (m == 0 || n == 0)
        return;
    cblas_sgemm(CblasColMajor, ta == CUBLAS_OP_N ? CblasNoTrans : CblasTrans,
                tb == CUBLAS_OP_N ? CblasNoTrans : CblasTrans, m, n, k, alpha, A, lda, B, ldb, beta,
                C, ldc);
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const float *alpha, const float *A, int lda,
                              const float *B, int ldb, const float *beta, float *C, int ldc)
{
    const char *fn = "cublasSgemm";
    cublasStatus_t s = check(fn, h, ta, tb, m, n, k, alpha, beta, lda, ldb, ldc);
    if (s != CUBLAS_STATUS_SUCCESS)
        return s;
    if (!operands_ok(fn, ta, tb, m, n, k, A, lda, B, ldb, C, ldc))
        return CUBLAS_STATUS_INVALID_VALUE;
    gemm(ta, tb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long strideA, const float *B, int ldb,
                                         long long strideB, const float *beta, float *C, int ldc,
                                         long long strideC, int count)
{
    const char *fn = "cublasSgemmStridedBatched";
    cublasStatus_t s = check(fn, h, ta, tb, m, n, k, alpha, beta, lda, ldb, ldc);
    if (s != CUBLAS_STATUS_SUCCESS)
        return s;
    if (count < 0) {
        tunep_emu_report(__FILE__, __LINE__, "%s: invalid value: batch count %d", fn, count);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    for (int i = 0; i < count; i++)
        if (!operands_ok(fn, ta, tb, m, n, k, A + i * strideA, lda, B + i * strideB, ldb,
                         C + i * strideC, ldc))
            return CUBLAS_STATUS_INVALID_VALUE;
    for (int i = 0; i < count; i++)
        gemm(ta, tb, m, n, k, *alpha, A + i * strideA, lda, B + i * strideB, ldb, *beta,
             C + i * strideC, ldc);
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t s)
{
    switch (s) {
        case CUBLAS_STATUS_SUCCESS: return "success";
        case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
        case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
        case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
        case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    }
    return "unknown error";
}

const char *cublasGetStatusName(cublasStatus_t s)
{
    switch (s) {
        case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
        case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
        case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
        case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
        case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}
