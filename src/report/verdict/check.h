/* The judgement of `gpuscale check` (docs/check.md): the node's passive
 * state (core/health.h) into pass/warn/fail findings, each failure or
 * warning with the action an operator takes ("drain: NVLink 3 of GPU 2
 * down"). Data in, data out: it reads no device, so a test or a fleet can
 * judge a state built by hand or stored. */
#ifndef GS_REPORT_VERDICT_CHECK_H
#define GS_REPORT_VERDICT_CHECK_H

#include <stddef.h>

#include "core/gpu_model.h"
#include "core/health.h"
#include "core/status.h"
#include "report/verdict/verdict.h"

/* One check of one GPU (or of the node). */
typedef struct {
  const char *check;           /* stable key: "inventory", "software", "ecc", "retired_pages",
                                  "row_remap", "nvlink", "pcie", "clocks", "model",
                                  "memory_size", "pcie_slot", "nvlink_ports", "power_limit",
                                  "max_clocks", level 2: "stress", "budget", "membw",
                                  "host_bw", "p2p", "allreduce", "workloads", "nvlink_errors", "xid";
                                  level 3:
                                  "burn" */
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

/* The expected figures a GPU is held to: the site's own (--expect FILE),
 * looked up first, then those shipped with gpuscale. Either may be NULL. */
typedef struct {
  const gs_gpu_models *site;
  const gs_gpu_models *shipped;
  char shipped_why[GS_TEXT_LONG]; /* why `shipped` is NULL ("" otherwise) */
} gs_check_models;

/* Fractions of a model's figure below which a check warns or fails
 * (docs/check.md, "Expected figures"): memory size and the highest clocks
 * and power limit are fixed by the board, so 5% covers rounding of the
 * published figure only. */
#define GS_CHECK_MEMORY_SIZE_FRACTION 0.95
#define GS_CHECK_POWER_LIMIT_FRACTION 0.95
#define GS_CHECK_MAX_CLOCK_FRACTION 0.95

/* Level 2 (docs/check.md, "Level 2"). Memory bandwidth: a GPU fails below
 * 75% of its model's figure (a healthy GPU's triad reaches 85-92% of it)
 * or below 90% of the node's median GPU. Host copies: warn below 70% of the
 * PCIe link's payload rate, fail below 50%. GPU pairs on NVLink models:
 * warn below 70% of the model's NVLink bandwidth per direction or 85% of
 * the node's median pair, fail below 50%. */
#define GS_CHECK_MEMBW_FRACTION 0.75
#define GS_CHECK_MEMBW_MEDIAN_FRACTION 0.90
#define GS_CHECK_HOST_WARN_FRACTION 0.70
#define GS_CHECK_HOST_FAIL_FRACTION 0.50
#define GS_CHECK_P2P_WARN_FRACTION 0.70
#define GS_CHECK_P2P_MEDIAN_FRACTION 0.85
#define GS_CHECK_P2P_FAIL_FRACTION 0.50
/* The all-reduce's bus bandwidth at 512 MiB on NVLink models: warn below
 * half the model's NVLink bandwidth per direction (NCCL's ring and NVLS
 * reach 75-85% of it on healthy 4- and 8-GPU boards). */
#define GS_CHECK_ALLREDUCE_FRACTION 0.50
/* Level 1's short all-reduce (64 MiB, 5 iterations): warn below 40% of the
 * model's NVLink bandwidth per direction (healthy H200 SXM nodes reach 57%
 * on 2 GPUs and 67% on 4 at 64 MiB: docs/results, coll-vs-torch). */
#define GS_CHECK_ALLREDUCE_SHORT_FRACTION 0.40
/* Each workload's throughput on a GPU alone against the node's median GPU,
 * judged from the ratio's 95% interval (docs/check.md, "Level 2"): warn
 * when the interval lies wholly below 95% (issue 30: "within 5% of the
 * median GPU"), fail when wholly below 80% (a GPU a fifth slower holds
 * every data-parallel step of the node back by a fifth). */
#define GS_CHECK_WORKLOAD_MEDIAN_FRACTION 0.95
#define GS_CHECK_WORKLOAD_FAIL_FRACTION 0.80
/* NVLink error counters under load (docs/check.md, "NVLink errors under
 * load"), each kind summed over a GPU's ports, as DCGM judges them: CRC
 * flit and CRC data errors fail at 100 per second of a kind over the
 * window between the two reads (DCGM's DCGM_LIMIT_MAX_NVLINK_CRC_ERROR
 * and its diag's nvlink_crc_error_threshold, "per RM recommendation") and
 * pass below; any recovery fails (DCGM diag's max_nvlink_recovery_errors
 * 0); any replay warns. */
#define GS_CHECK_NVLINK_CRC_RATE_FAIL 100.0
/* Level 3: a GPU's sustained GEMM throughput below 90% of the node's
 * median GPU warns (GPUs of one node at one power limit stay within a few
 * percent of each other). */
#define GS_CHECK_BURN_MEDIAN_FRACTION 0.90

/* The payload rate of one direction of a PCIe link, 10^9 bytes/s: the
 * lanes' transfer rate less the line code (gen 5 x16: 63.0). NaN for an
 * unknown generation (0 or above 6) or width 0. */
double gs_check_pcie_gbs(unsigned generation, unsigned width);

/* GPU i's throughput of workload w (gs_node_stress's indices) over the
 * node's median GPU's: *ratio is its rate over the reference GPU's (the
 * other GPU whose rate lies nearest the median of all GPUs' rates), and
 * [*low, *high] the ratio's 95% interval by the two-level bootstrap of
 * docs/statistics.md (the reference's mean step over GPU i's; rounds as
 * runs, steps within them). Returns 0, all NaN, when GPU i or every other
 * GPU lacks a rate; the bounds are NaN without step times or with fewer
 * than 2 steps a side. */
int gs_check_workload_ratio(const gs_node_stress *x, size_t w, size_t i, double *ratio,
                            double *low, double *high);

/* The figures `h` is held to, into *out: each figure the site's file
 * states for its NVML name, else the shipped file's; the model's name is
 * the site's when it lists the GPU. Returns 0 (out zeroed) when neither
 * lists it or `models` is NULL. out->nvml_names points into `models`. */
int gs_check_model_of(const gs_check_models *models, const gs_gpu_health *h, gs_gpu_model *out);

/* Judges `s` at level 1. `expect_gpus` > 0 demands that many GPUs (NVML's
 * count); 0 does not. `models` (may be NULL: no expected figures) holds
 * each GPU to its model's figures. Not applicable (exit 0) when NVML sees
 * no GPU and CUDA none either. Fails only when memory runs out; free `v`
 * with gs_health_verdict_free, also after a failure. */
gs_status gs_health_judge(const gs_node_state *s, size_t expect_gpus,
                          const gs_check_models *models, gs_health_verdict *v);

void gs_health_verdict_free(gs_health_verdict *v);

/* GS_OK for pass or not applicable, GS_NODE_WARN for warn, GS_NODE_FAIL
 * for fail, each with an error naming the failed or warned checks. */
gs_status gs_health_verdict_status(const gs_health_verdict *v);

#endif
