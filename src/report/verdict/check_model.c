/* `gpuscale check`: one GPU against its model's expected figures
 * (core/gpu_model.h): memory size, the PCIe slot, the NVLink ports, the
 * power limit and the highest clocks, each pass, warn or fail with an
 * action. The fractions and why each is a warning or a failure are in
 * docs/check.md, "Expected figures". */
#include <stdio.h>
#include <string.h>

#include "report/verdict/check_private.h"

int gs_check_model_of(const gs_check_models *models, const gs_gpu_health *h, gs_gpu_model *out) {
  memset(out, 0, sizeof *out);
  if (!models || !h->name[0]) return 0;
  const gs_gpu_model *site = gs_gpu_models_find(models->site, h->name);
  const gs_gpu_model *shipped = gs_gpu_models_find(models->shipped, h->name);
  if (!site && !shipped) return 0;
  *out = site ? *site : *shipped;
  for (int k = 0; site && shipped && k < GS_FIG_COUNT; k++)
    if (!out->fig[k].has) out->fig[k] = shipped->fig[k];
  return 1;
}

/* Where the figures of `h` come from, for the "model" finding. */
static void files_of(const gs_check_models *models, const gs_gpu_health *h, char *out,
                     size_t size) {
  const int site = gs_gpu_models_find(models->site, h->name) != NULL;
  const int shipped = gs_gpu_models_find(models->shipped, h->name) != NULL;
  snprintf(out, size, "%s%s%s", site ? models->site->path : "", site && shipped ? ", then " : "",
           shipped ? models->shipped->path : "");
}

static void judge_memory(gs_health_builder *b, const gs_gpu_health *h, const gs_gpu_model *m) {
  const gs_model_figure *f = &m->fig[GS_FIG_MEMORY_GB];
  if (!f->has || !h->has_memory_total) return;
  char detail[400];
  const double gb = (double)h->memory_total_bytes / 1e9;
  snprintf(detail, sizeof detail, "%.1f GB of the %g GB of an %s", gb, f->value, m->model);
  if (gb < GS_CHECK_MEMORY_SIZE_FRACTION * f->value) {
    gs_health_action(gs_health_add(b, "memory_size", h->index, GS_CHECK_FAIL, detail),
                     "investigate: GPU %d reports %.1f GB of memory, %g GB expected of an %s",
                     h->index, gb, f->value, m->model);
    return;
  }
  gs_health_add(b, "memory_size", h->index, GS_CHECK_PASS, detail);
}

/* The slot's most (NVML's maximum generation and width, of the GPU and the
 * system together) against the model's: a GPU in a slot of an older
 * generation or fewer lanes moves data to the host slower. The width the
 * link trained at is the "pcie" check's. */
static void judge_slot(gs_health_builder *b, const gs_gpu_health *h, const gs_gpu_model *m) {
  const gs_model_figure *gen = &m->fig[GS_FIG_PCIE_GENERATION];
  const gs_model_figure *width = &m->fig[GS_FIG_PCIE_WIDTH];
  if ((!gen->has && !width->has) || !h->has_pcie) return;
  char detail[400];
  snprintf(detail, sizeof detail, "slot allows gen %u x%u; an %s takes gen %g x%g", h->pcie_gen_max,
           h->pcie_width_max, m->model, gen->has ? gen->value : 0, width->has ? width->value : 0);
  if (gen->has && h->pcie_gen_max < gen->value) {
    gs_health_action(gs_health_add(b, "pcie_slot", h->index, GS_CHECK_WARN, detail),
                     "investigate: GPU %d's slot allows PCIe gen %u of the gen %g an %s takes "
                     "(BIOS setting, riser or slot)", h->index, h->pcie_gen_max, gen->value,
                     m->model);
  } else if (width->has && h->pcie_width_max < width->value) {
    gs_health_action(gs_health_add(b, "pcie_slot", h->index, GS_CHECK_WARN, detail),
                     "investigate: GPU %d's slot allows PCIe x%u of the x%g an %s takes (riser "
                     "or slot wiring)", h->index, h->pcie_width_max, width->value, m->model);
  } else {
    gs_health_add(b, "pcie_slot", h->index, GS_CHECK_PASS, detail);
  }
}

/* The ports NVML lists against the model's. A port listed but down is the
 * "nvlink" check's; here a port missing, or an SXM board with no port up
 * (its GPUs talk over NVLink by design; a PCIe card without a bridge has
 * none up, which is not a fault). */
static void judge_ports(gs_health_builder *b, const gs_gpu_health *h, const gs_gpu_model *m) {
  const gs_model_figure *f = &m->fig[GS_FIG_NVLINK_LINKS];
  size_t present = 0, up = 0;
  for (size_t l = 0; l < h->port_count; l++) {
    present += h->port_present[l] != 0;
    up += h->port_present[l] && h->link_up[l];
  }
  if (!f->has) return;
  char detail[400];
  snprintf(detail, sizeof detail, "%zu NVLink ports listed, %zu up; an %s has %g", present, up,
           m->model, f->value);
  if ((double)present < f->value) {
    gs_health_action(gs_health_add(b, "nvlink_ports", h->index, GS_CHECK_FAIL, detail),
                     "drain: GPU %d lists %zu of the %g NVLink ports of an %s", h->index, present,
                     f->value, m->model);
  } else if (up == 0 && m->sxm) {
    gs_health_action(gs_health_add(b, "nvlink_ports", h->index, GS_CHECK_FAIL, detail),
                     "drain: no NVLink of GPU %d up (an %s has %g)", h->index, m->model, f->value);
  } else if (up == 0) {
    gs_health_add(b, "nvlink_ports", h->index, GS_CHECK_NA, "no NVLink up: no bridge fitted");
  } else {
    gs_health_add(b, "nvlink_ports", h->index, GS_CHECK_PASS, detail);
  }
}

static void judge_power(gs_health_builder *b, const gs_gpu_health *h, const gs_gpu_model *m) {
  const gs_model_figure *f = &m->fig[GS_FIG_POWER_LIMIT_W];
  if (!f->has || !h->has_power_limit) return;
  char detail[400];
  const double w = h->power_limit_mw / 1000.0;
  snprintf(detail, sizeof detail, "power limit %g W; an %s's is %g W", w, m->model, f->value);
  if (w < GS_CHECK_POWER_LIMIT_FRACTION * f->value) {
    gs_health_action(gs_health_add(b, "power_limit", h->index, GS_CHECK_WARN, detail),
                     "investigate: GPU %d power limit %g W, below the %g W of an %s (a cap slows "
                     "every job; a site's own limit goes in --expect FILE)", h->index, w,
                     f->value, m->model);
    return;
  }
  gs_health_add(b, "power_limit", h->index, GS_CHECK_PASS, detail);
}

static void judge_max_clocks(gs_health_builder *b, const gs_gpu_health *h,
                             const gs_gpu_model *m) {
  const gs_model_figure *sm = &m->fig[GS_FIG_MAX_SM_CLOCK_MHZ];
  const gs_model_figure *mem = &m->fig[GS_FIG_MAX_MEMORY_CLOCK_MHZ];
  if ((!sm->has && !mem->has) || !h->has_max_clocks) return;
  char detail[400];
  snprintf(detail, sizeof detail, "highest clocks SM %u MHz, memory %u MHz", h->max_sm_clock_mhz,
           h->max_memory_clock_mhz);
  const double f = GS_CHECK_MAX_CLOCK_FRACTION;
  if (sm->has && h->max_sm_clock_mhz < f * sm->value) {
    gs_health_action(gs_health_add(b, "max_clocks", h->index, GS_CHECK_WARN, detail),
                     "investigate: GPU %d's highest SM clock %u MHz, below the %g MHz of an %s "
                     "(firmware or a clock lock)", h->index, h->max_sm_clock_mhz, sm->value,
                     m->model);
  } else if (mem->has && h->max_memory_clock_mhz < f * mem->value) {
    gs_health_action(gs_health_add(b, "max_clocks", h->index, GS_CHECK_WARN, detail),
                     "investigate: GPU %d's highest memory clock %u MHz, below the %g MHz of an "
                     "%s (firmware or a clock lock)", h->index, h->max_memory_clock_mhz,
                     mem->value, m->model);
  } else {
    gs_health_add(b, "max_clocks", h->index, GS_CHECK_PASS, detail);
  }
}

void gs_health_judge_model(gs_health_builder *b, const gs_gpu_health *h,
                           const gs_check_models *models) {
  char detail[400];
  gs_gpu_model model;
  const gs_gpu_model *m = gs_check_model_of(models, h, &model) ? &model : NULL;
  if (!m) {
    if (!models || (!models->site && !models->shipped))
      snprintf(detail, sizeof detail, "no expected figures: %s",
               models && models->shipped_why[0] ? models->shipped_why : "none given");
    else
      snprintf(detail, sizeof detail, "no expected figures for \"%s\" in %s%s%s",
               h->name[0] ? h->name : "(no name)", models->site ? models->site->path : "",
               models->site && models->shipped ? " or " : "",
               models->shipped ? models->shipped->path : "");
    gs_health_add(b, "model", h->index, GS_CHECK_NA, detail);
    return;
  }
  char files[2 * GS_TEXT_LONG];
  files_of(models, h, files, sizeof files);
  snprintf(detail, sizeof detail, "%s, figures from %s", m->model, files);
  gs_health_add(b, "model", h->index, GS_CHECK_PASS, detail);
  judge_memory(b, h, m);
  judge_slot(b, h, m);
  judge_ports(b, h, m);
  judge_power(b, h, m);
  judge_max_clocks(b, h, m);
}
