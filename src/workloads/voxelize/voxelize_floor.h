/* floor(d / v) in float32 without a division in the common case, equal bit
 * for bit to floorf(d / v) with the division rounded to nearest (the rule
 * of gs_voxelize_classify). Shared by the CUDA kernels (compiled by nvcc,
 * every operation an explicit round-to-nearest intrinsic, so no FMA can be
 * contracted) and the CPU test that checks the rule (tests/
 * test_voxelize_cpu.c), so both run the same code.
 *
 * Why it is exact: with r = fl(1/v) a normal float, q = fl(d * r) differs
 * from the correctly rounded t = fl(d / v) by at most 3.0001 * 2^-24 * |q|
 * plus 2^-148 (two roundings and r's own; a subnormal product adds at most
 * 2^-149). e = |q| * 2^-20 + 2^-100 is over four times that, so the real
 * interval [q - e, q + e] holds t; rounding is monotonic and t is a float,
 * so fl(q - e) <= t <= fl(q + e), and floor is monotonic: when the floors of
 * both ends agree, that is floor(t). Otherwise (t may be within e of an
 * integer, q is not finite, or r is not a normal float) the division is
 * made. A quotient of 2^24 or more has floats at least 2 apart, the two
 * ends differ, and the division is made too. */
#ifndef GS_VOXELIZE_FLOOR_H
#define GS_VOXELIZE_FLOOR_H

#ifdef __CUDACC__
#define GS_VOXELIZE_FLOOR_FN static __device__ __forceinline__
#define GS_VOXELIZE_MUL(a, b) __fmul_rn(a, b)
#define GS_VOXELIZE_ADD(a, b) __fadd_rn(a, b)
#define GS_VOXELIZE_SUB(a, b) __fsub_rn(a, b)
#define GS_VOXELIZE_DIV(a, b) __fdiv_rn(a, b)
#define GS_VOXELIZE_RCP(a) __frcp_rn(a)
#else
#include <math.h>
#define GS_VOXELIZE_FLOOR_FN static inline
/* A product stored through a volatile is rounded on its own, so that no
 * compiler contracts it with the next addition into an FMA. */
static inline float gs_voxelize_floor_mul(float a, float b) {
  volatile float p = a * b;
  return p;
}
#define GS_VOXELIZE_MUL(a, b) gs_voxelize_floor_mul(a, b)
#define GS_VOXELIZE_ADD(a, b) ((a) + (b))
#define GS_VOXELIZE_SUB(a, b) ((a) - (b))
#define GS_VOXELIZE_DIV(a, b) ((a) / (b))
#define GS_VOXELIZE_RCP(a) (1.0f / (a))
#endif

/* 2^-20 and 2^-100 as float literals. */
#define GS_VOXELIZE_FLOOR_REL 9.5367431640625e-07f
#define GS_VOXELIZE_FLOOR_ABS 7.8886090522101181e-31f

/* The reciprocal to pass to gs_voxelize_floor_quotient for divisor v > 0,
 * or 0 when fl(1/v) is not a normal float (then the division is always
 * made). */
GS_VOXELIZE_FLOOR_FN float gs_voxelize_floor_reciprocal(float v) {
  const float r = GS_VOXELIZE_RCP(v);
  return r >= 1.17549435e-38f && r <= 3.40282347e+38f ? r : 0.0f;
}

/* floorf(fl(d / v)) for finite d and v > 0, `r` from
 * gs_voxelize_floor_reciprocal(v). */
GS_VOXELIZE_FLOOR_FN float gs_voxelize_floor_quotient(float d, float v, float r) {
  if (r != 0.0f) {
    const float q = GS_VOXELIZE_MUL(d, r);
    const float e = GS_VOXELIZE_ADD(GS_VOXELIZE_MUL(fabsf(q), GS_VOXELIZE_FLOOR_REL),
                                    GS_VOXELIZE_FLOOR_ABS);
    const float lo = floorf(GS_VOXELIZE_SUB(q, e)), hi = floorf(GS_VOXELIZE_ADD(q, e));
    if (lo == hi) return lo;  // false when q is not finite (NaN ends)
  }
  return floorf(GS_VOXELIZE_DIV(d, v));
}

#endif
