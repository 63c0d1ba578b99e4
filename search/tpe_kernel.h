/*
 * tpe_kernel.h - the vectorised loops behind TPE's Parzen estimators
 * (search/tpe.c) over contiguous arrays: Gaussian kernel sums, sums of
 * exponentials, logs, the fitting steps, the multivariate terms and the
 * partition scans of numpy's argsort (search/np_argsort.c).
 *
 * search/tpe_kernel_tmpl.c is compiled once per instruction set the build
 * has (generic x86-64 or any other CPU; -mavx2; -mavx512f) and
 * tunep_tpe_kernels_best() picks the widest the running CPU supports. All
 * variants compute the same bits: the same operations in the same order
 * (no FMA contraction, -ffp-contract=off; sums in TUNEP_TPE_LANES running
 * lanes added up in a fixed order), only the vector width differs, which
 * tests/test_tpe_kernel.c checks.
 *
 * exp and exp2 are tunep_tpe_exp_n's and tunep_tpe_exp2_n's: 2^(i/64) from a
 * table times a degree-5 polynomial on |r| <= ln(2)/128 (exp2: 1/128); their
 * relative error against libm's is below 5e-16 for x in [-708, 709] (exp2:
 * [-1022, 1023]; measured on millions of points by the tests, the worst seen
 * 4.3e-16); below -708 (-1022) they return 0, NaN stays NaN. The Gaussian
 * kernels are 2^(-log2(e)/2 z^2): exp(-z^2/2) but for the rounding of the
 * product, a relative 1e-16 z^2, on terms that weigh exp(-z^2/2). log is
 * tunep_tpe_log_n's: 2 atanh((m - 1) / (m + 1)) by its series, relative
 * error below 4.5e-16 on positive normal numbers (the worst seen 2.2e-16).
 */
#ifndef TUNE_TPE_KERNEL_H
#define TUNE_TPE_KERNEL_H

#include <stddef.h>
#include <stdint.h>

/* Sums run in this many lanes, k mod TUNEP_TPE_LANES, on every instruction set. */
#define TUNEP_TPE_LANES 8

/* search/np_argsort.h's items: a sort key in the high 32 bits, a position in the low 32. */
#define TUNEP_NP_ITEM(key, pos) (((uint64_t)(key) << 32) | (uint64_t)(pos))
#define TUNEP_NP_KEY(item)      ((uint32_t)((item) >> 32))
#define TUNEP_NP_POS(item)      ((size_t)((item)&0xffffffffu))

struct tunep_tpe_kernels {
    const char *name; /* "generic", "avx2", "avx512" */
    /* y[k] = exp(x[k]) for k < n (x and y may be the same array) */
    void (*exp_n)(const double *x, double *y, size_t n);
    /* y[k] = 2^x[k] for k < n */
    void (*exp2_n)(const double *x, double *y, size_t n);
    /*
     * y[k] = log(x[k]) for k < n (x and y may be the same array); libm's for all when
     * some x[k] is not a positive normal number
     */
    void (*log_n)(const double *x, double *y, size_t n);
    /* sum over k < n of coef[k] exp(-0.5 z z), z = (x - mu[k]) * isig[k], as 2^(c z z) */
    double (*gauss_sum)(const double *mu, const double *isig, const double *coef, size_t n,
                        double x);
    /* sum over k < n of exp(v[k] - shift) */
    double (*exp_sum)(const double *v, size_t n, double shift);
    /* the largest v[k], k < n (-infinity for none; NaN never wins) */
    double (*max_n)(const double *v, size_t n);
    /* x[k] /= d for k < n */
    void (*div_n)(double *x, size_t n, double d);
    /*
     * For kernels N(mu[k], sig[k]) truncated to [low, high]: isig[k] = 1 / sig[k];
     * coef[k] = w[k] / norm where both bounds lie more than `cut` widths away
     * (the truncation keeps all the mass), else NaN (left to the caller)
     */
    void (*fit_coef)(const double *mu, const double *sig, const double *w, size_t n, double low,
                     double high, double cut, double norm, double *isig, double *coef);
    /*
     * Kernel widths from sorted centres x[1..n] between x[0] and x[n + 1]: sig[i] =
     * the larger gap beside x[i + 1], clipped to [minsig, maxsig]
     */
    void (*widths)(const double *x, size_t n, double minsig, double maxsig, double *sig);
    /* whether x[k] == x[k - 1] for some 0 < k < n */
    int (*has_ties)(const double *x, size_t n);
    /*
     * Merges runs of kernels with equal (mu, sig) into one of their summed weight (in
     * order), in place; returns the number left
     */
    size_t (*merge)(double *mu, double *sig, double *w, size_t n);
    /*
     * The running reach of kernels sorted by mu: hi[k] = max over j <= k of mu[j] +
     * cut sig[j], lo[k] = min over j >= k of mu[j] - cut sig[j]
     */
    void (*reach)(const double *mu, const double *sig, size_t n, double cut, double *hi,
                  double *lo);
    /* multivariate terms, k < n: lp[k] += -0.5 z z + lz[k], z = (x - mu[k]) / sig */
    void (*mv_dens)(double *lp, const double *mu, const double *lz, size_t n, double x, double sig);
    /* lp[k] += mu[k] == x ? hit : miss */
    void (*mv_cat)(double *lp, const double *mu, size_t n, double x, double hit, double miss);
    /* lp[k] += tab[id[k]] */
    void (*mv_gather_add)(double *lp, const double *tab, const size_t *id, size_t n);
    /*
     * numpy's partition scans (np_argsort.c): appends each position p in [from, to) to
     * lft if the key of items[p] is not below vp, to rgt if vp is not below it, in
     * order; both lists need TUNEP_TPE_LANES entries of room past their ends
     */
    void (*np_stops)(const uint64_t *items, size_t from, size_t to, uint32_t vp, size_t *lft,
                     size_t *nl, size_t *rgt, size_t *nr);
};

/* The variants, one per instruction set (NULL where the build lacks it). */
extern const struct tunep_tpe_kernels tunep_tpe_kernels_generic;
#if defined(TUNEP_TPE_HAVE_AVX2)
extern const struct tunep_tpe_kernels tunep_tpe_kernels_avx2;
#endif
#if defined(TUNEP_TPE_HAVE_AVX512)
extern const struct tunep_tpe_kernels tunep_tpe_kernels_avx512;
#endif

/* Variant number i (0: generic, 1: avx2, 2: avx512) if built and the CPU runs it, else NULL. */
const struct tunep_tpe_kernels *tunep_tpe_kernels_get(int i);

/* The widest variant this CPU runs. */
const struct tunep_tpe_kernels *tunep_tpe_kernels_best(void);

#endif /* TUNE_TPE_KERNEL_H */
