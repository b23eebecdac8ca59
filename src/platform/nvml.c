/* NVML loaded at run time. The typedefs below are written from the
 * documented NVML C API (docs.nvidia.com/deploy/nvml-api), not copied from
 * nvml.h, so the build needs no NVML header and the binary no driver. */
#include "platform/nvml.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the documented C API, as much of it as we use ---------------------- */

typedef int nvml_return;          /* nvmlReturn_t: 0 = NVML_SUCCESS */
typedef struct nvml_device_st *nvml_device; /* nvmlDevice_t: opaque handle */

enum { NVML_SUCCESS = 0 };
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };         /* nvmlClockType_t */
enum { NVML_FEATURE_ENABLED = 1 };                      /* nvmlEnableState_t */
enum { NVML_NVLINK_STATE_SLEEP = 2 };                   /* NVML_NVLINK_STATE_* */
/* nvmlIntNvLinkDeviceType_t */
enum { NVML_NVLINK_DEVICE_TYPE_GPU = 0, NVML_NVLINK_DEVICE_TYPE_IBMNPU = 1,
       NVML_NVLINK_DEVICE_TYPE_SWITCH = 2, NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 255 };

/* nvmlPciInfo_t: busIdLegacy[16], domain, bus, device, pciDeviceId,
 * pciSubSystemId, busId[32]. */
typedef struct {
  char bus_id_legacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pci_device_id;
  unsigned pci_subsystem_id;
  char bus_id[32];
} nvml_pci_info;

typedef nvml_return (*fn_void)(void);
typedef const char *(*fn_error_string)(nvml_return);
typedef nvml_return (*fn_string)(char *, unsigned);
typedef nvml_return (*fn_handle_by_bus)(const char *, nvml_device *);
typedef nvml_return (*fn_dev_string)(nvml_device, char *, unsigned);
typedef nvml_return (*fn_dev_uint)(nvml_device, unsigned *);
typedef nvml_return (*fn_dev_clock)(nvml_device, int, unsigned *);
typedef nvml_return (*fn_dev_cpuset)(nvml_device, unsigned, unsigned long *);
typedef nvml_return (*fn_dev_pair_level)(nvml_device, nvml_device, int *);
typedef nvml_return (*fn_dev_link_state)(nvml_device, unsigned, int *);
typedef nvml_return (*fn_dev_link_pci)(nvml_device, unsigned, nvml_pci_info *);
typedef nvml_return (*fn_dev_link_uint)(nvml_device, unsigned, unsigned *);
typedef nvml_return (*fn_dev_link_type)(nvml_device, unsigned, int *);
/* nvmlUtilization_t: gpu, memory (percent). */
typedef struct {
  unsigned gpu;
  unsigned memory;
} nvml_utilization;
/* nvmlMemory_t: total, free, used (bytes). */
typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvml_memory;
typedef nvml_return (*fn_dev_utilization)(nvml_device, nvml_utilization *);
typedef nvml_return (*fn_dev_memory)(nvml_device, nvml_memory *);
typedef nvml_return (*fn_dev_temperature)(nvml_device, int, unsigned *);
typedef nvml_return (*fn_dev_ull)(nvml_device, unsigned long long *);
typedef nvml_return (*fn_dev_ecc)(nvml_device, int, int, unsigned long long *);
enum { NVML_ECC_CORRECTED = 0, NVML_ECC_UNCORRECTED = 1 }; /* nvmlMemoryErrorType_t */
enum { NVML_ECC_VOLATILE = 0, NVML_ECC_AGGREGATE = 1 };  /* nvmlEccCounterType_t */
enum { NVML_ERROR_INSUFFICIENT_SIZE = 7 };
/* nvmlPageRetirementCause_t */
enum { NVML_RETIRE_MULTIPLE_SBE = 0, NVML_RETIRE_DBE = 1 };
/* nvmlNvLinkErrorCounter_t */
enum { NVML_NVLINK_ERROR_DL_REPLAY = 0, NVML_NVLINK_ERROR_DL_RECOVERY = 1,
       NVML_NVLINK_ERROR_DL_CRC_FLIT = 2, NVML_NVLINK_ERROR_DL_CRC_DATA = 3 };
typedef nvml_return (*fn_count)(unsigned *);
typedef nvml_return (*fn_handle_by_index)(unsigned, nvml_device *);
typedef nvml_return (*fn_dev_pci)(nvml_device, nvml_pci_info *);
typedef nvml_return (*fn_dev_retired)(nvml_device, int, unsigned *, unsigned long long *);
typedef nvml_return (*fn_dev_int)(nvml_device, int *);
typedef nvml_return (*fn_dev_remap)(nvml_device, unsigned *, unsigned *, unsigned *, unsigned *);
typedef nvml_return (*fn_dev_link_counter)(nvml_device, unsigned, int, unsigned long long *);
/* nvmlDeviceGetComputeRunningProcesses: asked with room for none, it
 * answers the count alone (NVML_ERROR_INSUFFICIENT_SIZE when there are
 * some), so the layout of nvmlProcessInfo_t, which changed between
 * versions, never matters. */
typedef nvml_return (*fn_dev_processes)(nvml_device, unsigned *, void *);
enum { NVML_TEMPERATURE_GPU = 0 };                      /* nvmlTemperatureSensors_t */

struct gs_nvml {
  void *lib;
  fn_void init, shutdown;
  fn_error_string error_string;
  fn_string driver_version;
  fn_handle_by_bus handle_by_bus;
  fn_dev_string name, uuid;
  fn_dev_uint power_limit;
  fn_dev_clock max_clock, clock;
  fn_dev_uint numa_node;          /* newer drivers only: may be NULL */
  fn_dev_cpuset cpu_affinity;
  fn_dev_pair_level common_ancestor;
  fn_dev_link_state link_state;
  fn_dev_link_pci link_remote_pci;
  fn_dev_link_uint link_version;
  fn_dev_link_type link_remote_type; /* may be NULL */
  fn_dev_utilization utilization;
  fn_dev_memory memory;
  fn_dev_uint power_usage;
  fn_dev_temperature temperature;
  fn_dev_ull throttle_reasons;    /* ClocksEventReasons, else ClocksThrottleReasons */
  fn_dev_ecc ecc_errors;          /* nvmlDeviceGetTotalEccErrors */
  fn_dev_processes compute_processes; /* _v3, else _v2; may be NULL */
  /* Passive health (gs_nvml_health_get); each may be NULL on old drivers. */
  fn_count device_count;
  fn_handle_by_index handle_by_index;
  fn_dev_pci pci_info;
  fn_dev_retired retired_pages;
  fn_dev_int retired_pending;
  fn_dev_remap remapped_rows;
  fn_dev_link_counter link_error_counter;
  fn_dev_uint pcie_gen, pcie_width, pcie_gen_max, pcie_width_max;
};

/* dlsym into a function pointer without the object/function pointer cast
 * that ISO C leaves undefined. */
static int load_symbol(void *lib, const char *name, void *fn_out) {
  void *sym = dlsym(lib, name);
  memcpy(fn_out, &sym, sizeof sym);
  return sym != NULL;
}

static void set_why(char *why, size_t size, const char *reason) {
  if (why && size) snprintf(why, size, "NVML unavailable: %s", reason);
}

gs_nvml *gs_nvml_open(char *why, size_t why_size) {
  const char *path = getenv("GPUSCALE_NVML_LIBRARY");
  if (!path || !*path) path = "libnvidia-ml.so.1";
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *err = dlerror();
    set_why(why, why_size, err ? err : path);
    return NULL;
  }
  gs_nvml *n = calloc(1, sizeof *n);
  if (!n) {
    dlclose(lib);
    set_why(why, why_size, "out of memory");
    return NULL;
  }
  n->lib = lib;
  // Required: without these nothing useful can be asked.
  static const char *const required[] = {"nvmlInit_v2", "nvmlShutdown", "nvmlErrorString",
                                         "nvmlDeviceGetHandleByPciBusId_v2"};
  int have[4];
  have[0] = load_symbol(lib, required[0], &n->init);
  have[1] = load_symbol(lib, required[1], &n->shutdown);
  have[2] = load_symbol(lib, required[2], &n->error_string);
  have[3] = load_symbol(lib, required[3], &n->handle_by_bus);
  for (size_t i = 0; i < 4; i++) {
    if (!have[i]) {
      char reason[GS_TEXT_LONG];
      snprintf(reason, sizeof reason, "%s: no symbol %s", path, required[i]);
      set_why(why, why_size, reason);
      dlclose(lib);
      free(n);
      return NULL;
    }
  }
  // Optional: a missing entry point leaves its fields unknown.
  load_symbol(lib, "nvmlSystemGetDriverVersion", &n->driver_version);
  load_symbol(lib, "nvmlDeviceGetName", &n->name);
  load_symbol(lib, "nvmlDeviceGetUUID", &n->uuid);
  load_symbol(lib, "nvmlDeviceGetPowerManagementLimit", &n->power_limit);
  load_symbol(lib, "nvmlDeviceGetMaxClockInfo", &n->max_clock);
  load_symbol(lib, "nvmlDeviceGetClockInfo", &n->clock);
  load_symbol(lib, "nvmlDeviceGetNumaNodeId", &n->numa_node);
  load_symbol(lib, "nvmlDeviceGetCpuAffinity", &n->cpu_affinity);
  load_symbol(lib, "nvmlDeviceGetTopologyCommonAncestor", &n->common_ancestor);
  load_symbol(lib, "nvmlDeviceGetNvLinkState", &n->link_state);
  load_symbol(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &n->link_remote_pci);
  load_symbol(lib, "nvmlDeviceGetNvLinkVersion", &n->link_version);
  load_symbol(lib, "nvmlDeviceGetNvLinkRemoteDeviceType", &n->link_remote_type);
  load_symbol(lib, "nvmlDeviceGetUtilizationRates", &n->utilization);
  load_symbol(lib, "nvmlDeviceGetMemoryInfo", &n->memory);
  load_symbol(lib, "nvmlDeviceGetPowerUsage", &n->power_usage);
  load_symbol(lib, "nvmlDeviceGetTemperature", &n->temperature);
  load_symbol(lib, "nvmlDeviceGetTotalEccErrors", &n->ecc_errors);
  if (!load_symbol(lib, "nvmlDeviceGetComputeRunningProcesses_v3", &n->compute_processes))
    load_symbol(lib, "nvmlDeviceGetComputeRunningProcesses_v2", &n->compute_processes);
  load_symbol(lib, "nvmlDeviceGetCount_v2", &n->device_count);
  load_symbol(lib, "nvmlDeviceGetHandleByIndex_v2", &n->handle_by_index);
  load_symbol(lib, "nvmlDeviceGetPciInfo_v3", &n->pci_info);
  load_symbol(lib, "nvmlDeviceGetRetiredPages", &n->retired_pages);
  load_symbol(lib, "nvmlDeviceGetRetiredPagesPendingStatus", &n->retired_pending);
  load_symbol(lib, "nvmlDeviceGetRemappedRows", &n->remapped_rows);
  load_symbol(lib, "nvmlDeviceGetNvLinkErrorCounter", &n->link_error_counter);
  load_symbol(lib, "nvmlDeviceGetCurrPcieLinkGeneration", &n->pcie_gen);
  load_symbol(lib, "nvmlDeviceGetCurrPcieLinkWidth", &n->pcie_width);
  load_symbol(lib, "nvmlDeviceGetMaxPcieLinkGeneration", &n->pcie_gen_max);
  load_symbol(lib, "nvmlDeviceGetMaxPcieLinkWidth", &n->pcie_width_max);
  // Renamed in newer drivers; the old name stays as an alias for a while.
  if (!load_symbol(lib, "nvmlDeviceGetCurrentClocksEventReasons", &n->throttle_reasons))
    load_symbol(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", &n->throttle_reasons);
  (void)dlerror();

  nvml_return rc = n->init();
  if (rc != NVML_SUCCESS) {
    char reason[GS_TEXT_LONG];
    const char *text = n->error_string(rc);
    snprintf(reason, sizeof reason, "nvmlInit_v2: %s", text ? text : "unknown error");
    set_why(why, why_size, reason);
    dlclose(lib);
    free(n);
    return NULL;
  }
  if (why && why_size) why[0] = '\0';
  return n;
}

void gs_nvml_close(gs_nvml *nvml) {
  if (!nvml) return;
  (void)nvml->shutdown();
  dlclose(nvml->lib);
  free(nvml);
}

int gs_nvml_driver_version(gs_nvml *nvml, char *buf, size_t size) {
  if (size) buf[0] = '\0';
  if (!nvml || !nvml->driver_version || size == 0) return 0;
  char text[96] = "";
  if (nvml->driver_version(text, (unsigned)sizeof text) != NVML_SUCCESS) return 0;
  text[sizeof text - 1] = '\0';
  snprintf(buf, size, "%s", text);
  return buf[0] != '\0';
}

/* NVML handle of the GPU at `bus_id`; 0 when there is none. */
static int find_device(gs_nvml *nvml, const char *bus_id, nvml_device *dev) {
  if (!nvml || !bus_id || !*bus_id) return 0;
  *dev = NULL;
  return nvml->handle_by_bus(bus_id, dev) == NVML_SUCCESS && *dev != NULL;
}

/* The GPU's name and UUID into the buffers ("" when NVML gives none). */
static void read_identity(gs_nvml *nvml, nvml_device dev, char *name, size_t name_size,
                          char *uuid, size_t uuid_size) {
  char text[GS_TEXT_LONG];
  if (nvml->name && nvml->name(dev, text, (unsigned)sizeof text) == NVML_SUCCESS) {
    text[sizeof text - 1] = '\0';
    snprintf(name, name_size, "%s", text);
  }
  if (nvml->uuid && nvml->uuid(dev, text, (unsigned)sizeof text) == NVML_SUCCESS) {
    text[sizeof text - 1] = '\0';
    snprintf(uuid, uuid_size, "%s", text);
  }
}

void gs_nvml_format_cpu_set(const unsigned long *set, size_t words, char *out, size_t size) {
  if (size == 0) return;
  out[0] = '\0';
  const size_t bits = sizeof(unsigned long) * CHAR_BIT;
  const size_t total = words * bits;
  size_t used = 0;
  for (size_t cpu = 0; cpu < total;) {
    if (!((set[cpu / bits] >> (cpu % bits)) & 1ul)) {
      cpu++;
      continue;
    }
    size_t last = cpu;
    while (last + 1 < total && ((set[(last + 1) / bits] >> ((last + 1) % bits)) & 1ul)) last++;
    int n = last == cpu ? snprintf(out + used, size - used, "%s%zu", used ? "," : "", cpu)
                        : snprintf(out + used, size - used, "%s%zu-%zu", used ? "," : "", cpu,
                                   last);
    if (n < 0 || (size_t)n >= size - used) {
      // Cut: say so rather than leave a misleading partial list.
      if (size > 4) snprintf(out + (size > 8 ? size - 4 : 0), 4, "...");
      return;
    }
    used += (size_t)n;
    cpu = last + 1;
  }
}

void gs_nvml_gpu_info_get(gs_nvml *nvml, const char *pci_bus_id, gs_nvml_gpu_info *info) {
  memset(info, 0, sizeof *info);
  info->numa_node = -1;
  nvml_device dev;
  if (!find_device(nvml, pci_bus_id, &dev)) return;
  info->found = 1;
  read_identity(nvml, dev, info->name, sizeof info->name, info->uuid, sizeof info->uuid);
  unsigned v = 0;
  if (nvml->power_limit && nvml->power_limit(dev, &v) == NVML_SUCCESS) info->power_limit_mw = v;
  if (nvml->max_clock && nvml->max_clock(dev, NVML_CLOCK_SM, &v) == NVML_SUCCESS)
    info->max_sm_clock_mhz = v;
  if (nvml->max_clock && nvml->max_clock(dev, NVML_CLOCK_MEM, &v) == NVML_SUCCESS)
    info->max_memory_clock_mhz = v;
  if (nvml->clock && nvml->clock(dev, NVML_CLOCK_SM, &v) == NVML_SUCCESS) info->sm_clock_mhz = v;
  if (nvml->clock && nvml->clock(dev, NVML_CLOCK_MEM, &v) == NVML_SUCCESS)
    info->memory_clock_mhz = v;
  if (nvml->numa_node && nvml->numa_node(dev, &v) == NVML_SUCCESS && v <= INT_MAX)
    info->numa_node = (int)v;
  if (nvml->cpu_affinity) {
    unsigned long set[64];  // 4096 CPUs with 64-bit longs
    memset(set, 0, sizeof set);
    if (nvml->cpu_affinity(dev, (unsigned)(sizeof set / sizeof set[0]), set) == NVML_SUCCESS)
      gs_nvml_format_cpu_set(set, sizeof set / sizeof set[0], info->cpu_affinity,
                             sizeof info->cpu_affinity);
  }
}

int gs_nvml_common_ancestor(gs_nvml *nvml, const char *bus_a, const char *bus_b, int *level) {
  nvml_device a, b;
  if (!nvml || !nvml->common_ancestor) return 0;
  if (!find_device(nvml, bus_a, &a) || !find_device(nvml, bus_b, &b)) return 0;
  int v = -1;
  if (nvml->common_ancestor(a, b, &v) != NVML_SUCCESS) return 0;
  *level = v;
  return 1;
}

void gs_nvml_nvlink_ports_get(gs_nvml *nvml, const char *pci_bus_id, gs_nvlink_ports *ports) {
  memset(ports, 0, sizeof *ports);
  snprintf(ports->pci_bus_id, sizeof ports->pci_bus_id, "%s", pci_bus_id ? pci_bus_id : "");
  nvml_device dev;
  if (!find_device(nvml, pci_bus_id, &dev) || !nvml->link_state) return;
  for (unsigned link = 0; link < GS_NVLINK_MAX_LINKS; link++) {
    int state = 0;
    nvml_return rc = nvml->link_state(dev, link, &state);
    // Ports past the GPU's last one answer INVALID_ARGUMENT or NOT_SUPPORTED:
    // they are simply absent, and later ones may still exist on some parts.
    if (rc != NVML_SUCCESS) continue;
    ports->port_count = (size_t)link + 1;
    if (state != NVML_FEATURE_ENABLED) continue;
    ports->active[link] = 1;
    nvml_pci_info pci;
    memset(&pci, 0, sizeof pci);
    if (nvml->link_remote_pci && nvml->link_remote_pci(dev, link, &pci) == NVML_SUCCESS) {
      pci.bus_id[sizeof pci.bus_id - 1] = '\0';
      snprintf(ports->remote_bus_id[link], sizeof ports->remote_bus_id[link], "%s", pci.bus_id);
    }
    int type = -1;
    if (nvml->link_remote_type && nvml->link_remote_type(dev, link, &type) == NVML_SUCCESS) {
      ports->remote_type[link] = type == NVML_NVLINK_DEVICE_TYPE_GPU ? GS_NVLINK_REMOTE_GPU
                                 : type == NVML_NVLINK_DEVICE_TYPE_SWITCH ? GS_NVLINK_REMOTE_SWITCH
                                 : type == NVML_NVLINK_DEVICE_TYPE_UNKNOWN
                                     ? GS_NVLINK_REMOTE_UNKNOWN
                                     : GS_NVLINK_REMOTE_OTHER;
    }
    unsigned version = 0;
    if (ports->version == 0 && nvml->link_version &&
        nvml->link_version(dev, link, &version) == NVML_SUCCESS)
      ports->version = version;
  }
}

const char *gs_nvml_throttle_name(unsigned long long bit) {
  switch (bit) {
    case GS_NVML_THROTTLE_GPU_IDLE: return "gpu_idle";
    case GS_NVML_THROTTLE_APPLICATIONS_CLOCKS: return "applications_clocks_setting";
    case GS_NVML_THROTTLE_SW_POWER_CAP: return "sw_power_cap";
    case GS_NVML_THROTTLE_HW_SLOWDOWN: return "hw_slowdown";
    case GS_NVML_THROTTLE_SYNC_BOOST: return "sync_boost";
    case GS_NVML_THROTTLE_SW_THERMAL: return "sw_thermal_slowdown";
    case GS_NVML_THROTTLE_HW_THERMAL: return "hw_thermal_slowdown";
    case GS_NVML_THROTTLE_HW_POWER_BRAKE: return "hw_power_brake_slowdown";
    case GS_NVML_THROTTLE_DISPLAY_CLOCKS: return "display_clock_setting";
    default: return NULL;
  }
}

void gs_nvml_sample_get(gs_nvml *nvml, const char *pci_bus_id, gs_nvml_sample *sample) {
  memset(sample, 0, sizeof *sample);
  nvml_device dev;
  if (!find_device(nvml, pci_bus_id, &dev)) return;
  sample->found = 1;
  nvml_utilization util;
  if (nvml->utilization && nvml->utilization(dev, &util) == NVML_SUCCESS) {
    sample->has_utilization = 1;
    sample->utilization_percent = util.gpu;
  }
  nvml_memory mem;
  if (nvml->memory && nvml->memory(dev, &mem) == NVML_SUCCESS) {
    sample->has_memory_used = 1;
    sample->memory_used_bytes = mem.used;
    sample->memory_total_bytes = mem.total;
  }
  unsigned v = 0;
  if (nvml->power_usage && nvml->power_usage(dev, &v) == NVML_SUCCESS) {
    sample->has_power = 1;
    sample->power_mw = v;
  }
  if (nvml->clock && nvml->clock(dev, NVML_CLOCK_SM, &v) == NVML_SUCCESS) {
    sample->has_sm_clock = 1;
    sample->sm_clock_mhz = v;
  }
  if (nvml->clock && nvml->clock(dev, NVML_CLOCK_MEM, &v) == NVML_SUCCESS) {
    sample->has_memory_clock = 1;
    sample->memory_clock_mhz = v;
  }
  if (nvml->temperature && nvml->temperature(dev, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS) {
    sample->has_temperature = 1;
    sample->temperature_c = v;
  }
  unsigned long long reasons = 0;
  if (nvml->throttle_reasons && nvml->throttle_reasons(dev, &reasons) == NVML_SUCCESS) {
    sample->has_throttle = 1;
    sample->throttle_reasons = reasons;
  }
  // NVML answers NOT_SUPPORTED when ECC is off: the counts stay unknown.
  unsigned long long corrected = 0, uncorrected = 0;
  if (nvml->ecc_errors &&
      nvml->ecc_errors(dev, NVML_ECC_CORRECTED, NVML_ECC_VOLATILE, &corrected) == NVML_SUCCESS &&
      nvml->ecc_errors(dev, NVML_ECC_UNCORRECTED, NVML_ECC_VOLATILE, &uncorrected) ==
          NVML_SUCCESS) {
    sample->has_ecc = 1;
    sample->ecc_corrected = corrected;
    sample->ecc_uncorrected = uncorrected;
  }
  unsigned processes = 0;
  if (nvml->compute_processes) {
    const nvml_return rc = nvml->compute_processes(dev, &processes, NULL);
    if (rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      sample->has_processes = 1;
      sample->compute_processes = rc == NVML_SUCCESS ? 0 : processes;
    }
  }
}

int gs_nvml_device_count(gs_nvml *nvml, unsigned *count) {
  *count = 0;
  if (!nvml || !nvml->device_count) return 0;
  unsigned n = 0;
  if (nvml->device_count(&n) != NVML_SUCCESS) return 0;
  *count = n;
  return 1;
}

int gs_nvml_device_bus_id(gs_nvml *nvml, unsigned index, char *buf, size_t size) {
  if (size) buf[0] = '\0';
  if (!nvml || !nvml->handle_by_index || !nvml->pci_info || size == 0) return 0;
  nvml_device dev = NULL;
  if (nvml->handle_by_index(index, &dev) != NVML_SUCCESS || !dev) return 0;
  nvml_pci_info pci;
  memset(&pci, 0, sizeof pci);
  if (nvml->pci_info(dev, &pci) != NVML_SUCCESS) return 0;
  pci.bus_id[sizeof pci.bus_id - 1] = '\0';
  snprintf(buf, size, "%s", pci.bus_id);
  return buf[0] != '\0';
}

/* Pages retired for `cause`: the count NVML reports (a full buffer or
 * INSUFFICIENT_SIZE both carry it). Returns 1 when known. */
static int retired_count(gs_nvml *nvml, nvml_device dev, int cause, unsigned *count) {
  unsigned long long addresses[64];
  unsigned n = (unsigned)(sizeof addresses / sizeof addresses[0]);
  nvml_return rc = nvml->retired_pages(dev, cause, &n, addresses);
  if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) return 0;
  *count = n;
  return 1;
}

/* The memory error groups of gs_nvml_health_get. */
static void health_memory(gs_nvml *nvml, nvml_device dev, gs_gpu_health *h) {
  unsigned long long c = 0, u = 0;
  // NOT_SUPPORTED when ECC is off: the counts stay unknown (null).
  if (nvml->ecc_errors &&
      nvml->ecc_errors(dev, NVML_ECC_CORRECTED, NVML_ECC_VOLATILE, &c) == NVML_SUCCESS &&
      nvml->ecc_errors(dev, NVML_ECC_UNCORRECTED, NVML_ECC_VOLATILE, &u) == NVML_SUCCESS) {
    h->has_ecc_volatile = 1;
    h->ecc_volatile_corrected = c;
    h->ecc_volatile_uncorrected = u;
  }
  if (nvml->ecc_errors &&
      nvml->ecc_errors(dev, NVML_ECC_CORRECTED, NVML_ECC_AGGREGATE, &c) == NVML_SUCCESS &&
      nvml->ecc_errors(dev, NVML_ECC_UNCORRECTED, NVML_ECC_AGGREGATE, &u) == NVML_SUCCESS) {
    h->has_ecc_aggregate = 1;
    h->ecc_aggregate_corrected = c;
    h->ecc_aggregate_uncorrected = u;
  }
  if (nvml->retired_pages && retired_count(nvml, dev, NVML_RETIRE_MULTIPLE_SBE, &h->retired_sbe) &&
      retired_count(nvml, dev, NVML_RETIRE_DBE, &h->retired_dbe))
    h->has_retired_pages = 1;
  else
    h->retired_sbe = h->retired_dbe = 0;
  int pending = 0;
  if (nvml->retired_pending && nvml->retired_pending(dev, &pending) == NVML_SUCCESS) {
    h->has_retired_pending = 1;
    h->retired_pending = pending == NVML_FEATURE_ENABLED;
  }
  unsigned corr = 0, unc = 0, is_pending = 0, failed = 0;
  if (nvml->remapped_rows &&
      nvml->remapped_rows(dev, &corr, &unc, &is_pending, &failed) == NVML_SUCCESS) {
    h->has_remap = 1;
    h->remap_corrected = corr;
    h->remap_uncorrected = unc;
    h->remap_pending = is_pending != 0;
    h->remap_failed = failed != 0;
  }
}

int gs_nvml_health_get(gs_nvml *nvml, const char *pci_bus_id, gs_gpu_health *h) {
  memset(h, 0, sizeof *h);
  h->index = -1;
  snprintf(h->pci_bus_id, sizeof h->pci_bus_id, "%s", pci_bus_id ? pci_bus_id : "");
  nvml_device dev;
  if (!find_device(nvml, pci_bus_id, &dev)) return 0;
  read_identity(nvml, dev, h->name, sizeof h->name, h->uuid, sizeof h->uuid);
  health_memory(nvml, dev, h);
  for (unsigned link = 0; nvml->link_state && link < GS_HEALTH_MAX_LINKS; link++) {
    int state = 0;
    // Ports past the GPU's last answer INVALID_ARGUMENT or NOT_SUPPORTED.
    if (nvml->link_state(dev, link, &state) != NVML_SUCCESS) continue;
    h->port_count = (size_t)link + 1;
    h->port_present[link] = 1;
    // NVML_NVLINK_STATE_SLEEP (2, newer drivers) is a healthy link saving
    // power, not a link down.
    h->link_up[link] = state == NVML_FEATURE_ENABLED || state == NVML_NVLINK_STATE_SLEEP;
    gs_health_link_errors *e = &h->link_errors[link];
    if (nvml->link_error_counter &&
        nvml->link_error_counter(dev, link, NVML_NVLINK_ERROR_DL_REPLAY, &e->replay) ==
            NVML_SUCCESS &&
        nvml->link_error_counter(dev, link, NVML_NVLINK_ERROR_DL_RECOVERY, &e->recovery) ==
            NVML_SUCCESS &&
        nvml->link_error_counter(dev, link, NVML_NVLINK_ERROR_DL_CRC_FLIT, &e->crc_flit) ==
            NVML_SUCCESS &&
        nvml->link_error_counter(dev, link, NVML_NVLINK_ERROR_DL_CRC_DATA, &e->crc_data) ==
            NVML_SUCCESS)
      e->has_counters = 1;
    else
      memset(e, 0, sizeof *e);
  }
  unsigned g = 0, w = 0, gm = 0, wm = 0;
  if (nvml->pcie_gen && nvml->pcie_width && nvml->pcie_gen_max && nvml->pcie_width_max &&
      nvml->pcie_gen(dev, &g) == NVML_SUCCESS && nvml->pcie_width(dev, &w) == NVML_SUCCESS &&
      nvml->pcie_gen_max(dev, &gm) == NVML_SUCCESS &&
      nvml->pcie_width_max(dev, &wm) == NVML_SUCCESS) {
    h->has_pcie = 1;
    h->pcie_gen = g;
    h->pcie_width = w;
    h->pcie_gen_max = gm;
    h->pcie_width_max = wm;
  }
  unsigned long long reasons = 0;
  if (nvml->throttle_reasons && nvml->throttle_reasons(dev, &reasons) == NVML_SUCCESS) {
    h->has_clock_events = 1;
    h->clock_events = reasons;
  }
  return 1;
}

int gs_nvml_health_figures_get(gs_nvml *nvml, const char *pci_bus_id, gs_gpu_health *h) {
  h->has_memory_total = h->has_power_limit = h->has_max_clocks = 0;
  nvml_device dev;
  if (!find_device(nvml, pci_bus_id, &dev)) return 0;
  nvml_memory mem;
  memset(&mem, 0, sizeof mem);
  if (nvml->memory && nvml->memory(dev, &mem) == NVML_SUCCESS && mem.total > 0) {
    h->has_memory_total = 1;
    h->memory_total_bytes = mem.total;
  }
  unsigned v = 0;
  if (nvml->power_limit && nvml->power_limit(dev, &v) == NVML_SUCCESS && v > 0) {
    h->has_power_limit = 1;
    h->power_limit_mw = v;
  }
  unsigned sm = 0, memclk = 0;
  if (nvml->max_clock && nvml->max_clock(dev, NVML_CLOCK_SM, &sm) == NVML_SUCCESS &&
      nvml->max_clock(dev, NVML_CLOCK_MEM, &memclk) == NVML_SUCCESS && sm > 0) {
    h->has_max_clocks = 1;
    h->max_sm_clock_mhz = sm;
    h->max_memory_clock_mhz = memclk;
  }
  return 1;
}

/* ---- XID events (gs_nvml_xid_watch_*): an event set, read only --------- */

/* nvmlEventData_t: device, eventType, eventData, gpuInstanceId,
 * computeInstanceId. */
typedef struct {
  nvml_device device;
  unsigned long long type;
  unsigned long long data;
  unsigned gpu_instance, compute_instance;
} nvml_event_data;
typedef struct nvml_event_set_st *nvml_event_set;
typedef nvml_return (*fn_event_set_create)(nvml_event_set *);
typedef nvml_return (*fn_register_events)(nvml_device, unsigned long long, nvml_event_set);
typedef nvml_return (*fn_event_set_wait)(nvml_event_set, nvml_event_data *, unsigned);
typedef nvml_return (*fn_event_set_free)(nvml_event_set);
enum { NVML_EVENT_XID_CRITICAL = 0x8, NVML_ERROR_TIMEOUT = 10 };

struct gs_nvml_xid_watch {
  gs_nvml *nvml;
  nvml_event_set set;
  fn_event_set_wait wait;
  fn_event_set_free free_set;
};

gs_nvml_xid_watch *gs_nvml_xid_watch_start(gs_nvml *nvml, char *why, size_t why_size) {
  if (why_size) why[0] = '\0';
  fn_event_set_create create = NULL;
  fn_register_events reg = NULL;
  fn_event_set_wait wait = NULL;
  fn_event_set_free free_set = NULL;
  if (!nvml || !nvml->device_count || !nvml->handle_by_index ||
      !load_symbol(nvml->lib, "nvmlEventSetCreate", &create) ||
      !load_symbol(nvml->lib, "nvmlDeviceRegisterEvents", &reg) ||
      !load_symbol(nvml->lib, "nvmlEventSetWait_v2", &wait) ||
      !load_symbol(nvml->lib, "nvmlEventSetFree", &free_set)) {
    snprintf(why, why_size, "%s", nvml ? "this NVML has no event sets" : "NVML unavailable");
    return NULL;
  }
  gs_nvml_xid_watch *w = calloc(1, sizeof *w);
  if (!w) {
    snprintf(why, why_size, "out of memory");
    return NULL;
  }
  w->nvml = nvml;
  w->wait = wait;
  w->free_set = free_set;
  nvml_return rc = create(&w->set);
  unsigned count = 0, registered = 0;
  if (rc == NVML_SUCCESS && nvml->device_count(&count) == NVML_SUCCESS) {
    for (unsigned i = 0; i < count; i++) {
      nvml_device dev = NULL;
      // A GPU that cannot deliver XID events (NOT_SUPPORTED) is skipped.
      if (nvml->handle_by_index(i, &dev) == NVML_SUCCESS && dev &&
          reg(dev, NVML_EVENT_XID_CRITICAL, w->set) == NVML_SUCCESS)
        registered++;
    }
  }
  if (rc != NVML_SUCCESS || registered == 0) {
    const char *text = rc != NVML_SUCCESS ? nvml->error_string(rc) : NULL;
    snprintf(why, why_size, "%s%s", rc != NVML_SUCCESS ? "nvmlEventSetCreate: " : "",
             rc != NVML_SUCCESS ? (text ? text : "unknown error")
                                : "no GPU delivers XID events (not supported)");
    if (rc == NVML_SUCCESS) free_set(w->set);
    free(w);
    return NULL;
  }
  return w;
}

size_t gs_nvml_xid_watch_collect(gs_nvml_xid_watch *w, gs_nvml_xid *out, size_t max) {
  size_t n = 0;
  if (!w) return 0;
  for (;;) {
    nvml_event_data e;
    memset(&e, 0, sizeof e);
    // Timeout 0: take what is queued, never wait.
    if (w->wait(w->set, &e, 0) != NVML_SUCCESS) break;
    if (!(e.type & NVML_EVENT_XID_CRITICAL) || n >= max) continue;
    out[n].xid = e.data;
    out[n].pci_bus_id[0] = '\0';
    nvml_pci_info pci;
    memset(&pci, 0, sizeof pci);
    if (w->nvml->pci_info && e.device && w->nvml->pci_info(e.device, &pci) == NVML_SUCCESS) {
      pci.bus_id[sizeof pci.bus_id - 1] = '\0';
      snprintf(out[n].pci_bus_id, sizeof out[n].pci_bus_id, "%s", pci.bus_id);
    }
    n++;
  }
  return n;
}

void gs_nvml_xid_watch_stop(gs_nvml_xid_watch *w) {
  if (!w) return;
  (void)w->free_set(w->set);
  free(w);
}
