/* Internal consistency of what another tool wrote: a LoadGen latency
 * distribution against itself (min <= mean, percentiles <= max, in order),
 * a LoadGen summary against its detail log, an nccl-tests row against
 * itself (size = count x type size, algbw = size / time, busbw = algbw x
 * the op's factor). A contradiction is a format error naming the file, the
 * line (or row), the fields and their values, never resolved silently
 * (docs/ingest.md, "Consistency"). */
#ifndef GS_INGEST_CONSISTENCY_H
#define GS_INGEST_CONSISTENCY_H

#include <stddef.h>

#include "core/status.h"
#include "ingest/mlperf.h"
#include "ingest/nccl_tests.h"

/* GS_ERR_FORMAT when one of the log's latency distributions contradicts
 * itself: min above max, the mean or a percentile outside [min, max], a
 * higher percentile below a lower one. */
gs_status gs_mlperf_check_log(const gs_mlperf_log *log, const char *source);

/* GS_ERR_FORMAT when a number the summary and the detail log both give
 * differs by more than the summary's rounding (a rate: 0.005 plus 1e-5 of
 * it, for 2 decimals or 6 significant digits; a latency: half a
 * nanosecond): latencies, throughputs, the query count and
 * the target latency. */
gs_status gs_mlperf_check_agree(const gs_mlperf_log *summary, const gs_mlperf_log *detail,
                                const char *summary_source, const char *detail_source);

/* Bytes of one element of nccl-tests' type name ("float" 4, "bfloat16" 2,
 * ...), 0 when the name is unknown. */
size_t gs_nccl_tests_type_size(const char *type);

/* GS_ERR_FORMAT when row `index` of `out` (op `op`, as ingested)
 * contradicts itself in one half: size against count x type size (the op's
 * convention: x ranks for the ops that split their buffer), algbw against
 * size / time, busbw against algbw x the op's bus factor, each within the
 * rounding of the printed figures. Unknown types and ops skip the checks
 * that need them. */
gs_status gs_nccl_tests_check_row(const gs_nccl_tests_output *out, const char *op,
                                  const char *source, size_t index,
                                  const gs_nccl_tests_row *row);

#endif
