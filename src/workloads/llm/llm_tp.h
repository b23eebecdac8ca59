/* The collectives of a pipeline stage's tensor-parallel shards: between
 * the threads of one process a world of their own (the handle's
 * collectives), between processes (one per shard, under a launcher) a
 * group of the job's world (gs_comm_group: an MPI sub-communicator on the
 * CPU backend, an NCCL split on GPUs). The models and the engine call
 * these and never ask which. */
#ifndef GS_LLM_TP_H
#define GS_LLM_TP_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "platform/comm.h"

typedef struct {
  gs_comm *comm;        /* this shard's handle: waits and errors; the collectives without a group */
  gs_comm_group *group; /* the stage's shards between processes, or NULL */
} gs_llm_tp_comm;

/* buf[0..count) = the sum over the stage's shards, in place (floats; cuda:
 * enqueued on `stream`, wait with gs_comm_wait(t->comm, ...)). */
gs_status gs_llm_tp_allreduce(const gs_llm_tp_comm *t, float *buf, size_t count,
                              cudaStream_t stream);

/* recv = every shard's send (count elements each), in shard order. */
gs_status gs_llm_tp_allgather(const gs_llm_tp_comm *t, const void *send, void *recv, size_t count,
                              gs_dtype dtype, cudaStream_t stream);

#endif
