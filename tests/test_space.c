/*
 * test_space.c - search-space bound rules (Ray Tune's, see search/space.c) and
 * param_space parsing: every primitive's valid edge cases and each violated
 * rule with its exact message, name rules, and config errors at the exact
 * line and column (jansson's check_error style).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "check_util.h"
#include "config/config_space.h"
#include "search/space.h"

/* ---- helpers -------------------------------------------------------------- */

/* NAN and INFINITY are floats; clang's -Wdouble-promotion wants doubles. */
#define D_NAN ((double)NAN)
#define D_INF ((double)INFINITY)

static tune_space *sp;
static tune_error err;

static void setup(void)
{
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(tune_space_new(&sp, &err), TUNE_OK);
}

static void teardown(void)
{
    tune_space_free(sp);
    sp = NULL;
}

/* Asserts a call failed with code and text, and left the space's size alone. */
#define EXPECT_FAIL(call, want_code, want_text)                                                    \
    do {                                                                                           \
        size_t n_before_ = tune_space_size(sp);                                                    \
        memset(&err, 0, sizeof err);                                                               \
        ck_assert_int_eq((call), (want_code));                                                     \
        ck_assert_int_eq(err.code, (want_code));                                                   \
        ck_assert_str_eq(err.text, (want_text));                                                   \
        ck_assert_uint_eq(tune_space_size(sp), n_before_);                                         \
    } while (0)

#define EXPECT_OK(call)                                                                            \
    do {                                                                                           \
        size_t n_before_ = tune_space_size(sp);                                                    \
        tune_status st_ = (call);                                                                  \
        ck_assert_msg(st_ == TUNE_OK, "%s failed: %s", #call, err.text);                           \
        ck_assert_uint_eq(tune_space_size(sp), n_before_ + 1);                                     \
    } while (0)

static const struct tunep_param *last(void)
{
    ck_assert_uint_gt(sp->n, 0);
    return &sp->params[sp->n - 1];
}

/*
 * Parses text's "param_space" as config.c does: jansson with duplicate keys
 * rejected, a cfgctx naming "config.json", and a path at "param_space".
 */
static tune_status parse(const char *text)
{
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    ck_assert_msg(root != NULL, "test JSON does not parse: %s (line %d)", jerr.text, jerr.line);
    struct tunep_cfgctx ctx = {
        .text = text, .len = strlen(text), .source = "config.json", .err = &err};
    struct tunep_cfgpath path;
    memset(&path, 0, sizeof path);
    tunep_cfgpath_push_key(&path, "param_space");
    memset(&err, 0, sizeof err);
    const json_t *ps = json_object_get(root, "param_space"); /* borrowed */
    tune_status st = tunep_config_parse_space(&ctx, &path, ps, sp);
    ck_assert_int_eq(path.depth, 1);
    json_decref(root);
    return st;
}

/* Asserts that parsing text fails with the message at line:column and adds nothing. */
static void parse_fails(const char *text, int line, int column, const char *msg)
{
    size_t n = sp->n;
    ck_assert_int_eq(parse(text), TUNE_ECONFIG);
    ck_assert_int_eq(err.code, TUNE_ECONFIG);
    ck_assert_str_eq(err.text, msg);
    ck_assert_str_eq(err.source, "config.json");
    ck_assert_int_eq(err.line, line);
    ck_assert_int_eq(err.column, column);
    ck_assert_uint_eq(sp->n, n);
}

/* ---- float ranges --------------------------------------------------------- */

START_TEST(test_uniform_rules)
{
    EXPECT_OK(tune_space_add_uniform(sp, "a", 0, 1, &err));
    EXPECT_OK(tune_space_add_uniform(sp, "b", -1e300, 1e300, &err));
    EXPECT_OK(tune_space_add_uniform(sp, "c", -1, nextafter(-1, 0), &err));
    ck_assert_int_eq(last()->dist, TUNEP_DIST_UNIFORM);
    EXPECT_FAIL(tune_space_add_uniform(sp, "x", D_NAN, 1, &err), TUNE_ECONFIG,
                "'x': uniform needs a finite low");
    EXPECT_FAIL(tune_space_add_uniform(sp, "x", -D_INF, 1, &err), TUNE_ECONFIG,
                "'x': uniform needs a finite low");
    EXPECT_FAIL(tune_space_add_uniform(sp, "x", 0, D_INF, &err), TUNE_ECONFIG,
                "'x': uniform needs a finite high");
    EXPECT_FAIL(tune_space_add_uniform(sp, "x", 0, D_NAN, &err), TUNE_ECONFIG,
                "'x': uniform needs a finite high");
    EXPECT_FAIL(tune_space_add_uniform(sp, "x", 1, 1, &err), TUNE_ECONFIG,
                "'x': uniform needs low < high");
    EXPECT_FAIL(tune_space_add_uniform(sp, "x", 2, 1, &err), TUNE_ECONFIG,
                "'x': uniform needs low < high");
}
END_TEST

START_TEST(test_quniform_rules)
{
    EXPECT_OK(tune_space_add_quniform(sp, "a", 0, 1, 0.1, &err));
    /* 0.3 / 0.1 = 2.9999999999999996: accepted with Ray's isclose tolerance */
    EXPECT_OK(tune_space_add_quniform(sp, "b", 0.3, 0.9, 0.1, &err));
    EXPECT_OK(tune_space_add_quniform(sp, "c", -1, 1, 0.5, &err));
    EXPECT_OK(tune_space_add_quniform(sp, "d", 0, 1, 1, &err));
    ck_assert(last()->q == 1.0);
    EXPECT_FAIL(tune_space_add_quniform(sp, "x", 0, 1, 0, &err), TUNE_ECONFIG,
                "'x': quniform needs q > 0");
    EXPECT_FAIL(tune_space_add_quniform(sp, "x", 0, 1, -0.1, &err), TUNE_ECONFIG,
                "'x': quniform needs q > 0");
    EXPECT_FAIL(tune_space_add_quniform(sp, "x", 0, 1, D_NAN, &err), TUNE_ECONFIG,
                "'x': quniform needs q > 0");
    EXPECT_FAIL(tune_space_add_quniform(sp, "x", 0, 1, D_INF, &err), TUNE_ECONFIG,
                "'x': quniform needs a finite q");
    EXPECT_FAIL(tune_space_add_quniform(sp, "x", 0.15, 1, 0.1, &err), TUNE_ECONFIG,
                "'x': quniform: low 0.15 is not a multiple of q 0.1");
    EXPECT_FAIL(tune_space_add_quniform(sp, "x", 0, 1.05, 0.1, &err), TUNE_ECONFIG,
                "'x': quniform: high 1.05 is not a multiple of q 0.1");
    EXPECT_FAIL(tune_space_add_quniform(sp, "x", 1, 1, 0.1, &err), TUNE_ECONFIG,
                "'x': quniform needs low < high");
    EXPECT_FAIL(tune_space_add_quniform(sp, "x", -D_INF, 1, 0.1, &err), TUNE_ECONFIG,
                "'x': quniform needs a finite low");
}
END_TEST

START_TEST(test_loguniform_rules)
{
    EXPECT_OK(tune_space_add_loguniform(sp, "a", 1e-6, 1e-4, 10, &err));
    EXPECT_OK(tune_space_add_loguniform(sp, "b", 1e-300, 1e300, 10, &err));
    EXPECT_OK(tune_space_add_loguniform(sp, "c", 1, 2, 2, &err));
    EXPECT_OK(tune_space_add_loguniform(sp, "d", 1, 2, 0.5, &err));
    EXPECT_OK(tune_space_add_loguniform(sp, "e", 1, 2, M_E, &err));
    EXPECT_FAIL(tune_space_add_loguniform(sp, "x", 0, 1, 10, &err), TUNE_ECONFIG,
                "'x': loguniform needs 0 < low < high");
    EXPECT_FAIL(tune_space_add_loguniform(sp, "x", -1, 1, 10, &err), TUNE_ECONFIG,
                "'x': loguniform needs 0 < low < high");
    EXPECT_FAIL(tune_space_add_loguniform(sp, "x", D_NAN, 1, 10, &err), TUNE_ECONFIG,
                "'x': loguniform needs 0 < low < high");
    EXPECT_FAIL(tune_space_add_loguniform(sp, "x", 1e-2, 1e-3, 10, &err), TUNE_ECONFIG,
                "'x': loguniform needs 0 < low < high");
    EXPECT_FAIL(tune_space_add_loguniform(sp, "x", 1e-3, 1e-3, 10, &err), TUNE_ECONFIG,
                "'x': loguniform needs 0 < low < high");
    EXPECT_FAIL(tune_space_add_loguniform(sp, "x", 1, D_INF, 10, &err), TUNE_ECONFIG,
                "'x': loguniform needs a finite high");
    EXPECT_FAIL(tune_space_add_loguniform(sp, "x", 1, 10, 1, &err), TUNE_ECONFIG,
                "'x': loguniform needs a base > 0 other than 1");
    EXPECT_FAIL(tune_space_add_loguniform(sp, "x", 1, 10, 0, &err), TUNE_ECONFIG,
                "'x': loguniform needs a base > 0 other than 1");
    EXPECT_FAIL(tune_space_add_loguniform(sp, "x", 1, 10, -10, &err), TUNE_ECONFIG,
                "'x': loguniform needs a base > 0 other than 1");
    EXPECT_FAIL(tune_space_add_loguniform(sp, "x", 1, 10, D_NAN, &err), TUNE_ECONFIG,
                "'x': loguniform needs a base > 0 other than 1");
    EXPECT_FAIL(tune_space_add_loguniform(sp, "x", 1, 10, D_INF, &err), TUNE_ECONFIG,
                "'x': loguniform needs a base > 0 other than 1");
}
END_TEST

START_TEST(test_qloguniform_rules)
{
    /* tune.h's example; 1e-1 / 5e-5 = 2000.0000000000002 is close enough */
    EXPECT_OK(tune_space_add_qloguniform(sp, "a", 1e-4, 1e-1, 5e-5, 10, &err));
    EXPECT_OK(tune_space_add_qloguniform(sp, "b", 1, 1024, 1, 2, &err));
    EXPECT_FAIL(tune_space_add_qloguniform(sp, "x", 0, 1, 0.1, 10, &err), TUNE_ECONFIG,
                "'x': qloguniform needs 0 < low < high");
    EXPECT_FAIL(tune_space_add_qloguniform(sp, "x", 1e-4, 1e-1, 0, 10, &err), TUNE_ECONFIG,
                "'x': qloguniform needs q > 0");
    EXPECT_FAIL(tune_space_add_qloguniform(sp, "x", 1e-4, 1e-1, 3e-5, 10, &err), TUNE_ECONFIG,
                "'x': qloguniform: low 0.0001 is not a multiple of q 3e-05");
    EXPECT_FAIL(tune_space_add_qloguniform(sp, "x", 1e-4, 0.15, 1e-4 * 4, 10, &err), TUNE_ECONFIG,
                "'x': qloguniform: low 0.0001 is not a multiple of q 0.0004");
    EXPECT_FAIL(tune_space_add_qloguniform(sp, "x", 2, 5, 2, 10, &err), TUNE_ECONFIG,
                "'x': qloguniform: high 5 is not a multiple of q 2");
    EXPECT_FAIL(tune_space_add_qloguniform(sp, "x", 2, 4, 2, 1, &err), TUNE_ECONFIG,
                "'x': qloguniform needs a base > 0 other than 1");
}
END_TEST

START_TEST(test_randn_rules)
{
    EXPECT_OK(tune_space_add_randn(sp, "a", 0, 1, &err));
    EXPECT_OK(tune_space_add_randn(sp, "b", -5, 1e-9, &err));
    EXPECT_OK(tune_space_add_qrandn(sp, "c", 0, 1, 0.1, &err));
    EXPECT_FAIL(tune_space_add_randn(sp, "x", 0, 0, &err), TUNE_ECONFIG, "'x': randn needs sd > 0");
    EXPECT_FAIL(tune_space_add_randn(sp, "x", 0, -1, &err), TUNE_ECONFIG,
                "'x': randn needs sd > 0");
    EXPECT_FAIL(tune_space_add_randn(sp, "x", 0, D_NAN, &err), TUNE_ECONFIG,
                "'x': randn needs sd > 0");
    EXPECT_FAIL(tune_space_add_randn(sp, "x", 0, D_INF, &err), TUNE_ECONFIG,
                "'x': randn needs a finite sd");
    EXPECT_FAIL(tune_space_add_randn(sp, "x", D_NAN, 1, &err), TUNE_ECONFIG,
                "'x': randn needs a finite mean");
    EXPECT_FAIL(tune_space_add_qrandn(sp, "x", 0, 1, 0, &err), TUNE_ECONFIG,
                "'x': qrandn needs q > 0");
    EXPECT_FAIL(tune_space_add_qrandn(sp, "x", 0, 1, D_INF, &err), TUNE_ECONFIG,
                "'x': qrandn needs a finite q");
    EXPECT_FAIL(tune_space_add_qrandn(sp, "x", 0, 0, 1, &err), TUNE_ECONFIG,
                "'x': qrandn needs sd > 0");
}
END_TEST

/* ---- integer ranges ------------------------------------------------------- */

START_TEST(test_randint_rules)
{
    EXPECT_OK(tune_space_add_randint(sp, "a", 0, 1, &err));
    EXPECT_OK(tune_space_add_randint(sp, "b", -5, 5, &err));
    EXPECT_OK(tune_space_add_randint(sp, "c", INT64_MIN, INT64_MAX, &err));
    EXPECT_FAIL(tune_space_add_randint(sp, "x", 3, 3, &err), TUNE_ECONFIG,
                "'x': randint needs low < high (high is exclusive)");
    EXPECT_FAIL(tune_space_add_randint(sp, "x", 4, 3, &err), TUNE_ECONFIG,
                "'x': randint needs low < high (high is exclusive)");
}
END_TEST

START_TEST(test_qrandint_rules)
{
    EXPECT_OK(tune_space_add_qrandint(sp, "a", 0, 10, 5, &err));
    EXPECT_OK(tune_space_add_qrandint(sp, "b", 3, 3, 1, &err));
    EXPECT_OK(tune_space_add_qrandint(sp, "c", -10, 10, 5, &err));
    EXPECT_OK(tune_space_add_qrandint(sp, "d", 0, 0, 7, &err));
    EXPECT_OK(tune_space_add_qrandint(sp, "e", INT64_MIN, INT64_MAX, 1, &err));
    EXPECT_FAIL(tune_space_add_qrandint(sp, "x", 5, 4, 1, &err), TUNE_ECONFIG,
                "'x': qrandint needs low <= high (high is inclusive)");
    EXPECT_FAIL(tune_space_add_qrandint(sp, "x", 0, 10, 0, &err), TUNE_ECONFIG,
                "'x': qrandint needs q >= 1");
    EXPECT_FAIL(tune_space_add_qrandint(sp, "x", 0, 10, -5, &err), TUNE_ECONFIG,
                "'x': qrandint needs q >= 1");
    EXPECT_FAIL(tune_space_add_qrandint(sp, "x", 3, 10, 5, &err), TUNE_ECONFIG,
                "'x': qrandint: low 3 is not a multiple of q 5");
    EXPECT_FAIL(tune_space_add_qrandint(sp, "x", 0, 12, 5, &err), TUNE_ECONFIG,
                "'x': qrandint: high 12 is not a multiple of q 5");
    EXPECT_FAIL(tune_space_add_qrandint(sp, "x", -12, 10, 5, &err), TUNE_ECONFIG,
                "'x': qrandint: low -12 is not a multiple of q 5");
}
END_TEST

START_TEST(test_lograndint_rules)
{
    EXPECT_OK(tune_space_add_lograndint(sp, "a", 1, 2, 10, &err));
    EXPECT_OK(tune_space_add_lograndint(sp, "b", 1, INT64_MAX, 10, &err));
    EXPECT_OK(tune_space_add_lograndint(sp, "c", 16, 1024, 2, &err));
    EXPECT_FAIL(tune_space_add_lograndint(sp, "x", 0, 10, 10, &err), TUNE_ECONFIG,
                "'x': lograndint needs 0 < low < high (high is exclusive)");
    EXPECT_FAIL(tune_space_add_lograndint(sp, "x", -1, 10, 10, &err), TUNE_ECONFIG,
                "'x': lograndint needs 0 < low < high (high is exclusive)");
    EXPECT_FAIL(tune_space_add_lograndint(sp, "x", 5, 5, 10, &err), TUNE_ECONFIG,
                "'x': lograndint needs 0 < low < high (high is exclusive)");
    EXPECT_FAIL(tune_space_add_lograndint(sp, "x", 6, 5, 10, &err), TUNE_ECONFIG,
                "'x': lograndint needs 0 < low < high (high is exclusive)");
    EXPECT_FAIL(tune_space_add_lograndint(sp, "x", 1, 5, 1, &err), TUNE_ECONFIG,
                "'x': lograndint needs a base > 0 other than 1");
}
END_TEST

START_TEST(test_qlograndint_rules)
{
    EXPECT_OK(tune_space_add_qlograndint(sp, "a", 1, 1, 1, 10, &err));
    EXPECT_OK(tune_space_add_qlograndint(sp, "b", 2, 64, 2, 2, &err));
    EXPECT_OK(tune_space_add_qlograndint(sp, "c", 100, 1000, 100, 10, &err));
    EXPECT_FAIL(tune_space_add_qlograndint(sp, "x", 0, 10, 1, 10, &err), TUNE_ECONFIG,
                "'x': qlograndint needs 0 < low <= high (high is inclusive)");
    EXPECT_FAIL(tune_space_add_qlograndint(sp, "x", 11, 10, 1, 10, &err), TUNE_ECONFIG,
                "'x': qlograndint needs 0 < low <= high (high is inclusive)");
    EXPECT_FAIL(tune_space_add_qlograndint(sp, "x", 1, 10, 0, 10, &err), TUNE_ECONFIG,
                "'x': qlograndint needs q >= 1");
    EXPECT_FAIL(tune_space_add_qlograndint(sp, "x", 3, 10, 2, 10, &err), TUNE_ECONFIG,
                "'x': qlograndint: low 3 is not a multiple of q 2");
    EXPECT_FAIL(tune_space_add_qlograndint(sp, "x", 2, 9, 2, 10, &err), TUNE_ECONFIG,
                "'x': qlograndint: high 9 is not a multiple of q 2");
    EXPECT_FAIL(tune_space_add_qlograndint(sp, "x", 2, 8, 2, -1, &err), TUNE_ECONFIG,
                "'x': qlograndint needs a base > 0 other than 1");
}
END_TEST

/* ---- choices, grids, constants, names ------------------------------------- */

START_TEST(test_values_rules)
{
    const double d[] = {0.5, 1.5};
    const int64_t i[] = {16, 32, 64};
    const char *s[] = {"adam", "sgd"};
    const char *s_null[] = {"adam", NULL};
    const double d_nan[] = {1.0, D_NAN};

    EXPECT_OK(tune_space_add_choice_double(sp, "cd", d, 2, &err));
    EXPECT_OK(tune_space_add_choice_int(sp, "ci", i, 1, &err));
    EXPECT_OK(tune_space_add_choice_string(sp, "cs", s, 2, &err));
    /* the strings are copied */
    ck_assert_ptr_ne(last()->values[0].u.s, s[0]);
    ck_assert_str_eq(last()->values[1].u.s, "sgd");
    EXPECT_OK(tune_space_add_grid_double(sp, "gd", d, 2, &err));
    EXPECT_OK(tune_space_add_grid_int(sp, "gi", i, 3, &err));
    ck_assert_int_eq(last()->dist, TUNEP_DIST_GRID);
    ck_assert_int_eq(last()->values[2].type, TUNEP_V_INT);
    ck_assert_int_eq(last()->values[2].u.i, 64);
    EXPECT_OK(tune_space_add_grid_string(sp, "gs", s, 2, &err));
    EXPECT_OK(tune_space_add_const_double(sp, "kd", 0.25, &err));
    EXPECT_OK(tune_space_add_const_int(sp, "ki", -7, &err));
    EXPECT_OK(tune_space_add_const_string(sp, "ks", "x", &err));
    EXPECT_OK(tune_space_add_const_bool(sp, "kb", 5, &err));
    ck_assert_int_eq(last()->values[0].type, TUNEP_V_BOOL);
    ck_assert_int_eq(last()->values[0].u.b, 1);

    EXPECT_FAIL(tune_space_add_choice_double(sp, "x", d, 0, &err), TUNE_ECONFIG,
                "'x': choice needs at least one value");
    EXPECT_FAIL(tune_space_add_grid_int(sp, "x", NULL, 0, &err), TUNE_ECONFIG,
                "'x': grid_search needs at least one value");
    EXPECT_FAIL(tune_space_add_choice_int(sp, "x", i, TUNEP_SPACE_MAX_CHOICES + 1, &err),
                TUNE_ECONFIG, "'x': choice has 100001 values, more than the limit of 100000");
    EXPECT_FAIL(tune_space_add_choice_double(sp, "x", d_nan, 2, &err), TUNE_ECONFIG,
                "'x': choice values must be finite");
    EXPECT_FAIL(tune_space_add_const_double(sp, "x", D_INF, &err), TUNE_ECONFIG,
                "'x': constant values must be finite");
    EXPECT_FAIL(tune_space_add_choice_string(sp, "x", s_null, 2, &err), TUNE_EINVAL,
                "'x': choice: NULL string value");
    EXPECT_FAIL(tune_space_add_choice_int(sp, "x", NULL, 2, &err), TUNE_EINVAL,
                "values must not be NULL");
    EXPECT_FAIL(tune_space_add_const_string(sp, "x", NULL, &err), TUNE_EINVAL,
                "value must not be NULL");
}
END_TEST

START_TEST(test_name_rules)
{
    char name[TUNEP_SPACE_MAX_NAME + 2];
    memset(name, 'n', sizeof name);
    name[TUNEP_SPACE_MAX_NAME] = '\0';
    EXPECT_OK(tune_space_add_uniform(sp, name, 0, 1, &err));
    name[TUNEP_SPACE_MAX_NAME] = 'n';
    name[TUNEP_SPACE_MAX_NAME + 1] = '\0';
    EXPECT_FAIL(tune_space_add_uniform(sp, name, 0, 1, &err), TUNE_ECONFIG,
                "parameter name is longer than 255 bytes");
    EXPECT_FAIL(tune_space_add_uniform(sp, "", 0, 1, &err), TUNE_ECONFIG,
                "parameter name is empty");
    EXPECT_OK(tune_space_add_uniform(sp, "lr", 0, 1, &err));
    EXPECT_FAIL(tune_space_add_const_int(sp, "lr", 1, &err), TUNE_ECONFIG,
                "duplicate parameter 'lr'");
    EXPECT_FAIL(tune_space_add_uniform(sp, NULL, 0, 1, &err), TUNE_EINVAL,
                "space and name must not be NULL");
    ck_assert_int_eq(tune_space_add_uniform(NULL, "y", 0, 1, NULL), TUNE_EINVAL);
    ck_assert_int_eq(tune_space_add_uniform(sp, "y", 1, 0, NULL), TUNE_ECONFIG);
    ck_assert_int_eq(tunep_space_find(sp, "lr"), 1);
    ck_assert_int_eq(tunep_space_find(sp, "nope"), -1);
    ck_assert_uint_eq(tune_space_size(NULL), 0);
    tune_space_free(NULL);
}
END_TEST

START_TEST(test_param_limit)
{
    char name[32];
    for (int i = 0; i < TUNEP_SPACE_MAX_PARAMS; i++) {
        snprintf(name, sizeof name, "p%d", i);
        ck_assert_int_eq(tune_space_add_const_int(sp, name, i, &err), TUNE_OK);
    }
    EXPECT_FAIL(tune_space_add_const_int(sp, "one_more", 0, &err), TUNE_ECONFIG,
                "a space holds at most 1024 parameters");
}
END_TEST

START_TEST(test_internal_check)
{
    /* tunep_space_add reports without a name; tunep_space_check names the argument */
    struct tunep_param p;
    enum tunep_arg arg;
    memset(&p, 0, sizeof p);
    p.name = (char *)(uintptr_t) "lr";
    p.dist = TUNEP_DIST_LOGUNIFORM;
    p.lo = 0;
    p.hi = 1;
    p.base = 10;
    ck_assert_int_eq(tunep_space_add(sp, &p, &err), TUNE_ECONFIG);
    ck_assert_str_eq(err.text, "loguniform needs 0 < low < high");
    ck_assert_int_eq(tunep_space_check(&p, &arg, NULL), TUNE_ECONFIG);
    ck_assert_int_eq(arg, TUNEP_ARG_LOW);
    p.lo = 2;
    ck_assert_int_eq(tunep_space_check(&p, &arg, NULL), TUNE_ECONFIG);
    ck_assert_int_eq(arg, TUNEP_ARG_HIGH);
    p.hi = 3;
    p.base = 1;
    ck_assert_int_eq(tunep_space_check(&p, &arg, NULL), TUNE_ECONFIG);
    ck_assert_int_eq(arg, TUNEP_ARG_BASE);
    p.dist = TUNEP_DIST_QLOGUNIFORM;
    p.base = 10;
    p.q = 0.7;
    ck_assert_int_eq(tunep_space_check(&p, &arg, NULL), TUNE_ECONFIG);
    ck_assert_int_eq(arg, TUNEP_ARG_LOW);
    p.q = 0;
    ck_assert_int_eq(tunep_space_check(&p, &arg, NULL), TUNE_ECONFIG);
    ck_assert_int_eq(arg, TUNEP_ARG_Q);
    p.q = 1;
    ck_assert_int_eq(tunep_space_check(&p, &arg, NULL), TUNE_OK);
    ck_assert_int_eq(arg, TUNEP_ARG_NONE);
    p.dist = TUNEP_DIST_COUNT;
    ck_assert_int_eq(tunep_space_check(&p, &arg, &err), TUNE_EINVAL);

    ck_assert_str_eq(tunep_dist_name(TUNEP_DIST_GRID), "grid_search");
    ck_assert_str_eq(tunep_dist_name(TUNEP_DIST_QLOGRANDINT), "qlograndint");
    ck_assert_str_eq(tunep_dist_name(TUNEP_DIST_CONST), "constant");
    ck_assert_str_eq(tunep_vtype_name(TUNEP_V_STRING), "str");
    ck_assert_str_eq(tunep_vtype_name(TUNEP_V_DOUBLE), "float");
}
END_TEST

START_TEST(test_clone_truncate)
{
    const char *s[] = {"a", "b"};
    tune_space *copy = NULL;
    ck_assert_int_eq(tune_space_add_choice_string(sp, "c", s, 2, &err), TUNE_OK);
    ck_assert_int_eq(tune_space_add_qrandint(sp, "q", 0, 10, 5, &err), TUNE_OK);
    ck_assert_int_eq(tunep_space_clone(sp, &copy, &err), TUNE_OK);
    ck_assert_uint_eq(copy->n, 2);
    ck_assert_str_eq(copy->params[0].name, "c");
    ck_assert_ptr_ne(copy->params[0].name, sp->params[0].name);
    ck_assert_ptr_ne(copy->params[0].values[1].u.s, sp->params[0].values[1].u.s);
    ck_assert_str_eq(copy->params[0].values[1].u.s, "b");
    ck_assert_int_eq(copy->params[1].iq, 5);
    tunep_space_truncate(sp, 1);
    ck_assert_uint_eq(sp->n, 1);
    ck_assert_uint_eq(copy->n, 2);
    ck_assert_int_eq(tune_space_add_const_int(sp, "q", 1, &err), TUNE_OK);
    tune_space_free(copy);
}
END_TEST

/* ---- config parsing ------------------------------------------------------- */

START_TEST(test_parse_forms)
{
    const char *text = "{\"param_space\": {\n"
                       "  \"lr\": {\"loguniform\": [1e-6, 1e-4]},\n"
                       "  \"optimizer\": {\"name\": \"adamw\",\n"
                       "                \"beta1\": {\"uniform\": [0.8, 0.99]},\n"
                       "                \"eps\": 1e-8, \"amsgrad\": false, \"steps\": 3,\n"
                       "                \"sched\": {\"warmup\": {\"randint\": [0, 10]}}},\n"
                       "  \"batch\": {\"choice\": [16, 32.5, \"auto\", true]},\n"
                       "  \"seed\": {\"grid_search\": [1, 2, 3]},\n"
                       "  \"q\": {\"qrandint\": [0, 10]},\n"
                       "  \"n\": {\"randn\": []},\n"
                       "  \"m\": {\"randn\": [2]},\n"
                       "  \"lb\": {\"loguniform\": [1, 100, 2]},\n"
                       "  \"ql\": {\"qlograndint\": [2, 64, 2, 2]},\n"
                       "  \"typo\": {\"unifrom\": 5},\n"
                       "  \"two\": {\"uniform\": 0.5, \"x\": 1}\n"
                       "}}";
    static const char *names[] = {"lr",
                                  "optimizer/name",
                                  "optimizer/beta1",
                                  "optimizer/eps",
                                  "optimizer/amsgrad",
                                  "optimizer/steps",
                                  "optimizer/sched/warmup",
                                  "batch",
                                  "seed",
                                  "q",
                                  "n",
                                  "m",
                                  "lb",
                                  "ql",
                                  "typo/unifrom",
                                  "two/uniform",
                                  "two/x"};
    size_t n = sizeof names / sizeof names[0];
    ck_assert_msg(parse(text) == TUNE_OK, "%s", err.text);
    ck_assert_uint_eq(sp->n, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_str_eq(sp->params[i].name, names[i]);
    const struct tunep_param *p = sp->params;
    ck_assert_int_eq(p[0].dist, TUNEP_DIST_LOGUNIFORM);
    ck_assert(p[0].lo == 1e-6 && p[0].hi == 1e-4 && p[0].base == 10.0);
    ck_assert_int_eq(p[1].dist, TUNEP_DIST_CONST);
    ck_assert_int_eq(p[1].values[0].type, TUNEP_V_STRING);
    ck_assert_str_eq(p[1].values[0].u.s, "adamw");
    ck_assert_int_eq(p[2].dist, TUNEP_DIST_UNIFORM);
    ck_assert_int_eq(p[3].values[0].type, TUNEP_V_DOUBLE);
    ck_assert(p[3].values[0].u.d == 1e-8);
    ck_assert_int_eq(p[4].values[0].type, TUNEP_V_BOOL);
    ck_assert_int_eq(p[4].values[0].u.b, 0);
    ck_assert_int_eq(p[5].values[0].type, TUNEP_V_INT);
    ck_assert_int_eq(p[5].values[0].u.i, 3);
    ck_assert_int_eq(p[6].dist, TUNEP_DIST_RANDINT);
    ck_assert_int_eq(p[6].ilo, 0);
    ck_assert_int_eq(p[6].ihi, 10);
    ck_assert_int_eq(p[7].dist, TUNEP_DIST_CHOICE);
    ck_assert_uint_eq(p[7].n_values, 4);
    ck_assert_int_eq(p[7].values[0].type, TUNEP_V_INT);
    ck_assert_int_eq(p[7].values[1].type, TUNEP_V_DOUBLE);
    ck_assert_int_eq(p[7].values[2].type, TUNEP_V_STRING);
    ck_assert_int_eq(p[7].values[3].type, TUNEP_V_BOOL);
    ck_assert_int_eq(p[7].values[3].u.b, 1);
    ck_assert_int_eq(p[8].dist, TUNEP_DIST_GRID);
    ck_assert_uint_eq(p[8].n_values, 3);
    ck_assert_int_eq(p[9].dist, TUNEP_DIST_QRANDINT);
    ck_assert_int_eq(p[9].iq, 1);
    ck_assert_int_eq(p[10].dist, TUNEP_DIST_RANDN);
    ck_assert(p[10].lo == 0.0 && p[10].hi == 1.0);
    ck_assert(p[11].lo == 2.0 && p[11].hi == 1.0);
    ck_assert(p[12].base == 2.0);
    ck_assert_int_eq(p[13].dist, TUNEP_DIST_QLOGRANDINT);
    ck_assert(p[13].ilo == 2 && p[13].ihi == 64 && p[13].iq == 2 && p[13].base == 2.0);
    ck_assert_int_eq(p[14].dist, TUNEP_DIST_CONST);
    ck_assert_int_eq(p[14].values[0].u.i, 5);
    /* a group whose only key is not a primitive, or with more keys, is just a group */
    ck_assert_int_eq(p[15].dist, TUNEP_DIST_CONST);
    ck_assert(p[15].values[0].u.d == 0.5);
}
END_TEST

START_TEST(test_parse_empty_and_null)
{
    ck_assert_int_eq(parse("{\"param_space\": {}}"), TUNE_OK);
    ck_assert_uint_eq(sp->n, 0);
    ck_assert_int_eq(parse("{\"other\": 1}"), TUNE_OK); /* no param_space: nothing to add */
    ck_assert_uint_eq(sp->n, 0);
}
END_TEST

START_TEST(test_parse_bound_errors)
{
    /* the brief's example: the low element, at column 27 */
    parse_fails("{\n"
                "  \"param_space\": {\n"
                "    \"lr\": {\"loguniform\": [0, 1e-4]}\n"
                "  }\n"
                "}",
                3, 27, "param_space.lr: loguniform needs 0 < low < high");
    /* low >= high blames high */
    parse_fails("{\"param_space\": {\"lr\": {\"loguniform\": [1e-2, 1e-3]}}}", 1, 46,
                "param_space.lr: loguniform needs 0 < low < high");
    /* base is the third element of loguniform, the fourth of qloguniform */
    parse_fails("{\"param_space\": {\"b\": {\"loguniform\": [1, 10, 1]}}}", 1, 46,
                "param_space.b: loguniform needs a base > 0 other than 1");
    parse_fails("{\"param_space\": {\"b\": {\"qloguniform\": [1, 10, 1, 1]}}}", 1, 50,
                "param_space.b: qloguniform needs a base > 0 other than 1");
    parse_fails("{\"param_space\": {\"q\": {\"quniform\": [0.15, 1, 0.1]}}}", 1, 37,
                "param_space.q: quniform: low 0.15 is not a multiple of q 0.1");
    parse_fails("{\"param_space\": {\"q\": {\"quniform\": [0, 1.05, 0.1]}}}", 1, 40,
                "param_space.q: quniform: high 1.05 is not a multiple of q 0.1");
    parse_fails("{\"param_space\": {\"q\": {\"quniform\": [0, 1, 0]}}}", 1, 43,
                "param_space.q: quniform needs q > 0");
    parse_fails("{\"param_space\": {\"r\": {\"randn\": [0, -1]}}}", 1, 37,
                "param_space.r: randn needs sd > 0");
    parse_fails("{\"param_space\": {\"r\": {\"randint\": [5, 5]}}}", 1, 39,
                "param_space.r: randint needs low < high (high is exclusive)");
    parse_fails("{\"param_space\": {\"r\": {\"qrandint\": [0, 12, 5]}}}", 1, 40,
                "param_space.r: qrandint: high 12 is not a multiple of q 5");
    parse_fails("{\"param_space\": {\"r\": {\"lograndint\": [0, 5]}}}", 1, 39,
                "param_space.r: lograndint needs 0 < low < high (high is exclusive)");
    /* nested groups: the path has every key */
    parse_fails("{\"param_space\": {\"opt\": {\n"
                "  \"lr\": {\"uniform\": [1, 0]}}}}",
                2, 25, "param_space.opt.lr: uniform needs low < high");
}
END_TEST

START_TEST(test_parse_type_errors)
{
    parse_fails("{\"param_space\": {\"n\": {\"randint\": [0, 1e3]}}}", 1, 39,
                "param_space.n: randint needs integer bounds");
    parse_fails("{\"param_space\": {\"n\": {\"lograndint\": [\"1\", 10]}}}", 1, 39,
                "param_space.n: lograndint needs integer bounds");
    parse_fails("{\"param_space\": {\"n\": {\"qrandint\": [0, 10, 2.5]}}}", 1, 44,
                "param_space.n: qrandint needs an integer q");
    /* a float base is fine for integer primitives */
    ck_assert_int_eq(parse("{\"param_space\": {\"n\": {\"lograndint\": [1, 10, 2.5]}}}"), TUNE_OK);
    parse_fails("{\"param_space\": {\"x\": {\"uniform\": [\"a\", 1]}}}", 1, 36,
                "param_space.x: uniform: expected a number, got string");
    parse_fails("{\"param_space\": {\"x\": {\"uniform\": [0, true]}}}", 1, 39,
                "param_space.x: uniform: expected a number, got boolean");
    parse_fails("{\"param_space\": {\"x\": {\"uniform\": [0]}}}", 1, 35,
                "param_space.x: uniform takes [low, high]");
    parse_fails("{\"param_space\": {\"x\": {\"uniform\": [0, 1, 2]}}}", 1, 35,
                "param_space.x: uniform takes [low, high]");
    parse_fails("{\"param_space\": {\"x\": {\"quniform\": 5}}}", 1, 36,
                "param_space.x: quniform takes [low, high, q]");
    parse_fails("{\"param_space\": {\"x\": {\"randn\": [0, 1, 2]}}}", 1, 33,
                "param_space.x: randn takes [], [mean] or [mean, sd]");
    parse_fails("{\"param_space\": {\"x\": {\"qlograndint\": [1, 2]}}}", 1, 39,
                "param_space.x: qlograndint takes [low, high, q] or [low, high, q, base]");
    parse_fails("{\"param_space\": {\"x\": [1, 2]}}", 1, 23,
                "param_space.x: expected a number, string, boolean, object or primitive such as "
                "{\"choice\": [...]}");
    parse_fails("{\"param_space\": {\"x\": null}}", 1, 23,
                "param_space.x: null is not a valid parameter value");
    parse_fails("{\"param_space\": {\"x\": {}}}", 1, 23,
                "param_space.x: empty object: expected parameters or a primitive such as "
                "{\"choice\": [...]}");
    parse_fails("{\"param_space\": {\"x\": {\"unifrom\": [0, 1]}}}", 1, 35,
                "param_space.x.unifrom: expected a number, string, boolean, object or primitive "
                "such as {\"choice\": [...]}");
    parse_fails("{\"param_space\": [1]}", 1, 17,
                "param_space: expected an object of parameters, got array");
}
END_TEST

START_TEST(test_parse_value_errors)
{
    parse_fails("{\"param_space\": {\"c\": {\"choice\": []}}}", 1, 34,
                "param_space.c: choice needs at least one value");
    parse_fails("{\"param_space\": {\"c\": {\"grid_search\": []}}}", 1, 39,
                "param_space.c: grid_search needs at least one value");
    parse_fails("{\"param_space\": {\"c\": {\"choice\": [1, null]}}}", 1, 38,
                "param_space.c: choice values must be numbers, strings or booleans, got null");
    parse_fails("{\"param_space\": {\"c\": {\"grid_search\": [1, 2, [3]]}}}", 1, 46,
                "param_space.c: grid_search values must be numbers, strings or booleans, got "
                "array");
    parse_fails("{\"param_space\": {\"c\": {\"choice\": {\"a\": 1}}}}", 1, 34,
                "param_space.c: choice takes a list of values, got object");
}
END_TEST

START_TEST(test_parse_name_errors)
{
    /* duplicates after flattening, reported at the second key */
    parse_fails("{\"param_space\": {\"a/b\": 1,\n"
                "  \"a\": {\"b\": 2}}}",
                2, 9, "param_space.a.b: duplicate parameter 'a/b'");
    /* a name already in the space (built in code before) */
    ck_assert_int_eq(tune_space_add_const_int(sp, "lr", 1, &err), TUNE_OK);
    parse_fails("{\"param_space\": {\"x\": 1, \"lr\": 2}}", 1, 26,
                "param_space.lr: duplicate parameter 'lr'");
    /* a name that is a folder of another, either way round, at the second key */
    parse_fails("{\"param_space\": {\"opt\": 1, \"opt/lr\": 2}}", 1, 28,
                "param_space.opt/lr: parameters 'opt' and 'opt/lr' clash: a name cannot be both "
                "a value and a folder");
    parse_fails("{\"param_space\": {\"m\": {\"opt\": {\"lr\": 2}}, \"m/opt\": 1}}", 1, 43,
                "param_space.m/opt: parameters 'm/opt/lr' and 'm/opt' clash: a name cannot be "
                "both a value and a folder");
    /* "opt2" is not inside "opt" */
    ck_assert_msg(parse("{\"param_space\": {\"opt\": 1, \"opt2/lr\": 2, \"op\": 3}}") == TUNE_OK,
                  "%s", err.text);
    tunep_space_truncate(sp, 1);
    /* empty path segments */
    parse_fails("{\"param_space\": {\"a//b\": 1}}", 1, 18,
                "param_space.a//b: parameter name 'a//b' has an empty path segment");
    parse_fails("{\"param_space\": {\"/a\": 1}}", 1, 18,
                "param_space./a: parameter name '/a' has an empty path segment");
    parse_fails("{\"param_space\": {\"a/\": 1}}", 1, 18,
                "param_space.a/: parameter name 'a/' has an empty path segment");
    /* a flattened name over the limit, at the key that makes it too long */
    char text[1024], key[200], want[1024];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    snprintf(text, sizeof text, "{\"param_space\": {\"%s\": {\"%s\": 1}}}", key, key);
    snprintf(want, sizeof want, "param_space.%s.%s: parameter name is longer than 255 bytes", key,
             key);
    const char *inner = strstr(text + 18, "{\"") + 1;
    parse_fails(text, 1, (int)(inner - text) + 1, want);
}
END_TEST

/* 13 levels of keys below param_space fit in a config path; the 14th is refused at its key. */
START_TEST(test_parse_depth)
{
    char text[512], want[512];
    for (int levels = 13; levels <= 14; levels++) {
        size_t n = (size_t)snprintf(text, sizeof text, "{\"param_space\": ");
        for (int i = 0; i < levels; i++)
            n += (size_t)snprintf(text + n, sizeof text - n, "{\"k%c\": ", 'a' + i);
        n += (size_t)snprintf(text + n, sizeof text - n, "{\"uniform\": [0, 1]}");
        for (int i = 0; i <= levels; i++)
            n += (size_t)snprintf(text + n, sizeof text - n, "}");
        if (levels == 13) {
            ck_assert_msg(parse(text) == TUNE_OK, "%s", err.text);
            ck_assert_str_eq(sp->params[0].name, "ka/kb/kc/kd/ke/kf/kg/kh/ki/kj/kk/kl/km");
        } else {
            snprintf(want, sizeof want,
                     "param_space.ka.kb.kc.kd.ke.kf.kg.kh.ki.kj.kk.kl.km.kn: "
                     "parameter groups nest too deeply");
            parse_fails(text, 1, (int)(strstr(text, "\"kn\"") - text) + 1, want);
        }
    }
}
END_TEST

/* Four grid axes of 100 values: the fourth takes the grid past 10^6 points. */
START_TEST(test_parse_grid_limit)
{
    char *text = malloc(8192);
    size_t n = 0;
    n += (size_t)sprintf(text + n, "{\"param_space\": {");
    for (int a = 0; a < 4; a++) {
        n += (size_t)sprintf(text + n, "%s\"g%d\": {\"grid_search\": [", a ? ", " : "", a);
        for (int v = 0; v < 100; v++)
            n += (size_t)sprintf(text + n, "%s%d", v ? "," : "", v);
        n += (size_t)sprintf(text + n, "]}");
    }
    sprintf(text + n, "}}");
    ck_assert_int_eq(parse(text), TUNE_ECONFIG);
    ck_assert_str_eq(err.text, "param_space.g3: grid of 100000000 points exceeds the limit of "
                               "1000000");
    ck_assert_int_eq(err.line, 1);
    ck_assert_int_eq(err.column, (int)(strstr(text, "\"g3\"") - text) + 1 + 22);
    ck_assert_uint_eq(sp->n, 0); /* rolled back */
    free(text);
}
END_TEST

START_TEST(test_parse_rollback)
{
    ck_assert_int_eq(tune_space_add_uniform(sp, "keep", 0, 1, &err), TUNE_OK);
    parse_fails("{\"param_space\": {\"a\": 1, \"b\": {\"c\": \"x\"},"
                " \"d\": {\"randint\": [1, 0]}}}",
                1, 64, "param_space.d: randint needs low < high (high is exclusive)");
    ck_assert_uint_eq(sp->n, 1);
    ck_assert_str_eq(sp->params[0].name, "keep");
}
END_TEST

START_TEST(test_add_json)
{
    EXPECT_OK(tune_space_add_json(sp, "batch", "{\"choice\": [16, \"auto\", true]}", &err));
    ck_assert_int_eq(last()->dist, TUNEP_DIST_CHOICE);
    ck_assert_int_eq(last()->values[1].type, TUNEP_V_STRING);
    ck_assert_str_eq(last()->values[1].u.s, "auto");
    EXPECT_OK(tune_space_add_json(sp, "lr", "{\"qloguniform\": [1e-4, 1e-1, 5e-5]}", &err));
    ck_assert(last()->base == 10.0 && last()->q == 5e-5);
    EXPECT_OK(tune_space_add_json(sp, "k", "0.5", &err));
    ck_assert_int_eq(last()->values[0].type, TUNEP_V_DOUBLE);
    EXPECT_OK(tune_space_add_json(sp, "s", " \"adam\" ", &err));
    ck_assert_str_eq(last()->values[0].u.s, "adam");
    /* a group adds several flattened parameters */
    ck_assert_int_eq(
        tune_space_add_json(sp, "opt", "{\"lr\": 1, \"m\": {\"uniform\": [0, 1]}}", &err), TUNE_OK);
    ck_assert_str_eq(sp->params[sp->n - 2].name, "opt/lr");
    ck_assert_str_eq(last()->name, "opt/m");

    EXPECT_FAIL(tune_space_add_json(sp, "x", "{\"loguniform\": [0, 1]}", &err), TUNE_ECONFIG,
                "'x': loguniform needs 0 < low < high");
    ck_assert_str_eq(err.source, "<string>");
    ck_assert_int_eq(err.line, 1);
    ck_assert_int_eq(err.column, 17);
    EXPECT_FAIL(tune_space_add_json(sp, "y", "{\"a\": 1,\n \"b\": {\"randint\": [0, 0.5]}}", &err),
                TUNE_ECONFIG, "'y/b': randint needs integer bounds");
    ck_assert_int_eq(err.line, 2);
    ck_assert_int_eq(err.column, 23);
    EXPECT_FAIL(tune_space_add_json(sp, "lr", "1", &err), TUNE_ECONFIG, "duplicate parameter 'lr'");
    EXPECT_FAIL(tune_space_add_const_int(sp, "lr/x", 1, &err), TUNE_ECONFIG,
                "parameters 'lr' and 'lr/x' clash: a name cannot be both a value and a folder");
    EXPECT_FAIL(tune_space_add_uniform(sp, "a//b", 0, 1, &err), TUNE_ECONFIG,
                "parameter name 'a//b' has an empty path segment");
    EXPECT_FAIL(tune_space_add_const_string(sp, "a/", "x", &err), TUNE_ECONFIG,
                "parameter name 'a/' has an empty path segment");
    EXPECT_FAIL(tune_space_add_json(sp, "z", "null", &err), TUNE_ECONFIG,
                "'z': null is not a valid parameter value");
    EXPECT_FAIL(tune_space_add_json(sp, "z", "[1]", &err), TUNE_ECONFIG,
                "'z': expected a number, string, boolean, object or primitive such as "
                "{\"choice\": [...]}");
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(tune_space_add_json(sp, "z", "{\"choice\": [1,}", &err), TUNE_ECONFIG);
    ck_assert_int_eq(strncmp(err.text, "'z': ", 5), 0);
    ck_assert_int_eq(err.line, 1);
    ck_assert_int_gt(err.column, 0);
    ck_assert_int_eq(tune_space_add_json(sp, "z", "{\"a\": 1, \"a\": 2}", &err), TUNE_ECONFIG);
    ck_assert_int_eq(tune_space_add_json(sp, NULL, "1", &err), TUNE_EINVAL);
    ck_assert_int_eq(tune_space_add_json(sp, "z", NULL, &err), TUNE_EINVAL);
    ck_assert_int_eq(tune_space_add_json(sp, "z", "{\"uniform\": [1, 0]}", NULL), TUNE_ECONFIG);
}
END_TEST

/* ---- allocation failures (jansson's test_chaos pattern) ------------------- */

enum oom_op { OOM_CHOICE, OOM_JSON, OOM_CLONE, OOM_GROW };

static tune_status oom_run(enum oom_op op, tune_space **ret_copy)
{
    const char *s[] = {"adam", "sgd", "lamb"};
    switch (op) {
        case OOM_CHOICE: return tune_space_add_choice_string(sp, "opt", s, 3, &err);
        case OOM_JSON:
            return tune_space_add_json(sp, "g",
                                       "{\"a\": \"x\", \"b\": {\"choice\": [\"p\", 2]},"
                                       " \"c\": {\"uniform\": [0, 1]}}",
                                       &err);
        case OOM_CLONE: return tunep_space_clone(sp, ret_copy, &err);
        case OOM_GROW: return tune_space_add_const_int(sp, "ninth", 9, &err);
    }
    return TUNE_EINTERNAL;
}

START_TEST(test_oom)
{
    char name[16];
    for (int i = 0; i < 8; i++) { /* a full first block, so OOM_GROW reallocates */
        snprintf(name, sizeof name, "k%d", i);
        ck_assert_int_eq(tune_space_add_const_string(sp, name, "v", &err), TUNE_OK);
    }
    for (int op = OOM_CHOICE; op <= OOM_GROW; op++) {
        size_t n0 = sp->n;
        tune_status st = TUNE_ENOMEM;
        tune_space *copy = NULL;
        long fail_at;
        for (fail_at = 0; st == TUNE_ENOMEM && fail_at < 100; fail_at++) {
            tune_test_alloc_fail_after(fail_at);
            st = oom_run((enum oom_op)op, &copy);
            tune_test_alloc_reset();
            if (st == TUNE_ENOMEM) {
                ck_assert_int_eq(err.code, TUNE_ENOMEM);
                ck_assert_uint_eq(sp->n, n0);
                ck_assert_ptr_null(copy);
            }
        }
        ck_assert_msg(st == TUNE_OK, "op %d: %s", op, err.text);
        ck_assert_int_gt(fail_at, 1); /* at least one failure was injected */
        if (op == OOM_CLONE) {
            ck_assert_uint_eq(copy->n, sp->n);
            tune_space_free(copy);
        }
    }
    ck_assert_uint_eq(sp->n, 8 + 1 + 3 + 1);
}
END_TEST

static Suite *space_suite(void)
{
    Suite *s = suite_create("space");
    TCase *tc = tcase_create("rules");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_uniform_rules);
    tcase_add_test(tc, test_quniform_rules);
    tcase_add_test(tc, test_loguniform_rules);
    tcase_add_test(tc, test_qloguniform_rules);
    tcase_add_test(tc, test_randn_rules);
    tcase_add_test(tc, test_randint_rules);
    tcase_add_test(tc, test_qrandint_rules);
    tcase_add_test(tc, test_lograndint_rules);
    tcase_add_test(tc, test_qlograndint_rules);
    tcase_add_test(tc, test_values_rules);
    tcase_add_test(tc, test_name_rules);
    tcase_add_test(tc, test_param_limit);
    tcase_add_test(tc, test_internal_check);
    tcase_add_test(tc, test_clone_truncate);
    tcase_add_test(tc, test_oom);
    suite_add_tcase(s, tc);

    tc = tcase_create("config");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_parse_forms);
    tcase_add_test(tc, test_parse_empty_and_null);
    tcase_add_test(tc, test_parse_bound_errors);
    tcase_add_test(tc, test_parse_type_errors);
    tcase_add_test(tc, test_parse_value_errors);
    tcase_add_test(tc, test_parse_name_errors);
    tcase_add_test(tc, test_parse_depth);
    tcase_add_test(tc, test_parse_grid_limit);
    tcase_add_test(tc, test_parse_rollback);
    tcase_add_test(tc, test_add_json);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(space_suite)
