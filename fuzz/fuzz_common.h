/* Shared by the LoadGen fuzz targets: maps a parsed log into a result
 * document (as one rank) and throws the document away, so that the fuzzer
 * also exercises src/ingest/ingest.c with every log the parsers accept. */
#ifndef GS_FUZZ_COMMON_H
#define GS_FUZZ_COMMON_H

#include <cjson/cJSON.h>

#include "core/result.h"
#include "ingest/ingest.h"

static inline void gs_fuzz_map_mlperf(const gs_mlperf_log *log) {
  gs_ingest_mlperf_rank rank = {.dir = "fuzz", .host = "fuzz", .log = *log};
  cJSON *doc = gs_result_new("ingest");
  if (!doc) return;
  if (gs_ingest_add_mlperf(doc, &rank, 1) == GS_OK) gs_ingest_set_document_status(doc);
  cJSON_Delete(doc);
}

#endif
