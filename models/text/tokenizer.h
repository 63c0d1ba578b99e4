/*
 * tokenizer.h - BERT WordPiece tokenizer (basic tokenization + WordPiece), the
 * text side of the built-in BERT trainer. Private to libtune (tunep_ prefix).
 *
 * The output matches Hugging Face's BertTokenizer (BasicTokenizer followed by
 * WordpieceTokenizer) for uncased vocabularies token for token; see
 * tokenizer.c for the pipeline and the one known difference for cased ones.
 *
 * A tokenizer is immutable after tunep_tokenizer_new(): every other function
 * takes it const and may be called from several threads at once.
 */
#ifndef TUNE_MODELS_TEXT_TOKENIZER_H
#define TUNE_MODELS_TEXT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "tune.h"

/* Limits (exceeding one fails with TUNE_ECONFIG). */
#define TUNEP_VOCAB_MAX_TOKENS      (1 << 20) /* BERT has 30522, mBERT 119547 */
#define TUNEP_VOCAB_MAX_TOKEN_BYTES 200       /* longest BERT token: 18 bytes */
#define TUNEP_VOCAB_MAX_FILE_BYTES  (64 << 20)
#define TUNEP_TEXT_MAX_BYTES        (1 << 20) /* one text given to tokenize/encode */
#define TUNEP_SEQ_MAX_LEN           8192      /* max_seq_len, special tokens included */
/* HF's max_input_chars_per_word: longer words become [UNK] */
#define TUNEP_WORD_MAX_CHARS 100

typedef struct tunep_tokenizer tunep_tokenizer;

/* Ids of the special tokens; mask is -1 when the vocabulary has no [MASK]. */
struct tunep_special_ids {
    int32_t pad, unk, cls, sep, mask;
};

/* A growable array of token ids (caller storage: _init/_done). */
struct tunep_ids {
    int32_t *data;
    size_t len, cap;
};
void tunep_ids_init(struct tunep_ids *v);
void tunep_ids_done(struct tunep_ids *v);

/*
 * Loads a vocabulary (one token per line, id = 0-based line number, LF line
 * endings, UTF-8) and creates a tokenizer. lowercase != 0 gives BERT uncased
 * behaviour (lower-case and strip accents); 0 keeps case and accents.
 * [PAD], [UNK], [CLS] and [SEP] must be in the vocabulary.
 * @return TUNE_OK; TUNE_EINVAL (NULL argument); TUNE_EIO (unreadable file);
 *         TUNE_ECONFIG with err's source and line set (empty, duplicate, too
 *         long or invalid UTF-8 token, too many tokens, missing special token);
 *         TUNE_ENOMEM. *ret_tok is written only on success.
 */
tune_status tunep_tokenizer_new(const char *vocab_path, int lowercase, tunep_tokenizer **ret_tok,
                                tune_error *err);
/* Frees tok; accepts NULL. */
void tunep_tokenizer_free(tunep_tokenizer *tok);

size_t tunep_tokenizer_vocab_size(const tunep_tokenizer *tok);
/* borrowed; valid until tok is freed */
const struct tunep_special_ids *tunep_tokenizer_special(const tunep_tokenizer *tok);
/* The id of a vocabulary entry (exact string, "##" included), or -1. */
int32_t tunep_tokenizer_token_id(const tunep_tokenizer *tok, const char *token);
/* The vocabulary entry of id (borrowed; valid until tok is freed), or NULL. */
const char *tunep_tokenizer_token(const tunep_tokenizer *tok, int32_t id);

/*
 * Appends the WordPiece ids of text (len bytes, need not be NUL-terminated)
 * to ids, without special tokens. Invalid UTF-8 is read as U+FFFD, which
 * cleaning drops. On failure ids keeps its old length.
 * @return TUNE_OK; TUNE_EINVAL; TUNE_ECONFIG (len > TUNEP_TEXT_MAX_BYTES); TUNE_ENOMEM.
 */
tune_status tunep_tokenizer_tokenize(const tunep_tokenizer *tok, const char *text, size_t len,
                                     struct tunep_ids *ids, tune_error *err);

/*
 * The basic tokenizer's words (before WordPiece) joined by single spaces, in
 * a NUL-terminated string the caller frees with tunep_free(). For tests and
 * diagnostics. @return as tunep_tokenizer_tokenize().
 */
tune_status tunep_tokenizer_basic(const tunep_tokenizer *tok, const char *text, size_t len,
                                  char **ret_text, tune_error *err);

/*
 * Lengths of the two segments after truncating to max_seq_len tokens,
 * special tokens included (2 for a single sequence, 3 for a pair), the way
 * Hugging Face's slow tokenizers do "longest_first": one token at a time is
 * removed from the end of the longer segment, from the second on ties. A
 * single sequence (pair == 0, len_b ignored) loses tokens from its end.
 * max_seq_len must be at least the number of special tokens.
 */
void tunep_truncate_lengths(size_t len_a, size_t len_b, int pair, size_t max_seq_len, size_t *ret_a,
                            size_t *ret_b);

/*
 * Writes [CLS] a [SEP] (pair == 0) or [CLS] a [SEP] b [SEP] into ids and
 * types (each with room for na + nb + 3), with token type 0 up to and
 * including the first [SEP] and 1 after it (types may be NULL). The segments
 * are used as given: truncate first. Returns the sequence length.
 */
size_t tunep_tokenizer_build(const tunep_tokenizer *tok, const int32_t *a, size_t na,
                             const int32_t *b, size_t nb, int pair, int32_t *ids, int32_t *types);

/*
 * Encodes one sentence (text_b == NULL) or a pair of NUL-terminated texts as
 * BERT input, truncated to max_seq_len with tunep_truncate_lengths(). The
 * three arrays have room for max_seq_len entries each: the first *ret_len
 * hold the sequence (attention mask 1), the rest are padding ([PAD] id,
 * type 0, mask 0). Nothing is written on failure.
 * @return TUNE_OK; TUNE_EINVAL (NULL argument; max_seq_len below 2, or 3 for
 *         a pair); TUNE_ECONFIG (max_seq_len > TUNEP_SEQ_MAX_LEN or a text
 *         too long); TUNE_ENOMEM.
 */
tune_status tunep_tokenizer_encode(const tunep_tokenizer *tok, const char *text_a,
                                   const char *text_b, size_t max_seq_len, int32_t *ret_ids,
                                   int32_t *ret_type_ids, int32_t *ret_mask, size_t *ret_len,
                                   tune_error *err);

/* ---- helpers shared with dataset_tsv.c ---- */

/*
 * Reads a whole file of at most limit bytes into a NUL-terminated buffer the
 * caller frees with tunep_free().
 * @return TUNE_OK; TUNE_EIO (cannot open or read); TUNE_ECONFIG (larger than
 *         limit); TUNE_ENOMEM. err's source is the path for the first two.
 */
tune_status tunep_text_read_file(const char *path, size_t limit, char **ret_data, size_t *ret_len,
                                 tune_error *err);

/* Offset of the first byte of s[0..n) that is not valid UTF-8, or n. */
size_t tunep_text_utf8_check(const char *s, size_t n);

#endif /* TUNE_MODELS_TEXT_TOKENIZER_H */
