/*
 * config.h - the parsed form of a study's JSON config (configs/README.md).
 */
#ifndef TUNE_CONFIG_H
#define TUNE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "base/options.h"
#include "base/trainer_type.h"
#include "schedulers/scheduler.h"
#include "search/searcher.h"
#include "search/space.h"

#define TUNEP_MAX_SAMPLES      100000000LL  /* num_samples; the grid multiplies it */
#define TUNEP_MAX_TRIALS       1000000000LL /* grid points x num_samples */
#define TUNEP_MAX_CONCURRENT   4096
#define TUNEP_MAX_CONFIG_BYTES (16u << 20)

/* Objectives a study may have: "metric" as a list (hypervolume's cost grows as n^(m-1)). */
#define TUNEP_MAX_OBJECTIVES 16

enum tunep_search_algo {
    TUNEP_SEARCH_RANDOM = 0, /* Ray's BasicVariantGenerator: grid axes expanded, the rest drawn */
    TUNEP_SEARCH_GRID = 1,   /* the same, with every choice expanded as a grid axis too */
    TUNEP_SEARCH_TPE = 2,    /* search/tpe.c: one or several objectives (search/motpe.c) */
    TUNEP_SEARCH_GP = 3,     /* search/gp.c */
    TUNEP_SEARCH_SOBOL = 4,  /* search/qmc.c */
    TUNEP_SEARCH_LHS = 5,    /* search/qmc.c */
    TUNEP_SEARCH_BOHB = 6,   /* TPE per budget with the hyperband scheduler (search/bohb.c) */
    TUNEP_SEARCH_NSGA2 = 7,  /* search/nsga2.c: one or several objectives */
};

struct tunep_threshold {
    char *metric;
    double value;
};

struct tunep_stop_config {
    int64_t training_iteration; /* 0: none */
    double time_budget_s;       /* 0: none */
    size_t n_thresholds;
    struct tunep_threshold *thresholds;
};

/* How "gpus" was given (the engine's enum tunep_gpus_kind has the same values). */
#define TUNEP_CONFIG_GPUS_NONE  0
#define TUNEP_CONFIG_GPUS_COUNT 1
#define TUNEP_CONFIG_GPUS_LIST  2
#define TUNEP_MAX_GPUS          256 /* GPUs a machine may declare */
#define TUNEP_MAX_TRIAL_GPUS    16  /* whole GPUs one trial may take */

struct tunep_config {
    char *name;
    char *metric; /* the main objective: the first of a list */
    int mode_max; /* 1 for "max", 0 for "min" */
    /* Every objective in order, the main one first (a single metric: n_objectives 1). */
    size_t n_objectives;
    char *objectives[TUNEP_MAX_OBJECTIVES]; /* owned */
    int objectives_max[TUNEP_MAX_OBJECTIVES];
    int64_t num_samples;
    uint64_t seed;
    int seed_given;
    int max_concurrent;
    int max_failures;  /* -1: retry forever */
    int fail_fast;     /* the first trial that ends in ERROR stops the sweep */
    tune_space *space; /* owned */
    enum tunep_search_algo search;
    struct tunep_tpe_config tpe; /* tpe and bohb */
    struct tunep_gp_config gp;
    struct tunep_qmc_config qmc; /* sobol and lhs */
    struct tunep_nsga2_config nsga2;
    int64_t checkpoint_frequency; /* ask for a checkpoint every n iterations; 0: never */
    struct tunep_scheduler_config scheduler;
    /* The "trainer" section: its row, found by "type" among the types the
     * parser was given, and its settings, read with the row's options. */
    const struct tunep_trainer_type *trainer; /* NULL: none, or not looked up */
    void *trainer_cfg;                        /* trainer->config_size bytes, owned */
    char *trainer_name;                       /* the section's "type"; NULL without a section */
    int resources_cpu;                        /* resources_per_trial.cpu; 0: not given */
    double resources_gpu; /* resources_per_trial.gpu: a share of one GPU (0 to 1) or whole
                           * GPUs (an integer up to TUNEP_MAX_TRIAL_GPUS); 0: not given */
    int gpus_kind;        /* "gpus": TUNEP_CONFIG_GPUS_*; the engine resolves them */
    int gpus_n;           /* the count, or the number of ids */
    int *gpus_ids;        /* LIST: gpus_n device ids, owned */
    struct tunep_stop_config stop;
    char *storage;          /* experiment folder or ":memory:" */
    int isolation_process;  /* "isolation": "process": each trial in a child process */
    double trial_timeout_s; /* 0: none */
    char *json;             /* the config as given, compact, for the store */
};

/*
 * Parses and validates a config document. When `space` is not NULL the config
 * must not have a param_space and the space is taken (even on failure).
 * `source` names the document in errors. `trainers` (NULL-terminated) are
 * the trainer types the "trainer" section may name; NULL reads only the
 * section's "type" (readers of a stored experiment, whose trainer files may
 * be gone). On failure out is left empty.
 */
tune_status tunep_config_parse(const char *text, size_t len, const char *source, tune_space *space,
                               const struct tunep_trainer_type *const *trainers,
                               struct tunep_config *out, tune_error *err);
void tunep_config_done(struct tunep_config *c);
/*
 * The config of tune_study_new(): o's values go through the same defaults
 * and checks as a document's keys (study_options.c); c->json is their JSON
 * object. `space` is taken, even on failure; NULL for none. Errors name the
 * key, with source "<options>" and no position.
 */
tune_status tunep_config_from_options(const tune_options *o, tune_space *space,
                                      struct tunep_config *out, tune_error *err);

/*
 * The error for an unknown key of the object at path: at the key, with a
 * "did you mean" hint when a known key is within edit distance 2, otherwise
 * the list of known keys. Returns TUNE_ECONFIG.
 */
tune_status tunep_config_unknown_key(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                     const char *key, const char *const *known, size_t n_known);

/* "random", "grid", "tpe", .... Static strings. */
const char *tunep_search_algo_name(enum tunep_search_algo a);
/* Appends the search algorithm and every option it takes, with its value:
 * "tpe: n_startup_trials 10, n_ei_candidates 24, ..." (the report's summary). */
void tunep_config_search_summary(const struct tunep_config *c, struct tunep_buf *out);

/* Reads a config file (limit TUNEP_MAX_CONFIG_BYTES) into a NUL-terminated buffer; a folder
 * is TUNE_ECONFIG. Caller frees with tunep_free. */
tune_status tunep_config_read_file(const char *path, char **ret_text, size_t *ret_len,
                                   tune_error *err);

/*
 * The JSON object of a trial's configuration, nested back along the '/' of
 * flattened names; absent (conditional) parameters are left out. Caller frees
 * with tunep_free.
 */
char *tunep_values_json(size_t n, const char *const *names, const struct tunep_value *values);

#endif /* TUNE_CONFIG_H */
