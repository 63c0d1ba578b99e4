/*
 * importance.h - hyperparameter importance by fANOVA (search/importance.c).
 *
 * Hutter, Hoos and Leyton-Brown, "An Efficient Approach for Assessing
 * Hyperparameter Importance" (ICML 2014), as Optuna's default evaluator
 * (FanovaImportanceEvaluator) does it: a random forest is fitted to the
 * finished trials (configuration -> objective value), and each tree's
 * prediction, a piecewise-constant function over the unit cube of the space,
 * is decomposed exactly into the functional ANOVA terms of a uniform measure
 * on the cube. A parameter's importance is the variance of its main effect
 * as a fraction of the tree's total variance, averaged over the trees; a
 * pair's is the variance of its pure interaction (the pair's marginal with
 * both main effects taken out). Main effects and pairs add up to at most 1;
 * the rest is interactions of three or more parameters.
 *
 * The space's unit-cube view (search/unit.c) places every value: log ranges
 * in log space, integers in equal cells, normals through their CDF. Choices
 * and grid axes of up to TUNEP_IMPORTANCE_MAX_CATEGORIES values are
 * categorical: a split sends a subset of the values each way (Breiman's
 * ordering by mean, optimal for squared error), as in the original fANOVA's
 * forests; larger choices are split as ordered cells.
 */
#ifndef TUNE_IMPORTANCE_H
#define TUNE_IMPORTANCE_H

#include <stddef.h>
#include <stdint.h>

#include "search/space.h"

/* Choices split as sets up to this many values (a 64-bit mask per box side). */
#define TUNEP_IMPORTANCE_MAX_CATEGORIES 64
/* Pairwise interactions are computed up to this many varying parameters. */
#define TUNEP_IMPORTANCE_MAX_PAIR_PARAMS 32
/* At most this many trees, and this deep (both also bound the work). */
#define TUNEP_IMPORTANCE_MAX_TREES 1024
#define TUNEP_IMPORTANCE_MAX_DEPTH 256

struct tunep_importance_config {
    int n_trees;           /* 64, Optuna's default */
    int max_depth;         /* 64, Optuna's default */
    int min_samples_split; /* 2: a node with fewer observations is a leaf */
    int min_samples_leaf;  /* 1: no split leaves a side with fewer */
    int pairs;             /* 1: the pairwise interactions too */
    uint64_t seed;         /* the bootstrap samples and tie-breaking: same seed, same result */
};

void tunep_importance_config_default(struct tunep_importance_config *c);

struct tunep_importance_pair {
    size_t a, b;       /* parameter indices in the space, a < b */
    double importance; /* mean over the trees of the pure interaction's variance fraction */
    double sd;         /* its standard deviation over the trees */
};

struct tunep_importance {
    size_t n_params;    /* the space's parameters */
    double *importance; /* [n_params] main-effect variance fractions; NaN for constants and
                         * conditional parameters */
    double *sd;         /* [n_params] their standard deviations over the trees; NaN for constants */
    size_t n_pairs;     /* every pair of varying parameters, or 0 (pairs off, or more than
                         * TUNEP_IMPORTANCE_MAX_PAIR_PARAMS varying parameters) */
    struct tunep_importance_pair *pairs; /* in space order of (a, b) */
    size_t n_trials;                     /* the observations used: those with a finite y */
    int n_trees; /* the trees whose prediction varies (the others explain nothing) */
};

/*
 * Fits the forest to configs[i * space->n ...] -> y[i] for the n
 * observations (those with a non-finite y are left out) and fills ret.
 * A forest whose every tree is constant (y constant) gives importances of 0.
 * TUNE_EINVAL for bad arguments or options (named in err), or fewer than 2
 * observations with a finite y; TUNE_ENOMEM. ret is left empty on failure;
 * release it with tunep_importance_done().
 */
tune_status tunep_importance_fanova(const tune_space *space, const struct tunep_value *configs,
                                    const double *y, size_t n,
                                    const struct tunep_importance_config *c,
                                    struct tunep_importance *ret, tune_error *err);

void tunep_importance_done(struct tunep_importance *imp);

#endif /* TUNE_IMPORTANCE_H */
