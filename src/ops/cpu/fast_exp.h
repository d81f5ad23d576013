#pragma once
// exp(x) for float that the compiler vectorizes (no library call inside the loop): x·log2(e) is
// split into an integer n and a fraction f in [−½, ½]; 2^f comes from a degree-6 polynomial
// (Taylor coefficients of 2^f = e^(f ln 2), error below 2e-7 relative on the interval) and 2^n
// from the exponent bits. Inputs below −87 give 0, as a masked softmax needs; the kernels only
// ever call it on x ≤ 0 (after subtracting a row maximum), where it is accurate to about 2 ulp.
// Double precision keeps std::exp: the finite-difference checks run in double.
#include <cmath>
#include <cstdint>
#include <bit>

namespace tfm::cpu {

inline float fast_exp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float t = x * 1.44269504088896341f;  // x · log2(e)
  const float n = __builtin_floorf(t + 0.5f);
  const float f = (t - n) * 0.693147180559945309f;  // back to base e: e^f with |f| ≤ ln2/2
  float p = 1.0f / 720.0f;
  p = p * f + 1.0f / 120.0f;
  p = p * f + 1.0f / 24.0f;
  p = p * f + 1.0f / 6.0f;
  p = p * f + 0.5f;
  p = p * f + 1.0f;
  p = p * f + 1.0f;
  const float scale = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);  // 2^n
  const float r = p * scale;
  return x <= -87.0f ? 0.0f : r;
}

// exp for the kernels' element type: fast for float, exact for double.
inline float exp_of(float x) { return fast_exp(x); }
inline double exp_of(double x) { return std::exp(x); }

}  // namespace tfm::cpu
