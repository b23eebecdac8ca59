/* SIGINT/SIGTERM recorded as a stop request (see interrupt.h). */
#include "core/interrupt.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t received_signal;

/* Async-signal-safe: records the signal and restores the default action,
 * so that a second Ctrl-C (or mpirun's SIGKILL) ends the process at once. */
static void record_signal(int sig) {
  received_signal = sig;
  signal(sig, SIG_DFL);
}

void gs_interrupt_install(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, NULL);
  sigaction(SIGTERM, &action, NULL);
}

int gs_interrupt_signal(void) { return (int)received_signal; }
