#pragma once
// exp for float, vectorized by construction: loops over exp(x − shift) use 16-lane GCC/Clang vector
// types (one zmm register with AVX-512, two ymm without), because the auto-vectorizer left the
// exp loops scalar. exp(x) = 2^n · 2^f: x·log2(e) is rounded to an integer n (the 1.5·2^23 trick),
// 2^f = e^(f ln 2) for |f| ≤ ½ comes from a degree-6 polynomial (Taylor coefficients; relative error
// below 2e-7), and 2^n from the exponent bits. Inputs below −87 give 0, as a masked softmax needs;
// the kernels call it on x ≤ 0 (after subtracting a row maximum). Double keeps std::exp: the
// finite-difference checks run in double.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

using f32x16 = float __attribute__((vector_size(64)));
using i32x16 = int32_t __attribute__((vector_size(64)));

inline f32x16 exp16(f32x16 x) {
  const f32x16 lo = f32x16{} - 87.0f, hi = f32x16{} + 88.0f;
  x = x < lo ? lo : x;
  x = x > hi ? hi : x;
  const f32x16 t = x * 1.44269504088896341f;                   // x · log2(e)
  const f32x16 n = (t + 12582912.0f) - 12582912.0f;             // round to nearest (|t| < 2^22)
  const f32x16 f = (t - n) * 0.693147180559945309f;             // e^f with |f| ≤ ln 2 / 2
  f32x16 p = f32x16{} + 1.0f / 720.0f;
  p = p * f + 1.0f / 120.0f;
  p = p * f + 1.0f / 24.0f;
  p = p * f + 1.0f / 6.0f;
  p = p * f + 0.5f;
  p = p * f + 1.0f;
  p = p * f + 1.0f;
  const i32x16 bits = (__builtin_convertvector(n, i32x16) + 127) << 23;  // 2^n
  const f32x16 r = p * __builtin_bit_cast(f32x16, bits);
  return x <= lo ? f32x16{} : r;
}

inline f32x16 load16(const float* p) {
  f32x16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store16(float* p, f32x16 v) { std::memcpy(p, &v, sizeof v); }
inline float sum16(f32x16 v) {
  float s = 0;
  for (int i = 0; i < 16; ++i) s += v[i];
  return s;
}

// exp(x[i] − shift) for the last m < 16 elements of a row, as one vector: lanes past m hold 0
// (their input is set far below the shift). One exp16 instead of m, which matters for the short
// rows of decoding's attention (a dozen keys).
inline f32x16 exp_tail(const float* x, float shift, int64_t m) {
  f32x16 v = f32x16{} + (shift - 1000.0f);
  for (int64_t j = 0; j < m; ++j) v[j] = x[j];
  return exp16(v - shift);
}

// Σ_i exp(x[i] − shift).
inline float sum_exp_shift(const float* x, float shift, int64_t n) {
  f32x16 acc{};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) acc += exp16(load16(x + i) - shift);
  if (i < n) acc += exp_tail(x + i, shift, n - i);
  return sum16(acc);
}

// y[i] = exp(x[i] − shift); returns Σ y. x and y may alias.
inline float exp_shift_store(const float* x, float shift, float* y, int64_t n) {
  f32x16 acc{};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const f32x16 e = exp16(load16(x + i) - shift);
    store16(y + i, e);
    acc += e;
  }
  if (i < n) {
    const f32x16 e = exp_tail(x + i, shift, n - i);
    for (int64_t j = 0; j < n - i; ++j) y[i + j] = e[j];
    acc += e;
  }
  return sum16(acc);
}

// y[i] += a · exp(x[i] − shift) − b.
inline void axpy_exp_shift(const float* x, float shift, float a, float b, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) store16(y + i, load16(y + i) + a * exp16(load16(x + i) - shift) - b);
  if (i < n) {
    const f32x16 e = exp_tail(x + i, shift, n - i);
    for (int64_t j = 0; j < n - i; ++j) y[i + j] += a * e[j] - b;
  }
}

// y[i] = a · exp(x[i] − shift) − b; x and y may alias.
inline void scale_exp_shift_store(const float* x, float shift, float a, float b, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) store16(y + i, a * exp16(load16(x + i) - shift) - b);
  if (i < n) {
    const f32x16 e = exp_tail(x + i, shift, n - i);
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
