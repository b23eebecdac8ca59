/* Shared by the files of `gpuscale check`'s judgement (check.c, the passive
 * state; check_model.c, the GPU model's expected figures): the list of
 * findings being built. Not for use outside report/verdict/. */
#ifndef GS_REPORT_VERDICT_CHECK_PRIVATE_H
#define GS_REPORT_VERDICT_CHECK_PRIVATE_H

#include "report/verdict/check.h"

typedef struct {
  gs_health_verdict *v;
  size_t cap;
  int failed;                  /* out of memory */
} gs_health_builder;

/* Appends one finding with `detail` and no action; NULL when memory ran
 * out (b->failed is then set and later adds do nothing). */
gs_health_finding *gs_health_add(gs_health_builder *b, const char *check, int gpu,
                                 gs_check_state state, const char *detail);

/* Sets the action of `f` (NULL allowed: nothing happens) from a format. */
void gs_health_action(gs_health_finding *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* 1 when two PCI bus ids name one device, whatever the width of their
 * domains ("0000:18:00.0" from CUDA, "00000000:18:00.0" from NVML). */
int gs_health_same_bus(const char *a, const char *b);

/* The median of the finite values among x[0..n); NaN when none (or when
 * memory runs out). */
double gs_health_median(const double *x, size_t n);

/* The findings of one GPU against its model's expected figures
 * (check_model.c): "model", then, for a model found, "memory_size",
 * "pcie_slot", "nvlink_ports", "power_limit", "max_clocks". */
void gs_health_judge_model(gs_health_builder *b, const gs_gpu_health *h,
                           const gs_check_models *models);

/* Level 2's findings (check_stress.c): per NVML GPU "nvlink_errors" (the
 * counters' change during the check), "stress" (n/a without a CUDA
 * device), "budget" when a check was not started, then per GPU "membw",
 * "host_bw", "p2p" and "workloads", and "allreduce" for the node; at
 * level 1 (s->stress.level 1) those of them its short p2p and all-reduce
 * give. Nothing when s->stress.level is 0. */
void gs_health_judge_stress(gs_health_builder *b, const gs_node_state *s,
                            const gs_check_models *models);

/* Level 3's findings (check_burn.c): one "burn" per GPU, or one n/a for
 * the node without a CUDA device. Nothing when s->burn.level < 3. */
void gs_health_judge_burn(gs_health_builder *b, const gs_node_state *s);

#endif
