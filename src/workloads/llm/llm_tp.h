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

#include "core/types.h"
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

/* Under a launcher: the stage groups of the job, tp consecutive processes
 * each (process p in group p / tp), split from the job's world `control`
 * (CPU backend) or, on CUDA, from a world of one GPU per process made
 * here (NCCL over every process, GPU `device` of this one; its timeout
 * the run's), which the group's NCCL communicator is split from. */
typedef struct {
  gs_llm_tp_comm tp;     /* this process's group and the handle it came from */
  gs_comm_world *device; /* CUDA: the world of every process's GPU, or NULL */
} gs_llm_tp_groups;

/* Collective over every process of the job (all call it, those beyond
 * the measured ranks too). *out is filled on success. */
gs_status gs_llm_tp_join(gs_comm_world *control, gs_backend backend, int device, uint32_t tp,
                         double timeout_seconds, gs_llm_tp_groups *out);

/* Frees the group and the GPU world after a run that went well; after a
 * failure (a process may be lost) leaves them to the job's end, whose
 * collective teardown could wait for the lost. Accepts an empty one. */
void gs_llm_tp_leave(gs_llm_tp_groups *g, int failed);

#endif
