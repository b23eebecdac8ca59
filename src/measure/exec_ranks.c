/* The rank processes of the user's command (see exec_ranks.h): descendants
 * found through /proc's parent links, their rank read from the variable
 * their launcher set, and the first of them to end. */
#include "measure/exec_ranks.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/timer.h"

/* The variables that launchers set to a process's rank, in the order they
 * are trusted: Open MPI, PMIx, MPICH/PMI, Slurm, torchrun. */
static const char *const rank_names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                         "SLURM_PROCID", "RANK"};
#define RANK_NAMES (sizeof rank_names / sizeof rank_names[0])

/* A process of /proc: pid, parent, state and start time. */
typedef struct {
  int pid, ppid;
  char state;
  unsigned long long start;
} proc_stat;

/* Reads /proc/PID/stat; 0 when it cannot. */
static int read_stat(int pid, proc_stat *out) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = fopen(path, "re");
  if (!f) return 0;
  const size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  // The name in parentheses may hold spaces and ')': the fields follow the last ')'.
  const char *at = strrchr(buf, ')');
  if (!at) return 0;
  out->pid = pid;
  unsigned long long skip;
  int ppid;
  char state;
  // state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
  // utime stime cutime cstime priority nice num_threads itrealvalue starttime
  if (sscanf(at + 1, " %c %d %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
             "%llu %llu %llu %llu %llu", &state, &ppid, &skip, &skip, &skip, &skip, &skip, &skip,
             &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip,
             &out->start) != 20)
    return 0;
  out->ppid = ppid;
  out->state = state;
  return 1;
}

/* Whether `name` is set in `env` (then a descendant inherited it). */
static int env_has(char *const *env, const char *name) {
  const size_t len = strlen(name);
  for (size_t i = 0; env && env[i]; i++)
    if (strncmp(env[i], name, len) == 0 && env[i][len] == '=') return 1;
  return 0;
}

/* The rank that process `pid`'s launcher gave it, -1 when none. */
static int read_rank(const gs_exec_ranks *w, int pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/environ", pid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  enum { ENV_MAX = 1 << 20 };
  char *buf = malloc(ENV_MAX + 1);
  size_t n = 0;
  ssize_t got = 0;
  while (buf && n < ENV_MAX && (got = read(fd, buf + n, ENV_MAX - n)) > 0) n += (size_t)got;
  close(fd);
  if (!buf) return -1;
  buf[n] = '\0';
  int rank = -1;
  for (size_t k = 0; k < RANK_NAMES && rank < 0; k++) {
    if (env_has(w->root_env, rank_names[k])) continue;
    const size_t len = strlen(rank_names[k]);
    for (size_t at = 0; at < n; at += strlen(buf + at) + 1) {
      if (strncmp(buf + at, rank_names[k], len) != 0 || buf[at + len] != '=') continue;
      char *end = NULL;
      const long v = strtol(buf + at + len + 1, &end, 10);
      if (end != buf + at + len + 1 && *end == '\0' && v >= 0 && v < GS_MAX_RANKS) rank = (int)v;
      break;
    }
  }
  free(buf);
  return rank;
}

void gs_exec_ranks_init(gs_exec_ranks *w, int root, char *const *root_env) {
  memset(w, 0, sizeof *w);
  w->root = root;
  w->root_env = root_env;
  w->lost_rank = -1;
  w->lost_pid = -1;
}

static gs_exec_rank_proc *tracked(gs_exec_ranks *w, int pid) {
  for (size_t i = 0; i < w->n; i++)
    if (w->procs[i].pid == pid) return &w->procs[i];
  return NULL;
}

/* The rank processes that ended since the last look. */
static void look_gone(gs_exec_ranks *w) {
  int first = -1, pid = -1, count = 0;
  for (size_t i = 0; i < w->n; i++) {
    gs_exec_rank_proc *p = &w->procs[i];
    if (p->gone) continue;
    proc_stat st;
    if (read_stat(p->pid, &st) && st.start == p->start && st.state != 'Z' && st.state != 'X')
      continue;
    p->gone = 1;
    count++;
    if (first < 0 || p->rank < first) {
      first = p->rank;
      pid = p->pid;
    }
  }
  const double now = gs_time_seconds();
  if (count > 0 && w->candidate == 0) {
    w->candidate = 1;
    w->lost_rank = first;
    w->lost_pid = pid;
    w->lost_together = count - 1;
    w->lost_at = now;
  }
  if (w->candidate != 1 || now - w->lost_at < GS_EXEC_RANK_SETTLE_SECONDS) return;
  int running = 0;
  for (size_t i = 0; i < w->n; i++) running += !w->procs[i].gone;
  // Confirmed while another rank still runs; otherwise they ended together.
  w->candidate = running > 0 ? 2 : -1;
}

/* Watches process `pid` (child of `parent`) when its launcher gave it a
 * rank and it is not a rank process's own child of the same rank. */
static void consider(gs_exec_ranks *w, int pid, int parent) {
  if (tracked(w, pid) || w->n == GS_EXEC_RANK_PROCS) return;
  proc_stat st;
  if (!read_stat(pid, &st) || st.state == 'Z') return;
  const int rank = read_rank(w, pid);
  if (rank < 0) return;
  const gs_exec_rank_proc *up = tracked(w, parent);
  if (up && up->rank == rank) return;
  w->procs[w->n++] = (gs_exec_rank_proc){.pid = pid, .rank = rank, .start = st.start};
}

/* Appends to list[*n..cap) the children of process `pid`, every thread's
 * (/proc/PID/task/TID/children). 0 when the kernel has no such files. */
static int read_children(int pid, int *list, size_t *n, size_t cap) {
  char path[96];
  snprintf(path, sizeof path, "/proc/%d/task", pid);
  DIR *dir = opendir(path);
  if (!dir) return 1; /* gone: no children, the files may well exist */
  int found = 0;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "/proc/%d/task/%.16s/children", pid, e->d_name);
    FILE *f = fopen(path, "re");
    if (!f) continue;
    found = 1;
    int child = 0;
    while (*n < cap && fscanf(f, "%d", &child) == 1) list[(*n)++] = child;
    fclose(f);
  }
  closedir(dir);
  return found;
}

/* New rank processes among the root's descendants, walked down from the
 * root through the kernel's children lists (a few files, not all of
 * /proc). 0 when the kernel has no children lists. */
static int look_new_children(gs_exec_ranks *w) {
  int queue[GS_EXEC_RANK_PROCS * 4];
  size_t n = 0;
  queue[n++] = w->root;
  for (size_t head = 0; head < n; head++) {
    const size_t before = n;
    if (!read_children(queue[head], queue, &n, sizeof queue / sizeof queue[0]) && head == 0)
      return 0;
    for (size_t i = before; i < n; i++) consider(w, queue[i], queue[head]);
  }
  return 1;
}

/* The same from every process of /proc and its parent link, where the
 * kernel has no children lists: a process whose parent is the root or a
 * descendant. */
static void look_new_scan(gs_exec_ranks *w) {
  DIR *dir = opendir("/proc");
  if (!dir) return;
  size_t cap = 1024, n = 0;
  proc_stat *all = malloc(cap * sizeof *all);
  struct dirent *e;
  while (all && (e = readdir(dir)) != NULL) {
    char *end = NULL;
    const long pid = strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    if (n == cap) {
      proc_stat *grown = realloc(all, 2 * cap * sizeof *all);
      if (!grown) break;
      all = grown;
      cap *= 2;
    }
    if (read_stat((int)pid, &all[n])) n++;
  }
  closedir(dir);
  if (!all) return;
  // Descendants, depth by depth: at most a few passes (launcher, its daemon,
  // a wrapper, the rank).
  int desc[GS_EXEC_RANK_PROCS * 4];
  size_t n_desc = 0;
  desc[n_desc++] = w->root;
  for (int pass = 0, grew = 1; grew && pass < 16; pass++) {
    grew = 0;
    for (size_t i = 0; i < n && n_desc < sizeof desc / sizeof desc[0]; i++) {
      int parent_in = 0, self_in = 0;
      for (size_t d = 0; d < n_desc; d++) {
        parent_in |= desc[d] == all[i].ppid;
        self_in |= desc[d] == all[i].pid;
      }
      if (!parent_in || self_in || all[i].state == 'Z') continue;
      desc[n_desc++] = all[i].pid;
      grew = 1;
      consider(w, all[i].pid, all[i].ppid);
    }
  }
  free(all);
}

void gs_exec_ranks_look(gs_exec_ranks *w, int find_new) {
  look_gone(w);
  if (find_new && !look_new_children(w)) look_new_scan(w);
}

int gs_exec_ranks_lost(const gs_exec_ranks *w) {
  return w->candidate == 2 ? w->lost_rank : -1;
}
