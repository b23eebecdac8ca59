/* The layouts of one run's GPUs (see llm_layouts.h). */
#include "workloads/llm/llm_layouts.h"

#include <math.h>
#include <stdlib.h>

#include "core/slo.h"

void gs_llm_layout_of(const gs_llm_summary *s, gs_llm_layout *out) {
  const double gpus = s->world_size > 0 ? (double)s->world_size : NAN;
  out->tp = s->tensor_parallel > 0 ? s->tensor_parallel : 1;
  out->pp = s->pipeline.stages > 1 ? (int)s->pipeline.stages : 1;
  out->replicas = s->world_size / (out->tp * out->pp);
  out->per_gpu = s->total.tokens_per_second / gpus;
  out->per_user = s->total.tpot.n && s->total.tpot.median > 0 ? 1.0 / s->total.tpot.median : NAN;
  const int targets = gs_slo_any(&s->slo);
  out->met = targets ? gs_slo_goodput_met(&s->goodput) && s->status == GS_OK : -1;
  out->goodput_per_gpu = targets ? s->goodput.tokens_per_second.value / gpus : NAN;
}

int gs_llm_layout_best(const gs_llm_layout *l, size_t n) {
  int best = -1;
  for (size_t i = 0; i < n; i++)
    if (l[i].met == 1 && (best < 0 || l[i].goodput_per_gpu > l[best].goodput_per_gpu))
      best = (int)i;
  return best;
}

void gs_llm_layouts_print(FILE *out, const gs_llm_summary *summaries, const int *summarized,
                          size_t count) {
  gs_llm_layout *l = calloc(count ? count : 1, sizeof *l);
  double *x = calloc(count ? count : 1, sizeof *x), *y = calloc(count ? count : 1, sizeof *y);
  int *on = calloc(count ? count : 1, sizeof *on);
  size_t n = 0;
  for (size_t i = 0; l && x && y && on && i < count; i++) {
    if (!summarized[i]) continue;
    gs_llm_layout_of(&summaries[i], &l[n]);
    x[n] = l[n].per_user;
    y[n] = l[n].per_gpu;
    n++;
  }
  if (n > 0) {
    gs_slo_frontier(x, y, n, on);
    fprintf(out, "  llm layouts of %d %s (per GPU: tokens/s of ok requests / GPUs; per user: 1 / "
                 "median TPOT; *: on the Pareto frontier of the two):\n",
            summaries[0].world_size, summaries[0].world_size == 1 ? "GPU or rank" : "GPUs or ranks");
    fprintf(out, "    %4s %4s %9s %12s %12s %8s %18s\n", "tp", "pp", "replicas", "per GPU",
            "per user", "targets", "goodput per GPU");
    for (size_t i = 0; i < n; i++)
      fprintf(out, "    %4d %4d %9d %12.1f %12.1f %8s %18.1f %s\n", l[i].tp, l[i].pp, l[i].replicas,
              l[i].per_gpu,
              l[i].per_user, l[i].met < 0 ? "-" : l[i].met ? "met" : "MISSED", l[i].goodput_per_gpu,
              on[i] ? "*" : "");
    const int best = gs_llm_layout_best(l, n);
    if (best >= 0)
      fprintf(out, "    best layout meeting the targets: tp %d pp %d (%d replicas), %.1f goodput "
                   "tokens/s per GPU\n", l[best].tp, l[best].pp, l[best].replicas,
              l[best].goodput_per_gpu);
    else
      fprintf(out, "    best layout meeting the targets: %s\n",
              l[0].met < 0 ? "no targets (--slo)" : "none met them");
  }
  free(l), free(x), free(y), free(on);
}
