/* The rates of a server measurement (llm --rates / --find-max-rate) as
 * the document recorded them: per rate its achieved rate, tokens/s, the
 * worst percentile over its target, met or not, the goodput and the
 * shares with their intervals, the percentiles; and the search's answer
 * with its bracket. docs/report.md, "Rates". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "report/read/read.h"

/* At most this many rates in one measurement (the writer's GS_LIST_MAX). */
#define RATES_MAX 64

static gs_slo_figure figure_of(const cJSON *j) {
  return (gs_slo_figure){gs_json_number_member(j, "value"), gs_json_number_member(j, "low"),
                         gs_json_number_member(j, "high")};
}

/* A point's "slo" object into its goodput: a percentile recorded as null
 * where a target is set never got there (+inf). */
static void goodput_of(const cJSON *slo_json, const gs_slo *slo, gs_slo_goodput *g) {
  memset(g, 0, sizeof *g);
  const double req = gs_json_number_member(slo_json, "requests"),
               good = gs_json_number_member(slo_json, "good");
  g->requests = isfinite(req) && req >= 0 ? (size_t)req : 0;
  g->good = isfinite(good) && good >= 0 ? (size_t)good : 0;
  g->seconds = gs_json_number_member(slo_json, "seconds");
  const cJSON *share = gs_json_member(slo_json, "share_met");
  const cJSON *pct = gs_json_member(slo_json, "percentile_seconds");
  for (int m = 0; m < GS_SLO_METRICS; m++) {
    const cJSON *f = gs_json_member(share, gs_slo_metric_names[m]);
    g->share[m] = cJSON_IsObject(f) ? figure_of(f) : (gs_slo_figure){NAN, NAN, NAN};
    const double v = gs_json_number_member(pct, gs_slo_metric_names[m]);
    g->percentile_value[m] = isfinite(slo->bound[m]) && !isfinite(v) ? INFINITY : v;
  }
  g->share_all = figure_of(gs_json_member(share, "all"));
  g->requests_per_second = figure_of(gs_json_member(slo_json, "goodput_requests_per_second"));
  g->tokens_per_second = figure_of(gs_json_member(slo_json, "goodput_tokens_per_second"));
  g->percentile_met = cJSON_IsTrue(gs_json_member(slo_json, "percentile_met"));
  const cJSON *load = gs_json_member(slo_json, "load");
  g->load = cJSON_IsObject(load) ? figure_of(load) : (gs_slo_figure){NAN, NAN, NAN};
}

/* By rate, ties in the order measured. */
static int by_rate(const void *a, const void *b) {
  const gs_report_rate_point *x = a, *y = b;
  if (x->rate != y->rate) return x->rate < y->rate ? -1 : 1;
  return (x->order > y->order) - (x->order < y->order);
}

/* For a list of rates: the highest rate met, and the lowest rate above
 * it that missed. */
static void list_answer(gs_report_rates *q) {
  q->max_rate = q->low = q->high = NAN;
  for (size_t i = 0; i < q->n; i++)
    if (q->points[i].met) q->max_rate = q->low = q->points[i].rate;
  for (size_t i = 0; i < q->n; i++)
    if (!q->points[i].met && (isnan(q->max_rate) || q->points[i].rate > q->max_rate)) {
      q->high = q->points[i].rate;
      break;
    }
}

gs_status gs_report_rates_read(const cJSON *m, const char *file, gs_report_row *row) {
  gs_report_rates *q = &row->rates;
  memset(q, 0, sizeof *q);
  const cJSON *llm = gs_json_member(m, "llm");
  const cJSON *rates = gs_json_member(llm, "rates");
  if (!cJSON_IsObject(rates)) return GS_OK;
  const cJSON *points = gs_json_member(rates, "points");
  const int n = cJSON_IsArray(points) ? cJSON_GetArraySize(points) : 0;
  if (n > RATES_MAX)
    return gs_error(GS_ERR_FORMAT, "%s: llm.rates.points holds %d rates, more than %d", file, n,
                    RATES_MAX);
  q->points = calloc((size_t)n + 1, sizeof *q->points);
  if (!q->points) return gs_error(GS_ERR_NOMEM, "%s: out of memory for the rates", file);
  q->present = 1;
  q->search = strcmp(gs_json_string_member(rates, "mode", ""), "search") == 0;
  q->kept_rate = gs_json_number_member(rates, "kept_rate");
  q->stream = gs_json_number_member(rates, "requests_per_run");
  q->slots = gs_json_number_member(rates, "slots");
  const cJSON *first_slo = points && points->child ? gs_json_member(points->child, "slo") : NULL;
  gs_slo_from_json(first_slo ? first_slo : gs_json_member(llm, "slo"), &q->slo);
  for (const cJSON *p = points ? points->child : NULL; p; p = p->next) {
    gs_report_rate_point *x = &q->points[q->n];
    x->order = (int)q->n + 1;
    x->rate = gs_json_number_member(p, "rate");
    if (!isfinite(x->rate) || x->rate <= 0.0)
      return gs_error(GS_ERR_FORMAT, "%s: llm.rates.points[%zu].rate must be a positive number",
                      file, q->n);
    x->achieved_rate = gs_json_number_member(p, "achieved_rate");
    x->tokens_per_second = gs_json_number_member(p, "tokens_per_second");
    const cJSON *ratio = gs_json_member(p, "ratio");
    x->ratio = cJSON_IsNumber(ratio) ? ratio->valuedouble : INFINITY;
    x->met = cJSON_IsTrue(gs_json_member(p, "met"));
    x->status = gs_json_string_member(p, "status", "?");
    goodput_of(gs_json_member(p, "slo"), &q->slo, &x->goodput);
    q->n++;
  }
  qsort(q->points, q->n, sizeof *q->points, by_rate);
  const cJSON *s = gs_json_member(rates, "search");
  if (!q->search || !cJSON_IsObject(s)) {
    q->search = 0;
    q->tolerance = NAN;
    list_answer(q);
    return GS_OK;
  }
  q->max_rate = gs_json_number_member(s, "max_rate");
  const cJSON *bracket = gs_json_member(s, "bracket");
  q->low = gs_json_number_or_nan(cJSON_GetArrayItem(bracket, 0));
  q->high = gs_json_number_or_nan(cJSON_GetArrayItem(bracket, 1));
  q->converged = cJSON_IsTrue(gs_json_member(s, "converged"));
  q->unreachable = cJSON_IsTrue(gs_json_member(s, "unreachable"));
  q->tolerance = gs_json_number_member(s, "tolerance");
  return GS_OK;
}
