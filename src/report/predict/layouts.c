/* The third dimension of llm's prediction (see predict.h): at a GPU count
 * predicted for two or more layouts (tp x pp) of one request stream, the
 * fastest layout, decided only where every corner of the fit's 95%
 * interval orders it first; otherwise "inconclusive" naming the layouts
 * the interval cannot tell from it. Predictions of one fit move together
 * (the same round and share), so the corners are compared, not the
 * intervals side by side. docs/predict.md, "Which layout". */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/format.h"
#include "report/predict/internal.h"

#define RIVALS_MAX 16

/* The layouts of one stream at one GPU count. */
typedef struct {
  int gpus;
  size_t n;
  const gs_predict_point *pt[RIVALS_MAX];
  size_t best;
  size_t n_open;                     /* rivals the best does not beat at every corner */
  const gs_predict_point *open[RIVALS_MAX];
} choice;

static const gs_predict_point *point_at(const gs_predict_workload *w, int gpus) {
  for (size_t k = 0; k < w->n_points; k++)
    if (w->points[k].gpus == gpus) return &w->points[k];
  return NULL;
}

/* The choice at the count of point `k` of workload `i`, if `i` is the
 * first of its stream to predict that count and another layout predicts it
 * too; 0 otherwise. */
static int choice_of(const gs_predict *p, size_t i, size_t k, choice *c) {
  const gs_predict_workload *w = &p->workloads[i];
  if (w->model.kind != GS_PREDICT_REQUESTS) return 0;
  memset(c, 0, sizeof *c);
  c->gpus = w->points[k].gpus;
  for (size_t j = 0; j < p->n_workloads && c->n < RIVALS_MAX; j++) {
    const gs_predict_workload *o = &p->workloads[j];
    if (o->model.kind != GS_PREDICT_REQUESTS || o->family != w->family) continue;
    const gs_predict_point *pt = point_at(o, c->gpus);
    if (!pt) continue;
    if (j < i) return 0;  // an earlier layout of the stream reports this count
    c->pt[c->n++] = pt;
  }
  if (c->n < 2) return 0;
  for (size_t j = 1; j < c->n; j++)
    if (c->pt[j]->throughput > c->pt[c->best]->throughput) c->best = j;
  for (size_t j = 0; j < c->n; j++)
    if (j != c->best && !gs_predict_point_beats(c->pt[c->best], c->pt[j]))
      c->open[c->n_open++] = c->pt[j];
  return 1;
}

static void layout_name(const gs_predict_point *pt, char *out, size_t size) {
  if (pt->pipeline_stages > 1)
    snprintf(out, size, "tp %d x pp %d (%d micro-batches)", pt->tensor_parallel,
             pt->pipeline_stages, pt->micro_batches);
  else
    snprintf(out, size, "tp %d x pp 1", pt->tensor_parallel);
}

static void rate_with_interval(const gs_predict_point *pt, char *out, size_t size) {
  char a[16], lo[16], hi[16] = "unbounded";
  gs_format_rate(pt->throughput, a, sizeof a);
  if (!isfinite(pt->throughput_low)) {
    snprintf(out, size, "%s tokens/s (no interval)", a);
    return;
  }
  gs_format_rate(pt->throughput_low, lo, sizeof lo);
  if (isfinite(pt->throughput_high)) gs_format_rate(pt->throughput_high, hi, sizeof hi);
  snprintf(out, size, "%s tokens/s [%s, %s]", a, lo, hi);
}

/* See predict.h. */
void gs_predict_layouts_text(FILE *f, const gs_predict *p, int markdown) {
  int header = 0;
  for (size_t i = 0; i < p->n_workloads; i++)
    for (size_t k = 0; k < p->workloads[i].n_points; k++) {
      choice c;
      if (!choice_of(p, i, k, &c)) continue;
      if (!header++)
        fprintf(f, "\n%sWhich layout (the same request stream, the fastest where every corner "
                "of the fit's 95%% interval agrees)\n%s", markdown ? "## " : "",
                markdown ? "\n" : "");
      const gs_predict_point *b = c.pt[c.best];
      char name[64], rate[96];
      layout_name(b, name, sizeof name);
      rate_with_interval(b, rate, sizeof rate);
      fprintf(f, "%sat %d GPUs: %s, %s: ", markdown ? "- " : "  ", c.gpus, name, rate);
      if (c.n_open == 0) {
        fprintf(f, "fastest of the %zu layouts predicted.\n", c.n);
        continue;
      }
      fputs("inconclusive against ", f);
      for (size_t j = 0; j < c.n_open; j++) {
        layout_name(c.open[j], name, sizeof name);
        rate_with_interval(c.open[j], rate, sizeof rate);
        fprintf(f, "%s%s, %s", j ? "; " : "", name, rate);
      }
      fprintf(f, " (%s).\n", isfinite(b->throughput_low)
                                 ? "the fit's interval allows either: measure more runs"
                                 : "a measurement of one run gives no interval: measure with "
                                   "--runs 3 or more");
    }
}

/* See predict.h. */
void gs_predict_layouts_json(gs_json_build *b, cJSON *doc, const gs_predict *p) {
  static const gs_predict_json_field layout[] = {
      GS_PREDICT_JSON_INT(gs_predict_point, "tensor_parallel", tensor_parallel),
      GS_PREDICT_JSON_INT(gs_predict_point, "pipeline_stages", pipeline_stages),
      GS_PREDICT_JSON_INT(gs_predict_point, "micro_batches", micro_batches),
      GS_PREDICT_JSON_NUM(gs_predict_point, "tokens_per_second", throughput),
      GS_PREDICT_JSON_NUM(gs_predict_point, "tokens_per_second_low", throughput_low),
      GS_PREDICT_JSON_NUM(gs_predict_point, "tokens_per_second_high", throughput_high),
      GS_PREDICT_JSON_END};
  cJSON *arr = NULL;
  for (size_t i = 0; i < p->n_workloads && !b->failed; i++)
    for (size_t k = 0; k < p->workloads[i].n_points; k++) {
      choice c;
      if (!choice_of(p, i, k, &c)) continue;
      if (!arr) arr = gs_json_put_array(b, doc, "layout_choices");
      cJSON *o = gs_json_check(b, cJSON_CreateObject());
      gs_json_put_number(b, o, "gpus", c.gpus);
      gs_json_put_number(b, o, "layouts", (double)c.n);
      gs_json_put_string(b, o, "verdict", c.n_open ? "inconclusive" : "fastest");
      cJSON *best = gs_json_put_object(b, o, "fastest");
      gs_predict_json_fields(b, best, c.pt[c.best], layout);
      cJSON *open = gs_json_put_array(b, o, "inconclusive_against");
      for (size_t j = 0; j < c.n_open; j++) {
        cJSON *x = gs_json_check(b, cJSON_CreateObject());
        gs_predict_json_fields(b, x, c.open[j], layout);
        gs_json_append(b, open, x);
      }
      gs_json_append(b, arr, o);
    }
}
