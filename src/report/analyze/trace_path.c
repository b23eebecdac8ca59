/* The critical path across ranks (trace_path.h, docs/traces.md "The
 * critical path"): one walk back in time from the group's last GPU event
 * to its first step's start. At an event it charges the event's time to
 * its rank and phase; at a collective that another rank entered later it
 * charges the time after that entry as communication and moves to that
 * rank's kernel; at an event's start it finds the GPU work that ended last
 * before it on that rank (any stream) and charges the gap between to the
 * host when the launch came after that work had ended, to the launch
 * latency when under the kernel-wait threshold, else to other wait. Each
 * node is visited at most once, so the walk ends. The charged segments
 * tile the steps' windows, which end where the step's last GPU event
 * ends on any rank. */
#include "report/analyze/trace_path.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "report/analyze/trace_stats.h"

const char *gs_trace_phase_name(int phase) {
  static const char *const names[] = {"compute", "communication", "memcpy", "host/launch",
                                      "other wait"};
  return phase >= 0 && phase < GS_CP_PHASES ? names[phase] : "?";
}

const char *gs_trace_phase_key(int phase) {
  static const char *const keys[] = {"compute", "communication", "memcpy", "host_launch",
                                     "other_wait"};
  return phase >= 0 && phase < GS_CP_PHASES ? keys[phase] : "?";
}

void gs_trace_cpath_free(gs_trace_cpath *p) {
  for (size_t i = 0; i < p->n_steps; i++) free(p->steps[i].us);
  free(p->steps);
  free(p->us);
  memset(p, 0, sizeof *p);
}

/* A node's end and index, ordered by end for the "last work before"
 * search. */
typedef struct {
  double end;
  uint32_t node;
} end_rec;

static int by_end(const void *a, const void *b) {
  const end_rec *x = a, *y = b;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return (x->node > y->node) - (x->node < y->node);
}

/* One rank during the walk: its nodes by end, where each node sits in
 * that order, and the positions not yet spent ([0, hi)). */
typedef struct {
  const gs_trace_rank_stats *r;
  end_rec *by_end;
  uint32_t *pos;
  size_t hi;
} walk_rank;

/* The windows (steps) and their cells, filled back to front. */
typedef struct {
  size_t n_ranks, n_win;
  double *bound;       /* n_win + 1: bound[0] the first step's start, bound[w + 1] step w's end */
  double *cells;       /* [w][rank][phase] */
  int *crossings;      /* per window */
  size_t cur;          /* the window being filled (walks down) */
} tiling;

/* Charges [lo, hi] (hi no later than the previous charge's lo) to rank
 * `rank`'s `phase`, split at the windows' bounds. */
static void charge(tiling *t, size_t rank, int phase, double lo, double hi) {
  if (lo < t->bound[0]) lo = t->bound[0];
  while (hi > lo) {
    double from = t->bound[t->cur];  // the current window's start
    double part_lo = lo > from ? lo : from;
    t->cells[(t->cur * t->n_ranks + rank) * GS_CP_PHASES + (size_t)phase] += hi - part_lo;
    if (lo >= from || t->cur == 0) break;
    hi = from;
    t->cur--;
  }
}

/* The position among rank `w`'s spent-free positions of the node that
 * ended last at or before `t`; SIZE_MAX: none. */
static size_t last_before(const walk_rank *w, double t) {
  size_t lo = 0, hi = w->hi;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (w->by_end[mid].end <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo ? lo - 1 : SIZE_MAX;
}

/* The collective index of node `node` of rank `r`; -1 when it is none. */
static long coll_index(const gs_trace_rank_stats *r, uint32_t node) {
  size_t lo = 0, hi = r->n_coll;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->coll_node[mid] < node) lo = mid + 1;
    else hi = mid;
  }
  return lo < r->n_coll && r->coll_node[lo] == node ? (long)lo : -1;
}

static int phase_of(uint8_t cls) {
  switch (cls) {
    case GS_TEV_COMPUTE: return GS_CP_COMPUTE;
    case GS_TEV_COMM: return GS_CP_COMM;
    case GS_TEV_MEMORY: return GS_CP_MEMCPY;
    default: return GS_CP_OTHER;
  }
}

static int by_step_id(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

static size_t window_of(const int32_t *ids, size_t n, int32_t step) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ids[mid] < step) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The windows of ranks w[0..n): the distinct steps of their nodes, each
 * ending where its last node ends on any rank (kept non-decreasing), the
 * first starting at its first node; no steps: one window over every node.
 * *ids gets the steps' numbers (NULL: none), *start the walk's first node. */
static gs_status make_windows(walk_rank *w, size_t n, tiling *t, int32_t **ids_out,
                              size_t *start_rank, uint32_t *start_node) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++) total += w[i].r->n_nodes;
  int32_t *ids = malloc((total ? total : 1) * sizeof *ids);
  if (!ids) return GS_ERR_NOMEM;
  size_t n_ids = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < w[i].r->n_nodes; k++)
      if (w[i].r->nodes[k].step >= 0) ids[n_ids++] = w[i].r->nodes[k].step;
  qsort(ids, n_ids, sizeof *ids, by_step_id);
  size_t d = 0;
  for (size_t k = 0; k < n_ids; k++)
    if (d == 0 || ids[k] != ids[d - 1]) ids[d++] = ids[k];
  t->n_win = d ? d : 1;
  t->bound = malloc((t->n_win + 1) * sizeof *t->bound);
  if (!t->bound) {
    free(ids);
    return GS_ERR_NOMEM;
  }
  for (size_t k = 0; k <= t->n_win; k++) t->bound[k] = -INFINITY;
  t->bound[0] = INFINITY;
  double last_end = -INFINITY;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < w[i].r->n_nodes; k++) {
      const gs_trace_node *nd = &w[i].r->nodes[k];
      if (d && nd->step < 0) continue;
      size_t win = d ? window_of(ids, d, nd->step) : 0;
      if (nd->end > t->bound[win + 1]) t->bound[win + 1] = nd->end;
      if (win == 0 && nd->ts < t->bound[0]) t->bound[0] = nd->ts;
      if (nd->end > last_end) {
        last_end = nd->end;
        *start_rank = i;
        *start_node = (uint32_t)k;
      }
    }
  for (size_t k = 1; k <= t->n_win; k++)
    if (!(t->bound[k] >= t->bound[k - 1])) t->bound[k] = t->bound[k - 1];
  if (d) {
    *ids_out = ids;
  } else {
    free(ids);
    *ids_out = NULL;
  }
  return GS_OK;
}

/* The walk over ranks w[0..n) of a group (see the top of the file). */
static void walk(walk_rank *w, size_t n, size_t n_matched, double kernel_wait_us, tiling *t,
                 size_t r, uint32_t e) {
  double now = w[r].r->nodes[e].end;
  w[r].hi = w[r].pos[e];
  for (;;) {
    const gs_trace_node *nd = &w[r].r->nodes[e];
    long k = nd->cls == GS_TEV_COMM ? coll_index(w[r].r, e) : -1;
    size_t last = r;
    double entry = nd->ts;
    for (size_t i = 0; k >= 0 && (size_t)k < n_matched && i < n; i++) {
      double ts = w[i].r->nodes[w[i].r->coll_node[k]].ts;
      if (ts > entry) {
        entry = ts;
        last = i;
      }
    }
    uint32_t target = last != r ? w[last].r->coll_node[k] : 0;
    if (last != r && w[last].pos[target] < w[last].hi) {
      // The collective could end only after `last` entered it.
      double at = entry < now ? entry : now;
      charge(t, r, GS_CP_COMM, at, now);
      t->crossings[t->cur]++;
      r = last;
      e = target;
      w[r].hi = w[r].pos[e];
      now = at;
      nd = &w[r].r->nodes[e];
    } else {
      double start = nd->ts < now ? nd->ts : now;
      charge(t, r, phase_of(nd->cls), start, now);
      now = start;
    }
    if (now <= t->bound[0]) return;
    size_t p = last_before(&w[r], now);
    int launched = !isnan(nd->delay);
    if (p == SIZE_MAX) {
      charge(t, r, launched ? GS_CP_HOST : GS_CP_OTHER, t->bound[0], now);
      return;
    }
    double ready = w[r].by_end[p].end;
    int host = launched && nd->ts - (double)nd->delay > ready;
    charge(t, r, host || now - ready < kernel_wait_us ? GS_CP_HOST : GS_CP_OTHER, ready, now);
    now = ready;
    e = w[r].by_end[p].node;
    w[r].hi = p;
  }
}

/* Sums a step's cells and names its largest. */
static void finish_step(gs_trace_cpath_step *st, size_t n_ranks) {
  double best = -1;
  for (size_t c = 0; c < n_ranks * GS_CP_PHASES; c++)
    if (st->us[c] > best) {
      best = st->us[c];
      st->bound_rank = (int)(c / GS_CP_PHASES);
      st->bound_phase = (int)(c % GS_CP_PHASES);
    }
  double len = st->end_us - st->start_us;
  st->bound_share = len > 0 ? best / len : NAN;
}

/* The walk's tiling into the path's steps and their sum. */
static gs_status fill_path(const tiling *t, const int32_t *ids, gs_trace_cpath *p) {
  size_t cells = p->n_ranks * GS_CP_PHASES;
  p->steps = calloc(t->n_win, sizeof *p->steps);
  p->us = calloc(cells, sizeof *p->us);
  if (!p->steps || !p->us) return GS_ERR_NOMEM;
  p->n_steps = t->n_win;
  for (size_t w = 0; w < t->n_win; w++) {
    gs_trace_cpath_step *st = &p->steps[w];
    st->step = ids ? ids[w] : -1;
    st->start_us = t->bound[w];
    st->end_us = t->bound[w + 1];
    st->crossings = t->crossings[w];
    st->us = malloc(cells * sizeof *st->us);
    if (!st->us) return GS_ERR_NOMEM;
    memcpy(st->us, &t->cells[w * cells], cells * sizeof *st->us);
    for (size_t c = 0; c < cells; c++) p->us[c] += st->us[c];
    p->total_us += st->end_us - st->start_us;
    finish_step(st, p->n_ranks);
  }
  gs_trace_cpath_step sum = {.start_us = 0, .end_us = p->total_us, .us = p->us};
  finish_step(&sum, p->n_ranks);
  p->bound_rank = sum.bound_rank;
  p->bound_phase = sum.bound_phase;
  p->bound_share = sum.bound_share;
  return GS_OK;
}

/* The path of ranks [first, first + n) of s. */
static gs_status group_path(gs_trace_stats *s, size_t first, size_t n, gs_trace_cpath *p) {
  p->group = s->ranks[first].rank / GS_MAX_RANKS;
  p->first_rank = first;
  p->n_ranks = n;
  walk_rank *w = calloc(n, sizeof *w);
  tiling t = {.n_ranks = n};
  int32_t *ids = NULL;
  size_t n_matched = SIZE_MAX, start_rank = 0, nodes = 0;
  uint32_t start_node = 0;
  gs_status st = w ? GS_OK : GS_ERR_NOMEM;
  for (size_t i = 0; st == GS_OK && i < n; i++) {
    const gs_trace_rank_stats *r = &s->ranks[first + i];
    w[i].r = r;
    nodes += r->n_nodes;
    if (r->n_coll < n_matched) n_matched = r->n_coll;
    w[i].by_end = malloc((r->n_nodes ? r->n_nodes : 1) * sizeof *w[i].by_end);
    w[i].pos = malloc((r->n_nodes ? r->n_nodes : 1) * sizeof *w[i].pos);
    if (!w[i].by_end || !w[i].pos) {
      st = GS_ERR_NOMEM;
      break;
    }
    for (size_t k = 0; k < r->n_nodes; k++)
      w[i].by_end[k] = (end_rec){.end = r->nodes[k].end, .node = (uint32_t)k};
    qsort(w[i].by_end, r->n_nodes, sizeof *w[i].by_end, by_end);
    for (size_t k = 0; k < r->n_nodes; k++) w[i].pos[w[i].by_end[k].node] = (uint32_t)k;
    w[i].hi = r->n_nodes;
  }
  if (st == GS_OK && nodes > 0) st = make_windows(w, n, &t, &ids, &start_rank, &start_node);
  if (st == GS_OK && nodes > 0) {
    t.cells = calloc(t.n_win * n * GS_CP_PHASES, sizeof *t.cells);
    t.crossings = calloc(t.n_win, sizeof *t.crossings);
    if (!t.cells || !t.crossings) st = GS_ERR_NOMEM;
  }
  if (st == GS_OK && nodes > 0) {
    t.cur = t.n_win - 1;
    walk(w, n, n_matched, s->kernel_wait_us, &t, start_rank, start_node);
    st = fill_path(&t, ids, p);
  }
  for (size_t i = 0; w && i < n; i++) {
    free(w[i].by_end);
    free(w[i].pos);
  }
  free(w);
  free(ids);
  free(t.bound);
  free(t.cells);
  free(t.crossings);
  return st;
}

gs_status gs_trace_cpath_compute(gs_trace_stats *s) {
  size_t groups = 0;
  for (size_t i = 0; i < s->n_ranks; i++)
    groups += i == 0 || s->ranks[i].rank / GS_MAX_RANKS != s->ranks[i - 1].rank / GS_MAX_RANKS;
  s->paths = calloc(groups ? groups : 1, sizeof *s->paths);
  gs_status st = s->paths ? GS_OK : GS_ERR_NOMEM;
  for (size_t i = 0; st == GS_OK && i < s->n_ranks;) {
    size_t j = i + 1;
    while (j < s->n_ranks && s->ranks[j].rank / GS_MAX_RANKS == s->ranks[i].rank / GS_MAX_RANKS)
      j++;
    st = group_path(s, i, j - i, &s->paths[s->n_paths]);
    s->n_paths++;  // counted even when half built: gs_trace_stats_free frees it
    i = j;
  }
  for (size_t i = 0; i < s->n_ranks; i++) {
    free(s->ranks[i].nodes);
    free(s->ranks[i].coll_node);
    s->ranks[i].nodes = NULL;
    s->ranks[i].coll_node = NULL;
    s->ranks[i].n_nodes = 0;
  }
  return st == GS_OK ? GS_OK : gs_error(GS_ERR_NOMEM, "cannot compute the critical path");
}
