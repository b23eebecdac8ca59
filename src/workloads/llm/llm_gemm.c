/* cuBLASLt GEMMs of the llm model (see llm_gemm.h). One matmul descriptor
 * (fp32 compute and scale, the weights transposed) serves every call; each
 * distinct (rows, outs, ins) gets its matrix layouts and heuristic
 * algorithm once, in a small table that recycles its oldest entry. */
#include "workloads/llm/llm_gemm.h"

#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#include "core/check.h"

/* Shapes kept at once: a prefill uses 5 (QKV, attention output, gate/up,
 * down, output projection), a decode step up to 5 more. */
#define GS_LLM_GEMM_PLANS 16

typedef struct {
  uint64_t rows, outs, ins; /* rows == 0: unused */
  cublasLtMatrixLayout_t w, x, y;
  cublasLtMatmulAlgo_t algo;
} gemm_plan;

struct gs_llm_gemm {
  cublasLtHandle_t lt;
  cublasLtMatmulDesc_t desc;
  cublasLtMatmulPreference_t preference;
  void *workspace;
  size_t workspace_bytes;
  gemm_plan plans[GS_LLM_GEMM_PLANS];
  unsigned next; /* the entry a new shape replaces */
};

static void plan_clear(gemm_plan *p) {
  if (p->w) cublasLtMatrixLayoutDestroy(p->w);
  if (p->x) cublasLtMatrixLayoutDestroy(p->x);
  if (p->y) cublasLtMatrixLayoutDestroy(p->y);
  memset(p, 0, sizeof *p);
}

static gs_status gemm_setup(gs_llm_gemm *g) {
  GS_CHECK_CUBLAS(cublasLtCreate(&g->lt));
  GS_CHECK_CUBLAS(cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transposed = CUBLAS_OP_T;
  GS_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                 &transposed, sizeof transposed));
  GS_CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&g->preference));
  GS_CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
      g->preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &g->workspace_bytes,
      sizeof g->workspace_bytes));
  return GS_OK;
}

gs_status gs_llm_gemm_create(void *workspace, size_t workspace_bytes, gs_llm_gemm **out) {
  *out = NULL;
  gs_llm_gemm *g = calloc(1, sizeof *g);
  if (!g) return gs_error(GS_ERR_NOMEM, "cannot allocate the cuBLASLt context");
  g->workspace = workspace;
  g->workspace_bytes = workspace_bytes;
  gs_status status = gemm_setup(g);
  if (status != GS_OK) {
    gs_llm_gemm_destroy(g);
    return status;
  }
  *out = g;
  return GS_OK;
}

void gs_llm_gemm_destroy(gs_llm_gemm *g) {
  if (!g) return;
  for (int i = 0; i < GS_LLM_GEMM_PLANS; i++) plan_clear(&g->plans[i]);
  if (g->preference) cublasLtMatmulPreferenceDestroy(g->preference);
  if (g->desc) cublasLtMatmulDescDestroy(g->desc);
  if (g->lt) cublasLtDestroy(g->lt);
  free(g);
}

/* Column-major view of the product: y^T (outs x rows) = op(W) x^T, where
 * the row-major outs x ins weights are an ins x outs column-major matrix
 * taken transposed, and x^T is ins x rows. */
static gs_status plan_make(gs_llm_gemm *g, gemm_plan *p, uint64_t rows, uint64_t outs,
                           uint64_t ins) {
  GS_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p->w, CUDA_R_16BF, ins, outs, (int64_t)ins));
  GS_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p->x, CUDA_R_16BF, ins, rows, (int64_t)ins));
  GS_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p->y, CUDA_R_32F, outs, rows, (int64_t)outs));
  cublasLtMatmulHeuristicResult_t best;
  int found = 0;
  GS_CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(g->lt, g->desc, p->w, p->x, p->y, p->y,
                                                 g->preference, 1, &best, &found));
  if (found < 1)
    return gs_error(GS_ERR_CUDA,
                    "cuBLASLt has no algorithm for a bf16 GEMM of %llu rows, %llu outputs and "
                    "%llu inputs",
                    (unsigned long long)rows, (unsigned long long)outs, (unsigned long long)ins);
  p->algo = best.algo;
  p->rows = rows;
  p->outs = outs;
  p->ins = ins;
  return GS_OK;
}

static gs_status plan_for(gs_llm_gemm *g, uint64_t rows, uint64_t outs, uint64_t ins,
                          const gemm_plan **out) {
  for (int i = 0; i < GS_LLM_GEMM_PLANS; i++) {
    const gemm_plan *p = &g->plans[i];
    if (p->rows == rows && p->outs == outs && p->ins == ins) {
      *out = p;
      return GS_OK;
    }
  }
  gemm_plan *p = &g->plans[g->next];
  g->next = (g->next + 1) % GS_LLM_GEMM_PLANS;
  plan_clear(p);
  gs_status status = plan_make(g, p, rows, outs, ins);
  if (status != GS_OK) {
    plan_clear(p);
    return status;
  }
  *out = p;
  return GS_OK;
}

gs_status gs_llm_gemm_run(gs_llm_gemm *g, const uint16_t *w, const uint16_t *x, float *y,
                          uint64_t rows, uint64_t outs, uint64_t ins, int accumulate,
                          cudaStream_t stream) {
  const gemm_plan *p = NULL;
  GS_TRY(plan_for(g, rows, outs, ins, &p));
  const float one = 1.0f, zero = 0.0f;
  GS_CHECK_CUBLAS(cublasLtMatmul(g->lt, g->desc, &one, w, p->w, x, p->x, accumulate ? &one : &zero,
                                 y, p->y, y, p->y, &p->algo, g->workspace, g->workspace_bytes,
                                 stream));
  return GS_OK;
}
