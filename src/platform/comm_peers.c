/* The processes of one host watching each other under a launcher
 * (docs/multinode.md, "Failures"): heartbeats and signals in the host's
 * shared window, the lost process found after a wait broke, whether a
 * process still answers, and the claim of the writing of a broken job. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/interrupt.h"
#include "core/process.h"
#include "core/timer.h"
#include "platform/comm_internal.h"

uint64_t comm_now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* The worlds of this process under a launcher, whose heartbeat every poll
 * renews (created and destroyed by the main thread). */
#define COMM_MPI_WORLDS_MAX 8
static gs_comm_world *comm_mpi_worlds[COMM_MPI_WORLDS_MAX];

void comm_world_register(gs_comm_world *w, int on) {
  for (int i = 0; i < COMM_MPI_WORLDS_MAX; i++)
    if (comm_mpi_worlds[i] == (on ? NULL : w)) {
      comm_mpi_worlds[i] = on ? w : NULL;
      return;
    }
}

int comm_poll_peers(gs_comm *c, int *signal) {
  gs_comm_world *w = c->world;
  if (!w->heartbeat) return -1;
  // The process answers in every world it has (a coll sweep polls its own
  // world while the job's control world waits for the end).
  const uint64_t now = comm_now_ns();
  const int own = gs_interrupt_signal();
  for (int i = 0; i < COMM_MPI_WORLDS_MAX; i++) {
    gs_comm_world *each = comm_mpi_worlds[i];
    if (!each) continue;
    atomic_store(&each->heartbeat[each->ranks[0].progress_index], now);
    if (own != 0) atomic_store(&each->left[each->ranks[0].progress_index], (uint64_t)own);
  }
  if (own != 0) return -1;
  for (int j = 0; j < w->progress_count; j++) {
    const uint64_t sig = atomic_load(&w->left[j]);
    if (j == c->progress_index || sig == 0) continue;
    *signal = (int)sig;
    return w->progress_ranks[j];
  }
  return -1;
}

/* Seconds without a poll after which a process of this host counts as no
 * longer answering: half the timeout (a rank waiting for it times out
 * after the whole), at least 0.5 s; 5 s without a timeout. */
static double stale_seconds(const gs_comm_world *w) {
  const double t = w->config.timeout_seconds;
  return t > 0.0 ? fmax(0.5, 0.5 * t) : 5.0;
}

/* Slot j's process of this host: 0 dead, 1 answering, -1 silent for longer
 * than stale_seconds (stopped, hung, or busy outside every wait). */
static int slot_state(const gs_comm_world *w, int j) {
  if (!gs_process_alive((int)atomic_load(&w->pids[j]))) return 0;
  const double quiet = (double)(comm_now_ns() - atomic_load(&w->heartbeat[j])) * 1e-9;
  return quiet > stale_seconds(w) ? -1 : 1;
}

int gs_comm_answering(const gs_comm_world *w, int process_rank) {
  if (!w->heartbeat) return -1;
  for (int j = 0; j < w->progress_count; j++) {
    if (w->progress_ranks[j] != process_rank) continue;
    if (j == w->ranks[0].progress_index) return 1;
    return slot_state(w, j) == 1;
  }
  return -1;
}

/* Seconds a process stopped by a signal waits for its peers to see one too
 * before it decides that the signal was its alone. */
#define COMM_SIGNAL_SETTLE_SECONDS 0.25

/* Whether every other live process of this host was stopped by a signal,
 * waiting up to COMM_SIGNAL_SETTLE_SECONDS for their handlers to run. */
static int every_peer_signalled(const gs_comm_world *w, int me) {
  const double until = gs_time_seconds() + COMM_SIGNAL_SETTLE_SECONDS;
  for (;;) {
    int all = 1;
    for (int j = 0; j < w->progress_count && all; j++)
      if (j != me && atomic_load(&w->left[j]) == 0 && slot_state(w, j) != 0) all = 0;
    if (all) return 1;
    if (gs_time_seconds() >= until) return 0;
    gs_sleep_seconds(0.01);
  }
}

int gs_comm_find_lost(gs_comm_world *w, char *how, size_t size) {
  if (!w->heartbeat) return -1;
  const int me = w->ranks[0].progress_index;
  // A writer that finished the document ends the job and exits: not lost.
  const int writer = gs_comm_writer_claimed(w);
  for (int j = 0; j < w->progress_count; j++)
    if (j != me && w->progress_ranks[j] != writer && slot_state(w, j) == 0) {
      snprintf(how, size, "its process died (crash, kill or lost GPU)");
      return w->progress_ranks[j];
    }
  const int own = gs_interrupt_signal();
  if (own != 0) {
    atomic_store(&w->left[me], (uint64_t)own);
    // A signal to the whole job (Ctrl-C, scancel) names no rank.
    if (every_peer_signalled(w, me)) return -1;
    snprintf(how, size, "it was stopped by signal %d (%s)", own, strsignal(own));
    return w->progress_ranks[me];
  }
  for (int j = 0; j < w->progress_count; j++) {
    const uint64_t sig = atomic_load(&w->left[j]);
    if (j == me || sig == 0) continue;
    snprintf(how, size, "it was stopped by signal %d (%s)", (int)sig, strsignal((int)sig));
    return w->progress_ranks[j];
  }
  const uint64_t mine = atomic_load(&w->progress[me]);
  for (int j = 0; j < w->progress_count; j++)
    if (j != me && atomic_load(&w->progress[j]) < mine) {
      snprintf(how, size, "it stopped answering");
      return w->progress_ranks[j];
    }
  // A process frozen inside a wait it entered has the same progress as the
  // ranks waiting for it: only its silence tells.
  for (int j = 0; j < w->progress_count; j++)
    if (j != me && slot_state(w, j) == -1) {
      const int stopped = gs_process_stopped((int)atomic_load(&w->pids[j]));
      snprintf(how, size, "it stopped answering%s",
               stopped ? " (its process is stopped: SIGSTOP or a debugger)" : "");
      return w->progress_ranks[j];
    }
  return -1;
}

int gs_comm_claim_writer(gs_comm_world *w) {
  if (w->writer_claim == NULL) return 1;
  uint64_t none = 0;
  const uint64_t me = (uint64_t)w->job.process_rank + 1;
  return atomic_compare_exchange_strong(w->writer_claim, &none, me) || none == me;
}

int gs_comm_writer_claimed(const gs_comm_world *w) {
  return w->writer_claim ? (int)atomic_load(w->writer_claim) - 1 : -1;
}

