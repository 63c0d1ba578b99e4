/*
 * test_pbt.c - population based training: Ray's quantile sizes, exploit only
 * from the bottom quantile with a donor from the top one (checked against a
 * brute-force ranking of a simulated population), explore's invariants
 * (list values stay in the list and move by at most one place, numbers are
 * exactly x1.2 or x0.8 or a resample from their distribution, ints stay ints),
 * time sharing, and reproducibility from the seed.
 *
 * Reference: ray/tune/schedulers/pbt.py (_quantiles, _explore,
 * on_trial_result, choose_trial_to_run).
 */
#include "check_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "schedulers/pbt.h"
#include "schedulers/scheduler.h"
#include "base/rng.h"

/* ---- a study space and its mutations ---------------------------------------------------- */

enum { P_LR, P_BATCH, P_LAYERS, P_DROPOUT, P_ACT, P_FIXED, P_COUNT };

struct fixture {
    tune_space *space;
    tune_space *dists[4];
    struct tunep_value batch_values[3], act_values[3];
    struct tunep_mutation muts[5];
    struct tunep_pbt_config pc;
    struct tunep_scheduler_config c; /* borrows pc */
};

static const struct tunep_scheduler_type *pbt_type(void)
{
    const struct tunep_scheduler_type *t = tunep_scheduler_find("pbt");
    ck_assert_ptr_nonnull(t);
    return t;
}

static tune_space *one_param(const char *name, const char *json)
{
    tune_space *sp = NULL;
    tune_error err;
    ck_assert_int_eq(tune_space_new(&sp, &err), TUNE_OK);
    ck_assert_msg(tune_space_add_json(sp, name, json, &err) == TUNE_OK, "%s", err.text);
    return sp;
}

static void fixture_init(struct fixture *f)
{
    tune_error err;
    memset(f, 0, sizeof *f);
    ck_assert_int_eq(tune_space_new(&f->space, &err), TUNE_OK);
    ck_assert_int_eq(tune_space_add_json(f->space, "lr", "{\"loguniform\": [1e-5, 1e-1]}", &err),
                     TUNE_OK);
    ck_assert_int_eq(
        tune_space_add_json(f->space, "batch_size", "{\"choice\": [16, 32, 64]}", &err), TUNE_OK);
    ck_assert_int_eq(tune_space_add_json(f->space, "layers", "{\"randint\": [1, 9]}", &err),
                     TUNE_OK);
    ck_assert_int_eq(tune_space_add_json(f->space, "dropout", "{\"uniform\": [0, 0.5]}", &err),
                     TUNE_OK);
    ck_assert_int_eq(
        tune_space_add_json(f->space, "act", "{\"choice\": [\"relu\", \"gelu\", \"tanh\"]}", &err),
        TUNE_OK);
    ck_assert_int_eq(tune_space_add_json(f->space, "fixed", "7", &err), TUNE_OK);
    f->dists[0] = one_param("lr", "{\"loguniform\": [1e-5, 1e-1]}");
    f->dists[1] = one_param("layers", "{\"randint\": [1, 9]}");
    f->dists[2] = one_param("dropout", "{\"uniform\": [0, 0.5]}");
    f->dists[3] = one_param("lr", "{\"qloguniform\": [1e-4, 1e-1, 1e-4]}");
    static const char *acts[3] = {"relu", "gelu", "tanh"};
    for (int i = 0; i < 3; i++) {
        f->batch_values[i] = (struct tunep_value){.type = TUNEP_V_INT, .u.i = 16 << i};
        f->act_values[i] = (struct tunep_value){.type = TUNEP_V_STRING, .u.s = acts[i]};
    }
    f->muts[0] = (struct tunep_mutation){.param = P_LR, .dist = f->dists[0]};
    f->muts[1] = (struct tunep_mutation){
        .param = P_BATCH, .is_list = 1, .n_values = 3, .values = f->batch_values};
    f->muts[2] = (struct tunep_mutation){.param = P_LAYERS, .dist = f->dists[1]};
    f->muts[3] = (struct tunep_mutation){.param = P_DROPOUT, .dist = f->dists[2]};
    f->muts[4] = (struct tunep_mutation){
        .param = P_ACT, .is_list = 1, .n_values = 3, .values = f->act_values};
    ck_assert_int_eq(tunep_options_default(pbt_type()->options, &f->pc), 0);
    f->pc.perturbation_interval = 1;
    /* borrowed (free NULL): the scheduler copies them */
    f->pc.mutations = (struct tunep_mutations){.v = f->muts, .n = 5};
    f->c = (struct tunep_scheduler_config){pbt_type(), &f->pc};
}

static void fixture_done(struct fixture *f)
{
    for (int i = 0; i < 4; i++)
        tune_space_free(f->dists[i]);
    tune_space_free(f->space);
}

static struct tunep_scheduler *new_pbt(struct fixture *f, uint64_t seed)
{
    struct tunep_scheduler *s = NULL;
    tune_error err;
    ck_assert_int_eq(tunep_scheduler_new(&f->c, f->space, seed, &s, &err), TUNE_OK);
    return s;
}

static double uniform01(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return (double)((*x * 2685821657736338717ULL) >> 11) * 0x1.0p-53;
}

/* ---- tests ----------------------------------------------------------------------------- */

START_TEST(test_defaults_and_quantiles)
{
    struct tunep_scheduler_config c;
    ck_assert_int_eq(tunep_scheduler_config_init(&c, pbt_type(), NULL), TUNE_OK);
    const struct tunep_pbt_config *pc = c.cfg;
    ck_assert_str_eq(pc->time_attr, "training_iteration");
    ck_assert_double_eq(pc->perturbation_interval, 60);
    ck_assert_double_eq(pc->burn_in_period, 0);
    ck_assert_double_eq(pc->quantile_fraction, 0.25);
    ck_assert_double_eq(pc->resample_probability, 0.25);
    ck_assert_double_eq(pc->perturbation_factors[0], 1.2);
    ck_assert_double_eq(pc->perturbation_factors[1], 0.8);
    ck_assert_uint_eq(pc->mutations.n, 0);
    ck_assert_ptr_eq(tunep_scheduler_find("population_based_training"), pbt_type());
    /* PBT needs mutations and the space. */
    struct tunep_scheduler *s = NULL;
    ck_assert_int_eq(tunep_scheduler_new(&c, NULL, 0, &s, NULL), TUNE_EINVAL);
    struct fixture f;
    fixture_init(&f);
    ck_assert_int_eq(tunep_scheduler_new(&c, f.space, 0, &s, NULL), TUNE_EINVAL);
    tunep_scheduler_config_done(&c);
    f.muts[2].param = SIZE_MAX; /* unresolved */
    ck_assert_int_eq(tunep_scheduler_new(&f.c, f.space, 0, &s, NULL), TUNE_EINVAL);
    f.muts[2].param = P_LAYERS;
    f.pc.quantile_fraction = 0.6;
    ck_assert_int_eq(tunep_scheduler_new(&f.c, f.space, 0, &s, NULL), TUNE_EINVAL);
    ck_assert_ptr_null(s);
    fixture_done(&f);

    /* Ray's _quantiles(): int(ceil(n * q)), at most floor(n / 2), none for n <= 1. */
    static const struct {
        double q;
        size_t n, want;
    } cases[] = {
        {0.25, 0, 0}, {0.25, 1, 0}, {0.25, 2, 1}, {0.25, 3, 1},    {0.25, 4, 1},
        {0.25, 5, 2}, {0.25, 8, 2}, {0.25, 9, 3}, {0.25, 100, 25}, {0.5, 3, 1},
        {0.5, 4, 2},  {0.5, 7, 3},  {0.0, 10, 0}, {0.1, 11, 2},    {0.1, 10, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(tunep_pbt_quantile_size(cases[i].q, cases[i].n) == cases[i].want, "case %zu",
                      i);
}
END_TEST

/*
 * A population of N trials reporting round after round (interval 1: every
 * report is a check) in a random order; each decision is compared with a
 * brute-force ranking of the last scores. Returns the donors chosen, in order.
 */
static int run_population(struct fixture *f, uint64_t seed, int64_t *donors, int max_donors)
{
    enum { N = 20, ROUNDS = 60 };
    struct tunep_scheduler *s = new_pbt(f, seed);
    double last[N];
    int has[N] = {0};
    int n_donors = 0;
    size_t top_hits[N] = {0};
    uint64_t x = 0xC0FFEEULL;
    for (int64_t i = 0; i < N; i++)
        ck_assert_int_eq(tunep_scheduler_on_trial_add(s, i, 0.0), TUNE_OK);
    int64_t order[N];
    for (int64_t i = 0; i < N; i++)
        order[i] = i;
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    struct tunep_value donor_vals[P_COUNT], out[P_COUNT];
    memset(donor_vals, 0, sizeof donor_vals);
    for (int round = 1; round <= ROUNDS; round++) {
        for (int i = N - 1; i > 0; i--) { /* shuffle the arrival order */
            int j = (int)(uniform01(&x) * (i + 1));
            int64_t tmp = order[i];
            order[i] = order[j];
            order[j] = tmp;
        }
        for (int k = 0; k < N; k++) {
            int64_t id = order[k];
            double score = uniform01(&x);
            last[id] = score;
            has[id] = 1;
            enum tunep_decision d = tunep_scheduler_on_result(s, id, 1, round, score);
            /* brute force: rank = number of ranked trials below (ties impossible here) */
            size_t n = 0, rank = 0;
            for (int j = 0; j < N; j++) {
                if (!has[j])
                    continue;
                n++;
                if (last[j] < score)
                    rank++;
            }
            size_t q = tunep_pbt_quantile_size(0.25, n);
            size_t got_rank;
            ck_assert(tunep_pbt_rank(tunep_scheduler_pbt(s), id, &got_rank));
            ck_assert_uint_eq(got_rank, rank);
            ck_assert_uint_eq(tunep_pbt_ranked(tunep_scheduler_pbt(s)), n);
            if (rank < q) {
                ck_assert_int_eq(d, TUNEP_EXPLOIT);
                int64_t donor = tunep_scheduler_exploit_donor(s, id);
                ck_assert(donor >= 0 && donor < N && donor != id);
                size_t drank = 0;
                for (int j = 0; j < N; j++)
                    if (has[j] && last[j] < last[donor])
                        drank++;
                ck_assert_msg(drank >= n - q, "donor rank %zu of %zu (q %zu)", drank, n, q);
                top_hits[n - 1 - drank]++;
                if (n_donors < max_donors)
                    donors[n_donors++] = donor;
                /* the controller exploits: the trial takes the donor's check times */
                gsl_rng_set(r, (unsigned long)(round * 1000 + id));
                tunep_scheduler_explore(s, id, donor_vals, r, out);
                ck_assert_int_eq(tunep_scheduler_exploit_donor(s, id), -1);
            } else {
                ck_assert_int_eq(d, TUNEP_CONTINUE); /* nobody waits */
                ck_assert_int_eq(tunep_scheduler_exploit_donor(s, id), -1);
            }
        }
    }
    /* each of the top q places (q = 5 once everyone is ranked) gave a donor, roughly evenly:
     * ~ 60 rounds x 5 exploits / 5 places each, sd ~ 8 */
    for (int p = 0; p < 5; p++)
        ck_assert_msg(top_hits[p] > 25, "place %d chosen %zu times", p, top_hits[p]);
    ck_assert_int_eq(tunep_pbt_num_exploits(tunep_scheduler_pbt(s)), n_donors);
    gsl_rng_free(r);
    tunep_scheduler_free(s);
    return n_donors;
}

START_TEST(test_exploit_bottom_donor_top)
{
    struct fixture f;
    fixture_init(&f);
    enum { MAX = 4096 };
    int64_t *a = malloc(MAX * sizeof *a), *b = malloc(MAX * sizeof *b);
    int na = run_population(&f, 42, a, MAX);
    ck_assert_int_gt(na, 250); /* 5 of 20 per round, 60 rounds */
    /* same seed, same events: the same donors */
    int nb = run_population(&f, 42, b, MAX);
    ck_assert_int_eq(na, nb);
    ck_assert(memcmp(a, b, (size_t)na * sizeof *a) == 0);
    /* another seed: other donors (the decisions themselves do not depend on it) */
    nb = run_population(&f, 43, b, MAX);
    ck_assert_int_eq(na, nb);
    ck_assert(memcmp(a, b, (size_t)na * sizeof *a) != 0);
    free(a);
    free(b);
    fixture_done(&f);
}
END_TEST

static struct tunep_value vint(int64_t i)
{
    return (struct tunep_value){.type = TUNEP_V_INT, .u.i = i};
}

static struct tunep_value vdbl(double d)
{
    return (struct tunep_value){.type = TUNEP_V_DOUBLE, .u.d = d};
}

static struct tunep_value vstr(const char *s)
{
    return (struct tunep_value){.type = TUNEP_V_STRING, .u.s = s};
}

START_TEST(test_explore_invariants)
{
    struct fixture f;
    fixture_init(&f);
    struct tunep_scheduler *s = new_pbt(&f, 1);
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    gsl_rng_set(r, 12345);
    enum { DRAWS = 20000 };
    struct tunep_value donor[P_COUNT] = {vdbl(1e-3), vint(32),     vint(5),
                                         vdbl(0.45), vstr("gelu"), vint(7)};
    int lr_perturbed = 0, batch_same = 0, batch_shift = 0, layers_perturbed = 0;
    int dropout_clamped = 0, dropout_down = 0, act_same = 0;
    for (int k = 0; k < DRAWS; k++) {
        struct tunep_value out[P_COUNT];
        tunep_scheduler_explore(s, 0, donor, r, out);
        /* the unmutated parameter is copied */
        ck_assert_int_eq(out[P_FIXED].type, TUNEP_V_INT);
        ck_assert_int_eq(out[P_FIXED].u.i, 7);
        /* lr: exactly x1.2 or x0.8, or a resample inside loguniform's range */
        ck_assert_int_eq(out[P_LR].type, TUNEP_V_DOUBLE);
        double lr = out[P_LR].u.d;
        if (lr == 1e-3 * 1.2 || lr == 1e-3 * 0.8)
            lr_perturbed++;
        else
            ck_assert(lr >= 1e-5 && lr < 1e-1);
        /* batch_size: stays in the list, an int; from 32 a shift goes to 16 or 64 */
        ck_assert_int_eq(out[P_BATCH].type, TUNEP_V_INT);
        int64_t b = out[P_BATCH].u.i;
        ck_assert(b == 16 || b == 32 || b == 64);
        batch_same += b == 32;
        batch_shift += b != 32;
        /* layers: an int, 6 (5 x 1.2) or 4 (5 x 0.8), or a resample in [1, 8] */
        ck_assert_int_eq(out[P_LAYERS].type, TUNEP_V_INT);
        int64_t l = out[P_LAYERS].u.i;
        ck_assert(l >= 1 && l <= 8);
        layers_perturbed += l == 6 || l == 4;
        /* dropout: 0.45 x 1.2 = 0.54 is clamped to the range's 0.5; x 0.8 = 0.36 */
        double d = out[P_DROPOUT].u.d;
        ck_assert(d >= 0 && d <= 0.5);
        dropout_clamped += d == 0.5;
        dropout_down += d == 0.45 * 0.8;
        /* act: a list of strings */
        ck_assert_int_eq(out[P_ACT].type, TUNEP_V_STRING);
        const char *a = out[P_ACT].u.s;
        ck_assert(strcmp(a, "relu") == 0 || strcmp(a, "gelu") == 0 || strcmp(a, "tanh") == 0);
        act_same += strcmp(a, "gelu") == 0;
    }
    /* P(perturb) = 0.75, split evenly between the factors; P(list keeps 32) = 0.25 / 3.
     * Binomial sd at 20000 draws < 0.0035: bounds of 0.015 are ~4 sd. */
    ck_assert_msg(fabs(lr_perturbed / (double)DRAWS - 0.75) < 0.015, "%d", lr_perturbed);
    ck_assert_msg(fabs(batch_same / (double)DRAWS - 0.25 / 3) < 0.015, "%d", batch_same);
    ck_assert_int_eq(batch_same + batch_shift, DRAWS);
    ck_assert_msg(fabs(act_same / (double)DRAWS - 0.25 / 3) < 0.015, "%d", act_same);
    /* layers: perturbation (0.75) plus resamples landing on 4 or 6 (0.25 x 2/8) */
    ck_assert_msg(fabs(layers_perturbed / (double)DRAWS - (0.75 + 0.25 * 2 / 8)) < 0.015, "%d",
                  layers_perturbed);
    ck_assert_msg(fabs(dropout_clamped / (double)DRAWS - 0.375) < 0.015, "%d", dropout_clamped);
    ck_assert_msg(fabs(dropout_down / (double)DRAWS - 0.375) < 0.015, "%d", dropout_down);

    /* Edges: a value not in the list is always resampled; a shift stops at the ends; ints
     * round to nearest (3 x 1.2 = 3.6 -> 4, 3 x 0.8 = 2.4 -> 2). */
    struct tunep_value edge[P_COUNT] = {vdbl(0.09), vint(48),     vint(3),
                                        vdbl(0.0),  vstr("relu"), vint(7)};
    int saw_relu_kept = 0;
    for (int k = 0; k < 4000; k++) {
        struct tunep_value out[P_COUNT];
        tunep_scheduler_explore(s, 0, edge, r, out);
        int64_t b = out[P_BATCH].u.i;
        ck_assert(b == 16 || b == 32 || b == 64);
        int64_t l = out[P_LAYERS].u.i;
        ck_assert(l == 4 || l == 2 || (l >= 1 && l <= 8));
        ck_assert(out[P_LR].u.d <= 0.1); /* 0.09 x 1.2 = 0.108 clamps to 0.1 */
        saw_relu_kept += strcmp(out[P_ACT].u.s, "relu") == 0;
    }
    /* from relu (index 0): shift left stays, right goes to gelu: P(relu) = .75/2 + .25/3 */
    ck_assert_msg(fabs(saw_relu_kept / 4000.0 - (0.375 + 0.25 / 3)) < 0.03, "%d", saw_relu_kept);

    /* Reproducible: the same stream gives the same configurations. */
    gsl_rng *r1 = gsl_rng_alloc(tunep_rng_xoshiro256), *r2 = gsl_rng_alloc(tunep_rng_xoshiro256);
    gsl_rng_set(r1, 99);
    gsl_rng_set(r2, 99);
    for (int k = 0; k < 100; k++) {
        struct tunep_value o1[P_COUNT], o2[P_COUNT];
        tunep_scheduler_explore(s, 0, donor, r1, o1);
        tunep_scheduler_explore(s, 0, donor, r2, o2);
        ck_assert(o1[P_LR].u.d == o2[P_LR].u.d);
        ck_assert_int_eq(o1[P_BATCH].u.i, o2[P_BATCH].u.i);
        ck_assert_int_eq(o1[P_LAYERS].u.i, o2[P_LAYERS].u.i);
        ck_assert(o1[P_DROPOUT].u.d == o2[P_DROPOUT].u.d);
        ck_assert_str_eq(o1[P_ACT].u.s, o2[P_ACT].u.s);
    }
    gsl_rng_free(r1);
    gsl_rng_free(r2);
    gsl_rng_free(r);
    tunep_scheduler_free(s);
    fixture_done(&f);
}
END_TEST

START_TEST(test_explore_quantized_and_factors)
{
    /* qloguniform [1e-4, 1e-1] step 1e-4: perturbed values land on the grid; custom factors. */
    struct fixture f;
    fixture_init(&f);
    f.muts[0].dist = f.dists[3];
    f.pc.perturbation_factors[0] = 2.0;
    f.pc.perturbation_factors[1] = 0.5;
    f.pc.resample_probability = 0.0;
    struct tunep_scheduler *s = new_pbt(&f, 1);
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    gsl_rng_set(r, 7);
    struct tunep_value donor[P_COUNT] = {vdbl(3e-4), vint(32),     vint(5),
                                         vdbl(0.2),  vstr("tanh"), vint(7)};
    int up = 0, down = 0;
    for (int k = 0; k < 1000; k++) {
        struct tunep_value out[P_COUNT];
        tunep_scheduler_explore(s, 0, donor, r, out);
        double lr = out[P_LR].u.d;
        /* nearbyint(6e-4 / 1e-4) * 1e-4 and nearbyint(1.5e-4 / 1e-4) * 1e-4 (ties to even) */
        ck_assert(lr == nearbyint(3e-4 * 2.0 / 1e-4) * 1e-4 ||
                  lr == nearbyint(3e-4 * 0.5 / 1e-4) * 1e-4);
        up += lr > 3e-4;
        down += lr < 3e-4;
        /* no resampling: lists always shift */
        ck_assert(out[P_BATCH].u.i == 16 || out[P_BATCH].u.i == 64);
        /* 5 x 2 = 10 clamps to randint's 8; 5 x 0.5 = 2.5 rounds to even 2 */
        ck_assert(out[P_LAYERS].u.i == 8 || out[P_LAYERS].u.i == 2);
        ck_assert(out[P_DROPOUT].u.d == 0.4 || out[P_DROPOUT].u.d == 0.1);
        ck_assert(strcmp(out[P_ACT].u.s, "tanh") == 0 || strcmp(out[P_ACT].u.s, "gelu") == 0);
    }
    ck_assert_int_gt(up, 400);
    ck_assert_int_gt(down, 400);
    gsl_rng_free(r);
    tunep_scheduler_free(s);
    fixture_done(&f);
}
END_TEST

START_TEST(test_burn_in_interval_and_time_sharing)
{
    struct fixture f;
    fixture_init(&f);
    f.pc.burn_in_period = 5;
    f.pc.perturbation_interval = 3;
    struct tunep_scheduler *s = new_pbt(&f, 1);
    struct tunep_pbt *p = tunep_scheduler_pbt(s);
    ck_assert_str_eq(tunep_scheduler_time_attr(s), "training_iteration");
    tunep_scheduler_on_trial_add(s, 0, 0.0);
    tunep_scheduler_set_waiting(s, 1); /* a trial waits: every check pauses (Ray) */
    for (int t = 1; t <= 12; t++) {
        enum tunep_decision d = tunep_scheduler_on_result(s, 0, 1, t, 0.5);
        /* checks at 5 (burn-in over, 5 - 0 >= 3), 8 and 11 */
        int check = t == 5 || t == 8 || t == 11;
        ck_assert_msg(d == (check ? TUNEP_PAUSE : TUNEP_CONTINUE), "t %d: %d", t, d);
    }
    size_t rank;
    ck_assert(tunep_pbt_rank(p, 0, &rank));
    ck_assert_uint_eq(rank, 0);
    /* Nobody waits: a check goes on. */
    tunep_scheduler_set_waiting(s, 0);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 0, 1, 14, 0.5), TUNEP_CONTINUE);

    /* choose(): new trials first, then the least trained paused one. */
    for (int64_t i = 1; i <= 3; i++)
        tunep_scheduler_on_trial_add(s, i, 0.0);
    tunep_scheduler_set_waiting(s, 2);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 1, 1, 9, 0.6), TUNEP_PAUSE);
    tunep_scheduler_on_trial_paused(s, 1);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 2, 1, 6, 0.9), TUNEP_PAUSE);
    tunep_scheduler_on_trial_paused(s, 2);
    /* 4 trials ranked: q = 1; trial 3 (0.1) is the worst, the donor is trial 2 (0.9) */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 3, 1, 7, 0.1), TUNEP_EXPLOIT);
    ck_assert_int_eq(tunep_scheduler_exploit_donor(s, 3), 2);
    int64_t id;
    ck_assert_int_eq(tunep_scheduler_choose(s, 1, 1, &id), TUNEP_NEXT_NEW);
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 1, &id), TUNEP_NEXT_RESUME);
    ck_assert_int_eq(id, 2); /* trained 6 < 9 */
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 1, &id), TUNEP_NEXT_RESUME);
    ck_assert_int_eq(id, 1);
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 1, &id), TUNEP_NEXT_NEW);

    /* An ended trial leaves the ranking; a resumed errored one rejoins with its score. */
    ck_assert_uint_eq(tunep_pbt_ranked(p), 4);
    tunep_scheduler_on_trial_complete(s, 2, 1, 6, 0.9);
    ck_assert_uint_eq(tunep_pbt_ranked(p), 3);
    ck_assert(!tunep_pbt_rank(p, 2, &rank));
    ck_assert_int_eq(tunep_scheduler_on_result(s, 2, 1, 100, 0.9), TUNEP_CONTINUE); /* ended */
    tunep_scheduler_on_trial_add(s, 2, 0.0);
    ck_assert(tunep_pbt_rank(p, 2, &rank));
    ck_assert_uint_eq(rank, 3);

    struct tunep_buf buf;
    tunep_buf_init(&buf);
    tunep_scheduler_describe(s, -1.0, &buf);
    /* scores 0.5 (trial 0), 0.6, 0.9, 0.1 -> q = 1; mode "min" shows them negated */
    ck_assert_str_eq(buf.data, "PBT: 4 trials ranked, 7 checks, 0 exploits, 0 paused; bottom 1 "
                               "up to -0.1, top 1 from -0.9\n");
    tunep_buf_done(&buf);
    tunep_scheduler_free(s);
    fixture_done(&f);
}
END_TEST

START_TEST(test_exploit_takes_donor_times)
{
    struct fixture f;
    fixture_init(&f);
    f.pc.perturbation_interval = 10;
    struct tunep_scheduler *s = new_pbt(&f, 5);
    for (int64_t i = 0; i < 2; i++)
        tunep_scheduler_on_trial_add(s, i, 0.0);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 0, 1, 12, 0.9), TUNEP_CONTINUE);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 1, 1, 30, 0.1), TUNEP_EXPLOIT);
    ck_assert_int_eq(tunep_scheduler_exploit_donor(s, 1), 0);
    /* Declined (no checkpoint): the trial keeps its own times, next check at 40. */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 1, 1, 39, 0.1), TUNEP_CONTINUE);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 1, 1, 40, 0.05), TUNEP_EXPLOIT);
    /* Carried out: it takes trial 0's check time 12, so it is checked again at 22. */
    struct tunep_value donor[P_COUNT] = {vdbl(1e-3), vint(32),     vint(5),
                                         vdbl(0.2),  vstr("relu"), vint(7)};
    struct tunep_value out[P_COUNT];
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    tunep_scheduler_explore(s, 1, donor, r, out);
    ck_assert_int_eq(tunep_pbt_num_exploits(tunep_scheduler_pbt(s)), 1);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 1, 1, 21, 0.95), TUNEP_CONTINUE);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 1, 1, 22, 0.95), TUNEP_CONTINUE); /* top */
    gsl_rng_free(r);
    tunep_scheduler_free(s);
    fixture_done(&f);
}
END_TEST

START_TEST(test_100k_population)
{
    enum { N = 100000, ROUNDS = 2 };
    struct fixture f;
    fixture_init(&f);
    struct tunep_scheduler *s = new_pbt(&f, 3);
    struct tunep_pbt *p = tunep_scheduler_pbt(s);
    uint64_t x = 0xABCDEFULL;
    int64_t exploits = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0); /* CPU time: the machine may be busy */
    for (int64_t i = 0; i < N; i++)
        ck_assert_int_eq(tunep_scheduler_on_trial_add(s, i, 0.0), TUNE_OK);
    for (int round = 1; round <= ROUNDS; round++)
        for (int64_t i = 0; i < N; i++)
            exploits += tunep_scheduler_on_result(s, i, 1, round, uniform01(&x)) == TUNEP_EXPLOIT;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double elapsed = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("PBT: 10^5 trials x 2 checks: %.3f s CPU\n", elapsed);
    ck_assert_uint_eq(tunep_pbt_ranked(p), N);
    /* iid scores: a quarter of the checks fall in the bottom quarter */
    ck_assert_msg(fabs(exploits / (double)(N * ROUNDS) - 0.25) < 0.01, "%lld", (long long)exploits);
    /* O(log n) per check: ~0.5 s CPU at -O2 (1.2 s under ASan); a sort per check: hours */
    ck_assert_msg(elapsed < 10.0, "took %g s", elapsed);
    tunep_scheduler_free(s);
    fixture_done(&f);
}
END_TEST

START_TEST(test_alloc_failures)
{
    struct fixture f;
    fixture_init(&f);
    int failures = 0;
    for (long n = 0;; n++) {
        struct tunep_scheduler *s = NULL;
        tune_error err;
        tune_test_alloc_fail_after(n);
        tune_status st = tunep_scheduler_new(&f.c, f.space, 1, &s, &err);
        for (int64_t i = 0; st == TUNE_OK && i < 200; i++) {
            st = tunep_scheduler_on_trial_add(s, i, 0.0);
            if (st == TUNE_OK)
                (void)tunep_scheduler_on_result(s, i, 1, 1, (double)(i % 13));
        }
        tune_test_alloc_reset();
        if (st == TUNE_OK && !tune_test_alloc_failed()) {
            ck_assert_int_gt(failures, 5);
            tunep_scheduler_free(s);
            break;
        }
        ck_assert_int_eq(st, TUNE_ENOMEM);
        failures++;
        if (s) {
            ck_assert_int_eq(tunep_scheduler_on_trial_add(s, 1000, 0.0), TUNE_OK);
            (void)tunep_scheduler_on_result(s, 1000, 1, 1, 0.5);
            size_t rank;
            ck_assert(tunep_pbt_rank(tunep_scheduler_pbt(s), 1000, &rank));
        }
        tunep_scheduler_free(s); /* ASan reports any leak */
    }
    fixture_done(&f);
}
END_TEST

static Suite *pbt_suite(void)
{
    Suite *s = suite_create("pbt");
    TCase *tc = tcase_create("pbt");
    tcase_add_test(tc, test_defaults_and_quantiles);
    tcase_add_test(tc, test_exploit_bottom_donor_top);
    tcase_add_test(tc, test_explore_invariants);
    tcase_add_test(tc, test_explore_quantized_and_factors);
    tcase_add_test(tc, test_burn_in_interval_and_time_sharing);
    tcase_add_test(tc, test_exploit_takes_donor_times);
    tcase_add_test(tc, test_100k_population);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(pbt_suite)
