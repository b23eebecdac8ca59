/* A test double of the NVML library, for tests only (built in the tree,
 * never installed). gpuscale loads it instead of libnvidia-ml when
 * GPUSCALE_NVML_LIBRARY names it, so that CPU-only CI can rehearse GPU
 * faults without harming hardware. It answers the entry points that
 * platform/nvml.c uses, with the documented signatures and return codes.
 *
 * A healthy node by default: GS_NVML_DOUBLE_GPUS GPUs (default 4, at most
 * 16), each with 18 NVLink ports up and no link errors, PCIe gen 5 x16 of
 * gen 5 x16, ECC on with no errors, no row remaps, page retirement
 * unsupported (as on Ampere and later), clocks idle, and the figures of an
 * H200 SXM 141GB (143771 MiB, power limit 700 W, highest clocks 1980 MHz SM
 * and 3201 MHz memory). Its name is "gpuscale NVML test double", which no
 * expected-figure file lists, unless GS_NVML_DOUBLE_NAME gives another
 * ("NVIDIA H200"). GS_NVML_DOUBLE_FAULTS adds faults, a comma-separated
 * list of
 *   nvlink_down:GPU:LINK        the port is inactive
 *   nvlink_sleep:GPU:LINK       the port is asleep (NVML_NVLINK_STATE_SLEEP)
 *   nvlink_recovery:GPU:LINK:N  N data-link recoveries on the port
 *   pcie_x8:GPU                 the link trained at x8 of x16
 *   ecc_uncorrected:GPU:N       N volatile (and aggregate) uncorrected errors
 *   remap_pending:GPU:N         N rows remapped for uncorrectable errors, the
 *                               remap waiting for a GPU reset
 *   remap_failed:GPU            a remap failed
 *   hw_slowdown:GPU             clock event reason hw_slowdown
 *   sw_power_cap:GPU            clock event reason sw_power_cap (not a fault)
 *   no_ecc:GPU                  ECC counts NOT_SUPPORTED (ECC off)
 *   hang:GPU:SECONDS            its clock event reasons answer after SECONDS
 *                               (a driver that does not answer)
 *   pcie_gen4:GPU               the slot allows PCIe gen 4 at most
 *   power_limit:GPU:WATTS       the power limit enforced is WATTS
 *   memory_mib:GPU:N            the GPU reports N MiB of memory
 *   max_sm_clock:GPU:MHZ        the highest SM clock is MHZ
 *   nvlink_crc_load:GPU:LINK:N  the port's CRC flit counter reads 0 the first
 *                               time and N after (errors under load)
 *   nvlink_crc_rate:GPU:LINK:R  the port's CRC flit counter grows by R a second
 *                               from the state's building on (a steady rate)
 *   nvlink_replay_load:GPU:LINK:N  the port's replay counter reads 0 the
 *                               first time and N after
 *   xid:GPU:N                   an XID N event waits in every event set
 *                               registered for the GPU (delivered once)
 * Initialisations are counted as NVML counts them: the state is built by
 * the first nvmlInit_v2 and kept until the matching last nvmlShutdown.
 *   processes:GPU:N             N processes hold a compute context on it
 * A malformed list makes nvmlInit_v2 fail with NVML_ERROR_INVALID_ARGUMENT,
 * so a typo in a test cannot pass silently. */
// clock_gettime: the double is built without the library's POSIX level.
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { OK = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, NOT_FOUND = 6,
       INSUFFICIENT_SIZE = 7 };
enum { MAX_GPUS = 16, LINKS = 18 };

typedef struct {
  int link_down[LINKS], link_sleep[LINKS];
  unsigned long long recovery[LINKS];
  unsigned width;
  unsigned long long ecc_uncorrected;
  int no_ecc;
  unsigned hang_s;
  unsigned remap_rows;
  int remap_pending, remap_failed;
  unsigned long long reasons;
  unsigned gen_max, power_mw, max_sm_mhz;
  unsigned long long memory_bytes;
  unsigned long long xid;
  int xid_delivered;
  unsigned long long crc_later[LINKS];
  unsigned crc_reads[LINKS];
  unsigned long long crc_rate[LINKS];
  unsigned long long replay_later[LINKS];
  unsigned replay_reads[LINKS];
  unsigned processes;
} fake_gpu;

/* What nvmlPciInfo_t holds, in its documented order. */
typedef struct {
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
} fake_pci;

typedef struct fake_gpu_handle *nvmlDevice_t;

/* The entry points exported, with NVML's documented signatures (enums as
 * int, nvmlPciInfo_t as fake_pci). */
int nvmlInit_v2(void);
int nvmlShutdown(void);
const char *nvmlErrorString(int rc);
int nvmlSystemGetDriverVersion(char *buf, unsigned size);
int nvmlDeviceGetCount_v2(unsigned *count);
int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *dev);
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvmlDevice_t *dev);
int nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, fake_pci *pci);
int nvmlDeviceGetName(nvmlDevice_t dev, char *buf, unsigned size);
int nvmlDeviceGetUUID(nvmlDevice_t dev, char *buf, unsigned size);
int nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int type, int counter,
                                unsigned long long *count);
int nvmlDeviceGetRetiredPages(nvmlDevice_t dev, int cause, unsigned *count,
                              unsigned long long *addresses);
int nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t dev, int *pending);
int nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned *corrected, unsigned *uncorrected,
                              unsigned *pending, unsigned *failed);
int nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned link, int *active);
int nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t dev, unsigned link, int counter,
                                    unsigned long long *value);
int nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t dev, unsigned *v);
int nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t dev, unsigned *v);
int nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t dev, unsigned *v);
int nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t dev, unsigned *v);
int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *reasons);
/* nvmlMemory_t: total, free, used (bytes). */
typedef struct {
  unsigned long long total, free, used;
} fake_memory;
int nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, fake_memory *memory);
int nvmlDeviceGetPowerManagementLimit(nvmlDevice_t dev, unsigned *limit_mw);
int nvmlDeviceGetMaxClockInfo(nvmlDevice_t dev, int type, unsigned *mhz);
/* nvmlEventData_t: device, eventType, eventData, gpuInstanceId,
 * computeInstanceId. */
typedef struct {
  nvmlDevice_t device;
  unsigned long long type, data;
  unsigned gpu_instance, compute_instance;
} fake_event;
typedef struct fake_event_set *nvmlEventSet_t;
int nvmlEventSetCreate(nvmlEventSet_t *set);
int nvmlDeviceRegisterEvents(nvmlDevice_t dev, unsigned long long types, nvmlEventSet_t set);
int nvmlEventSetWait_v2(nvmlEventSet_t set, fake_event *data, unsigned timeout_ms);
int nvmlEventSetFree(nvmlEventSet_t set);
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned *count, void *infos);

static fake_gpu gpus[MAX_GPUS];
static unsigned gpu_count;
static int initialized;  /* nvmlInit_v2 calls not yet shut down */
static struct timespec born;  /* when the state was built (CLOCK_MONOTONIC) */

/* Strict unsigned field of the fault list; advances *s past it. */
static int parse_uint(const char **s, unsigned long long max, unsigned long long *out) {
  char *end = NULL;
  if (**s < '0' || **s > '9') return 0;
  unsigned long long v = strtoull(*s, &end, 10);
  if (end == *s || v > max) return 0;
  *s = end;
  *out = v;
  return 1;
}

static int field(const char **s, unsigned long long max, unsigned long long *out) {
  if (**s != ':') return 0;
  (*s)++;
  return parse_uint(s, max, out);
}

static int parse_fault(const char **s) {
  static const char *const kinds[] = {"nvlink_down",  "nvlink_recovery", "pcie_x8",
                                      "ecc_uncorrected", "remap_pending", "remap_failed",
                                      "hw_slowdown", "sw_power_cap",   "no_ecc", "hang", "nvlink_sleep",
                                      "pcie_gen4", "power_limit", "memory_mib", "max_sm_clock", "xid",
                                      "nvlink_crc_load", "processes", "nvlink_crc_rate",
                                      "nvlink_replay_load"};
  size_t k = 0, n = sizeof kinds / sizeof kinds[0];
  size_t len = strcspn(*s, ":,");
  while (k < n && !(strlen(kinds[k]) == len && strncmp(*s, kinds[k], len) == 0)) k++;
  if (k == n) return 0;
  *s += len;
  unsigned long long g = 0, a = 0, b = 0;
  if (!field(s, gpu_count - 1, &g)) return 0;
  fake_gpu *x = &gpus[g];
  switch (k) {
    case 0: if (!field(s, LINKS - 1, &a)) return 0; x->link_down[a] = 1; break;
    case 1:
      if (!field(s, LINKS - 1, &a) || !field(s, 1000000, &b)) return 0;
      x->recovery[a] = b;
      break;
    case 2: x->width = 8; break;
    case 3: if (!field(s, 1000000, &a)) return 0; x->ecc_uncorrected = a; break;
    case 4:
      if (!field(s, 1000, &a)) return 0;
      x->remap_rows = (unsigned)a;
      x->remap_pending = 1;
      break;
    case 5: x->remap_failed = 1; break;
    case 6: x->reasons |= 0x8; break;
    case 7: x->reasons |= 0x4; break;
    case 8: x->no_ecc = 1; break;
    case 9: if (!field(s, 3600, &a)) return 0; x->hang_s = (unsigned)a; break;
    case 10: if (!field(s, LINKS - 1, &a)) return 0; x->link_sleep[a] = 1; break;
    case 11: x->gen_max = 4; break;
    case 12: if (!field(s, 10000, &a) || a == 0) return 0; x->power_mw = (unsigned)a * 1000; break;
    case 13:
      if (!field(s, 1u << 24, &a) || a == 0) return 0;
      x->memory_bytes = a << 20;
      break;
    case 14: if (!field(s, 100000, &a) || a == 0) return 0; x->max_sm_mhz = (unsigned)a; break;
    case 15: if (!field(s, 1000, &a) || a == 0) return 0; x->xid = a; break;
    case 16:
      if (!field(s, LINKS - 1, &a) || !field(s, 1000000, &b)) return 0;
      x->crc_later[a] = b;
      break;
    case 17: if (!field(s, 1000, &a)) return 0; x->processes = (unsigned)a; break;
    case 18:
      if (!field(s, LINKS - 1, &a) || !field(s, 1000000, &b)) return 0;
      x->crc_rate[a] = b;
      break;
    default:
      if (!field(s, LINKS - 1, &a) || !field(s, 1000000, &b)) return 0;
      x->replay_later[a] = b;
      break;
  }
  return 1;
}

int nvmlInit_v2(void) {
  if (initialized > 0) {
    initialized++;
    return OK;
  }
  memset(gpus, 0, sizeof gpus);
  clock_gettime(CLOCK_MONOTONIC, &born);
  gpu_count = 4;
  const char *count = getenv("GS_NVML_DOUBLE_GPUS");
  if (count && *count) {
    unsigned long long v = 0;
    const char *s = count;
    if (!parse_uint(&s, MAX_GPUS, &v) || *s || v == 0) return INVALID_ARGUMENT;
    gpu_count = (unsigned)v;
  }
  for (unsigned i = 0; i < gpu_count; i++) {
    gpus[i].width = 16;
    gpus[i].reasons = 0x1;  // idle
    gpus[i].gen_max = 5;
    gpus[i].power_mw = 700000;
    gpus[i].max_sm_mhz = 1980;
    gpus[i].memory_bytes = 143771ull << 20;
  }
  const char *s = getenv("GS_NVML_DOUBLE_FAULTS");
  while (s && *s) {
    if (!parse_fault(&s)) return INVALID_ARGUMENT;
    if (*s == ',') s++;
    else if (*s) return INVALID_ARGUMENT;
  }
  initialized = 1;
  return OK;
}

int nvmlShutdown(void) {
  if (initialized == 0) return UNINITIALIZED;
  initialized--;
  return OK;
}

const char *nvmlErrorString(int rc) {
  switch (rc) {
    case OK: return "Success";
    case UNINITIALIZED: return "Uninitialized";
    case INVALID_ARGUMENT: return "Invalid Argument";
    case NOT_SUPPORTED: return "Not Supported";
    case NOT_FOUND: return "Not Found";
    case INSUFFICIENT_SIZE: return "Insufficient Size";
    default: return "Unknown Error";
  }
}

int nvmlSystemGetDriverVersion(char *buf, unsigned size) {
  if (!initialized) return UNINITIALIZED;
  if (size < 16) return INSUFFICIENT_SIZE;
  snprintf(buf, size, "%s", "999.99.99");
  return OK;
}

int nvmlDeviceGetCount_v2(unsigned *count) {
  if (!initialized) return UNINITIALIZED;
  *count = gpu_count;
  return OK;
}

/* Handles are 1-based indices, so that no handle is NULL. */
static fake_gpu *gpu_of(nvmlDevice_t dev, unsigned *index) {
  size_t v = (size_t)(void *)dev;
  if (!initialized || v == 0 || v > gpu_count) return NULL;
  if (index) *index = (unsigned)(v - 1);
  return &gpus[v - 1];
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *dev) {
  if (!initialized) return UNINITIALIZED;
  if (index >= gpu_count) return INVALID_ARGUMENT;
  *dev = (nvmlDevice_t)(void *)(size_t)(index + 1);
  return OK;
}

/* GPU i sits at bus 0x10 + i of domain 0; either bus id form is accepted,
 * as NVML does ("0000:10:00.0" from CUDA, "00000000:10:00.0" from NVML). */
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvmlDevice_t *dev) {
  if (!initialized) return UNINITIALIZED;
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  char tail = 0;
  if (sscanf(bus_id, "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &tail) != 4)
    return INVALID_ARGUMENT;
  if (domain != 0 || device != 0 || function != 0 || bus < 0x10 || bus >= 0x10 + gpu_count)
    return NOT_FOUND;
  *dev = (nvmlDevice_t)(void *)(size_t)(bus - 0x10 + 1);
  return OK;
}

int nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, fake_pci *pci) {
  unsigned i = 0;
  if (!gpu_of(dev, &i)) return INVALID_ARGUMENT;
  memset(pci, 0, sizeof *pci);
  pci->bus = 0x10 + i;
  snprintf(pci->bus_id, sizeof pci->bus_id, "00000000:%02X:00.0", 0x10 + i);
  snprintf(pci->bus_id_legacy, sizeof pci->bus_id_legacy, "0000:%02X:00.0", 0x10 + i);
  return OK;
}

int nvmlDeviceGetName(nvmlDevice_t dev, char *buf, unsigned size) {
  if (!gpu_of(dev, NULL)) return INVALID_ARGUMENT;
  const char *name = getenv("GS_NVML_DOUBLE_NAME");
  snprintf(buf, size, "%s", name && *name ? name : "gpuscale NVML test double");
  return OK;
}

int nvmlDeviceGetUUID(nvmlDevice_t dev, char *buf, unsigned size) {
  unsigned i = 0;
  if (!gpu_of(dev, &i)) return INVALID_ARGUMENT;
  snprintf(buf, size, "GPU-00000000-0000-0000-0000-%012u", i);
  return OK;
}

int nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int type, int counter,
                                unsigned long long *count) {
  fake_gpu *x = gpu_of(dev, NULL);
  if (!x || (type != 0 && type != 1) || (counter != 0 && counter != 1)) return INVALID_ARGUMENT;
  if (x->no_ecc) return NOT_SUPPORTED;
  *count = type == 1 ? x->ecc_uncorrected : 0;
  return OK;
}

int nvmlDeviceGetRetiredPages(nvmlDevice_t dev, int cause, unsigned *count,
                              unsigned long long *addresses) {
  (void)cause, (void)count, (void)addresses;
  return gpu_of(dev, NULL) ? NOT_SUPPORTED : INVALID_ARGUMENT;
}

int nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t dev, int *pending) {
  (void)pending;
  return gpu_of(dev, NULL) ? NOT_SUPPORTED : INVALID_ARGUMENT;
}

int nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned *corrected, unsigned *uncorrected,
                              unsigned *pending, unsigned *failed) {
  fake_gpu *x = gpu_of(dev, NULL);
  if (!x) return INVALID_ARGUMENT;
  *corrected = 0;
  *uncorrected = x->remap_rows;
  *pending = (unsigned)x->remap_pending;
  *failed = (unsigned)x->remap_failed;
  return OK;
}

int nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned link, int *active) {
  fake_gpu *x = gpu_of(dev, NULL);
  if (!x || link >= LINKS) return INVALID_ARGUMENT;
  *active = x->link_down[link] ? 0 : x->link_sleep[link] ? 2 : 1;
  return OK;
}

int nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t dev, unsigned link, int counter,
                                    unsigned long long *value) {
  fake_gpu *x = gpu_of(dev, NULL);
  if (!x || link >= LINKS || counter < 0 || counter > 4) return INVALID_ARGUMENT;
  *value = counter == 1 ? x->recovery[link] : 0;
  if (counter == 0 && x->replay_reads[link]++ > 0) *value = x->replay_later[link];
  if (counter == 2 && x->crc_reads[link]++ > 0) *value = x->crc_later[link];
  if (counter == 2 && x->crc_rate[link]) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const double age = (double)(now.tv_sec - born.tv_sec) + (now.tv_nsec - born.tv_nsec) / 1e9;
    *value = (unsigned long long)(age * (double)x->crc_rate[link]);
  }
  return OK;
}

int nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t dev, unsigned *v) {
  fake_gpu *x = gpu_of(dev, NULL);
  if (!x) return INVALID_ARGUMENT;
  *v = x->gen_max;
  return OK;
}

int nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t dev, unsigned *v) {
  return nvmlDeviceGetCurrPcieLinkGeneration(dev, v);
}

int nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t dev, unsigned *v) {
  fake_gpu *x = gpu_of(dev, NULL);
  if (!x) return INVALID_ARGUMENT;
  *v = x->width;
  return OK;
}

int nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t dev, unsigned *v) {
  if (!gpu_of(dev, NULL)) return INVALID_ARGUMENT;
  *v = 16;
  return OK;
}

int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *reasons) {
  fake_gpu *x = gpu_of(dev, NULL);
  if (!x) return INVALID_ARGUMENT;
  if (x->hang_s) sleep(x->hang_s);
  *reasons = x->reasons;
  return OK;
}

int nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, fake_memory *memory) {
  fake_gpu *x = gpu_of(dev, NULL);
  if (!x) return INVALID_ARGUMENT;
  memory->total = x->memory_bytes;
  memory->used = 512ull << 20;
  memory->free = x->memory_bytes - memory->used;
  return OK;
}

int nvmlDeviceGetPowerManagementLimit(nvmlDevice_t dev, unsigned *limit_mw) {
  fake_gpu *x = gpu_of(dev, NULL);
  if (!x) return INVALID_ARGUMENT;
  *limit_mw = x->power_mw;
  return OK;
}

/* nvmlClockType_t: 0 graphics, 1 SM, 2 memory, 3 video. */
int nvmlDeviceGetMaxClockInfo(nvmlDevice_t dev, int type, unsigned *mhz) {
  fake_gpu *x = gpu_of(dev, NULL);
  if (!x || type < 0 || type > 3) return INVALID_ARGUMENT;
  *mhz = type == 2 ? 3201 : type == 3 ? 1545 : x->max_sm_mhz;
  return OK;
}

/* One event set: the GPUs registered in it (bit i: GPU i). */
struct fake_event_set {
  unsigned registered;
};

int nvmlEventSetCreate(nvmlEventSet_t *set) {
  if (!initialized) return UNINITIALIZED;
  *set = calloc(1, sizeof **set);
  return *set ? OK : 999;
}

int nvmlDeviceRegisterEvents(nvmlDevice_t dev, unsigned long long types, nvmlEventSet_t set) {
  unsigned i = 0;
  if (!gpu_of(dev, &i) || !set) return INVALID_ARGUMENT;
  if (types & 0x8) set->registered |= 1u << i;  // nvmlEventTypeXidCriticalError
  return OK;
}

/* Delivers a waiting XID at once; none: NVML_ERROR_TIMEOUT (10) at once,
 * whatever the timeout (the check asks with 0). */
int nvmlEventSetWait_v2(nvmlEventSet_t set, fake_event *data, unsigned timeout_ms) {
  (void)timeout_ms;
  if (!initialized) return UNINITIALIZED;
  if (!set) return INVALID_ARGUMENT;
  for (unsigned i = 0; i < gpu_count; i++) {
    if (!(set->registered & (1u << i)) || !gpus[i].xid || gpus[i].xid_delivered) continue;
    gpus[i].xid_delivered = 1;
    memset(data, 0, sizeof *data);
    data->device = (nvmlDevice_t)(void *)(size_t)(i + 1);
    data->type = 0x8;
    data->data = gpus[i].xid;
    return OK;
  }
  return 10;
}

int nvmlEventSetFree(nvmlEventSet_t set) {
  free(set);
  return OK;
}

/* Asked with room for fewer entries than there are processes (gpuscale
 * asks with none), NVML answers the count and INSUFFICIENT_SIZE. The double
 * fills no entries: gpuscale reads only the count. */
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned *count, void *infos) {
  fake_gpu *x = gpu_of(dev, NULL);
  if (!x || !count) return INVALID_ARGUMENT;
  const unsigned room = *count;
  *count = x->processes;
  if (room < x->processes) return INSUFFICIENT_SIZE;
  (void)infos;
  return x->processes ? NOT_SUPPORTED : OK;
}
