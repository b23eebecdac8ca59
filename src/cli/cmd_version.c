/* `gpuscale version [--format text|json]` (also `gpuscale --version`): the
 * version, the git revision, and in JSON the optional parts built in (CUDA
 * architectures, NCCL, MPI, NVML, gnuplot) with the library versions found
 * at run time, so that fleet tooling can check what is installed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/help.h"
#include "core/check.h"
#include "core/json.h"
#include "core/result.h"
#include "platform/device.h"
#include "gs_version.h"

static const char *const format_choices[] = {"text", "json", NULL};
enum { FORMAT_TEXT = 0, FORMAT_JSON = 1 };

/* One optional part: {"built_in": b, ...}; NULL (the build marked) when out
 * of memory. */
static cJSON *put_part(gs_json_build *b, cJSON *doc, const char *name, int built_in) {
  cJSON *part = gs_json_put_object(b, doc, name);
  gs_json_put_bool(b, part, "built_in", built_in);
  return part;
}

/* The version document; NULL when out of memory. */
static cJSON *version_json(void) {
  gs_environment env;
  memset(&env, 0, sizeof env);
  gs_device_collect_library_versions(&env);
  gs_json_build b = {0};
  cJSON *doc = gs_json_check(&b, cJSON_CreateObject());
  gs_json_put_string(&b, doc, "tool", "gpuscale");
  gs_json_put_string(&b, doc, "version", GS_VERSION_STRING);
  gs_json_put_string(&b, doc, "git_revision", GS_GIT_REVISION);
  cJSON *cuda = put_part(&b, doc, "cuda", 1);
  gs_json_put_string(&b, cuda, "toolkit", GS_CUDA_TOOLKIT_VERSION);
  gs_json_put_string(&b, cuda, "runtime", "static");
  cJSON *archs = gs_json_put_array(&b, cuda, "architectures");
  char list[] = GS_CUDA_ARCHITECTURES;
  char *save = NULL;
  for (char *a = strtok_r(list, ";", &save); !b.failed && a; a = strtok_r(NULL, ";", &save))
    gs_json_append_string(&b, archs, a);
  cJSON *nccl = put_part(&b, doc, "nccl", 1);
  gs_json_put_string(&b, nccl, "library", "libnccl.so.2");
  gs_json_put_string(&b, nccl, "loaded", "at run time");
  gs_json_put_string_or_null(&b, nccl, "version", env.nccl_version);
#ifdef GS_HAVE_MPI
  cJSON *mpi = put_part(&b, doc, "mpi", 1);
#else
  cJSON *mpi = put_part(&b, doc, "mpi", 0);
#endif
  gs_json_put_string_or_null(&b, mpi, "version", env.mpi_version);
  // NVML is always loaded at run time (dlopen), where a driver is installed.
  cJSON *nvml = put_part(&b, doc, "nvml", 1);
  gs_json_put_string(&b, nvml, "library", "libnvidia-ml.so.1");
  gs_json_put_string(&b, nvml, "loaded", "at run time");
#ifdef GS_GNUPLOT
  cJSON *gnuplot = put_part(&b, doc, "gnuplot", 1);
  gs_json_put_string(&b, gnuplot, "path", GS_GNUPLOT);
#else
  cJSON *gnuplot = put_part(&b, doc, "gnuplot", 0);
  gs_json_put_null(&b, gnuplot, "path");
#endif
  return gs_json_build_finish(&b, doc);
}

/* See commands.h. */
gs_status gs_cmd_version(int argc, char **argv) {
  int format = FORMAT_TEXT;
  const gs_option table[] = {
      {.name = "format", .short_name = 'f', .kind = GS_OPT_CHOICE, .target = &format,
       .choices = format_choices, .metavar = "FMT",
       .help = "one line, or a JSON object with the parts built in"},
      {.kind = GS_OPT_END}};
  if (gs_cli_wants_help(argc, argv)) {
    gs_help_usage("gpuscale version [--format text|json]");
    gs_help_usage("gpuscale --version [--format text|json]");
    gs_help_para("Prints the version and the git revision. As JSON it also says what was built\n"
                 "in: the CUDA toolkit and architectures (the runtime is linked statically),\n"
                 "NCCL and MPI (with the versions of the libraries found now, null where none\n"
                 "loads), NVML (always loaded at run time, where a driver is installed) and\n"
                 "gnuplot (the program used for plots).");
    gs_help_options("Options", table);
    return GS_OK;
  }
  const gs_option *tables[] = {table, NULL};
  GS_TRY(gs_options_parse(tables, "gpuscale version", argc, argv, NULL, NULL));
  if (format == FORMAT_TEXT) {
    printf("gpuscale %s (git %s)\n", GS_VERSION_STRING, GS_GIT_REVISION);
    return GS_OK;
  }
  cJSON *doc = version_json();
  if (!doc) return gs_error(GS_ERR_NOMEM, "out of memory describing the version");
  gs_status st = gs_json_print(stdout, doc);
  cJSON_Delete(doc);
  return st;
}
