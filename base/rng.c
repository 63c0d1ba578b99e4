/*
 * rng.c - per-trial random streams: splitmix64 seeding and a 64-bit-seeded
 * xoshiro256** registered as a gsl_rng_type (see rng.h for why).
 *
 * References: Steele, Lea, Flood, "Fast splittable pseudorandom number
 * generators" (splitmix64); Blackman, Vigna, "Scrambled linear pseudorandom
 * number generators" (xoshiro256**). GSL's gsl_rng_type contract: get()
 * returns integers in [min, max], get_double() a double in [0, 1).
 */
#include "base/rng.h"

#include "base/base.h"

uint64_t tunep_splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t tunep_trial_seed(uint64_t study_seed, int64_t trial_id, enum tunep_rng_purpose purpose)
{
    uint64_t h = tunep_splitmix64(study_seed);
    h = tunep_splitmix64(h ^ (uint64_t)trial_id);
    return tunep_splitmix64(h + (uint64_t)purpose);
}

struct xoshiro_state {
    uint64_t s[4];
};

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t next(struct xoshiro_state *st)
{
    uint64_t *s = st->s;
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

static void xoshiro_set(void *vstate, unsigned long seed)
{
    struct xoshiro_state *st = vstate;
    uint64_t x = (uint64_t)seed;
    for (int i = 0; i < 4; i++) {
        x += 0x9e3779b97f4a7c15ULL;
        st->s[i] = tunep_splitmix64(x);
    }
}

/* GSL wants unsigned long results; 32 bits keeps gsl_rng_uniform_int exact everywhere. */
static unsigned long xoshiro_get(void *vstate)
{
    return (unsigned long)(next(vstate) >> 32);
}

/* 53 random bits: every double in [0, 1) on a 2^-53 grid. */
static double xoshiro_get_double(void *vstate)
{
    return (double)(next(vstate) >> 11) * 0x1.0p-53;
}

static const gsl_rng_type xoshiro_type = {
    "tune-xoshiro256**", 0xffffffffUL, 0, sizeof(struct xoshiro_state),
    &xoshiro_set,        &xoshiro_get, &xoshiro_get_double,
};

const gsl_rng_type *tunep_rng_xoshiro256 = &xoshiro_type;
