/* What a measurement says once its rank records are filled: the
 * failure of a failed one (its "failure" member), step times (slowest rank per
 * iteration), the combined verification, the aggregate statistics, and
 * speedup/efficiency against the 1-rank measurement. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_private.h"
#include "core/check.h"
#include "core/stats.h"


void gs_runner_name_failure(gs_measurement *m) {
  const gs_rank_record *failed = NULL;
  for (size_t r = 0; r < m->n_runs && !failed; r++)
    for (size_t k = 0; k < m->runs[r].n_ranks && !failed; k++) {
      const gs_rank_record *rec = &m->runs[r].ranks[k];
      // A timeout or a signal is what a waiting rank sees, not its fault.
      if (rec->status != GS_OK && rec->status != GS_ERR_ABORTED &&
          rec->status != GS_ERR_INTERRUPTED && rec->status != GS_ERR_TIMEOUT)
        failed = rec;
    }
  gs_failure_record *f = &m->failure;
  memset(f, 0, sizeof *f);
  f->present = 1;
  f->rank = failed ? failed->rank : -1;
  if (failed) {
    snprintf(f->host, sizeof f->host, "%s", failed->host);
    f->last_completed_step = failed->steps_completed;
  }
  f->status = failed ? failed->status : m->status;
  snprintf(f->reason, sizeof f->reason, "%s", failed ? failed->error : m->error);
}

/* Step time of each iteration = the slowest rank's time for it, over the
 * iterations that every rank completed. */
static gs_status derive_steps(gs_run_record *run, int use_device) {
  size_t n = SIZE_MAX;
  for (size_t k = 0; k < run->n_ranks; k++)
    if (run->ranks[k].n_samples < n) n = run->ranks[k].n_samples;
  if (n == SIZE_MAX || n == 0) return GS_OK;
  run->step_seconds = malloc(n * sizeof *run->step_seconds);
  if (!run->step_seconds) return gs_error(GS_ERR_NOMEM, "cannot allocate step times");
  for (size_t i = 0; i < n; i++) {
    double slowest = 0.0;
    for (size_t k = 0; k < run->n_ranks; k++) {
      const gs_rank_record *rec = &run->ranks[k];
      double t = use_device ? rec->device_seconds[i] : rec->wall_seconds[i];
      if (t > slowest) slowest = t;
    }
    run->step_seconds[i] = slowest;
  }
  run->n_steps = n;
  return GS_OK;
}

static void combine_verification(gs_measurement *m) {
  gs_verification *v = &m->verification;
  memset(v, 0, sizeof *v);
  v->status = GS_VERIFY_SKIPPED;
  snprintf(v->detail, sizeof v->detail, "no rank verified a result");
  size_t passed = 0, total = 0;
  for (size_t r = 0; r < m->n_runs; r++) {
    for (size_t k = 0; k < m->runs[r].n_ranks; k++) {
      const gs_verification *rv = &m->runs[r].ranks[k].verification;
      if (rv->max_abs_error > v->max_abs_error) v->max_abs_error = rv->max_abs_error;
      if (rv->tolerance > v->tolerance) v->tolerance = rv->tolerance;
      v->mismatches += rv->mismatches;
      if (rv->status == GS_VERIFY_SKIPPED) continue;
      total++;
      if (rv->status == GS_VERIFY_PASSED) {
        passed++;
      } else if (v->status != GS_VERIFY_FAILED) {
        v->status = GS_VERIFY_FAILED;
        snprintf(v->detail, sizeof v->detail, "run %zu rank %zu: %s", r, k, rv->detail);
      }
    }
  }
  if (v->status != GS_VERIFY_FAILED && total > 0) {
    v->status = GS_VERIFY_PASSED;
    snprintf(v->detail, sizeof v->detail, "%zu of %zu rank results verified; rank 0: %s",
             passed, total, m->runs[0].ranks[0].verification.detail);
  }
}

static gs_status aggregate(gs_measurement *m) {
  size_t total = 0;
  for (size_t r = 0; r < m->n_runs; r++) total += m->runs[r].n_steps;
  if (total == 0) return GS_OK;
  double *all = malloc(total * sizeof *all);
  if (!all) return gs_error(GS_ERR_NOMEM, "cannot allocate %zu step times", total);
  size_t at = 0;
  for (size_t r = 0; r < m->n_runs; r++) {
    if (m->runs[r].n_steps == 0) continue;  // a failed run: no steps, no array
    memcpy(all + at, m->runs[r].step_seconds, m->runs[r].n_steps * sizeof *all);
    at += m->runs[r].n_steps;
  }
  gs_status status = gs_stats_compute(all, total, &m->aggregate.step);
  free(all);
  GS_TRY(status);
  gs_aggregate *a = &m->aggregate;
  a->throughput = a->step.mean > 0.0 ? (double)m->cost.items / a->step.mean : 0.0;
  double slowest_first = -1.0;
  for (size_t k = 0; k < m->runs[0].n_ranks; k++)
    if (m->runs[0].ranks[k].first_iteration_seconds > slowest_first)
      slowest_first = m->runs[0].ranks[k].first_iteration_seconds;
  a->cold_start_ratio = slowest_first > 0.0 ? gs_stats_cold_start_ratio(slowest_first, a->step.median) : 0.0;
  return GS_OK;
}

gs_status gs_runner_summarize(gs_measurement *m, int use_device) {
  gs_status status = GS_OK;
  // Arrival times need a collective of every rank (core/arrival.h).
  if (m->arrival && !gs_arrival_recorded(m->arrival)) {
    gs_arrival_free(m->arrival);
    m->arrival = NULL;
  }
  for (size_t r = 0; r < m->n_runs; r++) {
    gs_status s = derive_steps(&m->runs[r], use_device);
    if (s != GS_OK && status == GS_OK) status = s;
  }
  combine_verification(m);
  gs_status s = aggregate(m);
  return status != GS_OK ? status : s;
}

gs_status gs_runner_merge(gs_measurement *into, gs_measurement *from) {
  const size_t n = into->n_runs + from->n_runs;
  gs_run_record *runs = n > 0 ? realloc(into->runs, n * sizeof *runs) : into->runs;
  if (n > 0 && !runs) {
    gs_measurement_free(from);
    return gs_error(GS_ERR_NOMEM, "cannot merge %zu runs", n);
  }
  if (from->n_runs > 0) memcpy(runs + into->n_runs, from->runs, from->n_runs * sizeof *runs);
  into->runs = runs;
  into->n_runs = n;
  free(from->runs);
  from->runs = NULL;
  from->n_runs = 0;
  // Arrival times go on from the runs before (core/arrival.h).
  gs_status arrivals = GS_OK;
  if (from->arrival && into->arrival) arrivals = gs_arrival_merge(into->arrival, from->arrival);
  if (from->arrival && !into->arrival) {
    into->arrival = from->arrival;
    from->arrival = NULL;
  }
  // The first failure of the measurement stays the one it reports.
  if (into->status == GS_OK && from->status != GS_OK) {
    into->status = from->status;
    snprintf(into->error, sizeof into->error, "%s", from->error);
    into->failure = from->failure;
  }
  gs_measurement_free(from);
  combine_verification(into);
  if (arrivals != GS_OK) return arrivals;
  return aggregate(into);
}

void gs_runner_relate(gs_measurement *measurements, size_t count) {
  for (size_t i = 0; i < count; i++) {
    gs_measurement *m = &measurements[i];
    m->aggregate.speedup = 0.0;
    m->aggregate.efficiency = 0.0;
    // A failed measurement's timings are kept, but never compared.
    if (m->status != GS_OK) continue;
    double base = NAN;
    for (size_t j = 0; j < count && isnan(base); j++) {
      const gs_measurement *b = &measurements[j];
      const gs_scaling_point p = gs_scaling_point_of(b, NULL);
      if (strcmp(b->workload, m->workload) == 0 && gs_scaling_baseline(&p, 1) == 0)
        base = p.throughput;
    }
    const double speedup = gs_scaling_speedup(base, m->aggregate.throughput);
    if (!isfinite(speedup)) continue;
    m->aggregate.speedup = speedup;
    m->aggregate.efficiency = gs_scaling_efficiency(speedup, m->world_size);
  }
}
