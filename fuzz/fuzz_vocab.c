/*
 * fuzz_vocab.c - libFuzzer harness for the WordPiece vocabulary loader
 * (tunep_tokenizer_new() in models/text/tokenizer.c): the input is the
 * vocab.txt, given through an in-memory file (fuzz_util.h). Lower-casing is
 * on for inputs of even length and off for odd ones.
 *
 * Checks on an accepted vocabulary: ids and tokens map to each other both
 * ways (the hash table holds every token once), the special ids are tokens
 * with the right names, and tokenizing and encoding a fixed text with it
 * gives only ids of the vocabulary.
 */
#include "fuzz_util.h"

#include "models/text/tokenizer.h"

static struct fuzz_file file = FUZZ_FILE_INIT;

/* Exercises lower-casing, accents, CJK, punctuation, a long word and bad UTF-8. */
static const char sample[] = "The CAFÉ's naïve [MASK] ##s un-playable 中国人 Σοφία!? "
                             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa x\xff\xc3y";

static void check_special(const tunep_tokenizer *tok, int32_t id, const char *name)
{
    const char *t = tunep_tokenizer_token(tok, id);
    FUZZ_CHECK(t != NULL && strcmp(t, name) == 0);
}

static void check_ids(const tunep_tokenizer *tok, const int32_t *ids, size_t n)
{
    size_t V = tunep_tokenizer_vocab_size(tok);
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(ids[i] >= 0 && (size_t)ids[i] < V);
}

static void check_tokenizer(const tunep_tokenizer *tok)
{
    size_t V = tunep_tokenizer_vocab_size(tok);
    FUZZ_CHECK(V >= 4 && V <= TUNEP_VOCAB_MAX_TOKENS);
    for (size_t i = 0; i < V; i++) {
        const char *t = tunep_tokenizer_token(tok, (int32_t)i);
        FUZZ_CHECK(t != NULL);
        size_t len = strlen(t);
        FUZZ_CHECK(len >= 1 && len <= TUNEP_VOCAB_MAX_TOKEN_BYTES);
        FUZZ_CHECK(tunep_text_utf8_check(t, len) == len);
        FUZZ_CHECK(tunep_tokenizer_token_id(tok, t) == (int32_t)i);
    }
    FUZZ_CHECK(tunep_tokenizer_token(tok, (int32_t)V) == NULL);
    FUZZ_CHECK(tunep_tokenizer_token(tok, -1) == NULL);

    const struct tunep_special_ids *sp = tunep_tokenizer_special(tok);
    check_special(tok, sp->pad, "[PAD]");
    check_special(tok, sp->unk, "[UNK]");
    check_special(tok, sp->cls, "[CLS]");
    check_special(tok, sp->sep, "[SEP]");
    if (sp->mask >= 0)
        check_special(tok, sp->mask, "[MASK]");
    else
        FUZZ_CHECK(tunep_tokenizer_token_id(tok, "[MASK]") == -1);

    struct tunep_ids ids;
    tunep_ids_init(&ids);
    tune_error err = {0};
    FUZZ_CHECK(tunep_tokenizer_tokenize(tok, sample, sizeof sample - 1, &ids, &err) == TUNE_OK);
    check_ids(tok, ids.data, ids.len);
    tunep_ids_done(&ids);

    enum { T = 16 };
    int32_t in[T], types[T], mask[T];
    size_t len = 0;
    FUZZ_CHECK(tunep_tokenizer_encode(tok, sample, "a b", T, in, types, mask, &len, &err) ==
               TUNE_OK);
    FUZZ_CHECK(len >= 3 && len <= T);
    check_ids(tok, in, T);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file_set(&file, data, size);
    tunep_tokenizer *tok = NULL;
    tune_error err = {0};
    tune_status st = tunep_tokenizer_new(path, size % 2 == 0, &tok, &err);
    if (st != TUNE_OK) {
        fuzz_check_error(st, &err);
        FUZZ_CHECK(tok == NULL);
        return 0;
    }
    check_tokenizer(tok);
    tunep_tokenizer_free(tok);
    return 0;
}
