/* The machine as the report reads it from its documents: the inventory and
 * topology of an `info` document (info.json: GPUs, link words, peer access,
 * theoretical NVLink bandwidth, NUMA and CPU affinity) and the link tests of
 * a `p2p` document (p2p.json), as typed views that point into the
 * documents. The node verdict (verdict/verdict.h) judges them. */
#ifndef GS_REPORT_MACHINE_H
#define GS_REPORT_MACHINE_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "report/analyze/report.h"

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

#endif
