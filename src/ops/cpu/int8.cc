#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

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

namespace {

// Activations: u8 = round(x / s) + 128 per row, so that (u8 − 128) is the signed 8-bit value;
// oneDNN subtracts the offset (ao = 128) inside the product.
void quantize_activations(int64_t m, int64_t k, const float* x, uint8_t* xq, float* x_scale) {
#pragma omp parallel for schedule(static) if (m * k >= (1 << 15))
  for (int64_t r = 0; r < m; ++r) {
    const float* row = x + r * k;
    float max = 0;
#pragma omp simd reduction(max : max)
    for (int64_t c = 0; c < k; ++c) max = std::max(max, std::abs(row[c]));
    const float s = max > 0 ? max / 127.0f : 1.0f, inv = 1.0f / s;
    x_scale[r] = s;
    uint8_t* out = xq + r * k;
#pragma omp simd
    for (int64_t c = 0; c < k; ++c) {
      const float v = row[c] * inv;  // in [-127, 127]; round half away from zero, then shift by 128
      out[c] = static_cast<uint8_t>(static_cast<int32_t>(v + (v >= 0 ? 0.5f : -0.5f)) + 128);
    }
  }
}

// Columns [c0, c0 + nc) of the product: acc [m, nc] = (xq − 128) · w[c0 : c0 + nc]ᵀ in int32. Run
// inside a parallel region, oneDNN computes it on the calling thread alone. Returns oneDNN's status
// (no exception may leave a parallel region).
dnnl_status_t product_columns(int64_t m, int64_t c0, int64_t nc, int64_t k, const uint8_t* xq, const int8_t* w,
                              int32_t* acc) {
  const int32_t co = 0;
  return dnnl_gemm_u8s8s32('N', 'T', 'F', m, nc, k, 1.0f, xq, k, 128, w + c0 * k, k, 0, 0.0f, acc, nc, &co);
}

void check_product(dnnl_status_t status) {
  TFM_CHECK(status == dnnl_success, "int8 matrix product failed (oneDNN status ", static_cast<int>(status), ")");
}

// Row r's columns [c0, c0 + nc) of y (leading dimension n) from acc's row a:
// y = a · x_scale · w_scale[col] (+ bias[col]), then max(0, y) with relu.
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
inline void dequantize_row(const int32_t* a, float s, const float* w_scale, const float* bias, bool relu, int64_t c0,
                           int64_t nc, float* out) {
  if (bias && relu) dequantize_row<true, true>(a, s, w_scale, bias, c0, nc, out);
  else if (bias) dequantize_row<true, false>(a, s, w_scale, bias, c0, nc, out);
  else if (relu) dequantize_row<false, true>(a, s, w_scale, bias, c0, nc, out);
  else dequantize_row<false, false>(a, s, w_scale, bias, c0, nc, out);
}
}  // namespace

void matmul_int8(int64_t m, int64_t n, int64_t k, const float* x, const int8_t* w, const float* w_scale,
                 const float* bias, bool relu, float* y) {
  // Scratch reused across calls (decoding calls this thousands of times): grown, never cleared.
  if (m == 0 || n == 0) return;
  thread_local std::vector<uint8_t> xq;
  thread_local std::vector<float> x_scale;
  if (xq.size() < static_cast<size_t>(m * k)) xq.resize(static_cast<size_t>(m * k));
  if (x_scale.size() < static_cast<size_t>(m)) x_scale.resize(static_cast<size_t>(m));
  // Pointers, not the thread_local vectors, inside the parallel loops: each worker thread would
  // otherwise see its own (empty) thread_local.
  uint8_t* xq_data = xq.data();
  float* scale_data = x_scale.data();
  quantize_activations(m, k, x, xq_data, scale_data);
  if (m <= 256) {
    // Few rows (decoding): the columns in blocks, each thread computing its blocks' int32 products
    // alone and dequantizing each while it is in its cache (acc ≤ 512 KB). One product over all
    // columns would leave the int32 result (32 MB for 256 × 32,000 logits) in memory for a second
    // pass: 256 × 32,000 × 512 took 11–16 ms blocked against 18–20 ms whole, the output identical
    // (docs/performance.md). Beyond 256 rows (the encoder) the whole product was faster.
    // Blocks of whole 16-column units, a multiple of the thread count (nearly equal shares).
    const int64_t threads = omp_get_max_threads(), units = (n + 15) / 16;
    int64_t blocks = std::max<int64_t>(1, (m * n + (1 << 17) - 1) >> 17);
    blocks = std::min(units, (blocks + threads - 1) / threads * threads);
    const int64_t nb_max = 16 * ((units + blocks - 1) / blocks);
    dnnl_status_t failed = dnnl_success;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      thread_local std::vector<int32_t> acc;  // this thread's block
      if (acc.size() < static_cast<size_t>(m * nb_max)) acc.resize(static_cast<size_t>(m * nb_max));
      const int64_t c0 = 16 * (units * b / blocks), nc = std::min(n, 16 * (units * (b + 1) / blocks)) - c0;
      const dnnl_status_t status = product_columns(m, c0, nc, k, xq_data, w, acc.data());
      if (status != dnnl_success) {
#pragma omp critical(int8_failure)
        failed = status;
        continue;
      }
      for (int64_t r = 0; r < m; ++r) dequantize_row(acc.data() + r * nc, scale_data[r], w_scale, bias, relu, c0, nc, y + r * n);
    }
    check_product(failed);
    return;
  }
  thread_local std::vector<int32_t> acc;
  if (acc.size() < static_cast<size_t>(m * n)) acc.resize(static_cast<size_t>(m * n));
  int32_t* acc_data = acc.data();
  check_product(product_columns(m, 0, n, k, xq_data, w, acc_data));
#pragma omp parallel for schedule(static) if (m * n >= (1 << 15))
  for (int64_t r = 0; r < m; ++r) dequantize_row(acc_data + r * n, scale_data[r], w_scale, bias, relu, 0, n, y + r * n);
}

}  // namespace tfm::cpu
