/* Tests of the host side of llm's device-stamped arrivals (llm_stamps.h):
 * the anchor of a GPU clock from the tightest try, device nanoseconds on
 * the host clock, the ring's slots appended in order across its wrap, and
 * two GPUs whose clocks differ by seconds read as one timeline in which
 * the shard that entered 200 us late is named (core/arrival). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>

#include <cmocka.h>

#include "workloads/llm/llm_stamps.h"

static void test_pick_tightest(void **state) {
  (void)state;
  const gs_llm_clock_trial t[] = {
      {10.000, 10.000010, 7000},   /* 10 us wide */
      {11.000, 11.000002, 8000},   /* 2 us: kept (the first of two) */
      {12.000, 12.000002, 9000},   /* 2 us, later */
      {13.000, 12.999999, 9500},   /* negative window: left out */
      {14.000, 14.0000001, 0},     /* never written: left out */
      {NAN, 15.0, 9900},           /* not finite: left out */
  };
  gs_llm_clock_anchor a;
  assert_int_equal(gs_llm_clock_pick(t, 6, &a), GS_OK);
  assert_float_equal(a.host, 11.000001, 1e-12);
  assert_int_equal(a.device_ns, 8000);
  assert_float_equal(a.error, 1e-6, 1e-12);
  assert_int_equal(gs_llm_clock_pick(t + 3, 3, &a), GS_ERR_CUDA);
  assert_int_equal(gs_llm_clock_pick(t, 0, &a), GS_ERR_CUDA);
}

static void test_host_time(void **state) {
  (void)state;
  const gs_llm_clock_anchor a = {100.0, 5000000000ull, 1e-6};
  assert_float_equal(gs_llm_clock_host(&a, 5000001500ull), 100.0000015, 1e-12);
  assert_float_equal(gs_llm_clock_host(&a, 5000000000ull), 100.0, 0.0);
  // Before the anchor: a negative count, not a wrap to 1.8e10 seconds.
  assert_float_equal(gs_llm_clock_host(&a, 4999999000ull), 99.999999, 1e-12);
}

/* Slot s of the ring holds entry 1000 s + 100 ns and exit 1000 s + 600 ns
 * past the anchor's device time. */
static void fill(unsigned long long *ring, uint64_t from, uint64_t to, uint64_t base) {
  for (uint64_t s = from; s < to; s++) {
    ring[2 * (s % GS_LLM_STAMP_SLOTS)] = base + 1000 * s + 100;
    ring[2 * (s % GS_LLM_STAMP_SLOTS) + 1] = base + 1000 * s + 600;
  }
}

static void test_take_across_wrap(void **state) {
  (void)state;
  static unsigned long long ring[2 * GS_LLM_STAMP_SLOTS];
  const uint64_t base = 1ull << 40;
  const gs_llm_clock_anchor a = {50.0, base, 0.0};
  gs_arrival_rank r = {0};
  fill(ring, 0, GS_LLM_STAMP_SLOTS - 2, base);
  assert_int_equal(gs_llm_stamps_take(ring, 0, 3, &a, 0.25, &r), GS_OK);
  assert_int_equal(r.n, 3);
  assert_float_equal(r.entry[2], 50.25 + 2100e-9, 1e-12);
  assert_float_equal(r.exit[2], 50.25 + 2600e-9, 1e-12);
  // Slots 62..65: the last two wrote over slots 0 and 1 of the ring.
  fill(ring, GS_LLM_STAMP_SLOTS - 2, GS_LLM_STAMP_SLOTS + 2, base);
  r.n = 0;
  assert_int_equal(gs_llm_stamps_take(ring, GS_LLM_STAMP_SLOTS - 2, GS_LLM_STAMP_SLOTS + 2, &a,
                                      0.0, &r),
                   GS_OK);
  assert_int_equal(r.n, 4);
  for (size_t i = 0; i < 4; i++) {
    const double s = (double)(GS_LLM_STAMP_SLOTS - 2 + i);
    assert_float_equal(r.entry[i], 50.0 + (1000.0 * s + 100.0) * 1e-9, 1e-12);
    assert_float_equal(r.exit[i], 50.0 + (1000.0 * s + 600.0) * 1e-9, 1e-12);
  }
  // An exit never stamped is NaN; nothing asked, nothing appended.
  ring[2 * 5 + 1] = 0;
  r.n = 0;
  assert_int_equal(gs_llm_stamps_take(ring, 5, 6, &a, 0.0, &r), GS_OK);
  assert_int_equal(r.n, 1);
  assert_true(isnan(r.exit[0]) && isfinite(r.entry[0]));
  assert_int_equal(gs_llm_stamps_take(ring, 6, 6, &a, 0.0, &r), GS_OK);
  assert_int_equal(r.n, 1);
  free(r.entry);
  free(r.exit);
}

/* Two GPUs whose clocks read 3 s apart, anchored at the same host
 * instant: shard 1 enters each call 200 us after shard 0 on the host
 * timeline (its device clock 3 s ahead), both leave together. The
 * summary names shard 1, 200 us late. */
static void test_two_gpus_one_timeline(void **state) {
  (void)state;
  static unsigned long long ring0[2 * GS_LLM_STAMP_SLOTS], ring1[2 * GS_LLM_STAMP_SLOTS];
  const uint64_t t0 = 7000000000ull, t1 = t0 + 3000000000ull;
  const gs_llm_clock_anchor a0 = {20.0, t0, 1e-6}, a1 = {20.0, t1, 1e-6};
  const unsigned calls = 40;
  for (unsigned s = 0; s < calls; s++) {
    const uint64_t start = 1000000ull * s + (s % 3) * 1000; /* calls 1 ms apart, jitter */
    ring0[2 * s] = t0 + start;
    ring1[2 * s] = t1 + start + 200000;
    ring0[2 * s + 1] = t0 + start + 300000;
    ring1[2 * s + 1] = t1 + start + 300000;
  }
  gs_arrival *a = gs_arrival_new(2, 64, "device", "shared");
  assert_non_null(a);
  assert_int_equal(gs_llm_stamps_take(ring0, 0, calls, &a0, 0.0, &a->ranks[0]), GS_OK);
  assert_int_equal(gs_llm_stamps_take(ring1, 0, calls, &a1, 0.0, &a->ranks[1]), GS_OK);
  a->ranks[0].error_seconds = a->ranks[1].error_seconds = 1e-6;
  gs_arrival_summary sum;
  assert_int_equal(gs_arrival_summarize(a, &sum), GS_OK);
  assert_int_equal(sum.iterations, calls);
  assert_int_equal(sum.last_rank, 1);
  assert_int_equal(sum.last_count[1], calls);
  assert_float_equal(sum.lateness, 200e-6, 1e-9);
  assert_int_equal(gs_arrival_named(&sum), 1);
  gs_arrival_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pick_tightest),
      cmocka_unit_test(test_host_time),
      cmocka_unit_test(test_take_across_wrap),
      cmocka_unit_test(test_two_gpus_one_timeline),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
