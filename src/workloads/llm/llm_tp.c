/* The collectives of a stage's tensor-parallel shards (llm_tp.h). */
#include "workloads/llm/llm_tp.h"

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
