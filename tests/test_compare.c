/* Tests of `gpuscale compare`'s analysis (src/report/compare.c) on the
 * fixtures: a document against itself, against a copy 30% slower
 * (strong_slower.json: every sample x 1.3), and against a document with
 * nothing in common. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_fixture.h"
#include "report/compare/compare.h"
#include "core/rng.h"
#include "core/stats.h"
#include "report/analyze/quantile.h"

static void test_identical(void **state) {
  (void)state;
  gs_compare c;
  assert_int_equal(gs_compare_load(fixture("strong.json"), fixture("strong.json"), 0.05, 0.05, 0.05, &c),
                   GS_OK);
  // 1 rank: step, throughput, rank 0; 2 ranks: step, throughput, rank 0, rank 1.
  assert_int_equal(c.n_rows, 7);
  assert_int_equal(c.regressions, 0);
  for (size_t i = 0; i < c.n_rows; i++) {
    assert_true(c.rows[i].change == 0.0);
    assert_true(c.rows[i].test.p == 1.0);
    assert_int_equal(c.rows[i].verdict, GS_CHANGE_NOT_SIGNIFICANT);
  }
  gs_compare_free(&c);
}

static void test_regression(void **state) {
  (void)state;
  gs_compare c;
  assert_int_equal(
      gs_compare_load(fixture("strong.json"), fixture("strong_slower.json"), 0.05, 0.05, 0.05, &c), GS_OK);
  assert_int_equal(c.n_rows, 7);
  assert_int_equal(c.regressions, 7);
  const gs_compare_row *step1 = &c.rows[0];
  assert_string_equal(step1->metric, "step time");
  assert_int_equal(step1->world_size, 1);
  assert_true(fabs(step1->change - 0.3) < 1e-12);
  // U = 16 of 16 with ties: p = 0.028430 (worked out in test_ranktest.c).
  assert_true(fabs(step1->test.p - 0.028430) < 1e-6);
  assert_true(step1->ci_low > 0 && step1->ci_high > step1->ci_low);
  assert_float_equal(step1->detectable, (step1->ci_high - step1->ci_low) / 2.0, 1e-15);
  assert_float_equal(step1->min_p, 2.0 / 70.0, 1e-15);  // 4 against 4: 2 / C(8, 4)
  const gs_compare_row *thr = &c.rows[1];
  assert_string_equal(thr->metric, "throughput");
  assert_true(thr->higher_is_better);
  // The report's throughput, items / mean step, on both sides: exactly
  // 1/1.3 - 1 when every step is 1.3x (never the mean of per-step rates).
  assert_float_equal(thr->change, 1 / 1.3 - 1, 1e-12);
  assert_float_equal(thr->base_mean, c.base.series[0].rows[0].throughput, 1e-6);
  assert_float_equal(thr->new_mean, c.next.series[0].rows[0].throughput, 1e-6);
  assert_int_equal(thr->verdict, GS_CHANGE_REGRESSION);
  gs_compare_free(&c);

  // The other way round it is an improvement; with a 40% threshold neither.
  assert_int_equal(
      gs_compare_load(fixture("strong_slower.json"), fixture("strong.json"), 0.05, 0.05, 0.05, &c), GS_OK);
  assert_int_equal(c.regressions, 0);
  assert_int_equal(c.rows[0].verdict, GS_CHANGE_IMPROVEMENT);
  gs_compare_free(&c);
  assert_int_equal(
      gs_compare_load(fixture("strong.json"), fixture("strong_slower.json"), 0.05, 0.40, 0.05, &c), GS_OK);
  assert_int_equal(c.regressions, 0);
  assert_int_equal(c.rows[0].verdict, GS_CHANGE_WITHIN);
  gs_compare_free(&c);
}

static void test_mismatched(void **state) {
  (void)state;
  gs_compare c;
  assert_int_equal(gs_compare_load(fixture("strong.json"), fixture("weak.json"), 0.05, 0.05, 0.05, &c),
                   GS_ERR_FORMAT);
  assert_non_null(strstr(gs_last_error(), "share no measurement"));
  assert_non_null(strstr(gs_last_error(), "only in BASE: voxelize (backend cpu, scaling strong"));
  assert_non_null(strstr(gs_last_error(), "only in NEW: voxelize (backend cpu, scaling weak"));
  assert_int_equal(gs_compare_load(fixture("strong.json"), fixture("foreign.json"), 0.05, 0.05, 0.05, &c),
                   GS_ERR_FORMAT);
  assert_non_null(strstr(gs_last_error(), "foreign.json: unsupported schema"));
  // Partly shared: the shared part is compared and the rest noted.
  assert_int_equal(gs_compare_load(fixture("strong.json"), fixture("failed.json"), 0.05, 0.05, 0.05, &c),
                   GS_OK);
  assert_true(c.n_rows > 0);
  gs_compare_free(&c);
}

/* coll_slower.json: coll.json with the 16 MiB allreduce 40% slower. Rows
 * pair by message size; only the step time is compared per size. */
static void test_collective_sizes(void **state) {
  (void)state;
  gs_compare c;
  assert_int_equal(gs_compare_load(fixture("coll.json"), fixture("coll_slower.json"), 0.05, 0.05, 0.05, &c),
                   GS_OK);
  assert_int_equal(c.n_rows, 3);
  assert_string_equal(c.rows[1].metric, "allreduce 16 MiB float sum out-of-place");
  assert_true(fabs(c.rows[1].change - 0.4) < 1e-12);
  // 3 against 3 samples, all equal within each side: ties, so the normal
  // approximation: U = 9, var = 9/12 (7 - 48/30) = 4.05, z = 4/2.0125 = 1.9876,
  // p = 0.047. But of the C(6, 3) = 20 equally likely orders of 3 + 3
  // samples only the 2 most extreme are as far apart: no p below 2/20 = 0.1
  // exists, and the approximation's 0.047 is its error at n = 3. The
  // verdict is "undecidable", neither a regression nor "not significant".
  assert_true(fabs(c.rows[1].test.p - erfc(4.0 / sqrt(4.05) / sqrt(2.0))) < 1e-12);
  assert_float_equal(c.rows[1].min_p, 0.1, 1e-15);
  assert_int_equal(c.rows[1].verdict, GS_CHANGE_UNDECIDABLE);
  assert_int_equal(c.rows[0].verdict, GS_CHANGE_UNDECIDABLE);
  assert_int_equal(c.regressions, 0);
  assert_int_equal(c.undecidable, 3);
  gs_compare_free(&c);
}

/* coll_forms.json: coll.json with each size also measured in place, 3x
 * faster; coll_forms_reordered.json: the same, in-place rows first. Every
 * row pairs with its own form: no change. */
static void test_collective_forms(void **state) {
  (void)state;
  gs_compare c;
  assert_int_equal(
      gs_compare_load(fixture("coll_forms.json"), fixture("coll_forms.json"), 0.05, 0.05, 0.05, &c),
      GS_OK);
  assert_int_equal(c.n_rows, 6);
  assert_int_equal(c.regressions, 0);
  for (size_t i = 0; i < c.n_rows; i++) {
    assert_true(c.rows[i].change == 0.0);
    assert_int_equal(c.rows[i].verdict, GS_CHANGE_UNDECIDABLE);  // 3 samples a side
  }
  assert_string_equal(c.rows[0].metric, "allreduce 1 MiB float sum out-of-place");
  assert_string_equal(c.rows[1].metric, "allreduce 1 MiB float sum in-place");
  assert_int_equal(c.n_notes, 0);
  gs_compare_free(&c);

  // The same measurements in another order (in-place ones first) pair by
  // form, not by position.
  assert_int_equal(gs_compare_load(fixture("coll_forms.json"), fixture("coll_forms_reordered.json"),
                                   0.05, 0.05, 0.05, &c),
                   GS_OK);
  assert_int_equal(c.n_rows, 6);
  assert_int_equal(c.regressions, 0);
  for (size_t i = 0; i < c.n_rows; i++) assert_true(c.rows[i].change == 0.0);
  gs_compare_free(&c);

  // Against the out-of-place-only sweep the in-place rows are NEW's alone.
  assert_int_equal(gs_compare_load(fixture("coll.json"), fixture("coll_forms.json"), 0.05, 0.05, 0.05, &c),
                   GS_OK);
  assert_int_equal(c.n_rows, 3);
  assert_int_equal(c.regressions, 0);
  assert_int_equal(c.n_notes, 3);
  assert_non_null(strstr(c.notes[0], "only in NEW"));
  assert_non_null(strstr(c.notes[0], "in-place"));
  gs_compare_free(&c);
}

/* outlier_new.json: 19 of outlier_base.json's 20 step times 1 ms faster,
 * one a 1.2 s stall: the mean is +548%, yet the U test says NEW is faster
 * (U = 58.5 of 400). The verdict follows the test: an improvement by the
 * medians (-9.1%), never a regression. */
static void test_direction_from_test(void **state) {
  (void)state;
  gs_compare c;
  assert_int_equal(gs_compare_load(fixture("outlier_base.json"), fixture("outlier_new.json"), 0.05,
                                   0.05, 0.05, &c),
                   GS_OK);
  assert_int_equal(c.n_rows, 3);
  const gs_compare_row *step = &c.rows[0];
  assert_string_equal(step->metric, "step time");
  assert_true(fabs(step->change - 5.48) < 0.001);
  assert_true(step->test.p < 0.05);
  assert_int_equal(step->test.direction, -1);
  assert_true(step->median_change < -0.05);
  assert_int_equal(step->verdict, GS_CHANGE_IMPROVEMENT);
  assert_int_equal(c.rows[2].verdict, GS_CHANGE_IMPROVEMENT);  // rank 0 time
  assert_int_equal(c.regressions, 0);
  gs_compare_free(&c);
  // The other way round the test says NEW is slower: a regression.
  assert_int_equal(gs_compare_load(fixture("outlier_new.json"), fixture("outlier_base.json"), 0.05,
                                   0.05, 0.05, &c),
                   GS_OK);
  assert_int_equal(c.rows[0].verdict, GS_CHANGE_REGRESSION);
  assert_int_equal(c.regressions, 3);
  gs_compare_free(&c);
}

/* The bootstrap interval of a p99's change (tails.c) against what it must
 * give by construction: constant samples give exactly their ratio; the
 * same grid on both sides contains 1; a grid scaled by 1.2 gives an
 * interval around 1.2 that leaves 1 out; the same inputs the same bounds;
 * fewer than 2 samples none. */
static void test_percentile_interval(void **state) {
  (void)state;
  enum { N = 400 };
  static double a[N], b[N], c[N], d[N];
  for (int i = 0; i < N; i++) {
    a[i] = 2e-3;
    b[i] = 3e-3;
    c[i] = 1e-3 * (1.0 + (double)((i * 37) % N) / N);  // 1 .. 2 ms, shuffled
    d[i] = 1.2 * 1e-3 * (1.0 + (double)((i * 53) % N) / N);
  }
  double lo, hi, lo2, hi2;
  gs_report_percentile_interval(a, N, b, N, 99.0, &lo, &hi);
  assert_float_equal(lo, 1.5, 1e-12);
  assert_float_equal(hi, 1.5, 1e-12);
  gs_report_percentile_interval(c, N, c, N, 99.0, &lo, &hi);
  assert_true(lo < 1.0 && hi > 1.0 && hi - lo < 0.05);
  gs_report_percentile_interval(c, N, d, N, 99.0, &lo, &hi);
  assert_true(lo > 1.0 && lo < 1.2 && hi > 1.2 && hi < 1.3);
  gs_report_percentile_interval(c, N, d, N, 99.0, &lo2, &hi2);
  assert_true(lo == lo2 && hi == hi2);
  gs_report_percentile_interval(c, 1, d, N, 99.0, &lo, &hi);
  assert_true(isnan(lo) && isnan(hi));
}

/* The interval drawn by sorting every replicate (the definition) instead
 * of selecting its order statistics: the same draws (same seed) must give
 * the same bounds, ties and repeated values included. */
static void reference_interval(const double *a, size_t na, const double *b, size_t nb, double q,
                               double *lo, double *hi) {
  double *w = malloc((na > nb ? na : nb) * sizeof *w), *ratio = malloc(2000 * sizeof *ratio);
  gs_rng rng;
  gs_rng_seed(&rng, GS_STATS_BOOTSTRAP_SEED, 0);
  for (size_t r = 0; r < 2000; r++) {
    for (size_t i = 0; i < na; i++) w[i] = a[gs_rng_below(&rng, na)];
    gs_stats_sort(w, na);
    double pa = gs_stats_percentile_sorted(w, na, q);
    for (size_t i = 0; i < nb; i++) w[i] = b[gs_rng_below(&rng, nb)];
    gs_stats_sort(w, nb);
    ratio[r] = gs_stats_percentile_sorted(w, nb, q) / pa;
  }
  gs_stats_sort(ratio, 2000);
  *lo = gs_stats_percentile_sorted(ratio, 2000, 2.5);
  *hi = gs_stats_percentile_sorted(ratio, 2000, 97.5);
  free(w);
  free(ratio);
}

static void test_percentile_selection(void **state) {
  (void)state;
  enum { NA = 257, NB = 300 };
  static double a[NA], b[NB];
  for (int i = 0; i < NA; i++) a[i] = 1.0 + (double)((i * 7) % 13);  // 13 values, many ties
  for (int i = 0; i < NB; i++) b[i] = 0.5 + (double)((i * 11) % 97) / 10.0;
  const double qs[] = {50.0, 90.0, 99.0, 99.9};
  for (size_t k = 0; k < 4; k++) {
    double lo, hi, rlo, rhi;
    gs_report_percentile_interval(a, NA, b, NB, qs[k], &lo, &hi);
    reference_interval(a, NA, b, NB, qs[k], &rlo, &rhi);
    assert_true(lo == rlo && hi == rhi);
  }
}

/* Two ranks' throughput ratio from their summaries (analyze/quantile.c):
 * n 4, mean 2, sd 0.2 (cv 0.1) over n 9, mean 1, sd 0.3 (cv 0.3), ratio 2:
 * 2 exp(+-1.96 sqrt(0.01 / 4 + 0.09 / 9)) = 2 exp(+-0.2191347), worked by
 * hand; one sample or a request-based row: no interval. */
static void test_rank_ratio_interval(void **state) {
  (void)state;
  gs_report_rank a = {.n = 4, .mean = 2.0, .stddev = 0.2};
  gs_report_rank b = {.n = 9, .mean = 1.0, .stddev = 0.3};
  double lo, hi;
  gs_report_rank_ratio_interval(&a, &b, 2.0, &lo, &hi);
  assert_float_equal(lo, 2.0 * exp(-0.21913466), 1e-7);
  assert_float_equal(hi, 2.0 * exp(0.21913466), 1e-7);
  b.n = 1;
  gs_report_rank_ratio_interval(&a, &b, 2.0, &lo, &hi);
  assert_true(isnan(lo) && isnan(hi));
  // The spread of a row: fastest over slowest; none for request-based rows.
  gs_report_rank ranks[2] = {{.n = 4, .mean = 2.0, .stddev = 0.2, .throughput = 0.5},
                             {.n = 9, .mean = 1.0, .stddev = 0.3, .throughput = 1.0}};
  gs_report_row row = {.n_ranks = 2, .ranks = ranks, .spread_ratio = 2.0};
  gs_report_spread_interval(&row, &lo, &hi);
  assert_float_equal(lo, 2.0 * exp(-0.21913466), 1e-7);
  row.requests.present = 1;
  gs_report_spread_interval(&row, &lo, &hi);
  assert_true(isnan(lo));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_identical),
      cmocka_unit_test(test_regression),
      cmocka_unit_test(test_mismatched),
      cmocka_unit_test(test_collective_sizes),
      cmocka_unit_test(test_collective_forms),
      cmocka_unit_test(test_direction_from_test),
      cmocka_unit_test(test_percentile_interval),
      cmocka_unit_test(test_rank_ratio_interval),
      cmocka_unit_test(test_percentile_selection),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
