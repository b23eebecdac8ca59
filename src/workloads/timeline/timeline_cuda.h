/* CUDA side of the timeline workloads: the device buffers of one rank and
 * the launcher of one step (one kernel for every stream). Host code
 * includes this header; only timeline_cuda.cu is compiled by nvcc. */
#ifndef GS_TIMELINE_CUDA_H
#define GS_TIMELINE_CUDA_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "workloads/timeline/timeline.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One stream on the device: data [batch][samples][dims] in the dtype,
 * times [batch][samples] float32; its values go to output columns
 * [column, column + dims). */
typedef struct {
  const void *data;
  const float *times;
  uint32_t samples;
  uint32_t dims;
  uint32_t column;
} gs_timeline_cuda_stream;

/* Everything one step reads and writes, all device memory from cudaMalloc
 * (256-byte aligned). targets: [batch][T] float32; out: [batch][T][width]
 * in the dtype. */
typedef struct {
  uint32_t n_streams;
  gs_timeline_cuda_stream streams[GS_TIMELINE_MAX_STREAMS];
  const float *targets;
  void *out;
  uint32_t targets_count;      /* T */
  uint32_t width;              /* sum of dims */
  uint32_t batch;              /* 1..GS_TIMELINE_MAX_BATCH */
  gs_timeline_dtype dtype;
  int sm_count;                /* sizes the launch */
} gs_timeline_cuda_buffers;

/* Enqueues one step on `stream`: a single kernel that locates every target
 * in every stream (a warp-wide 32-way search) and writes every output
 * value with the same float32 operations as gs_timeline_cpu. The inputs
 * must have passed gs_timeline_check_times / _targets (the caller checks
 * them once, when they are loaded). Asynchronous; returns the launch error
 * (cudaErrorInvalidValue for shapes outside the limits of timeline.h).
 * Call where the buffers' device is current. */
cudaError_t gs_timeline_cuda_step(const gs_timeline_cuda_buffers *b, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
