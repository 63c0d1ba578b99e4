/*
 * tpe.h - what search/tpe.c shows beyond searcher.h: its estimators, for
 * tests and diagnostics.
 */
#ifndef TUNE_TPE_H
#define TUNE_TPE_H

#include "search/searcher.h"

/*
 * The log-densities log l(v) and log g(v) of parameter `param` (its index in
 * the space) at value v, from the univariate estimators that the next
 * suggestion would fit now (log-masses of v's cell for integer and quantized
 * parameters, log-probabilities for choices). s must come from
 * tunep_tpe_new(). TUNE_EINVAL for a constant parameter or a value it cannot
 * place, TUNE_ENOMEM.
 */
tune_status tunep_tpe_log_densities(struct tunep_searcher *s, size_t param,
                                    const struct tunep_value *v, double *ret_log_l,
                                    double *ret_log_g);

#endif /* TUNE_TPE_H */
