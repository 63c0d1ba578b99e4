/*
 * test_bert_train.c - the float model as the trainer will drive it: a few
 * AdamW steps memorise a fixed random batch; results do not depend on the
 * thread count; dropout is reproducible from its seed; gradients accumulate;
 * bad inputs, bad backends, non-finite values and failed allocations are
 * reported, never crash or leak (run under ASan in CI).
 */
#include <math.h>
#include <string.h>

#include "check_util.h"
#include "bert_test_util.h"
#include "models/bert/bert.h"
#include "models/bert/bert_rng.h"
#include "models/cpu/cpu_backend.h"

enum { B = 8, T = 12, K = 3 };

static void small_config(struct tunep_bert_config *cfg)
{
    *cfg = (struct tunep_bert_config){.L = 2,
                                      .C = 32,
                                      .NH = 4,
                                      .I = 64,
                                      .P = 16,
                                      .V = 50,
                                      .TV = 2,
                                      .K = K,
                                      .hidden_dropout = 0.1,
                                      .attn_dropout = 0.1,
                                      .ln_eps = 1e-12};
}

struct data {
    int32_t ids[B * T], types[B * T], mask[B * T], labels[B];
    struct tunep_bert_batch batch;
};

static void make_data(struct data *d, uint64_t seed)
{
    struct test_rng r = {seed};
    for (int b = 0; b < B; b++) {
        int len = 4 + (int)(test_rng_u64(&r) % (T - 3)); /* 4..T tokens, rest padding */
        for (int t = 0; t < T; t++) {
            int i = b * T + t;
            d->mask[i] = t < len;
            d->ids[i] = t == 0 ? 1 : t < len ? 2 + (int32_t)(test_rng_u64(&r) % 48) : 0;
            d->types[i] = t >= len / 2 && t < len;
        }
        d->labels[b] = (int32_t)(test_rng_u64(&r) % K);
    }
    d->batch = (struct tunep_bert_batch){
        .B = B, .T = T, .ids = d->ids, .types = d->types, .mask = d->mask, .labels = d->labels};
}

/* Trains `steps` steps on one batch; returns the eval loss before and after. */
static void train(int threads, int steps, double *ret_before, double *ret_after, double *losses)
{
    struct tunep_backend *be;
    ck_assert_int_eq(tunep_cpu_backend_new(threads, &be, NULL), TUNE_OK);
    struct tunep_bert_config cfg;
    small_config(&cfg);
    struct tunep_bert *m;
    tune_error err = {0};
    ck_assert_int_eq(tunep_bert_new(&cfg, B, T, be, &m, &err), TUNE_OK);
    ck_assert_int_eq(tunep_bert_init_weights(m, 2024, NULL), TUNE_OK);
    struct data d;
    make_data(&d, 99);
    struct tunep_adamw opt;
    tunep_adamw_default(&opt);
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 0, 0, ret_before, &err), TUNE_OK);
    for (int s = 0; s < steps; s++) {
        double loss, norm;
        ck_assert_int_eq(tunep_bert_zero_grad(m, NULL), TUNE_OK);
        ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 1, (uint64_t)s + 1, &loss, &err), TUNE_OK);
        ck_assert_int_eq(tunep_bert_backward(m, &err), TUNE_OK);
        ck_assert_int_eq(tunep_bert_adamw_step(m, &opt, 3e-3, &norm, &err), TUNE_OK);
        ck_assert(isfinite(norm) && norm > 0.0);
        if (losses)
            losses[s] = loss;
    }
    ck_assert_int_eq(tunep_bert_step_count(m), steps);
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 0, 0, ret_after, &err), TUNE_OK);
    tunep_bert_free(m);
    tunep_cpu_backend_free(be);
}

START_TEST(test_memorise_batch)
{
    /* 8 random labels over 3 classes start at ~ln 3 = 1.10; memorising them
     * must take the loss well down within 60 steps at lr 3e-3 (dropout on). */
    double before, after;
    train(2, 60, &before, &after, NULL);
    fprintf(stderr, "memorisation: eval loss %.4f -> %.4f\n", before, after);
    ck_assert(before > 0.9 && before < 1.4);
    ck_assert(after < 0.1 * before);
}
END_TEST

START_TEST(test_threads_agree)
{
    /* Element-wise kernels and reductions are thread-count independent; only
     * GEMM blocking differs (split rows run the same single-threaded sgemm
     * kernel), so 1 and 2 threads agree to float rounding after 5 steps. */
    double b1, a1, b2, a2, l1[5], l2[5];
    train(1, 5, &b1, &a1, l1);
    train(2, 5, &b2, &a2, l2);
    ck_assert(b1 == b2);
    for (int s = 0; s < 5; s++)
        ck_assert_double_eq_tol(l1[s], l2[s], 1e-6 * l1[s]);
    ck_assert_double_eq_tol(a1, a2, 1e-5 * a1);
}
END_TEST

START_TEST(test_dropout_reproducible)
{
    struct tunep_backend *be;
    ck_assert_int_eq(tunep_cpu_backend_new(2, &be, NULL), TUNE_OK);
    struct tunep_bert_config cfg;
    small_config(&cfg);
    struct tunep_bert *m;
    ck_assert_int_eq(tunep_bert_new(&cfg, B, T, be, &m, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_init_weights(m, 5, NULL), TUNE_OK);
    struct data d;
    make_data(&d, 3);
    float l0[B * K], l1[B * K], l2[B * K];
    double e1, e2, t1, t2, t3;
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 0, 1, &e1, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_logits(m, l0, B * K, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 0, 2, &e2, NULL), TUNE_OK);
    ck_assert(e1 == e2); /* eval ignores the seed */
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 1, 7, &t1, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_logits(m, l1, B * K, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 1, 7, &t2, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_logits(m, l2, B * K, NULL), TUNE_OK);
    ck_assert(t1 == t2 && memcmp(l1, l2, sizeof l1) == 0);
    ck_assert(memcmp(l0, l1, sizeof l0) != 0);
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 1, 8, &t3, NULL), TUNE_OK);
    ck_assert(t3 != t1);
    tunep_bert_free(m);
    tunep_cpu_backend_free(be);
}
END_TEST

/*
 * Dropout masks are keyed by fixed site numbers (bert_rng.h), not by the
 * activations' table rows, so a seed keeps its masks when that table
 * changes: the attention-probability mask of layer 1 is stream (dropout,
 * 10, 0, 1) and the attention output's of layer 0 stream (dropout, 13, 0,
 * 0), element i dropped iff its draw is below the threshold.
 */
START_TEST(test_dropout_streams_fixed)
{
    struct tunep_backend *be;
    ck_assert_int_eq(tunep_cpu_backend_new(2, &be, NULL), TUNE_OK);
    struct tunep_bert_config cfg;
    small_config(&cfg);
    struct tunep_bert *m;
    ck_assert_int_eq(tunep_bert_new(&cfg, B, T, be, &m, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_init_weights(m, 5, NULL), TUNE_OK);
    struct data d;
    make_data(&d, 3);
    const uint64_t seed = 9;
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 1, seed, NULL, NULL), TUNE_OK);
    const struct tunep_bert_acts *a = tunep_bert_acts_view(m);
    const uint32_t thr = tunep_dropout_threshold(0.1);
    size_t ntt = (size_t)B * cfg.NH * T * T, btc = (size_t)B * T * cfg.C, checked = 0, dropped = 0;
    uint64_t att_stream = tunep_bert_stream(TUNEP_BERT_RNG_DROPOUT, 10, 0, 1);
    for (size_t i = 0; i < ntt; i++) {
        float p = a->att[ntt + i], pd = a->att_drop[ntt + i];
        if (p == 0.0f) /* a padding key: its mask does not show */
            continue;
        int drop = tunep_rng_u32_at(seed, att_stream, i) < thr;
        ck_assert_int_eq(pd == 0.0f, drop);
        checked++;
        dropped += drop;
    }
    /* att_res = dropout(att_proj) + x; the dropped elements equal x */
    uint64_t res_stream = tunep_bert_stream(TUNEP_BERT_RNG_DROPOUT, 13, 0, 0);
    for (size_t i = 0; i < btc; i++)
        if (tunep_rng_u32_at(seed, res_stream, i) < thr)
            ck_assert(a->att_res[i] == a->emb_drop[i]);
    ck_assert(checked > 1000 && dropped > checked / 20 && dropped < checked / 5);
    tunep_bert_free(m);
    tunep_cpu_backend_free(be);
}
END_TEST

START_TEST(test_grad_accumulates)
{
    struct tunep_backend *be;
    ck_assert_int_eq(tunep_cpu_backend_new(2, &be, NULL), TUNE_OK);
    struct tunep_bert_config cfg;
    small_config(&cfg);
    struct tunep_bert *m;
    ck_assert_int_eq(tunep_bert_new(&cfg, B, T, be, &m, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_init_weights(m, 5, NULL), TUNE_OK);
    struct data d;
    make_data(&d, 4);
    size_t n = tunep_bert_layout_of(m)->param_total;
    float *g1 = malloc(n * sizeof(float));
    ck_assert_ptr_nonnull(g1);
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 1, 3, NULL, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_backward(m, NULL), TUNE_OK);
    memcpy(g1, tunep_bert_grads_arena(m), n * sizeof(float));
    ck_assert_int_eq(tunep_bert_backward(m, NULL), TUNE_OK);
    const float *g2 = tunep_bert_grads_arena(m);
    /* the second pass adds the same values again (summation order may differ
     * in the embedding rows: 1e-6 relative to the gradient scale) */
    double ss = 0.0;
    for (size_t i = 0; i < n; i++)
        ss += (double)g1[i] * (double)g1[i];
    double scale = sqrt(ss / (double)n);
    for (size_t i = 0; i < n; i++)
        ck_assert(fabs((double)g2[i] - 2.0 * (double)g1[i]) <=
                  1e-6 * (fabs((double)g1[i]) + scale));
    ck_assert_int_eq(tunep_bert_zero_grad(m, NULL), TUNE_OK);
    for (size_t i = 0; i < n; i++)
        ck_assert(g2[i] == 0.0f);
    free(g1);
    tunep_bert_free(m);
    tunep_cpu_backend_free(be);
}
END_TEST

START_TEST(test_bad_inputs)
{
    struct tunep_backend *be;
    ck_assert_int_eq(tunep_cpu_backend_new(1, &be, NULL), TUNE_OK);
    struct tunep_bert_config cfg;
    small_config(&cfg);
    struct tunep_bert *m;
    tune_error err = {0};
    ck_assert_int_eq(tunep_bert_new(&cfg, B, T, be, &m, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_init_weights(m, 1, NULL), TUNE_OK);
    struct data d;
    make_data(&d, 5);
    ck_assert_int_eq(tunep_bert_backward(m, &err), TUNE_EINVAL); /* no forward yet */

    d.ids[13] = 50;
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 0, 0, NULL, &err), TUNE_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.text, "token id 50 at batch 1 position 1"));
    d.ids[13] = -1;
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 0, 0, NULL, &err), TUNE_EINVAL);
    make_data(&d, 5);
    d.types[2] = 2;
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 0, 0, NULL, &err), TUNE_EINVAL);
    make_data(&d, 5);
    d.mask[2] = 3;
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 0, 0, NULL, &err), TUNE_EINVAL);
    make_data(&d, 5);
    d.labels[7] = K;
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 0, 0, NULL, &err), TUNE_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.text, "label"));
    make_data(&d, 5);
    d.batch.B = B + 1;
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 0, 0, NULL, &err), TUNE_EINVAL);
    d.batch.B = B;
    d.batch.T = T + 1;
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 0, 0, NULL, &err), TUNE_EINVAL);

    /* a smaller batch fits; inference without labels cannot go backward */
    d.batch.T = 5;
    d.batch.B = 3;
    d.batch.labels = NULL;
    d.batch.types = NULL;
    d.batch.mask = NULL;
    double loss = -1;
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 0, 0, &loss, &err), TUNE_OK);
    ck_assert(loss == 0.0);
    float logits[3 * K];
    ck_assert_int_eq(tunep_bert_logits(m, logits, 3 * K, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_logits(m, logits, 2 * K, NULL), TUNE_EINVAL);
    ck_assert_int_eq(tunep_bert_backward(m, &err), TUNE_EINVAL);

    /* tensors by id and layer */
    float w[32 * 32];
    ck_assert_int_eq(tunep_bert_param_get(m, BERT_P_Q_W, 1, w, 32 * 32, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_param_get(m, BERT_P_Q_W, 2, w, 32 * 32, NULL), TUNE_EINVAL);
    ck_assert_int_eq(tunep_bert_param_get(m, BERT_P_Q_W, 0, w, 32, NULL), TUNE_EINVAL);
    ck_assert_int_eq(tunep_bert_param_get(m, BERT_P_POOL_W, 1, w, 32 * 32, NULL), TUNE_EINVAL);

    /* non-finite values: the forward reports them, AdamW refuses to step */
    make_data(&d, 5);
    w[0] = NAN;
    ck_assert_int_eq(tunep_bert_param_set(m, BERT_P_CLS_W, 0, w, 32 * K, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_forward(m, &d.batch, 0, 0, NULL, &err), TUNE_ENUMERIC);
    ck_assert_int_eq(tunep_bert_init_weights(m, 1, NULL), TUNE_OK);
    tunep_bert_grads_arena(m)[17] = INFINITY;
    float before = tunep_bert_params_arena(m)[17];
    struct tunep_adamw opt;
    tunep_adamw_default(&opt);
    ck_assert_int_eq(tunep_bert_adamw_step(m, &opt, 1e-3, NULL, &err), TUNE_ENUMERIC);
    ck_assert(tunep_bert_params_arena(m)[17] == before);
    ck_assert_int_eq(tunep_bert_step_count(m), 0);
    ck_assert_int_eq(tunep_bert_adamw_step(m, &opt, -1.0, NULL, &err), TUNE_EINVAL);

    tunep_bert_free(m);
    tunep_cpu_backend_free(be);
}
END_TEST

START_TEST(test_unsupported_backend)
{
    struct tunep_backend *be;
    ck_assert_int_eq(tunep_cpu_backend_new(1, &be, NULL), TUNE_OK);
    struct tunep_bert_config cfg;
    small_config(&cfg);
    tune_error err = {0};
    /* a backend without double kernels (as CUDA will be) */
    struct tunep_backend nodouble = *be;
    nodouble.kernels_f64 = NULL;
    struct tunep_bert_f64 *md = NULL;
    ck_assert_int_eq(tunep_bert_new_f64(&cfg, 2, 4, &nodouble, &md, &err), TUNE_EUNSUPPORTED);
    ck_assert_ptr_null(md);
    /* a backend missing one kernel is refused up front, naming it */
    struct tunep_kernels partial = *be->kernels;
    partial.attention_bwd = NULL;
    struct tunep_backend lacking = *be;
    lacking.kernels = &partial;
    struct tunep_bert *m = NULL;
    ck_assert_int_eq(tunep_bert_new(&cfg, 2, 4, &lacking, &m, &err), TUNE_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err.text, "'attention_bwd'"));
    ck_assert_ptr_null(m);
    /* bad shapes and threads */
    ck_assert_int_eq(tunep_bert_new(&cfg, 2, 17, be, &m, &err), TUNE_EINVAL);
    ck_assert_int_eq(tunep_bert_new(&cfg, 0, 4, be, &m, &err), TUNE_EINVAL);
    struct tunep_backend *be0 = NULL;
    ck_assert_int_eq(tunep_cpu_backend_new(0, &be0, &err), TUNE_EINVAL);
    ck_assert_ptr_null(be0);
    tunep_cpu_backend_free(be);
}
END_TEST

/* ---- allocation failures (jansson test_chaos) ---------------------------- */

START_TEST(test_alloc_failures)
{
    struct tunep_bert_config cfg;
    small_config(&cfg);
    int failures_seen = 0;
    for (int k = 0; k < 64; k++) {
        tune_test_alloc_fail_after(k);
        struct tunep_backend *be = NULL;
        struct tunep_bert *m = NULL;
        tune_status st = tunep_cpu_backend_new(1, &be, NULL);
        if (st == TUNE_OK)
            st = tunep_bert_new(&cfg, 2, 4, be, &m, NULL);
        tune_test_alloc_reset();
        if (st == TUNE_OK) {
            ck_assert_ptr_nonnull(m);
            tunep_bert_free(m);
            tunep_cpu_backend_free(be);
            break;
        }
        ck_assert_int_eq(st, TUNE_ENOMEM);
        ck_assert_ptr_null(m);
        tunep_cpu_backend_free(be);
        failures_seen++;
    }
    ck_assert_int_ge(failures_seen, 9); /* backend + model + 7 arenas + staging */
}
END_TEST

static Suite *bert_train_suite(void)
{
    Suite *s = suite_create("bert_train");
    TCase *tc = tcase_create("train");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_memorise_batch);
    tcase_add_test(tc, test_threads_agree);
    tcase_add_test(tc, test_dropout_reproducible);
    tcase_add_test(tc, test_dropout_streams_fixed);
    tcase_add_test(tc, test_grad_accumulates);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_bad_inputs);
    tcase_add_test(tc, test_unsupported_backend);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(bert_train_suite)
