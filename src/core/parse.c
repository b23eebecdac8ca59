/* Strict parsing of command-line numbers, sizes, lists and choices. Every
 * value must be the whole text: no sign on unsigned numbers, no leading or
 * trailing blanks, no junk after the number, no overflow (also after a
 * K/M/G multiplier), and within [min, max]. Errors are GS_ERR_USAGE with a
 * message that names the option, quotes the text and says what was expected.
 * Suffix letters are case-insensitive: "10k" = "10K", "64mib" = "64MiB".
 * Doubles are plain decimals: "inf", "nan" and hexadecimal are refused. */
#include "core/parse.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT_EXAMPLE "expected e.g. 100 or 10K"
#define SIZE_EXAMPLE "expected bytes, e.g. 4096, 64K, 64MiB or 1G"
#define DOUBLE_EXAMPLE "expected e.g. 0.5 or 1e-3"

_Static_assert(sizeof(unsigned long long) == sizeof(uint64_t),
               "strtoull must cover exactly the uint64_t range");

/* Longest list entry we copy out for parsing; longer ones cannot be valid. */
#define LIST_ENTRY_MAX 128

/* The option name for messages; "value" when the caller gave none. */
static const char *option_label(const char *option) {
  return option != NULL && option[0] != '\0' ? option : "value";
}

/* Parses the leading decimal digits of text into *value and sets *end after
 * them. Returns 0 when text does not start with a digit, -1 on overflow,
 * 1 on success. strtoull alone would skip blanks and accept a sign. */
static int parse_digits(const char *text, uint64_t *value, const char **end) {
  if (!isdigit((unsigned char)text[0])) return 0;
  char *stop = NULL;
  errno = 0;
  unsigned long long v = strtoull(text, &stop, 10);
  if (errno == ERANGE) return -1;
  *value = (uint64_t)v;
  *end = stop;
  return 1;
}

/* Multiplier of a K/M/G letter (either case), or 0 for any other character. */
static uint64_t suffix_multiplier(char c, uint64_t base) {
  switch (c) {
    case 'k': case 'K': return base;
    case 'm': case 'M': return base * base;
    case 'g': case 'G': return base * base * base;
    default: return 0;
  }
}

/* Checks min <= value <= max, quoting the text when it had a suffix. */
static gs_status check_u64_range(const char *text, const char *option, uint64_t value,
                                 uint64_t min, uint64_t max, int had_suffix) {
  if (value >= min && value <= max) return GS_OK;
  const char *which = value < min ? "below the minimum" : "above the maximum";
  uint64_t bound = value < min ? min : max;
  if (had_suffix)
    return gs_error(GS_ERR_USAGE, "option %s: '%s' (= %" PRIu64 ") is %s %" PRIu64,
                    option_label(option), text, value, which, bound);
  return gs_error(GS_ERR_USAGE, "option %s: %" PRIu64 " is %s %" PRIu64, option_label(option),
                  value, which, bound);
}

/* Shared body of counts and sizes: digits, an optional K/M/G multiplier of
 * `base`, and for sizes an optional "B" or (after K/M/G) "iB". */
static gs_status parse_scaled(const char *text, const char *option, uint64_t min, uint64_t max,
                              uint64_t base, int is_size, uint64_t *out) {
  const char *expected = is_size ? SIZE_EXAMPLE : COUNT_EXAMPLE;
  const char *what = is_size ? "a size" : "a whole number";
  if (text == NULL || text[0] == '\0')
    return gs_error(GS_ERR_USAGE, "option %s: empty value (%s)", option_label(option), expected);
  uint64_t value = 0;
  const char *end = text;
  int rc = parse_digits(text, &value, &end);
  if (rc == 0)
    return gs_error(GS_ERR_USAGE, "option %s: '%s' is not %s (%s)", option_label(option), text,
                    what, expected);
  if (rc < 0)
    return gs_error(GS_ERR_USAGE, "option %s: '%s' is too large (the maximum is %" PRIu64 ")",
                    option_label(option), text, max);

  int had_suffix = *end != '\0';
  uint64_t mult = suffix_multiplier(*end, base);
  if (mult != 0) end++;
  if (is_size) {
    if (*end == 'B' || *end == 'b')
      end++;
    else if (mult != 0 && (*end == 'i' || *end == 'I') && (end[1] == 'B' || end[1] == 'b'))
      end += 2;
  }
  if (*end != '\0')
    return gs_error(GS_ERR_USAGE, "option %s: '%s' is not %s (%s)", option_label(option), text,
                    what, expected);
  if (mult != 0) {
    if (value > UINT64_MAX / mult)
      return gs_error(GS_ERR_USAGE, "option %s: '%s' is too large (the maximum is %" PRIu64 ")",
                      option_label(option), text, max);
    value *= mult;
  }
  gs_status st = check_u64_range(text, option, value, min, max, had_suffix);
  if (st != GS_OK) return st;
  *out = value;
  return GS_OK;
}

gs_status gs_parse_count(const char *text, const char *option, uint64_t min, uint64_t max,
                         uint64_t *out) {
  return parse_scaled(text, option, min, max, 1000u, 0, out);
}

gs_status gs_parse_size(const char *text, const char *option, uint64_t min, uint64_t max,
                        uint64_t *out) {
  return parse_scaled(text, option, min, max, 1024u, 1, out);
}

/* Shortest of %.15g / %.17g that reads back as the same double. */
static void format_double(double v, char *buf, size_t size) {
  snprintf(buf, size, "%.15g", v);
  if (strtod(buf, NULL) != v) snprintf(buf, size, "%.17g", v);
}

gs_status gs_parse_double(const char *text, const char *option, double min, double max,
                          double *out) {
  if (text == NULL || text[0] == '\0')
    return gs_error(GS_ERR_USAGE, "option %s: empty value (%s)", option_label(option),
                    DOUBLE_EXAMPLE);
  // strtod would also skip blanks and accept "inf", "nan" and hexadecimal;
  // a plain decimal starts with an optional sign, then a digit or a point.
  const char *p = text;
  if (*p == '+' || *p == '-') p++;
  int starts_ok = isdigit((unsigned char)p[0]) ||
                  (p[0] == '.' && isdigit((unsigned char)p[1]));
  if (!starts_ok || strpbrk(text, "xX") != NULL)
    return gs_error(GS_ERR_USAGE, "option %s: '%s' is not a number (%s)", option_label(option),
                    text, DOUBLE_EXAMPLE);
  char *end = NULL;
  errno = 0;
  double value = strtod(text, &end);
  if (end == text || *end != '\0')
    return gs_error(GS_ERR_USAGE, "option %s: '%s' is not a number (%s)", option_label(option),
                    text, DOUBLE_EXAMPLE);
  if (errno == ERANGE || !isfinite(value))
    return gs_error(GS_ERR_USAGE, "option %s: '%s' is out of the range of a double",
                    option_label(option), text);
  if (value < min || value > max) {
    char bound[32];
    format_double(value < min ? min : max, bound, sizeof bound);
    return gs_error(GS_ERR_USAGE, "option %s: %s is %s %s", option_label(option), text,
                    value < min ? "below the minimum" : "above the maximum", bound);
  }
  *out = value;
  return GS_OK;
}

/* Copies list entry [begin, end) of text into buf as a C string. Fails on an
 * empty entry or one too long to be a valid number. */
static gs_status list_entry(const char *text, const char *option, const char *begin,
                            const char *end, size_t index, char *buf, size_t size) {
  size_t len = (size_t)(end - begin);
  if (len == 0)
    return gs_error(GS_ERR_USAGE, "option %s: '%s' has an empty entry at position %zu",
                    option_label(option), text, index + 1);
  if (len >= size)
    return gs_error(GS_ERR_USAGE, "option %s: entry %zu of '%s' is too long", option_label(option),
                    index + 1, text);
  memcpy(buf, begin, len);
  buf[len] = '\0';
  return GS_OK;
}

/* Walks the comma-separated entries of text, calling parse_one on each.
 * `parse_one` stores entry `index`; the list holds at most GS_LIST_MAX. */
static gs_status parse_list(const char *text, const char *option, size_t *count,
                            gs_status (*parse_one)(const char *entry, const char *option,
                                                   size_t index, void *ctx),
                            void *ctx) {
  if (text == NULL || text[0] == '\0')
    return gs_error(GS_ERR_USAGE, "option %s: empty list (expected e.g. 1,2,4)",
                    option_label(option));
  char entry[LIST_ENTRY_MAX];
  size_t n = 0;
  const char *begin = text;
  for (;;) {
    const char *comma = strchr(begin, ',');
    const char *end = comma != NULL ? comma : begin + strlen(begin);
    if (n == GS_LIST_MAX)
      return gs_error(GS_ERR_USAGE, "option %s: more than %d entries in '%s'",
                      option_label(option), GS_LIST_MAX, text);
    gs_status st = list_entry(text, option, begin, end, n, entry, sizeof entry);
    if (st != GS_OK) return st;
    st = parse_one(entry, option, n, ctx);
    if (st != GS_OK) return st;
    n++;
    if (comma == NULL) break;
    begin = comma + 1;
  }
  *count = n;
  return GS_OK;
}

/* Bounds and destination shared by the list entry parsers. */
typedef struct {
  uint64_t min, max;
  double dmin, dmax;
  void *list;
} gs_list_ctx;

static gs_status parse_count_entry(const char *entry, const char *option, size_t index,
                                   void *ctx) {
  gs_list_ctx *c = ctx;
  gs_u64_list *list = c->list;
  return gs_parse_count(entry, option, c->min, c->max, &list->v[index]);
}

static gs_status parse_double_entry(const char *entry, const char *option, size_t index,
                                    void *ctx) {
  gs_list_ctx *c = ctx;
  gs_double_list *list = c->list;
  return gs_parse_double(entry, option, c->dmin, c->dmax, &list->v[index]);
}

gs_status gs_parse_count_list(const char *text, const char *option, uint64_t min, uint64_t max,
                              gs_u64_list *out) {
  gs_u64_list tmp;
  gs_list_ctx ctx = {.min = min, .max = max, .list = &tmp};
  gs_status st = parse_list(text, option, &tmp.n, parse_count_entry, &ctx);
  if (st == GS_OK) *out = tmp;
  return st;
}

gs_status gs_parse_double_list(const char *text, const char *option, double min, double max,
                               gs_double_list *out) {
  gs_double_list tmp;
  gs_list_ctx ctx = {.dmin = min, .dmax = max, .list = &tmp};
  gs_status st = parse_list(text, option, &tmp.n, parse_double_entry, &ctx);
  if (st == GS_OK) *out = tmp;
  return st;
}

gs_status gs_parse_choice(const char *text, const char *option, const char *const *choices,
                          int *out) {
  if (choices == NULL || choices[0] == NULL)
    GS_BUG("option %s: no choices defined", option_label(option));
  if (text != NULL) {
    for (int i = 0; choices[i] != NULL; i++) {
      if (strcmp(text, choices[i]) == 0) {
        *out = i;
        return GS_OK;
      }
    }
  }
  char list[512] = "";
  size_t used = 0;
  for (int i = 0; choices[i] != NULL && used + 1 < sizeof list; i++) {
    int w = snprintf(list + used, sizeof list - used, "%s%s", i > 0 ? ", " : "", choices[i]);
    if (w < 0) break;
    used += (size_t)w;
  }
  return gs_error(GS_ERR_USAGE, "option %s: '%s' is not one of: %s", option_label(option),
                  text != NULL ? text : "", list);
}
