// int8 inference: the quantization of weights and activations and the dequantization of the
// integer products (int8.cc runs the products in oneDNN between them).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/activation.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

namespace {
// Whether a row whose largest magnitude is max gets a scale max / levels that is a normal float:
// rows of zeros, of denormals (whose 1 / scale would be ∞) or with a NaN or ∞ are quantized to zeros.
inline bool scalable(float max, float levels) { return max >= levels * std::numeric_limits<float>::min(); }
}  // namespace

void quantize_rows(int64_t rows, int64_t cols, const float* w, int8_t* q, float* scale) {
#pragma omp parallel for schedule(static) if (rows * cols >= (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = w + r * cols;
    float max = 0;
    for (int64_t c = 0; c < cols; ++c) max = std::max(max, std::abs(row[c]));
    const bool ok = scalable(max, 127.0f);
    const float s = ok ? max / 127.0f : 1.0f;
    for (int64_t c = 0; c < cols; ++c) q[r * cols + c] = ok ? static_cast<int8_t>(std::lrint(row[c] / s)) : 0;
    scale[r] = s;
  }
}

void quantize_activations(int64_t m, int64_t k, const float* x, int levels, uint8_t* xq, float* x_scale) {
  const float top = static_cast<float>(levels);
#pragma omp parallel for schedule(static) if (m * k >= (1 << 15))
  for (int64_t r = 0; r < m; ++r) {
    const float* row = x + r * k;
    float max = 0;
    int nan = 0;
#pragma omp simd reduction(max : max) reduction(| : nan)
    for (int64_t c = 0; c < k; ++c) {
      max = std::max(max, std::abs(row[c]));
      nan |= row[c] != row[c];
    }
    // A row with a NaN or an infinity (a broken model's) is quantized to zeros too: converting its
    // values to integers would be undefined.
    const bool ok = scalable(max, top) && !nan && max <= std::numeric_limits<float>::max();
    const float s = ok ? max / top : 1.0f, inv = ok ? 1.0f / s : 0.0f;
    x_scale[r] = s;
    uint8_t* out = xq + r * k;
    if (!ok) {
      std::fill(out, out + k, static_cast<uint8_t>(levels + 1));
      continue;
    }
#pragma omp simd
    for (int64_t c = 0; c < k; ++c) {
      // v in [-levels, levels]: rounded half away from zero, then shifted by levels + 1 into
      // [1, 2 · levels + 1]. v ± (½ − 2⁻²⁵), truncated toward zero: with ½ itself, v = ½ − 2⁻²⁵
      // would round to 1, since v + ½ rounds up to 1.0f; every half-integer still rounds away.
      const float v = row[c] * inv;
      out[c] = static_cast<uint8_t>(static_cast<int32_t>(v + (v >= 0 ? 0.49999997f : -0.49999997f)) + levels + 1);
    }
  }
}

namespace {
template <bool kBias, bool kRelu>
void dequantize_row(const int32_t* a, float s, const float* w_scale, const float* bias, int64_t c0, int64_t nc,
                    float* out) {
#pragma omp simd
  for (int64_t c = c0; c < c0 + nc; ++c) {
    float y = static_cast<float>(a[c - c0]) * s * w_scale[c];
    if constexpr (kBias) y += bias[c];
    if constexpr (kRelu) y = std::max(y, 0.0f);
    out[c] = y;
  }
}
}  // namespace

void dequantize_rows(int64_t rows, int64_t c0, int64_t nc, const int32_t* acc, const float* x_scale,
                     const float* w_scale, const float* bias, ops::Activation act, float* y, int64_t ldy) {
  // One variant per bias/ReLU combination, so that the inner loop has no test. The other
  // activations take a second pass over each row while it is in the cache (activation.h's vector
  // loops).
  const bool relu = act == ops::Activation::kRelu, after = !relu && act != ops::Activation::kNone;
  auto each_row = [&](auto row_fn) {
#pragma omp parallel for schedule(static) if (rows * nc >= (1 << 15) && !omp_in_parallel())
    for (int64_t r = 0; r < rows; ++r) {
      float* out = y + r * ldy;
      row_fn(acc + r * nc, x_scale[r], w_scale, bias, c0, nc, out);
      if (after) activate_run(act, nc, out + c0, out + c0);
    }
  };
  if (bias && relu) each_row(dequantize_row<true, true>);
  else if (bias) each_row(dequantize_row<true, false>);
  else if (relu) each_row(dequantize_row<false, true>);
  else each_row(dequantize_row<false, false>);
}

TFM_SIMD_END
