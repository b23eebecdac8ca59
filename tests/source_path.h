/* Shared by tests that read files of the source tree: the path of `rel`
 * (relative to tests/) found from this header's own path, so that a test
 * runs from any directory. */
#ifndef GS_TEST_SOURCE_PATH_H
#define GS_TEST_SOURCE_PATH_H

#include <stdio.h>
#include <string.h>

/* tests/REL; four rotating buffers, so up to four at once. */
static const char *source_path(const char *rel) {
  static char buf[4][1024];
  static int next;
  char *out = buf[next++ % 4];
  const char *file = __FILE__;
  const char *slash = strrchr(file, '/');
  int dir_len = slash ? (int)(slash - file) : 1;
  snprintf(out, sizeof buf[0], "%.*s/%s", dir_len, slash ? file : ".", rel);
  return out;
}

#endif
