/* NVML (the NVIDIA Management Library), loaded at run time with dlopen so
 * the binary runs where no driver is installed. A missing library, a missing
 * symbol or a field the GPU does not support is a normal state: the field is
 * simply unknown. GPUs are found by PCI bus id, never by index. */
#ifndef GS_NVML_H
#define GS_NVML_H

#include <stddef.h>

#include "core/health.h"
#include "core/result.h"

/* Ports scanned per GPU: NVML_NVLINK_MAX_LINKS of current drivers. */
#define GS_NVLINK_MAX_LINKS 18

/* The loaded library and its entry points (opaque). */
typedef struct gs_nvml gs_nvml;

/* What NVML says about one GPU. Every numeric field is 0 when unknown,
 * except numa_node (-1 when unknown); strings are "" when unknown. */
typedef struct {
  int found;                      /* NVML has a device with this bus id */
  char name[GS_TEXT_LONG];
  char uuid[GS_TEXT_SHORT];
  unsigned power_limit_mw;        /* power management limit, milliwatts */
  unsigned max_sm_clock_mhz;
  unsigned max_memory_clock_mhz;
  unsigned sm_clock_mhz;          /* current */
  unsigned memory_clock_mhz;      /* current */
  int numa_node;                  /* -1 = unknown */
  char cpu_affinity[GS_TEXT_LONG]; /* CPU list as "0-31,64-95"; "" = unknown */
} gs_nvml_gpu_info;

/* Remote end of a link, as NVML classifies it. */
typedef enum {
  GS_NVLINK_REMOTE_UNKNOWN = 0,   /* no remote device type available */
  GS_NVLINK_REMOTE_GPU,
  GS_NVLINK_REMOTE_SWITCH,        /* NVSwitch: every GPU on the fabric is reachable */
  GS_NVLINK_REMOTE_OTHER          /* e.g. an IBM NPU */
} gs_nvlink_remote;

/* The NVLink ports of one GPU as plain data (filled by NVML, or by hand in
 * tests). Only active ports have their remote fields set. */
typedef struct {
  char pci_bus_id[GS_TEXT_SHORT];           /* this GPU */
  size_t port_count;                        /* ports described below */
  int active[GS_NVLINK_MAX_LINKS];          /* 1 = link up */
  char remote_bus_id[GS_NVLINK_MAX_LINKS][GS_TEXT_SHORT]; /* "" = unknown */
  gs_nvlink_remote remote_type[GS_NVLINK_MAX_LINKS];
  unsigned version;                         /* NVML NVLink version value of an
                                               active port; 0 = unknown */
} gs_nvlink_ports;

/* Loads the library (GPUSCALE_NVML_LIBRARY, else "libnvidia-ml.so.1") and
 * initialises it. Returns NULL when NVML cannot be used; `why` (may be NULL)
 * then receives "NVML unavailable: <reason>". The caller owns the handle and
 * releases it with gs_nvml_close. Call from one thread. */
gs_nvml *gs_nvml_open(char *why, size_t why_size);

/* Shuts NVML down and unloads it. NULL is allowed. */
void gs_nvml_close(gs_nvml *nvml);

/* The driver version ("550.54.15") into buf; returns 1 when known, else 0
 * and buf = "". `nvml` may be NULL. */
int gs_nvml_driver_version(gs_nvml *nvml, char *buf, size_t size);

/* Everything NVML says about the GPU at `pci_bus_id` (as CUDA writes it,
 * "0000:18:00.0"). With `nvml` NULL, or no such device, every field is
 * unknown and info->found is 0. Never fails. */
void gs_nvml_gpu_info_get(gs_nvml *nvml, const char *pci_bus_id, gs_nvml_gpu_info *info);

/* The NVML topology level of the closest common ancestor of two GPUs (one of
 * the GS_NVML_TOPOLOGY_* values). Returns 1 when known, else 0. */
int gs_nvml_common_ancestor(gs_nvml *nvml, const char *bus_a, const char *bus_b, int *level);

/* The NVLink ports of the GPU at `pci_bus_id`. With no NVML, no device or no
 * NVLink, `ports` is all zero apart from its bus id. Never fails. */
void gs_nvml_nvlink_ports_get(gs_nvml *nvml, const char *pci_bus_id, gs_nvlink_ports *ports);

/* One telemetry reading of one GPU. Each `has_*` says whether NVML gave the
 * field (0: not supported on this GPU or driver; the value is then 0). */
typedef struct {
  int found;                      /* NVML has a device with this bus id */
  int has_utilization, has_memory_used, has_power, has_sm_clock, has_memory_clock,
      has_temperature, has_throttle, has_ecc;
  unsigned utilization_percent;   /* GPU busy share over NVML's last period */
  unsigned long long memory_used_bytes;
  unsigned long long memory_total_bytes; /* with has_memory_used */
  unsigned power_mw;              /* board power draw, milliwatts */
  unsigned sm_clock_mhz;
  unsigned memory_clock_mhz;
  unsigned temperature_c;         /* GPU core sensor */
  unsigned long long throttle_reasons; /* GS_NVML_THROTTLE_* bits */
  /* Volatile ECC error counts (since the driver loaded), device memory and
   * caches together; has_ecc 0 when ECC is off or not supported. */
  unsigned long long ecc_corrected, ecc_uncorrected;
  /* Processes with a compute context on the GPU (NVML's running compute
   * processes, the measuring one included); has_processes 0 when unknown. */
  int has_processes;
  unsigned compute_processes;
} gs_nvml_sample;

/* Clock event ("throttle") reason bits as NVML documents them
 * (nvmlClocksEventReason*). */
enum {
  GS_NVML_THROTTLE_GPU_IDLE = 0x1,
  GS_NVML_THROTTLE_APPLICATIONS_CLOCKS = 0x2,
  GS_NVML_THROTTLE_SW_POWER_CAP = 0x4,
  GS_NVML_THROTTLE_HW_SLOWDOWN = 0x8,
  GS_NVML_THROTTLE_SYNC_BOOST = 0x10,
  GS_NVML_THROTTLE_SW_THERMAL = 0x20,
  GS_NVML_THROTTLE_HW_THERMAL = 0x40,
  GS_NVML_THROTTLE_HW_POWER_BRAKE = 0x80,
  GS_NVML_THROTTLE_DISPLAY_CLOCKS = 0x100
};

/* Stable lower-case name of one throttle bit ("sw_power_cap"); NULL for a
 * bit NVML does not document. */
const char *gs_nvml_throttle_name(unsigned long long bit);

/* Reads the current utilization, memory used, power, clocks, temperature,
 * throttle reasons, ECC counts and compute processes of the GPU at `pci_bus_id`. Unsupported fields are left
 * unknown; with `nvml` NULL or no such device, sample->found is 0. NVML is
 * thread-safe: any thread may call this once the handle is open. */
void gs_nvml_sample_get(gs_nvml *nvml, const char *pci_bus_id, gs_nvml_sample *sample);

/* NVML topology levels (nvmlGpuTopologyLevel_t as documented). */
enum {
  GS_NVML_TOPOLOGY_INTERNAL = 0,
  GS_NVML_TOPOLOGY_SINGLE = 10,
  GS_NVML_TOPOLOGY_MULTIPLE = 20,
  GS_NVML_TOPOLOGY_HOSTBRIDGE = 30,
  GS_NVML_TOPOLOGY_NODE = 40,
  GS_NVML_TOPOLOGY_SYSTEM = 50
};

/* Formats a CPU bit set (`words` unsigned longs, bit k of word w = CPU
 * w * bits(long) + k) as a list of ranges, "0-31,64-95". Empty set: "". */
void gs_nvml_format_cpu_set(const unsigned long *set, size_t words, char *out, size_t size);

/* The number of GPUs NVML sees (nvmlDeviceGetCount_v2), whether CUDA can
 * use them or not. Returns 1 when known, else 0 and *count = 0. */
int gs_nvml_device_count(gs_nvml *nvml, unsigned *count);

/* The PCI bus id of NVML's device `index` ("00000000:18:00.0") into buf.
 * Returns 1 when known, else 0 and buf = "". */
int gs_nvml_device_bus_id(gs_nvml *nvml, unsigned index, char *buf, size_t size);

/* The passive health state of the GPU at `pci_bus_id`, read only: ECC
 * counts, retired pages, remapped rows, NVLink state and error counters per
 * port, PCIe generation and width against the maximum, current clock event
 * reasons. Returns 1 when NVML has the device (h->index is left -1 for the
 * caller), else 0 with every group unknown. Never fails; call from one
 * thread at a time per handle. */
int gs_nvml_health_get(gs_nvml *nvml, const char *pci_bus_id, gs_gpu_health *h);

/* The figures of the GPU at `pci_bus_id` that its model's expected figures
 * are checked against (core/gpu_model.h): total memory
 * (nvmlDeviceGetMemoryInfo), the power limit now enforced
 * (nvmlDeviceGetPowerManagementLimit) and the highest SM and memory clocks
 * (nvmlDeviceGetMaxClockInfo), read only. Sets only those fields and their
 * has_* flags; returns 1 when NVML has the device, else 0 with them unknown.
 * Never fails. */
int gs_nvml_health_figures_get(gs_nvml *nvml, const char *pci_bus_id, gs_gpu_health *h);

/* XID events (NVIDIA's driver error reports) seen while watching, read
 * through an NVML event set: registering for events changes nothing on
 * the GPU. */
typedef struct gs_nvml_xid_watch gs_nvml_xid_watch;

typedef struct {
  char pci_bus_id[GS_TEXT_SHORT];  /* NVML's form; "" when unknown */
  unsigned long long xid;
} gs_nvml_xid;

/* Starts watching every GPU NVML lists for critical XID events. Returns
 * NULL, with `why` saying why, when NVML is NULL, has no event sets or no
 * GPU can deliver them. Stop with gs_nvml_xid_watch_stop before closing
 * `nvml`. Call from one thread. */
gs_nvml_xid_watch *gs_nvml_xid_watch_start(gs_nvml *nvml, char *why, size_t why_size);

/* The events queued since the start (or the last collect), without
 * waiting: at most `max` into `out` (the rest are dropped); returns how
 * many. NULL watch: 0. */
size_t gs_nvml_xid_watch_collect(gs_nvml_xid_watch *w, gs_nvml_xid *out, size_t max);

/* Frees the event set. NULL is allowed. */
void gs_nvml_xid_watch_stop(gs_nvml_xid_watch *w);

_Static_assert(GS_HEALTH_MAX_LINKS == GS_NVLINK_MAX_LINKS, "one NVLink port limit");

#endif
