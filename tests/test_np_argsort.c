/*
 * test_np_argsort.c - search/np_argsort.c against numpy 1.24's aquicksort as
 * numpy writes it: indices moved, values looked up, partitions by the two
 * data-dependent scans, insertion sort below 17 elements, heapsort past the
 * depth limit. The reference below is that loop (kept here as tune had it
 * before the branch-free partition, which was checked against np.argsort),
 * tunep_np_argsort on the values' ranks as keys, with every variant of its
 * partition scans (tpe_kernel.h's np_stops) this CPU runs.
 * Permutations must be identical on arrays of every size up to 300 and
 * random sizes up to 5,000: few distinct values (ties everywhere, as integer
 * parameters give), distinct values, sorted, reversed, all equal, organ
 * pipes, sawtooth, and McIlroy's quicksort adversary (which drives numpy's
 * quicksort into its heapsort: the reference counts it).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"
#include "search/np_argsort.h"

/* ck_assert_msg for hot loops: Check logs every assertion it evaluates, this only failures. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg(__VA_ARGS__);                                                             \
    } while (0)

/* ---- the reference: numpy's aquicksort on indices, by a comparison --------- */

typedef int (*less_fn)(const void *ctx, size_t a, size_t b);

static int ref_heapsorts; /* times the reference fell back to its heapsort */

static int less_values(const void *ctx, size_t a, size_t b)
{
    const double *v = ctx;
    return v[a] < v[b];
}

static void ref_swap(size_t *a, size_t *b)
{
    size_t t = *a;
    *a = *b;
    *b = t;
}

static void ref_heapsort(less_fn less, const void *ctx, size_t *tosort, size_t n)
{
    size_t *a = tosort - 1, i, j, l, tmp;
    ref_heapsorts++;
    for (l = n >> 1; l > 0; --l) {
        tmp = a[l];
        for (i = l, j = l << 1; j <= n;) {
            if (j < n && less(ctx, a[j], a[j + 1]))
                j += 1;
            if (!less(ctx, tmp, a[j]))
                break;
            a[i] = a[j];
            i = j;
            j += j;
        }
        a[i] = tmp;
    }
    for (; n > 1;) {
        tmp = a[n];
        a[n] = a[1];
        n -= 1;
        for (i = 1, j = 2; j <= n;) {
            if (j < n && less(ctx, a[j], a[j + 1]))
                j++;
            if (!less(ctx, tmp, a[j]))
                break;
            a[i] = a[j];
            i = j;
            j += j;
        }
        a[i] = tmp;
    }
}

/* idx[0..n) = np.argsort, comparing through less (the pivot by its index, which stays put) */
static void ref_argsort(less_fn less, const void *ctx, size_t *idx, size_t n)
{
    size_t *stack[128], **sptr = stack;
    int depth[64], *psdepth = depth, cdepth = 0;
    for (size_t k = 0; k < n; k++)
        idx[k] = k;
    if (n < 2)
        return;
    for (size_t m = n; m > 1; m >>= 1)
        cdepth += 2;
    size_t *pl = idx, *pr = idx + n - 1;
    for (;;) {
        if (cdepth < 0) {
            ref_heapsort(less, ctx, pl, (size_t)(pr - pl) + 1);
            goto pop;
        }
        while (pr - pl > 15) {
            size_t *pm = pl + ((pr - pl) >> 1), *pi = pl, *pj = pr - 1;
            if (less(ctx, *pm, *pl))
                ref_swap(pm, pl);
            if (less(ctx, *pr, *pm))
                ref_swap(pr, pm);
            if (less(ctx, *pm, *pl))
                ref_swap(pm, pl);
            size_t vp = *pm;
            ref_swap(pm, pj);
            for (;;) {
                do
                    ++pi;
                while (less(ctx, *pi, vp));
                do
                    --pj;
                while (less(ctx, vp, *pj));
                if (pi >= pj)
                    break;
                ref_swap(pi, pj);
            }
            ref_swap(pi, pr - 1);
            if (pi - pl < pr - pi) {
                *sptr++ = pi + 1;
                *sptr++ = pr;
                pr = pi - 1;
            } else {
                *sptr++ = pl;
                *sptr++ = pi - 1;
                pl = pi + 1;
            }
            *psdepth++ = --cdepth;
        }
        for (size_t *pi = pl + 1; pi <= pr; ++pi) {
            size_t vi = *pi, *pj = pi, *pk = pi - 1;
            while (pj > pl && less(ctx, vi, *pk))
                *pj-- = *pk--;
            *pj = vi;
        }
    pop:
        if (sptr == stack)
            break;
        pr = *(--sptr);
        pl = *(--sptr);
        cdepth = *(--psdepth);
    }
}

/* ---- McIlroy's adversary ("A Killer Adversary for Quicksort", 1999) -------- */

struct adversary {
    double *val; /* gas (n) until frozen to the next solid value */
    size_t gas, nsolid, candidate;
};

static int less_adversary(const void *ctx, size_t a, size_t b)
{
    struct adversary *ad = (struct adversary *)(uintptr_t)ctx;
    double gas = (double)ad->gas;
    if (ad->val[a] == gas && ad->val[b] == gas)
        ad->val[a == ad->candidate ? a : b] = (double)ad->nsolid++;
    if (ad->val[a] == gas)
        ad->candidate = a;
    else if (ad->val[b] == gas)
        ad->candidate = b;
    return ad->val[a] < ad->val[b];
}

/* An input on which the reference quicksort degrades (values 0..n-1). */
static void killer(double *v, size_t n, size_t *idx)
{
    struct adversary ad = {v, n, 0, 0};
    for (size_t k = 0; k < n; k++)
        v[k] = (double)n;
    ref_argsort(less_adversary, &ad, idx, n);
    for (size_t k = 0; k < n; k++)
        if (v[k] == (double)n)
            v[k] = (double)ad.nsolid++;
}

/* ---- the comparison --------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t next_u64(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

enum shape { FEW, MANY, DISTINCT, SORTED, REVERSED, EQUAL, ORGAN, SAWTOOTH, KILLER, N_SHAPES };

static void fill(double *v, size_t n, enum shape sh, size_t *scratch)
{
    size_t distinct = 1 + next_u64() % 8;
    for (size_t k = 0; k < n; k++) {
        switch (sh) {
            case FEW: v[k] = (double)(next_u64() % distinct); break;
            case MANY: v[k] = (double)(next_u64() % 64); break;
            case DISTINCT: v[k] = (double)(next_u64() >> 11) * 0x1.0p-53; break;
            case SORTED: v[k] = (double)(k / 3); break;
            case REVERSED: v[k] = (double)((n - k) / 2); break;
            case EQUAL: v[k] = 0.5; break;
            case ORGAN: v[k] = (double)(k < n / 2 ? k : n - k); break;
            case SAWTOOTH: v[k] = (double)(k % 17); break;
            case KILLER:
            case N_SHAPES: break;
        }
    }
    if (sh == KILLER)
        killer(v, n, scratch);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/*
 * Sorts v with the reference and its ranks (as keys) with tunep_np_argsort;
 * fails on the first differing position.
 */
static void compare(const double *v, size_t n, const char *what)
{
    size_t *ref = malloc((n + 1) * sizeof *ref);
    size_t *work = malloc((2 * n + 2 * TUNEP_TPE_LANES) * sizeof *work);
    uint64_t *it = malloc((n + 1) * sizeof *it), *sorted_it = malloc((n + 1) * sizeof *it);
    double *sorted = malloc((n + 1) * sizeof *sorted);
    ck_assert(ref && work && it && sorted_it && sorted);
    ref_argsort(less_values, v, ref, n);
    memcpy(sorted, v, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_double);
    for (size_t k = 0; k < n; k++) { /* the key: the first position of the value in sorted */
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (sorted[mid] < v[k])
                lo = mid + 1;
            else
                hi = mid;
        }
        it[k] = TUNEP_NP_ITEM(lo, k);
    }
    for (int i = 0; i < 3; i++) { /* every variant of the partition's scans this CPU runs */
        const struct tunep_tpe_kernels *kern = tunep_tpe_kernels_get(i);
        if (!kern)
            continue;
        for (size_t k = 0; k < n; k++)
            sorted_it[k] = it[k];
        tunep_np_argsort(kern, sorted_it, n, work);
        for (size_t k = 0; k < n; k++)
            CHECK(TUNEP_NP_POS(sorted_it[k]) == ref[k],
                  "%s (%s), n = %zu: position %zu holds index %zu, numpy's order %zu", what,
                  kern->name, n, k, TUNEP_NP_POS(sorted_it[k]), ref[k]);
    }
    free(ref);
    free(work);
    free(it);
    free(sorted_it);
    free(sorted);
}

static const char *const shape_names[N_SHAPES] = {"few values", "64 values", "distinct",
                                                  "sorted",     "reversed",  "all equal",
                                                  "organ pipe", "sawtooth",  "killer"};

START_TEST(test_every_shape_small)
{
    double *v = malloc(301 * sizeof *v);
    size_t *scratch = malloc(301 * sizeof *scratch);
    ck_assert(v && scratch);
    for (size_t n = 0; n <= 300; n++)
        for (int sh = 0; sh < N_SHAPES; sh++)
            for (int rep = 0; rep < (sh <= DISTINCT ? 4 : 1); rep++) {
                fill(v, n, (enum shape)sh, scratch);
                compare(v, n, shape_names[sh]);
            }
    free(v);
    free(scratch);
}
END_TEST

START_TEST(test_every_shape_large)
{
    size_t cap = 5000;
    double *v = malloc(cap * sizeof *v);
    size_t *scratch = malloc(cap * sizeof *scratch);
    ck_assert(v && scratch);
    for (int rep = 0; rep < 40; rep++)
        for (int sh = 0; sh < N_SHAPES; sh++) {
            size_t n = 301 + next_u64() % (cap - 301);
            fill(v, n, (enum shape)sh, scratch);
            compare(v, n, shape_names[sh]);
        }
    free(v);
    free(scratch);
}
END_TEST

/* The adversary's inputs do reach numpy's heapsort, so the comparison above covers it. */
START_TEST(test_killer_reaches_heapsort)
{
    size_t n = 2000;
    double *v = malloc(n * sizeof *v);
    size_t *idx = malloc(n * sizeof *idx);
    ck_assert(v && idx);
    killer(v, n, idx);
    ref_heapsorts = 0;
    ref_argsort(less_values, v, idx, n);
    ck_assert_int_gt(ref_heapsorts, 0);
    compare(v, n, "killer");
    free(v);
    free(idx);
}
END_TEST

static Suite *np_argsort_suite(void)
{
    Suite *s = suite_create("np_argsort");
    TCase *tc = tcase_create("np_argsort");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_every_shape_small);
    tcase_add_test(tc, test_every_shape_large);
    tcase_add_test(tc, test_killer_reaches_heapsort);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(np_argsort_suite)
