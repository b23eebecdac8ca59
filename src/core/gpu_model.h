/* The expected figures of GPU models (data/gpu-models.json, installed with
 * gpuscale, or a site's own file given with `gpuscale check --expect`):
 * memory size and bandwidth, NVLink ports and bandwidth, PCIe generation
 * and width, power limit, maximum clocks, peak math rates (the rooflines
 * of `gpuscale run`, core/roofline.h), each with the public document it
 * comes from. Read strictly: an unknown member, a wrong type, a figure
 * without its source or a name listed twice is an error naming the file and
 * the member. The judgement against these figures is report/verdict's. */
#ifndef GS_GPU_MODEL_H
#define GS_GPU_MODEL_H

#include <stddef.h>

#include "core/status.h"
#include "core/types.h"

/* The figures a model may state; each is optional (absent: not checked). */
typedef enum {
  GS_FIG_MEMORY_GB = 0,         /* memory size, 10^9 bytes */
  GS_FIG_MEMORY_BANDWIDTH_GBS,  /* device memory bandwidth, 10^9 bytes/s */
  GS_FIG_NVLINK_LINKS,          /* NVLink ports of one GPU */
  GS_FIG_NVLINK_GBS,            /* NVLink bandwidth of one GPU, one direction, 10^9 bytes/s */
  GS_FIG_PCIE_GENERATION,
  GS_FIG_PCIE_WIDTH,            /* lanes */
  GS_FIG_POWER_LIMIT_W,         /* default power limit (max TDP), watts */
  GS_FIG_MAX_SM_CLOCK_MHZ,
  GS_FIG_MAX_MEMORY_CLOCK_MHZ,
  GS_FIG_FP32_TFLOPS,           /* fp32 (non-tensor) peak, 10^12 flop/s */
  GS_FIG_TF32_TENSOR_TFLOPS,    /* dense tf32 tensor-core peak (no sparsity), 10^12 flop/s */
  GS_FIG_BF16_TENSOR_TFLOPS,    /* dense bf16 tensor-core peak (no sparsity), 10^12 flop/s */
  GS_FIG_COUNT
} gs_figure;

#define GS_FIGURE_SOURCE_MAX 512

typedef struct {
  int has;
  double value;                 /* > 0; an integer for counts */
  char source[GS_FIGURE_SOURCE_MAX];
} gs_model_figure;

typedef struct {
  char model[GS_TEXT_SHORT];    /* "H200 SXM 141GB" */
  int sxm;                      /* form factor: 1 SXM (NVLink expected), 0 PCIe */
  size_t name_count;
  char (*nvml_names)[GS_TEXT_SHORT]; /* NVML's device names; owned */
  gs_model_figure fig[GS_FIG_COUNT];
} gs_gpu_model;

typedef struct {
  char path[GS_TEXT_LONG];      /* where the models were read from */
  size_t n;
  gs_gpu_model *models;         /* owned */
} gs_gpu_models;

/* The stable JSON key of a figure ("memory_bandwidth_gbs"). */
const char *gs_figure_key(gs_figure f);

/* Parses the models document `text` (NUL-terminated); `origin` names it in
 * errors and in out->path. GS_ERR_FORMAT on anything that is
 * not exactly the documented form (docs/check.md); out is then empty.
 * Free with gs_gpu_models_free, also after a failure. */
gs_status gs_gpu_models_parse(const char *text, const char *origin, gs_gpu_models *out);

/* Reads and parses the file `path` (at most 1 MiB). GS_ERR_IO when it
 * cannot be read, GS_ERR_FORMAT when it is malformed. */
gs_status gs_gpu_models_load(const char *path, gs_gpu_models *out);

/* The model whose nvml_names hold `nvml_name` exactly; NULL when none. */
const gs_gpu_model *gs_gpu_models_find(const gs_gpu_models *m, const char *nvml_name);

void gs_gpu_models_free(gs_gpu_models *m);

#endif
