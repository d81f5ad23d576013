#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/activation.h"
#include "ops/cpu/simd/dropout_mask.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

// Below this many elements a loop is not worth waking the thread pool for.
constexpr int64_t kParallelMin = 1 << 15;

template <class T>
void add(int64_t n, const T* a, const T* b, T* y) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

template <class T>
void add_to(int64_t n, const T* x, T* y) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

template <class T>
void scale(int64_t n, const T* x, T alpha, T* y) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i];
}

template <class T>
void bias_add(int64_t rows, int64_t cols, const T* x, const T* bias, T* y) {
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) yr[c] = xr[c] + bias[c];
  }
}

namespace {
// dbias[c] += Σ_r dy[r, c], columns split across threads in blocks, each column summing its rows in
// order (deterministic); visit(i, dy[i]) sees each element on the way, while it is in a register.
template <class T, class Visit>
void column_sums(int64_t rows, int64_t cols, const T* dy, T* dbias, Visit visit) {
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (cols + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMin)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * kBlock, c1 = std::min(cols, c0 + kBlock);
    T acc[kBlock] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = dy + r * cols;
#pragma omp simd
      for (int64_t c = c0; c < c1; ++c) {
        acc[c - c0] += row[c];
        visit(r * cols + c, row[c]);
      }
    }
    for (int64_t c = c0; c < c1; ++c) dbias[c] += acc[c - c0];
  }
}
}  // namespace

template <class T>
void bias_add_backward(int64_t rows, int64_t cols, const T* dy, T* dbias) {
  column_sums(rows, cols, dy, dbias, [](int64_t, T) {});
}

void bias_add_backward_bf16(int64_t rows, int64_t cols, const float* dy, float* dbias, uint16_t* dy16) {
  column_sums(rows, cols, dy, dbias, [dy16](int64_t i, float v) { dy16[i] = Bf16::from_float(v).bits; });
}

template <class T>
void relu(int64_t n, const T* x, T* y) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
}

template <class T>
void relu_backward(int64_t n, const T* y, const T* dy, T* dx) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) dx[i] += y[i] > T(0) ? dy[i] : T(0);
}

void relu_backward_bf16(int64_t n, const uint16_t* y16, const float* dy, float* dx) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) dx[i] += Bf16{y16[i]}.to_float() > 0.0f ? dy[i] : 0.0f;
}

// swish, gelu and gelu_sigmoid cost an exp or an erfc per element, far more than the loops above:
// runs of kActivationChunk elements (a multiple of every build's vector width) go to the threads
// from two runs on.
constexpr int64_t kActivationChunk = 4096;

template <class T>
void activate(int64_t n, ops::Activation act, const T* x, T* y) {
  if (act == ops::Activation::kRelu) return relu<T>(n, x, y);
  if (act == ops::Activation::kNone) {
    if (x != y) std::copy(x, x + n, y);
    return;
  }
#pragma omp parallel for schedule(static) if (n >= 2 * kActivationChunk)
  for (int64_t c = 0; c < n; c += kActivationChunk)
    activate_run(act, std::min(kActivationChunk, n - c), x + c, y + c);
}

template <class T>
void activation_backward(int64_t n, ops::Activation act, const T* pre, const T* dy, T* dx) {
  if (act == ops::Activation::kRelu) return relu_backward<T>(n, pre, dy, dx);  // pre > 0 exactly where y > 0
  if (act == ops::Activation::kNone) return add_to<T>(n, dy, dx);
#pragma omp parallel for schedule(static) if (n >= 2 * kActivationChunk)
  for (int64_t c = 0; c < n; c += kActivationChunk)
    activation_backward_run(act, std::min(kActivationChunk, n - c), pre + c, dy + c, dx + c);
}

template <class T>
void dropout(int64_t n, const T* x, double p, const RngStream& rng, T* y) {
  constexpr int64_t kChunk = 4096;  // a multiple of 4: each chunk starts a Philox block
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t c = 0; c < n; c += kChunk)
    apply_dropout<T>(std::min(kChunk, n - c), static_cast<uint64_t>(c), x + c, p, rng, y + c);
}

template <class T>
double sum_squares(int64_t n, const T* x) {
  // Fixed-size chunks summed in order: the same result for any thread count.
  constexpr int64_t kChunk = 1 << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t c = 0; c < chunks; ++c) {
    double s = 0;
    for (int64_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i) s += double(x[i]) * double(x[i]);
    partial[c] = s;
  }
  double total = 0;
  for (double s : partial) total += s;
  return total;
}

TFM_INSTANTIATE_FLOAT(TFM_INSTANTIATE_ELEMENTWISE)

TFM_SIMD_END
