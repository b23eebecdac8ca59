/* GPU discovery through the CUDA runtime. Zero devices, or no driver at
 * all, is a normal state: the inventory is simply empty and says why. */
#ifndef GS_DEVICE_H
#define GS_DEVICE_H

#include "core/result.h"
#include "core/status.h"

/* Fills env's CUDA fields (driver and runtime versions, status text) and its
 * GPU list (allocated; freed by gs_environment_free). Never fails because
 * there is no GPU or no driver: env->gpu_count is then 0 and cuda_status
 * says why. Returns an error only when a present device cannot be queried. */
gs_status gs_device_discover(gs_environment *env);

/* Fills env's NCCL and MPI version strings where those libraries are
 * available (NCCL is probed at run time; MPI when built with it). */
void gs_device_collect_library_versions(gs_environment *env);

/* Number of CUDA devices usable by this process; 0 when there is no driver
 * or no device. `why` (may be NULL) receives the reason when 0. */
int gs_device_count(char *why, size_t why_size);

#endif
