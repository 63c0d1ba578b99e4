/*
 * moo_bench.c - NSGA-II (search/nsga2.c) or multi-objective TPE (search/tpe.c
 * with search/motpe.c) on ZDT1 and ZDT2 (Zitzler, Deb and Thiele 2000), one
 * trial at a time (ask, evaluate, tell), beside bench/optuna_moo.py (Optuna's
 * NSGAIISampler or TPESampler); bench/run_moo.sh runs both.
 *
 *   moo_bench --problem zdt1|zdt2 [--searcher nsga2|tpe|tpe-uniform] [--evals 200]
 *             [--seeds 20] [--seed0 0] [--dim 30] [--via study|searcher]
 *
 * ZDT1 and ZDT2 over [0, 1]^dim, both objectives minimised: f1 = x0,
 * g = 1 + 9 / (dim - 1) * sum(x1 .. x_{dim-1}), f2 = g (1 - sqrt(f1 / g))
 * (ZDT1, a convex front) or g (1 - (f1 / g)^2) (ZDT2, a concave one). The
 * searcher gets the negated values (its scores are larger-is-better), with
 * Optuna's NSGAIISampler defaults (population 50, crossover 0.9, swapping 0.5,
 * mutation 1 / dim), or TPE's (search/searcher.h: 10 random trials, 24
 * candidates, gamma 0.1 without a cap, univariate; "tpe": good trials weighted
 * by hypervolume contribution, "tpe-uniform": weighted 1 each, as Optuna 5.0's
 * TPESampler). Trial i draws from the stream seeded by (seed, i), as in
 * a study. One JSON line per seed: the hypervolume of all `evals` points
 * bounded by the reference point (11, 11) (g <= 10 and f2 <= g, so every
 * point counts; optuna_moo.py uses the same point), and the median and mean
 * time of one suggestion, wall and this thread's CPU time.
 *
 * What a suggestion's time covers: with --via study (the default) one
 * tune_study_ask() on an in-memory study, that is the engine creating the
 * trial (its record, the scheduler's and the searcher's bookkeeping) and the
 * searcher drawing its parameters, as Optuna's timed study.ask() creates the
 * trial in its InMemoryStorage and samples all its parameters; reading the
 * parameters and the tell are outside on both sides. --via searcher times
 * the searcher's suggest() alone, driven directly (no engine).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_rng.h>

#include "base/base.h"
#include "base/rng.h"
#include "search/pareto.h"
#include "search/searcher.h"
#include "search/space.h"

#define MAX_DIM 100

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
    fprintf(stderr, "moo_bench: %s%s%s\n", what, err ? ": " : "", err ? err->text : "");
    exit(1);
}

/* ZDT1 (concave = 0) or ZDT2 (concave = 1) at x[dim]: f[0], f[1], both minimised. */
static void zdt(int concave, const double *x, int dim, double *f)
{
    double s = 0;
    for (int i = 1; i < dim; i++)
        s += x[i];
    double g = 1 + 9 * s / (dim - 1), r = x[0] / g;
    f[0] = x[0];
    f[1] = g * (concave ? 1 - r * r : 1 - sqrt(r));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * One seed's JSON line: the hypervolume of its evals points y (reference
 * (11, 11)) and the median and mean of its times per suggestion; via names
 * the timed path when it is not the searcher alone.
 */
static void print_run(const char *searcher, const char *via, int concave, int dim, long evals,
                      int seed, const double *y, double *wall, double *cpu)
{
    const double ref[2] = {11, 11};
    double hv, sum_wall = 0, sum_cpu = 0;
    tune_error err;
    if (tunep_pareto_hypervolume(y, (size_t)evals, 2, ref, &hv, &err))
        die("hypervolume", &err);
    for (long i = 0; i < evals; i++) {
        sum_wall += wall[i];
        sum_cpu += cpu[i];
    }
    printf("{\"bench\": \"tune\", \"sampler\": \"%s\", ", searcher);
    if (via)
        printf("\"via\": \"%s\", ", via);
    printf("\"problem\": \"%s\", \"dim\": %d, \"evals\": %ld, \"seed\": %d, "
           "\"hypervolume\": %.10g, \"suggest_ms_median\": %.5f, \"suggest_ms_mean\": %.5f, "
           "\"suggest_cpu_ms_median\": %.5f, \"suggest_cpu_ms_mean\": %.5f}\n",
           concave ? "zdt2" : "zdt1", dim, evals, seed, hv, 1e3 * median(wall, evals),
           1e3 * sum_wall / (double)evals, 1e3 * median(cpu, evals), 1e3 * sum_cpu / (double)evals);
    fflush(stdout);
}

static void run(int concave, const char *searcher, long evals, int seeds, int seed0, int dim)
{
    tune_space *space = NULL;
    tune_error err;
    if (tune_space_new(&space, &err))
        die("space", &err);
    for (int j = 0; j < dim; j++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", j);
        if (tune_space_add_uniform(space, name, 0.0, 1.0, &err))
            die("space", &err);
    }
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    struct tunep_value v[MAX_DIM];
    double *y = malloc((size_t)evals * 2 * sizeof *y);
    double *wall = malloc((size_t)evals * sizeof *wall);
    double *cpu = malloc((size_t)evals * sizeof *cpu);
    if (!r || !y || !wall || !cpu)
        die("out of memory", NULL);
    for (int sd = seed0; sd < seed0 + seeds; sd++) {
        struct tunep_searcher *s = NULL;
        if (strcmp(searcher, "nsga2") == 0) {
            struct tunep_nsga2_config c;
            tunep_nsga2_config_default(&c);
            if (tunep_nsga2_new(space, &c, 2, &s, &err))
                die("nsga2", &err);
        } else {
            struct tunep_tpe_config c;
            tunep_tpe_config_default(&c);
            c.n_objectives = 2;
            c.uniform_weights_below = strcmp(searcher, "tpe-uniform") == 0;
            if (tunep_tpe_new(space, &c, (uint64_t)sd, &s, &err))
                die("tpe", &err);
        }
        for (long i = 0; i < evals; i++) {
            gsl_rng_set(r, (unsigned long)tunep_trial_seed((uint64_t)sd, i, TUNEP_RNG_SAMPLE));
            double t0 = now(), c0 = cpu_now();
            if (s->ops->suggest(s, i, r, v, &err))
                die("suggest", &err);
            double c1 = cpu_now(), t1 = now();
            wall[i] = t1 - t0;
            cpu[i] = c1 - c0;
            if (s->ops->on_start(s, i, v))
                die("on_start", NULL);
            double x[MAX_DIM];
            for (int j = 0; j < dim; j++)
                x[j] = v[j].u.d;
            zdt(concave, x, dim, y + 2 * i);
            double scores[2] = {-y[2 * i], -y[2 * i + 1]};
            if (s->ops->on_complete_values(s, i, 1, scores, 2))
                die("on_complete_values", NULL);
        }
        tunep_searcher_free(s);
        print_run(searcher, NULL, concave, dim, evals, sd, y, wall, cpu);
    }
    free(y);
    free(wall);
    free(cpu);
    gsl_rng_free(r);
    tune_space_free(space);
}

/*
 * The study's config: dim uniform parameters x0.. in [0, 1], two minimised
 * objectives f1 and f2, the searcher with its defaults, one trial at a time,
 * in memory (Optuna's InMemoryStorage).
 */
static char *study_json(const char *searcher, long evals, int seed, int dim)
{
    size_t cap = 512 + (size_t)dim * 48;
    char *j = malloc(cap);
    if (!j)
        die("out of memory", NULL);
    int n =
        snprintf(j, cap,
                 "{\"name\": \"moo\", \"metric\": [\"f1\", \"f2\"], \"mode\": [\"min\", \"min\"],"
                 " \"num_samples\": %ld, \"seed\": %d, \"storage\": \":memory:\","
                 " \"max_concurrent_trials\": 1, \"search\": {\"algorithm\": \"%s\"%s},"
                 " \"param_space\": {",
                 evals, seed, strcmp(searcher, "nsga2") == 0 ? "nsga2" : "tpe",
                 strcmp(searcher, "tpe-uniform") == 0 ? ", \"weights_below\": \"uniform\"" : "");
    for (int k = 0; k < dim; k++)
        n += snprintf(j + n, cap - (size_t)n, "%s\"x%d\": {\"uniform\": [0, 1]}", k ? ", " : "", k);
    snprintf(j + n, cap - (size_t)n, "}}");
    return j;
}

/*
 * Ask, evaluate, tell through the study (tune_study_ask(), as Optuna's
 * study.ask()): the time of an ask is the engine's trial creation and the
 * searcher's suggestion, as Optuna's ask() creates the trial in its storage
 * and samples its parameters.
 */
static void run_study(int concave, const char *searcher, long evals, int seeds, int seed0, int dim)
{
    static const char *const names[2] = {"f1", "f2"};
    double *y = malloc((size_t)evals * 2 * sizeof *y);
    double *wall = malloc((size_t)evals * sizeof *wall);
    double *cpu = malloc((size_t)evals * sizeof *cpu);
    if (!y || !wall || !cpu)
        die("out of memory", NULL);
    for (int sd = seed0; sd < seed0 + seeds; sd++) {
        tune_error err;
        tune_study *s = NULL;
        char *json = study_json(searcher, evals, sd, dim);
        if (tune_study_new_from_json(json, "moo_bench", &s, &err))
            die("study", &err);
        free(json);
        for (long i = 0; i < evals; i++) {
            tune_trial *t = NULL;
            double t0 = now(), c0 = cpu_now();
            if (tune_study_ask(s, &t, &err))
                die("ask", &err);
            double c1 = cpu_now(), t1 = now();
            wall[i] = t1 - t0;
            cpu[i] = c1 - c0;
            double x[MAX_DIM];
            for (int j = 0; j < dim; j++) {
                char name[16];
                snprintf(name, sizeof name, "x%d", j);
                if (tune_trial_get_double(t, name, &x[j], &err))
                    die("parameter", &err);
            }
            zdt(concave, x, dim, y + 2 * i);
            if (tune_trial_report(t, 2, names, y + 2 * i, &err) ||
                tune_study_tell(s, t, TUNE_TELL_COMPLETE, NULL, &err))
                die("tell", &err);
        }
        tune_study_free(s);
        print_run(searcher, "study", concave, dim, evals, sd, y, wall, cpu);
    }
    free(y);
    free(wall);
    free(cpu);
}

static _Noreturn void usage(void)
{
    fprintf(stderr, "usage: moo_bench --problem zdt1|zdt2 [--searcher nsga2|tpe|tpe-uniform] "
                    "[--evals 200] [--seeds 20] [--seed0 0] [--dim 30] [--via study|searcher]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *problem = NULL, *searcher = "nsga2";
    long evals = 200;
    int seeds = 20, seed0 = 0, dim = 30, via_study = 1;
    for (int i = 1; i < argc; i += 2) { /* --option value pairs */
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!val)
            usage();
        if (strcmp(argv[i], "--problem") == 0)
            problem = val;
        else if (strcmp(argv[i], "--searcher") == 0)
            searcher = val;
        else if (strcmp(argv[i], "--evals") == 0)
            evals = strtol(val, NULL, 10);
        else if (strcmp(argv[i], "--seeds") == 0)
            seeds = atoi(val);
        else if (strcmp(argv[i], "--seed0") == 0)
            seed0 = atoi(val);
        else if (strcmp(argv[i], "--dim") == 0)
            dim = atoi(val);
        else if (strcmp(argv[i], "--via") == 0 && strcmp(val, "study") == 0)
            via_study = 1;
        else if (strcmp(argv[i], "--via") == 0 && strcmp(val, "searcher") == 0)
            via_study = 0;
        else
            usage();
    }
    if (!problem || (strcmp(problem, "zdt1") != 0 && strcmp(problem, "zdt2") != 0) || evals < 1 ||
        seeds < 1 || dim < 2 || dim > MAX_DIM ||
        (strcmp(searcher, "nsga2") != 0 && strcmp(searcher, "tpe") != 0 &&
         strcmp(searcher, "tpe-uniform") != 0))
        usage();
    if (via_study)
        run_study(strcmp(problem, "zdt2") == 0, searcher, evals, seeds, seed0, dim);
    else
        run(strcmp(problem, "zdt2") == 0, searcher, evals, seeds, seed0, dim);
    return 0;
}
