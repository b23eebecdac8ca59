/* Point-to-point transfers (comm.h, gs_comm_p2p): a pipeline's
 * activations and gradients between two ranks. GPU buffers go through
 * ncclSend/ncclRecv in one NCCL group; host buffers between the rank
 * threads of one process through per-rank inboxes of the shared-memory
 * exchange (a send copies its data into the receiver's inbox and never
 * waits); host buffers between processes through MPI_Isend of a copy and
 * MPI_Irecv into a copy, completed by polling within the world's timeout
 * (a copy stays allocated once its request is given up). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/check.h"
#include "core/timer.h"
#include "platform/comm_internal.h"

/* The tag of pipeline messages on MPI_COMM_WORLD (the host collectives'
 * sendrecv uses 0, the salvage 0x5a1). */
#define COMM_P2P_TAG 0x9e2

/* A message waiting in a rank's inbox (threads mode). */
struct comm_message {
  struct comm_message *next;
  int from;
  size_t bytes;
  unsigned char data[];
};

/* A send in flight under MPI: its request and the copy it reads. */
struct comm_pending_send {
#ifdef GS_HAVE_MPI
  MPI_Request request;
#endif
  void *copy;
};

void comm_p2p_release_exchange(comm_exchange *x) {
  for (int r = 0; x->inbox && r < x->parties; r++)
    while (x->inbox[r]) {
      struct comm_message *m = x->inbox[r];
      x->inbox[r] = m->next;
      free(m);
    }
  free(x->inbox);
  x->inbox = NULL;
}

void comm_p2p_release(gs_comm *c) {
  // Sends still in flight when the world goes away belong to a broken job:
  // their copies stay allocated (MPI may read them until it finalizes).
  free(c->pending);
  c->pending = NULL;
  c->pending_count = c->pending_capacity = 0;
}

/* ---- between the rank threads ------------------------------------------------- */

static gs_status thread_send(gs_comm *c, const gs_comm_p2p_op *op, size_t bytes) {
  comm_exchange *x = &c->world->exchange;
  struct comm_message *m = malloc(sizeof *m + (bytes ? bytes : 1));
  if (!m) return gs_error(GS_ERR_NOMEM, "cannot queue %zu bytes for rank %d", bytes, op->peer);
  m->next = NULL;
  m->from = c->rank;
  m->bytes = bytes;
  memcpy(m->data, op->buf, bytes);
  pthread_mutex_lock(&x->mutex);
  struct comm_message **tail = &x->inbox[op->peer];
  while (*tail) tail = &(*tail)->next;
  *tail = m;
  pthread_cond_broadcast(&x->cond);
  pthread_mutex_unlock(&x->mutex);
  return GS_OK;
}

/* The deadline `limit` seconds from now on CLOCK_REALTIME (cond waits). */
static struct timespec deadline_after(double limit) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  const double whole = (double)(time_t)limit;
  t.tv_sec += (time_t)limit;
  t.tv_nsec += (long)((limit - whole) * 1e9);
  if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
  return t;
}

static gs_status thread_recv(gs_comm *c, const gs_comm_p2p_op *op, size_t bytes) {
  comm_exchange *x = &c->world->exchange;
  const double limit = c->world->config.timeout_seconds;
  const struct timespec deadline = deadline_after(limit > 0.0 ? limit : 0.0);
  int timed_out = 0;
  pthread_mutex_lock(&x->mutex);
  for (;;) {
    struct comm_message **at = &x->inbox[c->rank];
    while (*at && (*at)->from != op->peer) at = &(*at)->next;
    if (*at) {
      struct comm_message *m = *at;
      *at = m->next;
      pthread_mutex_unlock(&x->mutex);
      const size_t got = m->bytes;
      if (got == bytes) memcpy(op->buf, m->data, bytes);
      free(m);
      if (got != bytes)
        GS_BUG("rank %d expected %zu bytes from rank %d, got %zu", c->rank, bytes, op->peer, got);
      return GS_OK;
    }
    if (x->aborted || timed_out) break;
    if (limit > 0.0)
      timed_out = pthread_cond_timedwait(&x->cond, &x->mutex, &deadline) == ETIMEDOUT;
    else
      pthread_cond_wait(&x->cond, &x->mutex);
  }
  const int aborted = x->aborted;
  x->aborted = 1;
  pthread_cond_broadcast(&x->cond);
  pthread_mutex_unlock(&x->mutex);
  c->aborted = 1;
  atomic_store(&c->world->any_aborted, 1);
  if (aborted)
    return gs_error(GS_ERR_ABORTED, "stopped in %s because another rank failed", c->op_name);
  return gs_error(GS_ERR_TIMEOUT,
                  "%s did not complete within %.3g s; stalled: rank %d did not send; "
                  "communicator aborted",
                  c->op_name, limit, op->peer);
}

/* ---- between processes ----------------------------------------------------------- */

#ifdef GS_HAVE_MPI
/* Frees the copies of the sends that have completed, keeping the order of
 * the others. */
static gs_status collect_finished(gs_comm *c) {
  size_t kept = 0;
  for (size_t k = 0; k < c->pending_count; k++) {
    int done = 0;
    GS_CHECK_MPI(MPI_Test(&c->pending[k].request, &done, MPI_STATUS_IGNORE));
    if (done)
      free(c->pending[k].copy);
    else
      c->pending[kept++] = c->pending[k];
  }
  c->pending_count = kept;
  return GS_OK;
}

static gs_status process_send(gs_comm *c, const gs_comm_p2p_op *op, size_t bytes) {
  GS_TRY(collect_finished(c));
  if (c->pending_count == c->pending_capacity) {
    const size_t capacity = c->pending_capacity ? 2 * c->pending_capacity : 16;
    struct comm_pending_send *grown = realloc(c->pending, capacity * sizeof *grown);
    if (!grown) return gs_error(GS_ERR_NOMEM, "cannot track %zu sends", capacity);
    c->pending = grown;
    c->pending_capacity = capacity;
  }
  struct comm_pending_send *p = &c->pending[c->pending_count];
  p->copy = malloc(bytes ? bytes : 1);
  if (!p->copy) return gs_error(GS_ERR_NOMEM, "cannot keep %zu bytes for rank %d", bytes, op->peer);
  memcpy(p->copy, op->buf, bytes);
  if (MPI_Isend(p->copy, (int)bytes, MPI_BYTE, op->peer, COMM_P2P_TAG, MPI_COMM_WORLD,
                &p->request) != MPI_SUCCESS) {
    free(p->copy);
    return gs_error(GS_ERR_MPI, "MPI_Isend of %zu bytes to rank %d failed", bytes, op->peer);
  }
  c->pending_count++;
  return GS_OK;
}

/* The receives of one group under MPI. Each lands in a copy of its own,
 * moved to the caller's buffer once all are complete: a receive given up
 * when the job broke may still be matched later (a live peer's message
 * arriving while the survivors salvage their results), and must then not
 * write into memory its caller has freed. */
#define COMM_RECEIVES_MAX 8
struct comm_landing {
  int posted;
  MPI_Request requests[COMM_RECEIVES_MAX];
  void *copy[COMM_RECEIVES_MAX];
  const gs_comm_p2p_op *op[COMM_RECEIVES_MAX];
};

static gs_status process_recv(struct comm_landing *l, const gs_comm_p2p_op *op, size_t bytes) {
  if (bytes > (size_t)INT_MAX || l->posted == COMM_RECEIVES_MAX)
    return gs_error(GS_ERR_UNSUPPORTED, "%zu bytes from rank %d: too large a receive group",
                    bytes, op->peer);
  void *copy = malloc(bytes ? bytes : 1);
  if (!copy) return gs_error(GS_ERR_NOMEM, "cannot receive %zu bytes from rank %d", bytes, op->peer);
  if (MPI_Irecv(copy, (int)bytes, MPI_BYTE, op->peer, COMM_P2P_TAG, MPI_COMM_WORLD,
                &l->requests[l->posted]) != MPI_SUCCESS) {
    free(copy);
    return gs_error(GS_ERR_MPI, "MPI_Irecv of %zu bytes from rank %d failed", bytes, op->peer);
  }
  l->copy[l->posted] = copy;
  l->op[l->posted] = op;
  l->posted++;
  return GS_OK;
}

/* After the group (`status`): the copies of the completed receives go to
 * their buffers. On failure the copies stay allocated, the receives
 * cancelled: one already begun may still be written. */
static gs_status landing_settle(gs_comm *c, struct comm_landing *l, gs_status status) {
  if (status == GS_OK && l->posted > 0)
    status = comm_mpi_complete_p2p(c, l->requests, l->posted);
  else if (status != GS_OK)
    comm_mpi_cancel(l->requests, l->posted);
  for (int j = 0; status == GS_OK && j < l->posted; j++) {
    const gs_comm_p2p_op *op = l->op[j];
    memcpy(op->buf, l->copy[j], op->count * gs_dtype_size(op->dtype));
    free(l->copy[j]);
  }
  return status;
}
#endif

gs_status gs_comm_p2p_drain(gs_comm *c) {
#ifdef GS_HAVE_MPI
  if (c->pending_count == 0) return GS_OK;
  snprintf(c->op_name, sizeof c->op_name, "point-to-point sends");
  MPI_Request requests[64];
  while (c->pending_count > 0) {
    const size_t n = c->pending_count < 64 ? c->pending_count : 64;
    for (size_t k = 0; k < n; k++) requests[k] = c->pending[k].request;
    GS_TRY(comm_mpi_complete(c, requests, (int)n));
    for (size_t k = 0; k < n; k++) free(c->pending[k].copy);
    memmove(c->pending, c->pending + n, (c->pending_count - n) * sizeof *c->pending);
    c->pending_count -= n;
  }
#else
  (void)c;
#endif
  return GS_OK;
}

/* ---- the group ---------------------------------------------------------------------- */

/* See comm_internal.h. */
gs_status comm_nccl_p2p(gs_comm *c, ncclComm_t nccl, const gs_comm_p2p_op *ops, int n,
                        cudaStream_t stream) {
  ncclResult_t rc = ncclGroupStart();
  for (int k = 0; k < n && rc == ncclSuccess; k++) {
    const gs_comm_p2p_op *op = &ops[k];
    rc = op->send ? ncclSend(op->buf, op->count, comm_nccl_type(op->dtype), op->peer, nccl, stream)
                  : ncclRecv(op->buf, op->count, comm_nccl_type(op->dtype), op->peer, nccl, stream);
  }
  ncclResult_t end = ncclGroupEnd();
  return comm_nccl_result(c, rc != ncclSuccess ? rc : end, "ncclSend/ncclRecv group");
}

gs_status gs_comm_p2p(gs_comm *c, const gs_comm_p2p_op *ops, int n, cudaStream_t stream) {
  GS_TRY(gs_comm_check(c));
  const int size = c->world->size;
  for (int k = 0; k < n; k++)
    if (ops[k].peer < 0 || ops[k].peer >= size || ops[k].peer == c->rank)
      GS_BUG("point-to-point peer %d of rank %d in a world of %d", ops[k].peer, c->rank, size);
  snprintf(c->op_name, sizeof c->op_name, "send/recv with rank %d", n > 0 ? ops[n - 1].peer : -1);
  if (c->world->config.backend == GS_BACKEND_CUDA)
    return comm_nccl_p2p(c, c->nccl, ops, n, stream);
  const int threads = c->world->job.launch == GS_COMM_LAUNCH_THREADS;
  // Sends first: they never wait, so a peer that sends to us at the same
  // time finds its input already there.
  for (int k = 0; k < n; k++) {
    if (!ops[k].send) continue;
    if (ops[k].dtype >= GS_DTYPE_COUNT) GS_BUG("point-to-point of dtype %d", (int)ops[k].dtype);
    const size_t bytes = ops[k].count * gs_dtype_size(ops[k].dtype);
    if (!threads && bytes > (size_t)INT_MAX)
      return gs_error(GS_ERR_UNSUPPORTED, "a message of %zu bytes is too large for MPI", bytes);
    // A slow pair's message takes its factor times as long to send.
    const double t0 = gs_time_seconds();
#ifdef GS_HAVE_MPI
    GS_TRY(threads ? thread_send(c, &ops[k], bytes) : process_send(c, &ops[k], bytes));
#else
    GS_TRY(thread_send(c, &ops[k], bytes));
#endif
    comm_pair_stretch(comm_pair_factor(c, ops[k].peer), t0);
  }
#ifdef GS_HAVE_MPI
  struct comm_landing landing = {.posted = 0};
#endif
  gs_status status = GS_OK;
  for (int k = 0; k < n && status == GS_OK; k++) {
    if (ops[k].send) continue;
    const size_t bytes = ops[k].count * gs_dtype_size(ops[k].dtype);
    snprintf(c->op_name, sizeof c->op_name, "receive from rank %d", ops[k].peer);
    if (threads) {
      status = thread_recv(c, &ops[k], bytes);
      continue;
    }
#ifdef GS_HAVE_MPI
    status = process_recv(&landing, &ops[k], bytes);
#endif
  }
#ifdef GS_HAVE_MPI
  status = landing_settle(c, &landing, status);
#endif
  return status;
}
