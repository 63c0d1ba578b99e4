/*
 * dataset_tsv.c - TSV text-classification data for the BERT trainer: parse
 * and check every line, tokenize every example once, and serve padded
 * batches in a per-epoch order.
 *
 * Invariants: all encoded examples sit back to back in one int32 pool, in
 * file order, each already truncated and framed with [CLS]/[SEP]; one small
 * row record per example gives its offset, lengths, label and line; labels
 * are in 0..num_labels-1. Nothing is shared with the tokenizer after loading.
 * The epoch order is a Fisher-Yates shuffle driven by splitmix64 (Steele,
 * Lea and Flood, "Fast splittable pseudorandom number generators", 2014)
 * seeded from (seed, epoch), with rejection sampling so that every
 * permutation is equally likely.
 */
#include "dataset_tsv.h"

#include <string.h>

#include "base/base.h"

struct row {
    size_t off;     /* first id in the pool */
    uint32_t len;   /* ids, special tokens included */
    uint32_t len_a; /* ids of token type 0 */
    uint32_t line;
    int32_t label;
};

struct tunep_dataset {
    size_t n;
    int pair;
    int num_labels;
    int32_t pad_id;
    int32_t *pool; /* encoded examples, back to back */
    struct row *rows;
    size_t *label_counts;
    size_t max_len, truncated;
};

void tunep_tsv_options_default(struct tunep_tsv_options *opt)
{
    opt->max_rows = 0;
    opt->max_seq_len = 128;
    opt->num_labels = 0;
}

/* ---- growable arrays used while loading ----------------------------------- */

/* Returns p with room for need elements (maybe moved), or NULL with p untouched. */
static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    void *q = tunep_realloc(p, *cap * elem, c * elem);
    if (q)
        *cap = c;
    return q;
}

/* ---- parsing -------------------------------------------------------------- */

struct line_fields {
    const char *f[3];
    size_t len[3];
    int count; /* number of tab-separated fields (may exceed 3) */
};

static void split_fields(const char *s, size_t n, struct line_fields *lf)
{
    lf->count = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '\t')
            continue;
        if (lf->count < 3) {
            lf->f[lf->count] = s + start;
            lf->len[lf->count] = i - start;
        }
        lf->count++;
        start = i + 1;
    }
}

static int field_is(const struct line_fields *lf, int k, const char *name)
{
    return lf->len[k] == strlen(name) && memcmp(lf->f[k], name, lf->len[k]) == 0;
}

/* Parses a label of 1 to 9 decimal digits; -1 if it is not one. */
static long parse_label(const char *s, size_t n)
{
    if (n == 0 || n > 9)
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

struct loader {
    const char *path;
    const tunep_tokenizer *tok;
    size_t max_seq_len;
    tune_error *err;
    tunep_dataset *ds;
    size_t pool_len, cap_pool, cap_rows;
    struct tunep_ids ids; /* scratch: the current example's word pieces */
};

/* Tokenizes and stores one data line (fields already checked). */
static tune_status add_example(struct loader *ld, const struct line_fields *lf, long label,
                               size_t line)
{
    tunep_dataset *ds = ld->ds;
    tune_error sub;
    ld->ids.len = 0;
    tune_status st = tunep_tokenizer_tokenize(ld->tok, lf->f[0], lf->len[0], &ld->ids, &sub);
    size_t len_a = ld->ids.len, len_b = 0;
    if (st == TUNE_OK && ds->pair) {
        st = tunep_tokenizer_tokenize(ld->tok, lf->f[1], lf->len[1], &ld->ids, &sub);
        len_b = ld->ids.len - len_a;
    }
    if (st != TUNE_OK)
        return tunep_error_set_at(ld->err, st, ld->path, (int)line, 0, "%s", sub.text);

    size_t keep_a, keep_b;
    tunep_truncate_lengths(len_a, len_b, ds->pair, ld->max_seq_len, &keep_a, &keep_b);
    size_t n = keep_a + keep_b + (ds->pair ? 3 : 2);
    int32_t *pool = grow(ds->pool, &ld->cap_pool, ld->pool_len + n, sizeof *pool);
    if (pool)
        ds->pool = pool;
    struct row *rows = pool ? grow(ds->rows, &ld->cap_rows, ds->n + 1, sizeof *rows) : NULL;
    if (!rows)
        return tunep_error_set(ld->err, TUNE_ENOMEM, "out of memory loading '%s'", ld->path);
    ds->rows = rows;
    /* ids.data stays NULL until some row has a token: no pointer arithmetic on it before. */
    const int32_t *b = ld->ids.data ? ld->ids.data + len_a : NULL;
    tunep_tokenizer_build(ld->tok, ld->ids.data, keep_a, b, keep_b, ds->pair,
                          ds->pool + ld->pool_len, NULL);
    struct row *r = &ds->rows[ds->n++];
    r->off = ld->pool_len;
    r->len = (uint32_t)n;
    r->len_a = (uint32_t)(keep_a + 2);
    r->line = (uint32_t)line;
    r->label = (int32_t)label;
    ld->pool_len += n;
    ds->truncated += keep_a < len_a || keep_b < len_b;
    if (n > ds->max_len)
        ds->max_len = n;
    return TUNE_OK;
}

/* Checks one data line and adds it; line_no is 1-based. */
static tune_status data_line(struct loader *ld, const char *s, size_t n, size_t line_no,
                             size_t max_rows, int num_labels, long *max_label)
{
    tunep_dataset *ds = ld->ds;
    int want = ds->pair ? 3 : 2;
    if (n == 0)
        return tunep_error_set_at(ld->err, TUNE_ECONFIG, ld->path, (int)line_no, 0, "empty line");
    struct line_fields lf;
    split_fields(s, n, &lf);
    if (lf.count != want)
        return tunep_error_set_at(ld->err, TUNE_ECONFIG, ld->path, (int)line_no, 0,
                                  "expected %d tab-separated fields, got %d", want, lf.count);
    for (int k = 0; k < want - 1; k++) {
        size_t blank = 0;
        while (blank < lf.len[k] && (lf.f[k][blank] == ' ' || lf.f[k][blank] == '\r'))
            blank++;
        if (blank == lf.len[k])
            return tunep_error_set_at(ld->err, TUNE_ECONFIG, ld->path, (int)line_no, 0,
                                      "empty text in field %d", k + 1);
    }
    const char *lab = lf.f[want - 1];
    size_t lab_len = lf.len[want - 1];
    long label = parse_label(lab, lab_len);
    if (label < 0)
        return tunep_error_set_at(ld->err, TUNE_ECONFIG, ld->path, (int)line_no, 0,
                                  "expected an integer label, got '%.*s%s'",
                                  (int)(lab_len < 32 ? lab_len : 32), lab,
                                  lab_len > 32 ? "..." : "");
    if (num_labels > 0 && label >= num_labels)
        return tunep_error_set_at(ld->err, TUNE_ECONFIG, ld->path, (int)line_no, 0,
                                  "label %ld is out of range for num_labels %d", label, num_labels);
    if (label >= TUNEP_TSV_MAX_LABELS)
        return tunep_error_set_at(ld->err, TUNE_ECONFIG, ld->path, (int)line_no, 0,
                                  "label %ld exceeds the limit of %d labels", label,
                                  TUNEP_TSV_MAX_LABELS);
    if (ds->n >= max_rows)
        return tunep_error_set_at(ld->err, TUNE_ECONFIG, ld->path, (int)line_no, 0,
                                  "more than %zu data rows", max_rows);
    if (label > *max_label)
        *max_label = label;
    return add_example(ld, &lf, label, line_no);
}

static tune_status header_line(struct loader *ld, const char *s, size_t n)
{
    /* Spreadsheet exports often start with one; the header would not match. */
    if (n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
        return tunep_error_set_at(ld->err, TUNE_ECONFIG, ld->path, 1, 0,
                                  "the file starts with a UTF-8 byte order mark (BOM): save it "
                                  "without one");
    struct line_fields lf;
    split_fields(s, n, &lf);
    if (lf.count == 2 && field_is(&lf, 0, "sentence") && field_is(&lf, 1, "label")) {
        ld->ds->pair = 0;
    } else if (lf.count == 3 && field_is(&lf, 0, "sentence1") && field_is(&lf, 1, "sentence2") &&
               field_is(&lf, 2, "label")) {
        ld->ds->pair = 1;
    } else {
        return tunep_error_set_at(ld->err, TUNE_ECONFIG, ld->path, 1, 0,
                                  "expected the header 'sentence<TAB>label' or "
                                  "'sentence1<TAB>sentence2<TAB>label'");
    }
    if (ld->max_seq_len < (size_t)(ld->ds->pair ? 3 : 2))
        return tunep_error_set(ld->err, TUNE_ECONFIG,
                               "max_seq_len %zu leaves no room for the special tokens",
                               ld->max_seq_len);
    return TUNE_OK;
}

tune_status tunep_dataset_tsv_load(const char *path, const tunep_tokenizer *tok,
                                   const struct tunep_tsv_options *opt, tunep_dataset **ret_ds,
                                   tune_error *err)
{
    struct tunep_tsv_options defaults;
    if (!path || !tok || !ret_ds)
        return tunep_error_set(err, TUNE_EINVAL, "dataset: NULL argument");
    if (!opt) {
        tunep_tsv_options_default(&defaults);
        opt = &defaults;
    }
    size_t max_rows = opt->max_rows ? opt->max_rows : TUNEP_TSV_MAX_ROWS;
    if (max_rows > TUNEP_TSV_MAX_ROWS)
        return tunep_error_set(err, TUNE_ECONFIG, "max_rows %zu exceeds the limit of %d", max_rows,
                               TUNEP_TSV_MAX_ROWS);
    if (opt->max_seq_len > TUNEP_SEQ_MAX_LEN)
        return tunep_error_set(err, TUNE_ECONFIG, "max_seq_len %zu exceeds the limit of %d",
                               opt->max_seq_len, TUNEP_SEQ_MAX_LEN);
    if (opt->num_labels < 0 || opt->num_labels > TUNEP_TSV_MAX_LABELS)
        return tunep_error_set(err, TUNE_ECONFIG, "num_labels %d is outside 0..%d", opt->num_labels,
                               TUNEP_TSV_MAX_LABELS);

    char *data = NULL;
    size_t len = 0;
    tune_status st = tunep_text_read_file(path, TUNEP_TSV_MAX_FILE_BYTES, &data, &len, err);
    if (st != TUNE_OK)
        return st;

    struct loader ld;
    memset(&ld, 0, sizeof ld);
    ld.path = path;
    ld.tok = tok;
    ld.max_seq_len = opt->max_seq_len;
    ld.err = err;
    tunep_ids_init(&ld.ids);
    ld.ds = tunep_calloc(1, sizeof *ld.ds);
    if (!ld.ds) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory loading '%s'", path);
        goto fail;
    }
    ld.ds->pad_id = tunep_tokenizer_special(tok)->pad;
    if (len == 0) {
        st =
            tunep_error_set_at(err, TUNE_ECONFIG, path, 1, 0, "empty file: expected a header line");
        goto fail;
    }

    long max_label = -1;
    size_t line_no = 0;
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - data) : len;
        const char *s = data + pos;
        size_t n = end - pos;
        pos = end + 1;
        line_no++;
        if (n > 0 && s[n - 1] == '\r')
            n--;
        size_t bad = tunep_text_utf8_check(s, n);
        if (bad < n) {
            st = tunep_error_set_at(err, TUNE_ECONFIG, path, (int)line_no, (int)bad + 1,
                                    "invalid UTF-8");
            goto fail;
        }
        if (line_no == 1)
            st = header_line(&ld, s, n);
        else
            st = data_line(&ld, s, n, line_no, max_rows, opt->num_labels, &max_label);
        if (st != TUNE_OK)
            goto fail;
    }
    tunep_dataset *ds = ld.ds;
    if (ds->n == 0) {
        st = tunep_error_set_at(err, TUNE_ECONFIG, path, 2, 0, "no examples after the header");
        goto fail;
    }
    ds->num_labels = opt->num_labels > 0 ? opt->num_labels : (int)max_label + 1;
    ds->label_counts = tunep_calloc((size_t)ds->num_labels, sizeof *ds->label_counts);
    if (!ds->label_counts) {
        st = tunep_error_set(err, TUNE_ENOMEM, "out of memory loading '%s'", path);
        goto fail;
    }
    for (size_t i = 0; i < ds->n; i++)
        ds->label_counts[ds->rows[i].label]++;
    tunep_ids_done(&ld.ids);
    tunep_free(data);
    *ret_ds = ds;
    return TUNE_OK;
fail:
    tunep_ids_done(&ld.ids);
    tunep_free(data);
    tunep_dataset_free(ld.ds);
    return st;
}

void tunep_dataset_free(tunep_dataset *ds)
{
    if (!ds)
        return;
    tunep_free(ds->pool);
    tunep_free(ds->rows);
    tunep_free(ds->label_counts);
    tunep_free(ds);
}

size_t tunep_dataset_size(const tunep_dataset *ds)
{
    return ds ? ds->n : 0;
}

int tunep_dataset_is_pair(const tunep_dataset *ds)
{
    return ds ? ds->pair : 0;
}

int tunep_dataset_num_labels(const tunep_dataset *ds)
{
    return ds ? ds->num_labels : 0;
}

size_t tunep_dataset_label_count(const tunep_dataset *ds, int label)
{
    if (!ds || label < 0 || label >= ds->num_labels)
        return 0;
    return ds->label_counts[label];
}

size_t tunep_dataset_max_len(const tunep_dataset *ds)
{
    return ds ? ds->max_len : 0;
}

size_t tunep_dataset_truncated(const tunep_dataset *ds)
{
    return ds ? ds->truncated : 0;
}

tune_status tunep_dataset_get(const tunep_dataset *ds, size_t index, struct tunep_example *ret_ex,
                              tune_error *err)
{
    if (!ds || !ret_ex)
        return tunep_error_set(err, TUNE_EINVAL, "dataset: NULL argument");
    if (index >= ds->n)
        return tunep_error_set(err, TUNE_EINVAL, "example %zu out of range (%zu examples)", index,
                               ds->n);
    const struct row *r = &ds->rows[index];
    ret_ex->ids = ds->pool + r->off;
    ret_ex->len = r->len;
    ret_ex->len_type0 = r->len_a;
    ret_ex->label = r->label;
    ret_ex->line = r->line;
    return TUNE_OK;
}

/* ---- epoch order ---------------------------------------------------------- */

/* The splitmix64 output function: a bijective 64-bit mixer. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t splitmix64_next(uint64_t *state)
{
    *state += 0x9E3779B97F4A7C15ull;
    return mix64(*state);
}

/* Uniform in [0, n) for n > 0: rejects the 2^64 mod n lowest values. */
static uint64_t uniform_below(uint64_t *state, uint64_t n)
{
    uint64_t reject_below = (0 - n) % n;
    for (;;) {
        uint64_t r = splitmix64_next(state);
        if (r >= reject_below)
            return r % n;
    }
}

tune_status tunep_dataset_order(const tunep_dataset *ds, uint64_t seed, uint64_t epoch, int shuffle,
                                size_t *ret_order, tune_error *err)
{
    if (!ds || !ret_order)
        return tunep_error_set(err, TUNE_EINVAL, "dataset order: NULL argument");
    for (size_t i = 0; i < ds->n; i++)
        ret_order[i] = i;
    if (!shuffle)
        return TUNE_OK;
    /* mixed twice, so that nearby (seed, epoch) pairs start unrelated streams */
    uint64_t state = mix64(seed ^ mix64(epoch + 0x632BE59BD9B4E019ull));
    for (size_t i = ds->n; i > 1; i--) {
        size_t j = (size_t)uniform_below(&state, i);
        size_t t = ret_order[i - 1];
        ret_order[i - 1] = ret_order[j];
        ret_order[j] = t;
    }
    return TUNE_OK;
}

/* ---- batches -------------------------------------------------------------- */

void tunep_batch_init(struct tunep_batch *b)
{
    memset(b, 0, sizeof *b);
}

void tunep_batch_done(struct tunep_batch *b)
{
    if (!b)
        return;
    tunep_free(b->input_ids);
    tunep_free(b->token_type_ids);
    tunep_free(b->attention_mask);
    tunep_free(b->labels);
    tunep_batch_init(b);
}

/* Makes room for tokens and rows; the old contents are not kept. */
static int batch_reserve(struct tunep_batch *b, size_t tokens, size_t rows)
{
    if (tokens > b->cap_tokens) {
        int32_t *ids = tunep_malloc(tokens * sizeof *ids);
        int32_t *types = tunep_malloc(tokens * sizeof *types);
        int32_t *mask = tunep_malloc(tokens * sizeof *mask);
        if (!ids || !types || !mask) {
            tunep_free(ids);
            tunep_free(types);
            tunep_free(mask);
            return -1;
        }
        tunep_free(b->input_ids);
        tunep_free(b->token_type_ids);
        tunep_free(b->attention_mask);
        b->input_ids = ids;
        b->token_type_ids = types;
        b->attention_mask = mask;
        b->cap_tokens = tokens;
    }
    if (rows > b->cap_rows) {
        int32_t *labels = tunep_malloc(rows * sizeof *labels);
        if (!labels)
            return -1;
        tunep_free(b->labels);
        b->labels = labels;
        b->cap_rows = rows;
    }
    return 0;
}

tune_status tunep_dataset_batch(const tunep_dataset *ds, const size_t *index, size_t count,
                                struct tunep_batch *b, tune_error *err)
{
    if (!ds || !index || !b || count == 0)
        return tunep_error_set(err, TUNE_EINVAL, "dataset batch: NULL argument or empty batch");
    b->B = b->T = 0;
    if (count > TUNEP_BATCH_MAX)
        return tunep_error_set(err, TUNE_ECONFIG, "batch of %zu examples exceeds the limit of %d",
                               count, TUNEP_BATCH_MAX);
    size_t T = 0;
    for (size_t i = 0; i < count; i++) {
        if (index[i] >= ds->n)
            return tunep_error_set(err, TUNE_EINVAL, "example %zu out of range (%zu examples)",
                                   index[i], ds->n);
        if (ds->rows[index[i]].len > T)
            T = ds->rows[index[i]].len;
    }
    if (batch_reserve(b, count * T, count) != 0)
        return tunep_error_set(err, TUNE_ENOMEM, "out of memory for a batch of %zu x %zu", count,
                               T);
    for (size_t i = 0; i < count; i++) {
        const struct row *r = &ds->rows[index[i]];
        int32_t *ids = b->input_ids + i * T;
        int32_t *types = b->token_type_ids + i * T;
        int32_t *mask = b->attention_mask + i * T;
        for (size_t t = 0; t < T; t++) {
            int real = t < r->len;
            ids[t] = real ? ds->pool[r->off + t] : ds->pad_id;
            types[t] = real && t >= r->len_a;
            mask[t] = real;
        }
        b->labels[i] = r->label;
    }
    b->B = count;
    b->T = T;
    return TUNE_OK;
}
