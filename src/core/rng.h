/* Small deterministic random numbers for generated workload data:
 * splitmix64 for seeding and xoshiro256** for the stream. A generator is
 * seeded from (seed, stream) only, so data for work unit k is the same on
 * every rank and every split of the work. Not for cryptography. */
#ifndef GS_RNG_H
#define GS_RNG_H

#include <stdint.h>

typedef struct {
  uint64_t s[4];
} gs_rng;

/* Advances *state by one splitmix64 step and returns the mixed output. */
uint64_t gs_splitmix64(uint64_t *state);

/* Seeds `rng` from a run seed and a stream number (e.g. a cloud index).
 * Different (seed, stream) pairs give independent-looking sequences; the
 * same pair always gives the same sequence. */
void gs_rng_seed(gs_rng *rng, uint64_t seed, uint64_t stream);

/* Next 64 random bits (xoshiro256**). */
uint64_t gs_rng_next(gs_rng *rng);

/* Uniform float in [0, 1) with 24 random bits (multiples of 2^-24). */
float gs_rng_float(gs_rng *rng);

/* Uniform double in [0, 1) with 53 random bits (multiples of 2^-53). */
double gs_rng_double(gs_rng *rng);

/* Uniform integer in [0, bound) without modulo bias; bound must be >= 1. */
uint64_t gs_rng_below(gs_rng *rng, uint64_t bound);

#endif
