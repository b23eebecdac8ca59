/* Unit tests of core/roofline.c (a step's cost against one GPU model's
 * peak) and measure/roofline.c (a measurement's devices resolved to their
 * models): the achieved rate and fraction from figures worked by hand,
 * their 95% intervals from the median step's order statistics (and none
 * from too few steps), the peak of several GPUs summed, and every case
 * where no peak is known saying why; the shipped models state the peaks
 * that the workloads' bounds ask for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/roofline.h"
#include "measure/roofline.h"

#ifndef GS_SOURCE_DIR
#error "GS_SOURCE_DIR names the source tree (tests/CMakeLists.txt)"
#endif

static const char *const models_text =
    "{\"schema\": \"gpuscale/gpu-models/v1\", \"models\": [{\"model\": \"H200 SXM 141GB\", "
    "\"nvml_names\": [\"NVIDIA H200\"], \"form_factor\": \"sxm\", \"figures\": {"
    "\"memory_bandwidth_gbs\": {\"value\": 4800, \"source\": \"s1\"}, "
    "\"fp32_tflops\": {\"value\": 67, \"source\": \"s2\"}}}]}";

static void test_bytes_against_memory(void **state) {
  (void)state;
  // The figure: 10 M points of count (120 MB of points, 8 MiB grid)
  // in 95.5 us on an H200: 1.34 TB/s, 27.9% of 4.8 TB/s.
  const gs_cost cost = {.bytes = 120000000ull + 8388608ull, .flops = 60000000ull,
                        .bound = GS_BOUND_MEMORY};
  gs_roofline_record r;
  gs_roofline_compute(&cost, &(gs_roofline_step){95.5e-6, NAN, NAN, 0}, 4.8e12, "H200 SXM 141GB",
                      "", &r);
  assert_int_equal(r.bound, GS_BOUND_MEMORY);
  assert_true(fabs(r.achieved - 128388608.0 / 95.5e-6) < 1.0);
  assert_true(fabs(r.fraction - 0.28010) < 1e-4);
  assert_string_equal(r.model, "H200 SXM 141GB");
  assert_string_equal(r.why, "");
  char text[256];
  gs_roofline_describe(&r, text, sizeof text);
  assert_string_equal(text, "memory: 1.34 TB/s = 28.0% of 4.80 TB/s (H200 SXM 141GB)");
}

static void test_flops_against_math(void **state) {
  (void)state;
  // mlp large fp32 at batch 8192: 2.55 ms per step at 99.5 GFLOP per step
  // is 39.0 TFLOP/s, 58.2% of 67.
  const gs_cost cost = {.bytes = 1000, .flops = 99500000000ull, .bound = GS_BOUND_FP32};
  gs_roofline_record r;
  gs_roofline_compute(&cost, &(gs_roofline_step){2.55e-3, NAN, NAN, 0}, 67e12, "H200 SXM 141GB", "",
                      &r);
  assert_true(fabs(r.achieved - 3.90196e13) < 1e9);
  assert_true(fabs(r.fraction - 0.58238) < 1e-4);
  char text[256];
  gs_roofline_describe(&r, text, sizeof text);
  assert_string_equal(text, "fp32: 39.0 TFLOP/s = 58.2% of 67.0 TFLOP/s (H200 SXM 141GB)");
}

static void test_unknown_peak_says_why(void **state) {
  (void)state;
  const gs_cost cost = {.bytes = 2000000, .bound = GS_BOUND_MEMORY};
  gs_roofline_record r;
  gs_roofline_compute(&cost, &(gs_roofline_step){1e-3, NAN, NAN, 0}, NAN, "H200 SXM 141GB",
                      "the cpu backend has no GPU model", &r);
  assert_true(isnan(r.peak) && isnan(r.fraction));
  assert_true(fabs(r.achieved - 2e9) < 1e-3);
  assert_string_equal(r.model, "");
  char text[256];
  gs_roofline_describe(&r, text, sizeof text);
  assert_string_equal(text, "memory: 2.00 GB/s; no bound known: the cpu backend has no GPU model");
  // No bound declared: nothing at all.
  const gs_cost none = {.bytes = 5, .flops = 5};
  gs_roofline_compute(&none, &(gs_roofline_step){1e-3, NAN, NAN, 0}, 1e12, "x", "", &r);
  assert_int_equal(r.bound, GS_BOUND_NONE);
  // No step timed: the peak is known, the fraction is not.
  gs_roofline_compute(&cost, &(gs_roofline_step){NAN, NAN, NAN, 0}, 4.8e12, "H200 SXM 141GB", "",
                      &r);
  assert_true(isnan(r.fraction));
  gs_roofline_describe(&r, text, sizeof text);
  assert_string_equal(text, "memory: no step timed (peak 4.80 TB/s, H200 SXM 141GB)");
}

/* 20 steps of 2.50 .. 2.69 ms (0.01 ms apart) in two runs, out of order. */
static const double run_a[] = {2.69e-3, 2.52e-3, 2.61e-3, 2.55e-3, 2.66e-3, 2.50e-3, 2.58e-3,
                               2.63e-3, 2.54e-3, 2.60e-3};
static const double run_b[] = {2.51e-3, 2.68e-3, 2.57e-3, 2.64e-3, 2.53e-3, 2.67e-3, 2.56e-3,
                               2.62e-3, 2.59e-3, 2.65e-3};

static void test_fraction_interval_from_the_median_step(void **state) {
  (void)state;
  const gs_stats_group runs[] = {{run_a, 10}, {run_b, 10}};
  gs_roofline_step step;
  assert_int_equal(gs_roofline_step_of(runs, 2, &step), GS_OK);
  // n = 20: the median is the mean of the 10th and 11th, 2.595 ms; its
  // interval the order statistics l = floor(10 - 0.98 sqrt(20)) = 5 and
  // u = ceil(11 + 0.98 sqrt(20)) = 16: 2.54 and 2.65 ms.
  assert_true(fabs(step.median - 2.595e-3) < 1e-15);
  assert_true(step.low == 2.54e-3 && step.high == 2.65e-3);
  assert_int_equal(step.too_few, 0);
  assert_true(run_a[0] == 2.69e-3);  // the runs are not sorted in place
  const gs_cost cost = {.flops = 99500000000ull, .bound = GS_BOUND_FP32};
  gs_roofline_record r;
  gs_roofline_compute(&cost, &step, 67e12, "H200 SXM 141GB", "", &r);
  // fraction_low = work / (peak x median_high), fraction_high = work / (peak x median_low).
  const double work = 99.5e9, peak = 67e12;
  assert_true(fabs(r.fraction - work / (peak * 2.595e-3)) < 1e-12);
  assert_true(fabs(r.fraction_low - work / (peak * 2.65e-3)) < 1e-12);
  assert_true(fabs(r.fraction_high - work / (peak * 2.54e-3)) < 1e-12);
  assert_true(fabs(r.achieved_low - work / 2.65e-3) < 1.0);
  assert_true(fabs(r.achieved_high - work / 2.54e-3) < 1.0);
  assert_int_equal(r.too_few_steps, 0);
  char text[256];
  gs_roofline_describe(&r, text, sizeof text);
  assert_string_equal(text, "fp32: 38.3 TFLOP/s = 57.2% [56.0, 58.5] of 67.0 TFLOP/s "
                            "(H200 SXM 141GB)");
  // Without a peak the achieved rate still has its interval, the fraction none.
  gs_roofline_compute(&cost, &step, NAN, "", "the cpu backend has no GPU model", &r);
  assert_true(isfinite(r.achieved_low) && isnan(r.fraction_low) && isnan(r.fraction_high));
}

static void test_too_few_steps_for_an_interval(void **state) {
  (void)state;
  // Five steps: [min, max] would cover the median 93.8% of the time only.
  double v[6] = {5, 1, 4, 2, 3, 6}, median, low, high;
  assert_int_equal(gs_stats_median_interval(v, 5, &median, &low, &high), 0);
  assert_int_equal(gs_stats_median_interval(v, 6, &median, &low, &high), 1);
  const gs_stats_group five = {run_a, 5};
  gs_roofline_step step;
  assert_int_equal(gs_roofline_step_of(&five, 1, &step), GS_OK);
  assert_true(step.median == 2.61e-3 && isnan(step.low) && isnan(step.high));
  assert_int_equal(step.too_few, 1);
  const gs_cost cost = {.bytes = 12000000000ull, .bound = GS_BOUND_MEMORY};
  gs_roofline_record r;
  gs_roofline_compute(&cost, &step, 4.8e12, "H200 SXM 141GB", "", &r);
  assert_true(isfinite(r.fraction) && isnan(r.fraction_low) && isnan(r.fraction_high));
  assert_int_equal(r.too_few_steps, 1);
  char text[256];
  gs_roofline_describe(&r, text, sizeof text);
  assert_string_equal(text, "memory: 4.60 TB/s = 95.8% (too few steps for an interval) of "
                            "4.80 TB/s (H200 SXM 141GB)");
  // No steps at all: no median, nothing too few.
  assert_int_equal(gs_roofline_step_of(&five, 0, &step), GS_OK);
  assert_true(isnan(step.median) && step.too_few == 0);
}

static void test_rate_interval_and_its_text(void **state) {
  (void)state;
  const gs_roofline_step step = {.median = 2.0, .low = 1.0, .high = 4.0};
  double low, high;
  gs_roofline_rate_interval(0.5, &step, &low, &high);
  assert_true(low == 0.25 && high == 1.0);
  gs_roofline_rate_interval(NAN, &step, &low, &high);
  assert_true(isnan(low) && isnan(high));
  const gs_roofline_step none = {.median = 2.0, .low = NAN, .high = NAN};
  gs_roofline_rate_interval(0.5, &none, &low, &high);
  assert_true(isnan(low) && isnan(high));
  char text[96];
  gs_roofline_fraction_text(0.581, 0.579, 0.583, 0, "steps", text, sizeof text);
  assert_string_equal(text, "58.1% [57.9, 58.3]");
  gs_roofline_fraction_text(0.581, NAN, NAN, 1, "requests", text, sizeof text);
  assert_string_equal(text, "58.1% (too few requests for an interval)");
  gs_roofline_fraction_text(0.581, NAN, NAN, 0, "steps", text, sizeof text);
  assert_string_equal(text, "58.1%");
  gs_roofline_fraction_text(NAN, NAN, NAN, 1, "steps", text, sizeof text);
  assert_string_equal(text, "-");
}

/* A measurement of `n` ranks on CUDA devices 0..n-1 named `name`. */
static void measurement(gs_measurement *m, gs_environment *env, gs_gpu_desc *gpus, int n,
                        const char *name, gs_bound bound) {
  memset(m, 0, sizeof *m);
  memset(env, 0, sizeof *env);
  snprintf(m->backend, sizeof m->backend, "cuda");
  m->world_size = n;
  for (int k = 0; k < n; k++) {
    m->devices[k] = k;
    memset(&gpus[k], 0, sizeof gpus[k]);
    gpus[k].index = k;
    snprintf(gpus[k].name, sizeof gpus[k].name, "%s", name);
  }
  env->gpu_count = (size_t)n;
  env->gpus = gpus;
  m->cost = (gs_cost){.bytes = 9600000000ull, .flops = 67000000000ull, .bound = bound};
  // One run of ten 1 s steps: the median 1 s, its interval [1, 1].
  static double steps[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  static gs_run_record run;
  run = (gs_run_record){.n_steps = 10, .step_seconds = steps};
  m->n_runs = 1;
  m->runs = &run;
  m->aggregate.step.n = 10;
  m->aggregate.step.median = 1.0;
}

static void test_devices_resolved_to_models(void **state) {
  (void)state;
  gs_measure_peaks p;
  memset(&p, 0, sizeof p);
  assert_int_equal(gs_gpu_models_parse(models_text, "models.json", &p.models), GS_OK);
  gs_measurement m;
  gs_environment env;
  gs_gpu_desc gpus[4];
  // Two H200s: twice one's bandwidth; 9.6 GB in 1 s is 0.1% of 2 x 4.8 TB/s.
  measurement(&m, &env, gpus, 2, "NVIDIA H200", GS_BOUND_MEMORY);
  assert_int_equal(gs_measure_roofline(&p, &env, &m), GS_OK);
  assert_true(fabs(m.roofline.peak - 9.6e12) < 1.0);
  assert_true(fabs(m.roofline.fraction - 1e-3) < 1e-12);
  assert_true(fabs(m.roofline.fraction_low - 1e-3) < 1e-12);
  assert_true(fabs(m.roofline.fraction_high - 1e-3) < 1e-12);
  assert_string_equal(m.roofline.model, "H200 SXM 141GB");
  // fp32 from the same model.
  measurement(&m, &env, gpus, 1, "NVIDIA H200", GS_BOUND_FP32);
  assert_int_equal(gs_measure_roofline(&p, &env, &m), GS_OK);
  assert_true(fabs(m.roofline.fraction - 1e-3) < 1e-12);
  // A figure the model does not state.
  measurement(&m, &env, gpus, 1, "NVIDIA H200", GS_BOUND_BF16);
  assert_int_equal(gs_measure_roofline(&p, &env, &m), GS_OK);
  assert_true(isnan(m.roofline.fraction));
  assert_string_equal(m.roofline.why, "H200 SXM 141GB states no bf16_tensor_tflops in models.json");
  // A GPU no model names.
  measurement(&m, &env, gpus, 1, "NVIDIA B200", GS_BOUND_MEMORY);
  assert_int_equal(gs_measure_roofline(&p, &env, &m), GS_OK);
  assert_string_equal(m.roofline.why, "no model named \"NVIDIA B200\" in models.json");
  // The cpu backend.
  measurement(&m, &env, gpus, 1, "NVIDIA H200", GS_BOUND_MEMORY);
  snprintf(m.backend, sizeof m.backend, "cpu");
  assert_int_equal(gs_measure_roofline(&p, &env, &m), GS_OK);
  assert_true(isnan(m.roofline.peak));
  assert_true(fabs(m.roofline.achieved - 9.6e9) < 1e-3);
  assert_string_equal(m.roofline.why, "the cpu backend has no GPU model");
  // No models found at all.
  gs_measure_peaks_close(&p);
  snprintf(p.why, sizeof p.why, "gpu-models.json not found");
  measurement(&m, &env, gpus, 1, "NVIDIA H200", GS_BOUND_MEMORY);
  assert_int_equal(gs_measure_roofline(&p, &env, &m), GS_OK);
  assert_string_equal(m.roofline.why, "gpu-models.json not found");
}

static void test_shipped_models_state_every_bound(void **state) {
  (void)state;
  gs_gpu_models m;
  assert_int_equal(gs_gpu_models_load(GS_SOURCE_DIR "/data/gpu-models.json", &m), GS_OK);
  for (size_t i = 0; i < m.n; i++)
    for (int b = GS_BOUND_MEMORY; b < GS_BOUND_COUNT; b++)
      assert_true(gs_roofline_model_peak(&m.models[i], (gs_bound)b) > 1e12);
  const gs_gpu_model *h200 = gs_gpu_models_find(&m, "NVIDIA H200");
  assert_true(gs_roofline_model_peak(h200, GS_BOUND_MEMORY) == 4.8e12);
  assert_true(gs_roofline_model_peak(h200, GS_BOUND_FP32) == 67e12);
  assert_true(gs_roofline_model_peak(h200, GS_BOUND_TF32) == 494.5e12);
  assert_true(gs_roofline_model_peak(h200, GS_BOUND_BF16) == 989.5e12);
  assert_string_equal(gs_bound_name(GS_BOUND_TF32), "tf32");
  gs_gpu_models_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bytes_against_memory),
      cmocka_unit_test(test_flops_against_math),
      cmocka_unit_test(test_unknown_peak_says_why),
      cmocka_unit_test(test_fraction_interval_from_the_median_step),
      cmocka_unit_test(test_too_few_steps_for_an_interval),
      cmocka_unit_test(test_rate_interval_and_its_text),
      cmocka_unit_test(test_devices_resolved_to_models),
      cmocka_unit_test(test_shipped_models_state_every_bound),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
