/* libFuzzer target: the LoadGen detail-log parser on arbitrary bytes, then
 * the mapping of whatever it accepted into a result document. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "ingest/mlperf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gs_mlperf_log log;
  if (gs_mlperf_parse_detail((const char *)data, size, "fuzz", &log) == GS_OK)
    gs_fuzz_map_mlperf(&log);
  return 0;
}
