/* Time-series resampling onto a target timeline, shared by the resample
 * and fuse workloads: the interpolation rule, the input checks, bfloat16
 * conversion, generated data and the CPU reference (also the CPU
 * backend's step). One batch element holds one or more streams, each with
 * its own sample times and width; all are resampled onto the same target
 * times and written side by side into one output row per target. Rules:
 * docs/workloads/resample.md. */
#ifndef GS_TIMELINE_H
#define GS_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define GS_TIMELINE_MAX_STREAMS 16
#define GS_TIMELINE_MAX_SAMPLES 16777216ull /* per stream; indexes stay 32-bit */
#define GS_TIMELINE_MAX_DIMS 65536ull       /* per stream */
#define GS_TIMELINE_MAX_TARGETS 16777216ull
#define GS_TIMELINE_MAX_BATCH 65535ull      /* one CUDA grid row per batch element */

typedef enum { GS_TIMELINE_F32 = 0, GS_TIMELINE_BF16 = 1 } gs_timeline_dtype;

/* One stream: `samples` (S) rows of `dims` (D) values per batch element. */
typedef struct {
  uint32_t samples;
  uint32_t dims;
} gs_timeline_stream;

/* The problem of one batch element. Data and output share the dtype;
 * interpolation runs in float32 either way. */
typedef struct {
  size_t n_streams;                                 /* 1..GS_TIMELINE_MAX_STREAMS */
  gs_timeline_stream streams[GS_TIMELINE_MAX_STREAMS];
  uint32_t targets;                                 /* T */
  gs_timeline_dtype dtype;
} gs_timeline_shape;

/* "float32" or "bfloat16". */
const char *gs_timeline_dtype_name(gs_timeline_dtype dtype);

/* Bytes per data/output element: 4 or 2. */
size_t gs_timeline_elem_size(gs_timeline_dtype dtype);

/* Output width: the sum of the streams' dims. */
uint64_t gs_timeline_out_dims(const gs_timeline_shape *shape);

/* Output column where stream s starts: the sum of the dims before it. */
uint64_t gs_timeline_column(const gs_timeline_shape *shape, size_t s);

/* float32 -> bfloat16 bits, rounded to nearest even (NaN stays a quiet NaN),
 * and back (exact). The CUDA kernels round the same way. */
uint16_t gs_bf16_from_float(float value);
float gs_bf16_to_float(uint16_t bits);

/* Checks the sample times of one stream of one batch element: finite and
 * non-decreasing (equal neighbours allowed). `what` names the stream and
 * `batch` the element in the error, GS_ERR_USAGE naming the first bad
 * index and both values. This is the input check of both backends. */
gs_status gs_timeline_check_times(const float *times, uint32_t samples, const char *what,
                                  uint64_t batch);

/* Checks target times: finite (any order). GS_ERR_USAGE like above. */
gs_status gs_timeline_check_targets(const float *targets, uint32_t count, uint64_t batch);

/* Where target time t falls in checked `times` (S >= 1 samples): the
 * interpolation reads rows *lo and *hi with weight *w of the second:
 * value = a + w * (b - a) in float32, each operation rounded once.
 * count = number of samples with time <= t. count == 0 (t before the first
 * time) holds row 0, count == S (t at or after the last time) holds row
 * S-1 (w = 0, lo = hi); otherwise lo = count-1, hi = count, and times[hi]
 * > t >= times[lo], so the denominator is never zero even where equal
 * timestamps repeat (the last of the equal ones is used). S == 1 holds the
 * single sample. */
void gs_timeline_locate(const float *times, uint32_t samples, float t, uint32_t *lo,
                        uint32_t *hi, float *w);

/* The interpolated value between a and b, exactly as the kernels compute it. */
float gs_timeline_lerp(float a, float b, float w);

/* Pointers to the inputs and output of one batch element. data[s] holds
 * stream s as [S][D] in the shape's dtype, times[s] its [S] times;
 * targets holds [T] times; out receives [T][out_dims] in the dtype. */
typedef struct {
  const void *data[GS_TIMELINE_MAX_STREAMS];
  const float *times[GS_TIMELINE_MAX_STREAMS];
  const float *targets;
} gs_timeline_inputs;

/* CPU reference for one batch element (index `batch`, for errors): checks
 * the times, then writes every output value. `out_f32`, when not NULL,
 * also receives the float32 values before rounding to the dtype (the
 * reference the CUDA output is compared against). Thread-safe. */
gs_status gs_timeline_cpu(const gs_timeline_shape *shape, const gs_timeline_inputs *in,
                          uint64_t batch, void *out, float *out_f32);

/* Generated input of batch element `unit` from (seed, unit) only, so any
 * split of the batch over ranks sees the same data. Stream s gets S times
 * over about [0, 1) with steps of 0.5/S..1.5/S, a fraction `duplicates` of
 * them equal to the one before; values uniform in [-1, 1) (rounded to
 * bfloat16 for that dtype). Targets are the sorted grid (i + 0.5) / T over
 * [0, 1) with a fraction `outside` moved below 0 or to 1.5 and above,
 * outside every stream's span. Buffers as in gs_timeline_inputs, writable. */
void gs_timeline_generate(const gs_timeline_shape *shape, double duplicates, double outside,
                          uint64_t seed, uint64_t unit, void *const *data, float *const *times,
                          float *targets);

#endif
