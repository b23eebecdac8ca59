/* mlp workload: its options and presets, the checks across them and the
 * sizes they imply, the options' JSON, the batch-size variants and the
 * cost of a step. The ranks' setup, step and verification are in mlp.c;
 * rules in docs/workloads/mlp.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/checked.h"
#include "core/json.h"
#include "workloads/mlp/mlp_options.h"

#define GS_MLP_MAX_BATCH (1ull << 22)
#define GS_MLP_MAX_SAMPLES (1ull << 26)
#define GS_MLP_MAX_BYTES (64ull << 30) /* per host buffer group, see check_sizes */

static const char *const preset_choices[] = {"medium", "large", NULL};
const char *const gs_mlp_precision_choices[] = {"fp32", "tf32", "bf16", NULL};

static const uint64_t preset_medium[] = {50, 256, 128, 64, 3};
static const uint64_t preset_large[] = {50, 1024, 1024, 512, 512, 256, 3};
static const double preset_dropout[] = {0.2, 0.3};


/* ---- options ------------------------------------------------------------------ */

void *gs_mlp_options_new(void) {
  gs_mlp_options *o = calloc(1, sizeof *o);
  if (o == NULL) return NULL;
  o->batch = 128;
  o->samples = 65536;
  o->lr = 1e-3;
  o->bucket_kb = 1024;
  o->verify_rows = 32;
  o->verify_corrupt = 1.0;
  const gs_option table[] = {
      {.name = "preset", .kind = GS_OPT_CHOICE, .target = &o->preset, .choices = preset_choices,
       .metavar = "NAME",
       .help = "medium: 50-256-128-64-3, dropout 0.2; large: 50-1024-1024-512-512-256-3, dropout 0.3"},
      {.name = "layers", .kind = GS_OPT_COUNT_LIST, .target = &o->layers, .min = 1,
       .max = GS_MLP_MAX_WIDTH, .metavar = "W0,W1,...",
       .help = "layer widths from inputs to outputs (overrides --preset), e.g. 50,256,3",
       .given = &o->given_layers},
      {.name = "dropout", .kind = GS_OPT_DOUBLE, .target = &o->dropout, .dmin = 0.0, .dmax = 0.95,
       .metavar = "P", .help = "dropout probability after each hidden layer (default: the preset's)",
       .given = &o->given_dropout},
      {.name = "batch", .kind = GS_OPT_COUNT, .target = &o->batch, .min = 1,
       .max = GS_MLP_MAX_BATCH, .metavar = "B",
       .help = "samples per step: global batch (strong scaling) or per rank (weak)",
       .given = &o->given_batch},
      {.name = "batch-sizes", .kind = GS_OPT_COUNT_LIST, .target = &o->batch_sizes, .min = 1,
       .max = GS_MLP_MAX_BATCH, .metavar = "B1,B2,...",
       .help = "measure each batch size in turn (instead of --batch); scale adds a single vs "
               "multi table", .given = &o->given_batch_sizes},
      {.name = "samples", .kind = GS_OPT_COUNT, .target = &o->samples, .min = 1,
       .max = GS_MLP_MAX_SAMPLES, .metavar = "N", .help = "samples of the synthetic dataset",
       .given = &o->given_samples},
      {.name = "data", .kind = GS_OPT_STRING, .target = &o->data_path, .metavar = "FILE.csv",
       .help = "train on a CSV file instead (per line: the inputs, then the targets)",
       .given = &o->given_data},
      {.name = "precision", .kind = GS_OPT_CHOICE, .target = &o->precision,
       .choices = gs_mlp_precision_choices, .metavar = "P",
       .help = "fp32, tf32 (tensor cores) or bf16 (fp32 master weights); CUDA only"},
      {.name = "lr", .kind = GS_OPT_DOUBLE, .target = &o->lr, .dmin = 0.0, .dmax = 1.0,
       .metavar = "RATE", .help = "Adam learning rate"},
      {.name = "bucket-kb", .kind = GS_OPT_COUNT, .target = &o->bucket_kb, .min = 1,
       .max = 1u << 20, .metavar = "KB",
       .help = "gradient all-reduce bucket size; a bucket closes at a layer boundary"},
      {.name = "verify-rows", .kind = GS_OPT_COUNT, .target = &o->verify_rows, .min = 1,
       .max = 4096, .metavar = "R",
       .help = "samples per rank in the step checked against the CPU reference"},
      {.name = "verify-corrupt", .kind = GS_OPT_DOUBLE, .target = &o->verify_corrupt, .dmin = -1e6,
       .dmax = 1e6, .metavar = "F", .help = "(tests) multiply the largest gradient element by F "
       "before the check against the CPU reference, which must then fail; CUDA only"},
      {.name = "no-graph", .kind = GS_OPT_FLAG, .target = &o->no_graph,
       .help = "launch every kernel instead of replaying CUDA graphs of the step"},
      {.name = NULL, .kind = GS_OPT_END},
      {.name = NULL, .kind = GS_OPT_END},
  };
  _Static_assert(sizeof table + GS_MLP_PP_OPTIONS * sizeof *table == sizeof o->table, "table size");
  memcpy(o->table, table, sizeof table);
  gs_mlp_pp_options_bind(&o->pp, o->table + sizeof table / sizeof *table - 2); /* over the ENDs */
  return o;
}

void gs_mlp_options_free(void *opts) {
  gs_mlp_options *o = opts;
  if (o) {
    free(o->file_x);
    free(o->file_y);
  }
  free(o);
}

const gs_option *gs_mlp_options_table(void *opts) { return ((gs_mlp_options *)opts)->table; }

/* The model of checked options. */
void gs_mlp_model_from_options(const gs_mlp_options *o, gs_mlp_model *m) {
  memset(m, 0, sizeof *m);
  const uint64_t *w = o->preset == 1 ? preset_large : preset_medium;
  size_t n = o->preset == 1 ? sizeof preset_large / sizeof *w : sizeof preset_medium / sizeof *w;
  if (o->given_layers) {
    w = o->layers.v;
    n = o->layers.n;
  }
  m->n_layers = (int)n - 1;
  for (size_t i = 0; i < n && i <= GS_MLP_MAX_LAYERS; i++) m->widths[i] = (uint32_t)w[i];
  m->dropout = (float)(o->given_dropout ? o->dropout : preset_dropout[o->preset]);
}

/* The host buffers the options ask for, each checked against
 * GS_MLP_MAX_BYTES with checked products: the parameters (weights,
 * gradients and Adam's two moments, 16 bytes each), one rank's activations
 * at the largest batch (every layer's outputs and two gradient buffers of
 * the widest layer, 4 bytes each) and the synthetic dataset. */
static gs_status check_sizes(const gs_mlp_options *o) {
  gs_mlp_model m;
  gs_mlp_model_from_options(o, &m);
  uint64_t width_sum = 0, widest = 0, product = 0;
  for (int l = 0; l <= m.n_layers; l++) {
    width_sum += m.widths[l];
    if (m.widths[l] > widest) widest = m.widths[l];
  }
  const uint64_t params[] = {gs_mlp_param_count(&m), 16};
  if (gs_product_u64_exceeds(params, 2, GS_MLP_MAX_BYTES, &product))
    return gs_error(GS_ERR_USAGE,
                    "--layers: %llu parameters need more than the limit of %llu GiB for weights, "
                    "gradients and Adam moments",
                    (unsigned long long)gs_mlp_param_count(&m),
                    (unsigned long long)(GS_MLP_MAX_BYTES >> 30));
  uint64_t batch = o->batch;
  for (size_t i = 0; o->given_batch_sizes && i < o->batch_sizes.n; i++)
    if (o->batch_sizes.v[i] > batch) batch = o->batch_sizes.v[i];
  const uint64_t activations[] = {batch, width_sum + 2 * widest, 4};
  if (gs_product_u64_exceeds(activations, 3, GS_MLP_MAX_BYTES, &product))
    return gs_error(GS_ERR_USAGE,
                    "--batch %llu x --layers (%llu values per sample): activations over the "
                    "limit of %llu GiB",
                    (unsigned long long)batch, (unsigned long long)(width_sum + 2 * widest),
                    (unsigned long long)(GS_MLP_MAX_BYTES >> 30));
  const uint64_t dataset[] = {o->samples, (uint64_t)m.widths[0] + m.widths[m.n_layers], 4};
  if (gs_product_u64_exceeds(dataset, 3, GS_MLP_MAX_BYTES, &product))
    return gs_error(GS_ERR_USAGE,
                    "--samples %llu x --layers (%u inputs + %u outputs): the dataset is over the "
                    "limit of %llu GiB",
                    (unsigned long long)o->samples, m.widths[0], m.widths[m.n_layers],
                    (unsigned long long)(GS_MLP_MAX_BYTES >> 30));
  return GS_OK;
}

gs_status gs_mlp_options_check(void *opts) {
  gs_mlp_options *o = opts;
  if (o->given_batch && o->given_batch_sizes)
    return gs_error(GS_ERR_USAGE, "--batch and --batch-sizes conflict: give one of them");
  if (o->given_batch_sizes) o->batch = o->batch_sizes.v[0];
  if (o->given_data && o->given_samples)
    return gs_error(GS_ERR_USAGE, "--data and --samples conflict: the file's lines are the samples");
  if (o->given_data && !o->file_x) {
    gs_mlp_model m;
    gs_mlp_model_from_options(o, &m);
    GS_TRY(gs_mlp_data_load_csv(o->data_path, m.widths[0], m.widths[m.n_layers], &o->file_x,
                                &o->file_y, &o->file_n));
    o->samples = o->file_n;
  }
  if (o->given_layers && (o->layers.n < 2 || o->layers.n > GS_MLP_MAX_LAYERS + 1))
    return gs_error(GS_ERR_USAGE,
                    "--layers takes 2 to %d widths (inputs, hidden..., outputs), got %zu",
                    GS_MLP_MAX_LAYERS + 1, o->layers.n);
  gs_mlp_model m;
  gs_mlp_model_from_options(o, &m);
  GS_TRY(gs_mlp_pp_options_check(&o->pp, &m));
  return check_sizes(o);
}

/* Data parallel only: the gradient buckets' all-reduces run on their own
 * stream beside the backward pass. With --pp the transfers between stages
 * are on the step's critical path. */
int gs_mlp_overlaps_collectives(const void *opts) {
  return ((const gs_mlp_options *)opts)->pp.stages <= 1;
}

cJSON *gs_mlp_options_to_json(const void *opts) {
  const gs_mlp_options *o = opts;
  gs_mlp_model m;
  gs_mlp_model_from_options(o, &m);
  gs_json_build b = {0};
  cJSON *j = gs_json_check(&b, cJSON_CreateObject());
  gs_json_put_string(&b, j, "preset", o->given_layers ? "custom" : preset_choices[o->preset]);
  cJSON *layers = gs_json_put_array(&b, j, "layers");
  for (int l = 0; !b.failed && l <= m.n_layers; l++) gs_json_append_number(&b, layers, m.widths[l]);
  gs_json_put_u64(&b, j, "parameters", gs_mlp_param_count(&m));
  gs_json_put_number(&b, j, "dropout", o->given_dropout ? o->dropout : preset_dropout[o->preset]);
  gs_json_put_number(&b, j, "batch", (double)o->batch);
  if (o->given_batch_sizes) {
    cJSON *sizes = gs_json_put_array(&b, j, "batch_sizes");
    for (size_t i = 0; !b.failed && i < o->batch_sizes.n; i++)
      gs_json_append_number(&b, sizes, (double)o->batch_sizes.v[i]);
  }
  gs_json_put_number(&b, j, "samples", (double)o->samples);
  gs_json_put_string(&b, j, "data", o->given_data ? o->data_path : "synthetic");
  gs_json_put_string(&b, j, "precision", gs_mlp_precision_choices[o->precision]);
  gs_json_put_string(&b, j, "optimizer", "adam");
  gs_json_put_number(&b, j, "lr", o->lr);
  gs_json_put_string(&b, j, "loss", "mse");
  gs_json_put_number(&b, j, "bucket_kb", (double)o->bucket_kb);
  gs_json_put_number(&b, j, "verify_rows", (double)o->verify_rows);
  gs_json_put_number(&b, j, "verify_corrupt", o->verify_corrupt);
  gs_json_put_bool(&b, j, "cuda_graph", !o->no_graph);
  gs_mlp_pp_options_json(&b, j, &o->pp, &m);
  return gs_json_build_finish(&b, j);
}

size_t gs_mlp_variant_count(const void *opts) {
  const gs_mlp_options *o = opts;
  return o->given_batch_sizes ? o->batch_sizes.n : 0;
}

void gs_mlp_variant_select(void *opts, size_t index, char *name, size_t name_size) {
  gs_mlp_options *o = opts;
  if (!o->given_batch_sizes || index >= o->batch_sizes.n) return;
  o->batch = o->batch_sizes.v[index];
  snprintf(name, name_size, "batch=%llu", (unsigned long long)o->batch);
}

uint64_t gs_mlp_work_units(const void *opts) { return ((const gs_mlp_options *)opts)->batch; }

/* Items: samples. Flops and bytes: the model of gs_mlp_step_flops and
 * gs_mlp_step_bytes (mlp.h) over the whole step's samples. */
void gs_mlp_cost(const void *opts, uint64_t units, gs_cost *out) {
  gs_mlp_model m;
  gs_mlp_model_from_options(opts, &m);
  const gs_mlp_precision precision = ((const gs_mlp_options *)opts)->precision;
  out->items = units;
  out->item_unit = "samples";
  out->flops = gs_mlp_step_flops(&m, units);
  out->bytes = gs_mlp_step_bytes(&m, units, precision == GS_MLP_BF16);
  // The GEMMs' flops bound a step, at the peak of the precision's math.
  static const gs_bound bound_of[] = {GS_BOUND_FP32, GS_BOUND_TF32, GS_BOUND_BF16};
  out->bound = bound_of[precision];
}
