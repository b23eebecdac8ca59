/* Parsers of MLPerf LoadGen's summary and detail logs (see mlperf.h; the
 * mapping of every line is in docs/ingest.md). */
#include "ingest/mlperf.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/check.h"
#include "core/result.h"
#include "ingest/consistency.h"
#include "ingest/text.h"

static const struct {
  gs_mlperf_scenario scenario;
  const char *loadgen; /* as LoadGen writes it */
  const char *name;    /* as gpuscale writes it (measurement "scenario") */
} scenarios[] = {
    {GS_MLPERF_SINGLE_STREAM, "SingleStream", "single-stream"},
    {GS_MLPERF_MULTI_STREAM, "MultiStream", "multi-stream"},
    {GS_MLPERF_SERVER, "Server", "server"},
    {GS_MLPERF_OFFLINE, "Offline", "offline"},
};
#define N_SCENARIOS (sizeof scenarios / sizeof scenarios[0])

static const char *const test_modes[] = {"PerformanceOnly", "AccuracyOnly", "SubmissionRun",
                                         "FindPeakPerformance", NULL};

const char *gs_mlperf_scenario_loadgen_name(gs_mlperf_scenario s) {
  for (size_t i = 0; i < N_SCENARIOS; i++)
    if (scenarios[i].scenario == s) return scenarios[i].loadgen;
  return "unknown";
}

const char *gs_mlperf_scenario_name(gs_mlperf_scenario s) {
  for (size_t i = 0; i < N_SCENARIOS; i++)
    if (scenarios[i].scenario == s) return scenarios[i].name;
  return "unknown";
}

static void latency_init(gs_mlperf_latency *l) {
  l->min_ns = l->max_ns = l->mean_ns = NAN;
  l->n_percentiles = 0;
}

void gs_mlperf_log_init(gs_mlperf_log *log) {
  memset(log, 0, sizeof *log);
  log->scenario = GS_MLPERF_SCENARIO_UNKNOWN;
  log->valid = log->min_duration_met = log->min_queries_met = -1;
  log->perf_constraints_met = log->early_stopping_met = -1;
  log->samples_per_second = log->completed_samples_per_second = NAN;
  log->scheduled_samples_per_second = NAN;
  log->qps_with_loadgen_overhead = log->qps_without_loadgen_overhead = NAN;
  log->tokens_per_second = log->completed_tokens_per_second = NAN;
  log->target_percentile = log->target_latency_ns = NAN;
  log->query_count = -1;
  latency_init(&log->latency);
  latency_init(&log->first_token);
  latency_init(&log->time_per_output_token);
}

double gs_mlperf_throughput(const gs_mlperf_log *log) {
  switch (log->scenario) {
    case GS_MLPERF_OFFLINE: return log->samples_per_second;
    case GS_MLPERF_SERVER:
      return isfinite(log->completed_samples_per_second) ? log->completed_samples_per_second
                                                         : log->scheduled_samples_per_second;
    case GS_MLPERF_SINGLE_STREAM: return log->qps_with_loadgen_overhead;
    case GS_MLPERF_MULTI_STREAM:
    case GS_MLPERF_SCENARIO_UNKNOWN: break;
  }
  return NAN;
}

static gs_mlperf_scenario scenario_from(gs_span s) {
  for (size_t i = 0; i < N_SCENARIOS; i++)
    if (gs_span_eq(s, scenarios[i].loadgen)) return scenarios[i].scenario;
  return GS_MLPERF_SCENARIO_UNKNOWN;
}

static int mode_known(gs_span s) {
  for (size_t i = 0; test_modes[i]; i++)
    if (gs_span_eq(s, test_modes[i])) return 1;
  return 0;
}

/* Adds or replaces one percentile of a distribution. */
static void put_percentile(gs_mlperf_latency *l, double percentile, double ns, size_t line) {
  for (size_t i = 0; i < l->n_percentiles; i++)
    if (l->percentile[i] == percentile) {
      l->value_ns[i] = ns;
      l->value_line[i] = line;
      return;
    }
  if (l->n_percentiles < GS_MLPERF_MAX_PERCENTILES) {
    l->percentile[l->n_percentiles] = percentile;
    l->value_line[l->n_percentiles] = line;
    l->value_ns[l->n_percentiles++] = ns;
  }
}

/* Notes the line of `field` when it is the min, max or mean of `l`. */
static void note_line(gs_mlperf_latency *l, const double *field, size_t line) {
  if (field == &l->min_ns) l->min_line = line;
  if (field == &l->max_ns) l->max_line = line;
  if (field == &l->mean_ns) l->mean_line = line;
}

static int percentile_from(gs_span s, double *out) {
  double p = 0.0;
  if (!gs_span_to_double(s, &p) || !(p > 0.0 && p < 100.0)) return 0;
  *out = p;
  return 1;
}

/* ---- summary ------------------------------------------------------------ */

typedef enum { SECTION_NONE, SECTION_RESULTS, SECTION_STATS, SECTION_PARAMS } summary_section;

typedef struct {
  const char *source;
  size_t line;
  gs_mlperf_log *log;
} summary_ctx;

static gs_status bad_value(const summary_ctx *c, gs_span key, gs_span value, const char *expected) {
  char k[80], v[80];
  return gs_ingest_fail(c->source, c->line, "'%s' has the value '%s'; expected %s",
              gs_span_copy(key, k, sizeof k, 1), gs_span_copy(value, v, sizeof v, 1), expected);
}

static gs_status number_value(const summary_ctx *c, gs_span key, gs_span value, double *out) {
  double v = 0.0;
  if (!gs_span_to_double(value, &v) || v < 0)
    return bad_value(c, key, value, "a non-negative number");
  *out = v;
  return GS_OK;
}

static gs_status yes_no_value(const summary_ctx *c, gs_span key, gs_span value, int *out) {
  if (gs_span_eq_nocase(value, "yes"))
    *out = 1;
  else if (gs_span_eq_nocase(value, "no"))
    *out = 0;
  else if (!gs_span_eq(value, "Skipped"))
    return bad_value(c, key, value, "Yes, NO or Skipped");
  return GS_OK;
}

/* Copies a string member, rejecting a second, different value. */
static gs_status text_value(const summary_ctx *c, gs_span key, gs_span value, char *dst,
                            size_t size) {
  char v[GS_MLPERF_TEXT];
  gs_span_copy(value, v, sizeof v < size ? sizeof v : size, 0);
  if (dst[0] && strcmp(dst, v) != 0) {
    char k[80];
    return gs_ingest_fail(c->source, c->line, "'%s' given twice, as '%s' and as '%s'",
                gs_span_copy(key, k, sizeof k, 1), dst, v);
  }
  snprintf(dst, size, "%s", v);
  return GS_OK;
}

/* The statistic a latency line names: which distribution, and either a
 * percentile or min/max/mean. Returns 0 when the body is not one of them. */
typedef enum { STAT_MIN, STAT_MAX, STAT_MEAN, STAT_PERCENTILE, STAT_TARGET } stat_kind;

static int latency_stat(gs_span body, gs_mlperf_log *log, gs_mlperf_latency **dist,
                        stat_kind *kind, double *percentile) {
  static const struct {
    const char *min, *max, *mean, *pct_suffix, *target_suffix;
    size_t offset;
  } names[] = {
      {"Min latency", "Max latency", "Mean latency", " percentile latency", "th percentile latency",
       offsetof(gs_mlperf_log, latency)},
      {"Min First Token latency", "Max First Token latency", "Mean First Token latency",
       " percentile first token latency", "th first token percentile latency",
       offsetof(gs_mlperf_log, first_token)},
      {"Min Time to Output Token", "Max Time to Output Token", "Mean Time to Output Token",
       " percentile time to output token", NULL, offsetof(gs_mlperf_log, time_per_output_token)},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    *dist = (gs_mlperf_latency *)((char *)log + names[i].offset);
    if (gs_span_eq(body, names[i].min)) {
      *kind = STAT_MIN;
      return 1;
    }
    if (gs_span_eq(body, names[i].max)) {
      *kind = STAT_MAX;
      return 1;
    }
    if (gs_span_eq(body, names[i].mean)) {
      *kind = STAT_MEAN;
      return 1;
    }
    if (names[i].target_suffix && gs_span_ends(body, names[i].target_suffix)) {
      gs_span p = gs_span_until(body, body.n - strlen(names[i].target_suffix));
      if (!percentile_from(p, percentile)) return 0;
      *kind = STAT_TARGET;
      return 1;
    }
    if (gs_span_ends(body, names[i].pct_suffix)) {
      gs_span p = gs_span_until(body, body.n - strlen(names[i].pct_suffix));
      if (!percentile_from(p, percentile)) return 0;
      *kind = STAT_PERCENTILE;
      return 1;
    }
  }
  return 0;
}

/* "Min latency (ns) : 123" and its relatives. Returns 1 when handled (with
 * *st set), 0 when the key is no latency statistic. */
static int latency_line(const summary_ctx *c, gs_span key, gs_span value, gs_status *st) {
  *st = GS_OK;
  if (!gs_span_ends(key, ")")) return 0;
  long open = -1;
  for (size_t i = key.n; i-- > 0;)
    if (key.p[i] == '(') {
      open = (long)i;
      break;
    }
  if (open < 0) return 0;
  gs_span body = gs_span_trim(gs_span_until(key, (size_t)open));
  gs_span unit = gs_span_until(gs_span_from(key, (size_t)open + 1), key.n - (size_t)open - 2);
  gs_mlperf_latency *dist = NULL;
  stat_kind kind;
  double percentile = NAN;
  if (!latency_stat(body, c->log, &dist, &kind, &percentile)) return 0;
  if (!gs_span_eq(unit, "ns")) {
    char k[80], u[40];
    *st = gs_ingest_fail(c->source, c->line,
               "'%s' is in '%s'; LoadGen writes latencies in nanoseconds, '(ns)'",
               gs_span_copy(key, k, sizeof k, 1), gs_span_copy(unit, u, sizeof u, 1));
    return 1;
  }
  double v = 0;
  if ((*st = number_value(c, key, value, &v)) != GS_OK) return 1;
  switch (kind) {
    case STAT_MIN: dist->min_ns = v, dist->min_line = c->line; break;
    case STAT_MAX: dist->max_ns = v, dist->max_line = c->line; break;
    case STAT_MEAN: dist->mean_ns = v, dist->mean_line = c->line; break;
    case STAT_PERCENTILE: put_percentile(dist, percentile, v, c->line); break;
    case STAT_TARGET:
      if (dist == &c->log->latency) {
        c->log->target_percentile = percentile;
        c->log->target_latency_ns = v;
      }
      break;
  }
  return 1;
}

static gs_status summary_pair(const summary_ctx *c, gs_span key, gs_span value) {
  gs_mlperf_log *log = c->log;
  gs_status st = GS_OK;
  if (latency_line(c, key, value, &st)) return st;
  if (gs_span_eq(key, "SUT name"))
    return text_value(c, key, value, log->sut_name, sizeof log->sut_name);
  if (gs_span_eq(key, "Scenario")) {
    gs_mlperf_scenario s = scenario_from(value);
    if (s == GS_MLPERF_SCENARIO_UNKNOWN)
      return bad_value(c, key, value, "SingleStream, MultiStream, Server or Offline");
    if (log->scenario != GS_MLPERF_SCENARIO_UNKNOWN && log->scenario != s)
      return bad_value(c, key, value, "the scenario given before");
    log->scenario = s;
    return GS_OK;
  }
  if (gs_span_eq(key, "Mode")) {
    if (!mode_known(value))
      return bad_value(c, key, value,
                       "PerformanceOnly, AccuracyOnly, SubmissionRun or FindPeakPerformance");
    return text_value(c, key, value, log->mode, sizeof log->mode);
  }
  if (gs_span_eq(key, "Result is")) {
    int v = gs_span_eq(value, "VALID") ? 1 : gs_span_eq(value, "INVALID") ? 0 : -1;
    if (v < 0 || (log->valid >= 0 && log->valid != v))
      return bad_value(c, key, value, "VALID or INVALID (once)");
    log->valid = v;
    return GS_OK;
  }
  static const struct {
    const char *key;
    size_t offset;
  } numbers[] = {
      {"Samples per second", offsetof(gs_mlperf_log, samples_per_second)},
      {"Completed samples per second", offsetof(gs_mlperf_log, completed_samples_per_second)},
      {"Scheduled samples per second", offsetof(gs_mlperf_log, scheduled_samples_per_second)},
      {"QPS w/ loadgen overhead", offsetof(gs_mlperf_log, qps_with_loadgen_overhead)},
      {"QPS w/o loadgen overhead", offsetof(gs_mlperf_log, qps_without_loadgen_overhead)},
      {"Tokens per second", offsetof(gs_mlperf_log, tokens_per_second)},
      {"Completed tokens per second", offsetof(gs_mlperf_log, completed_tokens_per_second)},
      {"TPS w/ loadgen overhead", offsetof(gs_mlperf_log, tokens_per_second)},
  };
  for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++)
    if (gs_span_eq(key, numbers[i].key))
      return number_value(c, key, value, (double *)((char *)log + numbers[i].offset));
  static const struct {
    const char *key;
    size_t offset;
  } flags[] = {
      {"Performance constraints satisfied", offsetof(gs_mlperf_log, perf_constraints_met)},
      {"Min duration satisfied", offsetof(gs_mlperf_log, min_duration_met)},
      {"Min queries satisfied", offsetof(gs_mlperf_log, min_queries_met)},
      {"Early stopping satisfied", offsetof(gs_mlperf_log, early_stopping_met)},
  };
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    if (gs_span_eq(key, flags[i].key))
      return yes_no_value(c, key, value, (int *)((char *)log + flags[i].offset));
  return GS_OK;  // another statistic of a newer LoadGen: not used
}

static int all_equals_signs(gs_span s) {
  for (size_t i = 0; i < s.n; i++)
    if (s.p[i] != '=') return 0;
  return s.n > 0;
}

gs_status gs_mlperf_parse_summary(const char *data, size_t size, const char *source,
                                  gs_mlperf_log *out) {
  gs_mlperf_log_init(out);
  summary_ctx c = {.source = source, .line = 0, .log = out};
  summary_section section = SECTION_NONE;
  gs_line_cursor lines;
  gs_lines_init(&lines, data, size);
  while (gs_lines_next(&lines)) {
    c.line = lines.line_no;
    gs_span raw = lines.line;
    gs_span t = gs_span_trim(raw);
    if (t.n == 0 || all_equals_signs(t)) continue;
    if (gs_span_eq(t, "MLPerf Results Summary")) {
      section = SECTION_RESULTS;
      continue;
    }
    if (section == SECTION_NONE) {
      char l[80];
      return gs_ingest_fail(source, c.line,
                  "'%s' before the heading 'MLPerf Results Summary': not a LoadGen summary "
                  "(mlperf_log_summary.txt)", gs_span_copy(t, l, sizeof l, 1));
    }
    if (gs_span_eq(t, "Additional Stats")) {
      section = SECTION_STATS;
      continue;
    }
    if (gs_span_eq(t, "Test Parameters Used")) {
      section = SECTION_PARAMS;
      continue;
    }
    // Recommendation and early-stopping text: bullets and indented lines.
    if (t.p[0] == '*' || raw.p[0] == ' ' || raw.p[0] == '\t') {
      if (t.p[0] == '*' || gs_span_find(t, ':') < 0) continue;
    }
    // LoadGen closes with "No warnings encountered during test." and
    // "No errors encountered during test." (or "N ERRORS encountered. ...").
    if (gs_span_ends(t, "encountered during test.") || gs_span_ends(t, "See detailed log."))
      continue;
    long colon = gs_span_find(t, ':');
    if (colon < 0) {
      char l[80];
      return gs_ingest_fail(source, c.line,
                  "unexpected line '%s' (expected 'key : value', a '====' rule or a section "
                  "title)", gs_span_copy(t, l, sizeof l, 1));
    }
    gs_span key = gs_span_trim(gs_span_until(t, (size_t)colon));
    gs_span value = gs_span_trim(gs_span_from(t, (size_t)colon + 1));
    if (value.n == 0 || section == SECTION_PARAMS) continue;  // a label, or a setting
    gs_status st = summary_pair(&c, key, value);
    if (st != GS_OK) return st;
  }

  size_t last = lines.line_no;
  if (section == SECTION_NONE)
    return gs_ingest_fail(source, 0, "no 'MLPerf Results Summary' heading in %zu lines: not a LoadGen "
                "summary (mlperf_log_summary.txt)", last);
  char where[64];
  snprintf(where, sizeof where, "the file ends at line %zu (truncated?)", last);
  if (out->scenario == GS_MLPERF_SCENARIO_UNKNOWN)
    return gs_ingest_fail(source, 0, "no 'Scenario : ...' line; %s", where);
  if (!out->mode[0]) return gs_ingest_fail(source, 0, "no 'Mode : ...' line; %s", where);
  if (out->valid < 0) return gs_ingest_fail(source, 0, "no 'Result is : VALID|INVALID' line; %s", where);
  if (strcmp(out->mode, "PerformanceOnly") == 0) {
    if (isnan(out->latency.min_ns) || isnan(out->latency.max_ns) || isnan(out->latency.mean_ns))
      return gs_ingest_fail(source, 0, "no 'Min/Max/Mean latency (ns)' lines; %s", where);
    if (out->scenario == GS_MLPERF_OFFLINE && isnan(out->samples_per_second))
      return gs_ingest_fail(source, 0, "no 'Samples per second' line for the Offline scenario; %s", where);
    if (out->scenario == GS_MLPERF_SERVER && isnan(out->completed_samples_per_second) &&
        isnan(out->scheduled_samples_per_second))
      return gs_ingest_fail(source, 0,
                  "no 'Completed samples per second' or 'Scheduled samples per second' line "
                  "for the Server scenario; %s", where);
  }
  return gs_mlperf_check_log(out, source);
}

/* ---- detail log --------------------------------------------------------- */

typedef struct {
  const char *source;
  size_t line;
  gs_mlperf_log *log;
  gs_mlperf_latency query;  // MultiStream per-query statistics
} detail_ctx;

static gs_status wrong_type(const detail_ctx *c, const char *key, const cJSON *v,
                            const char *expected) {
  return gs_ingest_fail(c->source, c->line, "\"%s\" has %s value; expected %s", key, gs_json_type_name(v),
              expected);
}

static gs_status detail_number(const detail_ctx *c, const char *key, const cJSON *v,
                               double *out) {
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0)
    return wrong_type(c, key, v, "a non-negative number");
  *out = v->valuedouble;
  return GS_OK;
}

static gs_status detail_text(const detail_ctx *c, const char *key, const cJSON *v, char *dst,
                             size_t size) {
  if (!cJSON_IsString(v)) return wrong_type(c, key, v, "a string");
  gs_span text = gs_span_trim((gs_span){v->valuestring, strlen(v->valuestring)});
  gs_span_copy(text, dst, size, 0);
  return GS_OK;
}

/* "result_<P>_percentile_latency_ns" and the like: the percentile between
 * `prefix` and `suffix`, 0 when the key is not of that form. */
static int key_percentile(const char *key, const char *prefix, const char *suffix, double *p) {
  size_t kn = strlen(key), pn = strlen(prefix), sn = strlen(suffix);
  if (kn <= pn + sn || strncmp(key, prefix, pn) != 0 || strcmp(key + kn - sn, suffix) != 0)
    return 0;
  return percentile_from((gs_span){key + pn, kn - pn - sn}, p);
}

static gs_status detail_record(detail_ctx *c, const char *key, const cJSON *v) {
  gs_mlperf_log *log = c->log;
  if (strcmp(key, "effective_scenario") == 0) {
    if (!cJSON_IsString(v)) return wrong_type(c, key, v, "a string");
    gs_mlperf_scenario s = scenario_from((gs_span){v->valuestring, strlen(v->valuestring)});
    if (s == GS_MLPERF_SCENARIO_UNKNOWN)
      return gs_ingest_fail(c->source, c->line,
                  "\"effective_scenario\" is \"%.60s\"; expected SingleStream, MultiStream, "
                  "Server or Offline", v->valuestring);
    log->scenario = s;
    return GS_OK;
  }
  if (strcmp(key, "effective_test_mode") == 0) {
    if (!cJSON_IsString(v)) return wrong_type(c, key, v, "a string");
    if (!mode_known((gs_span){v->valuestring, strlen(v->valuestring)}))
      return gs_ingest_fail(c->source, c->line,
                  "\"effective_test_mode\" is \"%.60s\"; expected PerformanceOnly, "
                  "AccuracyOnly, SubmissionRun or FindPeakPerformance", v->valuestring);
    return detail_text(c, key, v, log->mode, sizeof log->mode);
  }
  if (strcmp(key, "sut_name") == 0) return detail_text(c, key, v, log->sut_name, sizeof log->sut_name);
  if (strcmp(key, "loadgen_version") == 0)
    return detail_text(c, key, v, log->loadgen_version, sizeof log->loadgen_version);
  if (strcmp(key, "test_datetime") == 0)
    return detail_text(c, key, v, log->test_datetime, sizeof log->test_datetime);
  if (strcmp(key, "result_invalid_reason") == 0)
    return detail_text(c, key, v, log->invalid_reason, sizeof log->invalid_reason);
  if (strcmp(key, "result_validity") == 0) {
    if (!cJSON_IsString(v)) return wrong_type(c, key, v, "a string");
    if (strcmp(v->valuestring, "VALID") != 0 && strcmp(v->valuestring, "INVALID") != 0)
      return gs_ingest_fail(c->source, c->line, "\"result_validity\" is \"%.60s\"; expected VALID or INVALID",
                  v->valuestring);
    log->valid = strcmp(v->valuestring, "VALID") == 0;
    return GS_OK;
  }
  static const struct {
    const char *key;
    size_t offset;
  } flags[] = {
      {"result_min_duration_met", offsetof(gs_mlperf_log, min_duration_met)},
      {"result_min_queries_met", offsetof(gs_mlperf_log, min_queries_met)},
      {"result_perf_constraints_met", offsetof(gs_mlperf_log, perf_constraints_met)},
      {"early_stopping_met", offsetof(gs_mlperf_log, early_stopping_met)},
  };
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    if (strcmp(key, flags[i].key) == 0) {
      if (!cJSON_IsBool(v)) return wrong_type(c, key, v, "true or false");
      *(int *)((char *)log + flags[i].offset) = cJSON_IsTrue(v) ? 1 : 0;
      return GS_OK;
    }
  if (strcmp(key, "result_query_count") == 0) {
    double q = 0.0;
    gs_status st = detail_number(c, key, v, &q);
    if (st != GS_OK) return st;
    if (q != floor(q) || q > 9007199254740992.0)
      return wrong_type(c, key, v, "a whole number of queries");
    log->query_count = (int64_t)q;
    return GS_OK;
  }
  static const struct {
    const char *key;
    size_t offset;
  } numbers[] = {
      {"result_samples_per_second", offsetof(gs_mlperf_log, samples_per_second)},
      {"result_completed_samples_per_sec", offsetof(gs_mlperf_log, completed_samples_per_second)},
      {"result_scheduled_samples_per_sec", offsetof(gs_mlperf_log, scheduled_samples_per_second)},
      {"result_qps_with_loadgen_overhead", offsetof(gs_mlperf_log, qps_with_loadgen_overhead)},
      {"result_qps_without_loadgen_overhead",
       offsetof(gs_mlperf_log, qps_without_loadgen_overhead)},
      {"result_tokens_per_second", offsetof(gs_mlperf_log, tokens_per_second)},
      {"result_completed_tokens_per_second", offsetof(gs_mlperf_log, completed_tokens_per_second)},
      {"result_min_latency_ns", offsetof(gs_mlperf_log, latency.min_ns)},
      {"result_max_latency_ns", offsetof(gs_mlperf_log, latency.max_ns)},
      {"result_mean_latency_ns", offsetof(gs_mlperf_log, latency.mean_ns)},
      {"result_first_token_min_latency_ns", offsetof(gs_mlperf_log, first_token.min_ns)},
      {"result_first_token_max_latency_ns", offsetof(gs_mlperf_log, first_token.max_ns)},
      {"result_first_token_mean_latency_ns", offsetof(gs_mlperf_log, first_token.mean_ns)},
      {"result_time_to_output_token_min", offsetof(gs_mlperf_log, time_per_output_token.min_ns)},
      {"result_time_to_output_token_max", offsetof(gs_mlperf_log, time_per_output_token.max_ns)},
      {"result_time_to_output_token_mean",
       offsetof(gs_mlperf_log, time_per_output_token.mean_ns)},
  };
  for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++)
    if (strcmp(key, numbers[i].key) == 0) {
      double *field = (double *)((char *)log + numbers[i].offset);
      note_line(&log->latency, field, c->line);
      note_line(&log->first_token, field, c->line);
      note_line(&log->time_per_output_token, field, c->line);
      return detail_number(c, key, v, field);
    }
  static const struct {
    const char *key;
    size_t offset;
  } query_numbers[] = {
      {"result_min_query_latency_ns", offsetof(gs_mlperf_latency, min_ns)},
      {"result_max_query_latency_ns", offsetof(gs_mlperf_latency, max_ns)},
      {"result_mean_query_latency_ns", offsetof(gs_mlperf_latency, mean_ns)},
  };
  for (size_t i = 0; i < sizeof query_numbers / sizeof query_numbers[0]; i++)
    if (strcmp(key, query_numbers[i].key) == 0) {
      double *field = (double *)((char *)&c->query + query_numbers[i].offset);
      note_line(&c->query, field, c->line);
      return detail_number(c, key, v, field);
    }
  static const struct {
    const char *prefix, *suffix;
    size_t offset;  // of the distribution in the log; SIZE_MAX: per query
  } percentiles[] = {
      {"result_first_token_", "_percentile_latency_ns", offsetof(gs_mlperf_log, first_token)},
      {"result_time_per_output_token_", "_percentile_ns",
       offsetof(gs_mlperf_log, time_per_output_token)},
      {"result_", "_percentile_per_query_latency_ns", (size_t)-1},
      {"result_", "_percentile_latency_ns", offsetof(gs_mlperf_log, latency)},
  };
  for (size_t i = 0; i < sizeof percentiles / sizeof percentiles[0]; i++) {
    double p = 0.0;
    if (!key_percentile(key, percentiles[i].prefix, percentiles[i].suffix, &p)) continue;
    double ns = 0.0;
    gs_status st = detail_number(c, key, v, &ns);
    if (st != GS_OK) return st;
    gs_mlperf_latency *dist = percentiles[i].offset == (size_t)-1
                                  ? &c->query
                                  : (gs_mlperf_latency *)((char *)log + percentiles[i].offset);
    put_percentile(dist, p, ns, c->line);
    return GS_OK;
  }
  return GS_OK;  // settings, counters and notes gpuscale does not use
}

gs_status gs_mlperf_parse_detail(const char *data, size_t size, const char *source,
                                 gs_mlperf_log *out) {
  static const char prefix[] = ":::MLLOG";
  gs_mlperf_log_init(out);
  detail_ctx c = {.source = source, .line = 0, .log = out};
  latency_init(&c.query);
  size_t records = 0;
  gs_line_cursor lines;
  gs_lines_init(&lines, data, size);
  while (gs_lines_next(&lines)) {
    c.line = lines.line_no;
    gs_span t = gs_span_trim(lines.line);
    if (!gs_span_starts(t, prefix)) continue;  // LoadGen's plain-text notes
    gs_span body = gs_span_trim(gs_span_from(t, sizeof prefix - 1));
    const char *end = NULL;
    cJSON *rec = cJSON_ParseWithLengthOpts(body.p, body.n, &end, 0);
    if (!rec) {
      size_t col = (end && end >= body.p && end <= body.p + body.n) ? (size_t)(end - body.p) : body.n;
      return gs_ingest_fail(source, c.line, "invalid JSON after ':::MLLOG' at column %zu%s",
                  (size_t)(body.p - lines.line.p) + col + 1,
                  (body.n == 0 || body.p[body.n - 1] != '}')
                      ? " (the record does not end with '}': truncated?)"
                      : "");
    }
    gs_status st = GS_OK;
    if (end && gs_span_trim((gs_span){end, body.n - (size_t)(end - body.p)}).n > 0)
      st = gs_ingest_fail(source, c.line, "text after the JSON record of ':::MLLOG'");
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(rec, "key");
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(rec, "value");
    const cJSON *time_ms = cJSON_GetObjectItemCaseSensitive(rec, "time_ms");
    if (st == GS_OK && !cJSON_IsObject(rec))
      st = gs_ingest_fail(source, c.line, "':::MLLOG' is followed by %s, expected a JSON object",
                gs_json_type_name(rec));
    else if (st == GS_OK && !cJSON_IsString(key))
      st = gs_ingest_fail(source, c.line, "':::MLLOG' record without a string \"key\"");
    else if (st == GS_OK && !value)
      st = gs_ingest_fail(source, c.line, "':::MLLOG' record \"%.60s\" without a \"value\"", key->valuestring);
    else if (st == GS_OK && !cJSON_IsNumber(time_ms))
      st = gs_ingest_fail(source, c.line, "':::MLLOG' record \"%.60s\" without a numeric \"time_ms\"",
                key->valuestring);
    if (st == GS_OK) {
      records++;
      const cJSON *meta = cJSON_GetObjectItemCaseSensitive(rec, "metadata");
      if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(meta, "is_error"))) {
        if (out->n_errors++ == 0) {
          const char *text = cJSON_IsString(value) ? value->valuestring : "";
          char both[2 * GS_MLPERF_TEXT];
          snprintf(both, sizeof both, "%s%s%s", key->valuestring, text[0] ? ": " : "", text);
          gs_span_copy((gs_span){both, strlen(both)}, out->first_error, sizeof out->first_error, 0);
        }
      }
      st = detail_record(&c, key->valuestring, value);
    }
    cJSON_Delete(rec);
    if (st != GS_OK) return st;
  }
  if (records == 0)
    return gs_ingest_fail(source, 0, "no ':::MLLOG' record in %zu lines: not a LoadGen detail log "
                "(mlperf_log_detail.txt)", lines.line_no);
  // MultiStream's headline statistics are per query, as in the summary.
  if (out->scenario == GS_MLPERF_MULTI_STREAM && !isnan(c.query.mean_ns)) out->latency = c.query;
  return gs_mlperf_check_log(out, source);
}

/* ---- merging ------------------------------------------------------------ */

static void take_number(double *into, double from) {
  if (!isnan(from)) *into = from;
}

static void take_latency(gs_mlperf_latency *into, const gs_mlperf_latency *from) {
  take_number(&into->min_ns, from->min_ns);
  take_number(&into->max_ns, from->max_ns);
  take_number(&into->mean_ns, from->mean_ns);
  if (from->n_percentiles > 0) {
    into->n_percentiles = from->n_percentiles;
    memcpy(into->percentile, from->percentile, sizeof into->percentile);
    memcpy(into->value_ns, from->value_ns, sizeof into->value_ns);
  }
}

static void take_text(char *into, size_t size, const char *from) {
  if (from[0]) snprintf(into, size, "%s", from);
}

static void take_flag(int *into, int from) {
  if (from >= 0) *into = from;
}

gs_status gs_mlperf_merge(gs_mlperf_log *into, const gs_mlperf_log *from, const char *into_source,
                          const char *from_source) {
  GS_TRY(gs_mlperf_check_agree(into, from, into_source, from_source));
  if (into->scenario != GS_MLPERF_SCENARIO_UNKNOWN && from->scenario != GS_MLPERF_SCENARIO_UNKNOWN &&
      into->scenario != from->scenario)
    return gs_error(GS_ERR_FORMAT, "%s says scenario %s but %s says %s", into_source,
                          gs_mlperf_scenario_loadgen_name(into->scenario), from_source,
                          gs_mlperf_scenario_loadgen_name(from->scenario));
  if (into->mode[0] && from->mode[0] && strcmp(into->mode, from->mode) != 0)
    return gs_error(GS_ERR_FORMAT, "%s says mode %s but %s says %s", into_source,
                          into->mode, from_source, from->mode);
  if (into->valid >= 0 && from->valid >= 0 && into->valid != from->valid)
    return gs_error(GS_ERR_FORMAT, "%s says the result is %s but %s says %s", into_source,
                          into->valid ? "VALID" : "INVALID", from_source,
                          from->valid ? "VALID" : "INVALID");
  if (from->scenario != GS_MLPERF_SCENARIO_UNKNOWN) into->scenario = from->scenario;
  take_text(into->sut_name, sizeof into->sut_name, from->sut_name);
  take_text(into->mode, sizeof into->mode, from->mode);
  take_text(into->loadgen_version, sizeof into->loadgen_version, from->loadgen_version);
  take_text(into->test_datetime, sizeof into->test_datetime, from->test_datetime);
  take_text(into->invalid_reason, sizeof into->invalid_reason, from->invalid_reason);
  take_flag(&into->valid, from->valid);
  take_flag(&into->min_duration_met, from->min_duration_met);
  take_flag(&into->min_queries_met, from->min_queries_met);
  take_flag(&into->perf_constraints_met, from->perf_constraints_met);
  take_flag(&into->early_stopping_met, from->early_stopping_met);
  take_number(&into->samples_per_second, from->samples_per_second);
  take_number(&into->completed_samples_per_second, from->completed_samples_per_second);
  take_number(&into->scheduled_samples_per_second, from->scheduled_samples_per_second);
  take_number(&into->qps_with_loadgen_overhead, from->qps_with_loadgen_overhead);
  take_number(&into->qps_without_loadgen_overhead, from->qps_without_loadgen_overhead);
  take_number(&into->tokens_per_second, from->tokens_per_second);
  take_number(&into->completed_tokens_per_second, from->completed_tokens_per_second);
  take_number(&into->target_percentile, from->target_percentile);
  take_number(&into->target_latency_ns, from->target_latency_ns);
  if (from->query_count >= 0) into->query_count = from->query_count;
  take_latency(&into->latency, &from->latency);
  take_latency(&into->first_token, &from->first_token);
  take_latency(&into->time_per_output_token, &from->time_per_output_token);
  if (from->n_errors > 0) {
    into->n_errors += from->n_errors;
    take_text(into->first_error, sizeof into->first_error, from->first_error);
  }
  return GS_OK;
}
