/* Tests of the result document: building, exact round trip through a file,
 * atomic writing, and the errors of reading and validation. */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "bug_fixture.h"
#include "core/result.h"
#include "tmpdir_fixture.h"

/* ---- helpers ------------------------------------------------------------ */

/* Bit equality: 0.1 must come back as exactly 0.1. */
static void assert_same_double(double got, double want) {
  if (memcmp(&got, &want, sizeof got) != 0) fail_msg("got %.17g, want %.17g", got, want);
}

static const cJSON *at(const cJSON *o, const char *name) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, name);
  if (!item) fail_msg("member \"%s\" missing", name);
  return item;
}

static const cJSON *idx(const cJSON *a, int i) {
  const cJSON *item = cJSON_GetArrayItem(a, i);
  if (!item) fail_msg("array element %d missing", i);
  return item;
}

static double num(const cJSON *o, const char *name) {
  const cJSON *item = at(o, name);
  assert_true(cJSON_IsNumber(item));
  return item->valuedouble;
}

static const char *str(const cJSON *o, const char *name) {
  const cJSON *item = at(o, name);
  assert_true(cJSON_IsString(item));
  return item->valuestring;
}

static double *copy_doubles(const double *v, size_t n) {
  double *out = malloc(n * sizeof *out);
  assert_non_null(out);
  memcpy(out, v, n * sizeof *out);
  return out;
}

static const double tricky[] = {0.1, 1e-9, 123456.789012345678, 0.30000000000000004,
                                1.7976931348623157e308};

/* A measurement of 2 runs x 2 ranks with samples that cJSON alone would
 * not write exactly. */
static void fill_measurement(gs_measurement *m) {
  memset(m, 0, sizeof *m);
  snprintf(m->workload, sizeof m->workload, "voxelize");
  snprintf(m->backend, sizeof m->backend, "cuda");
  snprintf(m->scaling, sizeof m->scaling, "strong");
  m->world_size = 2;
  m->devices[0] = 0;
  m->devices[1] = 1;
  m->status = GS_OK;
  m->cost.items = 1000000;
  m->cost.item_unit = "points";
  m->cost.bytes = 12000000000ull;
  m->cost.flops = 0;
  m->verification.status = GS_VERIFY_PASSED;
  m->verification.max_abs_error = 1e-9;
  m->verification.tolerance = 1e-6;
  snprintf(m->verification.detail, sizeof m->verification.detail, "2 of 2 ranks match");
  m->n_runs = 2;
  m->runs = calloc(2, sizeof *m->runs);
  assert_non_null(m->runs);
  for (size_t r = 0; r < 2; r++) {
    gs_run_record *run = &m->runs[r];
    double steps[3] = {0.1, 1e-9, NAN};
    run->n_steps = 3;
    run->step_seconds = copy_doubles(steps, 3);
    run->n_ranks = 2;
    run->ranks = calloc(2, sizeof *run->ranks);
    assert_non_null(run->ranks);
    for (size_t k = 0; k < 2; k++) {
      gs_rank_record *rk = &run->ranks[k];
      rk->rank = (int)k;
      rk->device = (int)k;
      snprintf(rk->host, sizeof rk->host, "node%zu", k);
      rk->status = GS_OK;
      rk->items_per_step = 500000;
      rk->first_iteration_seconds = k == 0 ? 0.25 : -1.0;
      rk->n_samples = 5;
      rk->wall_seconds = copy_doubles(tricky, 5);
      rk->device_seconds = k == 0 ? copy_doubles(tricky, 5) : NULL;
      rk->verification.status = GS_VERIFY_SKIPPED;
    }
  }
  m->runs[1].ranks[1].status = GS_ERR_TIMEOUT;
  snprintf(m->runs[1].ranks[1].error, sizeof m->runs[1].ranks[1].error, "rank 1 timed out");
  m->aggregate.step.n = 6;
  m->aggregate.step.mean = 0.1;
  m->aggregate.step.median = 123456.789012345678;
  m->aggregate.step.stddev = 1e-9;
  m->aggregate.step.outliers = 1;
  m->aggregate.step.warnings = GS_STATS_WARN_NOISY | GS_STATS_WARN_OUTLIERS;
  m->aggregate.throughput = 1e7 / 3.0;
  m->aggregate.cold_start_ratio = 2.5;
  m->aggregate.speedup = 0;
  m->aggregate.efficiency = 0;
}

static void fill_environment(gs_environment *env) {
  memset(env, 0, sizeof *env);
  gs_environment_collect_host(env);
  env->cuda_driver_version = 13000;
  env->cuda_runtime_version = 12040;
  snprintf(env->cuda_status, sizeof env->cuda_status, "2 devices");
  snprintf(env->nccl_version, sizeof env->nccl_version, "2.27.3");
  env->gpu_count = 2;
  env->gpus = calloc(2, sizeof *env->gpus);
  assert_non_null(env->gpus);
  for (int i = 0; i < 2; i++) {
    gs_gpu_desc *g = &env->gpus[i];
    g->index = i;
    snprintf(g->name, sizeof g->name, "NVIDIA H100 80GB HBM3");
    snprintf(g->uuid, sizeof g->uuid, "GPU-0000000%d-0000-0000-0000-000000000000", i);
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "0000:1%d:00.0", i);
    g->memory_bytes = 85899345920ull;
    g->sm_count = 132;
    g->cc_major = 9;
    g->cc_minor = 0;
    g->clock_mhz = i == 0 ? 1980 : 0;
    g->memory_clock_mhz = 2619;
    g->memory_bus_width_bits = 5120;
    g->peak_memory_bandwidth = 3.35232e12;
  }
}

/* A complete valid document: environment and `n` measurements. */
static cJSON *make_doc(size_t n) {
  static char *argv[] = {"gpuscale", "scale", "voxelize", "--gpus", "2"};
  gs_result_set_command_line(5, argv);
  cJSON *doc = gs_result_new("scale");
  assert_non_null(doc);
  cJSON *config = cJSON_CreateObject();
  cJSON_AddNumberToObject(config, "runs", 2);
  cJSON_AddStringToObject(config, "workload", "voxelize");
  assert_int_equal(gs_result_set_config(doc, config), GS_OK);
  gs_environment env;
  fill_environment(&env);
  assert_int_equal(gs_result_set_environment(doc, &env), GS_OK);
  gs_environment_free(&env);
  for (size_t i = 0; i < n; i++) {
    gs_measurement m;
    fill_measurement(&m);
    assert_int_equal(gs_result_add_measurement(doc, &m), GS_OK);
    gs_measurement_free(&m);
  }
  return doc;
}

static cJSON *rank_of(cJSON *doc, int measurement, int run, int rank) {
  cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "measurements"), measurement);
  cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "runs"), run);
  cJSON *k = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "ranks"), rank);
  assert_non_null(k);
  return k;
}

/* ---- tests -------------------------------------------------------------- */

static void test_new_document_is_valid(void **state) {
  (void)state;
  static char *argv[] = {"gpuscale", "info"};
  gs_result_set_command_line(2, argv);
  cJSON *doc = gs_result_new("info");
  assert_non_null(doc);
  assert_string_equal(str(doc, "schema"), GS_RESULT_SCHEMA);
  assert_string_equal(str(at(doc, "tool"), "name"), "gpuscale");
  assert_true(strlen(str(at(doc, "tool"), "version")) > 0);
  const char *created = str(doc, "created");
  assert_int_equal(strlen(created), 20);
  assert_int_equal(created[19], 'Z');
  assert_string_equal(str(doc, "status"), "ok");
  assert_int_equal(cJSON_GetArraySize(at(doc, "argv")), 2);
  assert_int_equal(gs_result_validate(doc, "fresh"), GS_OK);

  assert_int_equal(gs_result_set_status(doc, "partial"), GS_OK);
  assert_string_equal(str(doc, "status"), "partial");
  // A bug names its place in the source tree, not the build machine's path.
  assert_bug(gs_result_set_status(doc, "great"), "BUG: src/core/result.c:");
  assert_bug(gs_result_set_status(doc, "great"), "not \"great\"");
  cJSON_Delete(doc);
}

static void test_round_trip(void **state) {
  fixture *fx = *state;
  char path[512];
  path_in(fx, "out/result.json", path, sizeof path);
  cJSON *doc = make_doc(1);
  assert_int_equal(gs_result_write(doc, path), GS_OK);
  cJSON_Delete(doc);

  // Pretty printed, ending in a newline.
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, -1, SEEK_END), 0);
  assert_int_equal(fgetc(f), '\n');
  fclose(f);

  cJSON *back = NULL;
  assert_int_equal(gs_result_read(path, &back), GS_OK);
  assert_non_null(back);
  assert_string_equal(str(back, "command"), "scale");
  assert_string_equal(cJSON_GetArrayItem(at(back, "argv"), 3)->valuestring, "--gpus");
  assert_int_equal((int)num(at(back, "config"), "runs"), 2);

  const cJSON *env = at(back, "environment");
  assert_true(strlen(str(env, "host")) > 0);
  const cJSON *cuda = at(env, "cuda");
  assert_int_equal((int)num(cuda, "driver_version"), 13000);
  assert_string_equal(str(cuda, "driver_version_text"), "13.0");
  assert_string_equal(str(cuda, "runtime_version_text"), "12.4");
  assert_string_equal(str(cuda, "status"), "2 devices");
  assert_string_equal(str(env, "nccl_version"), "2.27.3");
  assert_true(cJSON_IsNull(at(env, "mpi_version")));
  const cJSON *gpus = at(env, "gpus");
  assert_int_equal(cJSON_GetArraySize(gpus), 2);
  const cJSON *g0 = idx(gpus, 0), *g1 = idx(gpus, 1);
  assert_string_equal(str(g0, "compute_capability"), "9.0");
  assert_string_equal(str(g1, "pci_bus_id"), "0000:11:00.0");
  assert_same_double(num(g0, "memory_bytes"), 85899345920.0);
  assert_same_double(num(g0, "clock_mhz"), 1980);
  assert_true(cJSON_IsNull(at(g1, "clock_mhz")));
  assert_same_double(num(g1, "peak_memory_bandwidth_bytes_per_s"), 3.35232e12);

  const cJSON *m = idx(at(back, "measurements"), 0);
  assert_string_equal(str(m, "workload"), "voxelize");
  assert_string_equal(str(m, "status"), "ok");
  assert_true(cJSON_IsNull(at(m, "error")));
  assert_int_equal((int)num(m, "world_size"), 2);
  assert_int_equal(cJSON_GetArraySize(at(m, "devices")), 2);
  const cJSON *cost = at(m, "cost");
  assert_same_double(num(cost, "bytes_per_step"), 12000000000.0);
  assert_string_equal(str(cost, "item_unit"), "points");
  assert_same_double(num(cost, "flops_per_step"), 0);
  assert_string_equal(str(at(m, "verification"), "status"), "passed");
  assert_same_double(num(at(m, "verification"), "max_abs_error"), 1e-9);

  const cJSON *runs = at(m, "runs");
  assert_int_equal(cJSON_GetArraySize(runs), 2);
  for (int r = 0; r < 2; r++) {
    const cJSON *run = idx(runs, r);
    const cJSON *steps = at(run, "step_seconds");
    assert_int_equal(cJSON_GetArraySize(steps), 3);
    assert_same_double(idx(steps, 0)->valuedouble, 0.1);
    assert_same_double(idx(steps, 1)->valuedouble, 1e-9);
    assert_true(cJSON_IsNull(idx(steps, 2)));  // NaN
    const cJSON *ranks = at(run, "ranks");
    assert_int_equal(cJSON_GetArraySize(ranks), 2);
    for (int k = 0; k < 2; k++) {
      const cJSON *rk = idx(ranks, k);
      assert_int_equal((int)num(rk, "rank"), k);
      assert_int_equal((int)num(rk, "device"), k);
      const cJSON *wall = at(rk, "wall_seconds");
      assert_int_equal(cJSON_GetArraySize(wall), 5);
      for (int i = 0; i < 5; i++) assert_same_double(idx(wall, i)->valuedouble, tricky[i]);
      if (k == 0) {
        assert_same_double(num(rk, "first_iteration_seconds"), 0.25);
        const cJSON *dev = at(rk, "device_seconds");
        for (int i = 0; i < 5; i++) assert_same_double(idx(dev, i)->valuedouble, tricky[i]);
      } else {
        assert_true(cJSON_IsNull(at(rk, "first_iteration_seconds")));
        assert_true(cJSON_IsNull(at(rk, "device_seconds")));
      }
      assert_string_equal(str(at(rk, "verification"), "status"), "skipped");
    }
  }
  const cJSON *late = idx(at(idx(runs, 1), "ranks"), 1);
  assert_string_equal(str(late, "status"), "timeout");
  assert_string_equal(str(late, "error"), "rank 1 timed out");
  assert_true(cJSON_IsNull(at(idx(at(idx(runs, 0), "ranks"), 1), "error")));

  const cJSON *agg = at(m, "aggregate");
  const cJSON *step = at(agg, "step");
  assert_same_double(num(step, "n"), 6);
  assert_same_double(num(step, "mean"), 0.1);
  assert_same_double(num(step, "median"), 123456.789012345678);
  assert_same_double(num(step, "stddev"), 1e-9);
  assert_same_double(num(step, "outliers"), 1);
  const cJSON *warnings = at(step, "warnings");
  assert_int_equal(cJSON_GetArraySize(warnings), 2);
  assert_string_equal(idx(warnings, 0)->valuestring, "noisy");
  assert_string_equal(idx(warnings, 1)->valuestring, "outliers");
  assert_same_double(num(agg, "throughput_items_per_second"), 1e7 / 3.0);
  assert_same_double(num(agg, "cold_start_ratio"), 2.5);
  assert_true(cJSON_IsNull(at(agg, "speedup")));
  assert_true(cJSON_IsNull(at(agg, "efficiency")));
  cJSON_Delete(back);
}

/* Random finite bit patterns, integers near 2^53 and extremes all come back
 * bit for bit. */
static void test_numbers_exact(void **state) {
  fixture *fx = *state;
  enum { N = 20000 };
  double *v = malloc(N * sizeof *v);
  assert_non_null(v);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  size_t n = 0;
  while (n < N - 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    double d;
    memcpy(&d, &x, sizeof d);
    if (isfinite(d)) v[n++] = d;
  }
  v[n++] = 9007199254740991.0;
  v[n++] = 9007199254740992.0;
  v[n++] = 18446744073709551615.0;
  v[n++] = -0.0;
  v[n++] = 5e-324;
  v[n++] = 2.2250738585072014e-308;
  v[n++] = -1.7976931348623157e308;
  v[n++] = 0.1 + 0.2;

  cJSON *doc = make_doc(0);
  cJSON *cfg = cJSON_GetObjectItem(doc, "config");
  cJSON *arr = cJSON_CreateDoubleArray(v, (int)n);
  assert_non_null(arr);
  cJSON_AddItemToObject(cfg, "values", arr);
  char path[512];
  path_in(fx, "numbers.json", path, sizeof path);
  assert_int_equal(gs_result_write(doc, path), GS_OK);
  cJSON_Delete(doc);

  cJSON *back = NULL;
  assert_int_equal(gs_result_read(path, &back), GS_OK);
  const cJSON *vals = at(at(back, "config"), "values");
  assert_int_equal(cJSON_GetArraySize(vals), (int)n);
  size_t i = 0;
  for (const cJSON *c = vals->child; c; c = c->next, i++) {
    assert_true(cJSON_IsNumber(c));
    assert_same_double(c->valuedouble, v[i]);
  }
  cJSON_Delete(back);
  free(v);
}

static void test_nan_and_inf_are_null(void **state) {
  (void)state;
  cJSON *o = cJSON_CreateObject();
  assert_non_null(gs_json_add_number(o, "nan", NAN));
  assert_non_null(gs_json_add_number(o, "inf", INFINITY));
  assert_non_null(gs_json_add_number(o, "ninf", -INFINITY));
  assert_non_null(gs_json_add_number(o, "x", 0.5));
  assert_true(cJSON_IsNull(at(o, "nan")));
  assert_true(cJSON_IsNull(at(o, "inf")));
  assert_true(cJSON_IsNull(at(o, "ninf")));
  assert_same_double(num(o, "x"), 0.5);
  cJSON_Delete(o);
}

static void test_atomic_replace(void **state) {
  fixture *fx = *state;
  char path[512];
  path_in(fx, "result.json", path, sizeof path);
  write_text(path, "old contents, not JSON\n");

  cJSON *doc = make_doc(1);
  assert_int_equal(gs_result_write(doc, path), GS_OK);
  cJSON_Delete(doc);
  static char *argv[] = {"gpuscale", "info"};
  gs_result_set_command_line(2, argv);
  doc = gs_result_new("info");
  assert_int_equal(gs_result_write(doc, path), GS_OK);
  cJSON_Delete(doc);

  cJSON *back = NULL;
  assert_int_equal(gs_result_read(path, &back), GS_OK);
  assert_string_equal(str(back, "command"), "info");
  cJSON_Delete(back);
  assert_int_equal(count_entries(fx->dir, ".tmp."), 0);
  assert_int_equal(count_entries(fx->dir, ""), 1);
}

static void test_write_nested_missing_dirs(void **state) {
  fixture *fx = *state;
  char path[512];
  path_in(fx, "a/b//c/result.json", path, sizeof path);
  cJSON *doc = make_doc(1);
  assert_int_equal(gs_result_write(doc, path), GS_OK);
  cJSON_Delete(doc);
  cJSON *back = NULL;
  assert_int_equal(gs_result_read(path, &back), GS_OK);
  cJSON_Delete(back);
  char dir[512];
  path_in(fx, "a/b/c", dir, sizeof dir);
  assert_int_equal(count_entries(dir, ".tmp."), 0);
}

static void test_write_failure(void **state) {
  fixture *fx = *state;
  char blocker[512], path[512];
  path_in(fx, "file", blocker, sizeof blocker);
  write_text(blocker, "x");
  path_in(fx, "file/sub/result.json", path, sizeof path);
  cJSON *doc = make_doc(0);
  assert_int_equal(gs_result_write(doc, path), GS_ERR_IO);
  assert_error_mentions(path);

  // Renaming onto a directory fails after the temp file was written.
  char dirpath[512];
  path_in(fx, "adir", dirpath, sizeof dirpath);
  assert_int_equal(mkdir(dirpath, 0700), 0);
  assert_int_equal(gs_result_write(doc, dirpath), GS_ERR_IO);
  assert_error_mentions(dirpath);
  assert_int_equal(count_entries(fx->dir, ".tmp."), 0);
  cJSON_Delete(doc);
}

static void test_read_unreadable(void **state) {
  fixture *fx = *state;
  char path[512];
  path_in(fx, "does-not-exist.json", path, sizeof path);
  cJSON *doc = (cJSON *)1;
  assert_int_equal(gs_result_read(path, &doc), GS_ERR_IO);
  assert_null(doc);
  assert_error_mentions(path);
  assert_error_mentions("No such file");
  assert_int_equal(gs_result_read(fx->dir, &doc), GS_ERR_IO);
  assert_error_mentions("directory");
}

static void test_read_malformed(void **state) {
  fixture *fx = *state;
  char path[512];
  path_in(fx, "trunc.json", path, sizeof path);
  cJSON *doc = make_doc(1);
  assert_int_equal(gs_result_write(doc, path), GS_OK);
  cJSON_Delete(doc);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(truncate(path, sb.st_size / 2), 0);
  cJSON *back = NULL;
  assert_int_equal(gs_result_read(path, &back), GS_ERR_FORMAT);
  assert_null(back);
  assert_error_mentions(path);
  assert_error_mentions("byte offset");
  assert_error_mentions("line");

  write_text(path, "{\n  \"schema\": \"gpuscale/result/v1\",\n  oops\n}\n");
  assert_int_equal(gs_result_read(path, &back), GS_ERR_FORMAT);
  assert_error_mentions("line 3");

  write_text(path, "{} trailing");
  assert_int_equal(gs_result_read(path, &back), GS_ERR_FORMAT);
  assert_error_mentions("byte offset");

  write_text(path, "");
  assert_int_equal(gs_result_read(path, &back), GS_ERR_FORMAT);
  assert_error_mentions("empty");
}

static void test_read_too_large(void **state) {
  fixture *fx = *state;
  char path[512];
  path_in(fx, "huge.json", path, sizeof path);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  // Sparse: no disk space is used.
  assert_int_equal(ftruncate(fd, ((off_t)1 << 30) + 1), 0);
  close(fd);
  cJSON *back = NULL;
  assert_int_equal(gs_result_read(path, &back), GS_ERR_FORMAT);
  assert_error_mentions("larger than 1 GiB");
}

static void test_not_an_object(void **state) {
  fixture *fx = *state;
  char path[512];
  path_in(fx, "array.json", path, sizeof path);
  write_text(path, "[1, 2, 3]\n");
  cJSON *back = NULL;
  assert_int_equal(gs_result_read(path, &back), GS_ERR_FORMAT);
  assert_error_mentions("not an object");
  assert_error_mentions(path);
}

static void test_missing_schema(void **state) {
  fixture *fx = *state;
  char path[512];
  path_in(fx, "noschema.json", path, sizeof path);
  write_text(path, "{\"tool\": {\"name\": \"other\"}}\n");
  cJSON *back = NULL;
  assert_int_equal(gs_result_read(path, &back), GS_ERR_FORMAT);
  assert_error_mentions("\"schema\"");

  write_text(path, "{\"schema\": 1}\n");
  assert_int_equal(gs_result_read(path, &back), GS_ERR_FORMAT);
  assert_error_mentions("schema must be a string");
}

static void test_foreign_schema(void **state) {
  fixture *fx = *state;
  char path[512];
  path_in(fx, "v2.json", path, sizeof path);
  cJSON *doc = make_doc(1);
  cJSON_ReplaceItemInObject(doc, "schema", cJSON_CreateString("gpuscale/result/v2"));
  assert_int_equal(gs_result_write(doc, path), GS_OK);
  cJSON_Delete(doc);
  cJSON *back = NULL;
  assert_int_equal(gs_result_read(path, &back), GS_ERR_FORMAT);
  assert_error_mentions("gpuscale/result/v2");
  assert_error_mentions("gpuscale/result/v1");

  write_text(path, "{\"schema\": \"nccl-tests\"}");
  assert_int_equal(gs_result_read(path, &back), GS_ERR_FORMAT);
  assert_error_mentions("\"nccl-tests\"");
}

static void test_missing_nested_member(void **state) {
  fixture *fx = *state;
  cJSON *doc = make_doc(2);
  cJSON_DeleteItemFromObject(rank_of(doc, 1, 0, 0), "status");
  assert_int_equal(gs_result_validate(doc, "mem"), GS_ERR_FORMAT);
  assert_error_mentions("measurements[1].runs[0].ranks[0].status");
  assert_error_mentions("missing");

  // The same through a file, with the file named.
  char path[512];
  path_in(fx, "nested.json", path, sizeof path);
  assert_int_equal(gs_result_write(doc, path), GS_OK);
  cJSON *back = NULL;
  assert_int_equal(gs_result_read(path, &back), GS_ERR_FORMAT);
  assert_null(back);
  assert_error_mentions(path);
  assert_error_mentions("measurements[1].runs[0].ranks[0].status");
  cJSON_Delete(doc);

  // Mistyped members name their path and both types.
  doc = make_doc(1);
  cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "measurements"), 0);
  cJSON_ReplaceItemInObject(m, "world_size", cJSON_CreateString("2"));
  assert_int_equal(gs_result_validate(doc, "mem"), GS_ERR_FORMAT);
  assert_error_mentions("measurements[0].world_size must be a number but is a string");
  cJSON_Delete(doc);

  doc = make_doc(1);
  cJSON_DeleteItemFromObject(doc, "environment");
  assert_int_equal(gs_result_validate(doc, "mem"), GS_ERR_FORMAT);
  assert_error_mentions("environment is missing");
  cJSON_Delete(doc);

  doc = make_doc(1);
  m = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "measurements"), 0);
  cJSON *run = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "runs"), 1);
  cJSON_ReplaceItemInObject(run, "ranks", cJSON_CreateObject());
  assert_int_equal(gs_result_validate(doc, "mem"), GS_ERR_FORMAT);
  assert_error_mentions("measurements[0].runs[1].ranks must be an array but is an object");
  cJSON_Delete(doc);
}

static void test_free_zeroed_and_filled(void **state) {
  (void)state;
  gs_environment env;
  memset(&env, 0, sizeof env);
  gs_environment_free(&env);
  gs_environment_free(NULL);
  gs_measurement m;
  memset(&m, 0, sizeof m);
  gs_measurement_free(&m);
  gs_measurement_free(NULL);

  // Partly filled: runs without ranks, counts without arrays.
  m.n_runs = 2;
  m.runs = calloc(2, sizeof *m.runs);
  assert_non_null(m.runs);
  m.runs[0].n_ranks = 3;
  m.runs[1].n_steps = 4;
  gs_measurement_free(&m);
  assert_null(m.runs);
  assert_int_equal(m.n_runs, 0);
  gs_measurement_free(&m);  // twice is harmless

  fill_measurement(&m);
  fill_environment(&env);
  gs_measurement_free(&m);
  gs_environment_free(&env);
  assert_null(m.runs);
  assert_null(env.gpus);
  assert_int_equal(env.gpu_count, 0);
}

/* The measurement object `m` became, as compact JSON text of member `name`
 * (NULL when it is absent). The caller frees it. */
static char *member_text(const gs_measurement *m, const char *name) {
  cJSON *doc = make_doc(0);
  assert_int_equal(gs_result_add_measurement(doc, m), GS_OK);
  const cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "measurements"), 0);
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, name);
  char *text = item ? cJSON_PrintUnformatted(item) : NULL;
  cJSON_Delete(doc);
  return text;
}

static void assert_member(const gs_measurement *m, const char *name, const char *want) {
  char *got = member_text(m, name);
  if (!got) fail_msg("member \"%s\" missing", name);
  if (strcmp(got, want) != 0) {
    char msg[1024];
    snprintf(msg, sizeof msg, "member \"%s\": got %s, want %s", name, got, want);
    free(got);
    fail_msg("%s", msg);
  }
  free(got);
}

/* The typed optional members serialize to exactly the members the
 * measuring code built as JSON before they were typed, in the same order,
 * ahead of the untyped `extra` ones. */
static void test_typed_members_exact(void **state) {
  (void)state;
  gs_measurement m;
  fill_measurement(&m);
  m.split.policy = GS_SPLIT_PROPORTIONAL;
  m.split.ranks = 2;
  m.split.units[0] = 16;
  m.split.units[1] = 8;
  m.split.calibration_items_per_second[0] = 0.1;
  m.split.calibration_items_per_second[1] = 2.5e9;
  m.failure.present = 1;
  m.failure.rank = 1;
  snprintf(m.failure.host, sizeof m.failure.host, "node1");
  m.failure.last_completed_step = 5;
  m.failure.status = GS_ERR_RANK_LOST;
  snprintf(m.failure.reason, sizeof m.failure.reason, "rank 1 on node1 lost after step 5");
  m.work_units.unit = "clouds";
  m.work_units.total = 24;
  m.work_units.ranks = 2;
  m.work_units.begin[1] = 16;
  m.work_units.count[0] = 16;
  m.work_units.count[1] = 8;
  assert_int_equal(gs_fault_parse("slow:rank=1,factor=3", &m.faults), GS_OK);
  assert_int_equal(gs_fault_parse("kill:rank=5,after=2", &m.faults), GS_OK); /* not in 2 ranks */
  m.extra = cJSON_Parse("{\"task\": 3}");
  assert_non_null(m.extra);

  assert_member(&m, "split",
                "{\"units\":[16,8],\"calibration_items_per_second\":[0.1,2500000000],"
                "\"policy\":\"proportional\"}");
  assert_member(&m, "failure",
                "{\"rank\":1,\"host\":\"node1\",\"last_completed_step\":5,\"status\":"
                "\"rank-lost\",\"reason\":\"rank 1 on node1 lost after step 5\"}");
  assert_member(&m, "work_units",
                "{\"begin\":[0,16],\"count\":[16,8],\"unit\":\"clouds\",\"total\":24}");
  assert_member(&m, "faults", "[{\"kind\":\"slow\",\"rank\":1,\"factor\":3}]");
  assert_member(&m, "task", "3");

  cJSON *doc = make_doc(0);
  assert_int_equal(gs_result_add_measurement(doc, &m), GS_OK);
  const cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "measurements"), 0);
  const char *order[] = {"aggregate", "faults", "work_units", "failure", "split", "task"};
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, "aggregate");
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++, item = item ? item->next : NULL) {
    if (!item || strcmp(item->string, order[i]) != 0)
      fail_msg("member %zu after \"runs\": got \"%s\", want \"%s\"", i,
               item ? item->string : "(end)", order[i]);
  }
  assert_null(item);
  assert_int_equal(gs_result_validate(doc, "typed"), GS_OK);
  cJSON_Delete(doc);

  // A failure that names no rank: rank, host and step are null.
  m.failure.rank = -1;
  m.failure.status = GS_ERR_INTERRUPTED;
  snprintf(m.failure.reason, sizeof m.failure.reason, "interrupted by signal 2");
  assert_member(&m, "failure",
                "{\"rank\":null,\"host\":null,\"last_completed_step\":null,\"status\":"
                "\"interrupted\",\"reason\":\"interrupted by signal 2\"}");
  m.split.policy = GS_SPLIT_EVEN;
  m.split.ranks = 1;
  assert_member(&m, "split",
                "{\"units\":[16],\"calibration_items_per_second\":[0.1],\"policy\":\"even\"}");
  gs_measurement_free(&m);
  assert_null(m.extra);
}

/* A measurement without split, failure, work units or faults writes none
 * of those members. */
static void test_typed_members_absent(void **state) {
  (void)state;
  gs_measurement m;
  fill_measurement(&m);
  const char *names[] = {"split", "failure", "work_units", "faults", "task"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char *text = member_text(&m, names[i]);
    if (text) {
      char msg[512];
      snprintf(msg, sizeof msg, "member \"%s\" written: %s", names[i], text);
      free(text);
      fail_msg("%s", msg);
    }
  }
  assert_string_equal(gs_split_policy_name(GS_SPLIT_NONE), "");
  gs_measurement_free(&m);
}

static void test_collect_host(void **state) {
  (void)state;
  gs_environment env;
  memset(&env, 0, sizeof env);
  gs_environment_collect_host(&env);
  assert_true(strlen(env.host) > 0);
  assert_true(strlen(env.os) > 0);
  assert_non_null(strchr(env.os, ' '));
  assert_true(strlen(env.cpu_model) > 0);
  assert_true(env.cpu_logical_cores > 0);
  assert_true(env.host_memory_bytes > 0);
  assert_null(env.gpus);
}

/* The Slurm job comes from SLURM_JOB_ID, SLURM_STEP_ID and
 * SLURM_JOB_NODELIST into environment.slurm; outside Slurm there is none. */
static void test_slurm_job(void **state) {
  (void)state;
  static const char *const names[] = {"SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_JOB_NODELIST"};
  char *saved[3];
  for (int i = 0; i < 3; i++) {
    const char *v = getenv(names[i]);
    saved[i] = v ? strdup(v) : NULL;
  }
  setenv("SLURM_JOB_ID", "4242", 1);
  setenv("SLURM_STEP_ID", "3", 1);
  setenv("SLURM_JOB_NODELIST", "gpu[01-04,07]", 1);
  gs_environment env;
  memset(&env, 0, sizeof env);
  gs_environment_collect_host(&env);
  cJSON *doc = gs_result_new("run");
  assert_int_equal(gs_result_set_environment(doc, &env), GS_OK);
  const cJSON *slurm = at(at(doc, "environment"), "slurm");
  assert_string_equal(str(slurm, "job_id"), "4242");
  assert_string_equal(str(slurm, "step_id"), "3");
  assert_string_equal(str(slurm, "node_list"), "gpu[01-04,07]");
  cJSON_Delete(doc);

  // A batch script's own commands: a job, no step.
  unsetenv("SLURM_STEP_ID");
  gs_environment_collect_host(&env);
  doc = gs_result_new("run");
  assert_int_equal(gs_result_set_environment(doc, &env), GS_OK);
  assert_true(cJSON_IsNull(at(at(at(doc, "environment"), "slurm"), "step_id")));
  cJSON_Delete(doc);

  for (int i = 0; i < 3; i++) unsetenv(names[i]);
  gs_environment_collect_host(&env);
  doc = gs_result_new("run");
  assert_int_equal(gs_result_set_environment(doc, &env), GS_OK);
  assert_null(cJSON_GetObjectItemCaseSensitive(at(doc, "environment"), "slurm"));
  cJSON_Delete(doc);
  for (int i = 0; i < 3; i++) {
    if (saved[i]) setenv(names[i], saved[i], 1);
    free(saved[i]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_new_document_is_valid),
      cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_numbers_exact, setup, teardown),
      cmocka_unit_test(test_nan_and_inf_are_null),
      cmocka_unit_test_setup_teardown(test_atomic_replace, setup, teardown),
      cmocka_unit_test_setup_teardown(test_write_nested_missing_dirs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_write_failure, setup, teardown),
      cmocka_unit_test_setup_teardown(test_read_unreadable, setup, teardown),
      cmocka_unit_test_setup_teardown(test_read_malformed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_read_too_large, setup, teardown),
      cmocka_unit_test_setup_teardown(test_not_an_object, setup, teardown),
      cmocka_unit_test_setup_teardown(test_missing_schema, setup, teardown),
      cmocka_unit_test_setup_teardown(test_foreign_schema, setup, teardown),
      cmocka_unit_test_setup_teardown(test_missing_nested_member, setup, teardown),
      cmocka_unit_test(test_free_zeroed_and_filled),
      cmocka_unit_test(test_collect_host),
      cmocka_unit_test(test_slurm_job),
      cmocka_unit_test(test_typed_members_exact),
      cmocka_unit_test(test_typed_members_absent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
