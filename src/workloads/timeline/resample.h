/* The resample and fuse workloads (vtables in resample.c and fuse.c). */
#ifndef GS_RESAMPLE_H
#define GS_RESAMPLE_H

#include "workloads/workload.h"

extern const gs_workload gs_workload_resample;
extern const gs_workload gs_workload_fuse;

#endif
