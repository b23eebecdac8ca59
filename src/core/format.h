/* Numbers for people: the one rule by which every table and sentence of the
 * tool scales times (ns, us, ms, s), rates and counts (K, M, G, T: 10^3
 * steps) and sizes (KiB, MiB, GiB: 2^10 steps), per column or per value,
 * never in e-notation (docs/report.md, "Units"). */
#ifndef GS_FORMAT_H
#define GS_FORMAT_H

#include <stddef.h>

typedef enum {
  GS_UNIT_SECONDS = 0, /* "8.13 us", "16.4 ms" */
  GS_UNIT_RATE,        /* an SI prefix: "80.0 M", "512" (the unit is the caller's) */
  GS_UNIT_BANDWIDTH,   /* an SI prefix and B/s: "12.3 GB/s" */
  GS_UNIT_BYTES        /* a binary prefix and B: "8 B", "1 MiB", "1.5 KiB" */
} gs_unit_kind;

/* The unit of a column (or of one value): every value is divided by
 * `scale` and printed with `decimals` decimals and `symbol` after a space.
 * `per_value` is set when the column spans too many decades for one unit;
 * then each value is scaled on its own by the same rule. */
typedef struct {
  gs_unit_kind kind;
  int per_value;
  double scale;
  const char *symbol; /* "us", "M", "GB/s", "MiB", "" */
  int decimals;
} gs_unit;

/* The one rule: the largest unit in which the smallest non-zero magnitude of
 * `values[0..n)` reads at least 1 (so never "0.008 ms"), with the decimals
 * that give that value 3 significant digits (sizes: none when every value is
 * a whole multiple of the unit). When the largest magnitude would then need
 * more than 4 digits before the point, `per_value` is set. Non-finite values
 * are ignored; with none left the unit is the base unit. */
gs_unit gs_unit_for(gs_unit_kind kind, const double *values, size_t n);

/* `value` in `unit` into `buf` ("8.13 us"): "-" when not finite, "0" for
 * zero, the value's own unit (gs_unit_for over it alone) when
 * unit->per_value. */
void gs_unit_format(const gs_unit *unit, double value, char *buf, size_t size);

/* One value of `kind` by the same rule ("256 MiB", "12.3 GB/s"); "-" when
 * not finite. */
void gs_format_value(gs_unit_kind kind, double value, char *buf, size_t size);

/* One time by the same rule ("1.23 ms"); "-" for a negative or non-finite
 * value. */
void gs_format_seconds(double seconds, char *buf, size_t size);

/* One rate with its SI prefix last, for the caller's unit to follow ("6.48 G",
 * "512 " with a space where there is no prefix); "-" for zero, a negative or a
 * non-finite value. */
void gs_format_rate(double per_second, char *buf, size_t size);

#endif
