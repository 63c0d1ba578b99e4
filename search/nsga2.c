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
 * The parent population is recomputed from the finished trials at every
 * suggestion, so a resumed study (on_start/on_complete replayed) suggests
 * what the uninterrupted one would. Failed trials are forgotten, as Optuna
 * leaves out trials that did not complete.
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

struct nsga2 {
    struct tunep_searcher base;
    struct tunep_nsga2_config c;
    size_t m;         /* objectives */
    size_t n_free;    /* non-constant parameters */
    struct rec *recs; /* by increasing id */
    size_t n_recs, cap_recs;
    /* Scratch for one suggestion. */
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

/*
 * The parents for the next generation into g->parents[0..*ret_n), with their
 * ranks and crowding distances in g->rank and g->crowd; *ret_gen is the
 * generation they were chosen from (-1: generation 0 is not complete yet).
 */
static tune_status parent_population(struct nsga2 *g, int *ret_gen, size_t *ret_n, tune_error *err)
{
    size_t n_par = 0;
    int gen = -1;
    if (!scratch(g, g->n_recs + (size_t)g->c.population_size + 1))
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    for (;;) {
        size_t k = 0;
        for (size_t a = 0; a < n_par; a++)
            g->pool[k++] = g->parents[a];
        size_t fresh = 0;
        for (size_t i = 0; i < g->n_recs; i++)
            if (g->recs[i].state == DONE && g->recs[i].gen == gen + 1) {
                g->pool[k++] = i;
                fresh++;
            }
        if (fresh < (size_t)g->c.population_size)
            break;
        tune_status st = elite(g, k, &n_par, err);
        if (st)
            return st;
        gen++;
    }
    *ret_gen = gen;
    *ret_n = n_par;
    return n_par ? rank_and_crowd(g, g->parents, n_par, err) : TUNE_OK;
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
    size_t n_par;
    tune_status st = parent_population(g, &gen, &n_par, err);
    if (st)
        return st;
    if (gen < 0) {
        tunep_space_sample(space, r, 0, 0, out);
    } else {
        const struct rec *p0 = &g->recs[g->parents[tournament(g->rank, g->crowd, n_par, r)]];
        const struct rec *p1 = NULL; /* no crossover: a copy of p0 */
        if (gsl_rng_uniform(r) < g->c.crossover_prob)
            p1 = &g->recs[g->parents[tournament(g->rank, g->crowd, n_par, r)]];
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
    if (!rec)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory");
    rec->gen = gen + 1;
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
        size_t n_par;
        tune_status st = parent_population(g, &gen, &n_par, NULL);
        if (st)
            return st;
        if (!(rec = add(g, id)))
            return TUNE_ENOMEM;
        rec->gen = gen + 1;
    }
    memcpy(rec->v, values, s->space->n * sizeof *values);
    rec->state = PENDING;
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
        rec->state = FORGOTTEN;
        return TUNE_OK;
    }
    /* Scores are larger-is-better with -inf for missing: minimisation form, missing = NaN. */
    for (size_t j = 0; j < m; j++)
        rec->y[j] = isfinite(scores[j]) || scores[j] == HUGE_VAL ? -scores[j] : (double)NAN;
    rec->state = DONE;
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
