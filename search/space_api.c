/*
 * space_api.c - the public tune_space_* functions that build a space in code.
 *
 * Each one fills a struct tunep_param and hands it to tunep_space_add(), which
 * holds every rule (space.c). Bound errors are prefixed with the quoted name
 * ("'lr': loguniform needs 0 < low < high"); name errors (empty, too long,
 * duplicate) already name it. A failed call leaves the space unchanged.
 * tune_space_add_json() lives in config/config_space.c, next to jansson.
 */
#include "space.h"

#include <stdio.h>
#include <string.h>

tune_status tune_space_new(tune_space **ret_space, tune_error *err)
{
    if (!ret_space)
        return tunep_error_set(err, TUNE_EINVAL, "ret_space must not be NULL");
    tune_space *s = tunep_calloc(1, sizeof *s);
    if (!s)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory creating a space");
    *ret_space = s;
    return TUNE_OK;
}

void tune_space_free(tune_space *space)
{
    if (!space)
        return;
    tunep_space_truncate(space, 0);
    tunep_free(space->params);
    tunep_free(space);
}

size_t tune_space_size(const tune_space *s)
{
    return s ? s->n : 0;
}

static tune_status add(tune_space *s, const struct tunep_param *p, tune_error *err)
{
    if (!s || !p->name)
        return tunep_error_set(err, TUNE_EINVAL, "space and name must not be NULL");
    tune_status st = tunep_space_check(p, NULL, err);
    if (st) {
        char quoted[TUNEP_SPACE_MAX_NAME + 3];
        snprintf(quoted, sizeof quoted, "'%s'", p->name);
        tunep_error_prefix(err, quoted);
        return st;
    }
    return tunep_space_add(s, p, err);
}

static struct tunep_param float_param(const char *name, enum tunep_dist dist, double lo, double hi,
                                      double q, double base)
{
    struct tunep_param p;
    memset(&p, 0, sizeof p);
    p.name = (char *)(uintptr_t)name; /* only read; tunep_space_add copies it */
    p.dist = dist;
    p.lo = lo;
    p.hi = hi;
    p.q = q;
    p.base = base;
    return p;
}

static struct tunep_param int_param(const char *name, enum tunep_dist dist, int64_t lo, int64_t hi,
                                    int64_t q, double base)
{
    struct tunep_param p;
    memset(&p, 0, sizeof p);
    p.name = (char *)(uintptr_t)name;
    p.dist = dist;
    p.ilo = lo;
    p.ihi = hi;
    p.iq = q;
    p.base = base;
    return p;
}

tune_status tune_space_add_uniform(tune_space *s, const char *name, double low, double high,
                                   tune_error *err)
{
    struct tunep_param p = float_param(name, TUNEP_DIST_UNIFORM, low, high, 0.0, 0.0);
    return add(s, &p, err);
}

tune_status tune_space_add_quniform(tune_space *s, const char *name, double low, double high,
                                    double q, tune_error *err)
{
    struct tunep_param p = float_param(name, TUNEP_DIST_QUNIFORM, low, high, q, 0.0);
    return add(s, &p, err);
}

tune_status tune_space_add_loguniform(tune_space *s, const char *name, double low, double high,
                                      double base, tune_error *err)
{
    struct tunep_param p = float_param(name, TUNEP_DIST_LOGUNIFORM, low, high, 0.0, base);
    return add(s, &p, err);
}

tune_status tune_space_add_qloguniform(tune_space *s, const char *name, double low, double high,
                                       double q, double base, tune_error *err)
{
    struct tunep_param p = float_param(name, TUNEP_DIST_QLOGUNIFORM, low, high, q, base);
    return add(s, &p, err);
}

tune_status tune_space_add_randn(tune_space *s, const char *name, double mean, double sd,
                                 tune_error *err)
{
    struct tunep_param p = float_param(name, TUNEP_DIST_RANDN, mean, sd, 0.0, 0.0);
    return add(s, &p, err);
}

tune_status tune_space_add_qrandn(tune_space *s, const char *name, double mean, double sd, double q,
                                  tune_error *err)
{
    struct tunep_param p = float_param(name, TUNEP_DIST_QRANDN, mean, sd, q, 0.0);
    return add(s, &p, err);
}

tune_status tune_space_add_randint(tune_space *s, const char *name, int64_t low, int64_t high,
                                   tune_error *err)
{
    struct tunep_param p = int_param(name, TUNEP_DIST_RANDINT, low, high, 1, 0.0);
    return add(s, &p, err);
}

tune_status tune_space_add_qrandint(tune_space *s, const char *name, int64_t low, int64_t high,
                                    int64_t q, tune_error *err)
{
    struct tunep_param p = int_param(name, TUNEP_DIST_QRANDINT, low, high, q, 0.0);
    return add(s, &p, err);
}

tune_status tune_space_add_lograndint(tune_space *s, const char *name, int64_t low, int64_t high,
                                      double base, tune_error *err)
{
    struct tunep_param p = int_param(name, TUNEP_DIST_LOGRANDINT, low, high, 1, base);
    return add(s, &p, err);
}

tune_status tune_space_add_qlograndint(tune_space *s, const char *name, int64_t low, int64_t high,
                                       int64_t q, double base, tune_error *err)
{
    struct tunep_param p = int_param(name, TUNEP_DIST_QLOGRANDINT, low, high, q, base);
    return add(s, &p, err);
}

/*
 * A choice, grid or constant over n values of one type, read from a C array.
 * Out-of-limit sizes skip the temporary copy so the rule check reports them.
 */
static tune_status add_values(tune_space *s, const char *name, enum tunep_dist dist,
                              enum tunep_vtype type, const void *values, size_t n, tune_error *err)
{
    struct tunep_param p = float_param(name, dist, 0.0, 0.0, 0.0, 0.0);
    p.n_values = n;
    if (n > 0 && n <= TUNEP_SPACE_MAX_CHOICES) {
        if (!values)
            return tunep_error_set(err, TUNE_EINVAL, "values must not be NULL");
        p.values = tunep_calloc(n, sizeof *p.values);
        if (!p.values)
            return tunep_error_set(err, TUNE_ENOMEM, "out of memory adding parameter");
        for (size_t i = 0; i < n; i++) {
            p.values[i].type = type;
            switch (type) {
                case TUNEP_V_DOUBLE: p.values[i].u.d = ((const double *)values)[i]; break;
                case TUNEP_V_INT: p.values[i].u.i = ((const int64_t *)values)[i]; break;
                case TUNEP_V_STRING: p.values[i].u.s = ((const char *const *)values)[i]; break;
                case TUNEP_V_BOOL: p.values[i].u.b = ((const int *)values)[i] != 0; break;
                case TUNEP_V_ABSENT: break;
            }
        }
    }
    tune_status st = add(s, &p, err);
    tunep_free(p.values);
    return st;
}

tune_status tune_space_add_choice_double(tune_space *s, const char *name, const double *values,
                                         size_t n, tune_error *err)
{
    return add_values(s, name, TUNEP_DIST_CHOICE, TUNEP_V_DOUBLE, values, n, err);
}

tune_status tune_space_add_choice_int(tune_space *s, const char *name, const int64_t *values,
                                      size_t n, tune_error *err)
{
    return add_values(s, name, TUNEP_DIST_CHOICE, TUNEP_V_INT, values, n, err);
}

tune_status tune_space_add_choice_string(tune_space *s, const char *name, const char *const *values,
                                         size_t n, tune_error *err)
{
    return add_values(s, name, TUNEP_DIST_CHOICE, TUNEP_V_STRING, values, n, err);
}

tune_status tune_space_add_grid_double(tune_space *s, const char *name, const double *values,
                                       size_t n, tune_error *err)
{
    return add_values(s, name, TUNEP_DIST_GRID, TUNEP_V_DOUBLE, values, n, err);
}

tune_status tune_space_add_grid_int(tune_space *s, const char *name, const int64_t *values,
                                    size_t n, tune_error *err)
{
    return add_values(s, name, TUNEP_DIST_GRID, TUNEP_V_INT, values, n, err);
}

tune_status tune_space_add_grid_string(tune_space *s, const char *name, const char *const *values,
                                       size_t n, tune_error *err)
{
    return add_values(s, name, TUNEP_DIST_GRID, TUNEP_V_STRING, values, n, err);
}

tune_status tune_space_add_const_double(tune_space *s, const char *name, double value,
                                        tune_error *err)
{
    return add_values(s, name, TUNEP_DIST_CONST, TUNEP_V_DOUBLE, &value, 1, err);
}

tune_status tune_space_add_const_int(tune_space *s, const char *name, int64_t value,
                                     tune_error *err)
{
    return add_values(s, name, TUNEP_DIST_CONST, TUNEP_V_INT, &value, 1, err);
}

tune_status tune_space_add_const_string(tune_space *s, const char *name, const char *value,
                                        tune_error *err)
{
    if (!value)
        return tunep_error_set(err, TUNE_EINVAL, "value must not be NULL");
    return add_values(s, name, TUNEP_DIST_CONST, TUNEP_V_STRING, &value, 1, err);
}

tune_status tune_space_add_const_bool(tune_space *s, const char *name, int value, tune_error *err)
{
    return add_values(s, name, TUNEP_DIST_CONST, TUNEP_V_BOOL, &value, 1, err);
}
