/* The shards' arrivals at the tensor-parallel collectives on CUDA, as the
 * GPU stamps them (docs/stragglers.md, "llm's tensor-parallel
 * all-reduces"): one-thread kernels on the shard's stream read the GPU's
 * nanosecond clock (%globaltimer) into a ring of (entry, exit) slots, so
 * that a captured decode graph stamps a fresh slot on every replay. This
 * is the host side: the device clock placed on the host's, and the ring's
 * finished slots appended to a shard's arrival series. Plain C, no GPU:
 * tests/test_llm_stamps.c drives it with arrays. */
#ifndef GS_LLM_STAMPS_H
#define GS_LLM_STAMPS_H

#include <stddef.h>
#include <stdint.h>

#include "core/arrival.h"
#include "core/status.h"

/* Slots of a shard's ring: a shard has at most two calls on its stream
 * (a decode step and the one launched ahead), far fewer than this. */
#define GS_LLM_STAMP_SLOTS 64u

/* Tries of the clock anchor: the tightest is kept. */
#define GS_LLM_CLOCK_TRIES 16

/* One try of the anchor: the host's monotonic seconds before the launch
 * of a kernel that read the device clock (device_ns) and after the
 * synchronize that saw it done. */
typedef struct {
  double before, after;
  uint64_t device_ns;
} gs_llm_clock_trial;

/* A device clock on the host's: device_ns read at host seconds `host`,
 * within +-error seconds. */
typedef struct {
  double host;
  uint64_t device_ns;
  double error;
} gs_llm_clock_anchor;

/* The anchor from the try with the shortest window (the earliest of
 * equals): the window's middle, half its width the error. Tries whose
 * window is negative or not finite, or whose device_ns is 0 (never
 * written), are left out; GS_ERR_CUDA (recorded) when none is left. */
gs_status gs_llm_clock_pick(const gs_llm_clock_trial *trials, size_t n, gs_llm_clock_anchor *out);

/* Host seconds of device time `ns` by anchor `a` (the device clock taken
 * to run at the host's rate from the anchor on; nanoseconds before the
 * anchor are negative offsets). */
double gs_llm_clock_host(const gs_llm_clock_anchor *a, uint64_t ns);

/* Appends slots [from, to) of `ring` (GS_LLM_STAMP_SLOTS pairs of device
 * nanoseconds: slot s at 2 (s mod slots) entry, + 1 exit; 0 = never
 * stamped, appended as NaN) to `into`, each placed on the host clock by
 * `a` plus `offset` seconds (the host clock's offset to the common one).
 * GS_BUG when more than the ring's slots are asked for at once (a slot
 * would have been overwritten), GS_ERR_NOMEM. */
gs_status gs_llm_stamps_take(const volatile unsigned long long *ring, uint64_t from, uint64_t to,
                             const gs_llm_clock_anchor *a, double offset, gs_arrival_rank *into);

#endif
