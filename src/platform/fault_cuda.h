/* CUDA side of the slow and late faults (the late fault: one spin kernel
 * of a fixed time before the rank's work), shared by the runner, check
 * pairs and llm's shards. The slow fault: two tiny kernels around a step on the
 * rank's stream. The first stamps the GPU clock when the step starts, the
 * second, after the step, spins until factor x the elapsed time has passed
 * since the stamp, so the stream really takes `factor` times as long as the
 * step's own work (whatever that was on this iteration). */
#ifndef GS_FAULT_CUDA_H
#define GS_FAULT_CUDA_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues the start stamp into *slot (8 bytes of device memory). */
cudaError_t gs_fault_cuda_stamp(unsigned long long *slot, cudaStream_t stream);

/* Enqueues the spin that stretches the time since the stamp to `factor`
 * times (factor >= 1). */
cudaError_t gs_fault_cuda_stretch(const unsigned long long *slot, double factor,
                                  cudaStream_t stream);

/* Enqueues a spin of `seconds` (the late fault: the rank's next work and
 * collectives start that much later on the device). */
cudaError_t gs_fault_cuda_spin(double seconds, cudaStream_t stream);

/* Loads the three kernels on the current device (CUDA loads a kernel
 * lazily at its first launch otherwise): every CUDA rank's set-up (the
 * runner's, coll's, check pairs', llm's shards') calls it before its
 * first NCCL transfer, as a load beside NCCL's spinning transfers hung
 * mlp's pipeline (docs/workloads/mlp.md, "Transfers"). */
cudaError_t gs_fault_cuda_load_kernels(void);

#ifdef __cplusplus
}
#endif

#endif
