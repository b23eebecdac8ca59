/* The rank processes of the user's command for `gpuscale exec`: a launcher
 * it starts (mpirun, srun, torchrun) runs one process per rank on this
 * host, which the command's descendants reveal by the rank variable their
 * launcher set. Watched while the command runs, so that when one of them
 * ends while the others still run and the command then fails, the lost
 * rank is named (docs/exec.md, "Runs, failures and signals"). */
#ifndef GS_MEASURE_EXEC_RANKS_H
#define GS_MEASURE_EXEC_RANKS_H

#include <stddef.h>

#include "core/types.h"

/* Rank processes watched at most (a rank's own children are not). */
#define GS_EXEC_RANK_PROCS 256

typedef struct {
  int pid;
  int rank;
  unsigned long long start; /* its start time (/proc/PID/stat), against pid reuse */
  int gone;
} gs_exec_rank_proc;

typedef struct {
  int root;                      /* the command's process */
  char *const *root_env;         /* the command's environment: a variable set there is
                                    inherited, not a rank */
  size_t n;
  gs_exec_rank_proc procs[GS_EXEC_RANK_PROCS];
  int lost_rank;                 /* the first rank whose process ended while another still
                                    ran GS_EXEC_RANK_SETTLE_SECONDS later; -1 none */
  int lost_pid;
  int lost_together;             /* other ranks' processes that ended in the same look */
  double lost_at;                /* gs_time_seconds() when it was seen gone */
  int candidate;                 /* 1: the first ended, not yet confirmed; -1: none can be */
} gs_exec_ranks;

/* Seconds another rank process must outlive the first that ended for that
 * one to be lost: ranks that end together (a job that ends or fails as a
 * whole) name no rank. */
#define GS_EXEC_RANK_SETTLE_SECONDS 0.1

/* Starts watching the descendants of process `root` (whose environment is
 * `root_env`). */
void gs_exec_ranks_init(gs_exec_ranks *w, int root, char *const *root_env);

/* One look while the command's own process still runs: the rank processes
 * that ended since the last look (the first of them becomes the lost rank
 * once), then, when `find_new`, new rank processes among the descendants
 * (a walk down the kernel's children lists, or over all of /proc where
 * the kernel has none: the dearer part). Reads /proc only (Linux); a
 * process it cannot read is left out. Main thread only. */
void gs_exec_ranks_look(gs_exec_ranks *w, int find_new);

/* The lost rank (its pid in w->lost_pid), or -1 when none is known. */
int gs_exec_ranks_lost(const gs_exec_ranks *w);

#endif
