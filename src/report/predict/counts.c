/* The GPU counts of `gpuscale predict --ngpus` and `report --predict`:
 * lists, ranges and ranges with a step, parsed strictly (docs/predict.md). */
#include <stdlib.h>
#include <string.h>

#include "core/parse.h"
#include "report/predict/predict.h"

/* See predict.h. */
gs_status gs_predict_parse_counts(const char *text, const char *option, int **counts, size_t *n) {
  *counts = NULL;
  *n = 0;
  size_t cap = 0;
  const char *p = text;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char part[64];
    if (len == 0 || len >= sizeof part) {
      free(*counts);
      *counts = NULL;
      return gs_error(GS_ERR_USAGE, "option %s: '%s' must be counts or ranges like 8,16,64, "
                      "1-1000 or 8-8000:8", option, text);
    }
    memcpy(part, p, len);
    part[len] = '\0';
    uint64_t lo = 0, hi = 0, step = 1;
    char *dash = strchr(part, '-');
    char *colon = strchr(part, ':');
    gs_status st = GS_OK;
    if (colon && dash && colon > dash) {
      *colon = '\0';
      st = gs_parse_count(colon + 1, option, 1, GS_PREDICT_COUNTS_MAX, &step);
    } else if (colon) {
      st = gs_error(GS_ERR_USAGE, "option %s: a step (:S) follows a range A-B, got '%s'", option,
                    part);
    }
    if (st == GS_OK && dash) {
      *dash = '\0';
      st = gs_parse_count(part, option, 1, GS_PREDICT_COUNTS_MAX, &lo);
      if (st == GS_OK) st = gs_parse_count(dash + 1, option, 1, GS_PREDICT_COUNTS_MAX, &hi);
      if (st == GS_OK && hi < lo)
        st = gs_error(GS_ERR_USAGE, "option %s: range %s-%s ends below its start", option, part,
                      dash + 1);
    } else if (st == GS_OK) {
      st = gs_parse_count(part, option, 1, GS_PREDICT_COUNTS_MAX, &lo);
      hi = lo;
    }
    uint64_t many = st == GS_OK ? (hi - lo) / step + 1 : 0;
    if (st == GS_OK && *n + many > GS_PREDICT_COUNTS_MAX)
      st = gs_error(GS_ERR_USAGE, "option %s: more than %d GPU counts", option,
                    GS_PREDICT_COUNTS_MAX);
    if (st == GS_OK && *n + many > cap) {
      size_t want = *n + (size_t)many;
      cap = want > 2 * cap ? want : 2 * cap;
      int *grown = realloc(*counts, cap * sizeof *grown);
      if (!grown) st = gs_error(GS_ERR_NOMEM, "out of memory for option %s", option);
      else *counts = grown;
    }
    if (st != GS_OK) {
      free(*counts);
      *counts = NULL;
      *n = 0;
      return st;
    }
    for (uint64_t v = lo; v <= hi; v += step) (*counts)[(*n)++] = (int)v;
    if (!comma) return GS_OK;
    p = comma + 1;
  }
}
