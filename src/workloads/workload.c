/* What the workload interface gives every workload beside the vtable:
 * the check of a rank's share of the step (workload.h). */
#include "workloads/workload.h"

#include "core/check.h"

gs_status gs_workload_check_share(const gs_rank_context *ctx, const char *key,
                                  const char *unit_name) {
  if (ctx->unit_count < 1 || ctx->unit_begin > ctx->unit_total ||
      ctx->unit_count > ctx->unit_total - ctx->unit_begin)
    GS_BUG("%s: %s [%llu, +%llu) outside the step's %llu", key, unit_name,
           (unsigned long long)ctx->unit_begin, (unsigned long long)ctx->unit_count,
           (unsigned long long)ctx->unit_total);
  return GS_OK;
}
