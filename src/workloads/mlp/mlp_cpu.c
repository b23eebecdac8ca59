/* CPU reference of the mlp training step: the model's layout, initial
 * weights, the synthetic dataset on the host, forward / MSE / backward of
 * one batch (double accumulation) and Adam. The CPU backend runs it as its
 * step; the GPU verification and the tests compare against it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "platform/trace.h"
#include "workloads/mlp/mlp.h"
#include "workloads/mlp/mlp_layers.h"
#include "workloads/mlp/mlp_hash.h"

uint64_t gs_mlp_weight_offset(const gs_mlp_model *m, int layer) {
  uint64_t at = 0;
  for (int l = 0; l < layer; l++) at += ((uint64_t)m->widths[l] + 1) * m->widths[l + 1];
  return at;
}

uint64_t gs_mlp_bias_offset(const gs_mlp_model *m, int layer) {
  return gs_mlp_weight_offset(m, layer) + (uint64_t)m->widths[layer] * m->widths[layer + 1];
}

uint64_t gs_mlp_param_count(const gs_mlp_model *m) { return gs_mlp_weight_offset(m, m->n_layers); }

uint64_t gs_mlp_macs_per_sample(const gs_mlp_model *m) {
  uint64_t macs = 0;
  for (int l = 0; l < m->n_layers; l++) macs += (uint64_t)m->widths[l] * m->widths[l + 1];
  return macs;
}

uint64_t gs_mlp_step_flops(const gs_mlp_model *m, uint64_t rows) {
  const int L = m->n_layers;
  uint64_t gemm_macs = 0, outputs = 0, hidden = 0;
  for (int l = 0; l < L; l++) {
    const uint64_t macs = (uint64_t)m->widths[l] * m->widths[l + 1];
    gemm_macs += (l > 0 ? 3 : 2) * macs;  // no input gradient into the data
    outputs += m->widths[l + 1];
    if (l < L - 1) hidden += m->widths[l + 1];
  }
  const uint64_t per_hidden = m->dropout > 0.0f ? 2 : 1;
  const uint64_t per_sample =
      2 * gemm_macs + 2 * outputs + per_hidden * hidden + 6 * (uint64_t)m->widths[L];
  return rows * per_sample + 14 * gs_mlp_param_count(m);
}

uint64_t gs_mlp_step_bytes(const gs_mlp_model *m, uint64_t rows, int bf16) {
  const uint64_t elem = bf16 ? 2 : 4;
  uint64_t values = 0;
  for (int l = 0; l <= m->n_layers; l++) values += m->widths[l];
  const uint64_t per_param = 4 + 28 + 2 * elem + (bf16 ? 2 : 0);
  return rows * 3 * elem * values + per_param * gs_mlp_param_count(m);
}

void gs_mlp_init_params(const gs_mlp_model *m, uint64_t seed, float *params) {
  for (int l = 0; l < m->n_layers; l++) {
    const uint64_t in = m->widths[l], out = m->widths[l + 1];
    const float bound = sqrtf(3.0f / (float)in);
    float *w = params + gs_mlp_weight_offset(m, l);
    for (uint64_t i = 0; i < in * out; i++)
      w[i] = (2.0f * gs_mlp_uniform(gs_mlp_hash(seed, GS_MLP_STREAM_WEIGHT, (uint64_t)l, i)) - 1.0f) *
             bound;
    memset(params + gs_mlp_bias_offset(m, l), 0, (size_t)out * sizeof(float));
  }
}

void gs_mlp_generate(uint64_t seed, uint64_t n, uint32_t features, uint32_t targets, float *x,
                     float *y) {
  for (uint64_t s = 0; s < n; s++) {
    for (uint32_t f = 0; f < features; f++)
      x[s * features + f] = gs_mlp_feature(seed, s, f, features);
    for (uint32_t t = 0; t < targets; t++)
      y[s * targets + t] = gs_mlp_target(seed, s, t, features);
  }
}

/* Activations of the batch: act[l] is [rows][widths[l]]; act[0] the inputs,
 * act[L] the outputs (no activation). */
typedef struct {
  float *act[GS_MLP_MAX_LAYERS + 1];
  double *grad_acc;   /* param_count, gradients accumulated in double */
  float *dz, *dz_prev; /* [rows][widest] */
} cpu_scratch;

static void scratch_free(cpu_scratch *s, int layers) {
  for (int l = 0; l <= layers; l++) free(s->act[l]);
  free(s->grad_acc);
  free(s->dz);
  free(s->dz_prev);
}

static gs_status scratch_alloc(cpu_scratch *s, const gs_mlp_model *m, uint64_t rows) {
  memset(s, 0, sizeof *s);
  uint64_t widest = 0;
  int ok = 1;
  for (int l = 0; l <= m->n_layers; l++) {
    s->act[l] = malloc((size_t)(rows * m->widths[l]) * sizeof(float));
    ok = ok && s->act[l] != NULL;
    if (m->widths[l] > widest) widest = m->widths[l];
  }
  s->grad_acc = calloc((size_t)gs_mlp_param_count(m), sizeof(double));
  s->dz = malloc((size_t)(rows * widest) * sizeof(float));
  s->dz_prev = malloc((size_t)(rows * widest) * sizeof(float));
  if (!ok || !s->grad_acc || !s->dz || !s->dz_prev) {
    scratch_free(s, m->n_layers);
    return gs_error(GS_ERR_NOMEM, "mlp: cannot allocate the CPU reference's scratch for %llu rows",
                    (unsigned long long)rows);
  }
  return GS_OK;
}

void gs_mlp_cpu_inputs(const gs_mlp_model *m, const gs_mlp_data *d, const gs_mlp_batch *b,
                       uint64_t rows, float *in) {
  for (uint64_t r = 0; r < rows; r++) {
    const uint64_t sample = (b->step * b->global_batch + b->offset + r) % d->n;
    memcpy(in + r * m->widths[0], d->x + sample * d->features,
           (size_t)m->widths[0] * sizeof(float));
  }
}

void gs_mlp_cpu_layer_forward(const gs_mlp_model *m, int l, const float *params,
                              const gs_mlp_batch *b, uint64_t rows, const float *in, float *out) {
  const int L = m->n_layers;
  const float scale = 1.0f / (1.0f - m->dropout);
  const uint32_t n_in = m->widths[l], n_out = m->widths[l + 1];
  const float *w = params + gs_mlp_weight_offset(m, l), *bias = params + gs_mlp_bias_offset(m, l);
  for (uint64_t r = 0; r < rows; r++) {
    const float *a = in + r * n_in;
    float *z = out + r * n_out;
    const uint64_t pos = b->step * b->global_batch + b->offset + r;
    for (uint32_t o = 0; o < n_out; o++) {
      double acc = 0.0;
      for (uint32_t i = 0; i < n_in; i++) acc += (double)w[(uint64_t)o * n_in + i] * a[i];
      float v = (float)acc + bias[o];
      if (l < L - 1) {
        v = v > 0.0f ? v : 0.0f;
        if (m->dropout > 0.0f)
          v = gs_mlp_keep(b->seed, b->step, (uint32_t)l, pos, o, m->dropout) ? v * scale : 0.0f;
      }
      z[o] = v;
    }
  }
}

double gs_mlp_cpu_loss_grad(const gs_mlp_model *m, const gs_mlp_data *d, const gs_mlp_batch *b,
                            uint64_t rows, const float *out, float *dz) {
  // MSE over the global batch: d loss / d y = 2 (y - t) / (G * T).
  const uint32_t T = m->widths[m->n_layers];
  const double norm = 1.0 / ((double)b->global_batch * T);
  double sum = 0.0;
  for (uint64_t r = 0; r < rows; r++) {
    const uint64_t sample = (b->step * b->global_batch + b->offset + r) % d->n;
    for (uint32_t t = 0; t < T; t++) {
      const double diff = (double)out[r * T + t] - d->y[sample * d->targets + t];
      sum += diff * diff;
      dz[r * T + t] = (float)(2.0 * diff * norm);
    }
  }
  return sum * norm;
}

void gs_mlp_cpu_layer_weight_grads(const gs_mlp_model *m, int l, uint64_t rows, const float *dz,
                                   const float *in, double *gw, double *gb) {
  const uint32_t n_in = m->widths[l], n_out = m->widths[l + 1];
  for (uint64_t r = 0; r < rows; r++) {
    const float *g = dz + r * n_out, *a = in + r * n_in;
    for (uint32_t o = 0; o < n_out; o++) {
      gb[o] += g[o];
      for (uint32_t i = 0; i < n_in; i++) gw[(uint64_t)o * n_in + i] += (double)g[o] * a[i];
    }
  }
}

void gs_mlp_cpu_layer_input_grad(const gs_mlp_model *m, int l, const float *params, uint64_t rows,
                                 const float *dz, const float *in, float *prev) {
  // Through the previous layer's dropout and ReLU: its output is > 0
  // exactly where ReLU passed and dropout kept, and was scaled there.
  const uint32_t n_in = m->widths[l], n_out = m->widths[l + 1];
  const float *w = params + gs_mlp_weight_offset(m, l);
  const float scale = 1.0f / (1.0f - m->dropout);
  for (uint64_t r = 0; r < rows; r++) {
    const float *g = dz + r * n_out, *a = in + r * n_in;
    float *p = prev + r * n_in;
    for (uint32_t i = 0; i < n_in; i++) {
      if (!(a[i] > 0.0f)) {
        p[i] = 0.0f;
        continue;
      }
      double acc = 0.0;
      for (uint32_t o = 0; o < n_out; o++) acc += (double)g[o] * w[(uint64_t)o * n_in + i];
      p[i] = (float)acc * (m->dropout > 0.0f ? scale : 1.0f);
    }
  }
}

gs_status gs_mlp_cpu_gradients(const gs_mlp_model *m, const float *params, const gs_mlp_data *d,
                               const gs_mlp_batch *b, float *grads, double *loss) {
  const int L = m->n_layers;
  const uint64_t rows = b->rows;
  cpu_scratch s;
  GS_TRY(scratch_alloc(&s, m, rows));
  gs_trace_begin(GS_TRACE_COMPUTE, "forward", -1, NULL);
  gs_mlp_cpu_inputs(m, d, b, rows, s.act[0]);
  for (int l = 0; l < L; l++) gs_mlp_cpu_layer_forward(m, l, params, b, rows, s.act[l], s.act[l + 1]);
  *loss = gs_mlp_cpu_loss_grad(m, d, b, rows, s.act[L], s.dz);
  gs_trace_end();
  gs_trace_begin(GS_TRACE_COMPUTE, "backward", -1, NULL);
  for (int l = L - 1; l >= 0; l--) {
    gs_mlp_cpu_layer_weight_grads(m, l, rows, s.dz, s.act[l],
                                  s.grad_acc + gs_mlp_weight_offset(m, l),
                                  s.grad_acc + gs_mlp_bias_offset(m, l));
    if (l == 0) break;
    gs_mlp_cpu_layer_input_grad(m, l, params, rows, s.dz, s.act[l], s.dz_prev);
    float *t = s.dz;
    s.dz = s.dz_prev;
    s.dz_prev = t;
  }
  gs_trace_end();
  const uint64_t count = gs_mlp_param_count(m);
  for (uint64_t i = 0; i < count; i++) grads[i] = (float)s.grad_acc[i];
  scratch_free(&s, L);
  return GS_OK;
}

void gs_mlp_cpu_adam(const gs_mlp_adam *a, uint64_t t, uint64_t count, const float *grads,
                     float *params, float *mom1, float *mom2) {
  const float c1 = 1.0f - powf(a->beta1, (float)t), c2 = 1.0f - powf(a->beta2, (float)t);
  for (uint64_t i = 0; i < count; i++) {
    const float g = grads[i];
    mom1[i] = a->beta1 * mom1[i] + (1.0f - a->beta1) * g;
    mom2[i] = a->beta2 * mom2[i] + (1.0f - a->beta2) * g * g;
    const float mhat = mom1[i] / c1, vhat = mom2[i] / c2;
    params[i] -= a->lr * mhat / (sqrtf(vhat) + a->eps);
  }
}
