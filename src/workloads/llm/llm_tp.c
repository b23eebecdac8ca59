/* The collectives of a stage's tensor-parallel shards (llm_tp.h). */
#include "workloads/llm/llm_tp.h"

#include <string.h>

#include "core/check.h"

gs_status gs_llm_tp_allreduce(const gs_llm_tp_comm *t, float *buf, size_t count,
                              cudaStream_t stream) {
  if (t->group)
    return gs_comm_group_allreduce(t->group, buf, buf, count, GS_DTYPE_FLOAT, GS_REDOP_SUM, stream);
  return gs_comm_allreduce(t->comm, buf, buf, count, GS_DTYPE_FLOAT, GS_REDOP_SUM, stream);
}

gs_status gs_llm_tp_allgather(const gs_llm_tp_comm *t, const void *send, void *recv, size_t count,
                              gs_dtype dtype, cudaStream_t stream) {
  if (t->group) return gs_comm_group_allgather(t->group, send, recv, count, dtype, stream);
  return gs_comm_allgather(t->comm, send, recv, count, dtype, stream);
}

/* One world of one GPU per process over every process of the job (NCCL;
 * its ranks are the processes). */
static gs_status device_world(gs_backend backend, int device, double timeout_seconds,
                              int nccl_max_ctas, gs_comm_world **out) {
  gs_comm_job job;
  gs_comm_job_detect(&job);
  const gs_comm_world_config wc = {.backend = backend, .local_ranks = 1, .devices = &device,
                                   .timeout_seconds = timeout_seconds,
                                   .nccl_max_ctas = nccl_max_ctas};
  return gs_comm_world_create(&job, &wc, out);
}

int gs_llm_link_world(uint32_t s, uint32_t pp) {
  return s + 1 == pp && pp % 2 == 1 ? 2 : (int)(s % 2);
}

/* CUDA, pp > 1: the link worlds and this process's handles (its stage
 * sends on link `stage`, receives on link stage - 1 mod pp). */
static gs_status join_links(gs_comm_world *control, int device, uint32_t tp, uint32_t pp,
                            double timeout_seconds, int nccl_max_ctas, gs_llm_process_comms *out) {
  const int worlds = pp % 2 == 1 ? 3 : 2;
  for (int w = 0; w < worlds; w++)
    GS_TRY(device_world(GS_BACKEND_CUDA, device, timeout_seconds, nccl_max_ctas, &out->links[w]));
  const int me = gs_comm_rank(gs_comm_world_rank(control, 0));
  const uint32_t stage = (uint32_t)(me % (int)(tp * pp)) / tp;
  out->out = gs_comm_world_rank(out->links[gs_llm_link_world(stage, pp)], 0);
  out->in = gs_comm_world_rank(out->links[gs_llm_link_world((stage + pp - 1) % pp, pp)], 0);
  return GS_OK;
}

gs_status gs_llm_process_join(gs_comm_world *control, gs_backend backend, int device, uint32_t tp,
                              uint32_t pp, double timeout_seconds, int nccl_max_ctas,
                              gs_llm_process_comms *out) {
  memset(out, 0, sizeof *out);
  gs_status st = GS_OK;
  if (tp > 1) {
    gs_comm *from = gs_comm_world_rank(control, 0);
    const int me = gs_comm_rank(from);
    if (backend == GS_BACKEND_CUDA) {
      st = device_world(backend, device, timeout_seconds, nccl_max_ctas, &out->device);
      if (st == GS_OK) from = gs_comm_world_rank(out->device, 0);
    }
    gs_comm_group *group = NULL;
    if (st == GS_OK) st = gs_comm_group_create(from, me / (int)tp, &group);
    if (st == GS_OK) {
      // One replica's shards are the arrival record's ranks (scenario.c).
      gs_comm_group_mark_arrivals(group);
      out->tp = (gs_llm_tp_comm){.comm = from, .group = group};
    }
  }
  if (st == GS_OK && pp > 1 && backend == GS_BACKEND_CUDA)
    st = join_links(control, device, tp, pp, timeout_seconds, nccl_max_ctas, out);
  if (st != GS_OK) gs_llm_process_leave(out, 0);
  return st;
}

void gs_llm_process_leave(gs_llm_process_comms *g, int failed) {
  if (!failed) {
    gs_comm_group_destroy(g->tp.group);
    gs_comm_world_destroy(g->device);
    for (int w = 0; w < GS_LLM_LINK_WORLDS; w++) gs_comm_world_destroy(g->links[w]);
  }
  memset(g, 0, sizeof *g);
}
