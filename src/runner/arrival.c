/* Arrival times at collectives for the runner and coll (see arrival.h). */
#include "runner/arrival.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

gs_status gs_runner_arrival_begin(gs_comm *comm, size_t slots, cudaStream_t stream, gs_arrival *a,
                                  int rank, int notes_alignment) {
  gs_comm_arrival_clock clock;
  GS_TRY(gs_comm_arrival_start(comm, slots, stream, &clock));
  gs_arrival_rank *r = &a->ranks[rank];
  r->offset_seconds = clock.offset_seconds;
  if (clock.error_seconds > r->error_seconds) r->error_seconds = clock.error_seconds;
  if (notes_alignment) a->alignment = clock.alignment;
  return GS_OK;
}

gs_status gs_runner_arrival_collect(gs_comm *comm, size_t slots, gs_arrival *a, int rank,
                                    int stop) {
  gs_arrival_rank *r = &a->ranks[rank];
  gs_status st = gs_arrival_reserve(r, slots);
  if (st != GS_OK) {
    if (stop) gs_comm_arrival_stop(comm);
    return st;
  }
  size_t n = 0, checked = 0, bound = 0;
  st = gs_comm_arrival_take(comm, r->entry + r->n, r->exit + r->n, &n, &checked, &bound);
  if (st == GS_OK) {
    r->n += n;
    r->host_checked += checked;
    r->host_bound += bound;
  }
  if (stop) gs_comm_arrival_stop(comm);
  return st;
}

gs_status gs_runner_arrival_gather(gs_comm_world *world, int self, gs_arrival *const *arrivals,
                                   size_t n, size_t iters) {
  const int size = gs_comm_world_size(world);
  // Per arrival: the count, offset, error and the host-bound counts, then
  // the entries and exits.
  const size_t head = 5, per = head + 2 * iters, doubles = per * n;
  double *mine = calloc(doubles ? doubles : 1, sizeof *mine);
  double *all = calloc((doubles ? doubles : 1) * (size_t)size, sizeof *all);
  gs_status st = mine && all ? GS_OK : gs_error(GS_ERR_NOMEM, "cannot allocate the arrival gather");
  for (size_t p = 0; st == GS_OK && p < n; p++) {
    const gs_arrival_rank *r = arrivals[p] ? &arrivals[p]->ranks[self] : NULL;
    double *at = mine + p * per;
    const size_t count = r ? (r->n < iters ? r->n : iters) : 0;
    at[0] = (double)count;
    at[1] = r ? r->offset_seconds : 0.0;
    at[2] = r ? r->error_seconds : 0.0;
    at[3] = r ? (double)r->host_checked : 0.0;
    at[4] = r ? (double)r->host_bound : 0.0;
    for (size_t i = 0; i < count; i++) {
      at[head + i] = r->entry[i];
      at[head + iters + i] = r->exit[i];
    }
  }
  if (st == GS_OK) st = gs_comm_world_allgather(world, mine, doubles * sizeof *mine, all);
  for (int k = 0; st == GS_OK && k < size; k++) {
    for (size_t p = 0; st == GS_OK && p < n && k != self; p++) {
      if (!arrivals[p] || (size_t)k >= arrivals[p]->n_ranks) continue;
      gs_arrival_rank *r = &arrivals[p]->ranks[k];
      const double *at = all + (size_t)k * doubles + p * per;
      r->n = 0;
      r->offset_seconds = at[1];
      r->error_seconds = at[2];
      r->host_checked = (size_t)at[3];
      r->host_bound = (size_t)at[4];
      for (size_t i = 0; st == GS_OK && i < (size_t)at[0]; i++)
        st = gs_arrival_append(r, at[head + i], at[head + iters + i]);
    }
  }
  free(mine);
  free(all);
  return st;
}
