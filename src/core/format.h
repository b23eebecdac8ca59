/* Numbers for people: seconds with a unit and rates with an SI prefix. */
#ifndef GS_FORMAT_H
#define GS_FORMAT_H

#include <stddef.h>

/* Formats seconds with a unit chosen for 3-4 significant digits ("1.23 ms");
 * "-" for a negative or non-finite value. */
void gs_format_seconds(double seconds, char *buf, size_t size);

/* Formats a rate with an SI prefix ("6.48 G"); "-" for zero, a negative or
 * a non-finite value. */
void gs_format_rate(double per_second, char *buf, size_t size);

#endif
