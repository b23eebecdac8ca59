/* `gpuscale coll OP`: parses the options, runs the collective sweep
 * (measure/coll_sweep.h) and prints each operation's table in nccl-tests'
 * layout with its alpha-beta fit (docs/collectives.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cmd_coll.h"
#include "cli/commands.h"
#include "cli/help.h"
#include "core/check.h"
#include "measure/coll_sweep.h"

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

static void print_fits(FILE *out, const gs_coll_op_result *r) {
  for (int in_place = 0; in_place < 2; in_place++) {
    if (!r->fitted[in_place]) continue;
    const gs_coll_fit *fit = &r->fits[in_place];
    double bw = fit->beta_seconds_per_byte > 0.0 ? 1.0 / fit->beta_seconds_per_byte : NAN;
    fprintf(out, "# alpha-beta fit (%s): alpha %.2f us, bus bandwidth %.2f GB/s, r^2 %.4f\n",
            in_place ? "in-place" : "out-of-place", fit->alpha_seconds * 1e6,
            isfinite(bw) ? bw / 1e9 : 0.0, fit->r_squared);
  }
}

/* The observer: one operation's table once its sweep is done. */
static void print_op(void *ctx, const gs_coll_op_result *r) {
  (void)ctx;
  if (r->n_points == 0) {
    // `all --place in` leaves out the operations that have no in-place form.
    const gs_coll_op op = r->sweep->op;
    printf("# gpuscale coll %s: not measured (%s)\n\n", gs_coll_op_names[op],
           gs_coll_has_in_place(op) ? "no sizes" : "it has no in-place form");
    fflush(stdout);
    return;
  }
  print_header(stdout, r->sweep, r->world_size, r->launch, r->transport, r->points, r->n_points);
  print_rows(stdout, r->sweep, r->points, r->n_points);
  print_footer(stdout, r->points, r->n_points);
  print_fits(stdout, r);
  fputc('\n', stdout);
  fflush(stdout);
}

/* The observer of --arrival-cost: one size and form's cost, its last
 * line "cost X% [LOW, HIGH]: under 1%" (or "over 1%", "undecided"). */
static void print_cost(void *ctx, const gs_coll_cost_result *r) {
  (void)ctx;
  const gs_coll_sweep *s = r->sweep;
  const gs_arrival_cost *c = &r->cost;
  printf("# gpuscale coll %s --arrival-cost: %d ranks (%s), backend %s, type %s\n",
         gs_coll_op_names[s->op], r->world_size, r->launch,
         s->backend == GS_BACKEND_CUDA ? "cuda" : "cpu", gs_dtype_names[s->dtype]);
  printf("# %llu B %s: %zu pairs of 4 blocks of %zu iterations, recording in 2 of each "
         "(ABBA or BAAB, Thue-Morse order), warmup %llu\n",
         (unsigned long long)r->point->shape.bytes,
         r->point->in_place ? "in-place" : "out-of-place",
         c->pairs, c->block, (unsigned long long)s->warmup);
  printf("# per iteration (mean): %.3f us recording, %.3f us not; pairs from %+.2f%% to "
         "%+.2f%%\n", c->on_seconds * 1e6, c->off_seconds * 1e6, c->min * 100.0, c->max * 100.0);
  char verdict[32];
  if (c->verdict == GS_ARRIVAL_COST_UNDECIDED)
    snprintf(verdict, sizeof verdict, "undecided");
  else
    snprintf(verdict, sizeof verdict, "%s %g%%", gs_arrival_cost_verdict_name(c->verdict),
             c->target * 100.0);
  printf("cost %+.2f%% [%+.2f%%, %+.2f%%]: %s\n\n", c->cost * 100.0, c->low * 100.0,
         c->high * 100.0, verdict);
  fflush(stdout);
}

gs_coll_observer gs_coll_printer(void) {
  return (gs_coll_observer){.ctx = NULL, .op_done = print_op, .cost_done = print_cost};
}

/* ---- the command ---------------------------------------------------------------------- */

/* Options coll does not take, and why: listed by no help page, refused
 * with the reason. nccl-tests' -f is -f/--format in every gpuscale
 * command; its step factor is --stepfactor here. */
static const gs_option refused[] = {
    {.name = "min-time", .kind = GS_OPT_REFUSED,
     .help = "each size runs a fixed -n/--iters count (nccl-tests' timing)"},
    {.name = "runs", .kind = GS_OPT_REFUSED,
     .help = "each size and form is one timed batch of -n/--iters iterations"},
    {.name = "seed", .kind = GS_OPT_REFUSED,
     .help = "the input pattern is fixed so that every element can be checked"},
    {.name = "arrival", .kind = GS_OPT_REFUSED,
     .help = "is --arrival-times 0|1 now, its name in every measuring command"},
    {.name = "nccl-max-ctas", .kind = GS_OPT_REFUSED,
     .help = "coll measures NCCL as it comes, as nccl-tests does; NCCL_MAX_CTAS in the "
             "environment limits its CTAs (the document's config.nccl_environment keeps it)"},
    {.name = "telemetry-interval", .kind = GS_OPT_REFUSED, .help = "coll records no GPU telemetry"},
    {.name = "telemetry-series", .kind = GS_OPT_REFUSED, .help = "coll records no GPU telemetry"},
    {.name = "format", .short_name = 'f', .kind = GS_OPT_REFUSED,
     .help = "-f is --format in gpuscale and coll prints nccl-tests' table only; nccl-tests' "
             "-f (the step factor) is --stepfactor F here"},
    {.kind = GS_OPT_END}};

/* The common options' help as coll words it. */
static const gs_cli_wording wording[] = {
    {"out", "result file (default results/coll-<op>.json)"},
    {"iters", "timed iterations per size and form (default 20)"},
    {"warmup", "untimed iterations before each size and form"},
    {"arrival-times", "record every rank's entry and exit at each timed collective (arrival "
                      "skew, docs/stragglers.md); 0 records none (default 1)"},
    {"ranks", "CPU backend, one process: rank threads (default: the core count, at most 8)"},
    {"timeout", "abort the communicators when a wait lasts longer; the sizes measured before "
                "are kept (0: never)"},
    {NULL, NULL}};

/* The common groups coll takes: no --min-time, --runs, --seed or telemetry
 * (see `refused`). */
#define COLL_GROUPS                                                                        \
  (GS_GROUP_OUTPUT | GS_GROUP_DEVICES | GS_GROUP_WARMUP | GS_GROUP_ITERS | GS_GROUP_TIMEOUT | \
   GS_GROUP_ARRIVAL | GS_GROUP_TRACE)

/* The common options as coll shows them, with nccl-tests' defaults. */
static void init_common(gs_common_options *common) {
  gs_common_init(common, COLL_GROUPS);
  gs_coll_common_defaults(common);
  gs_cli_reword_options(common->table, wording);
}

/* -o is --out in every command; a reduction's name given to it was meant
 * for --op (nccl-tests' -o). */
static gs_status check_out(const gs_common_options *common) {
  for (size_t k = 0; common->out && gs_redop_names[k]; k++)
    if (strcmp(common->out, gs_redop_names[k]) == 0)
      return gs_error(GS_ERR_USAGE, "option -o/--out: '%s' is a reduction, not a result file: "
                      "-o is --out in every gpuscale command; give the reduction as --op %s",
                      common->out, common->out);
  return GS_OK;
}

static void print_help(const gs_common_options *common, const gs_coll_options *co) {
  gs_help_usage("gpuscale coll OP [options]");
  gs_help_para(
      "Measures collective operations over message sizes, like nccl-tests: time,\n"
      "algorithm and bus bandwidth, wrong elements; OP is one of allreduce, allgather,\n"
      "reducescatter, broadcast, reduce, alltoall, sendrecv, or all.\n"
      "One process drives every selected GPU (one thread each); under mpirun or srun\n"
      "each process is one rank (see docs/collectives.md). The result document is\n"
      "rewritten after every size: Ctrl-C, SIGTERM, a lost rank or a timeout keep the\n"
      "sizes measured before (exit 4).");
  gs_help_options("Collective options", co->table);
  gs_common_describe(common, gs_help_options);
  gs_help_para("nccl-tests' flags: -b, -e, -i, -n, -w, -c, -d, -r and -g N (the first N GPUs)\n"
               "mean what they mean there; its -f is --stepfactor and its -o is --op, because\n"
               "-f is --format and -o is --out in every gpuscale command.");
}

static gs_status take_op(void *ctx, const char *arg) {
  return gs_coll_options_take_op(ctx, arg);
}

gs_status gs_cmd_coll(int argc, char **argv) {
  gs_common_options common;
  gs_coll_options co;
  init_common(&common);
  gs_coll_options_init(&co);
  if (gs_cli_wants_help(argc, argv)) {
    print_help(&common, &co);
    return GS_OK;
  }
  const gs_option *tables[] = {co.table, common.table, refused, NULL};
  GS_TRY(gs_options_parse(tables, "gpuscale coll", argc, argv, take_op, &co));
  GS_TRY(check_out(&common));
  gs_set_quiet(common.quiet);
  const gs_coll_observer observer = gs_coll_printer();
  const gs_coll_request request = {
      .coll = &co, .common = &common, .observer = &observer};
  gs_status status = gs_measure_coll(&request);
  return status;
}
