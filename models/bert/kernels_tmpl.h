/*
 * kernels_tmpl.h - struct tunep_kernels: the math a BERT backend supplies.
 *
 * Included twice by backend.h, with TUNEP_HREAL set to float (struct
 * tunep_kernels) and to double (struct tunep_kernels_f64, the name
 * bert_f64.h gives it; CPU only, for gradient checks); no include guard on
 * purpose.
 *
 * Conventions: outputs first, then const inputs, then
 * dimensions; ctx is the backend's context (threads, stream, handles).
 * Every _bwd kernel ADDS (+=) into the parameter gradients it computes, so
 * callers zero them once and gradient accumulation is free, and WRITES (=)
 * the activation gradients it computes, each being that activation's first
 * (in the model, only) contribution: no caller zeroes them first. The one
 * activation gradient with two contributions, the residual stream's,
 * takes the second through matmul_bwd's accumulate. Pointers are backend memory; token ids, types,
 * masks and labels were validated by the caller. Kernels return TUNE_OK or TUNE_EDEVICE; the CPU
 * ones cannot fail. Dropout masks come from bert_rng.h, keyed by (seed, stream, element index): an
 * element is kept iff its 32-bit draw is >= tunep_dropout_threshold(p) and kept elements are scaled
 * by 1/(1-p); p == 0 is the identity.
 */
#define TUNEP_KR TUNEP_HREAL

struct tunep_kernels {
    /* out (B,T,C) = wte[ids] + wpe[t] + wtt[types]; wte (V,C), wpe (P,C) with
     * P >= T, wtt (TV,C); ids, types (B,T). */
    tune_status (*embed_fwd)(void *ctx, TUNEP_KR *out, const int32_t *ids, const int32_t *types,
                             const TUNEP_KR *wte, const TUNEP_KR *wpe, const TUNEP_KR *wtt, int B,
                             int T, int C);
    tune_status (*embed_bwd)(void *ctx, TUNEP_KR *dwte, TUNEP_KR *dwpe, TUNEP_KR *dwtt,
                             const TUNEP_KR *dout, const int32_t *ids, const int32_t *types, int B,
                             int T, int C);

    /* LayerNorm over the last axis of N rows of C (torch.nn.LayerNorm, biased
     * variance): out (N,C); mean, rstd (N) saved for bwd. */
    tune_status (*layernorm_fwd)(void *ctx, TUNEP_KR *out, TUNEP_KR *mean, TUNEP_KR *rstd,
                                 const TUNEP_KR *inp, const TUNEP_KR *w, const TUNEP_KR *b, int N,
                                 int C, double eps);
    tune_status (*layernorm_bwd)(void *ctx, TUNEP_KR *dinp, TUNEP_KR *dw, TUNEP_KR *db,
                                 const TUNEP_KR *dout, const TUNEP_KR *inp, const TUNEP_KR *w,
                                 const TUNEP_KR *mean, const TUNEP_KR *rstd, int N, int C);

    /* torch.nn.Linear: out (N,OC) = inp (N,IC) . w^T + b, w (OC,IC) row-major
     * as in Hugging Face checkpoints, b (OC) or NULL. */
    tune_status (*matmul_fwd)(void *ctx, TUNEP_KR *out, const TUNEP_KR *inp, const TUNEP_KR *w,
                              const TUNEP_KR *b, int N, int IC, int OC);
    /* dinp (N,IC) or NULL, written, or added into when accumulate != 0;
     * dw (OC,IC), db (OC) or NULL. */
    tune_status (*matmul_bwd)(void *ctx, TUNEP_KR *dinp, TUNEP_KR *dw, TUNEP_KR *db,
                              const TUNEP_KR *dout, const TUNEP_KR *inp, const TUNEP_KR *w, int N,
                              int IC, int OC, int accumulate);

    /* Multi-head self-attention core, heads of HS = C/NH channels:
     * q, k, v (B,T,C) with rows ld >= C elements apart (ld = 3C reads them
     * off one (B,T,3C) query/key/value projection), out (B,T,C); att (B,NH,T,T) softmax
     * probabilities before dropout; att_drop (B,NH,T,T) after dropout (unused when p == 0); mask
     * (B,T): 1 = real token, 0 = padding key. Masked keys get probability 0; a row with no valid
     * key is uniform, as Hugging Face's additive finfo.min mask gives. out = att_drop . v per head.
     * Dropout element index: position in att_drop. */
    tune_status (*attention_fwd)(void *ctx, TUNEP_KR *out, TUNEP_KR *att, TUNEP_KR *att_drop,
                                 const TUNEP_KR *q, const TUNEP_KR *k, const TUNEP_KR *v,
                                 const int32_t *mask, int B, int T, int C, int NH, int ld, double p,
                                 uint64_t seed, uint64_t stream);
    /* dq, dk, dv with rows ld apart as q, k, v; dout (B,T,C); dpreatt
     * (B,NH,T,T) receives the gradient of the scaled scores; datt,
     * datt_drop are the gradients of att and att_drop (datt_drop is unused
     * when p == 0). */
    tune_status (*attention_bwd)(void *ctx, TUNEP_KR *dq, TUNEP_KR *dk, TUNEP_KR *dv,
                                 TUNEP_KR *dpreatt, TUNEP_KR *datt, TUNEP_KR *datt_drop,
                                 const TUNEP_KR *dout, const TUNEP_KR *q, const TUNEP_KR *k,
                                 const TUNEP_KR *v, const TUNEP_KR *att, const TUNEP_KR *att_drop,
                                 const int32_t *mask, int B, int T, int C, int NH, int ld, double p,
                                 uint64_t seed, uint64_t stream);

    /* GELU, erf form as BERT uses: out = x/2 (1 + erf(x/sqrt 2)); n elements. */
    tune_status (*gelu_fwd)(void *ctx, TUNEP_KR *out, const TUNEP_KR *inp, size_t n);
    tune_status (*gelu_bwd)(void *ctx, TUNEP_KR *dinp, const TUNEP_KR *dout, const TUNEP_KR *inp,
                            size_t n);

    /* Cross-entropy per example: losses (B) = logsumexp(logits) - logit[label];
     * probs (B,K) saved for bwd; logits (B,K); labels (B). */
    tune_status (*softmax_xent_fwd)(void *ctx, TUNEP_KR *losses, TUNEP_KR *probs,
                                    const TUNEP_KR *logits, const int32_t *labels, int B, int K);
    /* dlogits (B,K) = dlosses[b] * (probs - onehot(label)). */
    tune_status (*softmax_xent_bwd)(void *ctx, TUNEP_KR *dlogits, const TUNEP_KR *dlosses,
                                    const TUNEP_KR *probs, const int32_t *labels, int B, int K);

    /* BERT pooler on the first token: pre (B,C) = inp[:,0,:] . w^T + b,
     * out (B,C) = tanh(pre); inp (B,T,C), w (C,C), b (C). */
    tune_status (*pooler_fwd)(void *ctx, TUNEP_KR *out, TUNEP_KR *pre, const TUNEP_KR *inp,
                              const TUNEP_KR *w, const TUNEP_KR *b, int B, int T, int C);
    /* dpre (B,C) receives the gradient of pre; dinp (B,T,C) the gradient at
     * t = 0 and 0 at every other position. */
    tune_status (*pooler_bwd)(void *ctx, TUNEP_KR *dinp, TUNEP_KR *dw, TUNEP_KR *db, TUNEP_KR *dpre,
                              const TUNEP_KR *dout, const TUNEP_KR *out, const TUNEP_KR *inp,
                              const TUNEP_KR *w, int B, int T, int C);

    /* out (n) = dropout(inp) + res, res NULL for none (the residual of a
     * post-LN block is fused here). */
    tune_status (*dropout_fwd)(void *ctx, TUNEP_KR *out, const TUNEP_KR *inp, const TUNEP_KR *res,
                               size_t n, double p, uint64_t seed, uint64_t stream);
    /* dinp = mask * dout / (1-p); dres = dout unless dres is NULL. */
    tune_status (*dropout_bwd)(void *ctx, TUNEP_KR *dinp, TUNEP_KR *dres, const TUNEP_KR *dout,
                               size_t n, double p, uint64_t seed, uint64_t stream);

    /* torch.optim.AdamW on n elements with the gradient scaled by grad_scale
     * (clipping): param *= 1 - lr wd; m, v moments; bias correction at step
     * t >= 1; param -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps). Not a _bwd:
     * it overwrites param, m and v. */
    tune_status (*adamw_step)(void *ctx, TUNEP_KR *param, TUNEP_KR *m, TUNEP_KR *v,
                              const TUNEP_KR *grad, size_t n, double lr, double beta1, double beta2,
                              double eps, double weight_decay, double grad_scale, long step);
    /* *ret_sumsq = sum of g[i]^2 (accumulated in double), result on the host. */
    tune_status (*grad_sumsq)(void *ctx, double *ret_sumsq, const TUNEP_KR *g, size_t n);
};

#undef TUNEP_KR
