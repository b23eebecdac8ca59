/* Tests of the Mann-Whitney U test (core/ranktest) against values worked
 * out by hand from the definition; the exact cases are checked against the
 * published table of critical values for n1 = n2 = 5 (two-sided 5%: U <= 2,
 * e.g. Mann & Whitney 1947, Table I, and every statistics textbook's copy). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>

#include "core/ranktest.h"

static void assert_near(double expected, double actual, double tol) {
  if (fabs(expected - actual) > tol) {
    print_error("expected %.10g, got %.10g\n", expected, actual);
    fail();
  }
}

/* {4,5,6} against {1,2,3}: every pair favours the first sample, U = 9 of 9.
 * Of the C(6,3) = 20 equally likely arrangements one gives U = 9 and one
 * U = 0, so the two-sided p is 2/20 = 0.1. */
static void test_exact_complete_separation(void **state) {
  (void)state;
  const double a[] = {4, 5, 6}, b[] = {1, 2, 3};
  gs_ranktest t;
  assert_int_equal(gs_ranktest_mann_whitney(a, 3, b, 3, &t), GS_OK);
  assert_true(t.exact);
  assert_near(9.0, t.u, 0);
  assert_near(0.1, t.p, 1e-15);
  assert_int_equal(gs_ranktest_mann_whitney(b, 3, a, 3, &t), GS_OK);
  assert_near(0.0, t.u, 0);
  assert_near(0.1, t.p, 1e-15);
}

/* n1 = n2 = 5 (C(10,5) = 252 arrangements). The counts of U = 0, 1, 2, 3
 * are 1, 1, 2, 3 (partitions of U into at most 5 parts of at most 5), so
 * P(U <= 2) = 4/252 and P(U <= 3) = 7/252: two-sided p = 8/252 = 0.0317 at
 * U = 2 (significant at 5%) and 14/252 = 0.0556 at U = 3 (not): the
 * table's critical value 2. */
static void test_exact_critical_value(void **state) {
  (void)state;
  const double b[] = {10, 20, 30, 40, 50};
  const double u2[] = {1, 2, 3, 4, 25};  // only 25 beats anything (10, 20): U = 2
  const double u3[] = {1, 2, 3, 4, 35};  // 35 beats 10, 20, 30: U = 3
  gs_ranktest t;
  assert_int_equal(gs_ranktest_mann_whitney(u2, 5, b, 5, &t), GS_OK);
  assert_true(t.exact);
  assert_near(2.0, t.u, 0);
  assert_near(8.0 / 252.0, t.p, 1e-15);
  assert_int_equal(gs_ranktest_mann_whitney(u3, 5, b, 5, &t), GS_OK);
  assert_near(3.0, t.u, 0);
  assert_near(14.0 / 252.0, t.p, 1e-15);
}

/* With ties, the normal approximation. {12, 13, 12.5, 12.5} ms against the
 * same times x 1.3: no overlap, U = 16 of 16. Mean 8; tie groups of 2 in
 * each sample give sum(t^3 - t) = 12, so var = 16/12 (9 - 12/56) = 11.714286,
 * z = (8 - 0.5) / 3.4226139 = 2.1913 and p = erfc(z / sqrt 2) = 0.028430. */
static void test_normal_with_ties(void **state) {
  (void)state;
  const double a[] = {15.6, 16.9, 16.25, 16.25}, b[] = {12, 13, 12.5, 12.5};
  gs_ranktest t;
  assert_int_equal(gs_ranktest_mann_whitney(a, 4, b, 4, &t), GS_OK);
  assert_false(t.exact);
  assert_near(16.0, t.u, 0);
  assert_near(7.5 / sqrt(16.0 / 12.0 * (9.0 - 12.0 / 56.0)), t.z, 1e-12);
  assert_near(2.1913, t.z, 1e-4);
  assert_near(0.028430, t.p, 1e-6);
  // The medians come with the test: the mean of the two middle values.
  assert_near(16.25, t.median_a, 0);
  assert_near(12.5, t.median_b, 0);
  const double odd[] = {3, 1, 2};
  assert_int_equal(gs_ranktest_mann_whitney(odd, 3, b, 4, &t), GS_OK);
  assert_near(2.0, t.median_a, 0);
  assert_near(12.5, t.median_b, 0);
}

/* Large samples without ties also use the normal approximation: 25 values
 * 1..25 against 26..50 give U = 0, mean 312.5, var = 625 x 51 / 12 = 2656.25,
 * z = -(312.5 - 0.5) / 51.538820 = -6.0537, p = 1.4e-9. Identical samples
 * give U at its mean and p = 1. */
static void test_normal_large(void **state) {
  (void)state;
  double a[25], b[25];
  for (int i = 0; i < 25; i++) a[i] = i + 1, b[i] = i + 26;
  gs_ranktest t;
  assert_int_equal(gs_ranktest_mann_whitney(a, 25, b, 25, &t), GS_OK);
  assert_false(t.exact);
  assert_near(0.0, t.u, 0);
  assert_near(-312.0 / sqrt(2656.25), t.z, 1e-12);
  assert_near(erfc(312.0 / sqrt(2656.25) / sqrt(2.0)), t.p, 1e-20);
  assert_true(t.p < 2e-9 && t.p > 1e-9);
  assert_int_equal(gs_ranktest_mann_whitney(a, 25, a, 25, &t), GS_OK);
  assert_near(312.5, t.u, 0);
  assert_near(1.0, t.p, 0);
  const double same[] = {3, 3, 3};
  assert_int_equal(gs_ranktest_mann_whitney(same, 3, same, 3, &t), GS_OK);
  assert_near(1.0, t.p, 0);  // all tied: no evidence either way
}

static void test_bad_input(void **state) {
  (void)state;
  const double a[] = {1, NAN};
  gs_ranktest t;
  assert_int_equal(gs_ranktest_mann_whitney(a, 0, a, 1, &t), GS_ERR_USAGE);
  assert_int_equal(gs_ranktest_mann_whitney(a, 2, a, 1, &t), GS_ERR_USAGE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exact_complete_separation), cmocka_unit_test(test_exact_critical_value),
      cmocka_unit_test(test_normal_with_ties),          cmocka_unit_test(test_normal_large),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
