/* Pipelines beyond the measured point (see predict.h, "Pipelines"): from
 * a measured mlp --pp row's stage times, the step at other stage and
 * micro-batch counts by the pipeline's own arithmetic, the transfers from
 * the measured send/recv curve within a node or the network's figures
 * between nodes, with the assumptions written beside the figures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/stats.h"
#include "report/predict/internal.h"

const char gs_predict_pipeline_assumption[] =
    "assumes the measured stages' busy time spread over P stages with the measured imbalance, "
    "each micro-batch's share of it 1/m (no cost per micro-batch), the steady state's "
    "transfers hidden behind the passes and the fill and drain paying one crossing of every "
    "boundary each way, boundaries of the measured bytes per sample, and stages placed in "
    "order on nodes of --gpus-per-node GPUs";

/* The micro-batch counts predicted at every stage count. */
static const int micro_counts[] = {1, 2, 4, 8, 16, 32};
#define MICRO_COUNTS (sizeof micro_counts / sizeof *micro_counts)

/* The seconds of one boundary crossing of `bytes`: the curve's within a
 * node (its fit's edge sizes outside it), alpha + bytes / bandwidth of the
 * network between nodes. */
static double crossing(const gs_predict_pipeline *q, const gs_predict_options *o, double bytes,
                       int inter) {
  if (inter) return o->inter_node_latency_seconds + bytes / o->inter_node_bytes_per_second;
  double t = NAN;
  if (q->curve.n && gs_coll_curve_seconds(&q->curve, bytes, &t)) return t;
  if (!q->curve.n) return 0.0;
  // Outside the measured sizes: the nearest measured size's time per byte.
  const size_t last = q->curve.n - 1;
  const size_t k = bytes < q->curve.bytes[0] ? 0 : last;
  return q->curve.seconds[k] * bytes / q->curve.bytes[k];
}

/* The step at `stages`, `micro` of `q` with its busy time as measured. */
static void step_at(const gs_predict_pipeline *q, const gs_predict_options *o, int gpus_per_node,
                    int stages, int micro, gs_predict_pipeline_point *out) {
  memset(out, 0, sizeof *out);
  out->stages = stages;
  out->micro = micro;
  const double c = q->busy_seconds / ((double)stages * micro);
  const double bytes = q->bytes_per_sample * q->samples / micro;
  double transfers = 0.0;
  for (int b = 0; b + 1 < stages; b++) {
    const int inter = gpus_per_node > 0 && (b + 1) % gpus_per_node == 0;
    out->inter_node_boundaries += inter;
    transfers += 2.0 * crossing(q, o, bytes, inter);
  }
  out->transfer_seconds = transfers;
  out->step_seconds = stages * c + (micro - 1) * q->imbalance * c + transfers;
  out->throughput = q->samples / out->step_seconds;
  const double busy = q->busy_seconds / stages;
  out->bubble = (out->step_seconds - busy) / busy;
  out->bubble_formula = (stages - 1.0) / micro;
}

/* See predict.h. */
void gs_predict_pipeline_at(const gs_predict_pipeline *q, const gs_predict_options *o,
                            int gpus_per_node, int stages, int micro,
                            gs_predict_pipeline_point *out) {
  step_at(q, o, gpus_per_node, stages, micro, out);
  out->step_low = out->step_high = out->throughput_low = out->throughput_high = NAN;
  out->bubble_low = out->bubble_high = NAN;
  if (!(q->busy_half >= 0.0) || q->busy_half >= 1.0) return;
  // The step grows with the busy time and the bubble shrinks with it
  // (the transfers do not scale): the bounds are its interval's ends.
  gs_predict_pipeline at = *q;
  gs_predict_pipeline_point lo, hi;
  at.busy_seconds = q->busy_seconds * (1.0 - q->busy_half);
  step_at(&at, o, gpus_per_node, stages, micro, &lo);
  at.busy_seconds = q->busy_seconds * (1.0 + q->busy_half);
  step_at(&at, o, gpus_per_node, stages, micro, &hi);
  out->step_low = lo.step_seconds;
  out->step_high = hi.step_seconds;
  out->throughput_low = hi.throughput;
  out->throughput_high = lo.throughput;
  out->bubble_low = hi.bubble;
  out->bubble_high = lo.bubble;
}

/* The measured pipeline of row `row` into *q; 0 when it has none. */
static int measured_of(const gs_report *r, const gs_report_series *s, const gs_report_row *row,
                       gs_predict_pipeline *q) {
  const gs_report_pipeline *p = &row->pipeline;
  // An llm pipeline is a layout of the request model (requests.c), whatever
  // the report reads of its stages.
  if (!p->present || p->replicas != 1 || strcmp(row->status, "ok") != 0 || !row->has_step ||
      row->requests.present)
    return 0;
  q->stages = p->stages;
  q->micro = p->micro;
  q->imbalance = p->bubble.imbalance;
  q->busy_seconds = 0.0;
  for (int k = 0; k < p->stages; k++) q->busy_seconds += p->busy[k];
  q->samples = (double)row->items_per_step;
  double bytes = 0.0;
  for (int b = 0; b + 1 < p->stages; b++) bytes += p->boundary_bytes[b];
  q->bytes_per_sample = p->stages > 1 ? bytes / (p->stages - 1) * p->micro / q->samples : 0.0;
  q->measured_step = row->step.mean;
  // The interval of the busy time per step (summed over the stages) over
  // the measured steps.
  q->busy_half = NAN;
  const size_t steps = p->stage_busy ? p->n_samples : 0;
  double *busy = steps >= 2 ? malloc(steps * sizeof *busy) : NULL;
  for (size_t i = 0; busy && i < steps; i++) {
    busy[i] = 0.0;
    for (int k = 0; k < p->stages; k++) busy[i] += p->stage_busy[i * (size_t)p->stages + k];
  }
  gs_stats st;
  if (busy && gs_stats_compute(busy, steps, &st) == GS_OK && st.mean > 0.0)
    q->busy_half = (st.ci95_high - st.ci95_low) / 2.0 / st.mean;
  free(busy);
  q->measured_bubble = p->bubble.bubble;
  if (!(q->busy_seconds > 0.0) || !(q->samples > 0.0) || !isfinite(q->bytes_per_sample))
    return 0;
  const char *file = NULL;
  if (gs_report_sendrecv_curve(r, row->file, s->backend, &q->curve, &file)) q->curve_file = file;
  return 1;
}

/* See predict.h. */
gs_status gs_predict_pipeline_build(const gs_report *r, gs_predict *p) {
  for (size_t i = 0; i < r->n_series; i++) {
    const gs_report_series *s = &r->series[i];
    if (s->n_rows == 0) continue;
    const gs_report_row *row = &s->rows[s->n_rows - 1];
    gs_predict_pipeline q = {0};
    if (!measured_of(r, s, row, &q)) continue;
    q.series = i;
    gs_report_series_name(s, q.name, sizeof q.name);
    gs_predict_pipeline_point at;
    gs_predict_pipeline_at(&q, &p->opt, p->machine.gpus_per_node, q.stages, q.micro, &at);
    q.model_step = at.step_seconds;
    const size_t n_stages = p->opt.n_counts ? p->opt.n_counts : 2;
    q.points = calloc(n_stages * MICRO_COUNTS, sizeof *q.points);
    gs_predict_pipeline *grown = q.points ? realloc(p->pipelines, (p->n_pipelines + 1) *
                                                                      sizeof *grown)
                                          : NULL;
    if (!grown) {
      free(q.points);
      gs_coll_curve_free(&q.curve);
      return gs_error(GS_ERR_NOMEM, "out of memory for the pipelines' predictions");
    }
    p->pipelines = grown;
    for (size_t k = 0; k < n_stages; k++) {
      const int stages = p->opt.n_counts ? p->opt.counts[k] : q.stages * (int)(k + 1);
      if (stages < 2) continue;
      for (size_t j = 0; j < MICRO_COUNTS; j++)
        gs_predict_pipeline_at(&q, &p->opt, p->machine.gpus_per_node, stages, micro_counts[j],
                                  &q.points[q.n_points++]);
    }
    p->pipelines[p->n_pipelines++] = q;
  }
  return GS_OK;
}

/* See predict.h. */
int gs_predict_pipeline_has(const gs_predict *p, size_t series) {
  for (size_t i = 0; i < p->n_pipelines; i++)
    if (p->pipelines[i].series == series) return 1;
  return 0;
}

/* See predict.h. */
void gs_predict_pipeline_free(gs_predict *p) {
  for (size_t i = 0; i < p->n_pipelines; i++) {
    free(p->pipelines[i].points);
    gs_coll_curve_free(&p->pipelines[i].curve);
  }
  free(p->pipelines);
  p->pipelines = NULL;
  p->n_pipelines = 0;
}

/* See predict.h. */
void gs_predict_pipeline_text(FILE *f, const gs_predict *p, int markdown) {
  for (size_t i = 0; i < p->n_pipelines; i++) {
    const gs_predict_pipeline *q = &p->pipelines[i];
    fprintf(f, "\n%s%s: a pipeline of %d stages at %d micro-batches measured (step %.4g ms; "
               "the model gives %.4g ms there); transfers %s\n",
            markdown ? "### " : "", q->name, q->stages, q->micro, 1e3 * q->measured_step,
            1e3 * q->model_step,
            q->curve_file ? "within a node from the measured send/recv curve"
                          : "within a node not measured (no coll sendrecv document: 0)");
    if (q->curve_file) fprintf(f, "%sSend/recv curve: %s\n", markdown ? "\n" : "", q->curve_file);
    fprintf(f, "%sAssumption: step = P c + (m - 1) imbalance c + the fill's and drain's "
               "crossings, c = busy / (P m); this %s.\n\n",
            markdown ? "\n" : "", gs_predict_pipeline_assumption);
    if (markdown)
      fprintf(f, "| stages | micro | step | 95%% | samples/s | bubble | 95%% | (p-1)/m | "
                 "transfers | inter-node boundaries |\n"
                 "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    else
      fprintf(f, "  %6s %5s %12s %20s %12s %8s %16s %8s %12s %s\n", "stages", "micro", "step",
              "95%", "samples/s", "bubble", "95%", "(p-1)/m", "transfers", "inter-node");
    for (size_t k = 0; k < q->n_points; k++) {
      const gs_predict_pipeline_point *x = &q->points[k];
      char step[48] = "-", bubble[48] = "-";
      if (isfinite(x->step_low) && isfinite(x->step_high))
        snprintf(step, sizeof step, "[%.4g, %.4g] ms", 1e3 * x->step_low, 1e3 * x->step_high);
      if (isfinite(x->bubble_low) && isfinite(x->bubble_high))
        snprintf(bubble, sizeof bubble, "[%.1f, %.1f]%%", 100.0 * x->bubble_low,
                 100.0 * x->bubble_high);
      if (markdown)
        fprintf(f, "| %d | %d | %.4g ms | %s | %.4g | %.1f%% | %s | %.1f%% | %.4g ms | %d |\n",
                x->stages, x->micro, 1e3 * x->step_seconds, step, x->throughput,
                100.0 * x->bubble, bubble, 100.0 * x->bubble_formula, 1e3 * x->transfer_seconds,
                x->inter_node_boundaries);
      else
        fprintf(f, "  %6d %5d %9.4g ms %20s %12.4g %7.1f%% %16s %7.1f%% %9.4g ms %d\n",
                x->stages, x->micro, 1e3 * x->step_seconds, step, x->throughput,
                100.0 * x->bubble, bubble, 100.0 * x->bubble_formula, 1e3 * x->transfer_seconds,
                x->inter_node_boundaries);
    }
    if (!(q->busy_half >= 0.0))
      fprintf(f, "%sNo interval: the busy time was measured in fewer than 2 steps.\n",
              markdown ? "\n" : "  ");
  }
}

/* See predict.h. */
void gs_predict_pipeline_json(gs_json_build *b, cJSON *doc, const gs_predict *p) {
  static const gs_predict_json_field series[] = {
      GS_PREDICT_JSON_INT(gs_predict_pipeline, "stages", stages),
      GS_PREDICT_JSON_INT(gs_predict_pipeline, "micro_batches", micro),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline, "busy_seconds", busy_seconds),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline, "busy_relative_half_width", busy_half),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline, "imbalance", imbalance),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline, "bytes_per_sample", bytes_per_sample),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline, "measured_step_seconds", measured_step),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline, "model_step_seconds", model_step),
      GS_PREDICT_JSON_END};
  static const gs_predict_json_field point[] = {
      GS_PREDICT_JSON_INT(gs_predict_pipeline_point, "stages", stages),
      GS_PREDICT_JSON_INT(gs_predict_pipeline_point, "micro_batches", micro),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline_point, "step_seconds", step_seconds),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline_point, "samples_per_second", throughput),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline_point, "bubble", bubble),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline_point, "bubble_formula", bubble_formula),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline_point, "transfer_seconds", transfer_seconds),
      GS_PREDICT_JSON_INT(gs_predict_pipeline_point, "inter_node_boundaries",
                          inter_node_boundaries),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline_point, "step_seconds_low", step_low),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline_point, "step_seconds_high", step_high),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline_point, "samples_per_second_low", throughput_low),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline_point, "samples_per_second_high", throughput_high),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline_point, "bubble_low", bubble_low),
      GS_PREDICT_JSON_NUM(gs_predict_pipeline_point, "bubble_high", bubble_high),
      GS_PREDICT_JSON_END};
  if (p->n_pipelines == 0) return;
  cJSON *arr = gs_json_put_array(b, doc, "pipelines");
  for (size_t i = 0; i < p->n_pipelines && !b->failed; i++) {
    const gs_predict_pipeline *q = &p->pipelines[i];
    cJSON *o = gs_predict_json_series(b, arr, q->name, q, series);
    gs_json_put_string_or_null(b, o, "sendrecv_file", q->curve_file);
    gs_predict_json_predictions(b, o, gs_predict_pipeline_assumption, q->points, q->n_points,
                                sizeof *q->points, point);
  }
}
