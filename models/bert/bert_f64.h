/*
 * bert_f64.h - every name of the double-precision instance of the BERT model
 * and its kernel table, one line each: the float name on the left, the
 * double one on the right.
 *
 * bert.c, bert_model_tmpl.h and kernels_tmpl.h are written once, with the
 * float names (struct tunep_bert, tunep_bert_forward, struct tunep_kernels).
 * The double instance (finite-difference gradient checks, CPU only) is the
 * same text read under the names below:
 * - bert.h and backend.h declare it by including the template between this
 *   file and bert_f64_end.h, which takes the names back;
 * - the double build of bert.c and of cpu_kernels_tmpl.c (-DTUNEP_F64)
 *   includes this file after its other headers, so that the same definitions
 *   come out as tunep_bert_forward_f64 and so on.
 * A name added to the templates goes here and into bert_f64_end.h; one left
 * out of either makes the float and double declarations collide, which the
 * compiler reports. No include guard on purpose.
 */

/* types */
#define tunep_bert        tunep_bert_f64
#define tunep_bert_params tunep_bert_params_f64
#define tunep_bert_acts   tunep_bert_acts_f64
#define tunep_kernels     tunep_kernels_f64

/* functions (bert.c) */
#define tunep_bert_new            tunep_bert_new_f64
#define tunep_bert_free           tunep_bert_free_f64
#define tunep_bert_init_weights   tunep_bert_init_weights_f64
#define tunep_bert_forward        tunep_bert_forward_f64
#define tunep_bert_backward       tunep_bert_backward_f64
#define tunep_bert_zero_grad      tunep_bert_zero_grad_f64
#define tunep_bert_adamw_step     tunep_bert_adamw_step_f64
#define tunep_bert_param_set      tunep_bert_param_set_f64
#define tunep_bert_param_get      tunep_bert_param_get_f64
#define tunep_bert_grad_get       tunep_bert_grad_get_f64
#define tunep_bert_tensor_get     tunep_bert_tensor_get_f64
#define tunep_bert_tensor_set     tunep_bert_tensor_set_f64
#define tunep_bert_logits         tunep_bert_logits_f64
#define tunep_bert_config_of      tunep_bert_config_of_f64
#define tunep_bert_layout_of      tunep_bert_layout_of_f64
#define tunep_bert_params_view    tunep_bert_params_view_f64
#define tunep_bert_grads_view     tunep_bert_grads_view_f64
#define tunep_bert_acts_view      tunep_bert_acts_view_f64
#define tunep_bert_grad_acts_view tunep_bert_grad_acts_view_f64
#define tunep_bert_params_arena   tunep_bert_params_arena_f64
#define tunep_bert_grads_arena    tunep_bert_grads_arena_f64
#define tunep_bert_adam_m_arena   tunep_bert_adam_m_arena_f64
#define tunep_bert_adam_v_arena   tunep_bert_adam_v_arena_f64
#define tunep_bert_step_count     tunep_bert_step_count_f64
#define tunep_bert_set_step_count tunep_bert_set_step_count_f64
