/* The passive health state of one GPU as plain data: what NVML reports
 * about its memory errors, NVLink ports, PCIe link and clock event reasons,
 * read without changing anything. Filled by platform/nvml (or by hand in
 * tests) and judged by report/verdict/check.c, so it lives in core, which
 * both may include. Every group has a `has_*` flag: 0 means the driver or
 * the GPU did not report it (JSON null), never "zero errors". */
#ifndef GS_HEALTH_H
#define GS_HEALTH_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/types.h"

/* NVLink ports scanned per GPU (NVML_NVLINK_MAX_LINKS of current drivers). */
#define GS_HEALTH_MAX_LINKS 18

/* NVLink data-link error counters of one port (nvmlNvLinkErrorCounter_t). */
typedef struct {
  int has_counters;                     /* 0: the driver gave none */
  unsigned long long replay, recovery, crc_flit, crc_data;
} gs_health_link_errors;

typedef struct {
  int index;                            /* NVML's device index */
  char pci_bus_id[GS_TEXT_SHORT];
  char name[GS_TEXT_LONG];
  char uuid[GS_TEXT_SHORT];

  /* ECC error counts, device memory and caches together: volatile since the
   * driver loaded, aggregate over the GPU's life. */
  int has_ecc_volatile, has_ecc_aggregate;
  unsigned long long ecc_volatile_corrected, ecc_volatile_uncorrected;
  unsigned long long ecc_aggregate_corrected, ecc_aggregate_uncorrected;

  /* Page retirement (GPUs before Ampere): pages retired for repeated
   * single-bit and for double-bit errors, and whether one waits for a
   * driver reload. */
  int has_retired_pages, has_retired_pending;
  unsigned retired_sbe, retired_dbe;
  int retired_pending;

  /* Row remapping (Ampere and later). */
  int has_remap;
  unsigned remap_corrected, remap_uncorrected; /* rows remapped for each kind */
  int remap_pending;                    /* a remap waits for a GPU reset */
  int remap_failed;                     /* a remap failed: no spare row left */

  /* NVLink ports: port_count = last port NVML answered for + 1. */
  size_t port_count;
  int port_present[GS_HEALTH_MAX_LINKS]; /* NVML answered for this port */
  int link_up[GS_HEALTH_MAX_LINKS];
  gs_health_link_errors link_errors[GS_HEALTH_MAX_LINKS];

  /* Level 2: the same counters read again after the load, so that errors
   * counted during the check are told from those since boot. */
  int has_link_errors_after;
  gs_health_link_errors link_errors_after[GS_HEALTH_MAX_LINKS];
  /* When the counters were read (gs_time_seconds(), monotonic), and the
   * seconds between the two reads: the window their rates are taken over
   * (docs/check.md, "NVLink errors under load"). */
  double read_at;
  double link_errors_seconds;

  /* PCIe link now and the most this GPU and slot allow. */
  int has_pcie;
  unsigned pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;

  /* Current clock event ("throttle") reasons, NVML's bit mask. */
  int has_clock_events;
  unsigned long long clock_events;

  /* What the GPU is, against its model's expected figures (gs_gpu_model):
   * memory size, the power limit now enforced, the highest clocks. */
  int has_memory_total, has_power_limit, has_max_clocks;
  unsigned long long memory_total_bytes;
  unsigned power_limit_mw;
  unsigned max_sm_clock_mhz, max_memory_clock_mhz;

  double read_seconds;                  /* time taken to read this GPU's state */
} gs_gpu_health;

/* What level 2 measured on one CUDA GPU (docs/check.md, "Level 2").
 * Bandwidths in 10^9 bytes/s; a measurement that failed keeps its error. */
typedef struct {
  char pci_bus_id[GS_TEXT_SHORT];       /* as CUDA writes it */
  int device;                           /* CUDA ordinal */
  int membw_done;                       /* 1 measured (ok or failed); 0 not reached */
  double membw_gbs;                     /* STREAM triad, median sample */
  double membw_slowdown;                /* injected factor (1 = none) */
  unsigned long long membw_mismatches;  /* wrong elements after the triads */
  char membw_error[GS_TEXT_LONG];       /* "" when ok */
  int host_done;
  double h2d_gbs, d2h_gbs;              /* pinned host memory, median; NaN unknown */
  char host_error[GS_TEXT_LONG];
  int p2p_source;                       /* level 1: copies to a peer in the short p2p */
} gs_gpu_stress;

/* Rounds of each workload per GPU at level 2: each a run of its own (set
 * up, timed, verified), the GPUs taken in turn within a round, so that
 * drift and setup-to-setup differences fall on every GPU and widen the
 * ratio's interval instead of hiding in one GPU's figure. */
#define GS_HEALTH_WORKLOAD_ROUNDS 4

/* One round of one workload on one GPU: its timed step times (seconds). */
typedef struct {
  size_t n;                             /* 0: not measured */
  double *seconds;                      /* owned; n entries */
} gs_health_steps;

/* Level 2's measurements of the node. */
typedef struct {
  int level;                            /* 2 when asked for, else 0 */
  char why[GS_TEXT_LONG];               /* why nothing ran (no CUDA device); "" ran */
  size_t n;
  gs_gpu_stress *gpus;                  /* owned; n entries */
  double *p2p_gbs;                      /* owned; n x n, source row, copy-engine P2P
                                           unidirectional median; NaN not measured */
  char p2p_error[GS_TEXT_LONG];         /* why pairs were not measured; "" measured */
  /* The all-reduce sweep (NCCL, float sum, out of place, every GPU in one
   * process): bus bandwidth per size, elements wrong over all sizes. */
  int allreduce_done;                   /* 1 measured (ok or failed) */
  size_t allreduce_n;                   /* sizes measured */
  uint64_t allreduce_bytes[8];
  double allreduce_busbw_gbs[8];
  unsigned long long allreduce_wrong;
  char allreduce_error[GS_TEXT_LONG];   /* "" ok */
  /* Each fixed-step workload's throughput on each GPU alone (default
   * options, about 0.3 s of timed steps): items per second, workload w of
   * GPU i at [w * n + i]; NaN not measured. */
  size_t workload_n;                    /* workloads measured (at most 8) */
  const char *workload_keys[8];         /* their registry keys (static strings) */
  double *workload_rate;                /* owned; workload_n x n: items over the
                                           pooled mean step of its rounds */
  /* The step times behind each rate: round r of workload w on GPU i at
   * [(w * n + i) * GS_HEALTH_WORKLOAD_ROUNDS + r]; owned. */
  gs_health_steps *workload_steps;
  size_t workload_rounds;               /* rounds measured (the budget may cut them) */
  char workload_error[GS_TEXT_LONG];    /* the first failure, "" none */
  /* Time of each check, and the checks the budget left out. */
  double membw_seconds, host_seconds, p2p_seconds, allreduce_seconds, workload_seconds;
  char over_budget[GS_TEXT_LONG];       /* "p2p" ... not started: budget spent */
} gs_node_stress;

/* What level 3 (burn-in) saw on one CUDA GPU: sustained FP16 GEMMs near
 * the power limit with memory traffic (STREAM triads) between them, every
 * result checked, and NVML's readings over the whole run. */
typedef struct {
  char pci_bus_id[GS_TEXT_SHORT];       /* as CUDA writes it */
  int device;                           /* CUDA ordinal */
  int ran;                              /* 1 when the loop started */
  char error[GS_TEXT_LONG];             /* "" ok; a CUDA error stops this GPU's loop */
  unsigned long long gemms, triads, checks;
  unsigned long long mismatches;        /* wrong elements over all checks */
  double gemm_tflops;                   /* mean over the run, 10^12 flop/s */
  double seconds;                       /* this GPU's loop */
  /* NVML over the run (telemetry); *_known 0 when NVML gave none. */
  int power_known, temperature_known, clock_known, throttle_known;
  double power_mean_w, power_max_w, temperature_max_c, sm_clock_min_mhz, sm_clock_mean_mhz;
  unsigned long long throttle_seen;     /* union of clock event reason bits */
  size_t readings;                      /* telemetry readings of this GPU */
} gs_gpu_burn;

/* Level 3's run of the node. */
typedef struct {
  int level;                            /* 3 when asked for, else 0 */
  char why[GS_TEXT_LONG];               /* why nothing ran; "" ran */
  double duration_s;                    /* asked for */
  double seconds;                       /* taken */
  char telemetry_why[GS_TEXT_LONG];     /* why NVML was not sampled; "" sampled */
  cJSON *telemetry;                     /* owned: every reading over time, as a
                                           measurement's "telemetry"; NULL none */
  size_t n;
  gs_gpu_burn *gpus;                    /* owned */
} gs_node_burn;

/* XID events kept per check; more are counted, not kept. */
#define GS_HEALTH_MAX_XIDS 32

/* One XID event (a driver error report) seen during the check. */
typedef struct {
  char pci_bus_id[GS_TEXT_SHORT];       /* NVML's form; "" unknown */
  unsigned long long xid;
} gs_health_xid;

/* What a level 1 check reads of the node: the software, the GPUs NVML
 * enumerates (with their passive state) and the GPUs CUDA can use. */
typedef struct {
  int nvml_loaded;                      /* NVML opened and initialised */
  char nvml_status[GS_TEXT_LONG];       /* why not, when not loaded */
  int nvml_replaced;                    /* GPUSCALE_NVML_LIBRARY named a library */
  char driver[GS_TEXT_SHORT];           /* "" unknown */
  int cuda_driver_version, cuda_runtime_version; /* 12040 = 12.4; 0 unknown */
  char cuda_status[GS_TEXT_LONG];
  char nccl_version[GS_TEXT_SHORT];     /* "" not found */
  int cuda_visible_set;                 /* CUDA_VISIBLE_DEVICES is set */
  size_t cuda_count;                    /* GPUs CUDA can use */
  char (*cuda_bus_ids)[GS_TEXT_SHORT];  /* their PCI bus ids; owned */
  size_t gpu_count;                     /* GPUs NVML enumerates */
  gs_gpu_health *gpus;                  /* owned; gpu_count entries */
  /* Set when the reads did not finish within the budget: what was being
   * read then ("GPU 1 (00000000:11:00.0)", "CUDA"); nothing else is set. */
  char hung[GS_TEXT_LONG];
  double budget_s;                      /* the budget the reads ran under */
  /* Where the time went: CUDA and NCCL versions and devices; NVML's
   * loading, initialisation and enumeration; the GPUs' reads together. */
  double cuda_seconds, nvml_seconds, gpus_seconds;
  gs_node_stress stress;                /* level 2 (stress.level 0 at level 1) */
  gs_node_burn burn;                    /* level 3 (burn.level 0 below) */
  /* XID events seen from before the first read to after the last check. */
  int xid_watched;                      /* 0: not watched; xid_why says why */
  char xid_why[GS_TEXT_LONG];
  double xid_seconds;                   /* how long they were watched */
  size_t xid_count;                     /* events seen (xids holds the first ones) */
  gs_health_xid xids[GS_HEALTH_MAX_XIDS];
} gs_node_state;

#endif
