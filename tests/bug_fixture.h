/* Shared by the tests of contracts that only a bug can break: assert_bug
 * runs a statement in a child process and asserts that it ended there as a
 * bug (GS_BUG: exit 70, "gpuscale: BUG: file:line: ..." on stderr naming
 * `words`), not with a status. Include after <cmocka.h>. */
#ifndef GS_TEST_BUG_FIXTURE_H
#define GS_TEST_BUG_FIXTURE_H

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/status.h"

/* Reads the child's stderr into text (NUL-terminated, cut at size - 1)
 * and waits for it; returns its wait status. */
static int bug_fixture_collect(pid_t pid, int fd, char *text, size_t size) {
  size_t used = 0;
  ssize_t got;
  while ((got = read(fd, text + used, size - 1 - used)) > 0) used += (size_t)got;
  text[used] = '\0';
  close(fd);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return status;
}

#define assert_bug(statement, words)                                                   \
  do {                                                                                 \
    int bug_pipe_[2];                                                                  \
    assert_int_equal(pipe(bug_pipe_), 0);                                              \
    fflush(NULL);                                                                      \
    pid_t bug_pid_ = fork();                                                           \
    assert_true(bug_pid_ >= 0);                                                        \
    if (bug_pid_ == 0) {                                                               \
      close(bug_pipe_[0]);                                                             \
      dup2(bug_pipe_[1], STDERR_FILENO);                                               \
      statement;                                                                       \
      _exit(0); /* returned: not a bug */                                              \
    }                                                                                  \
    close(bug_pipe_[1]);                                                               \
    char bug_text_[4096];                                                              \
    int bug_status_ = bug_fixture_collect(bug_pid_, bug_pipe_[0], bug_text_,          \
                                          sizeof bug_text_);                           \
    if (!WIFEXITED(bug_status_) || WEXITSTATUS(bug_status_) != GS_EXIT_BUG)            \
      fail_msg("%s: not a bug (wait status %d): %s", #statement, bug_status_,          \
               bug_text_);                                                             \
    if (strncmp(bug_text_, "gpuscale: BUG: ", 15) != 0 || !strstr(bug_text_, (words))) \
      fail_msg("%s: the bug's report does not name '%s': %s", #statement, (words),     \
               bug_text_);                                                             \
  } while (0)

#endif
