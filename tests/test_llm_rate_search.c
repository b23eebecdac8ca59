/* Unit tests of the llm rate search (workloads/llm/rate_search.c) on fake
 * latency curves with a planted threshold: the search must find it within
 * 5% in at most 8 probes, report a bracket around it, and stop early. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>

#include "workloads/llm/rate_search.h"

/* A fake server: p99 latency over its target as a function of the rate. */
typedef struct {
  int shape;        /* 0: queue L0 / (1 - r / C); 1: L0 (1 + (r / C)^4); 2: step at C;
                       3: a layout's pace C: L0 up to C, then the load r / C */
  double capacity;  /* C, requests/s */
  double base;      /* L0 over the target: the ratio at rate 0 */
  size_t calls;
} fake_curve;

static gs_status fake_probe(void *ctx, double rate, double *ratio) {
  fake_curve *f = ctx;
  f->calls++;
  const double u = rate / f->capacity;
  if (f->shape == 0)
    *ratio = u < 1.0 ? f->base / (1.0 - u) : INFINITY;
  else if (f->shape == 1)
    *ratio = f->base * (1.0 + u * u * u * u);
  else if (f->shape == 2)
    *ratio = u <= 1.0 ? 0.5 : 2.0;
  else
    *ratio = u <= 1.0 ? f->base : u;
  return GS_OK;
}

/* The rate at which the curve's ratio is 1 (the planted threshold). */
static double threshold(const fake_curve *f) {
  if (f->shape == 0) return f->capacity * (1.0 - f->base);
  if (f->shape == 1) return f->capacity * pow(1.0 / f->base - 1.0, 0.25);
  return f->capacity; /* shapes 2 and 3 */
}

static void check_found(fake_curve *f, double start) {
  const double planted = threshold(f);
  gs_rate_search_spec spec = {.start = start, .tolerance = 0.05, .max_probes = 8};
  gs_rate_search_result r;
  assert_int_equal(gs_rate_search_run(&spec, fake_probe, f, &r), GS_OK);
  assert_true(r.n <= 8);
  assert_int_equal(f->calls, r.n);
  assert_true(r.converged);
  // The answer met the targets, is within 5% below the threshold, and the
  // bracket holds the threshold.
  assert_true(r.best <= planted * (1.0 + 1e-12));
  assert_true(r.best >= 0.95 * planted);
  assert_true(r.low <= planted && planted <= r.high);
  assert_true(r.high - r.low <= 0.05 * r.high);
  for (size_t i = 0; i < r.n; i++) assert_true(r.rate[i] > 0.0);
}

static void test_queue_curves(void **state) {
  (void)state;
  const double capacities[] = {3.7, 41.0, 250.0, 1900.0};
  const double bases[] = {0.05, 0.3, 0.7};
  const double starts[] = {1.0, 4.0, 100.0};
  for (size_t c = 0; c < 4; c++)
    for (size_t b = 0; b < 3; b++)
      for (size_t s = 0; s < 3; s++) {
        fake_curve f = {0, capacities[c], bases[b], 0};
        check_found(&f, starts[s]);
      }
}

/* A steeper, non-queue curve (latency flat, then rising as the 4th power)
 * fits the search's line badly: within 8 probes it need not converge, but
 * what it reports is true: its answer met the targets and its bracket
 * holds the threshold. */
static void test_power_curve(void **state) {
  (void)state;
  const double capacities[] = {6.0, 55.0, 480.0};
  for (size_t c = 0; c < 3; c++) {
    fake_curve f = {1, capacities[c], 0.2, 0};
    const double planted = threshold(&f);
    gs_rate_search_spec spec = {.start = 4.0, .tolerance = 0.05, .max_probes = 8};
    gs_rate_search_result r;
    assert_int_equal(gs_rate_search_run(&spec, fake_probe, &f, &r), GS_OK);
    assert_int_equal(r.n, 8);
    assert_true(r.low <= planted && planted <= r.high);
    for (size_t i = 0; i < r.n; i++)
      if (r.rate[i] == r.best) assert_true(r.ratio[i] <= 1.0);
  }
}

/* The shape llm's search met on 2 x H200 (interactive, 2 replicas of
 * batch 8): the p99 latencies far inside their targets (ratio 0.1-0.4) at
 * every rate the layout keeps up with, then a rate past its pace missed
 * for its load, which grows as the rate (ratio = rate / pace). The line
 * through a flat met side lands near the missed rate; the load's own
 * proportion finds the pace: within 5% in 8 probes from every start. */
static void test_pace_curve(void **state) {
  (void)state;
  const double paces[] = {2.3, 37.0, 128.0, 900.0};
  const double bases[] = {0.09, 0.3, 0.8};
  const double starts[] = {1.0, 16.0, 100.0};
  for (size_t c = 0; c < 4; c++)
    for (size_t b = 0; b < 3; b++)
      for (size_t s = 0; s < 3; s++) {
        fake_curve f = {3, paces[c], bases[b], 0};
        check_found(&f, starts[s]);
      }
}

/* A step tells nothing but met / missed: the search cannot interpolate;
 * from the planted 37.3 with start 32 bisection closes it within 8. */
static void test_step_curve(void **state) {
  (void)state;
  fake_curve f = {2, 37.3, 0.0, 0};
  check_found(&f, 32.0);
}

/* No rate meets the targets. Capacity 1e-4 requests/s: every rate from 1
 * down overloads it (requests that never finish, an infinite ratio, which
 * says nothing of a lower rate): the search spends its 8 probes going
 * down. A floor on the latency (one request alone misses: ratio 2 at every
 * rate below capacity 50): the second probe, the first rate divided by
 * its ratio, misses as badly as the first, and the search stops early. */
static void test_nothing_met(void **state) {
  (void)state;
  fake_curve f = {0, 1e-4, 0.5, 0};
  gs_rate_search_spec spec = {.start = 1.0, .tolerance = 0.05, .max_probes = 8};
  gs_rate_search_result r;
  assert_int_equal(gs_rate_search_run(&spec, fake_probe, &f, &r), GS_OK);
  assert_int_equal(r.n, 8);
  assert_true(isnan(r.best));
  assert_false(r.converged || r.unreachable);
  for (size_t i = 1; i < r.n; i++) assert_true(r.rate[i] < r.rate[i - 1]);
  fake_curve g = {0, 50.0, 2.0, 0};
  assert_int_equal(gs_rate_search_run(&spec, fake_probe, &g, &r), GS_OK);
  assert_int_equal(r.n, 2);
  // Down by the first probe's ratio, 2 / (1 - 1 / 50).
  assert_float_equal(r.rate[1], 1.0 / r.ratio[0], 1e-12);
  assert_true(isnan(r.best));
  assert_true(r.unreachable);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_queue_curves),
      cmocka_unit_test(test_power_curve),
      cmocka_unit_test(test_pace_curve),
      cmocka_unit_test(test_step_curve),
      cmocka_unit_test(test_nothing_met),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
