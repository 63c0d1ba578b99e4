/*
 * fuzz_tsv.c - libFuzzer harness for the TSV dataset loader
 * (models/text/dataset_tsv.c): the input is the file given to
 * tunep_dataset_tsv_load(), tokenized with the built-in vocabulary of
 * fuzz_vocab_data.h. The loader takes a path, so the input goes through an
 * in-memory file (fuzz_util.h).
 *
 * The options are not taken from the input (its first byte belongs to the
 * header line): max_seq_len and num_labels are derived from the input's
 * length, so the corpus's files keep meaning what they say while every
 * option value is still reached.
 *
 * Checks on a loaded dataset: every example is framed [CLS] ... [SEP] with
 * ids in the vocabulary, at most max_seq_len long, with a label below
 * num_labels and label counts that add up; the epoch order is a permutation;
 * padded batches have the documented shape and padding.
 */
#include "fuzz_util.h"

#include "fuzz_vocab_data.h"
#include "models/text/dataset_tsv.h"
#include "models/text/tokenizer.h"

static tunep_tokenizer *tok;
static struct fuzz_file file = FUZZ_FILE_INIT;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tune_error err = {0};
    const char *path = fuzz_file_set(&file, fuzz_vocab, sizeof fuzz_vocab - 1);
    if (tunep_tokenizer_new(path, 1, &tok, &err) != TUNE_OK) {
        fprintf(stderr, "fuzz_tsv: built-in vocabulary: %s\n", err.text);
        abort();
    }
    return 0;
}

static void check_dataset(const tunep_dataset *ds, const struct tunep_tsv_options *opt)
{
    size_t n = tunep_dataset_size(ds);
    int pair = tunep_dataset_is_pair(ds);
    int K = tunep_dataset_num_labels(ds);
    size_t V = tunep_tokenizer_vocab_size(tok);
    const struct tunep_special_ids *sp = tunep_tokenizer_special(tok);
    FUZZ_CHECK(n >= 1);
    FUZZ_CHECK(K >= 1 && K <= TUNEP_TSV_MAX_LABELS);
    FUZZ_CHECK(opt->num_labels == 0 || K == opt->num_labels);
    FUZZ_CHECK(tunep_dataset_max_len(ds) <= opt->max_seq_len);
    FUZZ_CHECK(tunep_dataset_truncated(ds) <= n);

    size_t label_total = 0;
    for (int k = 0; k < K; k++)
        label_total += tunep_dataset_label_count(ds, k);
    FUZZ_CHECK(label_total == n);
    FUZZ_CHECK(tunep_dataset_label_count(ds, -1) == 0 && tunep_dataset_label_count(ds, K) == 0);

    size_t max_len = 0, prev_line = 0;
    for (size_t i = 0; i < n; i++) {
        struct tunep_example ex;
        tune_error err = {0};
        FUZZ_CHECK(tunep_dataset_get(ds, i, &ex, &err) == TUNE_OK);
        FUZZ_CHECK(ex.len >= (pair ? 3u : 2u) && ex.len <= opt->max_seq_len);
        FUZZ_CHECK(ex.len_type0 >= 2 && ex.len_type0 <= ex.len);
        FUZZ_CHECK(pair ? ex.len_type0 < ex.len : ex.len_type0 == ex.len);
        FUZZ_CHECK(ex.label >= 0 && ex.label < K);
        FUZZ_CHECK(ex.line > prev_line);
        prev_line = ex.line;
        FUZZ_CHECK(ex.ids[0] == sp->cls && ex.ids[ex.len_type0 - 1] == sp->sep &&
                   ex.ids[ex.len - 1] == sp->sep);
        for (size_t j = 0; j < ex.len; j++)
            FUZZ_CHECK(ex.ids[j] >= 0 && (size_t)ex.ids[j] < V);
        if (ex.len > max_len)
            max_len = ex.len;
    }
    FUZZ_CHECK(max_len == tunep_dataset_max_len(ds));
    struct tunep_example ex;
    tune_error err = {0};
    tune_status st = tunep_dataset_get(ds, n, &ex, &err);
    fuzz_check_error(st, &err);

    size_t *order = malloc(n * sizeof *order);
    unsigned char *seen = calloc(n, 1);
    FUZZ_CHECK(order && seen);
    FUZZ_CHECK(tunep_dataset_order(ds, n * 31u, 7, 1, order, &err) == TUNE_OK);
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(order[i] < n && !seen[order[i]]);
        seen[order[i]] = 1;
    }

    /* Batches of up to 5 examples in that order. */
    struct tunep_batch b;
    tunep_batch_init(&b);
    for (size_t at = 0; at < n; at += 5) {
        size_t count = n - at < 5 ? n - at : 5;
        FUZZ_CHECK(tunep_dataset_batch(ds, order + at, count, &b, &err) == TUNE_OK);
        FUZZ_CHECK(b.B == count && b.T >= 2 && b.T <= opt->max_seq_len);
        for (size_t r = 0; r < b.B; r++) {
            FUZZ_CHECK(tunep_dataset_get(ds, order[at + r], &ex, &err) == TUNE_OK);
            FUZZ_CHECK(ex.len <= b.T && b.labels[r] == ex.label);
            for (size_t t = 0; t < b.T; t++) {
                size_t k = r * b.T + t;
                if (t < ex.len) {
                    FUZZ_CHECK(b.input_ids[k] == ex.ids[t] && b.attention_mask[k] == 1);
                    FUZZ_CHECK(b.token_type_ids[k] == (t < ex.len_type0 ? 0 : 1));
                } else {
                    FUZZ_CHECK(b.input_ids[k] == sp->pad && b.attention_mask[k] == 0 &&
                               b.token_type_ids[k] == 0);
                }
            }
        }
    }
    tunep_batch_done(&b);
    free(seen);
    free(order);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tunep_tsv_options opt;
    tunep_tsv_options_default(&opt);
    /* 3..66 tokens (a pair needs 3), and a fixed label count for one length in four. */
    opt.max_seq_len = 3 + size % 64;
    opt.num_labels = size % 4 == 0 ? (int)(size / 4 % 5) + 1 : 0;
    opt.max_rows = size % 3 == 0 ? 1 + size / 3 % 50 : 0;

    const char *path = fuzz_file_set(&file, data, size);
    tunep_dataset *ds = NULL;
    tune_error err = {0};
    tune_status st = tunep_dataset_tsv_load(path, tok, &opt, &ds, &err);
    if (st != TUNE_OK) {
        fuzz_check_error(st, &err);
        FUZZ_CHECK(ds == NULL);
        return 0;
    }
    check_dataset(ds, &opt);
    tunep_dataset_free(ds);
    return 0;
}
