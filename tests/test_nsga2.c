/*
 * test_nsga2.c - the NSGA-II searcher (search/nsga2.c): crowded comparison
 * against a table, elite selection against a population worked out by hand,
 * generations from finished trials, reproducibility from the seed, and an
 * end-to-end run on ZDT1 whose hypervolume beats random search at the same
 * budget over 20 seeds.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "check_util.h"
#include "base/rng.h"
#include "search/pareto.h"
#include "search/searcher.h"
#include "search/space.h"

static tune_error err;

#define OK(call) ck_assert_msg((call) == TUNE_OK, "%s: %s", #call, err.text)

static gsl_rng *rng_at(uint64_t seed, int64_t id)
{
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    ck_assert_ptr_nonnull(r);
    gsl_rng_set(r, (unsigned long)(seed * 1000003u + (uint64_t)id));
    return r;
}

START_TEST(test_crowded_better)
{
    /*    rank  crowd      a b -> winner */
    static const int rank[] = {0, 0, 1, 1, 0};
    static const double crowd[] = {0.5, 2.0, (double)INFINITY, 0.1, 0.5};
    static const size_t rows[][3] = {
        {0, 1, 1},            /* same rank: larger distance */
        {1, 0, 1}, {0, 2, 0}, /* lower rank wins even against infinite distance */
        {2, 0, 0}, {2, 3, 2}, {3, 2, 2}, {0, 4, 0}, /* full tie: the first */
        {4, 0, 4}, {3, 3, 3},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        ck_assert_msg(tunep_nsga2_crowded_better(rank, crowd, rows[i][0], rows[i][1]) == rows[i][2],
                      "row %zu", i);
}
END_TEST

static tune_space *space_x(void)
{
    tune_space *sp = NULL;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_uniform(sp, "x", 0.0, 10.0, &err));
    return sp;
}

/* Starts trial id with x and finishes it with objectives y (minimised). */
static void tell(struct tunep_searcher *s, int64_t id, double x, double y0, double y1)
{
    struct tunep_value v = {.type = TUNEP_V_DOUBLE, .u.d = x};
    ck_assert_int_eq(s->ops->on_start(s, id, &v), TUNE_OK);
    const double scores[2] = {-y0, -y1}; /* searchers take larger-is-better */
    ck_assert_int_eq(s->ops->on_complete_values(s, id, 1, scores, 2), TUNE_OK);
}

/*
 * population_size 4, minimising both objectives, trial i has x = i.
 * Generation 0: 0 (1,5)  1 (2,4)  2 (3,3)  3 (5,5); all four are its elite.
 * Generation 1: 4 (4,1)  5 (1.5,4.5)  6 (2,4) (= 1)  7 (6,6).
 * Pool 0..7: front 0 = {0, 1, 2, 4, 5, 6} (3 is dominated by 2, 7 by all), six for four places.
 * Crowding over the front (pool order 0 1 2 4 5 6):
 *   obj 0, range 3, order 0 5 1 6 2 4: 5 +1/3, 1 +1/6, 6 +1/3, 2 +2/3; ends 0, 4
 *   obj 1, range 4, order 4 2 1 6 5 0: 2 +3/4, 1 +1/4, 6 +1/8, 5 +1/4; ends 4, 0
 *   totals: 0 inf, 4 inf, 2 17/12, 5 7/12, 6 11/24, 1 5/12
 * Elite: {0, 4, 2, 5}. With no crossover and no mutation each child copies
 * a tournament winner, so children's x are exactly {0, 2, 4, 5}.
 */
START_TEST(test_elite_by_hand)
{
    tune_space *sp = space_x();
    struct tunep_nsga2_config c;
    tunep_nsga2_config_default(&c);
    c.population_size = 4;
    c.crossover_prob = 0;
    c.mutation_prob = 0;
    struct tunep_searcher *s = NULL;
    OK(tunep_nsga2_new(sp, &c, 2, &s, &err));
    static const double gen0[4][2] = {{1, 5}, {2, 4}, {3, 3}, {5, 5}};
    static const double gen1[4][2] = {{4, 1}, {1.5, 4.5}, {2, 4}, {6, 6}};
    for (int i = 0; i < 4; i++)
        tell(s, i, i, gen0[i][0], gen0[i][1]);
    for (int i = 0; i < 4; i++)
        tell(s, 4 + i, 4 + i, gen1[i][0], gen1[i][1]);
    int seen[8] = {0};
    for (int64_t id = 8; id < 408; id++) {
        gsl_rng *r = rng_at(1, id);
        struct tunep_value v;
        OK(s->ops->suggest(s, id, r, &v, &err));
        gsl_rng_free(r);
        ck_assert_int_eq(v.type, TUNEP_V_DOUBLE);
        double xi = round(v.u.d);
        ck_assert_msg(xi == v.u.d && xi >= 0 && xi < 8, "child x %g is no parent's", v.u.d);
        seen[(int)xi]++;
    }
    static const int elite[8] = {1, 0, 1, 0, 1, 1, 0, 0};
    for (int i = 0; i < 8; i++)
        ck_assert_msg(elite[i] ? seen[i] > 0 : seen[i] == 0, "trial %d chosen %d times", i,
                      seen[i]);
    /* Binary tournament favours the unbounded ends 0 and 4 over 2 and 5 (rank ties, crowding). */
    ck_assert_int_gt(seen[0], seen[5]);
    ck_assert_int_gt(seen[4], seen[5]);
    tunep_searcher_free(s);
    tune_space_free(sp);
}
END_TEST

/*
 * Generation 0 is random until population_size trials have finished: with
 * three of four finished (one failed, one pending), a suggestion is still a
 * random draw (the same value random search's stream gives); the fourth
 * finished trial starts generation 1, whose children copy parents.
 */
START_TEST(test_generations_from_finished_trials)
{
    tune_space *sp = space_x();
    struct tunep_nsga2_config c;
    tunep_nsga2_config_default(&c);
    c.population_size = 4;
    c.crossover_prob = 0;
    c.mutation_prob = 0;
    struct tunep_searcher *s = NULL;
    OK(tunep_nsga2_new(sp, &c, 2, &s, &err));
    tell(s, 0, 0, 1, 5);
    tell(s, 1, 1, 2, 4);
    tell(s, 2, 2, 3, 3);
    struct tunep_value v = {.type = TUNEP_V_DOUBLE, .u.d = 3};
    ck_assert_int_eq(s->ops->on_start(s, 3, &v), TUNE_OK);
    ck_assert_int_eq(s->ops->on_complete_values(s, 3, 0, NULL, 0), TUNE_OK); /* failed */
    v.u.d = 4;
    ck_assert_int_eq(s->ops->on_start(s, 4, &v), TUNE_OK); /* pending */
    gsl_rng *r = rng_at(2, 5);
    OK(s->ops->suggest(s, 5, r, &v, &err));
    gsl_rng_free(r);
    struct tunep_value want;
    r = rng_at(2, 5);
    tunep_space_sample(sp, r, 0, 0, &want);
    gsl_rng_free(r);
    ck_assert_double_eq(v.u.d, want.u.d);
    /* Trial 4 finishes: generation 0 has four, so the next suggestion copies one of 0, 1, 2, 4. */
    const double sc[2] = {-9, -9};
    ck_assert_int_eq(s->ops->on_complete_values(s, 4, 1, sc, 2), TUNE_OK);
    for (int64_t id = 6; id < 40; id++) {
        r = rng_at(2, id);
        OK(s->ops->suggest(s, id, r, &v, &err));
        gsl_rng_free(r);
        ck_assert_msg(v.u.d == 0 || v.u.d == 1 || v.u.d == 2 || v.u.d == 4, "x %g", v.u.d);
    }
    tunep_searcher_free(s);
    tune_space_free(sp);
}
END_TEST

/* ---- a recomputation from scratch, as the kept elites must agree with ---- */

enum { REF_POP = 4, REF_TRIALS = 160 };

struct ref_trial {
    int gen, state; /* state: 0 pending, 1 finished, 2 failed */
    double x, y[2];
};

/* Ranks and crowding distances of ys (k points, two objectives), as the searcher computes them. */
static void ref_rank_crowd(const double *ys, size_t k, int *rank, double *crowd)
{
    OK(tunep_pareto_sort(ys, k, 2, rank, &err));
    size_t front[2 * REF_TRIALS];
    double dist[2 * REF_TRIALS];
    for (int r = 0;; r++) {
        size_t n = 0;
        for (size_t a = 0; a < k; a++)
            if (rank[a] == r)
                front[n++] = a;
        if (n == 0)
            break;
        OK(tunep_pareto_crowding(ys, 2, front, n, dist, &err));
        for (size_t a = 0; a < n; a++)
            crowd[front[a]] = dist[a];
    }
}

/*
 * The parents of the next generation, chosen generation by generation from
 * the finished trials (the definition at the top of nsga2.c), with their
 * ranks and crowding distances among themselves; returns the generation
 * they come from (-1: generation 0 is not complete).
 */
static int ref_parents(const struct ref_trial *t, size_t n_trials, size_t *par, size_t *ret_n,
                       int *prank, double *pcrowd)
{
    size_t n_par = 0, pool[2 * REF_TRIALS];
    double ys[4 * REF_TRIALS], crowd[2 * REF_TRIALS];
    int rank[2 * REF_TRIALS], gen = -1;
    for (;;) {
        size_t k = 0, fresh = 0;
        for (size_t a = 0; a < n_par; a++)
            pool[k++] = par[a];
        for (size_t i = 0; i < n_trials; i++)
            if (t[i].state == 1 && t[i].gen == gen + 1) {
                pool[k++] = i;
                fresh++;
            }
        if (fresh < REF_POP)
            break;
        for (size_t a = 0; a < k; a++)
            memcpy(ys + 2 * a, t[pool[a]].y, sizeof t[pool[a]].y);
        ref_rank_crowd(ys, k, rank, crowd);
        n_par = 0;
        for (int r = 0; n_par < REF_POP; r++) {
            size_t fn = 0, cut[2 * REF_TRIALS];
            for (size_t a = 0; a < k; a++)
                if (rank[a] == r)
                    cut[fn++] = a;
            if (fn == 0)
                break;
            if (n_par + fn <= REF_POP) {
                for (size_t a = 0; a < fn; a++)
                    par[n_par++] = pool[cut[a]];
                continue;
            }
            /* By distance, then pool position (insertion sort); taken from the largest. */
            for (size_t a = 1; a < fn; a++)
                for (size_t b = a;
                     b > 0 && (crowd[cut[b - 1]] > crowd[cut[b]] ||
                               (crowd[cut[b - 1]] == crowd[cut[b]] && cut[b - 1] > cut[b]));
                     b--) {
                    size_t tmp = cut[b];
                    cut[b] = cut[b - 1];
                    cut[b - 1] = tmp;
                }
            for (size_t a = fn; a-- > 0 && n_par < REF_POP;)
                par[n_par++] = pool[cut[a]];
        }
        gen++;
    }
    for (size_t a = 0; a < n_par; a++)
        memcpy(ys + 2 * a, t[par[a]].y, sizeof t[par[a]].y);
    if (n_par)
        ref_rank_crowd(ys, n_par, prank, pcrowd);
    *ret_n = n_par;
    return gen;
}

/*
 * Six trials at a time finishing out of order, some failing and retried:
 * late finishers of a complete generation (or of one before it), failures and retries all change
 * an elite the searcher keeps. Every suggestion (children copy a parent: no
 * crossover, no mutation; each trial starts with a value of its own) must be
 * the parent that the tournament's draws pick from the parents recomputed
 * from scratch.
 */
START_TEST(test_kept_elites_match_recomputation)
{
    tune_space *sp = space_x();
    struct tunep_nsga2_config c;
    tunep_nsga2_config_default(&c);
    c.population_size = REF_POP;
    c.crossover_prob = 0;
    c.mutation_prob = 0;
    struct tunep_searcher *s = NULL;
    OK(tunep_nsga2_new(sp, &c, 2, &s, &err));
    static struct ref_trial t[REF_TRIALS];
    size_t n = 0, open[6], n_open = 0, par[REF_TRIALS], n_par;
    int prank[REF_TRIALS], recomputed_late = 0;
    double pcrowd[REF_TRIALS];
    gsl_rng *drive = rng_at(99, 0);
    while (n < REF_TRIALS || n_open > 0) {
        if (n < REF_TRIALS && (n_open < 6 && (n_open == 0 || gsl_rng_uniform(drive) < 0.6))) {
            int gen = ref_parents(t, n, par, &n_par, prank, pcrowd);
            gsl_rng *r = rng_at(5, (int64_t)n);
            struct tunep_value v;
            OK(s->ops->suggest(s, (int64_t)n, r, &v, &err));
            gsl_rng_free(r);
            r = rng_at(5, (int64_t)n);
            double want;
            if (gen < 0) {
                struct tunep_value w;
                tunep_space_sample(sp, r, 0, 0, &w);
                want = w.u.d;
            } else {
                size_t a = gsl_rng_uniform_int(r, n_par), b = gsl_rng_uniform_int(r, n_par);
                want = t[par[tunep_nsga2_crowded_better(prank, pcrowd, a, b)]].x;
            }
            gsl_rng_free(r);
            ck_assert_msg(v.u.d == want, "trial %zu (generation %d): x %g, recomputed %g", n,
                          gen + 1, v.u.d, want);
            /* Started with a value of its own, so that a child names its parent. */
            v.u.d = (double)n / 16;
            ck_assert_int_eq(s->ops->on_start(s, (int64_t)n, &v), TUNE_OK);
            t[n] = (struct ref_trial){.gen = gen + 1, .state = 0, .x = v.u.d};
            open[n_open++] = n++;
            continue;
        }
        /* Mostly the newest: older trials linger past the generations after theirs. */
        size_t k = gsl_rng_uniform(drive) < 0.7 ? n_open - 1 : gsl_rng_uniform_int(drive, n_open);
        size_t id = open[k];
        if (t[id].state == 2) { /* a failed trial is retried */
            struct tunep_value v = {.type = TUNEP_V_DOUBLE, .u.d = t[id].x};
            ck_assert_int_eq(s->ops->on_start(s, (int64_t)id, &v), TUNE_OK);
            t[id].state = 0;
            continue;
        }
        open[k] = open[--n_open];
        if (gsl_rng_uniform(drive) < 0.15) {
            ck_assert_int_eq(s->ops->on_complete_values(s, (int64_t)id, 0, NULL, 0), TUNE_OK);
            t[id].state = 2;
            open[n_open++] = id;
            continue;
        }
        /* Small integers: ties and duplicates in both objectives. */
        t[id].y[0] = (double)gsl_rng_uniform_int(drive, 6);
        t[id].y[1] = (double)gsl_rng_uniform_int(drive, 6);
        t[id].state = 1;
        const double sc[2] = {-t[id].y[0], -t[id].y[1]};
        ck_assert_int_eq(s->ops->on_complete_values(s, (int64_t)id, 1, sc, 2), TUNE_OK);
        size_t done_gen = 0;
        for (size_t i = 0; i < n; i++)
            done_gen += t[i].gen == t[id].gen && t[i].state == 1;
        recomputed_late += done_gen > REF_POP; /* finished after its generation was complete */
    }
    ck_assert_int_gt(recomputed_late, 5);
    gsl_rng_free(drive);
    tunep_searcher_free(s);
    tune_space_free(sp);
}
END_TEST

/* ZDT1 (Zitzler, Deb and Thiele 2000), both objectives minimised, x in [0, 1]^n. */
static void zdt1(const double *x, size_t n, double *f)
{
    double sum = 0;
    for (size_t i = 1; i < n; i++)
        sum += x[i];
    double g = 1 + 9 * sum / (double)(n - 1);
    f[0] = x[0];
    f[1] = g * (1 - sqrt(x[0] / g));
}

enum { ZDT_DIMS = 30, ZDT_EVALS = 200 };

/* One sequential study on ZDT1: the hypervolume of everything found, reference (1.1, 11). */
static double zdt1_run(int nsga2, uint64_t seed, tune_space *sp)
{
    struct tunep_searcher *s = NULL;
    if (nsga2) {
        struct tunep_nsga2_config c;
        tunep_nsga2_config_default(&c);
        OK(tunep_nsga2_new(sp, &c, 2, &s, &err));
    }
    double *y = malloc(ZDT_EVALS * 2 * sizeof *y);
    ck_assert_ptr_nonnull(y);
    struct tunep_value v[ZDT_DIMS];
    for (int64_t id = 0; id < ZDT_EVALS; id++) {
        gsl_rng *r = rng_at(seed, id);
        if (s)
            OK(s->ops->suggest(s, id, r, v, &err));
        else
            tunep_space_sample(sp, r, 0, 0, v);
        gsl_rng_free(r);
        double x[ZDT_DIMS];
        for (size_t i = 0; i < ZDT_DIMS; i++)
            x[i] = v[i].u.d;
        zdt1(x, ZDT_DIMS, y + 2 * id);
        if (s) {
            ck_assert_int_eq(s->ops->on_start(s, id, v), TUNE_OK);
            const double sc[2] = {-y[2 * id], -y[2 * id + 1]};
            ck_assert_int_eq(s->ops->on_complete_values(s, id, 1, sc, 2), TUNE_OK);
        }
    }
    double hv;
    OK(tunep_pareto_hypervolume(y, ZDT_EVALS, 2, (const double[]){1.1, 11.0}, &hv, &err));
    free(y);
    tunep_searcher_free(s);
    return hv;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

START_TEST(test_zdt1_beats_random)
{
    tune_space *sp = NULL;
    OK(tune_space_new(&sp, &err));
    for (int i = 0; i < ZDT_DIMS; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        OK(tune_space_add_uniform(sp, name, 0.0, 1.0, &err));
    }
    enum { SEEDS = 20 };
    double hv_n[SEEDS], hv_r[SEEDS];
    int wins = 0;
    for (int k = 0; k < SEEDS; k++) {
        hv_n[k] = zdt1_run(1, 100 + (uint64_t)k, sp);
        hv_r[k] = zdt1_run(0, 100 + (uint64_t)k, sp);
        wins += hv_n[k] > hv_r[k];
    }
    /* Reproducible: the same seed gives the same run. */
    ck_assert_double_eq(zdt1_run(1, 100, sp), hv_n[0]);
    qsort(hv_n, SEEDS, sizeof *hv_n, cmp_double);
    qsort(hv_r, SEEDS, sizeof *hv_r, cmp_double);
    double med_n = (hv_n[9] + hv_n[10]) / 2, med_r = (hv_r[9] + hv_r[10]) / 2;
    fprintf(stderr, "ZDT1 %d evals: median hypervolume nsga2 %.4f random %.4f; nsga2 wins %d/20\n",
            ZDT_EVALS, med_n, med_r, wins);
    /*
     * The generations after the first 50 random trials must pay off: under a
     * sign test, 15 or more wins of 20 has probability 0.021 if NSGA-II were
     * no better than random; the medians must be ordered the same way.
     */
    ck_assert_int_ge(wins, 15);
    ck_assert_double_gt(med_n, med_r);
    tune_space_free(sp);
}
END_TEST

static Suite *nsga2_suite(void)
{
    Suite *s = suite_create("nsga2");
    TCase *tc = tcase_create("nsga2");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_crowded_better);
    tcase_add_test(tc, test_elite_by_hand);
    tcase_add_test(tc, test_generations_from_finished_trials);
    tcase_add_test(tc, test_kept_elites_match_recomputation);
    tcase_add_test(tc, test_zdt1_beats_random);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(nsga2_suite)
