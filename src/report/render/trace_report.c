/* The report of trace files (`gpuscale report TRACE.json...`,
 * docs/traces.md): the analysis of report/analyze/trace_stats.h as
 * aligned text, Markdown, HTML, CSV (one row per rank, then one per top
 * kernel) or JSON. */
#include "report/render/trace_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"
#include "core/json.h"
#include "core/result.h"
#include "report/render/internal.h"
#include "report/render/trace_path.h"

static const char *class_name(uint8_t cls) {
  static const char *const names[] = {"compute", "communication", "memory", "other"};
  return cls < 4 ? names[cls] : "?";
}

/* A kernel's name cut to fit a cell: templates and arguments stay in the
 * JSON and CSV. */
static void short_name(char *cell, const char *name) {
  size_t n = strlen(name);
  if (n <= 72) gs_render_cellf(cell, "%s", name);
  else gs_render_cellf(cell, "%.69s...", name);
}

static void pct_of(char *cell, double part, double whole) {
  gs_render_pct(cell, whole > 0 ? part / whole : NAN);
}

static gs_status breakdown(gs_render_writer *w, const gs_trace_stats *s) {
  gs_render_block(w, 2, "", "Temporal breakdown");
  gs_render_block(w, 0, "  ", "Shares of each rank's GPU span (first GPU event's start to the "
                  "last one's end); overlap is the time computing while communicating over the "
                  "time communicating (HTA's definitions).");
  static const char *const head[] = {"rank", "span", "busy", "idle", "compute", "non-compute",
                                     "communication", "memory", "overlap"};
  static const int left[] = {1, 0, 0, 0, 0, 0, 0, 0, 0};
  gs_render_table t;
  gs_render_table_init(&t, 9, head, left);
  for (size_t i = 0; i < s->n_ranks; i++) {
    const gs_trace_rank_stats *r = &s->ranks[i];
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    gs_render_cellf(c[0], "%s", r->label);
    gs_render_time(c[1], r->span_us * 1e-6);
    gs_render_time(c[2], r->busy_us * 1e-6);
    pct_of(c[3], r->idle_us, r->span_us);
    pct_of(c[4], r->compute_us, r->span_us);
    pct_of(c[5], r->non_compute_us, r->span_us);
    pct_of(c[6], r->comm_us, r->span_us);
    pct_of(c[7], r->memory_us, r->span_us);
    gs_render_pct(c[8], r->overlap);
  }
  return gs_render_table_done(w, &t, "  ");
}

static gs_status idle_split(gs_render_writer *w, const gs_trace_stats *s) {
  gs_render_block(w, 2, "", "Idle time");
  gs_render_block(w, 0, "  ", "Gaps between consecutive GPU events of a stream: host wait when "
                  "the launch came after the previous event ended, kernel wait when shorter than "
                  "%g us, other otherwise; shares of the summed gaps.", s->kernel_wait_us);
  static const char *const head[] = {"rank", "idle (union)", "gaps", "host wait", "kernel wait",
                                     "other"};
  static const int left[] = {1, 0, 0, 0, 0, 0};
  gs_render_table t;
  gs_render_table_init(&t, 6, head, left);
  for (size_t i = 0; i < s->n_ranks; i++) {
    const gs_trace_rank_stats *r = &s->ranks[i];
    double gaps = r->idle_host_us + r->idle_kernel_us + r->idle_other_us;
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    gs_render_cellf(c[0], "%s", r->label);
    gs_render_time(c[1], r->idle_us * 1e-6);
    gs_render_time(c[2], gaps * 1e-6);
    pct_of(c[3], r->idle_host_us, gaps);
    pct_of(c[4], r->idle_kernel_us, gaps);
    pct_of(c[5], r->idle_other_us, gaps);
  }
  return gs_render_table_done(w, &t, "  ");
}

static gs_status kernels(gs_render_writer *w, const gs_trace_stats *s) {
  gs_render_block(w, 2, "", "Top GPU kernels");
  gs_render_block(w, 0, "  ", "By total time per rank, with their share of the summed time of "
                  "every GPU event (kernels, copies, memsets).");
  static const char *const head[] = {"rank", "kernel", "class", "count", "total", "mean",
                                     "share"};
  static const int left[] = {1, 1, 1, 0, 0, 0, 0};
  gs_render_table t;
  gs_render_table_init(&t, 7, head, left);
  for (size_t i = 0; i < s->n_ranks; i++)
    for (size_t k = 0; k < s->ranks[i].n_top; k++) {
      const gs_trace_kernel_row *k_row = &s->ranks[i].top[k];
      char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
      gs_render_cellf(c[0], "%s", s->ranks[i].label);
      short_name(c[1], k_row->name);
      gs_render_cellf(c[2], "%s", class_name(k_row->cls));
      gs_render_cellf(c[3], "%llu", (unsigned long long)k_row->count);
      gs_render_time(c[4], k_row->total_us * 1e-6);
      gs_render_time(c[5], k_row->mean_us * 1e-6);
      gs_render_pct(c[6], k_row->share);
    }
  return gs_render_table_done(w, &t, "  ");
}

static gs_status cpu_ops(gs_render_writer *w, const gs_trace_stats *s) {
  size_t n = 0;
  for (size_t i = 0; i < s->n_ranks; i++) n += s->ranks[i].n_cpu_top;
  if (n == 0) return GS_OK;
  gs_render_block(w, 2, "", "Top CPU ops");
  gs_render_block(w, 0, "  ", "The host's side (the profiler's cpu_op events, the last profiler "
                  "step included): by self time per rank (an op's time less the ops it called), "
                  "with the inclusive time and the share of every op's self time.");
  static const char *const head[] = {"rank", "op", "count", "self", "total", "mean", "share"};
  static const int left[] = {1, 1, 0, 0, 0, 0, 0};
  gs_render_table t;
  gs_render_table_init(&t, 7, head, left);
  for (size_t i = 0; i < s->n_ranks; i++)
    for (size_t k = 0; k < s->ranks[i].n_cpu_top; k++) {
      const gs_trace_cpu_row *row = &s->ranks[i].cpu_top[k];
      char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
      gs_render_cellf(c[0], "%s", s->ranks[i].label);
      short_name(c[1], row->name);
      gs_render_cellf(c[2], "%llu", (unsigned long long)row->count);
      gs_render_time(c[3], row->self_us * 1e-6);
      gs_render_time(c[4], row->total_us * 1e-6);
      gs_render_time(c[5], row->mean_us * 1e-6);
      gs_render_pct(c[6], row->share);
    }
  gs_status st = gs_render_table_done(w, &t, "  ");
  for (size_t i = 0; st == GS_OK && i < s->n_ranks; i++)
    if (s->ranks[i].cpu_unordered)
      gs_render_block(w, 0, "  ", "%s: its ops came out of start order on a thread, so self "
                      "times are unknown: ordered by inclusive time.", s->ranks[i].label);
  return st;
}

static gs_status launches(gs_render_writer *w, const gs_trace_stats *s) {
  gs_render_block(w, 2, "", "CUDA launches");
  gs_render_block(w, 0, "  ", "Launch delay: a kernel's start minus its runtime call's start. "
                  "Outliers lie above Q3 + 3 IQR; short: the kernel ran for less time than its "
                  "launch call took.");
  static const char *const head[] = {"rank", "launches", "mean", "p50", "p90", "p99", "max",
                                     "outliers", "short"};
  static const int left[] = {1, 0, 0, 0, 0, 0, 0, 0, 0};
  gs_render_table t;
  gs_render_table_init(&t, 9, head, left);
  for (size_t i = 0; i < s->n_ranks; i++) {
    const gs_trace_rank_stats *r = &s->ranks[i];
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    gs_render_cellf(c[0], "%s", r->label);
    gs_render_cellf(c[1], "%llu", (unsigned long long)r->n_launches);
    gs_render_time(c[2], r->delay_mean * 1e-6);
    gs_render_time(c[3], r->delay_p50 * 1e-6);
    gs_render_time(c[4], r->delay_p90 * 1e-6);
    gs_render_time(c[5], r->delay_p99 * 1e-6);
    gs_render_time(c[6], r->delay_max * 1e-6);
    gs_render_cellf(c[7], "%llu", (unsigned long long)r->n_outliers);
    gs_render_cellf(c[8], "%llu", (unsigned long long)r->n_short);
  }
  gs_status st = gs_render_table_done(w, &t, "  ");
  size_t named = 0;
  for (size_t i = 0; i < s->n_ranks; i++) named += s->ranks[i].n_named_outliers;
  if (st != GS_OK || named == 0) return st;
  static const char *const ohead[] = {"rank", "kernel", "launch delay", "at"};
  static const int oleft[] = {1, 1, 0, 0};
  gs_render_block(w, -1, "  ", "Longest launch delays");
  gs_render_table_init(&t, 4, ohead, oleft);
  for (size_t i = 0; i < s->n_ranks; i++)
    for (size_t k = 0; k < s->ranks[i].n_named_outliers; k++) {
      const gs_trace_outlier *o = &s->ranks[i].outliers[k];
      char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
      gs_render_cellf(c[0], "%s", s->ranks[i].label);
      short_name(c[1], o->name);
      gs_render_time(c[2], o->delay_us * 1e-6);
      gs_render_time(c[3], (o->ts_us - s->ranks[i].origin_us) * 1e-6);
    }
  return gs_render_table_done(w, &t, "  ");
}

static gs_status skew(gs_render_writer *w, const gs_trace_stats *s) {
  if (s->n_ranks < 2) return GS_OK;
  gs_render_block(w, 2, "", "Collective skew");
  if (s->n_collectives == 0) {
    gs_render_block(w, 0, "  ", "No communication kernel on every rank: no collective to match.");
    return GS_OK;
  }
  char mean[32], median[32], worst[32];
  gs_format_seconds(s->skew_mean_us * 1e-6, mean, sizeof mean);
  gs_format_seconds(s->skew_p50_us * 1e-6, median, sizeof median);
  gs_format_seconds(s->skew_max_us * 1e-6, worst, sizeof worst);
  gs_render_block(w, 0, "  ", "The i-th communication kernel of each rank is one collective; "
                  "its skew is the last rank's entry minus the first's. %zu collective%s%s: skew "
                  "mean %s, median %s, max %s (collective %zu, %s entered last).",
                  s->n_collectives, s->n_collectives == 1 ? "" : "s",
                  s->coll_counts_differ ? " (ranks ran different numbers: the fewest matched)" : "",
                  mean, median, worst, s->skew_max_index, s->ranks[s->skew_max_rank].label);
  static const char *const head[] = {"rank", "collectives", "entered last", "waited",
                                     "wait per collective"};
  static const int left[] = {1, 0, 0, 0, 0};
  gs_render_table t;
  gs_render_table_init(&t, 5, head, left);
  for (size_t i = 0; i < s->n_ranks; i++) {
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    gs_render_cellf(c[0], "%s", s->ranks[i].label);
    gs_render_cellf(c[1], "%zu", s->ranks[i].n_coll);
    gs_render_cellf(c[2], "%d", s->skew[i].last_count);
    gs_render_time(c[3], s->skew[i].wait_us * 1e-6);
    gs_render_time(c[4], s->skew[i].wait_us * 1e-6 / (double)s->n_collectives);
  }
  return gs_render_table_done(w, &t, "  ");
}

static gs_status render_tables(gs_render_writer *w, const gs_trace_stats *s) {
  gs_render_block(w, 1, "", "Trace analysis: %zu rank%s", s->n_ranks, s->n_ranks == 1 ? "" : "s");
  char (*text)[GS_TEXT_LONG + 160] = calloc(s->n_ranks ? s->n_ranks : 1, sizeof *text);
  const char **items = calloc(s->n_ranks ? s->n_ranks : 1, sizeof *items);
  if (!text || !items) {
    free(text);
    free(items);
    return GS_ERR_NOMEM;
  }
  for (size_t i = 0; i < s->n_ranks; i++) {
    const gs_trace_rank_stats *r = &s->ranks[i];
    snprintf(text[i], sizeof text[i], "%s: %s (%.1f MB, %llu events, %llu GPU events analysed%s)",
             r->label, r->path, (double)r->bytes / 1e6, (unsigned long long)r->n_events,
             (unsigned long long)r->n_gpu,
             r->steps >= 2 ? ", the last profiler step left out" : "");
    items[i] = text[i];
  }
  gs_render_list(w, items, s->n_ranks);
  free(text);
  free(items);
  gs_status st = breakdown(w, s);
  if (st == GS_OK) st = idle_split(w, s);
  if (st == GS_OK) st = kernels(w, s);
  if (st == GS_OK) st = cpu_ops(w, s);
  if (st == GS_OK) st = launches(w, s);
  if (st == GS_OK) st = skew(w, s);
  if (st == GS_OK) st = gs_trace_path_render_tables(w, s);
  return st;
}

/* One row per rank, then one per top kernel of each rank: a kind column
 * says which; the columns the other kind has are empty. */

/* The head of a CSV row of one rank's named item (a kernel, a CPU op):
 * kind, rank, label, path, name. */
static void csv_named_row(FILE *out, const char *kind, const gs_trace_rank_stats *r,
                          const char *name) {
  fprintf(out, "%s,%d,", kind, r->rank);
  gs_render_csv_field(out, r->label);
  fputc(',', out);
  gs_render_csv_field(out, r->path);
  fputc(',', out);
  gs_render_csv_field(out, name);
}

static gs_status render_csv(FILE *out, const gs_trace_stats *s) {
  fputs("kind,rank,label,file,name,class,count,total_us,share,span_us,busy_us,idle_us,"
        "compute_us,non_compute_us,comm_us,memory_us,overlap_pct,idle_host_us,idle_kernel_us,"
        "idle_other_us,launches,delay_mean_us,delay_p50_us,delay_p90_us,delay_p99_us,"
        "delay_max_us,launch_outliers,short_kernels,collectives,entered_last,wait_us,self_us,"
        GS_TRACE_PATH_CSV_HEAD "\n", out);
  for (size_t i = 0; i < s->n_ranks; i++) {
    const gs_trace_rank_stats *r = &s->ranks[i];
    fprintf(out, "rank,%d,", r->rank);
    gs_render_csv_field(out, r->label);
    fputc(',', out);
    gs_render_csv_field(out, r->path);
    fputs(",,,,,", out);
    gs_render_csv_number(out, r->span_us);
    gs_render_csv_number(out, r->busy_us);
    gs_render_csv_number(out, r->idle_us);
    gs_render_csv_number(out, r->compute_us);
    gs_render_csv_number(out, r->non_compute_us);
    gs_render_csv_number(out, r->comm_us);
    gs_render_csv_number(out, r->memory_us);
    gs_render_csv_number(out, 100.0 * r->overlap);
    gs_render_csv_number(out, r->idle_host_us);
    gs_render_csv_number(out, r->idle_kernel_us);
    gs_render_csv_number(out, r->idle_other_us);
    fprintf(out, ",%llu", (unsigned long long)r->n_launches);
    gs_render_csv_number(out, r->delay_mean);
    gs_render_csv_number(out, r->delay_p50);
    gs_render_csv_number(out, r->delay_p90);
    gs_render_csv_number(out, r->delay_p99);
    gs_render_csv_number(out, r->delay_max);
    fprintf(out, ",%llu,%llu,%zu", (unsigned long long)r->n_outliers,
            (unsigned long long)r->n_short, r->n_coll);
    if (s->skew) {
      fprintf(out, ",%d", s->skew[i].last_count);
      gs_render_csv_number(out, s->skew[i].wait_us);
      fputs("," GS_TRACE_PATH_CSV_EMPTY "\n", out);
    } else {
      fputs(",,," GS_TRACE_PATH_CSV_EMPTY "\n", out);
    }
  }
  for (size_t i = 0; i < s->n_ranks; i++)
    for (size_t k = 0; k < s->ranks[i].n_top; k++) {
      const gs_trace_kernel_row *kr = &s->ranks[i].top[k];
      csv_named_row(out, "kernel", &s->ranks[i], kr->name);
      fprintf(out, ",%s,%llu", class_name(kr->cls), (unsigned long long)kr->count);
      gs_render_csv_number(out, kr->total_us);
      gs_render_csv_number(out, kr->share);
      fputs(",,,,,,,,,,,,,,,,,,,,,,," GS_TRACE_PATH_CSV_EMPTY "\n", out);
    }
  for (size_t i = 0; i < s->n_ranks; i++)
    for (size_t k = 0; k < s->ranks[i].n_cpu_top; k++) {
      const gs_trace_cpu_row *cr = &s->ranks[i].cpu_top[k];
      csv_named_row(out, "cpu_op", &s->ranks[i], cr->name);
      fprintf(out, ",,%llu", (unsigned long long)cr->count);
      gs_render_csv_number(out, cr->total_us);
      gs_render_csv_number(out, cr->share);
      fputs(",,,,,,,,,,,,,,,,,,,,,,", out);
      gs_render_csv_number(out, cr->self_us);
      fputs(GS_TRACE_PATH_CSV_EMPTY "\n", out);
    }
  gs_trace_path_render_csv(out, s, 28);
  return ferror(out) ? GS_ERR_IO : GS_OK;
}

static void json_rank(gs_json_build *b, cJSON *o, const gs_trace_stats *s, size_t i) {
  const gs_trace_rank_stats *r = &s->ranks[i];
  gs_json_put_number(b, o, "rank", r->rank);
  gs_json_put_string(b, o, "label", r->label);
  gs_json_put_string(b, o, "file", r->path);
  gs_json_put_number(b, o, "bytes", (double)r->bytes);
  gs_json_put_number(b, o, "events", (double)r->n_events);
  gs_json_put_number(b, o, "gpu_events", (double)r->n_gpu);
  gs_json_put_number(b, o, "gpu_events_outside_steps", (double)r->n_dropped);
  gs_json_put_number(b, o, "profiler_steps", r->steps);
  cJSON *t = gs_json_put_object(b, o, "time_us");
  gs_json_put_number(b, t, "span", r->span_us);
  gs_json_put_number(b, t, "busy", r->busy_us);
  gs_json_put_number(b, t, "idle", r->idle_us);
  gs_json_put_number(b, t, "compute", r->compute_us);
  gs_json_put_number(b, t, "non_compute", r->non_compute_us);
  gs_json_put_number(b, t, "communication", r->comm_us);
  gs_json_put_number(b, t, "memory", r->memory_us);
  gs_json_put_number(b, t, "overlap", r->overlap_us);
  gs_json_put_number(b, o, "overlap", r->overlap);
  cJSON *idle = gs_json_put_object(b, o, "idle_us");
  gs_json_put_number(b, idle, "host_wait", r->idle_host_us);
  gs_json_put_number(b, idle, "kernel_wait", r->idle_kernel_us);
  gs_json_put_number(b, idle, "other", r->idle_other_us);
  cJSON *ks = gs_json_put_array(b, o, "top_kernels");
  for (size_t k = 0; k < r->n_top; k++) {
    cJSON *kr = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_string(b, kr, "name", r->top[k].name);
    gs_json_put_string(b, kr, "class", class_name(r->top[k].cls));
    gs_json_put_number(b, kr, "count", (double)r->top[k].count);
    gs_json_put_number(b, kr, "total_us", r->top[k].total_us);
    gs_json_put_number(b, kr, "mean_us", r->top[k].mean_us);
    gs_json_put_number(b, kr, "min_us", r->top[k].min_us);
    gs_json_put_number(b, kr, "max_us", r->top[k].max_us);
    gs_json_put_number(b, kr, "share", r->top[k].share);
    gs_json_append(b, ks, kr);
  }
  gs_json_put_number(b, o, "kernel_names", (double)r->n_kernel_names);
  cJSON *cpu = gs_json_put_object(b, o, "cpu_ops");
  gs_json_put_number(b, cpu, "events", (double)r->n_cpu_op_events);
  gs_json_put_number(b, cpu, "names", (double)r->n_cpu_names);
  gs_json_put_number(b, cpu, "self_us", r->cpu_self_us);
  gs_json_put_bool(b, cpu, "in_order", !r->cpu_unordered);
  cJSON *cs = gs_json_put_array(b, cpu, "top");
  for (size_t k = 0; k < r->n_cpu_top; k++) {
    const gs_trace_cpu_row *cr = &r->cpu_top[k];
    cJSON *x = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_string(b, x, "name", cr->name);
    gs_json_put_number(b, x, "count", (double)cr->count);
    gs_json_put_number(b, x, "self_us", cr->self_us);
    gs_json_put_number(b, x, "total_us", cr->total_us);
    gs_json_put_number(b, x, "mean_us", cr->mean_us);
    gs_json_put_number(b, x, "share", cr->share);
    gs_json_append(b, cs, x);
  }
  cJSON *l = gs_json_put_object(b, o, "launch_delay_us");
  gs_json_put_number(b, l, "count", (double)r->n_launches);
  gs_json_put_number(b, l, "mean", r->delay_mean);
  gs_json_put_number(b, l, "p50", r->delay_p50);
  gs_json_put_number(b, l, "p90", r->delay_p90);
  gs_json_put_number(b, l, "p99", r->delay_p99);
  gs_json_put_number(b, l, "max", r->delay_max);
  gs_json_put_number(b, l, "outlier_fence", r->delay_fence);
  gs_json_put_number(b, l, "outliers", (double)r->n_outliers);
  gs_json_put_number(b, l, "short_kernels", (double)r->n_short);
  cJSON *ol = gs_json_put_array(b, l, "longest");
  for (size_t k = 0; k < r->n_named_outliers; k++) {
    cJSON *x = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_string(b, x, "name", r->outliers[k].name);
    gs_json_put_number(b, x, "delay_us", r->outliers[k].delay_us);
    gs_json_put_number(b, x, "at_us", r->outliers[k].ts_us - r->origin_us);
    gs_json_append(b, ol, x);
  }
  gs_json_put_number(b, o, "collectives", (double)r->n_coll);
  if (s->skew) {
    gs_json_put_number(b, o, "entered_last", s->skew[i].last_count);
    gs_json_put_number(b, o, "collective_wait_us", s->skew[i].wait_us);
  }
}

static gs_status render_json(FILE *out, const gs_trace_stats *s) {
  gs_json_build b = {0};
  cJSON *root = gs_json_check(&b, cJSON_CreateObject());
  gs_json_put_string(&b, root, "schema", "gpuscale/trace-report/v1");
  gs_json_put_number(&b, root, "kernel_wait_threshold_us", s->kernel_wait_us);
  cJSON *ranks = gs_json_put_array(&b, root, "ranks");
  for (size_t i = 0; i < s->n_ranks; i++) {
    cJSON *o = gs_json_check(&b, cJSON_CreateObject());
    json_rank(&b, o, s, i);
    gs_json_append(&b, ranks, o);
  }
  if (s->n_ranks > 1) {
    cJSON *k = gs_json_put_object(&b, root, "collective_skew");
    gs_json_put_number(&b, k, "collectives", (double)s->n_collectives);
    gs_json_put_bool(&b, k, "counts_differ", s->coll_counts_differ);
    gs_json_put_number(&b, k, "mean_us", s->skew_mean_us);
    gs_json_put_number(&b, k, "median_us", s->skew_p50_us);
    gs_json_put_number(&b, k, "max_us", s->skew_max_us);
    if (s->n_collectives) {
      gs_json_put_number(&b, k, "max_index", (double)s->skew_max_index);
      gs_json_put_number(&b, k, "max_last_rank", s->ranks[s->skew_max_rank].rank);
    }
  }
  gs_trace_path_render_json(&b, root, s);
  gs_status st = gs_json_build_status(&b, "the trace report");
  if (st != GS_OK) {
    cJSON_Delete(root);
    return st;
  }
  st = gs_json_print(out, root);
  cJSON_Delete(root);
  return st;
}

/* See trace_report.h. */
gs_status gs_trace_report_render(FILE *out, const gs_trace_stats *s, gs_report_format format) {
  gs_render_writer w = {.f = out};
  gs_status st;
  switch (format) {
    case GS_REPORT_CSV:
      return render_csv(out, s);
    case GS_REPORT_JSON:
      return render_json(out, s);
    case GS_REPORT_HTML:
      w.md = w.html = 1;
      fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>gpuscale trace report</title>\n<style>\n"
            "body{font-family:sans-serif;margin:2em;max-width:110em}\n"
            "table{border-collapse:collapse;margin:0.5em 0 1.5em 0;font-size:90%}\n"
            "th,td{border:1px solid #bbb;padding:2px 6px}th{background:#eee}\n"
            "</style>\n</head>\n<body>\n", out);
      st = render_tables(&w, s);
      fputs("</body>\n</html>\n", out);
      return st;
    case GS_REPORT_MARKDOWN:
      w.md = 1;
      return render_tables(&w, s);
    default:
      return render_tables(&w, s);
  }
}
