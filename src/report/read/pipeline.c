/* A pipeline's stages in a measurement (mlp --pp): each stage's busy and
 * idle time per step from its ranks' samples, the measured bubble beside
 * the formula (p-1)/m, the stage imbalance, the bytes that cross the
 * stage boundaries, and the per-step sums that the bubble's interval
 * resamples (report/analyze/pipeline.c separates the transfers). Definitions
 * in docs/report.md, "Pipeline". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/stats.h"
#include "report/read/read.h"

/* Iteration i of one rank record: busy = device - comm and idle = comm;
 * 0 when either is missing or not finite. */
static int rank_step(const cJSON *rank, int i, double *busy, double *idle) {
  const cJSON *dev = gs_json_member(rank, "device_seconds");
  if (!cJSON_IsArray(dev)) dev = gs_json_member(rank, "wall_seconds");
  const cJSON *comm = gs_json_member(rank, "comm_seconds");
  const double t = gs_json_number_or_nan(cJSON_GetArrayItem(dev, i)),
               w = gs_json_number_or_nan(cJSON_GetArrayItem(comm, i));
  if (!isfinite(t) || !isfinite(w)) return 0;
  *busy = t - w;
  *idle = w;
  return 1;
}

/* One micro-batch's bytes across each stage boundary of replica 0 (its
 * first `stages` ranks' items per step split into `micro` micro-batches,
 * activations of the boundary layer's width, 4 bytes each or 2 under
 * bf16), and their sum over a
 * step both ways (activations and their gradients). */
static double boundaries(const cJSON *options, const cJSON *pp, const cJSON *ranks, int stages,
                         int micro, double *bytes) {
  const cJSON *layers = gs_json_member(options, "layers");
  // bf16 pipelines keep and send bfloat16 activations (mlp --precision bf16).
  const double elem = strcmp(gs_json_string_member(options, "precision", "fp32"), "bf16") ? 4.0 : 2.0;
  const cJSON *first = gs_json_member(pp, "stage_first_layers");
  double rows = 0.0, total = 0.0;
  int k = 0;
  for (const cJSON *r = ranks ? ranks->child : NULL; r && k < stages; r = r->next, k++)
    rows += gs_json_number_or_nan(gs_json_member(r, "items_per_step"));
  for (int s = 0; s + 1 < stages; s++) {
    const double layer = gs_json_number_or_nan(cJSON_GetArrayItem(first, s + 1));
    const double width =
        isfinite(layer) ? gs_json_number_or_nan(cJSON_GetArrayItem(layers, (int)layer)) : NAN;
    bytes[s] = k == stages ? rows / micro * width * elem : NAN;
    total += 2.0 * micro * bytes[s];
  }
  return total;
}

gs_status gs_report_pipeline_read(const cJSON *doc, const cJSON *m, gs_report_row *row) {
  gs_report_pipeline *p = &row->pipeline;
  memset(p, 0, sizeof *p);
  const cJSON *options = gs_json_member(m, "workload_options");
  if (!options) options = gs_json_member(gs_json_member(doc, "config"), "workload_options");
  const cJSON *pp = gs_json_member(options, "pipeline");
  const double stages = gs_json_number_or_nan(gs_json_member(pp, "stages"));
  const double micro = gs_json_number_or_nan(gs_json_member(pp, "micro_batches"));
  if (!isfinite(stages) || stages < 2 || stages > GS_REPORT_MAX_STAGES || !isfinite(micro) ||
      micro < 1)
    return GS_OK;
  const int P = (int)stages;
  const cJSON *runs = gs_json_member(m, "runs");
  size_t total = 0, n_runs = 0;
  for (const cJSON *run = runs ? runs->child : NULL; run; run = run->next, n_runs++) {
    const cJSON *ranks = gs_json_member(run, "ranks");
    const cJSON *r0 = ranks ? ranks->child : NULL;
    total += (size_t)cJSON_GetArraySize(gs_json_member(r0, "comm_seconds"));
  }
  p->run_steps = calloc(n_runs + 1, sizeof *p->run_steps);
  p->idle_steps = malloc((total + 1) * sizeof *p->idle_steps);
  p->busy_steps = malloc((total + 1) * sizeof *p->busy_steps);
  if (!p->run_steps || !p->idle_steps || !p->busy_steps)
    return gs_error(GS_ERR_NOMEM, "out of memory for a pipeline's steps");
  double busy[GS_REPORT_MAX_STAGES] = {0}, idle[GS_REPORT_MAX_STAGES] = {0},
         n[GS_REPORT_MAX_STAGES] = {0};
  int world = 0;
  size_t used = 0, ri = 0;
  for (const cJSON *run = runs ? runs->child : NULL; run; run = run->next, ri++) {
    const cJSON *ranks = gs_json_member(run, "ranks");
    const int nr = cJSON_GetArraySize(ranks);
    world = nr > world ? nr : world;
    const int steps = cJSON_GetArraySize(gs_json_member(ranks ? ranks->child : NULL, "comm_seconds"));
    // A step counts when every rank has it; the sums are per replica.
    for (int i = 0; i < steps && used < total; i++) {
      double sb = 0.0, si = 0.0, b = 0.0, w = 0.0;
      int k = 0, whole = 1;
      double stage_busy[GS_REPORT_MAX_STAGES] = {0}, stage_idle[GS_REPORT_MAX_STAGES] = {0};
      for (const cJSON *r = ranks->child; r; r = r->next, k++) {
        if (!rank_step(r, i, &b, &w)) {
          whole = 0;
          break;
        }
        stage_busy[k % P] += b;
        stage_idle[k % P] += w;
      }
      if (!whole || k < P) continue;
      const double replicas = (double)(k / P);
      for (int s = 0; s < P; s++) {
        busy[s] += stage_busy[s];
        idle[s] += stage_idle[s];
        n[s] += replicas;
        sb += stage_busy[s] / replicas;
        si += stage_idle[s] / replicas;
      }
      p->busy_steps[used] = sb;
      p->idle_steps[used++] = si;
      p->run_steps[ri]++;
    }
  }
  p->n_runs = n_runs;
  double busy_sum = 0.0, idle_sum = 0.0, slowest = 0.0;
  for (int s = 0; s < P; s++) {
    if (n[s] == 0.0) return GS_OK;  // a stage without samples: nothing to say
    p->busy[s] = busy[s] / n[s];
    p->idle[s] = idle[s] / n[s];
    p->transfer[s] = NAN;
    busy_sum += p->busy[s];
    idle_sum += p->idle[s];
    if (p->busy[s] > slowest) slowest = p->busy[s];
  }
  p->present = 1;
  p->stages = P;
  p->micro = (int)micro;
  p->replicas = world / P > 0 ? world / P : 1;
  p->schedule = gs_json_string_member(pp, "schedule", "?");
  p->bubble = busy_sum > 0.0 ? idle_sum / busy_sum : NAN;
  p->bubble_low = p->bubble_high = NAN;
  p->bubble_formula = (stages - 1.0) / micro;
  p->imbalance = busy_sum > 0.0 ? slowest / (busy_sum / P) : NAN;
  for (int s = 0; s < GS_REPORT_MAX_STAGES; s++) p->boundary_bytes[s] = NAN;
  const cJSON *first_run = runs ? runs->child : NULL;
  p->transfer_bytes = boundaries(options, pp, gs_json_member(first_run, "ranks"), P, p->micro,
                                 p->boundary_bytes);
  return GS_OK;
}
