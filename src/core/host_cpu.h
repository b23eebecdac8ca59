/* What other work did to the host's CPUs while gpuscale measured: the
 * host's busy CPU time (/proc/stat) less this process's own (getrusage,
 * with its waited-for children), over the wall time between two samples,
 * as the number of cores that other work kept busy on average
 * (docs/statistics.md, "Other work on the host"). */
#ifndef GS_HOST_CPU_H
#define GS_HOST_CPU_H

/* One sample of the host's and this process's CPU time. */
typedef struct {
  int ok;              /* 0: /proc/stat could not be read (nothing is known) */
  double wall;         /* monotonic seconds */
  double host_busy;    /* seconds every CPU of the host spent out of idle and iowait */
  double own;          /* user + system seconds of this process and its waited-for children */
} gs_host_cpu_sample;

/* Takes a sample now (ok 0 where /proc/stat or getrusage fails). */
void gs_host_cpu_read(gs_host_cpu_sample *s);

/* The cores other work kept busy on average between samples a and b:
 * (busy b - busy a - (own b - own a)) / (wall b - wall a), at least 0; NaN
 * when either sample is not ok or no time passed. */
double gs_host_cpu_other_cores(const gs_host_cpu_sample *a, const gs_host_cpu_sample *b);

#endif
