/* Numbers for people (format.h): one unit per column, chosen so that the
 * smallest value reads at least 1 with 3 significant digits. */
#include "core/format.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  double scale;
  const char *symbol;
} unit_step;

static const unit_step seconds_steps[] = {{1e-9, "ns"}, {1e-6, "us"}, {1e-3, "ms"}, {1.0, "s"}};
static const unit_step rate_steps[] = {{1.0, ""},   {1e3, "K"},  {1e6, "M"},
                                       {1e9, "G"},  {1e12, "T"}, {1e15, "P"}};
static const unit_step bandwidth_steps[] = {{1.0, "B/s"},   {1e3, "KB/s"},  {1e6, "MB/s"},
                                            {1e9, "GB/s"},  {1e12, "TB/s"}, {1e15, "PB/s"}};
static const unit_step bytes_steps[] = {{1.0, "B"},
                                        {1024.0, "KiB"},
                                        {1048576.0, "MiB"},
                                        {1073741824.0, "GiB"},
                                        {1099511627776.0, "TiB"}};

static const unit_step *steps_of(gs_unit_kind kind, size_t *n) {
  switch (kind) {
    case GS_UNIT_SECONDS: *n = sizeof seconds_steps / sizeof *seconds_steps; return seconds_steps;
    case GS_UNIT_RATE: *n = sizeof rate_steps / sizeof *rate_steps; return rate_steps;
    case GS_UNIT_BANDWIDTH:
      *n = sizeof bandwidth_steps / sizeof *bandwidth_steps;
      return bandwidth_steps;
    case GS_UNIT_BYTES: break;
  }
  *n = sizeof bytes_steps / sizeof *bytes_steps;
  return bytes_steps;
}

/* Decimals that give `scaled` (> 0) 3 significant digits, at most 6. */
static int decimals_for(double scaled) {
  int d = 2 - (int)floor(log10(scaled));
  return d < 0 ? 0 : d > 6 ? 6 : d;
}

/* See format.h. */
gs_unit gs_unit_for(gs_unit_kind kind, const double *values, size_t n) {
  size_t n_steps;
  const unit_step *steps = steps_of(kind, &n_steps);
  double lo = INFINITY, hi = 0.0;
  int whole = 1;
  for (size_t i = 0; i < n; i++) {
    double a = fabs(values[i]);
    if (!isfinite(a) || a == 0.0) continue;
    lo = fmin(lo, a), hi = fmax(hi, a);
  }
  // Below the smallest unit (0.5 ns, a rate of 0.5/s) the smallest one is
  // kept, with more decimals; with no value at all, seconds or the base unit.
  size_t pick = 0;
  if (!isfinite(lo)) {
    pick = kind == GS_UNIT_SECONDS ? n_steps - 1 : 0;
  } else {
    for (size_t i = 0; i < n_steps; i++)
      if (lo >= steps[i].scale) pick = i;
  }
  gs_unit u = {.kind = kind, .scale = steps[pick].scale, .symbol = steps[pick].symbol};
  if (!isfinite(lo)) return u;
  u.per_value = hi / u.scale >= 1e4;
  for (size_t i = 0; i < n && kind == GS_UNIT_BYTES; i++)
    if (isfinite(values[i]) && values[i] / u.scale != floor(values[i] / u.scale)) whole = 0;
  u.decimals = kind == GS_UNIT_BYTES && whole ? 0 : decimals_for(lo / u.scale);
  return u;
}

/* See format.h. */
void gs_unit_format(const gs_unit *unit, double value, char *buf, size_t size) {
  if (!isfinite(value)) {
    snprintf(buf, size, "-");
    return;
  }
  if (value == 0.0) {
    snprintf(buf, size, "0");
    return;
  }
  gs_unit own;
  if (unit->per_value) {
    own = gs_unit_for(unit->kind, &value, 1);
    unit = &own;
  }
  snprintf(buf, size, "%.*f%s%s", unit->decimals, value / unit->scale, unit->symbol[0] ? " " : "",
           unit->symbol);
}

void gs_format_value(gs_unit_kind kind, double value, char *buf, size_t size) {
  gs_unit u = gs_unit_for(kind, &value, 1);
  gs_unit_format(&u, value, buf, size);
}

void gs_format_seconds(double seconds, char *buf, size_t size) {
  if (!(seconds >= 0.0) || !isfinite(seconds)) {
    snprintf(buf, size, "-");
    return;
  }
  gs_format_value(GS_UNIT_SECONDS, seconds, buf, size);
}

void gs_format_rate(double per_second, char *buf, size_t size) {
  if (!(per_second > 0.0) || !isfinite(per_second)) {
    snprintf(buf, size, "-");
    return;
  }
  // The prefix ends the text so that a caller appends its unit ("20.3 M" +
  // "points/s"); without a prefix a space stands in for it ("512 points/s").
  gs_unit u = gs_unit_for(GS_UNIT_RATE, &per_second, 1);
  gs_unit_format(&u, per_second, buf, size);
  if (!u.symbol[0]) {
    size_t len = strlen(buf);
    if (len + 1 < size) buf[len] = ' ', buf[len + 1] = '\0';
  }
}
