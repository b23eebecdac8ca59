/* Level 2 of `gpuscale check`: the node under load, measured against the
 * GPU model's figures: per-GPU memory bandwidth by STREAM's triad
 * (p2p/membw), host-GPU bandwidth per GPU and copy-engine P2P bandwidth of
 * every ordered pair (p2p), an all-reduce sweep over every GPU (runner's
 * collective driver), each fixed-step workload's throughput on each GPU
 * alone (the runner). Each check keeps its time; a check not started
 * when the budget is spent is named in stress->over_budget. The judgement
 * lies in report/verdict/check_stress.c. See docs/check.md, "Level 2". */
#ifndef GS_MEASURE_CHECK_STRESS_H
#define GS_MEASURE_CHECK_STRESS_H

#include "core/health.h"
#include "core/status.h"
#include "p2p/p2p.h"

/* Level 1's copy size per pair and its all-reduce size: 64 MiB. */
#define GS_CHECK_SHORT_BYTES (64ull << 20)

/* Level 2's workload runs (GS_HEALTH_WORKLOAD_ROUNDS of them per workload
 * and GPU): timed steps for 0.05 s of wall time each and at least 5, so
 * that a workload of long steps costs 5 of them a run, not 20. */
#define GS_CHECK_WORKLOAD_RUN_SECONDS 0.05
#define GS_CHECK_WORKLOAD_MIN_STEPS 5

/* What level 2 runs, and the faults it rehearses. */
typedef struct {
  double deadline;                      /* gs_time_seconds() past which no check starts */
  double membw_slowdown[GS_P2P_MAX_GPUS]; /* --inject membw:gpu=G,factor=F; 1 = none */
  uint64_t membw_array_bytes;           /* per triad array (default 512 MiB) */
  uint64_t copy_bytes;                  /* per p2p and host copy (default 256 MiB) */
  int short_run;                        /* level 1: only one round of disjoint GPU pairs
                                           (64 MiB copies) and one 64 MiB all-reduce */
} gs_check_stress_options;

/* Defaults: no fault, deadline infinite, the sizes above. */
void gs_check_stress_options_default(gs_check_stress_options *o);

/* Parses one --inject value, "membw:gpu=G,factor=F" (G a CUDA ordinal
 * below 64, F in (0, 1): that GPU's triads take 1/F times as long), into
 * `o`. GS_ERR_USAGE naming what is wrong. */
gs_status gs_check_inject_parse(const char *text, gs_check_stress_options *o);

/* Runs level 2 on every CUDA device into `stress` (the caller's, zeroed;
 * stress->level set to 2), or with o->short_run level 1's short p2p and
 * all-reduce only (stress->level 1; docs/check.md, "Level 1"). No CUDA device is no error: stress->why says
 * why nothing ran. A measurement that fails keeps its error in its GPU's
 * entry and the rest still runs. Fails only when memory runs out or a
 * signal arrives. `phase` (may be NULL) receives what is being measured, for
 * a hang's message: -3 host bandwidth, -4 pairs, -6 the all-reduce, -7 the
 * workloads,
 * 1000 + ordinal a triad.
 * Free with gs_check_stress_free. */
gs_status gs_check_stress_run(const gs_check_stress_options *o, gs_node_stress *stress,
                              void (*phase)(int));

/* Releases what gs_check_stress_run allocated; accepts a zeroed struct. */
void gs_check_stress_free(gs_node_stress *stress);

#endif
