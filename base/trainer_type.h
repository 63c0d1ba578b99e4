/*
 * trainer_type.h - what a trainer is to the rest of tune: a table of
 * operations (as a ggml backend or a curl protocol handler).
 *
 * The config layer reads the "trainer" section with the row's option table
 * and check; the engine creates the trainer's state, prepares it before the
 * first trial and runs `objective` for every attempt; nothing else in tune
 * knows any trainer by name. Trainers include only tune.h and base/, and
 * reach the engine only through tune.h's trial API.
 *
 * The rows are registered in one place (trainers/registry.c).
 */
#ifndef TUNE_TRAINER_TYPE_H
#define TUNE_TRAINER_TYPE_H

#include <stddef.h>

#include "base/base.h"
#include "base/options.h"

/* What the config knows when a trainer checks its section against the rest. */
struct tunep_trainer_check_ctx {
    const char *const *param_names; /* the search space's parameters (flattened names) */
    size_t n_params;
    /* The smallest and largest value parameter name can take when all are numbers: 0, or
     * -1 (no such parameter, or not only numbers). NULL: not known. */
    int (*param_range)(const struct tunep_trainer_check_ctx *ctx, const char *name, double *ret_lo,
                       double *ret_hi);
    const void *space;     /* for param_range */
    const char *source;    /* the config's name, for warnings; NULL: unknown */
    int isolation_process; /* "isolation": "process": each trial in a forked child */
};

/* Where the trainer runs: given to prepare() before the first trial. */
struct tunep_trainer_env {
    int concurrency;      /* trials that may run at once in this process (>= 1) */
    int local_rank;       /* an MPI worker rank's place among the ranks of its node; -1 when
                           * this process is not an MPI worker */
    int resources_cpu;    /* "resources_per_trial": {"cpu": n}; 0 when not given */
    double resources_gpu; /* "resources_per_trial": {"gpu": share of one GPU}; -1 when not given */
    const char *source;   /* the config's file name, for positioned errors */
};

/* What one trial of a trainer takes, as the trainer resolves its settings. */
struct tunep_trial_resources {
    int cpu_threads;  /* threads one trial computes with */
    double gpu_share; /* share of one GPU a trial holds; 0: none */
};

struct tunep_trainer_type {
    const char *name;                   /* the section's "type" */
    const struct tunep_option *options; /* the section's other keys */
    size_t config_size;                 /* of the struct the options fill */
    /*
     * Rules across keys and against the rest of the config, run after the
     * section is read (NULL: none). May complete the config (derived
     * defaults). Failures go in e, with a path relative to the section.
     */
    tune_status (*check)(void *cfg, const struct tunep_trainer_check_ctx *ctx,
                         struct tunep_opt_error *e);
    /*
     * The trainer's state for one study, made when the study is created
     * (cfg is borrowed for the state's lifetime; source names the config
     * for positioned errors). NULL: the state is the config itself.
     */
    tune_status (*create)(const void *cfg, const char *source, void **ret_state, tune_error *err);
    /* Loads what the trials share, before the first one (NULL: nothing to do). */
    tune_status (*prepare)(void *state, const struct tunep_trainer_env *env, tune_error *err);
    /* Runs one attempt of a trial; user_data is the state. */
    tune_objective_fn objective;
    /* What one trial takes under env, after prepare() (NULL: one thread, no GPU). */
    void (*resources)(const void *state, const struct tunep_trainer_env *env,
                      struct tunep_trial_resources *ret);
    /* Frees the state (NULL is fine). NULL: nothing to free. */
    void (*free)(void *state);
    /*
     * The most reports (training iterations) one trial makes under cfg, a
     * config that passed check(); 0 when that is not known before the data is
     * read. `tune validate` warns about a scheduler that waits for more.
     * NULL: not known.
     */
    int64_t (*max_iterations)(const void *cfg);
    /*
     * Device memory of GPU `device` (its CUDA index in this process), checked
     * before a trial is placed on it; NULL: not checked (a trainer whose
     * trials run in programs of their own, or that never touches CUDA in
     * this process).
     */
    tune_status (*gpu_mem)(int device, size_t *ret_free, size_t *ret_total, tune_error *err);
    /*
     * Device memory one trial holds on its GPU, in bytes, after prepare(): the
     * engine reserves it in the GPU pool, so trials that share a GPU and start
     * together never take more than was free. It must cover every trial the
     * search space can make (the largest batch and sequence length). 0, or
     * NULL: the pool's default.
     */
    size_t (*gpu_mem_need)(const void *state);
    /*
     * 1 when GPU `device` (its CUDA index in this process) can no longer run
     * trials in this process (a sticky CUDA error poisoned its context); the
     * engine then places no more trials there. NULL: never.
     */
    int (*gpu_broken)(int device);
    unsigned can_checkpoint : 1; /* saves checkpoints, so PBT can copy them */
    /* The "resources_per_trial" keys it honours: any other is an error at validate. The engine
     * places trials on GPUs (tune_trial_gpu()) for every trainer with uses_gpu. */
    unsigned uses_cpu : 1;
    unsigned uses_gpu : 1;
    unsigned multi_gpu : 1;   /* a trial may take several whole GPUs ("gpu": 2) */
    unsigned own_process : 1; /* runs each attempt as a program of its own, so
                               * "isolation": "process" would add nothing but risk */
};

#endif /* TUNE_TRAINER_TYPE_H */
