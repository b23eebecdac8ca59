/* One rank's exchanges of `check pairs` on the CPU backend's host buffers
 * or its GPU's device buffers (check_pairs_rank.h; docs/check.md,
 * "Localization by pairs"). */
#include "measure/check_pairs_rank.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fault.h"
#include "core/stats.h"
#include "core/timer.h"
#include "platform/fault_cuda.h"

/* One exchange of kind 0 (all-reduce over the pair's group) or 1 (a copy
 * each way with `peer`); on CUDA only enqueued on `stream`. */
static gs_status exchange(const gs_check_pairs_rank *r, gs_comm_group *g, int kind, int peer) {
  if (kind == 0)
    return gs_comm_group_allreduce(g, r->send, r->recv, r->count, GS_DTYPE_FLOAT, GS_REDOP_SUM,
                                   r->stream);
  // On GPUs the copy runs on the pair's own communicator, as the
  // all-reduce does (gs_comm_group_p2p says why); the host transport
  // carries any pair alike.
  const int member = r->cuda ? 1 - gs_comm_group_rank(g) : peer;
  gs_comm_p2p_op ops[2] = {
      {.send = 1, .buf = r->send, .count = r->count, .dtype = GS_DTYPE_FLOAT, .peer = member},
      {.send = 0, .buf = r->recv, .count = r->count, .dtype = GS_DTYPE_FLOAT, .peer = member}};
  if (r->cuda) return gs_comm_group_p2p(g, ops, 2, r->stream);
  GS_TRY(gs_comm_p2p(r->comm, ops, 2, r->stream));
  return gs_comm_p2p_drain(r->comm);
}

/* The exchange's first and last received values against what the pair
 * sends: the sum of both ranks' (rank + 1), or the peer's. */
static gs_status verify(const gs_check_pairs_rank *r, int peer, int kind, const float got[2]) {
  const int me = gs_comm_rank(r->comm);
  const float want = kind == 0 ? (float)(me + peer + 2) : (float)(peer + 1);
  if (got[0] != want || got[1] != want)
    return gs_error(GS_ERR_VERIFY, "rank %d: the %s with rank %d delivered %g, not %g", me,
                    kind == 0 ? "all-reduce" : "copy", peer,
                    (double)(got[0] != want ? got[0] : got[1]), (double)want);
  return GS_OK;
}

/* ---- CPU ranks ---------------------------------------------------------------- */

/* The slowed rank's own work in an exchange of `kind` that took
 * `seconds`: the median of its last GS_PAIRS_RECENT exchanges of the kind
 * (this one included), at most this one's time. A wait for a partner
 * that was descheduled is an outlier the median leaves out, where a
 * multiple of the exchange's own time carried it: a partner descheduled
 * for 20 s made a factor 5 wait 80 s after the exchange, and the
 * partner's next exchange (and the idle ranks' barrier) ran past the 60 s
 * timeout. The median of the times is the slowed pairs' as before. */
static double own_work(gs_check_pairs_rank *r, int kind, double seconds) {
  double *ring = r->recent[kind];
  ring[r->n_recent[kind]++ % GS_PAIRS_RECENT] = seconds;
  const size_t n = r->n_recent[kind] < GS_PAIRS_RECENT ? r->n_recent[kind] : GS_PAIRS_RECENT;
  double sorted[GS_PAIRS_RECENT];
  memcpy(sorted, ring, n * sizeof *sorted);
  gs_stats_sort(sorted, n);
  const double median = gs_stats_percentile_sorted(sorted, n, 50.0);
  return median < seconds ? median : seconds;
}

/* One exchange with the slowed rank's stretch; start and end go to t[0],
 * t[1]. A slowed rank (--inject slow) is slow with every partner: after
 * the exchange it waits F - 1 times its own work (own_work), at most
 * r->slow_cap (a quarter of the world's timeout): while a kind has had
 * few exchanges its median is one of them, which may hold a long wait for
 * the partner on a loaded host, and (F - 1) times that could reach the
 * partner's timeout; capped, the fault alone never holds a partner that
 * long. */
static gs_status cpu_once(gs_check_pairs_rank *r, gs_comm_group *g, int peer, int kind,
                          double *t) {
  t[0] = gs_time_seconds();
  GS_TRY(exchange(r, g, kind, peer));
  if (r->slow > 1.0) {
    double wait = (r->slow - 1.0) * own_work(r, kind, gs_time_seconds() - t[0]);
    if (r->slow_cap > 0.0 && wait > r->slow_cap) wait = r->slow_cap;
    gs_fault_late_wait(wait);
  }
  t[1] = gs_time_seconds();
  return GS_OK;
}

/* The untimed exchange brings both ranks together whoever woke first from
 * the step's barrier, and runs the timed one on ranks and CPUs that have
 * just done the same (a rank woken from a step's sleep was seen 10-25%
 * slower in its first exchange, which named the pairs of the later slot
 * of each round). */
static gs_status cpu_timed(gs_check_pairs_rank *r, gs_comm_group *g, int peer, int kind,
                           double t[2]) {
  GS_TRY(cpu_once(r, g, peer, kind, t));
  GS_TRY(cpu_once(r, g, peer, kind, t));
  const float got[2] = {r->recv[0], r->recv[r->count - 1]};
  return verify(r, peer, kind, got);
}

/* ---- GPU ranks ---------------------------------------------------------------- */

/* The untimed exchange and the timed one are enqueued back to back, so
 * that the timed one starts on each GPU when the untimed one (which
 * neither GPU can finish before both hosts enqueued it) ends on both: its
 * events time the devices' work, not when each host thread got there. The
 * received buffer is cleared between them, before the start event, so the
 * check sees the timed exchange's data. The faults act inside the events:
 * the late fault's spin before the exchange (its partner's GPU waits for
 * it in the exchange), the slow fault's stamp and stretch around it. */
static gs_status cuda_timed(gs_check_pairs_rank *r, gs_comm_group *g, int peer, int kind,
                            double t[2]) {
  GS_TRY(exchange(r, g, kind, peer));
  GS_CHECK_CUDA(cudaMemsetAsync(r->recv, 0, r->count * sizeof *r->recv, r->stream));
  GS_CHECK_CUDA(cudaEventRecord(r->start, r->stream));
  if (r->late > 0.0) GS_CHECK_CUDA(gs_fault_cuda_spin(r->late, r->stream));
  if (r->slow > 1.0) GS_CHECK_CUDA(gs_fault_cuda_stamp(r->stamp, r->stream));
  GS_TRY(exchange(r, g, kind, peer));
  if (r->slow > 1.0) GS_CHECK_CUDA(gs_fault_cuda_stretch(r->stamp, r->slow, r->stream));
  GS_CHECK_CUDA(cudaEventRecord(r->end, r->stream));
  GS_TRY(gs_comm_wait(r->comm, r->stream));
  float ms = 0.0f;
  GS_CHECK_CUDA(cudaEventElapsedTime(&ms, r->start, r->end));
  t[0] = 0.0;
  t[1] = (double)ms * 1e-3;
  float got[2] = {0.0f, 0.0f};
  GS_CHECK_CUDA(cudaMemcpy(&got[0], r->recv, sizeof *got, cudaMemcpyDeviceToHost));
  GS_CHECK_CUDA(
      cudaMemcpy(&got[1], r->recv + r->count - 1, sizeof *got, cudaMemcpyDeviceToHost));
  return verify(r, peer, kind, got);
}

static gs_status cuda_open(gs_check_pairs_rank *r, const float *fill) {
  const size_t bytes = r->count * sizeof *r->send;
  GS_CHECK_CUDA(cudaSetDevice(r->device));
  GS_CHECK_CUDA(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
  GS_CHECK_CUDA(cudaEventCreate(&r->start));
  r->events_made = 1;
  GS_CHECK_CUDA(cudaEventCreate(&r->end));
  r->events_made = 2;
  GS_CHECK_CUDA(cudaMalloc((void **)&r->send, bytes));
  GS_CHECK_CUDA(cudaMalloc((void **)&r->recv, bytes));
  GS_CHECK_CUDA(cudaMalloc((void **)&r->stamp, sizeof *r->stamp));
  GS_CHECK_CUDA(gs_fault_cuda_load_kernels()); /* before the first NCCL transfer */
  GS_CHECK_CUDA(cudaMemcpy(r->send, fill, bytes, cudaMemcpyHostToDevice));
  GS_CHECK_CUDA(cudaMemset(r->recv, 0, bytes));
  return GS_OK;
}

/* ---- either ------------------------------------------------------------------- */

/* See check_pairs_rank.h. */
gs_status gs_check_pairs_rank_open(gs_check_pairs_rank *r) {
  const size_t n = r->count ? r->count : 1;
  float *fill = malloc(n * sizeof *fill);
  if (!fill) return gs_error(GS_ERR_NOMEM, "cannot allocate %zu bytes", n * sizeof *fill);
  for (size_t i = 0; i < n; i++) fill[i] = (float)(gs_comm_rank(r->comm) + 1);
  if (r->cuda) {
    gs_status st = cuda_open(r, fill);
    free(fill);
    return st;
  }
  r->send = fill;
  r->recv = calloc(n, sizeof *r->recv);
  return r->recv ? GS_OK : gs_error(GS_ERR_NOMEM, "cannot allocate %zu bytes", n * sizeof *fill);
}

/* See check_pairs_rank.h. */
gs_status gs_check_pairs_rank_timed(gs_check_pairs_rank *r, gs_comm_group *g, int peer, int kind,
                                    double t[2]) {
  return r->cuda ? cuda_timed(r, g, peer, kind, t) : cpu_timed(r, g, peer, kind, t);
}

/* See check_pairs_rank.h. */
void gs_check_pairs_rank_close(gs_check_pairs_rank *r) {
  if (!r->cuda) {
    free(r->send);
    free(r->recv);
  } else {
    if (r->send) cudaFree(r->send);
    if (r->recv) cudaFree(r->recv);
    if (r->stamp) cudaFree(r->stamp);
    if (r->events_made > 0) cudaEventDestroy(r->start);
    if (r->events_made > 1) cudaEventDestroy(r->end);
    if (r->stream) cudaStreamDestroy(r->stream);
  }
  r->send = r->recv = NULL;
  r->stamp = NULL;
  r->stream = NULL;
  r->events_made = 0;
}
