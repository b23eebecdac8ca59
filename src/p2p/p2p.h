/* `gpuscale p2p`: bandwidth and latency between every ordered GPU pair and
 * between host and GPU. A registry of tests (copy engines and SM copy
 * kernel, P2P enabled and disabled, unidirectional and bidirectional, host
 * to device and back, latency) fills one cell per pair; each test says why
 * it is skipped where the hardware cannot run it. Timing follows the best
 * tools: warmup, a spin kernel that releases all timed copies together,
 * median of samples, verification after timing. See docs/p2p.md. */
#ifndef GS_P2P_H
#define GS_P2P_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "core/result.h"
#include "core/trace_model.h"
#include "platform/topology.h"

#define GS_P2P_MAX_SAMPLES 1000
#define GS_P2P_MAX_GPUS 64

/* What to measure (--mode). */
typedef enum {
  GS_P2P_MODE_ALL = 0,
  GS_P2P_MODE_CE,       /* copy-engine bandwidth, P2P on and off, 1 and N streams */
  GS_P2P_MODE_SM,       /* SM copy kernel bandwidth */
  GS_P2P_MODE_HOST,     /* host <-> device with pinned memory */
  GS_P2P_MODE_LATENCY   /* latency matrices */
} gs_p2p_mode;

extern const char *const gs_p2p_mode_names[]; /* all, ce, sm, host, latency; NULL-ended */

typedef struct {
  uint64_t size_bytes;        /* per copy (bandwidth tests), multiple of 16 */
  uint64_t iters;             /* copies per timed sample */
  uint64_t samples;           /* timed samples per cell (one more untimed warmup) */
  uint64_t streams;           /* streams for the multi-stream copy-engine test */
  uint64_t latency_rounds;    /* ping-pong round trips per latency sample */
  uint64_t sm_ctas;           /* SM copy kernel: CTAs of 512 threads per SM */
  int mode;                   /* gs_p2p_mode */
  size_t n_pairs;             /* 0 = every ordered pair */
  int pairs[GS_P2P_MAX_GPUS * 4][2];
  const char *only_test;      /* NULL = every test of the mode; else this test key only */
  gs_trace *trace;            /* --trace's recorder (set by the measuring layer), or NULL */
} gs_p2p_options;

/* One measured cell: a GPU pair (or one GPU for host tests). Bandwidths in
 * bytes/s, latencies in seconds. */
typedef struct {
  int measured;               /* 0: not asked for (diagonal, not in --pairs) or skipped */
  gs_status status;
  char error[GS_TEXT_LONG];   /* why skipped or failed; "" when ok */
  size_t n;
  double samples[GS_P2P_MAX_SAMPLES];
  double median, min, max;
  int bidirectional;
  double direction_median[2]; /* bidirectional: row -> column, column -> row */
  gs_verify_status verify;
  uint64_t mismatches;        /* 32-bit words wrong after the copies */
} gs_p2p_cell;

typedef enum { GS_P2P_UNIT_BANDWIDTH = 0, GS_P2P_UNIT_LATENCY } gs_p2p_unit;

/* One test of the registry and its cells. */
typedef struct {
  const char *key;            /* "ce_unidir_p2p" */
  const char *title;          /* heading of its terminal matrix */
  gs_p2p_unit unit;
  int per_gpu;                /* 1: one cell per GPU (host tests), else n x n */
  int skipped;                /* the whole test did not run */
  char reason[GS_TEXT_LONG];  /* why skipped */
  gs_p2p_cell *cells;         /* n x n row-major (source row, destination column), or n */
} gs_p2p_test;

typedef struct {
  size_t n_gpus;
  int devices[GS_P2P_MAX_GPUS];  /* CUDA ordinals measured */
  size_t n_tests;
  gs_p2p_test *tests;            /* owned */
} gs_p2p_result;

/* Defaults: 1 GiB, 8 copies per sample, 5 samples, 4 streams, 2000 latency
 * rounds, 4 CTAs per SM, every test, every pair. */
void gs_p2p_options_default(gs_p2p_options *o);

/* Parses --pairs "0:1,1:0" (SRC:DST ordinals, SRC != DST, no repeats) into
 * o->pairs. GS_ERR_USAGE naming --pairs on any error. */
gs_status gs_p2p_parse_pairs(const char *text, gs_p2p_options *o);

/* 1 when the ordered pair (src, dst) is to be measured under `o`. */
int gs_p2p_pair_wanted(const gs_p2p_options *o, int src, int dst);

/* Bandwidth in bytes/s of `copies` copies of `bytes` in `seconds`; NaN when
 * seconds <= 0. */
double gs_p2p_bandwidth(uint64_t bytes, uint64_t copies, double seconds);

/* Fills median, min and max of a cell from its samples (n >= 1). */
gs_status gs_p2p_cell_summarize(gs_p2p_cell *cell);

/* Measures every test of the registry allowed by o->mode on env's GPUs.
 * Per-cell failures are recorded in the cells (the rest still runs); the
 * return is GS_OK, GS_ERR_UNSUPPORTED with no GPU, GS_ERR_INTERRUPTED after
 * SIGINT/SIGTERM (core/interrupt.h: no further cell is begun, the tests not
 * begun are marked skipped with the reason, the measured cells are kept),
 * or a setup error. Fills
 * `result` (free with gs_p2p_result_free). */
gs_status gs_p2p_measure(const gs_p2p_options *o, const gs_environment *env,
                         gs_p2p_result *result);

void gs_p2p_result_free(gs_p2p_result *result);

/* 1 when any measured cell failed (status not ok). */
int gs_p2p_any_failed(const gs_p2p_result *result);

/* Terminal matrices of every test that ran, GB/s (10^9 bytes/s) or
 * microseconds, and one line per measured pair comparing the best
 * unidirectional figure with the theoretical NVLink bandwidth of `topo`
 * (may be NULL). */
void gs_p2p_print(FILE *out, const gs_p2p_result *result, const gs_topology *topo);

/* The "p2p" member of the result document (docs/p2p.md); NULL on
 * allocation failure. */
cJSON *gs_p2p_to_json(const gs_p2p_result *result);

/* The "config" block for these options. */
cJSON *gs_p2p_options_to_json(const gs_p2p_options *o);

#endif
