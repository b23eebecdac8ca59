/* Tests of the voxelize CPU reference, its generated data and its options:
 * hand-built points on a non-cubic 3x5x7 grid pin the row-major layout,
 * the edge rules, the dropping of non-finite and outside points and the
 * empty-voxel values of every mode; the CPU backend runs through the
 * workload vtable; the option table rejects bad values and combinations. */
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
#include "workloads/voxelize/voxelize.h"

/* A 3x5x7 grid of unit voxels at the origin. */
static gs_voxelize_params grid357(gs_voxelize_mode mode, uint32_t features) {
  gs_voxelize_params p = {.dims = {3, 5, 7},
                          .origin = {0.0f, 0.0f, 0.0f},
                          .voxel = {1.0f, 1.0f, 1.0f},
                          .mode = mode,
                          .features = features};
  return p;
}

static size_t cell_of(size_t x, size_t y, size_t z) { return (x * 5 + y) * 7 + z; }

static void test_layout_is_row_major(void **state) {
  (void)state;
  gs_voxelize_params p = grid357(GS_VOXELIZE_COUNT, 0);
  const float pts[] = {2.5f, 4.5f, 6.5f,  /* (2,4,6): last cell */
                       1.5f, 0.5f, 3.5f,  /* (1,0,3) */
                       0.5f, 4.5f, 0.5f,  /* (0,4,0) */
                       1.2f, 0.9f, 3.1f,  /* (1,0,3) again */
                       0.5f, 0.5f, 1.5f}; /* (0,0,1): z is fastest */
  uint32_t out[105];
  gs_voxelize_dropped d;
  assert_int_equal(gs_voxelize_cpu(&p, pts, NULL, 5, out, NULL, NULL, &d), GS_OK);
  assert_int_equal(gs_voxelize_cells(&p), 105);
  assert_int_equal(out[104], 1);
  assert_int_equal(out[cell_of(2, 4, 6)], 1);
  assert_int_equal(out[cell_of(1, 0, 3)], 2);
  assert_int_equal(out[cell_of(0, 4, 0)], 1);
  assert_int_equal(out[1], 1);
  uint64_t total = 0;
  for (size_t i = 0; i < 105; i++) total += out[i];
  assert_int_equal(total, 5);
  assert_int_equal(d.nonfinite, 0);
  assert_int_equal(d.outside, 0);
  uint64_t cell = 0;
  assert_int_equal(gs_voxelize_classify(&p, 2.5f, 1.5f, 0.5f, &cell), GS_VOXELIZE_INSIDE);
  assert_int_equal(cell, cell_of(2, 1, 0));
}

static void test_edges(void **state) {
  (void)state;
  gs_voxelize_params p = grid357(GS_VOXELIZE_COUNT, 0);
  uint64_t cell = 99;
  // Low edges are inside, high edges outside.
  assert_int_equal(gs_voxelize_classify(&p, 0.0f, 0.0f, 0.0f, &cell), GS_VOXELIZE_INSIDE);
  assert_int_equal(cell, 0);
  assert_int_equal(gs_voxelize_classify(&p, -0.0f, 0.0f, 0.0f, &cell), GS_VOXELIZE_INSIDE);
  assert_int_equal(gs_voxelize_classify(&p, 1.0f, 2.0f, 3.0f, &cell), GS_VOXELIZE_INSIDE);
  assert_int_equal(cell, cell_of(1, 2, 3));
  assert_int_equal(gs_voxelize_classify(&p, 3.0f, 0.0f, 0.0f, &cell), GS_VOXELIZE_OUTSIDE);
  assert_int_equal(gs_voxelize_classify(&p, 0.0f, 5.0f, 0.0f, &cell), GS_VOXELIZE_OUTSIDE);
  assert_int_equal(gs_voxelize_classify(&p, 0.0f, 0.0f, 7.0f, &cell), GS_VOXELIZE_OUTSIDE);
  // Just inside the high edges, just outside the low ones.
  assert_int_equal(gs_voxelize_classify(&p, nextafterf(3.0f, 0.0f), nextafterf(5.0f, 0.0f),
                                        nextafterf(7.0f, 0.0f), &cell),
                   GS_VOXELIZE_INSIDE);
  assert_int_equal(cell, 104);
  assert_int_equal(gs_voxelize_classify(&p, -1e-30f, 0.0f, 0.0f, &cell), GS_VOXELIZE_OUTSIDE);
  assert_int_equal(gs_voxelize_classify(&p, 0.0f, -1e-7f, 0.0f, &cell), GS_VOXELIZE_OUTSIDE);
  assert_int_equal(gs_voxelize_classify(&p, 0.0f, 0.0f, -1.0f, &cell), GS_VOXELIZE_OUTSIDE);
  // Far away and huge values must not reach an integer conversion.
  assert_int_equal(gs_voxelize_classify(&p, 3e38f, 0.0f, 0.0f, &cell), GS_VOXELIZE_OUTSIDE);
  assert_int_equal(gs_voxelize_classify(&p, -3e38f, 0.0f, 0.0f, &cell), GS_VOXELIZE_OUTSIDE);

  const float pts[] = {0.0f, 0.0f, 0.0f, 3.0f, 1.0f, 1.0f, 1.0f, 5.0f, 1.0f,
                       1.0f, 1.0f, 7.0f, -0.01f, 1.0f, 1.0f, 2.999f, 4.999f, 6.999f};
  uint32_t out[105];
  gs_voxelize_dropped d;
  assert_int_equal(gs_voxelize_cpu(&p, pts, NULL, 6, out, NULL, NULL, &d), GS_OK);
  assert_int_equal(out[0], 1);
  assert_int_equal(out[104], 1);
  assert_int_equal(d.outside, 4);
  assert_int_equal(d.nonfinite, 0);
}

static void test_nonfinite_dropped_and_counted(void **state) {
  (void)state;
  gs_voxelize_params p = grid357(GS_VOXELIZE_COUNT, 0);
  const float pts[] = {NAN,       1.0f,     1.0f,       1.0f, NAN,      1.0f, 1.0f, 1.0f,
                       NAN,       INFINITY, 1.0f,       1.0f, 1.0f,     -INFINITY, 1.0f,
                       /* non-finite wins over outside */ 100.0f, NAN, -5.0f,
                       /* an ordinary outside point and an inside one */ 1.0f, 1.0f, 50.0f,
                       1.5f,      1.5f,     1.5f};
  uint32_t out[105], counts[105];
  gs_voxelize_dropped d;
  assert_int_equal(gs_voxelize_cpu(&p, pts, NULL, 8, out, counts, NULL, &d), GS_OK);
  assert_int_equal(d.nonfinite, 6);
  assert_int_equal(d.outside, 1);
  uint64_t total = 0;
  for (size_t i = 0; i < 105; i++) total += out[i];
  assert_int_equal(total, 1);
  assert_int_equal(out[cell_of(1, 1, 1)], 1);
  assert_memory_equal(out, counts, sizeof out);
}

static void test_max_keeps_negative_values(void **state) {
  (void)state;
  gs_voxelize_params p = grid357(GS_VOXELIZE_MAX, 2);
  const float pts[] = {1.5f, 2.5f, 3.5f, 1.1f, 2.9f, 3.2f, 0.5f, 0.5f, 0.5f};
  const float feat[] = {-0.5f, -2.0f, -0.25f, -3.0f, -7.0f, 0.5f};
  float out[105 * 2];
  gs_voxelize_dropped d;
  assert_int_equal(gs_voxelize_cpu(&p, pts, feat, 3, out, NULL, NULL, &d), GS_OK);
  const size_t c = cell_of(1, 2, 3);
  assert_true(out[2 * c] == -0.25f);
  assert_true(out[2 * c + 1] == -2.0f);
  assert_true(out[0] == -7.0f);
  assert_true(out[1] == 0.5f);
  for (size_t v = 0; v < 105; v++) {
    if (v == c || v == 0) continue;
    assert_true(out[2 * v] == 0.0f && out[2 * v + 1] == 0.0f);  // empty voxels are 0
  }
  assert_int_equal(gs_voxelize_elem_size(&p), 4);
  assert_int_equal(gs_voxelize_out_bytes(&p), 105 * 2 * 4);
}

static void test_mean_and_occupancy(void **state) {
  (void)state;
  gs_voxelize_params p = grid357(GS_VOXELIZE_MEAN, 2);
  const float pts[] = {2.5f, 0.5f, 6.5f, 2.0f, 0.0f, 6.0f, 2.7f, 0.2f, 6.9f, 0.5f, 0.5f, 0.5f};
  const float feat[] = {1.0f, 2.0f, 3.0f, -4.0f, 2.0f, -1.0f, -0.5f, 0.25f};
  float out[105 * 2];
  uint32_t counts[105];
  gs_voxelize_dropped d;
  assert_int_equal(gs_voxelize_cpu(&p, pts, feat, 4, out, counts, NULL, &d), GS_OK);
  const size_t c = cell_of(2, 0, 6);
  assert_int_equal(counts[c], 3);
  assert_true(out[2 * c] == 2.0f);
  assert_true(out[2 * c + 1] == -1.0f);
  assert_true(out[0] == -0.5f && out[1] == 0.25f);
  for (size_t v = 1; v < 105; v++)
    if (v != c) assert_true(out[2 * v] == 0.0f && out[2 * v + 1] == 0.0f);

  gs_voxelize_params q = grid357(GS_VOXELIZE_OCCUPANCY, 0);
  uint32_t occ[105];
  assert_int_equal(gs_voxelize_elem_size(&q), 4);
  assert_int_equal(gs_voxelize_cpu(&q, pts, NULL, 4, occ, NULL, NULL, &d), GS_OK);
  for (size_t v = 0; v < 105; v++) assert_int_equal(occ[v], v == c || v == 0);
}

static void test_axis_voxel_sizes_and_origin(void **state) {
  (void)state;
  gs_voxelize_params p = {.dims = {3, 5, 7},
                          .origin = {-1.0f, 2.0f, 10.0f},
                          .voxel = {0.5f, 2.0f, 0.25f},
                          .mode = GS_VOXELIZE_COUNT};
  uint64_t cell = 0;
  // (-0.75 + 1)/0.5 = 0.5 -> 0; (5 - 2)/2 = 1.5 -> 1; (10.625 - 10)/0.25 = 2.5 -> 2.
  assert_int_equal(gs_voxelize_classify(&p, -0.75f, 5.0f, 10.625f, &cell), GS_VOXELIZE_INSIDE);
  assert_int_equal(cell, cell_of(0, 1, 2));
  // The box is [-1, 0.5) x [2, 12) x [10, 11.75).
  assert_int_equal(gs_voxelize_classify(&p, -1.0f, 2.0f, 10.0f, &cell), GS_VOXELIZE_INSIDE);
  assert_int_equal(cell, 0);
  assert_int_equal(gs_voxelize_classify(&p, 0.25f, 11.0f, 11.5f, &cell), GS_VOXELIZE_INSIDE);
  assert_int_equal(cell, cell_of(2, 4, 6));
  assert_int_equal(gs_voxelize_classify(&p, 0.5f, 2.0f, 10.0f, &cell), GS_VOXELIZE_OUTSIDE);
  assert_int_equal(gs_voxelize_classify(&p, 0.0f, 12.0f, 10.0f, &cell), GS_VOXELIZE_OUTSIDE);
  assert_int_equal(gs_voxelize_classify(&p, 0.0f, 2.0f, 11.75f, &cell), GS_VOXELIZE_OUTSIDE);
  assert_int_equal(gs_voxelize_classify(&p, 0.0f, 1.999f, 10.0f, &cell), GS_VOXELIZE_OUTSIDE);
  // The point (0,0,0) of a zero-origin grid is not inside this one.
  assert_int_equal(gs_voxelize_classify(&p, 0.0f, 0.0f, 0.0f, &cell), GS_VOXELIZE_OUTSIDE);
}

static void test_batch_clouds_are_independent(void **state) {
  (void)state;
  gs_voxelize_params p = grid357(GS_VOXELIZE_COUNT, 0);
  const uint64_t n = 1000;
  float *pts = malloc(2 * n * 3 * sizeof *pts);
  uint32_t *batch = calloc(2 * 105, sizeof *batch);
  uint32_t *alone = calloc(105, sizeof *alone);
  assert_non_null(pts);
  assert_non_null(batch);
  assert_non_null(alone);
  uint64_t nf0 = gs_voxelize_generate(&p, n, 0.1, 0.05, 42, 0, pts, NULL);
  uint64_t nf1 = gs_voxelize_generate(&p, n, 0.1, 0.05, 42, 1, pts + 3 * n, NULL);
  assert_true(nf0 > 0 && nf1 > 0);
  // Clouds differ, and a cloud made alone equals the same cloud in a batch.
  assert_memory_not_equal(pts, pts + 3 * n, 3 * n * sizeof *pts);
  float *again = malloc(3 * n * sizeof *again);
  assert_non_null(again);
  assert_int_equal(gs_voxelize_generate(&p, n, 0.1, 0.05, 42, 1, again, NULL), nf1);
  assert_memory_equal(again, pts + 3 * n, 3 * n * sizeof *pts);

  gs_voxelize_dropped d[2], d1;
  for (int c = 0; c < 2; c++)
    assert_int_equal(gs_voxelize_cpu(&p, pts + 3 * n * c, NULL, n, batch + 105 * c, NULL, NULL,
                                     &d[c]),
                     GS_OK);
  assert_int_equal(gs_voxelize_cpu(&p, again, NULL, n, alone, NULL, NULL, &d1), GS_OK);
  assert_memory_equal(alone, batch + 105, 105 * sizeof *alone);
  assert_int_equal(d1.nonfinite, d[1].nonfinite);
  assert_int_equal(d[0].nonfinite, nf0);
  assert_int_equal(d[1].nonfinite, nf1);
  for (int c = 0; c < 2; c++) {
    uint64_t total = d[c].nonfinite + d[c].outside;
    for (size_t v = 0; v < 105; v++) total += batch[105 * c + v];
    assert_int_equal(total, n);
    assert_true(d[c].outside > 0);
  }
  free(again);
  free(alone);
  free(batch);
  free(pts);
}

/* The cost per mode at the size (10 M points, one cloud, 128^3),
 * against the sums done by hand: 12 coordinate bytes and 4 per feature of
 * every point read once, the grid written once (uint32 per voxel for count
 * and occupancy, a float per voxel and feature for mean and max). */
static void test_cost_per_mode(void **state) {
  (void)state;
  const gs_workload *w = &gs_workload_voxelize;
  static const char *const modes[] = {"count", "occupancy", "mean", "max"};
  static const uint64_t bytes[] = {120000000ull + 8388608ull, 120000000ull + 8388608ull,
                                   280000000ull + 33554432ull, 280000000ull + 33554432ull};
  // 6 per point (3 subtractions, 3 divisions), 1 per point and feature, and
  // mean's division per output value.
  static const uint64_t flops[] = {60000000ull, 60000000ull, 100000000ull + 8388608ull,
                                   100000000ull};
  for (int k = 0; k < 4; k++) {
    const int features = k >= 2;
    const char *args[] = {"--points", "10M", "--clouds", "1", "--mode", modes[k],
                          features ? "--features" : NULL, "4", NULL};
    void *opts = workload_options(w, args);
    gs_cost cost;
    w->cost(opts, 1, &cost);
    assert_int_equal(cost.items, 10000000);
    assert_int_equal(cost.bytes, bytes[k]);
    assert_int_equal(cost.flops, flops[k]);
    assert_int_equal(cost.bound, GS_BOUND_MEMORY);
    w->options_free(opts);
  }
}

/* The parse or check status of args (NULL-terminated) as voxelize options. */
static gs_status parse_status(const char *const *args) {
  void *opts = NULL;
  gs_status st = workload_options_parse(&gs_workload_voxelize, args, &opts);
  gs_workload_voxelize.options_free(opts);
  return st;
}

static void test_options_defaults_and_values(void **state) {
  (void)state;
  const gs_workload *w = &gs_workload_voxelize;
  const char *none[] = {NULL};
  void *opts = workload_options(w, none);
  assert_int_equal(w->work_units(opts), 8);
  gs_cost cost;
  w->cost(opts, 2, &cost);
  assert_int_equal(cost.items, 2000000);
  assert_int_equal(cost.bytes, 2ull * 1000000 * 12 + 2ull * 128 * 128 * 128 * 4);
  assert_int_equal(cost.flops, 2ull * 1000000 * 6);
  assert_string_equal(cost.item_unit, "points");
  cJSON *j = w->options_to_json(opts);
  assert_non_null(j);
  assert_string_equal(cJSON_GetObjectItem(j, "mode")->valuestring, "count");
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "grid")), 3);
  assert_true(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "grid"), 2)->valuedouble == 128.0);
  cJSON_Delete(j);
  w->options_free(opts);

  const char *args[] = {"--points", "10K", "--clouds=3", "--grid", "3,5,7", "--voxel-size",
                        "0.5,2,0.25", "--origin", "-1,2,10", "--mode", "max", "--features", "2",
                        "--outside", "0.1", "--nonfinite", "0.05", NULL};
  opts = workload_options(w, args);
  assert_int_equal(w->work_units(opts), 3);
  w->cost(opts, 3, &cost);
  assert_int_equal(cost.items, 30000);
  assert_int_equal(cost.bytes, 30000ull * (12 + 8) + 3ull * 105 * 2 * 4);
  assert_int_equal(cost.flops, 30000ull * 8);
  j = w->options_to_json(opts);
  assert_non_null(j);
  assert_string_equal(cJSON_GetObjectItem(j, "mode")->valuestring, "max");
  assert_true(cJSON_GetObjectItem(j, "points")->valuedouble == 10000.0);
  assert_true(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "grid"), 1)->valuedouble == 5.0);
  assert_true(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "voxel_size"), 2)->valuedouble == 0.25);
  assert_true(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "origin"), 0)->valuedouble == -1.0);
  assert_true(cJSON_GetObjectItem(j, "nonfinite")->valuedouble == 0.05);
  cJSON_Delete(j);
  w->options_free(opts);
}

static void test_options_reject_bad_values(void **state) {
  (void)state;
  const char *const bad[][8] = {
      {"--grid", "3,5", NULL},                            // 2 axes
      {"--grid", "0", NULL},                              // empty axis
      {"--grid", "16777217", NULL},                       // over 2^24
      {"--grid", "2048", NULL},                           // 32 GiB per cloud
      {"--grid", "1024", "--mode", "mean", "--features", "8", NULL}, // 32 GiB
      {"--voxel-size", "1,2", NULL},                      // 2 values
      {"--voxel-size", "0", NULL},                        // not > 0
      {"--voxel-size", "-1", NULL},
      {"--voxel-size", "1e-50", NULL},                    // 0 in float32
      {"--voxel-size", "1e39", NULL},                     // inf in float32
      {"--origin", "1,2", NULL},
      {"--origin", "1e39,0,0", NULL},
      {"--origin", "3e38,0,0", "--voxel-size", "1e37", NULL}, // far corner overflows
      {"--mode", "median", NULL},
      {"--mode", "mean", NULL},                           // needs --features
      {"--mode", "max", "--features", "0", NULL},
      {"--features", "4", NULL},                          // count ignores features
      {"--mode", "occupancy", "--features", "1", NULL},
      {"--points", "0", NULL},
      {"--points", "2G", NULL},
      {"--points", "12abc", NULL},
      {"--clouds", "0", NULL},
      {"--clouds", "70000", NULL},
      {"--outside", "1.5", NULL},
      {"--nonfinite", "-0.1", NULL},
      {"--outside", "0.6", "--nonfinite", "0.5", NULL},   // sum over 1
      {"--points", "5", "--points", "6", NULL},           // repeated
      {"--bogus", "1", NULL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gs_status st = parse_status(bad[i]);
    if (st != GS_ERR_USAGE) fail_msg("case %zu (%s %s) gave status %d", i, bad[i][0], bad[i][1], st);
  }
  const char *const good[][8] = {
      {"--grid", "1024", NULL},                           // exactly 4 GiB
      {"--grid", "1024,1024,4096", NULL},                 // exactly 16 GiB
      {"--voxel-size", "0.1", "--origin", "-12.8,-12.8,-2", NULL},
      {"--mode", "occupancy", NULL},
      {"--mode", "mean", "--features", "4", NULL},
      {"--outside", "0.5", "--nonfinite", "0.5", NULL},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    gs_status st = parse_status(good[i]);
    if (st != GS_OK) fail_msg("good case %zu (%s %s) gave status %d", i, good[i][0], good[i][1], st);
  }
}

/* The CPU backend through the vtable: every mode, two ranks' splits. */
static void test_cpu_backend_through_vtable(void **state) {
  (void)state;
  const gs_workload *w = &gs_workload_voxelize;
  const char *modes[][4] = {{"--mode", "count", NULL},
                            {"--mode", "occupancy", NULL},
                            {"--mode", "mean", "--features", "3"},
                            {"--mode", "max", "--features", "3"}};
  for (size_t m = 0; m < 4; m++) {
    const char *args[] = {"--points", "1003", "--clouds", "3", "--grid", "3,5,7",
                          "--outside", "0.1", "--nonfinite", "0.05", modes[m][0], modes[m][1],
                          modes[m][2], modes[m][3], NULL};
    void *opts = workload_options(w, args);
    // {begin, count, total}: strong shares of the 3 clouds, and rank 1 of a
    // weak split over 2 ranks (clouds 3..5, past --clouds).
    const uint64_t splits[][3] = {{0, 3, 3}, {1, 2, 3}, {2, 1, 3}, {3, 3, 6}};
    for (size_t k = 0; k < 4; k++) {
      gs_rank_context ctx = {.rank = 0, .world_size = 1, .backend = GS_BACKEND_CPU,
                             .device = -1, .stream = NULL, .seed = 7,
                             .unit_begin = splits[k][0], .unit_count = splits[k][1],
                             .unit_total = splits[k][2]};
      void *st = NULL;
      assert_int_equal(w->setup(opts, &ctx, &st), GS_OK);
      assert_int_equal(w->step(st), GS_OK);
      assert_int_equal(w->step(st), GS_OK);  // a step starts from scratch
      gs_verification v;
      assert_int_equal(w->verify(st, &v), GS_OK);
      if (v.status != GS_VERIFY_PASSED) fail_msg("mode %s: %s", modes[m][1], v.detail);
      assert_int_equal(v.mismatches, 0);
      assert_non_null(strstr(v.detail, "invariants"));
      w->teardown(st);
    }
    void *st = NULL;
    gs_rank_context bad = {.backend = GS_BACKEND_CPU, .device = -1, .seed = 7,
                           .unit_begin = 2, .unit_count = 2, .unit_total = 3};
    assert_bug(w->setup(opts, &bad, &st), "voxelize: clouds [2, +2) outside the step's 3");
    w->options_free(opts);
  }
  w->teardown(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout_is_row_major),
      cmocka_unit_test(test_edges),
      cmocka_unit_test(test_nonfinite_dropped_and_counted),
      cmocka_unit_test(test_max_keeps_negative_values),
      cmocka_unit_test(test_mean_and_occupancy),
      cmocka_unit_test(test_axis_voxel_sizes_and_origin),
      cmocka_unit_test(test_batch_clouds_are_independent),
      cmocka_unit_test(test_options_defaults_and_values),
      cmocka_unit_test(test_cost_per_mode),
      cmocka_unit_test(test_options_reject_bad_values),
      cmocka_unit_test(test_cpu_backend_through_vtable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
