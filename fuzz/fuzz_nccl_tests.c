/* libFuzzer target: the nccl-tests parser (text and JSON) on arbitrary
 * bytes, then the mapping of whatever it accepted into a result document. */
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/result.h"
#include "ingest/ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gs_nccl_tests_output out;
  if (gs_nccl_tests_parse((const char *)data, size, "fuzz", &out) != GS_OK) return 0;
  // The document grows with ranks x rows; a few thousand rank records
  // exercise the mapping as well as millions would, without the fuzzer
  // spending its time (and memory limit) on one huge document.
  cJSON *doc = gs_nccl_tests_world_size(&out) * out.n_rows <= 4096
                   ? gs_result_new("ingest")
                   : NULL;
  if (doc) {
    const char *op = gs_nccl_tests_op_from_program(out.program);
    if (gs_ingest_add_nccl_tests(doc, &out, op ? op : "allreduce", "fuzz") == GS_OK)
      gs_ingest_set_document_status(doc);
    cJSON_Delete(doc);
  }
  gs_nccl_tests_free(&out);
  return 0;
}
