/*
 * tpe_kernel_tmpl.c - the kernels of tpe_kernel.h, compiled once per
 * instruction set (search/meson.build): plain C loops that the compiler
 * vectorises (SSE2 on any x86-64, AVX2 or AVX-512 in the other builds).
 *
 * exp(x) = 2^(k/64) e^r with k = round(64 x / ln 2) and |r| <= ln(2)/128:
 * 2^(k/64) is a table entry 2^((k mod 64)/64) (each correctly rounded) with
 * floor(k/64) added to its exponent, e^r the Taylor polynomial of degree 5
 * (its truncation error r^6/720 < 4e-17). k comes from the round-to-nearest
 * of adding 1.5 * 2^46, whose last bit is worth 1/64: the low bits of the
 * sum are k, with no conversion to an integer (which SSE2 lacks for 64-bit
 * lanes). ln 2 is split in two so that k ln2_hi is exact. Below -708 the
 * exponent would leave the normal range: the result is 0 there, a select
 * rather than a branch so the loops stay vectorised.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "search/tpe_kernel.h"

#if defined(TUNEP_TPE_BUILD_AVX512)
#include <immintrin.h>
#endif

#if defined(TUNEP_TPE_BUILD_AVX512)
#define KFN(name) name##_avx512
#define KNAME     "avx512"
#elif defined(TUNEP_TPE_BUILD_AVX2)
#define KFN(name) name##_avx2
#define KNAME     "avx2"
#else
#define KFN(name) name##_generic
#define KNAME     "generic"
#endif

/* 2^(j/64), j = 0..63, correctly rounded */
static const double exp2_64[64] = {
    0x1.0000000000000p+0, 0x1.02c9a3e778061p+0, 0x1.059b0d3158574p+0, 0x1.0874518759bc8p+0,
    0x1.0b5586cf9890fp+0, 0x1.0e3ec32d3d1a2p+0, 0x1.11301d0125b51p+0, 0x1.1429aaea92de0p+0,
    0x1.172b83c7d517bp+0, 0x1.1a35beb6fcb75p+0, 0x1.1d4873168b9aap+0, 0x1.2063b88628cd6p+0,
    0x1.2387a6e756238p+0, 0x1.26b4565e27cddp+0, 0x1.29e9df51fdee1p+0, 0x1.2d285a6e4030bp+0,
    0x1.306fe0a31b715p+0, 0x1.33c08b26416ffp+0, 0x1.371a7373aa9cbp+0, 0x1.3a7db34e59ff7p+0,
    0x1.3dea64c123422p+0, 0x1.4160a21f72e2ap+0, 0x1.44e086061892dp+0, 0x1.486a2b5c13cd0p+0,
    0x1.4bfdad5362a27p+0, 0x1.4f9b2769d2ca7p+0, 0x1.5342b569d4f82p+0, 0x1.56f4736b527dap+0,
    0x1.5ab07dd485429p+0, 0x1.5e76f15ad2148p+0, 0x1.6247eb03a5585p+0, 0x1.6623882552225p+0,
    0x1.6a09e667f3bcdp+0, 0x1.6dfb23c651a2fp+0, 0x1.71f75e8ec5f74p+0, 0x1.75feb564267c9p+0,
    0x1.7a11473eb0187p+0, 0x1.7e2f336cf4e62p+0, 0x1.82589994cce13p+0, 0x1.868d99b4492edp+0,
    0x1.8ace5422aa0dbp+0, 0x1.8f1ae99157736p+0, 0x1.93737b0cdc5e5p+0, 0x1.97d829fde4e50p+0,
    0x1.9c49182a3f090p+0, 0x1.a0c667b5de565p+0, 0x1.a5503b23e255dp+0, 0x1.a9e6b5579fdbfp+0,
    0x1.ae89f995ad3adp+0, 0x1.b33a2b84f15fbp+0, 0x1.b7f76f2fb5e47p+0, 0x1.bcc1e904bc1d2p+0,
    0x1.c199bdd85529cp+0, 0x1.c67f12e57d14bp+0, 0x1.cb720dcef9069p+0, 0x1.d072d4a07897cp+0,
    0x1.d5818dcfba487p+0, 0x1.da9e603db3285p+0, 0x1.dfc97337b9b5fp+0, 0x1.e502ee78b3ff6p+0,
    0x1.ea4afa2a490dap+0, 0x1.efa1bee615a27p+0, 0x1.f50765b6e4540p+0, 0x1.fa7c1819e90d8p+0,
};

#define TPE_HALF_LOG2E (-0x1.71547652b82fep-1) /* -log2(e) / 2: exp(-z^2 / 2) = 2^(this z^2) */

static inline double kexp(double x)
{
    const double shift = 0x1.8p46;              /* 1.5 * 2^46: its last bit is 1/64 */
    const double inv_ln2 = 0x1.71547652b82fep0; /* 1 / ln 2 */
    const double ln2_hi = 0x1.62e42ff000000p-1; /* ln 2 to 32 bits: k ln2_hi is exact */
    const double ln2_lo = -0x1.718432a1b0e26p-35;
    double kd = x * inv_ln2 + shift;
    uint64_t ki, sb;
    memcpy(&ki, &kd, sizeof ki); /* the low bits: k, in two's complement */
    kd -= shift;                 /* k / 64 */
    double r = x - kd * ln2_hi - kd * ln2_lo;
    double p = 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    double t = exp2_64[ki & 63u], scale;
    memcpy(&sb, &t, sizeof sb);
    sb += (ki >> 6) << 52; /* floor(k / 64) into the exponent, modulo 2^12: wraps below -1022 */
    memcpy(&scale, &sb, sizeof scale);
    return x < -708.0 ? 0.0 : p * scale;
}

/*
 * 2^y = 2^(k/64) 2^r with k = round(64 y) and r = y - k/64 exact, |r| <= 1/128:
 * the table and the Taylor polynomial of e^(r ln 2) of degree 5 (truncation
 * below 4e-17). From y = -1022 down the result is 0: the exponent would wrap;
 * the test is on y's bits (a subtraction and a shift, which SSE2 has for
 * 64-bit lanes) so that the loops stay vectorised on every instruction set.
 */
static inline double kexp2(double y)
{
    const double shift = 0x1.8p46, lim = -1022.0;
    double kd = y + shift;
    uint64_t ki, sb, uy, ulim;
    memcpy(&ki, &kd, sizeof ki);
    kd -= shift;
    double r = y - kd;
    double p = 0x1.5d87fe78a6731p-10; /* ln(2)^i / i! */
    p = p * r + 0x1.3b2ab6fba4e77p-7;
    p = p * r + 0x1.c6b08d704a0c0p-5;
    p = p * r + 0x1.ebfbdff82c58fp-3;
    p = p * r + 0x1.62e42fefa39efp-1;
    p = p * r + 1.0;
    double t = exp2_64[ki & 63u], scale;
    memcpy(&sb, &t, sizeof sb);
    sb += (ki >> 6) << 52;
    memcpy(&uy, &y, sizeof uy);
    memcpy(&ulim, &lim, sizeof ulim);
    sb &= -(((uy - ulim) | ~uy) >> 63); /* y >= 0, or its bits below -1022's (NaN: NaN * 0) */
    memcpy(&scale, &sb, sizeof scale);
    return p * scale;
}

static void KFN(tunep_tpe_exp2_n)(const double *x, double *y, size_t n)
{
    for (size_t k = 0; k < n; k++)
        y[k] = kexp2(x[k]);
}

/*
 * log(x) for positive normal x: x = 2^k m with m in [sqrt(2)/2, sqrt(2)) (k
 * from the bits, shifted by sqrt(2)/2's so that no comparison is needed), f
 * = m - 1, s = f / (2 + f), and log(m) = 2 atanh(s) = f - f^2/2 + s (f^2/2 +
 * R(s^2)) with R's Taylor series 2 z / 3 + 2 z^2 / 5 + ... to z^9
 * (truncation below 2e-17 for s^2 <= 0.0295); k ln 2 in two parts, the
 * first exact. An array with other x (zero, negative, subnormal, infinite,
 * NaN) goes to libm's log whole: every variant makes the same choice.
 */
static inline double klog(double x)
{
    const uint64_t off = 0x3fe6a09e667f3bcdu; /* the bits of sqrt(2) / 2 */
    uint64_t u, t, mb, kb;
    memcpy(&u, &x, sizeof u);
    t = u - off;
    kb = ((t >> 52) & 0xfffu) ^ 0x800u; /* k + 2048, k the signed 12-bit exponent of t */
    mb = u - (((kb - 0x800u) & 0xfffu) << 52);
    double m, kd;
    memcpy(&m, &mb, sizeof m);
    uint64_t kdb = 0x4330000000000000u | kb; /* 2^52 + k + 2048, exactly */
    memcpy(&kd, &kdb, sizeof kd);
    kd -= 4503599627372544.0; /* 2^52 + 2048 */
    double f = m - 1.0, s = f / (2.0 + f), z = s * s, hfsq = 0.5 * f * f;
    double r = 2.0 / 19.0;
    r = r * z + 2.0 / 17.0;
    r = r * z + 2.0 / 15.0;
    r = r * z + 2.0 / 13.0;
    r = r * z + 2.0 / 11.0;
    r = r * z + 2.0 / 9.0;
    r = r * z + 2.0 / 7.0;
    r = r * z + 2.0 / 5.0;
    r = r * z + 2.0 / 3.0;
    r = r * z;
    return kd * 0x1.62e42fee00000p-1 - ((hfsq - (s * (hfsq + r) + kd * 0x1.a39ef35793c76p-33)) - f);
}

static void KFN(tunep_tpe_log_n)(const double *x, double *y, size_t n)
{
    int other = 0;
    for (size_t k = 0; k < n; k++)
        other |= !(x[k] >= 0x1.0p-1022 && x[k] <= 0x1.fffffffffffffp1023);
    if (other) { /* some x is not a positive normal number: libm's logs, all of them */
        for (size_t k = 0; k < n; k++)
            y[k] = log(x[k]);
        return;
    }
    for (size_t k = 0; k < n; k++)
        y[k] = klog(x[k]);
}

static void KFN(tunep_tpe_exp_n)(const double *x, double *y, size_t n)
{
    for (size_t k = 0; k < n; k++)
        y[k] = kexp(x[k]);
}

_Static_assert(TUNEP_TPE_LANES == 8, "lanes_total adds up eight lanes");

/* The lanes added up in a fixed order, then the tail. */
static inline double lanes_total(const double *acc, double tail)
{
    return (((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))) +
           tail;
}

#if defined(TUNEP_TPE_BUILD_AVX512)
/*
 * The AVX-512 build spells the eight lanes of gauss_sum out: the same
 * operations on the same values as kexp2 lane by lane (so the same bits), but
 * the table read with two-table permutes from registers instead of the eight
 * scalar loads the compiler makes of it, and the lanes' sums kept in a
 * register.
 */
/* exp2_64[ki & 63] from the table in registers: bits 0-3 pick from pairs, then bits 4 and 5 */
static inline __m512d table64_8(__m512i ki, const __m512d *tab)
{
    __m512d t0 = _mm512_permutex2var_pd(tab[0], ki, tab[1]);
    __m512d t1 = _mm512_permutex2var_pd(tab[2], ki, tab[3]);
    __m512d t2 = _mm512_permutex2var_pd(tab[4], ki, tab[5]);
    __m512d t3 = _mm512_permutex2var_pd(tab[6], ki, tab[7]);
    __mmask8 b4 = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16));
    __mmask8 b5 = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(32));
    return _mm512_mask_blend_pd(b5, _mm512_mask_blend_pd(b4, t0, t1),
                                _mm512_mask_blend_pd(b4, t2, t3));
}

static inline __m512d kexp2_8(__m512d y, const __m512d *tab)
{
    const __m512d shift = _mm512_set1_pd(0x1.8p46);
    __m512d kd = _mm512_add_pd(y, shift);
    __m512i ki = _mm512_castpd_si512(kd);
    __m512d r = _mm512_sub_pd(y, _mm512_sub_pd(kd, shift));
    __m512d p = _mm512_set1_pd(0x1.5d87fe78a6731p-10);
    p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(0x1.3b2ab6fba4e77p-7));
    p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(0x1.c6b08d704a0c0p-5));
    p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(0x1.ebfbdff82c58fp-3));
    p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(0x1.62e42fefa39efp-1));
    p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(1.0));
    __m512d t = table64_8(ki, tab);
    __m512i sb =
        _mm512_add_epi64(_mm512_castpd_si512(t), _mm512_slli_epi64(_mm512_srli_epi64(ki, 6), 52));
    /* kexp2's test on the bits: y above -1022 or NaN (there the product is NaN too) */
    __mmask8 ok = _mm512_cmp_pd_mask(y, _mm512_set1_pd(-1022.0), _CMP_NLE_UQ);
    return _mm512_maskz_mul_pd(ok, p, _mm512_castsi512_pd(sb));
}
#endif

static double KFN(tunep_tpe_gauss_sum)(const double *mu, const double *isig, const double *coef,
                                       size_t n, double x)
{
    double acc[TUNEP_TPE_LANES] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, tail = 0.0;
    size_t k = 0;
#if defined(TUNEP_TPE_BUILD_AVX512)
    __m512d tab[8], vx = _mm512_set1_pd(x), c = _mm512_set1_pd(TPE_HALF_LOG2E);
    __m512d vacc = _mm512_setzero_pd();
    for (int i = 0; i < 8; i++)
        tab[i] = _mm512_loadu_pd(exp2_64 + 8 * i);
    for (; k + TUNEP_TPE_LANES <= n; k += TUNEP_TPE_LANES) {
        __m512d z =
            _mm512_mul_pd(_mm512_sub_pd(vx, _mm512_loadu_pd(mu + k)), _mm512_loadu_pd(isig + k));
        __m512d e = kexp2_8(_mm512_mul_pd(_mm512_mul_pd(c, z), z), tab);
        vacc = _mm512_add_pd(vacc, _mm512_mul_pd(_mm512_loadu_pd(coef + k), e));
    }
    _mm512_storeu_pd(acc, vacc);
#else
    for (; k + TUNEP_TPE_LANES <= n; k += TUNEP_TPE_LANES)
        for (size_t j = 0; j < TUNEP_TPE_LANES; j++) {
            double z = (x - mu[k + j]) * isig[k + j];
            acc[j] += coef[k + j] * kexp2(TPE_HALF_LOG2E * z * z);
        }
#endif
    for (; k < n; k++) {
        double z = (x - mu[k]) * isig[k];
        tail += coef[k] * kexp2(TPE_HALF_LOG2E * z * z);
    }
    return lanes_total(acc, tail);
}

#if defined(TUNEP_TPE_BUILD_AVX512)
/* kexp on eight lanes, as kexp2_8 for kexp2 (the same operations lane by lane). */
static inline __m512d kexp_8(__m512d x, const __m512d *tab)
{
    const __m512d shift = _mm512_set1_pd(0x1.8p46);
    __m512d kd = _mm512_add_pd(_mm512_mul_pd(x, _mm512_set1_pd(0x1.71547652b82fep0)), shift);
    __m512i ki = _mm512_castpd_si512(kd);
    kd = _mm512_sub_pd(kd, shift);
    __m512d r =
        _mm512_sub_pd(_mm512_sub_pd(x, _mm512_mul_pd(kd, _mm512_set1_pd(0x1.62e42ff000000p-1))),
                      _mm512_mul_pd(kd, _mm512_set1_pd(-0x1.718432a1b0e26p-35)));
    __m512d p = _mm512_set1_pd(1.0 / 120.0);
    p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(1.0 / 24.0));
    p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(1.0 / 6.0));
    p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(0.5));
    p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(1.0));
    p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(1.0));
    __m512d t = table64_8(ki, tab);
    __m512i sb =
        _mm512_add_epi64(_mm512_castpd_si512(t), _mm512_slli_epi64(_mm512_srli_epi64(ki, 6), 52));
    __mmask8 ok = _mm512_cmp_pd_mask(x, _mm512_set1_pd(-708.0), _CMP_NLT_UQ); /* NaN too */
    return _mm512_maskz_mul_pd(ok, p, _mm512_castsi512_pd(sb));
}
#endif

static double KFN(tunep_tpe_exp_sum)(const double *v, size_t n, double shift)
{
    double acc[TUNEP_TPE_LANES] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, tail = 0.0;
    size_t k = 0;
#if defined(TUNEP_TPE_BUILD_AVX512)
    __m512d tab[8], vs = _mm512_set1_pd(shift), vacc = _mm512_setzero_pd();
    for (int i = 0; i < 8; i++)
        tab[i] = _mm512_loadu_pd(exp2_64 + 8 * i);
    for (; k + TUNEP_TPE_LANES <= n; k += TUNEP_TPE_LANES)
        vacc = _mm512_add_pd(vacc, kexp_8(_mm512_sub_pd(_mm512_loadu_pd(v + k), vs), tab));
    _mm512_storeu_pd(acc, vacc);
#else
    for (; k + TUNEP_TPE_LANES <= n; k += TUNEP_TPE_LANES)
        for (size_t j = 0; j < TUNEP_TPE_LANES; j++)
            acc[j] += kexp(v[k + j] - shift);
#endif
    for (; k < n; k++)
        tail += kexp(v[k] - shift);
    return lanes_total(acc, tail);
}

static double KFN(tunep_tpe_max_n)(const double *v, size_t n)
{
    double acc[TUNEP_TPE_LANES], m = -(double)INFINITY;
    for (size_t j = 0; j < TUNEP_TPE_LANES; j++)
        acc[j] = -(double)INFINITY;
    size_t k = 0;
    for (; k + TUNEP_TPE_LANES <= n; k += TUNEP_TPE_LANES)
        for (size_t j = 0; j < TUNEP_TPE_LANES; j++)
            acc[j] = v[k + j] > acc[j] ? v[k + j] : acc[j];
    for (; k < n; k++)
        m = v[k] > m ? v[k] : m;
    for (size_t j = 0; j < TUNEP_TPE_LANES; j++)
        m = acc[j] > m ? acc[j] : m;
    return m;
}

static void KFN(tunep_tpe_div_n)(double *x, size_t n, double d)
{
    for (size_t k = 0; k < n; k++)
        x[k] /= d;
}

static void KFN(tunep_tpe_fit_coef)(const double *mu, const double *sig, const double *w, size_t n,
                                    double low, double high, double cut, double norm, double *isig,
                                    double *coef)
{
    for (size_t k = 0; k < n; k++) {
        double is = 1.0 / sig[k];
        double a = (low - mu[k]) * is, b = (high - mu[k]) * is;
        isig[k] = is;
        coef[k] = a < -cut && b > cut ? w[k] / (1.0 * norm) : (double)NAN;
    }
}

static void KFN(tunep_tpe_widths)(const double *x, size_t n, double minsig, double maxsig,
                                  double *sig)
{
    for (size_t i = 0; i < n; i++) {
        double left = x[i + 1] - x[i], right = x[i + 2] - x[i + 1];
        double sg = left > right ? left : right;
        sig[i] = sg < minsig ? minsig : sg > maxsig ? maxsig : sg;
    }
}

static int KFN(tunep_tpe_has_ties)(const double *x, size_t n)
{
    int ties = 0;
    for (size_t k = 1; k < n; k++)
        ties |= x[k] == x[k - 1];
    return ties;
}

static size_t KFN(tunep_tpe_merge)(double *mu, double *sig, double *w, size_t n)
{
    if (n == 0)
        return 0;
    size_t u = 0; /* kernels so far, the last one's at u - 1 (written at k = 0 below) */
    double m = mu[0], s = sig[0], acc = 0.0;
    for (size_t k = 0; k < n; k++) {
        int same = k > 0 && mu[k] == m && sig[k] == s;
        size_t at = same ? u - 1 : u;
        acc = same ? acc + w[k] : w[k];
        m = mu[k];
        s = sig[k];
        mu[at] = m;
        sig[at] = s;
        w[at] = acc;
        u = at + 1;
    }
    return u;
}

/*
 * The running maximum and minimum: maxima and minima are exact, so any order
 * of taking them gives the same bits (no NaN: sig > 0; no -0.0: mu + cut sig
 * is +0.0 when it is 0). The AVX-512 build scans eight lanes at a time, in
 * three shifted maxima and the block before's last.
 */
static void KFN(tunep_tpe_reach)(const double *mu, const double *sig, size_t n, double cut,
                                 double *hi, double *lo)
{
    double reach = -(double)INFINITY;
    size_t k = 0, full = 0;
#if defined(TUNEP_TPE_BUILD_AVX512)
    const __m512d vc = _mm512_set1_pd(cut), ninf = _mm512_set1_pd(-(double)INFINITY);
    const __m512d pinf = _mm512_set1_pd((double)INFINITY);
    const __m512i last = _mm512_set1_epi64(7), first = _mm512_setzero_si512();
    __m512d carry = ninf;
    full = n - n % 8;
    for (; k < full; k += 8) {
        __m512d v =
            _mm512_add_pd(_mm512_loadu_pd(mu + k), _mm512_mul_pd(vc, _mm512_loadu_pd(sig + k)));
        v = _mm512_max_pd(v, _mm512_castsi512_pd(_mm512_alignr_epi64(
                                 _mm512_castpd_si512(v), _mm512_castpd_si512(ninf), 7)));
        v = _mm512_max_pd(v, _mm512_castsi512_pd(_mm512_alignr_epi64(
                                 _mm512_castpd_si512(v), _mm512_castpd_si512(ninf), 6)));
        v = _mm512_max_pd(v, _mm512_castsi512_pd(_mm512_alignr_epi64(
                                 _mm512_castpd_si512(v), _mm512_castpd_si512(ninf), 4)));
        v = _mm512_max_pd(v, carry);
        _mm512_storeu_pd(hi + k, v);
        carry = _mm512_permutexvar_pd(last, v);
    }
    if (full > 0)
        reach = hi[full - 1];
#endif
    for (; k < n; k++) {
        double r = mu[k] + cut * sig[k];
        reach = reach > r ? reach : r;
        hi[k] = reach;
    }
    reach = (double)INFINITY;
    for (k = n; k-- > full;) {
        double r = mu[k] - cut * sig[k];
        reach = reach < r ? reach : r;
        lo[k] = reach;
    }
#if defined(TUNEP_TPE_BUILD_AVX512)
    carry = _mm512_set1_pd(reach);
    for (k = full; k >= 8; k -= 8) {
        __m512d v = _mm512_sub_pd(_mm512_loadu_pd(mu + k - 8),
                                  _mm512_mul_pd(vc, _mm512_loadu_pd(sig + k - 8)));
        v = _mm512_min_pd(v, _mm512_castsi512_pd(_mm512_alignr_epi64(_mm512_castpd_si512(pinf),
                                                                     _mm512_castpd_si512(v), 1)));
        v = _mm512_min_pd(v, _mm512_castsi512_pd(_mm512_alignr_epi64(_mm512_castpd_si512(pinf),
                                                                     _mm512_castpd_si512(v), 2)));
        v = _mm512_min_pd(v, _mm512_castsi512_pd(_mm512_alignr_epi64(_mm512_castpd_si512(pinf),
                                                                     _mm512_castpd_si512(v), 4)));
        v = _mm512_min_pd(v, carry);
        _mm512_storeu_pd(lo + k - 8, v);
        carry = _mm512_permutexvar_pd(first, v);
    }
#endif
}

static void KFN(tunep_tpe_mv_dens)(double *lp, const double *mu, const double *lz, size_t n,
                                   double x, double sig)
{
    for (size_t k = 0; k < n; k++) {
        double z = (x - mu[k]) / sig;
        lp[k] += -0.5 * z * z + lz[k];
    }
}

static void KFN(tunep_tpe_mv_cat)(double *lp, const double *mu, size_t n, double x, double hit,
                                  double miss)
{
    for (size_t k = 0; k < n; k++)
        lp[k] += mu[k] == x ? hit : miss;
}

static void KFN(tunep_tpe_mv_gather_add)(double *lp, const double *tab, const size_t *id, size_t n)
{
    for (size_t k = 0; k < n; k++)
        lp[k] += tab[id[k]];
}

static void KFN(tunep_tpe_np_stops)(const uint64_t *items, size_t from, size_t to, uint32_t vp,
                                    size_t *lft, size_t *nl, size_t *rgt, size_t *nr)
{
    size_t l = *nl, r = *nr, p = from;
#if defined(TUNEP_TPE_BUILD_AVX512)
    /* eight keys per step: the positions of each list's lanes compressed to its end */
    const __m512i vvp = _mm512_set1_epi64(vp), step = _mm512_set1_epi64(8);
    __m512i pos =
        _mm512_add_epi64(_mm512_set1_epi64((long long)p), _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0));
    for (; p + 8 <= to; p += 8) {
        __m512i key = _mm512_srli_epi64(_mm512_loadu_si512(items + p), 32);
        __mmask8 ge = _mm512_cmp_epu64_mask(key, vvp, _MM_CMPINT_NLT);
        __mmask8 le = _mm512_cmp_epu64_mask(key, vvp, _MM_CMPINT_LE);
        _mm512_storeu_si512(lft + l, _mm512_maskz_compress_epi64(ge, pos));
        _mm512_storeu_si512(rgt + r, _mm512_maskz_compress_epi64(le, pos));
        l += (size_t)__builtin_popcount(ge);
        r += (size_t)__builtin_popcount(le);
        pos = _mm512_add_epi64(pos, step);
    }
#endif
    for (; p + 4 <= to; p += 4) {
        uint32_t x0 = TUNEP_NP_KEY(items[p]), x1 = TUNEP_NP_KEY(items[p + 1]);
        uint32_t x2 = TUNEP_NP_KEY(items[p + 2]), x3 = TUNEP_NP_KEY(items[p + 3]);
        size_t l0 = !(x0 < vp), l1 = !(x1 < vp), l2 = !(x2 < vp), l3 = !(x3 < vp);
        size_t r0 = !(vp < x0), r1 = !(vp < x1), r2 = !(vp < x2), r3 = !(vp < x3);
        lft[l] = p;
        l += l0;
        lft[l] = p + 1;
        l += l1;
        lft[l] = p + 2;
        l += l2;
        lft[l] = p + 3;
        l += l3;
        rgt[r] = p;
        r += r0;
        rgt[r] = p + 1;
        r += r1;
        rgt[r] = p + 2;
        r += r2;
        rgt[r] = p + 3;
        r += r3;
    }
    for (; p < to; p++) {
        uint32_t x = TUNEP_NP_KEY(items[p]);
        lft[l] = p;
        l += !(x < vp);
        rgt[r] = p;
        r += !(vp < x);
    }
    *nl = l;
    *nr = r;
}

const struct tunep_tpe_kernels KFN(tunep_tpe_kernels) = {
    .name = KNAME,
    .exp_n = KFN(tunep_tpe_exp_n),
    .exp2_n = KFN(tunep_tpe_exp2_n),
    .log_n = KFN(tunep_tpe_log_n),
    .gauss_sum = KFN(tunep_tpe_gauss_sum),
    .exp_sum = KFN(tunep_tpe_exp_sum),
    .max_n = KFN(tunep_tpe_max_n),
    .div_n = KFN(tunep_tpe_div_n),
    .fit_coef = KFN(tunep_tpe_fit_coef),
    .widths = KFN(tunep_tpe_widths),
    .has_ties = KFN(tunep_tpe_has_ties),
    .merge = KFN(tunep_tpe_merge),
    .reach = KFN(tunep_tpe_reach),
    .mv_dens = KFN(tunep_tpe_mv_dens),
    .mv_cat = KFN(tunep_tpe_mv_cat),
    .mv_gather_add = KFN(tunep_tpe_mv_gather_add),
    .np_stops = KFN(tunep_tpe_np_stops),
};
