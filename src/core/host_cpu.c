/* Other work on the host's CPUs during a measurement (see host_cpu.h):
 * the aggregate "cpu" line of /proc/stat (user, nice, system, irq,
 * softirq and steal ticks; idle and iowait left out) against this
 * process's getrusage. */
// getrusage's RUSAGE_CHILDREN is in POSIX; sysconf(_SC_CLK_TCK) too.
#include "core/host_cpu.h"

#include <math.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/timer.h"

/* Seconds of a timeval. */
static double seconds_of(struct timeval t) { return (double)t.tv_sec + 1e-6 * (double)t.tv_usec; }

/* The host's busy seconds over all CPUs from /proc/stat; NaN unreadable. */
static double host_busy_seconds(void) {
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return NAN;
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0,
                     softirq = 0, steal = 0;
  const int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system,
                         &idle, &iowait, &irq, &softirq, &steal);
  fclose(f);
  const long tick = sysconf(_SC_CLK_TCK);
  if (got < 4 || tick <= 0) return NAN;
  return (double)(user + nice + system + irq + softirq + steal) / (double)tick;
}

void gs_host_cpu_read(gs_host_cpu_sample *s) {
  s->wall = gs_time_seconds();
  s->host_busy = host_busy_seconds();
  struct rusage self, children;
  const int used = getrusage(RUSAGE_SELF, &self) == 0 && getrusage(RUSAGE_CHILDREN, &children) == 0;
  s->own = used ? seconds_of(self.ru_utime) + seconds_of(self.ru_stime) +
                      seconds_of(children.ru_utime) + seconds_of(children.ru_stime)
                : NAN;
  s->ok = isfinite(s->host_busy) && isfinite(s->own);
}

double gs_host_cpu_other_cores(const gs_host_cpu_sample *a, const gs_host_cpu_sample *b) {
  const double wall = b->wall - a->wall;
  if (!a->ok || !b->ok || !(wall > 0.0)) return NAN;
  const double other = (b->host_busy - a->host_busy) - (b->own - a->own);
  return other > 0.0 ? other / wall : 0.0;
}
