/* llm's request model from documents (see predict.h, "Requests"): the
 * request stream and model shape of a series, each measurement's replica
 * layout (tensor-parallel GPUs per stage, pipeline stages, micro-batches,
 * stage imbalance, from parallelism.gpus_per_rank and llm.pipeline), and
 * the pooled fit over every series of the same stream whatever its layout,
 * so that a layout can be held out and predicted from the others
 * (--holdout-layout). docs/predict.md, "Pipelined replicas". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/parse.h"
#include "core/stats.h"
#include "report/predict/internal.h"

static double number_of(const cJSON *obj, const char *name) {
  const cJSON *x = gs_json_member(obj, name);
  return cJSON_IsNumber(x) && isfinite(x->valuedouble) ? x->valuedouble : NAN;
}

static const cJSON *options_of(const gs_report *r, const gs_report_row *row) {
  return gs_json_member(gs_json_member(r->docs[row->file], "config"), "workload_options");
}

static const cJSON *llm_of(const gs_report *r, const gs_report_row *row) {
  const cJSON *ms = gs_json_member(r->docs[row->file], "measurements");
  return gs_json_member(cJSON_GetArrayItem(ms, (int)row->measurement), "llm");
}

/* See internal.h. */
gs_predict_layout gs_predict_row_layout(const gs_report *r, const gs_report_row *row) {
  gs_predict_layout l = {1, 1, 1, 1.0};
  const int stages = row->pipeline_stages > 0 ? row->pipeline_stages : 1;
  const int gpr = row->gpus_per_rank > 0 ? row->gpus_per_rank : 1;
  l.pp = gpr % stages == 0 ? stages : 1;
  l.tp = gpr / l.pp;
  if (l.pp == 1) return l;
  const cJSON *pl = gs_json_member(llm_of(r, row), "pipeline");
  const double micro = number_of(pl, "micro_batches");
  l.micro = micro >= 1 ? (int)micro : l.pp;
  double sum = 0.0, slowest = 0.0;
  int n = 0;
  const cJSON *per = gs_json_member(pl, "per_stage");
  for (const cJSON *s = per ? per->child : NULL; s; s = s->next, n++) {
    const double busy = number_of(s, "busy_seconds");
    sum += busy;
    if (busy > slowest) slowest = busy;
  }
  l.imbalance = n == l.pp && sum > 0.0 ? slowest / (sum / n) : 1.0;
  return l;
}

/* See internal.h. */
int gs_predict_layout_held(const gs_predict_options *opt, const gs_predict_layout *l) {
  return opt->holdout_layout.tp > 0 && opt->holdout_layout.tp == l->tp &&
         opt->holdout_layout.pp == l->pp;
}

/* See internal.h. */
int gs_predict_row_fitted(const gs_predict_options *opt, const gs_report *r,
                          const gs_report_row *row) {
  if (strcmp(row->status, "ok") != 0 || (opt->holdout > 1 && row->world_size >= opt->holdout))
    return 0;
  if (!r || !row->requests.present || opt->holdout_layout.tp <= 0) return 1;
  const gs_predict_layout l = gs_predict_row_layout(r, row);
  return !gs_predict_layout_held(opt, &l);
}

/* See internal.h. */
int gs_predict_row_checked(const gs_predict_options *opt, const gs_report *r,
                           const gs_report_row *row) {
  if (strcmp(row->status, "ok") != 0) return 0;
  if (opt->holdout > 1 && row->world_size >= opt->holdout) return 1;
  if (!row->requests.present || opt->holdout_layout.tp <= 0) return 0;
  const gs_predict_layout l = gs_predict_row_layout(r, row);
  return gs_predict_layout_held(opt, &l);
}

/* 1 when the two option objects (canonical JSON) differ only in the
 * replica's layout: the same model and request stream. */
static int same_stream(const char *a, const char *b) {
  static const char *const layout_keys[] = {"tp", "pp", "micro_batches", "stages",
                                            "stage_first_layers", "layouts"};
  cJSON *x = cJSON_Parse(a ? a : "null"), *y = cJSON_Parse(b ? b : "null");
  for (size_t k = 0; k < sizeof layout_keys / sizeof *layout_keys; k++) {
    if (cJSON_IsObject(x)) cJSON_DeleteItemFromObjectCaseSensitive(x, layout_keys[k]);
    if (cJSON_IsObject(y)) cJSON_DeleteItemFromObjectCaseSensitive(y, layout_keys[k]);
  }
  const int same = x && y && cJSON_Compare(x, y, 1);
  cJSON_Delete(x);
  cJSON_Delete(y);
  return same;
}

/* See internal.h. */
int gs_predict_same_stream(const gs_report_series *a, const gs_report_series *b) {
  return strcmp(a->workload, b->workload) == 0 && strcmp(a->backend, b->backend) == 0 &&
         strcmp(a->scaling, b->scaling) == 0 && same_stream(a->options, b->options);
}

/* The request stream and model shape of an llm measurement into `md`. */
static gs_status request_shape(const gs_report *r, const gs_report_row *row, gs_predict_model *md) {
  const cJSON *o = options_of(r, row);
  const cJSON *llm = llm_of(r, row);
  double samples = number_of(o, "samples"), batch = number_of(o, "batch");
  double layers = number_of(o, "layers"), hidden = number_of(o, "hidden");
  double out_max = number_of(o, "output_max");
  double in_min = number_of(o, "input_min"), in_max = number_of(o, "input_max");
  double params = number_of(llm, "parameters"), weights = number_of(llm, "weight_bytes");
  if (!(samples >= 1) || !(batch >= 1) || !(layers >= 1) || !(hidden >= 1) || !(out_max >= 1) ||
      !(in_max >= 1) || !(params > 0) || !(weights > 0))
    return gs_error(GS_ERR_USAGE, "%s: the llm measurement lacks its model shape or request "
                    "stream (workload_options samples, batch, layers, hidden, input/output "
                    "lengths; llm.parameters, llm.weight_bytes)", gs_report_file_name(r, row->file));
  md->samples = (int)samples;
  md->batch = (int)batch;
  md->layers = (int)layers;
  md->hidden = hidden;
  md->decode_steps = out_max;
  md->prefill_tokens = isfinite(in_min) ? 0.5 * (in_min + in_max) : in_max;
  md->element_bytes = weights / params;
  const gs_predict_layout l = gs_predict_row_layout(r, row);
  md->measured_tp = l.tp;
  md->measured_pp = l.pp;
  md->measured_micro = l.micro;
  md->stage_imbalance = l.imbalance;
  return GS_OK;
}

/* See internal.h. */
int gs_predict_request_run(const gs_report *r, const gs_report_row *row,
                           gs_predict_request_obs *o) {
  const cJSON *runs = gs_json_member(llm_of(r, row), "run_seconds");
  const int n = cJSON_GetArraySize(runs);
  memset(o, 0, sizeof *o);
  o->gpus = row->world_size;
  o->run_seconds = n > 0 ? row->requests.run_seconds / n : NAN;
  o->tokens_per_run = n > 0 ? row->requests.generated_tokens / n : NAN;
  o->layout = gs_predict_row_layout(r, row);
  // Out of memory leaves the run without an interval (run_half 0), as one run.
  double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  size_t k = 0;
  for (const cJSON *x = runs ? runs->child : NULL; v && x; x = x->next)
    if (cJSON_IsNumber(x) && isfinite(x->valuedouble)) v[k++] = x->valuedouble;
  gs_stats s;
  if (k >= 2 && gs_stats_compute(v, k, &s) == GS_OK && s.mean > 0.0)
    o->run_half = (s.ci95_high - s.ci95_low) / 2.0 / s.mean;
  free(v);
  return n > 0 && o->run_seconds > 0.0;
}

/* See internal.h. */
gs_status gs_predict_requests_fit(const gs_report *r, const gs_report_series *s,
                                  const gs_predict *p, gs_predict_workload *w) {
  const gs_predict_options *opt = &p->opt;
  gs_status st = request_shape(r, &s->rows[0], &w->model);
  if (st != GS_OK) return st;
  size_t cap = 0;
  for (size_t i = 0; i < r->n_series; i++) cap += r->series[i].n_rows;
  gs_predict_request_obs *obs = calloc(cap ? cap : 1, sizeof *obs);
  if (!obs) return gs_error(GS_ERR_NOMEM, "out of memory");
  size_t k = 0;
  w->n_family = 0;
  w->family = (size_t)(s - r->series);
  for (size_t i = 0; i < r->n_series; i++) {
    const gs_report_series *o = &r->series[i];
    if (o->n_rows == 0 || !o->rows[0].requests.present || !o->rows[0].requests.scenario ||
        strcmp(o->rows[0].requests.scenario, "offline") != 0 || !gs_predict_same_stream(s, o))
      continue;
    if (i < w->family) w->family = i;
    int used = 0;
    for (size_t j = 0; j < o->n_rows; j++) {
      const gs_report_row *row = &o->rows[j];
      if (!gs_predict_row_fitted(opt, r, row) || !gs_predict_request_run(r, row, &obs[k]))
        continue;
      if (w->n_fitted < 8) w->fitted[w->n_fitted++] = row->world_size;
      k++;
      used = 1;
    }
    w->n_family += used;
  }
  if (k == 0)
    st = gs_error(GS_ERR_USAGE, "%s: no ok measurement of this request stream to fit%s",
                  w->name, opt->holdout > 1 || opt->holdout_layout.tp > 0
                               ? " outside the held-out counts and layout" : "");
  else if ((st = gs_predict_fit_requests(obs, k, &p->machine, &w->model)) != GS_OK)
    st = gs_error(st, "%s (%s): %s", w->name, gs_report_file_name(r, s->rows[0].file),
                  gs_last_error());
  free(obs);
  return st;
}

/* See predict.h. */
gs_status gs_predict_parse_layout(const char *text, const char *option, gs_predict_layout *out) {
  memset(out, 0, sizeof *out);
  out->tp = out->pp = 1;
  char buf[64];
  const size_t len = strlen(text);
  if (len == 0 || len >= sizeof buf || text[0] == ',' || text[len - 1] == ',' ||
      strstr(text, ",,"))
    goto bad;
  snprintf(buf, sizeof buf, "%s", text);
  int seen_tp = 0, seen_pp = 0;
  for (char *save = NULL, *part = strtok_r(buf, ",", &save); part;
       part = strtok_r(NULL, ",", &save)) {
    uint64_t v = 0;
    int *dst = NULL;
    if (strncmp(part, "tp=", 3) == 0 && !seen_tp++) dst = &out->tp;
    else if (strncmp(part, "pp=", 3) == 0 && !seen_pp++) dst = &out->pp;
    if (!dst || gs_parse_count(part + 3, option, 1, 1048576, &v) != GS_OK) goto bad;
    *dst = (int)v;
  }
  if (!seen_tp && !seen_pp) goto bad;
  return GS_OK;
bad:
  return gs_error(GS_ERR_USAGE, "option %s: '%s' must be a layout like tp=1,pp=2 (each part "
                  "from 1, either may be left out)", option, text);
}
