/*
 * test_cuda_model.c - whole training steps of the BERT model on the CUDA
 * backend against the CPU backend: the same initial weights (bit for bit),
 * the same eval and train-mode losses and logits (dropout on: the masks are
 * the same on both), every parameter gradient, the gradient norm and three
 * AdamW steps; two GPU runs give the same bits; two models trained at once
 * from two threads on one GPU (two trials sharing it, each on its stream)
 * each get what they get alone; TF32 stays close to fp32.
 *
 * Composite tolerances are NMSE budgets: fp32 kernels err by ~1e-6
 * relatively at most in these shapes (test_cuda_kernels measures each); a
 * 2-layer forward and backward chains about 50 of them, adding in
 * quadrature: (1.2e-5)^2 * 50 ~ 7e-9 <= 1e-8. Exits 77 without a device.
 */
#include <pthread.h>

#include "cuda_test_util.h"
#include "models/bert/bert.h"

enum { B = 6, T = 24, K = 3 };

static void small_config(struct tunep_bert_config *cfg)
{
    *cfg = (struct tunep_bert_config){.L = 2,
                                      .C = 64,
                                      .NH = 4,
                                      .I = 128,
                                      .P = 32,
                                      .V = 60,
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
        int len = 4 + (int)(test_rng_u64(&r) % (T - 3)); /* 4..T tokens, then padding */
        for (int t = 0; t < T; t++) {
            int i = b * T + t;
            d->mask[i] = t < len;
            d->ids[i] = t == 0 ? 1 : t < len ? 2 + (int32_t)(test_rng_u64(&r) % 58) : 0;
            d->types[i] = t >= len / 2 && t < len;
        }
        d->labels[b] = (int32_t)(test_rng_u64(&r) % K);
    }
    d->batch = (struct tunep_bert_batch){
        .B = B, .T = T, .ids = d->ids, .types = d->types, .mask = d->mask, .labels = d->labels};
}

static struct tunep_bert *new_model(struct tunep_backend *be)
{
    struct tunep_bert_config cfg;
    small_config(&cfg);
    struct tunep_bert *m = NULL;
    tune_error err = {0};
    ck_assert_msg(tunep_bert_new(&cfg, B, T, be, &m, &err) == TUNE_OK, "%s", err.text);
    ck_assert_int_eq(tunep_bert_init_weights(m, 7, &err), TUNE_OK);
    return m;
}

/* AdamW with eps = 1e-4: the first steps move every weight by ~lr sign(g)
 * when |g| >> eps, so a gradient that is rounding noise on both sides would
 * flip a whole lr between them; eps = 1e-4 keeps the update smooth there
 * (this tests the kernels, not the default). */
static void adam_opts(struct tunep_adamw *opt)
{
    tunep_adamw_default(opt);
    opt->eps = 1e-4;
    opt->clip_norm = 1.0;
    opt->weight_decay = 0.01;
}

/*
 * The key bias's gradient is zero in exact arithmetic: softmax is invariant
 * to a constant added to a row of scores, so each row of the scores'
 * gradient sums to zero, and dk_b[c] = sum over (b, h, i) of
 * q[b, i, c] sum_j dpreatt[b, h, i, j] / sqrt(HS) vanishes, masks and
 * attention dropout included. Both backends hold only rounding noise there
 * and a relative comparison of two noises means nothing, so each side is
 * held under a floor instead: `ratio` times the RMS of the query bias's
 * tensor of the same layer and arena on the CPU (same shape, a gradient
 * summed over the same B T rows), a scale the test does not have to guess.
 * A gradient that is really wrong (an index or transpose bug) is of the
 * query bias's order and lands far above the floor.
 */
static int check_floor(const char *name, const float *got, const float *ref, size_t n, double floor)
{
    double worst = 0.0;
    int finite = 1;
    for (size_t i = 0; i < n; i++) {
        finite &= isfinite(got[i]) && isfinite(ref[i]);
        worst = fmax(worst, fmax(fabs((double)got[i]), fabs((double)ref[i])));
    }
    int ok = finite && worst <= floor;
    fprintf(stderr, "  %-28s max |x| %10.3g (floor %.3g)%s\n", name, worst, floor,
            ok ? "" : " MISMATCH");
    return ok;
}

static double tensor_rms(struct tunep_bert *m, enum tunep_bert_arena which, enum bert_param id,
                         int l, size_t n)
{
    float *x = hbuf(n);
    tune_error err = {0};
    ck_assert_int_eq(tunep_bert_tensor_get(m, which, id, l, x, n, &err), TUNE_OK);
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * (double)x[i];
    return n ? sqrt(s / (double)n) : 0.0;
}

/* Every parameter tensor of arena `which` (params or grads), layer by layer;
 * the key bias against kb_ratio times the query bias's RMS (see check_floor)
 * when kb_ratio > 0. */
static int compare_arena(struct tunep_bert *gpu_m, struct tunep_bert *cpu_m,
                         enum tunep_bert_arena which, const char *what, double limit,
                         double kb_ratio)
{
    const struct tunep_bert_layout *lay = tunep_bert_layout_of(cpu_m);
    const struct tunep_bert_config *cfg = tunep_bert_config_of(cpu_m);
    int ok = 1;
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        size_t n = lay->param_size[id];
        int layers = tunep_bert_param_info[id].layered ? cfg->L : 1;
        for (int l = 0; l < layers; l++) {
            float *g = hbuf(n), *c = hbuf(n);
            tune_error err = {0};
            ck_assert_int_eq(
                tunep_bert_tensor_get(gpu_m, which, (enum bert_param)id, l, g, n, &err), TUNE_OK);
            ck_assert_int_eq(
                tunep_bert_tensor_get(cpu_m, which, (enum bert_param)id, l, c, n, &err), TUNE_OK);
            char name[96];
            snprintf(name, sizeof name, "%s %s[%d]", what, tunep_bert_param_info[id].field, l);
            if (id == BERT_P_K_B && kb_ratio > 0.0)
                ok &= check_floor(name, g, c, n,
                                  kb_ratio * tensor_rms(cpu_m, which, BERT_P_Q_B, l, n));
            else if (limit == 0.0)
                ok &= check_exact(name, g, c, n);
            else
                ok &= check_nmse(name, g, c, n, limit);
        }
    }
    return ok;
}

static void teardown(void)
{
    release_all();
}

START_TEST(same_init)
{
    struct tunep_bert *c = new_model(cpu_be), *g = new_model(gpu_be);
    /* weights are drawn on the host and uploaded: bit for bit */
    ck_assert(compare_arena(g, c, TUNEP_BERT_ARENA_PARAMS, "init", 0.0, 0.0));
    tunep_bert_free(g);
    tunep_bert_free(c);
}
END_TEST

START_TEST(eval_forward)
{
    struct tunep_bert *c = new_model(cpu_be), *g = new_model(gpu_be);
    struct data d;
    make_data(&d, 21);
    double lc = 0, lg = 0;
    tune_error err = {0};
    ck_assert_int_eq(tunep_bert_forward(c, &d.batch, 0, 0, &lc, &err), TUNE_OK);
    ck_assert_msg(tunep_bert_forward(g, &d.batch, 0, 0, &lg, &err) == TUNE_OK, "%s", err.text);
    fprintf(stderr, "  eval loss cpu %.9g gpu %.9g rel %.3g\n", lc, lg, fabs(lg - lc) / lc);
    ck_assert(fabs(lg - lc) <= 1e-5 * lc); /* the mean of B losses: sqrt(1e-8) */
    float lgc[B * K], lgg[B * K];
    ck_assert_int_eq(tunep_bert_logits(c, lgc, B * K, &err), TUNE_OK);
    ck_assert_int_eq(tunep_bert_logits(g, lgg, B * K, &err), TUNE_OK);
    ck_assert(check_nmse("eval logits", lgg, lgc, B * K, 1e-8));
    tunep_bert_free(g);
    tunep_bert_free(c);
}
END_TEST

/*
 * The key bias's floors (see check_floor), relative to the query bias:
 *  - gradient: its noise is at most ~eps times the sum of |terms| over the
 *    B T rows and T columns that cancel, eps B T T = 1.2e-7 * 3456 ~ 4e-4
 *    of the query bias's gradient scale; 1e-3 leaves margin on that bound.
 *  - Adam v: a running mean of squared gradients, so the square, 1e-6.
 *  - weights (zero at init, no weight decay): AdamW moves them by about
 *    lr |g| / eps per step while |g| << eps, and the query bias by up to lr,
 *    so their ratio is 1e-3 max(1, |g_q| / eps): 0.1 holds while the query
 *    bias's gradient stays under 100 eps = 1e-2, far above what a freshly
 *    initialised 64-wide model gives (the test prints both).
 */
#define KB_GRAD_RATIO  1e-3
#define KB_V_RATIO     1e-6
#define KB_PARAM_RATIO 0.1

/* Steps of zero_grad, train forward (dropout on), backward, AdamW; the first
 * step's gradients are compared tensor by tensor. */
START_TEST(training_steps)
{
    struct tunep_bert *c = new_model(cpu_be), *g = new_model(gpu_be);
    struct data d;
    make_data(&d, 22);
    struct tunep_adamw opt;
    adam_opts(&opt);
    tune_error err = {0};
    for (int step = 0; step < 3; step++) {
        double lc = 0, lg = 0, nc = 0, ng = 0;
        ck_assert_int_eq(tunep_bert_zero_grad(c, &err), TUNE_OK);
        ck_assert_int_eq(tunep_bert_zero_grad(g, &err), TUNE_OK);
        ck_assert_int_eq(tunep_bert_forward(c, &d.batch, 1, 100 + (uint64_t)step, &lc, &err),
                         TUNE_OK);
        ck_assert_msg(tunep_bert_forward(g, &d.batch, 1, 100 + (uint64_t)step, &lg, &err) ==
                          TUNE_OK,
                      "%s", err.text);
        ck_assert_int_eq(tunep_bert_backward(c, &err), TUNE_OK);
        ck_assert_msg(tunep_bert_backward(g, &err) == TUNE_OK, "%s", err.text);
        if (step == 0)
            ck_assert(compare_arena(g, c, TUNEP_BERT_ARENA_GRADS, "grad", 1e-8, KB_GRAD_RATIO));
        ck_assert_int_eq(tunep_bert_adamw_step(c, &opt, 1e-3, &nc, &err), TUNE_OK);
        ck_assert_msg(tunep_bert_adamw_step(g, &opt, 1e-3, &ng, &err) == TUNE_OK, "%s", err.text);
        fprintf(stderr, "  step %d loss cpu %.9g gpu %.9g rel %.3g | grad norm rel %.3g\n", step,
                lc, lg, fabs(lg - lc) / lc, fabs(ng - nc) / nc);
        ck_assert(fabs(lg - lc) <= 1e-4 * lc);
        ck_assert(fabs(ng - nc) <= 1e-4 * nc); /* sqrt of the gradients' NMSE budget */
    }
    ck_assert(compare_arena(g, c, TUNEP_BERT_ARENA_PARAMS, "after 3 steps", 1e-8, KB_PARAM_RATIO));
    ck_assert(compare_arena(g, c, TUNEP_BERT_ARENA_ADAM_V, "adam v", 1e-7, KB_V_RATIO));
    tunep_bert_free(g);
    tunep_bert_free(c);
}
END_TEST

/* Trains `steps` steps on be; the final parameters and the losses out. */
static tune_status train(struct tunep_backend *be, int steps, float *params, size_t n,
                         double *losses)
{
    struct tunep_bert_config cfg;
    small_config(&cfg);
    struct tunep_bert *m = NULL;
    tune_error err = {0};
    struct data d;
    make_data(&d, 23);
    struct tunep_adamw opt;
    adam_opts(&opt);
    tune_status st = tunep_bert_new(&cfg, B, T, be, &m, &err);
    if (!st)
        st = tunep_bert_init_weights(m, 9, &err);
    for (int s = 0; s < steps && !st; s++) {
        if (!(st = tunep_bert_zero_grad(m, &err)) &&
            !(st = tunep_bert_forward(m, &d.batch, 1, 200 + (uint64_t)s, &losses[s], &err)) &&
            !(st = tunep_bert_backward(m, &err)))
            st = tunep_bert_adamw_step(m, &opt, 1e-3, NULL, &err);
    }
    if (!st)
        st = be->download(be->ctx, params, tunep_bert_params_arena(m), n * sizeof(float), &err);
    tunep_bert_free(m);
    return st;
}

static size_t param_total(void)
{
    struct tunep_bert_config cfg;
    small_config(&cfg);
    struct tunep_bert_layout lay;
    ck_assert_int_eq(tunep_bert_layout_compute(&cfg, B, T, &lay, NULL), TUNE_OK);
    return lay.param_total;
}

START_TEST(two_runs_same_bits)
{
    size_t n = param_total();
    float *p1 = hbuf(n), *p2 = hbuf(n);
    double l1[4], l2[4];
    ck_assert_int_eq(train(gpu_be, 4, p1, n, l1), TUNE_OK);
    ck_assert_int_eq(train(gpu_be, 4, p2, n, l2), TUNE_OK);
    ck_assert(memcmp(l1, l2, sizeof l1) == 0);
    ck_assert(check_exact("params after 4 steps, twice", p2, p1, n));
}
END_TEST

struct job {
    struct tunep_backend *be;
    float *params;
    size_t n;
    double losses[4];
    tune_status st;
};

static void *job_main(void *v)
{
    struct job *j = v;
    j->st = train(j->be, 4, j->params, j->n, j->losses);
    return NULL;
}

/* Two trials sharing the GPU, each on its own backend (stream, cuBLAS handle,
 * scratch), at the same time from two threads. */
START_TEST(concurrent_models)
{
    size_t n = param_total();
    float *alone = hbuf(n);
    double la[4];
    ck_assert_int_eq(train(gpu_be, 4, alone, n, la), TUNE_OK);
    struct tunep_backend *other = NULL;
    struct tunep_cuda_options o = {.device = 0, .tf32 = 0};
    tune_error err = {0};
    ck_assert_msg(tunep_cuda_backend_new(&o, &other, &err) == TUNE_OK, "%s", err.text);
    struct job jobs[2] = {{gpu_be, hbuf(n), n, {0}, TUNE_OK}, {other, hbuf(n), n, {0}, TUNE_OK}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, job_main, &jobs[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(jobs[i].st, TUNE_OK);
        ck_assert(memcmp(jobs[i].losses, la, sizeof la) == 0);
        ck_assert(
            check_exact(i ? "concurrent model 2" : "concurrent model 1", jobs[i].params, alone, n));
    }
    tunep_cuda_backend_free(other);
}
END_TEST

/* TF32 GEMMs: losses within 1% of fp32 over 4 steps (inputs rounded to 2^-11
 * relatively; a 64-wide model's logits move by ~1e-3). */
START_TEST(tf32_training)
{
    size_t n = param_total();
    struct tunep_backend *tf = NULL;
    struct tunep_cuda_options o = {.device = 0, .tf32 = 1};
    tune_error err = {0};
    ck_assert_msg(tunep_cuda_backend_new(&o, &tf, &err) == TUNE_OK, "%s", err.text);
    double l32[4], ltf[4];
    ck_assert_int_eq(train(cpu_be, 4, hbuf(n), n, l32), TUNE_OK);
    ck_assert_int_eq(train(tf, 4, hbuf(n), n, ltf), TUNE_OK);
    for (int s = 0; s < 4; s++) {
        fprintf(stderr, "  tf32 step %d loss %.6f fp32 cpu %.6f rel %.3g\n", s, ltf[s], l32[s],
                fabs(ltf[s] - l32[s]) / l32[s]);
        ck_assert(fabs(ltf[s] - l32[s]) <= 1e-2 * l32[s]);
    }
    tunep_cuda_backend_free(tf);
}
END_TEST

static Suite *cuda_model_suite(void)
{
    Suite *s = suite_create("cuda_model");
    TCase *tc = tcase_create("model");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, same_init);
    tcase_add_test(tc, eval_forward);
    tcase_add_test(tc, training_steps);
    tcase_add_test(tc, two_runs_same_bits);
    tcase_add_test(tc, concurrent_models);
    tcase_add_test(tc, tf32_training);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CUDA_CHECK_MAIN(cuda_model_suite)
