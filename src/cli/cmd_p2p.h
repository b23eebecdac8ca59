/* What `gpuscale p2p` prints, for the commands that measure the links
 * through the library (suite). */
#ifndef GS_CMD_P2P_H
#define GS_CMD_P2P_H

#include <stdio.h>

#include "measure/p2p.h"

/* Prints the measured matrices of `r` (measured with `o`) to stdout, as
 * `gpuscale p2p` does, and, when `copy` is not NULL, under a heading to
 * `copy` too. */
void gs_p2p_print_outcome(const gs_p2p_options *o, const gs_p2p_outcome *r, FILE *copy);

#endif
