/* The runs of one exec measurement: the command at one GPU count with its
 * placeholders filled and its GPUs made visible, warmup then timed runs,
 * each run's output read into samples of the figure (exec_private.h). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/runner.h"
#include "core/check.h"
#include "core/interrupt.h"
#include "core/timer.h"
#include "measure/exec_private.h"
#include "platform/trace.h"

extern char **environ;

/* A copy of `text` with every {n} and {gpus} replaced. NULL: no memory. */
static char *expand(const char *text, const char *n, const char *gpus) {
  size_t size = strlen(text) + 1;
  for (const char *at = text; (at = strchr(at, '{')) != NULL; at++)
    size += strlen(gpus) + strlen(n);  // generous: at most one value per brace
  char *out = malloc(size);
  if (!out) return NULL;
  size_t k = 0;
  for (const char *at = text; *at;) {
    if (strncmp(at, "{n}", 3) == 0) {
      k += (size_t)sprintf(out + k, "%s", n);
      at += 3;
    } else if (strncmp(at, "{gpus}", 6) == 0) {
      k += (size_t)sprintf(out + k, "%s", gpus);
      at += 6;
    } else {
      out[k++] = *at++;
    }
  }
  out[k] = '\0';
  return out;
}

/* Fills the record's command, environment and GPU list for `config`. */
static gs_status prepare_record(const gs_exec_options *o, const gs_run_config *config,
                                gs_exec_record *r) {
  size_t at = 0;
  for (int k = 0; k < config->world_size && at < sizeof r->gpus; k++)
    at += (size_t)snprintf(r->gpus + at, sizeof r->gpus - at, "%s%d", k ? "," : "",
                           config->backend == GS_BACKEND_CUDA ? config->devices[k] : k);
  char n[16];
  snprintf(n, sizeof n, "%d", config->world_size);
  r->world_size = config->world_size;
  r->argc = o->argc;
  r->argv = calloc((size_t)o->argc + 1, sizeof *r->argv);
  if (!r->argv) return gs_error(GS_ERR_NOMEM, "cannot prepare the command");
  for (int i = 0; i < o->argc; i++)
    if (!(r->argv[i] = expand(o->argv[i], n, r->gpus)))
      return gs_error(GS_ERR_NOMEM, "cannot prepare the command");
  size_t env_n = 0;
  while (environ[env_n]) env_n++;
  r->envp = calloc(env_n + 2, sizeof *r->envp);
  if (!r->envp) return gs_error(GS_ERR_NOMEM, "cannot prepare the command's environment");
  size_t e = 0;
  for (size_t i = 0; i < env_n; i++) {
    if (!o->no_visible_devices && strncmp(environ[i], "CUDA_VISIBLE_DEVICES=", 21) == 0) continue;
    if (!(r->envp[e++] = strdup(environ[i])))
      return gs_error(GS_ERR_NOMEM, "cannot prepare the command's environment");
  }
  if (!o->no_visible_devices) {
    snprintf(r->visible, sizeof r->visible, "%s", r->gpus);
    char set[GS_TEXT_LONG + 32];
    snprintf(set, sizeof set, "CUDA_VISIBLE_DEVICES=%s", r->visible);
    if (!(r->envp[e++] = strdup(set)))
      return gs_error(GS_ERR_NOMEM, "cannot prepare the command's environment");
  }
  return GS_OK;
}

/* Opens one of a run's output files: the kept log `path`, or with
 * --no-logs an unnamed temporary file (gone when closed). */
static gs_status open_output(const gs_exec_options *o, const char *path, int *fd) {
  if (o->log_dir[0]) {
    *fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (*fd < 0) return gs_error(GS_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    return GS_OK;
  }
  const char *dir = getenv("TMPDIR");
  char tmp[GS_TEXT_LONG];
  snprintf(tmp, sizeof tmp, "%s/gpuscale-exec-XXXXXX", dir && *dir ? dir : "/tmp");
  *fd = mkstemp(tmp);
  if (*fd < 0) return gs_error(GS_ERR_IO, "cannot create a file in %s: %s", tmp, strerror(errno));
  unlink(tmp);
  fcntl(*fd, F_SETFD, FD_CLOEXEC);
  return GS_OK;
}

/* Fixes the figure from the first run that printed it: its unit must be a
 * time or a rate, and --items is for a time whose lines carry no "items".
 * Empty string when fine, else why not (in `why`). */
static void fix_figure(const gs_exec_options *o, gs_exec_figure *f, const gs_exec_metric *m,
                       char *why, size_t size) {
  why[0] = '\0';
  snprintf(f->name, sizeof f->name, "%s", m->name);
  snprintf(f->unit, sizeof f->unit, "%s", m->unit[0] ? m->unit : "s");
  f->kind = gs_exec_unit_classify(f->unit, &f->seconds_per_unit, f->item_unit, sizeof f->item_unit);
  if (f->kind == GS_EXEC_UNIT_OTHER)
    snprintf(why, size, "metric %s: unit '%s' is neither a time (s, ms, us, ns) nor a rate "
             "(THING/s)", m->name, f->unit);
  else if (m->higher_is_better >= 0 && m->higher_is_better != (f->kind == GS_EXEC_UNIT_RATE))
    snprintf(why, size, "metric %s: a %s cannot be %s is better", m->name,
             f->kind == GS_EXEC_UNIT_RATE ? "rate" : "time",
             m->higher_is_better ? "higher" : "lower");
  else if (o->items && f->kind == GS_EXEC_UNIT_RATE)
    snprintf(why, size, "metric %s: --items applies to a time figure; a rate (%s) names its "
             "items itself", m->name, f->unit);
  else if (o->items && m->items > 0.0)
    snprintf(why, size, "metric %s: its lines say their \"items\" (%.0f); give --items only "
             "for a figure without them", m->name, m->items);
  if (f->kind == GS_EXEC_UNIT_TIME) gs_exec_time_items(o, m, "steps", f);
  f->known = why[0] == '\0';
}

/* Adds a timed run's metrics to the record's summary over timed runs. */
static void merge_metrics(gs_exec_record *r, const gs_exec_scan *scan) {
  for (size_t i = 0; i < scan->n_metrics; i++) {
    const gs_exec_metric *s = &scan->metrics[i];
    gs_exec_metric *t = NULL;
    for (size_t k = 0; k < r->n_metrics && !t; k++)
      if (strcmp(r->metrics[k].name, s->name) == 0) t = &r->metrics[k];
    if (!t && r->n_metrics < GS_EXEC_METRICS_MAX) {
      t = &r->metrics[r->n_metrics++];
      *t = *s;
      memset(&t->steps, 0, sizeof t->steps);
      t->ranks = NULL;
      continue;
    }
    if (!t || s->count == 0) continue;
    if (t->count == 0 || s->min < t->min) t->min = s->min;
    if (t->count == 0 || s->max > t->max) t->max = s->max;
    t->count += s->count;
    t->sum += s->sum;
    t->last = s->last;
  }
}

/* A run's samples of the figure as seconds of a step: the job's in v[0],
 * or, when the command printed them per rank, rank k's in v[k]. */
typedef struct {
  int per_rank;
  gs_dvec v[GS_MAX_RANKS];
} gs_exec_samples;

static void samples_free(gs_exec_samples *s) {
  for (int k = 0; k < GS_MAX_RANKS; k++) gs_dvec_free(&s->v[k]);
}

/* Appends values v[0..n) of the figure as seconds to `out`: a time as it
 * is, a rate as the time of `share` items. Why not in note->reason when a
 * value is not positive. */
static gs_status convert(const gs_exec_figure *f, const double *v, size_t n, double share,
                         gs_exec_run_note *note, gs_dvec *out) {
  for (size_t i = 0; i < n; i++) {
    if (!(v[i] > 0.0)) {
      snprintf(note->reason, sizeof note->reason, "metric %s: value %g is not positive", f->name,
               v[i]);
      return GS_OK;
    }
    // A rate becomes the time of its items, so that the throughput is the
    // rate again (docs/exec.md).
    const double seconds = f->kind == GS_EXEC_UNIT_RATE ? share / v[i] : v[i] * f->seconds_per_unit;
    if (!isfinite(seconds) || !(seconds > 0.0)) {
      // 1e308 hours, or a rate so high its items take no time: no step time.
      snprintf(note->reason, sizeof note->reason, "metric %s: value %g %s is %g s as a step time, "
               "out of range", f->name, v[i], f->unit, seconds);
      return GS_OK;
    }
    GS_TRY(gs_dvec_push(out, seconds));
  }
  return GS_OK;
}

/* Whether the "items" of the figure's lines `m` in this run agree with
 * the figure (lines with items, or without, in every run; the same item
 * unit) and with the earlier runs at this count (the same items); why not
 * in note->reason. */
static int items_agree(const gs_exec_figure *f, const gs_exec_metric *m, gs_exec_record *r,
                       gs_exec_run_note *note) {
  if (f->kind != GS_EXEC_UNIT_TIME || m->from_pattern) return 1;
  const char *unit = m->item_unit[0] ? m->item_unit : "items";
  if ((m->items > 0.0) != f->items_printed)
    snprintf(note->reason, sizeof note->reason, "metric %s: its lines say %s \"items\", those "
             "of earlier runs %s", m->name, f->items_printed ? "no" : "their",
             f->items_printed ? "did" : "did not");
  else if (f->items_printed && strcmp(unit, f->item_unit) != 0)
    snprintf(note->reason, sizeof note->reason, "metric %s: \"item_unit\" '%s', earlier runs "
             "printed '%s'", m->name, unit, f->item_unit);
  else if (r->items > 0.0 && m->items != r->items)
    snprintf(note->reason, sizeof note->reason, "metric %s: \"items\" %.0f, earlier runs at "
             "%d printed %.0f", m->name, m->items, r->world_size, r->items);
  else
    r->items = m->items;
  return note->reason[0] == '\0';
}

/* The figure's samples of one run into *out; why the run failed in
 * note->reason when it gave none or a bad one. A step's work is `items`
 * (one per GPU under weak scaling); a rank's share of it is items / N. */
static gs_status take_samples(gs_exec_ctx *ctx, gs_exec_record *r, const gs_exec_scan *scan,
                              double wall, uint64_t items, int world_size, gs_exec_run_note *note,
                              gs_exec_samples *out) {
  const gs_exec_options *o = ctx->o;
  gs_exec_figure *f = &ctx->figure;
  if (scan->error[0]) {
    snprintf(note->reason, sizeof note->reason, "%s", scan->error);
    return GS_OK;
  }
  for (size_t i = 0; i < o->n_metrics; i++)
    if (!gs_exec_scan_metric(scan, o->metrics[i].name)) {
      snprintf(note->reason, sizeof note->reason, "metric %s was not printed",
               o->metrics[i].name);
      return GS_OK;
    }
  if (!f->known && o->figure_source == GS_EXEC_FIGURE_AUTO && !scan->figure_auto) {
    f->known = 1;
    f->source = GS_EXEC_FIGURE_WALL;
    snprintf(f->name, sizeof f->name, "wall_time");
    snprintf(f->unit, sizeof f->unit, "s");
    f->kind = GS_EXEC_UNIT_TIME;
    f->seconds_per_unit = 1.0;
    gs_exec_time_items(o, NULL, "runs", f);
  }
  if (f->known && f->source == GS_EXEC_FIGURE_WALL) return gs_dvec_push(&out->v[0], wall);
  const gs_exec_metric *m = gs_exec_scan_metric(scan, f->known ? f->name : scan->figure);
  if (!m) {
    snprintf(note->reason, sizeof note->reason, "metric %s was not printed", f->name);
    return GS_OK;
  }
  if (!f->known) {
    f->source = o->figure_source == GS_EXEC_FIGURE_AUTO ? GS_EXEC_FIGURE_PROTOCOL : o->figure_source;
    fix_figure(o, f, m, note->reason, sizeof note->reason);
    if (!f->known) return GS_OK;
  } else if (!m->from_pattern && strcmp(m->unit[0] ? m->unit : "s", f->unit) != 0) {
    snprintf(note->reason, sizeof note->reason, "metric %s: unit '%s', earlier runs printed '%s'",
             m->name, m->unit, f->unit);
    return GS_OK;
  }
  if (!items_agree(f, m, r, note)) return GS_OK;
  if (!m->ranks) {
    if (m->steps.n) f->per_step = 1;
    const double *v = m->steps.n ? m->steps.v : &m->run_value;
    return convert(f, v, m->steps.n ? m->steps.n : 1, (double)items, note, &out->v[0]);
  }
  if (m->ranks_seen > world_size) {
    snprintf(note->reason, sizeof note->reason, "metric %s: rank %d printed a value, the step "
             "has ranks 0 to %d", m->name, m->ranks_seen - 1, world_size - 1);
    return GS_OK;
  }
  f->per_rank = 1;
  out->per_rank = 1;
  for (int k = 0; k < world_size && !note->reason[0]; k++) {
    if (m->ranks[k].n == 0) {
      snprintf(note->reason, sizeof note->reason, "metric %s: rank %d printed no value", m->name, k);
      return GS_OK;
    }
    if (m->ranks[k].n > 1) f->per_step = 1;
    GS_TRY(convert(f, m->ranks[k].v, m->ranks[k].n, (double)items / world_size, note, &out->v[k]));
  }
  return GS_OK;
}

/* One run: its files, the command, its output read. Fills `note` and, for
 * a run that gave its figure, `samples`. */
static gs_status run_once(gs_exec_ctx *ctx, gs_exec_record *r, int world_size, uint64_t items,
                          gs_exec_run_note *note, gs_exec_samples *samples) {
  const gs_exec_options *o = ctx->o;
  if (o->log_dir[0]) {
    snprintf(note->stdout_log, sizeof note->stdout_log, "%s/n%d-%s%zu.stdout", o->log_dir,
             world_size, note->timed ? "run" : "warmup", note->index + 1);
    snprintf(note->stderr_log, sizeof note->stderr_log, "%s/n%d-%s%zu.stderr", o->log_dir,
             world_size, note->timed ? "run" : "warmup", note->index + 1);
  }
  int out_fd = -1, err_fd = -1;
  gs_status status = open_output(o, note->stdout_log, &out_fd);
  if (status == GS_OK) status = open_output(o, note->stderr_log, &err_fd);
  const gs_exec_child_request rq = {.argv = r->argv, .envp = r->envp, .stdout_fd = out_fd,
                                    .stderr_fd = err_fd, .timeout_seconds = o->timeout_seconds};
  if (status == GS_OK) status = gs_exec_child_run(&rq, &note->child);
  gs_exec_scan scan = {.patterns = o->patterns, .n_patterns = o->n_patterns};
  if (ctx->figure.known && ctx->figure.source != GS_EXEC_FIGURE_WALL)
    snprintf(scan.figure, sizeof scan.figure, "%s", ctx->figure.name);
  else if (o->n_metrics > 0)
    snprintf(scan.figure, sizeof scan.figure, "%s", o->metrics[0].name);
  if (status == GS_OK) {
    note->status = note->child.status;
    snprintf(note->reason, sizeof note->reason, "%s", note->child.reason);
  }
  const double read_start = gs_time_seconds();
  if (status == GS_OK && note->status == GS_OK) {
    status = gs_exec_scan_fd(&scan, out_fd, "stdout");
    if (status == GS_OK) status = gs_exec_scan_fd(&scan, err_fd, "stderr");
    if (status == GS_OK)
      status = take_samples(ctx, r, &scan, note->child.wall_seconds, items, world_size, note,
                            samples);
    if (status == GS_OK && note->reason[0]) note->status = GS_ERR_COMMAND;
    if (status == GS_OK && note->timed && note->status == GS_OK) merge_metrics(r, &scan);
  }
  if (status == GS_OK && note->status == GS_ERR_RANK_LOST) {
    // The lost rank's last step: the values of the figure it printed.
    status = gs_exec_scan_fd(&scan, out_fd, "stdout");
    if (status == GS_OK) status = gs_exec_scan_fd(&scan, err_fd, "stderr");
    const gs_exec_metric *m = status == GS_OK ? gs_exec_scan_metric(&scan, scan.figure) : NULL;
    note->lost_steps = m && m->ranks ? m->ranks[note->child.lost_rank].n : 0;
  }
  if (status == GS_OK && note->status != GS_OK && err_fd >= 0)
    gs_exec_tail(err_fd, GS_EXEC_TAIL_LINES, note->stderr_tail, sizeof note->stderr_tail);
  note->values = samples->v[0].n;
  gs_exec_scan_free(&scan);
  note->read_seconds = gs_time_seconds() - read_start;
  if (out_fd >= 0) close(out_fd);
  if (err_fd >= 0) close(err_fd);
  return status;
}

/* The rank records of a timed run, one per GPU of the step: each rank's
 * own samples when the command printed them per rank; otherwise the
 * command runs as one job, so each holds the job's samples. The step is
 * the slowest rank's (gs_runner_summarize). */
static gs_status fill_run(gs_run_record *run, const gs_run_config *config,
                          const gs_exec_run_note *note, const gs_exec_samples *samples) {
  const size_t n = (size_t)config->world_size;
  run->ranks = calloc(n, sizeof *run->ranks);
  if (!run->ranks) return gs_error(GS_ERR_NOMEM, "cannot allocate a run record");
  run->n_ranks = n;
  for (size_t k = 0; k < n; k++) {
    gs_rank_record *rec = &run->ranks[k];
    const gs_dvec *own = &samples->v[samples->per_rank ? k : 0];
    rec->rank = (int)k;
    rec->device = config->backend == GS_BACKEND_CUDA ? config->devices[k] : -1;
    snprintf(rec->host, sizeof rec->host, "%s", gs_hostname());
    rec->status = note->status;
    snprintf(rec->error, sizeof rec->error, "%s", note->status == GS_OK ? "" : note->reason);
    if (note->status == GS_ERR_RANK_LOST && rec->rank != note->child.lost_rank) {
      rec->status = GS_ERR_ABORTED;
      snprintf(rec->error, sizeof rec->error, "stopped because rank %d was lost",
               note->child.lost_rank);
    } else if (note->status == GS_ERR_RANK_LOST) {
      rec->steps_completed = note->lost_steps;
    }
    rec->first_iteration_seconds = -1.0;
    rec->verification.status = GS_VERIFY_SKIPPED;
    snprintf(rec->verification.detail, sizeof rec->verification.detail,
             "the command's own output is not verified");
    if (note->status != GS_OK || own->n == 0) continue;
    rec->wall_seconds = malloc(own->n * sizeof *rec->wall_seconds);
    if (!rec->wall_seconds) return gs_error(GS_ERR_NOMEM, "cannot allocate %zu samples", own->n);
    memcpy(rec->wall_seconds, own->v, own->n * sizeof *rec->wall_seconds);
    rec->n_samples = own->n;
    rec->steps_completed = own->n;
  }
  return GS_OK;
}

gs_status gs_exec_measure(void *vctx, const gs_run_config *config, size_t index,
                          gs_measurement *m) {
  gs_exec_ctx *ctx = vctx;
  const gs_exec_options *o = ctx->o;
  if (index >= ctx->count) GS_BUG("exec measurement %zu of %zu", index, ctx->count);
  gs_exec_record *r = &ctx->records[index];
  memset(m, 0, sizeof *m);
  snprintf(m->workload, sizeof m->workload, "exec");
  snprintf(m->backend, sizeof m->backend, "%s", config->backend == GS_BACKEND_CUDA ? "cuda" : "cpu");
  snprintf(m->scaling, sizeof m->scaling, "%s", gs_scaling_name(config->scaling));
  m->world_size = config->world_size;
  for (int k = 0; k < config->world_size; k++)
    m->devices[k] = config->backend == GS_BACKEND_CUDA ? config->devices[k] : -1;
  // A step's work: one unit at every count under strong scaling, one per GPU
  // under weak scaling.
  // --items N counts N per step instead (N per GPU under weak scaling); a
  // time figure whose lines say their "items" counts those (below).
  ctx->weak = config->scaling == GS_SCALING_WEAK;
  const uint64_t per_gpu = o->items ? o->items : 1;
  const uint64_t items =
      config->scaling == GS_SCALING_WEAK ? per_gpu * (uint64_t)config->world_size : per_gpu;
  m->cost.items = items;
  // An interleaved sweep calls again for the same count, one run per call:
  // the record is kept, its notes go on, and the warmup is the first call's
  // only (a later call's program is no colder than a later run's).
  const int later = r->argv != NULL;
  gs_status status = later ? GS_OK : prepare_record(o, config, r);
  const size_t warmup = later ? 0 : config->warmup, total = warmup + config->runs;
  size_t timed_before = 0;
  for (size_t k = 0; k < r->n_notes; k++) timed_before += r->notes[k].timed;
  gs_exec_run_note *notes =
      status == GS_OK ? realloc(r->notes, (r->n_notes + total) * sizeof *notes) : NULL;
  if (notes) {
    memset(notes + r->n_notes, 0, total * sizeof *notes);
    r->notes = notes;
  }
  m->runs = status == GS_OK ? calloc(config->runs, sizeof *m->runs) : NULL;
  if (status == GS_OK && (!notes || !m->runs))
    status = gs_error(GS_ERR_NOMEM, "cannot allocate %zu runs", total);
  gs_status failed = GS_OK;
  char reason[GS_TEXT_ERROR] = "";
  if (status == GS_OK && config->trace)
    status = gs_trace_attach(config->trace, config->trace_measurement, 0, -1, NULL);
  for (size_t i = 0; i < total && status == GS_OK && failed == GS_OK; i++) {
    gs_exec_run_note *note = &r->notes[r->n_notes++];
    note->timed = i >= warmup;
    note->index = note->timed ? timed_before + i - warmup : i;
    gs_exec_samples *samples = calloc(1, sizeof *samples);
    if (!samples) {
      status = gs_error(GS_ERR_NOMEM, "cannot allocate a run's samples");
      break;
    }
    if (gs_interrupt_signal()) {
      // Asked to stop between two runs: the next one is not started.
      note->status = GS_ERR_INTERRUPTED;
      snprintf(note->reason, sizeof note->reason, "stopped before it started");
      failed = note->status;
      snprintf(reason, sizeof reason, "interrupted at %d", config->world_size);
      free(samples);
      break;
    }
    // In a --trace file each run is a span of the host lane: warmup runs as
    // frames, timed runs as steps (one per run, so --trace-steps bounds
    // nothing here); the command's own processes are not traced.
    if (note->timed) {
      gs_trace_step_open((int64_t)note->index, 0);
      gs_trace_begin(GS_TRACE_STEP, "command run", (int64_t)note->index, NULL);
    } else {
      gs_trace_begin(GS_TRACE_RUN, "command warmup", (int64_t)note->index, NULL);
    }
    const double started = gs_time_unix_seconds();
    status = run_once(ctx, r, config->world_size, items, note, samples);
    gs_trace_end();
    if (note->timed) gs_trace_step_close();
    if (status == GS_OK && note->timed) {
      status = fill_run(&m->runs[m->n_runs], config, note, samples);
      m->runs[m->n_runs++].started_unix_seconds = started;  // the program's start
    }
    samples_free(samples);
    free(samples);
    // A failed run fails its GPU count: the runs after it are not started.
    if (status == GS_OK && note->status != GS_OK) {
      failed = note->status;
      snprintf(reason, sizeof reason, "%s run %zu at %d: %s", note->timed ? "timed" : "warmup",
               note->index + 1, config->world_size, note->reason);
    }
  }
  gs_trace_detach();
  m->cost.item_unit = ctx->figure.known ? ctx->figure.item_unit : "runs";
  if (ctx->figure.known && ctx->figure.items_printed && r->items > 0.0)
    m->cost.items = (uint64_t)r->items;
  if (status == GS_OK) status = gs_runner_summarize(m, 0);
  if (status != GS_OK) {
    m->status = status;
    snprintf(m->error, sizeof m->error, "%s", gs_last_error());
  } else if (failed != GS_OK) {
    m->status = failed;
    snprintf(m->error, sizeof m->error, "%s", reason);
    gs_error(failed, "%s", reason);
  }
  if (m->status != GS_OK) gs_runner_name_failure(m);
  const gs_exec_run_note *last = r->n_notes ? &r->notes[r->n_notes - 1] : NULL;
  if (m->status != GS_OK && last && last->status == GS_ERR_RANK_LOST) {
    // Named also when lost in a warmup run, which leaves no rank record.
    m->failure.rank = last->child.lost_rank;
    snprintf(m->failure.host, sizeof m->failure.host, "%s", gs_hostname());
    m->failure.last_completed_step = last->lost_steps;
    m->failure.status = GS_ERR_RANK_LOST;
    snprintf(m->failure.reason, sizeof m->failure.reason, "%s", last->child.reason);
  } else if (m->status != GS_OK) {
    // The command failed as a whole: every rank record carries its outcome,
    // and no rank is to blame (the first record is not the culprit).
    m->failure.rank = -1;
    m->failure.host[0] = '\0';
    m->failure.last_completed_step = 0;
  }
  return m->status;
}
