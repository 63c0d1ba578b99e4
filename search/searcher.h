/*
 * searcher.h - where a new trial's configuration comes from.
 *
 * Random and grid search are pure functions of (seed, trial id) and live in
 * space.c. The model-based and quasi-random searchers below keep a history:
 * the controller tells them when a trial starts (its configuration), each
 * intermediate result (for BOHB's per-budget models) and how it ended, and
 * asks them for the next configuration.
 *
 * Conventions shared by every searcher:
 * - Scores are normalised so that larger is better (the controller negates
 *   them for mode "min"). A NaN or missing metric arrives as -INFINITY.
 * - The controller calls every function under the study lock: no locking here.
 * - suggest() gets the trial's own random stream, seeded from the study seed
 *   and the trial id, so a study run one trial at a time is reproducible.
 * - Trials that started but have not completed are "pending": suggestions
 *   made while they run must not collapse onto them (constant liar or an
 *   equivalent, per searcher).
 * - Values written to `out` follow space.h: a double for float distributions,
 *   an int for integer ones, and for choice and constant parameters a copy of
 *   one of param->values (strings borrowed from the space). Every value must
 *   be one that tunep_space_sample() could have produced (in range, rounded
 *   to q, integers within Ray's inclusive/exclusive bounds).
 */
#ifndef TUNE_SEARCHER_H
#define TUNE_SEARCHER_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "base/base.h"
#include "search/space.h"

struct tunep_searcher;

struct tunep_searcher_ops {
    const char *name; /* "tpe", "gp", "sobol", "lhs", "bohb", "nsga2" */
    /* Fills out[space->n] for trial `id` (ids arrive in increasing order). */
    tune_status (*suggest)(struct tunep_searcher *s, int64_t id, gsl_rng *r,
                           struct tunep_value *out, tune_error *err);
    /*
     * Trial `id` runs with these values: after suggest(), and also for trials
     * that a resumed study restores from its store (then without a suggest()).
     * The searcher copies what it needs; strings stay valid for the space's life.
     */
    tune_status (*on_start)(struct tunep_searcher *s, int64_t id, const struct tunep_value *values);
    /* An intermediate result: `t` is the scheduler's time_attr value (the budget). */
    tune_status (*on_result)(struct tunep_searcher *s, int64_t id, double t, double score);
    /*
     * The trial ended. has_score: it ended TERMINATED or STOPPED and `score` is
     * its last score (at budget t); otherwise (ERROR) it is forgotten.
     */
    tune_status (*on_complete)(struct tunep_searcher *s, int64_t id, int has_score, double t,
                               double score);
    void (*free)(struct tunep_searcher *s);
    /*
     * Several objectives (NULL: the searcher takes one, and a study with
     * several refuses it at validation): as on_complete, with scores[m] in
     * the config's "metric" order, each normalised as above. When set, the
     * controller calls it instead of on_complete.
     */
    tune_status (*on_complete_values)(struct tunep_searcher *s, int64_t id, int has_scores,
                                      const double *scores, size_t m);
};

/* Every searcher starts with this header (implementations embed it first). */
struct tunep_searcher {
    const struct tunep_searcher_ops *ops;
    const tune_space *space; /* borrowed: outlives the searcher */
};

/* TPE, with Optuna's TPESampler defaults (search/tpe.c). */
struct tunep_tpe_config {
    int n_startup_trials;   /* 10: random trials before the model */
    int n_ei_candidates;    /* 24 */
    double prior_weight;    /* 1.0 */
    int consider_endpoints; /* 0 */
    int multivariate;       /* 0: one estimator per parameter; 1: joint kernels */
    int constant_liar;      /* 1: pending trials count as the worst observed score */
    double gamma;           /* 0.1: fraction of good trials, Optuna's default_gamma; at most 25
                               with one objective, no cap with several */
    /*
     * 1: one objective (on_complete). Several (MOTPE, search/motpe.h): scores
     * come through on_complete_values, the good trials are chosen by
     * non-dominated rank and hypervolume subset selection, and weigh their
     * hypervolume contribution in l(x) (uniform_weights_below 0) or 1 each
     * (1, as Optuna 5.0). BOHB takes one objective only.
     */
    size_t n_objectives;
    int uniform_weights_below;
};

/* Gaussian-process BO (search/gp.c): Matern 5/2, MAP hyperparameters, log expected improvement. */
struct tunep_gp_config {
    int n_startup_trials; /* 10: Sobol points before the model */
    int n_candidates;     /* 2000: Sobol points scored by EI, the local searches' starts */
    int refit_every;      /* 1: refit hyperparameters every n observations */
    double xi;            /* 0.0: EI exploration margin */
};

/* Quasi-random designs (search/qmc.c). */
struct tunep_qmc_config {
    int scramble;        /* Sobol: 1: random digital shift from the seed; 0: GSL's raw sequence */
    int64_t lhs_samples; /* LHS: strata per dimension; 0: num_samples */
};

/* NSGA-II (search/nsga2.c), with Optuna's NSGAIISampler defaults. */
struct tunep_nsga2_config {
    int population_size;   /* 50 */
    double mutation_prob;  /* -1: 1 / the number of non-constant parameters */
    double crossover_prob; /* 0.9: uniform crossover, else a copy of one parent */
    double swapping_prob;  /* 0.5: each parameter from the second parent */
};

/*
 * Creates a searcher over `space` (borrowed). Fails with TUNE_ECONFIG when
 * the space has something the searcher cannot handle (a grid_search axis,
 * say), with a message naming the parameter. seed is the study seed.
 */
tune_status tunep_tpe_new(const tune_space *space, const struct tunep_tpe_config *c, uint64_t seed,
                          struct tunep_searcher **ret, tune_error *err);
/* BOHB's model (search/bohb.c): TPE fitted on the largest budget with enough results. */
tune_status tunep_bohb_new(const tune_space *space, const struct tunep_tpe_config *c, uint64_t seed,
                           struct tunep_searcher **ret, tune_error *err);
/* n_objectives: 1, or how many scores on_complete_values() gets. */
tune_status tunep_nsga2_new(const tune_space *space, const struct tunep_nsga2_config *c,
                            size_t n_objectives, struct tunep_searcher **ret, tune_error *err);
/*
 * NSGA-II's crowded comparison, which its binary tournament applies to two
 * random members: of a and b, the one of lower rank, then of larger crowding
 * distance; a on a tie.
 */
size_t tunep_nsga2_crowded_better(const int *rank, const double *crowd, size_t a, size_t b);
tune_status tunep_gp_new(const tune_space *space, const struct tunep_gp_config *c, uint64_t seed,
                         struct tunep_searcher **ret, tune_error *err);
tune_status tunep_sobol_new(const tune_space *space, const struct tunep_qmc_config *c,
                            uint64_t seed, struct tunep_searcher **ret, tune_error *err);
tune_status tunep_lhs_new(const tune_space *space, const struct tunep_qmc_config *c, uint64_t seed,
                          int64_t n_trials, struct tunep_searcher **ret, tune_error *err);

void tunep_tpe_config_default(struct tunep_tpe_config *c);
void tunep_gp_config_default(struct tunep_gp_config *c);
void tunep_qmc_config_default(struct tunep_qmc_config *c);
void tunep_nsga2_config_default(struct tunep_nsga2_config *c);

/*
 * TUNE_ECONFIG naming the first conditional parameter of space, for a
 * searcher that models every parameter in every trial; TUNE_OK when there is
 * none.
 */
tune_status tunep_space_refuse_conditional(const tune_space *space, const char *searcher,
                                           tune_error *err);

static inline void tunep_searcher_free(struct tunep_searcher *s)
{
    if (s)
        s->ops->free(s);
}

/*
 * The unit-cube view of a space shared by Sobol, LHS and GP (search/unit.c):
 * every non-constant parameter is one coordinate in [0, 1). Float ranges map
 * linearly (log ranges in log space), normals through the inverse normal CDF,
 * integer ranges onto equal-width cells per integer, choices onto equal
 * cells per value. tunep_unit_to_value() applies Ray's rounding, so any u
 * gives a value tunep_space_sample() could give; tunep_value_to_unit() maps a
 * value back to the centre of its cell (integers, choices) or its exact
 * position (floats).
 */
size_t tunep_unit_dims(const tune_space *space); /* non-constant parameters */
/* TUNE_ECONFIG for grid axes and conditional parameters (named in err). */
tune_status tunep_unit_check(const tune_space *space, const char *searcher, tune_error *err);
void tunep_unit_to_values(const tune_space *space, const double *u, struct tunep_value *out);
void tunep_values_to_unit(const tune_space *space, const struct tunep_value *v, double *u);
/* The unit point of the value that u stands for, for one non-constant parameter:
 * tunep_value_to_unit(tunep_unit_to_value(u)); snapping twice changes nothing. */
double tunep_unit_snap(const struct tunep_param *p, double u);

#endif /* TUNE_SEARCHER_H */
