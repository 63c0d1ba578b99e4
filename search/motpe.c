/*
 * motpe.c - multi-objective TPE's split into good and bad trials and the
 * good trials' weights (see motpe.h).
 */
#include "search/motpe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/pareto.h"

#define MOTPE_EPS 1e-12 /* Optuna's EPS: the reference point's 0, the least weight */

/* NaN reads as +inf in comparisons, as in pareto.c: the worst value. */
static double worst_nan(double v)
{
    return isnan(v) ? HUGE_VAL : v;
}

static int lex_cmp(const double *a, const double *b, size_t m)
{
    for (size_t j = 0; j < m; j++) {
        double x = worst_nan(a[j]), z = worst_nan(b[j]);
        if (x < z)
            return -1;
        if (x > z)
            return 1;
    }
    return 0;
}

/* Stable merge sort of idx[0..n) by lexicographic order of rows y[idx[i]]. */
static void lex_sort(const double *y, size_t m, size_t *idx, size_t *tmp, size_t n)
{
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                tmp[o++] = lex_cmp(y + idx[b] * m, y + idx[a] * m, m) < 0 ? idx[b++] : idx[a++];
            while (a < mid)
                tmp[o++] = idx[a++];
            while (b < hi)
                tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, n * sizeof *idx);
    }
}

static int all_finite(const double *v, size_t k)
{
    for (size_t i = 0; i < k; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

void tunep_motpe_reference(const double *y, size_t n, size_t m, double *ret_ref)
{
    for (size_t j = 0; j < m; j++) {
        double w = -HUGE_VAL;
        for (size_t i = 0; i < n; i++) {
            double v = y[i * m + j];
            if (isnan(v) || v > w) /* a NaN stays: numpy's max propagates it */
                w = v;
            if (isnan(w))
                break;
        }
        double r = isnan(w) ? w : 1.1 * w > 0.9 * w ? 1.1 * w : 0.9 * w;
        ret_ref[j] = r == 0 ? MOTPE_EPS : r;
    }
}

/* The volume of the box [p, ref]: Optuna's prod(ref - p). */
static double box_volume(const double *p, const double *ref, size_t m)
{
    double v = 1;
    for (size_t j = 0; j < m; j++)
        v *= ref[j] - p[j];
    return v;
}

/*
 * The volume that the k points s cover inside the box [q, ref]: that of the
 * points clipped to it, max(s_i, q). Clipped points are mostly dominated by
 * others (and repeat), which the exact hypervolume would still slice
 * through, so only the non-dominated distinct ones are kept (the same
 * volume). clip: room for k rows of m.
 */
static tune_status covered_volume(const double *s, size_t k, const double *q, size_t m,
                                  const double *ref, double *clip, double *ret, tune_error *err)
{
    size_t kept = 0;
    for (size_t i = 0; i < k; i++) {
        double *c = clip + kept * m;
        for (size_t j = 0; j < m; j++)
            c[j] = fmax(s[i * m + j], q[j]);
        int drop = 0;
        for (size_t o = 0; o < kept && !drop; o++) {
            const double *p = clip + o * m;
            drop = tunep_pareto_dominates(p, c, m) || memcmp(p, c, m * sizeof *p) == 0;
        }
        if (drop)
            continue;
        size_t left = 0; /* the new point may dominate some kept ones */
        for (size_t o = 0; o < kept; o++)
            if (!tunep_pareto_dominates(c, clip + o * m, m)) {
                if (left != o)
                    memmove(clip + left * m, clip + o * m, m * sizeof *clip);
                left++;
            }
        if (left != kept)
            memmove(clip + left * m, c, m * sizeof *clip);
        kept = left + 1;
    }
    return tunep_pareto_hypervolume(clip, kept, m, ref, ret, err);
}

/*
 * Two objectives, as Optuna's _solve_hssp_2d: u[0..nu) are distinct points
 * of one front in lexicographic order (f0 up, so f1 down). Each keeps the far
 * corner of the rectangle that it alone would add: a chosen point caps the
 * f0 edge of the points before it and the f1 edge of those after it.
 */
static void hssp_2d(const double *y, const size_t *u, size_t nu, size_t k, const double *ref,
                    double *corner, unsigned char *alive, unsigned char *chosen)
{
    for (size_t p = 0; p < nu; p++) {
        corner[2 * p] = ref[0];
        corner[2 * p + 1] = ref[1];
        alive[p] = 1;
    }
    for (size_t it = 0; it < k; it++) {
        size_t best = nu;
        double best_c = 0;
        for (size_t p = 0; p < nu; p++) {
            if (!alive[p])
                continue;
            const double *q = y + u[p] * 2;
            double c = (corner[2 * p] - q[0]) * (corner[2 * p + 1] - q[1]);
            if (best == nu || c > best_c) { /* the first largest, as np.argmax */
                best = p;
                best_c = c;
            }
        }
        const double *b = y + u[best] * 2;
        chosen[u[best]] = 1;
        alive[best] = 0;
        for (size_t p = 0; p < best; p++)
            corner[2 * p] = fmin(b[0], corner[2 * p]);
        for (size_t p = best + 1; p < nu; p++)
            corner[2 * p + 1] = fmin(b[1], corner[2 * p + 1]);
    }
}

/*
 * Three or more objectives: the greedy on exclusive volumes, lazily. bound[p]
 * holds p's contribution to an earlier (smaller) chosen set, an upper bound
 * of its contribution now (hypervolume is submodular); `fresh` marks the
 * bounds computed for the current set. sel: the chosen points so far; clip:
 * room for k rows of m.
 */
static tune_status hssp_nd(const double *y, size_t m, const size_t *u, size_t nu, size_t k,
                           const double *ref, double *bound, double *sel, double *clip,
                           unsigned char *alive, unsigned char *fresh, unsigned char *chosen,
                           tune_error *err)
{
    for (size_t p = 0; p < nu; p++) {
        bound[p] = box_volume(y + u[p] * m, ref, m); /* exact against the empty set */
        alive[p] = 1;
        fresh[p] = 1;
    }
    for (size_t it = 0; it < k; it++) {
        size_t best;
        for (;;) {
            size_t stale = nu; /* the largest exact value, and the largest stale bound */
            best = nu;
            for (size_t p = 0; p < nu; p++) {
                if (!alive[p])
                    continue;
                if (fresh[p] && (best == nu || bound[p] > bound[best]))
                    best = p;
                if (!fresh[p] && (stale == nu || bound[p] > bound[stale]))
                    stale = p;
            }
            /* Stop when no stale bound can beat (or tie earlier than) the best exact value. */
            if (stale == nu || (best != nu && (bound[stale] < bound[best] ||
                                               (bound[stale] == bound[best] && stale > best))))
                break;
            const double *q = y + u[stale] * m;
            double covered;
            tune_status st = covered_volume(sel, it, q, m, ref, clip, &covered, err);
            if (st)
                return st;
            bound[stale] = box_volume(q, ref, m) - covered;
            fresh[stale] = 1;
        }
        chosen[u[best]] = 1;
        alive[best] = 0;
        memcpy(sel + it * m, y + u[best] * m, m * sizeof *sel);
        for (size_t p = 0; p < nu; p++)
            fresh[p] = 0;
    }
    return TUNE_OK;
}

tune_status tunep_motpe_hssp(const double *y, size_t n, size_t m, size_t k, const double *ref,
                             unsigned char *ret_chosen, tune_error *err)
{
    memset(ret_chosen, k >= n, n);
    if (k >= n || k == 0)
        return TUNE_OK;
    size_t *idx = tunep_malloc(2 * n * sizeof *idx);
    double *corner = tunep_malloc(2 * n * sizeof *corner); /* 2-D corners, or n-D bounds */
    double *sel = tunep_malloc(2 * k * m * sizeof *sel);   /* chosen points, then clipped ones */
    unsigned char *flags = tunep_malloc(2 * n);
    tune_status st = TUNE_OK;
    if (!idx || !corner || !sel || !flags) {
        st = tunep_error_set(err, TUNE_ENOMEM, "hypervolume subset selection of %zu points", n);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    lex_sort(y, m, idx, idx + n, n);
    /* u = idx compacted to the first occurrence of each distinct point (stable: the earliest) */
    size_t *u = idx, nu = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || lex_cmp(y + idx[i] * m, y + u[nu - 1] * m, m) != 0)
            u[nu++] = idx[i];

    int finite = all_finite(ref, m);
    for (size_t p = 0; p < nu && finite; p++)
        finite = all_finite(y + u[p] * m, m);
    if (nu < k) { /* every distinct point, then the earliest repeats */
        size_t need = k - nu;
        for (size_t p = 0; p < nu; p++)
            ret_chosen[u[p]] = 1;
        for (size_t i = 0; i < n && need > 0; i++)
            if (!ret_chosen[i]) {
                ret_chosen[i] = 1;
                need--;
            }
    } else if (!finite || nu == k) {
        for (size_t p = 0; p < k; p++)
            ret_chosen[u[p]] = 1;
    } else if (m == 2) {
        hssp_2d(y, u, nu, k, ref, corner, flags, ret_chosen);
    } else {
        st = hssp_nd(y, m, u, nu, k, ref, corner, sel, sel + k * m, flags, flags + n, ret_chosen,
                     err);
    }
out:
    tunep_free(idx);
    tunep_free(corner);
    tunep_free(sel);
    tunep_free(flags);
    return st;
}

static int has_nan(const double *a, size_t m)
{
    for (size_t j = 0; j < m; j++)
        if (isnan(a[j]))
            return 1;
    return 0;
}

/* Points without a NaN first (they dominate every point with one), then lexicographic. */
static void dominance_sort(const double *y, size_t m, size_t *idx, size_t *tmp, size_t n)
{
    lex_sort(y, m, idx, tmp, n);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!has_nan(y + idx[i] * m, m))
            tmp[k++] = idx[i];
    for (size_t i = 0; i < n; i++)
        if (has_nan(y + idx[i] * m, m))
            tmp[k++] = idx[i];
    memcpy(idx, tmp, n * sizeof *idx);
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, z = *(const size_t *)b;
    return (x > z) - (x < z);
}

tune_status tunep_motpe_split(const double *y, size_t n, size_t m, size_t n_below,
                              unsigned char *ret_below, tune_error *err)
{
    memset(ret_below, n_below >= n, n);
    if (n_below >= n || n_below == 0)
        return TUNE_OK;
    /*
     * Fronts are peeled only as far as the good set reaches (Optuna stops there
     * too). In dominance_sort's order a point's dominators all come before it,
     * so one pass over the remaining points in that order finds the next
     * front: a point joins it unless a member found so far dominates it
     * (whatever dominates it is dominated by, or is, a member). Each pass
     * costs (points left) x (front size), not the n^2 of a full sort.
     */
    size_t *rest = tunep_malloc(n * sizeof *rest), *tmp = tunep_malloc(n * sizeof *tmp);
    size_t *front = tunep_malloc(n * sizeof *front);
    double *tie = tunep_malloc(n * m * sizeof *tie), *ref = tunep_malloc(m * sizeof *ref);
    unsigned char *pick = tunep_malloc(n);
    tune_status st = TUNE_OK;
    if (!rest || !tmp || !front || !tie || !ref || !pick) {
        st = tunep_error_set(err, TUNE_ENOMEM, "splitting %zu trials", n);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        rest[i] = i;
    dominance_sort(y, m, rest, tmp, n);
    size_t n_rest = n, taken = 0, k = 0;
    for (;;) {
        size_t left = 0;
        k = 0;
        for (size_t i = 0; i < n_rest; i++) {
            const double *p = y + rest[i] * m;
            int dominated = 0;
            for (size_t f = k; f-- > 0 && !dominated;) /* the latest members are the likeliest */
                dominated = tunep_pareto_dominates(y + front[f] * m, p, m);
            if (dominated)
                rest[left++] = rest[i]; /* in order, for the next pass */
            else
                front[k++] = rest[i];
        }
        n_rest = left;
        if (taken + k > n_below)
            break; /* the boundary front: the rest of the good set comes from it */
        for (size_t f = 0; f < k; f++)
            ret_below[front[f]] = 1;
        taken += k;
        if (taken == n_below)
            goto out;
    }
    /* The rest from the boundary front, by hypervolume, its members in trial order. */
    qsort(front, k, sizeof *front, cmp_size);
    for (size_t f = 0; f < k; f++)
        memcpy(tie + f * m, y + front[f] * m, m * sizeof *tie);
    tunep_motpe_reference(tie, k, m, ref);
    if ((st = tunep_motpe_hssp(tie, k, m, n_below - taken, ref, pick, err)))
        goto out;
    for (size_t f = 0; f < k; f++)
        if (pick[f])
            ret_below[front[f]] = 1;
out:
    tunep_free(rest);
    tunep_free(tmp);
    tunep_free(front);
    tunep_free(tie);
    tunep_free(ref);
    tunep_free(pick);
    return st;
}

/*
 * The exclusive contributions of the k distinct-or-not front points f (two
 * objectives) inside ref: sorted by f0 (f1 then falls), a point alone
 * dominates the rectangle up to the next point's f0 and the previous one's
 * f1; equal points share it, so each contributes 0.
 */
static void contributions_2d(const double *f, size_t k, const double *ref, size_t *order,
                             size_t *tmp, double *ret_c)
{
    for (size_t i = 0; i < k; i++)
        order[i] = i;
    lex_sort(f, 2, order, tmp, k);
    for (size_t a = 0; a < k; a++) {
        const double *p = f + order[a] * 2;
        int dup = (a > 0 && lex_cmp(p, f + order[a - 1] * 2, 2) == 0) ||
                  (a + 1 < k && lex_cmp(p, f + order[a + 1] * 2, 2) == 0);
        if (dup) {
            ret_c[order[a]] = 0;
            continue;
        }
        double right = a + 1 < k ? f[order[a + 1] * 2] : ref[0];
        double up = a > 0 ? f[order[a - 1] * 2 + 1] : ref[1];
        ret_c[order[a]] = (right - p[0]) * (up - p[1]);
    }
}

tune_status tunep_motpe_weights(const double *y, size_t n, size_t m, double *ret_w, tune_error *err)
{
    for (size_t i = 0; i < n; i++)
        ret_w[i] = 1;
    if (n <= 1 || !all_finite(y, n * m))
        return TUNE_OK;
    double *ref = tunep_malloc(m * sizeof *ref), *f = tunep_malloc(n * m * sizeof *f);
    double *rest = tunep_malloc(2 * n * m * sizeof *rest), *c = tunep_malloc(n * sizeof *c);
    int *front = tunep_malloc(n * sizeof *front);
    size_t *order = tunep_malloc(2 * n * sizeof *order);
    tune_status st = TUNE_OK;
    if (!ref || !f || !rest || !c || !front || !order) {
        st = tunep_error_set(err, TUNE_ENOMEM, "weighing %zu trials", n);
        goto out;
    }
    tunep_motpe_reference(y, n, m, ref);
    if (!all_finite(ref, m))
        goto out;
    size_t k = 0;
    tunep_pareto_front(y, n, m, front); /* equal points are all on it */
    for (size_t i = 0; i < n; i++)
        if (front[i])
            memcpy(f + k++ * m, y + i * m, m * sizeof *f);
    if (m == 2) {
        contributions_2d(f, k, ref, order, order + n, c);
    } else {
        for (size_t a = 0; a < k; a++) { /* what only point a covers: its box less the others' */
            memcpy(rest, f, a * m * sizeof *rest);
            memcpy(rest + a * m, f + (a + 1) * m, (k - a - 1) * m * sizeof *rest);
            double covered;
            if ((st = covered_volume(rest, k - 1, f + a * m, m, ref, rest + (k - 1) * m, &covered,
                                     err)))
                goto out;
            c[a] = box_volume(f + a * m, ref, m) - covered;
        }
    }
    double top = 0;
    for (size_t a = 0; a < k; a++)
        top = fmax(top, c[a]);
    top = fmax(top, MOTPE_EPS);
    for (size_t i = 0, a = 0; i < n; i++)
        ret_w[i] = front[i] ? fmax(c[a++] / top, MOTPE_EPS) : MOTPE_EPS;
out:
    tunep_free(ref);
    tunep_free(f);
    tunep_free(rest);
    tunep_free(c);
    tunep_free(front);
    tunep_free(order);
    return st;
}
