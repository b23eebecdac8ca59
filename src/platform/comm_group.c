/* Sub-communicators (comm.h, gs_comm_group): a group of the world's ranks
 * with its own allreduce. GPU buffers: a communicator split from the
 * rank's with ncclCommSplit. Host buffers between processes: MPI_Comm_split
 * of MPI_COMM_WORLD and MPI_Iallreduce completed by polling. Host buffers
 * between the rank threads: the members learn each other's colour through
 * the world's exchange, the first member allocates a shared-memory
 * exchange of the members only, and the others take it from there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/timer.h"
#include "platform/comm_internal.h"

/* The members' shared exchange (threads mode), freed by the last to leave. */
typedef struct {
  comm_exchange x;
  _Atomic int users;
} group_shared;

struct gs_comm_group {
  gs_comm *comm; /* the member's world handle (timeouts, scratch, errors) */
  int index, size;
  double pair_factor;   /* cpu: the slowpair factor of this rank with the members */
  int marked;           /* the member's arrival recorder marks the group's collectives */
  group_shared *shared; /* cpu, threads mode */
  ncclComm_t nccl;      /* cuda */
#ifdef GS_HAVE_MPI
  MPI_Comm mpi; /* cpu, mpi mode; MPI_COMM_NULL otherwise */
#endif
};

int gs_comm_group_rank(const gs_comm_group *g) { return g->index; }
void gs_comm_group_mark_arrivals(gs_comm_group *g) { g->marked = 1; }
int gs_comm_group_size(const gs_comm_group *g) { return g->size; }

/* Threads mode: every rank publishes its colour; the members' index and
 * count follow from the world's colours in rank order; the first member
 * publishes the exchange it allocated, which the others take. */
static gs_status split_threads(gs_comm *c, int color, gs_comm_group *g) {
  comm_exchange *w = &c->world->exchange;
  const int n = w->parties;
  w->send[c->rank] = &color;
  GS_TRY(comm_exchange_barrier(c));
  int first = -1;
  for (int r = 0; r < n; r++) {
    if (*(const int *)w->send[r] != color) continue;
    if (first < 0) first = r;
    if (r < c->rank) g->index++;
    if (r != c->rank) g->pair_factor *= comm_pair_factor(c, r);
    g->size++;
  }
  GS_TRY(comm_exchange_barrier(c)); /* the colours are read */
  gs_status st = GS_OK;
  group_shared *made = NULL;
  if (first == c->rank) {
    made = calloc(1, sizeof *made);
    st = made ? comm_exchange_init(&made->x, g->size)
              : gs_error(GS_ERR_NOMEM, "cannot allocate a group's exchange");
    if (st == GS_OK) atomic_store(&made->users, g->size);
  }
  // A failed allocation publishes NULL: every member of that group sees it.
  w->send[c->rank] = st == GS_OK ? made : NULL;
  gs_status met = comm_exchange_barrier(c);
  if (met == GS_OK) g->shared = (group_shared *)w->send[first];
  if (met == GS_OK) met = comm_exchange_barrier(c); /* the exchanges are taken */
  if (st == GS_OK && met == GS_OK && g->shared) return GS_OK;
  if (made && !g->shared) free(made);
  if (st != GS_OK || met != GS_OK) return st != GS_OK ? st : met;
  g->shared = NULL;
  return gs_error(GS_ERR_NOMEM, "the first member of group %d could not allocate its exchange",
                  color);
}

gs_status gs_comm_group_create(gs_comm *c, int color, gs_comm_group **out) {
  *out = NULL;
  if (color < 0) GS_BUG("group colour %d of rank %d", color, c->rank);
  GS_TRY(gs_comm_barrier(c));
  snprintf(c->op_name, sizeof c->op_name, "the split into groups");
  gs_comm_group *g = calloc(1, sizeof *g);
  if (!g) return gs_error(GS_ERR_NOMEM, "cannot allocate a group of ranks");
  g->comm = c;
  g->pair_factor = 1.0;
#ifdef GS_HAVE_MPI
  g->mpi = MPI_COMM_NULL;
#endif
  gs_status st = GS_OK;
  if (c->world->config.backend == GS_BACKEND_CUDA) {
    st = comm_nccl_result(c, ncclCommSplit(c->nccl, color, c->rank, &g->nccl, NULL),
                          "ncclCommSplit");
    int index = 0, size = 0;
    if (st == GS_OK)
      st = comm_nccl_result(c, ncclCommUserRank(g->nccl, &index), "ncclCommUserRank");
    if (st == GS_OK) st = comm_nccl_result(c, ncclCommCount(g->nccl, &size), "ncclCommCount");
    g->index = index;
    g->size = size;
  } else if (c->world->job.launch == GS_COMM_LAUNCH_THREADS) {
    st = split_threads(c, color, g);
  } else {
#ifdef GS_HAVE_MPI
    if (MPI_Comm_split(MPI_COMM_WORLD, color, c->rank, &g->mpi) != MPI_SUCCESS ||
        MPI_Comm_rank(g->mpi, &g->index) != MPI_SUCCESS ||
        MPI_Comm_size(g->mpi, &g->size) != MPI_SUCCESS)
      st = gs_error(GS_ERR_MPI, "rank %d: MPI_Comm_split into group %d failed", c->rank, color);
    for (int m = 0; st == GS_OK && c->world->faults.n > 0 && m < g->size; m++) {
      MPI_Group mine, world;
      int global = -1;
      if (MPI_Comm_group(g->mpi, &mine) != MPI_SUCCESS ||
          MPI_Comm_group(MPI_COMM_WORLD, &world) != MPI_SUCCESS ||
          MPI_Group_translate_ranks(mine, 1, &m, world, &global) != MPI_SUCCESS)
        st = gs_error(GS_ERR_MPI, "rank %d: the members of group %d are unknown", c->rank, color);
      else if (global != c->rank)
        g->pair_factor *= comm_pair_factor(c, global);
      if (st == GS_OK) {
        MPI_Group_free(&mine);
        MPI_Group_free(&world);
      }
    }
#else
    GS_BUG("mpi launch in a build without MPI");
#endif
  }
  if (st != GS_OK) {
    gs_comm_group_destroy(g);
    return st;
  }
  *out = g;
  return GS_OK;
}

void gs_comm_group_destroy(gs_comm_group *g) {
  if (!g) return;
  if (g->nccl) {
    if (g->comm->aborted)
      ncclCommAbort(g->nccl);
    else
      ncclCommDestroy(g->nccl);
  }
  if (g->shared && atomic_fetch_sub(&g->shared->users, 1) == 1) {
    comm_exchange_destroy(&g->shared->x);
    free(g->shared);
  }
#ifdef GS_HAVE_MPI
  if (g->mpi != MPI_COMM_NULL) MPI_Comm_free(&g->mpi);
#endif
  free(g);
}

#ifdef GS_HAVE_MPI
/* A collective between processes runs on a heap copy of its buffer
 * (`send`'s bytes, or zeros): a collective given up when a member died
 * cannot be cancelled, and MPI may still write its buffer later, so the
 * copy is left allocated then rather than the caller's memory written. */
static gs_status group_mpi_copy(const void *send, size_t bytes, void **copy) {
  *copy = calloc(1, bytes ? bytes : 1);
  if (!*copy) return gs_error(GS_ERR_NOMEM, "cannot keep %zu bytes for a group's collective", bytes);
  if (send && bytes) memcpy(*copy, send, bytes);
  return GS_OK;
}
#endif

static gs_status group_allreduce(gs_comm_group *g, const void *send, void *recv, size_t count,
                                 gs_dtype dtype, gs_redop op, cudaStream_t stream);
static gs_status group_allgather(gs_comm_group *g, const void *send, void *recv, size_t count,
                                 gs_dtype dtype, cudaStream_t stream);

/* A marked group's collectives are marked by the member's arrival
 * recorder (comm_arrival.c) as the world's are. */
gs_status gs_comm_group_allreduce(gs_comm_group *g, const void *send, void *recv, size_t count,
                                  gs_dtype dtype, gs_redop op, cudaStream_t stream) {
  gs_comm *c = g->comm;
  const int marks = g->marked && c->arrival;
  if (marks) GS_TRY(comm_arrival_enter(c, stream));
  gs_status st = group_allreduce(g, send, recv, count, dtype, op, stream);
  if (st == GS_OK && marks) st = comm_arrival_leave(c, stream);
  return st;
}

gs_status gs_comm_group_allgather(gs_comm_group *g, const void *send, void *recv, size_t count,
                                  gs_dtype dtype, cudaStream_t stream) {
  gs_comm *c = g->comm;
  const int marks = g->marked && c->arrival;
  if (marks) GS_TRY(comm_arrival_enter(c, stream));
  gs_status st = group_allgather(g, send, recv, count, dtype, stream);
  if (st == GS_OK && marks) st = comm_arrival_leave(c, stream);
  return st;
}

gs_status gs_comm_group_p2p(gs_comm_group *g, const gs_comm_p2p_op *ops, int n,
                            cudaStream_t stream) {
  gs_comm *c = g->comm;
  GS_TRY(gs_comm_check(c));
  for (int k = 0; k < n; k++)
    if (ops[k].peer < 0 || ops[k].peer >= g->size || ops[k].peer == g->index)
      GS_BUG("group point-to-point peer %d of member %d in a group of %d", ops[k].peer, g->index,
             g->size);
  if (!g->nccl)
    return gs_error(GS_ERR_UNSUPPORTED,
                    "point-to-point within a group needs the cuda backend (on the cpu backend "
                    "use gs_comm_p2p with global ranks)");
  snprintf(c->op_name, sizeof c->op_name, "send/recv with member %d of a group of %d",
           n > 0 ? ops[n - 1].peer : -1, g->size);
  return comm_nccl_p2p(c, g->nccl, ops, n, stream);
}

static gs_status group_allreduce(gs_comm_group *g, const void *send, void *recv, size_t count,
                                 gs_dtype dtype, gs_redop op, cudaStream_t stream) {
  gs_comm *c = g->comm;
  GS_TRY(gs_comm_check(c));
  if (op == GS_REDOP_AVG || op >= GS_REDOP_COUNT)
    GS_BUG("group allreduce of op %d (sum, prod, max or min)", (int)op);
  snprintf(c->op_name, sizeof c->op_name, "allreduce over a group of %d", g->size);
  if (g->nccl)
    return comm_nccl_result(c, ncclAllReduce(send, recv, count, comm_nccl_type(dtype),
                                             comm_nccl_op(op), g->nccl, stream),
                            "ncclAllReduce (group)");
  // A slow pair's all-reduce waits F - 1 times three copies of its
  // message (an all-reduce of two passes over it about three times: a
  // copy, a reduction, a copy back), one copy timed here on this rank;
  // never its own waits for the other member, which would feed each
  // member's delay into the other's.
  double copy_seconds = 0.0;
  if (g->pair_factor > 1.0 && count > 0 && dtype < GS_DTYPE_COUNT) {
    const double t0 = gs_time_seconds();
    memmove(recv, send, count * gs_dtype_size(dtype));
    copy_seconds = 3.0 * (gs_time_seconds() - t0);
  }
  if (g->shared) {
    GS_TRY(comm_host_group_allreduce(c, &g->shared->x, g->index, send, recv, count, dtype, op));
    comm_pair_stretch(g->pair_factor, gs_time_seconds() - copy_seconds);
    return GS_OK;
  }
#ifdef GS_HAVE_MPI
  if (dtype == GS_DTYPE_HALF || dtype == GS_DTYPE_BFLOAT16)
    return gs_error(GS_ERR_UNSUPPORTED, "the cpu backend has no %s arithmetic",
                    gs_dtype_names[dtype]);
  if (count > (size_t)INT32_MAX)
    return gs_error(GS_ERR_UNSUPPORTED, "the cpu backend passes at most %d elements to MPI",
                    INT32_MAX);
  const size_t bytes = count * gs_dtype_size(dtype);
  void *copy = NULL;
  MPI_Request request;
  GS_TRY(group_mpi_copy(send, bytes, &copy));
  if (MPI_Iallreduce(MPI_IN_PLACE, copy, (int)count, comm_mpi_type(dtype), comm_mpi_op(op), g->mpi,
                     &request) != MPI_SUCCESS) {
    free(copy);
    return gs_error(GS_ERR_MPI, "rank %d: MPI_Iallreduce over a group failed", c->rank);
  }
  GS_TRY(comm_mpi_complete(c, &request, 1)); /* given up: the copy stays, MPI may write it */
  memcpy(recv, copy, bytes);
  free(copy);
  comm_pair_stretch(g->pair_factor, gs_time_seconds() - copy_seconds);
  return GS_OK;
#else
  (void)stream;
  GS_BUG("mpi launch in a build without MPI");
#endif
}

static gs_status group_allgather(gs_comm_group *g, const void *send, void *recv, size_t count,
                                 gs_dtype dtype, cudaStream_t stream) {
  gs_comm *c = g->comm;
  GS_TRY(gs_comm_check(c));
  snprintf(c->op_name, sizeof c->op_name, "allgather over a group of %d", g->size);
  if (g->nccl)
    return comm_nccl_result(c, ncclAllGather(send, recv, count, comm_nccl_type(dtype), g->nccl,
                                             stream),
                            "ncclAllGather (group)");
  if (dtype >= GS_DTYPE_COUNT) GS_BUG("group allgather of dtype %d", (int)dtype);
  const size_t bytes = count * gs_dtype_size(dtype);
  if (g->shared) {
    comm_exchange *x = &g->shared->x;
    x->send[g->index] = send;
    GS_TRY(comm_exchange_meet(c, x, g->index)); /* every member's block published */
    for (int k = 0; k < g->size; k++) memmove((char *)recv + (size_t)k * bytes, x->send[k], bytes);
    return comm_exchange_meet(c, x, g->index); /* nobody reads a member's block any more */
  }
#ifdef GS_HAVE_MPI
  if (bytes > (size_t)INT32_MAX / (size_t)g->size)
    return gs_error(GS_ERR_UNSUPPORTED, "the cpu backend passes at most %d bytes to MPI",
                    INT32_MAX);
  void *copy = NULL;
  MPI_Request request;
  GS_TRY(group_mpi_copy(NULL, bytes * (size_t)g->size, &copy));
  memcpy((char *)copy + (size_t)g->index * bytes, send, bytes);
  if (MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, copy, (int)bytes, MPI_BYTE, g->mpi,
                     &request) != MPI_SUCCESS) {
    free(copy);
    return gs_error(GS_ERR_MPI, "rank %d: MPI_Iallgather over a group failed", c->rank);
  }
  GS_TRY(comm_mpi_complete(c, &request, 1)); /* given up: the copy stays, MPI may write it */
  memcpy(recv, copy, bytes * (size_t)g->size);
  free(copy);
  return GS_OK;
#else
  (void)stream;
  GS_BUG("mpi launch in a build without MPI");
#endif
}
