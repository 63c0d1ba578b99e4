/*
 * reduce.cu - deterministic column sums over the rows of an (N, C) matrix:
 * the bias gradients of Linear and the pooler, and LayerNorm's weight and
 * bias gradients (dw += sum_r dout * xhat, db += sum_r dout).
 *
 * No atomics: the rows are split into RB row blocks, a function of N only,
 * each summed by a fixed 32 x 8 thread tile in a fixed order; a second pass
 * adds the RB partial sums in block order. The same inputs therefore give
 * the same bits on every run, whatever the scheduling. Accumulation is in
 * float: the error bound is about (N/(8 RB) + 8 + RB) ulp of the sum of
 * |terms|, which the CUDA-vs-CPU tests allow for.
 */
#include "models/cuda/cuda_common.cuh"

#define COL_TILE  32 /* columns per block: one warp reads 128 contiguous bytes of a row */
#define ROW_LANES 8  /* rows in flight per block */
#define MAX_RB    64
/* Rows per block aimed at: about 64 rows per block keeps a few hundred
 * blocks in flight for BERT's (B*T, C) at B*T >= 4096 while each thread still
 * sums 8 rows before the tree. */
#define ROWS_PER_BLOCK 64

static int row_blocks(int N)
{
    int rb = N / ROWS_PER_BLOCK;
    return rb < 1 ? 1 : rb > MAX_RB ? MAX_RB : rb;
}

/* Block (bx, by): columns [32 bx, 32 bx + 32), rows [N by / RB, N (by+1) / RB).
 * With RB == 1 the block adds into dst; otherwise it writes its partial
 * sums to part_sum/part_xhat[by * C + c]. */
static __global__ void col_sum_kernel(float *dst_sum, float *dst_xhat, float *part_sum,
                                      float *part_xhat, const float *a, const float *x,
                                      const float *mean, const float *rstd, int N, int C, int RB)
{
    __shared__ float s_sum[ROW_LANES][COL_TILE];
    __shared__ float s_xhat[ROW_LANES][COL_TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int c = blockIdx.x * COL_TILE + tx;
    int by = blockIdx.y;
    int r0 = (int)((long long)N * by / RB), r1 = (int)((long long)N * (by + 1) / RB);
    float acc = 0.0f, accx = 0.0f;
    if (c < C) {
        for (int r = r0 + ty; r < r1; r += ROW_LANES) {
            size_t i = (size_t)r * (size_t)C + (size_t)c;
            float v = a[i];
            acc += v;
            if (x)
                accx += v * ((x[i] - mean[r]) * rstd[r]);
        }
    }
    s_sum[ty][tx] = acc;
    s_xhat[ty][tx] = accx;
    __syncthreads();
    if (ty != 0 || c >= C)
        return;
    float s = 0.0f, sx = 0.0f;
    for (int y = 0; y < ROW_LANES; y++) {
        s += s_sum[y][tx];
        sx += s_xhat[y][tx];
    }
    if (RB == 1) {
        if (dst_sum)
            dst_sum[c] += s;
        if (x)
            dst_xhat[c] += sx;
    } else {
        part_sum[(size_t)by * (size_t)C + (size_t)c] = s;
        if (x)
            part_xhat[(size_t)by * (size_t)C + (size_t)c] = sx;
    }
}

/* dst[c] += sum over by of part[by * C + c], in block order. */
static __global__ void col_sum_finish_kernel(float *dst_sum, float *dst_xhat, const float *part_sum,
                                             const float *part_xhat, int C, int RB)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C)
        return;
    float s = 0.0f, sx = 0.0f;
    for (int by = 0; by < RB; by++) {
        s += part_sum[(size_t)by * (size_t)C + (size_t)c];
        if (dst_xhat)
            sx += part_xhat[(size_t)by * (size_t)C + (size_t)c];
    }
    if (dst_sum)
        dst_sum[c] += s;
    if (dst_xhat)
        dst_xhat[c] += sx;
}

tune_status tunep_cuda_col_sum(struct tunep_cuda_ctx *ctx, float *dst_sum, float *dst_xhat,
                               const float *a, const float *x, const float *mean, const float *rstd,
                               int N, int C)
{
    if (N <= 0 || C <= 0 || (!dst_sum && !x))
        return TUNE_OK;
    int RB = row_blocks(N);
    float *part = NULL;
    if (RB > 1) {
        void *p = NULL;
        tune_status st = tunep_cuda_scratch(ctx, 2 * (size_t)RB * (size_t)C * sizeof(float), &p);
        if (st != TUNE_OK)
            return st;
        part = (float *)p;
    }
    float *part_xhat = part ? part + (size_t)RB * (size_t)C : NULL;
    dim3 grid((unsigned)((C + COL_TILE - 1) / COL_TILE), (unsigned)RB);
    dim3 block(COL_TILE, ROW_LANES);
    col_sum_kernel<<<grid, block, 0, ctx->stream>>>(dst_sum, x ? dst_xhat : NULL, part, part_xhat,
                                                    a, x, mean, rstd, N, C, RB);
    TUNEP_CUDA_LAUNCHED(ctx);
    if (RB > 1) {
        col_sum_finish_kernel<<<(unsigned)((C + 255) / 256), 256, 0, ctx->stream>>>(
            dst_sum, x ? dst_xhat : NULL, part, part_xhat, C, RB);
        TUNEP_CUDA_LAUNCHED(ctx);
    }
    return TUNE_OK;
}
