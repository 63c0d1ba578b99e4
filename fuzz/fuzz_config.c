/*
 * fuzz_config.c - libFuzzer harness for the study config: the input is a
 * JSON document given to tune_study_new_from_json() (config/config.c,
 * config_space.c, config_scheduler.c, config_pos.c for error positions).
 *
 * Beyond "no crash, no sanitizer report, no leak", it checks what the
 * parser promises to the code that runs after it:
 *  - a failure fills tune_error consistently and returns no study;
 *  - every configuration drawn from an accepted space stays inside the
 *    documented interval of its primitive (configs/README.md), also for the
 *    extreme uniforms 0 and 1 - 2^-53 (an "edge" generator below), and turns
 *    into the trial's JSON;
 *  - an accepted scheduler section builds a scheduler (tunep_scheduler_new()
 *    assumes the parser validated it) that survives a few reports.
 */
#include "fuzz_util.h"

#include <math.h>

#include <gsl/gsl_rng.h>

#include "config/config.h"
#include "base/rng.h"
#include "schedulers/scheduler.h"
#include "search/space.h"
#include "engine/study.h"

/* ---- an edge-case uniform generator -------------------------------------- */

/* The uniforms it cycles through: both ends of [0, 1) and a few inner points. */
static const double edge_values[] = {0.0, 0x1.fffffffffffffp-1, 0.5, 0x1p-53, 0.25, 0.9999};
#define EDGE_COUNT (sizeof edge_values / sizeof edge_values[0])

struct edge_state {
    unsigned long k;
};

static void edge_set(void *state, unsigned long seed)
{
    ((struct edge_state *)state)->k = seed;
}

static double edge_get_double(void *state)
{
    struct edge_state *s = state;
    return edge_values[s->k++ % EDGE_COUNT];
}

static unsigned long edge_get(void *state)
{
    return (unsigned long)(edge_get_double(state) * 4294967296.0);
}

static const gsl_rng_type edge_type = {
    .name = "tune-fuzz-edge",
    .max = 0xffffffffUL,
    .min = 0,
    .size = sizeof(struct edge_state),
    .set = edge_set,
    .get = edge_get,
    .get_double = edge_get_double,
};

static gsl_rng *edge_rng, *real_rng;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    edge_rng = gsl_rng_alloc(&edge_type);
    real_rng = gsl_rng_alloc(tunep_rng_xoshiro256);
    FUZZ_CHECK(edge_rng && real_rng);
    return 0;
}

/* ---- checks --------------------------------------------------------------- */

static int same_value(const struct tunep_value *a, const struct tunep_value *b)
{
    if (a->type != b->type)
        return 0;
    switch (a->type) {
        case TUNEP_V_DOUBLE: return a->u.d == b->u.d;
        case TUNEP_V_INT: return a->u.i == b->u.i;
        case TUNEP_V_STRING: return strcmp(a->u.s, b->u.s) == 0;
        case TUNEP_V_BOOL: return a->u.b == b->u.b;
        case TUNEP_V_ABSENT: return 1;
    }
    return 0;
}

/* A quantized draw may leave [lo, hi] by the rounding of k * q and of "is a multiple". */
static int near_range(double v, double lo, double hi, double q)
{
    double tol = 1e-8 * (fabs(lo) + fabs(hi) + q);
    return v >= lo - tol && v <= hi + tol;
}

static void check_value(const struct tunep_param *p, const struct tunep_value *v)
{
    switch (p->dist) {
        case TUNEP_DIST_UNIFORM:
        case TUNEP_DIST_LOGUNIFORM:
            FUZZ_CHECK(v->type == TUNEP_V_DOUBLE);
            FUZZ_CHECK(v->u.d >= p->lo && v->u.d < p->hi);
            break;
        case TUNEP_DIST_QUNIFORM:
        case TUNEP_DIST_QLOGUNIFORM:
            FUZZ_CHECK(v->type == TUNEP_V_DOUBLE);
            FUZZ_CHECK(near_range(v->u.d, p->lo, p->hi, p->q));
            break;
        case TUNEP_DIST_RANDN:
        case TUNEP_DIST_QRANDN: FUZZ_CHECK(v->type == TUNEP_V_DOUBLE); break;
        case TUNEP_DIST_RANDINT:
        case TUNEP_DIST_LOGRANDINT:
            FUZZ_CHECK(v->type == TUNEP_V_INT);
            FUZZ_CHECK(v->u.i >= p->ilo && v->u.i < p->ihi);
            break;
        case TUNEP_DIST_QRANDINT:
        case TUNEP_DIST_QLOGRANDINT:
            FUZZ_CHECK(v->type == TUNEP_V_INT);
            FUZZ_CHECK(v->u.i >= p->ilo && v->u.i <= p->ihi);
            FUZZ_CHECK(p->iq >= 1 && v->u.i % p->iq == 0);
            break;
        case TUNEP_DIST_CHOICE:
        case TUNEP_DIST_GRID:
        case TUNEP_DIST_CONST: {
            int found = 0;
            for (size_t j = 0; j < p->n_values && !found; j++)
                found = same_value(&p->values[j], v);
            FUZZ_CHECK(found);
            break;
        }
        case TUNEP_DIST_COUNT: FUZZ_CHECK(!"unknown distribution"); break;
    }
    if (v->type == TUNEP_V_DOUBLE && p->dist != TUNEP_DIST_RANDN && p->dist != TUNEP_DIST_QRANDN)
        FUZZ_CHECK(isfinite(v->u.d));
}

static void check_samples(const tune_study *s)
{
    const tune_space *space = s->cfg.space;
    FUZZ_CHECK(space != NULL);
    size_t n = space->n;
    FUZZ_CHECK(n <= TUNEP_SPACE_MAX_PARAMS);
    tune_error err = {0};
    uint64_t grid = tunep_space_grid_size(space, s->expand_choices, &err);
    FUZZ_CHECK(grid >= 1 && grid <= TUNEP_SPACE_MAX_GRID);
    FUZZ_CHECK(s->total_trials >= 1 && s->total_trials <= TUNEP_MAX_TRIALS);

    struct tunep_value *values = calloc(n ? n : 1, sizeof *values);
    const char **names = calloc(n ? n : 1, sizeof *names);
    FUZZ_CHECK(values && names);
    for (size_t i = 0; i < n; i++)
        names[i] = space->params[i].name;
    /* The first and last grid points under edge uniforms, then a seeded draw. */
    const uint64_t points[3] = {0, grid - 1, grid / 2};
    for (int k = 0; k < 3; k++) {
        gsl_rng *r = k < 2 ? edge_rng : real_rng;
        gsl_rng_set(r, k == 0 ? 0 : k == 1 ? 1 : (unsigned long)s->cfg.seed);
        tunep_space_sample(space, r, points[k], s->expand_choices, values);
        for (size_t i = 0; i < n; i++) {
            /* A conditional parameter is absent exactly when its condition fails. */
            int present = tunep_space_present(space, i, values);
            FUZZ_CHECK(present == (values[i].type != TUNEP_V_ABSENT));
            if (present)
                check_value(&space->params[i], &values[i]);
        }
        char *json = tunep_values_json(n, names, values);
        FUZZ_CHECK(json != NULL);
        tunep_free(json);
    }
    free(names);
    free(values);
}

/* The parser vouches for the scheduler options: building and feeding one must work. */
static void check_scheduler(const tune_study *s)
{
    struct tunep_scheduler *sched = NULL;
    tune_error err = {0};
    FUZZ_CHECK(tunep_scheduler_new(&s->cfg.scheduler, s->cfg.space, s->cfg.seed, &sched, &err) ==
               TUNE_OK);
    FUZZ_CHECK(tunep_scheduler_time_attr(sched) != NULL);
    /* Reports run up to the scheduler's max_t option where it has one (through its table). */
    const struct tunep_scheduler_config *sc = &s->cfg.scheduler;
    const struct tunep_option *max_row =
        sc->type->options ? tunep_options_find(sc->type->options, "max_t") : NULL;
    double max_t = max_row && max_row->type == TUNEP_OPT_REAL_GT
                       ? *(const double *)(const void *)((const char *)sc->cfg + max_row->offset)
                       : 8.0;
    for (int64_t id = 0; id < 4; id++)
        FUZZ_CHECK(tunep_scheduler_on_trial_add(sched, id, edge_values[id % EDGE_COUNT]) ==
                   TUNE_OK);
    /* As the controller does: a trial reports until the scheduler ends it. */
    int running[4] = {1, 1, 1, 1};
    for (int step = 1; step <= 6; step++) {
        double t = step == 6 ? max_t : step;
        for (int64_t id = 0; id < 4; id++) {
            if (!running[id])
                continue;
            double score = id == 3 ? -(double)INFINITY : (double)((id * 7 + step) % 5);
            enum tunep_decision d = tunep_scheduler_on_result(sched, id, 1, t, score);
            FUZZ_CHECK(d == TUNEP_CONTINUE || d == TUNEP_STOP || d == TUNEP_TERMINATE ||
                       d == TUNEP_PAUSE || d == TUNEP_EXPLOIT);
            if (d == TUNEP_PAUSE)
                tunep_scheduler_on_trial_paused(sched, id);
            running[id] = d == TUNEP_CONTINUE || d == TUNEP_EXPLOIT;
        }
    }
    for (int64_t id = 0; id < 4; id++)
        tunep_scheduler_on_trial_complete(sched, id, id != 2, max_t, 1.0);
    struct tunep_buf buf;
    tunep_buf_init(&buf);
    tunep_scheduler_describe(sched, s->sign, &buf);
    tunep_buf_done(&buf);
    tunep_scheduler_free(sched);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_strndup(data, size);
    tune_study *study = NULL;
    tune_error err = {0};
    tune_status st = tune_study_new_from_json(text, "<fuzz>", &study, &err);
    if (st != TUNE_OK) {
        fuzz_check_error(st, &err);
        FUZZ_CHECK(study == NULL);
    } else {
        FUZZ_CHECK(study != NULL);
        FUZZ_CHECK(tune_study_name(study) != NULL);
        FUZZ_CHECK(tune_study_storage(study) != NULL);
        check_samples(study);
        check_scheduler(study);
        tune_study_free(study);
    }
    free(text);
    return 0;
}
