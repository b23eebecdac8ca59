/* A reusable barrier for the rank threads of one process that can be
 * aborted: when a rank fails, it aborts the barrier so that no other rank
 * waits forever for it. */
#ifndef GS_BARRIER_H
#define GS_BARRIER_H

#include <pthread.h>

typedef struct {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int parties;
  int waiting;
  unsigned long generation;
  int aborted;
} gs_barrier;

/* Initializes for `parties` threads (>= 1). Returns 0 on success, else the
 * error number of pthread_mutex_init or pthread_cond_init (for
 * gs_error_system). */
int gs_barrier_init(gs_barrier *b, int parties);
void gs_barrier_destroy(gs_barrier *b);

/* Waits until all parties arrive. Returns 0 when they did, -1 when the
 * barrier was (or becomes) aborted; after an abort every wait returns -1. */
int gs_barrier_wait(gs_barrier *b);

/* Marks the barrier aborted and wakes every waiter. */
void gs_barrier_abort(gs_barrier *b);

#endif
