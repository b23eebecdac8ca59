/* Device memory bandwidth of one GPU by STREAM's triad (a = b + s * c on
 * doubles), for `gpuscale check --level 2`: arrays far larger than the L2
 * cache, a warmup triad, timed samples of several triads each between CUDA
 * events, the median sample, and the output checked against the CPU
 * reference after timing. An injected slowdown (--inject
 * membw:gpu=G,factor=F) runs extra triads inside each timed sample, so the
 * GPU really takes 1/F times as long for the bytes counted. See
 * docs/check.md, "Level 2". */
#ifndef GS_MEMBW_H
#define GS_MEMBW_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#ifdef __CUDACC__
#define GS_MEMBW_HOST_DEVICE __host__ __device__
#else
#define GS_MEMBW_HOST_DEVICE
#endif

#define GS_MEMBW_MAX_SAMPLES 64
#define GS_MEMBW_SCALAR 3.0

/* The triad's inputs, element i: whole numbers, so that b + 3 c is exact. */
GS_MEMBW_HOST_DEVICE static inline double gs_membw_b(uint64_t i) { return (double)(i & 1023u); }
GS_MEMBW_HOST_DEVICE static inline double gs_membw_c(uint64_t i) {
  return (double)((i >> 3) & 511u);
}

typedef struct {
  uint64_t array_bytes;       /* per array; three arrays; a multiple of 16 */
  uint64_t triads;            /* triads per timed sample */
  uint64_t samples;           /* timed samples (after one untimed triad) */
  double slowdown;            /* injected factor in (0, 1]; 1 = none */
} gs_membw_options;

typedef struct {
  gs_status status;
  char error[256];            /* why it failed; "" when ok */
  size_t n;
  double samples[GS_MEMBW_MAX_SAMPLES]; /* bytes/s of each timed sample */
  double median;              /* bytes/s */
  uint64_t extra_triads;      /* per sample, for the injected slowdown */
  unsigned long long mismatches; /* elements of a wrong after the timed triads */
  double seconds;             /* wall time of the whole measurement */
} gs_membw_result;

/* 512 MiB per array (1.5 GiB in all, 30 times H100's 50 MB L2), 20 triads
 * per sample, 5 samples, no slowdown. */
void gs_membw_options_default(gs_membw_options *o);

/* Bytes one triad of `n` doubles moves by STREAM's count: b and c read, a
 * written (3 * 8 * n; the write-allocate read is not counted). */
uint64_t gs_membw_triad_bytes(uint64_t n);

/* Extra triads per sample that make `triads` counted ones take 1/factor
 * times as long: round(triads * (1/factor - 1)). 0 for factor >= 1. */
uint64_t gs_membw_extra_triads(uint64_t triads, double factor);

/* Bandwidth in bytes/s of `triads` triads of `n` doubles in `seconds`; NaN
 * when seconds <= 0. */
double gs_membw_bandwidth(uint64_t n, uint64_t triads, double seconds);

/* Elements i < n of `a` that differ from the CPU reference b + 3 c. */
uint64_t gs_membw_mismatches(const double *a, uint64_t n);

/* Measures CUDA device `device` under `o` into `r`. The return is GS_OK
 * when the measurement ran (r->status says whether it succeeded: a CUDA
 * error or a wrong result is recorded there with its text, the GPU left
 * clean); the caller's thread's current device is changed. */
gs_status gs_membw_measure(int device, const gs_membw_options *o, gs_membw_result *r);

#endif
