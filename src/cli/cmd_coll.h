/* What `gpuscale coll` prints, for the commands that run collectives
 * through the library (suite). */
#ifndef GS_CMD_COLL_H
#define GS_CMD_COLL_H

#include "measure/coll_sweep.h"

/* The observer that prints each operation's nccl-tests-style table, its
 * footer and the alpha-beta fits to stdout once its sweep is done. */
gs_coll_observer gs_coll_printer(void);

#endif
