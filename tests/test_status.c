/* Tests of core/status: the exit code of every status, the system error's
 * text, the recorded error kept across a tolerated failure, and GS_BUG
 * (exit 70 with file:line, one report when two threads hit a bug at once). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "bug_fixture.h"
#include "core/status.h"

static void test_exit_codes(void **unused) {
  (void)unused;
  // docs/cli.md's table: 0, 1, 2, 3, 4, 5; a bug (70) has no status.
  assert_int_equal(gs_status_exit_code(GS_OK), 0);
  assert_int_equal(gs_status_exit_code(GS_ERR_USAGE), 2);
  assert_int_equal(gs_status_exit_code(GS_REGRESSION), 3);
  assert_int_equal(gs_status_exit_code(GS_ERR_PARTIAL), 4);
  assert_int_equal(gs_status_exit_code(GS_NODE_FAIL), 5);
  const gs_status failed[] = {GS_ERR_IO,      GS_ERR_FORMAT,      GS_ERR_NOMEM,     GS_ERR_CUDA,
                              GS_ERR_NCCL,    GS_ERR_MPI,         GS_ERR_NVML,      GS_ERR_VERIFY,
                              GS_ERR_TIMEOUT, GS_ERR_UNSUPPORTED, GS_ERR_ABORTED,   GS_ERR_SYSTEM,
                              GS_ERR_INTERRUPTED, GS_ERR_RANK_LOST, GS_ERR_COMMAND};
  for (size_t i = 0; i < sizeof failed / sizeof failed[0]; i++)
    assert_int_equal(gs_status_exit_code(failed[i]), 1);
  assert_int_equal(GS_EXIT_BUG, 70);
  assert_string_equal(gs_status_name(GS_ERR_SYSTEM), "system");
}

static void test_system_error_has_errno_text(void **unused) {
  (void)unused;
  gs_clear_error();
  assert_int_equal(gs_error_system(EAGAIN, "cannot start the thread of rank %d", 3), GS_ERR_SYSTEM);
  char want[256];
  snprintf(want, sizeof want, "cannot start the thread of rank 3: %s", strerror(EAGAIN));
  assert_string_equal(gs_last_error(), want);
}

static void test_kept_error_survives_a_tolerated_failure(void **unused) {
  (void)unused;
  gs_error(GS_ERR_VERIFY, "rank 1: wrong result");
  gs_error_kept kept;
  gs_error_keep(&kept);
  gs_error(GS_ERR_CUDA, "cudaFree failed in teardown");
  gs_error_restore(&kept);
  assert_string_equal(gs_last_error(), "rank 1: wrong result");
  // A sequence that goes on after failures keeps the first one and its text.
  gs_status first = GS_OK;
  gs_error_kept first_text;
  gs_error_keep_first(GS_OK, &first, &first_text);
  assert_int_equal(first, GS_OK);
  gs_error_keep_first(gs_error(GS_ERR_VERIFY, "2 ranks: wrong result"), &first, &first_text);
  gs_error_keep_first(gs_error(GS_ERR_IO, "cannot write the document"), &first, &first_text);
  assert_int_equal(first, GS_ERR_VERIFY);
  gs_error_restore(&first_text);
  assert_string_equal(gs_last_error(), "2 ranks: wrong result");
}

static void bug_at_a_known_line(void) { GS_BUG("measurement %d of %d", 5, 4); }
static const int known_bug_line = __LINE__ - 1;

static void test_bug_names_its_place(void **unused) {
  (void)unused;
  char where[64];
  snprintf(where, sizeof where, "test_status.c:%d: measurement 5 of 4", known_bug_line);
  assert_bug(bug_at_a_known_line(), where);
}

static pthread_barrier_t both_ready;

static void *bug_thread(void *arg) {
  (void)arg;
  pthread_barrier_wait(&both_ready);
  GS_BUG("two at once");
}

/* Two threads hit a bug together: one report, exit 70, no hang. */
static void two_bugs_at_once(void) {
  pthread_t t;
  pthread_barrier_init(&both_ready, NULL, 2);
  if (pthread_create(&t, NULL, bug_thread, NULL) != 0) _exit(1);
  pthread_barrier_wait(&both_ready);
  GS_BUG("two at once");
}

static void test_two_bugs_one_report(void **unused) {
  (void)unused;
  assert_bug(two_bugs_at_once(), "two at once (please report it)\n");
  // The report is one line: the second thread waited for the first.
  int pipe_fds[2];
  assert_int_equal(pipe(pipe_fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(pipe_fds[0]);
    dup2(pipe_fds[1], STDERR_FILENO);
    two_bugs_at_once();
  }
  close(pipe_fds[1]);
  char text[4096];
  int status = bug_fixture_collect(pid, pipe_fds[0], text, sizeof text);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), GS_EXIT_BUG);
  const char *first = strstr(text, "gpuscale: BUG: ");
  assert_non_null(first);
  assert_null(strstr(first + 1, "gpuscale: BUG: "));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exit_codes),
      cmocka_unit_test(test_system_error_has_errno_text),
      cmocka_unit_test(test_kept_error_survives_a_tolerated_failure),
      cmocka_unit_test(test_bug_names_its_place),
      cmocka_unit_test(test_two_bugs_one_report),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
