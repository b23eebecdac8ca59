/* voxelize workload: batches of point clouds to voxel grids (count,
 * occupancy, per-voxel mean or max of point features). This header holds
 * the workload's vtable and the CPU reference, which the tests and the CPU
 * backend call directly. Layout and rules: docs/workloads/voxelize.md. */
#ifndef GS_VOXELIZE_H
#define GS_VOXELIZE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "workloads/workload.h"

extern const gs_workload gs_workload_voxelize;

typedef enum {
  GS_VOXELIZE_COUNT = 0,     /* uint32 points per voxel */
  GS_VOXELIZE_OCCUPANCY = 1, /* uint32: 1 where a voxel holds a point, else 0 */
  GS_VOXELIZE_MEAN = 2,      /* float per voxel and feature: mean; empty voxels 0 */
  GS_VOXELIZE_MAX = 3        /* float per voxel and feature: max; empty voxels 0 */
} gs_voxelize_mode;

/* Largest grid extent per axis (keeps every index exact in float32). */
#define GS_VOXELIZE_MAX_AXIS 16777216u

/* How one point was classified. */
typedef enum {
  GS_VOXELIZE_INSIDE = 0,    /* in the grid; *cell set */
  GS_VOXELIZE_NONFINITE = 1, /* some coordinate is NaN or +-Inf */
  GS_VOXELIZE_OUTSIDE = 2    /* finite but its voxel is outside the grid */
} gs_voxelize_class;

/* One grid. The voxel of point p on axis a is floor((p[a] - origin[a]) /
 * voxel[a]), computed in float32 as written (one rounded subtraction, one
 * rounded division); the grid holds voxels 0 <= i < dims[a]. */
typedef struct {
  uint32_t dims[3];          /* X, Y, Z: each 1..GS_VOXELIZE_MAX_AXIS */
  float origin[3];           /* finite */
  float voxel[3];            /* finite, > 0 */
  gs_voxelize_mode mode;
  uint32_t features;         /* F; >= 1 for mean/max, ignored for count/occupancy */
} gs_voxelize_params;

/* Points dropped from one cloud, by reason. */
typedef struct {
  uint64_t nonfinite;
  uint64_t outside;
} gs_voxelize_dropped;

/* Stable lower-case name of a mode ("count", ...). */
const char *gs_voxelize_mode_name(gs_voxelize_mode mode);

/* Voxels per grid: X*Y*Z. */
uint64_t gs_voxelize_cells(const gs_voxelize_params *p);

/* Output elements per grid: cells for count/occupancy, cells*F for mean/max. */
uint64_t gs_voxelize_out_elems(const gs_voxelize_params *p);

/* Bytes per output element: 4 in every mode (uint32 or float). */
size_t gs_voxelize_elem_size(const gs_voxelize_params *p);

/* Output bytes per grid: out_elems * elem_size. */
uint64_t gs_voxelize_out_bytes(const gs_voxelize_params *p);

/* Classifies the point (x, y, z) and, when it is inside, stores its row-major
 * cell index ((ix*Y + iy)*Z + iz) in *cell. The CUDA kernels use the same
 * float32 expression, so both agree bit for bit. */
gs_voxelize_class gs_voxelize_classify(const gs_voxelize_params *p, float x, float y, float z,
                                       uint64_t *cell);

/* CPU reference for one cloud: `points` holds n points as [n][3] float32,
 * `features` holds [n][F] float32 (read only by mean/max; may be NULL for
 * count/occupancy; values must be finite). Writes the whole grid to `out`
 * (gs_voxelize_out_bytes bytes; layout in docs/workloads/voxelize.md) and
 * the dropped counts to *dropped. `counts` (cells entries) receives the
 * points per voxel when non-NULL; `sums` (cells*F doubles) is the mean
 * mode's accumulator when non-NULL. Either, when NULL and needed, is
 * allocated and freed inside. Mean sums in double, in point order, and
 * rounds once to float. Returns GS_ERR_NOMEM on failure; params
 * outside the options' limits are a bug (GS_BUG). Thread-safe; calls with disjoint buffers may run
 * concurrently. */
gs_status gs_voxelize_cpu(const gs_voxelize_params *p, const float *points, const float *features,
                          uint64_t n, void *out, uint32_t *counts, double *sums,
                          gs_voxelize_dropped *dropped);

/* Generated input of one cloud, from (seed, cloud) only, so every split of
 * clouds over ranks sees the same data. Writes n points to `points`
 * ([n][3]) and, when p->features > 0, n*F values uniform in [-1, 1) to
 * `features` ([n][F]). Each point is uniform in the grid's box; with
 * probability `nonfinite` one coordinate is then set to NaN, +Inf or -Inf,
 * else with probability `outside` one coordinate is moved up to 4 voxels
 * past the low or high face (float rounding at a face may put a few of
 * them, or a few box points, on the other side of it: only the reference
 * decides what is dropped). Returns how many
 * non-finite points were made. Deterministic across runs and machines. */
uint64_t gs_voxelize_generate(const gs_voxelize_params *p, uint64_t n, double outside,
                              double nonfinite, uint64_t seed, uint64_t cloud, float *points,
                              float *features);

#endif
