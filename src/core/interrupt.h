/* SIGINT and SIGTERM as a request to stop: the handler only records the
 * signal; the runner and the communication layer's polling waits look at
 * the record between steps and while waiting, stop promptly, and the
 * measuring commands then write what was measured (docs/multinode.md,
 * "Signals"). A second signal of the same kind ends the process at once. */
#ifndef GS_INTERRUPT_H
#define GS_INTERRUPT_H

/* Installs the handlers for SIGINT and SIGTERM. Called once from the main
 * thread of a measuring command, before any rank thread starts. */
void gs_interrupt_install(void);

/* The signal number received (SIGINT or SIGTERM), or 0 when none has
 * arrived. Safe from any thread. */
int gs_interrupt_signal(void);

#endif
