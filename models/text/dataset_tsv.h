/*
 * dataset_tsv.h - labelled text-classification data from TSV files, tokenized
 * once at load, and padded batches in a seeded order per epoch. Private to
 * libtune (tunep_ prefix); used by the BERT trainer.
 *
 * File format (see shared/data/README.md): UTF-8, a header line naming the
 * columns, `sentence<TAB>label` or `sentence1<TAB>sentence2<TAB>label`, then
 * one example per line. Lines are split on TAB only: no CSV quoting. Labels
 * are integers 0..K-1. A CR before the LF is ignored.
 *
 * A loaded dataset is immutable: every function taking it const may be called
 * from several threads at once.
 */
#ifndef TUNE_MODELS_TEXT_DATASET_TSV_H
#define TUNE_MODELS_TEXT_DATASET_TSV_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

/* Limits (exceeding one fails with TUNE_ECONFIG). */
#define TUNEP_TSV_MAX_FILE_BYTES (1 << 30)
#define TUNEP_TSV_MAX_ROWS       (1 << 24)
#define TUNEP_TSV_MAX_LABELS     1000
#define TUNEP_BATCH_MAX          65536 /* examples per batch */

struct tunep_tsv_options {
    size_t max_rows;    /* more data rows is an error; 0: TUNEP_TSV_MAX_ROWS */
    size_t max_seq_len; /* examples are truncated to it, special tokens included */
    int num_labels;     /* 0: the largest label + 1; else every label must be below it */
};

/* max_rows 0, max_seq_len 128, num_labels 0. */
void tunep_tsv_options_default(struct tunep_tsv_options *opt);

typedef struct tunep_dataset tunep_dataset;

/*
 * Reads path, checks every line and tokenizes every example with tok into
 * [CLS] a [SEP] (b [SEP]), truncated to opt->max_seq_len as in
 * tunep_truncate_lengths(). opt may be NULL for the defaults. tok is only
 * used during the call.
 * Errors name the file and line (err->source, err->line; err->column for bad
 * UTF-8), e.g. "expected 2 tab-separated fields, got 3".
 * @return TUNE_OK; TUNE_EINVAL (NULL argument); TUNE_EIO (cannot read);
 *         TUNE_ECONFIG (malformed file, a limit, bad options); TUNE_ENOMEM.
 *         *ret_ds is written only on success.
 */
tune_status tunep_dataset_tsv_load(const char *path, const tunep_tokenizer *tok,
                                   const struct tunep_tsv_options *opt, tunep_dataset **ret_ds,
                                   tune_error *err);
/* Frees ds; accepts NULL. */
void tunep_dataset_free(tunep_dataset *ds);

size_t tunep_dataset_size(const tunep_dataset *ds);
int tunep_dataset_is_pair(const tunep_dataset *ds);
int tunep_dataset_num_labels(const tunep_dataset *ds);
/* Examples with this label (0 outside 0..num_labels-1). */
size_t tunep_dataset_label_count(const tunep_dataset *ds, int label);
/* The longest encoded example, special tokens included. */
size_t tunep_dataset_max_len(const tunep_dataset *ds);
/* How many examples lost tokens to max_seq_len. */
size_t tunep_dataset_truncated(const tunep_dataset *ds);

/* One encoded example; ids is borrowed and valid until the dataset is freed. */
struct tunep_example {
    const int32_t *ids; /* [CLS] a [SEP] (b [SEP]) */
    size_t len;
    size_t len_type0; /* ids[0..len_type0) have token type 0, the rest 1 */
    int label;
    size_t line; /* line in the file, for messages */
};
/* @return TUNE_OK; TUNE_EINVAL (index out of range). */
tune_status tunep_dataset_get(const tunep_dataset *ds, size_t index, struct tunep_example *ret_ex,
                              tune_error *err);

/*
 * Writes the order of the examples for one epoch into ret_order (room for
 * tunep_dataset_size() entries): 0, 1, 2, ... when shuffle is 0, else a
 * uniform random permutation that depends only on (seed, epoch).
 * @return TUNE_OK; TUNE_EINVAL.
 */
tune_status tunep_dataset_order(const tunep_dataset *ds, uint64_t seed, uint64_t epoch, int shuffle,
                                size_t *ret_order, tune_error *err);

/*
 * A batch of B examples padded to T, the longest of them (dynamic padding):
 * input_ids, token_type_ids and attention_mask are B x T, row-major; padding
 * has id [PAD], type 0 and mask 0. Caller storage: _init/_done; the buffers
 * are reused and grow when needed.
 */
struct tunep_batch {
    size_t B, T;
    int32_t *input_ids, *token_type_ids, *attention_mask;
    int32_t *labels; /* B */
    size_t cap_tokens, cap_rows;
};
void tunep_batch_init(struct tunep_batch *b);
void tunep_batch_done(struct tunep_batch *b);

/*
 * Fills b with the examples index[0..count): typically a slice of the order
 * from tunep_dataset_order(). On failure b is left empty (B = T = 0).
 * @return TUNE_OK; TUNE_EINVAL (NULL, count 0, an index out of range);
 *         TUNE_ECONFIG (count > TUNEP_BATCH_MAX); TUNE_ENOMEM.
 */
tune_status tunep_dataset_batch(const tunep_dataset *ds, const size_t *index, size_t count,
                                struct tunep_batch *b, tune_error *err);

#endif /* TUNE_MODELS_TEXT_DATASET_TSV_H */
