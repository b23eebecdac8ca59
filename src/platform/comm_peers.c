/* The processes of one host watching each other under a launcher
 * (docs/multinode.md, "Failures"): heartbeats and signals in the host's
 * shared window, the lost process found after a wait broke, whether a
 * process still answers, the roll call of a broken job that spans hosts,
 * and the claim of the writing of a broken job. */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The longest time between two beats of this process (ns): a process that
 * was stopped (SIGSTOP, a debugger) or frozen learns it when it runs again
 * and the others have taken over. */
static _Atomic uint64_t comm_longest_gap;

static void *beat_main(void *arg) {
  (void)arg;
  uint64_t last = comm_now_ns();
  while (atomic_load(&comm_beating)) {
    const uint64_t now = comm_now_ns();
    if (now - last > atomic_load(&comm_longest_gap)) atomic_store(&comm_longest_gap, now - last);
    last = now;
    beat_all(now, gs_interrupt_signal());
    gs_sleep_seconds(COMM_BEAT_SECONDS);
  }
  return NULL;
}

/* ---- the roll call of a job that spans hosts ---------------------------------- */

/* What a process says in the roll call: the rank its host found lost (-1
 * none) and how. */
typedef struct {
  int lost;
  char how[GS_TEXT_LONG];
} roll_word;

/* The job's one roll call (the first world that asks does it for all: its
 * messages go through MPI_COMM_WORLD), kept until the last world goes. */
static unsigned char *roll_heard;   /* process_count entries: 1 answered */
static roll_word *roll_words;       /* what each answered */
static int roll_count;

static void roll_forget(void) {
  free(roll_heard);
  free(roll_words);
  roll_heard = NULL;
  roll_words = NULL;
  roll_count = 0;
}

int gs_comm_separate_hosts(void) {
  const char *v = getenv("GPUSCALE_TEST_SEPARATE_HOSTS");
  return v && strcmp(v, "1") == 0;
}

int gs_comm_spans_hosts(const gs_comm_world *w) {
  return w->heartbeat != NULL && w->progress_count < w->job.process_count;
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
  if (count == 0) roll_forget();
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
  if (!atomic_compare_exchange_strong(w->writer_claim, &none, me) && none != me) return 0;
  // The claim shows in every world of the job (a coll sweep's own world
  // names the lost rank), so that no process takes the writer's end for a
  // death there either.
  pthread_mutex_lock(&comm_worlds_lock);
  for (int i = 0; i < COMM_MPI_WORLDS_MAX; i++) {
    gs_comm_world *each = comm_mpi_worlds[i];
    uint64_t unclaimed = 0;
    if (each && each != w && each->writer_claim)
      atomic_compare_exchange_strong(each->writer_claim, &unclaimed, me);
  }
  pthread_mutex_unlock(&comm_worlds_lock);
  return 1;
}

int gs_comm_writer_claimed(const gs_comm_world *w) {
  return w->writer_claim ? (int)atomic_load(w->writer_claim) - 1 : -1;
}


/* Seconds the roll call listens for processes that have not answered:
 * the live ones broke at the same lockstep point within a short spread,
 * but a loaded host spreads them further (under ASan on 2 cores, with
 * --timeout 3, 1.5 s was too short: the live peer's word came after it,
 * two ranks were silent and none was named), so at least 3 s; after a
 * signal only briefly (COMM_SIGNALLED_SECONDS). */
static double roll_seconds(const gs_comm_world *w) {
  return gs_interrupt_signal() ? COMM_SIGNALLED_SECONDS : fmin(5.0, fmax(3.0, stale_seconds(w)));
}

#define COMM_ROLL_TAG 0x5a2

/* Sends this process's word to every other process and listens until
 * every process expected answered or roll_seconds passed (see
 * gs_comm_roll_call). */
static void roll_call(gs_comm_world *w, const roll_word *mine) {
#ifdef GS_HAVE_MPI
  const int n = w->job.process_count, me = w->job.process_rank;
  roll_heard = calloc((size_t)n, 1);
  roll_words = calloc((size_t)n, sizeof *roll_words);
  if (!roll_heard || !roll_words) {
    roll_forget();
    return;
  }
  roll_count = n;
  roll_heard[me] = 1;
  roll_words[me] = *mine;
  // The word outlives the call: a send to a silent process never completes.
  static roll_word sent;
  sent = *mine;
  for (int k = 0; k < n; k++) {
    MPI_Request request;
    if (k != me && comm_process_state(w, k) != 0 &&
        MPI_Isend(&sent, (int)sizeof sent, MPI_BYTE, k, COMM_ROLL_TAG, MPI_COMM_WORLD,
                  &request) == MPI_SUCCESS)
      MPI_Request_free(&request);
  }
  const double until = gs_time_seconds() + roll_seconds(w);
  for (;;) {
    int missing = 0;
    // A process of this host that died or went silent is not waited for.
    for (int k = 0; k < n; k++)
      missing += !roll_heard[k] && (comm_process_state(w, k) == 1 ||
                                    comm_process_state(w, k) == -2);
    if (missing == 0 || gs_time_seconds() >= until) break;
    int arrived = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, COMM_ROLL_TAG, MPI_COMM_WORLD, &arrived, &st) != MPI_SUCCESS ||
        !arrived) {
      gs_sleep_seconds(0.001);
      continue;
    }
    roll_word word;
    const int from = st.MPI_SOURCE;
    if (MPI_Recv(&word, (int)sizeof word, MPI_BYTE, from, COMM_ROLL_TAG, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE) != MPI_SUCCESS || from < 0 || from >= n)
      continue;
    word.how[sizeof word.how - 1] = '\0';
    roll_heard[from] = 1;
    roll_words[from] = word;
  }
#else
  (void)w;
  (void)mine;
#endif
}

const unsigned char *gs_comm_roll_call(gs_comm_world *w) {
  if (!gs_comm_spans_hosts(w)) return NULL;
  if (!roll_heard) {
    roll_word mine = {.lost = -1};
    roll_call(w, &mine);
  }
  return roll_count == w->job.process_count ? roll_heard : NULL;
}

/* What the roll call adds to this host's finding `lost`: the rank another
 * host found lost (the lowest), else the lowest process that did not
 * answer. */
static int roll_lost(gs_comm_world *w, int lost, char *how, size_t size) {
  if (!gs_comm_spans_hosts(w)) return lost;
  if (!roll_heard) {
    roll_word mine = {.lost = lost};
    if (lost >= 0) snprintf(mine.how, sizeof mine.how, "%s", how);
    roll_call(w, &mine);
  }
  if (lost >= 0 || roll_count != w->job.process_count) return lost;
  int found = -1;
  for (int k = 0; k < roll_count; k++) {
    const roll_word *word = &roll_words[k];
    if (roll_heard[k] && word->lost >= 0 && (found < 0 || word->lost < found)) {
      found = word->lost;
      snprintf(how, size, "%s", word->how);
    }
  }
  if (found >= 0) return found;
  for (int k = 0; k < roll_count; k++)
    if (!roll_heard[k]) {
      snprintf(how, size, "it did not answer after the job broke (on another host: "
               "died, stopped or hung, or its host was lost)");
      return k;
    }
  return -1;
}

/* Whether this process, in a job over hosts, was silent for long enough
 * that the others took over. */
static int frozen(const gs_comm_world *w) {
  return gs_comm_spans_hosts(w) &&
         (double)atomic_load(&comm_longest_gap) * 1e-9 > stale_seconds(w);
}

void gs_comm_note_lost(gs_comm_world *w, int process_rank) {
  if (process_rank >= 0 && process_rank < w->job.process_count) w->lost_process = process_rank;
}

int gs_comm_self_lost(const gs_comm_world *w) {
  return (w->lost_process >= 0 && w->lost_process == w->job.process_rank) || frozen(w);
}

int gs_comm_find_lost(gs_comm_world *w, char *how, size_t size) {
  if (!w->heartbeat) return -1;
  int lost = -1;
  const double gap = (double)atomic_load(&comm_longest_gap) * 1e-9;
  if (frozen(w)) {
    // This process was silent long enough for the other hosts to take
    // over: it is the lost one and does not write.
    snprintf(how, size, "it stopped answering (its process was stopped or frozen for %.1f s)",
             gap);
    lost = w->job.process_rank;
  } else {
    lost = find_lost(w, how, size);
  }
  lost = roll_lost(w, lost, how, size);
  // Remembered, so that the lost process is never chosen to write.
  if (lost >= 0) w->lost_process = lost;
  return lost;
}
