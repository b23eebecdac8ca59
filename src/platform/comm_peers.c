/* The processes of one host watching each other under a launcher
 * (docs/multinode.md, "Failures"): heartbeats and signals in the host's
 * shared window, the lost process found after a wait broke, whether a
 * process still answers, and the claim of the writing of a broken job. */
#include <math.h>
#include <pthread.h>
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

/* The worlds of this process under a launcher, whose heartbeat slot a
 * thread of the process renews every COMM_BEAT_SECONDS while one exists, so
 * that a process is silent only when it is stopped, frozen or gone, not
 * while it computes. Registered and removed by the main thread; the
 * registry is read by the heartbeat thread and by polling waits. */
#define COMM_MPI_WORLDS_MAX 8
#define COMM_BEAT_SECONDS 0.05
static gs_comm_world *comm_mpi_worlds[COMM_MPI_WORLDS_MAX];
static pthread_mutex_t comm_worlds_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t comm_beat_thread;
static _Atomic int comm_beating;

/* Stores `now` as the heartbeat of this process in every registered world
 * and, when a signal stopped it, the signal. */
static void beat_all(uint64_t now, int signal) {
  pthread_mutex_lock(&comm_worlds_lock);
  for (int i = 0; i < COMM_MPI_WORLDS_MAX; i++) {
    gs_comm_world *each = comm_mpi_worlds[i];
    if (!each) continue;
    atomic_store(&each->heartbeat[each->ranks[0].progress_index], now);
    if (signal != 0) atomic_store(&each->left[each->ranks[0].progress_index], (uint64_t)signal);
  }
  pthread_mutex_unlock(&comm_worlds_lock);
}

static void *beat_main(void *arg) {
  (void)arg;
  while (atomic_load(&comm_beating)) {
    beat_all(comm_now_ns(), gs_interrupt_signal());
    gs_sleep_seconds(COMM_BEAT_SECONDS);
  }
  return NULL;
}

void comm_world_register(gs_comm_world *w, int on) {
  pthread_mutex_lock(&comm_worlds_lock);
  int count = 0, done = 0;
  for (int i = 0; i < COMM_MPI_WORLDS_MAX; i++) {
    if (!done && comm_mpi_worlds[i] == (on ? NULL : w)) {
      comm_mpi_worlds[i] = on ? w : NULL;
      done = 1;
    }
    if (comm_mpi_worlds[i]) count++;
  }
  pthread_mutex_unlock(&comm_worlds_lock);
  if (count > 0 && !atomic_load(&comm_beating)) {
    atomic_store(&comm_beating, 1);
    // Without the thread the heartbeat is renewed by the polling waits only.
    if (pthread_create(&comm_beat_thread, NULL, beat_main, NULL) != 0)
      atomic_store(&comm_beating, 0);
  } else if (count == 0 && atomic_load(&comm_beating)) {
    atomic_store(&comm_beating, 0);
    pthread_join(comm_beat_thread, NULL);
  }
}

int comm_poll_peers(gs_comm *c, int *signal) {
  gs_comm_world *w = c->world;
  if (!w->heartbeat) return -1;
  // The process answers in every world it has (a coll sweep polls its own
  // world while the job's control world waits for the end).
  const int own = gs_interrupt_signal();
  beat_all(comm_now_ns(), own);
  if (own != 0) return -1;
  return gs_comm_stopped_peer(w, signal);
}

int gs_comm_stopped_peer(gs_comm_world *w, int *signal) {
  if (!w->heartbeat) return -1;
  for (int j = 0; j < w->progress_count; j++) {
    const uint64_t sig = atomic_load(&w->left[j]);
    if (j == w->ranks[0].progress_index || sig == 0) continue;
    *signal = (int)sig;
    return w->progress_ranks[j];
  }
  return -1;
}

/* Seconds without a heartbeat after which a process of this host counts
 * as no longer answering: half the timeout (a rank waiting for it times out
 * after the whole), at least 1 s (20 beats); 5 s without a timeout. */
static double stale_seconds(const gs_comm_world *w) {
  const double t = w->config.timeout_seconds;
  return t > 0.0 ? fmax(1.0, 0.5 * t) : 5.0;
}

/* Slot j's process of this host: 0 dead, 1 answering, -1 silent for longer
 * than stale_seconds (stopped or frozen). */
static int slot_state(const gs_comm_world *w, int j) {
  if (!gs_process_alive((int)atomic_load(&w->pids[j]))) return 0;
  const double quiet = (double)(comm_now_ns() - atomic_load(&w->heartbeat[j])) * 1e-9;
  return quiet > stale_seconds(w) ? -1 : 1;
}

int comm_process_state(const gs_comm_world *w, int process_rank) {
  if (!w->heartbeat) return -2;
  for (int j = 0; j < w->progress_count; j++) {
    if (w->progress_ranks[j] != process_rank) continue;
    return j == w->ranks[0].progress_index ? 1 : slot_state(w, j);
  }
  return -2;
}

int gs_comm_answering(const gs_comm_world *w, int process_rank) {
  const int state = comm_process_state(w, process_rank);
  if (state == -2) return -1;
  if (process_rank == w->job.process_rank) return 1;
  return process_rank != w->lost_process && state == 1;
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

static int find_lost(gs_comm_world *w, char *how, size_t size) {
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


int gs_comm_find_lost(gs_comm_world *w, char *how, size_t size) {
  if (!w->heartbeat) return -1;
  const int lost = find_lost(w, how, size);
  // Remembered, so that the lost process is never chosen to write.
  if (lost >= 0) w->lost_process = lost;
  return lost;
}
