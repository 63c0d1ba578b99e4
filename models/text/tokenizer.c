/*
 * tokenizer.c - BERT WordPiece tokenizer, token for token the same as Hugging
 * Face's BertTokenizer (transformers' BasicTokenizer + WordpieceTokenizer, the
 * Python "slow" classes) with an uncased vocabulary such as bert-base-uncased.
 *
 * Pipeline, in HF's order, over code points decoded from UTF-8 (a bad byte
 * reads as U+FFFD):
 *   1. clean: drop NUL, U+FFFD and category C* except TAB LF CR; whitespace
 *      (TAB LF CR, Zs) becomes a space;
 *   2. CJK ideographs (HF's _is_chinese_char ranges) become words of their own;
 *   3. split into words on spaces, and on U+2028/U+2029, which Python's
 *      str.split() also treats as whitespace;
 *   4. per word, when lower-casing: str.lower() (one-to-one mappings, U+0130
 *      to "i" U+0307, and the final-sigma rule within the word), then accent
 *      stripping: NFD and drop category Mn; the spacing marks with a non-zero
 *      combining class that survive are put in canonical order;
 *   5. split words into pieces at each punctuation character;
 *   6. WordPiece: pieces longer than 100 code points are [UNK]; otherwise
 *      greedy longest-match-first with "##" continuations, [UNK] for the whole
 *      piece when some part cannot be matched.
 * HF also NFC-composes the text before step 3. For lower-cased text that
 * step cannot change the result (accent stripping decomposes again, and
 * lower-casing and the sigma context respect canonical equivalence; the
 * goldens in tests/text/data cover every code point), so it is left out.
 * With lowercase == 0 it can matter: decomposed input like "e" U+0301 stays
 * decomposed here but is composed by HF, so cased vocabularies may differ.
 *
 * Unicode data comes from unicode_tables.c, generated from Python's
 * unicodedata by scripts/gen_unicode_tables.py.
 * References: Devlin et al., BERT (2019), section 3 and the google-research/bert
 * tokenization.py; transformers' models/bert/tokenization_bert_legacy.py.
 */
#include "tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "unicode_tables.h"

#define HANGUL_S_BASE  0xAC00u
#define HANGUL_S_COUNT 11172u
#define SIGMA_UPPER    0x3A3u
#define SIGMA_LOWER    0x3C3u
#define SIGMA_FINAL    0x3C2u
#define DOTTED_I_UPPER 0x130u
#define WORD_STORAGE   128 /* code points of a word kept on the stack */

struct tunep_tokenizer {
    int lowercase;
    size_t n_tokens;
    char *pool;        /* the file, each '\n' replaced by '\0': tokens by id */
    uint32_t *tok_off; /* byte offset of token id in pool */
    uint16_t *tok_len; /* its length in bytes */
    int32_t *slots;    /* open addressing, power-of-two size; -1 = empty */
    size_t slot_mask;
    size_t max_key_chars; /* longest lookup key in code points ("##" not counted) */
    struct tunep_special_ids special;
};

/* ---- small vectors -------------------------------------------------------- */

/* A code-point vector that starts in caller storage and moves to the heap to grow. */
struct u32vec {
    uint32_t *data;
    size_t len, cap;
    int heap;
};

static void u32vec_init(struct u32vec *v, uint32_t *storage, size_t cap)
{
    v->data = storage;
    v->len = 0;
    v->cap = cap;
    v->heap = 0;
}

static void u32vec_done(struct u32vec *v)
{
    if (v->heap)
        tunep_free(v->data);
}

static int u32vec_reserve(struct u32vec *v, size_t extra)
{
    if (v->len + extra <= v->cap)
        return 0;
    size_t cap = v->cap ? v->cap : 64;
    while (cap < v->len + extra)
        cap *= 2;
    uint32_t *p = tunep_malloc(cap * sizeof *p);
    if (!p)
        return -1;
    memcpy(p, v->data, v->len * sizeof *p);
    u32vec_done(v);
    v->data = p;
    v->cap = cap;
    v->heap = 1;
    return 0;
}

void tunep_ids_init(struct tunep_ids *v)
{
    v->data = NULL;
    v->len = v->cap = 0;
}

void tunep_ids_done(struct tunep_ids *v)
{
    if (!v)
        return;
    tunep_free(v->data);
    tunep_ids_init(v);
}

static int ids_push(struct tunep_ids *v, int32_t id)
{
    if (v->len == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 64;
        int32_t *p = tunep_realloc(v->data, v->cap * sizeof *p, cap * sizeof *p);
        if (!p)
            return -1;
        v->data = p;
        v->cap = cap;
    }
    v->data[v->len++] = id;
    return 0;
}

/* ---- UTF-8 ---------------------------------------------------------------- */

/*
 * Decodes one code point from s (n > 0 bytes) into *cp and returns the bytes
 * used. Overlong forms, surrogates, values above U+10FFFF and truncated or
 * stray bytes give U+FFFD and consume one byte.
 */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned c = s[0];
    size_t need;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3, v = c & 0x07, min = 0x10000;
    } else {
        *cp = 0xFFFD;
        return 1;
    }
    if (n <= need) {
        *cp = 0xFFFD;
        return 1;
    }
    for (size_t i = 1; i <= need; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *cp = 0xFFFD;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3Fu);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = 0xFFFD;
        return 1;
    }
    *cp = v;
    return need + 1;
}

size_t tunep_text_utf8_check(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = utf8_next(u + i, n - i, &cp);
        if (cp == 0xFFFD && !(k == 3 && u[i] == 0xEF && u[i + 1] == 0xBF && u[i + 2] == 0xBD))
            return i;
        i += k;
    }
    return n;
}

static size_t utf8_put(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* ---- Unicode properties ------------------------------------------------- */

/* Index of the last run whose first code point (runs[i] >> shift) is <= cp. */
static size_t run_find(const uint32_t *runs, size_t n, unsigned shift, uint32_t cp)
{
    size_t lo = 0, hi = n; /* runs[0] starts at 0, so the answer exists */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((runs[mid] >> shift) <= cp)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static unsigned char_class(uint32_t cp)
{
    if (cp < 0x80) {
        if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r')
            return TUNEP_UNI_SPACE;
        if (cp < 0x20 || cp == 0x7F)
            return TUNEP_UNI_DROP;
        if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
            (cp >= 123 && cp <= 126))
            return TUNEP_UNI_PUNCT;
        return TUNEP_UNI_OTHER;
    }
    size_t i = run_find(tunep_uni_class_runs, tunep_uni_class_runs_count, 3, cp);
    return tunep_uni_class_runs[i] & 7u;
}

static unsigned sigma_class(uint32_t cp)
{
    size_t i = run_find(tunep_uni_sigma_runs, tunep_uni_sigma_runs_count, 2, cp);
    return tunep_uni_sigma_runs[i] & 3u;
}

/* HF's _is_chinese_char: the CJK Unified Ideographs blocks, not Hangul or kana. */
static int is_cjk(uint32_t cp)
{
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* One-to-one lower case (U+0130 and U+03A3 are handled by the caller). */
static uint32_t to_lower(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    const struct tunep_uni_lower_run *r = tunep_uni_lower_runs;
    size_t lo = 0, hi = tunep_uni_lower_runs_count;
    if (cp < r[0].first)
        return cp;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].first <= cp)
            lo = mid;
        else
            hi = mid;
    }
    uint32_t off = cp - r[lo].first;
    if (off % r[lo].stride == 0 && off / r[lo].stride < r[lo].count)
        return (uint32_t)((int32_t)cp + r[lo].delta);
    return cp;
}

/* Canonical combining class of a code point accent stripping keeps (mostly 0). */
static unsigned kept_ccc(uint32_t cp)
{
    size_t lo = 0, hi = tunep_uni_kept_ccc_count;
    if (cp < (tunep_uni_kept_ccc[0] >> 8))
        return 0;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((tunep_uni_kept_ccc[mid] >> 8) <= cp)
            lo = mid;
        else
            hi = mid;
    }
    return (tunep_uni_kept_ccc[lo] >> 8) == cp ? (tunep_uni_kept_ccc[lo] & 0xFFu) : 0;
}

/*
 * Points *seq at the accent-stripped form of cp (not Mn) and returns its
 * length, or returns 0 when cp stays as it is.
 */
static size_t strip_lookup(uint32_t cp, const uint32_t **seq, uint32_t *one)
{
    size_t lo = 0, hi = tunep_uni_strip_keys_count;
    if (cp < tunep_uni_strip_keys[0])
        return 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tunep_uni_strip_keys[mid] < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == tunep_uni_strip_keys_count || tunep_uni_strip_keys[lo] != cp)
        return 0;
    uint32_t v = tunep_uni_strip_vals[lo];
    if (!(v & 0x80000000u)) {
        *one = v;
        *seq = one;
        return 1;
    }
    *seq = tunep_uni_strip_pool + ((v >> 8) & 0x7FFFFFu);
    return v & 0xFFu;
}

/* ---- vocabulary hash ------------------------------------------------------ */

static uint32_t key_hash(const char *s, size_t n, int cont)
{
    uint32_t h = cont ? 0x9E3779B9u : 2166136261u; /* FNV-1a, two seeds */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h ^ (h >> 15);
}

/* The lookup key of token id: its bytes after "##" (cont) or all of them. */
static void token_key(const tunep_tokenizer *tok, size_t id, const char **key, size_t *n, int *cont)
{
    const char *t = tok->pool + tok->tok_off[id];
    size_t len = tok->tok_len[id];
    *cont = len >= 2 && t[0] == '#' && t[1] == '#';
    *key = *cont ? t + 2 : t;
    *n = *cont ? len - 2 : len;
}

/* The slot holding key, or the empty slot where it would go. */
static size_t slot_find(const tunep_tokenizer *tok, const char *key, size_t n, int cont)
{
    size_t i = key_hash(key, n, cont) & tok->slot_mask;
    for (;;) {
        int32_t id = tok->slots[i];
        if (id < 0)
            return i;
        const char *k;
        size_t kn;
        int kc;
        token_key(tok, (size_t)id, &k, &kn, &kc);
        if (kc == cont && kn == n && memcmp(k, key, n) == 0)
            return i;
        i = (i + 1) & tok->slot_mask;
    }
}

static int32_t vocab_lookup(const tunep_tokenizer *tok, const char *key, size_t n, int cont)
{
    return tok->slots[slot_find(tok, key, n, cont)];
}

/* ---- loading -------------------------------------------------------------- */

tune_status tunep_text_read_file(const char *path, size_t limit, char **ret_data, size_t *ret_len,
                                 tune_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "cannot open: %s", strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *data = tunep_malloc(cap + 1);
    tune_status st = TUNE_OK;
    if (!data) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory reading '%s'", path);
        goto out;
    }
    for (;;) {
        if (len == cap) {
            if (cap > limit) {
                st = tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0,
                                        "file is larger than the limit of %zu bytes", limit);
                goto out;
            }
            char *p = tunep_realloc(data, cap + 1, 2 * cap + 1);
            if (!p) {
                st = tunep_error_set(err, TUNE_ENOMEM, "out of memory reading '%s'", path);
                goto out;
            }
            data = p;
            cap *= 2;
        }
        size_t got = fread(data + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        st = tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "read error");
        goto out;
    }
    if (len > limit) {
        st = tunep_error_set_at(err, TUNE_ECONFIG, path, 0, 0,
                                "file is larger than the limit of %zu bytes", limit);
        goto out;
    }
    data[len] = '\0';
    *ret_data = data;
    *ret_len = len;
    data = NULL;
out:
    tunep_free(data);
    fclose(f);
    return st;
}

/* Checks one vocabulary line and counts its code points into *ret_chars. */
static tune_status check_token(const char *t, size_t n, const char *path, int line,
                               size_t *ret_chars, tune_error *err)
{
    if (n == 0)
        return tunep_error_set_at(err, TUNE_ECONFIG, path, line, 0, "empty token");
    if (n > TUNEP_VOCAB_MAX_TOKEN_BYTES)
        return tunep_error_set_at(err, TUNE_ECONFIG, path, line, 0, "token longer than %d bytes",
                                  TUNEP_VOCAB_MAX_TOKEN_BYTES);
    size_t bad = tunep_text_utf8_check(t, n);
    if (bad < n)
        return tunep_error_set_at(err, TUNE_ECONFIG, path, line, (int)bad + 1,
                                  "invalid UTF-8 in token");
    size_t chars = 0;
    for (size_t i = 0; i < n; chars++) {
        uint32_t cp;
        size_t k = utf8_next((const unsigned char *)t + i, n - i, &cp);
        if (cp == '\r')
            return tunep_error_set_at(err, TUNE_ECONFIG, path, line, (int)i + 1,
                                      "token contains a carriage return (CRLF line endings?)");
        if (cp == '\0')
            return tunep_error_set_at(err, TUNE_ECONFIG, path, line, (int)i + 1,
                                      "token contains a NUL byte");
        i += k;
    }
    *ret_chars = chars;
    return TUNE_OK;
}

tune_status tunep_tokenizer_new(const char *vocab_path, int lowercase, tunep_tokenizer **ret_tok,
                                tune_error *err)
{
    if (!vocab_path || !ret_tok)
        return tunep_error_set(err, TUNE_EINVAL, "tokenizer: NULL argument");
    tune_status st;
    char *data = NULL;
    size_t len = 0;
    st = tunep_text_read_file(vocab_path, TUNEP_VOCAB_MAX_FILE_BYTES, &data, &len, err);
    if (st != TUNE_OK)
        return st;

    tunep_tokenizer *tok = tunep_calloc(1, sizeof *tok);
    if (!tok) {
        tunep_free(data);
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory loading '%s'", vocab_path);
    }
    tok->lowercase = lowercase != 0;
    tok->pool = data;

    /* count lines: a final line without '\n' is a token too */
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += data[i] == '\n';
    if (len > 0 && data[len - 1] != '\n')
        n++;
    if (n == 0) {
        st = tunep_error_set_at(err, TUNE_ECONFIG, vocab_path, 0, 0, "no tokens");
        goto fail;
    }
    if (n > TUNEP_VOCAB_MAX_TOKENS) {
        st = tunep_error_set_at(err, TUNE_ECONFIG, vocab_path, 0, 0, "more than %d tokens",
                                TUNEP_VOCAB_MAX_TOKENS);
        goto fail;
    }
    size_t nslots = 1;
    while (nslots < 2 * n)
        nslots *= 2;
    tok->tok_off = tunep_malloc(n * sizeof *tok->tok_off);
    tok->tok_len = tunep_malloc(n * sizeof *tok->tok_len);
    tok->slots = tunep_malloc(nslots * sizeof *tok->slots);
    if (!tok->tok_off || !tok->tok_len || !tok->slots) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory loading '%s'", vocab_path);
        goto fail;
    }
    memset(tok->slots, 0xFF, nslots * sizeof *tok->slots);
    tok->slot_mask = nslots - 1;

    size_t pos = 0;
    for (size_t id = 0; id < n; id++) {
        int line = (int)id + 1;
        char *nl = memchr(data + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - data) : len;
        size_t chars = 0;
        st = check_token(data + pos, end - pos, vocab_path, line, &chars, err);
        if (st != TUNE_OK)
            goto fail;
        data[end] = '\0';
        tok->tok_off[id] = (uint32_t)pos;
        tok->tok_len[id] = (uint16_t)(end - pos);
        pos = end + 1;

        const char *key;
        size_t kn;
        int cont;
        token_key(tok, id, &key, &kn, &cont);
        size_t slot = slot_find(tok, key, kn, cont);
        if (tok->slots[slot] >= 0) {
            st = tunep_error_set_at(err, TUNE_ECONFIG, vocab_path, line, 0,
                                    "duplicate token '%s' (first on line %d)",
                                    data + tok->tok_off[id], (int)tok->slots[slot] + 1);
            goto fail;
        }
        tok->slots[slot] = (int32_t)id;
        size_t key_chars = chars - (cont ? 2 : 0);
        if (key_chars > tok->max_key_chars)
            tok->max_key_chars = key_chars;
    }
    tok->n_tokens = n;

    static const char *const names[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    int32_t *ids[] = {&tok->special.pad, &tok->special.unk, &tok->special.cls, &tok->special.sep,
                      &tok->special.mask};
    for (size_t i = 0; i < 5; i++) {
        *ids[i] = vocab_lookup(tok, names[i], strlen(names[i]), 0);
        if (*ids[i] < 0 && i < 4) {
            st = tunep_error_set_at(err, TUNE_ECONFIG, vocab_path, 0, 0,
                                    "missing special token '%s'", names[i]);
            goto fail;
        }
    }
    *ret_tok = tok;
    return TUNE_OK;
fail:
    tunep_tokenizer_free(tok);
    return st;
}

void tunep_tokenizer_free(tunep_tokenizer *tok)
{
    if (!tok)
        return;
    tunep_free(tok->pool);
    tunep_free(tok->tok_off);
    tunep_free(tok->tok_len);
    tunep_free(tok->slots);
    tunep_free(tok);
}

size_t tunep_tokenizer_vocab_size(const tunep_tokenizer *tok)
{
    return tok ? tok->n_tokens : 0;
}

const struct tunep_special_ids *tunep_tokenizer_special(const tunep_tokenizer *tok)
{
    return tok ? &tok->special : NULL;
}

int32_t tunep_tokenizer_token_id(const tunep_tokenizer *tok, const char *token)
{
    if (!tok || !token)
        return -1;
    size_t n = strlen(token);
    int cont = n >= 2 && token[0] == '#' && token[1] == '#';
    return cont ? vocab_lookup(tok, token + 2, n - 2, 1) : vocab_lookup(tok, token, n, 0);
}

const char *tunep_tokenizer_token(const tunep_tokenizer *tok, int32_t id)
{
    if (!tok || id < 0 || (size_t)id >= tok->n_tokens)
        return NULL;
    return tok->pool + tok->tok_off[id];
}

/* ---- tokenizing ----------------------------------------------------------- */

/* Per-call state: the word being built and its later forms. */
struct work {
    const tunep_tokenizer *tok;
    struct u32vec raw;      /* cleaned code points of the current word */
    struct u32vec low;      /* after lower-casing */
    struct u32vec str;      /* after accent stripping */
    struct tunep_ids *ids;  /* output ids (tokenize), or */
    struct tunep_buf *text; /* output words (basic) */
};

/* The final-sigma rule of Python's str.lower() for w[i] == U+03A3. */
static int sigma_is_final(const uint32_t *w, size_t n, size_t i)
{
    size_t j = i;
    unsigned c = TUNEP_UNI_SIGMA_OTHER;
    while (j > 0) {
        c = sigma_class(w[--j]);
        if (c != TUNEP_UNI_SIGMA_IGNORABLE)
            break;
    }
    if (c != TUNEP_UNI_SIGMA_CASED)
        return 0;
    for (j = i + 1; j < n; j++) {
        c = sigma_class(w[j]);
        if (c != TUNEP_UNI_SIGMA_IGNORABLE)
            return c != TUNEP_UNI_SIGMA_CASED;
    }
    return 1;
}

/* Appends cp to str, keeping non-starters after run_start in canonical order. */
static void put_kept(struct u32vec *v, uint32_t cp, size_t *run_start)
{
    unsigned ccc = cp < 0x300 ? 0 : kept_ccc(cp);
    size_t p = v->len;
    if (ccc == 0) {
        v->data[v->len++] = cp;
        *run_start = v->len;
        return;
    }
    while (p > *run_start && kept_ccc(v->data[p - 1]) > ccc)
        p--;
    memmove(v->data + p + 1, v->data + p, (v->len - p) * sizeof *v->data);
    v->data[p] = cp;
    v->len++;
}

/* Lower-cases and strips accents from w->raw into w->str. */
static int normalize_word(struct work *w)
{
    const uint32_t *raw = w->raw.data;
    size_t n = w->raw.len;
    w->low.len = 0;
    if (u32vec_reserve(&w->low, 2 * n) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = raw[i];
        if (cp == DOTTED_I_UPPER) {
            w->low.data[w->low.len++] = 'i';
            w->low.data[w->low.len++] = 0x307;
        } else if (cp == SIGMA_UPPER) {
            w->low.data[w->low.len++] = sigma_is_final(raw, n, i) ? SIGMA_FINAL : SIGMA_LOWER;
        } else {
            w->low.data[w->low.len++] = to_lower(cp);
        }
    }

    size_t run_start = 0;
    w->str.len = 0;
    for (size_t i = 0; i < w->low.len; i++) {
        uint32_t cp = w->low.data[i], one;
        const uint32_t *seq;
        if (u32vec_reserve(&w->str, 3) != 0)
            return -1;
        if (cp < 0x80) {
            w->str.data[w->str.len++] = cp;
            run_start = w->str.len;
            continue;
        }
        unsigned cls = char_class(cp);
        if (cls == TUNEP_UNI_MN0) {
            run_start = w->str.len; /* a starter, though dropped */
        } else if (cls == TUNEP_UNI_MN) {
            continue;
        } else if (cp >= HANGUL_S_BASE && cp < HANGUL_S_BASE + HANGUL_S_COUNT) {
            uint32_t s = cp - HANGUL_S_BASE;
            put_kept(&w->str, 0x1100 + s / 588, &run_start);
            put_kept(&w->str, 0x1161 + (s % 588) / 28, &run_start);
            if (s % 28)
                put_kept(&w->str, 0x11A7 + s % 28, &run_start);
        } else {
            size_t k = strip_lookup(cp, &seq, &one);
            if (k == 0) {
                put_kept(&w->str, cp, &run_start);
                continue;
            }
            if (u32vec_reserve(&w->str, k) != 0)
                return -1;
            for (size_t j = 0; j < k; j++) {
                if (seq[j] == 0)
                    run_start = w->str.len;
                else
                    put_kept(&w->str, seq[j], &run_start);
            }
        }
    }
    return 0;
}

/* WordPiece of one piece (no spaces, no punctuation inside). */
static int wordpiece(struct work *w, const uint32_t *p, size_t n)
{
    const tunep_tokenizer *tok = w->tok;
    if (w->text) {
        char tmp[4];
        if (w->text->len > 0)
            tunep_buf_append(w->text, " ", 1);
        for (size_t i = 0; i < n; i++)
            tunep_buf_append(w->text, tmp, utf8_put(tmp, p[i]));
        return w->text->oom ? -1 : 0;
    }
    if (n > TUNEP_WORD_MAX_CHARS)
        return ids_push(w->ids, tok->special.unk);

    char bytes[4 * TUNEP_WORD_MAX_CHARS];
    size_t off[TUNEP_WORD_MAX_CHARS + 1];
    off[0] = 0;
    for (size_t i = 0; i < n; i++)
        off[i + 1] = off[i] + utf8_put(bytes + off[i], p[i]);

    size_t mark = w->ids->len;
    for (size_t start = 0; start < n;) {
        size_t end = n - start > tok->max_key_chars ? start + tok->max_key_chars : n;
        int32_t id = -1;
        for (; end > start; end--) {
            id = vocab_lookup(tok, bytes + off[start], off[end] - off[start], start > 0);
            if (id >= 0)
                break;
        }
        if (id < 0) {
            w->ids->len = mark;
            return ids_push(w->ids, tok->special.unk);
        }
        if (ids_push(w->ids, id) != 0)
            return -1;
        start = end;
    }
    return 0;
}

/* Normalizes the word in w->raw, splits it at punctuation and emits the pieces. */
static int flush_word(struct work *w)
{
    if (w->raw.len == 0)
        return 0;
    const uint32_t *s = w->raw.data;
    size_t n = w->raw.len;
    if (w->tok->lowercase) {
        if (normalize_word(w) != 0)
            return -1;
        s = w->str.data;
        n = w->str.len;
    }
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (char_class(s[i]) != TUNEP_UNI_PUNCT)
            continue;
        if (i > start && wordpiece(w, s + start, i - start) != 0)
            return -1;
        if (wordpiece(w, s + i, 1) != 0)
            return -1;
        start = i + 1;
    }
    if (n > start && wordpiece(w, s + start, n - start) != 0)
        return -1;
    w->raw.len = 0;
    return 0;
}

static int run_text(struct work *w, const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        i += utf8_next(s + i, len - i, &cp);
        unsigned cls = char_class(cp);
        if (cls == TUNEP_UNI_DROP)
            continue;
        if (cls == TUNEP_UNI_SPACE || cls == TUNEP_UNI_SPLIT) {
            if (flush_word(w) != 0)
                return -1;
            continue;
        }
        if (is_cjk(cp)) {
            if (flush_word(w) != 0)
                return -1;
        }
        if (u32vec_reserve(&w->raw, 1) != 0)
            return -1;
        w->raw.data[w->raw.len++] = cp;
        if (is_cjk(cp) && flush_word(w) != 0)
            return -1;
    }
    return flush_word(w);
}

static tune_status run(const tunep_tokenizer *tok, const char *text, size_t len,
                       struct tunep_ids *ids, struct tunep_buf *out, tune_error *err)
{
    if (!tok || (!text && len > 0))
        return tunep_error_set(err, TUNE_EINVAL, "tokenizer: NULL argument");
    if (len > TUNEP_TEXT_MAX_BYTES)
        return tunep_error_set(err, TUNE_ECONFIG, "text of %zu bytes exceeds the limit of %d", len,
                               TUNEP_TEXT_MAX_BYTES);
    /* most words fit in these; longer ones move to the heap */
    uint32_t raw[WORD_STORAGE], low[2 * WORD_STORAGE], str[3 * WORD_STORAGE];
    struct work w;
    w.tok = tok;
    w.ids = ids;
    w.text = out;
    u32vec_init(&w.raw, raw, WORD_STORAGE);
    u32vec_init(&w.low, low, 2 * WORD_STORAGE);
    u32vec_init(&w.str, str, 3 * WORD_STORAGE);
    size_t mark = ids ? ids->len : 0;
    int rc = run_text(&w, text, len);
    u32vec_done(&w.raw);
    u32vec_done(&w.low);
    u32vec_done(&w.str);
    if (rc != 0) {
        if (ids)
            ids->len = mark;
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory tokenizing");
    }
    return TUNE_OK;
}

tune_status tunep_tokenizer_tokenize(const tunep_tokenizer *tok, const char *text, size_t len,
                                     struct tunep_ids *ids, tune_error *err)
{
    if (!ids)
        return tunep_error_set(err, TUNE_EINVAL, "tokenizer: NULL argument");
    return run(tok, text, len, ids, NULL, err);
}

tune_status tunep_tokenizer_basic(const tunep_tokenizer *tok, const char *text, size_t len,
                                  char **ret_text, tune_error *err)
{
    if (!ret_text)
        return tunep_error_set(err, TUNE_EINVAL, "tokenizer: NULL argument");
    struct tunep_buf b;
    tunep_buf_init(&b);
    tune_status st = run(tok, text, len, NULL, &b, err);
    if (st != TUNE_OK) {
        tunep_buf_done(&b);
        return st;
    }
    if (b.len == 0) {
        tunep_buf_done(&b);
        *ret_text = tunep_strdup("");
    } else {
        *ret_text = tunep_buf_take(&b);
    }
    if (!*ret_text)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory tokenizing");
    return TUNE_OK;
}

/* ---- sequences ------------------------------------------------------------ */

void tunep_truncate_lengths(size_t len_a, size_t len_b, int pair, size_t max_seq_len, size_t *ret_a,
                            size_t *ret_b)
{
    size_t specials = pair ? 3 : 2;
    size_t budget = max_seq_len > specials ? max_seq_len - specials : 0;
    if (!pair) {
        *ret_a = len_a < budget ? len_a : budget;
        *ret_b = 0;
        return;
    }
    if (len_a + len_b <= budget) {
        *ret_a = len_a;
        *ret_b = len_b;
        return;
    }
    /*
     * transformers' truncate_sequences(): the first `diff` removals even out
     * the lengths, the rest alternate, with the second segment taking the
     * odd one; this equals removing one token at a time from the longer
     * segment (the second on ties).
     */
    size_t remove = len_a + len_b - budget;
    size_t diff = len_a > len_b ? len_a - len_b : len_b - len_a;
    size_t first = diff < remove ? diff : remove;
    size_t second = remove - first;
    size_t cut_a, cut_b;
    if (len_a > len_b) {
        cut_a = first + second / 2;
        cut_b = second - second / 2;
    } else {
        cut_a = second / 2;
        cut_b = first + second - second / 2;
    }
    *ret_a = len_a - cut_a;
    *ret_b = len_b - cut_b;
}

size_t tunep_tokenizer_build(const tunep_tokenizer *tok, const int32_t *a, size_t na,
                             const int32_t *b, size_t nb, int pair, int32_t *ids, int32_t *types)
{
    size_t n = 0;
    ids[n++] = tok->special.cls;
    if (na > 0)
        memcpy(ids + n, a, na * sizeof *a);
    n += na;
    ids[n++] = tok->special.sep;
    size_t first = n;
    if (pair) {
        if (nb > 0)
            memcpy(ids + n, b, nb * sizeof *b);
        n += nb;
        ids[n++] = tok->special.sep;
    }
    if (types) {
        for (size_t i = 0; i < n; i++)
            types[i] = i < first ? 0 : 1;
    }
    return n;
}

tune_status tunep_tokenizer_encode(const tunep_tokenizer *tok, const char *text_a,
                                   const char *text_b, size_t max_seq_len, int32_t *ret_ids,
                                   int32_t *ret_type_ids, int32_t *ret_mask, size_t *ret_len,
                                   tune_error *err)
{
    if (!tok || !text_a || !ret_ids || !ret_type_ids || !ret_mask || !ret_len)
        return tunep_error_set(err, TUNE_EINVAL, "tokenizer encode: NULL argument");
    int pair = text_b != NULL;
    if (max_seq_len < (size_t)(pair ? 3 : 2))
        return tunep_error_set(
            err, TUNE_EINVAL, "max_seq_len %zu leaves no room for the special tokens", max_seq_len);
    if (max_seq_len > TUNEP_SEQ_MAX_LEN)
        return tunep_error_set(err, TUNE_ECONFIG, "max_seq_len %zu exceeds the limit of %d",
                               max_seq_len, TUNEP_SEQ_MAX_LEN);
    struct tunep_ids ids;
    tunep_ids_init(&ids);
    tune_status st = tunep_tokenizer_tokenize(tok, text_a, strlen(text_a), &ids, err);
    size_t len_a = ids.len, len_b = 0;
    if (st == TUNE_OK && pair) {
        st = tunep_tokenizer_tokenize(tok, text_b, strlen(text_b), &ids, err);
        len_b = ids.len - len_a;
    }
    if (st != TUNE_OK) {
        tunep_ids_done(&ids);
        return st;
    }
    size_t keep_a, keep_b;
    tunep_truncate_lengths(len_a, len_b, pair, max_seq_len, &keep_a, &keep_b);
    /* ids.data is NULL when neither text has a token: no pointer arithmetic on it then. */
    const int32_t *b = ids.data ? ids.data + len_a : NULL;
    size_t n = tunep_tokenizer_build(tok, ids.data, keep_a, b, keep_b, pair, ret_ids, ret_type_ids);
    for (size_t i = 0; i < max_seq_len; i++) {
        ret_mask[i] = i < n;
        if (i >= n) {
            ret_ids[i] = tok->special.pad;
            ret_type_ids[i] = 0;
        }
    }
    *ret_len = n;
    tunep_ids_done(&ids);
    return TUNE_OK;
}
