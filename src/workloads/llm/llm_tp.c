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

gs_status gs_llm_tp_join(gs_comm_world *control, gs_backend backend, int device, uint32_t tp,
                         double timeout_seconds, gs_llm_tp_groups *out) {
  memset(out, 0, sizeof *out);
  gs_comm *from = gs_comm_world_rank(control, 0);
  const int me = gs_comm_rank(from);
  if (backend == GS_BACKEND_CUDA) {
    gs_comm_job job;
    gs_comm_job_detect(&job);
    const gs_comm_world_config wc = {.backend = GS_BACKEND_CUDA, .local_ranks = 1,
                                     .devices = &device, .timeout_seconds = timeout_seconds};
    GS_TRY(gs_comm_world_create(&job, &wc, &out->device));
    from = gs_comm_world_rank(out->device, 0);
  }
  gs_comm_group *group = NULL;
  const gs_status st = gs_comm_group_create(from, me / (int)tp, &group);
  if (st != GS_OK) {
    gs_comm_world_destroy(out->device);
    out->device = NULL;
    return st;
  }
  // One replica's shards are the arrival record's ranks (scenario.c).
  gs_comm_group_mark_arrivals(group);
  out->tp = (gs_llm_tp_comm){.comm = from, .group = group};
  return GS_OK;
}

void gs_llm_tp_leave(gs_llm_tp_groups *g, int failed) {
  if (!failed) {
    gs_comm_group_destroy(g->tp.group);
    gs_comm_world_destroy(g->device);
  }
  memset(g, 0, sizeof *g);
}
