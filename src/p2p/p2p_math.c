/* The pure parts of p2p: defaults, --pairs parsing, the bandwidth formula
 * and the per-cell summary. No CUDA here, so unit tests cover all of it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/parse.h"
#include "core/stats.h"
#include "p2p/p2p.h"

const char *const gs_p2p_mode_names[] = {"all", "ce", "sm", "host", "latency", NULL};

void gs_p2p_options_default(gs_p2p_options *o) {
  memset(o, 0, sizeof *o);
  o->size_bytes = 1ull << 30;
  o->iters = 8;
  o->samples = 5;
  o->streams = 4;
  o->latency_rounds = 2000;
  o->sm_ctas = 4;
  o->mode = GS_P2P_MODE_ALL;
}

gs_status gs_p2p_parse_pairs(const char *text, gs_p2p_options *o) {
  char buf[1024];
  if (strlen(text) >= sizeof buf) return gs_error(GS_ERR_USAGE, "option --pairs: list too long");
  snprintf(buf, sizeof buf, "%s", text);
  size_t len = strlen(buf);
  if (len && (buf[0] == ',' || buf[len - 1] == ',' || strstr(buf, ",,")))
    return gs_error(GS_ERR_USAGE, "option --pairs: empty entry in '%s'", text);
  o->n_pairs = 0;
  char *save = NULL;
  for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(item, ':');
    if (!colon)
      return gs_error(GS_ERR_USAGE, "option --pairs: '%s' is not SRC:DST (e.g. 0:1)", item);
    *colon = '\0';
    uint64_t src = 0, dst = 0;
    GS_TRY(gs_parse_count(item, "--pairs", 0, GS_P2P_MAX_GPUS - 1, &src));
    GS_TRY(gs_parse_count(colon + 1, "--pairs", 0, GS_P2P_MAX_GPUS - 1, &dst));
    if (src == dst)
      return gs_error(GS_ERR_USAGE, "option --pairs: %llu:%llu pairs a GPU with itself",
                      (unsigned long long)src, (unsigned long long)dst);
    for (size_t k = 0; k < o->n_pairs; k++)
      if (o->pairs[k][0] == (int)src && o->pairs[k][1] == (int)dst)
        return gs_error(GS_ERR_USAGE, "option --pairs: %llu:%llu listed twice",
                        (unsigned long long)src, (unsigned long long)dst);
    if (o->n_pairs == sizeof o->pairs / sizeof o->pairs[0])
      return gs_error(GS_ERR_USAGE, "option --pairs: more than %zu pairs",
                      sizeof o->pairs / sizeof o->pairs[0]);
    o->pairs[o->n_pairs][0] = (int)src;
    o->pairs[o->n_pairs][1] = (int)dst;
    o->n_pairs++;
  }
  if (o->n_pairs == 0) return gs_error(GS_ERR_USAGE, "option --pairs: no pair listed");
  return GS_OK;
}

int gs_p2p_pair_wanted(const gs_p2p_options *o, int src, int dst) {
  if (src == dst) return 0;
  if (o->n_pairs == 0) return 1;
  for (size_t k = 0; k < o->n_pairs; k++)
    if (o->pairs[k][0] == src && o->pairs[k][1] == dst) return 1;
  return 0;
}

double gs_p2p_bandwidth(uint64_t bytes, uint64_t copies, double seconds) {
  if (!(seconds > 0.0)) return NAN;
  return (double)bytes * (double)copies / seconds;
}

gs_status gs_p2p_cell_summarize(gs_p2p_cell *cell) {
  gs_stats s;
  GS_TRY(gs_stats_compute(cell->samples, cell->n, &s));
  cell->median = s.median;
  cell->min = s.min;
  cell->max = s.max;
  return GS_OK;
}
