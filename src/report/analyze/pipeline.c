/* The pipelines of a report (mlp --pp, llm --pp; docs/report.md,
 * "Pipeline"): the transfers' own time apart from the stages' idle time,
 * from the measured send/recv cost of a coll sendrecv document of the same
 * machine (host and backend) at 2 ranks, so that the bubble is the idle
 * time only; and the bubble, the stage imbalance, their 95% intervals and
 * the bubble's verdict against (p-1)/m by core/bubble (the paired
 * bootstrap over runs and samples, docs/statistics.md, "Intervals of
 * ratios"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/bubble.h"
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

/* The measured time of one message of `bytes` on curve `c`: a size below
 * the smallest measured costs that size's time (the latency floor, an
 * upper bound); 0 above the largest. */
static int message_seconds(const gs_coll_curve *c, double bytes, double *t) {
  if (c->n > 0 && bytes > 0.0 && bytes < c->bytes[0]) bytes = c->bytes[0];
  return gs_coll_curve_seconds(c, bytes, t);
}

/* mlp: the stage transfers of `p` per step at the curve's cost: each
 * stage's receives (a micro-batch's activations from the stage before and
 * its gradients from the one after), and on the CPU backend its sends too
 * (a host send copies inside the exposed wait; a CUDA send overlaps on
 * its own stream); the same every step. 0 when a boundary lies outside
 * the measured sizes. */
static int mlp_transfers(gs_report_pipeline *p, const gs_coll_curve *c, int sends, double *per) {
  double t[GS_REPORT_MAX_STAGES];
  for (int b = 0; b + 1 < p->stages; b++)
    if (!gs_coll_curve_seconds(c, p->boundary_bytes[b], &t[b])) return 0;
  for (int s = 0; s < p->stages; s++) {
    double x = 0.0;
    if (s > 0) x += t[s - 1];
    if (s + 1 < p->stages) x += t[s];
    p->transfer[s] = (sends ? 2.0 : 1.0) * p->micro * x;
  }
  for (size_t i = 0; i < p->n_samples; i++)
    for (int s = 0; s < p->stages; s++) per[i * p->stages + s] = p->transfer[s];
  return 1;
}

/* llm: per sample (a block of calls) and stage, its transfers at the
 * curve's cost. Link j < P - 1 carries the residual stream from stage j to
 * j + 1 (the sample's rows over its micro-batches, row_bytes each), link
 * P - 1 the tokens (4 bytes a sequence) from the last stage back to the
 * first, one message per micro-batch; a stage receives over the link
 * before it and, on the CPU backend, its sends copy over the link after
 * it inside its idle time. 0 when a sample's sizes are unknown or above
 * the measured sizes. */
static int llm_transfers(gs_report_pipeline *p, const gs_coll_curve *c, int sends, double *per) {
  const int P = p->stages;
  double calls = 0.0, sum[GS_REPORT_MAX_STAGES] = {0};
  for (size_t i = 0; i < p->n_samples; i++) {
    const double g = p->sample_groups[i];
    if (!(g > 0.0)) return 0;
    double link[GS_REPORT_MAX_STAGES];
    for (int j = 0; j < P; j++) {
      const double bytes = j + 1 < P ? p->sample_rows[i] / g * p->row_bytes
                                     : 4.0 * p->sample_sequences[i] / g;
      if (!isfinite(bytes) || !message_seconds(c, bytes, &link[j])) return 0;
      link[j] *= g;
    }
    for (int s = 0; s < P; s++) {
      const double x = link[(s + P - 1) % P] + (sends ? link[s] : 0.0);
      per[i * P + s] = x;
      sum[s] += x;
    }
    calls += p->sample_calls[i];
  }
  if (!(calls > 0.0)) return 0;
  for (int s = 0; s < P; s++) p->transfer[s] = sum[s] / calls;
  return 1;
}

/* The bubble and the imbalance of `p` with their intervals by core/bubble,
 * from its samples less the transfers `per` (per sample and stage; NULL:
 * none separated). */
static gs_status bubble_of(gs_report_pipeline *p, const double *per) {
  const size_t n = p->n_samples * (size_t)p->stages;
  double *idle = malloc((n ? n : 1) * sizeof *idle);
  if (!idle) return gs_error(GS_ERR_NOMEM, "out of memory for a pipeline's bubble");
  for (size_t i = 0; i < n; i++) idle[i] = p->stage_idle[i] - (per ? per[i] : 0.0);
  const gs_bubble_samples in = {p->stages, p->micro, p->n_runs, p->run_samples, p->stage_busy,
                                idle};
  gs_status st = gs_bubble_compute(&in, &p->bubble);
  free(idle);
  return st;
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
      double *per = NULL;
      if (gs_report_sendrecv_curve(r, row->file, s->backend, &c, &file)) {
        per = malloc((p->n_samples * (size_t)p->stages + 1) * sizeof *per);
        const int sends = strcmp(s->backend, "cpu") == 0;
        if (per && (p->sample_calls ? llm_transfers(p, &c, sends, per)
                                    : mlp_transfers(p, &c, sends, per)))
          p->transfer_source = file;
        else
          free(per), per = NULL;
        for (int k = 0; !per && k < p->stages; k++) p->transfer[k] = NAN;
        gs_coll_curve_free(&c);
      }
      gs_status st = bubble_of(p, per);
      free(per);
      if (st != GS_OK) return st;
    }
  }
  return GS_OK;
}
