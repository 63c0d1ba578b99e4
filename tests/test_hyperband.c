/*
 * test_hyperband.c - synchronous HyperBand: the paper's bracket table, and
 * simulated runs that drive the scheduler API as the controller does
 * (on_trial_add, on_result, on_trial_paused, choose, take_stopped,
 * on_trial_complete) with trials whose scores are known, checking that each
 * round keeps exactly its top floor(n_i / eta).
 *
 * Reference: Li et al., "Hyperband: A Novel Bandit-Based Approach to
 * Hyperparameter Optimization", JMLR 18 (2018), Table 1 (R = 81, eta = 3).
 */
#include "check_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "schedulers/hyperband.h"
#include "schedulers/scheduler.h"

static const struct tunep_scheduler_type *hyperband_type(void)
{
    const struct tunep_scheduler_type *t = tunep_scheduler_find("hyperband");
    ck_assert_ptr_nonnull(t);
    return t;
}

/* HyperBand's options: the defaults but for these. */
static struct tunep_hyperband_config hb_config(double max_t, double eta, int stop_last)
{
    struct tunep_hyperband_config c;
    ck_assert_int_eq(tunep_options_default(hyperband_type()->options, &c), 0);
    c.max_t = max_t;
    c.reduction_factor = eta;
    c.stop_last_trials = stop_last;
    return c;
}

/* A HyperBand scheduler with the options in *c. */
static tune_status hb_new(struct tunep_hyperband_config *c, struct tunep_scheduler **ret,
                          tune_error *err)
{
    struct tunep_scheduler_config sc = {hyperband_type(), c}; /* borrows *c */
    return tunep_scheduler_new(&sc, NULL, 0, ret, err);
}

static struct tunep_hyperband *hb_of(struct tunep_scheduler *s)
{
    struct tunep_hyperband *h = tunep_scheduler_hyperband(s);
    ck_assert_ptr_nonnull(h);
    return h;
}

/* ---- the paper's table ------------------------------------------------------------- */

START_TEST(test_paper_table)
{
    struct tunep_hyperband_config c = hb_config(81, 3, 1);
    /* Table 1 of the paper: (n_i, r_i) for each bracket s and round i. */
    static const int64_t want_n[5][5] = {
        {5}, {8, 2}, {15, 5, 1}, {34, 11, 3, 1}, {81, 27, 9, 3, 1}};
    static const double want_r[5][5] = {
        {81}, {27, 81}, {9, 27, 81}, {3, 9, 27, 81}, {1, 3, 9, 27, 81}};
    int s_max = tunep_hyperband_s_max(&c);
    ck_assert_int_eq(s_max, 4); /* log(81)/log(3) is 4.000000000000001 in doubles */
    for (int s = 0; s <= 4; s++) {
        int64_t n = tunep_hyperband_bracket_n(&c, s_max, s);
        ck_assert_int_eq(n, want_n[s][0]);
        for (int i = 0; i <= s; i++) {
            ck_assert_int_eq(tunep_hyperband_round_n(&c, n, i), want_n[s][i]);
            ck_assert_double_eq(tunep_hyperband_round_r(&c, s, i), want_r[s][i]);
        }
    }

    /* floor(log_eta R) where doubles land on either side of the integer. */
    struct {
        double max_t, eta;
        int s_max;
    } cases[] = {
        {243, 3, 5},   /* log(243)/log(3) = 4.999999999999999 */
        {1000, 10, 3}, /* log(1000)/log(10) = 2.9999999999999996 */
        {80, 3, 3},    {82, 3, 4}, {2, 3, 0},
        {0.5, 3, 0},   {64, 4, 3}, {100, 2.5, 5}, /* 2.5^5 = 97.66 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tunep_hyperband_config ci = hb_config(cases[i].max_t, cases[i].eta, 1);
        ck_assert_msg(tunep_hyperband_s_max(&ci) == cases[i].s_max, "case %zu", i);
    }
    /* R=1000, eta=10: n = ceil(4 * 10^s / (s + 1)) = 4, 20, 134, 1000 */
    struct tunep_hyperband_config c2 = hb_config(1000, 10, 1);
    static const int64_t n1000[4] = {4, 20, 134, 1000};
    for (int s = 0; s <= 3; s++)
        ck_assert_int_eq(tunep_hyperband_bracket_n(&c2, 3, s), n1000[s]);
    /* A smaller last bracket: its rounds shrink with it, at least 1 trial. */
    ck_assert_int_eq(tunep_hyperband_round_n(&c, 9, 0), 9);
    ck_assert_int_eq(tunep_hyperband_round_n(&c, 9, 1), 3);
    ck_assert_int_eq(tunep_hyperband_round_n(&c, 9, 2), 1);
    ck_assert_int_eq(tunep_hyperband_round_n(&c, 9, 3), 1);
    ck_assert_int_eq(tunep_hyperband_round_n(&c, 2, 1), 1);
}
END_TEST

/* ---- a simulated controller ---------------------------------------------------------- */

enum { MAX_TRIALS = 4096, MAX_EVENTS = 16 };

struct sim {
    struct tunep_scheduler *s;
    int64_t total, started;
    int workers;
    int64_t running[64];
    int n_running;
    double t[MAX_TRIALS];
    int state[MAX_TRIALS]; /* 0 not started, 1 running, 2 paused, 3 terminated, 4 stopped */
    double pauses[MAX_TRIALS][MAX_EVENTS];
    int n_pauses[MAX_TRIALS];
    double end_t[MAX_TRIALS];
    int64_t resumed_order[MAX_TRIALS * 4];
    int n_resumed;
    double step; /* time_attr advance per report */
};

/* Known, distinct scores: a fixed permutation of the ids, slightly rising with t. */
static double base_score(int64_t id)
{
    return (double)((id * 7919) % 10007) / 10007.0;
}

static double score_at(int64_t id, double t)
{
    return base_score(id) + 1e-9 * t;
}

static void drain_stopped(struct sim *m)
{
    int64_t id;
    while (tunep_scheduler_take_stopped(m->s, &id)) {
        ck_assert_int_eq(m->state[id], 2); /* only paused trials are handed over */
        m->state[id] = 4;
        m->end_t[id] = m->t[id];
        /* the controller ends it STOPPED and tells the scheduler */
        tunep_scheduler_on_trial_complete(m->s, id, 1, m->t[id], score_at(id, m->t[id]));
    }
}

/* Fills free workers as the controller's next_trial() does; returns 0 when nothing can run. */
static void fill(struct sim *m)
{
    while (m->n_running < m->workers) {
        drain_stopped(m);
        int64_t id = -1;
        int new_left = m->started < m->total;
        enum tunep_next next = tunep_scheduler_choose(m->s, new_left, m->n_running, &id);
        drain_stopped(m);
        if (next == TUNEP_NEXT_RESUME) {
            ck_assert_int_eq(m->state[id], 2);
            m->state[id] = 1;
            m->running[m->n_running++] = id;
            m->resumed_order[m->n_resumed++] = id;
        } else if (next == TUNEP_NEXT_NEW && new_left) {
            id = m->started++;
            ck_assert_int_eq(tunep_scheduler_on_trial_add(m->s, id, 0.5), TUNE_OK);
            m->state[id] = 1;
            m->t[id] = 0;
            m->running[m->n_running++] = id;
        } else {
            if (next == TUNEP_NEXT_WAIT)
                ck_assert_int_gt(m->n_running, 0); /* WAIT only while something runs */
            return;
        }
    }
}

/* Runs until every trial ended; each running trial reports once per step. */
static void run_sim(struct sim *m)
{
    for (long guard = 0; guard < 10000000; guard++) {
        fill(m);
        if (m->n_running == 0) {
            /* the controller ends trials still paused: there must be none */
            for (int64_t i = 0; i < m->started; i++)
                ck_assert_msg(m->state[i] >= 3, "trial %lld left in state %d", (long long)i,
                              m->state[i]);
            return;
        }
        /* the oldest running trial reports */
        int64_t id = m->running[guard % m->n_running];
        m->t[id] += m->step;
        enum tunep_decision d =
            tunep_scheduler_on_result(m->s, id, 1, m->t[id], score_at(id, m->t[id]));
        if (d == TUNEP_CONTINUE)
            continue;
        for (int j = 0; j < m->n_running; j++)
            if (m->running[j] == id) {
                m->running[j] = m->running[--m->n_running];
                break;
            }
        if (d == TUNEP_PAUSE) {
            ck_assert_int_lt(m->n_pauses[id], MAX_EVENTS);
            m->pauses[id][m->n_pauses[id]++] = m->t[id];
            m->state[id] = 2;
            tunep_scheduler_on_trial_paused(m->s, id);
        } else {
            ck_assert_int_eq(d, TUNEP_TERMINATE);
            m->state[id] = 3;
            m->end_t[id] = m->t[id];
            tunep_scheduler_on_trial_complete(m->s, id, 1, m->t[id], score_at(id, m->t[id]));
        }
    }
    ck_abort_msg("simulation did not finish");
}

static int by_score_desc(const void *a, const void *b)
{
    double x = base_score(*(const int64_t *)a), y = base_score(*(const int64_t *)b);
    return (x < y) - (x > y);
}

/* Trials of bracket `br`, in id order. */
static int64_t bracket_members(const struct sim *m, int64_t br, int64_t *out)
{
    struct tunep_hyperband *h = hb_of(m->s);
    int64_t n = 0;
    for (int64_t i = 0; i < m->started; i++)
        if (tunep_hyperband_trial_bracket(h, i) == br)
            out[n++] = i;
    return n;
}

/* Did trial id reach time r (paused there, or ended at or after it)? */
static int reached(const struct sim *m, int64_t id, double r)
{
    for (int k = 0; k < m->n_pauses[id]; k++)
        if (m->pauses[id][k] >= r)
            return 1;
    return m->state[id] == 3 && m->end_t[id] >= r;
}

/*
 * Checks one bracket against the plan: round i has exactly n_i participants
 * (all of which paused exactly at r_i, or ended at max_t in the last round),
 * and round i + 1's participants are the top n_{i+1} of round i by score.
 */
static void check_bracket(const struct sim *m, int64_t br, const struct tunep_hyperband_config *c)
{
    struct tunep_hyperband *h = hb_of(m->s);
    int s, round;
    int64_t band, n_members;
    ck_assert(tunep_hyperband_bracket_info(h, br, &s, &band, &n_members, &round));
    ck_assert_int_eq(round, s + 1); /* finished */
    int64_t *part = malloc(MAX_TRIALS * sizeof *part), *next = malloc(MAX_TRIALS * sizeof *next);
    int64_t n_part = bracket_members(m, br, part);
    ck_assert_int_eq(n_part, n_members);
    for (int i = 0; i <= s; i++) {
        int64_t want = tunep_hyperband_round_n(c, n_members, i);
        double r = tunep_hyperband_round_r(c, s, i);
        int skipped = n_part == 1 && i > 0 && i < s; /* a lone survivor runs straight to R */
        ck_assert_msg(n_part == want, "bracket %lld round %d: %lld trials, want %lld",
                      (long long)br, i, (long long)n_part, (long long)want);
        for (int64_t j = 0; j < n_part; j++) {
            int64_t id = part[j];
            ck_assert(reached(m, id, r));
            if (i < s && !skipped) {
                /* it paused exactly at r_i (reports advance by 1 through integer r) */
                int found = 0;
                for (int k = 0; k < m->n_pauses[id]; k++)
                    found |= m->pauses[id][k] == r;
                ck_assert_msg(found, "trial %lld did not pause at %g", (long long)id, r);
            }
        }
        if (i == s) {
            for (int64_t j = 0; j < n_part; j++) {
                ck_assert_int_eq(m->state[part[j]], 3);
                ck_assert_double_eq(m->end_t[part[j]], c->max_t);
            }
            break;
        }
        /* survivors: exactly the top n_{i+1} by score; the rest stopped at r_i */
        qsort(part, (size_t)n_part, sizeof *part, by_score_desc);
        int64_t keep = tunep_hyperband_round_n(c, n_members, i + 1);
        double r_next = tunep_hyperband_round_r(c, s, i + 1);
        int64_t n_next = 0;
        for (int64_t j = 0; j < n_part; j++) {
            int64_t id = part[j];
            if (j < keep) {
                ck_assert_msg(reached(m, id, r_next), "trial %lld should have gone on",
                              (long long)id);
                next[n_next++] = id;
            } else {
                ck_assert_msg(m->state[id] == 4 && m->end_t[id] == r,
                              "trial %lld should have stopped at %g (state %d, t %g)",
                              (long long)id, r, m->state[id], m->end_t[id]);
            }
        }
        memcpy(part, next, (size_t)n_next * sizeof *part);
        n_part = n_next;
    }
    free(part);
    free(next);
}

static struct sim *sim_new(struct tunep_hyperband_config *c, int64_t total, int workers)
{
    struct sim *m = calloc(1, sizeof *m);
    ck_assert_ptr_nonnull(m);
    tune_error err;
    ck_assert_int_eq(hb_new(c, &m->s, &err), TUNE_OK);
    m->total = total;
    m->workers = workers;
    m->step = 1;
    return m;
}

static void sim_free(struct sim *m)
{
    tunep_scheduler_free(m->s);
    free(m);
}

START_TEST(test_full_band)
{
    /* One band of R = 81, eta = 3: 81 + 34 + 15 + 8 + 5 = 143 trials on 7 workers. */
    struct tunep_hyperband_config c = hb_config(81, 3, 1);
    struct sim *m = sim_new(&c, 143, 7);
    run_sim(m);
    struct tunep_hyperband *h = hb_of(m->s);
    ck_assert_int_eq(tunep_hyperband_bracket_count(h), 5);
    static const int want_s[5] = {4, 3, 2, 1, 0};
    static const int64_t want_n[5] = {81, 34, 15, 8, 5};
    int64_t first = 0;
    for (int64_t b = 0; b < 5; b++) {
        int s, round;
        int64_t band, n;
        ck_assert(tunep_hyperband_bracket_info(h, b, &s, &band, &n, &round));
        ck_assert_int_eq(s, want_s[b]);
        ck_assert_int_eq(band, 0);
        ck_assert_int_eq(n, want_n[b]);
        /* brackets fill in arrival order */
        ck_assert_int_eq(tunep_hyperband_trial_bracket(h, first), b);
        ck_assert_int_eq(tunep_hyperband_trial_bracket(h, first + n - 1), b);
        first += n;
        check_bracket(m, b, &c);
    }
    /* Trials that ran to R: 1 + 1 + 1 + 2 + 5 (the paper's last column). */
    int at_r = 0, stopped = 0;
    for (int64_t i = 0; i < 143; i++) {
        at_r += m->state[i] == 3;
        stopped += m->state[i] == 4;
    }
    ck_assert_int_eq(at_r, 10);
    ck_assert_int_eq(stopped, 133);
    /* Promoted trials resume best first within a round: the first resume is round 0 of
     * bracket s=4's best trial. */
    int64_t best = 0;
    for (int64_t i = 0; i < 81; i++)
        if (base_score(i) > base_score(best))
            best = i;
    ck_assert_int_eq(m->resumed_order[0], best);
    sim_free(m);
}
END_TEST

START_TEST(test_two_bands_one_worker_and_many)
{
    /* 143 + 100 trials: the second band's brackets s=4 (81) and s=3 (19 of 34, closed
     * when no trial is left, rounds of 19, 6, 2, 1). Same checks with 1 and 40 workers. */
    int workers[2] = {1, 40};
    for (int w = 0; w < 2; w++) {
        struct tunep_hyperband_config c = hb_config(81, 3, 1);
        struct sim *m = sim_new(&c, 243, workers[w]);
        run_sim(m);
        struct tunep_hyperband *h = hb_of(m->s);
        ck_assert_int_eq(tunep_hyperband_bracket_count(h), 7);
        int s, round;
        int64_t band, n;
        ck_assert(tunep_hyperband_bracket_info(h, 6, &s, &band, &n, &round));
        ck_assert_int_eq(s, 3);
        ck_assert_int_eq(band, 1);
        ck_assert_int_eq(n, 19);
        for (int64_t b = 0; b < 7; b++)
            check_bracket(m, b, &c);
        sim_free(m);
    }
}
END_TEST

START_TEST(test_small_study_lone_survivor)
{
    /* 85 trials: bracket s=3 gets 4 (rounds of 4, 1, 1, 1): its winner pauses at r=3 and
     * then runs straight to 81 without pausing at 9 and 27. */
    struct tunep_hyperband_config c = hb_config(81, 3, 1);
    struct sim *m = sim_new(&c, 85, 3);
    run_sim(m);
    struct tunep_hyperband *h = hb_of(m->s);
    ck_assert_int_eq(tunep_hyperband_bracket_count(h), 2);
    check_bracket(m, 0, &c);
    check_bracket(m, 1, &c);
    int64_t best = 81;
    for (int64_t i = 81; i < 85; i++)
        if (base_score(i) > base_score(best))
            best = i;
    ck_assert_int_eq(m->n_pauses[best], 1);
    ck_assert_double_eq(m->pauses[best][0], 3);
    ck_assert_int_eq(m->state[best], 3);
    ck_assert_double_eq(m->end_t[best], 81);
    sim_free(m);
}
END_TEST

START_TEST(test_error_and_early_end)
{
    /* R = 9, eta = 3: bracket s=2 has 9 trials, rounds (9 at 1), (3 at 3), (1 at 9). */
    struct tunep_hyperband_config c = hb_config(9, 3, 1);
    struct tunep_scheduler *s = NULL;
    ck_assert_int_eq(hb_new(&c, &s, NULL), TUNE_OK);
    struct tunep_hyperband *h = hb_of(s);
    for (int64_t i = 0; i < 9; i++)
        ck_assert_int_eq(tunep_scheduler_on_trial_add(s, i, 0.0), TUNE_OK);
    /* Trial 0 fails for good (ERROR: no result); trial 1 ends by itself at t = 0.5 with the
     * best score of all. */
    tunep_scheduler_on_trial_complete(s, 0, 0, 0, -HUGE_VAL);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 1, 1, 0.5, 0.99), TUNEP_CONTINUE);
    tunep_scheduler_on_trial_complete(s, 1, 1, 0.5, 0.99);
    /* The others pause at r = 1 with scores 0.2 .. 0.8 (trial i: i / 10). */
    for (int64_t i = 2; i < 9; i++) {
        ck_assert_int_eq(tunep_scheduler_on_result(s, i, 1, 0.5, 0.0), TUNEP_CONTINUE);
        ck_assert_int_eq(tunep_scheduler_on_result(s, i, 1, 1, (double)i / 10), TUNEP_PAUSE);
        /* no decision until it is paused */
        int64_t id;
        ck_assert_int_eq(tunep_scheduler_take_stopped(s, &id), 0);
        tunep_scheduler_on_trial_paused(s, i);
    }
    /* keep floor(9 / 3) = 3: trial 1 (0.99, ended: nothing to resume), 8 and 7. */
    int64_t id = -1;
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 0, &id), TUNEP_NEXT_RESUME);
    ck_assert_int_eq(id, 8);
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 1, &id), TUNEP_NEXT_RESUME);
    ck_assert_int_eq(id, 7);
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 2, &id), TUNEP_NEXT_WAIT);
    int stopped[9] = {0};
    int n_stopped = 0;
    while (tunep_scheduler_take_stopped(s, &id)) {
        stopped[id] = 1;
        n_stopped++;
        tunep_scheduler_on_trial_complete(s, id, 1, 1, (double)id / 10);
    }
    ck_assert_int_eq(n_stopped, 5);
    for (int64_t i = 2; i <= 6; i++)
        ck_assert(stopped[i]);
    /* Round 2 (r = 3): keep floor(9 / 9) = 1 of trials 7 and 8. */
    ck_assert_int_eq(tunep_hyperband_trial_round(h, 8), 1);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 8, 1, 2, 0.81), TUNEP_CONTINUE);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 8, 1, 3, 0.5), TUNEP_PAUSE);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 8, 1, 3, 0.5), TUNEP_PAUSE); /* still */
    tunep_scheduler_on_trial_paused(s, 8);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 7, 1, 3, 0.6), TUNEP_PAUSE);
    tunep_scheduler_on_trial_paused(s, 7);
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 0, &id), TUNEP_NEXT_RESUME);
    ck_assert_int_eq(id, 7); /* 0.6 now beats 0.5 */
    ck_assert_int_eq(tunep_scheduler_take_stopped(s, &id), 1);
    ck_assert_int_eq(id, 8);
    tunep_scheduler_on_trial_complete(s, 8, 1, 3, 0.5);
    ck_assert_int_eq(tunep_scheduler_take_stopped(s, &id), 0);
    /* The last round: max_t terminates. */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 7, 1, 8, 0.7), TUNEP_CONTINUE);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 7, 1, 9, 0.7), TUNEP_TERMINATE);
    tunep_scheduler_on_trial_complete(s, 7, 1, 9, 0.7);
    int sb, round;
    int64_t band, n;
    ck_assert(tunep_hyperband_bracket_info(h, 0, &sb, &band, &n, &round));
    ck_assert_int_eq(round, 3); /* finished */
    /* The next trial opens bracket s=1 of the same band: 5 trials at r = 3. */
    ck_assert_int_eq(tunep_scheduler_choose(s, 1, 0, &id), TUNEP_NEXT_NEW);
    ck_assert_int_eq(tunep_scheduler_on_trial_add(s, 9, 0.0), TUNE_OK);
    ck_assert_int_eq(tunep_hyperband_trial_bracket(h, 9), 1);
    ck_assert(tunep_hyperband_bracket_info(h, 1, &sb, &band, &n, &round));
    ck_assert_int_eq(sb, 1);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 9, 1, 2, 0.1), TUNEP_CONTINUE);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 9, 1, 3, 0.1), TUNEP_PAUSE);
    /* Unknown trials and reports without time get no decision. */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 77, 1, 100, 0.1), TUNEP_CONTINUE);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 9, 0, 100, 0.1), TUNEP_PAUSE);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_stop_last_trials_false)
{
    /* R = 3, eta = 3: brackets s=1 (n = ceil(2 * 3 / 2) = 3 at r = 1) and s=0 (2 at 3). */
    struct tunep_hyperband_config c = hb_config(3, 3, 0);
    struct tunep_scheduler *s = NULL;
    ck_assert_int_eq(hb_new(&c, &s, NULL), TUNE_OK);
    for (int64_t i = 0; i < 5; i++)
        ck_assert_int_eq(tunep_scheduler_on_trial_add(s, i, 0.0), TUNE_OK);
    /* Bracket s=0: its only round is the last; without stop_last_trials it never ends. */
    ck_assert_int_eq(tunep_scheduler_on_result(s, 3, 1, 3, 0.1), TUNEP_CONTINUE);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 3, 1, 300, 0.1), TUNEP_CONTINUE);
    /* Bracket s=0 earlier rounds still pause. */
    for (int64_t i = 0; i < 3; i++) {
        ck_assert_int_eq(tunep_scheduler_on_result(s, i, 1, 1, (double)i), TUNEP_PAUSE);
        tunep_scheduler_on_trial_paused(s, i);
    }
    int64_t id;
    ck_assert_int_eq(tunep_scheduler_choose(s, 0, 1, &id), TUNEP_NEXT_RESUME);
    ck_assert_int_eq(id, 2);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 2, 1, 50, 1.0), TUNEP_CONTINUE);
    tunep_scheduler_free(s);

    /* With it (the default), max_t terminates even a trial that is not in its last round. */
    c = hb_config(3, 3, 1);
    ck_assert_int_eq(hb_new(&c, &s, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_scheduler_on_trial_add(s, 0, 0.0), TUNE_OK);
    ck_assert_int_eq(tunep_scheduler_on_result(s, 0, 1, 5, 0.1), TUNEP_TERMINATE);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_describe)
{
    struct tunep_hyperband_config c = hb_config(9, 3, 1);
    struct tunep_scheduler *s = NULL;
    ck_assert_int_eq(hb_new(&c, &s, NULL), TUNE_OK);
    for (int64_t i = 0; i < 4; i++)
        tunep_scheduler_on_trial_add(s, i, 0.0);
    tunep_scheduler_on_result(s, 0, 1, 1, 0.5);
    tunep_scheduler_on_trial_paused(s, 0);
    struct tunep_buf buf;
    tunep_buf_init(&buf);
    tunep_scheduler_describe(s, 1.0, &buf);
    ck_assert_str_eq(buf.data, "HyperBand: s_max 2, brackets 1, stopped 0\n"
                               "HyperBand: band 0 bracket s=2: round 1 of 3 (r 1), 4 trials so "
                               "far: 3 running, 1 paused, 0 to resume\n");
    tunep_buf_done(&buf);
    ck_assert_str_eq(tunep_scheduler_time_attr(s), "training_iteration");
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_100k_trials)
{
    /* 10^5 trials through bands of 143, each report jumping to its round's milestone: the
     * bookkeeping must stay O(log n) amortised per report. */
    enum { N = 100000 };
    struct tunep_hyperband_config c = hb_config(81, 3, 1);
    struct tunep_scheduler *s = NULL;
    ck_assert_int_eq(hb_new(&c, &s, NULL), TUNE_OK);
    struct tunep_hyperband *h = hb_of(s);
    enum { WORKERS = 64 };
    double *t = calloc(N, sizeof *t);
    int64_t *queue = malloc(N * sizeof *queue); /* running trials, oldest first */
    int64_t head = 0, len = 0, started = 0, terminated = 0, stopped = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0); /* CPU time: the machine may be busy */
    for (;;) {
        int64_t id;
        while (len < WORKERS) {
            enum tunep_next next = tunep_scheduler_choose(s, started < N, len, &id);
            if (next == TUNEP_NEXT_RESUME) {
                queue[(head + len++) % N] = id;
            } else if (next == TUNEP_NEXT_NEW && started < N) {
                ck_assert_int_eq(tunep_scheduler_on_trial_add(s, started, 0.0), TUNE_OK);
                queue[(head + len++) % N] = started++;
            } else {
                break;
            }
        }
        while (tunep_scheduler_take_stopped(s, &id)) {
            tunep_scheduler_on_trial_complete(s, id, 1, t[id], base_score(id));
            stopped++;
        }
        if (len == 0)
            break;
        id = queue[head];
        head = (head + 1) % N;
        len--;
        int sb, round;
        int64_t band, n;
        ck_assert(tunep_hyperband_bracket_info(h, tunep_hyperband_trial_bracket(h, id), &sb, &band,
                                               &n, &round));
        t[id] = tunep_hyperband_round_r(&c, sb, tunep_hyperband_trial_round(h, id));
        enum tunep_decision d = tunep_scheduler_on_result(s, id, 1, t[id], base_score(id));
        if (d == TUNEP_PAUSE) {
            tunep_scheduler_on_trial_paused(s, id);
        } else {
            ck_assert_int_eq(d, TUNEP_TERMINATE);
            tunep_scheduler_on_trial_complete(s, id, 1, t[id], base_score(id));
            terminated++;
        }
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double elapsed = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("HyperBand: 10^5 trials: %.3f s CPU\n", elapsed);
    ck_assert_int_eq(started, N);
    ck_assert_int_eq(terminated + stopped, N);
    /* 699 full bands end 10 trials each at R; the last 43 trials fill bracket s=4 (43 of 81:
     * rounds 43, 14, 4, 1, 1, one winner). */
    ck_assert_int_eq(terminated, 699 * 10 + 1);
    /* ~0.1 s at -O2; an O(n) scan per event would take minutes. */
    ck_assert_msg(elapsed < 3.0, "10^5 trials took %g s", elapsed);
    free(t);
    free(queue);
    tunep_scheduler_free(s);
}
END_TEST

START_TEST(test_alloc_failures)
{
    int failures = 0;
    for (long n = 0;; n++) {
        struct tunep_hyperband_config c = hb_config(27, 3, 1);
        struct tunep_scheduler *s = NULL;
        tune_error err;
        tune_test_alloc_fail_after(n);
        tune_status st = hb_new(&c, &s, &err);
        int64_t added = 0;
        for (int64_t i = 0; st == TUNE_OK && i < 300; i++) {
            st = tunep_scheduler_on_trial_add(s, i, 0.0);
            if (st == TUNE_OK)
                added++;
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
            /* a failed add left the scheduler usable: the trials added so far run */
            struct tunep_hyperband *h = hb_of(s);
            ck_assert_int_eq(tunep_scheduler_on_trial_add(s, 1000, 0.0), TUNE_OK);
            ck_assert_int_ge(tunep_hyperband_trial_bracket(h, 1000), 0);
            for (int64_t i = 0; i < added; i++)
                ck_assert_int_ge(tunep_hyperband_trial_bracket(h, i), 0);
        }
        tunep_scheduler_free(s); /* ASan reports any leak */
    }
}
END_TEST

static Suite *hyperband_suite(void)
{
    Suite *s = suite_create("hyperband");
    TCase *tc = tcase_create("hyperband");
    tcase_add_test(tc, test_paper_table);
    tcase_add_test(tc, test_full_band);
    tcase_add_test(tc, test_two_bands_one_worker_and_many);
    tcase_add_test(tc, test_small_study_lone_survivor);
    tcase_add_test(tc, test_error_and_early_end);
    tcase_add_test(tc, test_stop_last_trials_false);
    tcase_add_test(tc, test_describe);
    tcase_add_test(tc, test_100k_trials);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(hyperband_suite)
