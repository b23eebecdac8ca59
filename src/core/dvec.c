/* A growable array of doubles (see dvec.h). */
#include "core/dvec.h"

#include <stdlib.h>

gs_status gs_dvec_push(gs_dvec *d, double x) {
  if (d->n == d->cap) {
    size_t cap = d->cap ? 2 * d->cap : 64;
    double *v = realloc(d->v, cap * sizeof *v);
    if (!v) return gs_error(GS_ERR_NOMEM, "cannot grow a list of numbers to %zu entries", cap);
    d->v = v;
    d->cap = cap;
  }
  d->v[d->n++] = x;
  return GS_OK;
}

void gs_dvec_free(gs_dvec *d) {
  free(d->v);
  d->v = NULL;
  d->n = d->cap = 0;
}
