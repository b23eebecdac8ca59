/* voxelize workload: options, generated data, and the setup / step /
 * verify / teardown of one rank on the CPU or CUDA backend. The CPU
 * reference is in voxelize_cpu.c, the kernels in voxelize_cuda.cu; the
 * rules are written down in docs/workloads/voxelize.md. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "platform/trace.h"
#include "core/checked.h"
#include "core/json.h"
#include "core/rng.h"
#include "workloads/voxelize/voxelize.h"
#include "workloads/voxelize/voxelize_cuda.h"

#define GS_VOXELIZE_MAX_POINTS 1000000000ull  /* per cloud; counts stay < 2^32 */
#define GS_VOXELIZE_MAX_CLOUDS 65535ull       /* one CUDA grid row per cloud */
#define GS_VOXELIZE_MAX_FEATURES 1024ull
#define GS_VOXELIZE_MAX_GRID_BYTES (16ull << 30) /* per cloud, at 4 bytes per value */
#define GS_VOXELIZE_MAX_CLOUD_BYTES (64ull << 30) /* a cloud's points and features */
#define GS_VOXELIZE_MEAN_RTOL 1e-5

static const char *const mode_choices[] = {"count", "occupancy", "mean", "max", NULL};

typedef struct {
  uint64_t points;
  uint64_t clouds;
  gs_u64_list grid;
  gs_double_list voxel_size;
  gs_double_list origin;
  int mode;
  uint64_t features;
  double outside;
  double nonfinite;
  int no_graph;
  gs_option table[11];
} gs_voxelize_options;

/* ---- options ---------------------------------------------------------------- */

static void *voxelize_options_new(void) {
  gs_voxelize_options *o = calloc(1, sizeof *o);
  if (o == NULL) return NULL;
  o->points = 1000000;
  o->clouds = 8;
  o->grid.n = 1;
  o->grid.v[0] = 128;
  o->voxel_size.n = 1;
  o->voxel_size.v[0] = 1.0;
  o->origin.n = 3;
  o->mode = GS_VOXELIZE_COUNT;
  const gs_option table[] = {
      {.name = "points", .kind = GS_OPT_COUNT, .target = &o->points, .min = 1,
       .max = GS_VOXELIZE_MAX_POINTS, .metavar = "N",
       .help = "points per cloud, suffixes K/M/G = 1e3/1e6/1e9"},
      {.name = "clouds", .kind = GS_OPT_COUNT, .target = &o->clouds, .min = 1,
       .max = GS_VOXELIZE_MAX_CLOUDS, .metavar = "B",
       .help = "point clouds per step; the unit split over ranks"},
      {.name = "grid", .kind = GS_OPT_COUNT_LIST, .target = &o->grid, .min = 1,
       .max = GS_VOXELIZE_MAX_AXIS, .metavar = "X[,Y,Z]",
       .help = "voxels per axis; one value for a cube"},
      {.name = "voxel-size", .kind = GS_OPT_DOUBLE_LIST, .target = &o->voxel_size, .dmin = 0.0,
       .dmax = FLT_MAX, .metavar = "S|SX,SY,SZ", .help = "voxel edge length(s), > 0"},
      {.name = "origin", .kind = GS_OPT_DOUBLE_LIST, .target = &o->origin, .dmin = -FLT_MAX,
       .dmax = FLT_MAX, .metavar = "X,Y,Z", .help = "low corner of voxel (0,0,0)"},
      {.name = "mode", .kind = GS_OPT_CHOICE, .target = &o->mode, .choices = mode_choices,
       .metavar = "MODE", .help = "what each voxel holds"},
      {.name = "features", .kind = GS_OPT_COUNT, .target = &o->features, .min = 0,
       .max = GS_VOXELIZE_MAX_FEATURES, .metavar = "F",
       .help = "feature channels per point; required (>= 1) by mean and max only"},
      {.name = "outside", .kind = GS_OPT_DOUBLE, .target = &o->outside, .dmin = 0.0, .dmax = 1.0,
       .metavar = "FRACTION", .help = "fraction of points generated outside the grid"},
      {.name = "nonfinite", .kind = GS_OPT_DOUBLE, .target = &o->nonfinite, .dmin = 0.0,
       .dmax = 1.0, .metavar = "FRACTION",
       .help = "fraction of points with a NaN or infinite coordinate"},
      {.name = "no-graph", .kind = GS_OPT_FLAG, .target = &o->no_graph,
       .help = "launch the step's kernels every step instead of replaying a CUDA graph of them"},
      {.name = NULL, .kind = GS_OPT_END},
  };
  _Static_assert(sizeof table == sizeof o->table, "option table size");
  memcpy(o->table, table, sizeof table);
  return o;
}

static void voxelize_options_free(void *opts) { free(opts); }

static const gs_option *voxelize_options_table(void *opts) {
  return ((gs_voxelize_options *)opts)->table;
}

static int mode_has_features(int mode) {
  return mode == GS_VOXELIZE_MEAN || mode == GS_VOXELIZE_MAX;
}

/* The grid of checked options (one grid/voxel value means all three axes). */
static void params_from_options(const gs_voxelize_options *o, gs_voxelize_params *p) {
  memset(p, 0, sizeof *p);
  for (int a = 0; a < 3; a++) {
    p->dims[a] = (uint32_t)(o->grid.n == 3 ? o->grid.v[a] : o->grid.v[0]);
    p->voxel[a] = (float)(o->voxel_size.n == 3 ? o->voxel_size.v[a] : o->voxel_size.v[0]);
    p->origin[a] = (float)o->origin.v[a];
  }
  p->mode = (gs_voxelize_mode)o->mode;
  p->features = mode_has_features(o->mode) ? (uint32_t)o->features : 0;
}

static gs_status voxelize_options_check(void *opts) {
  gs_voxelize_options *o = opts;
  if (o->grid.n != 1 && o->grid.n != 3)
    return gs_error(GS_ERR_USAGE, "--grid takes 1 value (a cube) or 3 values X,Y,Z, got %zu",
                    o->grid.n);
  if (o->voxel_size.n != 1 && o->voxel_size.n != 3)
    return gs_error(GS_ERR_USAGE,
                    "--voxel-size takes 1 value (cubic voxels) or 3 values SX,SY,SZ, got %zu",
                    o->voxel_size.n);
  if (o->origin.n != 3)
    return gs_error(GS_ERR_USAGE, "--origin takes 3 values X,Y,Z, got %zu", o->origin.n);
  for (size_t a = 0; a < o->voxel_size.n; a++) {
    const float s = (float)o->voxel_size.v[a];
    if (!(s > 0.0f) || !isfinite(s))
      return gs_error(GS_ERR_USAGE, "--voxel-size %g is not a positive float32 value",
                      o->voxel_size.v[a]);
  }
  gs_voxelize_params p;
  params_from_options(o, &p);
  for (int a = 0; a < 3; a++) {
    // The far corner must be a finite float32 so that inside points exist.
    const double far = (double)p.origin[a] + (double)p.dims[a] * (double)p.voxel[a];
    if (!(fabs(far) <= FLT_MAX))
      return gs_error(GS_ERR_USAGE,
                      "--origin/--voxel-size/--grid: the grid's far corner on axis %c is not a "
                      "finite float32 value",
                      "xyz"[a]);
  }
  if (mode_has_features(o->mode) && o->features < 1)
    return gs_error(GS_ERR_USAGE,
                    "--mode %s averages or maximizes point features: give --features F >= 1",
                    mode_choices[o->mode]);
  if (!mode_has_features(o->mode) && o->features > 0)
    return gs_error(GS_ERR_USAGE,
                    "--features applies only to --mode mean or max (--mode %s ignores features)",
                    mode_choices[o->mode]);
  if (o->outside + o->nonfinite > 1.0)
    return gs_error(GS_ERR_USAGE, "--outside %g plus --nonfinite %g is over 1", o->outside,
                    o->nonfinite);
  // Checked: three axes of up to 2^24 voxels overflow 64 bits (2^72).
  const uint64_t per_voxel = o->features > 0 ? o->features : 1;
  const uint64_t grid_values[] = {p.dims[0], p.dims[1], p.dims[2], per_voxel};
  uint64_t values = 0;
  if (gs_product_u64_exceeds(grid_values, 4, GS_VOXELIZE_MAX_GRID_BYTES / 4, &values))
    return gs_error(GS_ERR_USAGE,
                    "--grid %ux%ux%u with %llu value(s) per voxel is over the limit of %llu "
                    "values (16 GiB) per cloud",
                    p.dims[0], p.dims[1], p.dims[2], (unsigned long long)per_voxel,
                    (unsigned long long)(GS_VOXELIZE_MAX_GRID_BYTES / 4));
  // A cloud's inputs: 3 coordinates and F features per point, 4 bytes each.
  const uint64_t cloud_input[] = {o->points, 3 + o->features, 4};
  uint64_t input_bytes = 0;
  if (gs_product_u64_exceeds(cloud_input, 3, GS_VOXELIZE_MAX_CLOUD_BYTES, &input_bytes))
    return gs_error(GS_ERR_USAGE,
                    "--points %llu x (3 + --features %llu) x 4 bytes is over the limit of %llu "
                    "GiB of inputs per cloud",
                    (unsigned long long)o->points, (unsigned long long)o->features,
                    (unsigned long long)(GS_VOXELIZE_MAX_CLOUD_BYTES >> 30));
  return GS_OK;
}

static void put_array3(gs_json_build *b, cJSON *o, const char *name, const double v[3]) {
  cJSON *a = gs_json_put_array(b, o, name);
  for (int i = 0; i < 3; i++) gs_json_append_number(b, a, v[i]);
}

static cJSON *voxelize_options_to_json(const void *opts) {
  const gs_voxelize_options *o = opts;
  gs_voxelize_params p;
  params_from_options(o, &p);
  gs_json_build b = {0};
  cJSON *j = gs_json_check(&b, cJSON_CreateObject());
  const double dims[3] = {p.dims[0], p.dims[1], p.dims[2]};
  const double voxel[3] = {p.voxel[0], p.voxel[1], p.voxel[2]};
  const double origin[3] = {p.origin[0], p.origin[1], p.origin[2]};
  gs_json_put_number(&b, j, "points", (double)o->points);
  gs_json_put_number(&b, j, "clouds", (double)o->clouds);
  put_array3(&b, j, "grid", dims);
  put_array3(&b, j, "voxel_size", voxel);
  put_array3(&b, j, "origin", origin);
  gs_json_put_string(&b, j, "mode", mode_choices[o->mode]);
  gs_json_put_number(&b, j, "features", (double)o->features);
  gs_json_put_number(&b, j, "outside", o->outside);
  gs_json_put_number(&b, j, "nonfinite", o->nonfinite);
  gs_json_put_string(&b, j, "occupancy_type", "uint32");
  gs_json_put_bool(&b, j, "cuda_graph", !o->no_graph);
  return gs_json_build_finish(&b, j);
}

static uint64_t voxelize_work_units(const void *opts) {
  return ((const gs_voxelize_options *)opts)->clouds;
}

/* Items: points. Bytes: each point's 12 coordinate bytes and 4F feature
 * bytes read once, each cloud's grid written once. Flops: per point 3
 * subtractions and 3 divisions, plus F additions (mean) or comparisons
 * (max); mean adds one division per output value. Bound: the bytes (a few
 * flops per 12 bytes or more). */
static void voxelize_cost(const void *opts, uint64_t units, gs_cost *out) {
  const gs_voxelize_options *o = opts;
  gs_voxelize_params p;
  params_from_options(o, &p);
  const uint64_t F = p.features;
  const uint64_t points = units * o->points;
  out->items = points;
  out->item_unit = "points";
  out->bytes = points * (12 + 4 * F) + units * gs_voxelize_out_bytes(&p);
  out->flops = points * (6 + F);
  if (p.mode == GS_VOXELIZE_MEAN) out->flops += units * gs_voxelize_out_elems(&p);
  out->bound = GS_BOUND_MEMORY;
}

/* ---- generated data --------------------------------------------------------- */

uint64_t gs_voxelize_generate(const gs_voxelize_params *p, uint64_t n, double outside,
                              double nonfinite_fraction, uint64_t seed, uint64_t cloud, float *pts,
                              float *feat) {
  gs_rng rng;
  gs_rng_seed(&rng, seed, cloud);
  float extent[3];
  for (int a = 0; a < 3; a++) extent[a] = (float)p->dims[a] * p->voxel[a];
  const size_t F = p->features;
  uint64_t nonfinite = 0;
  for (uint64_t i = 0; i < n; i++) {
    float *q = pts + 3 * (size_t)i;
    for (int a = 0; a < 3; a++) q[a] = p->origin[a] + gs_rng_float(&rng) * extent[a];
    const double u = gs_rng_double(&rng);
    if (u < nonfinite_fraction) {
      static const float bad[3] = {NAN, INFINITY, -INFINITY};
      const uint64_t axis = gs_rng_below(&rng, 3);
      q[axis] = bad[gs_rng_below(&rng, 3)];
      nonfinite++;
    } else if (u < nonfinite_fraction + outside) {
      // Up to 4 voxels past the low or high face, some right at the edge.
      const int a = (int)gs_rng_below(&rng, 3);
      const float d = 4.0f * gs_rng_float(&rng) * p->voxel[a];
      q[a] = (gs_rng_next(&rng) & 1) ? p->origin[a] + extent[a] + d
                                     : p->origin[a] - p->voxel[a] * 1e-3f - d;
    }
    for (size_t f = 0; f < F; f++) feat[(size_t)i * F + f] = 2.0f * gs_rng_float(&rng) - 1.0f;
  }
  return nonfinite;
}

/* ---- one rank ----------------------------------------------------------------- */

typedef struct {
  gs_voxelize_params params;
  gs_backend backend;
  cudaStream_t stream;
  uint64_t n, clouds, unit_begin;
  uint64_t cells, out_bytes;        /* per cloud */
  float *points;                    /* host, clouds x n x 3 */
  float *features;                  /* host, clouds x n x F; NULL without features */
  uint64_t *generated_nonfinite;    /* per cloud */
  void *ref;                        /* CUDA: host reference grids */
  gs_voxelize_dropped *ref_dropped; /* CUDA: per cloud */
  void *out;                        /* host grids: the CPU step's, or copied back */
  gs_voxelize_dropped *dropped;     /* per cloud: the CPU step's, or copied back */
  uint32_t *counts;                 /* points per voxel: CPU clouds x cells, CUDA one cloud */
  double *sums;                     /* mean workspace, one cloud */
  unsigned long long *dropped_raw;  /* CUDA: copy of the device's dropped array */
  gs_voxelize_cuda_buffers dev;
  int use_graph;                    /* CUDA: replay `graph` (captured on the first step) */
  cudaGraphExec_t graph;
  int stepped;
} gs_voxelize_state;

/* Frees a device pointer from teardown, which cannot return a status: the
 * caller keeps the error recorded before (gs_error_keep). */
static gs_status free_device(void *ptr) {
  if (ptr != NULL) GS_CHECK_CUDA(cudaFree(ptr));
  return GS_OK;
}

static void voxelize_teardown(void *state) {
  gs_voxelize_state *s = state;
  if (s == NULL) return;
  if (s->backend == GS_BACKEND_CUDA) {
    // A failure (often a failed step's sticky error again) must not replace
    // the error recorded before: it is dropped, and the rest still freed.
    gs_error_kept kept;
    gs_error_keep(&kept);
    (void)free_device((void *)s->dev.points);
    (void)free_device((void *)s->dev.features);
    (void)free_device(s->dev.out);
    (void)free_device(s->dev.counts);
    (void)free_device(s->dev.dropped);
    (void)free_device(s->dev.workspace);
    if (s->graph != NULL) (void)cudaGraphExecDestroy(s->graph);
    gs_error_restore(&kept);
  }
  free(s->points);
  free(s->features);
  free(s->generated_nonfinite);
  free(s->ref);
  free(s->ref_dropped);
  free(s->out);
  free(s->dropped);
  free(s->counts);
  free(s->sums);
  free(s->dropped_raw);
  free(s);
}

/* malloc of count * size bytes, or NULL (also when the product overflows). */
static void *alloc_array(uint64_t count, uint64_t size) {
  if (count == 0) count = 1;
  if (size != 0 && count > SIZE_MAX / size) return NULL;
  return malloc((size_t)(count * size));
}

/* The generation of kernels a step runs: GS_VOXELIZE_KERNELS=1 the first
 * (kept for A/B measurements, bench/voxelize_kernels.sh --ab), unset or 2
 * the second (docs/workloads/voxelize.md, "Two generations"). */
static gs_status kernels_generation(int *out) {
  const char *v = getenv("GS_VOXELIZE_KERNELS");
  *out = 2;
  if (v == NULL) return GS_OK;
  if (strcmp(v, "1") != 0 && strcmp(v, "2") != 0)
    return gs_error(GS_ERR_USAGE, "GS_VOXELIZE_KERNELS=%s: 1 (the first generation of voxelize "
                    "kernels) or 2 (the second, the default) expected", v);
  *out = v[0] - '0';
  return GS_OK;
}

static gs_status setup_device(gs_voxelize_state *s, const gs_rank_context *ctx) {
  gs_voxelize_cuda_buffers *d = &s->dev;
  const uint64_t F = s->params.features;
  GS_TRY(kernels_generation(&d->kernels));
  GS_CHECK_CUDA(cudaDeviceGetAttribute(&d->sm_count, cudaDevAttrMultiProcessorCount, ctx->device));
  GS_CHECK_CUDA(cudaDeviceGetAttribute(&d->max_threads_per_sm,
                                       cudaDevAttrMaxThreadsPerMultiProcessor, ctx->device));
  d->n = s->n;
  d->clouds = (uint32_t)s->clouds;
  d->point_stride = (3 * s->n + 3) / 4 * 4;
  void *ptr = NULL;
  GS_CHECK_CUDA(cudaMalloc(&ptr, (size_t)(s->clouds * d->point_stride * sizeof(float))));
  d->points = ptr;
  for (uint64_t c = 0; c < s->clouds; c++)
    GS_CHECK_CUDA(cudaMemcpy((float *)ptr + c * d->point_stride, s->points + c * 3 * s->n,
                             (size_t)(3 * s->n * sizeof(float)), cudaMemcpyHostToDevice));
  if (F > 0) {
    const size_t bytes = (size_t)(s->clouds * s->n * F * sizeof(float));
    GS_CHECK_CUDA(cudaMalloc(&ptr, bytes));
    d->features = ptr;
    GS_CHECK_CUDA(cudaMemcpy(ptr, s->features, bytes, cudaMemcpyHostToDevice));
  }
  GS_CHECK_CUDA(cudaMalloc(&d->out, (size_t)(s->clouds * s->out_bytes)));
  if (s->params.mode == GS_VOXELIZE_MEAN)
    GS_CHECK_CUDA(
        cudaMalloc((void **)&d->counts, (size_t)(s->clouds * s->cells * sizeof(uint32_t))));
  GS_CHECK_CUDA(
      cudaMalloc((void **)&d->dropped, (size_t)(s->clouds * 2 * sizeof(unsigned long long))));
  // The binned path's scratch: allocated and zero-filled once here; each
  // step leaves it zero-filled again where it needs zeros.
  d->workspace_bytes = gs_voxelize_cuda_workspace_bytes(&s->params, s->n, s->clouds, 0);
  if (d->workspace_bytes > 0) {
    GS_CHECK_CUDA(cudaMalloc(&d->workspace, (size_t)d->workspace_bytes));
    GS_CHECK_CUDA(cudaMemset(d->workspace, 0, (size_t)d->workspace_bytes));
  }
  return GS_OK;
}

static gs_status voxelize_setup(const void *opts, const gs_rank_context *ctx, void **state) {
  const gs_voxelize_options *o = opts;
  *state = NULL;
  GS_TRY(gs_workload_check_share(ctx, gs_workload_voxelize.key, gs_workload_voxelize.unit_name));
  gs_voxelize_state *s = calloc(1, sizeof *s);
  if (s == NULL) return gs_error(GS_ERR_NOMEM, "voxelize: cannot allocate state");
  params_from_options(o, &s->params);
  s->backend = ctx->backend;
  s->stream = ctx->stream;
  s->use_graph = ctx->backend == GS_BACKEND_CUDA && !o->no_graph;
  s->n = o->points;
  s->clouds = ctx->unit_count;
  s->unit_begin = ctx->unit_begin;
  s->cells = gs_voxelize_cells(&s->params);
  s->out_bytes = gs_voxelize_out_bytes(&s->params);
  const uint64_t F = s->params.features;
  const int cuda = ctx->backend == GS_BACKEND_CUDA;

  s->points = alloc_array(s->clouds * s->n * 3, sizeof(float));
  s->features = F > 0 ? alloc_array(s->clouds * s->n * F, sizeof(float)) : NULL;
  s->generated_nonfinite = alloc_array(s->clouds, sizeof(uint64_t));
  s->out = alloc_array(s->clouds, s->out_bytes);
  s->dropped = alloc_array(s->clouds, sizeof(gs_voxelize_dropped));
  // The CPU step keeps every cloud's counts for verify; CUDA's reference
  // needs one cloud's as a workspace.
  s->counts = alloc_array((cuda ? 1 : s->clouds) * s->cells, sizeof(uint32_t));
  s->sums = s->params.mode == GS_VOXELIZE_MEAN ? alloc_array(s->cells * F, sizeof(double)) : NULL;
  if (cuda) {
    s->ref = alloc_array(s->clouds, s->out_bytes);
    s->ref_dropped = alloc_array(s->clouds, sizeof(gs_voxelize_dropped));
    s->dropped_raw = alloc_array(s->clouds * 2, sizeof(unsigned long long));
  }
  if (s->points == NULL || (F > 0 && s->features == NULL) || s->generated_nonfinite == NULL ||
      s->out == NULL || s->dropped == NULL || s->counts == NULL ||
      (s->params.mode == GS_VOXELIZE_MEAN && s->sums == NULL) ||
      (cuda && (s->ref == NULL || s->ref_dropped == NULL || s->dropped_raw == NULL))) {
    voxelize_teardown(s);
    return gs_error(GS_ERR_NOMEM, "voxelize: cannot allocate host buffers for %llu clouds",
                    (unsigned long long)ctx->unit_count);
  }

  for (uint64_t c = 0; c < s->clouds; c++)
    s->generated_nonfinite[c] =
        gs_voxelize_generate(&s->params, s->n, o->outside, o->nonfinite, ctx->seed,
                             s->unit_begin + c, s->points + c * s->n * 3,
                             F > 0 ? s->features + c * s->n * F : NULL);

  gs_status st = GS_OK;
  if (cuda) {
    for (uint64_t c = 0; st == GS_OK && c < s->clouds; c++)
      st = gs_voxelize_cpu(&s->params, s->points + c * s->n * 3,
                           F > 0 ? s->features + c * s->n * F : NULL, s->n,
                           (char *)s->ref + c * s->out_bytes, s->counts, s->sums,
                           &s->ref_dropped[c]);
    if (st == GS_OK) st = setup_device(s, ctx);
  }
  if (st != GS_OK) {
    voxelize_teardown(s);
    return st;
  }
  *state = s;
  return GS_OK;
}

/* Captures the step's kernels on the rank's stream into s->graph. */
static gs_status capture_step(gs_voxelize_state *s) {
  cudaGraph_t graph = NULL;
  GS_CHECK_CUDA(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
  const cudaError_t enqueued = gs_voxelize_cuda_step(&s->params, &s->dev, s->stream);
  const cudaError_t end = cudaStreamEndCapture(s->stream, &graph);
  GS_CHECK_CUDA(enqueued);
  GS_CHECK_CUDA(end);
  const cudaError_t made = cudaGraphInstantiate(&s->graph, graph, 0);
  cudaGraphDestroy(graph);
  GS_CHECK_CUDA(made);
  return GS_OK;
}

/* The step's work: on CUDA its kernels, as one graph launch unless
 * --no-graph (a step is only a few short kernels, so launching them one by
 * one from several rank threads leaves the GPU waiting for the host); the
 * reference on the CPU. */
static gs_status voxelize_compute(gs_voxelize_state *s) {
  const uint64_t F = s->params.features;
  if (s->backend == GS_BACKEND_CUDA) {
    if (!s->use_graph) {
      GS_CHECK_CUDA(gs_voxelize_cuda_step(&s->params, &s->dev, s->stream));
      return GS_OK;
    }
    if (s->graph == NULL) GS_TRY(capture_step(s));
    GS_CHECK_CUDA(cudaGraphLaunch(s->graph, s->stream));
    return GS_OK;
  }
  for (uint64_t c = 0; c < s->clouds; c++)
    GS_TRY(gs_voxelize_cpu(&s->params, s->points + c * s->n * 3,
                           F > 0 ? s->features + c * s->n * F : NULL, s->n,
                           (char *)s->out + c * s->out_bytes, s->counts + c * s->cells, s->sums,
                           &s->dropped[c]));
  return GS_OK;
}

static gs_status voxelize_step(void *state) {
  gs_voxelize_state *s = state;
  gs_trace_begin(GS_TRACE_COMPUTE, "voxelize", -1, s->stream);
  gs_status st = voxelize_compute(s);
  gs_trace_end();
  GS_TRY(st);
  s->stepped = 1;
  return GS_OK;
}

/* ---- verification -------------------------------------------------------------- */

/* Appends "where" text for the first mismatch: cloud, voxel, feature. */
static void describe_element(const gs_voxelize_state *s, uint64_t cloud, uint64_t elem, char *buf,
                             size_t size) {
  const uint64_t F = s->params.features > 0 ? s->params.features : 1;
  const uint64_t cell = elem / F;
  const uint64_t Y = s->params.dims[1], Z = s->params.dims[2];
  snprintf(buf, size, "cloud %llu voxel (%llu,%llu,%llu) feature %llu",
           (unsigned long long)(s->unit_begin + cloud), (unsigned long long)(cell / (Y * Z)),
           (unsigned long long)(cell / Z % Y), (unsigned long long)(cell % Z),
           (unsigned long long)(elem % F));
}

/* CUDA: device grids and dropped counts against the reference from setup. */
static gs_status verify_device(gs_voxelize_state *s, gs_verification *v) {
  GS_CHECK_CUDA(cudaStreamSynchronize(s->stream));
  GS_CHECK_CUDA(cudaMemcpy(s->out, s->dev.out, (size_t)(s->clouds * s->out_bytes),
                           cudaMemcpyDeviceToHost));
  GS_CHECK_CUDA(cudaMemcpy(s->dropped_raw, s->dev.dropped,
                           (size_t)(s->clouds * 2 * sizeof(unsigned long long)),
                           cudaMemcpyDeviceToHost));
  const gs_voxelize_mode mode = s->params.mode;
  const uint64_t elems = gs_voxelize_out_elems(&s->params);
  const int is_mean = mode == GS_VOXELIZE_MEAN;
  v->tolerance = is_mean ? GS_VOXELIZE_MEAN_RTOL : 0.0;
  v->max_abs_error = 0.0;
  v->mismatches = 0;
  char first[160] = "";
  uint64_t drop_mismatches = 0;
  gs_voxelize_dropped got_total = {0, 0}, ref_total = {0, 0};
  for (uint64_t c = 0; c < s->clouds; c++) {
    for (uint64_t e = 0; e < elems; e++) {
      const uint64_t k = c * elems + e;
      double got, want;
      int bad;
      if (mode == GS_VOXELIZE_COUNT || mode == GS_VOXELIZE_OCCUPANCY) {
        got = ((const uint32_t *)s->out)[k];
        want = ((const uint32_t *)s->ref)[k];
        bad = got != want;
      } else {
        got = ((const float *)s->out)[k];
        want = ((const float *)s->ref)[k];
        // max is exact; mean allows float atomics' order-dependent rounding,
        // relative to max(1, |ref|) because features are O(1).
        bad = is_mean ? !(fabs(got - want) <= GS_VOXELIZE_MEAN_RTOL * fmax(1.0, fabs(want)))
                      : !(got == want);
      }
      const double err = fabs(got - want);
      if (err > v->max_abs_error || isnan(err)) v->max_abs_error = isnan(err) ? INFINITY : err;
      if (bad) {
        if (v->mismatches == 0) {
          char where[96];
          describe_element(s, c, e, where, sizeof where);
          snprintf(first, sizeof first, "; first mismatch at %s: got %.9g, expected %.9g", where,
                   got, want);
        }
        v->mismatches++;
      }
    }
    const gs_voxelize_dropped got = {s->dropped_raw[2 * c], s->dropped_raw[2 * c + 1]};
    s->dropped[c] = got;
    if (got.nonfinite != s->ref_dropped[c].nonfinite || got.outside != s->ref_dropped[c].outside)
      drop_mismatches++;
    got_total.nonfinite += got.nonfinite;
    got_total.outside += got.outside;
    ref_total.nonfinite += s->ref_dropped[c].nonfinite;
    ref_total.outside += s->ref_dropped[c].outside;
  }
  v->mismatches += drop_mismatches;
  v->status = v->mismatches == 0 ? GS_VERIFY_PASSED : GS_VERIFY_FAILED;
  snprintf(v->detail, sizeof v->detail,
           "%s grids of clouds [%llu,%llu) on a %ux%ux%u grid (%llu values per cloud) vs the CPU "
           "reference, %s; dropped points per cloud compared exactly: non-finite %llu "
           "(reference %llu), outside %llu (reference %llu), %llu cloud(s) differ%s",
           gs_voxelize_mode_name(mode), (unsigned long long)s->unit_begin,
           (unsigned long long)(s->unit_begin + s->clouds), s->params.dims[0], s->params.dims[1],
           s->params.dims[2], (unsigned long long)elems,
           is_mean ? "|got-ref| <= 1e-5*max(1,|ref|) (float atomics add in varying order)"
                   : "exact",
           (unsigned long long)got_total.nonfinite, (unsigned long long)ref_total.nonfinite,
           (unsigned long long)got_total.outside, (unsigned long long)ref_total.outside,
           (unsigned long long)drop_mismatches, first);
  return GS_OK;
}

/* CPU: the step ran the reference itself, so check invariants instead:
 * per cloud, points in voxels + dropped == n and non-finite dropped ==
 * non-finite generated; per voxel, occupancy == (count > 0), empty voxels
 * 0 in mean/max and non-empty values within the features' range [-1, 1]. */
static gs_status verify_host(gs_voxelize_state *s, gs_verification *v) {
  const gs_voxelize_mode mode = s->params.mode;
  const uint64_t F = s->params.features;
  v->tolerance = 0.0;
  v->max_abs_error = 0.0;
  v->mismatches = 0;
  char first[160] = "";
  gs_voxelize_dropped total = {0, 0};
  for (uint64_t c = 0; c < s->clouds; c++) {
    const uint32_t *counts = s->counts + c * s->cells;
    const char *out = (const char *)s->out + c * s->out_bytes;
    uint64_t in_grid = 0, bad_cells = 0;
    for (uint64_t cell = 0; cell < s->cells; cell++) {
      in_grid += counts[cell];
      int bad = 0;
      if (mode == GS_VOXELIZE_COUNT) {
        bad = ((const uint32_t *)out)[cell] != counts[cell];
      } else if (mode == GS_VOXELIZE_OCCUPANCY) {
        bad = ((const uint32_t *)out)[cell] != (counts[cell] > 0);
      } else {
        for (uint64_t f = 0; f < F; f++) {
          const float x = ((const float *)out)[cell * F + f];
          bad |= counts[cell] == 0 ? x != 0.0f : !(x >= -1.0f && x <= 1.0f);
        }
      }
      if (bad && bad_cells++ == 0 && first[0] == '\0') {
        char where[96];
        describe_element(s, c, cell * (F > 0 ? F : 1), where, sizeof where);
        snprintf(first, sizeof first, "; first violation at %s (%u points)", where, counts[cell]);
      }
    }
    const gs_voxelize_dropped d = s->dropped[c];
    const uint64_t accounted = in_grid + d.nonfinite + d.outside;
    if (accounted != s->n) {
      v->max_abs_error = fmax(v->max_abs_error, fabs((double)accounted - (double)s->n));
      if (first[0] == '\0')
        snprintf(first, sizeof first, "; cloud %llu accounts for %llu of %llu points",
                 (unsigned long long)(s->unit_begin + c), (unsigned long long)accounted,
                 (unsigned long long)s->n);
      v->mismatches++;
    }
    if (d.nonfinite != s->generated_nonfinite[c]) {
      if (first[0] == '\0')
        snprintf(first, sizeof first, "; cloud %llu dropped %llu non-finite of %llu generated",
                 (unsigned long long)(s->unit_begin + c), (unsigned long long)d.nonfinite,
                 (unsigned long long)s->generated_nonfinite[c]);
      v->mismatches++;
    }
    v->mismatches += bad_cells;
    total.nonfinite += d.nonfinite;
    total.outside += d.outside;
  }
  v->status = v->mismatches == 0 ? GS_VERIFY_PASSED : GS_VERIFY_FAILED;
  snprintf(v->detail, sizeof v->detail,
           "CPU backend: the step is the reference, so invariants were checked instead of a "
           "comparison: per cloud, points in voxels + dropped == %llu points and non-finite "
           "dropped == non-finite generated; per voxel of the %ux%ux%u %s grids, %s; clouds "
           "[%llu,%llu) dropped non-finite %llu, outside %llu%s",
           (unsigned long long)s->n, s->params.dims[0], s->params.dims[1], s->params.dims[2],
           gs_voxelize_mode_name(mode),
           mode == GS_VOXELIZE_COUNT       ? "grid == counts"
           : mode == GS_VOXELIZE_OCCUPANCY ? "occupancy == (count > 0)"
                                           : "empty voxels 0 and others within [-1, 1]",
           (unsigned long long)s->unit_begin, (unsigned long long)(s->unit_begin + s->clouds),
           (unsigned long long)total.nonfinite, (unsigned long long)total.outside, first);
  return GS_OK;
}

/* Returns GS_OK when the comparison ran (its outcome is in out->status),
 * an error status when it could not run (CUDA failure, no step yet). */
static gs_status voxelize_verify(void *state, gs_verification *out) {
  gs_voxelize_state *s = state;
  memset(out, 0, sizeof *out);
  if (!s->stepped) GS_BUG("voxelize: verify called before any step");
  return s->backend == GS_BACKEND_CUDA ? verify_device(s, out) : verify_host(s, out);
}

const gs_workload gs_workload_voxelize = {
    .key = "voxelize",
    .summary = "point clouds to voxel grids: count, occupancy, per-voxel feature mean or max",
    .unit_name = "clouds",
    .unit_option = "--clouds",
    .item_unit = "points",
    .options_new = voxelize_options_new,
    .options_free = voxelize_options_free,
    .options_table = voxelize_options_table,
    .options_check = voxelize_options_check,
    .options_to_json = voxelize_options_to_json,
    .work_units = voxelize_work_units,
    .cost = voxelize_cost,
    .setup = voxelize_setup,
    .step = voxelize_step,
    .verify = voxelize_verify,
    .teardown = voxelize_teardown,
};
