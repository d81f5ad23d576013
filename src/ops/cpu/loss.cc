#include <cmath>
#include <vector>

#include "ops/cpu/kernels.h"

namespace tfm::cpu {

template <class T>
double cross_entropy(int64_t rows, int64_t vocab, const T* logits, const int32_t* targets, double smoothing,
                     int32_t ignore_index, T* lse) {
  std::vector<double> row_loss(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static) if (rows * vocab >= (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const T* z = logits + r * vocab;
    // One pass over the row: running max and rescaled sum of exponentials, and the sum of logits.
    double max = -INFINITY, sum_exp = 0, sum_z = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      const double zv = z[v];
      if (zv > max) {
        sum_exp = sum_exp * std::exp(max - zv) + 1.0;
        max = zv;
      } else {
        sum_exp += std::exp(zv - max);
      }
      sum_z += zv;
    }
    const double l = max + std::log(sum_exp);
    lse[r] = static_cast<T>(l);
    if (targets[r] == ignore_index) {
      row_loss[r] = 0;
      continue;
    }
    row_loss[r] = l - (1.0 - smoothing) * double(z[targets[r]]) - smoothing / double(vocab) * sum_z;
  }
  double total = 0;  // summed in row order: independent of the thread count
  for (double x : row_loss) total += x;
  return total;
}

template <class T>
void cross_entropy_backward(int64_t rows, int64_t vocab, const T* logits, const int32_t* targets, const T* lse,
                            double smoothing, int32_t ignore_index, double dloss, T* dlogits) {
  const T off = static_cast<T>(dloss * smoothing / double(vocab));
  const T on = static_cast<T>(dloss * (1.0 - smoothing));
  const T g = static_cast<T>(dloss);
#pragma omp parallel for schedule(static) if (rows * vocab >= (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    if (targets[r] == ignore_index) continue;
    const T* z = logits + r * vocab;
    T* dz = dlogits + r * vocab;
    const T l = lse[r];
#pragma omp simd
    for (int64_t v = 0; v < vocab; ++v) dz[v] += g * std::exp(z[v] - l) - off;
    dz[targets[r]] -= on;
  }
}

#define INSTANTIATE(T)                                                                                         \
  template double cross_entropy<T>(int64_t, int64_t, const T*, const int32_t*, double, int32_t, T*);           \
  template void cross_entropy_backward<T>(int64_t, int64_t, const T*, const int32_t*, const T*, double, int32_t, \
                                          double, T*);
TFM_INSTANTIATE_FLOAT(INSTANTIATE)

}  // namespace tfm::cpu
