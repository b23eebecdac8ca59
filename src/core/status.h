/* Status codes passed up through every layer, and the error reporting that
 * goes with them. Library code never exits and never prints an error: it
 * records the error (gs_error) and returns a gs_status; the command prints
 * the error once and main maps the status to the process exit code (see
 * docs/cli.md). A broken internal invariant is a bug: GS_BUG names its
 * place and ends the process with its own exit code. */
#ifndef GS_STATUS_H
#define GS_STATUS_H

#include <stdarg.h>

typedef enum {
  GS_OK = 0,
  GS_ERR_USAGE,       /* bad, unknown or conflicting option (exit 2) */
  GS_ERR_IO,          /* file could not be read or written */
  GS_ERR_FORMAT,      /* malformed or foreign input document */
  GS_ERR_NOMEM,       /* host or device allocation failed */
  GS_ERR_CUDA,        /* CUDA runtime call failed */
  GS_ERR_NCCL,        /* NCCL call failed */
  GS_ERR_MPI,         /* MPI call failed */
  GS_ERR_NVML,        /* NVML call failed */
  GS_ERR_VERIFY,      /* result differs from the CPU reference */
  GS_ERR_TIMEOUT,     /* a rank did not finish in time */
  GS_ERR_UNSUPPORTED, /* the request cannot run here (e.g. no GPU) */
  GS_ERR_ABORTED,     /* stopped because another rank failed */
  GS_ERR_SYSTEM,      /* the OS refused a thread, process, lock or setting (errno's text) */
  GS_REGRESSION,      /* compare: a significant regression was found (exit 3) */
  GS_ERR_INTERRUPTED, /* SIGINT/SIGTERM arrived; what was measured is kept */
  GS_ERR_RANK_LOST,   /* a rank died, hung or was killed (docs/multinode.md) */
  GS_ERR_PARTIAL,     /* the run ended early; the document holds what was measured (exit 4) */
  GS_ERR_COMMAND,     /* exec: the user's command failed (exit code, signal, missing metric) */
  GS_NODE_FAIL,       /* suite, report, check: the node verdict is fail (exit 5, docs/verdict.md) */
  GS_NODE_WARN        /* check: the node check warned, nothing failed (exit 6, docs/check.md) */
} gs_status;

/* Stable lower-case name of a status, e.g. "verify" (used in result files). */
const char *gs_status_name(gs_status status);

/* Exit code of a bug in gpuscale (a broken internal invariant), as
 * sysexits' EX_SOFTWARE. */
#define GS_EXIT_BUG 70

/* Process exit code for a status: 0 ok, 2 usage, 3 regression (compare),
 * 4 partial, 5 node verdict fail, 6 node check warn, 1 anything else (docs/cli.md). A bug has
 * no status: GS_BUG ends the process with GS_EXIT_BUG (70). */
int gs_status_exit_code(gs_status status);

/* Records an error for the calling thread, replacing the one before, and
 * returns `status`, so that callers can write
 * `return gs_error(GS_ERR_IO, "cannot open %s", path);`. Prints nothing:
 * the command prints the error once (gs_error_print). */
gs_status gs_error(gs_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A refusal by the operating system: records "message: strerror(errnum)"
 * and returns GS_ERR_SYSTEM. `errnum` is errno after a call that sets it,
 * or the error number a pthread or posix_spawn call returns. */
gs_status gs_error_system(int errnum, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints the calling thread's recorded error to stderr as
 * "gpuscale: error: message" (nothing when none is recorded). Called once
 * by main for a command that failed. */
void gs_error_print(void);

/* A broken invariant of gpuscale's own code (a caller breaking a
 * function's contract, a state that cannot happen): prints "gpuscale: BUG:
 * file:line: message" and ends the process with GS_EXIT_BUG. Not for what a
 * user, the OS or a library can cause: those are errors with a status. A
 * bug while one is being reported (in the same thread) ends the process at
 * once; one in another thread waits for the first report to end it. Use
 * through GS_BUG. */
void gs_bug(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
#define GS_BUG(...) gs_bug(__FILE__, __LINE__, __VA_ARGS__)

/* Used by the GS_CHECK_* macros: a failed library call with its expression,
 * location and the library's own message. */
gs_status gs_error_call(gs_status status, const char *library, const char *expr,
                        const char *file, int line, const char *message);

/* The calling thread's most recent error message ("" when none). The pointer
 * stays valid until the thread's next error. */
const char *gs_last_error(void);

/* The calling thread's recorded error, kept across a call whose failure
 * is tolerated (a fit with too few points, telemetry that cannot start),
 * so that the failure the command reports is not replaced by it. */
typedef struct {
  char text[1024];
} gs_error_kept;
void gs_error_keep(gs_error_kept *kept);
void gs_error_restore(const gs_error_kept *kept);

/* The first failure of a sequence that goes on after one (a sweep's
 * measurements, a suite's workloads, the documents written after them):
 * when `status` is a failure and *first is still GS_OK, keeps it in *first
 * and the calling thread's error in *kept. gs_error_restore(kept) before
 * returning *first puts back the text that later failures replaced. */
void gs_error_keep_first(gs_status status, gs_status *first, gs_error_kept *kept);

/* Clears the calling thread's recorded error. */
void gs_clear_error(void);

/* Sets the rank printed with this thread's errors (-1: none, the default). */
void gs_set_thread_rank(int rank);

/* Warnings and notes go to stderr; gs_set_quiet(1) silences notes only. */
void gs_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gs_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gs_set_quiet(int quiet);
int gs_is_quiet(void);

/* This machine's host name (cached; never NULL). */
const char *gs_hostname(void);

#endif
