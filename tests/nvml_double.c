/* A test double of the NVML library, for tests only (built in the tree,
 * never installed). gpuscale loads it instead of libnvidia-ml when
 * GPUSCALE_NVML_LIBRARY names it, so that CPU-only CI can rehearse GPU
 * faults without harming hardware. It answers the entry points that
 * platform/nvml.c uses, with the documented signatures and return codes.
 *
 * A healthy node by default: GS_NVML_DOUBLE_GPUS GPUs (default 4, at most
 * 16), each with 18 NVLink ports up and no link errors, PCIe gen 5 x16 of
 * gen 5 x16, ECC on with no errors, no row remaps, page retirement
 * unsupported (as on Ampere and later), clocks idle. GS_NVML_DOUBLE_FAULTS
 * adds faults, a comma-separated list of
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
 *   processes:GPU:N             N processes hold a compute context on it
 * A malformed list makes nvmlInit_v2 fail with NVML_ERROR_INVALID_ARGUMENT,
 * so a typo in a test cannot pass silently. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned *count, void *infos);

static fake_gpu gpus[MAX_GPUS];
static unsigned gpu_count;
static int initialized;

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
                                      "processes"};
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
    default: if (!field(s, 1000, &a)) return 0; x->processes = (unsigned)a; break;
  }
  return 1;
}

int nvmlInit_v2(void) {
  memset(gpus, 0, sizeof gpus);
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
  initialized = 0;
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
  snprintf(buf, size, "%s", "gpuscale NVML test double");
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
  return OK;
}

int nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t dev, unsigned *v) {
  if (!gpu_of(dev, NULL)) return INVALID_ARGUMENT;
  *v = 5;
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
