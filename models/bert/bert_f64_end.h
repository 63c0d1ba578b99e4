/*
 * bert_f64_end.h - takes back every name bert_f64.h gave the double
 * instance, so that what follows sees the float names again. The same
 * list, in the same order. No include guard on purpose.
 */

/* types */
#undef tunep_bert
#undef tunep_bert_params
#undef tunep_bert_acts
#undef tunep_kernels

/* functions (bert.c) */
#undef tunep_bert_new
#undef tunep_bert_free
#undef tunep_bert_init_weights
#undef tunep_bert_forward
#undef tunep_bert_backward
#undef tunep_bert_zero_grad
#undef tunep_bert_adamw_step
#undef tunep_bert_param_set
#undef tunep_bert_param_get
#undef tunep_bert_grad_get
#undef tunep_bert_tensor_get
#undef tunep_bert_tensor_set
#undef tunep_bert_logits
#undef tunep_bert_config_of
#undef tunep_bert_layout_of
#undef tunep_bert_params_view
#undef tunep_bert_grads_view
#undef tunep_bert_acts_view
#undef tunep_bert_grad_acts_view
#undef tunep_bert_params_arena
#undef tunep_bert_grads_arena
#undef tunep_bert_adam_m_arena
#undef tunep_bert_adam_v_arena
#undef tunep_bert_step_count
#undef tunep_bert_set_step_count
