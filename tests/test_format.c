/* Unit tests of core/format, the one unit rule: a column of microsecond
 * kernels reads "8.13 us" (never "0.008 ms"), 3 significant digits for the
 * smallest value, a unit per value where a column spans too many decades,
 * binary prefixes for sizes, zero, missing values, no e-notation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "core/format.h"

static void check_column(gs_unit_kind kind, const double *v, size_t n, const char *const *want) {
  gs_unit u = gs_unit_for(kind, v, n);
  for (size_t i = 0; i < n; i++) {
    char buf[64];
    gs_unit_format(&u, v[i], buf, sizeof buf);
    assert_string_equal(buf, want[i]);
  }
}

static void test_one_unit_per_column(void **state) {
  (void)state;
  const double kernels[] = {8.13e-6, 9.6e-6, 12.4e-6};
  const char *const k[] = {"8.13 us", "9.60 us", "12.40 us"};
  check_column(GS_UNIT_SECONDS, kernels, 3, k);
  const double steps[] = {0.0125, 0.010};
  const char *const st[] = {"12.5 ms", "10.0 ms"};
  check_column(GS_UNIT_SECONDS, steps, 2, st);
  const double rates[] = {8e7, 1.6e8};
  const char *const r[] = {"80.0 M", "160.0 M"};
  check_column(GS_UNIT_RATE, rates, 2, r);
  const double bw[] = {5e10, 1.2e11, 1.8e11};
  const char *const b[] = {"50.0 GB/s", "120.0 GB/s", "180.0 GB/s"};
  check_column(GS_UNIT_BANDWIDTH, bw, 3, b);
}

static void test_per_value_when_wide(void **state) {
  (void)state;
  // 8 B to 128 MiB: no one unit reads well, each value gets its own.
  const double sizes[] = {8, 1024, 16777216, 134217728};
  const char *const s[] = {"8 B", "1 KiB", "16 MiB", "128 MiB"};
  check_column(GS_UNIT_BYTES, sizes, 4, s);
  const double bw[] = {9e7, 1.65e11};
  const char *const b[] = {"90.0 MB/s", "165 GB/s"};
  check_column(GS_UNIT_BANDWIDTH, bw, 2, b);
  const double mem[] = {1.5 * 1073741824.0, 2.0 * 1073741824.0};
  const char *const m[] = {"1.50 GiB", "2.00 GiB"};
  check_column(GS_UNIT_BYTES, mem, 2, m);
}

static void test_zero_missing_and_no_e_notation(void **state) {
  (void)state;
  const double v[] = {0.0, NAN, 2e-3, INFINITY};
  const char *const w[] = {"0", "-", "2.00 ms", "-"};
  check_column(GS_UNIT_SECONDS, v, 4, w);
  char buf[64];
  gs_format_seconds(3e-10, buf, sizeof buf);
  assert_string_equal(buf, "0.300 ns");
  gs_format_seconds(1234.5, buf, sizeof buf);
  assert_string_equal(buf, "1234 s");
  assert_null(strchr(buf, 'e'));
  gs_format_rate(1.296e10, buf, sizeof buf);
  assert_string_equal(buf, "13.0 G");
  gs_format_rate(512, buf, sizeof buf);
  assert_string_equal(buf, "512 ");  // a space where the prefix goes
  gs_format_rate(0.0, buf, sizeof buf);
  assert_string_equal(buf, "-");
  gs_format_value(GS_UNIT_BYTES, 268435456, buf, sizeof buf);
  assert_string_equal(buf, "256 MiB");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_unit_per_column),
      cmocka_unit_test(test_per_value_when_wide),
      cmocka_unit_test(test_zero_missing_and_no_e_notation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
