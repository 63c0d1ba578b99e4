/*
 * np_argsort.c - numpy 1.24's aquicksort and aheapsort
 * (numpy/core/src/npysort/quicksort.cpp, heapsort.cpp) on (key, position)
 * items: median-of-3 quicksort down to 16 elements, then insertion sort, and
 * heapsort below 2 log2(n) levels. Checked against np.argsort on 3,000
 * random arrays with and without ties, sorted, reversed and median-of-3
 * killers (which reach the heapsort): identical permutations.
 *
 * numpy moves indices and compares the values they point to; here each
 * position carries its key in one 64-bit word (8-byte moves, integer
 * comparisons), and the caller ranks its doubles into keys. The partition finds the same swaps
 * without numpy's data-dependent scans, which mispredict about every other step on arrays with
 * ties: its scans stop at the positions whose values are
 * >= the pivot (from the left) and <= it (from the right), and the k-th
 * swap exchanges the k-th stop of each side while the left one comes first
 * (see np_partition), so the stops are listed first, without branches;
 * tests/test_np_argsort.c compares the permutations with numpy's scans on
 * arrays of every shape.
 */
#include "search/np_argsort.h"

#define NP_SMALL_QUICKSORT 15
#define NP_QS_STACK        128 /* numpy's PYA_QS_STACK: 2 * 64 levels */

static void np_swap(uint64_t *a, uint64_t *b)
{
    uint64_t t = *a;
    *a = *b;
    *b = t;
}

/* numpy's aheapsort_ on a[0..n), as 1-based b[1..n] */
static void np_aheapsort(uint64_t *a, size_t n)
{
    uint64_t *b = a - 1, tmp;
    size_t i, j, l;
    for (l = n >> 1; l > 0; --l) {
        tmp = b[l];
        for (i = l, j = l << 1; j <= n;) {
            if (j < n && TUNEP_NP_KEY(b[j]) < TUNEP_NP_KEY(b[j + 1]))
                j += 1;
            if (!(TUNEP_NP_KEY(tmp) < TUNEP_NP_KEY(b[j])))
                break;
            b[i] = b[j];
            i = j;
            j += j;
        }
        b[i] = tmp;
    }
    for (; n > 1;) {
        tmp = b[n];
        b[n] = b[1];
        n -= 1;
        for (i = 1, j = 2; j <= n;) {
            if (j < n && TUNEP_NP_KEY(b[j]) < TUNEP_NP_KEY(b[j + 1]))
                j++;
            if (!(TUNEP_NP_KEY(tmp) < TUNEP_NP_KEY(b[j])))
                break;
            b[i] = b[j];
            i = j;
            j += j;
        }
        b[i] = tmp;
    }
}

/*
 * numpy's partition of pl[0..len] around the pivot's key vp (the pivot moved
 * to pl[len - 1]; pl[0]'s key <= vp), as its loop
 *     for (;;) { do ++pi; while (key(pi) < vp); do --pj; while (vp < key(pj));
 *                if (pi >= pj) break; swap(pi, pj); }
 * from pi = 0, pj = len - 1 leaves it; returns where pi stops.
 * With L the positions in (0, len - 1] whose key is not < vp, ascending,
 * and R those in [0, len - 1) whose key vp is not < , descending, all
 * taken before any swap: the k-th round stops at L[k] and R[k] and swaps
 * them while L[k] < R[k], the first time. Earlier swaps only wrote to
 * L[0..k-1] (now keys <= vp) and R[0..k-1] (now >= vp), so the left scan
 * from L[k-1] stops at min(L[k], R[k-1]) and the right one at
 * max(R[k], L[k-1]), which cross exactly when L[k] >= R[k]. Both lists end
 * in a sentinel (the pivot, position 0). They come from one pass
 * (tpe_kernel.h's np_stops: branch-free appends, AVX-512 compresses), the
 * swaps after.
 */
static uint64_t *np_partition(const struct tunep_tpe_kernels *kern, uint64_t *pl, size_t len,
                              size_t *work)
{
    size_t *lft = work, *rgt = work + len + TUNEP_TPE_LANES, nl = 0, nr = 0;
    uint32_t vp = TUNEP_NP_KEY(pl[len - 1]);
    rgt[nr] = 0;
    nr += !(vp < TUNEP_NP_KEY(pl[0]));
    kern->np_stops(pl, 1, len - 1, vp, lft, &nl, rgt, &nr);
    lft[nl++] = len - 1;
    size_t k = 0;
    while (lft[k] < rgt[nr - 1 - k]) {
        np_swap(pl + lft[k], pl + rgt[nr - 1 - k]);
        k++;
    }
    if (k == 0)
        return pl + lft[0];
    size_t back = rgt[nr - k];
    return pl + (lft[k] < back ? lft[k] : back);
}

void tunep_np_argsort(const struct tunep_tpe_kernels *kern, uint64_t *a, size_t n, size_t *work)
{
    uint64_t *stack[NP_QS_STACK], **sptr = stack;
    int depth[NP_QS_STACK / 2], *psdepth = depth, cdepth = 0;
    if (n < 2)
        return;
    for (size_t m = n; m > 1; m >>= 1) /* npy_get_msb(n) * 2 */
        cdepth += 2;
    uint64_t *pl = a, *pr = a + n - 1;
    for (;;) {
        if (cdepth < 0) {
            np_aheapsort(pl, (size_t)(pr - pl) + 1);
            goto pop;
        }
        while (pr - pl > NP_SMALL_QUICKSORT) {
            uint64_t *pm = pl + ((pr - pl) >> 1), *pi;
            if (TUNEP_NP_KEY(*pm) < TUNEP_NP_KEY(*pl))
                np_swap(pm, pl);
            if (TUNEP_NP_KEY(*pr) < TUNEP_NP_KEY(*pm))
                np_swap(pr, pm);
            if (TUNEP_NP_KEY(*pm) < TUNEP_NP_KEY(*pl))
                np_swap(pm, pl);
            np_swap(pm, pr - 1);
            pi = np_partition(kern, pl, (size_t)(pr - pl), work);
            np_swap(pi, pr - 1);
            if (pi - pl < pr - pi) { /* the larger side waits on the stack */
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
        for (uint64_t *pi = pl + 1; pi <= pr; ++pi) {
            uint64_t vi = *pi, *pj = pi, *pk = pi - 1;
            while (pj > pl && TUNEP_NP_KEY(vi) < TUNEP_NP_KEY(*pk))
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
