/*
 * pbt.c - population based training (Jaderberg et al., 2017) with the
 * semantics of Ray Tune's asynchronous PopulationBasedTraining
 * (ray/tune/schedulers/pbt.py).
 *
 * A trial is checked when time_attr has advanced perturbation_interval since
 * its last check (and is past burn_in_period): its score then becomes its
 * "last score", and the live trials with a last score are ranked. With n of
 * them, q = ceil(n quantile_fraction), at most floor(n / 2), and no quantiles
 * when n <= 1. A trial among the q worst answers EXPLOIT: it restarts from a
 * donor drawn uniformly from the q best, takes the donor's check times, and
 * gets the donor's configuration explored (explore()). Otherwise it pauses
 * when other trials wait to run (Ray's time sharing) and goes on if none do.
 * Paused trials resume least-trained first, once no new trial is left.
 *
 * The ranking is a treap keyed by (last score, trial id), sized for order
 * statistics, its nodes living in the per-trial slots: a check costs
 * O(log n) expected, so populations of 10^5 stay cheap. The donor draw comes
 * from a stream seeded by (study seed, trial id, check count): the same seed
 * and the same sequence of events give the same exploits.
 *
 * The file ends with PBT's row (scheduler.h): its options as a table
 * (hyperparam_mutations read by the config layer as a mutation list), and
 * what other layers must know: it explores by itself and copies checkpoints.
 */
#include "schedulers/pbt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_rng.h>

struct ptrial {
    int known, live;
    int ranked;    /* in the treap */
    int has_score; /* had a check */
    int paused, in_heap;
    double last_score, last_train_time, last_perturbation_time;
    int64_t donor;             /* after an EXPLOIT answer, else -1 */
    int64_t checks;            /* perturbation checks so far: seeds the donor draw */
    int64_t left, right, size; /* treap */
    uint64_t prio;
};

struct tunep_pbt {
    struct tunep_pbt_config cfg; /* mutations deep-copied, owned */
    size_t n_params;
    uint64_t seed;
    struct ptrial *tr; /* indexed by trial id */
    size_t cap;
    size_t n_known;
    int64_t root;
    int64_t *heap; /* paused trials, least last_train_time first; room for every trial */
    size_t n_heap, heap_cap;
    int64_t num_paused, num_checks, num_exploits;
};

/* ---- construction ---------------------------------------------------------- */

/* Deep copy of one mutation into dst (zeroed); TUNE_ENOMEM leaves dst to
 * tunep_mutations_free(). */
static tune_status mutation_copy(struct tunep_mutation *dst, const struct tunep_mutation *src)
{
    dst->param = src->param;
    dst->is_list = src->is_list;
    if (src->name && !(dst->name = tunep_strdup(src->name)))
        return TUNE_ENOMEM;
    if (src->is_list) {
        dst->values = tunep_calloc(src->n_values, sizeof *dst->values);
        if (!dst->values)
            return TUNE_ENOMEM;
        for (size_t j = 0; j < src->n_values; j++) {
            dst->values[j] = src->values[j];
            if (src->values[j].type == TUNEP_V_STRING) {
                dst->values[j].u.s = tunep_strdup(src->values[j].u.s);
                if (!dst->values[j].u.s) {
                    dst->values[j].type = TUNEP_V_INT; /* nothing to free */
                    dst->n_values = j;
                    return TUNE_ENOMEM;
                }
            }
        }
        dst->n_values = src->n_values;
        return TUNE_OK;
    }
    tune_error e;
    return tunep_space_clone(src->dist, &dst->dist, &e) == TUNE_OK ? TUNE_OK : TUNE_ENOMEM;
}

static void pbt_free(void *self);

static tune_status pbt_new(const void *config, const tune_space *space, uint64_t seed, void **ret,
                           tune_error *err)
{
    const struct tunep_pbt_config *cfg = config;
    if (!space)
        return tunep_error_set(err, TUNE_EINVAL, "pbt: needs the study's space");
    if (!(cfg->perturbation_interval > 0) || !(cfg->burn_in_period >= 0) ||
        !(cfg->quantile_fraction >= 0 && cfg->quantile_fraction <= 0.5) ||
        !(cfg->resample_probability >= 0 && cfg->resample_probability <= 1) ||
        !isfinite(cfg->perturbation_factors[0]) || !isfinite(cfg->perturbation_factors[1]) ||
        cfg->mutations.n == 0 || !cfg->mutations.v)
        return tunep_error_set(err, TUNE_EINVAL, "pbt: invalid options");
    for (size_t i = 0; i < cfg->mutations.n; i++) {
        const struct tunep_mutation *m = &cfg->mutations.v[i];
        if (m->param >= space->n || (m->is_list && (m->n_values == 0 || !m->values)) ||
            (!m->is_list && (!m->dist || m->dist->n != 1)))
            return tunep_error_set(err, TUNE_EINVAL, "pbt: invalid mutation %zu", i);
    }
    struct tunep_pbt *p = tunep_calloc(1, sizeof *p);
    if (!p)
        return tunep_error_set(err, TUNE_ENOMEM, "pbt: out of memory");
    p->cfg = *cfg;
    p->cfg.time_attr[sizeof p->cfg.time_attr - 1] = '\0';
    p->cfg.mutations.v = tunep_calloc(cfg->mutations.n, sizeof *p->cfg.mutations.v);
    p->cfg.mutations.free = tunep_mutations_free;
    if (!p->cfg.mutations.v) {
        tunep_free(p);
        return tunep_error_set(err, TUNE_ENOMEM, "pbt: out of memory");
    }
    for (size_t i = 0; i < cfg->mutations.n; i++) {
        if (mutation_copy(&p->cfg.mutations.v[i], &cfg->mutations.v[i]) != TUNE_OK) {
            pbt_free(p);
            return tunep_error_set(err, TUNE_ENOMEM, "pbt: out of memory");
        }
    }
    p->n_params = space->n;
    p->seed = seed;
    p->root = -1;
    *ret = p;
    return TUNE_OK;
}

static void pbt_free(void *self)
{
    struct tunep_pbt *p = self;
    if (!p)
        return;
    tunep_mutations_free(p->cfg.mutations.v, p->cfg.mutations.n);
    tunep_free(p->tr);
    tunep_free(p->heap);
    tunep_free(p);
}

/* ---- the ranking: a treap with subtree sizes --------------------------------- */

/* Ray sorts by last_score, ties in trial order: (score, id) ascending. */
static int key_less(const struct tunep_pbt *p, int64_t a, int64_t b)
{
    double sa = p->tr[a].last_score, sb = p->tr[b].last_score;
    return sa < sb || (sa == sb && a < b);
}

static int64_t size_of(const struct tunep_pbt *p, int64_t x)
{
    return x < 0 ? 0 : p->tr[x].size;
}

static void update(struct tunep_pbt *p, int64_t x)
{
    p->tr[x].size = 1 + size_of(p, p->tr[x].left) + size_of(p, p->tr[x].right);
}

static int64_t merge(struct tunep_pbt *p, int64_t a, int64_t b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    if (p->tr[a].prio > p->tr[b].prio) {
        p->tr[a].right = merge(p, p->tr[a].right, b);
        update(p, a);
        return a;
    }
    p->tr[b].left = merge(p, a, p->tr[b].left);
    update(p, b);
    return b;
}

/* Splits t into the keys below key(id) (*l) and the rest (*r). */
static void split(struct tunep_pbt *p, int64_t t, int64_t id, int64_t *l, int64_t *r)
{
    if (t < 0) {
        *l = *r = -1;
        return;
    }
    if (key_less(p, t, id)) {
        split(p, p->tr[t].right, id, &p->tr[t].right, r);
        *l = t;
    } else {
        split(p, p->tr[t].left, id, l, &p->tr[t].left);
        *r = t;
    }
    update(p, t);
}

static void rank_insert(struct tunep_pbt *p, int64_t id)
{
    int64_t l, r;
    struct ptrial *x = &p->tr[id];
    x->left = x->right = -1;
    x->size = 1;
    split(p, p->root, id, &l, &r);
    p->root = merge(p, merge(p, l, id), r);
    x->ranked = 1;
}

static int64_t erase_at(struct tunep_pbt *p, int64_t t, int64_t id)
{
    if (t == id)
        return merge(p, p->tr[t].left, p->tr[t].right);
    if (key_less(p, id, t))
        p->tr[t].left = erase_at(p, p->tr[t].left, id);
    else
        p->tr[t].right = erase_at(p, p->tr[t].right, id);
    update(p, t);
    return t;
}

static void rank_erase(struct tunep_pbt *p, int64_t id)
{
    p->root = erase_at(p, p->root, id);
    p->tr[id].ranked = 0;
}

/* The number of ranked trials below id (id is ranked). */
static size_t rank_of(const struct tunep_pbt *p, int64_t id)
{
    size_t r = 0;
    int64_t t = p->root;
    while (t >= 0) {
        if (t == id)
            return r + (size_t)size_of(p, p->tr[t].left);
        if (key_less(p, id, t)) {
            t = p->tr[t].left;
        } else {
            r += (size_t)size_of(p, p->tr[t].left) + 1;
            t = p->tr[t].right;
        }
    }
    return r;
}

/* The trial of rank k (0 = worst); k < size. */
static int64_t select_rank(const struct tunep_pbt *p, size_t k)
{
    int64_t t = p->root;
    while (t >= 0) {
        size_t ls = (size_t)size_of(p, p->tr[t].left);
        if (k < ls) {
            t = p->tr[t].left;
        } else if (k == ls) {
            return t;
        } else {
            k -= ls + 1;
            t = p->tr[t].right;
        }
    }
    return -1;
}

size_t tunep_pbt_quantile_size(double quantile_fraction, size_t n)
{
    /* Ray's _quantiles(): none for n <= 1; ceil(n * fraction), at most floor(n / 2). */
    if (n <= 1)
        return 0;
    double q = ceil((double)n * quantile_fraction);
    if (q > (double)n / 2.0)
        q = floor((double)n / 2.0);
    return (size_t)q;
}

/* ---- paused trials: a binary heap by (last_train_time, id) -------------------- */

static int heap_less(const struct tunep_pbt *p, int64_t a, int64_t b)
{
    double ta = p->tr[a].last_train_time, tb = p->tr[b].last_train_time;
    return ta < tb || (ta == tb && a < b);
}

static void heap_push(struct tunep_pbt *p, int64_t id)
{
    size_t i = p->n_heap++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!heap_less(p, id, p->heap[parent]))
            break;
        p->heap[i] = p->heap[parent];
        i = parent;
    }
    p->heap[i] = id;
}

static int64_t heap_pop(struct tunep_pbt *p)
{
    int64_t top = p->heap[0], last = p->heap[--p->n_heap];
    size_t i = 0, n = p->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && heap_less(p, p->heap[c + 1], p->heap[c]))
            c++;
        if (!heap_less(p, p->heap[c], last))
            break;
        p->heap[i] = p->heap[c];
        i = c;
    }
    if (n > 0)
        p->heap[i] = last;
    return top;
}

/* ---- events ------------------------------------------------------------------ */

static struct ptrial *get(const struct tunep_pbt *p, int64_t id)
{
    if (id < 0 || (uint64_t)id >= p->cap || !p->tr[id].known)
        return NULL;
    return &p->tr[id];
}

static tune_status pbt_on_trial_add(void *self, int64_t trial_id, double u)
{
    struct tunep_pbt *p = self;
    (void)u;
    if (trial_id < 0)
        return TUNE_EINVAL;
    struct ptrial *x = get(p, trial_id);
    if (x) {
        /* A retry keeps its state; a trial that had ended (resumed after an error)
         * rejoins the ranking with its last score, as an unfinished trial in Ray. */
        x->live = 1;
        if (x->has_score && !x->ranked)
            rank_insert(p, trial_id);
        return TUNE_OK;
    }
    if ((uint64_t)trial_id >= p->cap) {
        if ((uint64_t)trial_id >= SIZE_MAX / 4 / sizeof(struct ptrial))
            return TUNE_ENOMEM;
        size_t cap = p->cap ? p->cap : 64;
        while (cap <= (size_t)trial_id)
            cap *= 2;
        struct ptrial *t = tunep_realloc(p->tr, p->cap * sizeof *t, cap * sizeof *t);
        if (!t)
            return TUNE_ENOMEM;
        memset(t + p->cap, 0, (cap - p->cap) * sizeof *t);
        p->tr = t;
        p->cap = cap;
    }
    if (p->heap_cap < p->n_known + 1) {
        size_t cap = p->heap_cap ? p->heap_cap * 2 : 64;
        int64_t *h = tunep_realloc(p->heap, p->heap_cap * sizeof *h, cap * sizeof *h);
        if (!h)
            return TUNE_ENOMEM;
        p->heap = h;
        p->heap_cap = cap;
    }
    x = &p->tr[trial_id];
    memset(x, 0, sizeof *x);
    x->known = 1;
    x->live = 1;
    x->donor = -1;
    x->left = x->right = -1;
    /* A fixed hash of the id as the treap priority: balanced in expectation, reproducible. */
    x->prio = tunep_splitmix64((uint64_t)trial_id ^ 0x7462702d74726561ULL);
    p->n_known++;
    return TUNE_OK;
}

/* A uniform in [0, 1) for the donor draw of trial id's check number `check`. */
static double donor_uniform(const struct tunep_pbt *p, int64_t id, int64_t check)
{
    uint64_t x = tunep_trial_seed(p->seed, id, TUNEP_RNG_SCHEDULER);
    x = tunep_splitmix64(x ^ tunep_splitmix64((uint64_t)check));
    return (double)(x >> 11) * 0x1.0p-53;
}

static enum tunep_decision pbt_on_result(void *self, int64_t trial_id, int has_t, double t,
                                         double score, int64_t n_waiting)
{
    struct tunep_pbt *p = self;
    struct ptrial *x = get(p, trial_id);
    if (!x || !x->live || !has_t || isnan(t))
        return TUNEP_CONTINUE;
    x->donor = -1;
    if (isnan(score))
        score = -HUGE_VAL;
    if (t < p->cfg.burn_in_period)
        return TUNEP_CONTINUE;
    if (t - x->last_perturbation_time < p->cfg.perturbation_interval)
        return TUNEP_CONTINUE; /* Ray: "avoid checkpoint overhead" */

    /* Ray's _save_trial_state: the key changes, so out of the treap and back in. */
    if (x->ranked)
        rank_erase(p, trial_id);
    x->last_score = score;
    x->last_train_time = t;
    x->last_perturbation_time = t;
    x->has_score = 1;
    rank_insert(p, trial_id);
    x->checks++;
    p->num_checks++;

    size_t n = (size_t)size_of(p, p->root);
    size_t q = tunep_pbt_quantile_size(p->cfg.quantile_fraction, n);
    if (q > 0 && rank_of(p, trial_id) < q) {
        /* random.choice(upper_quantile): the q best, drawn uniformly */
        size_t k = (size_t)floor(donor_uniform(p, trial_id, x->checks) * (double)q);
        if (k >= q)
            k = q - 1;
        x->donor = select_rank(p, n - q + k);
        return TUNEP_EXPLOIT;
    }
    /* Ray pauses when any other trial is PENDING or PAUSED, so that all get a turn. */
    return n_waiting > 0 || p->num_paused > 0 ? TUNEP_PAUSE : TUNEP_CONTINUE;
}

static void pbt_on_trial_complete(void *self, int64_t trial_id, int has_result, double last_t,
                                  double last_score)
{
    struct tunep_pbt *p = self;
    (void)has_result;
    (void)last_t;
    (void)last_score;
    struct ptrial *x = get(p, trial_id);
    if (!x)
        return;
    /* Ray leaves finished trials out of the quantiles. */
    if (x->ranked)
        rank_erase(p, trial_id);
    if (x->paused) {
        x->paused = 0; /* its heap entry goes stale */
        p->num_paused--;
    }
    x->live = 0;
}

static void pbt_on_trial_paused(void *self, int64_t trial_id)
{
    struct tunep_pbt *p = self;
    struct ptrial *x = get(p, trial_id);
    if (!x || !x->live || x->paused)
        return;
    x->paused = 1;
    p->num_paused++;
    if (!x->in_heap) {
        x->in_heap = 1;
        heap_push(p, trial_id); /* room reserved when the trial was added */
    }
}

static enum tunep_next pbt_choose(void *self, int new_left, int64_t n_running, int64_t *ret_id)
{
    struct tunep_pbt *p = self;
    (void)n_running;
    /* Ray's choose_trial_to_run: the least trained of PENDING and PAUSED trials; a new
     * trial has trained 0, so new ones go first. */
    if (new_left)
        return TUNEP_NEXT_NEW;
    while (p->n_heap > 0) {
        int64_t id = heap_pop(p);
        struct ptrial *x = &p->tr[id];
        x->in_heap = 0;
        if (x->paused) {
            x->paused = 0;
            p->num_paused--;
            if (ret_id)
                *ret_id = id;
            return TUNEP_NEXT_RESUME;
        }
    }
    return TUNEP_NEXT_NEW;
}

static int64_t pbt_exploit_donor(const void *self, int64_t trial_id)
{
    const struct tunep_pbt *p = self;
    const struct ptrial *x = get(p, trial_id);
    return x ? x->donor : -1;
}

/* ---- explore ------------------------------------------------------------------ */

static int is_number(const struct tunep_value *v)
{
    return v->type == TUNEP_V_INT || v->type == TUNEP_V_DOUBLE;
}

static double as_double(const struct tunep_value *v)
{
    return v->type == TUNEP_V_INT ? (double)v->u.i : v->u.d;
}

/* Python's == on config values: numbers by value (1 == 1.0), strings by content. */
static int value_eq(const struct tunep_value *a, const struct tunep_value *b)
{
    if (is_number(a) && is_number(b)) {
        if (a->type == TUNEP_V_INT && b->type == TUNEP_V_INT)
            return a->u.i == b->u.i;
        return as_double(a) == as_double(b);
    }
    if (a->type != b->type)
        return 0;
    if (a->type == TUNEP_V_STRING)
        return strcmp(a->u.s, b->u.s) == 0;
    return a->u.b == b->u.b;
}

/*
 * The bounds a perturbed value is clamped to (the distribution's own range,
 * ints as Ray reads their upper bound) and its grid q (0: none). Returns 0 when
 * the distribution has no numeric range to scale in (a choice without numbers).
 */
static int numeric_range(const struct tunep_param *d, double *lo, double *hi, double *q)
{
    *lo = -HUGE_VAL;
    *hi = HUGE_VAL;
    *q = 0;
    switch (d->dist) {
        case TUNEP_DIST_QUNIFORM:
        case TUNEP_DIST_QLOGUNIFORM:
        case TUNEP_DIST_UNIFORM:
        case TUNEP_DIST_LOGUNIFORM:
            *lo = d->lo;
            *hi = d->hi;
            if (d->dist == TUNEP_DIST_QUNIFORM || d->dist == TUNEP_DIST_QLOGUNIFORM)
                *q = d->q;
            return 1;
        case TUNEP_DIST_QRANDN: *q = d->q; return 1;
        case TUNEP_DIST_RANDN: return 1;
        case TUNEP_DIST_RANDINT:
        case TUNEP_DIST_LOGRANDINT:
            *lo = (double)d->ilo;
            *hi = (double)d->ihi - 1.0; /* Ray's randint(lower, upper) excludes upper */
            return 1;
        case TUNEP_DIST_QRANDINT:
        case TUNEP_DIST_QLOGRANDINT:
            *lo = (double)d->ilo;
            *hi = (double)d->ihi;
            *q = (double)d->iq;
            return 1;
        case TUNEP_DIST_CHOICE: {
            int any = 0;
            for (size_t i = 0; i < d->n_values; i++) {
                if (!is_number(&d->values[i]))
                    continue;
                double v = as_double(&d->values[i]);
                if (!any || v < *lo)
                    *lo = v;
                if (!any || v > *hi)
                    *hi = v;
                any = 1;
            }
            return any;
        }
        default: return 0;
    }
}

/* cur * f, on d's grid, clamped to its range; an int stays an int (rounded to nearest). */
static void perturb(const struct tunep_param *d, const struct tunep_value *cur, double f,
                    struct tunep_value *out)
{
    double lo, hi, q;
    (void)numeric_range(d, &lo, &hi, &q);
    double x = as_double(cur) * f;
    if (q > 0)
        x = nearbyint(x / q) * q;
    if (x < lo)
        x = lo;
    if (x > hi)
        x = hi;
    if (cur->type == TUNEP_V_INT) {
        x = nearbyint(x);
        /* keep it representable; the clamps above already hold for bounded ranges */
        if (!(x > -0x1.0p63))
            x = -0x1.0p63;
        if (!(x < 0x1.0p63))
            x = 0x1.0p63 - 1024.0;
        out->type = TUNEP_V_INT;
        out->u.i = (int64_t)x;
    } else {
        out->type = TUNEP_V_DOUBLE;
        out->u.d = x;
    }
}

static void pbt_explore(void *self, int64_t trial_id, const struct tunep_value *donor_values,
                        gsl_rng *r, struct tunep_value *out)
{
    struct tunep_pbt *p = self;
    struct ptrial *x = get(p, trial_id);
    if (x && x->donor >= 0) {
        /* Ray's _exploit: "Transfer over the last perturbation time as well". */
        const struct ptrial *d = &p->tr[x->donor];
        x->last_perturbation_time = d->last_perturbation_time;
        x->last_train_time = d->last_train_time;
        x->donor = -1;
        p->num_exploits++;
    }
    memcpy(out, donor_values, p->n_params * sizeof *out);
    for (size_t i = 0; i < p->cfg.mutations.n; i++) {
        const struct tunep_mutation *m = &p->cfg.mutations.v[i];
        const struct tunep_value *cur = &donor_values[m->param];
        struct tunep_value *dst = &out[m->param];
        /* Ray draws random.random() first, then looks the value up. */
        int resample = gsl_rng_uniform(r) < p->cfg.resample_probability;
        if (m->is_list) {
            size_t at = m->n_values;
            for (size_t j = 0; j < m->n_values && at == m->n_values; j++)
                if (value_eq(cur, &m->values[j]))
                    at = j;
            if (resample || at == m->n_values) {
                *dst = m->values[gsl_rng_uniform_int(r, (unsigned long)m->n_values)];
            } else {
                /* random.choice([-1, 1]), clamped to the list */
                if (gsl_rng_uniform(r) < 0.5)
                    at = at > 0 ? at - 1 : 0;
                else
                    at = at + 1 < m->n_values ? at + 1 : at;
                *dst = m->values[at];
            }
            continue;
        }
        const struct tunep_param *d = &m->dist->params[0];
        double lo, hi, q;
        if (resample || !is_number(cur) || !numeric_range(d, &lo, &hi, &q)) {
            /* a string or bool cannot be scaled: it is resampled */
            tunep_space_sample(m->dist, r, 0, 0, dst);
        } else {
            double f = p->cfg.perturbation_factors[gsl_rng_uniform(r) < 0.5 ? 0 : 1];
            perturb(d, cur, f, dst);
        }
    }
}

/* ---- display and inspection ---------------------------------------------------- */

static void pbt_describe(const void *self, double sign, struct tunep_buf *buf)
{
    const struct tunep_pbt *p = self;
    size_t n = (size_t)size_of(p, p->root);
    size_t q = tunep_pbt_quantile_size(p->cfg.quantile_fraction, n);
    tunep_buf_printf(buf, "PBT: %zu trials ranked, %lld checks, %lld exploits, %lld paused", n,
                     (long long)p->num_checks, (long long)p->num_exploits,
                     (long long)p->num_paused);
    if (q > 0) {
        /* Six significant digits: a progress display, not a record. */
        char lo[64], hi[64];
        snprintf(lo, sizeof lo, "%.6g", sign * p->tr[select_rank(p, q - 1)].last_score);
        snprintf(hi, sizeof hi, "%.6g", sign * p->tr[select_rank(p, n - q)].last_score);
        tunep_buf_printf(buf, "; bottom %zu up to %s, top %zu from %s", q, lo, q, hi);
    }
    tunep_buf_puts(buf, "\n");
}

size_t tunep_pbt_ranked(const struct tunep_pbt *p)
{
    return (size_t)size_of(p, p->root);
}

int tunep_pbt_rank(const struct tunep_pbt *p, int64_t trial_id, size_t *ret_rank)
{
    const struct ptrial *x = get(p, trial_id);
    if (!x || !x->ranked)
        return 0;
    *ret_rank = rank_of(p, trial_id);
    return 1;
}

int64_t tunep_pbt_num_exploits(const struct tunep_pbt *p)
{
    return p->num_exploits;
}

/* ---- the config and the row ------------------------------------------------ */

#define ROW(name_, type_, field, lo_, hi_, def_)                                                   \
    TUNEP_OPT_ROW(name_, type_, struct tunep_pbt_config, field, lo_, hi_, def_)

/* Ray's perturbation factors (1.2, 0.8): element i of "perturbation_factors". */
static const struct tunep_option pbt_factors[] = {
    ROW("0", TUNEP_OPT_REAL_GT, perturbation_factors[0], 0, HUGE_VAL, 1.2),
    ROW("1", TUNEP_OPT_REAL_GT, perturbation_factors[1], 0, HUGE_VAL, 0.8),
    {0},
};

/* Ray's PopulationBasedTraining options and defaults, except time_attr (configs/README.md);
 * Ray checks 0 <= quantile_fraction <= 0.5 and perturbation_interval > 0. */
static const struct tunep_option pbt_options[] = {
    {.name = "time_attr",
     .type = TUNEP_OPT_NAME,
     .offset = offsetof(struct tunep_pbt_config, time_attr),
     .hi = sizeof(((struct tunep_pbt_config *)0)->time_attr),
     .def_text = "training_iteration"},
    ROW("perturbation_interval", TUNEP_OPT_REAL_GT, perturbation_interval, 0, HUGE_VAL, 60),
    ROW("burn_in_period", TUNEP_OPT_REAL, burn_in_period, 0, HUGE_VAL, 0),
    ROW("quantile_fraction", TUNEP_OPT_REAL, quantile_fraction, 0, 0.5, 0.25),
    ROW("resample_probability", TUNEP_OPT_REAL, resample_probability, 0, 1, 0.25),
    {.name = "perturbation_factors",
     .type = TUNEP_OPT_TUPLE,
     .sub = pbt_factors,
     .expected = "two numbers such as [1.2, 0.8]"},
    {.name = "hyperparam_mutations",
     .type = TUNEP_OPT_MUTATIONS,
     .offset = offsetof(struct tunep_pbt_config, mutations),
     .expected = "an object such as {\"lr\": {\"loguniform\": [1e-5, 1e-1]}, "
                 "\"batch_size\": [16, 32, 64]}"},
    {0},
};

/* PBT explores nothing without mutations: Ray requires hyperparam_mutations too. */
static tune_status pbt_check(const void *config, uint64_t given, struct tunep_opt_error *e)
{
    (void)given;
    if (((const struct tunep_pbt_config *)config)->mutations.n > 0)
        return TUNE_OK;
    return tunep_opt_fail(e, "", 0,
                          "pbt needs \"hyperparam_mutations\": the parameters it explores, "
                          "e.g. {\"lr\": {\"loguniform\": [1e-5, 1e-1]}}");
}

static const char *pbt_time_attr(const void *config)
{
    return ((const struct tunep_pbt_config *)config)->time_attr;
}

/* A donor's checkpoint is at most one perturbation interval old when a trial exploits it. */
static double pbt_checkpoint_interval(const void *config)
{
    return ((const struct tunep_pbt_config *)config)->perturbation_interval;
}

static const char *const pbt_aliases[] = {"population_based_training", NULL};

const struct tunep_scheduler_type tunep_pbt_type = {
    .name = "pbt",
    .aliases = pbt_aliases,
    .title = "PBT",
    .flags = TUNEP_SCHEDULER_EXPLORES,
    .options = pbt_options,
    .config_size = sizeof(struct tunep_pbt_config),
    .check = pbt_check,
    .time_attr = pbt_time_attr,
    .checkpoint_interval = pbt_checkpoint_interval,
    .create = pbt_new,
    .free = pbt_free,
    .on_trial_add = pbt_on_trial_add,
    .on_result = pbt_on_result,
    .on_trial_complete = pbt_on_trial_complete,
    .on_trial_paused = pbt_on_trial_paused,
    .choose = pbt_choose,
    .exploit_donor = pbt_exploit_donor,
    .explore = pbt_explore,
    .describe = pbt_describe,
};

struct tunep_pbt *tunep_scheduler_pbt(struct tunep_scheduler *s)
{
    return tunep_scheduler_type_of(s) == &tunep_pbt_type ? tunep_scheduler_state(s) : NULL;
}
