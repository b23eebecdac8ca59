/* Shared by the tests that write files: a cmocka fixture holding a fresh
 * scratch directory (removed with everything in it afterwards) and small
 * helpers over it. Include after <cmocka.h>. */
#ifndef GS_TEST_TMPDIR_FIXTURE_H
#define GS_TEST_TMPDIR_FIXTURE_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/status.h"

typedef struct {
  char dir[256];
} fixture;

static void remove_tree(const char *path) {
  struct stat sb;
  if (lstat(path, &sb) != 0) return;
  if (S_ISDIR(sb.st_mode)) {
    DIR *d = opendir(path);
    if (d) {
      struct dirent *e;
      while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char child[1024];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        remove_tree(child);
      }
      closedir(d);
    }
    rmdir(path);
  } else {
    unlink(path);
  }
}

/* cmocka setup: a new directory under $TMPDIR (or /tmp) in *state. */
static int setup(void **state) {
  fixture *fx = calloc(1, sizeof *fx);
  if (!fx) return -1;
  const char *base = getenv("TMPDIR");
  snprintf(fx->dir, sizeof fx->dir, "%s/gs_test_XXXXXX", base && base[0] ? base : "/tmp");
  if (!mkdtemp(fx->dir)) {
    free(fx);
    return -1;
  }
  gs_clear_error();
  *state = fx;
  return 0;
}

static int teardown(void **state) {
  fixture *fx = *state;
  remove_tree(fx->dir);
  free(fx);
  return 0;
}

static void path_in(const fixture *fx, const char *name, char *buf, size_t size) {
  snprintf(buf, size, "%s/%s", fx->dir, name);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

/* Number of entries in `dir` whose name contains `needle` ("" counts all). */
static int count_entries(const char *dir, const char *needle) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && strstr(e->d_name, needle))
      n++;
  closedir(d);
  return n;
}

static void assert_error_mentions(const char *needle) {
  const char *msg = gs_last_error();
  if (!strstr(msg, needle)) fail_msg("error \"%s\" does not mention \"%s\"", msg, needle);
}

#endif
