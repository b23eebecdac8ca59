/* Single or multi GPU from measured throughput (see decide.h). */
#include "measure/decide.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_driver.h"
#include "core/check.h"
#include "core/format.h"
#include "core/scaling.h"

/* See decide.h. */
gs_status gs_decide_calibrate(const gs_workload *workload, const void *opts,
                              const gs_environment *env, const gs_run_config *config,
                              int *chosen, char *why, size_t why_size) {
  *chosen = 1;
  if (config->world_size < 2) {
    snprintf(why, why_size, "one device selected, nothing to compare");
    return GS_OK;
  }
  gs_run_config c = *config;
  c.trace = NULL; /* a calibration is no measurement of the document */
  c.warmup = 3;
  c.iters = 0;
  c.min_time = 0.3;
  c.min_iters = 10;
  c.runs = 1;
  c.show_progress = 0;
  c.label = "calibration";
  gs_measurement ms[2];
  memset(ms, 0, sizeof ms);
  const gs_workload_driver *driver = gs_runner_driver_of(workload);
  void *ctx = NULL;
  gs_status st = driver->open(workload, opts, env, 2, &ctx);
  c.world_size = 1;
  if (st == GS_OK) st = driver->measure(ctx, &c, 0, &ms[0]);
  if (st == GS_OK) {
    c.world_size = config->world_size;
    st = driver->measure(ctx, &c, 1, &ms[1]);
  }
  driver->close(ctx);
  if (st == GS_OK) {
    gs_scaling_point points[2];
    gs_stats_group *groups = malloc((ms[0].n_runs + ms[1].n_runs + 1) * sizeof *groups);
    if (!groups) {
      gs_measurement_free(&ms[0]);
      gs_measurement_free(&ms[1]);
      return gs_error(GS_ERR_NOMEM, "out of memory");
    }
    points[0] = gs_scaling_point_of(&ms[0], groups);
    points[1] = gs_scaling_point_of(&ms[1], groups + ms[0].n_runs);
    const int base = gs_scaling_baseline(points, 2);
    gs_scaling_assessment a;
    gs_scaling_assess(points, 2, base >= 0 ? &points[base] : NULL, NULL, &a);
    free(groups);
    if (a.verdict == GS_VERDICT_BENEFICIAL) *chosen = config->world_size;
    char one[32], many[32], words[64], speedup[64];
    gs_scaling_verdict_words(a.verdict, ms[1].backend, words, sizeof words);
    gs_format_rate(ms[0].aggregate.throughput, one, sizeof one);
    gs_format_rate(ms[1].aggregate.throughput, many, sizeof many);
    gs_scaling_format_ratio(a.speedup, a.speedup_low, a.speedup_high, 1.0, 2, "x", speedup,
                            sizeof speedup);
    // Only a beneficial verdict moves off one rank: an inconclusive or
    // suspect one keeps the single rank and says why.
    snprintf(why, why_size,
             "calibration (%.1f s each): %s%s/s on 1 rank, %s%s/s on %d ranks = %s (%s: "
             "multi needs the whole 95%% interval >= %.2fx); using %d rank%s%s%s%s",
             c.min_time, one, ms[0].cost.item_unit, many, ms[1].cost.item_unit,
             config->world_size, speedup, words, GS_SCALING_BENEFICIAL, *chosen,
             *chosen == 1 ? "" : "s",
             a.verdict == GS_VERDICT_INCONCLUSIVE || a.verdict == GS_VERDICT_SUSPECT
                 ? " (kept: the calibration cannot decide; "
                 : "",
             a.verdict == GS_VERDICT_INCONCLUSIVE || a.verdict == GS_VERDICT_SUSPECT ? a.why : "",
             a.verdict == GS_VERDICT_INCONCLUSIVE || a.verdict == GS_VERDICT_SUSPECT ? ")" : "");
  }
  gs_measurement_free(&ms[0]);
  gs_measurement_free(&ms[1]);
  return st;
}
