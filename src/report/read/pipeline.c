/* A pipeline's stages in a measurement: each stage's busy and idle time per
 * step from its ranks' samples (mlp --pp) or per call from its replicas'
 * pipeline_samples (llm --pp), the bytes that cross the stage boundaries,
 * and the per-sample stage times that the bubble and the imbalance, and
 * their intervals, come from (report/analyze/pipeline.c separates the
 * transfers and calls core/bubble). Definitions in docs/report.md,
 * "Pipeline". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/json.h"
#include "report/read/read.h"

/* Iteration i of one rank record: its step time (device, else wall) and
 * its busy time (the step less its exposed communication); 0 when either
 * is missing or not finite. */
static int rank_step(const cJSON *rank, int i, double *step, double *busy) {
  const cJSON *dev = gs_json_member(rank, "device_seconds");
  if (!cJSON_IsArray(dev)) dev = gs_json_member(rank, "wall_seconds");
  const cJSON *comm = gs_json_member(rank, "comm_seconds");
  const double t = gs_json_number_or_nan(cJSON_GetArrayItem(dev, i)),
               w = gs_json_number_or_nan(cJSON_GetArrayItem(comm, i));
  if (!isfinite(t) || !isfinite(w)) return 0;
  *step = t;
  *busy = t - w;
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

/* See read.h. */
void gs_report_pipeline_free(gs_report_pipeline *p) {
  free(p->run_samples);
  free(p->stage_busy);
  free(p->stage_idle);
  free(p->sample_calls);
  free(p->sample_rows);
  free(p->sample_groups);
  free(p->sample_sequences);
  p->run_samples = NULL;
  p->stage_busy = p->stage_idle = NULL;
  p->sample_calls = p->sample_rows = p->sample_groups = p->sample_sequences = NULL;
}

/* Room for n samples of P stages (and the llm members when `llm`). */
static gs_status samples_alloc(gs_report_pipeline *p, size_t n_runs, size_t n, int P, int llm) {
  p->run_samples = calloc(n_runs + 1, sizeof *p->run_samples);
  p->stage_busy = malloc((n + 1) * (size_t)P * sizeof *p->stage_busy);
  p->stage_idle = malloc((n + 1) * (size_t)P * sizeof *p->stage_idle);
  int ok = p->run_samples && p->stage_busy && p->stage_idle;
  if (llm) {
    p->sample_calls = malloc((n + 1) * sizeof *p->sample_calls);
    p->sample_rows = malloc((n + 1) * sizeof *p->sample_rows);
    p->sample_groups = malloc((n + 1) * sizeof *p->sample_groups);
    p->sample_sequences = malloc((n + 1) * sizeof *p->sample_sequences);
    ok = ok && p->sample_calls && p->sample_rows && p->sample_groups && p->sample_sequences;
  }
  if (!ok) {
    gs_report_pipeline_free(p);
    return gs_error(GS_ERR_NOMEM, "out of memory for a pipeline's samples");
  }
  return GS_OK;
}

/* The figures every pipeline has once its `used` samples of `n_runs` runs
 * are in: its shape and the stages' means per unit (over `units`: steps,
 * or calls); the bubble and the imbalance come later, from the samples
 * less the transfers (report/analyze/pipeline.c). 0 when a stage has no
 * time. */
static int finish(gs_report_pipeline *p, size_t n_runs, size_t used, int P, int micro,
                  int replicas, const char *schedule, const char *unit, double units) {
  p->n_runs = n_runs;
  p->n_samples = used;
  p->stages = P;
  p->micro = micro;
  p->replicas = replicas > 0 ? replicas : 1;
  p->schedule = schedule;
  p->unit = unit;
  for (int s = 0; s < P; s++) {
    double b = 0.0, w = 0.0;
    for (size_t i = 0; i < p->n_samples; i++)
      b += p->stage_busy[i * P + s], w += p->stage_idle[i * P + s];
    if (!(units > 0.0) || !(b > 0.0)) return 0;
    p->busy[s] = b / units;
    p->idle[s] = w / units;
    p->transfer[s] = NAN;
  }
  return 1;
}

/* Element i of array member `name` of `o`, or NaN. */
static double item(const cJSON *o, const char *name, int i) {
  return gs_json_number_or_nan(cJSON_GetArrayItem(gs_json_member(o, name), i));
}

/* The stages and micro-batches of a pipeline member (llm.pipeline, or
 * the workload options' pipeline); 0 when it is not a pipeline of 2 to
 * GS_REPORT_MAX_STAGES stages and 1 or more micro-batches. */
static int stage_counts(const cJSON *pl, int *stages, int *micro) {
  const double s = gs_json_number_or_nan(gs_json_member(pl, "stages"));
  const double m = gs_json_number_or_nan(gs_json_member(pl, "micro_batches"));
  if (!isfinite(s) || s < 2 || s > GS_REPORT_MAX_STAGES || !isfinite(m) || m < 1) return 0;
  *stages = (int)s;
  *micro = (int)m;
  return 1;
}

/* An llm measurement's pipeline: llm.pipeline's stages and micro-batches,
 * each run's replicas' pipeline_samples (a replica without them adds
 * nothing). */
static gs_status llm_read(const cJSON *doc, const cJSON *m, const cJSON *pl,
                          gs_report_pipeline *p) {
  int P = 0, micro = 0;
  if (!stage_counts(pl, &P, &micro)) return GS_OK;
  const cJSON *runs = gs_json_member(m, "runs");
  size_t total = 0, n_runs = 0;
  int replicas = 0;
  for (const cJSON *run = runs ? runs->child : NULL; run; run = run->next, n_runs++) {
    const cJSON *ranks = gs_json_member(run, "ranks");
    if (n_runs == 0) replicas = cJSON_GetArraySize(ranks);
    for (const cJSON *r = ranks ? ranks->child : NULL; r; r = r->next)
      total += (size_t)cJSON_GetArraySize(gs_json_member(gs_json_member(r, "pipeline_samples"),
                                                          "seconds"));
  }
  GS_TRY(samples_alloc(p, n_runs, total, P, 1));
  size_t used = 0, ri = 0;
  double calls = 0.0;
  for (const cJSON *run = runs ? runs->child : NULL; run; run = run->next, ri++) {
    const cJSON *ranks = gs_json_member(run, "ranks");
    for (const cJSON *r = ranks ? ranks->child : NULL; r; r = r->next) {
      const cJSON *ps = gs_json_member(r, "pipeline_samples");
      const cJSON *secs = gs_json_member(ps, "seconds"), *busy = gs_json_member(ps, "stage_busy_seconds");
      if (cJSON_GetArraySize(busy) != P) continue;
      const int n = cJSON_GetArraySize(secs);
      for (int i = 0; i < n && used < total; i++) {
        const double t = gs_json_number_or_nan(cJSON_GetArrayItem(secs, i));
        double *b = p->stage_busy + used * P, *w = p->stage_idle + used * P;
        int whole = isfinite(t);
        for (int s = 0; whole && s < P; s++) {
          b[s] = gs_json_number_or_nan(cJSON_GetArrayItem(cJSON_GetArrayItem(busy, s), i));
          w[s] = t - b[s];
          whole = isfinite(b[s]);
        }
        if (!whole) continue;
        p->sample_calls[used] = item(ps, "calls", i);
        p->sample_rows[used] = item(ps, "rows", i);
        p->sample_groups[used] = item(ps, "micro_batches", i);
        p->sample_sequences[used] = item(ps, "sequences", i);
        calls += p->sample_calls[used];
        used++;
        p->run_samples[ri]++;
      }
    }
  }
  if (!finish(p, n_runs, used, P, micro, replicas, "-", "call", calls)) return GS_OK;
  p->present = 1;
  const cJSON *options = gs_json_member(gs_json_member(doc, "config"), "workload_options");
  p->row_bytes = 4.0 * gs_json_number_or_nan(gs_json_member(options, "hidden"));
  // The residual stream across the P - 1 boundaries and the tokens (4
  // bytes a sequence) back to the first stage, per call and replica.
  double rows = 0.0, seqs = 0.0;
  for (size_t i = 0; i < used; i++) rows += p->sample_rows[i], seqs += p->sample_sequences[i];
  p->transfer_bytes = ((P - 1) * rows * p->row_bytes + 4.0 * seqs) / calls;
  for (int s = 0; s < GS_REPORT_MAX_STAGES; s++) p->boundary_bytes[s] = NAN;
  return GS_OK;
}

gs_status gs_report_pipeline_read(const cJSON *doc, const cJSON *m, gs_report_row *row) {
  gs_report_pipeline *p = &row->pipeline;
  memset(p, 0, sizeof *p);
  p->row_bytes = NAN;
  const cJSON *pl = gs_json_member(gs_json_member(m, "llm"), "pipeline");
  if (pl) return llm_read(doc, m, pl, p);
  const cJSON *options = gs_json_member(m, "workload_options");
  if (!options) options = gs_json_member(gs_json_member(doc, "config"), "workload_options");
  const cJSON *pp = gs_json_member(options, "pipeline");
  int P = 0, micro = 0;
  if (!stage_counts(pp, &P, &micro)) return GS_OK;
  const cJSON *runs = gs_json_member(m, "runs");
  size_t total = 0, n_runs = 0;
  for (const cJSON *run = runs ? runs->child : NULL; run; run = run->next, n_runs++) {
    const cJSON *ranks = gs_json_member(run, "ranks");
    const cJSON *r0 = ranks ? ranks->child : NULL;
    total += (size_t)cJSON_GetArraySize(gs_json_member(r0, "comm_seconds"));
  }
  GS_TRY(samples_alloc(p, n_runs, total, P, 0));
  int world = 0;
  size_t used = 0, ri = 0;
  for (const cJSON *run = runs ? runs->child : NULL; run; run = run->next, ri++) {
    const cJSON *ranks = gs_json_member(run, "ranks");
    const int nr = cJSON_GetArraySize(ranks);
    world = nr > world ? nr : world;
    const int steps = cJSON_GetArraySize(gs_json_member(ranks ? ranks->child : NULL, "comm_seconds"));
    // A step counts when every rank has it. The ranks start each step
    // together (the runner's lockstep), so the pipeline's step lasts as
    // long as its longest rank, and a stage is idle for that time less
    // its busy time: its own step window alone would leave out the wait
    // for the stage before it to finish the step (the last stage's wait
    // for the first stage's last backward). The stage times are the mean
    // over the replicas.
    for (int i = 0; i < steps && used < total; i++) {
      double b = 0.0, t = 0.0, longest = 0.0;
      int k = 0, whole = 1;
      double *sb = p->stage_busy + used * P, *si = p->stage_idle + used * P;
      for (int s = 0; s < P; s++) sb[s] = si[s] = 0.0;
      for (const cJSON *r = ranks->child; r; r = r->next, k++) {
        if (!rank_step(r, i, &t, &b)) {
          whole = 0;
          break;
        }
        sb[k % P] += b;
        longest = t > longest ? t : longest;
      }
      if (!whole || k < P) continue;
      const double replicas = (double)(k / P);
      for (int s = 0; s < P; s++) {
        sb[s] /= replicas;
        si[s] = longest - sb[s];
      }
      used++;
      p->run_samples[ri]++;
    }
  }
  if (!finish(p, n_runs, used, P, micro, world / P, gs_json_string_member(pp, "schedule", "?"),
              "step", (double)used))
    return GS_OK;
  p->present = 1;
  for (int s = 0; s < GS_REPORT_MAX_STAGES; s++) p->boundary_bytes[s] = NAN;
  const cJSON *first_run = runs ? runs->child : NULL;
  p->transfer_bytes = boundaries(options, pp, gs_json_member(first_run, "ranks"), P, p->micro,
                                 p->boundary_bytes);
  return GS_OK;
}
