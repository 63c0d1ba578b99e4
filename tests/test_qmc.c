/*
 * test_qmc.c - the unit-cube map (search/unit.c) and the quasi-random
 * searchers (search/qmc.c).
 *
 * unit.c: value -> unit -> value is the identity for every distribution and
 * choice type; any unit point gives values that random search could give
 * (checked against the bound rules written out here, not against space.c);
 * an equally spaced grid of unit points reproduces random search's cell
 * probabilities. Sobol: unscrambled points are GSL's gsl_qrng_get() sequence
 * exactly; scrambled ones keep its stratification. LHS: every block of n
 * points has exactly one point per stratum [k/n, (k+1)/n) in every dimension.
 * Both: reproducible from the seed, grid axes and impossible sizes rejected
 * naming the parameter, and every allocation failure returns TUNE_ENOMEM.
 * tunep_unit_snap() gives the unit point of the value u stands for, and
 * snapping twice changes nothing; a rescrambled sequence is the one a fresh
 * init with that seed gives.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_qrng.h>
#include <gsl/gsl_rng.h>

#include "check_util.h"
#include "base/rng.h"
#include "search/qmc.h"
#include "search/searcher.h"
#include "search/space.h"

static tune_error err;

#define OK(call) ck_assert_msg((call) == TUNE_OK, "%s: %s", #call, err.text)

static gsl_rng *rng_new(uint64_t seed)
{
    gsl_rng *r = gsl_rng_alloc(tunep_rng_xoshiro256);
    ck_assert_ptr_nonnull(r);
    gsl_rng_set(r, (unsigned long)seed);
    return r;
}

static tune_space *uniform_space(int n)
{
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        OK(tune_space_add_uniform(sp, name, 0.0, 1.0, &err));
    }
    return sp;
}

/* One parameter of every kind, with awkward bounds. */
static tune_space *mixed_space(void)
{
    static const double dv[] = {0.5, -2.0, 1e-3};
    static const int64_t iv[] = {7, -3, 1000000007LL, 0};
    static const char *const sv[] = {"adam", "sgd", "rmsprop"};
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_uniform(sp, "u", -3.0, 7.5, &err));
    OK(tune_space_add_quniform(sp, "qu", 0.0, 1.0, 0.1, &err));
    OK(tune_space_add_loguniform(sp, "lu", 1e-5, 1e-1, 10.0, &err));
    OK(tune_space_add_qloguniform(sp, "qlu", 0.5, 64.0, 0.5, 2.0, &err));
    OK(tune_space_add_randn(sp, "n", 1.0, 2.0, &err));
    OK(tune_space_add_qrandn(sp, "qn", 0.0, 5.0, 0.25, &err));
    OK(tune_space_add_randint(sp, "ri", -5, 5, &err));
    OK(tune_space_add_qrandint(sp, "qri", 0, 100, 20, &err));
    OK(tune_space_add_lograndint(sp, "lri", 1, 1000, 10.0, &err));
    OK(tune_space_add_qlograndint(sp, "qlri", 2, 512, 2, 2.0, &err));
    OK(tune_space_add_choice_double(sp, "cd", dv, 3, &err));
    OK(tune_space_add_choice_int(sp, "ci", iv, 4, &err));
    OK(tune_space_add_choice_string(sp, "cs", sv, 3, &err));
    struct tunep_value bv[2] = {{TUNEP_V_BOOL, {.b = 1}}, {TUNEP_V_BOOL, {.b = 0}}};
    char cb_name[] = "cb";
    struct tunep_param bp = {
        .name = cb_name, .dist = TUNEP_DIST_CHOICE, .n_values = 2, .values = bv};
    OK(tunep_space_add(sp, &bp, &err));
    OK(tune_space_add_const_int(sp, "k", 42, &err));
    OK(tune_space_add_randint(sp, "big", INT64_MIN / 2, INT64_MAX / 2, &err));
    return sp;
}

static int is_multiple(double x, double q)
{
    return x == nearbyint(x / q) * q;
}

static int same(const struct tunep_value *a, const struct tunep_value *b)
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

/*
 * Whether v is a value tunep_space_sample() can produce for p: the bound
 * rules of space.c's header (Ray's), written out independently of space.c.
 */
static int possible(const struct tunep_param *p, const struct tunep_value *v)
{
    switch (p->dist) {
        case TUNEP_DIST_UNIFORM:
        case TUNEP_DIST_LOGUNIFORM:
            return v->type == TUNEP_V_DOUBLE && v->u.d >= p->lo && v->u.d < p->hi;
        case TUNEP_DIST_QUNIFORM:
        case TUNEP_DIST_QLOGUNIFORM:
            /* round(x / q) * q of an x in [low, high): high itself is reachable */
            return v->type == TUNEP_V_DOUBLE && v->u.d >= p->lo && v->u.d <= p->hi &&
                   is_multiple(v->u.d, p->q);
        case TUNEP_DIST_RANDN:
            return v->type == TUNEP_V_DOUBLE && fabs(v->u.d - p->lo) <= 64.0 * p->hi;
        case TUNEP_DIST_QRANDN:
            return v->type == TUNEP_V_DOUBLE && fabs(v->u.d - p->lo) <= 64.0 * p->hi &&
                   is_multiple(v->u.d, p->q);
        case TUNEP_DIST_RANDINT:
        case TUNEP_DIST_LOGRANDINT:
            return v->type == TUNEP_V_INT && v->u.i >= p->ilo && v->u.i < p->ihi;
        case TUNEP_DIST_QRANDINT:
        case TUNEP_DIST_QLOGRANDINT:
            return v->type == TUNEP_V_INT && v->u.i >= p->ilo && v->u.i <= p->ihi &&
                   (v->u.i - p->ilo) % p->iq == 0;
        case TUNEP_DIST_CHOICE:
        case TUNEP_DIST_CONST:
            /* the very value of the space: strings borrowed, not copied */
            for (size_t k = 0; k < p->n_values; k++)
                if (same(&p->values[k], v) &&
                    (v->type != TUNEP_V_STRING || v->u.s == p->values[k].u.s))
                    return 1;
            return 0;
        default: return 0;
    }
}

/* ---- unit.c --------------------------------------------------------------- */

START_TEST(test_unit_dims_and_check)
{
    tune_space *sp = mixed_space();
    ck_assert_uint_eq(tunep_unit_dims(sp), sp->n - 1); /* all but the constant */
    OK(tunep_unit_check(sp, "sobol", &err));
    static const int64_t g[] = {1, 2};
    OK(tune_space_add_grid_int(sp, "layers", g, 2, &err));
    ck_assert_int_eq(tunep_unit_check(sp, "sobol", &err), TUNE_ECONFIG);
    ck_assert_msg(strstr(err.text, "'sobol'") && strstr(err.text, "'layers'"), "%s", err.text);
    tune_space_free(sp);
}
END_TEST

START_TEST(test_unit_values_always_possible)
{
    tune_space *sp = mixed_space();
    size_t dims = tunep_unit_dims(sp);
    double u[32];
    struct tunep_value v[32];
    gsl_rng *r = rng_new(11);
    for (int draw = 0; draw < 20000; draw++) {
        for (size_t j = 0; j < dims; j++) {
            /* the edges of the cube too: 0 and the largest double below 1 */
            double x = gsl_rng_uniform(r);
            u[j] = draw % 10 == 0 ? 0.0 : draw % 10 == 1 ? nextafter(1.0, 0.0) : x;
        }
        tunep_unit_to_values(sp, u, v);
        for (size_t i = 0; i < sp->n; i++)
            ck_assert_msg(possible(&sp->params[i], &v[i]), "draw %d: '%s' got an impossible value",
                          draw, sp->params[i].name);
    }
    gsl_rng_free(r);
    tune_space_free(sp);
}
END_TEST

START_TEST(test_unit_round_trip)
{
    tune_space *sp = mixed_space();
    size_t dims = tunep_unit_dims(sp);
    double u[32], u2[32];
    struct tunep_value v[32], back[32];
    gsl_rng *r = rng_new(5);
    for (int draw = 0; draw < 20000; draw++) {
        /* values as random search draws them (randn with gsl_ran_gaussian) */
        tunep_space_sample(sp, r, 0, 0, v);
        tunep_values_to_unit(sp, v, u);
        for (size_t j = 0; j < dims; j++)
            ck_assert_msg(u[j] >= 0.0 && u[j] < 1.0, "unit %zu out of [0, 1): %g", j, u[j]);
        tunep_unit_to_values(sp, u, back);
        for (size_t i = 0; i < sp->n; i++) {
            const struct tunep_param *p = &sp->params[i];
            if (p->dist == TUNEP_DIST_RANDN) {
                /* Not every double is mean + sd * Phi^-1(u) for a double u (one ulp of u moves
                 * the value by ~sd * 2.5 * 2^-53 at the centre, more in the tails), and GSL's
                 * Phi^-1 is not monotone in its last bits: within 5 sd a value comes back
                 * within 1e-9 sd. */
                double z = (v[i].u.d - p->lo) / p->hi;
                if (fabs(z) <= 5.0)
                    ck_assert_msg(fabs(back[i].u.d - v[i].u.d) <= 1e-9 * p->hi,
                                  "draw %d: randn %.17g came back as %.17g", draw, v[i].u.d,
                                  back[i].u.d);
                continue;
            }
            if (p->dist == TUNEP_DIST_RANDINT &&
                (uint64_t)p->ihi - (uint64_t)p->ilo > (UINT64_C(1) << 53)) {
                /* Random search reaches every integer of a range wider than 2^53; a unit
                 * coordinate (a double) only every span * 2^-53-th: within 2 of those steps. */
                double step = ((double)p->ihi - (double)p->ilo) * 0x1.0p-53;
                ck_assert_msg(fabs((double)back[i].u.i - (double)v[i].u.i) <= 2 * step,
                              "draw %d: '%s' %lld came back as %lld", draw, p->name,
                              (long long)v[i].u.i, (long long)back[i].u.i);
                continue;
            }
            ck_assert_msg(same(&v[i], &back[i]), "draw %d: '%s' does not come back", draw, p->name);
        }
        /* values of the map itself are fixed points (normals: within 1e-9 sd, as above) */
        struct tunep_value again[32];
        tunep_values_to_unit(sp, back, u2);
        tunep_unit_to_values(sp, u2, again);
        for (size_t i = 0; i < sp->n; i++) {
            const struct tunep_param *p = &sp->params[i];
            if (p->dist == TUNEP_DIST_RANDN)
                ck_assert(fabs(again[i].u.d - back[i].u.d) <= 1e-9 * p->hi);
            else
                ck_assert_msg(same(&back[i], &again[i]), "draw %d: '%s' is not a fixed point", draw,
                              p->name);
        }
        /* integers and choices come back to the same unit point: the centre of their cell */
        for (size_t i = 0, j = 0; i < sp->n; i++) {
            enum tunep_dist dd = sp->params[i].dist;
            if (dd == TUNEP_DIST_CONST)
                continue;
            if (dd >= TUNEP_DIST_RANDINT && dd <= TUNEP_DIST_CHOICE)
                ck_assert_double_eq(u[j], u2[j]);
            j++;
        }
    }
    gsl_rng_free(r);
    tune_space_free(sp);
}
END_TEST

/* Integers and choices sit at the centre of their cell. */
START_TEST(test_unit_cell_centres)
{
    tune_space *sp;
    static const char *const sv[] = {"a", "b", "c", "d"};
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_randint(sp, "i", 0, 4, &err));
    OK(tune_space_add_choice_string(sp, "c", sv, 4, &err));
    OK(tune_space_add_qrandint(sp, "q", 0, 3, 1, &err));
    struct tunep_value v[3] = {
        {TUNEP_V_INT, {.i = 2}}, {TUNEP_V_STRING, {.s = "d"}}, {TUNEP_V_INT, {.i = 3}}};
    double u[3];
    tunep_values_to_unit(sp, v, u);
    ck_assert_double_eq_tol(u[0], 2.5 / 4.0, 1e-15);
    ck_assert_double_eq_tol(u[1], 3.5 / 4.0, 1e-15); /* matched by content, not pointer */
    ck_assert_double_eq_tol(u[2], 3.5 / 4.0, 1e-15); /* qrandint: high is inclusive */
    tune_space_free(sp);
}
END_TEST

/* snap(u): the same value as u, at its unit point; idempotent. */
START_TEST(test_unit_snap)
{
    tune_space *sp = mixed_space();
    gsl_rng *r = rng_new(5);
    for (int k = 0; k < 2000; k++) {
        double u = k == 0 ? 0.0 : k == 1 ? 1.0 - 0x1.0p-53 : gsl_rng_uniform(r);
        for (size_t i = 0; i < sp->n; i++) {
            const struct tunep_param *p = &sp->params[i];
            if (p->dist == TUNEP_DIST_CONST)
                continue;
            struct tunep_value a, b;
            tunep_space_value_at(p, u, &a);
            double s = tunep_unit_snap(p, u);
            tunep_space_value_at(p, s, &b);
            /* normals come back within ~1e-15 sd (unit.c): GSL's Phi^-1 is not monotone */
            int normal = p->dist == TUNEP_DIST_RANDN || p->dist == TUNEP_DIST_QRANDN;
            ck_assert_msg(tunep_value_equal(&a, &b) ||
                              (normal && fabs(a.u.d - b.u.d) < 1e-12 * p->hi),
                          "'%s' at u %.17g: snapped to %.17g, another value", p->name, u, s);
            ck_assert(s >= 0.0 && s < 1.0);
            ck_assert_msg(tunep_unit_snap(p, s) == s || normal,
                          "'%s': snap is not idempotent at %.17g", p->name, s);
        }
    }
    gsl_rng_free(r);
    tune_space_free(sp);
}
END_TEST

/*
 * A uniform grid of unit points reproduces random search's distribution:
 * randint/choice equal cells, qrandint's half-weight ends (round half to
 * even), lograndint's log-spaced cells.
 */
START_TEST(test_unit_matches_sampling_distribution)
{
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_qrandint(sp, "q", 0, 4, 2, &err));     /* 0 1 2 3 4 -> 0 0 2 4 4 (2 halves) */
    OK(tune_space_add_lograndint(sp, "l", 1, 4, 2.0, &err)); /* 1: log2 [1,2) = half of [0,2) */
    int n = 100000, cq[5] = {0}, cl[4] = {0};
    for (int k = 0; k < n; k++) {
        double u[2] = {(k + 0.5) / n, (k + 0.5) / n};
        struct tunep_value v[2];
        tunep_unit_to_values(sp, u, v);
        cq[v[0].u.i]++;
        cl[v[1].u.i]++;
    }
    /* qrandint over offsets 0..4 (5 cells): 0 and 1(->0), 2, 3(->4) and 4 */
    ck_assert_int_eq(cq[0], 2 * n / 5);
    ck_assert_int_eq(cq[2], n / 5);
    ck_assert_int_eq(cq[4], 2 * n / 5);
    /* lograndint(1, 4): 1 on [0, 1/2), 2 on [1/2, log2(3)/2), 3 on the rest */
    ck_assert_int_eq(cl[1], n / 2);
    ck_assert_int_le(abs(cl[2] - (int)lround(n * (log2(3.0) / 2 - 0.5))), 1);
    tune_space_free(sp);
}
END_TEST

/* ---- Sobol ---------------------------------------------------------------- */

START_TEST(test_sobol_is_gsl_sequence)
{
    tune_space *sp = uniform_space(7);
    struct tunep_qmc_config c;
    tunep_qmc_config_default(&c);
    c.scramble = 0;
    struct tunep_searcher *s;
    OK(tunep_sobol_new(sp, &c, 1, &s, &err));
    ck_assert_str_eq(s->ops->name, "sobol");
    gsl_qrng *q = gsl_qrng_alloc(gsl_qrng_sobol, 7);
    double ref[1000][7];
    for (int i = 0; i < 1000; i++)
        gsl_qrng_get(q, ref[i]);
    gsl_qrng_free(q);
    struct tunep_value v[7];
    for (int i = 0; i < 1000; i++) {
        OK(s->ops->suggest(s, i, NULL, v, &err));
        for (int d = 0; d < 7; d++) {
            ck_assert_int_eq(v[d].type, TUNEP_V_DOUBLE);
            ck_assert_msg(v[d].u.d == ref[i][d], "point %d dim %d: %.17g != %.17g", i, d, v[d].u.d,
                          ref[i][d]);
        }
    }
    /* going back restarts the sequence: point 10 again */
    OK(s->ops->suggest(s, 10, NULL, v, &err));
    ck_assert(v[3].u.d == ref[10][3]);
    /* skipping ahead: point 999 straight after 10 */
    OK(s->ops->suggest(s, 999, NULL, v, &err));
    ck_assert(v[6].u.d == ref[999][6]);
    ck_assert_int_eq(s->ops->on_start(s, 0, v), TUNE_OK);
    ck_assert_int_eq(s->ops->on_complete(s, 0, 1, 1.0, 0.5), TUNE_OK);
    tunep_searcher_free(s);
    tune_space_free(sp);
}
END_TEST

/*
 * GSL's sequence leaves out Sobol's first point, the origin: its first
 * 2^k - 1 points fill 2^k - 1 different strata of width 2^-k in every
 * dimension. A digital shift permutes strata, so scrambled points keep this.
 */
START_TEST(test_sobol_scrambled_stratified)
{
    int dims = 40;
    tune_space *sp = uniform_space(dims);
    struct tunep_searcher *s, *s2, *s3;
    OK(tunep_sobol_new(sp, NULL, 7, &s, &err));
    OK(tunep_sobol_new(sp, NULL, 7, &s2, &err));
    OK(tunep_sobol_new(sp, NULL, 8, &s3, &err));
    int k = 8, n = (1 << k) - 1;
    static unsigned char seen[40][256];
    memset(seen, 0, sizeof seen);
    struct tunep_value v[40], v2[40], v3[40];
    int differs_from_other_seed = 0;
    gsl_qrng *q = gsl_qrng_alloc(gsl_qrng_sobol, (unsigned)dims);
    double raw[40];
    int differs_from_raw = 0;
    for (int i = 0; i < n; i++) {
        OK(s->ops->suggest(s, i, NULL, v, &err));
        OK(s2->ops->suggest(s2, i, NULL, v2, &err));
        OK(s3->ops->suggest(s3, i, NULL, v3, &err));
        gsl_qrng_get(q, raw);
        for (int d = 0; d < dims; d++) {
            ck_assert(v[d].u.d >= 0.0 && v[d].u.d < 1.0);
            ck_assert(v[d].u.d == v2[d].u.d); /* same seed, same point */
            differs_from_other_seed += v[d].u.d != v3[d].u.d;
            differs_from_raw += v[d].u.d != raw[d];
            int stratum = (int)floor(v[d].u.d * (1 << k));
            ck_assert_msg(!seen[d][stratum], "dim %d: stratum %d twice", d, stratum);
            seen[d][stratum] = 1;
        }
    }
    gsl_qrng_free(q);
    ck_assert_int_eq(differs_from_other_seed, n * dims);
    ck_assert_int_eq(differs_from_raw, n * dims);
    tunep_searcher_free(s);
    tunep_searcher_free(s2);
    tunep_searcher_free(s3);
    tune_space_free(sp);
}
END_TEST

/* Rescrambled with a seed (from any point): the sequence a fresh init with that seed gives. */
START_TEST(test_sobol_rescramble)
{
    struct tunep_sobol_seq a, b;
    OK(tunep_sobol_seq_init(&a, 5, 0, 1, &err));
    OK(tunep_sobol_seq_init(&b, 5, 1, 99, &err));
    double ua[5], ub[5];
    for (int i = 0; i < 7; i++)
        OK(tunep_sobol_seq_point(&a, i, ua, &err));
    tunep_sobol_seq_rescramble(&a, 99);
    for (int i = 0; i < 64; i++) {
        OK(tunep_sobol_seq_point(&a, i, ua, &err));
        OK(tunep_sobol_seq_point(&b, i, ub, &err));
        ck_assert(memcmp(ua, ub, sizeof ua) == 0);
    }
    tunep_sobol_seq_rescramble(&a, 100); /* another seed, other points */
    OK(tunep_sobol_seq_point(&a, 0, ua, &err));
    OK(tunep_sobol_seq_point(&b, 0, ub, &err));
    ck_assert(memcmp(ua, ub, sizeof ua) != 0);
    tunep_sobol_seq_done(&a);
    tunep_sobol_seq_done(&b);
}
END_TEST

START_TEST(test_sobol_rejects)
{
    tune_space *sp = uniform_space(41);
    struct tunep_searcher *s = NULL;
    ck_assert_int_eq(tunep_sobol_new(sp, NULL, 1, &s, &err), TUNE_ECONFIG);
    ck_assert_msg(strstr(err.text, "41") && strstr(err.text, "40"), "%s", err.text);
    tune_space_free(sp);

    sp = uniform_space(2);
    static const char *const gv[] = {"a", "b"};
    OK(tune_space_add_grid_string(sp, "act", gv, 2, &err));
    ck_assert_int_eq(tunep_sobol_new(sp, NULL, 1, &s, &err), TUNE_ECONFIG);
    ck_assert_msg(strstr(err.text, "'act'") && strstr(err.text, "'sobol'"), "%s", err.text);
    ck_assert_int_eq(tunep_lhs_new(sp, NULL, 1, 10, &s, &err), TUNE_ECONFIG);
    ck_assert_msg(strstr(err.text, "'act'") && strstr(err.text, "'lhs'"), "%s", err.text);
    tune_space_free(sp);

    /* the end of GSL's tables is an error, not a wrap-around */
    sp = uniform_space(1);
    OK(tunep_sobol_new(sp, NULL, 1, &s, &err));
    struct tunep_value v[1];
    ck_assert_int_eq(s->ops->suggest(s, TUNEP_SOBOL_MAX_POINTS, NULL, v, &err), TUNE_EINVAL);
    tunep_searcher_free(s);
    tune_space_free(sp);
}
END_TEST

/* Only constants: nothing to draw, the constants come back. */
START_TEST(test_sobol_constants_only)
{
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_const_string(sp, "opt", "adam", &err));
    struct tunep_searcher *s;
    OK(tunep_sobol_new(sp, NULL, 1, &s, &err));
    struct tunep_value v[1];
    OK(s->ops->suggest(s, 3, NULL, v, &err));
    ck_assert_str_eq(v[0].u.s, "adam");
    tunep_searcher_free(s);
    OK(tunep_lhs_new(sp, NULL, 1, 5, &s, &err));
    gsl_rng *r = rng_new(1);
    OK(s->ops->suggest(s, 3, r, v, &err));
    ck_assert_str_eq(v[0].u.s, "adam");
    gsl_rng_free(r);
    tunep_searcher_free(s);
    tune_space_free(sp);
}
END_TEST

/* ---- LHS ------------------------------------------------------------------ */

/* Draws ids [first, first + n) of an LHS with n strata and checks every dimension's strata. */
static void check_lhs_block(struct tunep_searcher *s, int dims, int64_t n, int64_t first,
                            uint64_t seed, double *ret_first_value)
{
    unsigned char *seen = calloc((size_t)(n * dims), 1);
    ck_assert_ptr_nonnull(seen);
    struct tunep_value v[8];
    for (int64_t i = first; i < first + n; i++) {
        gsl_rng *r = rng_new(tunep_trial_seed(seed, i, TUNEP_RNG_SAMPLE));
        OK(s->ops->suggest(s, i, r, v, &err));
        gsl_rng_free(r);
        if (i == first && ret_first_value)
            *ret_first_value = v[0].u.d;
        for (int d = 0; d < dims; d++) {
            double x = v[d].u.d;
            int64_t k = (int64_t)floor(x * (double)n);
            ck_assert_msg(k >= 0 && k < n, "point %lld dim %d: %.17g", (long long)i, d, x);
            /* exactly the stratum [k/n, (k+1)/n) as doubles compute it */
            if (!(x >= (double)k / (double)n))
                k--;
            else if (!(x < (double)(k + 1) / (double)n))
                k++;
            ck_assert(x >= (double)k / (double)n && x < (double)(k + 1) / (double)n);
            ck_assert_msg(!seen[d * n + k], "n %lld dim %d: stratum %lld twice", (long long)n, d,
                          (long long)k);
            seen[d * n + k] = 1;
        }
    }
    free(seen);
}

START_TEST(test_lhs_strata)
{
    int dims = 5;
    tune_space *sp = uniform_space(dims);
    static const int64_t sizes[] = {1, 2, 7, 50, 64, 1000, 4099};
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        int64_t n = sizes[t];
        struct tunep_searcher *s;
        OK(tunep_lhs_new(sp, NULL, 3, n, &s, &err));
        ck_assert_str_eq(s->ops->name, "lhs");
        double first_a = 0, first_b = 0;
        check_lhs_block(s, dims, n, 0, 3, &first_a);
        check_lhs_block(s, dims, n, n, 3, &first_b); /* the next block is a hypercube too */
        if (n > 1)
            ck_assert(first_a != first_b);
        tunep_searcher_free(s);
    }
    /* lhs_samples overrides the number of trials */
    struct tunep_qmc_config c;
    tunep_qmc_config_default(&c);
    c.lhs_samples = 9;
    struct tunep_searcher *s;
    OK(tunep_lhs_new(sp, &c, 3, 1000, &s, &err));
    check_lhs_block(s, dims, 9, 0, 3, NULL);
    tunep_searcher_free(s);
    tune_space_free(sp);
}
END_TEST

/* With n strata over randint(0, n), every integer comes exactly once per block. */
START_TEST(test_lhs_integers_once_each)
{
    tune_space *sp;
    OK(tune_space_new(&sp, &err));
    OK(tune_space_add_randint(sp, "a", 0, 12, &err));
    OK(tune_space_add_randint(sp, "b", 100, 112, &err));
    struct tunep_searcher *s;
    OK(tunep_lhs_new(sp, NULL, 99, 12, &s, &err));
    int ca[12] = {0}, cb[12] = {0};
    struct tunep_value v[2];
    gsl_rng *r = rng_new(1);
    for (int i = 0; i < 12; i++) {
        OK(s->ops->suggest(s, i, r, v, &err));
        ca[v[0].u.i]++;
        cb[v[1].u.i - 100]++;
    }
    for (int k = 0; k < 12; k++) {
        ck_assert_int_eq(ca[k], 1);
        ck_assert_int_eq(cb[k], 1);
    }
    gsl_rng_free(r);
    tunep_searcher_free(s);
    tune_space_free(sp);
}
END_TEST

START_TEST(test_lhs_reproducible_and_seeded)
{
    tune_space *sp = mixed_space();
    struct tunep_searcher *a, *b, *c;
    OK(tunep_lhs_new(sp, NULL, 5, 20, &a, &err));
    OK(tunep_lhs_new(sp, NULL, 5, 20, &b, &err));
    OK(tunep_lhs_new(sp, NULL, 6, 20, &c, &err));
    struct tunep_value va[32], vb[32], vc[32];
    int differ = 0;
    /* b sees the ids in another order: history does not matter */
    for (int i = 0; i < 20; i++) {
        gsl_rng *r = rng_new(tunep_trial_seed(5, i, TUNEP_RNG_SAMPLE));
        OK(a->ops->suggest(a, i, r, va, &err));
        gsl_rng_set(r, (unsigned long)tunep_trial_seed(5, i, TUNEP_RNG_SAMPLE));
        OK(c->ops->suggest(c, i, r, vc, &err));
        gsl_rng_set(r, (unsigned long)tunep_trial_seed(5, 19 - i, TUNEP_RNG_SAMPLE));
        OK(b->ops->suggest(b, 19 - i, r, vb, &err));
        gsl_rng_set(r, (unsigned long)tunep_trial_seed(5, i, TUNEP_RNG_SAMPLE));
        OK(b->ops->suggest(b, i, r, vb, &err));
        gsl_rng_free(r);
        for (size_t k = 0; k < sp->n; k++) {
            ck_assert(same(&va[k], &vb[k]));
            ck_assert(possible(&sp->params[k], &va[k]));
        }
        differ += !same(&va[0], &vc[0]);
    }
    /* same jitter stream, other permutations: a point keeps its stratum with chance 1/20 */
    ck_assert_int_ge(differ, 15);
    tunep_searcher_free(a);
    tunep_searcher_free(b);
    tunep_searcher_free(c);
    tune_space_free(sp);
}
END_TEST

START_TEST(test_lhs_rejects)
{
    tune_space *sp = uniform_space(2);
    struct tunep_searcher *s = NULL;
    ck_assert_int_eq(tunep_lhs_new(sp, NULL, 1, 0, &s, &err), TUNE_ECONFIG);
    ck_assert_msg(strstr(err.text, "num_samples"), "%s", err.text);
    struct tunep_qmc_config c;
    tunep_qmc_config_default(&c);
    c.lhs_samples = -1;
    ck_assert_int_eq(tunep_lhs_new(sp, &c, 1, 10, &s, &err), TUNE_ECONFIG);
    ck_assert_ptr_null(s);
    tune_space_free(sp);
}
END_TEST

/* ---- allocation failures -------------------------------------------------- */

START_TEST(test_alloc_failures)
{
    tune_space *sp = mixed_space();
    for (int kind = 0; kind < 2; kind++) {
        int clean = 0;
        for (long k = 0; k < 100 && !clean; k++) {
            struct tunep_searcher *s = NULL;
            tune_test_alloc_fail_after(k);
            tune_status st = kind == 0 ? tunep_sobol_new(sp, NULL, 1, &s, &err)
                                       : tunep_lhs_new(sp, NULL, 1, 10, &s, &err);
            struct tunep_value v[32];
            gsl_rng *r = NULL;
            if (st == TUNE_OK) {
                tune_test_alloc_reset();
                r = rng_new(1);
                tune_test_alloc_fail_after(k);
                for (int i = 0; i < 3 && st == TUNE_OK; i++)
                    st = s->ops->suggest(s, i, r, v, &err);
            }
            int hit = tune_test_alloc_failed();
            tune_test_alloc_reset();
            if (hit)
                ck_assert_int_eq(st, TUNE_ENOMEM);
            else
                ck_assert_int_eq(st, TUNE_OK);
            clean = !hit;
            if (r)
                gsl_rng_free(r);
            tunep_searcher_free(s);
        }
        ck_assert_msg(clean, "allocations never stopped failing");
    }
    tune_space_free(sp);
}
END_TEST

static Suite *qmc_suite(void)
{
    Suite *s = suite_create("qmc");
    TCase *tc = tcase_create("unit");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_unit_dims_and_check);
    tcase_add_test(tc, test_unit_values_always_possible);
    tcase_add_test(tc, test_unit_round_trip);
    tcase_add_test(tc, test_unit_cell_centres);
    tcase_add_test(tc, test_unit_snap);
    tcase_add_test(tc, test_unit_matches_sampling_distribution);
    suite_add_tcase(s, tc);
    tc = tcase_create("sobol");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_sobol_is_gsl_sequence);
    tcase_add_test(tc, test_sobol_scrambled_stratified);
    tcase_add_test(tc, test_sobol_rescramble);
    tcase_add_test(tc, test_sobol_rejects);
    tcase_add_test(tc, test_sobol_constants_only);
    suite_add_tcase(s, tc);
    tc = tcase_create("lhs");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_lhs_strata);
    tcase_add_test(tc, test_lhs_integers_once_each);
    tcase_add_test(tc, test_lhs_reproducible_and_seeded);
    tcase_add_test(tc, test_lhs_rejects);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(qmc_suite)
