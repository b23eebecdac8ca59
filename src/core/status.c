/* Status names, exit codes and the per-thread error record behind gs_error. */
#include "core/status.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define GS_ERROR_TEXT_MAX sizeof(((gs_error_kept *)0)->text)

static _Thread_local char thread_error[GS_ERROR_TEXT_MAX];
static _Thread_local int thread_rank = -1;
static int quiet_notes;

const char *gs_status_name(gs_status status) {
  switch (status) {
    case GS_OK: return "ok";
    case GS_ERR_USAGE: return "usage";
    case GS_ERR_IO: return "io";
    case GS_ERR_FORMAT: return "format";
    case GS_ERR_NOMEM: return "out-of-memory";
    case GS_ERR_CUDA: return "cuda";
    case GS_ERR_NCCL: return "nccl";
    case GS_ERR_MPI: return "mpi";
    case GS_ERR_NVML: return "nvml";
    case GS_ERR_VERIFY: return "verification";
    case GS_ERR_TIMEOUT: return "timeout";
    case GS_ERR_UNSUPPORTED: return "unsupported";
    case GS_ERR_ABORTED: return "aborted";
    case GS_ERR_SYSTEM: return "system";
    case GS_REGRESSION: return "regression";
    case GS_ERR_INTERRUPTED: return "interrupted";
    case GS_ERR_RANK_LOST: return "rank-lost";
    case GS_ERR_PARTIAL: return "partial";
    case GS_ERR_COMMAND: return "command-failed";
    case GS_NODE_FAIL: return "node-fail";
    case GS_NODE_WARN: return "node-warn";
  }
  return "unknown";
}

int gs_status_exit_code(gs_status status) {
  if (status == GS_OK) return 0;
  if (status == GS_ERR_USAGE) return 2;
  if (status == GS_REGRESSION) return 3;
  if (status == GS_ERR_PARTIAL) return 4;
  if (status == GS_NODE_FAIL) return 5;
  if (status == GS_NODE_WARN) return 6;
  return 1;
}

static char host_name[256];

/* pthread_once needs a plain function; it fills the cached host name. */
static void fill_host_name(void) {
  if (gethostname(host_name, sizeof host_name - 1) != 0 || host_name[0] == '\0')
    strcpy(host_name, "unknown-host");
}

const char *gs_hostname(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, fill_host_name);
  return host_name;
}

static void print_prefixed(const char *kind, const char *text) {
  if (thread_rank >= 0)
    fprintf(stderr, "gpuscale: %s: [rank %d @ %s] %s\n", kind, thread_rank, gs_hostname(), text);
  else
    fprintf(stderr, "gpuscale: %s: %s\n", kind, text);
}

/* Formatted apart first: a caller may pass gs_last_error() itself as an
 * argument, to add context to an error recorded below it. */
static void record(const char *fmt, va_list ap) {
  char text[GS_ERROR_TEXT_MAX];
  vsnprintf(text, sizeof text, fmt, ap);
  memcpy(thread_error, text, sizeof thread_error);
}

gs_status gs_error(gs_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record(fmt, ap);
  va_end(ap);
  return status;
}

gs_status gs_error_system(int errnum, const char *fmt, ...) {
  char text[GS_ERROR_TEXT_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  return gs_error(GS_ERR_SYSTEM, "%s: %s", text, strerror(errnum));
}

void gs_error_print(void) {
  if (thread_error[0]) print_prefixed("error", thread_error);
}

/* Set by the first bug reported; gs_bug's own thread marks itself too. */
static atomic_flag bug_reported = ATOMIC_FLAG_INIT;
static _Thread_local int reporting_bug;

void gs_bug(const char *file, int line, const char *fmt, ...) {
  if (reporting_bug) {
    // A bug while formatting or printing the report: no formatting now.
    static const char again[] = "gpuscale: BUG: a second bug while reporting one\n";
    ssize_t ignored = write(STDERR_FILENO, again, sizeof again - 1);
    (void)ignored;
    _exit(GS_EXIT_BUG);
  }
  reporting_bug = 1;
  // Another thread is reporting its bug and will end the process.
  if (atomic_flag_test_and_set(&bug_reported))
    for (;;) pause();
  char text[GS_ERROR_TEXT_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  // The place in the source tree (src/core/...), not the build machine's path.
  for (const char *at = strstr(file, "/src/"); at; at = strstr(at + 1, "/src/")) file = at + 1;
  if (thread_rank >= 0)
    fprintf(stderr, "gpuscale: BUG: %s:%d: %s (rank %d @ %s; please report it)\n", file, line,
            text, thread_rank, gs_hostname());
  else
    fprintf(stderr, "gpuscale: BUG: %s:%d: %s (please report it)\n", file, line, text);
  fflush(stderr);
  _exit(GS_EXIT_BUG);
}

gs_status gs_error_call(gs_status status, const char *library, const char *expr,
                        const char *file, int line, const char *message) {
  return gs_error(status, "%s:%d: %s call `%s` failed: %s", file, line, library, expr,
                  message ? message : "(no message)");
}

const char *gs_last_error(void) { return thread_error; }

void gs_clear_error(void) { thread_error[0] = '\0'; }

void gs_error_keep(gs_error_kept *kept) {
  snprintf(kept->text, sizeof kept->text, "%s", thread_error);
}

void gs_error_keep_first(gs_status status, gs_status *first, gs_error_kept *kept) {
  if (status == GS_OK || *first != GS_OK) return;
  *first = status;
  gs_error_keep(kept);
}

void gs_error_restore(const gs_error_kept *kept) {
  snprintf(thread_error, sizeof thread_error, "%s", kept->text);
}

void gs_set_thread_rank(int rank) { thread_rank = rank; }

void gs_warn(const char *fmt, ...) {
  char text[GS_ERROR_TEXT_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  print_prefixed("warning", text);
}

void gs_note(const char *fmt, ...) {
  if (quiet_notes) return;
  char text[GS_ERROR_TEXT_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  print_prefixed("note", text);
}

void gs_set_quiet(int quiet) { quiet_notes = quiet; }

int gs_is_quiet(void) { return quiet_notes; }
