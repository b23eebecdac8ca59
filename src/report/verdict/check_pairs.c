/* Localization by pairs: pair times into slow units and slow links by
 * elimination, the confirming round's pairs and the decision after it
 * (check_pairs.h; docs/check.md, "Localization by pairs"). */
#include "report/verdict/check_pairs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "core/stats.h"

/* The median of a pair's times (into a sorted copy at `buf`). */
static double pair_median(const gs_pairs_sample *p, double *buf) {
  memcpy(buf, p->seconds, p->n * sizeof *buf);
  gs_stats_sort(buf, p->n);
  return gs_stats_percentile_sorted(buf, p->n, 50.0);
}

/* The median of n draws with replacement from x (into buf). */
static double draw_median(const double *x, size_t n, double *buf, gs_rng *rng) {
  for (size_t i = 0; i < n; i++) buf[i] = x[gs_rng_below(rng, n)];
  gs_stats_sort(buf, n);
  return gs_stats_percentile_sorted(buf, n, 50.0);
}

/* The 95% percentile-bootstrap interval of median(x) / median(ref), each
 * side resampled on its own (GS_STATS_BOOTSTRAP_REPLICATES, fixed seed):
 * medians, because a CPU rank descheduled for a time slice makes one
 * exchange 10 times as long, which a mean carries and a median does not. */
static void median_ratio_interval(const double *x, size_t n, const double *ref, size_t n_ref,
                                  double *buf, double *low, double *high) {
  *low = *high = NAN;
  double *r = malloc(GS_STATS_BOOTSTRAP_REPLICATES * sizeof *r);
  if (!r) return;
  gs_rng rng;
  gs_rng_seed(&rng, GS_STATS_BOOTSTRAP_SEED, 30);
  for (size_t b = 0; b < GS_STATS_BOOTSTRAP_REPLICATES; b++) {
    const double a = draw_median(x, n, buf, &rng);
    r[b] = a / draw_median(ref, n_ref, buf, &rng);
  }
  gs_stats_sort(r, GS_STATS_BOOTSTRAP_REPLICATES);
  *low = gs_stats_percentile_sorted(r, GS_STATS_BOOTSTRAP_REPLICATES, 2.5);
  *high = gs_stats_percentile_sorted(r, GS_STATS_BOOTSTRAP_REPLICATES, 97.5);
  free(r);
}

/* Checks the pairs; the number of samples in all in *total. */
static gs_status check_pairs(const gs_pairs_sample *pairs, size_t n, size_t n_units,
                             size_t *most) {
  *most = 0;
  for (size_t i = 0; i < n; i++) {
    const gs_pairs_sample *p = &pairs[i];
    if (p->a < 0 || p->b < 0 || (size_t)p->a >= n_units || (size_t)p->b >= n_units ||
        p->a == p->b)
      return gs_error(GS_ERR_USAGE, "pairs: pair %zu (%d, %d) of %zu units", i, p->a, p->b,
                      n_units);
    if (p->n == 0 || !p->seconds)
      return gs_error(GS_ERR_USAGE, "pairs: pair (%d, %d) has no times", p->a, p->b);
    for (size_t k = 0; k < p->n; k++)
      if (!isfinite(p->seconds[k]) || p->seconds[k] <= 0.0)
        return gs_error(GS_ERR_USAGE, "pairs: time %zu of pair (%d, %d) is not positive", k + 1,
                        p->a, p->b);
    if (p->n > *most) *most = p->n;
  }
  return GS_OK;
}

/* Marks slow units and counts links and undecided pairs (check_pairs.h). */
static void eliminate(gs_pairs_verdict *v) {
  for (size_t u = 0; u < v->n_units; u++) {
    size_t measured = 0, slow = 0;
    for (size_t i = 0; i < v->n_pairs; i++) {
      const gs_pairs_result *p = &v->pairs[i];
      if ((size_t)p->a != u && (size_t)p->b != u) continue;
      measured++;
      slow += p->slow;
    }
    v->unit_slow[u] = measured >= 2 && slow == measured;
    v->units_named += (size_t)v->unit_slow[u];
  }
  for (size_t i = 0; i < v->n_pairs; i++) {
    const gs_pairs_result *p = &v->pairs[i];
    if (!p->slow || v->unit_slow[p->a] || v->unit_slow[p->b]) continue;
    // A link only when both its units were seen fine with another partner.
    int fine_a = 0, fine_b = 0;
    for (size_t j = 0; j < v->n_pairs; j++) {
      const gs_pairs_result *q = &v->pairs[j];
      if (j == i || q->slow) continue;
      fine_a |= q->a == p->a || q->b == p->a;
      fine_b |= q->a == p->b || q->b == p->b;
    }
    if (fine_a && fine_b)
      v->links_named++;
    else
      v->undecided++;
  }
}

/* See check_pairs.h. */
gs_status gs_pairs_judge(const gs_pairs_sample *pairs, size_t n, size_t n_units,
                         gs_pairs_verdict *out) {
  memset(out, 0, sizeof *out);
  size_t most = 0, total = 0;
  GS_TRY(check_pairs(pairs, n, n_units, &most));
  for (size_t i = 0; i < n; i++) total += pairs[i].n;
  most = total; /* the scratch holds the reference pairs' samples together */
  out->n_units = n_units;
  out->n_pairs = n;
  out->pairs = calloc(n ? n : 1, sizeof *out->pairs);
  out->unit_slow = calloc(n_units ? n_units : 1, sizeof *out->unit_slow);
  double *buf = malloc((most ? most : 1) * sizeof *buf);
  double *medians = malloc((n ? n : 1) * sizeof *medians);
  double *ref = malloc((most ? most : 1) * sizeof *ref);
  if (!out->pairs || !out->unit_slow || !buf || !medians || !ref) {
    free(buf);
    free(medians);
    free(ref);
    gs_pairs_verdict_free(out);
    return gs_error(GS_ERR_NOMEM, "pairs: out of memory for %zu pairs", n);
  }
  for (size_t i = 0; i < n; i++) {
    out->pairs[i] = (gs_pairs_result){.a = pairs[i].a, .b = pairs[i].b};
    out->pairs[i].median = medians[i] = pair_median(&pairs[i], buf);
  }
  size_t n_ref = 0;
  double cut_seen = -INFINITY;
  if (n > 0) {
    gs_stats_sort(medians, n);
    const double cut = n >= 6 ? gs_stats_percentile_sorted(medians, n, 25.0) : medians[0];
    cut_seen = cut;
    for (size_t i = 0; i < n; i++)
      if (out->pairs[i].median <= cut)
        for (size_t k = 0; k < pairs[i].n; k++) ref[n_ref++] = pairs[i].seconds[k];
    memcpy(buf, ref, n_ref * sizeof *buf);
    gs_stats_sort(buf, n_ref);
    out->reference = gs_stats_percentile_sorted(buf, n_ref, 50.0);
  }
  for (size_t i = 0; i < n; i++) {
    gs_pairs_result *p = &out->pairs[i];
    p->ratio = p->median / out->reference;
    median_ratio_interval(pairs[i].seconds, pairs[i].n, ref, n_ref, buf, &p->low, &p->high);
    p->slow = isfinite(p->low) && p->low > 1.0 + GS_PAIRS_THRESHOLD;
    p->reference = p->median <= cut_seen;
  }
  free(buf);
  free(medians);
  free(ref);
  eliminate(out);
  return GS_OK;
}

/* See check_pairs.h. */
void gs_pairs_verdict_free(gs_pairs_verdict *v) {
  if (!v) return;
  free(v->pairs);
  free(v->unit_slow);
  memset(v, 0, sizeof *v);
}

/* ---- the confirming round and the decision ---------------------------------- */

/* The index of pair (a, b) (either order) among n pairs, -1 none. */
static long find_pair(const int *pa, const int *pb, size_t n, int a, int b) {
  for (size_t i = 0; i < n; i++)
    if ((pa[i] == a && pb[i] == b) || (pa[i] == b && pb[i] == a)) return (long)i;
  return -1;
}

/* See check_pairs.h. */
int gs_pairs_suspect(const gs_pairs_result *r) {
  return r->slow || r->ratio > 1.0 + GS_PAIRS_THRESHOLD;
}

/* 1 when r's interval lies at or below 1 + GS_PAIRS_THRESHOLD. */
static int clearly_fine(const gs_pairs_result *r) {
  return isfinite(r->high) && r->high <= 1.0 + GS_PAIRS_THRESHOLD;
}

/* Appends (a, b) ordered, unless it is there. */
static void add_pair(int *la, int *lb, size_t *n, int a, int b) {
  if (find_pair(la, lb, *n, a, b) >= 0) return;
  la[*n] = a < b ? a : b;
  lb[*n] = a < b ? b : a;
  (*n)++;
}

/* See check_pairs.h. */
gs_status gs_pairs_confirm_choose(const gs_pairs_verdict v[2], int **a, int **b, size_t *n) {
  *a = *b = NULL;
  *n = 0;
  const size_t np = v[0].n_pairs, nu = v[0].n_units;
  if (v[1].n_pairs != np || v[1].n_units != nu)
    GS_BUG("the two kinds' verdicts hold %zu and %zu pairs", np, v[1].n_pairs);
  int *suspect = calloc(np ? np : 1, sizeof *suspect);
  int *tainted = calloc(nu ? nu : 1, sizeof *tainted);
  int *la = malloc(3 * (np ? np : 1) * sizeof *la), *lb = malloc(3 * (np ? np : 1) * sizeof *lb);
  if (!suspect || !tainted || !la || !lb) {
    free(suspect);
    free(tainted);
    free(la);
    free(lb);
    return gs_error(GS_ERR_NOMEM, "pairs: out of memory for %zu pairs", np);
  }
  const gs_pairs_result *p = v[0].pairs, *q = v[1].pairs;
  size_t count = 0;
  for (size_t i = 0; i < np; i++) {
    suspect[i] = gs_pairs_suspect(&p[i]) || gs_pairs_suspect(&q[i]);
    if (suspect[i]) tainted[p[i].a] = tainted[p[i].b] = 1;
  }
  for (size_t i = 0; i < np; i++)
    if (suspect[i]) add_pair(la, lb, &count, p[i].a, p[i].b);
  for (size_t i = 0; count > 0 && i < np; i++)
    if (!suspect[i] && (p[i].reference || q[i].reference)) add_pair(la, lb, &count, p[i].a, p[i].b);
  // The other pairs of a suspect's units that were not clearly fine: they
  // decide between the unit and the link.
  for (size_t i = 0; count > 0 && i < np; i++)
    if (!suspect[i] && (tainted[p[i].a] || tainted[p[i].b]) &&
        !(clearly_fine(&p[i]) && clearly_fine(&q[i])))
      add_pair(la, lb, &count, p[i].a, p[i].b);
  for (size_t i = 0; i < np; i++) {
    for (int end = 0; suspect[i] && end < 2; end++) {
      const int u = end ? p[i].b : p[i].a;
      int cleared = 0;
      for (size_t j = 0; j < np; j++) cleared |= !suspect[j] && (p[j].a == u || p[j].b == u);
      if (cleared) continue;
      for (size_t w = 0; w < nu; w++) {
        if (tainted[w] || (int)w == u) continue;
        int measured = 0;
        for (size_t j = 0; j < np; j++)
          measured |= (p[j].a == u && p[j].b == (int)w) || (p[j].b == u && p[j].a == (int)w);
        if (measured) continue;
        add_pair(la, lb, &count, u, (int)w);
        break;
      }
    }
  }
  free(suspect);
  free(tainted);
  if (count == 0) {
    free(la);
    free(lb);
    return GS_OK;
  }
  *a = la;
  *b = lb;
  *n = count;
  return GS_OK;
}

const char *const gs_pairs_judged_names[] = {"fine", "link", "undecided", "unit", "inconclusive"};

/* A pair's state in one kind: fine, slow, unclear (a suspect of the
 * rounds, neither alone), or weak (fine in the rounds, not alone: no
 * evidence either way). */
enum { STATE_FINE, STATE_SLOW, STATE_UNCLEAR, STATE_WEAK };

/* The state of a pair measured alone (r): slow, clearly fine, or unclear. */
static int alone_state(const gs_pairs_result *r) {
  if (r->slow) return STATE_SLOW;
  return clearly_fine(r) ? STATE_FINE : STATE_UNCLEAR;
}

/* The state of a pair from the rounds (r, NULL for a pair the confirming
 * round added) and alone (q, NULL when not measured again). */
static int pair_state(const gs_pairs_result *r, const gs_pairs_result *q) {
  if (!r) return alone_state(q);
  // A suspect: slow, or slower than the threshold without the interval
  // to show it (then unclear unless measured again).
  if (gs_pairs_suspect(r)) return q ? alone_state(q) : r->slow ? STATE_SLOW : STATE_UNCLEAR;
  // Not slow and at or below the threshold in the rounds; alone too, when
  // measured again (a neighbour, a reference), else no evidence.
  if (!q || (!q->slow && q->ratio <= 1.0 + GS_PAIRS_THRESHOLD)) return STATE_FINE;
  return STATE_WEAK;
}

/* 1 when unit u has a pair other than `except` in state `want`. */
static int has_state(const gs_pairs_decision *d, const int *state, size_t except, int u, int want) {
  for (size_t j = 0; j < d->n_pairs; j++)
    if (j != except && state[j] == want && (d->a[j] == u || d->b[j] == u)) return 1;
  return 0;
}

/* 1 when unit u has a pair other than `except`. */
static int has_other(const gs_pairs_decision *d, size_t except, int u) {
  for (size_t j = 0; j < d->n_pairs; j++)
    if (j != except && (d->a[j] == u || d->b[j] == u)) return 1;
  return 0;
}

/* The pairs of the decision: the rounds', then the ones confirm added. */
static gs_status decision_pairs(const gs_pairs_verdict rounds[2], const gs_pairs_verdict *confirm,
                                gs_pairs_decision *d) {
  const size_t np = rounds[0].n_pairs, nc = confirm ? confirm[0].n_pairs : 0;
  d->n_units = rounds[0].n_units;
  const size_t most = np + nc ? np + nc : 1;
  d->a = malloc(most * sizeof *d->a);
  d->b = malloc(most * sizeof *d->b);
  d->alone = malloc(most * sizeof *d->alone);
  d->judged = calloc(most, sizeof *d->judged);
  d->unit = calloc(d->n_units ? d->n_units : 1, sizeof *d->unit);
  if (!d->a || !d->b || !d->alone || !d->judged || !d->unit)
    return gs_error(GS_ERR_NOMEM, "pairs: out of memory for %zu pairs", most);
  for (size_t i = 0; i < np; i++) {
    d->a[i] = rounds[0].pairs[i].a;
    d->b[i] = rounds[0].pairs[i].b;
    d->alone[i] = -1;
  }
  d->n_pairs = np;
  for (size_t c = 0; c < nc; c++) {
    const gs_pairs_result *r = &confirm[0].pairs[c];
    if (r->a < 0 || r->b < 0 || (size_t)r->a >= d->n_units || (size_t)r->b >= d->n_units)
      return gs_error(GS_ERR_USAGE, "pairs: the confirming pair (%d, %d) of %zu units", r->a, r->b,
                      d->n_units);
    long i = find_pair(d->a, d->b, d->n_pairs, r->a, r->b);
    if (i < 0) {
      i = (long)d->n_pairs++;
      d->a[i] = r->a;
      d->b[i] = r->b;
    }
    d->alone[i] = (int)c;
  }
  return GS_OK;
}

/* See check_pairs.h. */
gs_status gs_pairs_decide(const gs_pairs_verdict rounds[2], const gs_pairs_verdict *confirm,
                          gs_pairs_decision *out) {
  memset(out, 0, sizeof *out);
  gs_status st = decision_pairs(rounds, confirm, out);
  const size_t n = out->n_pairs, np = rounds[0].n_pairs;
  int *state = st == GS_OK ? malloc(2 * (n ? n : 1) * sizeof *state) : NULL;
  if (st == GS_OK && !state) st = gs_error(GS_ERR_NOMEM, "pairs: out of memory");
  if (st != GS_OK) {
    gs_pairs_decision_free(out);
    return st;
  }
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; i < n; i++) {
      const int c = out->alone[i];
      state[(size_t)k * n + i] = pair_state(i < np ? &rounds[k].pairs[i] : NULL,
                                            c >= 0 ? &confirm[k].pairs[c] : NULL);
    }
  for (size_t u = 0; u < out->n_units; u++)
    for (int k = 0; k < 2; k++) {
      size_t measured = 0, slow = 0;
      for (size_t i = 0; i < n; i++) {
        if ((size_t)out->a[i] != u && (size_t)out->b[i] != u) continue;
        measured++;
        slow += state[(size_t)k * n + i] == STATE_SLOW;
      }
      out->unit[u] |= measured >= 2 && slow == measured;
    }
  for (size_t i = 0; i < n; i++) {
    gs_pairs_judged best = GS_PAIRS_FINE;
    for (int k = 0; k < 2; k++) {
      const int *sk = state + (size_t)k * n, s = sk[i];
      const int a = out->a[i], b = out->b[i];
      gs_pairs_judged j = GS_PAIRS_FINE;
      if (s == STATE_FINE || s == STATE_WEAK)
        j = GS_PAIRS_FINE;
      else if (out->unit[a] || out->unit[b])
        j = GS_PAIRS_UNIT;
      else if (s == STATE_UNCLEAR)
        j = GS_PAIRS_INCONCLUSIVE;
      else {
        // A link needs each unit clearly fine with another partner; a unit
        // with other pairs, none clearly fine, leaves it open.
        const int fa = has_state(out, sk, i, a, STATE_FINE), fb = has_state(out, sk, i, b, STATE_FINE);
        const int oa = !fa && has_other(out, i, a), ob = !fb && has_other(out, i, b);
        j = fa && fb ? GS_PAIRS_LINK : oa || ob ? GS_PAIRS_INCONCLUSIVE : GS_PAIRS_UNDECIDED;
      }
      // unit > link > undecided > inconclusive > fine
      static const int rank_of[] = {0, 3, 2, 4, 1};
      if (rank_of[j] > rank_of[best]) best = j;
    }
    out->judged[i] = best;
    out->links += best == GS_PAIRS_LINK;
    out->undecided += best == GS_PAIRS_UNDECIDED;
    out->inconclusive += best == GS_PAIRS_INCONCLUSIVE;
  }
  for (size_t u = 0; u < out->n_units; u++) out->units += (size_t)out->unit[u];
  free(state);
  out->overall = out->units || out->links ? "fail"
                 : out->undecided         ? "warn"
                 : out->inconclusive      ? "inconclusive"
                                          : "pass";
  return GS_OK;
}

/* See check_pairs.h. */
void gs_pairs_decision_free(gs_pairs_decision *d) {
  if (!d) return;
  free(d->a);
  free(d->b);
  free(d->alone);
  free(d->judged);
  free(d->unit);
  memset(d, 0, sizeof *d);
}

/* See check_pairs.h. */
void gs_pairs_reason(const gs_pairs_decision *d, const gs_pairs_verdict rounds[2],
                     const gs_pairs_verdict *confirm, const gs_pairs_host *host, char *buf,
                     size_t size) {
  if (size == 0) return;
  buf[0] = '\0';
  // The first inconclusive pair unclear itself, else the first one made
  // inconclusive by an unclear pair beside it.
  const size_t np = rounds[0].n_pairs;
  size_t first = d->n_pairs;
  int unclear = 0;
  for (size_t i = 0; i < d->n_pairs && !unclear; i++) {
    if (d->judged[i] != GS_PAIRS_INCONCLUSIVE) continue;
    for (int k = 0; k < 2; k++) {
      const gs_pairs_result *q = d->alone[i] >= 0 && confirm ? &confirm[k].pairs[d->alone[i]] : NULL;
      if (i < np || q) unclear |= pair_state(i < np ? &rounds[k].pairs[i] : NULL, q) == STATE_UNCLEAR;
    }
    if (unclear || first == d->n_pairs) first = i;
  }
  if (first == d->n_pairs) return;
  size_t at = 0;
#define PUT(...)                                                            \
  do {                                                                      \
    const int w = snprintf(buf + at, size - at, __VA_ARGS__);               \
    at = w < 0 ? at : at + (size_t)w >= size ? size - 1 : at + (size_t)w; \
  } while (0)
  if (host->cpus > 0 && host->ranks > host->cpus)
    PUT("%d ranks share %d CPUs of host %s", host->ranks, host->cpus, host->host);
  else if (host->cpus > 0)
    PUT("%d ranks on %d CPUs of host %s", host->ranks, host->cpus, host->host);
  else
    PUT("host %s", host->host);
  if (isfinite(host->load_average)) PUT(" (load average %.1f)", host->load_average);
  PUT(": %ss %d and %d", host->unit, d->a[first], d->b[first]);
  static const char *const kinds[2] = {"all-reduce", "copy"};
  const int c = d->alone[first];
  for (int k = 0; k < 2; k++) {
    const gs_pairs_result *r = first < np ? &rounds[k].pairs[first] : NULL;
    const gs_pairs_result *q = c >= 0 && confirm ? &confirm[k].pairs[c] : NULL;
    if (r && !gs_pairs_suspect(r)) continue;
    PUT(", %s", kinds[k]);
    if (r) PUT(" %.2fx [%.2f, %.2f] in the rounds", r->ratio, r->low, r->high);
    if (q) PUT("%s %.2fx [%.2f, %.2f] alone", r ? "," : "", q->ratio, q->low, q->high);
  }
  PUT(unclear ? ": neither clearly slow nor clearly fine"
              : ": slow, but a %s of it has no pair clearly fine beside it", host->unit);
  if (d->inconclusive > 1) PUT(" (and %zu more pair(s))", d->inconclusive - 1);
#undef PUT
}
