/*
 * cpu_philox.h - many Philox4x32-10 draws at once for the CPU dropout
 * kernels: the same numbers as tunep_rng_u32_at() (models/bert/bert_rng.h),
 * computed 16 blocks at a time with AVX-512 or 8 with AVX2 where the
 * translation unit is compiled for them (cpu_kernels_tmpl.c is built once
 * per x86-64 level, see cpu_backend.c), one block at a time otherwise.
 *
 * Philox is integer arithmetic, so every path gives exactly the scalar
 * generator's bits (tests/bert/test_bert_kernels.c compares them at
 * unaligned offsets and across the 2^32 block boundary). One scalar block
 * is ~40 dependent instructions for 4 draws; the vector paths run 8 or 16
 * blocks side by side, the 32x32->64-bit products split into even and odd
 * lanes (vpmuludq), and transpose the four output words back into element
 * order (element i = word i mod 4 of block i / 4).
 */
#ifndef TUNE_CPU_PHILOX_H
#define TUNE_CPU_PHILOX_H

#include <stddef.h>
#include <stdint.h>

#include "models/bert/bert_rng.h"

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#define CPU_PHILOX_M0 0xD2511F53u
#define CPU_PHILOX_M1 0xCD9E8D57u
#define CPU_PHILOX_W0 0x9E3779B9u
#define CPU_PHILOX_W1 0xBB67AE85u

#if defined(__AVX512F__)
/* Blocks blk .. blk+15 of (stream, seed): their 64 draws, in element order, to r. */
static inline void cpu_philox_x16(uint32_t *r, uint64_t blk, uint64_t stream, uint64_t seed)
{
    /* Block indices as 64-bit lanes, split into their low and high words. */
    const __m512i lane_lo = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    __m512i b_lo = _mm512_add_epi64(_mm512_set1_epi64((long long)blk), lane_lo);
    __m512i b_hi = _mm512_add_epi64(_mm512_set1_epi64((long long)(blk + 8)), lane_lo);
    __m256i c0_lo = _mm512_cvtepi64_epi32(b_lo), c0_hi = _mm512_cvtepi64_epi32(b_hi);
    __m256i c1_lo = _mm512_cvtepi64_epi32(_mm512_srli_epi64(b_lo, 32));
    __m256i c1_hi = _mm512_cvtepi64_epi32(_mm512_srli_epi64(b_hi, 32));
    __m512i c0 = _mm512_inserti64x4(_mm512_castsi256_si512(c0_lo), c0_hi, 1);
    __m512i c1 = _mm512_inserti64x4(_mm512_castsi256_si512(c1_lo), c1_hi, 1);
    __m512i c2 = _mm512_set1_epi32((int)(uint32_t)stream);
    __m512i c3 = _mm512_set1_epi32((int)(uint32_t)(stream >> 32));
    const __m512i m0 = _mm512_set1_epi32((int)CPU_PHILOX_M0);
    const __m512i m1 = _mm512_set1_epi32((int)CPU_PHILOX_M1);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        /* hi(M0 c0): even lanes' products in place, odd lanes' shifted down */
        __m512i pe0 = _mm512_mul_epu32(c0, m0);
        __m512i po0 = _mm512_mul_epu32(_mm512_srli_epi64(c0, 32), m0);
        __m512i pe1 = _mm512_mul_epu32(c2, m1);
        __m512i po1 = _mm512_mul_epu32(_mm512_srli_epi64(c2, 32), m1);
        __m512i hi0 = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe0, 32), po0);
        __m512i hi1 = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe1, 32), po1);
        __m512i lo0 = _mm512_mask_blend_epi32(0xAAAA, pe0, _mm512_slli_epi64(po0, 32));
        __m512i lo1 = _mm512_mask_blend_epi32(0xAAAA, pe1, _mm512_slli_epi64(po1, 32));
        __m512i n0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32((int)k0));
        __m512i n2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32((int)k1));
        c1 = lo1;
        c3 = lo0;
        c0 = n0;
        c2 = n2;
        k0 += CPU_PHILOX_W0;
        k1 += CPU_PHILOX_W1;
    }
    /* 4x4 transpose inside each 128-bit lane: u_j holds block 4L+j in lane L ... */
    __m512i t0 = _mm512_unpacklo_epi32(c0, c1), t1 = _mm512_unpackhi_epi32(c0, c1);
    __m512i t2 = _mm512_unpacklo_epi32(c2, c3), t3 = _mm512_unpackhi_epi32(c2, c3);
    __m512i u0 = _mm512_unpacklo_epi64(t0, t2), u1 = _mm512_unpackhi_epi64(t0, t2);
    __m512i u2 = _mm512_unpacklo_epi64(t1, t3), u3 = _mm512_unpackhi_epi64(t1, t3);
    /* ... then a 4x4 transpose of the 128-bit lanes puts blocks 4L..4L+3 in register L. */
    __m512i v0 = _mm512_shuffle_i32x4(u0, u1, 0x44), v1 = _mm512_shuffle_i32x4(u2, u3, 0x44);
    __m512i v2 = _mm512_shuffle_i32x4(u0, u1, 0xEE), v3 = _mm512_shuffle_i32x4(u2, u3, 0xEE);
    _mm512_storeu_si512((void *)r, _mm512_shuffle_i32x4(v0, v1, 0x88));
    _mm512_storeu_si512((void *)(r + 16), _mm512_shuffle_i32x4(v0, v1, 0xDD));
    _mm512_storeu_si512((void *)(r + 32), _mm512_shuffle_i32x4(v2, v3, 0x88));
    _mm512_storeu_si512((void *)(r + 48), _mm512_shuffle_i32x4(v2, v3, 0xDD));
}
#define CPU_PHILOX_VEC_BLOCKS 16
#define cpu_philox_vec        cpu_philox_x16

#elif defined(__AVX2__)
/* Blocks blk .. blk+7 of (stream, seed): their 32 draws, in element order, to r. */
static inline void cpu_philox_x8(uint32_t *r, uint64_t blk, uint64_t stream, uint64_t seed)
{
    uint32_t lo[8], hi[8];
    for (int j = 0; j < 8; j++) {
        lo[j] = (uint32_t)(blk + (uint64_t)j);
        hi[j] = (uint32_t)((blk + (uint64_t)j) >> 32);
    }
    __m256i c0 = _mm256_loadu_si256((const __m256i *)(const void *)lo);
    __m256i c1 = _mm256_loadu_si256((const __m256i *)(const void *)hi);
    __m256i c2 = _mm256_set1_epi32((int)(uint32_t)stream);
    __m256i c3 = _mm256_set1_epi32((int)(uint32_t)(stream >> 32));
    const __m256i m0 = _mm256_set1_epi32((int)CPU_PHILOX_M0);
    const __m256i m1 = _mm256_set1_epi32((int)CPU_PHILOX_M1);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        __m256i pe0 = _mm256_mul_epu32(c0, m0);
        __m256i po0 = _mm256_mul_epu32(_mm256_srli_epi64(c0, 32), m0);
        __m256i pe1 = _mm256_mul_epu32(c2, m1);
        __m256i po1 = _mm256_mul_epu32(_mm256_srli_epi64(c2, 32), m1);
        __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(pe0, 32), po0, 0xAA);
        __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(pe1, 32), po1, 0xAA);
        __m256i lo0 = _mm256_blend_epi32(pe0, _mm256_slli_epi64(po0, 32), 0xAA);
        __m256i lo1 = _mm256_blend_epi32(pe1, _mm256_slli_epi64(po1, 32), 0xAA);
        __m256i n0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32((int)k0));
        __m256i n2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32((int)k1));
        c1 = lo1;
        c3 = lo0;
        c0 = n0;
        c2 = n2;
        k0 += CPU_PHILOX_W0;
        k1 += CPU_PHILOX_W1;
    }
    /* Transpose inside 128-bit lanes (u_j: block j in lane 0, block 4+j in lane 1), then
     * pair the lanes up. */
    __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
    __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
    __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    _mm256_storeu_si256((__m256i *)(void *)r, _mm256_permute2x128_si256(u0, u1, 0x20));
    _mm256_storeu_si256((__m256i *)(void *)(r + 8), _mm256_permute2x128_si256(u2, u3, 0x20));
    _mm256_storeu_si256((__m256i *)(void *)(r + 16), _mm256_permute2x128_si256(u0, u1, 0x31));
    _mm256_storeu_si256((__m256i *)(void *)(r + 24), _mm256_permute2x128_si256(u2, u3, 0x31));
}
#define CPU_PHILOX_VEC_BLOCKS 8
#define cpu_philox_vec        cpu_philox_x8
#endif

/* r[j] = draw of element idx0 + j of the stream, j < n (tunep_rng_u32_at). */
static inline void cpu_philox_fill(uint32_t *r, uint64_t idx0, size_t n, uint64_t seed,
                                   uint64_t stream)
{
    uint32_t w[4];
    size_t j = 0;
    /* Scalar up to a block boundary ... */
    while (j < n && ((idx0 + j) & 3) != 0) {
        tunep_philox4x32(w, (idx0 + j) >> 2, stream, seed);
        for (unsigned q = (unsigned)((idx0 + j) & 3); q < 4 && j < n; q++, j++)
            r[j] = w[q];
    }
#if defined(CPU_PHILOX_VEC_BLOCKS)
    /* ... whole vectors of blocks ... */
    for (; j + 4 * CPU_PHILOX_VEC_BLOCKS <= n; j += 4 * CPU_PHILOX_VEC_BLOCKS)
        cpu_philox_vec(r + j, (idx0 + j) >> 2, stream, seed);
#endif
    /* ... and the rest one block at a time. */
    while (j < n) {
        tunep_philox4x32(w, (idx0 + j) >> 2, stream, seed);
        for (unsigned q = 0; q < 4 && j < n; q++, j++)
            r[j] = w[q];
    }
}

#endif /* TUNE_CPU_PHILOX_H */
