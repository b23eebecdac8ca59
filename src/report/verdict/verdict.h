/* The node verdict (verdict.c): the pass/warn/fail table of the machine
 * that `suite` prints and `report` shows (docs/verdict.md), judged from the
 * report's documents only. */
#ifndef GS_REPORT_VERDICT_H
#define GS_REPORT_VERDICT_H

#include <stddef.h>

#include "core/status.h"
#include "report/analyze/machine.h"
#include "report/analyze/report.h"

/* Thresholds of the node verdict; docs/verdict.md says where each comes
 * from. Shares are of the link's figure (theoretical NVLink bandwidth per
 * direction from info; for PCIe pairs the median measured pair). */
#define GS_VERDICT_P2P_PASS 0.80       /* copy-engine copy / link figure: pass at or above */
#define GS_VERDICT_P2P_FAIL 0.60       /* ... fail below */
#define GS_VERDICT_PEER_PASS 0.90      /* PCIe pair / median pair of its link word */
#define GS_VERDICT_PEER_FAIL 0.75
#define GS_VERDICT_ALLREDUCE_PASS 0.65 /* best allreduce busbw / link figure */
#define GS_VERDICT_ALLREDUCE_FAIL GS_REPORT_LOW_BUSBW
/* A GPU at its software power cap whose mean SM clock over a measurement
 * stays at or above this share of its maximum SM clock is at its power
 * limit, working (pass); below it, or a busy GPU (>= 50% utilization) that
 * slow with no cap and no idleness reported, warns (docs/verdict.md). */
#define GS_VERDICT_CLOCK_HELD 0.70

typedef enum {
  GS_CHECK_NA = 0, /* cannot apply here; the detail says why */
  GS_CHECK_PASS,
  GS_CHECK_WARN,
  GS_CHECK_FAIL
} gs_check_state;

/* "n/a", "pass", "warn", "fail". */
const char *gs_check_state_name(gs_check_state state);

#define GS_VERDICT_CHECKS_MAX 24

typedef struct {
  char name[48];               /* e.g. "GPUs identical", "throughput mlp" */
  gs_check_state state;
  char detail[400];            /* the figures, the threshold, or why not applicable */
} gs_node_check;

typedef struct {
  int present;                 /* 0: the report holds no info document: no verdict */
  const char *host;            /* the inventory's host */
  gs_check_state overall;      /* the worst state; n/a when no check applies */
  size_t n;
  gs_node_check checks[GS_VERDICT_CHECKS_MAX];
} gs_node_verdict;

/* The node verdict of the machine described by `r`'s documents: its info
 * document (the inventory), p2p document, coll document and workload
 * documents; ingested documents take no part. present 0 when `r` holds no
 * info document. Expected GPU count: r->expect_gpus (0: not given). Used by
 * `suite` and `report` alike, so both give one machine one verdict. */
void gs_report_node_verdict(const gs_report *r, gs_node_verdict *out);

/* GS_OK, or GS_NODE_FAIL with an error naming the failed checks when the
 * verdict is fail. */
gs_status gs_node_verdict_status(const gs_node_verdict *v);

#endif
