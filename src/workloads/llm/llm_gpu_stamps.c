/* A shard's arrival stamps on its GPU (llm_gpu_stamps.h). */
#include "workloads/llm/llm_gpu_stamps.h"

#include <stdlib.h>

#include "core/check.h"
#include "core/timer.h"
#include "workloads/llm/llm_stamps_cuda.h"

struct gs_llm_stamper {
  unsigned long long *ring;   /* mapped host memory: 2 x GS_LLM_STAMP_SLOTS */
  unsigned long long *at;     /* its device address */
  unsigned long long *count;  /* device memory: slots opened */
  uint64_t taken;             /* slots appended by gs_llm_stamper_take */
  gs_llm_clock_anchor anchor;
};

void gs_llm_stamper_destroy(gs_llm_stamper *s) {
  if (!s) return;
  if (s->ring) cudaFreeHost(s->ring);
  if (s->count) cudaFree(s->count);
  free(s);
}

/* The anchor: the clock read by a kernel between two host reads. */
static gs_status anchor(gs_llm_stamper *s, cudaStream_t stream) {
  gs_llm_clock_trial trials[GS_LLM_CLOCK_TRIES];
  // Slot 0's entry holds each reading, cleared before it.
  volatile unsigned long long *reading = s->ring;
  for (int t = 0; t < GS_LLM_CLOCK_TRIES; t++) {
    *reading = 0;
    trials[t].before = gs_time_seconds();
    GS_CHECK_CUDA(gs_llm_cuda_clock(s->at, stream));
    GS_CHECK_CUDA(cudaStreamSynchronize(stream));
    trials[t].after = gs_time_seconds();
    trials[t].device_ns = *reading;
  }
  *reading = 0;
  return gs_llm_clock_pick(trials, GS_LLM_CLOCK_TRIES, &s->anchor);
}

gs_status gs_llm_stamper_create(cudaStream_t stream, gs_llm_stamper **out) {
  *out = NULL;
  gs_llm_stamper *s = calloc(1, sizeof *s);
  if (!s) return gs_error(GS_ERR_NOMEM, "cannot allocate the arrival stamps");
  const size_t bytes = 2 * GS_LLM_STAMP_SLOTS * sizeof *s->ring;
  cudaError_t rc = cudaHostAlloc((void **)&s->ring, bytes, cudaHostAllocMapped);
  if (rc == cudaSuccess) rc = cudaHostGetDevicePointer((void **)&s->at, s->ring, 0);
  if (rc == cudaSuccess) rc = cudaMalloc((void **)&s->count, sizeof *s->count);
  if (rc == cudaSuccess) rc = cudaMemsetAsync(s->count, 0, sizeof *s->count, stream);
  gs_status st = rc == cudaSuccess ? GS_OK
                                   : gs_error(GS_ERR_CUDA, "cannot make the arrival stamps: %s",
                                              cudaGetErrorString(rc));
  if (st == GS_OK) {
    for (size_t i = 0; i < 2 * GS_LLM_STAMP_SLOTS; i++) s->ring[i] = 0;
    st = anchor(s, stream);
  }
  if (st != GS_OK) {
    gs_llm_stamper_destroy(s);
    return st;
  }
  *out = s;
  return GS_OK;
}

gs_status gs_llm_stamps_load(void) {
  GS_CHECK_CUDA(gs_llm_cuda_load_kernels());
  return GS_OK;
}

const gs_llm_clock_anchor *gs_llm_stamper_anchor(const gs_llm_stamper *s) { return &s->anchor; }

gs_status gs_llm_stamper_mark(gs_llm_stamper *s, int exit, cudaStream_t stream) {
  GS_CHECK_CUDA(gs_llm_cuda_stamp(s->at, GS_LLM_STAMP_SLOTS, s->count, exit, stream));
  return GS_OK;
}

gs_status gs_llm_stamper_take(gs_llm_stamper *s, uint64_t done, double offset,
                              gs_arrival_rank *into) {
  GS_TRY(gs_llm_stamps_take(s->ring, s->taken, done, &s->anchor, offset, into));
  s->taken = done;
  return GS_OK;
}
