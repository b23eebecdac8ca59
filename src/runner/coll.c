/* The collective driver: rank threads that sweep one operation over sizes,
 * pipelined CUDA-event timing per iteration, checks after timing, and the
 * gathering of every rank's record to every process under MPI. */
#include "runner/coll.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runner/arrival.h"
#include "core/arrival_cost.h"
#include "runner/coll_data.h"
#include "runner/runner.h"
#include "core/check.h"
#include "core/fault.h"
#include "platform/fault_cuda.h"
#include "core/timer.h"

typedef struct {
  const gs_coll_sweep *sweep;
  gs_coll_point *points;
  size_t n_points;
} coll_shared;

typedef struct {
  coll_shared *shared;
  int local; /* local index */
  int rank;  /* global rank */
  gs_comm *comm;
  int cuda;
  int device;
  cudaStream_t stream;
  cudaEvent_t *events; /* iters + 1 */
  size_t events_made;
  void *send, *recv; /* device or host buffers */
  void *host;        /* staging for fills and checks */
  size_t send_bytes, recv_bytes, host_bytes;
  uint64_t step; /* progress counter across points */
  gs_status status;
  char error[GS_TEXT_ERROR];
} coll_rank;

/* ---- buffers ---------------------------------------------------------------- */

static gs_status rank_allocate(coll_rank *r) {
  const gs_coll_sweep *s = r->shared->sweep;
  size_t es = gs_dtype_size(s->dtype);
  int n = gs_comm_size(r->comm);
  for (size_t i = 0; i < s->n_sizes; i++) {
    gs_coll_shape shape;
    gs_coll_shape_for(s->op, s->sizes[i], es, n, &shape);
    size_t send = shape.send_elements * es, recv = shape.recv_elements * es;
    size_t larger = send > recv ? send : recv;
    if (send > r->send_bytes) r->send_bytes = send;
    if (larger > r->recv_bytes) r->recv_bytes = larger; /* in place holds either side */
  }
  r->host_bytes = r->recv_bytes > r->send_bytes ? r->recv_bytes : r->send_bytes;
  if (r->host_bytes == 0) return GS_OK;
  r->host = malloc(r->host_bytes);
  if (!r->host)
    return gs_error(GS_ERR_NOMEM, "rank %d: cannot allocate %zu host bytes", r->rank,
                    r->host_bytes);
  if (!r->cuda) {
    r->send = calloc(r->send_bytes ? r->send_bytes : 1, 1);
    r->recv = calloc(r->recv_bytes ? r->recv_bytes : 1, 1);
    if (!r->send || !r->recv)
      return gs_error(GS_ERR_NOMEM, "rank %d: cannot allocate the buffers", r->rank);
    return GS_OK;
  }
  GS_CHECK_CUDA(cudaMalloc(&r->send, r->send_bytes ? r->send_bytes : 1));
  GS_CHECK_CUDA(cudaMalloc(&r->recv, r->recv_bytes ? r->recv_bytes : 1));
  GS_CHECK_CUDA(cudaMemset(r->send, 0, r->send_bytes));
  GS_CHECK_CUDA(cudaMemset(r->recv, 0, r->recv_bytes));
  GS_CHECK_CUDA(gs_fault_cuda_load_kernels()); /* before the first NCCL transfer */
  return GS_OK;
}

static gs_status rank_setup(coll_rank *r) {
  const gs_coll_sweep *s = r->shared->sweep;
  r->comm = gs_comm_world_rank(s->world, r->local);
  r->rank = gs_comm_rank(r->comm);
  r->cuda = s->backend == GS_BACKEND_CUDA;
  r->device = r->cuda ? s->devices[r->local] : -1;
  r->step = s->progress ? *s->progress : 0;
  gs_set_thread_rank(r->rank);
  if (r->cuda) {
    GS_CHECK_CUDA(cudaSetDevice(r->device));
    GS_CHECK_CUDA(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
    r->events = calloc(s->iters + 1, sizeof *r->events);
    if (!r->events) return gs_error(GS_ERR_NOMEM, "rank %d: cannot allocate events", r->rank);
    for (; r->events_made < s->iters + 1; r->events_made++)
      GS_CHECK_CUDA(cudaEventCreate(&r->events[r->events_made]));
  }
  GS_TRY(gs_trace_attach(s->trace, s->trace_measurement, r->rank, r->device, r->stream));
  return rank_allocate(r);
}

static void rank_teardown(coll_rank *r) {
  gs_trace_detach();
  if (r->comm) gs_comm_arrival_stop(r->comm); /* a batch that failed left it started */
  if (r->cuda) {
    for (size_t e = 0; e < r->events_made; e++) cudaEventDestroy(r->events[e]);
    if (r->send) cudaFree(r->send);
    if (r->recv) cudaFree(r->recv);
    if (r->stream) cudaStreamDestroy(r->stream);
  } else {
    free(r->send);
    free(r->recv);
  }
  free(r->events);
  free(r->host);
}

/* ---- one operation ---------------------------------------------------------- */

typedef struct {
  const void *send;
  void *recv;
  size_t send_elements; /* input elements at `send` */
} coll_buffers;

/* The buffers of one point: the in-place form shares one buffer as the
 * op's descriptor lays it out. */
static coll_buffers buffers_for(const coll_rank *r, const gs_coll_point *p) {
  const gs_coll_sweep *s = r->shared->sweep;
  size_t block = p->shape.param_count * gs_dtype_size(s->dtype);
  coll_buffers b = {r->send, r->recv, p->shape.send_elements};
  if (!p->in_place) return b;
  gs_coll_in_place layout = gs_coll_desc_of(s->op)->in_place;
  b.send = r->recv;
  if (layout == GS_COLL_IN_PLACE_SEND_AT_RANK) b.send = (char *)r->recv + (size_t)r->rank * block;
  if (layout == GS_COLL_IN_PLACE_RECV_AT_RANK) b.recv = (char *)r->recv + (size_t)r->rank * block;
  return b;
}

/* Enqueues (or, on the cpu backend, runs) the point's operation once.
 * sendrecv's peers form a ring: send to rank + 1, receive from rank - 1. */
static gs_status issue(coll_rank *r, const gs_coll_point *p, const coll_buffers *b) {
  const gs_coll_sweep *s = r->shared->sweep;
  int n = gs_comm_size(r->comm);
  gs_comm_call call = {.op = s->op,
                       .send = b->send,
                       .recv = b->recv,
                       .count = p->shape.param_count,
                       .dtype = s->dtype,
                       .redop = s->redop,
                       .root = s->root,
                       .send_peer = (r->rank + 1) % n,
                       .recv_peer = (r->rank + n - 1) % n};
  return gs_comm_collective(r->comm, &call, r->stream);
}

/* Writes this rank's input pattern into the send side. */
static gs_status fill_input(coll_rank *r, const coll_buffers *b) {
  const gs_coll_sweep *s = r->shared->sweep;
  size_t bytes = b->send_elements * gs_dtype_size(s->dtype);
  if (bytes == 0) return GS_OK;
  gs_coll_fill(r->host, b->send_elements, s->dtype, s->redop, r->rank, 0);
  if (r->cuda) {
    GS_CHECK_CUDA(cudaMemcpy((void *)b->send, r->host, bytes, cudaMemcpyHostToDevice));
  } else {
    memcpy((void *)b->send, r->host, bytes);
  }
  return GS_OK;
}

/* Runs the operation once more on fresh input and counts wrong elements. */
static gs_status check_point(coll_rank *r, gs_coll_point *p, const coll_buffers *b,
                             gs_verification *v) {
  const gs_coll_sweep *s = r->shared->sweep;
  size_t es = gs_dtype_size(s->dtype);
  size_t recv_bytes = p->shape.recv_elements * es;
  // A sentinel in the output shows elements the operation never wrote.
  if (!p->in_place) {
    if (r->cuda)
      GS_CHECK_CUDA(cudaMemset(b->recv, 0xff, recv_bytes));
    else
      memset(b->recv, 0xff, recv_bytes);
  }
  GS_TRY(fill_input(r, b));
  gs_comm_progress(r->comm, r->step++);
  GS_TRY(gs_comm_barrier(r->comm));
  gs_comm_progress(r->comm, r->step++);
  GS_TRY(issue(r, p, b));
  GS_TRY(gs_comm_wait(r->comm, r->stream));
  if (r->cuda)
    GS_CHECK_CUDA(cudaMemcpy(r->host, b->recv, recv_bytes, cudaMemcpyDeviceToHost));
  else
    memcpy(r->host, b->recv, recv_bytes);
  gs_coll_case c = {.op = s->op,
                    .dtype = s->dtype,
                    .redop = s->redop,
                    .root = s->root,
                    .rank = r->rank,
                    .ranks = gs_comm_size(r->comm),
                    .shape = &p->shape};
  uint64_t wrong = gs_coll_count_wrong(&c, r->host);
  v->mismatches = wrong;
  v->status = wrong == 0 ? GS_VERIFY_PASSED : GS_VERIFY_FAILED;
  snprintf(v->detail, sizeof v->detail, "%s of %zu %s elements: %llu wrong",
           gs_coll_op_names[s->op], p->shape.recv_elements, gs_dtype_names[s->dtype],
           (unsigned long long)wrong);
  return GS_OK;
}

/* Whether this rank is the late fault's (it arrives late at every call). */
static int is_late(const coll_rank *r) {
  const gs_coll_sweep *s = r->shared->sweep;
  return r->rank == s->late_rank && s->late_us > 0.0;
}

/* The late fault (--inject late): the late rank's next collective starts
 * late_us after its previous one, on the stream (a spin kernel) or on
 * the host (a precise wait); its peers wait for it inside the collective. */
static gs_status arrive_late(coll_rank *r) {
  const gs_coll_sweep *s = r->shared->sweep;
  if (!is_late(r)) return GS_OK;
  if (r->cuda)
    GS_CHECK_CUDA(gs_fault_cuda_spin(s->late_us * 1e-6, r->stream));
  else
    gs_fault_late_wait(s->late_us * 1e-6);
  return GS_OK;
}

/* Iterations [begin, end) of the timed batch, back to back after event
 * `begin` (cuda) or the clock read here (cpu), into rec's samples; waits
 * until their work is done. Event `begin` may be the previous block's
 * last exit: recorded again only after that block's times were read and
 * its recorder taken (gs_comm_arrival_lend's contract). */
static gs_status timed_block(coll_rank *r, const gs_coll_point *p, const coll_buffers *b,
                             gs_rank_record *rec, uint64_t begin, uint64_t end, uint64_t traced) {
  const gs_coll_sweep *s = r->shared->sweep;
  double t0 = gs_time_seconds(), previous = t0;
  if (r->cuda) GS_CHECK_CUDA(cudaEventRecord(r->events[begin], r->stream));
  for (uint64_t i = begin; i < end; i++) {
    gs_comm_progress(r->comm, r->step++);
    GS_TRY(arrive_late(r));
    if (i < traced) gs_trace_begin(GS_TRACE_COMM, gs_coll_op_names[s->op], (int64_t)i, r->stream);
    gs_comm_arrival_slot(r->comm); /* iteration i's entry and exit (nothing without a recorder) */
    // The timing events are the arrival's too: event i sits just before
    // the collective unless the late fault's spin lies between, event i + 1
    // just after it; the recorder then records no event of its own.
    if (r->cuda) gs_comm_arrival_lend(r->comm, is_late(r) ? NULL : r->events[i], r->events[i + 1]);
    GS_TRY(issue(r, p, b));
    if (i < traced) gs_trace_end();
    if (r->cuda) {
      GS_CHECK_CUDA(cudaEventRecord(r->events[i + 1], r->stream));
    } else {
      double now = gs_time_seconds();
      rec->wall_seconds[i] = now - previous;
      previous = now;
    }
  }
  GS_TRY(gs_comm_wait(r->comm, r->stream));
  if (!r->cuda) return GS_OK;
  // Iterations overlap on the host, so their wall time is only known as
  // a batch: each sample gets its even share (docs/collectives.md).
  const double share = (gs_time_seconds() - t0) / (double)(end - begin);
  for (uint64_t i = begin; i < end; i++) {
    float ms = 0.0f;
    GS_CHECK_CUDA(cudaEventElapsedTime(&ms, r->events[i], r->events[i + 1]));
    rec->device_seconds[i] = (double)ms * 1e-3;
    rec->wall_seconds[i] = share;
  }
  return GS_OK;
}

/* Warmup, the timed batch and the check of one point, into `rec`. The
 * batch is one block, or with --arrival-cost (s->cost_block) blocks of
 * that many iterations, each begun together after a barrier, recording
 * arrival times in the blocks gs_arrival_cost_records names
 * (docs/stragglers.md, "Arrival skew"). */
static gs_status measure_point(coll_rank *r, gs_coll_point *p, gs_rank_record *rec, int first) {
  const gs_coll_sweep *s = r->shared->sweep;
  coll_buffers b = buffers_for(r, p);
  // Timing does not depend on the values: without checks the buffers keep
  // what they hold (zeros from allocation) and no host time goes to fills.
  if (s->check) GS_TRY(fill_input(r, &b));
  // Every synchronization advances the progress count: a rank that stops
  // anywhere falls behind the others, which a timeout reports.
  gs_comm_progress(r->comm, r->step++);
  GS_TRY(gs_comm_barrier(r->comm));
  for (uint64_t i = 0; i < s->warmup; i++) {
    gs_comm_progress(r->comm, r->step++);
    GS_TRY(arrive_late(r));
    GS_TRY(issue(r, p, &b));
  }
  GS_TRY(gs_comm_wait(r->comm, r->stream));
  gs_comm_progress(r->comm, r->step++);
  GS_TRY(gs_comm_barrier(r->comm));

  rec->wall_seconds = calloc(s->iters, sizeof *rec->wall_seconds);
  if (!rec->wall_seconds)
    return gs_error(GS_ERR_NOMEM, "rank %d: cannot allocate samples", r->rank);
  if (r->cuda) {
    rec->device_seconds = calloc(s->iters, sizeof *rec->device_seconds);
    if (!rec->device_seconds)
      return gs_error(GS_ERR_NOMEM, "rank %d: cannot allocate samples", r->rank);
  }
  // The timed batch is one step of the trace; its first operations are
  // its spans (an event between them is what the timing records anyway).
  const uint64_t traced = s->trace ? gs_trace_steps(s->trace) : 0;
  const uint64_t block = s->cost_block ? s->cost_block : s->iters;
  gs_arrival *arrival = p->m.arrival;
  for (uint64_t k = 0, begin = 0; begin < s->iters; k++, begin += block) {
    const int records = arrival && (!s->cost_block || gs_arrival_cost_records(k));
    // Each rank's recorder, its clock aligned with the others' (collective).
    if (records)
      GS_TRY(gs_runner_arrival_begin(r->comm, block, r->stream, arrival, r->rank, r->local == 0));
    if (s->cost_block) {
      gs_comm_progress(r->comm, r->step++);
      GS_TRY(gs_comm_barrier(r->comm));
    }
    if (first && k == 0 && r->rank == s->delay_rank) gs_sleep_seconds(s->delay_seconds);
    if (k == 0) gs_trace_step_open(0, 0);
    GS_TRY(timed_block(r, p, &b, rec, begin, begin + block, traced));
    if (begin + block == s->iters) gs_trace_step_close();
    if (records) GS_TRY(gs_runner_arrival_collect(r->comm, block, arrival, r->rank, 1));
  }
  rec->n_samples = (size_t)s->iters;
  if (s->check) GS_TRY(check_point(r, p, &b, &rec->verification));
  return GS_OK;
}

static void *rank_main(void *arg) {
  coll_rank *r = arg;
  coll_shared *sh = r->shared;
  gs_clear_error();
  gs_status status = rank_setup(r);
  size_t p = 0;
  int first = 1;
  while (status == GS_OK && p < sh->n_points) {
    gs_coll_point *point = &sh->points[p];
    if (point->shape.bytes > 0) {
      char name[GS_TRACE_NAME];
      snprintf(name, sizeof name, "%s %llu B%s", gs_coll_op_names[sh->sweep->op],
               (unsigned long long)point->shape.bytes, point->in_place ? " in place" : "");
      const int depth = gs_trace_depth();
      gs_trace_begin_text(GS_TRACE_RUN, NULL, name);
      status = measure_point(r, point, &point->m.runs[0].ranks[r->rank], first);
      if (status == GS_OK)
        gs_trace_end();
      else
        gs_trace_abandon(depth);
      first = 0;
    }
    if (status == GS_OK) p++;
  }
  if (status != GS_OK) {
    snprintf(r->error, sizeof r->error, "%s", gs_last_error());
    gs_comm_abort(r->comm);
    for (size_t q = p; q < sh->n_points; q++) {
      gs_rank_record *rec = &sh->points[q].m.runs[0].ranks[r->rank];
      rec->status = status;
      snprintf(rec->error, sizeof rec->error, "%s", r->error);
    }
  }
  r->status = status;
  rank_teardown(r);
  gs_set_thread_rank(-1);
  return NULL;
}

/* ---- points and their measurements --------------------------------------------- */

static gs_status make_points(const gs_coll_sweep *s, int world_size, gs_coll_point **out,
                             size_t *n_out) {
  size_t forms =
      (size_t)(s->out_of_place != 0) + (size_t)(s->in_place && gs_coll_has_in_place(s->op));
  size_t n = s->n_sizes * forms;
  gs_coll_point *points = calloc(n ? n : 1, sizeof *points);
  if (!points) return gs_error(GS_ERR_NOMEM, "cannot allocate %zu collective points", n);
  *out = points;
  *n_out = n;
  size_t at = 0;
  for (size_t i = 0; i < s->n_sizes; i++) {
    for (int in_place = 0; in_place < 2; in_place++) {
      if (in_place ? !(s->in_place && gs_coll_has_in_place(s->op)) : !s->out_of_place) continue;
      gs_coll_point *p = &points[at++];
      gs_coll_shape_for(s->op, s->sizes[i], gs_dtype_size(s->dtype), world_size, &p->shape);
      p->in_place = in_place;
      p->factor = gs_coll_busbw_factor(s->op, world_size);
      gs_measurement *m = &p->m;
      snprintf(m->workload, sizeof m->workload, "coll");
      snprintf(m->backend, sizeof m->backend, "%s", s->backend == GS_BACKEND_CUDA ? "cuda" : "cpu");
      snprintf(m->scaling, sizeof m->scaling, "none");
      m->world_size = world_size;
      m->cost.items = 1;
      m->cost.item_unit = "operations";
      m->cost.bytes = p->shape.bytes;
      if (s->late_rank >= 0 && s->late_rank < world_size) {
        // The document says what was injected, as the runner's do.
        m->faults.items[0] = (gs_fault){.kind = GS_FAULT_LATE, .rank = s->late_rank,
                                        .params = {s->late_us}};
        m->faults.n = 1;
      }
      if (s->arrival && world_size >= 2) {
        m->arrival = gs_arrival_new((size_t)world_size, s->iters,
                                    s->backend == GS_BACKEND_CUDA ? "device" : "host", "shared");
        if (!m->arrival) return GS_ERR_NOMEM;
      }
      m->runs = calloc(1, sizeof *m->runs);
      if (!m->runs) return gs_error(GS_ERR_NOMEM, "cannot allocate a run record");
      m->n_runs = 1;
      m->runs[0].ranks = calloc((size_t)world_size, sizeof *m->runs[0].ranks);
      if (!m->runs[0].ranks) return gs_error(GS_ERR_NOMEM, "cannot allocate rank records");
      m->runs[0].n_ranks = (size_t)world_size;
      for (int k = 0; k < world_size; k++) {
        gs_rank_record *rec = &m->runs[0].ranks[k];
        rec->rank = k;
        rec->device = -1;
        rec->first_iteration_seconds = -1.0;
        rec->items_per_step = 1;
        snprintf(rec->host, sizeof rec->host, "%s", gs_hostname());
      }
    }
  }
  return GS_OK;
}

void gs_coll_points_free(gs_coll_point *points, size_t n) {
  for (size_t i = 0; points && i < n; i++) gs_measurement_free(&points[i].m);
  free(points);
}

/* What one process sends to process 0 about its rank (mpi mode). */
typedef struct {
  char host[GS_TEXT_LONG];
  int device;
  int status;
  char error[GS_TEXT_ERROR];
} rank_identity;

/* Packs the local rank's samples of every point: per point status, wrong
 * count, verification status, then device and wall samples (iters each). */
static gs_status gather_records(const gs_coll_sweep *s, gs_coll_point *points, size_t n_points,
                                const coll_rank *self) {
  int size = gs_comm_world_size(s->world);
  size_t per_point = 3 + 2 * (size_t)s->iters;
  size_t doubles = per_point * n_points;
  double *mine = calloc(doubles ? doubles : 1, sizeof *mine);
  double *all = calloc((doubles ? doubles : 1) * (size_t)size, sizeof *all);
  rank_identity *ids = calloc((size_t)size, sizeof *ids);
  rank_identity id;
  memset(&id, 0, sizeof id);
  gs_status status = GS_OK;
  if (!mine || !all || !ids) {
    status = gs_error(GS_ERR_NOMEM, "cannot allocate the gather buffers");
    goto done;
  }
  snprintf(id.host, sizeof id.host, "%s", gs_hostname());
  id.device = self->device;
  id.status = (int)self->status;
  snprintf(id.error, sizeof id.error, "%s", self->error);
  for (size_t p = 0; p < n_points; p++) {
    const gs_rank_record *rec = &points[p].m.runs[0].ranks[self->rank];
    double *at = mine + p * per_point;
    at[0] = (double)rec->status;
    at[1] = (double)rec->verification.mismatches;
    at[2] = (double)rec->verification.status;
    for (size_t i = 0; i < rec->n_samples && i < s->iters; i++) {
      at[3 + i] = rec->device_seconds ? rec->device_seconds[i] : NAN;
      at[3 + s->iters + i] = rec->wall_seconds[i];
    }
    if (rec->n_samples == 0) at[3] = -1.0; /* marks "no samples" */
  }
  // Every process receives every record: any live one can write (takeover).
  status = gs_comm_world_allgather(s->world, &id, sizeof id, ids);
  if (status == GS_OK)
    status = gs_comm_world_allgather(s->world, mine, doubles * sizeof *mine, all);
  if (status != GS_OK) goto done;
  for (int k = 0; k < size; k++) {
    if (k == self->rank) continue;
    for (size_t p = 0; p < n_points; p++) {
      gs_rank_record *rec = &points[p].m.runs[0].ranks[k];
      const double *at = all + (size_t)k * doubles + p * per_point;
      snprintf(rec->host, sizeof rec->host, "%s", ids[k].host);
      rec->device = ids[k].device;
      rec->status = (gs_status)(int)at[0];
      if (rec->status != GS_OK) snprintf(rec->error, sizeof rec->error, "%s", ids[k].error);
      rec->verification.mismatches = (uint64_t)at[1];
      rec->verification.status = (gs_verify_status)(int)at[2];
      if (rec->verification.status != GS_VERIFY_SKIPPED)
        snprintf(rec->verification.detail, sizeof rec->verification.detail,
                 "rank %d: %llu wrong elements", k,
                 (unsigned long long)rec->verification.mismatches);
      if (rec->status != GS_OK || at[3] < 0.0 || points[p].shape.bytes == 0) continue;
      rec->wall_seconds = malloc(s->iters * sizeof *rec->wall_seconds);
      rec->device_seconds =
          s->backend == GS_BACKEND_CUDA ? malloc(s->iters * sizeof(double)) : NULL;
      if (!rec->wall_seconds || (s->backend == GS_BACKEND_CUDA && !rec->device_seconds)) {
        status = gs_error(GS_ERR_NOMEM, "cannot allocate gathered samples");
        goto done;
      }
      for (size_t i = 0; i < s->iters; i++) {
        if (rec->device_seconds) rec->device_seconds[i] = at[3 + i];
        rec->wall_seconds[i] = at[3 + s->iters + i];
      }
      rec->n_samples = (size_t)s->iters;
    }
  }
done:
  free(mine);
  free(all);
  free(ids);
  return status;
}

/* Every rank's arrival times of every point to every process. */
static gs_status gather_arrivals(const gs_coll_sweep *s, gs_coll_point *points, size_t n_points,
                                 int self) {
  if (!s->arrival) return GS_OK;
  gs_arrival **arrivals = calloc(n_points ? n_points : 1, sizeof *arrivals);
  if (!arrivals) return gs_error(GS_ERR_NOMEM, "cannot allocate the arrival gather");
  for (size_t p = 0; p < n_points; p++) arrivals[p] = points[p].m.arrival;
  gs_status st = gs_runner_arrival_gather(s->world, self, arrivals, n_points, s->iters);
  free(arrivals);
  return st;
}

/* Step times, statistics and the table's figures of every point. */
static gs_status summarize(const gs_coll_sweep *s, gs_coll_point *points, size_t n_points) {
  gs_status first = GS_OK;
  for (size_t p = 0; p < n_points; p++) {
    gs_coll_point *pt = &points[p];
    gs_measurement *m = &pt->m;
    for (size_t k = 0; k < m->runs[0].n_ranks; k++) {
      gs_rank_record *rec = &m->runs[0].ranks[k];
      m->devices[k < 64 ? k : 63] = rec->device;
      if (rec->status != GS_OK && m->status == GS_OK) {
        m->status = rec->status == GS_ERR_ABORTED ? GS_ERR_ABORTED : rec->status;
        snprintf(m->error, sizeof m->error, "rank %zu: %s", k, rec->error);
      }
    }
    // A real failure names its rank rather than one that was only stopped.
    for (size_t k = 0; k < m->runs[0].n_ranks; k++) {
      gs_rank_record *rec = &m->runs[0].ranks[k];
      if (rec->status != GS_OK && rec->status != GS_ERR_ABORTED) {
        m->status = rec->status;
        snprintf(m->error, sizeof m->error, "rank %zu: %s", k, rec->error);
        break;
      }
    }
    if (pt->shape.bytes == 0) continue;
    gs_status st = gs_runner_summarize(m, s->backend == GS_BACKEND_CUDA);
    if (st != GS_OK && m->status == GS_OK) m->status = st;
    pt->checked = m->verification.status != GS_VERIFY_SKIPPED;
    pt->wrong = m->verification.mismatches;
    if (m->status == GS_OK && m->verification.status == GS_VERIFY_FAILED) {
      m->status = GS_ERR_VERIFY;
      snprintf(m->error, sizeof m->error, "%llu wrong elements: %s", (unsigned long long)pt->wrong,
               m->verification.detail);
    }
    if (m->aggregate.step.n > 0) {
      pt->time_seconds = m->aggregate.step.mean;
      pt->algbw = pt->time_seconds > 0.0 ? (double)pt->shape.bytes / pt->time_seconds : 0.0;
      pt->busbw = pt->algbw * pt->factor;
    }
    if (m->status != GS_OK && first == GS_OK) first = m->status;
  }
  return first;
}

gs_status gs_coll_measure(const gs_coll_sweep *s, gs_coll_point **points_out, size_t *n_out) {
  *points_out = NULL;
  *n_out = 0;
  int world_size = gs_comm_world_size(s->world);
  gs_coll_point *points = NULL;
  size_t n_points = 0;
  gs_status status = make_points(s, world_size, &points, &n_points);
  *points_out = points;
  *n_out = n_points;
  if (status != GS_OK) return status;

  coll_shared sh = {.sweep = s, .points = points, .n_points = n_points};
  coll_rank *ranks = calloc((size_t)s->local_ranks, sizeof *ranks);
  pthread_t *threads = calloc((size_t)s->local_ranks, sizeof *threads);
  if (!ranks || !threads) {
    free(ranks);
    free(threads);
    return gs_error(GS_ERR_NOMEM, "cannot allocate the rank threads");
  }
  int started = 0;
  for (; started < s->local_ranks; started++) {
    ranks[started].shared = &sh;
    ranks[started].local = started;
    const int rc = pthread_create(&threads[started], NULL, rank_main, &ranks[started]);
    if (rc != 0) {
      status = gs_error_system(rc, "cannot start the thread of rank %d", started);
      gs_comm_abort(gs_comm_world_rank(s->world, started)); /* the others stop */
      break;
    }
  }
  for (int k = 0; k < started; k++) pthread_join(threads[k], NULL);
  for (int k = 0; k < started; k++)
    for (size_t p = 0; p < n_points; p++)
      points[p].m.runs[0].ranks[ranks[k].rank].device = ranks[k].device;

  // The first real failure wins over ranks that only stopped because of it,
  // and is recorded on the calling thread for the command to print.
  // A thread that did not start (status) stays the error reported.
  gs_status local = GS_OK;
  for (int k = 0; k < started && local == GS_OK && status == GS_OK; k++)
    if (ranks[k].status != GS_OK && ranks[k].status != GS_ERR_ABORTED)
      local = gs_error(ranks[k].status, "rank %d: %s", ranks[k].rank, ranks[k].error);
  for (int k = 0; k < started && local == GS_OK && status == GS_OK; k++)
    if (ranks[k].status != GS_OK)
      local = gs_error(ranks[k].status, "rank %d: %s", ranks[k].rank, ranks[k].error);
  if (s->job->launch == GS_COMM_LAUNCH_MPI && started == 1) {
    // A rank whose communication timed out cannot take part in the gather.
    if (local == GS_OK || local == GS_ERR_VERIFY) {
      gs_comm_progress(gs_comm_world_rank(s->world, 0), ranks[0].step++);
      gs_status g = gather_records(s, points, n_points, &ranks[0]);
      if (g == GS_OK) g = gather_arrivals(s, points, n_points, ranks[0].rank);
      if (g != GS_OK) local = g;
    }
  }
  if (s->progress && started > 0) *s->progress = ranks[0].step;
  gs_error_kept kept;  // a failure before the summary keeps its text
  gs_error_keep(&kept);
  gs_status verdict = summarize(s, points, n_points);
  if (status != GS_OK || local != GS_OK) gs_error_restore(&kept);
  free(ranks);
  free(threads);
  if (status != GS_OK) return status;
  if (local != GS_OK) return local;
  return verdict;
}
