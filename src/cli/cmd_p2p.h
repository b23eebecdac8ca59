/* The p2p measurement as a step that other commands (suite) can run: the
 * measurement and its result document (measure/p2p.h) and its terminal
 * matrices. */
#ifndef GS_CMD_P2P_H
#define GS_CMD_P2P_H

#include <stdio.h>

#include "core/result.h"
#include "measure/common.h"
#include "p2p/p2p.h"

/* Measures with `o` on env's GPUs (NULL: collected; gs_measure_p2p) and the trace of
 * common's --trace (common may be NULL: no trace), writes the result
 * document to `path` and prints the matrices to stdout (and to `copy` when
 * not NULL). Returns gs_measure_p2p's status: GS_OK, GS_ERR_UNSUPPORTED
 * without a GPU, GS_ERR_PARTIAL after a signal, or the first failure
 * (cells that failed make it GS_ERR_CUDA/.. after everything else was
 * measured and written). */
gs_status gs_p2p_run_and_write(const gs_p2p_options *o, const gs_environment *env,
                               const gs_common_options *common,
                               const char *path, FILE *copy);

#endif
