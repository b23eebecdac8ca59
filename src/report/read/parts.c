/* The parts of the report analysis beyond scaling: the "why not N x" split
 * of the step (compute, exposed communication, imbalance, host overhead),
 * per-rank requests and telemetry, per-host symmetry, collective bus
 * bandwidth against the link, and cost. Formulas in docs/report.md. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/check.h"
#include "core/json.h"
#include "core/parse.h"
#include "core/coll_model.h"
#include "core/roofline.h"
#include "core/stats.h"
#include "report/read/read.h"

gs_rank_mark gs_report_mark_of(double deviation, const gs_report_thresholds *th) {
  if (!isfinite(deviation)) return GS_MARK_NONE;
  return deviation > th->critical   ? GS_MARK_CRITICAL
         : deviation > th->moderate ? GS_MARK_MODERATE
                                    : GS_MARK_GOOD;
}

gs_rank_mark gs_report_mark_success(gs_rank_mark mark, double success_rate) {
  if (!isfinite(success_rate)) return mark;
  gs_rank_mark by_success = success_rate < GS_REPORT_SUCCESS_CRITICAL   ? GS_MARK_CRITICAL
                            : success_rate < GS_REPORT_SUCCESS_MODERATE ? GS_MARK_MODERATE
                                                                        : GS_MARK_GOOD;
  return by_success > mark ? by_success : mark;
}

/* ---- why not N x ------------------------------------------------------------ */

typedef struct {
  const cJSON *dev, *wall, *comm;
} rank_cursor;

/* Sums the parts of one run into `sum` (step, compute, comm, imbalance, host). */
static void breakdown_run(rank_cursor *cur, size_t n_ranks, gs_report_breakdown *sum) {
  for (;;) {
    double slowest = -INFINITY;
    int complete = 1;
    for (size_t k = 0; k < n_ranks; k++) {
      const cJSON *w = cur[k].wall ? cur[k].wall : cur[k].dev;
      if (!w) return;  // a rank ran out of iterations: the run is done
      double t = gs_json_number_or_nan(w);
      if (!isfinite(t)) complete = 0;
      else if (t > slowest) slowest = t;
    }
    for (size_t k = 0; k < n_ranks; k++) {
      double wall = gs_json_number_or_nan(cur[k].wall ? cur[k].wall : cur[k].dev);
      double dev = cur[k].dev ? gs_json_number_or_nan(cur[k].dev) : wall;
      double comm = cur[k].comm ? gs_json_number_or_nan(cur[k].comm) : 0.0;
      if (complete && isfinite(dev) && isfinite(comm)) {
        sum->step += slowest;
        sum->compute += dev - comm;
        sum->comm += comm;
        sum->host += wall - dev;
        sum->imbalance += slowest - wall;
        sum->samples++;
      }
      if (cur[k].wall) cur[k].wall = cur[k].wall->next;
      if (cur[k].dev) cur[k].dev = cur[k].dev->next;
      if (cur[k].comm) cur[k].comm = cur[k].comm->next;
    }
  }
}

/* See read.h. */
gs_status gs_report_breakdown_read(const cJSON *m, const char *file, gs_report_row *row) {
  gs_report_breakdown *b = &row->breakdown;
  memset(b, 0, sizeof *b);
  b->ideal_step = NAN;
  b->device_clock = 1;
  rank_cursor *cur = calloc(row->n_ranks ? row->n_ranks : 1, sizeof *cur);
  if (!cur) return gs_error(GS_ERR_NOMEM, "%s: out of memory", file);
  int any_comm = 0;
  size_t ri = 0;
  for (const cJSON *run = gs_json_member(m, "runs") ? gs_json_member(m, "runs")->child : NULL; run;
       run = run->next, ri++) {
    size_t k = 0;
    const cJSON *first = gs_json_member(run, "ranks")->child;
    for (const cJSON *rk = first; rk && k < row->n_ranks; rk = rk->next, k++) {
      const cJSON *dev = gs_json_member(rk, "device_seconds");
      const cJSON *wall = gs_json_member(rk, "wall_seconds");
      const cJSON *comm = gs_json_member(rk, "comm_seconds");
      if (comm && !cJSON_IsNull(comm)) {
        if (!cJSON_IsArray(comm)) {
          free(cur);
          return gs_error(GS_ERR_FORMAT, "%s: runs[%zu].ranks[%zu].comm_seconds must be an array "
                                         "or null", file, ri, k);
        }
        for (const cJSON *x = comm->child; x; x = x->next)
          if (!cJSON_IsNumber(x) && !cJSON_IsNull(x)) {
            free(cur);
            return gs_error(GS_ERR_FORMAT, "%s: runs[%zu].ranks[%zu].comm_seconds must hold "
                                           "numbers or nulls", file, ri, k);
          }
        any_comm = 1;
      }
      if (!cJSON_IsArray(dev)) b->device_clock = 0;
      cur[k].dev = cJSON_IsArray(dev) ? dev->child : NULL;
      cur[k].wall = cJSON_IsArray(wall) ? wall->child : NULL;
      cur[k].comm = cJSON_IsArray(comm) ? comm->child : NULL;
      if (!cur[k].dev && !cur[k].wall) {
        // A rank without samples: nothing of this run can be split.
        memset(cur, 0, row->n_ranks * sizeof *cur);
        break;
      }
    }
    if (cur[0].dev || cur[0].wall) breakdown_run(cur, row->n_ranks, b);
  }
  free(cur);
  b->comm_measured = any_comm;
  if (b->samples > 0) {
    double n = (double)b->samples;
    b->step /= n;
    b->compute /= n;
    b->comm /= n;
    b->host /= n;
    b->imbalance /= n;
    b->available = 1;
  }
  return GS_OK;
}

/* ---- requests, telemetry, hosts ---------------------------------------------- */

/* Per-request times of a row's ok, not-cold requests (TTFT and TPOT), each
 * sized for all requests of the measurement. */
typedef struct {
  double *ttft, *tpot;
  size_t n_ttft, n_tpot;
} request_times;

/* Counts one rank record's requests into `k`; appends ok latencies to `lat`
 * and cold latencies to `cold` (each sized for all requests), and the TTFT
 * and TPOT of ok, not-cold requests to `times`; adds output tokens of ok
 * requests to `*tokens`. */
static void read_requests(const cJSON *reqs, gs_report_rank *k, double *lat, size_t *n_lat,
                          double *cold, size_t *n_cold, request_times *times, double *tokens) {
  for (const cJSON *q = reqs->child; q; q = q->next) {
    const cJSON *status = gs_json_member(q, "status");
    const char *s = cJSON_IsString(status) ? status->valuestring : "";
    double latency = gs_json_number_member(q, "latency_seconds");
    int is_cold = cJSON_IsTrue(gs_json_member(q, "cold"));
    if (is_cold) k->cold_requests++;
    k->requests++;
    if (strcmp(s, "ok") == 0) {
      k->requests_ok++;
      double out = gs_json_number_member(q, "output_tokens");
      if (isfinite(out)) *tokens += out;
      double ttft = gs_json_number_member(q, "ttft_seconds");
      double tpot = gs_json_number_member(q, "tpot_seconds");
      if (!is_cold && isfinite(ttft)) times->ttft[times->n_ttft++] = ttft;
      if (!is_cold && isfinite(tpot)) times->tpot[times->n_tpot++] = tpot;
    } else if (strcmp(s, "timed_out") == 0) {
      k->requests_timed_out++;
    } else {
      k->requests_failed++;
    }
    if (!isfinite(latency)) continue;
    if (is_cold)
      cold[(*n_cold)++] = latency;
    else if (strcmp(s, "ok") == 0)
      lat[(*n_lat)++] = latency;
  }
}

/* environment.gpus[i].memory_bytes of the GPU with CUDA index `device`. */
static double gpu_memory(const cJSON *doc, long device) {
  const cJSON *gpus = gs_json_member(gs_json_member(doc, "environment"), "gpus");
  for (const cJSON *g = gpus ? gpus->child : NULL; g; g = g->next) {
    double idx = gs_json_number_member(g, "index");
    if (idx == (double)device) return gs_json_number_member(g, "memory_bytes");
  }
  return NAN;
}

static void read_telemetry(const cJSON *doc, const cJSON *m, gs_report_row *row) {
  const double interval = gs_json_number_member(gs_json_member(m, "telemetry"), "interval_seconds");
  const cJSON *tel = gs_json_member(gs_json_member(m, "telemetry"), "ranks");
  for (const cJSON *t = cJSON_IsArray(tel) ? tel->child : NULL; t; t = t->next) {
    double rn = gs_json_number_member(t, "rank");
    if (!(rn >= 0) || rn >= (double)row->n_ranks || rn != floor(rn)) continue;
    gs_report_rank *k = &row->ranks[(size_t)rn];
    k->memory_used_bytes = gs_json_number_member(gs_json_member(t, "memory_used_bytes"), "mean");
    k->utilization =
        gs_json_number_member(gs_json_member(t, "utilization_percent"), "mean") / 100.0;
    k->telemetry_seconds = gs_json_number_member(t, "samples") * interval;
    double dev = gs_json_number_member(t, "device");
    if (isfinite(dev)) k->memory_total_bytes = gpu_memory(doc, (long)dev);
  }
}

static gs_report_host *host_of(gs_report_row *row, const char *name) {
  for (size_t h = 0; h < row->n_hosts; h++)
    if (strcmp(row->hosts[h].name, name) == 0) return &row->hosts[h];
  gs_report_host *h = &row->hosts[row->n_hosts++];
  memset(h, 0, sizeof *h);
  snprintf(h->name, sizeof h->name, "%s", name);
  h->min = INFINITY;
  h->max = -INFINITY;
  return h;
}

/* Per-host numbers from the ranks: samples pooled exactly from the ranks'
 * n, mean and stddev; rates added; marks against the median host. */
static gs_status group_hosts(gs_report_row *row, const gs_report_thresholds *th) {
  row->hosts = calloc(row->n_ranks, sizeof *row->hosts);
  if (!row->hosts) return gs_error(GS_ERR_NOMEM, "out of memory");
  double *sum = calloc(row->n_ranks, sizeof *sum), *stable = calloc(row->n_ranks, sizeof *stable);
  double *memory = calloc(row->n_ranks, sizeof *memory);
  size_t *mem_n = calloc(row->n_ranks, sizeof *mem_n);
  if (!sum || !stable || !memory || !mem_n) {
    free(sum), free(stable), free(memory), free(mem_n);
    return gs_error(GS_ERR_NOMEM, "out of memory");
  }
  for (size_t r = 0; r < row->n_ranks; r++) {
    const gs_report_rank *k = &row->ranks[r];
    gs_report_host *h = host_of(row, k->host ? k->host : "-");
    size_t hi = (size_t)(h - row->hosts);
    h->n_ranks++;
    h->requests += k->requests;
    h->requests_ok += k->requests_ok;
    if (k->cold_flag || k->first_sample_flag) h->cold_ranks++;
    if (isfinite(k->throughput)) h->throughput += k->throughput;
    if (isfinite(k->tokens_per_second)) h->tokens_per_second += k->tokens_per_second;
    if (isfinite(k->memory_used_bytes)) memory[hi] += k->memory_used_bytes, mem_n[hi]++;
    if (k->n == 0) continue;
    h->n += k->n;
    sum[hi] += k->mean * (double)k->n;
    stable[hi] += k->stable_share * (double)k->n;
    if (k->min < h->min) h->min = k->min;
    if (k->max > h->max) h->max = k->max;
  }
  for (size_t hi = 0; hi < row->n_hosts; hi++) {
    gs_report_host *h = &row->hosts[hi];
    h->mean = h->n ? sum[hi] / (double)h->n : NAN;
    h->stable_share = h->n ? stable[hi] / (double)h->n : NAN;
    if (!h->n) h->min = h->max = NAN;
    // Pooled variance: within-rank sums of squares plus between-rank ones.
    double ss = 0.0;
    for (size_t r = 0; r < row->n_ranks; r++) {
      const gs_report_rank *k = &row->ranks[r];
      if (k->n == 0 || strcmp(k->host ? k->host : "-", h->name) != 0) continue;
      ss += (double)(k->n - 1) * k->stddev * k->stddev +
            (double)k->n * (k->mean - h->mean) * (k->mean - h->mean);
    }
    h->stddev = h->n > 1 ? sqrt(ss / (double)(h->n - 1)) : (h->n ? 0.0 : NAN);
    h->per_rank = h->throughput > 0 ? h->throughput / (double)h->n_ranks : NAN;
    h->success_rate = h->requests ? (double)h->requests_ok / (double)h->requests : NAN;
    h->memory_used_bytes = mem_n[hi] ? memory[hi] / (double)mem_n[hi] : NAN;
    if (h->tokens_per_second == 0.0 && h->requests == 0) h->tokens_per_second = NAN;
    h->deviation = NAN;
  }
  free(sum), free(stable), free(memory), free(mem_n);

  row->host_spread_cv = NAN;
  double *v = malloc((row->n_hosts ? row->n_hosts : 1) * sizeof *v);
  if (!v) return gs_error(GS_ERR_NOMEM, "out of memory");
  size_t n = 0;
  for (size_t hi = 0; hi < row->n_hosts; hi++)
    if (isfinite(row->hosts[hi].per_rank)) v[n++] = row->hosts[hi].per_rank;
  if (n >= 2) {
    gs_stats s;
    gs_status st = gs_stats_compute(v, n, &s);
    if (st != GS_OK) {
      free(v);
      return st;
    }
    row->host_spread_cv = s.cv;
    for (size_t hi = 0; hi < row->n_hosts; hi++) {
      gs_report_host *h = &row->hosts[hi];
      if (isfinite(h->per_rank) && s.median > 0)
        h->deviation = fabs(h->per_rank - s.median) / s.median;
    }
  }
  free(v);
  for (size_t hi = 0; hi < row->n_hosts; hi++) {
    gs_report_host *h = &row->hosts[hi];
    h->mark = gs_report_mark_success(gs_report_mark_of(h->deviation, th), h->success_rate);
  }
  return GS_OK;
}

/* The sum of llm.run_seconds of a request-based measurement; NaN when it is
 * not recorded (or not all numbers). */
static double run_seconds_of(const cJSON *m) {
  const cJSON *secs = gs_json_member(gs_json_member(m, "llm"), "run_seconds");
  if (!cJSON_IsArray(secs) || !secs->child) return NAN;
  double sum = 0.0;
  for (const cJSON *x = secs->child; x; x = x->next) sum += gs_json_number_or_nan(x);
  return sum;
}

/* llm.ranks[].busy_seconds of rank `r`; NaN when not recorded. */
static double busy_seconds_of(const cJSON *m, size_t r) {
  const cJSON *ranks = gs_json_member(gs_json_member(m, "llm"), "ranks");
  for (const cJSON *x = cJSON_IsArray(ranks) ? ranks->child : NULL; x; x = x->next)
    if (gs_json_number_member(x, "rank") == (double)r)
      return gs_json_number_member(x, "busy_seconds");
  return NAN;
}

/* Statistics of `n` request times into `out` (n == 0 leaves it zeroed). */
static gs_status request_stats(const double *v, size_t n, gs_stats *out, const char *file,
                               const char *what) {
  memset(out, 0, sizeof *out);
  if (n == 0) return GS_OK;
  gs_status st = gs_stats_compute(v, n, out);
  return st == GS_OK ? GS_OK : gs_error(st, "%s: %s: %s", file, what, gs_last_error());
}

/* The goodput of a request-based measurement against the targets its
 * "llm.slo" names, recomputed from every run's requests that are not
 * cold (core/slo; the runs are the bootstrap's groups). */
static gs_status read_goodput(const cJSON *m, const char *file, size_t total,
                              gs_report_requests *q) {
  gs_slo_from_json(gs_json_member(gs_json_member(m, "llm"), "slo"), &q->slo);
  const cJSON *runs = gs_json_member(m, "runs");
  const size_t n_runs = (size_t)cJSON_GetArraySize(runs);
  gs_slo_request *reqs = malloc((total + 1) * sizeof *reqs);
  size_t *sizes = calloc(n_runs + 1, sizeof *sizes);
  if (!reqs || !sizes) {
    free(reqs), free(sizes);
    return gs_error(GS_ERR_NOMEM, "%s: out of memory", file);
  }
  size_t n = 0, r = 0;
  for (const cJSON *run = runs ? runs->child : NULL; run; run = run->next, r++)
    for (const cJSON *rk = gs_json_member(run, "ranks")->child; rk; rk = rk->next) {
      const cJSON *list = gs_json_member(rk, "requests");
      for (const cJSON *x = cJSON_IsArray(list) ? list->child : NULL; x && n < total; x = x->next) {
        if (cJSON_IsTrue(gs_json_member(x, "cold"))) continue;
        const char *st = gs_json_string_member(x, "status", "");
        reqs[n++] = (gs_slo_request){strcmp(st, "ok") == 0,
                                     gs_json_number_member(x, "ttft_seconds"),
                                     gs_json_number_member(x, "tpot_seconds"),
                                     gs_json_number_member(x, "latency_seconds"),
                                     gs_json_number_member(x, "output_tokens"),
                                     gs_json_number_member(x, "arrival_seconds")};
        sizes[r]++;
      }
    }
  gs_status st = gs_slo_goodput_compute(&q->slo, reqs, n, sizes, n_runs, q->run_seconds,
                                        &q->goodput);
  free(reqs), free(sizes);
  return st == GS_OK ? GS_OK : gs_error(st, "%s: goodput: %s", file, gs_last_error());
}

/* See read.h. */
gs_status gs_report_rank_extras(const cJSON *doc, const cJSON *m, const char *file,
                                const gs_report_thresholds *th, gs_report_row *row) {
  size_t total = 0;
  // Request-based: what the llm workload writes (docs/result-schema.md).
  row->requests.present = cJSON_IsObject(gs_json_member(m, "llm"));
  gs_slo_none(&row->requests.slo);
  const cJSON *runs = gs_json_member(m, "runs");
  for (const cJSON *run = runs ? runs->child : NULL; run; run = run->next)
    for (const cJSON *rk = gs_json_member(run, "ranks")->child; rk; rk = rk->next) {
      const cJSON *reqs = gs_json_member(rk, "requests");
      if (reqs && !cJSON_IsNull(reqs) && !cJSON_IsArray(reqs))
        return gs_error(GS_ERR_FORMAT, "%s: a rank's \"requests\" must be an array or null", file);
      total += (size_t)cJSON_GetArraySize(reqs);
    }
  double *lat = malloc((total + 1) * sizeof *lat), *cold = malloc((total + 1) * sizeof *cold);
  request_times times = {malloc((total + 1) * sizeof *times.ttft),
                         malloc((total + 1) * sizeof *times.tpot), 0, 0};
  if (!lat || !cold || !times.ttft || !times.tpot) {
    free(lat), free(cold), free(times.ttft), free(times.tpot);
    return gs_error(GS_ERR_NOMEM, "%s: out of memory", file);
  }
  const cJSON *scenario = gs_json_member(m, "scenario");
  row->requests.scenario = cJSON_IsString(scenario) ? scenario->valuestring : NULL;
  int server = row->requests.scenario && strcmp(row->requests.scenario, "server") == 0;
  row->requests.generated_tokens = 0.0;
  row->requests.run_seconds = run_seconds_of(m);
  for (size_t r = 0; r < row->n_ranks; r++) {
    gs_report_rank *k = &row->ranks[r];
    k->success_rate = k->tokens_per_second = NAN;
    k->memory_used_bytes = k->memory_total_bytes = k->utilization = NAN;
    size_t n_lat = 0, n_cold = 0;
    double tokens = 0.0;
    for (const cJSON *run = gs_json_member(m, "runs")->child; run; run = run->next)
      for (const cJSON *rk = gs_json_member(run, "ranks")->child; rk; rk = rk->next) {
        if (gs_json_number_member(rk, "rank") != (double)r) continue;
        const cJSON *host = gs_json_member(rk, "host");
        if (!k->host && cJSON_IsString(host)) k->host = host->valuestring;
        const cJSON *reqs = gs_json_member(rk, "requests");
        if (cJSON_IsArray(reqs))
          read_requests(reqs, k, lat, &n_lat, cold, &n_cold, &times, &tokens);
        double failed = gs_json_number_member(rk, "failed_samples");
        if (failed > 0) k->failed_samples += (uint64_t)failed;
        k->samples_taken += (uint64_t)cJSON_GetArraySize(gs_json_member(rk, "wall_seconds"));
      }
    // Samples declared failed (fail fault): the success rate of a step-based rank.
    if (k->requests == 0 && k->failed_samples > 0 && k->samples_taken > 0)
      k->success_rate = 1.0 - (double)k->failed_samples / (double)k->samples_taken;
    if (k->requests == 0) continue;
    row->requests.generated_tokens += tokens;
    k->success_rate = (double)k->requests_ok / (double)k->requests;
    // The samples are latencies of overlapping requests: their sum is not
    // the time the rank was busy. The run records that time per rank.
    double busy = busy_seconds_of(m, r);
    if (!isfinite(busy)) busy = k->n ? k->mean * (double)k->n : 0.0;
    if (busy > 0) k->tokens_per_second = tokens / busy;
    // A rank's speed for the symmetry marks is its tokens/s, not its
    // tokens over one mean latency. In the server scenario arrivals pace
    // every rank (its busy time includes waiting for them): no speed to
    // compare, only the success rate marks.
    if (row->requests.present) k->throughput = server ? NAN : k->tokens_per_second;
    if (n_lat > 0) {
      gs_stats_sort(lat, n_lat);
      double median = gs_stats_percentile_sorted(lat, n_lat, 50.0);
      for (size_t i = 0; i < n_cold; i++)
        if (cold[i] > GS_REPORT_COLD_FLAG * median) k->cold_outliers++;
    }
  }
  gs_status st = request_stats(times.ttft, times.n_ttft, &row->requests.ttft, file, "ttft_seconds");
  if (st == GS_OK) st = request_stats(times.tpot, times.n_tpot, &row->requests.tpot, file,
                                      "tpot_seconds");
  free(lat), free(cold), free(times.ttft), free(times.tpot);
  if (st == GS_OK && row->requests.present) st = read_goodput(m, file, total, &row->requests);
  if (st != GS_OK) return st;
  const gs_report_requests *q = &row->requests;
  if (q->present) row->throughput = q->run_seconds > 0 ? q->generated_tokens / q->run_seconds : NAN;
  read_telemetry(doc, m, row);
  return group_hosts(row, th);
}

/* ---- placement, faults and plan tasks ------------------------------------------- */

/* Appends `text` to `dst` (size `size`), truncating. */
static void append_text(char *dst, size_t size, const char *text) {
  size_t len = strlen(dst);
  if (len + 1 < size) snprintf(dst + len, size - len, "%s", text);
}

/* See read.h. */
void gs_report_placement_read(const cJSON *doc, const cJSON *m, gs_report_row *row) {
  row->placement.split_units[0] = row->placement.faults[0] = '\0';
  const cJSON *units = gs_json_member(gs_json_member(m, "split"), "units");
  for (const cJSON *u = cJSON_IsArray(units) ? units->child : NULL; u; u = u->next) {
    char one[32];
    snprintf(one, sizeof one, "%s%.0f", u == units->child ? "" : ",", gs_json_number_or_nan(u));
    append_text(row->placement.split_units, sizeof row->placement.split_units, one);
  }
  const cJSON *faults = gs_json_member(m, "faults");
  for (const cJSON *f = cJSON_IsArray(faults) ? faults->child : NULL; f; f = f->next) {
    const cJSON *kind = gs_json_member(f, "kind");
    double rank = gs_json_number_member(f, "rank");
    char one[96];
    snprintf(one, sizeof one, "%s%s rank %.0f", f == faults->child ? "" : "; ",
             cJSON_IsString(kind) ? kind->valuestring : "?", rank);
    append_text(row->placement.faults, sizeof row->placement.faults, one);
    // The kind's parameters, whatever they are (factor, rate, after, seconds).
    for (const cJSON *p = f->child; p; p = p->next) {
      if (!p->string || strcmp(p->string, "kind") == 0 || strcmp(p->string, "rank") == 0)
        continue;
      if (cJSON_IsString(p))
        snprintf(one, sizeof one, " %s=%s", p->string, p->valuestring);
      else
        snprintf(one, sizeof one, " %s=%.6g", p->string, gs_json_number_or_nan(p));
      append_text(row->placement.faults, sizeof row->placement.faults, one);
    }
    if (rank >= 0 && rank < (double)row->n_ranks && rank == floor(rank)) {
      row->ranks[(size_t)rank].injected = 1;
      if (cJSON_IsString(kind) && strcmp(kind->valuestring, "delay") == 0)
        row->ranks[(size_t)rank].injected_delay = 1;
    }
  }
  row->placement.task = -1;
  row->placement.task_spec = NULL;
  double task = gs_json_number_member(m, "task");
  if (task >= 0 && task == floor(task) && task < 1e6) {
    row->placement.task = (int)task;
    const cJSON *spec =
        gs_json_member(cJSON_GetArrayItem(gs_json_member(gs_json_member(doc, "config"), "tasks"),
                                          row->placement.task), "spec");
    if (cJSON_IsString(spec)) row->placement.task_spec = spec->valuestring;
  }
}

/* ---- collectives and cost ------------------------------------------------------ */

/* A bandwidth member of the collective object, "<name>_bytes_per_second"
 * (docs/collectives.md), in bytes/s. */
static double coll_bandwidth(const cJSON *coll, const char *name) {
  char key[64];
  snprintf(key, sizeof key, "%s_bytes_per_second", name);
  return gs_json_number_member(coll, key);
}

/* The largest off-diagonal entry of environment.topology.nvlink_bandwidth_bytes_per_s. */
static double link_bandwidth(const cJSON *doc) {
  const cJSON *mat = gs_json_member(gs_json_member(gs_json_member(doc, "environment"), "topology"),
                            "nvlink_bandwidth_bytes_per_s");
  double best = NAN;
  size_t i = 0;
  for (const cJSON *line = cJSON_IsArray(mat) ? mat->child : NULL; line; line = line->next, i++) {
    size_t j = 0;
    for (const cJSON *x = cJSON_IsArray(line) ? line->child : NULL; x; x = x->next, j++) {
      double v = gs_json_number_or_nan(x);
      if (i != j && v > 0 && !(v <= best)) best = v;
    }
  }
  return best;
}

static const char *gpu_name(const cJSON *doc, double device) {
  const cJSON *gpus = gs_json_member(gs_json_member(doc, "environment"), "gpus");
  for (const cJSON *g = gpus ? gpus->child : NULL; g; g = g->next) {
    const cJSON *name = gs_json_member(g, "name");
    if (gs_json_number_member(g, "index") == device && cJSON_IsString(name))
      return name->valuestring;
  }
  return NULL;
}

/* Checks the row's busbw against algbw x its op's bus factor, nccl-tests'
 * own formula (docs/collectives.md): a document whose busbw was edited, or
 * whose rank count is not the one the figures were computed for, fails. */
static void busbw_check(gs_report_row *row) {
  row->collective.busbw_factor = gs_coll_busbw_factor_of(row->collective.op, row->world_size);
  row->collective.busbw_expected = row->collective.algbw * row->collective.busbw_factor;
  if (!isfinite(row->collective.busbw_expected) || !isfinite(row->collective.busbw)) return;
  const double off = fabs(row->collective.busbw - row->collective.busbw_expected);
  const double rounding = GS_REPORT_BUSBW_ROUNDING * (1.0 + row->collective.busbw_factor);
  row->collective.busbw_mismatch =
      off > GS_REPORT_BUSBW_TOLERANCE * row->collective.busbw_expected && off > rounding;
}

/* See read.h. */
void gs_report_collective_read(const cJSON *doc, const cJSON *m, gs_report_row *row) {
  gs_report_collective *c = &row->collective;
  c->bytes = c->busbw = c->algbw = c->link_bandwidth = NAN;
  c->root = c->busbw_factor = c->busbw_expected = NAN;
  c->in_place = -1;
  const cJSON *coll = gs_json_member(m, "collective");
  const cJSON *wl = gs_json_member(m, "workload");
  if (!cJSON_IsString(wl) || strcmp(wl->valuestring, "coll") != 0 || !cJSON_IsObject(coll)) return;
  c->present = 1;
  c->op = gs_json_string_member(coll, "op", NULL);
  c->bytes = gs_json_number_member(coll, "bytes");
  c->dtype = gs_json_string_member(coll, "dtype", NULL);
  c->redop = gs_json_string_member(coll, "redop", NULL);
  c->root = gs_json_number_member(coll, "root");
  const cJSON *in_place = gs_json_member(coll, "in_place");
  c->in_place = cJSON_IsBool(in_place) ? cJSON_IsTrue(in_place) : -1;
  c->busbw = coll_bandwidth(coll, "busbw");
  c->algbw = coll_bandwidth(coll, "algbw");
  c->link_bandwidth = link_bandwidth(doc);
  busbw_check(row);
}

/* See read.h. */
void gs_report_cost_read(const cJSON *doc, const cJSON *m, const gs_report_prices *prices,
                         gs_report_row *row) {
  gs_report_cost *cost = &row->cost;
  cost->price_per_hour = cost->items_per_dollar = cost->dollars_per_million = NAN;
  const cJSON *devices = gs_json_member(m, "devices");
  double price = 0.0;
  size_t n = 0;
  for (const cJSON *d = cJSON_IsArray(devices) ? devices->child : NULL; d; d = d->next, n++) {
    const char *name = cJSON_IsNumber(d) ? gpu_name(doc, d->valuedouble) : NULL;
    if (!cost->gpu_model) cost->gpu_model = name;
    price += name && prices ? gs_report_price_of(prices, name) : NAN;
  }
  if (n == 0 || !prices || prices->n == 0 || !(price > 0)) return;
  cost->price_per_hour = price;
  if (isfinite(row->throughput) && row->throughput > 0) {
    cost->items_per_dollar = row->throughput * 3600.0 / price;
    cost->dollars_per_million = 1e6 / cost->items_per_dollar;
  }
}

/* See read.h. */
gs_status gs_report_roofline_read(const cJSON *m, gs_report_row *row) {
  gs_report_roofline *rl = &row->roofline;
  *rl = (gs_report_roofline){.achieved = NAN, .achieved_low = NAN, .achieved_high = NAN,
                             .peak = NAN, .fraction = NAN, .fraction_low = NAN,
                             .fraction_high = NAN};
  const cJSON *o = gs_json_member(m, "roofline");
  if (!cJSON_IsObject(o)) return GS_OK;
  rl->present = 1;
  rl->bound = gs_json_string_member(o, "bound", "-");
  rl->achieved = gs_json_number_member(o, "achieved_per_second");
  rl->peak = gs_json_number_member(o, "peak_per_second");
  rl->fraction = gs_json_number_member(o, "fraction");
  rl->model = gs_json_string_member(o, "model", NULL);
  rl->why = gs_json_string_member(o, "why", NULL);
  // The median step's interval: from the steps, with what is too few.
  const gs_stats_group steps = {row->step_samples, row->has_step ? row->step.n : 0};
  gs_roofline_step step;
  GS_TRY(gs_roofline_step_of(&steps, 1, &step));
  if (cJSON_GetObjectItemCaseSensitive(o, "fraction_low")) {
    // As recorded (null where the writer had no interval).
    rl->achieved_low = gs_json_number_member(o, "achieved_low_per_second");
    rl->achieved_high = gs_json_number_member(o, "achieved_high_per_second");
    rl->fraction_low = gs_json_number_member(o, "fraction_low");
    rl->fraction_high = gs_json_number_member(o, "fraction_high");
  } else {
    // Written before the intervals were: the rates were measured over
    // this same median (the type 7 percentile of the same steps).
    gs_roofline_rate_interval(rl->achieved, &step, &rl->achieved_low, &rl->achieved_high);
    gs_roofline_rate_interval(rl->fraction, &step, &rl->fraction_low, &rl->fraction_high);
  }
  rl->too_few_steps = isfinite(rl->fraction) && step.too_few;
  return GS_OK;
}

/* See row.h. */
gs_status gs_report_parse_prices(const char *text, gs_report_prices *out) {
  memset(out, 0, sizeof *out);
  const char *p = text;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    if (!eq || eq == p)
      return gs_error(GS_ERR_USAGE, "option --price: '%.*s' is not MODEL=DOLLARS_PER_GPU_HOUR "
                                    "(e.g. H100=7)", (int)len, p);
    if (out->n == GS_REPORT_PRICES_MAX)
      return gs_error(GS_ERR_USAGE, "option --price: more than %d models", GS_REPORT_PRICES_MAX);
    size_t key_len = (size_t)(eq - p);
    if (key_len >= sizeof out->p[0].model)
      return gs_error(GS_ERR_USAGE, "option --price: model name '%.*s' is too long", (int)key_len, p);
    char value[64];
    size_t value_len = len - key_len - 1;
    if (value_len == 0 || value_len >= sizeof value)
      return gs_error(GS_ERR_USAGE, "option --price: '%.*s' has no valid price", (int)len, p);
    memcpy(value, eq + 1, value_len);
    value[value_len] = '\0';
    gs_report_price *pr = &out->p[out->n];
    memcpy(pr->model, p, key_len);
    pr->model[key_len] = '\0';
    gs_status st = gs_parse_double(value, "--price", 1e-12, 1e12, &pr->per_hour);
    if (st != GS_OK) return st;
    for (size_t i = 0; i < out->n; i++)
      if (strcasecmp(out->p[i].model, pr->model) == 0)
        return gs_error(GS_ERR_USAGE, "option --price: model %s given twice", pr->model);
    out->n++;
    if (!end) break;
    p = end + 1;
    if (!*p) return gs_error(GS_ERR_USAGE, "option --price: trailing comma");
  }
  if (out->n == 0) return gs_error(GS_ERR_USAGE, "option --price: no MODEL=PRICE given");
  return GS_OK;
}

/* 1 when `key` occurs in `name` case-insensitively, bounded by the ends of
 * the name or characters that are not letters or digits. */
static int has_word(const char *name, const char *key) {
  size_t kl = strlen(key), nl = strlen(name);
  for (size_t i = 0; i + kl <= nl; i++) {
    if (strncasecmp(name + i, key, kl) != 0) continue;
    int left_ok = i == 0 || !isalnum((unsigned char)name[i - 1]);
    int right_ok = i + kl == nl || !isalnum((unsigned char)name[i + kl]);
    if (left_ok && right_ok) return 1;
  }
  return 0;
}

/* See row.h. */
double gs_report_price_of(const gs_report_prices *prices, const char *name) {
  const gs_report_price *best = NULL;
  for (size_t i = 0; i < prices->n; i++)
    if (has_word(name, prices->p[i].model) &&
        (!best || strlen(prices->p[i].model) > strlen(best->model)))
      best = &prices->p[i];
  return best ? best->per_hour : NAN;
}

