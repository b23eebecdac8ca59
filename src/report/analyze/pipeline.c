/* The pipelines of a report (mlp --pp; docs/report.md, "Pipeline"): the
 * transfers' own time apart from the stages' idle time, from the measured
 * send/recv cost of a coll sendrecv document of the same machine (host and
 * backend) at 2 ranks, so that the bubble is the idle time only; and the
 * bubble's 95% interval (core/stats' bootstrap over runs and steps,
 * docs/statistics.md, "Intervals of ratios"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/coll_model.h"
#include "core/json.h"
#include "core/stats.h"
#include "report/analyze/internal.h"

/* The document's environment.host, or "". */
static const char *host_of(const gs_report *r, size_t file) {
  return gs_json_string_member(gs_json_member(r->docs[file], "environment"), "host", "");
}

/* See report.h. */
int gs_report_sendrecv_curve(const gs_report *r, size_t file_of, const char *backend,
                             gs_coll_curve *out, const char **file) {
  const char *host = host_of(r, file_of);
  size_t n = 0, cap = 0;
  double *bytes = NULL, *secs = NULL;
  *file = NULL;
  for (size_t si = 0; si < r->n_series; si++) {
    const gs_report_series *s = &r->series[si];
    if (strcmp(s->backend, backend) != 0) continue;
    for (size_t ri = 0; ri < s->n_rows; ri++) {
      const gs_report_row *row = &s->rows[ri];
      const gs_report_collective *c = &row->collective;
      if (!c->present || !c->op || strcmp(c->op, "sendrecv") != 0 || row->world_size != 2 ||
          strcmp(row->status, "ok") != 0 || strcmp(host_of(r, row->file), host) != 0)
        continue;
      const double t = isfinite(c->time) ? c->time : row->has_step ? row->step.mean : NAN;
      if (!(t > 0.0) || !(c->bytes > 0.0)) continue;
      if (n == cap) {
        cap = cap ? 2 * cap : 16;
        double *b = realloc(bytes, cap * sizeof *b);
        if (b) bytes = b;
        double *x = b ? realloc(secs, cap * sizeof *x) : NULL;
        if (!x) {
          free(bytes), free(secs);
          return 0;
        }
        secs = x;
      }
      bytes[n] = c->bytes;
      secs[n++] = t;
      *file = r->files[row->file];
    }
  }
  const int ok = n >= 2 && gs_coll_curve_build(bytes, secs, n, 2, out) == GS_OK;
  free(bytes), free(secs);
  return ok;
}

/* The stage transfers of `p` per step at the curve's cost: each stage's
 * receives (a micro-batch's activations from the stage before and its
 * gradients from the one after), and on the CPU backend its sends too
 * (a host send copies inside the exposed wait; a CUDA send overlaps on
 * its own stream). 0 when a boundary lies outside the measured sizes. */
static int stage_transfers(gs_report_pipeline *p, const gs_coll_curve *c, int sends) {
  double t[GS_REPORT_MAX_STAGES];
  for (int b = 0; b + 1 < p->stages; b++)
    if (!gs_coll_curve_seconds(c, p->boundary_bytes[b], &t[b])) return 0;
  for (int s = 0; s < p->stages; s++) {
    double per = 0.0;
    if (s > 0) per += t[s - 1];
    if (s + 1 < p->stages) per += t[s];
    p->transfer[s] = (sends ? 2.0 : 1.0) * p->micro * per;
  }
  return 1;
}

/* The bubble of `p` from its per-step sums less `transfer` (seconds per
 * step over the stages), with its interval. */
static void bubble_of(gs_report_pipeline *p, double transfer) {
  size_t total = 0;
  for (size_t r = 0; r < p->n_runs; r++) total += p->run_steps[r];
  double idle = 0.0, busy = 0.0;
  for (size_t i = 0; i < total; i++) {
    p->idle_steps[i] -= transfer;
    idle += p->idle_steps[i];
    busy += p->busy_steps[i];
  }
  if (total > 0 && busy > 0.0) p->bubble = idle / busy;
  gs_stats_group a[64], b[64];
  size_t groups = 0, at = 0;
  for (size_t r = 0; r < p->n_runs; r++) {
    if (groups < 64) {
      a[groups] = (gs_stats_group){p->idle_steps + at, p->run_steps[r]};
      b[groups++] = (gs_stats_group){p->busy_steps + at, p->run_steps[r]};
    }
    at += p->run_steps[r];
  }
  gs_stats_ratio_interval(a, groups, b, groups, &p->bubble_low, &p->bubble_high);
}

gs_status gs_report_pipelines(gs_report *r) {
  for (size_t si = 0; si < r->n_series; si++) {
    const gs_report_series *s = &r->series[si];
    for (size_t ri = 0; ri < s->n_rows; ri++) {
      gs_report_row *row = &s->rows[ri];
      gs_report_pipeline *p = &row->pipeline;
      if (!p->present) continue;
      gs_coll_curve c;
      const char *file = NULL;
      double transfer = 0.0;
      if (gs_report_sendrecv_curve(r, row->file, s->backend, &c, &file)) {
        if (stage_transfers(p, &c, strcmp(s->backend, "cpu") == 0)) {
          p->transfer_source = file;
          for (int k = 0; k < p->stages; k++) transfer += p->transfer[k];
        }
        gs_coll_curve_free(&c);
      }
      bubble_of(p, transfer);
    }
  }
  return GS_OK;
}
