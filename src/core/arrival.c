/* Arrival skew at collectives (see arrival.h): the per-rank times, their
 * summary, the naming rule and the document's "arrival" member. The
 * definitions are in docs/stragglers.md, "Arrival skew". */
#include "core/arrival.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/stats.h"

gs_arrival *gs_arrival_new(size_t n_ranks, size_t capacity, const char *clock,
                           const char *alignment) {
  if (n_ranks < 2 || n_ranks > GS_MAX_RANKS) {
    gs_error(GS_ERR_USAGE, "arrival times of %zu ranks (2 to %d)", n_ranks, GS_MAX_RANKS);
    return NULL;
  }
  gs_arrival *a = calloc(1, sizeof *a);
  if (!a) {
    gs_error(GS_ERR_NOMEM, "cannot allocate the arrival times");
    return NULL;
  }
  a->clock = clock;
  a->alignment = alignment;
  a->n_ranks = n_ranks;
  for (size_t k = 0; k < n_ranks && capacity > 0; k++) {
    gs_arrival_rank *r = &a->ranks[k];
    r->entry = malloc(capacity * sizeof *r->entry);
    r->exit = malloc(capacity * sizeof *r->exit);
    if (!r->entry || !r->exit) {
      gs_arrival_free(a);
      gs_error(GS_ERR_NOMEM, "cannot allocate the arrival times of %zu iterations", capacity);
      return NULL;
    }
    r->capacity = capacity;
  }
  return a;
}

void gs_arrival_free(gs_arrival *a) {
  if (!a) return;
  for (size_t k = 0; k < a->n_ranks; k++) {
    free(a->ranks[k].entry);
    free(a->ranks[k].exit);
  }
  free(a);
}

gs_status gs_arrival_reserve(gs_arrival_rank *r, size_t more) {
  if (r->capacity >= r->n + more) return GS_OK;
  size_t grown = r->capacity ? r->capacity : 64;
  while (grown < r->n + more) grown *= 2;
  double *e = realloc(r->entry, grown * sizeof *e);
  if (!e) return gs_error(GS_ERR_NOMEM, "cannot grow the arrival times to %zu", grown);
  r->entry = e;
  double *x = realloc(r->exit, grown * sizeof *x);
  if (!x) return gs_error(GS_ERR_NOMEM, "cannot grow the arrival times to %zu", grown);
  r->exit = x;
  r->capacity = grown;
  return GS_OK;
}

gs_status gs_arrival_append(gs_arrival_rank *r, double entry, double exit) {
  GS_TRY(gs_arrival_reserve(r, 1));
  r->entry[r->n] = entry;
  r->exit[r->n] = exit;
  r->n++;
  return GS_OK;
}

/* 1 when rank r marked at least one collective (a finite entry). */
static int rank_recorded(const gs_arrival_rank *r) {
  for (size_t i = 0; i < r->n; i++)
    if (isfinite(r->entry[i])) return 1;
  return 0;
}

/* 1 when every rank of `a` in group g (every rank: g < 0) recorded, and
 * the group has at least 2 ranks. */
static int group_recorded(const gs_arrival *a, int g) {
  size_t members = 0;
  for (size_t k = 0; k < a->n_ranks; k++) {
    if (g >= 0 && a->group[k] != g) continue;
    if (!rank_recorded(&a->ranks[k])) return 0;
    members++;
  }
  return members >= 2;
}

int gs_arrival_recorded(const gs_arrival *a) {
  if (!a->grouped) return group_recorded(a, -1);
  for (size_t k = 0; k < a->n_ranks; k++)
    if (group_recorded(a, a->group[k])) return 1;
  return 0;
}

gs_status gs_arrival_merge(gs_arrival *into, const gs_arrival *from) {
  if (into->n_ranks != from->n_ranks)
    return gs_error(GS_ERR_USAGE, "arrival times of %zu and %zu ranks cannot be merged",
                    into->n_ranks, from->n_ranks);
  if (into->grouped && from->grouped &&
      memcmp(into->group, from->group, into->n_ranks * sizeof *into->group) != 0)
    return gs_error(GS_ERR_USAGE, "arrival times of differently grouped ranks cannot be merged");
  if (!into->grouped && from->grouped) {
    gs_arrival_set_groups(into, from->group);
    into->group_stages = from->group_stages;
  }
  for (size_t k = 0; k < into->n_ranks; k++) {
    gs_arrival_rank *r = &into->ranks[k];
    const gs_arrival_rank *f = &from->ranks[k];
    for (size_t i = 0; i < f->n; i++) GS_TRY(gs_arrival_append(r, f->entry[i], f->exit[i]));
    r->offset_seconds = f->offset_seconds;
    if (f->error_seconds > r->error_seconds) r->error_seconds = f->error_seconds;
    r->host_checked += f->host_checked;
    r->host_bound += f->host_bound;
  }
  return GS_OK;
}

/* ---- the summary ----------------------------------------------------------------- */

/* Median of v[0..n) (sorted in place); NaN when n == 0. */
static double median_of(double *v, size_t n) {
  if (n == 0) return NAN;
  gs_stats_sort(v, n);
  return gs_stats_percentile_sorted(v, n, 50.0);
}

/* Whether iteration i has a finite entry and exit of every rank. */
static int complete(const gs_arrival *a, size_t i) {
  for (size_t k = 0; k < a->n_ranks; k++)
    if (!isfinite(a->ranks[k].entry[i]) || !isfinite(a->ranks[k].exit[i])) return 0;
  return 1;
}

/* Rank k's lateness in iteration i: its entry less the median of the other
 * ranks' entries (`others` holds n_ranks - 1 doubles of scratch). */
static double lateness_of(const gs_arrival *a, size_t k, size_t i, double *others) {
  size_t m = 0;
  for (size_t j = 0; j < a->n_ranks; j++)
    if (j != k) others[m++] = a->ranks[j].entry[i];
  return a->ranks[k].entry[i] - median_of(others, m);
}

gs_status gs_arrival_summarize(const gs_arrival *a, gs_arrival_summary *out) {
  memset(out, 0, sizeof *out);
  out->n_ranks = a->n_ranks;
  out->last_rank = -1;
  out->lateness = out->lateness_low = out->lateness_high = NAN;
  out->noise = out->alignment_error = out->exit_spread = out->wait_share = NAN;
  out->host_bound_share = out->period = NAN;
  for (size_t k = 0; k < GS_MAX_RANKS; k++) out->rank_lateness[k] = NAN;
  size_t n = SIZE_MAX;
  for (size_t k = 0; k < a->n_ranks; k++)
    if (a->ranks[k].n < n) n = a->ranks[k].n;
  if (a->n_ranks < 2 || n == SIZE_MAX || n == 0) return GS_OK;
  size_t *kept = malloc(n * sizeof *kept);
  double *d = malloc(n * sizeof *d);
  double *spread = malloc(n * sizeof *spread);
  double others[GS_MAX_RANKS];
  if (!kept || !d || !spread) {
    free(kept);
    free(d);
    free(spread);
    return gs_error(GS_ERR_NOMEM, "cannot summarize %zu iterations of arrival times", n);
  }
  double wait_sum = 0.0, busy_sum = 0.0;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (!complete(a, i)) continue;
    kept[m++] = i;
    size_t last = 0;
    for (size_t k = 1; k < a->n_ranks; k++)
      if (a->ranks[k].entry[i] > a->ranks[last].entry[i]) last = k;
    out->last_count[last]++;
    const double latest = a->ranks[last].entry[i];
    double first_out = a->ranks[0].exit[i], last_out = first_out;
    for (size_t k = 0; k < a->n_ranks; k++) {
      first_out = fmin(first_out, a->ranks[k].exit[i]);
      last_out = fmax(last_out, a->ranks[k].exit[i]);
      // A rank that leaves before the last arrives (a broadcast's root)
      // waited only as long as it was inside.
      const double in = fmax(a->ranks[k].exit[i] - a->ranks[k].entry[i], 0.0);
      wait_sum += fmin(latest - a->ranks[k].entry[i], in);
      busy_sum += in;
    }
    spread[m - 1] = last_out - first_out;
  }
  out->iterations = m;
  if (m > 0) {
    size_t r = 0;
    for (size_t k = 1; k < a->n_ranks; k++)
      if (out->last_count[k] > out->last_count[r]) r = k;
    out->last_rank = (int)r;
    out->wait_share = busy_sum > 0.0 ? wait_sum / busy_sum : NAN;
    out->exit_spread = median_of(spread, m);
    for (size_t k = 0; k < a->n_ranks; k++) {
      for (size_t i = 0; i < m; i++) d[i] = lateness_of(a, k, kept[i], others);
      if (k != r) {
        out->rank_lateness[k] = median_of(d, m);
        continue;
      }
      gs_stats_median_interval(d, m, &out->lateness, &out->lateness_low, &out->lateness_high);
      out->rank_lateness[k] = out->lateness;
      for (size_t i = 0; i < m; i++) d[i] = fabs(d[i] - out->lateness);
      out->noise = 1.4826 * median_of(d, m);
    }
    double worst = 0.0;
    for (size_t k = 0; k < a->n_ranks; k++)
      if (k != r && a->ranks[k].error_seconds > worst) worst = a->ranks[k].error_seconds;
    out->alignment_error = a->ranks[r].error_seconds + worst;
    const gs_arrival_rank *late = &a->ranks[r];
    if (late->host_checked > 0)
      out->host_bound_share = (double)late->host_bound / (double)late->host_checked;
    // The period: from each kept iteration's median entry to the next's
    // (a gap between runs is one outlier among many).
    double previous = NAN;
    size_t gaps = 0;
    for (size_t i = 0; i < m; i++) {
      for (size_t k = 0; k < a->n_ranks; k++) others[k] = a->ranks[k].entry[kept[i]];
      const double mid = median_of(others, a->n_ranks);
      if (i > 0) d[gaps++] = mid - previous;
      previous = mid;
    }
    out->period = median_of(d, gaps);
  }
  free(kept);
  free(d);
  free(spread);
  return GS_OK;
}

double gs_arrival_floor(const char *clock, int ranks, int cores) {
  const int host_clock = clock && strcmp(clock, "host") == 0;
  return host_clock && cores > 0 && ranks > cores ? GS_ARRIVAL_SHARED_CORES_SECONDS : 0.0;
}

double gs_arrival_threshold(const gs_arrival_summary *s) {
  double t = 0.0;
  if (isfinite(s->floor) && s->floor > t) t = s->floor;
  if (isfinite(s->noise) && s->noise > t) t = s->noise;
  if (isfinite(s->alignment_error) && s->alignment_error > t) t = s->alignment_error;
  if (isfinite(s->exit_spread) && s->exit_spread > t) t = s->exit_spread;
  const double material = GS_ARRIVAL_MATERIAL_SHARE * s->period;
  if (isfinite(material) && material > t) t = material;
  return t;
}

int gs_arrival_named(const gs_arrival_summary *s) {
  if (s->last_rank < 0 || s->iterations < 2 || !isfinite(s->lateness_low)) return -1;
  return s->lateness_low > gs_arrival_threshold(s) ? s->last_rank : -1;
}

/* ---- the document's member ------------------------------------------------------- */

cJSON *gs_arrival_to_json(const gs_arrival *a) {
  gs_arrival_summary s;
  if (gs_arrival_summarize(a, &s) != GS_OK) return NULL;
  gs_json_build b = {0};
  cJSON *o = gs_json_check(&b, cJSON_CreateObject());
  gs_json_put_string(&b, o, "clock", a->clock);
  gs_json_put_string(&b, o, "alignment", a->alignment);
  gs_json_put_number(&b, o, "iterations", (double)s.iterations);
  if (s.last_rank >= 0)
    gs_json_put_number(&b, o, "last_rank", s.last_rank);
  else
    gs_json_put_null(&b, o, "last_rank");
  gs_json_put_number(&b, o, "lateness_seconds", s.lateness);
  gs_json_put_number(&b, o, "lateness_low_seconds", s.lateness_low);
  gs_json_put_number(&b, o, "lateness_high_seconds", s.lateness_high);
  gs_json_put_number(&b, o, "noise_seconds", s.noise);
  gs_json_put_number(&b, o, "alignment_error_seconds", s.alignment_error);
  gs_json_put_number(&b, o, "exit_spread_seconds", s.exit_spread);
  gs_json_put_number(&b, o, "wait_share", s.wait_share);
  gs_json_put_number(&b, o, "last_rank_host_bound_share", s.host_bound_share);
  gs_json_put_number(&b, o, "period_seconds", s.period);
  // The sample: at most GS_ARRIVAL_SAMPLE iterations, evenly spread.
  size_t n = SIZE_MAX;
  for (size_t k = 0; k < a->n_ranks; k++)
    if (a->ranks[k].n < n) n = a->ranks[k].n;
  if (n == SIZE_MAX) n = 0;
  const size_t taken = n < GS_ARRIVAL_SAMPLE ? n : GS_ARRIVAL_SAMPLE;
  double origin = INFINITY;
  for (size_t k = 0; k < a->n_ranks; k++)
    for (size_t i = 0; i < n; i++)
      if (isfinite(a->ranks[k].entry[i]) && a->ranks[k].entry[i] < origin)
        origin = a->ranks[k].entry[i];
  if (!isfinite(origin)) origin = 0.0;
  cJSON *sample = gs_json_put_array(&b, o, "sample");
  for (size_t j = 0; j < taken; j++) gs_json_append_number(&b, sample, (double)(j * n / taken));
  cJSON *ranks = gs_json_put_array(&b, o, "ranks");
  for (size_t k = 0; ranks && k < a->n_ranks; k++) {
    const gs_arrival_rank *r = &a->ranks[k];
    cJSON *e = gs_json_check(&b, cJSON_CreateObject());
    gs_json_put_number(&b, e, "rank", (double)k);
    gs_json_put_number(&b, e, "last", (double)s.last_count[k]);
    gs_json_put_number(&b, e, "lateness_seconds", s.rank_lateness[k]);
    gs_json_put_number(&b, e, "offset_seconds", r->offset_seconds);
    gs_json_put_number(&b, e, "error_seconds", r->error_seconds);
    if (r->host_checked > 0) {
      gs_json_put_number(&b, e, "host_checked", (double)r->host_checked);
      gs_json_put_number(&b, e, "host_bound", (double)r->host_bound);
    }
    cJSON *entry = gs_json_put_array(&b, e, "entry_seconds");
    cJSON *exit = gs_json_put_array(&b, e, "exit_seconds");
    for (size_t j = 0; j < taken; j++) {
      const size_t i = j * n / taken;
      gs_json_append_number(&b, entry, r->entry[i] - origin);
      gs_json_append_number(&b, exit, r->exit[i] - origin);
    }
    gs_json_append(&b, ranks, e);
  }
  return gs_json_build_finish(&b, o);
}

void gs_arrival_set_groups(gs_arrival *a, const int *group) {
  a->grouped = group != NULL;
  for (size_t k = 0; k < GS_MAX_RANKS; k++) a->group[k] = group && k < a->n_ranks ? group[k] : 0;
}

void gs_arrival_group_view(const gs_arrival *a, int g, gs_arrival *view, int *members) {
  memset(view, 0, sizeof *view);
  view->clock = a->clock;
  view->alignment = a->alignment;
  for (size_t k = 0; k < a->n_ranks; k++) {
    if (a->group[k] != g) continue;
    members[view->n_ranks] = (int)k;
    view->ranks[view->n_ranks++] = a->ranks[k];
  }
}

cJSON *gs_arrival_groups_to_json(const gs_arrival *a) {
  gs_json_build b = {0};
  cJSON *groups = gs_json_check(&b, cJSON_CreateArray());
  gs_arrival view;
  int members[GS_MAX_RANKS];
  // Groups in order of their number: each at its first rank, once.
  int next = 0;
  while (groups) {
    int g = -1;
    for (size_t k = 0; k < a->n_ranks; k++)
      if (a->group[k] >= next && (g < 0 || a->group[k] < g)) g = a->group[k];
    if (g < 0) break;
    next = g + 1;
    // A group of one rank meets nobody; one with a rank that recorded
    // nothing (a replica that failed at once) has no times to summarize.
    if (!group_recorded(a, g)) continue;
    gs_arrival_group_view(a, g, &view, members);
    cJSON *o = gs_json_check(&b, gs_arrival_to_json(&view));
    if (!o) break;
    const int per = a->group_stages;
    gs_json_put_number(&b, o, "stage", per > 0 ? g % per : g);
    if (per > 0) gs_json_put_number(&b, o, "replica", g / per);
    cJSON *global = gs_json_put_array(&b, o, "global_ranks");
    for (size_t k = 0; k < view.n_ranks; k++) gs_json_append_number(&b, global, members[k]);
    gs_json_append(&b, groups, o);
  }
  return gs_json_build_finish(&b, groups);
}

/* Number member `name` of `o` (null is NaN); 0 when it is missing or of
 * another type. */
static int number_or_null(const cJSON *o, const char *name, double *out) {
  const cJSON *x = gs_json_member(o, name);
  if (cJSON_IsNull(x)) {
    *out = NAN;
    return 1;
  }
  if (!cJSON_IsNumber(x)) return 0;
  *out = x->valuedouble;
  return 1;
}

gs_status gs_arrival_summary_from_json(const cJSON *arrival, const char *source,
                                       gs_arrival_summary *out) {
  memset(out, 0, sizeof *out);
  out->last_rank = -1;
  for (size_t k = 0; k < GS_MAX_RANKS; k++) out->rank_lateness[k] = NAN;
  static const char *const names[] = {"iterations", "last_rank", "lateness_seconds",
                                      "lateness_low_seconds", "lateness_high_seconds",
                                      "noise_seconds", "alignment_error_seconds",
                                      "exit_spread_seconds", "wait_share"};
  double v[9];
  for (size_t i = 0; i < 9; i++)
    if (!number_or_null(arrival, names[i], &v[i]))
      return gs_error(GS_ERR_FORMAT, "%s: arrival.%s is %s, not a number or null", source,
                      names[i], gs_json_type_name(gs_json_member(arrival, names[i])));
  const cJSON *ranks = gs_json_member(arrival, "ranks");
  const int n_ranks = cJSON_IsArray(ranks) ? cJSON_GetArraySize(ranks) : -1;
  if (n_ranks < 2 || n_ranks > GS_MAX_RANKS || !(v[0] >= 0.0) ||
      (isfinite(v[1]) && !(v[1] >= 0.0 && v[1] < (double)n_ranks)))
    return gs_error(GS_ERR_FORMAT, "%s: arrival has %d ranks and last_rank %g", source, n_ranks,
                    v[1]);
  out->iterations = (size_t)v[0];
  out->n_ranks = (size_t)n_ranks;
  out->last_rank = isfinite(v[1]) ? (int)v[1] : -1;
  out->lateness = v[2];
  out->lateness_low = v[3];
  out->lateness_high = v[4];
  out->noise = v[5];
  out->alignment_error = v[6];
  out->exit_spread = v[7];
  out->wait_share = v[8];
  // Written since 2026-11-28; older documents do not know it.
  if (!number_or_null(arrival, "last_rank_host_bound_share", &out->host_bound_share))
    out->host_bound_share = NAN;
  if (!number_or_null(arrival, "period_seconds", &out->period)) out->period = NAN;
  size_t k = 0;
  for (const cJSON *r = ranks->child; r; r = r->next, k++) {
    double last = NAN;
    if (!number_or_null(r, "last", &last) || !(last >= 0.0) ||
        !number_or_null(r, "lateness_seconds", &out->rank_lateness[k]))
      return gs_error(GS_ERR_FORMAT, "%s: arrival.ranks[%zu] lacks its last count or lateness",
                      source, k);
    out->last_count[k] = (size_t)last;
  }
  return GS_OK;
}
