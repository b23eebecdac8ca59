/* Checked arithmetic on sizes and counts: products of values that come
 * from the user (grid axes, points x features, batch x widths, units x
 * ranks) are computed here, so that an overflow is refused instead of
 * wrapping to a small number that passes a memory check. */
#ifndef GS_CHECKED_H
#define GS_CHECKED_H

#include <stddef.h>
#include <stdint.h>

/* Non-zero when a * b does not fit in 64 bits; otherwise 0 with
 * *product = a * b (*product is UINT64_MAX after an overflow). */
int gs_mul_u64_overflows(uint64_t a, uint64_t b, uint64_t *product);

/* Non-zero when the product of factors[0..n) is above `limit` (an overflow
 * of 64 bits counts as above); otherwise 0. *product receives the product,
 * or UINT64_MAX when it overflows. The empty product is 1. */
int gs_product_u64_exceeds(const uint64_t *factors, size_t n, uint64_t limit,
                           uint64_t *product);

#endif
