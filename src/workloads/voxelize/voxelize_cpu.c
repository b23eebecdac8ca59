/* CPU reference for voxelize: the definition the CUDA kernels are checked
 * against, and the CPU backend's step. Plain sequential loops in point
 * order; mean accumulates in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/voxelize/voxelize.h"

const char *gs_voxelize_mode_name(gs_voxelize_mode mode) {
  switch (mode) {
    case GS_VOXELIZE_COUNT: return "count";
    case GS_VOXELIZE_OCCUPANCY: return "occupancy";
    case GS_VOXELIZE_MEAN: return "mean";
    case GS_VOXELIZE_MAX: return "max";
  }
  return "unknown";
}

uint64_t gs_voxelize_cells(const gs_voxelize_params *p) {
  return (uint64_t)p->dims[0] * (uint64_t)p->dims[1] * (uint64_t)p->dims[2];
}

static int mode_has_features(gs_voxelize_mode mode) {
  return mode == GS_VOXELIZE_MEAN || mode == GS_VOXELIZE_MAX;
}

uint64_t gs_voxelize_out_elems(const gs_voxelize_params *p) {
  uint64_t cells = gs_voxelize_cells(p);
  return mode_has_features(p->mode) ? cells * (uint64_t)p->features : cells;
}

size_t gs_voxelize_elem_size(const gs_voxelize_params *p) {
  // Occupancy is uint32 rather than uint8: scattered 32-bit atomics ran
  // ~25% faster on H100 than byte writes packed 32 voxels to a sector.
  (void)p;
  return sizeof(uint32_t);
}

uint64_t gs_voxelize_out_bytes(const gs_voxelize_params *p) {
  return gs_voxelize_out_elems(p) * (uint64_t)gs_voxelize_elem_size(p);
}

gs_voxelize_class gs_voxelize_classify(const gs_voxelize_params *p, float x, float y, float z,
                                       uint64_t *cell) {
  if (!isfinite(x) || !isfinite(y) || !isfinite(z)) return GS_VOXELIZE_NONFINITE;
  // Keep these three expressions in step with gs_voxelize_classify_device
  // in voxelize_cuda.cu: one float subtraction and one float division, each
  // rounded to nearest (no FMA is possible here), then floor.
  const float fx = floorf((x - p->origin[0]) / p->voxel[0]);
  const float fy = floorf((y - p->origin[1]) / p->voxel[1]);
  const float fz = floorf((z - p->origin[2]) / p->voxel[2]);
  // Compare in float before converting: a huge or infinite quotient must not
  // reach an integer conversion. dims are exact in float (<= 2^24).
  if (!(fx >= 0.0f && fx < (float)p->dims[0] && fy >= 0.0f && fy < (float)p->dims[1] &&
        fz >= 0.0f && fz < (float)p->dims[2]))
    return GS_VOXELIZE_OUTSIDE;
  const uint64_t ix = (uint64_t)fx, iy = (uint64_t)fy, iz = (uint64_t)fz;
  *cell = (ix * p->dims[1] + iy) * p->dims[2] + iz;
  return GS_VOXELIZE_INSIDE;
}

static gs_status check_params(const gs_voxelize_params *p, const float *features, uint64_t n) {
  for (int a = 0; a < 3; a++) {
    if (p->dims[a] < 1 || p->dims[a] > GS_VOXELIZE_MAX_AXIS)
      GS_BUG("voxelize: grid axis %d has %u voxels", a, p->dims[a]);
    if (!isfinite(p->origin[a]) || !isfinite(p->voxel[a]) || !(p->voxel[a] > 0.0f))
      GS_BUG("voxelize: bad origin or voxel size on axis %d", a);
  }
  if (p->mode < GS_VOXELIZE_COUNT || p->mode > GS_VOXELIZE_MAX)
    GS_BUG("voxelize: bad mode %d", (int)p->mode);
  if (mode_has_features(p->mode) && (p->features < 1 || (features == NULL && n > 0)))
    GS_BUG("voxelize: mode %s needs features", gs_voxelize_mode_name(p->mode));
  // Per-voxel counts are uint32.
  if (n > UINT32_MAX)
    GS_BUG("voxelize: %llu points per cloud is over 2^32-1", (unsigned long long)n);
  return GS_OK;
}

gs_status gs_voxelize_cpu(const gs_voxelize_params *p, const float *points, const float *features,
                          uint64_t n, void *out, uint32_t *counts, double *sums,
                          gs_voxelize_dropped *dropped) {
  gs_status st = check_params(p, features, n);
  if (st != GS_OK) return st;
  const uint64_t cells = gs_voxelize_cells(p);
  const uint64_t elems = gs_voxelize_out_elems(p);
  const size_t F = p->features;
  uint32_t *own_counts = NULL;
  double *own_sums = NULL;
  if (counts == NULL) {
    own_counts = malloc((size_t)cells * sizeof *own_counts);
    if (own_counts == NULL)
      return gs_error(GS_ERR_NOMEM, "voxelize: cannot allocate %llu voxel counts",
                      (unsigned long long)cells);
    counts = own_counts;
  }
  if (p->mode == GS_VOXELIZE_MEAN && sums == NULL) {
    own_sums = malloc((size_t)elems * sizeof *own_sums);
    if (own_sums == NULL) {
      free(own_counts);
      return gs_error(GS_ERR_NOMEM, "voxelize: cannot allocate %llu feature sums",
                      (unsigned long long)elems);
    }
    sums = own_sums;
  }
  memset(counts, 0, (size_t)cells * sizeof *counts);
  memset(out, 0, (size_t)gs_voxelize_out_bytes(p));
  if (p->mode == GS_VOXELIZE_MEAN) memset(sums, 0, (size_t)elems * sizeof *sums);

  float *out_f = out;
  gs_voxelize_dropped drop = {0, 0};
  for (uint64_t i = 0; i < n; i++) {
    const float *pt = points + 3 * (size_t)i;
    uint64_t cell = 0;
    gs_voxelize_class c = gs_voxelize_classify(p, pt[0], pt[1], pt[2], &cell);
    if (c == GS_VOXELIZE_NONFINITE) {
      drop.nonfinite++;
      continue;
    }
    if (c == GS_VOXELIZE_OUTSIDE) {
      drop.outside++;
      continue;
    }
    const float *feat = features ? features + (size_t)i * F : NULL;
    if (p->mode == GS_VOXELIZE_MEAN) {
      for (size_t f = 0; f < F; f++) sums[(size_t)cell * F + f] += (double)feat[f];
    } else if (p->mode == GS_VOXELIZE_MAX) {
      float *m = out_f + (size_t)cell * F;
      // The first point of a voxel sets its values, so all-negative
      // features give their negative max rather than the empty value 0.
      if (counts[cell] == 0) {
        for (size_t f = 0; f < F; f++) m[f] = feat[f];
      } else {
        for (size_t f = 0; f < F; f++)
          if (feat[f] > m[f]) m[f] = feat[f];
      }
    }
    counts[cell]++;
  }

  if (p->mode == GS_VOXELIZE_COUNT) {
    memcpy(out, counts, (size_t)cells * sizeof *counts);
  } else if (p->mode == GS_VOXELIZE_OCCUPANCY) {
    uint32_t *occ = out;
    for (uint64_t v = 0; v < cells; v++) occ[v] = counts[v] > 0;
  } else if (p->mode == GS_VOXELIZE_MEAN) {
    for (uint64_t v = 0; v < cells; v++) {
      if (counts[v] == 0) continue;  // empty voxels stay 0
      for (size_t f = 0; f < F; f++)
        out_f[(size_t)v * F + f] = (float)(sums[(size_t)v * F + f] / (double)counts[v]);
    }
  }
  *dropped = drop;
  free(own_sums);
  free(own_counts);
  return GS_OK;
}
