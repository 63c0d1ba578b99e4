/*
 * search_bench.c - the searchers of search/searcher.h on standard problems,
 * one trial at a time (ask, evaluate, tell), beside bench/optuna_search.py.
 *
 *   search_bench quality --searcher NAME --problem P [--budgets 50,200] [--seeds 20] [--seed0 0]
 *   search_bench timing  --searcher NAME [--history 1000] [--window 20]
 *   search_bench kernel  --searcher NAME --problem P [--draws 400] [--seed0 0] < HISTORY
 *
 * NAME: random (tunep_space_sample, as the study's random search), tpe,
 * tpe-mv (multivariate TPE), and sobol, lhs, gp when they are built.
 * P: branin (minimum 0.397887 on [-5, 10] x [0, 15]), hartmann6 (minimum
 * -3.32237 on [0, 1]^6), curve (the 27-step synthetic learning curve of
 * ../shared/bench/peers/optuna_overhead.py part d, noise-free final value,
 * maximised). Minimised problems are negated for the searcher (scores are
 * larger-is-better). Trial i draws from the stream seeded by (seed, i), as
 * in a study, so a run is reproducible. One JSON line per (seed, budget):
 * best value and regret after the first `budget` evaluations (a sequential
 * searcher's first 50 of 200 are its 50-evaluation run; LHS, which plans for
 * its budget, runs once per budget).
 * timing: the 4-parameter space of optuna_overhead.py part b (x uniform,
 * lr log-uniform, act choice of 3, n integer 1..64); `history` trials of its
 * trivial objective, then the mean and median time of suggest() over the
 * last `window` of them (Optuna's window: trials 980..999).
 * kernel: the searcher's next suggestion given a fixed history, `draws`
 * times from independent streams, for bench/tpe_kernel.py to compare with
 * Optuna's from the same history. HISTORY: one completed trial per line, its
 * parameters in space order then the objective's value (curve: lr
 * weight_decay batch_size warmup value). Prints one line per draw: the
 * suggested parameters then the objective there.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_rng.h>

#include "base/base.h"
#include "base/rng.h"
#include "search/searcher.h"
#include "search/space.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* This thread's CPU time: on a shared machine, wall time also counts other processes' turns. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static _Noreturn void die(const char *what, const tune_error *err)
{
    fprintf(stderr, "search_bench: %s%s%s\n", what, err ? ": " : "", err ? err->text : "");
    exit(1);
}

/* ---- problems ------------------------------------------------------------- */

enum problem { P_BRANIN, P_HARTMANN6, P_CURVE, P_TRIVIAL };

static double branin(const double *x)
{
    const double pi = 3.14159265358979323846;
    double b = 5.1 / (4.0 * pi * pi), c = 5.0 / pi, t = 1.0 / (8.0 * pi);
    double y = x[1] - b * x[0] * x[0] + c * x[0] - 6.0;
    return y * y + 10.0 * (1.0 - t) * cos(x[0]) + 10.0;
}

static double hartmann6(const double *x)
{
    static const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
    static const double a[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                   {0.05, 10, 17, 0.1, 8, 14},
                                   {3, 3.5, 1.7, 10, 17, 8},
                                   {17, 8, 0.05, 10, 0.1, 14}};
    static const double p[4][6] = {{0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886},
                                   {0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
                                   {0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650},
                                   {0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381}};
    double s = 0.0;
    for (int i = 0; i < 4; i++) {
        double e = 0.0;
        for (int j = 0; j < 6; j++)
            e += a[i][j] * (x[j] - p[i][j]) * (x[j] - p[i][j]);
        s += alpha[i] * exp(-e);
    }
    return -s;
}

/* optuna_overhead.py part d's curve_params / curve_value at step 27, no noise. */
static double curve(double lr, double wd, int64_t bs, int64_t warm)
{
    double dl = log10(lr) - log10(3e-4);
    double pen = bs == 16 ? 0.01 : bs == 64 ? 0.015 : 0.0;
    double asym = 0.93 - 0.06 * dl * dl - 0.4 * (wd - 0.05) * (wd - 0.05) - pen -
                  0.002 * fabs((double)warm - 3.0);
    asym = asym > 0.3 ? asym : 0.3;
    double k = 0.04 + 0.3 * fmin(1.0, sqrt(lr / 1e-3));
    return asym * (1.0 - 0.7 * exp(-k * 27.0));
}

/* The curve's maximum: wd, bs and warm are separable (0.05, 32, 3); lr by a dense scan. */
static double curve_best(void)
{
    double best = -1.0;
    for (int i = 0; i <= 200000; i++) {
        double v = curve(pow(10.0, -6.0 + 5.0 * i / 200000.0), 0.05, 32, 3);
        best = v > best ? v : best;
    }
    return best;
}

static const char *const acts[3] = {"relu", "gelu", "tanh"};

static tune_space *make_space(enum problem pb)
{
    tune_space *s = NULL;
    tune_error err;
    const char *names[6] = {"x0", "x1", "x2", "x3", "x4", "x5"};
    static const int64_t bss[3] = {16, 32, 64};
    int bad = tune_space_new(&s, &err) != TUNE_OK;
    switch (pb) {
        case P_BRANIN:
            bad = bad || tune_space_add_uniform(s, "x0", -5.0, 10.0, &err) ||
                  tune_space_add_uniform(s, "x1", 0.0, 15.0, &err);
            break;
        case P_HARTMANN6:
            for (int j = 0; j < 6 && !bad; j++)
                bad = tune_space_add_uniform(s, names[j], 0.0, 1.0, &err) != TUNE_OK;
            break;
        case P_CURVE:
            bad = bad || tune_space_add_loguniform(s, "lr", 1e-6, 1e-1, 10.0, &err) ||
                  tune_space_add_uniform(s, "weight_decay", 0.0, 0.3, &err) ||
                  tune_space_add_choice_int(s, "batch_size", bss, 3, &err) ||
                  tune_space_add_randint(s, "warmup", 0, 11, &err);
            break;
        case P_TRIVIAL:
            bad = bad || tune_space_add_uniform(s, "x", -10.0, 10.0, &err) ||
                  tune_space_add_loguniform(s, "lr", 1e-5, 1e-1, 10.0, &err) ||
                  tune_space_add_choice_string(s, "act", acts, 3, &err) ||
                  tune_space_add_randint(s, "n", 1, 65, &err);
            break;
    }
    if (bad)
        die("cannot build the space", &err);
    return s;
}

/* The value to minimise (curve: its negative). */
static double evaluate(enum problem pb, const struct tunep_value *v)
{
    double x[6];
    switch (pb) {
        case P_BRANIN:
        case P_HARTMANN6:
            for (int j = 0; j < (pb == P_BRANIN ? 2 : 6); j++)
                x[j] = v[j].u.d;
            return pb == P_BRANIN ? branin(x) : hartmann6(x);
        case P_CURVE: return -curve(v[0].u.d, v[1].u.d, v[2].u.i, v[3].u.i);
        case P_TRIVIAL: {
            int ci = 0;
            for (int i = 0; i < 3; i++)
                if (strcmp(v[2].u.s, acts[i]) == 0)
                    ci = i;
            double l = log10(v[1].u.d) + 3.0;
            double n = (double)(v[3].u.i - 32);
            return v[0].u.d * v[0].u.d + l * l + ci + n * n / 1000.0;
        }
    }
    return (double)NAN;
}

/* ---- searchers ------------------------------------------------------------ */

/* NULL for random search; exits on an unknown or unbuilt name. */
static struct tunep_searcher *make_searcher(const char *name, const tune_space *space,
                                            uint64_t seed, int64_t budget)
{
    struct tunep_searcher *s = NULL;
    tune_error err;
    tune_status st = TUNE_OK;
    (void)budget;
    if (strcmp(name, "random") == 0)
        return NULL;
    if (strcmp(name, "tpe") == 0 || strcmp(name, "tpe-mv") == 0) {
        struct tunep_tpe_config c;
        tunep_tpe_config_default(&c);
        c.multivariate = strcmp(name, "tpe-mv") == 0;
        st = tunep_tpe_new(space, &c, seed, &s, &err);
    }
    else if (strcmp(name, "gp") == 0) {
        struct tunep_gp_config c;
        tunep_gp_config_default(&c);
        st = tunep_gp_new(space, &c, seed, &s, &err);
    }
    else if (strcmp(name, "sobol") == 0 || strcmp(name, "lhs") == 0) {
        struct tunep_qmc_config c;
        tunep_qmc_config_default(&c);
        st = name[0] == 's' ? tunep_sobol_new(space, &c, seed, &s, &err)
                            : tunep_lhs_new(space, &c, seed, budget, &s, &err);
    }
    else {
        fprintf(stderr, "search_bench: searcher '%s' is not built in\n", name);
        exit(2);
    }
    if (st)
        die(name, &err);
    return s;
}

/* One trial: suggest, start, evaluate, complete. Returns the value (minimised). */
static double trial(struct tunep_searcher *s, const tune_space *space, enum problem pb, gsl_rng *r,
                    uint64_t seed, int64_t id, struct tunep_value *v, double *ret_suggest_s,
                    double *ret_suggest_cpu_s)
{
    tune_error err;
    gsl_rng_set(r, (unsigned long)tunep_trial_seed(seed, id, TUNEP_RNG_SAMPLE));
    double t0 = now(), c0 = cpu_now();
    if (!s)
        tunep_space_sample(space, r, 0, 0, v);
    else if (s->ops->suggest(s, id, r, v, &err))
        die("suggest", &err);
    double c1 = cpu_now(), t1 = now();
    if (ret_suggest_s)
        *ret_suggest_s = t1 - t0;
    if (ret_suggest_cpu_s)
        *ret_suggest_cpu_s = c1 - c0;
    if (s && s->ops->on_start(s, id, v))
        die("on_start", NULL);
    double f = evaluate(pb, v);
    if (s && s->ops->on_complete(s, id, 1, 1.0, -f))
        die("on_complete", NULL);
    return f;
}

static const char *problem_name(enum problem pb)
{
    static const char *const names[] = {"branin", "hartmann6", "curve", "trivial"};
    return names[pb];
}

static void quality(const char *name, enum problem pb, const long *budgets, int n_budgets,
                    int seeds, int seed0)
{
    tune_space *space = make_space(pb);
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    struct tunep_value v[6];
    double fmin = pb == P_BRANIN ? 0.397887 : pb == P_HARTMANN6 ? -3.32237 : -curve_best();
    int plans = strcmp(name, "lhs") == 0; /* the design depends on the budget */
    long max_budget = 0;
    for (int b = 0; b < n_budgets; b++)
        max_budget = budgets[b] > max_budget ? budgets[b] : max_budget;
    for (int sd = seed0; sd < seed0 + seeds; sd++) {
        for (int run = 0; run < (plans ? n_budgets : 1); run++) {
            long n = plans ? budgets[run] : max_budget;
            struct tunep_searcher *s = make_searcher(name, space, (uint64_t)sd, n);
            double best = (double)INFINITY, t0 = now(), t_suggest = 0.0, ts;
            for (long i = 0; i < n; i++) {
                double f = trial(s, space, pb, r, (uint64_t)sd, i, v, &ts, NULL);
                t_suggest += ts;
                best = f < best ? f : best;
                for (int b = 0; b < n_budgets; b++) {
                    if (budgets[b] != i + 1 || (plans && b != run))
                        continue;
                    /* curve is maximised: report its value, regret = max - best */
                    printf("{\"bench\": \"tune\", \"searcher\": \"%s\", \"problem\": \"%s\", "
                           "\"budget\": %ld, \"seed\": %d, \"best\": %.10g, \"regret\": %.10g, "
                           "\"seconds\": %.4f, \"suggest_s\": %.4f}\n",
                           name, problem_name(pb), i + 1, sd, pb == P_CURVE ? -best : best,
                           best - fmin, now() - t0, t_suggest);
                }
            }
            tunep_searcher_free(s);
        }
        fflush(stdout);
    }
    gsl_rng_free(r);
    tune_space_free(space);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void timing(const char *name, long history, long window)
{
    tune_space *space = make_space(P_TRIVIAL);
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    struct tunep_value v[4];
    struct tunep_searcher *s = make_searcher(name, space, 42, history);
    double *ts = calloc(2 * (size_t)window, sizeof *ts), best = (double)INFINITY, t0 = now();
    if (!ts)
        die("out of memory", NULL);
    double *tc = ts + window;
    for (long i = 0; i < history; i++) {
        double t, c;
        double f = trial(s, space, P_TRIVIAL, r, 42, i, v, &t, &c);
        best = f < best ? f : best;
        if (i >= history - window) {
            ts[i - (history - window)] = t;
            tc[i - (history - window)] = c;
        }
    }
    double total = now() - t0, mean = 0.0, cmean = 0.0;
    for (long i = 0; i < window; i++) {
        mean += ts[i] / (double)window;
        cmean += tc[i] / (double)window;
    }
    qsort(ts, (size_t)window, sizeof *ts, cmp_double);
    qsort(tc, (size_t)window, sizeof *tc, cmp_double);
    printf("{\"bench\": \"tune\", \"part\": \"timing\", \"searcher\": \"%s\", \"history_trials\": "
           "%ld, \"window\": [%ld, %ld], \"suggest_ms_mean\": %.5f, \"suggest_ms_median\": %.5f, "
           "\"suggest_cpu_ms_mean\": %.5f, \"suggest_cpu_ms_median\": %.5f, \"seconds\": %.3f, "
           "\"best_value\": %.6g}\n",
           name, history, history - window, history, 1e3 * mean, 1e3 * ts[window / 2], 1e3 * cmean,
           1e3 * tc[window / 2], total, best);
    if (strcmp(name, "tpe") == 0) /* the headline figure bench/summarize_run.py picks up */
        printf("{\"bench\": \"tune\", \"searcher\": \"tpe\", \"history\": %ld, "
               "\"ms_per_suggest\": %.5f}\n",
               history, 1e3 * tc[window / 2]);
    free(ts);
    tunep_searcher_free(s);
    gsl_rng_free(r);
    tune_space_free(space);
}

/* Reads the history on stdin into s (ids 0..n-1); returns n. */
static long kernel_history(struct tunep_searcher *s, const tune_space *space, enum problem pb)
{
    size_t d = space->n;
    struct tunep_value v[6];
    double x[7];
    long n = 0;
    for (;;) {
        size_t got = 0;
        while (got < d + 1 && scanf("%lf", &x[got]) == 1)
            got++;
        if (got == 0)
            break;
        if (got != d + 1)
            die("history: a line needs the parameters and the value", NULL);
        for (size_t j = 0; j < d; j++) {
            const struct tunep_param *p = &space->params[j];
            int is_int = p->dist == TUNEP_DIST_RANDINT || p->dist == TUNEP_DIST_CHOICE;
            v[j] = is_int ? (struct tunep_value){.type = TUNEP_V_INT, .u.i = (int64_t)x[j]}
                          : (struct tunep_value){.type = TUNEP_V_DOUBLE, .u.d = x[j]};
        }
        /* scores are larger-is-better: curve as it is, the others negated */
        double score = pb == P_CURVE ? x[d] : -x[d];
        if (s->ops->on_start(s, n, v) || s->ops->on_complete(s, n, 1, 1.0, score))
            die("history: the searcher refused a trial", NULL);
        n++;
    }
    return n;
}

static void kernel(const char *name, enum problem pb, long draws, int seed0)
{
    tune_space *space = make_space(pb);
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    struct tunep_value v[6];
    tune_error err;
    struct tunep_searcher *s = make_searcher(name, space, (uint64_t)seed0, 0);
    if (!s)
        die("kernel: random search has no history to condition on", NULL);
    long n = kernel_history(s, space, pb);
    for (long k = 0; k < draws; k++) {
        /* trial n drawn from `draws` independent streams; nothing is started */
        gsl_rng_set(r, (unsigned long)tunep_trial_seed((uint64_t)seed0 + (uint64_t)k, n,
                                                       TUNEP_RNG_SAMPLE));
        if (s->ops->suggest(s, n, r, v, &err))
            die("suggest", &err);
        for (size_t j = 0; j < space->n; j++)
            printf(v[j].type == TUNEP_V_INT ? "%.0f " : "%.17g ",
                   v[j].type == TUNEP_V_INT ? (double)v[j].u.i : v[j].u.d);
        double f = evaluate(pb, v);
        printf("%.17g\n", pb == P_CURVE ? -f : f);
    }
    tunep_searcher_free(s);
    gsl_rng_free(r);
    tune_space_free(space);
}

static _Noreturn void usage(void)
{
    fprintf(stderr, "usage: search_bench quality --searcher NAME --problem branin|hartmann6|curve "
                    "[--budgets 50,200] [--seeds 20] [--seed0 0]\n"
                    "       search_bench timing --searcher NAME [--history 1000] [--window 20]\n"
                    "       search_bench kernel --searcher NAME --problem P [--draws 400] "
                    "[--seed0 0] < HISTORY\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *name = "tpe", *problem = "branin";
    long budgets[8] = {50, 200}, history = 1000, window = 20, draws = 400;
    int n_budgets = 2, seeds = 20, seed0 = 0;
    if (argc < 2)
        usage();
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!val)
            usage();
        i++;
        if (strcmp(a, "--searcher") == 0) {
            name = val;
        } else if (strcmp(a, "--problem") == 0) {
            problem = val;
        } else if (strcmp(a, "--budgets") == 0) {
            char *end;
            n_budgets = 0;
            for (const char *p = val; *p && n_budgets < 8; p = *end ? end + 1 : end) {
                budgets[n_budgets] = strtol(p, &end, 10);
                if (end == p || budgets[n_budgets] < 1)
                    usage();
                n_budgets++;
            }
        } else if (strcmp(a, "--seeds") == 0) {
            seeds = atoi(val);
        } else if (strcmp(a, "--seed0") == 0) {
            seed0 = atoi(val);
        } else if (strcmp(a, "--history") == 0) {
            history = atol(val);
        } else if (strcmp(a, "--window") == 0) {
            window = atol(val);
        } else if (strcmp(a, "--draws") == 0) {
            draws = atol(val);
        } else {
            usage();
        }
    }
    if (strcmp(argv[1], "timing") == 0) {
        if (window < 1 || history < window)
            usage();
        timing(name, history, window);
        return 0;
    }
    if (strcmp(argv[1], "quality") != 0 && strcmp(argv[1], "kernel") != 0)
        usage();
    enum problem pb;
    if (strcmp(problem, "branin") == 0)
        pb = P_BRANIN;
    else if (strcmp(problem, "hartmann6") == 0)
        pb = P_HARTMANN6;
    else if (strcmp(problem, "curve") == 0)
        pb = P_CURVE;
    else
        usage();
    if (strcmp(argv[1], "kernel") == 0) {
        if (draws < 1)
            usage();
        kernel(name, pb, draws, seed0);
        return 0;
    }
    quality(name, pb, budgets, n_budgets, seeds, seed0);
    return 0;
}
