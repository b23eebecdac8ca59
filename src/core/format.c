/* Numbers for people: seconds with a unit and rates with an SI prefix,
 * chosen so that each shows 3-4 significant digits. */
#include "core/format.h"

#include <math.h>
#include <stdio.h>

void gs_format_seconds(double seconds, char *buf, size_t size) {
  if (!(seconds >= 0.0) || !isfinite(seconds)) {
    snprintf(buf, size, "-");
  } else if (seconds < 1e-6) {
    snprintf(buf, size, "%.1f ns", seconds * 1e9);
  } else if (seconds < 1e-3) {
    snprintf(buf, size, "%.2f us", seconds * 1e6);
  } else if (seconds < 1.0) {
    snprintf(buf, size, "%.3f ms", seconds * 1e3);
  } else {
    snprintf(buf, size, "%.3f s", seconds);
  }
}

void gs_format_rate(double per_second, char *buf, size_t size) {
  static const char *const prefixes[] = {"", "K", "M", "G", "T", "P"};
  if (!(per_second > 0.0) || !isfinite(per_second)) {
    snprintf(buf, size, "-");
    return;
  }
  size_t p = 0;
  while (per_second >= 1000.0 && p + 1 < sizeof prefixes / sizeof prefixes[0]) {
    per_second /= 1000.0;
    p++;
  }
  snprintf(buf, size, "%.3g %s", per_second, prefixes[p]);
}
