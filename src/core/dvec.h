/* A growable array of doubles, for collecting samples whose count is not
 * known in advance (e.g. per-request latencies). */
#ifndef GS_DVEC_H
#define GS_DVEC_H

#include <stddef.h>

#include "core/status.h"

typedef struct {
  double *v; /* owned; NULL while empty */
  size_t n, cap;
} gs_dvec;

/* Appends x, doubling the capacity as needed (64 to start). Returns
 * GS_ERR_NOMEM (with a message) when memory runs out; *d is unchanged then. */
gs_status gs_dvec_push(gs_dvec *d, double x);

/* Frees the array and empties *d. */
void gs_dvec_free(gs_dvec *d);

#endif
