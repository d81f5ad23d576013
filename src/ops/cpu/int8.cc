#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "ops/cpu/kernels.h"

namespace tfm::cpu {

void quantize_rows(int64_t rows, int64_t cols, const float* w, int8_t* q, float* scale) {
#pragma omp parallel for schedule(static) if (rows * cols >= (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = w + r * cols;
    float max = 0;
    for (int64_t c = 0; c < cols; ++c) max = std::max(max, std::abs(row[c]));
    const float s = max > 0 ? max / 127.0f : 1.0f;
    for (int64_t c = 0; c < cols; ++c) q[r * cols + c] = static_cast<int8_t>(std::lrint(row[c] / s));
    scale[r] = s;
  }
}

void matmul_int8(int64_t m, int64_t n, int64_t k, const float* x, const int8_t* w, const float* w_scale,
                 const float* bias, float* y) {
  // Activations: u8 = round(x / s) + 128 per row, so that (u8 − 128) is the signed 8-bit value;
  // oneDNN subtracts the offset (ao = 128) inside the product.
  // Scratch reused across calls (decoding calls this thousands of times): grown, never cleared.
  thread_local std::vector<uint8_t> xq;
  thread_local std::vector<float> x_scale;
  thread_local std::vector<int32_t> acc;
  if (xq.size() < static_cast<size_t>(m * k)) xq.resize(static_cast<size_t>(m * k));
  if (x_scale.size() < static_cast<size_t>(m)) x_scale.resize(static_cast<size_t>(m));
  if (acc.size() < static_cast<size_t>(m * n)) acc.resize(static_cast<size_t>(m * n));
  // Pointers, not the thread_local vectors, inside the parallel loops: each worker thread would
  // otherwise see its own (empty) thread_local.
  uint8_t* xq_data = xq.data();
  float* scale_data = x_scale.data();
  int32_t* acc_data = acc.data();
#pragma omp parallel for schedule(static) if (m * k >= (1 << 15))
  for (int64_t r = 0; r < m; ++r) {
    const float* row = x + r * k;
    float max = 0;
#pragma omp simd reduction(max : max)
    for (int64_t c = 0; c < k; ++c) max = std::max(max, std::abs(row[c]));
    const float s = max > 0 ? max / 127.0f : 1.0f, inv = 1.0f / s;
    scale_data[r] = s;
    uint8_t* out = xq_data + r * k;
#pragma omp simd
    for (int64_t c = 0; c < k; ++c) {
      const float v = row[c] * inv;  // in [-127, 127]; round half away from zero, then shift by 128
      out[c] = static_cast<uint8_t>(static_cast<int32_t>(v + (v >= 0 ? 0.5f : -0.5f)) + 128);
    }
  }
  const int32_t co = 0;
  const dnnl_status_t status = dnnl_gemm_u8s8s32('N', 'T', 'F', m, n, k, 1.0f, xq_data, k, 128, w, k, 0, 0.0f,
                                                 acc_data, n, &co);
  TFM_CHECK(status == dnnl_success, "int8 matrix product failed (oneDNN status ", static_cast<int>(status), ")");
#pragma omp parallel for schedule(static) if (m * n >= (1 << 15))
  for (int64_t r = 0; r < m; ++r) {
    const float s = scale_data[r];
    const int32_t* a = acc_data + r * n;
    float* out = y + r * n;
    if (bias) {
#pragma omp simd
      for (int64_t c = 0; c < n; ++c) out[c] = static_cast<float>(a[c]) * s * w_scale[c] + bias[c];
    } else {
#pragma omp simd
      for (int64_t c = 0; c < n; ++c) out[c] = static_cast<float>(a[c]) * s * w_scale[c];
    }
  }
}

}  // namespace tfm::cpu
