/* Tests of the cost of recording arrival times (core/arrival_cost) against
 * figures worked out by hand from docs/stragglers.md, "Arrival skew": the
 * Thue-Morse order of the blocks, a drift that the quartets cancel, a
 * block's first iteration left out, the median of the pairs and its
 * order-statistic interval, the three verdicts, and pairs left out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "core/arrival_cost.h"

static void assert_near(double expected, double actual, double tol) {
  if (!(fabs(expected - actual) <= tol)) {
    print_error("expected %.10g, got %.10g\n", expected, actual);
    fail();
  }
}

/* Blocks 0..15 record at the Thue-Morse sequence's 0s: ABBA BAAB BAAB ABBA;
 * every aligned quartet holds two recording blocks. */
static void test_order(void **state) {
  (void)state;
  const int expected[16] = {1, 0, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1};
  for (uint64_t b = 0; b < 16; b++) assert_int_equal(gs_arrival_cost_records(b), expected[b]);
  for (uint64_t q = 0; q < 1000; q++) {
    int on = 0;
    for (uint64_t j = 0; j < 4; j++) on += gs_arrival_cost_records(4 * q + j);
    assert_int_equal(on, 2);
  }
}

/* Iterations that drift linearly (+1% per block, 10 iterations a block)
 * and cost 2% more while recording: every quartet gives exactly +2%, so
 * the median and both ends of its interval are +2%: over 1%. Pairs of
 * neighbouring blocks would give +2% -+ the drift instead. */
static void test_drift_cancels(void **state) {
  (void)state;
  const size_t block = 10, pairs = 8, n = 4 * block * pairs;
  double *t = malloc(n * sizeof *t);
  assert_non_null(t);
  for (size_t i = 0; i < n; i++) {
    const double base = 1e-5 * (1.0 + 0.01 * (double)i / (double)block);
    t[i] = gs_arrival_cost_records(i / block) ? 1.02 * base : base;
  }
  gs_arrival_cost c;
  assert_int_equal(gs_arrival_cost_of(t, n, block, &c), GS_OK);
  assert_int_equal(c.pairs, pairs);
  assert_int_equal(c.block, block);
  assert_near(0.02, c.cost, 1e-12);
  assert_near(0.02, c.low, 1e-12);
  assert_near(0.02, c.high, 1e-12);
  assert_near(0.02, c.min, 1e-12);
  assert_near(0.02, c.max, 1e-12);
  assert_int_equal(c.verdict, GS_ARRIVAL_COST_OVER);
  assert_string_equal(gs_arrival_cost_verdict_name(c.verdict), "over");
  // The means per iteration: 1.02 times the drift's mean, and the mean
  // (iterations 1..9 of a block: half a block in).
  const double mean = 1e-5 * (1.0 + 0.01 * (4.0 * (double)pairs - 1.0) / 2.0 + 0.01 * 0.5);
  assert_near(1.02 * mean, c.on_seconds, 1e-15);
  assert_near(mean, c.off_seconds, 1e-15);
  free(t);
}

/* 16 pairs, two iterations a block, the first of each 1000 s (left out),
 * pair q recording 1 + shift + q/1000 against 1: sorted differences
 * shift + 0.000 .. shift + 0.015; median shift + 0.0075; l = floor(8 -
 * 0.98 * 4) = 4, u = ceil(1 + 8 + 3.92) = 13, so the interval is
 * [shift + 0.003, shift + 0.012]. */
static gs_arrival_cost sixteen_pairs(double shift) {
  double t[128];
  for (size_t b = 0; b < 64; b++) {
    t[2 * b] = 1000.0;
    t[2 * b + 1] = gs_arrival_cost_records(b) ? 1.0 + shift + 0.001 * (double)(b / 4) : 1.0;
  }
  gs_arrival_cost c;
  assert_int_equal(gs_arrival_cost_of(t, 128, 2, &c), GS_OK);
  assert_int_equal(c.pairs, 16);
  assert_near(shift + 0.0075, c.cost, 1e-12);
  assert_near(shift + 0.003, c.low, 1e-12);
  assert_near(shift + 0.012, c.high, 1e-12);
  assert_near(shift, c.min, 1e-12);
  assert_near(shift + 0.015, c.max, 1e-12);
  return c;
}

static void test_verdicts(void **state) {
  (void)state;
  assert_int_equal(sixteen_pairs(0.0).verdict, GS_ARRIVAL_COST_UNDECIDED);  /* [0.3%, 1.2%] */
  assert_int_equal(sixteen_pairs(-0.005).verdict, GS_ARRIVAL_COST_UNDER);   /* [-0.2%, 0.7%] */
  assert_int_equal(sixteen_pairs(0.008).verdict, GS_ARRIVAL_COST_OVER);     /* [1.1%, 2.0%] */
  assert_string_equal(gs_arrival_cost_verdict_name(GS_ARRIVAL_COST_UNDER), "under");
  assert_string_equal(gs_arrival_cost_verdict_name(GS_ARRIVAL_COST_UNDECIDED), "undecided");
}

/* A quartet with a time that is not finite is left out (but not for a
 * block's first iteration, which is not counted); fewer than 6 pairs left
 * is no interval. Blocks of 2 iterations: block b's counted one is
 * t[2b + 1]. */
static void test_pairs_left_out(void **state) {
  (void)state;
  double t[56];
  for (size_t b = 0; b < 28; b++) {
    t[2 * b] = NAN;
    t[2 * b + 1] = gs_arrival_cost_records(b) ? 1.5 : 1.0;
  }
  gs_arrival_cost c;
  assert_int_equal(gs_arrival_cost_of(t, 56, 2, &c), GS_OK);
  assert_int_equal(c.pairs, 7);
  assert_near(0.5, c.cost, 1e-12);
  t[2 * 9 + 1] = NAN; /* quartet 2 */
  assert_int_equal(gs_arrival_cost_of(t, 56, 2, &c), GS_OK);
  assert_int_equal(c.pairs, 6);
  t[2 * 25 + 1] = 0.0; /* quartet 6 without recording: 0 and 1 s, mean 0.5 s: +200% */
  assert_int_equal(gs_arrival_cost_of(t, 56, 2, &c), GS_OK);
  assert_int_equal(c.pairs, 6);
  assert_near(2.0, c.max, 1e-12);
  t[2 * 26 + 1] = 0.0; /* now no time without recording: left out, 5 pairs */
  assert_int_equal(gs_arrival_cost_of(t, 56, 2, &c), GS_ERR_UNSUPPORTED);
  assert_true(isnan(c.cost));
  assert_int_equal(c.verdict, GS_ARRIVAL_COST_UNDECIDED);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_order),
      cmocka_unit_test(test_drift_cancels),
      cmocka_unit_test(test_verdicts),
      cmocka_unit_test(test_pairs_left_out),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
