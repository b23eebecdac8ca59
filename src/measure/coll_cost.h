/* `gpuscale coll OP --arrival-cost ITERS`: what recording arrival times
 * costs a collective, measured inside one process and one communicator
 * (docs/stragglers.md, "Arrival skew"). Each size and form runs its timed
 * iterations in blocks of ITERS, recording in half of them in the
 * Thue-Morse order (core/arrival_cost.h), and the cost is the median of
 * the pairs of blocks' relative differences with its 95% interval. It
 * measures gpuscale itself, not the machine, so it writes no result
 * document: its figures are printed (bench/arrival.sh reads them). */
#ifndef GS_MEASURE_COLL_COST_H
#define GS_MEASURE_COLL_COST_H

#include "measure/coll_sweep.h"

/* Before the job starts: refuses what the cost measurement cannot honour
 * (--out and --trace: no document; --arrival-times: it alternates
 * recording itself) and sets -n/--iters where not given (GS_ARRIVAL_COST_DEFAULT_PAIRS
 * quartets of blocks), else checks that it is whole quartets, at least
 * GS_ARRIVAL_COST_MIN_PAIRS. GS_ERR_USAGE naming the options. Nothing
 * without --arrival-cost. */
gs_status gs_coll_cost_configure(const gs_coll_options *o, gs_common_options *common);

/* Once the world is known: GS_ERR_USAGE when it has fewer than 2 ranks
 * (no arrival to record). */
gs_status gs_coll_cost_check_world(int world_size);

/* The cost of each measured point pts[0..n) (those with every sample;
 * a failed point is left to the sweep's status) told to observer->cost_done
 * (when set). GS_ERR_UNSUPPORTED when too few pairs were timed, GS_ERR_NOMEM.
 * Main thread of the process that prints. */
gs_status gs_coll_cost_report(const gs_coll_sweep *sweep, const gs_coll_point *pts, size_t n,
                              int world_size, const char *launch,
                              const gs_coll_observer *observer);

#endif
