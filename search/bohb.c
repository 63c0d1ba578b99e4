/*
 * bohb.c - BOHB's model (Falkner et al., ICML 2018): TPE fitted on the
 * largest budget that has enough results, run with the hyperband scheduler.
 *
 * HyperBand evaluates configurations on several budgets (its rungs). BOHB
 * keeps every result with the budget it was measured at (the scheduler's
 * time_attr value) and, for each new configuration:
 *  - with probability random_fraction (1/3, as in the paper) draws it at
 *    random, which keeps the search from trusting a bad model too long;
 *  - otherwise fits a model on the largest budget b with at least
 *    max(d + 1, n_startup_trials) results (d = dimensions, the paper's
 *    N_min) and asks it. The model is this project's TPE (search/tpe.c)
 *    built afresh from the results at b, with the trials that have no
 *    result at b yet passed as pending (constant liar), so that parallel
 *    suggestions spread. Where the paper uses a multivariate KDE, set
 *    "multivariate": true.
 *  - when no budget has enough results yet, it draws at random.
 * Rebuilding the model costs O(n) per suggestion, small next to a trial.
 */
#include "search/searcher.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BOHB_RANDOM_FRACTION (1.0 / 3.0)

struct result {
    int64_t id;
    double t;
    double score;
};

struct bohb_trial {
    int64_t id;
    struct tunep_value *values; /* space->n; strings borrowed from the space */
    int done;                   /* completed (any way): never pending again */
};

struct bohb {
    struct tunep_searcher base;
    struct tunep_tpe_config tpe;
    uint64_t seed;
    size_t dims;
    struct bohb_trial *trials;
    size_t n_trials, cap_trials;
    struct result *results;
    size_t n_results, cap_results;
};

static struct bohb_trial *find_trial(struct bohb *b, int64_t id)
{
    /* Ids arrive in increasing order: binary search. */
    size_t lo = 0, hi = b->n_trials;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->trials[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < b->n_trials && b->trials[lo].id == id ? &b->trials[lo] : NULL;
}

static tune_status bohb_on_start(struct tunep_searcher *s, int64_t id,
                                 const struct tunep_value *values)
{
    struct bohb *b = (struct bohb *)s;
    size_t n = s->space->n;
    if (find_trial(b, id))
        return TUNE_OK;
    if (b->n_trials && b->trials[b->n_trials - 1].id > id)
        return TUNE_EINVAL; /* ids must increase */
    if (b->n_trials == b->cap_trials) {
        size_t cap = b->cap_trials ? b->cap_trials * 2 : 64;
        struct bohb_trial *p = tunep_realloc(b->trials, b->n_trials * sizeof *p, cap * sizeof *p);
        if (!p)
            return TUNE_ENOMEM;
        b->trials = p;
        b->cap_trials = cap;
    }
    struct tunep_value *v = tunep_malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return TUNE_ENOMEM;
    if (n)
        memcpy(v, values, n * sizeof *v);
    b->trials[b->n_trials++] = (struct bohb_trial){.id = id, .values = v};
    return TUNE_OK;
}

static tune_status add_result(struct bohb *b, int64_t id, double t, double score)
{
    /* A trial's result at a budget it already reported at replaces the old one. */
    for (size_t i = b->n_results; i-- > 0;)
        if (b->results[i].id == id && b->results[i].t == t) {
            b->results[i].score = score;
            return TUNE_OK;
        }
    if (b->n_results == b->cap_results) {
        size_t cap = b->cap_results ? b->cap_results * 2 : 256;
        struct result *p = tunep_realloc(b->results, b->n_results * sizeof *p, cap * sizeof *p);
        if (!p)
            return TUNE_ENOMEM;
        b->results = p;
        b->cap_results = cap;
    }
    b->results[b->n_results++] = (struct result){id, t, score};
    return TUNE_OK;
}

static tune_status bohb_on_result(struct tunep_searcher *s, int64_t id, double t, double score)
{
    return add_result((struct bohb *)s, id, t, score);
}

static tune_status bohb_on_complete(struct tunep_searcher *s, int64_t id, int has_score, double t,
                                    double score)
{
    struct bohb *b = (struct bohb *)s;
    struct bohb_trial *tr = find_trial(b, id);
    if (tr)
        tr->done = 1;
    if (!has_score) {
        /* An ERROR trial: its results are dropped, as Ray's on_trial_error. */
        size_t k = 0;
        for (size_t i = 0; i < b->n_results; i++)
            if (b->results[i].id != id)
                b->results[k++] = b->results[i];
        b->n_results = k;
        return TUNE_OK;
    }
    return add_result(b, id, t, score);
}

static int by_budget_desc(const void *pa, const void *pb)
{
    double a = ((const struct result *)pa)->t, c = ((const struct result *)pb)->t;
    return (a < c) - (a > c);
}

/* The largest budget with at least n_min results; 0 and -INFINITY when none. */
static double model_budget(struct bohb *b, size_t n_min, size_t *ret_count)
{
    struct result *r = tunep_malloc((b->n_results ? b->n_results : 1) * sizeof *r);
    if (!r)
        return -HUGE_VAL;
    if (b->n_results)
        memcpy(r, b->results, b->n_results * sizeof *r);
    qsort(r, b->n_results, sizeof *r, by_budget_desc);
    double budget = -HUGE_VAL;
    for (size_t i = 0; i < b->n_results;) {
        size_t j = i;
        while (j < b->n_results && r[j].t == r[i].t)
            j++;
        if (j - i >= n_min) {
            budget = r[i].t;
            *ret_count = j - i;
            break;
        }
        i = j;
    }
    tunep_free(r);
    return budget;
}

static tune_status bohb_suggest(struct tunep_searcher *s, int64_t id, gsl_rng *r,
                                struct tunep_value *out, tune_error *err)
{
    struct bohb *b = (struct bohb *)s;
    size_t n_min = b->dims + 1;
    if ((size_t)b->tpe.n_startup_trials > n_min)
        n_min = (size_t)b->tpe.n_startup_trials;
    size_t count = 0;
    double budget = model_budget(b, n_min, &count);
    if (budget == -HUGE_VAL || gsl_rng_uniform(r) < BOHB_RANDOM_FRACTION) {
        tunep_space_sample(s->space, r, 0, 0, out);
        return TUNE_OK;
    }
    /* A TPE on this budget's results, the other live trials pending. */
    struct tunep_tpe_config c = b->tpe;
    c.n_startup_trials = 0;
    struct tunep_searcher *tpe = NULL;
    tune_status st = tunep_tpe_new(s->space, &c, b->seed, &tpe, err);
    for (size_t i = 0; !st && i < b->n_trials; i++) {
        const struct bohb_trial *tr = &b->trials[i];
        const struct result *res = NULL;
        for (size_t k = 0; k < b->n_results; k++)
            if (b->results[k].id == tr->id && b->results[k].t == budget)
                res = &b->results[k];
        if (!res && tr->done)
            continue; /* ended below this budget: no evidence either way */
        st = tpe->ops->on_start(tpe, tr->id, tr->values);
        if (!st && res)
            st = tpe->ops->on_complete(tpe, tr->id, 1, budget, res->score);
    }
    if (!st)
        st = tpe->ops->suggest(tpe, id, r, out, err);
    else if (st == TUNE_ENOMEM)
        tunep_error_set(err, st, "bohb: out of memory");
    tunep_searcher_free(tpe);
    return st;
}

static void bohb_free(struct tunep_searcher *s)
{
    struct bohb *b = (struct bohb *)s;
    for (size_t i = 0; i < b->n_trials; i++)
        tunep_free(b->trials[i].values);
    tunep_free(b->trials);
    tunep_free(b->results);
    tunep_free(b);
}

static const struct tunep_searcher_ops bohb_ops = {
    .name = "bohb",
    .suggest = bohb_suggest,
    .on_start = bohb_on_start,
    .on_result = bohb_on_result,
    .on_complete = bohb_on_complete,
    .free = bohb_free,
};

tune_status tunep_bohb_new(const tune_space *space, const struct tunep_tpe_config *c,
                           uint64_t seed, struct tunep_searcher **ret, tune_error *err)
{
    /* Let TPE refuse what it cannot search (a grid_search axis) up front. */
    struct tunep_searcher *probe = NULL;
    tune_status st = tunep_space_refuse_conditional(space, "bohb", err);
    if (st)
        return st;
    st = tunep_tpe_new(space, c, seed, &probe, err);
    if (st)
        return st;
    tunep_searcher_free(probe);
    struct bohb *b = tunep_calloc(1, sizeof *b);
    if (!b)
        return tunep_error_set(err, TUNE_ENOMEM, "bohb: out of memory");
    b->base.ops = &bohb_ops;
    b->base.space = space;
    b->tpe = *c;
    b->seed = seed;
    for (size_t i = 0; i < space->n; i++)
        b->dims += space->params[i].dist != TUNEP_DIST_CONST;
    *ret = &b->base;
    return TUNE_OK;
}
