/* Tests of core/file: atomic writing (the old file survives every failure,
 * a full disk included, and no temp file remains), the output checks made
 * before any work (which create nothing), mkdir -p. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/file.h"
#include "tmpdir_fixture.h"

/* The whole file as a string (caller frees); NULL when it cannot be read. */
static char *slurp(const char *path) {
  char *data = NULL;
  size_t size = 0;
  if (gs_file_read(path, 1 << 20, "test files", &data, &size) != GS_OK) return NULL;
  return data;
}

static void assert_file_is(const char *path, const char *want) {
  char *got = slurp(path);
  if (!got) fail_msg("%s cannot be read", path);
  if (strcmp(got, want) != 0) fail_msg("%s holds \"%.60s\", expected \"%.60s\"", path, got, want);
  free(got);
}

/* ---- atomic writing ----------------------------------------------------- */

static void test_write_new_and_replace(void **state) {
  fixture *fx = *state;
  char path[512];
  path_in(fx, "a/b/out.txt", path, sizeof path);
  assert_int_equal(gs_file_write_atomic(path, "first\n", 6, "the test"), GS_OK);
  assert_file_is(path, "first\n");
  assert_int_equal(chmod(path, 0640), 0);
  assert_int_equal(gs_file_write_atomic(path, "second\n", 7, "the test"), GS_OK);
  assert_file_is(path, "second\n");
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0640);  // the replacement keeps the mode
  char dir[512];
  path_in(fx, "a/b", dir, sizeof dir);
  assert_int_equal(count_entries(dir, ""), 1);  // no temp file left
}

/* A writer stopped mid-write while another process replaced the file (a
 * rank that took over writing) keeps the newer file on commit, says so and
 * leaves no temp file; a file removed meanwhile is simply written. */
static void test_replaced_meanwhile_keeps_newer(void **state) {
  fixture *fx = *state;
  char path[512];
  path_in(fx, "doc.json", path, sizeof path);
  write_text(path, "old\n");
  gs_file_out out;
  assert_int_equal(gs_file_out_open(&out, path, NULL), GS_OK);
  fputs("the stopped writer's older version\n", out.f);
  assert_int_equal(gs_file_write_atomic(path, "newer\n", 6, "the test"), GS_OK);
  assert_int_equal(gs_file_out_commit(&out), GS_ERR_IO);
  assert_non_null(strstr(gs_last_error(), "another process replaced it"));
  assert_file_is(path, "newer\n");
  assert_int_equal(count_entries(fx->dir, ""), 1);

  assert_int_equal(gs_file_out_open(&out, path, NULL), GS_OK);
  fputs("written\n", out.f);
  assert_int_equal(unlink(path), 0);
  assert_int_equal(gs_file_out_commit(&out), GS_OK);
  assert_file_is(path, "written\n");
}

/* A document rewritten as it measures: the stamp of the last commit lets
 * the writer go on over its own file, or over a removed one, but never
 * over a version another process put there since (a writer stopped before
 * it opened its next version, then resumed); gs_file_stamp_names says
 * whether the file at the path is the one committed. */
static void test_rewrite_keeps_another_writers_version(void **state) {
  fixture *fx = *state;
  char path[512];
  path_in(fx, "doc.json", path, sizeof path);
  write_text(path, "an earlier run's document\n");
  gs_file_stamp stamp = {0};
  gs_file_out out;
  assert_false(gs_file_stamp_names(&stamp, path)); /* nothing committed yet */
  assert_int_equal(gs_file_out_reopen(&out, path, NULL, &stamp), GS_OK);
  fputs("first\n", out.f);
  assert_int_equal(gs_file_out_commit(&out), GS_OK);
  assert_true(stamp.known);
  assert_true(gs_file_stamp_names(&stamp, path));
  assert_int_equal(gs_file_out_reopen(&out, path, NULL, &stamp), GS_OK);
  fputs("second\n", out.f);
  assert_int_equal(gs_file_out_commit(&out), GS_OK);
  assert_file_is(path, "second\n");

  assert_int_equal(gs_file_write_atomic(path, "taken over\n", 11, "the test"), GS_OK);
  assert_false(gs_file_stamp_names(&stamp, path));
  assert_int_equal(gs_file_out_reopen(&out, path, NULL, &stamp), GS_ERR_IO);
  assert_non_null(strstr(gs_last_error(), "another process replaced it since this one last"));
  assert_null(out.f);
  assert_file_is(path, "taken over\n");
  assert_int_equal(count_entries(fx->dir, ""), 1);

  assert_int_equal(unlink(path), 0);
  assert_false(gs_file_stamp_names(&stamp, path));
  assert_int_equal(gs_file_out_reopen(&out, path, NULL, &stamp), GS_OK);
  fputs("third\n", out.f);
  assert_int_equal(gs_file_out_commit(&out), GS_OK);
  assert_file_is(path, "third\n");
}

/* In a child under a 1 KiB file-size limit (what a full disk looks like to
 * write(2): EFBIG), replacing a small file with 64 KiB must fail, naming
 * the path and the reason, and leave the old file and no temp file. */
static void test_full_disk_keeps_old_file(void **state) {
  fixture *fx = *state;
  char path[512];
  path_in(fx, "kept.txt", path, sizeof path);
  write_text(path, "old contents\n");
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {.rlim_cur = 1024, .rlim_max = 1024};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(10);
    static char big[64 * 1024];
    memset(big, 'x', sizeof big);
    if (gs_file_write_atomic(path, big, sizeof big, "the test") != GS_ERR_IO) _exit(11);
    if (!strstr(gs_last_error(), path)) _exit(12);
    if (!strstr(gs_last_error(), strerror(EFBIG))) _exit(13);
    // The stream form, as renderers use it, fails the same way.
    gs_file_out out;
    if (gs_file_out_open(&out, path, "the report") != GS_OK) _exit(14);
    for (int i = 0; i < 64; i++) fputs("a line of a report that is long enough\n", out.f);
    if (gs_file_out_finish(&out, GS_OK) != GS_ERR_IO) _exit(15);
    if (!strstr(gs_last_error(), "cannot write the report to")) _exit(16);
    _exit(0);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_file_is(path, "old contents\n");
  assert_int_equal(count_entries(fx->dir, ""), 1);
}

static void test_abort_and_finish_keep_old_file(void **state) {
  fixture *fx = *state;
  char path[512];
  path_in(fx, "kept.txt", path, sizeof path);
  write_text(path, "old\n");
  gs_file_out out;
  assert_int_equal(gs_file_out_open(&out, path, NULL), GS_OK);
  fputs("half of a new file", out.f);
  gs_file_out_abort(&out);
  assert_file_is(path, "old\n");
  assert_int_equal(count_entries(fx->dir, ""), 1);
  gs_file_out_abort(&out);  // a second abort does nothing

  // A renderer that ran out of memory: nothing replaced, its status kept.
  assert_int_equal(gs_file_out_open(&out, path, NULL), GS_OK);
  fputs("half", out.f);
  assert_int_equal(gs_file_out_finish(&out, GS_ERR_NOMEM), GS_ERR_NOMEM);
  assert_file_is(path, "old\n");
  assert_int_equal(count_entries(fx->dir, ""), 1);
}

static void test_commit_failure_removes_temp(void **state) {
  fixture *fx = *state;
  char path[512];
  path_in(fx, "target", path, sizeof path);
  gs_file_out out;
  assert_int_equal(gs_file_out_open(&out, path, NULL), GS_OK);
  fputs("new\n", out.f);
  // The target became a non-empty directory meanwhile: the rename fails.
  char inner[600];
  assert_int_equal(mkdir(path, 0700), 0);
  snprintf(inner, sizeof inner, "%s/keep", path);
  write_text(inner, "x");
  assert_int_equal(gs_file_out_commit(&out), GS_ERR_IO);
  assert_error_mentions(path);
  assert_int_equal(count_entries(fx->dir, ""), 1);
  assert_file_is(inner, "x");
  // A directory as the target is refused at open, before any temp file.
  assert_int_equal(gs_file_write_atomic(path, "y", 1, NULL), GS_ERR_IO);
  assert_error_mentions("directory");
  assert_int_equal(count_entries(fx->dir, ""), 1);
}

static void test_symlink_and_device(void **state) {
  fixture *fx = *state;
  char target[512], link[512];
  path_in(fx, "real.txt", target, sizeof target);
  path_in(fx, "link.txt", link, sizeof link);
  write_text(target, "old\n");
  assert_int_equal(symlink("real.txt", link), 0);
  assert_int_equal(gs_file_write_atomic(link, "new\n", 4, NULL), GS_OK);
  struct stat sb;
  assert_int_equal(lstat(link, &sb), 0);
  assert_true(S_ISLNK(sb.st_mode));
  assert_file_is(target, "new\n");
  assert_int_equal(gs_file_write_atomic("/dev/null", "x", 1, NULL), GS_OK);
  assert_int_equal(count_entries(fx->dir, ""), 2);
}

/* ---- checks before any work ------------------------------------------- */

static void test_check_output(void **state) {
  fixture *fx = *state;
  char path[512], file[512];
  path_in(fx, "new.json", path, sizeof path);
  assert_int_equal(gs_file_check_output(path, "option --out"), GS_OK);
  path_in(fx, "x/y/z/new.json", path, sizeof path);
  assert_int_equal(gs_file_check_output(path, "option --out"), GS_OK);
  assert_int_equal(count_entries(fx->dir, ""), 0);  // checking creates nothing
  assert_int_equal(gs_file_check_output("/dev/null", "option --out"), GS_OK);

  assert_int_equal(gs_file_check_output(fx->dir, "option --out"), GS_ERR_USAGE);
  assert_error_mentions("option --out");
  assert_error_mentions("is a directory");
  assert_int_equal(gs_file_check_output("", "option --out"), GS_ERR_USAGE);

  path_in(fx, "plain", file, sizeof file);
  write_text(file, "x");
  path_in(fx, "plain/sub/r.json", path, sizeof path);
  assert_int_equal(gs_file_check_output(path, "option --out"), GS_ERR_IO);
  assert_error_mentions("option --out: cannot write");
  assert_error_mentions(path);
  assert_error_mentions("is not a directory");
  assert_int_equal(gs_file_check_output(file, "option --out"), GS_OK);  // replaced later
  assert_int_equal(count_entries(fx->dir, ""), 1);
}

static void test_check_output_dir(void **state) {
  fixture *fx = *state;
  char dir[512], file[512];
  assert_int_equal(gs_file_check_output_dir(fx->dir, "option --plots"), GS_OK);
  path_in(fx, "p/q", dir, sizeof dir);
  assert_int_equal(gs_file_check_output_dir(dir, "option --plots"), GS_OK);
  assert_int_equal(count_entries(fx->dir, ""), 0);
  path_in(fx, "plain", file, sizeof file);
  write_text(file, "x");
  assert_int_equal(gs_file_check_output_dir(file, "option --plots"), GS_ERR_USAGE);
  assert_error_mentions("option --plots");
  path_in(fx, "plain/q", dir, sizeof dir);
  assert_int_equal(gs_file_check_output_dir(dir, "option --plots"), GS_ERR_IO);
  assert_error_mentions(dir);
  assert_int_equal(gs_file_make_dirs(dir, "option --plots"), GS_ERR_IO);
  path_in(fx, "m/n//o", dir, sizeof dir);
  assert_int_equal(gs_file_make_dirs(dir, "option --plots"), GS_OK);
  struct stat sb;
  assert_int_equal(stat(dir, &sb), 0);
  assert_true(S_ISDIR(sb.st_mode));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_write_new_and_replace, setup, teardown),
      cmocka_unit_test_setup_teardown(test_full_disk_keeps_old_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_abort_and_finish_keep_old_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_replaced_meanwhile_keeps_newer, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rewrite_keeps_another_writers_version, setup, teardown),
      cmocka_unit_test_setup_teardown(test_commit_failure_removes_temp, setup, teardown),
      cmocka_unit_test_setup_teardown(test_symlink_and_device, setup, teardown),
      cmocka_unit_test_setup_teardown(test_check_output, setup, teardown),
      cmocka_unit_test_setup_teardown(test_check_output_dir, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
