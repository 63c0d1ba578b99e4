/*
 * study.c - the study: creation from a config, the worker pool, and the
 * trial life cycle PENDING -> RUNNING -> TERMINATED | STOPPED | ERROR, with
 * RUNNING <-> PAUSED for pausing schedulers (HyperBand, promotion ASHA, PBT).
 *
 * With random or grid search, trial i's configuration is a pure function of
 * (seed, i): its own random stream (rng.h) and, for grid axes, i modulo the
 * grid size, as Ray's variant generator repeats the whole grid num_samples
 * times. Model-based searchers (search/searcher.h) also see the history. Workers take the next
 * trial under the study lock, run the objective outside it, and finish the
 * trial under it again. A failed attempt is retried (same id, same config)
 * up to max_failures times before the trial ends as ERROR; the sweep goes on.
 */
#include "engine/study.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/rng.h"
#include "engine/trial_dir.h"
#include "store/lock.h"

/* ---- time ---------------------------------------------------------------- */

double tunep_now_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double tunep_now_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- records ------------------------------------------------------------- */

void tunep_trial_rec_free(struct tunep_trial_rec *r, size_t n_params)
{
    if (!r)
        return;
    if (r->own_strings && r->values)
        for (size_t i = 0; i < n_params; i++)
            if (r->values[i].type == TUNEP_V_STRING)
                tunep_free((char *)r->values[i].u.s);
    tunep_free(r->values);
    tunep_free(r->ckpt);
    tunep_free(r->last);
    tunep_free(r->error);
    tunep_free(r);
}

void tunep_study_set_status(struct tune_study *s, struct tunep_trial_rec *r, tune_trial_status st)
{
    s->counts[r->status]--;
    r->status = st;
    s->counts[st]++;
    /* Ray's FailureConfig(fail_fast=True): the first ERROR stops the sweep, as a
     * stop request does (running trials go back to PENDING). */
    if (st == TUNE_TRIAL_ERROR && s->cfg.fail_fast && !s->fail_fast_hit) {
        s->fail_fast_hit = 1;
        s->fail_fast_trial = r->id;
        atomic_store(&s->stop_requested, 1);
    }
}

int tunep_trial_rec_set_last(struct tune_study *s, struct tunep_trial_rec *r, const char *name,
                             double value)
{
    long id = tunep_study_metric_id(s, name);
    if (id < 0)
        return -1;
    if ((size_t)id >= r->n_last) {
        /* As many slots as metrics are known now, not the interning table's
         * capacity: ~280 bytes per trial matter at 100,000 trials (bench/load.c). */
        size_t cap = s->n_metrics;
        double *p = tunep_realloc(r->last, r->n_last * sizeof *p, cap * sizeof *p);
        if (!p)
            return -1;
        for (size_t j = r->n_last; j < cap; j++)
            p[j] = (double)NAN;
        r->last = p;
        r->n_last = cap;
    }
    r->last[id] = value;
    return 0;
}

struct tunep_trial_rec *tunep_trial_rec_from_store(struct tune_study *s,
                                                   const struct tunep_stored_trial *t)
{
    struct tunep_trial_rec *r = tunep_calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->id = t->trial_id;
    r->status = t->status;
    r->attempt = t->attempt;
    r->iteration = t->iteration;
    r->time_total_s = t->time_total_s;
    r->start_wall = t->start_time;
    r->own_strings = 1;
    r->values = tunep_calloc(s->n_params ? s->n_params : 1, sizeof *r->values);
    if (!r->values)
        goto fail;
    for (size_t i = 0; i < s->n_params; i++) {
        r->values[i] = t->params[i];
        if (t->params[i].type == TUNEP_V_STRING &&
            !(r->values[i].u.s = tunep_strdup(t->params[i].u.s ? t->params[i].u.s : "")))
            goto fail;
    }
    if (t->error && !(r->error = tunep_strdup(t->error)))
        goto fail;
    for (size_t i = 0; i < t->n_metrics; i++)
        if (tunep_trial_rec_set_last(s, r, t->metric_names[i], t->metric_values[i]))
            goto fail;
    return r;
fail:
    tunep_trial_rec_free(r, s->n_params);
    return NULL;
}

/* FNV-1a: the hash of a metric name in the interning table. */
static uint32_t name_hash(const char *name)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

/* The slot of name in the open-addressing table, or of the empty slot where it would go. */
static size_t metric_slot(const struct tune_study *s, const char *name)
{
    size_t mask = s->n_metric_slots - 1;
    size_t i = name_hash(name) & mask;
    while (s->metric_slots[i] && strcmp(s->metric_names[s->metric_slots[i] - 1], name) != 0)
        i = (i + 1) & mask;
    return i;
}

/* Doubles the table (at most half full) and places every name again. 0, or -1 on OOM. */
static int grow_metric_slots(struct tune_study *s)
{
    size_t n = s->n_metric_slots ? s->n_metric_slots * 2 : 16;
    uint32_t *slots = tunep_calloc(n, sizeof *slots);
    if (!slots)
        return -1;
    tunep_free(s->metric_slots);
    s->metric_slots = slots;
    s->n_metric_slots = n;
    for (size_t id = 0; id < s->n_metrics; id++)
        slots[metric_slot(s, s->metric_names[id])] = (uint32_t)id + 1;
    return 0;
}

/* A hash table rather than a scan: a report with thousands of new names stays linear. */
long tunep_study_metric_id(struct tune_study *s, const char *name)
{
    if (s->n_metric_slots) {
        uint32_t known = s->metric_slots[metric_slot(s, name)];
        if (known)
            return (long)known - 1;
    }
    if (s->n_metrics >= UINT32_MAX - 1)
        return -1;
    if (2 * (s->n_metrics + 1) > s->n_metric_slots && grow_metric_slots(s))
        return -1;
    if (s->n_metrics == s->cap_metrics) {
        size_t cap = s->cap_metrics ? s->cap_metrics * 2 : 8;
        char **p = tunep_realloc(s->metric_names, s->n_metrics * sizeof *p, cap * sizeof *p);
        if (!p)
            return -1;
        s->metric_names = p;
        s->cap_metrics = cap;
    }
    char *copy = tunep_strdup(name);
    if (!copy)
        return -1;
    s->metric_names[s->n_metrics] = copy;
    s->metric_slots[metric_slot(s, name)] = (uint32_t)s->n_metrics + 1;
    if (strcmp(name, s->cfg.metric) == 0)
        s->main_metric = (long)s->n_metrics;
    return (long)s->n_metrics++;
}

int64_t tunep_study_best_trial(const struct tune_study *s)
{
    int64_t best = -1;
    double best_score = -HUGE_VAL;
    if (s->main_metric < 0)
        return -1;
    for (int64_t i = 0; i < s->n_trials; i++) {
        const struct tunep_trial_rec *r = s->trials[i];
        /* An errored trial's last value comes from an attempt that failed. */
        if ((size_t)s->main_metric >= r->n_last || r->status == TUNE_TRIAL_ERROR)
            continue;
        double v = r->last[s->main_metric];
        if (isnan(v))
            continue;
        double score = s->sign * v;
        if (best < 0 || score > best_score) {
            best = i;
            best_score = score;
        }
    }
    return best;
}

/* ---- creation ------------------------------------------------------------ */

static tune_status study_alloc(struct tune_study **ret, tune_error *err)
{
    struct tune_study *s = tunep_calloc(1, sizeof *s);
    if (!s)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    if (pthread_mutex_init(&s->lock, NULL)) {
        tunep_free(s);
        return tunep_error_set(err, TUNE_ENOMEM, "cannot create a mutex");
    }
    if (pthread_mutex_init(&s->commit_lock, NULL)) {
        pthread_mutex_destroy(&s->lock);
        tunep_free(s);
        return tunep_error_set(err, TUNE_ENOMEM, "cannot create a mutex");
    }
    s->main_metric = -1;
    atomic_init(&s->stop_requested, 0);
    *ret = s;
    return TUNE_OK;
}

/*
 * The GPUs trials of `share` (a share of one, or whole GPUs) are placed on:
 * s->gpus, found once. TUNE_ECONFIG when there are none, or fewer than one
 * trial takes.
 */
static tune_status resolve_gpus(struct tune_study *s, double share, tune_error *err)
{
    if (!s->gpus) {
        struct tunep_gpu_set *g = tunep_malloc(sizeof *g);
        if (!g)
            return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        tune_status st = tunep_gpu_available((enum tunep_gpus_kind)s->cfg.gpus_kind, s->cfg.gpus_n,
                                             s->cfg.gpus_ids, g, err);
        if (st) {
            tunep_free(g);
            return st;
        }
        s->gpus = g;
    }
    if (s->gpus->n == 0)
        return tunep_error_set(err, TUNE_ECONFIG,
                               "resources_per_trial.gpu: trials ask for a GPU, but %s; name the "
                               "GPUs with \"gpus\" or --gpus",
                               s->gpus->why[0] ? s->gpus->why : "no GPU is given");
    if (share <= 1 && tunep_gpu_units(share) == 0)
        return tunep_error_set(err, TUNE_ECONFIG,
                               "resources_per_trial.gpu: %g is below the smallest share, %g", share,
                               1.0 / TUNEP_GPU_UNITS);
    if (share > 1 && (int)share > s->gpus->n)
        return tunep_error_set(err, TUNE_ECONFIG,
                               "resources_per_trial.gpu: a trial takes %d GPUs, but %d %s there",
                               (int)share, s->gpus->n, s->gpus->n == 1 ? "is" : "are");
    return TUNE_OK;
}

/* Device memory for the pool, through the trainer's query (user: the study). */
static tune_status trainer_gpu_mem(void *user, int device, size_t *ret_free, size_t *ret_total,
                                   tune_error *err)
{
    struct tune_study *s = user;
    return s->cfg.trainer->gpu_mem(s->gpus->ordinal[device], ret_free, ret_total, err);
}

/*
 * Sets up placement for a run whose trials take `share` of a GPU (> 1: whole
 * GPUs): the pool over s->gpus. *ret_slots is how many trials fit at once.
 */
static tune_status start_placement(struct tune_study *s, double share, int *ret_slots,
                                   tune_error *err)
{
    tune_status st = resolve_gpus(s, share, err);
    if (st)
        return st;
    const struct tunep_trainer_type *tt = s->cfg.trainer;
    int mine = tt && s->fn == tt->objective && tt->gpu_mem;
    struct tunep_gpu_pool_options opt = {
        .device_count = s->gpus->n,
        .mem_info = mine ? trainer_gpu_mem : NULL,
        .mem_user = s,
    };
    if ((st = tunep_gpu_pool_new(&opt, &s->gpu_pool, err)))
        return st;
    s->gpu_whole = share > 1 ? (int)share : 0;
    s->gpu_share = share > 1 ? 0 : share;
    s->gpu_mem_need = mine && tt->gpu_mem_need ? tt->gpu_mem_need(s->trainer_state) : 0;
    *ret_slots =
        s->gpu_whole ? s->gpus->n / s->gpu_whole : tunep_gpu_pool_slots(s->gpu_pool, s->gpu_share);
    return TUNE_OK;
}

tune_status tunep_study_new_from_config(const char *text, size_t len, const char *source,
                                        const tune_options *options, tune_space *space,
                                        const struct tunep_trainer_type *const *trainers,
                                        tune_study **ret, tune_error *err)
{
    struct tune_study *s = NULL;
    tune_status st = study_alloc(&s, err);
    if (st) {
        tune_space_free(space);
        return st;
    }
    st = options ? tunep_config_from_options(options, space, &s->cfg, err)
                 : tunep_config_parse(text, len, source, space, trainers, &s->cfg, err);
    if (st) {
        tune_study_free(s);
        return st;
    }
    s->n_params = s->cfg.space->n;
    s->param_names = tunep_calloc(s->n_params ? s->n_params : 1, sizeof *s->param_names);
    if (!s->param_names) {
        tune_study_free(s);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < s->n_params; i++)
        s->param_names[i] = s->cfg.space->params[i].name;
    if (!s->cfg.seed_given)
        s->cfg.seed = tunep_splitmix64((uint64_t)(tunep_now_wall() * 1e6) ^ (uint64_t)getpid());
    s->sign = s->cfg.mode_max ? 1.0 : -1.0;
    s->expand_choices = s->cfg.search == TUNEP_SEARCH_GRID;
    uint64_t grid = tunep_space_grid_size(s->cfg.space, s->expand_choices, NULL);
    s->total_trials = (int64_t)grid * s->cfg.num_samples;
    const struct tunep_trainer_type *tt = s->cfg.trainer;
    if (tt) {
        s->trainer_state = s->cfg.trainer_cfg;
        if (tt->create && (st = tt->create(s->cfg.trainer_cfg, source, &s->trainer_state, err))) {
            s->trainer_state = NULL;
            tune_study_free(s);
            return st;
        }
        s->fn = tt->objective;
        s->fn_data = s->trainer_state;
    }
    /* A GPU request on a machine without GPUs fails here, at `tune validate`. */
    if (s->cfg.resources_gpu > 0 && (st = resolve_gpus(s, s->cfg.resources_gpu, err))) {
        tune_study_free(s);
        return st;
    }
    *ret = s;
    return TUNE_OK;
}

tune_status tune_study_new(const tune_options *o, const tune_space *space, tune_study **ret_study,
                           tune_error *err)
{
    if (!o || !ret_study)
        return tunep_error_set(err, TUNE_EINVAL, "options and ret_study must not be NULL");
    tune_space *copy = NULL;
    tune_status st = space ? tunep_space_clone(space, &copy, err) : TUNE_OK;
    if (st)
        return st;
    /* Options name no trainer: the objective comes from tune_study_set_objective(). */
    return tunep_study_new_from_config(NULL, 0, NULL, o, copy, NULL, ret_study, err);
}

static void keep_abandoned(struct tune_trial *list);
static void free_handle_blocks(struct tune_study *s);

void tune_study_free(tune_study *s)
{
    if (!s)
        return;
    tunep_ask_done(s); /* ask_tell.c: a study driven by ask and tell is finished first */
    for (int64_t i = 0; i < s->n_trials; i++)
        tunep_trial_rec_free(s->trials[i], s->n_params);
    tunep_free(s->trials);
    tunep_free(s->retry);
    tunep_free(s->restartq);
    tunep_searcher_free(s->searcher);
    for (size_t i = 0; i < s->n_metrics; i++)
        tunep_free(s->metric_names[i]);
    tunep_free(s->metric_names);
    tunep_free(s->metric_slots);
    while (s->closed) {
        struct tune_trial *t = s->closed;
        s->closed = t->next;
        if (!t->in_block)
            tunep_free(t);
    }
    free_handle_blocks(s);
    keep_abandoned(s->abandoned);
    tunep_free(s->workers);
    tunep_gpu_pool_free(s->gpu_pool);
    tunep_free(s->gpus);
    tunep_free(s->worker_left);
    if (s->readonly && s->param_names)
        for (size_t i = 0; i < s->n_params; i++)
            tunep_free((char *)s->param_names[i]);
    tunep_free(s->param_names);
    tunep_scheduler_free(s->sched);
    if (s->cfg.trainer && s->cfg.trainer->create && s->cfg.trainer->free)
        s->cfg.trainer->free(s->trainer_state);
    tunep_store_close(s->store);
    tunep_store_lock_release(s->store_lock);
    tunep_config_done(&s->cfg);
    pthread_mutex_destroy(&s->lock);
    if (!s->readonly)
        pthread_mutex_destroy(&s->commit_lock);
    tunep_free(s);
}

tune_status tune_study_set_objective(tune_study *s, tune_objective_fn fn, void *user_data,
                                     tune_error *err)
{
    if (!s || !fn)
        return tunep_error_set(err, TUNE_EINVAL, "study and fn must not be NULL");
    if (s->readonly)
        return tunep_error_set(err, TUNE_EINVAL, "this study was opened read-only from a folder");
    if (s->has_run)
        return tunep_error_set(err, TUNE_EINVAL,
                               "the study is running or has run: set the "
                               "objective before tune_study_run()");
    s->fn = fn;
    s->fn_data = user_data;
    return TUNE_OK;
}

/* Not while running, nor on a study opened read-only or one that has run. */
static tune_status check_settable(const tune_study *s, tune_error *err)
{
    if (s->readonly)
        return tunep_error_set(err, TUNE_EINVAL, "this study was opened read-only from a folder");
    if (s->has_run)
        return tunep_error_set(err, TUNE_EINVAL, "this study has already run");
    return TUNE_OK;
}

tune_status tune_study_set_resume_flags(tune_study *s, unsigned flags, tune_error *err)
{
    if (!s)
        return tunep_error_set(err, TUNE_EINVAL, "study must not be NULL");
    tune_status st = check_settable(s, err);
    if (st)
        return st;
    const unsigned known = TUNE_RESUME_ERRORED | TUNE_RESUME_FORCE | TUNE_RESUME_EXISTING;
    if (flags & ~known)
        return tunep_error_set(err, TUNE_EINVAL, "unknown resume flags 0x%x", flags & ~known);
    s->resume_flags = flags;
    return TUNE_OK;
}

tune_status tunep_study_resume(const char *dir, unsigned flags,
                               const struct tunep_trainer_type *const *trainers,
                               tune_study **ret_study, tune_error *err)
{
    if (!dir || !ret_study)
        return tunep_error_set(err, TUNE_EINVAL, "dir and ret_study must not be NULL");
    struct tunep_store *store = NULL;
    struct tunep_store_experiment_row row = {0};
    tune_study *s = NULL;
    char *db = NULL; /* the stored config's name in messages */
    tune_status st = tunep_store_open_experiment(dir, 1, &store, &row, err);
    tunep_store_close(store);
    if (!st && !(db = tunep_store_file(dir)))
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    if (!st)
        st = tunep_study_new_from_config(row.config_json, strlen(row.config_json), db, NULL, NULL,
                                         trainers, &s, err);
    if (!st && !(st = tune_study_set_storage(s, dir, err)))
        st = tune_study_set_resume_flags(s, flags | TUNE_RESUME_EXISTING, err);
    /* Ask and tell drive it (resume.c): tune_study_run() says so before it asks for an objective.
     */
    if (!st && row.driver && strcmp(row.driver, "ask") == 0)
        s->ask_shared = 1;
    tunep_store_experiment_done(&row);
    tunep_free(db);
    if (st) {
        tune_study_free(s);
        return st;
    }
    *ret_study = s;
    return TUNE_OK;
}

tune_status tune_study_set_storage(tune_study *s, const char *dir, tune_error *err)
{
    if (!s || !dir || !*dir)
        return tunep_error_set(err, TUNE_EINVAL, "study and a non-empty dir must be given");
    tune_status st = check_settable(s, err);
    if (st)
        return st;
    char *copy = tunep_strdup(dir);
    if (!copy)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    tunep_free(s->cfg.storage);
    s->cfg.storage = copy;
    return TUNE_OK;
}

const char *tune_study_storage(const tune_study *s)
{
    return s ? s->cfg.storage : NULL;
}

const char *tune_study_name(const tune_study *s)
{
    return s ? s->cfg.name : NULL;
}

const char *tune_study_metric(const tune_study *s)
{
    return s ? s->cfg.metric : NULL;
}

void tune_study_request_stop(tune_study *s)
{
    if (s)
        atomic_store(&s->stop_requested, 1);
}

tune_status tune_study_stop_now(tune_study *s, tune_error *err)
{
    if (!s)
        return tunep_error_set(err, TUNE_EINVAL, "study must not be NULL");
    if (s->readonly)
        return tunep_error_set(err, TUNE_EINVAL, "this study was opened read-only from a folder");
    atomic_store(&s->stop_requested, 1);
    tune_status st = TUNE_OK;
    pthread_mutex_lock(&s->commit_lock);
    pthread_mutex_lock(&s->lock);
    if (!s->stopped_now) {
        s->stopped_now = 1;
        int64_t n = 0;
        for (int64_t i = 0; i < s->n_trials; i++) {
            struct tunep_trial_rec *rec = s->trials[i];
            if (rec->status != TUNE_TRIAL_RUNNING)
                continue;
            tunep_study_set_status(s, rec, TUNE_TRIAL_PENDING);
            n++;
            tune_error e;
            if (s->store && !s->fatal &&
                tunep_store_trial_end(s->store, rec->id, rec->attempt, TUNE_TRIAL_PENDING,
                                      rec->iteration, rec->time_total_s, tunep_now_wall(), NULL,
                                      &e))
                tunep_study_set_fatal(s, &e);
        }
        if (s->store && !s->fatal) {
            tune_error e;
            if (tunep_store_commit(s->store, &e))
                tunep_study_set_fatal(s, &e);
        }
        if (s->fatal) {
            st = s->fatal_err.code ? s->fatal_err.code : TUNE_ESTORE;
            if (err)
                *err = s->fatal_err;
        } else {
            /* From here on every report is answered TUNE_ESTORE and nothing is written. */
            s->fatal = 1;
            tunep_error_set(&s->fatal_err, TUNE_EINTERRUPTED,
                            "stopped at once: %lld running trial%s back to PENDING", (long long)n,
                            n == 1 ? "" : "s");
        }
    }
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_unlock(&s->commit_lock);
    return st;
}

void tune_study_counts(tune_study *s, int64_t ret_counts[TUNE_TRIAL_STATUS_COUNT])
{
    if (!s || !ret_counts)
        return;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < TUNE_TRIAL_STATUS_COUNT; i++)
        ret_counts[i] = s->counts[i];
    /* Trials not yet generated are pending too. */
    ret_counts[TUNE_TRIAL_PENDING] += s->total_trials - s->n_trials;
    pthread_mutex_unlock(&s->lock);
}

/* ---- storage ------------------------------------------------------------- */

static int is_memory(const char *storage)
{
    return strcmp(storage, ":memory:") == 0;
}

/* mkdir -p */
static tune_status make_dirs(const char *path, tune_error *err)
{
    char *p = tunep_strdup(path);
    if (!p)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    for (char *q = p + 1;; q++) {
        if (*q == '/' || *q == '\0') {
            char c = *q;
            *q = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                tune_status st = tunep_error_set_at(err, TUNE_EIO, p, 0, 0,
                                                    "cannot create folder: %s", strerror(errno));
                tunep_free(p);
                return st;
            }
            *q = c;
            if (c == '\0')
                break;
        }
    }
    tunep_free(p);
    return TUNE_OK;
}

/*
 * This process's command line, arguments joined by spaces and quoted for a
 * POSIX shell where needed; NULL where /proc/self/cmdline is missing.
 */
static char *read_command_line(void)
{
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f)
        return NULL;
    struct tunep_buf b;
    tunep_buf_init(&b);
    char arg[4096];
    size_t n = 0;
    int c, first = 1;
    while ((c = getc(f)) != EOF) {
        if (c != '\0') {
            if (n < sizeof arg - 1)
                arg[n++] = (char)c;
            continue;
        }
        arg[n] = '\0';
        if (!first)
            tunep_buf_puts(&b, " ");
        first = 0;
        if (n > 0 && strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "0123456789_-+=.,/:@%") == n) {
            tunep_buf_puts(&b, arg);
        } else {
            tunep_buf_puts(&b, "'");
            for (const char *p = arg; *p; p++)
                tunep_buf_puts(&b, *p == '\'' ? "'\\''" : (char[]){*p, '\0'});
            tunep_buf_puts(&b, "'");
        }
        n = 0;
    }
    fclose(f);
    return tunep_buf_take(&b);
}

/*
 * Takes the folder's lock, then continues the experiment it holds (when
 * TUNE_RESUME_EXISTING allows) or creates one. The lock comes first, so of
 * two controllers started together one creates or resumes and the other is
 * refused before it reads anything.
 */
static tune_status open_storage(struct tune_study *s, tune_error *err)
{
    if (is_memory(s->cfg.storage))
        return TUNE_OK;
    tune_status st = make_dirs(s->cfg.storage, err);
    if (!st)
        st = tunep_store_lock_take_wait(s->cfg.storage, s->lock_wait_s, &s->store_lock, err);
    if (st)
        return st;
    struct tunep_store_experiment_row row = {0};
    st = tunep_store_open_experiment(s->cfg.storage, 0, &s->store, &row, err);
    if (!st && !(s->resume_flags & TUNE_RESUME_EXISTING)) {
        /* Never report an old sweep's results as this run's. */
        st = tunep_error_set_at(err, TUNE_EEXIST, s->cfg.storage, 0, 0,
                                "this folder already holds the experiment '%s': continue it with "
                                "`tune resume %s`, or choose another folder",
                                row.name ? row.name : "", s->cfg.storage);
        tunep_store_close(s->store);
        s->store = NULL;
    } else if (!st) {
        st = tunep_study_resume_store(s, &row, err); /* resume.c */
    }
    if (st != TUNE_ENOTFOUND) {
        tunep_store_experiment_done(&row);
        return st;
    }
    /* No experiment here yet: no experiment.db, or one of a run killed while creating it. */
    char *db = tunep_store_file(s->cfg.storage);
    if (!db)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    char cwd[4096];
    char *command_line = read_command_line();
    struct tunep_store_experiment exp = {
        .name = s->cfg.name,
        .config_json = s->cfg.json,
        .metric = s->cfg.metric,
        .mode = s->cfg.mode_max ? "max" : "min",
        .version = tune_version(),
        .seed = s->cfg.seed,
        .created = tunep_now_wall(),
        .cwd = getcwd(cwd, sizeof cwd),
        .command_line = command_line,
        .driver = s->ask_shared ? "ask" : NULL,
    };
    st = tunep_store_create(db, &exp, s->cfg.space, &s->store, err);
    tunep_free(command_line);
    tunep_free(db);
    return st;
}

tune_status tunep_study_export_all(struct tune_study *s, tune_error *err)
{
    if (!s->store)
        return TUNE_OK;
    char *results = tunep_asprintf("%s/results.csv", s->cfg.storage);
    char *progress = tunep_asprintf("%s/progress.csv", s->cfg.storage);
    tune_status st = TUNE_ENOMEM;
    if (results && progress) {
        st = tunep_export_results_csv(s->store, results, err);
        if (!st)
            st = tunep_export_progress_csv(s->store, progress, err);
    } else {
        tunep_error_set(err, st, "out of memory");
    }
    tunep_free(results);
    tunep_free(progress);
    return st;
}

/* ---- the worker pool ----------------------------------------------------- */

void tunep_study_set_fatal(struct tune_study *s, const tune_error *e)
{
    if (!s->fatal) {
        s->fatal = 1;
        s->fatal_err = *e;
        tunep_log(TUNE_LOG_DEBUG, "%s", e->text);
    }
}

static struct tunep_trial_rec *new_trial(struct tune_study *s, gsl_rng *r)
{
    if (s->n_trials == s->cap_trials) {
        int64_t cap = s->cap_trials ? s->cap_trials * 2 : 64;
        struct tunep_trial_rec **p =
            tunep_realloc(s->trials, (size_t)s->n_trials * sizeof *p, (size_t)cap * sizeof *p);
        if (!p)
            return NULL;
        s->trials = p;
        s->cap_trials = cap;
    }
    struct tunep_trial_rec *rec = tunep_calloc(1, sizeof *rec);
    if (!rec)
        return NULL;
    rec->values = tunep_calloc(s->cfg.space->n ? s->cfg.space->n : 1, sizeof *rec->values);
    if (!rec->values) {
        tunep_free(rec);
        return NULL;
    }
    rec->id = s->n_trials;
    rec->status = TUNE_TRIAL_PENDING;
    gsl_rng_set(r, (unsigned long)tunep_trial_seed(s->cfg.seed, rec->id, TUNEP_RNG_SAMPLE));
    if (s->searcher) {
        tune_error e;
        tune_status st = s->searcher->ops->suggest(s->searcher, rec->id, r, rec->values, &e);
        if (!st)
            st = s->searcher->ops->on_start(s->searcher, rec->id, rec->values);
        if (st) {
            tunep_trial_rec_free(rec, s->n_params);
            return NULL;
        }
    } else {
        uint64_t grid = tunep_space_grid_size(s->cfg.space, s->expand_choices, NULL);
        tunep_space_sample(s->cfg.space, r, (uint64_t)rec->id % grid, s->expand_choices,
                           rec->values);
    }
    s->trials[s->n_trials++] = rec;
    s->counts[TUNE_TRIAL_PENDING]++;
    return rec;
}

static int budget_left(struct tune_study *s)
{
    if (s->cfg.stop.time_budget_s > 0 &&
        tunep_now_monotonic() - s->t_start >= s->cfg.stop.time_budget_s)
        s->budget_exhausted = 1;
    return !s->budget_exhausted;
}

/* Appends id to a FIFO of trial ids; 0, or -1 on OOM. */
static int push_id(int64_t **q, int64_t *n, int64_t *cap, int64_t id)
{
    if (*n == *cap) {
        int64_t c = *cap ? *cap * 2 : 16;
        int64_t *p = tunep_realloc(*q, (size_t)*n * sizeof *p, (size_t)c * sizeof *p);
        if (!p)
            return -1;
        *q = p;
        *cap = c;
    }
    (*q)[(*n)++] = id;
    return 0;
}

/* Ends a PAUSED trial that will not run again as STOPPED (scheduler or end of study). Lock held. */
static void end_paused(struct tune_study *s, struct tunep_trial_rec *rec)
{
    if (rec->status != TUNE_TRIAL_PAUSED)
        return;
    tunep_study_set_status(s, rec, TUNE_TRIAL_STOPPED);
    int has = s->main_metric >= 0 && (size_t)s->main_metric < rec->n_last && rec->has_last_t;
    double score = has ? s->sign * rec->last[s->main_metric] : -HUGE_VAL;
    if (!isfinite(score))
        score = -HUGE_VAL;
    tunep_scheduler_on_trial_complete(s->sched, rec->id, rec->has_last_t, rec->last_t, score);
    if (s->searcher)
        (void)tunep_study_searcher_complete(s, rec, score);
    if (s->store && !s->fatal) {
        tune_error e;
        if (tunep_store_trial_end(s->store, rec->id, rec->attempt, TUNE_TRIAL_STOPPED,
                                  rec->iteration, rec->time_total_s, tunep_now_wall(), NULL, &e))
            tunep_study_set_fatal(s, &e);
    }
}

/* A PAUSED trial runs again (same attempt). Lock held. */
static struct tunep_trial_rec *resume_paused(struct tune_study *s, struct tunep_trial_rec *rec)
{
    /* The objective starts over: until it loads a checkpoint its reports up to
     * the pause are replayed, answered without being recorded again. */
    rec->ff_until = rec->keep_iteration ? 0 : rec->iteration;
    if (!rec->keep_iteration)
        rec->iteration = 0;
    rec->want_ckpt = 0;
    tunep_study_set_status(s, rec, TUNE_TRIAL_RUNNING);
    if (s->store) {
        tune_error e;
        if (tunep_store_trial_resume(s->store, rec->id, rec->attempt, &e))
            tunep_study_set_fatal(s, &e);
    }
    return rec;
}

/* A new attempt of a trial (the first, or a retry). Lock held. */
static struct tunep_trial_rec *start_attempt(struct tune_study *s, struct tunep_trial_rec *rec,
                                             gsl_rng *r)
{
    rec->attempt++;
    rec->iteration = 0;
    rec->time_total_s = 0;
    rec->time_offset = 0;
    rec->time_base = 0;
    rec->ff_until = 0;
    rec->keep_iteration = 0;
    rec->want_ckpt = 0;
    rec->start_wall = tunep_now_wall();
    tunep_study_set_status(s, rec, TUNE_TRIAL_RUNNING);
    gsl_rng_set(r, (unsigned long)tunep_trial_seed(s->cfg.seed, rec->id, TUNEP_RNG_SCHEDULER));
    rec->has_last_t = 0;
    if (tunep_scheduler_on_trial_add(s->sched, rec->id, gsl_rng_uniform(r))) {
        tune_error e;
        tunep_error_set(&e, TUNE_ENOMEM, "out of memory adding trial %lld to the scheduler",
                        (long long)rec->id);
        tunep_study_set_fatal(s, &e);
    }
    if (s->store) {
        tune_error e;
        if (tunep_store_trial_start(s->store, rec->id, rec->attempt, s->cfg.space, rec->values,
                                    rec->start_wall, &e))
            tunep_study_set_fatal(s, &e);
    }
    return rec;
}

/* Waits up to 0.1 s for a trial to report, pause or end (and for Ctrl-C). Lock held. */
static void wait_for_work(struct tune_study *s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + 100000000L;
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&s->work_cond, &s->lock, &ts);
}

struct tunep_trial_rec *tunep_study_next_trial(struct tune_study *s, gsl_rng *r, int *ret_wait)
{
    for (;;) {
        if (s->fatal || atomic_load(&s->stop_requested) || !budget_left(s))
            return NULL;
        int64_t id;
        while (tunep_scheduler_take_stopped(s->sched, &id))
            if (id >= 0 && id < s->n_trials)
                end_paused(s, s->trials[id]);
        if (s->head_retry < s->n_retry)
            return start_attempt(s, s->trials[s->retry[s->head_retry++]], r);
        if (s->head_restart < s->n_restart)
            return resume_paused(s, s->trials[s->restartq[s->head_restart++]]);
        int new_left = s->n_trials < s->total_trials;
        int64_t running = s->counts[TUNE_TRIAL_RUNNING];
        enum tunep_next next = tunep_scheduler_choose(s->sched, new_left, running, &id);
        if (next == TUNEP_NEXT_RESUME && id >= 0 && id < s->n_trials &&
            s->trials[id]->status == TUNE_TRIAL_PAUSED)
            return resume_paused(s, s->trials[id]);
        if (next == TUNEP_NEXT_NEW && new_left) {
            struct tunep_trial_rec *rec = new_trial(s, r);
            if (!rec) {
                tune_error e;
                tunep_error_set(&e, TUNE_ENOMEM, "out of memory creating trial %lld",
                                (long long)s->n_trials);
                tunep_study_set_fatal(s, &e);
                return NULL;
            }
            return start_attempt(s, rec, r);
        }
        if (running > 0 && ret_wait) {
            *ret_wait = 1;
            return NULL;
        }
        if (running > 0 && s->have_work_cond) {
            wait_for_work(s);
            continue;
        }
        /* Nothing runs and nothing will: trials still paused end here. */
        for (int64_t i = 0; i < s->n_trials; i++)
            end_paused(s, s->trials[i]);
        if (s->have_work_cond)
            pthread_cond_broadcast(&s->work_cond);
        return NULL;
    }
}

/*
 * PBT: the trial takes the donor's checkpoint and an explored copy of its
 * configuration, and waits PAUSED in restartq to run on. 0, or -1 when that
 * failed (the trial then just ends as if stopped). Lock held.
 */
static int exploit(struct tune_study *s, struct tunep_trial_rec *rec, int64_t donor_id)
{
    const struct tunep_trial_rec *donor = s->trials[donor_id];
    tune_error e;
    if (tunep_checkpoint_copy(s, rec, donor, &e)) {
        tunep_log(TUNE_LOG_WARN, "trial %lld: PBT cannot copy trial %lld's checkpoint: %s",
                  (long long)rec->id, (long long)donor_id, e.text);
        return -1;
    }
    struct tunep_value *v = tunep_calloc(s->n_params ? s->n_params : 1, sizeof *v);
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    if (!v || !r || push_id(&s->restartq, &s->n_restart, &s->cap_restart, rec->id)) {
        tunep_free(v);
        gsl_rng_free(r);
        return -1;
    }
    rec->n_exploits++;
    gsl_rng_set(r, (unsigned long)tunep_trial_seed(s->cfg.seed ^
                                                       tunep_splitmix64((uint64_t)rec->n_exploits),
                                                   rec->id, TUNEP_RNG_EXPLORE));
    tunep_scheduler_explore(s->sched, rec->id, donor->values, r, v);
    gsl_rng_free(r);
    /* A record loaded from a store owns its strings; explored ones are borrowed. */
    for (size_t i = 0; i < s->n_params; i++) {
        if (rec->own_strings && rec->values[i].type == TUNEP_V_STRING)
            tunep_free((char *)rec->values[i].u.s);
        rec->values[i] = v[i];
        if (rec->own_strings && v[i].type == TUNEP_V_STRING)
            rec->values[i].u.s = tunep_strdup(v[i].u.s ? v[i].u.s : "");
    }
    tunep_free(v);
    if (s->store && tunep_store_trial_set_values(s->store, rec->id, rec->values, &e))
        tunep_study_set_fatal(s, &e);
    tunep_log(TUNE_LOG_INFO, "trial %lld: PBT exploits trial %lld (checkpoint at iteration %lld)",
              (long long)rec->id, (long long)donor_id, (long long)donor->ckpt_iter);
    rec->keep_iteration = 1;
    return 0;
}

void tunep_study_finish_trial(struct tune_study *s, struct tune_trial *t, tune_status ret)
{
    struct tunep_trial_rec *rec = t->rec;
    tune_trial_status status;
    const char *error = NULL;
    if (ret == TUNE_EINTERRUPTED) {
        /* The objective stopped because the study is stopping: it goes back to PENDING. */
        if (t->end == TUNEP_END_NONE)
            t->end = TUNEP_END_INTERRUPTED;
        ret = TUNE_OK;
    }
    if (s->have_work_cond)
        pthread_cond_broadcast(&s->work_cond);
    if ((t->end == TUNEP_END_PAUSED || t->end == TUNEP_END_EXPLOIT) && !t->fail_now &&
        (ret == TUNE_OK || ret == TUNE_ESTOP)) {
        /* Paused: the attempt goes on later. */
        rec->time_base = rec->time_total_s - rec->time_offset;
        tunep_study_set_status(s, rec, TUNE_TRIAL_PAUSED);
        if (s->store && !s->fatal) {
            tune_error e;
            if (tunep_store_trial_end(s->store, rec->id, rec->attempt, TUNE_TRIAL_PAUSED,
                                      rec->iteration, rec->time_total_s, tunep_now_wall(), NULL,
                                      &e))
                tunep_study_set_fatal(s, &e);
        }
        if (t->end == TUNEP_END_PAUSED)
            tunep_scheduler_on_trial_paused(s->sched, rec->id);
        else if (exploit(s, rec, t->donor))
            end_paused(s, rec);
        return;
    }
    if (t->end == TUNEP_END_INTERRUPTED || (s->fatal && ret == TUNE_ESTORE)) {
        /* A store failure stops the study: the attempt did not fail, it was cut short. */
        status = TUNE_TRIAL_PENDING;
    } else if (t->fail_now) {
        goto failed;
    } else if (t->end == TUNEP_END_STOPPED) {
        status = TUNE_TRIAL_STOPPED;
    } else if (t->end == TUNEP_END_TERMINATED || ret == TUNE_OK || ret == TUNE_ESTOP) {
        status = TUNE_TRIAL_TERMINATED;
    } else {
    failed:
        if (!t->error[0])
            snprintf(t->error, sizeof t->error, "objective returned %s", tune_strerror(ret));
        error = t->error;
        tunep_free(rec->error);
        rec->error = tunep_strdup(t->error);
        tunep_log(TUNE_LOG_WARN, "trial %lld attempt %d failed: %s", (long long)rec->id,
                  rec->attempt, t->error);
        int retries_left =
            s->cfg.max_failures < 0 || rec->attempt - rec->failures_base <= s->cfg.max_failures;
        if (retries_left && !atomic_load(&s->stop_requested) && !s->fatal) {
            status = TUNE_TRIAL_PENDING;
            if (s->n_retry == s->cap_retry) {
                int64_t cap = s->cap_retry ? s->cap_retry * 2 : 16;
                int64_t *p = tunep_realloc(s->retry, (size_t)s->n_retry * sizeof *p,
                                           (size_t)cap * sizeof *p);
                if (p) {
                    s->retry = p;
                    s->cap_retry = cap;
                }
            }
            if (s->n_retry < s->cap_retry)
                s->retry[s->n_retry++] = rec->id;
            else
                status = TUNE_TRIAL_ERROR;
        } else {
            status = TUNE_TRIAL_ERROR;
        }
    }
    rec->time_total_s = rec->time_offset + rec->time_base + (tunep_now_monotonic() - t->t0);
    tunep_study_set_status(s, rec, status);
    if (status == TUNE_TRIAL_TERMINATED || status == TUNE_TRIAL_STOPPED) {
        /* As Ray's on_trial_complete: the final result may fill a rung the trial reached. */
        int has = s->main_metric >= 0 && (size_t)s->main_metric < rec->n_last && rec->has_last_t;
        double score = has ? s->sign * rec->last[s->main_metric] : -HUGE_VAL;
        if (!isfinite(score))
            score = -HUGE_VAL;
        tunep_scheduler_on_trial_complete(s->sched, rec->id, rec->has_last_t, rec->last_t, score);
        if (s->searcher)
            (void)tunep_study_searcher_complete(s, rec, score);
    } else if (status == TUNE_TRIAL_ERROR) {
        /* As Ray's on_trial_error: forget the trial without recording a result. */
        tunep_scheduler_on_trial_complete(s->sched, rec->id, 0, 0, -HUGE_VAL);
        if (s->searcher)
            (void)s->searcher->ops->on_complete(s->searcher, rec->id, 0, 0, -HUGE_VAL);
    }
    if (s->store && !s->fatal) {
        /* Not committed here: the next report's commit or the flusher (at most
         * FLUSH_INTERVAL_S later) makes it durable, which saves a commit per trial. */
        tune_error e;
        if (tunep_store_trial_end(s->store, rec->id, rec->attempt, status, rec->iteration,
                                  rec->time_total_s, tunep_now_wall(), error, &e))
            tunep_study_set_fatal(s, &e);
    }
}

/*
 * Group commit: trial starts and ends ride on the next report's commit; this
 * thread commits whatever is left every FLUSH_INTERVAL_S, so a finished
 * trial's status is durable within that time even when no report follows.
 */
#define FLUSH_INTERVAL_S 0.05

static void *flusher_main(void *arg)
{
    struct tune_study *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->flusher_quit) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long ns = ts.tv_nsec + (long)(FLUSH_INTERVAL_S * 1e9);
        ts.tv_sec += ns / 1000000000L;
        ts.tv_nsec = ns % 1000000000L;
        pthread_cond_timedwait(&s->flusher_cond, &s->lock, &ts);
        if (s->store && !s->fatal) {
            tune_error e;
            uint64_t upto = s->write_seq;
            if (tunep_store_commit(s->store, &e))
                tunep_study_set_fatal(s, &e);
            else
                s->durable_seq = upto;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/*
 * The handle of the attempt whose objective this thread runs in thread mode,
 * for exit_guard(); NULL elsewhere (in a forked trial process too).
 */
static _Thread_local struct tune_trial *current_trial;
static pthread_once_t exit_guard_once = PTHREAD_ONCE_INIT;
/* The process that armed the guard: a process an objective forks inherits
 * current_trial, and must not touch the study's store or locks. */
static pid_t exit_guard_pid;

/*
 * Runs when the process exits. An objective in thread mode that calls exit()
 * would end the whole run, and with status 0 if it said exit(0): the sweep
 * unfinished and nothing said. Here the running trials go back to PENDING in
 * the store, the log says which trial did it, and the process ends with status
 * 1 instead. Exits from any other thread are left alone.
 */
static void exit_guard(void)
{
    struct tune_trial *t = current_trial;
    if (!t || getpid() != exit_guard_pid)
        return;
    current_trial = NULL;
    tune_error e;
    int64_t id = t->rec->id;
    tune_status st = tune_study_stop_now(t->study, &e);
    tunep_log(TUNE_LOG_ERROR,
              "trial %lld: the objective called exit() in thread mode; " /* exit-lint-ok */
              "the run ends unfinished (exit status 1) with %s "
              "(use \"isolation\": \"process\" for objectives that exit)",
              (long long)id,
              st ? "the store not updated" : "its running trials back to PENDING, to be resumed");
    _exit(1); /* the process is exiting already; only its status changes: exit-lint-ok */
}

static void register_exit_guard(void)
{
    exit_guard_pid = getpid();
    (void)atexit(exit_guard);
}

/*
 * Handles of abandoned attempts outlive their study: their threads may still
 * report through them. Kept here, reachable, until the process exits.
 */
static pthread_mutex_t left_behind_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tune_trial *left_behind;

static void keep_abandoned(struct tune_trial *list)
{
    if (!list)
        return;
    struct tune_trial *last = list;
    while (last->next)
        last = last->next;
    pthread_mutex_lock(&left_behind_lock);
    last->next = left_behind;
    left_behind = list;
    pthread_mutex_unlock(&left_behind_lock);
}

/*
 * Trial handles, HANDLE_BLOCK to an allocation: a handle is never
 * reused (a kept pointer must find it CLOSED), so a sweep allocates one per
 * attempt, and one calloc of a 1.4 KB handle per trial (with the heap growing
 * a page at a time under it) cost 9% of a trivial trial's time with SQLite.
 * Blocks are freed with the study, except those holding an abandoned handle,
 * whose thread may still use it.
 */
#define HANDLE_BLOCK 64

struct tunep_handle_block {
    struct tunep_handle_block *next;
    size_t used;
    struct tune_trial h[HANDLE_BLOCK];
};

struct tune_trial *tunep_study_new_handle(struct tune_study *s)
{
    struct tunep_handle_block *b = s->handle_blocks;
    if (!b || b->used == HANDLE_BLOCK) {
        if (!(b = tunep_calloc(1, sizeof *b)))
            return NULL;
        b->next = s->handle_blocks;
        s->handle_blocks = b;
    }
    struct tune_trial *t = &b->h[b->used++];
    t->in_block = 1;
    return t;
}

void tunep_study_drop_handle(struct tune_study *s, struct tune_trial *t)
{
    struct tunep_handle_block *b = s->handle_blocks;
    if (t && b && b->used > 0 && t == &b->h[b->used - 1]) {
        memset(t, 0, sizeof *t);
        b->used--;
    }
}

static void free_handle_blocks(struct tune_study *s)
{
    while (s->handle_blocks) {
        struct tunep_handle_block *b = s->handle_blocks;
        s->handle_blocks = b->next;
        int pinned = 0;
        for (const struct tune_trial *t = s->abandoned; t && !pinned; t = t->next)
            pinned =
                (uintptr_t)t >= (uintptr_t)b->h && (uintptr_t)t < (uintptr_t)(b->h + HANDLE_BLOCK);
        if (!pinned)
            tunep_free(b); /* else kept with the abandoned handles (keep_abandoned) */
    }
}

/* Removes t from the list that *head starts. Lock held. */
static void unlink_handle(struct tune_trial **head, struct tune_trial *t)
{
    for (struct tune_trial **p = head; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            t->next = NULL;
            return;
        }
}

/* 1 when the trainer says this process can no longer use GPU d (a pool index). */
static int gpu_broken(const struct tune_study *s, int d)
{
    const struct tunep_trainer_type *tt = s->cfg.trainer;
    return tt && s->fn == tt->objective && tt->gpu_broken && tt->gpu_broken(s->gpus->ordinal[d]);
}

/* Takes GPU d out of the pool for the rest of the run, once. Lock held. */
static void disable_gpu(struct tune_study *s, int d)
{
    if (tunep_gpu_pool_disabled(s->gpu_pool, d))
        return;
    tunep_gpu_pool_disable(s->gpu_pool, d);
    tunep_log(TUNE_LOG_WARN,
              "GPU %s had an unrecoverable CUDA error: no more trials are placed on it in this "
              "run (tune resume starts a new process, which can use it again)",
              s->gpus->id[d]);
}

/*
 * A reservation that holds a GPU which broke since its last release (a trial
 * still running there hit a sticky error): the broken ones are disabled and
 * the whole reservation given back. 1 then, else 0. Lock held.
 */
static int drop_broken(struct tune_study *s, int n, const int *gpu)
{
    int any = 0;
    for (int i = 0; i < n; i++)
        if (gpu_broken(s, gpu[i])) {
            disable_gpu(s, gpu[i]);
            any = 1;
        }
    if (any)
        for (int i = 0; i < n; i++)
            tunep_gpu_pool_release(s->gpu_pool, gpu[i], s->gpu_whole ? 1.0 : s->gpu_share,
                                   s->gpu_whole ? 0 : s->gpu_mem_need);
    return any;
}

/*
 * Reserves the next attempt's GPUs into t, waiting while none fit (a trial
 * left running past its timeout still holds its share). 0, or -1 when the
 * run is stopping or the pool failed (fatal). Lock held; nothing to do
 * without placement.
 */
static int take_gpus(struct tune_study *s, struct tune_trial *t)
{
    t->n_gpus = 0;
    t->gpu_ids[0] = '\0';
    if (!s->gpu_pool)
        return 0;
    for (;;) {
        if (s->fatal || atomic_load(&s->stop_requested))
            return -1;
        tune_error e;
        int got = 0;
        tune_status st;
        if (s->gpu_whole) {
            st = tunep_gpu_pool_acquire_whole(s->gpu_pool, s->gpu_whole, t->gpu, &got, &e);
        } else {
            int dev = -1;
            st = tunep_gpu_pool_acquire(s->gpu_pool, s->gpu_share, s->gpu_mem_need, &dev, &e);
            t->gpu[0] = dev;
            got = dev >= 0;
        }
        if (st) {
            tunep_study_set_fatal(s, &e);
            return -1;
        }
        if (got && !drop_broken(s, got, t->gpu)) {
            t->n_gpus = got;
            break;
        }
        if (!got)
            wait_for_work(s);
    }
    size_t len = 0;
    for (int i = 0; i < t->n_gpus; i++) {
        int w = snprintf(t->gpu_ids + len, sizeof t->gpu_ids - len, "%s%s", i ? "," : "",
                         s->gpus->id[t->gpu[i]]);
        len += w > 0 ? (size_t)w : 0;
    }
    return 0;
}

/*
 * Gives back the n GPUs of gpu[] and wakes the workers waiting for them; a
 * GPU that the trainer says is broken in this process (a sticky CUDA error)
 * takes no more trials. Lock held.
 */
static void release_gpus(struct tune_study *s, int n, const int *gpu)
{
    for (int i = 0; i < n; i++) {
        tunep_gpu_pool_release(s->gpu_pool, gpu[i], s->gpu_whole ? 1.0 : s->gpu_share,
                               s->gpu_whole ? 0 : s->gpu_mem_need);
        if (gpu_broken(s, gpu[i]))
            disable_gpu(s, gpu[i]);
    }
    if (n && s->have_work_cond)
        pthread_cond_broadcast(&s->work_cond);
}

/* Spawns worker thread number `slot`. 0, or -1 when no thread could be made. Lock held. */
static int spawn_worker(struct tune_study *s, int slot);

/* A worker thread: its study, its index in s->workers and, under MPI, the remote slot. */
struct worker_arg {
    struct tune_study *s;
    int slot;
    int index;
};

static void *worker_main(void *arg)
{
    struct worker_arg a = *(struct worker_arg *)arg;
    struct tune_study *s = a.s;
    tunep_free(arg);
    int threads = s->mpi_size <= 1 && !s->cfg.isolation_process;
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    struct tune_trial *t = NULL;
    pthread_mutex_lock(&s->lock);
    if (!r) {
        tune_error e;
        tunep_error_set(&e, TUNE_ENOMEM, "out of memory allocating a random stream");
        tunep_study_set_fatal(s, &e);
    }
    while (r) {
        if (!t && !(t = tunep_study_new_handle(s))) {
            tune_error e;
            tunep_error_set(&e, TUNE_ENOMEM, "out of memory starting a trial");
            tunep_study_set_fatal(s, &e);
            break;
        }
        if (take_gpus(s, t))
            break;
        struct tunep_trial_rec *rec = tunep_study_next_trial(s, r, NULL);
        if (!rec) {
            release_gpus(s, t->n_gpus, t->gpu);
            break;
        }
        t->study = s;
        t->rec = rec;
        t->end = TUNEP_END_NONE;
        t->donor = -1;
        t->t0 = tunep_now_monotonic();
        t->ipc_req = t->ipc_resp = -1;
        t->worker = a.index;
        t->next = s->live;
        s->live = t;
        pthread_mutex_unlock(&s->lock);
        tunep_trial_dir_open(s, t);
        if (threads) {
            pthread_once(&exit_guard_once, register_exit_guard);
            current_trial = t;
        }
        tune_status ret = s->mpi_size > 1            ? tunep_run_remote(s, t, a.slot)
                          : s->cfg.isolation_process ? tunep_run_isolated(s, t)
                                                     : s->fn(t, s->fn_data);
        current_trial = NULL;
        tunep_trial_dir_close(t);
        int open = TUNEP_HANDLE_OPEN;
        if (!atomic_compare_exchange_strong(&t->state, &open, TUNEP_HANDLE_CLOSED)) {
            /* Abandoned past trial_timeout_s: the study went on without this
             * thread and may be gone; touch nothing of it. */
            gsl_rng_free(r);
            return NULL;
        }
        pthread_mutex_lock(&s->lock);
        unlink_handle(&s->live, t);
        tunep_study_finish_trial(s, t, ret);
        release_gpus(s, t->n_gpus, t->gpu);
        t->next = s->closed; /* kept, so that a stale pointer finds it CLOSED */
        s->closed = t;
        t = NULL;
    }
    s->workers_running--;
    if (s->have_pool_cond)
        pthread_cond_broadcast(&s->pool_cond);
    pthread_mutex_unlock(&s->lock);
    gsl_rng_free(r);
    return NULL; /* an unused handle stays in its block */
}

static int spawn_worker(struct tune_study *s, int slot)
{
    if (s->n_workers == s->cap_workers) {
        int cap = s->cap_workers ? s->cap_workers * 2 : 8;
        pthread_t *w =
            tunep_realloc(s->workers, (size_t)s->n_workers * sizeof *w, (size_t)cap * sizeof *w);
        if (!w)
            return -1;
        s->workers = w;
        unsigned char *left = tunep_realloc(s->worker_left, (size_t)s->n_workers, (size_t)cap);
        if (!left)
            return -1;
        s->worker_left = left;
        s->cap_workers = cap;
    }
    struct worker_arg *a = tunep_malloc(sizeof *a);
    if (!a)
        return -1;
    *a = (struct worker_arg){s, slot, s->n_workers};
    if (pthread_create(&s->workers[s->n_workers], NULL, worker_main, a) != 0) {
        tunep_free(a);
        return -1;
    }
    s->worker_left[s->n_workers++] = 0;
    s->workers_running++;
    return 0;
}

/* A hung objective may still return this long after trial_timeout_s before it is abandoned. */
#define ABANDON_GRACE_S 1.0

/*
 * Thread mode: fails every trial whose objective runs past trial_timeout_s
 * (plus ABANDON_GRACE_S) without returning, detaches its thread and starts a
 * worker in its place. Lock held.
 */
static void abandon_overdue(struct tune_study *s)
{
    double limit = s->cfg.trial_timeout_s + ABANDON_GRACE_S;
    double now = tunep_now_monotonic();
    struct tune_trial **p = &s->live;
    while (*p) {
        struct tune_trial *t = *p;
        int open = TUNEP_HANDLE_OPEN;
        /* The attempt's time, as reports count it: with its segments before a pause. */
        if (t->rec->time_base + (now - t->t0) < limit ||
            !atomic_compare_exchange_strong(&t->state, &open, TUNEP_HANDLE_ABANDONED)) {
            p = &t->next;
            continue;
        }
        *p = t->next;
        /* The objective's thread may still write its handle: the attempt ends on a copy. */
        struct tune_trial dead = {.study = s,
                                  .rec = t->rec,
                                  .t0 = t->t0,
                                  .end = t->end,
                                  .fail_now = 1,
                                  .ipc_req = -1,
                                  .ipc_resp = -1,
                                  .donor = -1};
        snprintf(dead.error, sizeof dead.error,
                 "timed out after %g s (trial_timeout_s) and abandoned: the objective never "
                 "returned",
                 s->cfg.trial_timeout_s);
        tunep_log(TUNE_LOG_WARN,
                  "trial %lld: the objective runs %g s past trial_timeout_s and does not return; "
                  "its thread is left behind until the process exits",
                  (long long)t->rec->id, ABANDON_GRACE_S);
        tunep_study_finish_trial(s, &dead, TUNE_EFAILED);
        /* The run goes on without the hung objective: its GPUs go to the next trials (the
         * handle, which its thread may still read, keeps saying which they were). */
        release_gpus(s, t->n_gpus, t->gpu);
        t->next = s->abandoned;
        s->abandoned = t;
        pthread_detach(s->workers[t->worker]);
        s->worker_left[t->worker] = 1;
        s->workers_running--;
        if (spawn_worker(s, 0))
            tunep_log(TUNE_LOG_WARN, "cannot start a worker thread in its place: one trial "
                                     "fewer runs at once");
    }
}

tune_status tunep_study_prepare_trainer(struct tune_study *s, int concurrency, int local_rank,
                                        tune_error *err)
{
    const struct tunep_trainer_type *tt = s->cfg.trainer;
    if (!tt || s->fn != tt->objective) {
        /* tune_study_set_objective() replaced it: the objective takes the GPUs asked for. */
        s->gpu_share = s->cfg.resources_gpu;
        return TUNE_OK;
    }
    struct tunep_trainer_env env = {
        .concurrency = concurrency > 0 ? concurrency : 1,
        .local_rank = local_rank,
        .resources_cpu = s->cfg.resources_cpu,
        .resources_gpu = s->cfg.resources_gpu,
        .source = s->cfg.storage,
    };
    tune_status st = tt->prepare ? tt->prepare(s->trainer_state, &env, err) : TUNE_OK;
    if (st)
        return st;
    struct tunep_trial_resources r = {1, 0};
    if (tt->resources)
        tt->resources(s->trainer_state, &env, &r);
    else if (tt->uses_gpu)
        r.gpu_share = s->cfg.resources_gpu;
    s->gpu_share = r.gpu_share;
    tunep_log(TUNE_LOG_INFO, "trainer %s: %d at once, each with %d CPU thread%s%s", tt->name,
              env.concurrency, r.cpu_threads, r.cpu_threads == 1 ? "" : "s",
              r.gpu_share > 0 ? " and a share of a GPU" : "");
    return TUNE_OK;
}

tune_status tunep_study_open_run(struct tune_study *s, tune_error *err)
{
    tune_status st =
        tunep_scheduler_new(&s->cfg.scheduler, s->cfg.space, s->cfg.seed, &s->sched, err);
    if (!st)
        st = tunep_study_searcher_new(s, err);
    if (!st)
        st = open_storage(s, err);
    s->t_start = tunep_now_monotonic();
    s->wall_start = tunep_now_wall();
    return st;
}

static tune_status run_sweep(tune_study *s, tune_error *err);

tune_status tune_study_run(tune_study *s, tune_error *err)
{
    tune_status st = run_sweep(s, err);
    if (s) {
        tunep_store_lock_release(s->store_lock);
        s->store_lock = NULL;
    }
    return st;
}

static tune_status run_sweep(tune_study *s, tune_error *err)
{
    if (!s)
        return tunep_error_set(err, TUNE_EINVAL, "study must not be NULL");
    if (s->readonly)
        return tunep_error_set(err, TUNE_EINVAL, "this study was opened read-only from a folder");
    if (s->ask)
        return tunep_error_set(err, TUNE_EINVAL,
                               "this study is driven by tune_study_ask() and tune_study_tell()");
    if (s->has_run)
        return tunep_error_set(err, TUNE_EINVAL, "this study has already run");
    if (s->ask_shared)
        return tunep_error_set_at(err, TUNE_ECONFIG, s->cfg.storage, 0, 0,
                                  "this experiment is driven by ask and tell (`tune ask`, `tune "
                                  "tell`): its asked trials are open in other hands, so it cannot "
                                  "be run or resumed; continue it with `tune ask %s`",
                                  s->cfg.storage);
    if (!s->fn)
        return tunep_error_set(err, TUNE_ECONFIG,
                               "no objective: set trainer.type in the config or call "
                               "tune_study_set_objective()");
    s->has_run = 1;
    tune_status st;
    /* Data errors (a malformed TSV line) stop the run before anything is written. */
    int concurrency =
        s->cfg.max_concurrent < s->total_trials ? s->cfg.max_concurrent : (int)s->total_trials;
    /* Never more trials at once than the GPUs hold (Ray's resource-bound concurrency). */
    int slots = 0;
    if (s->gpus && s->cfg.resources_gpu > 0 && s->mpi_size <= 1) {
        int w = s->cfg.resources_gpu > 1 ? (int)s->cfg.resources_gpu : 0;
        slots = w ? s->gpus->n / w
                  : s->gpus->n * (TUNEP_GPU_UNITS / tunep_gpu_units(s->cfg.resources_gpu));
        if (slots < concurrency)
            concurrency = slots;
    }
    if ((st = tunep_study_prepare_trainer(s, concurrency, -1, err)))
        return st;
    /* Under MPI the ranks place their own trials (the bert trainer by its rank on the node). */
    slots = 0;
    if (s->gpu_share > 0 && s->mpi_size <= 1 &&
        (st = start_placement(s, s->gpu_share, &slots, err)))
        return st;
    if ((st = tunep_study_open_run(s, err)))
        return st;
    s->have_work_cond = pthread_cond_init(&s->work_cond, NULL) == 0;

    pthread_t flusher;
    int have_flusher = 0;
    if (s->store && pthread_cond_init(&s->flusher_cond, NULL) == 0) {
        have_flusher = pthread_create(&flusher, NULL, flusher_main, s) == 0;
        if (!have_flusher)
            pthread_cond_destroy(&s->flusher_cond);
    }

    /* Under MPI one worker thread per remote slot: the ranks set the concurrency. */
    int64_t n_workers =
        s->mpi_size > 1 ? (int64_t)(s->mpi_size - 1) * s->mpi_per_rank : s->cfg.max_concurrent;
    if (n_workers > s->total_trials)
        n_workers = s->total_trials;
    if (s->gpu_pool && n_workers > slots)
        n_workers = slots;
    int watch = s->mpi_size <= 1 && !s->cfg.isolation_process && s->cfg.trial_timeout_s > 0;
    s->have_pool_cond = pthread_cond_init(&s->pool_cond, NULL) == 0;
    pthread_mutex_lock(&s->lock);
    for (int64_t i = 0; s->have_pool_cond && i < n_workers; i++)
        if (spawn_worker(s, (int)i))
            break;
    if (s->n_workers == 0) {
        /* No thread could be made: this thread is the only worker, unwatched. */
        struct worker_arg *a = tunep_malloc(sizeof *a);
        if (a) {
            *a = (struct worker_arg){s, 0, 0};
            s->workers_running++;
            pthread_mutex_unlock(&s->lock);
            worker_main(a);
            pthread_mutex_lock(&s->lock);
        } else {
            tune_error e;
            tunep_error_set(&e, TUNE_ENOMEM, "out of memory");
            tunep_study_set_fatal(s, &e);
        }
    }
    /* This thread waits for the workers and, in thread mode, watches for hung objectives. */
    while (s->workers_running > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long ns = ts.tv_nsec + 50000000L;
        ts.tv_sec += ns / 1000000000L;
        ts.tv_nsec = ns % 1000000000L;
        pthread_cond_timedwait(&s->pool_cond, &s->lock, &ts);
        if (watch)
            abandon_overdue(s);
    }
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < s->n_workers; i++)
        if (!s->worker_left[i])
            pthread_join(s->workers[i], NULL);
    /* A report that entered through an abandoned handle before it was abandoned
     * is refused under the lock; wait until it has left the study. */
    for (struct tune_trial *t = s->abandoned; t; t = t->next)
        while (atomic_load(&t->busy) > 0)
            nanosleep(&(struct timespec){0, 1000000L}, NULL);
    if (s->have_pool_cond) {
        pthread_cond_destroy(&s->pool_cond);
        s->have_pool_cond = 0;
    }
    if (s->mpi_size > 1)
        tunep_mpi_quit_workers(s);

    if (s->have_work_cond) {
        pthread_cond_destroy(&s->work_cond);
        s->have_work_cond = 0;
    }
    if (have_flusher) {
        pthread_mutex_lock(&s->lock);
        s->flusher_quit = 1;
        pthread_cond_signal(&s->flusher_cond);
        pthread_mutex_unlock(&s->lock);
        pthread_join(flusher, NULL);
        pthread_cond_destroy(&s->flusher_cond);
    }

    if (s->fatal) {
        if (err)
            *err = s->fatal_err;
        return s->fatal_err.code ? s->fatal_err.code : TUNE_ESTORE;
    }
    if (s->store && tunep_store_commit(s->store, err))
        return TUNE_ESTORE;
    st = tunep_study_export_all(s, err);
    if (st)
        return st;
    if (s->fail_fast_hit)
        return tunep_error_set(err, TUNE_EFAILED,
                               "fail_fast: trial %lld ended in ERROR, so the sweep stopped; the "
                               "store is consistent",
                               (long long)s->fail_fast_trial);
    if (atomic_load(&s->stop_requested))
        return tunep_error_set(err, TUNE_EINTERRUPTED,
                               "interrupted: %lld of %lld trials finished; the store is consistent",
                               (long long)(s->counts[TUNE_TRIAL_TERMINATED] +
                                           s->counts[TUNE_TRIAL_STOPPED] +
                                           s->counts[TUNE_TRIAL_ERROR]),
                               (long long)s->total_trials);
    return TUNE_OK;
}
