/* Server rates measured in turn (see llm_rates.h). */
#include "workloads/llm/llm_rates.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "workloads/llm/llm_measure.h"

typedef struct {
  const gs_llm_options *o;
  const gs_run_config *config;
  gs_llm_scenario_config sc;
  gs_llm_rate_plan *plan;
  gs_llm_run_result *kept; /* the runs of plan->kept_rate, config->runs of them */
  size_t kept_n;
  int kept_met;
} rates_ctx;

static void runs_free(gs_llm_run_result *runs, size_t n) {
  for (size_t r = 0; runs && r < n; r++) gs_llm_run_result_free(&runs[r]);
  free(runs);
}

/* The worst targeted percentile over its target; +inf when it never got
 * there or the runs failed. */
static double worst_ratio(const gs_slo *slo, const gs_slo_goodput *g, gs_status status) {
  if (status != GS_OK) return INFINITY;
  double worst = 0.0;
  for (int m = 0; m < GS_SLO_METRICS; m++) {
    if (!isfinite(slo->bound[m])) continue;
    const double v = g->percentile_value[m];
    const double ratio = isnan(v) ? INFINITY : v / slo->bound[m];
    if (ratio > worst) worst = ratio;
  }
  return worst;
}

/* Measures `rate`: config->runs runs, their goodput and ratio into the
 * plan's next point; keeps the runs when they are the measurement's best
 * so far (the highest rate met, else the lowest rate measured). */
static gs_status measure_rate(rates_ctx *c, double rate, double *ratio) {
  gs_llm_rate_plan *plan = c->plan;
  if (plan->n == GS_LIST_MAX) GS_BUG("llm rate plan beyond %d rates", GS_LIST_MAX);
  const gs_run_config *config = c->config;
  gs_llm_run_result *runs = calloc(config->runs, sizeof *runs);
  if (!runs)
    return gs_error(GS_ERR_NOMEM, "cannot allocate %llu scenario runs",
                    (unsigned long long)config->runs);
  c->sc.stream.rate = rate;
  gs_status status = GS_OK;
  size_t n = 0;
  for (uint64_t r = 0; r < config->runs && status == GS_OK; r++, n++) {
    if (config->show_progress && !gs_is_quiet())
      gs_note("%s: server at %.4g requests/s, run %llu of %llu",
              config->label ? config->label : "llm", rate, (unsigned long long)r + 1,
              (unsigned long long)config->runs);
    status = gs_llm_scenario_run(&c->sc, config, &runs[r]);
  }
  gs_llm_rate_point *p = &plan->points[plan->n++];
  memset(p, 0, sizeof *p);
  p->rate = rate;
  p->status = status;
  double seconds = 0.0, tokens = 0.0;
  for (size_t r = 0; r < n; r++) {
    seconds += runs[r].seconds;
    for (int k = 0; k < runs[r].world_size; k++) tokens += (double)runs[r].replicas[k].generated_tokens;
  }
  gs_status counted = gs_llm_goodput(&c->o->slo, runs, n, &p->goodput);
  if (counted != GS_OK) {
    runs_free(runs, n);
    return counted;
  }
  p->achieved_rate = seconds > 0.0 ? (double)p->goodput.requests / seconds : NAN;
  p->tokens_per_second = seconds > 0.0 ? tokens / seconds : NAN;
  p->ratio = worst_ratio(&c->o->slo, &p->goodput, status);
  const int sustained = gs_slo_sustained(&p->goodput);
  const int met = p->ratio <= 1.0 && sustained;
  p->met = met;
  // The search sees a rate not sustained as missed by its load's margin:
  // past the layout's pace the load, like a queue's latency, grows with
  // the rate, which keeps the search's interpolation meaningful.
  *ratio = sustained ? p->ratio : fmax(p->ratio, p->goodput.load.value / GS_SLO_LOAD_SUSTAINED);
  const int keep = status != GS_OK || !c->kept || (met && (!c->kept_met || rate > plan->kept_rate)) ||
                   (!met && !c->kept_met && rate < plan->kept_rate);
  if (keep) {
    runs_free(c->kept, c->kept_n);
    c->kept = runs;
    c->kept_n = n;
    c->kept_met = met;
    plan->kept_rate = rate;
  } else {
    runs_free(runs, n);
  }
  return status;
}

static gs_status probe(void *ctx, double rate, double *ratio) {
  return measure_rate(ctx, rate, ratio);
}

gs_status gs_llm_rates_measure(const gs_llm_options *o, const gs_run_config *config,
                               const gs_llm_scenario_config *sc, gs_llm_rate_plan *plan,
                               gs_llm_run_result **runs, size_t *n_runs) {
  memset(plan, 0, sizeof *plan);
  plan->search = o->find_max_rate;
  plan->stream = sc->stream.count;
  const uint64_t replicas = (uint64_t)config->world_size / gs_llm_options_replica_ranks(o);
  plan->slots = (replicas ? replicas : 1) * (sc->engine.max_batch ? sc->engine.max_batch : 1);
  plan->result.best = plan->result.low = plan->result.high = NAN;
  rates_ctx c = {.o = o, .config = config, .sc = *sc, .plan = plan};
  gs_status status = GS_OK;
  if (o->find_max_rate) {
    const gs_rate_search_spec spec = {.start = o->rate, .tolerance = GS_LLM_RATE_TOLERANCE,
                                      .max_probes = GS_RATE_SEARCH_MAX_PROBES};
    status = gs_rate_search_run(&spec, probe, &c, &plan->result);
  } else {
    for (size_t i = 0; i < o->rates.n && status == GS_OK; i++) {
      double ratio;
      status = measure_rate(&c, o->rates.v[i], &ratio);
    }
  }
  *runs = c.kept;
  *n_runs = c.kept_n;
  return status;
}

void gs_llm_rates_to_json(gs_json_build *b, cJSON *llm, const gs_llm_rate_plan *plan,
                          const gs_slo *slo) {
  cJSON *o = gs_json_put_object(b, llm, "rates");
  gs_json_put_string(b, o, "mode", plan->search ? "search" : "list");
  gs_json_put_number(b, o, "kept_rate", plan->kept_rate);
  gs_json_put_number(b, o, "requests_per_run", (double)plan->stream);
  gs_json_put_number(b, o, "slots", (double)plan->slots);
  cJSON *points = gs_json_put_array(b, o, "points");
  for (size_t i = 0; i < plan->n; i++) {
    const gs_llm_rate_point *p = &plan->points[i];
    cJSON *j = gs_json_check(b, cJSON_CreateObject());
    gs_json_put_number(b, j, "rate", p->rate);
    gs_json_put_number(b, j, "achieved_rate", p->achieved_rate);
    gs_json_put_number(b, j, "tokens_per_second", p->tokens_per_second);
    gs_json_put_number(b, j, "ratio", p->ratio);
    gs_json_put_bool(b, j, "met", p->met);
    gs_json_put_string(b, j, "status", gs_status_name(p->status));
    gs_slo_goodput_to_json(b, j, slo, &p->goodput);
    gs_json_append(b, points, j);
  }
  if (!plan->search) return;
  cJSON *s = gs_json_put_object(b, o, "search");
  gs_json_put_number(b, s, "max_rate", plan->result.best);
  cJSON *bracket = gs_json_put_array(b, s, "bracket");
  gs_json_append_number(b, bracket, plan->result.low);
  gs_json_append_number(b, bracket, plan->result.high);
  gs_json_put_bool(b, s, "converged", plan->result.converged);
  gs_json_put_bool(b, s, "unreachable", plan->result.unreachable);
  gs_json_put_number(b, s, "tolerance", GS_LLM_RATE_TOLERANCE);
  gs_json_put_number(b, s, "max_probes", GS_RATE_SEARCH_MAX_PROBES);
}

void gs_llm_rates_print(FILE *out, const gs_llm_rate_plan *plan, const gs_slo *slo) {
  fprintf(out,
          "    rates (%s; met = p%g of every target within it and the rate sustained: load, the "
          "offered rate over the rate served, at most %.2f; the table above is %.4g/s):\n",
          plan->search ? "searched" : "--rates", slo->percentile, GS_SLO_LOAD_SUSTAINED,
          plan->kept_rate);
  for (size_t i = 0; i < plan->n; i++) {
    const gs_llm_rate_point *p = &plan->points[i];
    const gs_slo_figure *g = &p->goodput.requests_per_second;
    const char *verdict = p->met ? "met"
                          : p->ratio <= 1.0 && p->status == GS_OK
                              ? "MISSED (not sustained: the load is above its limit)"
                              : "MISSED";
    fprintf(out,
            "      %10.4g/s: achieved %.4g/s, load %.2f [%.2f, %.2f], worst p%g / target %.3f %s; "
            "goodput %.4g requests/s [%.4g, %.4g], %.1f%% [%.1f, %.1f] met every target\n",
            p->rate, p->achieved_rate, p->goodput.load.value, p->goodput.load.low,
            p->goodput.load.high, slo->percentile, p->ratio, verdict, g->value, g->low, g->high,
            100.0 * p->goodput.share_all.value, 100.0 * p->goodput.share_all.low,
            100.0 * p->goodput.share_all.high);
  }
  char note[256];
  if (gs_slo_stream_note((double)plan->stream, (double)plan->slots, note, sizeof note))
    fprintf(out, "    note: %s\n", note);
  if (!plan->search) return;
  const gs_rate_search_result *r = &plan->result;
  if (isnan(r->best))
    fprintf(out, "    highest rate meeting the targets: none of %zu rates met them (lowest %.4g/s)%s\n",
            r->n, r->high,
            r->unreachable ? "; stopped early: a lower rate missed as much, so waiting is not "
                             "what misses them" : "");
  else if (isnan(r->high))
    fprintf(out,
            "    highest rate meeting the targets: %.4g/s, every rate measured met them (%zu rates)\n",
            r->best, r->n);
  else
    fprintf(out,
            "    highest rate meeting the targets: %.4g/s, bracket [%.4g, %.4g] (%zu rates; %s)\n",
            r->best, r->low, r->high, r->n,
            r->converged ? "within 5%" : "not within 5% after the last rate");
}
