/* Serving across nodes at the measured highest rate (see predict.h): a
 * node's llm --find-max-rate answer, times the nodes, with the assumption
 * that makes it so written beside every figure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/slo.h"
#include "report/predict/internal.h"

const char gs_predict_serving_assumption[] =
    "assumes each node serves its own share of the arrivals (a balancer splitting them evenly "
    "over nodes), replicas within one node as measured and no traffic between nodes, so that "
    "each node at the measured rate keeps the latencies measured; a balancer's own delay, "
    "uneven splits and shared storage or network limits are not in it";

/* The searched answer of row `row` into *s; 0 when it has none. */
static int answer_of(const gs_report *r, const gs_report_row *row, gs_predict_serving *s) {
  if (!row->requests.present || !row->requests.scenario ||
      strcmp(row->requests.scenario, "server") != 0)
    return 0;
  const cJSON *ms = gs_json_member(r->docs[row->file], "measurements");
  const cJSON *m = cJSON_GetArrayItem(ms, (int)row->measurement);
  const cJSON *search = gs_json_member(gs_json_member(gs_json_member(m, "llm"), "rates"), "search");
  const double best = gs_json_number_member(search, "max_rate");
  const cJSON *bracket = gs_json_member(search, "bracket");
  if (!(best > 0.0) || !isfinite(best)) return 0;
  s->max_rate = best;
  s->low = gs_json_number_or_nan(cJSON_GetArrayItem(bracket, 0));
  s->high = gs_json_number_or_nan(cJSON_GetArrayItem(bracket, 1));
  s->node_gpus = row->world_size;
  const int gpr = row->gpus_per_rank > 0 ? row->gpus_per_rank : 1;
  s->pp = row->pipeline_stages > 0 && gpr % row->pipeline_stages == 0 ? row->pipeline_stages : 1;
  s->tp = gpr / s->pp;
  s->percentile = row->requests.slo.percentile;
  s->tokens_per_second = row->requests.goodput.tokens_per_second.value;
  char targets[96];
  gs_slo_describe(&row->requests.slo, targets, sizeof targets);
  snprintf(s->targets, sizeof s->targets, "%s: %s", row->requests.slo.name, targets);
  return 1;
}

static gs_status points_of(const gs_predict *p, gs_predict_serving *s) {
  static const int default_nodes[] = {1, 2, 4, 8};
  const size_t n = p->opt.n_counts ? p->opt.n_counts : 4;
  s->points = calloc(n, sizeof *s->points);
  if (!s->points) return gs_error(GS_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const int gpus = p->opt.n_counts ? p->opt.counts[i] : default_nodes[i] * s->node_gpus;
    if (gpus < s->node_gpus || gpus % s->node_gpus != 0) continue;
    gs_predict_serving_point *pt = &s->points[s->n_points++];
    pt->gpus = gpus;
    pt->nodes = gpus / s->node_gpus;
    pt->rate = pt->nodes * s->max_rate;
    pt->rate_low = pt->nodes * s->low;
    pt->rate_high = pt->nodes * s->high;
    pt->tokens_per_second = pt->nodes * s->tokens_per_second;
  }
  return GS_OK;
}

gs_status gs_predict_serving_build(const gs_report *r, gs_predict *p) {
  p->serving = calloc(r->n_series ? r->n_series : 1, sizeof *p->serving);
  if (!p->serving) return gs_error(GS_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < r->n_series; i++) {
    const gs_report_series *rs = &r->series[i];
    if (rs->n_rows == 0) continue;
    gs_predict_serving *s = &p->serving[p->n_serving];
    memset(s, 0, sizeof *s);
    if (!answer_of(r, &rs->rows[rs->n_rows - 1], s)) continue;
    s->series = i;
    gs_report_series_name(rs, s->name, sizeof s->name);
    p->n_serving++;
    GS_TRY(points_of(p, s));
  }
  return GS_OK;
}

int gs_predict_serving_has(const gs_predict *p, size_t series) {
  for (size_t i = 0; i < p->n_serving; i++)
    if (p->serving[i].series == series) return 1;
  return 0;
}

void gs_predict_serving_text(FILE *f, const gs_predict *p, int markdown) {
  for (size_t i = 0; i < p->n_serving; i++) {
    const gs_predict_serving *s = &p->serving[i];
    fprintf(f, "\n%s%s: serving at the measured highest rate\n", markdown ? "## " : "", s->name);
    if (markdown) fputc('\n', f);
    char layout[48];
    if (s->pp > 1)
      snprintf(layout, sizeof layout, "tp %d x pp %d", s->tp, s->pp);
    else
      snprintf(layout, sizeof layout, "tp %d", s->tp);
    fprintf(f, "Measured on one node of %d GPUs (%d replicas of %s): the highest rate meeting "
            "the targets (%s, at p%g) is %.4g requests/s (%s), goodput %.4g tokens/s.\n",
            s->node_gpus, s->node_gpus / (s->tp * s->pp), layout, s->targets, s->percentile, s->max_rate,
            isfinite(s->high) ? "the next rate measured missed them" : "every rate measured met them",
            s->tokens_per_second);
    if (markdown) fputs("\n| GPUs | nodes | requests/s | bracket | goodput tokens/s |\n"
                        "|---|---|---|---|---|\n", f);
    else fprintf(f, "  %8s %6s %12s %24s %18s\n", "GPUs", "nodes", "requests/s", "bracket",
                 "goodput tokens/s");
    for (size_t j = 0; j < s->n_points; j++) {
      const gs_predict_serving_point *pt = &s->points[j];
      char bracket[64];
      if (isfinite(pt->rate_high))
        snprintf(bracket, sizeof bracket, "[%.4g, %.4g]", pt->rate_low, pt->rate_high);
      else // every rate the search measured met the targets
        snprintf(bracket, sizeof bracket, "[%.4g, none missed]", pt->rate_low);
      if (markdown)
        fprintf(f, "| %d | %d | %.4g | %s | %.4g |\n", pt->gpus, pt->nodes, pt->rate, bracket,
                pt->tokens_per_second);
      else
        fprintf(f, "  %8d %6d %12.4g %24s %18.4g\n", pt->gpus, pt->nodes, pt->rate, bracket,
                pt->tokens_per_second);
    }
    if (s->n_points == 0)
      fprintf(f, "%sNo GPU count asked is a whole number of %d-GPU nodes.\n",
              markdown ? "" : "  ", s->node_gpus);
    fprintf(f, "%sAssumption: the figures are the node's times the nodes; this %s.\n",
            markdown ? "\n" : "  ", gs_predict_serving_assumption);
  }
}

void gs_predict_serving_json(gs_json_build *b, cJSON *doc, const gs_predict *p) {
  static const gs_predict_json_field series[] = {
      GS_PREDICT_JSON_INT(gs_predict_serving, "node_gpus", node_gpus),
      GS_PREDICT_JSON_INT(gs_predict_serving, "tensor_parallel", tp),
      GS_PREDICT_JSON_INT(gs_predict_serving, "pipeline_stages", pp),
      GS_PREDICT_JSON_NUM(gs_predict_serving, "percentile", percentile),
      GS_PREDICT_JSON_NUM(gs_predict_serving, "max_rate", max_rate),
      GS_PREDICT_JSON_NUM(gs_predict_serving, "goodput_tokens_per_second", tokens_per_second),
      GS_PREDICT_JSON_END};
  static const gs_predict_json_field point[] = {
      GS_PREDICT_JSON_INT(gs_predict_serving_point, "gpus", gpus),
      GS_PREDICT_JSON_INT(gs_predict_serving_point, "nodes", nodes),
      GS_PREDICT_JSON_NUM(gs_predict_serving_point, "requests_per_second", rate),
      GS_PREDICT_JSON_NUM(gs_predict_serving_point, "requests_per_second_low", rate_low),
      GS_PREDICT_JSON_NUM(gs_predict_serving_point, "requests_per_second_high", rate_high),
      GS_PREDICT_JSON_NUM(gs_predict_serving_point, "goodput_tokens_per_second",
                          tokens_per_second),
      GS_PREDICT_JSON_END};
  if (p->n_serving == 0) return;
  cJSON *arr = gs_json_put_array(b, doc, "serving");
  for (size_t i = 0; i < p->n_serving && !b->failed; i++) {
    const gs_predict_serving *s = &p->serving[i];
    cJSON *o = gs_predict_json_series(b, arr, s->name, s, series);
    gs_json_put_string(b, o, "targets", s->targets);
    gs_predict_json_pair(b, o, "bracket", s->low, s->high);
    gs_predict_json_predictions(b, o, gs_predict_serving_assumption, s->points, s->n_points,
                                sizeof *s->points, point);
  }
}
