/* cuBLAS and cuBLASLt loaded at run time, on first use. The binary does
 * not link them: cuBLASLt's constructors alone take ~0.2 s and ~200 MB at
 * every start (measured on CUDA 13: `gpuscale --version` 0.28 s, 221 MB
 * resident), which every command paid, report and compare included
 * (docs/report.md, "Speed"). Each function gpuscale calls is defined here
 * under cuBLAS's own name and forwards to the library, which is opened with
 * dlopen the first time one is called; mlp and llm call cuBLAS as before.
 * When the library cannot be opened, every call returns
 * CUBLAS_STATUS_NOT_INITIALIZED and cublasGetStatusString says why. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define GS_BLAS_STRING(x) #x
#define GS_BLAS_SONAME(name, major) "lib" name ".so." GS_BLAS_STRING(major)

typedef struct {
  void *blas, *lt;
  char error[512]; /* why a library could not be opened; "" when both were */
} blas_libraries;

static blas_libraries libraries;
static pthread_once_t libraries_once = PTHREAD_ONCE_INIT;

/* Opens both libraries (through the loader's search path: the CUDA
 * toolkit's ld.so.conf entry, LD_LIBRARY_PATH). */
static void open_libraries(void) {
  static const char *const names[2] = {GS_BLAS_SONAME("cublas", CUBLAS_VER_MAJOR),
                                       GS_BLAS_SONAME("cublasLt", CUBLAS_VER_MAJOR)};
  void **slots[2] = {&libraries.blas, &libraries.lt};
  for (int i = 0; i < 2; i++) {
    *slots[i] = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!*slots[i] && !libraries.error[0]) {
      const char *why = dlerror();
      snprintf(libraries.error, sizeof libraries.error, "cannot load %s: %s", names[i],
               why ? why : "unknown error");
    }
  }
}

/* The address of `name` in cuBLAS (lt 0) or cuBLASLt (lt 1), or NULL. */
static void *blas_symbol(int lt, const char *name) {
  pthread_once(&libraries_once, open_libraries);
  void *lib = lt ? libraries.lt : libraries.blas;
  return lib ? dlsym(lib, name) : NULL;
}

/* Defines NAME(PARAMS) forwarding ARGS to the library's NAME; without the
 * library it returns CUBLAS_STATUS_NOT_INITIALIZED. memcpy turns the object
 * pointer dlsym gives into a function pointer without a cast ISO C lacks. */
#define GS_BLAS_FORWARD(lt, name, params, args)                        \
  cublasStatus_t CUBLASWINAPI name params {                            \
    cublasStatus_t(*fn) params = NULL;                                 \
    void *symbol = blas_symbol(lt, #name);                             \
    if (!symbol) return CUBLAS_STATUS_NOT_INITIALIZED;                 \
    memcpy(&fn, &symbol, sizeof fn);                                   \
    return fn args;                                                    \
  }

GS_BLAS_FORWARD(0, cublasCreate_v2, (cublasHandle_t * handle), (handle))
GS_BLAS_FORWARD(0, cublasDestroy_v2, (cublasHandle_t handle), (handle))
GS_BLAS_FORWARD(0, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream),
                (handle, stream))
GS_BLAS_FORWARD(0, cublasSetWorkspace_v2, (cublasHandle_t handle, void *workspace, size_t bytes),
                (handle, workspace, bytes))
GS_BLAS_FORWARD(0, cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode), (handle, mode))
GS_BLAS_FORWARD(0, cublasGemmEx,
                (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                 int n, int k, const void *alpha, const void *A, cudaDataType Atype, int lda,
                 const void *B, cudaDataType Btype, int ldb, const void *beta, void *C,
                 cudaDataType Ctype, int ldc, cublasComputeType_t compute, cublasGemmAlgo_t algo),
                (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C,
                 Ctype, ldc, compute, algo))
GS_BLAS_FORWARD(1, cublasLtCreate, (cublasLtHandle_t * handle), (handle))
GS_BLAS_FORWARD(1, cublasLtDestroy, (cublasLtHandle_t handle), (handle))
GS_BLAS_FORWARD(1, cublasLtMatmul,
                (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void *alpha,
                 const void *A, cublasLtMatrixLayout_t Adesc, const void *B,
                 cublasLtMatrixLayout_t Bdesc, const void *beta, const void *C,
                 cublasLtMatrixLayout_t Cdesc, void *D, cublasLtMatrixLayout_t Ddesc,
                 const cublasLtMatmulAlgo_t *algo, void *workspace, size_t workspace_bytes,
                 cudaStream_t stream),
                (handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo,
                 workspace, workspace_bytes, stream))
GS_BLAS_FORWARD(1, cublasLtMatmulAlgoGetHeuristic,
                (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
                 cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc,
                 cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t preference,
                 int requested, cublasLtMatmulHeuristicResult_t results[], int *returned),
                (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, preference, requested, results,
                 returned))
GS_BLAS_FORWARD(1, cublasLtMatmulDescCreate,
                (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute, cudaDataType_t scale),
                (desc, compute, scale))
GS_BLAS_FORWARD(1, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
GS_BLAS_FORWARD(1, cublasLtMatmulDescSetAttribute,
                (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void *buf,
                 size_t bytes),
                (desc, attr, buf, bytes))
GS_BLAS_FORWARD(1, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref), (pref))
GS_BLAS_FORWARD(1, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
GS_BLAS_FORWARD(1, cublasLtMatmulPreferenceSetAttribute,
                (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                 const void *buf, size_t bytes),
                (pref, attr, buf, bytes))
GS_BLAS_FORWARD(1, cublasLtMatrixLayoutCreate,
                (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols,
                 int64_t ld),
                (layout, type, rows, cols, ld))
GS_BLAS_FORWARD(1, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))

/* cuBLAS's own text for `status`; without the library, why it is missing. */
const char *CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  const char *(*fn)(cublasStatus_t) = NULL;
  void *symbol = blas_symbol(0, "cublasGetStatusString");
  if (!symbol) return libraries.error[0] ? libraries.error : "cuBLAS is not loaded";
  memcpy(&fn, &symbol, sizeof fn);
  return fn(status);
}
