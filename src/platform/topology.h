/* The link matrix between GPUs in nvidia-smi's vocabulary (X, NV#, PIX,
 * PXB, PHB, NODE, SYS), the CUDA peer-access matrix and the theoretical
 * NVLink bandwidth per pair. The logic works on plain data (gs_nvlink_ports,
 * NVML levels) so it is testable without a GPU; gs_topology_collect fills it
 * from NVML and the CUDA runtime. See docs/info.md. */
#ifndef GS_TOPOLOGY_H
#define GS_TOPOLOGY_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "core/result.h"
#include "core/status.h"
#include "platform/nvml.h"

typedef enum {
  GS_LINK_UNKNOWN = 0, /* no data (no NVML) */
  GS_LINK_SELF,        /* X */
  GS_LINK_NVLINK,      /* NV# */
  GS_LINK_PIX,         /* at most one PCIe bridge */
  GS_LINK_PXB,         /* several PCIe bridges, no host bridge */
  GS_LINK_PHB,         /* a PCIe host bridge (the CPU) */
  GS_LINK_NODE,        /* host bridges within one NUMA node */
  GS_LINK_SYS          /* across NUMA nodes (SMP interconnect) */
} gs_link_kind;

typedef struct {
  gs_link_kind kind;
  size_t nvlinks;      /* active NVLinks between the pair (kind NVLINK) */
} gs_link;

/* The matrices for n GPUs, row-major n x n, owned. */
typedef struct {
  size_t n;
  gs_link *links;
  int *peer_access;    /* cudaDeviceCanAccessPeer: 1, 0, or -1 unknown; diagonal -1 */
  double *nvlink_bw;   /* bytes/s per direction; 0 = no NVLink, NaN = unknown */
} gs_topology;

/* Allocates the matrices for n GPUs, all unknown. n may be 0. */
gs_status gs_topology_init(gs_topology *t, size_t n);

/* Frees the matrices (not `t`). */
void gs_topology_free(gs_topology *t);

/* Maps an NVML topology level (GS_NVML_TOPOLOGY_*) to a link kind:
 * INTERNAL/SINGLE -> PIX, MULTIPLE -> PXB, HOSTBRIDGE -> PHB, NODE -> NODE,
 * SYSTEM -> SYS, anything else -> UNKNOWN. */
gs_link_kind gs_topology_level_kind(int nvml_level);

/* The matrix word of a link: "X", "NV4", "PIX", ... or "?" when unknown. */
void gs_link_word(gs_link link, char *out, size_t size);

/* 1 when two PCI bus ids name the same function, whatever their spelling of
 * the domain ("0000:18:00.0" and "00000000:18:00.0" are equal; case is
 * ignored). Unparseable ids are never equal. */
int gs_pci_bus_id_equal(const char *a, const char *b);

/* Active NVLinks between GPU i and GPU j of `ports` (n GPUs): links whose
 * remote end is j's bus id, counted from i's side. When i has no direct link
 * to j but both reach an NVSwitch, the count is the smaller of their switch
 * link counts (the switch fabric connects every pair). A remote end that is
 * none of the n GPUs counts as a switch only where NVML says it is one, or
 * gives no remote type at all. */
size_t gs_nvlink_count(const gs_nvlink_ports *ports, size_t n, size_t i, size_t j);

/* The NVLink generation (1..5) from NVML's version value and the GPU's
 * compute capability, or 0 when it cannot be told. NVML returned the plain
 * generation on older drivers and the nvmlNvlinkVersion_t enum (1.0=1, 2.0=2,
 * 2.2=3, 3.0=4, 3.1=5, 4.0=6, 5.0=7) on newer ones; the architecture picks
 * the reading. */
int gs_nvlink_generation(unsigned nvml_version, int cc_major, int cc_minor);

/* Theoretical bytes/s per direction of one link of `generation` on a GPU of
 * this compute capability; 0 when not known (table in docs/info.md). */
double gs_nvlink_link_rate(int generation, int cc_major, int cc_minor);

/* Fills the links matrix (levels: n x n NVML levels, -1 unknown; ports: n
 * entries or NULL) and the bandwidth matrix (gpus: n entries, for their
 * compute capability, or NULL). Pure: no library calls. */
void gs_topology_build(gs_topology *t, const int *levels, const gs_nvlink_ports *ports,
                       const gs_gpu_desc *gpus);

/* Collects everything for env's GPUs: NVML levels and NVLink ports (where
 * `nvml` is not NULL) and CUDA peer access. Unknown stays unknown; fails only
 * on allocation. */
gs_status gs_topology_collect(gs_topology *t, const gs_environment *env, gs_nvml *nvml);

/* Prints the link matrix like `nvidia-smi topo -m`, with optional per-GPU
 * CPU affinity and NUMA columns (arrays of n strings, or NULL), then a
 * legend. */
void gs_topology_print_links(FILE *out, const gs_topology *t, const char *const *cpu_affinity,
                             const char *const *numa);

/* Prints an n x n matrix of numbers under GPU column heads, rows labelled
 * GPU0..: value * scale with `decimals` decimals, "X" on the diagonal,
 * `missing` where a value is NaN. */
void gs_topology_print_values(FILE *out, size_t n, const double *values, double scale,
                              int decimals, const char *missing);

/* Prints one labelled row of n numbers (one per GPU) under GPU column heads
 * (heads too when `heads` is 1); NaN prints as `missing`. */
void gs_topology_print_row(FILE *out, int heads, const char *label, size_t n,
                           const double *values, double scale, int decimals,
                           const char *missing);

/* Prints the peer-access matrix ("OK", "NS" not supported, "?" unknown). */
void gs_topology_print_peer(FILE *out, const gs_topology *t);

/* {"links": [[...]], "peer_access": [[...]], "nvlink_bandwidth_bytes_per_s":
 * [[...]]}: words (null when unknown), booleans (null on the diagonal and
 * when unknown) and numbers (0 without NVLink, null on the diagonal and when
 * unknown). NULL on allocation failure. */
cJSON *gs_topology_to_json(const gs_topology *t);

/* Collects the topology of env's GPUs (NVML opened and closed here; without
 * NVML only peer access is known) and adds it as "topology" to the
 * document's "environment" block, so that analysis of the document can set
 * measured bandwidth against the links. Nothing is added without GPUs. */
gs_status gs_topology_attach(cJSON *doc, const gs_environment *env);

/* Graphviz: one node per GPU labelled with name and bus id (names, bus_ids:
 * n strings each), one undirected edge per pair labelled with its word;
 * NVLink edges drawn bold. */
void gs_topology_write_dot(FILE *out, const gs_topology *t, const char *const *names,
                           const char *const *bus_ids);

#endif
