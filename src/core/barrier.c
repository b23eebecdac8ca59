/* An abortable thread barrier (generation counter + condition variable). */
#include "core/barrier.h"

int gs_barrier_init(gs_barrier *b, int parties) {
  b->parties = parties;
  b->waiting = 0;
  b->generation = 0;
  b->aborted = 0;
  int rc = pthread_mutex_init(&b->mutex, NULL);
  if (rc != 0) return rc;
  rc = pthread_cond_init(&b->cond, NULL);
  if (rc != 0) pthread_mutex_destroy(&b->mutex);
  return rc;
}

void gs_barrier_destroy(gs_barrier *b) {
  pthread_cond_destroy(&b->cond);
  pthread_mutex_destroy(&b->mutex);
}

int gs_barrier_wait(gs_barrier *b) {
  pthread_mutex_lock(&b->mutex);
  if (b->aborted) {
    pthread_mutex_unlock(&b->mutex);
    return -1;
  }
  unsigned long generation = b->generation;
  if (++b->waiting == b->parties) {
    b->waiting = 0;
    b->generation++;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->mutex);
    return 0;
  }
  while (generation == b->generation && !b->aborted) pthread_cond_wait(&b->cond, &b->mutex);
  int rc = (generation == b->generation) ? -1 : 0;
  pthread_mutex_unlock(&b->mutex);
  return rc;
}

void gs_barrier_abort(gs_barrier *b) {
  pthread_mutex_lock(&b->mutex);
  b->aborted = 1;
  pthread_cond_broadcast(&b->cond);
  pthread_mutex_unlock(&b->mutex);
}
