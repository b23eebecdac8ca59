/* GPU test of the voxelize kernels: every mode, odd and aligned point
 * counts, small non-cubic and 128^3 grids, non-power-of-two voxel sizes,
 * outside and non-finite points, three clouds and split ranks, all run
 * through the workload vtable on device 0 and verified against the CPU
 * reference. Skips (exit 77) where no CUDA device is usable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "workloads/voxelize/voxelize.h"

static cudaStream_t test_stream;

/* Parses args (NULL-terminated) into fresh, checked options. */
static void *parse_options(const char *const *args) {
  const gs_workload *w = &gs_workload_voxelize;
  void *opts = w->options_new();
  assert_non_null(opts);
  char *argv[32];
  int argc = 0;
  while (args[argc] != NULL) {
    argv[argc] = (char *)args[argc];
    argc++;
  }
  const gs_option *tables[] = {w->options_table(opts), NULL};
  assert_int_equal(gs_options_parse(tables, "test_gpu_voxelize", argc, argv, NULL, NULL), GS_OK);
  assert_int_equal(w->options_check(opts), GS_OK);
  return opts;
}

/* Runs setup, two steps (each must start from scratch) and verify on device
 * 0 for clouds [begin, begin + count); requires a pass. */
static void run_case(void *opts, uint64_t begin, uint64_t count, const char *label) {
  const gs_workload *w = &gs_workload_voxelize;
  gs_rank_context ctx = {.rank = 0,
                         .world_size = 1,
                         .backend = GS_BACKEND_CUDA,
                         .device = 0,
                         .stream = test_stream,
                         .seed = 1234,
                         .unit_begin = begin,
                         .unit_count = count};
  void *state = NULL;
  assert_int_equal(w->setup(opts, &ctx, &state), GS_OK);
  assert_int_equal(w->step(state), GS_OK);
  assert_int_equal(w->step(state), GS_OK);
  gs_verification v;
  assert_int_equal(w->verify(state, &v), GS_OK);
  printf("  %s: %s\n", label, v.detail);
  if (v.status != GS_VERIFY_PASSED)
    fail_msg("%s: %llu mismatches (max abs error %g): %s", label,
             (unsigned long long)v.mismatches, v.max_abs_error, v.detail);
  w->teardown(state);
}

static void run_mode(const char *mode, const char *features) {
  // Grids: a small non-cubic one (heavy atomic contention), a 128^3 one,
  // a non-cubic one with non-power-of-two voxel sizes and an offset origin,
  // where any difference in division rounding would show, and two around
  // the count mode's shared-memory limit.
  static const char *const grids[][6] = {
      {"--grid", "3,5,7", "--voxel-size", "1", "--origin", "0,0,0"},
      {"--grid", "128", "--voxel-size", "1", "--origin", "0,0,0"},
      {"--grid", "96,64,40", "--voxel-size", "0.1,0.3,0.07", "--origin", "-4.8,-9.6,-1.3"},
      // Count grids of up to 4096 cells go through per-block shared memory:
      // the largest such grid, and one cell more.
      {"--grid", "16", "--voxel-size", "1", "--origin", "0,0,0"},
      {"--grid", "17,241,1", "--voxel-size", "0.5,0.03125,8", "--origin", "0,0,0"},
  };
  static const char *const points[] = {"1", "3", "4", "1003", "100001", "1000002"};
  for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
    for (size_t k = 0; k < sizeof points / sizeof points[0]; k++) {
      const char *args[] = {"--mode",     mode,        "--points", points[k],   "--clouds",
                            "3",          "--outside", "0.1",      "--nonfinite", "0.05",
                            grids[g][0],  grids[g][1], grids[g][2], grids[g][3], grids[g][4],
                            grids[g][5],  features ? "--features" : NULL, features, NULL};
      void *opts = parse_options(args);
      char label[160];
      snprintf(label, sizeof label, "%s F=%s grid %s points %s", mode, features ? features : "0",
               grids[g][1], points[k]);
      run_case(opts, 0, 3, label);
      // Another rank's share: clouds [1, 3) must see the same data.
      if (k == 4) run_case(opts, 1, 2, label);
      gs_workload_voxelize.options_free(opts);
    }
  }
  // No dropped points at all, and all points dropped.
  const char *clean[] = {"--mode", mode, "--points", "65537", "--clouds", "3",
                         features ? "--features" : NULL, features, NULL};
  void *opts = parse_options(clean);
  run_case(opts, 0, 3, "no dropped points");
  gs_workload_voxelize.options_free(opts);
  const char *dropped[] = {"--mode", mode, "--points", "5001", "--clouds", "3", "--outside", "0.5",
                           "--nonfinite", "0.5", features ? "--features" : NULL, features, NULL};
  opts = parse_options(dropped);
  run_case(opts, 0, 3, "all points dropped");
  gs_workload_voxelize.options_free(opts);
}

static void test_count(void **state) {
  (void)state;
  run_mode("count", NULL);
}

static void test_occupancy(void **state) {
  (void)state;
  run_mode("occupancy", NULL);
}

static void test_mean(void **state) {
  (void)state;
  run_mode("mean", "3");
  run_mode("mean", "4");  // F % 4 == 0: vector atomics on Hopper
}

static void test_max(void **state) {
  (void)state;
  run_mode("max", "3");
}

static void test_max_one_feature_many_clouds(void **state) {
  (void)state;
  const char *args[] = {"--mode", "max", "--features", "1", "--points", "777", "--clouds", "300",
                        "--grid", "8", "--outside", "0.2", NULL};
  void *opts = parse_options(args);
  run_case(opts, 0, 300, "max, 300 clouds");
  gs_workload_voxelize.options_free(opts);
}

int main(void) {
  int devices = 0;
  cudaError_t rc = cudaGetDeviceCount(&devices);
  if (rc != cudaSuccess || devices == 0) {
    printf("SKIP: no CUDA device: %s\n",
           rc != cudaSuccess ? cudaGetErrorString(rc) : "cudaGetDeviceCount returned 0");
    return 77;
  }
  if (cudaSetDevice(0) != cudaSuccess || cudaStreamCreate(&test_stream) != cudaSuccess) {
    fprintf(stderr, "cannot use CUDA device 0: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_count),
      cmocka_unit_test(test_occupancy),
      cmocka_unit_test(test_mean),
      cmocka_unit_test(test_max),
      cmocka_unit_test(test_max_one_feature_many_clouds),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  cudaStreamDestroy(test_stream);
  return failed;
}
