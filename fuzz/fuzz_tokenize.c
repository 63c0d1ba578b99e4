/*
 * fuzz_tokenize.c - libFuzzer harness for the WordPiece tokenizer on
 * arbitrary text (models/text/tokenizer.c): the input is the text, given to
 * tunep_tokenizer_tokenize(), tunep_tokenizer_basic() and, split at its
 * first TAB into a pair, tunep_tokenizer_encode(). Inputs of even length go
 * to an uncased tokenizer, odd ones to a cased one.
 *
 * The vocabulary is fuzz_vocab_data.h, or the file named by the environment
 * variable TUNE_FUZZ_VOCAB (scripts/fuzz passes bert-base-uncased's when
 * the shared data is there, for realistic WordPiece matches).
 *
 * Checks: ids are in the vocabulary; the basic tokenizer's output is valid
 * UTF-8 of words joined by single spaces; tokenizing twice appends the same
 * ids again; encode frames and pads as documented and agrees with
 * tunep_truncate_lengths() on the tokenized segments.
 */
#include "fuzz_util.h"

#include "fuzz_vocab_data.h"
#include "models/text/tokenizer.h"

static tunep_tokenizer *toks[2]; /* [0] cased, [1] uncased */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    struct fuzz_file file = FUZZ_FILE_INIT;
    const char *path = getenv("TUNE_FUZZ_VOCAB");
    if (!path || !*path)
        path = fuzz_file_set(&file, fuzz_vocab, sizeof fuzz_vocab - 1);
    for (int lower = 0; lower < 2; lower++) {
        tune_error err = {0};
        if (tunep_tokenizer_new(path, lower, &toks[lower], &err) != TUNE_OK) {
            fprintf(stderr, "fuzz_tokenize: %s: %s\n", path, err.text);
            abort();
        }
    }
    if (file.fd >= 0)
        close(file.fd);
    return 0;
}

static void check_ids(const tunep_tokenizer *tok, const int32_t *ids, size_t n)
{
    size_t V = tunep_tokenizer_vocab_size(tok);
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(ids[i] >= 0 && (size_t)ids[i] < V);
}

static void check_basic(const tunep_tokenizer *tok, const char *text, size_t len)
{
    char *words = NULL;
    tune_error err = {0};
    tune_status st = tunep_tokenizer_basic(tok, text, len, &words, &err);
    if (st != TUNE_OK) {
        fuzz_check_error(st, &err);
        FUZZ_CHECK(len > TUNEP_TEXT_MAX_BYTES);
        return;
    }
    size_t n = strlen(words);
    FUZZ_CHECK(tunep_text_utf8_check(words, n) == n);
    FUZZ_CHECK(n == 0 || (words[0] != ' ' && words[n - 1] != ' '));
    FUZZ_CHECK(strstr(words, "  ") == NULL);
    tune_free(words);
}

/* The ids of text[0..len), which must tokenize. */
static void tokenize(const tunep_tokenizer *tok, const char *text, size_t len,
                     struct tunep_ids *ids)
{
    tune_error err = {0};
    FUZZ_CHECK(tunep_tokenizer_tokenize(tok, text, len, ids, &err) == TUNE_OK);
}

static void check_encode(const tunep_tokenizer *tok, const char *a, const char *b,
                         size_t max_seq_len)
{
    int32_t *ids = malloc(max_seq_len * sizeof *ids);
    int32_t *types = malloc(max_seq_len * sizeof *types);
    int32_t *mask = malloc(max_seq_len * sizeof *mask);
    FUZZ_CHECK(ids && types && mask);
    size_t len = 0;
    tune_error err = {0};
    FUZZ_CHECK(tunep_tokenizer_encode(tok, a, b, max_seq_len, ids, types, mask, &len, &err) ==
               TUNE_OK);

    struct tunep_ids ta, tb;
    tunep_ids_init(&ta);
    tunep_ids_init(&tb);
    tokenize(tok, a, strlen(a), &ta);
    if (b)
        tokenize(tok, b, strlen(b), &tb);
    size_t na, nb;
    tunep_truncate_lengths(ta.len, tb.len, b != NULL, max_seq_len, &na, &nb);
    const struct tunep_special_ids *sp = tunep_tokenizer_special(tok);
    FUZZ_CHECK(len == na + nb + (b ? 3u : 2u) && len <= max_seq_len);
    FUZZ_CHECK(ids[0] == sp->cls && ids[na + 1] == sp->sep && ids[len - 1] == sp->sep);
    FUZZ_CHECK(na == 0 || memcmp(ids + 1, ta.data, na * sizeof *ids) == 0);
    FUZZ_CHECK(nb == 0 || memcmp(ids + na + 2, tb.data, nb * sizeof *ids) == 0);
    for (size_t t = 0; t < max_seq_len; t++) {
        if (t < len) {
            FUZZ_CHECK(mask[t] == 1 && types[t] == (t <= na + 1 ? 0 : 1));
        } else {
            FUZZ_CHECK(ids[t] == sp->pad && mask[t] == 0 && types[t] == 0);
        }
    }
    check_ids(tok, ids, max_seq_len);
    tunep_ids_done(&tb);
    tunep_ids_done(&ta);
    free(mask);
    free(types);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const tunep_tokenizer *tok = toks[size % 2 == 0];
    const char *text = (const char *)data;

    struct tunep_ids ids;
    tunep_ids_init(&ids);
    tune_error err = {0};
    tune_status st = tunep_tokenizer_tokenize(tok, text, size, &ids, &err);
    if (st != TUNE_OK) {
        fuzz_check_error(st, &err);
        FUZZ_CHECK(size > TUNEP_TEXT_MAX_BYTES && ids.len == 0);
        tunep_ids_done(&ids);
        return 0;
    }
    check_ids(tok, ids.data, ids.len);
    /* Appending: a second call adds the same ids after the first ones. */
    size_t n = ids.len;
    tokenize(tok, text, size, &ids);
    FUZZ_CHECK(ids.len == 2 * n);
    FUZZ_CHECK(n == 0 || memcmp(ids.data, ids.data + n, n * sizeof *ids.data) == 0);
    tunep_ids_done(&ids);

    check_basic(tok, text, size);

    /* encode() takes NUL-terminated texts: a pair when there is a TAB before any NUL. */
    char *copy = fuzz_strndup(data, size);
    char *tab = strchr(copy, '\t');
    const char *b = NULL;
    if (tab) {
        *tab = '\0';
        b = tab + 1;
    }
    check_encode(tok, copy, b, 3 + size % 40);
    free(copy);
    return 0;
}
