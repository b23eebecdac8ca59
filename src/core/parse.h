/* Strict parsing of numbers and lists from command-line text. Every parser
 * rejects empty text, trailing characters, overflow and out-of-range values
 * with a GS_ERR_USAGE error that names the option. */
#ifndef GS_PARSE_H
#define GS_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define GS_LIST_MAX 64

/* A short list of unsigned integers, e.g. "--gpus 0,1,3". */
typedef struct {
  size_t n;
  uint64_t v[GS_LIST_MAX];
} gs_u64_list;

/* A short list of doubles, e.g. a per-axis voxel size "0.1,0.1,0.2". */
typedef struct {
  size_t n;
  double v[GS_LIST_MAX];
} gs_double_list;

/* Unsigned integer with an optional decimal suffix K (1e3), M (1e6) or
 * G (1e9), e.g. "10M" = 10000000. Accepts min <= value <= max. */
gs_status gs_parse_count(const char *text, const char *option, uint64_t min, uint64_t max,
                         uint64_t *out);

/* Byte size with an optional binary suffix K, M or G (1024, 1024^2, 1024^3)
 * and optional trailing "B" or "iB", e.g. "64M" = 67108864. */
gs_status gs_parse_size(const char *text, const char *option, uint64_t min, uint64_t max,
                        uint64_t *out);

/* Finite floating-point number with min <= value <= max. */
gs_status gs_parse_double(const char *text, const char *option, double min, double max,
                          double *out);

/* Comma-separated list of counts (each parsed as gs_parse_count), at least
 * one and at most GS_LIST_MAX entries. */
gs_status gs_parse_count_list(const char *text, const char *option, uint64_t min, uint64_t max,
                              gs_u64_list *out);

/* Comma-separated list of finite doubles (at most GS_LIST_MAX). */
gs_status gs_parse_double_list(const char *text, const char *option, double min, double max,
                               gs_double_list *out);

/* Index of `text` in the NULL-terminated `choices`; an error listing the
 * valid choices otherwise. */
gs_status gs_parse_choice(const char *text, const char *option, const char *const *choices,
                          int *out);

#endif
