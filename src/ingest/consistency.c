/* Internal consistency of ingested LoadGen logs and nccl-tests rows (see
 * consistency.h). */
#include "ingest/consistency.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/coll_model.h"
#include "ingest/text.h"

/* ---- LoadGen ------------------------------------------------------------------ */

static const struct {
  const char *name;
  size_t offset;
} distributions[] = {
    {"latency", offsetof(gs_mlperf_log, latency)},
    {"first token latency", offsetof(gs_mlperf_log, first_token)},
    {"time per output token", offsetof(gs_mlperf_log, time_per_output_token)},
};
#define N_DISTRIBUTIONS (sizeof distributions / sizeof distributions[0])

static const gs_mlperf_latency *distribution(const gs_mlperf_log *log, size_t i) {
  return (const gs_mlperf_latency *)((const char *)log + distributions[i].offset);
}

/* "line 12" or "a line not recorded", for the second value of a message. */
static const char *line_text(size_t line, char *buf, size_t size) {
  if (line > 0)
    snprintf(buf, size, "line %zu", line);
  else
    snprintf(buf, size, "its own line");
  return buf;
}

static gs_status check_distribution(const gs_mlperf_latency *l, const char *name,
                                    const char *source) {
  char other[32];
  if (!isnan(l->min_ns) && !isnan(l->max_ns) && l->min_ns > l->max_ns)
    return gs_ingest_fail(source, l->min_line, "min %s %.15g ns is above max %s %.15g ns (%s): "
                          "the log contradicts itself", name, l->min_ns, name, l->max_ns,
                          line_text(l->max_line, other, sizeof other));
  if (!isnan(l->mean_ns) && ((!isnan(l->min_ns) && l->mean_ns < l->min_ns) ||
                             (!isnan(l->max_ns) && l->mean_ns > l->max_ns)))
    return gs_ingest_fail(source, l->mean_line, "mean %s %.15g ns is outside [min %.15g, max "
                          "%.15g] ns: the log contradicts itself", name, l->mean_ns, l->min_ns,
                          l->max_ns);
  for (size_t i = 0; i < l->n_percentiles; i++) {
    const double v = l->value_ns[i];
    if ((!isnan(l->min_ns) && v < l->min_ns) || (!isnan(l->max_ns) && v > l->max_ns))
      return gs_ingest_fail(source, l->value_line[i], "p%g %s %.15g ns is outside [min %.15g, "
                            "max %.15g] ns: the log contradicts itself", l->percentile[i], name,
                            v, l->min_ns, l->max_ns);
    for (size_t k = 0; k < l->n_percentiles; k++)
      if (l->percentile[k] > l->percentile[i] && l->value_ns[k] < v)
        return gs_ingest_fail(source, l->value_line[k], "p%g %s %.15g ns is below p%g %.15g ns "
                              "(%s): a higher percentile cannot be lower",
                              l->percentile[k], name, l->value_ns[k], l->percentile[i], v,
                              line_text(l->value_line[i], other, sizeof other));
  }
  return GS_OK;
}

gs_status gs_mlperf_check_log(const gs_mlperf_log *log, const char *source) {
  for (size_t i = 0; i < N_DISTRIBUTIONS; i++)
    GS_TRY(check_distribution(distribution(log, i), distributions[i].name, source));
  return GS_OK;
}

/* Whether the summary's `a` and the detail's `b` are one number, within
 * `slack` plus `rel` of the larger. */
static int same_number(double a, double b, double slack, double rel) {
  if (isnan(a) || isnan(b)) return 1;
  return fabs(a - b) <= slack + rel * fmax(fabs(a), fabs(b));
}

/* A rate as the summary rounds it: 6 significant digits or 2 decimals. */
#define RATE_SLACK 0.005, 1e-5
/* A latency: whole nanoseconds in both. */
#define NS_SLACK 0.5, 1e-12

static gs_status disagree(const char *what, double a, double b, size_t a_line, size_t b_line,
                          const char *summary_source, const char *detail_source) {
  char at_b[32];
  return gs_ingest_fail(summary_source, a_line, "%s is %.15g here but %.15g in %s (%s): the "
                        "summary and the detail log contradict each other", what, a, b,
                        detail_source, line_text(b_line, at_b, sizeof at_b));
}

gs_status gs_mlperf_check_agree(const gs_mlperf_log *s, const gs_mlperf_log *d,
                                const char *summary_source, const char *detail_source) {
  static const struct {
    const char *name;
    size_t offset;
  } rates[] = {
      {"samples per second", offsetof(gs_mlperf_log, samples_per_second)},
      {"completed samples per second", offsetof(gs_mlperf_log, completed_samples_per_second)},
      {"scheduled samples per second", offsetof(gs_mlperf_log, scheduled_samples_per_second)},
      {"QPS w/ loadgen overhead", offsetof(gs_mlperf_log, qps_with_loadgen_overhead)},
      {"QPS w/o loadgen overhead", offsetof(gs_mlperf_log, qps_without_loadgen_overhead)},
      {"tokens per second", offsetof(gs_mlperf_log, tokens_per_second)},
      {"completed tokens per second", offsetof(gs_mlperf_log, completed_tokens_per_second)},
      {"target latency (ns)", offsetof(gs_mlperf_log, target_latency_ns)},
  };
  for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
    const double a = *(const double *)((const char *)s + rates[i].offset);
    const double b = *(const double *)((const char *)d + rates[i].offset);
    const int ns = rates[i].offset == offsetof(gs_mlperf_log, target_latency_ns);
    if (ns ? !same_number(a, b, NS_SLACK) : !same_number(a, b, RATE_SLACK))
      return disagree(rates[i].name, a, b, 0, 0, summary_source, detail_source);
  }
  if (s->query_count >= 0 && d->query_count >= 0 && s->query_count != d->query_count)
    return disagree("the query count", (double)s->query_count, (double)d->query_count, 0, 0,
                    summary_source, detail_source);
  for (size_t i = 0; i < N_DISTRIBUTIONS; i++) {
    const gs_mlperf_latency *a = distribution(s, i), *b = distribution(d, i);
    const char *name = distributions[i].name;
    char what[96];
    snprintf(what, sizeof what, "min %s (ns)", name);
    if (!same_number(a->min_ns, b->min_ns, NS_SLACK))
      return disagree(what, a->min_ns, b->min_ns, a->min_line, b->min_line, summary_source,
                      detail_source);
    snprintf(what, sizeof what, "max %s (ns)", name);
    if (!same_number(a->max_ns, b->max_ns, NS_SLACK))
      return disagree(what, a->max_ns, b->max_ns, a->max_line, b->max_line, summary_source,
                      detail_source);
    snprintf(what, sizeof what, "mean %s (ns)", name);
    if (!same_number(a->mean_ns, b->mean_ns, NS_SLACK))
      return disagree(what, a->mean_ns, b->mean_ns, a->mean_line, b->mean_line, summary_source,
                      detail_source);
    for (size_t p = 0; p < a->n_percentiles; p++)
      for (size_t q = 0; q < b->n_percentiles; q++) {
        if (a->percentile[p] != b->percentile[q]) continue;
        snprintf(what, sizeof what, "p%g %s (ns)", a->percentile[p], name);
        if (!same_number(a->value_ns[p], b->value_ns[q], NS_SLACK))
          return disagree(what, a->value_ns[p], b->value_ns[q], a->value_line[p],
                          b->value_line[q], summary_source, detail_source);
      }
  }
  return GS_OK;
}

/* ---- nccl-tests ---------------------------------------------------------------- */

size_t gs_nccl_tests_type_size(const char *type) {
  static const struct {
    const char *name;
    size_t bytes;
  } types[] = {
      {"int8", 1},    {"uint8", 1},   {"char", 1},     {"f8e4m3", 1},   {"f8e5m2", 1},
      {"half", 2},    {"float16", 2}, {"bfloat16", 2}, {"int32", 4},    {"uint32", 4},
      {"int", 4},     {"float", 4},   {"float32", 4},  {"int64", 8},    {"uint64", 8},
      {"double", 8},  {"float64", 8},
  };
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (strcmp(type, types[i].name) == 0) return types[i].bytes;
  return 0;
}

/* Ops whose size is the whole gathered or scattered buffer: count is per
 * rank (size = count x type x ranks) in today's nccl-tests; older versions
 * print the requested count and a size rounded down to ranks x 4
 * elements. */
static int splits_buffer(const char *op) {
  static const char *const ops[] = {"allgather", "reducescatter", "alltoall", "gather",
                                    "scatter",   "hypercube"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(op, ops[i]) == 0) return 1;
  return 0;
}

/* Text rows name their line ("ar.txt:14: out-of-place: ..."), JSON rows
 * their path ("ag.json: results[3].out_of_place: ..."). `in_place` -1: the
 * row as a whole. */
static gs_status row_fail(const char *source, const gs_nccl_tests_row *row, size_t index,
                          int in_place, const char *what) {
  if (row->line > 0)
    return gs_ingest_fail(source, row->line, "%s%s: the row contradicts itself",
                          in_place < 0 ? "" : in_place ? "in-place: " : "out-of-place: ", what);
  return gs_ingest_fail(source, 0, "results[%zu]%s: %s: the row contradicts itself", index,
                        in_place < 0 ? "" : in_place ? ".in_place" : ".out_of_place", what);
}

static gs_status check_size(const gs_nccl_tests_output *out, const char *op, const char *source,
                            size_t index, const gs_nccl_tests_row *row) {
  const size_t ts = gs_nccl_tests_type_size(row->type);
  if (ts == 0) return GS_OK;
  const size_t ranks = gs_nccl_tests_world_size(out);
  const double plain = (double)row->count * (double)ts, size = (double)row->bytes;
  int ok = size == plain;
  if (splits_buffer(op))
    ok = ok || (ranks > 0 && size == plain * (double)ranks) ||
         (size <= plain && plain - size < 4.0 * (double)ts * (double)(ranks ? ranks : 1));
  if (ok) return GS_OK;
  char what[320];
  snprintf(what, sizeof what, "size %llu bytes, but count %llu x %s (%zu bytes) = %.10g bytes%s",
           (unsigned long long)row->bytes, (unsigned long long)row->count, row->type, ts, plain,
           splits_buffer(op) ? " (nor that times the ranks)" : "");
  return row_fail(source, row, index, -1, what);
}

static gs_status check_half(const gs_nccl_tests_output *out, const char *op, const char *source,
                            size_t index, const gs_nccl_tests_row *row,
                            const gs_nccl_tests_half *h, int in_place) {
  if (!h->present) return GS_OK;
  const int text = row->line > 0;
  char what[320];
  // The text table prints bandwidths to 0.01 GB/s and the time to 0.01 us
  // below 100 us, 0.1 below 10 ms, 1 above (at most); JSON bandwidths to
  // 1e-6 GB/s, every figure to 6 significant digits at least.
  const double time_step = h->time_us >= 10000.0 ? 1.0 : h->time_us >= 100.0 ? 0.1 : 0.01;
  const double bw_step = text ? 0.01 : 1e-6;
  const double digits = text ? 0.0 : 1e-5;
  if (h->time_us > 0.0) {
    const double expected = (double)row->bytes / (h->time_us * 1e3);  // GB/s: 1e9 B per GB
    const double time_rel = text ? 0.5 * time_step / h->time_us : 0.0;
    const double slack = 0.5 * bw_step + expected * (time_rel + digits) + 2 * digits * h->algbw_gbs + 1e-9;
    if (fabs(h->algbw_gbs - expected) > slack) {
      snprintf(what, sizeof what, "algbw %.10g GB/s, but size %llu bytes / time %.10g us = "
               "%.6g GB/s", h->algbw_gbs, (unsigned long long)row->bytes, h->time_us, expected);
      return row_fail(source, row, index, in_place, what);
    }
  } else if (row->bytes > 0) {
    snprintf(what, sizeof what, "time %.10g us for %llu bytes: no time moves them",
             h->time_us, (unsigned long long)row->bytes);
    return row_fail(source, row, index, in_place, what);
  }
  const double factor = gs_coll_busbw_factor_of(op, (int)gs_nccl_tests_world_size(out));
  if (isnan(factor)) return GS_OK;
  const double expected = h->algbw_gbs * factor;
  const double slack = 0.5 * bw_step * (1.0 + factor) + digits * (expected + h->busbw_gbs) + 1e-9;
  if (fabs(h->busbw_gbs - expected) > slack) {
    snprintf(what, sizeof what, "busbw %.10g GB/s, but algbw %.10g GB/s x %s's factor %.6g at "
             "%zu ranks = %.6g GB/s", h->busbw_gbs, h->algbw_gbs, op, factor,
             gs_nccl_tests_world_size(out), expected);
    return row_fail(source, row, index, in_place, what);
  }
  return GS_OK;
}

gs_status gs_nccl_tests_check_row(const gs_nccl_tests_output *out, const char *op,
                                  const char *source, size_t index,
                                  const gs_nccl_tests_row *row) {
  GS_TRY(check_size(out, op, source, index, row));
  GS_TRY(check_half(out, op, source, index, row, &row->out_of_place, 0));
  return check_half(out, op, source, index, row, &row->in_place, 1);
}
