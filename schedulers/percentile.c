/*
 * percentile.c - numpy.percentile(values, p) with the default 'linear' method.
 *
 * The arithmetic follows numpy >= 1.22 step by step so results agree to the
 * bit: q = p / 100, position (n - 1) * q, lo = floor(position),
 * gamma = position - lo, and _lerp(a, b, gamma), which interpolates from the
 * nearer end (b - (b - a) * (1 - gamma) when gamma >= 0.5) to stay monotonic.
 * Ray's ASHA calls np.nanpercentile, which equals this when there is no NaN.
 * numpy returns NaN when an infinity takes part; we define the limits instead
 * (-INFINITY at the low end wins), see scheduler.h.
 */
#include "schedulers/asha.h"

#include <math.h>
#include <stdlib.h>

void tunep_percentile_position(size_t n, double q, size_t *ret_lo, double *ret_gamma)
{
    double last = (double)(n - 1);
    double pos = last * q;
    /* numpy clips indexes past the end (and below 0) to the nearest value. */
    if (!(pos < last)) {
        *ret_lo = n - 1;
        *ret_gamma = 0.0;
        return;
    }
    if (!(pos > 0.0)) {
        *ret_lo = 0;
        *ret_gamma = 0.0;
        return;
    }
    double lo = floor(pos);
    *ret_lo = (size_t)lo;
    *ret_gamma = pos - lo;
}

double tunep_percentile_lerp(double a, double b, double gamma)
{
    if (a == -HUGE_VAL || gamma == 0.0)
        return a;
    if (b == HUGE_VAL || a == b)
        return b;
    double diff = b - a;
    if (gamma >= 0.5)
        return b - diff * (1.0 - gamma);
    return a + diff * gamma;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

double tunep_percentile(double *values, size_t n, double p)
{
    size_t lo;
    double gamma;
    qsort(values, n, sizeof *values, cmp_double);
    tunep_percentile_position(n, p / 100.0, &lo, &gamma);
    if (gamma == 0.0)
        return values[lo];
    return tunep_percentile_lerp(values[lo], values[lo + 1], gamma);
}
