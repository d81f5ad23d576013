#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/cpu/simd/fast_exp.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/simd/target.h"

TFM_SIMD_BEGIN

template <class T>
double cross_entropy(int64_t rows, int64_t vocab, const T* logits, const int32_t* targets, double smoothing,
                     int32_t ignore_index, T* lse) {
  std::vector<double> row_loss(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static) if (rows * vocab >= (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const T* z = logits + r * vocab;
    // Two vectorized passes: the maximum, then Σ exp(z − max) and Σ z.
    T max = z[0];
#pragma omp simd reduction(max : max)
    for (int64_t v = 1; v < vocab; ++v) max = z[v] > max ? z[v] : max;
    const T sum_exp = sum_exp_shift(z, max, vocab);
    T sum_z = 0;
#pragma omp simd reduction(+ : sum_z)
    for (int64_t v = 0; v < vocab; ++v) sum_z += z[v];
    const double l = double(max) + std::log(double(sum_exp));
    lse[r] = static_cast<T>(l);
    row_loss[r] = targets[r] == ignore_index
                      ? 0.0
                      : l - (1.0 - smoothing) * double(z[targets[r]]) - smoothing / double(vocab) * double(sum_z);
  }
  double total = 0;  // summed in row order: independent of the thread count
  for (double x : row_loss) total += x;
  return total;
}

template <class T>
void cross_entropy_backward(int64_t rows, int64_t vocab, const T* logits, const int32_t* targets, const T* lse,
                            double smoothing, int32_t ignore_index, double dloss, T* dlogits, bool accumulate) {
  const T off = static_cast<T>(dloss * smoothing / double(vocab));
  const T on = static_cast<T>(dloss * (1.0 - smoothing));
  const T g = static_cast<T>(dloss);
#pragma omp parallel for schedule(static) if (rows * vocab >= (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const T* z = logits + r * vocab;
    T* dz = dlogits + r * vocab;  // may be z itself when overwriting
    if (targets[r] == ignore_index) {
      if (!accumulate) std::fill_n(dz, vocab, T(0));
      continue;
    }
    const T l = lse[r];
    if (accumulate) axpy_exp_shift(z, l, g, off, dz, vocab);  // dz += g · softmax(z) − ε g / V
    else scale_exp_shift_store(z, l, g, off, dz, vocab);      // dz = g · softmax(z) − ε g / V
    dz[targets[r]] -= on;
  }
}

void cross_entropy_backward_bf16(int64_t rows, int64_t vocab, const float* logits, const int32_t* targets,
                                 const float* lse, double smoothing, int32_t ignore_index, double dloss,
                                 uint16_t* dlogits16) {
  const auto off = static_cast<float>(dloss * smoothing / double(vocab));
  const auto on = static_cast<float>(dloss * (1.0 - smoothing));
  const auto g = static_cast<float>(dloss);
#pragma omp parallel if (rows * vocab >= (1 << 15))
  {
    std::vector<float> row(static_cast<size_t>(vocab));  // this thread's float32 gradient of one row
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      uint16_t* dz = dlogits16 + r * vocab;
      if (targets[r] == ignore_index) {
        std::fill_n(dz, vocab, uint16_t{0});
        continue;
      }
      // cross_entropy_backward's float32 values, then rounded while the row is in the cache
      scale_exp_shift_store(logits + r * vocab, lse[r], g, off, row.data(), vocab);
      row[static_cast<size_t>(targets[r])] -= on;
      to_bf16(vocab, row.data(), dz);
    }
  }
}

TFM_INSTANTIATE_FLOAT(TFM_INSTANTIATE_LOSS)

TFM_SIMD_END
