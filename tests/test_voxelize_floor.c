/* Unit tests of workloads/voxelize/voxelize_floor.h, the division-free
 * floor(d / v) of the second-generation voxelize kernels: equal bit for bit
 * to floorf(d / v) (the CPU reference's rule) on random quotients of every
 * magnitude, on quotients within a few ulps of every integer boundary, for
 * divisors whose reciprocal is subnormal or infinite, and through a whole
 * classification of generated clouds against gs_voxelize_classify. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "workloads/voxelize/voxelize.h"
#include "workloads/voxelize/voxelize_floor.h"

/* The reference rule: one rounded division, then floor. */
static float reference(float d, float v) {
  volatile float q = d / v;
  return floorf(q);
}

static uint64_t checked, mismatched;

static void check(float d, float v) {
  if (!isfinite(d) || !(v > 0.0f) || !isfinite(v)) return;
  const float want = reference(d, v);
  const float got = gs_voxelize_floor_quotient(d, v, gs_voxelize_floor_reciprocal(v));
  checked++;
  // Bit for bit (floor(-0.5) is -1, floor(-0.0) is -0.0: both must agree).
  uint32_t a, b;
  memcpy(&a, &want, 4);
  memcpy(&b, &got, 4);
  if (a != b && !(isnan(want) && isnan(got))) {
    if (mismatched < 5) print_error("d %a v %a: want %a got %a\n", d, v, want, got);
    mismatched++;
  }
}

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void test_random_quotients(void **state) {
  (void)state;
  gs_rng rng;
  gs_rng_seed(&rng, 33, 0);
  checked = mismatched = 0;
  for (int i = 0; i < 4000000; i++) {
    // Divisors of every exponent; dividends near the divisor's scale (the
    // voxel case: quotients of 0 to a few thousand) or of any exponent.
    const float v = fabsf(from_bits((uint32_t)gs_rng_next(&rng)));
    float d;
    if (i % 2)
      d = from_bits((uint32_t)gs_rng_next(&rng));
    else
      d = v * (float)((double)gs_rng_float(&rng) * 4096.0 - 8.0);
    check(d, v);
  }
  assert_true(checked > 3000000);
  assert_int_equal(mismatched, 0);
}

static void test_integer_boundaries(void **state) {
  (void)state;
  const float divisors[] = {1.0f, 0.1f, 0.3f, 1.0f / 3.0f, 0.7f, 0.05f, 1e-3f, 2.5f, 7.0f,
                            1e-30f, 1e30f, 3e38f, 1.5e38f, FLT_MIN, 1.5f * FLT_MIN,
                            5e-39f /* subnormal */, 1e-45f /* the smallest */, 8.5e37f};
  checked = mismatched = 0;
  for (size_t k = 0; k < sizeof divisors / sizeof divisors[0]; k++) {
    const float v = divisors[k];
    for (int64_t n = -300; n <= 20000; n++) {
      // The nearest floats to n * v, and up to 6 ulps on either side.
      const float exact[2] = {(float)((double)n * (double)v), (float)n * v};
      for (int e = 0; e < 2; e++) {
        float d = exact[e];
        for (int s = 0; s < 6; s++) d = nextafterf(d, -INFINITY);
        for (int s = 0; s < 13; s++, d = nextafterf(d, INFINITY)) check(d, v);
      }
    }
    // Quotients near 2^24 and beyond, where floats are 2 and more apart.
    for (int64_t n = (1 << 24) - 40; n <= (1 << 24) + 40; n++) {
      float d = (float)((double)n * (double)v);
      for (int s = 0; s < 3; s++) d = nextafterf(d, -INFINITY);
      for (int s = 0; s < 7; s++, d = nextafterf(d, INFINITY)) check(d, v);
    }
  }
  assert_true(checked > 1000000);
  assert_int_equal(mismatched, 0);
  // The divisions that must be made: a subnormal or an infinite reciprocal.
  assert_true(gs_voxelize_floor_reciprocal(3e38f) == 0.0f);
  assert_true(gs_voxelize_floor_reciprocal(1e-45f) == 0.0f);
  assert_true(gs_voxelize_floor_reciprocal(0.1f) == 1.0f / 0.1f);
}

/* gs_voxelize_classify with the division-free floor, as the kernels do it. */
static gs_voxelize_class classify_fast(const gs_voxelize_params *p, float x, float y, float z,
                                       uint64_t *cell) {
  if (!isfinite(x) || !isfinite(y) || !isfinite(z)) return GS_VOXELIZE_NONFINITE;
  const float c[3] = {x, y, z};
  float f[3];
  for (int a = 0; a < 3; a++)
    f[a] = gs_voxelize_floor_quotient(c[a] - p->origin[a], p->voxel[a],
                                      gs_voxelize_floor_reciprocal(p->voxel[a]));
  for (int a = 0; a < 3; a++)
    if (!(f[a] >= 0.0f && f[a] < (float)p->dims[a])) return GS_VOXELIZE_OUTSIDE;
  *cell = ((uint64_t)f[0] * p->dims[1] + (uint64_t)f[1]) * p->dims[2] + (uint64_t)f[2];
  return GS_VOXELIZE_INSIDE;
}

static void test_generated_clouds(void **state) {
  (void)state;
  const struct {
    uint32_t dims;
    float voxel, origin;
  } grids[] = {{128, 1.0f, 0.0f}, {128, 0.1f, -3.7f}, {100, 0.3f, 12.5f}, {37, 0.05f, -0.01f},
               {1000, 0.07f, 1000.0f}};
  enum { N = 200000 };
  static float pts[3 * N];
  for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
    gs_voxelize_params p = {.mode = GS_VOXELIZE_COUNT};
    for (int a = 0; a < 3; a++) {
      p.dims[a] = grids[g].dims;
      p.voxel[a] = grids[g].voxel;
      p.origin[a] = grids[g].origin;
    }
    gs_voxelize_generate(&p, N, 0.2, 0.01, 7, g, pts, NULL);
    uint64_t inside = 0;
    for (size_t i = 0; i < N; i++) {
      uint64_t want_cell = 0, got_cell = 0;
      const float *q = pts + 3 * i;
      const gs_voxelize_class want = gs_voxelize_classify(&p, q[0], q[1], q[2], &want_cell);
      const gs_voxelize_class got = classify_fast(&p, q[0], q[1], q[2], &got_cell);
      assert_int_equal(got, want);
      if (want == GS_VOXELIZE_INSIDE) {
        assert_true(got_cell == want_cell);
        inside++;
      }
    }
    assert_true(inside > N / 2);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_quotients),
      cmocka_unit_test(test_integer_boundaries),
      cmocka_unit_test(test_generated_clouds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
