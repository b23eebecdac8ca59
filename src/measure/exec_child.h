/* One run of the user's command for `gpuscale exec`: started in a process
 * group of its own with its output in files, timed by the monotonic clock
 * from its start to its exit, stopped (the whole group) at a timeout or
 * when gpuscale itself is asked to stop (core/interrupt.h). */
#ifndef GS_MEASURE_EXEC_CHILD_H
#define GS_MEASURE_EXEC_CHILD_H

#include "core/status.h"
#include "core/types.h"

/* Seconds a stopped command is given to end after SIGTERM or the
 * forwarded SIGINT before its group is killed. */
#define GS_EXEC_STOP_GRACE_SECONDS 5.0

typedef struct {
  char *const *argv;             /* the command (argv[0] looked up in PATH) */
  char *const *envp;             /* its whole environment */
  int stdout_fd, stderr_fd;      /* where its output goes; its stdin is /dev/null */
  double timeout_seconds;        /* 0: none */
} gs_exec_child_request;

typedef struct {
  gs_status status;              /* GS_OK; GS_ERR_COMMAND (could not start, exit code not 0,
                                    killed by a signal); GS_ERR_TIMEOUT; GS_ERR_INTERRUPTED;
                                    GS_ERR_RANK_LOST (below) */
  int exit_code;                 /* -1 when it did not exit by itself */
  int signal;                    /* the signal that ended it, 0 none */
  double wall_seconds;           /* start to exit; 0 when it did not start */
  char reason[GS_TEXT_LONG];     /* why it failed; "" when ok */
  int lost_rank;                 /* GS_ERR_RANK_LOST: the rank whose process ended first while
                                    the others ran (exec_ranks.h); -1 otherwise */
  int lost_pid;
} gs_exec_child_result;

/* Runs the command once and waits for it. Every member of its process
 * group still alive when it exits is killed, so that nothing it started
 * disturbs the next run. When it fails or times out after one of its rank
 * processes on this host ended while the others ran, that rank is lost:
 * status GS_ERR_RANK_LOST, lost_rank and the reason name it. Returns GS_OK with the outcome in *out (a command
 * that fails is an outcome, not an error of this call); GS_ERR_SYSTEM or
 * GS_ERR_NOMEM when the run could not be prepared. Main thread only. */
gs_status gs_exec_child_run(const gs_exec_child_request *rq, gs_exec_child_result *out);

/* Whether `program` can be started: a path with '/' that is an executable
 * file, or a name found as one in $PATH. */
int gs_exec_child_findable(const char *program);

#endif
