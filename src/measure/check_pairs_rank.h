/* One rank's side of `gpuscale check pairs`' exchanges (measure/
 * check_pairs.c; docs/check.md, "Localization by pairs"): its buffers and
 * one timed exchange with a partner, a 2-member all-reduce through the
 * pair's group or a copy each way through the comm layer's point to
 * point, on either backend. CPU ranks: host buffers, times read on the
 * host's monotonic clock. GPU ranks: device buffers of the rank's GPU,
 * NCCL through platform/comm, the exchange timed by CUDA events on the
 * rank's stream. Used from the rank's own thread only. */
#ifndef GS_MEASURE_CHECK_PAIRS_RANK_H
#define GS_MEASURE_CHECK_PAIRS_RANK_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "core/status.h"
#include "platform/comm.h"

/* How many of a slowed CPU rank's last exchanges of a kind estimate its
 * own work. */
#define GS_PAIRS_RECENT 9

typedef struct {
  /* Set by the caller before gs_check_pairs_rank_open. */
  gs_comm *comm;
  int cuda;     /* 1: the rank's GPU (device buffers, CUDA events); 0: host buffers */
  int device;   /* CUDA ordinal (cuda) */
  size_t count; /* floats of each exchange */
  double slow;  /* the slow fault's factor (1: none) */
  double slow_cap; /* CPU: the slow fault's longest wait after one exchange (0: none) */
  double late;  /* the late fault's seconds (0: none; cuda) */
  /* Made by gs_check_pairs_rank_open. */
  float *send, *recv; /* count floats each: host memory (cpu) or the GPU's (cuda) */
  cudaStream_t stream;
  cudaEvent_t start, end;
  unsigned long long *stamp; /* the slow fault's start stamp, device memory */
  int events_made;
  /* CPU ranks, the slow fault: the times of the rank's last exchanges of
   * each kind, a ring of GS_PAIRS_RECENT (its own work is their median). */
  double recent[2][GS_PAIRS_RECENT];
  size_t n_recent[2];
} gs_check_pairs_rank;

/* Makes the rank's buffers (send filled with rank + 1) and, on CUDA, sets
 * the thread's device and makes its stream, events and fault stamp. Call
 * before the rank's first group is made (NCCL's split runs on the
 * thread's device). On failure what was made stays for
 * gs_check_pairs_rank_close. */
gs_status gs_check_pairs_rank_open(gs_check_pairs_rank *r);

/* One timed exchange of `kind` (0: all-reduce over the pair's group `g`,
 * 1: a copy each way with global rank `peer`), after an untimed one of the
 * same kind that brings the pair together; the data are checked after
 * it (all-reduce: both ranks' values summed; copy: the peer's). The
 * rank's faults stretch the timed exchange: slow, on CPU ranks F - 1
 * times its own work after it (the median of its last exchanges of the
 * kind, at most this one's: not a wait for a partner that was
 * descheduled), on a GPU's stream F times its time; late (cuda), a spin
 * of the lateness on the stream before it. CPU: t[0]
 * and t[1] are its start and end on the host's monotonic clock; CUDA:
 * t[0] = 0 and t[1] the time between its events on the rank's stream.
 * A failure (timeout, wrong data) is recorded and returned. */
gs_status gs_check_pairs_rank_timed(gs_check_pairs_rank *r, gs_comm_group *g, int peer, int kind,
                                    double t[2]);

/* Frees what open made; safe after a failed open. */
void gs_check_pairs_rank_close(gs_check_pairs_rank *r);

#endif
