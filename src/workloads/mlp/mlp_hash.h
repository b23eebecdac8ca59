/* Counter-based random numbers and exactly rounded float arithmetic shared
 * by the host (C) and the device (CUDA): the synthetic dataset, the initial
 * weights and the dropout masks are pure functions of (seed, counters), so
 * the CPU reference, every GPU and every split of a batch over ranks see the
 * same numbers bit for bit. Device code must not fuse a multiply and an add
 * here (nvcc contracts a*b+c into an FMA by default), hence GS_MLP_MUL and
 * GS_MLP_ADD. */
#ifndef GS_MLP_HASH_H
#define GS_MLP_HASH_H

#include <stdint.h>

#ifdef __CUDACC__
#define GS_MLP_HD static inline __host__ __device__
#else
#define GS_MLP_HD static inline
#endif

#ifdef __CUDA_ARCH__
#define GS_MLP_MUL(a, b) __fmul_rn((a), (b))
#define GS_MLP_ADD(a, b) __fadd_rn((a), (b))
#else
#define GS_MLP_MUL(a, b) ((a) * (b))
#define GS_MLP_ADD(a, b) ((a) + (b))
#endif

/* Streams of the hash, so that data, weights and dropout never share bits. */
enum { GS_MLP_STREAM_FEATURE = 1, GS_MLP_STREAM_TARGET = 2, GS_MLP_STREAM_COEFF = 3,
       GS_MLP_STREAM_WEIGHT = 4, GS_MLP_STREAM_DROPOUT = 5 };

/* splitmix64's finalizer over a + golden-ratio multiple of b. */
GS_MLP_HD uint64_t gs_mlp_mix(uint64_t a, uint64_t b) {
  uint64_t z = a + 0x9E3779B97F4A7C15ull * (b + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* The part of gs_mlp_hash that does not depend on j: a kernel that draws
 * many j for one i mixes it once. */
GS_MLP_HD uint64_t gs_mlp_hash_prefix(uint64_t seed, uint64_t stream, uint64_t i) {
  return gs_mlp_mix(gs_mlp_mix(seed, stream), i);
}

/* 64 random bits for (seed, stream, i, j). */
GS_MLP_HD uint64_t gs_mlp_hash(uint64_t seed, uint64_t stream, uint64_t i, uint64_t j) {
  return gs_mlp_mix(gs_mlp_hash_prefix(seed, stream, i), j);
}

/* Uniform in [0, 1): 24 random bits, exact in float. */
GS_MLP_HD float gs_mlp_uniform(uint64_t bits) { return (float)(bits >> 40) * 0x1p-24f; }

/* Roughly standard normal: sum of four uniforms (Irwin-Hall, variance 1/3)
 * scaled by sqrt(3); additions in a fixed order, so host and device agree. */
GS_MLP_HD float gs_mlp_normal(uint64_t seed, uint64_t stream, uint64_t i, uint64_t j) {
  float s = 0.0f;
  for (uint64_t k = 0; k < 4; k++)
    s = GS_MLP_ADD(s, gs_mlp_uniform(gs_mlp_hash(seed, stream, i, 4 * j + k)));
  return GS_MLP_MUL(GS_MLP_ADD(s, -2.0f), 1.7320508f);
}

/* The dropout hash's prefix for one row: hidden layer `layer`, the sample
 * at global batch position `pos` of optimizer step `step`. A kernel mixes
 * it once per row and only the column per element (gs_mlp_keep_in_row). */
GS_MLP_HD uint64_t gs_mlp_keep_row(uint64_t seed, uint64_t step, uint32_t layer, uint64_t pos) {
  return gs_mlp_hash_prefix(seed ^ (step * 0xD1B54A32D192ED03ull),
                            GS_MLP_STREAM_DROPOUT + 16u * layer, pos);
}

/* Dropout decision for element `col` of the row whose prefix is `row`:
 * non-zero means kept. */
GS_MLP_HD int gs_mlp_keep_in_row(uint64_t row, uint32_t col, float dropout) {
  return gs_mlp_uniform(gs_mlp_mix(row, col)) >= dropout;
}

/* Dropout decision for element `col` of the output of hidden layer `layer`
 * for the sample at global batch position `pos` of optimizer step `step`:
 * non-zero means kept. */
GS_MLP_HD int gs_mlp_keep(uint64_t seed, uint64_t step, uint32_t layer, uint64_t pos, uint32_t col,
                          float dropout) {
  return gs_mlp_keep_in_row(gs_mlp_keep_row(seed, step, layer, pos), col, dropout);
}

/* One value of the synthetic regression dataset (docs/workloads/mlp.md):
 * feature `f` of sample `n` when f < F, else target f - F. Features
 * 0 .. F - F/5 - 1 are independent normals; the last F/5 columns are
 * correlated copies (0.9 x[f - F/5] + 0.3 noise). Target t is a fixed
 * random linear map of the features (coefficients uniform in
 * [-1/16, 1/16)), plus 0.5 x[t] x[t+1] and 0.1 noise.
 * The same float operations in the same order on host and device. */
GS_MLP_HD float gs_mlp_feature(uint64_t seed, uint64_t n, uint32_t f, uint32_t F) {
  const uint32_t corr = F / 5, base = F - corr;
  if (f < base) return gs_mlp_normal(seed, GS_MLP_STREAM_FEATURE, n, f);
  const float src = gs_mlp_normal(seed, GS_MLP_STREAM_FEATURE, n, f - corr);
  const float noise = gs_mlp_normal(seed, GS_MLP_STREAM_FEATURE, n, f);
  return GS_MLP_ADD(GS_MLP_MUL(0.9f, src), GS_MLP_MUL(0.3f, noise));
}

GS_MLP_HD float gs_mlp_target(uint64_t seed, uint64_t n, uint32_t t, uint32_t F) {
  float y = 0.0f;
  for (uint32_t f = 0; f < F; f++) {
    const float c = GS_MLP_MUL(
        GS_MLP_ADD(gs_mlp_uniform(gs_mlp_hash(seed, GS_MLP_STREAM_COEFF, t, f)), -0.5f), 0.125f);
    y = GS_MLP_ADD(y, GS_MLP_MUL(c, gs_mlp_feature(seed, n, f, F)));
  }
  const float a = gs_mlp_feature(seed, n, t % F, F), b = gs_mlp_feature(seed, n, (t + 1) % F, F);
  y = GS_MLP_ADD(y, GS_MLP_MUL(0.5f, GS_MLP_MUL(a, b)));
  return GS_MLP_ADD(y, GS_MLP_MUL(0.1f, gs_mlp_normal(seed, GS_MLP_STREAM_TARGET, n, t)));
}

#endif
