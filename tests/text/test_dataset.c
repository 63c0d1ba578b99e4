/*
 * test_dataset.c - the TSV loader and batcher on the shared data: row and
 * label counts and sequence-length statistics from shared/data/README.md,
 * token ids equal to the tokenizer goldens (made with Hugging Face), pair
 * layout and truncation, the epoch order (a permutation, fixed by (seed,
 * epoch), uniform by a chi-square test, a committed golden order), dynamic
 * padding, every malformed-file message with its line, and allocation
 * failures.
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
#include "models/text/dataset_tsv.h"
#include "models/text/tokenizer.h"

#ifndef TEXT_GOLDEN_DIR
#error "TEXT_GOLDEN_DIR must name tests/text/data"
#endif

static tunep_tokenizer *tok;
static char *tmpdir;

static const char *shared(const char *rel)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", getenv("TUNE_SHARED_DATA"), rel);
    return path;
}

static void setup(void)
{
    ck_assert_int_eq(
        tunep_tokenizer_new(shared("vocab/bert-base-uncased-vocab.txt"), 1, &tok, NULL), TUNE_OK);
    tmpdir = tune_test_mkdtemp();
    ck_assert_ptr_nonnull(tmpdir);
}

static void teardown(void)
{
    tunep_tokenizer_free(tok);
    tok = NULL;
    tune_test_rmtree(tmpdir);
    free(tmpdir);
    tmpdir = NULL;
}

static tunep_dataset *load(const char *rel, size_t max_seq_len)
{
    struct tunep_tsv_options opt;
    tunep_tsv_options_default(&opt);
    opt.max_seq_len = max_seq_len;
    tunep_dataset *ds = NULL;
    tune_error err;
    memset(&err, 0, sizeof err);
    tune_status st = tunep_dataset_tsv_load(shared(rel), tok, &opt, &ds, &err);
    ck_assert_msg(st == TUNE_OK, "%s: %s:%d: %s", rel, err.source, err.line, err.text);
    return ds;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Sorted example lengths; the caller frees them. */
static size_t *sorted_lengths(const tunep_dataset *ds)
{
    size_t n = tunep_dataset_size(ds);
    size_t *len = malloc(n * sizeof *len);
    for (size_t i = 0; i < n; i++) {
        struct tunep_example ex;
        ck_assert_int_eq(tunep_dataset_get(ds, i, &ex, NULL), TUNE_OK);
        len[i] = ex.len;
    }
    qsort(len, n, sizeof *len, cmp_size);
    return len;
}

/* The q-th percentile as sorted[floor(n * q / 100)]. */
static size_t percentile(const size_t *sorted, size_t n, unsigned q)
{
    return sorted[n * q / 100];
}

/*
 * The README's statistics (median, p95, p99, max of lengths with [CLS] and
 * [SEP], from a reference tokenizer). Its percentile convention is not stated;
 * sorted[floor(n q / 100)] reproduces all of its numbers with Hugging Face's
 * tokenizer (checked with tests/tools/gen_tokenizer_golden.py's Reference), so
 * they must match exactly.
 */
static void expect_stats(const char *rel, size_t median, size_t p95, size_t p99, size_t max)
{
    tunep_dataset *ds = load(rel, 512);
    size_t n = tunep_dataset_size(ds);
    size_t *len = sorted_lengths(ds);
    ck_assert_uint_eq(tunep_dataset_truncated(ds), 0);
    ck_assert_uint_eq(tunep_dataset_max_len(ds), max);
    ck_assert_uint_eq(len[n - 1], max);
    ck_assert_uint_eq(percentile(len, n, 50), median);
    ck_assert_uint_eq(percentile(len, n, 95), p95);
    ck_assert_uint_eq(percentile(len, n, 99), p99);
    free(len);
    tunep_dataset_free(ds);
}

/* ---- the shared files ------------------------------------------------------ */

START_TEST(test_sst2_dev)
{
    tunep_dataset *ds = load("sst2/dev.tsv", 128);
    ck_assert_uint_eq(tunep_dataset_size(ds), 872);
    ck_assert_int_eq(tunep_dataset_is_pair(ds), 0);
    ck_assert_int_eq(tunep_dataset_num_labels(ds), 2);
    ck_assert_uint_eq(tunep_dataset_label_count(ds, 0), 428);
    ck_assert_uint_eq(tunep_dataset_label_count(ds, 1), 444);
    ck_assert_uint_eq(tunep_dataset_label_count(ds, 2), 0);
    ck_assert_uint_eq(tunep_dataset_max_len(ds), 55);
    ck_assert_uint_eq(tunep_dataset_truncated(ds), 0);

    /* the loader's ids are [CLS] + the tokenizer golden + [SEP], in file order */
    char path[4096];
    snprintf(path, sizeof path, "%s/sst2_dev.txt", TEXT_GOLDEN_DIR);
    char *golden = tune_test_slurp(path);
    ck_assert_ptr_nonnull(golden);
    size_t row = 0;
    for (char *line = strtok(golden, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#')
            continue;
        struct tunep_example ex;
        ck_assert_int_eq(tunep_dataset_get(ds, row, &ex, NULL), TUNE_OK);
        ck_assert_uint_eq(ex.line, row + 2);
        ck_assert_uint_eq(ex.len_type0, ex.len);
        ck_assert_int_eq(ex.ids[0], 101);
        ck_assert_int_eq(ex.ids[ex.len - 1], 102);
        char *p = line;
        size_t k = 1;
        for (; *p; k++) {
            long v = strtol(p, &p, 10);
            ck_assert_msg(k < ex.len - 1 && ex.ids[k] == v, "row %zu token %zu", row, k);
            while (*p == ' ')
                p++;
        }
        ck_assert_uint_eq(k, ex.len - 1);
        row++;
    }
    ck_assert_uint_eq(row, 300);
    free(golden);

    struct tunep_example ex;
    tune_error err;
    ck_assert_int_eq(tunep_dataset_get(ds, 872, &ex, &err), TUNE_EINVAL);
    ck_assert_str_eq(err.text, "example 872 out of range (872 examples)");
    tunep_dataset_free(ds);
}
END_TEST

START_TEST(test_trec_test)
{
    tunep_dataset *ds = load("trec/test.tsv", 64);
    static const size_t counts[6] = {9, 94, 138, 65, 81, 113};
    ck_assert_uint_eq(tunep_dataset_size(ds), 500);
    ck_assert_int_eq(tunep_dataset_num_labels(ds), 6);
    for (int k = 0; k < 6; k++)
        ck_assert_uint_eq(tunep_dataset_label_count(ds, k), counts[k]);
    tunep_dataset_free(ds);
}
END_TEST

/* Compares RTE examples with the pair goldens (full, and truncated to 64). */
static void check_rte_golden(const char *golden_name, size_t max_seq_len, size_t skip_lines)
{
    tunep_dataset *ds = load("rte/dev.tsv", max_seq_len);
    ck_assert_uint_eq(tunep_dataset_size(ds), 277);
    ck_assert_int_eq(tunep_dataset_is_pair(ds), 1);
    ck_assert_uint_eq(tunep_dataset_label_count(ds, 0), 146);
    ck_assert_uint_eq(tunep_dataset_label_count(ds, 1), 131);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", TEXT_GOLDEN_DIR, golden_name);
    char *golden = tune_test_slurp(path);
    ck_assert_ptr_nonnull(golden);
    size_t row = 0, seen = 0;
    for (char *line = strtok(golden, "\n"); line && row < 277; line = strtok(NULL, "\n")) {
        if (line[0] == '#' || seen++ < skip_lines)
            continue;
        char *p = line;
        if (max_seq_len != 512)
            ck_assert_uint_eq(strtoul(p, &p, 10), max_seq_len);
        size_t n_a = strtoul(p, &p, 10);
        struct tunep_example ex;
        ck_assert_int_eq(tunep_dataset_get(ds, row, &ex, NULL), TUNE_OK);
        ck_assert_uint_eq(ex.len_type0, n_a);
        size_t k = 0;
        while (*p == '\t' || *p == ' ')
            p++;
        for (; *p; k++) {
            long v = strtol(p, &p, 10);
            ck_assert_msg(k < ex.len && ex.ids[k] == v, "rte row %zu token %zu", row, k);
            while (*p == ' ')
                p++;
        }
        ck_assert_uint_eq(k, ex.len);
        ck_assert_uint_le(ex.len, max_seq_len);
        row++;
    }
    ck_assert_uint_eq(row, 277);
    free(golden);
    tunep_dataset_free(ds);
}

START_TEST(test_rte_dev_pairs)
{
    check_rte_golden("rte_dev.txt", 512, 0);
    check_rte_golden("rte_dev_trunc.txt", 64, 0);
    check_rte_golden("rte_dev_trunc.txt", 13, 277);
}
END_TEST

START_TEST(test_readme_statistics)
{
    expect_stats("sst2/dev.tsv", 25, 44, 52, 55);
    expect_stats("trec/train.tsv", 13, 22, 28, 41);
    expect_stats("sst2_sentences/test.tsv", 24, 44, 54, 64);
    expect_stats("rte/train.tsv", 56, 157, 197, 289);
}
END_TEST

START_TEST(test_sst2_train)
{
    tunep_dataset *ds = load("sst2/train.tsv", 128);
    ck_assert_uint_eq(tunep_dataset_size(ds), 67349);
    ck_assert_uint_eq(tunep_dataset_label_count(ds, 0), 29780);
    ck_assert_uint_eq(tunep_dataset_label_count(ds, 1), 37569);
    ck_assert_uint_eq(tunep_dataset_max_len(ds), 66);
    tunep_dataset_free(ds);
    expect_stats("sst2/train.tsv", 10, 33, 44, 66);
}
END_TEST

/* Truncation at load keeps a prefix of each sentence and closes it with [SEP]. */
START_TEST(test_truncation_at_load)
{
    tunep_dataset *full = load("sst2/dev.tsv", 128);
    tunep_dataset *cut = load("sst2/dev.tsv", 16);
    size_t longer = 0;
    for (size_t i = 0; i < 872; i++) {
        struct tunep_example a, b;
        ck_assert_int_eq(tunep_dataset_get(full, i, &a, NULL), TUNE_OK);
        ck_assert_int_eq(tunep_dataset_get(cut, i, &b, NULL), TUNE_OK);
        longer += a.len > 16;
        ck_assert_uint_eq(b.len, a.len < 16 ? a.len : 16);
        ck_assert_int_eq(b.ids[b.len - 1], 102);
        ck_assert(memcmp(a.ids, b.ids, (b.len - 1) * sizeof *a.ids) == 0);
    }
    ck_assert_uint_gt(longer, 300);
    ck_assert_uint_eq(tunep_dataset_truncated(cut), longer);
    ck_assert_uint_eq(tunep_dataset_max_len(cut), 16);
    tunep_dataset_free(full);
    tunep_dataset_free(cut);

    /* pairs: both segments keep their [SEP], lengths follow longest_first */
    tunep_dataset *pfull = load("rte/dev.tsv", 512);
    tunep_dataset *pcut = load("rte/dev.tsv", 40);
    for (size_t i = 0; i < 277; i++) {
        struct tunep_example a, b;
        ck_assert_int_eq(tunep_dataset_get(pfull, i, &a, NULL), TUNE_OK);
        ck_assert_int_eq(tunep_dataset_get(pcut, i, &b, NULL), TUNE_OK);
        size_t la = a.len_type0 - 2, lb = a.len - a.len_type0 - 1, ka, kb;
        tunep_truncate_lengths(la, lb, 1, 40, &ka, &kb);
        ck_assert_uint_eq(b.len_type0, ka + 2);
        ck_assert_uint_eq(b.len, ka + kb + 3);
        ck_assert_int_eq(b.ids[b.len_type0 - 1], 102);
        ck_assert_int_eq(b.ids[b.len - 1], 102);
        ck_assert(memcmp(b.ids, a.ids, (ka + 1) * sizeof *a.ids) == 0);
        ck_assert(memcmp(b.ids + b.len_type0, a.ids + a.len_type0, kb * sizeof *a.ids) == 0);
    }
    tunep_dataset_free(pfull);
    tunep_dataset_free(pcut);
}
END_TEST

/* ---- order and batches ------------------------------------------------------ */

static const char *write_tsv(const char *name, const char *content)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(content, 1, strlen(content), f), strlen(content));
    fclose(f);
    return path;
}

START_TEST(test_order)
{
    tunep_dataset *ds = load("sst2/dev.tsv", 128);
    size_t n = tunep_dataset_size(ds);
    size_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    unsigned char *seen = calloc(n, 1);

    ck_assert_int_eq(tunep_dataset_order(ds, 42, 0, 0, a, NULL), TUNE_OK);
    for (size_t i = 0; i < n; i++)
        ck_assert_uint_eq(a[i], i);

    ck_assert_int_eq(tunep_dataset_order(ds, 42, 0, 1, a, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_dataset_order(ds, 42, 0, 1, b, NULL), TUNE_OK);
    ck_assert(memcmp(a, b, n * sizeof *a) == 0); /* deterministic */
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_lt(a[i], n);
        ck_assert(!seen[a[i]]); /* a permutation */
        seen[a[i]] = 1;
    }
    size_t fixed = 0;
    for (size_t i = 0; i < n; i++)
        fixed += a[i] == i;
    ck_assert_uint_lt(fixed, 8); /* a random permutation has ~1 fixed point */

    ck_assert_int_eq(tunep_dataset_order(ds, 42, 1, 1, b, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_dataset_order(ds, 43, 0, 1, c, NULL), TUNE_OK);
    size_t same_ab = 0, same_ac = 0;
    for (size_t i = 0; i < n; i++) {
        same_ab += a[i] == b[i];
        same_ac += a[i] == c[i];
    }
    ck_assert_uint_lt(same_ab, 8); /* epochs differ */
    ck_assert_uint_lt(same_ac, 8); /* seeds differ */

    free(a);
    free(b);
    free(c);
    free(seen);
    tunep_dataset_free(ds);
}
END_TEST

/*
 * Uniformity: the 24 orders of 4 examples over 24000 epochs, chi-square with
 * 23 degrees of freedom below 49.7 (p = 0.001); the seed is fixed, so this is
 * deterministic. Also a golden order (splitmix64 seeded with
 * mix(seed ^ mix(epoch + 0x632BE59BD9B4E019)), Fisher-Yates from the end), so
 * that a change of the generator, which changes every training run, is noticed.
 */
START_TEST(test_order_uniform_and_golden)
{
    const char *path = write_tsv("four.tsv", "sentence\tlabel\na\t0\nb\t1\nc\t0\nd\t1\n");
    tunep_dataset *ds = NULL;
    ck_assert_int_eq(tunep_dataset_tsv_load(path, tok, NULL, &ds, NULL), TUNE_OK);
    size_t counts[256] = {0};
    const int epochs = 24000;
    for (int e = 0; e < epochs; e++) {
        size_t o[4];
        ck_assert_int_eq(tunep_dataset_order(ds, 7, (uint64_t)e, 1, o, NULL), TUNE_OK);
        counts[o[0] * 64 + o[1] * 16 + o[2] * 4 + o[3]]++;
    }
    double chi2 = 0, expected = epochs / 24.0;
    int distinct = 0;
    for (int k = 0; k < 256; k++) {
        if (!counts[k])
            continue;
        distinct++;
        chi2 += ((double)counts[k] - expected) * ((double)counts[k] - expected) / expected;
    }
    ck_assert_int_eq(distinct, 24);
    ck_assert_msg(chi2 < 49.7, "chi2 = %.1f", chi2);
    tunep_dataset_free(ds);

    ds = load("trec/test.tsv", 64);
    size_t order[500];
    ck_assert_int_eq(tunep_dataset_order(ds, 2024, 3, 1, order, NULL), TUNE_OK);
    /* from an independent Python transcription of the documented algorithm */
    static const size_t golden[10] = {22, 275, 498, 148, 417, 262, 255, 177, 453, 287};
    for (int i = 0; i < 10; i++)
        ck_assert_msg(order[i] == golden[i], "order[%d] = %zu, golden %zu", i, order[i], golden[i]);
    tunep_dataset_free(ds);
}
END_TEST

START_TEST(test_batches)
{
    tunep_dataset *ds = load("rte/dev.tsv", 128);
    struct tunep_batch b;
    tunep_batch_init(&b);
    size_t idx[3] = {5, 0, 17};
    ck_assert_int_eq(tunep_dataset_batch(ds, idx, 3, &b, NULL), TUNE_OK);
    size_t T = 0;
    for (int i = 0; i < 3; i++) {
        struct tunep_example ex;
        tunep_dataset_get(ds, idx[i], &ex, NULL);
        T = ex.len > T ? ex.len : T;
    }
    ck_assert_uint_eq(b.B, 3);
    ck_assert_uint_eq(b.T, T); /* padded to the longest in the batch, not to 128 */
    ck_assert_uint_lt(T, 128);
    for (size_t i = 0; i < 3; i++) {
        struct tunep_example ex;
        tunep_dataset_get(ds, idx[i], &ex, NULL);
        ck_assert_int_eq(b.labels[i], ex.label);
        for (size_t t = 0; t < T; t++) {
            int32_t id = b.input_ids[i * T + t], type = b.token_type_ids[i * T + t];
            int32_t mask = b.attention_mask[i * T + t];
            if (t < ex.len) {
                ck_assert_int_eq(id, ex.ids[t]);
                ck_assert_int_eq(type, t >= ex.len_type0);
                ck_assert_int_eq(mask, 1);
            } else {
                ck_assert_int_eq(id, 0);
                ck_assert_int_eq(type, 0);
                ck_assert_int_eq(mask, 0);
            }
        }
    }

    /* one epoch in batches of 32: every example once, every real token masked in */
    size_t n = tunep_dataset_size(ds), order[277], hits[277] = {0}, tokens = 0, want = 0;
    ck_assert_int_eq(tunep_dataset_order(ds, 1, 0, 1, order, NULL), TUNE_OK);
    for (size_t s = 0; s < n; s += 32) {
        size_t count = n - s < 32 ? n - s : 32;
        ck_assert_int_eq(tunep_dataset_batch(ds, order + s, count, &b, NULL), TUNE_OK);
        ck_assert_uint_eq(b.B, count);
        for (size_t i = 0; i < b.B * b.T; i++)
            tokens += (size_t)b.attention_mask[i];
        for (size_t i = 0; i < count; i++)
            hits[order[s + i]]++;
    }
    for (size_t i = 0; i < n; i++) {
        struct tunep_example ex;
        tunep_dataset_get(ds, i, &ex, NULL);
        want += ex.len;
        ck_assert_uint_eq(hits[i], 1);
    }
    ck_assert_uint_eq(tokens, want);

    tune_error err;
    size_t bad[2] = {1, 277};
    ck_assert_int_eq(tunep_dataset_batch(ds, bad, 2, &b, &err), TUNE_EINVAL);
    ck_assert_str_eq(err.text, "example 277 out of range (277 examples)");
    ck_assert_uint_eq(b.B, 0);
    ck_assert_int_eq(tunep_dataset_batch(ds, bad, 0, &b, &err), TUNE_EINVAL);
    ck_assert_int_eq(tunep_dataset_batch(ds, bad, TUNEP_BATCH_MAX + 1, &b, &err), TUNE_ECONFIG);
    tunep_batch_done(&b);
    tunep_dataset_free(ds);
}
END_TEST

/* ---- malformed files ------------------------------------------------------- */

static void expect_load_error(const char *content, const struct tunep_tsv_options *opt,
                              tune_status code, int line, int column, const char *text)
{
    const char *path = write_tsv("bad.tsv", content);
    tune_error err;
    memset(&err, 0, sizeof err);
    tunep_dataset *ds = (tunep_dataset *)&err; /* must stay untouched */
    ck_assert_int_eq(tunep_dataset_tsv_load(path, tok, opt, &ds, &err), code);
    ck_assert_ptr_eq(ds, (tunep_dataset *)&err);
    ck_assert_int_eq(err.code, code);
    ck_assert_str_eq(err.text, text);
    ck_assert_int_eq(err.line, line);
    ck_assert_int_eq(err.column, column);
    if (line > 0)
        ck_assert_str_eq(err.source, path);
}

START_TEST(test_malformed)
{
    expect_load_error("sentence\tlabel\nfine\t0\ntoo\tmany\t1\n", NULL, TUNE_ECONFIG, 3, 0,
                      "expected 2 tab-separated fields, got 3");
    expect_load_error("sentence\tlabel\nno label here\n", NULL, TUNE_ECONFIG, 2, 0,
                      "expected 2 tab-separated fields, got 1");
    expect_load_error("sentence1\tsentence2\tlabel\na\tb\t0\nc\t1\n", NULL, TUNE_ECONFIG, 3, 0,
                      "expected 3 tab-separated fields, got 2");
    expect_load_error("sentence\tlabel\na\t0\nb\tpositive\n", NULL, TUNE_ECONFIG, 3, 0,
                      "expected an integer label, got 'positive'");
    expect_load_error("sentence\tlabel\na\t-1\n", NULL, TUNE_ECONFIG, 2, 0,
                      "expected an integer label, got '-1'");
    expect_load_error("sentence\tlabel\na\t1.0\n", NULL, TUNE_ECONFIG, 2, 0,
                      "expected an integer label, got '1.0'");
    expect_load_error("sentence\tlabel\na\t\n", NULL, TUNE_ECONFIG, 2, 0,
                      "expected an integer label, got ''");
    expect_load_error("sentence\tlabel\na\t 1\n", NULL, TUNE_ECONFIG, 2, 0,
                      "expected an integer label, got ' 1'");
    expect_load_error("sentence\tlabel\na\t0\nb\t1000\n", NULL, TUNE_ECONFIG, 3, 0,
                      "label 1000 exceeds the limit of 1000 labels");
    expect_load_error("", NULL, TUNE_ECONFIG, 1, 0, "empty file: expected a header line");
    expect_load_error("good movie\t1\nbad movie\t0\n", NULL, TUNE_ECONFIG, 1, 0,
                      "expected the header 'sentence<TAB>label' or "
                      "'sentence1<TAB>sentence2<TAB>label'");
    expect_load_error("text\tlabel\na\t0\n", NULL, TUNE_ECONFIG, 1, 0,
                      "expected the header 'sentence<TAB>label' or "
                      "'sentence1<TAB>sentence2<TAB>label'");
    expect_load_error("sentence\tlabel\n", NULL, TUNE_ECONFIG, 2, 0,
                      "no examples after the header");
    expect_load_error("sentence\tlabel\nfine\t0\nbad \xff here\t1\n", NULL, TUNE_ECONFIG, 3, 5,
                      "invalid UTF-8");
    expect_load_error("sentence\tlabel\nsurrogate \xed\xa0\x80\t1\n", NULL, TUNE_ECONFIG, 2, 11,
                      "invalid UTF-8");
    expect_load_error("sentence\tlabel\na\t0\n\nb\t1\n", NULL, TUNE_ECONFIG, 3, 0, "empty line");

    struct tunep_tsv_options opt;
    tunep_tsv_options_default(&opt);
    opt.num_labels = 2;
    expect_load_error("sentence\tlabel\na\t0\nb\t2\n", &opt, TUNE_ECONFIG, 3, 0,
                      "label 2 is out of range for num_labels 2");
    opt.num_labels = 0;
    opt.max_rows = 2;
    expect_load_error("sentence\tlabel\na\t0\nb\t1\nc\t1\n", &opt, TUNE_ECONFIG, 4, 0,
                      "more than 2 data rows");
    opt.max_rows = 0;
    opt.max_seq_len = 8193;
    expect_load_error("sentence\tlabel\na\t0\n", &opt, TUNE_ECONFIG, 0, 0,
                      "max_seq_len 8193 exceeds the limit of 8192");
    opt.max_seq_len = 2;
    expect_load_error("sentence1\tsentence2\tlabel\na\tb\t0\n", &opt, TUNE_ECONFIG, 0, 0,
                      "max_seq_len 2 leaves no room for the special tokens");
    opt.max_seq_len = 128;
    opt.num_labels = -1;
    expect_load_error("sentence\tlabel\na\t0\n", &opt, TUNE_ECONFIG, 0, 0,
                      "num_labels -1 is outside 0..1000");

    tunep_dataset *ds = NULL;
    tune_error err;
    ck_assert_int_eq(tunep_dataset_tsv_load("/nonexistent/x.tsv", tok, NULL, &ds, &err), TUNE_EIO);
    ck_assert_str_eq(err.source, "/nonexistent/x.tsv");
    ck_assert_ptr_null(ds);
}
END_TEST

/* What the format allows: CRLF, no final newline, quotes, an explicit num_labels. */
START_TEST(test_lenient_inputs)
{
    struct tunep_tsv_options opt;
    tunep_tsv_options_default(&opt);
    opt.num_labels = 5;
    const char *path = write_tsv("ok.tsv", "sentence\tlabel\r\n\"quoted\" text\t1\r\nlast\t0");
    tunep_dataset *ds = NULL;
    tune_error err;
    ck_assert_int_eq(tunep_dataset_tsv_load(path, tok, &opt, &ds, &err), TUNE_OK);
    ck_assert_uint_eq(tunep_dataset_size(ds), 2);
    ck_assert_int_eq(tunep_dataset_num_labels(ds), 5);
    ck_assert_uint_eq(tunep_dataset_label_count(ds, 1), 1);
    ck_assert_uint_eq(tunep_dataset_label_count(ds, 4), 0);
    struct tunep_example ex;
    ck_assert_int_eq(tunep_dataset_get(ds, 0, &ex, NULL), TUNE_OK);
    /* [CLS] " quoted " text [SEP] */
    static const int32_t want[6] = {101, 1000, 9339, 1000, 3793, 102};
    ck_assert_uint_eq(ex.len, 6);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(ex.ids[i], want[i]);
    ck_assert_int_eq(tunep_dataset_get(ds, 1, &ex, NULL), TUNE_OK);
    ck_assert_int_eq(ex.label, 0);
    ck_assert_uint_eq(ex.line, 3);
    tunep_dataset_free(ds);
}
END_TEST

START_TEST(test_alloc_failures)
{
    const char *path = write_tsv("small.tsv", "sentence1\tsentence2\tlabel\nCrème brûlée\tok\t1\n"
                                              "a b c\td e f g h\t0\n");
    int ok = 0;
    long runs = 0; /* more than one: the injected failures were really hit */
    for (long fail_at = 0; fail_at < 200 && !ok; fail_at++, runs++) {
        tunep_dataset *ds = NULL;
        struct tunep_batch b;
        tunep_batch_init(&b);
        tune_test_alloc_fail_from(fail_at);
        tune_status st = tunep_dataset_tsv_load(path, tok, NULL, &ds, NULL);
        tune_status st2 = TUNE_ENOMEM;
        if (st == TUNE_OK) {
            size_t idx[2] = {0, 1};
            st2 = tunep_dataset_batch(ds, idx, 2, &b, NULL);
        }
        tune_test_alloc_reset();
        ck_assert(st == TUNE_OK || st == TUNE_ENOMEM);
        ck_assert(st2 == TUNE_OK || st2 == TUNE_ENOMEM);
        if (st != TUNE_OK)
            ck_assert_ptr_null(ds);
        if (st2 != TUNE_OK)
            ck_assert_uint_eq(b.B, 0);
        ok = st == TUNE_OK && st2 == TUNE_OK;
        tunep_batch_done(&b);
        tunep_dataset_free(ds);
    }
    ck_assert(ok);
    ck_assert_int_gt(runs, 1);
}
END_TEST

static Suite *dataset_suite(void)
{
    const char *d = getenv("TUNE_SHARED_DATA");
    char probe[4096];
    struct stat sb;
    snprintf(probe, sizeof probe, "%s/sst2/dev.tsv", d ? d : "");
    if (!d || stat(probe, &sb) != 0) {
        fprintf(stderr, "TUNE_SHARED_DATA has no sst2/dev.tsv: skipped\n");
        exit(77);
    }
    Suite *s = suite_create("dataset");
    TCase *tc = tcase_create("shared");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_sst2_dev);
    tcase_add_test(tc, test_trec_test);
    tcase_add_test(tc, test_rte_dev_pairs);
    tcase_add_test(tc, test_readme_statistics);
    tcase_add_test(tc, test_sst2_train);
    tcase_add_test(tc, test_truncation_at_load);
    suite_add_tcase(s, tc);

    tc = tcase_create("batches");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_order);
    tcase_add_test(tc, test_order_uniform_and_golden);
    tcase_add_test(tc, test_batches);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_malformed);
    tcase_add_test(tc, test_lenient_inputs);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(dataset_suite)
