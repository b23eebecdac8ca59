/* STREAM triad on one GPU (see membw.h): the host side, the maths and the
 * CUDA calls around the kernels of membw_kernels.cu. */
#include "p2p/membw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/check.h"
#include "core/stats.h"
#include "core/timer.h"
#include "p2p/membw_kernels.h"

void gs_membw_options_default(gs_membw_options *o) {
  memset(o, 0, sizeof *o);
  o->array_bytes = 512ull << 20;
  o->triads = 20;
  o->samples = 5;
  o->slowdown = 1.0;
}

uint64_t gs_membw_triad_bytes(uint64_t n) { return 3u * sizeof(double) * n; }

uint64_t gs_membw_extra_triads(uint64_t triads, double factor) {
  if (!(factor > 0) || factor >= 1) return 0;
  return (uint64_t)llround((double)triads * (1.0 / factor - 1.0));
}

double gs_membw_bandwidth(uint64_t n, uint64_t triads, double seconds) {
  if (!(seconds > 0)) return NAN;
  return (double)gs_membw_triad_bytes(n) * (double)triads / seconds;
}

uint64_t gs_membw_mismatches(const double *a, uint64_t n) {
  uint64_t bad = 0;
  for (uint64_t i = 0; i < n; i++) bad += a[i] != gs_membw_b(i) + GS_MEMBW_SCALAR * gs_membw_c(i);
  return bad;
}

/* Device buffers of one measurement; freed whatever was reached. */
typedef struct {
  double *a, *b, *c;
  unsigned long long *bad;
  cudaStream_t stream;
  cudaEvent_t start, stop;
} membw_buffers;

static void buffers_free(membw_buffers *m) {
  if (m->start) cudaEventDestroy(m->start);
  if (m->stop) cudaEventDestroy(m->stop);
  if (m->stream) cudaStreamDestroy(m->stream);
  cudaFree(m->a);
  cudaFree(m->b);
  cudaFree(m->c);
  cudaFree(m->bad);
}

static gs_status run(int device, const gs_membw_options *o, membw_buffers *m,
                     gs_membw_result *r) {
  const uint64_t n = o->array_bytes / sizeof(double);
  GS_CHECK_CUDA(cudaSetDevice(device));
  int sms = 0;
  GS_CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // Eight CTAs of 256 threads per SM fill every SM with enough loads in
  // flight; more only adds scheduling.
  const unsigned blocks = (unsigned)(sms > 0 ? sms : 1) * 8u;
  GS_CHECK_CUDA(cudaMalloc((void **)&m->a, o->array_bytes));
  GS_CHECK_CUDA(cudaMalloc((void **)&m->b, o->array_bytes));
  GS_CHECK_CUDA(cudaMalloc((void **)&m->c, o->array_bytes));
  GS_CHECK_CUDA(cudaMalloc((void **)&m->bad, sizeof *m->bad));
  GS_CHECK_CUDA(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking));
  GS_CHECK_CUDA(cudaEventCreate(&m->start));
  GS_CHECK_CUDA(cudaEventCreate(&m->stop));
  GS_CHECK_CUDA(cudaMemsetAsync(m->bad, 0, sizeof *m->bad, m->stream));
  GS_CHECK_CUDA(gs_membw_fill(m->b, m->c, n, m->stream));
  GS_CHECK_CUDA(gs_membw_triad(m->a, m->b, m->c, GS_MEMBW_SCALAR, n, blocks, m->stream));
  GS_CHECK_CUDA(cudaStreamSynchronize(m->stream));
  r->extra_triads = gs_membw_extra_triads(o->triads, o->slowdown);
  for (uint64_t s = 0; s < o->samples && r->n < GS_MEMBW_MAX_SAMPLES; s++) {
    GS_CHECK_CUDA(cudaEventRecord(m->start, m->stream));
    for (uint64_t t = 0; t < o->triads + r->extra_triads; t++)
      GS_CHECK_CUDA(gs_membw_triad(m->a, m->b, m->c, GS_MEMBW_SCALAR, n, blocks, m->stream));
    GS_CHECK_CUDA(cudaEventRecord(m->stop, m->stream));
    GS_CHECK_CUDA(cudaEventSynchronize(m->stop));
    float ms = 0;
    GS_CHECK_CUDA(cudaEventElapsedTime(&ms, m->start, m->stop));
    r->samples[r->n++] = gs_membw_bandwidth(n, o->triads, ms / 1e3);
  }
  // Verification after the timed region: every element of a, on the GPU.
  GS_CHECK_CUDA(gs_membw_check(m->a, n, GS_MEMBW_SCALAR, m->bad, m->stream));
  GS_CHECK_CUDA(cudaMemcpyAsync(&r->mismatches, m->bad, sizeof r->mismatches,
                                cudaMemcpyDeviceToHost, m->stream));
  GS_CHECK_CUDA(cudaStreamSynchronize(m->stream));
  gs_stats st;
  GS_TRY(gs_stats_compute(r->samples, r->n, &st));
  r->median = st.median;
  if (r->mismatches)
    return gs_error(GS_ERR_VERIFY, "triad on GPU %d: %llu of %llu elements wrong", device,
                    r->mismatches, (unsigned long long)n);
  return GS_OK;
}

gs_status gs_membw_measure(int device, const gs_membw_options *o, gs_membw_result *r) {
  memset(r, 0, sizeof *r);
  if (o->array_bytes < 16 || o->array_bytes % 16 || o->triads == 0 || o->samples == 0 ||
      o->samples > GS_MEMBW_MAX_SAMPLES || !(o->slowdown > 0) || o->slowdown > 1)
    GS_BUG("gs_membw_measure: options outside their contract");
  const double t0 = gs_time_seconds();
  membw_buffers m;
  memset(&m, 0, sizeof m);
  r->status = run(device, o, &m, r);
  if (r->status != GS_OK) snprintf(r->error, sizeof r->error, "%s", gs_last_error());
  buffers_free(&m);
  r->seconds = gs_time_seconds() - t0;
  return GS_OK;
}
