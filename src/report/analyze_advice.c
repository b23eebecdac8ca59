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

#include "core/scaling.h"
#include "report/analyze_internal.h"

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
  char buf[1024];
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

/* "Why not N x": the largest part lost against the ideal step of `row`. */
static void why_not_advice(gs_report_series *s, const gs_report_row *row) {
  const gs_report_breakdown *b = &row->breakdown;
  if (row->request_based) {
    add_advice(s, "why not %d.0x: the compute/communication/imbalance/host split does not apply "
                  "to request-based measurements (overlapping requests, not lockstep steps)",
               row->world_size);
    return;
  }
  if (!b->available || !isfinite(b->ideal_step)) return;
  add_advice(s,
             "why not %d.0x at %d ranks: the step is %.4g ms against an ideal %.4g ms; per rank "
             "it splits into compute %.4g ms, exposed communication %.4g ms%s, load imbalance "
             "%.4g ms and host overhead %.4g ms%s",
             row->world_size, row->world_size, 1e3 * b->step, 1e3 * b->ideal_step,
             1e3 * b->compute, 1e3 * b->comm, b->comm_measured ? "" : " (not recorded)",
             1e3 * b->imbalance, 1e3 * b->host, b->device_clock ? "" : " (no device clock)");
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
    if (nm)
      snprintf(used, sizeof used, "%.1f%% of %.4g GiB", 100.0 * share,
               total / (double)nm / 1073741824.0);
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
    if (isfinite(s->rows[i].coll_busbw) && (!best || s->rows[i].coll_busbw > best->coll_busbw))
      best = &s->rows[i];
  if (!best) {
    add_advice(s, "collective: no bus bandwidth recorded");
    return;
  }
  if (!isfinite(best->link_bandwidth)) {
    add_advice(s, "collective %s: best bus bandwidth %.4g GB/s at %.4g bytes; the link's "
                  "theoretical bandwidth is not recorded (run gpuscale info for the topology)",
               best->coll_op ? best->coll_op : "?", best->coll_busbw / 1e9, best->coll_bytes);
    return;
  }
  double share = best->coll_busbw / best->link_bandwidth;
  if (share < GS_REPORT_LOW_BUSBW)
    add_advice(s,
               "investigate the transport: collective %s reaches at best %.4g GB/s bus bandwidth "
               "(at %.4g bytes), %.1f%% of the link's theoretical %.4g GB/s (below %.0f%%); check "
               "that NCCL uses NVLink/P2P (NCCL_DEBUG=INFO) and not PCIe or the network",
               best->coll_op ? best->coll_op : "?", best->coll_busbw / 1e9, best->coll_bytes,
               100.0 * share, best->link_bandwidth / 1e9, 100.0 * GS_REPORT_LOW_BUSBW);
  else
    add_advice(s, "collective %s: best bus bandwidth %.4g GB/s is %.1f%% of the link's "
                  "theoretical %.4g GB/s: the transport is fine",
               best->coll_op ? best->coll_op : "?", best->coll_busbw / 1e9, 100.0 * share,
               best->link_bandwidth / 1e9);
}

/* The unit of a rank's throughput in `row`: tokens for request-based rows. */
static const char *rank_unit(const gs_report_series *s, const gs_report_row *row) {
  if (row->request_based) return "tokens";
  return s->item_unit ? s->item_unit : "items";
}

/* Load balancing, failed ranks, failed requests and cold starts, per row. */
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
    if (worst)
      add_advice(s,
                 "%s: at %d ranks rank %d %s %.4g %s/s, %.1f%% from the median rank "
                 "throughput %.4g (critical > %.0f%%); ranks max/min %.2fx%s%s%s",
                 worst->injected ? "injected straggler" : "consider dynamic load balancing",
                 row->world_size, worst->rank,
                 row->straggler >= 0 ? "is the straggler at" : "runs at", worst->throughput,
                 rank_unit(s, row), 100.0 * worst->deviation, row->rank_median,
                 100.0 * r->thresholds.critical, row->spread_ratio,
                 worst->injected ? " (injected: " : "", worst->injected ? row->faults : "",
                 worst->injected ? ")" : "");
    for (size_t k = 0; k < row->n_ranks; k++) {
      const gs_report_rank *rk = &row->ranks[k];
      if (strcmp(rk->status, "ok") == 0) continue;
      add_advice(s, "investigate rank %d: status %s at %d ranks (%s)%s%s", rk->rank, rk->status,
                 row->world_size, gs_report_file_name(r, row->file), rk->error ? ": " : "",
                 rk->error ? rk->error : "");
    }
    for (size_t k = 0; k < row->n_ranks; k++) {
      const gs_report_rank *rk = &row->ranks[k];
      if (rk->requests > rk->requests_ok)
        add_advice(s,
                   "investigate rank %d (host %s): %zu of %zu requests did not succeed at %d "
                   "ranks (%zu failed, %zu timed out; success rate %.1f%%)",
                   rk->rank, rk->host ? rk->host : "-", rk->requests - rk->requests_ok,
                   rk->requests, row->world_size, rk->requests_failed, rk->requests_timed_out,
                   100.0 * rk->success_rate);
      if (rk->requests == 0 && rk->failed_samples > 0)
        add_advice(s,
                   "investigate rank %d (host %s): %llu of %llu timed samples failed at %d ranks "
                   "(success rate %.1f%%)%s",
                   rk->rank, rk->host ? rk->host : "-", (unsigned long long)rk->failed_samples,
                   (unsigned long long)rk->samples_taken, row->world_size,
                   100.0 * rk->success_rate, rk->injected ? "; injected by --inject fail" : "");
      if (rk->first_sample_flag || rk->cold_flag || rk->cold_outliers) {
        char first[64] = "", requests[96] = "";
        if (isfinite(rk->cold_ratio))
          snprintf(first, sizeof first, " and first iteration %.2fx", rk->cold_ratio);
        if (rk->requests > 0)
          snprintf(requests, sizeof requests, "; %zu of %zu cold request(s) above %.0fx the "
                   "median latency", rk->cold_outliers, rk->cold_requests, GS_REPORT_COLD_FLAG);
        add_advice(s,
                   "cold start on rank %d (host %s) at %d ranks: first timed sample %.2fx%s the "
                   "median%s; %s",
                   rk->rank, rk->host ? rk->host : "-", row->world_size, rk->first_sample_ratio,
                   first, requests,
                   rk->injected_delay ? "injected by --inject delay, as planned"
                                      : "warm up longer before timing");
      }
    }
  }
}

/* The usable 1-rank row of `s`, or NULL. */
static const gs_report_row *one_rank_row(const gs_report_series *s) {
  for (size_t i = 0; s && i < s->n_rows; i++)
    if (s->rows[i].world_size == 1 && row_usable(&s->rows[i])) return &s->rows[i];
  return NULL;
}

/* "split at N ranks: even X, proportional (units ...) Y: gain Zx" for each
 * proportional row of `s` with an even row of the same world size. */
static void split_advice(gs_report_series *s, const gs_report *r) {
  const gs_report_series *even = gs_report_split_sibling(r, s, "even");
  for (size_t i = 0; even && i < s->n_rows; i++) {
    const gs_report_row *p = &s->rows[i];
    for (size_t j = 0; j < even->n_rows; j++) {
      const gs_report_row *e = &even->rows[j];
      if (e->world_size != p->world_size || !row_usable(e) || !row_usable(p)) continue;
      add_advice(s, "split at %d ranks: even %.4g %s/s, proportional (units %s) %.4g %s/s: gain "
                    "%.2fx", p->world_size, e->throughput, s->item_unit ? s->item_unit : "items",
                 p->split_units, p->throughput, s->item_unit ? s->item_unit : "items",
                 p->throughput / e->throughput);
      break;
    }
  }
}

/* The "tp" of an llm series' options (1 when absent), and the options with
 * it set to 1 into `out`: the key of the data-parallel twin. */
static long tensor_parallel_of(const char *options, char *out, size_t size) {
  snprintf(out, size, "%s", options);
  char *at = strstr(out, "\"tp\":");
  if (!at) return 1;
  char *digits = at + 5, *end = NULL;
  long tp = strtol(digits, &end, 10);
  if (end == digits || tp < 1) return 1;
  // Rewrite the value as 1 in place: the rest of the text shifts left.
  digits[0] = '1';
  memmove(digits + 1, end, strlen(end) + 1);
  return tp;
}

/* The series that differs from tensor-parallel `s` only in --tp 1 (data
 * parallelism on the same GPUs), or NULL; *tp gets s's --tp (1: not
 * tensor-parallel). */
static const gs_report_series *data_parallel_twin(const gs_report_series *s, const gs_report *r,
                                                  long *tp) {
  const size_t size = strlen(s->options) + 1;
  char *dp_options = malloc(size);
  *tp = dp_options ? tensor_parallel_of(s->options, dp_options, size) : 1;
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

/* For a tensor-parallel llm series: each world size against its data
 * parallel twin's. */
static void tensor_parallel_advice(gs_report_series *s, const gs_report *r) {
  long tp;
  const gs_report_series *o = data_parallel_twin(s, r, &tp);
  const char *unit = s->item_unit ? s->item_unit : "items";
  for (size_t a = 0; o && a < s->n_rows; a++) {
    const gs_report_row *t = &s->rows[a];
    for (size_t b = 0; b < o->n_rows; b++) {
      const gs_report_row *d = &o->rows[b];
      if (d->world_size != t->world_size || !row_usable(t) || !row_usable(d)) continue;
      add_advice(s,
                 "tensor against data parallelism at %d %s: tp %ld (%d replica%s) %.4g %s/s, "
                 "TPOT p50 %.3g ms; data parallel (%d replicas) %.4g %s/s, TPOT p50 %.3g ms: "
                 "throughput %.2fx, time per token %.2fx",
                 t->world_size, strcmp(s->backend, "cpu") == 0 ? "ranks" : "GPUs", tp,
                 t->world_size / (int)tp, t->world_size / tp == 1 ? "" : "s", t->throughput, unit,
                 1e3 * t->tpot.median, d->world_size, d->throughput, unit, 1e3 * d->tpot.median,
                 t->throughput / d->throughput, t->tpot.median / d->tpot.median);
      break;
    }
  }
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
  const gs_scaling kind = gs_scaling_of(s->scaling);
  for (size_t i = 0; i < s->n_rows && base; i++) {
    gs_report_row *row = &s->rows[i];
    row->ideal_throughput = (double)row->world_size * base->throughput;
    if (row->breakdown.available && base->breakdown.available)
      row->breakdown.ideal_step =
          gs_scaling_ideal_step(kind, base->breakdown.step, row->world_size);
    // A failed measurement's timings are shown, but never compared.
    if (!row_usable(row)) continue;
    row->speedup = gs_scaling_speedup(base->throughput, row->throughput);
    row->efficiency = gs_scaling_efficiency(row->speedup, row->world_size);
    row->karp_flatt = gs_scaling_karp_flatt(row->speedup, row->world_size);
  }
  if (s->n_rows > 0 && s->rows[0].is_coll) {
    collective_advice(s);
    rank_advice(s, r);
    return GS_OK;
  }

  gs_scaling_point *points = malloc((s->n_rows ? s->n_rows : 1) * sizeof *points);
  if (!points) return gs_error(GS_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < s->n_rows; i++)
    points[i] = (gs_scaling_point){.world_size = s->rows[i].world_size,
                                   .ok = strcmp(s->rows[i].status, "ok") == 0,
                                   .throughput = s->rows[i].throughput};
  gs_scaling_assessment a;
  gs_scaling_assess(points, s->n_rows, base ? base->throughput : NAN, &a);
  free(points);
  if (a.verdict == GS_VERDICT_NONE) {
    add_advice(s, "%s", a.none_reason);
  } else {
    const gs_report_row *pick = &s->rows[a.point];
    s->verdict = a.verdict;
    s->verdict_world_size = a.world_size;
    if (a.world_size != a.largest)
      add_advice(s, "the largest world size (%d) has no usable measurement; the verdict uses %d",
                 a.largest, a.world_size);
    char name[512], sentence[1024];
    gs_report_series_name(s, name, sizeof name);
    gs_scaling_verdict_sentence(&a, name, s->backend, s->item_unit, sentence, sizeof sentence);
    add_advice(s, "%s", sentence);
    why_not_advice(s, pick);
  }
  if (strcmp(s->split, "proportional") == 0) split_advice(s, r);
  tensor_parallel_advice(s, r);
  batch_advice(s);
  rank_advice(s, r);
  return GS_OK;
}
