/*
 * rng.h - tunep_rng_xoshiro256: a GSL generator type with a 64-bit seed.
 *
 * GSL's generators take 32-bit seeds, so per-trial streams seeded from
 * (study seed, trial id) would collide after ~2^16 trials (birthday bound).
 * xoshiro256** (Blackman and Vigna 2018) seeded through splitmix64 gives
 * independent-looking streams for any 64-bit seed and is cheap to seed, so
 * every trial can own one. It plugs into gsl_rng, so all of GSL's
 * distributions (gsl_ran_gaussian, ...) draw from it.
 */
#ifndef TUNE_RNG_H
#define TUNE_RNG_H

#include <gsl/gsl_rng.h>

extern const gsl_rng_type *tunep_rng_xoshiro256;

#endif /* TUNE_RNG_H */
