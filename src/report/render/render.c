/* The report's sections for people: per series the scaling, "why not N x",
 * request, collective, rank and host tables and the recommendation, the
 * plan section, as terminal text, GitHub Markdown or one HTML page (one
 * table builder serves all three: table.c); and the dispatch of
 * gs_report_render to them, to CSV (csv.c) and to JSON
 * (json.c). Columns are described in docs/report.md. */
#include "core/format.h"
#include "core/roofline.h"
#include "report/analyze/machine.h"
#include "report/analyze/quantile.h"
#include "report/render/goodput.h"
#include "report/render/internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const gs_report_format_choices[] = {"text", "markdown", "csv", "json", "html", NULL};

static const char *scaling_text(const char *scaling) {
  if (strcmp(scaling, "strong") == 0)
    return "strong scaling (fixed total work; speedup = T(1) / T(N))";
  if (strcmp(scaling, "weak") == 0)
    return "weak scaling (fixed work per rank; speedup is the scaled speedup)";
  if (strcmp(scaling, "none") == 0) return "no scaling sweep (single run)";
  return "scaling not recorded";
}

/* Under the why-not table: per rank count, the compute efficiency (a
 * rank's share of the 1-rank compute over its compute) and the part that
 * lost most against its share of the 1-rank step (docs/report.md). */
static gs_status compute_efficiency_line(gs_render_writer *w, const gs_report_series *s) {
  char text[1024] = "";
  size_t n = 0;
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_breakdown *b = &s->rows[i].breakdown;
    if (!b->available || !b->has_losses || s->rows[i].world_size < 2 ||
        !isfinite(b->losses.compute_efficiency) || n + 160 > sizeof text)
      continue;
    n += (size_t)snprintf(text + n, sizeof text - n, "%s%d ranks %.1f%% (main loss: %s)",
                          n ? ", " : "", s->rows[i].world_size,
                          100.0 * b->losses.compute_efficiency,
                          b->losses.main_loss >= 0 ? gs_scaling_part_name(b->losses.main_loss)
                                                   : "none");
  }
  if (n == 0) return GS_OK;
  gs_render_block(w, 0, "    ", "Compute efficiency (a rank's share of the 1-rank compute over "
                  "its compute; 100%%: its share of the work runs at the 1-rank rate): %s.", text);
  return GS_OK;
}

/* Where each row stands against its workload's bound, as the document
 * recorded it (docs/report.md, "Roofline"); nothing when no row has one. */
static gs_status roofline_table(gs_render_writer *w, const gs_report_series *s) {
  const gs_report_roofline *first = NULL;
  for (size_t i = 0; i < s->n_rows && !first; i++)
    if (s->rows[i].roofline.present) first = &s->rows[i].roofline;
  if (!first) return GS_OK;
  const int memory = strcmp(first->bound, "memory") == 0;
  gs_render_block(w, -1, "  ",
                  "Roofline: %s per step / median step, against the summed peak of the row's "
                  "GPUs for the bound (the GPU models' figures; docs/workloads/); the fraction's "
                  "95%% interval from the median step's",
                  memory ? "bytes" : "flops");
  static const char *const head[] = {"ranks", "bound", "achieved", "peak", "fraction",
                                     "model or why not"};
  static const char *const math_head[] = {"achieved FLOP/s", "peak FLOP/s"};
  static const int left[] = {0, 1, 0, 0, 0, 1};
  gs_render_table t;
  gs_render_table_init(&t, 6, head, left);
  if (!memory) {
    t.head[2] = math_head[0];
    t.head[3] = math_head[1];
  }
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_roofline *rl = &s->rows[i].roofline;
    if (!rl->present) continue;
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    gs_render_cellf(c[0], "%d", s->rows[i].world_size);
    gs_render_cellf(c[1], "%s", rl->bound);
    void (*rate)(char *, double) = memory ? gs_render_bandwidth : gs_render_rate;
    rate(c[2], rl->achieved);
    rate(c[3], rl->peak);
    char fraction[GS_RENDER_CELL];
    gs_roofline_fraction_text(rl->fraction, rl->fraction_low, rl->fraction_high,
                              rl->too_few_steps, "steps", fraction, sizeof fraction);
    gs_render_cellf(c[4], "%s", fraction);
    gs_render_cellf(c[5], "%s", rl->model ? rl->model : rl->why ? rl->why : "-");
  }
  return gs_render_table_done(w, &t, "  ");
}

/* "Why not N x": the step of each row split into its parts (docs/report.md). */
static gs_status breakdown_table(gs_render_writer *w, const gs_report_series *s) {
  size_t shown = 0;
  for (size_t i = 0; i < s->n_rows; i++) shown += s->rows[i].breakdown.available;
  if (shown == 0) return GS_OK;
  gs_render_block(w, -1, "  ",
                  "Why not N x: the wall-clock step (slowest rank per iteration) split per "
                  "rank and iteration into compute (device - comm), exposed communication "
                  "(comm_seconds), load imbalance (step - the rank's wall time) and host "
                  "overhead (wall - device); share of the step in parentheses");
  static const char *const head[] = {"ranks", "step", "ideal", "compute", "comm",
                                     "imbalance", "host", "notes"};
  static const int left[] = {0, 0, 0, 0, 0, 0, 0, 1};
  gs_render_table t;
  gs_render_table_init(&t, 8, head, left);
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_breakdown *b = &s->rows[i].breakdown;
    if (!b->available) continue;
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    gs_render_cellf(c[0], "%d", s->rows[i].world_size);
    gs_render_time(c[1], b->step);
    gs_render_time(c[2], b->ideal_step);
    const double parts[4] = {b->compute, b->comm, b->imbalance, b->host};
    for (int p = 0; p < 4; p++) {
      char share[32];
      snprintf(share, sizeof share, " (%.1f%%)", b->step > 0 ? 100.0 * parts[p] / b->step : 0.0);
      gs_render_time_noted(c[3 + p], parts[p], share);
    }
    gs_render_cellf(c[7], "%s%s%s", b->comm_measured ? "" : "comm not recorded",
          !b->comm_measured && !b->device_clock ? "; " : "",
          b->device_clock ? "" : "no device clock: host overhead 0");
    if (!c[7][0]) gs_render_cellf(c[7], "-");
  }
  gs_status st = gs_render_table_done(w, &t, "    ");
  return st == GS_OK ? compute_efficiency_line(w, s) : st;
}

/* Request-based rows (llm): throughput from the run time, TTFT and TPOT. */
static gs_status request_table(gs_render_writer *w, const gs_report_series *s) {
  size_t shown = 0, piped = 0;
  for (size_t i = 0; i < s->n_rows; i++) {
    shown += s->rows[i].requests.present;
    piped += s->rows[i].requests.present && s->rows[i].pipeline.present;
  }
  if (shown == 0) return GS_OK;
  gs_render_block(w, -1, "  ",
                  "Requests: throughput = tokens of ok requests / run seconds (the table's "
                  "n, mean and median are per-request latencies); TTFT and TPOT over ok "
                  "requests that are not cold. Why not N x: the compute/"
                  "communication/imbalance/host split does not apply to requests%s",
                  piped ? "; a pipeline's bubble, stage imbalance and transfers are in the "
                          "Pipeline table above" : "");
  static const char *const head[] = {"ranks",     "scenario",  "requests",  "ok",
                                     "tokens",    "run time",     "tokens/s",  "TTFT p50",
                                     "TTFT p99",  "TPOT p50",  "TPOT p99"};
  static const int left[] = {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  gs_render_table t;
  gs_render_table_init(&t, 11, head, left);
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    if (!row->requests.present) continue;
    size_t requests = 0, ok = 0;
    for (size_t k = 0; k < row->n_ranks; k++)
      requests += row->ranks[k].requests, ok += row->ranks[k].requests_ok;
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    gs_render_cellf(c[0], "%d", row->world_size);
    gs_render_cellf(c[1], "%s", row->requests.scenario ? row->requests.scenario : "-");
    gs_render_cellf(c[2], "%zu", requests);
    gs_render_cellf(c[3], "%zu", ok);
    gs_render_fixed(c[4], row->requests.generated_tokens, 0, "");
    gs_render_time(c[5], row->requests.run_seconds);
    gs_render_rate(c[6], row->throughput);
    gs_render_time(c[7], row->requests.ttft.n ? row->requests.ttft.p50 : NAN);
    gs_render_time(c[8], row->requests.ttft.n ? row->requests.ttft.p99 : NAN);
    gs_render_time(c[9], row->requests.tpot.n ? row->requests.tpot.p50 : NAN);
    gs_render_time(c[10], row->requests.tpot.n ? row->requests.tpot.p99 : NAN);
  }
  return gs_render_table_done(w, &t, "    ");
}

/* Ingested LoadGen rows: per rank what its log says (docs/report.md,
 * "Ingested documents"). */
static gs_status loadgen_table(gs_render_writer *w, const gs_report *r,
                               const gs_report_series *s) {
  size_t shown = 0;
  for (size_t i = 0; i < s->n_rows; i++) shown += s->rows[i].loadgen;
  if (shown == 0) return GS_OK;
  gs_render_block(w, -1, "  ",
                  "LoadGen (ingested): throughput as LoadGen reports it (Offline samples/s, "
                  "Server completed samples/s, SingleStream queries/s); latency, TTFT and "
                  "TPOT; failed = the LoadGen criteria not satisfied");
  // One line per file and rank: each is a run of its own (its scenario and
  // LoadGen's validity), never a point of a series.
  static const char *const head[] = {"file", "ranks",   "rank",    "scenario", "result",  "samples/s",
                                     "tokens/s", "queries", "mean",  "p50",  "p90",
                                     "p99",  "max",  "TTFT p50", "TTFT p99", "TPOT p50",
                                     "TPOT p99", "failed"};
  static const int left[] = {1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  gs_render_table t;
  gs_render_table_init(&t, 18, head, left);
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    for (size_t k = 0; row->loadgen && k < row->n_ranks; k++) {
      const gs_report_loadgen *lg = &row->ranks[k].loadgen;
      if (!lg->present) continue;
      char(*row_cells)[GS_RENDER_CELL] = gs_render_table_row(&t);
      gs_render_cellf(row_cells[0], "%s", gs_report_file_name(r, row->file));
      char(*c)[GS_RENDER_CELL] = row_cells + 1;
      gs_render_cellf(c[0], "%d", row->world_size);
      gs_render_cellf(c[1], "%zu", k);
      gs_render_cellf(c[2], "%s", lg->scenario ? lg->scenario : "-");
      gs_render_cellf(c[3], "%s",
                      lg->valid == 1   ? "VALID"
                      : lg->valid == 0 ? (w->md ? "**INVALID**" : "INVALID (!)")
                                       : "-");
      gs_render_rate(c[4], lg->samples_per_second);
      gs_render_rate(c[5], lg->tokens_per_second);
      gs_render_fixed(c[6], lg->query_count, 0, "");
      const double ms[] = {lg->lat_mean, lg->lat_p50, lg->lat_p90, lg->lat_p99, lg->lat_max,
                           lg->ttft_p50, lg->ttft_p99, lg->tpot_p50, lg->tpot_p99};
      for (size_t j = 0; j < sizeof ms / sizeof ms[0]; j++) gs_render_time(c[7 + j], ms[j]);
      gs_render_cellf(c[16], "%s", lg->failed ? lg->failed : "-");
    }
  }
  return gs_render_table_done(w, &t, "    ");
}

/* Bus bandwidth of collective rows against the link's theoretical figure. */
static gs_status collective_table(gs_render_writer *w, const gs_report_series *s) {
  if (s->n_rows == 0 || !s->rows[0].collective.present) return GS_OK;
  const char *nccl = NULL;
  for (size_t i = 0; i < s->n_rows && !nccl; i++) nccl = s->rows[i].collective.nccl_version;
  gs_render_block(w, -1, "  ", "Collective bandwidth (GB/s = 10^9 bytes/s; time per op)%s%s",
                  nccl ? "; NCCL " : "", nccl ? nccl : "");
  // One line per op, size and form: the form and data type are named, so a
  // size measured in place and out of place reads as two different rows.
  static const char *const head[] = {"op",   "ranks", "size",       "type",   "form",
                                     "time", "algbw", "busbw",      "link",   "busbw/link",
                                     "status", "busbw check"};
  static const int left[] = {1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1};
  gs_render_table t;
  gs_render_table_init(&t, 12, head, left);
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    gs_render_cellf(c[0], "%s", row->collective.op ? row->collective.op : "-");
    gs_render_cellf(c[1], "%d", row->world_size);
    gs_render_bytes(c[2], row->collective.bytes);
    gs_render_cellf(c[3], "%s", row->collective.dtype ? row->collective.dtype : "-");
    gs_render_cellf(c[4], "%s", gs_report_coll_form(row->collective.in_place));
    // Ingested nccl-tests rows have no samples: their time per op instead.
    gs_render_time(c[5], row->has_step ? row->step.mean : row->collective.time);
    gs_render_bandwidth(c[6], row->collective.algbw);
    gs_render_bandwidth(c[7], row->collective.busbw);
    gs_render_bandwidth(c[8], row->collective.link_bandwidth);
    gs_render_pct(c[9], row->collective.busbw / row->collective.link_bandwidth);
    gs_render_cellf(c[10], "%s", row->status);
    // algbw x the op's bus factor, nccl-tests' formula: "-" where it cannot be checked.
    if (row->collective.busbw_mismatch) {
      char expected[32];
      gs_format_value(GS_UNIT_BANDWIDTH, row->collective.busbw_expected, expected, sizeof expected);
      gs_render_cellf(c[11], "MISMATCH: algbw x %.2f = %s", row->collective.busbw_factor, expected);
    } else {
      gs_render_cellf(c[11], "%s", isfinite(row->collective.busbw_expected)
                      && isfinite(row->collective.busbw)
                                       ? "ok" : "-");
    }
  }
  return gs_render_table_done(w, &t, "    ");
}

/* Per-host symmetry of one row, shown when its ranks ran on 2+ hosts. */
static gs_status host_table(gs_render_writer *w, const gs_report_row *row) {
  if (row->n_hosts < 2) return GS_OK;
  char cv[GS_RENDER_CELL];
  gs_render_pct(cv, row->host_spread_cv);
  gs_render_block(w, -1, "    ", "Hosts (%zu): cv of throughput per rank between hosts %s",
                  row->n_hosts, cv);
  static const char *const head[] = {"host",       "ranks",     "n",       "mean",
                                     "min",     "max",    "stddev", "within 15%",
                                     "throughput", "per rank",  "deviation", "success",
                                     "tokens/s",   "memory",   "cold ranks", "mark"};
  static const int left[] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  gs_render_table t;
  gs_render_table_init(&t, 16, head, left);
  for (size_t h = 0; h < row->n_hosts; h++) {
    const gs_report_host *x = &row->hosts[h];
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    gs_render_cellf(c[0], "%s", x->name);
    gs_render_cellf(c[1], "%zu", x->n_ranks);
    gs_render_latency_cells(c + 2, x->n, x->mean, x->min, x->max, x->stddev, x->stable_share);
    gs_render_rate(c[8], x->throughput);
    gs_render_rate(c[9], x->per_rank);
    gs_render_pct(c[10], x->deviation);
    gs_render_pct(c[11], x->success_rate);
    gs_render_rate(c[12], x->tokens_per_second);
    gs_render_bytes(c[13], x->memory_used_bytes);
    gs_render_cellf(c[14], "%zu", x->cold_ranks);
    gs_render_cellf(c[15], "%s", gs_rank_mark_name(x->mark));
  }
  return gs_render_table_done(w, &t, "      ");
}

/* ---- text and Markdown ---------------------------------------------------------- */

static gs_status series_tables(gs_render_writer *w, const gs_report *r, const gs_report_series *s) {
  const char *unit = s->item_unit ? s->item_unit : "items";
  char unit_rate[80];
  snprintf(unit_rate, sizeof unit_rate, "%s/s", unit);
  gs_render_block(w, 2, "", "%s: backend %s, %s%s%s%s%s", s->workload,
                  s->backend[0] ? s->backend : "-", scaling_text(s->scaling),
                  s->label[0] ? "; " : "", s->label, s->split[0] ? "; split " : "", s->split);
  gs_render_block(w, 0, "  ", w->md && !w->html ? "Workload options: `%s`" : "Workload options: %s",
          s->options);
  // A sweep of message sizes: its own table below, no scaling, split or rank tables.
  const int coll = s->n_rows > 0 && s->rows[0].collective.present;
  if (coll)
    gs_render_block(w, 0, "  ", "A collective sweep: one row per operation, message size and form");
  else if (s->n_rows > 0 && s->rows[0].loadgen)
    gs_render_block(w, 0, "  ",
                    "Ingested LoadGen results: no step samples; throughput in %s/s as LoadGen "
                    "reports it",
                    unit);
  else if (s->n_rows > 0 && s->rows[0].requests.present)
    gs_render_block(w, 0, "  ",
                    "n, mean and median: per-request latency; throughput in %s/s over "
                    "the run time",
                    unit);
  else
    gs_render_block(w, 0, "  ",
                    "Step time = slowest rank per iteration; throughput in %s/s = items / mean "
                    "step",
                    unit);
  gs_render_plots_of(w, s, -1);

  static const char *const head[] = {"ranks",   "file",    "status",     "verify",
                                     "n",       "mean", "median",  "cv",
                                     "throughput", "ideal", "speedup",   "efficiency",
                                     "karp-flatt", "warnings"};
  static const int left[] = {0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  gs_render_table t;
  int priced = r->prices.n > 0;
  static const char *const cost_head[] = {"$/hour", "items/$", "$/M items"};
  gs_render_table_init(&t, 14, head, left);
  if (priced) {
    for (size_t c = 0; c < 3; c++) t.head[14 + c] = cost_head[c];
    t.ncols = 17;
  }
  for (size_t i = 0; i < s->n_rows && !coll; i++) {
    const gs_report_row *row = &s->rows[i];
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    if (priced) {
      gs_render_fixed(c[14], row->cost.price_per_hour, 2, "");
      gs_render_rate(c[15], row->cost.items_per_dollar);
      gs_render_fixed(c[16], row->cost.dollars_per_million, 4, "");
    }
    gs_render_cellf(c[0], "%d", row->world_size);
    gs_render_cellf(c[1], "%s", gs_report_file_name(r, row->file));
    gs_render_cellf(c[2], "%s", row->status);
    gs_render_cellf(c[3], "%s", row->verification);
    gs_render_cellf(c[4], "%zu", row->has_step ? row->step.n : (size_t)0);
    gs_render_time(c[5], row->has_step ? row->step.mean : NAN);
    gs_render_time(c[6], row->has_step ? row->step.median : NAN);
    gs_render_pct(c[7], row->has_step ? row->step.cv : NAN);
    gs_render_rate(c[8], row->throughput);
    gs_render_rate(c[9], row->ideal_throughput);
    const double n = (double)row->world_size;
    gs_render_ratio(c[10], row->speedup, row->speedup_low, row->speedup_high, 0);
    gs_render_ratio(c[11], row->efficiency, row->speedup_low / n, row->speedup_high / n, 1);
    gs_render_fixed(c[12], row->karp_flatt, 3, "");
    char warn[256] = "";
    if (row->has_step) {
      unsigned flags = row->step.warnings;
      snprintf(warn, sizeof warn, "%s%s%s%s",
               (flags & GS_STATS_WARN_FEW_SAMPLES) ? "few-samples " : "",
               (flags & GS_STATS_WARN_NOISY) ? "noisy " : "",
               (flags & GS_STATS_WARN_SHORT) ? "short " : "",
               (flags & GS_STATS_WARN_OUTLIERS) ? "outliers " : "");
      size_t len = strlen(warn);
      if (len) warn[len - 1] = '\0';
    }
    gs_render_cellf(c[13], "%s", warn[0] ? warn : "-");
  }
  gs_status st = coll ? GS_OK : gs_render_table_done(w, &t, "  ");
  if (st != GS_OK) return st;
  if (priced && !coll)
    gs_render_block(w, 0, "  ",
                    "Cost: $/hour = sum of the prices of the row's GPUs (--price); items/$ = "
                    "throughput x 3600 / ($/hour); $/M items = 10^6 / (items/$). '-' where "
                    "no price matched a GPU name (e.g. the CPU backend).");
  if (!coll) st = roofline_table(w, s);
  if (!coll && st == GS_OK) st = breakdown_table(w, s);
  if (!coll && st == GS_OK) st = gs_render_pipeline_tables(w, s);
  if (st == GS_OK) st = request_table(w, s);
  if (st == GS_OK) st = gs_render_goodput_table(w, s);
  if (st == GS_OK) st = gs_render_rates_table(w, s);
  if (st == GS_OK) st = loadgen_table(w, r, s);
  if (st == GS_OK) st = collective_table(w, s);
  if (st == GS_OK && coll) st = gs_render_coll_stragglers(w, s);
  if (st == GS_OK && coll) st = gs_render_coll_arrival(w, s);
  if (st != GS_OK) return st;

  static const char *const rhead[] = {"rank",      "status",  "clock",     "n",
                                      "mean",   "min",  "max",    "stddev",
                                      "within 15%", "throughput", "deviation", "mark",
                                      "cold",      "cold flag", "host",     "success",
                                      "tokens/s",  "memory"};
  static const int rleft[] = {0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0};
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    if (coll) continue;
    if (row->world_size < 2) {
      // One rank: no per-rank table, but its timeline where it was traced.
      if ((st = gs_render_timeline(w, r, row)) != GS_OK) return st;
      gs_render_plots_of(w, s, (int)i);
      continue;
    }
    char straggler[64] = "none";
    if (row->straggler >= 0)
      snprintf(straggler, sizeof straggler, "rank %d%s", row->straggler,
               row->ranks[row->straggler].injected ? " (injected)" : "");
    char ratio[64], cv[GS_RENDER_CELL], med[GS_RENDER_CELL];
    double spread_low, spread_high;
    gs_report_spread_interval(row, &spread_low, &spread_high);
    gs_scaling_format_ratio(row->spread_ratio, spread_low, spread_high, 1.0, 2, "x", ratio,
                            sizeof ratio);
    gs_render_pct(cv, row->spread_cv);
    gs_format_rate(row->rank_median, med, sizeof med);
    const gs_report_placement *place = &row->placement;
    gs_render_block(w, 3, "  ",
            "%d ranks (%s, measurement %zu): ranks max/min %s, cv %s, median %s%s, "
            "straggler %s%s%s%s%s",
            row->world_size, gs_report_file_name(r, row->file), row->measurement, ratio, cv, med,
            !isfinite(row->rank_median) ? "" : row->requests.present ? "tokens/s" : unit_rate,
            straggler, place->split_units[0] ? "; units " : "", place->split_units,
            place->faults[0] ? "; injected: " : "", place->faults);
    gs_render_table_init(&t, 18, rhead, rleft);
    for (size_t k = 0; k < row->n_ranks; k++) {
      const gs_report_rank *rk = &row->ranks[k];
      char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
      gs_render_cellf(c[0], "%d", rk->rank);
      gs_render_cellf(c[1], "%s", rk->status);
      gs_render_cellf(c[2], "%s", rk->clock);
      gs_render_latency_cells(c + 3, rk->n, rk->mean, rk->min, rk->max, rk->stddev,
                              rk->stable_share);
      gs_render_rate(c[9], rk->throughput);
      gs_render_pct(c[10], rk->deviation);
      int straggler_rank = (int)k == row->straggler;
      gs_render_cellf(c[11], "%s%s%s%s%s", gs_rank_mark_name(rk->mark),
            straggler_rank || rk->injected ? " (" : "", straggler_rank ? "straggler" : "",
            straggler_rank && rk->injected ? ", " : "",
            rk->injected ? "injected)" : straggler_rank ? ")" : "");
      gs_render_fixed(c[12], rk->cold_ratio, 2, "x");
      gs_render_cellf(c[13], "%s%s%s", rk->cold_flag ? "slow start" : "",
            rk->cold_flag && rk->first_sample_flag ? ", " : "",
            rk->first_sample_flag ? "slow first sample" : "");
      if (!c[13][0]) gs_render_cellf(c[13], "-");
      gs_render_cellf(c[14], "%s", rk->host ? rk->host : "-");
      gs_render_pct(c[15], rk->success_rate);
      gs_render_rate(c[16], rk->tokens_per_second);
      gs_render_bytes(c[17], rk->memory_used_bytes);
    }
    if ((st = gs_render_table_done(w, &t, "    ")) != GS_OK) return st;
    if ((st = host_table(w, row)) != GS_OK) return st;
    if ((st = gs_render_stragglers(w, row)) != GS_OK) return st;
    gs_render_arrival(w, row);
    if ((st = gs_render_timeline(w, r, row)) != GS_OK) return st;
    gs_render_plots_of(w, s, (int)i);
  }

  gs_render_block(w, -1, "  ", "Recommendation");
  gs_render_list(w, (const char *const *)s->advice, s->n_advice);
  return GS_OK;
}

/* One line per series, before the detail: what was measured and what it
 * came to (docs/report.md, "Overview"). */
static gs_status overview_table(gs_render_writer *w, const gs_report *r) {
  if (r->n_series == 0) return GS_OK;
  gs_render_block(w, w->md ? 2 : -1, "", "Overview (one line per series; the figures are those "
                                         "of the rank count N the verdict speaks of)");
  static const char *const head[] = {"series", "backend", "ranks", "N",
                                     "throughput", "speedup", "efficiency", "verdict"};
  static const int left[] = {1, 1, 1, 0, 0, 0, 0, 1};
  gs_render_table t;
  gs_render_table_init(&t, 8, head, left);
  for (size_t i = 0; i < r->n_series; i++) {
    const gs_report_series *s = &r->series[i];
    gs_render_overview o;
    gs_render_overview_cells(s, &o);
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    gs_render_cellf(c[0], "%s", s->title);
    gs_render_cellf(c[1], "%s", s->backend[0] ? s->backend : "-");
    gs_render_cellf(c[2], "%s", o.ranks);
    if (o.world_size > 0)
      gs_render_cellf(c[3], "%d", o.world_size);
    else
      gs_render_cellf(c[3], "-");
    gs_render_cellf(c[4], "%s", o.figure);
    const double n = o.world_size > 0 ? (double)o.world_size : NAN;
    gs_render_ratio(c[5], o.speedup, o.speedup_low, o.speedup_high, 0);
    gs_render_ratio(c[6], o.efficiency, o.speedup_low / n, o.speedup_high / n, 1);
    gs_render_cellf(c[7], "%s", o.verdict);
  }
  return gs_render_table_done(w, &t, "  ");
}

/* ---- plans -------------------------------------------------------------------------- */

/* The row of task `task` of file `fi` and its series, or NULL. */
static const gs_report_row *task_row(const gs_report *r, size_t fi, int task,
                                     const gs_report_series **series) {
  for (size_t i = 0; i < r->n_series; i++)
    for (size_t j = 0; j < r->series[i].n_rows; j++) {
      const gs_report_row *row = &r->series[i].rows[j];
      if (row->file == fi && row->placement.task == task) {
        *series = &r->series[i];
        return row;
      }
    }
  return NULL;
}

/* For each `gpuscale plan` document (top-level "plan"): each task's
 * throughput as recomputed here next to the one the plan recorded, and the
 * system total summed per item unit. */
static gs_status plan_tables(gs_render_writer *w, const gs_report *r) {
  for (size_t fi = 0; fi < r->n_files; fi++) {
    const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r->docs[fi], "plan"), "tasks");
    if (!cJSON_IsArray(tasks)) continue;
    gs_render_block(w, 2, "", "Plan %s: tasks measured at the same time",
                    gs_report_file_name(r, fi));
    gs_render_block(w, 0, "  ", "throughput = items per step / mean step (as in the series above); "
                        "recorded = the figure the plan document holds");
    static const char *const head[] = {"task", "spec", "workload", "ranks", "status",
                                       "throughput", "recorded", "unit"};
    static const int left[] = {0, 1, 1, 0, 1, 0, 0, 1};
    gs_render_table t;
    gs_render_table_init(&t, 8, head, left);
    const char *units[16];
    double totals[16];
    size_t n_units = 0;
    for (const cJSON *x = tasks->child; x; x = x->next) {
      const cJSON *task = cJSON_GetObjectItemCaseSensitive(x, "task");
      int index = cJSON_IsNumber(task) ? task->valueint : -1;
      const gs_report_series *s = NULL;
      const gs_report_row *row = task_row(r, fi, index, &s);
      const cJSON *spec = cJSON_GetObjectItemCaseSensitive(x, "spec");
      const cJSON *recorded = cJSON_GetObjectItemCaseSensitive(x, "throughput_items_per_second");
      const char *unit = s && s->item_unit ? s->item_unit : "items";
      char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
      gs_render_cellf(c[0], "%d", index);
      gs_render_cellf(c[1], "%s", cJSON_IsString(spec) ? spec->valuestring : "-");
      gs_render_cellf(c[2], "%s", s ? s->workload : "-");
      gs_render_cellf(c[3], "%d", row ? row->world_size : 0);
      gs_render_cellf(c[4], "%s", row ? row->status : "not measured");
      gs_render_rate(c[5], row ? row->throughput : NAN);
      gs_render_rate(c[6], cJSON_IsNumber(recorded) ? recorded->valuedouble : NAN);
      gs_render_cellf(c[7], "%s", unit);
      if (!row || strcmp(row->status, "ok") != 0 || !isfinite(row->throughput)) continue;
      size_t u = 0;
      while (u < n_units && strcmp(units[u], unit) != 0) u++;
      if (u == n_units && n_units < 16) units[n_units] = unit, totals[n_units++] = 0.0;
      if (u < n_units) totals[u] += row->throughput;
    }
    gs_status st = gs_render_table_done(w, &t, "  ");
    if (st != GS_OK) return st;
    for (size_t u = 0; u < n_units; u++) {
      char rate[GS_RENDER_CELL];
      gs_format_rate(totals[u], rate, sizeof rate);
      gs_render_block(w, 0, "  ", "System total: %s%s/s (tasks with status ok)", rate, units[u]);
    }
  }
  return GS_OK;
}

static gs_status render_tables(gs_render_writer *w, const gs_report *r) {
  if (w->md) {
    gs_render_block(w, 1, "", "gpuscale report");
    char files[2048] = "";
    for (size_t i = 0; i < r->n_files; i++) {
      size_t len = strlen(files);
      snprintf(files + len, sizeof files - len, w->html ? " %s" : " `%s`", r->files[i]);
    }
    gs_render_block(w, 0, "", "Files:%s%s", files,
            strlen(files) + 1 >= sizeof files ? " ..." : "");
    gs_render_block(w, 0, "",
                    "Rank marks: good <= %g%% < moderate <= %g%% < critical (deviation from "
                    "the median rank throughput); success rate below %g%% is moderate, below "
                    "%g%% critical.",
                    100.0 * r->thresholds.moderate, 100.0 * r->thresholds.critical,
                    100.0 * GS_REPORT_SUCCESS_MODERATE, 100.0 * GS_REPORT_SUCCESS_CRITICAL);
  } else {
    gs_render_block(w, 0, "", "gpuscale report: %zu file%s, %zu series; rank marks: good <= %g%% < "
                      "moderate <= %g%% < critical",
            r->n_files, r->n_files == 1 ? "" : "s", r->n_series, 100.0 * r->thresholds.moderate,
            100.0 * r->thresholds.critical);
  }
  if (w->plots && w->plots->note[0]) gs_render_block(w, 0, "", "Plots: %s", w->plots->note);
  gs_render_node_verdict(w, r);
  if (r->n_series == 0 && !gs_machine_any(r)) gs_render_block(w, 0, "  ", "No measurements.");
  gs_status overview = overview_table(w, r);
  if (overview != GS_OK) return overview;
  for (size_t i = 0; i < r->n_series; i++) {
    w->series = i;
    gs_status st = series_tables(w, r, &r->series[i]);
    if (st != GS_OK) return st;
  }
  gs_status st = gs_render_layouts(w, r);
  if (st == GS_OK) st = plan_tables(w, r);
  return st == GS_OK ? gs_render_machine_sections(w, r) : st;
}

/* A single self-contained HTML file: inline style, inline SVG plots, no
 * script and no external resource. */
static gs_status render_html(gs_render_writer *w, const gs_report *r) {
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<title>gpuscale report</title>\n<style>\n"
        "body{font-family:sans-serif;margin:2em;max-width:110em}\n"
        "table{border-collapse:collapse;margin:0.5em 0 1.5em 0;font-size:90%}\n"
        "th,td{border:1px solid #bbb;padding:2px 6px}th{background:#eee}\n"
        "td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
        "figure{display:inline-block;margin:0.5em}figure svg{max-width:40em;height:auto}\n"
        "td.pass{background:#d4edda}td.warn{background:#fff3cd}td.fail{background:#f8d7da}\n"
        "div.matrix{display:inline-block;vertical-align:top;max-width:36em;margin-right:2em}\n"
        "</style>\n</head>\n<body>\n", w->f);
  gs_status st = render_tables(w, r);
  fputs("</body>\n</html>\n", w->f);
  return st;
}

/* See render.h. */
gs_status gs_report_print_json(FILE *out, cJSON *doc) {
  if (!doc) return GS_ERR_NOMEM;
  // As result files are written: two-space indent, doubles in full.
  gs_status st = gs_json_print(out, doc);
  cJSON_Delete(doc);
  return st;
}

/* See render.h. */
gs_status gs_report_render(FILE *out, const gs_report *r, gs_report_format format) {
  return gs_report_render_with(out, r, format, NULL, 0);
}

/* See render.h. */
gs_status gs_report_render_with(FILE *out, const gs_report *r, gs_report_format format,
                                const gs_report_plots *plots, unsigned options) {
  gs_status st = GS_OK;
  gs_render_writer w = {.f = out, .plots = plots};
  switch (format) {
    case GS_REPORT_TEXT: st = render_tables(&w, r); break;
    case GS_REPORT_MARKDOWN:
      w.md = 1;
      st = render_tables(&w, r);
      break;
    case GS_REPORT_HTML:
      w.md = w.html = 1;
      st = render_html(&w, r);
      break;
    case GS_REPORT_CSV: st = gs_report_render_csv(out, r, options); break;
    case GS_REPORT_JSON: st = gs_report_print_json(out, gs_report_to_json(r)); break;
  }
  if (st != GS_OK) return st;
  return ferror(out) ? GS_ERR_IO : GS_OK;
}
