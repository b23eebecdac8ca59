/* The highest rate meeting the latency targets (see rate_search.h). */
#include "workloads/llm/rate_search.h"

#include <math.h>
#include <string.h>

#include "core/check.h"

/* Where each probe goes beside the interpolated crossing, as a share of the
 * tolerance: two probes this far either side of an exact estimate leave a
 * bracket within the tolerance. */
#define GS_RATE_SEARCH_BESIDE 0.45

/* Two met rates whose inverse ratios differ by at most this share are a
 * flat side: the latency did not grow between them. */
#define GS_RATE_SEARCH_FLAT 0.10

/* Going down without a rate met: a probe whose finite ratio is not below
 * this share of the previous one's shows that waiting is not what misses
 * the targets (the search stops: unreachable). An infinite ratio (requests
 * that never finished: overload) says nothing of that. */
#define GS_RATE_SEARCH_GAIN 0.9

/* The inverse of a probe's ratio: 1 at the targets, 0 for requests that
 * never finished, linear in the rate for a queue (latency ~ 1 / (1 - u)). */
static double inverse(double ratio) {
  if (!(ratio > 0.0)) return 1e12;
  return isfinite(ratio) ? 1.0 / ratio : 0.0;
}

/* The rate where the line through (r1, y1) and (r2, y2) reaches y = 1;
 * NaN when it is flat. */
static double crossing(double r1, double y1, double r2, double y2) {
  if (y1 == y2) return NAN;
  return r1 + (1.0 - y1) * (r2 - r1) / (y2 - y1);
}

static double clamp(double x, double lo, double hi) {
  return isfinite(x) ? (x < lo ? lo : x > hi ? hi : x) : NAN;
}

/* The next rate outside a bracket: from the two probes on the one side
 * (a and b, b the nearer to the unknown crossing) the extrapolated
 * crossing, its step from b kept within [1.5x, 8x] (`up`) or its inverse;
 * without a second probe 4x up, and down 4x, or by b's ratio where it
 * missed by a finite one. */
static double outside(int up, int have_a, double ra, double ya, double rb, double yb) {
  double factor = up ? 4.0 : 0.25;
  // One rate missed by a finite ratio: down by that ratio, where a load
  // (which grows as the rate) would meet its limit.
  if (!up && !have_a && yb > 0.0 && yb < 1.0) factor = clamp(yb, 1.0 / 8.0, 1.0 / 1.5);
  if (have_a) {
    const double e = crossing(ra, ya, rb, yb);
    if (isfinite(e) && e > 0.0)
      factor = up ? clamp(e / rb, 1.5, 8.0) : clamp(e / rb, 1.0 / 8.0, 1.0 / 1.5);
  }
  return rb * factor;
}

/* What misses the targets is a load (core/slo: a rate above the layout's
 * pace, whose ratio is the load over its limit and grows in proportion to
 * the rate) rather than the latency, when the two highest met rates have
 * inverse ratios within GS_RATE_SEARCH_FLAT of each other (flat: the
 * latency did not grow), or the two lowest missed rates, both missed by a
 * finite ratio, have ratios in proportion to their rates within it
 * (proportional). NaN rates are missing probes. */
static int flat(double lo, double ylo, double lo2, double ylo2) {
  return !isnan(lo) && !isnan(lo2) && fabs(ylo2 - ylo) <= GS_RATE_SEARCH_FLAT * ylo;
}

static int proportional(double hi, double yhi, double hi2, double yhi2) {
  if (isnan(hi) || isnan(hi2) || !(yhi > 0.0 && yhi < 1.0) || !(yhi2 > 0.0 && yhi2 < 1.0))
    return 0;
  // ratio = 1 / y: in proportion when ratio(hi2) / ratio(hi) = hi2 / hi.
  return fabs((yhi / yhi2) / (hi2 / hi) - 1.0) <= GS_RATE_SEARCH_FLAT;
}

gs_status gs_rate_search_run(const gs_rate_search_spec *spec, gs_rate_probe_fn probe, void *ctx,
                             gs_rate_search_result *out) {
  memset(out, 0, sizeof *out);
  out->best = out->low = out->high = NAN;
  if (!(spec->start > 0.0) || spec->max_probes < 1 ||
      spec->max_probes > GS_RATE_SEARCH_MAX_PROBES || !(spec->tolerance > 0.0))
    GS_BUG("rate search: start %g, %zu probes, tolerance %g", spec->start, spec->max_probes,
           spec->tolerance);
  double lo = NAN, ylo = 0.0, hi = NAN, yhi = 0.0;
  // The second-best probe on each side, for extrapolating outside a bracket.
  double lo2 = NAN, ylo2 = 0.0, hi2 = NAN, yhi2 = 0.0;
  double rate = spec->start;
  double last_width = NAN; // of the bracket when the previous probe in it was chosen
  while (out->n < spec->max_probes) {
    double ratio = NAN;
    GS_TRY(probe(ctx, rate, &ratio));
    out->rate[out->n] = rate;
    out->ratio[out->n] = ratio;
    out->n++;
    const double y = inverse(ratio);
    if (ratio <= 1.0) {
      if (isnan(lo) || rate > lo) {
        lo2 = lo, ylo2 = ylo;
        lo = rate, ylo = y;
      }
      if (!isnan(hi) && hi <= lo) hi = NAN; // noise: a met rate above a missed one
    } else if (isnan(lo) || rate > lo) {
      if (isnan(hi) || rate < hi) {
        hi2 = hi, yhi2 = yhi;
        hi = rate, yhi = y;
      }
    }
    if (!isnan(lo) && !isnan(hi) && hi - lo <= spec->tolerance * hi) {
      out->converged = 1;
      break;
    }
    if (isnan(hi)) {
      rate = outside(1, !isnan(lo2), lo2, ylo2, lo, ylo);
    } else if (isnan(lo) && !isnan(hi2) && isfinite(ratio) &&
               !(ratio < GS_RATE_SEARCH_GAIN * out->ratio[out->n - 2])) {
      // A lower rate missed by as much as a higher one: the latency is not
      // the queue's, no rate will meet the targets. Stop.
      out->unreachable = 1;
      break;
    } else if (isnan(lo) && proportional(hi, yhi, hi2, yhi2)) {
      rate = hi * yhi * (1.0 - GS_RATE_SEARCH_BESIDE * spec->tolerance);
    } else if (isnan(lo)) {
      rate = outside(0, !isnan(hi2), hi2, yhi2, hi, yhi);
    } else {
      // The crossing from the bracket's ends, or where the upper end never
      // finished (no slope there) from the two highest met probes; the
      // middle when neither gives one inside the bracket, or when the
      // last probe closed less than half of the bracket (a curve the line
      // fits badly, e.g. a step).
      double e = yhi > 0.0 ? crossing(lo, ylo, hi, yhi)
                 : !isnan(lo2) ? crossing(lo2, ylo2, lo, ylo) : NAN;
      // A load, not the latency, misses (see flat): the missed
      // rate's ratio says where it reaches 1, hi / ratio(hi). The line
      // through a flat met side puts it near hi: on 2 x H200 the search
      // answered 102/s [102, 132] where a dense sweep met 128/s.
      // With one rate on each side there is no telling, and the ratio's
      // own estimate goes first too: a queue's latency that missed puts it
      // below the crossing, where the next probe meets and the line takes over.
      const int first = isnan(lo2) && isnan(hi2);
      if ((first || flat(lo, ylo, lo2, ylo2) || proportional(hi, yhi, hi2, yhi2)) && yhi > 0.0 &&
          hi * yhi >= lo && hi * yhi < hi)
        e = hi * yhi;
      const double middle = hi > 2.0 * lo ? sqrt(lo * hi) : 0.5 * (lo + hi);
      const double width = hi - lo;
      if (isnan(e) || (width > 0.5 * last_width && !isnan(last_width))) e = middle;
      last_width = width;
      e = clamp(e, lo, hi);
      // Beside the estimate, on the side nearer an end: the probe that
      // can close the bracket with the end it is near.
      const double step = GS_RATE_SEARCH_BESIDE * spec->tolerance;
      rate = e - lo < hi - e ? e * (1.0 + step) : e * (1.0 - step);
      if (!(rate > lo && rate < hi)) rate = middle;
    }
  }
  out->best = out->low = lo;
  out->high = hi;
  return GS_OK;
}
