/*
 * pareto.c - dominance, non-dominated sorting, crowding distance and the
 * hypervolume of a set of points (see pareto.h for the order on NaNs).
 */
#include "search/pareto.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void tunep_pareto_minimize(const double *in, size_t n, size_t m, const int *maximize, double *out)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < m; j++)
            out[i * m + j] = maximize && maximize[j] ? -in[i * m + j] : in[i * m + j];
}

static int has_nan(const double *a, size_t m)
{
    for (size_t j = 0; j < m; j++)
        if (isnan(a[j]))
            return 1;
    return 0;
}

/* NaN reads as +inf: the worst value in minimisation form. */
static double worst_nan(double v)
{
    return isnan(v) ? HUGE_VAL : v;
}

int tunep_pareto_dominates(const double *a, const double *b, size_t m)
{
    int a_nan = has_nan(a, m), b_nan = has_nan(b, m);
    if (a_nan != b_nan)
        return b_nan;
    int better = 0;
    for (size_t j = 0; j < m; j++) {
        double x = worst_nan(a[j]), y = worst_nan(b[j]);
        if (x > y)
            return 0;
        if (x < y)
            better = 1;
    }
    return better;
}

size_t tunep_pareto_front(const double *y, size_t n, size_t m, int *ret_front)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        int front = 1;
        for (size_t k = 0; k < n && front; k++)
            if (k != i && tunep_pareto_dominates(y + k * m, y + i * m, m))
                front = 0;
        ret_front[i] = front;
        count += (size_t)front;
    }
    return count;
}

tune_status tunep_pareto_sort(const double *y, size_t n, size_t m, int *ret_rank, tune_error *err)
{
    if (n == 0)
        return TUNE_OK;
    /* dom: bit (p, q) set when p dominates q; n^2 bits rather than n^2 list entries. */
    size_t words = (n + 63) / 64;
    if (words > SIZE_MAX / sizeof(uint64_t) / n)
        return tunep_error_set(err, TUNE_ENOMEM, "non-dominated sort of %zu points", n);
    uint64_t *dom = tunep_calloc(n * words, sizeof *dom);
    size_t *np = tunep_calloc(n, sizeof *np);
    size_t *front = tunep_malloc(n * sizeof *front);
    tune_status st = TUNE_OK;
    if (!dom || !np || !front) {
        st = tunep_error_set(err, TUNE_ENOMEM, "non-dominated sort of %zu points", n);
        goto out;
    }
    for (size_t p = 0; p < n; p++)
        for (size_t q = p + 1; q < n; q++) {
            if (tunep_pareto_dominates(y + p * m, y + q * m, m)) {
                dom[p * words + q / 64] |= (uint64_t)1 << (q % 64);
                np[q]++;
            } else if (tunep_pareto_dominates(y + q * m, y + p * m, m)) {
                dom[q * words + p / 64] |= (uint64_t)1 << (p % 64);
                np[p]++;
            }
        }
    /* front[] holds the current front in [begin, end), the next one after it. */
    size_t end = 0;
    for (size_t p = 0; p < n; p++)
        if (np[p] == 0) {
            ret_rank[p] = 0;
            front[end++] = p;
        }
    size_t begin = 0;
    int rank = 0;
    while (begin < end) {
        size_t next = end;
        for (size_t f = begin; f < end; f++) {
            const uint64_t *row = dom + front[f] * words;
            for (size_t q = 0; q < n; q++)
                if ((row[q / 64] >> (q % 64)) & 1u && --np[q] == 0) {
                    ret_rank[q] = rank + 1;
                    front[next++] = q;
                }
        }
        begin = end;
        end = next;
        rank++;
    }
out:
    tunep_free(dom);
    tunep_free(np);
    tunep_free(front);
    return st;
}

struct keyed {
    double v;
    size_t pos;
};

static int keyed_cmp(const void *pa, const void *pb)
{
    const struct keyed *a = pa, *b = pb;
    if (a->v < b->v)
        return -1;
    if (a->v > b->v)
        return 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

tune_status tunep_pareto_crowding(const double *y, size_t m, const size_t *idx, size_t k,
                                  double *ret_dist, tune_error *err)
{
    for (size_t a = 0; a < k; a++)
        ret_dist[a] = 0;
    if (k == 0)
        return TUNE_OK;
    struct keyed *order = tunep_malloc(k * sizeof *order);
    if (!order)
        return tunep_error_set(err, TUNE_ENOMEM, "crowding distance of %zu points", k);
    for (size_t j = 0; j < m; j++) {
        for (size_t a = 0; a < k; a++)
            order[a] = (struct keyed){worst_nan(y[idx[a] * m + j]), a};
        qsort(order, k, sizeof *order, keyed_cmp);
        double width = order[k - 1].v - order[0].v;
        if (width == 0 || !isfinite(width))
            continue;
        ret_dist[order[0].pos] = HUGE_VAL;
        ret_dist[order[k - 1].pos] = HUGE_VAL;
        for (size_t a = 1; a + 1 < k; a++)
            ret_dist[order[a].pos] += (order[a + 1].v - order[a - 1].v) / width;
    }
    tunep_free(order);
    return TUNE_OK;
}

/*
 * Hypervolume of k points (rows of `stride` doubles, first m used), all
 * strictly below ref. Two objectives: sweep in x, each point lower in y than
 * all before it adds the strip [x, ref0] x [y, lowest y so far]. More:
 * slices between consecutive values of the last objective, each the
 * (m-1)-dimensional hypervolume of the points at or below it.
 */
static tune_status hv_rec(const double *y, size_t k, size_t m, size_t stride, const double *ref,
                          double *ret_hv)
{
    if (k == 0) {
        *ret_hv = 0;
        return TUNE_OK;
    }
    if (m == 1) {
        double lo = y[0];
        for (size_t i = 1; i < k; i++)
            lo = fmin(lo, y[i * stride]);
        *ret_hv = ref[0] - lo;
        return TUNE_OK;
    }
    struct keyed *order = tunep_malloc(k * sizeof *order);
    double *proj = m > 2 ? tunep_malloc(k * (m - 1) * sizeof *proj) : NULL;
    tune_status st = TUNE_OK;
    if (!order || (m > 2 && !proj)) {
        st = TUNE_ENOMEM;
        goto out;
    }
    size_t c = m == 2 ? 0 : m - 1;
    for (size_t i = 0; i < k; i++)
        order[i] = (struct keyed){y[i * stride + c], i};
    qsort(order, k, sizeof *order, keyed_cmp);
    double hv = 0;
    if (m == 2) {
        double low = ref[1];
        for (size_t i = 0; i < k; i++) {
            const double *p = y + order[i].pos * stride;
            if (p[1] < low) {
                hv += (ref[0] - p[0]) * (low - p[1]);
                low = p[1];
            }
        }
    } else {
        for (size_t i = 0; i < k; i++) {
            memcpy(proj + i * (m - 1), y + order[i].pos * stride, (m - 1) * sizeof *proj);
            double top = i + 1 < k ? order[i + 1].v : ref[m - 1];
            double depth = top - order[i].v;
            if (depth <= 0)
                continue;
            double slice;
            if ((st = hv_rec(proj, i + 1, m - 1, m - 1, ref, &slice)))
                goto out;
            hv += slice * depth;
        }
    }
    *ret_hv = hv;
out:
    tunep_free(order);
    tunep_free(proj);
    return st;
}

tune_status tunep_pareto_hypervolume(const double *y, size_t n, size_t m, const double *ref,
                                     double *ret_hv, tune_error *err)
{
    *ret_hv = 0;
    if (n == 0 || m == 0)
        return TUNE_OK;
    double *in = tunep_malloc(n * m * sizeof *in);
    if (!in)
        return tunep_error_set(err, TUNE_ENOMEM, "hypervolume of %zu points", n);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int inside = 1;
        for (size_t j = 0; j < m; j++)
            if (!(y[i * m + j] < ref[j])) /* NaN too */
                inside = 0;
        if (inside)
            memcpy(in + k++ * m, y + i * m, m * sizeof *in);
    }
    double hv = 0;
    tune_status st = hv_rec(in, k, m, m, ref, &hv);
    tunep_free(in);
    if (st)
        return tunep_error_set(err, st, "hypervolume of %zu points in %zu objectives", n, m);
    *ret_hv = hv;
    return TUNE_OK;
}

void tunep_pareto_reference(const double *y, size_t n, size_t m, double *ret_ref)
{
    for (size_t j = 0; j < m; j++) {
        double lo = HUGE_VAL, hi = -HUGE_VAL;
        for (size_t i = 0; i < n; i++) {
            double v = y[i * m + j];
            if (isfinite(v)) {
                lo = fmin(lo, v);
                hi = fmax(hi, v);
            }
        }
        if (!(hi >= lo)) {
            ret_ref[j] = (double)NAN;
            continue;
        }
        double pad = hi > lo ? (hi - lo) / 10 : fabs(hi) > 0 ? fabs(hi) / 10 : 1;
        ret_ref[j] = hi + pad;
    }
}

tune_status tunep_pareto_hypervolume_history(const double *y, size_t n, size_t m, const double *ref,
                                             double work_max, double *ret_hv, size_t *ret_done,
                                             tune_error *err)
{
    *ret_done = 0;
    for (size_t i = 0; i < n; i++)
        ret_hv[i] = (double)NAN;
    if (n == 0 || m == 0)
        return TUNE_OK;
    /* front: the running front's points (rows of m), those strictly inside ref only. */
    double *front = tunep_malloc(n * m * sizeof *front);
    if (!front)
        return tunep_error_set(err, TUNE_ENOMEM, "hypervolume history of %zu points", n);
    size_t k = 0;
    double hv = 0, work = 0;
    tune_status st = TUNE_OK;
    for (size_t i = 0; i < n; i++) {
        const double *p = y + i * m;
        int inside = 1, joins = 1;
        for (size_t j = 0; j < m; j++)
            if (!(p[j] < ref[j])) /* NaN too: such a point adds nothing */
                inside = 0;
        for (size_t f = 0; inside && joins && f < k; f++) {
            const double *q = front + f * m;
            if (tunep_pareto_dominates(q, p, m) || memcmp(q, p, m * sizeof *p) == 0)
                joins = 0;
        }
        if (inside && joins) {
            /* Points p dominates leave the front; p joins it; the volume is recomputed. */
            size_t kept = 0;
            for (size_t f = 0; f < k; f++)
                if (!tunep_pareto_dominates(p, front + f * m, m))
                    memmove(front + kept++ * m, front + f * m, m * sizeof *front);
            memcpy(front + kept * m, p, m * sizeof *front);
            k = kept + 1;
            work += pow((double)k, (double)(m > 1 ? m - 1 : 1));
            if (work > work_max)
                break;
            if ((st = hv_rec(front, k, m, m, ref, &hv))) {
                st = tunep_error_set(err, st, "hypervolume history of %zu points", n);
                break;
            }
        }
        ret_hv[i] = hv;
        *ret_done = i + 1;
    }
    tunep_free(front);
    return st;
}
