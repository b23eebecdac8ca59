/* Device helpers and the launcher shared by the llm's CUDA files
 * (llm_cuda.cu, llm_gemv.cu); CUDA only, included by nothing else:
 * bfloat16 conversions, warp sums, programmatic dependent launch, the L2
 * prefetch, the SwiGLU value and the launch of a kernel on a queue. */
#ifndef GS_LLM_CUDA_COMMON_H
#define GS_LLM_CUDA_COMMON_H

#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "workloads/llm/llm_cuda.h"

static __device__ __forceinline__ float bf16_to_float(uint16_t b) {
  return __uint_as_float((uint32_t)b << 16);
}

static __device__ __forceinline__ uint16_t float_to_bf16(float f) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

static __device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

static __device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/* Programmatic dependent launch (sm_90 and later). A kernel launched with
 * the overlap attribute (gs_llm_cuda_queue.overlap) may start while its
 * predecessor on the stream still runs: before wait_for_predecessor() it
 * may only read what no kernel writes (weights, the rotary table); after
 * it, everything the predecessor wrote is visible. allow_successor() lets
 * the next kernel start its blocks; every kernel here calls it right after
 * waiting, so at most one kernel runs ahead. Both are no-ops for a kernel
 * launched without the attribute and on older GPUs. */
static __device__ __forceinline__ void wait_for_predecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

static __device__ __forceinline__ void allow_successor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

static __device__ __forceinline__ void start_after_predecessor() {
  wait_for_predecessor();
  allow_successor();
}

/* Asks L2 for the 128-byte line holding p (no register is written). */
static __device__ __forceinline__ void prefetch_l2(const void *p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

static __device__ __forceinline__ uint16_t swiglu_value(float g, float u) {
  return float_to_bf16(g / (1.0f + __expf(-g)) * u);
}

/* Enqueues kernel<<<grid, block, shared>>>(args) on q.stream, allowed to
 * overlap its predecessor when q.overlap is set. */
template <typename... Params, typename... Args>
static cudaError_t launch(gs_llm_cuda_queue q, void (*kernel)(Params...), dim3 grid, dim3 block,
                          size_t shared, Args... args) {
  cudaLaunchAttribute overlap = {};
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = q.stream;
  config.attrs = &overlap;
  config.numAttrs = q.overlap ? 1 : 0;
  cudaError_t rc = cudaLaunchKernelEx(&config, kernel, (Params)args...);
  return rc != cudaSuccess ? rc : cudaGetLastError();
}
#endif
