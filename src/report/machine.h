/* The machine as the report reads it from its documents: the inventory and
 * topology of an `info` document (info.json: GPUs, link words, peer access,
 * theoretical NVLink bandwidth, NUMA and CPU affinity) and the link tests of
 * a `p2p` document (p2p.json), as typed views that point into the
 * documents; and the node verdict (verdict.c), the pass/warn/fail table of
 * the machine that `suite` prints and `report` shows (docs/verdict.md). */
#ifndef GS_REPORT_MACHINE_H
#define GS_REPORT_MACHINE_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "core/status.h"
#include "report/render.h"
#include "report/report.h"

/* GPUs of the inventory the report shows and checks; more are named in a
 * note and left out of the matrices. */
#define GS_MACHINE_GPUS_MAX 16

typedef struct {
  int index;                   /* CUDA ordinal */
  const char *name, *uuid, *bus_id, *compute_capability, *cpu_affinity; /* NULL: not recorded */
  double memory_bytes, sm_count, max_sm_clock_mhz, max_memory_clock_mhz, power_limit_watts;
  double numa_node;            /* NaN: not recorded */
} gs_machine_gpu;

/* The inventory of one `info` document; strings point into it. */
typedef struct {
  int present;                 /* 0: no info document among the report's files */
  size_t file;                 /* its index in gs_report.files */
  const char *host, *driver, *cuda_driver, *cuda_runtime, *nccl, *cpu_model, *cuda_status;
  const char *nvml_status;     /* why NVML is unavailable, or NULL */
  size_t n_gpus;               /* GPUs listed (all of them, also beyond the maximum) */
  size_t n_shown;              /* min(n_gpus, GS_MACHINE_GPUS_MAX) */
  gs_machine_gpu gpus[GS_MACHINE_GPUS_MAX];
  const char *links[GS_MACHINE_GPUS_MAX][GS_MACHINE_GPUS_MAX]; /* "NV18", "SYS", NULL unknown */
  int peer[GS_MACHINE_GPUS_MAX][GS_MACHINE_GPUS_MAX];          /* 1, 0, -1 unknown */
  double nvlink_bw[GS_MACHINE_GPUS_MAX][GS_MACHINE_GPUS_MAX];  /* bytes/s; NaN unknown */
} gs_machine;

/* Fills `m` from the first document of `r` whose command is "info"
 * (m->present 0 when there is none). */
void gs_machine_read(const gs_report *r, gs_machine *m);

/* 1 when document `file` of `r` is a p2p document (top-level "p2p"). */
int gs_machine_is_p2p(const gs_report *r, size_t file);

/* 1 when document `file` of `r` was written by `gpuscale ingest` (its
 * measurements come from another tool, not from this machine). */
int gs_machine_is_ingested(const gs_report *r, size_t file);

/* 1 when the report holds an info or a p2p document (what the machine
 * sections and the node verdict need). */
int gs_machine_any(const gs_report *r);

/* The NVLink count of a link word ("NV18" -> 18), 0 for a PCIe word or
 * NULL. */
int gs_machine_nvlinks(const char *word);

/* One measured cell of a p2p test: `*median` in the test's unit (NaN when
 * not measured), `*state` "ok", "skipped", a failure status, or NULL for
 * an empty cell (the diagonal, a pair not asked for). Cell (i, j) of a
 * matrix test is source i -> destination j; a per-GPU test uses j = 0. */
void gs_machine_p2p_cell(const cJSON *test, size_t i, size_t j, double *median,
                         const char **state);

/* The test named `name` of p2p document `doc`, or NULL. */
const cJSON *gs_machine_p2p_test(const cJSON *doc, const char *name);

/* ---- the node verdict ------------------------------------------------------ */

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

/* ---- rendering (render_machine.c) --------------------------------------------- */

/* Only the node verdict table of `r` (nothing when it has no info
 * document), in text, Markdown or HTML body form; for `suite`'s terminal. */
gs_status gs_report_render_node_verdict(FILE *out, const gs_report *r, gs_report_format format);

/* Adds "node_verdict" (null without an info document) and "p2p" (per p2p
 * document its tests' medians) to the report's JSON object `doc`. */
void gs_report_machine_json(const gs_report *r, cJSON *doc);

#endif
