/* CPU side of the timeline workloads: the interpolation rule, the input
 * checks, bfloat16 rounding, generated data and the reference. Plain
 * sequential loops; every float operation is written out so that the CUDA
 * kernels can repeat it with the same rounding. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "workloads/timeline/timeline.h"

const char *gs_timeline_dtype_name(gs_timeline_dtype dtype) {
  return dtype == GS_TIMELINE_BF16 ? "bfloat16" : "float32";
}

size_t gs_timeline_elem_size(gs_timeline_dtype dtype) {
  return dtype == GS_TIMELINE_BF16 ? 2 : 4;
}

uint64_t gs_timeline_column(const gs_timeline_shape *shape, size_t s) {
  uint64_t col = 0;
  for (size_t k = 0; k < s && k < shape->n_streams; k++) col += shape->streams[k].dims;
  return col;
}

uint64_t gs_timeline_out_dims(const gs_timeline_shape *shape) {
  return gs_timeline_column(shape, shape->n_streams);
}

uint16_t gs_bf16_from_float(float value) {
  uint32_t u;
  memcpy(&u, &value, sizeof u);
  if (isnan(value)) return (uint16_t)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

float gs_bf16_to_float(uint16_t bits) {
  const uint32_t u = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

gs_status gs_timeline_check_times(const float *times, uint32_t samples, const char *what,
                                  uint64_t batch) {
  if (samples < 1)
    return gs_error(GS_ERR_USAGE, "%s of batch element %llu: no samples", what,
                    (unsigned long long)batch);
  for (uint32_t i = 0; i < samples; i++) {
    if (!isfinite(times[i]))
      return gs_error(GS_ERR_USAGE, "%s of batch element %llu: time %u is %g (not finite)", what,
                      (unsigned long long)batch, i, (double)times[i]);
    if (i > 0 && times[i] < times[i - 1])
      return gs_error(GS_ERR_USAGE,
                      "%s of batch element %llu: source times must not decrease, but time %u "
                      "(%.9g) is before time %u (%.9g)",
                      what, (unsigned long long)batch, i, (double)times[i], i - 1,
                      (double)times[i - 1]);
  }
  return GS_OK;
}

gs_status gs_timeline_check_targets(const float *targets, uint32_t count, uint64_t batch) {
  for (uint32_t i = 0; i < count; i++)
    if (!isfinite(targets[i]))
      return gs_error(GS_ERR_USAGE, "target times of batch element %llu: time %u is %g (not finite)",
                      (unsigned long long)batch, i, (double)targets[i]);
  return GS_OK;
}

void gs_timeline_locate(const float *times, uint32_t samples, float t, uint32_t *lo,
                        uint32_t *hi, float *w) {
  // count = first index whose time is > t (an upper bound search).
  uint32_t begin = 0, end = samples;
  while (begin < end) {
    const uint32_t mid = begin + (end - begin) / 2;
    if (times[mid] <= t)
      begin = mid + 1;
    else
      end = mid;
  }
  const uint32_t count = begin;
  if (count == 0 || count == samples) {
    *lo = *hi = count == 0 ? 0 : samples - 1;
    *w = 0.0f;
    return;
  }
  *lo = count - 1;
  *hi = count;
  *w = (t - times[count - 1]) / (times[count] - times[count - 1]);
}

float gs_timeline_lerp(float a, float b, float w) {
  // Three roundings in this order; the kernels spell out the same ones.
  const float diff = b - a;
  const float step = w * diff;
  return a + step;
}

static float load_value(const void *data, gs_timeline_dtype dtype, uint64_t index) {
  return dtype == GS_TIMELINE_BF16 ? gs_bf16_to_float(((const uint16_t *)data)[index])
                                   : ((const float *)data)[index];
}

gs_status gs_timeline_cpu(const gs_timeline_shape *shape, const gs_timeline_inputs *in,
                          uint64_t batch, void *out, float *out_f32) {
  if (shape->n_streams < 1 || shape->n_streams > GS_TIMELINE_MAX_STREAMS)
    GS_BUG("timeline: %zu streams", shape->n_streams);
  for (size_t s = 0; s < shape->n_streams; s++) {
    char what[48];
    snprintf(what, sizeof what, "source times of stream %zu", s);
    GS_TRY(gs_timeline_check_times(in->times[s], shape->streams[s].samples, what, batch));
  }
  GS_TRY(gs_timeline_check_targets(in->targets, shape->targets, batch));
  const uint64_t width = gs_timeline_out_dims(shape);
  for (uint32_t t = 0; t < shape->targets; t++) {
    uint64_t col = (uint64_t)t * width;
    for (size_t s = 0; s < shape->n_streams; s++) {
      const uint32_t S = shape->streams[s].samples, D = shape->streams[s].dims;
      uint32_t lo, hi;
      float w;
      gs_timeline_locate(in->times[s], S, in->targets[t], &lo, &hi, &w);
      for (uint32_t d = 0; d < D; d++, col++) {
        const float a = load_value(in->data[s], shape->dtype, (uint64_t)lo * D + d);
        const float b = load_value(in->data[s], shape->dtype, (uint64_t)hi * D + d);
        const float v = gs_timeline_lerp(a, b, w);
        if (out_f32) out_f32[col] = v;
        if (shape->dtype == GS_TIMELINE_BF16)
          ((uint16_t *)out)[col] = gs_bf16_from_float(v);
        else
          ((float *)out)[col] = v;
      }
    }
  }
  return GS_OK;
}

void gs_timeline_generate(const gs_timeline_shape *shape, double duplicates, double outside,
                          uint64_t seed, uint64_t unit, void *const *data, float *const *times,
                          float *targets) {
  gs_rng rng;
  gs_rng_seed(&rng, seed, unit);
  for (size_t s = 0; s < shape->n_streams; s++) {
    const uint32_t S = shape->streams[s].samples, D = shape->streams[s].dims;
    const float spacing = 1.0f / (float)S;
    float t = 0.5f * spacing * gs_rng_float(&rng);
    for (uint32_t i = 0; i < S; i++) {
      if (i > 0 && gs_rng_double(&rng) >= duplicates)
        t += spacing * (0.5f + gs_rng_float(&rng));
      times[s][i] = t;
      for (uint32_t d = 0; d < D; d++) {
        const float v = 2.0f * gs_rng_float(&rng) - 1.0f;
        const uint64_t at = (uint64_t)i * D + d;
        if (shape->dtype == GS_TIMELINE_BF16)
          ((uint16_t *)data[s])[at] = gs_bf16_from_float(v);
        else
          ((float *)data[s])[at] = v;
      }
    }
  }
  // Sources start in [0, 0.5/S) and end before 1.5, so a target below 0 or
  // above 1.5 is outside every stream.
  for (uint32_t i = 0; i < shape->targets; i++) {
    targets[i] = ((float)i + 0.5f) / (float)shape->targets;
    if (gs_rng_double(&rng) < outside)
      targets[i] = (gs_rng_next(&rng) & 1) ? 1.5f + 0.25f * gs_rng_float(&rng)
                                           : -1e-3f - 0.25f * gs_rng_float(&rng);
  }
}
