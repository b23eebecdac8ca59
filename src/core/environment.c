/* The environment of a measurement: freeing it, and the host's part of it
 * (host name, OS, CPU model, cores, load average and memory) read from the
 * system, with the Slurm job it runs in. The GPU part is filled by
 * platform/device.c. */
// getloadavg is a BSD function outside POSIX: glibc declares it with
// _DEFAULT_SOURCE, which the project-wide _POSIX_C_SOURCE would hide.
#define _DEFAULT_SOURCE
#include "core/result.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

void gs_environment_free(gs_environment *env) {
  if (!env) return;
  free(env->gpus);
  env->gpus = NULL;
  env->gpu_count = 0;
}

/* One core's L2 cache in bytes, from cpu0's level-2 cache in sysfs ("1024K");
 * 0 when it is not described. */
static uint64_t read_cpu_l2_bytes(void) {
  for (int i = 0; i < 8; i++) {
    char path[96], text[32] = "";
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    const int level = fgets(text, sizeof text, f) ? atoi(text) : 0;
    fclose(f);
    if (level != 2) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    f = fopen(path, "r");
    if (!f) return 0;
    unsigned long long n = 0;
    char unit = 0;
    const int got = fscanf(f, "%llu%c", &n, &unit);
    fclose(f);
    if (got < 1) return 0;
    return got == 2 && unit == 'K' ? n << 10 : got == 2 && unit == 'M' ? n << 20 : n;
  }
  return 0;
}

/* Copies the value of the first "model name" line of /proc/cpuinfo into buf;
 * returns 0 when there is none (e.g. on most Arm kernels). */
static int read_cpu_model(char *buf, size_t size) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return 0;
  char line[1024];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    const char *colon = strchr(line, ':');
    if (!colon) continue;
    const char *v = colon + 1;
    while (*v == ' ' || *v == '\t') v++;
    size_t len = strcspn(v, "\r\n");
    while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t')) len--;
    if (len == 0) continue;
    if (len >= size) len = size - 1;
    memcpy(buf, v, len);
    buf[len] = '\0';
    found = 1;
  }
  fclose(f);
  return found;
}

/* Copies the environment variable `name` into buf ("" when unset). */
static void copy_variable(const char *name, char *buf, size_t size) {
  const char *value = getenv(name);
  snprintf(buf, size, "%s", value ? value : "");
}

void gs_environment_collect_host(gs_environment *env) {
  snprintf(env->host, sizeof env->host, "%s", gs_hostname());

  struct utsname u;
  if (uname(&u) == 0)
    snprintf(env->os, sizeof env->os, "%s %s %s", u.sysname, u.release, u.machine);
  else
    snprintf(env->os, sizeof env->os, "unknown");

  if (!read_cpu_model(env->cpu_model, sizeof env->cpu_model))
    snprintf(env->cpu_model, sizeof env->cpu_model, "unknown");

  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  env->cpu_logical_cores = cores > 0 ? (int)cores : 0;
  // The cache a CPU rank has to itself: a suspect speedup whose ranks' data
  // fits it only when divided names it (core/scaling.c).
  env->cpu_l2_cache_bytes = read_cpu_l2_bytes();
  // What else the host ran before we measured: a suspect speedup names a
  // busy host as its likely cause (core/scaling.c).
  double load[1];
  env->load_average = getloadavg(load, 1) == 1 ? load[0] : NAN;

  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  env->host_memory_bytes =
      (pages > 0 && page_size > 0) ? (uint64_t)pages * (uint64_t)page_size : 0;

  copy_variable("SLURM_JOB_ID", env->slurm.job_id, sizeof env->slurm.job_id);
  copy_variable("SLURM_STEP_ID", env->slurm.step_id, sizeof env->slurm.step_id);
  copy_variable("SLURM_JOB_NODELIST", env->slurm.node_list, sizeof env->slurm.node_list);
}
