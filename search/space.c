/*
 * space.c - search-space parameters: bound rules, storage, grid size, sampling.
 *
 * The primitives and their rules are Ray Tune's (ray/tune/search/sample.py):
 * uniform/loguniform draw from [low, high), randint/lograndint from [low, high)
 * with high exclusive, qrandint/qlograndint from [low, high] (Ray builds them
 * on Integer(low, high + 1)), and a quantized value is round(x / q) * q with
 * numpy's round-half-to-even (nearbyint in the default rounding mode).
 * Deliberate differences: q-integer primitives need low and high to be
 * multiples of q (Ray may return values outside [low, high] otherwise), and
 * float draws are clamped into their documented interval against rounding.
 * Invariants: a parameter in a space has passed tunep_space_check(); sampling
 * draws exactly one gsl_rng_uniform (or one gsl_ran_gaussian) per present
 * random parameter, in space order, so a trial's stream does not depend on
 * which parameters are grid axes; grid axes vary first-fastest, as Ray's grid.
 * A conditional parameter comes after its selector and is present when the
 * selector is present and has one of its condition's values.
 */
#include "space.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>

const char *tunep_dist_name(enum tunep_dist dist)
{
    switch (dist) {
        case TUNEP_DIST_UNIFORM: return "uniform";
        case TUNEP_DIST_QUNIFORM: return "quniform";
        case TUNEP_DIST_LOGUNIFORM: return "loguniform";
        case TUNEP_DIST_QLOGUNIFORM: return "qloguniform";
        case TUNEP_DIST_RANDN: return "randn";
        case TUNEP_DIST_QRANDN: return "qrandn";
        case TUNEP_DIST_RANDINT: return "randint";
        case TUNEP_DIST_QRANDINT: return "qrandint";
        case TUNEP_DIST_LOGRANDINT: return "lograndint";
        case TUNEP_DIST_QLOGRANDINT: return "qlograndint";
        case TUNEP_DIST_CHOICE: return "choice";
        case TUNEP_DIST_GRID: return "grid_search";
        case TUNEP_DIST_CONST: return "constant";
        case TUNEP_DIST_COUNT: break;
    }
    return "unknown";
}

const char *tunep_vtype_name(enum tunep_vtype t)
{
    switch (t) {
        case TUNEP_V_DOUBLE: return "float";
        case TUNEP_V_INT: return "int";
        case TUNEP_V_STRING: return "str";
        case TUNEP_V_BOOL: return "bool";
        case TUNEP_V_ABSENT: return "absent";
    }
    return "unknown";
}

/* ---- bound rules ---------------------------------------------------------- */

static tune_status fail(tune_error *err, enum tunep_arg *ret_arg, enum tunep_arg arg,
                        const char *fmt, ...) TUNEP_PRINTF(4, 5);

static tune_status fail(tune_error *err, enum tunep_arg *ret_arg, enum tunep_arg arg,
                        const char *fmt, ...)
{
    if (ret_arg)
        *ret_arg = arg;
    if (err) {
        char msg[sizeof err->text];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        tunep_error_set(err, TUNE_ECONFIG, "%s", msg);
    }
    return TUNE_ECONFIG;
}

/*
 * Ray's divisibility test: math.isclose(x / q, round(x / q)) with its default
 * rel_tol of 1e-9 (and abs_tol 0), so 0.3 / 0.1 = 2.9999999999999996 passes.
 */
static int is_multiple(double x, double q)
{
    double r = x / q, k = nearbyint(r);
    return fabs(r - k) <= 1e-9 * fmax(fabs(r), fabs(k));
}

static int bad_base(double base)
{
    return !(base > 0.0) || base == 1.0 || !isfinite(base);
}

/* Rules shared by the four float ranges; q and log select the variant. */
static tune_status check_float_range(const struct tunep_param *p, const char *dn, int quant,
                                     int logr, enum tunep_arg *ret_arg, tune_error *err)
{
    char lo[32], q[32];
    if (logr) {
        if (!(p->lo > 0.0) || !isfinite(p->lo))
            return fail(err, ret_arg, TUNEP_ARG_LOW, "%s needs 0 < low < high", dn);
        if (!isfinite(p->hi) && p->hi > 0.0)
            return fail(err, ret_arg, TUNEP_ARG_HIGH, "%s needs a finite high", dn);
        if (!(p->lo < p->hi))
            return fail(err, ret_arg, TUNEP_ARG_HIGH, "%s needs 0 < low < high", dn);
    } else {
        if (!isfinite(p->lo))
            return fail(err, ret_arg, TUNEP_ARG_LOW, "%s needs a finite low", dn);
        if (!isfinite(p->hi))
            return fail(err, ret_arg, TUNEP_ARG_HIGH, "%s needs a finite high", dn);
        if (!(p->lo < p->hi))
            return fail(err, ret_arg, TUNEP_ARG_HIGH, "%s needs low < high", dn);
    }
    if (quant) {
        if (!(p->q > 0.0))
            return fail(err, ret_arg, TUNEP_ARG_Q, "%s needs q > 0", dn);
        if (!isfinite(p->q))
            return fail(err, ret_arg, TUNEP_ARG_Q, "%s needs a finite q", dn);
        tunep_format_double(q, sizeof q, p->q);
        if (!is_multiple(p->lo, p->q)) {
            tunep_format_double(lo, sizeof lo, p->lo);
            return fail(err, ret_arg, TUNEP_ARG_LOW, "%s: low %s is not a multiple of q %s", dn, lo,
                        q);
        }
        if (!is_multiple(p->hi, p->q)) {
            tunep_format_double(lo, sizeof lo, p->hi);
            return fail(err, ret_arg, TUNEP_ARG_HIGH, "%s: high %s is not a multiple of q %s", dn,
                        lo, q);
        }
    }
    if (logr && bad_base(p->base))
        return fail(err, ret_arg, TUNEP_ARG_BASE, "%s needs a base > 0 other than 1", dn);
    return TUNE_OK;
}

static tune_status check_int_multiples(const struct tunep_param *p, const char *dn,
                                       enum tunep_arg *ret_arg, tune_error *err)
{
    if (p->iq < 1)
        return fail(err, ret_arg, TUNEP_ARG_Q, "%s needs q >= 1", dn);
    if (p->ilo % p->iq != 0)
        return fail(err, ret_arg, TUNEP_ARG_LOW, "%s: low %lld is not a multiple of q %lld", dn,
                    (long long)p->ilo, (long long)p->iq);
    if (p->ihi % p->iq != 0)
        return fail(err, ret_arg, TUNEP_ARG_HIGH, "%s: high %lld is not a multiple of q %lld", dn,
                    (long long)p->ihi, (long long)p->iq);
    return TUNE_OK;
}

static tune_status check_values(const struct tunep_param *p, const char *dn,
                                enum tunep_arg *ret_arg, tune_error *err)
{
    if (p->dist == TUNEP_DIST_CONST && p->n_values != 1)
        return tunep_error_set(err, TUNE_EINVAL, "constant needs exactly one value");
    if (p->n_values == 0)
        return fail(err, ret_arg, TUNEP_ARG_VALUES, "%s needs at least one value", dn);
    if (p->n_values > TUNEP_SPACE_MAX_CHOICES)
        return fail(err, ret_arg, TUNEP_ARG_VALUES, "%s has %zu values, more than the limit of %d",
                    dn, p->n_values, TUNEP_SPACE_MAX_CHOICES);
    if (!p->values)
        return tunep_error_set(err, TUNE_EINVAL, "%s: values is NULL", dn);
    for (size_t i = 0; i < p->n_values; i++) {
        const struct tunep_value *v = &p->values[i];
        switch (v->type) {
            case TUNEP_V_DOUBLE:
                if (!isfinite(v->u.d))
                    return fail(err, ret_arg, TUNEP_ARG_VALUES, "%s values must be finite", dn);
                break;
            case TUNEP_V_STRING:
                if (!v->u.s)
                    return tunep_error_set(err, TUNE_EINVAL, "%s: NULL string value", dn);
                break;
            case TUNEP_V_INT:
            case TUNEP_V_BOOL: break;
            default: return tunep_error_set(err, TUNE_EINVAL, "%s: unknown value type", dn);
        }
    }
    return TUNE_OK;
}

tune_status tunep_space_check(const struct tunep_param *p, enum tunep_arg *ret_arg, tune_error *err)
{
    if (ret_arg)
        *ret_arg = TUNEP_ARG_NONE;
    if (!p)
        return tunep_error_set(err, TUNE_EINVAL, "parameter is NULL");
    const char *dn = tunep_dist_name(p->dist);
    switch (p->dist) {
        case TUNEP_DIST_UNIFORM: return check_float_range(p, dn, 0, 0, ret_arg, err);
        case TUNEP_DIST_QUNIFORM: return check_float_range(p, dn, 1, 0, ret_arg, err);
        case TUNEP_DIST_LOGUNIFORM: return check_float_range(p, dn, 0, 1, ret_arg, err);
        case TUNEP_DIST_QLOGUNIFORM: return check_float_range(p, dn, 1, 1, ret_arg, err);
        case TUNEP_DIST_RANDN:
        case TUNEP_DIST_QRANDN:
            if (!isfinite(p->lo))
                return fail(err, ret_arg, TUNEP_ARG_LOW, "%s needs a finite mean", dn);
            if (!(p->hi > 0.0))
                return fail(err, ret_arg, TUNEP_ARG_HIGH, "%s needs sd > 0", dn);
            if (!isfinite(p->hi))
                return fail(err, ret_arg, TUNEP_ARG_HIGH, "%s needs a finite sd", dn);
            if (p->dist == TUNEP_DIST_QRANDN && !(p->q > 0.0))
                return fail(err, ret_arg, TUNEP_ARG_Q, "%s needs q > 0", dn);
            if (p->dist == TUNEP_DIST_QRANDN && !isfinite(p->q))
                return fail(err, ret_arg, TUNEP_ARG_Q, "%s needs a finite q", dn);
            /* A Gaussian draw from a 53-bit uniform is within 64 sd of the mean: keep
             * mean +- 64 sd (and, quantized, its quotient by q) finite, so no draw is inf. */
            if (!isfinite(fabs(p->lo) + 64.0 * p->hi))
                return fail(err, ret_arg, TUNEP_ARG_HIGH, "%s: mean + 64 sd overflows", dn);
            if (p->dist == TUNEP_DIST_QRANDN && !isfinite((fabs(p->lo) + 64.0 * p->hi) / p->q))
                return fail(err, ret_arg, TUNEP_ARG_Q, "%s: q is too small for mean and sd", dn);
            return TUNE_OK;
        case TUNEP_DIST_RANDINT:
            if (!(p->ilo < p->ihi))
                return fail(err, ret_arg, TUNEP_ARG_HIGH, "%s needs low < high (high is exclusive)",
                            dn);
            return TUNE_OK;
        case TUNEP_DIST_QRANDINT:
            if (!(p->ilo <= p->ihi))
                return fail(err, ret_arg, TUNEP_ARG_HIGH,
                            "%s needs low <= high (high is inclusive)", dn);
            return check_int_multiples(p, dn, ret_arg, err);
        case TUNEP_DIST_LOGRANDINT:
            if (p->ilo <= 0)
                return fail(err, ret_arg, TUNEP_ARG_LOW,
                            "%s needs 0 < low < high (high is exclusive)", dn);
            if (!(p->ilo < p->ihi))
                return fail(err, ret_arg, TUNEP_ARG_HIGH,
                            "%s needs 0 < low < high (high is exclusive)", dn);
            if (bad_base(p->base))
                return fail(err, ret_arg, TUNEP_ARG_BASE, "%s needs a base > 0 other than 1", dn);
            return TUNE_OK;
        case TUNEP_DIST_QLOGRANDINT: {
            if (p->ilo <= 0)
                return fail(err, ret_arg, TUNEP_ARG_LOW,
                            "%s needs 0 < low <= high (high is inclusive)", dn);
            if (!(p->ilo <= p->ihi))
                return fail(err, ret_arg, TUNEP_ARG_HIGH,
                            "%s needs 0 < low <= high (high is inclusive)", dn);
            tune_status st = check_int_multiples(p, dn, ret_arg, err);
            if (st)
                return st;
            if (bad_base(p->base))
                return fail(err, ret_arg, TUNEP_ARG_BASE, "%s needs a base > 0 other than 1", dn);
            return TUNE_OK;
        }
        case TUNEP_DIST_CHOICE:
        case TUNEP_DIST_GRID:
        case TUNEP_DIST_CONST: return check_values(p, dn, ret_arg, err);
        case TUNEP_DIST_COUNT: break;
    }
    return tunep_error_set(err, TUNE_EINVAL, "unknown distribution %d", (int)p->dist);
}

/* ---- storage -------------------------------------------------------------- */

static void param_done(struct tunep_param *p)
{
    if (p->values) {
        for (size_t i = 0; i < p->n_values; i++)
            if (p->values[i].type == TUNEP_V_STRING)
                tunep_free((void *)(uintptr_t)p->values[i].u.s);
        tunep_free(p->values);
    }
    tunep_free(p->cond_values);
    tunep_free(p->name);
    memset(p, 0, sizeof *p);
}

/* Deep copy of a checked parameter into dst; dst is untouched on failure. */
static tune_status param_copy(struct tunep_param *dst, const struct tunep_param *src)
{
    struct tunep_param p = *src;
    p.name = NULL;
    p.values = NULL;
    p.n_values = 0;
    p.cond_values = NULL;
    p.n_cond = 0;
    p.name = tunep_strdup(src->name);
    if (!p.name)
        return TUNE_ENOMEM;
    if (src->n_cond > 0) {
        p.cond_values = tunep_malloc(src->n_cond * sizeof *p.cond_values);
        if (!p.cond_values)
            goto nomem;
        memcpy(p.cond_values, src->cond_values, src->n_cond * sizeof *p.cond_values);
        p.n_cond = src->n_cond;
    }
    if (src->n_values > 0) {
        p.values = tunep_calloc(src->n_values, sizeof *p.values);
        if (!p.values)
            goto nomem;
        for (size_t i = 0; i < src->n_values; i++) {
            struct tunep_value v = src->values[i];
            if (v.type == TUNEP_V_STRING) {
                v.u.s = tunep_strdup(src->values[i].u.s);
                if (!v.u.s)
                    goto nomem;
            } else if (v.type == TUNEP_V_BOOL) {
                v.u.b = v.u.b != 0;
            }
            p.values[p.n_values++] = v;
        }
    }
    *dst = p;
    return TUNE_OK;
nomem:
    param_done(&p);
    return TUNE_ENOMEM;
}

long tunep_space_find(const tune_space *space, const char *name)
{
    if (!space || !name)
        return -1;
    for (size_t i = 0; i < space->n; i++)
        if (strcmp(space->params[i].name, name) == 0)
            return (long)i;
    return -1;
}

/* a is b's folder: b is a, then '/', then more. */
static int is_folder_of(const char *a, size_t a_len, const char *b)
{
    return strncmp(a, b, a_len) == 0 && b[a_len] == '/';
}

/* A number's value, or NaN for a string. */
static double number_of(const struct tunep_value *v)
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

int tunep_space_param_range(const tune_space *space, const char *name, double *ret_lo,
                            double *ret_hi)
{
    long i = tunep_space_find(space, name);
    if (i < 0)
        return -1;
    const struct tunep_param *p = &space->params[i];
    double lo, hi;
    switch (p->dist) {
        case TUNEP_DIST_UNIFORM:
        case TUNEP_DIST_QUNIFORM:
        case TUNEP_DIST_LOGUNIFORM:
        case TUNEP_DIST_QLOGUNIFORM:
            lo = p->lo;
            hi = p->hi;
            break;
        case TUNEP_DIST_RANDINT: /* high exclusive */
        case TUNEP_DIST_LOGRANDINT:
            lo = (double)p->ilo;
            hi = (double)p->ihi - 1.0;
            break;
        case TUNEP_DIST_QRANDINT:
        case TUNEP_DIST_QLOGRANDINT:
            lo = (double)p->ilo;
            hi = (double)p->ihi;
            break;
        case TUNEP_DIST_CHOICE:
        case TUNEP_DIST_GRID:
        case TUNEP_DIST_CONST:
            lo = HUGE_VAL;
            hi = -HUGE_VAL;
            for (size_t k = 0; k < p->n_values; k++) {
                double x = number_of(&p->values[k]);
                if (isnan(x))
                    return -1;
                lo = fmin(lo, x);
                hi = fmax(hi, x);
            }
            if (p->n_values == 0)
                return -1;
            break;
        default: return -1; /* randn, qrandn */
    }
    *ret_lo = lo;
    *ret_hi = hi;
    return 0;
}

tune_status tunep_space_name_check(const tune_space *space, const char *name, tune_error *err)
{
    if (name[0] == '\0')
        return tunep_error_set(err, TUNE_ECONFIG, "parameter name is empty");
    size_t len = strlen(name);
    if (name[0] == '/' || name[len - 1] == '/' || strstr(name, "//"))
        return tunep_error_set(err, TUNE_ECONFIG, "parameter name '%s' has an empty path segment",
                               name);
    for (size_t i = 0; i < space->n; i++) {
        const char *other = space->params[i].name;
        size_t other_len = strlen(other);
        if (strcmp(other, name) == 0)
            return tunep_error_set(err, TUNE_ECONFIG, "duplicate parameter '%s'", name);
        if (is_folder_of(other, other_len, name) || is_folder_of(name, len, other))
            return tunep_error_set(err, TUNE_ECONFIG,
                                   "parameters '%s' and '%s' clash: a name cannot be both a value"
                                   " and a folder",
                                   other, name);
    }
    return TUNE_OK;
}

tune_status tunep_space_add(tune_space *space, const struct tunep_param *p, tune_error *err)
{
    if (!space || !p || !p->name)
        return tunep_error_set(err, TUNE_EINVAL, "space, parameter and name must not be NULL");
    if (strlen(p->name) > TUNEP_SPACE_MAX_NAME)
        return tunep_error_set(err, TUNE_ECONFIG, "parameter name is longer than %d bytes",
                               TUNEP_SPACE_MAX_NAME);
    tune_status name_st = tunep_space_name_check(space, p->name, err);
    if (name_st)
        return name_st;
    if (space->n >= TUNEP_SPACE_MAX_PARAMS)
        return tunep_error_set(err, TUNE_ECONFIG, "a space holds at most %d parameters",
                               TUNEP_SPACE_MAX_PARAMS);
    tune_status st = tunep_space_check(p, NULL, err);
    if (st)
        return st;
    if (p->n_cond > 0) {
        const struct tunep_param *parent =
            p->cond_parent < space->n ? &space->params[p->cond_parent] : NULL;
        if (!parent || parent->dist != TUNEP_DIST_CHOICE || !p->cond_values)
            return tunep_error_set(err, TUNE_EINVAL,
                                   "'%s': a condition needs an earlier choice parameter", p->name);
        for (size_t k = 0; k < p->n_cond; k++)
            if (p->cond_values[k] >= parent->n_values)
                return tunep_error_set(err, TUNE_EINVAL, "'%s': condition value %zu out of range",
                                       p->name, p->cond_values[k]);
    }
    if (space->n == space->cap) {
        size_t cap = space->cap ? 2 * space->cap : 8;
        struct tunep_param *np =
            tunep_realloc(space->params, space->cap * sizeof *np, cap * sizeof *np);
        if (!np)
            return tunep_error_set(err, TUNE_ENOMEM, "out of memory adding parameter '%s'",
                                   p->name);
        space->params = np;
        space->cap = cap;
    }
    if (param_copy(&space->params[space->n], p))
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory adding parameter '%s'", p->name);
    space->n++;
    return TUNE_OK;
}

void tunep_space_truncate(tune_space *space, size_t n)
{
    if (!space)
        return;
    while (space->n > n)
        param_done(&space->params[--space->n]);
}

tune_status tunep_space_clone(const tune_space *src, tune_space **ret, tune_error *err)
{
    if (!src || !ret)
        return tunep_error_set(err, TUNE_EINVAL, "space and ret must not be NULL");
    tune_space *s = tunep_calloc(1, sizeof *s);
    if (!s)
        goto nomem;
    if (src->n > 0) {
        s->params = tunep_calloc(src->n, sizeof *s->params);
        if (!s->params)
            goto nomem;
        s->cap = src->n;
        for (size_t i = 0; i < src->n; i++) {
            if (param_copy(&s->params[i], &src->params[i]))
                goto nomem;
            s->n++;
        }
    }
    *ret = s;
    return TUNE_OK;
nomem:
    if (s) {
        tunep_space_truncate(s, 0);
        tunep_free(s->params);
        tunep_free(s);
    }
    return tunep_error_set(err, TUNE_ENOMEM, "out of memory copying a space");
}

/* ---- grid ----------------------------------------------------------------- */

static int is_axis(const struct tunep_param *p, int expand_choices)
{
    return p->dist == TUNEP_DIST_GRID ||
           (expand_choices && p->dist == TUNEP_DIST_CHOICE && p->n_cond == 0);
}

uint64_t tunep_space_grid_size(const tune_space *space, int expand_choices, tune_error *err)
{
    uint64_t size = 1;
    int overflow = 0;
    if (!space) {
        tunep_error_set(err, TUNE_EINVAL, "space is NULL");
        return 0;
    }
    for (size_t i = 0; i < space->n; i++) {
        const struct tunep_param *p = &space->params[i];
        if (!is_axis(p, expand_choices))
            continue;
        if (p->n_values != 0 && size > UINT64_MAX / p->n_values)
            overflow = 1;
        else
            size *= p->n_values;
    }
    if (overflow) {
        tunep_error_set(err, TUNE_ECONFIG, "grid of more than %llu points exceeds the limit of %d",
                        (unsigned long long)UINT64_MAX, TUNEP_SPACE_MAX_GRID);
        return 0;
    }
    if (size > TUNEP_SPACE_MAX_GRID) {
        tunep_error_set(err, TUNE_ECONFIG, "grid of %llu points exceeds the limit of %d",
                        (unsigned long long)size, TUNEP_SPACE_MAX_GRID);
        return 0;
    }
    return size;
}

/* ---- sampling ------------------------------------------------------------- */

/* An index in [0, max] from u in [0, 1), for any max (2^53 distinct values at most). */
static uint64_t scale_incl(double u, uint64_t max)
{
    double t = u * ((double)max + 1.0);
    uint64_t k = t < 18446744073709551616.0 ? (uint64_t)t : max;
    return k < max ? k : max;
}

/* lo + off where the sum fits in int64 (two's complement is guaranteed for int64_t). */
static int64_t add_offset(int64_t lo, uint64_t off)
{
    uint64_t u = (uint64_t)lo + off;
    int64_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/*
 * Rounds x = lo + off to the nearest multiple of q, ties to the even multiple
 * (numpy's round), where lo is a multiple of q. Stays within [lo, lo + span]
 * when lo + span is a multiple of q too.
 */
static int64_t round_to_q(int64_t lo, uint64_t off, int64_t q)
{
    uint64_t uq = (uint64_t)q, k = off / uq, r = off % uq;
    uint64_t parity = ((uint64_t)(lo / q) + k) & 1u;
    if (r > uq - r || (r == uq - r && parity))
        k++;
    return add_offset(lo, k * uq);
}

/* Float uniform in [lo, hi), as numpy's low + (high - low) * u, clamped against rounding. */
static double draw_uniform(double lo, double hi, double u)
{
    double w = hi - lo;
    double x = isfinite(w) ? lo + w * u : lo * (1.0 - u) + hi * u;
    if (x >= hi)
        x = nextafter(hi, lo);
    return x < lo ? lo : x;
}

/* base ** uniform(log_base(lo), log_base(hi)), without clamping. */
static double draw_log(double lo, double hi, double base, double u)
{
    double lb = log(base);
    double a = log(lo) / lb, b = log(hi) / lb;
    return pow(base, a + (b - a) * u);
}

static double quantize(double x, double q)
{
    return nearbyint(x / q) * q;
}

/* floor(x) as an integer in [lo, hi], compared as integers (doubles lose odd values past 2^53). */
static int64_t floor_clamp(double x, int64_t lo, int64_t hi)
{
    double f = floor(x);
    int64_t v;
    if (!(f >= -0x1.0p63))
        v = lo; /* NaN too */
    else if (f >= 0x1.0p63)
        v = hi;
    else
        v = (int64_t)f;
    return v < lo ? lo : v > hi ? hi : v;
}

void tunep_space_value_at(const struct tunep_param *p, double u, struct tunep_value *out)
{
    switch (p->dist) {
        case TUNEP_DIST_UNIFORM:
            out->type = TUNEP_V_DOUBLE;
            out->u.d = draw_uniform(p->lo, p->hi, u);
            return;
        case TUNEP_DIST_QUNIFORM:
            out->type = TUNEP_V_DOUBLE;
            out->u.d = quantize(draw_uniform(p->lo, p->hi, u), p->q);
            return;
        case TUNEP_DIST_LOGUNIFORM:
        case TUNEP_DIST_QLOGUNIFORM: {
            double x = draw_log(p->lo, p->hi, p->base, u);
            if (x >= p->hi)
                x = nextafter(p->hi, 0.0);
            if (x < p->lo)
                x = p->lo;
            out->type = TUNEP_V_DOUBLE;
            out->u.d = p->dist == TUNEP_DIST_QLOGUNIFORM ? quantize(x, p->q) : x;
            return;
        }
        case TUNEP_DIST_RANDN:
        case TUNEP_DIST_QRANDN: {
            /* Clamped to +-8.2 sd: within the 64 sd that tunep_space_check() keeps finite. */
            double uc = u < 0x1.0p-53 ? 0x1.0p-53 : u > 1.0 - 0x1.0p-53 ? 1.0 - 0x1.0p-53 : u;
            double x = p->lo + p->hi * gsl_cdf_ugaussian_Pinv(uc);
            out->type = TUNEP_V_DOUBLE;
            out->u.d = p->dist == TUNEP_DIST_QRANDN ? quantize(x, p->q) : x;
            return;
        }
        case TUNEP_DIST_RANDINT: {
            uint64_t span = (uint64_t)p->ihi - (uint64_t)p->ilo; /* >= 1 values */
            out->type = TUNEP_V_INT;
            out->u.i = add_offset(p->ilo, scale_incl(u, span - 1));
            return;
        }
        case TUNEP_DIST_QRANDINT: {
            uint64_t span = (uint64_t)p->ihi - (uint64_t)p->ilo;
            out->type = TUNEP_V_INT;
            out->u.i = round_to_q(p->ilo, scale_incl(u, span), p->iq);
            return;
        }
        case TUNEP_DIST_LOGRANDINT:
            out->type = TUNEP_V_INT;
            out->u.i = floor_clamp(draw_log((double)p->ilo, (double)p->ihi, p->base, u), p->ilo,
                                   p->ihi - 1);
            return;
        case TUNEP_DIST_QLOGRANDINT: {
            /* Ray: Integer(low, high + 1).loguniform(), so floor() reaches high. */
            double x = draw_log((double)p->ilo, (double)p->ihi + 1.0, p->base, u);
            int64_t v = floor_clamp(x, p->ilo, p->ihi);
            out->type = TUNEP_V_INT;
            out->u.i = round_to_q(p->ilo, (uint64_t)v - (uint64_t)p->ilo, p->iq);
            return;
        }
        case TUNEP_DIST_CHOICE:
        case TUNEP_DIST_GRID: *out = p->values[scale_incl(u, p->n_values - 1)]; return;
        case TUNEP_DIST_CONST: *out = p->values[0]; return;
        case TUNEP_DIST_COUNT: break;
    }
    out->type = TUNEP_V_DOUBLE;
    out->u.d = (double)NAN;
}

/*
 * Integer ranges with more values than this are drawn from 64 random bits:
 * gsl_rng_uniform() has 53, so past 2^53 values a u in [0, 1) can only reach
 * every 2^(bits - 53)-th integer (multiples of 2048 over all of int64).
 */
#define EXACT_INT_VALUES (UINT64_C(1) << 53)

/* 64 uniform bits from r: two draws of a 32-bit generator (tune's xoshiro, mt19937),
 * else four 16-bit gsl_rng_uniform_int() draws. */
static uint64_t random_u64(gsl_rng *r)
{
    if (gsl_rng_max(r) - gsl_rng_min(r) == 0xffffffffUL) {
        uint64_t hi = (uint64_t)(gsl_rng_get(r) - gsl_rng_min(r));
        return hi << 32 | (uint64_t)(gsl_rng_get(r) - gsl_rng_min(r));
    }
    uint64_t x = 0;
    for (int i = 0; i < 4; i++)
        x = x << 16 | (uint64_t)gsl_rng_uniform_int(r, 65536);
    return x;
}

/* The high and low 64 bits of a * b. */
static void mul_64x64(uint64_t a, uint64_t b, uint64_t *ret_hi, uint64_t *ret_lo)
{
    uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32, b_lo = b & 0xffffffffu, b_hi = b >> 32;
    uint64_t ll = a_lo * b_lo, lh = a_lo * b_hi, hl = a_hi * b_lo, hh = a_hi * b_hi;
    uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
    *ret_hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    *ret_lo = (mid << 32) | (ll & 0xffffffffu);
}

/*
 * Uniform in [0, n - 1], or over all 64 bits for n == 0 (2^64 values).
 * Lemire's multiply-shift with rejection ("Fast random integer generation in
 * an interval", 2019) on x * n + t, t = 2^64 mod n: a draw whose low word is
 * below t is drawn again. Each value keeps exactly floor(2^64 / n) draws (the
 * offset t moves the rejected ones, never their number), larger draws give
 * larger values as scale_incl() does for u. A draw is rejected with
 * probability t / 2^64 < 1/2, so after 64 rejections in a row the generator is
 * not random (a constant one, as the fuzzer's): the last draw is taken then,
 * so that no generator can make this loop forever.
 */
static uint64_t random_below(gsl_rng *r, uint64_t n)
{
    if (n == 0)
        return random_u64(r);
    uint64_t t = (0 - n) % n, hi, lo;
    int tries = 0;
    do {
        mul_64x64(random_u64(r), n, &hi, &lo);
        lo += t;
        hi += lo < t; /* the carry */
    } while (lo < t && ++tries < 64);
    return hi < n ? hi : n - 1; /* a rejected draw's carry can reach n */
}

/* One gsl_rng_uniform per parameter; normals draw gsl_ran_gaussian (Ray's np.random.normal);
 * integer ranges wider than EXACT_INT_VALUES draw 64-bit integers. */
static void draw(const struct tunep_param *p, gsl_rng *r, struct tunep_value *out)
{
    uint64_t span = (uint64_t)p->ihi - (uint64_t)p->ilo;
    switch (p->dist) {
        case TUNEP_DIST_RANDN:
            out->type = TUNEP_V_DOUBLE;
            out->u.d = p->lo + gsl_ran_gaussian(r, p->hi);
            return;
        case TUNEP_DIST_QRANDN:
            out->type = TUNEP_V_DOUBLE;
            out->u.d = quantize(p->lo + gsl_ran_gaussian(r, p->hi), p->q);
            return;
        case TUNEP_DIST_GRID:
        case TUNEP_DIST_CONST: *out = p->values[0]; return;
        case TUNEP_DIST_RANDINT: /* span values: [low, high) */
            if (span <= EXACT_INT_VALUES)
                break;
            out->type = TUNEP_V_INT;
            out->u.i = add_offset(p->ilo, random_below(r, span));
            return;
        case TUNEP_DIST_QRANDINT: /* span + 1 offsets, then rounded to q as value_at() does */
            if (span < EXACT_INT_VALUES)
                break;
            out->type = TUNEP_V_INT;
            out->u.i = round_to_q(p->ilo, random_below(r, span + 1), p->iq);
            return;
        default: break;
    }
    tunep_space_value_at(p, gsl_rng_uniform(r), out);
}

void tunep_space_sample(const tune_space *space, gsl_rng *r, uint64_t grid_index,
                        int expand_choices, struct tunep_value *out)
{
    uint64_t g = grid_index;
    for (size_t i = 0; i < space->n; i++) {
        const struct tunep_param *p = &space->params[i];
        if (p->n_cond > 0 && !tunep_space_present(space, i, out)) {
            out[i].type = TUNEP_V_ABSENT;
        } else if (is_axis(p, expand_choices)) {
            out[i] = p->values[g % p->n_values];
            g /= p->n_values;
        } else if (p->dist == TUNEP_DIST_CONST) {
            out[i] = p->values[0];
        } else {
            draw(p, r, &out[i]);
        }
    }
}

/* ---- conditions ----------------------------------------------------------- */

int tunep_value_equal(const struct tunep_value *a, const struct tunep_value *b)
{
    if (a->type != b->type)
        return 0;
    switch (a->type) {
        case TUNEP_V_DOUBLE: return a->u.d == b->u.d;
        case TUNEP_V_INT: return a->u.i == b->u.i;
        case TUNEP_V_BOOL: return (a->u.b != 0) == (b->u.b != 0);
        case TUNEP_V_STRING: return strcmp(a->u.s, b->u.s) == 0;
        case TUNEP_V_ABSENT: return 1;
    }
    return 0;
}

int tunep_param_same_dist(const struct tunep_param *a, const struct tunep_param *b)
{
    if (a->dist != b->dist || a->n_values != b->n_values)
        return 0;
    if (a->n_values > 0) {
        for (size_t k = 0; k < a->n_values; k++)
            if (!tunep_value_equal(&a->values[k], &b->values[k]))
                return 0;
        return 1;
    }
    return a->lo == b->lo && a->hi == b->hi && a->q == b->q && a->base == b->base &&
           a->ilo == b->ilo && a->ihi == b->ihi && a->iq == b->iq;
}

tune_status tunep_space_condition_add(tune_space *space, size_t i, size_t parent, size_t value,
                                      tune_error *err)
{
    if (!space || i >= space->n || parent >= i)
        return tunep_error_set(err, TUNE_EINVAL, "condition: no such parameter");
    struct tunep_param *p = &space->params[i];
    const struct tunep_param *pp = &space->params[parent];
    if (pp->dist != TUNEP_DIST_CHOICE || value >= pp->n_values)
        return tunep_error_set(err, TUNE_ECONFIG, "'%s' depends on '%s', which is not a choice",
                               p->name, pp->name);
    if (p->n_cond > 0 && p->cond_parent != parent)
        return tunep_error_set(err, TUNE_ECONFIG, "'%s' already depends on '%s', not on '%s'",
                               p->name, space->params[p->cond_parent].name, pp->name);
    for (size_t k = 0; k < p->n_cond; k++)
        if (p->cond_values[k] == value)
            return TUNE_OK;
    size_t *nv =
        tunep_realloc(p->cond_values, p->n_cond * sizeof *nv, (p->n_cond + 1) * sizeof *nv);
    if (!nv)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory adding a condition to '%s'",
                               p->name);
    nv[p->n_cond] = value;
    p->cond_values = nv;
    p->cond_parent = parent;
    p->n_cond++;
    return TUNE_OK;
}

long tunep_space_first_conditional(const tune_space *space)
{
    for (size_t i = 0; space && i < space->n; i++)
        if (space->params[i].n_cond > 0)
            return (long)i;
    return -1;
}

int tunep_space_present(const tune_space *space, size_t i, const struct tunep_value *values)
{
    const struct tunep_param *p = &space->params[i];
    if (p->n_cond == 0)
        return 1;
    const struct tunep_value *v = &values[p->cond_parent];
    if (v->type == TUNEP_V_ABSENT)
        return 0;
    const struct tunep_param *parent = &space->params[p->cond_parent];
    for (size_t k = 0; k < p->n_cond; k++)
        if (tunep_value_equal(&parent->values[p->cond_values[k]], v))
            return 1;
    return 0;
}

void tunep_space_mask(const tune_space *space, struct tunep_value *values)
{
    for (size_t i = 0; space && i < space->n; i++)
        if (!tunep_space_present(space, i, values))
            values[i].type = TUNEP_V_ABSENT;
}
