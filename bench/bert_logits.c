/*
 * bert_logits.c - tune's side of bench/hf_reference.py's logits check: loads
 * a Hugging Face BERT folder exactly as the bert trainer does (config.json,
 * vocab.txt, model.safetensors over a seeded initialisation), tokenizes a TSV
 * file through the trainer's dataset loader and prints, as one JSON object,
 * each example's token ids (padding removed) and the eval-mode logits:
 *
 *   {"ids": [[101, ...], ...], "logits": [[0.12, -0.3], ...]}
 *
 * Usage: bench_bert_logits CHECKPOINT_DIR FILE.tsv [MAX_SEQ_LEN [SEED]]
 * (MAX_SEQ_LEN 128 and SEED 0 by default; the seed only matters for tensors
 * the checkpoint lacks, e.g. a classifier). Examples go through the model
 * 64 at a time, each batch padded to its longest example, as the trainer's
 * evaluation does.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tune.h"
#include "models/bert/bert.h"
#include "models/bert/bert_io.h"
#include "models/cpu/cpu_backend.h"
#include "models/text/dataset_tsv.h"
#include "models/text/tokenizer.h"

#define CHUNK 64

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: %s CHECKPOINT_DIR FILE.tsv [MAX_SEQ_LEN [SEED]]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1], *tsv = argv[2];
    int max_seq_len = argc > 3 ? atoi(argv[3]) : 128;
    uint64_t seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 0;
    tune_error err = {0};
    struct tunep_bert_config cfg;
    tunep_tokenizer *tok = NULL;
    tunep_dataset *ds = NULL;
    struct tunep_backend *be = NULL;
    struct tunep_bert *m = NULL;
    struct tunep_batch batch;
    tunep_batch_init(&batch);
    float *logits = NULL;
    char vocab[4096];
    snprintf(vocab, sizeof vocab, "%s/vocab.txt", dir);
    struct tunep_tsv_options opt;
    tunep_tsv_options_default(&opt);
    opt.max_seq_len = (size_t)max_seq_len;
    int rc = 1;
    if (tunep_bert_hf_config_load(dir, &cfg, &err) || tunep_tokenizer_new(vocab, 1, &tok, &err) ||
        tunep_dataset_tsv_load(tsv, tok, &opt, &ds, &err) || tunep_cpu_backend_new(1, &be, &err) ||
        tunep_bert_new(&cfg, CHUNK, max_seq_len, be, &m, &err) ||
        tunep_bert_init_weights(m, seed, &err) || tunep_bert_load_hf(m, dir, 0, &err))
        goto fail;
    if (!(logits = malloc((size_t)CHUNK * (size_t)cfg.K * sizeof *logits)))
        goto fail;
    size_t n = tunep_dataset_size(ds), index[CHUNK];
    printf("{\"ids\": [");
    for (size_t start = 0; start < n; start += CHUNK) {
        size_t count = n - start < CHUNK ? n - start : CHUNK;
        for (size_t i = 0; i < count; i++)
            index[i] = start + i;
        if (tunep_dataset_batch(ds, index, count, &batch, &err))
            goto fail;
        for (size_t r = 0; r < count; r++) {
            printf("%s[", start + r ? ", " : "");
            for (size_t t = 0; t < batch.T && batch.attention_mask[r * batch.T + t]; t++)
                printf("%s%d", t ? ", " : "", batch.input_ids[r * batch.T + t]);
            printf("]");
        }
    }
    printf("], \"logits\": [");
    for (size_t start = 0; start < n; start += CHUNK) {
        size_t count = n - start < CHUNK ? n - start : CHUNK;
        for (size_t i = 0; i < count; i++)
            index[i] = start + i;
        if (tunep_dataset_batch(ds, index, count, &batch, &err))
            goto fail;
        struct tunep_bert_batch bb = {(int)batch.B,         (int)batch.T,         batch.input_ids,
                                      batch.token_type_ids, batch.attention_mask, NULL};
        if (tunep_bert_forward(m, &bb, 0, 0, NULL, &err) ||
            tunep_bert_logits(m, logits, count * (size_t)cfg.K, &err))
            goto fail;
        for (size_t r = 0; r < count; r++) {
            printf("%s[", start + r ? ", " : "");
            for (int k = 0; k < cfg.K; k++)
                printf("%s%.9g", k ? ", " : "", (double)logits[r * (size_t)cfg.K + (size_t)k]);
            printf("]");
        }
    }
    printf("]}\n");
    rc = 0;
fail:
    if (rc) {
        char buf[700];
        fprintf(stderr, "bench_bert_logits: %s\n",
                err.code ? tune_error_format(&err, buf, sizeof buf) : "out of memory");
    }
    free(logits);
    tunep_batch_done(&batch);
    tunep_bert_free(m);
    tunep_cpu_backend_free(be);
    tunep_dataset_free(ds);
    tunep_tokenizer_free(tok);
    return rc;
}
