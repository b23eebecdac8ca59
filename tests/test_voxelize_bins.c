/* A CPU simulation of the second-generation binning scheme of voxelize
 * (src/workloads/voxelize/voxelize_bin2.cu and the slab kernel after it),
 * phase by phase as the kernels run between their barriers, checked
 * against the CPU reference: persistent blocks walking chunks of every
 * cloud, each thread's groups of four points unpacked from three 16-byte
 * loads, the point-by-point tail of a cloud, the slab histogram, bucket
 * reservations, the counting sort, the copy-out with its overflow, and the
 * slab kernel's count; with few and many blocks, tails, a partial last slab,
 * dropped points and buckets that overflow. The kernels themselves are
 * checked on a GPU by test_gpu_voxelize. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "workloads/voxelize/voxelize.h"
#include "workloads/voxelize/voxelize_floor.h"

/* The kernels' constants (voxelize_cuda_common.h, voxelize_bin2.cu). */
#define THREADS 256u
#define CHUNK 4096u
#define GROUPS (CHUNK / 4 / THREADS)
#define FIRST_CHUNK 8192u /* sizes the buckets in both generations */

typedef struct {
  uint32_t shift, slabs, cap;
  uint64_t cells;
  uint32_t *cursor, *spilled, *overflow; /* clouds x slabs, x slabs, x cells */
  uint16_t *ids;                         /* clouds x slabs x cap */
  uint64_t *dropped;                     /* clouds x 2 */
} bins;

/* gs_voxelize_plan_bins's layout for clouds x n points (count mode). */
static void plan(const gs_voxelize_params *p, uint64_t n, uint32_t clouds, bins *w) {
  w->cells = gs_voxelize_cells(p);
  uint32_t log2 = 0;
  while ((1ull << log2) < w->cells) log2++;
  w->shift = log2 > 8 ? log2 - 8 : 0;
  w->slabs = (uint32_t)((w->cells + (1ull << w->shift) - 1) >> w->shift);
  w->cap = (uint32_t)((2 * ((n + w->slabs - 1) / w->slabs) + FIRST_CHUNK + 7) / 8 * 8);
  w->cursor = calloc((size_t)clouds * w->slabs, 4);
  w->spilled = calloc((size_t)clouds * w->slabs, 4);
  w->overflow = calloc((size_t)clouds * w->cells, 4);
  w->ids = calloc((size_t)clouds * w->slabs * w->cap, 2);
  w->dropped = calloc((size_t)clouds * 2, 8);
  assert_true(w->cursor && w->spilled && w->overflow && w->ids && w->dropped);
}

/* The kernel's classification of one point (FAST). */
static gs_voxelize_class classify(const gs_voxelize_params *p, float x, float y, float z,
                                  uint32_t *cell) {
  if (!isfinite(x) || !isfinite(y) || !isfinite(z)) return GS_VOXELIZE_NONFINITE;
  const float c[3] = {x, y, z};
  float f[3];
  for (int a = 0; a < 3; a++)
    f[a] = gs_voxelize_floor_quotient(c[a] - p->origin[a], p->voxel[a],
                                      gs_voxelize_floor_reciprocal(p->voxel[a]));
  if (!(f[0] >= 0.0f && f[0] < (float)p->dims[0] && f[1] >= 0.0f && f[1] < (float)p->dims[1] &&
        f[2] >= 0.0f && f[2] < (float)p->dims[2]))
    return GS_VOXELIZE_OUTSIDE;
  *cell = ((uint32_t)f[0] * p->dims[1] + (uint32_t)f[1]) * p->dims[2] + (uint32_t)f[2];
  return GS_VOXELIZE_INSIDE;
}

/* gs_voxelize_bin2_load for one thread: its groups as 3 x 4 floats each. */
static uint32_t load(const float *points, uint64_t stride, uint64_t n, uint64_t item,
                     uint32_t chunks, uint32_t tid, float v[GROUPS][12]) {
  const uint32_t cloud = (uint32_t)(item / chunks), chunk = (uint32_t)(item % chunks);
  const uint64_t first = (uint64_t)chunk * CHUNK;
  const uint32_t count = (uint32_t)(n - first < CHUNK ? n - first : CHUNK);
  const float *pts = points + cloud * stride + 3 * first;
  for (uint32_t k = 0; k < GROUPS; k++) {
    const uint32_t g = tid + k * THREADS;
    for (uint32_t j = 0; j < 12; j++)
      v[k][j] = 4 * g + 4 <= count || 12 * g + j < 3 * count ? pts[12 * g + j] : 0.0f;
  }
  return count;
}

/* One launch of the binning kernel with `grid` blocks, then the slab kernel
 * into out (clouds x cells) and dropped (clouds x 2). Returns the buckets
 * that overflowed. */
static uint64_t simulate(const gs_voxelize_params *p, const float *points, uint64_t stride,
                     uint64_t n, uint32_t clouds, uint32_t grid, bins *w, uint32_t *out,
                     uint64_t *dropped) {
  const uint32_t chunks = (uint32_t)((n + CHUNK - 1) / CHUNK);
  const uint64_t items = (uint64_t)chunks * clouds;
  const uint32_t mask = (1u << w->shift) - 1;
  static float v[THREADS][GROUPS][12];
  static uint32_t cell[THREADS][4 * GROUPS], sorted[CHUNK], count_of[THREADS];
  for (uint32_t block = 0; block < grid && block < items; block++) {
    uint32_t hist[256] = {0}, offs[257], cur[256], base[256];
    uint64_t item = block;
    for (uint32_t t = 0; t < THREADS; t++) count_of[t] = load(points, stride, n, item, chunks, t, v[t]);
    while (item < items) {
      const uint32_t cloud = (uint32_t)(item / chunks);
      const uint64_t next = item + grid;
      for (uint32_t t = 0; t < THREADS; t++) {
        for (uint32_t k = 0; k < GROUPS; k++) {
          const uint32_t i = 4 * (t + k * THREADS);
          // x, y, z of the group's four points in its three float4 loads.
          const float *q = v[t][k];
          const float x[4] = {q[0], q[3], q[6], q[9]}, y[4] = {q[1], q[4], q[7], q[10]},
                      z[4] = {q[2], q[5], q[8], q[11]};
          for (uint32_t j = 0; j < 4; j++) {
            uint32_t c = ~0u;
            if (i + j < count_of[t]) {
              const gs_voxelize_class cl = classify(p, x[j], y[j], z[j], &c);
              if (cl == GS_VOXELIZE_INSIDE)
                hist[c >> w->shift]++;
              else {
                c = ~0u;
                w->dropped[2 * cloud + (cl == GS_VOXELIZE_NONFINITE ? 0 : 1)]++;
              }
            }
            cell[t][4 * k + j] = c;
          }
        }
        if (next < items) count_of[t] = load(points, stride, n, next, chunks, t, v[t]);
      }
      uint32_t total = 0;
      for (uint32_t s = 0; s < w->slabs; s++) {
        offs[s] = cur[s] = total;
        if (hist[s]) {
          base[s] = w->cursor[cloud * w->slabs + s];
          w->cursor[cloud * w->slabs + s] += hist[s];
        }
        total += hist[s];
        hist[s] = 0;
      }
      offs[w->slabs] = total;
      for (uint32_t t = 0; t < THREADS; t++)
        for (uint32_t j = 0; j < 4 * GROUPS; j++)
          if (cell[t][j] != ~0u) {
            const uint32_t slab = cell[t][j] >> w->shift;
            sorted[cur[slab]++] = slab << 16 | (cell[t][j] & mask);
          }
      for (uint32_t jj = 0; jj < total; jj++) {
        const uint32_t e = sorted[jj], slab = e >> 16;
        const uint32_t dest = base[slab] + (jj - offs[slab]);
        const size_t bucket = (size_t)cloud * w->slabs + slab;
        if (dest < w->cap)
          w->ids[bucket * w->cap + dest] = (uint16_t)(e & 0xffffu);
        else {
          w->overflow[cloud * w->cells + ((size_t)slab << w->shift) + (e & 0xffffu)]++;
          w->spilled[bucket] = 1;
        }
      }
      item = next;
    }
  }
  // The slab kernel: each bucket's ids counted, plus any overflow; the
  // workspace re-zeroed.
  uint64_t spilled = 0;
  for (uint32_t c = 0; c < clouds; c++) {
    memset(out + c * w->cells, 0, w->cells * 4);
    for (uint32_t s = 0; s < w->slabs; s++) {
      const size_t bucket = (size_t)c * w->slabs + s;
      const uint32_t used = w->cursor[bucket] < w->cap ? w->cursor[bucket] : w->cap;
      for (uint32_t j = 0; j < used; j++)
        out[c * w->cells + ((uint64_t)s << w->shift) + w->ids[bucket * w->cap + j]]++;
      spilled += w->spilled[bucket];
      w->cursor[bucket] = w->spilled[bucket] = 0;
    }
    for (uint64_t k = 0; k < w->cells; k++) {
      out[c * w->cells + k] += w->overflow[c * w->cells + k];
      w->overflow[c * w->cells + k] = 0;
    }
    dropped[2 * c] = w->dropped[2 * c];
    dropped[2 * c + 1] = w->dropped[2 * c + 1];
    w->dropped[2 * c] = w->dropped[2 * c + 1] = 0;
  }
  return spilled;
}

/* Clouds of n points (generated, or all in one voxel) binned with `grid`
 * blocks, twice (the second on the workspace the first left), against the
 * reference. */
static void run(const uint32_t dims[3], uint64_t n, uint32_t clouds, uint32_t grid, int clustered,
                uint64_t *spilled_buckets) {
  // *spilled_buckets adds the buckets that overflowed in both steps.
  gs_voxelize_params p = {.dims = {dims[0], dims[1], dims[2]}, .voxel = {0.5f, 0.25f, 0.3f},
                          .origin = {-1.0f, 2.0f, 0.5f}, .mode = GS_VOXELIZE_COUNT};
  const uint64_t stride = (3 * n + 3) / 4 * 4, cells = gs_voxelize_cells(&p);
  float *points = calloc(clouds * stride, sizeof(float));
  float *one = malloc(3 * n * sizeof(float));
  uint32_t *ref = malloc(cells * 4), *out = malloc(clouds * cells * 4);
  uint64_t *dropped = malloc(clouds * 2 * 8);
  assert_true(points && one && ref && out && dropped);
  bins w;
  plan(&p, n, clouds, &w);
  for (uint32_t c = 0; c < clouds; c++) {
    gs_voxelize_generate(&p, n, 0.1, 0.05, 5, c, one, NULL);
    if (clustered)
      for (uint64_t i = 0; i < n; i++)
        if (i % 10) memcpy(one + 3 * i, one, 3 * sizeof(float));  // 90% in one voxel
    memcpy(points + c * stride, one, 3 * n * sizeof(float));
    // Past the cloud's last point: garbage that no load may classify.
    for (uint64_t k = 3 * n; k < stride; k++) points[c * stride + k] = NAN;
  }
  for (int step = 0; step < 2; step++) {
    *spilled_buckets += simulate(&p, points, stride, n, clouds, grid, &w, out, dropped);
    for (uint32_t c = 0; c < clouds; c++) {
      gs_voxelize_dropped d;
      assert_int_equal(gs_voxelize_cpu(&p, points + c * stride, NULL, n, ref, NULL, NULL, &d),
                       GS_OK);
      assert_int_equal(dropped[2 * c], d.nonfinite);
      assert_int_equal(dropped[2 * c + 1], d.outside);
      assert_memory_equal(out + c * cells, ref, cells * 4);
    }
  }
  free(w.cursor), free(w.spilled), free(w.overflow), free(w.ids), free(w.dropped);
  free(points), free(one), free(ref), free(out), free(dropped);
}

static void test_uniform_clouds(void **state) {
  (void)state;
  static const uint32_t cube[3] = {64, 64, 64}, odd[3] = {100, 90, 37};
  uint64_t spilled = 0;
  // Fewer blocks than chunks: blocks walk chunks across clouds.
  run(cube, 50001, 3, 5, 0, &spilled);
  // One block for everything, and more blocks than chunks.
  run(odd, 9000, 2, 1, 0, &spilled);
  run(odd, 12289, 3, 64, 0, &spilled);
  // Tails of 1, 2, 3 points past whole groups; a cloud smaller than a group.
  for (uint64_t n = 4093; n <= 4099; n++) run(odd, n, 2, 3, 0, &spilled);
  run(cube, 1, 3, 2, 0, &spilled);
  run(cube, 3, 1, 2, 0, &spilled);
  assert_int_equal(spilled, 0);
}

static void test_clustered_points_overflow(void **state) {
  (void)state;
  static const uint32_t odd[3] = {100, 90, 37};
  uint64_t spilled = 0;
  run(odd, 40000, 2, 7, 1, &spilled);
  assert_true(spilled > 0);  // 90% in one voxel: more than a bucket holds
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_uniform_clouds),
      cmocka_unit_test(test_clustered_points_overflow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
