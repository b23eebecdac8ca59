/* The per-rank life cycle shared by resample and fuse: common options,
 * generated inputs per batch element, the CPU or CUDA step, verification
 * against the CPU reference (CUDA) or by invariants (CPU), and cost. */
#include "workloads/timeline/timeline_workload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/checked.h"
#include "workloads/timeline/timeline_cuda.h"

#define GS_TIMELINE_MAX_UNIT_BYTES (16ull << 30)
/* bfloat16 keeps 8 significant bits: rounding a float32 value to nearest
 * moves it by at most half a unit in the last place, <= 2^-8 of its size. */
#define GS_TIMELINE_BF16_RTOL (1.0 / 256.0)

const char *const gs_timeline_dtype_choices[] = {"float32", "bfloat16", NULL};

/* ---- options ------------------------------------------------------------------ */

void gs_timeline_problem_init(gs_timeline_problem *p, gs_option *table) {
  p->batch = 4;
  p->targets = 50;
  p->dtype = GS_TIMELINE_BF16;
  p->duplicates = 0.01;
  p->outside = 0.05;
  const gs_option common[GS_TIMELINE_COMMON_OPTIONS] = {
      {.name = "batch", .kind = GS_OPT_COUNT, .target = &p->batch, .min = 1,
       .max = GS_TIMELINE_MAX_BATCH, .metavar = "B",
       .help = "batch elements per step; the unit split over ranks"},
      {.name = "targets", .kind = GS_OPT_COUNT, .target = &p->targets, .min = 1,
       .max = GS_TIMELINE_MAX_TARGETS, .metavar = "T", .help = "target times per batch element"},
      {.name = "dtype", .kind = GS_OPT_CHOICE, .target = &p->dtype,
       .choices = gs_timeline_dtype_choices, .metavar = "TYPE",
       .help = "data and output type (interpolation is float32 either way)"},
      {.name = "duplicates", .kind = GS_OPT_DOUBLE, .target = &p->duplicates, .dmin = 0.0,
       .dmax = 1.0, .metavar = "FRACTION",
       .help = "fraction of source times equal to the time before them"},
      {.name = "outside", .kind = GS_OPT_DOUBLE, .target = &p->outside, .dmin = 0.0, .dmax = 1.0,
       .metavar = "FRACTION",
       .help = "fraction of target times before the first or after the last source time"},
  };
  memcpy(table, common, sizeof common);
}

gs_status gs_timeline_problem_check(gs_timeline_problem *p, const char *stream_options) {
  gs_timeline_shape *sh = &p->shape;
  sh->targets = (uint32_t)p->targets;
  sh->dtype = (gs_timeline_dtype)p->dtype;
  const uint64_t width = gs_timeline_out_dims(sh);
  const size_t elem = gs_timeline_elem_size(sh->dtype);
  if (width > UINT32_MAX / 2)
    return gs_error(GS_ERR_USAGE, "the output has %llu values per target, over 2^31",
                    (unsigned long long)width);
  // Each term is checked against the limit before it is added, so neither a
  // product nor the sum of at most 2 + GS_TIMELINE_MAX_STREAMS terms wraps.
  const uint64_t output[] = {p->targets, width * elem + 4};
  uint64_t bytes = 0, term = 0;
  int over = gs_product_u64_exceeds(output, 2, GS_TIMELINE_MAX_UNIT_BYTES, &term);
  bytes += over ? 0 : term;
  for (size_t s = 0; s < sh->n_streams && !over; s++) {
    const uint64_t input[] = {sh->streams[s].samples, sh->streams[s].dims * elem + 4};
    over = gs_product_u64_exceeds(input, 2, GS_TIMELINE_MAX_UNIT_BYTES, &term);
    bytes += over ? 0 : term;
  }
  if (over || bytes > GS_TIMELINE_MAX_UNIT_BYTES)
    return gs_error(GS_ERR_USAGE,
                    "--targets/%s: one batch element needs more than the limit of 16 GiB of "
                    "inputs and output",
                    stream_options);
  return GS_OK;
}

void gs_timeline_problem_to_json(gs_json_build *b, const gs_timeline_problem *p, cJSON *json) {
  gs_json_put_number(b, json, "batch", (double)p->batch);
  gs_json_put_number(b, json, "targets", (double)p->targets);
  gs_json_put_string(b, json, "dtype", gs_timeline_dtype_choices[p->dtype]);
  gs_json_put_number(b, json, "duplicates", p->duplicates);
  gs_json_put_number(b, json, "outside", p->outside);
}

uint64_t gs_timeline_work_units(const void *opts) {
  return ((const gs_timeline_problem *)opts)->batch;
}

/* Items: output values (T x width per batch element). Bytes: every input
 * read once and the output written once. Flops: per (target, stream) two
 * subtractions and a division, per output value a subtraction, a
 * multiplication and an addition. */
void gs_timeline_cost(const void *opts, uint64_t units, gs_cost *out) {
  const gs_timeline_shape *sh = &((const gs_timeline_problem *)opts)->shape;
  const uint64_t T = sh->targets, width = gs_timeline_out_dims(sh);
  const uint64_t elem = gs_timeline_elem_size(sh->dtype);
  uint64_t in_bytes = T * 4;
  for (size_t s = 0; s < sh->n_streams; s++)
    in_bytes += (uint64_t)sh->streams[s].samples * (sh->streams[s].dims * elem + 4);
  out->items = units * T * width;
  out->item_unit = "values";
  out->bytes = units * (in_bytes + T * width * elem);
  out->flops = units * T * (3 * sh->n_streams + 3 * width);
  out->bound = GS_BOUND_MEMORY;  // a few flops per value read
}

/* ---- one rank ------------------------------------------------------------------ */

typedef struct {
  gs_timeline_shape shape;
  gs_backend backend;
  cudaStream_t stream;
  uint64_t count, unit_begin;      /* batch elements of this rank */
  uint64_t width;
  size_t elem;
  void *data[GS_TIMELINE_MAX_STREAMS];    /* host, [count][S][D] */
  float *times[GS_TIMELINE_MAX_STREAMS];  /* host, [count][S] */
  float *targets;                         /* host, [count][T] */
  void *out;                              /* host, [count][T][width]: CPU step's or copied back */
  float *ref;                             /* CUDA: reference before rounding, [count][T][width] */
  void *ref_out;                          /* CUDA: reference in the dtype */
  gs_timeline_cuda_buffers dev;
  int stepped;
} gs_timeline_state;

/* Frees a device pointer from teardown, which cannot return a status: the
 * caller keeps the error recorded before (gs_error_keep). */
static gs_status free_device(const void *ptr) {
  if (ptr != NULL) GS_CHECK_CUDA(cudaFree((void *)ptr));
  return GS_OK;
}

void gs_timeline_teardown(void *state) {
  gs_timeline_state *s = state;
  if (s == NULL) return;
  for (size_t k = 0; k < GS_TIMELINE_MAX_STREAMS; k++) {
    free(s->data[k]);
    free(s->times[k]);
  }
  if (s->backend == GS_BACKEND_CUDA) {
    // A failure (often a failed step's sticky error again) must not replace
    // the error recorded before: it is dropped, and the rest still freed.
    gs_error_kept kept;
    gs_error_keep(&kept);
    for (uint32_t k = 0; k < s->dev.n_streams; k++) {
      (void)free_device(s->dev.streams[k].data);
      (void)free_device(s->dev.streams[k].times);
    }
    (void)free_device(s->dev.targets);
    (void)free_device(s->dev.out);
    gs_error_restore(&kept);
  }
  free(s->targets);
  free(s->out);
  free(s->ref);
  free(s->ref_out);
  free(s);
}

/* malloc of count * size bytes, or NULL (also when the product overflows). */
static void *alloc_array(uint64_t count, uint64_t size) {
  if (count == 0) count = 1;
  if (size != 0 && count > SIZE_MAX / size) return NULL;
  return malloc((size_t)(count * size));
}

/* The inputs of element c of this rank, as the reference takes them. */
static void element_inputs(const gs_timeline_state *s, uint64_t c, gs_timeline_inputs *in) {
  memset(in, 0, sizeof *in);
  for (size_t k = 0; k < s->shape.n_streams; k++) {
    const uint64_t S = s->shape.streams[k].samples, D = s->shape.streams[k].dims;
    in->data[k] = (const char *)s->data[k] + c * S * D * s->elem;
    in->times[k] = s->times[k] + c * S;
  }
  in->targets = s->targets + c * s->shape.targets;
}

static gs_status copy_to_device(void **dst, const void *src, uint64_t bytes) {
  GS_CHECK_CUDA(cudaMalloc(dst, (size_t)bytes));
  GS_CHECK_CUDA(cudaMemcpy(*dst, src, (size_t)bytes, cudaMemcpyHostToDevice));
  return GS_OK;
}

static gs_status setup_device(gs_timeline_state *s, const gs_rank_context *ctx) {
  gs_timeline_cuda_buffers *d = &s->dev;
  GS_CHECK_CUDA(cudaDeviceGetAttribute(&d->sm_count, cudaDevAttrMultiProcessorCount, ctx->device));
  d->n_streams = (uint32_t)s->shape.n_streams;
  d->targets_count = s->shape.targets;
  d->width = (uint32_t)s->width;
  d->batch = (uint32_t)s->count;
  d->dtype = s->shape.dtype;
  for (size_t k = 0; k < s->shape.n_streams; k++) {
    const uint64_t S = s->shape.streams[k].samples, D = s->shape.streams[k].dims;
    gs_timeline_cuda_stream *st = &d->streams[k];
    st->samples = (uint32_t)S;
    st->dims = (uint32_t)D;
    st->column = (uint32_t)gs_timeline_column(&s->shape, k);
    void *ptr = NULL;
    GS_TRY(copy_to_device(&ptr, s->data[k], s->count * S * D * s->elem));
    st->data = ptr;
    ptr = NULL;
    GS_TRY(copy_to_device(&ptr, s->times[k], s->count * S * sizeof(float)));
    st->times = ptr;
  }
  void *ptr = NULL;
  GS_TRY(copy_to_device(&ptr, s->targets, s->count * s->shape.targets * sizeof(float)));
  d->targets = ptr;
  GS_CHECK_CUDA(cudaMalloc(&d->out, (size_t)(s->count * s->shape.targets * s->width * s->elem)));
  return GS_OK;
}

gs_status gs_timeline_setup(const void *opts, const gs_rank_context *ctx, void **state) {
  const gs_timeline_problem *p = opts;
  *state = NULL;
  GS_TRY(gs_workload_check_share(ctx, "timeline", "batch elements"));
  gs_timeline_state *s = calloc(1, sizeof *s);
  if (s == NULL) return gs_error(GS_ERR_NOMEM, "timeline: cannot allocate state");
  s->shape = p->shape;
  s->backend = ctx->backend;
  s->stream = ctx->stream;
  s->count = ctx->unit_count;
  s->unit_begin = ctx->unit_begin;
  s->width = gs_timeline_out_dims(&s->shape);
  s->elem = gs_timeline_elem_size(s->shape.dtype);
  const uint64_t T = s->shape.targets, values = s->count * T * s->width;
  const int cuda = ctx->backend == GS_BACKEND_CUDA;

  int missing = 0;
  for (size_t k = 0; k < s->shape.n_streams; k++) {
    const uint64_t S = s->shape.streams[k].samples, D = s->shape.streams[k].dims;
    s->data[k] = alloc_array(s->count * S * D, s->elem);
    s->times[k] = alloc_array(s->count * S, sizeof(float));
    missing |= s->data[k] == NULL || s->times[k] == NULL;
  }
  s->targets = alloc_array(s->count * T, sizeof(float));
  s->out = alloc_array(values, s->elem);
  if (cuda) {
    s->ref = alloc_array(values, sizeof(float));
    s->ref_out = alloc_array(values, s->elem);
  }
  if (missing || s->targets == NULL || s->out == NULL ||
      (cuda && (s->ref == NULL || s->ref_out == NULL))) {
    gs_timeline_teardown(s);
    return gs_error(GS_ERR_NOMEM, "timeline: cannot allocate host buffers for %llu batch elements",
                    (unsigned long long)s->count);
  }

  for (uint64_t c = 0; c < s->count; c++) {
    void *data[GS_TIMELINE_MAX_STREAMS];
    float *times[GS_TIMELINE_MAX_STREAMS];
    for (size_t k = 0; k < s->shape.n_streams; k++) {
      const uint64_t S = s->shape.streams[k].samples, D = s->shape.streams[k].dims;
      data[k] = (char *)s->data[k] + c * S * D * s->elem;
      times[k] = s->times[k] + c * S;
    }
    gs_timeline_generate(&s->shape, p->duplicates, p->outside, ctx->seed, s->unit_begin + c, data,
                         times, s->targets + c * T);
  }

  gs_status st = GS_OK;
  if (cuda) {
    // The reference checks the inputs before anything goes to the device.
    for (uint64_t c = 0; st == GS_OK && c < s->count; c++) {
      gs_timeline_inputs in;
      element_inputs(s, c, &in);
      st = gs_timeline_cpu(&s->shape, &in, s->unit_begin + c,
                           (char *)s->ref_out + c * T * s->width * s->elem,
                           s->ref + c * T * s->width);
    }
    if (st == GS_OK) st = setup_device(s, ctx);
  }
  if (st != GS_OK) {
    gs_timeline_teardown(s);
    return st;
  }
  *state = s;
  return GS_OK;
}

gs_status gs_timeline_step(void *state) {
  gs_timeline_state *s = state;
  if (s->backend == GS_BACKEND_CUDA) {
    GS_CHECK_CUDA(gs_timeline_cuda_step(&s->dev, s->stream));
  } else {
    const uint64_t per_element = (uint64_t)s->shape.targets * s->width * s->elem;
    for (uint64_t c = 0; c < s->count; c++) {
      gs_timeline_inputs in;
      element_inputs(s, c, &in);
      GS_TRY(gs_timeline_cpu(&s->shape, &in, s->unit_begin + c,
                             (char *)s->out + c * per_element, NULL));
    }
  }
  s->stepped = 1;
  return GS_OK;
}

/* ---- verification ------------------------------------------------------------------ */

static float output_value(const gs_timeline_state *s, const void *out, uint64_t index) {
  return s->shape.dtype == GS_TIMELINE_BF16 ? gs_bf16_to_float(((const uint16_t *)out)[index])
                                            : ((const float *)out)[index];
}

/* Batch element, target and column of output value `index`, for messages. */
static void describe_value(const gs_timeline_state *s, uint64_t index, char *buf, size_t size) {
  const uint64_t per_element = (uint64_t)s->shape.targets * s->width;
  const uint64_t c = index / per_element, rest = index % per_element;
  snprintf(buf, size, "batch element %llu, target %llu, column %llu",
           (unsigned long long)(s->unit_begin + c), (unsigned long long)(rest / s->width),
           (unsigned long long)(rest % s->width));
}

/* CUDA: the output against the reference computed at setup. float32 must
 * match bit for bit (same operations, same rounding); bfloat16 within one
 * rounding of the float32 reference, |got - ref| <= 2^-8 |ref|. */
static gs_status verify_device(gs_timeline_state *s, gs_verification *v) {
  const uint64_t values = s->count * s->shape.targets * s->width;
  GS_CHECK_CUDA(cudaStreamSynchronize(s->stream));
  GS_CHECK_CUDA(cudaMemcpy(s->out, s->dev.out, (size_t)(values * s->elem), cudaMemcpyDeviceToHost));
  const int bf16 = s->shape.dtype == GS_TIMELINE_BF16;
  v->tolerance = bf16 ? GS_TIMELINE_BF16_RTOL : 0.0;
  uint64_t identical = 0;
  char first[192] = "";
  for (uint64_t i = 0; i < values; i++) {
    const double got = output_value(s, s->out, i), want = s->ref[i];
    const double err = fabs(got - want);
    if (err > v->max_abs_error || isnan(err)) v->max_abs_error = isnan(err) ? INFINITY : err;
    identical += output_value(s, s->ref_out, i) == (float)got;
    const int bad = bf16 ? !(err <= GS_TIMELINE_BF16_RTOL * fabs(want)) : !(got == want);
    if (bad && v->mismatches++ == 0) {
      char where[96];
      describe_value(s, i, where, sizeof where);
      snprintf(first, sizeof first, "; first mismatch at %s: got %.9g, expected %.9g", where, got,
               want);
    }
  }
  v->status = v->mismatches == 0 ? GS_VERIFY_PASSED : GS_VERIFY_FAILED;
  snprintf(v->detail, sizeof v->detail,
           "%llu %s values of batch elements [%llu,%llu) vs the CPU reference, %s; %llu identical "
           "to the reference's own %s output%s",
           (unsigned long long)values, gs_timeline_dtype_name(s->shape.dtype),
           (unsigned long long)s->unit_begin, (unsigned long long)(s->unit_begin + s->count),
           bf16 ? "|got-ref32| <= 2^-8*|ref32| (one rounding of the float32 result to bfloat16)"
                : "bit for bit",
           (unsigned long long)identical, gs_timeline_dtype_name(s->shape.dtype), first);
  return GS_OK;
}

/* CPU: the step ran the reference, so check what it must satisfy, with the
 * bracketing samples found again by a linear scan instead of the search:
 * a target outside the source span holds the end sample exactly; any other
 * value lies between its two samples (float32 rounding may overshoot by a
 * few units in the last place). */
static gs_status verify_host(gs_timeline_state *s, gs_verification *v) {
  const uint32_t T = s->shape.targets;
  v->tolerance = ldexp(1.0, -22);
  uint64_t held = 0, checked = 0;
  char first[192] = "";
  for (uint64_t c = 0; c < s->count; c++) {
    gs_timeline_inputs in;
    element_inputs(s, c, &in);
    for (uint32_t t = 0; t < T; t++) {
      for (size_t k = 0; k < s->shape.n_streams; k++) {
        const uint32_t S = s->shape.streams[k].samples, D = s->shape.streams[k].dims;
        uint32_t count = 0;
        while (count < S && in.times[k][count] <= in.targets[t]) count++;
        const uint32_t lo = count == 0 ? 0 : count - 1, hi = count == S ? S - 1 : count;
        held += lo == hi;
        const uint64_t col = gs_timeline_column(&s->shape, k);
        for (uint32_t d = 0; d < D; d++) {
          const uint64_t at = (c * T + t) * s->width + col + d;
          const double got = output_value(s, s->out, at);
          const double a = output_value(s, in.data[k], (uint64_t)lo * D + d);
          const double b = output_value(s, in.data[k], (uint64_t)hi * D + d);
          const double slack = v->tolerance * fmax(fabs(a), fabs(b));
          const int bad = lo == hi ? !(got == a)
                                   : !(got >= fmin(a, b) - slack && got <= fmax(a, b) + slack);
          checked++;
          if (bad && v->mismatches++ == 0) {
            char where[96];
            describe_value(s, at, where, sizeof where);
            snprintf(first, sizeof first, "; first violation at %s: %.9g not within [%.9g, %.9g]",
                     where, got, fmin(a, b), fmax(a, b));
          }
        }
      }
    }
  }
  v->status = v->mismatches == 0 ? GS_VERIFY_PASSED : GS_VERIFY_FAILED;
  snprintf(v->detail, sizeof v->detail,
           "CPU backend: the step is the reference, so invariants were checked instead of a "
           "comparison: with each target's samples found again by a linear scan, %llu values of "
           "batch elements [%llu,%llu) lie between their two samples (held ends: equal to the "
           "end sample; %llu target/stream pairs held)%s",
           (unsigned long long)checked, (unsigned long long)s->unit_begin,
           (unsigned long long)(s->unit_begin + s->count), (unsigned long long)held, first);
  return GS_OK;
}

gs_status gs_timeline_verify(void *state, gs_verification *out) {
  gs_timeline_state *s = state;
  memset(out, 0, sizeof *out);
  if (!s->stepped) GS_BUG("timeline: verify called before any step");
  return s->backend == GS_BACKEND_CUDA ? verify_device(s, out) : verify_host(s, out);
}
