/*
 * bert.h - the one description of BertForSequenceClassification.
 *
 * The tensor tables below are the single source of truth: the parameter and
 * activation arenas, the pointer views, the Hugging Face checkpoint names,
 * weight decay and initialisation all come from them, so adding a tensor is
 * one row. The forward/backward orchestration (bert.c) is written
 * once against struct tunep_kernels and compiled for float and double.
 *
 * Model (Devlin et al. 2019; Hugging Face modeling_bert.py): word + position
 * + token-type embeddings, LayerNorm, dropout; L post-LN encoder layers
 * (self-attention with additive padding mask, attention-probability dropout,
 * output projection, dropout, residual, LayerNorm; FFN up, exact GELU, down,
 * dropout, residual, LayerNorm); tanh pooler on [CLS], dropout, classifier,
 * mean cross-entropy.
 */
#ifndef TUNE_BERT_H
#define TUNE_BERT_H

#include <stddef.h>
#include <stdint.h>

#include "tune.h"
#include "models/bert/backend.h"

/* ---- configuration ------------------------------------------------------- */

struct tunep_bert_config {
    int L;                 /* encoder layers */
    int C;                 /* hidden size */
    int NH;                /* attention heads; divides C */
    int I;                 /* FFN intermediate size */
    int P;                 /* max positions (position table rows) */
    int V;                 /* vocabulary size */
    int TV;                /* token-type vocabulary size (2 in BERT) */
    int K;                 /* labels */
    double hidden_dropout; /* hidden_dropout_prob, in [0, 1) */
    double attn_dropout;   /* attention_probs_dropout_prob, in [0, 1) */
    double ln_eps;         /* layer_norm_eps (1e-12 in BERT) */
};

/* Limits on every size; they also keep all size_t products of
 * the layout far from overflow (the largest, B*NH*T*T*L, stays below 2^52). */
#define TUNEP_BERT_MAX_L  256
#define TUNEP_BERT_MAX_C  16384
#define TUNEP_BERT_MAX_NH 256
#define TUNEP_BERT_MAX_I  65536
#define TUNEP_BERT_MAX_P  4096
#define TUNEP_BERT_MAX_V  (1 << 24)
#define TUNEP_BERT_MAX_TV 16
#define TUNEP_BERT_MAX_K  65536
#define TUNEP_BERT_MAX_B  4096

/* bert-base-uncased shapes (Hugging Face BertConfig defaults), K = 2. */
void tunep_bert_config_default(struct tunep_bert_config *cfg);
/* TUNE_OK, or TUNE_ECONFIG naming the first field out of range. */
tune_status tunep_bert_config_check(const struct tunep_bert_config *cfg, tune_error *err);

/* ---- parameter table ----------------------------------------------------- */

enum bert_init { BERT_INIT_ZEROS, BERT_INIT_ONES, BERT_INIT_NORMAL };

/*
 * One row per parameter tensor: id, field name, shape in config symbols
 * (BERT_MAT(rows, cols): Linear weights (out, in) and embeddings (rows, C),
 * as in Hugging Face checkpoints; BERT_VEC(n): vectors), per-layer (1) or not,
 * AdamW weight decay (HF's no_decay = biases and LayerNorm weights),
 * initialisation (HF: Linear and Embedding ~ N(0, 0.02), here truncated at
 * 2 sd; LayerNorm 1/0; biases 0), and the Hugging Face checkpoint name
 * (BERT_LAYER: "%d" = layer). Arena order is table order, each per-layer
 * tensor holding all L layers, except that the rows of a stack (BERT_STACKS
 * below) interleave layer by layer.
 *
 * Used as a value, a shape is the element count per layer. A row macro that
 * needs the dimensions pastes BERT_DIMS_ onto the shape argument itself
 * (BERT_DIMS_##shape, which must appear in the row macro's own body, where
 * the argument is not yet expanded), giving "ndim, rows, cols".
 */
#define BERT_LAYER               "bert.encoder.layer.%d."
#define BERT_MAT(r, c)           ((r) * (c))
#define BERT_VEC(n)              (n)
#define BERT_DIMS_BERT_MAT(r, c) 2, (r), (c)
#define BERT_DIMS_BERT_VEC(n)    1, (n), 1
/* clang-format off */
/*  id         field     shape            layered decay init  Hugging Face name */
#define BERT_PARAMS(X)                                                                             \
    X(WORD_EMB, word_emb, BERT_MAT(V, C),  0, 1, NORMAL, "bert.embeddings.word_embeddings.weight") \
    X(POS_EMB,  pos_emb,  BERT_MAT(P, C),  0, 1, NORMAL,                                           \
      "bert.embeddings.position_embeddings.weight")                                                \
    X(TYPE_EMB, type_emb, BERT_MAT(TV, C), 0, 1, NORMAL,                                           \
      "bert.embeddings.token_type_embeddings.weight")                                              \
    X(EMB_LN_W, emb_ln_w, BERT_VEC(C),     0, 0, ONES,   "bert.embeddings.LayerNorm.weight")       \
    X(EMB_LN_B, emb_ln_b, BERT_VEC(C),     0, 0, ZEROS,  "bert.embeddings.LayerNorm.bias")         \
    X(Q_W,      q_w,      BERT_MAT(C, C),  1, 1, NORMAL, BERT_LAYER "attention.self.query.weight") \
    X(Q_B,      q_b,      BERT_VEC(C),     1, 0, ZEROS,  BERT_LAYER "attention.self.query.bias")   \
    X(K_W,      k_w,      BERT_MAT(C, C),  1, 1, NORMAL, BERT_LAYER "attention.self.key.weight")   \
    X(K_B,      k_b,      BERT_VEC(C),     1, 0, ZEROS,  BERT_LAYER "attention.self.key.bias")     \
    X(V_W,      v_w,      BERT_MAT(C, C),  1, 1, NORMAL, BERT_LAYER "attention.self.value.weight") \
    X(V_B,      v_b,      BERT_VEC(C),     1, 0, ZEROS,  BERT_LAYER "attention.self.value.bias")   \
    X(ATT_O_W,  att_o_w,  BERT_MAT(C, C),  1, 1, NORMAL,                                           \
      BERT_LAYER "attention.output.dense.weight")                                                  \
    X(ATT_O_B,  att_o_b,  BERT_VEC(C),     1, 0, ZEROS,  BERT_LAYER "attention.output.dense.bias") \
    X(ATT_LN_W, att_ln_w, BERT_VEC(C),     1, 0, ONES,                                             \
      BERT_LAYER "attention.output.LayerNorm.weight")                                              \
    X(ATT_LN_B, att_ln_b, BERT_VEC(C),     1, 0, ZEROS,                                            \
      BERT_LAYER "attention.output.LayerNorm.bias")                                                \
    X(FC_W,     fc_w,     BERT_MAT(I, C),  1, 1, NORMAL, BERT_LAYER "intermediate.dense.weight")   \
    X(FC_B,     fc_b,     BERT_VEC(I),     1, 0, ZEROS,  BERT_LAYER "intermediate.dense.bias")     \
    X(FC_O_W,   fc_o_w,   BERT_MAT(C, I),  1, 1, NORMAL, BERT_LAYER "output.dense.weight")         \
    X(FC_O_B,   fc_o_b,   BERT_VEC(C),     1, 0, ZEROS,  BERT_LAYER "output.dense.bias")           \
    X(OUT_LN_W, out_ln_w, BERT_VEC(C),     1, 0, ONES,   BERT_LAYER "output.LayerNorm.weight")     \
    X(OUT_LN_B, out_ln_b, BERT_VEC(C),     1, 0, ZEROS,  BERT_LAYER "output.LayerNorm.bias")       \
    X(POOL_W,   pool_w,   BERT_MAT(C, C),  0, 1, NORMAL, "bert.pooler.dense.weight")               \
    X(POOL_B,   pool_b,   BERT_VEC(C),     0, 0, ZEROS,  "bert.pooler.dense.bias")                 \
    X(CLS_W,    cls_w,    BERT_MAT(K, C),  0, 1, NORMAL, "classifier.weight")                      \
    X(CLS_B,    cls_b,    BERT_VEC(K),     0, 0, ZEROS,  "classifier.bias")
/* clang-format on */

#define BERT_PARAM_ENUM_ROW(id, field, shape, layered, decay, init, name) BERT_P_##id,
enum bert_param { BERT_PARAMS(BERT_PARAM_ENUM_ROW) BERT_PARAM_COUNT };

/*
 * Per-layer rows stacked into one matrix per layer: layer l of each row
 * lies right after layer l of the row before it in the stack, so one
 * layer's query, key and value projections are one (3C, C) weight and one
 * 3C bias, and the model computes them with one GEMM. The rows keep
 * everything else of their own (checkpoint names and shapes,
 * initialisation, the tensor accessors); only their arena position
 * changes. A stack takes the arena position of its first row, which must
 * come first in table order; all its rows share layered and decay (AdamW
 * updates a stack as one range). Rows of equal width, stacked along dim 0.
 */
#define BERT_STACKS(X)                                                                             \
    X(Q_W, K_W, V_W)                                                                               \
    X(Q_B, K_B, V_B)

/* The first row of id's stack; id itself when id is not stacked. */
enum bert_param tunep_bert_param_stack(enum bert_param id);

/* The table's config-independent columns, per parameter; the shape depends
 * on the config: see tunep_bert_param_shape(). */
struct tunep_bert_param_info {
    const char *name; /* Hugging Face name, "%d" for the layer where layered */
    const char *field;
    int layered, decay;
    enum bert_init init;
};
extern const struct tunep_bert_param_info tunep_bert_param_info[BERT_PARAM_COUNT];

/* Writes the Hugging Face name of (id, layer) into buf; layer ignored when not layered. */
void tunep_bert_param_name(enum bert_param id, int layer, char *buf, size_t size);

/*
 * The shape of one layer of parameter id under cfg, as in Hugging Face
 * checkpoints (Linear weights (out, in), embeddings (rows, C), vectors (n)):
 * writes ndim values into dims and returns ndim (1 or 2); 0 for an invalid id.
 */
int tunep_bert_param_shape(const struct tunep_bert_config *cfg, enum bert_param id,
                           int64_t dims[2]);

/* The four arenas that hold one value per parameter, for the tensor
 * accessors (tunep_bert_tensor_get/set) and checkpoints. */
enum tunep_bert_arena {
    TUNEP_BERT_ARENA_PARAMS,
    TUNEP_BERT_ARENA_GRADS,
    TUNEP_BERT_ARENA_ADAM_M, /* AdamW first moment */
    TUNEP_BERT_ARENA_ADAM_V, /* AdamW second moment */
    TUNEP_BERT_ARENA_COUNT
};

/* ---- activation table ---------------------------------------------------- */

/*
 * One row per activation: id, field, elements per layer in (B, T, C, NH, I, K),
 * per-layer, stored in the forward pass (act), gradient buffer (grad: 0 none,
 * 1 one per layer like the activation, 2 a single layer's worth reused by
 * every layer, because it only lives inside one layer's backward). Only
 * OUT_LN's gradient crosses layers (layer l's input gradient is layer l-1's
 * output gradient); sharing the others keeps the backward's working set in
 * cache and the grad-acts arena small (bert-small at 32x128: about 250
 * instead of 680 MB).
 */
/* clang-format off */
#define BERT_ACTS(X)                                                                               \
    X(EMB,       emb,       B * T * C,       0, 1, 1) /* word + position + type */                 \
    X(EMB_MEAN,  emb_mean,  B * T,           0, 1, 0)                                              \
    X(EMB_RSTD,  emb_rstd,  B * T,           0, 1, 0)                                              \
    X(EMB_LN,    emb_ln,    B * T * C,       0, 1, 1)                                              \
    X(EMB_DROP,  emb_drop,  B * T * C,       0, 1, 1) /* input of layer 0 */                       \
    X(QKV,       qkv,       B * T * 3 * C,   1, 1, 2) /* query | key | value per row */          \
    X(PREATT,    preatt,    B * NH * T * T,  1, 0, 2) /* scaled scores: gradient only */           \
    X(ATT,       att,       B * NH * T * T,  1, 1, 2) /* probabilities */                          \
    X(ATT_DROP,  att_drop,  B * NH * T * T,  1, 1, 2) /* probabilities after dropout */            \
    X(ATT_CTX,   att_ctx,   B * T * C,       1, 1, 2) /* heads merged */                           \
    X(ATT_PROJ,  att_proj,  B * T * C,       1, 1, 2)                                              \
    X(ATT_RES,   att_res,   B * T * C,       1, 1, 2) /* dropout(att_proj) + layer input */        \
    X(ATT_MEAN,  att_mean,  B * T,           1, 1, 0)                                              \
    X(ATT_RSTD,  att_rstd,  B * T,           1, 1, 0)                                              \
    X(ATT_LN,    att_ln,    B * T * C,       1, 1, 2)                                              \
    X(FC,        fc,        B * T * I,       1, 1, 2)                                              \
    X(FC_GELU,   fc_gelu,   B * T * I,       1, 1, 2)                                              \
    X(FC_PROJ,   fc_proj,   B * T * C,       1, 1, 2)                                              \
    X(FC_RES,    fc_res,    B * T * C,       1, 1, 2) /* dropout(fc_proj) + att_ln */              \
    X(OUT_MEAN,  out_mean,  B * T,           1, 1, 0)                                              \
    X(OUT_RSTD,  out_rstd,  B * T,           1, 1, 0)                                              \
    X(OUT_LN,    out_ln,    B * T * C,       1, 1, 1) /* layer output */                           \
    X(POOL_PRE,  pool_pre,  B * C,           0, 1, 1) /* pooler pre-activation */                  \
    X(POOL,      pool,      B * C,           0, 1, 1)                                              \
    X(POOL_DROP, pool_drop, B * C,           0, 1, 1)                                              \
    X(LOGITS,    logits,    B * K,           0, 1, 1)                                              \
    X(PROBS,     probs,     B * K,           0, 1, 0)                                              \
    X(LOSSES,    losses,    B,               0, 1, 1) /* per example; the loss is their mean */
/* clang-format on */

#define BERT_ACT_ENUM_ROW(id, field, shape, layered, act, grad) BERT_A_##id,
enum bert_act { BERT_ACTS(BERT_ACT_ENUM_ROW) BERT_ACT_COUNT };

struct tunep_bert_act_info {
    const char *field;
    int layered, act, grad;
};
extern const struct tunep_bert_act_info tunep_bert_act_info[BERT_ACT_COUNT];

/* ---- layout: pure arithmetic --------------------------------------------- */

/* Sizes and offsets are in elements (floats or doubles, whichever the model uses). */
struct tunep_bert_layout {
    int B, T;
    size_t param_size[BERT_PARAM_COUNT];   /* per layer (whole tensor when not layered) */
    size_t param_offset[BERT_PARAM_COUNT]; /* layer 0, into the params arena (also grads, m, v) */
    /* from one layer to the next: param_size, or the stack's per-layer total
     * (BERT_STACKS); layer l of id is at param_offset + l * param_stride */
    size_t param_stride[BERT_PARAM_COUNT];
    size_t param_total;
    size_t act_size[BERT_ACT_COUNT];   /* per layer */
    size_t act_offset[BERT_ACT_COUNT]; /* into the acts arena; unused when !act */
    size_t act_total;
    size_t grad_offset[BERT_ACT_COUNT]; /* into the grad-acts arena; unused when !grad */
    size_t grad_total;
};

/*
 * Fills *ret_layout for `batch` sequences of seq_len tokens: every count and
 * offset, no allocation, no backend. TUNE_EINVAL when cfg is invalid, batch is
 * outside [1, TUNEP_BERT_MAX_B] or seq_len outside [1, cfg->P].
 */
tune_status tunep_bert_layout_compute(const struct tunep_bert_config *cfg, int batch, int seq_len,
                                      struct tunep_bert_layout *ret_layout, tune_error *err);

/*
 * Device memory one model of (cfg, batch, seq_len) takes on a GPU backend,
 * in bytes, each part from the layout: weights, their gradients, AdamW's m
 * and v (param_total elements each), the activations and their gradients
 * (act_total + grad_total), the token inputs ((3 B T + B) int32), and the
 * workspace: the largest scratch a kernel asks for (attention backward, 7
 * B T C elements; the embedding sort and the column sums take less) plus
 * TUNEP_BERT_MEM_BACKEND_BYTES for what a backend context keeps per trial.
 * The process's CUDA context is not included: it is there before the first
 * trial and shared by all of a process's trials. An estimate, not a
 * measurement (the allocator rounds blocks up).
 */
#define TUNEP_BERT_MEM_BACKEND_BYTES ((size_t)64 << 20) /* cuBLAS handle + 32 MiB workspace */
struct tunep_bert_memory {
    size_t weights, grads, adam, acts, inputs, workspace;
    size_t total; /* their sum */
};
/* elem_bytes: sizeof the model's real (4 on a GPU). TUNE_EINVAL as
 * tunep_bert_layout_compute, or for elem_bytes 0. */
tune_status tunep_bert_memory_estimate(const struct tunep_bert_config *cfg, int batch, int seq_len,
                                       size_t elem_bytes, struct tunep_bert_memory *ret_mem,
                                       tune_error *err);

/* ---- one training batch -------------------------------------------------- */

/* Host arrays of B*T (labels: B) int32 values, borrowed for the call. */
struct tunep_bert_batch {
    int B, T;
    const int32_t *ids;    /* token ids in [0, V) */
    const int32_t *types;  /* token types in [0, TV); NULL = all 0 */
    const int32_t *mask;   /* 1 = token, 0 = padding; NULL = all 1 */
    const int32_t *labels; /* in [0, K); NULL = no loss (inference) */
};

/* AdamW hyperparameters; the learning rate is given per step. */
struct tunep_adamw {
    double beta1, beta2, eps; /* 0.9, 0.999, 1e-8 as torch.optim.AdamW */
    double weight_decay;      /* applied to tensors whose table row says decay */
    double clip_norm;         /* global L2 gradient clipping; <= 0 disables */
};
void tunep_adamw_default(struct tunep_adamw *opt);

/* ---- the model, in float and (for gradient checks) double ---------------- */

/* struct tunep_bert and tunep_bert_new() ... in float, then the same
 * declarations in double under the names bert_f64.h lists
 * (struct tunep_bert_f64, tunep_bert_new_f64() ...). */
#define TUNEP_HREAL float
#include "models/bert/bert_model_tmpl.h"
#undef TUNEP_HREAL
#define TUNEP_HREAL double
#include "models/bert/bert_f64.h"
#include "models/bert/bert_model_tmpl.h"
#include "models/bert/bert_f64_end.h"
#undef TUNEP_HREAL

#endif /* TUNE_BERT_H */
