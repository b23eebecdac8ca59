/* Parsers of nccl-tests output, text table and JSON (see nccl_tests.h; the
 * column mapping is in docs/ingest.md). */
#include "ingest/nccl_tests.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/result.h"
#include "ingest/text.h"

static const struct {
  const char *program; /* without the "_perf" suffix */
  const char *op;
} programs[] = {
    {"all_reduce", "allreduce"},         {"all_gather", "allgather"},
    {"reduce_scatter", "reducescatter"}, {"broadcast", "broadcast"},
    {"reduce", "reduce"},                {"alltoall", "alltoall"},
    {"sendrecv", "sendrecv"},            {"gather", "gather"},
    {"scatter", "scatter"},              {"hypercube", "hypercube"},
};

const char *gs_nccl_tests_op_from_program(const char *program) {
  if (!program) return NULL;
  const char *base = strrchr(program, '/');
  base = base ? base + 1 : program;
  for (size_t i = 0; i < sizeof programs / sizeof programs[0]; i++) {
    size_t n = strlen(programs[i].program);
    if (strncmp(base, programs[i].program, n) != 0) continue;
    const char *rest = base + n;
    if (strcmp(rest, "_perf") == 0 || strcmp(rest, "_perf_mpi") == 0) return programs[i].op;
  }
  return NULL;
}

size_t gs_nccl_tests_process_ranks(const gs_nccl_tests_output *out) {
  return out->threads > 0 && out->gpus_per_thread > 0
             ? (size_t)out->threads * (size_t)out->gpus_per_thread
             : 0;
}

size_t gs_nccl_tests_world_size(const gs_nccl_tests_output *out) {
  size_t per_process = gs_nccl_tests_process_ranks(out);
  if (out->n_ranks > 0 && out->lists_processes) return out->n_ranks * per_process;
  return out->n_ranks > 0 ? out->n_ranks : per_process;
}

void gs_nccl_tests_free(gs_nccl_tests_output *out) {
  if (!out) return;
  for (size_t i = 0; out->rows && i < out->n_rows; i++) {
    free(out->rows[i].out_of_place.iter_times_us);
    free(out->rows[i].in_place.iter_times_us);
  }
  free(out->rows);
  free(out->ranks);
  out->rows = NULL;
  out->ranks = NULL;
  out->n_rows = out->n_ranks = 0;
}

static void output_init(gs_nccl_tests_output *out, const char *format) {
  memset(out, 0, sizeof *out);
  snprintf(out->format, sizeof out->format, "%s", format);
  out->threads = out->gpus_per_thread = -1;
  out->warmup_iters = out->iters = out->validation = -1;
  out->avg_busbw_gbs = NAN;
  out->out_of_bounds = -1;
}

/* Appends one zeroed row or rank; NULL when memory runs out. */
static gs_nccl_tests_row *new_row(gs_nccl_tests_output *out, size_t *cap) {
  if (out->n_rows == *cap) {
    size_t n = *cap ? 2 * *cap : 16;
    gs_nccl_tests_row *grown = realloc(out->rows, n * sizeof *grown);
    if (!grown) return NULL;
    out->rows = grown;
    *cap = n;
  }
  gs_nccl_tests_row *row = &out->rows[out->n_rows++];
  memset(row, 0, sizeof *row);
  return row;
}

static gs_nccl_tests_rank *new_rank(gs_nccl_tests_output *out, size_t *cap) {
  if (out->n_ranks == *cap) {
    size_t n = *cap ? 2 * *cap : 8;
    gs_nccl_tests_rank *grown = realloc(out->ranks, n * sizeof *grown);
    if (!grown) return NULL;
    out->ranks = grown;
    *cap = n;
  }
  gs_nccl_tests_rank *rank = &out->ranks[out->n_ranks++];
  memset(rank, 0, sizeof *rank);
  return rank;
}

static int is_name(gs_span s) {
  if (s.n == 0) return 0;
  for (size_t i = 0; i < s.n; i++) {
    char ch = s.p[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          ch == '_'))
      return 0;
  }
  return 1;
}

/* "2.28.3" from NCCL's version code (22803; before 2.9: 2803). */
static void nccl_version_text(long code, char *buf, size_t size) {
  if (code >= 10000)
    snprintf(buf, size, "%ld.%ld.%ld", code / 10000, (code % 10000) / 100, code % 100);
  else if (code > 0)
    snprintf(buf, size, "%ld.%ld.%ld", code / 1000, (code % 1000) / 100, code % 100);
}

/* ---- text table ----------------------------------------------------------- */

typedef struct {
  const char *source;
  size_t line;
  gs_nccl_tests_output *out;
  size_t row_cap, rank_cap;
  int header_seen, footer_seen, units_seen;
  int has_root, per_iter, timestamp;
  size_t last_row_line;
} text_ctx;

/* The columns of one half in the table header, and their units. */
static const char *const half_columns[] = {"algbw", "busbw", "#wrong"};
static const char *const per_iter_columns[] = {"i_min", "i_max", "i_p99", "i_cv%"};
static const char *const half_units[] = {"(us)", "(GB/s)", "(GB/s)"};
static const char *const per_iter_units[] = {"(us)", "(us)", "(us)", "(%)"};

static gs_status expect_column(const text_ctx *c, gs_span *rest, const char *want,
                               const char *what) {
  gs_span tok;
  char got[80];
  if (!gs_span_next_token(rest, &tok))
    return gs_ingest_fail(c->source, c->line, "the table %s ends before '%s'", what, want);
  if (!gs_span_eq(tok, want))
    return gs_ingest_fail(c->source, c->line, "the table %s has '%s' where nccl-tests writes '%s'", what,
                gs_span_copy(tok, got, sizeof got, 1), want);
  return GS_OK;
}

/* "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time ...". */
static gs_status table_header(text_ctx *c, gs_span rest) {
  gs_status st;
  if (c->header_seen)
    return gs_ingest_fail(c->source, c->line, "a second table header: one nccl-tests run per file");
  static const char *const leading[] = {"size", "count", "type", "redop"};
  for (size_t i = 0; i < 4; i++)
    if ((st = expect_column(c, &rest, leading[i], "header")) != GS_OK) return st;
  gs_span tok, look = rest;
  c->has_root = gs_span_next_token(&look, &tok) && gs_span_eq(tok, "root");
  if (c->has_root) rest = look;
  for (int half = 0; half < 2; half++) {
    if (!gs_span_next_token(&rest, &tok))
      return gs_ingest_fail(c->source, c->line, "the table header ends before the %s columns",
                  half ? "in-place" : "out-of-place");
    int cpu = gs_span_eq(tok, "cputime");
    if (!cpu && !gs_span_eq(tok, "time")) {
      char got[80];
      return gs_ingest_fail(c->source, c->line,
                  "the table header has '%s' where nccl-tests writes 'time' or 'cputime'",
                  gs_span_copy(tok, got, sizeof got, 1));
    }
    c->out->cpu_time = cpu;
    for (size_t i = 0; i < 3; i++)
      if ((st = expect_column(c, &rest, half_columns[i], "header")) != GS_OK) {
        if (i == 2 && strstr(gs_last_error(), "'error'"))
          return gs_ingest_fail(c->source, c->line,
                      "an 'error' column: output of nccl-tests before version 2.10, which "
                      "gpuscale does not read (it expects '#wrong')");
        return st;
      }
    if (half == 0) {
      look = rest;
      c->per_iter = gs_span_next_token(&look, &tok) && gs_span_eq(tok, "i_min");
    }
    if (c->per_iter)
      for (size_t i = 0; i < 4; i++)
        if ((st = expect_column(c, &rest, per_iter_columns[i], "header")) != GS_OK) return st;
  }
  c->timestamp = gs_span_next_token(&rest, &tok) && gs_span_eq(tok, "timestamp");
  if (!c->timestamp && gs_span_next_token(&rest, &tok)) {
    char got[80];
    return gs_ingest_fail(c->source, c->line, "the table header has an unknown column '%s'",
                gs_span_copy(tok, got, sizeof got, 1));
  }
  c->header_seen = 1;
  return GS_OK;
}

/* "#  (B)  (elements)  (us)  (GB/s)  (GB/s)  (us) ..." */
static gs_status table_units(text_ctx *c, gs_span rest) {
  gs_status st;
  if (!c->header_seen) return GS_OK;
  if ((st = expect_column(c, &rest, "(B)", "unit row")) != GS_OK ||
      (st = expect_column(c, &rest, "(elements)", "unit row")) != GS_OK)
    return st;
  for (int half = 0; half < 2; half++) {
    for (size_t i = 0; i < 3; i++)
      if ((st = expect_column(c, &rest, half_units[i], "unit row")) != GS_OK) return st;
    if (c->per_iter)
      for (size_t i = 0; i < 4; i++)
        if ((st = expect_column(c, &rest, per_iter_units[i], "unit row")) != GS_OK) return st;
  }
  c->units_seen = 1;
  return GS_OK;
}

/* "#  Rank  0 Group  0 Pid  1234 on  node01 device  0 [0000:18:00] NVIDIA H100". */
static gs_status rank_line(text_ctx *c, gs_span rest) {
  gs_span tok;
  int64_t rank = -1, device = -1;
  gs_span host = {NULL, 0};
  gs_span_next_token(&rest, &tok);  // "Rank"
  if (!gs_span_next_token(&rest, &tok) || !gs_span_to_i64(tok, &rank) || rank < 0 ||
      rank > 1000000)
    return gs_ingest_fail(c->source, c->line, "a device line without a rank number ('#  Rank N ...')");
  while (gs_span_next_token(&rest, &tok)) {
    if (gs_span_eq(tok, "on")) {
      if (!gs_span_next_token(&rest, &host))
        return gs_ingest_fail(c->source, c->line, "a device line without a host after 'on'");
    } else if (gs_span_eq(tok, "device")) {
      if (!gs_span_next_token(&rest, &tok) || !gs_span_to_i64(tok, &device) || device < 0 ||
          device > 1000000)
        return gs_ingest_fail(c->source, c->line, "a device line without a device number after 'device'");
      break;
    }
  }
  if (!host.n || device < 0)
    return gs_ingest_fail(c->source, c->line,
                "a device line without 'on HOST device N' (expected '#  Rank N ... on HOST "
                "device N [bus id] NAME')");
  gs_nccl_tests_rank *r = new_rank(c->out, &c->rank_cap);
  if (!r) return gs_error(GS_ERR_NOMEM, "out of memory reading %s", c->source);
  r->rank = (int)rank;
  r->device = (int)device;
  gs_span_copy(host, r->host, sizeof r->host, 0);
  long close = gs_span_find(rest, ']');
  gs_span name = gs_span_trim(close >= 0 ? gs_span_from(rest, (size_t)close + 1) : rest);
  gs_span_copy(name, r->device_name, sizeof r->device_name, 0);
  return GS_OK;
}

/* Value of "LABEL : VALUE ..." as its first token. */
static gs_span after_colon(gs_span s) {
  long colon = gs_span_find(s, ':');
  gs_span rest = colon >= 0 ? gs_span_from(s, (size_t)colon + 1) : (gs_span){s.p + s.n, 0};
  gs_span tok = {rest.p, 0};
  gs_span_next_token(&rest, &tok);
  return tok;
}

static gs_status int_after(const text_ctx *c, gs_span *rest, const char *label, int *out) {
  gs_span tok;
  int64_t v;
  if (!gs_span_next_token(rest, &tok) || !gs_span_to_i64(tok, &v) || v < 0 || v > 1000000000)
    return gs_ingest_fail(c->source, c->line, "'%s' is not followed by a whole number", label);
  *out = (int)v;
  return GS_OK;
}

/* "# nThread 1 nGpus 8 minBytes 8 maxBytes 128M step: 2(factor) warmup
 * iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0". */
static gs_status settings_line(text_ctx *c, gs_span rest) {
  gs_span tok, prev = {NULL, 0};
  gs_status st = GS_OK;
  while (st == GS_OK && gs_span_next_token(&rest, &tok)) {
    if (gs_span_eq(tok, "nThread"))
      st = int_after(c, &rest, "nThread", &c->out->threads);
    else if (gs_span_eq(tok, "nGpus"))
      st = int_after(c, &rest, "nGpus", &c->out->gpus_per_thread);
    else if (gs_span_eq(tok, "validation:"))
      st = int_after(c, &rest, "validation:", &c->out->validation);
    else if (gs_span_eq(tok, "iters:") && prev.n && gs_span_eq(prev, "warmup"))
      st = int_after(c, &rest, "warmup iters:", &c->out->warmup_iters);
    else if (gs_span_eq(tok, "iters:") && !(prev.n && gs_span_eq(prev, "agg")))
      st = int_after(c, &rest, "iters:", &c->out->iters);
    prev = tok;
  }
  return st;
}

static gs_status comment_line(text_ctx *c, gs_span body) {
  if (gs_span_starts(body, "nccl-tests version ")) {
    gs_span rest = gs_span_from(body, strlen("nccl-tests version ")), tok;
    if (gs_span_next_token(&rest, &tok)) gs_span_copy(tok, c->out->version, sizeof c->out->version, 0);
    // "nccl-library=22803": the NCCL that ran, until a "NCCL version" line says more.
    while (gs_span_next_token(&rest, &tok)) {
      int64_t code = 0;
      if (gs_span_starts(tok, "nccl-library=") &&
          gs_span_to_i64(gs_span_from(tok, strlen("nccl-library=")), &code) && code > 0 &&
          code < 1000000)
        nccl_version_text((long)code, c->out->nccl_version, sizeof c->out->nccl_version);
    }
    return GS_OK;
  }
  if (gs_span_starts(body, "Collective test starting:")) {
    gs_span name = gs_span_trim(gs_span_from(body, strlen("Collective test starting:")));
    gs_span_copy(name, c->out->program, sizeof c->out->program, 0);
    return GS_OK;
  }
  if (gs_span_starts(body, "nThread ")) return settings_line(c, body);
  if (gs_span_starts(body, "Rank ")) return rank_line(c, body);
  if (gs_span_starts(body, "size ")) return table_header(c, body);
  if (gs_span_starts(body, "(B)")) return table_units(c, body);
  if (gs_span_starts(body, "Out of bounds values")) {
    gs_span v = after_colon(body);
    if (!gs_span_to_i64(v, &c->out->out_of_bounds) || c->out->out_of_bounds < 0)
      return gs_ingest_fail(c->source, c->line, "'Out of bounds values' is not followed by a count");
    return GS_OK;
  }
  if (gs_span_starts(body, "Avg bus bandwidth")) {
    gs_span v = after_colon(body);
    if (!gs_span_to_double(v, &c->out->avg_busbw_gbs) || c->out->avg_busbw_gbs < 0)
      return gs_ingest_fail(c->source, c->line, "'Avg bus bandwidth' is not followed by a number of GB/s");
    if (!c->header_seen || c->out->n_rows == 0)
      return gs_ingest_fail(c->source, c->line, "the 'Avg bus bandwidth' footer comes before any table row");
    c->footer_seen = 1;
    return GS_OK;
  }
  return GS_OK;  // other notes ("# Using devices", "# Collective test concluded", ...)
}

static gs_status row_number(const text_ctx *c, gs_span tok, const char *column, const char *what,
                            double *out) {
  if (!gs_span_to_double(tok, out) || *out < 0) {
    char got[80];
    return gs_ingest_fail(c->source, c->line, "column '%s' is '%s'; expected %s", column,
                gs_span_copy(tok, got, sizeof got, 1), what);
  }
  return GS_OK;
}

/* One half of a row: time algbw busbw #wrong [i_min i_max i_p99 i_cv%]. */
static gs_status row_half(const text_ctx *c, gs_span *tokens, gs_nccl_tests_half *h) {
  gs_status st;
  const char *time_name = c->out->cpu_time ? "cputime" : "time";
  if ((st = row_number(c, tokens[0], time_name, "a time in microseconds", &h->time_us)) != GS_OK ||
      (st = row_number(c, tokens[1], "algbw", "a bandwidth in GB/s", &h->algbw_gbs)) != GS_OK ||
      (st = row_number(c, tokens[2], "busbw", "a bandwidth in GB/s", &h->busbw_gbs)) != GS_OK)
    return st;
  double wrong = 0.0;
  if (gs_span_eq(tokens[3], "N/A")) {
    h->wrong = -1;
  } else if (row_number(c, tokens[3], "#wrong", "a count of wrong elements or N/A", &wrong) !=
                 GS_OK ||
             wrong != floor(wrong) || wrong > 9e15) {
    char got[80];
    return gs_ingest_fail(c->source, c->line, "column '#wrong' is '%s'; expected a count of wrong elements "
                "or N/A", gs_span_copy(tokens[3], got, sizeof got, 1));
  } else {
    h->wrong = (int64_t)wrong;
  }
  if (c->per_iter)
    for (size_t i = 0; i < 4; i++) {
      double ignored = 0.0;
      if ((st = row_number(c, tokens[4 + i], per_iter_columns[i], "a number", &ignored)) != GS_OK)
        return st;
    }
  h->present = 1;
  return GS_OK;
}

#define MAX_ROW_TOKENS 32

static gs_status table_row(text_ctx *c, gs_span line) {
  char got[80];
  if (!c->header_seen)
    return gs_ingest_fail(c->source, c->line,
                "unexpected line '%s' before the table header (expected '#' header lines, "
                "then '#  size  count  type  redop  root  time ...')",
                gs_span_copy(line, got, sizeof got, 1));
  if (c->footer_seen)
    return gs_ingest_fail(c->source, c->line, "a table row after the 'Avg bus bandwidth' footer");
  gs_span tokens[MAX_ROW_TOKENS];
  size_t n = 0;
  gs_span rest = line, tok;
  while (gs_span_next_token(&rest, &tok)) {
    if (n == MAX_ROW_TOKENS)
      return gs_ingest_fail(c->source, c->line, "a table row with more than %d columns", MAX_ROW_TOKENS);
    tokens[n++] = tok;
  }
  size_t lead = c->has_root ? 5 : 4;
  size_t half = c->per_iter ? 8 : 4;
  size_t extra = c->timestamp ? 2 : 0;  // "YYYY-MM-DD HH:MM:SS"
  size_t both = lead + 2 * half + extra, in_place_only = lead + half + extra;
  if (n != both && n != in_place_only)
    return gs_ingest_fail(c->source, c->line,
                "a table row with %zu columns; expected %zu (size count type redop%s, then "
                "%s algbw busbw #wrong%s for out-of-place and in-place%s)",
                n, both, c->has_root ? " root" : "", c->out->cpu_time ? "cputime" : "time",
                c->per_iter ? " i_min i_max i_p99 i_cv%" : "", c->timestamp ? ", timestamp" : "");
  gs_nccl_tests_row *row = new_row(c->out, &c->row_cap);
  if (!row) return gs_error(GS_ERR_NOMEM, "out of memory reading %s", c->source);
  row->line = c->line;
  row->root = -1;
  if (!gs_span_to_u64(tokens[0], &row->bytes))
    return gs_ingest_fail(c->source, c->line, "column 'size' is '%s'; expected a byte count",
                gs_span_copy(tokens[0], got, sizeof got, 1));
  if (!gs_span_to_u64(tokens[1], &row->count))
    return gs_ingest_fail(c->source, c->line, "column 'count' is '%s'; expected an element count",
                gs_span_copy(tokens[1], got, sizeof got, 1));
  if (!is_name(tokens[2]) || tokens[2].n >= sizeof row->type)
    return gs_ingest_fail(c->source, c->line, "column 'type' is '%s'; expected a data type such as float",
                gs_span_copy(tokens[2], got, sizeof got, 1));
  if (!is_name(tokens[3]) || tokens[3].n >= sizeof row->redop)
    return gs_ingest_fail(c->source, c->line, "column 'redop' is '%s'; expected an operation such as sum",
                gs_span_copy(tokens[3], got, sizeof got, 1));
  gs_span_copy(tokens[2], row->type, sizeof row->type, 0);
  gs_span_copy(tokens[3], row->redop, sizeof row->redop, 0);
  if (c->has_root && (!gs_span_to_i64(tokens[4], &row->root) || row->root < -1))
    return gs_ingest_fail(c->source, c->line, "column 'root' is '%s'; expected a rank or -1",
                gs_span_copy(tokens[4], got, sizeof got, 1));
  gs_status st = GS_OK;
  if (n == both) {
    st = row_half(c, tokens + lead, &row->out_of_place);
    if (st == GS_OK) st = row_half(c, tokens + lead + half, &row->in_place);
  } else {
    st = row_half(c, tokens + lead, &row->in_place);
  }
  c->last_row_line = c->line;
  return st;
}

static int is_nccl_debug(gs_span line) {
  static const char *const marks[] = {" NCCL INFO ", " NCCL WARN ", " NCCL TRACE "};
  for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
    size_t n = strlen(marks[i]);
    for (size_t k = 0; k + n <= line.n; k++)
      if (memcmp(line.p + k, marks[i], n) == 0) return 1;
  }
  return 0;
}

static gs_status parse_text(const char *data, size_t size, const char *source,
                            gs_nccl_tests_output *out) {
  text_ctx c = {.source = source, .out = out};
  gs_line_cursor lines;
  gs_lines_init(&lines, data, size);
  gs_status st = GS_OK;
  while (st == GS_OK && gs_lines_next(&lines)) {
    c.line = lines.line_no;
    gs_span t = gs_span_trim(lines.line);
    if (t.n == 0) continue;
    if (t.p[0] == '#') {
      st = comment_line(&c, gs_span_trim(gs_span_from(t, 1)));
    } else if (gs_span_starts(t, "NCCL version ")) {
      gs_span rest = gs_span_from(t, strlen("NCCL version ")), tok;
      if (gs_span_next_token(&rest, &tok)) {
        long plus = gs_span_find(tok, '+');
        if (plus >= 0) tok = gs_span_until(tok, (size_t)plus);
        gs_span_copy(tok, out->nccl_version, sizeof out->nccl_version, 0);
      }
    } else if (!is_nccl_debug(t)) {
      st = table_row(&c, t);
    }
  }
  if (st != GS_OK) return st;
  size_t last = lines.line_no;
  if (!c.header_seen)
    return gs_ingest_fail(source, 0, "no table header ('#  size  count  type  redop  root  time ...') in "
                "%zu lines: not nccl-tests output", last);
  if (out->n_rows == 0)
    return gs_ingest_fail(source, 0, "the table has no rows; the file ends at line %zu (truncated, or the "
                "run failed before its first size)", last);
  if (!c.footer_seen)
    return gs_ingest_fail(source, 0, "no '# Avg bus bandwidth' footer after the last row (line %zu); the "
                "file ends at line %zu (truncated, or the run died)", c.last_row_line, last);
  return GS_OK;
}

/* ---- JSON ------------------------------------------------------------------ */

static gs_status json_wrong(const char *source, const char *path, const cJSON *v,
                            const char *expected) {
  return gs_ingest_fail(source, 0, "%s is %s; expected %s", path, gs_json_type_name(v), expected);
}

/* A whole non-negative number (below 2^53). */
static int json_count(const cJSON *v, uint64_t *out) {
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 9007199254740992.0 ||
      v->valuedouble != floor(v->valuedouble))
    return 0;
  *out = (uint64_t)v->valuedouble;
  return 1;
}

static void json_int_member(const cJSON *o, const char *name, int *out) {
  uint64_t v;
  if (json_count(cJSON_GetObjectItemCaseSensitive(o, name), &v) && v <= 1000000000) *out = (int)v;
}

/* A measured number; nccl-tests writes "nan" (a string) for NaN. */
static gs_status json_measure(const char *source, const char *path, const cJSON *v,
                              const char *what, double *out) {
  if (cJSON_IsString(v) && strcmp(v->valuestring, "nan") == 0) {
    *out = NAN;
    return GS_OK;
  }
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0)
    return json_wrong(source, path, v, what);
  *out = v->valuedouble;
  return GS_OK;
}

static gs_status json_half(const char *source, const char *row_path, const cJSON *row,
                           const char *name, const char *per_iter_name, gs_nccl_tests_half *h,
                           int *cpu_time) {
  char path[160];
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(row, name);
  snprintf(path, sizeof path, "%s.%s", row_path, name);
  if (!o || cJSON_IsNull(o)) return GS_OK;
  if (!cJSON_IsObject(o)) return json_wrong(source, path, o, "an object or null");
  const cJSON *time = cJSON_GetObjectItemCaseSensitive(o, "time");
  if (!time) {
    time = cJSON_GetObjectItemCaseSensitive(o, "cpu_time");
    if (time) *cpu_time = 1;
  }
  char p[200];
  gs_status st;
  snprintf(p, sizeof p, "%s.%s", path, *cpu_time ? "cpu_time" : "time");
  if ((st = json_measure(source, p, time, "a time in microseconds", &h->time_us)) != GS_OK)
    return st;
  snprintf(p, sizeof p, "%s.alg_bw", path);
  if ((st = json_measure(source, p, cJSON_GetObjectItemCaseSensitive(o, "alg_bw"),
                         "a bandwidth in GB/s", &h->algbw_gbs)) != GS_OK)
    return st;
  snprintf(p, sizeof p, "%s.bus_bw", path);
  if ((st = json_measure(source, p, cJSON_GetObjectItemCaseSensitive(o, "bus_bw"),
                         "a bandwidth in GB/s", &h->busbw_gbs)) != GS_OK)
    return st;
  const cJSON *wrong = cJSON_GetObjectItemCaseSensitive(o, "nwrong");
  uint64_t w;
  snprintf(p, sizeof p, "%s.nwrong", path);
  if (cJSON_IsNull(wrong))
    h->wrong = -1;
  else if (json_count(wrong, &w))
    h->wrong = (int64_t)w;
  else
    return json_wrong(source, p, wrong, "a count of wrong elements or null");
  h->present = 1;

  const cJSON *per_iter = cJSON_GetObjectItemCaseSensitive(row, per_iter_name);
  const cJSON *times = cJSON_GetObjectItemCaseSensitive(per_iter, "times_us");
  if (!cJSON_IsArray(times)) return GS_OK;
  size_t n = (size_t)cJSON_GetArraySize(times);
  if (n == 0) return GS_OK;
  h->iter_times_us = malloc(n * sizeof *h->iter_times_us);
  if (!h->iter_times_us) return gs_error(GS_ERR_NOMEM, "out of memory reading %s", source);
  size_t i = 0;
  for (const cJSON *t = times->child; t; t = t->next, i++) {
    snprintf(p, sizeof p, "%s.%s.times_us[%zu]", row_path, per_iter_name, i);
    if ((st = json_measure(source, p, t, "a time in microseconds", &h->iter_times_us[i])) != GS_OK)
      return st;
    h->n_iter_times = i + 1;
  }
  return GS_OK;
}

static gs_status json_devices(const char *source, const cJSON *devices, gs_nccl_tests_output *out) {
  size_t cap = 0, i = 0;
  for (const cJSON *d = devices->child; d; d = d->next, i++) {
    char path[96];
    snprintf(path, sizeof path, "config.devices[%zu]", i);
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(d, "hostname");
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(d, "device_info");
    uint64_t rank, device;
    if (!cJSON_IsObject(d)) return json_wrong(source, path, d, "an object");
    if (!json_count(cJSON_GetObjectItemCaseSensitive(d, "rank"), &rank) || rank > 1000000)
      return gs_ingest_fail(source, 0, "%s.rank is not a rank number", path);
    if (!json_count(cJSON_GetObjectItemCaseSensitive(d, "device"), &device) || device > 1000000)
      return gs_ingest_fail(source, 0, "%s.device is not a device number", path);
    if (!cJSON_IsString(host)) return gs_ingest_fail(source, 0, "%s.hostname is not a string", path);
    gs_nccl_tests_rank *r = new_rank(out, &cap);
    if (!r) return gs_error(GS_ERR_NOMEM, "out of memory reading %s", source);
    r->rank = (int)rank;
    r->device = (int)device;
    gs_span_copy((gs_span){host->valuestring, strlen(host->valuestring)}, r->host, sizeof r->host, 0);
    if (cJSON_IsString(info))
      gs_span_copy((gs_span){info->valuestring, strlen(info->valuestring)}, r->device_name,
                   sizeof r->device_name, 0);
  }
  return GS_OK;
}

static gs_status json_rows(const char *source, const cJSON *results, gs_nccl_tests_output *out) {
  size_t cap = 0, i = 0;
  gs_status st = GS_OK;
  for (const cJSON *r = results->child; r && st == GS_OK; r = r->next, i++) {
    char path[64];
    snprintf(path, sizeof path, "results[%zu]", i);
    if (!cJSON_IsObject(r)) return json_wrong(source, path, r, "an object");
    gs_nccl_tests_row *row = new_row(out, &cap);
    if (!row) return gs_error(GS_ERR_NOMEM, "out of memory reading %s", source);
    row->root = -1;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(r, "type");
    const cJSON *redop = cJSON_GetObjectItemCaseSensitive(r, "redop");
    const cJSON *root = cJSON_GetObjectItemCaseSensitive(r, "root");
    if (!json_count(cJSON_GetObjectItemCaseSensitive(r, "size"), &row->bytes))
      return gs_ingest_fail(source, 0, "%s.size is not a byte count", path);
    if (!json_count(cJSON_GetObjectItemCaseSensitive(r, "count"), &row->count))
      return gs_ingest_fail(source, 0, "%s.count is not an element count", path);
    if (!cJSON_IsString(type) || !is_name((gs_span){type->valuestring, strlen(type->valuestring)}) ||
        strlen(type->valuestring) >= sizeof row->type)
      return gs_ingest_fail(source, 0, "%s.type is not a data type name such as \"float\"", path);
    if (!cJSON_IsString(redop) ||
        !is_name((gs_span){redop->valuestring, strlen(redop->valuestring)}) ||
        strlen(redop->valuestring) >= sizeof row->redop)
      return gs_ingest_fail(source, 0, "%s.redop is not an operation name such as \"sum\"", path);
    snprintf(row->type, sizeof row->type, "%s", type->valuestring);
    snprintf(row->redop, sizeof row->redop, "%s", redop->valuestring);
    // nccl-tests writes the root as the padded text of the table ("    -1").
    gs_span root_text = cJSON_IsString(root)
                            ? gs_span_trim((gs_span){root->valuestring, strlen(root->valuestring)})
                            : (gs_span){NULL, 0};
    if (cJSON_IsNumber(root) && root->valuedouble >= -1 && root->valuedouble <= 1e6 &&
        root->valuedouble == floor(root->valuedouble))
      row->root = (int64_t)root->valuedouble;
    else if (!root_text.n || !gs_span_to_i64(root_text, &row->root) || row->root < -1)
      return gs_ingest_fail(source, 0, "%s.root is not a rank or -1", path);
    st = json_half(source, path, r, "out_of_place", "out_of_place_per_iter", &row->out_of_place,
                   &out->cpu_time);
    if (st == GS_OK)
      st = json_half(source, path, r, "in_place", "in_place_per_iter", &row->in_place,
                     &out->cpu_time);
    if (st == GS_OK && !row->out_of_place.present && !row->in_place.present)
      st = gs_ingest_fail(source, 0, "%s has neither an out_of_place nor an in_place result", path);
  }
  return st;
}

static gs_status parse_json(const char *data, size_t size, const char *source,
                            gs_nccl_tests_output *out) {
  const char *end = NULL;
  cJSON *doc = cJSON_ParseWithLengthOpts(data, size, &end, 0);
  if (!doc) {
    size_t off = (end && end >= data && end <= data + size) ? (size_t)(end - data) : size;
    size_t line, col;
    gs_text_position(data, size, off, &line, &col);
    size_t last = size;
    while (last > 0 && (data[last - 1] == ' ' || data[last - 1] == '\t' ||
                        data[last - 1] == '\r' || data[last - 1] == '\n'))
      last--;
    return gs_ingest_fail(source, line, "invalid JSON at column %zu%s", col,
                          (last == 0 || data[last - 1] != '}')
                              ? ": the document does not end with '}' (truncated, or the run "
                                "died?)"
                              : "");
  }
  gs_status st = GS_OK;
  size_t after = end ? (size_t)(end - data) : size;
  while (after < size && (data[after] == ' ' || data[after] == '\t' || data[after] == '\r' ||
                          data[after] == '\n'))
    after++;
  if (after < size) {
    size_t line, col;
    gs_text_position(data, size, after, &line, &col);
    st = gs_ingest_fail(source, line, "text at column %zu after the JSON document", col);
  }
  const cJSON *version = cJSON_GetObjectItemCaseSensitive(doc, "version");
  const cJSON *results = cJSON_GetObjectItemCaseSensitive(doc, "results");
  const cJSON *config = cJSON_GetObjectItemCaseSensitive(doc, "config");
  if (st == GS_OK && !cJSON_IsObject(doc))
    st = gs_ingest_fail(source, 0, "the JSON document is %s, not an object: not nccl-tests output",
              gs_json_type_name(doc));
  else if (st == GS_OK && !cJSON_IsNumber(version))
    st = gs_ingest_fail(source, 0, "no numeric \"version\": not nccl-tests JSON output (--output_file)");
  // Version 3 (nccl-tests 2.19.6) only adds per_iter_skip and
  // skipped_iterations, which are not read.
  else if (st == GS_OK && version->valuedouble != 2 && version->valuedouble != 3)
    st = gs_ingest_fail(source, 0, "nccl-tests JSON version %g; gpuscale reads versions 2 and 3",
                        version->valuedouble);
  else if (st == GS_OK && !cJSON_IsArray(results))
    st = json_wrong(source, "results", results, "an array (truncated, or the run died?)");
  else if (st == GS_OK && cJSON_GetArraySize(results) == 0)
    st = gs_ingest_fail(source, 0, "results is empty (the run failed before its first size?)");
  if (st == GS_OK) {
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(doc, "args");
    const cJSON *arg0 = cJSON_IsArray(args) ? args->child : NULL;
    if (cJSON_IsString(arg0)) {
      const char *base = strrchr(arg0->valuestring, '/');
      base = base ? base + 1 : arg0->valuestring;
      gs_span_copy((gs_span){base, strlen(base)}, out->program, sizeof out->program, 0);
    }
    const cJSON *nv = cJSON_GetObjectItemCaseSensitive(doc, "nccl_version");
    uint64_t code;
    if (json_count(nv, &code) && code < 1000000)
      nccl_version_text((long)code, out->nccl_version, sizeof out->nccl_version);
    if (cJSON_IsObject(config)) {
      json_int_member(config, "nthreads", &out->threads);
      json_int_member(config, "ngpus", &out->gpus_per_thread);
      json_int_member(config, "iterations", &out->iters);
      json_int_member(config, "warmup_iters", &out->warmup_iters);
      json_int_member(config, "validation", &out->validation);
      const cJSON *devices = cJSON_GetObjectItemCaseSensitive(config, "devices");
      if (cJSON_IsArray(devices)) {
        out->lists_processes = 1;
        st = json_devices(source, devices, out);
      }
    } else if (config) {
      st = json_wrong(source, "config", config, "an object");
    }
  }
  if (st == GS_OK) st = json_rows(source, results, out);
  if (st == GS_OK) {
    const cJSON *avg = cJSON_GetObjectItemCaseSensitive(doc, "average_bus_bandwidth");
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(avg, "bandwidth");
    if (cJSON_IsNumber(bw) && isfinite(bw->valuedouble)) out->avg_busbw_gbs = bw->valuedouble;
    uint64_t oob;
    const cJSON *bounds = cJSON_GetObjectItemCaseSensitive(doc, "out_of_bounds");
    if (json_count(cJSON_GetObjectItemCaseSensitive(bounds, "count"), &oob) && oob < 1000000000)
      out->out_of_bounds = (int64_t)oob;
  }
  cJSON_Delete(doc);
  return st;
}

gs_status gs_nccl_tests_parse(const char *data, size_t size, const char *source,
                              gs_nccl_tests_output *out) {
  size_t i = 0;
  while (i < size && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n')) i++;
  int json = i < size && data[i] == '{';
  output_init(out, json ? "json" : "text");
  gs_status st = json ? parse_json(data, size, source, out) : parse_text(data, size, source, out);
  if (st != GS_OK) gs_nccl_tests_free(out);
  return st;
}
