/*
 * bert_rng.h - counter-based randomness for BERT: dropout masks and weight init.
 *
 * Every random number is a pure function of (seed, stream, element index),
 * computed by Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random
 * numbers: as easy as 1, 2, 3", SC 2011; the generator behind cuRAND's and
 * PyTorch's CUDA dropout). Nothing is stored and nothing depends on thread
 * count or visiting order, so a backward pass regenerates its forward's
 * dropout mask, and a CUDA backend using these same inline functions
 * reproduces the CPU masks bit for bit. Tests pin the Random123 known-answer
 * vectors (tests/bert/test_bert_layout.c).
 *
 * Mapping: key = seed (64 bits); counter words 0-1 = block index, words 2-3 =
 * stream. Element i of a dropout stream uses word (i mod 4) of block i/4.
 * Streams are (purpose, tensor id, attempt, layer), see tunep_bert_stream().
 */
#ifndef TUNE_BERT_RNG_H
#define TUNE_BERT_RNG_H

#include <stdint.h>

#if defined(__CUDACC__)
#define TUNEP_HD __host__ __device__
#else
#define TUNEP_HD
#endif

enum tunep_bert_rng_purpose {
    TUNEP_BERT_RNG_INIT = 1,    /* weight initialisation; tensor id = enum bert_param */
    TUNEP_BERT_RNG_DROPOUT = 2, /* dropout masks; tensor id = enum tunep_bert_drop_site */
};

/* The tensor ids of the dropout streams: fixed numbers (each site's row in
 * the activation table as it was when the query, key and value activations
 * were three rows), so that a seed's masks do not move when rows of that
 * table are added, merged or reordered. */
enum tunep_bert_drop_site {
    TUNEP_BERT_DROP_EMB = 4,      /* embeddings, after their LayerNorm */
    TUNEP_BERT_DROP_ATT = 10,     /* attention probabilities */
    TUNEP_BERT_DROP_ATT_RES = 13, /* attention output, before the residual */
    TUNEP_BERT_DROP_FC_RES = 20,  /* feed-forward output, before the residual */
    TUNEP_BERT_DROP_POOL = 26,    /* pooler output */
};

/* Philox4x32-10: out[0..3] from counter (ctr_lo, ctr_hi) and key. */
static inline TUNEP_HD void tunep_philox4x32(uint32_t out[4], uint64_t ctr_lo, uint64_t ctr_hi,
                                             uint64_t key)
{
    uint32_t c0 = (uint32_t)ctr_lo, c1 = (uint32_t)(ctr_lo >> 32);
    uint32_t c2 = (uint32_t)ctr_hi, c3 = (uint32_t)(ctr_hi >> 32);
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0; /* multipliers M0, M1 of the paper */
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u; /* Weyl increments W0, W1: golden ratio, sqrt(3) - 1 */
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* Stream id: purpose (8 bits), tensor id (8), attempt (16), layer (32). */
static inline TUNEP_HD uint64_t tunep_bert_stream(int purpose, int tensor, int attempt, int layer)
{
    return ((uint64_t)(purpose & 0xff) << 56) | ((uint64_t)(tensor & 0xff) << 48) |
           ((uint64_t)(attempt & 0xffff) << 32) | (uint64_t)(uint32_t)layer;
}

/* The 32-bit draw of element `idx` of a stream. */
static inline TUNEP_HD uint32_t tunep_rng_u32_at(uint64_t seed, uint64_t stream, uint64_t idx)
{
    uint32_t r[4];
    tunep_philox4x32(r, idx >> 2, stream, seed);
    return r[idx & 3];
}

/*
 * Elements whose draw is below the threshold are dropped: P(drop) =
 * threshold / 2^32 = p rounded down to a multiple of 2^-32. p is in [0, 1).
 */
static inline TUNEP_HD uint32_t tunep_dropout_threshold(double p)
{
    if (!(p > 0.0))
        return 0;
    double t = p * 4294967296.0;
    return t >= 4294967295.0 ? 4294967295u : (uint32_t)t;
}

#endif /* TUNE_BERT_RNG_H */
