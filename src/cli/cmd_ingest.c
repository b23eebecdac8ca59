/* `gpuscale ingest mlperf DIR...` and `gpuscale ingest nccl-tests FILE...`:
 * reads results of other tools (MLPerf LoadGen logs, nccl-tests output)
 * with the parsers in src/ingest/ and writes them as one gpuscale result
 * document, so that `gpuscale report` covers them too. Nothing is written
 * unless every input reads cleanly. See docs/ingest.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/help.h"
#include "core/options.h"
#include "core/result.h"
#include "ingest/ingest.h"

/* Inputs larger than this are refused: no LoadGen log or nccl-tests
 * output comes near it, and each is read whole into memory. */
#define INGEST_MAX_BYTES ((uint64_t)1 << 30)

/* Prints the error a parser recorded quietly (gs_error would format from
 * the buffer it writes into, hence the copy). */
static gs_status report_recorded(gs_status st) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", gs_last_error());
  return gs_error(st, "%s", msg);
}

static void print_help(const char *kind, const gs_option *table) {
  if (!kind) {
    gs_help_usage("gpuscale ingest mlperf [options] DIR...");
    gs_help_usage("gpuscale ingest nccl-tests [options] FILE...");
    gs_help_para("Reads the results of other tools into one gpuscale result document, so that\n"
                 "'gpuscale report' covers runs made with them:");
    gs_help_list("Kinds");
    gs_help_item("mlperf", "MLPerf LoadGen output directories (mlperf_log_summary.txt and\n"
                           "mlperf_log_detail.txt), one per node or rank");
    gs_help_item("nccl-tests", "nccl-tests output: the text table or its JSON (--output_file)");
    gs_help_para("'gpuscale ingest KIND --help' lists the options. Mapping: docs/ingest.md.");
  } else if (strcmp(kind, "mlperf") == 0) {
    gs_help_usage("gpuscale ingest mlperf [options] DIR...");
    gs_help_para("Each DIR holds one LoadGen run (one node or rank): mlperf_log_summary.txt\n"
                 "and/or mlperf_log_detail.txt. The DIRs become the ranks 0, 1, ... of one\n"
                 "measurement, in the order given.");
  } else {
    gs_help_usage("gpuscale ingest nccl-tests [options] FILE...");
    gs_help_para("Each FILE is the output of one nccl-tests run (text table or JSON); every\n"
                 "size and placement (out-of-place, in-place) becomes one measurement.");
  }
  if (table) {
    char title[64];
    snprintf(title, sizeof title, "Options of %s", kind);
    gs_help_options(title, table);
  }
  gs_help_para("Exit codes: 0 document written, 1 an input is unreadable or damaged (nothing is\n"
               "written), 2 usage error.");
}

/* The last path component of `dir` without trailing slashes. */
static void dir_name(const char *dir, char *buf, size_t size) {
  size_t len = strlen(dir);
  while (len > 1 && dir[len - 1] == '/') len--;
  size_t start = len;
  while (start > 0 && dir[start - 1] != '/') start--;
  size_t n = len - start;
  if (n >= size) n = size - 1;
  memcpy(buf, dir + start, n);
  buf[n] = '\0';
}

static int file_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* Reads and parses one LoadGen file with `parse`. */
static gs_status read_mlperf_file(const char *path,
                                  gs_status (*parse)(const char *, size_t, const char *,
                                                     gs_mlperf_log *),
                                  gs_mlperf_log *log) {
  char *data = NULL;
  size_t size = 0;
  gs_status st = gs_file_read(path, INGEST_MAX_BYTES, "LoadGen logs", &data, &size);
  if (st != GS_OK) return st;
  st = parse(data, size, path, log);
  free(data);
  return st == GS_OK ? GS_OK : report_recorded(st);
}

typedef struct {
  char summary[4096], detail[4096], host[256];
} mlperf_paths;

/* Reads one LoadGen directory into `rank`. */
static gs_status read_mlperf_dir(const char *dir, const char *host, mlperf_paths *paths,
                                 gs_ingest_mlperf_rank *rank) {
  struct stat sb;
  if (stat(dir, &sb) != 0)
    return gs_error(GS_ERR_IO, "cannot read %s: %s", dir, strerror(errno));
  if (!S_ISDIR(sb.st_mode))
    return gs_error(GS_ERR_IO, "%s is not a directory (expected a LoadGen output directory "
                    "with mlperf_log_summary.txt)", dir);
  snprintf(paths->summary, sizeof paths->summary, "%s/mlperf_log_summary.txt", dir);
  snprintf(paths->detail, sizeof paths->detail, "%s/mlperf_log_detail.txt", dir);
  int have_summary = file_exists(paths->summary), have_detail = file_exists(paths->detail);
  if (!have_summary && !have_detail)
    return gs_error(GS_ERR_IO, "%s has neither mlperf_log_summary.txt nor "
                    "mlperf_log_detail.txt: not a LoadGen output directory", dir);
  if (host)
    snprintf(paths->host, sizeof paths->host, "%s", host);
  else
    dir_name(dir, paths->host, sizeof paths->host);
  rank->dir = dir;
  rank->host = paths->host;
  rank->summary_path = have_summary ? paths->summary : NULL;
  rank->detail_path = have_detail ? paths->detail : NULL;
  gs_mlperf_log_init(&rank->log);
  gs_status st = GS_OK;
  if (have_summary) st = read_mlperf_file(paths->summary, gs_mlperf_parse_summary, &rank->log);
  if (st != GS_OK || !have_detail) return st;
  gs_mlperf_log detail;
  st = read_mlperf_file(paths->detail, gs_mlperf_parse_detail, &detail);
  if (st != GS_OK) return st;
  if (!have_summary) {
    if (detail.scenario == GS_MLPERF_SCENARIO_UNKNOWN || detail.valid < 0)
      return gs_error(GS_ERR_FORMAT, "%s: no \"effective_scenario\" or \"result_validity\" record, "
                      "and %s has no mlperf_log_summary.txt to take them from", paths->detail, dir);
    rank->log = detail;
    return GS_OK;
  }
  st = gs_mlperf_merge(&rank->log, &detail, paths->summary, paths->detail);
  return st == GS_OK ? GS_OK : report_recorded(st);
}

/* Splits "a,b,c" into `hosts` (pointers into `text`, which is modified). */
static gs_status split_hosts(char *text, size_t want, const char **hosts) {
  size_t n = 0;
  for (char *p = text; p; n++) {
    char *comma = strchr(p, ',');
    if (comma) *comma = '\0';
    if (!*p) return gs_error(GS_ERR_USAGE, "option --hosts: empty host name in the list");
    if (n < want) hosts[n] = p;
    p = comma ? comma + 1 : NULL;
  }
  if (n != want)
    return gs_error(GS_ERR_USAGE, "option --hosts: %zu host names for %zu directories", n, want);
  return GS_OK;
}

static gs_status ingest_mlperf(const gs_cli_file_list *dirs, const char *hosts_text, cJSON *doc,
                               cJSON *config) {
  gs_ingest_mlperf_rank *ranks = calloc(dirs->n, sizeof *ranks);
  mlperf_paths *paths = calloc(dirs->n, sizeof *paths);
  const char **hosts = calloc(dirs->n, sizeof *hosts);
  char *hosts_copy = hosts_text ? strdup(hosts_text) : NULL;
  gs_status st = GS_OK;
  if (!ranks || !paths || !hosts || (hosts_text && !hosts_copy))
    st = gs_error(GS_ERR_NOMEM, "out of memory");
  if (st == GS_OK && hosts_copy) st = split_hosts(hosts_copy, dirs->n, hosts);
  for (size_t i = 0; st == GS_OK && i < dirs->n; i++)
    st = read_mlperf_dir(dirs->paths[i], hosts[i], &paths[i], &ranks[i]);
  if (st == GS_OK) {
    st = gs_ingest_add_mlperf(doc, ranks, dirs->n);
    if (st != GS_OK) st = report_recorded(st);
  }
  cJSON *host_list = cJSON_AddArrayToObject(config, "hosts");
  for (size_t i = 0; st == GS_OK && i < dirs->n; i++)
    if (!host_list || !cJSON_AddItemToArray(host_list, cJSON_CreateString(paths[i].host)))
      st = gs_error(GS_ERR_NOMEM, "out of memory");
  for (size_t i = 0; st == GS_OK && i < dirs->n; i++)
    if (ranks[i].log.valid != 1)
      gs_note("%s: LoadGen reported the result INVALID; recorded as a failed verification",
              dirs->paths[i]);
  free(hosts_copy);
  free(hosts);
  free(paths);
  free(ranks);
  return st;
}

static gs_status ingest_nccl_tests(const gs_cli_file_list *files, const char *op_option, cJSON *doc) {
  gs_status st = GS_OK;
  for (size_t i = 0; st == GS_OK && i < files->n; i++) {
    const char *path = files->paths[i];
    char *data = NULL;
    size_t size = 0;
    st = gs_file_read(path, INGEST_MAX_BYTES, "nccl-tests outputs", &data, &size);
    if (st != GS_OK) break;
    gs_nccl_tests_output out;
    st = gs_nccl_tests_parse(data, size, path, &out);
    free(data);
    if (st != GS_OK) {
      st = report_recorded(st);
      break;
    }
    const char *op = op_option ? op_option : gs_nccl_tests_op_from_program(out.program);
    if (!op)
      st = gs_error(GS_ERR_FORMAT,
                    "%s: cannot tell which collective ran: %s%s%s; give it with --op", path,
                    out.program[0] ? "unknown nccl-tests program '" : "no '# Collective test "
                                                                      "starting: NAME' line",
                    out.program, out.program[0] ? "'" : "");
    if (st == GS_OK) {
      st = gs_ingest_add_nccl_tests(doc, &out, op, path);
      if (st != GS_OK) st = report_recorded(st);
    }
    gs_nccl_tests_free(&out);
  }
  return st;
}

static const char *const kinds[] = {"mlperf", "nccl-tests", NULL};

/* See commands.h. */
size_t gs_cmd_ingest_kinds(const char **names, size_t max) {
  size_t n = 0;
  for (; kinds[n] != NULL; n++)
    if (n < max) names[n] = kinds[n];
  return n;
}
static const char *const ops[] = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
                                  "alltoall", "sendrecv", "gather", "scatter", "hypercube", NULL};

/* See commands.h. */
gs_status gs_cmd_ingest(int argc, char **argv) {
  if (argc < 1)
    return gs_error(GS_ERR_USAGE, "gpuscale ingest: missing KIND (mlperf or nccl-tests; see "
                    "'gpuscale ingest --help')");
  if (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
    print_help(NULL, NULL);
    return GS_OK;
  }
  int kind = -1;
  gs_status st = gs_parse_choice(argv[0], "KIND of gpuscale ingest", kinds, &kind);
  if (st != GS_OK) return st;
  int mlperf = kind == 0;
  const char *out_path = NULL, *hosts = NULL;
  int op_index = -1, quiet = 0;
  const char *default_out = mlperf ? "results/ingest-mlperf.json" : "results/ingest-nccl-tests.json";
  const gs_option mlperf_table[] = {
      {.name = "out", .short_name = 'o', .kind = GS_OPT_STRING, .target = &out_path,
       .metavar = "FILE", .help = "result file (default results/ingest-mlperf.json)"},
      {.name = "hosts", .kind = GS_OPT_STRING, .target = &hosts, .metavar = "LIST",
       .help = "host of each DIR, comma-separated (default: each DIR's own name)"},
      {.name = "quiet", .short_name = 'q', .kind = GS_OPT_FLAG, .target = &quiet,
       .help = "no notes"},
      {.kind = GS_OPT_END}};
  const gs_option nccl_table[] = {
      {.name = "out", .short_name = 'o', .kind = GS_OPT_STRING, .target = &out_path,
       .metavar = "FILE", .help = "result file (default results/ingest-nccl-tests.json)"},
      {.name = "op", .kind = GS_OPT_CHOICE, .target = &op_index, .choices = ops, .metavar = "OP",
       .help = "the collective, when the output does not name its program"},
      {.name = "quiet", .short_name = 'q', .kind = GS_OPT_FLAG, .target = &quiet,
       .help = "no notes"},
      {.kind = GS_OPT_END}};
  const gs_option *table = mlperf ? mlperf_table : nccl_table;
  if (gs_cli_wants_help(argc - 1, argv + 1)) {
    print_help(kinds[kind], table);
    return GS_OK;
  }
  gs_cli_file_list inputs = {0};
  const gs_option *tables[] = {table, NULL};
  st = gs_options_parse(tables, mlperf ? "gpuscale ingest mlperf" : "gpuscale ingest nccl-tests",
                                  argc - 1, argv + 1, gs_cli_add_file, &inputs);
  if (st == GS_OK && inputs.n == 0)
    st = gs_error(GS_ERR_USAGE, "gpuscale ingest %s: missing %s", kinds[kind],
                  mlperf ? "DIR (a LoadGen output directory)" : "FILE (nccl-tests output)");
  // The output is checked before any input is read.
  if (st == GS_OK)
    st = gs_file_check_output(out_path ? out_path : default_out,
                              out_path ? "option --out" : "the default output (--out)");
  static const char *const loadgen_files[] = {"mlperf_log_summary.txt", "mlperf_log_detail.txt",
                                              NULL};
  for (size_t i = 0; st == GS_OK && i < inputs.n; i++)
    st = gs_file_check_not_input(out_path ? out_path : default_out, inputs.paths[i],
                                 mlperf ? loadgen_files : NULL,
                                 out_path ? "option --out" : "the default output (--out)");
  if (st != GS_OK) {
    free(inputs.paths);
    return st;
  }
  gs_set_quiet(quiet);
  if (!out_path) out_path = default_out;

  cJSON *doc = gs_result_new("ingest"), *config = cJSON_CreateObject();
  int kind_added = config && cJSON_AddStringToObject(config, "kind", kinds[kind]);
  cJSON *input_list = config ? cJSON_AddArrayToObject(config, "inputs") : NULL;
  if (!doc || !kind_added || !input_list)
    st = gs_error(GS_ERR_NOMEM, "out of memory");
  for (size_t i = 0; st == GS_OK && i < inputs.n; i++)
    if (!cJSON_AddItemToArray(input_list, cJSON_CreateString(inputs.paths[i])))
      st = gs_error(GS_ERR_NOMEM, "out of memory");
  if (st == GS_OK && !mlperf && op_index >= 0 && !cJSON_AddStringToObject(config, "op", ops[op_index]))
    st = gs_error(GS_ERR_NOMEM, "out of memory");
  if (st == GS_OK)
    st = mlperf ? ingest_mlperf(&inputs, hosts, doc, config)
                : ingest_nccl_tests(&inputs, op_index >= 0 ? ops[op_index] : NULL, doc);
  if (st == GS_OK) {
    st = gs_result_set_config(doc, config);
    config = NULL;
  }
  if (st == GS_OK) st = gs_ingest_set_document_status(doc);
  if (st == GS_OK) st = gs_result_write(doc, out_path);
  if (st == GS_OK) {
    cJSON *ms = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(doc, "status");
    int ok = cJSON_IsString(status) && strcmp(status->valuestring, "ok") == 0;
    gs_note("wrote %s (%d measurement%s from %zu input%s)%s%s%s", out_path,
            cJSON_GetArraySize(ms), cJSON_GetArraySize(ms) == 1 ? "" : "s", inputs.n,
            inputs.n == 1 ? "" : "s", ok ? "" : "; the runs themselves reported failures, status ",
            ok ? "" : status->valuestring, ok ? "" : " (see each measurement's \"error\")");
  }
  cJSON_Delete(config);
  cJSON_Delete(doc);
  free(inputs.paths);
  return st;
}
