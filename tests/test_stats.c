/* Unit tests of core/stats: every expected value below is computed by hand
 * (or from a Student t table) and written next to the assertion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

#define EPS 1e-12

static void test_basic_five(void **state) {
  (void)state;
  const double x[] = {1, 2, 3, 4, 5};
  gs_stats s;
  assert_int_equal(gs_stats_compute(x, 5, &s), GS_OK);
  assert_int_equal(s.n, 5);
  assert_float_equal(s.sum, 15.0, EPS);
  assert_float_equal(s.mean, 3.0, EPS);
  assert_float_equal(s.median, 3.0, EPS);
  assert_float_equal(s.p50, 3.0, EPS);
  // sum of squared deviations 4+1+0+1+4 = 10, / (n-1) = 2.5
  assert_float_equal(s.stddev, sqrt(2.5), EPS);
  assert_float_equal(s.cv, sqrt(2.5) / 3.0, EPS);
  assert_float_equal(s.min, 1.0, EPS);
  assert_float_equal(s.max, 5.0, EPS);
  // h = 4 p / 100: p90 -> 3.6 -> 4 + 0.6; p95 -> 3.8; p99 -> 3.96
  assert_float_equal(s.p90, 4.6, EPS);
  assert_float_equal(s.p95, 4.8, EPS);
  assert_float_equal(s.p99, 4.96, EPS);
  // half width t(0.975, 4) * sqrt(2.5) / sqrt(5) = 2.776445105 * sqrt(0.5)
  double half = 2.776445105 * sqrt(0.5);
  assert_float_equal(s.ci95_low, 3.0 - half, 1e-9);
  assert_float_equal(s.ci95_high, 3.0 + half, 1e-9);
  // |x - 3| = 2,1,0,1,2 -> median 1
  assert_float_equal(s.mad, 1.0, EPS);
  assert_int_equal(s.outliers, 0);
  assert_int_equal(s.warnings, GS_STATS_WARN_FEW_SAMPLES | GS_STATS_WARN_NOISY);
}

static void test_even_count_median(void **state) {
  (void)state;
  const double x[] = {4, 1, 3, 2};
  gs_stats s;
  assert_int_equal(gs_stats_compute(x, 4, &s), GS_OK);
  assert_float_equal(s.median, 2.5, EPS);
  // h = 3 * 0.9 = 2.7 -> 3 + 0.7 * (4 - 3)
  assert_float_equal(s.p90, 3.7, EPS);
  // |x - 2.5| = 0.5,0.5,1.5,1.5 -> median 1.0
  assert_float_equal(s.mad, 1.0, EPS);
}

static void test_input_not_modified(void **state) {
  (void)state;
  double x[] = {5, 3, 9, 1, 7};
  const double copy[] = {5, 3, 9, 1, 7};
  gs_stats s;
  assert_int_equal(gs_stats_compute(x, 5, &s), GS_OK);
  assert_memory_equal(x, copy, sizeof x);
}

static void test_percentile_sorted(void **state) {
  (void)state;
  const double one[] = {7.0};
  assert_float_equal(gs_stats_percentile_sorted(one, 1, 0.0), 7.0, EPS);
  assert_float_equal(gs_stats_percentile_sorted(one, 1, 99.0), 7.0, EPS);
  const double x[] = {10, 20, 30, 40};
  assert_float_equal(gs_stats_percentile_sorted(x, 4, 0.0), 10.0, EPS);
  assert_float_equal(gs_stats_percentile_sorted(x, 4, 100.0), 40.0, EPS);
  // h = 3 * 0.25 = 0.75 -> 10 + 0.75 * 10
  assert_float_equal(gs_stats_percentile_sorted(x, 4, 25.0), 17.5, EPS);
  // out-of-range p is clamped; no data gives NaN
  assert_float_equal(gs_stats_percentile_sorted(x, 4, -5.0), 10.0, EPS);
  assert_float_equal(gs_stats_percentile_sorted(x, 4, 150.0), 40.0, EPS);
  assert_true(isnan(gs_stats_percentile_sorted(x, 0, 50.0)));
  assert_true(isnan(gs_stats_percentile_sorted(NULL, 4, 50.0)));
  assert_true(isnan(gs_stats_percentile_sorted(x, 4, NAN)));
}

static void test_t975(void **state) {
  (void)state;
  assert_float_equal(gs_stats_t975(1), 12.706, 1e-3);
  assert_float_equal(gs_stats_t975(2), 4.303, 1e-3);
  assert_float_equal(gs_stats_t975(10), 2.228, 1e-3);
  assert_float_equal(gs_stats_t975(30), 2.042, 1e-3);
  // series beyond the table: continuous with it and close to the normal 1.96
  assert_float_equal(gs_stats_t975(31), 2.0395, 1e-4);
  assert_float_equal(gs_stats_t975(100), 1.984, 1e-3);
  assert_float_equal(gs_stats_t975(1000), 1.962, 1e-3);
  assert_float_equal(gs_stats_t975(1000000), 1.95996, 1e-4);
  assert_true(gs_stats_t975(31) < gs_stats_t975(30));
  assert_true(isnan(gs_stats_t975(0)));
}

static void test_outlier_one_large(void **state) {
  (void)state;
  const double x[] = {1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.0, 1.02, 0.98, 10.0};
  gs_stats s;
  assert_int_equal(gs_stats_compute(x, 10, &s), GS_OK);
  // sorted middle pair 1.0, 1.0; deviations' middle pair 0.02, 0.05
  assert_float_equal(s.median, 1.0, EPS);
  assert_float_equal(s.mad, 0.035, 1e-12);
  // 0.6745 * 9 / 0.035 = 173 > 3.5; the next largest, 0.6745 * 0.1 / 0.035 = 1.9
  assert_int_equal(s.outliers, 1);
  assert_true(s.warnings & GS_STATS_WARN_OUTLIERS);
  assert_float_equal(s.max, 10.0, EPS);
}

static void test_outlier_mad_zero(void **state) {
  (void)state;
  // MAD = 0: the fallback scale 1.2533 * mean|x - median| = 1.2533 / 7;
  // the 2 has score 7 / 1.2533 = 5.6 > 3.5
  const double lone[] = {1, 1, 1, 1, 1, 1, 2};
  gs_stats s;
  assert_int_equal(gs_stats_compute(lone, 7, &s), GS_OK);
  assert_float_equal(s.mad, 0.0, EPS);
  assert_int_equal(s.outliers, 1);
  // three 2s: mean deviation 3/7, score 7 / (3 * 1.2533) = 1.9
  const double three[] = {1, 1, 1, 1, 2, 2, 2};
  assert_int_equal(gs_stats_compute(three, 7, &s), GS_OK);
  assert_int_equal(s.outliers, 0);
  // all equal: no spread at all, no outliers
  const double same[] = {2, 2, 2, 2};
  assert_int_equal(gs_stats_compute(same, 4, &s), GS_OK);
  assert_int_equal(s.outliers, 0);
  assert_float_equal(s.stddev, 0.0, EPS);
  assert_float_equal(s.cv, 0.0, EPS);
  assert_float_equal(s.ci95_low, 2.0, EPS);
  assert_float_equal(s.ci95_high, 2.0, EPS);
}

static void test_single_sample(void **state) {
  (void)state;
  const double x[] = {0.5};
  gs_stats s;
  assert_int_equal(gs_stats_compute(x, 1, &s), GS_OK);
  assert_int_equal(s.n, 1);
  assert_float_equal(s.mean, 0.5, EPS);
  assert_float_equal(s.median, 0.5, EPS);
  assert_float_equal(s.p99, 0.5, EPS);
  assert_float_equal(s.stddev, 0.0, EPS);
  assert_float_equal(s.cv, 0.0, EPS);
  assert_float_equal(s.ci95_low, 0.5, EPS);
  assert_float_equal(s.ci95_high, 0.5, EPS);
  assert_float_equal(s.mad, 0.0, EPS);
  assert_int_equal(s.outliers, 0);
  assert_int_equal(s.warnings, GS_STATS_WARN_FEW_SAMPLES);
}

static void test_rejects_bad_input(void **state) {
  (void)state;
  const double x[] = {1.0, NAN, 2.0};
  const double inf[] = {1.0, INFINITY};
  gs_stats s;
  gs_clear_error();
  assert_int_equal(gs_stats_compute(x, 0, &s), GS_ERR_USAGE);
  assert_non_null(strstr(gs_last_error(), "no samples"));
  assert_int_equal(gs_stats_compute(NULL, 3, &s), GS_ERR_USAGE);
  assert_int_equal(gs_stats_compute(x, 3, &s), GS_ERR_USAGE);
  assert_non_null(strstr(gs_last_error(), "sample 2 of 3"));
  assert_int_equal(gs_stats_compute(inf, 2, &s), GS_ERR_USAGE);
  const double huge[] = {1.7e308, 1.7e308};
  assert_int_equal(gs_stats_compute(huge, 2, &s), GS_ERR_USAGE);
}

static void test_variance_large_offset(void **state) {
  (void)state;
  // the classic cancellation case: 1e9 + {4, 7, 13, 16} has variance 30
  const double x[] = {1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16};
  gs_stats s;
  assert_int_equal(gs_stats_compute(x, 4, &s), GS_OK);
  assert_float_equal(s.mean, 1e9 + 10, 1e-6);
  assert_float_equal(s.stddev, sqrt(30.0), 1e-6);
}

static void test_warnings(void **state) {
  (void)state;
  double x[20];
  gs_stats s;
  char text[256];

  // steady and long enough: no warnings, empty text
  for (int i = 0; i < 20; i++) x[i] = 0.01;
  assert_int_equal(gs_stats_compute(x, 20, &s), GS_OK);
  assert_int_equal(s.warnings, 0);
  gs_stats_describe_warnings(&s, text, sizeof text);
  assert_string_equal(text, "");

  // 20 x 0.1 ms = 2 ms in total < 10 ms
  for (int i = 0; i < 20; i++) x[i] = 1e-4;
  assert_int_equal(gs_stats_compute(x, 20, &s), GS_OK);
  assert_int_equal(s.warnings, GS_STATS_WARN_SHORT);
  gs_stats_describe_warnings(&s, text, sizeof text);
  assert_non_null(strstr(text, "short"));

  // alternating 0.09 / 0.11: cv = 0.01 * sqrt(20/19) / 0.1 = 10.3% > 5%
  for (int i = 0; i < 20; i++) x[i] = i % 2 ? 0.11 : 0.09;
  assert_int_equal(gs_stats_compute(x, 20, &s), GS_OK);
  assert_float_equal(s.cv, 0.1 * sqrt(20.0 / 19.0), 1e-9);
  assert_int_equal(s.warnings, GS_STATS_WARN_NOISY);
  gs_stats_describe_warnings(&s, text, sizeof text);
  assert_non_null(strstr(text, "noisy (cv 10.3% > 5%)"));

  // few samples, noisy and short together, joined by "; "
  const double few[] = {1e-3, 2e-3, 3e-3};
  assert_int_equal(gs_stats_compute(few, 3, &s), GS_OK);
  assert_int_equal(s.warnings,
                   GS_STATS_WARN_FEW_SAMPLES | GS_STATS_WARN_NOISY | GS_STATS_WARN_SHORT);
  gs_stats_describe_warnings(&s, text, sizeof text);
  assert_non_null(strstr(text, "few samples (n 3 < 10); noisy"));
  assert_non_null(strstr(text, "; short"));

  // a tiny buffer is truncated, never overrun
  char small[8];
  gs_stats_describe_warnings(&s, small, sizeof small);
  assert_true(strlen(small) < sizeof small);
}

static void test_cold_start_ratio(void **state) {
  (void)state;
  assert_float_equal(gs_stats_cold_start_ratio(2.0, 0.5), 4.0, EPS);
  assert_float_equal(gs_stats_cold_start_ratio(1.0, 1.0), 1.0, EPS);
  assert_float_equal(gs_stats_cold_start_ratio(1.0, 0.0), 0.0, EPS);
  assert_float_equal(gs_stats_cold_start_ratio(1.0, -1.0), 0.0, EPS);
  assert_float_equal(gs_stats_cold_start_ratio(NAN, 1.0), 0.0, EPS);
}

static int ascending(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* gs_stats_sort against qsort: sizes below and above the insertion-sort
 * cut-off, negative numbers, zeros, duplicates and wide magnitudes. */
static void test_sort(void **state) {
  (void)state;
  static const size_t sizes[] = {0, 1, 2, 255, 256, 1000, 20001};
  uint64_t seed = 12345;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s];
    double *a = malloc((n + 1) * sizeof *a), *b = malloc((n + 1) * sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++) {
      seed = seed * 6364136223846793005u + 1442695040888963407u;
      double u = (double)(seed >> 11) / 9007199254740992.0;
      a[i] = i % 7 == 0 ? 0.0 : i % 5 == 0 ? a[i / 2] : (u - 0.3) * pow(10.0, (double)(i % 13) - 6);
      b[i] = a[i];
    }
    gs_stats_sort(a, n);
    qsort(b, n, sizeof *b, ascending);
    for (size_t i = 0; i < n; i++) assert_true(a[i] == b[i]);
    free(a);
    free(b);
  }
}

/* The median's distribution-free interval: none for no values; [min, max]
 * for 5 (l = floor(2.5 - 2.19) clamped to 1, u = ceil(5.69) clamped to 5);
 * for 1..25 in any order l = floor(12.5 - 4.9) = 7, u = ceil(18.4) = 19. */
static void test_median_interval(void **state) {
  (void)state;
  double m = 0.0, lo = 0.0, hi = 0.0;
  gs_stats_median_interval(NULL, 0, &m, &lo, &hi);
  assert_true(isnan(m) && isnan(lo) && isnan(hi));
  double five[] = {5, 1, 4, 2, 3};
  gs_stats_median_interval(five, 5, &m, &lo, &hi);
  assert_true(m == 3.0 && lo == 1.0 && hi == 5.0);
  assert_true(five[0] == 1.0 && five[4] == 5.0); /* sorted in place */
  double v[25];
  for (int i = 0; i < 25; i++) v[i] = (double)((i * 7) % 25 + 1);
  gs_stats_median_interval(v, 25, &m, &lo, &hi);
  assert_true(m == 13.0 && lo == 7.0 && hi == 19.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_basic_five),        cmocka_unit_test(test_even_count_median),
      cmocka_unit_test(test_input_not_modified), cmocka_unit_test(test_percentile_sorted),
      cmocka_unit_test(test_t975),              cmocka_unit_test(test_outlier_one_large),
      cmocka_unit_test(test_outlier_mad_zero),  cmocka_unit_test(test_single_sample),
      cmocka_unit_test(test_rejects_bad_input), cmocka_unit_test(test_variance_large_offset),
      cmocka_unit_test(test_warnings),          cmocka_unit_test(test_cold_start_ratio),
      cmocka_unit_test(test_sort),              cmocka_unit_test(test_median_interval),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
