/* SIGINT and SIGTERM as a request to stop: the handler only records the
 * signal; the runner and the communication layer's polling waits look at
 * the record between steps and while waiting, stop promptly, and the
 * measuring commands then write what was measured (docs/multinode.md,
 * "Signals"). A second signal ends the process at once, and so does the
 * first in a command that does not measure; either way the temp files
 * being written (core/file.c tracks them) are removed first. */
#ifndef GS_INTERRUPT_H
#define GS_INTERRUPT_H

/* Installs the handlers of SIGINT, SIGTERM and SIGHUP that end the process
 * after removing the tracked temp files, and ignores SIGXFSZ (a file-size
 * limit then fails the write, which core/file reports and cleans up).
 * Called once by main, for every command. */
void gs_interrupt_install_cleanup(void);

/* Makes the first SIGINT or SIGTERM a stop request (recorded, see
 * gs_interrupt_signal). Called once from the main thread of a measuring
 * command, before any rank thread starts. */
void gs_interrupt_install(void);

/* The signal number received (SIGINT or SIGTERM), or 0 when none has
 * arrived. Safe from any thread. */
int gs_interrupt_signal(void);

/* Registers the temp file `path` for removal by a signal that ends the
 * process; returns its slot, or -1 when none is free (the file is then
 * not removed by a signal). Any thread. */
int gs_interrupt_track(const char *path);

/* Releases slot `slot` of gs_interrupt_track (-1 is accepted). */
void gs_interrupt_untrack(int slot);

#endif
