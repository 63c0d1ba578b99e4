/*
 * safetensors.h - reading and writing the safetensors checkpoint format
 * (Hugging Face, https://huggingface.co/docs/safetensors): an 8-byte
 * little-endian header length N, N bytes of JSON header
 * {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {"key": "value", ...}}, then the raw little-endian data,
 * offsets counted from the end of the header.
 *
 * Reading validates the whole header before anything is handed out, so a
 * successfully opened file never makes a caller read outside the data area.
 * Error codes: TUNE_ENOTFOUND (no such file), TUNE_EIO (the file cannot be
 * read or is not a valid safetensors file), TUNE_ECONFIG (a valid file whose
 * content does not fit the request, e.g. an integer tensor read as float),
 * TUNE_ENOMEM, TUNE_EINVAL (programming errors). err->source is the file.
 */
#ifndef TUNE_BERT_SAFETENSORS_H
#define TUNE_BERT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "tune.h"

/* Limits on what a file may declare. The header limit is the
 * safetensors library's own (100 MB); bert-large with AdamW moments needs
 * about 1,200 tensors, far below the tensor limit. */
#define TUNEP_ST_MAX_HEADER  100000000u
#define TUNEP_ST_MAX_TENSORS 65536
#define TUNEP_ST_MAX_DIMS    8
#define TUNEP_ST_MAX_NAME    1024 /* bytes in a tensor name or metadata key */

/* The dtypes of the format; F32, F16, BF16 and F64 can be read as float. */
enum tunep_st_dtype {
    TUNEP_ST_BOOL,
    TUNEP_ST_U8,
    TUNEP_ST_I8,
    TUNEP_ST_F8_E4M3,
    TUNEP_ST_F8_E5M2,
    TUNEP_ST_I16,
    TUNEP_ST_U16,
    TUNEP_ST_F16,
    TUNEP_ST_BF16,
    TUNEP_ST_I32,
    TUNEP_ST_U32,
    TUNEP_ST_F32,
    TUNEP_ST_F64,
    TUNEP_ST_I64,
    TUNEP_ST_U64,
    TUNEP_ST_DTYPE_COUNT
};

/* "F32", ...; "?" for an invalid value. Static string. */
const char *tunep_st_dtype_name(enum tunep_st_dtype dtype);
/* Bytes per element; 0 for an invalid value. */
size_t tunep_st_dtype_size(enum tunep_st_dtype dtype);

/* One tensor of an open file; borrowed, valid until the file is closed. */
struct tunep_st_tensor {
    const char *name;
    enum tunep_st_dtype dtype;
    int ndim; /* 0 for a scalar */
    int64_t shape[TUNEP_ST_MAX_DIMS];
    size_t count;      /* elements: product of the shape (1 for a scalar) */
    size_t begin, end; /* byte offsets into the data area */
};

typedef struct tunep_st_file tunep_st_file;

/*
 * Maps the file at path (read-only) and validates it: header length within
 * the file and TUNEP_ST_MAX_HEADER, the header a JSON object without
 * duplicate keys, each tensor with a known dtype, a shape of at most
 * TUNEP_ST_MAX_DIMS non-negative dimensions and data_offsets [begin, end]
 * holding exactly product(shape) * dtype size bytes inside the data area,
 * tensors not overlapping and covering the data area without gaps (as the
 * reference implementation requires), metadata a map of strings to strings.
 * *ret_file is untouched on failure.
 */
tune_status tunep_st_open(const char *path, tunep_st_file **ret_file, tune_error *err);
/* The same for a file already in memory; bytes is borrowed and must outlive the
 * returned object. source names it in messages. */
tune_status tunep_st_open_mem(const void *bytes, size_t size, const char *source,
                              tunep_st_file **ret_file, tune_error *err);
/* Unmaps and frees; NULL is a no-op. */
void tunep_st_close(tunep_st_file *file);

/* The path (or source) given at open; borrowed. */
const char *tunep_st_source(const tunep_st_file *file);
/* Tensors, in the order of the header; i < tunep_st_count(). */
size_t tunep_st_count(const tunep_st_file *file);
const struct tunep_st_tensor *tunep_st_at(const tunep_st_file *file, size_t i);
/* The tensor called name, or NULL (binary search; O(log n)). */
const struct tunep_st_tensor *tunep_st_find(const tunep_st_file *file, const char *name);
/* Metadata value of key, or NULL; borrowed. */
const char *tunep_st_meta(const tunep_st_file *file, const char *key);
/* Metadata entries in header order; i < tunep_st_meta_count(). */
size_t tunep_st_meta_count(const tunep_st_file *file);
void tunep_st_meta_at(const tunep_st_file *file, size_t i, const char **ret_key,
                      const char **ret_value);
/* The raw little-endian bytes of tensor t (t->end - t->begin of them); borrowed. */
const unsigned char *tunep_st_data(const tunep_st_file *file, const struct tunep_st_tensor *t);

/*
 * Converts tensor t (F32, F16, BF16 or F64; exactly, but for F64 -> float
 * rounding) into dst, which holds n == t->count values. TUNE_ECONFIG for
 * another dtype, TUNE_EINVAL when n is wrong.
 */
tune_status tunep_st_read_f32(const tunep_st_file *file, const struct tunep_st_tensor *t,
                              float *dst, size_t n, tune_error *err);
tune_status tunep_st_read_f64(const tunep_st_file *file, const struct tunep_st_tensor *t,
                              double *dst, size_t n, tune_error *err);

/* IEEE half and bfloat16 bit patterns to float (exact, subnormals and NaN kept). */
float tunep_st_f16_to_f32(uint16_t h);
float tunep_st_bf16_to_f32(uint16_t h);

/* ---- writing (F32 only) --------------------------------------------------- */

typedef struct tunep_st_writer tunep_st_writer;

/* Fills dst with the n values of one tensor when the file is written. */
typedef tune_status (*tunep_st_fill_fn)(void *ctx, float *dst, size_t n, tune_error *err);

tune_status tunep_st_writer_new(tunep_st_writer **ret_writer, tune_error *err);
/* NULL is a no-op. */
void tunep_st_writer_free(tunep_st_writer *w);
/*
 * Adds an F32 tensor (name copied; unique, 1..TUNEP_ST_MAX_NAME bytes, not
 * "__metadata__") whose values fill(ctx, ...) provides during
 * tunep_st_writer_write(); ctx is borrowed until then. The data is produced
 * one tensor at a time, so a checkpoint never needs a second host copy of
 * the model.
 */
tune_status tunep_st_writer_add(tunep_st_writer *w, const char *name, int ndim,
                                const int64_t *shape, tunep_st_fill_fn fill, void *ctx,
                                tune_error *err);
/* The same with the values in host memory, borrowed until the write. */
tune_status tunep_st_writer_add_f32(tunep_st_writer *w, const char *name, int ndim,
                                    const int64_t *shape, const float *data, tune_error *err);
/* Adds a "__metadata__" entry (both copied; key unique; value valid UTF-8). */
tune_status tunep_st_writer_meta(tunep_st_writer *w, const char *key, const char *value,
                                 tune_error *err);
/*
 * Writes everything to "<path>.tmp", fsyncs it, renames it over path and
 * fsyncs the folder, so path holds either the old or the complete new file
 * even after a crash. The header is padded with spaces to a multiple of 8
 * bytes (8-byte aligned data, as the reference writer does). On failure the
 * temporary file is removed and path is untouched. The writer can be reused.
 */
tune_status tunep_st_writer_write(tunep_st_writer *w, const char *path, tune_error *err);

#endif /* TUNE_BERT_SAFETENSORS_H */
