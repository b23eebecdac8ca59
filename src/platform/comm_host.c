/* Collectives on host buffers (the cpu backend). Between the rank threads
 * of one process: a shared-memory exchange (publish the send buffers, meet
 * at a barrier, every rank computes its own output from its peers' buffers
 * into private scratch, meet again, copy out), deterministic because every
 * reduction runs in rank order. Between processes: MPI's non-blocking
 * collectives completed by polling, so that a timeout ends the wait. */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/check.h"
#include "core/interrupt.h"
#include "core/timer.h"
#include "platform/comm_internal.h"

/* ---- the exchange's barrier ---------------------------------------------- */

gs_status comm_exchange_init(comm_exchange *x, int parties) {
  memset(x, 0, sizeof *x);
  x->arrived = calloc((size_t)parties, sizeof *x->arrived);
  x->send = calloc((size_t)parties, sizeof *x->send);
  x->inbox = calloc((size_t)parties, sizeof *x->inbox);
  if (!x->arrived || !x->send || !x->inbox) {
    free(x->arrived);
    free(x->send);
    free(x->inbox);
    return gs_error(GS_ERR_NOMEM, "cannot allocate the exchange of %d ranks", parties);
  }
  int rc = pthread_mutex_init(&x->mutex, NULL);
  if (rc == 0) rc = pthread_cond_init(&x->cond, NULL);
  if (rc != 0) return gs_error_system(rc, "cannot create the exchange's barrier");
  x->parties = parties;
  return GS_OK;
}

void comm_exchange_destroy(comm_exchange *x) {
  pthread_cond_destroy(&x->cond);
  pthread_mutex_destroy(&x->mutex);
  comm_p2p_release_exchange(x);
  free(x->arrived);
  free(x->send);
  x->parties = 0;
}

void comm_exchange_abort(comm_exchange *x) {
  pthread_mutex_lock(&x->mutex);
  x->aborted = 1;
  pthread_cond_broadcast(&x->cond);
  pthread_mutex_unlock(&x->mutex);
}

/* Names the ranks that have not arrived in the current generation. */
static void describe_missing(const comm_exchange *x, char *buf, size_t size) {
  size_t at = 0;
  buf[0] = '\0';
  for (int k = 0; k < x->parties && at < size; k++)
    if (x->arrived[k] != x->generation + 1)
      at += (size_t)snprintf(buf + at, size - at, "%srank %d", at ? ", " : "", k);
}

gs_status comm_exchange_barrier(gs_comm *c) {
  return comm_exchange_meet(c, &c->world->exchange, c->rank);
}

/* The earlier of `deadline` and 100 ms from now (a group's barrier looks
 * at the world's abort flag that often). */
static struct timespec slice_until(const struct timespec *deadline, int bounded) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_nsec += 100000000L;
  if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
  if (bounded && (deadline->tv_sec < t.tv_sec ||
                  (deadline->tv_sec == t.tv_sec && deadline->tv_nsec < t.tv_nsec)))
    return *deadline;
  return t;
}

gs_status comm_exchange_meet(gs_comm *c, comm_exchange *x, int index) {
  const int group = x != &c->world->exchange;
  double limit = c->world->config.timeout_seconds;
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  if (limit > 0.0) {
    double whole = (double)(time_t)limit;
    deadline.tv_sec += (time_t)limit;
    deadline.tv_nsec += (long)((limit - whole) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) {
      deadline.tv_sec++;
      deadline.tv_nsec -= 1000000000L;
    }
  }
  pthread_mutex_lock(&x->mutex);
  if (group && atomic_load(&c->world->any_aborted)) x->aborted = 1;
  if (x->aborted) {
    pthread_mutex_unlock(&x->mutex);
    c->aborted = 1;
    return gs_error(GS_ERR_ABORTED, "stopped in %s because another rank failed", c->op_name);
  }
  unsigned long generation = x->generation;
  x->arrived[index] = generation + 1;
  if (++x->waiting == x->parties) {
    x->waiting = 0;
    x->generation++;
    pthread_cond_broadcast(&x->cond);
    pthread_mutex_unlock(&x->mutex);
    return GS_OK;
  }
  int timed_out = 0;
  while (generation == x->generation && !x->aborted && !timed_out) {
    if (group) {
      const struct timespec until = slice_until(&deadline, limit > 0.0);
      timed_out = pthread_cond_timedwait(&x->cond, &x->mutex, &until) == ETIMEDOUT &&
                  until.tv_sec == deadline.tv_sec && until.tv_nsec == deadline.tv_nsec;
      if (atomic_load(&c->world->any_aborted)) x->aborted = 1;
    } else if (limit > 0.0) {
      timed_out = pthread_cond_timedwait(&x->cond, &x->mutex, &deadline) == ETIMEDOUT;
    } else {
      pthread_cond_wait(&x->cond, &x->mutex);
    }
  }
  if (generation != x->generation) {
    pthread_mutex_unlock(&x->mutex);
    return GS_OK;
  }
  if (x->aborted) {
    pthread_cond_broadcast(&x->cond);
    pthread_mutex_unlock(&x->mutex);
    c->aborted = 1;
    return gs_error(GS_ERR_ABORTED, "stopped in %s because another rank failed", c->op_name);
  }
  char missing[GS_TEXT_LONG];
  describe_missing(x, missing, sizeof missing);
  x->aborted = 1;
  pthread_cond_broadcast(&x->cond);
  pthread_mutex_unlock(&x->mutex);
  c->aborted = 1;
  if (group) atomic_store(&c->world->any_aborted, 1);
  return gs_error(GS_ERR_TIMEOUT,
                  "%s did not complete within %.3g s; stalled: %s%s did not arrive; "
                  "communicator aborted",
                  c->op_name, limit, group ? "group member " : "", missing);
}

/* ---- element-wise reductions ---------------------------------------------- */

/* Integer sums and products wrap like the device's (done in unsigned
 * arithmetic, so no signed overflow); floating-point ones round. */
#define REDUCE_LOOP(T, WIDE)                                            \
  do {                                                                  \
    T *a = acc;                                                         \
    const T *b = src;                                                   \
    for (size_t i = 0; i < count; i++) {                                \
      switch (op) {                                                     \
        case GS_REDOP_SUM:                                              \
        case GS_REDOP_AVG: a[i] = (T)((WIDE)a[i] + (WIDE)b[i]); break;  \
        case GS_REDOP_PROD: a[i] = (T)((WIDE)a[i] * (WIDE)b[i]); break; \
        case GS_REDOP_MAX:                                              \
          if (b[i] > a[i]) a[i] = b[i];                                 \
          break;                                                        \
        case GS_REDOP_MIN:                                              \
          if (b[i] < a[i]) a[i] = b[i];                                 \
          break;                                                        \
        case GS_REDOP_COUNT: break;                                     \
      }                                                                 \
    }                                                                   \
  } while (0)

static gs_status host_supported(gs_dtype dtype) {
  if (dtype == GS_DTYPE_HALF || dtype == GS_DTYPE_BFLOAT16)
    return gs_error(GS_ERR_UNSUPPORTED,
                    "the cpu backend has no %s arithmetic: use int8..uint64, float or double",
                    gs_dtype_names[dtype]);
  return GS_OK;
}

static void reduce_into(void *acc, const void *src, size_t count, gs_dtype dtype, gs_redop op) {
  switch (dtype) {
    case GS_DTYPE_INT8: REDUCE_LOOP(int8_t, uint64_t); break;
    case GS_DTYPE_UINT8: REDUCE_LOOP(uint8_t, uint64_t); break;
    case GS_DTYPE_INT32: REDUCE_LOOP(int32_t, uint64_t); break;
    case GS_DTYPE_UINT32: REDUCE_LOOP(uint32_t, uint64_t); break;
    case GS_DTYPE_INT64: REDUCE_LOOP(int64_t, uint64_t); break;
    case GS_DTYPE_UINT64: REDUCE_LOOP(uint64_t, uint64_t); break;
    case GS_DTYPE_FLOAT: REDUCE_LOOP(float, float); break;
    case GS_DTYPE_DOUBLE: REDUCE_LOOP(double, double); break;
    case GS_DTYPE_HALF:
    case GS_DTYPE_BFLOAT16:
    case GS_DTYPE_COUNT: break;
  }
}

#define DIVIDE_LOOP(T)                                          \
  do {                                                          \
    T *a = acc;                                                 \
    for (size_t i = 0; i < count; i++) a[i] = (T)(a[i] / (T)n); \
  } while (0)

/* The last step of avg: integers divide the sum (truncating), as NCCL does. */
static void divide_by(void *acc, size_t count, gs_dtype dtype, int n) {
  switch (dtype) {
    case GS_DTYPE_INT8: DIVIDE_LOOP(int8_t); break;
    case GS_DTYPE_UINT8: DIVIDE_LOOP(uint8_t); break;
    case GS_DTYPE_INT32: DIVIDE_LOOP(int32_t); break;
    case GS_DTYPE_UINT32: DIVIDE_LOOP(uint32_t); break;
    case GS_DTYPE_INT64: DIVIDE_LOOP(int64_t); break;
    case GS_DTYPE_UINT64: DIVIDE_LOOP(uint64_t); break;
    case GS_DTYPE_FLOAT: DIVIDE_LOOP(float); break;
    case GS_DTYPE_DOUBLE: DIVIDE_LOOP(double); break;
    case GS_DTYPE_HALF:
    case GS_DTYPE_BFLOAT16:
    case GS_DTYPE_COUNT: break;
  }
}

/* ---- sizes of one call ------------------------------------------------------ */

static size_t output_bytes(const gs_coll_desc *d, const gs_comm_call *call, int size) {
  return gs_coll_elements(d->recv_blocks, call->count, size) * gs_dtype_size(call->dtype);
}

/* Whether this rank's receive buffer gets the result (reduce: the root's). */
static int receives(const gs_coll_desc *d, const gs_comm *c, const gs_comm_call *call) {
  return !d->root_only || c->rank == call->root;
}

static gs_status scratch_reserve(gs_comm *c, size_t bytes) {
  if (bytes <= c->scratch_bytes) return GS_OK;
  void *grown = realloc(c->scratch, bytes);
  if (!grown) return gs_error(GS_ERR_NOMEM, "cannot allocate %zu bytes of scratch", bytes);
  c->scratch = grown;
  c->scratch_bytes = bytes;
  return GS_OK;
}

/* ---- between threads ---------------------------------------------------------- */

/* Computes this rank's output of `call` from the published send buffers
 * into scratch, block by block as the op's descriptor sources them
 * (reductions in rank order). Returns the bytes written (0: this rank
 * receives nothing). */
static size_t compute_output(gs_comm *c, const gs_comm_call *call) {
  const comm_exchange *x = &c->world->exchange;
  const gs_coll_desc *d = gs_coll_desc_of(call->op);
  int n = x->parties;
  if (!receives(d, c, call)) return 0;
  size_t block = call->count * gs_dtype_size(call->dtype);
  size_t blocks = gs_coll_elements(d->recv_blocks, 1, n);
  gs_coll_who who = {.rank = c->rank, .ranks = n, .root = call->root, .recv_peer = call->recv_peer};
  for (size_t j = 0; j < blocks; j++) {
    gs_coll_source from;
    d->source(&who, j, &from);
    size_t offset = from.block * block;
    char *out = (char *)c->scratch + j * block;
    if (!from.reduced) {
      memcpy(out, (const char *)x->send[from.rank] + offset, block);
      continue;
    }
    memcpy(out, (const char *)x->send[0] + offset, block);
    for (int r = 1; r < n; r++)
      reduce_into(out, (const char *)x->send[r] + offset, call->count, call->dtype, call->redop);
    if (call->redop == GS_REDOP_AVG) divide_by(out, call->count, call->dtype, n);
  }
  return blocks * block;
}

static gs_status run_between_threads(gs_comm *c, const gs_comm_call *call) {
  comm_exchange *x = &c->world->exchange;
  GS_TRY(scratch_reserve(c, output_bytes(gs_coll_desc_of(call->op), call, x->parties)));
  x->send[c->rank] = call->send;
  GS_TRY(comm_exchange_barrier(c)); /* every send buffer published */
  size_t bytes = compute_output(c, call);
  GS_TRY(comm_exchange_barrier(c)); /* nobody reads a send buffer any more */
  if (bytes > 0) memcpy(call->recv, c->scratch, bytes);
  return GS_OK;
}

gs_status comm_host_group_allreduce(gs_comm *c, comm_exchange *x, int index, const void *send,
                                    void *recv, size_t count, gs_dtype dtype, gs_redop op) {
  GS_TRY(host_supported(dtype));
  const size_t bytes = count * gs_dtype_size(dtype);
  GS_TRY(scratch_reserve(c, bytes));
  x->send[index] = send;
  GS_TRY(comm_exchange_meet(c, x, index)); /* every member's buffer published */
  memcpy(c->scratch, x->send[0], bytes);
  for (int k = 1; k < x->parties; k++) reduce_into(c->scratch, x->send[k], count, dtype, op);
  if (op == GS_REDOP_AVG) divide_by(c->scratch, count, dtype, x->parties);
  GS_TRY(comm_exchange_meet(c, x, index)); /* nobody reads a member's buffer any more */
  memcpy(recv, c->scratch, bytes);
  return GS_OK;
}

/* ---- between processes ----------------------------------------------------------- */

#ifdef GS_HAVE_MPI
MPI_Datatype comm_mpi_type(gs_dtype dtype) {
  switch (dtype) {
    case GS_DTYPE_INT8: return MPI_INT8_T;
    case GS_DTYPE_UINT8: return MPI_UINT8_T;
    case GS_DTYPE_INT32: return MPI_INT32_T;
    case GS_DTYPE_UINT32: return MPI_UINT32_T;
    case GS_DTYPE_INT64: return MPI_INT64_T;
    case GS_DTYPE_UINT64: return MPI_UINT64_T;
    case GS_DTYPE_FLOAT: return MPI_FLOAT;
    case GS_DTYPE_DOUBLE: return MPI_DOUBLE;
    case GS_DTYPE_HALF:
    case GS_DTYPE_BFLOAT16:
    case GS_DTYPE_COUNT: break;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op comm_mpi_op(gs_redop op) {
  switch (op) {
    case GS_REDOP_PROD: return MPI_PROD;
    case GS_REDOP_MAX: return MPI_MAX;
    case GS_REDOP_MIN: return MPI_MIN;
    case GS_REDOP_SUM:
    case GS_REDOP_AVG:
    case GS_REDOP_COUNT: break;
  }
  return MPI_SUM; /* avg: the sum, divided afterwards */
}

gs_status comm_mpi_complete(gs_comm *c, MPI_Request *requests, int n) {
  return comm_mpi_complete_napping(c, requests, n, 0.0);
}

/* See comm_internal.h. */
gs_status comm_mpi_complete_napping(gs_comm *c, MPI_Request *requests, int n, double nap) {
  double start = gs_time_seconds(), look = 0.0;
  for (;;) {
    int done = 0;
    GS_CHECK_MPI(MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE));
    if (done) return GS_OK;
    if (comm_look_due(&look)) {
      int peer_signal = 0;
      const int peer = comm_poll_peers(c, &peer_signal);
      if (gs_interrupt_signal() != 0) {
        c->aborted = 1;
        return gs_error(GS_ERR_INTERRUPTED, "%s interrupted by signal %d", c->op_name,
                        gs_interrupt_signal());
      }
      if (peer >= 0) {
        c->aborted = 1;
        return gs_error(GS_ERR_INTERRUPTED, "%s stopped: rank %d was stopped by signal %d",
                        c->op_name, peer, peer_signal);
      }
      if (comm_time_left(c, start) <= 0.0) {
        c->aborted = 1;
        return comm_stalled(c, "");
      }
    }
    if (nap > 0.0)
      gs_sleep_seconds(nap);
    else
      sched_yield();
  }
}

void comm_mpi_cancel(MPI_Request *requests, int n) {
  for (int k = 0; k < n; k++) {
    if (requests[k] == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&requests[k]);
    MPI_Request_free(&requests[k]);
  }
}

gs_status comm_mpi_complete_p2p(gs_comm *c, MPI_Request *requests, int n) {
  const gs_status status = comm_mpi_complete(c, requests, n);
  if (status != GS_OK) comm_mpi_cancel(requests, n);
  return status;
}

static size_t input_bytes(const gs_coll_desc *d, const gs_comm_call *call, int size) {
  return gs_coll_elements(d->send_blocks, call->count, size) * gs_dtype_size(call->dtype);
}

static gs_status run_between_processes(gs_comm *c, const gs_comm_call *call) {
  const gs_coll_desc *d = gs_coll_desc_of(call->op);
  int n = c->world->size;
  if (!comm_coll_impls[call->op].mpi)
    GS_BUG("%s has no MPI call in platform/comm_coll.c", d->name);
  if (call->count > (size_t)INT32_MAX)
    return gs_error(GS_ERR_UNSUPPORTED, "the cpu backend passes at most %d elements to MPI",
                    INT32_MAX);
  const void *send = call->send;
  // In-place forms (send inside recv) go through a copy of the input.
  size_t in = input_bytes(d, call, n), out = output_bytes(d, call, n);
  const char *s = call->send, *r = call->recv;
  if (s < r + out && r < s + in) {
    GS_TRY(scratch_reserve(c, in));
    memcpy(c->scratch, call->send, in);
    send = c->scratch;
  }
  GS_TRY(comm_coll_impls[call->op].mpi(c, call, send));
  if (d->has_redop && call->redop == GS_REDOP_AVG && receives(d, c, call))
    divide_by(call->recv, gs_coll_elements(d->recv_blocks, call->count, n), call->dtype, n);
  return GS_OK;
}
#endif

/* ---- what the survivors of a broken job exchange ------------------------------- */

/* The tag of the salvage messages (point-to-point on MPI_COMM_WORLD; the
 * host collectives' sendrecv uses 0). */
#define COMM_SALVAGE_TAG 0x5a1
/* Shortest wait for the survivors' data; a peer that still answers is
 * waited for up to the world's timeout (it may finish its own work first),
 * or COMM_SIGNALLED_SECONDS once a signal came. */
#define COMM_SALVAGE_SECONDS 1.0

#ifdef GS_HAVE_MPI
/* Whether process k is worth waiting for: not this one, and not one of
 * this host that died or went silent (a process found lost because a
 * signal stopped it still sends what it completed). */
static int expect_from(const gs_comm_world *w, int k) {
  const int state = comm_process_state(w, k);
  return k != w->job.process_rank && (state == 1 || state == -2);
}
#endif

gs_status gs_comm_world_salvage(gs_comm_world *w, const void *send, size_t bytes, void **recv,
                                size_t *sizes) {
  const int n = w->size;
  for (int k = 0; k < n; k++) recv[k] = NULL, sizes[k] = 0;
  if (w->job.launch == GS_COMM_LAUNCH_THREADS) return GS_OK;
#ifdef GS_HAVE_MPI
  if (bytes > (size_t)INT32_MAX)
    return gs_error(GS_ERR_UNSUPPORTED, "salvage of %zu bytes per process is too large",
                    bytes);
  // The copy outlives this call: a send to a silent peer never completes,
  // and MPI may read the buffer until the job ends.
  void *copy = malloc(bytes ? bytes : 1);
  if (!copy) return gs_error(GS_ERR_NOMEM, "cannot keep %zu bytes to salvage", bytes);
  memcpy(copy, send, bytes);
  for (int k = 0; k < n; k++) {
    if (!expect_from(w, k)) continue;
    MPI_Request request;
    if (MPI_Isend(copy, (int)bytes, MPI_BYTE, k, COMM_SALVAGE_TAG, MPI_COMM_WORLD, &request) ==
        MPI_SUCCESS)
      MPI_Request_free(&request);
  }
  double until = gs_time_seconds() + fmax(COMM_SALVAGE_SECONDS, w->config.timeout_seconds);
  int signalled = 0;
  for (;;) {
    if (!signalled && gs_interrupt_signal() != 0) {
      signalled = 1;
      until = fmin(until, gs_time_seconds() + COMM_SIGNALLED_SECONDS);
    }
    int missing = 0;
    for (int k = 0; k < n; k++) missing += expect_from(w, k) && recv[k] == NULL;
    if (missing == 0 || gs_time_seconds() >= until) break;
    int arrived = 0, count = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, COMM_SALVAGE_TAG, MPI_COMM_WORLD, &arrived, &st) !=
            MPI_SUCCESS ||
        !arrived) {
      sched_yield();
      continue;
    }
    MPI_Get_count(&st, MPI_BYTE, &count);
    const int from = st.MPI_SOURCE;
    void *data = malloc(count > 0 ? (size_t)count : 1);
    if (!data) return gs_error(GS_ERR_NOMEM, "cannot receive %d salvaged bytes", count);
    if (MPI_Recv(data, count, MPI_BYTE, from, COMM_SALVAGE_TAG, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE) != MPI_SUCCESS || from < 0 || from >= n || recv[from]) {
      free(data);
      continue;
    }
    recv[from] = data;
    sizes[from] = (size_t)count;
  }
  return GS_OK;
#else
  (void)send;
  (void)bytes;
  GS_BUG("mpi launch in a build without MPI");
#endif
}

gs_status comm_host_run(gs_comm *c, const gs_comm_call *call) {
  GS_TRY(host_supported(call->dtype));
  if (c->world->job.launch == GS_COMM_LAUNCH_THREADS) return run_between_threads(c, call);
#ifdef GS_HAVE_MPI
  return run_between_processes(c, call);
#else
  GS_BUG("mpi launch in a build without MPI");
#endif
}
