/* The host side of llm's device-stamped arrivals (llm_stamps.h). */
#include "workloads/llm/llm_stamps.h"

#include <math.h>

#include "core/check.h"

gs_status gs_llm_clock_pick(const gs_llm_clock_trial *trials, size_t n, gs_llm_clock_anchor *out) {
  double best = INFINITY;
  for (size_t i = 0; i < n; i++) {
    const gs_llm_clock_trial *t = &trials[i];
    const double width = t->after - t->before;
    if (t->device_ns == 0 || !isfinite(width) || width < 0.0 || width >= best) continue;
    best = width;
    *out = (gs_llm_clock_anchor){0.5 * (t->before + t->after), t->device_ns, 0.5 * width};
  }
  if (isinf(best))
    return gs_error(GS_ERR_CUDA, "no usable reading of the GPU clock in %zu tries", n);
  return GS_OK;
}

double gs_llm_clock_host(const gs_llm_clock_anchor *a, uint64_t ns) {
  // The difference as a signed count, so a stamp before the anchor works.
  const int64_t since = (int64_t)(ns - a->device_ns);
  return a->host + (double)since * 1e-9;
}

gs_status gs_llm_stamps_take(const volatile unsigned long long *ring, uint64_t from, uint64_t to,
                             const gs_llm_clock_anchor *a, double offset, gs_arrival_rank *into) {
  if (to < from || to - from > GS_LLM_STAMP_SLOTS)
    GS_BUG("llm arrival stamps: slots %llu..%llu of a ring of %u", (unsigned long long)from,
           (unsigned long long)to, GS_LLM_STAMP_SLOTS);
  GS_TRY(gs_arrival_reserve(into, (size_t)(to - from)));
  for (uint64_t s = from; s < to; s++) {
    const uint64_t at = 2 * (s % GS_LLM_STAMP_SLOTS), in = ring[at], out = ring[at + 1];
    const double entry = in ? gs_llm_clock_host(a, in) + offset : NAN;
    const double exit = out ? gs_llm_clock_host(a, out) + offset : NAN;
    GS_TRY(gs_arrival_append(into, entry, exit));
  }
  return GS_OK;
}
