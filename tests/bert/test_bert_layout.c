/*
 * test_bert_layout.c - pure parts of the BERT model: the tensor tables and
 * layout (against hand-computed parameter counts of published models), the
 * device memory estimate, the Hugging Face names, config validation, the
 * Philox4x32-10 counter RNG (Random123 known-answer vectors) and the
 * truncated-normal initialisation.
 */
#include <math.h>
#include <string.h>

#include "check_util.h"
#include "models/bert/bert.h"
#include "models/bert/bert_rng.h"
#include "models/cpu/cpu_backend.h"

static void tiny(struct tunep_bert_config *cfg)
{
    tunep_bert_config_default(cfg);
    cfg->L = 2;
    cfg->C = 128;
    cfg->NH = 2;
    cfg->I = 512;
}

START_TEST(test_param_counts)
{
    struct tunep_bert_config cfg;
    struct tunep_bert_layout lay;
    /* bert-base-uncased: BertModel has 109,482,240 parameters (Devlin et al.,
     * Hugging Face model card); the K = 2 classifier adds 768 * 2 + 2. */
    tunep_bert_config_default(&cfg);
    ck_assert_int_eq(tunep_bert_layout_compute(&cfg, 1, 1, &lay, NULL), TUNE_OK);
    ck_assert_uint_eq(lay.param_total, 109482240u + 1538u);
    /* bert-tiny (L=2, H=128, A=2, I=512; Turc et al. 2019): 4,385,920 + 258 */
    tiny(&cfg);
    ck_assert_int_eq(tunep_bert_layout_compute(&cfg, 1, 1, &lay, NULL), TUNE_OK);
    ck_assert_uint_eq(lay.param_total, 4385920u + 258u);
    ck_assert_uint_eq(lay.param_size[BERT_P_WORD_EMB], 30522u * 128u);
    ck_assert_uint_eq(lay.param_size[BERT_P_FC_W], 512u * 128u);
    /* offsets are prefix sums in table order, per-layer tensors hold L
     * layers; a stack (the query, key and value rows) is one entry whose
     * layers hold its rows' layers in turn */
    size_t off = 0;
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        size_t layers = tunep_bert_param_info[id].layered ? 2u : 1u;
        enum bert_param first = tunep_bert_param_stack((enum bert_param)id);
        if (first != (enum bert_param)id) {
            /* placed right after the previous row of its stack */
            int prev = id - 1;
            while (tunep_bert_param_stack((enum bert_param)prev) != first)
                prev--;
            ck_assert_uint_eq(lay.param_offset[id], lay.param_offset[prev] + lay.param_size[prev]);
            ck_assert_uint_eq(lay.param_stride[id], lay.param_stride[first]);
            continue;
        }
        ck_assert_uint_eq(lay.param_offset[id], off);
        off += lay.param_stride[id] * layers;
    }
    ck_assert_uint_eq(off, lay.param_total);
}
END_TEST

/* Every (tensor, layer) lies inside the arena and no two overlap: together
 * they tile it exactly. The query, key and value rows of one layer form one
 * (3C, C) weight and one 3C bias, in that order, as the model's fused
 * projection reads them; a stack's rows share decay (AdamW runs over a
 * stack as one range). */
START_TEST(test_param_stacks)
{
    struct tunep_bert_config cfg;
    tunep_bert_config_default(&cfg);
    cfg.L = 3;
    cfg.C = 64;
    cfg.NH = 4;
    cfg.I = 96;
    cfg.V = 50;
    cfg.P = 20;
    struct tunep_bert_layout lay;
    ck_assert_int_eq(tunep_bert_layout_compute(&cfg, 1, 1, &lay, NULL), TUNE_OK);
    unsigned char *owner = calloc(lay.param_total, 1);
    ck_assert_ptr_nonnull(owner);
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        int layers = tunep_bert_param_info[id].layered ? cfg.L : 1;
        for (int l = 0; l < layers; l++) {
            size_t off = lay.param_offset[id] + (size_t)l * lay.param_stride[id];
            ck_assert(off + lay.param_size[id] <= lay.param_total);
            for (size_t i = 0; i < lay.param_size[id]; i++)
                ck_assert_int_eq(owner[off + i]++, 0);
        }
        enum bert_param first = tunep_bert_param_stack((enum bert_param)id);
        ck_assert_int_eq(tunep_bert_param_info[id].decay, tunep_bert_param_info[first].decay);
        ck_assert_int_eq(tunep_bert_param_info[id].layered, tunep_bert_param_info[first].layered);
        ck_assert_int_le(first, id);
    }
    for (size_t i = 0; i < lay.param_total; i++)
        ck_assert_int_eq(owner[i], 1);
    free(owner);
    const size_t C = (size_t)cfg.C, CC = C * C;
    ck_assert_int_eq(tunep_bert_param_stack(BERT_P_K_W), BERT_P_Q_W);
    ck_assert_int_eq(tunep_bert_param_stack(BERT_P_V_B), BERT_P_Q_B);
    ck_assert_int_eq(tunep_bert_param_stack(BERT_P_FC_W), BERT_P_FC_W);
    ck_assert_uint_eq(lay.param_stride[BERT_P_Q_W], 3 * CC);
    ck_assert_uint_eq(lay.param_stride[BERT_P_V_B], 3 * C);
    ck_assert_uint_eq(lay.param_stride[BERT_P_FC_W], lay.param_size[BERT_P_FC_W]);
    for (int l = 0; l < cfg.L; l++) {
        size_t q = lay.param_offset[BERT_P_Q_W] + (size_t)l * 3 * CC;
        ck_assert_uint_eq(lay.param_offset[BERT_P_K_W] + (size_t)l * 3 * CC, q + CC);
        ck_assert_uint_eq(lay.param_offset[BERT_P_V_W] + (size_t)l * 3 * CC, q + 2 * CC);
        size_t qb = lay.param_offset[BERT_P_Q_B] + (size_t)l * 3 * C;
        ck_assert_uint_eq(lay.param_offset[BERT_P_K_B] + (size_t)l * 3 * C, qb + C);
        ck_assert_uint_eq(lay.param_offset[BERT_P_V_B] + (size_t)l * 3 * C, qb + 2 * C);
    }
}
END_TEST

START_TEST(test_act_counts)
{
    /* bert-tiny at B=32, T=128 (the benchmark shape), counted by hand:
     * per layer 10 (B,T,C) + 2 (B,T,I) + 2 (B,NH,T,T) stored + 4 (B,T)
     * statistics; embeddings 3 (B,T,C) + 2 (B,T); head 3 (B,C) + 2 (B,K) + B. */
    struct tunep_bert_config cfg;
    tiny(&cfg);
    struct tunep_bert_layout lay;
    ck_assert_int_eq(tunep_bert_layout_compute(&cfg, 32, 128, &lay, NULL), TUNE_OK);
    size_t btc = 32 * 128 * 128, bti = 32 * 128 * 512, ntt = 32 * 2 * 128 * 128, bt = 32 * 128;
    size_t per_layer = 10 * btc + 2 * bti + 2 * ntt + 4 * bt; /* q, k, v: one (B,T,3C) */
    size_t want = 3 * btc + 2 * bt + 2 * per_layer + 3 * 32 * 128 + 2 * 32 * 2 + 32;
    ck_assert_uint_eq(lay.act_total, want);
    /* gradients: the layer output's (B,T,C) per layer; one layer's worth of
     * 9 (B,T,C) + 2 (B,T,I) + 3 (B,NH,T,T) shared by all layers; embeddings
     * 3 (B,T,C), head 3 (B,C) + (B,K) + B */
    size_t gwant = 3 * btc + 2 * btc + (9 * btc + 2 * bti) + 3 * ntt + 3 * 32 * 128 + 32 * 2 + 32;
    ck_assert_uint_eq(lay.grad_total, gwant);
    /* smaller batches fit in arenas sized for larger ones */
    struct tunep_bert_layout small;
    ck_assert_int_eq(tunep_bert_layout_compute(&cfg, 7, 33, &small, NULL), TUNE_OK);
    ck_assert(small.act_total < lay.act_total && small.grad_total < lay.grad_total);
    ck_assert_uint_eq(small.param_total, lay.param_total);
}
END_TEST

START_TEST(test_memory_estimate)
{
    /* bert-tiny at B=32, T=128 in fp32, by hand: weights, grads, m and v are
     * 4 x 4,386,178 floats = 70,178,848 bytes; activations 24,694,944 and
     * their gradients 14,692,448 floats (test_act_counts' sums) = 157,549,568
     * bytes; inputs (3 x 4096 + 32) int32 = 49,280 bytes; workspace 7 (B,T,C)
     * floats = 14,680,064 bytes + 64 MiB. Total 309,566,624 bytes (295 MiB). */
    struct tunep_bert_config cfg;
    tiny(&cfg);
    struct tunep_bert_memory mem;
    ck_assert_int_eq(tunep_bert_memory_estimate(&cfg, 32, 128, sizeof(float), &mem, NULL), TUNE_OK);
    ck_assert_uint_eq(mem.weights, 4386178u * 4u);
    ck_assert_uint_eq(mem.grads, 4386178u * 4u);
    ck_assert_uint_eq(mem.adam, 2u * 4386178u * 4u);
    ck_assert_uint_eq(mem.acts, (24694944u + 14692448u) * 4u);
    ck_assert_uint_eq(mem.inputs, 49280u);
    ck_assert_uint_eq(mem.workspace, 14680064u + 67108864u);
    ck_assert_uint_eq(mem.total, 309566624u);
    /* it grows with the batch; bad shapes are refused */
    struct tunep_bert_memory big;
    ck_assert_int_eq(tunep_bert_memory_estimate(&cfg, 64, 128, sizeof(float), &big, NULL), TUNE_OK);
    ck_assert(big.total > mem.total && big.weights == mem.weights);
    ck_assert_int_eq(tunep_bert_memory_estimate(&cfg, 32, 513, sizeof(float), &mem, NULL),
                     TUNE_EINVAL);
    ck_assert_int_eq(tunep_bert_memory_estimate(&cfg, 32, 128, 0, &mem, NULL), TUNE_EINVAL);
}
END_TEST

START_TEST(test_names_and_flags)
{
    char buf[128];
    tunep_bert_param_name(BERT_P_Q_W, 3, buf, sizeof buf);
    ck_assert_str_eq(buf, "bert.encoder.layer.3.attention.self.query.weight");
    tunep_bert_param_name(BERT_P_OUT_LN_B, 11, buf, sizeof buf);
    ck_assert_str_eq(buf, "bert.encoder.layer.11.output.LayerNorm.bias");
    tunep_bert_param_name(BERT_P_CLS_W, 5, buf, sizeof buf);
    ck_assert_str_eq(buf, "classifier.weight");
    /* decay exactly on Hugging Face's decay group: not biases, not LayerNorm weights */
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        const char *n = tunep_bert_param_info[id].name;
        size_t len = strlen(n);
        int no_decay =
            (len >= 4 && strcmp(n + len - 4, "bias") == 0) || strstr(n, "LayerNorm.weight") != NULL;
        ck_assert_int_eq(tunep_bert_param_info[id].decay, !no_decay);
        ck_assert_int_eq(tunep_bert_param_info[id].layered, strstr(n, "%d") != NULL);
    }
}
END_TEST

START_TEST(test_config_errors)
{
    struct tunep_bert_config cfg;
    tiny(&cfg);
    tune_error err = {0};
    ck_assert_int_eq(tunep_bert_config_check(&cfg, &err), TUNE_OK);
    cfg.NH = 3;
    ck_assert_int_eq(tunep_bert_config_check(&cfg, &err), TUNE_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.text, "'hidden_size'"));
    tiny(&cfg);
    cfg.hidden_dropout = 1.0;
    ck_assert_int_eq(tunep_bert_config_check(&cfg, &err), TUNE_ECONFIG);
    tiny(&cfg);
    cfg.V = 0;
    ck_assert_int_eq(tunep_bert_config_check(&cfg, &err), TUNE_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.text, "'vocab_size'"));
    tiny(&cfg);
    struct tunep_bert_layout lay;
    ck_assert_int_eq(tunep_bert_layout_compute(&cfg, 1, 513, &lay, &err), TUNE_EINVAL);
    ck_assert_int_eq(tunep_bert_layout_compute(&cfg, 0, 8, &lay, &err), TUNE_EINVAL);
    ck_assert_int_eq(tunep_bert_layout_compute(&cfg, TUNEP_BERT_MAX_B + 1, 8, &lay, &err),
                     TUNE_EINVAL);
}
END_TEST

START_TEST(test_philox_kat)
{
    /* Random123 tests/kat_vectors, "philox4x32 10": counter words, key words, output. */
    uint32_t r[4];
    tunep_philox4x32(r, 0, 0, 0);
    ck_assert_uint_eq(r[0], 0x6627e8d5u);
    ck_assert_uint_eq(r[1], 0xe169c58du);
    ck_assert_uint_eq(r[2], 0xbc57ac4cu);
    ck_assert_uint_eq(r[3], 0x9b00dbd8u);
    tunep_philox4x32(r, UINT64_MAX, UINT64_MAX, UINT64_MAX);
    ck_assert_uint_eq(r[0], 0x408f276du);
    ck_assert_uint_eq(r[1], 0x41c83b0eu);
    ck_assert_uint_eq(r[2], 0xa20bc7c6u);
    ck_assert_uint_eq(r[3], 0x6d5451fdu);
    /* counter (243f6a88 85a308d3 13198a2e 03707344), key (a4093822 299f31d0) */
    tunep_philox4x32(r, 0x85a308d3243f6a88ull, 0x0370734413198a2eull, 0x299f31d0a4093822ull);
    ck_assert_uint_eq(r[0], 0xd16cfe09u);
    ck_assert_uint_eq(r[1], 0x94fdccebu);
    ck_assert_uint_eq(r[2], 0x5001e420u);
    ck_assert_uint_eq(r[3], 0x24126ea1u);
    /* element i of a stream is word i%4 of block i/4 */
    tunep_philox4x32(r, 5, 9, 3);
    for (int w = 0; w < 4; w++)
        ck_assert_uint_eq(tunep_rng_u32_at(3, 9, 20 + (uint64_t)w), r[w]);
    ck_assert_uint_eq(tunep_dropout_threshold(0.0), 0);
    ck_assert_uint_eq(tunep_dropout_threshold(0.5), 0x80000000u);
    ck_assert(tunep_bert_stream(TUNEP_BERT_RNG_DROPOUT, 3, 0, 1) !=
              tunep_bert_stream(TUNEP_BERT_RNG_DROPOUT, 3, 0, 2));
}
END_TEST

START_TEST(test_init_weights)
{
    struct tunep_backend *be;
    ck_assert_int_eq(tunep_cpu_backend_new(1, &be, NULL), TUNE_OK);
    struct tunep_bert_config cfg;
    tiny(&cfg);
    cfg.V = 1000;
    struct tunep_bert *m1, *m2;
    ck_assert_int_eq(tunep_bert_new(&cfg, 2, 8, be, &m1, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_new(&cfg, 2, 8, be, &m2, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_init_weights(m1, 42, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_init_weights(m2, 42, NULL), TUNE_OK);
    size_t n = tunep_bert_layout_of(m1)->param_total;
    ck_assert_int_eq(
        memcmp(tunep_bert_params_arena(m1), tunep_bert_params_arena(m2), n * sizeof(float)), 0);
    const struct tunep_bert_params *p = tunep_bert_params_view(m1);
    /* LayerNorm ones, biases zero */
    for (int c = 0; c < cfg.C; c++) {
        ck_assert(p->emb_ln_w[c] == 1.0f && p->emb_ln_b[c] == 0.0f);
        /* layer 1; the query bias is stacked with the key and value biases */
        ck_assert(p->att_ln_w[cfg.C + c] == 1.0f && p->q_b[3 * cfg.C + c] == 0.0f);
    }
    /* N(0, 0.02) truncated at 2 sd: |w| <= 0.04, mean 0, and
     * sd = 0.02 sqrt(1 - 2*2 phi(2) / (Phi(2) - Phi(-2))) = 0.02 * 0.87962 */
    size_t cnt = (size_t)cfg.V * cfg.C;
    double s = 0.0, ss = 0.0, mx = 0.0;
    for (size_t i = 0; i < cnt; i++) {
        double w = (double)p->word_emb[i];
        s += w;
        ss += w * w;
        mx = fabs(w) > mx ? fabs(w) : mx;
    }
    double mean = s / (double)cnt, sd = sqrt(ss / (double)cnt - mean * mean);
    ck_assert(mx <= 0.04 + 1e-9 && mx > 0.039);
    /* 128k samples: se(mean) = 0.0176 / 358 = 5e-5, se(sd) ~ 0.0176 / 506 = 3.5e-5 */
    ck_assert(fabs(mean) < 2.5e-4);
    ck_assert(fabs(sd - 0.02 * 0.87962) < 2e-4);
    /* another seed, other weights; per-layer tensors differ between layers */
    ck_assert_int_eq(tunep_bert_init_weights(m2, 43, NULL), TUNE_OK);
    ck_assert(memcmp(tunep_bert_params_arena(m1), tunep_bert_params_arena(m2), n * sizeof(float)));
    ck_assert(memcmp(p->q_w, p->q_w + 3 * (size_t)cfg.C * cfg.C, 64 * sizeof(float)) != 0);
    tunep_bert_free(m1);
    tunep_bert_free(m2);
    tunep_cpu_backend_free(be);
}
END_TEST

static Suite *bert_layout_suite(void)
{
    Suite *s = suite_create("bert_layout");
    TCase *tc = tcase_create("layout");
    tcase_add_test(tc, test_param_counts);
    tcase_add_test(tc, test_param_stacks);
    tcase_add_test(tc, test_act_counts);
    tcase_add_test(tc, test_memory_estimate);
    tcase_add_test(tc, test_names_and_flags);
    tcase_add_test(tc, test_config_errors);
    tcase_add_test(tc, test_philox_kat);
    tcase_add_test(tc, test_init_weights);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(bert_layout_suite)
