/* Liveness of a process of this host, from /proc (see process.h). */
#include "core/process.h"

#include <stdio.h>
#include <string.h>

int gs_process_alive(int pid) {
  char path[64], text[512];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  // "PID (COMM) STATE ...": COMM may hold spaces and parentheses.
  const char *paren = strrchr(text, ')');
  return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}
