/* Single or multi GPU from measured throughput (see decide.h). */
#include "measure/decide.h"

#include <string.h>

#include "core/format.h"
#include "core/check.h"

gs_decision gs_decide(double speedup) {
  if (!(speedup > 0.0)) return GS_DECISION_UNKNOWN;
  if (speedup >= GS_DECIDE_BENEFICIAL) return GS_DECISION_MULTI;
  if (speedup >= GS_DECIDE_MARGINAL) return GS_DECISION_MARGINAL;
  return GS_DECISION_SINGLE;
}

const char *gs_decision_text(gs_decision d) {
  switch (d) {
    case GS_DECISION_MULTI: return "multi-GPU beneficial";
    case GS_DECISION_MARGINAL: return "marginal";
    case GS_DECISION_SINGLE: return "single GPU preferred";
    case GS_DECISION_UNKNOWN: break;
  }
  return "unknown";
}

gs_status gs_decide_calibrate(const gs_workload *workload, const void *opts,
                              const gs_run_config *config, int *chosen, char *why,
                              size_t why_size) {
  *chosen = 1;
  if (config->world_size < 2) {
    snprintf(why, why_size, "one device selected, nothing to compare");
    return GS_OK;
  }
  gs_run_config c = *config;
  c.warmup = 3;
  c.iters = 0;
  c.min_time = 0.3;
  c.min_iters = 10;
  c.runs = 1;
  c.show_progress = 0;
  c.label = "calibration";
  gs_measurement ms[2];
  memset(ms, 0, sizeof ms);
  c.world_size = 1;
  gs_status st = gs_runner_measure(workload, opts, &c, &ms[0]);
  if (st == GS_OK) {
    c.world_size = config->world_size;
    st = gs_runner_measure(workload, opts, &c, &ms[1]);
  }
  if (st == GS_OK) {
    gs_runner_relate(ms, 2);
    const double speedup = ms[1].aggregate.speedup;
    const gs_decision d = gs_decide(speedup);
    if (d == GS_DECISION_MULTI) *chosen = config->world_size;
    char one[32], many[32];
    gs_format_rate(ms[0].aggregate.throughput, one, sizeof one);
    gs_format_rate(ms[1].aggregate.throughput, many, sizeof many);
    snprintf(why, why_size,
             "calibration (%.1f s each): %s%s/s on 1 rank, %s%s/s on %d ranks = %.2fx (%s: "
             "multi needs >= %.2fx); using %d rank%s",
             c.min_time, one, ms[0].cost.item_unit, many, ms[1].cost.item_unit,
             config->world_size, speedup, gs_decision_text(d), GS_DECIDE_BENEFICIAL, *chosen,
             *chosen == 1 ? "" : "s");
  }
  gs_measurement_free(&ms[0]);
  gs_measurement_free(&ms[1]);
  return st;
}
