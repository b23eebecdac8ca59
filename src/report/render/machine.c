/* The machine in the report: the node verdict table (verdict.c), the
 * inventory and topology of the info document (GPUs, link words, peer
 * access, NVLink rates, NUMA and CPU affinity, like `gpuscale info`) and the
 * matrices of every p2p document (bandwidth per pair and direction, copy
 * engine and SM copies, latency, like `gpuscale p2p`), as text, Markdown or
 * HTML, and as JSON members. Described in docs/report.md and
 * docs/verdict.md. */
#include "report/verdict/verdict.h"

#include <math.h>
#include <string.h>

#include "core/result.h"
#include "core/json.h"
#include "report/render/internal.h"

/* ---- the node verdict --------------------------------------------------------- */

static void html_cell(FILE *f, const char *tag, const char *cls, const char *text) {
  fprintf(f, "<%s%s%s%s>", tag, cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
  gs_render_html_text(f, text);
  fprintf(f, "</%s>", tag);
}

/* The verdict's rows: the detail can be longer than a table cell, so this
 * table is written here rather than by the table builder. */
static void verdict_rows(gs_render_writer *w, const gs_node_verdict *v) {
  if (w->html) {
    fputs("<table class=\"verdict\">\n<tr><th>check</th><th>state</th><th>detail</th></tr>\n",
          w->f);
    for (size_t i = 0; i < v->n; i++) {
      const gs_node_check *c = &v->checks[i];
      fputs("<tr>", w->f);
      html_cell(w->f, "td", NULL, c->name);
      html_cell(w->f, "td", gs_check_state_name(c->state)[0] == 'n' ? "na" :
                gs_check_state_name(c->state), gs_check_state_name(c->state));
      html_cell(w->f, "td", NULL, c->detail);
      fputs("</tr>\n", w->f);
    }
    fputs("</table>\n", w->f);
    return;
  }
  if (w->md) {
    fputs("| check | state | detail |\n|---|---|---|\n", w->f);
    for (size_t i = 0; i < v->n; i++)
      fprintf(w->f, "| %s | %s | %s |\n", v->checks[i].name,
              gs_check_state_name(v->checks[i].state), v->checks[i].detail);
    fputc('\n', w->f);
    return;
  }
  size_t width = 5;
  for (size_t i = 0; i < v->n; i++)
    if (strlen(v->checks[i].name) > width) width = strlen(v->checks[i].name);
  fprintf(w->f, "  %-*s  %-5s  %s\n", (int)width, "check", "state", "detail");
  for (size_t i = 0; i < v->n; i++)
    fprintf(w->f, "  %-*s  %-5s  %s\n", (int)width, v->checks[i].name,
            gs_check_state_name(v->checks[i].state), v->checks[i].detail);
  fputc('\n', w->f);
}

/* See internal.h. */
void gs_render_node_verdict(gs_render_writer *w, const gs_report *r) {
  gs_node_verdict v;
  gs_report_node_verdict(r, &v);
  if (!v.present) return;
  size_t counts[4] = {0};
  for (size_t i = 0; i < v.n; i++) counts[v.checks[i].state]++;
  gs_render_block(w, 2, "", "Node verdict of %s: %s", v.host ? v.host : "this machine",
                  v.overall == GS_CHECK_NA ? "not applicable" : gs_check_state_name(v.overall));
  gs_render_block(w, 0, "  ",
                  "%zu pass, %zu warn, %zu fail, %zu not applicable; thresholds and where "
                  "they come from: docs/verdict.md. A fail makes suite and report exit 5.",
                  counts[GS_CHECK_PASS], counts[GS_CHECK_WARN], counts[GS_CHECK_FAIL],
                  counts[GS_CHECK_NA]);
  verdict_rows(w, &v);
}

/* See render.h. */
gs_status gs_report_render_node_verdict(FILE *out, const gs_report *r, gs_report_format format) {
  gs_render_writer w = {.f = out, .md = format == GS_REPORT_MARKDOWN || format == GS_REPORT_HTML,
                        .html = format == GS_REPORT_HTML};
  gs_render_node_verdict(&w, r);
  return ferror(out) ? GS_ERR_IO : GS_OK;
}

/* HTML: matrices side by side, each with its caption (a block of its own). */
static void html_open(gs_render_writer *w, const char *cls) {
  if (w->html) fprintf(w->f, "<div class=\"%s\">\n", cls);
}

static void html_close(gs_render_writer *w) {
  if (w->html) fputs("</div>\n", w->f);
}

/* ---- the inventory and topology ------------------------------------------------- */

/* Column heads "GPU0".."GPUn" of the inventory's GPUs into `names`. */
static void gpu_heads(const gs_machine *m, char (*names)[16], const char **head) {
  head[0] = "GPU";
  for (size_t i = 0; i < m->n_shown; i++) {
    snprintf(names[i], 16, "GPU%d", m->gpus[i].index);
    head[i + 1] = names[i];
  }
}

static gs_status inventory_tables(gs_render_writer *w, const gs_report *r, const gs_machine *m) {
  gs_render_block(w, 2, "", "Machine %s (%s)", m->host ? m->host : "-",
                  gs_report_file_name(r, m->file));
  gs_render_block(w, 0, "  ", "CPU %s; NVIDIA driver %s; CUDA driver %s, runtime %s (%s); NCCL %s%s%s",
                  m->cpu_model ? m->cpu_model : "-", m->driver ? m->driver : "-",
                  m->cuda_driver ? m->cuda_driver : "-", m->cuda_runtime ? m->cuda_runtime : "-",
                  m->cuda_status ? m->cuda_status : "-", m->nccl ? m->nccl : "-",
                  m->nvml_status ? "; " : "", m->nvml_status ? m->nvml_status : "");
  if (m->n_gpus == 0) {
    gs_render_block(w, 0, "  ", "No GPU.");
    return GS_OK;
  }
  if (m->n_gpus > m->n_shown)
    gs_render_block(w, 0, "  ", "%zu GPUs; the first %zu are shown", m->n_gpus, m->n_shown);
  static const char *const head[] = {"GPU",     "name",       "PCI bus id", "memory GiB", "SMs",
                                     "compute", "max SM MHz", "max mem MHz", "power W"};
  static const int left[] = {0, 1, 1, 0, 0, 0, 0, 0, 0};
  gs_render_table t;
  gs_render_table_init(&t, 9, head, left);
  for (size_t i = 0; i < m->n_shown; i++) {
    const gs_machine_gpu *g = &m->gpus[i];
    char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
    gs_render_cellf(c[0], "%d", g->index);
    gs_render_cellf(c[1], "%s", g->name ? g->name : "-");
    gs_render_cellf(c[2], "%s", g->bus_id ? g->bus_id : "-");
    gs_render_fixed(c[3], g->memory_bytes / 1073741824.0, 1, "");
    gs_render_fixed(c[4], g->sm_count, 0, "");
    gs_render_cellf(c[5], "%s", g->compute_capability ? g->compute_capability : "-");
    gs_render_fixed(c[6], g->max_sm_clock_mhz, 0, "");
    gs_render_fixed(c[7], g->max_memory_clock_mhz, 0, "");
    gs_render_fixed(c[8], g->power_limit_watts, 0, "");
  }
  gs_status st = gs_render_table_done(w, &t, "  ");
  if (st != GS_OK) return st;

  // Links like `nvidia-smi topo -m`, with each GPU's NUMA node and CPU
  // affinity; then peer access and the theoretical NVLink rates.
  char names[GS_MACHINE_GPUS_MAX][16];
  const char *mhead[GS_RENDER_MAX_COLS];
  int mleft[GS_RENDER_MAX_COLS] = {1};
  gpu_heads(m, names, mhead);
  static const char *const captions[] = {
      "Links (X: itself, NV#: # NVLinks, PIX/PXB/PHB/NODE/SYS: PCIe paths as in nvidia-smi "
      "topo -m, ?: unknown)",
      "Peer access (cudaDeviceCanAccessPeer: OK supported, NS not supported, ?: unknown)",
      "Theoretical NVLink bandwidth per direction (GB/s = 10^9 bytes/s; 0: no NVLink)"};
  html_open(w, "matrices");
  for (int which = 0; which < 3; which++) {
    html_open(w, "matrix");
    gs_render_block(w, -1, "  ", "%s", captions[which]);
    size_t extra = which == 0 ? 2 : 0;
    mhead[m->n_shown + 1] = "NUMA";
    mhead[m->n_shown + 2] = "CPU affinity";
    mleft[m->n_shown + 2] = 1;
    gs_render_table_init(&t, m->n_shown + 1 + extra, mhead, mleft);
    for (size_t i = 0; i < m->n_shown; i++) {
      char(*c)[GS_RENDER_CELL] = gs_render_table_row(&t);
      gs_render_cellf(c[0], "GPU%d", m->gpus[i].index);
      for (size_t j = 0; j < m->n_shown; j++) {
        char *cell = c[j + 1];
        if (i == j)
          gs_render_cellf(cell, "X");
        else if (which == 0)
          gs_render_cellf(cell, "%s", m->links[i][j] ? m->links[i][j] : "?");
        else if (which == 1)
          gs_render_cellf(cell, "%s", m->peer[i][j] < 0 ? "?" : m->peer[i][j] ? "OK" : "NS");
        else
          gs_render_fixed(cell, m->nvlink_bw[i][j] / 1e9, 1, "");
      }
      if (extra) {
        gs_render_fixed(c[m->n_shown + 1], m->gpus[i].numa_node, 0, "");
        gs_render_cellf(c[m->n_shown + 2], "%s",
                        m->gpus[i].cpu_affinity ? m->gpus[i].cpu_affinity : "-");
      }
    }
    if ((st = gs_render_table_done(w, &t, "    ")) != GS_OK) return st;
    html_close(w);
  }
  html_close(w);
  return GS_OK;
}

/* ---- p2p matrices ------------------------------------------------------------------ */

/* One cell of a p2p test in its display unit (GB/s or us). */
static void p2p_cell_text(const cJSON *test, size_t i, size_t j, char *cell) {
  double median;
  const char *state;
  gs_machine_p2p_cell(test, i, j, &median, &state);
  int seconds = strcmp(gs_json_string_member(test, "unit", ""), "seconds") == 0;
  if (!state)
    gs_render_cellf(cell, "-");
  else if (strcmp(state, "ok") != 0)
    gs_render_cellf(cell, "%s", state);
  else if (seconds)
    gs_render_fixed(cell, median * 1e6, 2, "");
  else
    gs_render_fixed(cell, median / 1e9, 1, "");
}

static gs_status p2p_tables(gs_render_writer *w, const gs_report *r, size_t file) {
  const cJSON *doc = r->docs[file];
  const cJSON *p2p = cJSON_GetObjectItemCaseSensitive(doc, "p2p");
  const cJSON *devices = cJSON_GetObjectItemCaseSensitive(p2p, "devices");
  const cJSON *config = cJSON_GetObjectItemCaseSensitive(doc, "config");
  size_t n = (size_t)cJSON_GetArraySize(devices);
  if (n > GS_MACHINE_GPUS_MAX) n = GS_MACHINE_GPUS_MAX;
  const cJSON *size = cJSON_GetObjectItemCaseSensitive(config, "size_bytes");
  const cJSON *samples = cJSON_GetObjectItemCaseSensitive(config, "samples");
  gs_render_block(w, 2, "", "Links measured (%s, status %s)", gs_report_file_name(r, file),
                  gs_json_string_member(doc, "status", "-"));
  gs_render_block(w, 0, "  ",
                  "Rows send, columns receive (bidirectional: the total of both directions); "
                  "each cell the median of %d samples of %.0f MiB copies; GB/s = 10^9 bytes/s, "
                  "latency in us; '-' not measured (docs/p2p.md)",
                  cJSON_IsNumber(samples) ? samples->valueint : 0,
                  cJSON_IsNumber(size) ? size->valuedouble / 1048576.0 : 0.0);
  char names[GS_MACHINE_GPUS_MAX][16];
  const char *head[GS_RENDER_MAX_COLS] = {"GPU"};
  int left[GS_RENDER_MAX_COLS] = {1};
  for (size_t i = 0; i < n; i++) {
    snprintf(names[i], sizeof names[i], "GPU%d", cJSON_GetArrayItem(devices, (int)i)->valueint);
    head[i + 1] = names[i];
  }
  const cJSON *tests = cJSON_GetObjectItemCaseSensitive(p2p, "tests");
  gs_status st = GS_OK;
  html_open(w, "matrices");
  for (const cJSON *t = cJSON_IsArray(tests) ? tests->child : NULL; t && st == GS_OK;
       t = t->next) {
    const char *title = gs_json_string_member(t, "title", gs_json_string_member(t, "name", "?"));
    if (strcmp(gs_json_string_member(t, "status", ""), "ran") != 0) {
      gs_render_block(w, 0, "  ", "%s: not measured: %s", title,
                      gs_json_string_member(t, "reason", "-"));
      continue;
    }
    html_open(w, "matrix");
    gs_render_block(w, -1, "  ", "%s", title);
    int matrix = strcmp(gs_json_string_member(t, "layout", ""), "matrix") == 0;
    static const char *const per_gpu_head[] = {"GPU", "value"};
    gs_render_table tab;
    gs_render_table_init(&tab, matrix ? n + 1 : 2, matrix ? head : per_gpu_head, left);
    for (size_t i = 0; i < n; i++) {
      char(*c)[GS_RENDER_CELL] = gs_render_table_row(&tab);
      gs_render_cellf(c[0], "%s", names[i]);
      for (size_t j = 0; j < (matrix ? n : 1); j++) {
        if (matrix && i == j)
          gs_render_cellf(c[j + 1], "X");
        else
          p2p_cell_text(t, i, j, c[j + 1]);
      }
    }
    st = gs_render_table_done(w, &tab, "    ");
    html_close(w);
  }
  html_close(w);
  return st;
}

/* See internal.h. */
gs_status gs_render_machine_sections(gs_render_writer *w, const gs_report *r) {
  gs_machine m;
  gs_machine_read(r, &m);
  gs_status st = m.present ? inventory_tables(w, r, &m) : GS_OK;
  for (size_t f = 0; f < r->n_files && st == GS_OK; f++)
    if (gs_machine_is_p2p(r, f)) st = p2p_tables(w, r, f);
  return st;
}

/* ---- JSON ------------------------------------------------------------------------- */

/* The medians of a p2p test as a matrix (or a list per GPU), null where
 * not measured; unit as the document's. */
static cJSON *p2p_test_json(gs_json_build *b, const cJSON *t, size_t n) {
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  if (!o) return NULL;
  gs_json_put_string(b, o, "name", gs_json_string_member(t, "name", "?"));
  gs_json_put_string(b, o, "unit", gs_json_string_member(t, "unit", "?"));
  gs_json_put_string(b, o, "layout", gs_json_string_member(t, "layout", "?"));
  gs_json_put_string(b, o, "status", gs_json_string_member(t, "status", "?"));
  int matrix = strcmp(gs_json_string_member(t, "layout", ""), "matrix") == 0;
  cJSON *rows = gs_json_put_array(b, o, "medians");
  for (size_t i = 0; rows && i < n; i++) {
    cJSON *row = matrix ? gs_json_check(b, cJSON_CreateArray()) : NULL;
    for (size_t j = 0; j < (matrix ? n : 1); j++) {
      double median;
      const char *state;
      gs_machine_p2p_cell(t, i, j, &median, &state);
      // Not measured (or not a number): null.
      gs_json_append_number(b, matrix ? row : rows,
                            state && strcmp(state, "ok") == 0 ? median : NAN);
    }
    if (matrix) gs_json_append(b, rows, row);
  }
  return o;
}

/* See render.h. */
void gs_report_machine_json(gs_json_build *b, const gs_report *r, cJSON *doc) {
  gs_node_verdict v;
  gs_report_node_verdict(r, &v);
  if (!v.present) {
    gs_json_put_null(b, doc, "node_verdict");
  } else {
    cJSON *o = gs_json_put_object(b, doc, "node_verdict");
    if (o) {
      gs_json_put_string(b, o, "host", v.host ? v.host : "");
      gs_json_put_string(b, o, "verdict", gs_check_state_name(v.overall));
      cJSON *checks = gs_json_put_array(b, o, "checks");
      for (size_t i = 0; checks && i < v.n; i++) {
        cJSON *c = gs_json_check(b, cJSON_CreateObject());
        if (!c) break;
        gs_json_put_string(b, c, "check", v.checks[i].name);
        gs_json_put_string(b, c, "state", gs_check_state_name(v.checks[i].state));
        gs_json_put_string(b, c, "detail", v.checks[i].detail);
        gs_json_append(b, checks, c);
      }
    }
  }
  cJSON *p2p = gs_json_put_array(b, doc, "p2p");
  for (size_t f = 0; p2p && f < r->n_files; f++) {
    if (!gs_machine_is_p2p(r, f)) continue;
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(r->docs[f], "p2p");
    const cJSON *devices = cJSON_GetObjectItemCaseSensitive(body, "devices");
    cJSON *o = cJSON_CreateObject();
    gs_json_append(b, p2p, o);
    if (b->failed) break;
    gs_json_put_string(b, o, "file", r->files[f]);
    if (devices) gs_json_put_item(b, o, "devices", cJSON_Duplicate(devices, 1));
    cJSON *tests = gs_json_put_array(b, o, "tests");
    size_t n = (size_t)cJSON_GetArraySize(devices);
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(body, "tests");
    for (const cJSON *t = cJSON_IsArray(all) ? all->child : NULL; tests && t; t = t->next) {
      cJSON *x = p2p_test_json(b, t, n);
      gs_json_append(b, tests, x);
    }
  }
}
