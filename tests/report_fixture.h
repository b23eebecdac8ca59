/* Shared by the report tests: the path of a fixture document in
 * tests/data/report/, found from the source tree (source_path.h). */
#ifndef GS_TEST_REPORT_FIXTURE_H
#define GS_TEST_REPORT_FIXTURE_H

#include <stdio.h>

#include "source_path.h"

/* tests/data/report/NAME; up to four at once. */
static const char *fixture(const char *name) {
  char rel[512];
  snprintf(rel, sizeof rel, "data/report/%s", name);
  return source_path(rel);
}

#endif
