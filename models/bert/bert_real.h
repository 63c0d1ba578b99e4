/*
 * bert_real.h - precision templating for the BERT model and its kernels.
 *
 * The model and the CPU kernels exist in float (production) and double
 * (finite-difference gradient checks), written once and instantiated twice,
 * as dav1d instantiates its DSP code per bit depth. A translation unit
 * compiled with -DTUNE_REAL=float|double names its functions through
 * TUNEP_RFN(); headers that declare both instances use TUNEP_HREAL instead,
 * so that they can be included from either compilation. The float instance
 * keeps the plain name (tunep_bert_forward), the double one gets "_f64".
 */
#ifndef TUNE_BERT_REAL_H
#define TUNE_BERT_REAL_H

#define TUNEP_CAT_(a, b) a##b
#define TUNEP_CAT(a, b)  TUNEP_CAT_(a, b)

#define TUNEP_REAL_SFX_float(name)  name
#define TUNEP_REAL_SFX_double(name) name##_f64

/* Name of `name` in the instance of type `real` (float or double). */
#define TUNEP_REAL_NAME(real, name) TUNEP_CAT(TUNEP_REAL_SFX_, real)(name)

#ifdef TUNE_REAL
/* In a template .c file: the instance being compiled. */
#define TUNEP_RFN(name) TUNEP_REAL_NAME(TUNE_REAL, name)
#endif

#endif /* TUNE_BERT_REAL_H */
