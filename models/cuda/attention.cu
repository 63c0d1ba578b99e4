/*
 * attention.cu - the multi-head self-attention core (Hugging Face
 * BertSelfAttention after the Q, K, V projections) and its backward, with
 * the CPU reference's semantics (models/bert/kernels_tmpl.h):
 *   att (B,NH,T,T) = softmax over valid keys of q k^T / sqrt(HS); masked
 *   keys get probability 0, a row with no valid key is uniform;
 *   att_drop = dropout(att) with the Philox mask of bert_rng.h keyed by the
 *   element's position in att_drop; out = att_drop . v per head.
 *
 * q, k, v are (B,T,C) with rows ld apart (3C when they are the thirds of
 * one fused projection) and head h in channels [h HS, (h+1) HS), which no
 * single stride reaches across batch and head, so they are first permuted
 * to (B,NH,T,HS) in scratch (llm.c's attention_forward does the same); then
 * each product is one cublasSgemmStridedBatched over the B*NH heads, issued
 * through tunep_cuda_gemm_batched with the very arguments of the CPU's
 * per-head GEMMs. The softmax (with the dropout fused) and its backward run
 * one warp per row of T scores.
 * The backward WRITES dq, dk, dv, dpreatt, datt and datt_drop; like the
 * CPU it reads the forward's dropout mask off att_drop (where att != 0,
 * att_drop != 0 exactly when kept; where att == 0 the mask does not matter,
 * since dS = P (dP - sum P dP) is 0 there).
 */
#include <math.h>

#include "models/bert/bert_rng.h"
#include "models/cuda/cuda_common.cuh"

#define ROW_THREADS 128 /* warp-per-row kernels: 4 rows per block */

/* dst_i[b,h,t,d] = src_i[b,t,h,d] for the non-NULL pairs, rows of src_i
 * (b,t) ld apart. */
static __global__ void permute_kernel(float *dst0, float *dst1, float *dst2, const float *src0,
                                      const float *src1, const float *src2, int B, int T, int NH,
                                      int HS, int ld)
{
    size_t n = (size_t)B * (size_t)T * (size_t)NH * (size_t)HS;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t d = i % (size_t)HS, rest = i / (size_t)HS;
        size_t t = rest % (size_t)T;
        rest /= (size_t)T;
        size_t h = rest % (size_t)NH, b = rest / (size_t)NH;
        size_t s = (b * (size_t)T + t) * (size_t)ld + h * (size_t)HS + d;
        dst0[i] = src0[s];
        if (dst1)
            dst1[i] = src1[s];
        if (dst2)
            dst2[i] = src2[s];
    }
}

/* dst_i[b,t,h,d] = src_i[b,h,t,d] for the non-NULL pairs, rows of dst_i
 * (b,t) ld apart. */
static __global__ void unpermute_kernel(float *dst0, float *dst1, float *dst2, const float *src0,
                                        const float *src1, const float *src2, int B, int T, int NH,
                                        int HS, int ld)
{
    size_t n = (size_t)B * (size_t)T * (size_t)NH * (size_t)HS;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t d = i % (size_t)HS, rest = i / (size_t)HS;
        size_t t = rest % (size_t)T;
        rest /= (size_t)T;
        size_t h = rest % (size_t)NH, b = rest / (size_t)NH;
        size_t s = (b * (size_t)T + t) * (size_t)ld + h * (size_t)HS + d;
        dst0[s] = src0[i];
        if (dst1)
            dst1[s] = src1[i];
        if (dst2)
            dst2[s] = src2[i];
    }
}

/*
 * The softmax rows' element e = R T + j (the index of its dropout draw) is
 * word e % 4 of Philox block e / 4. A lane takes whole blocks: blocks
 * g = first + lane, first + lane + 32, ... of the row, and in each the
 * columns 4 g + k - R T (k = 0..3) that lie in [0, T). So one Philox call
 * gives a lane four draws, each picked by a constant k (registers, not
 * local memory), and no lane reads a column another lane wrote.
 */
static __device__ __forceinline__ int block_col(size_t g, int k, size_t base, int T)
{
    size_t e = 4 * g + (size_t)k;
    return e >= base && e < base + (size_t)T ? (int)(e - base) : -1;
}

/* Row R = (b h) T + i of att holds the scaled scores; replaces them with
 * probabilities and, when thr > 0, writes the dropped-out row to att_drop. */
static __global__ void softmax_fwd_kernel(float *att, float *att_drop, const int32_t *mask, int NH,
                                          int T, size_t rows, float uniform, uint32_t thr,
                                          float keep_scale, uint64_t seed, uint64_t stream)
{
    size_t R = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (R >= rows) /* whole warps leave together */
        return;
    size_t b = R / (size_t)T / (size_t)NH;
    const int32_t *mb = mask + b * (size_t)T;
    float *row = att + R * (size_t)T;
    size_t base = R * (size_t)T, first = base / 4, end = (base + (size_t)T + 3) / 4;
    int any = 0;
    for (size_t g = first + lane; g < end; g += 32)
        for (int k = 0; k < 4; k++) {
            int j = block_col(g, k, base, T);
            any |= j >= 0 && mb[j] != 0;
        }
    if (!__any_sync(TUNEP_FULL_MASK, any)) {
        /* Every key is padding: Hugging Face's scores all collapse to
         * finfo.min, whose softmax is uniform. */
        for (size_t g = first + lane; g < end; g += 32)
            for (int k = 0; k < 4; k++) {
                int j = block_col(g, k, base, T);
                if (j >= 0)
                    row[j] = uniform;
            }
    } else {
        float mx = -INFINITY;
        for (size_t g = first + lane; g < end; g += 32)
            for (int k = 0; k < 4; k++) {
                int j = block_col(g, k, base, T);
                if (j >= 0 && mb[j] != 0 && row[j] > mx)
                    mx = row[j];
            }
        mx = tunep_warp_max(mx);
        float s = 0.0f;
        for (size_t g = first + lane; g < end; g += 32)
            for (int k = 0; k < 4; k++) {
                int j = block_col(g, k, base, T);
                if (j < 0)
                    continue;
                float e = mb[j] != 0 ? expf(row[j] - mx) : 0.0f;
                row[j] = e;
                s += e;
            }
        float inv = 1.0f / tunep_warp_sum(s);
        for (size_t g = first + lane; g < end; g += 32)
            for (int k = 0; k < 4; k++) {
                int j = block_col(g, k, base, T);
                if (j >= 0)
                    row[j] *= inv;
            }
    }
    if (thr > 0) {
        float *drow = att_drop + R * (size_t)T;
        for (size_t g = first + lane; g < end; g += 32) {
            uint32_t r[4];
            tunep_philox4x32(r, g, stream, seed); /* tunep_rng_u32_at's block g */
#pragma unroll
            for (int k = 0; k < 4; k++) {
                int j = block_col(g, k, base, T);
                if (j >= 0)
                    drow[j] = __fmul_rn(row[j], r[k] >= thr ? keep_scale : 0.0f);
            }
        }
    }
}

/* Row R: with dropout, datt = datt_drop * mask / (1-p) first; then dpreatt =
 * P (dP - sum_j P dP), or 0 when the row has no valid key. */
static __global__ void softmax_bwd_kernel(float *dpreatt, float *datt, const float *datt_drop,
                                          const float *att, const float *att_drop,
                                          const int32_t *mask, int NH, int T, size_t rows,
                                          int dropout, float keep_scale)
{
    size_t R = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (R >= rows)
        return;
    size_t off = R * (size_t)T;
    float *da = datt + off;
    const float *p = att + off;
    if (dropout) {
        const float *dad = datt_drop + off, *ad = att_drop + off;
        for (int j = lane; j < T; j += 32)
            da[j] = __fmul_rn(dad[j], ad[j] != 0.0f ? keep_scale : 0.0f);
    }
    const int32_t *mb = mask + R / (size_t)T / (size_t)NH * (size_t)T;
    int any = 0;
    for (int j = lane; j < T; j += 32)
        any |= mb[j] != 0;
    float *ds = dpreatt + off;
    if (!__any_sync(TUNEP_FULL_MASK, any)) {
        for (int j = lane; j < T; j += 32) /* a uniform row is constant: its dS is 0 */
            ds[j] = 0.0f;
        return;
    }
    float dot = 0.0f;
    for (int j = lane; j < T; j += 32)
        dot += p[j] * da[j];
    dot = tunep_warp_sum(dot);
    for (int j = lane; j < T; j += 32)
        ds[j] = p[j] * (da[j] - dot);
}

static unsigned row_blocks(size_t rows)
{
    return (unsigned)((rows * 32 + ROW_THREADS - 1) / ROW_THREADS);
}

extern "C" tune_status tunep_cuda_attention_fwd(void *vctx, float *out, float *att, float *att_drop,
                                                const float *q, const float *k, const float *v,
                                                const int32_t *mask, int B, int T, int C, int NH,
                                                int ld, double p, uint64_t seed, uint64_t stream)
{
    TUNEP_CUDA_ENTER(c, vctx);
    size_t btc = (size_t)B * (size_t)T * (size_t)C;
    if (btc == 0 || NH <= 0)
        return TUNE_OK;
    int HS = C / NH, count = B * NH;
    float scale = (float)(1.0 / sqrt((double)HS));
    uint32_t thr = tunep_dropout_threshold(p);
    float keep_scale = (float)(1.0 / (1.0 - p));
    long long sth = (long long)T * HS, stt = (long long)T * T;
    void *scratch = NULL;
    tune_status st = tunep_cuda_scratch(c, 4 * btc * sizeof(float), &scratch);
    if (st != TUNE_OK)
        return st;
    float *qp = (float *)scratch, *kp = qp + btc, *vp = kp + btc, *op = vp + btc;
    unsigned blocks = tunep_cuda_blocks(btc, 256);

    permute_kernel<<<blocks, 256, 0, c->stream>>>(qp, kp, vp, q, k, v, B, T, NH, HS, ld);
    TUNEP_CUDA_LAUNCHED(c);
    /* scores = q k^T / sqrt(HS) */
    if ((st = tunep_cuda_gemm_batched(c, 0, 1, T, T, HS, scale, qp, HS, sth, kp, HS, sth, 0.0f, att,
                                      T, stt, count)) != TUNE_OK)
        return st;
    size_t rows = (size_t)count * (size_t)T;
    softmax_fwd_kernel<<<row_blocks(rows), ROW_THREADS, 0, c->stream>>>(
        att, att_drop, mask, NH, T, rows, (float)(1.0 / T), thr, keep_scale, seed, stream);
    TUNEP_CUDA_LAUNCHED(c);
    const float *pa = thr > 0 ? att_drop : att;
    if ((st = tunep_cuda_gemm_batched(c, 0, 0, T, HS, T, 1.0f, pa, T, stt, vp, HS, sth, 0.0f, op,
                                      HS, sth, count)) != TUNE_OK)
        return st;
    unpermute_kernel<<<blocks, 256, 0, c->stream>>>(out, NULL, NULL, op, NULL, NULL, B, T, NH, HS,
                                                    C);
    TUNEP_CUDA_LAUNCHED(c);
    return TUNE_OK;
}

extern "C" tune_status tunep_cuda_attention_bwd(void *vctx, float *dq, float *dk, float *dv,
                                                float *dpreatt, float *datt, float *datt_drop,
                                                const float *dout, const float *q, const float *k,
                                                const float *v, const float *att,
                                                const float *att_drop, const int32_t *mask, int B,
                                                int T, int C, int NH, int ld, double p,
                                                uint64_t seed, uint64_t stream)
{
    TUNEP_CUDA_ENTER(c, vctx);
    (void)seed; /* the dropout mask is read off att_drop, as on the CPU */
    (void)stream;
    size_t btc = (size_t)B * (size_t)T * (size_t)C;
    if (btc == 0 || NH <= 0)
        return TUNE_OK;
    int HS = C / NH, count = B * NH;
    float scale = (float)(1.0 / sqrt((double)HS));
    int dropout = tunep_dropout_threshold(p) > 0;
    float keep_scale = (float)(1.0 / (1.0 - p));
    long long sth = (long long)T * HS, stt = (long long)T * T;
    void *scratch = NULL;
    tune_status st = tunep_cuda_scratch(c, 7 * btc * sizeof(float), &scratch);
    if (st != TUNE_OK)
        return st;
    float *qp = (float *)scratch, *kp = qp + btc, *vp = kp + btc, *dop = vp + btc;
    float *dqp = dop + btc, *dkp = dqp + btc, *dvp = dkp + btc;
    unsigned blocks = tunep_cuda_blocks(btc, 256);

    permute_kernel<<<blocks, 256, 0, c->stream>>>(qp, kp, vp, q, k, v, B, T, NH, HS, ld);
    TUNEP_CUDA_LAUNCHED(c);
    permute_kernel<<<blocks, 256, 0, c->stream>>>(dop, NULL, NULL, dout, NULL, NULL, B, T, NH, HS,
                                                  C);
    TUNEP_CUDA_LAUNCHED(c);
    /* d(att or att_drop) = dout v^T; dv = (att or att_drop)^T dout */
    const float *pa = dropout ? att_drop : att;
    float *dpa = dropout ? datt_drop : datt;
    if ((st = tunep_cuda_gemm_batched(c, 0, 1, T, T, HS, 1.0f, dop, HS, sth, vp, HS, sth, 0.0f, dpa,
                                      T, stt, count)) != TUNE_OK ||
        (st = tunep_cuda_gemm_batched(c, 1, 0, T, HS, T, 1.0f, pa, T, stt, dop, HS, sth, 0.0f, dvp,
                                      HS, sth, count)) != TUNE_OK)
        return st;
    size_t rows = (size_t)count * (size_t)T;
    softmax_bwd_kernel<<<row_blocks(rows), ROW_THREADS, 0, c->stream>>>(
        dpreatt, datt, datt_drop, att, att_drop, mask, NH, T, rows, dropout, keep_scale);
    TUNEP_CUDA_LAUNCHED(c);
    /* scores = scale q k^T: dq = scale dS k, dk = scale dS^T q */
    if ((st = tunep_cuda_gemm_batched(c, 0, 0, T, HS, T, scale, dpreatt, T, stt, kp, HS, sth, 0.0f,
                                      dqp, HS, sth, count)) != TUNE_OK ||
        (st = tunep_cuda_gemm_batched(c, 1, 0, T, HS, T, scale, dpreatt, T, stt, qp, HS, sth, 0.0f,
                                      dkp, HS, sth, count)) != TUNE_OK)
        return st;
    unpermute_kernel<<<blocks, 256, 0, c->stream>>>(dq, dk, dv, dqp, dkp, dvp, B, T, NH, HS, ld);
    TUNEP_CUDA_LAUNCHED(c);
    return TUNE_OK;
}
