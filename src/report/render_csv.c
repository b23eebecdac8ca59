/* The CSV renderer of a report: tidy, one row per raw sample (step times
 * and each rank's times), fields quoted as RFC 4180 asks, seconds in the
 * fewest digits that read back exactly (docs/report.md, "Output formats"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/render_internal.h"

/* Writes `text` as one CSV field (RFC 4180: quoted when it holds a comma,
 * quote or line break, quotes doubled). */
static void csv_field(FILE *out, const char *text) {
  if (strpbrk(text, ",\"\r\n") == NULL) {
    fputs(text, out);
    return;
  }
  fputc('"', out);
  for (const char *p = text; *p; p++) {
    if (*p == '"') fputc('"', out);
    fputc(*p, out);
  }
  fputc('"', out);
}

/* Sample `x` as seconds text: the shortest of 15..17 significant digits
 * that reads back exactly; "" for null or a non-finite value. 16 digits are
 * tried first: if they read back, 15 might too (fewer never fail where more
 * succeed); if not, 17 always do. At most two conversions each way. */
static void csv_sample(const cJSON *x, char *buf, size_t size) {
  buf[0] = '\0';
  if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble)) return;
  double v = x->valuedouble;
  snprintf(buf, size, "%.16g", v);
  if (strtod(buf, NULL) != v) {
    snprintf(buf, size, "%.17g", v);
    return;
  }
  char shorter[64];
  snprintf(shorter, sizeof shorter, "%.15g", v);
  if (strtod(shorter, NULL) == v) snprintf(buf, size, "%s", shorter);
}

/* The samples a rank's CSV rows use: device clock when recorded, else wall. */
static const cJSON *rank_samples(const cJSON *rk) {
  const cJSON *dev = cJSON_GetObjectItemCaseSensitive(rk, "device_seconds");
  const cJSON *use = cJSON_IsArray(dev) ? dev : cJSON_GetObjectItemCaseSensitive(rk, "wall_seconds");
  return cJSON_IsArray(use) ? use : NULL;
}

/* The fields before "iteration" of every row of one run, with their commas:
 * "file,workload,backend,scaling,world_size,op,bytes,dtype,form,run,"; the
 * collective's op, message size, data type and in-place form are empty for
 * a workload's measurement. */
static void csv_prefix(FILE *mem, const gs_report *r, size_t fi, const cJSON *m, size_t run) {
  const cJSON *ws = cJSON_GetObjectItemCaseSensitive(m, "world_size");
  const cJSON *wl = cJSON_GetObjectItemCaseSensitive(m, "workload");
  const cJSON *be = cJSON_GetObjectItemCaseSensitive(m, "backend");
  const cJSON *sc = cJSON_GetObjectItemCaseSensitive(m, "scaling");
  csv_field(mem, r->files[fi]);
  fputc(',', mem);
  csv_field(mem, cJSON_IsString(wl) ? wl->valuestring : "");
  fputc(',', mem);
  csv_field(mem, cJSON_IsString(be) ? be->valuestring : "");
  fputc(',', mem);
  csv_field(mem, cJSON_IsString(sc) ? sc->valuestring : "");
  fprintf(mem, ",%.0f,", cJSON_IsNumber(ws) ? ws->valuedouble : 0.0);
  const cJSON *coll = cJSON_GetObjectItemCaseSensitive(m, "collective");
  const cJSON *op = cJSON_GetObjectItemCaseSensitive(coll, "op");
  const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(coll, "bytes");
  const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(coll, "dtype");
  const cJSON *in_place = cJSON_GetObjectItemCaseSensitive(coll, "in_place");
  csv_field(mem, cJSON_IsString(op) ? op->valuestring : "");
  fputc(',', mem);
  if (cJSON_IsNumber(bytes)) fprintf(mem, "%.0f", bytes->valuedouble);
  fputc(',', mem);
  csv_field(mem, cJSON_IsString(dtype) ? dtype->valuestring : "");
  int form = cJSON_IsBool(in_place) ? cJSON_IsTrue(in_place) : -1;
  fprintf(mem, ",%s,%zu,", coll ? gs_report_coll_form(form) : "", run);
}

/* See render_internal.h. One row per sample: the step time of each
 * iteration (rank "step"), then each rank's time of that iteration (device
 * clock when recorded, else wall); the analysis has already validated the
 * structure. */
gs_status gs_report_render_csv(FILE *out, const gs_report *r) {
  fputs("file,workload,backend,scaling,world_size,op,bytes,dtype,form,run,iteration,rank,seconds\n",
        out);
  char buf[64];
  for (size_t fi = 0; fi < r->n_files; fi++) {
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(r->docs[fi], "measurements");
    for (const cJSON *m = ms ? ms->child : NULL; m; m = m->next) {
      const cJSON *runs = cJSON_GetObjectItemCaseSensitive(m, "runs");
      size_t ri = 0;
      for (const cJSON *run = runs ? runs->child : NULL; run; run = run->next, ri++) {
        const cJSON *steps = cJSON_GetObjectItemCaseSensitive(run, "step_seconds");
        const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(run, "ranks");
        size_t nranks = (size_t)cJSON_GetArraySize(ranks);
        // One cursor per rank, advanced together, so that the walk is linear.
        const cJSON **cur = calloc(nranks + 1, sizeof *cur);
        if (!cur) return GS_ERR_NOMEM;
        size_t k = 0;
        for (const cJSON *rk = ranks ? ranks->child : NULL; rk; rk = rk->next, k++) {
          const cJSON *use = rank_samples(rk);
          cur[k] = use ? use->child : NULL;
        }
        const cJSON *step = cJSON_IsArray(steps) ? steps->child : NULL;
        char *prefix = NULL;
        size_t prefix_len = 0;
        FILE *mem = open_memstream(&prefix, &prefix_len);
        if (mem) {
          csv_prefix(mem, r, fi, m, ri);
          if (fclose(mem) != 0) prefix = NULL;
        }
        if (!prefix) {
          free(cur);
          return GS_ERR_NOMEM;
        }
        for (size_t iter = 0;; iter++) {
          int any = step != NULL;
          for (k = 0; k < nranks; k++) any |= cur[k] != NULL;
          if (!any) break;
          if (step) {
            csv_sample(step, buf, sizeof buf);
            fprintf(out, "%s%zu,step,%s\n", prefix, iter, buf);
            step = step->next;
          }
          k = 0;
          for (const cJSON *rk = ranks ? ranks->child : NULL; rk; rk = rk->next, k++) {
            if (!cur[k]) continue;
            const cJSON *num = cJSON_GetObjectItemCaseSensitive(rk, "rank");
            csv_sample(cur[k], buf, sizeof buf);
            fprintf(out, "%s%zu,%.0f,%s\n", prefix, iter,
                    cJSON_IsNumber(num) ? num->valuedouble : -1.0, buf);
            cur[k] = cur[k]->next;
          }
        }
        free(cur);
        free(prefix);
      }
    }
  }
  return GS_OK;
}
