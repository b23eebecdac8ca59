/* The machine as `gpuscale info` describes it: the environment (host, CPU,
 * GPUs, library versions), what NVML adds per GPU (power limit, clocks,
 * NUMA node, CPU affinity) and the link topology; and the info result
 * document that suite writes as info.json (docs/info.md). */
#ifndef GS_MEASURE_INFO_H
#define GS_MEASURE_INFO_H

#include <cjson/cJSON.h>

#include "core/result.h"
#include "platform/nvml.h"
#include "platform/topology.h"

/* What `gpuscale info` shows, collected once. */
typedef struct {
  gs_environment env;
  char nvml_status[GS_TEXT_LONG];  /* "" when NVML loaded, else why not */
  char driver[GS_TEXT_SHORT];      /* NVIDIA driver version from NVML; "" unknown */
  gs_nvml_gpu_info *nvml_gpus;     /* env.gpu_count entries */
  gs_topology topo;
  char (*numa_text)[16];           /* per GPU, for the matrix columns */
  const char **affinity;           /* per GPU, points into nvml_gpus */
  const char **numa;               /* per GPU, points into numa_text */
  const char **names;
  const char **bus_ids;
} gs_machine_info;

/* Collects everything (no GPU is a normal state: the GPU lists are empty
 * and cuda_status says why). Free with gs_machine_info_free, also after a
 * failure. */
gs_status gs_machine_info_collect(gs_machine_info *d);
void gs_machine_info_free(gs_machine_info *d);

/* The info result document ("command": "info"; config {"format": NAME};
 * the environment with the NVML and topology members). *doc is the
 * caller's. */
gs_status gs_machine_info_document(const gs_machine_info *d, const char *format_name,
                                   cJSON **doc);

#endif
