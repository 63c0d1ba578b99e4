/*
 * space.h - search spaces: the parameters of a study and how each is drawn.
 *
 * A space is a flat, ordered list of parameters; nested objects of a config's
 * param_space are flattened to "a/b" names in document order. Each parameter
 * is a distribution (Ray Tune's primitives, with Ray's bound rules), a choice,
 * a grid axis, or a constant. A trial's configuration is an array of
 * tunep_value, one per parameter, in space order.
 */
#ifndef TUNE_SPACE_H
#define TUNE_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "base/base.h"

/* Limits on what a config may ask for. */
#define TUNEP_SPACE_MAX_PARAMS  1024
#define TUNEP_SPACE_MAX_CHOICES 100000
#define TUNEP_SPACE_MAX_GRID    1000000 /* grid points before num_samples repeats */

enum tunep_vtype {
    TUNEP_V_DOUBLE = 0,
    TUNEP_V_INT = 1,
    TUNEP_V_STRING = 2,
    TUNEP_V_BOOL = 3,
    TUNEP_V_ABSENT = 4, /* a conditional parameter outside its option: no value */
};

/* A parameter value. Strings are borrowed from the space that produced them. */
struct tunep_value {
    enum tunep_vtype type;
    union {
        double d;
        int64_t i;
        const char *s;
        int b;
    } u;
};

enum tunep_dist {
    TUNEP_DIST_UNIFORM = 0,
    TUNEP_DIST_QUNIFORM,
    TUNEP_DIST_LOGUNIFORM,
    TUNEP_DIST_QLOGUNIFORM,
    TUNEP_DIST_RANDN,
    TUNEP_DIST_QRANDN,
    TUNEP_DIST_RANDINT,
    TUNEP_DIST_QRANDINT,
    TUNEP_DIST_LOGRANDINT,
    TUNEP_DIST_QLOGRANDINT,
    TUNEP_DIST_CHOICE,
    TUNEP_DIST_GRID,
    TUNEP_DIST_CONST,
    TUNEP_DIST_COUNT
};

/*
 * One parameter. Which fields matter depends on dist:
 *   float ranges  (uniform, quniform, loguniform, qloguniform): lo, hi, q, base
 *   normals       (randn, qrandn): lo = mean, hi = sd, q
 *   integer ranges (randint, qrandint, lograndint, qlograndint): ilo, ihi, iq, base
 *                 ihi is stored exactly as the user wrote it; the inclusive or
 *                 exclusive reading follows Ray (see tunep_space_sample()).
 *   choice, grid, const: values[n_values] (const has one). Strings are owned.
 */
struct tunep_param {
    char *name; /* owned, flattened "a/b" */
    enum tunep_dist dist;
    double lo, hi, q, base;
    int64_t ilo, ihi, iq;
    size_t n_values;
    struct tunep_value *values; /* owned, strings owned */
    /*
     * Condition (n_cond == 0: always present): present when parameter
     * cond_parent (a choice earlier in the space) is present and has one of
     * the values cond_parent.values[cond_values[k]], k < n_cond.
     */
    size_t cond_parent;
    size_t n_cond;
    size_t *cond_values; /* owned */
};

struct tune_space {
    size_t n, cap;
    struct tunep_param *params;
};

/* "uniform", "qloguniform", ..., "choice", "grid_search", "constant". Static. */
const char *tunep_dist_name(enum tunep_dist dist);

/*
 * Validates p against the bound rules and appends a deep copy. On failure sets
 * err (TUNE_ECONFIG, text without position or key, e.g. "loguniform needs
 * 0 < low < high") and leaves the space unchanged. TUNE_ENOMEM on OOM.
 */
tune_status tunep_space_add(tune_space *space, const struct tunep_param *p, tune_error *err);

/* The index of the parameter with this name, or -1. */
long tunep_space_find(const tune_space *space, const char *name);

/*
 * The smallest and largest value parameter name can take, when every value
 * it can take is a number (a bool counts as 0 or 1); 0 then, -1 otherwise (no
 * such parameter, strings, or randn's unbounded tails).
 */
int tunep_space_param_range(const tune_space *space, const char *name, double *ret_lo,
                            double *ret_hi);
/*
 * Whether name can join space: not empty, no empty "/" segment ("a//b", "/a",
 * "a/"), not a duplicate, and neither a folder of a parameter already there nor
 * inside one ("opt" and "opt/lr" would make one value vanish from nested JSON).
 * Returns TUNE_OK or TUNE_ECONFIG with the reason in err.
 */
tune_status tunep_space_name_check(const tune_space *space, const char *name, tune_error *err);

/*
 * Number of grid points: the product of the sizes of the grid axes (1 when
 * there are none). When expand_choices is set, unconditional choice
 * parameters count as grid axes too (the "grid" search algorithm); a
 * conditional choice is drawn at random within its option. Returns 0 and sets err when the
 * product exceeds TUNEP_SPACE_MAX_GRID.
 */
uint64_t tunep_space_grid_size(const tune_space *space, int expand_choices, tune_error *err);

/*
 * Draws one configuration into out[space->n]. Grid axes (and unconditional
 * choices, when expand_choices) take their value from grid_index, the first
 * axis varying fastest; every other parameter is drawn from r, in space order.
 * A conditional parameter whose condition fails is TUNEP_V_ABSENT and draws
 * nothing (as Ray's variant generator, which samples the chosen option's
 * members only). Strings in out are borrowed from the space.
 */
void tunep_space_sample(const tune_space *space, gsl_rng *r, uint64_t grid_index,
                        int expand_choices, struct tunep_value *out);

/*
 * The value of parameter p at position u in [0, 1): what tunep_space_sample()
 * makes of a gsl_rng_uniform() draw of u (same rounding and bounds), and for
 * randn/qrandn mean + sd * inverse-normal-CDF(u), u clamped to +-8.2 sd.
 * Choices and grid axes take value floor(u * n_values); constants their value.
 * The quasi-random and model-based searchers map their unit cube through it.
 */
void tunep_space_value_at(const struct tunep_param *p, double u, struct tunep_value *out);

/* Deep-copies a space (for a study that keeps its own). */
tune_status tunep_space_clone(const tune_space *src, tune_space **ret, tune_error *err);

/* The JSON type name of a value kind: "float", "int", "str", "bool". */
const char *tunep_vtype_name(enum tunep_vtype t);

/*
 * Which argument of a primitive a failed check is about, so that a config
 * error can point at that array element. For randn/qrandn, LOW is the mean and
 * HIGH the sd; VALUES is the list of a choice, grid or constant.
 */
enum tunep_arg {
    TUNEP_ARG_NONE = -1,
    TUNEP_ARG_LOW = 0,
    TUNEP_ARG_HIGH = 1,
    TUNEP_ARG_Q = 2,
    TUNEP_ARG_BASE = 3,
    TUNEP_ARG_VALUES = 4,
};

/*
 * Checks p against the bound rules without adding it (name rules are checked
 * by tunep_space_add()). On failure sets err as tunep_space_add() does and, when
 * ret_arg is not NULL, the argument at fault. Never allocates.
 */
tune_status tunep_space_check(const struct tunep_param *p, enum tunep_arg *ret_arg,
                              tune_error *err);

/*
 * Makes parameter i present only when parameter parent (a choice before i)
 * has value parent.values[value] as well: the first call sets the condition,
 * later ones with the same parent add a value (a member that several options
 * share). TUNE_ECONFIG for a parent that is not an earlier choice, a value out
 * of range, or a different parent than the condition i has. TUNE_ENOMEM.
 */
tune_status tunep_space_condition_add(tune_space *space, size_t i, size_t parent, size_t value,
                                      tune_error *err);

/* The index of the first conditional parameter, or -1 when the space has none. */
long tunep_space_first_conditional(const tune_space *space);

/*
 * Whether parameter i is present in a configuration whose parameters before
 * i are values[0..i-1] (its condition holds).
 */
int tunep_space_present(const tune_space *space, size_t i, const struct tunep_value *values);

/* Sets every parameter whose condition fails to TUNEP_V_ABSENT, in space order. */
void tunep_space_mask(const tune_space *space, struct tunep_value *values);

/* Same kind and value (strings by content; an absent value equals an absent one). */
int tunep_value_equal(const struct tunep_value *a, const struct tunep_value *b);

/*
 * Whether two parameters draw the same way: distribution, bounds and values
 * (names and conditions aside).
 */
int tunep_param_same_dist(const struct tunep_param *a, const struct tunep_param *b);

/* Frees the parameters from index n on and shrinks the space to n (n >= size: no-op). */
void tunep_space_truncate(tune_space *space, size_t n);

#endif /* TUNE_SPACE_H */
