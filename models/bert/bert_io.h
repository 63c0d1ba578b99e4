/*
 * bert_io.h - BERT checkpoints: Hugging Face config.json and
 * model.safetensors in, trainer state (weights, AdamW moments, step count,
 * the trainer's own metadata) out and back in.
 *
 * All functions work on the float model (struct tunep_bert) through its
 * tensor accessors, so they serve any backend. Errors carry the file in
 * err->source (and line:column for config.json); codes: TUNE_ENOTFOUND (no
 * such file), TUNE_EIO (unreadable or malformed file), TUNE_ECONFIG (a valid
 * file that does not fit: bad config values, missing, unexpected or wrongly
 * shaped tensors), TUNE_EUNSUPPORTED (a checkpoint kind this build cannot
 * read), TUNE_ENOMEM, TUNE_EINVAL (programming errors), TUNE_EDEVICE (the
 * backend failed while copying).
 */
#ifndef TUNE_BERT_IO_H
#define TUNE_BERT_IO_H

#include "models/bert/bert.h"

/* The trainer-state format, recorded in the file's metadata ("format",
 * "format_version"); a reader refuses any other version. */
#define TUNEP_BERT_STATE_FORMAT  "tune.bert.state"
#define TUNEP_BERT_STATE_VERSION 1
/* Largest config.json read (Hugging Face configs are a few KiB). */
#define TUNEP_BERT_MAX_CONFIG_BYTES (1u << 20)

/*
 * Reads a Hugging Face BERT config.json (dir_or_file: a checkpoint folder or
 * the file itself) into *ret_cfg. Required: hidden_size, num_hidden_layers,
 * num_attention_heads, intermediate_size, max_position_embeddings,
 * vocab_size (integers). Optional, with BertConfig's defaults:
 * type_vocab_size (2), hidden_dropout_prob (0.1), attention_probs_dropout_prob
 * (0.1), layer_norm_eps (1e-12), hidden_act ("gelu", the only one accepted),
 * num_labels and/or id2label (labels; 2 when neither is there; they must
 * agree), model_type ("bert"), position_embedding_type ("absolute"). Other
 * keys are ignored, but a classifier_dropout other than null or
 * hidden_dropout_prob is logged as a warning (the model uses the latter). Errors name the file,
 * line:column and key, e.g. "config.json:3:18: hidden_size: expected an integer, got a string".
 * *ret_cfg is untouched on failure.
 */
tune_status tunep_bert_hf_config_load(const char *dir_or_file, struct tunep_bert_config *ret_cfg,
                                      tune_error *err);

/*
 * Loads the weights of a Hugging Face checkpoint (dir_or_file: a folder with
 * model.safetensors, or a .safetensors file; F32, F16, BF16 or F64 tensors)
 * into model. Names may carry the "bert." prefix (BertFor* checkpoints) or
 * not (BertModel); LayerNorm "gamma"/"beta" are read as "weight"/"bias" (old
 * TF-converted checkpoints). The classifier and the pooler are optional as
 * pairs: when a checkpoint has neither tensor of one, that part keeps its
 * current (random) initialisation and the fact is logged. Pretraining heads
 * (cls.*), the position_ids/token_type_ids buffers and AdamW moments of a
 * trainer state (adamw.*) are ignored. Any other tensor, a missing one, a
 * wrong shape or a non-float dtype is TUNE_ECONFIG naming the tensor, e.g.
 * "tensor 'bert.encoder.layer.1.attention.self.query.weight' has shape
 * [64, 128], expected [128, 128]". num_labels, when not 0, must equal the
 * model's label count (TUNE_EINVAL otherwise). Everything is validated before
 * the model is touched, so on failure the model is unchanged (except after a
 * TUNE_EDEVICE in the middle of the copy). AdamW state and the step count
 * are not changed.
 */
tune_status tunep_bert_load_hf(struct tunep_bert *model, const char *dir_or_file, int num_labels,
                               tune_error *err);

/*
 * Saves the trainer state to path (atomically: path.tmp, fsync, rename) as a
 * safetensors file of F32 tensors: the weights under their Hugging Face
 * names, AdamW's moments under "adamw.m.<name>" and "adamw.v.<name>", and
 * metadata "format", "format_version", "config" (JSON of the model config
 * with Hugging Face key names), "step" (AdamW steps taken) and, when
 * meta_json is not NULL, "trainer" = meta_json, stored as it is (the trainer's
 * epoch, position, RNG seeds, scheduler progress; valid UTF-8). The file is
 * also a Hugging Face checkpoint: tunep_bert_load_hf() reads its weights.
 */
tune_status tunep_bert_state_save(const struct tunep_bert *model, const char *path,
                                  const char *meta_json, tune_error *err);

/*
 * Restores a state written by tunep_bert_state_save() into model: weights,
 * both moments and the step count, bit for bit. The model must have the
 * saved config's dimensions (layers, sizes, vocabulary, labels: TUNE_ECONFIG
 * naming the first that differs); dropout rates and layer_norm_eps stay the
 * model's. *ret_meta_json (may be NULL) receives a copy of the "trainer"
 * metadata, or NULL when there was none; the caller frees it with
 * tune_free(). Validated before anything is written: on failure the model
 * and *ret_meta_json are unchanged (except after a TUNE_EDEVICE mid-copy).
 */
tune_status tunep_bert_state_load(struct tunep_bert *model, const char *path, char **ret_meta_json,
                                  tune_error *err);

#endif /* TUNE_BERT_IO_H */
