/*
 * fuzz_safetensors.c - libFuzzer harness for the safetensors reader
 * (models/bert/safetensors.c) and the checkpoint loaders on top of it
 * (models/bert/bert_io.c). The input is a whole .safetensors file:
 *  - tunep_st_open_mem() reads it in place; every tensor it hands out is
 *    then looked up, bounds-checked against the input and converted;
 *  - through an in-memory file, tunep_st_open() must agree with it, and
 *    tunep_bert_load_hf() and tunep_bert_state_load() try it on a tiny model
 *    (the dimensions below), so name mapping, shape checks and the copy run
 *    on whatever the reader accepts.
 *
 * Seeds: with TUNE_FUZZ_WRITE_SEEDS=DIR, initialisation also saves the tiny
 * model's trainer state as DIR/state.safetensors (which is a Hugging Face
 * checkpoint too); fuzz/gen_safetensors_seeds.py derives the other seeds of
 * fuzz/corpus/safetensors from it.
 */
#include "fuzz_util.h"

#include "models/bert/bert.h"
#include "models/bert/bert_io.h"
#include "models/bert/safetensors.h"
#include "models/cpu/cpu_backend.h"

static struct tunep_backend *backend;
static struct tunep_bert *model;
static struct fuzz_file file = FUZZ_FILE_INIT;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* As small as a valid BERT gets, so that seeds stay a few KiB. */
    struct tunep_bert_config cfg;
    tunep_bert_config_default(&cfg);
    cfg.L = 1;
    cfg.C = 4;
    cfg.NH = 2;
    cfg.I = 8;
    cfg.P = 8;
    cfg.V = 10;
    cfg.TV = 2;
    cfg.K = 2;
    tune_error err = {0};
    if (tunep_cpu_backend_new(1, &backend, &err) != TUNE_OK ||
        tunep_bert_new(&cfg, 1, 8, backend, &model, &err) != TUNE_OK ||
        tunep_bert_init_weights(model, 1, &err) != TUNE_OK) {
        fprintf(stderr, "fuzz_safetensors: tiny model: %s\n", err.text);
        abort();
    }
    const char *dir = getenv("TUNE_FUZZ_WRITE_SEEDS");
    if (dir && *dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/state.safetensors", dir);
        if (tunep_bert_state_save(model, path, "{\"epoch\": 1, \"seed\": 7}", &err) != TUNE_OK) {
            fprintf(stderr, "fuzz_safetensors: %s: %s\n", path, err.text);
            abort();
        }
    }
    return 0;
}

static int is_float_dtype(enum tunep_st_dtype d)
{
    return d == TUNEP_ST_F32 || d == TUNEP_ST_F16 || d == TUNEP_ST_BF16 || d == TUNEP_ST_F64;
}

static void check_file(const tunep_st_file *f, const uint8_t *data, size_t size)
{
    size_t n = tunep_st_count(f);
    FUZZ_CHECK(n <= TUNEP_ST_MAX_TENSORS);
    FUZZ_CHECK(tunep_st_source(f) != NULL);
    size_t covered = 0;
    for (size_t i = 0; i < n; i++) {
        const struct tunep_st_tensor *t = tunep_st_at(f, i);
        FUZZ_CHECK(t != NULL && t->name != NULL);
        FUZZ_CHECK(strlen(t->name) <= TUNEP_ST_MAX_NAME);
        FUZZ_CHECK(tunep_st_find(f, t->name) == t);
        FUZZ_CHECK((unsigned)t->dtype < TUNEP_ST_DTYPE_COUNT);
        FUZZ_CHECK(t->ndim >= 0 && t->ndim <= TUNEP_ST_MAX_DIMS);
        size_t count = 1;
        for (int d = 0; d < t->ndim; d++) {
            FUZZ_CHECK(t->shape[d] >= 0);
            count *= (size_t)t->shape[d];
        }
        FUZZ_CHECK(count == t->count);
        FUZZ_CHECK(t->begin <= t->end);
        FUZZ_CHECK(t->end - t->begin == t->count * tunep_st_dtype_size(t->dtype));
        covered += t->end - t->begin;
        /* The bytes handed out lie inside the input. */
        const unsigned char *p = tunep_st_data(f, t);
        FUZZ_CHECK(p >= data && p <= data + size);
        FUZZ_CHECK(t->end - t->begin <= (size_t)(data + size - p));

        if (is_float_dtype(t->dtype)) {
            float *f32 = malloc(t->count * sizeof *f32 + 1);
            double *f64 = malloc(t->count * sizeof *f64 + 1);
            FUZZ_CHECK(f32 && f64);
            tune_error err = {0};
            FUZZ_CHECK(tunep_st_read_f32(f, t, f32, t->count, &err) == TUNE_OK);
            FUZZ_CHECK(tunep_st_read_f64(f, t, f64, t->count, &err) == TUNE_OK);
            tune_status st = tunep_st_read_f32(f, t, f32, t->count + 1, &err);
            fuzz_check_error(st, &err);
            free(f64);
            free(f32);
        } else {
            float x;
            tune_error err = {0};
            tune_status st = tunep_st_read_f32(f, t, &x, t->count, &err);
            fuzz_check_error(st, &err);
        }
    }
    /* Tensors cover the data area without gaps or overlaps, so their sizes add up to it. */
    FUZZ_CHECK(covered <= size);

    size_t m = tunep_st_meta_count(f);
    for (size_t i = 0; i < m; i++) {
        const char *key, *value;
        tunep_st_meta_at(f, i, &key, &value);
        FUZZ_CHECK(key && value);
        FUZZ_CHECK(tunep_st_meta(f, key) == value);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tunep_st_file *f = NULL;
    tune_error err = {0};
    size_t count = 0;
    tune_status st = tunep_st_open_mem(data, size, "<fuzz>", &f, &err);
    if (st != TUNE_OK) {
        fuzz_check_error(st, &err);
        FUZZ_CHECK(f == NULL);
    } else {
        check_file(f, data, size);
        count = tunep_st_count(f);
        tunep_st_close(f);
    }

    /* The same bytes as a file: the same verdict, then the model loaders. */
    const char *path = fuzz_file_set(&file, data, size);
    tunep_st_file *g = NULL;
    tune_error ferr = {0};
    tune_status fst = tunep_st_open(path, &g, &ferr);
    FUZZ_CHECK(fst == st);
    if (fst != TUNE_OK) {
        fuzz_check_error(fst, &ferr);
        return 0;
    }
    FUZZ_CHECK(tunep_st_count(g) == count);
    tunep_st_close(g);

    tune_status lst = tunep_bert_load_hf(model, path, 0, &err);
    if (lst != TUNE_OK)
        fuzz_check_error(lst, &err);
    char *meta = NULL;
    lst = tunep_bert_state_load(model, path, &meta, &err);
    if (lst != TUNE_OK) {
        fuzz_check_error(lst, &err);
        FUZZ_CHECK(meta == NULL);
    }
    tune_free(meta);
    return 0;
}
