/*
 * test_bert_io.c - BERT checkpoints: the safetensors reader and writer
 * (validation messages for every malformed case, F16/BF16 conversion,
 * atomic bit-exact writes), Hugging Face config.json and weights
 * (tests/bert/data/hf_tiny, written by tests/tools/gen_hf_fixture.py with the
 * logits PyTorch computed for it), and the trainer state: saved and loaded
 * bit for bit, and training after a reload continues exactly as without.
 * Allocation failures at every position return TUNE_ENOMEM (leaks are
 * caught by the ASan CI job).
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "check_util.h"
#include "bert_test_util.h"
#include "base/base.h"
#include "models/bert/bert.h"
#include "models/bert/bert_io.h"
#include "models/bert/safetensors.h"
#include "models/cpu/cpu_backend.h"

/* ---- helpers ---------------------------------------------------------------- */

static char *fixture(const char *file)
{
    const char *root = getenv("TUNE_SOURCE_ROOT");
    char *p = malloc(4096);
    snprintf(p, 4096, "%s/tests/bert/data/hf_tiny%s%s", root ? root : ".", file ? "/" : "",
             file ? file : "");
    return p;
}

static char *tmpdir;

static void setup(void)
{
    tmpdir = tune_test_mkdtemp();
    ck_assert_ptr_nonnull(tmpdir);
}

static void teardown(void)
{
    tune_test_rmtree(tmpdir);
    free(tmpdir);
}

/* A path in the test's temporary folder (static buffer, 4 in rotation). */
static const char *tpath(const char *name)
{
    static char bufs[4][4096];
    static int k;
    char *b = bufs[k++ % 4];
    snprintf(b, 4096, "%s/%s", tmpdir, name);
    return b;
}

/* Whether the folder holds a temporary file of name (".<name>.tmp.*", base/file_io.h). */
static int has_tmp(const char *name)
{
    char prefix[300];
    snprintf(prefix, sizeof prefix, ".%s.tmp.", name);
    DIR *d = opendir(tmpdir);
    ck_assert_ptr_nonnull(d);
    int found = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        found |= strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return found;
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

static unsigned char *slurp(const char *path, size_t *ret_n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *ret_n = (size_t)n;
    return b;
}

/* A safetensors file from a header text and data_len data bytes (value i & 0xff). */
static void write_st(const char *path, const char *header, uint64_t declared_len, size_t data_len)
{
    size_t hlen = strlen(header);
    unsigned char *b = malloc(8 + hlen + data_len + 1);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(declared_len >> (8 * i));
    memcpy(b + 8, header, hlen);
    for (size_t i = 0; i < data_len; i++)
        b[8 + hlen + i] = (unsigned char)i;
    write_file(path, b, 8 + hlen + data_len);
    free(b);
}

#define CHECK_ERR(st, err, want_code, want_source, want_text)                                      \
    do {                                                                                           \
        if ((st) != (want_code) || strcmp((err).text, (want_text)) != 0 ||                         \
            strcmp((err).source, (want_source)) != 0)                                              \
            fprintf(stderr, "got %d '%s' from '%s'\n", (int)(st), (err).text, (err).source);       \
        ck_assert_int_eq((st), (want_code));                                                       \
        ck_assert_str_eq((err).text, (want_text));                                                 \
        ck_assert_str_eq((err).source, (want_source));                                             \
    } while (0)

/* Opens a header-only file and expects the message. */
static void expect_st_error(const char *header, size_t data_len, tune_status code, const char *text)
{
    const char *p = tpath("bad.safetensors");
    write_st(p, header, strlen(header), data_len);
    tune_error err = {0};
    tunep_st_file *f = NULL;
    tune_status st = tunep_st_open(p, &f, &err);
    CHECK_ERR(st, err, code, p, text);
    ck_assert_ptr_null(f);
}

static void tiny_config(struct tunep_bert_config *cfg)
{
    *cfg = (struct tunep_bert_config){.L = 2,
                                      .C = 32,
                                      .NH = 2,
                                      .I = 64,
                                      .P = 16,
                                      .V = 50,
                                      .TV = 2,
                                      .K = 3,
                                      .hidden_dropout = 0.1,
                                      .attn_dropout = 0.1,
                                      .ln_eps = 1e-12};
}

enum { B = 4, T = 8 };

struct data {
    int32_t ids[B * T], types[B * T], mask[B * T], labels[B];
    struct tunep_bert_batch batch;
};

static void make_data(struct data *d, uint64_t seed)
{
    struct test_rng r = {seed};
    for (int b = 0; b < B; b++) {
        int len = 4 + (int)(test_rng_u64(&r) % (T - 3));
        for (int t = 0; t < T; t++) {
            int i = b * T + t;
            d->mask[i] = t < len;
            d->ids[i] = t == 0 ? 4 : t < len ? 7 + (int32_t)(test_rng_u64(&r) % 43) : 0;
            d->types[i] = t >= len / 2 && t < len;
        }
        d->labels[b] = (int32_t)(test_rng_u64(&r) % 3);
    }
    d->batch = (struct tunep_bert_batch){
        .B = B, .T = T, .ids = d->ids, .types = d->types, .mask = d->mask, .labels = d->labels};
}

static struct tunep_backend *backend(void)
{
    struct tunep_backend *be;
    ck_assert_int_eq(tunep_cpu_backend_new(1, &be, NULL), TUNE_OK);
    return be;
}

static struct tunep_bert *model_new(const struct tunep_bert_config *cfg, struct tunep_backend *be,
                                    uint64_t seed)
{
    struct tunep_bert *m;
    tune_error err = {0};
    ck_assert_int_eq(tunep_bert_new(cfg, B, T, be, &m, &err), TUNE_OK);
    ck_assert_int_eq(tunep_bert_init_weights(m, seed, NULL), TUNE_OK);
    return m;
}

/* AdamW steps from..from+n-1, dropout seeded by the step. */
static void train(struct tunep_bert *m, const struct data *d, int from, int n, double *losses)
{
    struct tunep_adamw opt;
    tunep_adamw_default(&opt);
    tune_error err = {0};
    for (int s = from; s < from + n; s++) {
        double loss;
        ck_assert_int_eq(tunep_bert_zero_grad(m, NULL), TUNE_OK);
        ck_assert_int_eq(tunep_bert_forward(m, &d->batch, 1, 1000 + (uint64_t)s, &loss, &err),
                         TUNE_OK);
        ck_assert_int_eq(tunep_bert_backward(m, &err), TUNE_OK);
        ck_assert_int_eq(tunep_bert_adamw_step(m, &opt, 3e-3, NULL, &err), TUNE_OK);
        if (losses)
            losses[s - from] = loss;
    }
}

/* Number of (id, layer) tensors of arena that differ bit-wise, ids skip1/skip2
 * left out; names them when equality was expected (report). */
static int tensors_differ_(const struct tunep_bert *a, const struct tunep_bert *b,
                           enum tunep_bert_arena arena, int skip1, int skip2, int report)
{
    const struct tunep_bert_config *cfg = tunep_bert_config_of(a);
    const struct tunep_bert_layout *lay = tunep_bert_layout_of(a);
    int bad = 0;
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        if (id == skip1 || id == skip2)
            continue;
        size_t n = lay->param_size[id];
        float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
        for (int l = 0; l < (tunep_bert_param_info[id].layered ? cfg->L : 1); l++) {
            ck_assert_int_eq(tunep_bert_tensor_get(a, arena, (enum bert_param)id, l, x, n, NULL),
                             TUNE_OK);
            ck_assert_int_eq(tunep_bert_tensor_get(b, arena, (enum bert_param)id, l, y, n, NULL),
                             TUNE_OK);
            if (memcmp(x, y, n * sizeof *x) != 0) {
                if (report)
                    fprintf(stderr, "arena %d: tensor %s layer %d differs\n", (int)arena,
                            tunep_bert_param_info[id].name, l);
                bad++;
            }
        }
        free(x);
        free(y);
    }
    return bad;
}

#define tensors_differ(a, b, arena, skip1, skip2) tensors_differ_(a, b, arena, skip1, skip2, 1)
#define tensors_count_diff(a, b, arena)           tensors_differ_(a, b, arena, -1, -1, 0)

/* A copy of the whole parameter arena (CPU backend: host memory). */
static float *snapshot(const struct tunep_bert *m)
{
    size_t n = tunep_bert_layout_of(m)->param_total;
    float *s = malloc(n * sizeof *s);
    memcpy(s, tunep_bert_params_arena(m), n * sizeof *s);
    return s;
}

static int unchanged(const struct tunep_bert *m, const float *snap)
{
    size_t n = tunep_bert_layout_of(m)->param_total;
    return memcmp(snap, tunep_bert_params_arena(m), n * sizeof *snap) == 0;
}

/* A string that a function must not have replaced. */
static char unchanged_text[] = "unchanged";

/* Log capture. */
static char logbuf[4096];

static void log_fn(tune_log_level level, const char *message, void *user_data)
{
    (void)level;
    (void)user_data;
    size_t len = strlen(logbuf);
    snprintf(logbuf + len, sizeof logbuf - len, "%s\n", message);
}

/* ---- rewriting a checkpoint (all float tensors as F32) --------------------- */

struct edit {
    int strip_bert;      /* "bert.x" -> "x" */
    int gamma_beta;      /* LayerNorm.weight/bias -> LayerNorm.gamma/beta */
    const char *drop[4]; /* names to leave out (after renaming); "x*" = prefix */
    const char *reshape; /* this tensor gets shape reshape_dims (zeros) */
    int64_t reshape_dims[2];
    const char *add; /* an extra tensor of shape add_dims (zeros) */
    int64_t add_dims[2];
    const char *meta_key; /* sets one metadata entry */
    const char *meta_value;
};

static int dropped(const struct edit *e, const char *name)
{
    for (int i = 0; i < 4 && e->drop[i]; i++) {
        size_t n = strlen(e->drop[i]);
        if (e->drop[i][n - 1] == '*' ? strncmp(name, e->drop[i], n - 1) == 0
                                     : strcmp(name, e->drop[i]) == 0)
            return 1;
    }
    return 0;
}

static void rewrite(const char *src, const char *dst, const struct edit *e)
{
    tune_error err = {0};
    tunep_st_file *f;
    ck_assert_int_eq(tunep_st_open(src, &f, &err), TUNE_OK);
    tunep_st_writer *w;
    ck_assert_int_eq(tunep_st_writer_new(&w, NULL), TUNE_OK);
    for (size_t i = 0; i < tunep_st_meta_count(f); i++) {
        const char *k, *v;
        tunep_st_meta_at(f, i, &k, &v);
        if (!e->meta_key || strcmp(k, e->meta_key) != 0)
            ck_assert_int_eq(tunep_st_writer_meta(w, k, v, NULL), TUNE_OK);
    }
    if (e->meta_key)
        ck_assert_int_eq(tunep_st_writer_meta(w, e->meta_key, e->meta_value, NULL), TUNE_OK);
    float *bufs[512];
    int nb = 0;
    for (size_t i = 0; i < tunep_st_count(f); i++) {
        const struct tunep_st_tensor *t = tunep_st_at(f, i);
        if (t->dtype != TUNEP_ST_F32 && t->dtype != TUNEP_ST_F16 && t->dtype != TUNEP_ST_BF16)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%s",
                 e->strip_bert && strncmp(t->name, "bert.", 5) == 0 ? t->name + 5 : t->name);
        size_t len = strlen(name);
        if (e->gamma_beta && len > 16 && strcmp(name + len - 16, "LayerNorm.weight") == 0)
            strcpy(name + len - 6, "gamma");
        if (e->gamma_beta && len > 14 && strcmp(name + len - 14, "LayerNorm.bias") == 0)
            strcpy(name + len - 4, "beta");
        if (dropped(e, name))
            continue;
        float *b = calloc(t->count + 1, sizeof *b);
        bufs[nb++] = b;
        if (e->reshape && strcmp(name, e->reshape) == 0) {
            float *z = calloc((size_t)(e->reshape_dims[0] * e->reshape_dims[1]), sizeof *z);
            bufs[nb++] = z;
            ck_assert_int_eq(tunep_st_writer_add_f32(w, name, 2, e->reshape_dims, z, NULL),
                             TUNE_OK);
            continue;
        }
        ck_assert_int_eq(tunep_st_read_f32(f, t, b, t->count, NULL), TUNE_OK);
        ck_assert_int_eq(tunep_st_writer_add_f32(w, name, t->ndim, t->shape, b, NULL), TUNE_OK);
    }
    if (e->add) {
        float *z = calloc((size_t)(e->add_dims[0] * e->add_dims[1]), sizeof *z);
        bufs[nb++] = z;
        ck_assert_int_eq(tunep_st_writer_add_f32(w, e->add, 2, e->add_dims, z, NULL), TUNE_OK);
    }
    ck_assert_int_eq(tunep_st_writer_write(w, dst, &err), TUNE_OK);
    tunep_st_writer_free(w);
    for (int i = 0; i < nb; i++)
        free(bufs[i]);
    tunep_st_close(f);
}

/* ---- safetensors ------------------------------------------------------------ */

START_TEST(test_st_malformed)
{
    tune_error err = {0};
    tunep_st_file *f = NULL;
    const char *p = tpath("short.safetensors");
    write_file(p, "\x05\0\0\0\0", 5);
    tune_status st = tunep_st_open(p, &f, &err);
    CHECK_ERR(st, err, TUNE_EIO, p, "truncated file: 5 bytes, less than the 8-byte header length");

    p = tpath("len.safetensors");
    write_st(p, "{}", 1000, 90);
    st = tunep_st_open(p, &f, &err);
    CHECK_ERR(st, err, TUNE_EIO, p, "header length 1000 is beyond the end of the file (100 bytes)");
    write_st(p, "{}", (uint64_t)1 << 40, 0);
    st = tunep_st_open(p, &f, &err);
    CHECK_ERR(st, err, TUNE_EIO, p,
              "header length 1099511627776 exceeds the limit of 100000000 bytes");

    p = tpath("missing.safetensors");
    st = tunep_st_open(p, &f, &err);
    CHECK_ERR(st, err, TUNE_ENOTFOUND, p, "cannot open: No such file or directory");
    ck_assert_int_eq(tunep_st_open(tmpdir, &f, &err), TUNE_EIO);
    ck_assert_str_eq(err.text, "not a regular file");

    expect_st_error("{\"a\": {\"dtype\": \"F32\",", 0, TUNE_EIO,
                    "header is not valid JSON: string or '}' expected near end of file (header "
                    "byte 22)");
    expect_st_error("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}, "
                    "\"a\": {}}",
                    4, TUNE_EIO,
                    "header is not valid JSON: duplicate object key near '\"a\"' (header byte "
                    "65)");
    expect_st_error("[1, 2]  ", 0, TUNE_EIO, "header is not a JSON object");
    expect_st_error("{\"a\": {\"dtype\": \"F128\", \"shape\": [2], \"data_offsets\": [0, 8]}}", 8,
                    TUNE_EIO, "tensor 'a': unknown dtype 'F128'");
    expect_st_error("{\"a\": {\"dtype\": 4, \"shape\": [2], \"data_offsets\": [0, 8]}}", 8,
                    TUNE_EIO, "tensor 'a': 'dtype' must be a string");
    expect_st_error("{\"a\": {\"dtype\": \"F32\", \"shape\": [2, -1], \"data_offsets\": [0, 8]}}",
                    8, TUNE_EIO,
                    "tensor 'a': 'shape' must be an array of at most 8 non-negative integers");
    expect_st_error("{\"a\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], "
                    "\"data_offsets\": [0, 4]}}",
                    4, TUNE_EIO,
                    "tensor 'a': 'shape' must be an array of at most 8 non-negative integers");
    expect_st_error("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 0]}}", 8,
                    TUNE_EIO,
                    "tensor 'a': 'data_offsets' must be [begin, end] with 0 <= begin <= end");
    expect_st_error("{\"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 8,
                    TUNE_EIO,
                    "tensor 'a': data_offsets [0, 8] hold 8 bytes, but shape [3] of F32 "
                    "needs 12");
    expect_st_error("{\"a\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296, 4294967296]"
                    ", \"data_offsets\": [0, 8]}}",
                    8, TUNE_EIO, "tensor 'a': shape is too large");
    expect_st_error("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8], "
                    "\"foo\": 1}}",
                    8, TUNE_EIO, "tensor 'a': unknown key 'foo'");
    expect_st_error("{\"a\": [1]}", 0, TUNE_EIO,
                    "tensor 'a': expected an object with dtype, shape and data_offsets");
    expect_st_error("{\"__metadata__\": {\"x\": 1}}", 0, TUNE_EIO,
                    "'__metadata__' must be an object mapping strings to strings");
    /* offsets outside the data area, overlapping, leaving gaps */
    expect_st_error("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
                    "\"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [100, 108]}}",
                    16, TUNE_EIO,
                    "tensor 'b': data_offsets [100, 108] are outside the data area "
                    "of 16 bytes");
    expect_st_error("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
                    "\"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
                    12, TUNE_EIO, "tensors 'a' and 'b' overlap: data_offsets [0, 8] and [4, 12]");
    expect_st_error("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
                    "\"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [12, 20]}}",
                    20, TUNE_EIO, "bytes [8, 12) of the data area belong to no tensor");
    expect_st_error("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", 12,
                    TUNE_EIO, "bytes [8, 12) of the data area belong to no tensor");
    expect_st_error("{}", 3, TUNE_EIO, "bytes [0, 3) of the data area belong to no tensor");

    /* the fixture, cut short in its data */
    char *fx = fixture("model.safetensors");
    size_t n;
    unsigned char *bytes = slurp(fx, &n);
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++)
        hlen |= (uint64_t)bytes[i] << (8 * i);
    p = tpath("cut.safetensors");
    write_file(p, bytes, n - 100);
    st = tunep_st_open(p, &f, &err);
    char want[256];
    snprintf(want, sizeof want,
             "truncated file: the header describes %zu bytes of tensor data, only %zu follow it",
             n - 8 - (size_t)hlen, n - 108 - (size_t)hlen);
    CHECK_ERR(st, err, TUNE_EIO, p, want);
    /* cut inside the header */
    write_file(p, bytes, 8 + (size_t)hlen / 2);
    st = tunep_st_open(p, &f, &err);
    snprintf(want, sizeof want, "header length %llu is beyond the end of the file (%zu bytes)",
             (unsigned long long)hlen, 8 + (size_t)hlen / 2);
    CHECK_ERR(st, err, TUNE_EIO, p, want);
    free(bytes);
    free(fx);
}
END_TEST

START_TEST(test_st_fixture_and_dtypes)
{
    char *fx = fixture("model.safetensors");
    tune_error err = {0};
    tunep_st_file *f;
    ck_assert_int_eq(tunep_st_open(fx, &f, &err), TUNE_OK);
    ck_assert_uint_eq(tunep_st_count(f), 44); /* 5 + 2 * 16 + 4 weights, 3 extras */
    ck_assert_str_eq(tunep_st_meta(f, "format"), "pt");
    ck_assert_ptr_null(tunep_st_meta(f, "nope"));
    const struct tunep_st_tensor *t = tunep_st_find(f, "bert.embeddings.word_embeddings.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->dtype, TUNEP_ST_BF16);
    ck_assert_int_eq(t->ndim, 2);
    ck_assert_int_eq(t->shape[0], 50);
    ck_assert_int_eq(t->shape[1], 32);
    t = tunep_st_find(f, "bert.encoder.layer.1.intermediate.dense.weight");
    ck_assert_int_eq(t->dtype, TUNEP_ST_F16);
    ck_assert_ptr_null(tunep_st_find(f, "bert.encoder.layer.2.intermediate.dense.weight"));
    t = tunep_st_find(f, "bert.embeddings.position_ids");
    ck_assert_int_eq(t->dtype, TUNEP_ST_I64);
    float v[16];
    tune_status st = tunep_st_read_f32(f, t, v, 16, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, fx,
              "tensor 'bert.embeddings.position_ids' has dtype I64, expected F32, F16, BF16 or "
              "F64");
    /* every tensor found by name is the one listed at its index */
    for (size_t i = 0; i < tunep_st_count(f); i++)
        ck_assert_ptr_eq(tunep_st_find(f, tunep_st_at(f, i)->name), tunep_st_at(f, i));
    tunep_st_close(f);
    free(fx);

    /* Conversions, bit patterns against their IEEE values. F16: 1, -2, the
     * smallest subnormal 2^-24, the largest subnormal (1023 * 2^-24), the
     * largest finite 65504, -0, +inf, -inf, NaN, 0.333251953125 (0x3555).
     * BF16: 1, -2, 2^-133 (smallest subnormal), +inf, 3.140625 (0x4049). */
    static const uint16_t h16[] = {0x3c00, 0xc000, 0x0001, 0x03ff, 0x7bff,
                                   0x8000, 0x7c00, 0xfc00, 0x7e00, 0x3555};
    static const float want16[] = {1.0f,     -2.0f,     0x1p-24f, 1023 * 0x1p-24f, 65504.0f, -0.0f,
                                   INFINITY, -INFINITY, NAN,      0.333251953125f};
    static const uint16_t hb[] = {0x3f80, 0xc000, 0x0001, 0x7f80, 0x4049};
    static const float wantb[] = {1.0f, -2.0f, 0x1p-133f, INFINITY, 3.140625f};
    unsigned char data[30];
    for (int i = 0; i < 10; i++) {
        data[2 * i] = (unsigned char)(h16[i] & 0xff);
        data[2 * i + 1] = (unsigned char)(h16[i] >> 8);
    }
    for (int i = 0; i < 5; i++) {
        data[20 + 2 * i] = (unsigned char)(hb[i] & 0xff);
        data[20 + 2 * i + 1] = (unsigned char)(hb[i] >> 8);
    }
    const char *hdr = "{\"h\":{\"dtype\":\"F16\",\"shape\":[2,5],\"data_offsets\":[0,20]},"
                      "\"b\":{\"dtype\":\"BF16\",\"shape\":[5],\"data_offsets\":[20,30]}}";
    size_t hl = strlen(hdr);
    unsigned char file[256];
    for (int i = 0; i < 8; i++)
        file[i] = (unsigned char)(hl >> (8 * i));
    memcpy(file + 8, hdr, hl);
    memcpy(file + 8 + hl, data, sizeof data);
    ck_assert_int_eq(tunep_st_open_mem(file, 8 + hl + sizeof data, "mem", &f, &err), TUNE_OK);
    float got[10];
    double gotd[10];
    ck_assert_int_eq(tunep_st_read_f32(f, tunep_st_find(f, "h"), got, 10, &err), TUNE_OK);
    ck_assert_int_eq(tunep_st_read_f64(f, tunep_st_find(f, "h"), gotd, 10, &err), TUNE_OK);
    for (int i = 0; i < 10; i++) {
        if (isnan(want16[i])) {
            ck_assert(isnan(got[i]) && isnan(gotd[i]));
        } else {
            ck_assert_msg(memcmp(&got[i], &want16[i], sizeof got[i]) == 0, "f16 %d: %a", i,
                          (double)got[i]);
            ck_assert(gotd[i] == (double)want16[i]);
        }
    }
    ck_assert_int_eq(tunep_st_read_f32(f, tunep_st_find(f, "b"), got, 5, &err), TUNE_OK);
    for (int i = 0; i < 5; i++)
        ck_assert_msg(memcmp(&got[i], &wantb[i], sizeof got[i]) == 0, "bf16 %d: %a", i,
                      (double)got[i]);
    st = tunep_st_read_f32(f, tunep_st_find(f, "b"), got, 4, &err);
    CHECK_ERR(st, err, TUNE_EINVAL, "mem", "tensor 'b' has 5 elements, not 4");
    tunep_st_close(f);

    /* every finite F16 and BF16 value against a double computation */
    for (uint32_t hbits = 0; hbits < 0x10000; hbits++) {
        int e = (int)(hbits >> 10) & 0x1f, mnt = (int)hbits & 0x3ff;
        if (e != 0x1f) {
            double w = e ? ldexp(1.0 + mnt / 1024.0, e - 15) : ldexp(mnt, -24);
            w = hbits & 0x8000 ? -w : w;
            ck_assert((double)tunep_st_f16_to_f32((uint16_t)hbits) == w);
        }
        int eb = (int)(hbits >> 7) & 0xff, mb = (int)hbits & 0x7f;
        if (eb != 0xff) {
            double w = eb ? ldexp(1.0 + mb / 128.0, eb - 127) : ldexp(mb, -133);
            w = hbits & 0x8000 ? -w : w;
            ck_assert((double)tunep_st_bf16_to_f32((uint16_t)hbits) == w);
        }
    }
}
END_TEST

static tune_status fill_fail(void *ctx, float *dst, size_t n, tune_error *err)
{
    (void)ctx;
    (void)dst;
    (void)n;
    return tunep_error_set(err, TUNE_EDEVICE, "device lost");
}

static tune_status fill_iota(void *ctx, float *dst, size_t n, tune_error *err)
{
    (void)err;
    float base = *(const float *)ctx;
    for (size_t i = 0; i < n; i++)
        dst[i] = base + (float)i;
    return TUNE_OK;
}

START_TEST(test_st_writer)
{
    tune_error err = {0};
    tunep_st_writer *w;
    ck_assert_int_eq(tunep_st_writer_new(&w, NULL), TUNE_OK);
    /* special values survive bit for bit: -0, a NaN payload, inf, a subnormal */
    uint32_t bits[6] = {0x80000000u, 0x7fc12345u, 0x7f800000u,
                        0x00000001u, 0x3f800000u, 0xc2f6e979u};
    float vals[6];
    memcpy(vals, bits, sizeof vals);
    const int64_t s23[2] = {2, 3}, s0[2] = {0, 3};
    float scalar = 42.5f, base = 7.0f;
    ck_assert_int_eq(tunep_st_writer_add_f32(w, "m", 2, s23, vals, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_st_writer_add_f32(w, "scalar", 0, NULL, &scalar, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_st_writer_add_f32(w, "empty", 2, s0, NULL, NULL), TUNE_OK);
    const int64_t s5[1] = {5};
    ck_assert_int_eq(tunep_st_writer_add(w, "iota", 1, s5, fill_iota, &base, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_st_writer_meta(w, "note", "caf\xc3\xa9 {\"json\": 1}", NULL), TUNE_OK);
    tune_status st = tunep_st_writer_meta(w, "note", "again", &err);
    ck_assert_int_eq(st, TUNE_EINVAL);
    ck_assert_str_eq(err.text, "safetensors: duplicate metadata key 'note'");
    st = tunep_st_writer_meta(w, "bad", "\xc3(", &err);
    ck_assert_int_eq(st, TUNE_EINVAL);
    ck_assert_str_eq(err.text, "safetensors: metadata 'bad' is not valid UTF-8");
    st = tunep_st_writer_add_f32(w, "__metadata__", 0, NULL, &scalar, &err);
    ck_assert_int_eq(st, TUNE_EINVAL);

    const char *p = tpath("w.safetensors");
    ck_assert_int_eq(tunep_st_writer_write(w, p, &err), TUNE_OK);
    ck_assert(!has_tmp("w.safetensors"));
    size_t n;
    unsigned char *bytes = slurp(p, &n);
    ck_assert_uint_eq((bytes[0] | (size_t)bytes[1] << 8) % 8, 0); /* 8-byte aligned data */
    free(bytes);

    tunep_st_file *f;
    ck_assert_int_eq(tunep_st_open(p, &f, &err), TUNE_OK);
    ck_assert_uint_eq(tunep_st_count(f), 4);
    ck_assert_str_eq(tunep_st_at(f, 0)->name, "m"); /* header order = order added */
    ck_assert_str_eq(tunep_st_at(f, 3)->name, "iota");
    ck_assert_str_eq(tunep_st_meta(f, "note"), "caf\xc3\xa9 {\"json\": 1}");
    float got[6];
    const struct tunep_st_tensor *t = tunep_st_find(f, "m");
    ck_assert_int_eq(tunep_st_read_f32(f, t, got, 6, NULL), TUNE_OK);
    ck_assert(memcmp(got, vals, sizeof got) == 0);
    t = tunep_st_find(f, "scalar");
    ck_assert_int_eq(t->ndim, 0);
    ck_assert_uint_eq(t->count, 1);
    ck_assert_int_eq(tunep_st_read_f32(f, t, got, 1, NULL), TUNE_OK);
    ck_assert(got[0] == 42.5f);
    t = tunep_st_find(f, "empty");
    ck_assert_uint_eq(t->count, 0);
    ck_assert_uint_eq(t->end - t->begin, 0);
    t = tunep_st_find(f, "iota");
    ck_assert_int_eq(tunep_st_read_f32(f, t, got, 5, NULL), TUNE_OK);
    ck_assert(got[0] == 7.0f && got[4] == 11.0f);
    tunep_st_close(f);

    /* a failing fill leaves the old file and no temporary behind */
    ck_assert_int_eq(tunep_st_writer_add(w, "bad", 1, s5, fill_fail, NULL, NULL), TUNE_OK);
    st = tunep_st_writer_write(w, p, &err);
    ck_assert_int_eq(st, TUNE_EDEVICE);
    ck_assert_str_eq(err.text, "device lost");
    ck_assert(!has_tmp("w.safetensors"));
    ck_assert_int_eq(tunep_st_open(p, &f, &err), TUNE_OK);
    ck_assert_uint_eq(tunep_st_count(f), 4);
    tunep_st_close(f);
    tunep_st_writer_free(w);

    /* duplicate names and a missing folder */
    ck_assert_int_eq(tunep_st_writer_new(&w, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_st_writer_add_f32(w, "x", 1, s5, vals, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_st_writer_add_f32(w, "x", 1, s5, vals, NULL), TUNE_OK);
    st = tunep_st_writer_write(w, p, &err);
    ck_assert_int_eq(st, TUNE_EINVAL);
    ck_assert_str_eq(err.text, "safetensors: duplicate tensor 'x'");
    tunep_st_writer_free(w);
    ck_assert_int_eq(tunep_st_writer_new(&w, NULL), TUNE_OK);
    const char *nodir = tpath("nodir/x.safetensors");
    st = tunep_st_writer_write(w, nodir, &err);
    ck_assert_int_eq(st, TUNE_ENOTFOUND);
    ck_assert_str_eq(err.text, "cannot create: No such file or directory");
    /* an empty file is valid: "{}" padded, no data */
    ck_assert_int_eq(tunep_st_writer_write(w, p, &err), TUNE_OK);
    ck_assert_int_eq(tunep_st_open(p, &f, &err), TUNE_OK);
    ck_assert_uint_eq(tunep_st_count(f), 0);
    tunep_st_close(f);
    tunep_st_writer_free(w);
}
END_TEST

START_TEST(test_param_shapes)
{
    /* bert-base-uncased's checkpoint shapes (Hugging Face), and every
     * shape's product is the layout's element count */
    struct tunep_bert_config cfg;
    tunep_bert_config_default(&cfg);
    struct tunep_bert_layout lay;
    ck_assert_int_eq(tunep_bert_layout_compute(&cfg, 1, 1, &lay, NULL), TUNE_OK);
    int64_t d[2];
    ck_assert_int_eq(tunep_bert_param_shape(&cfg, BERT_P_WORD_EMB, d), 2);
    ck_assert(d[0] == 30522 && d[1] == 768);
    ck_assert_int_eq(tunep_bert_param_shape(&cfg, BERT_P_FC_W, d), 2);
    ck_assert(d[0] == 3072 && d[1] == 768);
    ck_assert_int_eq(tunep_bert_param_shape(&cfg, BERT_P_FC_O_W, d), 2);
    ck_assert(d[0] == 768 && d[1] == 3072);
    ck_assert_int_eq(tunep_bert_param_shape(&cfg, BERT_P_TYPE_EMB, d), 2);
    ck_assert(d[0] == 2 && d[1] == 768);
    ck_assert_int_eq(tunep_bert_param_shape(&cfg, BERT_P_CLS_W, d), 2);
    ck_assert(d[0] == 2 && d[1] == 768);
    ck_assert_int_eq(tunep_bert_param_shape(&cfg, BERT_P_FC_B, d), 1);
    ck_assert(d[0] == 3072);
    ck_assert_int_eq(tunep_bert_param_shape(&cfg, BERT_P_CLS_B, d), 1);
    ck_assert(d[0] == 2);
    ck_assert_int_eq(tunep_bert_param_shape(&cfg, BERT_PARAM_COUNT, d), 0);
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        int nd = tunep_bert_param_shape(&cfg, (enum bert_param)id, d);
        ck_assert((uint64_t)d[0] * (uint64_t)(nd == 2 ? d[1] : 1) == lay.param_size[id]);
        /* Hugging Face's no_decay rule is "biases and LayerNorm weights", the 1-D tensors */
        ck_assert_int_eq(nd == 2, tunep_bert_param_info[id].decay);
    }
}
END_TEST

/* ---- Hugging Face config.json ------------------------------------------------ */

static const char *good_config = "{\n"
                                 "  \"hidden_size\": 32,\n"
                                 "  \"num_hidden_layers\": 2,\n"
                                 "  \"num_attention_heads\": 2,\n"
                                 "  \"intermediate_size\": 64,\n"
                                 "  \"max_position_embeddings\": 16,\n"
                                 "  \"vocab_size\": 50,\n"
                                 "  \"hidden_act\": \"gelu\",\n"
                                 "  \"model_type\": \"bert\",\n"
                                 "  \"layer_norm_eps\": 1e-06,\n"
                                 "  \"num_labels\": 4\n"
                                 "}\n";

/* good_config with `from` replaced by `to`, loaded; returns the status. */
static tune_status load_config_variant(const char *from, const char *to,
                                       struct tunep_bert_config *cfg, tune_error *err)
{
    char text[2048];
    const char *at = from ? strstr(good_config, from) : NULL;
    if (from)
        ck_assert_ptr_nonnull(at);
    if (at)
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - good_config), good_config, to,
                 at + strlen(from));
    else
        snprintf(text, sizeof text, "%s", good_config);
    write_file(tpath("config.json"), text, strlen(text));
    return tunep_bert_hf_config_load(tmpdir, cfg, err);
}

static void expect_config_error(const char *from, const char *to, int line, int column,
                                const char *text)
{
    struct tunep_bert_config cfg = {.L = -7};
    tune_error err = {0};
    tune_status st = load_config_variant(from, to, &cfg, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, tpath("config.json"), text);
    ck_assert_int_eq(err.line, line);
    ck_assert_int_eq(err.column, column);
    ck_assert_int_eq(cfg.L, -7); /* untouched */
}

START_TEST(test_hf_config)
{
    struct tunep_bert_config cfg;
    tune_error err = {0};
    char *dir = fixture(NULL);
    ck_assert_int_eq(tunep_bert_hf_config_load(dir, &cfg, &err), TUNE_OK);
    ck_assert_int_eq(cfg.L, 2);
    ck_assert_int_eq(cfg.C, 32);
    ck_assert_int_eq(cfg.NH, 2);
    ck_assert_int_eq(cfg.I, 64);
    ck_assert_int_eq(cfg.P, 16);
    ck_assert_int_eq(cfg.V, 50);
    ck_assert_int_eq(cfg.TV, 2);
    ck_assert_int_eq(cfg.K, 3); /* from id2label */
    ck_assert(cfg.hidden_dropout == 0.1 && cfg.attn_dropout == 0.1 && cfg.ln_eps == 1e-12);
    free(dir);

    /* defaults for what BertConfig defaults; num_labels when no id2label */
    ck_assert_int_eq(load_config_variant(NULL, NULL, &cfg, &err), TUNE_OK);
    ck_assert_int_eq(cfg.TV, 2);
    ck_assert_int_eq(cfg.K, 4);
    ck_assert(cfg.hidden_dropout == 0.1 && cfg.ln_eps == 1e-6);
    ck_assert_int_eq(load_config_variant(",\n  \"num_labels\": 4", "", &cfg, &err), TUNE_OK);
    ck_assert_int_eq(cfg.K, 2);

    expect_config_error("\"hidden_size\": 32", "\"hidden_size\": \"32\"", 2, 18,
                        "hidden_size: expected an integer, got a string");
    expect_config_error("\"hidden_size\": 32", "\"hidden_size\": 32.0", 2, 18,
                        "hidden_size: expected an integer, got a real number");
    expect_config_error("  \"num_hidden_layers\": 2,\n", "", 1, 1,
                        "missing key 'num_hidden_layers'");
    expect_config_error("\"vocab_size\": 50", "\"vocab_size\": 0", 7, 17,
                        "vocab_size: 0 is outside [1, 16777216]");
    expect_config_error("\"gelu\"", "\"relu\"", 8, 17,
                        "hidden_act: only \"gelu\" (exact erf GELU) is supported, got \"relu\"");
    expect_config_error("\"bert\"", "\"roberta\"", 9, 17,
                        "model_type: only \"bert\" is supported, got \"roberta\"");
    expect_config_error("1e-06", "\"1e-6\"", 10, 21,
                        "layer_norm_eps: expected a number, got a string");
    expect_config_error("1e-06", "0", 10, 21, "layer_norm_eps: 0 is outside (0, 1)");
    expect_config_error("\"num_labels\": 4", "\"num_labels\": 4, \"id2label\": {\"0\": \"a\"}", 11,
                        17, "num_labels: 4 disagrees with the 1 labels of id2label");
    expect_config_error("\"num_labels\": 4", "\"id2label\": {\"0\": \"a\", \"2\": \"b\"}", 11, 15,
                        "id2label: expected an object mapping \"0\" ... \"K-1\" to label names, "
                        "with 1 <= K <= 65536");
    expect_config_error("\"num_attention_heads\": 2", "\"num_attention_heads\": 5", 0, 0,
                        "bert config 'hidden_size': 32 is not a multiple of num_attention_heads 5");
    expect_config_error("\"num_labels\": 4\n", "\"num_labels\": 4,\n", 12, 1,
                        "string or '}' expected near '}'");
    expect_config_error("\"num_labels\": 4", "\"num_labels\": 4, \"classifier_dropout\": \"x\"", 11,
                        42, "classifier_dropout: expected a number or null, got a string");
    logbuf[0] = '\0';
    tune_set_log_callback(log_fn, TUNE_LOG_WARN, NULL);
    ck_assert_int_eq(load_config_variant("\"num_labels\": 4",
                                         "\"num_labels\": 4, \"classifier_dropout\": 0.25", &cfg,
                                         &err),
                     TUNE_OK);
    tune_set_log_callback(NULL, TUNE_LOG_ERROR, NULL);
    char want[4200];
    snprintf(want, sizeof want,
             "%s: classifier_dropout 0.25 is not supported: the classifier uses "
             "hidden_dropout_prob 0.1\n",
             tpath("config.json"));
    ck_assert_str_eq(logbuf, want);

    write_file(tpath("config.json"), "\n [1, 2]\n", 9);
    tune_status st = tunep_bert_hf_config_load(tmpdir, &cfg, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, tpath("config.json"), "expected a JSON object");
    ck_assert_int_eq(err.line, 2);
    ck_assert_int_eq(err.column, 2);

    const char *nope = tpath("nope.json");
    st = tunep_bert_hf_config_load(nope, &cfg, &err);
    CHECK_ERR(st, err, TUNE_ENOTFOUND, nope, "cannot open: No such file or directory");
}
END_TEST

/* ---- Hugging Face weights ------------------------------------------------------ */

/* The reference batch and logits of reference.json. */
struct reference {
    int32_t ids[16], types[16], mask[16];
    double logits[6];
};

static void load_reference(struct reference *r)
{
    char *path = fixture("reference.json");
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    ck_assert_msg(root != NULL, "%s: %s", path, jerr.text);
    const char *keys[3] = {"input_ids", "token_type_ids", "attention_mask"};
    int32_t *dst[3] = {r->ids, r->types, r->mask};
    for (int k = 0; k < 3; k++) {
        json_t *a = json_object_get(root, keys[k]);
        ck_assert_uint_eq(json_array_size(a), 2);
        for (size_t b = 0; b < 2; b++) {
            json_t *row = json_array_get(a, b);
            ck_assert_uint_eq(json_array_size(row), 8);
            for (size_t t = 0; t < 8; t++)
                dst[k][b * 8 + t] = (int32_t)json_integer_value(json_array_get(row, t));
        }
    }
    json_t *lg = json_object_get(root, "logits");
    for (size_t b = 0; b < 2; b++)
        for (size_t k = 0; k < 3; k++)
            r->logits[b * 3 + k] = json_real_value(json_array_get(json_array_get(lg, b), k));
    json_decref(root);
    free(path);
}

START_TEST(test_hf_logits)
{
    /* The fixture's weights (BF16, F16 and F32 tensors) give PyTorch's
     * logits. As in test_bert_ref.c: both sides compute in float with
     * different summation orders, ~1e-6 relative per op over a 2-layer
     * model, so rtol 3e-5 and atol 3e-5 * rms. */
    char *dir = fixture(NULL);
    struct tunep_bert_config cfg;
    tune_error err = {0};
    ck_assert_int_eq(tunep_bert_hf_config_load(dir, &cfg, &err), TUNE_OK);
    struct tunep_backend *be = backend();
    struct tunep_bert *m = model_new(&cfg, be, 5);
    logbuf[0] = '\0';
    tune_set_log_callback(log_fn, TUNE_LOG_DEBUG, NULL);
    ck_assert_msg(tunep_bert_load_hf(m, dir, 3, &err) == TUNE_OK, "%s", err.text);
    tune_set_log_callback(NULL, TUNE_LOG_ERROR, NULL);
    char want_log[4200];
    snprintf(want_log, sizeof want_log,
             "%s/model.safetensors: ignored 3 tensors that are not model weights\n", dir);
    ck_assert_str_eq(logbuf, want_log);

    struct reference r;
    load_reference(&r);
    struct tunep_bert_batch batch = {
        .B = 2, .T = 8, .ids = r.ids, .types = r.types, .mask = r.mask};
    ck_assert_int_eq(tunep_bert_forward(m, &batch, 0, 0, NULL, &err), TUNE_OK);
    float lf[6];
    ck_assert_int_eq(tunep_bert_logits(m, lf, 6, NULL), TUNE_OK);
    double got[6], rms = 0.0;
    for (int i = 0; i < 6; i++) {
        got[i] = (double)lf[i];
        rms += r.logits[i] * r.logits[i] / 6;
    }
    ck_assert_uint_eq(test_compare("logits", got, r.logits, 6, 3e-5 * sqrt(rms), 3e-5), 0);

    /* a BF16 tensor arrives exactly: word embeddings against the file */
    tunep_st_file *f;
    char *fx = fixture("model.safetensors");
    ck_assert_int_eq(tunep_st_open(fx, &f, NULL), TUNE_OK);
    float *a = malloc(50 * 32 * sizeof *a), *b = malloc(50 * 32 * sizeof *b);
    ck_assert_int_eq(tunep_st_read_f32(f,
                                       tunep_st_find(f, "bert.embeddings.word_embeddings.weight"),
                                       a, 50 * 32, NULL),
                     TUNE_OK);
    ck_assert_int_eq(tunep_bert_param_get(m, BERT_P_WORD_EMB, 0, b, 50 * 32, NULL), TUNE_OK);
    ck_assert(memcmp(a, b, 50 * 32 * sizeof *a) == 0);
    free(a);
    free(b);
    tunep_st_close(f);
    free(fx);

    tune_status st = tunep_bert_load_hf(m, dir, 2, &err);
    ck_assert_int_eq(st, TUNE_EINVAL);
    ck_assert_str_eq(err.text, "bert: num_labels 2 does not match the model's 3 labels");
    tunep_bert_free(m);
    tunep_cpu_backend_free(be);
    free(dir);
}
END_TEST

START_TEST(test_hf_variants)
{
    char *fx = fixture("model.safetensors");
    struct tunep_bert_config cfg;
    tiny_config(&cfg);
    struct tunep_backend *be = backend();
    tune_error err = {0};
    struct tunep_bert *ref = model_new(&cfg, be, 5), *init = model_new(&cfg, be, 5);
    ck_assert_int_eq(tunep_bert_load_hf(ref, fx, 0, &err), TUNE_OK);

    /* BertModel names (no "bert." prefix), no classifier: the classifier
     * keeps its initialisation, everything else is the checkpoint's */
    const char *p = tpath("base.safetensors");
    rewrite(fx, p, &(struct edit){.strip_bert = 1, .drop = {"classifier.*"}});
    struct tunep_bert *m = model_new(&cfg, be, 5);
    logbuf[0] = '\0';
    tune_set_log_callback(log_fn, TUNE_LOG_INFO, NULL);
    ck_assert_msg(tunep_bert_load_hf(m, p, 3, &err) == TUNE_OK, "%s", err.text);
    tune_set_log_callback(NULL, TUNE_LOG_ERROR, NULL);
    char want[4200];
    snprintf(want, sizeof want,
             "%s: no classifier tensors: the classifier keeps its random initialisation\n", p);
    ck_assert_str_eq(logbuf, want);
    ck_assert_int_eq(tensors_differ(m, ref, TUNEP_BERT_ARENA_PARAMS, BERT_P_CLS_W, BERT_P_CLS_B),
                     0);
    /* all 41 tensors (25 rows, 16 of them in 2 layers) but the classifier's 2 differ */
    ck_assert_int_eq(tensors_count_diff(m, init, TUNEP_BERT_ARENA_PARAMS), 41 - 2);

    /* errors name the tensor in the file's own style, and leave the model alone */
    float *snap = snapshot(m);
    rewrite(fx, p, &(struct edit){.strip_bert = 1, .drop = {"encoder.layer.1.output.dense.bias"}});
    tune_status st = tunep_bert_load_hf(m, p, 0, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, p, "missing tensor 'encoder.layer.1.output.dense.bias'");
    ck_assert(unchanged(m, snap));

    /* TF-converted names: LayerNorm gamma/beta; no pooler */
    rewrite(fx, p, &(struct edit){.gamma_beta = 1, .drop = {"bert.pooler.*"}});
    struct tunep_bert *g = model_new(&cfg, be, 5);
    logbuf[0] = '\0';
    tune_set_log_callback(log_fn, TUNE_LOG_INFO, NULL);
    ck_assert_msg(tunep_bert_load_hf(g, p, 0, &err) == TUNE_OK, "%s", err.text);
    tune_set_log_callback(NULL, TUNE_LOG_ERROR, NULL);
    snprintf(want, sizeof want, "%s: no pooler tensors: the pooler keeps its initialisation\n", p);
    ck_assert_str_eq(logbuf, want);
    ck_assert_int_eq(tensors_differ(g, ref, TUNEP_BERT_ARENA_PARAMS, BERT_P_POOL_W, BERT_P_POOL_B),
                     0);
    ck_assert_int_eq(tensors_count_diff(g, init, TUNEP_BERT_ARENA_PARAMS), 41 - 2);
    tunep_bert_free(g);

    rewrite(fx, p, &(struct edit){.drop = {"bert.encoder.layer.1.output.dense.bias"}});
    st = tunep_bert_load_hf(m, p, 0, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, p, "missing tensor 'bert.encoder.layer.1.output.dense.bias'");
    rewrite(fx, p, &(struct edit){.drop = {"classifier.bias"}});
    st = tunep_bert_load_hf(m, p, 0, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, p, "missing tensor 'classifier.bias'");
    rewrite(fx, p,
            &(struct edit){.reshape = "bert.encoder.layer.1.attention.self.query.weight",
                           .reshape_dims = {16, 32}});
    st = tunep_bert_load_hf(m, p, 0, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, p,
              "tensor 'bert.encoder.layer.1.attention.self.query.weight' has shape [16, 32], "
              "expected [32, 32]");
    rewrite(fx, p, &(struct edit){.reshape = "classifier.weight", .reshape_dims = {2, 32}});
    st = tunep_bert_load_hf(m, p, 0, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, p,
              "tensor 'classifier.weight' has shape [2, 32], expected [3, 32]");
    rewrite(fx, p,
            &(struct edit){.add = "bert.encoder.layer.2.attention.self.query.weight",
                           .add_dims = {32, 32}});
    st = tunep_bert_load_hf(m, p, 0, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, p,
              "unexpected tensor 'bert.encoder.layer.2.attention.self.query.weight'");
    rewrite(fx, p, &(struct edit){.add = "lm_head.weight", .add_dims = {50, 32}});
    st = tunep_bert_load_hf(m, p, 0, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, p, "unexpected tensor 'lm_head.weight'");
    rewrite(fx, p, &(struct edit){.add = "bert.embeddings.LayerNorm.gamma", .add_dims = {1, 32}});
    st = tunep_bert_load_hf(m, p, 0, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, p,
              "tensors 'bert.embeddings.LayerNorm.weight' and 'bert.embeddings.LayerNorm.gamma' "
              "are the same parameter");
    ck_assert(unchanged(m, snap));

    /* an integer tensor where a weight belongs */
    const char *q = tpath("int.safetensors");
    write_st(q,
             "{\"bert.embeddings.LayerNorm.bias\":{\"dtype\":\"I32\",\"shape\":[32],"
             "\"data_offsets\":[0,128]}}",
             strlen("{\"bert.embeddings.LayerNorm.bias\":{\"dtype\":\"I32\",\"shape\":[32],"
                    "\"data_offsets\":[0,128]}}"),
             128);
    st = tunep_bert_load_hf(m, q, 0, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, q,
              "tensor 'bert.embeddings.LayerNorm.bias' has dtype I32, expected F32, F16, BF16 or "
              "F64");

    /* folders: model.safetensors missing, with and without other formats */
    const char *dir = tpath("ckpt");
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    st = tunep_bert_load_hf(m, dir, 0, &err);
    CHECK_ERR(st, err, TUNE_ENOTFOUND, path, "cannot open: No such file or directory");
    char bin[4200];
    snprintf(bin, sizeof bin, "%s/pytorch_model.bin", dir);
    write_file(bin, "x", 1);
    st = tunep_bert_load_hf(m, dir, 0, &err);
    CHECK_ERR(st, err, TUNE_EUNSUPPORTED, path,
              "not found, and PyTorch pickles are not supported; convert the checkpoint to "
              "model.safetensors (pytorch_model.bin)");
    ck_assert(unchanged(m, snap));
    free(snap);

    tunep_bert_free(m);
    tunep_bert_free(init);
    tunep_bert_free(ref);
    tunep_cpu_backend_free(be);
    free(fx);
}
END_TEST

/* ---- a BertModel folder as sentence-transformers publishes one -------------- */

struct raw_tensor {
    char name[128];
    const char *dtype;
    int ndim;
    int64_t shape[2];
    void *data;
    size_t bytes;
};

static int raw_cmp(const void *a, const void *b)
{
    return strcmp(((const struct raw_tensor *)a)->name, ((const struct raw_tensor *)b)->name);
}

/*
 * Writes into dir the layout of all-MiniLM-L6-v2's folder at the fixture's
 * size: config.json of a "BertModel" with no labels and the extra keys such
 * configs carry; model.safetensors with the fixture's weights as F32 under
 * BertModel names (no "bert." prefix), the pooler, no classifier and no
 * pretraining heads, an I64 embeddings.position_ids buffer [1, P], the
 * "format": "pt" metadata and the tensors in name order (as the safetensors
 * library writes them); vocab.txt.
 */
static void write_base_model_folder(const char *dir)
{
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    char path[4200];
    static const char config[] =
        "{\n  \"_name_or_path\": \"nreimers/MiniLM-L6-H384-uncased\",\n"
        "  \"architectures\": [\n    \"BertModel\"\n  ],\n"
        "  \"attention_probs_dropout_prob\": 0.1,\n  \"gradient_checkpointing\": false,\n"
        "  \"hidden_act\": \"gelu\",\n  \"hidden_dropout_prob\": 0.1,\n  \"hidden_size\": 32,\n"
        "  \"initializer_range\": 0.02,\n  \"intermediate_size\": 64,\n"
        "  \"layer_norm_eps\": 1e-12,\n  \"max_position_embeddings\": 16,\n"
        "  \"model_type\": \"bert\",\n  \"num_attention_heads\": 2,\n"
        "  \"num_hidden_layers\": 2,\n  \"pad_token_id\": 0,\n"
        "  \"position_embedding_type\": \"absolute\",\n  \"transformers_version\": \"4.8.2\",\n"
        "  \"type_vocab_size\": 2,\n  \"use_cache\": true,\n  \"vocab_size\": 50\n}\n";
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_file(path, config, strlen(config));
    size_t n;
    char *src = fixture("vocab.txt");
    unsigned char *vocab = slurp(src, &n);
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    write_file(path, vocab, n);
    free(vocab);
    free(src);

    src = fixture("model.safetensors");
    tunep_st_file *f;
    ck_assert_int_eq(tunep_st_open(src, &f, NULL), TUNE_OK);
    struct raw_tensor ts[64];
    int nt = 0;
    for (size_t i = 0; i < tunep_st_count(f); i++) {
        const struct tunep_st_tensor *t = tunep_st_at(f, i);
        const char *name = strncmp(t->name, "bert.", 5) == 0 ? t->name + 5 : t->name;
        if (t->dtype == TUNEP_ST_I64 || strncmp(name, "cls.", 4) == 0 ||
            strncmp(name, "classifier.", 11) == 0)
            continue;
        ck_assert_int_lt(nt, 63);
        struct raw_tensor *r = &ts[nt++];
        snprintf(r->name, sizeof r->name, "%s", name);
        r->dtype = "F32";
        r->ndim = t->ndim;
        r->shape[0] = t->shape[0];
        r->shape[1] = t->ndim > 1 ? t->shape[1] : 0;
        r->bytes = t->count * sizeof(float);
        r->data = malloc(r->bytes);
        ck_assert_int_eq(tunep_st_read_f32(f, t, r->data, t->count, NULL), TUNE_OK);
    }
    tunep_st_close(f);
    free(src);
    struct raw_tensor *pos = &ts[nt++];
    snprintf(pos->name, sizeof pos->name, "embeddings.position_ids");
    pos->dtype = "I64";
    pos->ndim = 2;
    pos->shape[0] = 1;
    pos->shape[1] = 16;
    pos->bytes = 16 * sizeof(int64_t);
    int64_t *ids = malloc(pos->bytes);
    for (int i = 0; i < 16; i++)
        ids[i] = i;
    pos->data = ids;
    qsort(ts, (size_t)nt, sizeof *ts, raw_cmp);

    json_t *header = json_object();
    json_object_set_new(header, "__metadata__", json_pack("{s:s}", "format", "pt"));
    size_t offset = 0;
    for (int i = 0; i < nt; i++) {
        json_t *shape = json_array();
        for (int d = 0; d < ts[i].ndim; d++)
            json_array_append_new(shape, json_integer(ts[i].shape[d]));
        json_object_set_new(header, ts[i].name,
                            json_pack("{s:s,s:o,s:[I,I]}", "dtype", ts[i].dtype, "shape", shape,
                                      "data_offsets", (json_int_t)offset,
                                      (json_int_t)(offset + ts[i].bytes)));
        offset += ts[i].bytes;
    }
    char *text = json_dumps(header, JSON_COMPACT);
    json_decref(header);
    size_t hlen = strlen(text), padded = (hlen + 7) / 8 * 8;
    unsigned char *file = malloc(8 + padded + offset);
    for (int i = 0; i < 8; i++)
        file[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    memcpy(file + 8, text, hlen);
    memset(file + 8 + hlen, ' ', padded - hlen);
    unsigned char *at = file + 8 + padded;
    for (int i = 0; i < nt; i++) {
        memcpy(at, ts[i].data, ts[i].bytes);
        at += ts[i].bytes;
        free(ts[i].data);
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    write_file(path, file, 8 + padded + offset);
    free(file);
    free(text);
}

START_TEST(test_hf_base_model_folder)
{
    /* all-MiniLM-L6-v2's layout (BertModel names, a pooler, an I64
     * position_ids buffer, no labels in config.json): the shapes come from
     * config.json with 2 labels, every weight but the classifier is the
     * checkpoint's, the buffer is skipped and the missing classifier logged */
    const char *dir = tpath("base_model");
    write_base_model_folder(dir);
    struct tunep_bert_config cfg;
    tune_error err = {0};
    ck_assert_msg(tunep_bert_hf_config_load(dir, &cfg, &err) == TUNE_OK, "%s", err.text);
    ck_assert_int_eq(cfg.L, 2);
    ck_assert_int_eq(cfg.C, 32);
    ck_assert_int_eq(cfg.NH, 2);
    ck_assert_int_eq(cfg.I, 64);
    ck_assert_int_eq(cfg.P, 16);
    ck_assert_int_eq(cfg.V, 50);
    ck_assert_int_eq(cfg.TV, 2);
    ck_assert_int_eq(cfg.K, 2); /* BertConfig's default without labels */
    ck_assert(cfg.hidden_dropout == 0.1 && cfg.attn_dropout == 0.1 && cfg.ln_eps == 1e-12);

    struct tunep_backend *be = backend();
    struct tunep_bert *m = model_new(&cfg, be, 5), *init = model_new(&cfg, be, 5);
    char *fx = fixture(NULL);
    struct tunep_bert_config ref_cfg;
    ck_assert_int_eq(tunep_bert_hf_config_load(fx, &ref_cfg, &err), TUNE_OK);
    struct tunep_bert *ref = model_new(&ref_cfg, be, 5);
    ck_assert_int_eq(tunep_bert_load_hf(ref, fx, 0, &err), TUNE_OK);

    logbuf[0] = '\0';
    tune_set_log_callback(log_fn, TUNE_LOG_DEBUG, NULL);
    ck_assert_msg(tunep_bert_load_hf(m, dir, 2, &err) == TUNE_OK, "%s", err.text);
    tune_set_log_callback(NULL, TUNE_LOG_ERROR, NULL);
    char want[9000];
    snprintf(want, sizeof want,
             "%s/model.safetensors: no classifier tensors: the classifier keeps its random "
             "initialisation\n"
             "%s/model.safetensors: ignored 1 tensors that are not model weights\n",
             dir, dir);
    ck_assert_str_eq(logbuf, want);
    /* the pooler and everything else as in the fixture, the classifier as initialised */
    ck_assert_int_eq(tensors_differ(m, ref, TUNEP_BERT_ARENA_PARAMS, BERT_P_CLS_W, BERT_P_CLS_B),
                     0);
    ck_assert_int_eq(tensors_count_diff(m, init, TUNEP_BERT_ARENA_PARAMS), 41 - 2);
    float a[2 * 32], b[2 * 32];
    ck_assert_int_eq(tunep_bert_param_get(m, BERT_P_CLS_W, 0, a, 2 * 32, NULL), TUNE_OK);
    ck_assert_int_eq(tunep_bert_param_get(init, BERT_P_CLS_W, 0, b, 2 * 32, NULL), TUNE_OK);
    ck_assert(memcmp(a, b, sizeof a) == 0);

    tunep_bert_free(ref);
    tunep_bert_free(init);
    tunep_bert_free(m);
    tunep_cpu_backend_free(be);
    free(fx);
}
END_TEST

/* ---- trainer state ------------------------------------------------------------ */

START_TEST(test_state_roundtrip)
{
    struct tunep_bert_config cfg;
    tiny_config(&cfg);
    struct tunep_backend *be = backend();
    struct data d;
    make_data(&d, 42);
    tune_error err = {0};
    struct tunep_bert *a = model_new(&cfg, be, 11);
    train(a, &d, 0, 3, NULL);
    const char *p = tpath("state.safetensors");
    const char *meta = "{\"epoch\": 1, \"position\": 96, \"seed\": 18446744073709551615, "
                       "\"scheduler\": {\"step\": 3}, \"note\": \"caf\xc3\xa9\"}";
    ck_assert_msg(tunep_bert_state_save(a, p, meta, &err) == TUNE_OK, "%s", err.text);

    /* a differently initialised model becomes bit-identical */
    struct tunep_bert *b = model_new(&cfg, be, 99);
    ck_assert_int_eq(tensors_count_diff(a, b, TUNEP_BERT_ARENA_PARAMS), 41); /* a has trained */
    char *got_meta = NULL;
    ck_assert_msg(tunep_bert_state_load(b, p, &got_meta, &err) == TUNE_OK, "%s", err.text);
    ck_assert_str_eq(got_meta, meta);
    tune_free(got_meta);
    ck_assert_int_eq(tunep_bert_step_count(b), 3);
    ck_assert_int_eq(tensors_differ(a, b, TUNEP_BERT_ARENA_PARAMS, -1, -1), 0);
    ck_assert_int_eq(tensors_differ(a, b, TUNEP_BERT_ARENA_ADAM_M, -1, -1), 0);
    ck_assert_int_eq(tensors_differ(a, b, TUNEP_BERT_ARENA_ADAM_V, -1, -1), 0);
    /* the moments are really there (not both zero) */
    float v0[3];
    ck_assert_int_eq(
        tunep_bert_tensor_get(b, TUNEP_BERT_ARENA_ADAM_V, BERT_P_CLS_B, 0, v0, 3, NULL), TUNE_OK);
    ck_assert(v0[0] > 0.0f);

    /* training continues exactly as without the round trip */
    double la[3], lb[3];
    train(a, &d, 3, 3, la);
    train(b, &d, 3, 3, lb);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(la[i] == lb[i], "step %d: %.17g vs %.17g", 3 + i, la[i], lb[i]);
    ck_assert_int_eq(tensors_differ(a, b, TUNEP_BERT_ARENA_PARAMS, -1, -1), 0);
    ck_assert_int_eq(tunep_bert_step_count(b), 6);

    /* the file: 3 x 41 F32 tensors, metadata, and usable as an HF checkpoint */
    tunep_st_file *f;
    ck_assert_int_eq(tunep_st_open(p, &f, &err), TUNE_OK);
    ck_assert_uint_eq(tunep_st_count(f), 3 * (5 + 2 * 16 + 4));
    ck_assert_str_eq(tunep_st_meta(f, "format"), "tune.bert.state");
    ck_assert_str_eq(tunep_st_meta(f, "format_version"), "1");
    ck_assert_str_eq(tunep_st_meta(f, "step"), "3");
    ck_assert_str_eq(tunep_st_meta(f, "config"),
                     "{\"num_hidden_layers\":2,\"hidden_size\":32,\"num_attention_heads\":2,"
                     "\"intermediate_size\":64,\"max_position_embeddings\":16,\"vocab_size\":50,"
                     "\"type_vocab_size\":2,\"num_labels\":3,\"hidden_dropout_prob\":0.1,"
                     "\"attention_probs_dropout_prob\":0.1,\"layer_norm_eps\":1e-12,"
                     "\"hidden_act\":\"gelu\"}");
    ck_assert_ptr_nonnull(tunep_st_find(f, "adamw.m.bert.encoder.layer.1.output.dense.weight"));
    ck_assert_ptr_nonnull(tunep_st_find(f, "adamw.v.classifier.bias"));
    tunep_st_close(f);
    struct tunep_bert *c = model_new(&cfg, be, 7);
    ck_assert_msg(tunep_bert_load_hf(c, p, 3, &err) == TUNE_OK, "%s", err.text);
    /* b has trained on since the save; compare c with a fresh load instead */
    struct tunep_bert *e = model_new(&cfg, be, 8);
    ck_assert_int_eq(tunep_bert_state_load(e, p, NULL, &err), TUNE_OK);
    ck_assert_int_eq(tensors_differ(c, e, TUNEP_BERT_ARENA_PARAMS, -1, -1), 0);
    ck_assert_int_eq(tunep_bert_step_count(c), 0); /* weights only */

    /* no trainer metadata: NULL back */
    ck_assert_int_eq(tunep_bert_state_save(a, p, NULL, &err), TUNE_OK);
    got_meta = unchanged_text;
    ck_assert_int_eq(tunep_bert_state_load(e, p, &got_meta, &err), TUNE_OK);
    ck_assert_ptr_null(got_meta);
    ck_assert_int_eq(tunep_bert_step_count(e), 6);

    tunep_bert_free(a);
    tunep_bert_free(b);
    tunep_bert_free(c);
    tunep_bert_free(e);
    tunep_cpu_backend_free(be);
}
END_TEST

START_TEST(test_state_errors)
{
    struct tunep_bert_config cfg;
    tiny_config(&cfg);
    struct tunep_backend *be = backend();
    tune_error err = {0};
    struct tunep_bert *a = model_new(&cfg, be, 11);
    const char *p = tpath("state.safetensors");
    ck_assert_int_eq(tunep_bert_state_save(a, p, "{}", &err), TUNE_OK);
    float *snap = snapshot(a);
    char *meta = unchanged_text;

    struct tunep_bert_config other = cfg;
    other.I = 128;
    struct tunep_bert *o = model_new(&other, be, 1);
    tune_status st = tunep_bert_state_load(o, p, &meta, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, p,
              "config 'intermediate_size' is 64 in the checkpoint but 128 in the model");
    tunep_bert_free(o);

    char *fx = fixture("model.safetensors");
    st = tunep_bert_state_load(a, fx, &meta, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, fx,
              "not a tune BERT state file (metadata 'format' is not 'tune.bert.state')");
    free(fx);

    const char *q = tpath("edited.safetensors");
    rewrite(p, q, &(struct edit){.meta_key = "format_version", .meta_value = "2"});
    st = tunep_bert_state_load(a, q, &meta, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, q,
              "state format version '2' is not supported (this build reads 1)");
    rewrite(p, q, &(struct edit){.meta_key = "step", .meta_value = "-3"});
    st = tunep_bert_state_load(a, q, &meta, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, q, "metadata 'step' is not a non-negative integer");
    rewrite(p, q, &(struct edit){.meta_key = "config", .meta_value = "[]"});
    st = tunep_bert_state_load(a, q, &meta, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, q, "metadata 'config' is not a JSON object");
    rewrite(p, q, &(struct edit){.drop = {"adamw.v.classifier.bias"}});
    st = tunep_bert_state_load(a, q, &meta, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, q, "missing tensor 'adamw.v.classifier.bias'");
    rewrite(p, q, &(struct edit){.add = "adamw.u.classifier.bias", .add_dims = {1, 3}});
    st = tunep_bert_state_load(a, q, &meta, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, q, "unexpected tensor 'adamw.u.classifier.bias'");
    rewrite(
        p, q,
        &(struct edit){.reshape = "adamw.m.bert.pooler.dense.weight", .reshape_dims = {32, 16}});
    st = tunep_bert_state_load(a, q, &meta, &err);
    CHECK_ERR(st, err, TUNE_ECONFIG, q,
              "tensor 'adamw.m.bert.pooler.dense.weight' has shape [32, 16], expected [32, 32]");
    const char *nope = tpath("nope.safetensors");
    st = tunep_bert_state_load(a, nope, &meta, &err);
    CHECK_ERR(st, err, TUNE_ENOTFOUND, nope, "cannot open: No such file or directory");
    ck_assert(unchanged(a, snap));
    ck_assert_str_eq(meta, "unchanged");

    const char *bad = tpath("nodir/state.safetensors");
    st = tunep_bert_state_save(a, bad, "{}", &err);
    ck_assert_int_eq(st, TUNE_ENOTFOUND);
    st = tunep_bert_state_save(a, p, "\xff", &err);
    ck_assert_int_eq(st, TUNE_EINVAL);
    ck_assert_str_eq(err.text, "safetensors: metadata 'trainer' is not valid UTF-8");
    free(snap);
    tunep_bert_free(a);
    tunep_cpu_backend_free(be);
}
END_TEST

/* ---- allocation failures -------------------------------------------------------- */

START_TEST(test_chaos)
{
    /* Every allocation of each entry point fails in turn: TUNE_ENOMEM, no
     * crash, no leak (ASan); the model and outputs stay as they were. */
    struct tunep_bert_config cfg;
    tiny_config(&cfg);
    struct tunep_backend *be = backend();
    struct tunep_bert *m = model_new(&cfg, be, 3);
    char *dir = fixture(NULL);
    const char *p = tpath("state.safetensors");
    float *snap = snapshot(m);
    for (int what = 0; what < 4; what++) {
        int n;
        for (n = 0; n < 10000; n++) {
            tune_error err = {0};
            struct tunep_bert_config got = {.L = -1};
            char *meta = unchanged_text;
            tune_test_alloc_fail_after(n);
            tune_status st = what == 0   ? tunep_bert_state_save(m, p, "{\"a\": 1}", &err)
                             : what == 1 ? tunep_bert_state_load(m, p, &meta, &err)
                             : what == 2 ? tunep_bert_load_hf(m, dir, 0, &err)
                                         : tunep_bert_hf_config_load(dir, &got, &err);
            tune_test_alloc_reset();
            if (st == TUNE_OK) {
                if (what == 1)
                    tune_free(meta);
                break;
            }
            ck_assert_msg(st == TUNE_ENOMEM, "entry %d, allocation %d: %d %s", what, n, (int)st,
                          err.text);
            ck_assert(what != 3 || got.L == -1);
            ck_assert(what != 1 || strcmp(meta, "unchanged") == 0);
            ck_assert(what == 0 || unchanged(m, snap));
        }
        ck_assert_int_gt(n, 0);
        ck_assert_int_lt(n, 10000);
        if (what == 1) { /* the state of this model: loading it changes nothing */
            ck_assert(unchanged(m, snap));
        }
        if (what == 2) { /* weights now the fixture's */
            free(snap);
            snap = snapshot(m);
        }
    }
    free(snap);
    free(dir);
    tunep_bert_free(m);
    tunep_cpu_backend_free(be);
}
END_TEST

static Suite *bert_io_suite(void)
{
    Suite *s = suite_create("bert_io");
    TCase *tc = tcase_create("io");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_st_malformed);
    tcase_add_test(tc, test_st_fixture_and_dtypes);
    tcase_add_test(tc, test_st_writer);
    tcase_add_test(tc, test_param_shapes);
    tcase_add_test(tc, test_hf_config);
    tcase_add_test(tc, test_hf_logits);
    tcase_add_test(tc, test_hf_variants);
    tcase_add_test(tc, test_hf_base_model_folder);
    tcase_add_test(tc, test_state_roundtrip);
    tcase_add_test(tc, test_state_errors);
    tcase_add_test(tc, test_chaos);
    suite_add_tcase(s, tc);
    return s;
}

TUNE_CHECK_MAIN(bert_io_suite)
