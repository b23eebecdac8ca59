/* Monotonic timer and UTC timestamps. */
#include "core/timer.h"

#include <time.h>

uint64_t gs_time_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double gs_time_seconds(void) { return (double)gs_time_ns() * 1e-9; }

void gs_time_utc_iso8601(char *buf, unsigned long size) {
  time_t now = time(NULL);
  struct tm tm_utc;
  gmtime_r(&now, &tm_utc);
  if (strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm_utc) == 0 && size > 0) buf[0] = '\0';
}
