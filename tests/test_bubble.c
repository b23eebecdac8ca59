/* Tests of core/bubble and the paired ratio interval of core/stats: the
 * interval against a brute-force enumeration of its bootstrap, closed
 * forms (pairs in a fixed ratio, the normal limit of a long run), the
 * bubble and the stage imbalance of hand-worked samples, the verdict
 * against (p-1)/m at its bounds, and the bubble's JSON members. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/bubble.h"
#include "core/stats.h"

/* The exact paired bootstrap distribution of two runs of three pairs:
 * every ordered draw of runs (4), then every ordered draw of pairs within
 * each drawn run (27 each), equally likely. */
static const double ra[2][3] = {{1.0, 2.5, 1.2}, {3.0, 0.5, 2.0}};
static const double rb[2][3] = {{2.0, 4.0, 3.0}, {5.0, 1.0, 3.5}};

static size_t enumerate(double *ratio) {
  size_t n = 0;
  for (int g0 = 0; g0 < 2; g0++)
    for (int g1 = 0; g1 < 2; g1++)
      for (int d0 = 0; d0 < 27; d0++)
        for (int d1 = 0; d1 < 27; d1++) {
          const int gs[2] = {g0, g1}, ds[2] = {d0, d1};
          double a = 0.0, b = 0.0;
          for (int k = 0; k < 2; k++)
            for (int j = 0, d = ds[k]; j < 3; j++, d /= 3) {
              a += ra[gs[k]][d % 3];
              b += rb[gs[k]][d % 3];
            }
          ratio[n++] = a / b;
        }
  return n;
}

/* The bounds must sit at the enumerated distribution's 2.5% and 97.5%
 * points: P(R < bound) <= q + tol and P(R <= bound) >= q - tol (the
 * Monte-Carlo error of a 2.5% level with 2000 replicates is 0.0035). */
static void assert_at_level(const double *r, size_t n, double bound, double q) {
  size_t below = 0, at_or_below = 0;
  for (size_t i = 0; i < n; i++) {
    below += r[i] < bound - 1e-12;
    at_or_below += r[i] <= bound + 1e-12;
  }
  assert_true((double)below / (double)n <= q + 0.015);
  assert_true((double)at_or_below / (double)n >= q - 0.015);
}

static void test_paired_against_enumeration(void **state) {
  (void)state;
  const gs_stats_group a[2] = {{ra[0], 3}, {ra[1], 3}}, b[2] = {{rb[0], 3}, {rb[1], 3}};
  double low, high;
  gs_stats_paired_ratio_interval(a, b, 2, &low, &high);
  double *r = malloc(4 * 27 * 27 * sizeof *r);
  assert_non_null(r);
  const size_t n = enumerate(r);
  assert_int_equal(n, 2916);
  assert_at_level(r, n, low, 0.025);
  assert_at_level(r, n, high, 0.975);
  free(r);
}

/* Pairs in a fixed ratio have no spread in it, however much each side
 * spreads (prefill and decode calls of very different lengths): [c, c],
 * where drawing the sides independently would spread widely. The same in
 * the normal limit of a run over 256 pairs (correlation 1). */
static void test_paired_fixed_ratio(void **state) {
  (void)state;
  double x[1000], y[1000];
  for (int i = 0; i < 1000; i++) {
    y[i] = i % 7 == 0 ? 20.0 : 1.0 + 0.01 * (i % 5);
    x[i] = 0.25 * y[i];
  }
  double low, high;
  gs_stats_group a = {x, 10}, b = {y, 10};
  gs_stats_paired_ratio_interval(&a, &b, 1, &low, &high);
  assert_float_equal(low, 0.25, 1e-12);
  assert_float_equal(high, 0.25, 1e-12);
  double ulow, uhigh;
  gs_stats_ratio_interval(&a, 1, &b, 1, &ulow, &uhigh);
  assert_true(uhigh - ulow > 0.1); /* the independent draws' spread */
  a.n = b.n = 1000;
  gs_stats_paired_ratio_interval(&a, &b, 1, &low, &high);
  assert_float_equal(low, 0.25, 1e-9);
  assert_float_equal(high, 0.25, 1e-9);
}

/* The normal limit: 1000 pairs, b constant 2, a alternating 1 and 3: the
 * ratio of means is 1 with standard error 0.5 / sqrt(1000). A negative
 * numerator is allowed; fewer than 2 pairs or no positive b give none. */
static void test_paired_normal_limit_and_edges(void **state) {
  (void)state;
  double x[1000], y[1000];
  for (int i = 0; i < 1000; i++) x[i] = i % 2 ? 3.0 : 1.0, y[i] = 2.0;
  gs_stats_group a = {x, 1000}, b = {y, 1000};
  double low, high;
  gs_stats_paired_ratio_interval(&a, &b, 1, &low, &high);
  const double half = 1.959964 * 0.5 / sqrt(1000.0);
  assert_float_equal(low, 1.0 - half, 0.004);
  assert_float_equal(high, 1.0 + half, 0.004);
  const double neg[2] = {-1.0, -3.0}, pos[2] = {1.0, 1.0};
  a = (gs_stats_group){neg, 2}, b = (gs_stats_group){pos, 2};
  gs_stats_paired_ratio_interval(&a, &b, 1, &low, &high);
  assert_float_equal(low, -3.0, 1e-12);
  assert_float_equal(high, -1.0, 1e-12);
  a.n = b.n = 1;
  gs_stats_paired_ratio_interval(&a, &b, 1, &low, &high);
  assert_true(isnan(low) && isnan(high));
  a = (gs_stats_group){pos, 2}, b = (gs_stats_group){neg, 2};
  gs_stats_paired_ratio_interval(&a, &b, 1, &low, &high);
  assert_true(isnan(low) && isnan(high));
}

/* Two stages, m = 4; run 0 of two samples, run 1 of one:
 *   busy  (s0, s1): (1.0, 2.0), (1.0, 2.0), (1.0, 2.0)
 *   idle  (s0, s1): (1.0, 0.5), (1.0, 0.5), (1.0, 0.5)
 * bubble = 4.5 / 9 = 0.5 against (p-1)/m = 0.25; the slowest stage is 1
 * and the imbalance 6 / 4.5 = 4/3; samples alike: intervals without
 * spread, and the verdict "above". */
static void test_bubble_hand_worked(void **state) {
  (void)state;
  const double busy[6] = {1.0, 2.0, 1.0, 2.0, 1.0, 2.0}, idle[6] = {1.0, 0.5, 1.0, 0.5, 1.0, 0.5};
  const size_t runs[2] = {2, 1};
  gs_bubble_samples in = {2, 4, 2, runs, busy, idle};
  gs_bubble b;
  assert_int_equal(gs_bubble_compute(&in, &b), GS_OK);
  assert_int_equal(b.samples, 3);
  assert_float_equal(b.bubble, 0.5, 1e-15);
  assert_float_equal(b.low, 0.5, 1e-12);
  assert_float_equal(b.high, 0.5, 1e-12);
  assert_float_equal(b.formula, 0.25, 1e-15);
  assert_int_equal(b.slowest, 1);
  assert_float_equal(b.imbalance, 4.0 / 3.0, 1e-15);
  assert_float_equal(b.imbalance_low, 4.0 / 3.0, 1e-12);
  assert_float_equal(b.imbalance_high, 4.0 / 3.0, 1e-12);
  assert_int_equal(b.verdict, GS_BUBBLE_ABOVE);
  // With the imbalance the formula gives (1 + 3 x 1/3) / 4 = 0.5: the
  // bubble exactly, so the imbalance explains the gap.
  assert_float_equal(b.expected, 0.5, 1e-15);
  assert_int_equal(b.expected_verdict, GS_BUBBLE_WITHIN);
  char text[448];
  gs_bubble_verdict_text(&b, text, sizeof text);
  assert_non_null(strstr(text, "above (p-1)/m"));
  assert_non_null(strstr(text, "(p-1 + (m-1)(imbalance-1))/m = 50.0%, and the bubble is within "
                               "15% of it: the imbalance explains the gap"));
  // A short buffer is cut, never overrun.
  char small[40];
  assert_int_equal(strlen(gs_bubble_verdict_text(&b, small, sizeof small)), sizeof small - 1);
}

/* The formula with the imbalance: (p-1)/m when balanced; the slowest
 * stage paces the m - 1 steady micro-batches otherwise. The P = 2, m = 16
 * row of bench/pipeline.sh on 4 x H100 (stage busy 11.5 and 12.2 ms a
 * step, rounded): 9.0% (9.1% from the unrounded times), against (p-1)/m 6.25%. */
static void test_bubble_expected(void **state) {
  (void)state;
  assert_float_equal(gs_bubble_expected(2, 4, 1.0), 0.25, 1e-15);
  assert_float_equal(gs_bubble_expected(4, 8, 1.0), 3.0 / 8.0, 1e-15);
  assert_float_equal(gs_bubble_expected(3, 1, 2.0), 2.0, 1e-15); /* one micro-batch: no steady state */
  const double imbalance = 12.2 / ((11.5 + 12.2) / 2);
  assert_float_equal(gs_bubble_expected(2, 16, imbalance), (1.0 + 15.0 * (imbalance - 1.0)) / 16,
                     1e-15);
  assert_true(fabs(gs_bubble_expected(2, 16, imbalance) - 0.0902) < 0.0005);
  assert_true(isnan(gs_bubble_expected(2, 4, NAN)));
}

/* With spread, the intervals are the paired bootstrap of the per-sample
 * sums (computed here independently of the module), and one sample has
 * none: inconclusive. No samples: NaN and unknown. */
static void test_bubble_interval_of_sums(void **state) {
  (void)state;
  const double busy[8] = {1.0, 1.1, 0.9, 1.2, 1.0, 0.8, 1.3, 1.2};
  const double idle[8] = {0.3, 0.2, 0.4, 0.1, 0.2, 0.5, 0.1, 0.3};
  const size_t runs[2] = {2, 2};
  gs_bubble_samples in = {2, 8, 2, runs, busy, idle};
  gs_bubble b;
  assert_int_equal(gs_bubble_compute(&in, &b), GS_OK);
  double si[4], sb[4], top[4], mean[4];
  for (int i = 0; i < 4; i++) {
    si[i] = idle[2 * i] + idle[2 * i + 1];
    sb[i] = busy[2 * i] + busy[2 * i + 1];
    top[i] = busy[2 * i + 1]; /* stage 1: 4.3 s against 4.2 */
    mean[i] = sb[i] / 2;
  }
  assert_int_equal(b.slowest, 1);
  assert_float_equal(b.bubble, 2.1 / 8.5, 1e-12);
  assert_float_equal(b.imbalance, 4.3 / 4.25, 1e-12);
  const gs_stats_group ga[2] = {{si, 2}, {si + 2, 2}}, gb[2] = {{sb, 2}, {sb + 2, 2}};
  const gs_stats_group gt[2] = {{top, 2}, {top + 2, 2}}, gm[2] = {{mean, 2}, {mean + 2, 2}};
  double low, high;
  gs_stats_paired_ratio_interval(ga, gb, 2, &low, &high);
  assert_float_equal(b.low, low, 1e-15);
  assert_float_equal(b.high, high, 1e-15);
  assert_true(low < b.bubble && b.bubble < high);
  gs_stats_paired_ratio_interval(gt, gm, 2, &low, &high);
  assert_float_equal(b.imbalance_low, low, 1e-15);
  assert_float_equal(b.imbalance_high, high, 1e-15);
  const size_t one[1] = {1};
  in = (gs_bubble_samples){2, 8, 1, one, busy, idle};
  assert_int_equal(gs_bubble_compute(&in, &b), GS_OK);
  assert_float_equal(b.bubble, 0.5 / 2.1, 1e-12);
  assert_true(isnan(b.low));
  assert_int_equal(b.verdict, GS_BUBBLE_INCONCLUSIVE);
  const size_t none[1] = {0};
  in = (gs_bubble_samples){3, 2, 1, none, busy, idle};
  assert_int_equal(gs_bubble_compute(&in, &b), GS_OK);
  assert_true(isnan(b.bubble) && isnan(b.imbalance));
  assert_float_equal(b.formula, 1.0, 1e-15);
  assert_int_equal(b.verdict, GS_BUBBLE_UNKNOWN);
}

/* The verdict at its bounds, formula 0.25: within [0.2125, 0.2875]. */
static void test_verdict_bounds(void **state) {
  (void)state;
  assert_int_equal(gs_bubble_verdict_of(0.25, 0.22, 0.28, 0.25), GS_BUBBLE_WITHIN);
  assert_int_equal(gs_bubble_verdict_of(0.25, 0.2125, 0.2875, 0.25), GS_BUBBLE_WITHIN);
  assert_int_equal(gs_bubble_verdict_of(0.25, 0.20, 0.28, 0.25), GS_BUBBLE_INCONCLUSIVE);
  assert_int_equal(gs_bubble_verdict_of(0.29, 0.27, 0.31, 0.25), GS_BUBBLE_INCONCLUSIVE);
  assert_int_equal(gs_bubble_verdict_of(0.30, 0.29, 0.31, 0.25), GS_BUBBLE_ABOVE);
  assert_int_equal(gs_bubble_verdict_of(0.15, 0.10, 0.20, 0.25), GS_BUBBLE_BELOW);
  assert_int_equal(gs_bubble_verdict_of(0.25, NAN, NAN, 0.25), GS_BUBBLE_INCONCLUSIVE);
  assert_int_equal(gs_bubble_verdict_of(NAN, NAN, NAN, 0.25), GS_BUBBLE_UNKNOWN);
  assert_string_equal(gs_bubble_verdict_name(GS_BUBBLE_WITHIN), "within 15%");
  assert_string_equal(gs_bubble_verdict_name(GS_BUBBLE_INCONCLUSIVE), "inconclusive");
  assert_string_equal(gs_bubble_verdict_name(GS_BUBBLE_UNKNOWN), "-");
}

/* The one JSON spelling of a bubble (llm's document and the report's rows):
 * the members in order, NaN as null, the verdict by name or null. */
static void test_bubble_json(void **state) {
  (void)state;
  gs_bubble x = {.bubble = 0.3, .low = 0.29, .high = 0.31, .formula = 0.25,
                 .verdict = GS_BUBBLE_ABOVE, .imbalance = 1.25, .imbalance_low = NAN,
                 .imbalance_high = 1.5, .slowest = 1, .samples = 7, .expected = 0.3125,
                 .expected_verdict = GS_BUBBLE_WITHIN};
  gs_json_build b = {0};
  cJSON *o = cJSON_CreateObject();
  gs_bubble_to_json(&b, o, &x);
  assert_false(b.failed);
  char *text = cJSON_PrintUnformatted(o);
  assert_string_equal(text, "{\"bubble\":0.3,\"bubble_low\":0.29,\"bubble_high\":0.31,"
                            "\"bubble_formula\":0.25,\"bubble_verdict\":\"above\","
                            "\"imbalance\":1.25,\"imbalance_low\":null,\"imbalance_high\":1.5,"
                            "\"bubble_expected\":0.3125,\"bubble_expected_verdict\":\"within 15%\"}");
  free(text);
  cJSON_Delete(o);
  x.verdict = GS_BUBBLE_UNKNOWN;
  o = cJSON_CreateObject();
  gs_bubble_to_json(&b, o, &x);
  assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "bubble_verdict")));
  assert_int_equal(cJSON_GetArraySize(o), 10);
  cJSON_Delete(o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_paired_against_enumeration),
      cmocka_unit_test(test_paired_fixed_ratio),
      cmocka_unit_test(test_paired_normal_limit_and_edges),
      cmocka_unit_test(test_bubble_hand_worked),
      cmocka_unit_test(test_bubble_expected),
      cmocka_unit_test(test_bubble_interval_of_sums),
      cmocka_unit_test(test_verdict_bounds),
      cmocka_unit_test(test_bubble_json),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
