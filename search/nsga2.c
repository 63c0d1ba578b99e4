/*
 * nsga2.c - NSGA-II (Deb et al. 2002) as Optuna's NSGAIISampler runs it.
 *
 * Trials belong to generations. While generation 0 has fewer than
 * population_size finished trials, new trials are drawn at random (and
 * belong to it). Once generation g has population_size finished trials,
 * the parents of generation g + 1 are the elite of (the parents of g) plus
 * (every finished trial of g): whole fronts of the non-dominated sort in
 * rank order, the front that does not fit cut by crowding distance, largest
 * first. A child takes, with probability crossover_prob, each parameter
 * from one of two parents (uniform crossover: the second parent's value with
 * probability swapping_prob), otherwise a copy of one parent; then each
 * parameter is redrawn at random with probability mutation_prob (default
 * 1 / the number of non-constant parameters). Parents are picked by binary
 * tournament on (rank, crowding distance), Deb's crowded comparison.
 *
 * The parent population is a function of the finished trials only, so a
 * resumed study (on_start/on_complete replayed) suggests what the
 * uninterrupted one would. Failed trials are forgotten, as Optuna leaves out
 * trials that did not complete.
 *
 * Each generation's elite (with the ranks and crowding distances of its
 * members) is computed once and kept: a suggestion walks the kept elites and
 * recomputes one only when its inputs changed, that is when a trial of its
 * generation changed state or values (a late finisher, a retry, a failure)
 * or the elite before it was recomputed. In a sequential study that is once
 * per generation, so a suggestion costs a tournament and the draws of one
 * child, not a non-dominated sort of every generation so far.
 */
#include "search/searcher.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/pareto.h"

enum { PENDING = 0, DONE = 1, FORGOTTEN = 2 };

struct rec {
    int64_t id;
    int gen;
    int state;
    double *y;             /* m objectives, minimisation form (NaN: missing) */
    struct tunep_value *v; /* space->n values */
};

/*
 * The elite chosen from generation g's pool (the elite of g - 1 plus g's
 * finished trials): the parents of generation g + 1, with their ranks and
 * crowding distances among themselves (for the tournament). Valid while
 * serial != 0, ver equals the generation's change count and parent_serial
 * the serial of the elite it was chosen with (0 for generation 0).
 */
struct elite_cache {
    unsigned long serial, ver, parent_serial;
    size_t n;
    size_t *parents; /* population_size indices into recs */
    int *rank;
    double *crowd;
};

struct nsga2 {
    struct tunep_searcher base;
    struct tunep_nsga2_config c;
    size_t m;         /* objectives */
    size_t n_free;    /* non-constant parameters */
    struct rec *recs; /* by increasing id */
    size_t n_recs, cap_recs;
    /* Per generation: finished trials, a count of changes to its trials, its elite. */
    size_t *n_done;
    unsigned long *ver;
    struct elite_cache *elites;
    size_t n_gens;
    unsigned long next_serial;
    /* Scratch for computing one elite. */
    size_t *parents, *pool;
    int *rank;
    double *crowd, *ys;
    size_t cap_scratch;
};

void tunep_nsga2_config_default(struct tunep_nsga2_config *c)
{
    *c = (struct tunep_nsga2_config){
        .population_size = 50,
        .mutation_prob = -1, /* 1 / number of parameters */
        .crossover_prob = 0.9,
        .swapping_prob = 0.5,
    };
}

static struct rec *find(struct nsga2 *g, int64_t id)
{
    size_t lo = 0, hi = g->n_recs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->recs[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->n_recs && g->recs[lo].id == id ? &g->recs[lo] : NULL;
}

/* The record of trial id, created at the end (ids arrive in increasing order). */
static struct rec *add(struct nsga2 *g, int64_t id)
{
    struct rec *r = find(g, id);
    if (r)
        return r;
    if (g->n_recs && g->recs[g->n_recs - 1].id > id)
        return NULL;
    if (g->n_recs == g->cap_recs) {
        size_t cap = g->cap_recs ? 2 * g->cap_recs : 64;
        struct rec *recs = tunep_realloc(g->recs, g->cap_recs * sizeof *recs, cap * sizeof *recs);
        if (!recs)
            return NULL;
        g->recs = recs;
        g->cap_recs = cap;
    }
    size_t n = g->base.space->n;
    r = &g->recs[g->n_recs];
    *r = (struct rec){.id = id, .gen = -1, .state = PENDING};
    r->y = tunep_malloc(g->m * sizeof *r->y);
    r->v = tunep_calloc(n ? n : 1, sizeof *r->v);
    if (!r->y || !r->v) {
        tunep_free(r->y);
        tunep_free(r->v);
        return NULL;
    }
    g->n_recs++;
    return r;
}

/* Makes room for generation gen's counters and elite; 0 on OOM. */
static int ensure_gen(struct nsga2 *g, int gen)
{
    size_t need = (size_t)gen + 1;
    if (need <= g->n_gens)
        return 1;
    size_t cap = g->n_gens ? 2 * g->n_gens : 8;
    while (cap < need)
        cap *= 2;
    size_t *n_done = tunep_realloc(g->n_done, g->n_gens * sizeof *n_done, cap * sizeof *n_done);
    if (!n_done)
        return 0;
    g->n_done = n_done;
    unsigned long *ver = tunep_realloc(g->ver, g->n_gens * sizeof *ver, cap * sizeof *ver);
    if (!ver)
        return 0;
    g->ver = ver;
    struct elite_cache *e = tunep_realloc(g->elites, g->n_gens * sizeof *e, cap * sizeof *e);
    if (!e)
        return 0;
    g->elites = e;
    for (size_t i = g->n_gens; i < cap; i++) {
        n_done[i] = 0;
        ver[i] = 0;
        e[i] = (struct elite_cache){.serial = 0};
    }
    g->n_gens = cap;
    return 1;
}

/*
 * Moves rec to generation gen (-1: none) and state, called also when a
 * finished trial's values change. The elite of a generation depends on its
 * finished trials only: their counts and change counts follow. 0 on OOM.
 */
static int set_rec(struct nsga2 *g, struct rec *rec, int gen, int state)
{
    if (gen >= 0 && !ensure_gen(g, gen))
        return 0;
    if (rec->state == DONE && rec->gen >= 0) {
        g->n_done[rec->gen]--;
        g->ver[rec->gen]++;
    }
    rec->gen = gen;
    rec->state = state;
    if (state == DONE && gen >= 0) {
        g->n_done[gen]++;
        g->ver[gen]++;
    }
    return 1;
}

static int scratch(struct nsga2 *g, size_t n)
{
    if (n <= g->cap_scratch)
        return 1;
    tunep_free(g->parents);
    tunep_free(g->pool);
    tunep_free(g->rank);
    tunep_free(g->crowd);
    tunep_free(g->ys);
    g->parents = tunep_malloc(n * sizeof *g->parents);
    g->pool = tunep_malloc(n * sizeof *g->pool);
    g->rank = tunep_malloc(n * sizeof *g->rank);
    g->crowd = tunep_malloc(n * sizeof *g->crowd);
    g->ys = tunep_malloc(n * g->m * sizeof *g->ys);
    g->cap_scratch = g->parents && g->pool && g->rank && g->crowd && g->ys ? n : 0;
    return g->cap_scratch != 0;
}

/* Ranks and crowding distances of the k trials recs[idx[]] into g->rank and g->crowd. */
static tune_status rank_and_crowd(struct nsga2 *g, const size_t *idx, size_t k, tune_error *err)
{
    for (size_t a = 0; a < k; a++)
        memcpy(g->ys + a * g->m, g->recs[idx[a]].y, g->m * sizeof *g->ys);
    tune_status st = tunep_pareto_sort(g->ys, k, g->m, g->rank, err);
    size_t *front = NULL;
    double *dist = NULL;
    if (st)
        return st;
    front = tunep_malloc((k ? k : 1) * sizeof *front);
    dist = tunep_malloc((k ? k : 1) * sizeof *dist);
    if (!front || !dist) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        goto out;
    }
    for (int r = 0;; r++) {
        size_t n = 0;
        for (size_t a = 0; a < k; a++)
            if (g->rank[a] == r)
                front[n++] = a;
        if (n == 0)
            break;
        if ((st = tunep_pareto_crowding(g->ys, g->m, front, n, dist, err)))
            goto out;
        for (size_t a = 0; a < n; a++)
            g->crowd[front[a]] = dist[a];
    }
out:
    tunep_free(front);
    tunep_free(dist);
    return st;
}

struct keyed {
    double d;
    size_t pos;
};

static int keyed_cmp(const void *pa, const void *pb)
{
    const struct keyed *a = pa, *b = pb;
    if (a->d != b->d)
        return a->d < b->d ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

/*
 * pool[0..k) (indices into recs) -> parents: whole fronts by rank, the last
 * one that fits only in part ordered by crowding distance, largest first
 * (Optuna sorts ascending and reverses, so equal distances come last first).
 */
static tune_status elite(struct nsga2 *g, size_t k, size_t *ret_n, tune_error *err)
{
    size_t want = (size_t)g->c.population_size;
    tune_status st = rank_and_crowd(g, g->pool, k, err);
    if (st)
        return st;
    struct keyed *cut = tunep_malloc((k ? k : 1) * sizeof *cut);
    if (!cut)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    size_t n = 0;
    for (int r = 0; n < want; r++) {
        size_t fn = 0;
        for (size_t a = 0; a < k; a++)
            if (g->rank[a] == r)
                cut[fn++] = (struct keyed){g->crowd[a], a};
        if (fn == 0)
            break;
        if (n + fn <= want) {
            for (size_t a = 0; a < fn; a++)
                g->parents[n++] = g->pool[cut[a].pos];
            continue;
        }
        qsort(cut, fn, sizeof *cut, keyed_cmp);
        for (size_t a = fn; a-- > 0 && n < want;)
            g->parents[n++] = g->pool[cut[a].pos];
    }
    tunep_free(cut);
    *ret_n = n;
    return TUNE_OK;
}

/* Chooses generation gen's elite from the elite before it (NULL for generation 0) into e. */
static tune_status compute_elite(struct nsga2 *g, int gen, const struct elite_cache *prev,
                                 struct elite_cache *e, tune_error *err)
{
    size_t pop = (size_t)g->c.population_size;
    if (!scratch(g, g->n_recs + pop + 1))
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    if (!e->parents) {
        e->parents = tunep_malloc(pop * sizeof *e->parents);
        e->rank = tunep_malloc(pop * sizeof *e->rank);
        e->crowd = tunep_malloc(pop * sizeof *e->crowd);
        if (!e->parents || !e->rank || !e->crowd) {
            tunep_free(e->parents);
            tunep_free(e->rank);
            tunep_free(e->crowd);
            e->parents = NULL, e->rank = NULL, e->crowd = NULL;
            return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
        }
    }
    size_t k = 0, n = 0;
    for (size_t a = 0; prev && a < prev->n; a++)
        g->pool[k++] = prev->parents[a];
    for (size_t i = 0; i < g->n_recs; i++)
        if (g->recs[i].state == DONE && g->recs[i].gen == gen)
            g->pool[k++] = i;
    e->serial = 0;
    tune_status st = elite(g, k, &n, err);
    if (!st && n)
        st = rank_and_crowd(g, g->parents, n, err);
    if (st)
        return st;
    memcpy(e->parents, g->parents, n * sizeof *e->parents);
    memcpy(e->rank, g->rank, n * sizeof *e->rank);
    memcpy(e->crowd, g->crowd, n * sizeof *e->crowd);
    e->n = n;
    e->ver = g->ver[gen];
    e->parent_serial = prev ? prev->serial : 0;
    e->serial = ++g->next_serial;
    return TUNE_OK;
}

/*
 * The elite the next generation's children come from (NULL while generation
 * 0 is not complete), recomputing the kept elites whose inputs changed;
 * *ret_gen is the generation it was chosen from (-1: none).
 */
static tune_status parent_population(struct nsga2 *g, int *ret_gen,
                                     const struct elite_cache **ret_elite, tune_error *err)
{
    const struct elite_cache *prev = NULL;
    int gen = -1;
    while ((size_t)(gen + 1) < g->n_gens && g->n_done[gen + 1] >= (size_t)g->c.population_size) {
        struct elite_cache *e = &g->elites[gen + 1];
        if (!e->serial || e->ver != g->ver[gen + 1] ||
            e->parent_serial != (prev ? prev->serial : 0)) {
            tune_status st = compute_elite(g, gen + 1, prev, e, err);
            if (st)
                return st;
        }
        prev = e;
        gen++;
    }
    *ret_gen = gen;
    *ret_elite = prev;
    return TUNE_OK;
}

size_t tunep_nsga2_crowded_better(const int *rank, const double *crowd, size_t a, size_t b)
{
    if (rank[b] < rank[a] || (rank[b] == rank[a] && crowd[b] > crowd[a]))
        return b;
    return a;
}

/* Binary tournament: two draws with replacement, the better by crowded comparison. */
static size_t tournament(const int *rank, const double *crowd, size_t n, gsl_rng *r)
{
    size_t a = gsl_rng_uniform_int(r, n), b = gsl_rng_uniform_int(r, n);
    return tunep_nsga2_crowded_better(rank, crowd, a, b);
}

static tune_status nsga2_suggest(struct tunep_searcher *s, int64_t id, gsl_rng *r,
                                 struct tunep_value *out, tune_error *err)
{
    struct nsga2 *g = (struct nsga2 *)s;
    const tune_space *space = s->space;
    int gen;
    const struct elite_cache *e = NULL;
    tune_status st = parent_population(g, &gen, &e, err);
    if (st)
        return st;
    if (!e || e->n == 0) {
        tunep_space_sample(space, r, 0, 0, out);
    } else {
        const struct rec *p0 = &g->recs[e->parents[tournament(e->rank, e->crowd, e->n, r)]];
        const struct rec *p1 = NULL; /* no crossover: a copy of p0 */
        if (gsl_rng_uniform(r) < g->c.crossover_prob)
            p1 = &g->recs[e->parents[tournament(e->rank, e->crowd, e->n, r)]];
        double mut = g->c.mutation_prob >= 0 ? g->c.mutation_prob
                                             : 1.0 / (double)(g->n_free ? g->n_free : 1);
        for (size_t i = 0; i < space->n; i++) {
            const struct tunep_param *p = &space->params[i];
            out[i] = p1 && gsl_rng_uniform(r) < g->c.swapping_prob ? p1->v[i] : p0->v[i];
            if (p->dist != TUNEP_DIST_CONST && gsl_rng_uniform(r) < mut)
                tunep_space_value_at(p, gsl_rng_uniform(r), &out[i]);
        }
    }
    struct rec *rec = add(g, id);
    if (!rec || !set_rec(g, rec, gen + 1, rec->state))
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    return TUNE_OK;
}

static tune_status nsga2_on_start(struct tunep_searcher *s, int64_t id,
                                  const struct tunep_value *values)
{
    struct nsga2 *g = (struct nsga2 *)s;
    struct rec *rec = find(g, id);
    if (!rec) {
        /* A resumed trial: it joins the generation a suggestion now would have given it. */
        int gen;
        const struct elite_cache *e;
        tune_status st = parent_population(g, &gen, &e, NULL);
        if (st)
            return st;
        if (!(rec = add(g, id)) || !set_rec(g, rec, gen + 1, PENDING))
            return TUNE_ENOMEM;
    }
    memcpy(rec->v, values, s->space->n * sizeof *values);
    set_rec(g, rec, rec->gen, PENDING); /* its generation exists: no allocation */
    return TUNE_OK;
}

static tune_status nsga2_on_result(struct tunep_searcher *s, int64_t id, double t, double score)
{
    (void)s, (void)id, (void)t, (void)score;
    return TUNE_OK;
}

static tune_status nsga2_on_complete_values(struct tunep_searcher *s, int64_t id, int has_scores,
                                            const double *scores, size_t m)
{
    struct nsga2 *g = (struct nsga2 *)s;
    struct rec *rec = find(g, id);
    if (!rec)
        return TUNE_OK;
    if (!has_scores || m != g->m) {
        set_rec(g, rec, rec->gen, FORGOTTEN);
        return TUNE_OK;
    }
    /* Scores are larger-is-better with -inf for missing: minimisation form, missing = NaN. */
    for (size_t j = 0; j < m; j++)
        rec->y[j] = isfinite(scores[j]) || scores[j] == HUGE_VAL ? -scores[j] : (double)NAN;
    set_rec(g, rec, rec->gen, DONE);
    return TUNE_OK;
}

static tune_status nsga2_on_complete(struct tunep_searcher *s, int64_t id, int has_score, double t,
                                     double score)
{
    (void)t;
    return nsga2_on_complete_values(s, id, has_score, &score, 1);
}

static void nsga2_free(struct tunep_searcher *s)
{
    struct nsga2 *g = (struct nsga2 *)s;
    for (size_t i = 0; i < g->n_recs; i++) {
        tunep_free(g->recs[i].y);
        tunep_free(g->recs[i].v);
    }
    tunep_free(g->recs);
    for (size_t i = 0; i < g->n_gens; i++) {
        tunep_free(g->elites[i].parents);
        tunep_free(g->elites[i].rank);
        tunep_free(g->elites[i].crowd);
    }
    tunep_free(g->elites);
    tunep_free(g->n_done);
    tunep_free(g->ver);
    tunep_free(g->parents);
    tunep_free(g->pool);
    tunep_free(g->rank);
    tunep_free(g->crowd);
    tunep_free(g->ys);
    tunep_free(g);
}

static const struct tunep_searcher_ops nsga2_ops = {
    .name = "nsga2",
    .suggest = nsga2_suggest,
    .on_start = nsga2_on_start,
    .on_result = nsga2_on_result,
    .on_complete = nsga2_on_complete,
    .on_complete_values = nsga2_on_complete_values,
    .free = nsga2_free,
};

tune_status tunep_nsga2_new(const tune_space *space, const struct tunep_nsga2_config *c,
                            size_t n_objectives, struct tunep_searcher **ret, tune_error *err)
{
    tune_status st = tunep_unit_check(space, "nsga2", err);
    if (st)
        return st;
    if (!c || c->population_size < 2 || n_objectives < 1 ||
        n_objectives > TUNEP_PARETO_MAX_OBJECTIVES || !(c->crossover_prob >= 0) ||
        !(c->crossover_prob <= 1) || !(c->swapping_prob >= 0) || !(c->swapping_prob <= 1) ||
        !(c->mutation_prob <= 1))
        return tunep_error_set(err, TUNE_EINVAL, "nsga2: invalid configuration");
    struct nsga2 *g = tunep_calloc(1, sizeof *g);
    if (!g)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    g->base.ops = &nsga2_ops;
    g->base.space = space;
    g->c = *c;
    g->m = n_objectives;
    for (size_t i = 0; i < space->n; i++)
        g->n_free += space->params[i].dist != TUNEP_DIST_CONST;
    *ret = &g->base;
    return TUNE_OK;
}
