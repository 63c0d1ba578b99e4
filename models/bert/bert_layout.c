/*
 * bert_layout.c - BERT configuration checks and the arena layout, as pure
 * arithmetic over the tensor tables of bert.h.
 *
 * Invariants: every offset is a prefix sum in table order (no padding), a
 * stack of parameter rows (BERT_STACKS) counting as one row whose layers
 * hold each member's layer in turn, so an arena is one contiguous block
 * that kernels such as AdamW and the gradient norm can treat as flat; sizes
 * grow monotonically with B and T, so arenas sized for (B_max, T_max) hold
 * any smaller batch. No allocation, no backend.
 */
#include "models/bert/bert.h"

#include <stdio.h>

#include "base/base.h"

/* clang-format off */
#define BERT_PARAM_INFO_ROW(id, fld, shape, lay, dec, ini, hf)                                     \
    [BERT_P_##id] = {.name = hf, .field = #fld, .layered = lay, .decay = dec,                      \
                     .init = BERT_INIT_##ini},
/* clang-format on */
const struct tunep_bert_param_info tunep_bert_param_info[BERT_PARAM_COUNT] = {
    BERT_PARAMS(BERT_PARAM_INFO_ROW)};

#define BERT_ACT_INFO_ROW(id, fld, shape, lay, a, g)                                               \
    [BERT_A_##id] = {.field = #fld, .layered = lay, .act = a, .grad = g},
const struct tunep_bert_act_info tunep_bert_act_info[BERT_ACT_COUNT] = {
    BERT_ACTS(BERT_ACT_INFO_ROW)};

void tunep_bert_config_default(struct tunep_bert_config *cfg)
{
    cfg->L = 12;
    cfg->C = 768;
    cfg->NH = 12;
    cfg->I = 3072;
    cfg->P = 512;
    cfg->V = 30522;
    cfg->TV = 2;
    cfg->K = 2;
    cfg->hidden_dropout = 0.1;
    cfg->attn_dropout = 0.1;
    cfg->ln_eps = 1e-12;
}

void tunep_adamw_default(struct tunep_adamw *opt)
{
    opt->beta1 = 0.9;
    opt->beta2 = 0.999;
    opt->eps = 1e-8;
    opt->weight_decay = 0.01;
    opt->clip_norm = 1.0;
}

static int in_range(int v, int lo, int hi)
{
    return v >= lo && v <= hi;
}

tune_status tunep_bert_config_check(const struct tunep_bert_config *cfg, tune_error *err)
{
    if (!cfg)
        return tunep_error_set(err, TUNE_EINVAL, "bert config: NULL");
    struct {
        const char *name;
        int value, max;
    } dims[] = {
        {"num_hidden_layers", cfg->L, TUNEP_BERT_MAX_L},
        {"hidden_size", cfg->C, TUNEP_BERT_MAX_C},
        {"num_attention_heads", cfg->NH, TUNEP_BERT_MAX_NH},
        {"intermediate_size", cfg->I, TUNEP_BERT_MAX_I},
        {"max_position_embeddings", cfg->P, TUNEP_BERT_MAX_P},
        {"vocab_size", cfg->V, TUNEP_BERT_MAX_V},
        {"type_vocab_size", cfg->TV, TUNEP_BERT_MAX_TV},
        {"num_labels", cfg->K, TUNEP_BERT_MAX_K},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        if (!in_range(dims[i].value, 1, dims[i].max))
            return tunep_error_set(err, TUNE_ECONFIG, "bert config '%s': %d is outside [1, %d]",
                                   dims[i].name, dims[i].value, dims[i].max);
    }
    if (cfg->C % cfg->NH != 0)
        return tunep_error_set(err, TUNE_ECONFIG,
                               "bert config 'hidden_size': %d is not a multiple of "
                               "num_attention_heads %d",
                               cfg->C, cfg->NH);
    if (!(cfg->hidden_dropout >= 0.0 && cfg->hidden_dropout < 1.0))
        return tunep_error_set(err, TUNE_ECONFIG,
                               "bert config 'hidden_dropout_prob': expected [0, 1)");
    if (!(cfg->attn_dropout >= 0.0 && cfg->attn_dropout < 1.0))
        return tunep_error_set(err, TUNE_ECONFIG,
                               "bert config 'attention_probs_dropout_prob': expected [0, 1)");
    if (!(cfg->ln_eps > 0.0 && cfg->ln_eps < 1.0))
        return tunep_error_set(err, TUNE_ECONFIG, "bert config 'layer_norm_eps': expected (0, 1)");
    return TUNE_OK;
}

void tunep_bert_param_name(enum bert_param id, int layer, char *buf, size_t size)
{
    if (!buf || size == 0)
        return;
    if ((int)id < 0 || id >= BERT_PARAM_COUNT) {
        snprintf(buf, size, "?");
        return;
    }
    const struct tunep_bert_param_info *info = &tunep_bert_param_info[id];
    if (info->layered) {
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#endif
        snprintf(buf, size, info->name, layer);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
    } else {
        snprintf(buf, size, "%s", info->name);
    }
}

enum bert_param tunep_bert_param_stack(enum bert_param id)
{
    switch (id) {
#define BERT_STACK_ROW(first, second, third)                                                       \
    case BERT_P_##second:                                                                          \
    case BERT_P_##third: return BERT_P_##first;
        BERT_STACKS(BERT_STACK_ROW)
#undef BERT_STACK_ROW
        default: return id;
    }
}

static int set_dims(int64_t dims[2], int ndim, size_t rows, size_t cols)
{
    dims[0] = (int64_t)rows;
    dims[1] = ndim == 2 ? (int64_t)cols : 0;
    return ndim;
}

int tunep_bert_param_shape(const struct tunep_bert_config *cfg, enum bert_param id, int64_t dims[2])
{
    /* The config symbols the tables' shape expressions are written in; the
     * limits of tunep_bert_config_check() keep every dimension far below 2^31. */
    const size_t C = (size_t)cfg->C, I = (size_t)cfg->I, P = (size_t)cfg->P;
    const size_t V = (size_t)cfg->V, TV = (size_t)cfg->TV, K = (size_t)cfg->K;
    switch (id) {
#define BERT_PARAM_SHAPE_ROW(id, fld, shape, lay, dec, ini, hf)                                    \
    case BERT_P_##id: return set_dims(dims, BERT_DIMS_##shape);
        BERT_PARAMS(BERT_PARAM_SHAPE_ROW)
#undef BERT_PARAM_SHAPE_ROW
        default: return 0;
    }
}

tune_status tunep_bert_layout_compute(const struct tunep_bert_config *cfg, int batch, int seq_len,
                                      struct tunep_bert_layout *ret_layout, tune_error *err)
{
    if (!ret_layout)
        return tunep_error_set(err, TUNE_EINVAL, "bert layout: NULL output");
    tune_status st = tunep_bert_config_check(cfg, err);
    if (st != TUNE_OK)
        return st == TUNE_ECONFIG ? TUNE_EINVAL : st;
    if (!in_range(batch, 1, TUNEP_BERT_MAX_B))
        return tunep_error_set(err, TUNE_EINVAL, "bert layout: batch size %d is outside [1, %d]",
                               batch, TUNEP_BERT_MAX_B);
    if (!in_range(seq_len, 1, cfg->P))
        return tunep_error_set(err, TUNE_EINVAL,
                               "bert layout: sequence length %d is outside [1, %d]", seq_len,
                               cfg->P);

    /* The config symbols the tables' shape expressions are written in. */
    const size_t L = (size_t)cfg->L, C = (size_t)cfg->C, NH = (size_t)cfg->NH;
    const size_t I = (size_t)cfg->I, P = (size_t)cfg->P, V = (size_t)cfg->V;
    const size_t TV = (size_t)cfg->TV, K = (size_t)cfg->K;
    const size_t B = (size_t)batch, T = (size_t)seq_len;

    struct tunep_bert_layout lay = {.B = batch, .T = seq_len};
#define BERT_PARAM_LAYOUT_ROW(id, fld, shape, layered, decay, init, hf)                            \
    lay.param_size[BERT_P_##id] = (shape);
    BERT_PARAMS(BERT_PARAM_LAYOUT_ROW)
#undef BERT_PARAM_LAYOUT_ROW
    /* A row not stacked is a stack of one; the later rows of a stack are
     * placed with its first. */
    size_t off = 0;
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        if (tunep_bert_param_stack((enum bert_param)id) != (enum bert_param)id)
            continue;
        size_t stride = 0;
        for (int m = id; m < BERT_PARAM_COUNT; m++) {
            if (tunep_bert_param_stack((enum bert_param)m) == (enum bert_param)id) {
                lay.param_offset[m] = off + stride;
                stride += lay.param_size[m];
            }
        }
        for (int m = id; m < BERT_PARAM_COUNT; m++)
            if (tunep_bert_param_stack((enum bert_param)m) == (enum bert_param)id)
                lay.param_stride[m] = stride;
        off += stride * (tunep_bert_param_info[id].layered ? L : 1);
    }
    lay.param_total = off;

    {
        size_t aoff = 0, goff = 0;
#define BERT_ACT_LAYOUT_ROW(id, fld, shape, layered, act, grad)                                    \
    lay.act_size[BERT_A_##id] = (shape);                                                           \
    lay.act_offset[BERT_A_##id] = aoff;                                                            \
    lay.grad_offset[BERT_A_##id] = goff;                                                           \
    aoff += (act) ? (shape) * ((layered) ? L : 1) : 0;                                             \
    goff += (grad) == 1 ? (shape) * ((layered) ? L : 1) : (grad) == 2 ? (shape) : 0;
        BERT_ACTS(BERT_ACT_LAYOUT_ROW)
#undef BERT_ACT_LAYOUT_ROW
        lay.act_total = aoff;
        lay.grad_total = goff;
    }
    *ret_layout = lay;
    return TUNE_OK;
}

tune_status tunep_bert_memory_estimate(const struct tunep_bert_config *cfg, int batch, int seq_len,
                                       size_t elem_bytes, struct tunep_bert_memory *ret_mem,
                                       tune_error *err)
{
    if (!ret_mem || elem_bytes == 0)
        return tunep_error_set(err, TUNE_EINVAL, "bert memory estimate: bad argument");
    struct tunep_bert_layout lay;
    tune_status st = tunep_bert_layout_compute(cfg, batch, seq_len, &lay, err);
    if (st != TUNE_OK)
        return st;
    const size_t B = (size_t)batch, T = (size_t)seq_len, C = (size_t)cfg->C;
    struct tunep_bert_memory mem = {
        .weights = lay.param_total * elem_bytes,
        .grads = lay.param_total * elem_bytes,
        .adam = 2 * lay.param_total * elem_bytes,
        .acts = (lay.act_total + lay.grad_total) * elem_bytes,
        .inputs = (3 * B * T + B) * sizeof(int32_t),
        .workspace = 7 * B * T * C * elem_bytes + TUNEP_BERT_MEM_BACKEND_BYTES,
    };
    mem.total = mem.weights + mem.grads + mem.adam + mem.acts + mem.inputs + mem.workspace;
    *ret_mem = mem;
    return TUNE_OK;
}
