/* splitmix64 and xoshiro256** (Vigna, public domain algorithms), written
 * from their published definitions. */
#include "core/rng.h"

uint64_t gs_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void gs_rng_seed(gs_rng *rng, uint64_t seed, uint64_t stream) {
  // Mix the stream through its own splitmix step so that consecutive
  // streams do not start from consecutive splitmix states.
  uint64_t stream_state = stream ^ 0x6a09e667f3bcc909ULL;
  uint64_t state = seed ^ gs_splitmix64(&stream_state);
  for (int i = 0; i < 4; i++) rng->s[i] = gs_splitmix64(&state);
  // xoshiro must not start from the all-zero state.
  if ((rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3]) == 0) rng->s[0] = 1;
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t gs_rng_next(gs_rng *rng) {
  uint64_t *s = rng->s;
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

float gs_rng_float(gs_rng *rng) {
  return (float)(gs_rng_next(rng) >> 40) * (1.0f / 16777216.0f);
}

double gs_rng_double(gs_rng *rng) {
  return (double)(gs_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t gs_rng_below(gs_rng *rng, uint64_t bound) {
  // Reject the top partial bucket: values >= 2^64 - (2^64 mod bound).
  const uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    uint64_t r = gs_rng_next(rng);
    if (r >= threshold) return r % bound;
  }
}
