/* Input pattern and expected results of collective checks, with host
 * encoding of half and bfloat16 (docs/collectives.md, "Checking"). */
#include "runner/coll_data.h"

#include <math.h>
#include <string.h>

double gs_coll_input_value(gs_redop redop, int rank, uint64_t index) {
  // Products use 1 and 2 only, so that they stay exact for many ranks.
  if (redop == GS_REDOP_PROD) return (double)(1 + ((uint64_t)rank + index) % 2);
  return (double)(1 + ((uint64_t)rank * 3 + index * 7) % 11);
}

/* IEEE binary16 from a float, rounding to nearest even; values beyond the
 * range become infinity, values below it zero. */
static uint16_t half_from_float(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  int exponent = (int)((x >> 23) & 0xffu) - 127 + 15;
  uint32_t mantissa = x & 0x7fffffu;
  if (((x >> 23) & 0xffu) == 0xffu) return (uint16_t)(sign | 0x7c00u | (mantissa ? 0x200u : 0));
  if (exponent >= 31) return (uint16_t)(sign | 0x7c00u);
  if (exponent <= 0) return sign;
  uint32_t h = ((uint32_t)exponent << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}

static double half_to_double(uint16_t h) {
  int exponent = (h >> 10) & 0x1f;
  double mantissa = (double)(h & 0x3ff);
  double sign = (h & 0x8000u) ? -1.0 : 1.0;
  if (exponent == 0) return sign * mantissa * ldexp(1.0, -24);
  if (exponent == 31) return mantissa != 0.0 ? NAN : sign * INFINITY;
  return sign * (1.0 + mantissa / 1024.0) * ldexp(1.0, exponent - 15);
}

static uint16_t bfloat16_from_float(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

static double bfloat16_to_double(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, sizeof f);
  return (double)f;
}

void gs_coll_store(void *buf, size_t i, gs_dtype dtype, double v) {
  switch (dtype) {
    case GS_DTYPE_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case GS_DTYPE_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case GS_DTYPE_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case GS_DTYPE_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case GS_DTYPE_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case GS_DTYPE_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case GS_DTYPE_HALF: ((uint16_t *)buf)[i] = half_from_float((float)v); break;
    case GS_DTYPE_BFLOAT16: ((uint16_t *)buf)[i] = bfloat16_from_float((float)v); break;
    case GS_DTYPE_FLOAT: ((float *)buf)[i] = (float)v; break;
    case GS_DTYPE_DOUBLE: ((double *)buf)[i] = v; break;
    case GS_DTYPE_COUNT: break;
  }
}

double gs_coll_element(const void *buf, size_t i, gs_dtype dtype) {
  switch (dtype) {
    case GS_DTYPE_INT8: return ((const int8_t *)buf)[i];
    case GS_DTYPE_UINT8: return ((const uint8_t *)buf)[i];
    case GS_DTYPE_INT32: return ((const int32_t *)buf)[i];
    case GS_DTYPE_UINT32: return ((const uint32_t *)buf)[i];
    case GS_DTYPE_INT64: return (double)((const int64_t *)buf)[i];
    case GS_DTYPE_UINT64: return (double)((const uint64_t *)buf)[i];
    case GS_DTYPE_HALF: return half_to_double(((const uint16_t *)buf)[i]);
    case GS_DTYPE_BFLOAT16: return bfloat16_to_double(((const uint16_t *)buf)[i]);
    case GS_DTYPE_FLOAT: return ((const float *)buf)[i];
    case GS_DTYPE_DOUBLE: return ((const double *)buf)[i];
    case GS_DTYPE_COUNT: break;
  }
  return NAN;
}

void gs_coll_fill(void *buf, size_t count, gs_dtype dtype, gs_redop redop, int rank,
                  uint64_t first) {
  for (size_t i = 0; i < count; i++)
    gs_coll_store(buf, i, dtype, gs_coll_input_value(redop, rank, first + i));
}

static int is_integer(gs_dtype dtype) {
  return dtype <= GS_DTYPE_UINT64;
}

/* An integer result wrapped to the width and signedness of dtype. */
static double wrap_integer(uint64_t v, gs_dtype dtype) {
  switch (dtype) {
    case GS_DTYPE_INT8: return (int8_t)(uint8_t)v;
    case GS_DTYPE_UINT8: return (uint8_t)v;
    case GS_DTYPE_INT32: return (int32_t)(uint32_t)v;
    case GS_DTYPE_UINT32: return (uint32_t)v;
    case GS_DTYPE_INT64: return (double)(int64_t)v;
    default: return (double)v;
  }
}

/* The reduction over ranks of input element `index` as the device computes
 * it: integers wrap, avg divides the (wrapped) sum and truncates. */
static double expected_reduction(const gs_coll_case *c, uint64_t index) {
  if (is_integer(c->dtype)) {
    uint64_t acc = (uint64_t)gs_coll_input_value(c->redop, 0, index);
    for (int r = 1; r < c->ranks; r++) {
      uint64_t v = (uint64_t)gs_coll_input_value(c->redop, r, index);
      switch (c->redop) {
        case GS_REDOP_PROD: acc *= v; break;
        case GS_REDOP_MAX: acc = v > acc ? v : acc; break;
        case GS_REDOP_MIN: acc = v < acc ? v : acc; break;
        default: acc += v; break;
      }
    }
    double wrapped = wrap_integer(acc, c->dtype);
    return c->redop == GS_REDOP_AVG ? trunc(wrapped / c->ranks) : wrapped;
  }
  double acc = gs_coll_input_value(c->redop, 0, index);
  for (int r = 1; r < c->ranks; r++) {
    double v = gs_coll_input_value(c->redop, r, index);
    switch (c->redop) {
      case GS_REDOP_PROD: acc *= v; break;
      case GS_REDOP_MAX: acc = fmax(acc, v); break;
      case GS_REDOP_MIN: acc = fmin(acc, v); break;
      default: acc += v; break;
    }
  }
  return c->redop == GS_REDOP_AVG ? acc / c->ranks : acc;
}

/* Element i of this rank's receive buffer as the op's descriptor sources
 * it: block i / count of the result, from a rank's send block or the
 * reduction over ranks. sendrecv's ranks form coll's ring: each receives
 * from rank - 1. */
static double expected_element(const gs_coll_case *c, size_t i) {
  const gs_coll_desc *d = gs_coll_desc_of(c->op);
  uint64_t per = c->shape->param_count;
  gs_coll_who who = {.rank = c->rank,
                     .ranks = c->ranks,
                     .root = c->root,
                     .recv_peer = (c->rank + c->ranks - 1) % c->ranks};
  gs_coll_source from;
  d->source(&who, (size_t)(i / per), &from);
  uint64_t index = (uint64_t)from.block * per + i % per;
  if (from.reduced) return expected_reduction(c, index);
  return gs_coll_input_value(c->redop, from.rank, index);
}

static double relative_tolerance(gs_dtype dtype) {
  switch (dtype) {
    case GS_DTYPE_HALF: return 1e-3;
    case GS_DTYPE_BFLOAT16: return 1e-2;
    case GS_DTYPE_FLOAT: return 1e-6;
    case GS_DTYPE_DOUBLE: return 1e-12;
    default: return 0.0;
  }
}

uint64_t gs_coll_count_wrong(const gs_coll_case *c, const void *recv) {
  if (gs_coll_desc_of(c->op)->root_only && c->rank != c->root) return 0;
  double tolerance = relative_tolerance(c->dtype);
  uint64_t wrong = 0;
  for (size_t i = 0; i < c->shape->recv_elements; i++) {
    double want = expected_element(c, i);
    double got = gs_coll_element(recv, i, c->dtype);
    if (is_integer(c->dtype)) {
      if (got != want) wrong++;
    } else {
      // Round the exact value through the type first, then allow its precision.
      double want_typed = want;
      if (isfinite(want)) {
        double cell[1];
        gs_coll_store(cell, 0, c->dtype, want);
        want_typed = gs_coll_element(cell, 0, c->dtype);
      }
      if (!(fabs(got - want_typed) <= tolerance * fmax(1.0, fabs(want_typed)))) wrong++;
    }
  }
  return wrong;
}
