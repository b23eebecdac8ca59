/* Level 2 of `gpuscale check` (see check_stress.h): the triad on each GPU,
 * then host-GPU copies, then every ordered GPU pair, each timed, each
 * started only while the budget lasts. */
#include "measure/check_stress.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parse.h"
#include "core/timer.h"
#include "measure/common.h"
#include "p2p/membw.h"
#include "platform/comm.h"
#include "runner/coll.h"
#include "runner/runner.h"
#include "workloads/workload.h"

void gs_check_stress_options_default(gs_check_stress_options *o) {
  memset(o, 0, sizeof *o);
  o->deadline = INFINITY;
  for (size_t i = 0; i < GS_P2P_MAX_GPUS; i++) o->membw_slowdown[i] = 1.0;
  o->membw_array_bytes = 512ull << 20;
  o->copy_bytes = 256ull << 20;
}

gs_status gs_check_inject_parse(const char *text, gs_check_stress_options *o) {
  static const char prefix[] = "membw:gpu=";
  if (strncmp(text, prefix, sizeof prefix - 1) != 0)
    return gs_error(GS_ERR_USAGE, "option --inject: '%s': gpuscale check rehearses "
                    "membw:gpu=G,factor=F only", text);
  const char *p = text + sizeof prefix - 1;
  char *end = NULL;
  errno = 0;
  if (*p < '0' || *p > '9')
    return gs_error(GS_ERR_USAGE, "option --inject: '%s': gpu=G needs a CUDA ordinal", text);
  unsigned long long gpu = strtoull(p, &end, 10);
  if (errno || gpu >= GS_P2P_MAX_GPUS || strncmp(end, ",factor=", 8) != 0)
    return gs_error(GS_ERR_USAGE, "option --inject: '%s': expected membw:gpu=G,factor=F with G "
                    "below %d", text, GS_P2P_MAX_GPUS);
  p = end + 8;
  errno = 0;
  double f = strtod(p, &end);
  if (end == p || *end || errno || !(f > 0) || !(f < 1))
    return gs_error(GS_ERR_USAGE, "option --inject: '%s': factor=F needs a number in (0, 1) (the "
                    "share of its bandwidth the GPU keeps)", text);
  if (o->membw_slowdown[gpu] != 1.0)
    return gs_error(GS_ERR_USAGE, "option --inject: GPU %llu's memory bandwidth slowed twice",
                    gpu);
  o->membw_slowdown[gpu] = f;
  return GS_OK;
}

void gs_check_stress_free(gs_node_stress *s) {
  const size_t cells = s->workload_n * s->n * GS_HEALTH_WORKLOAD_ROUNDS;
  for (size_t i = 0; s->workload_steps && i < cells; i++) free(s->workload_steps[i].seconds);
  free(s->workload_steps);
  s->workload_steps = NULL;
  free(s->workload_rate);
  s->workload_rate = NULL;
  free(s->gpus);
  free(s->p2p_gbs);
  s->gpus = NULL;
  s->p2p_gbs = NULL;
  s->n = 0;
}

/* Appends `name` to the checks the budget left out. */
static void over_budget(gs_node_stress *s, const char *name) {
  size_t used = strlen(s->over_budget);
  snprintf(s->over_budget + used, sizeof s->over_budget - used, "%s%s", used ? ", " : "", name);
}

static void run_membw(const gs_check_stress_options *o, gs_node_stress *s, void (*phase)(int)) {
  const double t0 = gs_time_seconds();
  gs_membw_options mo;
  gs_membw_options_default(&mo);
  mo.array_bytes = o->membw_array_bytes;
  for (size_t i = 0; i < s->n; i++) {
    gs_gpu_stress *g = &s->gpus[i];
    if (gs_time_seconds() > o->deadline) {
      over_budget(s, "membw");
      break;
    }
    if (phase) phase(1000 + g->device);
    mo.slowdown = g->device < GS_P2P_MAX_GPUS ? o->membw_slowdown[g->device] : 1.0;
    gs_membw_result r;
    gs_membw_measure(g->device, &mo, &r);
    g->membw_done = 1;
    g->membw_slowdown = mo.slowdown;
    g->membw_gbs = r.median / 1e9;
    g->membw_mismatches = r.mismatches;
    if (r.status != GS_OK) snprintf(g->membw_error, sizeof g->membw_error, "%s", r.error);
  }
  s->membw_seconds = gs_time_seconds() - t0;
}

/* The median of test `key`'s cell (row, col) in GB/s, or NaN. */
static double cell_gbs(const gs_p2p_result *r, const char *key, size_t row, size_t col,
                       int per_gpu, char *error, size_t error_size) {
  for (size_t t = 0; t < r->n_tests; t++) {
    const gs_p2p_test *test = &r->tests[t];
    if (strcmp(test->key, key) != 0) continue;
    if (test->skipped) {
      snprintf(error, error_size, "%s", test->reason);
      return NAN;
    }
    const gs_p2p_cell *c = per_gpu ? &test->cells[row] : &test->cells[row * r->n_gpus + col];
    if (!c->measured || c->status != GS_OK) {
      if (c->error[0]) snprintf(error, error_size, "%s", c->error);
      return NAN;
    }
    return c->median / 1e9;
  }
  return NAN;
}

/* Level 1's pairs, as CUDA ordinals: one round of disjoint pairs, the
 * 1st GPU to the 2nd, the 3rd to the 4th ..., and with an odd count the
 * last to the first, so that every GPU takes part once. */
static void short_pairs(gs_node_stress *s, gs_p2p_options *po) {
  po->n_pairs = 0;
  for (size_t i = 0; i + 1 < s->n; i += 2) {
    s->gpus[i].p2p_source = 1;
    po->pairs[po->n_pairs][0] = s->gpus[i].device;
    po->pairs[po->n_pairs++][1] = s->gpus[i + 1].device;
  }
  if (s->n % 2 && s->n > 1) {
    s->gpus[s->n - 1].p2p_source = 1;
    po->pairs[po->n_pairs][0] = s->gpus[s->n - 1].device;
    po->pairs[po->n_pairs++][1] = s->gpus[0].device;
  }
}

static gs_status run_copies(const gs_check_stress_options *o, const gs_environment *env,
                            int mode, gs_node_stress *s) {
  gs_p2p_options po;
  gs_p2p_options_default(&po);
  po.size_bytes = o->copy_bytes;
  po.iters = 4;
  po.samples = 3;
  po.mode = mode;
  if (o->short_run) {
    po.size_bytes = GS_CHECK_SHORT_BYTES;
    po.only_test = "ce_unidir_p2p";  // the one test the check judges
    short_pairs(s, &po);
  }
  gs_p2p_result r;
  memset(&r, 0, sizeof r);
  gs_status st = gs_p2p_measure(&po, env, &r);
  if (st == GS_ERR_INTERRUPTED || st == GS_ERR_NOMEM) {
    gs_p2p_result_free(&r);
    return st;
  }
  if (st != GS_OK) {
    // A setup failure is this check's finding, not the command's error.
    if (mode == GS_P2P_MODE_HOST)
      for (size_t i = 0; i < s->n; i++)
        snprintf(s->gpus[i].host_error, sizeof s->gpus[i].host_error, "%s", gs_last_error());
    else
      snprintf(s->p2p_error, sizeof s->p2p_error, "%s", gs_last_error());
    gs_p2p_result_free(&r);
    return GS_OK;
  }
  for (size_t i = 0; i < s->n && i < r.n_gpus; i++) {
    if (mode == GS_P2P_MODE_HOST) {
      gs_gpu_stress *g = &s->gpus[i];
      g->host_done = 1;
      g->h2d_gbs = cell_gbs(&r, "host_to_device", i, 0, 1, g->host_error, sizeof g->host_error);
      g->d2h_gbs = cell_gbs(&r, "device_to_host", i, 0, 1, g->host_error, sizeof g->host_error);
      continue;
    }
    for (size_t j = 0; j < s->n && j < r.n_gpus; j++)
      if (i != j)
        s->p2p_gbs[i * s->n + j] =
            cell_gbs(&r, "ce_unidir_p2p", i, j, 0, s->p2p_error, sizeof s->p2p_error);
  }
  gs_p2p_result_free(&r);
  return GS_OK;
}

/* The all-reduce sweep over every GPU of this process (threads mode): 8
 * MiB to 512 MiB by 8, float sum, out of place, 5 warm-up and 20 timed
 * iterations, each size checked; level 1 (short) 64 MiB only, 2 warm-up
 * and 5 timed. Under a launcher (several processes) the GPUs are other
 * processes', so it is not run here. */
static void run_allreduce(int short_run, const gs_environment *env, gs_node_stress *s) {
  static const uint64_t sizes[] = {8ull << 20, 64ull << 20, 512ull << 20};
  static const uint64_t short_size[] = {GS_CHECK_SHORT_BYTES};
  gs_comm_job job;
  gs_comm_job_detect(&job);
  if (job.launch == GS_COMM_LAUNCH_MPI) {
    snprintf(s->allreduce_error, sizeof s->allreduce_error,
             "under a launcher: run the check once per node, without mpirun or srun");
    return;
  }
  int devices[GS_P2P_MAX_GPUS];
  for (size_t i = 0; i < s->n; i++) devices[i] = env->gpus[i].index;
  gs_comm_world_config wc = {.backend = GS_BACKEND_CUDA, .local_ranks = (int)s->n,
                             .devices = devices, .timeout_seconds = 60};
  gs_comm_world *world = NULL;
  gs_status st = gs_comm_world_create(&job, &wc, &world);
  gs_coll_point *points = NULL;
  size_t n_points = 0;
  if (st == GS_OK) {
    gs_coll_sweep sweep = {.op = GS_COLL_ALLREDUCE, .dtype = GS_DTYPE_FLOAT,
                           .redop = GS_REDOP_SUM, .sizes = short_run ? short_size : sizes,
                           .n_sizes = short_run ? 1 : sizeof sizes / sizeof sizes[0],
                           .out_of_place = 1, .warmup = short_run ? 2 : 5,
                           .iters = short_run ? 5 : 20, .check = 1, .backend = GS_BACKEND_CUDA,
                           .job = &job, .world = world, .local_ranks = (int)s->n,
                           .devices = devices, .delay_rank = -1};
    st = gs_coll_measure(&sweep, &points, &n_points);
  }
  s->allreduce_done = 1;
  if (st != GS_OK && st != GS_ERR_VERIFY)
    snprintf(s->allreduce_error, sizeof s->allreduce_error, "%s", gs_last_error());
  for (size_t i = 0; points && i < n_points && s->allreduce_n < 8; i++) {
    if (points[i].in_place) continue;
    s->allreduce_bytes[s->allreduce_n] = points[i].shape.bytes;
    s->allreduce_busbw_gbs[s->allreduce_n++] = points[i].busbw / 1e9;
    s->allreduce_wrong += points[i].wrong;
  }
  gs_coll_points_free(points, n_points);
  gs_comm_world_destroy(world);
}

/* One run of `wl` on CUDA device `device`: set up, one warm-up step, timed
 * steps for GS_CHECK_WORKLOAD_RUN_SECONDS of wall time (at least
 * GS_CHECK_WORKLOAD_MIN_STEPS), verified. Its step times go into *out (owned
 * by the caller's stress record) and its items per step into *items. A
 * failure is kept as the check's first workload error. */
static void workload_run(const gs_workload *wl, void *opts, int device, gs_health_steps *out,
                         double *items, gs_node_stress *s) {
  // The run ends on time, not on a step count: a workload of 9 us steps
  // (resample, fuse) gets thousands of steps instead of a capped 1000
  // whose few milliseconds a launch hiccup could move.
  gs_run_config c = {.backend = GS_BACKEND_CUDA, .world_size = 1,
                     .scaling = GS_SCALING_STRONG, .warmup = 1, .iters = 0,
                     .min_time = GS_CHECK_WORKLOAD_RUN_SECONDS,
                     .min_iters = GS_CHECK_WORKLOAD_MIN_STEPS, .max_iters = 10000000, .runs = 1,
                     .seed = 1, .label = wl->key};
  c.devices[0] = device;
  gs_measurement m;
  memset(&m, 0, sizeof m);
  gs_status st = gs_runner_measure(wl, opts, &c, &m);
  const gs_run_record *r = st == GS_OK && m.n_runs == 1 ? &m.runs[0] : NULL;
  if (r && r->n_steps >= 2 && m.aggregate.throughput > 0) {
    out->seconds = malloc(r->n_steps * sizeof *out->seconds);
    if (out->seconds) {
      memcpy(out->seconds, r->step_seconds, r->n_steps * sizeof *out->seconds);
      out->n = r->n_steps;
      *items = m.aggregate.throughput * m.aggregate.step.mean;
    } else if (!s->workload_error[0]) {
      snprintf(s->workload_error, sizeof s->workload_error, "out of memory");
    }
  } else if (!s->workload_error[0]) {
    snprintf(s->workload_error, sizeof s->workload_error, "%s on CUDA device %d: %s", wl->key,
             device, st != GS_OK ? gs_last_error() : "no throughput");
  }
  gs_measurement_free(&m);
}

/* Each workload the fixed-step runner measures alone (no communicator, no
 * driver of its own), with its default options, on each GPU:
 * GS_HEALTH_WORKLOAD_ROUNDS rounds, each running every workload on every
 * GPU in turn (workload_run), round r from GPU r on, a round started only
 * while the budget lasts.
 * A GPU's rate is the items over the pooled mean step of its rounds.
 * Nothing here knows a workload's name. */
static void run_workloads(const gs_check_stress_options *o, gs_node_stress *s) {
  size_t count = 0;
  const gs_workload *const *list = gs_workload_list(&count);
  const gs_workload *chosen[8];
  void *opts[8] = {NULL};
  double items[8] = {0};
  size_t n = 0;
  for (size_t w = 0; w < count && n < 8; w++)
    if (!list[w]->driver && !list[w]->communicates) chosen[n++] = list[w];
  const size_t cells = (n ? n : 1) * s->n;
  s->workload_rate = malloc(cells * sizeof *s->workload_rate);
  s->workload_steps = calloc(cells * GS_HEALTH_WORKLOAD_ROUNDS, sizeof *s->workload_steps);
  if (!s->workload_rate || !s->workload_steps) {
    snprintf(s->workload_error, sizeof s->workload_error, "out of memory");
    return;
  }
  for (size_t i = 0; i < cells; i++) s->workload_rate[i] = NAN;
  s->workload_n = n;
  for (size_t w = 0; w < n; w++) {
    s->workload_keys[w] = chosen[w]->key;
    opts[w] = chosen[w]->options_new();
    if (!opts[w] && !s->workload_error[0])
      snprintf(s->workload_error, sizeof s->workload_error, "%s: out of memory", chosen[w]->key);
  }
  for (size_t r = 0; r < GS_HEALTH_WORKLOAD_ROUNDS && gs_time_seconds() <= o->deadline; r++) {
    s->workload_rounds = r + 1;
    // Round r starts at GPU r: no GPU is always the first after a
    // workload's switch or always the last.
    for (size_t w = 0; w < n; w++)
      for (size_t k = 0; opts[w] && k < s->n; k++) {
        const size_t i = (k + r) % s->n;
        workload_run(chosen[w], opts[w], s->gpus[i].device,
                     &s->workload_steps[(w * s->n + i) * GS_HEALTH_WORKLOAD_ROUNDS + r], &items[w],
                     s);
      }
  }
  for (size_t w = 0; w < n; w++) {
    if (opts[w]) chosen[w]->options_free(opts[w]);
    for (size_t i = 0; i < s->n; i++) {
      double sum = 0;
      size_t steps = 0;
      for (size_t r = 0; r < s->workload_rounds; r++) {
        const gs_health_steps *g =
            &s->workload_steps[(w * s->n + i) * GS_HEALTH_WORKLOAD_ROUNDS + r];
        for (size_t k = 0; k < g->n; k++) sum += g->seconds[k];
        steps += g->n;
      }
      if (steps && sum > 0 && items[w] > 0) s->workload_rate[w * s->n + i] = items[w] * steps / sum;
    }
  }
}

gs_status gs_check_stress_run(const gs_check_stress_options *o, gs_node_stress *s,
                              void (*phase)(int)) {
  memset(s, 0, sizeof *s);
  s->level = o->short_run ? 1 : 2;
  gs_environment env;
  memset(&env, 0, sizeof env);
  gs_status st = gs_common_environment(&env);
  if (st == GS_OK && env.gpu_count == 0)
    snprintf(s->why, sizeof s->why, "no CUDA device: %s",
             env.cuda_status[0] ? env.cuda_status : "none found");
  if (st == GS_OK && env.gpu_count > GS_P2P_MAX_GPUS)
    snprintf(s->why, sizeof s->why, "%zu CUDA devices: level %d measures at most %d",
             env.gpu_count, s->level, GS_P2P_MAX_GPUS);
  if (st != GS_OK || s->why[0]) {
    gs_environment_free(&env);
    return st;
  }
  s->n = env.gpu_count;
  s->gpus = calloc(s->n, sizeof *s->gpus);
  s->p2p_gbs = malloc(s->n * s->n * sizeof *s->p2p_gbs);
  if (!s->gpus || !s->p2p_gbs) {
    gs_environment_free(&env);
    return gs_error(GS_ERR_NOMEM, "cannot allocate the level 2 results");
  }
  for (size_t i = 0; i < s->n * s->n; i++) s->p2p_gbs[i] = NAN;
  for (size_t i = 0; i < s->n; i++) {
    gs_gpu_stress *g = &s->gpus[i];
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", env.gpus[i].pci_bus_id);
    g->device = env.gpus[i].index;
    g->membw_slowdown = 1.0;
    g->h2d_gbs = g->d2h_gbs = NAN;
  }
  // Level 1 (short) measures neither memory bandwidth, host copies nor
  // workloads: only one round of pairs and one all-reduce size.
  if (!o->short_run) run_membw(o, s, phase);
  if (o->short_run) {
    st = GS_OK;
  } else if (gs_time_seconds() > o->deadline) {
    over_budget(s, "host");
  } else {
    const double t0 = gs_time_seconds();
    if (phase) phase(-3);
    st = run_copies(o, &env, GS_P2P_MODE_HOST, s);
    s->host_seconds = gs_time_seconds() - t0;
  }
  if (st == GS_OK && s->n < 2) {
    snprintf(s->p2p_error, sizeof s->p2p_error, "one GPU: no pair");
  } else if (st == GS_OK && gs_time_seconds() > o->deadline) {
    over_budget(s, "p2p");
  } else if (st == GS_OK) {
    const double t0 = gs_time_seconds();
    if (phase) phase(-4);
    st = run_copies(o, &env, GS_P2P_MODE_CE, s);
    s->p2p_seconds = gs_time_seconds() - t0;
  }
  if (st == GS_OK && s->n < 2) {
    snprintf(s->allreduce_error, sizeof s->allreduce_error, "one GPU: nothing to reduce");
  } else if (st == GS_OK && gs_time_seconds() > o->deadline) {
    over_budget(s, "allreduce");
  } else if (st == GS_OK) {
    const double t0 = gs_time_seconds();
    if (phase) phase(-6);
    run_allreduce(o->short_run, &env, s);
    s->allreduce_seconds = gs_time_seconds() - t0;
  }
  if (st != GS_OK || o->short_run) {
    gs_environment_free(&env);
    return st;
  }
  if (gs_time_seconds() > o->deadline) {
    over_budget(s, "workloads");
  } else {
    const double t0 = gs_time_seconds();
    if (phase) phase(-7);
    run_workloads(o, s);
    s->workload_seconds = gs_time_seconds() - t0;
  }
  gs_environment_free(&env);
  return st;
}
