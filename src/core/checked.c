/* Checked multiplication of 64-bit sizes and counts (core/checked.h). */
#include "core/checked.h"

int gs_mul_u64_overflows(uint64_t a, uint64_t b, uint64_t *product) {
  if (b != 0 && a > UINT64_MAX / b) {
    *product = UINT64_MAX;
    return 1;
  }
  *product = a * b;
  return 0;
}

int gs_product_u64_exceeds(const uint64_t *factors, size_t n, uint64_t limit,
                           uint64_t *product) {
  uint64_t p = 1;
  for (size_t i = 0; i < n; i++)
    if (gs_mul_u64_overflows(p, factors[i], &p)) {
      *product = UINT64_MAX;
      return 1;
    }
  *product = p;
  return p > limit;
}
