/* Each collective's own calls, one entry per descriptor of
 * core/coll_table.h: the NCCL call that enqueues it on device buffers and
 * the MPI call that runs it between processes on host buffers. Everything
 * else (checks, names, the threads path, in-place copies, avg's division)
 * is generic in comm.c and comm_host.c; adding a collective adds its two
 * calls here (docs/collectives.md, "Adding a collective"). */
#include <string.h>

#include "core/check.h"
#include "platform/comm_internal.h"

/* ---- NCCL ------------------------------------------------------------------ */

static gs_status nccl_allreduce(gs_comm *c, const gs_comm_call *k, cudaStream_t stream) {
  return comm_nccl_result(c,
                          ncclAllReduce(k->send, k->recv, k->count, comm_nccl_type(k->dtype),
                                        comm_nccl_op(k->redop), c->nccl, stream),
                          "ncclAllReduce");
}

static gs_status nccl_allgather(gs_comm *c, const gs_comm_call *k, cudaStream_t stream) {
  return comm_nccl_result(
      c, ncclAllGather(k->send, k->recv, k->count, comm_nccl_type(k->dtype), c->nccl, stream),
      "ncclAllGather");
}

static gs_status nccl_reducescatter(gs_comm *c, const gs_comm_call *k, cudaStream_t stream) {
  return comm_nccl_result(c,
                          ncclReduceScatter(k->send, k->recv, k->count, comm_nccl_type(k->dtype),
                                            comm_nccl_op(k->redop), c->nccl, stream),
                          "ncclReduceScatter");
}

static gs_status nccl_broadcast(gs_comm *c, const gs_comm_call *k, cudaStream_t stream) {
  return comm_nccl_result(c,
                          ncclBroadcast(k->send, k->recv, k->count, comm_nccl_type(k->dtype),
                                        k->root, c->nccl, stream),
                          "ncclBroadcast");
}

static gs_status nccl_reduce(gs_comm *c, const gs_comm_call *k, cudaStream_t stream) {
  return comm_nccl_result(c,
                          ncclReduce(k->send, k->recv, k->count, comm_nccl_type(k->dtype),
                                     comm_nccl_op(k->redop), k->root, c->nccl, stream),
                          "ncclReduce");
}

static gs_status nccl_alltoall(gs_comm *c, const gs_comm_call *k, cudaStream_t stream) {
  // NCCL has no all-to-all call: one send and one receive per peer, grouped.
  size_t block = k->count * gs_dtype_size(k->dtype);
  ncclDataType_t type = comm_nccl_type(k->dtype);
  ncclResult_t rc = ncclGroupStart();
  for (int peer = 0; peer < c->world->size && rc == ncclSuccess; peer++) {
    rc = ncclSend((const char *)k->send + (size_t)peer * block, k->count, type, peer, c->nccl,
                  stream);
    if (rc == ncclSuccess)
      rc = ncclRecv((char *)k->recv + (size_t)peer * block, k->count, type, peer, c->nccl, stream);
  }
  ncclResult_t end = ncclGroupEnd();
  return comm_nccl_result(c, rc != ncclSuccess ? rc : end, "all-to-all ncclSend/ncclRecv group");
}

static gs_status nccl_sendrecv(gs_comm *c, const gs_comm_call *k, cudaStream_t stream) {
  ncclDataType_t type = comm_nccl_type(k->dtype);
  ncclResult_t rc = ncclGroupStart();
  if (rc == ncclSuccess) rc = ncclSend(k->send, k->count, type, k->send_peer, c->nccl, stream);
  if (rc == ncclSuccess) rc = ncclRecv(k->recv, k->count, type, k->recv_peer, c->nccl, stream);
  ncclResult_t end = ncclGroupEnd();
  return comm_nccl_result(c, rc != ncclSuccess ? rc : end, "ncclSend/ncclRecv group");
}

/* ---- MPI ---------------------------------------------------------------------- */
/* comm_host_run has checked that the count fits an int. */

#ifdef GS_HAVE_MPI
static gs_status mpi_allreduce(gs_comm *c, const gs_comm_call *k, const void *send) {
  MPI_Request rq;
  GS_CHECK_MPI(MPI_Iallreduce(send, k->recv, (int)k->count, comm_mpi_type(k->dtype),
                              comm_mpi_op(k->redop), MPI_COMM_WORLD, &rq));
  return comm_mpi_complete(c, &rq, 1);
}

static gs_status mpi_allgather(gs_comm *c, const gs_comm_call *k, const void *send) {
  MPI_Request rq;
  MPI_Datatype type = comm_mpi_type(k->dtype);
  GS_CHECK_MPI(MPI_Iallgather(send, (int)k->count, type, k->recv, (int)k->count, type,
                              MPI_COMM_WORLD, &rq));
  return comm_mpi_complete(c, &rq, 1);
}

static gs_status mpi_reducescatter(gs_comm *c, const gs_comm_call *k, const void *send) {
  MPI_Request rq;
  GS_CHECK_MPI(MPI_Ireduce_scatter_block(send, k->recv, (int)k->count, comm_mpi_type(k->dtype),
                                         comm_mpi_op(k->redop), MPI_COMM_WORLD, &rq));
  return comm_mpi_complete(c, &rq, 1);
}

static gs_status mpi_broadcast(gs_comm *c, const gs_comm_call *k, const void *send) {
  MPI_Request rq;
  // MPI broadcasts one buffer: the root's input goes there first.
  if (c->rank == k->root && send != k->recv)
    memcpy(k->recv, send, k->count * gs_dtype_size(k->dtype));
  GS_CHECK_MPI(MPI_Ibcast(k->recv, (int)k->count, comm_mpi_type(k->dtype), k->root,
                          MPI_COMM_WORLD, &rq));
  return comm_mpi_complete(c, &rq, 1);
}

static gs_status mpi_reduce(gs_comm *c, const gs_comm_call *k, const void *send) {
  MPI_Request rq;
  GS_CHECK_MPI(MPI_Ireduce(send, k->recv, (int)k->count, comm_mpi_type(k->dtype),
                           comm_mpi_op(k->redop), k->root, MPI_COMM_WORLD, &rq));
  return comm_mpi_complete(c, &rq, 1);
}

static gs_status mpi_alltoall(gs_comm *c, const gs_comm_call *k, const void *send) {
  MPI_Request rq;
  MPI_Datatype type = comm_mpi_type(k->dtype);
  GS_CHECK_MPI(MPI_Ialltoall(send, (int)k->count, type, k->recv, (int)k->count, type,
                             MPI_COMM_WORLD, &rq));
  return comm_mpi_complete(c, &rq, 1);
}

static gs_status mpi_sendrecv(gs_comm *c, const gs_comm_call *k, const void *send) {
  MPI_Request rq[2];
  MPI_Datatype type = comm_mpi_type(k->dtype);
  GS_CHECK_MPI(MPI_Irecv(k->recv, (int)k->count, type, k->recv_peer, 0, MPI_COMM_WORLD, &rq[0]));
  GS_CHECK_MPI(MPI_Isend(send, (int)k->count, type, k->send_peer, 0, MPI_COMM_WORLD, &rq[1]));
  return comm_mpi_complete_p2p(c, rq, 2);
}
#define GS_COMM_MPI(f) f
#else
#define GS_COMM_MPI(f) NULL
#endif

/* ---- the table -------------------------------------------------------------------- */

const comm_coll_impl comm_coll_impls[GS_COLL_COUNT] = {
    [GS_COLL_ALLREDUCE] = {nccl_allreduce, GS_COMM_MPI(mpi_allreduce)},
    [GS_COLL_ALLGATHER] = {nccl_allgather, GS_COMM_MPI(mpi_allgather)},
    [GS_COLL_REDUCESCATTER] = {nccl_reducescatter, GS_COMM_MPI(mpi_reducescatter)},
    [GS_COLL_BROADCAST] = {nccl_broadcast, GS_COMM_MPI(mpi_broadcast)},
    [GS_COLL_REDUCE] = {nccl_reduce, GS_COMM_MPI(mpi_reduce)},
    [GS_COLL_ALLTOALL] = {nccl_alltoall, GS_COMM_MPI(mpi_alltoall)},
    [GS_COLL_SENDRECV] = {nccl_sendrecv, GS_COMM_MPI(mpi_sendrecv)},
};
