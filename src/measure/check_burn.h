/* Level 3 of `gpuscale check`, the burn-in: on every CUDA GPU at once, for
 * --duration seconds, FP16 GEMMs on the tensor cores (near the power
 * limit) alternating with STREAM triads (memory traffic), every result
 * checked against its exact value throughout, while NVML's telemetry
 * records power, temperature, clocks and clock event reasons. The
 * judgement lies in report/verdict/check_stress.c. See docs/check.md,
 * "Level 3". */
#ifndef GS_MEASURE_CHECK_BURN_H
#define GS_MEASURE_CHECK_BURN_H

#include <stdint.h>

#include "core/health.h"
#include "core/status.h"

typedef struct {
  double duration_s;          /* the burn-in's length (default 600) */
  uint64_t gemm_n;            /* square GEMM size, a multiple of 64, at most 8192 */
  uint64_t triad_bytes;       /* per triad array */
  double check_interval_s;    /* results checked at least this often */
} gs_check_burn_options;

/* 600 s, 8192, 512 MiB, every 2 s. */
void gs_check_burn_options_default(gs_check_burn_options *o);

/* Runs the burn-in on every CUDA device into `burn` (the caller's;
 * burn->level set to 3), one thread per GPU, NVML sampled every second. No
 * CUDA device is no error (burn->why says why). A GPU's CUDA failure is
 * kept in its entry and the others go on. Fails only when memory runs out
 * or a thread cannot start (the started ones still run their time). Free
 * with gs_check_burn_free. */
gs_status gs_check_burn_run(const gs_check_burn_options *o, gs_node_burn *burn);

/* Releases what gs_check_burn_run allocated; accepts a zeroed struct. */
void gs_check_burn_free(gs_node_burn *burn);

#endif
