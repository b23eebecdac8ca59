/* Even and proportional splits of work units, and the calibration run that
 * measures each rank's speed for the proportional one. */
#include "bench/split.h"

#include <math.h>
#include <stdlib.h>

#include "core/check.h"
#include "core/stats.h"

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
      return gs_error(GS_ERR_INTERNAL, "rank %d has a calibrated rate of %g", r, rates[r]);
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
      status = gs_error(GS_ERR_INTERNAL, "calibration of rank %d measured no time", k);
    if (status == GS_OK) rates[k] = (double)rec->items_per_step / st.median;
  }
  if (status != GS_OK && m.error[0])
    status = gs_error(status, "calibration failed: %s", m.error);
  gs_measurement_free(&m);
  return status;
}
