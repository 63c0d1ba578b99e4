/*
 * test_bert_ref.c - the float model against PyTorch: tests/bert/data/
 * bert_tiny_ref.bin (written by tests/tools/gen_bert_ref.py, committed) holds a
 * tiny BERT's weights under their Hugging Face names, a padded batch, and
 * PyTorch's logits, loss, every parameter gradient, and the gradient norms
 * and losses around 10 AdamW steps. Weights are loaded by name through the
 * tensor table, as a checkpoint loader would. Tolerances are t_eff = atol +
 * rtol |ref|, derived next to each comparison.
 */
#include <math.h>
#include <string.h>

#include "check_util.h"
#include "bert_test_util.h"
#include "models/bert/bert.h"
#include "models/cpu/cpu_backend.h"

#define REF_MAGIC       "TNBERTRF"
#define REF_VERSION     1u
#define REF_MAX_RECORDS 256

struct ref_record {
    char name[160];
    uint32_t dtype; /* 0 f32, 1 i32 */
    uint64_t count;
    const unsigned char *data;
};

struct ref_blob {
    unsigned char *bytes;
    size_t size;
    int32_t ints[16];
    double dbls[16];
    uint32_t nrec;
    struct ref_record rec[REF_MAX_RECORDS];
};

struct reader {
    const unsigned char *p, *end;
    int ok;
};

static uint64_t rd_le(struct reader *r, int nbytes)
{
    if (!r->ok || r->end - r->p < nbytes) {
        r->ok = 0;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < nbytes; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += nbytes;
    return v;
}

static float f32_at(const unsigned char *p, size_t i)
{
    uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
                 (uint32_t)p[4 * i + 3] << 24;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int32_t i32_at(const unsigned char *p, size_t i)
{
    uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
                 (uint32_t)p[4 * i + 3] << 24;
    int32_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static int load_blob(struct ref_blob *b)
{
    char path[4096];
    const char *root = getenv("TUNE_SOURCE_ROOT");
    snprintf(path, sizeof path, "%s/tests/bert/data/bert_tiny_ref.bin", root ? root : ".");
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s (set TUNE_SOURCE_ROOT)\n", path);
        return 0;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b->bytes = malloc((size_t)n);
    b->size = (size_t)n;
    int ok = b->bytes && fread(b->bytes, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    if (!ok || n < 12 || memcmp(b->bytes, REF_MAGIC, 8) != 0)
        return 0;
    struct reader r = {b->bytes + 8, b->bytes + n, 1};
    if (rd_le(&r, 4) != REF_VERSION)
        return 0;
    uint32_t ni = (uint32_t)rd_le(&r, 4);
    if (ni > 16)
        return 0;
    for (uint32_t i = 0; i < ni; i++)
        b->ints[i] = (int32_t)(uint32_t)rd_le(&r, 4);
    uint32_t nd = (uint32_t)rd_le(&r, 4);
    if (nd > 16)
        return 0;
    for (uint32_t i = 0; i < nd; i++) {
        uint64_t u = rd_le(&r, 8);
        memcpy(&b->dbls[i], &u, sizeof u);
    }
    b->nrec = (uint32_t)rd_le(&r, 4);
    if (b->nrec > REF_MAX_RECORDS)
        return 0;
    for (uint32_t i = 0; i < b->nrec && r.ok; i++) {
        struct ref_record *rec = &b->rec[i];
        uint32_t len = (uint32_t)rd_le(&r, 4);
        if (len >= sizeof rec->name || r.end - r.p < len)
            return 0;
        memcpy(rec->name, r.p, len);
        rec->name[len] = '\0';
        r.p += len;
        rec->dtype = (uint32_t)rd_le(&r, 4);
        rec->count = rd_le(&r, 8);
        if (rec->count > (uint64_t)(r.end - r.p) / 4)
            return 0;
        rec->data = r.p;
        r.p += rec->count * 4;
    }
    return r.ok && r.p == r.end;
}

static const struct ref_record *find(const struct ref_blob *b, const char *name, uint32_t dtype,
                                     uint64_t count)
{
    for (uint32_t i = 0; i < b->nrec; i++) {
        if (strcmp(b->rec[i].name, name) == 0) {
            if (b->rec[i].dtype != dtype || b->rec[i].count != count) {
                fprintf(stderr, "record '%s': dtype %u count %llu, expected %u %llu\n", name,
                        b->rec[i].dtype, (unsigned long long)b->rec[i].count, dtype,
                        (unsigned long long)count);
                return NULL;
            }
            return &b->rec[i];
        }
    }
    fprintf(stderr, "record '%s' missing\n", name);
    return NULL;
}

static double *rec_doubles(const struct ref_record *rec)
{
    double *d = malloc(rec->count * sizeof(double));
    ck_assert_ptr_nonnull(d);
    for (uint64_t i = 0; i < rec->count; i++)
        d[i] = (double)f32_at(rec->data, i);
    return d;
}

static int32_t *rec_ints(const struct ref_record *rec)
{
    int32_t *d = malloc(rec->count * sizeof(int32_t));
    ck_assert_ptr_nonnull(d);
    for (uint64_t i = 0; i < rec->count; i++)
        d[i] = i32_at(rec->data, i);
    return d;
}

START_TEST(test_bert_tiny_reference)
{
    struct ref_blob *blob = calloc(1, sizeof *blob);
    ck_assert_ptr_nonnull(blob);
    ck_assert_msg(load_blob(blob), "cannot read tests/bert/data/bert_tiny_ref.bin");
    const int32_t *ci = blob->ints;
    struct tunep_bert_config cfg = {.L = ci[0],
                                    .C = ci[1],
                                    .NH = ci[2],
                                    .I = ci[3],
                                    .P = ci[4],
                                    .V = ci[5],
                                    .TV = ci[6],
                                    .K = ci[7],
                                    .hidden_dropout = 0.0,
                                    .attn_dropout = 0.0,
                                    .ln_eps = blob->dbls[0]};
    const int B = ci[8], T = ci[9], steps = ci[10];
    struct tunep_adamw opt = {.beta1 = blob->dbls[4],
                              .beta2 = blob->dbls[5],
                              .eps = blob->dbls[6],
                              .weight_decay = blob->dbls[2],
                              .clip_norm = blob->dbls[3]};
    const double lr = blob->dbls[1];

    struct tunep_backend *be;
    ck_assert_int_eq(tunep_cpu_backend_new(2, &be, NULL), TUNE_OK);
    struct tunep_bert *m;
    tune_error err = {0};
    ck_assert_msg(tunep_bert_new(&cfg, B, T, be, &m, &err) == TUNE_OK, "%s", err.text);
    const struct tunep_bert_layout *lay = tunep_bert_layout_of(m);

    /* weights by Hugging Face name, through the tensor table */
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        int layers = tunep_bert_param_info[id].layered ? cfg.L : 1;
        for (int l = 0; l < layers; l++) {
            char hf[128], key[160];
            tunep_bert_param_name((enum bert_param)id, l, hf, sizeof hf);
            snprintf(key, sizeof key, "param/%s", hf);
            const struct ref_record *rec = find(blob, key, 0, lay->param_size[id]);
            ck_assert_ptr_nonnull(rec);
            float *w = malloc(rec->count * sizeof(float));
            ck_assert_ptr_nonnull(w);
            for (uint64_t i = 0; i < rec->count; i++)
                w[i] = f32_at(rec->data, i);
            ck_assert_int_eq(tunep_bert_param_set(m, (enum bert_param)id, l, w, rec->count, NULL),
                             TUNE_OK);
            free(w);
        }
    }
    size_t ntok = (size_t)B * (size_t)T;
    int32_t *ids = rec_ints(find(blob, "input_ids", 1, ntok));
    int32_t *types = rec_ints(find(blob, "token_type_ids", 1, ntok));
    int32_t *mask = rec_ints(find(blob, "attention_mask", 1, ntok));
    int32_t *labels = rec_ints(find(blob, "labels", 1, (uint64_t)B));
    struct tunep_bert_batch batch = {
        .B = B, .T = T, .ids = ids, .types = types, .mask = mask, .labels = labels};

    double loss;
    ck_assert_int_eq(tunep_bert_zero_grad(m, NULL), TUNE_OK);
    ck_assert_msg(tunep_bert_forward(m, &batch, 1, 7, &loss, &err) == TUNE_OK, "%s", err.text);

    /*
     * Logits and loss. Both sides compute in float32 with different summation
     * orders. A logit passes ~40 rounding stages (embeddings, 2 layers of ~15
     * ops, pooler, classifier), each adding at most ~sqrt(n) u relative with
     * u = 2^-24 = 6e-8 and sums of n <= 64 terms: 40 * 8 * 6e-8 = 1.9e-5.
     * rtol 3e-5; atol 3e-5 * rms for logits near zero.
     */
    float logits_f[64];
    ck_assert_int_eq(tunep_bert_logits(m, logits_f, (size_t)B * cfg.K, NULL), TUNE_OK);
    double logits[64], logits_rms = 0.0;
    double *ref_logits = rec_doubles(find(blob, "logits", 0, (uint64_t)B * cfg.K));
    for (int i = 0; i < B * cfg.K; i++) {
        logits[i] = (double)logits_f[i];
        logits_rms += ref_logits[i] * ref_logits[i] / (B * cfg.K);
    }
    size_t bad = test_compare("logits", logits, ref_logits, (size_t)B * cfg.K,
                              3e-5 * sqrt(logits_rms), 3e-5);
    double *ref_loss = rec_doubles(find(blob, "loss", 0, 1));
    bad += test_compare("loss", &loss, ref_loss, 1, 0.0, 3e-5);

    /*
     * Gradients: the backward pass doubles the stage count (~80) and adds sums
     * over the B*T = 16 tokens, bounded as above by 80 * 8 * 6e-8 = 3.8e-5:
     * rtol 1e-4. atol is 1e-4 * rms of all gradients, because some gradients
     * are sums that cancel to ~0 (the key bias's is exactly 0 in exact
     * arithmetic) and carry the absolute error of their terms.
     */
    ck_assert_int_eq(tunep_bert_backward(m, &err), TUNE_OK);
    double gss = 0.0;
    size_t gcount = 0;
    for (uint32_t i = 0; i < blob->nrec; i++) {
        if (strncmp(blob->rec[i].name, "grad/", 5) != 0)
            continue;
        for (uint64_t j = 0; j < blob->rec[i].count; j++) {
            double v = (double)f32_at(blob->rec[i].data, j);
            gss += v * v;
        }
        gcount += blob->rec[i].count;
    }
    ck_assert_uint_eq(gcount, lay->param_total);
    double grad_rms = sqrt(gss / (double)gcount);
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        int layers = tunep_bert_param_info[id].layered ? cfg.L : 1;
        for (int l = 0; l < layers; l++) {
            char hf[128], key[160];
            tunep_bert_param_name((enum bert_param)id, l, hf, sizeof hf);
            snprintf(key, sizeof key, "grad/%s", hf);
            size_t n = lay->param_size[id];
            double *ref = rec_doubles(find(blob, key, 0, n));
            float *gf = malloc(n * sizeof(float));
            double *got = malloc(n * sizeof(double));
            ck_assert(gf && got);
            ck_assert_int_eq(tunep_bert_grad_get(m, (enum bert_param)id, l, gf, n, NULL), TUNE_OK);
            for (size_t i = 0; i < n; i++)
                got[i] = (double)gf[i];
            bad += test_compare(hf, got, ref, n, 1e-4 * grad_rms, 1e-4);
            free(ref), free(gf), free(got);
        }
    }

    /*
     * 10 AdamW steps with clipping (the loss curve). The first Adam step moves every weight by
     * ~lr along sign(g), so a gradient within rounding noise of 0 can move the
     * other way in the two implementations; such a weight has |dL/dw| ~ noise,
     * so the loss moves by ~lr * noise, far below the forward's own rounding.
     * Gradient norms: as the gradients, rtol 1e-4. Losses after the steps:
     * the forward's 3e-5 plus the optimiser's float updates, rtol 1e-4.
     */
    double *ref_norms = rec_doubles(find(blob, "grad_norms", 0, (uint64_t)steps));
    double *ref_losses = rec_doubles(find(blob, "losses_after_steps", 0, (uint64_t)steps));
    double norms[16], losses[16];
    ck_assert(steps >= 10 && steps <= 16); /* the issue asks for a 10-step loss curve */
    for (int s = 0; s < steps; s++) {
        ck_assert_int_eq(tunep_bert_adamw_step(m, &opt, lr, &norms[s], &err), TUNE_OK);
        ck_assert_int_eq(tunep_bert_zero_grad(m, NULL), TUNE_OK);
        ck_assert_int_eq(tunep_bert_forward(m, &batch, 0, 0, &losses[s], &err), TUNE_OK);
        ck_assert_int_eq(tunep_bert_backward(m, &err), TUNE_OK);
    }
    bad += test_compare("grad_norms", norms, ref_norms, (size_t)steps, 0.0, 1e-4);
    bad += test_compare("losses_after_steps", losses, ref_losses, (size_t)steps, 0.0, 1e-4);
    ck_assert(ref_norms[0] > opt.clip_norm); /* the reference exercises clipping */
    ck_assert_uint_eq(bad, 0);

    free(ids), free(types), free(mask), free(labels), free(ref_logits), free(ref_loss);
    free(ref_norms), free(ref_losses);
    tunep_bert_free(m);
    tunep_cpu_backend_free(be);
    free(blob->bytes);
    free(blob);
}
END_TEST

static Suite *bert_ref_suite(void)
{
    Suite *s = suite_create("bert_ref");
    TCase *tc = tcase_create("pytorch");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_bert_tiny_reference);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(bert_ref_suite)
