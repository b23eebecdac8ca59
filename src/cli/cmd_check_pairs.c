/* `gpuscale check pairs`: localization by pairs on the CPU backend's ranks
 * (threads, or one per process under mpirun/srun): every pair in the
 * rounds of the round-robin tournament, a 2-rank all-reduce and a copy
 * each way (over several hosts: every pair of nodes in the rounds of the
 * node bisection, between their leaders), judged by elimination into a
 * slow rank or node, link or nothing, with
 * an action per finding, as text or JSON. Exit 0 nothing named, 5 a rank or
 * link named, 6 a slow pair that cannot be told apart. docs/check.md,
 * "Localization by pairs". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/help.h"
#include "core/check.h"
#include "core/json.h"
#include "core/options.h"
#include "core/result.h"
#include "core/timer.h"
#include "measure/check_pairs.h"
#include "report/verdict/check_pairs.h"

static const char *const format_choices[] = {"text", "json", NULL};
static const char *const kind_keys[2] = {"allreduce", "copy"};

static gs_status reject_positional(void *ctx, const char *arg) {
  (void)ctx;
  return gs_error(GS_ERR_USAGE, "gpuscale check pairs: unexpected argument '%s'", arg);
}

/* The two kinds' verdicts combined: a rank named by either kind is the
 * rank; a slow pair of unnamed ranks is a link when either kind calls it
 * one, else undecided. */
typedef struct {
  gs_pairs_verdict v[2];
  int *unit;      /* n_units: named */
  int *pair_kind; /* n_pairs: 0 fine, 1 link, 2 undecided, 3 explained by a rank */
  size_t units, links, undecided;
} judgement;

static int fine_elsewhere(const gs_pairs_verdict *v, size_t i, int unit) {
  for (size_t j = 0; j < v->n_pairs; j++)
    if (j != i && !v->pairs[j].slow && (v->pairs[j].a == unit || v->pairs[j].b == unit)) return 1;
  return 0;
}

static void combine(judgement *J) {
  const size_t n = J->v[0].n_units, np = J->v[0].n_pairs;
  for (size_t u = 0; u < n; u++) {
    J->unit[u] = J->v[0].unit_slow[u] || J->v[1].unit_slow[u];
    J->units += (size_t)J->unit[u];
  }
  for (size_t i = 0; i < np; i++) {
    const gs_pairs_result *p = &J->v[0].pairs[i];
    int kind = 0;
    for (int k = 0; k < 2; k++) {
      const gs_pairs_verdict *v = &J->v[k];
      if (!v->pairs[i].slow) continue;
      if (J->unit[p->a] || J->unit[p->b])
        kind = kind ? kind : 3;
      else if (fine_elsewhere(v, i, p->a) && fine_elsewhere(v, i, p->b))
        kind = 1;
      else if (kind != 1)
        kind = 2;
    }
    J->pair_kind[i] = kind;
    J->links += kind == 1;
    J->undecided += kind == 2;
  }
}

static void print_text(FILE *out, const gs_check_pairs_times *t, const judgement *J,
                       size_t bytes, double elapsed) {
  const char *overall = J->units || J->links ? "fail" : J->undecided ? "warn" : "pass";
  const char *unit = t->nodes ? "node" : "rank";
  fprintf(out, "gpuscale check pairs: %s (%zu %ss, %zu rounds of disjoint pairs%s, %zu pairs, "
          "%zu bytes, %d iterations each) in %.2f s\n", overall, t->n_units, unit, t->rounds,
          t->nodes ? " by node bisection" : "", t->n_pairs, bytes, t->iters, elapsed);
  for (size_t u = 0; t->nodes && u < t->n_nodes; u++)
    fprintf(out, "  node %zu: %s\n", u, t->host[u]);
  fprintf(out, "  pair   %-26s %-26s judged\n", "all-reduce vs best pairs", "copy vs best pairs");
  for (size_t i = 0; i < t->n_pairs; i++) {
    char cell[2][64];
    for (int k = 0; k < 2; k++) {
      const gs_pairs_result *p = &J->v[k].pairs[i];
      snprintf(cell[k], sizeof cell[k], "%.2fx [%.2f, %.2f]%s", p->ratio, p->low, p->high,
               p->slow ? " slow" : "");
    }
    static const char *const judged[] = {"-", "link", "undecided", "rank"};
    fprintf(out, "  %d-%-4d %-26s %-26s %s\n", t->a[i], t->b[i], cell[0], cell[1],
            t->nodes && J->pair_kind[i] == 3 ? "node" : judged[J->pair_kind[i]]);
  }
  for (size_t u = 0; u < t->n_units; u++)
    if (J->unit[u])
      fprintf(out, "  action: investigate: %s %zu is slow with every partner (%s, not a link)\n",
              unit, u, t->nodes ? "the node" : "its GPU or node");
  for (size_t i = 0; i < t->n_pairs; i++) {
    if (J->pair_kind[i] == 1)
      fprintf(out, "  action: investigate: the link between %s %d and %s %d (slow only "
              "together; each is fine with another partner)\n", unit, t->a[i], unit, t->b[i]);
    if (J->pair_kind[i] == 2)
      fprintf(out, "  action: investigate: %ss %d and %d are slow together; no other pair "
              "tells the %s from the link\n", unit, t->a[i], t->b[i], unit);
  }
  if (!J->units && !J->links && !J->undecided)
    fprintf(out, "  nothing named: no pair's interval is above %.2fx of the best pairs\n",
            1.0 + GS_PAIRS_THRESHOLD);
}

static gs_status pairs_document(const gs_check_pairs_times *t, const judgement *J, size_t bytes,
                                double elapsed, cJSON **out) {
  gs_json_build build = {0}, *b = &build;
  cJSON *doc = cJSON_CreateObject();
  gs_json_put_string(b, doc, "check", "pairs");
  gs_json_put_string(b, doc, "overall",
                     J->units || J->links ? "fail" : J->undecided ? "warn" : "pass");
  gs_json_put_number(b, doc, "ranks", (double)t->n_ranks);
  gs_json_put_string(b, doc, "schedule", t->nodes ? "node bisection" : "tournament");
  gs_json_put_number(b, doc, "rounds", (double)t->rounds);
  if (t->nodes) {
    cJSON *hosts = cJSON_CreateArray();
    gs_json_put_item(b, doc, "nodes", hosts);
    for (size_t u = 0; !b->failed && u < t->n_nodes; u++)
      gs_json_append(b, hosts, cJSON_CreateString(t->host[u]));
  }
  gs_json_put_number(b, doc, "bytes", (double)bytes);
  gs_json_put_number(b, doc, "iterations", t->iters);
  gs_json_put_number(b, doc, "threshold", 1.0 + GS_PAIRS_THRESHOLD);
  gs_json_put_number(b, doc, "seconds", elapsed);
  cJSON *pairs = cJSON_CreateArray();
  gs_json_put_item(b, doc, "pairs", pairs);
  static const char *const judged[] = {"fine", "link", "undecided", "rank"};
  for (size_t i = 0; !b->failed && i < t->n_pairs; i++) {
    cJSON *p = cJSON_CreateObject();
    gs_json_append(b, pairs, p);
    if (b->failed) break;
    gs_json_put_number(b, p, "a", t->a[i]);
    gs_json_put_number(b, p, "b", t->b[i]);
    gs_json_put_string(b, p, "judged",
                       t->nodes && J->pair_kind[i] == 3 ? "node" : judged[J->pair_kind[i]]);
    for (int k = 0; k < 2; k++) {
      const gs_pairs_result *r = &J->v[k].pairs[i];
      cJSON *o = cJSON_CreateObject();
      gs_json_put_item(b, p, kind_keys[k], o);
      if (b->failed) break;
      gs_json_put_number(b, o, "median_seconds", r->median);
      gs_json_put_number(b, o, "ratio", r->ratio);
      gs_json_put_number(b, o, "ratio_low", r->low);
      gs_json_put_number(b, o, "ratio_high", r->high);
      gs_json_put_bool(b, o, "slow", r->slow);
    }
  }
  cJSON *ranks = cJSON_CreateArray(), *links = cJSON_CreateArray();
  gs_json_put_item(b, doc, t->nodes ? "named_nodes" : "named_ranks", ranks);
  gs_json_put_item(b, doc, "named_links", links);
  for (size_t u = 0; !b->failed && u < t->n_units; u++)
    if (J->unit[u]) gs_json_append(b, ranks, cJSON_CreateNumber((double)u));
  for (size_t i = 0; !b->failed && i < t->n_pairs; i++)
    if (J->pair_kind[i] == 1) {
      cJSON *l = cJSON_CreateArray();
      gs_json_append(b, links, l);
      if (b->failed) break;
      gs_json_append(b, l, cJSON_CreateNumber(t->a[i]));
      gs_json_append(b, l, cJSON_CreateNumber(t->b[i]));
    }
  *out = gs_json_build_finish(b, doc);
  return *out ? GS_OK : gs_error(GS_ERR_NOMEM, "check pairs: out of memory for the document");
}

static void print_help(const gs_option *table) {
  gs_help_usage("gpuscale check pairs [options]");
  gs_help_para("Localization by pairs on the CPU backend's ranks: every pair of ranks in the\n"
               "rounds of a round-robin tournament (R - 1 rounds of disjoint pairs for R ranks),\n"
               "a 2-rank all-reduce and a copy each way, judged by elimination: a rank slow with\n"
               "every partner is the rank, a pair slow only together the link. Ranks: --ranks\n"
               "threads, or one per process under mpirun/srun. When the processes run on\n"
               "several hosts, the nodes instead: their leaders meet in the ceil(log2 N) rounds\n"
               "of the node bisection (node u meets u XOR 2^r), and a node slow with every\n"
               "partner is named. Exit 0 nothing named, 5 a rank, node or link named,\n"
               "6 undecided. See docs/check.md, \"Localization by pairs\".");
  gs_help_example("gpuscale check pairs --ranks 4 --inject slowpair:rank=1,peer=2,factor=4");
  gs_help_example("mpirun -np 8 gpuscale check pairs --format json -o pairs.json");
  gs_help_options("Options", table);
}

/* See commands.h. */
gs_status gs_cmd_check_pairs(int argc, char **argv) {
  int format = 0;
  uint64_t ranks = 4, bytes = 1 << 20, iters = 20, warmup = 2;
  double timeout = 60;
  gs_string_list injects = {0};
  const char *out_path = NULL;
  const gs_option table[] = {
      {.name = "ranks", .kind = GS_OPT_COUNT, .target = &ranks, .min = 2, .max = 64,
       .metavar = "N", .help = "rank threads (default 4); under a launcher, the job's processes"},
      {.name = "size", .short_name = 'b', .kind = GS_OPT_SIZE, .target = &bytes, .min = 4,
       .max = 1ull << 30, .metavar = "BYTES", .help = "of each exchange (default 1M)"},
      {.name = "iters", .short_name = 'n', .kind = GS_OPT_COUNT, .target = &iters, .min = 2,
       .max = 100000, .metavar = "N", .help = "timed exchanges per pair and kind (default 20)"},
      {.name = "warmup", .short_name = 'w', .kind = GS_OPT_COUNT, .target = &warmup, .min = 0,
       .max = 1000, .metavar = "N", .help = "untimed exchanges before them (default 2)"},
      {.name = "timeout", .kind = GS_OPT_DOUBLE, .target = &timeout, .dmin = 0.1, .dmax = 86400,
       .metavar = "SECONDS", .help = "longest wait for a partner (default 60)"},
      {.name = "inject", .kind = GS_OPT_STRING_LIST, .target = &injects,
       .metavar = "KIND:rank=R,...",
       .help = "rehearse: slow:rank=R,factor=F (a slow rank), slowpair:rank=A,peer=B,factor=F "
               "(a slow link)"},
      {.name = "format", .short_name = 'f', .kind = GS_OPT_CHOICE, .target = &format,
       .choices = format_choices, .metavar = "text|json", .help = "output (default text)"},
      {.name = "out", .short_name = 'o', .kind = GS_OPT_STRING, .target = &out_path,
       .metavar = "FILE", .help = "write to FILE instead of standard output"},
      {.kind = GS_OPT_END},
  };
  if (gs_cli_wants_help(argc, argv)) {
    print_help(table);
    return GS_OK;
  }
  const gs_option *tables[] = {table, NULL};
  GS_TRY(gs_options_parse(tables, "gpuscale check pairs", argc, argv, reject_positional, NULL));
  if (out_path) GS_TRY(gs_file_check_output(out_path, "option --out"));
  gs_fault_list faults = {0};
  for (size_t i = 0; i < injects.n; i++) {
    GS_TRY(gs_fault_parse(injects.v[i], &faults));
    const gs_fault_kind k = faults.items[faults.n - 1].kind;
    if (k != GS_FAULT_SLOW && k != GS_FAULT_SLOWPAIR)
      return gs_error(GS_ERR_USAGE, "option --inject %s: check pairs rehearses slow and slowpair",
                      gs_fault_kind_name(k));
  }
  const gs_check_pairs_options o = {.ranks = (int)ranks, .bytes = (size_t)bytes,
                                    .warmup = (int)warmup, .iters = (int)iters,
                                    .timeout = timeout, .faults = &faults};
  const double start = gs_time_seconds();
  gs_check_pairs_times t;
  gs_status st = gs_check_pairs_measure(&o, &t);
  judgement J;
  memset(&J, 0, sizeof J);
  for (int k = 0; k < 2 && st == GS_OK; k++) {
    gs_pairs_sample *s = calloc(t.n_pairs ? t.n_pairs : 1, sizeof *s);
    if (!s) st = gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
    for (size_t i = 0; s && i < t.n_pairs; i++)
      s[i] = (gs_pairs_sample){t.a[i], t.b[i], t.seconds[k] + i * (size_t)t.iters,
                               (size_t)t.iters};
    if (st == GS_OK) st = gs_pairs_judge(s, t.n_pairs, t.n_units, &J.v[k]);
    free(s);
  }
  if (st == GS_OK) {
    J.unit = calloc(t.n_units, sizeof *J.unit);
    J.pair_kind = calloc(t.n_pairs ? t.n_pairs : 1, sizeof *J.pair_kind);
    st = J.unit && J.pair_kind ? GS_OK : gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
  }
  if (st == GS_OK) combine(&J);
  const double elapsed = gs_time_seconds() - start;
  // Under a launcher every process has the times; process 0 writes.
  if (st == GS_OK && t.process_rank == 0) {
    if (format == 1) {
      cJSON *doc = NULL;
      st = pairs_document(&t, &J, (size_t)bytes, elapsed, &doc);
      if (st == GS_OK) st = out_path ? gs_result_write(doc, out_path) : gs_json_print(stdout, doc);
      cJSON_Delete(doc);
    } else {
      gs_file_out out;
      st = gs_file_out_open(&out, out_path, NULL);
      if (st == GS_OK) {
        print_text(out.f, &t, &J, (size_t)bytes, elapsed);
        st = gs_file_out_commit(&out);
      }
    }
  }
  // The verdict's exit code is process 0's alone: another process leaving
  // with 5 first makes the launcher end the job before process 0 wrote.
  const int verdict = st == GS_OK && t.process_rank == 0;
  if (verdict && (J.units || J.links))
    st = gs_error(GS_NODE_FAIL, "check pairs: %zu %s(s) and %zu link(s) named", J.units,
                  t.nodes ? "node" : "rank", J.links);
  else if (verdict && J.undecided)
    st = gs_error(GS_NODE_WARN, "check pairs: %zu slow pair(s) undecided", J.undecided);
  for (int k = 0; k < 2; k++) gs_pairs_verdict_free(&J.v[k]);
  free(J.unit);
  free(J.pair_kind);
  gs_check_pairs_times_free(&t);
  return st;
}
