/* Monotonic wall-clock time for host-side timing. */
#ifndef GS_TIMER_H
#define GS_TIMER_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds from CLOCK_MONOTONIC (arbitrary origin, never goes back). */
uint64_t gs_time_ns(void);

/* Seconds from CLOCK_MONOTONIC as a double. */
double gs_time_seconds(void);

/* Sleeps `seconds` (nothing when <= 0), resuming after a signal
 * interrupts it, unless that signal is a request to stop (core/interrupt.h):
 * then it returns early. */
void gs_sleep_seconds(double seconds);

/* The CLOCK_REALTIME instant `seconds` (>= 0) from now, normalised, for
 * pthread_cond_timedwait. */
void gs_time_deadline(double seconds, struct timespec *out);

/* Seconds since the Unix epoch from CLOCK_REALTIME (a run's
 * started_unix_seconds: comparable between processes and documents). */
double gs_time_unix_seconds(void);

/* Current UTC time as ISO 8601 "YYYY-MM-DDTHH:MM:SSZ" into buf (>= 21 bytes). */
void gs_time_utc_iso8601(char *buf, unsigned long size);

#endif
