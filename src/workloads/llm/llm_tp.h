/* The collectives of a pipeline stage's tensor-parallel shards: between
 * the threads of one process a world of their own (the handle's
 * collectives), between processes (one per shard, under a launcher) a
 * group of the job's world (gs_comm_group: an MPI sub-communicator on the
 * CPU backend, an NCCL split on GPUs). The models and the engine call
 * these and never ask which. Under a launcher a process also joins here
 * the communicators its shard needs (gs_llm_process_join), the pipeline's
 * links on GPUs too. */
#ifndef GS_LLM_TP_H
#define GS_LLM_TP_H

#include <stddef.h>
#include <stdint.h>

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

/* Under a launcher, what a process's shard talks over besides the job's
 * world: with tp > 1 its stage's group, tp consecutive processes (process
 * p in group p / tp), split from the job's world `control` (CPU backend)
 * or, on CUDA, from a world of one GPU per process made here (NCCL over
 * every process, GPU `device` of this one; its timeout the run's), which
 * the group's NCCL communicator is split from; on CUDA with pp > 1 the
 * NCCL links of the pipeline (the CPU backend's stages send over
 * `control`). Link s carries the residual stream from stage s to stage
 * s + 1 (the last stage's tokens to the first), for every replica and
 * column at once: links in turn go to two worlds over every process's
 * GPU (a third for the last link of an odd pp), so that a process sends
 * on one communicator and receives on another, as each link of the
 * threads mode is its own world (engine.c). */
#define GS_LLM_LINK_WORLDS 3
typedef struct {
  gs_llm_tp_comm tp;     /* tp > 1: this process's group and the handle it came from */
  gs_comm_world *device; /* CUDA, tp > 1: the world of every process's GPU, or NULL */
  gs_comm_world *links[GS_LLM_LINK_WORLDS]; /* CUDA, pp > 1: the link worlds, or NULL */
  gs_comm *out, *in; /* CUDA, pp > 1: this process's handles of its sending and receiving
                        link (ranks are processes), else NULL */
} gs_llm_process_comms;

/* The link world of link s (stage s to s + 1 mod pp) of a pipeline of pp
 * stages: s mod 2, and 2 for the last link of an odd pp. */
int gs_llm_link_world(uint32_t s, uint32_t pp);

/* Collective over every process of the job (all call it, those beyond
 * the measured ranks too): the stage groups when tp > 1, the pipeline's
 * links when pp > 1 on CUDA, in `process_rank`'s place (process p is
 * stage (p mod tp x pp) / tp of its replica). The GPU worlds' NCCL
 * communicators take at most `nccl_max_ctas` CTAs per collective (0:
 * NCCL's default). *out is filled on success; on failure what was made is
 * freed. */
gs_status gs_llm_process_join(gs_comm_world *control, gs_backend backend, int device, uint32_t tp,
                              uint32_t pp, double timeout_seconds, int nccl_max_ctas,
                              gs_llm_process_comms *out);

/* Frees the group and the GPU worlds after a run that went well; after a
 * failure (a process may be lost) leaves them to the job's end, whose
 * collective teardown could wait for the lost. Accepts an empty one. */
void gs_llm_process_leave(gs_llm_process_comms *g, int failed);

#endif
