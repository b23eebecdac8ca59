/* `gpuscale coll OP`: collective sweeps in nccl-tests' vocabulary and table
 * layout, with one result document: every size a measurement with a
 * "collective" object, the alpha-beta model of each sweep, the launch mode,
 * the transport and the NCCL environment (docs/collectives.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/coll.h"
#include "core/fault.h"
#include "cli/commands.h"
#include "measure/common.h"
#include "core/check.h"
#include "platform/device.h"
#include "platform/topology.h"

static const char *const place_choices[] = {"both", "out", "in", NULL};
enum { PLACE_BOTH = 0, PLACE_OUT = 1, PLACE_IN = 2 };
#define COLL_MAX_SIZES 4096
#define COLL_OPTION_COUNT 16

typedef struct {
  uint64_t min_bytes, max_bytes, step_factor, step_bytes, check, root;
  int dtype, redop, transport, place;
  double timeout;
  const char *inject;
  int given_step_factor, given_step_bytes, given_redop, given_root, given_inject;
  gs_option table[COLL_OPTION_COUNT];
} coll_options;

static void coll_options_init(coll_options *o) {
  memset(o, 0, sizeof *o);
  o->min_bytes = 8;
  o->max_bytes = 128ull << 20;
  o->step_factor = 2;
  o->check = 1;
  o->dtype = GS_DTYPE_FLOAT;
  o->redop = GS_REDOP_SUM;
  o->timeout = 300.0;
  gs_option *t = o->table;
  size_t n = 0;
  t[n++] = (gs_option){.name = "minbytes",
                       .short_name = 'b',
                       .kind = GS_OPT_SIZE,
                       .target = &o->min_bytes,
                       .min = 1,
                       .max = 1ull << 40,
                       .metavar = "SIZE",
                       .help = "smallest message size (K, M, G accepted)"};
  t[n++] = (gs_option){.name = "maxbytes",
                       .short_name = 'e',
                       .kind = GS_OPT_SIZE,
                       .target = &o->max_bytes,
                       .min = 1,
                       .max = 1ull << 40,
                       .metavar = "SIZE",
                       .help = "largest message size"};
  t[n++] = (gs_option){.name = "stepfactor",
                       .short_name = 'f',
                       .kind = GS_OPT_COUNT,
                       .target = &o->step_factor,
                       .min = 2,
                       .max = 1024,
                       .metavar = "F",
                       .help = "multiply the size by F between steps",
                       .given = &o->given_step_factor};
  t[n++] = (gs_option){.name = "stepbytes",
                       .short_name = 'i',
                       .kind = GS_OPT_SIZE,
                       .target = &o->step_bytes,
                       .min = 1,
                       .max = 1ull << 40,
                       .metavar = "SIZE",
                       .help = "add SIZE between steps instead of multiplying",
                       .given = &o->given_step_bytes};
  t[n++] = (gs_option){.name = "check",
                       .short_name = 'c',
                       .kind = GS_OPT_COUNT,
                       .target = &o->check,
                       .min = 0,
                       .max = 1,
                       .metavar = "0|1",
                       .help = "check every result after timing (a wrong element fails the run)"};
  t[n++] = (gs_option){.name = "datatype",
                       .short_name = 'd',
                       .kind = GS_OPT_CHOICE,
                       .target = &o->dtype,
                       .choices = gs_dtype_names,
                       .metavar = "TYPE",
                       .help = "element type"};
  t[n++] = (gs_option){.name = "op",
                       .short_name = 'o',
                       .kind = GS_OPT_CHOICE,
                       .target = &o->redop,
                       .choices = gs_redop_names,
                       .metavar = "REDOP",
                       .help = "reduction of allreduce, reducescatter and reduce",
                       .given = &o->given_redop};
  t[n++] = (gs_option){.name = "root",
                       .short_name = 'r',
                       .kind = GS_OPT_COUNT,
                       .target = &o->root,
                       .min = 0,
                       .max = 1 << 20,
                       .metavar = "RANK",
                       .help = "root of broadcast and reduce",
                       .given = &o->given_root};
  t[n++] = (gs_option){.name = "place",
                       .kind = GS_OPT_CHOICE,
                       .target = &o->place,
                       .choices = place_choices,
                       .metavar = "FORM",
                       .help = "out-of-place, in-place or both forms"};
  t[n++] = (gs_option){.name = "transport",
                       .kind = GS_OPT_CHOICE,
                       .target = &o->transport,
                       .choices = gs_transport_names,
                       .metavar = "T",
                       .help = "NCCL path between GPUs: auto, p2p, shm (via host memory), net"};
  t[n++] = (gs_option){.name = "timeout",
                       .kind = GS_OPT_DOUBLE,
                       .target = &o->timeout,
                       .dmin = 0.0,
                       .dmax = 86400.0,
                       .metavar = "SEC",
                       .help = "abort the communicators when a wait lasts longer (0: never)"};
  t[n++] =
      (gs_option){.name = "inject",
                  .kind = GS_OPT_STRING,
                  .target = &o->inject,
                  .metavar = "FAULT",
                  .help = "delay:rank=R,seconds=S holds rank R back before its first timed batch",
                  .given = &o->given_inject};
  t[n] = (gs_option){.kind = GS_OPT_END};
}

/* The common options that make sense for collectives, -o freed for the
 * reduction operation as in nccl-tests (the result file stays --out). */
static void common_subset(const gs_common_options *common, gs_option *out) {
  static const char *const keep[] = {"backend", "gpus",  "ranks",       "warmup", "iters",
                                     "out",     "quiet", "no-progress", NULL};
  size_t n = 0;
  for (const gs_option *o = common->table; o->kind != GS_OPT_END; o++) {
    for (size_t k = 0; keep[k]; k++) {
      if (strcmp(o->name, keep[k]) != 0) continue;
      out[n] = *o;
      if (strcmp(o->name, "out") == 0) {
        out[n].short_name = 0;
        out[n].help = "result file (default results/coll-<op>.json)";
      } else if (strcmp(o->name, "iters") == 0) {
        out[n].help = "timed iterations per size and form";
      } else if (strcmp(o->name, "warmup") == 0) {
        out[n].help = "untimed iterations before each size and form";
      } else if (strcmp(o->name, "ranks") == 0) {
        out[n].help = "CPU backend, one process: rank threads (default: the core count, at most 8)";
      }
      n++;
    }
  }
  out[n] = (gs_option){.kind = GS_OPT_END};
}

typedef struct {
  int all;
  gs_coll_op op;
  int given;
} coll_target;

static gs_status take_op(void *ctx, const char *arg) {
  coll_target *t = ctx;
  if (t->given) return gs_error(GS_ERR_USAGE, "gpuscale coll: unexpected argument '%s'", arg);
  t->given = 1;
  if (strcmp(arg, "all") == 0) {
    t->all = 1;
    return GS_OK;
  }
  int index = 0;
  GS_TRY(gs_parse_choice(arg, "OP", gs_coll_op_names, &index));
  t->op = (gs_coll_op)index;
  return GS_OK;
}

/* The one fault coll can inject, a delay of a rank's first timed batch,
 * parsed by the common fault syntax (core/fault.h). */
static gs_status parse_inject(const char *text, int *rank, double *seconds) {
  gs_fault_list faults = {0};
  GS_TRY(gs_fault_parse(text, &faults));
  if (faults.items[0].kind != GS_FAULT_DELAY)
    return gs_error(GS_ERR_USAGE, "option --inject: '%s': coll supports delay:rank=R,seconds=S",
                    text);
  *rank = faults.items[0].rank;
  *seconds = faults.items[0].params[0];
  return GS_OK;
}

static gs_status make_sizes(const coll_options *o, uint64_t **sizes, size_t *n) {
  if (o->min_bytes > o->max_bytes)
    return gs_error(GS_ERR_USAGE, "option -b/--minbytes (%llu) is larger than -e/--maxbytes (%llu)",
                    (unsigned long long)o->min_bytes, (unsigned long long)o->max_bytes);
  if (o->given_step_factor && o->given_step_bytes)
    return gs_error(GS_ERR_USAGE, "options -f/--stepfactor and -i/--stepbytes conflict: give one");
  uint64_t *v = malloc(COLL_MAX_SIZES * sizeof *v);
  if (!v) return gs_error(GS_ERR_NOMEM, "cannot allocate the size list");
  size_t count = 0;
  for (uint64_t s = o->min_bytes; s <= o->max_bytes;) {
    if (count == COLL_MAX_SIZES) {
      free(v);
      return gs_error(GS_ERR_USAGE, "options -b/-e/-i: more than %d sizes", COLL_MAX_SIZES);
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

/* ---- the table ------------------------------------------------------------------ */

static void print_header(FILE *out, const gs_coll_sweep *s, int world_size, const char *launch,
                         const char *transport, const gs_coll_point *pts, size_t n) {
  fprintf(out, "# gpuscale coll %s: %d rank%s (%s), backend %s, transport %s\n",
          gs_coll_op_names[s->op], world_size, world_size == 1 ? "" : "s", launch,
          s->backend == GS_BACKEND_CUDA ? "cuda" : "cpu", transport);
  fprintf(out, "# warmup %llu, iterations %llu, check %s, type %s\n#\n",
          (unsigned long long)s->warmup, (unsigned long long)s->iters, s->check ? "on" : "off",
          gs_dtype_names[s->dtype]);
  if (n > 0) {
    const gs_run_record *run = &pts[0].m.runs[0];
    for (size_t k = 0; k < run->n_ranks; k++) {
      if (run->ranks[k].device >= 0)
        fprintf(out, "#  Rank %2zu on %s device %d\n", k, run->ranks[k].host, run->ranks[k].device);
      else
        fprintf(out, "#  Rank %2zu on %s (cpu)\n", k, run->ranks[k].host);
    }
    fprintf(out, "#\n");
  }
  fprintf(out, "# %10s  %12s  %8s  %6s  %6s %28s %28s\n", "", "", "", "", "", "out-of-place       ",
          "in-place       ");
  fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size",
          "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
          "busbw", "#wrong");
  fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)",
          "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

static void print_cells(FILE *out, const gs_coll_point *p) {
  if (!p) {
    fprintf(out, "  %7s  %6s  %6s  %6s", "n/a", "n/a", "n/a", "n/a");
    return;
  }
  if (p->m.aggregate.step.n == 0) {
    fprintf(out, "  %7s  %6s  %6s  %6s", "failed", "-", "-", "-");
    return;
  }
  char wrong[32];
  if (p->checked)
    snprintf(wrong, sizeof wrong, "%llu", (unsigned long long)p->wrong);
  else
    snprintf(wrong, sizeof wrong, "N/A");
  double us = p->time_seconds * 1e6;
  fprintf(out, "  %7.*f  %6.2f  %6.2f  %6s", us < 1e4 ? 2 : 1, us, p->algbw / 1e9, p->busbw / 1e9,
          wrong);
}

static void print_rows(FILE *out, const gs_coll_sweep *s, const gs_coll_point *pts, size_t n) {
  const char *redop = gs_coll_has_redop(s->op) ? gs_redop_names[s->redop] : "none";
  char root[16];
  snprintf(root, sizeof root, "%d", gs_coll_has_root(s->op) ? s->root : -1);
  size_t forms = s->n_sizes ? n / s->n_sizes : 0;
  for (size_t i = 0; forms > 0 && i + forms <= n; i += forms) {
    const gs_coll_point *out_p = NULL, *in_p = NULL;
    for (size_t f = 0; f < forms; f++) {
      if (pts[i + f].in_place)
        in_p = &pts[i + f];
      else
        out_p = &pts[i + f];
    }
    if (pts[i].shape.bytes == 0) continue;
    fprintf(out, "  %10llu  %12llu  %8s  %6s  %6s", (unsigned long long)pts[i].shape.bytes,
            (unsigned long long)pts[i].shape.count, gs_dtype_names[s->dtype], redop, root);
    print_cells(out, out_p);
    print_cells(out, in_p);
    fputc('\n', out);
  }
}

/* ---- the alpha-beta models -------------------------------------------------------- */

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

static void add_models(cJSON *doc, FILE *out, const gs_coll_sweep *s, const gs_coll_point *pts,
                       size_t n, int world_size) {
  cJSON *models = cJSON_GetObjectItemCaseSensitive(doc, "collective_models");
  if (!models) models = cJSON_AddArrayToObject(doc, "collective_models");
  for (int in_place = 0; in_place < 2 && models; in_place++) {
    gs_coll_fit fit;
    uint64_t lo = 0, hi = 0;
    if (fit_form(pts, n, in_place, &fit, &lo, &hi) != GS_OK) {
      gs_clear_error();
      continue;
    }
    cJSON *m = cJSON_CreateObject();
    if (!m) return;
    cJSON_AddStringToObject(m, "op", gs_coll_op_names[s->op]);
    cJSON_AddStringToObject(m, "dtype", gs_dtype_names[s->dtype]);
    if (gs_coll_has_redop(s->op))
      cJSON_AddStringToObject(m, "redop", gs_redop_names[s->redop]);
    else
      cJSON_AddNullToObject(m, "redop");
    cJSON_AddBoolToObject(m, "in_place", in_place);
    cJSON_AddNumberToObject(m, "world_size", world_size);
    gs_json_add_number(m, "alpha_seconds", fit.alpha_seconds);
    gs_json_add_number(m, "beta_seconds_per_byte", fit.beta_seconds_per_byte);
    double bw = fit.beta_seconds_per_byte > 0.0 ? 1.0 / fit.beta_seconds_per_byte : NAN;
    gs_json_add_number(m, "bus_bandwidth_bytes_per_second", bw);
    gs_json_add_number(m, "r_squared", fit.r_squared);
    cJSON_AddNumberToObject(m, "points", (double)fit.points);
    cJSON_AddNumberToObject(m, "min_bytes", (double)lo);
    cJSON_AddNumberToObject(m, "max_bytes", (double)hi);
    cJSON_AddItemToArray(models, m);
    fprintf(out, "# alpha-beta fit (%s): alpha %.2f us, bus bandwidth %.2f GB/s, r^2 %.4f\n",
            in_place ? "in-place" : "out-of-place", fit.alpha_seconds * 1e6,
            isfinite(bw) ? bw / 1e9 : 0.0, fit.r_squared);
  }
}

static void print_footer(FILE *out, const gs_coll_point *pts, size_t n) {
  uint64_t wrong = 0;
  double sum = 0.0;
  size_t rows = 0, checked = 0;
  for (size_t i = 0; i < n; i++) {
    wrong += pts[i].wrong;
    checked += pts[i].checked != 0;
    if (pts[i].m.aggregate.step.n > 0) {
      sum += pts[i].busbw;
      rows++;
    }
  }
  if (checked == 0)
    fprintf(out, "# Wrong elements     : N/A (not checked)\n");
  else
    fprintf(out, "# Wrong elements     : %llu %s\n", (unsigned long long)wrong,
            wrong ? "FAILED" : "OK");
  fprintf(out, "# Avg bus bandwidth  : %.4f GB/s\n", rows ? sum / (double)rows / 1e9 : 0.0);
}

/* ---- the document ------------------------------------------------------------------- */

static gs_status add_points(cJSON *doc, const gs_coll_sweep *s, const gs_coll_point *pts, size_t n,
                            const char *launch, const char *transport) {
  for (size_t i = 0; i < n; i++) {
    const gs_coll_point *p = &pts[i];
    if (p->shape.bytes == 0) continue;
    GS_TRY(gs_result_add_measurement(doc, &p->m));
    cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "measurements");
    cJSON *m = cJSON_GetArrayItem(list, cJSON_GetArraySize(list) - 1);
    cJSON *c = cJSON_AddObjectToObject(m, "collective");
    if (!c) return gs_error(GS_ERR_NOMEM, "out of memory building the result document");
    cJSON_AddStringToObject(c, "op", gs_coll_op_names[s->op]);
    cJSON_AddStringToObject(c, "dtype", gs_dtype_names[s->dtype]);
    if (gs_coll_has_redop(s->op))
      cJSON_AddStringToObject(c, "redop", gs_redop_names[s->redop]);
    else
      cJSON_AddNullToObject(c, "redop");
    if (gs_coll_has_root(s->op))
      cJSON_AddNumberToObject(c, "root", s->root);
    else
      cJSON_AddNullToObject(c, "root");
    cJSON_AddBoolToObject(c, "in_place", p->in_place);
    cJSON_AddNumberToObject(c, "bytes", (double)p->shape.bytes);
    cJSON_AddNumberToObject(c, "count", (double)p->shape.count);
    int measured = p->m.aggregate.step.n > 0;
    gs_json_add_number(c, "time_seconds", measured ? p->time_seconds : NAN);
    gs_json_add_number(c, "algbw_bytes_per_second", measured ? p->algbw : NAN);
    gs_json_add_number(c, "busbw_bytes_per_second", measured ? p->busbw : NAN);
    gs_json_add_number(c, "busbw_factor", p->factor);
    if (p->checked)
      cJSON_AddNumberToObject(c, "wrong_elements", (double)p->wrong);
    else
      cJSON_AddNullToObject(c, "wrong_elements");
    cJSON_AddStringToObject(c, "launch", launch);
    cJSON_AddStringToObject(c, "transport", transport);
  }
  return GS_OK;
}

static cJSON *coll_config_json(const coll_options *o, const coll_target *t,
                               const gs_comm_job *job) {
  cJSON *c = cJSON_CreateObject();
  if (!c) return NULL;
  cJSON_AddStringToObject(c, "op", t->all ? "all" : gs_coll_op_names[t->op]);
  cJSON_AddNumberToObject(c, "min_bytes", (double)o->min_bytes);
  cJSON_AddNumberToObject(c, "max_bytes", (double)o->max_bytes);
  if (o->given_step_bytes)
    cJSON_AddNumberToObject(c, "step_bytes", (double)o->step_bytes);
  else
    cJSON_AddNumberToObject(c, "step_factor", (double)o->step_factor);
  cJSON_AddBoolToObject(c, "check", o->check != 0);
  cJSON_AddStringToObject(c, "dtype", gs_dtype_names[o->dtype]);
  cJSON_AddStringToObject(c, "redop", gs_redop_names[o->redop]);
  cJSON_AddNumberToObject(c, "root", (double)o->root);
  cJSON_AddStringToObject(c, "place", place_choices[o->place]);
  cJSON_AddStringToObject(c, "transport", gs_transport_names[o->transport]);
  gs_json_add_number(c, "timeout_seconds", o->timeout);
  cJSON_AddStringToObject(c, "launch", job->launch == GS_COMM_LAUNCH_MPI ? "mpi" : "threads");
  cJSON_AddStringToObject(c, "launcher", job->launcher);
  if (o->inject) cJSON_AddStringToObject(c, "inject", o->inject);
  return c;
}

/* ---- the command ---------------------------------------------------------------------- */

static void print_help(const gs_option *common_table, const coll_options *co) {
  printf(
      "usage: gpuscale coll OP [options]\n\n"
      "Measures collective operations over message sizes, like nccl-tests: time,\n"
      "algorithm and bus bandwidth, wrong elements; OP is one of allreduce, allgather,\n"
      "reducescatter, broadcast, reduce, alltoall, sendrecv, or all.\n"
      "One process drives every selected GPU (one thread each); under mpirun or srun\n"
      "each process is one rank (see docs/collectives.md).\n\nCommon options:\n");
  gs_options_help(stdout, common_table);
  printf("\nCollective options:\n");
  gs_options_help(stdout, co->table);
}

static int wants_help(int argc, char **argv) {
  for (int i = 0; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
  return 0;
}

typedef struct {
  gs_common_options common;
  gs_option common_table[GS_COMMON_OPTION_COUNT];
  coll_options co;
  coll_target target;
  gs_comm_job job;
  gs_run_config config;
  int local_ranks;
  int local_devices[GS_MAX_RANKS];
  gs_environment env;
  gs_comm_world *world;
  uint64_t *sizes;
  size_t n_sizes;
  cJSON *doc;
  char path[GS_TEXT_LONG];
} coll_session;

static gs_status parse(coll_session *cs, int argc, char **argv, int *help) {
  gs_common_init(&cs->common, 0);
  cs->common.warmup = 5; /* nccl-tests' defaults */
  cs->common.iters = 20;
  common_subset(&cs->common, cs->common_table);
  coll_options_init(&cs->co);
  *help = wants_help(argc, argv);
  if (*help) {
    print_help(cs->common_table, &cs->co);
    return GS_OK;
  }
  const gs_option *tables[] = {cs->co.table, cs->common_table, NULL};
  GS_TRY(gs_options_parse(tables, "gpuscale coll", argc, argv, take_op, &cs->target));
  if (!cs->target.given)
    return gs_error(GS_ERR_USAGE,
                    "gpuscale coll: missing OP (one of allreduce, allgather, "
                    "reducescatter, broadcast, reduce, alltoall, sendrecv, all)");
  gs_set_quiet(cs->common.quiet);
  if (cs->co.given_redop && !cs->target.all && !gs_coll_has_redop(cs->target.op))
    return gs_error(GS_ERR_USAGE, "option -o/--op: %s has no reduction",
                    gs_coll_op_names[cs->target.op]);
  if (cs->co.given_root && !cs->target.all && !gs_coll_has_root(cs->target.op))
    return gs_error(GS_ERR_USAGE, "option -r/--root: %s has no root",
                    gs_coll_op_names[cs->target.op]);
  return make_sizes(&cs->co, &cs->sizes, &cs->n_sizes);
}

static gs_status prepare(coll_session *cs) {
  GS_TRY(gs_common_choose_ranks(&cs->common, 1, &cs->job, &cs->config, &cs->local_ranks,
                                cs->local_devices));
  cs->config.iters = cs->common.iters; /* always a fixed count here */
  cs->config.runs = 1;
  if (cs->co.root >= (uint64_t)cs->config.world_size)
    return gs_error(GS_ERR_USAGE, "option -r/--root: rank %llu of a world of %d ranks",
                    (unsigned long long)cs->co.root, cs->config.world_size);
  if (cs->config.backend == GS_BACKEND_CPU &&
      (cs->co.dtype == GS_DTYPE_HALF || cs->co.dtype == GS_DTYPE_BFLOAT16))
    return gs_error(GS_ERR_USAGE, "option -d/--datatype %s needs the cuda backend",
                    gs_dtype_names[cs->co.dtype]);
  if (cs->co.transport != GS_TRANSPORT_AUTO && cs->config.backend != GS_BACKEND_CUDA)
    return gs_error(GS_ERR_USAGE, "option --transport applies to NCCL on the cuda backend");
  GS_TRY(gs_comm_transport_apply((gs_transport)cs->co.transport));
  GS_TRY(gs_common_environment(&cs->env));
  gs_comm_world_config wc = {.backend = cs->config.backend,
                             .local_ranks = cs->local_ranks,
                             .devices = cs->local_devices,
                             .timeout_seconds = cs->co.timeout};
  GS_TRY(gs_comm_world_create(&cs->job, &wc, &cs->world));
  if (cs->common.out)
    snprintf(cs->path, sizeof cs->path, "%s", cs->common.out);
  else
    snprintf(cs->path, sizeof cs->path, "results/coll-%s.json",
             cs->target.all ? "all" : gs_coll_op_names[cs->target.op]);
  return GS_OK;
}

static gs_status start_document(coll_session *cs, int argc, char **argv) {
  cs->doc = gs_result_new("coll", argc, argv);
  if (!cs->doc) return gs_error(GS_ERR_NOMEM, "cannot create the result document");
  cJSON *config = gs_common_config_json(&cs->common, &cs->config, NULL, NULL);
  if (!config) return gs_error(GS_ERR_NOMEM, "cannot build the config block");
  cJSON_AddItemToObject(config, "coll", coll_config_json(&cs->co, &cs->target, &cs->job));
  cJSON *nccl_env = gs_comm_nccl_environment_json();
  cJSON_AddItemToObject(config, "nccl_environment", nccl_env ? nccl_env : cJSON_CreateNull());
  GS_TRY(gs_result_set_config(cs->doc, config));
  GS_TRY(gs_result_set_environment(cs->doc, &cs->env));
  // The links, so that reports set bus bandwidth against them.
  return cs->config.backend == GS_BACKEND_CUDA ? gs_topology_attach(cs->doc, &cs->env) : GS_OK;
}

/* Measures one op; process 0 prints its table and rewrites the document. */
static gs_status sweep_op(coll_session *cs, gs_coll_op op, int delay_rank, double delay_seconds,
                          int *failed_measurements, int *measurements) {
  const char *launch = cs->job.launch == GS_COMM_LAUNCH_MPI ? "mpi" : "threads";
  const char *transport = gs_transport_names[cs->co.transport];
  gs_coll_sweep s = {.op = op,
                     .dtype = (gs_dtype)cs->co.dtype,
                     .redop = (gs_redop)cs->co.redop,
                     .root = (int)cs->co.root,
                     .sizes = cs->sizes,
                     .n_sizes = cs->n_sizes,
                     .out_of_place = cs->co.place != PLACE_IN,
                     .in_place = cs->co.place != PLACE_OUT,
                     .warmup = cs->common.warmup,
                     .iters = cs->common.iters,
                     .check = cs->co.check != 0,
                     .backend = cs->config.backend,
                     .job = &cs->job,
                     .world = cs->world,
                     .local_ranks = cs->local_ranks,
                     .devices = cs->local_devices,
                     .delay_rank = delay_rank,
                     .delay_seconds = delay_seconds};
  gs_coll_point *pts = NULL;
  size_t n = 0;
  gs_status status = gs_coll_measure(&s, &pts, &n);
  // Writing what was measured may record errors it tolerates; the failure
  // of the measurement is what the command reports.
  char failure[GS_TEXT_ERROR];
  snprintf(failure, sizeof failure, "%s", status != GS_OK ? gs_last_error() : "");
  if (cs->job.process_rank == 0 && pts) {
    int world_size = gs_comm_world_size(cs->world);
    print_header(stdout, &s, world_size, launch, transport, pts, n);
    print_rows(stdout, &s, pts, n);
    print_footer(stdout, pts, n);
    add_models(cs->doc, stdout, &s, pts, n, world_size);
    fputc('\n', stdout);
    fflush(stdout);
    if (n > 0 && cs->job.launch == GS_COMM_LAUNCH_MPI)
      for (int k = 0; k < world_size && k < GS_MAX_RANKS; k++)
        cs->config.devices[k] = pts[0].m.runs[0].ranks[k].device;
    gs_status added = add_points(cs->doc, &s, pts, n, launch, transport);
    for (size_t i = 0; i < n; i++) {
      if (pts[i].shape.bytes == 0) continue;
      (*measurements)++;
      if (pts[i].m.status != GS_OK) (*failed_measurements)++;
    }
    if (added == GS_OK) {
      GS_TRY(gs_result_set_status(cs->doc, *failed_measurements == 0               ? "ok"
                                           : *failed_measurements == *measurements ? "failed"
                                                                                   : "partial"));
      added = gs_result_write(cs->doc, cs->path);
    }
    if (added != GS_OK && status == GS_OK) status = added;
  }
  gs_coll_points_free(pts, n);
  if (status != GS_OK && failure[0]) gs_error(status, "%s", failure);
  return status;
}

gs_status gs_cmd_coll(int argc, char **argv) {
  coll_session *cs = calloc(1, sizeof *cs);
  if (!cs) return gs_error(GS_ERR_NOMEM, "cannot allocate the coll session");
  int help = 0;
  gs_status status = parse(cs, argc, argv, &help);
  gs_comm_job_detect(&cs->job);
  if (status == GS_OK && !help) status = gs_comm_job_start(&cs->job);
  int delay_rank = -1;
  double delay_seconds = 0.0;
  if (status == GS_OK && !help && cs->co.inject)
    status = parse_inject(cs->co.inject, &delay_rank, &delay_seconds);
  if (status == GS_OK && !help) status = prepare(cs);
  if (status == GS_OK && !help && cs->job.process_rank == 0)
    status = start_document(cs, argc, argv);
  int failed = 0, measured = 0;
  gs_status first_failure = GS_OK;
  for (int op = 0; status == GS_OK && !help && op < GS_COLL_COUNT; op++) {
    if (!cs->target.all && op != (int)cs->target.op) continue;
    gs_status s = sweep_op(cs, (gs_coll_op)op, delay_rank, delay_seconds, &failed, &measured);
    if (s != GS_OK && first_failure == GS_OK) first_failure = s;
    // A wrong result is reported and the sweep goes on; anything else stops it.
    if (s != GS_OK && s != GS_ERR_VERIFY) break;
  }
  if (status == GS_OK && !help && cs->job.process_rank == 0)
    gs_note("result written to %s", cs->path);
  if (status == GS_OK) status = first_failure;
  if (status != GS_OK && status != GS_ERR_VERIFY && status != GS_ERR_USAGE &&
      cs->job.launch == GS_COMM_LAUNCH_MPI && cs->job.mpi_started) {
    // Other processes may be blocked in communication that cannot be
    // cancelled: process 0 has written what it has, so end the whole job.
    if (cs->job.process_rank != 0) sleep(1);
    gs_comm_job_abort(&cs->job, gs_status_exit_code(status));
  }
  gs_comm_world_destroy(cs->world);
  gs_environment_free(&cs->env);
  cJSON_Delete(cs->doc);
  free(cs->sizes);
  gs_comm_job_finish(&cs->job);
  free(cs);
  return status;
}
