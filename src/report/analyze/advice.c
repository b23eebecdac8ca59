/* The cross-row half of the report analysis: speedup, efficiency and
 * Karp-Flatt of each row against its series' baseline, the verdict (by
 * core/scaling's rule, the one the terminal uses) and the recommendation
 * sentences that cite their numbers: why not N x, batch size, transport,
 * load balance, split gain, tensor against data parallelism, failed ranks,
 * cold starts. The order and wording are those of docs/report.md. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"
#include "core/scaling.h"
#include "report/analyze/internal.h"
#include "report/analyze/quantile.h"

static int compare_rows(const void *a, const void *b) {
  const gs_report_row *x = a, *y = b;
  if (x->world_size != y->world_size) return x->world_size < y->world_size ? -1 : 1;
  if (x->file != y->file) return x->file < y->file ? -1 : 1;
  return (x->measurement > y->measurement) - (x->measurement < y->measurement);
}

static void add_advice(gs_report_series *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void add_advice(gs_report_series *s, const char *fmt, ...) {
  if (s->n_advice >= GS_REPORT_ADVICE_MAX) return;
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  char *copy = strdup(buf);
  if (copy) s->advice[s->n_advice++] = copy;
}

static int row_usable(const gs_report_row *row) {
  return strcmp(row->status, "ok") == 0 && isfinite(row->throughput);
}

/* Seconds with a unit chosen per value ("8.13 us", "16.350 ms"). */
typedef struct {
  char text[32];
} time_text;

static time_text seconds_text(double seconds) {
  time_text t;
  // An absent part (no communication recorded) reads "0", not "0.0 ns".
  if (seconds == 0.0)
    snprintf(t.text, sizeof t.text, "0");
  else
    gs_format_seconds(seconds, t.text, sizeof t.text);
  return t;
}

/* A rate with an SI prefix and its unit ("20.3 Mpoints/s"). */
typedef struct {
  char text[96];
} rate_text;

static rate_text rate_of(double value, const char *unit) {
  rate_text t;
  char number[32];
  gs_format_rate(value, number, sizeof number);
  snprintf(t.text, sizeof t.text, "%s%s", number, unit);
  return t;
}

/* The parts of a why-not split in gs_scaling_part order. */
static void breakdown_parts(const gs_report_breakdown *b, double out[GS_PART_COUNT]) {
  out[GS_PART_COMPUTE] = b->compute;
  out[GS_PART_COMM] = b->comm;
  out[GS_PART_IMBALANCE] = b->imbalance;
  out[GS_PART_HOST] = b->host;
}

static void breakdown_losses(gs_scaling kind, const gs_report_breakdown *base,
                             gs_report_breakdown *b, int world_size) {
  double bp[GS_PART_COUNT], p[GS_PART_COUNT];
  breakdown_parts(base, bp);
  breakdown_parts(b, p);
  gs_scaling_losses_of(kind, bp, p, world_size, &b->losses);
  b->has_losses = 1;
}

/* The clause naming the main loss of `row` ("" when none is known):
 * compute is named with its efficiency, since a rank's share of the work
 * running slower than its part of the 1-rank time is a loss the split of
 * the step alone does not show. */
static void main_loss_clause(const gs_report_row *row, gs_scaling kind, char *out, size_t size) {
  const gs_report_breakdown *b = &row->breakdown;
  const gs_scaling_losses *l = &b->losses;
  out[0] = '\0';
  if (!b->has_losses || l->main_loss < 0 || !(b->step > b->ideal_step)) return;
  const int m = l->main_loss;
  if (m == GS_PART_COMPUTE && isfinite(l->compute_efficiency)) {
    snprintf(out, size,
             "; the main loss is compute: %s of the %s lost (a rank computes %s per step on "
             "average where its share of the 1-rank compute is %s: compute efficiency %.1f%%, %s)",
             seconds_text(l->lost[m]).text, seconds_text(b->step - b->ideal_step).text,
             seconds_text(b->compute).text, seconds_text(l->compute_ideal).text,
             100.0 * l->compute_efficiency,
             kind == GS_SCALING_STRONG
                 ? "a rank's smaller share of the work runs slower than the same work in the "
                   "1-rank step: a GPU underused at the smaller per-GPU batch, or work that does "
                   "not shrink with it"
                 : "the same work per rank runs slower than alone: shared memory bandwidth, "
                   "clocks, links or host");
  } else {
    snprintf(out, size, "; the main loss is %s: %s of the %s lost (compute efficiency %.1f%%)",
             gs_scaling_part_name(m), seconds_text(l->lost[m]).text,
             seconds_text(b->step - b->ideal_step).text, 100.0 * l->compute_efficiency);
  }
}

/* "Why not N x": the largest part lost against the ideal step of `row`. */
static void why_not_advice(gs_report_series *s, const gs_report_row *row) {
  const gs_report_breakdown *b = &row->breakdown;
  if (row->requests.present) {
    add_advice(s, "why not %d.0x: the compute/communication/imbalance/host split does not apply "
                  "to request-based measurements (overlapping requests, not lockstep steps)",
               row->world_size);
    return;
  }
  if (!b->available || !isfinite(b->ideal_step)) return;
  char loss[640];
  main_loss_clause(row, gs_scaling_of(s->scaling), loss, sizeof loss);
  add_advice(s,
             "why not %d.0x at %d ranks: the step is %s against an ideal %s; per rank it splits "
             "into compute %s, exposed communication %s%s, load imbalance %s and host overhead "
             "%s%s%s",
             row->world_size, row->world_size, seconds_text(b->step).text,
             seconds_text(b->ideal_step).text, seconds_text(b->compute).text,
             seconds_text(b->comm).text, b->comm_measured ? "" : " (not recorded)",
             seconds_text(b->imbalance).text, seconds_text(b->host).text,
             b->device_clock ? "" : " (no device clock)", loss);
}

/* "Consider a larger batch" from the telemetry of the largest row that has it. */
static void batch_advice(gs_report_series *s) {
  for (size_t i = s->n_rows; i-- > 0;) {
    const gs_report_row *row = &s->rows[i];
    double util = 0, mem = 0, total = 0;
    size_t nu = 0, nm = 0;
    for (size_t k = 0; k < row->n_ranks; k++) {
      const gs_report_rank *rk = &row->ranks[k];
      if (isfinite(rk->utilization)) util += rk->utilization, nu++;
      if (isfinite(rk->memory_used_bytes) && rk->memory_total_bytes > 0)
        mem += rk->memory_used_bytes, total += rk->memory_total_bytes, nm++;
    }
    if (nu == 0 && nm == 0) continue;
    double u = nu ? util / (double)nu : NAN, share = nm ? mem / total : NAN;
    if (!(u < GS_REPORT_LOW_USE || share < GS_REPORT_LOW_USE)) return;
    char used[96] = "not recorded", busy[64] = "not recorded";
    if (nu) snprintf(busy, sizeof busy, "%.1f%%", 100.0 * u);
    // Telemetry covers the whole measurement (setup, warmup, a program's
    // start under exec); when the timed steps fill little of it, a low mean
    // says the GPU idled around them, not that the batch is small.
    double timed = 0, window = 0;
    for (size_t k = 0; k < row->n_ranks && !row->requests.present; k++) {
      const gs_report_rank *rk = &row->ranks[k];
      if (rk->n == 0 || !(rk->telemetry_seconds > 0)) continue;
      timed += (double)rk->n * rk->mean;
      window += rk->telemetry_seconds;
    }
    if (nu && window > 0 && timed / window < GS_REPORT_LOW_USE) {
      add_advice(s,
                 "GPU utilization at %d ranks is %s over the whole measurement (%s of telemetry "
                 "per GPU), of which the timed steps fill only %.1f%%: the GPU idled around them "
                 "(setup, warmup, a program's start), so the figure says nothing about the batch "
                 "size; measure longer (more steps per run) to see the timed work's utilization",
                 row->world_size, busy, seconds_text(window / (double)row->n_ranks).text,
                 100.0 * timed / window);
      return;
    }
    if (nm) {
      char size[32];
      gs_format_value(GS_UNIT_BYTES, total / (double)nm, size, sizeof size);
      snprintf(used, sizeof used, "%.1f%% of %s", 100.0 * share, size);
    }
    add_advice(s,
               "consider a larger batch size: at %d ranks mean GPU utilization is %s and memory "
               "use %s (below %.0f%%)",
               row->world_size, busy, used, 100.0 * GS_REPORT_LOW_USE);
    return;
  }
}

/* Transport: the best bus bandwidth of a collective series against the link. */
static void collective_advice(gs_report_series *s) {
  const gs_report_row *best = NULL;
  for (size_t i = 0; i < s->n_rows; i++)
    if (isfinite(s->rows[i].collective.busbw) &&
        (!best || s->rows[i].collective.busbw > best->collective.busbw))
      best = &s->rows[i];
  if (!best) {
    add_advice(s, "collective: no bus bandwidth recorded");
    return;
  }
  const char *op = best->collective.op ? best->collective.op : "?";
  rate_text busbw = rate_of(best->collective.busbw, "B/s"), bytes;
  gs_format_value(GS_UNIT_BYTES, best->collective.bytes, bytes.text, sizeof bytes.text);
  if (!isfinite(best->collective.link_bandwidth)) {
    add_advice(s, "collective %s: best bus bandwidth %s at %s; the link's theoretical bandwidth "
                  "is not recorded (run gpuscale info for the topology)",
               op, busbw.text, bytes.text);
    return;
  }
  double share = best->collective.busbw / best->collective.link_bandwidth;
  rate_text link = rate_of(best->collective.link_bandwidth, "B/s");
  if (share < GS_REPORT_LOW_BUSBW)
    add_advice(s,
               "investigate the transport: collective %s reaches at best %s bus bandwidth (at "
               "%s), %.1f%% of the link's theoretical %s (below %.0f%%); check that NCCL uses "
               "NVLink/P2P (NCCL_DEBUG=INFO) and not PCIe or the network",
               op, busbw.text, bytes.text, 100.0 * share, link.text, 100.0 * GS_REPORT_LOW_BUSBW);
  else
    add_advice(s, "collective %s: best bus bandwidth %s is %.1f%% of the link's theoretical %s: "
                  "the transport is fine",
               op, busbw.text, 100.0 * share, link.text);
}

/* Rows whose busbw disagrees with algbw x the op's bus factor: one sentence
 * with their count and the first of them (docs/report.md, "Collectives"). */
static void busbw_advice(gs_report_series *s) {
  size_t n = 0, checked = 0;
  const gs_report_row *first = NULL;
  for (size_t i = 0; i < s->n_rows; i++) {
    checked += isfinite(s->rows[i].collective.busbw_expected) &&
               isfinite(s->rows[i].collective.busbw);
    if (s->rows[i].collective.busbw_mismatch && n++ == 0) first = &s->rows[i];
  }
  if (!first) return;
  char point[192];
  gs_report_point_name(first, point, sizeof point);
  rate_text busbw = rate_of(first->collective.busbw,
                            "B/s"), algbw = rate_of(first->collective.algbw, "B/s"),
            expected = rate_of(first->collective.busbw_expected, "B/s");
  add_advice(s,
             "inconsistent bus bandwidth: %zu of %zu rows have a busbw that is not algbw x the "
             "op's bus factor (more than %.0f%% off); first %s at %d ranks: busbw %s, but "
             "algbw %s x %.2f = %s. The document was edited or its rank count is not the one "
             "its figures were computed for: do not trust its busbw",
             n, checked, 100.0 * GS_REPORT_BUSBW_TOLERANCE, point, first->world_size,
             busbw.text, algbw.text, first->collective.busbw_factor, expected.text);
}

/* The unit of a rank's throughput in `row`, per second: tokens for
 * request-based rows. */
static rate_text rank_rate(const gs_report_series *s, const gs_report_row *row, double value) {
  char unit[64];
  snprintf(unit, sizeof unit, "%s/s",
           row->requests.present ? "tokens" : s->item_unit ? s->item_unit : "items");
  return rate_of(value, unit);
}

/* "ranks" on the CPU backend, "GPUs" on cuda: what a world size counts. */
static const char *workers(const gs_report_series *s) {
  return strcmp(s->backend, "cuda") == 0 ? "GPUs" : "ranks";
}

/* The same for a count of `n`: "GPU" or "rank" when it is one. */
static const char *workers_of(const gs_report_series *s, int n) {
  if (n != 1) return workers(s);
  return strcmp(s->backend, "cuda") == 0 ? "GPU" : "rank";
}

/* The ranks' max/min throughput of `row` with its 95% interval. */
static void spread_text(const gs_report_row *row, char *out, size_t size) {
  double low, high;
  gs_report_spread_interval(row, &low, &high);
  gs_scaling_format_ratio(row->spread_ratio, low, high, 1.0, 2, "x", out, size);
}

/* Load balancing, failed ranks and failed requests, per row. */
static void rank_advice(gs_report_series *s, const gs_report *r) {
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    const gs_report_rank *worst = NULL;
    if (row->straggler >= 0) {
      worst = &row->ranks[row->straggler];
    } else {
      // Throughput asymmetry only: a mark made critical by failures has its own advice.
      for (size_t k = 0; k < row->n_ranks; k++)
        if (row->ranks[k].deviation > r->thresholds.critical &&
            (!worst || row->ranks[k].deviation > worst->deviation))
          worst = &row->ranks[k];
    }
    char spread[64];
    if (worst) spread_text(row, spread, sizeof spread);
    if (worst)
      add_advice(s,
                 "%s: at %d %s rank %d %s %s, %.1f%% from the median rank throughput %s "
                 "(critical > %.0f%%); ranks max/min %s%s%s%s",
                 worst->injected ? "injected straggler" : "consider dynamic load balancing",
                 row->world_size, workers(s), worst->rank,
                 row->straggler >= 0 ? "is the straggler at" : "runs at",
                 rank_rate(s, row, worst->throughput).text, 100.0 * worst->deviation,
                 rank_rate(s, row, row->rank_median).text, 100.0 * r->thresholds.critical,
                 spread, worst->injected ? " (injected: " : "",
                 worst->injected ? row->placement.faults : "", worst->injected ? ")" : "");
    for (size_t k = 0; k < row->n_ranks; k++) {
      const gs_report_rank *rk = &row->ranks[k];
      if (strcmp(rk->status, "ok") == 0) continue;
      add_advice(s, "investigate rank %d: status %s at %d %s (%s)%s%s", rk->rank, rk->status,
                 row->world_size, workers_of(s, row->world_size), gs_report_file_name(r, row->file),
                 rk->error ? ": " : "", rk->error ? rk->error : "");
    }
    for (size_t k = 0; k < row->n_ranks; k++) {
      const gs_report_rank *rk = &row->ranks[k];
      if (rk->requests > rk->requests_ok)
        add_advice(s,
                   "investigate rank %d (host %s): %zu of %zu requests did not succeed at %d "
                   "%s (%zu failed, %zu timed out; success rate %.1f%%)",
                   rk->rank, rk->host ? rk->host : "-", rk->requests - rk->requests_ok,
                   rk->requests, row->world_size, workers_of(s, row->world_size), rk->requests_failed,
                   rk->requests_timed_out, 100.0 * rk->success_rate);
      if (rk->requests == 0 && rk->failed_samples > 0)
        add_advice(s,
                   "investigate rank %d (host %s): %llu of %llu timed samples failed at %d %s "
                   "(success rate %.1f%%)%s",
                   rk->rank, rk->host ? rk->host : "-", (unsigned long long)rk->failed_samples,
                   (unsigned long long)rk->samples_taken, row->world_size,
                   workers_of(s, row->world_size),
                   100.0 * rk->success_rate, rk->injected ? "; injected by --inject fail" : "");
    }
  }
}

/* See report.h. */
int gs_report_needs_warmup(const gs_report_rank *rk) {
  return isfinite(rk->first_sample_ratio) && rk->first_sample_ratio > GS_REPORT_WARMUP_FLAG;
}

/* Which ranks a cold-start sentence speaks of. */
typedef enum {
  COLD_WARMUP,   /* first timed sample slow (not injected): warm up longer */
  COLD_REQUESTS, /* cold requests above GS_REPORT_COLD_FLAG x the median latency */
  COLD_INJECTED  /* a planned delay (--inject delay) showed as a slow start */
} cold_kind;

static int cold_selects(cold_kind kind, const gs_report_rank *rk) {
  switch (kind) {
    case COLD_WARMUP: return !rk->injected_delay && gs_report_needs_warmup(rk);
    case COLD_REQUESTS: return !rk->injected_delay && rk->cold_outliers > 0;
    case COLD_INJECTED:
      return rk->injected_delay &&
             (rk->first_sample_flag || rk->cold_flag || rk->cold_outliers > 0);
  }
  return 0;
}

/* A growing text; silently truncated at its size. */
typedef struct {
  char text[768];
  size_t len;
} text_buf;

static void text_add(text_buf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(text_buf *t, const char *fmt, ...) {
  if (t->len >= sizeof t->text - 1) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->text + t->len, sizeof t->text - t->len, fmt, ap);
  va_end(ap);
  if (n > 0) t->len = t->len + (size_t)n < sizeof t->text ? t->len + (size_t)n : sizeof t->text - 1;
}

/* Appends "rank 3 at 4 GPUs" or "ranks 0-2, 5 at 8 GPUs" for the marked
 * ranks of one world size ("; " between world sizes). */
static void text_add_ranks(text_buf *t, const gs_report_series *s, const unsigned char *marked,
                           int world_size) {
  int count = 0;
  for (int k = 0; k < world_size; k++) count += marked[k];
  if (count == 0) return;
  text_add(t, "%s%s ", t->len ? "; " : "", count == 1 ? "rank" : "ranks");
  int first = 1;
  for (int k = 0; k < world_size; k++) {
    if (!marked[k]) continue;
    int end = k;
    while (end + 1 < world_size && marked[end + 1]) end++;
    text_add(t, "%s%d", first ? "" : ", ", k);
    if (end > k) text_add(t, "%s%d", end == k + 1 ? ", " : "-", end);
    first = 0;
    k = end;
  }
  text_add(t, " at %d %s", world_size, workers_of(s, world_size));
}

/* One sentence for all ranks of the series that `kind` selects: which
 * ranks at which world sizes, in how many (measurement, rank) pairs, and
 * the range of their factors (see docs/report.md, Recommendation). */
static void cold_advice(gs_report_series *s, cold_kind kind) {
  text_buf where = {.len = 0};
  where.text[0] = '\0';
  size_t hits = 0, pairs = 0, cold = 0, outliers = 0;
  double lo = INFINITY, hi = -INFINITY, first_lo = INFINITY, first_hi = -INFINITY;
  // Rows are sorted by world size: ranks are marked per world size, then named.
  for (size_t i = 0; i < s->n_rows;) {
    const int ws = s->rows[i].world_size;
    unsigned char *marked = calloc(ws > 0 ? (size_t)ws : 1, 1);
    if (!marked) return;
    for (; i < s->n_rows && s->rows[i].world_size == ws; i++) {
      const gs_report_row *row = &s->rows[i];
      for (size_t k = 0; k < row->n_ranks; k++) {
        const gs_report_rank *rk = &row->ranks[k];
        pairs++;
        if (!cold_selects(kind, rk)) continue;
        hits++;
        if (rk->rank >= 0 && rk->rank < ws) marked[rk->rank] = 1;
        cold += rk->cold_requests, outliers += rk->cold_outliers;
        if (isfinite(rk->first_sample_ratio))
          lo = fmin(lo, rk->first_sample_ratio), hi = fmax(hi, rk->first_sample_ratio);
        if (isfinite(rk->cold_ratio))
          first_lo = fmin(first_lo, rk->cold_ratio), first_hi = fmax(first_hi, rk->cold_ratio);
      }
    }
    text_add_ranks(&where, s, marked, ws);
    free(marked);
  }
  if (hits == 0) return;
  char range[64] = "-", first_range[64] = "-";
  if (isfinite(lo)) snprintf(range, sizeof range, lo == hi ? "%.2fx" : "%.2fx-%.2fx", lo, hi);
  if (isfinite(first_lo))
    snprintf(first_range, sizeof first_range, first_lo == first_hi ? "%.2fx" : "%.2fx-%.2fx",
             first_lo, first_hi);
  switch (kind) {
    case COLD_WARMUP:
      add_advice(s,
                 "warm up longer before timing: the first timed sample is %s the median (slow "
                 "above %.0fx) on %s (%zu of %zu rank measurements)",
                 range, GS_REPORT_WARMUP_FLAG, where.text, hits, pairs);
      return;
    case COLD_REQUESTS:
      add_advice(s,
                 "cold requests: %zu of %zu above %.0fx the median latency on %s; they are left "
                 "out of TTFT and TPOT",
                 outliers, cold, GS_REPORT_COLD_FLAG, where.text);
      return;
    case COLD_INJECTED:
      add_advice(s,
                 "injected cold start on %s: first iteration %s and first timed sample %s the "
                 "median; injected by --inject delay, as planned",
                 where.text, first_range, range);
      return;
  }
}

/* The usable 1-rank row of `s`, or NULL. */
static const gs_report_row *one_rank_row(const gs_report_series *s) {
  for (size_t i = 0; s && i < s->n_rows; i++)
    if (s->rows[i].world_size == 1 && row_usable(&s->rows[i])) return &s->rows[i];
  return NULL;
}

static gs_scaling_point row_point(const gs_report *r, const gs_report_row *row,
                                  gs_stats_group *groups);

/* "split at N ranks: even X, proportional (units ...) Y: gain Zx [L, H]" for each
 * proportional row of `s` with an even row of the same world size. */
static void split_advice(gs_report_series *s, const gs_report *r) {
  const gs_report_series *even = gs_report_split_sibling(r, s, "even");
  for (size_t i = 0; even && i < s->n_rows; i++) {
    const gs_report_row *p = &s->rows[i];
    for (size_t j = 0; j < even->n_rows; j++) {
      const gs_report_row *e = &even->rows[j];
      if (e->world_size != p->world_size || !row_usable(e) || !row_usable(p)) continue;
      // The gain is a ratio like a speedup: its interval by the same bootstrap.
      gs_stats_group *eg = malloc((e->n_step_runs ? e->n_step_runs : 1) * sizeof *eg);
      gs_stats_group *pg = malloc((p->n_step_runs ? p->n_step_runs : 1) * sizeof *pg);
      const gs_scaling_point even_point = row_point(r, e, eg), prop_point = row_point(r, p, pg);
      const double gain = gs_scaling_speedup(e->throughput, p->throughput);
      double low = NAN, high = NAN;
      if (eg && pg) gs_scaling_interval(&even_point, &prop_point, gain, &low, &high);
      free(eg);
      free(pg);
      char gain_text[64];
      gs_scaling_format_ratio(gain, low, high, 1.0, 2, "x", gain_text, sizeof gain_text);
      add_advice(s, "split at %d %s: even %s, proportional (units %s) %s: gain %s",
                 p->world_size, workers(s), rank_rate(s, e, e->throughput).text,
                 p->placement.split_units, rank_rate(s, p, p->throughput).text, gain_text);
      break;
    }
  }
}

/* The value of option `name` in a series' canonical `options` (1 when
 * absent), and the options with it set to 1 into `out`: the key of the
 * data-parallel twin. */
static long parallel_option_of(const char *options, const char *name, char *out, size_t size) {
  snprintf(out, size, "%s", options);
  char key[72];
  snprintf(key, sizeof key, "\"%s\":", name);
  char *at = strstr(out, key);
  if (!at) return 1;
  char *digits = at + strlen(key), *end = NULL;
  long tp = strtol(digits, &end, 10);
  if (end == digits || tp < 1) return 1;
  // Rewrite the value as 1 in place: the rest of the text shifts left.
  digits[0] = '1';
  memmove(digits + 1, end, strlen(end) + 1);
  return tp;
}

/* The option that sets the GPUs per rank of `s`'s rows (their
 * parallelism record), or NULL. */
static const char *parallel_option(const gs_report_series *s) {
  for (size_t i = 0; i < s->n_rows; i++)
    if (s->rows[i].parallel_option) return s->rows[i].parallel_option;
  return NULL;
}

/* The series that differs from tensor-parallel `s` only in its parallel
 * option set to 1 (data parallelism on the same GPUs), or NULL; *tp gets
 * s's value of that option (1: not tensor-parallel). */
static const gs_report_series *data_parallel_twin(const gs_report_series *s, const gs_report *r,
                                                  long *tp) {
  const char *name = parallel_option(s);
  const size_t size = strlen(s->options) + 1;
  char *dp_options = name ? malloc(size) : NULL;
  *tp = dp_options ? parallel_option_of(s->options, name, dp_options, size) : 1;
  const gs_report_series *twin = NULL;
  for (size_t i = 0; *tp > 1 && !twin && i < r->n_series; i++) {
    const gs_report_series *o = &r->series[i];
    if (o != s && strcmp(o->workload, s->workload) == 0 && strcmp(o->backend, s->backend) == 0 &&
        strcmp(o->label, s->label) == 0 && strcmp(o->split, s->split) == 0 &&
        strcmp(o->options, dp_options) == 0)
      twin = o;
  }
  free(dp_options);
  return twin;
}

/* The measurement of `row` in its document. */
static const cJSON *row_measurement(const gs_report *r, const gs_report_row *row) {
  return cJSON_GetArrayItem(gs_json_member(r->docs[row->file], "measurements"),
                            (int)row->measurement);
}

/* The 95% interval of `value` = X(t) / X(d), tokens/s over the run time:
 * the bootstrap over runs (each run one group) of mean run d / mean run
 * t, scaled to `value` as gs_scaling_interval does; NaN bounds with fewer
 * than 2 runs a side. */
static void run_ratio_interval(const gs_report *r, const gs_report_row *t, const gs_report_row *d,
                               double value, double *low, double *high) {
  *low = *high = NAN;
  const cJSON *st = gs_json_member(gs_json_member(row_measurement(r, t), "llm"), "run_seconds");
  const cJSON *sd = gs_json_member(gs_json_member(row_measurement(r, d), "llm"), "run_seconds");
  const int nt = cJSON_GetArraySize(st), nd = cJSON_GetArraySize(sd);
  if (nt < 2 || nd < 2) return;
  double *v = malloc((size_t)(nt + nd) * sizeof *v);
  gs_stats_group *g = malloc((size_t)(nt + nd) * sizeof *g);
  double mean_t = 0.0, mean_d = 0.0;
  int k = 0;
  for (const cJSON *x = st->child; v && g && x; x = x->next, k++) {
    v[k] = gs_json_number_or_nan(x);
    mean_t += v[k] / nt;
  }
  for (const cJSON *x = sd->child; v && g && x; x = x->next, k++) {
    v[k] = gs_json_number_or_nan(x);
    mean_d += v[k] / nd;
  }
  for (int i = 0; v && g && i < nt + nd; i++) g[i] = (gs_stats_group){&v[i], 1};
  double lo = NAN, hi = NAN;
  if (v && g) gs_stats_ratio_interval(g + nt, (size_t)nd, g, (size_t)nt, &lo, &hi);
  const double point = mean_d / mean_t;
  if (isfinite(lo) && isfinite(hi) && point > 0.0) {
    *low = value * lo / point;
    *high = value * hi / point;
  }
  free(v);
  free(g);
}

/* The 95% interval of the TPOT medians' ratio t / d (the requests'
 * percentile bootstrap); NaN bounds when a side has too few requests. */
static void tpot_ratio_interval(const gs_report *r, const gs_report_row *t, const gs_report_row *d,
                                double *low, double *high) {
  double *a = NULL, *b = NULL;
  size_t na = 0, nb = 0;
  *low = *high = NAN;
  if (gs_report_request_times(row_measurement(r, d), "tpot_seconds", &a, &na) == GS_OK &&
      gs_report_request_times(row_measurement(r, t), "tpot_seconds", &b, &nb) == GS_OK)
    gs_report_percentile_interval(a, na, b, nb, 50.0, low, high);
  free(a);
  free(b);
}

/* For a tensor-parallel llm series: each world size against its data
 * parallel twin's, each ratio with its 95% interval. */
static void tensor_parallel_advice(gs_report_series *s, const gs_report *r) {
  long tp;
  const gs_report_series *o = data_parallel_twin(s, r, &tp);
  char unit[64];
  snprintf(unit, sizeof unit, "%s/s", s->item_unit ? s->item_unit : "items");
  for (size_t a = 0; o && a < s->n_rows; a++) {
    const gs_report_row *t = &s->rows[a];
    for (size_t b = 0; b < o->n_rows; b++) {
      const gs_report_row *d = &o->rows[b];
      if (d->world_size != t->world_size || !row_usable(t) || !row_usable(d)) continue;
      const double gain = t->throughput / d->throughput;
      const double tpot = t->requests.tpot.median / d->requests.tpot.median;
      double lo, hi;
      char gain_text[64], tpot_text[64];
      run_ratio_interval(r, t, d, gain, &lo, &hi);
      gs_scaling_format_ratio(gain, lo, hi, 1.0, 2, "x", gain_text, sizeof gain_text);
      tpot_ratio_interval(r, t, d, &lo, &hi);
      gs_scaling_format_ratio(tpot, lo, hi, 1.0, 2, "x", tpot_text, sizeof tpot_text);
      add_advice(s,
                 "tensor against data parallelism at %d %s: tp %ld (%d replica%s) %s, TPOT p50 "
                 "%s; data parallel (%d replicas) %s, TPOT p50 %s: throughput %s, time per "
                 "token %s",
                 t->world_size, workers(s), tp, t->world_size / (int)tp,
                 t->world_size / tp == 1 ? "" : "s", rate_of(t->throughput, unit).text,
                 seconds_text(t->requests.tpot.median).text, d->world_size,
                 rate_of(d->throughput, unit).text, seconds_text(d->requests.tpot.median).text,
                 gain_text, tpot_text);
      break;
    }
  }
}

/* `row` as core/scaling's point, its runs' step samples in `groups`
 * (row->n_step_runs entries, owned by the caller; NULL: no samples). */
static gs_scaling_point row_point(const gs_report *r, const gs_report_row *row,
                                  gs_stats_group *groups) {
  gs_scaling_point p = {.world_size = row->world_size, .ok = strcmp(row->status, "ok") == 0,
                        .throughput = row->throughput, .faults = row->placement.faults[0] != '\0'};
  // A request-based row's samples are its request latencies: by Little's
  // law their mean carries its throughput's uncertainty, so they are the
  // bootstrap's samples as steps are (docs/statistics.md; as in the terminal).
  if (groups && row->step_samples) {
    size_t at = 0;
    for (size_t k = 0; k < row->n_step_runs; k++) {
      groups[k] = (gs_stats_group){row->step_samples + at, row->step_run_n[k]};
      at += row->step_run_n[k];
    }
    p.runs = groups;
    p.n_runs = row->n_step_runs;
  }
  // Other processes on its GPUs and its bytes per rank, read as the
  // terminal reads them, so both name the same suspect causes.
  gs_scaling_point_add_document(&p, row_measurement(r, row));
  return p;
}

/* The host of `row`'s document as core/scaling sees it. */
static gs_scaling_host row_host(const gs_report *r, const gs_report_row *row,
                                const char *backend, const char *workload) {
  const cJSON *cpu = gs_json_member(gs_json_member(r->docs[row->file], "environment"), "cpu");
  const double cores = gs_json_number_member(cpu, "logical_cores");
  gs_scaling_host h = {.cores = isfinite(cores) && cores > 0 && cores < 1e6 ? (int)cores : 0,
                       .load_average = gs_json_number_member(cpu, "load_average"),
                       .cpu_ranks = gs_scaling_cpu_ranks(backend, workload)};
  const cJSON *device = cJSON_GetArrayItem(gs_json_member(row_measurement(r, row), "devices"), 0);
  gs_scaling_host_add_document(&h, gs_json_member(r->docs[row->file], "environment"), backend,
                               cJSON_IsNumber(device) ? device->valueint : -1);
  return h;
}

/* Points of every row of `s` and of `base` (may be NULL) with their
 * sample groups; NULL groups (out of memory) leave the intervals NaN. */
typedef struct {
  gs_scaling_point *points, base;
  gs_stats_group **groups, *base_groups;
} series_points;

static gs_status points_build(const gs_report *r, const gs_report_series *s,
                              const gs_report_row *base, series_points *sp) {
  memset(sp, 0, sizeof *sp);
  sp->points = malloc((s->n_rows ? s->n_rows : 1) * sizeof *sp->points);
  sp->groups = calloc(s->n_rows ? s->n_rows : 1, sizeof *sp->groups);
  if (!sp->points || !sp->groups) return gs_error(GS_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    sp->groups[i] = malloc((row->n_step_runs ? row->n_step_runs : 1) * sizeof **sp->groups);
    sp->points[i] = row_point(r, row, sp->groups[i]);
  }
  if (base) {
    sp->base_groups = malloc((base->n_step_runs ? base->n_step_runs : 1) * sizeof *sp->base_groups);
    sp->base = row_point(r, base, sp->base_groups);
  }
  return GS_OK;
}

static void points_free(series_points *sp, size_t n) {
  for (size_t i = 0; sp->groups && i < n; i++) free(sp->groups[i]);
  free(sp->groups);
  free(sp->points);
  free(sp->base_groups);
}

/* See analyze_internal.h. */
gs_status gs_report_series_analyse(gs_report_series *s, const gs_report *r) {
  qsort(s->rows, s->n_rows, sizeof *s->rows, compare_rows);
  // With one rank there is nothing to split: a split series without its own
  // 1-rank row compares against that of its sibling (or the unsplit series).
  const gs_report_row *base = one_rank_row(s);
  if (!base && s->split[0]) base = one_rank_row(gs_report_split_sibling(r, s, ""));
  if (!base && s->split[0]) base = one_rank_row(gs_report_split_sibling(r, s, "even"));
  // A tensor-parallel series has no 1-GPU row: it compares against the
  // whole model on one GPU, its data-parallel twin's.
  long tp;
  if (!base) base = one_rank_row(data_parallel_twin(s, r, &tp));
  // A series is what was measured together: a sweep of our own with a
  // rank count above 1. Single runs (one rank count alone, or another
  // tool's runs) never yield a speedup, efficiency or verdict.
  int sizes = 0, multi = 0;
  for (size_t i = 0; i < s->n_rows; i++) {
    const gs_report_row *row = &s->rows[i];
    if (row->ingested) continue;
    multi |= row->world_size > 1;
    int seen = 0;
    for (size_t j = 0; j < i; j++) seen |= !s->rows[j].ingested && s->rows[j].world_size == row->world_size;
    sizes += !seen;
  }
  // A split series has only N-rank rows but borrows a 1-rank baseline.
  const int sweep = multi && (sizes >= 2 || (base && !base->ingested));
  s->single_run = !sweep;
  if (!sweep || (base && base->ingested)) base = NULL;
  series_points sp;
  gs_status st = points_build(r, s, base, &sp);
  if (st != GS_OK) {
    points_free(&sp, s->n_rows);
    return st;
  }
  const gs_scaling kind = gs_scaling_of(s->scaling);
  for (size_t i = 0; i < s->n_rows && base; i++) {
    gs_report_row *row = &s->rows[i];
    row->ideal_throughput = (double)row->world_size * base->throughput;
    if (row->breakdown.available && base->breakdown.available) {
      row->breakdown.ideal_step =
          gs_scaling_ideal_step(kind, base->breakdown.step, row->world_size);
      breakdown_losses(kind, &base->breakdown, &row->breakdown, row->world_size);
    }
    // A failed measurement's timings are shown, but never compared.
    if (!row_usable(row) || row->ingested) continue;
    row->speedup = gs_scaling_speedup(base->throughput, row->throughput);
    row->efficiency = gs_scaling_efficiency(row->speedup, row->world_size);
    row->karp_flatt = gs_scaling_karp_flatt(row->speedup, row->world_size);
    if (row == base)
      row->speedup_low = row->speedup_high = 1.0;
    else
      gs_scaling_interval(&sp.base, &sp.points[i], row->speedup, &row->speedup_low,
                          &row->speedup_high);
  }
  if (s->n_rows > 0 && s->rows[0].collective.present) {
    points_free(&sp, s->n_rows);
    busbw_advice(s);
    collective_advice(s);
    rank_advice(s, r);
    cold_advice(s, COLD_WARMUP);
    cold_advice(s, COLD_INJECTED);
    return GS_OK;
  }

  gs_scaling_assessment a;
  const gs_scaling_host host = s->n_rows ? row_host(r, &s->rows[0], s->backend, s->workload)
                                         : (gs_scaling_host){.load_average = NAN};
  for (size_t i = 0; i < s->n_rows; i++) sp.points[i].ok &= !s->rows[i].ingested;
  gs_scaling_assess(sp.points, s->n_rows, base ? &sp.base : NULL, &host, &a);
  points_free(&sp, s->n_rows);
  if (!sweep) {
    add_advice(s, "no scaling verdict: single run (%s)",
               s->n_rows && s->rows[0].ingested
                   ? "another tool's results: unrelated runs, not a series measured together"
                   : "one rank count, no series measured together");
  } else if (a.verdict == GS_VERDICT_NONE) {
    add_advice(s, "%s", a.none_reason);
  } else {
    const gs_report_row *pick = &s->rows[a.point];
    s->verdict = a.verdict;
    s->verdict_world_size = a.world_size;
    if (a.world_size != a.largest)
      add_advice(s, "the largest world size (%d) has no usable measurement; the verdict uses %d",
                 a.largest, a.world_size);
    char name[512], sentence[2048];
    gs_report_series_name(s, name, sizeof name);
    gs_scaling_verdict_sentence(&a, name, s->backend, s->item_unit, sentence, sizeof sentence);
    add_advice(s, "%s", sentence);
    // "Why not N x" explains a shortfall; a suspect result has none to explain.
    if (a.verdict != GS_VERDICT_SUSPECT) why_not_advice(s, pick);
  }
  if (strcmp(s->split, "proportional") == 0) split_advice(s, r);
  tensor_parallel_advice(s, r);
  batch_advice(s);
  rank_advice(s, r);
  cold_advice(s, COLD_WARMUP);
  cold_advice(s, COLD_REQUESTS);
  cold_advice(s, COLD_INJECTED);
  return GS_OK;
}
