/* The measuring engine of `gpuscale p2p` (docs/p2p.md): the link
 * measurement of p2p/p2p.h run as a job of one process, with the topology
 * it is set against and its result document. */
#ifndef GS_MEASURE_P2P_H
#define GS_MEASURE_P2P_H

#include "core/result.h"
#include "measure/common.h"
#include "p2p/p2p.h"
#include "platform/topology.h"

/* What the command prints: the measured matrices and the links. */
typedef struct {
  gs_p2p_result result;
  gs_topology topology;
  int have_topology;
} gs_p2p_outcome;

/* Measures with `o` on env's GPUs (NULL: collected here, after `path` was
 * checked), with a trace when `common` (may be NULL) asks for one
 * (--trace: one span per cell on the host lane), and writes the result
 * document to `path`
 * (with the command line main recorded). Refuses under
 * mpirun/srun (GS_ERR_USAGE: one process drives every GPU). Fills *out (free
 * it with gs_p2p_outcome_free, also after a failure; a failure before any
 * cell leaves it empty). Returns GS_OK; GS_ERR_UNSUPPORTED without a GPU;
 * GS_ERR_PARTIAL after SIGINT/SIGTERM (the document, status "partial",
 * holds the cells measured before); the first failed cell's status after
 * everything else was measured and written; or a setup error. Called from
 * the main thread. */
gs_status gs_measure_p2p(const gs_p2p_options *o, const gs_environment *env,
                         const gs_common_options *common, const char *path, gs_p2p_outcome *out);

void gs_p2p_outcome_free(gs_p2p_outcome *out);

#endif
