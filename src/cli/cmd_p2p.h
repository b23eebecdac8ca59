/* The p2p measurement as a step that other commands (suite) can run: the
 * measurement, its terminal matrices and its result document. */
#ifndef GS_CMD_P2P_H
#define GS_CMD_P2P_H

#include <stdio.h>

#include "core/result.h"
#include "p2p/p2p.h"

/* Measures with `o` on env's GPUs, prints the matrices to stdout (and to
 * `copy` when not NULL) and writes the result document to `path`. argv (argc
 * entries) is the full command line recorded in the document. Returns GS_OK,
 * GS_ERR_UNSUPPORTED without a GPU, or the first failure (cells that failed
 * make it GS_ERR_CUDA/.. after everything else was measured and written). */
gs_status gs_p2p_run_and_write(const gs_p2p_options *o, const gs_environment *env,
                               const char *path, FILE *copy, int argc, char **argv);

#endif
