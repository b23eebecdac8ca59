/* Unit tests of core/slo: target parsing, per-request outcomes and goodput
 * against a case computed by hand (the figures are written beside each
 * assertion). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "core/slo.h"

#define EPS 1e-12

static void test_parse_targets(void **state) {
  (void)state;
  gs_slo s;
  assert_int_equal(gs_slo_parse("ttft=2s,tpot=100ms", "--slo", &s), GS_OK);
  assert_string_equal(s.name, "custom");
  assert_float_equal(s.bound[GS_SLO_TTFT], 2.0, EPS);
  assert_float_equal(s.bound[GS_SLO_TPOT], 0.1, EPS);
  assert_true(isnan(s.bound[GS_SLO_LATENCY]));
  assert_float_equal(s.percentile, 99.0, EPS);
  assert_int_equal(gs_slo_parse("latency=250us", "--slo", &s), GS_OK);
  assert_float_equal(s.bound[GS_SLO_LATENCY], 250e-6, 1e-18);
  assert_true(isnan(s.bound[GS_SLO_TTFT]));
  assert_int_equal(gs_slo_parse("interactive", "--slo", &s), GS_OK);
  assert_string_equal(s.name, "interactive");
  assert_float_equal(s.bound[GS_SLO_TTFT], 0.5, EPS);
  assert_float_equal(s.bound[GS_SLO_TPOT], 0.03, EPS);
  assert_int_equal(gs_slo_parse("conversational", "--slo", &s), GS_OK);
  assert_float_equal(s.bound[GS_SLO_TTFT], 2.0, EPS);
  assert_float_equal(s.bound[GS_SLO_TPOT], 0.1, EPS);
  const char *bad[] = {"",          "ttft=2",        "ttft=2sec",    "ttft=-1s",
                       "ttft=0ms",  "ttft=2s,",      "ttft=1s,ttft=2s", "tbt=1s",
                       "ttft 2s",   "ttft=nan s",    "ttft=1e400s",  "TTFT=1s",
                       "ttft=inf s", "ttft=1ms,tpot", "conversational,ttft=1s"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_int_equal(gs_slo_parse(bad[i], "--slo", &s), GS_ERR_USAGE);
    assert_false(gs_slo_any(&s));
  }
  char text[96];
  gs_slo_parse("ttft=2s,tpot=100ms", "--slo", &s);
  gs_slo_describe(&s, text, sizeof text);
  assert_string_equal(text, "ttft<=2 s, tpot<=100 ms");
}

static void test_request_met(void **state) {
  (void)state;
  gs_slo s;
  assert_int_equal(gs_slo_parse("ttft=1s,tpot=100ms", "--slo", &s), GS_OK);
  int met[GS_SLO_METRICS];
  gs_slo_request q = {1, 1.0, 0.1, 4.0, 10, NAN};
  assert_int_equal(gs_slo_request_met(&s, &q, met), 1); // bounds are inclusive
  assert_int_equal(met[GS_SLO_TTFT], 1);
  assert_int_equal(met[GS_SLO_TPOT], 1);
  assert_int_equal(met[GS_SLO_LATENCY], -1);
  q.tpot = 0.2;
  assert_int_equal(gs_slo_request_met(&s, &q, met), 0);
  assert_int_equal(met[GS_SLO_TTFT], 1);
  assert_int_equal(met[GS_SLO_TPOT], 0);
  q.tpot = NAN; // one output token: nothing between tokens
  assert_int_equal(gs_slo_request_met(&s, &q, met), 1);
  q.ok = 0; // timed out: meets nothing
  assert_int_equal(gs_slo_request_met(&s, &q, met), 0);
  assert_int_equal(met[GS_SLO_TTFT], 0);
  assert_int_equal(met[GS_SLO_TPOT], 0);
}

/* Ten requests over 5 s against ttft<=1 s, tpot<=100 ms:
 *   i  ok ttft tpot  tokens  ttft-met tpot-met all
 *   0  1  0.2  0.05  10      1        1        1
 *   1  1  0.5  0.08  20      1        1        1
 *   2  1  0.9  0.12  30      1        0        0
 *   3  1  1.5  0.05  40      0        1        0
 *   4  1  0.3  0.09  50      1        1        1
 *   5  1  0.4  0.10  60      1        1        1
 *   6  0  -    -     -       0        0        0   (timed out)
 *   7  1  2.0  0.20  80      0        0        0
 *   8  1  0.1  NaN   1       1        1        1   (one token)
 *   9  1  0.6  0.07  100     1        1        1
 * TTFT met 7/10, TPOT met 7/10, all 6/10; goodput 6 / 5 s = 1.2
 * requests/s; good tokens 10+20+50+60+1+100 = 241, / 5 s = 48.2 tokens/s.
 * TTFT sorted with the timed-out one as +inf: 0.1 0.2 0.3 0.4 0.5 0.6 0.9
 * 1.5 2.0 inf; p50 at h = 4.5: 0.5 + 0.5 (0.6 - 0.5) = 0.55. */
static void test_goodput_hand_case(void **state) {
  (void)state;
  const gs_slo_request q[10] = {
      {1, 0.2, 0.05, 0.0, 10, NAN}, {1, 0.5, 0.08, 0.0, 20, NAN}, {1, 0.9, 0.12, 0.0, 30, NAN},
      {1, 1.5, 0.05, 0.0, 40, NAN}, {1, 0.3, 0.09, 0.0, 50, NAN}, {1, 0.4, 0.10, 0.0, 60, NAN},
      {0, NAN, NAN, NAN, 0, NAN},   {1, 2.0, 0.20, 0.0, 80, NAN}, {1, 0.1, NAN, 0.0, 1, NAN},
      {1, 0.6, 0.07, 0.0, 100, NAN}};
  gs_slo s;
  assert_int_equal(gs_slo_parse("ttft=1s,tpot=100ms", "--slo", &s), GS_OK);
  const size_t runs[2] = {5, 5};
  gs_slo_goodput g;
  assert_int_equal(gs_slo_goodput_compute(&s, q, 10, runs, 2, 5.0, &g), GS_OK);
  assert_int_equal(g.requests, 10);
  assert_int_equal(g.good, 6);
  assert_float_equal(g.share[GS_SLO_TTFT].value, 0.7, EPS);
  assert_float_equal(g.share[GS_SLO_TPOT].value, 0.7, EPS);
  assert_true(isnan(g.share[GS_SLO_LATENCY].value));
  assert_float_equal(g.share_all.value, 0.6, EPS);
  assert_float_equal(g.requests_per_second.value, 1.2, EPS);
  assert_float_equal(g.tokens_per_second.value, 48.2, EPS);
  // Each interval holds its figure and stays inside what is possible.
  const gs_slo_figure *f[] = {&g.share[GS_SLO_TTFT], &g.share[GS_SLO_TPOT], &g.share_all};
  for (size_t i = 0; i < 3; i++) {
    assert_true(f[i]->low <= f[i]->value && f[i]->value <= f[i]->high);
    assert_true(f[i]->low >= 0.0 && f[i]->high <= 1.0);
    assert_true(f[i]->high - f[i]->low > 0.1); // ten requests: a wide interval
  }
  assert_float_equal(g.requests_per_second.low, 2.0 * g.share_all.low, EPS);
  assert_float_equal(g.requests_per_second.high, 2.0 * g.share_all.high, EPS);
  assert_true(g.tokens_per_second.low < 48.2 && 48.2 < g.tokens_per_second.high);
  // p99 with a request that never finished is infinite: targets missed.
  assert_true(isinf(g.percentile_value[GS_SLO_TTFT]));
  assert_int_equal(g.percentile_met, 0);
  s.percentile = 50.0;
  assert_int_equal(gs_slo_goodput_compute(&s, q, 10, runs, 2, 5.0, &g), GS_OK);
  assert_float_equal(g.percentile_value[GS_SLO_TTFT], 0.55, EPS);
  // TPOT sorted (one token = 0, timed out = inf): 0 .05 .05 .07 .08 .09 .10
  // .12 .20 inf; p50 = 0.085
  assert_float_equal(g.percentile_value[GS_SLO_TPOT], 0.085, EPS);
  assert_int_equal(g.percentile_met, 1);
}

/* No request meets the targets: the share is 0 with the interval [0, 0]
 * and the goodput is 0. One good request of 24: the interval reaches 0
 * (draws without it count). No targets: all NaN. */
static void test_goodput_edges(void **state) {
  (void)state;
  const gs_slo_request q[4] = {
      {1, 3.0, 0.05, 0.0, 10, NAN}, {1, 4.0, 0.05, 0.0, 10, NAN}, {1, 5.0, 0.05, 0.0, 10, NAN},
      {1, 6.0, 0.05, 0.0, 10, NAN}};
  gs_slo s;
  assert_int_equal(gs_slo_parse("ttft=1s", "--slo", &s), GS_OK);
  const size_t runs[1] = {4};
  gs_slo_goodput g;
  assert_int_equal(gs_slo_goodput_compute(&s, q, 4, runs, 1, 2.0, &g), GS_OK);
  assert_int_equal(g.good, 0);
  assert_float_equal(g.share_all.value, 0.0, EPS);
  assert_float_equal(g.share_all.low, 0.0, EPS);
  assert_float_equal(g.share_all.high, 0.0, EPS);
  assert_float_equal(g.tokens_per_second.value, 0.0, EPS);
  assert_float_equal(g.tokens_per_second.high, 0.0, EPS);
  gs_slo_request many[24];
  for (size_t i = 0; i < 24; i++)
    many[i] = (gs_slo_request){1, i == 7 ? 0.5 : 3.0, 0.05, 0, 10, NAN};
  const size_t one_run[1] = {24};
  assert_int_equal(gs_slo_goodput_compute(&s, many, 24, one_run, 1, 2.0, &g), GS_OK);
  assert_float_equal(g.share_all.value, 1.0 / 24.0, EPS);
  assert_float_equal(g.share_all.low, 0.0, EPS);
  assert_true(g.share_all.high > 2.0 / 24.0 && g.share_all.high < 0.25);
  gs_slo_none(&s);
  assert_int_equal(gs_slo_goodput_compute(&s, q, 4, runs, 1, 2.0, &g), GS_OK);
  assert_true(isnan(g.share_all.value));
  assert_true(isnan(g.requests_per_second.value));
}

/* Points (per user, per GPU): (10, 100) (20, 80) (15, 70) (20, 80) (5, NaN)
 * (30, 40): (15, 70) is dominated by (20, 80); the two equal (20, 80) do
 * not dominate each other; NaN is never on the frontier. */
static void test_frontier(void **state) {
  (void)state;
  const double x[] = {10, 20, 15, 20, 5, 30}, y[] = {100, 80, 70, 80, NAN, 40};
  int on[6];
  gs_slo_frontier(x, y, 6, on);
  const int want[] = {1, 1, 0, 1, 0, 1};
  for (size_t i = 0; i < 6; i++) assert_int_equal(on[i], want[i]);
}

/* The load: a layout serving mu = 50 requests/s while lambda = 100 arrive
 * (arrival k at k / lambda, batch start at k / mu, plus a 10 ms prefill)
 * has waits growing at lambda / mu - 1 = 1 a second: load 2, the offered
 * rate over the served one. A second run that keeps up (TTFT alternating
 * 20 and 30 ms) counts about its own means: its slope is small, and the
 * pooled slope is sxy / sxx over both runs, checked against the sums
 * written out here. A request that is not ok is left out; one run of one
 * request, or arrivals all at once, tell nothing (NaN), and NaN is
 * sustained. */
static void test_load(void **state) {
  (void)state;
  gs_slo s;
  assert_int_equal(gs_slo_parse("ttft=100s", "--slo", &s), GS_OK);
  gs_slo_request q[21];
  for (int k = 0; k < 10; k++)
    q[k] = (gs_slo_request){1, k / 50.0 - k / 100.0 + 0.01, 0.001, 1.0, 4, k / 100.0};
  for (int k = 0; k < 10; k++)
    q[10 + k] = (gs_slo_request){1, k % 2 ? 0.03 : 0.02, 0.001, 1.0, 4, k / 100.0};
  q[20] = (gs_slo_request){0, NAN, NAN, NAN, 0, 0.5};  // failed: left out
  gs_slo_goodput g;
  const size_t one[1] = {10};
  assert_int_equal(gs_slo_goodput_compute(&s, q, 10, one, 1, 1.0, &g), GS_OK);
  assert_float_equal(g.load.value, 2.0, 1e-12);
  // Every redraw of a queue on one line has the line's slope.
  assert_float_equal(g.load.low, 2.0, 1e-9);
  assert_float_equal(g.load.high, 2.0, 1e-9);
  assert_false(gs_slo_sustained(&g));
  assert_true(g.percentile_met);
  assert_false(gs_slo_goodput_met(&g));
  // Both runs: sxy and sxx of each about its means, summed.
  double sxy = 0.0, sxx = 0.0;
  for (int r = 0; r < 2; r++) {
    double ma = 0.0, mt = 0.0;
    for (int k = 0; k < 10; k++) {
      ma += q[10 * r + k].arrival / 10.0;
      mt += q[10 * r + k].ttft / 10.0;
    }
    for (int k = 0; k < 10; k++) {
      sxy += (q[10 * r + k].arrival - ma) * (q[10 * r + k].ttft - mt);
      sxx += (q[10 * r + k].arrival - ma) * (q[10 * r + k].arrival - ma);
    }
  }
  const size_t two[2] = {10, 11};
  assert_int_equal(gs_slo_goodput_compute(&s, q, 21, two, 2, 2.0, &g), GS_OK);
  assert_float_equal(g.load.value, 1.0 + sxy / sxx, 1e-12);
  assert_false(g.percentile_met);  // the failed request never got its first token
  // The run that keeps up alone: slope (0.005 x 5 / 100) / (82.5 / 100^2) (the alternation
  // against the centred arrivals), load 1.0303.
  assert_int_equal(gs_slo_goodput_compute(&s, q + 10, 10, one, 1, 1.0, &g), GS_OK);
  assert_float_equal(g.load.value, 1.0 + 2.5 / 82.5, 1e-12);
  // The alternation's redraws scatter the slope around it.
  assert_true(g.load.low < g.load.value && g.load.value < g.load.high);
  assert_true(gs_slo_sustained(&g) && gs_slo_goodput_met(&g));
  const size_t single[1] = {1};
  assert_int_equal(gs_slo_goodput_compute(&s, q, 1, single, 1, 1.0, &g), GS_OK);
  assert_true(isnan(g.load.value) && isnan(g.load.low) && gs_slo_sustained(&g));
  gs_slo_request at_once[3] = {{1, 0.1, 0.001, 1.0, 4, 0.0}, {1, 0.2, 0.001, 1.0, 4, 0.0},
                               {1, 0.3, 0.001, 1.0, 4, 0.0}};
  const size_t three[1] = {3};
  assert_int_equal(gs_slo_goodput_compute(&s, at_once, 3, three, 1, 1.0, &g), GS_OK);
  assert_true(isnan(g.load.value));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_targets),
      cmocka_unit_test(test_request_met),
      cmocka_unit_test(test_goodput_hand_case),
      cmocka_unit_test(test_goodput_edges),
      cmocka_unit_test(test_frontier),
      cmocka_unit_test(test_load),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
