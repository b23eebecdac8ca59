/* GPU discovery through the CUDA runtime, and the versions of the
 * communication libraries found at run time. */
#include "platform/device.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "core/check.h"

#ifdef GS_HAVE_MPI
#include <mpi.h>
#endif

/* Why the runtime found no device, in the user's terms. The static CUDA
 * runtime answers "driver version is insufficient" both when the driver is
 * older than the runtime and when there is no driver at all (no
 * libcuda.so.1 to open); the second would send users to upgrade a driver
 * they do not have, so it is told apart by asking the loader. */
static void describe_no_device(cudaError_t rc, char *why, size_t why_size) {
  if (rc == cudaErrorInsufficientDriver) {
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!driver) {
      const char *error = dlerror();
      if (!error || strstr(error, "No such file"))
        snprintf(why, why_size, "no usable CUDA device: no NVIDIA driver found (no libcuda.so.1)");
      else
        snprintf(why, why_size, "no usable CUDA device: no NVIDIA driver found (%s)", error);
      return;
    }
    dlclose(driver);
  }
  snprintf(why, why_size, "no usable CUDA device: %s", cudaGetErrorString(rc));
}

int gs_device_count(char *why, size_t why_size) {
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    // No driver, or a driver older than the runtime: no usable device here.
    if (why) describe_no_device(rc, why, why_size);
    (void)cudaGetLastError();
    return 0;
  }
  if (count == 0 && why) snprintf(why, why_size, "the CUDA driver reports no device");
  return count;
}

static void format_uuid(const cudaUUID_t *uuid, char *out, size_t size) {
  const unsigned char *b = (const unsigned char *)uuid->bytes;
  snprintf(out, size,
           "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
           b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
           b[14], b[15]);
}

static int device_attribute(enum cudaDeviceAttr attr, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return value;
}

static gs_status describe_gpu(int device, gs_gpu_desc *gpu) {
  struct cudaDeviceProp prop;
  GS_CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  memset(gpu, 0, sizeof *gpu);
  gpu->index = device;
  snprintf(gpu->name, sizeof gpu->name, "%s", prop.name);
  format_uuid(&prop.uuid, gpu->uuid, sizeof gpu->uuid);
  GS_CHECK_CUDA(cudaDeviceGetPCIBusId(gpu->pci_bus_id, (int)sizeof gpu->pci_bus_id, device));
  gpu->memory_bytes = (uint64_t)prop.totalGlobalMem;
  gpu->sm_count = prop.multiProcessorCount;
  gpu->cc_major = prop.major;
  gpu->cc_minor = prop.minor;
  gpu->clock_mhz = device_attribute(cudaDevAttrClockRate, device) / 1000;
  int memory_khz = device_attribute(cudaDevAttrMemoryClockRate, device);
  gpu->memory_clock_mhz = memory_khz / 1000;
  gpu->memory_bus_width_bits = device_attribute(cudaDevAttrGlobalMemoryBusWidth, device);
  const int l2 = device_attribute(cudaDevAttrL2CacheSize, device);
  gpu->l2_cache_bytes = l2 > 0 ? (uint64_t)l2 : 0;
  // Double data rate: two transfers per memory clock over the whole bus.
  gpu->peak_memory_bandwidth =
      2.0 * (double)memory_khz * 1e3 * (double)gpu->memory_bus_width_bits / 8.0;
  return GS_OK;
}

gs_status gs_device_discover(gs_environment *env) {
  int version = 0;
  if (cudaDriverGetVersion(&version) != cudaSuccess) version = 0;
  env->cuda_driver_version = version;
  version = 0;
  if (cudaRuntimeGetVersion(&version) != cudaSuccess) version = 0;
  env->cuda_runtime_version = version;
  (void)cudaGetLastError();

  char why[GS_TEXT_LONG] = "";
  int count = gs_device_count(why, sizeof why);
  env->gpu_count = 0;
  free(env->gpus);
  env->gpus = NULL;
  if (count == 0) {
    snprintf(env->cuda_status, sizeof env->cuda_status, "%s", why);
    return GS_OK;
  }
  env->gpus = calloc((size_t)count, sizeof *env->gpus);
  if (!env->gpus) return gs_error(GS_ERR_NOMEM, "cannot allocate the GPU list");
  for (int d = 0; d < count; d++) {
    GS_TRY(describe_gpu(d, &env->gpus[d]));
    env->gpu_count++;
  }
  snprintf(env->cuda_status, sizeof env->cuda_status, "%d device%s", count,
           count == 1 ? "" : "s");
  return GS_OK;
}

void gs_device_collect_library_versions(gs_environment *env) {
  env->nccl_version[0] = '\0';
  // NCCL is opened at run time (platform/nccl.c); without it the call fails
  // and the version stays empty.
  int code = 0;
  if (ncclGetVersion(&code) == ncclSuccess && code > 0) {
    // NCCL >= 2.9 encodes versions as major*10000 + minor*100 + patch.
    snprintf(env->nccl_version, sizeof env->nccl_version, "%d.%d.%d", code / 10000,
             (code / 100) % 100, code % 100);
  }
  env->mpi_version[0] = '\0';
#ifdef GS_HAVE_MPI
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  if (MPI_Get_library_version(text, &length) == MPI_SUCCESS) {
    char *newline = strchr(text, '\n');
    if (newline) *newline = '\0';
    snprintf(env->mpi_version, sizeof env->mpi_version, "%s", text);
  }
#endif
}
