/* SIGINT/SIGTERM recorded as a stop request, and the temp files a signal
 * that ends the process removes first (see interrupt.h). */
#include "core/interrupt.h"

#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t received_signal;
/* Measuring commands: the first SIGINT/SIGTERM is a stop request. */
static volatile sig_atomic_t recording;

/* Temp files being written (core/file.c), by slot: the path is filled
 * before its flag is set and the flag cleared before the slot is reused,
 * so the handler only reads whole paths. */
#define GS_INTERRUPT_TRACKED 16
#define GS_INTERRUPT_PATH_MAX 4096
static char tracked_path[GS_INTERRUPT_TRACKED][GS_INTERRUPT_PATH_MAX];
static atomic_int tracked_used[GS_INTERRUPT_TRACKED];
static atomic_int tracked_claim[GS_INTERRUPT_TRACKED];

/* Async-signal-safe: a stop request is recorded; a signal that ends the
 * process (the second, or the first of a command that does not measure)
 * removes the temp files being written, then ends the process by the
 * signal's default action, so that a second Ctrl-C still ends it at once. */
static void on_signal(int sig) {
  if (recording && received_signal == 0) {
    received_signal = sig;
    return;
  }
  for (int i = 0; i < GS_INTERRUPT_TRACKED; i++)
    if (atomic_load(&tracked_used[i])) unlink(tracked_path[i]);
  signal(sig, SIG_DFL);
  raise(sig);
}

static void install(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, NULL);
  sigaction(SIGTERM, &action, NULL);
  sigaction(SIGHUP, &action, NULL);
}

void gs_interrupt_install_cleanup(void) {
  // A file-size limit makes a write fail (EFBIG), which the atomic write
  // reports and cleans up, instead of killing the process mid-write.
  signal(SIGXFSZ, SIG_IGN);
  install();
}

void gs_interrupt_install(void) {
  recording = 1;
  install();
}

int gs_interrupt_signal(void) { return (int)received_signal; }

int gs_interrupt_track(const char *path) {
  if (strlen(path) >= GS_INTERRUPT_PATH_MAX) return -1;
  for (int i = 0; i < GS_INTERRUPT_TRACKED; i++) {
    int free_slot = 0;
    if (!atomic_compare_exchange_strong(&tracked_claim[i], &free_slot, 1)) continue;
    memcpy(tracked_path[i], path, strlen(path) + 1);
    atomic_store(&tracked_used[i], 1);
    return i;
  }
  return -1;
}

void gs_interrupt_untrack(int slot) {
  if (slot < 0 || slot >= GS_INTERRUPT_TRACKED) return;
  atomic_store(&tracked_used[slot], 0);
  atomic_store(&tracked_claim[slot], 0);
}
