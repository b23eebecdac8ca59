/* `gpuscale exec` as a workload with its own timing loop: its options,
 * their resolution into GPU counts, and the driver hooks that open the
 * sweep, describe each measurement's runs in the document ("exec") and
 * print them (exec.h; the runs themselves are in exec_run.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/env_record.h"
#include "core/parse.h"
#include "measure/exec_private.h"
#include "platform/device.h"

const char *const gs_exec_better_choices[] = {"higher", "lower", NULL};

void gs_exec_options_init(gs_exec_options *o) {
  memset(o, 0, sizeof *o);
  gs_option *t = o->table;
  size_t n = 0;
  t[n++] = (gs_option){.name = "metric", .kind = GS_OPT_STRING_LIST, .target = &o->metric_texts,
                       .metavar = "NAME[=REGEX]",
                       .help = "a figure every run must print: a protocol metric NAME, or "
                               "NAME=REGEX read from its output (first group); the first one "
                               "is the figure of speedup (repeatable)"};
  t[n++] = (gs_option){.name = "unit", .kind = GS_OPT_STRING, .target = &o->unit,
                       .metavar = "UNIT",
                       .help = "unit of a NAME=REGEX figure: a time (s, ms, us, ns) or a rate "
                               "(THING/s)"};
  t[n++] = (gs_option){.name = "better", .kind = GS_OPT_CHOICE, .target = &o->better_choice,
                       .choices = gs_exec_better_choices, .metavar = "WHICH",
                       .help = "whether a higher or lower figure is better (default: from the "
                               "unit: lower for a time, higher for a rate)",
                       .given = &o->given_better};
  t[n++] = (gs_option){.name = "items", .kind = GS_OPT_STRING, .target = &o->items_text,
                       .metavar = "N",
                       .help = "the items one step of a time figure processes (per GPU under "
                               "--scaling weak), so the throughput counts them (default: a "
                               "step is 1 item; a protocol line may say its \"items\")"};
  t[n++] = (gs_option){.name = "item-unit", .kind = GS_OPT_STRING, .target = &o->item_unit,
                       .metavar = "NAME",
                       .help = "what --items counts, e.g. samples (default: items)"};
  t[n++] = (gs_option){.name = "no-visible-devices", .kind = GS_OPT_FLAG,
                       .target = &o->no_visible_devices,
                       .help = "leave CUDA_VISIBLE_DEVICES as it is (default: the step's GPUs)"};
  t[n++] = (gs_option){.name = "no-logs", .kind = GS_OPT_FLAG, .target = &o->no_logs,
                       .help = "discard the command's output once read (default: kept beside "
                               "the result, one file per run and stream)"};
  t[n] = (gs_option){.kind = GS_OPT_END};
}

void gs_exec_options_free(gs_exec_options *o) {
  for (size_t i = 0; i < o->n_metrics; i++)
    if (o->is_pattern[i]) regfree(&o->metrics[i].regex);
  o->n_metrics = 0;
  o->n_patterns = 0;
}

/* Checks the figure's --unit and --better (a NAME=REGEX figure only). */
static gs_status check_figure_unit(const gs_exec_options *o) {
  const int pattern = o->n_metrics > 0 && o->is_pattern[0];
  if (!pattern) {
    const char *which = o->unit ? "--unit" : "--better";
    if (!o->unit && !o->given_better) return GS_OK;
    return gs_error(GS_ERR_USAGE, "option %s: applies to a figure read by --metric NAME=REGEX "
                    "(a protocol line carries its own unit)", which);
  }
  if (!o->unit)
    return gs_error(GS_ERR_USAGE, "option --metric %s: give the figure's --unit (a time such as "
                    "s or ms, or a rate such as samples/s)", o->metric_texts.v[0]);
  char item[GS_TEXT_SHORT];
  gs_exec_unit_kind kind = gs_exec_unit_classify(o->unit, NULL, item, sizeof item);
  if (kind == GS_EXEC_UNIT_OTHER || strlen(o->unit) >= GS_TEXT_SHORT)
    return gs_error(GS_ERR_USAGE, "option --unit '%s': neither a time (s, ms, us, ns, min, h) "
                    "nor a rate (THING/s, e.g. samples/s)", o->unit);
  if (kind == GS_EXEC_UNIT_RATE && item[0] == '\0')
    return gs_error(GS_ERR_USAGE, "option --unit '%s': name what the rate counts, e.g. "
                    "samples/s", o->unit);
  const int higher = kind == GS_EXEC_UNIT_RATE;
  if (o->given_better && (o->better_choice == GS_EXEC_BETTER_HIGHER) != higher)
    return gs_error(GS_ERR_USAGE, "options --unit %s and --better %s conflict: a %s is better "
                    "when %s", o->unit, gs_exec_better_choices[o->better_choice],
                    higher ? "rate" : "time", higher ? "higher" : "lower");
  return GS_OK;
}

/* Checks --items and --item-unit: a whole number, a short name, and a
 * figure that is not a rate (a rate names its items in its unit). */
static gs_status check_items(gs_exec_options *o) {
  o->items = 0;
  if (!o->items_text) {
    if (!o->item_unit) return GS_OK;
    return gs_error(GS_ERR_USAGE, "option --item-unit: applies with --items N");
  }
  GS_TRY(gs_parse_count(o->items_text, "--items", 1, (uint64_t)GS_EXEC_ITEMS_MAX, &o->items));
  if (o->item_unit && !gs_exec_item_unit_valid(o->item_unit))
    return gs_error(GS_ERR_USAGE, "option --item-unit '%s': a name of 1 to %d letters, digits, "
                    "'_', '-' or '.' (e.g. samples)", o->item_unit, GS_EXEC_ITEM_UNIT_MAX);
  if (o->figure_source == GS_EXEC_FIGURE_PATTERN &&
      gs_exec_unit_classify(o->unit, NULL, NULL, 0) == GS_EXEC_UNIT_RATE)
    return gs_error(GS_ERR_USAGE, "option --items: applies to a time figure; --unit %s is a "
                    "rate, which names its items itself", o->unit);
  return GS_OK;
}

void gs_exec_time_items(const gs_exec_options *o, const gs_exec_metric *m, const char *plain,
                        gs_exec_figure *f) {
  f->items_printed = m && m->items > 0.0;
  const char *unit = f->items_printed ? (m->item_unit[0] ? m->item_unit : "items")
                     : o->items       ? (o->item_unit ? o->item_unit : "items")
                                      : plain;
  snprintf(f->item_unit, sizeof f->item_unit, "%s", unit);
}

gs_status gs_exec_options_check(gs_exec_options *o) {
  if (o->argc < 1 || o->argv[0][0] == '\0')
    return gs_error(GS_ERR_USAGE, "gpuscale exec: missing the command: gpuscale exec [options] -- "
                    "COMMAND [ARGS...]");
  for (size_t i = 0; i < o->metric_texts.n; i++) {
    GS_TRY(gs_exec_pattern_parse(o->metric_texts.v[i], &o->metrics[i], &o->is_pattern[i]));
    o->n_metrics = i + 1;
    for (size_t k = 0; k < i; k++)
      if (strcmp(o->metrics[k].name, o->metrics[i].name) == 0)
        return gs_error(GS_ERR_USAGE, "option --metric: %s named twice", o->metrics[i].name);
    if (o->is_pattern[i]) o->patterns[o->n_patterns++] = o->metrics[i];
  }
  GS_TRY(check_figure_unit(o));
  o->figure_source = o->n_metrics == 0   ? GS_EXEC_FIGURE_AUTO
                     : o->is_pattern[0] ? GS_EXEC_FIGURE_PATTERN
                                        : GS_EXEC_FIGURE_PROTOCOL;
  GS_TRY(check_items(o));
  if (!gs_exec_child_findable(o->argv[0]))
    return gs_error(GS_ERR_USAGE, "gpuscale exec: command '%s' not found%s", o->argv[0],
                    strchr(o->argv[0], '/') ? " or not executable" : " in PATH");
  return GS_OK;
}

void gs_exec_default_out(const gs_exec_options *o, char *path, size_t size) {
  const char *program = o->argc > 0 ? o->argv[0] : "command";
  const char *slash = strrchr(program, '/');
  if (slash) program = slash + 1;
  char name[GS_TEXT_SHORT];
  size_t k = 0;
  for (; program[k] && k + 1 < sizeof name; k++) {
    const char c = program[k];
    name[k] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-'
                  ? c
                  : '_';
  }
  name[k] = '\0';
  snprintf(path, size, "results/exec-%s.json", k ? name : "command");
}

gs_status gs_exec_prepare(const gs_common_options *common, gs_exec_options *o,
                          gs_run_config *config, gs_u64_list *counts, const char *path) {
  GS_TRY(gs_common_resolve(common, 1, config));
  if (config->backend == GS_BACKEND_CPU) {
    // No GPU to select: the counts are taken as they are, so that CPU
    // programs (and the tests) get their placeholders filled.
    uint64_t largest = 1;
    for (size_t i = 0; common->given_counts && i < common->counts.n; i++)
      if (common->counts.v[i] > largest) largest = common->counts.v[i];
    config->world_size = (int)largest;
    for (int k = 0; k < config->world_size; k++) config->devices[k] = -1;
  }
  if (config->backend == GS_BACKEND_CPU && !common->given_counts) {
    memset(counts, 0, sizeof *counts);
    counts->n = 1;
    counts->v[0] = 1;
  } else {
    GS_TRY(gs_common_counts(common, config, 1, counts));
  }
  o->timeout_seconds = common->timeout;
  o->log_dir[0] = '\0';
  if (o->no_logs) return GS_OK;
  size_t n = strlen(path);
  if (n > 5 && strcmp(path + n - 5, ".json") == 0) n -= 5;
  if (n + 6 >= sizeof o->log_dir)
    return gs_error(GS_ERR_USAGE, "option --out: path too long for the log directory");
  snprintf(o->log_dir, sizeof o->log_dir, "%.*s.logs", (int)n, path);
  return gs_file_check_output_dir(o->log_dir, "the log directory");
}

void gs_exec_record_free(gs_exec_record *r) {
  for (int i = 0; r->argv && i < r->argc; i++) free(r->argv[i]);
  for (size_t i = 0; r->envp && r->envp[i]; i++) free(r->envp[i]);
  free(r->argv);
  free(r->envp);
  free(r->notes);
  memset(r, 0, sizeof *r);
}

/* ---- the driver hooks ---------------------------------------------------- */

static gs_status exec_open(const gs_workload *workload, const void *opts,
                           const gs_environment *env, size_t count, void **out) {
  (void)workload;
  const gs_exec_options *o = opts;
  gs_exec_ctx *ctx = calloc(1, sizeof *ctx);
  gs_exec_record *records = calloc(count ? count : 1, sizeof *records);
  if (!ctx || !records) {
    free(ctx);
    free(records);
    return gs_error(GS_ERR_NOMEM, "cannot allocate %zu exec records", count);
  }
  ctx->o = o;
  ctx->env = env;
  ctx->count = count;
  ctx->records = records;
  if (o->figure_source == GS_EXEC_FIGURE_PATTERN) {
    gs_exec_figure *f = &ctx->figure;
    f->known = 1;
    f->source = GS_EXEC_FIGURE_PATTERN;
    snprintf(f->name, sizeof f->name, "%s", o->metrics[0].name);
    snprintf(f->unit, sizeof f->unit, "%s", o->unit);
    f->kind = gs_exec_unit_classify(o->unit, &f->seconds_per_unit, f->item_unit, sizeof f->item_unit);
    if (f->kind == GS_EXEC_UNIT_TIME) gs_exec_time_items(o, NULL, "steps", f);
  }
  *out = ctx;
  if (o->log_dir[0]) return gs_file_make_dirs(o->log_dir, "the log directory");
  return GS_OK;
}

static void exec_close(void *vctx) {
  gs_exec_ctx *ctx = vctx;
  if (!ctx) return;
  for (size_t i = 0; i < ctx->count; i++) gs_exec_record_free(&ctx->records[i]);
  free(ctx->records);
  free(ctx);
}

static const char *figure_source_name(gs_exec_figure_source source) {
  switch (source) {
    case GS_EXEC_FIGURE_PROTOCOL: return "protocol";
    case GS_EXEC_FIGURE_PATTERN: return "pattern";
    case GS_EXEC_FIGURE_WALL: return "wall_time";
    case GS_EXEC_FIGURE_AUTO: break;
  }
  return "none";
}

/* Where a step's items come from (docs/exec.md, "From a figure to a step"). */
static const char *items_source_name(const gs_exec_options *o, const gs_exec_figure *f) {
  if (f->known && f->kind == GS_EXEC_UNIT_RATE) return "rate";
  if (f->items_printed) return "protocol";
  return o->items ? "option" : "count";
}

static cJSON *string_array(gs_json_build *b, char *const *v, size_t n) {
  cJSON *a = gs_json_check(b, cJSON_CreateArray());
  for (size_t i = 0; a && i < n; i++) gs_json_append_string(b, a, v[i]);
  return a;
}

static cJSON *note_json(gs_json_build *b, const gs_exec_run_note *note) {
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  gs_json_put_string(b, o, "kind", note->timed ? "timed" : "warmup");
  gs_json_put_number(b, o, "index", (double)note->index);
  gs_json_put_string(b, o, "status", gs_status_name(note->status));
  if (note->child.exit_code >= 0)
    gs_json_put_number(b, o, "exit_code", note->child.exit_code);
  else
    gs_json_put_null(b, o, "exit_code");
  if (note->child.signal)
    gs_json_put_number(b, o, "signal", note->child.signal);
  else
    gs_json_put_null(b, o, "signal");
  gs_json_put_number(b, o, "wall_seconds", note->child.wall_seconds);
  gs_json_put_number(b, o, "values", (double)note->values);
  gs_json_put_number(b, o, "read_seconds", note->read_seconds);
  if (note->status != GS_OK) {
    gs_json_put_string(b, o, "reason", note->reason);
    gs_json_put_string(b, o, "stderr_tail", note->stderr_tail);
  }
  if (note->stdout_log[0]) {
    gs_json_put_string(b, o, "stdout_log", note->stdout_log);
    gs_json_put_string(b, o, "stderr_log", note->stderr_log);
  }
  return o;
}

static cJSON *metrics_json(gs_json_build *b, const gs_exec_record *r) {
  cJSON *list = gs_json_check(b, cJSON_CreateArray());
  for (size_t i = 0; list && i < r->n_metrics; i++) {
    const gs_exec_metric *m = &r->metrics[i];
    cJSON *o = cJSON_CreateObject();
    gs_json_put_string(b, o, "name", m->name);
    gs_json_put_string(b, o, "source", m->from_pattern ? "pattern" : "protocol");
    gs_json_put_string(b, o, "unit", m->unit);
    gs_json_put_number(b, o, "count", (double)m->count);
    gs_json_put_number(b, o, "mean", m->count ? m->sum / (double)m->count : 0.0);
    gs_json_put_number(b, o, "min", m->min);
    gs_json_put_number(b, o, "max", m->max);
    gs_json_put_number(b, o, "last", m->last);
    gs_json_append(b, list, o);
  }
  return list;
}

/* The measurement's "exec" member: the command as run, its environment,
 * the figure and every run (docs/exec.md, "What is recorded"). */
static gs_status exec_annotate(void *vctx, const gs_measurement *m, cJSON *measurement,
                               size_t index) {
  (void)m;
  gs_exec_ctx *ctx = vctx;
  const gs_exec_record *r = &ctx->records[index];
  const gs_exec_figure *f = &ctx->figure;
  gs_json_build build = {0}, *b = &build;
  cJSON *e = gs_json_put_object(b, measurement, "exec");
  if (!e) return gs_error(GS_ERR_NOMEM, "cannot describe the command's runs");
  gs_json_put_item(b, e, "command", string_array(b, r->argv, r->argv ? (size_t)r->argc : 0));
  gs_json_put_string(b, e, "gpus", r->gpus);
  if (r->visible[0])
    gs_json_put_string(b, e, "cuda_visible_devices", r->visible);
  else
    gs_json_put_null(b, e, "cuda_visible_devices");
  char cwd[GS_TEXT_LONG * 4];
  gs_json_put_string(b, e, "working_directory", getcwd(cwd, sizeof cwd) ? cwd : "");
  cJSON *environment = gs_json_put_object(b, e, "environment");
  // Only what changes how GPU programs run, never what looks like a secret.
  for (size_t i = 0; r->envp && r->envp[i]; i++) {
    const char *eq = strchr(r->envp[i], '=');
    if (!gs_env_recordable(r->envp[i])) continue;
    char name[GS_TEXT_LONG];
    snprintf(name, sizeof name, "%.*s", (int)(eq - r->envp[i]), r->envp[i]);
    gs_json_put_string(b, environment, name, eq + 1);
  }
  cJSON *figure = gs_json_put_object(b, e, "figure");
  gs_json_put_string(b, figure, "name", f->known ? f->name : "");
  gs_json_put_string(b, figure, "source",
                     figure_source_name(f->known ? f->source : GS_EXEC_FIGURE_AUTO));
  gs_json_put_string(b, figure, "unit", f->known ? f->unit : "");
  gs_json_put_bool(b, figure, "higher_is_better", f->known && f->kind == GS_EXEC_UNIT_RATE);
  gs_json_put_bool(b, figure, "per_step", f->per_step);
  gs_json_put_bool(b, figure, "per_rank", f->per_rank);
  gs_json_put_string(b, figure, "item_unit", f->known ? f->item_unit : "");
  gs_json_put_string(b, figure, "items_source", items_source_name(ctx->o, f));
  gs_json_put_number(b, e, "timeout_seconds", ctx->o->timeout_seconds);
  cJSON *runs = gs_json_put_array(b, e, "runs");
  for (size_t i = 0; runs && i < r->n_notes; i++)
    gs_json_append(b, runs, note_json(b, &r->notes[i]));
  gs_json_put_item(b, e, "metrics", metrics_json(b, r));
  if (b->failed) return gs_error(GS_ERR_NOMEM, "cannot describe the command's runs");
  return GS_OK;
}

/* After the tables: what the figure was and why each failed run failed,
 * with the end of its stderr. */
static void exec_print(void *vctx, FILE *out, size_t count) {
  gs_exec_ctx *ctx = vctx;
  const gs_exec_figure *f = &ctx->figure;
  if (f->known)
    fprintf(out, "\n  figure: %s (%s, %s is better, %s%s%s)\n", f->name, f->unit,
            f->kind == GS_EXEC_UNIT_RATE ? "higher" : "lower",
            f->source == GS_EXEC_FIGURE_WALL     ? "the wall time of each run"
            : f->source == GS_EXEC_FIGURE_PATTERN ? "read by --metric"
                                                  : "protocol lines",
            f->per_step ? ", values per step" : "", f->per_rank ? ", per rank" : "");
  // A rate's step is the time of its items (items per step / rate): say
  // so, since the tables call it a step time.
  if (f->known && f->kind == GS_EXEC_UNIT_RATE)
    fprintf(out, "  the step times above are 1/rate (the time of one of its %s, N under weak "
            "scaling), not the program's steps: print a step time with \"items\" for those "
            "(docs/exec.md)\n", f->item_unit);
  else if (f->known && f->items_printed)
    fprintf(out, "  a step's items: its lines' \"items\", in %s\n", f->item_unit);
  else if (f->known && ctx->o->items)
    fprintf(out, "  a step's items: --items %llu %s%s\n", (unsigned long long)ctx->o->items,
            f->item_unit, ctx->weak ? " per GPU" : "");
  if (ctx->o->log_dir[0]) fprintf(out, "  output of every run: %s/\n", ctx->o->log_dir);
  for (size_t i = 0; i < count && i < ctx->count; i++) {
    const gs_exec_record *r = &ctx->records[i];
    for (size_t k = 0; k < r->n_notes; k++) {
      const gs_exec_run_note *note = &r->notes[k];
      if (note->status == GS_OK) continue;
      fprintf(out, "  %s run %zu with {n}=%d failed: %s\n", note->timed ? "timed" : "warmup",
              note->index + 1, r->world_size, note->reason);
      if (note->stderr_tail[0]) {
        fprintf(out, "    stderr ends with:\n");
        for (const char *line = note->stderr_tail; *line;) {
          const char *nl = strchr(line, '\n');
          const int n = nl ? (int)(nl - line) : (int)strlen(line);
          fprintf(out, "      | %.*s\n", n, line);
          line += n + (nl ? 1 : 0);
        }
      }
    }
  }
}

static size_t exec_variant_count(const void *opts) {
  (void)opts;
  return 1;
}

/* Names the series by its command, so that two commands are two series. */
static void exec_variant_select(void *opts, size_t index, char *name, size_t size) {
  (void)index;
  const gs_exec_options *o = opts;
  size_t at = 0;
  name[0] = '\0';
  for (int i = 0; i < o->argc && at + 1 < size; i++)
    at += (size_t)snprintf(name + at, size - at, "%s%s", i ? " " : "", o->argv[i]);
  if (at >= size && size > 4) memcpy(name + size - 4, "...", 4);
}

static cJSON *exec_options_to_json(const void *opts) {
  const gs_exec_options *o = opts;
  gs_json_build build = {0}, *b = &build;
  cJSON *j = gs_json_check(b, cJSON_CreateObject());
  gs_json_put_item(b, j, "command", string_array(b, o->argv, (size_t)o->argc));
  cJSON *metrics = gs_json_put_array(b, j, "metrics");
  for (size_t i = 0; metrics && i < o->metric_texts.n; i++)
    gs_json_append_string(b, metrics, o->metric_texts.v[i]);
  if (o->unit)
    gs_json_put_string(b, j, "unit", o->unit);
  else
    gs_json_put_null(b, j, "unit");
  if (o->items)
    gs_json_put_number(b, j, "items", (double)o->items);
  else
    gs_json_put_null(b, j, "items");
  if (o->items_text)
    gs_json_put_string(b, j, "item_unit", o->item_unit ? o->item_unit : "items");
  else
    gs_json_put_null(b, j, "item_unit");
  gs_json_put_bool(b, j, "visible_devices", !o->no_visible_devices);
  gs_json_put_bool(b, j, "logs", !o->no_logs);
  return gs_json_build_finish(b, j);
}

/* One untimed run of the command before the timed ones at each count by
 * default (before its first only, when counts are interleaved: exec_run.c):
 * a whole program's run is long. */
static const gs_workload_driver exec_driver = {
    .default_warmup = 1,
    .interleaves = 1,
    .samples_note = "the command's figure as the seconds of a step (its values per step, else "
                    "one per run; a rate as the time of its items: docs/exec.md)",
    .trace_host_only = "exec sees the command's runs from outside; its GPU work is in "
                       "processes of its own (docs/timeline.md)",
    .open = exec_open,
    .measure = gs_exec_measure,
    .annotate = exec_annotate,
    .print = exec_print,
    .close = exec_close,
};

static const gs_workload exec_workload = {
    .key = "exec",
    .summary = "the user's own command (gpuscale exec)",
    .item_unit = "runs",
    .options_to_json = exec_options_to_json,
    .driver = &exec_driver,
    .variant_count = exec_variant_count,
    .variant_select = exec_variant_select,
};

const gs_workload *gs_exec_workload(void) { return &exec_workload; }
