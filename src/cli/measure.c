/* The measuring driver shared by run, scale and suite. */
#include "cli/measure.h"

#include <stdlib.h>
#include <string.h>

#include "cli/summary.h"
#include "core/check.h"
#include "workloads/llm/llm_options.h"

void gs_measure_default_counts(int n, gs_u64_list *counts) {
  counts->n = 0;
  for (int c = 1; c < n && counts->n < GS_LIST_MAX - 1; c *= 2) counts->v[counts->n++] = (uint64_t)c;
  counts->v[counts->n++] = (uint64_t)n;
}

static gs_status write_document(const gs_sweep *sw, const gs_measurement *ms, size_t count) {
  cJSON *doc = gs_result_new(sw->command, sw->argc, sw->argv);
  if (!doc) return gs_error(GS_ERR_NOMEM, "cannot create the result document");
  gs_status status = gs_result_set_config(
      doc, gs_common_config_json(sw->common, sw->config, sw->workload, sw->workload_opts));
  if (status == GS_OK) status = gs_result_set_environment(doc, sw->env);
  for (size_t i = 0; i < count && status == GS_OK; i++) {
    status = gs_result_add_measurement(doc, &ms[i]);
    if (status == GS_OK && sw->driver && sw->driver->annotate) {
      cJSON *all = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
      status = sw->driver->annotate(sw->driver->ctx, cJSON_GetArrayItem(all, cJSON_GetArraySize(all) - 1), i);
    }
  }
  if (status == GS_OK) status = gs_common_write_result(doc, ms, count, sw->path);
  cJSON_Delete(doc);
  return status;
}

static void summary_title(const gs_sweep *sw, char *buf, size_t size) {
  cJSON *opts = sw->workload->options_to_json(sw->workload_opts);
  char *text = opts ? cJSON_PrintUnformatted(opts) : NULL;
  snprintf(buf, size, "%s %s", sw->workload->key, text ? text : "");
  free(text);
  cJSON_Delete(opts);
}

gs_status gs_measure_sweep(const gs_sweep *sw, const gs_u64_list *counts) {
  gs_measurement *ms = calloc(counts->n, sizeof *ms);
  if (!ms) return gs_error(GS_ERR_NOMEM, "cannot allocate %zu measurements", counts->n);
  gs_status first_failure = GS_OK;
  size_t done = 0;
  for (size_t i = 0; i < counts->n; i++) {
    gs_run_config config = *sw->config;
    config.world_size = (int)counts->v[i];
    char label[GS_TEXT_LONG];
    snprintf(label, sizeof label, "%s on %d %s", sw->workload->key, config.world_size,
             config.backend == GS_BACKEND_CUDA ? (config.world_size == 1 ? "GPU" : "GPUs")
                                               : (config.world_size == 1 ? "CPU rank" : "CPU ranks"));
    config.label = label;
    gs_status status = sw->driver
                           ? sw->driver->measure(sw->driver->ctx, &config, i, &ms[i])
                           : gs_runner_measure(sw->workload, sw->workload_opts, &config, &ms[i]);
    done = i + 1;
    if (status != GS_OK && first_failure == GS_OK) first_failure = status;
    gs_runner_relate(ms, done);
    // Written after every measurement: a later crash keeps what was measured.
    gs_status written = write_document(sw, ms, done);
    if (written != GS_OK) {
      if (first_failure == GS_OK) first_failure = written;
      break;
    }
    if (status == GS_ERR_USAGE) break;
  }
  char title[2 * GS_TEXT_LONG];
  summary_title(sw, title, sizeof title);
  gs_summary_print(stdout, title, ms, done, sw->env);
  if (sw->driver && sw->driver->print) sw->driver->print(sw->driver->ctx, stdout, done);
  if (sw->summary_copy) gs_summary_print(sw->summary_copy, title, ms, done, sw->env);
  for (size_t i = 0; i < done; i++) gs_measurement_free(&ms[i]);
  free(ms);
  return first_failure;
}

static void print_measure_help(const char *command, unsigned features, const gs_workload *w,
                               void *wopts, gs_common_options *common) {
  printf("usage: gpuscale %s WORKLOAD [options]\n\n", command);
  if (strcmp(command, "run") == 0)
    printf("Measures one workload on the chosen GPUs (or CPU ranks) and writes a result file.\n");
  else
    printf("Measures one workload at 1, 2, 4, ... ranks (strong or weak scaling) into one\n"
           "result file and prints speedup and parallel efficiency against 1 rank.\n");
  printf("\nWorkloads:\n");
  size_t n = 0;
  const gs_workload *const *all = gs_workload_list(&n);
  for (size_t i = 0; i < n; i++) printf("  %-12s %s\n", all[i]->key, all[i]->summary);
  printf("  %-12s %s\n", gs_workload_llm.key, gs_workload_llm.summary);
  printf("\nCommon options:\n");
  gs_common_init(common, features);
  if (w == &gs_workload_llm) {
    // The llm's own defaults (cmd_measure.c): one run, one warm-up batch.
    common->runs = 1;
    common->warmup = 1;
  }
  gs_options_help(stdout, common->table);
  if (w) {
    printf("\nOptions of %s:\n", w->key);
    gs_options_help(stdout, w->options_table(wopts));
  } else {
    printf("\n'gpuscale %s WORKLOAD --help' lists the workload's own options.\n", command);
  }
}

static int wants_help(int argc, char **argv) {
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) return 0;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
  }
  return 0;
}

static gs_status reject_positional(void *ctx, const char *arg) {
  return gs_error(GS_ERR_USAGE, "gpuscale %s: unexpected argument '%s'", (const char *)ctx, arg);
}

gs_status gs_measure_parse(const char *command, unsigned features, int argc, char **argv,
                           gs_common_options *common, const gs_workload **workload,
                           void **wopts, int *help_shown) {
  *workload = NULL;
  *wopts = NULL;
  *help_shown = 0;
  gs_common_init(common, features);
  const gs_workload *w = NULL;
  if (argc > 0 && argv[0][0] != '-') {
    w = gs_workload_find(argv[0]);
    if (!w && strcmp(argv[0], gs_workload_llm.key) == 0) w = &gs_workload_llm;
    if (!w) {
      size_t n = 0;
      const gs_workload *const *all = gs_workload_list(&n);
      char names[GS_TEXT_LONG] = "";
      size_t at = 0;
      for (size_t i = 0; i < n && at < sizeof names; i++)
        at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "", all[i]->key);
      return gs_error(GS_ERR_USAGE, "gpuscale %s: unknown workload '%s' (one of: %s)", command,
                      argv[0], names);
    }
  }
  void *opts = w ? w->options_new() : NULL;
  if (w && !opts) return gs_error(GS_ERR_NOMEM, "cannot allocate the options of %s", w->key);
  if (wants_help(argc, argv)) {
    print_measure_help(command, features, w, opts, common);
    if (w) w->options_free(opts);
    *help_shown = 1;
    return GS_OK;
  }
  if (!w) {
    return gs_error(GS_ERR_USAGE, "gpuscale %s: missing WORKLOAD (see 'gpuscale %s --help')",
                    command, command);
  }
  char name[GS_TEXT_SHORT * 2];
  snprintf(name, sizeof name, "gpuscale %s %s", command, w->key);
  const gs_option *tables[] = {common->table, w->options_table(opts), NULL};
  gs_status status = gs_options_parse(tables, name, argc - 1, argv + 1, reject_positional,
                                      (void *)command);
  if (status == GS_OK) status = w->options_check(opts);
  if (status != GS_OK) {
    w->options_free(opts);
    return status;
  }
  gs_set_quiet(common->quiet);
  *workload = w;
  *wopts = opts;
  return GS_OK;
}
