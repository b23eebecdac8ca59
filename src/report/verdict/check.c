/* Level 1 of `gpuscale check`: the passive state into findings with an
 * action each (see check.h; the rules and why each is a fault or not are in
 * docs/check.md). */
#include "report/verdict/check.h"
#include "report/verdict/check_private.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NVML clock event reason bits (nvmlClocksEventReason*) that the judgement
 * reads; the full list is in platform/nvml.h. */
enum {
  EVENT_SW_POWER_CAP = 0x4,
  EVENT_HW_SLOWDOWN = 0x8,
  EVENT_SW_THERMAL = 0x20,
  EVENT_HW_THERMAL = 0x40,
  EVENT_HW_POWER_BRAKE = 0x80
};

typedef gs_health_builder builder;

gs_health_finding *gs_health_add(builder *b, const char *check, int gpu, gs_check_state state,
                                 const char *detail) {
  if (b->failed) return NULL;
  gs_health_verdict *v = b->v;
  if (v->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 32;
    gs_health_finding *items = realloc(v->items, cap * sizeof *items);
    if (!items) {
      b->failed = 1;
      return NULL;
    }
    v->items = items;
    b->cap = cap;
  }
  gs_health_finding *f = &v->items[v->n++];
  memset(f, 0, sizeof *f);
  f->check = check;
  f->gpu = gpu;
  f->state = state;
  snprintf(f->detail, sizeof f->detail, "%s", detail);
  return f;
}

void gs_health_action(gs_health_finding *f, const char *fmt, ...) {
  if (!f) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->action, sizeof f->action, fmt, ap);
  va_end(ap);
}

/* CUDA's "12040" as "12.4". */
static void cuda_version_text(int v, char *out, size_t size) {
  if (v > 0)
    snprintf(out, size, "%d.%d", v / 1000, (v % 1000) / 10);
  else
    snprintf(out, size, "unknown");
}

/* NVML's and CUDA's bus ids name one GPU: domain, bus, device and function
 * equal, whatever the width of the domain ("0000:18:00.0" from CUDA,
 * "00000000:18:00.0" from NVML). */
int gs_health_same_bus(const char *a, const char *b) {
  unsigned da, ba, va, fa, db, bb, vb, fb;
  if (sscanf(a, "%x:%x:%x.%x", &da, &ba, &va, &fa) != 4) return 0;
  if (sscanf(b, "%x:%x:%x.%x", &db, &bb, &vb, &fb) != 4) return 0;
  return da == db && ba == bb && va == vb && fa == fb;
}

static void judge_inventory(builder *b, const gs_node_state *s, size_t expect) {
  char detail[400];
  int n = snprintf(detail, sizeof detail, "%zu GPUs seen by NVML, %zu usable by CUDA",
                   s->gpu_count, s->cuda_count);
  if (n < 0) n = 0;
  if (expect > 0 && s->gpu_count != expect) {
    snprintf(detail + n, sizeof detail - (size_t)n, "; %zu expected (--expect-gpus)", expect);
    gs_health_action(gs_health_add(b, "inventory", -1, GS_CHECK_FAIL, detail),
               "investigate: %zu GPUs of %zu expected", s->gpu_count, expect);
    return;
  }
  // Which CUDA devices are NVML's GPUs: by bus id. A replaced NVML (the test
  // double) or CUDA_VISIBLE_DEVICES make a difference expected.
  size_t missing = 0;
  const char *first = "";
  for (size_t i = 0; i < s->gpu_count; i++) {
    int seen = 0;
    for (size_t c = 0; c < s->cuda_count && !seen; c++)
      seen = gs_health_same_bus(s->gpus[i].pci_bus_id, s->cuda_bus_ids[c]);
    if (!seen && missing++ == 0) first = s->gpus[i].pci_bus_id;
  }
  if (s->nvml_replaced || s->cuda_visible_set || !s->nvml_loaded || missing == 0) {
    snprintf(detail + n, sizeof detail - (size_t)n, "%s",
             s->nvml_replaced ? "; CUDA not compared: GPUSCALE_NVML_LIBRARY replaces NVML"
             : s->cuda_visible_set && missing ? "; CUDA_VISIBLE_DEVICES hides the others"
             : !s->nvml_loaded ? "; NVML unavailable, CUDA's count only"
                               : "");
    gs_health_add(b, "inventory", -1, GS_CHECK_PASS, detail);
    return;
  }
  snprintf(detail + n, sizeof detail - (size_t)n, "; CUDA cannot use %zu of them (%s)", missing,
           s->cuda_status);
  gs_health_action(gs_health_add(b, "inventory", -1, GS_CHECK_FAIL, detail),
             "investigate: CUDA cannot use %zu of %zu GPUs (first at %s)", missing, s->gpu_count,
             first);
}

static void judge_software(builder *b, const gs_node_state *s) {
  char drv[16], rt[16], detail[400];
  cuda_version_text(s->cuda_driver_version, drv, sizeof drv);
  cuda_version_text(s->cuda_runtime_version, rt, sizeof rt);
  snprintf(detail, sizeof detail, "driver %s, CUDA driver API %s, runtime %s, NCCL %s",
           s->driver[0] ? s->driver : "unknown", drv, rt,
           s->nccl_version[0] ? s->nccl_version : "not found");
  // CUDA's runtime needs a driver at least as new; the test double's GPUs
  // are no CUDA devices, so there is nothing to run on either way.
  if (!s->nvml_replaced && s->cuda_driver_version > 0 && s->cuda_runtime_version > 0 &&
      s->cuda_driver_version < s->cuda_runtime_version) {
    gs_health_action(gs_health_add(b, "software", -1, GS_CHECK_FAIL, detail),
               "update the driver: CUDA runtime %s needs a driver for CUDA %s or later (it "
               "supports %s)", rt, rt, drv);
    return;
  }
  gs_health_add(b, "software", -1, GS_CHECK_PASS, detail);
}

static void judge_ecc(builder *b, const gs_gpu_health *h) {
  char detail[400];
  if (!h->has_ecc_volatile) {
    gs_health_add(b, "ecc", h->index, GS_CHECK_NA,
                  "ECC counts not reported (ECC off or not supported)");
    return;
  }
  int n = snprintf(detail, sizeof detail, "volatile %llu corrected, %llu uncorrected",
                   h->ecc_volatile_corrected, h->ecc_volatile_uncorrected);
  if (n > 0 && h->has_ecc_aggregate)
    snprintf(detail + n, sizeof detail - (size_t)n, "; aggregate %llu corrected, %llu uncorrected",
             h->ecc_aggregate_corrected, h->ecc_aggregate_uncorrected);
  if (h->ecc_volatile_uncorrected > 0) {
    gs_health_action(gs_health_add(b, "ecc", h->index, GS_CHECK_FAIL, detail),
               "drain and reset: %llu uncorrected ECC errors on GPU %d since the driver loaded",
               h->ecc_volatile_uncorrected, h->index);
    return;
  }
  gs_health_add(b, "ecc", h->index, GS_CHECK_PASS, detail);
}

static void judge_retired(builder *b, const gs_gpu_health *h) {
  char detail[400];
  if (!h->has_retired_pages && !h->has_retired_pending) {
    gs_health_add(b, "retired_pages", h->index, GS_CHECK_NA,
        "page retirement not reported (GPUs from Ampere on remap rows instead)");
    return;
  }
  snprintf(detail, sizeof detail, "%u pages retired for single-bit, %u for double-bit errors%s",
           h->retired_sbe, h->retired_dbe, h->retired_pending ? "; a retirement is pending" : "");
  if (h->retired_pending) {
    gs_health_action(gs_health_add(b, "retired_pages", h->index, GS_CHECK_FAIL, detail),
               "reset: GPU %d has a page retirement pending; reload the driver or reset the GPU",
               h->index);
    return;
  }
  gs_health_add(b, "retired_pages", h->index, GS_CHECK_PASS, detail);
}

static void judge_remap(builder *b, const gs_gpu_health *h) {
  char detail[400];
  if (!h->has_remap) {
    gs_health_add(b, "row_remap", h->index, GS_CHECK_NA,
                  "row remapping not reported (GPUs before Ampere)");
    return;
  }
  snprintf(detail, sizeof detail, "%u rows remapped for uncorrectable, %u for correctable errors%s%s",
           h->remap_uncorrected, h->remap_corrected, h->remap_pending ? "; a remap is pending" : "",
           h->remap_failed ? "; a remap failed" : "");
  if (h->remap_failed) {
    gs_health_action(gs_health_add(b, "row_remap", h->index, GS_CHECK_FAIL, detail),
               "replace: row remapping failed on GPU %d (no spare row left)", h->index);
  } else if (h->remap_pending) {
    // NVML gives whether a remap waits, not how many: the count is of all
    // rows remapped for uncorrectable errors, applied or not.
    gs_health_action(gs_health_add(b, "row_remap", h->index, GS_CHECK_FAIL, detail),
               "reset: row remap pending on GPU %d (%u rows remapped for uncorrectable "
               "errors); reset the GPU to apply it", h->index, h->remap_uncorrected);
  } else {
    gs_health_add(b, "row_remap", h->index, GS_CHECK_PASS, detail);
  }
}

/* "3" or "3, 7" into out. */
static void link_list(const int *flag, size_t count, char *out, size_t size, size_t *listed) {
  size_t used = 0;
  *listed = 0;
  out[0] = '\0';
  for (size_t l = 0; l < count; l++) {
    if (!flag[l]) continue;
    int n = snprintf(out + used, size - used, "%s%zu", *listed ? ", " : "", l);
    if (n < 0 || (size_t)n >= size - used) break;
    used += (size_t)n;
    (*listed)++;
  }
}

static void judge_nvlink(builder *b, const gs_gpu_health *h) {
  size_t up = 0, present = 0;
  int down[GS_HEALTH_MAX_LINKS] = {0}, recovering[GS_HEALTH_MAX_LINKS] = {0};
  unsigned long long replay = 0, recovery = 0, crc = 0;
  for (size_t l = 0; l < h->port_count; l++) {
    if (!h->port_present[l]) continue;
    present++;
    if (h->link_up[l]) up++;
    else down[l] = 1;
    const gs_health_link_errors *e = &h->link_errors[l];
    if (!e->has_counters) continue;
    replay += e->replay;
    recovery += e->recovery;
    crc += e->crc_flit + e->crc_data;
    if (e->recovery > 0) recovering[l] = 1;
  }
  if (present == 0 || up == 0) {
    gs_health_add(b, "nvlink", h->index, GS_CHECK_NA,
        present ? "no NVLink port active: not connected by NVLink" : "no NVLink ports");
    return;
  }
  char detail[400], list[128];
  size_t listed = 0;
  snprintf(detail, sizeof detail,
           "%zu of %zu links up; since boot %llu replays, %llu recoveries, %llu CRC errors", up,
           present, replay, recovery, crc);
  if (up < present) {
    link_list(down, h->port_count, list, sizeof list, &listed);
    gs_health_action(gs_health_add(b, "nvlink", h->index, GS_CHECK_FAIL, detail),
                     "drain: NVLink%s %s of GPU %d down", listed > 1 ? "s" : "", list, h->index);
  } else if (recovery > 0) {
    link_list(recovering, h->port_count, list, sizeof list, &listed);
    gs_health_action(gs_health_add(b, "nvlink", h->index, GS_CHECK_WARN, detail),
               "investigate: NVLink%s %s of GPU %d recovered from %llu link errors",
               listed > 1 ? "s" : "", list, h->index, recovery);
  } else {
    gs_health_add(b, "nvlink", h->index, GS_CHECK_PASS, detail);
  }
}

static void judge_pcie(builder *b, const gs_gpu_health *h) {
  char detail[400];
  if (!h->has_pcie) {
    gs_health_add(b, "pcie", h->index, GS_CHECK_NA, "PCIe link not reported");
    return;
  }
  snprintf(detail, sizeof detail, "gen %u x%u of gen %u x%u%s", h->pcie_gen, h->pcie_width,
           h->pcie_gen_max, h->pcie_width_max,
           h->pcie_gen < h->pcie_gen_max ? " (an idle GPU lowers its generation to save power)"
                                          : "");
  // The width is trained once and does not drop to save power: fewer lanes
  // is a seating, riser or slot fault. The generation does drop when idle.
  if (h->pcie_width < h->pcie_width_max) {
    gs_health_action(gs_health_add(b, "pcie", h->index, GS_CHECK_FAIL, detail),
               "reseat or replace: GPU %d at PCIe x%u of x%u", h->index, h->pcie_width,
               h->pcie_width_max);
    return;
  }
  gs_health_add(b, "pcie", h->index, GS_CHECK_PASS, detail);
}

static void judge_clocks(builder *b, const gs_gpu_health *h) {
  char detail[400];
  if (!h->has_clock_events) {
    gs_health_add(b, "clocks", h->index, GS_CHECK_NA, "clock event reasons not reported");
    return;
  }
  unsigned long long r = h->clock_events;
  snprintf(detail, sizeof detail, "clock event reasons 0x%llx%s", r,
           r & EVENT_SW_POWER_CAP ? " (software power cap: normal under load)" : "");
  const char *hw = r & EVENT_HW_SLOWDOWN      ? "hardware slowdown (hw_slowdown)"
                   : r & EVENT_HW_THERMAL     ? "hardware thermal slowdown (hw_thermal_slowdown)"
                   : r & EVENT_HW_POWER_BRAKE ? "external power brake (hw_power_brake_slowdown)"
                                              : NULL;
  if (hw) {
    gs_health_action(gs_health_add(b, "clocks", h->index, GS_CHECK_FAIL, detail),
               "investigate cooling and power: GPU %d in %s", h->index, hw);
  } else if (r & EVENT_SW_THERMAL) {
    gs_health_action(gs_health_add(b, "clocks", h->index, GS_CHECK_WARN, detail),
               "investigate cooling: GPU %d slowed by its thermal limit (sw_thermal_slowdown)",
               h->index);
  } else {
    gs_health_add(b, "clocks", h->index, GS_CHECK_PASS, detail);
  }
}

/* XIDs whose meaning decides the action (NVIDIA's "XID Errors" document,
 * docs.nvidia.com/deploy/xid-errors); any other is investigated. The
 * application-side ones warn: a user's kernel can raise them on a healthy
 * GPU. */
static const struct {
  unsigned xid;
  gs_check_state state;
  const char *verb, *what;
} xid_table[] = {
    {13, GS_CHECK_WARN, "investigate", "graphics engine exception, often an application fault"},
    {31, GS_CHECK_WARN, "investigate", "GPU memory page fault, often an application fault"},
    {43, GS_CHECK_WARN, "investigate", "GPU stopped processing, often an application fault"},
    {45, GS_CHECK_WARN, "investigate", "preemptive cleanup after an earlier error"},
    {48, GS_CHECK_FAIL, "drain and reset", "double-bit ECC error"},
    {63, GS_CHECK_FAIL, "reset", "row remap pending"},
    {64, GS_CHECK_FAIL, "replace", "row remap failure"},
    {74, GS_CHECK_FAIL, "drain", "NVLink error"},
    {79, GS_CHECK_FAIL, "drain, reseat or replace", "GPU has fallen off the bus"},
    {92, GS_CHECK_WARN, "investigate", "high single-bit ECC error rate"},
    {94, GS_CHECK_FAIL, "reset", "contained ECC error"},
    {95, GS_CHECK_FAIL, "drain and reset", "uncontained ECC error"},
    {119, GS_CHECK_FAIL, "drain and reset", "GSP RPC timeout"},
    {120, GS_CHECK_FAIL, "drain and reset", "GSP error"},
};

/* One finding per XID event seen during the check; one pass when none. */
static void judge_xid(builder *b, const gs_node_state *s) {
  char detail[400];
  if (!s->xid_watched) {
    snprintf(detail, sizeof detail, "XID events not watched: %s", s->xid_why);
    gs_health_add(b, "xid", -1, GS_CHECK_NA, detail);
    return;
  }
  if (s->xid_count == 0) {
    snprintf(detail, sizeof detail, "no XID event in the %.2f s of the check", s->xid_seconds);
    gs_health_add(b, "xid", -1, GS_CHECK_PASS, detail);
    return;
  }
  const size_t kept = s->xid_count < GS_HEALTH_MAX_XIDS ? s->xid_count : GS_HEALTH_MAX_XIDS;
  for (size_t i = 0; i < kept; i++) {
    const gs_health_xid *x = &s->xids[i];
    int gpu = -1;
    for (size_t g = 0; g < s->gpu_count && gpu < 0; g++)
      if (gs_health_same_bus(x->pci_bus_id, s->gpus[g].pci_bus_id)) gpu = s->gpus[g].index;
    size_t k = 0;
    while (k < sizeof xid_table / sizeof xid_table[0] && xid_table[k].xid != x->xid) k++;
    const int known = k < sizeof xid_table / sizeof xid_table[0];
    snprintf(detail, sizeof detail, "XID %llu (%s) at %s during the check%s", x->xid,
             known ? xid_table[k].what : "see NVIDIA's XID list",
             x->pci_bus_id[0] ? x->pci_bus_id : "an unknown GPU",
             i + 1 == kept && s->xid_count > kept ? "; more events not kept" : "");
    char who[32];
    if (gpu >= 0) snprintf(who, sizeof who, "GPU %d", gpu);
    else snprintf(who, sizeof who, "a GPU");
    gs_health_action(gs_health_add(b, "xid", gpu, known ? xid_table[k].state : GS_CHECK_FAIL,
                                   detail),
                     "%s: %s reported XID %llu (%s)", known ? xid_table[k].verb : "investigate",
                     who, x->xid, known ? xid_table[k].what : "see NVIDIA's XID list");
  }
}

static void judge_node(builder *b, const gs_node_state *s, size_t expect_gpus,
                       const gs_check_models *models);
static void count_states(gs_health_verdict *v);

gs_status gs_health_judge(const gs_node_state *s, size_t expect_gpus,
                          const gs_check_models *models, gs_health_verdict *v) {
  memset(v, 0, sizeof *v);
  builder b = {.v = v};
  if (!s->hung[0] && s->gpu_count == 0 && s->cuda_count == 0 && expect_gpus == 0) {
    snprintf(v->why, sizeof v->why, "no GPU: %s; CUDA: %s",
             s->nvml_loaded ? "NVML lists none" : s->nvml_status,
             s->cuda_status[0] ? s->cuda_status : "no device");
    return GS_OK;
  }
  v->applicable = 1;
  if (s->hung[0]) {
    // Nothing else was read: a GPU that hangs its driver is the finding.
    char detail[400];
    snprintf(detail, sizeof detail, "no answer from %s within the %g s budget", s->hung,
             s->budget_s);
    gs_health_action(gs_health_add(&b, "budget", -1, GS_CHECK_FAIL, detail), "drain: %s", detail);
  } else {
    judge_node(&b, s, expect_gpus, models);
  }
  if (b.failed) return gs_error(GS_ERR_NOMEM, "out of memory judging the node");
  count_states(v);
  return GS_OK;
}

/* Every check of a state that was read in full. */
static void judge_node(builder *b, const gs_node_state *s, size_t expect_gpus,
                       const gs_check_models *models) {
  judge_inventory(b, s, expect_gpus);
  judge_software(b, s);
  if (!s->nvml_loaded)
    gs_health_action(gs_health_add(b, "passive", -1, GS_CHECK_WARN, s->nvml_status),
               "investigate: NVML unavailable, so no GPU's passive state was read");
  for (size_t i = 0; i < s->gpu_count; i++) {
    const gs_gpu_health *h = &s->gpus[i];
    judge_ecc(b, h);
    judge_retired(b, h);
    judge_remap(b, h);
    judge_nvlink(b, h);
    judge_pcie(b, h);
    judge_clocks(b, h);
    gs_health_judge_model(b, h, models);
  }
  gs_health_judge_stress(b, s, models);
  gs_health_judge_burn(b, s);
  if (s->nvml_loaded) judge_xid(b, s);
}

/* The counts and the worst state of the findings. */
static void count_states(gs_health_verdict *v) {
  v->overall = GS_CHECK_NA;
  for (size_t i = 0; i < v->n; i++) {
    gs_check_state st = v->items[i].state;
    if (st == GS_CHECK_PASS) v->passed++;
    if (st == GS_CHECK_WARN) v->warned++;
    if (st == GS_CHECK_FAIL) v->failed++;
    if (st > v->overall) v->overall = st;
  }
}

void gs_health_verdict_free(gs_health_verdict *v) {
  free(v->items);
  v->items = NULL;
  v->n = 0;
}

gs_status gs_health_verdict_status(const gs_health_verdict *v) {
  if (v->overall != GS_CHECK_FAIL && v->overall != GS_CHECK_WARN) return GS_OK;
  gs_check_state worst = v->overall;
  char list[GS_TEXT_LONG] = "";
  size_t used = 0, named = 0;
  for (size_t i = 0; i < v->n; i++) {
    const gs_health_finding *f = &v->items[i];
    if (f->state != worst) continue;
    char one[64];
    if (f->gpu >= 0) snprintf(one, sizeof one, "%s of GPU %d", f->check, f->gpu);
    else snprintf(one, sizeof one, "%s", f->check);
    int n = snprintf(list + used, sizeof list - used, "%s%s", named++ ? ", " : "", one);
    if (n < 0 || (size_t)n >= sizeof list - used) break;
    used += (size_t)n;
  }
  if (worst == GS_CHECK_FAIL)
    return gs_error(GS_NODE_FAIL, "node check failed: %s", list);
  return gs_error(GS_NODE_WARN, "node check warned: %s", list);
}
