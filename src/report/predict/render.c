/* Writes a prediction as aligned text, GitHub Markdown or JSON
 * ("gpuscale/predict/v1"): the machine and its collective fits, then per
 * workload its fitted model and one row per GPU count with the terms that
 * add up to the predicted step (or run), the measured value and error of
 * held-out counts, and cost. Layout in docs/predict.md, "Output". */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/format.h"
#include "core/json.h"
#include "core/result.h"
#include "report/predict/internal.h"

const char *const gs_predict_format_choices[] = {"text", "json", "markdown", NULL};

static int priced(const gs_predict_workload *w) { return isfinite(w->price_per_gpu_hour); }

static int checked(const gs_predict_workload *w) { return isfinite(w->worst_error); }

static int has_target(const gs_predict *p) { return p->opt.target_items > 0.0; }

/* ---- text and Markdown --------------------------------------------------------- */

typedef struct {
  FILE *f;
  int markdown;
} sink;

/* One table row: cells separated by two spaces (text, right-aligned to
 * `widths`) or by pipes (Markdown). */
static void row_out(const sink *k, const char *const *cells, const int *widths, size_t n) {
  if (k->markdown) fputs("|", k->f);
  for (size_t i = 0; i < n; i++) {
    if (k->markdown) fprintf(k->f, " %s |", cells[i]);
    else fprintf(k->f, "%s%*s", i ? "  " : "", widths[i], cells[i]);
  }
  fputc('\n', k->f);
}

static void rule_out(const sink *k, size_t n) {
  if (!k->markdown) return;
  fputs("|", k->f);
  for (size_t i = 0; i < n; i++) fputs("---|", k->f);
  fputc('\n', k->f);
}

static void seconds_cell(double v, char *buf, size_t size) { gs_format_seconds(v, buf, size); }

static void percent_cell(double v, char *buf, size_t size) {
  if (isfinite(v)) snprintf(buf, size, "%+.1f%%", 100.0 * v);
  else snprintf(buf, size, "-");
}

/* "+3.1% [-2.0, +8.5]": an error with its 95% interval where it has one. */
static void error_cell(const gs_predict_point *pt, char *buf, size_t size) {
  if (isfinite(pt->error) && isfinite(pt->error_low) && !isnan(pt->error_high))
    snprintf(buf, size, "%+.1f%% [%+.1f, %+.1f]", 100.0 * pt->error, 100.0 * pt->error_low,
             100.0 * pt->error_high);
  else
    percent_cell(pt->error, buf, size);
}

/* "[1.2 K, 1.4 K]": the throughput's 95% interval, "-" without one. */
static void interval_cell(double lo, double hi, char *buf, size_t size) {
  char a[16], b[16] = "unbounded";
  if (!isfinite(lo) || isnan(hi)) {
    snprintf(buf, size, "-");
    return;
  }
  gs_format_rate(lo, a, sizeof a);
  if (isfinite(hi)) gs_format_rate(hi, b, sizeof b);
  snprintf(buf, size, "[%s, %s]", a, b);
}

static void model_sentence(const gs_predict_workload *w, char *out, size_t size) {
  char fitted[64] = "";
  size_t used = 0;
  for (size_t i = 0; i < w->n_fitted && used < sizeof fitted; i++)
    used += (size_t)snprintf(fitted + used, sizeof fitted - used, "%s%d", i ? ", " : "",
                             w->fitted[i]);
  const gs_predict_model *m = &w->model;
  char a[32], b[32], c[32];
  if (m->kind == GS_PREDICT_REQUESTS) {
    seconds_cell(m->round_seconds, a, sizeof a);
    int used_n = snprintf(out, size, "%s model fitted at %s GPUs%s: a batch round computes %s "
                          "on one GPU; measured as replicas of tp %d x pp %d; %d requests in "
                          "batches of %d, %.0f tokens per run",
                          gs_predict_kind_name(m->kind), fitted,
                          w->n_family > 1 ? " (this request stream's layouts together)" : "", a,
                          m->measured_tp, m->measured_pp > 0 ? m->measured_pp : 1, m->samples,
                          m->batch, m->tokens_per_run);
    if (used_n <= 0 || (size_t)used_n >= size) return;
    if (m->share_fitted)
      snprintf(out + used_n, size - (size_t)used_n, "; a stage's call on 1/m of the rows costs "
               "%.0f%% + %.0f%%/m of the whole call (fitted from the pipelined measurements; "
               "95%% [%.0f%%, %.0f%%] fixed)", 100.0 * m->fixed_share,
               100.0 * (1.0 - m->fixed_share), 100.0 * m->share_low, 100.0 * m->share_high);
    else
      snprintf(out + used_n, size - (size_t)used_n, "; a stage's call on 1/m of the rows is "
               "taken to cost the whole call (bound by the weights: no pipelined measurement "
               "of several micro-batches fitted it)");
    return;
  }
  seconds_cell(m->work_seconds, a, sizeof a);
  seconds_cell(m->overhead_seconds, b, sizeof b);
  seconds_cell(m->noise_seconds, c, sizeof c);
  int n;
  if (m->scaling == GS_SCALING_WEAK) {
    seconds_cell(m->growth_seconds, b, sizeof b);
    n = snprintf(out, size, "%s model (weak scaling) fitted at %s GPUs: work %s per rank, "
                 "growth %s per added rank, rank noise %s", gs_predict_kind_name(m->kind), fitted,
                 a, b, c);
  } else {
    n = snprintf(out, size, "%s model (%s scaling) fitted at %s GPUs: work %s / N, fixed "
                 "overhead %s per step, rank noise %s", gs_predict_kind_name(m->kind),
                 gs_scaling_name(m->scaling), fitted, a, b, c);
  }
  if (m->kind == GS_PREDICT_DATA_PARALLEL && n > 0 && (size_t)n < size)
    n += snprintf(out + n, size - (size_t)n, "; gradients %.0f B in buckets of %.0f B",
                  m->gradient_bytes, m->bucket_bytes);
  int several = 0;
  for (size_t i = 1; i < w->n_fitted; i++) several |= w->fitted[i] != w->fitted[0];
  if (!several && n > 0 && (size_t)n < size)
    snprintf(out + n, size - (size_t)n, " (one GPU count measured: the compute that does not "
             "divide or that grows with the GPUs and the rank noise cannot be fitted and are "
             "taken as 0, so the speedup is an upper bound)");
}

static void render_workload_table(const sink *k, const gs_predict *p, const gs_predict_workload *w) {
  int requests = w->model.kind == GS_PREDICT_REQUESTS;
  const char *head[16];
  int widths[16];
  size_t n = 0;
#define COL(title, width) (head[n] = (title), widths[n++] = (width))
  COL("GPUs", 6);
  COL("nodes", 5);
  if (requests) {
    COL("replicas", 8);
    COL("tp x pp", 7);
    COL("rounds", 6);
    COL("run", 9);
    COL("tokens/s", 9);
    COL("95% interval", 20);
  } else {
    COL("step", 9);
    COL("items/s", 9);
  }
  COL("speedup", requests ? 20 : 8);
  COL("eff", 6);
  COL(requests ? "compute" : "work", 9);
  if (!requests) COL("overhead", 9);
  COL("comm", 9);
  if (!requests) COL("imbalance", 9);
  COL("collective", 10);
  COL("from", 12);
  if (checked(w)) {
    COL("measured", 9);
    COL(requests ? "error [95%]" : "error", requests ? 24 : 7);
  }
  if (priced(w)) COL("$/M items", 10);
  if (has_target(p)) COL("to target", 10);
#undef COL
  row_out(k, head, widths, n);
  rule_out(k, n);
  for (size_t i = 0; i < w->n_points; i++) {
    const gs_predict_point *pt = &w->points[i];
    char c[16][32];
    const char *cells[16];
    size_t m = 0;
    snprintf(c[m++], 32, "%d", pt->gpus);
    snprintf(c[m++], 32, "%d", pt->nodes);
    if (requests) {
      snprintf(c[m++], 32, "%d", pt->replicas);
      if (pt->pipeline_stages > 1)
        snprintf(c[m++], 32, "%dx%d m%d", pt->tensor_parallel, pt->pipeline_stages,
                 pt->micro_batches);
      else
        snprintf(c[m++], 32, "%dx1", pt->tensor_parallel);
      snprintf(c[m++], 32, "%d", pt->rounds);
      seconds_cell(pt->step_seconds, c[m++], 32);
    } else {
      seconds_cell(pt->step_seconds, c[m++], 32);
    }
    gs_format_rate(pt->throughput, c[m++], 32);
    if (requests) interval_cell(pt->throughput_low, pt->throughput_high, c[m++], 32);
    if (requests && isfinite(pt->speedup_low) && isfinite(pt->speedup_high))
      snprintf(c[m++], 32, "%.2fx [%.2f, %.2f]", pt->speedup, pt->speedup_low,
               pt->speedup_high);
    else if (requests && isfinite(pt->speedup))  // a corner without a bound
      snprintf(c[m++], 32, "%.2fx [%s]", pt->speedup,
               isinf(pt->throughput_high) ? "unbounded" : "no interval");
    else
      snprintf(c[m++], 32, isfinite(pt->speedup) ? "%.2fx" : "-", pt->speedup);
    snprintf(c[m++], 32, isfinite(pt->efficiency) ? "%.1f%%" : "-", 100.0 * pt->efficiency);
    seconds_cell(pt->work, c[m++], 32);
    if (!requests) seconds_cell(pt->overhead, c[m++], 32);
    seconds_cell(pt->comm, c[m++], 32);
    if (!requests) seconds_cell(pt->imbalance, c[m++], 32);
    snprintf(c[m++], 32, "%s", pt->comm_how);
    gs_predict_from_name(pt->comm_from, c[m++], 32);
    if (checked(w)) {
      if (requests) gs_format_rate(pt->measured, c[m++], 32);
      else seconds_cell(pt->measured, c[m++], 32);
      error_cell(pt, c[m++], 32);
    }
    if (priced(w)) snprintf(c[m++], 32, isfinite(pt->dollars_per_million) ? "%.4g" : "-",
                            pt->dollars_per_million);
    if (has_target(p)) seconds_cell(pt->seconds_to_target, c[m++], 32);
    for (size_t j = 0; j < m; j++) cells[j] = c[j];
    row_out(k, cells, widths, m);
  }
}

static void render_choice(const sink *k, const gs_predict *p, const gs_predict_workload *w) {
  const char *unit = w->item_unit ? w->item_unit : "items";
  if (w->fastest >= 0) {
    const gs_predict_point *f = &w->points[w->fastest];
    char rate[32], t[32];
    gs_format_rate(f->throughput, rate, sizeof rate);
    fprintf(k->f, "%sFastest: %d GPU%s, %s %s/s", k->markdown ? "- " : "", f->gpus,
            f->gpus == 1 ? "" : "s", rate, unit);
    if (has_target(p)) {
      gs_format_seconds(f->seconds_to_target, t, sizeof t);
      fprintf(k->f, ", %s to %.4g %s", t, p->opt.target_items, unit);
      if (isfinite(f->dollars_to_target)) fprintf(k->f, " for $%.4g", f->dollars_to_target);
    }
    // llm: the fastest only where every corner of the fit's interval agrees.
    if (w->model.kind == GS_PREDICT_REQUESTS && w->n_points > 1) {
      size_t open = 0;
      for (size_t i = 0; i < w->n_points; i++)
        open += (int)i != w->fastest && !gs_predict_point_beats(f, &w->points[i]);
      if (open)
        fprintf(k->f, "; inconclusive against %zu other count%s (%s)", open,
                open == 1 ? "" : "s",
                isfinite(f->throughput_low) ? "the fit's interval allows either"
                                            : "no interval: one run measured");
    }
    fputs(".\n", k->f);
  }
  if (w->cheapest >= 0) {
    const gs_predict_point *c = &w->points[w->cheapest];
    fprintf(k->f, "%sCheapest: %d GPU%s, $%.4g per million %s at $%.4g per GPU-hour",
            k->markdown ? "- " : "", c->gpus, c->gpus == 1 ? "" : "s", c->dollars_per_million,
            unit, w->price_per_gpu_hour);
    if (isfinite(c->dollars_to_target))
      fprintf(k->f, " ($%.4g to the target)", c->dollars_to_target);
    fputs(".\n", k->f);
  }
  if (!checked(w)) return;
  const gs_predict_point *worst = NULL;
  for (size_t i = 0; i < w->n_points && !worst; i++)
    if (w->points[i].error == w->worst_error) worst = &w->points[i];
  char fitted[96];
  if (p->opt.holdout_layout.tp > 0 && w->model.kind == GS_PREDICT_REQUESTS)
    snprintf(fitted, sizeof fitted, "on the stream's other layouts (tp %d x pp %d held out)",
             p->opt.holdout_layout.tp, p->opt.holdout_layout.pp);
  else
    snprintf(fitted, sizeof fitted, "below %d GPUs", p->opt.holdout);
  fprintf(k->f, "%sHoldout: fitted %s; largest error %+.1f%%", k->markdown ? "- " : "", fitted,
          100.0 * w->worst_error);
  if (worst && isfinite(worst->error_low) && !isnan(worst->error_high)) {
    const double lo = worst->error_low, hi = worst->error_high, lim = GS_PREDICT_MISFIT;
    const char *verdict = lo <= 0.0 && hi >= 0.0 ? "the measurement cannot tell the prediction "
                                                   "from it"
                          : fabs(lo) <= lim && fabs(hi) <= lim ? "within the models' 10%"
                          : (lo > lim || hi < -lim)            ? "the model misses it"
                                                   : "inconclusive whether within the models' 10%";
    fprintf(k->f, " [%+.1f%%, %+.1f%%] (95%%, the prediction's and the measurement's intervals): "
            "%s", 100.0 * lo, 100.0 * hi, verdict);
  }
  fputs(".\n", k->f);
}

static void render_text(FILE *f, const gs_predict *p, int markdown) {
  sink k = {f, markdown};
  const gs_predict_machine *m = &p->machine;
  double gbps = m->network.beta_seconds_per_byte > 0 ? 1e-9 / m->network.beta_seconds_per_byte
                                                     : 0.0;
  if (p->network_file) {
    char lo[32], hi[32];
    gs_format_value(GS_UNIT_BYTES, m->network_curve->bytes[0], lo, sizeof lo);
    gs_format_value(GS_UNIT_BYTES, m->network_curve->bytes[m->network_curve->n - 1], hi,
                    sizeof hi);
    fprintf(f, "%sPrediction: %d GPUs per node; between nodes the 2-rank allreduce of %s, "
            "measured from %s to %s (beyond: its fit, %.4g GB/s per GPU and %.4g us per step)\n",
            markdown ? "# " : "", m->gpus_per_node, p->network_file, lo, hi, gbps,
            1e6 * m->network.alpha_seconds);
  } else {
    fprintf(f, "%sPrediction: %d GPUs per node; between nodes %.4g GB/s per GPU and %.4g us per "
            "step\n", markdown ? "# " : "", m->gpus_per_node, gbps, 1e6 * m->network.alpha_seconds);
  }
  if (markdown) fputc('\n', f);
  if (p->n_coll > 0) {
    fprintf(f, "%sCollectives of %s (t = alpha + beta x bus bytes, within a node):\n",
            markdown ? "" : "", p->coll_file);
    if (markdown) fputc('\n', f);
    for (size_t i = 0; i < p->n_coll; i++) {
      char a[32], bw[32];
      gs_format_seconds(p->coll[i].fit.alpha_seconds, a, sizeof a);
      gs_format_rate(p->coll[i].fit.beta_seconds_per_byte > 0
                         ? 1.0 / p->coll[i].fit.beta_seconds_per_byte : NAN, bw, sizeof bw);
      fprintf(f, "%s%s: alpha %s, bus bandwidth %sB/s, %zu points\n", markdown ? "- " : "  ",
              p->coll[i].op, a, bw, p->coll[i].fit.points);
    }
    for (size_t i = 0; i < m->n_curves; i++) {
      char lo[32], hi[32];
      gs_format_value(GS_UNIT_BYTES, m->curves[i].bytes[0], lo, sizeof lo);
      gs_format_value(GS_UNIT_BYTES, m->curves[i].bytes[m->curves[i].n - 1], hi, sizeof hi);
      fprintf(f, "%sallreduce at %d GPUs: as measured from %s to %s (%zu sizes), the fit "
              "beyond\n", markdown ? "- " : "  ", m->curves[i].ranks, lo, hi, m->curves[i].n);
    }
  } else if (p->links_file) {
    char a[32], bw[32];
    gs_format_seconds(m->allreduce.alpha_seconds, a, sizeof a);
    gs_format_rate(1.0 / m->allreduce.beta_seconds_per_byte, bw, sizeof bw);
    fprintf(f, "No coll document: the node's allreduce as a ring over the links of %s (alpha %s, "
            "%sB/s per bus byte), an optimistic bound without NCCL's own costs.\n",
            p->links_file, a, bw);
  } else {
    fprintf(f, "No coll or p2p document: only communication between nodes (of one GPU each) "
               "can be predicted.\n");
  }
  for (size_t i = 0; i < p->n_workloads; i++) {
    const gs_predict_workload *w = &p->workloads[i];
    char sentence[512];
    model_sentence(w, sentence, sizeof sentence);
    sentence[0] = (char)toupper((unsigned char)sentence[0]);
    fprintf(f, "\n%s%s\n", markdown ? "## " : "", w->name);
    if (markdown) fputc('\n', f);
    fprintf(f, "%s.\n\n", sentence);
    if (w->n_points == 0) {  // fitted for another series (--holdout-layout) and not asked
      fprintf(f, "No GPU count asked of this series (--ngpus LIST predicts it).\n");
      continue;
    }
    render_workload_table(&k, p, w);
    fputc('\n', f);
    render_choice(&k, p, w);
  }
  gs_predict_layouts_text(f, p, markdown);
  gs_predict_serving_text(f, p, markdown);
  gs_predict_pipeline_text(f, p, markdown);
  if (p->skipped[0]) fprintf(f, "\nNot predicted: %s.\n", p->skipped);
}

/* ---- JSON ------------------------------------------------------------------------ */

static cJSON *point_json(gs_json_build *b, const gs_predict_workload *w,
                         const gs_predict_point *pt) {
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  if (!o) return NULL;
  int requests = w->model.kind == GS_PREDICT_REQUESTS;
  gs_json_put_number(b, o, "gpus", pt->gpus);
  gs_json_put_number(b, o, "nodes", pt->nodes);
  if (requests) {
    gs_json_put_number(b, o, "tokens_per_second", pt->throughput);
    gs_json_put_number(b, o, "run_seconds", pt->step_seconds);
    gs_json_put_number(b, o, "tokens_per_second_low", pt->throughput_low);
    gs_json_put_number(b, o, "tokens_per_second_high", pt->throughput_high);
    gs_json_put_number(b, o, "tensor_parallel", pt->tensor_parallel);
    gs_json_put_number(b, o, "pipeline_stages", pt->pipeline_stages);
    gs_json_put_number(b, o, "micro_batches", pt->micro_batches);
    gs_json_put_number(b, o, "replicas", pt->replicas);
    gs_json_put_number(b, o, "rounds", pt->rounds);
  } else {
    gs_json_put_number(b, o, "step_seconds", pt->step_seconds);
    gs_json_put_number(b, o, "throughput_items_per_second", pt->throughput);
  }
  gs_json_put_number(b, o, "speedup", pt->speedup);
  gs_json_put_number(b, o, "efficiency", pt->efficiency);
  if (requests) {
    gs_predict_json_pair(b, o, "speedup_interval", pt->speedup_low, pt->speedup_high);
    gs_predict_json_pair(b, o, "efficiency_interval", pt->speedup_low / pt->gpus,
                         pt->speedup_high / pt->gpus);
  }
  cJSON *terms = gs_json_put_object(b, o, "terms");
  gs_json_put_number(b, terms, requests ? "compute_seconds" : "work_seconds", pt->work);
  if (!requests) gs_json_put_number(b, terms, "overhead_seconds", pt->overhead);
  gs_json_put_number(b, terms, "comm_seconds", pt->comm);
  if (requests) gs_json_put_number(b, terms, "transfer_seconds", pt->transfer);
  if (!requests) gs_json_put_number(b, terms, "imbalance_seconds", pt->imbalance);
  gs_json_put_string(b, terms, "collective", pt->comm_how);
  char from[32];
  gs_predict_from_name(pt->comm_from, from, sizeof from);
  gs_json_put_string(b, terms, "collective_from", from);
  if (isfinite(pt->measured)) {
    gs_json_put_number(b, o, requests ? "measured_tokens_per_second" : "measured_step_seconds",
                       pt->measured);
    gs_json_put_number(b, o, "relative_error", pt->error);
    gs_predict_json_pair(b, o, "relative_error_interval", pt->error_low, pt->error_high);
    gs_predict_json_pair(b, o, "measured_interval", pt->measured_low, pt->measured_high);
  }
  if (priced(w)) gs_json_put_number(b, o, "dollars_per_million_items", pt->dollars_per_million);
  if (isfinite(pt->seconds_to_target)) {
    gs_json_put_number(b, o, "seconds_to_target", pt->seconds_to_target);
    gs_json_put_number(b, o, "dollars_to_target", pt->dollars_to_target);
  }
  return o;
}

static cJSON *model_json(gs_json_build *b, const gs_predict_workload *w) {
  const gs_predict_model *m = &w->model;
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  if (!o) return NULL;
  gs_json_put_string(b, o, "kind", gs_predict_kind_name(m->kind));
  gs_json_put_string(b, o, "scaling", gs_scaling_name(m->scaling));
  cJSON *fitted = gs_json_put_array(b, o, "fitted_gpus");
  for (size_t i = 0; fitted && i < w->n_fitted; i++)
    gs_json_append_number(b, fitted, w->fitted[i]);
  if (m->kind == GS_PREDICT_REQUESTS) {
    gs_json_put_number(b, o, "round_seconds", m->round_seconds);
    gs_json_put_number(b, o, "tokens_per_run", m->tokens_per_run);
    gs_json_put_number(b, o, "samples", m->samples);
    gs_json_put_number(b, o, "batch", m->batch);
    gs_json_put_number(b, o, "measured_tensor_parallel", m->measured_tp);
    gs_json_put_number(b, o, "measured_pipeline_stages", m->measured_pp > 0 ? m->measured_pp : 1);
    gs_json_put_number(b, o, "measured_micro_batches", m->measured_micro > 0 ? m->measured_micro : 1);
    gs_json_put_number(b, o, "stage_imbalance", m->stage_imbalance >= 1.0 ? m->stage_imbalance : 1.0);
    gs_json_put_number(b, o, "round_seconds_low", m->round_low);
    gs_json_put_number(b, o, "round_seconds_high", m->round_high);
    gs_json_put_number(b, o, "fixed_share", m->fixed_share);
    gs_json_put_bool(b, o, "fixed_share_fitted", m->share_fitted);
    gs_predict_json_pair(b, o, "fixed_share_interval", m->share_low, m->share_high);
    gs_json_put_number(b, o, "layouts_fitted", (double)w->n_family);
    gs_json_put_number(b, o, "layers", m->layers);
    gs_json_put_number(b, o, "hidden", m->hidden);
    gs_json_put_number(b, o, "element_bytes", m->element_bytes);
  } else {
    gs_json_put_number(b, o, "work_seconds", m->work_seconds);
    gs_json_put_number(b, o, "overhead_seconds", m->overhead_seconds);
    gs_json_put_number(b, o, "growth_seconds", m->growth_seconds);
    gs_json_put_number(b, o, "noise_seconds", m->noise_seconds);
    gs_json_put_number(b, o, "items_per_step", w->items_per_step);
    if (m->kind == GS_PREDICT_DATA_PARALLEL) {
      gs_json_put_number(b, o, "gradient_bytes", m->gradient_bytes);
      gs_json_put_number(b, o, "bucket_bytes", m->bucket_bytes);
    }
  }
  return o;
}

/* A measured curve: its rank count and the (bytes, seconds) it holds. */
static cJSON *curve_json(gs_json_build *b, const gs_coll_curve *c) {
  cJSON *o = gs_json_check(b, cJSON_CreateObject());
  if (!o) return NULL;
  gs_json_put_number(b, o, "gpus", c->ranks);
  cJSON *bytes = gs_json_put_array(b, o, "bytes"), *secs = gs_json_put_array(b, o, "seconds");
  for (size_t i = 0; bytes && secs && i < c->n; i++) {
    gs_json_append_number(b, bytes, c->bytes[i]);
    gs_json_append_number(b, secs, c->seconds[i]);
  }
  return o;
}

static cJSON *prediction_json(const gs_predict *p) {
  cJSON *doc = cJSON_CreateObject();
  if (!doc) return NULL;
  gs_json_build build = {0}, *b = &build;
  gs_json_put_string(b, doc, "schema", "gpuscale/predict/v1");
  cJSON *mach = gs_json_put_object(b, doc, "machine");
  if (!mach) goto fail;
  gs_json_put_number(b, mach, "gpus_per_node", p->machine.gpus_per_node);
  gs_json_put_number(b, mach, "inter_node_bytes_per_second",
                     p->machine.network.beta_seconds_per_byte > 0
                         ? 1.0 / p->machine.network.beta_seconds_per_byte : NAN);
  gs_json_put_number(b, mach, "inter_node_latency_seconds", p->machine.network.alpha_seconds);
  if (p->coll_file) gs_json_put_string(b, mach, "coll_file", p->coll_file);
  if (p->links_file) {
    gs_json_put_string(b, mach, "p2p_file", p->links_file);
    gs_json_put_number(b, mach, "allreduce_alpha_seconds", p->machine.allreduce.alpha_seconds);
    gs_json_put_number(b, mach, "allreduce_beta_seconds_per_byte",
                       p->machine.allreduce.beta_seconds_per_byte);
  }
  cJSON *colls = gs_json_put_array(b, mach, "collectives");
  if (!colls) goto fail;
  for (size_t i = 0; i < p->n_coll; i++) {
    cJSON *c = cJSON_CreateObject();
    gs_json_append(b, colls, c);
    if (b->failed) goto fail;
    gs_json_put_string(b, c, "op", p->coll[i].op);
    gs_json_put_number(b, c, "alpha_seconds", p->coll[i].fit.alpha_seconds);
    gs_json_put_number(b, c, "beta_seconds_per_byte", p->coll[i].fit.beta_seconds_per_byte);
    gs_json_put_number(b, c, "r_squared", p->coll[i].fit.r_squared);
    gs_json_put_number(b, c, "points", (double)p->coll[i].fit.points);
  }
  cJSON *curves = gs_json_put_array(b, mach, "measured_allreduce");
  if (!curves) goto fail;
  for (size_t i = 0; i < p->machine.n_curves; i++)
    gs_json_append(b, curves, curve_json(b, &p->machine.curves[i]));
  if (p->network_file) {
    cJSON *net = gs_json_put_object(b, mach, "inter_node_coll");
    if (!net) goto fail;
    gs_json_put_string(b, net, "file", p->network_file);
    gs_json_put_number(b, net, "alpha_seconds", p->network_fit.alpha_seconds);
    gs_json_put_number(b, net, "beta_seconds_per_byte", p->network_fit.beta_seconds_per_byte);
    gs_json_put_number(b, net, "r_squared", p->network_fit.r_squared);
    gs_json_put_number(b, net, "points", (double)p->network_fit.points);
    gs_json_put_item(b, net, "measured", curve_json(b, &p->network_curve));
  }
  if (p->opt.holdout > 1) gs_json_put_number(b, doc, "holdout", p->opt.holdout);
  if (p->skipped[0]) gs_json_put_string(b, doc, "not_predicted", p->skipped);
  if (has_target(p)) gs_json_put_number(b, doc, "target_items", p->opt.target_items);
  cJSON *ws = gs_json_put_array(b, doc, "workloads");
  if (!ws) goto fail;
  for (size_t i = 0; i < p->n_workloads; i++) {
    const gs_predict_workload *w = &p->workloads[i];
    cJSON *o = cJSON_CreateObject();
    gs_json_append(b, ws, o);
    if (b->failed) goto fail;
    gs_json_put_string(b, o, "series", w->name);
    if (w->item_unit) gs_json_put_string(b, o, "item_unit", w->item_unit);
    gs_json_put_item(b, o, "model", model_json(b, w));
    gs_json_put_number(b, o, "base_throughput", w->base_throughput);
    if (priced(w)) gs_json_put_number(b, o, "price_per_gpu_hour", w->price_per_gpu_hour);
    if (checked(w)) gs_json_put_number(b, o, "largest_relative_error", w->worst_error);
    if (w->fastest >= 0) gs_json_put_number(b, o, "fastest_gpus", w->points[w->fastest].gpus);
    if (w->cheapest >= 0) gs_json_put_number(b, o, "cheapest_gpus", w->points[w->cheapest].gpus);
    cJSON *pts = gs_json_put_array(b, o, "predictions");
    if (!pts) goto fail;
    for (size_t j = 0; j < w->n_points; j++) {
      gs_json_append(b, pts, point_json(b, w, &w->points[j]));
      if (b->failed) goto fail;
    }
  }
  gs_predict_layouts_json(b, doc, p);
  gs_predict_serving_json(b, doc, p);
  gs_predict_pipeline_json(b, doc, p);
  if (b->failed) goto fail;
  return doc;
fail:
  cJSON_Delete(doc);
  return NULL;
}

/* See predict.h. */
gs_status gs_predict_render(FILE *f, const gs_predict *p, gs_predict_format format) {
  if (format == GS_PREDICT_JSON) {
    cJSON *doc = prediction_json(p);
    if (!doc) return gs_error(GS_ERR_NOMEM, "out of memory building the prediction");
    gs_status st = gs_json_print(f, doc);
    cJSON_Delete(doc);
    return st;
  }
  render_text(f, p, format == GS_PREDICT_MARKDOWN);
  return ferror(f) ? gs_error(GS_ERR_IO, "cannot write the prediction") : GS_OK;
}
