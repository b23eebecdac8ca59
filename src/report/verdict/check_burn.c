/* Level 3 of `gpuscale check`: the burn-in's record (core/health.h,
 * gs_node_burn) into one finding per GPU with an action: wrong results,
 * a CUDA failure, hardware clock event reasons under load, and GEMM
 * throughput against the node's median GPU. See docs/check.md, "Level 3". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/verdict/check_private.h"

/* Clock event reason bits (nvmlClocksEventReason*) judged under load. */
enum { HW_SLOWDOWN = 0x8, SW_THERMAL = 0x20, HW_THERMAL = 0x40, HW_POWER_BRAKE = 0x80 };

/* The GPU number findings use: NVML's index when NVML knows the bus id. */
static int burn_gpu_number(const gs_node_state *s, const gs_gpu_burn *g) {
  for (size_t i = 0; i < s->gpu_count; i++)
    if (gs_health_same_bus(g->pci_bus_id, s->gpus[i].pci_bus_id)) return s->gpus[i].index;
  return g->device;
}

static void judge_one(gs_health_builder *b, const gs_node_state *s, const gs_gpu_burn *g,
                      double median_tflops) {
  const int gpu = burn_gpu_number(s, g);
  char detail[400];
  int n = snprintf(detail, sizeof detail, "%llu GEMMs at %.0f TFLOP/s, %llu triads, %llu checks, "
                   "%llu wrong in %.0f s", g->gemms, g->gemm_tflops, g->triads, g->checks,
                   g->mismatches, g->seconds);
  if (n > 0 && g->power_known)
    n += snprintf(detail + n, sizeof detail - (size_t)n, "; power mean %.0f W, max %.0f W",
                  g->power_mean_w, g->power_max_w);
  if (n > 0 && g->clock_known)
    n += snprintf(detail + n, sizeof detail - (size_t)n, "; SM clock min %.0f, mean %.0f MHz",
                  g->sm_clock_min_mhz, g->sm_clock_mean_mhz);
  if (n > 0 && g->temperature_known)
    n += snprintf(detail + n, sizeof detail - (size_t)n, "; max %.0f C", g->temperature_max_c);
  if (n > 0 && g->throttle_known)
    snprintf(detail + n, sizeof detail - (size_t)n, "; clock event reasons seen 0x%llx",
             g->throttle_seen);
  if (g->mismatches) {
    gs_health_action(gs_health_add(b, "burn", gpu, GS_CHECK_FAIL, detail),
                     "drain: GPU %d computed %llu wrong elements during the burn-in", gpu,
                     g->mismatches);
    return;
  }
  if (g->error[0]) {
    gs_health_action(gs_health_add(b, "burn", gpu, GS_CHECK_FAIL, detail),
                     "drain: GPU %d failed during the burn-in (%s)", gpu, g->error);
    return;
  }
  const unsigned long long r = g->throttle_known ? g->throttle_seen : 0;
  const char *hw = r & HW_SLOWDOWN      ? "hardware slowdown"
                   : r & HW_THERMAL     ? "hardware thermal slowdown"
                   : r & HW_POWER_BRAKE ? "the external power brake"
                                        : NULL;
  if (hw) {
    gs_health_action(gs_health_add(b, "burn", gpu, GS_CHECK_FAIL, detail),
                     "investigate cooling and power: GPU %d entered %s during the burn-in", gpu,
                     hw);
  } else if (r & SW_THERMAL) {
    gs_health_action(gs_health_add(b, "burn", gpu, GS_CHECK_WARN, detail),
                     "investigate cooling: GPU %d reached its thermal limit during the burn-in",
                     gpu);
  } else if (isfinite(median_tflops) && g->gemm_tflops < GS_CHECK_BURN_MEDIAN_FRACTION *
                                                              median_tflops) {
    gs_health_action(gs_health_add(b, "burn", gpu, GS_CHECK_WARN, detail),
                     "investigate: GPU %d's GEMM throughput %.0f TFLOP/s, %.0f%% of the node's "
                     "median GPU", gpu, g->gemm_tflops, 100 * g->gemm_tflops / median_tflops);
  } else {
    gs_health_add(b, "burn", gpu, GS_CHECK_PASS, detail);
  }
}

void gs_health_judge_burn(gs_health_builder *b, const gs_node_state *s) {
  const gs_node_burn *x = &s->burn;
  if (x->level < 3) return;
  if (x->why[0]) {
    gs_health_add(b, "burn", -1, GS_CHECK_NA, x->why);
    return;
  }
  double *t = calloc(x->n ? x->n : 1, sizeof *t);
  if (!t) {
    b->failed = 1;
    return;
  }
  for (size_t i = 0; i < x->n; i++)
    t[i] = x->gpus[i].ran && !x->gpus[i].error[0] && x->gpus[i].gemms ? x->gpus[i].gemm_tflops
                                                                      : NAN;
  const double median = gs_health_median(t, x->n);
  free(t);
  for (size_t i = 0; i < x->n; i++) judge_one(b, s, &x->gpus[i], median);
}
