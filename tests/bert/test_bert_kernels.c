/*
 * test_bert_kernels.c - the CPU kernels of struct tunep_kernels, one by one:
 * hand-computable values first (LayerNorm of [1,2,3,4], softmax of equal
 * logits, GELU at 0 and +-1, cross-entropy of a one-hot-like prediction,
 * one AdamW step), then finite-difference gradient checks of every backward
 * kernel in double precision (L = sum g * f(x), central differences;
 * parameter gradients accumulated into non-zero values, activation
 * gradients written over non-zero values), then float kernels against double
 * kernels, and OpenBLAS GEMM against the naive loop.
 */
#include <math.h>
#include <string.h>

#include "check_util.h"
#include "bert_test_util.h"
#include "models/bert/bert_rng.h"
#include "models/cpu/cpu_backend.h"
#include "models/cpu/cpu_matmul.h"

static struct tunep_backend *be;
static const struct tunep_kernels *KF;
static const struct tunep_kernels_f64 *KD;

/* Test buffers are tracked and released by the fixture's teardown. */
#define MAX_TRACKED 1024
static void *tracked[MAX_TRACKED];
static int ntracked;

static void *track(void *p)
{
    ck_assert_ptr_nonnull(p);
    ck_assert_int_lt(ntracked, MAX_TRACKED);
    tracked[ntracked++] = p;
    return p;
}

static void setup(void)
{
    ck_assert_int_eq(tunep_cpu_backend_new(2, &be, NULL), TUNE_OK);
    KF = be->kernels;
    KD = be->kernels_f64;
}

static void teardown(void)
{
    tunep_cpu_backend_free(be);
    be = NULL;
    while (ntracked > 0)
        free(tracked[--ntracked]);
}

/* Loop tests (_i = enum tunep_cpu_isa) point KF at that level's float
 * table; a level this build or CPU lacks is skipped, said on stderr. */
static int use_isa(int isa)
{
    KF = tunep_cpu_kernels_for((enum tunep_cpu_isa)isa);
    if (!KF)
        fprintf(stderr, "(float kernels '%s' not available here: skipped)\n",
                tunep_cpu_isa_name((enum tunep_cpu_isa)isa));
    return KF != NULL;
}

static double *dalloc(size_t n)
{
    return track(calloc(n ? n : 1, sizeof(double)));
}

static float *to_f(const double *x, size_t n)
{
    float *p = track(calloc(n ? n : 1, sizeof(float)));
    for (size_t i = 0; i < n; i++)
        p[i] = (float)x[i];
    return p;
}

static double *to_d(const float *x, size_t n)
{
    double *p = dalloc(n);
    for (size_t i = 0; i < n; i++)
        p[i] = (double)x[i];
    return p;
}

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* Analytic gradient = value after a backward call minus the random value the
 * gradient buffer held before it, which also checks that kernels add. */
static double *minus(const double *after, const double *before, size_t n)
{
    double *d = dalloc(n);
    for (size_t i = 0; i < n; i++)
        d[i] = after[i] - before[i];
    return d;
}

static double *dup_d(const double *x, size_t n)
{
    double *p = dalloc(n);
    memcpy(p, x, n * sizeof(double));
    return p;
}

/* Central differences at h = 1e-6: truncation h^2 f'''/6 ~ 1e-12 and rounding
 * eps |L| / h ~ 1e-10 for |L| ~ 1, both far below the 1e-6 pass mark. */
#define GC_H   1e-6
#define GC_TOL 1e-6

/* ---- hand-computable values ---------------------------------------------- */

START_TEST(test_layernorm_values)
{
    if (!use_isa(_i))
        return;
    double x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 1, 1}, b[4] = {0, 0, 0, 0}, out[4], mean, rstd;
    ck_assert_int_eq(KD->layernorm_fwd(be->ctx, out, &mean, &rstd, x, w, b, 1, 4, 1e-12), TUNE_OK);
    /* mean 2.5, biased variance 1.25: (x - 2.5) / sqrt(1.25) */
    const double want[4] = {-1.3416407864998738, -0.4472135954999579, 0.4472135954999579,
                            1.3416407864998738};
    ck_assert_double_eq_tol(mean, 2.5, 1e-15);
    ck_assert_double_eq_tol(rstd, 1.0 / sqrt(1.25), 1e-12);
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq_tol(out[i], want[i], 1e-12);
    /* float: within a few float ulps */
    float xf[4] = {1, 2, 3, 4}, wf[4] = {2, 2, 2, 2}, bf[4] = {1, 1, 1, 1}, of[4], mf, rf;
    ck_assert_int_eq(KF->layernorm_fwd(be->ctx, of, &mf, &rf, xf, wf, bf, 1, 4, 1e-12), TUNE_OK);
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq_tol((double)of[i], 2 * want[i] + 1, 1e-6);
}
END_TEST

START_TEST(test_softmax_equal_logits)
{
    /* q = 0 makes every score 0: attention is uniform over the valid keys. */
    enum { B = 2, T = 4, C = 4, NH = 2 };
    double q[B * T * C] = {0}, k[B * T * C], v[B * T * C], out[B * T * C];
    double att[B * NH * T * T], att_drop[B * NH * T * T];
    int32_t mask[B * T] = {1, 1, 1, 1, 1, 1, 0, 0};
    struct test_rng r = {1};
    test_fill(&r, k, B * T * C, -1, 1);
    test_fill(&r, v, B * T * C, -1, 1);
    ck_assert_int_eq(
        KD->attention_fwd(be->ctx, out, att, att_drop, q, k, v, mask, B, T, C, NH, C, 0.0, 0, 0),
        TUNE_OK);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++)
                for (int j = 0; j < T; j++) {
                    double want = b == 0 ? 0.25 : j < 2 ? 0.5 : 0.0;
                    ck_assert_double_eq_tol(att[((b * NH + h) * T + i) * T + j], want, 1e-15);
                }
    /* out = mean of the valid values of each head */
    for (int c = 0; c < C; c++) {
        double want = (v[(1 * T + 0) * C + c] + v[(1 * T + 1) * C + c]) / 2;
        ck_assert_double_eq_tol(out[(1 * T + 3) * C + c], want, 1e-14);
    }
    /* cross-entropy of K equal logits: probabilities 1/K, loss log K */
    double logits[3] = {0.7, 0.7, 0.7}, probs[3], loss;
    int32_t label = 2;
    ck_assert_int_eq(KD->softmax_xent_fwd(be->ctx, &loss, probs, logits, &label, 1, 3), TUNE_OK);
    ck_assert_double_eq_tol(loss, log(3.0), 1e-15);
    for (int j = 0; j < 3; j++)
        ck_assert_double_eq_tol(probs[j], 1.0 / 3, 1e-15);
}
END_TEST

START_TEST(test_gelu_values)
{
    if (!use_isa(_i))
        return;
    /* GELU(x) = x Phi(x); GELU'(x) = Phi(x) + x phi(x). Phi(1) = 0.841344746068543,
     * phi(1) = 0.241970724519143 (standard normal tables). */
    double x[3] = {0.0, 1.0, -1.0}, y[3], dx[3] = {0, 0, 0}, one[3] = {1, 1, 1};
    ck_assert_int_eq(KD->gelu_fwd(be->ctx, y, x, 3), TUNE_OK);
    ck_assert_double_eq_tol(y[0], 0.0, 1e-15);
    ck_assert_double_eq_tol(y[1], 0.8413447460685429, 1e-15);
    ck_assert_double_eq_tol(y[2], -0.15865525393145707, 1e-15);
    ck_assert_int_eq(KD->gelu_bwd(be->ctx, dx, one, x, 3), TUNE_OK);
    ck_assert_double_eq_tol(dx[0], 0.5, 1e-15);
    ck_assert_double_eq_tol(dx[1], 0.8413447460685429 + 0.24197072451914337, 1e-14);
    ck_assert_double_eq_tol(dx[2], 0.15865525393145707 - 0.24197072451914337, 1e-14);
    float xf[3] = {0.0f, 1.0f, -1.0f}, yf[3];
    ck_assert_int_eq(KF->gelu_fwd(be->ctx, yf, xf, 3), TUNE_OK);
    ck_assert_double_eq_tol((double)yf[1], 0.8413447460685429, 1e-7);
    ck_assert_double_eq_tol((double)yf[2], -0.15865525393145707, 1e-7);
}
END_TEST

START_TEST(test_xent_one_hot)
{
    /* logits (10, 0, 0): p = (1, e^-10, e^-10) / (1 + 2 e^-10) */
    double logits[6] = {10, 0, 0, 10, 0, 0}, probs[6], loss[2];
    int32_t labels[2] = {0, 1};
    ck_assert_int_eq(KD->softmax_xent_fwd(be->ctx, loss, probs, logits, labels, 2, 3), TUNE_OK);
    ck_assert_double_eq_tol(loss[0], log1p(2 * exp(-10.0)), 1e-18);
    ck_assert_double_eq_tol(loss[1], 10 + log1p(2 * exp(-10.0)), 1e-13);
    /* gradient: p - onehot, times dloss */
    double dl[6] = {0}, dloss[2] = {1.0, 0.5};
    ck_assert_int_eq(KD->softmax_xent_bwd(be->ctx, dl, dloss, probs, labels, 2, 3), TUNE_OK);
    double pbig = 1 / (1 + 2 * exp(-10.0)), psmall = exp(-10.0) * pbig;
    ck_assert_double_eq_tol(dl[0], pbig - 1, 1e-15);
    ck_assert_double_eq_tol(dl[1], psmall, 1e-15);
    ck_assert_double_eq_tol(dl[3], 0.5 * pbig, 1e-15);
    ck_assert_double_eq_tol(dl[4], 0.5 * (psmall - 1), 1e-15);
    /* float: the large logit must not overflow or lose the small loss */
    float lf[3] = {100.0f, 0.0f, 0.0f}, pf[3], lossf;
    int32_t l0 = 0;
    ck_assert_int_eq(KF->softmax_xent_fwd(be->ctx, &lossf, pf, lf, &l0, 1, 3), TUNE_OK);
    ck_assert(isfinite(lossf) && lossf >= 0.0f && lossf < 1e-30f);
    /* a confident float prediction keeps its small loss to float precision */
    float lc[2] = {12.0f, 0.0f}, pc[2], lossc;
    ck_assert_int_eq(KF->softmax_xent_fwd(be->ctx, &lossc, pc, lc, &l0, 1, 2), TUNE_OK);
    ck_assert_double_eq_tol((double)lossc, log1p(exp(-12.0)), 1e-7 * log1p(exp(-12.0)));
}
END_TEST

START_TEST(test_adamw_values)
{
    /* Step 1 of AdamW is closed-form: m^ = g, v^ = g^2, so
     * p1 = p0 (1 - lr wd) - lr g / (|g| + eps). */
    double p[2] = {1.0, -2.0}, m[2] = {0, 0}, v[2] = {0, 0}, g[2] = {0.5, -3.0};
    double lr = 0.1, wd = 0.01, eps = 1e-8;
    ck_assert_int_eq(KD->adamw_step(be->ctx, p, m, v, g, 2, lr, 0.9, 0.999, eps, wd, 1.0, 1),
                     TUNE_OK);
    ck_assert_double_eq_tol(p[0], 1.0 * (1 - lr * wd) - lr * 0.5 / (0.5 + eps), 1e-15);
    ck_assert_double_eq_tol(p[1], -2.0 * (1 - lr * wd) + lr * 3.0 / (3.0 + eps), 1e-15);
    ck_assert_double_eq_tol(m[0], 0.05, 1e-16);
    ck_assert_double_eq_tol(v[1], 0.001 * 9.0, 1e-16);
    /* Step 2, by the textbook formula (Loshchilov & Hutter, torch docs). */
    double g2[2] = {-0.25, 1.0}, p1 = p[0];
    ck_assert_int_eq(KD->adamw_step(be->ctx, p, m, v, g2, 2, lr, 0.9, 0.999, eps, wd, 1.0, 2),
                     TUNE_OK);
    double m2 = 0.9 * 0.05 + 0.1 * -0.25, v2 = 0.999 * 0.00025 + 0.001 * 0.0625;
    double mhat = m2 / (1 - 0.81), vhat = v2 / (1 - 0.999 * 0.999);
    ck_assert_double_eq_tol(p[0], p1 * (1 - lr * wd) - lr * mhat / (sqrt(vhat) + eps), 1e-12);
    /* grad_scale (clipping) scales the gradient before the moments. */
    double q[1] = {0.0}, mq[1] = {0}, vq[1] = {0}, gq[1] = {4.0};
    ck_assert_int_eq(KD->adamw_step(be->ctx, q, mq, vq, gq, 1, lr, 0.9, 0.999, eps, 0.0, 0.25, 1),
                     TUNE_OK);
    ck_assert_double_eq_tol(mq[0], 0.1 * 1.0, 1e-16);
    ck_assert_double_eq_tol(vq[0], 0.001 * 1.0, 1e-16);
}
END_TEST

START_TEST(test_grad_sumsq)
{
    if (!use_isa(_i))
        return;
    /* 1.2 M elements: crosses the 2^20-element groups of the reduction. */
    size_t n = 1200003;
    float *g = malloc(n * sizeof(float));
    ck_assert_ptr_nonnull(g);
    struct test_rng r = {7};
    double want = 0.0;
    for (size_t i = 0; i < n; i++) {
        g[i] = (float)test_rng_uniform(&r, -1, 1);
        want += (double)g[i] * (double)g[i];
    }
    double got2, got1;
    ck_assert_int_eq(KF->grad_sumsq(be->ctx, &got2, g, n), TUNE_OK);
    struct tunep_backend *be1;
    ck_assert_int_eq(tunep_cpu_backend_new(1, &be1, NULL), TUNE_OK);
    ck_assert_int_eq(KF->grad_sumsq(be1->ctx, &got1, g, n), TUNE_OK);
    tunep_cpu_backend_free(be1);
    /* double accumulation of 1.2e6 terms ~ 4e5: rounding ~ n eps |sum| ~ 1e-10 relative */
    ck_assert_double_eq_tol(got2, want, 1e-9 * want);
    ck_assert(got1 == got2); /* fixed order: independent of the thread count */
    free(g);
}
END_TEST

START_TEST(test_dropout_mask)
{
    if (!use_isa(_i))
        return;
    /* The kernel's mask is tunep_rng_u32_at(seed, stream, i) >= threshold, and
     * the kept fraction is 1 - p within binomial noise. */
    size_t n = 200000;
    double p = 0.3;
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    ck_assert(x && y);
    for (size_t i = 0; i < n; i++)
        x[i] = 1.0f;
    ck_assert_int_eq(KF->dropout_fwd(be->ctx, y, x, NULL, n, p, 42, 7), TUNE_OK);
    uint32_t thr = tunep_dropout_threshold(p);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        int keep = tunep_rng_u32_at(42, 7, i) >= thr;
        ck_assert_int_eq(keep, y[i] != 0.0f);
        if (keep) {
            ck_assert_double_eq_tol((double)y[i], 1.0 / 0.7, 1e-6);
            kept++;
        }
    }
    /* binomial sd = sqrt(n p (1-p)) = 205; allow 5 sd */
    double expect = (double)n * (1 - p);
    ck_assert(fabs((double)kept - expect) < 5 * sqrt((double)n * p * (1 - p)));
    free(x);
    free(y);
}
END_TEST

START_TEST(test_backend_alloc)
{
    /* Small blocks are 64-byte aligned; arena-sized ones (>= 8 MiB) 2 MiB
     * aligned for huge pages; both usable to their last byte and freed. */
    const size_t sizes[] = {1, 1000, ((size_t)8 << 20) - 1, ((size_t)8 << 20) + 12345};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        void *p = NULL;
        ck_assert_int_eq(be->alloc(be->ctx, sizes[i], &p, NULL), TUNE_OK);
        size_t align = sizes[i] >= ((size_t)8 << 20) ? ((size_t)2 << 20) : 64;
        ck_assert_uint_eq((uintptr_t)p % align, 0);
        ck_assert_int_eq(be->memzero(be->ctx, p, sizes[i], NULL), TUNE_OK);
        unsigned char *c = p;
        ck_assert(c[0] == 0 && c[sizes[i] - 1] == 0);
        c[sizes[i] - 1] = 7;
        be->free(be->ctx, p);
    }
}
END_TEST

/* ---- finite-difference gradient checks (double) -------------------------- */

struct ln_case {
    int N, C;
    double *x, *w, *b, *out, *mean, *rstd, *g;
};

static double ln_loss(void *p)
{
    struct ln_case *c = p;
    KD->layernorm_fwd(be->ctx, c->out, c->mean, c->rstd, c->x, c->w, c->b, c->N, c->C, 1e-12);
    return dot(c->g, c->out, (size_t)c->N * c->C);
}

START_TEST(test_gradcheck_layernorm)
{
    struct test_rng r = {11};
    struct ln_case c = {.N = 6, .C = 7};
    size_t n = (size_t)c.N * c.C;
    c.x = dalloc(n), c.w = dalloc(c.C), c.b = dalloc(c.C), c.out = dalloc(n), c.g = dalloc(n);
    c.mean = dalloc(c.N), c.rstd = dalloc(c.N);
    test_fill(&r, c.x, n, -2, 2);
    test_fill(&r, c.w, c.C, 0.5, 1.5);
    test_fill(&r, c.b, c.C, -0.5, 0.5);
    test_fill(&r, c.g, n, -1, 1);
    double *dx0 = dalloc(n), *dw0 = dalloc(c.C), *db0 = dalloc(c.C);
    test_fill(&r, dx0, n, -1, 1);
    test_fill(&r, dw0, c.C, -1, 1);
    test_fill(&r, db0, c.C, -1, 1);
    double *dx = dup_d(dx0, n), *dw = dup_d(dw0, c.C), *db = dup_d(db0, c.C);
    ln_loss(&c);
    ck_assert_int_eq(
        KD->layernorm_bwd(be->ctx, dx, dw, db, c.g, c.x, c.w, c.mean, c.rstd, c.N, c.C), TUNE_OK);
    double *ax = dx, *aw = minus(dw, dw0, c.C), *ab = minus(db, db0, c.C); /* dx written */
    ck_assert(test_gradcheck("layernorm x", ln_loss, &c, c.x, n, ax, GC_H) < GC_TOL);
    ck_assert(test_gradcheck("layernorm w", ln_loss, &c, c.w, c.C, aw, GC_H) < GC_TOL);
    ck_assert(test_gradcheck("layernorm b", ln_loss, &c, c.b, c.C, ab, GC_H) < GC_TOL);
}
END_TEST

struct mm_case {
    int N, IC, OC;
    double *x, *w, *b, *out, *g;
};

static double mm_loss(void *p)
{
    struct mm_case *c = p;
    KD->matmul_fwd(be->ctx, c->out, c->x, c->w, c->b, c->N, c->IC, c->OC);
    return dot(c->g, c->out, (size_t)c->N * c->OC);
}

START_TEST(test_gradcheck_matmul)
{
    struct test_rng r = {12};
    struct mm_case c = {.N = 5, .IC = 7, .OC = 6};
    size_t nx = (size_t)c.N * c.IC, nw = (size_t)c.OC * c.IC, no = (size_t)c.N * c.OC;
    c.x = dalloc(nx), c.w = dalloc(nw), c.b = dalloc(c.OC), c.out = dalloc(no), c.g = dalloc(no);
    test_fill(&r, c.x, nx, -1, 1);
    test_fill(&r, c.w, nw, -1, 1);
    test_fill(&r, c.b, c.OC, -1, 1);
    test_fill(&r, c.g, no, -1, 1);
    double *dx0 = dalloc(nx), *dw0 = dalloc(nw), *db0 = dalloc(c.OC);
    test_fill(&r, dx0, nx, -1, 1);
    test_fill(&r, dw0, nw, -1, 1);
    test_fill(&r, db0, c.OC, -1, 1);
    double *dx = dup_d(dx0, nx), *dw = dup_d(dw0, nw), *db = dup_d(db0, c.OC);
    ck_assert_int_eq(KD->matmul_bwd(be->ctx, dx, dw, db, c.g, c.x, c.w, c.N, c.IC, c.OC, 1),
                     TUNE_OK);
    double *ax = minus(dx, dx0, nx), *aw = minus(dw, dw0, nw), *ab = minus(db, db0, c.OC);
    ck_assert(test_gradcheck("matmul x", mm_loss, &c, c.x, nx, ax, GC_H) < GC_TOL);
    /* accumulate = 0: dinp written over its old values; dw, db still added */
    double *dxw = dup_d(dx0, nx), *dw2 = dup_d(dw0, nw);
    ck_assert_int_eq(KD->matmul_bwd(be->ctx, dxw, dw2, NULL, c.g, c.x, c.w, c.N, c.IC, c.OC, 0),
                     TUNE_OK);
    ck_assert(test_gradcheck("matmul x (written)", mm_loss, &c, c.x, nx, dxw, GC_H) < GC_TOL);
    ck_assert(test_gradcheck("matmul w (dinp written)", mm_loss, &c, c.w, nw, minus(dw2, dw0, nw),
                             GC_H) < GC_TOL);
    ck_assert(test_gradcheck("matmul w", mm_loss, &c, c.w, nw, aw, GC_H) < GC_TOL);
    ck_assert(test_gradcheck("matmul b", mm_loss, &c, c.b, c.OC, ab, GC_H) < GC_TOL);
}
END_TEST

struct emb_case {
    int B, T, C, V, P, TV;
    int32_t *ids, *types;
    double *wte, *wpe, *wtt, *out, *g;
};

static double emb_loss(void *p)
{
    struct emb_case *c = p;
    KD->embed_fwd(be->ctx, c->out, c->ids, c->types, c->wte, c->wpe, c->wtt, c->B, c->T, c->C);
    return dot(c->g, c->out, (size_t)c->B * c->T * c->C);
}

START_TEST(test_gradcheck_embed)
{
    struct test_rng r = {13};
    struct emb_case c = {.B = 2, .T = 4, .C = 5, .V = 6, .P = 5, .TV = 2};
    int32_t ids[8] = {3, 1, 3, 0, 5, 3, 2, 2}, types[8] = {0, 0, 1, 1, 0, 1, 1, 0};
    c.ids = ids, c.types = types;
    size_t nte = (size_t)c.V * c.C, npe = (size_t)c.P * c.C, ntt = (size_t)c.TV * c.C;
    size_t no = (size_t)c.B * c.T * c.C;
    c.wte = dalloc(nte), c.wpe = dalloc(npe), c.wtt = dalloc(ntt), c.out = dalloc(no);
    c.g = dalloc(no);
    test_fill(&r, c.wte, nte, -1, 1);
    test_fill(&r, c.wpe, npe, -1, 1);
    test_fill(&r, c.wtt, ntt, -1, 1);
    test_fill(&r, c.g, no, -1, 1);
    double *d0te = dalloc(nte), *d0pe = dalloc(npe), *d0tt = dalloc(ntt);
    test_fill(&r, d0te, nte, -1, 1);
    test_fill(&r, d0pe, npe, -1, 1);
    test_fill(&r, d0tt, ntt, -1, 1);
    double *dte = dup_d(d0te, nte), *dpe = dup_d(d0pe, npe), *dtt = dup_d(d0tt, ntt);
    ck_assert_int_eq(KD->embed_bwd(be->ctx, dte, dpe, dtt, c.g, c.ids, c.types, c.B, c.T, c.C),
                     TUNE_OK);
    double *ate = minus(dte, d0te, nte), *ape = minus(dpe, d0pe, npe), *att = minus(dtt, d0tt, ntt);
    ck_assert(test_gradcheck("embed word", emb_loss, &c, c.wte, nte, ate, GC_H) < GC_TOL);
    ck_assert(test_gradcheck("embed pos", emb_loss, &c, c.wpe, npe, ape, GC_H) < GC_TOL);
    ck_assert(test_gradcheck("embed type", emb_loss, &c, c.wtt, ntt, att, GC_H) < GC_TOL);
    /* rows of tokens that do not occur get no gradient: id 4, position 4 */
    for (int ch = 0; ch < c.C; ch++) {
        ck_assert(ate[4 * c.C + ch] == 0.0);
        ck_assert(ape[4 * c.C + ch] == 0.0);
    }
}
END_TEST

struct att_case {
    int B, T, C, NH;
    double p;
    int32_t *mask;
    double *q, *k, *v, *out, *att, *att_drop, *g_out;
};

static double att_loss(void *p)
{
    struct att_case *c = p;
    KD->attention_fwd(be->ctx, c->out, c->att, c->att_drop, c->q, c->k, c->v, c->mask, c->B, c->T,
                      c->C, c->NH, c->C, c->p, 99, 5);
    size_t no = (size_t)c->B * c->T * c->C;
    return dot(c->g_out, c->out, no);
}

static void gradcheck_attention(double p)
{
    struct test_rng r = {14};
    /* batch 1 has two padding positions, batch 2 is all padding */
    int32_t mask[3 * 5] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0};
    struct att_case c = {.B = 3, .T = 5, .C = 8, .NH = 2, .p = p, .mask = mask};
    size_t n = (size_t)c.B * c.T * c.C, na = (size_t)c.B * c.NH * c.T * c.T;
    c.q = dalloc(n), c.k = dalloc(n), c.v = dalloc(n), c.out = dalloc(n);
    c.att = dalloc(na), c.att_drop = dalloc(na), c.g_out = dalloc(n);
    test_fill(&r, c.q, n, -1.5, 1.5);
    test_fill(&r, c.k, n, -1.5, 1.5);
    test_fill(&r, c.v, n, -1, 1);
    test_fill(&r, c.g_out, n, -1, 1);
    double *dq0 = dalloc(n), *dk0 = dalloc(n), *dv0 = dalloc(n);
    test_fill(&r, dq0, n, -1, 1);
    test_fill(&r, dk0, n, -1, 1);
    test_fill(&r, dv0, n, -1, 1);
    double *dq = dup_d(dq0, n), *dk = dup_d(dk0, n), *dv = dup_d(dv0, n);
    /* scratch gradients, written over whatever they held */
    double *datt = dalloc(na), *ddrop = dalloc(na), *dpre = dalloc(na);
    test_fill(&r, datt, na, -1, 1);
    test_fill(&r, ddrop, na, -1, 1);
    test_fill(&r, dpre, na, -1, 1);
    att_loss(&c);
    if (p > 0) {
        size_t dropped = 0;
        for (size_t i = 0; i < na; i++)
            dropped += c.att[i] != 0.0 && c.att_drop[i] == 0.0;
        ck_assert(dropped > 10); /* the check must see dropped elements */
    }
    ck_assert_int_eq(KD->attention_bwd(be->ctx, dq, dk, dv, dpre, datt, ddrop, c.g_out, c.q, c.k,
                                       c.v, c.att, c.att_drop, c.mask, c.B, c.T, c.C, c.NH, c.C,
                                       c.p, 99, 5),
                     TUNE_OK);
    double *aq = dq, *ak = dk, *av = dv; /* written over dq0, dk0, dv0 */
    ck_assert(test_gradcheck("attention q", att_loss, &c, c.q, n, aq, GC_H) < GC_TOL);
    ck_assert(test_gradcheck("attention k", att_loss, &c, c.k, n, ak, GC_H) < GC_TOL);
    ck_assert(test_gradcheck("attention v", att_loss, &c, c.v, n, av, GC_H) < GC_TOL);
    /* padding keys of batch 1 (positions 3, 4) get exactly zero key/value gradient */
    for (int t = 3; t < 5; t++)
        for (int ch = 0; ch < c.C; ch++) {
            ck_assert(ak[(1 * 5 + t) * 8 + ch] == 0.0);
            ck_assert(av[(1 * 5 + t) * 8 + ch] == 0.0);
        }
}

START_TEST(test_gradcheck_attention)
{
    gradcheck_attention(0.0);
}
END_TEST

START_TEST(test_gradcheck_attention_dropout)
{
    gradcheck_attention(0.3);
}
END_TEST

struct gelu_case {
    size_t n;
    double *x, *y, *g;
};

static double gelu_loss(void *p)
{
    struct gelu_case *c = p;
    KD->gelu_fwd(be->ctx, c->y, c->x, c->n);
    return dot(c->g, c->y, c->n);
}

START_TEST(test_gradcheck_gelu)
{
    struct test_rng r = {15};
    struct gelu_case c = {.n = 64};
    c.x = dalloc(c.n), c.y = dalloc(c.n), c.g = dalloc(c.n);
    test_fill(&r, c.x, c.n, -4, 4);
    test_fill(&r, c.g, c.n, -1, 1);
    double *d0 = dalloc(c.n);
    test_fill(&r, d0, c.n, -1, 1);
    double *d = dup_d(d0, c.n);
    ck_assert_int_eq(KD->gelu_bwd(be->ctx, d, c.g, c.x, c.n), TUNE_OK);
    double *a = d; /* written over d0 */
    ck_assert(test_gradcheck("gelu", gelu_loss, &c, c.x, c.n, a, GC_H) < GC_TOL);
}
END_TEST

struct xent_case {
    int B, K;
    int32_t *labels;
    double *logits, *losses, *probs, *g;
};

static double xent_loss(void *p)
{
    struct xent_case *c = p;
    KD->softmax_xent_fwd(be->ctx, c->losses, c->probs, c->logits, c->labels, c->B, c->K);
    return dot(c->g, c->losses, (size_t)c->B);
}

START_TEST(test_gradcheck_xent)
{
    struct test_rng r = {16};
    int32_t labels[4] = {2, 0, 4, 1};
    struct xent_case c = {.B = 4, .K = 5, .labels = labels};
    size_t n = (size_t)c.B * c.K;
    c.logits = dalloc(n), c.probs = dalloc(n), c.losses = dalloc(c.B), c.g = dalloc(c.B);
    test_fill(&r, c.logits, n, -3, 3);
    test_fill(&r, c.g, c.B, -1, 1);
    double *d0 = dalloc(n);
    test_fill(&r, d0, n, -1, 1);
    double *d = dup_d(d0, n);
    xent_loss(&c);
    ck_assert_int_eq(KD->softmax_xent_bwd(be->ctx, d, c.g, c.probs, c.labels, c.B, c.K), TUNE_OK);
    double *a = d; /* written over d0 */
    ck_assert(test_gradcheck("softmax_xent", xent_loss, &c, c.logits, n, a, GC_H) < GC_TOL);
}
END_TEST

struct pool_case {
    int B, T, C;
    double *x, *w, *b, *out, *pre, *g;
};

static double pool_loss(void *p)
{
    struct pool_case *c = p;
    KD->pooler_fwd(be->ctx, c->out, c->pre, c->x, c->w, c->b, c->B, c->T, c->C);
    return dot(c->g, c->out, (size_t)c->B * c->C);
}

START_TEST(test_gradcheck_pooler)
{
    struct test_rng r = {17};
    struct pool_case c = {.B = 3, .T = 4, .C = 6};
    size_t nx = (size_t)c.B * c.T * c.C, nw = (size_t)c.C * c.C, no = (size_t)c.B * c.C;
    c.x = dalloc(nx), c.w = dalloc(nw), c.b = dalloc(c.C), c.out = dalloc(no);
    c.pre = dalloc(no), c.g = dalloc(no);
    test_fill(&r, c.x, nx, -1, 1);
    test_fill(&r, c.w, nw, -0.7, 0.7);
    test_fill(&r, c.b, c.C, -0.5, 0.5);
    test_fill(&r, c.g, no, -1, 1);
    double *dx0 = dalloc(nx), *dw0 = dalloc(nw), *db0 = dalloc(c.C);
    test_fill(&r, dx0, nx, -1, 1);
    test_fill(&r, dw0, nw, -1, 1);
    test_fill(&r, db0, c.C, -1, 1);
    double *dx = dup_d(dx0, nx), *dw = dup_d(dw0, nw), *db = dup_d(db0, c.C), *dpre = dalloc(no);
    pool_loss(&c);
    ck_assert_int_eq(KD->pooler_bwd(be->ctx, dx, dw, db, dpre, c.g, c.out, c.x, c.w, c.B, c.T, c.C),
                     TUNE_OK);
    /* dx written over dx0, 0 beyond t = 0 */
    double *ax = dx, *aw = minus(dw, dw0, nw), *ab = minus(db, db0, c.C);
    ck_assert(test_gradcheck("pooler x", pool_loss, &c, c.x, nx, ax, GC_H) < GC_TOL);
    ck_assert(test_gradcheck("pooler w", pool_loss, &c, c.w, nw, aw, GC_H) < GC_TOL);
    ck_assert(test_gradcheck("pooler b", pool_loss, &c, c.b, c.C, ab, GC_H) < GC_TOL);
}
END_TEST

struct drop_case {
    size_t n;
    double p;
    double *x, *res, *y, *g;
};

static double drop_loss(void *p)
{
    struct drop_case *c = p;
    KD->dropout_fwd(be->ctx, c->y, c->x, c->res, c->n, c->p, 3, 77);
    return dot(c->g, c->y, c->n);
}

START_TEST(test_gradcheck_dropout)
{
    struct test_rng r = {18};
    struct drop_case c = {.n = 61, .p = 0.25};
    c.x = dalloc(c.n), c.res = dalloc(c.n), c.y = dalloc(c.n), c.g = dalloc(c.n);
    test_fill(&r, c.x, c.n, -1, 1);
    test_fill(&r, c.res, c.n, -1, 1);
    test_fill(&r, c.g, c.n, -1, 1);
    double *dx0 = dalloc(c.n), *dr0 = dalloc(c.n);
    test_fill(&r, dx0, c.n, -1, 1);
    test_fill(&r, dr0, c.n, -1, 1);
    double *dx = dup_d(dx0, c.n), *dr = dup_d(dr0, c.n);
    ck_assert_int_eq(KD->dropout_bwd(be->ctx, dx, dr, c.g, c.n, c.p, 3, 77), TUNE_OK);
    double *ax = dx, *ar = dr; /* written over dx0, dr0 */
    ck_assert(test_gradcheck("dropout x", drop_loss, &c, c.x, c.n, ax, GC_H) < GC_TOL);
    ck_assert(test_gradcheck("dropout residual", drop_loss, &c, c.res, c.n, ar, GC_H) < GC_TOL);
    size_t zeros = 0;
    for (size_t i = 0; i < c.n; i++)
        zeros += ax[i] == 0.0;
    ck_assert(zeros > 5 && zeros < 30); /* ~15 of 61 dropped */
}
END_TEST

/* ---- float kernels against double kernels -------------------------------- */

/*
 * Tolerance for float vs double: t_eff = rtol (|ref| + rms(ref)) with rtol
 * 1e-5. The float kernels round each element op to 2^-24 = 6e-8 and their
 * GEMMs accumulate K <= 128 float products, a random-walk error of about
 * sqrt(K) 6e-8 = 7e-7 relative to the typical term; 1e-5 leaves a 10x margin.
 * The rms term is the atol: elements much smaller than the rest come out of
 * cancellation and carry the absolute error of their terms.
 */
#define FD_RTOL 1e-5

static size_t cmp_fd(const char *name, const float *got, const double *ref, size_t n)
{
    double ss = 0.0;
    for (size_t i = 0; i < n; i++)
        ss += ref[i] * ref[i];
    double rms = sqrt(ss / (double)n);
    double *g = to_d(got, n);
    return test_compare(name, g, ref, n, FD_RTOL * rms, FD_RTOL);
}

START_TEST(test_float_vs_double)
{
    if (!use_isa(_i))
        return;
    /* shapes that take the threaded paths (>= 16384 elements, split GEMMs) */
    enum { B = 2, T = 64, C = 128, NH = 4, I = 256, N = B * T };
    struct test_rng r = {21};
    size_t nx = (size_t)N * C, nh = (size_t)N * I, na = (size_t)B * NH * T * T;
    double *x = dalloc(nx), *w = dalloc((size_t)I * C), *b = dalloc(I), *g = dalloc(nh);
    double *lw = dalloc(C), *lb = dalloc(C);
    test_fill(&r, x, nx, -2, 2);
    test_fill(&r, w, (size_t)I * C, -0.1, 0.1);
    test_fill(&r, b, I, -0.5, 0.5);
    test_fill(&r, g, nh, -1, 1);
    test_fill(&r, lw, C, 0.5, 1.5);
    test_fill(&r, lb, C, -0.5, 0.5);
    float *xf = to_f(x, nx), *wf = to_f(w, (size_t)I * C), *bf = to_f(b, I), *gf = to_f(g, nh);
    float *lwf = to_f(lw, C), *lbf = to_f(lb, C);
    size_t bad = 0;

    /* Linear fwd/bwd (N,C) -> (N,I) */
    double *o = dalloc(nh), *dx = dalloc(nx), *dw = dalloc((size_t)I * C), *db = dalloc(I);
    float *of = to_f(o, nh), *dxf = to_f(dx, nx), *dwf = to_f(dw, (size_t)I * C),
          *dbf = to_f(db, I);
    KD->matmul_fwd(be->ctx, o, x, w, b, N, C, I);
    KF->matmul_fwd(be->ctx, of, xf, wf, bf, N, C, I);
    bad += cmp_fd("matmul_fwd", of, o, nh);
    KD->matmul_bwd(be->ctx, dx, dw, db, g, x, w, N, C, I, 1);
    KF->matmul_bwd(be->ctx, dxf, dwf, dbf, gf, xf, wf, N, C, I, 1);
    bad += cmp_fd("matmul_bwd dinp", dxf, dx, nx);
    bad += cmp_fd("matmul_bwd dw", dwf, dw, (size_t)I * C);
    bad += cmp_fd("matmul_bwd db", dbf, db, I);

    /* LayerNorm */
    double *ln = dalloc(nx), *mean = dalloc(N), *rstd = dalloc(N), *dl = dalloc(nx);
    double *dlw = dalloc(C), *dlb = dalloc(C);
    float *lnf = to_f(ln, nx), *meanf = to_f(mean, N), *rstdf = to_f(rstd, N), *dlf = to_f(dl, nx);
    float *dlwf = to_f(dlw, C), *dlbf = to_f(dlb, C);
    KD->layernorm_fwd(be->ctx, ln, mean, rstd, x, lw, lb, N, C, 1e-12);
    KF->layernorm_fwd(be->ctx, lnf, meanf, rstdf, xf, lwf, lbf, N, C, 1e-12);
    bad += cmp_fd("layernorm_fwd", lnf, ln, nx);
    KD->layernorm_bwd(be->ctx, dl, dlw, dlb, g, x, lw, mean, rstd, N, C);
    KF->layernorm_bwd(be->ctx, dlf, dlwf, dlbf, gf, xf, lwf, meanf, rstdf, N, C);
    bad += cmp_fd("layernorm_bwd dinp", dlf, dl, nx);
    bad += cmp_fd("layernorm_bwd dw", dlwf, dlw, C);
    bad += cmp_fd("layernorm_bwd db", dlbf, dlb, C);

    /* GELU */
    double *ge = dalloc(nh), *dge = dalloc(nh);
    float *gef = to_f(ge, nh), *dgef = to_f(dge, nh);
    KD->gelu_fwd(be->ctx, ge, o, nh);
    KF->gelu_fwd(be->ctx, gef, of, nh);
    bad += cmp_fd("gelu_fwd", gef, ge, nh);
    KD->gelu_bwd(be->ctx, dge, g, o, nh);
    KF->gelu_bwd(be->ctx, dgef, gf, of, nh);
    bad += cmp_fd("gelu_bwd", dgef, dge, nh);

    /* attention (q, k, v = slices of the Linear output), padding in batch 1,
     * dropout on: float and double must drop the same elements */
    int32_t mask[B * T];
    for (int i = 0; i < B * T; i++)
        mask[i] = i < T + 40;
    double *q = dalloc(nx), *k = dalloc(nx), *v = dalloc(nx), *ao = dalloc(nx);
    for (size_t i = 0; i < nx; i++) {
        q[i] = x[i];
        k[i] = x[(i + 17) % nx];
        v[i] = x[(i + 101) % nx] * 0.5;
    }
    double *att = dalloc(na), *atd = dalloc(na), *dq = dalloc(nx), *dk = dalloc(nx);
    double *dv = dalloc(nx), *dpre = dalloc(na), *datt = dalloc(na), *datd = dalloc(na);
    float *qf = to_f(q, nx), *kf = to_f(k, nx), *vf = to_f(v, nx), *aof = to_f(ao, nx);
    float *attf = to_f(att, na), *atdf = to_f(atd, na), *dqf = to_f(dq, nx), *dkf = to_f(dk, nx);
    float *dvf = to_f(dv, nx), *dpref = to_f(dpre, na), *dattf = to_f(datt, na);
    float *datdf = to_f(datd, na);
    KD->attention_fwd(be->ctx, ao, att, atd, q, k, v, mask, B, T, C, NH, C, 0.1, 5, 6);
    KF->attention_fwd(be->ctx, aof, attf, atdf, qf, kf, vf, mask, B, T, C, NH, C, 0.1, 5, 6);
    bad += cmp_fd("attention_fwd out", aof, ao, nx);
    bad += cmp_fd("attention_fwd att", attf, att, na);
    bad += cmp_fd("attention_fwd att_drop", atdf, atd, na);
    KD->attention_bwd(be->ctx, dq, dk, dv, dpre, datt, datd, g, q, k, v, att, atd, mask, B, T, C,
                      NH, C, 0.1, 5, 6);
    KF->attention_bwd(be->ctx, dqf, dkf, dvf, dpref, dattf, datdf, gf, qf, kf, vf, attf, atdf, mask,
                      B, T, C, NH, C, 0.1, 5, 6);
    bad += cmp_fd("attention_bwd dq", dqf, dq, nx);
    bad += cmp_fd("attention_bwd dk", dkf, dk, nx);
    bad += cmp_fd("attention_bwd dv", dvf, dv, nx);

    /* pooler, dropout, embeddings, cross-entropy, AdamW */
    double *po = dalloc((size_t)B * C), *pp = dalloc((size_t)B * C), *pdx = dalloc(nx);
    double *pdw = dalloc((size_t)C * C), *pdb = dalloc(C), *pdpre = dalloc((size_t)B * C);
    float *pof = to_f(po, (size_t)B * C), *ppf = to_f(pp, (size_t)B * C), *pdxf = to_f(pdx, nx);
    float *pdwf = to_f(pdw, (size_t)C * C), *pdbf = to_f(pdb, C);
    float *pdpref = to_f(pdpre, (size_t)B * C);
    KD->pooler_fwd(be->ctx, po, pp, x, w, b, B, T, C);
    KF->pooler_fwd(be->ctx, pof, ppf, xf, wf, bf, B, T, C);
    bad += cmp_fd("pooler_fwd", pof, po, (size_t)B * C);
    KD->pooler_bwd(be->ctx, pdx, pdw, pdb, pdpre, g, po, x, w, B, T, C);
    KF->pooler_bwd(be->ctx, pdxf, pdwf, pdbf, pdpref, gf, pof, xf, wf, B, T, C);
    bad += cmp_fd("pooler_bwd dinp", pdxf, pdx, nx);
    bad += cmp_fd("pooler_bwd dw", pdwf, pdw, (size_t)C * C);

    double *dro = dalloc(nx), *ddx = dalloc(nx), *ddr = dalloc(nx);
    float *drof = to_f(dro, nx), *ddxf = to_f(ddx, nx), *ddrf = to_f(ddr, nx);
    KD->dropout_fwd(be->ctx, dro, x, q, nx, 0.1, 8, 9);
    KF->dropout_fwd(be->ctx, drof, xf, qf, nx, 0.1, 8, 9);
    bad += cmp_fd("dropout_fwd", drof, dro, nx);
    KD->dropout_bwd(be->ctx, ddx, ddr, g, nx, 0.1, 8, 9);
    KF->dropout_bwd(be->ctx, ddxf, ddrf, gf, nx, 0.1, 8, 9);
    bad += cmp_fd("dropout_bwd", ddxf, ddx, nx);

    int32_t ids[B * T], types[B * T];
    for (int i = 0; i < B * T; i++) {
        ids[i] = (i * 7) % 50;
        types[i] = i % 3 == 0;
    }
    double *eo = dalloc(nx), *dte = dalloc(50 * C), *dpe = dalloc((size_t)T * C);
    double *dtt = dalloc(2 * C);
    float *eof = to_f(eo, nx), *dtef = to_f(dte, 50 * C), *dpef = to_f(dpe, (size_t)T * C);
    float *dttf = to_f(dtt, 2 * C);
    KD->embed_fwd(be->ctx, eo, ids, types, x, w, b, B, T, C);
    KF->embed_fwd(be->ctx, eof, ids, types, xf, wf, bf, B, T, C);
    bad += cmp_fd("embed_fwd", eof, eo, nx);
    KD->embed_bwd(be->ctx, dte, dpe, dtt, x, ids, types, B, T, C);
    KF->embed_bwd(be->ctx, dtef, dpef, dttf, xf, ids, types, B, T, C);
    bad += cmp_fd("embed_bwd word", dtef, dte, 50 * C);
    bad += cmp_fd("embed_bwd pos", dpef, dpe, (size_t)T * C);

    int32_t labels[B * T];
    for (int i = 0; i < B * T; i++)
        labels[i] = i % 5;
    double *xl = dalloc((size_t)N * 5), *xp = dalloc((size_t)N * 5), *xd = dalloc((size_t)N * 5);
    float *xlf = to_f(xl, (size_t)N * 5), *xpf = to_f(xp, (size_t)N * 5);
    float *xdf = to_f(xd, (size_t)N * 5);
    KD->softmax_xent_fwd(be->ctx, xl, xp, x, labels, N, 5);
    KF->softmax_xent_fwd(be->ctx, xlf, xpf, xf, labels, N, 5);
    bad += cmp_fd("softmax_xent_fwd loss", xlf, xl, N);
    KD->softmax_xent_bwd(be->ctx, xd, g, xp, labels, N, 5);
    KF->softmax_xent_bwd(be->ctx, xdf, gf, xpf, labels, N, 5);
    bad += cmp_fd("softmax_xent_bwd", xdf, xd, (size_t)N * 5);

    double *am = dalloc(nx), *av = dalloc(nx), *ap = dup_d(x, nx);
    float *amf = to_f(am, nx), *avf = to_f(av, nx), *apf = to_f(ap, nx);
    for (long s = 1; s <= 3; s++) {
        KD->adamw_step(be->ctx, ap, am, av, q, nx, 1e-2, 0.9, 0.999, 1e-8, 0.01, 0.5, s);
        KF->adamw_step(be->ctx, apf, amf, avf, qf, nx, 1e-2, 0.9, 0.999, 1e-8, 0.01, 0.5, s);
    }
    bad += cmp_fd("adamw param", apf, ap, nx);
    bad += cmp_fd("adamw v", avf, av, nx);
    ck_assert_uint_eq(bad, 0);
}
END_TEST

/* ---- instruction-set levels --------------------------------------------- */

START_TEST(test_philox_fill)
{
    /* Each level's Philox path against the scalar generator: starts inside a
     * block, short and long runs (vector bodies and scalar tails), and a run
     * across block 2^32, where the counter's high word carries. */
    tunep_cpu_philox_fill_fn fill = tunep_cpu_philox_fill_for((enum tunep_cpu_isa)_i);
    if (!use_isa(_i))
        return;
    ck_assert(fill != NULL);
    const uint64_t starts[] = {
        0, 1, 2, 3, 5, 64, 1021, ((uint64_t)1 << 34) - 130, ((uint64_t)1 << 34) - 3};
    const size_t lens[] = {1, 3, 4, 63, 64, 65, 129, 1000};
    uint32_t r[1000];
    struct test_rng rng = {99};
    for (size_t a = 0; a < sizeof starts / sizeof starts[0]; a++)
        for (size_t b = 0; b < sizeof lens / sizeof lens[0]; b++) {
            uint64_t seed = test_rng_u64(&rng), stream = test_rng_u64(&rng);
            fill(r, starts[a], lens[b], seed, stream);
            for (size_t j = 0; j < lens[b]; j++)
                ck_assert_uint_eq(r[j], tunep_rng_u32_at(seed, stream, starts[a] + j));
        }
}
END_TEST

/* The next n floats of an output area; with `from`, they start as its copy. */
static float *take(float *out, size_t *at, size_t n, const float *from)
{
    float *p = out + *at;
    *at += n;
    if (from)
        memcpy(p, from, n * sizeof(float));
    return p;
}

/* Every float kernel once on one shape; all outputs (and gradients, which
 * start from slices of the random g) laid end to end: in out those that
 * every level must compute bit for bit, in approx those of GELU and
 * attention, whose exp/erf polynomials use fused multiply-adds where the
 * level has them (CPU_MADD). *ret_n, *ret_napprox: floats written. */
static void run_all_float(const struct tunep_kernels *k, float *out, float *approx, int B, int T,
                          int C, int NH, int I, size_t *ret_n, size_t *ret_napprox)
{
    size_t N = (size_t)B * T, nx = N * C, nh = N * I, na = (size_t)B * NH * T * T, at = 0, an = 0;
    size_t nw = (size_t)I * C, nb = (size_t)B * C;
    struct test_rng r = {77};
    double *x = dalloc(nx), *w = dalloc(nw), *b = dalloc(I), *g = dalloc(nh);
    test_fill(&r, x, nx, -2, 2);
    test_fill(&r, w, nw, -0.1, 0.1);
    test_fill(&r, b, I, -0.5, 0.5);
    test_fill(&r, g, nh, -1, 1);
    float *xf = to_f(x, nx), *wf = to_f(w, nw), *bf = to_f(b, I), *gf = to_f(g, nh);
    float *qf = to_f(x, nx), *kf = to_f(g, nx), *vf = to_f(x, nx);
    for (size_t i = 0; i < nx; i++)
        vf[i] = xf[(i + 101) % nx] * 0.5f;
    int32_t *mask = track(calloc(N, sizeof(int32_t))), *ids = track(calloc(N, sizeof(int32_t)));
    int32_t *types = track(calloc(N, sizeof(int32_t))), *labels = track(calloc(N, sizeof(int32_t)));
    for (size_t i = 0; i < N; i++) {
        mask[i] = i < (size_t)T || i % (size_t)T < (size_t)T / 2 + 3; /* padding in batch 1 */
        ids[i] = (int32_t)((i * 7) % 50);
        types[i] = i % 3 == 0;
        labels[i] = (int32_t)(i % 5);
    }

    float *o = take(out, &at, nh, NULL);
    float *mdx = take(out, &at, nx, gf), *mdw = take(out, &at, nw, gf);
    float *mdb = take(out, &at, (size_t)I, gf);
    k->matmul_fwd(be->ctx, o, xf, wf, bf, (int)N, C, I);
    k->matmul_bwd(be->ctx, mdx, mdw, mdb, gf, xf, wf, (int)N, C, I, 1);

    float *ln = take(out, &at, nx, NULL), *mean = take(out, &at, N, NULL);
    float *rstd = take(out, &at, N, NULL), *ldx = take(out, &at, nx, gf);
    float *ldw = take(out, &at, (size_t)C, gf), *ldb = take(out, &at, (size_t)C, gf);
    k->layernorm_fwd(be->ctx, ln, mean, rstd, xf, wf, bf, (int)N, C, 1e-12);
    k->layernorm_bwd(be->ctx, ldx, ldw, ldb, gf, xf, wf, mean, rstd, (int)N, C);

    float *ge = take(approx, &an, nh, NULL), *gdx = take(approx, &an, nh, gf);
    k->gelu_fwd(be->ctx, ge, o, nh);
    k->gelu_bwd(be->ctx, gdx, gf, o, nh);

    float *ao = take(approx, &an, nx, NULL), *att = take(approx, &an, na, NULL);
    float *atd = take(approx, &an, na, NULL), *dq = take(approx, &an, nx, gf);
    float *dk = take(approx, &an, nx, gf), *dv = take(approx, &an, nx, gf);
    float *dpre = take(approx, &an, na, NULL), *datt = take(approx, &an, na, NULL);
    float *datd = take(approx, &an, na, NULL);
    k->attention_fwd(be->ctx, ao, att, atd, qf, kf, vf, mask, B, T, C, NH, C, 0.1, 5, 6);
    k->attention_bwd(be->ctx, dq, dk, dv, dpre, datt, datd, gf, qf, kf, vf, att, atd, mask, B, T, C,
                     NH, C, 0.1, 5, 6);

    float *po = take(out, &at, nb, NULL), *pp = take(out, &at, nb, NULL);
    float *pdx = take(out, &at, nx, gf), *pdw = take(out, &at, (size_t)C * C, gf);
    float *pdb = take(out, &at, (size_t)C, gf), *pdpre = take(out, &at, nb, NULL);
    k->pooler_fwd(be->ctx, po, pp, xf, wf, bf, B, T, C);
    k->pooler_bwd(be->ctx, pdx, pdw, pdb, pdpre, gf, po, xf, wf, B, T, C);

    float *dr1 = take(out, &at, nx, NULL), *dr2 = take(out, &at, nx, NULL);
    float *ddx = take(out, &at, nx, gf), *ddr = take(out, &at, nx, gf);
    k->dropout_fwd(be->ctx, dr1, xf, qf, nx, 0.1, 8, 9);
    k->dropout_fwd(be->ctx, dr2, xf, NULL, nx, 0.1, 8, 9);
    k->dropout_bwd(be->ctx, ddx, ddr, gf, nx, 0.1, 8, 9);

    float *eo = take(out, &at, nx, NULL), *dte = take(out, &at, (size_t)50 * C, gf);
    float *dpe = take(out, &at, (size_t)T * C, gf), *dtt = take(out, &at, (size_t)2 * C, gf);
    k->embed_fwd(be->ctx, eo, ids, types, xf, wf, gf, B, T, C); /* 2 type rows: 2C <= nh */
    k->embed_bwd(be->ctx, dte, dpe, dtt, xf, ids, types, B, T, C);

    float *xl = take(out, &at, N, NULL), *xp = take(out, &at, N * 5, NULL);
    float *xd = take(out, &at, N * 5, gf);
    k->softmax_xent_fwd(be->ctx, xl, xp, xf, labels, (int)N, 5);
    k->softmax_xent_bwd(be->ctx, xd, gf, xp, labels, (int)N, 5);

    float *ap = take(out, &at, nx, xf), *am = take(out, &at, nx, NULL);
    float *av = take(out, &at, nx, NULL);
    memset(am, 0, nx * sizeof(float));
    memset(av, 0, nx * sizeof(float));
    for (long st = 1; st <= 2; st++)
        k->adamw_step(be->ctx, ap, am, av, gf, nx, 1e-2, 0.9, 0.999, 1e-8, 0.01, 0.5, st);
    double ss;
    k->grad_sumsq(be->ctx, &ss, gf, nh);
    memcpy(take(out, &at, 2, NULL), &ss, sizeof ss);
    *ret_n = at;
    *ret_napprox = an;
}

START_TEST(test_isa_same_bits)
{
    /* Each level against the generic kernels: bit for bit, except GELU and
     * attention (CPU_MADD), which may differ by the rounding of fused
     * multiply-adds, a few float ulps, and stay within 1e-5 (the attention
     * backward sums T products of such values; a wrong tail, mask or lane
     * gives errors of order 1). Shapes: odd sizes (vector tails, rows that
     * start inside a Philox block), padding, dropout on, and one shape large
     * enough for the threaded paths. Attention dropout masks must agree
     * exactly: att_drop is zero exactly where generic's is. */
    if (!use_isa(_i))
        return;
    const int shapes[][5] = {{2, 37, 40, 2, 72}, {2, 64, 128, 4, 256}}; /* B T C NH I */
    for (size_t sh = 0; sh < 2; sh++) {
        const int *d = shapes[sh];
        size_t N = (size_t)d[0] * d[1], na = (size_t)d[0] * d[3] * d[1] * d[1];
        size_t cap =
            40 * N * (size_t)(d[2] + d[4]) + 8 * na + (size_t)60 * d[2] + (size_t)d[2] * d[2] + 64;
        float *want = track(calloc(cap, sizeof(float))), *got = track(calloc(cap, sizeof(float)));
        float *want_ap = track(calloc(cap, sizeof(float)));
        float *got_ap = track(calloc(cap, sizeof(float)));
        size_t n1, n2, a1, a2;
        run_all_float(&tunep_cpu_kernels, want, want_ap, d[0], d[1], d[2], d[3], d[4], &n1, &a1);
        run_all_float(KF, got, got_ap, d[0], d[1], d[2], d[3], d[4], &n2, &a2);
        ck_assert_uint_le(n1, cap);
        ck_assert_uint_le(a1, cap);
        ck_assert_uint_eq(n1, n2);
        ck_assert_uint_eq(a1, a2);
        size_t diff = 0, zeros = 0;
        for (size_t i = 0; i < n1; i++)
            if (memcmp(&want[i], &got[i], sizeof(float)) != 0 && diff++ < 5)
                fprintf(stderr, "  %s: output %zu is %.9g, generic %.9g\n",
                        tunep_cpu_isa_name((enum tunep_cpu_isa)_i), i, (double)got[i],
                        (double)want[i]);
        ck_assert_uint_eq(diff, 0);
        for (size_t i = 0; i < a1; i++)
            zeros += (want_ap[i] == 0.0f) != (got_ap[i] == 0.0f);
        ck_assert_uint_eq(zeros, 0);
        double *wd = dalloc(a1), *gd = dalloc(a1);
        for (size_t i = 0; i < a1; i++) {
            wd[i] = (double)want_ap[i];
            gd[i] = (double)got_ap[i];
        }
        ck_assert_uint_eq(test_compare("gelu/attention", gd, wd, a1, 1e-5, 1e-5), 0);
    }
}
END_TEST

/* ---- GEMM ---------------------------------------------------------------- */

START_TEST(test_gemm_vs_naive)
{
    /* Every transposition, odd sizes, beta 0 and 1, serial and split (M*N*K
     * above the split threshold). Both accumulate K <= 300 products; float
     * rounding ~ sqrt(K) 6e-8 |terms|, so t_eff = 1e-5 (|ref| + 1). */
    struct test_rng r = {31};
    const int shapes[][3] = {{7, 5, 3}, {130, 67, 40}, {33, 150, 300}};
    for (size_t s = 0; s < 3; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int threads = 1; threads <= 2; threads++) {
                    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
                    double *ad = dalloc(na), *bd = dalloc(nb), *cd = dalloc(nc);
                    test_fill(&r, ad, na, -1, 1);
                    test_fill(&r, bd, nb, -1, 1);
                    test_fill(&r, cd, nc, -1, 1);
                    float *a = to_f(ad, na), *b = to_f(bd, nb), *c1 = to_f(cd, nc);
                    float *c2 = to_f(cd, nc);
                    int lda = ta ? M : K, ldb = tb ? K : N;
                    float beta = threads == 2 ? 1.0f : 0.0f;
                    tunep_cpu_gemm(threads, ta, tb, M, N, K, 0.5f, a, lda, b, ldb, beta, c1, N);
                    tunep_cpu_gemm_naive(ta, tb, M, N, K, 0.5f, a, lda, b, ldb, beta, c2, N);
                    double *g1 = to_d(c1, nc), *g2 = to_d(c2, nc);
                    ck_assert_uint_eq(test_compare("gemm", g1, g2, nc, 1e-5, 1e-5), 0);
                    /* the double path is the same loop as the oracle */
                    double *c3 = dup_d(cd, nc);
                    tunep_cpu_gemm_f64(threads, ta, tb, M, N, K, 0.5, ad, lda, bd, ldb,
                                       (double)beta, c3, N);
                    ck_assert_uint_eq(test_compare("gemm_f64", c3, g2, nc, 1e-5, 1e-5), 0);
                }
    }
}
END_TEST

/* qkv (B,T,3C) rows: [q row | k row | v row] from three (B,T,C) arrays. */
static float *pack_rows(const float *q, const float *k, const float *v, size_t rows, int C)
{
    float *p = track(calloc(rows * 3 * (size_t)C, sizeof(float)));
    for (size_t r = 0; r < rows; r++) {
        memcpy(p + r * 3 * C, q + r * C, (size_t)C * sizeof(float));
        memcpy(p + r * 3 * C + C, k + r * C, (size_t)C * sizeof(float));
        memcpy(p + r * 3 * C + 2 * C, v + r * C, (size_t)C * sizeof(float));
    }
    return p;
}

/* Third `part` (0 q, 1 k, 2 v) of each (3C) row equals x's (C) row, bit for bit. */
static int same_part(const float *qkv, int part, const float *x, size_t rows, int C)
{
    for (size_t r = 0; r < rows; r++)
        if (memcmp(qkv + r * 3 * C + (size_t)part * C, x + r * C, (size_t)C * sizeof(float)))
            return 0;
    return 1;
}

/*
 * The attention kernels read q, k, v (and write dq, dk, dv) with rows ld
 * apart: on one (B,T,3C) buffer of query | key | value rows, as the model's
 * fused projection leaves them, they give the same bits as on three (B,T,C)
 * arrays, with dropout and padding (the GEMMs see the same operands, only
 * their leading dimension differs). Every float ISA level.
 */
START_TEST(test_attention_row_stride)
{
    if (!use_isa(_i))
        return;
    struct test_rng r = {21};
    enum { B = 2, T = 7, C = 12, NH = 3 };
    int32_t mask[B * T] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0};
    size_t n = (size_t)B * T * C, na = (size_t)B * NH * T * T;
    double *x = dalloc(4 * n + na);
    test_fill(&r, x, 4 * n + na, -1, 1);
    const float *q = to_f(x, n), *k = to_f(x + n, n), *v = to_f(x + 2 * n, n);
    const float *g = to_f(x + 3 * n, n);
    const float *qkv = pack_rows(q, k, v, (size_t)B * T, C);
    float *o1 = to_f(x, n), *o3 = to_f(x, n);
    float *a1 = to_f(x, na), *a3 = to_f(x, na), *ad1 = to_f(x, na), *ad3 = to_f(x, na);
    ck_assert_int_eq(
        KF->attention_fwd(be->ctx, o1, a1, ad1, q, k, v, mask, B, T, C, NH, C, 0.2, 5, 6), TUNE_OK);
    ck_assert_int_eq(KF->attention_fwd(be->ctx, o3, a3, ad3, qkv, qkv + C, qkv + 2 * C, mask, B, T,
                                       C, NH, 3 * C, 0.2, 5, 6),
                     TUNE_OK);
    ck_assert(memcmp(o1, o3, n * sizeof(float)) == 0);
    ck_assert(memcmp(a1, a3, na * sizeof(float)) == 0);
    ck_assert(memcmp(ad1, ad3, na * sizeof(float)) == 0);
    /* backward from non-zero incoming values; the packed gradient's rows
     * hold the same values as the three arrays */
    float *dq = to_f(x + n, n), *dk = to_f(x + 2 * n, n), *dv = to_f(x, n);
    float *dqkv = pack_rows(dq, dk, dv, (size_t)B * T, C);
    float *dp1 = to_f(x + 4 * n, na), *dp3 = to_f(x + 4 * n, na);
    float *da1 = to_f(x, na), *da3 = to_f(x, na), *dd1 = to_f(x + n, na), *dd3 = to_f(x + n, na);
    ck_assert_int_eq(KF->attention_bwd(be->ctx, dq, dk, dv, dp1, da1, dd1, g, q, k, v, a1, ad1,
                                       mask, B, T, C, NH, C, 0.2, 5, 6),
                     TUNE_OK);
    ck_assert_int_eq(KF->attention_bwd(be->ctx, dqkv, dqkv + C, dqkv + 2 * C, dp3, da3, dd3, g, qkv,
                                       qkv + C, qkv + 2 * C, a3, ad3, mask, B, T, C, NH, 3 * C, 0.2,
                                       5, 6),
                     TUNE_OK);
    ck_assert(same_part(dqkv, 0, dq, (size_t)B * T, C));
    ck_assert(same_part(dqkv, 1, dk, (size_t)B * T, C));
    ck_assert(same_part(dqkv, 2, dv, (size_t)B * T, C));
    ck_assert(memcmp(dp1, dp3, na * sizeof(float)) == 0);
    ck_assert(memcmp(da1, da3, na * sizeof(float)) == 0);
}
END_TEST

static Suite *bert_kernels_suite(void)
{
    Suite *s = suite_create("bert_kernels");
    TCase *tc = tcase_create("values");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_layernorm_values, 0, TUNEP_CPU_ISA_COUNT);
    tcase_add_test(tc, test_softmax_equal_logits);
    tcase_add_loop_test(tc, test_gelu_values, 0, TUNEP_CPU_ISA_COUNT);
    tcase_add_test(tc, test_xent_one_hot);
    tcase_add_test(tc, test_adamw_values);
    tcase_add_loop_test(tc, test_grad_sumsq, 0, TUNEP_CPU_ISA_COUNT);
    tcase_add_loop_test(tc, test_dropout_mask, 0, TUNEP_CPU_ISA_COUNT);
    tcase_add_test(tc, test_backend_alloc);
    suite_add_tcase(s, tc);

    tc = tcase_create("gradcheck");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_gradcheck_layernorm);
    tcase_add_test(tc, test_gradcheck_matmul);
    tcase_add_test(tc, test_gradcheck_embed);
    tcase_add_test(tc, test_gradcheck_attention);
    tcase_add_test(tc, test_gradcheck_attention_dropout);
    tcase_add_test(tc, test_gradcheck_gelu);
    tcase_add_test(tc, test_gradcheck_xent);
    tcase_add_test(tc, test_gradcheck_pooler);
    tcase_add_test(tc, test_gradcheck_dropout);
    suite_add_tcase(s, tc);

    tc = tcase_create("precision");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_float_vs_double, 0, TUNEP_CPU_ISA_COUNT);
    tcase_add_test(tc, test_gemm_vs_naive);
    tcase_add_loop_test(tc, test_attention_row_stride, 0, TUNEP_CPU_ISA_COUNT);
    suite_add_tcase(s, tc);

    tc = tcase_create("isa");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_philox_fill, 0, TUNEP_CPU_ISA_COUNT);
    tcase_add_loop_test(tc, test_isa_same_bits, 0, TUNEP_CPU_ISA_COUNT);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(bert_kernels_suite)
