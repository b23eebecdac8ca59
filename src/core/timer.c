/* Monotonic timer and UTC timestamps. */
#include "core/timer.h"

#include <errno.h>
#include <time.h>

#include "core/interrupt.h"

uint64_t gs_time_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double gs_time_seconds(void) { return (double)gs_time_ns() * 1e-9; }

void gs_sleep_seconds(double seconds) {
  if (!(seconds > 0.0)) return;
  const double whole = (double)(time_t)seconds;
  struct timespec left = {(time_t)whole, (long)((seconds - whole) * 1e9)};
  while (nanosleep(&left, &left) != 0 && errno == EINTR && gs_interrupt_signal() == 0) {
  }
}

void gs_time_utc_iso8601(char *buf, unsigned long size) {
  time_t now = time(NULL);
  struct tm tm_utc;
  gmtime_r(&now, &tm_utc);
  if (strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm_utc) == 0 && size > 0) buf[0] = '\0';
}

double gs_time_unix_seconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

void gs_time_deadline(double seconds, struct timespec *out) {
  clock_gettime(CLOCK_REALTIME, out);
  const double whole = (double)(time_t)seconds;
  out->tv_sec += (time_t)seconds;
  out->tv_nsec += (long)((seconds - whole) * 1e9);
  if (out->tv_nsec >= 1000000000L) {
    out->tv_sec++;
    out->tv_nsec -= 1000000000L;
  }
}
