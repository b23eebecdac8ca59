/* Reading a command's output for `gpuscale exec`: units, --metric
 * patterns, the protocol lines and the tail of stderr (exec_output.h). */
#include "measure/exec_output.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/check.h"

/* Bytes read from a log file at a time. */
#define GS_EXEC_READ_CHUNK 65536

static int ends_with(const char *text, size_t n, const char *suffix) {
  size_t k = strlen(suffix);
  return n > k && strcasecmp(text + n - k, suffix) == 0;
}

gs_exec_unit_kind gs_exec_unit_classify(const char *unit, double *seconds_per_unit, char *item,
                                        size_t item_size) {
  static const struct {
    const char *name;
    double seconds;
  } times[] = {{"s", 1.0},       {"sec", 1.0},      {"secs", 1.0},     {"second", 1.0},
               {"seconds", 1.0}, {"ms", 1e-3},      {"msec", 1e-3},    {"millisecond", 1e-3},
               {"milliseconds", 1e-3},               {"us", 1e-6},      {"usec", 1e-6},
               {"\xc2\xb5s", 1e-6},                  {"microsecond", 1e-6},
               {"microseconds", 1e-6},               {"ns", 1e-9},      {"nanosecond", 1e-9},
               {"nanoseconds", 1e-9},                {"min", 60.0},     {"minute", 60.0},
               {"minutes", 60.0}, {"h", 3600.0},    {"hour", 3600.0},  {"hours", 3600.0}};
  for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
    if (strcmp(unit, times[i].name) == 0) {
      if (seconds_per_unit) *seconds_per_unit = times[i].seconds;
      return GS_EXEC_UNIT_TIME;
    }
  static const char *const per_second[] = {"/s", "/sec", "/second"};
  const size_t n = strlen(unit);
  for (size_t i = 0; i < sizeof per_second / sizeof per_second[0]; i++) {
    if (!ends_with(unit, n, per_second[i])) continue;
    const size_t len = n - strlen(per_second[i]);
    if (item && item_size > 0) snprintf(item, item_size, "%.*s", (int)len, unit);
    return GS_EXEC_UNIT_RATE;
  }
  return GS_EXEC_UNIT_OTHER;
}

static int name_char(char c) {
  return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.' || c == '/';
}

int gs_exec_item_unit_valid(const char *name) {
  const size_t n = strlen(name);
  if (n == 0 || n > GS_EXEC_ITEM_UNIT_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if (name[i] == '/' || !name_char(name[i])) return 0;
  return 1;
}

gs_status gs_exec_pattern_parse(const char *text, gs_exec_pattern *p, int *is_pattern) {
  memset(p, 0, sizeof *p);
  *is_pattern = 0;
  const char *eq = strchr(text, '=');
  const size_t len = eq ? (size_t)(eq - text) : strlen(text);
  if (len == 0 || len >= sizeof p->name)
    return gs_error(GS_ERR_USAGE, "option --metric '%s': give NAME or NAME=REGEX (NAME of 1 to %zu "
                    "characters)", text, sizeof p->name - 1);
  for (size_t i = 0; i < len; i++)
    if (!name_char(text[i]))
      return gs_error(GS_ERR_USAGE, "option --metric '%s': the name may hold letters, digits and "
                      "_ - . / only", text);
  memcpy(p->name, text, len);
  if (!eq) return GS_OK;
  if (eq[1] == '\0')
    return gs_error(GS_ERR_USAGE, "option --metric '%s': empty REGEX", text);
  int rc = regcomp(&p->regex, eq + 1, REG_EXTENDED);
  if (rc != 0) {
    char why[256];
    regerror(rc, &p->regex, why, sizeof why);
    return gs_error(GS_ERR_USAGE, "option --metric '%s': bad regular expression: %s", text, why);
  }
  if (p->regex.re_nsub < 1) {
    regfree(&p->regex);
    return gs_error(GS_ERR_USAGE, "option --metric '%s': the REGEX needs a group, e.g. "
                    "'loss=loss ([0-9.]+)': its first group is the value", text);
  }
  *is_pattern = 1;
  return GS_OK;
}

/* The metric `name`, added when new (NULL when the table is full). */
static gs_exec_metric *metric_slot(gs_exec_scan *scan, const char *name) {
  for (size_t i = 0; i < scan->n_metrics; i++)
    if (strcmp(scan->metrics[i].name, name) == 0) return &scan->metrics[i];
  if (scan->n_metrics == GS_EXEC_METRICS_MAX) return NULL;
  gs_exec_metric *m = &scan->metrics[scan->n_metrics++];
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "%s", name);
  m->higher_is_better = -1;
  return m;
}

const gs_exec_metric *gs_exec_scan_metric(const gs_exec_scan *scan, const char *name) {
  for (size_t i = 0; i < scan->n_metrics; i++)
    if (strcmp(scan->metrics[i].name, name) == 0) return &scan->metrics[i];
  return NULL;
}

/* Records the first problem of the output; later ones add nothing. */
static void scan_fail(gs_exec_scan *scan, const char *stream, uint64_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void scan_fail(gs_exec_scan *scan, const char *stream, uint64_t line, const char *fmt, ...) {
  if (scan->error[0]) return;
  char what[GS_TEXT_LONG];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(scan->error, sizeof scan->error, "%s line %llu: %s", stream, (unsigned long long)line,
           what);
}

/* One value of metric `m`: of a step when `has_step`, of rank `rank` when
 * it is >= 0 (then step or not, in the order printed). */
static gs_status add_value(gs_exec_scan *scan, gs_exec_metric *m, double value, int has_step,
                           int rank) {
  if (m->count == 0 || value < m->min) m->min = value;
  if (m->count == 0 || value > m->max) m->max = value;
  m->count++;
  m->sum += value;
  m->last = value;
  if (strcmp(m->name, scan->figure) != 0) return GS_OK;
  if (rank >= 0) {
    if (!m->ranks && !(m->ranks = calloc(GS_MAX_RANKS, sizeof *m->ranks)))
      return gs_error(GS_ERR_NOMEM, "cannot allocate the values of %s per rank", m->name);
    if (rank + 1 > m->ranks_seen) m->ranks_seen = rank + 1;
    return gs_dvec_push(&m->ranks[rank], value);
  }
  if (has_step) return gs_dvec_push(&m->steps, value);
  m->has_run_value = 1;
  m->run_value = value;
  return GS_OK;
}

/* Whether a protocol line's "items" or "item_unit" is bad (docs/exec.md):
 * 1 with why into `why`, 0 when fine or absent. */
static int items_bad(const cJSON *items, const cJSON *item_unit, const char *metric,
                     const char *unit, char *why, size_t size) {
  why[0] = '\0';
  if (item_unit && !items)
    snprintf(why, size, "protocol: \"item_unit\" of %s needs \"items\"", metric);
  else if (item_unit &&
           (!cJSON_IsString(item_unit) || !gs_exec_item_unit_valid(item_unit->valuestring)))
    snprintf(why, size, "protocol: \"item_unit\" of %s must be a name of 1 to %d letters, "
             "digits, '_', '-' or '.' (e.g. \"samples\")", metric, GS_EXEC_ITEM_UNIT_MAX);
  else if (items && (!cJSON_IsNumber(items) || !(items->valuedouble >= 1.0) ||
                     items->valuedouble > GS_EXEC_ITEMS_MAX ||
                     items->valuedouble != floor(items->valuedouble)))
    snprintf(why, size, "protocol: \"items\" of %s must be a whole number from 1 to 2^53 (the "
             "items of one step of the whole job)", metric);
  else if (items && gs_exec_unit_classify(unit[0] ? unit : "s", NULL, NULL, 0) != GS_EXEC_UNIT_TIME)
    snprintf(why, size, "protocol: \"items\" of %s applies to a time (s, ms, ...), not to unit "
             "'%s' (a rate names its items in its unit)", metric, unit);
  return why[0] != '\0';
}

/* A protocol line: a JSON object with "metric" and "value" (docs/exec.md). */
static gs_status protocol_line(gs_exec_scan *scan, const char *line, size_t len, const char *stream,
                               uint64_t number) {
  size_t at = 0;
  while (at < len && (line[at] == ' ' || line[at] == '\t')) at++;
  if (at == len || line[at] != '{' || !strstr(line + at, "\"metric\"")) return GS_OK;
  cJSON *o = cJSON_ParseWithLength(line + at, len - at);
  // Python's json.dumps writes NaN and Infinity, which are no JSON numbers:
  // such a line is a figure that is not finite, not some other output.
  if (!o && strstr(line + at, "\"value\"") &&
      (strstr(line + at, "NaN") || strstr(line + at, "Infinity"))) {
    scan->protocol_lines++;
    scan_fail(scan, stream, number, "protocol: \"value\" is not a finite number (NaN or "
              "Infinity)");
    return GS_OK;
  }
  const cJSON *metric = cJSON_GetObjectItemCaseSensitive(o, "metric");
  const cJSON *value = cJSON_GetObjectItemCaseSensitive(o, "value");
  if (!cJSON_IsObject(o) || !metric || !value) {
    cJSON_Delete(o);
    return GS_OK;  // some other JSON the program prints
  }
  scan->protocol_lines++;
  const cJSON *unit = cJSON_GetObjectItemCaseSensitive(o, "unit");
  const cJSON *step = cJSON_GetObjectItemCaseSensitive(o, "step");
  const cJSON *hib = cJSON_GetObjectItemCaseSensitive(o, "higher_is_better");
  const cJSON *rank = cJSON_GetObjectItemCaseSensitive(o, "rank");
  const cJSON *items = cJSON_GetObjectItemCaseSensitive(o, "items");
  const cJSON *item_unit = cJSON_GetObjectItemCaseSensitive(o, "item_unit");
  char items_why[GS_TEXT_LONG] = "";
  gs_status status = GS_OK;
  if (!cJSON_IsString(metric) || metric->valuestring[0] == '\0' ||
      strlen(metric->valuestring) >= GS_TEXT_SHORT)
    scan_fail(scan, stream, number, "protocol: \"metric\" must be a name of 1 to 63 characters");
  else if (!cJSON_IsNumber(value) || !isfinite(value->valuedouble))
    scan_fail(scan, stream, number, "protocol: \"value\" of %s is not a finite number",
              metric->valuestring);
  else if (unit && (!cJSON_IsString(unit) || strlen(unit->valuestring) >= GS_TEXT_SHORT))
    scan_fail(scan, stream, number, "protocol: \"unit\" of %s must be a short string",
              metric->valuestring);
  else if (step && (!cJSON_IsNumber(step) || step->valuedouble < 0 ||
                    step->valuedouble != floor(step->valuedouble)))
    scan_fail(scan, stream, number, "protocol: \"step\" of %s must be a whole number >= 0",
              metric->valuestring);
  else if (rank && (!cJSON_IsNumber(rank) || rank->valuedouble < 0 ||
                    rank->valuedouble >= GS_MAX_RANKS ||
                    rank->valuedouble != floor(rank->valuedouble)))
    scan_fail(scan, stream, number, "protocol: \"rank\" of %s must be a whole number from 0 to %d",
              metric->valuestring, GS_MAX_RANKS - 1);
  else if (hib && !cJSON_IsBool(hib))
    scan_fail(scan, stream, number, "protocol: \"higher_is_better\" of %s must be true or false",
              metric->valuestring);
  else if (items_bad(items, item_unit, metric->valuestring, unit ? unit->valuestring : "",
                     items_why, sizeof items_why))
    scan_fail(scan, stream, number, "%s", items_why);
  else {
    if (scan->figure[0] == '\0') {
      snprintf(scan->figure, sizeof scan->figure, "%s", metric->valuestring);
      scan->figure_auto = 1;
    }
    gs_exec_metric *m = metric_slot(scan, metric->valuestring);
    const char *u = unit ? unit->valuestring : "";
    const int h = hib ? cJSON_IsTrue(hib) : -1;
    const double n_items = items ? items->valuedouble : 0.0;
    const char *iu = item_unit ? item_unit->valuestring : "";
    if (m && m->count == 0) {
      snprintf(m->unit, sizeof m->unit, "%s", u);
      m->higher_is_better = h;
      m->items = n_items;
      snprintf(m->item_unit, sizeof m->item_unit, "%s", iu);
    }
    if (m && (strcmp(m->unit, u) != 0 || m->higher_is_better != h))
      scan_fail(scan, stream, number, "protocol: %s changed its \"unit\" or \"higher_is_better\"",
                m->name);
    else if (m && (m->items != n_items || strcmp(m->item_unit, iu) != 0))
      scan_fail(scan, stream, number, "protocol: %s changed its \"items\" or \"item_unit\" "
                "(every line of a metric, of every rank and step, gives the same)", m->name);
    else if (m)
      status = add_value(scan, m, value->valuedouble, step != NULL,
                         rank ? (int)rank->valuedouble : -1);
  }
  cJSON_Delete(o);
  return status;
}

/* Every --metric pattern against one line (NUL-terminated). */
static gs_status pattern_line(gs_exec_scan *scan, const char *line, const char *stream,
                              uint64_t number) {
  for (size_t i = 0; i < scan->n_patterns; i++) {
    const gs_exec_pattern *p = &scan->patterns[i];
    regmatch_t match[2];
    if (regexec(&p->regex, line, 2, match, 0) != 0 || match[1].rm_so < 0) continue;
    char text[64];
    const int n = (int)(match[1].rm_eo - match[1].rm_so);
    snprintf(text, sizeof text, "%.*s", n, line + match[1].rm_so);
    char *end = NULL;
    errno = 0;
    const double value = strtod(text, &end);
    if (n == 0 || n >= (int)sizeof text || *end != '\0' || errno == ERANGE || !isfinite(value)) {
      char what[GS_TEXT_LONG];
      snprintf(what, sizeof what, "%s: '%.*s' is not a number", p->name, n > 40 ? 40 : n,
               line + match[1].rm_so);
      scan_fail(scan, stream, number, "%s", what);
      continue;
    }
    gs_exec_metric *m = metric_slot(scan, p->name);
    if (!m) continue;
    m->from_pattern = 1;
    // Every match is one value of the run, in the order printed.
    GS_TRY(add_value(scan, m, value, 1, -1));
  }
  return GS_OK;
}

static gs_status scan_line(gs_exec_scan *scan, char *line, size_t len, const char *stream,
                           uint64_t number) {
  if (len > 0 && line[len - 1] == '\r') line[--len] = '\0';
  GS_TRY(protocol_line(scan, line, len, stream, number));
  return pattern_line(scan, line, stream, number);
}

gs_status gs_exec_scan_fd(gs_exec_scan *scan, int fd, const char *stream) {
  if (lseek(fd, 0, SEEK_SET) < 0)
    return gs_error(GS_ERR_IO, "cannot read the command's %s: %s", stream, strerror(errno));
  char *chunk = malloc(GS_EXEC_READ_CHUNK);
  char *line = malloc(GS_EXEC_LINE_MAX + 1);
  if (!chunk || !line) {
    free(chunk);
    free(line);
    return gs_error(GS_ERR_NOMEM, "cannot allocate the output reader");
  }
  gs_status status = GS_OK;
  size_t len = 0;
  int skipping = 0;  // the rest of a line longer than GS_EXEC_LINE_MAX
  uint64_t number = 0;
  for (;;) {
    ssize_t got = read(fd, chunk, GS_EXEC_READ_CHUNK);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      status = gs_error(GS_ERR_IO, "cannot read the command's %s: %s", stream, strerror(errno));
      break;
    }
    if (got == 0) break;
    for (const char *at = chunk, *end = chunk + got; at < end && status == GS_OK;) {
      const char *nl = memchr(at, '\n', (size_t)(end - at));
      const size_t n = (size_t)((nl ? nl : end) - at);
      if (!skipping) {
        const size_t room = GS_EXEC_LINE_MAX - len;
        memcpy(line + len, at, n < room ? n : room);
        len += n < room ? n : room;
        skipping = n > room;
      }
      at += n;
      if (!nl) break;
      at++;
      line[len] = '\0';
      status = scan_line(scan, line, len, stream, ++number);
      len = 0;
      skipping = 0;
    }
    if (status != GS_OK) break;
  }
  if (status == GS_OK && len > 0) {
    line[len] = '\0';
    status = scan_line(scan, line, len, stream, ++number);
  }
  scan->lines += number;
  free(chunk);
  free(line);
  return status;
}

void gs_exec_scan_free(gs_exec_scan *scan) {
  for (size_t i = 0; i < scan->n_metrics; i++) {
    gs_exec_metric *m = &scan->metrics[i];
    gs_dvec_free(&m->steps);
    for (int k = 0; m->ranks && k < GS_MAX_RANKS; k++) gs_dvec_free(&m->ranks[k]);
    free(m->ranks);
    m->ranks = NULL;
  }
  scan->n_metrics = 0;
}

void gs_exec_tail(int fd, int max_lines, char *out, size_t size) {
  out[0] = '\0';
  if (size < 2) return;
  off_t end = lseek(fd, 0, SEEK_END);
  if (end <= 0) return;
  off_t from = end > (off_t)(size - 1) ? end - (off_t)(size - 1) : 0;
  ssize_t got = pread(fd, out, (size_t)(end - from), from);
  if (got <= 0) return;
  out[got] = '\0';
  // Drop a trailing newline, then keep the last max_lines lines.
  size_t n = (size_t)got;
  while (n > 0 && out[n - 1] == '\n') out[--n] = '\0';
  int lines = 0;
  size_t start = 0;
  for (size_t i = n; i > 0; i--)
    if (out[i - 1] == '\n' && ++lines == max_lines) {
      start = i;
      break;
    }
  // A cut first line (the window began inside it) is left out.
  if (start == 0 && from > 0) {
    const char *nl = memchr(out, '\n', n);
    start = nl ? (size_t)(nl - out) + 1 : 0;
  }
  memmove(out, out + start, n - start + 1);
}
