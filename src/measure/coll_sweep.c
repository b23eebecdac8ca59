/* The collective sweep of `gpuscale coll` (see coll_sweep.h): options, the
 * size list, the size-by-size measurement through the job lifecycle, the
 * naming of a lost rank, and the result document with its models, or with
 * --arrival-cost each size's cost of recording arrivals (coll_cost.h). */
#include "measure/coll_sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner.h"
#include "core/check.h"
#include "core/fault.h"
#include "core/file.h"
#include "core/interrupt.h"
#include "core/process.h"
#include "measure/coll_cost.h"
#include "measure/job.h"
#include "platform/topology.h"

const char *const gs_coll_place_names[] = {"both", "out", "in", NULL};

void gs_coll_common_defaults(gs_common_options *common) {
  common->warmup = 5;
  common->iters = 20;
  common->timeout = 300.0;
}

void gs_coll_options_init(gs_coll_options *o) {
  memset(o, 0, sizeof *o);
  o->min_bytes = 8;
  o->max_bytes = 128ull << 20;
  o->step_factor = 2;
  o->check = 1;
  o->dtype = GS_DTYPE_FLOAT;
  o->redop = GS_REDOP_SUM;
  gs_option *t = o->table;
  size_t n = 0;
  t[n++] = (gs_option){.name = "minbytes", .short_name = 'b', .kind = GS_OPT_SIZE,
                       .target = &o->min_bytes, .min = 1, .max = 1ull << 40, .metavar = "SIZE",
                       .help = "smallest message size (K, M, G accepted)"};
  t[n++] = (gs_option){.name = "maxbytes", .short_name = 'e', .kind = GS_OPT_SIZE,
                       .target = &o->max_bytes, .min = 1, .max = 1ull << 40, .metavar = "SIZE",
                       .help = "largest message size"};
  t[n++] = (gs_option){.name = "stepfactor", .kind = GS_OPT_COUNT,
                       .target = &o->step_factor, .min = 2, .max = 1024, .metavar = "F",
                       .help = "multiply the size by F between steps (nccl-tests' -f)",
                       .given = &o->given_step_factor};
  t[n++] = (gs_option){.name = "stepbytes", .short_name = 'i', .kind = GS_OPT_SIZE,
                       .target = &o->step_bytes, .min = 1, .max = 1ull << 40, .metavar = "SIZE",
                       .help = "add SIZE between steps instead of multiplying",
                       .given = &o->given_step_bytes};
  t[n++] = (gs_option){.name = "check", .short_name = 'c', .kind = GS_OPT_COUNT,
                       .target = &o->check, .min = 0, .max = 1, .metavar = "0|1",
                       .help = "check every result after timing (a wrong element fails the run)"};
  t[n++] = (gs_option){.name = "arrival-cost", .kind = GS_OPT_COUNT,
                       .target = &o->arrival_cost, .min = 2, .max = 1 << 20, .metavar = "ITERS",
                       .help = "instead of a sweep, measure what recording arrival times costs: "
                               "blocks of ITERS timed iterations recording and not in turn, "
                               "-n in all (default 24 pairs of 4 blocks); prints the cost with "
                               "its 95% interval and writes no document (docs/stragglers.md)",
                       .given = &o->given_arrival_cost};
  t[n++] = (gs_option){.name = "datatype", .short_name = 'd', .kind = GS_OPT_CHOICE,
                       .target = &o->dtype, .choices = gs_dtype_names, .metavar = "TYPE",
                       .help = "element type"};
  t[n++] = (gs_option){.name = "op", .kind = GS_OPT_CHOICE,
                       .target = &o->redop, .choices = gs_redop_names, .metavar = "REDOP",
                       .help = "reduction of allreduce, reducescatter and reduce (nccl-tests' -o)",
                       .given = &o->given_redop};
  t[n++] = (gs_option){.name = "root", .short_name = 'r', .kind = GS_OPT_COUNT,
                       .target = &o->root, .min = 0, .max = 1 << 20, .metavar = "RANK",
                       .help = "root of broadcast and reduce", .given = &o->given_root};
  t[n++] = (gs_option){.name = "place", .kind = GS_OPT_CHOICE, .target = &o->place,
                       .choices = gs_coll_place_names, .metavar = "FORM",
                       .help = "out-of-place, in-place or both forms"};
  t[n++] = (gs_option){.name = "transport", .kind = GS_OPT_CHOICE, .target = &o->transport,
                       .choices = gs_transport_names, .metavar = "T",
                       .help = "NCCL path between GPUs: auto, p2p, shm (via host memory), net"};
  t[n++] = (gs_option){.name = "inject", .kind = GS_OPT_STRING, .target = &o->inject,
                       .metavar = "FAULT",
                       .help = "delay:rank=R,seconds=S holds rank R back before its first timed "
                               "batch; late:rank=R,us=U makes R arrive U us late at every "
                               "collective"};
  t[n] = (gs_option){.kind = GS_OPT_END};
}

gs_status gs_coll_options_take_op(gs_coll_options *o, const char *arg) {
  if (o->given_op) return gs_error(GS_ERR_USAGE, "gpuscale coll: unexpected argument '%s'", arg);
  o->given_op = 1;
  if (strcmp(arg, "all") == 0) {
    o->all = 1;
    return GS_OK;
  }
  int index = 0;
  GS_TRY(gs_parse_choice(arg, "OP", gs_coll_op_names, &index));
  o->op = (gs_coll_op)index;
  return GS_OK;
}

/* The faults coll can inject, parsed by the common fault syntax
 * (core/fault.h): a delay of a rank's first timed batch (*rank, *seconds)
 * or a rank late at every collective (*late_rank, *late_us). */
static gs_status parse_inject(const char *text, int *rank, double *seconds, int *late_rank,
                              double *late_us) {
  *rank = *late_rank = -1;
  *seconds = *late_us = 0.0;
  if (!text) return GS_OK;
  gs_fault_list faults = {0};
  GS_TRY(gs_fault_parse(text, &faults));
  const gs_fault *f = &faults.items[0];
  if (f->kind == GS_FAULT_LATE) {
    *late_rank = f->rank;
    *late_us = f->params[0];
    return GS_OK;
  }
  if (f->kind != GS_FAULT_DELAY)
    return gs_error(GS_ERR_USAGE,
                    "option --inject: '%s': coll supports delay:rank=R,seconds=S and "
                    "late:rank=R,us=U",
                    text);
  *rank = f->rank;
  *seconds = f->params[0];
  return GS_OK;
}

/* The requested sizes, ascending: *sizes is allocated (free it). */
static gs_status make_sizes(const gs_coll_options *o, uint64_t **sizes, size_t *n) {
  *sizes = NULL;
  *n = 0;
  if (o->min_bytes > o->max_bytes)
    return gs_error(GS_ERR_USAGE, "option -b/--minbytes (%llu) is larger than -e/--maxbytes (%llu)",
                    (unsigned long long)o->min_bytes, (unsigned long long)o->max_bytes);
  if (o->given_step_factor && o->given_step_bytes)
    return gs_error(GS_ERR_USAGE, "options --stepfactor and -i/--stepbytes conflict: give one");
  uint64_t *v = malloc(GS_COLL_MAX_SIZES * sizeof *v);
  if (!v) return gs_error(GS_ERR_NOMEM, "cannot allocate the size list");
  size_t count = 0;
  for (uint64_t s = o->min_bytes; s <= o->max_bytes;) {
    if (count == GS_COLL_MAX_SIZES) {
      free(v);
      return gs_error(GS_ERR_USAGE, "options -b/-e/-i: more than %d sizes", GS_COLL_MAX_SIZES);
    }
    v[count++] = s;
    uint64_t next = o->given_step_bytes ? s + o->step_bytes : s * o->step_factor;
    if (next <= s) break; /* overflow */
    s = next;
  }
  *sizes = v;
  *n = count;
  return GS_OK;
}

gs_status gs_coll_options_check(const gs_coll_options *o) {
  if (!o->given_op) {
    char ops[GS_TEXT_LONG] = "";
    for (size_t k = 0, at = 0; gs_coll_op_names[k] && at < sizeof ops; k++)
      at += (size_t)snprintf(ops + at, sizeof ops - at, "%s, ", gs_coll_op_names[k]);
    return gs_error(GS_ERR_USAGE, "gpuscale coll: missing OP (one of %sall)", ops);
  }
  if (o->given_redop && !o->all && !gs_coll_has_redop(o->op))
    return gs_error(GS_ERR_USAGE, "option --op: %s has no reduction", gs_coll_op_names[o->op]);
  if (o->given_root && !o->all && !gs_coll_has_root(o->op))
    return gs_error(GS_ERR_USAGE, "option -r/--root: %s has no root", gs_coll_op_names[o->op]);
  if (o->place == GS_COLL_PLACE_IN && !o->all && !gs_coll_has_in_place(o->op))
    return gs_error(GS_ERR_USAGE, "option --place: %s has no in-place form",
                    gs_coll_op_names[o->op]);
  uint64_t *sizes = NULL;
  size_t n = 0;
  GS_TRY(make_sizes(o, &sizes, &n));
  free(sizes);
  int rank = -1, late = -1;
  double seconds = 0.0, late_us = 0.0;
  return parse_inject(o->inject, &rank, &seconds, &late, &late_us);
}

/* ---- the state of one command ------------------------------------------------ */

/* One operation's sweep: its points so far and its models. */
typedef struct {
  gs_coll_sweep sweep;          /* n_sizes: the sizes measured so far */
  gs_coll_point *points;
  size_t n_points;
  int fitted[2];
  gs_coll_fit fits[2];
  uint64_t fit_min[2], fit_max[2];
} coll_op_sweep;

typedef struct {
  const gs_coll_request *rq;
  gs_measure_job mj;
  gs_run_config config;
  gs_environment env;
  gs_comm_world *world;
  uint64_t *sizes;
  size_t n_sizes;
  coll_op_sweep ops[GS_COLL_COUNT];
  size_t n_ops;
  const char *launch, *transport;
  char path[GS_TEXT_LONG];
  size_t sizes_total, sizes_done; /* over every requested operation */
} coll_state;

/* ---- the alpha-beta models ------------------------------------------------------ */

static gs_status fit_form(const gs_coll_point *pts, size_t n, int in_place, gs_coll_fit *fit,
                          uint64_t *min_bytes, uint64_t *max_bytes) {
  double *x = malloc((n ? n : 1) * sizeof *x), *t = malloc((n ? n : 1) * sizeof *t);
  if (!x || !t) {
    free(x);
    free(t);
    return gs_error(GS_ERR_NOMEM, "cannot allocate the fit");
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const gs_coll_point *p = &pts[i];
    if (p->in_place != in_place || p->shape.bytes == 0 || !(p->time_seconds > 0.0)) continue;
    if (k == 0 || p->shape.bytes < *min_bytes) *min_bytes = p->shape.bytes;
    if (k == 0 || p->shape.bytes > *max_bytes) *max_bytes = p->shape.bytes;
    x[k] = (double)p->shape.bytes * p->factor;
    t[k] = p->time_seconds;
    k++;
  }
  gs_status status = k >= 2 ? gs_coll_fit_alpha_beta(x, t, k, fit) : GS_ERR_USAGE;
  free(x);
  free(t);
  return status;
}

/* Fits both forms of an operation's points measured so far (a form with
 * fewer than two timed sizes has no model). */
static void fit_models(coll_op_sweep *op) {
  gs_error_kept kept;
  gs_error_keep(&kept);
  for (int in_place = 0; in_place < 2; in_place++)
    op->fitted[in_place] = fit_form(op->points, op->n_points, in_place, &op->fits[in_place],
                                    &op->fit_min[in_place], &op->fit_max[in_place]) == GS_OK;
  gs_error_restore(&kept);
}

/* ---- the document ----------------------------------------------------------------- */

static gs_status add_models(cJSON *models, const coll_op_sweep *op, int world_size) {
  const gs_coll_sweep *s = &op->sweep;
  gs_json_build build = {0}, *b = &build;
  for (int in_place = 0; in_place < 2; in_place++) {
    if (!op->fitted[in_place]) continue;
    const gs_coll_fit *fit = &op->fits[in_place];
    cJSON *m = cJSON_CreateObject();
    gs_json_append(b, models, m);
    if (b->failed) return gs_error(GS_ERR_NOMEM, "cannot add a collective model");
    gs_json_put_string(b, m, "op", gs_coll_op_names[s->op]);
    gs_json_put_string(b, m, "dtype", gs_dtype_names[s->dtype]);
    if (gs_coll_has_redop(s->op))
      gs_json_put_string(b, m, "redop", gs_redop_names[s->redop]);
    else
      gs_json_put_null(b, m, "redop");
    gs_json_put_bool(b, m, "in_place", in_place);
    gs_json_put_number(b, m, "world_size", world_size);
    gs_json_put_number(b, m, "alpha_seconds", fit->alpha_seconds);
    gs_json_put_number(b, m, "beta_seconds_per_byte", fit->beta_seconds_per_byte);
    double bw = fit->beta_seconds_per_byte > 0.0 ? 1.0 / fit->beta_seconds_per_byte : NAN;
    gs_json_put_number(b, m, "bus_bandwidth_bytes_per_second", bw);
    gs_json_put_number(b, m, "r_squared", fit->r_squared);
    gs_json_put_number(b, m, "points", (double)fit->points);
    gs_json_put_number(b, m, "min_bytes", (double)op->fit_min[in_place]);
    gs_json_put_number(b, m, "max_bytes", (double)op->fit_max[in_place]);
  }
  return b->failed ? gs_error(GS_ERR_NOMEM, "cannot add a collective model") : GS_OK;
}

static gs_status add_points(cJSON *doc, const coll_op_sweep *op, const char *launch,
                            const char *transport) {
  const gs_coll_sweep *s = &op->sweep;
  for (size_t i = 0; i < op->n_points; i++) {
    const gs_coll_point *p = &op->points[i];
    if (p->shape.bytes == 0) continue;
    GS_TRY(gs_result_add_measurement(doc, &p->m));
    cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
    cJSON *m = cJSON_GetArrayItem(list, cJSON_GetArraySize(list) - 1);
    gs_json_build build = {0}, *b = &build;
    cJSON *c = gs_json_put_object(b, m, "collective");
    gs_json_put_string(b, c, "op", gs_coll_op_names[s->op]);
    gs_json_put_string(b, c, "dtype", gs_dtype_names[s->dtype]);
    if (gs_coll_has_redop(s->op))
      gs_json_put_string(b, c, "redop", gs_redop_names[s->redop]);
    else
      gs_json_put_null(b, c, "redop");
    if (gs_coll_has_root(s->op))
      gs_json_put_number(b, c, "root", s->root);
    else
      gs_json_put_null(b, c, "root");
    gs_json_put_bool(b, c, "in_place", p->in_place);
    gs_json_put_number(b, c, "bytes", (double)p->shape.bytes);
    gs_json_put_number(b, c, "count", (double)p->shape.count);
    int measured = p->m.aggregate.step.n > 0;
    gs_json_put_number(b, c, "time_seconds", measured ? p->time_seconds : NAN);
    gs_json_put_number(b, c, "algbw_bytes_per_second", measured ? p->algbw : NAN);
    gs_json_put_number(b, c, "busbw_bytes_per_second", measured ? p->busbw : NAN);
    gs_json_put_number(b, c, "busbw_factor", p->factor);
    if (p->checked)
      gs_json_put_number(b, c, "wrong_elements", (double)p->wrong);
    else
      gs_json_put_null(b, c, "wrong_elements");
    gs_json_put_string(b, c, "launch", launch);
    gs_json_put_string(b, c, "transport", transport);
    if (b->failed) return gs_error(GS_ERR_NOMEM, "out of memory building the result document");
  }
  return GS_OK;
}

/* Whether arrival times are recorded (the common --arrival-times, default
 * on). On CUDA the recorder borrows coll's timing events (no event of its
 * own) and adds a host clock read per iteration; --arrival-cost measured
 * it inside one process at +0.03% [-0.04%, +0.29%] of a 1 MiB allreduce on
 * 2 of 4 H100s, under the 1% target (docs/stragglers.md). */
static int records_arrival(const gs_run_config *config) { return !config->no_arrival_times; }

static cJSON *coll_config_json(const coll_state *st) {
  const gs_coll_options *o = st->rq->coll;
  cJSON *c = cJSON_CreateObject();
  if (!c) return NULL;
  gs_json_build build = {0}, *b = &build;
  gs_json_put_string(b, c, "op", o->all ? "all" : gs_coll_op_names[o->op]);
  gs_json_put_number(b, c, "min_bytes", (double)o->min_bytes);
  gs_json_put_number(b, c, "max_bytes", (double)o->max_bytes);
  if (o->given_step_bytes)
    gs_json_put_number(b, c, "step_bytes", (double)o->step_bytes);
  else
    gs_json_put_number(b, c, "step_factor", (double)o->step_factor);
  gs_json_put_bool(b, c, "check", o->check != 0);
  gs_json_put_string(b, c, "dtype", gs_dtype_names[o->dtype]);
  gs_json_put_string(b, c, "redop", gs_redop_names[o->redop]);
  gs_json_put_number(b, c, "root", (double)o->root);
  gs_json_put_string(b, c, "place", gs_coll_place_names[o->place]);
  gs_json_put_string(b, c, "transport", gs_transport_names[o->transport]);
  gs_json_put_number(b, c, "timeout_seconds", st->rq->common->timeout);
  gs_json_put_string(b, c, "launch", st->launch);
  gs_json_put_string(b, c, "launcher", st->mj.job.launcher);
  if (o->inject) gs_json_put_string(b, c, "inject", o->inject);
  if (b->failed) {
    cJSON_Delete(c);
    return NULL;
  }
  return c;
}

/* The document's status from its measurements: ok (every size of every
 * operation measured and correct), failed (every measurement failed), or
 * partial (a crash now would leave what is measured so far). */
static const char *document_status(const coll_state *st, size_t *measured, size_t *failed) {
  *measured = *failed = 0;
  size_t with_samples = 0;
  for (size_t k = 0; k < st->n_ops; k++)
    for (size_t i = 0; i < st->ops[k].n_points; i++) {
      const gs_coll_point *p = &st->ops[k].points[i];
      if (p->shape.bytes == 0) continue;
      (*measured)++;
      if (p->m.status == GS_OK) continue;
      (*failed)++;
      if (strcmp(gs_common_result_status(&p->m, 1, 1), "partial") == 0) with_samples++;
    }
  return gs_result_status_rule(*measured, *failed, with_samples,
                               st->sizes_done == st->sizes_total);
}

/* Builds the whole document from every point so far and writes it
 * atomically over the previous one. */
static gs_status write_document(coll_state *st) {
  cJSON *doc = gs_result_new("coll");
  if (!doc) return gs_error(GS_ERR_NOMEM, "cannot create the result document");
  gs_status status = GS_OK;
  cJSON *config = gs_common_config_json(st->rq->common, &st->config, NULL, NULL);
  cJSON *coll = coll_config_json(st);
  gs_json_build b = {0};
  gs_json_put_item(&b, config, "coll", coll);
  if (b.failed) status = gs_error(GS_ERR_NOMEM, "cannot build the config block");
  if (status == GS_OK) {
    status = gs_result_set_config(doc, config);
    config = NULL;
  }
  cJSON_Delete(config);
  if (status == GS_OK) status = gs_result_set_environment(doc, &st->env);
  // The links, so that reports set bus bandwidth against them.
  if (status == GS_OK && st->config.backend == GS_BACKEND_CUDA)
    status = gs_topology_attach(doc, &st->env);
  if (status == GS_OK && st->mj.control) status = gs_measure_job_add_processes(doc, &st->mj);
  cJSON *models = status == GS_OK ? cJSON_AddArrayToObject(doc, "collective_models") : NULL;
  if (status == GS_OK && !models) status = gs_error(GS_ERR_NOMEM, "cannot add the models");
  const int world_size = gs_comm_world_size(st->world);
  for (size_t k = 0; k < st->n_ops && status == GS_OK; k++) {
    status = add_models(models, &st->ops[k], world_size);
    if (status == GS_OK) status = add_points(doc, &st->ops[k], st->launch, st->transport);
  }
  size_t measured = 0, failed = 0;
  if (status == GS_OK) status = gs_result_set_status(doc, document_status(st, &measured, &failed));
  if (status == GS_OK) status = gs_common_add_trace(doc, st->mj.trace, st->path);
  if (status == GS_OK) status = gs_result_rewrite(doc, st->path, &st->mj.written);
  cJSON_Delete(doc);
  return status;
}

/* ---- measuring ---------------------------------------------------------------------- */

/* Failures after which the ranks cannot go on together. */
static int stops_the_sweep(gs_status status) {
  return status != GS_OK && status != GS_ERR_VERIFY;
}

/* Under a launcher, after a failure: the rank that was lost
 * (gs_comm_find_lost: a process of this host that died, was stopped by a
 * signal of its own or stopped answering) is named in the points' records
 * and their measurement; this process's own record says it was stopped by
 * that. */
static gs_status name_lost_rank(coll_state *st, gs_coll_point *pts, size_t n, gs_status status) {
  if (!st->mj.control) return status;
  const int me = st->mj.job.process_rank;
  const gs_rank_place *places = st->mj.places;
  char how[GS_TEXT_LONG] = "";
  const int lost = gs_comm_find_lost(st->world, how, sizeof how);
  if (lost < 0) return status;
  // The job's writer is elected in the control world: a hung process 0,
  // whose heartbeat still beats, must not be waited for as the writer.
  gs_comm_note_lost(st->mj.control, lost);
  for (size_t i = 0; i < n; i++) {
    gs_measurement *m = &pts[i].m;
    if (m->n_runs == 0 || (size_t)lost >= m->runs[0].n_ranks) continue;
    gs_rank_record *rec = &m->runs[0].ranks[lost];
    snprintf(rec->host, sizeof rec->host, "%s", places[lost].host);
    rec->status = GS_ERR_RANK_LOST;
    snprintf(rec->error, sizeof rec->error, "rank %d on %s lost: %s", lost, places[lost].host,
             how);
    gs_rank_record *own = (size_t)me < m->runs[0].n_ranks ? &m->runs[0].ranks[me] : NULL;
    if (own && own != rec && own->status != GS_OK) {
      own->status = GS_ERR_ABORTED;
      snprintf(own->error, sizeof own->error, "stopped because rank %d was lost", lost);
    }
    // The other ranks' records of this size never reached this process
    // (the break came before the gather): not ok, stopped by the loss.
    for (size_t k = 0; k < m->runs[0].n_ranks; k++) {
      gs_rank_record *other = &m->runs[0].ranks[k];
      if (other == rec || other == own || other->status != GS_OK || other->n_samples > 0)
        continue;
      other->status = GS_ERR_ABORTED;
      snprintf(other->error, sizeof other->error, "stopped because rank %d was lost", lost);
    }
    m->status = GS_ERR_RANK_LOST;
    snprintf(m->error, sizeof m->error, "%s", rec->error);
  }
  return gs_error(GS_ERR_RANK_LOST, "rank %d on %s lost: %s", lost, places[lost].host, how);
}

/* Appends the points of one size to the operation's sweep (taking their
 * measurements over). */
static gs_status append_points(coll_op_sweep *op, gs_coll_point *pts, size_t n) {
  // An op without the one form asked for (`all --place in`: alltoall,
  // sendrecv) has no points; realloc to 0 bytes would free op->points.
  if (n == 0) {
    free(pts);
    return GS_OK;
  }
  gs_coll_point *grown = realloc(op->points, (op->n_points + n) * sizeof *grown);
  if (!grown) {
    gs_coll_points_free(pts, n);
    return gs_error(GS_ERR_NOMEM, "cannot keep %zu collective points", op->n_points + n);
  }
  memcpy(grown + op->n_points, pts, n * sizeof *pts);
  op->points = grown;
  op->n_points += n;
  free(pts); /* the measurements now belong to op->points */
  return GS_OK;
}

/* Measures operation `op` size by size, rewriting the document after each
 * on the process that writes. *step carries the progress count. */
static gs_status sweep_op(coll_state *st, coll_op_sweep *op, uint64_t *step, int *delay_rank,
                          double delay_seconds) {
  gs_status first_failure = GS_OK;
  gs_error_kept first_error = {""};  // its text: a later size's failure does not replace it
  for (size_t i = 0; i < st->n_sizes; i++) {
    if (gs_interrupt_signal() != 0) {
      first_failure = gs_error(GS_ERR_INTERRUPTED, "interrupted by signal %d after %zu of "
                                     "%zu sizes of %s", gs_interrupt_signal(), i, st->n_sizes,
                                     gs_coll_op_names[op->sweep.op]);
      break;
    }
    gs_coll_sweep one = op->sweep;
    one.sizes = &st->sizes[i];
    one.n_sizes = 1;
    one.progress = step;
    one.delay_rank = *delay_rank;
    one.delay_seconds = delay_seconds;
    // The size's points are the document's next measurements.
    size_t index = op->n_points;
    for (const coll_op_sweep *before = st->ops; before != op; before++) index += before->n_points;
    one.trace = st->mj.trace;
    one.trace_measurement = (int)index;
    char label[GS_TEXT_LONG];
    snprintf(label, sizeof label, "%s %llu B on %d ranks", gs_coll_op_names[one.op],
             (unsigned long long)st->sizes[i], gs_comm_world_size(st->world));
    gs_coll_point *pts = NULL;
    size_t n = 0;
    gs_status status = gs_trace_measurement_start(one.trace, (int)index, label, one.backend, NULL);
    if (status == GS_OK) status = gs_coll_measure(&one, &pts, &n);
    gs_trace_measurement_stop(one.trace);
    *delay_rank = -1; /* only before the first timed batch of the command */
    if (stops_the_sweep(status)) status = name_lost_rank(st, pts, n, status);
    // The writer claims the job's end before writing, so that a process
    // that sees it exit afterwards does not take it for a lost rank.
    if (st->mj.control && gs_measure_loses_job(status)) st->mj.broken = 1;
    // The same "failure" member as the runner's, once the statuses are final.
    for (size_t k = 0; k < n; k++)
      if (pts[k].m.status != GS_OK) gs_runner_name_failure(&pts[k].m);
    const size_t first_point = op->n_points;
    gs_status kept = append_points(op, pts, n);
    if (kept != GS_OK) status = kept;
    // --arrival-cost: the size's cost, printed; its samples mix both kinds
    // of block, so no document keeps them.
    if (st->rq->coll->given_arrival_cost && kept == GS_OK && gs_measure_job_writes(&st->mj)) {
      gs_status cost =
          gs_coll_cost_report(&one, op->points + first_point, op->n_points - first_point,
                              gs_comm_world_size(st->world), st->launch, st->rq->observer);
      if (status == GS_OK) status = cost;
    }
    op->sweep.n_sizes = i + 1;
    st->sizes_done++;
    gs_error_keep_first(status, &first_failure, &first_error);
    // Every process holds every rank's records (gathered to all): process
    // 0 writes, or after a break the live process that takes over.
    if (!st->rq->coll->given_arrival_cost && gs_measure_job_writes(&st->mj)) {
      fit_models(op);
      gs_status written = write_document(st);
      if (written != GS_OK) return written;
    }
    if (stops_the_sweep(status)) break;
  }
  if (first_failure != GS_OK) gs_error_restore(&first_error);
  return first_failure;
}

static void report_op(const coll_state *st, const coll_op_sweep *op) {
  const gs_coll_observer *obs = st->rq->observer;
  if (!obs || !obs->op_done || !gs_measure_job_writes(&st->mj) || st->rq->coll->given_arrival_cost)
    return;
  gs_coll_op_result r = {.sweep = &op->sweep,
                         .points = op->points,
                         .n_points = op->n_points,
                         .world_size = gs_comm_world_size(st->world),
                         .launch = st->launch,
                         .transport = st->transport};
  for (int f = 0; f < 2; f++) {
    r.fitted[f] = op->fitted[f];
    r.fits[f] = op->fits[f];
  }
  obs->op_done(obs->ctx, &r);
}

/* A sweep with nothing to measure is a usage error: every operation swept
 * needs one size that holds at least one element (per rank where the op
 * splits its buffer) at this world size. */
static gs_status check_sizes_hold_elements(const gs_coll_options *o, const uint64_t *sizes,
                                           size_t n, int ranks) {
  const size_t es = gs_dtype_size((gs_dtype)o->dtype);
  for (int k = 0; k < GS_COLL_COUNT; k++) {
    if (!o->all && k != (int)o->op) continue;
    int any = 0;
    for (size_t i = 0; i < n && !any; i++) {
      gs_coll_shape shape;
      gs_coll_shape_for((gs_coll_op)k, sizes[i], es, ranks, &shape);
      any = shape.bytes > 0;
    }
    if (!any)
      return gs_error(GS_ERR_USAGE, "options -b/-e: no size from %llu to %llu bytes holds a "
                      "whole %s element (per rank where the op splits its buffer) for %s on %d "
                      "ranks: nothing to measure", (unsigned long long)o->min_bytes,
                      (unsigned long long)o->max_bytes, gs_dtype_names[o->dtype],
                      gs_coll_op_names[k], ranks);
  }
  return GS_OK;
}

/* Resolves the ranks and checks what depends on them; creates the world. */
static gs_status prepare(coll_state *st) {
  const gs_coll_options *o = st->rq->coll;
  gs_common_options *common = st->rq->common;
  GS_TRY(gs_coll_cost_configure(o, common));
  if (common->out)
    snprintf(st->path, sizeof st->path, "%s", common->out);
  else
    snprintf(st->path, sizeof st->path, "results/coll-%s.json",
             o->all ? "all" : gs_coll_op_names[o->op]);
  if (!o->given_arrival_cost) GS_TRY(gs_file_check_output(st->path, "option --out"));
  GS_TRY(gs_measure_job_start(&st->mj, common, 1, &st->config));
  st->config.iters = common->iters; /* always a fixed count here */
  st->config.runs = 1;
  st->launch = st->mj.job.launch == GS_COMM_LAUNCH_MPI ? "mpi" : "threads";
  st->transport = gs_transport_names[o->transport];
  if (o->given_arrival_cost) GS_TRY(gs_coll_cost_check_world(st->config.world_size));
  if (o->root >= (uint64_t)st->config.world_size)
    return gs_error(GS_ERR_USAGE, "option -r/--root: rank %llu of a world of %d ranks",
                    (unsigned long long)o->root, st->config.world_size);
  if (st->config.backend == GS_BACKEND_CPU &&
      (o->dtype == GS_DTYPE_HALF || o->dtype == GS_DTYPE_BFLOAT16))
    return gs_error(GS_ERR_USAGE, "option -d/--datatype %s needs the cuda backend",
                    gs_dtype_names[o->dtype]);
  if (o->transport != GS_TRANSPORT_AUTO && st->config.backend != GS_BACKEND_CUDA)
    return gs_error(GS_ERR_USAGE, "option --transport applies to NCCL on the cuda backend");
  GS_TRY(make_sizes(o, &st->sizes, &st->n_sizes));
  GS_TRY(check_sizes_hold_elements(o, st->sizes, st->n_sizes, st->config.world_size));
  GS_TRY(gs_comm_transport_apply((gs_transport)o->transport));
  GS_TRY(gs_common_environment(&st->env));
  gs_comm_world_config wc = {.backend = st->config.backend,
                             .local_ranks = st->mj.local_ranks,
                             .devices = st->mj.local_devices,
                             .timeout_seconds = common->timeout};
  return gs_comm_world_create(&st->mj.job, &wc, &st->world);
}

static gs_status measure_all(coll_state *st) {
  const gs_coll_options *o = st->rq->coll;
  const gs_common_options *common = st->rq->common;
  int delay_rank = -1, late_rank = -1;
  double delay_seconds = 0.0, late_us = 0.0;
  GS_TRY(parse_inject(o->inject, &delay_rank, &delay_seconds, &late_rank, &late_us));
  if (late_rank >= st->config.world_size)
    return gs_error(GS_ERR_USAGE, "option --inject late: rank %d, but there are %d ranks",
                    late_rank, st->config.world_size);
  uint64_t step = 0;
  gs_status first_failure = GS_OK;
  gs_error_kept first_error = {""};  // its text: a later operation's failure does not replace it
  st->sizes_total = (o->all ? GS_COLL_COUNT : 1) * st->n_sizes;
  for (int k = 0; k < GS_COLL_COUNT; k++) {
    if (!o->all && k != (int)o->op) continue;
    coll_op_sweep *op = &st->ops[st->n_ops++];
    op->sweep = (gs_coll_sweep){.op = (gs_coll_op)k,
                                .dtype = (gs_dtype)o->dtype,
                                .redop = (gs_redop)o->redop,
                                .root = (int)o->root,
                                .sizes = st->sizes,
                                .out_of_place = o->place != GS_COLL_PLACE_IN,
                                .in_place = o->place != GS_COLL_PLACE_OUT,
                                .warmup = common->warmup,
                                .iters = common->iters,
                                .check = o->check != 0,
                                .arrival = o->given_arrival_cost ||
                                           records_arrival(&st->config),
                                .cost_block = o->given_arrival_cost ? o->arrival_cost : 0,
                                .backend = st->config.backend,
                                .job = &st->mj.job,
                                .world = st->world,
                                .local_ranks = st->mj.local_ranks,
                                .devices = st->mj.local_devices,
                                .delay_rank = -1,
                                .late_rank = late_rank,
                                .late_us = late_us};
    gs_status status = sweep_op(st, op, &step, &delay_rank, delay_seconds);
    gs_error_keep_first(status, &first_failure, &first_error);
    fit_models(op);
    report_op(st, op);
    // A wrong result is reported and the sweep goes on; anything else stops it.
    if (stops_the_sweep(status)) break;
  }
  if (first_failure != GS_OK) gs_error_restore(&first_error);
  return first_failure;
}

gs_status gs_measure_coll(const gs_coll_request *rq) {
  GS_TRY(gs_coll_options_check(rq->coll));
  coll_state *st = calloc(1, sizeof *st);
  if (!st) return gs_error(GS_ERR_NOMEM, "cannot allocate the coll state");
  st->rq = rq;
  gs_status status = prepare(st);
  if (status == GS_OK) status = measure_all(st);
  const int writer = gs_measure_job_writes(&st->mj);
  size_t measured = 0, failed = 0;
  document_status(st, &measured, &failed);
  const int stopped = stops_the_sweep(status) && status != GS_ERR_USAGE;
  const int cost = rq->coll->given_arrival_cost; /* no document */
  if (writer && measured > 0 && !cost) gs_note("result written to %s", st->path);
  if (stopped && writer && failed < measured && !cost)
    status = gs_error(GS_ERR_PARTIAL, "coll stopped after %zu completed measurements (%s: %s); "
                      "the document holds them", measured - failed, gs_status_name(status),
                      gs_last_error());
  // Under a launcher a process that cannot go on may leave the others
  // blocked in communication: the job ends (aborted) once the document is
  // written; otherwise the world goes before MPI does.
  if (st->mj.control && stopped) st->mj.broken = 1;
  if (st->mj.broken) status = gs_measure_job_finish(&st->mj, status);
  gs_comm_world_destroy(st->world);
  if (!st->mj.broken) status = gs_measure_job_finish(&st->mj, status);
  gs_environment_free(&st->env);
  for (size_t k = 0; k < st->n_ops; k++) gs_coll_points_free(st->ops[k].points, st->ops[k].n_points);
  free(st->sizes);
  free(st);
  return status;
}
