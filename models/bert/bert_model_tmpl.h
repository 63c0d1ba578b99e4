/*
 * bert_model_tmpl.h - the model object and its API for one precision.
 *
 * Included twice by bert.h: with TUNEP_HREAL = float under the names written
 * here (struct tunep_bert, tunep_bert_forward ...), and with TUNEP_HREAL =
 * double under the names bert_f64.h lists (struct tunep_bert_f64,
 * tunep_bert_forward_f64 ...; CPU only, for gradient checks). No include
 * guard on purpose. Pointers in the views are backend memory (host memory
 * for the CPU backend) and stay valid until the model is freed; activation
 * views are re-pointed by every forward call for its (B, T). A model is
 * used by one thread at a time; the kernels parallelise inside each call.
 */
#define TUNEP_MR TUNEP_HREAL

/* One pointer per parameter tensor (layer 0 of per-layer tensors; layer l is
 * at + l * layout.param_stride[id]). The same struct views params, grads, m, v. */
#define TUNEP_BERT_PARAM_PTR_ROW(id, field, shape, layered, decay, init, name) TUNEP_MR *field;
struct tunep_bert_params {
    BERT_PARAMS(TUNEP_BERT_PARAM_PTR_ROW)
};
_Static_assert(sizeof(struct tunep_bert_params) == BERT_PARAM_COUNT * sizeof(TUNEP_MR *),
               "parameter views must be one pointer per table row");

/* One pointer per activation (NULL where the table has no buffer). */
#define TUNEP_BERT_ACT_PTR_ROW(id, field, shape, layered, act, grad) TUNEP_MR *field;
struct tunep_bert_acts {
    BERT_ACTS(TUNEP_BERT_ACT_PTR_ROW)
};
_Static_assert(sizeof(struct tunep_bert_acts) == BERT_ACT_COUNT * sizeof(TUNEP_MR *),
               "activation views must be one pointer per table row");

struct tunep_bert;

/*
 * Creates a model for batches up to B_max x T_max (T_max <= cfg->P) on the
 * backend (borrowed; it must outlive the model), allocating all six arenas
 * (params, grads, AdamW m and v, acts, grad-acts) up front. Parameters and
 * moments start at zero: call tunep_bert_init_weights() or load weights.
 * @return TUNE_OK, TUNE_EINVAL, TUNE_ECONFIG (cfg), TUNE_EUNSUPPORTED (the
 * backend lacks a kernel or this precision), TUNE_ENOMEM; *ret_model is
 * untouched on failure.
 */
tune_status tunep_bert_new(const struct tunep_bert_config *cfg, int B_max, int T_max,
                           const struct tunep_backend *be, struct tunep_bert **ret_model,
                           tune_error *err);
/* NULL is a no-op. */
void tunep_bert_free(struct tunep_bert *model);

/*
 * Initialises every parameter from its table row (truncated normal, sd 0.02,
 * cut at 2 sd; ones; zeros) as a pure function of (seed, tensor, layer,
 * element), and resets AdamW's moments and step counter.
 */
tune_status tunep_bert_init_weights(struct tunep_bert *model, uint64_t seed, tune_error *err);

/*
 * Forward pass. train != 0 turns dropout on with masks keyed by
 * dropout_seed (vary it per step; the same seed gives the same masks).
 * With labels, *ret_loss (may be NULL) receives the mean cross-entropy;
 * without, it receives 0 and backward is not allowed.
 * @return TUNE_OK, TUNE_EINVAL (shape over the maximum, ids/types/mask/labels
 * out of range, with the offending position), TUNE_EDEVICE, TUNE_ENUMERIC
 * (non-finite loss).
 */
tune_status tunep_bert_forward(struct tunep_bert *model, const struct tunep_bert_batch *batch,
                               int train, uint64_t dropout_seed, double *ret_loss, tune_error *err);

/* Backward pass of the last forward (which must have had labels): ADDS the
 * gradient of the mean loss into the parameter gradients. */
tune_status tunep_bert_backward(struct tunep_bert *model, tune_error *err);

/* Sets every parameter gradient to zero. */
tune_status tunep_bert_zero_grad(struct tunep_bert *model, tune_error *err);

/*
 * One AdamW step at learning rate lr: global gradient norm, clipping as
 * torch.nn.utils.clip_grad_norm_ (scale min(1, clip/(norm + 1e-6))), then
 * torch.optim.AdamW per tensor with weight decay where the table says so.
 * *ret_grad_norm (may be NULL) gets the norm before clipping. Gradients are
 * left as they were. @return TUNE_ENUMERIC (and nothing updated) when the
 * gradient norm is not finite.
 */
tune_status tunep_bert_adamw_step(struct tunep_bert *model, const struct tunep_adamw *opt,
                                  double lr, double *ret_grad_norm, tune_error *err);

/* Copies tensor (id, layer) from / to host memory; n must be its element count. */
tune_status tunep_bert_param_set(struct tunep_bert *model, enum bert_param id, int layer,
                                 const TUNEP_MR *src, size_t n, tune_error *err);
tune_status tunep_bert_param_get(const struct tunep_bert *model, enum bert_param id, int layer,
                                 TUNEP_MR *dst, size_t n, tune_error *err);
tune_status tunep_bert_grad_get(const struct tunep_bert *model, enum bert_param id, int layer,
                                TUNEP_MR *dst, size_t n, tune_error *err);
/* The same for any of the four per-parameter arenas (params, grads, AdamW m
 * and v); n must be the element count of one layer of the tensor. */
tune_status tunep_bert_tensor_get(const struct tunep_bert *model, enum tunep_bert_arena arena,
                                  enum bert_param id, int layer, TUNEP_MR *dst, size_t n,
                                  tune_error *err);
tune_status tunep_bert_tensor_set(struct tunep_bert *model, enum tunep_bert_arena arena,
                                  enum bert_param id, int layer, const TUNEP_MR *src, size_t n,
                                  tune_error *err);
/* Copies the last forward's logits (B*K values) to host memory. */
tune_status tunep_bert_logits(const struct tunep_bert *model, TUNEP_MR *dst, size_t n,
                              tune_error *err);

/* Borrowed views, valid until the model is freed (activations: until the next
 * forward). */
const struct tunep_bert_config *tunep_bert_config_of(const struct tunep_bert *model);
/* The layout of the last forward's (B, T), or of (B_max, T_max) before any. */
const struct tunep_bert_layout *tunep_bert_layout_of(const struct tunep_bert *model);
const struct tunep_bert_params *tunep_bert_params_view(const struct tunep_bert *model);
const struct tunep_bert_params *tunep_bert_grads_view(const struct tunep_bert *model);
const struct tunep_bert_acts *tunep_bert_acts_view(const struct tunep_bert *model);
const struct tunep_bert_acts *tunep_bert_grad_acts_view(const struct tunep_bert *model);
/* Whole arenas (params, grads) of layout.param_total elements. */
TUNEP_MR *tunep_bert_params_arena(const struct tunep_bert *model);
TUNEP_MR *tunep_bert_grads_arena(const struct tunep_bert *model);
/* AdamW's moment arenas (m, v), as the params arena. */
TUNEP_MR *tunep_bert_adam_m_arena(const struct tunep_bert *model);
TUNEP_MR *tunep_bert_adam_v_arena(const struct tunep_bert *model);
/* AdamW steps taken since init (the bias-correction step t of the last step). */
long tunep_bert_step_count(const struct tunep_bert *model);
/* Sets the step count, as when resuming from a checkpoint: the next AdamW
 * step is step + 1. @return TUNE_EINVAL when step < 0. */
tune_status tunep_bert_set_step_count(struct tunep_bert *model, long step, tune_error *err);

#undef TUNEP_BERT_PARAM_PTR_ROW
#undef TUNEP_BERT_ACT_PTR_ROW
#undef TUNEP_MR
