#pragma once
// exp for float, vectorized by construction: loops over exp(x − shift) use GCC/Clang vector types
// of the build's width (f32v: kLanes floats, target.h's TFM_SIMD_BYTES: one zmm register with
// AVX-512, one ymm with AVX2, one xmm or NEON register at the baseline), because the
// auto-vectorizer left the exp loops scalar. exp(x) = 2^n · 2^f: x·log2(e) is rounded to an
// integer n (the 1.5·2^23 trick), 2^f = e^(f ln 2) for |f| ≤ ½ comes from a degree-6 polynomial
// (Taylor coefficients; relative error below 2e-7), and 2^n from the exponent bits. Inputs below
// −87 give 0, as a masked softmax needs; the kernels call it on x ≤ 0 (after subtracting a row
// maximum). Double keeps std::exp: the finite-difference checks run in double.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

constexpr int kLanes = TFM_SIMD_BYTES / 4;
using f32v = float __attribute__((vector_size(TFM_SIMD_BYTES)));
using i32v = int32_t __attribute__((vector_size(TFM_SIMD_BYTES)));

inline f32v expv(f32v x) {
  const f32v lo = f32v{} - 87.0f, hi = f32v{} + 88.0f;
  x = x < lo ? lo : x;
  x = x > hi ? hi : x;
  const f32v t = x * 1.44269504088896341f;          // x · log2(e)
  const f32v n = (t + 12582912.0f) - 12582912.0f;    // round to nearest (|t| < 2^22)
  const f32v f = (t - n) * 0.693147180559945309f;    // e^f with |f| ≤ ln 2 / 2
  f32v p = f32v{} + 1.0f / 720.0f;
  p = p * f + 1.0f / 120.0f;
  p = p * f + 1.0f / 24.0f;
  p = p * f + 1.0f / 6.0f;
  p = p * f + 0.5f;
  p = p * f + 1.0f;
  p = p * f + 1.0f;
  const i32v bits = (__builtin_convertvector(n, i32v) + 127) << 23;  // 2^n
  const f32v r = p * __builtin_bit_cast(f32v, bits);
  return x <= lo ? f32v{} : r;
}

inline f32v loadv(const float* p) {
  f32v v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void storev(float* p, f32v v) { std::memcpy(p, &v, sizeof v); }
// Σ of the lanes, by halves (a fixed order per build).
inline float sumv(f32v v) {
#if TFM_SIMD_BYTES == 64
  const auto h = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                 __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const auto q = __builtin_shufflevector(h, h, 0, 1, 2, 3) + __builtin_shufflevector(h, h, 4, 5, 6, 7);
#elif TFM_SIMD_BYTES == 32
  const auto q = __builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7);
#else
  const f32v q = v;
#endif
  return (q[0] + q[2]) + (q[1] + q[3]);
}

// exp(x[i] − shift) for the last m < kLanes elements of a row, as one vector: lanes past m hold 0
// (their input is set far below the shift). One expv instead of m, which matters for the short
// rows of decoding's attention (a dozen keys).
inline f32v exp_tail(const float* x, float shift, int64_t m) {
  f32v v = f32v{} + (shift - 1000.0f);
  for (int64_t j = 0; j < m; ++j) v[j] = x[j];
  return expv(v - shift);
}

// Σ_i exp(x[i] − shift).
inline float sum_exp_shift(const float* x, float shift, int64_t n) {
  f32v acc{};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) acc += expv(loadv(x + i) - shift);
  if (i < n) acc += exp_tail(x + i, shift, n - i);
  return sumv(acc);
}

// y[i] = exp(x[i] − shift); returns Σ y. x and y may alias.
inline float exp_shift_store(const float* x, float shift, float* y, int64_t n) {
  f32v acc{};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const f32v e = expv(loadv(x + i) - shift);
    storev(y + i, e);
    acc += e;
  }
  if (i < n) {
    const f32v e = exp_tail(x + i, shift, n - i);
    for (int64_t j = 0; j < n - i; ++j) y[i + j] = e[j];
    acc += e;
  }
  return sumv(acc);
}

// y[i] += a · exp(x[i] − shift) − b.
inline void axpy_exp_shift(const float* x, float shift, float a, float b, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) storev(y + i, loadv(y + i) + a * expv(loadv(x + i) - shift) - b);
  if (i < n) {
    const f32v e = exp_tail(x + i, shift, n - i);
    for (int64_t j = 0; j < n - i; ++j) y[i + j] += a * e[j] - b;
  }
}

// y[i] = a · exp(x[i] − shift) − b; x and y may alias.
inline void scale_exp_shift_store(const float* x, float shift, float a, float b, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) storev(y + i, a * expv(loadv(x + i) - shift) - b);
  if (i < n) {
    const f32v e = exp_tail(x + i, shift, n - i);
    for (int64_t j = 0; j < n - i; ++j) y[i + j] = a * e[j] - b;
  }
}

// Double precision: plain loops with std::exp (the finite-difference checks).
inline double sum_exp_shift(const double* x, double shift, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(x[i] - shift);
  return s;
}
inline double exp_shift_store(const double* x, double shift, double* y, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += (y[i] = std::exp(x[i] - shift));
  return s;
}
inline void axpy_exp_shift(const double* x, double shift, double a, double b, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * std::exp(x[i] - shift) - b;
}
inline void scale_exp_shift_store(const double* x, double shift, double a, double b, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a * std::exp(x[i] - shift) - b;
}

TFM_SIMD_END
