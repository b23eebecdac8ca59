/* Even and proportional splits of work units, and the calibration run that
 * measures each rank's speed for the proportional one. */
#include "runner/split.h"

#include <math.h>
#include <stdlib.h>

#include "core/check.h"
#include "core/checked.h"
#include "core/stats.h"

gs_status gs_split_check(const gs_workload *w, const void *opts, const gs_run_config *c) {
  if (!w->work_units) return GS_OK;
  const uint64_t units = w->work_units(opts);
  const uint64_t n = c->world_size > 0 ? (uint64_t)c->world_size : 1;
  const int weak = c->scaling == GS_SCALING_WEAK;
  if (weak && (c->split_proportional || c->unit_counts))
    return gs_error(GS_ERR_USAGE,
                    "--split proportional applies to strong scaling only (--scaling weak gives "
                    "every rank %llu %s of its own)",
                    (unsigned long long)units, w->unit_name);
  if (!weak && units < n)
    return gs_error(GS_ERR_USAGE,
                    "cannot split %llu %s over %llu ranks: give %s %llu or more, fewer ranks "
                    "(--ranks/--gpus), or --scaling weak",
                    (unsigned long long)units, w->unit_name, (unsigned long long)n,
                    w->unit_option ? w->unit_option : w->unit_name, (unsigned long long)n);
  uint64_t total = units;
  if (weak && gs_mul_u64_overflows(units, n, &total))
    return gs_error(GS_ERR_USAGE, "--scaling weak: %llu ranks x %s %llu overflows 64 bits",
                    (unsigned long long)n, w->unit_option ? w->unit_option : w->unit_name,
                    (unsigned long long)units);
  // The cost is linear in the units beyond a fixed part, so one unit's cost
  // times the total bounds the whole problem's.
  gs_cost one;
  w->cost(opts, 1, &one);
  uint64_t product;
  if (gs_mul_u64_overflows(one.items, total, &product) ||
      gs_mul_u64_overflows(one.bytes, total, &product) ||
      gs_mul_u64_overflows(one.flops, total, &product))
    return gs_error(GS_ERR_USAGE,
                    "%llu %s at %llu ranks: the step's items, bytes or flops overflow 64 bits "
                    "(fewer %s or ranks)",
                    (unsigned long long)total, w->unit_name, (unsigned long long)n,
                    w->unit_option ? w->unit_option : w->unit_name);
  return GS_OK;
}

gs_status gs_split_plan(const gs_workload *w, const void *opts, const gs_run_config *c,
                        uint64_t *begin, uint64_t *count, uint64_t *total) {
  GS_TRY(gs_split_check(w, opts, c));
  const uint64_t units = w->work_units(opts);
  const uint64_t n = (uint64_t)c->world_size;
  if (c->scaling == GS_SCALING_WEAK) {
    for (uint64_t r = 0; r < n; r++) {
      begin[r] = r * units;
      count[r] = units;
    }
    *total = units * n;
    return GS_OK;
  }
  if (c->unit_counts) {
    uint64_t sum = 0;
    for (uint64_t r = 0; r < n; r++) {
      if (c->unit_counts[r] < 1 || c->unit_counts[r] > units)
        GS_BUG("rank %llu is given %llu of %llu %s", (unsigned long long)r,
               (unsigned long long)c->unit_counts[r], (unsigned long long)units, w->unit_name);
      count[r] = c->unit_counts[r];
      sum += c->unit_counts[r];
    }
    if (sum != units)
      GS_BUG("the ranks' %s add up to %llu, not %llu", w->unit_name, (unsigned long long)sum,
             (unsigned long long)units);
  } else {
    gs_split_even(units, c->world_size, count);
  }
  uint64_t at = 0;
  for (uint64_t r = 0; r < n; r++) {
    begin[r] = at;
    at += count[r];
  }
  *total = units;
  return GS_OK;
}

void gs_split_even(uint64_t units, int ranks, uint64_t *counts) {
  const uint64_t n = (uint64_t)ranks;
  for (uint64_t r = 0; r < n; r++) counts[r] = units / n + (r < units % n ? 1 : 0);
}

gs_status gs_split_proportional(uint64_t units, int ranks, const double *rates,
                                uint64_t *counts) {
  if (units < (uint64_t)ranks)
    return gs_error(GS_ERR_USAGE, "cannot split %llu units over %d ranks",
                    (unsigned long long)units, ranks);
  for (int r = 0; r < ranks; r++) {
    if (!(rates[r] > 0.0) || !isfinite(rates[r]))
      GS_BUG("rank %d has a calibrated rate of %g", r, rates[r]);
    counts[r] = 1;
  }
  for (uint64_t given = (uint64_t)ranks; given < units; given++) {
    int best = 0;
    for (int r = 1; r < ranks; r++)
      if ((double)(counts[r] + 1) / rates[r] < (double)(counts[best] + 1) / rates[best]) best = r;
    counts[best]++;
  }
  return GS_OK;
}

gs_status gs_split_calibrate(const gs_workload *workload, const void *opts,
                             const gs_run_config *config, uint64_t iters, double *rates) {
  gs_run_config c = *config;
  c.unit_counts = NULL;
  c.warmup = 2;
  c.iters = iters;
  c.runs = 1;
  c.show_progress = 0;
  c.start_gate = NULL;
  gs_measurement m;
  gs_status status = gs_runner_measure(workload, opts, &c, &m);
  for (int k = 0; status == GS_OK && k < c.world_size; k++) {
    const gs_rank_record *rec = &m.runs[0].ranks[k];
    const double *samples = rec->device_seconds ? rec->device_seconds : rec->wall_seconds;
    gs_stats st;
    status = gs_stats_compute(samples, rec->n_samples, &st);
    if (status == GS_OK && !(st.median > 0.0))
      status = gs_error(GS_ERR_UNSUPPORTED, "calibration of rank %d measured no time", k);
    if (status == GS_OK) rates[k] = (double)rec->items_per_step / st.median;
  }
  if (status != GS_OK && m.error[0])
    status = gs_error(status, "calibration failed: %s", m.error);
  gs_measurement_free(&m);
  return status;
}
