/* Every rank's share of an mlp step, gathered in setup (mlp.h,
 * gs_mlp_gather_shares): data parallelism lays the shares end to end by
 * rank, a pipeline by replica. */
#include <string.h>

#include "core/check.h"
#include "platform/comm.h"
#include "workloads/mlp/mlp.h"

#define GS_MLP_SHARES_MAX 64

gs_status gs_mlp_gather_shares(const gs_rank_context *ctx, uint64_t *all_rows) {
  const int world = ctx->world_size;
  if (world > GS_MLP_SHARES_MAX) GS_BUG("mlp: shares of %d ranks", world);
  uint64_t mine[2] = {ctx->unit_begin, ctx->unit_count};
  uint64_t all[2 * GS_MLP_SHARES_MAX];
  if (ctx->comm == NULL || world == 1) {
    memcpy(all, mine, sizeof mine);
  } else if (ctx->backend == GS_BACKEND_CPU) {
    GS_TRY(gs_comm_allgather(ctx->comm, mine, all, 2, GS_DTYPE_UINT64, NULL));
  } else {
    uint64_t *buf = NULL;
    GS_CHECK_CUDA(cudaMalloc((void **)&buf, sizeof(uint64_t) * 2 * (size_t)(world + 1)));
    gs_status st = GS_OK;
    if (cudaMemcpy(buf, mine, sizeof mine, cudaMemcpyHostToDevice) != cudaSuccess)
      st = gs_error(GS_ERR_CUDA, "mlp: cannot copy the batch share to device %d", ctx->device);
    if (st == GS_OK)
      st = gs_comm_allgather(ctx->comm, buf, buf + 2, 2, GS_DTYPE_UINT64, ctx->stream);
    if (st == GS_OK) st = gs_comm_wait(ctx->comm, ctx->stream);
    if (st == GS_OK &&
        cudaMemcpy(all, buf + 2, sizeof(uint64_t) * 2 * (size_t)world, cudaMemcpyDeviceToHost) !=
            cudaSuccess)
      st = gs_error(GS_ERR_CUDA, "mlp: cannot copy the batch shares from device %d", ctx->device);
    cudaFree(buf);
    GS_TRY(st);
  }
  for (int r = 0; r < world; r++) all_rows[r] = all[2 * r + 1];
  return GS_OK;
}
