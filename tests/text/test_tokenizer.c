/*
 * test_tokenizer.c - the WordPiece tokenizer against Hugging Face's
 * BertTokenizer: ids of hand-written hard strings, seeded random strings, the
 * first rows of the shared SST-2 / TREC / RTE files and HF's pair truncation
 * (goldens in tests/text/data, made by tests/tools/gen_tokenizer_golden.py), a
 * hash per block of 4096 code points of the basic tokenizer's output for
 * every code point, plus vocabulary errors, truncation arithmetic, encoding
 * layout, invalid UTF-8 and allocation failures.
 *
 * Needs the shared data (TUNE_SHARED_DATA); exits 77 (skipped) without it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check_util.h"
#include "base/base.h"
#include "models/text/tokenizer.h"

#ifndef TEXT_GOLDEN_DIR
#error "TEXT_GOLDEN_DIR must name tests/text/data"
#endif

static tunep_tokenizer *tok;
static char vocab_path[4096];

/* ---- helpers -------------------------------------------------------------- */

static int shared_data_dir(char *buf, size_t size)
{
    const char *d = getenv("TUNE_SHARED_DATA");
    struct stat sb;
    if (!d || !*d)
        return 0;
    snprintf(buf, size, "%s/vocab/bert-base-uncased-vocab.txt", d);
    return stat(buf, &sb) == 0;
}

static void load_uncased(void)
{
    tune_error err;
    memset(&err, 0, sizeof err);
    if (tunep_tokenizer_new(vocab_path, 1, &tok, &err) != TUNE_OK) {
        fprintf(stderr, "cannot load %s: %s\n", vocab_path, err.text);
        tok = NULL;
    }
}

static void free_uncased(void)
{
    tunep_tokenizer_free(tok);
    tok = NULL;
}

/* Splits text into lines in place; returns the count (comment lines skipped). */
static size_t split_lines(char *text, char **lines, size_t max)
{
    size_t n = 0;
    for (char *p = text; *p && n < max;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        if (*p != '#')
            lines[n++] = p;
        if (!nl)
            break;
        p = nl + 1;
    }
    return n;
}

/* Parses space-separated ids into out; returns the count. */
static size_t parse_ids(const char *s, int32_t *out, size_t max)
{
    size_t n = 0;
    while (*s && n < max) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s)
            break;
        out[n++] = (int32_t)v;
        s = end;
    }
    return n;
}

/* Undoes the golden escaping (printable ASCII, "\\\\", "\\xHH"); returns the length. */
static size_t unescape(const char *s, char *out)
{
    size_t n = 0;
    while (*s) {
        if (s[0] == '\\' && s[1] == '\\') {
            out[n++] = '\\';
            s += 2;
        } else if (s[0] == '\\' && s[1] == 'x') {
            char hex[3] = {s[2], s[3], 0};
            out[n++] = (char)strtol(hex, NULL, 16);
            s += 4;
        } else {
            out[n++] = *s++;
        }
    }
    out[n] = '\0';
    return n;
}

/* Writes the tokens of ids as "tok tok tok" into buf. */
static const char *tokens_str(const int32_t *ids, size_t n, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && len + 1 < size; i++) {
        const char *t = tunep_tokenizer_token(tok, ids[i]);
        int k = snprintf(buf + len, size - len, "%s%s", i ? " " : "", t ? t : "<bad id>");
        if (k < 0)
            break;
        len += (size_t)k;
    }
    return buf;
}

/* Asserts that got equals want, naming the first mismatch. */
static void expect_ids(const char *what, int line, const int32_t *want, size_t nwant,
                       const int32_t *got, size_t ngot)
{
    size_t i = 0;
    while (i < nwant && i < ngot && want[i] == got[i])
        i++;
    if (i == nwant && i == ngot)
        return;
    static char a[8192], b[8192];
    ck_abort_msg("%s (golden line %d): first mismatch at token %zu\n  text: see golden file\n"
                 "  want: %s\n  got:  %s",
                 what, line, i, tokens_str(want, nwant, a, sizeof a),
                 tokens_str(got, ngot, b, sizeof b));
}

static char *slurp_golden(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", TEXT_GOLDEN_DIR, name);
    char *s = tune_test_slurp(path);
    ck_assert_msg(s != NULL, "cannot read %s", path);
    return s;
}

/* The first rows of a shared TSV file, each split into its tab-separated fields. */
struct tsv {
    char *text;
    char *lines[4096];
    size_t n;
};

static void tsv_read(struct tsv *t, const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", getenv("TUNE_SHARED_DATA"), rel);
    t->text = tune_test_slurp(path);
    ck_assert_msg(t->text != NULL, "cannot read %s", path);
    t->n = split_lines(t->text, t->lines, 4096);
    ck_assert_uint_gt(t->n, 1);
}

static char *field(char *line, int k)
{
    for (int i = 0; i < k; i++) {
        line = strchr(line, '\t');
        ck_assert_ptr_nonnull(line);
        line++;
    }
    return line;
}

static size_t field_len(const char *f)
{
    const char *t = strchr(f, '\t');
    return t ? (size_t)(t - f) : strlen(f);
}

/* ---- vocabulary ----------------------------------------------------------- */

START_TEST(test_vocab_facts)
{
    ck_assert_ptr_nonnull(tok);
    ck_assert_uint_eq(tunep_tokenizer_vocab_size(tok), 30522);
    const struct tunep_special_ids *sp = tunep_tokenizer_special(tok);
    ck_assert_int_eq(sp->pad, 0);
    ck_assert_int_eq(sp->unk, 100);
    ck_assert_int_eq(sp->cls, 101);
    ck_assert_int_eq(sp->sep, 102);
    ck_assert_int_eq(sp->mask, 103);
    ck_assert_str_eq(tunep_tokenizer_token(tok, 999), "!");
    ck_assert_str_eq(tunep_tokenizer_token(tok, 1), "[unused0]");
    ck_assert_str_eq(tunep_tokenizer_token(tok, 30521), "##\xef\xbd\x9e");
    ck_assert_int_eq(tunep_tokenizer_token_id(tok, "##\xef\xbd\x9e"), 30521);
    ck_assert_int_eq(tunep_tokenizer_token_id(tok, "the"), 1996);
    ck_assert_int_eq(tunep_tokenizer_token_id(tok, "##s"), 2015);
    ck_assert_int_eq(tunep_tokenizer_token_id(tok, "not-a-token"), -1);
    ck_assert_ptr_null(tunep_tokenizer_token(tok, -1));
    ck_assert_ptr_null(tunep_tokenizer_token(tok, 30522));
}
END_TEST

/* Writes content to dir/name and returns the path (static buffer). */
static const char *write_file(const char *dir, const char *name, const char *content, size_t n)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(content, 1, n, f), n);
    fclose(f);
    return path;
}

#define SPECIALS "[PAD]\n[UNK]\n[CLS]\n[SEP]\n"

static void expect_vocab_error(const char *content, tune_status code, int line, const char *text)
{
    char *dir = tune_test_mkdtemp();
    ck_assert_ptr_nonnull(dir);
    const char *path = write_file(dir, "v.txt", content, strlen(content));
    tune_error err;
    memset(&err, 0, sizeof err);
    tunep_tokenizer *t = (tunep_tokenizer *)&err; /* must stay untouched */
    ck_assert_int_eq(tunep_tokenizer_new(path, 1, &t, &err), code);
    ck_assert_ptr_eq(t, (tunep_tokenizer *)&err);
    ck_assert_int_eq(err.code, code);
    ck_assert_int_eq(err.line, line);
    ck_assert_str_eq(err.text, text);
    ck_assert_str_eq(err.source, path);
    tune_test_rmtree(dir);
    free(dir);
}

START_TEST(test_vocab_errors)
{
    expect_vocab_error(SPECIALS "a\n\nb\n", TUNE_ECONFIG, 6, "empty token");
    expect_vocab_error(SPECIALS "a\nb\nc\nb\n", TUNE_ECONFIG, 8,
                       "duplicate token 'b' (first on line 6)");
    expect_vocab_error(SPECIALS "##x\nx\n##x\n", TUNE_ECONFIG, 7,
                       "duplicate token '##x' (first on line 5)");
    expect_vocab_error("[PAD]\r\n[UNK]\r\n", TUNE_ECONFIG, 1,
                       "token contains a carriage return (CRLF line endings?)");
    expect_vocab_error(SPECIALS "ok\nbad\xff\n", TUNE_ECONFIG, 6, "invalid UTF-8 in token");
    expect_vocab_error(SPECIALS "over\xc0\xaflong\n", TUNE_ECONFIG, 5, "invalid UTF-8 in token");
    expect_vocab_error("[PAD]\n[UNK]\n[SEP]\n", TUNE_ECONFIG, 0, "missing special token '[CLS]'");
    expect_vocab_error("", TUNE_ECONFIG, 0, "no tokens");
    char big[512];
    memset(big, 'x', 201);
    snprintf(big + 201, sizeof big - 201, "\n");
    char content[1024];
    snprintf(content, sizeof content, SPECIALS "%s", big);
    expect_vocab_error(content, TUNE_ECONFIG, 5, "token longer than 200 bytes");

    tune_error err;
    memset(&err, 0, sizeof err);
    tunep_tokenizer *t = NULL;
    ck_assert_int_eq(tunep_tokenizer_new("/nonexistent/vocab.txt", 1, &t, &err), TUNE_EIO);
    ck_assert_ptr_null(t);
    ck_assert_str_eq(err.source, "/nonexistent/vocab.txt");
    ck_assert_int_eq(tunep_tokenizer_new(NULL, 1, &t, &err), TUNE_EINVAL);
}
END_TEST

/* A vocabulary without a final newline, WordPiece with "##" pieces, [UNK] and case. */
START_TEST(test_tiny_vocab)
{
    char *dir = tune_test_mkdtemp();
    const char *v = SPECIALS "un\n##aff\n##able\naff\nHello\n##llo\nhe\n!\n\xc3\xa9t\xc3\xa9";
    const char *path = write_file(dir, "v.txt", v, strlen(v));
    tunep_tokenizer *t[2];
    ck_assert_int_eq(tunep_tokenizer_new(path, 1, &t[1], NULL), TUNE_OK);
    ck_assert_int_eq(tunep_tokenizer_new(path, 0, &t[0], NULL), TUNE_OK);
    ck_assert_uint_eq(tunep_tokenizer_vocab_size(t[1]), 13);
    ck_assert_int_eq(tunep_tokenizer_token_id(t[1], "\xc3\xa9t\xc3\xa9"), 12);
    ck_assert_int_eq(tunep_tokenizer_special(t[1])->mask, -1);

    static const struct {
        int lower;
        const char *text;
        int32_t want[8];
        size_t n;
    } cases[] = {
        {1, "unaffable", {4, 5, 6}, 3},
        {1, "UnAffAble!", {4, 5, 6, 11}, 4},
        {1, "aff unaff affx", {7, 4, 5, 1}, 4}, /* "affx" has no split: one [UNK] */
        {1, "Hello", {10, 9}, 2},               /* lower-cased: "he" "##llo" */
        {0, "Hello hello", {8, 10, 9}, 3},      /* cased: "Hello", "he" "##llo" */
        {1, "\xc3\x89T\xc3\x89", {1}, 1},       /* accents stripped: "ete" is unknown */
        {0, "\xc3\xa9t\xc3\xa9", {12}, 1},      /* kept as is when cased */
        {1, "", {0}, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tunep_ids ids;
        tunep_ids_init(&ids);
        ck_assert_int_eq(tunep_tokenizer_tokenize(t[cases[i].lower], cases[i].text,
                                                  strlen(cases[i].text), &ids, NULL),
                         TUNE_OK);
        ck_assert_msg(ids.len == cases[i].n, "case %zu: %zu ids", i, ids.len);
        for (size_t k = 0; k < ids.len; k++)
            ck_assert_msg(ids.data[k] == cases[i].want[k], "case %zu id %zu: %d", i, k,
                          (int)ids.data[k]);
        tunep_ids_done(&ids);
    }
    tunep_tokenizer_free(t[0]);
    tunep_tokenizer_free(t[1]);
    tune_test_rmtree(dir);
    free(dir);
}
END_TEST

/* ---- goldens -------------------------------------------------------------- */

static void check_text_golden(const char *name)
{
    char *text = slurp_golden(name);
    static char *lines[4096];
    size_t n = split_lines(text, lines, 4096);
    ck_assert_uint_gt(n, 50);
    static char raw[1 << 16];
    static int32_t want[4096];
    for (size_t i = 0; i < n; i++) {
        char *tab = strchr(lines[i], '\t');
        ck_assert_ptr_nonnull(tab);
        *tab = '\0';
        size_t len = unescape(lines[i], raw);
        size_t nwant = parse_ids(tab + 1, want, 4096);
        struct tunep_ids ids;
        tunep_ids_init(&ids);
        ck_assert_int_eq(tunep_tokenizer_tokenize(tok, raw, len, &ids, NULL), TUNE_OK);
        if (ids.len != nwant || (nwant && memcmp(ids.data, want, nwant * sizeof *want) != 0)) {
            fprintf(stderr, "%s: text '%s'\n", name, lines[i]);
            expect_ids(name, (int)i + 1, want, nwant, ids.data, ids.len);
        }
        tunep_ids_done(&ids);
    }
    free(text);
}

START_TEST(test_golden_tricky)
{
    check_text_golden("tricky.txt");
}
END_TEST

START_TEST(test_golden_random)
{
    check_text_golden("random.txt");
}
END_TEST

static void check_single_golden(const char *golden, const char *rel)
{
    char *text = slurp_golden(golden);
    static char *lines[4096];
    size_t n = split_lines(text, lines, 4096);
    ck_assert_uint_eq(n, 300);
    struct tsv t;
    tsv_read(&t, rel);
    ck_assert_uint_ge(t.n, 301);
    static int32_t want[4096];
    for (size_t i = 0; i < n; i++) {
        char *sentence = t.lines[i + 1];
        size_t nwant = parse_ids(lines[i], want, 4096);
        struct tunep_ids ids;
        tunep_ids_init(&ids);
        ck_assert_int_eq(tunep_tokenizer_tokenize(tok, sentence, field_len(sentence), &ids, NULL),
                         TUNE_OK);
        if (ids.len != nwant || (nwant && memcmp(ids.data, want, nwant * sizeof *want) != 0)) {
            fprintf(stderr, "%s row %zu: %.*s\n", rel, i + 1, (int)field_len(sentence), sentence);
            expect_ids(golden, (int)i + 1, want, nwant, ids.data, ids.len);
        }
        tunep_ids_done(&ids);
    }
    free(t.text);
    free(text);
}

START_TEST(test_golden_sst2_dev)
{
    check_single_golden("sst2_dev.txt", "sst2/dev.tsv");
}
END_TEST

START_TEST(test_golden_trec_test)
{
    check_single_golden("trec_test.txt", "trec/test.tsv");
}
END_TEST

/* Encodes RTE pairs with tunep_tokenizer_encode and compares ids, types and mask. */
static void check_pair_golden(const char *golden, int has_max_len)
{
    char *text = slurp_golden(golden);
    static char *lines[4096];
    size_t n = split_lines(text, lines, 4096);
    struct tsv t;
    tsv_read(&t, "rte/dev.tsv");
    ck_assert_uint_eq(t.n, 278);
    ck_assert_uint_eq(n, has_max_len ? 2 * 277 : 277);
    static int32_t want[4096], ids[512], types[512], mask[512];
    static char *first[277], *second[277];
    for (size_t r = 0; r < 277; r++) {
        first[r] = t.lines[1 + r];
        second[r] = field(first[r], 1);
        second[r][field_len(second[r])] = '\0';
        first[r][field_len(first[r])] = '\0';
    }
    for (size_t i = 0; i < n; i++) {
        char *p = lines[i];
        size_t max_len = 512;
        if (has_max_len)
            max_len = strtoul(p, &p, 10);
        size_t n_a = strtoul(p, &p, 10);
        size_t nwant = parse_ids(p, want, 4096);
        const char *a = first[i % 277], *b = second[i % 277];
        size_t len = 0;
        ck_assert_int_eq(tunep_tokenizer_encode(tok, a, b, max_len, ids, types, mask, &len, NULL),
                         TUNE_OK);
        if (len != nwant || memcmp(ids, want, nwant * sizeof *want) != 0) {
            fprintf(stderr, "rte/dev.tsv row %zu (max_len %zu): %s | %s\n", i % 277 + 1, max_len, a,
                    b);
            expect_ids(golden, (int)i + 1, want, nwant, ids, len);
        }
        for (size_t k = 0; k < max_len; k++) {
            ck_assert_int_eq(types[k], k < n_a || k >= len ? 0 : 1);
            ck_assert_int_eq(mask[k], k < len);
            if (k >= len)
                ck_assert_int_eq(ids[k], 0);
        }
    }
    free(t.text);
    free(text);
}

START_TEST(test_golden_rte_pairs)
{
    check_pair_golden("rte_dev.txt", 0);
}
END_TEST

START_TEST(test_golden_rte_truncated)
{
    check_pair_golden("rte_dev_trunc.txt", 1);
}
END_TEST

static uint64_t fnv1a64(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001B3ull;
    }
    return h;
}

static size_t put_utf8(char *out, uint32_t cp)
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
    if (cp < 0x10000) { /* surrogates come out as invalid UTF-8, as intended */
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

/*
 * Every code point c, in "A" U+03A3 c U+03A3 c "b" (cleaning, CJK, splitting,
 * lower-casing, accent stripping, punctuation and both sides of the sigma
 * context), through the basic tokenizer; hashed per block as the golden was.
 */
START_TEST(test_golden_unicode_blocks)
{
    char *text = slurp_golden("unicode_blocks.txt");
    static char *lines[512];
    size_t n = split_lines(text, lines, 512);
    ck_assert_uint_eq(n, 0x110000 / 4096);
    for (size_t blk = 0; blk < n; blk++) {
        uint32_t first = (uint32_t)strtoul(lines[blk], NULL, 16);
        uint64_t want = strtoull(strchr(lines[blk], '\t') + 1, NULL, 16);
        ck_assert_uint_eq(first, blk * 4096);
        uint64_t h = 0xCBF29CE484222325ull;
        for (uint32_t cp = first; cp < first + 4096; cp++) {
            char probe[32], c[4];
            size_t k = put_utf8(c, cp), len = 0;
            memcpy(probe + len, "A\xce\xa3", 3), len += 3;
            memcpy(probe + len, c, k), len += k;
            memcpy(probe + len, "\xce\xa3", 2), len += 2;
            memcpy(probe + len, c, k), len += k;
            probe[len++] = 'b';
            char *words = NULL;
            /* plain if: each ck_assert writes a checkpoint, too slow 1.1M times */
            if (tunep_tokenizer_basic(tok, probe, len, &words, NULL) != TUNE_OK)
                ck_abort_msg("U+%04X: basic tokenizer failed", (unsigned)cp);
            h = fnv1a64(h, words, strlen(words));
            h = fnv1a64(h, "\n", 1);
            tunep_free(words);
        }
        ck_assert_msg(h == want, "code points U+%04X..U+%04X: basic tokens differ from HF",
                      (unsigned)first, (unsigned)first + 4095);
    }
    free(text);
}
END_TEST

/* A few basic-tokenizer outputs spelled out (the hashes above cannot show them). */
START_TEST(test_basic_examples)
{
    static const char *const cases[][2] = {
        {"Cr\xc3\xa8me Br\xc3\xbbl\xc3\xa9\x65", "creme brulee"},
        {"\xce\x9f\xce\x94\xce\x9f\xce\xa3. \xce\xa3\xce\x91\xce\xa3",
         "\xce\xbf\xce\xb4\xce\xbf\xcf\x82 . \xcf\x83\xce\xb1\xcf\x82"}, /* final sigma */
        {"\xc4\xb0stanbul", "istanbul"},                                 /* U+0130 */
        {"Stra\xc3\x9f\x65", "stra\xc3\x9f\x65"},                        /* sharp s stays */
        {"don't", "don ' t"},
        {"\xe4\xb8\xad\xe6\x96\x87\x61\x62\x63", "\xe4\xb8\xad \xe6\x96\x87 abc"}, /* CJK */
        {"a\xe2\x80\xa8\x62", "a b"},                             /* U+2028 splits */
        {"zero\xe2\x80\x8bwidth", "zerowidth"},                   /* U+200B (Cf) is dropped */
        {"bad\xff\xfe\x62ytes\xe2\x82", "badbytes"},              /* invalid UTF-8 is dropped */
        {"\xed\x95\x9c", "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab"}, /* Hangul to jamo */
        {"\xe1\xbf\xaf\x61", "` a"},                              /* U+1FEF decomposes to '`' */
        /*
         * canonical order of the kept marks U+1D16D (ccc 226) and U+1D165 (216);
         * a dropped U+0301 (230) between them does not block reordering, a
         * dropped U+0941 (ccc 0) does
         */
        {"x\xf0\x9d\x85\xad\xf0\x9d\x85\xa5y", "x\xf0\x9d\x85\xa5\xf0\x9d\x85\xady"},
        {"a\xf0\x9d\x85\xad\xcc\x81\xf0\x9d\x85\xa5\x62", "a\xf0\x9d\x85\xa5\xf0\x9d\x85\xad\x62"},
        {"a\xf0\x9d\x85\xad\xe0\xa5\x81\xf0\x9d\x85\xa5\x62",
         "a\xf0\x9d\x85\xad\xf0\x9d\x85\xa5\x62"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *words = NULL;
        ck_assert_int_eq(tunep_tokenizer_basic(tok, cases[i][0], strlen(cases[i][0]), &words, NULL),
                         TUNE_OK);
        ck_assert_msg(strcmp(words, cases[i][1]) == 0, "case %zu: '%s', want '%s'", i, words,
                      cases[i][1]);
        tunep_free(words);
    }
}
END_TEST

/* ---- sequences ------------------------------------------------------------ */

/* The rule as HF's docs state it: drop one token at a time from the longer segment. */
static void truncate_slow(size_t a, size_t b, size_t max_len, size_t *ra, size_t *rb)
{
    while (a + b + 3 > max_len) {
        if (a > b)
            a--;
        else
            b--;
    }
    *ra = a;
    *rb = b;
}

START_TEST(test_truncate_lengths)
{
    size_t a, b;
    tunep_truncate_lengths(5, 5, 1, 10, &a, &b); /* ties: the second segment first */
    ck_assert_uint_eq(a, 4);
    ck_assert_uint_eq(b, 3);
    tunep_truncate_lengths(3, 20, 1, 13, &a, &b);
    ck_assert_uint_eq(a, 3);
    ck_assert_uint_eq(b, 7);
    tunep_truncate_lengths(30, 2, 1, 13, &a, &b);
    ck_assert_uint_eq(a, 8);
    ck_assert_uint_eq(b, 2);
    tunep_truncate_lengths(7, 9, 1, 3, &a, &b);
    ck_assert_uint_eq(a + b, 0);
    tunep_truncate_lengths(4, 4, 1, 11, &a, &b);
    ck_assert_uint_eq(a, 4);
    ck_assert_uint_eq(b, 4);
    tunep_truncate_lengths(10, 99, 0, 5, &a, &b);
    ck_assert_uint_eq(a, 3);
    ck_assert_uint_eq(b, 0);
    tunep_truncate_lengths(2, 0, 0, 5, &a, &b);
    ck_assert_uint_eq(a, 2);
    for (size_t la = 0; la <= 40; la++) {
        for (size_t lb = 0; lb <= 40; lb++) {
            for (size_t max_len = 3; max_len <= 90; max_len++) {
                size_t sa, sb;
                truncate_slow(la, lb, max_len, &sa, &sb);
                tunep_truncate_lengths(la, lb, 1, max_len, &a, &b);
                if (a != sa || b != sb)
                    ck_abort_msg("(%zu, %zu, %zu): (%zu, %zu) want (%zu, %zu)", la, lb, max_len, a,
                                 b, sa, sb);
            }
        }
    }
}
END_TEST

START_TEST(test_encode_single)
{
    int32_t ids[8], types[8], mask[8];
    size_t len = 0;
    memset(types, 0x55, sizeof types);
    ck_assert_int_eq(
        tunep_tokenizer_encode(tok, "Hello world", NULL, 8, ids, types, mask, &len, NULL), TUNE_OK);
    static const int32_t want[8] = {101, 7592, 2088, 102, 0, 0, 0, 0};
    ck_assert_uint_eq(len, 4);
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(ids[i], want[i]);
        ck_assert_int_eq(types[i], 0);
        ck_assert_int_eq(mask[i], i < 4);
    }
    /* "the quick brown fox jumps" -> [CLS] the quick brown [SEP] at 5 */
    ck_assert_int_eq(tunep_tokenizer_encode(tok, "the quick brown fox jumps", NULL, 5, ids, types,
                                            mask, &len, NULL),
                     TUNE_OK);
    static const int32_t want5[5] = {101, 1996, 4248, 2829, 102};
    ck_assert_uint_eq(len, 5);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(ids[i], want5[i]);
    ck_assert_int_eq(tunep_tokenizer_encode(tok, "", NULL, 2, ids, types, mask, &len, NULL),
                     TUNE_OK);
    ck_assert_uint_eq(len, 2);
    ck_assert_int_eq(ids[0], 101);
    ck_assert_int_eq(ids[1], 102);
}
END_TEST

START_TEST(test_encode_errors)
{
    int32_t ids[8], types[8], mask[8];
    size_t len = 77;
    tune_error err;
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(tunep_tokenizer_encode(tok, "a", NULL, 1, ids, types, mask, &len, &err),
                     TUNE_EINVAL);
    ck_assert_int_eq(tunep_tokenizer_encode(tok, "a", "b", 2, ids, types, mask, &len, &err),
                     TUNE_EINVAL);
    ck_assert_int_eq(tunep_tokenizer_encode(tok, "a", "b", 8193, ids, types, mask, &len, &err),
                     TUNE_ECONFIG);
    ck_assert_str_eq(err.text, "max_seq_len 8193 exceeds the limit of 8192");
    ck_assert_int_eq(tunep_tokenizer_encode(tok, NULL, "b", 8, ids, types, mask, &len, &err),
                     TUNE_EINVAL);
    ck_assert_uint_eq(len, 77);

    size_t big = (1 << 20) + 1;
    char *s = malloc(big + 1);
    memset(s, 'a', big);
    s[big] = '\0';
    struct tunep_ids v;
    tunep_ids_init(&v);
    ck_assert_int_eq(tunep_tokenizer_tokenize(tok, s, big, &v, &err), TUNE_ECONFIG);
    ck_assert_str_eq(err.text, "text of 1048577 bytes exceeds the limit of 1048576");
    ck_assert_uint_eq(v.len, 0);
    /* at the limit it works: one over-long word is one [UNK] */
    ck_assert_int_eq(tunep_tokenizer_tokenize(tok, s, big - 1, &v, &err), TUNE_OK);
    ck_assert_uint_eq(v.len, 1);
    ck_assert_int_eq(v.data[0], 100);
    tunep_ids_done(&v);
    free(s);
}
END_TEST

/* Random bytes never crash and give valid ids; what is valid UTF-8 stays stable. */
START_TEST(test_random_bytes)
{
    uint64_t x = 0x9E3779B97F4A7C15ull;
    char buf[64];
    for (int iter = 0; iter < 3000; iter++) {
        size_t n = 0;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t len = (size_t)(x % sizeof buf);
        for (; n < len; n++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[n] = (char)(x >> 24);
        }
        struct tunep_ids ids;
        tunep_ids_init(&ids);
        ck_assert_int_eq(tunep_tokenizer_tokenize(tok, buf, len, &ids, NULL), TUNE_OK);
        for (size_t i = 0; i < ids.len; i++)
            if (ids.data[i] < 0 || ids.data[i] >= 30522)
                ck_abort_msg("id %d out of range", (int)ids.data[i]);
        /* appending to a non-empty vector keeps what was there */
        size_t first = ids.len;
        ck_assert_int_eq(tunep_tokenizer_tokenize(tok, buf, len, &ids, NULL), TUNE_OK);
        ck_assert_uint_eq(ids.len, 2 * first);
        ck_assert(first == 0 || memcmp(ids.data, ids.data + first, first * sizeof *ids.data) == 0);
        tunep_ids_done(&ids);
    }
}
END_TEST

/* ---- allocation failures -------------------------------------------------- */

START_TEST(test_alloc_failures)
{
    int ok_new = 0, ok_tok = 0;
    long runs_new = 0, runs_tok = 0; /* more than one: the injected failures were really hit */
    for (long fail_at = 0; fail_at < 100 && !ok_new; fail_at++, runs_new++) {
        tunep_tokenizer *t = NULL;
        tune_error err;
        tune_test_alloc_fail_from(fail_at);
        tune_status st = tunep_tokenizer_new(vocab_path, 1, &t, &err);
        tune_test_alloc_reset();
        if (st == TUNE_OK) {
            ok_new = 1;
            tunep_tokenizer_free(t);
        } else {
            ck_assert_int_eq(st, TUNE_ENOMEM);
            ck_assert_ptr_null(t);
        }
    }
    /* words longer than the tokenizer's stack storage make its buffers grow */
    char text[1024];
    snprintf(text, sizeof text, "Crème Brûlée, ΟΔΟΣ and 中文 %0400d %0150d", 7, 9);
    for (long fail_at = 0; fail_at < 100 && !ok_tok; fail_at++, runs_tok++) {
        struct tunep_ids ids;
        tunep_ids_init(&ids);
        tune_test_alloc_fail_from(fail_at);
        tune_status st = tunep_tokenizer_tokenize(tok, text, strlen(text), &ids, NULL);
        char *words = NULL;
        tune_status st2 = tunep_tokenizer_basic(tok, text, strlen(text), &words, NULL);
        tune_test_alloc_reset();
        ck_assert(st == TUNE_OK || st == TUNE_ENOMEM);
        ck_assert(st2 == TUNE_OK || st2 == TUNE_ENOMEM);
        if (st != TUNE_OK)
            ck_assert_uint_eq(ids.len, 0);
        ok_tok = st == TUNE_OK && st2 == TUNE_OK;
        tunep_ids_done(&ids);
        tunep_free(words);
    }
    ck_assert(ok_new && ok_tok);
    ck_assert_int_gt(runs_new, 1);
    ck_assert_int_gt(runs_tok, 1);
}
END_TEST

static Suite *tokenizer_suite(void)
{
    if (!shared_data_dir(vocab_path, sizeof vocab_path)) {
        fprintf(stderr, "TUNE_SHARED_DATA has no vocab/bert-base-uncased-vocab.txt: skipped\n");
        exit(77);
    }
    Suite *s = suite_create("tokenizer");
    TCase *tc = tcase_create("vocab");
    tcase_add_unchecked_fixture(tc, load_uncased, free_uncased);
    tcase_add_test(tc, test_vocab_facts);
    tcase_add_test(tc, test_vocab_errors);
    tcase_add_test(tc, test_tiny_vocab);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);

    tc = tcase_create("golden");
    tcase_add_unchecked_fixture(tc, load_uncased, free_uncased);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_golden_tricky);
    tcase_add_test(tc, test_golden_random);
    tcase_add_test(tc, test_golden_sst2_dev);
    tcase_add_test(tc, test_golden_trec_test);
    tcase_add_test(tc, test_golden_rte_pairs);
    tcase_add_test(tc, test_golden_rte_truncated);
    tcase_add_test(tc, test_golden_unicode_blocks);
    tcase_add_test(tc, test_basic_examples);
    suite_add_tcase(s, tc);

    tc = tcase_create("sequences");
    tcase_add_unchecked_fixture(tc, load_uncased, free_uncased);
    tcase_add_test(tc, test_truncate_lengths);
    tcase_add_test(tc, test_encode_single);
    tcase_add_test(tc, test_encode_errors);
    tcase_add_test(tc, test_random_bytes);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(tokenizer_suite)
