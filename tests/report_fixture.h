/* Shared by the report tests: the path of a fixture document in
 * tests/data/report/, found from this header's own path. */
#ifndef GS_TEST_REPORT_FIXTURE_H
#define GS_TEST_REPORT_FIXTURE_H

#include <stdio.h>
#include <string.h>

/* tests/data/report/NAME; four rotating buffers, so up to four at once. */
static const char *fixture(const char *name) {
  static char buf[4][1024];
  static int next;
  char *out = buf[next++ % 4];
  const char *file = __FILE__;
  const char *slash = strrchr(file, '/');
  int dir_len = slash ? (int)(slash - file) : 1;
  snprintf(out, sizeof buf[0], "%.*s/data/report/%s", dir_len, slash ? file : ".", name);
  return out;
}

#endif
