/*
 * safetensors.c - the safetensors checkpoint format: a validating reader
 * (the file is mapped read-only) and an atomic F32 writer.
 *
 * The header is JSON and is parsed and built with jansson. The style guide
 * keeps <jansson.h> to the config loaders; the JSON header of a binary
 * format is the other legitimate place, and no json_t leaves this file.
 *
 * Invariants: once a file is open, every tensor's [begin, end) lies inside
 * the data area, end - begin = count * dtype size (no overflow), and the
 * tensors tile the data area without overlap or gap; every later access
 * relies on this and checks nothing again. Reference: the format description
 * and validation rules of huggingface/safetensors (README, src/tensor.rs);
 * IEEE 754 binary16; bfloat16 = the upper 16 bits of a binary32.
 */
#include "models/bert/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "base/file_io.h"

/* ---- dtypes and little-endian access ------------------------------------- */

static const struct {
    const char *name;
    size_t size;
} dtypes[TUNEP_ST_DTYPE_COUNT] = {
    [TUNEP_ST_BOOL] = {"BOOL", 1},       [TUNEP_ST_U8] = {"U8", 1},
    [TUNEP_ST_I8] = {"I8", 1},           [TUNEP_ST_F8_E4M3] = {"F8_E4M3", 1},
    [TUNEP_ST_F8_E5M2] = {"F8_E5M2", 1}, [TUNEP_ST_I16] = {"I16", 2},
    [TUNEP_ST_U16] = {"U16", 2},         [TUNEP_ST_F16] = {"F16", 2},
    [TUNEP_ST_BF16] = {"BF16", 2},       [TUNEP_ST_I32] = {"I32", 4},
    [TUNEP_ST_U32] = {"U32", 4},         [TUNEP_ST_F32] = {"F32", 4},
    [TUNEP_ST_F64] = {"F64", 8},         [TUNEP_ST_I64] = {"I64", 8},
    [TUNEP_ST_U64] = {"U64", 8},
};

const char *tunep_st_dtype_name(enum tunep_st_dtype dtype)
{
    return (unsigned)dtype < TUNEP_ST_DTYPE_COUNT ? dtypes[dtype].name : "?";
}

size_t tunep_st_dtype_size(enum tunep_st_dtype dtype)
{
    return (unsigned)dtype < TUNEP_ST_DTYPE_COUNT ? dtypes[dtype].size : 0;
}

static uint16_t le16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float tunep_st_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f) /* infinity, or NaN with its payload */
        return f32_from_bits(sign | 0x7f800000u | mant << 13);
    if (exp != 0) /* normal: rebias 15 -> 127 */
        return f32_from_bits(sign | (exp + 112u) << 23 | mant << 13);
    /* zero or subnormal: mant * 2^-24, exact in float */
    float v = (float)mant * 0x1p-24f;
    return sign ? -v : v;
}

float tunep_st_bf16_to_f32(uint16_t h)
{
    return f32_from_bits((uint32_t)h << 16);
}

/* ---- the open file -------------------------------------------------------- */

struct tunep_st_file {
    char *source;
    const unsigned char *bytes; /* the whole file */
    size_t size;
    void *map;                 /* mmap'd region (size bytes), NULL for open_mem and empty files */
    const unsigned char *data; /* the data area, after the header */
    size_t data_size;
    size_t n;
    struct tunep_st_tensor *tensors; /* header order */
    char **names;                    /* owned copies, tensors[i].name == names[i] */
    size_t *by_name;                 /* tensor indexes sorted by name */
    size_t n_meta;
    char **meta_keys, **meta_values;
};

void tunep_st_close(tunep_st_file *f)
{
    if (!f)
        return;
    if (f->map)
        munmap(f->map, f->size);
    for (size_t i = 0; f->names && i < f->n; i++)
        tunep_free(f->names[i]);
    for (size_t i = 0; i < f->n_meta; i++) {
        tunep_free(f->meta_keys ? f->meta_keys[i] : NULL);
        tunep_free(f->meta_values ? f->meta_values[i] : NULL);
    }
    tunep_free(f->names);
    tunep_free(f->tensors);
    tunep_free(f->by_name);
    tunep_free(f->meta_keys);
    tunep_free(f->meta_values);
    tunep_free(f->source);
    tunep_free(f);
}

#define FAIL(code, ...) tunep_error_set_at(err, (code), f->source, 0, 0, __VA_ARGS__)

static tune_status parse_meta(tunep_st_file *f, json_t *meta, tune_error *err)
{
    if (!json_is_object(meta))
        return FAIL(TUNE_EIO, "'__metadata__' must be an object mapping strings to strings");
    size_t n = json_object_size(meta);
    f->meta_keys = tunep_calloc(n ? n : 1, sizeof *f->meta_keys);
    f->meta_values = tunep_calloc(n ? n : 1, sizeof *f->meta_values);
    if (!f->meta_keys || !f->meta_values)
        return FAIL(TUNE_ENOMEM, "out of memory");
    const char *key;
    json_t *v; /* borrowed */
    json_object_foreach(meta, key, v) {
        if (!json_is_string(v))
            return FAIL(TUNE_EIO, "'__metadata__' must be an object mapping strings to strings");
        size_t i = f->n_meta++;
        f->meta_keys[i] = tunep_strdup(key);
        f->meta_values[i] = tunep_strndup(json_string_value(v), json_string_length(v));
        if (!f->meta_keys[i] || !f->meta_values[i])
            return FAIL(TUNE_ENOMEM, "out of memory");
    }
    return TUNE_OK;
}

/* Reads a JSON integer in [0, max] into *ret; 0 on success. */
static int get_uint(const json_t *v, uint64_t max, uint64_t *ret)
{
    if (!json_is_integer(v))
        return -1;
    json_int_t x = json_integer_value(v);
    if (x < 0 || (uint64_t)x > max)
        return -1;
    *ret = (uint64_t)x;
    return 0;
}

static void format_shape(char *buf, size_t size, const int64_t *shape, int ndim)
{
    size_t len = 0;
    len += (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && len < size; d++)
        len +=
            (size_t)snprintf(buf + len, size - len, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (len < size)
        snprintf(buf + len, size - len, "]");
}

static tune_status parse_tensor(tunep_st_file *f, size_t i, const char *name, json_t *v,
                                tune_error *err)
{
    struct tunep_st_tensor *t = &f->tensors[i];
    size_t name_len = strlen(name);
    if (name_len == 0 || name_len > TUNEP_ST_MAX_NAME)
        return FAIL(TUNE_EIO, "tensor name of %zu bytes is outside [1, %d]", name_len,
                    TUNEP_ST_MAX_NAME);
    if (!(f->names[i] = tunep_strdup(name)))
        return FAIL(TUNE_ENOMEM, "out of memory");
    t->name = f->names[i];
    if (!json_is_object(v))
        return FAIL(TUNE_EIO, "tensor '%s': expected an object with dtype, shape and data_offsets",
                    name);
    const char *key;
    json_t *member; /* borrowed */
    json_object_foreach(v, key, member) {
        if (strcmp(key, "dtype") != 0 && strcmp(key, "shape") != 0 &&
            strcmp(key, "data_offsets") != 0)
            return FAIL(TUNE_EIO, "tensor '%s': unknown key '%s'", name, key);
    }

    const json_t *dt = json_object_get(v, "dtype"); /* borrowed */
    if (!json_is_string(dt))
        return FAIL(TUNE_EIO, "tensor '%s': 'dtype' must be a string", name);
    const char *dts = json_string_value(dt);
    int found = 0;
    for (int d = 0; d < TUNEP_ST_DTYPE_COUNT && !found; d++) {
        if (strcmp(dts, dtypes[d].name) == 0) {
            t->dtype = (enum tunep_st_dtype)d;
            found = 1;
        }
    }
    if (!found)
        return FAIL(TUNE_EIO, "tensor '%s': unknown dtype '%s'", name, dts);

    const json_t *shape = json_object_get(v, "shape"); /* borrowed */
    if (!json_is_array(shape) || json_array_size(shape) > TUNEP_ST_MAX_DIMS)
        return FAIL(TUNE_EIO,
                    "tensor '%s': 'shape' must be an array of at most %d non-negative "
                    "integers",
                    name, TUNEP_ST_MAX_DIMS);
    size_t esize = dtypes[t->dtype].size;
    size_t count = 1;
    t->ndim = (int)json_array_size(shape);
    for (int d = 0; d < t->ndim; d++) {
        uint64_t dim;
        if (get_uint(json_array_get(shape, (size_t)d), INT64_MAX, &dim) != 0)
            return FAIL(TUNE_EIO,
                        "tensor '%s': 'shape' must be an array of at most %d "
                        "non-negative integers",
                        name, TUNEP_ST_MAX_DIMS);
        t->shape[d] = (int64_t)dim;
        if (dim != 0 && (dim > SIZE_MAX || count > SIZE_MAX / esize / (size_t)dim))
            return FAIL(TUNE_EIO, "tensor '%s': shape is too large", name);
        count *= (size_t)dim;
    }
    t->count = count;

    const json_t *offs = json_object_get(v, "data_offsets"); /* borrowed */
    uint64_t begin, end;
    if (!json_is_array(offs) || json_array_size(offs) != 2 ||
        get_uint(json_array_get(offs, 0), SIZE_MAX, &begin) != 0 ||
        get_uint(json_array_get(offs, 1), SIZE_MAX, &end) != 0 || begin > end)
        return FAIL(TUNE_EIO,
                    "tensor '%s': 'data_offsets' must be [begin, end] with 0 <= begin <= end",
                    name);
    t->begin = (size_t)begin;
    t->end = (size_t)end;
    if (t->end - t->begin != count * esize) {
        char s[160];
        format_shape(s, sizeof s, t->shape, t->ndim);
        return FAIL(TUNE_EIO,
                    "tensor '%s': data_offsets [%zu, %zu] hold %zu bytes, but shape %s "
                    "of %s needs %zu",
                    name, t->begin, t->end, t->end - t->begin, s, dtypes[t->dtype].name,
                    count * esize);
    }
    return TUNE_OK;
}

static int cmp_offset(const void *a, const void *b)
{
    const struct tunep_st_tensor *x = *(const struct tunep_st_tensor *const *)a;
    const struct tunep_st_tensor *y = *(const struct tunep_st_tensor *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Checks that the tensors tile the data area (the reference reader's rule). */
static tune_status check_layout(tunep_st_file *f, tune_error *err)
{
    if (f->n == 0) {
        if (f->data_size != 0)
            return FAIL(TUNE_EIO, "bytes [0, %zu) of the data area belong to no tensor",
                        f->data_size);
        return TUNE_OK;
    }
    const struct tunep_st_tensor **s = tunep_malloc(f->n * sizeof *s);
    if (!s)
        return FAIL(TUNE_ENOMEM, "out of memory");
    for (size_t i = 0; i < f->n; i++)
        s[i] = &f->tensors[i];
    qsort(s, f->n, sizeof *s, cmp_offset);
    int contiguous = s[0]->begin == 0;
    for (size_t i = 1; i < f->n; i++)
        contiguous = contiguous && s[i]->begin == s[i - 1]->end;
    size_t max_end = s[f->n - 1]->end;
    tune_status st = TUNE_OK;
    if (max_end > f->data_size) {
        if (contiguous) {
            st = FAIL(TUNE_EIO,
                      "truncated file: the header describes %zu bytes of tensor data, "
                      "only %zu follow it",
                      max_end, f->data_size);
        } else {
            for (size_t i = 0; i < f->n && !st; i++) {
                const struct tunep_st_tensor *t = &f->tensors[i];
                if (t->end > f->data_size)
                    st = FAIL(TUNE_EIO,
                              "tensor '%s': data_offsets [%zu, %zu] are outside the "
                              "data area of %zu bytes",
                              t->name, t->begin, t->end, f->data_size);
            }
        }
        goto out;
    }
    for (size_t i = 1; i < f->n; i++) {
        if (s[i]->begin < s[i - 1]->end) {
            st = FAIL(TUNE_EIO,
                      "tensors '%s' and '%s' overlap: data_offsets [%zu, %zu] and "
                      "[%zu, %zu]",
                      s[i - 1]->name, s[i]->name, s[i - 1]->begin, s[i - 1]->end, s[i]->begin,
                      s[i]->end);
            goto out;
        }
    }
    size_t pos = 0;
    for (size_t i = 0; i <= f->n; i++) {
        size_t next = i < f->n ? s[i]->begin : f->data_size;
        if (next > pos) {
            st = FAIL(TUNE_EIO, "bytes [%zu, %zu) of the data area belong to no tensor", pos, next);
            goto out;
        }
        if (i < f->n)
            pos = s[i]->end;
    }
out:
    tunep_free(s);
    return st;
}

static int cmp_name(const void *a, const void *b)
{
    const struct tunep_st_tensor *x = *(const struct tunep_st_tensor *const *)a;
    const struct tunep_st_tensor *y = *(const struct tunep_st_tensor *const *)b;
    return strcmp(x->name, y->name);
}

static tune_status build_index(tunep_st_file *f, tune_error *err)
{
    size_t n = f->n ? f->n : 1;
    const struct tunep_st_tensor **s = tunep_malloc(n * sizeof *s);
    f->by_name = tunep_malloc(n * sizeof *f->by_name);
    if (!s || !f->by_name) {
        tunep_free(s);
        return FAIL(TUNE_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < f->n; i++)
        s[i] = &f->tensors[i];
    qsort(s, f->n, sizeof *s, cmp_name);
    for (size_t i = 0; i < f->n; i++)
        f->by_name[i] = (size_t)(s[i] - f->tensors);
    tunep_free(s);
    return TUNE_OK;
}

static tune_status parse(tunep_st_file *f, tune_error *err)
{
    if (f->size < 8)
        return FAIL(TUNE_EIO, "truncated file: %zu bytes, less than the 8-byte header length",
                    f->size);
    uint64_t hlen = le64(f->bytes);
    if (hlen > TUNEP_ST_MAX_HEADER)
        return FAIL(TUNE_EIO, "header length %llu exceeds the limit of %u bytes",
                    (unsigned long long)hlen, TUNEP_ST_MAX_HEADER);
    if (hlen > f->size - 8)
        return FAIL(TUNE_EIO, "header length %llu is beyond the end of the file (%zu bytes)",
                    (unsigned long long)hlen, f->size);
    const char *hdr = (const char *)f->bytes + 8;
    f->data = f->bytes + 8 + hlen;
    f->data_size = f->size - 8 - (size_t)hlen;
    if (hlen == 0 || hdr[0] != '{')
        return FAIL(TUNE_EIO, "header is not a JSON object");

    json_error_t jerr;
    json_t *root = json_loadb(hdr, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr); /* new ref */
    if (!root)
        return FAIL(TUNE_EIO, "header is not valid JSON: %s (header byte %d)", jerr.text,
                    jerr.position);
    tune_status st = TUNE_OK;
    if (!json_is_object(root)) {
        st = FAIL(TUNE_EIO, "header is not a JSON object");
        goto out;
    }
    json_t *meta = json_object_get(root, "__metadata__"); /* borrowed */
    size_t n = json_object_size(root) - (meta ? 1 : 0);
    if (n > TUNEP_ST_MAX_TENSORS) {
        st = FAIL(TUNE_EIO, "header declares %zu tensors, more than the limit of %d", n,
                  TUNEP_ST_MAX_TENSORS);
        goto out;
    }
    if (meta && (st = parse_meta(f, meta, err)) != TUNE_OK)
        goto out;
    f->tensors = tunep_calloc(n ? n : 1, sizeof *f->tensors);
    f->names = tunep_calloc(n ? n : 1, sizeof *f->names);
    if (!f->tensors || !f->names) {
        st = FAIL(TUNE_ENOMEM, "out of memory");
        goto out;
    }
    const char *key;
    json_t *v; /* borrowed */
    json_object_foreach(root, key, v) {
        if (v == meta)
            continue;
        st = parse_tensor(f, f->n, key, v, err);
        f->n++; /* counts the name parse_tensor may have copied, for tunep_st_close() */
        if (st != TUNE_OK)
            goto out;
    }
    if ((st = check_layout(f, err)) != TUNE_OK)
        goto out;
    st = build_index(f, err);
out:
    json_decref(root);
    return st;
}

#undef FAIL

static tune_status file_new(const char *source, tunep_st_file **ret, tune_error *err)
{
    tunep_st_file *f = tunep_calloc(1, sizeof *f);
    if (f)
        f->source = tunep_strdup(source);
    if (!f || !f->source) {
        tunep_free(f);
        return tunep_error_set_at(err, TUNE_ENOMEM, source, 0, 0, "out of memory");
    }
    *ret = f;
    return TUNE_OK;
}

tune_status tunep_st_open_mem(const void *bytes, size_t size, const char *source,
                              tunep_st_file **ret_file, tune_error *err)
{
    if ((!bytes && size) || !ret_file)
        return tunep_error_set(err, TUNE_EINVAL, "safetensors: NULL argument");
    tunep_st_file *f = NULL;
    tune_status st = file_new(source ? source : "<memory>", &f, err);
    if (st != TUNE_OK)
        return st;
    f->bytes = bytes;
    f->size = size;
    if ((st = parse(f, err)) != TUNE_OK) {
        tunep_st_close(f);
        return st;
    }
    *ret_file = f;
    return TUNE_OK;
}

tune_status tunep_st_open(const char *path, tunep_st_file **ret_file, tune_error *err)
{
    if (!path || !ret_file)
        return tunep_error_set(err, TUNE_EINVAL, "safetensors: NULL argument");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tunep_error_set_at(err, errno == ENOENT ? TUNE_ENOTFOUND : TUNE_EIO, path, 0, 0,
                                  "cannot open: %s", strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "not a regular file");
    }
    if ((uintmax_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "file is too large to map");
    }
    tunep_st_file *f = NULL;
    tune_status st = file_new(path, &f, err);
    if (st != TUNE_OK) {
        close(fd);
        return st;
    }
    f->size = (size_t)sb.st_size;
    static const unsigned char empty[1];
    f->bytes = empty;
    if (f->size > 0) {
        void *map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            st = tunep_error_set_at(err, TUNE_EIO, path, 0, 0, "cannot map: %s", strerror(errno));
            close(fd);
            tunep_st_close(f);
            return st;
        }
        f->map = map;
        f->bytes = map;
    }
    close(fd);
    if ((st = parse(f, err)) != TUNE_OK) {
        tunep_st_close(f);
        return st;
    }
    *ret_file = f;
    return TUNE_OK;
}

const char *tunep_st_source(const tunep_st_file *f)
{
    return f->source;
}

size_t tunep_st_count(const tunep_st_file *f)
{
    return f->n;
}

const struct tunep_st_tensor *tunep_st_at(const tunep_st_file *f, size_t i)
{
    return i < f->n ? &f->tensors[i] : NULL;
}

const struct tunep_st_tensor *tunep_st_find(const tunep_st_file *f, const char *name)
{
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct tunep_st_tensor *t = &f->tensors[f->by_name[mid]];
        int c = strcmp(name, t->name);
        if (c == 0)
            return t;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const char *tunep_st_meta(const tunep_st_file *f, const char *key)
{
    for (size_t i = 0; i < f->n_meta; i++) {
        if (strcmp(f->meta_keys[i], key) == 0)
            return f->meta_values[i];
    }
    return NULL;
}

size_t tunep_st_meta_count(const tunep_st_file *f)
{
    return f->n_meta;
}

void tunep_st_meta_at(const tunep_st_file *f, size_t i, const char **ret_key,
                      const char **ret_value)
{
    *ret_key = i < f->n_meta ? f->meta_keys[i] : NULL;
    *ret_value = i < f->n_meta ? f->meta_values[i] : NULL;
}

const unsigned char *tunep_st_data(const tunep_st_file *f, const struct tunep_st_tensor *t)
{
    return f->data + t->begin;
}

static tune_status check_read(const tunep_st_file *f, const struct tunep_st_tensor *t,
                              const void *dst, size_t n, tune_error *err)
{
    if (!f || !t || (!dst && n))
        return tunep_error_set(err, TUNE_EINVAL, "safetensors: NULL argument");
    if (n != t->count)
        return tunep_error_set_at(err, TUNE_EINVAL, f->source, 0, 0,
                                  "tensor '%s' has %zu elements, not %zu", t->name, t->count, n);
    if (t->dtype != TUNEP_ST_F32 && t->dtype != TUNEP_ST_F16 && t->dtype != TUNEP_ST_BF16 &&
        t->dtype != TUNEP_ST_F64)
        return tunep_error_set_at(err, TUNE_ECONFIG, f->source, 0, 0,
                                  "tensor '%s' has dtype %s, expected F32, F16, BF16 or F64",
                                  t->name, dtypes[t->dtype].name);
    return TUNE_OK;
}

/* Element i of tensor t as a double (exact for all four float dtypes). */
static double value_at(const unsigned char *p, enum tunep_st_dtype dtype, size_t i)
{
    switch (dtype) {
        case TUNEP_ST_F16: return (double)tunep_st_f16_to_f32(le16(p + 2 * i));
        case TUNEP_ST_BF16: return (double)tunep_st_bf16_to_f32(le16(p + 2 * i));
        case TUNEP_ST_F64: {
            uint64_t u = le64(p + 8 * i);
            double d;
            memcpy(&d, &u, sizeof d);
            return d;
        }
        default: return (double)f32_from_bits(le32(p + 4 * i));
    }
}

tune_status tunep_st_read_f32(const tunep_st_file *f, const struct tunep_st_tensor *t, float *dst,
                              size_t n, tune_error *err)
{
    tune_status st = check_read(f, t, dst, n, err);
    if (st != TUNE_OK)
        return st;
    const unsigned char *p = f->data + t->begin;
    switch (t->dtype) {
        case TUNEP_ST_F32:
            for (size_t i = 0; i < n; i++)
                dst[i] = f32_from_bits(le32(p + 4 * i));
            break;
        case TUNEP_ST_F16:
            for (size_t i = 0; i < n; i++)
                dst[i] = tunep_st_f16_to_f32(le16(p + 2 * i));
            break;
        case TUNEP_ST_BF16:
            for (size_t i = 0; i < n; i++)
                dst[i] = tunep_st_bf16_to_f32(le16(p + 2 * i));
            break;
        default:
            for (size_t i = 0; i < n; i++)
                dst[i] = (float)value_at(p, t->dtype, i);
            break;
    }
    return TUNE_OK;
}

tune_status tunep_st_read_f64(const tunep_st_file *f, const struct tunep_st_tensor *t, double *dst,
                              size_t n, tune_error *err)
{
    tune_status st = check_read(f, t, dst, n, err);
    if (st != TUNE_OK)
        return st;
    const unsigned char *p = f->data + t->begin;
    for (size_t i = 0; i < n; i++)
        dst[i] = value_at(p, t->dtype, i);
    return TUNE_OK;
}

/* ---- writer --------------------------------------------------------------- */

struct st_entry {
    char *name;
    int ndim;
    int64_t shape[TUNEP_ST_MAX_DIMS];
    size_t count;
    tunep_st_fill_fn fill; /* or data */
    void *ctx;
    const float *data;
};

struct tunep_st_writer {
    struct st_entry *e;
    size_t n, cap;
    char **meta_keys, **meta_values;
    size_t n_meta, meta_cap;
};

tune_status tunep_st_writer_new(tunep_st_writer **ret_writer, tune_error *err)
{
    if (!ret_writer)
        return tunep_error_set(err, TUNE_EINVAL, "safetensors: NULL argument");
    tunep_st_writer *w = tunep_calloc(1, sizeof *w);
    if (!w)
        return tunep_error_set(err, TUNE_ENOMEM, "safetensors: out of memory");
    *ret_writer = w;
    return TUNE_OK;
}

void tunep_st_writer_free(tunep_st_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++)
        tunep_free(w->e[i].name);
    for (size_t i = 0; i < w->n_meta; i++) {
        tunep_free(w->meta_keys[i]);
        tunep_free(w->meta_values[i]);
    }
    tunep_free(w->e);
    tunep_free(w->meta_keys);
    tunep_free(w->meta_values);
    tunep_free(w);
}

/* Well-formed UTF-8 (RFC 3629: no overlongs, surrogates or values past U+10FFFF). */
static int utf8_valid(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        unsigned c = *s;
        int n = c < 0x80                 ? 0
                : c >= 0xc2 && c <= 0xdf ? 1
                : (c & 0xf0) == 0xe0     ? 2
                : c >= 0xf0 && c <= 0xf4 ? 3
                                         : -1;
        if (n < 0)
            return 0;
        unsigned lo = 0x80, hi = 0xbf;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
        else if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
        s++;
        for (int k = 0; k < n; k++, s++) {
            if (*s < (k == 0 ? lo : 0x80) || *s > (k == 0 ? hi : 0xbf))
                return 0;
        }
    }
    return 1;
}

tune_status tunep_st_writer_add(tunep_st_writer *w, const char *name, int ndim,
                                const int64_t *shape, tunep_st_fill_fn fill, void *ctx,
                                tune_error *err)
{
    if (!w || !name || (!shape && ndim > 0))
        return tunep_error_set(err, TUNE_EINVAL, "safetensors: NULL argument");
    size_t len = strlen(name);
    if (len == 0 || len > TUNEP_ST_MAX_NAME || strcmp(name, "__metadata__") == 0 ||
        !utf8_valid(name))
        return tunep_error_set(err, TUNE_EINVAL, "safetensors: invalid tensor name '%s'", name);
    if (ndim < 0 || ndim > TUNEP_ST_MAX_DIMS)
        return tunep_error_set(err, TUNE_EINVAL, "safetensors: tensor '%s' has %d dimensions", name,
                               ndim);
    if (w->n >= TUNEP_ST_MAX_TENSORS)
        return tunep_error_set(err, TUNE_EINVAL, "safetensors: more than %d tensors",
                               TUNEP_ST_MAX_TENSORS);
    size_t count = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0 || (shape[d] > 0 && ((uint64_t)shape[d] > SIZE_MAX ||
                                              count > SIZE_MAX / sizeof(float) / (size_t)shape[d])))
            return tunep_error_set(err, TUNE_EINVAL, "safetensors: tensor '%s' has a bad shape",
                                   name);
        count *= (size_t)shape[d];
    }
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        struct st_entry *e = tunep_realloc(w->e, w->cap * sizeof *e, cap * sizeof *e);
        if (!e)
            return tunep_error_set(err, TUNE_ENOMEM, "safetensors: out of memory");
        w->e = e;
        w->cap = cap;
    }
    struct st_entry *e = &w->e[w->n];
    memset(e, 0, sizeof *e);
    if (!(e->name = tunep_strdup(name)))
        return tunep_error_set(err, TUNE_ENOMEM, "safetensors: out of memory");
    e->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        e->shape[d] = shape[d];
    e->count = count;
    e->fill = fill;
    e->ctx = ctx;
    w->n++;
    return TUNE_OK;
}

tune_status tunep_st_writer_add_f32(tunep_st_writer *w, const char *name, int ndim,
                                    const int64_t *shape, const float *data, tune_error *err)
{
    tune_status st = tunep_st_writer_add(w, name, ndim, shape, NULL, NULL, err);
    if (st == TUNE_OK)
        w->e[w->n - 1].data = data;
    return st;
}

tune_status tunep_st_writer_meta(tunep_st_writer *w, const char *key, const char *value,
                                 tune_error *err)
{
    if (!w || !key || !value)
        return tunep_error_set(err, TUNE_EINVAL, "safetensors: NULL argument");
    if (!*key || strlen(key) > TUNEP_ST_MAX_NAME || !utf8_valid(key))
        return tunep_error_set(err, TUNE_EINVAL, "safetensors: invalid metadata key '%s'", key);
    if (!utf8_valid(value))
        return tunep_error_set(err, TUNE_EINVAL, "safetensors: metadata '%s' is not valid UTF-8",
                               key);
    for (size_t i = 0; i < w->n_meta; i++) {
        if (strcmp(w->meta_keys[i], key) == 0)
            return tunep_error_set(err, TUNE_EINVAL, "safetensors: duplicate metadata key '%s'",
                                   key);
    }
    if (w->n_meta == w->meta_cap) {
        size_t cap = w->meta_cap ? 2 * w->meta_cap : 8;
        char **k = tunep_realloc(w->meta_keys, w->meta_cap * sizeof *k, cap * sizeof *k);
        if (!k)
            return tunep_error_set(err, TUNE_ENOMEM, "safetensors: out of memory");
        w->meta_keys = k;
        char **v = tunep_realloc(w->meta_values, w->meta_cap * sizeof *v, cap * sizeof *v);
        if (!v)
            return tunep_error_set(err, TUNE_ENOMEM, "safetensors: out of memory");
        w->meta_values = v;
        w->meta_cap = cap;
    }
    char *k = tunep_strdup(key), *v = tunep_strdup(value);
    if (!k || !v) {
        tunep_free(k);
        tunep_free(v);
        return tunep_error_set(err, TUNE_ENOMEM, "safetensors: out of memory");
    }
    w->meta_keys[w->n_meta] = k;
    w->meta_values[w->n_meta] = v;
    w->n_meta++;
    return TUNE_OK;
}

/* The header text (jansson's malloc; release with free()), or NULL on OOM. */
static char *build_header(const tunep_st_writer *w)
{
    json_t *root = json_object(); /* new ref */
    int bad = !root;
    if (!bad && w->n_meta) {
        json_t *meta = json_object(); /* new ref, stolen below */
        for (size_t i = 0; meta && i < w->n_meta && !bad; i++)
            bad = json_object_set_new(meta, w->meta_keys[i], json_string(w->meta_values[i]));
        bad = json_object_set_new(root, "__metadata__", meta) || bad;
    }
    size_t off = 0;
    for (size_t i = 0; i < w->n && !bad; i++) {
        const struct st_entry *e = &w->e[i];
        json_t *t = json_object(), *shape = json_array(), *offs = json_array(); /* new refs */
        for (int d = 0; shape && d < e->ndim && !bad; d++)
            bad = json_array_append_new(shape, json_integer((json_int_t)e->shape[d]));
        size_t bytes = e->count * sizeof(float);
        bad = json_array_append_new(offs, json_integer((json_int_t)off)) || bad;
        bad = json_array_append_new(offs, json_integer((json_int_t)(off + bytes))) || bad;
        bad = json_object_set_new(t, "dtype", json_string("F32")) || bad;
        bad = json_object_set_new(t, "shape", shape) || bad;
        bad = json_object_set_new(t, "data_offsets", offs) || bad;
        bad = json_object_set_new(root, e->name, t) || bad;
        off += bytes;
    }
    char *text = bad ? NULL : json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return text;
}

static int cmp_entry_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static tune_status check_unique(const tunep_st_writer *w, tune_error *err)
{
    if (w->n < 2)
        return TUNE_OK;
    const char **names = tunep_malloc(w->n * sizeof *names);
    if (!names)
        return tunep_error_set(err, TUNE_ENOMEM, "safetensors: out of memory");
    for (size_t i = 0; i < w->n; i++)
        names[i] = w->e[i].name;
    qsort(names, w->n, sizeof *names, cmp_entry_name);
    tune_status st = TUNE_OK;
    for (size_t i = 1; i < w->n && !st; i++) {
        if (strcmp(names[i - 1], names[i]) == 0)
            st = tunep_error_set(err, TUNE_EINVAL, "safetensors: duplicate tensor '%s'", names[i]);
    }
    tunep_free(names);
    return st;
}

enum { CHUNK_FLOATS = 16384 };

tune_status tunep_st_writer_write(tunep_st_writer *w, const char *path, tune_error *err)
{
    if (!w || !path)
        return tunep_error_set(err, TUNE_EINVAL, "safetensors: NULL argument");
    tune_status st = check_unique(w, err);
    if (st != TUNE_OK)
        return st;
    size_t largest = 1;
    for (size_t i = 0; i < w->n; i++)
        largest = w->e[i].count > largest ? w->e[i].count : largest;

    struct tunep_atomic_file out = {0};
    char *header = build_header(w);
    float *vals = tunep_malloc(largest * sizeof *vals);
    unsigned char *bytes = tunep_malloc(CHUNK_FLOATS * 4);
    if (!header || !vals || !bytes) {
        st = tunep_error_set_at(err, TUNE_ENOMEM, path, 0, 0, "out of memory");
        goto out;
    }
    if ((st = tunep_atomic_open(&out, path, err)) != TUNE_OK) {
        /* A missing folder is "not found", as a missing file is for the reader. */
        if (out.error == ENOENT)
            st = tunep_error_set_at(err, TUNE_ENOTFOUND, path, 0, 0, "cannot create: %s",
                                    strerror(ENOENT));
        goto out;
    }

    size_t hlen = strlen(header), padded = (hlen + 7) & ~(size_t)7;
    unsigned char lenbuf[8];
    for (int b = 0; b < 8; b++)
        lenbuf[b] = (unsigned char)((uint64_t)padded >> (8 * b));
    static const char spaces[] = "       "; /* the padding is at most 7 bytes */
    if ((st = tunep_atomic_write(&out, lenbuf, 8, err)) != TUNE_OK ||
        (st = tunep_atomic_write(&out, header, hlen, err)) != TUNE_OK ||
        (st = tunep_atomic_write(&out, spaces, padded - hlen, err)) != TUNE_OK)
        goto out;
    for (size_t i = 0; i < w->n; i++) {
        const struct st_entry *e = &w->e[i];
        if (e->data) {
            if (e->count)
                memcpy(vals, e->data, e->count * sizeof *vals);
        } else if (e->fill) {
            if ((st = e->fill(e->ctx, vals, e->count, err)) != TUNE_OK)
                goto out;
        } else {
            memset(vals, 0, e->count * sizeof *vals);
        }
        for (size_t at = 0; at < e->count; at += CHUNK_FLOATS) {
            size_t k = e->count - at < CHUNK_FLOATS ? e->count - at : CHUNK_FLOATS;
            for (size_t j = 0; j < k; j++) {
                uint32_t u;
                memcpy(&u, &vals[at + j], sizeof u);
                for (int b = 0; b < 4; b++)
                    bytes[4 * j + (size_t)b] = (unsigned char)(u >> (8 * b));
            }
            if ((st = tunep_atomic_write(&out, bytes, 4 * k, err)) != TUNE_OK)
                goto out;
        }
    }
    st = tunep_atomic_commit(&out, err);
out:
    tunep_atomic_abort(&out); /* removes the temporary file unless committed */
    free(header);             /* jansson's allocation */
    tunep_free(vals);
    tunep_free(bytes);
    return st;
}
