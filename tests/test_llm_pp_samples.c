/* Tests of llm's bounded per-call pipeline samples (llm_pp_samples.h): one
 * sample per call up to 128, neighbours merged in pairs past that, the
 * deltas of the engine's running totals, and sums kept exact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>

#include <cmocka.h>

#include "workloads/llm/llm_pp_samples.h"

/* Call c (1-based) of 3 stages takes c ms, stage s computed (s + 1) / 4 of
 * it, moved c rows in 2 micro-batches of 3 sequences. */
static void add_calls(gs_llm_pp_samples *s, int from, int to, double *total, double *busy) {
  for (int c = from; c <= to; c++) {
    *total += 1e-3 * c;
    for (int st = 0; st < 3; st++) busy[st] += 1e-3 * c * (st + 1) / 4.0;
    gs_llm_pp_samples_add(s, *total, busy, (double)c, 2.0, 3.0);
  }
}

static void test_merging(void **state) {
  (void)state;
  gs_llm_pp_samples *s = gs_llm_pp_samples_new(3);
  assert_non_null(s);
  double total = 0.0, busy[3] = {0};
  add_calls(s, 1, 128, &total, busy);
  assert_int_equal(s->n, 128);
  assert_int_equal(s->width, 1);
  assert_float_equal(s->seconds[9], 10e-3, 1e-15);
  assert_float_equal(s->busy[2 * GS_LLM_PP_SAMPLES + 9], 7.5e-3, 1e-15);
  // Call 129 merges pairs: 64 samples of 2 calls, then a new one.
  add_calls(s, 129, 129, &total, busy);
  assert_int_equal(s->width, 2);
  assert_int_equal(s->n, 65);
  assert_int_equal(s->calls[0], 2);
  assert_float_equal(s->seconds[0], 3e-3, 1e-15);  /* calls 1 + 2 */
  assert_float_equal(s->rows[63], 127.0 + 128.0, 0);
  assert_int_equal(s->calls[64], 1);
  // Call 257 merges again: samples of 4 calls; 300 calls are 75 samples.
  add_calls(s, 130, 300, &total, busy);
  assert_int_equal(s->width, 4);
  assert_int_equal(s->n, 75);
  double secs = 0.0, rows = 0.0, groups = 0.0, b1 = 0.0;
  uint64_t calls = 0;
  for (size_t i = 0; i < s->n; i++) {
    assert_int_equal(s->calls[i], 4);
    calls += s->calls[i];
    secs += s->seconds[i];
    rows += s->rows[i];
    groups += s->groups[i];
    b1 += s->busy[GS_LLM_PP_SAMPLES + i];
  }
  assert_int_equal(calls, 300);
  assert_float_equal(secs, 1e-3 * 300 * 301 / 2, 1e-12);
  assert_float_equal(rows, 300.0 * 301 / 2, 0);
  assert_float_equal(groups, 600.0, 0);
  assert_float_equal(b1, 0.5 * 1e-3 * 300 * 301 / 2, 1e-12);
  assert_float_equal(s->seconds[1], 1e-3 * (5 + 6 + 7 + 8), 1e-15);
  gs_llm_pp_samples_free(s);
  gs_llm_pp_samples_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_merging)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
