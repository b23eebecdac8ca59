/* Parsing and description of injected faults; the runner applies them (and
 * the communication layer the slow pair). */
#include "core/fault.h"

#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/parse.h"
#include "core/result.h"
#include "core/timer.h"
#include "core/types.h"

typedef struct {
  const char *name;
  double min, max;
} param_spec;

/* Every kind: its name and its parameters besides "rank" (all required).
 * A new kind is one more row here and its effect in the runner. */
static const struct {
  gs_fault_kind kind;
  const char *name;
  size_t n_params;
  param_spec params[GS_FAULT_MAX_PARAMS];
} kinds[] = {
    {GS_FAULT_SLOW, "slow", 1, {{"factor", 1.0, 1000.0}}},
    {GS_FAULT_FAIL, "fail", 1, {{"rate", 0.0, 1.0}}},
    {GS_FAULT_KILL, "kill", 1, {{"after", 0.0, 1e12}}},
    {GS_FAULT_DELAY, "delay", 1, {{"seconds", 0.0, 3600.0}}},
    {GS_FAULT_HANG, "hang", 1, {{"after", 0.0, 1e12}}},
    {GS_FAULT_LATE, "late", 1, {{"us", 0.0, 1e6}}},
    {GS_FAULT_SLOWPAIR, "slowpair", 2, {{"peer", 0.0, GS_MAX_RANKS - 1}, {"factor", 1.0, 1000.0}}},
};

const char *gs_fault_kind_name(gs_fault_kind kind) {
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
    if (kinds[k].kind == kind) return kinds[k].name;
  return "unknown";
}

gs_status gs_fault_parse(const char *text, gs_fault_list *list) {
  char buf[256];
  if (strlen(text) >= sizeof buf) return gs_error(GS_ERR_USAGE, "option --inject: value too long");
  snprintf(buf, sizeof buf, "%s", text);
  char *colon = strchr(buf, ':');
  if (colon == NULL)
    return gs_error(GS_ERR_USAGE,
                    "option --inject '%s': expected KIND:rank=R,NAME=VALUE (e.g. "
                    "slow:rank=1,factor=2)",
                    text);
  *colon = '\0';
  size_t k = 0;
  while (k < sizeof kinds / sizeof kinds[0] && strcmp(kinds[k].name, buf) != 0) k++;
  if (k == sizeof kinds / sizeof kinds[0])
    return gs_error(GS_ERR_USAGE, "option --inject: unknown fault kind '%s' (known: slow, fail, kill, delay, "
                    "hang, late, slowpair)", buf);
  if (list->n == GS_FAULT_MAX)
    return gs_error(GS_ERR_USAGE, "option --inject: more than %d faults", GS_FAULT_MAX);
  gs_fault f = {.kind = kinds[k].kind, .rank = -1};
  int seen[GS_FAULT_MAX_PARAMS] = {0};
  char *save = NULL;
  for (char *item = strtok_r(colon + 1, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(item, '=');
    if (eq == NULL)
      return gs_error(GS_ERR_USAGE, "option --inject %s: '%s' is not NAME=VALUE", kinds[k].name,
                      item);
    *eq = '\0';
    char label[96];
    snprintf(label, sizeof label, "--inject %s %s", kinds[k].name, item);
    if (strcmp(item, "world") == 0) {
      uint64_t world = 0;
      if (f.world > 0) return gs_error(GS_ERR_USAGE, "option %s: given twice", label);
      GS_TRY(gs_parse_count(eq + 1, label, 1, GS_MAX_RANKS, &world));
      f.world = (int)world;
      continue;
    }
    if (strcmp(item, "rank") == 0) {
      uint64_t rank = 0;
      if (f.rank >= 0) return gs_error(GS_ERR_USAGE, "option %s: given twice", label);
      GS_TRY(gs_parse_count(eq + 1, label, 0, GS_MAX_RANKS - 1, &rank));
      f.rank = (int)rank;
      continue;
    }
    size_t p = 0;
    while (p < kinds[k].n_params && strcmp(kinds[k].params[p].name, item) != 0) p++;
    if (p == kinds[k].n_params)
      return gs_error(GS_ERR_USAGE, "option --inject %s: unknown parameter '%s'", kinds[k].name,
                      item);
    if (seen[p]) return gs_error(GS_ERR_USAGE, "option %s: given twice", label);
    seen[p] = 1;
    GS_TRY(gs_parse_double(eq + 1, label, kinds[k].params[p].min, kinds[k].params[p].max,
                           &f.params[p]));
  }
  if ((f.kind == GS_FAULT_KILL || f.kind == GS_FAULT_HANG) && f.params[0] != (double)(uint64_t)f.params[0])
    return gs_error(GS_ERR_USAGE, "option --inject %s after=%g: a whole number of steps",
                    kinds[k].name, f.params[0]);
  if (f.rank < 0)
    return gs_error(GS_ERR_USAGE, "option --inject %s: missing rank=R", kinds[k].name);
  if (f.kind == GS_FAULT_SLOWPAIR && seen[0] &&
      (f.params[0] != (double)(uint64_t)f.params[0] || f.params[0] == (double)f.rank))
    return gs_error(GS_ERR_USAGE, "option --inject slowpair peer=%g: another rank than rank=%d",
                    f.params[0], f.rank);
  if (f.world > 0 && f.rank >= f.world)
    return gs_error(GS_ERR_USAGE, "option --inject %s: rank %d does not exist in world=%d",
                    kinds[k].name, f.rank, f.world);
  for (size_t p = 0; p < kinds[k].n_params; p++)
    if (!seen[p])
      return gs_error(GS_ERR_USAGE, "option --inject %s: missing %s=VALUE", kinds[k].name,
                      kinds[k].params[p].name);
  list->items[list->n++] = f;
  return GS_OK;
}

gs_fault_list gs_fault_at(const gs_fault_list *list, int world_size) {
  gs_fault_list at = {0};
  for (size_t i = 0; list != NULL && i < list->n; i++)
    if ((list->items[i].world == 0 || list->items[i].world == world_size) &&
        list->items[i].rank < world_size &&
        (list->items[i].kind != GS_FAULT_SLOWPAIR || list->items[i].params[0] < world_size))
      at.items[at.n++] = list->items[i];
  return at;
}

gs_status gs_fault_check_ranks(const gs_fault_list *list, int world_size) {
  for (size_t i = 0; i < list->n; i++) {
    const gs_fault *f = &list->items[i];
    const int peer = f->kind == GS_FAULT_SLOWPAIR ? (int)f->params[0] : -1;
    const int rank = f->rank >= world_size ? f->rank : peer;
    if (rank >= world_size)
      return gs_error(GS_ERR_USAGE, "option --inject %s: rank %d does not exist (%d rank%s)",
                      gs_fault_kind_name(f->kind), rank, world_size, world_size == 1 ? "" : "s");
  }
  return GS_OK;
}

const gs_fault *gs_fault_find(const gs_fault_list *list, gs_fault_kind kind, int rank) {
  for (size_t i = 0; list != NULL && i < list->n; i++)
    if (list->items[i].kind == kind && list->items[i].rank == rank) return &list->items[i];
  return NULL;
}

gs_status gs_fault_check_launch(const gs_fault_list *list, int mpi_mode) {
  for (size_t i = 0; !mpi_mode && i < list->n; i++)
    if (list->items[i].kind == GS_FAULT_HANG)
      return gs_error(GS_ERR_USAGE,
                      "option --inject hang: needs one process per rank (mpirun/srun); the rank "
                      "threads of one process have no timeout to recover from a hung thread");
  return GS_OK;
}

/* See fault.h. */
double gs_fault_pair_factor(const gs_fault_list *list, int a, int b) {
  double factor = 1.0;
  for (size_t i = 0; list != NULL && a != b && i < list->n; i++) {
    const gs_fault *f = &list->items[i];
    const int peer = (int)f->params[0];
    if (f->kind == GS_FAULT_SLOWPAIR &&
        ((f->rank == a && peer == b) || (f->rank == b && peer == a)))
      factor *= f->params[1];
  }
  return factor;
}

double gs_fault_slow_factor(const gs_fault_list *list, int rank) {
  double factor = 1.0;
  for (size_t i = 0; list != NULL && i < list->n; i++)
    if (list->items[i].kind == GS_FAULT_SLOW && list->items[i].rank == rank)
      factor *= list->items[i].params[0];
  return factor;
}

cJSON *gs_fault_list_to_json(const gs_fault_list *list, int world_size) {
  gs_json_build build = {0}, *b = &build;
  cJSON *array = cJSON_CreateArray();
  for (size_t i = 0; array != NULL && i < list->n; i++) {
    const gs_fault *f = &list->items[i];
    if (f->rank >= world_size) continue;
    size_t k = 0;
    while (kinds[k].kind != f->kind) k++;
    cJSON *o = cJSON_CreateObject();
    gs_json_append(b, array, o);
    if (b->failed) break;  // o was freed
    gs_json_put_string(b, o, "kind", kinds[k].name);
    gs_json_put_number(b, o, "rank", f->rank);
    if (f->world > 0) gs_json_put_number(b, o, "world", f->world);
    for (size_t p = 0; p < kinds[k].n_params; p++)
      gs_json_put_number(b, o, kinds[k].params[p].name, f->params[p]);
  }
  return array ? gs_json_build_finish(b, array) : NULL;
}

/* See fault.h. */
double gs_fault_late_seconds(const gs_fault_list *list, int rank) {
  double us = 0.0;
  for (size_t i = 0; list && i < list->n; i++)
    if (list->items[i].kind == GS_FAULT_LATE && list->items[i].rank == rank)
      us += list->items[i].params[0];
  return us * 1e-6;
}

/* See fault.h. */
void gs_fault_late_wait(double seconds) {
  if (!(seconds > 0.0)) return;
  const double until = gs_time_seconds() + seconds;
  if (seconds > 200e-6) gs_sleep_seconds(seconds - 200e-6);
  while (gs_time_seconds() < until) {
  }
}
