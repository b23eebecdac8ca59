/* The per-rank and cross-rank analysis of traces (trace_stats.h): one pass
 * over a rank's sorted events builds the merged busy intervals of each
 * class, the idle gaps of each stream, the kernels' totals and the launch
 * delays; the skew matches the ranks' communication kernels in order. */
#include "report/analyze/trace_stats.h"

#include <math.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/stats.h"

/* A launch call: what a kernel's correlation id finds. */
typedef struct {
  int64_t corr;
  double ts, dur;
} launch;

static int by_corr(const void *a, const void *b) {
  const launch *x = a, *y = b;
  return (x->corr > y->corr) - (x->corr < y->corr);
}

static const launch *find_launch(const launch *v, size_t n, int64_t corr) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].corr < corr) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && v[lo].corr == corr ? &v[lo] : NULL;
}

/* HTA's merge of intervals sorted by start: a new group starts where an
 * interval begins after every earlier end; a group is [its first start,
 * its latest end]. The groups are kept when `keep` is given. */
typedef struct {
  int open;
  double start, end, total, first, last_end;
  double *iv;              /* start, end pairs when kept */
  size_t n, cap;
  int keep, failed;
} merger;

static void merger_close(merger *m) {
  if (!m->open) return;
  m->total += m->end - m->start;
  m->last_end = m->end;
  if (m->keep) {
    if (m->n + 2 > m->cap) {
      size_t cap = m->cap ? m->cap * 2 : 1024;
      double *iv = realloc(m->iv, cap * sizeof *iv);
      if (!iv) {
        m->failed = 1;
        return;
      }
      m->iv = iv;
      m->cap = cap;
    }
    m->iv[m->n++] = m->start;
    m->iv[m->n++] = m->end;
  }
}

static void merger_add(merger *m, double ts, double end) {
  if (m->open && ts <= m->end) {
    if (end > m->end) m->end = end;
    return;
  }
  if (!m->open) m->first = ts;
  merger_close(m);
  m->open = 1;
  m->start = ts;
  m->end = end;
}

/* The summed intersection of two sets of disjoint sorted intervals. */
static double intersect(const merger *a, const merger *b) {
  double sum = 0;
  size_t i = 0, j = 0;
  while (i < a->n && j < b->n) {
    double lo = fmax(a->iv[i], b->iv[j]), hi = fmin(a->iv[i + 1], b->iv[j + 1]);
    if (hi > lo) sum += hi - lo;
    if (a->iv[i + 1] < b->iv[j + 1]) i += 2;
    else j += 2;
  }
  return sum;
}

/* The previous event's end on each stream, for the idle split. */
typedef struct {
  int32_t stream;
  double prev_end;
} stream_state;

static stream_state *stream_of(stream_state **v, size_t *n, int32_t stream) {
  for (size_t i = 0; i < *n; i++)
    if ((*v)[i].stream == stream) return &(*v)[i];
  stream_state *grown = realloc(*v, (*n + 1) * sizeof **v);
  if (!grown) return NULL;
  *v = grown;
  grown[*n] = (stream_state){.stream = stream, .prev_end = NAN};
  return &grown[(*n)++];
}

/* HTA's rounding: start up, end down to whole us. An event shorter than
 * the rounding (a sub-us memset) becomes an instant where HTA gives it a
 * negative duration, which can make its non-compute time negative. */
static void round_like_hta(gs_trace_events *t) {
  for (size_t i = 0; i < t->n; i++) {
    double end = floor(t->ev[i].ts + t->ev[i].dur);
    t->ev[i].ts = ceil(t->ev[i].ts);
    t->ev[i].dur = end > t->ev[i].ts ? end - t->ev[i].ts : 0.0;
  }
}

typedef struct {
  uint64_t count;
  double total, min, max;
} name_total;

/* qsort has no context argument: the totals being ordered (one report
 * thread). */
static _Thread_local const name_total *sort_ctx;
static int by_total(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  if (sort_ctx[x].total != sort_ctx[y].total) return sort_ctx[x].total > sort_ctx[y].total ? -1 : 1;
  return (x > y) - (x < y);
}

/* The kernels by total time, the first GS_TRACE_TOP into out->top. */
static gs_status top_kernels(const gs_trace_events *t, const name_total *totals,
                             gs_trace_rank_stats *out) {
  uint32_t *order = malloc((t->n_names ? t->n_names : 1) * sizeof *order);
  if (!order) return gs_error(GS_ERR_NOMEM, "cannot rank the kernels of %s", t->path);
  size_t n = 0;
  for (uint32_t i = 0; i < t->n_names; i++)
    if (totals[i].count) order[n++] = i;
  sort_ctx = totals;
  qsort(order, n, sizeof *order, by_total);
  out->n_kernel_names = n;
  out->n_top = n < GS_TRACE_TOP ? n : GS_TRACE_TOP;
  out->kernels = calloc(n ? n : 1, sizeof *out->kernels);
  if (!out->kernels) {
    free(order);
    return gs_error(GS_ERR_NOMEM, "cannot rank the kernels of %s", t->path);
  }
  for (size_t k = 0; k < n; k++) {
    const name_total *nt = &totals[order[k]];
    gs_trace_kernel_row *row = &out->kernels[k];
    snprintf(row->name, sizeof row->name, "%s", t->names[order[k]]);
    row->cls = t->name_cls[order[k]];
    row->count = nt->count;
    row->total_us = nt->total;
    row->mean_us = nt->total / (double)nt->count;
    row->min_us = nt->min;
    row->max_us = nt->max;
    row->share = out->gpu_total_us > 0 ? nt->total / out->gpu_total_us : NAN;
    if (k < out->n_top) out->top[k] = *row;
  }
  free(order);
  return GS_OK;
}

/* The CPU ops' order: by self time, or by inclusive time where the self
 * times are unknown (one report thread at a time, as sort_ctx). */
static _Thread_local const gs_tev_cpu_total *cpu_ctx;
static _Thread_local int cpu_by_total;
static int by_cpu_time(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  double tx = cpu_by_total ? cpu_ctx[x].total_us : cpu_ctx[x].self_us;
  double ty = cpu_by_total ? cpu_ctx[y].total_us : cpu_ctx[y].self_us;
  if (tx != ty) return tx > ty ? -1 : 1;
  return (x > y) - (x < y);
}

/* The CPU ops the reader summed, the first GS_TRACE_TOP into out. */
static gs_status top_cpu_ops(const gs_trace_events *t, gs_trace_rank_stats *out) {
  out->n_cpu_op_events = t->n_cpu_op_events;
  out->cpu_unordered = t->cpu_unordered;
  if (t->cpu_cap == 0) return GS_OK;
  uint32_t *order = malloc(t->cpu_cap * sizeof *order);
  if (!order) return gs_error(GS_ERR_NOMEM, "cannot rank the CPU ops of %s", t->path);
  size_t n = 0;
  for (uint32_t i = 0; i < t->cpu_cap && i < t->n_names; i++)
    if (t->cpu[i].count) {
      order[n++] = i;
      out->cpu_self_us += t->cpu[i].self_us;
    }
  cpu_ctx = t->cpu;
  cpu_by_total = t->cpu_unordered;
  qsort(order, n, sizeof *order, by_cpu_time);
  out->n_cpu_names = n;
  out->n_cpu_top = n < GS_TRACE_TOP ? n : GS_TRACE_TOP;
  if (t->cpu_unordered) out->cpu_self_us = NAN;
  for (size_t k = 0; k < out->n_cpu_top; k++) {
    const gs_tev_cpu_total *c = &t->cpu[order[k]];
    gs_trace_cpu_row *row = &out->cpu_top[k];
    snprintf(row->name, sizeof row->name, "%s", t->names[order[k]]);
    row->count = c->count;
    row->total_us = c->total_us;
    row->mean_us = c->total_us / (double)c->count;
    row->self_us = t->cpu_unordered ? NAN : c->self_us;
    row->share = out->cpu_self_us > 0 ? row->self_us / out->cpu_self_us : NAN;
  }
  free(order);
  return GS_OK;
}

/* A kernel's launch delay and where to name it. */
typedef struct {
  double delay, ts;
  uint32_t name;
} delay_rec;

static int by_delay_desc(const void *a, const void *b) {
  const delay_rec *x = a, *y = b;
  return (x->delay < y->delay) - (x->delay > y->delay);
}

/* Launch delays: distribution, the Q3 + 3 IQR fence and the worst. */
static gs_status launch_summary(delay_rec *rec, size_t n, const gs_trace_events *t,
                                gs_trace_rank_stats *out) {
  out->n_launches = n;
  out->delay_mean = out->delay_p50 = out->delay_p90 = out->delay_p99 = NAN;
  out->delay_max = out->delay_fence = NAN;
  if (n == 0) return GS_OK;
  double *v = malloc(n * sizeof *v);
  if (!v) return gs_error(GS_ERR_NOMEM, "cannot sort the launch delays of %s", t->path);
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    v[i] = rec[i].delay;
    sum += v[i];
  }
  gs_stats_sort(v, n);
  out->delay_mean = sum / (double)n;
  out->delay_p50 = gs_stats_percentile_sorted(v, n, 50);
  out->delay_p90 = gs_stats_percentile_sorted(v, n, 90);
  out->delay_p99 = gs_stats_percentile_sorted(v, n, 99);
  out->delay_max = v[n - 1];
  double q1 = gs_stats_percentile_sorted(v, n, 25), q3 = gs_stats_percentile_sorted(v, n, 75);
  out->delay_fence = q3 + 3.0 * (q3 - q1);
  free(v);
  out->n_outliers = 0;
  for (size_t i = 0; i < n; i++) out->n_outliers += rec[i].delay > out->delay_fence;
  qsort(rec, n, sizeof *rec, by_delay_desc);
  out->n_named_outliers = 0;
  for (size_t i = 0; i < n && i < GS_TRACE_OUTLIERS && rec[i].delay > out->delay_fence; i++) {
    gs_trace_outlier *o = &out->outliers[out->n_named_outliers++];
    snprintf(o->name, sizeof o->name, "%s", t->names[rec[i].name]);
    o->delay_us = rec[i].delay;
    o->ts_us = rec[i].ts;
  }
  return GS_OK;
}

/* A profiler step mark: where it starts and its number. */
typedef struct {
  double ts;
  int32_t number;
} step_mark;

static int by_mark_ts(const void *a, const void *b) {
  const step_mark *x = a, *y = b;
  return (x->ts > y->ts) - (x->ts < y->ts);
}

/* The number of "ProfilerStep#N"; -1 when the name carries none. */
static int32_t step_number(const char *name) {
  const char *hash = strchr(name, '#');
  if (!hash) return -1;
  char *end;
  long v = strtol(hash + 1, &end, 10);
  return end != hash + 1 && v >= 0 && v <= INT32_MAX ? (int32_t)v : -1;
}

/* The step a launch at `ts` belongs to: the last mark at or before it. */
static int32_t step_at(const step_mark *m, size_t n, double ts) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (m[mid].ts <= ts) lo = mid + 1;
    else hi = mid;
  }
  return lo ? m[lo - 1].number : -1;
}

/* The kept launch calls sorted by correlation id, the profiler step marks
 * sorted by start and the start of the last step (HTA leaves that step
 * out). */
typedef struct {
  launch *v;
  size_t n;
  step_mark *marks;
  size_t n_marks;
  int steps;                 /* distinct step names */
  double last_step;
} launch_index;

static gs_status collect_launches(const gs_trace_events *t, launch_index *x) {
  size_t n = 0, n_marks = 0;
  for (size_t i = 0; i < t->n; i++) {
    n += t->ev[i].kind == GS_TEV_RUNTIME;
    n_marks += t->ev[i].kind == GS_TEV_STEP;
  }
  x->v = malloc((n ? n : 1) * sizeof *x->v);
  x->marks = malloc((n_marks ? n_marks : 1) * sizeof *x->marks);
  uint32_t *step_names = calloc(t->n_names ? t->n_names : 1, sizeof *step_names);
  if (!x->v || !x->marks || !step_names) {
    free(step_names);
    return gs_error(GS_ERR_NOMEM, "cannot index the launches of %s", t->path);
  }
  n = n_marks = 0;
  x->steps = 0;
  x->last_step = -INFINITY;
  for (size_t i = 0; i < t->n; i++) {
    const gs_tev *e = &t->ev[i];
    if (e->kind == GS_TEV_RUNTIME) x->v[n++] = (launch){.corr = e->corr, .ts = e->ts, .dur = e->dur};
    if (e->kind == GS_TEV_STEP) {
      if (!step_names[e->name]++) x->steps++;
      if (e->ts > x->last_step) x->last_step = e->ts;
      x->marks[n_marks++] = (step_mark){.ts = e->ts, .number = step_number(t->names[e->name])};
    }
  }
  free(step_names);
  qsort(x->v, n, sizeof *x->v, by_corr);
  qsort(x->marks, n_marks, sizeof *x->marks, by_mark_ts);
  x->n = n;
  x->n_marks = n_marks;
  return GS_OK;
}

/* The kept GPU event `e` as the critical path's node. */
static gs_trace_node node_of(const gs_tev *e, const launch *l, const launch_index *x) {
  gs_trace_node n = {.ts = e->ts, .end = e->ts + e->dur, .delay = NAN, .stream = e->stream,
                     .step = e->step, .cls = e->cls};
  if (l) n.delay = (float)(e->ts - l->ts);
  if (n.step < 0 && l) n.step = step_at(x->marks, x->n_marks, l->ts);
  return n;
}

/* One GPU event into the idle split of its stream. */
static int idle_gap(stream_state **streams, size_t *n_streams, const gs_tev *e, const launch *l,
                    double kernel_wait_us, gs_trace_rank_stats *out) {
  stream_state *ss = stream_of(streams, n_streams, e->stream);
  if (!ss) return -1;
  if (!isnan(ss->prev_end)) {
    double gap = e->ts - ss->prev_end;
    if (l && l->ts > ss->prev_end) out->idle_host_us += gap;
    else if (gap < kernel_wait_us) out->idle_kernel_us += gap;
    else out->idle_other_us += gap;
  }
  ss->prev_end = e->ts + e->dur;
  return 0;
}

gs_status gs_trace_stats_rank(gs_trace_events *t, double kernel_wait_us,
                              gs_trace_rank_stats *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->label, sizeof out->label, "%s", t->label);
  snprintf(out->path, sizeof out->path, "%s", t->path);
  out->rank = t->rank;
  out->bytes = t->bytes;
  out->n_events = t->n_events;
  out->n_cpu_ops = t->n_cpu_ops;
  if (t->hta_rounding) round_like_hta(t);
  launch_index x = {0};
  gs_status st = collect_launches(t, &x);
  launch *launches = x.v;
  size_t n_launches = x.n;
  double last_step = x.last_step;
  out->steps = x.steps;
  int filter = out->steps >= 2;

  name_total *totals = calloc(t->n_names ? t->n_names : 1, sizeof *totals);
  delay_rec *delays = malloc((t->n ? t->n : 1) * sizeof *delays);
  out->coll_ts = malloc((t->n ? t->n : 1) * sizeof *out->coll_ts);
  out->coll_node = malloc((t->n ? t->n : 1) * sizeof *out->coll_node);
  out->nodes = malloc((t->n ? t->n : 1) * sizeof *out->nodes);
  merger all_m = {0}, comp = {.keep = 1}, comm = {.keep = 1}, mem = {0};
  stream_state *streams = NULL;
  size_t n_streams = 0, n_delays = 0;
  int failed = st != GS_OK || !totals || !delays || !out->coll_ts || !out->coll_node ||
               !out->nodes || t->n > UINT32_MAX;
  for (size_t i = 0; !failed && i < t->n; i++) {
    const gs_tev *e = &t->ev[i];
    if (e->kind > GS_TEV_MEMSET || e->stream < 0) continue;
    const launch *l = e->corr >= 0 ? find_launch(launches, n_launches, e->corr) : NULL;
    // HTA keeps a GPU event only when its launch came before the last step.
    if (filter && (!l || !(l->ts < last_step))) {
      out->n_dropped++;
      continue;
    }
    out->n_gpu++;
    double end = e->ts + e->dur;
    merger_add(&all_m, e->ts, end);
    if (e->cls == GS_TEV_COMPUTE) merger_add(&comp, e->ts, end);
    else if (e->cls == GS_TEV_COMM) merger_add(&comm, e->ts, end);
    else if (e->cls == GS_TEV_MEMORY) merger_add(&mem, e->ts, end);
    name_total *nt = &totals[e->name];
    if (!nt->count || e->dur < nt->min) nt->min = e->dur;
    if (!nt->count || e->dur > nt->max) nt->max = e->dur;
    nt->count++;
    nt->total += e->dur;
    out->gpu_total_us += e->dur;
    if (idle_gap(&streams, &n_streams, e, l, kernel_wait_us, out) != 0) failed = 1;
    if (e->kind == GS_TEV_KERNEL && l) {
      delays[n_delays++] = (delay_rec){.delay = e->ts - l->ts, .ts = e->ts, .name = e->name};
      out->n_short += l->dur > e->dur;
    }
    if (e->cls == GS_TEV_COMM) {
      out->coll_node[out->n_coll] = (uint32_t)out->n_nodes;
      out->coll_ts[out->n_coll++] = e->ts;
    }
    out->nodes[out->n_nodes++] = node_of(e, l, &x);
  }
  // The nodes stay until the path is computed across ranks: only theirs.
  gs_trace_node *shrunk = out->nodes ? realloc(out->nodes, (out->n_nodes ? out->n_nodes : 1) *
                                                              sizeof *out->nodes) : NULL;
  if (shrunk) out->nodes = shrunk;
  merger_close(&all_m);
  merger_close(&comp);
  merger_close(&comm);
  merger_close(&mem);
  failed |= comp.failed | comm.failed;
  if (st == GS_OK && failed) st = gs_error(GS_ERR_NOMEM, "cannot analyse the trace %s", t->path);
  if (st == GS_OK) {
    out->origin_us = all_m.open ? all_m.first : 0;
    out->span_us = all_m.open ? all_m.last_end - all_m.first : 0;
    out->busy_us = all_m.total;
    out->idle_us = out->span_us - out->busy_us;
    out->compute_us = comp.total;
    out->non_compute_us = out->span_us - out->compute_us - out->idle_us;
    out->comm_us = comm.total;
    out->memory_us = mem.total;
    out->overlap_us = intersect(&comp, &comm);
    out->overlap = out->comm_us > 0 ? out->overlap_us / out->comm_us : NAN;
    st = top_kernels(t, totals, out);
  }
  if (st == GS_OK) st = top_cpu_ops(t, out);
  if (st == GS_OK) st = launch_summary(delays, n_delays, t, out);
  free(comp.iv);
  free(comm.iv);
  free(streams);
  free(totals);
  free(delays);
  free(launches);
  free(x.marks);
  return st;
}

static int by_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void gs_trace_stats_skew(gs_trace_stats *s) {
  s->n_collectives = 0;
  s->coll_counts_differ = 0;
  s->skew_mean_us = s->skew_p50_us = s->skew_max_us = NAN;
  s->skew_max_rank = -1;
  if (s->n_ranks < 2 || !s->skew) return;
  size_t n = SIZE_MAX;
  for (size_t r = 0; r < s->n_ranks; r++) {
    if (s->ranks[r].n_coll != s->ranks[0].n_coll) s->coll_counts_differ = 1;
    if (s->ranks[r].n_coll < n) n = s->ranks[r].n_coll;
  }
  s->n_collectives = n;
  if (n == 0) return;
  double *skews = malloc(n * sizeof *skews);
  if (!skews) return;
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    size_t last = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t r = 0; r < s->n_ranks; r++) {
      double ts = s->ranks[r].coll_ts[i];
      if (ts < lo) lo = ts;
      if (ts > hi) {
        hi = ts;
        last = r;
      }
    }
    s->skew[last].last_count++;
    for (size_t r = 0; r < s->n_ranks; r++) s->skew[r].wait_us += hi - s->ranks[r].coll_ts[i];
    skews[i] = hi - lo;
    sum += skews[i];
    if (!(skews[i] <= s->skew_max_us)) {
      s->skew_max_us = skews[i];
      s->skew_max_index = i;
      s->skew_max_rank = (int)last;
    }
  }
  qsort(skews, n, sizeof *skews, by_double);
  s->skew_mean_us = sum / (double)n;
  s->skew_p50_us = gs_stats_percentile_sorted(skews, n, 50);
  free(skews);
}

static int by_rank(const void *a, const void *b) {
  const gs_trace_rank_stats *x = a, *y = b;
  if (x->rank != y->rank) return (x->rank > y->rank) - (x->rank < y->rank);
  return strcmp(x->path, y->path);
}

/* Room for one more rank. */
static gs_trace_rank_stats *next_rank(gs_trace_stats *out) {
  gs_trace_rank_stats *grown = realloc(out->ranks, (out->n_ranks + 1) * sizeof *grown);
  if (!grown) return NULL;
  out->ranks = grown;
  return &grown[out->n_ranks];
}

/* Every rank of every measurement of gpuscale trace `path`. */
static gs_status load_gpuscale(const char *path, double kernel_wait_us, gs_trace_stats *out) {
  for (int m = 0;; m++) {
    gs_trace_view v;
    GS_TRY(gs_trace_read(path, m, &v));
    if (v.n_ranks == 0) {
      gs_trace_view_free(&v);
      return m == 0 ? gs_error(GS_ERR_FORMAT, "%s: a gpuscale trace with no spans", path) : GS_OK;
    }
    gs_status st = GS_OK;
    for (int r = 0; st == GS_OK && r < v.n_ranks; r++) {
      gs_trace_events ev;
      gs_trace_rank_stats *rs = next_rank(out);
      st = rs ? gs_trace_events_from_view(&v, r, path, m, &ev)
              : gs_error(GS_ERR_NOMEM, "cannot analyse %s", path);
      if (st != GS_OK) break;
      st = gs_trace_stats_rank(&ev, kernel_wait_us, rs);
      rs->rank = m * GS_MAX_RANKS + r;
      rs->gpuscale = 1;
      out->n_ranks++;
      gs_trace_events_free(&ev);
    }
    gs_trace_view_free(&v);
    if (st != GS_OK) return st;
  }
}

/* One PyTorch profiler file, read and analysed on a worker thread. */
typedef struct {
  const char *path;
  size_t position;              /* among the arguments: the rank without distributedInfo */
  double kernel_wait_us;
  gs_trace_rank_stats stats;
  int is_gpuscale, analysed;
  gs_status st;
  gs_error_kept error;
} file_job;

typedef struct {
  file_job *jobs;
  size_t n;
  size_t next;                  /* the next job to take, under `lock` */
  pthread_mutex_t lock;
} job_queue;

static void run_job(file_job *j) {
  gs_trace_events ev;
  j->st = gs_kineto_read(j->path, &ev, &j->is_gpuscale);
  if (j->st == GS_OK && !j->is_gpuscale) {
    if (ev.rank < 0) ev.rank = (int)j->position;  // no distributedInfo: the file's position
    j->st = gs_trace_stats_rank(&ev, j->kernel_wait_us, &j->stats);
    j->analysed = 1;
  }
  gs_trace_events_free(&ev);
  if (j->st != GS_OK) gs_error_keep(&j->error);
}

static void *worker(void *arg) {
  job_queue *q = arg;
  for (;;) {
    pthread_mutex_lock(&q->lock);
    size_t i = q->next++;
    pthread_mutex_unlock(&q->lock);
    if (i >= q->n) return NULL;
    run_job(&q->jobs[i]);
  }
}

/* Reads and analyses the files on up to one thread per core, each rank's
 * events freed as soon as it is analysed (memory: a rank per thread). */
static void run_jobs(job_queue *q) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t n_threads = cores > 1 ? (size_t)cores : 1;
  if (n_threads > q->n) n_threads = q->n;
  if (n_threads > 16) n_threads = 16;
  pthread_t threads[16];
  size_t started = 0;
  for (size_t t = 1; t < n_threads; t++)
    if (pthread_create(&threads[started], NULL, worker, q) == 0) started++;
  worker(q);  // the calling thread works too: with no thread started it does it all
  for (size_t t = 0; t < started; t++) pthread_join(threads[t], NULL);
}

gs_status gs_trace_stats_load(const char *const *paths, size_t n, double kernel_wait_us,
                              gs_trace_stats *out) {
  memset(out, 0, sizeof *out);
  out->kernel_wait_us = kernel_wait_us;
  job_queue q = {.jobs = calloc(n ? n : 1, sizeof *q.jobs), .n = n};
  if (!q.jobs) return gs_error(GS_ERR_NOMEM, "cannot analyse the traces");
  pthread_mutex_init(&q.lock, NULL);
  for (size_t i = 0; i < n; i++)
    q.jobs[i] = (file_job){.path = paths[i], .position = i, .kernel_wait_us = kernel_wait_us};
  run_jobs(&q);
  pthread_mutex_destroy(&q.lock);
  // In argument order: the first file's failure is the one reported.
  gs_status st = GS_OK;
  for (size_t i = 0; i < n; i++) {
    file_job *j = &q.jobs[i];
    if (st == GS_OK && j->st != GS_OK) {
      st = j->st;
      gs_error_restore(&j->error);
    }
    gs_trace_rank_stats *rs = j->analysed ? next_rank(out) : NULL;
    if (rs) {
      *rs = j->stats;
      out->n_ranks++;
    } else if (j->analysed) {
      gs_trace_rank_stats_free(&j->stats);
      if (st == GS_OK) st = gs_error(GS_ERR_NOMEM, "cannot analyse %s", j->path);
    }
  }
  // gpuscale's own traces: every rank of every measurement, read here.
  for (size_t i = 0; st == GS_OK && i < n; i++)
    if (q.jobs[i].is_gpuscale) st = load_gpuscale(paths[i], kernel_wait_us, out);
  free(q.jobs);
  if (st == GS_OK && out->n_ranks > 1)
    qsort(out->ranks, out->n_ranks, sizeof *out->ranks, by_rank);
  for (size_t r = 1; st == GS_OK && r < out->n_ranks; r++)
    if (out->ranks[r].rank == out->ranks[r - 1].rank)
      st = gs_error(GS_ERR_FORMAT, "%s and %s: both hold %s", out->ranks[r - 1].path,
                    out->ranks[r].path, out->ranks[r].label);
  if (st == GS_OK && out->n_ranks > 1) {
    out->skew = calloc(out->n_ranks, sizeof *out->skew);
    if (!out->skew) st = gs_error(GS_ERR_NOMEM, "cannot compute the collective skew");
  }
  if (st == GS_OK) gs_trace_stats_skew(out);
  if (st == GS_OK) st = gs_trace_cpath_compute(out);
  if (st != GS_OK) gs_trace_stats_free(out);
  return st;
}

void gs_trace_rank_stats_free(gs_trace_rank_stats *r) {
  free(r->coll_ts);
  free(r->coll_node);
  free(r->nodes);
  free(r->kernels);
  r->coll_ts = NULL;
  r->coll_node = NULL;
  r->nodes = NULL;
  r->kernels = NULL;
}

void gs_trace_stats_free(gs_trace_stats *s) {
  for (size_t i = 0; i < s->n_ranks; i++) gs_trace_rank_stats_free(&s->ranks[i]);
  for (size_t i = 0; i < s->n_paths; i++) gs_trace_cpath_free(&s->paths[i]);
  free(s->paths);
  free(s->ranks);
  free(s->skew);
  memset(s, 0, sizeof *s);
}
