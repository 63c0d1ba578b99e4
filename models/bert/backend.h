/*
 * backend.h - what a compute backend provides to the BERT model.
 *
 * Two tables, following ggml's buffer/backend split and dav1d's DSP table:
 * struct tunep_backend moves bytes (alloc, free, upload, download, memset,
 * sync); struct tunep_kernels (kernels_tmpl.h) does the math. A backend
 * fills the float table; the CPU backend also fills the double one, which
 * exists only for finite-difference gradient checks. A NULL kernel means
 * "unsupported" and model creation refuses such a backend up front
 * (TUNE_EUNSUPPORTED), ggml's supports_op decided once.
 *
 * (This header sits in models/bert/ because the kernel set is BERT's; the
 * style guide's models/backend.h is the same file one folder up.)
 */
#ifndef TUNE_BERT_BACKEND_H
#define TUNE_BERT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "tune.h"

/* struct tunep_kernels (float), then the same struct in double under the
 * name bert_f64.h gives it, struct tunep_kernels_f64. */
#define TUNEP_HREAL float
#include "models/bert/kernels_tmpl.h"
#undef TUNEP_HREAL
#define TUNEP_HREAL double
#include "models/bert/bert_f64.h"
#include "models/bert/kernels_tmpl.h"
#include "models/bert/bert_f64_end.h"
#undef TUNEP_HREAL

/* Every member of struct tunep_kernels, for "is it all there" checks. */
#define TUNEP_KERNEL_LIST(X)                                                                       \
    X(embed_fwd)                                                                                   \
    X(embed_bwd)                                                                                   \
    X(layernorm_fwd)                                                                               \
    X(layernorm_bwd)                                                                               \
    X(matmul_fwd)                                                                                  \
    X(matmul_bwd)                                                                                  \
    X(attention_fwd)                                                                               \
    X(attention_bwd)                                                                               \
    X(gelu_fwd)                                                                                    \
    X(gelu_bwd)                                                                                    \
    X(softmax_xent_fwd)                                                                            \
    X(softmax_xent_bwd)                                                                            \
    X(pooler_fwd)                                                                                  \
    X(pooler_bwd)                                                                                  \
    X(dropout_fwd)                                                                                 \
    X(dropout_bwd)                                                                                 \
    X(adamw_step)                                                                                  \
    X(grad_sumsq)

#define TUNEP_KERNEL_COUNT_ROW(name) +1
enum { TUNEP_KERNEL_COUNT = 0 TUNEP_KERNEL_LIST(TUNEP_KERNEL_COUNT_ROW) };
/* The list above and the struct must not drift apart. */
_Static_assert(sizeof(struct tunep_kernels) == TUNEP_KERNEL_COUNT * sizeof(void (*)(void)),
               "TUNEP_KERNEL_LIST does not match struct tunep_kernels");

struct tunep_backend {
    const char *name;                    /* "cpu", "cuda" */
    void *ctx;                           /* handed to every member below and to every kernel */
    const struct tunep_kernels *kernels; /* float; never NULL */
    const struct tunep_kernels_f64 *kernels_f64; /* double; NULL where unsupported */

    /* Backend memory of `size` bytes, aligned to at least 64 bytes. */
    tune_status (*alloc)(void *ctx, size_t size, void **ret_ptr, tune_error *err);
    /* Releases memory from alloc; NULL is a no-op. */
    void (*free)(void *ctx, void *ptr);
    /* Host -> backend and backend -> host copies of `size` bytes. */
    tune_status (*upload)(void *ctx, void *dst, const void *src, size_t size, tune_error *err);
    tune_status (*download)(void *ctx, void *dst, const void *src, size_t size, tune_error *err);
    /* Sets `size` bytes of backend memory to zero. */
    tune_status (*memzero)(void *ctx, void *dst, size_t size, tune_error *err);
    /* Waits until all queued work is done. */
    tune_status (*sync)(void *ctx, tune_error *err);
};

#endif /* TUNE_BERT_BACKEND_H */
