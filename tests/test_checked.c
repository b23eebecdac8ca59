/* Unit tests of core/checked: products that fit, that overflow 64 bits by
 * one, that wrap to zero (2^24 cubed, the --grid crash), zero factors, and
 * the limit of gs_product_u64_exceeds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/checked.h"

static void test_mul(void **state) {
  (void)state;
  uint64_t p = 7;
  assert_int_equal(gs_mul_u64_overflows(3, 5, &p), 0);
  assert_true(p == 15);
  assert_int_equal(gs_mul_u64_overflows(0, UINT64_MAX, &p), 0);
  assert_true(p == 0);
  assert_int_equal(gs_mul_u64_overflows(UINT64_MAX, 1, &p), 0);
  assert_true(p == UINT64_MAX);
  assert_int_equal(gs_mul_u64_overflows(UINT64_C(1) << 32, UINT64_C(1) << 31, &p), 0);
  assert_true(p == UINT64_C(1) << 63);
  assert_int_equal(gs_mul_u64_overflows(UINT64_C(1) << 32, UINT64_C(1) << 32, &p), 1);
  assert_true(p == UINT64_MAX);
  // The largest a for which a * 3 fits, and one more.
  assert_int_equal(gs_mul_u64_overflows(UINT64_MAX / 3, 3, &p), 0);
  assert_int_equal(gs_mul_u64_overflows(UINT64_MAX / 3 + 1, 3, &p), 1);
}

static void test_product(void **state) {
  (void)state;
  uint64_t p = 0;
  // 2^24 cubed is 2^72: wraps to 0 when multiplied unchecked.
  const uint64_t cube[] = {16777216, 16777216, 16777216};
  assert_true((uint64_t)(cube[0] * cube[1] * cube[2]) == 0);
  assert_int_equal(gs_product_u64_exceeds(cube, 3, UINT64_MAX, &p), 1);
  assert_true(p == UINT64_MAX);
  const uint64_t grid[] = {128, 128, 128};
  assert_int_equal(gs_product_u64_exceeds(grid, 3, UINT64_C(1) << 21, &p), 0);
  assert_true(p == UINT64_C(1) << 21);
  assert_int_equal(gs_product_u64_exceeds(grid, 3, (UINT64_C(1) << 21) - 1, &p), 1);
  assert_true(p == UINT64_C(1) << 21);
  assert_int_equal(gs_product_u64_exceeds(grid, 0, 1, &p), 0);
  assert_true(p == 1);
  // A zero factor after an overflowing pair: the overflow is still seen.
  const uint64_t wrap_then_zero[] = {UINT64_C(1) << 40, UINT64_C(1) << 40, 0};
  assert_int_equal(gs_product_u64_exceeds(wrap_then_zero, 3, UINT64_MAX, &p), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mul),
      cmocka_unit_test(test_product),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
