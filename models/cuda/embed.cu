/*
 * embed.cu - BERT's embeddings: out (B,T,C) = (wte[ids] + wtt[types]) +
 * wpe[t] (Hugging Face's order of additions, as the CPU reference), and the
 * backward, which ADDS into the three tables.
 *
 * The backward is deterministic without atomics. Position rows: one thread
 * per (t, c) adds the B tokens at position t in batch order, exactly the
 * CPU's order, so dwpe matches it bit for bit. Word and type rows repeat
 * across tokens, so the tokens are grouped by row first: a stable radix
 * sort of (row id, token index) pairs (CUB, as PyTorch's embedding backward
 * sorts its indices) puts each row's tokens together in token order. The
 * sorted list is cut into chunks of 32 tokens, one warp per chunk and 32
 * channels: a row whose tokens all fall in one chunk is summed in token
 * order starting from the table's value (the CPU's order: bit-equal); a
 * row spread over several chunks (padding, frequent words, token types) gets
 * one partial sum per chunk, and a second pass adds those in chunk order.
 * Each (row, channel) has exactly one writer, so nothing races.
 */
#include <cub/device/device_radix_sort.cuh>

#include "models/cuda/cuda_common.cuh"

#define SEG       32 /* sorted tokens per chunk */
#define SEG_WARPS 4  /* chunks per block */
/* Key bits to sort: ids < TUNEP_BERT_MAX_V = 2^24 and types < TUNEP_BERT_MAX_TV
 * = 16 (models/bert/bert.h); bert.c checks both before uploading a batch. */
#define ID_BITS   24
#define TYPE_BITS 4

static __global__ void embed_fwd_kernel(float *out, const int32_t *ids, const int32_t *types,
                                        const float *wte, const float *wpe, const float *wtt, int T,
                                        int C, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / (size_t)C, c = i % (size_t)C;
        float w = wte[(size_t)ids[r] * (size_t)C + c];
        float tt = wtt[(size_t)types[r] * (size_t)C + c];
        float p = wpe[(r % (size_t)T) * (size_t)C + c];
        out[i] = (w + tt) + p;
    }
}

/* dwpe[t, c] += sum over b of dout[b, t, c], b in order. */
static __global__ void embed_pos_bwd_kernel(float *dwpe, const float *dout, int B, int T, int C)
{
    size_t n = (size_t)T * (size_t)C;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float acc = dwpe[i];
        for (int b = 0; b < B; b++)
            acc += dout[(size_t)b * n + i];
        dwpe[i] = acc;
    }
}

static __global__ void iota_kernel(int32_t *v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] = i;
}

/*
 * Chunk q = sorted tokens [32q, 32q + 32), channel c: walks the chunk's runs
 * of equal keys. A run that is its row's whole segment is added in place; a
 * run whose segment began in an earlier chunk goes to head[q]; a run whose
 * segment begins here and continues goes to tail[q] (this chunk owns it).
 */
static __global__ void segment_sum_kernel(float *dst, float *head, float *tail,
                                          const uint32_t *keys, const int32_t *rows,
                                          const float *dout, int N, int C)
{
    int q = blockIdx.x * SEG_WARPS + threadIdx.y;
    int c = blockIdx.y * 32 + threadIdx.x;
    if (q * SEG >= N || c >= C)
        return;
    int a = q * SEG, b = a + SEG < N ? a + SEG : N;
    for (int s = a; s < b;) {
        uint32_t key = keys[s];
        int e = s + 1;
        while (e < b && keys[e] == key)
            e++;
        int before = s == a && a > 0 && keys[a - 1] == key;
        int after = e == b && b < N && keys[b] == key;
        float *d = dst + (size_t)key * (size_t)C + (size_t)c;
        float acc = before || after ? 0.0f : *d;
        for (int j = s; j < e; j++)
            acc += dout[(size_t)rows[j] * (size_t)C + (size_t)c];
        if (before)
            head[(size_t)q * (size_t)C + (size_t)c] = acc;
        else if (after)
            tail[(size_t)q * (size_t)C + (size_t)c] = acc;
        else
            *d = acc;
        s = e;
    }
}

/* For each chunk that owns a segment spilling into later chunks: its tail
 * plus the later chunks' heads, in chunk order, added to the row. */
static __global__ void segment_finish_kernel(float *dst, const float *head, const float *tail,
                                             const uint32_t *keys, int N, int C)
{
    int q = blockIdx.x * SEG_WARPS + threadIdx.y;
    int c = blockIdx.y * 32 + threadIdx.x;
    if (q * SEG >= N || c >= C)
        return;
    int a = q * SEG, b = a + SEG < N ? a + SEG : N;
    uint32_t key = keys[b - 1];
    if (b >= N || keys[b] != key)
        return; /* the last run ends in this chunk */
    if (keys[a] == key && a > 0 && keys[a - 1] == key)
        return; /* a middle chunk of a segment owned further back */
    float acc = tail[(size_t)q * (size_t)C + (size_t)c];
    for (int qq = q + 1;; qq++) {
        acc += head[(size_t)qq * (size_t)C + (size_t)c];
        int b2 = (qq + 1) * SEG < N ? (qq + 1) * SEG : N;
        if (!(keys[b2 - 1] == key && b2 < N && keys[b2] == key))
            break;
    }
    dst[(size_t)key * (size_t)C + (size_t)c] += acc;
}

static size_t align256(size_t x)
{
    return (x + 255) / 256 * 256;
}

extern "C" tune_status tunep_cuda_embed_fwd(void *vctx, float *out, const int32_t *ids,
                                            const int32_t *types, const float *wte,
                                            const float *wpe, const float *wtt, int B, int T, int C)
{
    TUNEP_CUDA_ENTER(c, vctx);
    size_t n = (size_t)B * (size_t)T * (size_t)C;
    if (n == 0)
        return TUNE_OK;
    embed_fwd_kernel<<<tunep_cuda_blocks(n, 256), 256, 0, c->stream>>>(out, ids, types, wte, wpe,
                                                                       wtt, T, C, n);
    TUNEP_CUDA_LAUNCHED(c);
    return TUNE_OK;
}

extern "C" tune_status tunep_cuda_embed_bwd(void *vctx, float *dwte, float *dwpe, float *dwtt,
                                            const float *dout, const int32_t *ids,
                                            const int32_t *types, int B, int T, int C)
{
    TUNEP_CUDA_ENTER(c, vctx);
    int N = B * T;
    if (N <= 0 || C <= 0)
        return TUNE_OK;
    size_t tc = (size_t)T * (size_t)C;
    embed_pos_bwd_kernel<<<tunep_cuda_blocks(tc, 256), 256, 0, c->stream>>>(dwpe, dout, B, T, C);
    TUNEP_CUDA_LAUNCHED(c);

    /* Scratch: sorted keys, token indices in and out, per-chunk heads and
     * tails, CUB's temporary storage (the larger of the two sorts). */
    int nchunks = (N + SEG - 1) / SEG;
    size_t temp_ids = 0, temp_types = 0;
    TUNEP_CUDA_TRY(c, cub::DeviceRadixSort::SortPairs(
                          (void *)NULL, temp_ids, (const uint32_t *)NULL, (uint32_t *)NULL,
                          (const int32_t *)NULL, (int32_t *)NULL, N, 0, ID_BITS, c->stream));
    TUNEP_CUDA_TRY(c, cub::DeviceRadixSort::SortPairs(
                          (void *)NULL, temp_types, (const uint32_t *)NULL, (uint32_t *)NULL,
                          (const int32_t *)NULL, (int32_t *)NULL, N, 0, TYPE_BITS, c->stream));
    size_t temp_bytes = temp_ids > temp_types ? temp_ids : temp_types;
    size_t ints = align256((size_t)N * sizeof(int32_t));
    size_t parts = align256((size_t)nchunks * (size_t)C * sizeof(float));
    void *scratch = NULL;
    tune_status st = tunep_cuda_scratch(c, 3 * ints + 2 * parts + temp_bytes, &scratch);
    if (st != TUNE_OK)
        return st;
    char *base = (char *)scratch;
    uint32_t *keys_sorted = (uint32_t *)base;
    int32_t *rows_in = (int32_t *)(base + ints);
    int32_t *rows_sorted = (int32_t *)(base + 2 * ints);
    float *head = (float *)(base + 3 * ints);
    float *tail = (float *)(base + 3 * ints + parts);
    void *temp = base + 3 * ints + 2 * parts;

    iota_kernel<<<(unsigned)((N + 255) / 256), 256, 0, c->stream>>>(rows_in, N);
    TUNEP_CUDA_LAUNCHED(c);
    dim3 block(32, SEG_WARPS);
    dim3 grid((unsigned)((nchunks + SEG_WARPS - 1) / SEG_WARPS), (unsigned)((C + 31) / 32));
    float *tables[2] = {dwte, dwtt};
    const int32_t *keys_in[2] = {ids, types};
    const int bits[2] = {ID_BITS, TYPE_BITS};
    for (int k = 0; k < 2; k++) {
        size_t tb = temp_bytes;
        TUNEP_CUDA_TRY(c, cub::DeviceRadixSort::SortPairs(temp, tb, (const uint32_t *)keys_in[k],
                                                          keys_sorted, (const int32_t *)rows_in,
                                                          rows_sorted, N, 0, bits[k], c->stream));
        segment_sum_kernel<<<grid, block, 0, c->stream>>>(tables[k], head, tail, keys_sorted,
                                                          rows_sorted, dout, N, C);
        TUNEP_CUDA_LAUNCHED(c);
        segment_finish_kernel<<<grid, block, 0, c->stream>>>(tables[k], head, tail, keys_sorted, N,
                                                             C);
        TUNEP_CUDA_LAUNCHED(c);
    }
    return TUNE_OK;
}
