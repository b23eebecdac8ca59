/* A pipeline's stages in a measurement (mlp --pp): each stage's busy and
 * idle time per step from its ranks' samples, the measured bubble beside
 * the formula (p-1)/m, the stage imbalance and the bytes that cross the
 * stage boundaries. Definitions in docs/report.md, "Pipeline". */
#include <math.h>
#include <string.h>

#include "core/json.h"
#include "report/read/read.h"

/* Mean over the iterations of one rank record of device - comm (busy) and
 * comm (idle), added to busy/idle with *n counting the iterations. */
static void add_rank(const cJSON *rank, double *busy, double *idle, double *n) {
  const cJSON *dev = gs_json_member(rank, "device_seconds");
  if (!cJSON_IsArray(dev)) dev = gs_json_member(rank, "wall_seconds");
  const cJSON *comm = gs_json_member(rank, "comm_seconds");
  if (!cJSON_IsArray(dev) || !cJSON_IsArray(comm)) return;
  for (const cJSON *d = dev->child, *c = comm->child; d && c; d = d->next, c = c->next) {
    const double t = gs_json_number_or_nan(d), w = gs_json_number_or_nan(c);
    if (!isfinite(t) || !isfinite(w)) continue;
    *busy += t - w;
    *idle += w;
    *n += 1.0;
  }
}

/* Activations and their gradients across every stage boundary of a
 * replica per step: 2 x its samples x the sum of the boundary widths x 4
 * bytes. The replica's samples are its ranks' items per step (replica 0:
 * the first `stages` ranks); widths and boundaries come from the options. */
static double transfer_bytes(const cJSON *options, const cJSON *pp, const cJSON *ranks,
                             int stages) {
  const cJSON *layers = gs_json_member(options, "layers");
  const cJSON *first = gs_json_member(pp, "stage_first_layers");
  double widths = 0.0, rows = 0.0;
  for (int s = 1; s < stages; s++) {
    const double layer = gs_json_number_or_nan(cJSON_GetArrayItem(first, s));
    widths += isfinite(layer) ? gs_json_number_or_nan(cJSON_GetArrayItem(layers, (int)layer)) : NAN;
  }
  int k = 0;
  for (const cJSON *r = ranks ? ranks->child : NULL; r && k < stages; r = r->next, k++)
    rows += gs_json_number_or_nan(gs_json_member(r, "items_per_step"));
  return k == stages ? 2.0 * rows * widths * 4.0 : NAN;
}

void gs_report_pipeline_read(const cJSON *doc, const cJSON *m, gs_report_row *row) {
  gs_report_pipeline *p = &row->pipeline;
  memset(p, 0, sizeof *p);
  const cJSON *options = gs_json_member(m, "workload_options");
  if (!options) options = gs_json_member(gs_json_member(doc, "config"), "workload_options");
  const cJSON *pp = gs_json_member(options, "pipeline");
  const double stages = gs_json_number_or_nan(gs_json_member(pp, "stages"));
  const double micro = gs_json_number_or_nan(gs_json_member(pp, "micro_batches"));
  if (!isfinite(stages) || stages < 2 || stages > GS_REPORT_MAX_STAGES || !isfinite(micro) ||
      micro < 1)
    return;
  const int P = (int)stages;
  double busy[GS_REPORT_MAX_STAGES] = {0}, idle[GS_REPORT_MAX_STAGES] = {0},
         n[GS_REPORT_MAX_STAGES] = {0};
  const cJSON *runs = gs_json_member(m, "runs");
  for (const cJSON *run = runs ? runs->child : NULL; run; run = run->next) {
    const cJSON *ranks = gs_json_member(run, "ranks");
    int k = 0;
    for (const cJSON *r = ranks ? ranks->child : NULL; r; r = r->next, k++)
      add_rank(r, &busy[k % P], &idle[k % P], &n[k % P]);
  }
  double busy_sum = 0.0, idle_sum = 0.0, slowest = 0.0;
  for (int s = 0; s < P; s++) {
    if (n[s] == 0.0) return;  // a stage without samples: nothing to say
    p->busy[s] = busy[s] / n[s];
    p->idle[s] = idle[s] / n[s];
    busy_sum += p->busy[s];
    idle_sum += p->idle[s];
    if (p->busy[s] > slowest) slowest = p->busy[s];
  }
  p->present = 1;
  p->stages = P;
  p->micro = (int)micro;
  p->schedule = gs_json_string_member(pp, "schedule", "?");
  p->bubble = busy_sum > 0.0 ? idle_sum / busy_sum : NAN;
  p->bubble_formula = (stages - 1.0) / micro;
  p->imbalance = busy_sum > 0.0 ? slowest / (busy_sum / P) : NAN;
  const cJSON *first_run = runs ? runs->child : NULL;
  p->transfer_bytes = transfer_bytes(options, pp, gs_json_member(first_run, "ranks"), P);
}
