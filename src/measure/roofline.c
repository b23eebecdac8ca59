/* The roofline of a measurement from the shipped GPU models (roofline.h). */
#include "measure/roofline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/roofline.h"
#include "measure/check.h"

void gs_measure_peaks_open(gs_measure_peaks *p) {
  memset(p, 0, sizeof *p);
  gs_error_kept kept;
  gs_error_keep(&kept);
  int found = 0;
  char why[GS_TEXT_LONG] = "";
  if (gs_check_models_shipped(&p->models, &found, why, sizeof why) != GS_OK)
    snprintf(p->why, sizeof p->why, "%s", gs_last_error());
  else if (!found)
    snprintf(p->why, sizeof p->why, "%s", why);
  gs_error_restore(&kept);
}

void gs_measure_peaks_close(gs_measure_peaks *p) { gs_gpu_models_free(&p->models); }

/* The name of CUDA device `device` in env, or NULL. */
static const char *device_name(const gs_environment *env, int device) {
  for (size_t g = 0; env && g < env->gpu_count; g++)
    if (env->gpus[g].index == device) return env->gpus[g].name;
  return NULL;
}

/* The median step of m's runs and its interval into *out. */
static gs_status step_of(const gs_measurement *m, gs_roofline_step *out) {
  *out = (gs_roofline_step){.median = NAN, .low = NAN, .high = NAN};
  if (m->aggregate.step.n == 0 || m->n_runs == 0) return GS_OK;
  gs_stats_group *runs = malloc(m->n_runs * sizeof *runs);
  if (!runs) return gs_error(GS_ERR_NOMEM, "cannot allocate %zu runs' steps", m->n_runs);
  for (size_t r = 0; r < m->n_runs; r++) {
    const gs_run_record *run = &m->runs[r];
    // A failed run has no steps and no array.
    runs[r] = (gs_stats_group){run->step_seconds, run->step_seconds ? run->n_steps : 0};
  }
  gs_status st = gs_roofline_step_of(runs, m->n_runs, out);
  free(runs);
  return st;
}

gs_status gs_measure_roofline(const gs_measure_peaks *p, const gs_environment *env,
                              gs_measurement *m) {
  memset(&m->roofline, 0, sizeof m->roofline);
  if (m->cost.bound == GS_BOUND_NONE) return GS_OK;
  gs_roofline_step step;
  GS_TRY(step_of(m, &step));
  char why[GS_TEXT_LONG] = "";
  const char *model = "";
  double peak = 0.0;
  if (strcmp(m->backend, "cuda") != 0) {
    snprintf(why, sizeof why, "the %s backend has no GPU model", m->backend[0] ? m->backend : "cpu");
  } else if (p->why[0]) {
    snprintf(why, sizeof why, "%s", p->why);
  } else {
    gs_figure figure = GS_FIG_COUNT;
    double scale = 0.0;
    (void)gs_bound_figure(m->cost.bound, &figure, &scale);
    for (int k = 0; k < m->world_size && k < GS_MAX_RANKS && !why[0]; k++) {
      const char *name = device_name(env, m->devices[k]);
      const gs_gpu_model *g = gs_gpu_models_find(&p->models, name);
      const double one = gs_roofline_model_peak(g, m->cost.bound);
      if (!name)
        snprintf(why, sizeof why, "GPU %d is not in this host's inventory", m->devices[k]);
      else if (!g)
        snprintf(why, sizeof why, "no model named \"%s\" in %s", name, p->models.path);
      else if (!isfinite(one))
        snprintf(why, sizeof why, "%s states no %s in %s", g->model,
                 figure < GS_FIG_COUNT ? gs_figure_key(figure) : "figure", p->models.path);
      else {
        peak += one;
        // Devices of two models: the record names the first.
        if (!model[0]) model = g->model;
      }
    }
  }
  gs_roofline_compute(&m->cost, &step, why[0] ? NAN : peak, model, why, &m->roofline);
  return GS_OK;
}
