/* `gpuscale check pairs`: localization by pairs on the CPU backend's ranks
 * (threads, or one per process under mpirun/srun) or on GPUs (one rank per
 * GPU: threads, or one process per GPU under a launcher): every pair in
 * the rounds of the round-robin tournament, a 2-rank all-reduce and a copy
 * each way (over several hosts: every pair of nodes in the rounds of the
 * node bisection, between their leaders), the suspects measured again
 * alone in a confirming round, judged by elimination into a slow rank,
 * GPU or node, link, nothing or an inconclusive verdict with its reason,
 * with an action per finding, as text or JSON. Exit 0 nothing named, 5 a
 * rank, GPU, node or link named, 6 a slow pair that cannot be told apart
 * or an inconclusive verdict. docs/check.md, "Localization by pairs". */
#include <math.h>
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
#include "measure/common.h"
#include "platform/device.h"
#include "report/verdict/check_pairs.h"

static const char *const format_choices[] = {"text", "json", NULL};
static const char *const kind_keys[2] = {"allreduce", "copy"};

static gs_status reject_positional(void *ctx, const char *arg) {
  (void)ctx;
  return gs_error(GS_ERR_USAGE, "gpuscale check pairs: unexpected argument '%s'", arg);
}

/* The verdicts of the rounds and of the confirming round, and the decision. */
typedef struct {
  gs_pairs_verdict rounds[2], alone[2];
  gs_pairs_decision d;
  char reason[512];
} judgement;

/* Both kinds' verdicts of a set of measured pairs. */
static gs_status judge_set(const gs_check_pairs_set *set, size_t n_units, gs_pairs_verdict v[2]) {
  gs_pairs_sample *s = calloc(set->n_pairs ? set->n_pairs : 1, sizeof *s);
  if (!s) return gs_error(GS_ERR_NOMEM, "check pairs: out of memory");
  gs_status st = GS_OK;
  for (int k = 0; k < 2 && st == GS_OK; k++) {
    for (size_t i = 0; i < set->n_pairs; i++)
      s[i] = (gs_pairs_sample){set->a[i], set->b[i], set->seconds[k] + i * (size_t)set->iters,
                               (size_t)set->iters};
    st = gs_pairs_judge(s, set->n_pairs, n_units, &v[k]);
  }
  free(s);
  return st;
}

/* The confirming round's pairs, chosen in every process from the rounds'
 * times (gs_check_pairs_confirm_fn). */
static gs_status choose_again(void *ctx, const gs_check_pairs_times *t, gs_check_pairs_list *again) {
  judgement *J = ctx;
  GS_TRY(judge_set(&t->pairs, t->n_units, J->rounds));
  return gs_pairs_confirm_choose(J->rounds, &again->a, &again->b, &again->n);
}

/* What a unit is called in text: a node, a GPU or a (CPU) rank. */
static const char *unit_word(const gs_check_pairs_times *t) {
  return t->nodes ? "node" : t->cuda ? "GPU" : "rank";
}

/* The judged word of pair i: "rank"/"gpu"/"node" for a named unit's. */
static const char *judged_word(const gs_check_pairs_times *t, const judgement *J, size_t i) {
  if (J->d.judged[i] == GS_PAIRS_UNIT) return t->nodes ? "node" : t->cuda ? "gpu" : "rank";
  return gs_pairs_judged_names[J->d.judged[i]];
}

/* The lowest rank of node u (its leader). */
static int leader_of(const gs_check_pairs_times *t, size_t u) {
  for (size_t k = 0; k < t->n_ranks; k++)
    if (t->node_of[k] == (int)u) return (int)k;
  return 0;
}

/* The GPU of rank k as "CUDA device D, PCI P, host H". */
static void gpu_words(const gs_check_pairs_times *t, int k, char *buf, size_t size) {
  snprintf(buf, size, "CUDA device %d, PCI %s, host %s", t->device[k], t->pci[k],
           t->host[t->node_of[k]]);
}

/* The lines that say which GPU each unit is (cuda): a GPU per rank, or
 * each node's host and the GPU of its leader. */
static void print_gpus(FILE *out, const gs_check_pairs_times *t) {
  char gpu[160];
  for (size_t u = 0; u < t->n_units; u++) {
    const int k = t->nodes ? leader_of(t, u) : (int)u;
    gpu_words(t, k, gpu, sizeof gpu);
    if (t->nodes)
      fprintf(out, "  node %zu: %s (its leader, rank %d: CUDA device %d, PCI %s)\n", u,
              t->host[u], k, t->device[k], t->pci[k]);
    else
      fprintf(out, "  GPU %zu: %s\n", u, gpu);
  }
}

/* What the confirming round measured pair c for. */
static const char *role(const gs_check_pairs_times *t, const judgement *J, size_t c) {
  const long i = (long)c; /* find the decision's pair measured as c */
  for (size_t k = 0; k < J->d.n_pairs; k++) {
    if (J->d.alone[k] != i) continue;
    if (k >= t->pairs.n_pairs) return "added";
    if (gs_pairs_suspect(&J->rounds[0].pairs[k]) || gs_pairs_suspect(&J->rounds[1].pairs[k]))
      return "suspect";
    return J->rounds[0].pairs[k].reference || J->rounds[1].pairs[k].reference ? "reference"
                                                                              : "neighbour";
  }
  return "reference";
}

static void print_cells(FILE *out, const gs_pairs_verdict v[2], size_t i) {
  for (int k = 0; k < 2; k++) {
    const gs_pairs_result *p = &v[k].pairs[i];
    char cell[64];
    snprintf(cell, sizeof cell, "%.2fx [%.2f, %.2f]%s", p->ratio, p->low, p->high,
             p->slow ? " slow" : "");
    fprintf(out, " %-26s", cell);
  }
}

static void print_text(FILE *out, const gs_check_pairs_times *t, const judgement *J,
                       size_t bytes, double elapsed) {
  const char *unit = unit_word(t);
  fprintf(out, "gpuscale check pairs: %s (%zu %ss, %zu rounds of disjoint pairs%s, %zu pairs, "
          "%zu bytes, %d iterations each) in %.2f s\n", J->d.overall, t->n_units, unit,
          t->rounds, t->nodes ? " by node bisection" : "", t->pairs.n_pairs, bytes,
          t->pairs.iters, elapsed);
  if (t->cuda) print_gpus(out, t);
  for (size_t u = 0; !t->cuda && t->nodes && u < t->n_nodes; u++)
    fprintf(out, "  node %zu: %s\n", u, t->host[u]);
  // The CPUs' share of the ranks is CPU ranks' business: a GPU rank's
  // exchanges run on its GPU.
  if (!t->cuda) {
    fprintf(out, "  host %s: %d ranks on %d CPUs", t->busiest_host, t->busiest_ranks,
            t->busiest_cores);
    if (isfinite(t->load_average)) fprintf(out, ", load average %.1f", t->load_average);
    if (t->slots > t->rounds)
      fprintf(out, ": the rounds in %zu slots, no more ranks at work at once than CPUs",
              t->slots);
    fprintf(out, "%s\n", t->pin_refused ? " (a rank could not be pinned to its CPU)" : "");
  }
  fprintf(out, "  pair   %-26s %-26s judged\n", "all-reduce vs best pairs", "copy vs best pairs");
  for (size_t i = 0; i < t->pairs.n_pairs; i++) {
    fprintf(out, "  %d-%-4d", t->pairs.a[i], t->pairs.b[i]);
    print_cells(out, J->rounds, i);
    fprintf(out, " %s\n", J->d.judged[i] == GS_PAIRS_FINE ? "-" : judged_word(t, J, i));
  }
  if (t->confirm.n_pairs > 0) {
    fprintf(out, "  confirming round, each pair alone (%d iterations each):\n", t->confirm.iters);
    for (size_t c = 0; c < t->confirm.n_pairs; c++) {
      fprintf(out, "  %d-%-4d", t->confirm.a[c], t->confirm.b[c]);
      print_cells(out, J->alone, c);
      fprintf(out, " %s\n", role(t, J, c));
    }
  }
  for (size_t u = 0; u < t->n_units; u++) {
    if (!J->d.unit[u]) continue;
    char gpu[160];
    if (t->cuda && !t->nodes) gpu_words(t, (int)u, gpu, sizeof gpu);
    if (t->cuda && !t->nodes)
      fprintf(out, "  action: investigate: GPU %zu (%s) is slow with every partner (the GPU or "
              "its own connection, not a link between two)\n", u, gpu);
    else
      fprintf(out, "  action: investigate: %s %zu is slow with every partner (%s, not a link)\n",
              unit, u, t->nodes ? "the node" : "its GPU or node");
  }
  for (size_t i = 0; i < J->d.n_pairs; i++) {
    if (J->d.judged[i] == GS_PAIRS_LINK)
      fprintf(out, "  action: investigate: the link between %s %d and %s %d (slow only "
              "together, also alone; each is fine with another partner)\n", unit, J->d.a[i],
              unit, J->d.b[i]);
    if (J->d.judged[i] == GS_PAIRS_UNDECIDED)
      fprintf(out, "  action: investigate: %ss %d and %d are slow together; no other pair "
              "tells the %s from the link\n", unit, J->d.a[i], J->d.b[i], unit);
  }
  if (J->d.inconclusive)
    fprintf(out, "  inconclusive: %s; rerun on a quieter host or with more -n\n", J->reason);
  if (!J->d.units && !J->d.links && !J->d.undecided && !J->d.inconclusive)
    fprintf(out, "  nothing named: no pair's interval is above %.2fx of the best pairs%s\n",
            1.0 + GS_PAIRS_THRESHOLD, t->confirm.n_pairs ? " alone" : "");
}

/* One kind's figures of a pair; `raw` its samples (iters). */
static void put_kind(gs_json_build *b, cJSON *p, int k, const gs_pairs_result *r,
                     const double *raw, int iters) {
  cJSON *o = gs_json_put_object(b, p, kind_keys[k]);
  if (!o) return;
  gs_json_put_number(b, o, "median_seconds", r->median);
  gs_json_put_number(b, o, "ratio", r->ratio);
  gs_json_put_number(b, o, "ratio_low", r->low);
  gs_json_put_number(b, o, "ratio_high", r->high);
  gs_json_put_bool(b, o, "slow", r->slow);
  cJSON *a = gs_json_put_array(b, o, "seconds");
  for (int i = 0; a && i < iters; i++) gs_json_append_number(b, a, raw[i]);
}

static gs_status pairs_document(const gs_check_pairs_times *t, const judgement *J, size_t bytes,
                                double elapsed, cJSON **out) {
  gs_json_build build = {0}, *b = &build;
  cJSON *doc = cJSON_CreateObject();
  gs_json_put_string(b, doc, "check", "pairs");
  gs_json_put_string(b, doc, "overall", J->d.overall);
  gs_json_put_string_or_null(b, doc, "reason", J->d.inconclusive ? J->reason : NULL);
  gs_json_put_number(b, doc, "ranks", (double)t->n_ranks);
  gs_json_put_string(b, doc, "backend", t->cuda ? "cuda" : "cpu");
  gs_json_put_string(b, doc, "schedule", t->nodes ? "node bisection" : "tournament");
  gs_json_put_number(b, doc, "rounds", (double)t->rounds);
  gs_json_put_number(b, doc, "slots", (double)t->slots);
  cJSON *host = gs_json_put_object(b, doc, "host");
  if (host) {
    gs_json_put_string(b, host, "name", t->busiest_host);
    gs_json_put_number(b, host, "ranks", t->busiest_ranks);
    gs_json_put_number(b, host, "cpus", t->busiest_cores);
    gs_json_put_number(b, host, "load_average", t->load_average);
    if (t->cuda)
      gs_json_put_null(b, host, "pinned"); /* GPU ranks are not pinned to CPUs */
    else
      gs_json_put_bool(b, host, "pinned", !t->pin_refused);
  }
  cJSON *gpus = t->cuda ? gs_json_put_array(b, doc, "gpus") : NULL;
  for (size_t k = 0; gpus && !b->failed && k < t->n_ranks; k++) {
    cJSON *g = cJSON_CreateObject();
    gs_json_append(b, gpus, g);
    if (b->failed) break;
    gs_json_put_number(b, g, "rank", (double)k);
    gs_json_put_string(b, g, "host", t->host[t->node_of[k]]);
    gs_json_put_number(b, g, "cuda_device", t->device[k]);
    gs_json_put_string(b, g, "pci_bus_id", t->pci[k]);
  }
  if (t->nodes) {
    cJSON *hosts = gs_json_put_array(b, doc, "nodes");
    for (size_t u = 0; hosts && u < t->n_nodes; u++) gs_json_append_string(b, hosts, t->host[u]);
  }
  gs_json_put_number(b, doc, "bytes", (double)bytes);
  gs_json_put_number(b, doc, "iterations", t->pairs.iters);
  gs_json_put_number(b, doc, "threshold", 1.0 + GS_PAIRS_THRESHOLD);
  gs_json_put_number(b, doc, "seconds", elapsed);
  cJSON *pairs = gs_json_put_array(b, doc, "pairs");
  for (size_t i = 0; pairs && !b->failed && i < t->pairs.n_pairs; i++) {
    cJSON *p = cJSON_CreateObject();
    gs_json_append(b, pairs, p);
    if (b->failed) break;
    gs_json_put_number(b, p, "a", t->pairs.a[i]);
    gs_json_put_number(b, p, "b", t->pairs.b[i]);
    gs_json_put_string(b, p, "judged", judged_word(t, J, i));
    for (int k = 0; k < 2; k++)
      put_kind(b, p, k, &J->rounds[k].pairs[i], t->pairs.seconds[k] + i * (size_t)t->pairs.iters,
               t->pairs.iters);
  }
  cJSON *again = gs_json_put_array(b, doc, "confirm");
  for (size_t c = 0; again && !b->failed && c < t->confirm.n_pairs; c++) {
    cJSON *p = cJSON_CreateObject();
    gs_json_append(b, again, p);
    if (b->failed) break;
    gs_json_put_number(b, p, "a", t->confirm.a[c]);
    gs_json_put_number(b, p, "b", t->confirm.b[c]);
    gs_json_put_string(b, p, "role", role(t, J, c));
    for (int k = 0; k < 2; k++)
      put_kind(b, p, k, &J->alone[k].pairs[c],
               t->confirm.seconds[k] + c * (size_t)t->confirm.iters, t->confirm.iters);
  }
  cJSON *ranks = gs_json_put_array(b, doc, t->nodes ? "named_nodes" : "named_ranks");
  cJSON *links = gs_json_put_array(b, doc, "named_links");
  for (size_t u = 0; ranks && u < t->n_units; u++)
    if (J->d.unit[u]) gs_json_append_number(b, ranks, (double)u);
  for (size_t i = 0; links && !b->failed && i < J->d.n_pairs; i++)
    if (J->d.judged[i] == GS_PAIRS_LINK) {
      cJSON *l = cJSON_CreateArray();
      gs_json_append(b, links, l);
      if (b->failed) break;
      gs_json_append_number(b, l, J->d.a[i]);
      gs_json_append_number(b, l, J->d.b[i]);
    }
  *out = gs_json_build_finish(b, doc);
  return *out ? GS_OK : gs_error(GS_ERR_NOMEM, "check pairs: out of memory for the document");
}

/* Judges the measured times into J (the rounds' verdicts are there
 * already when the confirming round was chosen). */
static gs_status judge(const gs_check_pairs_times *t, judgement *J) {
  if (!J->rounds[0].pairs) GS_TRY(judge_set(&t->pairs, t->n_units, J->rounds));
  if (t->confirm.n_pairs > 0) GS_TRY(judge_set(&t->confirm, t->n_units, J->alone));
  GS_TRY(gs_pairs_decide(J->rounds, t->confirm.n_pairs > 0 ? J->alone : NULL, &J->d));
  // GPU ranks' reason tells no share of CPUs (cpus 0): not theirs.
  const gs_pairs_host host = {.unit = unit_word(t), .host = t->busiest_host,
                              .ranks = t->busiest_ranks, .cpus = t->cuda ? 0 : t->busiest_cores,
                              .load_average = t->load_average};
  gs_pairs_reason(&J->d, J->rounds, J->alone, &host, J->reason, sizeof J->reason);
  return GS_OK;
}

static void print_help(const gs_option *table) {
  gs_help_usage("gpuscale check pairs [options]");
  gs_help_para("Localization by pairs: every pair of ranks in the rounds of a round-robin\n"
               "tournament (R - 1 rounds of disjoint pairs for R ranks), a 2-rank all-reduce and\n"
               "a copy each way, judged by elimination: a rank slow with every partner is the\n"
               "rank, a pair slow only together the link. Ranks: GPUs (--backend cuda, the\n"
               "default where CUDA finds any: every GPU, or --gpus; one per process under\n"
               "mpirun/srun), each exchange through NCCL on device buffers, timed by CUDA\n"
               "events, 64 MiB by default; or the CPU backend's ranks (--ranks threads, or one\n"
               "per process under mpirun/srun), 1 MiB. When the processes run on several\n"
               "hosts, the nodes instead: their leaders meet in the ceil(log2 N) rounds of the\n"
               "node bisection (node u meets u XOR 2^r), and a node slow with every partner is\n"
               "named. A round's CPU ranks never outnumber a host's CPUs (its pairs then take\n"
               "turns; a round's GPU pairs always run at once), and the pairs found slow are\n"
               "measured again, each alone, before anything is named; one neither clearly slow\n"
               "nor clearly fine then makes the verdict inconclusive, with the reason. Exit 0\n"
               "nothing named, 5 a rank, GPU, node or link named, 6 undecided or inconclusive.\n"
               "See docs/check.md, \"Localization by pairs\".");
  gs_help_example("gpuscale check pairs --gpus 0-3 --inject slow:rank=2,factor=3");
  gs_help_example("mpirun -np 8 gpuscale check pairs --backend cuda --format json -o pairs.json");
  gs_help_example("gpuscale check pairs --ranks 4 --inject slowpair:rank=1,peer=2,factor=4");
  gs_help_options("Options", table);
}

/* The backend and the GPUs: auto takes the GPUs where CUDA finds any and
 * --ranks is not given, else the CPU ranks; GPUs are --gpus (CUDA
 * ordinals) or every GPU. g receives them (world_size, devices). */
static gs_status resolve(int choice, int given_ranks, const char *gpus, gs_backend *backend,
                         gs_run_config *g) {
  memset(g, 0, sizeof *g);
  // The syntax first: a malformed list is a usage error on any machine.
  if (gpus) GS_TRY(gs_common_parse_gpus(gpus, "--gpus", -1, g));
  if (gpus && given_ranks)
    return gs_error(GS_ERR_USAGE, "options --gpus and --ranks conflict: --gpus names GPUs (the "
                    "cuda backend), --ranks counts CPU ranks");
  char why[GS_TEXT_LONG] = "";
  const int count = given_ranks && choice != GS_BACKEND_CHOICE_CUDA ? 0
                                                                   : gs_device_count(why, sizeof why);
  if (choice == GS_BACKEND_CHOICE_AUTO)
    choice = !given_ranks && (count > 0 || gpus) ? GS_BACKEND_CHOICE_CUDA : GS_BACKEND_CHOICE_CPU;
  *backend = choice == GS_BACKEND_CHOICE_CUDA ? GS_BACKEND_CUDA : GS_BACKEND_CPU;
  if (*backend == GS_BACKEND_CPU) {
    if (gpus)
      return gs_error(GS_ERR_USAGE, "option --gpus applies to the cuda backend; the cpu backend "
                      "takes --ranks");
    return GS_OK;
  }
  if (given_ranks)
    return gs_error(GS_ERR_USAGE, "option --ranks applies to the cpu backend; select GPUs with "
                    "--gpus");
  if (count == 0)
    return gs_error(GS_ERR_UNSUPPORTED, "%s: %s", gpus ? "option --gpus" : "--backend cuda", why);
  if (gpus) return gs_common_parse_gpus(gpus, "--gpus", count, g);
  g->world_size = count < GS_MAX_RANKS ? count : GS_MAX_RANKS;
  for (int k = 0; k < g->world_size; k++) g->devices[k] = k;
  return GS_OK;
}

/* The faults check pairs rehearses on `backend`: slow on both, slowpair
 * in the CPU backend's host transport, late on GPUs. */
static gs_status check_faults(const gs_fault_list *faults, gs_backend backend) {
  for (size_t i = 0; i < faults->n; i++) {
    const gs_fault_kind k = faults->items[i].kind;
    if (backend == GS_BACKEND_CUDA && k == GS_FAULT_SLOWPAIR)
      return gs_error(GS_ERR_USAGE, "option --inject slowpair: a slow link is rehearsed in the "
                      "cpu backend's host transport only; NCCL's transfers between GPUs are "
                      "untouched (on GPUs check pairs rehearses slow and late)");
    if (backend == GS_BACKEND_CUDA && k != GS_FAULT_SLOW && k != GS_FAULT_LATE)
      return gs_error(GS_ERR_USAGE, "option --inject %s: on GPUs check pairs rehearses slow and "
                      "late", gs_fault_kind_name(k));
    if (backend == GS_BACKEND_CPU && k != GS_FAULT_SLOW && k != GS_FAULT_SLOWPAIR)
      return gs_error(GS_ERR_USAGE, "option --inject %s: check pairs rehearses slow and slowpair "
                      "on CPU ranks, slow and late on GPUs", gs_fault_kind_name(k));
  }
  return GS_OK;
}

/* See commands.h. */
gs_status gs_cmd_check_pairs(int argc, char **argv) {
  int format = 0, backend_choice = GS_BACKEND_CHOICE_AUTO, given_ranks = 0, given_size = 0;
  uint64_t ranks = 4, bytes = 1 << 20, iters = 20, warmup = 2;
  double timeout = 60;
  gs_string_list injects = {0};
  const char *out_path = NULL, *gpus = NULL;
  const gs_option table[] = {
      {.name = "backend", .kind = GS_OPT_CHOICE, .target = &backend_choice,
       .choices = gs_backend_choices, .metavar = "auto|cuda|cpu",
       .help = "GPUs or CPU ranks (default auto: the GPUs where CUDA finds any, unless --ranks)"},
      {.name = "gpus", .kind = GS_OPT_STRING, .target = &gpus, .metavar = "LIST",
       .help = "the GPUs, CUDA ordinals as 0,2 or 0-3 (default every GPU); under a launcher "
               "each process takes one by its local rank"},
      {.name = "ranks", .kind = GS_OPT_COUNT, .target = &ranks, .min = 2, .max = 64,
       .metavar = "N", .given = &given_ranks,
       .help = "CPU rank threads (default 4); under a launcher, the job's processes"},
      {.name = "size", .short_name = 'b', .kind = GS_OPT_SIZE, .target = &bytes, .min = 4,
       .max = 1ull << 30, .metavar = "BYTES", .given = &given_size,
       .help = "of each exchange (default 64M on GPUs, 1M on CPU ranks)"},
      {.name = "iters", .short_name = 'n', .kind = GS_OPT_COUNT, .target = &iters, .min = 2,
       .max = 100000, .metavar = "N", .help = "timed exchanges per pair and kind (default 20)"},
      {.name = "warmup", .short_name = 'w', .kind = GS_OPT_COUNT, .target = &warmup, .min = 0,
       .max = 1000, .metavar = "N", .help = "untimed exchanges before them (default 2)"},
      {.name = "timeout", .kind = GS_OPT_DOUBLE, .target = &timeout, .dmin = 0.1, .dmax = 86400,
       .metavar = "SECONDS", .help = "longest wait for a partner (default 60)"},
      {.name = "inject", .kind = GS_OPT_STRING_LIST, .target = &injects,
       .metavar = "KIND:rank=R,...",
       .help = "rehearse: slow:rank=R,factor=F (a slow rank, GPU or CPU), late:rank=R,us=U (a "
               "GPU arriving U us late at each exchange), slowpair:rank=A,peer=B,factor=F (a "
               "slow link between CPU ranks)"},
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
  for (size_t i = 0; i < injects.n; i++) GS_TRY(gs_fault_parse(injects.v[i], &faults));
  gs_backend backend = GS_BACKEND_CPU;
  gs_run_config g;
  GS_TRY(resolve(backend_choice, given_ranks, gpus, &backend, &g));
  GS_TRY(check_faults(&faults, backend));
  const int cuda = backend == GS_BACKEND_CUDA;
  if (cuda && !given_size) bytes = GS_CHECK_PAIRS_GPU_BYTES;
  judgement J;
  memset(&J, 0, sizeof J);
  const gs_check_pairs_options o = {.backend = backend, .ranks = cuda ? g.world_size : (int)ranks,
                                    .devices = g.devices, .n_devices = cuda ? g.world_size : 0,
                                    .bytes = (size_t)bytes,
                                    .warmup = (int)warmup, .iters = (int)iters,
                                    .timeout = timeout, .faults = &faults,
                                    .confirm = choose_again, .confirm_ctx = &J};
  const double start = gs_time_seconds();
  gs_check_pairs_times t;
  gs_status st = gs_check_pairs_measure(&o, &t);
  if (st == GS_OK) st = judge(&t, &J);
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
  if (verdict && (J.d.units || J.d.links))
    st = gs_error(GS_NODE_FAIL, "check pairs: %zu %s(s) and %zu link(s) named", J.d.units,
                  unit_word(&t), J.d.links);
  else if (verdict && J.d.undecided)
    st = gs_error(GS_NODE_WARN, "check pairs: %zu slow pair(s) undecided", J.d.undecided);
  else if (verdict && J.d.inconclusive)
    st = gs_error(GS_NODE_WARN, "check pairs: inconclusive: %s", J.reason);
  for (int k = 0; k < 2; k++) {
    gs_pairs_verdict_free(&J.rounds[k]);
    gs_pairs_verdict_free(&J.alone[k]);
  }
  gs_pairs_decision_free(&J.d);
  gs_check_pairs_times_free(&t);
  return st;
}
