/*
 * asha.c - asynchronous successive halving, with the semantics of Ray Tune's
 * AsyncHyperBandScheduler (ray/tune/schedulers/async_hyperband.py).
 *
 * Bracket s has rungs at grace * rf^(k+s), k = MAX_RUNGS-1 .. 0, kept in
 * descending milestone order as Ray keeps them. A trial that reaches a rung it
 * has no value recorded at is stopped when its score is below the
 * (1 - 1/rf) quantile of the values already there (the first arrival always
 * continues); its score is recorded either way. Reference: Li et al., "A
 * System for Massively Parallel Hyperparameter Tuning", MLSys 2020.
 *
 * Invariants that keep 10^5+ trials cheap: trial ids index a dense slot array
 * holding the bracket and a bitmask of the rungs recorded at; each rung keeps
 * its values split in two heaps around numpy's percentile position (the lo+1
 * smallest in a max-heap, the rest in a min-heap), so a record is O(log n) and
 * a cut-off O(1). Heap room is reserved when a trial joins a bracket, so
 * on_result never allocates and cannot fail.
 *
 * The promotion variant ("variant": "promotion") is the paper's Algorithm 2
 * instead: a trial pauses at every rung it reaches (its score recorded
 * there), and a free worker resumes, from the highest rung down, a paused
 * trial in the top floor(n_k / rf) of the n_k recorded at its rung that was
 * not promoted yet; only when there is none does a new trial start. Each rung
 * keeps its entries split at that top: a min-heap of the top, a max-heap of
 * the rest, and a max-heap of paused trials that entered the top (checked
 * lazily when popped), so a record or a promotion is O(log n).
 *
 * The file ends with ASHA's row (scheduler.h): its options as a table with
 * Ray's names, defaults and asserts, the cross-key rules, and what the
 * config and the report learn about it (grace_period, rungs, a summary).
 */
#include "schedulers/asha.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* np.e as a double. */
#define ASHA_E 2.718281828459045

/*
 * One rung's values in one buffer of `cap` doubles: the low heap (the lo+1
 * smallest values, negated so that both heaps are min-heaps) grows from the
 * front, the high heap from the back (element i at buf[cap - 1 - i]).
 */
struct rung {
    double milestone;
    double *buf;
    size_t cap;
    size_t n_low, n_high;
    /* promotion variant only: entries split at the top floor(n_rec / rf) */
    struct pentry *top;   /* min-heap: the worst of the top at the root */
    struct pentry *rest;  /* max-heap: the best of the others at the root */
    struct pentry *ready; /* max-heap: paused trials seen in the top (stale ones skipped) */
    size_t n_top, n_rest, n_ready, pcap;
    size_t n_rec, promoted, paused;
};

struct bracket {
    int rung_count;
    struct rung *rungs; /* descending milestone */
    size_t assigned;    /* trials ever assigned: an upper bound on any rung's count */
};

struct slot {
    int32_t bracket;   /* -1: never added */
    int32_t active;    /* 0 once the trial completed */
    uint64_t recorded; /* bit k: a value is recorded at rungs[k] of the bracket */
    /* promotion variant only */
    uint64_t in_top, in_ready; /* bit k: its entry at rungs[k] is in the top / the ready heap */
    int32_t pstate;            /* enum pstate */
    int32_t cur;               /* the rung it paused at last (index), -1 before any */
    double cur_score;          /* its score recorded there */
};

/* A trial's place in the promotion variant. */
enum pstate {
    PS_RUNNING = 0,
    PS_PAUSING = 1, /* PAUSE answered, the controller has not paused it yet */
    PS_PAUSED = 2,
    PS_DONE = 3,
};

/* One recorded value in the promotion variant. */
struct pentry {
    double score;
    int64_t id;
};

struct tunep_asha {
    struct tunep_asha_config cfg;
    double q; /* numpy's quantile: ((1 - 1/rf) * 100) / 100 */
    int bracket_count;
    struct bracket *brackets;
    double *cdf; /* bracket choice, Ray's softmax over rung counts */
    struct slot *slots;
    size_t slot_cap;
    int64_t num_stopped;
};

/* ---- rung heaps ----------------------------------------------------------- */

static double *heap_at(struct rung *r, int high, size_t i)
{
    return high ? &r->buf[r->cap - 1 - i] : &r->buf[i];
}

static double heap_top(const struct rung *r, int high)
{
    return high ? r->buf[r->cap - 1] : r->buf[0];
}

static void heap_push(struct rung *r, int high, double v)
{
    size_t i = high ? r->n_high++ : r->n_low++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        double pv = *heap_at(r, high, parent);
        if (!(v < pv))
            break;
        *heap_at(r, high, i) = pv;
        i = parent;
    }
    *heap_at(r, high, i) = v;
}

static double heap_pop(struct rung *r, int high)
{
    size_t n = high ? --r->n_high : --r->n_low;
    double top = *heap_at(r, high, 0);
    double v = *heap_at(r, high, n);
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && *heap_at(r, high, c + 1) < *heap_at(r, high, c))
            c++;
        double cv = *heap_at(r, high, c);
        if (!(cv < v))
            break;
        *heap_at(r, high, i) = cv;
        i = c;
    }
    if (n > 0)
        *heap_at(r, high, i) = v;
    return top;
}

static size_t rung_count_values(const struct rung *r)
{
    return r->n_low + r->n_high;
}

/* The rung's cut-off: numpy.percentile(values, q * 100). The rung is not empty. */
static double rung_cutoff(const struct rung *r, double q)
{
    size_t lo;
    double gamma;
    tunep_percentile_position(rung_count_values(r), q, &lo, &gamma);
    double a = -heap_top(r, 0);
    if (gamma == 0.0)
        return a;
    return tunep_percentile_lerp(a, heap_top(r, 1), gamma);
}

/* Records v; room was reserved (cap >= count + 1). */
static void rung_insert(struct rung *r, double q, double v)
{
    size_t lo;
    double gamma;
    if (r->n_low > 0 && v <= -heap_top(r, 0))
        heap_push(r, 0, -v);
    else
        heap_push(r, 1, v);
    tunep_percentile_position(rung_count_values(r), q, &lo, &gamma);
    while (r->n_low > lo + 1)
        heap_push(r, 1, -heap_pop(r, 0));
    while (r->n_low < lo + 1)
        heap_push(r, 0, -heap_pop(r, 1));
}

/* Grows the buffer to hold at least `need` values, moving the high heap to the new end. */
static tune_status rung_reserve(struct rung *r, size_t need)
{
    if (r->cap >= need)
        return TUNE_OK;
    size_t cap = r->cap ? r->cap : 16;
    while (cap < need) {
        if (cap > SIZE_MAX / 2 / sizeof(double))
            return TUNE_ENOMEM;
        cap *= 2;
    }
    double *buf = tunep_malloc(cap * sizeof *buf);
    if (!buf)
        return TUNE_ENOMEM;
    if (r->n_low)
        memcpy(buf, r->buf, r->n_low * sizeof *buf);
    if (r->n_high)
        memcpy(buf + cap - r->n_high, r->buf + r->cap - r->n_high, r->n_high * sizeof *buf);
    tunep_free(r->buf);
    r->buf = buf;
    r->cap = cap;
    return TUNE_OK;
}

/* ---- promotion rungs --------------------------------------------------------- */

/* Ranking of recorded values: the higher score, then the lower trial id (deterministic). */
static int better(struct pentry a, struct pentry b)
{
    return a.score > b.score || (a.score == b.score && a.id < b.id);
}

/* above(a, b): a belongs nearer the root; worst_first for the min-heap of the top. */
static int above(struct pentry a, struct pentry b, int worst_first)
{
    return worst_first ? better(b, a) : better(a, b);
}

static void pheap_push(struct pentry *h, size_t *n, struct pentry e, int worst_first)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!above(e, h[parent], worst_first))
            break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = e;
}

static struct pentry pheap_pop(struct pentry *h, size_t *n, int worst_first)
{
    struct pentry top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && above(h[c + 1], h[c], worst_first))
            c++;
        if (!above(h[c], last, worst_first))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = last;
    return top;
}

static tune_status prung_reserve(struct rung *r, size_t need)
{
    if (r->pcap >= need)
        return TUNE_OK;
    size_t cap = r->pcap ? r->pcap : 16;
    while (cap < need) {
        if (cap > SIZE_MAX / 2 / sizeof(struct pentry))
            return TUNE_ENOMEM;
        cap *= 2;
    }
    struct pentry *h[3] = {r->top, r->rest, r->ready};
    for (int i = 0; i < 3; i++) {
        struct pentry *p = tunep_realloc(h[i], r->pcap * sizeof *p, cap * sizeof *p);
        if (!p)
            return TUNE_ENOMEM; /* the arrays grown so far stay valid with the old count */
        h[i] = p;
        if (i == 0)
            r->top = p;
        else if (i == 1)
            r->rest = p;
        else
            r->ready = p;
    }
    r->pcap = cap;
    return TUNE_OK;
}

/* A paused trial whose entry at rungs[k] is in the top becomes promotable. */
static void mark_ready(struct tunep_asha *a, struct rung *r, int k, int64_t id)
{
    struct slot *sl = &a->slots[id];
    uint64_t bit = (uint64_t)1 << k;
    if (sl->pstate != PS_PAUSED || sl->cur != k || !(sl->in_top & bit) || (sl->in_ready & bit))
        return;
    sl->in_ready |= bit;
    pheap_push(r->ready, &r->n_ready, (struct pentry){sl->cur_score, id}, 0);
}

/* Records id's score at rungs[k] and keeps the top at floor(n_rec / rf) entries. */
static void prung_insert(struct tunep_asha *a, struct rung *r, int k, int64_t id, double score)
{
    uint64_t bit = (uint64_t)1 << k;
    struct pentry e = {score, id};
    r->n_rec++;
    size_t m = (size_t)floor((double)r->n_rec / a->cfg.reduction_factor);
    if (r->n_top > 0 && better(e, r->top[0])) {
        pheap_push(r->top, &r->n_top, e, 1);
        a->slots[id].in_top |= bit;
    } else {
        pheap_push(r->rest, &r->n_rest, e, 0);
    }
    while (r->n_top > m) {
        struct pentry x = pheap_pop(r->top, &r->n_top, 1);
        a->slots[x.id].in_top &= ~bit;
        pheap_push(r->rest, &r->n_rest, x, 0);
    }
    while (r->n_top < m && r->n_rest > 0) {
        struct pentry x = pheap_pop(r->rest, &r->n_rest, 0);
        a->slots[x.id].in_top |= bit;
        pheap_push(r->top, &r->n_top, x, 1);
        mark_ready(a, r, k, x.id);
    }
}

/* ---- construction ---------------------------------------------------------- */

int tunep_asha_rung_count(const struct tunep_asha_config *c, int s)
{
    /* MAX_RUNGS = int(np.log(max_t / min_t) / np.log(self.rf) - s + 1) */
    double x = log(c->max_t / c->grace_period) / log(c->reduction_factor) - (double)s + 1.0;
    if (!(x >= 1.0))
        return 0; /* int() truncates toward 0; NaN (bad options) gives no rungs */
    if (x >= (double)(TUNEP_ASHA_MAX_RUNGS + 1))
        return TUNEP_ASHA_MAX_RUNGS + 1;
    return (int)x;
}

static void asha_free(void *self)
{
    struct tunep_asha *a = self;
    if (!a)
        return;
    if (a->brackets) {
        for (int b = 0; b < a->bracket_count; b++) {
            struct bracket *br = &a->brackets[b];
            for (int k = 0; br->rungs && k < br->rung_count; k++) {
                tunep_free(br->rungs[k].buf);
                tunep_free(br->rungs[k].top);
                tunep_free(br->rungs[k].rest);
                tunep_free(br->rungs[k].ready);
            }
            tunep_free(br->rungs);
        }
    }
    tunep_free(a->brackets);
    tunep_free(a->cdf);
    tunep_free(a->slots);
    tunep_free(a);
}

static tune_status asha_new(const void *config, const tune_space *space, uint64_t seed, void **ret,
                            tune_error *err)
{
    const struct tunep_asha_config *cfg = config;
    (void)space;
    (void)seed;
    /* Ray's asserts, for callers that skipped the config parser. */
    if (!(cfg->max_t > 0) || !(cfg->grace_period > 0) || !(cfg->grace_period <= cfg->max_t) ||
        !(cfg->reduction_factor > 1) || cfg->brackets < 1 ||
        cfg->brackets > TUNEP_ASHA_MAX_BRACKETS)
        return tunep_error_set(err, TUNE_EINVAL, "asha: invalid options");
    if (tunep_asha_rung_count(cfg, 0) > TUNEP_ASHA_MAX_RUNGS)
        return tunep_error_set(err, TUNE_EINVAL, "asha: more than %d rungs", TUNEP_ASHA_MAX_RUNGS);

    struct tunep_asha *a = tunep_calloc(1, sizeof *a);
    if (!a)
        goto oom;
    a->cfg = *cfg;
    a->cfg.time_attr[sizeof a->cfg.time_attr - 1] = '\0';
    /* Ray: np.nanpercentile(values, (1 - 1 / self.rf) * 100), and numpy divides by 100. */
    a->q = ((1.0 - 1.0 / cfg->reduction_factor) * 100.0) / 100.0;
    a->bracket_count = cfg->brackets;
    a->brackets = tunep_calloc((size_t)cfg->brackets, sizeof *a->brackets);
    a->cdf = tunep_calloc((size_t)cfg->brackets, sizeof *a->cdf);
    if (!a->brackets || !a->cdf)
        goto oom;

    int size_max = 0;
    for (int s = 0; s < a->bracket_count; s++) {
        struct bracket *br = &a->brackets[s];
        br->rung_count = tunep_asha_rung_count(cfg, s);
        if (br->rung_count > size_max)
            size_max = br->rung_count;
        if (br->rung_count == 0)
            continue;
        br->rungs = tunep_calloc((size_t)br->rung_count, sizeof *br->rungs);
        if (!br->rungs)
            goto oom;
        /* [(min_t * self.rf ** (k + s), {}) for k in reversed(range(MAX_RUNGS))] */
        for (int i = 0; i < br->rung_count; i++) {
            int k = br->rung_count - 1 - i;
            br->rungs[i].milestone =
                cfg->grace_period * pow(cfg->reduction_factor, (double)(k + s));
        }
    }

    /* probs = np.e ** (sizes - sizes.max()); p = probs / probs.sum();
     * np.random.choice: cdf = p.cumsum(); cdf /= cdf[-1]; searchsorted(cdf, u, 'right') */
    double sum = 0.0;
    for (int s = 0; s < a->bracket_count; s++) {
        a->cdf[s] = pow(ASHA_E, (double)(a->brackets[s].rung_count - size_max));
        sum += a->cdf[s];
    }
    double acc = 0.0;
    for (int s = 0; s < a->bracket_count; s++) {
        acc += a->cdf[s] / sum;
        a->cdf[s] = acc;
    }
    for (int s = 0; s < a->bracket_count; s++)
        a->cdf[s] /= acc;

    *ret = a;
    return TUNE_OK;
oom:
    asha_free(a);
    return tunep_error_set(err, TUNE_ENOMEM, "asha: out of memory");
}

/* ---- events ---------------------------------------------------------------- */

static struct slot *find_slot(struct tunep_asha *a, int64_t trial_id)
{
    if (trial_id < 0 || (uint64_t)trial_id >= a->slot_cap)
        return NULL;
    struct slot *sl = &a->slots[trial_id];
    return sl->bracket >= 0 ? sl : NULL;
}

static int choose_bracket(const struct tunep_asha *a, double u)
{
    for (int s = 0; s < a->bracket_count; s++)
        if (a->cdf[s] > u)
            return s;
    return a->bracket_count - 1;
}

static tune_status asha_on_trial_add(void *self, int64_t trial_id, double u)
{
    struct tunep_asha *a = self;
    if (trial_id < 0)
        return TUNE_EINVAL;
    struct slot *sl = find_slot(a, trial_id);
    if (sl) {
        /* A retry (or a resume): same bracket, same recorded values. */
        if (sl->pstate == PS_PAUSED && sl->cur >= 0)
            a->brackets[sl->bracket].rungs[sl->cur].paused--;
        sl->active = 1;
        sl->pstate = PS_RUNNING;
        return TUNE_OK;
    }
    if ((uint64_t)trial_id >= a->slot_cap) {
        if ((uint64_t)trial_id >= SIZE_MAX / 2 / sizeof(struct slot))
            return TUNE_ENOMEM;
        size_t cap = a->slot_cap ? a->slot_cap : 64;
        while (cap <= (size_t)trial_id)
            cap *= 2;
        struct slot *slots =
            tunep_realloc(a->slots, a->slot_cap * sizeof *slots, cap * sizeof *slots);
        if (!slots)
            return TUNE_ENOMEM;
        for (size_t i = a->slot_cap; i < cap; i++)
            slots[i] = (struct slot){.bracket = -1, .cur = -1};
        a->slots = slots;
        a->slot_cap = cap;
    }
    int s = choose_bracket(a, u);
    struct bracket *br = &a->brackets[s];
    for (int k = 0; k < br->rung_count; k++) {
        if (a->cfg.promotion ? prung_reserve(&br->rungs[k], br->assigned + 1) != TUNE_OK
                             : rung_reserve(&br->rungs[k], br->assigned + 1) != TUNE_OK)
            return TUNE_ENOMEM;
    }
    br->assigned++;
    sl = &a->slots[trial_id];
    *sl = (struct slot){.bracket = s, .active = 1, .cur = -1, .pstate = PS_RUNNING};
    return TUNE_OK;
}

/* Ray's _Bracket.on_result. */
static enum tunep_decision bracket_on_result(struct tunep_asha *a, struct slot *sl, double t,
                                             double score)
{
    struct bracket *br = &a->brackets[sl->bracket];
    enum tunep_decision action = TUNEP_CONTINUE;
    for (int k = 0; k < br->rung_count; k++) {
        struct rung *r = &br->rungs[k];
        uint64_t bit = (uint64_t)1 << k;
        if (t >= r->milestone && (sl->recorded & bit) && !a->cfg.stop_last_trials)
            break;
        if (t < r->milestone || (sl->recorded & bit))
            continue;
        if (rung_count_values(r) > 0 && score < rung_cutoff(r, a->q))
            action = TUNEP_STOP;
        rung_insert(r, a->q, score);
        sl->recorded |= bit;
        break;
    }
    return action;
}

/* The highest rung (lowest index) that t reached, or rung_count when none. */
static int rung_reached(const struct bracket *br, double t)
{
    int k = 0;
    while (k < br->rung_count && !(t >= br->rungs[k].milestone))
        k++;
    return k;
}

/* Records a promotion-variant trial at the highest rung t reached, unless it is recorded
 * there or higher already. Returns the rung, or -1 when nothing was recorded. */
static int promo_record(struct tunep_asha *a, struct slot *sl, int64_t id, double t, double score)
{
    struct bracket *br = &a->brackets[sl->bracket];
    int k = rung_reached(br, t);
    if (k == br->rung_count)
        return -1;
    uint64_t at_or_above = k >= 63 ? ~(uint64_t)0 : ((uint64_t)1 << (k + 1)) - 1;
    if (sl->recorded & at_or_above)
        return -1; /* bits 0..k: this rung or a higher one */
    sl->recorded |= (uint64_t)1 << k;
    sl->cur = k;
    sl->cur_score = score;
    prung_insert(a, &br->rungs[k], k, id, score);
    return k;
}

/* Promotion variant: pause at each new rung; max_t ends the trial. */
static enum tunep_decision promo_on_result(struct tunep_asha *a, struct slot *sl, int64_t id,
                                           double t, double score)
{
    if (sl->pstate == PS_PAUSING)
        return TUNEP_PAUSE; /* already told */
    if (sl->pstate != PS_RUNNING)
        return TUNEP_CONTINUE;
    if (t >= a->cfg.max_t && a->cfg.stop_last_trials) {
        a->num_stopped++;
        return TUNEP_TERMINATE; /* its last result is recorded when it completes */
    }
    int k = promo_record(a, sl, id, t, score);
    if (k < 0)
        return TUNEP_CONTINUE;
    if (a->brackets[sl->bracket].rungs[k].milestone >= a->cfg.max_t)
        return TUNEP_CONTINUE; /* past max_t without stop_last_trials: nothing to wait for */
    sl->pstate = PS_PAUSING;
    return TUNEP_PAUSE;
}

static enum tunep_decision asha_on_result(void *self, int64_t trial_id, int has_t, double t,
                                          double score, int64_t n_waiting)
{
    struct tunep_asha *a = self;
    (void)n_waiting;
    if (!has_t)
        return TUNEP_CONTINUE;
    if (a->cfg.promotion) {
        struct slot *sl = find_slot(a, trial_id);
        if (!sl || !sl->active || isnan(t))
            return TUNEP_CONTINUE;
        return promo_on_result(a, sl, trial_id, t, isnan(score) ? -HUGE_VAL : score);
    }
    if (isnan(score))
        score = -HUGE_VAL; /* the controller does this already; never let NaN into a heap */
    if (t >= a->cfg.max_t && a->cfg.stop_last_trials) {
        a->num_stopped++;
        return TUNEP_TERMINATE;
    }
    struct slot *sl = find_slot(a, trial_id);
    if (!sl || !sl->active)
        return TUNEP_CONTINUE;
    enum tunep_decision d = bracket_on_result(a, sl, t, score);
    if (d == TUNEP_STOP)
        a->num_stopped++;
    return d;
}

static void asha_on_trial_complete(void *self, int64_t trial_id, int has_result, double last_t,
                                   double last_score)
{
    struct tunep_asha *a = self;
    struct slot *sl = find_slot(a, trial_id);
    if (!sl || !sl->active)
        return;
    double score = isnan(last_score) ? -HUGE_VAL : last_score;
    if (a->cfg.promotion) {
        /* Ray's on_trial_complete: the final result may fill a rung; a paused trial that the
         * controller ends (the study is over) keeps its entry but is no longer promotable. */
        if (sl->pstate == PS_PAUSED && sl->cur >= 0)
            a->brackets[sl->bracket].rungs[sl->cur].paused--;
        if (has_result && sl->pstate == PS_RUNNING && !isnan(last_t))
            (void)promo_record(a, sl, trial_id, last_t, score);
        sl->pstate = PS_DONE;
    } else if (has_result) {
        (void)bracket_on_result(a, sl, last_t, score);
    }
    sl->active = 0;
}

static void asha_on_trial_paused(void *self, int64_t trial_id)
{
    struct tunep_asha *a = self;
    struct slot *sl = find_slot(a, trial_id);
    if (!a->cfg.promotion || !sl || !sl->active || sl->pstate != PS_PAUSING)
        return;
    struct rung *r = &a->brackets[sl->bracket].rungs[sl->cur];
    sl->pstate = PS_PAUSED;
    r->paused++;
    mark_ready(a, r, sl->cur, trial_id);
}

static enum tunep_next asha_choose(void *self, int new_left, int64_t n_running, int64_t *ret_id)
{
    struct tunep_asha *a = self;
    if (!a->cfg.promotion)
        return TUNEP_NEXT_NEW;
    /* Algorithm 2's get_job: from the top rung down. Rung index k has the same milestone
     * in every bracket (bracket s has s fewer rungs, starting s rungs higher). */
    int max_rungs = 0;
    for (int b = 0; b < a->bracket_count; b++)
        if (a->brackets[b].rung_count > max_rungs)
            max_rungs = a->brackets[b].rung_count;
    for (int k = 0; k < max_rungs; k++) {
        uint64_t bit = (uint64_t)1 << k;
        for (int b = 0; b < a->bracket_count; b++) {
            if (k >= a->brackets[b].rung_count)
                continue;
            struct rung *r = &a->brackets[b].rungs[k];
            while (r->n_ready > 0) {
                struct pentry e = pheap_pop(r->ready, &r->n_ready, 0);
                struct slot *sl = &a->slots[e.id];
                sl->in_ready &= ~bit;
                if (!sl->active || sl->pstate != PS_PAUSED || sl->cur != k || !(sl->in_top & bit))
                    continue; /* resumed, ended or pushed out of the top since */
                sl->pstate = PS_RUNNING;
                r->paused--;
                r->promoted++;
                if (ret_id)
                    *ret_id = e.id;
                return TUNEP_NEXT_RESUME;
            }
        }
    }
    if (new_left)
        return TUNEP_NEXT_NEW;
    /* A running trial may still lift a paused one into the top of its rung. */
    return n_running > 0 ? TUNEP_NEXT_WAIT : TUNEP_NEXT_NEW;
}

static void promo_describe(const struct tunep_asha *a, double sign, struct tunep_buf *buf)
{
    for (int s = 0; s < a->bracket_count; s++) {
        const struct bracket *br = &a->brackets[s];
        tunep_buf_printf(buf, "ASHA (promotion): bracket %d:", s);
        if (br->rung_count == 0)
            tunep_buf_puts(buf, " no rungs");
        for (int k = br->rung_count - 1; k >= 0; k--) {
            const struct rung *r = &br->rungs[k];
            char ms[64];
            tunep_format_double(ms, sizeof ms, r->milestone);
            tunep_buf_printf(buf, " rung %s: %zu recorded, %zu promoted, %zu paused", ms, r->n_rec,
                             r->promoted, r->paused);
            if (r->n_top > 0) {
                char cut[64];
                /* Six significant digits: a progress display, not a record. */
                snprintf(cut, sizeof cut, "%.6g", sign * r->top[0].score);
                tunep_buf_printf(buf, ", top %zu from %s", r->n_top, cut);
            }
            if (k > 0)
                tunep_buf_puts(buf, ";");
        }
        tunep_buf_puts(buf, "\n");
    }
}

static void asha_describe(const void *self, double sign, struct tunep_buf *buf)
{
    const struct tunep_asha *a = self;
    if (a->cfg.promotion) {
        promo_describe(a, sign, buf);
        return;
    }
    for (int s = 0; s < a->bracket_count; s++) {
        const struct bracket *br = &a->brackets[s];
        tunep_buf_printf(buf, "ASHA: bracket %d:", s);
        if (br->rung_count == 0)
            tunep_buf_puts(buf, " no rungs");
        /* Ascending milestones read more naturally than Ray's storage order. */
        for (int k = br->rung_count - 1; k >= 0; k--) {
            const struct rung *r = &br->rungs[k];
            char ms[64], cut[64];
            size_t n = rung_count_values(r);
            tunep_format_double(ms, sizeof ms, r->milestone);
            if (n > 0) {
                /* Six significant digits: a progress display, not a record. */
                snprintf(cut, sizeof cut, "%.6g", sign * rung_cutoff(r, a->q));
                tunep_buf_printf(buf, " rung %s: %zu recorded, cutoff %s", ms, n, cut);
            } else {
                tunep_buf_printf(buf, " rung %s: 0 recorded, no cutoff", ms);
            }
            if (k > 0)
                tunep_buf_puts(buf, ";");
        }
        tunep_buf_puts(buf, "\n");
    }
}

/* ---- inspection ------------------------------------------------------------ */

int tunep_asha_bracket_count(const struct tunep_asha *a)
{
    return a->bracket_count;
}

int tunep_asha_rung_count_of(const struct tunep_asha *a, int bracket)
{
    if (bracket < 0 || bracket >= a->bracket_count)
        return 0;
    return a->brackets[bracket].rung_count;
}

static const struct rung *get_rung(const struct tunep_asha *a, int bracket, int rung)
{
    if (rung < 0 || rung >= tunep_asha_rung_count_of(a, bracket))
        return NULL;
    return &a->brackets[bracket].rungs[rung];
}

double tunep_asha_milestone(const struct tunep_asha *a, int bracket, int rung)
{
    const struct rung *r = get_rung(a, bracket, rung);
    return r ? r->milestone : (double)NAN;
}

size_t tunep_asha_recorded(const struct tunep_asha *a, int bracket, int rung)
{
    const struct rung *r = get_rung(a, bracket, rung);
    if (!r)
        return 0;
    return a->cfg.promotion ? r->n_rec : rung_count_values(r);
}

int tunep_asha_cutoff(const struct tunep_asha *a, int bracket, int rung, double *ret_cutoff)
{
    const struct rung *r = get_rung(a, bracket, rung);
    if (a->cfg.promotion) {
        if (!r || r->n_top == 0)
            return 0;
        *ret_cutoff = r->top[0].score;
        return 1;
    }
    if (!r || rung_count_values(r) == 0)
        return 0;
    *ret_cutoff = rung_cutoff(r, a->q);
    return 1;
}

size_t tunep_asha_promoted(const struct tunep_asha *a, int bracket, int rung)
{
    const struct rung *r = get_rung(a, bracket, rung);
    return r && a->cfg.promotion ? r->promoted : 0;
}

int tunep_asha_trial_bracket(const struct tunep_asha *a, int64_t trial_id)
{
    if (trial_id < 0 || (uint64_t)trial_id >= a->slot_cap)
        return -1;
    const struct slot *sl = &a->slots[trial_id];
    return sl->active ? sl->bracket : -1;
}

/* ---- the config and the row ------------------------------------------------ */

static const char *const asha_variants[] = {"stopping", "promotion", NULL};

/* Row indexes, for check()'s `given` mask. */
enum { O_TIME_ATTR, O_MAX_T, O_GRACE, O_RF, O_BRACKETS, O_STOP_LAST, O_VARIANT, O_COUNT };

#define ROW(name_, type_, field, lo_, hi_, def_)                                                   \
    TUNEP_OPT_ROW(name_, type_, struct tunep_asha_config, field, lo_, hi_, def_)

/* Ray's AsyncHyperBandScheduler options and defaults; Ray asserts max_t > 0, grace_period > 0,
 * reduction_factor > 1 and brackets > 0. */
static const struct tunep_option asha_options[] = {
    [O_TIME_ATTR] = {.name = "time_attr",
                     .type = TUNEP_OPT_NAME,
                     .offset = offsetof(struct tunep_asha_config, time_attr),
                     .hi = sizeof(((struct tunep_asha_config *)0)->time_attr),
                     .def_text = "training_iteration"},
    [O_MAX_T] = ROW("max_t", TUNEP_OPT_REAL_GT, max_t, 0, HUGE_VAL, 100),
    [O_GRACE] = ROW("grace_period", TUNEP_OPT_REAL_GT, grace_period, 0, HUGE_VAL, 1),
    [O_RF] = ROW("reduction_factor", TUNEP_OPT_REAL_GT, reduction_factor, 1, HUGE_VAL, 4),
    [O_BRACKETS] = ROW("brackets", TUNEP_OPT_WHOLE, brackets, 1, TUNEP_ASHA_MAX_BRACKETS, 1),
    [O_STOP_LAST] = ROW("stop_last_trials", TUNEP_OPT_BOOL, stop_last_trials, 0, 1, 1),
    [O_VARIANT] = {.name = "variant",
                   .type = TUNEP_OPT_CHOICE,
                   .offset = offsetof(struct tunep_asha_config, promotion),
                   .choices = asha_variants},
    [O_COUNT] = {0},
};

#define GIVEN(given, row) (((given) >> (row)) & 1u)

/* grace_period <= max_t (blaming the key the user wrote) and at most MAX_RUNGS rungs. */
static tune_status asha_check(const void *config, uint64_t given, struct tunep_opt_error *e)
{
    const struct tunep_asha_config *c = config;
    char buf[32];
    if (!(c->grace_period <= c->max_t)) {
        if (GIVEN(given, O_GRACE)) {
            tunep_format_double(buf, sizeof buf, c->max_t);
            return tunep_opt_fail(e, "grace_period", 0, "must be <= max_t (%s)", buf);
        }
        tunep_format_double(buf, sizeof buf, c->grace_period);
        return tunep_opt_fail(e, "max_t", 0, "must be >= grace_period (%s)", buf);
    }
    /* A 64-bit mask holds a trial's rungs; rf close to 1 would also make rungs useless. */
    if (tunep_asha_rung_count(c, 0) > TUNEP_ASHA_MAX_RUNGS) {
        const char *at = GIVEN(given, O_RF)      ? "reduction_factor"
                         : GIVEN(given, O_GRACE) ? "grace_period"
                                                 : "max_t";
        return tunep_opt_fail(e, at, 0,
                              "more than %d rungs: log(max_t / grace_period) / "
                              "log(reduction_factor) must be < %d",
                              TUNEP_ASHA_MAX_RUNGS, TUNEP_ASHA_MAX_RUNGS);
    }
    return TUNE_OK;
}

static const char *asha_time_attr(const void *config)
{
    return ((const struct tunep_asha_config *)config)->time_attr;
}

static double asha_min_t(const void *config)
{
    return ((const struct tunep_asha_config *)config)->grace_period;
}

static double asha_max_t(const void *config)
{
    return ((const struct tunep_asha_config *)config)->max_t;
}

static void asha_summary(const void *config, struct tunep_buf *out)
{
    const struct tunep_asha_config *c = config;
    char num[3][40];
    tunep_format_double(num[0], sizeof num[0], c->grace_period);
    tunep_format_double(num[1], sizeof num[1], c->reduction_factor);
    tunep_format_double(num[2], sizeof num[2], c->max_t);
    tunep_buf_printf(out, "ASHA: grace_period %s, reduction_factor %s, max_t %s, brackets %d",
                     num[0], num[1], num[2], c->brackets);
}

/* Bracket 0's milestones, which hold every other bracket's: grace_period * rf^k. */
static size_t asha_rungs(const void *config, double *out, size_t max)
{
    const struct tunep_asha_config *c = config;
    int n = tunep_asha_rung_count(c, 0);
    size_t k = 0;
    for (; k < (size_t)n && k < TUNEP_ASHA_MAX_RUNGS && k < max; k++)
        out[k] = c->grace_period * pow(c->reduction_factor, (double)k);
    return k;
}

static const char *const asha_aliases[] = {"async_hyperband", NULL};

const struct tunep_scheduler_type tunep_asha_type = {
    .name = "asha",
    .aliases = asha_aliases,
    .title = "ASHA",
    .options = asha_options,
    .config_size = sizeof(struct tunep_asha_config),
    .check = asha_check,
    .time_attr = asha_time_attr,
    .min_t = asha_min_t,
    .max_t = asha_max_t,
    .summary = asha_summary,
    .rungs = asha_rungs,
    .create = asha_new,
    .free = asha_free,
    .on_trial_add = asha_on_trial_add,
    .on_result = asha_on_result,
    .on_trial_complete = asha_on_trial_complete,
    .on_trial_paused = asha_on_trial_paused,
    .choose = asha_choose,
    .describe = asha_describe,
};

struct tunep_asha *tunep_scheduler_asha(struct tunep_scheduler *s)
{
    return tunep_scheduler_type_of(s) == &tunep_asha_type ? tunep_scheduler_state(s) : NULL;
}
