/* The CSV renderers of a report, tidy for pandas and spreadsheets: one row
 * per measurement (the analysis' figures), with GS_REPORT_CSV_SAMPLES one
 * row per raw sample, or with GS_REPORT_CSV_RATES one row per rate of an
 * llm rate sweep or search. Both start with the same series-identity columns
 * (gs_report_series_same and gs_report_point_same's members); units are in
 * the column names, numbers in base units (seconds, bytes, bytes/s) with
 * the fewest digits that read back exactly; fields quoted as RFC 4180 asks
 * (docs/report.md, "Output formats"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/scaling.h"
#include "report/render/internal.h"

/* Writes `text` as one CSV field (RFC 4180: quoted when it holds a comma,
 * quote or line break, quotes doubled); NULL is an empty field. */
static void csv_field(FILE *out, const char *text) {
  if (!text) return;
  if (strpbrk(text, ",\"\r\n") == NULL) {
    fputs(text, out);
    return;
  }
  fputc('"', out);
  for (const char *p = text; *p; p++) {
    if (*p == '"') fputc('"', out);
    fputc(*p, out);
  }
  fputc('"', out);
}

/* `v` as text: the shortest of 15..17 significant digits that reads back
 * exactly; "" for a non-finite value. 16 digits are tried first: if they
 * read back, 15 might too (fewer never fail where more succeed); if not, 17
 * always do. At most two conversions each way. */
static void csv_number_text(double v, char *buf, size_t size) {
  buf[0] = '\0';
  if (!isfinite(v)) return;
  snprintf(buf, size, "%.16g", v);
  if (strtod(buf, NULL) != v) {
    snprintf(buf, size, "%.17g", v);
    return;
  }
  char shorter[64];
  snprintf(shorter, sizeof shorter, "%.15g", v);
  if (strtod(shorter, NULL) == v) snprintf(buf, size, "%s", shorter);
}

/* A comma, then `v` (empty when not finite). */
static void csv_number(FILE *out, double v) {
  char buf[64];
  csv_number_text(v, buf, sizeof buf);
  fputc(',', out);
  fputs(buf, out);
}

/* See internal.h. */
void gs_render_csv_field(FILE *out, const char *text) { csv_field(out, text); }
void gs_render_csv_number(FILE *out, double v) { csv_number(out, v); }

static void csv_text(FILE *out, const char *text) {
  fputc(',', out);
  csv_field(out, text);
}

/* A comma, then "true", "false" or "" (flag < 0: not known). */
static void csv_bool(FILE *out, int flag) {
  fputs(flag < 0 ? "," : flag ? ",true" : ",false", out);
}

/* The identity columns (docs/report.md, "Series"), shared by both CSVs. */
static const char identity_head[] =
    "file,measurement,workload,backend,scaling,variant,scenario,task,split_policy,"
    "tensor_parallel,world_size,op,size_bytes,dtype,redop,root,form,workload_options";

static void csv_identity(FILE *out, const gs_report *r, const gs_report_series *s,
                         const gs_report_row *row) {
  csv_field(out, r->files[row->file]);
  fprintf(out, ",%zu", row->measurement);
  csv_text(out, s->workload);
  csv_text(out, s->backend);
  csv_text(out, s->scaling);
  csv_text(out, row->variant);
  csv_text(out, row->requests.scenario                ? row->requests.scenario
                : row->loadgen && row->n_ranks ? row->ranks[0].loadgen.scenario
                                               : NULL);
  if (row->placement.task >= 0)
    fprintf(out, ",%d", row->placement.task);
  else
    fputc(',', out);
  csv_text(out, s->split);
  // A pipelined replica spans tensor_parallel x its stages GPUs.
  fprintf(out, ",%d,%d", row->gpus_per_rank / row->pipeline_stages, row->world_size);
  csv_text(out, row->collective.present ? row->collective.op : NULL);
  csv_number(out, row->collective.present ? row->collective.bytes : NAN);
  csv_text(out, row->collective.present ? row->collective.dtype : NULL);
  csv_text(out, row->collective.present ? row->collective.redop : NULL);
  csv_number(out, row->collective.present ? row->collective.root : NAN);
  csv_text(out, row->collective.present ? gs_report_coll_form(row->collective.in_place) : NULL);
  csv_text(out, s->options);
}

/* LoadGen's figures of a row: summed rates and queries, validity when every
 * rank says it; the latencies only of a one-rank row (percentiles of
 * different ranks do not combine; the JSON report has each rank's). */
typedef struct {
  int valid;
  const char *failed;
  double samples, tokens, queries;
  double seconds[9]; /* mean, p50, p90, p99, max, TTFT p50, p99, TPOT p50, p99 */
} loadgen_figures;

static loadgen_figures loadgen_of(const gs_report_row *row) {
  loadgen_figures f = {.valid = -1, .samples = NAN, .tokens = NAN, .queries = NAN};
  for (size_t i = 0; i < 9; i++) f.seconds[i] = NAN;
  if (!row->loadgen) return f;
  size_t present = 0;
  for (size_t k = 0; k < row->n_ranks; k++) {
    const gs_report_loadgen *lg = &row->ranks[k].loadgen;
    if (!lg->present) continue;
    // Valid when every rank is; invalid when one is; else not known.
    if (present++ == 0 || f.valid == 1)
      f.valid = lg->valid;
    else if (f.valid == -1 && lg->valid == 0)
      f.valid = 0;
    if (!f.failed) f.failed = lg->failed;
    const double add[3] = {lg->samples_per_second, lg->tokens_per_second, lg->query_count};
    double *sum[3] = {&f.samples, &f.tokens, &f.queries};
    for (size_t i = 0; i < 3; i++)
      if (isfinite(add[i])) *sum[i] = isfinite(*sum[i]) ? *sum[i] + add[i] : add[i];
    if (row->n_ranks == 1) {
      const double s[9] = {lg->lat_mean, lg->lat_p50,  lg->lat_p90,  lg->lat_p99, lg->lat_max,
                           lg->ttft_p50, lg->ttft_p99, lg->tpot_p50, lg->tpot_p99};
      memcpy(f.seconds, s, sizeof s);
    }
  }
  return f;
}

/* One row per measurement: the identity, then every figure of the
 * analysis with its unit in the column name. */
/* The goodput columns (empty without latency targets). */
static void csv_goodput(FILE *out, const gs_report_row *row) {
  const gs_slo *slo = &row->requests.slo;
  const gs_slo_goodput *g = &row->requests.goodput;
  const int any = row->requests.present && gs_slo_any(slo);
  char targets[96] = "";
  if (any) gs_slo_describe(slo, targets, sizeof targets);
  csv_text(out, any ? targets : NULL);
  const gs_slo_figure *f[] = {&g->share_all, &g->requests_per_second, &g->tokens_per_second};
  for (size_t i = 0; i < 3; i++) {
    csv_number(out, any ? f[i]->value : NAN);
    csv_number(out, any ? f[i]->low : NAN);
    csv_number(out, any ? f[i]->high : NAN);
  }
  csv_bool(out, any ? g->percentile_met : -1);
}

/* The answer of a rate sweep or search (empty without rates): the mode,
 * the rates measured, the highest rate meeting the targets and its
 * bracket, and whether the search converged (empty for a list). */
static void csv_rates_answer(FILE *out, const gs_report_rates *q) {
  if (!q->present) {
    fputs(",,,,,,", out);
    return;
  }
  csv_text(out, q->search ? "search" : "list");
  fprintf(out, ",%zu", q->n);
  csv_number(out, q->max_rate);
  csv_number(out, q->low);
  csv_number(out, q->high);
  csv_bool(out, q->search ? q->converged : -1);
}

/* One row per rate of every measurement with rates (llm --rates,
 * --find-max-rate), by rate: its figures as the document recorded them,
 * each share and goodput with its interval, the percentiles (empty when
 * never reached). */
static gs_status csv_rates(FILE *out, const gs_report *r) {
  fprintf(out, "%s,order,rate_per_s,achieved_rate_per_s,load,load_low,load_high,tokens_per_s,"
               "percentile,percentile_ttft_s,percentile_tpot_s,percentile_latency_s,worst_ratio,"
               "met,status,"
               "met_share,met_share_low,met_share_high,met_ttft_share,met_ttft_share_low,"
               "met_ttft_share_high,met_tpot_share,met_tpot_share_low,met_tpot_share_high,"
               "met_latency_share,met_latency_share_low,met_latency_share_high,"
               "goodput_requests_per_s,goodput_requests_per_s_low,goodput_requests_per_s_high,"
               "goodput_tokens_per_s,goodput_tokens_per_s_low,goodput_tokens_per_s_high\n",
          identity_head);
  for (size_t i = 0; i < r->n_series; i++) {
    const gs_report_series *s = &r->series[i];
    for (size_t j = 0; j < s->n_rows; j++) {
      const gs_report_row *row = &s->rows[j];
      const gs_report_rates *q = &row->rates;
      for (size_t k = 0; q->present && k < q->n; k++) {
        const gs_report_rate_point *p = &q->points[k];
        const gs_slo_goodput *g = &p->goodput;
        csv_identity(out, r, s, row);
        fprintf(out, ",%d", p->order);
        csv_number(out, p->rate);
        csv_number(out, p->achieved_rate);
        csv_number(out, p->goodput.load.value);
        csv_number(out, p->goodput.load.low);
        csv_number(out, p->goodput.load.high);
        csv_number(out, p->tokens_per_second);
        csv_number(out, q->slo.percentile);
        for (int m = 0; m < GS_SLO_METRICS; m++) csv_number(out, g->percentile_value[m]);
        csv_number(out, p->ratio);
        csv_bool(out, p->met);
        csv_text(out, p->status);
        const gs_slo_figure *f[] = {&g->share_all, &g->share[0], &g->share[1], &g->share[2],
                                    &g->requests_per_second, &g->tokens_per_second};
        for (size_t x = 0; x < sizeof f / sizeof *f; x++) {
          csv_number(out, f[x]->value);
          csv_number(out, f[x]->low);
          csv_number(out, f[x]->high);
        }
        fputc('\n', out);
      }
    }
  }
  return GS_OK;
}

/* The roofline's columns (docs/report.md, "Roofline"), all empty for a row
 * without the member. */
static const char roofline_head[] =
    "roofline_bound,roofline_achieved_per_s,roofline_peak_per_s,roofline_fraction,"
    "roofline_fraction_low,roofline_fraction_high";

static void csv_roofline(FILE *out, const gs_report_row *row) {
  const gs_report_roofline *rl = &row->roofline;
  csv_text(out, rl->present ? rl->bound : NULL);
  const double v[5] = {rl->achieved, rl->peak, rl->fraction, rl->fraction_low, rl->fraction_high};
  for (size_t k = 0; k < 5; k++) csv_number(out, rl->present ? v[k] : NAN);
}

static gs_status csv_measurements(FILE *out, const gs_report *r) {
  fprintf(out,
          "%s,status,verification,step_samples,step_mean_s,step_median_s,step_p99_s,step_cv,"
          "items_per_step,item_unit,throughput_items_per_s,ideal_throughput_items_per_s,"
          "speedup,speedup_low,speedup_high,efficiency,efficiency_low,efficiency_high,karp_flatt,"
          "verdict,time_s,algbw_bytes_per_s,busbw_bytes_per_s,"
          "busbw_expected_bytes_per_s,busbw_consistent,link_bytes_per_s,nccl_version,"
          "loadgen_valid,loadgen_failed_criteria,samples_per_s,tokens_per_s,queries,"
          "latency_mean_s,latency_p50_s,latency_p90_s,latency_p99_s,latency_max_s,"
          "ttft_p50_s,ttft_p99_s,tpot_p50_s,tpot_p99_s,slo_targets,slo_met_share,"
          "slo_met_share_low,slo_met_share_high,goodput_requests_per_s,"
          "goodput_requests_per_s_low,goodput_requests_per_s_high,goodput_tokens_per_s,"
          "goodput_tokens_per_s_low,goodput_tokens_per_s_high,slo_percentile_met,rates_mode,"
          "rates_measured,max_rate_per_s,max_rate_bracket_low_per_s,max_rate_bracket_high_per_s,"
          "max_rate_converged,%s,%s,%s,%s\n",
          identity_head, gs_render_csv_straggler_head, gs_render_csv_arrival_head,
          gs_render_csv_pipeline_head, roofline_head);
  for (size_t i = 0; i < r->n_series; i++) {
    const gs_report_series *s = &r->series[i];
    for (size_t j = 0; j < s->n_rows; j++) {
      const gs_report_row *row = &s->rows[j];
      csv_identity(out, r, s, row);
      csv_text(out, row->status);
      csv_text(out, row->verification);
      fprintf(out, ",%zu", row->has_step ? row->step.n : (size_t)0);
      csv_number(out, row->has_step ? row->step.mean : NAN);
      csv_number(out, row->has_step ? row->step.median : NAN);
      csv_number(out, row->has_step ? row->step.p99 : NAN);
      csv_number(out, row->has_step ? row->step.cv : NAN);
      fprintf(out, ",%llu", (unsigned long long)row->items_per_step);
      csv_text(out, row->requests.present ? "tokens" : s->item_unit);
      csv_number(out, row->throughput);
      csv_number(out, row->ideal_throughput);
      csv_number(out, row->speedup);
      csv_number(out, row->speedup_low);
      csv_number(out, row->speedup_high);
      csv_number(out, row->efficiency);
      csv_number(out, row->speedup_low / (double)row->world_size);
      csv_number(out, row->speedup_high / (double)row->world_size);
      csv_number(out, row->karp_flatt);
      // The series' verdict, on the row it speaks of.
      csv_text(out, s->verdict != GS_VERDICT_NONE && row->world_size == s->verdict_world_size
                        ? gs_verdict_name(s->verdict)
                        : NULL);
      csv_number(out, row->collective.present ? (row->has_step ? row->step.mean
                                                 : row->collective.time) : NAN);
      csv_number(out, row->collective.algbw);
      csv_number(out, row->collective.busbw);
      csv_number(out, row->collective.busbw_expected);
      csv_bool(out, isfinite(row->collective.busbw_expected) && isfinite(row->collective.busbw)
                        ? !row->collective.busbw_mismatch
                        : -1);
      csv_number(out, row->collective.link_bandwidth);
      csv_text(out, row->collective.nccl_version);
      const loadgen_figures lg = loadgen_of(row);
      csv_bool(out, lg.valid);
      csv_text(out, lg.failed);
      csv_number(out, lg.samples);
      csv_number(out, lg.tokens);
      csv_number(out, lg.queries);
      for (size_t k = 0; k < 9; k++) csv_number(out, lg.seconds[k]);
      csv_goodput(out, row);
      csv_rates_answer(out, &row->rates);
      gs_render_csv_stragglers(out, row);
      gs_render_csv_arrival(out, row);
      gs_render_csv_pipeline(out, row);
      csv_roofline(out, row);
      fputc('\n', out);
    }
  }
  return GS_OK;
}

/* The samples a rank's CSV rows use: device clock when recorded, else wall. */
static const cJSON *rank_samples(const cJSON *rk, const char **clock) {
  const cJSON *dev = cJSON_GetObjectItemCaseSensitive(rk, "device_seconds");
  *clock = "device";
  if (cJSON_IsArray(dev)) return dev;
  *clock = "wall";
  const cJSON *wall = cJSON_GetObjectItemCaseSensitive(rk, "wall_seconds");
  return cJSON_IsArray(wall) ? wall : NULL;
}

/* The row of each (file, measurement): rows[file][measurement], with its
 * series; NULL where none (cannot happen after a successful load). */
typedef struct {
  const gs_report_series *series;
  const gs_report_row *row;
} placed_row;

static placed_row **index_rows(const gs_report *r) {
  placed_row **at = calloc(r->n_files ? r->n_files : 1, sizeof *at);
  if (!at) return NULL;
  for (size_t fi = 0; fi < r->n_files; fi++) {
    size_t n = (size_t)cJSON_GetArraySize(
        cJSON_GetObjectItemCaseSensitive(r->docs[fi], "measurements"));
    at[fi] = calloc(n ? n : 1, sizeof **at);
    if (!at[fi]) {
      for (size_t k = 0; k < fi; k++) free(at[k]);
      free(at);
      return NULL;
    }
  }
  for (size_t i = 0; i < r->n_series; i++)
    for (size_t j = 0; j < r->series[i].n_rows; j++) {
      const gs_report_row *row = &r->series[i].rows[j];
      at[row->file][row->measurement] = (placed_row){&r->series[i], row};
    }
  return at;
}

/* The identity columns of `p` and the run, once per run, as text. */
static char *sample_prefix(const gs_report *r, const placed_row *p, size_t run) {
  char *prefix = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&prefix, &len);
  if (!mem) return NULL;
  csv_identity(mem, r, p->series, p->row);
  fprintf(mem, ",%zu,", run);
  if (fclose(mem) != 0) {
    free(prefix);
    return NULL;
  }
  return prefix;
}

/* One row per sample: the step time of each iteration (rank "step"), then
 * each rank's time of that iteration (device clock when recorded, else
 * wall), in file, measurement, run, iteration order; the analysis has
 * already validated the structure. */
static gs_status csv_samples(FILE *out, const gs_report *r) {
  fprintf(out, "%s,run,iteration,rank,clock,time_s\n", identity_head);
  placed_row **at = index_rows(r);
  if (!at) return GS_ERR_NOMEM;
  gs_status st = GS_OK;
  char buf[64];
  for (size_t fi = 0; fi < r->n_files && st == GS_OK; fi++) {
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(r->docs[fi], "measurements");
    size_t mi = 0;
    for (const cJSON *m = ms ? ms->child : NULL; m && st == GS_OK; m = m->next, mi++) {
      if (!at[fi][mi].row) continue;
      const cJSON *runs = cJSON_GetObjectItemCaseSensitive(m, "runs");
      size_t ri = 0;
      for (const cJSON *run = runs ? runs->child : NULL; run; run = run->next, ri++) {
        const cJSON *steps = cJSON_GetObjectItemCaseSensitive(run, "step_seconds");
        const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(run, "ranks");
        size_t nranks = (size_t)cJSON_GetArraySize(ranks);
        // One cursor per rank, advanced together, so that the walk is linear.
        const cJSON **cur = calloc(nranks + 1, sizeof *cur);
        const char **clock = calloc(nranks + 1, sizeof *clock);
        char *prefix = cur && clock ? sample_prefix(r, &at[fi][mi], ri) : NULL;
        if (!prefix) {
          free(cur);
          free(clock);
          st = GS_ERR_NOMEM;
          break;
        }
        size_t k = 0;
        for (const cJSON *rk = ranks ? ranks->child : NULL; rk; rk = rk->next, k++) {
          const cJSON *use = rank_samples(rk, &clock[k]);
          cur[k] = use ? use->child : NULL;
        }
        const cJSON *step = cJSON_IsArray(steps) ? steps->child : NULL;
        for (size_t iter = 0;; iter++) {
          int any = step != NULL;
          for (k = 0; k < nranks; k++) any |= cur[k] != NULL;
          if (!any) break;
          if (step) {
            csv_number_text(cJSON_IsNumber(step) ? step->valuedouble : NAN, buf, sizeof buf);
            fprintf(out, "%s%zu,step,,%s\n", prefix, iter, buf);
            step = step->next;
          }
          k = 0;
          for (const cJSON *rk = ranks ? ranks->child : NULL; rk; rk = rk->next, k++) {
            if (!cur[k]) continue;
            const cJSON *num = cJSON_GetObjectItemCaseSensitive(rk, "rank");
            csv_number_text(cJSON_IsNumber(cur[k]) ? cur[k]->valuedouble : NAN, buf, sizeof buf);
            fprintf(out, "%s%zu,%.0f,%s,%s\n", prefix, iter,
                    cJSON_IsNumber(num) ? num->valuedouble : -1.0, clock[k], buf);
            cur[k] = cur[k]->next;
          }
        }
        free(cur);
        free(clock);
        free(prefix);
      }
    }
  }
  for (size_t fi = 0; fi < r->n_files; fi++) free(at[fi]);
  free(at);
  return st;
}

/* See internal.h. */
gs_status gs_report_render_csv(FILE *out, const gs_report *r, unsigned options) {
  if (options & GS_REPORT_CSV_SAMPLES) return csv_samples(out, r);
  return options & GS_REPORT_CSV_RATES ? csv_rates(out, r) : csv_measurements(out, r);
}
