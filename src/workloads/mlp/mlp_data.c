/* mlp datasets from a CSV file (docs/workloads/mlp.md, "Data"): one sample
 * per line, the inputs then the targets as comma-separated decimal numbers;
 * blank lines and lines starting with '#' are skipped, and so is a first
 * line that is not numeric (a header). Every value is parsed strictly. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "workloads/mlp/mlp.h"

/* Appends one value to a growing array. */
static gs_status push(float **v, uint64_t *n, uint64_t *cap, float value) {
  if (*n == *cap) {
    const uint64_t grown = *cap ? *cap * 2 : 4096;
    float *p = realloc(*v, (size_t)grown * sizeof(float));
    if (!p) return gs_error(GS_ERR_NOMEM, "mlp: cannot grow the dataset to %llu values",
                            (unsigned long long)grown);
    *v = p;
    *cap = grown;
  }
  (*v)[(*n)++] = value;
  return GS_OK;
}

/* Parses one line into `want` floats; returns the number of fields found
 * (-1 on a field that is not a finite number, its text in *bad). */
static int parse_line(char *line, float *out, int want, char **bad) {
  int fields = 0;
  char *save = NULL;
  for (char *tok = strtok_r(line, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    while (*tok == ' ' || *tok == '\t') tok++;
    char *end = NULL;
    errno = 0;
    const double v = strtod(tok, &end);
    while (end && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')) end++;
    if (end == tok || *end != '\0' || errno == ERANGE || !isfinite(v) || fabs(v) > 3.4e38) {
      *bad = tok;
      return -1;
    }
    if (fields < want) out[fields] = (float)v;
    fields++;
  }
  return fields;
}

gs_status gs_mlp_data_load_csv(const char *path, uint32_t features, uint32_t targets, float **x,
                               float **y, uint64_t *n) {
  *x = *y = NULL;
  *n = 0;
  FILE *f = fopen(path, "r");
  if (!f) return gs_error(GS_ERR_IO, "--data %s: cannot open: %s", path, strerror(errno));
  const int want = (int)(features + targets);
  float *row = malloc((size_t)want * sizeof(float));
  char *line = NULL;
  size_t size = 0;
  uint64_t nx = 0, ny = 0, cx = 0, cy = 0, lineno = 0;
  gs_status st = row ? GS_OK : gs_error(GS_ERR_NOMEM, "mlp: cannot allocate a CSV row");
  while (st == GS_OK && getline(&line, &size, f) != -1) {
    lineno++;
    const char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '#' || *p == '\n' || *p == '\r' || *p == '\0') continue;
    char *bad = NULL;
    const int fields = parse_line(line, row, want, &bad);
    if (fields < 0 && lineno == 1) continue; // a header
    if (fields < 0) {
      st = gs_error(GS_ERR_USAGE, "--data %s line %llu: '%.40s' is not a finite number", path,
                    (unsigned long long)lineno, bad);
    } else if (fields != want) {
      st = gs_error(GS_ERR_USAGE,
                    "--data %s line %llu: %d values, the model needs %u inputs + %u targets = %d",
                    path, (unsigned long long)lineno, fields, features, targets, want);
    }
    for (int i = 0; st == GS_OK && i < want; i++)
      st = i < (int)features ? push(x, &nx, &cx, row[i]) : push(y, &ny, &cy, row[i]);
    if (st == GS_OK) (*n)++;
  }
  if (st == GS_OK && ferror(f)) st = gs_error(GS_ERR_IO, "--data %s: read error", path);
  if (st == GS_OK && *n == 0) st = gs_error(GS_ERR_USAGE, "--data %s: no samples", path);
  free(line);
  free(row);
  fclose(f);
  if (st != GS_OK) {
    free(*x);
    free(*y);
    *x = *y = NULL;
    *n = 0;
  }
  return st;
}
