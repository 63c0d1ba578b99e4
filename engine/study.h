/*
 * study.h - the study and trial structures shared by study.c (lifecycle and
 * the worker pool), trial.c (what an objective calls) and progress.c.
 *
 * Concurrency: one mutex per study guards everything below it; objectives
 * run outside it. Each report takes the lock once to write the store,
 * consult the scheduler and answer, so there is no controller thread to hand
 * reports to and no context switch per report.
 */
#ifndef TUNE_STUDY_H
#define TUNE_STUDY_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "config/config.h"
#include "engine/gpu_pool.h"
#include "engine/placement.h"
#include "schedulers/scheduler.h"
#include "search/searcher.h"
#include "search/space.h"
#include "store/store.h"

/* Why a trial is ending, decided under the lock by reports or by the study. */
enum tunep_end_reason {
    TUNEP_END_NONE = 0,
    TUNEP_END_TERMINATED,  /* max_t or stop.training_iteration reached */
    TUNEP_END_STOPPED,     /* scheduler, metric threshold or time budget */
    TUNEP_END_INTERRUPTED, /* tune_study_request_stop(): back to PENDING */
    TUNEP_END_PAUSED,      /* a pausing scheduler: PAUSED until it resumes the trial */
    TUNEP_END_EXPLOIT,     /* PBT: restart from a better trial's checkpoint and explored values */
};

/* The study's record of one trial (all attempts). */
struct tunep_trial_rec {
    int64_t id;
    tune_trial_status status;
    int attempt;         /* attempts started so far (1-based once started) */
    int64_t iteration;   /* last training_iteration of the current attempt */
    double time_total_s; /* as reported: time_offset + the attempt's own time */
    double time_offset;  /* a restored checkpoint's time_total_s less the attempt's time at
                          * the restore (0 until the attempt restores one) */
    double start_wall;
    double last_t; /* the scheduler's time_attr in the last report */
    int has_last_t;
    struct tunep_value *values; /* one per parameter; strings borrowed from the space */
    double *last;               /* last value per interned metric id; NaN when never reported */
    size_t n_last;
    char *error;       /* last failure, owned */
    int own_strings;   /* string values are owned (loaded from a store), not the space's */
    int failures_base; /* attempts before a resume that retries ERROR trials */
    /* Pausing and checkpoints (checkpoint.c). */
    double time_base;   /* time_total_s of the attempt's segments before its last pause */
    int64_t ff_until;   /* a resumed objective replays reports up to this iteration:
                         * they are answered but not recorded again ("fast-forward") */
    int keep_iteration; /* PBT restart: loading the donor's checkpoint keeps the count */
    int want_ckpt;      /* tune_trial_checkpoint_wanted() */
    int has_ckpt;       /* a checkpoint exists (in ckpt, or in the trial's folder) */
    int64_t ckpt_iter;  /* the iteration it was saved at */
    double ckpt_t;      /* the scheduler's time_attr value then (PBT's interval) */
    double ckpt_time;   /* the trial's time_total_s then; NaN when not recorded */
    void *ckpt;         /* in-memory studies: the bytes; else NULL */
    size_t ckpt_size;
    int n_exploits; /* PBT restarts so far */
};

/*
 * A tune_trial handle's life: OPEN while its objective runs; CLOSED once the
 * objective returned (a report through a kept pointer is refused); ABANDONED
 * when a thread-mode objective overran trial_timeout_s and the run went on
 * without it. A handle is never reused for another attempt: closed ones are
 * freed with the study, abandoned ones never (their thread may still use them).
 */
enum tunep_handle_state { TUNEP_HANDLE_OPEN = 0, TUNEP_HANDLE_CLOSED, TUNEP_HANDLE_ABANDONED };

struct tune_trial {
    struct tune_study *study;
    struct tunep_trial_rec *rec;
    double t0; /* monotonic time the attempt started */
    /* Since-restore counters of this run of the objective (Ray's *_since_restore):
     * the monotonic time of its last checkpoint load (0: t0), of its last report
     * (0: none), and the reports since the restore. */
    double t_restore, t_last;
    int64_t iters_since_restore;
    int64_t pid;   /* the process running the objective when not this one (isolation) */
    int host_done; /* where it runs is in the store */
    enum tunep_end_reason end;
    int fail_now;            /* timed out or reported a non-finite metric: the attempt fails */
    int ipc_req, ipc_resp;   /* in an isolated child: pipes to the controller; else -1 */
    char *dir;               /* the trial's folder (trial_dir.c), absolute; NULL if none */
    int dir_tried;           /* tune_trial_dir() made (or failed to make) it this attempt */
    int64_t donor;           /* TUNEP_END_EXPLOIT: the trial whose checkpoint it takes */
    int remote_tag;          /* on an MPI worker rank: the slot's tag; else 0 (mpi.c) */
    uint64_t remote_seed;    /* there: the controller's study seed */
    atomic_int state;        /* enum tunep_handle_state; zero (OPEN) for handles on a stack */
    atomic_int busy;         /* reports inside tune_trial_report() through this handle */
    struct tune_trial *next; /* in the study's list of running or of closed handles */
    int worker;              /* the index of the worker thread that runs it */
    int in_block;            /* carved from the study's handle blocks (study.c), not freed alone */
    /* The GPUs this attempt holds (placement): indexes into study->gpus, and
     * their ids as a program's CUDA_VISIBLE_DEVICES ("" when none). */
    int n_gpus;
    int gpu[TUNEP_MAX_TRIAL_GPUS];
    char gpu_ids[TUNEP_MAX_TRIAL_GPUS * TUNEP_GPU_ID_MAX];
    char error[512];
};

/*
 * Runs the objective in a child process (isolate.c): reports travel over a
 * pipe to this thread, which answers them through the normal report path; a
 * crash or a timeout costs only this attempt. Lock not held.
 */
tune_status tunep_run_isolated(struct tune_study *s, struct tune_trial *t);
/* MPI (mpi.c): runs trial t on worker slot `slot` (rank 1 + slot / per_rank), answering
 * its reports; on a worker rank, sends a report to rank 0; ends the worker ranks. */
tune_status tunep_run_remote(struct tune_study *s, struct tune_trial *t, int slot);
tune_status tunep_mpi_report(struct tune_trial *t, size_t n, const char *const *names,
                             const double *values);
void tunep_mpi_quit_workers(struct tune_study *s);
/* A report as isolated children and MPI ranks send it (isolate.c):
 * 'R' u32 n { u16 len, name bytes, f64 value } * n, native byte order. */
void tunep_report_msg_put(struct tunep_buf *b, size_t n, const char *const *names,
                          const double *values);
/* In the child: sends a report to the controller and returns its answer. */
tune_status tunep_ipc_report(struct tune_trial *t, size_t n, const char *const *names,
                             const double *values);

struct tune_study {
    struct tunep_config cfg;
    tune_objective_fn fn;
    void *fn_data;
    void *trainer_state;      /* cfg.trainer's state (its create()), while the study lives */
    int readonly;             /* opened from an experiment folder */
    unsigned resume_flags;    /* TUNE_RESUME_* */
    const char **param_names; /* n_params names: into the space, or owned when readonly */
    size_t n_params;
    int has_run;

    pthread_mutex_t lock;
    struct tunep_store *store;
    struct tunep_store_lock *store_lock; /* held from open_storage() to the end of the run */
    struct tunep_scheduler *sched;
    struct tunep_searcher *searcher; /* NULL for random and grid search */
    int mpi_size;                    /* > 1: trials run on MPI ranks 1 .. mpi_size-1 (mpi.c) */
    int mpi_per_rank;                /* trials at once per worker rank */
    pthread_cond_t work_cond;        /* a worker waits here when the scheduler says WAIT */
    int have_work_cond;
    int64_t *restartq; /* PBT: exploited trials waiting to restart (FIFO) */
    int64_t n_restart, head_restart, cap_restart;
    double sign;          /* +1 for mode max, -1 for min: scores are sign * metric */
    int64_t total_trials; /* grid points x num_samples */
    int expand_choices;

    struct tunep_trial_rec **trials; /* by id, created in order */
    int64_t n_trials, cap_trials;
    int64_t *retry; /* ids waiting for another attempt (FIFO) */
    int64_t n_retry, head_retry, cap_retry;
    int64_t counts[TUNE_TRIAL_STATUS_COUNT];

    char **metric_names; /* interned, in order of first report */
    size_t n_metrics, cap_metrics;
    uint32_t *metric_slots; /* open-addressing hash of metric_names: id + 1, 0 when empty */
    size_t n_metric_slots;  /* a power of two, at least twice n_metrics */
    long main_metric;       /* interned id of cfg.metric, -1 until reported */

    atomic_int stop_requested;
    int fail_fast_hit; /* cfg.fail_fast and fail_fast_trial ended in ERROR: the sweep stops */
    int64_t fail_fast_trial;
    int budget_exhausted;
    int fatal; /* the store failed: stop everything */
    pthread_cond_t flusher_cond;
    int flusher_quit;
    /*
     * Group commit of reports: each report written under `lock` takes a ticket
     * (write_seq); before answering, the objective's thread makes sure a
     * commit covered its ticket (durable_seq). Threads queue on commit_lock,
     * not on `lock`, and one COMMIT serves every report written before it.
     * Lock order: commit_lock, then lock.
     */
    pthread_mutex_t commit_lock;
    uint64_t write_seq, durable_seq; /* guarded by lock */
    tune_error fatal_err;
    double t_start; /* monotonic */
    double wall_start;
    int64_t n_reports;
    int64_t n_warned_nan;

    /*
     * The worker threads (study.c). Handles of attempts whose objective runs
     * are in `live`, those that ended in `closed`. In thread mode the thread
     * calling tune_study_run() watches `live` for trials past trial_timeout_s:
     * such a trial fails, its thread is detached and left behind (leaked until
     * the process exits) and a new worker takes its place.
     */
    struct tune_trial *live, *closed;
    struct tune_trial *abandoned;             /* never freed: their threads may still hold them */
    struct tunep_handle_block *handle_blocks; /* where trial handles come from */
    pthread_t *workers;
    unsigned char *worker_left; /* 1: abandoned with its trial, detached, never joined */
    int n_workers, cap_workers;
    int workers_running;      /* worker threads not yet finished or abandoned */
    pthread_cond_t pool_cond; /* signalled when a worker finishes */
    int have_pool_cond;
    int stopped_now; /* tune_study_stop_now(): nothing more reaches the store */

    /*
     * GPU placement: when trials take GPUs (resources_per_trial.gpu, or what
     * the trainer's resources() says), each worker reserves its trial's share
     * from gpu_pool before the attempt starts and gives it back when it ends.
     * gpus: the devices (resolved when the study is made, or at run); NULL
     * when trials take none.
     */
    struct tunep_gpu_set *gpus;
    struct tunep_gpu_pool *gpu_pool; /* during a run that places trials; else NULL */
    double gpu_share;                /* a trial's share of one GPU (0, 1]; 0: whole GPUs */
    int gpu_whole;                   /* whole GPUs a trial takes when gpu_share is 0 */
    size_t gpu_mem_need;             /* device memory a shared-GPU trial reserves; 0: the
                                      * pool's default */

    /* A study driven by tune_study_ask() and tune_study_tell() (ask_tell.c); NULL otherwise. */
    struct tunep_ask *ask;
    /*
     * Ask and tell shared among processes (tune_study_set_ask_shared(), or an
     * experiment whose driver is "ask"): asked trials stay RUNNING in the
     * store until some process tells them; resume and tune_study_finish()
     * keep them open instead of putting them back to PENDING.
     */
    int ask_shared;
    double lock_wait_s; /* how long opening waits for the folder's lock */
};

/* Keeps value as the record's last value of metric name. 0, or -1 on OOM. Lock held. */
int tunep_trial_rec_set_last(struct tune_study *s, struct tunep_trial_rec *r, const char *name,
                             double value);
/* A record (owning its strings) made from a stored trial; NULL on OOM. s->n_params is set. */
struct tunep_trial_rec *tunep_trial_rec_from_store(struct tune_study *s,
                                                   const struct tunep_stored_trial *t);
/* Interns a metric name; returns its id or -1 on OOM. Lock held. */
long tunep_study_metric_id(struct tune_study *s, const char *name);
/* The id of the trial with the best last main-metric value, or -1. Lock held. */
int64_t tunep_study_best_trial(const struct tune_study *s);
/* Sets a trial's status and keeps the counts. Lock held. */
void tunep_study_set_status(struct tune_study *s, struct tunep_trial_rec *r, tune_trial_status st);
/* Frees a trial record, and its string values when it owns them. */
void tunep_trial_rec_free(struct tunep_trial_rec *r, size_t n_params);
/*
 * Creates a study from a config document (tune_study_new_from_json and its
 * kin), or from options when they are given: `trainers` are the trainer types its "trainer" section
 * may name (NULL-terminated; the registry's, handed down by the layer above). The space, when
 * given, is taken even on failure.
 */
tune_status tunep_study_new_from_config(const char *text, size_t len, const char *source,
                                        const tune_options *options, tune_space *space,
                                        const struct tunep_trainer_type *const *trainers,
                                        tune_study **ret_study, tune_error *err);
/* tune_study_resume() with the trainer types to rebuild the stored config with. */
tune_status tunep_study_resume(const char *dir, unsigned flags,
                               const struct tunep_trainer_type *const *trainers,
                               tune_study **ret_study, tune_error *err);
/*
 * The trainer's prepare(), once per process before the first trial, with
 * where this process runs trials (concurrency, MPI local rank); its errors
 * stop the run before any trial.
 */
tune_status tunep_study_prepare_trainer(struct tune_study *s, int concurrency, int local_rank,
                                        tune_error *err);

/* Continues the experiment whose store s->store is open, with its experiment row (resume.c).
 * Scheduler created, lock not needed. */
tune_status tunep_study_resume_store(struct tune_study *s,
                                     const struct tunep_store_experiment_row *row, tune_error *err);
/* Creates s->searcher for the config's search algorithm (NULL for random and grid; searchers.c). */
tune_status tunep_study_searcher_new(struct tune_study *s, tune_error *err);
/*
 * Tells the searcher that rec ended TERMINATED or STOPPED: on_complete()
 * with score (the main metric's), or, for a searcher of several objectives,
 * on_complete_values() with every objective's last value. Lock held.
 */
tune_status tunep_study_searcher_complete(struct tune_study *s, const struct tunep_trial_rec *rec,
                                          double score);

/* Checkpoints (checkpoint.c), lock held: a copy of the donor's checkpoint for
 * a PBT restart, and forgetting a trial's. */
tune_status tunep_checkpoint_copy(struct tune_study *s, struct tunep_trial_rec *dst,
                                  const struct tunep_trial_rec *src, tune_error *err);
void tunep_checkpoint_forget(struct tunep_trial_rec *r);
/* Looks for a trial's checkpoint file after `tune resume`; sets has_ckpt/ckpt_iter. */
void tunep_checkpoint_probe(struct tune_study *s, struct tunep_trial_rec *r);

/*
 * The typed reads of a parameter value `name` shared by tune_trial_get_* and
 * tune_result_get_* (trial.c): a double from any number or boolean, an
 * integer from an integer, a boolean or an integral float, a string or a
 * boolean only as itself. TUNE_ETYPE otherwise; *ret is then untouched.
 */
tune_status tunep_value_get_double(const struct tunep_value *v, const char *name, double *ret,
                                   tune_error *err);
tune_status tunep_value_get_int(const struct tunep_value *v, const char *name, int64_t *ret,
                                tune_error *err);
tune_status tunep_value_get_string(const struct tunep_value *v, const char *name, const char **ret,
                                   tune_error *err);
tune_status tunep_value_get_bool(const struct tunep_value *v, const char *name, int *ret,
                                 tune_error *err);

/*
 * The worker path, shared by study.c's workers and ask_tell.c, so that both
 * drive the store, the searcher and the scheduler alike.
 * tunep_study_open_run(): what a run sets up before its first trial (the
 * scheduler, the searcher, the store with its folder lock, the clocks).
 * tunep_study_next_trial(): the next trial to run, RUNNING on return, or
 * NULL; with ret_wait non-NULL it never waits: where a worker would wait for
 * a running trial to report or end it sets *ret_wait to 1 and returns NULL.
 * tunep_study_finish_trial(): ends t's attempt, its objective having
 * returned ret (the status follows t->end, t->fail_now and ret).
 * tunep_study_set_fatal(): records a store failure that stops the study.
 * All but the first with the lock held.
 */
tune_status tunep_study_open_run(struct tune_study *s, tune_error *err);
struct tunep_trial_rec *tunep_study_next_trial(struct tune_study *s, gsl_rng *r, int *ret_wait);
void tunep_study_finish_trial(struct tune_study *s, struct tune_trial *t, tune_status ret);
/*
 * A zeroed trial handle, freed with the study (never alone: a kept pointer to
 * it must keep finding it CLOSED), or NULL on OOM. Lock held.
 */
struct tune_trial *tunep_study_new_handle(struct tune_study *s);
/* Gives back the handle tunep_study_new_handle() just returned, never handed out. Lock held. */
void tunep_study_drop_handle(struct tune_study *s, struct tune_trial *t);
void tunep_study_set_fatal(struct tune_study *s, const tune_error *e);
/* Finishes a study driven by ask and tell as tune_study_finish() does, errors
 * ignored, and frees what ask_tell.c keeps; nothing for other studies. */
void tunep_ask_done(struct tune_study *s);

/* Writes results.csv and progress.csv into the experiment folder (nothing for ":memory:"). */
tune_status tunep_study_export_all(struct tune_study *s, tune_error *err);

#endif /* TUNE_STUDY_H */
