#pragma once
// The feed-forward activations other than ReLU (ops/activation.h) over a run of elements, forward
// and backward: for the elementwise kernels and the int8 product's dequantization pass.
//
// swish x·σ(x) and gelu_sigmoid x·σ(1.702·x) on float run on GCC vector types (fast_exp.h's f32v):
// with u = a·x and z = e^−|u| ∈ (0, 1], σ(u) = 1 / (1 + z) for u ≥ 0 and z / (1 + z) below, so
// nothing overflows and the small values of x·σ(u) for x ≪ 0 keep their relative accuracy
// (1 − σ(u) is never formed). e^−|u| comes from exp_minus_abs below rather than fast_exp.h's expv:
// expv rounds x·log2(e) before reducing, which costs up to ~10 ulps at |x| = 20 (harmless in a
// softmax, whose terms that small vanish in the sum, but here they are the result). With a = 1.702,
// |u| is carried as an exact product plus a small tail, since u rounded to float alone would cost
// |u| · 2⁻²⁴ of relative accuracy in σ(u) (17 ulps at x = −20). Measured against the double-
// precision definitions over [−20, 20] (tests/activation_test.cc): within 4 ulps.
//
// gelu, x·Φ(x) = 0.5·x·erfc(−x/√2), on float lanes (gelu_fv below): within 3 ulps of the definition,
// twice as fast as the same in double lanes. Its derivative Φ(x) + x·φ(x) runs in vectors of doubles
// (half as many lanes), where x² is exact and no rounding of the argument needs care: with
// E = erfc(|x|/√2), Φ(x) = E/2 for x < 0 and 1 − E/2 above (E, not 1 + erf, keeps x ≪ 0 accurate,
// where 1 + erf cancels). E = t·e^(Q(t) − x²/2) with t = 1 / (1 + |x|/(2√2)) (the form of Numerical
// Recipes' erfcc) and Q a degree-11 polynomial fitted to ln(erfc(z)/t) + z² for z = |x|/√2 ≤ 10.6,
// within 3e-9 (beyond, E < 1e-50: Φ is 0 or 1 in float); e^· as exp_minus_abs, in double.
// gelu_tanh, 0.5·x·(1 + tanh(u)) with u = √(2/π)·(x + 0.044715·x³), is x·σ(w) with w = 2u (as
// 1 + tanh(u) = 2·σ(2u), which never forms 1 + tanh, so x ≪ 0 keeps its accuracy), on float in
// double lanes as gelu's derivative: w = 2√(2/π)·x·(1 + 0.044715·x²) rounded to float would cost |w|·2⁻²⁴ of
// relative accuracy in σ(w) (~100 ulps at x = −10), in double nothing that shows; e^−|w| by exp_d.
// Within an ulp of the definition.
// Double precision, for every activation: plain std::exp / std::erfc loops (the finite-difference
// checks).
//
// Derivatives: (x·σ(a·x))′ = σ(u) + u·σ(u)·(1 − σ(u)) = σ(u) + u·z / (1 + z)²; (x·Φ(x))′ = Φ(x) + x·φ(x);
// (x·σ(w))′ = σ(w) + x·w′·z / (1 + z)² with z = e^−|w| and w′ = 2√(2/π)·(1 + 3·0.044715·x²).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "ops/activation.h"
#include "ops/cpu/simd/fast_exp.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

// gelu_sigmoid's a = 1.702 = kGeluA1 + kGeluA2, kGeluA1 = 1743 / 1024 with 11 significant bits: its
// product with a float's top 12 bits is exact.
constexpr float kGeluA = 1.702f, kGeluA1 = 1.7021484375f, kGeluA2 = static_cast<float>(1.702 - 1.7021484375);

// e^−|a·x| with a = 1 (kScaled false) or 1.702, to about an ulp; 0 where |a·x| > 104 (below the
// smallest denormal), NaN for NaN. e^−w = 2^n · e^f: n = round(−w·log2 e), f = −w − n·ln 2 with
// ln 2 in two parts (Cody and Waite; n·C1 is exact), e^f from its Taylor polynomial of degree 7
// (|f| ≤ ln2 / 2: remainder below 1e-8), and 2^n in two factors so that results down to 2⁻¹⁴⁹
// underflow gradually instead of wrapping the exponent.
// e^−(w_hi + w_lo) = the result times *scale for w_hi in [0, 104] and |w_lo| ≪ 1, to about an ulp:
// the result stays normal (≥ 2⁻⁸²) and *scale holds the rest of the power of two, so that a caller
// can leave the step into denormals to its last product.
inline f32v exp_minus_parts(f32v w_hi, f32v w_lo, f32v* scale) {
  const f32v zero{};
  const f32v t = (w_hi + w_lo) * -1.44269504088896341f;  // −w · log2(e), t in [−151, 0]
  const f32v n = (t + 12582912.0f) - 12582912.0f;         // round to nearest
  const f32v f = ((-w_hi - n * 0.693359375f) - w_lo) - n * -2.12194440e-4f;
  f32v p = zero + 1.0f / 5040.0f;
  p = p * f + 1.0f / 720.0f;
  p = p * f + 1.0f / 120.0f;
  p = p * f + 1.0f / 24.0f;
  p = p * f + 1.0f / 6.0f;
  p = p * f + 0.5f;
  p = p * f + 1.0f;
  p = p * f + 1.0f;
  const i32v ni = __builtin_convertvector(n, i32v), n1 = ni >> 1, n2 = ni - n1;  // each ≥ −82
  *scale = __builtin_bit_cast(f32v, (n2 + 127) << 23);
  return p * __builtin_bit_cast(f32v, (n1 + 127) << 23);
}
// e^−(w_hi + w_lo), into denormals where it is that small.
inline f32v exp_minus_parts(f32v w_hi, f32v w_lo) {
  f32v scale;
  const f32v e = exp_minus_parts(w_hi, w_lo, &scale);
  return e * scale;
}

template <bool kScaled>
inline f32v exp_minus_abs(f32v x) {
  constexpr float kMax = 104.0f;
  const f32v zero{}, v0 = x < zero ? -x : x;
  const f32v limit = zero + (kScaled ? kMax / kGeluA : kMax);
  const f32v v = v0 > limit ? limit : v0;
  f32v w_hi = v, w_lo{};  // |a·x| = w_hi + w_lo
  if constexpr (kScaled) {
    // v = v1 + v2 with v1 its top 12 bits (a mask, which no contraction into fused multiply-adds can
    // change); kGeluA1 · v1 and kGeluA1 · v2 are exact.
    const f32v v1 = __builtin_bit_cast(f32v, __builtin_bit_cast(i32v, v) & int32_t(0xFFFFF000)), v2 = v - v1;
    w_hi = kGeluA1 * v1;
    w_lo = kGeluA1 * v2 + kGeluA2 * v;
  }
  return v0 > limit ? zero : exp_minus_parts(w_hi, w_lo);
}

// x · σ(a·x), and its derivative σ(u) + u·z / (1 + z)² (u = a·x, z = e^−|u|).
template <bool kScaled>
inline f32v swish_v(f32v x) {
  const f32v z = exp_minus_abs<kScaled>(x), zero{}, one = zero + 1.0f;
  return x * ((x >= zero ? one : z) / (one + z));
}
template <bool kScaled>
inline f32v swish_grad_v(f32v x) {
  const f32v z = exp_minus_abs<kScaled>(x), zero{}, one = zero + 1.0f, d = one + z;
  const f32v xz = x * z;  // a·x·z as a·(x·z): x·z is 0 where a·x would overflow
  return (x >= zero ? one : z) / d + (kScaled ? kGeluA * xz : xz) / (d * d);
}

// gelu on float lanes, x·Φ(x), with E = erfc(|x|/√2): Φ = E/2 for x < 0 and 1 − E/2 above (E, not
// 1 + erf, keeps x ≪ 0 accurate, where 1 + erf cancels). E = t·e^(Q(t) − x²/2) with t = 1/(1 + |x|/2)
// and Q a degree-12 polynomial in w = (t − kGeluMid)/kGeluHalf ∈ [−1, 1] fitted to
// ln(E/t) + x²/2 for |x| ≤ 15 within 2e-9 (tools/fit_gelu_erfc.py; beyond 15, Φ is 0 or 1 in float).
// The parts whose rounding would show in E for x ≪ 0 are carried exactly: t as t + t_lo (1 + |x|/2
// by a two-sum, the division's remainder by a fused multiply-add where the build contracts one),
// x²/2 split at |x|'s top 12 bits, and Q − x²/2 by a two-sum into exp_minus_parts. Against the
// definition in long double over [−20, 20] (tests/activation_test.cc): within 3.2 ulps with fused
// multiply-adds, 3.8 without (0.2 on average).
constexpr double kGeluMid = 0.5588235294117647, kGeluHalf = 0.4411764705882353;
constexpr float kGeluQ[] = {-0.3400487724649511, 0.4173626075037138, -0.06970049200024843,
                            -0.017845936089704802, 0.012420801540731911, -0.001254834567983969,
                            -0.0017633018840497413, 0.0010309029134176588, -9.130270475049291e-05,
                            -0.0002234838155762482, 0.00011889580180762766, 1.649331259583939e-05,
                            -2.1579353153194044e-05};

inline f32v gelu_fv(f32v x) {
  const f32v zero{}, one = zero + 1.0f, ax = x < zero ? -x : x, a = ax > 15.0f ? zero + 15.0f : ax;
  // t + t_lo = 1 / (d_hi + d_lo), d = 1 + a/2 (a/2 exact).
  const f32v h = 0.5f * a, d_hi = one + h, d_b = d_hi - h, d_lo = (h - (d_hi - d_b)) + (one - d_b);
  const f32v t = one / d_hi, t_lo = t * ((one - d_hi * t) - d_lo * t);
  const f32v w = t * static_cast<float>(1 / kGeluHalf) - static_cast<float>(kGeluMid / kGeluHalf);
#if defined(TFM_SIMD_AVX2) || defined(TFM_SIMD_AVX512) || defined(__ARM_FEATURE_FMA)
  // Q(w) by Estrin's scheme (pairs, then pairs of pairs, ...): a dependency chain of 5 steps where
  // Horner's has 12, and the chain, not the arithmetic, bounds this function's speed (2.8 → 2.1 ns
  // an element). Without fused multiply-adds its extra roundings cost up to 4.4 ulps: Horner there.
  const f32v w2 = w * w, w4 = w2 * w2, w8 = w4 * w4;
  f32v pair[6];
#pragma GCC unroll 6
  for (int i = 0; i < 6; ++i) pair[i] = kGeluQ[2 * i] + kGeluQ[2 * i + 1] * w;
  const f32v quad0 = pair[0] + pair[1] * w2, quad1 = pair[2] + pair[3] * w2, quad2 = pair[4] + pair[5] * w2;
  const f32v q = (quad0 + quad1 * w4) + (quad2 + kGeluQ[12] * w4) * w8;
#else
  f32v q = zero + kGeluQ[12];
#pragma GCC unroll 12
  for (int i = 11; i >= 0; --i) q = q * w + kGeluQ[i];
#endif
  // a²/2 = hi²/2 (exact) + lo·(hi + a)/2, hi = a's top 12 bits; s + s_lo = Q − hi²/2 (two-sum).
  const f32v hi = __builtin_bit_cast(f32v, __builtin_bit_cast(i32v, a) & int32_t(0xFFFFF000)), lo = a - hi;
  const f32v half_hi2 = 0.5f * (hi * hi), s = q - half_hi2, s_b = s + half_hi2;
  const f32v s_lo = (q - s_b) - (half_hi2 - (s_b - s)) - 0.5f * (lo * (hi + a));
  f32v scale;
  const f32v ex = exp_minus_parts(-s, -s_lo, &scale);
  const f32v e = t * ex + t_lo * ex;  // erfc(a/√2) / scale
  // x < 0: x·E/2 with the scale last (E/2 itself may be denormal where x·E/2 is not yet).
  const f32v y = x < zero ? (0.5f * x * e) * scale : x * (one - (0.5f * e) * scale);
  return ax > 15.0f ? (x < zero ? x * zero : x) : y;
}

// y[i] = f(x[i]) for i < n, a vector at a time; the last n mod kLanes as one more (padded with 0).
// x and y may alias.
template <class F>
inline void map_v(int64_t n, const float* x, float* y, F f) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) storev(y + i, f(loadv(x + i)));
  if (i < n) {
    f32v v{};
    for (int64_t j = 0; j < n - i; ++j) v[j] = x[i + j];
    const f32v r = f(v);
    for (int64_t j = 0; j < n - i; ++j) y[i + j] = r[j];
  }
}
// dx[i] += dy[i] · g(pre[i]) for i < n, as map_v.
template <class G>
inline void map_grad_v(int64_t n, const float* pre, const float* dy, float* dx, G g) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) storev(dx + i, loadv(dx + i) + loadv(dy + i) * g(loadv(pre + i)));
  if (i < n) {
    f32v v{};
    for (int64_t j = 0; j < n - i; ++j) v[j] = pre[i + j];
    const f32v r = g(v);
    for (int64_t j = 0; j < n - i; ++j) dx[i + j] += dy[i + j] * r[j];
  }
}

// gelu on float: Φ(x) and φ(x) in double lanes (as wide as f32v, half its lanes).
using f64v = double __attribute__((vector_size(TFM_SIMD_BYTES)));
using i64v = int64_t __attribute__((vector_size(TFM_SIMD_BYTES)));
using f32h = float __attribute__((vector_size(TFM_SIMD_BYTES / 2)));  // the floats of one f64v
constexpr int kHalfLanes = kLanes / 2;
constexpr double kErfcZMax = 10.6;  // erfc(10.6) < 1e-50; E is taken as 0 beyond

// e^a for a in [−700, 0] (relative error ~1e-12): 2^n · e^f as exp_minus_abs, n read from the low
// bits of a·log2(e) + 1.5·2^52 (no double → int64 conversion, which AVX2 lacks), e^f by Taylor to
// degree 10.
inline f64v exp_d(f64v a) {
  const f64v lo = f64v{} - 700.0, shifter = f64v{} + 6755399441055744.0;  // 1.5 · 2^52
  a = a < lo ? lo : a;
  const f64v big = a * 1.4426950408889634 + shifter;  // round(a · log2 e) in the low bits
  const f64v n = big - shifter;
  const f64v f = (a - n * 0.693147180369123816490) - n * 1.90821492927058770002e-10;
  f64v p = f64v{} + 1.0 / 3628800.0;
  for (const double c : {1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0,
                         1.0 / 6.0, 0.5, 1.0, 1.0})
    p = p * f + c;
  const i64v bits = (__builtin_bit_cast(i64v, big) - __builtin_bit_cast(i64v, shifter) + 1023) << 52;
  return p * __builtin_bit_cast(f64v, bits);
}

// Φ(x) = ½·erfc(−x/√2), and φ(x) = e^(−x²/2) / √(2π) into *density when given.
inline f64v normal_cdf_v(f64v x, f64v* density = nullptr) {
  // Q(t) = ln(erfc(z)/t) + z², t = 1 / (1 + z/2), least squares on t in [1 / 6.3, 1] (Chebyshev
  // nodes, against mpmath's erfc to 40 digits), power basis from t⁰.
  constexpr double kQ[] = {-1.2655398656914147,  1.0007990198716101,   0.3650477731721615,  0.15372953400490255,
                           -0.397303262443375,   0.7444755248679408,   -1.6940469333226726, 1.6644051337564016,
                           -0.37689335825010756, -0.4873166584771814,  0.37312182012851436, -0.0804787302267058};
  const f64v zero{}, one = zero + 1.0, ax = x < zero ? -x : x;
  const f64v z = ax * 0.70710678118654752;
  const auto beyond = z > kErfcZMax;
  const f64v half_x2 = beyond ? zero + kErfcZMax * kErfcZMax : 0.5 * x * x;  // z², exact below
  const f64v t = one / (one + 0.5 * (beyond ? zero + kErfcZMax : z));
  f64v q = zero + kQ[11];
  for (int i = 10; i >= 0; --i) q = q * t + kQ[i];
  const f64v e = beyond ? zero : t * exp_d(q - half_x2);  // erfc(|x|/√2)
  if (density) *density = beyond ? zero : 0.39894228040143268 * exp_d(-half_x2);
  return x < zero ? 0.5 * e : one - 0.5 * e;
}
inline f64v gelu_grad_v(f64v x) {
  f64v density;
  const f64v cdf = normal_cdf_v(x, &density);
  return cdf + x * density;
}

// gelu_tanh on float, in double lanes: x·σ(w) and its derivative. exp_d stops at e^−700, so
// |w| > 700 takes z = 0 itself (x·w′ could be large there; σ(w) is then 0 or 1 exactly).
constexpr double kGeluTanhW = 1.5957691216057308;  // 2·√(2/π)
constexpr double kGeluTanhC = 0.044715;
inline f64v gelu_tanh_z(f64v x) {
  const f64v zero{}, w = kGeluTanhW * x * (1.0 + kGeluTanhC * x * x), aw = w < zero ? -w : w;
  return aw > 700.0 ? zero : exp_d(-aw);
}
inline f64v gelu_tanh_v(f64v x) {
  const f64v z = gelu_tanh_z(x), zero{}, one = zero + 1.0;
  return x * ((x >= zero ? one : z) / (one + z));
}
inline f64v gelu_tanh_grad_v(f64v x) {
  const f64v z = gelu_tanh_z(x), zero{}, one = zero + 1.0, d = one + z;
  const f64v slope = kGeluTanhW * (1.0 + 3.0 * kGeluTanhC * x * x);
  return (x >= zero ? one : z) / d + (z > zero ? x * slope * z / (d * d) : zero);
}

// map_v and map_grad_v for a function of doubles: the floats kHalfLanes at a time.
template <class F>
inline void map_d(int64_t n, const float* x, float* y, F f) {
  int64_t i = 0;
  for (; i + kHalfLanes <= n; i += kHalfLanes) {
    f32h h;
    std::memcpy(&h, x + i, sizeof h);
    h = __builtin_convertvector(f(__builtin_convertvector(h, f64v)), f32h);
    std::memcpy(y + i, &h, sizeof h);
  }
  if (i < n) {
    f64v v{};
    for (int64_t j = 0; j < n - i; ++j) v[j] = x[i + j];
    const f64v r = f(v);
    for (int64_t j = 0; j < n - i; ++j) y[i + j] = static_cast<float>(r[j]);
  }
}
template <class G>
inline void map_grad_d(int64_t n, const float* pre, const float* dy, float* dx, G g) {
  int64_t i = 0;
  for (; i + kHalfLanes <= n; i += kHalfLanes) {
    f32h h, d, acc;
    std::memcpy(&h, pre + i, sizeof h);
    std::memcpy(&d, dy + i, sizeof d);
    std::memcpy(&acc, dx + i, sizeof acc);
    acc += d * __builtin_convertvector(g(__builtin_convertvector(h, f64v)), f32h);
    std::memcpy(dx + i, &acc, sizeof acc);
  }
  if (i < n) {
    f64v v{};
    for (int64_t j = 0; j < n - i; ++j) v[j] = pre[i + j];
    const f64v r = g(v);
    for (int64_t j = 0; j < n - i; ++j) dx[i + j] += dy[i + j] * static_cast<float>(r[j]);
  }
}

// The definitions in double precision: x·σ(a·x) with its derivative, and x·Φ(x) with Φ(x) + x·φ(x).
inline double swish_d(double x, double a) {
  const double z = std::exp(-std::abs(a * x));
  return x * ((x >= 0 ? 1.0 : z) / (1.0 + z));
}
inline double swish_grad_d(double x, double a) {
  const double z = std::exp(-std::abs(a * x)), d = 1.0 + z;
  return (x >= 0 ? 1.0 : z) / d + a * (x * z) / (d * d);
}
inline double gelu_d(double x) { return 0.5 * x * std::erfc(-x * 0.70710678118654752); }
inline double gelu_grad_d(double x) {
  return 0.5 * std::erfc(-x * 0.70710678118654752) + x * 0.39894228040143268 * std::exp(-0.5 * x * x);
}

// x·σ(w), w = 2√(2/π)·x·(1 + 0.044715·x²), and its derivative (z = 0 where x·w′ would overflow).
inline double gelu_tanh_d(double x) {
  const double z = std::exp(-std::abs(kGeluTanhW * x * (1.0 + kGeluTanhC * x * x)));
  return x * ((x >= 0 ? 1.0 : z) / (1.0 + z));
}
inline double gelu_tanh_grad_d(double x) {
  const double z = std::exp(-std::abs(kGeluTanhW * x * (1.0 + kGeluTanhC * x * x))), d = 1.0 + z;
  const double first = (x >= 0 ? 1.0 : z) / d;
  return z > 0 ? first + x * (kGeluTanhW * (1.0 + 3.0 * kGeluTanhC * x * x)) * z / (d * d) : first;
}

// y[i] = act(x[i]) for i < n, act one of swish, gelu, gelu_sigmoid and gelu_tanh (ReLU and none are the
// callers' own loops); x and y may alias.
inline void activate_run(ops::Activation act, int64_t n, const float* x, float* y) {
  switch (act) {
    case ops::Activation::kSwish: return map_v(n, x, y, [](f32v v) { return swish_v<false>(v); });
    case ops::Activation::kGeluSigmoid: return map_v(n, x, y, [](f32v v) { return swish_v<true>(v); });
    case ops::Activation::kGelu: return map_v(n, x, y, [](f32v v) { return gelu_fv(v); });
    case ops::Activation::kGeluTanh: return map_d(n, x, y, [](f64v v) { return gelu_tanh_v(v); });
    case ops::Activation::kNone:
    case ops::Activation::kRelu: break;
  }
}
inline void activate_run(ops::Activation act, int64_t n, const double* x, double* y) {
  switch (act) {
    case ops::Activation::kSwish:
      for (int64_t i = 0; i < n; ++i) y[i] = swish_d(x[i], 1.0);
      return;
    case ops::Activation::kGeluSigmoid:
      for (int64_t i = 0; i < n; ++i) y[i] = swish_d(x[i], 1.702);
      return;
    case ops::Activation::kGelu:
      for (int64_t i = 0; i < n; ++i) y[i] = gelu_d(x[i]);
      return;
    case ops::Activation::kGeluTanh:
      for (int64_t i = 0; i < n; ++i) y[i] = gelu_tanh_d(x[i]);
      return;
    case ops::Activation::kNone:
    case ops::Activation::kRelu: break;
  }
}

// dx[i] += dy[i] · act′(pre[i]) for i < n, act as activate_run's; pre: the activation's input.
inline void activation_backward_run(ops::Activation act, int64_t n, const float* pre, const float* dy, float* dx) {
  switch (act) {
    case ops::Activation::kSwish:
      return map_grad_v(n, pre, dy, dx, [](f32v v) { return swish_grad_v<false>(v); });
    case ops::Activation::kGeluSigmoid:
      return map_grad_v(n, pre, dy, dx, [](f32v v) { return swish_grad_v<true>(v); });
    case ops::Activation::kGelu: return map_grad_d(n, pre, dy, dx, [](f64v v) { return gelu_grad_v(v); });
    case ops::Activation::kGeluTanh:
      return map_grad_d(n, pre, dy, dx, [](f64v v) { return gelu_tanh_grad_v(v); });
    case ops::Activation::kNone:
    case ops::Activation::kRelu: break;
  }
}
inline void activation_backward_run(ops::Activation act, int64_t n, const double* pre, const double* dy,
                                    double* dx) {
  switch (act) {
    case ops::Activation::kSwish:
      for (int64_t i = 0; i < n; ++i) dx[i] += dy[i] * swish_grad_d(pre[i], 1.0);
      return;
    case ops::Activation::kGeluSigmoid:
      for (int64_t i = 0; i < n; ++i) dx[i] += dy[i] * swish_grad_d(pre[i], 1.702);
      return;
    case ops::Activation::kGelu:
      for (int64_t i = 0; i < n; ++i) dx[i] += dy[i] * gelu_grad_d(pre[i]);
      return;
    case ops::Activation::kGeluTanh:
      for (int64_t i = 0; i < n; ++i) dx[i] += dy[i] * gelu_tanh_grad_d(pre[i]);
      return;
    case ops::Activation::kNone:
    case ops::Activation::kRelu: break;
  }
}

TFM_SIMD_END
