/*
 * qmc.h - the scrambled Sobol sequence that the Sobol searcher and the GP's
 * start-up design share (search/qmc.c). Private to search/.
 */
#ifndef TUNE_QMC_H
#define TUNE_QMC_H

#include <stdint.h>

#include <gsl/gsl_qrng.h>

#include "base/base.h"

/* GSL's Sobol tables stop at 40 dimensions and 2^30 - 1 points. */
#define TUNEP_SOBOL_MAX_DIMS   40
#define TUNEP_SOBOL_MAX_POINTS ((int64_t)(1 << 30) - 1)

struct tunep_sobol_seq {
    gsl_qrng q;    /* built over our own allocation, so OOM is an error, not GSL's abort */
    unsigned dims; /* 0: an empty design, nothing allocated */
    int64_t next;  /* index of the point gsl_qrng_get() returns next */
    int scramble;
    uint64_t shift[TUNEP_SOBOL_MAX_DIMS]; /* digital shift per dimension, 53 bits */
};

/* dims in [0, 40]; TUNE_ECONFIG beyond, TUNE_ENOMEM. */
tune_status tunep_sobol_seq_init(struct tunep_sobol_seq *s, size_t dims, int scramble,
                                 uint64_t seed, tune_error *err);
/*
 * Point `index` (0-based) into u[dims]: GSL's index-th point, XORed with the
 * shift when scrambled. Indexes in increasing order cost one step each; going
 * back restarts the sequence. TUNE_EINVAL past TUNEP_SOBOL_MAX_POINTS.
 */
tune_status tunep_sobol_seq_point(struct tunep_sobol_seq *s, int64_t index, double *u,
                                  tune_error *err);
/* A fresh digital shift from seed (as init with scramble 1 makes it), back at point 0. */
void tunep_sobol_seq_rescramble(struct tunep_sobol_seq *s, uint64_t seed);
void tunep_sobol_seq_done(struct tunep_sobol_seq *s);

#endif /* TUNE_QMC_H */
