/* The cost of recording arrival times from blocks side by side (see
 * arrival_cost.h). */
#include "core/arrival_cost.h"

#include <math.h>
#include <stdlib.h>

#include "core/check.h"
#include "core/stats.h"

int gs_arrival_cost_records(uint64_t index) {
  int ones = 0;
  for (; index; index &= index - 1) ones++;
  return (ones & 1) == 0;
}

/* Mean of v[0..n); NaN when a value is not finite. */
static double mean_of(const double *v, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; i++) sum += v[i];
  return isfinite(sum) ? sum / (double)n : NAN;
}

gs_status gs_arrival_cost_of(const double *step_seconds, size_t n, size_t block,
                             gs_arrival_cost *out) {
  if (block < 2 || n % (4 * block) != 0)
    GS_BUG("%zu iterations are no whole quartets of blocks of %zu", n, block);
  *out = (gs_arrival_cost){.block = block, .target = GS_ARRIVAL_COST_TARGET,
                           .cost = NAN, .low = NAN, .high = NAN, .min = NAN, .max = NAN,
                           .verdict = GS_ARRIVAL_COST_UNDECIDED};
  const size_t quartets = n / (4 * block);
  double *d = malloc((quartets ? quartets : 1) * sizeof *d);
  if (!d) return gs_error(GS_ERR_NOMEM, "cannot allocate %zu pairs of blocks", quartets);
  double on_sum = 0.0, off_sum = 0.0;
  size_t kept = 0;
  for (size_t q = 0; q < quartets; q++) {
    double on = 0.0, off = 0.0;
    for (size_t j = 0; j < 4; j++) {
      const size_t b = 4 * q + j;
      // A block's first iteration holds the ranks' skew leaving the
      // barrier that begins it, alike in both kinds: left out.
      const double m = mean_of(step_seconds + b * block + 1, block - 1);
      if (gs_arrival_cost_records(b))
        on += 0.5 * m;
      else
        off += 0.5 * m;
    }
    if (!(off > 0.0) || !isfinite(off) || !isfinite(on)) continue;
    d[kept++] = on / off - 1.0;
    on_sum += on;
    off_sum += off;
  }
  gs_status st = GS_OK;
  if (kept < GS_ARRIVAL_COST_MIN_PAIRS) {
    st = gs_error(GS_ERR_UNSUPPORTED, "%zu of %zu pairs of blocks were timed: the cost's interval "
                  "needs %d", kept, quartets, GS_ARRIVAL_COST_MIN_PAIRS);
  } else {
    out->pairs = kept;
    out->on_seconds = on_sum / (double)kept;
    out->off_seconds = off_sum / (double)kept;
    gs_stats_median_interval(d, kept, &out->cost, &out->low, &out->high);
    out->min = d[0];
    out->max = d[kept - 1];
    out->verdict = out->high < out->target  ? GS_ARRIVAL_COST_UNDER
                   : out->low > out->target ? GS_ARRIVAL_COST_OVER
                                            : GS_ARRIVAL_COST_UNDECIDED;
  }
  free(d);
  return st;
}

const char *gs_arrival_cost_verdict_name(gs_arrival_cost_verdict verdict) {
  switch (verdict) {
  case GS_ARRIVAL_COST_UNDER: return "under";
  case GS_ARRIVAL_COST_OVER: return "over";
  case GS_ARRIVAL_COST_UNDECIDED: break;
  }
  return "undecided";
}
