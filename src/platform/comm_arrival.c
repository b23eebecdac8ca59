/* Arrival times at collectives (comm.h, gs_comm_arrival_*): while a
 * recorder is started on a rank's handle, gs_comm_collective marks the
 * entry and exit of every call into the open slot, and the slots are
 * resolved onto one clock for the whole world afterwards
 * (docs/stragglers.md, "Arrival skew"):
 *  - cpu backend: the monotonic clock read before and after the call;
 *  - cuda backend: a CUDA event recorded on the call's stream before it
 *    (when the stream reached the collective: the rank's arrival on the
 *    device) and after it, placed on the host clock through an anchor
 *    event whose host time is known within half the time its record and
 *    synchronize took; a caller that records events at those stream
 *    positions anyway lends them to the slot (gs_comm_arrival_lend) and
 *    the recorder records none of its own there: a lent entry (the end of
 *    the stream's previous work) is then taken no earlier than the host
 *    clock read just before the call (its enqueue, when the stream ran
 *    idle before it);
 *  - processes on other hosts: each host clock offset against process 0's
 *    by a ping-pong over MPI (16 rounds per process, the round with the
 *    smallest round trip kept; error bound half that round trip).
 * Nothing is allocated while slots are marked. Tests slow the marking
 * down: GPUSCALE_TEST_ARRIVAL_DELAY_US=U makes every slot's entry wait U
 * us on the host, as a recorder that cost U us per collective would
 * (docs/stragglers.md: coll --arrival-cost must see it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arrival.h"
#include "core/check.h"
#include "core/fault.h"
#include "core/parse.h"
#include "core/timer.h"
#include "platform/comm_internal.h"

/* The tag of the clock ping-pong on MPI_COMM_WORLD. */
#define COMM_ARRIVAL_TAG 0xa77
#define COMM_ARRIVAL_ROUNDS 16
#define COMM_ARRIVAL_ANCHOR_TRIES 5

struct comm_arrival {
  size_t slots, used;       /* capacity; slots opened since the start or the last take */
  int entered;              /* the open slot has its entry */
  unsigned char *marked;    /* per slot: 1 when a collective marked it */
  double *entry, *exit;     /* cpu: host seconds per slot */
  cudaEvent_t *events;      /* cuda: entry, exit of each slot */
  cudaEvent_t *lent;        /* cuda: the caller's entry, exit of each slot, NULL: events' */
  double *called;           /* cuda, lent entry: host seconds just before the first call */
  size_t events_made;
  cudaEvent_t anchor[2];
  int anchor_made;
  double anchor_host;       /* host seconds of the kept anchor's record */
  gs_comm_arrival_clock clock;
  double test_delay;        /* GPUSCALE_TEST_ARRIVAL_DELAY_US, in seconds: waited per entry */
};

static int on_device(const gs_comm *c) { return c->world->config.backend == GS_BACKEND_CUDA; }

void comm_arrival_release(gs_comm *c) {
  struct comm_arrival *a = c->arrival;
  if (!a) return;
  if (a->events_made > 0 || a->anchor_made > 0) cudaSetDevice(c->device);
  for (size_t e = 0; e < a->events_made; e++) cudaEventDestroy(a->events[e]);
  for (int e = 0; e < a->anchor_made; e++) cudaEventDestroy(a->anchor[e]);
  free(a->events);
  free(a->lent);
  free(a->called);
  free(a->marked);
  free(a->entry);
  free(a->exit);
  free(a);
  c->arrival = NULL;
}

/* The device's clock on the host's: an event recorded on the idle `stream`
 * is stamped between the host times around its record and synchronize;
 * the try with the shortest such window is kept (its middle, half its
 * width the error). */
static gs_status anchor_device(struct comm_arrival *a, cudaStream_t stream) {
  for (; a->anchor_made < 2; a->anchor_made++)
    GS_CHECK_CUDA(cudaEventCreate(&a->anchor[a->anchor_made]));
  double best = INFINITY;
  int kept = 0;
  for (int t = 0; t < COMM_ARRIVAL_ANCHOR_TRIES; t++) {
    const int slot = t == 0 ? 0 : 1 - kept;
    const double t0 = gs_time_seconds();
    GS_CHECK_CUDA(cudaEventRecord(a->anchor[slot], stream));
    GS_CHECK_CUDA(cudaEventSynchronize(a->anchor[slot]));
    const double t1 = gs_time_seconds();
    if (t1 - t0 < best) {
      best = t1 - t0;
      kept = slot;
      a->anchor_host = 0.5 * (t0 + t1);
    }
  }
  // The kept anchor goes to slot 0, where take reads it.
  if (kept != 0) {
    cudaEvent_t e = a->anchor[0];
    a->anchor[0] = a->anchor[1];
    a->anchor[1] = e;
  }
  a->clock.error_seconds += 0.5 * best;
  return GS_OK;
}

/* The entry and exit events of every slot, on the rank's device. */
static gs_status make_events(gs_comm *c, struct comm_arrival *a) {
  GS_CHECK_CUDA(cudaSetDevice(c->device));
  for (; a->events_made < 2 * a->slots; a->events_made++)
    GS_CHECK_CUDA(cudaEventCreate(&a->events[a->events_made]));
  return GS_OK;
}

#ifdef GS_HAVE_MPI
/* The ping-pong's messages live in `wire`, a heap block freed when the
 * exchange completes and kept when it was given up (a cancelled receive
 * that had begun may still be written; comm_mpi_cancel). */

/* Process 0's side of the ping-pong with `peer`: its offset and error. */
static gs_status ping(gs_comm *c, int peer, double result[2]) {
  double *wire = calloc(4, sizeof *wire); /* sent, reply, the result sent */
  if (!wire) return gs_error(GS_ERR_NOMEM, "cannot allocate the clock ping-pong");
  double best = INFINITY;
  for (int r = 0; r < COMM_ARRIVAL_ROUNDS; r++) {
    wire[0] = gs_time_seconds();
    MPI_Request rq[2];
    GS_CHECK_MPI(MPI_Irecv(&wire[1], 1, MPI_DOUBLE, peer, COMM_ARRIVAL_TAG, MPI_COMM_WORLD, &rq[0]));
    GS_CHECK_MPI(MPI_Isend(&wire[0], 1, MPI_DOUBLE, peer, COMM_ARRIVAL_TAG, MPI_COMM_WORLD, &rq[1]));
    GS_TRY(comm_mpi_complete_p2p(c, rq, 2));
    const double sent = wire[0], back = gs_time_seconds();
    // The peer read its clock between `sent` and `back` on this one.
    if (back - sent < best) {
      best = back - sent;
      result[0] = wire[1] - 0.5 * (sent + back);
      result[1] = 0.5 * best;
    }
  }
  wire[2] = result[0];
  wire[3] = result[1];
  MPI_Request rq;
  GS_CHECK_MPI(MPI_Isend(&wire[2], 2, MPI_DOUBLE, peer, COMM_ARRIVAL_TAG, MPI_COMM_WORLD, &rq));
  GS_TRY(comm_mpi_complete_p2p(c, &rq, 1));
  free(wire);
  return GS_OK;
}

/* A peer's side: answers every round with its clock, then receives its
 * offset (its clock less process 0's) and error. */
static gs_status pong(gs_comm *c, double result[2]) {
  double *wire = calloc(4, sizeof *wire); /* the ping, the reply, the result */
  if (!wire) return gs_error(GS_ERR_NOMEM, "cannot allocate the clock ping-pong");
  for (int r = 0; r < COMM_ARRIVAL_ROUNDS; r++) {
    MPI_Request rq;
    GS_CHECK_MPI(MPI_Irecv(&wire[0], 1, MPI_DOUBLE, 0, COMM_ARRIVAL_TAG, MPI_COMM_WORLD, &rq));
    GS_TRY(comm_mpi_complete_p2p(c, &rq, 1));
    wire[1] = gs_time_seconds();
    GS_CHECK_MPI(MPI_Isend(&wire[1], 1, MPI_DOUBLE, 0, COMM_ARRIVAL_TAG, MPI_COMM_WORLD, &rq));
    GS_TRY(comm_mpi_complete_p2p(c, &rq, 1));
  }
  MPI_Request rq;
  GS_CHECK_MPI(MPI_Irecv(&wire[2], 2, MPI_DOUBLE, 0, COMM_ARRIVAL_TAG, MPI_COMM_WORLD, &rq));
  GS_TRY(comm_mpi_complete_p2p(c, &rq, 1));
  result[0] = wire[2];
  result[1] = wire[3];
  free(wire);
  return GS_OK;
}
#endif

/* The host clock against process 0's: shared within one host (threads
 * mode, or processes of one host), else measured by the ping-pong. */
static gs_status align_host(gs_comm *c, struct comm_arrival *a) {
  a->clock.alignment = "shared";
  a->clock.offset_seconds = 0.0;
  a->clock.error_seconds = 0.0;
  if (c->world->job.launch != GS_COMM_LAUNCH_MPI || !gs_comm_spans_hosts(c->world)) return GS_OK;
#ifdef GS_HAVE_MPI
  a->clock.alignment = "ping-pong";
  snprintf(c->op_name, sizeof c->op_name, "clock alignment");
  double result[2] = {0.0, 0.0};
  if (c->rank == 0) {
    for (int peer = 1; peer < c->world->size; peer++) GS_TRY(ping(c, peer, result));
    return GS_OK;
  }
  GS_TRY(pong(c, result));
  // result[0] is this clock less process 0's: subtract it to reach 0's.
  a->clock.offset_seconds = -result[0];
  a->clock.error_seconds = result[1];
  return GS_OK;
#else
  return gs_error(GS_ERR_UNSUPPORTED, "clock alignment across hosts needs MPI");
#endif
}

gs_status gs_comm_arrival_start(gs_comm *c, size_t slots, cudaStream_t stream,
                                gs_comm_arrival_clock *clock) {
  if (c->arrival) GS_BUG("rank %d: an arrival recorder is already started", c->rank);
  if (slots == 0) GS_BUG("rank %d: an arrival recorder of no slots", c->rank);
  struct comm_arrival *a = calloc(1, sizeof *a);
  if (!a) return gs_error(GS_ERR_NOMEM, "cannot allocate the arrival recorder");
  c->arrival = a;
  a->slots = slots;
  a->marked = calloc(slots, 1);
  if (on_device(c)) {
    a->events = calloc(2 * slots, sizeof *a->events);
    a->lent = calloc(2 * slots, sizeof *a->lent);
    a->called = malloc(slots * sizeof *a->called);
  } else {
    a->entry = malloc(slots * sizeof *a->entry);
    a->exit = malloc(slots * sizeof *a->exit);
  }
  const int made = on_device(c) ? a->events && a->lent && a->called : a->entry && a->exit;
  if (!a->marked || !made) {
    comm_arrival_release(c);
    return gs_error(GS_ERR_NOMEM, "cannot allocate %zu arrival slots", slots);
  }
  gs_status st = on_device(c) ? make_events(c, a) : GS_OK;
  if (st == GS_OK) st = align_host(c, a);
  a->clock.clock = on_device(c) ? "device" : "host";
  if (st == GS_OK && on_device(c)) st = anchor_device(a, stream);
  const char *delay = getenv("GPUSCALE_TEST_ARRIVAL_DELAY_US");
  if (st == GS_OK && delay)
    st = gs_parse_double(delay, "GPUSCALE_TEST_ARRIVAL_DELAY_US", 0.0, 1e6, &a->test_delay);
  if (st != GS_OK) {
    comm_arrival_release(c);
    return st;
  }
  a->test_delay *= 1e-6;
  a->used = 0;
  if (clock) *clock = a->clock;
  return GS_OK;
}

void gs_comm_arrival_slot(gs_comm *c) {
  struct comm_arrival *a = c->arrival;
  if (!a) return;
  if (a->used == a->slots)
    GS_BUG("rank %d: arrival slot %zu of a recorder of %zu", c->rank, a->used + 1, a->slots);
  a->marked[a->used] = 0;
  if (a->lent) a->lent[2 * a->used] = a->lent[2 * a->used + 1] = NULL;
  a->used++;
  a->entered = 0;
}

void gs_comm_arrival_lend(gs_comm *c, cudaEvent_t entry, cudaEvent_t exit) {
  struct comm_arrival *a = c->arrival;
  if (!a) return;
  if (!on_device(c)) GS_BUG("rank %d: CUDA events lent to a cpu arrival recorder", c->rank);
  if (a->used == 0 || a->entered)
    GS_BUG("rank %d: events lent to %s", c->rank,
           a->used == 0 ? "no open arrival slot" : "an arrival slot already entered");
  a->lent[2 * (a->used - 1)] = entry;
  a->lent[2 * (a->used - 1) + 1] = exit;
}

gs_status comm_arrival_enter(gs_comm *c, cudaStream_t stream) {
  struct comm_arrival *a = c->arrival;
  if (a->used == 0 || a->entered) return GS_OK;
  const size_t s = a->used - 1;
  a->entered = 1;
  a->marked[s] = 1;
  if (a->test_delay > 0.0) gs_fault_late_wait(a->test_delay);
  if (!on_device(c)) {
    a->entry[s] = gs_time_seconds();
    return GS_OK;
  }
  // The host's time of the call: a lent entry (recorded by the caller at
  // this stream position) is bounded by it from below, and every entry is
  // held against it to tell a stream that waited for its host (take).
  a->called[s] = gs_time_seconds();
  if (a->lent[2 * s]) return GS_OK;
  GS_CHECK_CUDA(cudaEventRecord(a->events[2 * s], stream));
  return GS_OK;
}

gs_status comm_arrival_leave(gs_comm *c, cudaStream_t stream) {
  struct comm_arrival *a = c->arrival;
  if (a->used == 0 || !a->entered) return GS_OK;
  const size_t s = a->used - 1;
  if (!on_device(c)) {
    a->exit[s] = gs_time_seconds();
    return GS_OK;
  }
  // A later collective of the slot records it again: the last one's exit;
  // a lent exit the caller records after the slot's last collective.
  if (!a->lent[2 * s + 1]) GS_CHECK_CUDA(cudaEventRecord(a->events[2 * s + 1], stream));
  return GS_OK;
}

gs_status gs_comm_arrival_take(gs_comm *c, double *entry, double *exit, size_t *n,
                               size_t *host_checked, size_t *host_bound) {
  struct comm_arrival *a = c->arrival;
  size_t checked = 0, bound = 0;
  *n = 0;
  if (host_checked) *host_checked = 0;
  if (host_bound) *host_bound = 0;
  if (!a) GS_BUG("rank %d: arrival times taken without a recorder", c->rank);
  for (size_t s = 0; s < a->used; s++) {
    entry[s] = exit[s] = NAN;
    if (!a->marked[s]) continue;
    if (!on_device(c)) {
      entry[s] = a->entry[s] + a->clock.offset_seconds;
      exit[s] = a->exit[s] + a->clock.offset_seconds;
      continue;
    }
    float in = 0.0f, out = 0.0f;
    cudaEvent_t in_event = a->lent[2 * s] ? a->lent[2 * s] : a->events[2 * s];
    cudaEvent_t out_event = a->lent[2 * s + 1] ? a->lent[2 * s + 1] : a->events[2 * s + 1];
    GS_CHECK_CUDA(cudaEventElapsedTime(&in, a->anchor[0], in_event));
    GS_CHECK_CUDA(cudaEventElapsedTime(&out, a->anchor[0], out_event));
    entry[s] = a->anchor_host + (double)in * 1e-3;
    exit[s] = a->anchor_host + (double)out * 1e-3;
    // Both on this host's clock: a stream that had run dry reached the
    // call when its host enqueued it (a lent entry may even precede it).
    checked++;
    bound += entry[s] - a->called[s] <= GS_ARRIVAL_HOST_BOUND_SECONDS;
    // A lent entry marks the end of the stream's previous work; the stream
    // reached the call no earlier than the host enqueued it, and no later
    // than its exit (a host time past it is the anchor's error).
    if (a->lent[2 * s] && a->called[s] > entry[s]) entry[s] = fmin(a->called[s], exit[s]);
    entry[s] += a->clock.offset_seconds;
    exit[s] += a->clock.offset_seconds;
  }
  *n = a->used;
  if (host_checked) *host_checked = checked;
  if (host_bound) *host_bound = bound;
  a->used = 0;
  a->entered = 0;
  return GS_OK;
}

void gs_comm_arrival_stop(gs_comm *c) { comm_arrival_release(c); }
