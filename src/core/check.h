/* Check macros for library calls. Each evaluates its argument once; on
 * failure it records (never prints) the expression, file:line and the
 * library's own message, and returns the matching gs_status from the
 * enclosing function (which must return gs_status). The command prints the
 * recorded error once (gs_error_print). Include the library's header before
 * using its macro. */
#ifndef GS_CHECK_H
#define GS_CHECK_H

#include "core/status.h"

#define GS_CHECK_CUDA(expr)                                                    \
  do {                                                                         \
    cudaError_t gs_check_rc_ = (expr);                                         \
    if (gs_check_rc_ != cudaSuccess)                                           \
      return gs_error_call(GS_ERR_CUDA, "CUDA", #expr, __FILE__, __LINE__,     \
                           cudaGetErrorString(gs_check_rc_));                  \
  } while (0)

#define GS_CHECK_NCCL(expr)                                                    \
  do {                                                                         \
    ncclResult_t gs_check_rc_ = (expr);                                        \
    if (gs_check_rc_ != ncclSuccess)                                           \
      return gs_error_call(GS_ERR_NCCL, "NCCL", #expr, __FILE__, __LINE__,     \
                           ncclGetErrorString(gs_check_rc_));                  \
  } while (0)

#define GS_CHECK_MPI(expr)                                                     \
  do {                                                                         \
    int gs_check_rc_ = (expr);                                                 \
    if (gs_check_rc_ != MPI_SUCCESS) {                                         \
      char gs_check_msg_[MPI_MAX_ERROR_STRING];                                \
      int gs_check_len_ = 0;                                                   \
      MPI_Error_string(gs_check_rc_, gs_check_msg_, &gs_check_len_);           \
      return gs_error_call(GS_ERR_MPI, "MPI", #expr, __FILE__, __LINE__,       \
                           gs_check_msg_);                                     \
    }                                                                          \
  } while (0)

/* cuBLAS and cuBLASLt (they share cublasStatus_t). */
#define GS_CHECK_CUBLAS(expr)                                                  \
  do {                                                                         \
    cublasStatus_t gs_check_rc_ = (expr);                                      \
    if (gs_check_rc_ != CUBLAS_STATUS_SUCCESS)                                 \
      return gs_error_call(GS_ERR_CUDA, "cuBLAS", #expr, __FILE__, __LINE__,   \
                           cublasGetStatusString(gs_check_rc_));               \
  } while (0)

/* NVML is loaded at run time: `errstr` is the loaded nvmlErrorString. */
#define GS_CHECK_NVML(expr, errstr)                                            \
  do {                                                                         \
    int gs_check_rc_ = (int)(expr);                                            \
    if (gs_check_rc_ != 0)                                                     \
      return gs_error_call(GS_ERR_NVML, "NVML", #expr, __FILE__, __LINE__,     \
                           (errstr) ? (errstr)(gs_check_rc_) : "unknown");     \
  } while (0)

/* Propagates a non-OK gs_status from a call. */
#define GS_TRY(expr)                                                           \
  do {                                                                         \
    gs_status gs_try_rc_ = (expr);                                             \
    if (gs_try_rc_ != GS_OK) return gs_try_rc_;                                \
  } while (0)

#endif
