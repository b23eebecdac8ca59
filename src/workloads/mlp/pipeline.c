/* Pipeline parallelism of mlp (pipeline.h): options, the stage split and
 * the micro-batch split. */
#include "workloads/mlp/pipeline.h"

#include <stdio.h>
#include <string.h>

#define GS_MLP_PP_MAX_STAGES GS_MLP_MAX_LAYERS

void gs_mlp_pp_options_bind(gs_mlp_pp_options *p, gs_option *table) {
  memset(p, 0, sizeof *p);
  p->stages = 1;
  p->micro = 4;
  p->schedule = GS_PP_1F1B;
  const gs_option entries[GS_MLP_PP_OPTIONS] = {
      {.name = "pp", .kind = GS_OPT_COUNT, .target = &p->stages, .min = 1,
       .max = GS_MLP_PP_MAX_STAGES, .metavar = "P",
       .help = "pipeline stages: the layers split over P ranks of each replica (ranks = "
               "replicas x P)"},
      {.name = "micro-batches", .kind = GS_OPT_COUNT, .target = &p->micro, .min = 1,
       .max = GS_PP_MAX_MICRO, .metavar = "M",
       .help = "micro-batches per step of each replica (with --pp)", .given = &p->given_micro},
      {.name = "schedule", .kind = GS_OPT_CHOICE, .target = &p->schedule,
       .choices = gs_pp_schedule_names, .metavar = "S",
       .help = "pipeline schedule: gpipe (all forwards, then all backwards) or 1f1b (with --pp)",
       .given = &p->given_schedule},
      {.name = "stages", .kind = GS_OPT_COUNT_LIST, .target = &p->bounds, .min = 1,
       .max = GS_MLP_MAX_LAYERS, .metavar = "L1,L2,...",
       .help = "first layer of stages 1..P-1 (with --pp; default: balanced by layer cost)",
       .given = &p->given_bounds},
  };
  memcpy(table, entries, sizeof entries);
}

gs_status gs_mlp_pp_options_check(const gs_mlp_pp_options *p, const gs_mlp_model *m) {
  if (p->stages == 1) {
    if (p->given_micro) return gs_error(GS_ERR_USAGE, "--micro-batches needs --pp above 1");
    if (p->given_schedule) return gs_error(GS_ERR_USAGE, "--schedule needs --pp above 1");
    if (p->given_bounds) return gs_error(GS_ERR_USAGE, "--stages needs --pp above 1");
    return GS_OK;
  }
  if (p->stages > (uint64_t)m->n_layers)
    return gs_error(GS_ERR_USAGE, "--pp %llu: the model has only %d layers (one stage each at most)",
                    (unsigned long long)p->stages, m->n_layers);
  if (!p->given_bounds) return GS_OK;
  if (p->bounds.n != p->stages - 1)
    return gs_error(GS_ERR_USAGE, "--stages takes %llu layers (the first of stages 1..%llu), got %zu",
                    (unsigned long long)p->stages - 1, (unsigned long long)p->stages - 1,
                    p->bounds.n);
  uint64_t previous = 0;
  for (size_t i = 0; i < p->bounds.n; i++) {
    const uint64_t b = p->bounds.v[i];
    if (b <= previous || b >= (uint64_t)m->n_layers)
      return gs_error(GS_ERR_USAGE,
                      "--stages: layer %llu must lie after %llu and before layer %d (the last); "
                      "boundaries increase strictly",
                      (unsigned long long)b, (unsigned long long)previous, m->n_layers);
    previous = b;
  }
  return GS_OK;
}

void gs_mlp_pp_options_json(gs_json_build *b, cJSON *j, const gs_mlp_pp_options *p,
                            const gs_mlp_model *m) {
  if (p->stages <= 1) return;
  cJSON *pp = gs_json_put_object(b, j, "pipeline");
  gs_json_put_number(b, pp, "stages", (double)p->stages);
  gs_json_put_number(b, pp, "micro_batches", (double)p->micro);
  gs_json_put_string(b, pp, "schedule", gs_pp_schedule_names[p->schedule]);
  int first[GS_MLP_PP_MAX_STAGES + 1];
  gs_mlp_pp_split(m, (int)p->stages, &p->bounds, first);
  cJSON *firsts = gs_json_put_array(b, pp, "stage_first_layers");
  for (uint64_t s = 0; !b->failed && s < p->stages; s++) gs_json_append_number(b, firsts, first[s]);
  gs_json_put_bool(b, pp, "balanced_by_cost", p->bounds.n == 0);
}

uint64_t gs_mlp_pp_layer_cost(const gs_mlp_model *m, int layer) {
  const uint64_t gemms = layer == 0 ? 2 : 3;
  return gemms * m->widths[layer] * m->widths[layer + 1];
}

void gs_mlp_pp_split(const gs_mlp_model *m, int stages, const gs_u64_list *bounds, int *first) {
  const int L = m->n_layers;
  first[0] = 0;
  first[stages] = L;
  if (bounds && bounds->n > 0) {
    for (int s = 1; s < stages; s++) first[s] = (int)bounds->v[s - 1];
    return;
  }
  // best[k][l]: the smallest most expensive stage of layers 0..l-1 in k
  // stages; cut[k][l]: where its last stage starts (the earliest such).
  uint64_t prefix[GS_MLP_MAX_LAYERS + 1] = {0};
  for (int l = 0; l < L; l++) prefix[l + 1] = prefix[l] + gs_mlp_pp_layer_cost(m, l);
  uint64_t best[GS_MLP_PP_MAX_STAGES + 1][GS_MLP_MAX_LAYERS + 1];
  int cut[GS_MLP_PP_MAX_STAGES + 1][GS_MLP_MAX_LAYERS + 1];
  for (int l = 1; l <= L; l++) best[1][l] = prefix[l], cut[1][l] = 0;
  for (int k = 2; k <= stages; k++)
    for (int l = k; l <= L; l++) {
      best[k][l] = UINT64_MAX;
      for (int c = k - 1; c < l; c++) {
        const uint64_t last = prefix[l] - prefix[c];
        const uint64_t worst = best[k - 1][c] > last ? best[k - 1][c] : last;
        if (worst < best[k][l]) best[k][l] = worst, cut[k][l] = c;
      }
    }
  for (int k = stages, l = L; k > 1; k--) {
    first[k - 1] = cut[k][l];
    l = cut[k][l];
  }
}

void gs_mlp_pp_micro_rows(uint64_t rows, int micro, int j, uint64_t *first, uint64_t *count) {
  const uint64_t base = rows / (uint64_t)micro, extra = rows % (uint64_t)micro;
  const uint64_t uj = (uint64_t)j;
  *count = base + (uj < extra ? 1 : 0);
  *first = uj * base + (uj < extra ? uj : extra);
}

void gs_mlp_pp_rank_role(const void *options, int rank, int world, char *buf, size_t size) {
  const gs_mlp_pp_options *p = options;
  const int stages = (int)p->stages;
  if (stages <= 1 || size == 0) {
    if (size) buf[0] = '\0';
    return;
  }
  snprintf(buf, size, "pipeline stage %d of %d, replica %d of %d", gs_mlp_pp_stage_of(rank, stages),
           stages, gs_mlp_pp_replica_of(rank, stages), world / stages);
}

int gs_mlp_pp_collective_group(const void *options, int rank, int world) {
  const gs_mlp_pp_options *p = options;
  const int stages = (int)p->stages;
  if (stages <= 1 || world / stages < 2) return -1;
  return gs_mlp_pp_stage_of(rank, stages);
}
