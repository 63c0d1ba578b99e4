/*
 * test_cuda_kernels.c - every member of the CUDA kernel table against the
 * CPU reference (dav1d checkasm's call_ref/call_new, ggml's cross-backend
 * test) on the same seeded random inputs, forward and backward, at two
 * shapes: odd sizes (T, C and HS not multiples of 4 or 32) and one large
 * enough for several blocks, row blocks and sort chunks. Plus: dropout masks
 * equal to bert_rng.h's element by element, the TF32 option, bit-identical
 * repeated runs (no atomics), an out-of-memory allocation that leaves the
 * backend usable, and two backends driven from two threads at once.
 *
 * Tolerances (cuda_test_util.h): "exact" where both sides do the same
 * operations in the same order; otherwise c eps mag with c derived next to
 * each check from the accumulation lengths, or NMSE for composites. Backward
 * kernels start from random (non-zero) gradients, since they accumulate.
 * Exits 77 (skipped) without a CUDA device; runs without forking.
 */
#include <pthread.h>

#include "cuda_test_util.h"
#include "models/bert/bert_rng.h"

#define KC (cpu_be->kernels)
#define KG (gpu_be->kernels)
#define CC (cpu_be->ctx)
#define GC (gpu_be->ctx)

struct shape {
    int B, T, C, NH, I, V, K;
};

static const struct shape shapes[] = {
    {2, 7, 40, 4, 72, 10, 3},   /* HS = 10; N = 14 rows */
    {8, 64, 96, 3, 160, 30, 2}, /* HS = 32; N = 512 rows: 8 row blocks, 16 sort chunks */
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static void sync_gpu(void)
{
    tune_error err = {0};
    ck_assert_msg(gpu_be->sync(gpu_be->ctx, &err) == TUNE_OK, "sync: %s", err.text);
}

/* Calls a kernel and requires TUNE_OK, with the context's last error on failure. */
#define GPU_OK(call)                                                                               \
    do {                                                                                           \
        tune_status st_ = (call);                                                                  \
        ck_assert_msg(st_ == TUNE_OK, "%s: %s", #call,                                             \
                      tunep_cuda_ctx_last_error(gpu_be->ctx)->text);                               \
    } while (0)

static void teardown(void)
{
    release_all();
}

/* ---- embeddings ----------------------------------------------------------- */

START_TEST(embed)
{
    const struct shape *s = &shapes[_i];
    const int B = s->B, T = s->T, C = s->C, V = s->V, TV = 2, N = B * T;
    struct test_rng r = {100 + (uint64_t)_i};
    int32_t *ids = track(calloc((size_t)N, sizeof *ids), NULL);
    int32_t *types = track(calloc((size_t)N, sizeof *types), NULL);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int len = T - (b * 3) % (T / 2 + 1); /* the tail is padding, id 0 */
            ids[b * T + t] = t < len ? 1 + (int32_t)(test_rng_u64(&r) % (uint64_t)(V - 1)) : 0;
            types[b * T + t] = t >= len / 2 && t < len;
        }
    float *wte = hrand(&r, (size_t)V * C, -1, 1), *wpe = hrand(&r, (size_t)T * C, -1, 1);
    float *wtt = hrand(&r, (size_t)TV * C, -1, 1);
    float *out = hbuf((size_t)N * C);
    float *d_out = dup_f(out, (size_t)N * C);
    int32_t *d_ids = dup_i(ids, (size_t)N), *d_types = dup_i(types, (size_t)N);
    ck_assert_int_eq(KC->embed_fwd(CC, out, ids, types, wte, wpe, wtt, B, T, C), TUNE_OK);
    GPU_OK(KG->embed_fwd(GC, d_out, d_ids, d_types, dup_f(wte, (size_t)V * C),
                         dup_f(wpe, (size_t)T * C), dup_f(wtt, (size_t)TV * C), B, T, C));
    /* the same two additions in the same order */
    ck_assert(check_exact("embed_fwd out", down(d_out, (size_t)N * C), out, (size_t)N * C));

    float *dout = hrand(&r, (size_t)N * C, -1, 1);
    float *dwte = hrand(&r, (size_t)V * C, -1, 1), *dwpe = hrand(&r, (size_t)T * C, -1, 1);
    float *dwtt = hrand(&r, (size_t)TV * C, -1, 1);
    float *g_dwte = dup_f(dwte, (size_t)V * C), *g_dwpe = dup_f(dwpe, (size_t)T * C);
    float *g_dwtt = dup_f(dwtt, (size_t)TV * C);
    /* mag: |initial| + sum of |dout| over the tokens of each row */
    float *mag_te = hbuf((size_t)V * C), *mag_tt = hbuf((size_t)TV * C);
    for (size_t i = 0; i < (size_t)V * C; i++)
        mag_te[i] = fabsf(dwte[i]);
    for (size_t i = 0; i < (size_t)TV * C; i++)
        mag_tt[i] = fabsf(dwtt[i]);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            mag_te[(size_t)ids[n] * C + c] += fabsf(dout[(size_t)n * C + c]);
            mag_tt[(size_t)types[n] * C + c] += fabsf(dout[(size_t)n * C + c]);
        }
    ck_assert_int_eq(KC->embed_bwd(CC, dwte, dwpe, dwtt, dout, ids, types, B, T, C), TUNE_OK);
    GPU_OK(KG->embed_bwd(GC, g_dwte, g_dwpe, g_dwtt, dup_f(dout, (size_t)N * C), d_ids, d_types, B,
                         T, C));
    /* position rows: the CPU's order exactly */
    ck_assert(check_exact("embed_bwd dwpe", down(g_dwpe, (size_t)T * C), dwpe, (size_t)T * C));
    /* word/type rows: a row's tokens are summed as chunk partials (<= 32
     * terms) and then chunk by chunk (<= N/32), against the CPU's chain of up
     * to N terms: c = N + 32 + N/32 + 2. */
    double c = N + 32 + N / 32 + 2;
    ck_assert(
        check_mag("embed_bwd dwte", down(g_dwte, (size_t)V * C), dwte, mag_te, (size_t)V * C, c));
    ck_assert(
        check_mag("embed_bwd dwtt", down(g_dwtt, (size_t)TV * C), dwtt, mag_tt, (size_t)TV * C, c));
}
END_TEST

/* ---- LayerNorm ------------------------------------------------------------ */

START_TEST(layernorm)
{
    const struct shape *s = &shapes[_i];
    const int N = s->B * s->T, C = s->C;
    const size_t NC = (size_t)N * C;
    struct test_rng r = {200 + (uint64_t)_i};
    float *x = hrand(&r, NC, -2, 2);
    for (int n = 0; n < N; n++) /* rows with a non-zero mean */
        for (int c = 0; c < C; c++)
            x[(size_t)n * C + c] += (float)(n % 3);
    float *w = hrand(&r, (size_t)C, 0.5, 1.5), *b = hrand(&r, (size_t)C, -0.5, 0.5);
    float *out = hbuf(NC), *mean = hbuf((size_t)N), *rstd = hbuf((size_t)N);
    float *g_out = dup_f(out, NC), *g_mean = dup_f(mean, (size_t)N),
          *g_rstd = dup_f(rstd, (size_t)N);
    float *g_x = dup_f(x, NC), *g_w = dup_f(w, (size_t)C), *g_b = dup_f(b, (size_t)C);
    ck_assert_int_eq(KC->layernorm_fwd(CC, out, mean, rstd, x, w, b, N, C, 1e-12), TUNE_OK);
    GPU_OK(KG->layernorm_fwd(GC, g_out, g_mean, g_rstd, g_x, g_w, g_b, N, C, 1e-12));

    /* GPU sums: C/32 per lane, then a 5-level butterfly; CPU: double. */
    double cs = C / 32 + 8;
    float *mag_mean = hbuf((size_t)N), *mag_out = hbuf(NC);
    for (int n = 0; n < N; n++) {
        double sa = 0;
        for (int c = 0; c < C; c++)
            sa += fabs((double)x[(size_t)n * C + c]);
        mag_mean[n] = (float)(sa / C);
        for (int c = 0; c < C; c++) {
            size_t i = (size_t)n * C + c;
            double xhat = ((double)x[i] - (double)mean[n]) * (double)rstd[n];
            /* rstd's relative error hits |xhat w|; the mean's hits rstd |w| */
            mag_out[i] =
                (float)(fabs((double)w[c]) * (fabs(xhat) + (double)rstd[n] * (double)mag_mean[n]) +
                        fabs((double)b[c]));
        }
    }
    ck_assert(
        check_mag("layernorm_fwd mean", down(g_mean, (size_t)N), mean, mag_mean, (size_t)N, cs));
    /* variance: a second sum (cs), then sqrt and a division */
    ck_assert(check_mag("layernorm_fwd rstd", down(g_rstd, (size_t)N), rstd, NULL, (size_t)N,
                        2 * cs + 4));
    ck_assert(check_mag("layernorm_fwd out", down(g_out, NC), out, mag_out, NC, 2 * cs + 8));

    /* backward from the CPU's saved statistics on both sides */
    float *dout = hrand(&r, NC, -1, 1), *dinp = hrand(&r, NC, -1, 1);
    float *dw = hrand(&r, (size_t)C, -1, 1), *db = hrand(&r, (size_t)C, -1, 1);
    float *g_dinp = dup_f(dinp, NC), *g_dw = dup_f(dw, (size_t)C), *g_db = dup_f(db, (size_t)C);
    float *mag_dinp = hbuf(NC), *mag_dw = hbuf((size_t)C), *mag_db = hbuf((size_t)C);
    for (int c = 0; c < C; c++) {
        mag_dw[c] = fabsf(dw[c]);
        mag_db[c] = fabsf(db[c]);
    }
    for (int n = 0; n < N; n++) {
        double s_dn = 0, s_dnx = 0;
        for (int c = 0; c < C; c++) {
            size_t i = (size_t)n * C + c;
            double xhat = ((double)x[i] - (double)mean[n]) * (double)rstd[n];
            s_dn += fabs((double)dout[i] * (double)w[c]);
            s_dnx += fabs((double)dout[i] * (double)w[c] * xhat);
            mag_dw[c] += (float)fabs((double)dout[i] * xhat);
            mag_db[c] += fabsf(dout[i]);
        }
        for (int c = 0; c < C; c++) {
            size_t i = (size_t)n * C + c;
            double xhat = ((double)x[i] - (double)mean[n]) * (double)rstd[n];
            mag_dinp[i] = (float)(fabs((double)dinp[i]) +
                                  (double)rstd[n] * (fabs((double)dout[i] * (double)w[c]) +
                                                     s_dn / C + fabs(xhat) * s_dnx / C));
        }
    }
    float *g_mean2 = dup_f(mean, (size_t)N), *g_rstd2 = dup_f(rstd, (size_t)N);
    ck_assert_int_eq(KC->layernorm_bwd(CC, dinp, dw, db, dout, x, w, mean, rstd, N, C), TUNE_OK);
    GPU_OK(KG->layernorm_bwd(GC, g_dinp, g_dw, g_db, dup_f(dout, NC), g_x, g_w, g_mean2, g_rstd2, N,
                             C));
    ck_assert(check_mag("layernorm_bwd dinp", down(g_dinp, NC), dinp, mag_dinp, NC, cs + 16));
    /* column sums: a float chain of at most N/8 + 72 terms (reduce.cu) */
    double ccol = N / 8 + 80;
    ck_assert(check_mag("layernorm_bwd dw", down(g_dw, (size_t)C), dw, mag_dw, (size_t)C, ccol));
    ck_assert(check_mag("layernorm_bwd db", down(g_db, (size_t)C), db, mag_db, (size_t)C, ccol));
}
END_TEST

/* ---- Linear ---------------------------------------------------------------- */

/* One Linear of (N, IC) -> (N, OC), with or without bias, forward and backward. */
/* accumulate: matmul_bwd adds into dinp (1) or writes it (0), both sides
 * starting from the same non-zero values. */
static void linear_case(struct test_rng *r, int N, int IC, int OC, int bias, int accumulate,
                        const char *tag)
{
    char name[64];
    float *x = hrand(r, (size_t)N * IC, -1, 1), *w = hrand(r, (size_t)OC * IC, -1, 1);
    float *b = bias ? hrand(r, (size_t)OC, -1, 1) : NULL;
    float *out = hbuf((size_t)N * OC), *g_out = dup_f(out, (size_t)N * OC);
    float *g_x = dup_f(x, (size_t)N * IC), *g_w = dup_f(w, (size_t)OC * IC);
    ck_assert_int_eq(KC->matmul_fwd(CC, out, x, w, b, N, IC, OC), TUNE_OK);
    GPU_OK(KG->matmul_fwd(GC, g_out, g_x, g_w, b ? dup_f(b, (size_t)OC) : NULL, N, IC, OC));
    float *mag = hbuf((size_t)N * OC);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double m = b ? fabs((double)b[o]) : 0;
            for (int i = 0; i < IC; i++)
                m += fabs((double)x[(size_t)n * IC + i] * (double)w[(size_t)o * IC + i]);
            mag[(size_t)n * OC + o] = (float)m;
        }
    /* a dot product of IC terms plus the bias on each side: gamma_(IC+2) twice */
    snprintf(name, sizeof name, "matmul_fwd %s", tag);
    ck_assert(check_mag(name, down(g_out, (size_t)N * OC), out, mag, (size_t)N * OC, 2.0 * IC + 4));

    float *dout = hrand(r, (size_t)N * OC, -1, 1), *dinp = hrand(r, (size_t)N * IC, -1, 1);
    float *dw = hrand(r, (size_t)OC * IC, -1, 1), *db = bias ? hrand(r, (size_t)OC, -1, 1) : NULL;
    float *g_dinp = dup_f(dinp, (size_t)N * IC), *g_dw = dup_f(dw, (size_t)OC * IC);
    float *g_db = db ? dup_f(db, (size_t)OC) : NULL;
    float *m_dinp = hbuf((size_t)N * IC), *m_dw = hbuf((size_t)OC * IC), *m_db = hbuf((size_t)OC);
    for (int n = 0; n < N; n++)
        for (int i = 0; i < IC; i++) {
            double m = fabs((double)dinp[(size_t)n * IC + i]);
            for (int o = 0; o < OC; o++)
                m += fabs((double)dout[(size_t)n * OC + o] * (double)w[(size_t)o * IC + i]);
            m_dinp[(size_t)n * IC + i] = (float)m;
        }
    for (int o = 0; o < OC; o++) {
        for (int i = 0; i < IC; i++) {
            double m = fabs((double)dw[(size_t)o * IC + i]);
            for (int n = 0; n < N; n++)
                m += fabs((double)dout[(size_t)n * OC + o] * (double)x[(size_t)n * IC + i]);
            m_dw[(size_t)o * IC + i] = (float)m;
        }
        double m = db ? fabs((double)db[o]) : 0;
        for (int n = 0; n < N; n++)
            m += fabs((double)dout[(size_t)n * OC + o]);
        m_db[o] = (float)m;
    }
    ck_assert_int_eq(KC->matmul_bwd(CC, dinp, dw, db, dout, x, w, N, IC, OC, accumulate), TUNE_OK);
    GPU_OK(KG->matmul_bwd(GC, g_dinp, g_dw, g_db, dup_f(dout, (size_t)N * OC), g_x, g_w, N, IC, OC,
                          accumulate));
    snprintf(name, sizeof name, "matmul_bwd dinp %s", tag);
    ck_assert(
        check_mag(name, down(g_dinp, (size_t)N * IC), dinp, m_dinp, (size_t)N * IC, 2.0 * OC + 4));
    snprintf(name, sizeof name, "matmul_bwd dw %s", tag);
    ck_assert(check_mag(name, down(g_dw, (size_t)OC * IC), dw, m_dw, (size_t)OC * IC, 2.0 * N + 4));
    if (db) {
        snprintf(name, sizeof name, "matmul_bwd db %s", tag);
        ck_assert(check_mag(name, down(g_db, (size_t)OC), db, m_db, (size_t)OC, N / 8 + 80));
    }
}

START_TEST(matmul)
{
    const struct shape *s = &shapes[_i];
    struct test_rng r = {300 + (uint64_t)_i};
    int N = s->B * s->T;
    linear_case(&r, N, s->C, s->I, 1, 1, "up");
    linear_case(&r, N, s->I, s->C, 1, 0, "down");
    linear_case(&r, N, s->C, 3 * s->C, 0, 1, "nobias");
    linear_case(&r, N, s->C, 3 * s->C, 1, 1, "qkv");
    linear_case(&r, s->B, s->C, s->K, 1, 0, "classifier");
}
END_TEST

/* ---- attention --------------------------------------------------------------- */

/* Host rows [a row | b row | c row] of three (rows, C) arrays, or the
 * inverse (unpack != 0: split p3 into a, b, c). */
static float *pack3(float *p3, float *a, float *b, float *c, size_t rows, int C, int unpack)
{
    float *dst = p3 ? p3 : hbuf(rows * 3 * (size_t)C);
    float *part[3] = {a, b, c};
    for (size_t r = 0; r < rows; r++)
        for (int i = 0; i < 3; i++) {
            float *row = dst + (r * 3 + (size_t)i) * (size_t)C, *x = part[i] + r * (size_t)C;
            memcpy(unpack ? x : row, unpack ? row : x, (size_t)C * sizeof(float));
        }
    return dst;
}

/* fused != 0: the GPU reads q, k, v from (and writes dq, dk, dv into) one
 * (B,T,3C) buffer of query | key | value rows, ld = 3C, as the model's fused
 * projection leaves them; the CPU side keeps three (B,T,C) arrays. */
static void attention_case(const struct shape *s, double p, uint64_t seed, int fused)
{
    const int B = s->B, T = s->T, C = s->C, NH = s->NH;
    const size_t BTC = (size_t)B * T * C, ATT = (size_t)B * NH * T * T;
    struct test_rng r = {seed};
    int32_t *mask = track(calloc((size_t)B * T, sizeof *mask), NULL);
    for (int b = 0; b < B; b++) {
        int len = b == 1 ? 0 : T - (int)(test_rng_u64(&r) % (uint64_t)(T / 2 + 1));
        for (int t = 0; t < T; t++)
            mask[b * T + t] = t < len; /* sequence 1 is all padding: uniform rows */
    }
    float *q = hrand(&r, BTC, -2, 2), *k = hrand(&r, BTC, -2, 2), *v = hrand(&r, BTC, -1, 1);
    float *out = hbuf(BTC), *att = hbuf(ATT), *att_drop = hbuf(ATT);
    float *g_out = dup_f(out, BTC), *g_att = dup_f(att, ATT), *g_att_drop = dup_f(att_drop, ATT);
    const size_t BT = (size_t)B * T;
    const int ld = fused ? 3 * C : C;
    float *g_q, *g_k, *g_v;
    if (fused) {
        g_q = dup_f(pack3(NULL, q, k, v, BT, C, 0), 3 * BTC);
        g_k = g_q + C;
        g_v = g_q + 2 * C;
    } else {
        g_q = dup_f(q, BTC), g_k = dup_f(k, BTC), g_v = dup_f(v, BTC);
    }
    int32_t *g_mask = dup_i(mask, (size_t)B * T);
    const uint64_t dseed = 77, stream = tunep_bert_stream(TUNEP_BERT_RNG_DROPOUT, 10, 0, 1);
    ck_assert_int_eq(
        KC->attention_fwd(CC, out, att, att_drop, q, k, v, mask, B, T, C, NH, C, p, dseed, stream),
        TUNE_OK);
    GPU_OK(KG->attention_fwd(GC, g_out, g_att, g_att_drop, g_q, g_k, g_v, g_mask, B, T, C, NH, ld,
                             p, dseed, stream));
    char tag[48];
    snprintf(tag, sizeof tag, "p=%g%s", p, fused ? " fused" : "");
    char name[96];
    /* Scores are HS-term dot products scaled by 1/sqrt(HS) (|score| error <=
     * 2 (2 HS + 4) eps sqrt(HS) max|q k|), probabilities inherit twice that
     * relatively: for HS = 32 and |q|, |k| <= 2, NMSE <= (2 * 68 * 5.7 * 4
     * eps)^2 ~ 1.4e-7 at worst; random rounding lands orders lower. */
    const double att_limit = 1.5e-7;
    float *h_att = down(g_att, ATT);
    snprintf(name, sizeof name, "attention_fwd att %s", tag);
    ck_assert(check_nmse(name, h_att, att, ATT, att_limit));
    /* masked keys are exactly 0 on both sides */
    size_t zero_bad = 0;
    for (size_t e = 0; e < ATT; e++)
        zero_bad += (att[e] == 0.0f) != (h_att[e] == 0.0f);
    ck_assert_uint_eq(zero_bad, 0);
    if (tunep_dropout_threshold(p) > 0) {
        /* the same elements are dropped */
        float *h_ad = down(g_att_drop, ATT);
        size_t mask_bad = 0;
        for (size_t e = 0; e < ATT; e++)
            if (att[e] != 0.0f)
                mask_bad += (att_drop[e] == 0.0f) != (h_ad[e] == 0.0f);
        ck_assert_uint_eq(mask_bad, 0);
        snprintf(name, sizeof name, "attention_fwd att_drop %s", tag);
        ck_assert(check_nmse(name, h_ad, att_drop, ATT, att_limit));
    }
    snprintf(name, sizeof name, "attention_fwd out %s", tag);
    ck_assert(check_nmse(name, down(g_out, BTC), out, BTC, att_limit));

    /* backward from the CPU's forward on both sides */
    float *dout = hrand(&r, BTC, -1, 1);
    float *dq = hrand(&r, BTC, -1, 1), *dk = hrand(&r, BTC, -1, 1), *dv = hrand(&r, BTC, -1, 1);
    float *dpre = hbuf(ATT), *datt = hbuf(ATT), *datt_drop = hbuf(ATT); /* zeroed, as bert.c */
    float *g_dq, *g_dk, *g_dv;
    if (fused) {
        g_dq = dup_f(pack3(NULL, dq, dk, dv, BT, C, 0), 3 * BTC);
        g_dk = g_dq + C;
        g_dv = g_dq + 2 * C;
    } else {
        g_dq = dup_f(dq, BTC), g_dk = dup_f(dk, BTC), g_dv = dup_f(dv, BTC);
    }
    float *g_dpre = dup_f(dpre, ATT), *g_datt = dup_f(datt, ATT),
          *g_datt_drop = dup_f(datt_drop, ATT);
    float *g_att_c = dup_f(att, ATT), *g_ad_c = dup_f(att_drop, ATT);
    ck_assert_int_eq(KC->attention_bwd(CC, dq, dk, dv, dpre, datt, datt_drop, dout, q, k, v, att,
                                       att_drop, mask, B, T, C, NH, C, p, dseed, stream),
                     TUNE_OK);
    GPU_OK(KG->attention_bwd(GC, g_dq, g_dk, g_dv, g_dpre, g_datt, g_datt_drop, dup_f(dout, BTC),
                             g_q, g_k, g_v, g_att_c, g_ad_c, g_mask, B, T, C, NH, ld, p, dseed,
                             stream));
    float *h_dq, *h_dk, *h_dv;
    if (fused) {
        h_dq = hbuf(BTC), h_dk = hbuf(BTC), h_dv = hbuf(BTC);
        pack3(down(g_dq, 3 * BTC), h_dq, h_dk, h_dv, BT, C, 1);
    } else {
        h_dq = down(g_dq, BTC), h_dk = down(g_dk, BTC), h_dv = down(g_dv, BTC);
    }
    /* T- and HS-term products chained twice more than the forward: the same
     * bound, squared error accumulating over the two extra GEMMs (x4). */
    const double bwd_limit = 6e-7;
    struct {
        const char *n;
        float *h, *c; /* GPU result on the host, CPU result */
        size_t len;
    } outs[] = {{"dq", h_dq, dq, BTC},
                {"dk", h_dk, dk, BTC},
                {"dv", h_dv, dv, BTC},
                {"dpreatt", down(g_dpre, ATT), dpre, ATT},
                {"datt", down(g_datt, ATT), datt, ATT},
                {"datt_drop", down(g_datt_drop, ATT), datt_drop, ATT}};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        if (strcmp(outs[i].n, "datt_drop") == 0 && tunep_dropout_threshold(p) == 0)
            continue;
        snprintf(name, sizeof name, "attention_bwd %s %s", outs[i].n, tag);
        ck_assert(check_nmse(name, outs[i].h, outs[i].c, outs[i].len, bwd_limit));
    }
}

START_TEST(attention)
{
    attention_case(&shapes[_i], 0.0, 400 + (uint64_t)_i, 0);
    attention_case(&shapes[_i], 0.1, 410 + (uint64_t)_i, 0);
    attention_case(&shapes[_i], 0.1, 420 + (uint64_t)_i, 1);
}
END_TEST

/* ---- GELU ------------------------------------------------------------------- */

START_TEST(gelu)
{
    const struct shape *s = &shapes[_i];
    const size_t n = (size_t)s->B * s->T * s->I + 3;
    struct test_rng r = {500 + (uint64_t)_i};
    float *x = hrand(&r, n, -5, 5), *out = hbuf(n), *g_out = dup_f(out, n), *g_x = dup_f(x, n);
    ck_assert_int_eq(KC->gelu_fwd(CC, out, x, n), TUNE_OK);
    GPU_OK(KG->gelu_fwd(GC, g_out, g_x, n));
    /* CPU float erf: |error| <= 1.8e-7 (cpu_kernels_tmpl.c), CUDA erff: 2 ulp;
     * out = x/2 (1 + erf): |x| (1.8e-7 + 2.4e-7) / 2 <= 1.8 eps |x|, plus a few
     * roundings of out: mag = |out| + 2 |x|, c = 4. */
    float *mag = hbuf(n);
    for (size_t i = 0; i < n; i++)
        mag[i] = fabsf(out[i]) + 2.0f * fabsf(x[i]);
    ck_assert(check_mag("gelu_fwd", down(g_out, n), out, mag, n, 4));

    float *dout = hrand(&r, n, -1, 1), *dinp = hrand(&r, n, -1, 1), *g_dinp = dup_f(dinp, n);
    for (size_t i = 0; i < n; i++) {
        /* GELU' = Phi + x phi: CPU error <= 1.8e-7, CUDA a few ulp of erff and
         * expf; 5 |dout| covers 4 eps * 5 = 2.4e-6 |dout|. */
        double xi = x[i];
        double gp = 0.5 * (1 + erf(xi / sqrt(2.0))) + xi * exp(-0.5 * xi * xi) / sqrt(2 * M_PI);
        mag[i] = (float)(fabs((double)dinp[i]) + fabs((double)dout[i]) * (fabs(gp) + 5));
    }
    ck_assert_int_eq(KC->gelu_bwd(CC, dinp, dout, x, n), TUNE_OK);
    GPU_OK(KG->gelu_bwd(GC, g_dinp, dup_f(dout, n), g_x, n));
    ck_assert(check_mag("gelu_bwd", down(g_dinp, n), dinp, mag, n, 4));
}
END_TEST

/* ---- softmax cross-entropy ------------------------------------------------- */

START_TEST(softmax_xent)
{
    const int B = 37, K = _i == 0 ? 2 : 7;
    struct test_rng r = {600 + (uint64_t)_i};
    float *logits = hrand(&r, (size_t)B * K, -4, 4);
    logits[0] = 30.0f; /* one confident row: a loss of ~e^-30 relative */
    int32_t *labels = track(calloc((size_t)B, sizeof *labels), NULL);
    for (int b = 0; b < B; b++)
        labels[b] = (int32_t)(test_rng_u64(&r) % (uint64_t)K);
    labels[0] = 0;
    float *losses = hbuf((size_t)B), *probs = hbuf((size_t)B * K);
    float *g_losses = dup_f(losses, (size_t)B), *g_probs = dup_f(probs, (size_t)B * K);
    int32_t *g_labels = dup_i(labels, (size_t)B);
    ck_assert_int_eq(KC->softmax_xent_fwd(CC, losses, probs, logits, labels, B, K), TUNE_OK);
    GPU_OK(
        KG->softmax_xent_fwd(GC, g_losses, g_probs, dup_f(logits, (size_t)B * K), g_labels, B, K));
    /* both in double, rounded to float once: 1 ulp apart at most */
    ck_assert(check_mag("softmax_xent_fwd losses", down(g_losses, (size_t)B), losses, NULL,
                        (size_t)B, 2));
    ck_assert(check_mag("softmax_xent_fwd probs", down(g_probs, (size_t)B * K), probs, NULL,
                        (size_t)B * K, 2));

    float *dlogits = hrand(&r, (size_t)B * K, -1, 1), *dlosses = hrand(&r, (size_t)B, 0, 1);
    float *g_dl = dup_f(dlogits, (size_t)B * K), *mag = hbuf((size_t)B * K);
    for (int b = 0; b < B; b++)
        for (int j = 0; j < K; j++) {
            size_t i = (size_t)b * K + j;
            mag[i] = fabsf(dlogits[i]) + fabsf(dlosses[b] * (probs[i] - (j == labels[b])));
        }
    ck_assert_int_eq(KC->softmax_xent_bwd(CC, dlogits, dlosses, probs, labels, B, K), TUNE_OK);
    GPU_OK(KG->softmax_xent_bwd(GC, g_dl, dup_f(dlosses, (size_t)B), dup_f(probs, (size_t)B * K),
                                g_labels, B, K));
    /* one subtraction, one product, one addition (perhaps fused) */
    ck_assert(
        check_mag("softmax_xent_bwd", down(g_dl, (size_t)B * K), dlogits, mag, (size_t)B * K, 4));
}
END_TEST

/* ---- pooler ----------------------------------------------------------------- */

START_TEST(pooler)
{
    const struct shape *s = &shapes[_i];
    const int B = s->B, T = s->T, C = s->C;
    const size_t BTC = (size_t)B * T * C, BC = (size_t)B * C;
    struct test_rng r = {700 + (uint64_t)_i};
    float *x = hrand(&r, BTC, -1, 1), *w = hrand(&r, (size_t)C * C, -0.2, 0.2);
    float *b = hrand(&r, (size_t)C, -0.5, 0.5);
    float *out = hbuf(BC), *pre = hbuf(BC), *g_out = dup_f(out, BC), *g_pre = dup_f(pre, BC);
    float *g_x = dup_f(x, BTC), *g_w = dup_f(w, (size_t)C * C);
    ck_assert_int_eq(KC->pooler_fwd(CC, out, pre, x, w, b, B, T, C), TUNE_OK);
    GPU_OK(KG->pooler_fwd(GC, g_out, g_pre, g_x, g_w, dup_f(b, (size_t)C), B, T, C));
    float *mag = hbuf(BC);
    for (int bb = 0; bb < B; bb++)
        for (int o = 0; o < C; o++) {
            double m = fabs((double)b[o]);
            for (int i = 0; i < C; i++)
                m += fabs((double)x[(size_t)bb * T * C + i] * (double)w[(size_t)o * C + i]);
            mag[(size_t)bb * C + o] = (float)m;
        }
    /* a C-term dot product plus the bias; tanh' <= 1 and 2 ulp of tanhf more */
    ck_assert(check_mag("pooler_fwd pre", down(g_pre, BC), pre, mag, BC, 2.0 * C + 4));
    ck_assert(check_mag("pooler_fwd out", down(g_out, BC), out, mag, BC, 2.0 * C + 8));

    float *dout = hrand(&r, BC, -1, 1), *dpre = hrand(&r, BC, -1, 1), *dinp = hrand(&r, BTC, -1, 1);
    float *dw = hrand(&r, (size_t)C * C, -1, 1), *db = hrand(&r, (size_t)C, -1, 1);
    float *g_dpre = dup_f(dpre, BC), *g_dinp = dup_f(dinp, BTC), *g_dw = dup_f(dw, (size_t)C * C);
    float *g_db = dup_f(db, (size_t)C);
    float *g_outc = dup_f(out, BC); /* the CPU's forward output on both sides */
    float *dpre_new = copy_h(dpre, BC);
    for (size_t i = 0; i < BC; i++)
        dpre_new[i] += dout[i] * (1.0f - out[i] * out[i]);
    float *m_dpre = hbuf(BC), *m_dinp = hbuf(BTC), *m_dw = hbuf((size_t)C * C);
    float *m_db = hbuf((size_t)C);
    for (size_t i = 0; i < BC; i++)
        m_dpre[i] = fabsf(dpre[i]) + fabsf(dout[i]) * (1.0f + out[i] * out[i]);
    for (size_t i = 0; i < BTC; i++)
        m_dinp[i] = fabsf(dinp[i]);
    for (int bb = 0; bb < B; bb++)
        for (int i = 0; i < C; i++) {
            double m = 0;
            for (int o = 0; o < C; o++)
                m += fabs((double)dpre_new[(size_t)bb * C + o] * (double)w[(size_t)o * C + i]);
            m_dinp[(size_t)bb * T * C + i] += (float)m;
        }
    for (int o = 0; o < C; o++) {
        double mb = fabs((double)db[o]);
        for (int i = 0; i < C; i++) {
            double m = fabs((double)dw[(size_t)o * C + i]);
            for (int bb = 0; bb < B; bb++)
                m += fabs((double)dpre_new[(size_t)bb * C + o] * (double)x[(size_t)bb * T * C + i]);
            m_dw[(size_t)o * C + i] = (float)m;
        }
        for (int bb = 0; bb < B; bb++)
            mb += fabs((double)dpre_new[(size_t)bb * C + o]);
        m_db[o] = (float)mb;
    }
    ck_assert_int_eq(KC->pooler_bwd(CC, dinp, dw, db, dpre, dout, out, x, w, B, T, C), TUNE_OK);
    GPU_OK(
        KG->pooler_bwd(GC, g_dinp, g_dw, g_db, g_dpre, dup_f(dout, BC), g_outc, g_x, g_w, B, T, C));
    ck_assert(check_mag("pooler_bwd dpre", down(g_dpre, BC), dpre, m_dpre, BC, 4));
    /* dpre differs by <= 4 eps relatively, then a C- (dinp) or B-term (dw) product */
    ck_assert(check_mag("pooler_bwd dinp", down(g_dinp, BTC), dinp, m_dinp, BTC, 2.0 * C + 16));
    ck_assert(check_mag("pooler_bwd dw", down(g_dw, (size_t)C * C), dw, m_dw, (size_t)C * C,
                        2.0 * B + 16));
    ck_assert(check_mag("pooler_bwd db", down(g_db, (size_t)C), db, m_db, (size_t)C, B / 8 + 84));
}
END_TEST

/* ---- dropout ---------------------------------------------------------------- */

START_TEST(dropout)
{
    const double ps[] = {0.0, 0.1, 0.5};
    const size_t n = 100003; /* not a multiple of 4: a partial last Philox block */
    struct test_rng r = {800};
    float *x = hrand(&r, n, -1, 1), *res = hrand(&r, n, -1, 1);
    float *g_x = dup_f(x, n), *g_res = dup_f(res, n);
    for (int pi = 0; pi < 3; pi++) {
        const double p = ps[pi];
        const uint64_t seed = 1234 + (uint64_t)pi, stream = tunep_bert_stream(2, 3, 0, pi);
        for (int with_res = 0; with_res < 2; with_res++) {
            float *out = hbuf(n), *g_out = dup_f(out, n);
            ck_assert_int_eq(KC->dropout_fwd(CC, out, x, with_res ? res : NULL, n, p, seed, stream),
                             TUNE_OK);
            GPU_OK(KG->dropout_fwd(GC, g_out, g_x, with_res ? g_res : NULL, n, p, seed, stream));
            char name[64];
            snprintf(name, sizeof name, "dropout_fwd p=%g res=%d", p, with_res);
            float *h = down(g_out, n);
            ck_assert(check_exact(name, h, out, n));
            /* and the mask is bert_rng.h's, element by element */
            if (!with_res && p > 0) {
                uint32_t thr = tunep_dropout_threshold(p);
                size_t bad = 0, dropped = 0;
                for (size_t i = 0; i < n; i++) {
                    int keep = tunep_rng_u32_at(seed, stream, i) >= thr;
                    bad += keep != (h[i] != 0.0f);
                    dropped += !keep;
                }
                ck_assert_uint_eq(bad, 0);
                /* the drop rate is p: 5 sd of a binomial */
                double sd = sqrt(p * (1 - p) * (double)n);
                ck_assert(fabs((double)dropped - p * (double)n) < 5 * sd);
            }
            float *dout = hrand(&r, n, -1, 1), *dinp = hrand(&r, n, -1, 1);
            float *dres = with_res ? hrand(&r, n, -1, 1) : NULL;
            float *g_dinp = dup_f(dinp, n), *g_dres = dres ? dup_f(dres, n) : NULL;
            ck_assert_int_eq(KC->dropout_bwd(CC, dinp, dres, dout, n, p, seed, stream), TUNE_OK);
            GPU_OK(KG->dropout_bwd(GC, g_dinp, g_dres, dup_f(dout, n), n, p, seed, stream));
            snprintf(name, sizeof name, "dropout_bwd dinp p=%g", p);
            ck_assert(check_exact(name, down(g_dinp, n), dinp, n));
            if (dres) {
                snprintf(name, sizeof name, "dropout_bwd dres p=%g", p);
                ck_assert(check_exact(name, down(g_dres, n), dres, n));
            }
        }
    }
}
END_TEST

/* ---- AdamW and the gradient norm -------------------------------------------- */

START_TEST(adamw)
{
    const size_t n = 10007;
    struct test_rng r = {900};
    const double gs[] = {1.0, 0.5};
    const long steps[] = {1, 7};
    for (int k = 0; k < 2; k++) {
        float *param = hrand(&r, n, -1, 1), *m = hrand(&r, n, -0.1, 0.1);
        float *v = hrand(&r, n, 0, 0.01), *g = hrand(&r, n, -1, 1);
        float *g_param = dup_f(param, n), *g_m = dup_f(m, n), *g_v = dup_f(v, n);
        const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
        double bc1 = 1 - pow(b1, (double)steps[k]), bc2 = 1 - pow(b2, (double)steps[k]);
        float *mag_p = hbuf(n), *mag_m = hbuf(n), *mag_v = hbuf(n);
        for (size_t i = 0; i < n; i++) {
            double gi = (double)g[i] * gs[k];
            double mi = (double)m[i] * b1 + gi * (1 - b1),
                   vi = (double)v[i] * b2 + gi * gi * (1 - b2);
            double upd = lr / bc1 * mi / (sqrt(vi) / sqrt(bc2) + eps);
            mag_p[i] = (float)(fabs((double)param[i] * (1 - lr * wd)) + fabs(upd));
            mag_m[i] = (float)(fabs((double)m[i] * b1) + fabs(gi * (1 - b1)));
            mag_v[i] = (float)(fabs((double)v[i] * b2) + fabs(gi * gi * (1 - b2)));
        }
        ck_assert_int_eq(
            KC->adamw_step(CC, param, m, v, g, n, lr, b1, b2, eps, wd, gs[k], steps[k]), TUNE_OK);
        GPU_OK(KG->adamw_step(GC, g_param, g_m, g_v, dup_f(g, n), n, lr, b1, b2, eps, wd, gs[k],
                              steps[k]));
        /* m: a scaled gradient, two products, a sum (4); v: one more product
         * (6); the update m / (sqrt(v)/sqrt(bc2) + eps) about 8 roundings
         * relative, then the decay product and a subtraction: 16. */
        ck_assert(check_mag("adamw m", down(g_m, n), m, mag_m, n, 4));
        ck_assert(check_mag("adamw v", down(g_v, n), v, mag_v, n, 6));
        ck_assert(check_mag("adamw param", down(g_param, n), param, mag_p, n, 16));
    }
}
END_TEST

START_TEST(grad_sumsq)
{
    const size_t sizes[] = {0, 1, 255, 100003, 3000007};
    struct test_rng r = {1000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        float *g = hrand(&r, n, -1, 1);
        double want = 0, got = -1;
        ck_assert_int_eq(KC->grad_sumsq(CC, &want, g, n), TUNE_OK);
        GPU_OK(KG->grad_sumsq(GC, &got, n ? dup_f(g, n) : NULL, n));
        /* both sum positive doubles in chains of at most n: |diff| <= 2 n 2^-53 sum */
        double tol = 2.0 * (double)n * 0x1p-53 * want;
        fprintf(stderr, "  grad_sumsq n=%-9zu |diff|/sum %.3g (limit %.3g)\n", n,
                want > 0 ? fabs(got - want) / want : fabs(got - want), want > 0 ? tol / want : 0);
        ck_assert_msg(fabs(got - want) <= tol, "n=%zu: got %.17g want %.17g", n, got, want);
    }
}
END_TEST

/* ---- options, determinism, errors, concurrency ------------------------------ */

/* TF32 rounds GEMM inputs to 10-bit mantissas: a product is off by <= 2^-10
 * relatively, a K-term sum of random-sign products by <= 2^-10 * 0.75
 * sqrt(K) of its RMS (inputs uniform in [-1, 1]): NMSE <= 1e-4 for K <= 160. */
START_TEST(tf32_matmul)
{
    struct tunep_backend *tf = NULL;
    struct tunep_cuda_options opt = {.device = 0, .tf32 = 1};
    tune_error err = {0};
    ck_assert_msg(tunep_cuda_backend_new(&opt, &tf, &err) == TUNE_OK, "%s", err.text);
    const int N = 512, IC = 160, OC = 96;
    struct test_rng r = {1100};
    float *x = hrand(&r, (size_t)N * IC, -1, 1), *w = hrand(&r, (size_t)OC * IC, -1, 1);
    float *b = hrand(&r, (size_t)OC, -1, 1), *out = hbuf((size_t)N * OC);
    ck_assert_int_eq(KC->matmul_fwd(CC, out, x, w, b, N, IC, OC), TUNE_OK);
    /* tf shares the device with gpu_be: buffers from either work on both */
    float *g_out = dup_f(out, (size_t)N * OC);
    tune_status st =
        tf->kernels->matmul_fwd(tf->ctx, g_out, dup_f(x, (size_t)N * IC), dup_f(w, (size_t)OC * IC),
                                dup_f(b, (size_t)OC), N, IC, OC);
    ck_assert_int_eq(st, TUNE_OK);
    ck_assert_int_eq(tf->sync(tf->ctx, &err), TUNE_OK);
    ck_assert(
        check_nmse("matmul_fwd tf32", down(g_out, (size_t)N * OC), out, (size_t)N * OC, 1e-4));
    tunep_cuda_backend_free(tf);
}
END_TEST

/* The same inputs give the same bits twice: no atomics, fixed orders. */
START_TEST(deterministic)
{
    const struct shape *s = &shapes[1];
    const int B = s->B, T = s->T, C = s->C, NH = s->NH, N = B * T;
    const size_t BTC = (size_t)N * C, ATT = (size_t)B * NH * T * T;
    struct test_rng r = {1200};
    int32_t *ids = track(calloc((size_t)N, sizeof *ids), NULL);
    int32_t *mask = track(calloc((size_t)N, sizeof *mask), NULL);
    for (int i = 0; i < N; i++) {
        ids[i] = (int32_t)(test_rng_u64(&r) % 5); /* long runs of each id */
        mask[i] = i % T < T - 5;
    }
    float *q = hrand(&r, BTC, -1, 1), *dout = hrand(&r, BTC, -1, 1);
    float *results[2][4];
    for (int run = 0; run < 2; run++) {
        float *dwte = dup_f(hbuf((size_t)5 * C), (size_t)5 * C);
        float *dwpe = dup_f(hbuf((size_t)T * C), (size_t)T * C);
        float *dwtt = dup_f(hbuf((size_t)2 * C), (size_t)2 * C);
        int32_t *g_ids = dup_i(ids, (size_t)N), *g_types = dup_i(mask, (size_t)N);
        GPU_OK(KG->embed_bwd(GC, dwte, dwpe, dwtt, dup_f(dout, BTC), g_ids, g_types, B, T, C));
        float *att = dup_f(hbuf(ATT), ATT), *ad = dup_f(hbuf(ATT), ATT), *o = dup_f(hbuf(BTC), BTC);
        float *g_q = dup_f(q, BTC);
        int32_t *g_mask = dup_i(mask, (size_t)N);
        GPU_OK(KG->attention_fwd(GC, o, att, ad, g_q, g_q, g_q, g_mask, B, T, C, NH, C, 0.1, 5, 6));
        float *dq = dup_f(hbuf(BTC), BTC), *dpre = dup_f(hbuf(ATT), ATT);
        float *datt = dup_f(hbuf(ATT), ATT), *dad = dup_f(hbuf(ATT), ATT);
        GPU_OK(KG->attention_bwd(GC, dq, dq, dq, dpre, datt, dad, dup_f(dout, BTC), g_q, g_q, g_q,
                                 att, ad, g_mask, B, T, C, NH, C, 0.1, 5, 6));
        float *dw = dup_f(hbuf((size_t)C), (size_t)C), *db = dup_f(hbuf((size_t)C), (size_t)C);
        float *mean = dup_f(hbuf((size_t)N), (size_t)N), *rstd = dup_f(hbuf((size_t)N), (size_t)N);
        float *ln = dup_f(hbuf(BTC), BTC), *w = dup_f(hrand(&r, (size_t)C, 1, 1), (size_t)C);
        GPU_OK(KG->layernorm_fwd(GC, ln, mean, rstd, g_q, w, db, N, C, 1e-12));
        GPU_OK(KG->layernorm_bwd(GC, ln, dw, db, dup_f(dout, BTC), g_q, w, mean, rstd, N, C));
        results[run][0] = down(dwte, (size_t)5 * C);
        results[run][1] = down(dwtt, (size_t)2 * C);
        results[run][2] = down(dq, BTC);
        results[run][3] = down(dw, (size_t)C);
    }
    ck_assert(check_exact("repeat embed_bwd dwte", results[1][0], results[0][0], (size_t)5 * C));
    ck_assert(check_exact("repeat embed_bwd dwtt", results[1][1], results[0][1], (size_t)2 * C));
    ck_assert(check_exact("repeat attention_bwd dq", results[1][2], results[0][2], BTC));
    ck_assert(check_exact("repeat layernorm_bwd dw", results[1][3], results[0][3], (size_t)C));
}
END_TEST

/* An allocation the device cannot hold is TUNE_ENOMEM with a message, and the
 * backend goes on working (CUDA's per-thread error was cleared). */
START_TEST(out_of_memory_is_recoverable)
{
    void *p = NULL;
    tune_error err = {0};
    ck_assert_int_eq(gpu_be->alloc(gpu_be->ctx, (size_t)1 << 50, &p, &err), TUNE_ENOMEM);
    ck_assert_ptr_null(p);
    ck_assert_ptr_nonnull(strstr(err.text, "out of device memory"));
    ck_assert_str_eq(err.source, "cuda:0");
    float h[64];
    for (int i = 0; i < 64; i++)
        h[i] = (float)i;
    float *d = dup_f(h, 64), *o = dup_f(h, 64);
    GPU_OK(KG->gelu_fwd(GC, o, d, 64));
    sync_gpu();
    float *back = down(o, 64);
    ck_assert(back[0] == 0.0f && back[63] > 62.9f);
}
END_TEST

struct thread_job {
    struct tunep_backend *be;
    float *out, *x, *w, *b;
    int N, IC, OC, rounds;
    tune_status st;
};

static void *thread_main(void *v)
{
    struct thread_job *j = v;
    for (int i = 0; i < j->rounds && j->st == TUNE_OK; i++)
        j->st =
            j->be->kernels->matmul_fwd(j->be->ctx, j->out, j->x, j->w, j->b, j->N, j->IC, j->OC);
    if (j->st == TUNE_OK)
        j->st = j->be->sync(j->be->ctx, NULL);
    return NULL;
}

/* Two backends (two trials) on one GPU, driven from two threads at once: each
 * gets what it gets alone. */
START_TEST(two_backends_two_threads)
{
    const int N = 256, IC = 96, OC = 160;
    struct test_rng r = {1300};
    float *x = hrand(&r, (size_t)N * IC, -1, 1), *w = hrand(&r, (size_t)OC * IC, -1, 1);
    float *b = hrand(&r, (size_t)OC, -1, 1);
    float *alone = dup_f(hbuf((size_t)N * OC), (size_t)N * OC);
    float *g_x = dup_f(x, (size_t)N * IC), *g_w = dup_f(w, (size_t)OC * IC),
          *g_b = dup_f(b, (size_t)OC);
    GPU_OK(KG->matmul_fwd(GC, alone, g_x, g_w, g_b, N, IC, OC));
    float *want = down(alone, (size_t)N * OC);

    struct tunep_backend *other = NULL;
    struct tunep_cuda_options opt = {.device = 0, .tf32 = 0};
    tune_error err = {0};
    ck_assert_msg(tunep_cuda_backend_new(&opt, &other, &err) == TUNE_OK, "%s", err.text);
    struct thread_job jobs[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        jobs[i] = (struct thread_job){i ? other : gpu_be,
                                      dup_f(hbuf((size_t)N * OC), (size_t)N * OC),
                                      g_x,
                                      g_w,
                                      g_b,
                                      N,
                                      IC,
                                      OC,
                                      50,
                                      TUNE_OK};
        ck_assert_int_eq(pthread_create(&th[i], NULL, thread_main, &jobs[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(jobs[i].st, TUNE_OK);
        ck_assert(check_exact(i ? "matmul on a second stream" : "matmul on the first stream",
                              down(jobs[i].out, (size_t)N * OC), want, (size_t)N * OC));
    }
    tunep_cuda_backend_free(other);
}
END_TEST

static Suite *cuda_kernels_suite(void)
{
    Suite *s = suite_create("cuda_kernels");
    TCase *tc = tcase_create("vs_cpu");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, embed, 0, NSHAPES);
    tcase_add_loop_test(tc, layernorm, 0, NSHAPES);
    tcase_add_loop_test(tc, matmul, 0, NSHAPES);
    tcase_add_loop_test(tc, attention, 0, NSHAPES);
    tcase_add_loop_test(tc, gelu, 0, NSHAPES);
    tcase_add_loop_test(tc, softmax_xent, 0, 2);
    tcase_add_loop_test(tc, pooler, 0, NSHAPES);
    tcase_add_test(tc, dropout);
    tcase_add_test(tc, adamw);
    tcase_add_test(tc, grad_sumsq);
    suite_add_tcase(s, tc);
    TCase *tc2 = tcase_create("behaviour");
    tcase_add_checked_fixture(tc2, NULL, teardown);
    tcase_set_timeout(tc2, 120);
    tcase_add_test(tc2, tf32_matmul);
    tcase_add_test(tc2, deterministic);
    tcase_add_test(tc2, out_of_memory_is_recoverable);
    tcase_add_test(tc2, two_backends_two_threads);
    suite_add_tcase(s, tc2);
    return s;
}

TUNE_CUDA_CHECK_MAIN(cuda_kernels_suite)
