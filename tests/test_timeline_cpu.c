/* Unit tests of the timeline rules and CPU reference (resample, fuse): the
 * search and its held ends, duplicate timestamps, S = 1, bfloat16
 * rounding, the input checks (non-monotonic and non-finite times rejected
 * with a clear error), generated data, the option checks of both
 * workloads, and the CPU backend's life cycle with its invariant check. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bug_fixture.h"
#include "workload_options_fixture.h"
#include "workloads/timeline/resample.h"
#include "workloads/timeline/timeline.h"

static void test_locate(void **unused) {
  (void)unused;
  const float times[] = {0.0f, 1.0f, 1.0f, 2.0f, 4.0f};
  uint32_t lo, hi;
  float w;
  gs_timeline_locate(times, 5, -3.0f, &lo, &hi, &w);  // before: hold the first
  assert_true(lo == 0 && hi == 0 && w == 0.0f);
  gs_timeline_locate(times, 5, 9.0f, &lo, &hi, &w);   // after: hold the last
  assert_true(lo == 4 && hi == 4 && w == 0.0f);
  gs_timeline_locate(times, 5, 4.0f, &lo, &hi, &w);   // at the last: hold it
  assert_true(lo == 4 && hi == 4 && w == 0.0f);
  gs_timeline_locate(times, 5, 0.0f, &lo, &hi, &w);   // at the first: its own row
  assert_true(lo == 0 && hi == 1 && w == 0.0f);
  gs_timeline_locate(times, 5, 0.25f, &lo, &hi, &w);
  assert_true(lo == 0 && hi == 1 && w == 0.25f);
  // Equal neighbours: the last of them, never a zero denominator.
  gs_timeline_locate(times, 5, 1.0f, &lo, &hi, &w);
  assert_true(lo == 2 && hi == 3 && w == 0.0f);
  gs_timeline_locate(times, 5, 1.5f, &lo, &hi, &w);
  assert_true(lo == 2 && hi == 3 && w == 0.5f);
  gs_timeline_locate(times, 5, 3.0f, &lo, &hi, &w);
  assert_true(lo == 3 && hi == 4 && w == 0.5f);
  // All equal and one sample: held.
  const float same[] = {2.0f, 2.0f, 2.0f};
  gs_timeline_locate(same, 3, 2.0f, &lo, &hi, &w);
  assert_true(lo == 2 && hi == 2 && w == 0.0f);
  gs_timeline_locate(same, 3, 1.0f, &lo, &hi, &w);
  assert_true(lo == 0 && hi == 0 && w == 0.0f);
  gs_timeline_locate(same, 1, 7.0f, &lo, &hi, &w);
  assert_true(lo == 0 && hi == 0 && w == 0.0f);
}

static void test_bf16(void **unused) {
  (void)unused;
  assert_int_equal(gs_bf16_from_float(1.0f), 0x3f80);
  assert_true(gs_bf16_to_float(0x3f80) == 1.0f);
  // Ties round to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7.
  assert_int_equal(gs_bf16_from_float(1.0f + ldexpf(1.0f, -8)), 0x3f80);
  assert_int_equal(gs_bf16_from_float(1.0f + 3.0f * ldexpf(1.0f, -8)), 0x3f82);
  assert_int_equal(gs_bf16_from_float(-2.5f), 0xc020);
  assert_true(isnan(gs_bf16_to_float(gs_bf16_from_float(NAN))));
  assert_true(isinf(gs_bf16_to_float(gs_bf16_from_float(INFINITY))));
  // Round trip of every bfloat16 value that is finite.
  for (uint32_t b = 0; b < 0x10000u; b++) {
    const float f = gs_bf16_to_float((uint16_t)b);
    if (isfinite(f)) assert_int_equal(gs_bf16_from_float(f), b);
  }
}

static void test_checks(void **unused) {
  (void)unused;
  const float good[] = {0.0f, 0.0f, 1.0f};
  assert_int_equal(gs_timeline_check_times(good, 3, "times", 0), GS_OK);
  const float back[] = {0.0f, 2.0f, 1.0f};
  assert_int_equal(gs_timeline_check_times(back, 3, "source times of stream 1", 7), GS_ERR_USAGE);
  assert_non_null(strstr(gs_last_error(), "stream 1 of batch element 7"));
  assert_non_null(strstr(gs_last_error(), "must not decrease, but time 2"));
  const float nan_time[] = {0.0f, NAN};
  assert_int_equal(gs_timeline_check_times(nan_time, 2, "times", 0), GS_ERR_USAGE);
  assert_non_null(strstr(gs_last_error(), "not finite"));
  assert_int_equal(gs_timeline_check_times(good, 0, "times", 0), GS_ERR_USAGE);
  const float targets[] = {3.0f, -1.0f, INFINITY};
  assert_int_equal(gs_timeline_check_targets(targets, 2, 0), GS_OK);  // any order
  assert_int_equal(gs_timeline_check_targets(targets, 3, 0), GS_ERR_USAGE);
}

/* Two streams by hand: values, held ends and duplicate times, float32 and
 * bfloat16, and the reference rejecting a non-monotonic stream. */
static void test_reference(void **unused) {
  (void)unused;
  const float t0[] = {0.0f, 1.0f, 1.0f, 3.0f};
  const float d0[] = {0, 100, 10, 110, 20, 120, 40, 140};  // [4][2]
  const float t1[] = {0.5f};
  const float d1[] = {-7.0f};                                // [1][1]
  const float targets[] = {-1.0f, 0.5f, 1.0f, 2.0f, 5.0f};
  const float want[5][3] = {{0, 100, -7}, {5, 105, -7}, {20, 120, -7}, {30, 130, -7},
                            {40, 140, -7}};
  gs_timeline_shape shape = {.n_streams = 2, .streams = {{4, 2}, {1, 1}}, .targets = 5};
  assert_int_equal(gs_timeline_out_dims(&shape), 3);
  assert_int_equal(gs_timeline_column(&shape, 1), 2);
  float out[15], out32[15];
  gs_timeline_inputs in = {.data = {d0, d1}, .times = {t0, t1}, .targets = targets};
  assert_int_equal(gs_timeline_cpu(&shape, &in, 0, out, out32), GS_OK);
  for (int t = 0; t < 5; t++)
    for (int c = 0; c < 3; c++) {
      assert_true(out[t * 3 + c] == want[t][c]);
      assert_true(out32[t * 3 + c] == want[t][c]);
    }
  // bfloat16 data: output rounded once from the float32 result.
  uint16_t b0[8], b1[1], bout[15];
  for (int i = 0; i < 8; i++) b0[i] = gs_bf16_from_float(d0[i] + 0.3f);
  b1[0] = gs_bf16_from_float(d1[0]);
  shape.dtype = GS_TIMELINE_BF16;
  gs_timeline_inputs bin = {.data = {b0, b1}, .times = {t0, t1}, .targets = targets};
  assert_int_equal(gs_timeline_cpu(&shape, &bin, 0, bout, out32), GS_OK);
  for (int i = 0; i < 15; i++) {
    const float got = gs_bf16_to_float(bout[i]);
    assert_true(fabsf(got - out32[i]) <= fabsf(out32[i]) / 256.0f);
    assert_int_equal(bout[i], gs_bf16_from_float(out32[i]));
  }
  // A stream that goes back in time is rejected before anything is written.
  const float back[] = {0.0f, 1.0f, 0.5f, 3.0f};
  gs_timeline_inputs bad = {.data = {d0, d1}, .times = {back, t1}, .targets = targets};
  shape.dtype = GS_TIMELINE_F32;
  assert_int_equal(gs_timeline_cpu(&shape, &bad, 3, out, NULL), GS_ERR_USAGE);
  assert_non_null(strstr(gs_last_error(), "stream 0 of batch element 3"));
}

static void test_generate(void **unused) {
  (void)unused;
  gs_timeline_shape shape = {.n_streams = 2, .streams = {{50, 3}, {7, 2}}, .targets = 400,
                             .dtype = GS_TIMELINE_F32};
  float d0[150], d1[14], t0[50], t1[7], targets[400];
  float e0[150], e1[14], u0[50], u1[7], again[400];
  void *data[] = {d0, d1}, *data2[] = {e0, e1};
  float *times[] = {t0, t1}, *times2[] = {u0, u1};
  gs_timeline_generate(&shape, 0.3, 0.25, 5, 11, data, times, targets);
  gs_timeline_generate(&shape, 0.3, 0.25, 5, 11, data2, times2, again);
  assert_memory_equal(d0, e0, sizeof d0);
  assert_memory_equal(targets, again, sizeof targets);
  assert_int_equal(gs_timeline_check_times(t0, 50, "t0", 0), GS_OK);
  assert_int_equal(gs_timeline_check_times(t1, 7, "t1", 0), GS_OK);
  int dups = 0, before = 0, after = 0;
  for (int i = 1; i < 50; i++) dups += t0[i] == t0[i - 1];
  for (int i = 0; i < 400; i++) {
    // Moved outside: below 0 (every source starts at or after 0) or at or
    // above 1.5 (every source ends before).
    before += targets[i] < 0.0f && targets[i] < t0[0] && targets[i] < t1[0];
    after += targets[i] >= 1.5f && targets[i] > t0[49] && targets[i] > t1[6];
  }
  assert_true(dups >= 5 && dups <= 30);
  assert_true(before >= 20 && after >= 20 && before + after <= 160);
  for (int i = 0; i < 150; i++) assert_true(d0[i] >= -1.0f && d0[i] < 1.0f);
  gs_timeline_generate(&shape, 0.3, 0.25, 5, 12, data2, times2, again);
  assert_true(memcmp(d0, e0, sizeof d0) != 0);
}

static void test_options(void **unused) {
  (void)unused;
  static const struct {
    const char *args[6];
    const char *error;
  } bad[] = {
      {{"--streams", "30x", NULL}, "--streams (dims)"},
      {{"--streams", "x5", NULL}, "--streams (samples)"},
      {{"--streams", "30*5", NULL}, "not SAMPLESxDIMS"},
      {{"--streams", "0x5", NULL}, "--streams (samples)"},
      {{"--streams", "1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1", NULL},
       "more than 16 streams"},
      {{"--dtype", "float16", NULL}, "--dtype"},
      {{"--batch", "0", NULL}, "--batch"},
      {{"--streams", "16000000x65536", NULL}, "16 GiB"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    void *opts = NULL;
    assert_int_equal(workload_options_parse(&gs_workload_fuse, bad[i].args, &opts), GS_ERR_USAGE);
    if (!strstr(gs_last_error(), bad[i].error))
      fail_msg("case %zu: '%s' lacks '%s'", i, gs_last_error(), bad[i].error);
    gs_workload_fuse.options_free(opts);
  }
  // The defaults are usable as they come (suite measures them unparsed).
  void *opts = gs_workload_fuse.options_new();
  gs_cost unparsed;
  gs_workload_fuse.cost(opts, 4, &unparsed);
  assert_int_equal(unparsed.items, 4 * 50 * 588);
  gs_workload_fuse.options_free(opts);
  opts = gs_workload_resample.options_new();
  gs_workload_resample.cost(opts, 32, &unparsed);
  assert_int_equal(unparsed.items, 32ull * 256 * 256);
  gs_workload_resample.options_free(opts);
  const char *standard[] = {NULL};
  opts = workload_options(&gs_workload_fuse, standard);
  assert_int_equal(gs_workload_fuse.work_units(opts), 4);
  gs_cost cost;
  gs_workload_fuse.cost(opts, 4, &cost);
  assert_int_equal(cost.items, 4 * 50 * 588);
  gs_workload_fuse.options_free(opts);
  const char *one[] = {"--samples", "1", "--dims", "3", NULL};
  opts = workload_options(&gs_workload_resample, one);
  assert_int_equal(gs_workload_resample.work_units(opts), 32);
  gs_workload_resample.options_free(opts);
}

/* The cost of both timeline workloads against sums done by hand: the
 * targets' times (4 bytes each) and every stream's samples (D values and a
 * 4-byte time each) read once, T x width values written once; per target
 * 3 flops a stream and 3 an output value. */
static void test_cost_by_hand(void **unused) {
  (void)unused;
  const char *fused[] = {"--streams", "9x5,1x2,40x3", "--targets", "33", "--dtype", "float32",
                         NULL};
  void *opts = workload_options(&gs_workload_fuse, fused);
  gs_cost cost;
  gs_workload_fuse.cost(opts, 6, &cost);
  // 33 x 4 + 9 x (5 x 4 + 4) + 1 x (2 x 4 + 4) + 40 x (3 x 4 + 4) = 1000 read,
  // 33 x 10 x 4 = 1320 written, per batch element.
  assert_int_equal(cost.bytes, 6 * (1000 + 1320));
  assert_int_equal(cost.flops, 6 * 33 * (3 * 3 + 3 * 10));
  assert_int_equal(cost.items, 6 * 33 * 10);
  assert_int_equal(cost.bound, GS_BOUND_MEMORY);
  gs_workload_fuse.options_free(opts);
  const char *half[] = {"--streams", "9x5,1x2,40x3", "--targets", "33", NULL};
  opts = workload_options(&gs_workload_fuse, half);
  gs_workload_fuse.cost(opts, 6, &cost);
  // The default, bfloat16 values: 132 + 9 x 14 + 1 x 8 + 40 x 10 = 666 read, 660 written.
  assert_int_equal(cost.bytes, 6 * (666 + 660));
  gs_workload_fuse.options_free(opts);
  const char *one[] = {"--samples", "100", "--dims", "8", "--targets", "64", "--dtype", "float32",
                       NULL};
  opts = workload_options(&gs_workload_resample, one);
  gs_workload_resample.cost(opts, 2, &cost);
  // 64 x 4 + 100 x (8 x 4 + 4) = 3856 read, 64 x 8 x 4 = 2048 written.
  assert_int_equal(cost.bytes, 2 * (3856 + 2048));
  assert_int_equal(cost.flops, 2 * 64 * (3 + 3 * 8));
  assert_int_equal(cost.bound, GS_BOUND_MEMORY);
  gs_workload_resample.options_free(opts);
}

/* The CPU backend: setup, step and verify through the vtable, and the same
 * batch element computed alone and inside a larger share agree. */
static void test_cpu_backend(void **unused) {
  (void)unused;
  const gs_workload *w = &gs_workload_fuse;
  const char *args[] = {"--streams", "9x5,1x2,40x3", "--targets", "33", "--outside", "0.3",
                        "--duplicates", "0.3", "--batch", "6", NULL};
  void *opts = workload_options(w, args);
  // Two ranks of a strong split of the 6 elements, then rank 1 of a weak
  // split of 12 over 2 ranks (elements past --batch, generated from their index).
  const uint64_t shares[][2] = {{0, 6}, {3, 6}, {6, 12}};
  for (size_t k = 0; k < 3; k++) {
    gs_rank_context ctx = {.backend = GS_BACKEND_CPU, .device = -1, .seed = 3,
                           .unit_begin = shares[k][0], .unit_count = 3,
                           .unit_total = shares[k][1], .world_size = 2};
    void *state = NULL;
    assert_int_equal(w->setup(opts, &ctx, &state), GS_OK);
    gs_verification v;
    assert_bug(w->verify(state, &v), "timeline: verify called before any step");
    assert_int_equal(w->step(state), GS_OK);
    assert_int_equal(w->verify(state, &v), GS_OK);
    if (v.status != GS_VERIFY_PASSED) fail_msg("%s", v.detail);
    assert_non_null(strstr(v.detail, "held"));
    w->teardown(state);
  }
  gs_rank_context outside = {.backend = GS_BACKEND_CPU, .unit_begin = 5, .unit_count = 2,
                             .unit_total = 6};
  void *state = NULL;
  assert_bug(w->setup(opts, &outside, &state), "[5, +2) outside the step's 6");
  w->options_free(opts);
}

int main(void) {
  gs_set_quiet(1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_locate),      cmocka_unit_test(test_bf16),
      cmocka_unit_test(test_checks),      cmocka_unit_test(test_reference),
      cmocka_unit_test(test_generate),    cmocka_unit_test(test_options),
      cmocka_unit_test(test_cost_by_hand),
      cmocka_unit_test(test_cpu_backend),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
