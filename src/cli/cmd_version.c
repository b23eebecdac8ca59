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
#include "core/result.h"
#include "platform/device.h"
#include "gs_version.h"

static const char *const format_choices[] = {"text", "json", NULL};
enum { FORMAT_TEXT = 0, FORMAT_JSON = 1 };

/* Adds name: text, or null when text is empty. */
static int add_text(cJSON *o, const char *name, const char *text) {
  return text[0] ? cJSON_AddStringToObject(o, name, text) != NULL
                 : cJSON_AddNullToObject(o, name) != NULL;
}

/* One optional part: {"built_in": b, ...}; NULL when out of memory. */
static cJSON *add_part(cJSON *doc, const char *name, int built_in) {
  cJSON *part = cJSON_AddObjectToObject(doc, name);
  if (part && !cJSON_AddBoolToObject(part, "built_in", built_in)) return NULL;
  return part;
}

/* The version document; NULL when out of memory. */
static cJSON *version_json(void) {
  gs_environment env;
  memset(&env, 0, sizeof env);
  gs_device_collect_library_versions(&env);
  int ok = 1;
  cJSON *doc = cJSON_CreateObject();
  ok &= doc && cJSON_AddStringToObject(doc, "tool", "gpuscale") != NULL;
  ok &= doc && cJSON_AddStringToObject(doc, "version", GS_VERSION_STRING) != NULL;
  ok &= doc && cJSON_AddStringToObject(doc, "git_revision", GS_GIT_REVISION) != NULL;
  cJSON *cuda = doc ? add_part(doc, "cuda", 1) : NULL;
  ok &= cuda && cJSON_AddStringToObject(cuda, "toolkit", GS_CUDA_TOOLKIT_VERSION) != NULL;
  ok &= cuda && cJSON_AddStringToObject(cuda, "runtime", "static") != NULL;
  cJSON *archs = cuda ? cJSON_AddArrayToObject(cuda, "architectures") : NULL;
  ok &= archs != NULL;
  char list[] = GS_CUDA_ARCHITECTURES;
  char *save = NULL;
  for (char *a = strtok_r(list, ";", &save); ok && a; a = strtok_r(NULL, ";", &save))
    ok &= cJSON_AddItemToArray(archs, cJSON_CreateString(a));
  cJSON *nccl = doc ? add_part(doc, "nccl", 1) : NULL;
  ok &= nccl && cJSON_AddStringToObject(nccl, "library", "libnccl.so.2") != NULL;
  ok &= nccl && cJSON_AddStringToObject(nccl, "loaded", "at run time") != NULL;
  ok &= nccl && add_text(nccl, "version", env.nccl_version);
#ifdef GS_HAVE_MPI
  cJSON *mpi = doc ? add_part(doc, "mpi", 1) : NULL;
#else
  cJSON *mpi = doc ? add_part(doc, "mpi", 0) : NULL;
#endif
  ok &= mpi && add_text(mpi, "version", env.mpi_version);
  // NVML is always loaded at run time (dlopen), where a driver is installed.
  cJSON *nvml = doc ? add_part(doc, "nvml", 1) : NULL;
  ok &= nvml && cJSON_AddStringToObject(nvml, "library", "libnvidia-ml.so.1") != NULL;
  ok &= nvml && cJSON_AddStringToObject(nvml, "loaded", "at run time") != NULL;
#ifdef GS_GNUPLOT
  cJSON *gnuplot = doc ? add_part(doc, "gnuplot", 1) : NULL;
  ok &= gnuplot && cJSON_AddStringToObject(gnuplot, "path", GS_GNUPLOT) != NULL;
#else
  cJSON *gnuplot = doc ? add_part(doc, "gnuplot", 0) : NULL;
  ok &= gnuplot && cJSON_AddNullToObject(gnuplot, "path") != NULL;
#endif
  if (!ok) {
    cJSON_Delete(doc);
    return NULL;
  }
  return doc;
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
