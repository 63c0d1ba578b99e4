/*
 * cpu_kernels_tmpl.c - reference CPU kernels of struct tunep_kernels,
 * compiled twice: as float (production, OpenBLAS GEMMs) and with -DTUNEP_F64
 * as double (gradient checks, naive GEMMs), as dav1d templates its DSP code
 * per bit depth. The float instance is compiled again per x86-64 level
 * (-DTUNEP_CPU_BUILD_AVX2 or -DTUNEP_CPU_BUILD_AVX512 with that level's
 * -march; the backend picks one at run time, cpu_backend.c): the same
 * source, wider vectors, and the Philox draws of cpu_philox.h 8 or 16
 * blocks at a time.
 * All levels compute the same bits (no FMA contraction, integer Philox,
 * reductions in an order written out here), which the tests check.
 *
 * Conventions (models/bert/kernels_tmpl.h): outputs first, every backward
 * ADDS into its parameter gradients and WRITES its activation gradients
 * (matmul_bwd adds into dinp when asked to). Parallel loops run over rows, (batch, head)
 * pairs or channel blocks, never with atomics, and every reduction visits
 * its terms in a fixed order, so results do not depend on the thread count
 * (except through GEMM blocking) nor on which thread runs an iteration.
 * Reductions (LayerNorm statistics, softmax sums, bias and LayerNorm
 * parameter gradients) accumulate in double. The float instance computes
 * GELU's erf and exp and the attention softmax's exp with vectorisable
 * approximations (errors below 2e-7, measured next to cpu_exp_neg); the
 * double one uses libm. Dropout draws are Philox per element as bert_rng.h
 * defines them; the attention backward reads its mask off the saved
 * att_drop.
 * References: torch.nn.LayerNorm, torch.nn.functional.gelu (erf form),
 * Hugging Face BertSelfAttention / BertPooler, torch.optim.AdamW (1.13),
 * llm.c's CPU kernels for the layout of the backward passes.
 */
#include "models/cpu/cpu_backend.h"

#include <math.h>
#include <string.h>
#include <tgmath.h>

#include "models/bert/bert_rng.h"
#include "models/cpu/cpu_matmul.h"
#include "models/cpu/cpu_philox.h"

/*
 * The names each build defines. The source is written with those of the
 * baseline float build, tunep_cpu_kernels and tunep_cpu_philox_fill_generic;
 * the other builds rename them here, after every header (cpu_backend.h
 * declares all of them). The double build also takes the double names of the
 * model's types from bert_f64.h (struct tunep_kernels is struct
 * tunep_kernels_f64 there) and calls the double GEMM.
 */
#if defined(TUNEP_F64)
#include "models/bert/bert_f64.h"
#define tunep_cpu_kernels tunep_cpu_kernels_f64
#elif defined(TUNEP_CPU_BUILD_AVX2)
#define tunep_cpu_kernels             tunep_cpu_kernels_avx2
#define tunep_cpu_philox_fill_generic tunep_cpu_philox_fill_avx2
#elif defined(TUNEP_CPU_BUILD_AVX512)
#define tunep_cpu_kernels             tunep_cpu_kernels_avx512
#define tunep_cpu_philox_fill_generic tunep_cpu_philox_fill_avx512
#endif

/* The element type, the same as a preprocessor test (CPU_IS_FLOAT), and the
 * GEMM of that precision (cpu_matmul.h). */
#if defined(TUNEP_F64)
typedef double real;
#define CPU_IS_FLOAT 0
#define GEMM         tunep_cpu_gemm_f64
#else
typedef float real;
#define CPU_IS_FLOAT 1
#define GEMM         tunep_cpu_gemm
#endif

/* A static-schedule parallel loop over `nt` threads, serial unless `cond`. */
#if defined(_OPENMP)
#define CPU_PRAGMA(x) _Pragma(#x)
#define CPU_PARALLEL_FOR(nt, cond)                                                                 \
    CPU_PRAGMA(omp parallel for num_threads(nt) schedule(static) if(cond))
/* The same with iterations handed out one at a time, for loops of a few
 * hundred long iterations (attention heads): a thread the OS deschedules
 * holds up one iteration, not its static share (see cpu_matmul.c). */
#define CPU_PARALLEL_FOR_DYNAMIC(nt, cond)                                                         \
    CPU_PRAGMA(omp parallel for num_threads(nt) schedule(dynamic, 1) if(cond))
#else
#define CPU_PARALLEL_FOR(nt, cond)         (void)(nt);
#define CPU_PARALLEL_FOR_DYNAMIC(nt, cond) (void)(nt);
#endif

/* Below this many elements an element-wise loop stays serial (fork/join
 * costs a few microseconds, ~10^4 element operations). */
#define PAR_MIN 16384
/* Channel tile of the column reductions: two arrays of double accumulators
 * on the stack, 16 KiB each (rows up to this wide are read whole). */
#define COL_TILE 2048
/* col_reduce sums COL_ROWS rows in the working precision (floats: 16 lanes
 * per AVX-512 instruction, where doubles gave 8 and a conversion each), then
 * adds the block's sum into a double: the rounding error of a float sum of
 * 32 terms is ~32 ulp of the block, far under the gradients' own noise, and
 * the order stays fixed by the shape alone. */
#define COL_ROWS 32

static int nthreads(void *ctx)
{
    return ((const struct tunep_cpu_ctx *)ctx)->threads;
}

/*
 * Row sums in double in a fixed order that vectorises: element j goes to
 * partial sum j mod LANES, and the LANES partial sums are folded pairwise
 * (lane k with k + LANES/2, and so on down to one). A plain running sum is a
 * chain of dependent adds (~4 cycles each) the compiler may not reorder;
 * this order is written out here, so every ISA build and thread count gets
 * the same bits. LANES = 16: two AVX-512 registers of doubles in flight.
 */
#define LANES 16

static inline double fold_lanes(double *acc)
{
    for (int w = LANES / 2; w >= 1; w /= 2)
        for (int k = 0; k < w; k++)
            acc[k] += acc[k + w];
    return acc[0];
}

/* sum of x[j] over j < n */
static inline double sum_lanes(const real *x, int n)
{
    double acc[LANES] = {0};
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int k = 0; k < LANES; k++)
            acc[k] += (double)x[j + k];
    for (int k = 0; j + k < n; k++)
        acc[k] += (double)x[j + k];
    return fold_lanes(acc);
}

/* sum of (x[j] - m)^2 over j < n */
static inline double sumsq_dev_lanes(const real *x, double m, int n)
{
    double acc[LANES] = {0};
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int k = 0; k < LANES; k++) {
            double d = (double)x[j + k] - m;
            acc[k] += d * d;
        }
    for (int k = 0; j + k < n; k++) {
        double d = (double)x[j + k] - m;
        acc[k] += d * d;
    }
    return fold_lanes(acc);
}

/* sum of a[j] b[j] over j < n, each product in double */
static inline double dot_lanes(const real *a, const real *b, int n)
{
    double acc[LANES] = {0};
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int k = 0; k < LANES; k++)
            acc[k] += (double)a[j + k] * (double)b[j + k];
    for (int k = 0; j + k < n; k++)
        acc[k] += (double)a[j + k] * (double)b[j + k];
    return fold_lanes(acc);
}

/*
 * The column reductions behind dW/db of LayerNorm and db of Linear, in one
 * pass over the rows: dst_xhat[c] += sum_r a[r,c] xhat[r,c] with xhat =
 * (x - mean[r]) rstd[r] (skipped when dst_xhat is NULL), dst_sum[c] +=
 * sum_r a[r,c]. Columns are split across threads, and each column's rows
 * are summed in order (COL_ROWS at a time), so the result does not depend on
 * the split. A
 * thread walks its rows with all its columns at once (up to COL_TILE): a
 * tile narrower than the row reads memory in short strided runs that the
 * prefetchers follow badly (LayerNorm's backward spent 60% of its time
 * waiting for them with 256-column tiles of 512-wide rows).
 */
static void col_reduce(int nt, real *dst_xhat, real *dst_sum, const real *a, const real *x,
                       const real *mean, const real *rstd, int N, int C)
{
    int nblk = C >= 16 * nt ? nt : (C + 15) / 16;
    CPU_PARALLEL_FOR(nt, nblk > 1 && (size_t)N * (size_t)C >= PAR_MIN)
    for (int blk = 0; blk < nblk; blk++) {
        int c0 = (int)((long)C * blk / nblk), c1 = (int)((long)C * (blk + 1) / nblk);
        for (int t0 = c0; t0 < c1; t0 += COL_TILE) {
            int w = c1 - t0 < COL_TILE ? c1 - t0 : COL_TILE;
            double acc_x[COL_TILE], acc_s[COL_TILE];
            real blk_x[COL_TILE], blk_s[COL_TILE];
            for (int c = 0; c < w; c++)
                acc_x[c] = acc_s[c] = 0.0;
            for (int r0 = 0; r0 < N; r0 += COL_ROWS) {
                int r1 = N - r0 < COL_ROWS ? N : r0 + COL_ROWS;
                for (int c = 0; c < w; c++)
                    blk_x[c] = blk_s[c] = (real)0;
                for (int r = r0; r < r1; r++) {
                    const real *ar = a + (size_t)r * (size_t)C + t0;
                    if (dst_xhat) {
                        const real *xr = x + (size_t)r * (size_t)C + t0;
                        real m = mean[r], s = rstd[r];
                        for (int c = 0; c < w; c++) {
                            blk_x[c] += ar[c] * ((xr[c] - m) * s);
                            blk_s[c] += ar[c];
                        }
                    } else {
                        for (int c = 0; c < w; c++)
                            blk_s[c] += ar[c];
                    }
                }
                for (int c = 0; c < w; c++) {
                    acc_x[c] += (double)blk_x[c];
                    acc_s[c] += (double)blk_s[c];
                }
            }
            if (dst_xhat)
                for (int c = 0; c < w; c++)
                    dst_xhat[t0 + c] += (real)acc_x[c];
            if (dst_sum)
                for (int c = 0; c < w; c++)
                    dst_sum[t0 + c] += (real)acc_s[c];
        }
    }
}

/* ---- embeddings ---------------------------------------------------------- */

static tune_status embed_fwd(void *ctx, real *out, const int32_t *ids, const int32_t *types,
                             const real *wte, const real *wpe, const real *wtt, int B, int T, int C)
{
    int nt = nthreads(ctx);
    int N = B * T;
    CPU_PARALLEL_FOR(nt, (size_t)N * (size_t)C >= PAR_MIN)
    for (int r = 0; r < N; r++) {
        const real *w = wte + (size_t)ids[r] * (size_t)C;
        const real *p = wpe + (size_t)(r % T) * (size_t)C;
        const real *tt = wtt + (size_t)types[r] * (size_t)C;
        real *o = out + (size_t)r * (size_t)C;
        /* Hugging Face order: (word + type) + position. */
        for (int c = 0; c < C; c++)
            o[c] = (w[c] + tt[c]) + p[c];
    }
    return TUNE_OK;
}

static tune_status embed_bwd(void *ctx, real *dwte, real *dwpe, real *dwtt, const real *dout,
                             const int32_t *ids, const int32_t *types, int B, int T, int C)
{
    /* Rows of the tables repeat across tokens, so threads own channel ranges
     * and walk the tokens in order. */
    int nt = nthreads(ctx);
    int N = B * T;
    int nblk = nt < C ? nt : C;
    CPU_PARALLEL_FOR(nt, nblk > 1 && (size_t)N * (size_t)C >= PAR_MIN)
    for (int blk = 0; blk < nblk; blk++) {
        int c0 = (int)((long)C * blk / nblk), c1 = (int)((long)C * (blk + 1) / nblk);
        for (int r = 0; r < N; r++) {
            const real *d = dout + (size_t)r * (size_t)C;
            real *w = dwte + (size_t)ids[r] * (size_t)C;
            real *p = dwpe + (size_t)(r % T) * (size_t)C;
            real *tt = dwtt + (size_t)types[r] * (size_t)C;
            for (int c = c0; c < c1; c++) {
                w[c] += d[c];
                p[c] += d[c];
                tt[c] += d[c];
            }
        }
    }
    return TUNE_OK;
}

/* ---- LayerNorm ----------------------------------------------------------- */

static tune_status layernorm_fwd(void *ctx, real *out, real *mean, real *rstd, const real *inp,
                                 const real *w, const real *b, int N, int C, double eps)
{
    int nt = nthreads(ctx);
    CPU_PARALLEL_FOR(nt, (size_t)N * (size_t)C >= PAR_MIN)
    for (int r = 0; r < N; r++) {
        const real *x = inp + (size_t)r * (size_t)C;
        double m = sum_lanes(x, C) / C;
        double v = sumsq_dev_lanes(x, m, C); /* two-pass biased variance, as torch */
        real mr = (real)m;
        real rs = (real)(1.0 / sqrt(v / C + eps));
        real *o = out + (size_t)r * (size_t)C;
        for (int c = 0; c < C; c++)
            o[c] = (x[c] - mr) * rs * w[c] + b[c];
        mean[r] = mr;
        rstd[r] = rs;
    }
    return TUNE_OK;
}

static tune_status layernorm_bwd(void *ctx, real *dinp, real *dw, real *db, const real *dout,
                                 const real *inp, const real *w, const real *mean, const real *rstd,
                                 int N, int C)
{
    int nt = nthreads(ctx);
    /* dx = rstd (dn - mean(dn) - xhat mean(dn xhat)), dn = dout w. */
    CPU_PARALLEL_FOR(nt, (size_t)N * (size_t)C >= PAR_MIN)
    for (int r = 0; r < N; r++) {
        const real *x = inp + (size_t)r * (size_t)C;
        const real *d = dout + (size_t)r * (size_t)C;
        real m = mean[r], s = rstd[r];
        double acc_dn[LANES] = {0}, acc_dnx[LANES] = {0}; /* fixed-order sums, see LANES */
        for (int c0 = 0; c0 < C; c0 += LANES) {
            int n = C - c0 < LANES ? C - c0 : LANES;
            for (int k = 0; k < n; k++) {
                real dn = d[c0 + k] * w[c0 + k];
                acc_dn[k] += (double)dn;
                acc_dnx[k] += (double)dn * (double)((x[c0 + k] - m) * s);
            }
        }
        double sum_dn = fold_lanes(acc_dn), sum_dn_xhat = fold_lanes(acc_dnx);
        real a = (real)(sum_dn / C), bb = (real)(sum_dn_xhat / C);
        real *dx = dinp + (size_t)r * (size_t)C;
        for (int c = 0; c < C; c++) {
            real xhat = (x[c] - m) * s;
            dx[c] = s * (d[c] * w[c] - a - xhat * bb);
        }
    }
    col_reduce(nt, dw, db, dout, inp, mean, rstd, N, C);
    return TUNE_OK;
}

/* ---- Linear -------------------------------------------------------------- */

static tune_status matmul_fwd(void *ctx, real *out, const real *inp, const real *w, const real *b,
                              int N, int IC, int OC)
{
    int nt = nthreads(ctx);
    if (b) {
        /* As torch.addmm: the bias is the GEMM's C operand with beta = 1. */
        CPU_PARALLEL_FOR(nt, (size_t)N * (size_t)OC >= PAR_MIN)
        for (int r = 0; r < N; r++)
            memcpy(out + (size_t)r * (size_t)OC, b, (size_t)OC * sizeof(real));
    }
    GEMM(nt, 0, 1, N, OC, IC, (real)1, inp, IC, w, IC, b ? (real)1 : (real)0, out, OC);
    return TUNE_OK;
}

static tune_status matmul_bwd(void *ctx, real *dinp, real *dw, real *db, const real *dout,
                              const real *inp, const real *w, int N, int IC, int OC, int accumulate)
{
    int nt = nthreads(ctx);
    if (dinp) /* (N,IC) (+)= (N,OC) . (OC,IC) */
        GEMM(nt, 0, 0, N, IC, OC, (real)1, dout, OC, w, IC, accumulate ? (real)1 : (real)0, dinp,
             IC);
    /* (OC,IC) += (N,OC)^T . (N,IC) */
    GEMM(nt, 1, 0, OC, IC, N, (real)1, dout, OC, inp, IC, (real)1, dw, IC);
    if (db)
        col_reduce(nt, NULL, db, dout, NULL, NULL, NULL, N, OC);
    return TUNE_OK;
}

/* ---- float helpers ------------------------------------------------------ */

#if CPU_IS_FLOAT
/* a * b + c in the polynomials below: one fused multiply-add in the builds
 * that have FMA (AVX2 and AVX-512; about a third fewer instructions in
 * GELU, which is bound by them), a product and a sum in the baseline build.
 * These are the only float operations whose bits differ between the
 * instruction-set levels (by the rounding of the product: an ulp or so). */
#if defined(__FMA__)
#define CPU_MADD(a, b, c) fmaf((a), (b), (c))
#else
#define CPU_MADD(a, b, c) ((a) * (b) + (c))
#endif

/* c ? a : b as a bit blend: gcc (-ftrapping-math) will not if-convert a ?:
 * in a loop that also converts or divides, so the loop would stay scalar. */
static inline float cpu_sel(int c, float a, float b)
{
    uint32_t m = (uint32_t)0 - (uint32_t)(c != 0), ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    uint32_t r = (ua & m) | (ub & ~m);
    float f;
    memcpy(&f, &r, sizeof f);
    return f;
}

/*
 * Branch-free float exp and erf that gcc and clang auto-vectorise (libm's
 * expf/erff are scalar calls: GELU was ~20% of a bert-tiny step, and the
 * attention softmax calls exp T times per row). The double instance keeps
 * libm's exp/erf, exact for the finite-difference gradient checks.
 *
 * cpu_exp_neg(a) = e^a for a <= 0 (a > 0 gives 1, for callers that discard
 * it): a clamped to -87 (e^-87 ~ 1.6e-38, ~0 in every use), a = n ln2 + r
 * with n = round(a / ln2) (Cody-Waite split of ln2), e^r by its degree-7
 * Taylor polynomial (|r| <= ln2/2: truncation < 5.2e-9 relative), 2^n built
 * in the exponent bits.
 *
 * gelu_erf(z): |z| <= 1 uses erf(z) = z P(z^2), P of degree 6 fitted to
 * erf(z)/z on [0, 1] (weighted least squares iterated towards minimax,
 * Lawson's method, numpy; max error 1.2e-9 in exact arithmetic: half the
 * terms of the Maclaurin series to z^23 used before, same accuracy in
 * float); |z| > 1 uses Abramowitz & Stegun 7.1.26
 * (|error| <= 1.5e-7), 1 - (a1 t + ... + a5 t^5) e^(-z^2), t = 1/(1 + p|z|),
 * with the sign restored. Both are computed and one selected, so the loop has
 * no branches. The caller supplies e^(-z^2), which GELU's backward reuses
 * for the normal pdf.
 *
 * Measured error (these functions compiled with gcc -O2 against glibc's
 * double erf/exp, z on [-6, 6] step 2^-14 and [-10, 10] step 1e-3, a on
 * [-87, 0] step 1e-4; a one-off program, not in the tree): max |gelu_erf -
 * erf| = 1.3e-7 for |z| <= 1 and 1.8e-7 for |z| > 1; max relative error of
 * cpu_exp_neg = 9.7e-8; GELU' absolute error <= 1.7e-7 on x in [-10, 10].
 */
static inline float cpu_exp_neg(float a)
{
    a = cpu_sel(a < -87.0f, -87.0f, a);
    a = cpu_sel(a > 0.0f, 0.0f, a); /* callers may pass a > 0 and discard e^a */
    /* A NaN (a diverged trial) takes n = 0 and goes on as NaN through r:
     * converting it to int would be undefined. */
    float an = cpu_sel(a == a, a, 0.0f);
    int n = (int)(an * 1.44269504088896341f - 0.5f); /* a <= 0: truncation = round */
    float nf = (float)n;
    float r = (a - nf * 0.693145751953125f) - nf * 1.42860682030941723e-6f;
    float e = 1.0f / 5040.0f;
    e = CPU_MADD(e, r, 1.0f / 720.0f);
    e = CPU_MADD(e, r, 1.0f / 120.0f);
    e = CPU_MADD(e, r, 1.0f / 24.0f);
    e = CPU_MADD(e, r, 1.0f / 6.0f);
    e = CPU_MADD(e, r, 0.5f);
    e = CPU_MADD(e, r, 1.0f);
    e = CPU_MADD(e, r, 1.0f);
    uint32_t bits = (uint32_t)(n + 127) << 23;
    float s;
    memcpy(&s, &bits, sizeof s);
    return e * s;
}

static inline float gelu_erf(float z, float exp_mz2)
{
    float az = fabsf(z);
    int in = az <= 1.0f;             /* where the polynomial applies */
    float zs = cpu_sel(in, z, 0.0f); /* keeps the unused polynomial finite */
    float z2 = zs * zs;
    float c = 7.889312701611241e-05f;
    c = CPU_MADD(c, z2, -8.020904092815824e-04f);
    c = CPU_MADD(c, z2, 5.1895431846404475e-03f);
    c = CPU_MADD(c, z2, -2.6854449286210377e-02f);
    c = CPU_MADD(c, z2, 1.128360031238703e-01f);
    c = CPU_MADD(c, z2, -3.761262715279383e-01f);
    c = CPU_MADD(c, z2, 1.1283791659196238f); /* ~2/sqrt(pi) */
    float small = c * zs;
    float t = 1.0f / (1.0f + 0.3275911f * az);
    float q = 1.061405429f;
    q = CPU_MADD(q, t, -1.453152027f);
    q = CPU_MADD(q, t, 1.421413741f);
    q = CPU_MADD(q, t, -0.284496736f);
    q = CPU_MADD(q, t, 0.254829592f);
    float big = copysignf(1.0f - q * t * exp_mz2, z);
    return cpu_sel(in, small, big);
}
#endif

/* Elements per Philox batch of the dropout kernels: the draws of a chunk are
 * generated first (cpu_philox.h: 8 or 16 blocks per instruction where the
 * build has AVX2 or AVX-512), then applied by a branch-free loop that
 * vectorises. */
#define DROP_CHUNK 1024

/* r[j] = draw of element idx0 + j of the stream, j < n. */
static void dropout_draws(uint32_t *r, uint64_t idx0, size_t n, uint64_t seed, uint64_t stream)
{
    cpu_philox_fill(r, idx0, n, seed, stream);
}

/* ---- attention ----------------------------------------------------------- */

/* dst[j] = keep(j) ? src[j] * scale : 0 for j in [0, n), element j of the
 * stream being idx0 + j. */
static void dropout_row(real *dst, const real *src, int n, uint64_t idx0, uint32_t thr, real scale,
                        uint64_t seed, uint64_t stream)
{
    uint32_t r[DROP_CHUNK];
    for (int lo = 0; lo < n; lo += DROP_CHUNK) {
        int m = n - lo < DROP_CHUNK ? n - lo : DROP_CHUNK;
        dropout_draws(r, idx0 + (uint64_t)lo, (size_t)m, seed, stream);
        /* src * 0 for a dropped element: a zero, as before up to its sign */
        for (int j = 0; j < m; j++)
            dst[lo + j] = src[lo + j] * (r[j] >= thr ? scale : (real)0);
    }
}

static tune_status attention_fwd(void *ctx, real *out, real *att, real *att_drop, const real *q,
                                 const real *k, const real *v, const int32_t *mask, int B, int T,
                                 int C, int NH, int ld, double p, uint64_t seed, uint64_t stream)
{
    int nt = nthreads(ctx);
    int HS = C / NH;
    real scale = (real)(1.0 / sqrt((double)HS));
    uint32_t thr = tunep_dropout_threshold(p);
    real keep_scale = (real)(1.0 / (1.0 - p));
    size_t TT = (size_t)T * (size_t)T;
    CPU_PARALLEL_FOR_DYNAMIC(nt, B * NH > 1)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        size_t base = (size_t)b * (size_t)T * (size_t)C + (size_t)h * (size_t)HS;
        size_t qbase = (size_t)b * (size_t)T * (size_t)ld + (size_t)h * (size_t)HS;
        const int32_t *mb = mask + (size_t)b * (size_t)T;
        real *a = att + (size_t)bh * TT;
        /* scores = q k^T / sqrt(HS) */
        GEMM(1, 0, 1, T, T, HS, scale, q + qbase, ld, k + qbase, ld, (real)0, a, T);
        int any = 0;
        for (int j = 0; j < T; j++)
            any |= mb[j] != 0;
        for (int i = 0; i < T; i++) {
            real *row = a + (size_t)i * (size_t)T;
            if (!any) {
                /* Every key is padding: HF's scores all collapse to finfo.min,
                 * whose softmax is uniform. */
                for (int j = 0; j < T; j++)
                    row[j] = (real)(1.0 / T);
            } else {
                /* Branch-free loops that vectorise: the max over valid keys,
                 * the exponentials, their sum in double (sum_lanes: a fixed
                 * order), the normalisation. */
                real mxl[LANES]; /* the max is exact in any order: lanes vectorise */
                for (int u = 0; u < LANES; u++)
                    mxl[u] = -(real)INFINITY;
                for (int j0 = 0; j0 < T; j0 += LANES) {
                    int n = T - j0 < LANES ? T - j0 : LANES;
                    for (int u = 0; u < n; u++) {
                        real x = row[j0 + u];
                        mxl[u] = ((mb[j0 + u] != 0) & (x > mxl[u])) ? x : mxl[u];
                    }
                }
                real mx = mxl[0];
                for (int u = 1; u < LANES; u++)
                    mx = mxl[u] > mx ? mxl[u] : mx;
#if CPU_IS_FLOAT
                for (int j = 0; j < T; j++) /* masked scores may exceed mx */
                    row[j] = cpu_sel(mb[j] != 0, cpu_exp_neg(row[j] - mx), 0.0f);
#else
                for (int j = 0; j < T; j++)
                    row[j] = mb[j] ? exp(row[j] - mx) : (real)0;
#endif
                real inv = (real)(1.0 / sum_lanes(row, T));
                for (int j = 0; j < T; j++)
                    row[j] *= inv;
            }
            if (thr > 0)
                dropout_row(att_drop + (size_t)bh * TT + (size_t)i * (size_t)T, row, T,
                            (uint64_t)bh * TT + (uint64_t)i * (uint64_t)T, thr, keep_scale, seed,
                            stream);
        }
        const real *pa = thr > 0 ? att_drop + (size_t)bh * TT : a;
        GEMM(1, 0, 0, T, HS, T, (real)1, pa, T, v + qbase, ld, (real)0, out + base, C);
    }
    return TUNE_OK;
}

static tune_status attention_bwd(void *ctx, real *dq, real *dk, real *dv, real *dpreatt, real *datt,
                                 real *datt_drop, const real *dout, const real *q, const real *k,
                                 const real *v, const real *att, const real *att_drop,
                                 const int32_t *mask, int B, int T, int C, int NH, int ld, double p,
                                 uint64_t seed, uint64_t stream)
{
    int nt = nthreads(ctx);
    int HS = C / NH;
    real scale = (real)(1.0 / sqrt((double)HS));
    uint32_t thr = tunep_dropout_threshold(p);
    real keep_scale = (real)(1.0 / (1.0 - p));
    size_t TT = (size_t)T * (size_t)T;
    (void)seed; /* the dropout mask is read off att_drop, see below */
    (void)stream;
    CPU_PARALLEL_FOR_DYNAMIC(nt, B * NH > 1)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH;
        size_t base = (size_t)b * (size_t)T * (size_t)C + (size_t)(bh % NH) * (size_t)HS;
        size_t qbase = (size_t)b * (size_t)T * (size_t)ld + (size_t)(bh % NH) * (size_t)HS;
        const int32_t *mb = mask + (size_t)b * (size_t)T;
        const real *a = att + (size_t)bh * TT;
        real *da = datt + (size_t)bh * TT;
        real *dpre = dpreatt + (size_t)bh * TT;
        if (thr > 0) {
            const real *ad = att_drop + (size_t)bh * TT;
            real *dad = datt_drop + (size_t)bh * TT;
            GEMM(1, 0, 1, T, T, HS, (real)1, dout + base, C, v + qbase, ld, (real)0, dad, T);
            GEMM(1, 1, 0, T, HS, T, (real)1, ad, T, dout + base, C, (real)0, dv + qbase, ld);
            /* datt = dropout_bwd(datt_drop). The forward's mask is read off
             * att_drop instead of regenerating Philox per element: where att
             * != 0, att_drop != 0 exactly when kept (keep_scale > 1 cannot
             * underflow). Where att == 0 (masked keys), the mask is not
             * recoverable, but there P = 0, so datt's value there reaches no
             * gradient: dS = P (dP - sum P dP) is 0 either way. */
            for (size_t e = 0; e < TT; e++)
                da[e] = dad[e] * (ad[e] != (real)0 ? keep_scale : (real)0);
        } else {
            GEMM(1, 0, 1, T, T, HS, (real)1, dout + base, C, v + qbase, ld, (real)0, da, T);
            GEMM(1, 1, 0, T, HS, T, (real)1, a, T, dout + base, C, (real)0, dv + qbase, ld);
        }
        int any = 0;
        for (int j = 0; j < T; j++)
            any |= mb[j] != 0;
        if (any) {
            /* softmax backward: dS = P (dP - sum_j P dP); masked keys have P = 0.
             * (A row with no valid key is constant, so its dS is 0.) */
            for (int i = 0; i < T; i++) {
                const real *pr = a + (size_t)i * (size_t)T;
                const real *dpr = da + (size_t)i * (size_t)T;
                real *ds = dpre + (size_t)i * (size_t)T;
                real dotr = (real)dot_lanes(pr, dpr, T);
                for (int j = 0; j < T; j++)
                    ds[j] = pr[j] * (dpr[j] - dotr);
            }
        } else {
            memset(dpre, 0, TT * sizeof(real));
        }
        /* scores = scale q k^T: dq = scale dS k, dk = scale dS^T q */
        GEMM(1, 0, 0, T, HS, T, scale, dpre, T, k + qbase, ld, (real)0, dq + qbase, ld);
        GEMM(1, 1, 0, T, HS, T, scale, dpre, T, q + qbase, ld, (real)0, dk + qbase, ld);
    }
    return TUNE_OK;
}

/* ---- GELU ---------------------------------------------------------------- */

static tune_status gelu_fwd(void *ctx, real *out, const real *inp, size_t n)
{
    int nt = nthreads(ctx);
    const real half = (real)0.5, one = (real)1, rsqrt2 = (real)M_SQRT1_2;
    CPU_PARALLEL_FOR(nt, n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        real x = inp[i];
#if CPU_IS_FLOAT
        out[i] = x * half * (one + gelu_erf(x * rsqrt2, cpu_exp_neg(-half * x * x)));
#else
        out[i] = x * half * (one + erf(x * rsqrt2));
#endif
    }
    return TUNE_OK;
}

static tune_status gelu_bwd(void *ctx, real *dinp, const real *dout, const real *inp, size_t n)
{
    int nt = nthreads(ctx);
    const real half = (real)0.5, one = (real)1, rsqrt2 = (real)M_SQRT1_2;
    const real rsqrt2pi = (real)(0.5 * M_2_SQRTPI * M_SQRT1_2); /* 1/sqrt(2 pi) */
    CPU_PARALLEL_FOR(nt, n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        real x = inp[i];
#if CPU_IS_FLOAT
        real e = cpu_exp_neg(-half * x * x);
        real cdf = half * (one + gelu_erf(x * rsqrt2, e));
#else
        real e = exp(-half * x * x);
        real cdf = half * (one + erf(x * rsqrt2));
#endif
        real pdf = e * rsqrt2pi;
        dinp[i] = dout[i] * (cdf + x * pdf);
    }
    return TUNE_OK;
}

/* ---- softmax + cross-entropy --------------------------------------------- */

static tune_status softmax_xent_fwd(void *ctx, real *losses, real *probs, const real *logits,
                                    const int32_t *labels, int B, int K)
{
    (void)ctx;
    for (int b = 0; b < B; b++) {
        const real *l = logits + (size_t)b * (size_t)K;
        real *pr = probs + (size_t)b * (size_t)K;
        int jmax = 0;
        for (int j = 1; j < K; j++)
            jmax = l[j] > l[jmax] ? j : jmax;
        double mx = (double)l[jmax];
        /* loss = log(sum_j e^(l_j - max)) + (max - l_label), the sum being 1 +
         * rest: log1p(rest) keeps full relative precision when the prediction
         * is confident, where log(1 + rest) would round rest away. */
        double rest = 0.0;
        for (int j = 0; j < K; j++)
            rest += j == jmax ? 0.0 : exp((double)l[j] - mx);
        double sum = 1.0 + rest;
        for (int j = 0; j < K; j++)
            pr[j] = (real)(exp((double)l[j] - mx) / sum);
        losses[b] = (real)(log1p(rest) + (mx - (double)l[labels[b]]));
    }
    return TUNE_OK;
}

static tune_status softmax_xent_bwd(void *ctx, real *dlogits, const real *dlosses,
                                    const real *probs, const int32_t *labels, int B, int K)
{
    (void)ctx;
    for (int b = 0; b < B; b++) {
        real *dl = dlogits + (size_t)b * (size_t)K;
        const real *pr = probs + (size_t)b * (size_t)K;
        for (int j = 0; j < K; j++)
            dl[j] = dlosses[b] * (pr[j] - (j == labels[b] ? (real)1 : (real)0));
    }
    return TUNE_OK;
}

/* ---- pooler -------------------------------------------------------------- */

static tune_status pooler_fwd(void *ctx, real *out, real *pre, const real *inp, const real *w,
                              const real *b, int B, int T, int C)
{
    int nt = nthreads(ctx);
    for (int r = 0; r < B; r++)
        memcpy(pre + (size_t)r * (size_t)C, b, (size_t)C * sizeof(real));
    /* The [CLS] rows are inp[b, 0, :], i.e. a matrix with leading dimension T*C. */
    GEMM(nt, 0, 1, B, C, C, (real)1, inp, T * C, w, C, (real)1, pre, C);
    for (size_t i = 0; i < (size_t)B * (size_t)C; i++)
        out[i] = tanh(pre[i]);
    return TUNE_OK;
}

static tune_status pooler_bwd(void *ctx, real *dinp, real *dw, real *db, real *dpre,
                              const real *dout, const real *out, const real *inp, const real *w,
                              int B, int T, int C)
{
    int nt = nthreads(ctx);
    for (size_t i = 0; i < (size_t)B * (size_t)C; i++)
        dpre[i] = dout[i] * ((real)1 - out[i] * out[i]);
    /* dinp: the [CLS] rows from the GEMM, every other row 0 */
    for (int b = 0; b < B; b++)
        memset(dinp + ((size_t)b * (size_t)T + 1) * (size_t)C, 0,
               (size_t)(T - 1) * (size_t)C * sizeof(real));
    GEMM(nt, 0, 0, B, C, C, (real)1, dpre, C, w, C, (real)0, dinp, T * C);
    GEMM(nt, 1, 0, C, C, B, (real)1, dpre, C, inp, T * C, (real)1, dw, C);
    col_reduce(nt, NULL, db, dpre, NULL, NULL, NULL, B, C);
    return TUNE_OK;
}

/* ---- dropout (with the post-LN residual fused) --------------------------- */

static tune_status dropout_fwd(void *ctx, real *out, const real *inp, const real *res, size_t n,
                               double p, uint64_t seed, uint64_t stream)
{
    int nt = nthreads(ctx);
    uint32_t thr = tunep_dropout_threshold(p);
    real scale = (real)(1.0 / (1.0 - p));
    size_t nchunk = (n + DROP_CHUNK - 1) / DROP_CHUNK;
    CPU_PARALLEL_FOR(nt, n >= PAR_MIN)
    for (size_t ch = 0; ch < nchunk; ch++) {
        size_t lo = ch * DROP_CHUNK, m = n - lo < DROP_CHUNK ? n - lo : DROP_CHUNK;
        const real *x = inp + lo;
        real *o = out + lo;
        if (thr == 0) {
            for (size_t j = 0; j < m; j++)
                o[j] = res ? x[j] + res[lo + j] : x[j];
            continue;
        }
        uint32_t r[DROP_CHUNK];
        dropout_draws(r, lo, m, seed, stream);
        /* x * 0 for a dropped element: a zero, as before up to its sign */
        if (res) {
            for (size_t j = 0; j < m; j++)
                o[j] = x[j] * (r[j] >= thr ? scale : (real)0) + res[lo + j];
        } else {
            for (size_t j = 0; j < m; j++)
                o[j] = x[j] * (r[j] >= thr ? scale : (real)0);
        }
    }
    return TUNE_OK;
}

static tune_status dropout_bwd(void *ctx, real *dinp, real *dres, const real *dout, size_t n,
                               double p, uint64_t seed, uint64_t stream)
{
    int nt = nthreads(ctx);
    uint32_t thr = tunep_dropout_threshold(p);
    real scale = (real)(1.0 / (1.0 - p));
    size_t nchunk = (n + DROP_CHUNK - 1) / DROP_CHUNK;
    CPU_PARALLEL_FOR(nt, n >= PAR_MIN)
    for (size_t ch = 0; ch < nchunk; ch++) {
        size_t lo = ch * DROP_CHUNK, m = n - lo < DROP_CHUNK ? n - lo : DROP_CHUNK;
        const real *d = dout + lo;
        real *dx = dinp + lo;
        if (thr == 0) {
            memcpy(dx, d, m * sizeof(real));
        } else {
            uint32_t r[DROP_CHUNK];
            dropout_draws(r, lo, m, seed, stream);
            for (size_t j = 0; j < m; j++)
                dx[j] = d[j] * (r[j] >= thr ? scale : (real)0);
        }
        if (dres)
            memcpy(dres + lo, d, m * sizeof(real));
    }
    return TUNE_OK;
}

/* ---- optimiser ----------------------------------------------------------- */

static tune_status adamw_step(void *ctx, real *param, real *m, real *v, const real *grad, size_t n,
                              double lr, double beta1, double beta2, double eps,
                              double weight_decay, double grad_scale, long step)
{
    int nt = nthreads(ctx);
    /* Scalars in double, element math in `real`, in torch 1.13's order
     * (_single_tensor_adamw). */
    double bc1 = 1.0 - pow(beta1, (double)step);
    double bc2 = 1.0 - pow(beta2, (double)step);
    const real decay = (real)(1.0 - lr * weight_decay);
    const real b1 = (real)beta1, b2 = (real)beta2;
    const real one_b1 = (real)(1.0 - beta1), one_b2 = (real)(1.0 - beta2);
    const real step_size = (real)(lr / bc1), bc2_sqrt = (real)sqrt(bc2), epsr = (real)eps;
    const real gs = (real)grad_scale;
    CPU_PARALLEL_FOR(nt, n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        real g = grad_scale == 1.0 ? grad[i] : grad[i] * gs;
        real pi = param[i] * decay;
        real mi = m[i] * b1 + g * one_b1;
        real vi = v[i] * b2 + g * g * one_b2;
        real denom = sqrt(vi) / bc2_sqrt + epsr;
        param[i] = pi - step_size * (mi / denom);
        m[i] = mi;
        v[i] = vi;
    }
    return TUNE_OK;
}

static tune_status grad_sumsq(void *ctx, double *ret_sumsq, const real *g, size_t n)
{
    int nt = nthreads(ctx);
    /* Fixed chunks summed in a fixed order: the result does not depend on the
     * thread count. GROUP chunks per parallel region bound the stack array. */
    enum { CHUNK = 16384, GROUP = 64 };
    double total = 0.0;
    for (size_t g0 = 0; g0 < n; g0 += (size_t)CHUNK * GROUP) {
        double part[GROUP];
        size_t span = n - g0 < (size_t)CHUNK * GROUP ? n - g0 : (size_t)CHUNK * GROUP;
        int nchunks = (int)((span + CHUNK - 1) / CHUNK);
        CPU_PARALLEL_FOR(nt, nchunks > 1)
        for (int c = 0; c < nchunks; c++) {
            size_t lo = g0 + (size_t)c * CHUNK;
            size_t hi = lo + CHUNK < g0 + span ? lo + CHUNK : g0 + span;
            part[c] = dot_lanes(g + lo, g + lo, (int)(hi - lo));
        }
        for (int c = 0; c < nchunks; c++)
            total += part[c];
    }
    *ret_sumsq = total;
    return TUNE_OK;
}

#if CPU_IS_FLOAT
/* This build's Philox path, for the tests (cpu_backend.h). */
void tunep_cpu_philox_fill_generic(uint32_t *r, uint64_t idx0, size_t n, uint64_t seed,
                                   uint64_t stream)
{
    cpu_philox_fill(r, idx0, n, seed, stream);
}

#endif

const struct tunep_kernels tunep_cpu_kernels = {
    .embed_fwd = embed_fwd,
    .embed_bwd = embed_bwd,
    .layernorm_fwd = layernorm_fwd,
    .layernorm_bwd = layernorm_bwd,
    .matmul_fwd = matmul_fwd,
    .matmul_bwd = matmul_bwd,
    .attention_fwd = attention_fwd,
    .attention_bwd = attention_bwd,
    .gelu_fwd = gelu_fwd,
    .gelu_bwd = gelu_bwd,
    .softmax_xent_fwd = softmax_xent_fwd,
    .softmax_xent_bwd = softmax_xent_bwd,
    .pooler_fwd = pooler_fwd,
    .pooler_bwd = pooler_bwd,
    .dropout_fwd = dropout_fwd,
    .dropout_bwd = dropout_bwd,
    .adamw_step = adamw_step,
    .grad_sumsq = grad_sumsq,
};
