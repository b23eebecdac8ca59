/* The llm workload's driver hooks: `gpuscale run llm` and `scale llm` go
 * through the common sweep (measure/sweep.c), but each measurement is a
 * scenario run by scenario.c instead of the fixed-step runner. */
#ifndef GS_LLM_DRIVER_H
#define GS_LLM_DRIVER_H

#include "workloads/workload.h"

extern const gs_workload_driver gs_llm_driver;

#endif
