/* The judgement of `gpuscale check` (docs/check.md): the node's passive
 * state (core/health.h) into pass/warn/fail findings, each failure or
 * warning with the action an operator takes ("drain: NVLink 3 of GPU 2
 * down"). Data in, data out: it reads no device, so a test or a fleet can
 * judge a state built by hand or stored. */
#ifndef GS_REPORT_VERDICT_CHECK_H
#define GS_REPORT_VERDICT_CHECK_H

#include <stddef.h>

#include "core/health.h"
#include "core/status.h"
#include "report/verdict/verdict.h"

/* One check of one GPU (or of the node). */
typedef struct {
  const char *check;           /* stable key: "inventory", "software", "ecc", "retired_pages",
                                  "row_remap", "nvlink", "pcie", "clocks" */
  int gpu;                     /* NVML index; -1 for the node */
  gs_check_state state;
  char detail[400];            /* the figures, or why not applicable */
  char action[GS_TEXT_LONG];   /* "verb: what" for warn and fail; "" otherwise */
} gs_health_finding;

typedef struct {
  int applicable;              /* 0: no GPU to check; `why` says why */
  char why[GS_TEXT_LONG];
  gs_check_state overall;      /* the worst finding; n/a when not applicable */
  size_t passed, warned, failed;
  size_t n;
  gs_health_finding *items;    /* owned */
} gs_health_verdict;

/* Judges `s` at level 1. `expect_gpus` > 0 demands that many GPUs (NVML's
 * count); 0 does not. Not applicable (exit 0) when NVML sees no GPU and
 * CUDA none either. Fails only when memory runs out; free `v` with
 * gs_health_verdict_free, also after a failure. */
gs_status gs_health_judge(const gs_node_state *s, size_t expect_gpus, gs_health_verdict *v);

void gs_health_verdict_free(gs_health_verdict *v);

/* GS_OK for pass or not applicable, GS_NODE_WARN for warn, GS_NODE_FAIL
 * for fail, each with an error naming the failed or warned checks. */
gs_status gs_health_verdict_status(const gs_health_verdict *v);

#endif
