/* One run of the user's command: spawn into its own process group, wait
 * for its exit (a pidfd where the kernel has one), stop its group on a
 * timeout or a stop request (exec_child.h). */
#define _GNU_SOURCE
#include "measure/exec_child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/interrupt.h"
#include "core/timer.h"
#include "measure/exec_ranks.h"

/* Longest sleep between two looks at a stop request or the deadline. */
#define GS_EXEC_POLL_SECONDS 0.05
#define GS_EXEC_RANK_POLL_SECONDS 0.01

/* A descriptor that becomes readable when `pid` exits, or -1 where the
 * kernel has no pidfd_open (then the wait polls). */
static int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return (int)syscall(SYS_pidfd_open, pid, 0);
#else
  (void)pid;
  return -1;
#endif
}

/* Waits up to `seconds` for `pid` to exit without reaping it (so that its
 * process group id cannot be reused meanwhile). 1 when it has exited. */
static int wait_exit(pid_t pid, int pidfd, double seconds) {
  if (pidfd >= 0) {
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    int ms = (int)(seconds * 1000.0);
    return poll(&p, 1, ms < 0 ? 0 : ms) == 1;
  }
  // Without a pidfd: look every millisecond (at most 0.1% of a 1 s run).
  const double until = gs_time_seconds() + seconds;
  siginfo_t info;
  for (;;) {
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid)
      return 1;
    if (gs_time_seconds() >= until) return 0;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
}

/* Sends `sig` to the command's group, then waits `grace` seconds for the
 * command to exit; kills the group when it has not. */
static void stop_group(pid_t pid, int pidfd, int sig, double grace) {
  killpg(pid, sig);
  if (wait_exit(pid, pidfd, grace)) return;
  killpg(pid, SIGKILL);
  wait_exit(pid, pidfd, 3600.0);
}

int gs_exec_child_findable(const char *program) {
  struct stat st;
  if (strchr(program, '/'))
    return stat(program, &st) == 0 && S_ISREG(st.st_mode) && access(program, X_OK) == 0;
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  char dir[4096];
  for (const char *at = path; at;) {
    const char *colon = strchr(at, ':');
    const size_t n = colon ? (size_t)(colon - at) : strlen(at);
    snprintf(dir, sizeof dir, "%.*s/%s", (int)n, n ? at : ".", program);
    if (stat(dir, &st) == 0 && S_ISREG(st.st_mode) && access(dir, X_OK) == 0) return 1;
    at = colon ? colon + 1 : NULL;
  }
  return 0;
}

gs_status gs_exec_child_run(const gs_exec_child_request *rq, gs_exec_child_result *out) {
  memset(out, 0, sizeof *out);
  out->exit_code = -1;
  posix_spawn_file_actions_t files;
  posix_spawnattr_t attr;
  if (posix_spawn_file_actions_init(&files) != 0) return gs_error(GS_ERR_NOMEM, "cannot spawn");
  if (posix_spawnattr_init(&attr) != 0) {
    posix_spawn_file_actions_destroy(&files);
    return gs_error(GS_ERR_NOMEM, "cannot spawn");
  }
  sigset_t defaults, none;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGQUIT);
  sigemptyset(&none);
  // Its own group (so that its children are stopped with it and a terminal's
  // Ctrl-C reaches gpuscale, which forwards it), the default action of the
  // stop signals even where gpuscale's parent ignored them, no blocked signal.
  int bad = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
                                                POSIX_SPAWN_SETSIGMASK) ||
            posix_spawnattr_setpgroup(&attr, 0) ||
            posix_spawnattr_setsigdefault(&attr, &defaults) ||
            posix_spawnattr_setsigmask(&attr, &none) ||
            posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0) ||
            posix_spawn_file_actions_adddup2(&files, rq->stdout_fd, 1) ||
            posix_spawn_file_actions_adddup2(&files, rq->stderr_fd, 2);
  pid_t pid = -1;
  int rc = 0;
  const uint64_t start = gs_time_ns();
  if (!bad) rc = posix_spawnp(&pid, rq->argv[0], &files, &attr, rq->argv, rq->envp);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  if (bad) return gs_error(GS_ERR_SYSTEM, "cannot prepare the command's start");
  if (rc != 0) {
    out->status = GS_ERR_COMMAND;
    snprintf(out->reason, sizeof out->reason, "cannot start '%s': %s", rq->argv[0], strerror(rc));
    return GS_OK;
  }
  const int pidfd = open_pidfd(pid);
  gs_exec_ranks ranks;
  gs_exec_ranks_init(&ranks, (int)pid, rq->envp);
  out->lost_rank = -1;
  out->lost_pid = -1;
  const double deadline =
      rq->timeout_seconds > 0.0 ? gs_time_seconds() + rq->timeout_seconds : 0.0;
  int exited = 0;
  uint64_t end = 0;
  for (unsigned look = 0; !exited; look++) {
    // While rank processes run, often: the first to end must be seen before
    // its launcher ends the others.
    double wait = ranks.n > 0 ? GS_EXEC_RANK_POLL_SECONDS : GS_EXEC_POLL_SECONDS;
    if (deadline > 0.0 && deadline - gs_time_seconds() < wait) wait = deadline - gs_time_seconds();
    exited = wait_exit(pid, pidfd, wait);
    end = gs_time_ns();
    if (exited) break;
    gs_exec_ranks_look(&ranks, ranks.n == 0 || look % 16 == 0);
    const int sig = gs_interrupt_signal();
    if (sig) {
      // Forwarded to the whole group: torchrun and its workers all hear it.
      stop_group(pid, pidfd, sig, GS_EXEC_STOP_GRACE_SECONDS);
      out->status = GS_ERR_INTERRUPTED;
      snprintf(out->reason, sizeof out->reason, "stopped by %s", sig == SIGINT ? "SIGINT" : "SIGTERM");
      break;
    }
    if (deadline > 0.0 && gs_time_seconds() >= deadline) {
      stop_group(pid, pidfd, SIGTERM, GS_EXEC_STOP_GRACE_SECONDS);
      out->status = GS_ERR_TIMEOUT;
      snprintf(out->reason, sizeof out->reason, "timed out after %g s (--timeout)",
               rq->timeout_seconds);
      break;
    }
  }
  // The command has exited but is not reaped: its group id is still ours.
  killpg(pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (pidfd >= 0) close(pidfd);
  out->wall_seconds = (double)(end - start) * 1e-9;
  if (WIFEXITED(wstatus)) out->exit_code = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) out->signal = WTERMSIG(wstatus);
  if (out->status == GS_ERR_INTERRUPTED) return GS_OK;
  if (out->status == GS_OK && out->signal) {
    out->status = GS_ERR_COMMAND;
    snprintf(out->reason, sizeof out->reason, "killed by signal %d (%s)", out->signal,
             strsignal(out->signal));
  } else if (out->status == GS_OK && out->exit_code != 0) {
    out->status = GS_ERR_COMMAND;
    snprintf(out->reason, sizeof out->reason, "exit code %d", out->exit_code);
  }
  if (out->status != GS_OK && gs_exec_ranks_lost(&ranks) >= 0) {
    char then[GS_TEXT_LONG];
    snprintf(then, sizeof then, "%s", out->reason);
    out->status = GS_ERR_RANK_LOST;
    out->lost_rank = ranks.lost_rank;
    out->lost_pid = ranks.lost_pid;
    char together[64] = "";
    if (ranks.lost_together > 0)
      snprintf(together, sizeof together, " (with %d other rank%s at once)",
               ranks.lost_together, ranks.lost_together > 1 ? "s" : "");
    snprintf(out->reason, sizeof out->reason, "rank %d on %s lost: its process (pid %d) ended "
             "while the other ranks ran%s, %.1f s before the command ended (%s)",
             ranks.lost_rank, gs_hostname(), ranks.lost_pid, together,
             (double)end * 1e-9 - ranks.lost_at, then);
  }
  return GS_OK;
}
