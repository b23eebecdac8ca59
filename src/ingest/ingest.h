/* Turns what the ingest parsers read (MLPerf LoadGen logs, nccl-tests
 * output) into measurements of a gpuscale result document, so that the
 * same report covers runs made with other tools. The member-by-member
 * mapping is documented in docs/ingest.md. */
#ifndef GS_INGEST_INGEST_H
#define GS_INGEST_INGEST_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/status.h"
#include "ingest/mlperf.h"
#include "ingest/nccl_tests.h"

/* One LoadGen output directory: one node or rank of the run. */
typedef struct {
  const char *dir;          /* the directory as given */
  const char *host;         /* the host it ran on (docs/ingest.md says how it is chosen) */
  const char *summary_path; /* NULL when the directory had no summary */
  const char *detail_path;  /* NULL when the directory had no detail log */
  gs_mlperf_log log;        /* summary and detail merged */
} gs_ingest_mlperf_rank;

/* Appends one measurement ("workload": "mlperf") with one rank record per
 * directory, in the order given, to doc's measurements. All ranks must
 * have run the same scenario (an error naming both directories
 * otherwise). */
gs_status gs_ingest_add_mlperf(cJSON *doc, const gs_ingest_mlperf_rank *ranks, size_t n_ranks);

/* Appends one measurement ("workload": "coll") per table row and placement
 * (out-of-place, in-place) of one nccl-tests output. `op` is the
 * collective ("allreduce"); `source` the file, recorded in each
 * measurement's "source". */
gs_status gs_ingest_add_nccl_tests(cJSON *doc, const gs_nccl_tests_output *out, const char *op,
                                   const char *source);

/* Sets the document's "status" from its measurements: "ok" when all are
 * ok, "failed" when none is, "partial" otherwise. */
gs_status gs_ingest_set_document_status(cJSON *doc);

#endif
