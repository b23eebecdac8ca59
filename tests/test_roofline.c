/* Unit tests of core/roofline.c (a step's cost against one GPU model's
 * peak) and measure/roofline.c (a measurement's devices resolved to their
 * models): the achieved rate and fraction from figures worked by hand,
 * the peak of several GPUs summed, and every case where no peak is known
 * saying why; the shipped models state the peaks that the workloads'
 * bounds ask for. */
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
  gs_roofline_compute(&cost, 95.5e-6, 4.8e12, "H200 SXM 141GB", "", &r);
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
  gs_roofline_compute(&cost, 2.55e-3, 67e12, "H200 SXM 141GB", "", &r);
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
  gs_roofline_compute(&cost, 1e-3, NAN, "H200 SXM 141GB", "the cpu backend has no GPU model", &r);
  assert_true(isnan(r.peak) && isnan(r.fraction));
  assert_true(fabs(r.achieved - 2e9) < 1e-3);
  assert_string_equal(r.model, "");
  char text[256];
  gs_roofline_describe(&r, text, sizeof text);
  assert_string_equal(text, "memory: 2.00 GB/s; no bound known: the cpu backend has no GPU model");
  // No bound declared: nothing at all.
  const gs_cost none = {.bytes = 5, .flops = 5};
  gs_roofline_compute(&none, 1e-3, 1e12, "x", "", &r);
  assert_int_equal(r.bound, GS_BOUND_NONE);
  // No step timed: the peak is known, the fraction is not.
  gs_roofline_compute(&cost, NAN, 4.8e12, "H200 SXM 141GB", "", &r);
  assert_true(isnan(r.fraction));
  gs_roofline_describe(&r, text, sizeof text);
  assert_string_equal(text, "memory: no step timed (peak 4.80 TB/s, H200 SXM 141GB)");
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
  gs_measure_roofline(&p, &env, &m);
  assert_true(fabs(m.roofline.peak - 9.6e12) < 1.0);
  assert_true(fabs(m.roofline.fraction - 1e-3) < 1e-12);
  assert_string_equal(m.roofline.model, "H200 SXM 141GB");
  // fp32 from the same model.
  measurement(&m, &env, gpus, 1, "NVIDIA H200", GS_BOUND_FP32);
  gs_measure_roofline(&p, &env, &m);
  assert_true(fabs(m.roofline.fraction - 1e-3) < 1e-12);
  // A figure the model does not state.
  measurement(&m, &env, gpus, 1, "NVIDIA H200", GS_BOUND_BF16);
  gs_measure_roofline(&p, &env, &m);
  assert_true(isnan(m.roofline.fraction));
  assert_string_equal(m.roofline.why, "H200 SXM 141GB states no bf16_tensor_tflops in models.json");
  // A GPU no model names.
  measurement(&m, &env, gpus, 1, "NVIDIA B200", GS_BOUND_MEMORY);
  gs_measure_roofline(&p, &env, &m);
  assert_string_equal(m.roofline.why, "no model named \"NVIDIA B200\" in models.json");
  // The cpu backend.
  measurement(&m, &env, gpus, 1, "NVIDIA H200", GS_BOUND_MEMORY);
  snprintf(m.backend, sizeof m.backend, "cpu");
  gs_measure_roofline(&p, &env, &m);
  assert_true(isnan(m.roofline.peak));
  assert_true(fabs(m.roofline.achieved - 9.6e9) < 1e-3);
  assert_string_equal(m.roofline.why, "the cpu backend has no GPU model");
  // No models found at all.
  gs_measure_peaks_close(&p);
  snprintf(p.why, sizeof p.why, "gpu-models.json not found");
  measurement(&m, &env, gpus, 1, "NVIDIA H200", GS_BOUND_MEMORY);
  gs_measure_roofline(&p, &env, &m);
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
      cmocka_unit_test(test_devices_resolved_to_models),
      cmocka_unit_test(test_shipped_models_state_every_bound),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
