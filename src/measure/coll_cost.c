/* The cost of recording arrival times in coll (see coll_cost.h). */
#include "measure/coll_cost.h"

#include "core/check.h"

gs_status gs_coll_cost_configure(const gs_coll_options *o, gs_common_options *common) {
  if (!o->given_arrival_cost) return GS_OK;
  if (common->given_arrival_times)
    return gs_error(GS_ERR_USAGE, "options --arrival-cost and --arrival-times conflict: the cost "
                    "measurement records arrival times in every other block itself");
  if (common->given_out)
    return gs_error(GS_ERR_USAGE, "option -o/--out: --arrival-cost writes no result document "
                    "(it measures gpuscale's own recording, not the machine); it prints its "
                    "figures");
  if (common->trace)
    return gs_error(GS_ERR_USAGE, "option --trace: --arrival-cost writes no result document "
                    "for a trace to belong to");
  const uint64_t quartet = 4 * o->arrival_cost;
  if (!common->given_iters) {
    common->iters = quartet * GS_ARRIVAL_COST_DEFAULT_PAIRS;
    return GS_OK;
  }
  if (common->iters % quartet != 0 || common->iters / quartet < GS_ARRIVAL_COST_MIN_PAIRS)
    return gs_error(GS_ERR_USAGE, "options -n/--iters %llu and --arrival-cost %llu: the timed "
                    "iterations must be whole pairs of 4 blocks (a multiple of %llu), at least "
                    "%d pairs (%llu iterations)", (unsigned long long)common->iters,
                    (unsigned long long)o->arrival_cost, (unsigned long long)quartet,
                    GS_ARRIVAL_COST_MIN_PAIRS,
                    (unsigned long long)(quartet * GS_ARRIVAL_COST_MIN_PAIRS));
  return GS_OK;
}

gs_status gs_coll_cost_check_world(int world_size) {
  if (world_size >= 2) return GS_OK;
  return gs_error(GS_ERR_USAGE, "option --arrival-cost: a world of %d rank records no arrival "
                  "times (2 or more ranks)", world_size);
}

gs_status gs_coll_cost_report(const gs_coll_sweep *sweep, const gs_coll_point *pts, size_t n,
                              int world_size, const char *launch,
                              const gs_coll_observer *observer) {
  for (size_t i = 0; i < n; i++) {
    const gs_coll_point *p = &pts[i];
    const gs_run_record *run = p->m.n_runs ? &p->m.runs[0] : NULL;
    if (p->shape.bytes == 0 || !run || run->n_steps != sweep->iters) continue;
    gs_coll_cost_result r = {.sweep = sweep, .point = p, .world_size = world_size,
                             .launch = launch};
    GS_TRY(gs_arrival_cost_of(run->step_seconds, run->n_steps, sweep->cost_block, &r.cost));
    if (observer && observer->cost_done) observer->cost_done(observer->ctx, &r);
  }
  return GS_OK;
}
