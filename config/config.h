/*
 * config.h - the parsed form of a study's JSON config (configs/README.md).
 */
#ifndef TUNE_CONFIG_H
#define TUNE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "models/device/device.h"
#include "schedulers/scheduler.h"
#include "search/searcher.h"
#include "search/space.h"

#define TUNEP_MAX_SAMPLES 100000000LL  /* num_samples; the grid multiplies it */
#define TUNEP_MAX_TRIALS 1000000000LL  /* grid points x num_samples */
#define TUNEP_MAX_CONCURRENT 4096
#define TUNEP_MAX_METRIC_NAME 128
#define TUNEP_MAX_CONFIG_BYTES (16u << 20)

enum tunep_search_algo {
    TUNEP_SEARCH_RANDOM = 0, /* Ray's BasicVariantGenerator: grid axes expanded, the rest drawn */
    TUNEP_SEARCH_GRID = 1,   /* the same, with every choice expanded as a grid axis too */
    TUNEP_SEARCH_TPE = 2,    /* search/tpe.c */
    TUNEP_SEARCH_GP = 3,     /* search/gp.c */
    TUNEP_SEARCH_SOBOL = 4,  /* search/qmc.c */
    TUNEP_SEARCH_LHS = 5,    /* search/qmc.c */
    TUNEP_SEARCH_BOHB = 6,   /* TPE per budget with the hyperband scheduler (search/bohb.c) */
};

enum tunep_trainer_type {
    TUNEP_TRAINER_NONE = 0,  /* the C API sets an objective */
    TUNEP_TRAINER_SYNTHETIC = 1,
    TUNEP_TRAINER_BERT = 2,
    TUNEP_TRAINER_COMMAND = 3, /* an external program per attempt (trainers/command.c) */
    TUNEP_TRAINER_PLUGIN = 4,  /* a tune_objective_fn from a shared library (trainers/plugin.c) */
};

/* The BERT fine-tuning trainer's fixed settings (per-trial ones come from the trial's config). */
struct tunep_bert_trainer_config {
    char *train, *dev, *vocab; /* TSV files and vocab.txt */
    char *checkpoint;          /* a Hugging Face BERT folder, or NULL for random initialisation */
    int layers, hidden, heads, intermediate, max_position; /* the model without a checkpoint */
    int epochs;                /* 3 */
    int64_t eval_every;        /* steps between evaluations; 0: once per epoch */
    int64_t max_train_examples, max_eval_examples; /* 0: all */
    int max_seq_len;           /* 128 */
    int eval_batch_size;       /* 128 */
    int threads;               /* per trial; 0: resources_per_trial.cpu, else the cores divided
                                * among concurrent trials */
    int resources_cpu;         /* resources_per_trial.cpu; 0: not given */
    double resources_gpu;      /* resources_per_trial.gpu: the share of one GPU a trial takes;
                                * 0: none (the CPU); -1: not given (a whole GPU when the
                                * device is a GPU) */
    int lowercase;             /* 1 */
    struct tunep_device device; /* "device": cpu (the default), auto, cuda, cuda:N */
    int tf32;                  /* "precision": "tf32" lets cuBLAS round to TF32 on CUDA; 0: fp32 */
};

struct tunep_synthetic_config {
    int64_t iterations; /* reports per trial unless stopped earlier; 100 */
    double sleep_s;     /* per iteration; 0 */
    double fail_prob;   /* per iteration; 0 */
    double noise;       /* sd of the Gaussian noise on val_accuracy; 0.005 */
    int report_true;    /* also report the noise-free "true_accuracy"; 0 */
    int report_loss;    /* also report "val_loss" = 1 - val_accuracy; 0 */
    char *answer_log;   /* append "trial attempt iteration" per answered report (crash tests) */
};

/* "type": "command": argv and env values are templates with {name} placeholders. */
struct tunep_command_config {
    char **argv;              /* argc templates */
    size_t argc;
    char **env_names, **env_values; /* n_env variables added to tune's environment */
    size_t n_env;
    char *cwd;                /* the program's working folder; NULL: tune's */
    double kill_grace_s;      /* SIGTERM -> SIGKILL of a stopped trial's process group; 10 */
    int report_fd;            /* the report pipe's descriptor number in the program; 3 */
};

/* "type": "plugin": a tune_objective_fn loaded with dlopen. */
struct tunep_plugin_config {
    char *library, *symbol;
    char *init_symbol, *fini_symbol; /* NULL: none */
    char *data;                      /* "data" as compact JSON text; NULL when absent */
    int line[4], column[4];          /* of library, symbol, init_symbol, fini_symbol, for errors */
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

struct tunep_config {
    char *name;
    char *metric;
    int mode_max;                 /* 1 for "max", 0 for "min" */
    int64_t num_samples;
    uint64_t seed;
    int seed_given;
    int max_concurrent;
    int max_failures;             /* -1: retry forever */
    tune_space *space;            /* owned */
    enum tunep_search_algo search;
    struct tunep_tpe_config tpe;  /* tpe and bohb */
    struct tunep_gp_config gp;
    struct tunep_qmc_config qmc;  /* sobol and lhs */
    int64_t checkpoint_frequency; /* ask for a checkpoint every n iterations; 0: never */
    struct tunep_scheduler_config scheduler;
    enum tunep_trainer_type trainer;
    struct tunep_synthetic_config synthetic;
    struct tunep_bert_trainer_config bert;
    struct tunep_command_config command;
    struct tunep_plugin_config plugin;
    struct tunep_stop_config stop;
    char *storage;                /* experiment folder or ":memory:" */
    int isolation_process;        /* "isolation": "process": each trial in a child process */
    double trial_timeout_s;       /* 0: none */
    char *json;                   /* the config as given, compact, for the store */
};

/*
 * Parses and validates a config document. When `space` is not NULL the config
 * must not have a param_space and the space is taken (even on failure).
 * `source` names the document in errors. On failure out is left empty.
 */
tune_status tunep_config_parse(const char *text, size_t len, const char *source, tune_space *space,
                               struct tunep_config *out, tune_error *err);
void tunep_config_done(struct tunep_config *c);

/*
 * The error for an unknown key of the object at path: at the key, with a
 * "did you mean" hint when a known key is within edit distance 2, otherwise
 * the list of known keys. Returns TUNE_ECONFIG.
 */
tune_status tunep_config_unknown_key(const struct tunep_cfgctx *ctx, struct tunep_cfgpath *path,
                                     const char *key, const char *const *known, size_t n_known);

/* Levenshtein distance of two names, for "did you mean" hints (64 when either is over 63 bytes). */
size_t tunep_edit_distance(const char *a, const char *b);

/* "random", "grid", "tpe", ...; "synthetic", "none", .... Static strings. */
const char *tunep_search_algo_name(enum tunep_search_algo a);
const char *tunep_trainer_name(enum tunep_trainer_type t);

/* Reads a config file (limit TUNEP_MAX_CONFIG_BYTES) into a NUL-terminated buffer; a folder
 * is TUNE_ECONFIG. Caller frees with tunep_free. */
tune_status tunep_config_read_file(const char *path, char **ret_text, size_t *ret_len,
                                   tune_error *err);

/*
 * The JSON object of a trial's configuration, nested back along the '/' of
 * flattened names. Caller frees with tunep_free.
 */
char *tunep_values_json(size_t n, const char *const *names, const struct tunep_value *values);

#endif /* TUNE_CONFIG_H */
