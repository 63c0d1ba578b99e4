/*
 * unit.c - the unit-cube view of a space, shared by the Sobol, LHS and GP searchers.
 *
 * Every non-constant parameter is one coordinate in [0, 1). The forward map
 * is tunep_space_value_at() (space.c), the very function that turns random
 * search's uniform draw into a value, so a design that is uniform on the cube
 * gives each parameter random search's distribution, and every value keeps
 * Ray's bounds and rounding. The inverse map sends integers and choices to the
 * centre of their cell (so value -> unit -> value is the identity and the GP
 * sees one point per integer), and floats to their own position, refined
 * until the forward map gives the value back. Normals are the exception: not
 * every double is mean + sd * Phi^-1(u) for a double u, and GSL's Phi^-1 is
 * not monotone in its last bits, so they come back within ~1e-15 sd near the
 * mean (less precisely in the far tails; u is clamped to +-8.2 sd).
 */
#include "searcher.h"

#include <math.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

/* The largest double below 1: unit coordinates live in [0, 1). */
#define UNIT_MAX (1.0 - 0x1.0p-53)

size_t tunep_unit_dims(const tune_space *space)
{
    size_t d = 0;
    for (size_t i = 0; space && i < space->n; i++)
        d += space->params[i].dist != TUNEP_DIST_CONST;
    return d;
}

tune_status tunep_unit_check(const tune_space *space, const char *searcher, tune_error *err)
{
    if (!space)
        return tunep_error_set(err, TUNE_EINVAL, "space is NULL");
    for (size_t i = 0; i < space->n; i++)
        if (space->params[i].dist == TUNEP_DIST_GRID)
            return tunep_error_set(err, TUNE_ECONFIG,
                                   "'%s' is a grid_search axis, which the '%s' search algorithm "
                                   "cannot use (make it a choice)",
                                   space->params[i].name, searcher ? searcher : "?");
    return tunep_space_refuse_conditional(space, searcher, err);
}

tune_status tunep_space_refuse_conditional(const tune_space *space, const char *searcher,
                                           tune_error *err)
{
    long i = tunep_space_first_conditional(space);
    if (i < 0)
        return TUNE_OK;
    const struct tunep_param *p = &space->params[i];
    return tunep_error_set(err, TUNE_ECONFIG,
                           "search algorithm \"%s\" cannot search conditional parameters ('%s' "
                           "exists only for some values of '%s'): use \"tpe\" or \"random\"",
                           searcher ? searcher : "?", p->name, space->params[p->cond_parent].name);
}

void tunep_unit_to_values(const tune_space *space, const double *u, struct tunep_value *out)
{
    size_t j = 0;
    for (size_t i = 0; i < space->n; i++) {
        const struct tunep_param *p = &space->params[i];
        if (p->dist == TUNEP_DIST_CONST)
            out[i] = p->values[0];
        else
            tunep_space_value_at(p, u[j++], &out[i]);
    }
}

static double clamp_unit(double u)
{
    if (!(u >= 0.0)) /* NaN too */
        return 0.0;
    return u > UNIT_MAX ? UNIT_MAX : u;
}

static double as_double(const struct tunep_value *v)
{
    switch (v->type) {
        case TUNEP_V_DOUBLE: return v->u.d;
        case TUNEP_V_INT: return (double)v->u.i;
        case TUNEP_V_BOOL: return v->u.b ? 1.0 : 0.0;
        case TUNEP_V_STRING:
        case TUNEP_V_ABSENT: break;
    }
    return (double)NAN;
}

static int64_t as_int(const struct tunep_value *v)
{
    if (v->type == TUNEP_V_INT)
        return v->u.i;
    double x = as_double(v);
    if (!(x >= -0x1.0p63))
        return INT64_MIN;
    return x >= 0x1.0p63 ? INT64_MAX : (int64_t)x;
}

static int same_value(const struct tunep_value *a, const struct tunep_value *b)
{
    if (a->type == TUNEP_V_STRING || b->type == TUNEP_V_STRING)
        return a->type == b->type && strcmp(a->u.s, b->u.s) == 0;
    if (a->type == TUNEP_V_BOOL || b->type == TUNEP_V_BOOL)
        return a->type == b->type && (a->u.b != 0) == (b->u.b != 0);
    if (a->type == TUNEP_V_INT && b->type == TUNEP_V_INT)
        return a->u.i == b->u.i;
    return as_double(a) == as_double(b);
}

/* Where x sits in [lo, hi) on base's log scale, as draw_log() in space.c computes it. */
static double log_pos(double x, double lo, double hi, double base)
{
    double lb = log(base), a = log(lo) / lb, b = log(hi) / lb;
    return (log(x) / lb - a) / (b - a);
}

/* -1, 0, 1 as a is below, equal to, above b (two doubles or two integers) */
static int cmp(const struct tunep_value *a, const struct tunep_value *b)
{
    if (a->type == TUNEP_V_INT)
        return (a->u.i > b->u.i) - (a->u.i < b->u.i);
    return (a->u.d > b->u.d) - (a->u.d < b->u.d);
}

static int cmp_at(const struct tunep_param *p, double u, const struct tunep_value *target)
{
    struct tunep_value v;
    tunep_space_value_at(p, u, &v);
    return cmp(&v, target);
}

/*
 * Finds a u that tunep_space_value_at() maps to the target, starting from an
 * estimate. The forward map is monotone, so: bracket the target by steps
 * that double away from the estimate, then bisect. log(), pow() and the
 * inverse normal CDF lose a few ulps, and the forward map can be flat over
 * many ulps of u (a log range adds u to log(low)), so stepping by single ulps
 * would not do. A target that no u reaches (most doubles, for a normal) gets
 * a neighbour of where it would be.
 */
static double refine(const struct tunep_param *p, const struct tunep_value *target, double u)
{
    u = clamp_unit(u);
    int c = cmp_at(p, u, target);
    if (c == 0 || (target->type == TUNEP_V_DOUBLE && !isfinite(target->u.d)))
        return u;
    double lo = u, hi = u, step = fmax(nextafter(u, 1.0) - u, 0x1.0p-60);
    for (;;) { /* bracket: value(lo) < target < value(hi) */
        double w = clamp_unit(c < 0 ? hi + step : lo - step);
        if (w == (c < 0 ? hi : lo))
            return w; /* the target is beyond the end of the range */
        int cw = cmp_at(p, w, target);
        if (cw == 0)
            return w;
        if (c < 0) {
            lo = hi;
            hi = w;
        } else {
            hi = lo;
            lo = w;
        }
        if (cw != c)
            break;
        step *= 2.0;
    }
    for (;;) {
        double mid = lo + (hi - lo) / 2.0;
        if (mid <= lo || mid >= hi)
            return c < 0 ? lo : hi;
        int cm = cmp_at(p, mid, target);
        if (cm == 0)
            return mid;
        if (cm < 0)
            lo = mid;
        else
            hi = mid;
    }
}

static double value_to_unit(const struct tunep_param *p, const struct tunep_value *v)
{
    struct tunep_value x;
    switch (p->dist) {
        case TUNEP_DIST_UNIFORM:
        case TUNEP_DIST_QUNIFORM: {
            x.type = TUNEP_V_DOUBLE;
            x.u.d = as_double(v);
            double w = p->hi - p->lo;
            double u = isfinite(w) ? (x.u.d - p->lo) / w
                                   : (x.u.d / 2 - p->lo / 2) / (p->hi / 2 - p->lo / 2);
            return refine(p, &x, u);
        }
        case TUNEP_DIST_LOGUNIFORM:
        case TUNEP_DIST_QLOGUNIFORM:
            x.type = TUNEP_V_DOUBLE;
            x.u.d = as_double(v);
            return x.u.d > 0.0 ? refine(p, &x, log_pos(x.u.d, p->lo, p->hi, p->base)) : 0.0;
        case TUNEP_DIST_RANDN:
        case TUNEP_DIST_QRANDN:
            x.type = TUNEP_V_DOUBLE;
            x.u.d = as_double(v);
            return refine(p, &x, gsl_cdf_ugaussian_P((x.u.d - p->lo) / p->hi));
        case TUNEP_DIST_RANDINT: {
            /* value_at: ilo + floor(u * span); the cell of offset k is [k, k + 1) / span */
            double span = (double)((uint64_t)p->ihi - (uint64_t)p->ilo);
            x.type = TUNEP_V_INT;
            x.u.i = as_int(v);
            double k = (double)((uint64_t)x.u.i - (uint64_t)p->ilo);
            return refine(p, &x, (k + 0.5) / span);
        }
        case TUNEP_DIST_QRANDINT: {
            /* value_at rounds the offset floor(u * (span + 1)) to q; k itself is a multiple */
            double span = (double)((uint64_t)p->ihi - (uint64_t)p->ilo);
            x.type = TUNEP_V_INT;
            x.u.i = as_int(v);
            double k = (double)((uint64_t)x.u.i - (uint64_t)p->ilo);
            return refine(p, &x, (k + 0.5) / (span + 1.0));
        }
        case TUNEP_DIST_LOGRANDINT:
        case TUNEP_DIST_QLOGRANDINT: {
            /* value_at floors base ** (log position) over [low, high) (qlograndint: high + 1),
             * so the cell of integer k is [pos(k), pos(k + 1)): take its middle. */
            double lo = (double)p->ilo;
            double hi = p->dist == TUNEP_DIST_LOGRANDINT ? (double)p->ihi : (double)p->ihi + 1.0;
            x.type = TUNEP_V_INT;
            x.u.i = as_int(v);
            double k = (double)x.u.i;
            if (!(k >= lo))
                return 0.0;
            double a = log_pos(k, lo, hi, p->base), b = log_pos(k + 1.0, lo, hi, p->base);
            return refine(p, &x, 0.5 * (a + b));
        }
        case TUNEP_DIST_CHOICE:
        case TUNEP_DIST_GRID:
            for (size_t k = 0; k < p->n_values; k++)
                if (same_value(&p->values[k], v))
                    return clamp_unit(((double)k + 0.5) / (double)p->n_values);
            return 0.5; /* not one of the values (a changed config): the middle */
        case TUNEP_DIST_CONST:
        case TUNEP_DIST_COUNT: break;
    }
    return 0.5;
}

double tunep_unit_snap(const struct tunep_param *p, double u)
{
    struct tunep_value v;
    tunep_space_value_at(p, clamp_unit(u), &v);
    return value_to_unit(p, &v);
}

void tunep_values_to_unit(const tune_space *space, const struct tunep_value *v, double *u)
{
    size_t j = 0;
    for (size_t i = 0; i < space->n; i++)
        if (space->params[i].dist != TUNEP_DIST_CONST) /* absent: the middle, as a stranger */
            u[j++] = v[i].type == TUNEP_V_ABSENT ? 0.5 : value_to_unit(&space->params[i], &v[i]);
}
