/* Tests of core/scaling: speedup, strong and weak efficiency, Karp-Flatt,
 * the verdict thresholds at their edges, the wording per backend, which
 * measurement of a series the verdict speaks of, and the series name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/scaling.h"

static void test_speedup_and_efficiency(void **state) {
  (void)state;
  assert_float_equal(gs_scaling_speedup(80e6, 100e6), 1.25, 1e-15);
  assert_true(isnan(gs_scaling_speedup(0.0, 100.0)));
  assert_true(isnan(gs_scaling_speedup(100.0, -1.0)));
  assert_true(isnan(gs_scaling_speedup(NAN, 100.0)));
  assert_true(isnan(gs_scaling_speedup(100.0, INFINITY)));
  assert_float_equal(gs_scaling_efficiency(1.25, 2), 0.625, 1e-15);
  assert_true(isnan(gs_scaling_efficiency(1.25, 0)));
  assert_true(isnan(gs_scaling_efficiency(NAN, 2)));
}

/* Strong scaling: 1e6 items in 12.5 ms on 1 rank, 10 ms on 2: the speedup
 * is T(1)/T(N) and the efficiency T(1)/(N T(N)). Weak scaling: each rank
 * does 1e6 items; 2 ranks take 12.5 ms for 2e6 items against 10 ms for 1e6
 * on one: the efficiency is T(1)/T(N) = 0.8 and the scaled speedup 1.6. */
static void test_strong_and_weak(void **state) {
  (void)state;
  const double t1 = 0.010, items = 1e6;
  double s = gs_scaling_speedup(items / 0.0125, items / t1);
  assert_float_equal(s, 0.0125 / t1, 1e-12);
  s = gs_scaling_speedup(items / t1, items / 0.005);
  assert_float_equal(gs_scaling_efficiency(s, 2), t1 / (2 * 0.005), 1e-12);
  // Weak: 2e6 items over 2 ranks in 12.5 ms.
  s = gs_scaling_speedup(items / t1, 2 * items / 0.0125);
  assert_float_equal(s, 1.6, 1e-12);
  assert_float_equal(gs_scaling_efficiency(s, 2), t1 / 0.0125, 1e-12);
  // The ideal step: divided under strong scaling, unchanged under weak.
  assert_float_equal(gs_scaling_ideal_step(GS_SCALING_STRONG, 0.110, 2), 0.055, 1e-15);
  assert_float_equal(gs_scaling_ideal_step(GS_SCALING_WEAK, 0.110, 4), 0.110, 1e-15);
  assert_float_equal(gs_scaling_ideal_step(GS_SCALING_NONE, 0.110, 4), 0.110, 1e-15);
  assert_true(isnan(gs_scaling_ideal_step(GS_SCALING_STRONG, NAN, 2)));
  assert_int_equal(gs_scaling_of("strong"), GS_SCALING_STRONG);
  assert_int_equal(gs_scaling_of("weak"), GS_SCALING_WEAK);
  assert_int_equal(gs_scaling_of("none"), GS_SCALING_NONE);
  assert_int_equal(gs_scaling_of(NULL), GS_SCALING_NONE);
}

static void test_karp_flatt(void **state) {
  (void)state;
  // S = 1.25 at N = 2: (0.8 - 0.5) / 0.5 = 0.6 (docs/report.md's example).
  assert_float_equal(gs_scaling_karp_flatt(1.25, 2), 0.6, 1e-12);
  // Perfect scaling has no serial fraction; S = 1 at any N is all serial.
  assert_float_equal(gs_scaling_karp_flatt(4.0, 4), 0.0, 1e-12);
  assert_float_equal(gs_scaling_karp_flatt(1.0, 8), 1.0, 1e-12);
  // S = 3 at N = 4: (1/3 - 1/4) / (3/4) = 1/9.
  assert_float_equal(gs_scaling_karp_flatt(3.0, 4), 1.0 / 9.0, 1e-12);
  assert_true(isnan(gs_scaling_karp_flatt(1.0, 1)));
  assert_true(isnan(gs_scaling_karp_flatt(0.0, 2)));
}

static void test_thresholds_at_edges(void **state) {
  (void)state;
  assert_int_equal(gs_scaling_verdict(NAN), GS_VERDICT_NONE);
  assert_int_equal(gs_scaling_verdict(0.0), GS_VERDICT_NONE);
  assert_int_equal(gs_scaling_verdict(-1.0), GS_VERDICT_NONE);
  assert_int_equal(gs_scaling_verdict(0.5), GS_VERDICT_SINGLE);
  assert_int_equal(gs_scaling_verdict(nextafter(0.95, 0.0)), GS_VERDICT_SINGLE);
  assert_int_equal(gs_scaling_verdict(0.95), GS_VERDICT_MARGINAL);
  assert_int_equal(gs_scaling_verdict(nextafter(1.1, 0.0)), GS_VERDICT_MARGINAL);
  assert_int_equal(gs_scaling_verdict(1.1), GS_VERDICT_BENEFICIAL);
  assert_int_equal(gs_scaling_verdict(1.9), GS_VERDICT_BENEFICIAL);
  assert_string_equal(gs_verdict_name(GS_VERDICT_BENEFICIAL), "beneficial");
  assert_string_equal(gs_verdict_name(GS_VERDICT_MARGINAL), "marginal");
  assert_string_equal(gs_verdict_name(GS_VERDICT_SINGLE), "single GPU preferred");
  assert_string_equal(gs_verdict_name(GS_VERDICT_NONE), "none");
}

static void test_words_per_backend(void **state) {
  (void)state;
  static const struct {
    gs_verdict verdict;
    const char *backend, *words;
  } cases[] = {
      {GS_VERDICT_BENEFICIAL, "cuda", "multi-GPU beneficial"},
      {GS_VERDICT_MARGINAL, "cuda", "multi-GPU marginal"},
      {GS_VERDICT_SINGLE, "cuda", "single GPU preferred"},
      {GS_VERDICT_BENEFICIAL, "cpu", "multi-rank beneficial"},
      {GS_VERDICT_MARGINAL, "cpu", "multi-rank marginal"},
      {GS_VERDICT_SINGLE, "cpu", "single rank preferred"},
      {GS_VERDICT_NONE, "cpu", "no verdict"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char w[64];
    gs_scaling_verdict_words(cases[i].verdict, cases[i].backend, w, sizeof w);
    assert_string_equal(w, cases[i].words);
  }
}

static void test_which_measurement(void **state) {
  (void)state;
  const gs_scaling_point p[] = {
      {.world_size = 1, .ok = 0, .throughput = 50.0},  /* failed: not the baseline */
      {.world_size = 1, .ok = 1, .throughput = 100.0}, /* the baseline */
      {.world_size = 2, .ok = 1, .throughput = 190.0},
      {.world_size = 4, .ok = 1, .throughput = 300.0},
      {.world_size = 4, .ok = 1, .throughput = 90.0}, /* later at the same N: this one */
      {.world_size = 8, .ok = 0, .throughput = 900.0}, /* failed: skipped */
  };
  assert_int_equal(gs_scaling_baseline(p, 6), 1);
  gs_scaling_assessment a;
  gs_scaling_assess(p, 6, p[1].throughput, &a);
  assert_int_equal(a.point, 4);
  assert_int_equal(a.world_size, 4);
  assert_int_equal(a.largest, 8);
  assert_int_equal(a.verdict, GS_VERDICT_SINGLE);
  assert_float_equal(a.speedup, 0.9, 1e-12);
  assert_float_equal(a.efficiency, 0.225, 1e-12);
  assert_float_equal(a.ideal_throughput, 400.0, 1e-12);
  assert_null(a.none_reason);
  char text[512];
  gs_scaling_verdict_sentence(&a, "fuse (variant v, split even)", "cuda", "values", text,
                              sizeof text);
  assert_string_equal(text, "fuse (variant v, split even): single GPU preferred: speedup 0.90x at "
                            "4 ranks (< 0.95), efficiency 22.5%, Karp-Flatt serial fraction "
                            "1.148, throughput 90.0 values/s of ideal 400 values/s");
}

static void test_no_verdict(void **state) {
  (void)state;
  gs_scaling_assessment a;
  const gs_scaling_point one[] = {{.world_size = 1, .ok = 1, .throughput = 100.0}};
  gs_scaling_assess(one, 1, 100.0, &a);
  assert_int_equal(a.verdict, GS_VERDICT_NONE);
  assert_int_equal(a.point, -1);
  assert_non_null(strstr(a.none_reason, "only 1 rank"));
  const gs_scaling_point two[] = {{.world_size = 2, .ok = 1, .throughput = 100.0}};
  gs_scaling_assess(two, 1, NAN, &a);
  assert_int_equal(a.verdict, GS_VERDICT_NONE);
  assert_non_null(strstr(a.none_reason, "no usable 1-rank"));
  const gs_scaling_point failed[] = {{.world_size = 1, .ok = 1, .throughput = 100.0},
                                     {.world_size = 2, .ok = 0, .throughput = 300.0}};
  gs_scaling_assess(failed, 2, 100.0, &a);
  assert_int_equal(a.verdict, GS_VERDICT_NONE);
  assert_non_null(strstr(a.none_reason, "more than 1 rank"));
}

static void test_series_name(void **state) {
  (void)state;
  char label[128], name[256];
  gs_scaling_series_label("batch=8", NULL, -1, NULL, label, sizeof label);
  assert_string_equal(label, "variant batch=8");
  gs_scaling_series_label("", "offline", 0, "0:resample", label, sizeof label);
  assert_string_equal(label, "scenario offline, task 0 (0:resample)");
  gs_scaling_series_label(NULL, NULL, -1, NULL, label, sizeof label);
  assert_string_equal(label, "");
  gs_scaling_series_name("voxelize", "", "", name, sizeof name);
  assert_string_equal(name, "voxelize");
  gs_scaling_series_name("voxelize", "", "proportional", name, sizeof name);
  assert_string_equal(name, "voxelize (split proportional)");
  gs_scaling_series_name("mlp", "variant batch=8", "even", name, sizeof name);
  assert_string_equal(name, "mlp (variant batch=8, split even)");
  gs_scaling_series_name("mlp", "variant batch=8", NULL, name, sizeof name);
  assert_string_equal(name, "mlp (variant batch=8)");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_speedup_and_efficiency),
      cmocka_unit_test(test_strong_and_weak),
      cmocka_unit_test(test_karp_flatt),
      cmocka_unit_test(test_thresholds_at_edges),
      cmocka_unit_test(test_words_per_backend),
      cmocka_unit_test(test_which_measurement),
      cmocka_unit_test(test_no_verdict),
      cmocka_unit_test(test_series_name),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
