/*
 * hyperband.c - synchronous HyperBand (Li et al., "Hyperband: A Novel
 * Bandit-Based Approach to Hyperparameter Optimization", JMLR 2018,
 * Algorithm 1), with trials that pause between rounds.
 *
 * New trials fill brackets s = s_max, s_max - 1, ..., 0 of a band, then the
 * brackets of the next band; bracket s holds n trials (hyperband.h has the
 * formulas). In round i every trial of the bracket runs until time_attr
 * reaches r_i and pauses there; once every trial of the round has paused or
 * ended (an ERROR trial leaves the round, one that ended early counts with
 * its last score) the top n_{i+1} resume and the other paused ones are handed
 * to the controller to end as STOPPED (tunep_scheduler_take_stopped()). In the
 * last round (r = max_t) trials run to max_t and end TERMINATED, or, without
 * stop_last_trials, run on until they end by themselves (Ray's option). A
 * bracket that will get no more trials (the study has none left) is closed
 * with the trials it has, and its rounds shrink with it: n_i = floor(m eta^-i)
 * for its m trials, at least 1. A lone survivor goes straight to the last
 * round: pausing it on the way would change nothing.
 *
 * Ray's HyperBandScheduler differs from the paper (brackets filled from s = 0
 * up, rounded n and truncated r); configs/README.md lists the differences.
 * Costs: a trial slot per id, each bracket its member list; a halving sorts
 * its round, O(m log m), so O(s log m) per trial over its life.
 *
 * The file ends with HyperBand's row (scheduler.h): its options as a table,
 * the bracket limit, and the flag that lets BOHB run with it.
 */
#include "schedulers/hyperband.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Relative slack for floors and ceilings of exact ratios computed in doubles. */
#define HB_SLACK 1e-9
#define HB_MAX_N 9007199254740992.0 /* 2^53 */

enum hb_state {
    HB_NONE = 0,
    HB_RUNNING, /* in its round, below r_i */
    HB_PAUSING, /* reached r_i (PAUSE answered), not yet paused by the controller */
    HB_PAUSED,  /* waiting for its round to end */
    HB_QUEUED,  /* promoted, waiting for choose() to resume it */
    HB_DONE,    /* ended by itself (or by max_t) with a score: ranked in its last round */
    HB_GONE,    /* ended without a result (ERROR): left the bracket */
    HB_STOPPED, /* lost a halving: handed to take_stopped() */
    HB_FREE,    /* an ended trial that came back (resume of errored trials): not scheduled */
};

struct hb_trial {
    int64_t bracket; /* -1: unknown */
    int32_t round;
    int32_t state;
    double score; /* at the pause, or the last one when it ended */
};

struct hb_bracket {
    int s;
    int round;    /* current round, 0..s */
    int closed;   /* takes no more trials */
    int finished; /* every round done */
    int64_t band, n_plan;
    int64_t *members; /* trial ids in arrival order */
    size_t n_members, cap;
    int64_t busy; /* members of the current round running, pausing or queued */
};

struct cand {
    double score;
    int64_t id;
};

/* A FIFO of trial ids in a ring buffer whose room is kept >= the number of trials. */
struct ring {
    int64_t *ids;
    size_t head, len;
};

struct tunep_hyperband {
    struct tunep_hyperband_config cfg;
    int s_max;
    struct hb_bracket *brackets;
    size_t n_brackets, cap_brackets;
    struct hb_trial *trials; /* indexed by trial id */
    size_t cap;
    size_t n_known;
    struct ring resume, stopped;
    size_t room; /* of both rings */
    struct cand *scratch;
    size_t scratch_cap;
    int64_t num_stopped;
};

/* ---- the plan ------------------------------------------------------------ */

int tunep_hyperband_s_max(const struct tunep_hyperband_config *c)
{
    double p = 1.0;
    int s = 0;
    while (p * c->reduction_factor <= c->max_t * (1.0 + HB_SLACK)) {
        p *= c->reduction_factor;
        if (++s > TUNEP_HYPERBAND_MAX_S)
            break;
    }
    return s;
}

int64_t tunep_hyperband_bracket_n(const struct tunep_hyperband_config *c, int s_max, int s)
{
    double x = (double)(s_max + 1) * pow(c->reduction_factor, (double)s) / (double)(s + 1);
    double n = ceil(x * (1.0 - HB_SLACK));
    if (!(n < HB_MAX_N))
        return (int64_t)HB_MAX_N;
    return n < 1 ? 1 : (int64_t)n;
}

double tunep_hyperband_round_r(const struct tunep_hyperband_config *c, int s, int i)
{
    if (i >= s)
        return c->max_t;
    /* R / eta^(s - i) keeps the paper's integers exact (81 / 27 = 3). */
    return c->max_t / pow(c->reduction_factor, (double)(s - i));
}

int64_t tunep_hyperband_round_n(const struct tunep_hyperband_config *c, int64_t m, int i)
{
    double x = floor((double)m / pow(c->reduction_factor, (double)i) * (1.0 + HB_SLACK));
    if (x > (double)m)
        x = (double)m;
    return x < 1 ? 1 : (int64_t)x;
}

/* ---- construction ------------------------------------------------------------ */

static tune_status hyperband_new(const void *config, const tune_space *space, uint64_t seed,
                                 void **ret, tune_error *err)
{
    const struct tunep_hyperband_config *cfg = config;
    (void)space;
    (void)seed;
    if (!(cfg->max_t > 0) || !isfinite(cfg->max_t) || !(cfg->reduction_factor > 1) ||
        !isfinite(cfg->reduction_factor))
        return tunep_error_set(err, TUNE_EINVAL, "hyperband: invalid options");
    int s_max = tunep_hyperband_s_max(cfg);
    if (s_max > TUNEP_HYPERBAND_MAX_S)
        return tunep_error_set(err, TUNE_EINVAL, "hyperband: more than %d brackets",
                               TUNEP_HYPERBAND_MAX_S + 1);
    struct tunep_hyperband *h = tunep_calloc(1, sizeof *h);
    if (!h)
        return tunep_error_set(err, TUNE_ENOMEM, "hyperband: out of memory");
    h->cfg = *cfg;
    h->cfg.time_attr[sizeof h->cfg.time_attr - 1] = '\0';
    h->s_max = s_max;
    *ret = h;
    return TUNE_OK;
}

static void hyperband_free(void *self)
{
    struct tunep_hyperband *h = self;
    if (!h)
        return;
    for (size_t b = 0; b < h->n_brackets; b++)
        tunep_free(h->brackets[b].members);
    tunep_free(h->brackets);
    tunep_free(h->trials);
    tunep_free(h->resume.ids);
    tunep_free(h->stopped.ids);
    tunep_free(h->scratch);
    tunep_free(h);
}

/* ---- queues ---------------------------------------------------------------- */

static void ring_push(struct ring *r, size_t room, int64_t id)
{
    r->ids[(r->head + r->len++) % room] = id;
}

static int ring_pop(struct ring *r, size_t room, int64_t *ret)
{
    if (r->len == 0)
        return 0;
    *ret = r->ids[r->head];
    r->head = (r->head + 1) % room;
    r->len--;
    return 1;
}

/* Regrows a ring to `room` entries, unrolled; the old room is `old`. */
static tune_status ring_grow(struct ring *r, size_t old, size_t room)
{
    int64_t *ids = tunep_malloc(room * sizeof *ids);
    if (!ids)
        return TUNE_ENOMEM;
    for (size_t i = 0; i < r->len; i++)
        ids[i] = r->ids[(r->head + i) % old];
    tunep_free(r->ids);
    r->ids = ids;
    r->head = 0;
    return TUNE_OK;
}

/* Room in both rings for `need` trials: each trial sits in each ring at most once. */
static tune_status reserve_room(struct tunep_hyperband *h, size_t need)
{
    if (h->room >= need)
        return TUNE_OK;
    size_t room = h->room ? h->room : 64;
    while (room < need)
        room *= 2;
    if (room > SIZE_MAX / 4 / sizeof(int64_t))
        return TUNE_ENOMEM;
    if (ring_grow(&h->resume, h->room, room) != TUNE_OK ||
        ring_grow(&h->stopped, h->room, room) != TUNE_OK)
        return TUNE_ENOMEM;
    h->room = room;
    return TUNE_OK;
}

/* ---- trials ---------------------------------------------------------------- */

static struct hb_trial *get(const struct tunep_hyperband *h, int64_t id)
{
    if (id < 0 || (uint64_t)id >= h->cap || h->trials[id].bracket < 0)
        return NULL;
    return &h->trials[id];
}

static tune_status reserve_trial(struct tunep_hyperband *h, int64_t id)
{
    if ((uint64_t)id < h->cap)
        return TUNE_OK;
    if ((uint64_t)id >= SIZE_MAX / 4 / sizeof(struct hb_trial))
        return TUNE_ENOMEM;
    size_t cap = h->cap ? h->cap : 64;
    while (cap <= (size_t)id)
        cap *= 2;
    struct hb_trial *t = tunep_realloc(h->trials, h->cap * sizeof *t, cap * sizeof *t);
    if (!t)
        return TUNE_ENOMEM;
    for (size_t i = h->cap; i < cap; i++)
        t[i] = (struct hb_trial){.bracket = -1, .round = 0, .state = HB_NONE, .score = 0};
    h->trials = t;
    h->cap = cap;
    return TUNE_OK;
}

/* The bracket that takes the next trial, created when the last one is closed. */
static tune_status open_bracket(struct tunep_hyperband *h, struct hb_bracket **ret)
{
    if (h->n_brackets > 0 && !h->brackets[h->n_brackets - 1].closed) {
        *ret = &h->brackets[h->n_brackets - 1];
        return TUNE_OK;
    }
    if (h->n_brackets == h->cap_brackets) {
        size_t cap = h->cap_brackets ? h->cap_brackets * 2 : 8;
        struct hb_bracket *b =
            tunep_realloc(h->brackets, h->cap_brackets * sizeof *b, cap * sizeof *b);
        if (!b)
            return TUNE_ENOMEM;
        h->brackets = b;
        h->cap_brackets = cap;
    }
    struct hb_bracket b = {0};
    if (h->n_brackets == 0) {
        b.s = h->s_max;
    } else {
        const struct hb_bracket *last = &h->brackets[h->n_brackets - 1];
        b.s = last->s > 0 ? last->s - 1 : h->s_max;
        b.band = last->band + (last->s == 0);
    }
    b.n_plan = tunep_hyperband_bracket_n(&h->cfg, h->s_max, b.s);
    b.cap = b.n_plan < 16 ? (size_t)b.n_plan : 16;
    b.members = tunep_malloc(b.cap * sizeof *b.members);
    if (!b.members)
        return TUNE_ENOMEM;
    h->brackets[h->n_brackets++] = b;
    *ret = &h->brackets[h->n_brackets - 1];
    return TUNE_OK;
}

static tune_status hyperband_on_trial_add(void *self, int64_t trial_id, double u)
{
    struct tunep_hyperband *h = self;
    (void)u;
    if (trial_id < 0)
        return TUNE_EINVAL;
    struct hb_trial *tr = get(h, trial_id);
    if (tr) {
        /* A retry or a resume: the trial goes on in its round. */
        if (tr->state == HB_PAUSED)
            h->brackets[tr->bracket].busy++;
        if (tr->state == HB_PAUSED || tr->state == HB_RUNNING || tr->state == HB_PAUSING ||
            tr->state == HB_QUEUED)
            tr->state = HB_RUNNING;
        else
            tr->state = HB_FREE; /* it ended: runs outside the brackets */
        return TUNE_OK;
    }
    struct hb_bracket *b;
    if (reserve_trial(h, trial_id) != TUNE_OK || reserve_room(h, h->n_known + 1) != TUNE_OK ||
        open_bracket(h, &b) != TUNE_OK)
        return TUNE_ENOMEM;
    if (b->n_members == b->cap) {
        size_t cap = b->cap * 2;
        int64_t *m = tunep_realloc(b->members, b->cap * sizeof *m, cap * sizeof *m);
        if (!m)
            return TUNE_ENOMEM;
        b->members = m;
        b->cap = cap;
    }
    if (h->scratch_cap < b->n_members + 1) {
        size_t cap = h->scratch_cap ? h->scratch_cap * 2 : 64;
        struct cand *c = tunep_malloc(cap * sizeof *c);
        if (!c)
            return TUNE_ENOMEM;
        tunep_free(h->scratch);
        h->scratch = c;
        h->scratch_cap = cap;
    }
    b->members[b->n_members++] = trial_id;
    b->busy++;
    if ((int64_t)b->n_members >= b->n_plan)
        b->closed = 1;
    tr = &h->trials[trial_id];
    tr->bracket = (int64_t)(b - h->brackets);
    tr->round = 0;
    tr->state = HB_RUNNING;
    tr->score = -HUGE_VAL;
    h->n_known++;
    return TUNE_OK;
}

/* ---- rounds ---------------------------------------------------------------- */

/* Best first; equal scores: the lower trial id first. */
static int cand_cmp(const void *pa, const void *pb)
{
    const struct cand *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* Ends the current round of b: the top n_{i+1} go on, the other paused ones stop. */
static void halve(struct tunep_hyperband *h, struct hb_bracket *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->n_members; i++) {
        const struct hb_trial *tr = &h->trials[b->members[i]];
        if (tr->round == b->round && (tr->state == HB_PAUSED || tr->state == HB_DONE))
            h->scratch[n++] = (struct cand){tr->score, b->members[i]};
    }
    qsort(h->scratch, n, sizeof *h->scratch, cand_cmp);
    int64_t keep = tunep_hyperband_round_n(&h->cfg, (int64_t)b->n_members, b->round + 1);
    int next = keep == 1 ? b->s : b->round + 1;
    for (size_t i = 0; i < n; i++) {
        struct hb_trial *tr = &h->trials[h->scratch[i].id];
        if (tr->state != HB_PAUSED)
            continue; /* ended in this round: ranked, but nothing to resume or stop */
        if ((int64_t)i < keep) {
            tr->state = HB_QUEUED;
            tr->round = next;
            b->busy++;
            ring_push(&h->resume, h->room, h->scratch[i].id);
        } else {
            tr->state = HB_STOPPED;
            h->num_stopped++;
            ring_push(&h->stopped, h->room, h->scratch[i].id);
        }
    }
    b->round = next;
    if (b->busy == 0)
        b->finished = 1; /* nobody left to run: the survivors all ended already */
}

static void check_round(struct tunep_hyperband *h, struct hb_bracket *b)
{
    while (!b->finished && b->closed && b->busy == 0) {
        if (b->round >= b->s)
            b->finished = 1;
        else
            halve(h, b);
    }
}

static enum tunep_decision hyperband_on_result(void *self, int64_t trial_id, int has_t, double t,
                                               double score, int64_t n_waiting)
{
    struct tunep_hyperband *h = self;
    (void)n_waiting;
    struct hb_trial *tr = get(h, trial_id);
    if (tr && tr->state == HB_PAUSING)
        return TUNEP_PAUSE; /* already told */
    if (!tr || !has_t || isnan(t))
        return TUNEP_CONTINUE;
    if (isnan(score))
        score = -HUGE_VAL;
    int stop_last = h->cfg.stop_last_trials;
    switch (tr->state) {
        case HB_FREE: return stop_last && t >= h->cfg.max_t ? TUNEP_TERMINATE : TUNEP_CONTINUE;
        case HB_RUNNING: break;
        default: return TUNEP_CONTINUE;
    }
    const struct hb_bracket *b = &h->brackets[tr->bracket];
    tr->score = score;
    /* max_t is the last round's r: a trial there (or one that got there early) is done. */
    if (stop_last && t >= h->cfg.max_t)
        return TUNEP_TERMINATE;
    if (tr->round >= b->s)
        return TUNEP_CONTINUE; /* last round without stop_last_trials: Ray lets it run */
    if (t >= tunep_hyperband_round_r(&h->cfg, b->s, tr->round)) {
        tr->state = HB_PAUSING;
        return TUNEP_PAUSE;
    }
    return TUNEP_CONTINUE;
}

static void hyperband_on_trial_paused(void *self, int64_t trial_id)
{
    struct tunep_hyperband *h = self;
    struct hb_trial *tr = get(h, trial_id);
    if (!tr || tr->state != HB_PAUSING)
        return;
    struct hb_bracket *b = &h->brackets[tr->bracket];
    tr->state = HB_PAUSED;
    b->busy--;
    check_round(h, b);
}

static void hyperband_on_trial_complete(void *self, int64_t trial_id, int has_result, double last_t,
                                        double last_score)
{
    struct tunep_hyperband *h = self;
    (void)last_t;
    struct hb_trial *tr = get(h, trial_id);
    if (!tr)
        return;
    struct hb_bracket *b = &h->brackets[tr->bracket];
    switch (tr->state) {
        case HB_RUNNING:
        case HB_PAUSING:
        case HB_QUEUED:
            b->busy--;
            if (has_result) {
                tr->state = HB_DONE;
                tr->score = isnan(last_score) ? -HUGE_VAL : last_score;
            } else {
                tr->state = HB_GONE;
            }
            check_round(h, b);
            break;
        case HB_PAUSED: tr->state = HB_DONE; break; /* ended while paused: keeps its score */
        case HB_FREE: tr->state = HB_GONE; break;
        default: break;
    }
}

static enum tunep_next hyperband_choose(void *self, int new_left, int64_t n_running,
                                        int64_t *ret_id)
{
    struct tunep_hyperband *h = self;
    if (!new_left && h->n_brackets > 0) {
        /* No trial will join the last bracket: close it with the trials it has. */
        struct hb_bracket *last = &h->brackets[h->n_brackets - 1];
        if (!last->closed) {
            last->closed = 1;
            check_round(h, last);
        }
    }
    int64_t id;
    while (ring_pop(&h->resume, h->room, &id)) {
        struct hb_trial *tr = &h->trials[id];
        if (tr->state != HB_QUEUED)
            continue; /* ended while queued */
        tr->state = HB_RUNNING;
        if (ret_id)
            *ret_id = id;
        return TUNEP_NEXT_RESUME;
    }
    if (new_left)
        return TUNEP_NEXT_NEW;
    return n_running > 0 ? TUNEP_NEXT_WAIT : TUNEP_NEXT_NEW;
}

static int hyperband_take_stopped(void *self, int64_t *ret_id)
{
    struct tunep_hyperband *h = self;
    int64_t id;
    if (!ring_pop(&h->stopped, h->room, &id))
        return 0;
    if (ret_id)
        *ret_id = id;
    return 1;
}

static void hyperband_describe(const void *self, double sign, struct tunep_buf *buf)
{
    const struct tunep_hyperband *h = self;
    enum { MAX_LINES = 8 };
    size_t shown = 0, more = 0;
    (void)sign; /* no cut-offs to show: a round ranks its trials only once it is complete */
    tunep_buf_printf(buf, "HyperBand: s_max %d, brackets %zu, stopped %lld\n", h->s_max,
                     h->n_brackets, (long long)h->num_stopped);
    for (size_t i = 0; i < h->n_brackets; i++) {
        const struct hb_bracket *b = &h->brackets[i];
        if (b->finished)
            continue;
        if (shown == MAX_LINES) {
            more++;
            continue;
        }
        int64_t running = 0, paused = 0, queued = 0;
        for (size_t j = 0; j < b->n_members; j++) {
            int st = h->trials[b->members[j]].state;
            running += st == HB_RUNNING || st == HB_PAUSING;
            paused += st == HB_PAUSED;
            queued += st == HB_QUEUED;
        }
        char r[64];
        tunep_format_double(r, sizeof r, tunep_hyperband_round_r(&h->cfg, b->s, b->round));
        tunep_buf_printf(buf,
                         "HyperBand: band %lld bracket s=%d: round %d of %d (r %s), %zu trials%s: "
                         "%lld running, %lld paused, %lld to resume\n",
                         (long long)b->band, b->s, b->round + 1, b->s + 1, r, b->n_members,
                         b->closed ? "" : " so far", (long long)running, (long long)paused,
                         (long long)queued);
        shown++;
    }
    if (more)
        tunep_buf_printf(buf, "HyperBand: %zu more brackets running\n", more);
}

/* ---- inspection ------------------------------------------------------------ */

int64_t tunep_hyperband_bracket_count(const struct tunep_hyperband *h)
{
    return (int64_t)h->n_brackets;
}

int tunep_hyperband_bracket_info(const struct tunep_hyperband *h, int64_t bracket, int *ret_s,
                                 int64_t *ret_band, int64_t *ret_trials, int *ret_round)
{
    if (bracket < 0 || (uint64_t)bracket >= h->n_brackets)
        return 0;
    const struct hb_bracket *b = &h->brackets[bracket];
    *ret_s = b->s;
    *ret_band = b->band;
    *ret_trials = (int64_t)b->n_members;
    *ret_round = b->finished ? b->s + 1 : b->round;
    return 1;
}

int64_t tunep_hyperband_trial_bracket(const struct tunep_hyperband *h, int64_t trial_id)
{
    const struct hb_trial *tr = get(h, trial_id);
    return tr ? tr->bracket : -1;
}

int tunep_hyperband_trial_round(const struct tunep_hyperband *h, int64_t trial_id)
{
    const struct hb_trial *tr = get(h, trial_id);
    return tr ? tr->round : -1;
}

/* ---- the config and the row ------------------------------------------------ */

enum { O_TIME_ATTR, O_MAX_T, O_RF, O_STOP_LAST, O_COUNT };

#define ROW(name_, type_, field, lo_, hi_, def_)                                                   \
    TUNEP_OPT_ROW(name_, type_, struct tunep_hyperband_config, field, lo_, hi_, def_)

/* Ray's HyperBandScheduler defaults (R = 81, eta = 3: the paper's example). */
static const struct tunep_option hyperband_options[] = {
    [O_TIME_ATTR] = {.name = "time_attr",
                     .type = TUNEP_OPT_NAME,
                     .offset = offsetof(struct tunep_hyperband_config, time_attr),
                     .hi = sizeof(((struct tunep_hyperband_config *)0)->time_attr),
                     .def_text = "training_iteration"},
    [O_MAX_T] = ROW("max_t", TUNEP_OPT_REAL_GT, max_t, 0, HUGE_VAL, 81),
    [O_RF] = ROW("reduction_factor", TUNEP_OPT_REAL_GT, reduction_factor, 1, HUGE_VAL, 3),
    [O_STOP_LAST] = ROW("stop_last_trials", TUNEP_OPT_BOOL, stop_last_trials, 0, 1, 1),
    [O_COUNT] = {0},
};

/* A band of at most TUNEP_HYPERBAND_MAX_S + 1 brackets. */
static tune_status hyperband_check(const void *config, uint64_t given, struct tunep_opt_error *e)
{
    if (tunep_hyperband_s_max(config) <= TUNEP_HYPERBAND_MAX_S)
        return TUNE_OK;
    return tunep_opt_fail(e, (given >> O_RF) & 1u ? "reduction_factor" : "max_t", 0,
                          "more than %d brackets: log(max_t) / log(reduction_factor) must be < %d",
                          TUNEP_HYPERBAND_MAX_S + 1, TUNEP_HYPERBAND_MAX_S + 1);
}

static const char *hyperband_time_attr(const void *config)
{
    return ((const struct tunep_hyperband_config *)config)->time_attr;
}

static double hyperband_max_t(const void *config)
{
    return ((const struct tunep_hyperband_config *)config)->max_t;
}

const struct tunep_scheduler_type tunep_hyperband_type = {
    .name = "hyperband",
    .title = "HyperBand",
    .flags = TUNEP_SCHEDULER_SYNC_BRACKETS,
    .options = hyperband_options,
    .config_size = sizeof(struct tunep_hyperband_config),
    .check = hyperband_check,
    .time_attr = hyperband_time_attr,
    .max_t = hyperband_max_t,
    .create = hyperband_new,
    .free = hyperband_free,
    .on_trial_add = hyperband_on_trial_add,
    .on_result = hyperband_on_result,
    .on_trial_complete = hyperband_on_trial_complete,
    .on_trial_paused = hyperband_on_trial_paused,
    .choose = hyperband_choose,
    .take_stopped = hyperband_take_stopped,
    .describe = hyperband_describe,
};

struct tunep_hyperband *tunep_scheduler_hyperband(struct tunep_scheduler *s)
{
    return tunep_scheduler_type_of(s) == &tunep_hyperband_type ? tunep_scheduler_state(s) : NULL;
}
