/* GPU test of the voxelize kernels (both generations: GS_VOXELIZE_KERNELS):
 * every mode, odd and aligned point counts, steps replayed from a CUDA
 * graph and (--no-graph) launched kernel by kernel, small non-cubic and
 * 128^3 grids, non-power-of-two voxel sizes, outside and non-finite
 * points, three clouds and split ranks, all run through the workload
 * vtable on device 0 and verified against the CPU reference; and
 * hand-made clouds (one point, all in one voxel, points on slab
 * boundaries, all dropped) through the launcher's binned and atomic
 * paths. Skips (exit 77) where no CUDA device is usable. */
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

#include "core/rng.h"
#include "platform/device.h"
#include "workload_options_fixture.h"
#include "workloads/voxelize/voxelize.h"
#include "workloads/voxelize/voxelize_cuda.h"

static cudaStream_t test_stream;

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
                         .unit_count = count,
                         .unit_total = begin + count};
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
      void *opts = workload_options(&gs_workload_voxelize, args);
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
  void *opts = workload_options(&gs_workload_voxelize, clean);
  run_case(opts, 0, 3, "no dropped points");
  gs_workload_voxelize.options_free(opts);
  const char *dropped[] = {"--mode", mode, "--points", "5001", "--clouds", "3", "--outside", "0.5",
                           "--nonfinite", "0.5", features ? "--features" : NULL, features, NULL};
  opts = workload_options(&gs_workload_voxelize, dropped);
  run_case(opts, 0, 3, "all points dropped");
  gs_workload_voxelize.options_free(opts);
  // The steps launched kernel by kernel instead of replayed from a graph.
  const char *launched[] = {"--mode", mode, "--points", "1000002", "--clouds", "3", "--outside",
                            "0.1", "--no-graph", features ? "--features" : NULL, features, NULL};
  opts = workload_options(&gs_workload_voxelize, launched);
  run_case(opts, 0, 3, "--no-graph");
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

/* The first generation of kernels through the workload (GS_VOXELIZE_KERNELS=1,
 * what bench/voxelize_kernels.sh --ab measures against the second): the
 * binned path at 128^3 and every mode's atomic path on the odd grid. */
static void test_first_generation(void **state) {
  (void)state;
  assert_int_equal(setenv("GS_VOXELIZE_KERNELS", "1", 1), 0);
  static const char *const modes[][2] = {{"count", NULL}, {"occupancy", NULL}, {"mean", "4"},
                                         {"max", "3"}};
  for (size_t m = 0; m < 4; m++) {
    const char *args[] = {"--mode", modes[m][0], "--points", "1000002", "--clouds", "3",
                          "--outside", "0.1", "--nonfinite", "0.05", "--grid", "96,64,40",
                          "--voxel-size", "0.1,0.3,0.07", "--origin", "-4.8,-9.6,-1.3",
                          modes[m][1] ? "--features" : NULL, modes[m][1], NULL};
    void *opts = workload_options(&gs_workload_voxelize, args);
    char label[96];
    snprintf(label, sizeof label, "first generation: %s grid 96,64,40 points 1000002", modes[m][0]);
    run_case(opts, 0, 3, label);
    gs_workload_voxelize.options_free(opts);
  }
  assert_int_equal(unsetenv("GS_VOXELIZE_KERNELS"), 0);
}

static void test_max_one_feature_many_clouds(void **state) {
  (void)state;
  const char *args[] = {"--mode", "max", "--features", "1", "--points", "777", "--clouds", "300",
                        "--grid", "8", "--outside", "0.2", NULL};
  void *opts = workload_options(&gs_workload_voxelize, args);
  run_case(opts, 0, 300, "max, 300 clouds");
  gs_workload_voxelize.options_free(opts);
}

#define CHECK_CUDA_OK(expr) assert_int_equal((int)(expr), (int)cudaSuccess)

/* Runs `clouds` clouds of n hand-made points (host [clouds][n][3]) through
 * gs_voxelize_cuda_step in count and occupancy mode, with the binned path
 * forced (`binned`) or not, two steps each (the second on a workspace the
 * first left behind, over a poisoned grid), and compares grids and dropped
 * counts exactly with gs_voxelize_cpu. */
static void run_direct(const uint32_t dims[3], const float *pts, uint64_t n, uint32_t clouds,
                       int binned, const char *label) {
  for (int at = 0; at < 4; at++) {
    // Each mode in both generations of kernels.
    const int mode = GS_VOXELIZE_COUNT + at / 2, kernels = 1 + at % 2;
    gs_voxelize_params p = {.dims = {dims[0], dims[1], dims[2]},
                            .origin = {0.0f, 0.0f, 0.0f},
                            .voxel = {1.0f, 1.0f, 1.0f},
                            .mode = (gs_voxelize_mode)mode,
                            .features = 0};
    const uint64_t cells = gs_voxelize_cells(&p);
    uint32_t *ref = malloc(clouds * cells * sizeof(uint32_t));
    uint32_t *got = malloc(clouds * cells * sizeof(uint32_t));
    gs_voxelize_dropped *ref_dropped = malloc(clouds * sizeof *ref_dropped);
    unsigned long long *got_dropped = malloc(clouds * 2 * sizeof *got_dropped);
    assert_true(ref && got && ref_dropped && got_dropped);
    for (uint32_t c = 0; c < clouds; c++)
      assert_int_equal(gs_voxelize_cpu(&p, pts + c * n * 3, NULL, n, ref + c * cells, NULL, NULL,
                                       &ref_dropped[c]),
                       GS_OK);

    gs_voxelize_cuda_buffers b = {.kernels = kernels};
    int device = 0;
    CHECK_CUDA_OK(cudaGetDevice(&device));
    CHECK_CUDA_OK(cudaDeviceGetAttribute(&b.sm_count, cudaDevAttrMultiProcessorCount, device));
    CHECK_CUDA_OK(cudaDeviceGetAttribute(&b.max_threads_per_sm,
                                         cudaDevAttrMaxThreadsPerMultiProcessor, device));
    b.n = n;
    b.clouds = clouds;
    b.point_stride = (3 * n + 3) / 4 * 4;
    float *dpts = NULL;
    CHECK_CUDA_OK(cudaMalloc((void **)&dpts, clouds * b.point_stride * sizeof(float)));
    for (uint32_t c = 0; c < clouds; c++)
      CHECK_CUDA_OK(cudaMemcpy(dpts + c * b.point_stride, pts + c * n * 3, 3 * n * sizeof(float),
                               cudaMemcpyHostToDevice));
    b.points = dpts;
    CHECK_CUDA_OK(cudaMalloc(&b.out, clouds * cells * sizeof(uint32_t)));
    CHECK_CUDA_OK(cudaMalloc((void **)&b.dropped, clouds * 2 * sizeof(unsigned long long)));
    b.workspace_bytes = binned ? gs_voxelize_cuda_workspace_bytes(&p, n, clouds, 1) : 0;
    if (binned) assert_true(b.workspace_bytes > 0);
    if (b.workspace_bytes > 0) {
      CHECK_CUDA_OK(cudaMalloc(&b.workspace, b.workspace_bytes));
      CHECK_CUDA_OK(cudaMemset(b.workspace, 0, b.workspace_bytes));
    }
    for (int step = 0; step < 2; step++) {
      // Poison: every element and dropped count must be written by the step.
      CHECK_CUDA_OK(cudaMemset(b.out, 0xab, clouds * cells * sizeof(uint32_t)));
      CHECK_CUDA_OK(cudaMemset(b.dropped, 0xab, clouds * 2 * sizeof(unsigned long long)));
      CHECK_CUDA_OK(gs_voxelize_cuda_step(&p, &b, test_stream));
      CHECK_CUDA_OK(cudaStreamSynchronize(test_stream));
      CHECK_CUDA_OK(cudaMemcpy(got, b.out, clouds * cells * sizeof(uint32_t),
                               cudaMemcpyDeviceToHost));
      CHECK_CUDA_OK(cudaMemcpy(got_dropped, b.dropped, clouds * 2 * sizeof(unsigned long long),
                               cudaMemcpyDeviceToHost));
      for (uint32_t c = 0; c < clouds; c++) {
        if (got_dropped[2 * c] != ref_dropped[c].nonfinite ||
            got_dropped[2 * c + 1] != ref_dropped[c].outside)
          fail_msg("%s %s (kernels %d) step %d cloud %u: dropped %llu/%llu, reference %llu/%llu",
                   label, gs_voxelize_mode_name(p.mode), kernels, step, c, got_dropped[2 * c],
                   got_dropped[2 * c + 1], (unsigned long long)ref_dropped[c].nonfinite,
                   (unsigned long long)ref_dropped[c].outside);
        for (uint64_t v = 0; v < cells; v++)
          if (got[c * cells + v] != ref[c * cells + v])
            fail_msg("%s %s (kernels %d) step %d cloud %u cell %llu: %u, reference %u", label,
                     gs_voxelize_mode_name(p.mode), kernels, step, c, (unsigned long long)v,
                     got[c * cells + v], ref[c * cells + v]);
      }
    }
    printf("  %s %s (%s path, kernels %d): passed\n", label, gs_voxelize_mode_name(p.mode),
           b.workspace_bytes > 0 ? "binned" : "atomic", kernels);
    CHECK_CUDA_OK(cudaFree(b.workspace));
    CHECK_CUDA_OK(cudaFree(b.dropped));
    CHECK_CUDA_OK(cudaFree(b.out));
    CHECK_CUDA_OK(cudaFree(dpts));
    free(ref);
    free(got);
    free(ref_dropped);
    free(got_dropped);
  }
}

/* Point at the low corner of voxel `cell` of a dims grid (voxel size 1),
 * plus `frac` (in [0, 1)) on each axis. */
static void point_in_cell(const uint32_t dims[3], uint64_t cell, float frac, float *xyz) {
  xyz[0] = (float)(cell / ((uint64_t)dims[1] * dims[2])) + frac;
  xyz[1] = (float)(cell / dims[2] % dims[1]) + frac;
  xyz[2] = (float)(cell % dims[2]) + frac;
}

static void test_binned_paths(void **state) {
  (void)state;
  // 128^3: 256 slabs of 2^13 cells. 100x90x37: 163 slabs of 2^11 cells,
  // the last one partial.
  static const uint32_t grids[][3] = {{128, 128, 128}, {100, 90, 37}};
  const uint64_t nmax = 300007;
  float *pts = malloc(3 * 3 * nmax * sizeof(float));
  assert_non_null(pts);
  gs_rng rng;
  gs_rng_seed(&rng, 99, 0);
  for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
    const uint32_t *dims = grids[g];
    const uint64_t cells = (uint64_t)dims[0] * dims[1] * dims[2];
    uint32_t log2 = 0;
    while ((1ull << log2) < cells) log2++;
    const uint64_t slab = 1ull << (log2 - 8);
    char label[96];
    for (int binned = 1; binned >= 0; binned--) {
      // One point.
      float one[3];
      point_in_cell(dims, cells / 3, 0.5f, one);
      snprintf(label, sizeof label, "%ux%ux%u one point", dims[0], dims[1], dims[2]);
      run_direct(dims, one, 1, 1, binned, label);
      // All points of three clouds in one voxel: buckets overflow.
      const uint64_t n = nmax;
      for (uint64_t i = 0; i < 3 * n; i++) point_in_cell(dims, slab + 5, 0.25f, pts + 3 * i);
      snprintf(label, sizeof label, "%ux%ux%u all in one voxel", dims[0], dims[1], dims[2]);
      run_direct(dims, pts, n, 3, binned, label);
      // Points on slab boundaries (the first and last cell of every slab,
      // on the voxels' low faces and just inside their high faces), mixed
      // with uniform, outside (high face, negative) and non-finite points.
      for (uint64_t i = 0; i < 3 * n; i++) {
        float *q = pts + 3 * i;
        const uint64_t r = gs_rng_next(&rng);
        const uint64_t s = (r >> 8) % ((cells + slab - 1) / slab);
        switch (r % 8) {
          case 0: point_in_cell(dims, s * slab, 0.0f, q); break;
          case 1: point_in_cell(dims, (s + 1) * slab - 1 < cells ? (s + 1) * slab - 1 : cells - 1,
                                0.99f, q); break;
          case 2: point_in_cell(dims, (r >> 20) % cells, 0.0f, q); q[r % 3] = (float)dims[r % 3];
                  break;
          case 3: point_in_cell(dims, (r >> 20) % cells, 0.5f, q); q[(r >> 2) % 3] = -0.01f;
                  break;
          case 4: point_in_cell(dims, (r >> 20) % cells, 0.5f, q); q[(r >> 2) % 3] = NAN; break;
          default: point_in_cell(dims, (r >> 20) % cells, 0.5f, q); break;
        }
      }
      snprintf(label, sizeof label, "%ux%ux%u slab boundaries", dims[0], dims[1], dims[2]);
      run_direct(dims, pts, n - 2, 3, binned, label);  // n % 4 == 1: a tail
      // Every point dropped.
      for (uint64_t i = 0; i < 3 * n; i++) {
        point_in_cell(dims, i % cells, 0.5f, pts + 3 * i);
        pts[3 * i + i % 3] = i % 2 ? INFINITY : -1.0f;
      }
      snprintf(label, sizeof label, "%ux%ux%u all dropped", dims[0], dims[1], dims[2]);
      run_direct(dims, pts, n, 3, binned, label);
    }
  }
  free(pts);
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
      cmocka_unit_test(test_count),
      cmocka_unit_test(test_occupancy),
      cmocka_unit_test(test_mean),
      cmocka_unit_test(test_max),
      cmocka_unit_test(test_max_one_feature_many_clouds),
      cmocka_unit_test(test_binned_paths),
      cmocka_unit_test(test_first_generation),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  cudaStreamDestroy(test_stream);
  return failed;
}
