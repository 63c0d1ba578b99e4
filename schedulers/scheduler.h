/*
 * scheduler.h - trial schedulers: decide after each report whether a trial goes on.
 *
 * Each scheduler is one file with one row, a struct tunep_scheduler_type
 * (its config options as a table, its rules, its operations), listed in the
 * registry (registry.c); the tunep_scheduler_* calls below dispatch through
 * the row. The controller calls a scheduler under the study lock, so
 * implementations need no locking of their own. Scores are normalised so
 * that larger is better (the controller negates them for mode "min"); a NaN
 * or missing metric arrives as -INFINITY, the worst possible value.
 */
#ifndef TUNE_SCHEDULER_H
#define TUNE_SCHEDULER_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "base/base.h"
#include "base/options.h"
#include "search/space.h"

enum tunep_decision {
    TUNEP_CONTINUE = 0,
    TUNEP_STOP = 1,      /* stop early: the trial ends STOPPED */
    TUNEP_TERMINATE = 2, /* the trial reached the scheduler's end (max_t): it ends TERMINATED */
    TUNEP_PAUSE = 3,     /* the trial stops now and waits PAUSED until
                          * tunep_scheduler_choose() resumes it */
    TUNEP_EXPLOIT = 4,   /* PBT: the trial restarts from a better trial's checkpoint with
                          * explored hyperparameters (tunep_scheduler_exploit_donor(),
                          * tunep_scheduler_explore()); the controller may decline (the donor
                          * has no checkpoint) and let the trial go on */
};

enum tunep_next {
    TUNEP_NEXT_NEW = 0,    /* start a new trial (when any are left) */
    TUNEP_NEXT_RESUME = 1, /* resume paused trial *ret_id */
    TUNEP_NEXT_WAIT = 2,   /* nothing to run until a running trial reports or ends */
};

/* How a scheduler may change one parameter (PBT's hyperparam_mutations entry). */
struct tunep_mutation {
    char *name;   /* owned: the flattened parameter name ("model/lr") */
    size_t param; /* index into the space; SIZE_MAX until the config parser
                   * resolved it (tunep_config_resolve_scheduler()) */
    int is_list;  /* 1: values[]; 0: draw from `dist` */
    size_t n_values;
    struct tunep_value *values; /* owned; strings owned */
    tune_space *dist;           /* is_list 0: an owned one-parameter space to resample from */
};

/* Frees n mutations (names, values, strings, spaces) and the array; NULL is fine. The free
 * function of a struct tunep_mutations (base/options.h) that owns its mutations. */
void tunep_mutations_free(struct tunep_mutation *v, size_t n);

struct tunep_scheduler_type;

/* A parsed "scheduler" section: which scheduler, and its options. */
struct tunep_scheduler_config {
    const struct tunep_scheduler_type *type; /* a registered row (registry.c) */
    /* type->config_size bytes laid out by type->options (NULL when 0): owned once
     * tunep_scheduler_config_init() or the parser filled it. A caller may instead point it
     * at its own struct for tunep_scheduler_new() (the tests do) and then never calls _done. */
    void *cfg;
};

/* Facts about a scheduler that other layers check a config against (the row's flags). */
enum tunep_scheduler_flag {
    /* It chooses configurations itself (PBT's explore): only search "random" goes with it. */
    TUNEP_SCHEDULER_EXPLORES = 1u << 0,
    /* It runs trials in synchronous successive-halving brackets (HyperBand): the budgets
     * that BOHB's searcher fits its models on. */
    TUNEP_SCHEDULER_SYNC_BRACKETS = 1u << 1,
    /* It never compares trials by their metric (FIFO), so a study may have several. */
    TUNEP_SCHEDULER_MULTI_OBJECTIVE = 1u << 2,
};

/*
 * One scheduler: a row of the registry (registry.c). The config layer reads
 * the "scheduler" section with the row's option table, the controller drives
 * an instance through the row's operations, and other layers learn what
 * they need (time attribute, rungs, checkpoint needs) from the row, so that
 * nothing outside the scheduler's own file names it. A NULL operation means
 * the default written next to it. Every operation is called under the
 * study lock (no locking inside); scores are normalised as above.
 */
struct tunep_scheduler_type {
    const char *name;           /* the config's "type": "asha" */
    const char *const *aliases; /* NULL-terminated other names accepted for it (Ray's class
                                 * names, "async_hyperband"), or NULL */
    const char *title;          /* its name in messages: "ASHA" */
    unsigned flags;             /* enum tunep_scheduler_flag */

    /* ---- the config ---- */
    /* The keys besides "type", in the order an unknown key lists them (at most 63 rows);
     * NULL: none. Each row's reader says what is wrong with a value (base/options.h). */
    const struct tunep_option *options;
    size_t config_size; /* of the struct the rows write into (cfg); 0 without options */
    /*
     * Rules across options, once every key is read: given has bit i set when
     * options[i] appeared in the section, so that the message can point at the
     * key the user wrote. Fills e (path relative to the section) and returns
     * its code. NULL: no such rules.
     */
    tune_status (*check)(const void *cfg, uint64_t given, struct tunep_opt_error *e);
    /* The report attribute that measures progress (borrowed from cfg).
     * NULL: "training_iteration". */
    const char *(*time_attr)(const void *cfg);
    /* Progress every trial makes before this scheduler may stop it (ASHA's grace_period), in
     * time_attr units: a stop rule below it would end every trial first. NULL: none. */
    double (*min_t)(const void *cfg);
    /* Progress at which this scheduler ends a trial or a round (ASHA's and HyperBand's max_t),
     * in time_attr units: a trial that never gets there is never judged at it. NULL: none. */
    double (*max_t)(const void *cfg);
    /*
     * A trial restarts from another trial's checkpoint (PBT's exploit), so
     * trials must save checkpoints, in tune's own process, on one machine;
     * the controller asks a trial for a checkpoint whenever its last one is
     * this much time_attr old. NULL: it never copies checkpoints.
     */
    double (*checkpoint_interval)(const void *cfg);
    /* Appends a one-line summary of the options for the report ("ASHA: grace_period 1, ...").
     * NULL: the report says to see the stored config. */
    void (*summary)(const void *cfg, struct tunep_buf *out);
    /* Writes at most max rung milestones, ascending (ASHA's grace_period * rf^k) and returns
     * their number, for the report's learning curves. NULL: no rungs. */
    size_t (*rungs)(const void *cfg, double *out, size_t max);

    /*
     * ---- an instance: the tunep_scheduler_* calls below, each with the
     * default its NULL stands for ----
     */
    /* Makes the state from a config that passed check() (cfg is borrowed for the call only:
     * copy what is kept). NULL: a scheduler without state, like FIFO. */
    tune_status (*create)(const void *cfg, const tune_space *space, uint64_t seed, void **ret,
                          tune_error *err);
    /* Frees what create() made. Required with create. */
    void (*free)(void *self);
    /* NULL: TUNE_OK. */
    tune_status (*on_trial_add)(void *self, int64_t trial_id, double u);
    /* n_waiting: trials waiting to start (tunep_scheduler_set_waiting()). NULL: CONTINUE. */
    enum tunep_decision (*on_result)(void *self, int64_t trial_id, int has_t, double t,
                                     double score, int64_t n_waiting);
    /* NULL: nothing. */
    void (*on_trial_complete)(void *self, int64_t trial_id, int has_result, double last_t,
                              double last_score);
    /* NULL: nothing. */
    void (*on_trial_paused)(void *self, int64_t trial_id);
    /* NULL: NEW. */
    enum tunep_next (*choose)(void *self, int new_left, int64_t n_running, int64_t *ret_id);
    /* NULL: 0, no trial to stop. */
    int (*take_stopped)(void *self, int64_t *ret_id);
    /* NULL: -1, a scheduler that never answers EXPLOIT. */
    int64_t (*exploit_donor)(const void *self, int64_t trial_id);
    /* NULL: nothing. */
    void (*explore)(void *self, int64_t trial_id, const struct tunep_value *donor_values,
                    gsl_rng *r, struct tunep_value *out);
    /* NULL: nothing. */
    void (*describe)(const void *self, double sign, struct tunep_buf *buf);
};

/*
 * The registry of schedulers, process-wide like the allocator hooks: it
 * starts with the built-in rows (fifo, asha, median_stopping, hyperband,
 * pbt), which pass through the same checks, and tunep_scheduler_register()
 * adds one, before any study is made and never concurrently with any other
 * call. The row is borrowed for the
 * life of the process. TUNE_EINVAL when the row is incomplete (no name or
 * title, a create without free, options without config_size, 64 or more
 * options) or a name or alias is taken; TUNE_ENOMEM when the registry is
 * full.
 */
tune_status tunep_scheduler_register(const struct tunep_scheduler_type *type, tune_error *err);
/* The row whose name or alias is name, or NULL. */
const struct tunep_scheduler_type *tunep_scheduler_find(const char *name);
/* The rows in registration order: i < tunep_scheduler_count(). */
size_t tunep_scheduler_count(void);
const struct tunep_scheduler_type *tunep_scheduler_at(size_t i);
/* The scheduler of a config that names none: FIFO. */
const struct tunep_scheduler_type *tunep_scheduler_type_default(void);

/* Fills c with the default scheduler (FIFO), which has no options; c owns nothing. */
void tunep_scheduler_config_default(struct tunep_scheduler_config *c);
/*
 * Sets c to type with every option at its default (c's previous contents are
 * not freed: call tunep_scheduler_config_done() first when it owns any).
 * TUNE_ENOMEM leaves c alone.
 */
tune_status tunep_scheduler_config_init(struct tunep_scheduler_config *c,
                                        const struct tunep_scheduler_type *type, tune_error *err);
/* Frees what c owns and leaves it at the default; twice is fine. */
void tunep_scheduler_config_done(struct tunep_scheduler_config *c);
/* The config's time attribute (borrowed from c). */
const char *tunep_scheduler_config_time_attr(const struct tunep_scheduler_config *c);

struct tunep_scheduler;

/*
 * Creates a scheduler of c->type from c->cfg (borrowed for the call only).
 * Options are assumed valid (the config parser checked them); a scheduler
 * that finds them broken anyway answers TUNE_EINVAL. `space` is the study's
 * (borrowed; PBT explores its parameters) and `seed` the study seed (PBT's
 * choices). TUNE_ENOMEM on OOM.
 */
tune_status tunep_scheduler_new(const struct tunep_scheduler_config *c, const tune_space *space,
                                uint64_t seed, struct tunep_scheduler **ret, tune_error *err);
void tunep_scheduler_free(struct tunep_scheduler *s);

/* The row s was made from, and its state (what type->create() made; NULL without it), for a
 * scheduler's own inspection functions (tunep_scheduler_asha()). */
const struct tunep_scheduler_type *tunep_scheduler_type_of(const struct tunep_scheduler *s);
void *tunep_scheduler_state(struct tunep_scheduler *s);

/* The name of the attribute that measures progress ("training_iteration" for FIFO);
 * borrowed, valid until s is freed. */
const char *tunep_scheduler_time_attr(const struct tunep_scheduler *s);

/*
 * A new trial starts (also a retry after a failure: the trial keeps what it
 * recorded). u is a uniform [0,1) number from the trial's own stream, which
 * ASHA uses to pick the trial's bracket reproducibly. A paused trial resumed
 * through choose() needs no call (one is harmless: it just runs on).
 */
tune_status tunep_scheduler_on_trial_add(struct tunep_scheduler *s, int64_t trial_id, double u);

/*
 * A report: t is the trial's time_attr value (has_t is 0 when the report lacks
 * it: no decision can be made then), score the normalised metric.
 */
enum tunep_decision tunep_scheduler_on_result(struct tunep_scheduler *s, int64_t trial_id,
                                              int has_t, double t, double score);

/* The trial ended (any way); last_t/last_score are its last report, if has_result. */
void tunep_scheduler_on_trial_complete(struct tunep_scheduler *s, int64_t trial_id, int has_result,
                                       double last_t, double last_score);

/*
 * Pausing schedulers (HyperBand, promotion ASHA, median stopping when it
 * yields or without hard_stop, PBT's time sharing). After a TUNEP_PAUSE
 * decision the objective returns; then the controller calls
 * on_trial_paused(). A paused trial runs again only when choose() names it.
 * If a stop condition ends the trial instead, on_trial_complete() is enough.
 * The controller tells the scheduler how many trials wait to start (new or
 * retried) before each on_result(), for the median rule's and PBT's time
 * sharing; the scheduler counts its own paused trials as waiting too. After
 * replaying a stored study (tune resume), call on_trial_paused() for the
 * trials that are PAUSED, so that they can be resumed or ranked.
 */
void tunep_scheduler_on_trial_paused(struct tunep_scheduler *s, int64_t trial_id);
void tunep_scheduler_set_waiting(struct tunep_scheduler *s, int64_t n_waiting);

/*
 * What a free worker should do. new_left: new trials remain to be started.
 * FIFO and stopping ASHA always answer NEW. A scheduler may answer WAIT only
 * while some trial is running (n_running > 0); with nothing running and
 * nothing to resume it answers NEW, and the controller ends the study when no
 * new trials are left, ending every still-paused trial as STOPPED.
 *   HyperBand: promoted trials first (best first), else NEW while new trials
 *     are left, else WAIT. new_left == 0 closes the last bracket with the
 *     trials it has (so its rounds can end).
 *   promotion ASHA: a promotable trial (highest rung first), else NEW, else WAIT.
 *   median, PBT: NEW while new trials are left (Ray: PENDING before PAUSED),
 *     else a paused trial (median: first paused; PBT: least trained), else NEW.
 */
enum tunep_next tunep_scheduler_choose(struct tunep_scheduler *s, int new_left, int64_t n_running,
                                       int64_t *ret_id);

/*
 * Paused trials the scheduler has decided never to resume (HyperBand's round
 * losers): one id per call, returns 1; 0 when none. The controller ends them
 * STOPPED (it also calls on_trial_complete for them). Rounds end in
 * on_trial_paused(), on_trial_complete() and choose(): drain after those.
 * Promotion ASHA never gives up on a paused trial before the study ends (the
 * top of a rung grows with it); the controller ends those still paused.
 */
int tunep_scheduler_take_stopped(struct tunep_scheduler *s, int64_t *ret_id);

/*
 * PBT, after a TUNEP_EXPLOIT decision for trial_id: exploit_donor() is the
 * better trial whose checkpoint and configuration it takes (-1 when the last
 * decision for trial_id was not EXPLOIT); explore() writes the explored
 * configuration into out[space->n] from the donor's values: each mutated
 * parameter is resampled (resample_probability, or always when it is a list
 * entry not in the list) or perturbed (x perturbation factor for numbers,
 * clamped to the distribution's range, ints rounded; a neighbour in the list
 * for lists), the rest copied. r is a stream the controller seeds per
 * (trial, exploit). Calling explore() for trial_id carries the exploit out:
 * the trial takes the donor's check times (Ray's _exploit) and
 * exploit_donor() is -1 again; the controller calls it only when it copied
 * the donor's checkpoint. Strings in out are borrowed from donor_values or
 * from the scheduler (valid until it is freed). No-op for other types.
 */
int64_t tunep_scheduler_exploit_donor(const struct tunep_scheduler *s, int64_t trial_id);
void tunep_scheduler_explore(struct tunep_scheduler *s, int64_t trial_id,
                             const struct tunep_value *donor_values, gsl_rng *r,
                             struct tunep_value *out);

/*
 * Appends a short human description of the scheduler state to buf, e.g.
 * "ASHA: bracket 0: rung 1: 37 recorded, cutoff 0.8123; rung 4: ..." (cut-offs
 * in the user's metric units: sign says whether to negate back). One line per
 * bracket, each ending with '\n'. Nothing for FIFO.
 */
void tunep_scheduler_describe(const struct tunep_scheduler *s, double sign, struct tunep_buf *buf);

/*
 * numpy.percentile(values, p) with linear interpolation, p in [0, 100].
 * -INFINITY entries sort first; an interpolation that touches -INFINITY gives
 * -INFINITY (numpy would give NaN). n must be > 0. Sorts `values` in place.
 */
double tunep_percentile(double *values, size_t n, double p);

#endif /* TUNE_SCHEDULER_H */
