/*
 * test_bert_gradcheck.c - the whole model's backward pass against central
 * differences, in double precision (bert.c compiled with -DTUNEP_F64
 * over the double CPU kernels), on tiny shapes (L=2, C=8, NH=2, I=16, T=5,
 * B=2, V=20, K=3) with padding positions, dropout off and on (the counter
 * RNG gives both evaluations of a difference the same masks). Every
 * parameter element is checked. Then the float model against the double
 * model on the same weights.
 */
#include <math.h>
#include <string.h>

#include "check_util.h"
#include "bert_test_util.h"
#include "models/bert/bert.h"
#include "models/cpu/cpu_backend.h"

enum { B = 2, T = 5 };

static const int32_t ids[B * T] = {1, 7, 19, 4, 4, 2, 11, 0, 0, 0};
static const int32_t types[B * T] = {0, 0, 1, 1, 1, 0, 1, 0, 0, 0};
static const int32_t mask[B * T] = {1, 1, 1, 1, 1, 1, 1, 0, 0, 0}; /* batch 1: 3 padding */
static const int32_t labels[B] = {2, 0};

static void tiny_config(struct tunep_bert_config *cfg, double dropout)
{
    *cfg = (struct tunep_bert_config){.L = 2,
                                      .C = 8,
                                      .NH = 2,
                                      .I = 16,
                                      .P = 6,
                                      .V = 20,
                                      .TV = 2,
                                      .K = 3,
                                      .hidden_dropout = dropout,
                                      .attn_dropout = dropout,
                                      .ln_eps = 1e-12};
}

static const struct tunep_bert_batch batch = {
    .B = B, .T = T, .ids = ids, .types = types, .mask = mask, .labels = labels};

struct model_case {
    struct tunep_bert_f64 *m;
    int train;
};

static double model_loss(void *p)
{
    struct model_case *c = p;
    double loss = (double)NAN;
    tune_status st = tunep_bert_forward_f64(c->m, &batch, c->train, 1234, &loss, NULL);
    return st == TUNE_OK ? loss : (double)NAN;
}

/* Perturbs weights away from the init's structure (LayerNorm 1/0, zero
 * biases), so that every term of every gradient is exercised. */
static void randomize_params(double *arena, size_t n, uint64_t seed)
{
    struct test_rng r = {seed};
    for (size_t i = 0; i < n; i++)
        arena[i] += test_rng_uniform(&r, -0.3, 0.3);
}

static void run_model_gradcheck(int train)
{
    struct tunep_backend *be;
    ck_assert_int_eq(tunep_cpu_backend_new(1, &be, NULL), TUNE_OK);
    struct tunep_bert_config cfg;
    tiny_config(&cfg, 0.1);
    struct tunep_bert_f64 *m;
    tune_error err = {0};
    ck_assert_int_eq(tunep_bert_new_f64(&cfg, B, T, be, &m, &err), TUNE_OK);
    ck_assert_int_eq(tunep_bert_init_weights_f64(m, 77, NULL), TUNE_OK);
    const struct tunep_bert_layout *lay = tunep_bert_layout_of_f64(m);
    size_t n = lay->param_total;
    double *params = tunep_bert_params_arena_f64(m);
    randomize_params(params, n, 5);

    struct model_case c = {.m = m, .train = train};
    double loss;
    ck_assert_int_eq(tunep_bert_forward_f64(m, &batch, train, 1234, &loss, &err), TUNE_OK);
    ck_assert(loss > 0.1);
    if (train) {
        /* with p = 0.1 on these tiny tensors, some elements must be dropped */
        const struct tunep_bert_acts_f64 *a = tunep_bert_acts_view_f64(m);
        size_t dropped = 0, na = (size_t)B * 2 * T * T;
        for (size_t i = 0; i < na; i++)
            dropped += a->att[i] != 0.0 && a->att_drop[i] == 0.0;
        for (size_t i = 0; i < (size_t)B * T * 8; i++)
            dropped += a->emb_ln[i] != 0.0 && a->emb_drop[i] == 0.0;
        ck_assert(dropped >= 4);
    }
    ck_assert_int_eq(tunep_bert_zero_grad_f64(m, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_backward_f64(m, &err), TUNE_OK);
    double *analytic = malloc(n * sizeof(double));
    ck_assert_ptr_nonnull(analytic);
    memcpy(analytic, tunep_bert_grads_arena_f64(m), n * sizeof(double));

    /* check every tensor by name so a failure says where */
    int failures = 0;
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        size_t size = lay->param_size[id];
        int layers = tunep_bert_param_info[id].layered ? cfg.L : 1;
        for (int l = 0; l < layers; l++) {
            size_t off = lay->param_offset[id] + (size_t)l * lay->param_stride[id];
            char name[128];
            tunep_bert_param_name((enum bert_param)id, l, name, sizeof name);
            double e =
                test_gradcheck(name, model_loss, &c, params + off, size, analytic + off, 1e-6);
            if (!(e < 1e-6))
                failures++;
        }
    }
    ck_assert_int_eq(failures, 0);
    /* unused vocabulary rows and positions get exactly zero gradient */
    const struct tunep_bert_params_f64 *g = tunep_bert_grads_view_f64(m);
    for (int ch = 0; ch < cfg.C; ch++) {
        ck_assert(g->word_emb[3 * cfg.C + ch] == 0.0);
        ck_assert(g->pos_emb[5 * cfg.C + ch] == 0.0);
    }
    free(analytic);
    tunep_bert_free_f64(m);
    tunep_cpu_backend_free(be);
}

START_TEST(test_model_gradcheck_eval)
{
    run_model_gradcheck(0);
}
END_TEST

START_TEST(test_model_gradcheck_dropout)
{
    run_model_gradcheck(1);
}
END_TEST

START_TEST(test_float_vs_double_model)
{
    /*
     * The float model on the double model's weights (rounded to float). The
     * loss, logits and gradients differ by float rounding propagated through
     * 2 layers: each op adds ~6e-8 relative and the GEMMs accumulate <= 16
     * terms, so ~1e-6 relative per layer after LayerNorm's renormalisation.
     * t_eff = 1e-5 (|ref| + rms of all gradients) leaves a 10x margin. The
     * absolute part is global: the key bias gradient is exactly zero in exact
     * arithmetic (softmax ignores a per-row constant), so both precisions
     * return rounding noise of the size of the other gradients times eps.
     */
    struct tunep_backend *be;
    ck_assert_int_eq(tunep_cpu_backend_new(2, &be, NULL), TUNE_OK);
    struct tunep_bert_config cfg;
    tiny_config(&cfg, 0.1);
    struct tunep_bert_f64 *md;
    struct tunep_bert *mf;
    ck_assert_int_eq(tunep_bert_new_f64(&cfg, B, T, be, &md, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_new(&cfg, B, T, be, &mf, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_init_weights_f64(md, 3, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_init_weights(mf, 3, NULL), TUNE_OK);
    size_t n = tunep_bert_layout_of_f64(md)->param_total;
    ck_assert_uint_eq(n, tunep_bert_layout_of(mf)->param_total);
    double *pd = tunep_bert_params_arena_f64(md);
    float *pf = tunep_bert_params_arena(mf);
    /* the same init in both precisions */
    for (size_t i = 0; i < n; i++)
        ck_assert(pf[i] == (float)pd[i]);
    randomize_params(pd, n, 9);
    for (size_t i = 0; i < n; i++) {
        pf[i] = (float)pd[i];
        pd[i] = (double)pf[i];
    }
    for (int train = 0; train <= 1; train++) {
        double ld, lf;
        ck_assert_int_eq(tunep_bert_zero_grad_f64(md, NULL), TUNE_OK);
        ck_assert_int_eq(tunep_bert_zero_grad(mf, NULL), TUNE_OK);
        ck_assert_int_eq(tunep_bert_forward_f64(md, &batch, train, 55, &ld, NULL), TUNE_OK);
        ck_assert_int_eq(tunep_bert_forward(mf, &batch, train, 55, &lf, NULL), TUNE_OK);
        ck_assert_double_eq_tol(lf, ld, 1e-5 * ld);
        ck_assert_int_eq(tunep_bert_backward_f64(md, NULL), TUNE_OK);
        ck_assert_int_eq(tunep_bert_backward(mf, NULL), TUNE_OK);
        const double *gd = tunep_bert_grads_arena_f64(md);
        const float *gf = tunep_bert_grads_arena(mf);
        const struct tunep_bert_layout *lay = tunep_bert_layout_of_f64(md);
        double ss = 0.0;
        for (size_t i = 0; i < n; i++)
            ss += gd[i] * gd[i];
        double rms = sqrt(ss / (double)n);
        size_t bad = 0;
        for (int id = 0; id < BERT_PARAM_COUNT; id++) {
            size_t cnt = lay->param_size[id];
            for (int l = 0; l < (tunep_bert_param_info[id].layered ? 2 : 1); l++) {
                size_t off = lay->param_offset[id] + (size_t)l * lay->param_stride[id];
                double *got = malloc(cnt * sizeof(double));
                ck_assert_ptr_nonnull(got);
                for (size_t i = 0; i < cnt; i++)
                    got[i] = (double)gf[off + i];
                bad += test_compare(tunep_bert_param_info[id].name, got, gd + off, cnt, 1e-5 * rms,
                                    1e-5);
                free(got);
            }
        }
        ck_assert_uint_eq(bad, 0);
    }
    tunep_bert_free(mf);
    tunep_bert_free_f64(md);
    tunep_cpu_backend_free(be);
}
END_TEST

static Suite *bert_gradcheck_suite(void)
{
    Suite *s = suite_create("bert_gradcheck");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_model_gradcheck_eval);
    tcase_add_test(tc, test_model_gradcheck_dropout);
    tcase_add_test(tc, test_float_vs_double_model);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(bert_gradcheck_suite)
