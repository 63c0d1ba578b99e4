/*
 * bert.c - BertForSequenceClassification: arenas, initialisation, forward,
 * backward and AdamW, written once against struct tunep_kernels and
 * compiled twice: as float for training (the names written here) and with
 * -DTUNEP_F64 as double for gradient checks (the names in bert_f64.h), in
 * the style of llm.c's gpt2_forward/gpt2_backward.
 *
 * Invariants: all memory is six backend arenas (params, grads, AdamW m and
 * v, acts, grad-acts) plus the int32 inputs, allocated at creation for
 * (B_max, T_max) from bert_layout.c and never resized; every kernel call
 * goes through the table (no backend #ifdefs here). Backward kernels add
 * into parameter gradients but write each activation gradient's first
 * contribution (kernels_tmpl.h), so no activation gradient is zeroed: the
 * residual stream's second contribution (the FFN input's and the layer
 * input's) is the only one added, through matmul_bwd's accumulate. That
 * also lets layers share the gradient buffers that live inside one layer
 * (grad column 2 of BERT_ACTS) with no clearing between layers; zeroing
 * before each first writer cost 2-4% of a step. Dropout masks are keyed by
 * (seed, stream of (dropout site, layer), element index), so backward
 * regenerates them.
 * References: Devlin et al. 2019; Hugging Face modeling_bert.py
 * (BertForSequenceClassification); torch.optim.AdamW and
 * torch.nn.utils.clip_grad_norm_ (PyTorch 1.13).
 */
#include "models/bert/bert.h"

#include <math.h>
#include <string.h>

#include "base/base.h"
#include "models/bert/bert_rng.h"

/* The double build defines the names bert_f64.h lists (tunep_bert_forward
 * becomes tunep_bert_forward_f64 ...); it must come after every header. */
#if defined(TUNEP_F64)
#include "models/bert/bert_f64.h"
typedef double real;
#define REAL_NAME "double"
#else
typedef float real;
#define REAL_NAME "float"
#endif

struct tunep_bert {
    struct tunep_bert_config cfg;
    int B_max, T_max;
    struct tunep_bert_layout max_layout; /* arena sizes */
    struct tunep_bert_layout layout;     /* (B, T) of the last forward */
    const struct tunep_backend *be;
    const struct tunep_kernels *k;

    real *params_mem, *grads_mem, *m_mem, *v_mem, *acts_mem, *dacts_mem;
    int32_t *inputs_mem; /* ids, types, mask (B_max*T_max each), labels (B_max) */
    struct tunep_bert_params params, grads, m, v;
    struct tunep_bert_acts acts, dacts;

    /* Host staging: the largest parameter tensor, or one int per token. */
    real *host_real;
    size_t host_real_n;
    int32_t *host_i32;

    int have_forward, have_labels;
    double p_hidden, p_attn; /* dropout of the last forward (0 in eval) */
    uint64_t seed;
    long step;
};

/* Calls kernel `name` of the model's table; a failure returns from the caller. */
#define KERNEL(model, err, name, ...)                                                              \
    do {                                                                                           \
        tune_status kst_ = (model)->k->name((model)->be->ctx, __VA_ARGS__);                        \
        if (kst_ != TUNE_OK)                                                                       \
            return tunep_error_set((err), kst_, "bert: kernel '%s' failed", #name);                \
    } while (0)

/* Calls a tune_status function; a failure returns from the caller. */
#define TRY(expr)                                                                                  \
    do {                                                                                           \
        tune_status tst_ = (expr);                                                                 \
        if (tst_ != TUNE_OK)                                                                       \
            return tst_;                                                                           \
    } while (0)

static size_t layers_of(const struct tunep_bert *m, enum bert_param id)
{
    return tunep_bert_param_info[id].layered ? (size_t)m->cfg.L : 1;
}

static void set_param_views(struct tunep_bert_params *view, real *base,
                            const struct tunep_bert_layout *lay)
{
#define BERT_VIEW_ROW(id, field, shape, layered, decay, init, name)                                \
    view->field = base + lay->param_offset[BERT_P_##id];
    BERT_PARAMS(BERT_VIEW_ROW)
#undef BERT_VIEW_ROW
}

static void set_act_views(struct tunep_bert *m)
{
    const struct tunep_bert_layout *lay = &m->layout;
#define BERT_ACT_VIEW_ROW(id, field, shape, layered, act, grad)                                    \
    m->acts.field = (act) ? m->acts_mem + lay->act_offset[BERT_A_##id] : NULL;                     \
    m->dacts.field = (grad) ? m->dacts_mem + lay->grad_offset[BERT_A_##id] : NULL;
    BERT_ACTS(BERT_ACT_VIEW_ROW)
#undef BERT_ACT_VIEW_ROW
}

static tune_status alloc_arena(struct tunep_bert *m, size_t bytes, void **ret, tune_error *err)
{
    /* Zero-sized arenas still get a distinct block, so views are never NULL. */
    TRY(m->be->alloc(m->be->ctx, bytes ? bytes : 64, ret, err));
    return m->be->memzero(m->be->ctx, *ret, bytes ? bytes : 64, err);
}

void tunep_bert_free(struct tunep_bert *m)
{
    if (!m)
        return;
    if (m->be) {
        void *blocks[] = {m->params_mem, m->grads_mem, m->m_mem,     m->v_mem,
                          m->acts_mem,   m->dacts_mem, m->inputs_mem};
        for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
            m->be->free(m->be->ctx, blocks[i]);
    }
    tunep_free(m->host_real);
    tunep_free(m->host_i32);
    tunep_free(m);
}

tune_status tunep_bert_new(const struct tunep_bert_config *cfg, int B_max, int T_max,
                           const struct tunep_backend *be, struct tunep_bert **ret_model,
                           tune_error *err)
{
    if (!cfg || !be || !ret_model)
        return tunep_error_set(err, TUNE_EINVAL, "bert: NULL argument");
    TRY(tunep_bert_config_check(cfg, err));
#if defined(TUNEP_F64)
    const struct tunep_kernels *k = be->kernels_f64;
#else
    const struct tunep_kernels *k = be->kernels;
#endif
    if (!k)
        return tunep_error_set(err, TUNE_EUNSUPPORTED, "bert: backend '%s' has no %s kernels",
                               be->name, REAL_NAME);
#define BERT_KERNEL_CHECK(kname)                                                                   \
    if (!k->kname)                                                                                 \
        return tunep_error_set(err, TUNE_EUNSUPPORTED, "bert: backend '%s' lacks kernel '%s'",     \
                               be->name, #kname);
    TUNEP_KERNEL_LIST(BERT_KERNEL_CHECK)
#undef BERT_KERNEL_CHECK
    if (!be->alloc || !be->free || !be->upload || !be->download || !be->memzero || !be->sync)
        return tunep_error_set(err, TUNE_EUNSUPPORTED,
                               "bert: backend '%s' lacks a memory operation", be->name);
    if (T_max > cfg->P)
        return tunep_error_set(err, TUNE_EINVAL,
                               "bert: max sequence length %d exceeds max_position_embeddings %d",
                               T_max, cfg->P);
    struct tunep_bert_layout lay;
    TRY(tunep_bert_layout_compute(cfg, B_max, T_max, &lay, err));

    struct tunep_bert *m = tunep_calloc(1, sizeof *m);
    if (!m)
        return tunep_error_set(err, TUNE_ENOMEM, "bert: out of memory");
    m->cfg = *cfg;
    m->B_max = B_max;
    m->T_max = T_max;
    m->max_layout = lay;
    m->layout = lay;
    m->be = be;
    m->k = k;

    size_t pbytes = lay.param_total * sizeof(real);
    size_t ntok = (size_t)B_max * (size_t)T_max;
    tune_status st;
    if ((st = alloc_arena(m, pbytes, (void **)&m->params_mem, err)) != TUNE_OK ||
        (st = alloc_arena(m, pbytes, (void **)&m->grads_mem, err)) != TUNE_OK ||
        (st = alloc_arena(m, pbytes, (void **)&m->m_mem, err)) != TUNE_OK ||
        (st = alloc_arena(m, pbytes, (void **)&m->v_mem, err)) != TUNE_OK ||
        (st = alloc_arena(m, lay.act_total * sizeof(real), (void **)&m->acts_mem, err)) !=
            TUNE_OK ||
        (st = alloc_arena(m, lay.grad_total * sizeof(real), (void **)&m->dacts_mem, err)) !=
            TUNE_OK ||
        (st = alloc_arena(m, (3 * ntok + (size_t)B_max) * sizeof(int32_t), (void **)&m->inputs_mem,
                          err)) != TUNE_OK)
        goto fail;

    size_t largest = (size_t)B_max * (size_t)(cfg->K > 1 ? cfg->K : 1);
    for (int id = 0; id < BERT_PARAM_COUNT; id++)
        largest = lay.param_size[id] > largest ? lay.param_size[id] : largest;
    m->host_real_n = largest;
    m->host_real = tunep_malloc(largest * sizeof(real));
    m->host_i32 = tunep_malloc(ntok * sizeof(int32_t));
    if (!m->host_real || !m->host_i32) {
        st = tunep_error_set(err, TUNE_ENOMEM, "bert: out of memory");
        goto fail;
    }

    set_param_views(&m->params, m->params_mem, &lay);
    set_param_views(&m->grads, m->grads_mem, &lay);
    set_param_views(&m->m, m->m_mem, &lay);
    set_param_views(&m->v, m->v_mem, &lay);
    set_act_views(m);
    *ret_model = m;
    return TUNE_OK;
fail:
    tunep_bert_free(m);
    return st;
}

/* ---- initialisation ------------------------------------------------------ */

/*
 * N(0, 1) truncated to [-2, 2] for element i of (tensor, layer): Box-Muller
 * on 53-bit uniforms from one Philox block per attempt, rejecting |z| > 2
 * (4.6% of draws; 64 rejections in a row have probability < 1e-85).
 * Equivalent in distribution to torch.nn.init.trunc_normal_(a=-2, b=2).
 */
static double trunc_normal(uint64_t seed, int tensor, int layer, uint64_t i)
{
    for (int attempt = 0; attempt < 64; attempt++) {
        uint32_t r[4];
        tunep_philox4x32(r, i, tunep_bert_stream(TUNEP_BERT_RNG_INIT, tensor, attempt, layer),
                         seed);
        double u1 = ((double)(((uint64_t)r[0] << 21) ^ (r[1] >> 11)) + 1.0) * 0x1p-53; /* (0,1] */
        double u2 = (double)(((uint64_t)r[2] << 21) ^ (r[3] >> 11)) * 0x1p-53;         /* [0,1) */
        double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
        if (fabs(z) <= 2.0)
            return z;
    }
    return 0.0;
}

tune_status tunep_bert_init_weights(struct tunep_bert *m, uint64_t seed, tune_error *err)
{
    if (!m)
        return tunep_error_set(err, TUNE_EINVAL, "bert: NULL model");
    const struct tunep_bert_layout *lay = &m->max_layout;
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        const struct tunep_bert_param_info *info = &tunep_bert_param_info[id];
        size_t n = lay->param_size[id];
        for (size_t l = 0; l < layers_of(m, (enum bert_param)id); l++) {
            for (size_t i = 0; i < n; i++) {
                m->host_real[i] = info->init == BERT_INIT_ONES ? (real)1
                                  : info->init == BERT_INIT_ZEROS
                                      ? (real)0
                                      : (real)(0.02 * trunc_normal(seed, id, (int)l, i));
            }
            TRY(m->be->upload(m->be->ctx,
                              m->params_mem + lay->param_offset[id] + l * lay->param_stride[id],
                              m->host_real, n * sizeof(real), err));
        }
    }
    size_t pbytes = lay->param_total * sizeof(real);
    TRY(m->be->memzero(m->be->ctx, m->grads_mem, pbytes, err));
    TRY(m->be->memzero(m->be->ctx, m->m_mem, pbytes, err));
    TRY(m->be->memzero(m->be->ctx, m->v_mem, pbytes, err));
    m->step = 0;
    return TUNE_OK;
}

/* ---- forward ------------------------------------------------------------- */

/* Checks one int32 input array against [lo, hi); names the first offender. */
static tune_status check_range(const int32_t *a, int B, int T, int32_t lo, int32_t hi,
                               const char *what, tune_error *err)
{
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            int32_t x = a[(size_t)b * (size_t)T + (size_t)t];
            if (x < lo || x >= hi)
                return tunep_error_set(err, TUNE_EINVAL,
                                       "bert: %s %d at batch %d position %d is outside [%d, %d)",
                                       what, (int)x, b, t, (int)lo, (int)hi);
        }
    }
    return TUNE_OK;
}

static tune_status upload_inputs(struct tunep_bert *m, const struct tunep_bert_batch *batch,
                                 tune_error *err)
{
    const struct tunep_bert_config *c = &m->cfg;
    int B = batch->B, T = batch->T;
    size_t ntok = (size_t)B * (size_t)T, nmax = (size_t)m->B_max * (size_t)m->T_max;
    int32_t *ids = m->inputs_mem, *types = ids + nmax, *mask = types + nmax, *labels = mask + nmax;

    TRY(check_range(batch->ids, B, T, 0, c->V, "token id", err));
    if (batch->types)
        TRY(check_range(batch->types, B, T, 0, c->TV, "token type", err));
    if (batch->mask)
        TRY(check_range(batch->mask, B, T, 0, 2, "attention mask value", err));
    if (batch->labels)
        TRY(check_range(batch->labels, 1, B, 0, c->K, "label", err));

    TRY(m->be->upload(m->be->ctx, ids, batch->ids, ntok * sizeof(int32_t), err));
    if (batch->types) {
        TRY(m->be->upload(m->be->ctx, types, batch->types, ntok * sizeof(int32_t), err));
    } else {
        for (size_t i = 0; i < ntok; i++)
            m->host_i32[i] = 0;
        TRY(m->be->upload(m->be->ctx, types, m->host_i32, ntok * sizeof(int32_t), err));
    }
    if (batch->mask) {
        TRY(m->be->upload(m->be->ctx, mask, batch->mask, ntok * sizeof(int32_t), err));
    } else {
        for (size_t i = 0; i < ntok; i++)
            m->host_i32[i] = 1;
        TRY(m->be->upload(m->be->ctx, mask, m->host_i32, ntok * sizeof(int32_t), err));
    }
    if (batch->labels)
        TRY(m->be->upload(m->be->ctx, labels, batch->labels, (size_t)B * sizeof(int32_t), err));
    return TUNE_OK;
}

static uint64_t drop_stream(enum tunep_bert_drop_site site, int layer)
{
    return tunep_bert_stream(TUNEP_BERT_RNG_DROPOUT, (int)site, 0, layer);
}

tune_status tunep_bert_forward(struct tunep_bert *m, const struct tunep_bert_batch *batch,
                               int train, uint64_t dropout_seed, double *ret_loss, tune_error *err)
{
    if (!m || !batch || !batch->ids)
        return tunep_error_set(err, TUNE_EINVAL, "bert: NULL argument");
    if (batch->B < 1 || batch->B > m->B_max || batch->T < 1 || batch->T > m->T_max)
        return tunep_error_set(err, TUNE_EINVAL,
                               "bert: batch %dx%d exceeds the model's maximum %dx%d", batch->B,
                               batch->T, m->B_max, m->T_max);
    m->have_forward = 0;
    TRY(upload_inputs(m, batch, err));
    TRY(tunep_bert_layout_compute(&m->cfg, batch->B, batch->T, &m->layout, err));
    set_act_views(m);

    const int B = batch->B, T = batch->T, C = m->cfg.C, NH = m->cfg.NH, I = m->cfg.I;
    const int L = m->cfg.L, K = m->cfg.K, BT = B * T;
    const size_t BTC = (size_t)BT * (size_t)C, BTI = (size_t)BT * (size_t)I;
    const size_t BT_ = (size_t)BT, NTT = (size_t)B * (size_t)NH * (size_t)T * (size_t)T;
    const double eps = m->cfg.ln_eps;
    /* Layer strides of the fused query/key/value weight and bias (BERT_STACKS). */
    const size_t qkv_w = m->max_layout.param_stride[BERT_P_Q_W];
    const size_t qkv_b = m->max_layout.param_stride[BERT_P_Q_B];
    const double ph = train ? m->cfg.hidden_dropout : 0.0;
    const double pa = train ? m->cfg.attn_dropout : 0.0;
    const size_t nmax = (size_t)m->B_max * (size_t)m->T_max;
    const int32_t *ids = m->inputs_mem, *types = ids + nmax, *mask = types + nmax;
    const int32_t *labels = mask + nmax;
    const struct tunep_bert_params *p = &m->params;
    const struct tunep_bert_acts *a = &m->acts;
    m->p_hidden = ph;
    m->p_attn = pa;
    m->seed = dropout_seed;

    KERNEL(m, err, embed_fwd, a->emb, ids, types, p->word_emb, p->pos_emb, p->type_emb, B, T, C);
    KERNEL(m, err, layernorm_fwd, a->emb_ln, a->emb_mean, a->emb_rstd, a->emb, p->emb_ln_w,
           p->emb_ln_b, BT, C, eps);
    KERNEL(m, err, dropout_fwd, a->emb_drop, a->emb_ln, NULL, BTC, ph, dropout_seed,
           drop_stream(TUNEP_BERT_DROP_EMB, 0));

    const real *x = a->emb_drop;
    for (int l = 0; l < L; l++) {
        const size_t lc = (size_t)l * (size_t)C, lcc = lc * (size_t)C;
        const size_t li = (size_t)l * (size_t)I, lci = li * (size_t)C;
        real *l_qkv = a->qkv + 3 * l * BTC;
        real *l_att = a->att + l * NTT, *l_att_drop = a->att_drop + l * NTT;
        real *l_ctx = a->att_ctx + l * BTC, *l_proj = a->att_proj + l * BTC;
        real *l_res = a->att_res + l * BTC, *l_ln1 = a->att_ln + l * BTC;
        real *l_mean1 = a->att_mean + l * BT_, *l_rstd1 = a->att_rstd + l * BT_;
        real *l_fc = a->fc + l * BTI, *l_gelu = a->fc_gelu + l * BTI;
        real *l_fcproj = a->fc_proj + l * BTC, *l_fcres = a->fc_res + l * BTC;
        real *l_mean2 = a->out_mean + l * BT_, *l_rstd2 = a->out_rstd + l * BT_;
        real *l_out = a->out_ln + l * BTC;

        /* one GEMM for the query, key and value rows of l_qkv */
        KERNEL(m, err, matmul_fwd, l_qkv, x, p->q_w + l * qkv_w, p->q_b + l * qkv_b, BT, C, 3 * C);
        KERNEL(m, err, attention_fwd, l_ctx, l_att, l_att_drop, l_qkv, l_qkv + C, l_qkv + 2 * C,
               mask, B, T, C, NH, 3 * C, pa, dropout_seed, drop_stream(TUNEP_BERT_DROP_ATT, l));
        KERNEL(m, err, matmul_fwd, l_proj, l_ctx, p->att_o_w + lcc, p->att_o_b + lc, BT, C, C);
        KERNEL(m, err, dropout_fwd, l_res, l_proj, x, BTC, ph, dropout_seed,
               drop_stream(TUNEP_BERT_DROP_ATT_RES, l));
        KERNEL(m, err, layernorm_fwd, l_ln1, l_mean1, l_rstd1, l_res, p->att_ln_w + lc,
               p->att_ln_b + lc, BT, C, eps);
        KERNEL(m, err, matmul_fwd, l_fc, l_ln1, p->fc_w + lci, p->fc_b + li, BT, C, I);
        KERNEL(m, err, gelu_fwd, l_gelu, l_fc, BTI);
        KERNEL(m, err, matmul_fwd, l_fcproj, l_gelu, p->fc_o_w + lci, p->fc_o_b + lc, BT, I, C);
        KERNEL(m, err, dropout_fwd, l_fcres, l_fcproj, l_ln1, BTC, ph, dropout_seed,
               drop_stream(TUNEP_BERT_DROP_FC_RES, l));
        KERNEL(m, err, layernorm_fwd, l_out, l_mean2, l_rstd2, l_fcres, p->out_ln_w + lc,
               p->out_ln_b + lc, BT, C, eps);
        x = l_out;
    }

    KERNEL(m, err, pooler_fwd, a->pool, a->pool_pre, x, p->pool_w, p->pool_b, B, T, C);
    KERNEL(m, err, dropout_fwd, a->pool_drop, a->pool, NULL, (size_t)B * (size_t)C, ph,
           dropout_seed, drop_stream(TUNEP_BERT_DROP_POOL, 0));
    KERNEL(m, err, matmul_fwd, a->logits, a->pool_drop, p->cls_w, p->cls_b, B, C, K);

    double loss = 0.0;
    if (batch->labels) {
        KERNEL(m, err, softmax_xent_fwd, a->losses, a->probs, a->logits, labels, B, K);
        TRY(m->be->download(m->be->ctx, m->host_real, a->losses, (size_t)B * sizeof(real), err));
        for (int b = 0; b < B; b++)
            loss += (double)m->host_real[b];
        loss /= B;
        if (!isfinite(loss))
            return tunep_error_set(err, TUNE_ENUMERIC, "bert: loss is not finite");
    }
    m->have_forward = 1;
    m->have_labels = batch->labels != NULL;
    if (ret_loss)
        *ret_loss = loss;
    return TUNE_OK;
}

/* ---- backward ------------------------------------------------------------ */

/* Layer l's gradient buffer of activation `field` (table id, elements per
 * layer): its own slice where the table's grad column is 1, the one buffer
 * every layer shares where it is 2. */
#define DL(field, id, size)                                                                        \
    (d->field + (tunep_bert_act_info[BERT_A_##id].grad == 1 ? (size_t)l * (size) : 0))

tune_status tunep_bert_backward(struct tunep_bert *m, tune_error *err)
{
    if (!m)
        return tunep_error_set(err, TUNE_EINVAL, "bert: NULL model");
    if (!m->have_forward || !m->have_labels)
        return tunep_error_set(err, TUNE_EINVAL, "bert: backward needs a forward pass with labels");

    const int B = m->layout.B, T = m->layout.T, C = m->cfg.C, NH = m->cfg.NH, I = m->cfg.I;
    const int L = m->cfg.L, K = m->cfg.K, BT = B * T;
    const size_t BTC = (size_t)BT * (size_t)C, BTI = (size_t)BT * (size_t)I;
    const size_t BT_ = (size_t)BT, NTT = (size_t)B * (size_t)NH * (size_t)T * (size_t)T;
    const double ph = m->p_hidden, pa = m->p_attn;
    const uint64_t seed = m->seed;
    const size_t nmax = (size_t)m->B_max * (size_t)m->T_max;
    const int32_t *ids = m->inputs_mem, *types = ids + nmax, *mask = types + nmax;
    const int32_t *labels = mask + nmax;
    const size_t qkv_w = m->max_layout.param_stride[BERT_P_Q_W];
    const size_t qkv_b = m->max_layout.param_stride[BERT_P_Q_B];
    const struct tunep_bert_params *p = &m->params, *g = &m->grads;
    const struct tunep_bert_acts *a = &m->acts, *d = &m->dacts;

    const size_t BC = (size_t)B * (size_t)C;
    /* d(mean loss)/d(loss_b) = 1/B */
    for (int b = 0; b < B; b++)
        m->host_real[b] = (real)(1.0 / B);
    TRY(m->be->upload(m->be->ctx, d->losses, m->host_real, (size_t)B * sizeof(real), err));

    KERNEL(m, err, softmax_xent_bwd, d->logits, d->losses, a->probs, labels, B, K);
    KERNEL(m, err, matmul_bwd, d->pool_drop, g->cls_w, g->cls_b, d->logits, a->pool_drop, p->cls_w,
           B, C, K, 0);
    KERNEL(m, err, dropout_bwd, d->pool, NULL, d->pool_drop, BC, ph, seed,
           drop_stream(TUNEP_BERT_DROP_POOL, 0));
    const size_t last = (size_t)(L - 1) * BTC;
    /* the pooler writes the last layer's output gradient: 0 beyond t = 0 */
    KERNEL(m, err, pooler_bwd, d->out_ln + last, g->pool_w, g->pool_b, d->pool_pre, d->pool,
           a->pool, a->out_ln + last, p->pool_w, B, T, C);

    for (int l = L - 1; l >= 0; l--) {
        const size_t lc = (size_t)l * (size_t)C, lcc = lc * (size_t)C;
        const size_t li = (size_t)l * (size_t)I, lci = li * (size_t)C;
        const real *x = l == 0 ? a->emb_drop : a->out_ln + (size_t)(l - 1) * BTC;
        real *dx = l == 0 ? d->emb_drop : d->out_ln + (size_t)(l - 1) * BTC;
        const real *l_qkv = a->qkv + 3 * l * BTC;
        const real *l_att = a->att + l * NTT, *l_att_drop = a->att_drop + l * NTT;
        const real *l_ctx = a->att_ctx + l * BTC, *l_res = a->att_res + l * BTC;
        const real *l_ln1 = a->att_ln + l * BTC;
        const real *l_mean1 = a->att_mean + l * BT_, *l_rstd1 = a->att_rstd + l * BT_;
        const real *l_fc = a->fc + l * BTI, *l_gelu = a->fc_gelu + l * BTI;
        const real *l_fcres = a->fc_res + l * BTC;
        const real *l_mean2 = a->out_mean + l * BT_, *l_rstd2 = a->out_rstd + l * BT_;
        real *dl_qkv = DL(qkv, QKV, 3 * BTC);
        real *dl_ctx = DL(att_ctx, ATT_CTX, BTC), *dl_proj = DL(att_proj, ATT_PROJ, BTC);
        real *dl_res = DL(att_res, ATT_RES, BTC), *dl_ln1 = DL(att_ln, ATT_LN, BTC);
        real *dl_fc = DL(fc, FC, BTI), *dl_gelu = DL(fc_gelu, FC_GELU, BTI);
        real *dl_fcproj = DL(fc_proj, FC_PROJ, BTC), *dl_fcres = DL(fc_res, FC_RES, BTC);
        real *dl_out = DL(out_ln, OUT_LN, BTC);

        /* dl_out was written by the pooler (last layer) or by the next
         * layer's residual dropout_bwd. The feed-forward block: */
        KERNEL(m, err, layernorm_bwd, dl_fcres, g->out_ln_w + lc, g->out_ln_b + lc, dl_out, l_fcres,
               p->out_ln_w + lc, l_mean2, l_rstd2, BT, C);
        KERNEL(m, err, dropout_bwd, dl_fcproj, dl_ln1, dl_fcres, BTC, ph, seed,
               drop_stream(TUNEP_BERT_DROP_FC_RES, l));
        KERNEL(m, err, matmul_bwd, dl_gelu, g->fc_o_w + lci, g->fc_o_b + lc, dl_fcproj, l_gelu,
               p->fc_o_w + lci, BT, I, C, 0);
        KERNEL(m, err, gelu_bwd, dl_fc, dl_gelu, l_fc, BTI);
        /* dl_ln1's second contribution (the residual's came first) */
        KERNEL(m, err, matmul_bwd, dl_ln1, g->fc_w + lci, g->fc_b + li, dl_fc, l_ln1, p->fc_w + lci,
               BT, C, I, 1);
        /* the attention block; dropout_bwd writes the layer input's first contribution */
        KERNEL(m, err, layernorm_bwd, dl_res, g->att_ln_w + lc, g->att_ln_b + lc, dl_ln1, l_res,
               p->att_ln_w + lc, l_mean1, l_rstd1, BT, C);
        KERNEL(m, err, dropout_bwd, dl_proj, dx, dl_res, BTC, ph, seed,
               drop_stream(TUNEP_BERT_DROP_ATT_RES, l));
        KERNEL(m, err, matmul_bwd, dl_ctx, g->att_o_w + lcc, g->att_o_b + lc, dl_proj, l_ctx,
               p->att_o_w + lcc, BT, C, C, 0);
        KERNEL(m, err, attention_bwd, dl_qkv, dl_qkv + C, dl_qkv + 2 * C, d->preatt, d->att,
               d->att_drop, dl_ctx, l_qkv, l_qkv + C, l_qkv + 2 * C, l_att, l_att_drop, mask, B, T,
               C, NH, 3 * C, pa, seed, drop_stream(TUNEP_BERT_DROP_ATT, l));
        KERNEL(m, err, matmul_bwd, dx, g->q_w + l * qkv_w, g->q_b + l * qkv_b, dl_qkv, x,
               p->q_w + l * qkv_w, BT, C, 3 * C, 1);
    }

    KERNEL(m, err, dropout_bwd, d->emb_ln, NULL, d->emb_drop, BTC, ph, seed,
           drop_stream(TUNEP_BERT_DROP_EMB, 0));
    KERNEL(m, err, layernorm_bwd, d->emb, g->emb_ln_w, g->emb_ln_b, d->emb_ln, a->emb, p->emb_ln_w,
           a->emb_mean, a->emb_rstd, BT, C);
    KERNEL(m, err, embed_bwd, g->word_emb, g->pos_emb, g->type_emb, d->emb, ids, types, B, T, C);
    return TUNE_OK;
}

#undef DL

tune_status tunep_bert_zero_grad(struct tunep_bert *m, tune_error *err)
{
    if (!m)
        return tunep_error_set(err, TUNE_EINVAL, "bert: NULL model");
    return m->be->memzero(m->be->ctx, m->grads_mem, m->max_layout.param_total * sizeof(real), err);
}

/* ---- optimiser ----------------------------------------------------------- */

tune_status tunep_bert_adamw_step(struct tunep_bert *m, const struct tunep_adamw *opt, double lr,
                                  double *ret_grad_norm, tune_error *err)
{
    if (!m || !opt)
        return tunep_error_set(err, TUNE_EINVAL, "bert: NULL argument");
    if (!(lr >= 0.0 && isfinite(lr)) || !(opt->beta1 >= 0.0 && opt->beta1 < 1.0) ||
        !(opt->beta2 >= 0.0 && opt->beta2 < 1.0) || !(opt->eps > 0.0) ||
        !(opt->weight_decay >= 0.0 && isfinite(opt->weight_decay)) || isnan(opt->clip_norm))
        return tunep_error_set(err, TUNE_EINVAL, "bert: invalid AdamW hyperparameters");
    const struct tunep_bert_layout *lay = &m->max_layout;

    double sumsq = 0.0;
    KERNEL(m, err, grad_sumsq, &sumsq, m->grads_mem, lay->param_total);
    double norm = sqrt(sumsq);
    if (!isfinite(norm))
        return tunep_error_set(err, TUNE_ENUMERIC, "bert: gradient norm is not finite");
    /* torch.nn.utils.clip_grad_norm_: coef = max_norm / (norm + 1e-6), clamped to 1. */
    double scale = 1.0;
    if (opt->clip_norm > 0.0) {
        double coef = opt->clip_norm / (norm + 1e-6);
        scale = coef < 1.0 ? coef : 1.0;
    }
    m->step++;
    /* One call per stack of rows (a row not stacked is a stack of one): a
     * stack's rows share their decay and lie end to end from its first row. */
    for (int id = 0; id < BERT_PARAM_COUNT; id++) {
        if (tunep_bert_param_stack((enum bert_param)id) != (enum bert_param)id)
            continue;
        size_t off = lay->param_offset[id];
        size_t n = lay->param_stride[id] * layers_of(m, (enum bert_param)id);
        double wd = tunep_bert_param_info[id].decay ? opt->weight_decay : 0.0;
        KERNEL(m, err, adamw_step, m->params_mem + off, m->m_mem + off, m->v_mem + off,
               m->grads_mem + off, n, lr, opt->beta1, opt->beta2, opt->eps, wd, scale, m->step);
    }
    if (ret_grad_norm)
        *ret_grad_norm = norm;
    return TUNE_OK;
}

/* ---- access -------------------------------------------------------------- */

static tune_status tensor_at(const struct tunep_bert *m, enum bert_param id, int layer, size_t n,
                             size_t *ret_offset, tune_error *err)
{
    if (!m || (int)id < 0 || id >= BERT_PARAM_COUNT)
        return tunep_error_set(err, TUNE_EINVAL, "bert: invalid tensor");
    int layers = (int)layers_of(m, id);
    if (layer < 0 || layer >= layers)
        return tunep_error_set(err, TUNE_EINVAL, "bert: layer %d out of range for '%s'", layer,
                               tunep_bert_param_info[id].name);
    size_t size = m->max_layout.param_size[id];
    if (n != size)
        return tunep_error_set(err, TUNE_EINVAL, "bert: tensor '%s' has %zu elements, not %zu",
                               tunep_bert_param_info[id].name, size, n);
    *ret_offset = m->max_layout.param_offset[id] + (size_t)layer * m->max_layout.param_stride[id];
    return TUNE_OK;
}

tune_status tunep_bert_param_set(struct tunep_bert *m, enum bert_param id, int layer,
                                 const real *src, size_t n, tune_error *err)
{
    size_t off = 0;
    TRY(tensor_at(m, id, layer, n, &off, err));
    return m->be->upload(m->be->ctx, m->params_mem + off, src, n * sizeof(real), err);
}

tune_status tunep_bert_param_get(const struct tunep_bert *m, enum bert_param id, int layer,
                                 real *dst, size_t n, tune_error *err)
{
    size_t off = 0;
    TRY(tensor_at(m, id, layer, n, &off, err));
    return m->be->download(m->be->ctx, dst, m->params_mem + off, n * sizeof(real), err);
}

tune_status tunep_bert_grad_get(const struct tunep_bert *m, enum bert_param id, int layer,
                                real *dst, size_t n, tune_error *err)
{
    size_t off = 0;
    TRY(tensor_at(m, id, layer, n, &off, err));
    return m->be->download(m->be->ctx, dst, m->grads_mem + off, n * sizeof(real), err);
}

static real *arena_base(const struct tunep_bert *m, enum tunep_bert_arena arena)
{
    switch (arena) {
        case TUNEP_BERT_ARENA_PARAMS: return m->params_mem;
        case TUNEP_BERT_ARENA_GRADS: return m->grads_mem;
        case TUNEP_BERT_ARENA_ADAM_M: return m->m_mem;
        case TUNEP_BERT_ARENA_ADAM_V: return m->v_mem;
        default: return NULL;
    }
}

tune_status tunep_bert_tensor_get(const struct tunep_bert *m, enum tunep_bert_arena arena,
                                  enum bert_param id, int layer, real *dst, size_t n,
                                  tune_error *err)
{
    size_t off = 0;
    TRY(tensor_at(m, id, layer, n, &off, err));
    real *base = arena_base(m, arena);
    if (!base || !dst)
        return tunep_error_set(err, TUNE_EINVAL, "bert: invalid arena or NULL buffer");
    return m->be->download(m->be->ctx, dst, base + off, n * sizeof(real), err);
}

tune_status tunep_bert_tensor_set(struct tunep_bert *m, enum tunep_bert_arena arena,
                                  enum bert_param id, int layer, const real *src, size_t n,
                                  tune_error *err)
{
    size_t off = 0;
    TRY(tensor_at(m, id, layer, n, &off, err));
    real *base = arena_base(m, arena);
    if (!base || !src)
        return tunep_error_set(err, TUNE_EINVAL, "bert: invalid arena or NULL buffer");
    return m->be->upload(m->be->ctx, base + off, src, n * sizeof(real), err);
}

tune_status tunep_bert_logits(const struct tunep_bert *m, real *dst, size_t n, tune_error *err)
{
    if (!m || !dst)
        return tunep_error_set(err, TUNE_EINVAL, "bert: NULL argument");
    if (!m->have_forward)
        return tunep_error_set(err, TUNE_EINVAL, "bert: no forward pass yet");
    size_t want = (size_t)m->layout.B * (size_t)m->cfg.K;
    if (n != want)
        return tunep_error_set(err, TUNE_EINVAL, "bert: logits have %zu elements, not %zu", want,
                               n);
    return m->be->download(m->be->ctx, dst, m->acts.logits, n * sizeof(real), err);
}

const struct tunep_bert_config *tunep_bert_config_of(const struct tunep_bert *m)
{
    return &m->cfg;
}

const struct tunep_bert_layout *tunep_bert_layout_of(const struct tunep_bert *m)
{
    return &m->layout;
}

const struct tunep_bert_params *tunep_bert_params_view(const struct tunep_bert *m)
{
    return &m->params;
}

const struct tunep_bert_params *tunep_bert_grads_view(const struct tunep_bert *m)
{
    return &m->grads;
}

const struct tunep_bert_acts *tunep_bert_acts_view(const struct tunep_bert *m)
{
    return &m->acts;
}

const struct tunep_bert_acts *tunep_bert_grad_acts_view(const struct tunep_bert *m)
{
    return &m->dacts;
}

real *tunep_bert_params_arena(const struct tunep_bert *m)
{
    return m->params_mem;
}

real *tunep_bert_grads_arena(const struct tunep_bert *m)
{
    return m->grads_mem;
}

real *tunep_bert_adam_m_arena(const struct tunep_bert *m)
{
    return m->m_mem;
}

real *tunep_bert_adam_v_arena(const struct tunep_bert *m)
{
    return m->v_mem;
}

long tunep_bert_step_count(const struct tunep_bert *m)
{
    return m->step;
}

tune_status tunep_bert_set_step_count(struct tunep_bert *m, long step, tune_error *err)
{
    if (!m || step < 0)
        return tunep_error_set(err, TUNE_EINVAL, "bert: invalid step count %ld", step);
    m->step = step;
    return TUNE_OK;
}
