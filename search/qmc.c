/*
 * qmc.c - quasi-random designs: scrambled Sobol (GSL's gsl_qrng_sobol) and
 * Latin hypercube sampling, both mapped to values through the unit cube (unit.c).
 *
 * Neither keeps a history: trial i gets point i of the design, whatever ran
 * before it, so any concurrency gives the same configurations and pending
 * trials never collide (each id has its own point).
 * Sobol: GSL's sequence (Bratley and Fox 1988, 30 bits, at most 40
 * dimensions), scrambled by a random digital shift: every coordinate's
 * binary digits are XORed with one random 53-bit word per dimension drawn
 * from the seed, which keeps the net's stratification (a Cranley-Patterson
 * rotation, the other common choice, does not).
 * LHS (McKay et al. 1979): n strata per dimension; point j of block b lies in
 * stratum perm_{b,d}(j) of dimension d, at a uniform position inside it drawn
 * from the trial's stream. The permutations are keyed Feistel networks with
 * cycle walking (Black and Rogaway 2002), so they cost no memory at any n and
 * point j is computed without the others; trial ids past n start block b + 1.
 */
#include "qmc.h"

#include <math.h>
#include <string.h>

#include "searcher.h"

#define SALT_SOBOL 0x50b01c0ffee5eedULL
#define SALT_LHS   0x1a7e5eedcafe1ULL

/* ---- the Sobol sequence --------------------------------------------------- */

tune_status tunep_sobol_seq_init(struct tunep_sobol_seq *s, size_t dims, int scramble,
                                 uint64_t seed, tune_error *err)
{
    memset(s, 0, sizeof *s);
    if (dims > TUNEP_SOBOL_MAX_DIMS)
        return tunep_error_set(err, TUNE_ECONFIG,
                               "the space has %zu non-constant parameters, more than the %d "
                               "that GSL's Sobol sequence supports",
                               dims, TUNEP_SOBOL_MAX_DIMS);
    s->dims = (unsigned)dims;
    s->scramble = scramble != 0;
    uint64_t h = tunep_splitmix64(seed ^ SALT_SOBOL);
    for (size_t d = 0; d < dims; d++)
        s->shift[d] = scramble ? tunep_splitmix64(h + d) >> 11 : 0;
    if (dims == 0)
        return TUNE_OK;
    /* gsl_qrng_alloc() would malloc outside our allocator and abort on failure. */
    s->q.type = gsl_qrng_sobol;
    s->q.dimension = s->dims;
    s->q.state_size = gsl_qrng_sobol->state_size(s->dims);
    s->q.state = tunep_malloc(s->q.state_size);
    if (!s->q.state)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory for a Sobol sequence");
    gsl_qrng_init(&s->q);
    return TUNE_OK;
}

tune_status tunep_sobol_seq_point(struct tunep_sobol_seq *s, int64_t index, double *u,
                                  tune_error *err)
{
    if (index < 0 || index >= TUNEP_SOBOL_MAX_POINTS)
        return tunep_error_set(err, TUNE_EINVAL,
                               "Sobol point %lld is past the sequence's 2^30 - 1 points",
                               (long long)index);
    if (s->dims == 0)
        return TUNE_OK;
    if (index < s->next) {
        gsl_qrng_init(&s->q);
        s->next = 0;
    }
    while (s->next <= index) {
        if (gsl_qrng_get(&s->q, u) != 0)
            return tunep_error_set(err, TUNE_EINTERNAL, "GSL's Sobol sequence ended at point %lld",
                                   (long long)s->next);
        s->next++;
    }
    if (s->scramble)
        for (unsigned d = 0; d < s->dims; d++) {
            /* GSL's coordinates are k / 2^30: exact in the top 30 of 53 bits */
            uint64_t x = (uint64_t)(u[d] * 0x1.0p53) ^ s->shift[d];
            u[d] = (double)x * 0x1.0p-53;
        }
    return TUNE_OK;
}

void tunep_sobol_seq_rescramble(struct tunep_sobol_seq *s, uint64_t seed)
{
    uint64_t h = tunep_splitmix64(seed ^ SALT_SOBOL);
    s->scramble = 1;
    for (unsigned d = 0; d < s->dims; d++)
        s->shift[d] = tunep_splitmix64(h + d) >> 11;
    if (s->dims > 0) {
        gsl_qrng_init(&s->q);
        s->next = 0;
    }
}

void tunep_sobol_seq_done(struct tunep_sobol_seq *s)
{
    if (s && s->q.state) {
        tunep_free(s->q.state);
        s->q.state = NULL;
    }
}

/* ---- Latin hypercube permutations ----------------------------------------- */

/* A keyed bijection of [0, 2^(2h)): a 6-round balanced Feistel network. */
static uint64_t feistel(uint64_t x, unsigned h, uint64_t key)
{
    uint64_t mask = ((uint64_t)1 << h) - 1; /* h <= 32 */
    uint64_t l = x >> h, r = x & mask;
    for (uint64_t round = 0; round < 6; round++) {
        uint64_t f = tunep_splitmix64(r ^ tunep_splitmix64(key + round)) & mask;
        uint64_t t = r;
        r = l ^ f;
        l = t;
    }
    return (l << h) | r;
}

/* A keyed permutation of [0, n): the Feistel network, walked until it lands below n. */
static uint64_t permute(uint64_t j, uint64_t n, uint64_t key)
{
    if (n <= 1)
        return 0;
    unsigned bits = 0;
    while (bits < 64 && ((n - 1) >> bits) != 0)
        bits++;
    unsigned h = (bits + 1) / 2; /* domain 2^(2h) < 4n: at most a few steps of walking */
    uint64_t x = j;
    do
        x = feistel(x, h, key);
    while (x >= n);
    return x;
}

/* ---- the searchers -------------------------------------------------------- */

struct qmc {
    struct tunep_searcher base;
    size_t dims;
    double *u;                  /* dims coordinates of the current point */
    struct tunep_sobol_seq seq; /* Sobol */
    int64_t n;                  /* LHS: strata per dimension */
    uint64_t key;               /* LHS: permutation key, from the seed */
};

static tune_status ignore_start(struct tunep_searcher *s, int64_t id,
                                const struct tunep_value *values)
{
    (void)s;
    (void)id;
    (void)values;
    return TUNE_OK;
}

static tune_status ignore_result(struct tunep_searcher *s, int64_t id, double t, double score)
{
    (void)s;
    (void)id;
    (void)t;
    (void)score;
    return TUNE_OK;
}

static tune_status ignore_complete(struct tunep_searcher *s, int64_t id, int has_score, double t,
                                   double score)
{
    (void)s;
    (void)id;
    (void)has_score;
    (void)t;
    (void)score;
    return TUNE_OK;
}

static void qmc_free(struct tunep_searcher *base)
{
    struct qmc *q = (struct qmc *)base;
    tunep_sobol_seq_done(&q->seq);
    tunep_free(q->u);
    tunep_free(q);
}

static tune_status sobol_suggest(struct tunep_searcher *base, int64_t id, gsl_rng *r,
                                 struct tunep_value *out, tune_error *err)
{
    struct qmc *q = (struct qmc *)base;
    (void)r;
    tune_status st = tunep_sobol_seq_point(&q->seq, id, q->u, err);
    if (st)
        return st;
    tunep_unit_to_values(base->space, q->u, out);
    return TUNE_OK;
}

static tune_status lhs_suggest(struct tunep_searcher *base, int64_t id, gsl_rng *r,
                               struct tunep_value *out, tune_error *err)
{
    struct qmc *q = (struct qmc *)base;
    if (id < 0)
        return tunep_error_set(err, TUNE_EINVAL, "trial id %lld is negative", (long long)id);
    uint64_t n = (uint64_t)q->n, block = (uint64_t)id / n, j = (uint64_t)id % n;
    uint64_t bkey = tunep_splitmix64(q->key ^ tunep_splitmix64(block));
    for (size_t d = 0; d < q->dims; d++) {
        uint64_t k = permute(j, n, tunep_splitmix64(bkey + d));
        double lo = (double)k / (double)n, hi = (double)(k + 1) / (double)n;
        double u = lo + (r ? gsl_rng_uniform(r) : 0.5) * (hi - lo); /* no stream: the middle */
        q->u[d] = u >= hi ? nextafter(hi, lo) : u < lo ? lo : u;
    }
    tunep_unit_to_values(base->space, q->u, out);
    return TUNE_OK;
}

static const struct tunep_searcher_ops sobol_ops = {
    "sobol", sobol_suggest, ignore_start, ignore_result, ignore_complete, qmc_free, NULL,
};

static const struct tunep_searcher_ops lhs_ops = {
    "lhs", lhs_suggest, ignore_start, ignore_result, ignore_complete, qmc_free, NULL,
};

void tunep_qmc_config_default(struct tunep_qmc_config *c)
{
    memset(c, 0, sizeof *c);
    c->scramble = 1;
    c->lhs_samples = 0;
}

static tune_status qmc_new(const tune_space *space, const struct tunep_searcher_ops *ops,
                           struct qmc **ret, tune_error *err)
{
    if (!space || !ret)
        return tunep_error_set(err, TUNE_EINVAL, "space and ret must not be NULL");
    tune_status st = tunep_unit_check(space, ops->name, err);
    if (st)
        return st;
    struct qmc *q = tunep_calloc(1, sizeof *q);
    if (!q)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory creating the %s searcher",
                               ops->name);
    q->base.ops = ops;
    q->base.space = space;
    q->dims = tunep_unit_dims(space);
    q->u = tunep_calloc(q->dims ? q->dims : 1, sizeof *q->u);
    if (!q->u) {
        tunep_free(q);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory creating the %s searcher",
                               ops->name);
    }
    *ret = q;
    return TUNE_OK;
}

tune_status tunep_sobol_new(const tune_space *space, const struct tunep_qmc_config *c,
                            uint64_t seed, struct tunep_searcher **ret, tune_error *err)
{
    struct tunep_qmc_config def;
    if (!c) {
        tunep_qmc_config_default(&def);
        c = &def;
    }
    if (space && tunep_unit_dims(space) > TUNEP_SOBOL_MAX_DIMS)
        return tunep_error_set(err, TUNE_ECONFIG,
                               "sobol: the space has %zu non-constant parameters, more than the "
                               "%d that GSL's Sobol sequence supports",
                               tunep_unit_dims(space), TUNEP_SOBOL_MAX_DIMS);
    struct qmc *q;
    tune_status st = qmc_new(space, &sobol_ops, &q, err);
    if (st)
        return st;
    st = tunep_sobol_seq_init(&q->seq, q->dims, c->scramble, seed, err);
    if (st) {
        qmc_free(&q->base);
        return st;
    }
    *ret = &q->base;
    return TUNE_OK;
}

tune_status tunep_lhs_new(const tune_space *space, const struct tunep_qmc_config *c, uint64_t seed,
                          int64_t n_trials, struct tunep_searcher **ret, tune_error *err)
{
    struct tunep_qmc_config def;
    if (!c) {
        tunep_qmc_config_default(&def);
        c = &def;
    }
    if (c->lhs_samples < 0)
        return tunep_error_set(err, TUNE_ECONFIG, "lhs_samples must be >= 0 (0: num_samples)");
    int64_t n = c->lhs_samples > 0 ? c->lhs_samples : n_trials;
    if (n < 1)
        return tunep_error_set(err, TUNE_ECONFIG,
                               "lhs needs the number of strata: set num_samples or lhs_samples");
    struct qmc *q;
    tune_status st = qmc_new(space, &lhs_ops, &q, err);
    if (st)
        return st;
    q->n = n;
    q->key = tunep_splitmix64(seed ^ SALT_LHS);
    *ret = &q->base;
    return TUNE_OK;
}
