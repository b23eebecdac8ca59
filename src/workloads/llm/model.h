/* The llm model: shape of a decoder-only Llama-family transformer, its
 * presets, derived sizes (parameters, weight bytes, FLOPs) and the
 * deterministic random weights. A weight element is a pure function of
 * (seed, tensor, index), so the CPU reference and the GPU initialization
 * kernel produce bit-identical bfloat16 weights without copying them.
 * Included by C host code and by nvcc (the inline helpers run on both). */
#ifndef GS_LLM_MODEL_H
#define GS_LLM_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define GS_LLM_HD __host__ __device__
#else
#define GS_LLM_HD
#endif

/* Most sequences of one batch (--batch). */
#define GS_LLM_MAX_BATCH 256

/* Most pipeline stages of one replica (--pp). */
#define GS_LLM_MAX_STAGES 64

typedef struct {
  uint64_t hidden; /* model width */
  uint64_t layers;
  uint64_t heads;    /* query heads; head_dim = hidden / heads */
  uint64_t kv_heads; /* key/value heads (grouped-query attention) */
  uint64_t ffn;      /* SwiGLU inner width */
  uint64_t vocab;
  double rope_theta;
  double norm_eps; /* RMSNorm epsilon */
} gs_llm_shape;

/* Named shapes: "llama-8b", "llama-1b", "tiny". */
typedef struct {
  const char *name;
  gs_llm_shape shape;
} gs_llm_preset;

extern const gs_llm_preset gs_llm_presets[];
extern const unsigned gs_llm_preset_count;

/* Tensor ids that seed the weights (see gs_llm_weight_value). */
enum {
  GS_LLM_T_EMBED = 0,
  GS_LLM_T_FINAL_NORM = 1,
  GS_LLM_T_LM_HEAD = 2,
  GS_LLM_T_LAYER0 = 16, /* layer l, kind k: GS_LLM_T_LAYER0 + 8 l + k */
  GS_LLM_K_ATTN_NORM = 0,
  GS_LLM_K_QKV = 1, /* [(heads + 2 kv_heads) head_dim, hidden]: q, then k, then v rows */
  GS_LLM_K_WO = 2,  /* [hidden, heads head_dim] */
  GS_LLM_K_MLP_NORM = 3,
  GS_LLM_K_GATE_UP = 4, /* [2 ffn, hidden]: gate rows, then up rows */
  GS_LLM_K_DOWN = 5,    /* [hidden, ffn] */
  GS_LLM_LAYER_KINDS = 6
};

/* The tensor id of layer `layer`'s tensor of kind `kind`, and the kind of a
 * layer tensor id (-1 for the embedding, final norm and output projection). */
static inline uint32_t gs_llm_layer_tensor(uint64_t layer, int kind) {
  return (uint32_t)(GS_LLM_T_LAYER0 + 8 * layer + (uint64_t)kind);
}
static inline int gs_llm_layer_kind(uint32_t tensor) {
  return tensor >= GS_LLM_T_LAYER0 ? (int)((tensor - GS_LLM_T_LAYER0) % 8) : -1;
}

static inline uint64_t gs_llm_head_dim(const gs_llm_shape *s) {
  return s->hidden / s->heads;
}
static inline uint64_t gs_llm_qkv_rows(const gs_llm_shape *s) {
  return (s->heads + 2 * s->kv_heads) * gs_llm_head_dim(s);
}

/* Rows and columns of a layer tensor of kind k (columns = 1 for norms). */
void gs_llm_layer_tensor_dims(const gs_llm_shape *s, int kind, uint64_t *rows, uint64_t *cols);

/* Parameters of the whole model (embedding and output projection untied). */
uint64_t gs_llm_parameter_count(const gs_llm_shape *s);

/* Bytes of bfloat16 weights one decode step reads: every parameter except
 * the embedding table (of which it reads one row per sequence). */
uint64_t gs_llm_decode_weight_bytes(const gs_llm_shape *s);

/* Multiply-add FLOPs (2 per MAC) of one token through the weights, without
 * attention over the cache. */
uint64_t gs_llm_token_flops(const gs_llm_shape *s);

/* Scale and offset of a tensor's uniform init: value = offset + scale * u,
 * u in [-1, 1). Linear weights get variance 1/cols, norms 1 +- 0.1. */
void gs_llm_tensor_init(const gs_llm_shape *s, uint32_t tensor, float *scale, float *offset);

/* ---- tensor parallelism ------------------------------------------------------ */
/* Shard `index` of `count` of a tensor-parallel replica. It holds query
 * heads, key/value heads, FFN columns and vocabulary rows [index * n / count,
 * (index + 1) * n / count) of each, and whole copies of the embedding and
 * the norms. {0, 1} is the whole model. */
typedef struct {
  uint32_t index, count;
} gs_llm_shard;

/* The sizes a shard holds. */
typedef struct {
  uint64_t heads, kv_heads, ffn, vocab;
  uint64_t vocab_offset; /* first vocabulary row of the shard */
} gs_llm_shard_dims;

void gs_llm_shard_sizes(const gs_llm_shape *s, gs_llm_shard shard, gs_llm_shard_dims *out);

/* Whether `count` shards split the shape evenly (heads, key/value heads,
 * FFN width and vocabulary): 1, or 0 with `why` naming the first that does
 * not. */
int gs_llm_shard_fits(const gs_llm_shape *s, uint32_t count, char *why, size_t why_size);

/* Where a shard's local tensor sits in the whole one. Local row r of
 * segment k (local_row[k] <= r < local_row[k + 1]) is whole row
 * whole_row[k] + r - local_row[k]; local column c is whole column
 * col_offset + c. The QKV tensor has three segments (q, k, v rows), the
 * gate/up tensor two, the others one. */
typedef struct {
  uint64_t rows, cols;   /* the local tensor */
  uint64_t whole_cols;   /* columns of the whole tensor */
  uint64_t col_offset;
  uint32_t segments;     /* 1 to 3 */
  uint64_t local_row[3], whole_row[3];
} gs_llm_slice;

/* The slice of tensor `tensor` (GS_LLM_T_*, layer tensors included) that
 * `shard` holds. */
void gs_llm_shard_slice(const gs_llm_shape *s, uint32_t tensor, gs_llm_shard shard,
                        gs_llm_slice *out);

/* Whether a shard's token offer (value, whole-vocabulary index) beats the
 * best so far: the larger value, the lower index on ties, as the argmax of
 * the whole row. Host (CPU shards) and device (GPU shards) use it. */
static inline GS_LLM_HD int gs_llm_offer_beats(float value, float index, float best_value,
                                               float best_index) {
  return value > best_value || (value == best_value && index < best_index);
}

/* The whole tensor's element index of local element `local` of a slice. */
static inline GS_LLM_HD uint64_t gs_llm_slice_index(const gs_llm_slice *sl, uint64_t local) {
  uint64_t r = local / sl->cols, c = local % sl->cols;
  uint32_t k = 0;
  while (k + 1 < sl->segments && r >= sl->local_row[k + 1]) k++;
  return (sl->whole_row[k] + r - sl->local_row[k]) * sl->whole_cols + sl->col_offset + c;
}

/* Round-to-nearest-even float -> bfloat16 bits, and back. */
static inline GS_LLM_HD uint16_t gs_llm_bf16_from_float(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline GS_LLM_HD float gs_llm_float_from_bf16(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Rounds a float to the nearest bfloat16 value (kept as float). */
static inline GS_LLM_HD float gs_llm_round_bf16(float f) {
  return gs_llm_float_from_bf16(gs_llm_bf16_from_float(f));
}

/* Element `index` of tensor `tensor` as bfloat16 bits: a counter-based
 * hash (splitmix64 finalizer) of (seed, tensor, index) mapped to [-1, 1),
 * scaled and rounded. */
static inline GS_LLM_HD uint16_t gs_llm_weight_value(uint64_t seed, uint32_t tensor, uint64_t index,
                                                     float scale, float offset) {
  uint64_t z =
      index + ((uint64_t)tensor + 1u) * 0xD1B54A32D192ED03ull + seed * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  float u = (float)(z >> 40) * (1.0f / 8388608.0f) - 1.0f; /* 24 bits -> [-1, 1) */
  return gs_llm_bf16_from_float(offset + scale * u);
}

#endif
