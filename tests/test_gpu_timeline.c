/* GPU test of the timeline kernel (resample and fuse): generated problems
 * through the workload vtable on device 0 (float32 and bfloat16, many
 * targets outside the source span, many duplicate timestamps, one sample,
 * odd widths that force scalar access, split batches, the fuse standard
 * configuration), and hand-made inputs through the launcher compared with
 * the CPU reference: float32 bit for bit, bfloat16 within one rounding of
 * the float32 result. Non-monotonic source times never reach the device:
 * the input check rejects them first. Skips (exit 77) without a device. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "platform/device.h"
#include "workload_options_fixture.h"
#include "workloads/timeline/resample.h"
#include "workloads/timeline/timeline_cuda.h"

static cudaStream_t test_stream;

/* Parses args (NULL-terminated) for workload w, then runs setup, two steps
 * and verify on device 0 for batch elements [begin, begin + count). */
static void run_case(const gs_workload *w, const char *const *args, uint64_t begin,
                     uint64_t count) {
  void *opts = workload_options(w, args);
  gs_rank_context ctx = {.rank = 0, .world_size = 1, .backend = GS_BACKEND_CUDA, .device = 0,
                         .stream = test_stream, .seed = 99, .unit_begin = begin,
                         .unit_count = count, .unit_total = begin + count};
  void *state = NULL;
  assert_int_equal(w->setup(opts, &ctx, &state), GS_OK);
  assert_int_equal(w->step(state), GS_OK);
  assert_int_equal(w->step(state), GS_OK);
  gs_verification v;
  assert_int_equal(w->verify(state, &v), GS_OK);
  if (v.status != GS_VERIFY_PASSED) fail_msg("%s: %s", w->key, v.detail);
  w->teardown(state);
  w->options_free(opts);
}

static void test_resample_generated(void **unused) {
  (void)unused;
  const char *f32[] = {"--dtype", "float32", "--batch", "5", "--samples", "77", "--targets",
                       "300", "--dims", "33", "--outside", "0.3", "--duplicates", "0.3", NULL};
  run_case(&gs_workload_resample, f32, 0, 5);
  run_case(&gs_workload_resample, f32, 2, 3);
  const char *bf16[] = {"--dtype", "bfloat16", "--batch", "3", "--samples", "500", "--targets",
                        "256", "--dims", "256", "--outside", "0.2", "--duplicates", "0.5", NULL};
  run_case(&gs_workload_resample, bf16, 0, 3);
  const char *one[] = {"--samples", "1", "--dims", "7", "--batch", "2", "--targets", "9", NULL};
  run_case(&gs_workload_resample, one, 0, 2);
  const char *all_dup[] = {"--samples", "40", "--dims", "2", "--duplicates", "1", NULL};
  run_case(&gs_workload_resample, all_dup, 0, 4);
}

static void test_fuse_generated(void **unused) {
  (void)unused;
  const char *standard[] = {"--batch", "4", NULL};
  run_case(&gs_workload_fuse, standard, 0, 4);
  run_case(&gs_workload_fuse, standard, 1, 2);
  const char *odd[] = {"--streams", "3x5,1x1,1000x3,17x64", "--targets", "123", "--dtype",
                       "float32", "--outside", "0.5", "--duplicates", "0.2", NULL};
  run_case(&gs_workload_fuse, odd, 0, 4);
  const char *odd_bf16[] = {"--streams", "3x5,1x1,1000x3,17x64", "--targets", "123", NULL};
  run_case(&gs_workload_fuse, odd_bf16, 0, 4);
}

/* One batch element, one stream of S samples x D through the launcher and
 * through the reference; returns the reference's status (the input check
 * runs first, as in setup, so rejected input never reaches the device). */
static gs_status run_direct(gs_timeline_dtype dtype, const float *times, uint32_t S,
                            const float *values, uint32_t D, const float *targets, uint32_t T) {
  const size_t elem = dtype == GS_TIMELINE_BF16 ? 2 : 4;
  gs_timeline_shape shape = {.n_streams = 1, .streams = {{S, D}}, .targets = T, .dtype = dtype};
  void *data = malloc((size_t)S * D * elem);
  void *ref = malloc((size_t)T * D * elem);
  void *got = malloc((size_t)T * D * elem);
  float *ref32 = malloc((size_t)T * D * sizeof(float));
  assert_true(data && ref && got && ref32);
  for (uint32_t i = 0; i < S * D; i++) {
    if (dtype == GS_TIMELINE_BF16)
      ((uint16_t *)data)[i] = gs_bf16_from_float(values[i]);
    else
      ((float *)data)[i] = values[i];
  }
  gs_timeline_inputs in = {.data = {data}, .times = {times}, .targets = targets};
  gs_status st = gs_timeline_cpu(&shape, &in, 0, ref, ref32);
  if (st == GS_OK) {
    gs_timeline_cuda_buffers b = {.n_streams = 1, .targets_count = T, .width = D, .batch = 1,
                                  .dtype = dtype, .sm_count = 4};
    void *d_data, *d_times, *d_targets, *d_out;
    assert_int_equal(cudaMalloc(&d_data, (size_t)S * D * elem), cudaSuccess);
    assert_int_equal(cudaMalloc(&d_times, S * sizeof(float)), cudaSuccess);
    assert_int_equal(cudaMalloc(&d_targets, T * sizeof(float)), cudaSuccess);
    assert_int_equal(cudaMalloc(&d_out, (size_t)T * D * elem), cudaSuccess);
    cudaMemcpy(d_data, data, (size_t)S * D * elem, cudaMemcpyHostToDevice);
    cudaMemcpy(d_times, times, S * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(d_targets, targets, T * sizeof(float), cudaMemcpyHostToDevice);
    b.streams[0] = (gs_timeline_cuda_stream){d_data, d_times, S, D, 0};
    b.targets = d_targets;
    b.out = d_out;
    assert_int_equal(gs_timeline_cuda_step(&b, test_stream), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(test_stream), cudaSuccess);
    assert_int_equal(cudaMemcpy(got, d_out, (size_t)T * D * elem, cudaMemcpyDeviceToHost),
                     cudaSuccess);
    // Same operations, same rounding: identical bits in either type.
    assert_memory_equal(got, ref, (size_t)T * D * elem);
    for (uint32_t i = 0; i < T * D; i++) {
      const float v = dtype == GS_TIMELINE_BF16 ? gs_bf16_to_float(((uint16_t *)got)[i])
                                                : ((float *)got)[i];
      assert_true(fabsf(v - ref32[i]) <= (dtype == GS_TIMELINE_BF16 ? fabsf(ref32[i]) / 256.0f : 0.0f));
    }
    cudaFree(d_data);
    cudaFree(d_times);
    cudaFree(d_targets);
    cudaFree(d_out);
  }
  free(data);
  free(ref);
  free(got);
  free(ref32);
  return st;
}

static void test_edges_direct(void **unused) {
  (void)unused;
  // Duplicates at 1 and 3 (three equal), targets before, at and after every
  // sample, between the duplicates' neighbours and far outside.
  const float times[] = {0.0f, 1.0f, 1.0f, 2.0f, 3.0f, 3.0f, 3.0f, 4.0f};
  float values[8 * 3];
  for (int i = 0; i < 24; i++) values[i] = (float)(i * i % 17) - 8.0f + 0.3f * (float)i;
  const float targets[] = {-5.0f, -0.0f, 0.0f, 0.5f, 1.0f, 1.0000001f, 1.5f, 2.999999f, 3.0f,
                           3.5f, 4.0f, 4.5f, 1e30f, -1e30f, 0.1f, 2.1f};
  for (int dt = 0; dt < 2; dt++) {
    assert_int_equal(run_direct((gs_timeline_dtype)dt, times, 8, values, 3, targets, 16), GS_OK);
    assert_int_equal(run_direct((gs_timeline_dtype)dt, times, 1, values, 3, targets, 16), GS_OK);
    assert_int_equal(run_direct((gs_timeline_dtype)dt, times, 2, values, 8, targets, 16), GS_OK);
  }
  // Large values that round differently to bfloat16 near ties.
  float wide[64 * 8];
  float wide_times[64];
  float wide_targets[200];
  for (int i = 0; i < 64; i++) wide_times[i] = (float)i * 0.37f;
  for (int i = 0; i < 64 * 8; i++) wide[i] = ldexpf(1.0f + (float)(i % 13) / 128.0f, i % 40 - 20);
  for (int i = 0; i < 200; i++) wide_targets[i] = (float)i * 0.12f - 0.5f;
  assert_int_equal(run_direct(GS_TIMELINE_BF16, wide_times, 64, wide, 8, wide_targets, 200), GS_OK);
  assert_int_equal(run_direct(GS_TIMELINE_F32, wide_times, 64, wide, 8, wide_targets, 200), GS_OK);
}

static void test_non_monotonic_rejected(void **unused) {
  (void)unused;
  const float times[] = {0.0f, 2.0f, 1.0f, 3.0f};
  const float values[4] = {1, 2, 3, 4};
  const float targets[] = {0.5f};
  assert_int_equal(run_direct(GS_TIMELINE_F32, times, 4, values, 1, targets, 1), GS_ERR_USAGE);
  assert_non_null(strstr(gs_last_error(), "must not decrease"));
}

int main(void) {
  char why[256] = "";
  if (gs_device_count(why, sizeof why) == 0) {
    printf("skipped: %s\n", why);
    return 77;
  }
  if (cudaSetDevice(0) != cudaSuccess || cudaStreamCreate(&test_stream) != cudaSuccess) {
    fprintf(stderr, "cannot use CUDA device 0: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resample_generated),
      cmocka_unit_test(test_fuse_generated),
      cmocka_unit_test(test_edges_direct),
      cmocka_unit_test(test_non_monotonic_rejected),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  cudaStreamDestroy(test_stream);
  return failed;
}
