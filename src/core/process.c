/* Liveness of a process of this host, from /proc (see process.h). */
#include "core/process.h"

#include <stdio.h>
#include <string.h>

/* The state letter of process `pid` from /proc/PID/stat, or 0 when it
 * cannot be read. */
static char process_state(int pid) {
  char path[64], text[512];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  // "PID (COMM) STATE ...": COMM may hold spaces and parentheses.
  const char *paren = strrchr(text, ')');
  return paren && paren[1] == ' ' ? paren[2] : '?';
}

int gs_process_alive(int pid) {
  const char state = process_state(pid);
  return state != 0 && state != 'Z' && state != 'X';
}

int gs_process_stopped(int pid) {
  const char state = process_state(pid);
  return state == 'T' || state == 't';
}
