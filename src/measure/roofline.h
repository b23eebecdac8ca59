/* The roofline of every measurement a measuring command makes: the GPU
 * models' peak figures (data/gpu-models.json, found as `gpuscale check`
 * finds them) looked up for the measurement's devices and put beside the
 * cost its workload declares (core/roofline.h). */
#ifndef GS_MEASURE_ROOFLINE_H
#define GS_MEASURE_ROOFLINE_H

#include "core/gpu_model.h"
#include "core/result.h"

typedef struct {
  gs_gpu_models models;         /* empty when none were found */
  char why[GS_TEXT_LONG];       /* why there are no models; "" when there are */
} gs_measure_peaks;

/* Loads the shipped GPU models into *p (gs_check_models_shipped). Never
 * fails: models that cannot be found or read leave p empty with `why`
 * saying so, and the error recorded before the call stays. Main thread. */
void gs_measure_peaks_open(gs_measure_peaks *p);

void gs_measure_peaks_close(gs_measure_peaks *p);

/* Fills m->roofline from m's cost, its median step over all runs with the
 * median's 95% interval (gs_roofline_step_of) and the summed peak of its
 * devices (env's GPUs by CUDA ordinal, their models by name in p); leaves
 * it without a bound when the cost declares none. On the cpu backend, or
 * where a device's model or figure is not known, the peak is not known and
 * `why` says which. GS_ERR_NOMEM when the steps cannot be gathered (the
 * record is left without a bound). Any thread, after the measurement. */
gs_status gs_measure_roofline(const gs_measure_peaks *p, const gs_environment *env,
                              gs_measurement *m);

#endif
